// SPDX-License-Identifier: MIT
/*
 * The sending side's control thread: the totals, then a loop of steps
 * (announce what the window has room for, send the SUMs that are ready,
 * say END when everything is announced and summed, end the streams when
 * nothing can be asked again, then wait for the receiver) until the
 * receiver's XFER_DONE; and the receiver's PLAN and ACKS messages.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net.h"
#include "xfer_int.h"
#include "banned.h"

/* The control loop's own state. */
struct txc {
	struct xsess *x;
	const struct xfer_source *src;
	struct lr_err *err;
	struct walker w;
	struct proto_xfer_totals tot;
	bool has_pipe;
	uint8_t *buf, *rbuf;
	struct sthread *ts;
	uint32_t next_idx;
	uint64_t announced, bytes_ann;
	bool walk_done, end_sent, got_done, streams_closed;
	bool late_kinds;  /* directories or symlinks: told at the end */
	bool read_failed; /* the control connection failed us (not the peer's
			     ERROR, not a stream, not an interruption) */
	struct pclock pc;
	struct proto_xfer_done done;
	/* files that changed as they were read, and names of files the
	 * receiver asked as files of their own (FILE_AGAIN): to announce
	 * again */
	struct reread {
		char *path;
		int fd;
		uint8_t rereads;
		bool as_file;
	} rq[XFER_WINDOW_MAX];
	unsigned nrq;
	int r;
};

/* A source read this often at most (the first time and twice again) before
 * it is "changed as we read it". */
#define MAX_REREADS 2

enum tx_step {
	TX_ANNOUNCE,
	TX_SUMS,
	TX_END,
	TX_CLOSE,
	TX_TURN,
	TX_DONE,
	TX_FAIL
};

/* FILE_AGAIN, links kept by default: something else is at a HARDLINK
 * entry's name there, so the name goes as a file of its own (announced
 * again under a new idx, not LINKED, its bytes counted then), as without
 * links; the entry is done, not counted. */
static int ack_again(struct txc *c, const struct proto_xfer_ack *a)
{
	struct xsess *x = c->x;
	uint64_t size = 0;
	struct xfile *f;
	char *path;
	int r = 0;

	xfer__lock(&x->lock);
	f = xfer__entry(x, a->idx);
	if (!(x->o->flags & XFER_F_LINKS_DEFAULT) || !f ||
	    f->tx.state == XTX_ENDED || f->kind != PROTO_XK_HARDLINK ||
	    c->nrq == XFER_WINDOW_MAX) {
		xfer__unlock(&x->lock);
		return LR_EBADMSG;
	}
	path = strdup(xfer__path(f));
	if (!path || f->fd < 0) {
		r = path ? -EBADF : -ENOMEM;
		free(path);
	} else {
		c->rq[c->nrq++] = (struct reread){ path, f->fd, 0, true };
		f->fd = -1;
		c->announced--;
		/* what its file was announced with, as the receiver adds: a
		 * file grown since fails alone ("larger than counted") */
		xfer__hl_path(&x->tx.hl, f->link_to, &size);
		c->tot.bytes += size < UINT64_MAX - c->tot.bytes ? size : 0;
	}
	xfer__tx_file_end(x, f);
	x->files_done--; /* its file, announced again, counts */
	xfer__unlock(&x->lock);
	return r;
}

static int on_acks(struct txc *c, const uint8_t *body, size_t len)
{
	struct proto_xfer_iter it;
	struct proto_xfer_ack a;
	int r;

	proto_xfer_iter_init(&it, body, len);
	while ((r = proto_xfer_iter_next(&it)) == 1) {
		if (it.tag == PROTO_T_KEPT)
			r = xfer__link_kept(c->x, &it);
		else if (it.tag == PROTO_T_ACK &&
			 !proto_xfer_get_ack(&it, &a) &&
			 a.status == PROTO_XS_FILE_AGAIN)
			r = ack_again(c, &a);
		else
			r = xfer__tx_acks_item(c->x, &it);
		if (r)
			return r;
	}
	return r;
}

/* ---- announcing ---- */

static uint16_t mode_bits(const struct stat *st)
{
	return (uint16_t)(st->st_mode & 07777);
}

