// SPDX-License-Identifier: MIT
/*
 * The receiving side's control thread: the sender's totals, then a loop
 * of steps (wait for the sender and handle its FILES, SUMS and END; send
 * what the stream threads queued; journal and progress) until every entry
 * is done after END; then the last acknowledgements, symlinks and
 * directories, the ends of the streams and XFER_DONE.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"
#include "xfer_int.h"
#include "banned.h"

/* The control loop's own state. */
struct rxc {
	struct xsess *x;
	struct lr_err *err;
	struct proto_xfer_totals tot;
	uint8_t *buf, *rbuf;
	struct sthread *ts;
	uint32_t next_idx;
	uint64_t nfiles, nbytes;
	uint64_t unread; /* UNREAD items so far */
	struct late *late;
	struct pclock pc;
	bool got_end;
	int64_t next_tick, next_journal;
	struct proto_buf plan; /* the XFER_PLAN being built, in buf */
	bool twice; /* the entry being planned has a name in flight */
	int r;
};

enum rx_step { RX_TURN, RX_SERVICE, RX_TICK, RX_FINISH, RX_FAIL };

static int plan_flush(struct rxc *c)
{
	int r = xfer__msg_next(c->x, &c->plan, PROTO_XFER_PLAN);

	return r ? lr_err_setc(c->err, r, "sending a plan") : 0;
}

/* The slot of entry idx still holds a failed file whose last chunks are
 * being written: its plans go first (before any acknowledgement), then
 * wait up to 5 s for it to drain, answering meanwhile. */
static int slot_drain(struct rxc *c, struct xfile *f)
{
	struct xsess *x = c->x;
	uint32_t slot = SLOT(x, f->idx);
	int64_t until = net_now_ms() + 5000;
	int r = plan_flush(c);

	if (r)
		return r;
	xfer__lock(&x->lock);
	while (xfer__used(f) && (f->inflight || x->rx.fail_pending[slot]) &&
	       net_now_ms() < until) {
		xfer__unlock(&x->lock);
		r = xfer__recv_service(x);
		if (r)
			return lr_err_setc(c->err, r,
					   "sending acknowledgements");
		usleep(1000);
		xfer__lock(&x->lock);
	}
	if (xfer__used(f) && !f->inflight && !x->rx.fail_pending[slot])
		xfer__file_release(f);
	xfer__unlock(&x->lock);
	return 0;
}

/* An entry in its free slot may take it: within what the totals said. */
static int entry_admit(struct rxc *c, const struct proto_xfer_entry *e)
{
	struct xsess *x = c->x;

	if (++c->nfiles > c->tot.files)
		return lr_err_set(c->err, LR_ETOOBIG,
				  "the sender announced more than the %llu "
				  "entries it said: cut off",
				  (unsigned long long)c->tot.files);
	if (e->kind == PROTO_XK_FILE && e->size != PROTO_XFER_SIZE_UNKNOWN &&
	    (c->nbytes += e->size) > c->tot.bytes)
		return lr_err_set(c->err, LR_ETOOBIG,
				  "the sender announced more bytes than the "
				  "%llu it said: cut off",
				  (unsigned long long)c->tot.bytes);
	if ((x->o->flags & XFER_F_STDOUT) &&
	    (e->kind != PROTO_XK_FILE || e->idx > 0))
		return lr_err_set(c->err, LR_EBADMSG,
				  "one file was asked for standard output, and "
				  "the sender sent more");
	return 0;
}

/* The entry takes its slot: in order, when the slot is free (a failed
 * file's last chunks may still drain from it; stream threads free slots,
 * so it is looked at under the lock), and within the totals. */
static int entry_take(struct rxc *c, struct xfile *f,
		      const struct proto_xfer_entry *e)
{
	struct xsess *x = c->x;
	int r;

	if (e->idx != c->next_idx)
		return lr_err_set(c->err, LR_EBADMSG,
				  "entry %u announced out of order", e->idx);
	xfer__lock(&x->lock);
	if (f->rx.state == XRX_FAILED) {
		xfer__unlock(&x->lock);
		r = slot_drain(c, f);
		if (r)
			return r;
		xfer__lock(&x->lock);
	}
	if (xfer__used(f)) {
		xfer__unlock(&x->lock);
		return lr_err_set(c->err, LR_EBADMSG,
				  "the sender overran the window of %u files",
				  x->wn);
	}
	r = entry_admit(c, e);
	if (r) {
		xfer__unlock(&x->lock);
		return r;
	}
	c->next_idx++;
	x->rx.announced = c->next_idx;
	r = xfer__file_init(f, e);
	f->rx.state = XRX_ANNOUNCED;
	c->twice = e->kind == PROTO_XK_FILE && xfer__name_taken(x, e);
	f->pipe = e->size == PROTO_XFER_SIZE_UNKNOWN;
	xfer__unlock(&x->lock);
	return r ? lr_err_setc(c->err, r, "an entry's path") : 0;
}

