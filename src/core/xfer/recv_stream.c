// SPDX-License-Identifier: MIT
/*
 * A receiver's stream thread: each record holds one chunk or several
 * small ones; each chunk is checked against what was asked for, verified
 * against its digest, written at its offset (or, for standard output, in
 * order) and acknowledged; the small files a record completes are named
 * together after one syncfs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"
#include "xfer_int.h"
#include "banned.h"

/* One stream thread's state. */
struct rxs {
	struct sthread *st;
	struct xsess *x;
	uint64_t disk_ns, hash_ns;
};

/* One chunk of a record, as it goes through the steps. */
struct unit {
	struct proto_xfer_chunk_hdr h;
	const uint8_t *data;
	struct xfile *f;
	uint8_t d[DIGEST_LEN];
	uint8_t prev; /* its cstate before it came */
	int fd;
	bool shared;  /* the file has more than one writer */
	bool resumed; /* the file's temporary file held data already */
};

/* The chunk header at u (avail bytes left in the record): 0 with *used
 * set, -1 after a fatal error. */
static int unit_parse(struct rxs *s, const uint8_t *u, size_t avail,
		      struct unit *un, size_t *used)
{
	struct xsess *x = s->x;

	*used = avail;
	if (avail < PROTO_XFER_CHUNK_HDR_LEN ||
	    proto_xfer_chunk_decode(u, &un->h)) {
		xfer__fatal(x, LR_EBADMSG, "stream %u: malformed chunk",
			    s->st->i + 1);
		return -1;
	}
	*used = PROTO_XFER_CHUNK_HDR_LEN +
		(un->h.kind == PROTO_XC_DATA ? un->h.len : 0);
	if (*used > avail || un->h.len > x->chunk) {
		xfer__fatal(x, LR_EBADMSG,
			    "stream %u: chunk length does not match its record",
			    s->st->i + 1);
		return -1;
	}
	un->data = u + PROTO_XFER_CHUNK_HDR_LEN;
	return 0;
}

/* A pipe's chunk before its SUM: whole, but for one short chunk, its end,
 * with none after it. Under lock. */
static int pipe_len_ok(struct xsess *x, struct xfile *f, uint32_t chunk,
		       uint32_t len)
{
	uint32_t end = f->rx.pipe_end;

	if (len == x->chunk)
		return !end || chunk + 1 < end ? 0 : LR_EBADMSG;
	if (!len || (end && end != chunk + 1) || chunk + 1 < f->nchunks)
		return LR_EBADMSG;
	f->rx.pipe_end = chunk + 1;
	f->rx.pipe_end_len = len;
	return 0;
}

/* A pipe's chunk may lie ahead of those seen so far, within bounds: the
 * arrays grow to it. Under lock. */
static int pipe_reach(struct xsess *x, struct xfile *f, uint32_t chunk,
		      uint32_t len)
{
	bool out = x->o->flags & XFER_F_STDOUT;
	int r;

	if (chunk >= f->nchunks + PIPE_LEAD || chunk >= XFER_MAX_CHUNKS ||
	    (out && chunk > x->rx.next_out + PIPE_LEAD))
		return LR_ETOOBIG;
	r = pipe_len_ok(x, f, chunk, len);
	if (r)
		return r;
	if (chunk < f->nchunks)
		return 0;
	r = xfer__file_grow(f, chunk + 1);
	if (!r)
		f->nchunks = chunk + 1;
	return r;
}

/* Whether the chunk is one the receiver asked for. Under lock. */
static int unit_asked(struct xsess *x, struct xfile *f,
		      const struct proto_xfer_chunk_hdr *h)
{
	int r = 0;
	uint8_t cs;

	if (!f || f->rx.state != XRX_RECEIVING || f->kind != PROTO_XK_FILE)
		return LR_EBADMSG;
	if (f->pipe && !f->rx.have_sum)
		r = pipe_reach(x, f, h->chunk, h->len);
	else if (h->chunk >= f->nchunks ||
		 h->len != xfer__chunk_len(f, h->chunk, x->chunk))
		r = LR_EBADMSG;
	if (r)
		return r;
	cs = f->cstate[h->chunk];
	return cs == CS_NEEDED || cs == CS_HELD || cs == CS_RESEND ? 0
								   : LR_EBADMSG;
}