static void entry_of(const struct wentry *e, const char *path, uint32_t idx,
		     struct proto_xfer_entry *pe)
{
	*pe = (struct proto_xfer_entry){
		.idx = idx,
		.kind = e->kind,
		.mode = mode_bits(&e->st),
		.mtime_sec = e->st.st_mtim.tv_sec,
		.mtime_nsec = (uint32_t)e->st.st_mtim.tv_nsec,
		.path = path,
		.path_len = (uint16_t)strlen(path),
	};
	if (e->kind == PROTO_XK_FILE) {
		pe->size = e->is_stdin ? PROTO_XFER_SIZE_UNKNOWN
				       : (uint64_t)e->st.st_size;
		if (!e->is_stdin &&
		    (uint64_t)e->st.st_blocks * 512 < (uint64_t)e->st.st_size)
			pe->eflags |= PROTO_XE_SPARSE;
	}
	if (e->kind == PROTO_XK_SYMLINK || e->kind == PROTO_XK_CHARDEV ||
	    e->kind == PROTO_XK_BLOCKDEV) {
		pe->target = e->target;
		pe->target_len = e->target_len;
	}
	if (e->kind == PROTO_XK_HARDLINK)
		pe->link_to = e->link_to;
	if (e->linked)
		pe->eflags |= PROTO_XE_LINKED;
}

/* The announced entry takes its slot. */
static int window_add(struct xsess *x, struct xfile *f,
		      const struct proto_xfer_entry *pe, const struct wentry *e)
{
	int r;

	xfer__lock(&x->lock);
	r = xfer__file_init(f, pe);
	f->tx.state = XTX_ANNOUNCED;
	f->pipe = e->is_stdin;
	f->from_pipe = e->is_stdin;
	f->fd = e->fd;
	f->tx.ctime_sec = e->st.st_ctim.tv_sec;
	f->tx.ctime_nsec = (uint32_t)e->st.st_ctim.tv_nsec;
	if (r) {
		/* the session ends */
	} else if (pe->kind == PROTO_XK_FILE && !f->pipe) {
		f->nchunks = xfer__chunks_of(f->size, x->chunk);
		r = xfer__file_grow(f, f->nchunks);
		if (!r)
			xfer__prehash_offer(x, f);
	} else if (f->pipe) {
		r = xfer__file_grow(f, 16);
	}
	xfer__unlock(&x->lock);
	return r;
}

/* Whether e fits in what the totals said (counted when it does): 0, or
 * OVER_FILES or OVER_BYTES, the walk having found a grown source. */
enum { OVER_FILES = 1, OVER_BYTES = 2 };
static int fits(struct txc *c, const struct wentry *e)
{
	uint64_t add = e->kind == PROTO_XK_FILE && !e->is_stdin
			       ? (uint64_t)e->st.st_size
			       : 0;

	if (c->announced + 1 > c->tot.files)
		return OVER_FILES;
	if (c->bytes_ann + add > c->tot.bytes)
		return OVER_BYTES;
	c->announced++;
	c->bytes_ann += add;
	return 0;
}

/* The next entry of the walk into the FILES message in b: 0, 1 at the
 * walk's end, or an error. */
/* A source that failed here, before it was announced: its line. */
static void local_failure(struct xsess *x, const char *path, const char *why,
			  int code)
{
	xfer__lock(&x->lock);
	x->res->files_failed++;
	xfer__note_failure_at(x, path, why, code);
	xfer__path_event(x, path, false, why, code);
	xfer__unlock(&x->lock);
}

/* The next file to read again into e (its path into path): 1, or 0 when
 * none is waiting. */
static int next_reread(struct txc *c, struct wentry *e, char *path,
		       uint8_t *rereads, bool *as_file)
{
	struct reread q;

	while (c->nrq) {
		q = c->rq[0];
		memmove(&c->rq[0], &c->rq[1], --c->nrq * sizeof(c->rq[0]));
		memset(e, 0, sizeof(*e));
		e->kind = PROTO_XK_FILE;
		e->fd = q.fd;
		snprintf(path, FSIO_MAX_PATH + 1, "%s", q.path);
		*rereads = q.rereads;
		*as_file = q.as_file;
		free(q.path);
		if (!fstat(q.fd, &e->st) && S_ISREG(e->st.st_mode))
			return 1;
		close(q.fd);
		local_failure(c->x, path, "file changed as we read it",
			      -ESTALE);
	}
	return 0;
}

/* A source that could not be read (all of it, or a directory's
 * entries): told here as a failed file, and to the receiver in an UNREAD
 * item, which counts it and deletes nothing. */