/* A file that will not be written: its FAIL and REFUSE plan. */
static int put_refusal(struct rxc *c, struct xfile *f)
{
	struct proto_xfer_fail fl = { .idx = f->idx,
				      .code = f->rx.code < 0 &&
							      f->rx.code > -4096
						      ? (uint32_t)-f->rx.code
						      : EIO };
	struct proto_xfer_plan plan = { f->idx, PROTO_XA_REFUSE };
	struct xsess *x = c->x;
	int r;

	snprintf(fl.text, sizeof(fl.text), "%s", f->rx.reason);
	r = xfer__batch_room(x, &c->plan,
			     4 + 8 + strlen(fl.text) + 4 + PROTO_XFER_PLAN_LEN,
			     PROTO_XFER_PLAN);
	if (r)
		return lr_err_setc(c->err, r, "sending");
	proto_put_xfer_fail(&c->plan, &fl);
	proto_put_xfer_plan(&c->plan, &plan);
	xfer__lock(&x->lock);
	if (f->rx.dirfd >= 0 || f->fd >= 0)
		xfer__rx_abandon(x, f, false);
	xfer__file_release(f);
	xfer__unlock(&x->lock);
	return 0;
}

/* A failed file is counted and told. Under lock. */
static void count_failed(struct xsess *x, struct xfile *f)
{
	x->res->files_failed++;
	x->files_done++;
	xfer__note_failure(x, f, f->rx.reason, f->rx.code);
	xfer__file_event(x, f, false, false, f->rx.reason, f->rx.code);
}

/* A path that fails the check: nothing is written for it; the session
 * goes on. A directory or symlink is told as FILE_FAILED. */
static int entry_refused(struct rxc *c, struct xfile *f, const char *why)
{
	struct xsess *x = c->x;

	xfer__lock(&x->lock);
	xfer__rx_fail(x, f, -EINVAL, "refused: %s", why);
	if (f->kind == PROTO_XK_FILE) {
		x->rx.fail_pending[SLOT(x, f->idx)] = false;
		count_failed(x, f);
	}
	xfer__unlock(&x->lock);
	return f->kind == PROTO_XK_FILE ? put_refusal(c, f) : 0;
}

/* A directory or symlink is done for now: its mode and time, or the
 * link, at the end. Under lock. */
static int entry_late(struct rxc *c, struct xfile *f,
		      const struct proto_xfer_entry *e)
{
	struct xsess *x = c->x;
	int r = xfer__late_add(&c->late, e);

	if (!r)
		c->late->owned = xfer__owner_take(x, e->idx, &c->late->uid,
						  &c->late->gid);
	/* -A: a directory's ACLs, given with its mode at the end */
	if (!r && e->kind == PROTO_XK_DIR && (x->o->flags & XFER_F_ACLS))
		c->late->xg = xfer__xattr_take(x, e->idx);
	x->files_done++;
	if (!r)
		r = xfer__push_ack(x, e->idx, 0, PROTO_XS_FILE_DONE, 0);
	xfer__file_release(f);
	return r;
}

/* A directory: made now, its mode and time at the end. */
static int entry_dir(struct rxc *c, struct xfile *f,
		     const struct proto_xfer_entry *e, const char *path)
{
	struct xsess *x = c->x;
	bool made = false;
	int dfd = (x->o->flags & XFER_F_DRY_RUN)
			  ? -EEXIST /* not made: listed at the end */
			  : fsio_make_dir(x->rx.destfd, path, 0700, &made),
	    r = 0;

	if (dfd == -EEXIST) {
		xfer__lock(&x->lock);
		r = entry_late(c, f, e);
		xfer__unlock(&x->lock);
		return r ? lr_err_setc(c->err, r, "memory") : 0;
	}

	/* -X: its attributes now, on the descriptor made or opened (its
	 * ACLs change its mode: at the end, with it) */
	if (dfd >= 0 && (x->o->flags & XFER_F_XATTRS))
		xfer__xattr_dir(x, dfd, e->idx, path);
	/* kept for its files, which follow it */
	if (dfd >= 0 && made)
		xfer__dirh_made(x, path, dfd);
	else if (dfd >= 0)
		close(dfd);
	xfer__lock(&x->lock);
	if (dfd < 0)
		xfer__rx_fail(x, f, dfd, "%s", lr_strerror(dfd));
	else
		r = entry_late(c, f, e);
	xfer__unlock(&x->lock);
	return r ? lr_err_setc(c->err, r, "memory") : 0;
}

