// SPDX-License-Identifier: MIT
/*
 * The receiver's bookkeeping of files: the acknowledgements queued for the
 * control thread, a file complete or failed, naming complete files under
 * one lock, and the control thread's service that sends it all (file
 * outcomes before the acknowledgements that follow them, FILE_DONE only
 * after the directory that got the name is synced).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfer_int.h"
#include "banned.h"

int xfer__push_ack(struct xsess *x, uint32_t idx, uint32_t chunk,
		   uint8_t status, uint32_t bytes)
{
	struct xrecv *q = &x->rx;

	if (q->nacks == q->cap_acks) {
		unsigned nc = q->cap_acks ? q->cap_acks * 2 : 256;
		struct proto_xfer_ack *na = realloc(q->acks, nc * sizeof(*na));

		if (!na)
			return -ENOMEM;
		q->acks = na;
		q->cap_acks = nc;
	}
	q->acks[q->nacks++] =
		(struct proto_xfer_ack){ idx, chunk, status, bytes };
	if (q->nacks == 1)
		q->ack_wake = true;
	return 0;
}

/* A file has every chunk and its SUM: it can be named. Under lock. */
bool xfer__final_ready(const struct xfile *f)
{
	return f->rx.state == XRX_RECEIVING &&
	       (f->rx.have_sum || f->rx.implicit_sum) &&
	       f->finished == f->nchunks &&
	       (f->rx.implicit_sum || f->sent == f->rx.sum.sent);
}

/* Queue a complete file for the control thread. Under lock. */
void xfer__maybe_final(struct xsess *x, struct xfile *f)
{
	if (xfer__final_ready(f)) {
		f->rx.state = XRX_COMPLETE;
		x->rx.finals[x->rx.nfinals++] = SLOT(x, f->idx);
	}
}

void xfer__rx_fail(struct xsess *x, struct xfile *f, int code, const char *fmt,
		   ...)
{
	va_list ap;

	if (f->rx.state == XRX_FAILED || f->rx.state == XRX_COMPLETE)
		return;
	f->rx.state = XRX_FAILED;
	f->rx.code = code;
	va_start(ap, fmt);
	vsnprintf(f->rx.reason, sizeof(f->rx.reason), fmt, ap);
	va_end(ap);
	x->rx.fail_pending[SLOT(x, f->idx)] = true;
	x->rx.any_failed = true;
	x->rx.ack_wake = true;
}

/* Wake the control thread when there is something new to send. */
void xfer__wake_if(struct xsess *x)
{
	bool w;

	xfer__lock(&x->lock);
	w = x->rx.ack_wake;
	x->rx.ack_wake = false;
	xfer__unlock(&x->lock);
	if (w)
		xfer__wake(x);
}

/* f got its name, or failed to (fr): its outcome, under lock. */
static void file_named(struct xsess *x, struct xfile *f, int fr, bool dirty)
{
	char why[sizeof(f->rx.reason)];

	if (dirty)
		f->rx.dh->dirty = true;
	if (fr) {
		memcpy(why, f->rx.reason, sizeof(why));
		f->rx.state = XRX_RECEIVING; /* complete, but not named */
		xfer__rx_fail(x, f, fr, "%s", why);
		return;
	}
	x->res->files_ok++;
	x->files_done++;
	xfer__hl_leader_named(x, f, f->rx.dirfd, f->rx.name);
	if (f->rx.owner_err)
		xfer__owner_said(x, xfer__path(f), f->rx.owner_err);
	xfer__xattr_named(x, f);
	xfer__file_event(x, f, true, false, NULL, 0);
	xfer__file_release(f);
}

/* Finalize files that are complete (state COMPLETE, no chunk in flight)
 * and account for them under one lock. Called without the lock. */
int xfer__finish_files(struct xsess *x, struct xfile *const *fs, unsigned n,
		       bool synced)
{
	int fr[READY_MAX];
	bool dirty[READY_MAX];
	unsigned i;
	int r = 0;

	if (n > READY_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		fr[i] = xfer__finalize(x, fs[i], synced);
		dirty[i] = !fr[i] && xfer__dir_named(x, fs[i]);
	}
	xfer__lock(&x->lock);
	for (i = 0; i < n; i++) {
		if (!fr[i] && !r)
			r = xfer__push_ack(x, fs[i]->idx, 0, PROTO_XS_FILE_DONE,
					   0);
		file_named(x, fs[i], fr[i], dirty[i]);
	}
	xfer__unlock(&x->lock);
	return r;
}

int xfer__finish_file(struct xsess *x, struct xfile *f, bool synced)
{
	return xfer__finish_files(x, &f, 1, synced);
}

void xfer__rx_abandon(struct xsess *x, struct xfile *f, bool keep)
{
	char jname[FSIO_MAX_NAME + 1];

	if (f->kind != PROTO_XK_FILE || (x->o->flags & XFER_F_STDOUT) ||
	    f->rx.dirfd < 0 || !f->rx.tmp[0])
		return;
	if (keep && f->rx.jfd >= 0) {
		xfer__journal_flush(x, f);
		return;
	}
	if (f->fd >= 0 || f->rx.jfd >= 0) {
		unlinkat(f->rx.dirfd, f->rx.tmp, 0);
		fsio_journal_name(f->rx.name, jname);
		unlinkat(f->rx.dirfd, jname, 0);
	}
}

/* The FAIL item's code: an errno value, else EIO. */
static uint32_t wire_code(int code)
{
	return code < 0 && code > -4096 ? (uint32_t)-code : EIO;
}