static int unreadable(struct txc *c, struct proto_buf *b)
{
	struct xsess *x = c->x;
	const struct lr_err *why = &c->w.eerr;
	struct proto_xfer_unread u = {
		.code = (uint32_t)(why->code < 0 && why->code > -4096
					   ? -why->code
					   : EIO),
		.path_len = (uint16_t)c->w.plen,
		.path = c->w.path,
	};
	int r;

	local_failure(x, c->w.path, why->msg, why->code);
	xfer__lock(&x->lock);
	x->res->files_unread++;
	xfer__unlock(&x->lock);
	if (!u.path_len)
		return 0; /* the top of a source sent as its contents */
	r = xfer__batch_room(x, b, 8 + u.path_len, PROTO_XFER_FILES);
	if (!r)
		proto_put_xfer_unread(b, &u);
	return r;
}

/* e does not fit in the totals: a file read again that grew fails
 * alone, and with -H so does a file of more names, which was a second
 * name of another when counted (its bytes were not); anything else ends
 * the session. */
static int overflow(struct txc *c, struct wentry *e, const char *path,
		    uint8_t rereads, int over)
{
	bool hard = (c->x->o->flags & XFER_F_HARD_LINKS) && e->st.st_nlink > 1;

	if (e->fd >= 0 && !e->is_stdin)
		close(e->fd);
	if (rereads || (hard && over == OVER_BYTES)) {
		if (e->linked) /* its next name goes as a file */
			xfer__hl_forget(&c->x->tx.hl, &e->st);
		local_failure(c->x, path,
			      rereads ? "file changed as we read it"
				      : "file changed during the transfer "
					"(larger than counted)",
			      -ESTALE);
		return 0;
	}
	return lr_err_set(c->err, -EAGAIN,
			  "the source grew during the transfer (%s)", path);
}

/* e, not announced after all: its descriptor closed; r. */
static int drop_entry(struct wentry *e, int r)
{
	if (e->fd >= 0 && !e->is_stdin)
		close(e->fd);
	e->fd = -1;
	return r;
}

static int announce_one(struct txc *c, struct proto_buf *b)
{
	struct xsess *x = c->x;
	struct proto_xfer_entry pe;
	char again[FSIO_MAX_PATH + 1];
	const char *path = c->w.path;
	uint8_t rereads = 0;
	struct proto_xfer_fdigest dig;
	struct proto_xfer_owner own;
	struct wentry e;
	bool has_dig, has_own, as_file = false;
	int over, r = next_reread(c, &e, again, &rereads, &as_file);

	if (r)
		path = again;
	else if (c->walk_done)
		return 1;
	else
		r = xfer__walk_next(&c->w, &e);
	if (r == XFER_WALK_VANISHED || r == XFER_WALK_SPECIAL) {
		xfer__walk_aside(x, c->w.path, r,
				 r == XFER_WALK_SPECIAL ? e.st.st_mode : 0);
		return 0;
	}
	if (r == XFER_WALK_UNREADABLE)
		return unreadable(c, b);
	if (r <= 0)
		return r < 0 ? r : 1;
	/* a HARDLINK's descriptor is kept where it may go as a file */
	if ((x->o->flags & XFER_F_HARD_LINKS) && !as_file &&
	    xfer__hl_decide(&x->tx.hl, &e, rereads > 0) &&
	    !(x->o->flags & XFER_F_LINKS_DEFAULT))
		drop_entry(&e, 0);
	if ((over = fits(c, &e)) != 0)
		return overflow(c, &e, path, rereads, over);
	entry_of(&e, path, c->next_idx, &pe);
	has_dig = e.fd >= 0 && !e.is_stdin &&
		  xfer__entry_digest(x, e.fd, &pe, &dig);
	/* a hard link's owner is its file's */
	has_own = !e.is_stdin && pe.kind != PROTO_XK_HARDLINK &&
		  xfer__owner_item(x, &e.st, c->next_idx, &own);
	/* -X/-A: a file's on its descriptor, a directory's on the one the
	 * walk opened to list it */
	if ((x->o->flags & (XFER_F_XATTRS | XFER_F_ACLS)) &&
	    (r = xfer__xattr_read(x, &c->w, &e, pe.kind, c->next_idx, path)))
		return drop_entry(&e, r);
	r = xfer__batch_room(x, b,
			     proto_xfer_entry_size(&pe) +
				     (has_dig ? 4 + PROTO__FDIGEST_LEN : 0) +
				     (has_own ? xfer__owner_size(&own) : 0) +
				     xfer__xattr_size(x),
			     PROTO_XFER_FILES);
	if (r)
		return drop_entry(&e, r);
	if (has_dig)
		proto_put_xfer_fdigest(b, &dig);
	if (has_own)
		proto_put_xfer_owner(b, &own);
	xfer__xattr_put(x, b);
	proto_put_xfer_entry(b, &pe);
	if (b->err) /* an item this end made is not one the wire carries */
		return drop_entry(&e, b->err);
	if (e.read_err && (r = unreadable(c, b)))
		return r;
	c->late_kinds |= pe.kind != PROTO_XK_FILE;
	r = window_add(x, &x->win[SLOT(x, c->next_idx)], &pe, &e);
	x->win[SLOT(x, c->next_idx)].tx.rereads = rereads;
	x->win[SLOT(x, c->next_idx)].tx.as_file = as_file;
	if (!r && (x->o->flags & XFER_F_HARD_LINKS) && !as_file)
		r = xfer__hl_commit(&x->tx.hl, &e, c->next_idx, path);
	if (!r)
		c->next_idx++;
	return r;
}