/* A symlink: made at the end, after every file. */
static int entry_symlink(struct rxc *c, struct xfile *f,
			 const struct proto_xfer_entry *e)
{
	struct xsess *x = c->x;
	int r;

	xfer__lock(&x->lock);
	r = entry_late(c, f, e);
	xfer__unlock(&x->lock);
	return r ? lr_err_setc(c->err, r, "memory") : 0;
}

/* A hard link: made at the end to its file, once named; by default, as a
 * file of its own where something else is at its name. */
static int entry_hardlink(struct rxc *c, struct xfile *f,
			  const struct proto_xfer_entry *e)
{
	struct xsess *x = c->x;
	const char *why;
	int r;

	xfer__lock(&x->lock);
	why = xfer__hl_refused(x, e);
	xfer__unlock(&x->lock);
	if (why)
		return entry_refused(c, f, why);
	r = xfer__hl_again(x, f, e, &c->nfiles, &c->tot.bytes);
	if (!r) {
		xfer__lock(&x->lock);
		r = entry_late(c, f, e);
		xfer__unlock(&x->lock);
	}
	return r < 0 ? lr_err_setc(c->err, r, "memory") : 0;
}

/* A file: its plan, into the XFER_PLAN being built. */
static int entry_file(struct rxc *c, struct xfile *f,
		      const struct proto_xfer_entry *e)
{
	struct xsess *x = c->x;
	struct proto_xfer_plan plan;
	bool empty = false;
	int r;

	f->rx.owned = xfer__owner_take(x, e->idx, &f->rx.uid, &f->rx.gid);
	f->rx.xg = xfer__xattr_take(x, e->idx);
	r = xfer__plan_file(x, f, e, &c->plan, &plan);
	if (r)
		return lr_err_setc(c->err, r, "planning %s", xfer__path(f));
	/* up to date, but for its owner, then (a chown clears file
	 * capabilities) its attributes; no lock held */
	if (plan.action == PROTO_XA_SKIP) {
		xfer__owner_fix(x, f);
		xfer__xattr_fix(x, f);
	}
	xfer__lock(&x->lock);
	xfer__hl_leader_planned(x, f, plan.action); /* names may link */
	if (plan.action == PROTO_XA_SKIP) {
		xfer__xattr_named(x, f); /* what was not given, said */
		x->res->files_skipped++;
		x->files_done++;
		x->bytes_held += e->size;
		xfer__file_event(x, f, true, true,
				 f->rx.reason[0] ? f->rx.reason : NULL, 0);
		xfer__file_release(f);
	} else if (plan.action == PROTO_XA_REFUSE) {
		count_failed(x, f);
	} else if (x->o->flags & XFER_F_DRY_RUN) {
		/* would be sent: told, and done with */
		x->res->files_ok++;
		x->files_done++;
		xfer__dry_event(x, f, plan.action == PROTO_XA_REPLACE);
		xfer__file_release(f);
	} else if (plan.action == PROTO_XA_SEND && f->nchunks == 0 &&
		   !f->pipe) {
		f->rx.state = XRX_COMPLETE; /* empty: named below */
		empty = true;
	} else {
		f->rx.state = XRX_RECEIVING;
	}
	xfer__unlock(&x->lock);
	if (plan.action == PROTO_XA_REFUSE)
		return put_refusal(c, f);
	if (empty) {
		/* its PLAN goes out before any acknowledgement, which waits
		 * for the service */
		r = xfer__finish_file(x, f, false);
		if (r)
			return lr_err_setc(c->err, r, "memory");
	}
	r = xfer__batch_room(x, &c->plan, PROTO_XFER_PLAN_LEN, PROTO_XFER_PLAN);
	if (r)
		return lr_err_setc(c->err, r, "sending a plan");
	proto_put_xfer_plan(&c->plan, &plan);
	/* a file resumed or built from its old copy took a while to plan:
	 * its sender starts on it now, not after the rest of the message */
	return plan.action == PROTO_XA_RESUME ? plan_flush(c) : 0;
}

