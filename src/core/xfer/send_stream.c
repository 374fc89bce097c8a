// SPDX-License-Identifier: MIT
/*
 * A sender's stream thread: it takes chunks from the work queue (many
 * small ones into one record), reads and hashes them into its buffer,
 * drops those the receiver holds already (a resume), and sends the
 * record; and a pipe's chunks, read in order.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net.h"
#include "xfer_int.h"
#include "banned.h"

/* One chunk in a record being built. */
struct item {
	struct xfile *f;
	uint32_t chunk, len;
	bool held, zero, skip;
	uint8_t d[DIGEST_LEN];
};

/* One stream thread's state. */
struct txs {
	struct sthread *st;
	struct xsess *x;
	struct conn *c;
	uint8_t *buf;
	struct item items[BATCH_MAX];
	unsigned n;
	bool pipe;
	size_t off;	   /* bytes of the record built */
	uint32_t data_len; /* bytes of data it stands for */
	uint64_t disk_ns, hash_ns;
	bool sealed;	 /* records are numbered: heartbeats tell */
	int64_t sent_ms; /* the last record sent */
};

/* Read up to len bytes from a pipe; *got < len only at its end. */
static int read_pipe(int fd, uint8_t *p, size_t len, size_t *got)
{
	ssize_t k;

	*got = 0;
	while (*got < len) {
		k = read(fd, p + *got, len - *got);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		*got += (size_t)k;
	}
	return 0;
}

static bool is_hole(int fd, uint64_t off, uint32_t len)
{
	off_t d = lseek(fd, (off_t)off, SEEK_DATA);

	if (d < 0)
		return errno == ENXIO;
	return (uint64_t)d >= off + len;
}

/* --limit: a chunk goes once the time its bytes take at the rate has
 * passed, so the first one does not come for free. */
static void pace(struct xsess *x, uint32_t len)
{
	int64_t now, at, wait;
	uint64_t rate = x->o->rate;

	if (!rate)
		return;
	xfer__lock(&x->lock);
	now = net_now_us();
	at = x->tx.pace_next_us > now ? x->tx.pace_next_us : now;
	at += (int64_t)((double)len * 1e6 / (double)rate);
	x->tx.pace_next_us = at;
	xfer__unlock(&x->lock);
	wait = at - now;
	while (wait > 0 && !atomic_load(&x->abort)) {
		struct timespec ts = {
			.tv_sec = 0,
			.tv_nsec = (wait > 100000 ? 100000 : wait) * 1000
		};

		nanosleep(&ts, NULL);
		wait = at - net_now_us();
	}
}

/* The end of a pipe: its size is known, its chunks are all taken. Under
 * lock. */
static void pipe_ended(struct xsess *x, struct xfile *f, uint64_t size)
{
	f->size = size;
	f->pipe = false;
	if (f->tx.in_fifo)
		xfer__fifo_pop(x); /* a pipe goes alone: it is the head */
}

/* Read the next chunk of a pipe (stdin) into data: 1 with *it filled, 0
 * when the pipe ended (or the file is finished), <0 on error. */
static int pipe_chunk(struct txs *s, struct xfile *f, uint8_t *data,
		      struct item *it)
{
	struct xsess *x = s->x;
	size_t got;
	uint64_t t;
	int r;