static enum tx_step tx_fail(struct txc *c, int r, const char *what)
{
	c->r = r;
	if (!c->err->msg[0])
		lr_err_setc(c->err, r, "%s", what);
	return TX_FAIL;
}

/* Announce while the window has room. */
static enum tx_step tx_announce(struct txc *c)
{
	struct xsess *x = c->x;
	struct proto_buf b;
	unsigned room, put = 0;
	int r = 0;

	if (c->walk_done && !c->nrq)
		return TX_SUMS;
	room = xfer__window_room(
		x, c->next_idx,
		c->tot.files > c->announced ? c->tot.files - c->announced : 0);
	if (!room)
		return TX_SUMS;
	proto_buf_init(&b, c->buf, MSG_BUF);
	proto_msg_begin(&b, PROTO_XFER_FILES);
	while (!r && (!c->walk_done || c->nrq) && room--) {
		r = announce_one(c, &b);
		if (r == 1) {
			c->walk_done = true;
			r = 0;
		}
		/* one FILES message per batch: the receiver plans and
		 * acknowledges the first while this end reads the next */
		if (!r && ++put % XFER_ANNOUNCE_BATCH == 0 &&
		    b.len > PROTO_HDR_LEN)
			r = xfer__msg_next(x, &b, PROTO_XFER_FILES);
	}
	if (!r && b.len > PROTO_HDR_LEN) /* none when the only one vanished */
		r = proto_msg_end(&b) ?: xfer__ctrl_send(x, &b);
	if (r) {
		tx_fail(c, r, "announcing files");
		xfer__send_error(x, PROTO_ERR_INTERNAL, c->err->msg);
		return TX_FAIL;
	}
	return TX_SUMS;
}

/* Whether f's source is as the walk saw it, now that its last chunk is
 * read: size, mtime and ctime (a write that puts the mtime back still
 * moves the ctime). Under lock. */
static bool source_same(const struct xfile *f)
{
	struct stat st;

	if (f->pipe || f->from_pipe || f->kind != PROTO_XK_FILE)
		return true; /* standard input: read once, as it comes */
	return !f->tx.read_err && !fstat(f->fd, &st) &&
	       (uint64_t)st.st_size == f->size &&
	       st.st_mtim.tv_sec == f->mtime_sec &&
	       (uint32_t)st.st_mtim.tv_nsec == f->mtime_nsec &&
	       st.st_ctim.tv_sec == f->tx.ctime_sec &&
	       (uint32_t)st.st_ctim.tv_nsec == f->tx.ctime_nsec;
}

/* f changed while it was read (or a read failed): its FAIL item instead
 * of its SUM. Code 0 withdraws it to read it again (queued); else it
 * fails. Under lock. */
static void source_changed(struct txc *c, struct xfile *f,
			   struct proto_xfer_fail *fl)
{
	int fd = -1;
	char *path;