static int on_entry(struct rxc *c, const struct proto_xfer_entry *e)
{
	struct xfile *f = &c->x->win[SLOT(c->x, e->idx)];
	char path[FSIO_MAX_PATH + 1];
	const char *why, *base;
	int r;

	r = entry_take(c, f, e);
	if (r)
		return r;
	if (!(c->x->o->flags & XFER_F_HARD_LINKS) &&
	    (e->kind == PROTO_XK_HARDLINK || (e->eflags & PROTO_XE_LINKED)))
		return lr_err_set(c->err, LR_EBADMSG,
				  "the sender announced a hard link, which "
				  "this transfer did not ask for");
	if (xfer__node_unasked(c->x, e))
		return lr_err_set(c->err, LR_EBADMSG,
				  "the sender announced a FIFO, socket or "
				  "device node, which this transfer did not "
				  "ask for");
	memcpy(path, e->path, e->path_len);
	path[e->path_len] = 0;
	if (e->eflags & PROTO_XE_LINKED) { /* names may link to it, or go */
		xfer__lock(&c->x->lock);   /* as files when it is refused */
		r = xfer__hl_leader_add(c->x, e, path);
		xfer__unlock(&c->x->lock);
		if (r)
			return lr_err_setc(c->err, r, "memory");
	}
	/* the source has it, whatever comes of it here */
	xfer__del_note(c->x, path, e->path_len);
	if (fsio_path_check(e->path, e->path_len, &why))
		return entry_refused(c, f, why);
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (fsio_is_side_name(base, strlen(base)))
		return entry_refused(c, f,
				     "a name kept for the temporary files of "
				     "transfers");
	if (c->twice)
		return entry_refused(c, f,
				     "exists already in this transfer "
				     "(announced twice)");
	if (e->kind == PROTO_XK_DIR)
		return entry_dir(c, f, e, path);
	if (e->kind == PROTO_XK_SYMLINK)
		return entry_symlink(c, f, e);
	if (e->kind == PROTO_XK_HARDLINK)
		return entry_hardlink(c, f, e);
	if (e->kind != PROTO_XK_FILE) { /* a FIFO, socket or device node */
		why = xfer__node_refused(c->x, e);
		return why ? entry_refused(c, f, why) : entry_symlink(c, f, e);
	}
	return entry_file(c, f, e);
}

/* The destination, made when the first entry comes. */
static int dest_ready(struct rxc *c)
{
	struct xsess *x = c->x;
	const struct xfer_dest *d = &x->rx.dest;
	const char *p = d->path ? d->path : "";
	bool made;
	int fd;

	if (x->rx.destfd >= 0 || (x->o->flags & XFER_F_STDOUT))
		return 0;
	/* a dry run looks, never makes ("" is dirfd itself, a duplicate) */
	fd = (x->o->flags & XFER_F_DRY_RUN)
		     ? fsio_open_dir(d->dirfd, p, false, 0)
		     : fsio_make_dir(d->dirfd, p, 0755, &made);
	if (fd < 0 && !((x->o->flags & XFER_F_DRY_RUN) && fd == -ENOENT))
		return lr_err_setc(c->err, fd, "the destination %s",
				   p[0] ? p : ".");
	x->rx.destfd = fd >= 0 ? fd : -1; /* a dry run: what a run makes */
	return 0;
}

/* A source the sender could not read: a failed file here too (and, for
 * what comes next, a reason to delete nothing). At most one per entry
 * the totals announced, plus one per source path. */
static int on_unread(struct rxc *c, const struct proto_xfer_unread *u)
{
	struct xsess *x = c->x;
	char path[PROTO_XFER_MAX_PATH + 1], why[PROTO_MAX_TEXT];
	int code = -(int)u->code;

	if (++c->unread > c->tot.files + XFER_MAX_PATHS)
		return lr_err_set(c->err, LR_EBADMSG,
				  "the sender told of more unreadable sources "
				  "than it announced: cut off");
	memcpy(path, u->path, u->path_len);
	path[u->path_len] = 0;
	snprintf(why, sizeof(why), "the sender could not read it: %s",
		 lr_strerror(code));
	xfer__lock(&x->lock);
	x->res->files_failed++;
	x->res->files_unread++;
	xfer__note_failure_at(x, path, why, code);
	xfer__path_event(x, path, false, why, code);
	xfer__unlock(&x->lock);
	return 0;
}

/* CHECKSUM: the digest of the file announced next. */
static int on_fdigest(struct rxc *c, const struct proto_xfer_iter *it)
{
	struct xsess *x = c->x;
	struct proto_xfer_fdigest d;

	if (!(x->o->flags & XFER_F_CHECKSUM) || x->rx.has_fdig ||
	    proto_xfer_get_fdigest(it, &d))
		return lr_err_set(
			c->err, LR_EBADMSG,
			"the sender sent a file digest out of place "
			"(only with --checksum, one before its entry)");
	x->rx.has_fdig = true;
	x->rx.fdig_idx = d.idx;
	memcpy(x->rx.fdig, d.digest, sizeof(x->rx.fdig));
	return 0;
}

