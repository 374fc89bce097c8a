// SPDX-License-Identifier: MIT
/*
 * What the session tells its caller: START, PROGRESS and END events made
 * by the control thread, and file events that any thread queues under the
 * lock and the control thread delivers between messages, so that a slow
 * callback (a terminal that does not keep up) never holds a stream thread
 * or the lock; the session's first failure and its end figures.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "net.h"
#include "xfer_int.h"
#include "banned.h"

const char *xfer__path(const struct xfile *f)
{
	return f->path ? f->path : "";
}

static void xfer__emit(struct xsess *x, struct xfer_event *ev)
{
	/* xfer.h's contract: no callback under an engine lock */
	assert(xfer__locks_held == 0);
	if (x->cb && x->cb->event)
		x->cb->event(x->cb->ctx, ev);
}

void xfer__file_event(struct xsess *x, struct xfile *f, bool ok, bool skipped,
		      const char *reason, int code)
{
	struct xfer__evq *q = &x->evq;
	struct xfer__fev *e;

	if (q->n == q->cap) {
		unsigned nc = q->cap ? q->cap * 2 : 64;
		struct xfer__fev *nv = realloc(q->v, nc * sizeof(*nv));

		if (!nv)
			return; /* the event is lost, not the file */
		q->v = nv;
		q->cap = nc;
	}
	e = &q->v[q->n++];
	*e = (struct xfer__fev){ .path = f->path,
				 .size = f->size,
				 .ok = ok,
				 .skipped = skipped,
				 .code = code };
	if (f->inflight)
		e->path = f->path ? strdup(f->path) : NULL; /* still read */
	else
		f->path = NULL; /* the event owns it now */
	if (!ok || reason)
		e->reason = strdup(reason ? reason : "failed");
}

void xfer__deleted(struct xsess *x, const char *path)
{
	struct xfile f = { .path = strdup(path) };
	unsigned n;

	xfer__lock(&x->lock);
	x->res->files_deleted++;
	n = x->evq.n;
	if (f.path)
		xfer__file_event(x, &f, true, false, NULL, 0);
	if (x->evq.n > n) { /* queued (else lost to memory) */
		x->evq.v[x->evq.n - 1].deleted = true;
		x->evq.v[x->evq.n - 1].dry_run =
			(x->o->flags & XFER_F_DRY_RUN) != 0;
	}
	xfer__unlock(&x->lock);
	free(f.path); /* NULL when the event took it */
}

void xfer__dry_event(struct xsess *x, struct xfile *f, bool replace)
{
	unsigned n = x->evq.n;

	xfer__file_event(x, f, true, false, NULL, 0);
	if (x->evq.n > n) {
		x->evq.v[x->evq.n - 1].dry_run = true;
		x->evq.v[x->evq.n - 1].replace = replace;
		x->evq.v[x->evq.n - 1].delta = replace &&
					       xfer__delta_wanted(x, f);
	}
}

/* What a FIFO, socket or device node is, in words. */
static const char *special_kind(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	return "not a file, directory or symlink";
}

void xfer__walk_aside(struct xsess *x, const char *path, int what, mode_t mode)
{
	char why[64];
	struct xfile f = { .path = strdup(path) };

	xfer__lock(&x->lock);
	if (what == XFER_WALK_SPECIAL) {
		unsigned n = x->evq.n;

		x->res->files_special++;
		snprintf(why, sizeof(why), "%s, not sent", special_kind(mode));
		if (f.path)
			xfer__file_event(x, &f, true, true, why, 0);
		if (x->evq.n > n)
			x->evq.v[x->evq.n - 1].special = true;
	} else {
		x->res->files_failed++;
		xfer__note_failure_at(x, path, "vanished before it was read",
				      -ENOENT);
		if (f.path)
			xfer__file_event(x, &f, false, false,
					 "vanished before it was read",
					 -ENOENT);
	}
	xfer__unlock(&x->lock);
	free(f.path); /* NULL when the event took it */
}

void xfer__link_event(struct xsess *x, const char *path, const char *file,
		      bool dry_run)
{
	char why[PROTO_MAX_TEXT];
	unsigned n = x->evq.n;

	snprintf(why, sizeof(why), "to %s", file ? file : "its file");
	xfer__path_event(x, path, true, why, 0);
	if (x->evq.n > n) {
		x->evq.v[x->evq.n - 1].linked = true;
		x->evq.v[x->evq.n - 1].dry_run = dry_run;
	}
}

void xfer__path_event(struct xsess *x, const char *path, bool ok,
		      const char *reason, int code)
{
	struct xfile f = { .path = strdup(path) };

	if (!f.path)
		return;
	xfer__file_event(x, &f, ok, false, reason, code);
	free(f.path); /* NULL when the event took it */
}