	fl->idx = f->idx;
	if (f->tx.read_err && f->tx.read_err != LR_ETRUNC) {
		fl->code = (uint32_t)-f->tx.read_err;
		snprintf(fl->text, sizeof(fl->text), "read error: %s",
			 lr_strerror(f->tx.read_err));
		return;
	}
	path = f->tx.rereads < MAX_REREADS ? strdup(xfer__path(f)) : NULL;
	if (path)
		fd = fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0) {
		free(path);
		fl->code = ESTALE;
		snprintf(fl->text, sizeof(fl->text),
			 "file changed as we read it");
		if (f->eflags & PROTO_XE_LINKED)
			xfer__hl_dead(&c->x->tx.hl, f->idx);
		return;
	}
	c->rq[c->nrq++] =
		(struct reread){ path, fd, f->tx.rereads + 1, f->tx.as_file };
	f->tx.withdrawn = true;
	fl->code = 0;
	snprintf(fl->text, sizeof(fl->text),
		 "changed as we read it: reading it again");
	/* it is announced again, counted again */
	c->announced--;
	c->bytes_ann -= f->size;
}

/* The SUMs of files whose chunks are all hashed. */
static enum tx_step tx_sums(struct txc *c)
{
	struct xsess *x = c->x;
	uint32_t slots[XFER_WINDOW_MAX];
	struct proto_buf b;
	unsigned i, n;
	int r = 0;

	xfer__lock(&x->lock);
	n = x->tx.nsums;
	memcpy(slots, x->tx.sums, n * sizeof(slots[0]));
	x->tx.nsums = 0;
	xfer__unlock(&x->lock);
	if (!n)
		return TX_END;
	proto_buf_init(&b, c->buf, MSG_BUF);
	proto_msg_begin(&b, PROTO_XFER_SUMS);
	for (i = 0; i < n && !r; i++) {
		struct proto_xfer_sum s = { .idx = slots[i] };
		struct proto_xfer_fail fl;
		struct xfile *f;

		xfer__lock(&x->lock);
		f = xfer__entry(x, slots[i]);
		if (!f || f->tx.state != XTX_HASHED) {
			xfer__unlock(&x->lock);
			continue;
		}
		if (!source_same(f)) {
			source_changed(c, f, &fl);
			f->tx.own_fail = fl.code + 1u;
			f->tx.state = XTX_SUMMED; /* its FILE_FAILED comes */
			xfer__unlock(&x->lock);
			r = xfer__batch_room(x, &b, 8 + 8 + strlen(fl.text),
					     PROTO_XFER_SUMS);
			if (!r)
				proto_put_xfer_fail(&b, &fl);
			continue;
		}
		s.size = f->size;
		s.nchunks = f->nchunks;
		s.sent = f->sent;
		digest_file(f->size, x->chunk, f->nchunks, f->digests,
			    s.digest);
		f->tx.state = XTX_SUMMED;
		xfer__unlock(&x->lock);
		r = xfer__batch_room(x, &b, PROTO_XFER_SUM_LEN,
				     PROTO_XFER_SUMS);
		if (!r)
			proto_put_xfer_sum(&b, &s);
	}
	if (!r)
		r = proto_msg_end(&b) ?: xfer__ctrl_send(x, &b);
	return r ? tx_fail(c, r, "sending file digests") : TX_END;
}

/* Every file entry announced has had its plan and its SUM. */
static bool all_summed(struct xsess *x)
{
	bool again = x->o->flags & XFER_F_LINKS_DEFAULT, all = true;
	unsigned i;

	xfer__lock(&x->lock);
	for (i = 0; i < x->wn && all; i++) {
		const struct xfile *f = &x->win[i];

		all = f->kind != PROTO_XK_FILE || f->tx.state == XTX_FREE ||
		      f->tx.state >= XTX_SUMMED;
		/* a link kept by default may yet go as a file (FILE_AGAIN) */
		all = all && !(again && f->kind == PROTO_XK_HARDLINK &&
			       f->tx.state == XTX_ANNOUNCED);
	}
	xfer__unlock(&x->lock);
	return all;
}

static enum tx_step tx_end(struct txc *c)
{
	struct proto_buf b;
	int r;

	if (!c->walk_done || c->nrq || c->end_sent || !all_summed(c->x))
		return TX_CLOSE;
	proto_buf_init(&b, c->buf, MSG_BUF);
	r = proto_encode_empty(&b, PROTO_XFER_END) ?: xfer__ctrl_send(c->x, &b);
	if (r)
		return tx_fail(c, r, "sending END");
	c->end_sent = true;
	return TX_CLOSE;
}

/* Nothing can be asked again: end the streams. */
static enum tx_step tx_close(struct txc *c)
{
	struct xsess *x = c->x;