/* One FILES message, answered with one XFER_PLAN (more if it overflows) */
static int on_files(struct rxc *c, const uint8_t *body, size_t len)
{
	struct proto_xfer_iter it;
	unsigned acks0;
	int r;

	xfer__lock(&c->x->lock);
	acks0 = c->x->rx.nacks;
	xfer__unlock(&c->x->lock);
	proto_buf_init(&c->plan, c->buf, MSG_BUF);
	proto_msg_begin(&c->plan, PROTO_XFER_PLAN);
	proto_xfer_iter_init(&it, body, len);
	while ((r = proto_xfer_iter_next(&it)) == 1) {
		struct proto_xfer_entry e;
		struct proto_xfer_unread u;
		const char *why;

		if (it.tag == PROTO_T_UNREAD) {
			if (proto_xfer_get_unread(&it, &u))
				return lr_err_set(c->err, LR_EBADMSG,
						  "the sender told of an "
						  "unreadable source in a "
						  "malformed item");
			r = on_unread(c, &u);
			if (r)
				return r;
			continue;
		}
		if (it.tag == PROTO_T_XATTRS || it.tag == PROTO_T_ACL ||
		    it.tag == PROTO_T_OWNER) {
			why = it.tag == PROTO_T_OWNER
				      ? xfer__owner_on_item(c->x, &it)
				      : xfer__xattr_note(c->x, &it);
			if (why)
				return lr_err_set(c->err, LR_EBADMSG,
						  "the sender sent %s", why);
			continue;
		}
		if (it.tag == PROTO_T_FDIGEST) {
			r = on_fdigest(c, &it);
			if (r)
				return r;
			continue;
		}
		if (proto_xfer_get_entry(&it, &e))
			return lr_err_set(c->err, LR_EBADMSG,
					  "the sender announced a malformed "
					  "entry");
		if ((why = xfer__xattr_check(c->x, &e)))
			return lr_err_set(c->err, LR_EBADMSG,
					  "the sender sent %s", why);
		/* made at the first entry (an UNREAD alone makes nothing) */
		xfer__lone_file(c->x, c->tot.files, &e);
		r = dest_ready(c) ?: on_entry(c, &e);
		c->x->rx.has_fdig = false; /* it was this entry's, or none */
		xfer__owner_next_gone(c->x);
		xfer__xgive_free(
			xfer__xattr_take(c->x, e.idx)); /* if not taken */
		if (r)
			return r;
	}
	if (r)
		return lr_err_set(c->err, LR_EBADMSG,
				  "malformed FILES message");
	/* entries done at once (up to date, skipped) free the sender's
	 * window only when acknowledged: at once, not at the next tick */
	xfer__lock(&c->x->lock);
	if (c->x->rx.nacks != acks0)
		c->x->woken = true;
	xfer__unlock(&c->x->lock);
	return plan_flush(c);
}

/* The chunks a pipe sent before its SUM fit the size the SUM says: its
 * end, if it came, is the SUM's last chunk at its length; a last chunk
 * that came whole is whole by the SUM too. Under lock. */
static bool sum_fits_pipe(struct xsess *x, const struct xfile *f,
			  const struct proto_xfer_sum *s)
{
	uint32_t last;
	uint64_t last_len;

	if (!s->nchunks)
		return !f->nchunks;
	last = s->nchunks - 1;
	last_len = s->size - (uint64_t)last * x->chunk;
	if (f->rx.pipe_end)
		return f->rx.pipe_end == s->nchunks &&
		       f->rx.pipe_end_len == last_len;
	if (last < f->nchunks && f->cstate[last] != CS_NEEDED)
		return last_len == x->chunk;
	return true;
}

/* A pipe's SUM: its size and chunks are known now. Under lock. */
static int sum_of_pipe(struct xsess *x, struct xfile *f,
		       const struct proto_xfer_sum *s, struct lr_err *err)
{
	if (s->nchunks != xfer__chunks_of64(s->size, x->chunk) ||
	    s->nchunks < f->nchunks || s->nchunks > f->nchunks + PIPE_LEAD ||
	    s->nchunks > XFER_MAX_CHUNKS)
		return lr_err_set(err, LR_EBADMSG,
				  "a pipe's SUM does not match its chunks");
	if (!sum_fits_pipe(x, f, s))
		return lr_err_set(err, LR_EBADMSG,
				  "a pipe's SUM does not match the lengths of "
				  "its chunks");
	if (xfer__file_grow(f, s->nchunks ? s->nchunks : 1))
		return lr_err_setc(err, -ENOMEM, "memory");
	f->nchunks = s->nchunks;
	f->size = s->size;
	f->pipe = false;     /* chunk lengths are known now */
	f->from_pipe = true; /* cut to its size at the end */
	return 0;
}

/* One SUM item. Under lock. */
static int sum_one(struct xsess *x, const struct proto_xfer_sum *s,
		   struct lr_err *err)
{
	struct xfile *f = xfer__entry(x, s->idx);
	int r;

	if (s->idx >= x->rx.announced)
		return lr_err_set(err, LR_EBADMSG,
				  "a SUM for entry %u, never announced",
				  s->idx);
	if (!f)
		return 0; /* failed and released already */
	if (f->kind != PROTO_XK_FILE || f->rx.have_sum)
		return lr_err_set(err, LR_EBADMSG,
				  "a SUM for entry %u that is not a file "
				  "waiting for one",
				  s->idx);
	if (f->pipe) {
		r = sum_of_pipe(x, f, s, err);
		if (r)
			return r;
	} else if (s->size != f->size || s->nchunks != f->nchunks ||
		   s->sent > f->nchunks) {
		return lr_err_set(err, LR_EBADMSG,
				  "a SUM does not match its entry");
	}
	f->rx.sum = *s;
	f->rx.have_sum = true;
	xfer__maybe_final(x, f);
	return 0;
}