/* Take the chunk on for its file: 0 to go on, 1 when it is drained (its
 * file failed), -1 after a fatal error. */
static int unit_claim(struct rxs *s, struct unit *un)
{
	struct xsess *x = s->x;
	struct proto_xfer_chunk_hdr *h = &un->h;
	struct xfile *f;
	int r;

	xfer__lock(&x->lock);
	f = xfer__entry(x, h->idx);
	if (h->idx < x->rx.announced && (!f || f->rx.state == XRX_FAILED)) {
		/* a chunk of a file that failed, in flight when it did:
		 * drained, within a bound */
		x->rx.dropped += h->len;
		r = x->rx.dropped > x->rx.drop_limit ? LR_ETOOBIG : 0;
		xfer__unlock(&x->lock);
		if (!r)
			return 1;
		xfer__fatal(x, r,
			    "the sender keeps sending chunks of files that "
			    "failed: cut off");
		return -1;
	}
	r = unit_asked(x, f, h);
	if (r) {
		xfer__unlock(&x->lock);
		xfer__fatal(x, r,
			    "the sender sent a chunk that was not asked for "
			    "(entry %u, chunk %u): cut off",
			    h->idx, h->chunk);
		return -1;
	}
	un->f = f;
	un->prev = f->cstate[h->chunk];
	f->cstate[h->chunk] = CS_INFLIGHT;
	f->inflight++;
	un->fd = f->fd;
	un->shared = f->nchunks > 1 || f->pipe;
	un->resumed = f->rx.resumed;
	xfer__unlock(&x->lock);
	return 0;
}

/* Hash the chunk: 0 when its digest matches, 1 when it does not (asked
 * again, or its file failed), -1 after a fatal error. */
static int unit_verify(struct rxs *s, struct unit *un)
{
	struct xsess *x = s->x;
	struct xfile *f = un->f;
	uint64_t t = xfer__now_ns();
	int r = 0;

	if (un->h.kind == PROTO_XC_ZERO)
		digest_zeros(un->h.len, un->d);
	else
		digest_chunk(un->data, un->h.len, un->d);
	s->hash_ns += xfer__now_ns() - t;
	if (!memcmp(un->d, un->h.digest, DIGEST_LEN))
		return 0;
	xfer__lock(&x->lock);
	/* a held chunk sent again and damaged: no longer held (counted
	 * once more when its good copy comes) */
	if (un->prev == CS_HELD && f->cstate[un->h.chunk] == CS_INFLIGHT) {
		f->finished--;
		x->bytes_held -= un->h.len;
	}
	f->cstate[un->h.chunk] = CS_RESEND;
	if (f->rx.state != XRX_RECEIVING)
		; /* failed meanwhile: its FILE_FAILED may be out already */
	else if (++f->tries[un->h.chunk] > XFER_MAX_RETRIES)
		xfer__rx_fail(x, f, LR_EDIGEST,
			      "chunk %u failed verification %u times",
			      un->h.chunk, XFER_MAX_RETRIES + 1);
	else
		r = xfer__push_ack(x, un->h.idx, un->h.chunk,
				   PROTO_XS_CHUNK_BAD, 0);
	f->inflight--;
	xfer__unlock(&x->lock);
	xfer__wake(x);
	if (r) {
		xfer__fatal(x, r, "out of memory");
		return -1;
	}
	return 1;
}

/* Standard output: the chunk when its turn comes. 0, -ECANCELED when
 * the session aborted, or a write error. */
static int unit_out(struct xsess *x, const struct unit *un)
{
	static const uint8_t zeros[4096];
	uint32_t left = un->h.len;
	int r = 0;

	xfer__lock(&x->lock);
	while (x->rx.next_out != un->h.chunk && !atomic_load(&x->abort))
		pthread_cond_wait(&x->rx.out_cv, &x->lock);
	xfer__unlock(&x->lock);
	if (atomic_load(&x->abort))
		return -ECANCELED;
	/* as curl: a terminal gets no binary data unless asked to */
	if (un->h.chunk == 0 && x->o->tty_guard && un->h.len &&
	    (un->h.kind != PROTO_XC_DATA || memchr(un->data, 0, un->h.len)))
		return LR_EBINARY;
	if (un->h.kind == PROTO_XC_DATA)
		r = fsio_write_all(x->rx.outfd, un->data, un->h.len);
	while (un->h.kind != PROTO_XC_DATA && left && !r) {
		uint32_t k = left < sizeof(zeros) ? left : sizeof(zeros);

		r = fsio_write_all(x->rx.outfd, zeros, k);
		left -= k;
	}
	xfer__lock(&x->lock);
	x->rx.next_out++;
	pthread_cond_broadcast(&x->rx.out_cv);
	xfer__unlock(&x->lock);
	return r;
}