	if (!c->end_sent || c->streams_closed || !xfer__window_empty(x))
		return TX_TURN;
	xfer__join_threads(x, c->ts);
	c->streams_closed = true;
	if (x->error) {
		*c->err = x->err;
		c->r = x->error;
		return TX_FAIL;
	}
	return TX_TURN;
}

/* One message from the receiver. */
static int tx_dispatch(struct txc *c, const struct proto_hdr *h)
{
	struct xsess *x = c->x;
	int r;

	switch (h->type) {
	case PROTO_XFER_PLAN: r = xfer__tx_on_plan(x, c->rbuf, h->len); break;
	case PROTO_XFER_ACKS: r = on_acks(c, c->rbuf, h->len); break;
	case PROTO_XFER_DONE:
		r = c->end_sent
			    ? proto_decode_xfer_done(c->rbuf, h->len, &c->done)
			    : LR_EBADMSG;
		c->got_done = !r;
		break;
	case PROTO_ERROR: return xfer__peer_error(c->rbuf, h->len, c->err);
	default: r = LR_EBADMSG;
	}
	if (r) {
		if (!c->err->msg[0] || r == LR_EBADMSG)
			lr_err_set(c->err, r,
				   "the receiver sent a bad %s message",
				   proto_type_name(h->type));
		if (x->error)
			*c->err = x->err;
		xfer__send_error(x, PROTO_ERR_BAD_REQUEST, c->err->msg);
	}
	return r;
}

/* Wait for the receiver (or a stream thread, or the next progress
 * event), handle what came, deliver the events. */
static enum tx_step tx_turn(struct txc *c)
{
	struct xsess *x = c->x;
	int64_t now = net_now_ms(), tmo = c->pc.next - now;
	struct proto_hdr h;
	int r;

	r = xfer__ctrl_turn(x, tmo > 0 ? tmo : 0, c->rbuf, &h, "receiver",
			    "sender", c->err);
	c->read_failed = r < 0 && r != -ECANCELED && !x->error;
	if (r == 1)
		r = tx_dispatch(c, &h);
	xfer__deliver(x);
	if (r < 0) {
		c->r = r;
		return TX_FAIL;
	}
	now = net_now_ms();
	if (now - atomic_load(&x->last_activity_ms) > XFER_IDLE_MS(x)) {
		c->r = lr_err_set(c->err, LR_ETIMEOUT,
				  "no answer from the receiver for %d s",
				  XFER_IDLE_MS(x) / 1000);
		return TX_FAIL;
	}
	xfer__progress_tick(x, &c->pc, now, c->tot.bytes, !c->has_pipe,
			    c->tot.files);
	return c->got_done ? TX_DONE : TX_ANNOUNCE;
}

static enum tx_step (*const tx_steps[])(struct txc *) = {
	[TX_ANNOUNCE] = tx_announce, [TX_SUMS] = tx_sums, [TX_END] = tx_end,
	[TX_CLOSE] = tx_close,	     [TX_TURN] = tx_turn,
};

/* The receiver's outcome into the result. */
static void take_done(struct txc *c)
{
	struct xfer_result *res = c->x->res;

	xfer__links_told(c->x);
	res->remote.disk_us = c->done.wait.write_us;
	res->remote.net_us = c->done.wait.net_us;
	res->remote.cipher_us = c->done.wait.cipher_us;
	/* -X/-A, --delete: what the receiver could not give or remove */
	res->xattrs_failed += c->done.xattrs_failed;
	if (!res->xattrs_why[0] && c->done.xattrs_why[0])
		snprintf(res->xattrs_why, sizeof(res->xattrs_why),
			 "the receiver: %s", c->done.xattrs_why);
	res->deletes_failed += c->done.deletes_failed;
	if (!res->deletes_why[0] && c->done.deletes_why[0])
		snprintf(res->deletes_why, sizeof(res->deletes_why), "%s",
			 c->done.deletes_why);
	if (c->done.files_failed > res->files_failed) {
		/* failures only the receiver saw (symlinks made last) */
		res->files_failed = c->done.files_failed;
		if (!res->first_failure[0]) {
			snprintf(res->first_failure, sizeof(res->first_failure),
				 "%s",
				 c->x->tx.late_reason[0]
					 ? c->x->tx.late_reason
					 : "see the receiver's log");
			res->first_failure_code = c->x->tx.late_code;
		}
	}
}