/* The sender's FAIL for a file it could not read whole as it was: code 0
 * withdraws it (it is announced again, and counted again: it is taken off
 * what was announced), any other fails it. Under lock. */
static int sender_fail(struct rxc *c, const struct proto_xfer_iter *it)
{
	struct xsess *x = c->x;
	struct proto_xfer_fail fl;
	struct xfile *f;

	if (proto_xfer_get_fail(it, &fl))
		return lr_err_set(c->err, LR_EBADMSG, "malformed FAIL");
	f = xfer__entry(x, fl.idx);
	if (fl.idx >= x->rx.announced)
		return lr_err_set(c->err, LR_EBADMSG,
				  "a FAIL for entry %u, never announced",
				  fl.idx);
	if (!f || f->rx.state == XRX_FAILED)
		return 0; /* failed here already */
	if (f->kind != PROTO_XK_FILE || f->rx.have_sum || f->pipe ||
	    f->rx.state == XRX_COMPLETE)
		return lr_err_set(c->err, LR_EBADMSG,
				  "a FAIL for entry %u, not a file waiting "
				  "for its SUM",
				  fl.idx);
	if (!fl.code) {
		f->rx.withdrawn = true;
		c->nfiles--;
		c->nbytes -= f->size;
	}
	xfer__rx_fail(x, f,
		      fl.code ? -(int)(fl.code < 4096 ? fl.code : EIO)
			      : -ESTALE,
		      "%s", fl.text);
	return 0;
}

static int on_sums(struct rxc *c, const uint8_t *body, size_t len)
{
	struct xsess *x = c->x;
	struct lr_err *err = c->err;
	struct proto_xfer_iter it;
	int r;

	proto_xfer_iter_init(&it, body, len);
	while ((r = proto_xfer_iter_next(&it)) == 1) {
		struct proto_xfer_sum s;

		if (it.tag == PROTO_T_FAIL) {
			xfer__lock(&x->lock);
			r = sender_fail(c, &it);
			xfer__unlock(&x->lock);
			if (r)
				return r;
			continue;
		}
		if (proto_xfer_get_sum(&it, &s))
			return lr_err_set(err, LR_EBADMSG, "malformed SUM");
		xfer__lock(&x->lock);
		r = sum_one(x, &s, err);
		xfer__unlock(&x->lock);
		if (r)
			return r;
	}
	if (r)
		return lr_err_set(err, LR_EBADMSG, "malformed SUMS message");
	xfer__wake(x);
	return 0;
}

/* One message from the sender. */
static int rx_dispatch(struct rxc *c, const struct proto_hdr *h)
{
	switch (h->type) {
	case PROTO_XFER_FILES:
		return c->got_end ? lr_err_set(c->err, LR_EBADMSG,
					       "FILES after END")
				  : on_files(c, c->rbuf, h->len);
	case PROTO_XFER_SUMS: return on_sums(c, c->rbuf, h->len);
	case PROTO_XFER_END: c->got_end = true; return 0;
	default:
		return lr_err_set(c->err, LR_EBADMSG,
				  "unexpected %s from the sender",
				  proto_type_name(h->type));
	}
}

static enum rx_step rx_turn(struct rxc *c)
{
	struct xsess *x = c->x;
	int64_t tmo = c->next_tick - net_now_ms();
	struct proto_hdr h;
	int r;

	if (c->got_end && xfer__window_empty(x))
		return RX_FINISH;
	r = xfer__ctrl_turn(x, tmo > 0 ? tmo : 0, c->rbuf, &h, "sender",
			    "receiver", c->err);
	if (r == 1 && h.type == PROTO_ERROR) {
		c->r = xfer__peer_error(c->rbuf, h.len, c->err);
		return RX_FAIL;
	}
	if (r == 1) {
		r = rx_dispatch(c, &h);
		if (r)
			xfer__send_error(x, PROTO_ERR_BAD_REQUEST, c->err->msg);
	}
	if (r < 0) {
		c->r = r;
		return RX_FAIL;
	}
	return RX_SERVICE;
}

/* Send what the stream threads queued: every ACK_FLUSH_MS, or at once
 * when one woke us. */
static enum rx_step rx_service(struct rxc *c)
{
	struct xsess *x = c->x;
	int64_t now = net_now_ms();
	int r;