	/* chunks of a pipe are numbered in reading order */
	xfer__lock(&x->tx.pipe_lock);
	xfer__lock(&x->lock);
	r = f->pipe && f->tx.state == XTX_SENDING;
	xfer__unlock(&x->lock);
	if (!r) {
		xfer__unlock(&x->tx.pipe_lock);
		return 0;
	}
	t = xfer__now_ns();
	r = read_pipe(f->fd, data, x->chunk, &got);
	s->disk_ns += xfer__now_ns() - t;
	if (r) {
		xfer__unlock(&x->tx.pipe_lock);
		return r;
	}
	xfer__lock(&x->lock);
	if (got == 0) {
		pipe_ended(x, f, (uint64_t)f->tx.cursor * x->chunk);
		xfer__sum_if_hashed(x, f);
		xfer__unlock(&x->lock);
		xfer__unlock(&x->tx.pipe_lock);
		return 0;
	}
	it->chunk = f->tx.cursor++;
	r = xfer__file_grow(f, f->tx.cursor);
	if (!r)
		f->nchunks = f->tx.cursor;
	if (got < x->chunk) /* short read: the end of the pipe */
		pipe_ended(x, f, (uint64_t)it->chunk * x->chunk + got);
	xfer__unlock(&x->lock);
	xfer__unlock(&x->tx.pipe_lock);
	if (r)
		return r;
	it->len = (uint32_t)got;
	return 1;
}

/* More small chunks for the record of items[0]: one record, one seal,
 * one send for many small files. Under lock. */
static void take_small(struct txs *s)
{
	struct xsess *x = s->x;
	struct item *it = &s->items[0];
	uint32_t used = PROTO_XFER_CHUNK_HDR_LEN + it->len, slot, chunk;

	while (!it->held && it->len <= BATCH_SMALL && s->n < BATCH_MAX &&
	       xfer__take_more(x, x->chunk + PROTO_XFER_CHUNK_HDR_LEN - used,
			       &slot, &chunk)) {
		struct item *m = &s->items[s->n++];

		*m = (struct item){ .f = &x->win[slot], .chunk = chunk };
		m->len = xfer__chunk_len(m->f, chunk, x->chunk);
		used += PROTO_XFER_CHUNK_HDR_LEN + m->len;
	}
}

#define TAKE_IDLE  3
#define TAKE_AHEAD 4

/* The next record's chunks: 1 with s->items filled, 2 for nothing to do
 * this time (the file ended meanwhile), TAKE_IDLE when nothing came for
 * ALIVE_MS on a sealed stream, TAKE_AHEAD with items[0] a chunk to read
 * ahead of its plan, 0 when the stream is done. */
static int take_batch(struct txs *s)
{
	struct xsess *x = s->x;
	uint32_t slot, chunk = 0;
	struct item *it = &s->items[0];
	int r;

	xfer__lock(&x->lock);
	r = xfer__take_work(x, &slot, &chunk, &s->pipe,
			    s->sealed ? s->sent_ms + ALIVE_MS : -1);
	if (r <= 0 || r == XFER_IDLE) {
		xfer__unlock(&x->lock);
		return r == XFER_IDLE ? TAKE_IDLE : 0;
	}
	*it = (struct item){ .f = &x->win[slot], .chunk = chunk };
	if (r == XFER_AHEAD) {
		xfer__unlock(&x->lock);
		return TAKE_AHEAD;
	}
	if (it->f->tx.state == XTX_ENDED) {
		xfer__chunk_put(x, it->f);
		xfer__unlock(&x->lock);
		return 2;
	}
	s->n = 1;
	if (!s->pipe) {
		it->held = it->f->cstate[chunk] == CS_HELD;
		it->len = xfer__chunk_len(it->f, chunk, x->chunk);
		take_small(s);
	}
	xfer__pass_on(x);
	xfer__unlock(&x->lock);
	return 1;
}

/* Read (or find a hole for) one chunk into data and hash it. */
static int read_item(struct txs *s, struct item *it, uint8_t *data)
{
	struct xfile *f = it->f;
	uint64_t at = (uint64_t)it->chunk * s->x->chunk, t;
	int r = 0;

	if (!s->pipe && (f->eflags & PROTO_XE_SPARSE) && !it->held &&
	    is_hole(f->fd, at, it->len)) {
		it->zero = true;
	} else if (!s->pipe) {
		t = xfer__now_ns();
		r = fsio_pread_all(f->fd, data, it->len, at);
		s->disk_ns += xfer__now_ns() - t;
		if (r) {
			/* that file fails (or is read again: it shrank), not
			 * the session: zeros go, its SUM will not */
			xfer__lock(&s->x->lock);
			if (!f->tx.read_err)
				f->tx.read_err = r;
			xfer__unlock(&s->x->lock);
			memset(data, 0, it->len);
			r = 0;
		}
	}
	t = xfer__now_ns();
	if (it->zero)
		digest_zeros(it->len, it->d);
	else
		digest_chunk(data, it->len, it->d);
	s->hash_ns += xfer__now_ns() - t;
	return 0;
}