/* The totals: counted by the caller, or now. */
static int send_totals(struct txc *c)
{
	const struct xfer_source *src = c->src;
	struct proto_buf b;
	int r = 0;

	if (src->counted) {
		c->tot.files = src->files;
		c->tot.bytes = src->bytes;
		c->has_pipe = src->pipe;
		c->w.top_missing = src->top_missing;
	} else {
		r = xfer__count_sources(src, &c->tot, &c->has_pipe,
					&c->w.top_missing, c->err, NULL);
	}
	if (r) {
		xfer__send_error(c->x, PROTO_ERR_INTERNAL, c->err->msg);
		return r;
	}
	proto_buf_init(&b, c->buf, MSG_BUF);
	r = proto_encode_xfer_totals(&b, &c->tot) ?: xfer__ctrl_send(c->x, &b);
	if (r)
		lr_err_setc(c->err, r, "sending the totals");
	return r;
}

/* The session failed reading the control connection when all that was
 * left was the receiver's XFER_DONE: every entry was acknowledged, every
 * file verified, none failed, and no directory or symlink waits for the
 * end to be told. The receiver finished; its last message was lost or
 * tampered with (the session still fails: the caller decides what that
 * means for it). */
static bool only_done_lost(const struct txc *c)
{
	return c->read_failed && c->end_sent && c->streams_closed &&
	       !c->got_done && !c->late_kinds && !c->nrq &&
	       !c->x->res->files_failed && !c->x->tx.late_reason[0];
}

/* The loop, from the first announcement to XFER_DONE. */
static int send_loop(struct txc *c)
{
	enum tx_step step = TX_ANNOUNCE;
	/* what the count found missing (send_totals), kept across */
	uint64_t missing = c->w.top_missing;

	xfer__walk_init(&c->w, c->src, true, c->err);
	c->w.top_missing = missing;
	c->pc.next = net_now_ms() +
		     (c->x->o->progress_ms ? c->x->o->progress_ms : 1000);
	while (step != TX_DONE && step != TX_FAIL)
		step = tx_steps[step](c);
	xfer__walk_fini(&c->w);
	if (step == TX_FAIL) {
		c->x->res->peer_end_lost = only_done_lost(c);
		return c->r ? c->r : -EIO;
	}
	take_done(c);
	return 0;
}

int xfer_send(struct xfer_conns *cs, const struct xfer_source *src,
	      const struct xfer_opts *o, const struct xfer_callbacks *cb,
	      struct xfer_result *res, struct lr_err *err)
{
	/* ~1.2 MiB, of which a session touches what its window uses: on the
	 * heap, zeroed by calloc, not on a thread's stack */
	struct xsess *x = calloc(1, sizeof(*x));
	struct txc c = { .x = x, .src = src, .err = err };
	int r;

	if (!x)
		return lr_err_setc(err, -ENOMEM, "starting the transfer");
	xfer__raise_nofile();
	r = xfer__sess_init(x, cs, o, cb, res, true);
	if (r) {
		free(x);
		return lr_err_setc(err, r, "starting the transfer");
	}
	c.buf = malloc(MSG_BUF);
	c.rbuf = malloc(MSG_BUF);
	c.ts = calloc(cs->n, sizeof(*c.ts));
	if (!c.buf || !c.rbuf || !c.ts) {
		r = lr_err_setc(err, -ENOMEM, "transfer buffers");
		goto out;
	}
	r = send_totals(&c);
	if (r)
		goto out;
	xfer__emit_edge(x, XFER_EV_START, false, c.tot.bytes, !c.has_pipe,
			c.tot.files);
	xfer__data_sockopts(x);
	r = xfer__start_threads(x, c.ts, xfer__send_stream);
	if (!r)
		r = send_loop(&c);
	if (r)
		atomic_store(&x->abort, true);
	xfer__join_threads(x, c.ts);
	xfer__deliver(x);
	r = xfer__result(x, r, c.tot.files, err);
	xfer__emit_edge(x, XFER_EV_END, r == 0, c.tot.bytes, !c.has_pipe,
			c.tot.files);
out:
	while (c.nrq--) {
		free(c.rq[c.nrq].path);
		close(c.rq[c.nrq].fd);
	}
	free(c.ts);
	free(c.buf);
	free(c.rbuf);
	xfer__sess_fini(x);
	free(x);
	return r;
}