	if (now >= c->next_tick || x->woken || c->got_end) {
		x->woken = false;
		r = xfer__recv_service(x);
		if (r) {
			c->r = lr_err_setc(c->err, r,
					   "sending acknowledgements");
			return RX_FAIL;
		}
		c->next_tick = now + ACK_FLUSH_MS;
	}
	xfer__deliver(x);
	return RX_TICK;
}

static enum rx_step rx_tick(struct rxc *c)
{
	struct xsess *x = c->x;
	int64_t now = net_now_ms();

	if (now >= c->next_journal) {
		xfer__journal_flush_all(x);
		c->next_journal = now + JOURNAL_MS;
	}
	if (now - atomic_load(&x->last_activity_ms) > XFER_IDLE_MS(x)) {
		c->r = lr_err_set(c->err, LR_ETIMEOUT,
				  "nothing from the sender for %d s",
				  XFER_IDLE_MS(x) / 1000);
		return RX_FAIL;
	}
	xfer__progress_tick(x, &c->pc, now, c->tot.bytes,
			    c->tot.bytes != UINT64_MAX, c->tot.files);
	return RX_TURN;
}

static enum rx_step (*const rx_steps[])(struct rxc *) = {
	[RX_TURN] = rx_turn,
	[RX_SERVICE] = rx_service,
	[RX_TICK] = rx_tick,
};

/* The sender's totals, first. */
static int recv_totals(struct rxc *c)
{
	struct xsess *x = c->x;
	struct proto_hdr h;
	int r;

	r = conn_recv_msg(x->cs->ctrl, c->rbuf, MSG_BUF, &h,
			  net_now_ms() + CTRL_TIMEOUT_MS, c->err);
	if (!r && h.type == PROTO_ERROR)
		return xfer__peer_error(c->rbuf, h.len, c->err);
	if (!r && h.type != PROTO_XFER_TOTALS)
		r = lr_err_set(c->err, LR_EBADMSG,
			       "expected XFER_TOTALS first, got %s",
			       proto_type_name(h.type));
	else if (!r && proto_decode_xfer_totals(c->rbuf, h.len, &c->tot))
		r = lr_err_set(c->err, LR_EBADMSG,
			       "malformed XFER_TOTALS (files at most 2^32, "
			       "both fields required)");
	/* tell the sender why, but for a connection it closed */
	if (r && r != LR_ECLOSED)
		xfer__send_error(x,
				 r == LR_ETIMEOUT ? PROTO_ERR_TIMEOUT
						  : PROTO_ERR_BAD_REQUEST,
				 c->err->msg);
	return r;
}

/* Every entry is done: the last acknowledgements (a stream thread may
 * have finished the last file after the loop's last service), then
 * symlinks and directories, their failures in a last XFER_ACKS. */
static int last_acks(struct rxc *c)
{
	struct xsess *x = c->x;
	struct proto_buf b;
	int r = xfer__recv_service(x);

	if (r)
		return lr_err_setc(c->err, r, "sending acknowledgements");
	xfer__deliver(x);
	proto_buf_init(&b, c->buf, MSG_BUF);
	proto_msg_begin(&b, PROTO_XFER_ACKS);
	/* before the directories get their times */
	r = xfer__del_run(x, c->late, c->unread, &b);
	if (r)
		return lr_err_setc(c->err, r, "deleting");
	xfer__late_apply(x, c->late, &b, &x->res->files_failed);
	r = proto_msg_end(&b);
	if (!r && b.len > b.start + PROTO_HDR_LEN)
		r = xfer__ctrl_send(x, &b);
	return r ? lr_err_setc(c->err, r, "sending acknowledgements") : 0;
}

/* The stream threads end at the sender's END records and its end of
 * file, within bounds; the heartbeat goes on meanwhile (a lost last
 * XFER_ACKS shows at the sender then: its streams wait for it). */
static void streams_end(struct rxc *c)
{
	struct xsess *x = c->x;
	int64_t until = net_now_ms() + IDLE_MS;
	unsigned i;

	while (atomic_load(&x->rx.ended) < x->cs->n &&
	       !atomic_load(&x->abort)) {
		if (net_now_ms() > until) {
			xfer__fatal(x, LR_ETIMEOUT,
				    "the sender did not end its streams");
			break;
		}
		xfer__alive(x);
		usleep(2000);
	}
	for (i = 0; i < x->cs->n; i++)
		if (c->ts[i].started) {
			pthread_join(c->ts[i].th, NULL);
			c->ts[i].started = false;
		}
}

/* The outcome, once the streams have ended: XFER_DONE, or the error of a
 * stream cut or forged at the very end. */