/* A chunk the receiver holds (a resume): when its digest matches, it
 * need not travel; true when it is left out of the record. */
static bool held_matches(struct xsess *x, struct item *it)
{
	struct xfile *f = it->f;
	bool same;

	xfer__lock(&x->lock);
	same = !memcmp(f->digests + (size_t)it->chunk * DIGEST_LEN, it->d,
		       DIGEST_LEN);
	if (same && f->tx.state != XTX_ENDED) {
		f->cstate[it->chunk] = CS_GOT;
		x->bytes_held += it->len;
		xfer__chunk_hashed(x, f);
	}
	if (same || f->tx.state == XTX_ENDED) {
		it->skip = true;
		xfer__chunk_put(x, f);
	}
	xfer__unlock(&x->lock);
	return it->skip;
}

/* Read and hash every chunk of the batch into the record at s->buf. */
static int build_record(struct txs *s)
{
	unsigned i;
	int r;

	s->off = 0;
	s->data_len = 0;
	for (i = 0; i < s->n; i++) {
		struct item *it = &s->items[i];
		uint8_t *data = s->buf + s->off + PROTO_XFER_CHUNK_HDR_LEN;
		struct proto_xfer_chunk_hdr h = {
			.kind = PROTO_XC_DATA,
			.idx = it->f->idx,
			.chunk = it->chunk,
			.len = it->len,
		};

		/* held, and the same digest read ahead: not read again */
		if (it->held &&
		    xfer__prehashed(s->x, it->f, it->chunk, it->d) &&
		    held_matches(s->x, it))
			continue;
		r = read_item(s, it, data);
		if (r)
			return r;
		if (it->held && held_matches(s->x, it))
			continue;
		if (it->zero)
			h.kind = PROTO_XC_ZERO;
		memcpy(h.digest, it->d, DIGEST_LEN);
		proto_xfer_chunk_encode(s->buf + s->off, &h);
		s->off += PROTO_XFER_CHUNK_HDR_LEN + (it->zero ? 0 : it->len);
		s->data_len += it->len;
	}
	return 0;
}

/* The batch's chunks are sent (or were matched): each counts as hashed
 * and its thread lets go of it. */
static void batch_done(struct txs *s)
{
	struct xsess *x = s->x;
	unsigned i;

	xfer__lock(&x->lock);
	for (i = 0; i < s->n; i++) {
		struct item *it = &s->items[i];
		struct xfile *f = it->f;

		if (it->skip)
			continue;
		if (f->tx.state != XTX_ENDED &&
		    f->cstate[it->chunk] != CS_GOT) {
			f->cstate[it->chunk] = CS_GOT;
			memcpy(f->digests + (size_t)it->chunk * DIGEST_LEN,
			       it->d, DIGEST_LEN);
			f->sent++;
			xfer__chunk_hashed(x, f);
		}
		xfer__chunk_put(x, f);
	}
	xfer__unlock(&x->lock);
}

/* A pipe's next chunk into items[0]: 1 to send it, 0 when there is none
 * (the thread goes on), <0 to stop. */
static int take_pipe_chunk(struct txs *s)
{
	struct xsess *x = s->x;
	struct item *it = &s->items[0];
	int r = pipe_chunk(s, it->f, s->buf + PROTO_XFER_CHUNK_HDR_LEN, it);

	if (r > 0)
		return 1;
	xfer__lock(&x->lock);
	xfer__chunk_put(x, it->f);
	xfer__unlock(&x->lock);
	if (r < 0) {
		xfer__fatal(x, r, "reading standard input: %s", lr_strerror(r));
		return r;
	}
	return 0;
}