/* Write the verified chunk: at its offset, or to standard output. */
static int unit_write(struct rxs *s, const struct unit *un)
{
	struct xsess *x = s->x;
	uint64_t t = xfer__now_ns();
	int r = 0;

	if (x->o->flags & XFER_F_STDOUT) {
		r = unit_out(x, un);
	} else if (un->h.kind == PROTO_XC_ZERO && un->resumed) {
		/* a hole over a chunk an earlier attempt wrote: zeros there
		 * (a new temporary file reads as zeros already) */
		r = fsio_zero_range(un->fd, (uint64_t)un->h.chunk * x->chunk,
				    un->h.len);
	} else if (un->h.kind == PROTO_XC_DATA) {
		/* Stream threads writing one file at once meet on its inode
		 * lock, where the kernel spins while the holder copies a
		 * chunk: on a small machine that spinning takes the cores
		 * the cipher and the sender need. Queue here instead,
		 * asleep. A file of one chunk has one writer: no lock. */
		pthread_mutex_t *wl = &x->rx.wlock[SLOT(x, un->h.idx) % WLOCKS];

		if (un->shared)
			xfer__lock(wl);
		r = fsio_pwrite_all(un->fd, un->data, un->h.len,
				    (uint64_t)un->h.chunk * x->chunk);
		if (un->shared)
			xfer__unlock(wl);
	}
	s->disk_ns += xfer__now_ns() - t;
	return r;
}

/* The chunk is written (w 0) or its write failed: account for it, and
 * name its file when it was the last. 0, or -1 after a fatal error. */
static int unit_account(struct rxs *s, const struct unit *un, int w)
{
	struct xsess *x = s->x;
	struct xfile *f = un->f;
	bool mine;
	int r = 0;

	xfer__lock(&x->lock);
	if (w) {
		xfer__rx_fail(x, f, w, "writing: %s", lr_strerror(w));
	} else if (f->rx.state == XRX_RECEIVING) {
		if (un->h.kind == PROTO_XC_ZERO)
			f->rx.zeroed = true;
		f->cstate[un->h.chunk] = CS_GOT;
		memcpy(f->digests + (size_t)un->h.chunk * DIGEST_LEN, un->d,
		       DIGEST_LEN);
		f->sent++;
		if (un->prev != CS_HELD)
			f->finished++;
		else /* held, but the sender found it different */
			x->bytes_held -= un->h.len;
		x->bytes_done += un->h.len;
		r = xfer__push_ack(x, un->h.idx, un->h.chunk, PROTO_XS_CHUNK_OK,
				   un->h.len);
		if (!r && f->rx.jfd >= 0)
			f->rx.jpend[f->rx.njpend++] = un->h.chunk;
	} /* else: failed meanwhile, nothing to acknowledge */
	f->inflight--;
	mine = !r && !f->inflight && xfer__final_ready(f);
	if (mine)
		f->rx.state = XRX_COMPLETE;
	if (mine && f->rx.implicit_sum && s->st->nready < READY_MAX) {
		/* small files: named after the whole record is written,
		 * with one syncfs for all of them */
		s->st->ready[s->st->nready++] = f;
		mine = false;
	}
	xfer__unlock(&x->lock);
	if (mine)
		r = xfer__finish_file(x, f, false);
	/* the control thread is woken once per record, not once per small
	 * file in it */
	if (r) {
		xfer__fatal(x, r, "out of memory");
		return -1;
	}
	return 0;
}

/* One chunk of a data record at u: 0 to go on (*used set), -1 after a
 * fatal error (reported). */
static int recv_unit(struct rxs *s, const uint8_t *u, size_t avail,
		     size_t *used)
{
	struct unit un;
	int r, w;

	r = unit_parse(s, u, avail, &un, used);
	if (!r)
		r = unit_claim(s, &un);
	if (!r)
		r = unit_verify(s, &un);
	if (r)
		return r < 0 ? -1 : 0;
	w = unit_write(s, &un);
	if (w && (s->x->o->flags & XFER_F_STDOUT)) {
		if (w == -ECANCELED)
			return -1; /* aborted: said already */
		xfer__fatal(s->x, w, "writing to standard output: %s",
			    lr_strerror(w));
		return -1;
	}
	return unit_account(s, &un, w);
}