void xfer__deliver(struct xsess *x)
{
	struct xfer__evq q;
	char esc[ESC_MAX];
	unsigned i;

	/* the spare queue is the control thread's own: swap, deliver
	 * without the lock, keep its memory for the next turn */
	xfer__lock(&x->lock);
	q = x->evq;
	x->evq = x->evq_spare;
	xfer__unlock(&x->lock);
	for (i = 0; i < q.n; i++) {
		struct xfer__fev *e = &q.v[i];
		const char *p = e->path ? e->path : "";
		struct xfer_event ev = {
			.kind = XFER_EV_FILE,
			.path = fsio_escape(p, strlen(p), esc, sizeof(esc)),
			.size = e->size,
			.ok = e->ok,
			.skipped = e->skipped,
			.deleted = e->deleted,
			.replace = e->replace,
			.delta = e->delta,
			.dry_run = e->dry_run,
			.linked = e->linked,
			.special = e->special,
			.reason = e->reason,
			.code = e->code,
		};

		xfer__emit(x, &ev);
		free(e->path);
		free(e->reason);
	}
	q.n = 0;
	x->evq_spare = q;
}

void xfer__evq_free(struct xsess *x)
{
	unsigned i;

	for (i = 0; i < x->evq.n; i++) {
		free(x->evq.v[i].path);
		free(x->evq.v[i].reason);
	}
	free(x->evq.v);
	free(x->evq_spare.v);
	x->evq = x->evq_spare = (struct xfer__evq){ 0 };
}

static void xfer__progress_fill(struct xsess *x, struct xfer_progress *p,
				uint64_t total, bool known,
				uint64_t files_total)
{
	xfer__lock(&x->lock);
	p->bytes_done = x->bytes_done + x->bytes_held;
	p->bytes_held = x->bytes_held;
	p->files_done = x->files_done;
	xfer__unlock(&x->lock);
	/* a pipe's size as the user expects it (--size): a total for the
	 * percentage and the ETA, never less than what has come */
	if (!known && x->o->size_hint) {
		total = x->o->size_hint > p->bytes_done ? x->o->size_hint
							: p->bytes_done;
		known = true;
	}
	p->bytes_total = total;
	p->total_known = known;
	p->files_total = files_total;
	p->elapsed = (double)(net_now_us() - x->t0_us) / 1e6;
}

void xfer__progress_tick(struct xsess *x, struct pclock *pc, int64_t now,
			 uint64_t total, bool known, uint64_t files)
{
	struct xfer_event ev = { .kind = XFER_EV_PROGRESS };
	int period = x->o->progress_ms ? x->o->progress_ms : 1000;
	unsigned keep = (unsigned)(2000 / period) + 1, i;

	if (now < pc->next)
		return;
	if (keep > 9)
		keep = 9;
	xfer__progress_fill(x, &ev.p, total, known, files);
	if (pc->n == keep) {
		for (i = 1; i < keep; i++) {
			pc->ms[i - 1] = pc->ms[i];
			pc->bytes[i - 1] = pc->bytes[i];
		}
		pc->n--;
	}
	pc->ms[pc->n] = now;
	pc->bytes[pc->n] = ev.p.bytes_done - ev.p.bytes_held; /* moved */
	pc->n++;
	if (pc->n > 1 && now > pc->ms[0]) {
		ev.p.rate_now = (double)(pc->bytes[pc->n - 1] - pc->bytes[0]) *
				1000.0 / (double)(now - pc->ms[0]);
		ev.p.rate_known = true;
	}
	if (x->o->progress_ms)
		xfer__emit(x, &ev);
	pc->next = now + period;
}

void xfer__emit_edge(struct xsess *x, enum xfer_event_kind kind, bool ok,
		     uint64_t total, bool known, uint64_t files)
{
	struct xfer_event ev = { .kind = kind, .ok = ok };

	xfer__progress_fill(x, &ev.p, total, known, files);
	xfer__emit(x, &ev);
}

void xfer__note_failure_at(struct xsess *x, const char *path,
			   const char *reason, int code)
{
	char esc[ESC_MAX];

	if (x->res->first_failure[0])
		return;
	snprintf(x->res->first_failure, sizeof(x->res->first_failure), "%s: %s",
		 fsio_escape(path, strlen(path), esc, sizeof(esc)), reason);
	x->res->first_failure_code = code;
}

void xfer__note_failure(struct xsess *x, const struct xfile *f,
			const char *reason, int code)
{
	xfer__note_failure_at(x, xfer__path(f), reason, code);
}

int xfer__result(struct xsess *x, int r, uint64_t files, struct lr_err *err)
{
	struct xfer_result *res = x->res;

	res->bytes = x->bytes_done;
	res->bytes_held = x->bytes_held;
	res->local = x->waits;
	res->seconds = (double)(net_now_us() - x->t0_us) / 1e6;
	if (!r && res->files_failed)
		r = lr_err_set(err, -EIO,
			       "%llu of %llu entries failed; first: %s",
			       (unsigned long long)res->files_failed,
			       (unsigned long long)files, res->first_failure);
	return r;
}