/* Nothing to send for ALIVE_MS: an empty DATA record, so that a record
 * dropped before it (the last chunk of all, say) fails to open at the
 * receiver now, not after IDLE_MS of silence. It is no activity: 1 to go
 * on, <0 on a failure (reported). */
static int stream_alive(struct txs *s)
{
	int r = conn_send_data(s->c, CONN_REC_DATA, s->buf, 0);

	if (r) {
		if (r != -ECANCELED)
			xfer__fatal(s->x, r, "stream %u: %s", s->st->i + 1,
				    lr_strerror(r));
		return r;
	}
	s->sent_ms = net_now_ms();
	return 1;
}

/* A chunk read ahead of its plan; on a sealed stream quiet for ALIVE_MS
 * meanwhile, an empty record too. 1 to go on, <0 on a failure. */
static int stream_ahead(struct txs *s)
{
	struct item *it = &s->items[0];
	uint64_t t = xfer__now_ns();

	xfer__prehash_chunk(s->x, SLOT(s->x, it->f->idx), it->chunk, s->buf);
	s->disk_ns += xfer__now_ns() - t;
	if (s->sealed && net_now_ms() - s->sent_ms >= ALIVE_MS)
		return stream_alive(s);
	return 1;
}

/* One record: taken, read, hashed, sent, accounted. 1 to go on, 0 when
 * the stream is done, <0 on a failure (reported). */
static int stream_turn(struct txs *s)
{
	int r = take_batch(s);

	if (r == TAKE_IDLE)
		return stream_alive(s);
	if (r == TAKE_AHEAD)
		return stream_ahead(s);
	if (r != 1)
		return r ? 1 : 0;
	if (s->pipe) {
		r = take_pipe_chunk(s);
		if (r <= 0)
			return r < 0 ? r : 1;
	}
	r = build_record(s);
	if (r)
		return r;
	if (s->off) {
		pace(s->x, s->data_len);
		r = conn_send_data(s->c, CONN_REC_DATA, s->buf, s->off);
		if (r) {
			if (r != -ECANCELED)
				xfer__fatal(s->x, r, "stream %u: %s",
					    s->st->i + 1, lr_strerror(r));
			return r;
		}
		s->sent_ms = net_now_ms();
		atomic_store(&s->x->last_activity_ms, s->sent_ms);
	}
	batch_done(s);
	return 1;
}

/* The stream's END record, then our side shut (docs/PROTOCOL.md section
 * 6): nothing follows END, and the receiver reads to our end of file. */
static void stream_end(struct txs *s)
{
	int r = conn_send_data(s->c, CONN_REC_END, s->buf, 0);

	if (!r && shutdown(s->c->fd, SHUT_WR))
		r = -errno;
	if (r && r != -ECANCELED)
		xfer__fatal(s->x, r, "stream %u: %s", s->st->i + 1,
			    lr_strerror(r));
}

void *xfer__send_stream(void *arg)
{
	struct sthread *st = arg;
	struct xsess *x = st->x;
	struct txs s = { .st = st, .x = x, .c = &x->cs->data[st->i] };
	size_t cap = PROTO_XFER_CHUNK_HDR_LEN + x->chunk + CRYPTO_TAG_LEN;
	int64_t t0 = net_now_us();

	s.buf = malloc(cap);
	if (!s.buf) {
		xfer__fatal(x, -ENOMEM, "out of memory for a stream buffer");
		return NULL;
	}
	s.sealed = conn_data_sealed(s.c);
	s.sent_ms = net_now_ms();
	while (stream_turn(&s) > 0)
		;
	if (!atomic_load(&x->abort))
		stream_end(&s);
	xfer__add_waits(x, s.c, s.disk_ns, s.hash_ns, t0);
	free(s.buf);
	return NULL;
}