/* The small files the record completed: named after one syncfs, which
 * costs less than an fsync per file. */
static int record_done(struct rxs *s)
{
	struct xsess *x = s->x;
	struct sthread *st = s->st;
	bool synced = st->nready > 2 &&
		      !(x->o->flags & (XFER_F_NO_FSYNC | XFER_F_STDOUT)) &&
		      !syncfs(x->rx.destfd);
	uint64_t t = xfer__now_ns();
	int r = xfer__finish_files(x, st->ready, st->nready, synced);

	s->disk_ns += xfer__now_ns() - t;
	if (r)
		xfer__fatal(x, r, "out of memory");
	return r;
}

/* One record: 1 to go on, 0 at the stream's end, <0 on a failure. */
static int record_turn(struct rxs *s, struct conn *c, uint8_t *buf, size_t cap)
{
	struct xsess *x = s->x;
	size_t n, pos = 0, used;
	uint8_t type;
	int r;

	r = conn_recv_data(c, buf, cap, &type, &n);
	if (r == -ECONNRESET) {
		/* a reset before END cuts the stream short too */
		xfer__fatal_cut(x, LR_ETRUNC, "stream %u: %s (reset)",
				s->st->i + 1, lr_strerror(LR_ETRUNC));
		return LR_ETRUNC;
	}
	if (r == LR_ETRUNC) {
		xfer__fatal_cut(x, r, "stream %u: %s", s->st->i + 1,
				lr_strerror(r));
		return r;
	}
	if (r) {
		if (r != -ECANCELED)
			xfer__fatal(x, r, "stream %u: %s", s->st->i + 1,
				    lr_strerror(r));
		return r;
	}
	if (type == CONN_REC_END)
		return 0;
	if (!n)
		return 1; /* the sender's heartbeat: no activity */
	atomic_store(&x->last_activity_ms, net_now_ms());
	s->st->nready = 0;
	while (pos < n && !r) {
		r = recv_unit(s, buf + pos, n - pos, &used);
		pos += used;
	}
	if (!r && s->st->nready)
		r = record_done(s);
	xfer__wake_if(x);
	return r ? r : 1;
}

/* After the END record: nothing may follow it (docs/PROTOCOL.md section
 * 6), and the sender shuts its side after it. Read to its end of file,
 * at most TAIL_MS; a byte after END, or no end, fails the session at
 * once. A reset after END leaves the stream whole: nothing followed. */
static void stream_tail(struct rxs *s, struct conn *c)
{
	int r = conn_recv_eof(c, TAIL_MS);

	if (!r || r == -ECANCELED || r == -ECONNRESET)
		return;
	if (r == LR_EFRAME)
		xfer__fatal(s->x, r, "stream %u: data after the stream's END",
			    s->st->i + 1);
	else if (r == LR_ETIMEOUT)
		xfer__fatal(s->x, r,
			    "stream %u: the sender did not close it after its "
			    "END within %d s",
			    s->st->i + 1, TAIL_MS / 1000);
	else
		xfer__fatal(s->x, r, "stream %u: after its END: %s",
			    s->st->i + 1, lr_strerror(r));
}

void *xfer__recv_stream(void *arg)
{
	struct sthread *st = arg;
	struct xsess *x = st->x;
	struct conn *c = &x->cs->data[st->i];
	struct rxs s = { .st = st, .x = x };
	size_t cap = PROTO_XFER_CHUNK_HDR_LEN + x->chunk + CRYPTO_TAG_LEN;
	int64_t t0 = net_now_us();
	uint8_t *buf = malloc(cap);
	int r;

	if (!buf) {
		xfer__fatal(x, -ENOMEM, "out of memory for a stream buffer");
		return NULL;
	}
	while ((r = record_turn(&s, c, buf, cap)) > 0)
		;
	if (!r)
		stream_tail(&s, c);
	xfer__add_waits(x, c, s.disk_ns, s.hash_ns, t0);
	atomic_fetch_add(&x->rx.ended, 1);
	free(buf);
	return NULL;
}