static int send_done(struct rxc *c)
{
	struct xsess *x = c->x;
	struct xfer_result *res = x->res;
	struct proto_xfer_done done = { 0 };
	struct proto_buf b;
	int r;

	xfer__lock(&x->lock);
	done.files_ok = res->files_ok;
	done.files_failed = res->files_failed;
	done.files_skipped = res->files_skipped;
	done.bytes = x->bytes_done;
	done.wait.write_us = x->waits.disk_us;
	done.wait.net_us = x->waits.net_us;
	done.wait.cipher_us = x->waits.cipher_us;
	xfer__xattr_done(x, &done);
	xfer__del_done(x, &done);
	r = x->error;
	if (r)
		*c->err = x->err;
	xfer__unlock(&x->lock);
	if (r) {
		xfer__send_error(x, PROTO_ERR_BAD_REQUEST, c->err->msg);
		return r;
	}
	proto_buf_init(&b, c->buf, MSG_BUF);
	r = proto_encode_xfer_done(&b, &done) ?: xfer__ctrl_send(x, &b);
	return r ? lr_err_setc(c->err, r, "sending the outcome") : 0;
}

static int recv_loop(struct rxc *c)
{
	struct xsess *x = c->x;
	enum rx_step step = RX_TURN;
	int64_t now = net_now_ms();
	int r;

	c->next_tick = now + ACK_FLUSH_MS;
	c->next_journal = now + JOURNAL_MS;
	c->pc.next = now + (x->o->progress_ms ? x->o->progress_ms : 1000);
	while (step != RX_FINISH && step != RX_FAIL)
		step = rx_steps[step](c);
	if (step == RX_FAIL)
		return c->r ? c->r : -EIO;
	r = last_acks(c);
	if (r)
		return r;
	streams_end(c);
	r = send_done(c);
	if (!r)
		xfer__ctrl_linger(x);
	return r;
}

/* The session after the totals, to XFER_DONE: 0 or an error. */
static int recv_session(struct rxc *c)
{
	struct xsess *x = c->x;
	int r;

	x->rx.drop_limit = c->tot.bytes == UINT64_MAX
				   ? UINT64_MAX / 2
				   : c->tot.bytes + (64u << 20);
	xfer__emit_edge(x, XFER_EV_START, false, c->tot.bytes,
			c->tot.bytes != UINT64_MAX, c->tot.files);
	xfer__data_sockopts(x);
	r = xfer__start_threads(x, c->ts, xfer__recv_stream);
	if (r)
		return lr_err_setc(c->err, r, "starting stream threads");
	return recv_loop(c);
}

int xfer_recv(struct xfer_conns *cs, const struct xfer_dest *dest, int outfd,
	      const struct xfer_opts *o, const struct xfer_callbacks *cb,
	      struct xfer_result *res, struct lr_err *err)
{
	/* ~1.2 MiB, of which a session touches what its window uses: on the
	 * heap, zeroed by calloc, not on a thread's stack */
	struct xsess *x = calloc(1, sizeof(*x));
	struct rxc c = { .x = x, .err = err };
	unsigned i;
	int r;

	if (!x)
		return lr_err_setc(err, -ENOMEM, "starting the transfer");
	xfer__raise_nofile();
	r = xfer__sess_init(x, cs, o, cb, res, false);
	if (r) {
		free(x);
		return lr_err_setc(err, r, "starting the transfer");
	}
	if (dest)
		x->rx.dest = *dest;
	x->rx.outfd = outfd;
	/* an unnamed file is named through /proc/self/fd (AT_EMPTY_PATH
	 * needs a capability on older kernels): none without /proc */
	x->rx.no_anon = access("/proc/self/fd", F_OK) != 0;
	x->rx.umask = xfer__read_umask();
	x->rx.svc_buf = malloc(MSG_BUF);
	c.buf = malloc(MSG_BUF);
	c.rbuf = malloc(MSG_BUF);
	c.ts = calloc(cs->n, sizeof(*c.ts));
	if (!x->rx.svc_buf || !c.buf || !c.rbuf || !c.ts) {
		r = lr_err_setc(err, -ENOMEM, "transfer buffers");
		goto out;
	}
	r = recv_totals(&c);
	if (r)
		goto out;
	r = recv_session(&c);
	if (r)
		atomic_store(&x->abort, true);
	xfer__join_threads(x, c.ts);
	for (i = 0; r && i < x->wn; i++)
		if (xfer__used(&x->win[i]))
			xfer__rx_abandon(x, &x->win[i], true);
	xfer__deliver(x);
	r = xfer__result(x, r, c.tot.files, err);
	xfer__emit_edge(x, XFER_EV_END, r == 0, c.tot.bytes,
			c.tot.bytes != UINT64_MAX, c.tot.files);
	xfer__dirs_sync(x);
out:
	xfer__dirh_fini(x);
	if (x->rx.destfd >= 0)
		close(x->rx.destfd);
	xfer__late_free(c.late);
	xfer__del_free(x);
	xfer__hl_leaders_free(x);
	free(c.ts);
	free(c.buf);
	free(c.rbuf);
	xfer__sess_fini(x);
	free(x);
	return r;
}