/* Name the files queued complete; one syncfs for a batch of them costs
 * less than an fsync each. */
static int service_finals(struct xsess *x)
{
	uint32_t finals[XFER_WINDOW_MAX];
	unsigned n, i;
	bool synced;
	int r;

	xfer__lock(&x->lock);
	n = x->rx.nfinals;
	memcpy(finals, x->rx.finals, n * sizeof(finals[0]));
	x->rx.nfinals = 0;
	xfer__unlock(&x->lock);
	synced = n > 2 && x->rx.destfd >= 0 &&
		 !(x->o->flags & (XFER_F_NO_FSYNC | XFER_F_STDOUT)) &&
		 !syncfs(x->rx.destfd);
	for (i = 0; i < n; i++) {
		r = xfer__finish_file(x, &x->win[finals[i]], synced);
		if (r)
			return r;
	}
	return 0;
}

/* Files that failed since the last time: a FAIL item and a FILE_FAILED
 * acknowledgement each, into b; their temporary files go (chunks still
 * in flight drain). *limit: the acknowledgements to send now. Under
 * lock. 0 or -ENOMEM. */
static int service_failures(struct xsess *x, struct proto_buf *b,
			    unsigned *limit)
{
	unsigned i;
	int r;

	for (i = 0; i < x->wn && x->rx.any_failed; i++) {
		struct xfile *f = &x->win[i];
		struct proto_xfer_fail fl = { .idx = f->idx,
					      .code = wire_code(f->rx.code) };

		if (!x->rx.fail_pending[i])
			continue;
		snprintf(fl.text, sizeof(fl.text), "%s", f->rx.reason);
		if (!proto_xfer_batch_room(b, 4 + 8 + strlen(fl.text) +
						      PROTO_XFER_ACK_LEN + 4))
			break; /* the rest goes next time */
		r = xfer__push_ack(x, f->idx, 0, PROTO_XS_FILE_FAILED, 0);
		if (r)
			return r;
		x->rx.fail_pending[i] = false;
		proto_put_xfer_fail(b, &fl);
		*limit = x->rx.nacks;
		if (f->rx.withdrawn)
			continue; /* not a failure: it comes again; what it
				   * holds stays for that (its journal says
				   * which chunks) */
		x->res->files_failed++;
		x->files_done++;
		xfer__note_failure(x, f, f->rx.reason, f->rx.code);
		xfer__file_event(x, f, false, false, f->rx.reason, f->rx.code);
		xfer__rx_abandon(x, f, false);
	}
	return 0;
}

/* Send the first limit queued acknowledgements after what b holds, and
 * those that come meanwhile (their pushes did not wake us: the queue was
 * not empty), each batch after its directories are synced. */
static int service_acks(struct xsess *x, struct proto_buf *b, unsigned limit)
{
	for (;;) {
		struct proto_xfer_ack *acks;
		unsigned n, i;
		int r;

		xfer__lock(&x->lock);
		acks = x->rx.acks;
		n = limit < x->rx.nacks ? limit : x->rx.nacks;
		if (!n) {
			xfer__unlock(&x->lock);
			return 0;
		}
		/* FAIL items must precede their ACK: they are in b already */
		for (i = 0; i < n; i++) {
			if (!proto_xfer_batch_room(b, PROTO_XFER_ACK_LEN))
				break;
			proto_put_xfer_ack(b, &acks[i]);
		}
		memmove(acks, acks + i, (x->rx.nacks - i) * sizeof(*acks));
		x->rx.nacks -= i;
		limit -= i;
		xfer__unlock(&x->lock);
		r = xfer__msg_next(x, b, PROTO_XFER_ACKS);
		if (r)
			return r;
		if (!limit) {
			xfer__lock(&x->lock);
			limit = x->rx.nacks;
			xfer__unlock(&x->lock);
			if (limit)
				xfer__dirs_sync(x);
		}
	}
}

/* Release failed files no chunk of which is still being written. */
static void service_release(struct xsess *x)
{
	unsigned i;

	xfer__lock(&x->lock);
	for (i = 0; i < x->wn && x->rx.any_failed; i++) {
		struct xfile *f = &x->win[i];

		if (f->rx.state == XRX_FAILED && !x->rx.fail_pending[i] &&
		    !f->inflight)
			xfer__file_release(f);
	}
	xfer__unlock(&x->lock);
}

int xfer__recv_service(struct xsess *x)
{
	struct proto_buf b;
	unsigned limit, synced;
	int r;

	r = service_finals(x);
	if (r)
		return r;
	/* a FILE_DONE goes out only after its directory is synced: take
	 * the acknowledgements queued so far, then sync */
	xfer__lock(&x->lock);
	limit = x->rx.nacks;
	xfer__unlock(&x->lock);
	xfer__dirs_sync(x);
	proto_buf_init(&b, x->rx.svc_buf, MSG_BUF);
	proto_msg_begin(&b, PROTO_XFER_ACKS);
	synced = limit;
	xfer__lock(&x->lock);
	r = service_failures(x, &b, &limit);
	xfer__unlock(&x->lock);
	if (r)
		return r;
	/* a FILE_FAILED goes after what was queued before it, which may
	 * hold files named since the sync: sync their directories too */
	if (limit > synced)
		xfer__dirs_sync(x);
	r = service_acks(x, &b, limit);
	if (r)
		return r;
	service_release(x);
	return 0;
}
