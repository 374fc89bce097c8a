// SPDX-License-Identifier: MIT
/*
 * The window: the session's x->wn entries announced and not yet done,
 * each with the arrays of its chunks; and the sender's work queue, from
 * which the stream threads take chunks (files in plan order, chunks in
 * order, resends first).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "net.h"
#include "xfer_int.h"
#include "banned.h"

/*
 * The arrays of a file's chunks live in one zeroed block: digests, then
 * states, then tries. Small blocks come from calloc; from ZMAP bytes up
 * they are mapped, so that their pages take memory only once a chunk
 * writes them: the announcement of a huge file costs its receiver address
 * space, not memory (PROTOCOL.md 7.12).
 */
#define ZMAP	  (64u << 10)
#define PER_CHUNK (DIGEST_LEN + 2u)

static void *zalloc(size_t n)
{
	void *p;

	if (n < ZMAP)
		return calloc(1, n);
	p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void zfree(void *p, size_t n)
{
	if (!p)
		return;
	if (n >= ZMAP)
		munmap(p, n);
	else
		free(p);
}

int xfer__file_grow(struct xfile *f, uint32_t n)
{
	uint32_t cap = f->cap ? f->cap : 16;
	uint8_t *base;

	if (n <= f->cap)
		return 0;
	while (cap < n)
		cap = cap > UINT32_MAX / 2 ? n : cap * 2;
	base = zalloc((size_t)cap * PER_CHUNK);
	if (!base)
		return -ENOMEM;
	if (f->cap) {
		memcpy(base, f->digests, (size_t)f->cap * DIGEST_LEN);
		memcpy(base + (size_t)cap * DIGEST_LEN, f->cstate, f->cap);
		memcpy(base + (size_t)cap * (DIGEST_LEN + 1), f->tries, f->cap);
		zfree(f->digests, (size_t)f->cap * PER_CHUNK);
	}
	f->digests = base;
	f->cstate = base + (size_t)cap * DIGEST_LEN;
	f->tries = base + (size_t)cap * (DIGEST_LEN + 1);
	f->cap = cap;
	return 0;
}

void xfer__file_release(struct xfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	if (f->rx.dh)
		f->rx.dh->refs--;
	else if (f->rx.dirfd >= 0)
		close(f->rx.dirfd);
	if (f->rx.jfd >= 0)
		close(f->rx.jfd);
	zfree(f->digests, (size_t)f->cap * PER_CHUNK);
	free(f->tx.pre);
	free(f->rx.jpend);
	free(f->tx.fail_text);
	xfer__xgive_free(f->rx.xg);
	free(f->path);
	memset(f, 0, sizeof(*f));
	f->fd = f->rx.dirfd = f->rx.jfd = -1;
}

int xfer__file_init(struct xfile *f, const struct proto_xfer_entry *e)
{
	/* a free slot is as xfer__file_release (or the session's start)
	 * left it: zero, no descriptors */
	f->idx = e->idx;
	f->kind = e->kind;
	f->eflags = e->eflags;
	f->mode = e->mode;
	f->mtime_sec = e->mtime_sec;
	f->mtime_nsec = e->mtime_nsec;
	f->size = e->size;
	f->link_to = e->link_to;
	f->path = strndup(e->path, e->path_len);
	return f->path ? 0 : -ENOMEM;
}

bool xfer__window_empty(struct xsess *x)
{
	unsigned i;
	bool empty = true;

	xfer__lock(&x->lock);
	for (i = 0; i < x->wn && empty; i++)
		empty = !xfer__used(&x->win[i]);
	xfer__unlock(&x->lock);
	return empty;
}

void xfer__window_fini(struct xsess *x)
{
	unsigned i;

	for (i = 0; i < x->wn; i++)
		if (xfer__used(&x->win[i]))
			xfer__file_release(&x->win[i]);
}

/* Sender: whether to announce more files now. Slots free up one by one as
 * the receiver finishes files; announcing each at once would send small
 * FILES and PLAN messages and records of one small file each. So, while
 * plenty is in flight, wait until XFER_ANNOUNCE_BATCH slots in a row are free
 * (or as many as files are left to announce); with less in flight (a long
 * file still holding a slot ahead, or the start), announce what is free. */

unsigned xfer__window_room(struct xsess *x, uint32_t next_idx, uint64_t left)
{
	unsigned k, used = 0, need, free_ = 0;

	need = left < XFER_ANNOUNCE_BATCH ? (unsigned)(left ? left : 1)
					  : XFER_ANNOUNCE_BATCH;
	xfer__lock(&x->lock);
	/* slots free from next_idx on: only this thread takes slots, so
	 * they stay free until it does */
	while (free_ < x->wn &&
	       !xfer__used(&x->win[SLOT(x, (uint64_t)next_idx + free_)]))
		free_++;
	for (k = 0; k < x->wn && used < XFER_ANNOUNCE_BATCH; k++)
		used += xfer__used(&x->win[k]);
	xfer__unlock(&x->lock);
	if (used >= XFER_ANNOUNCE_BATCH && free_ < need)
		return 0;
	return free_;
}

void xfer__fifo_pop(struct xsess *x)
{
	struct xsend *q = &x->tx;

	x->win[q->fifo[q->fifo_head]].tx.in_fifo = false;
	q->fifo_head = (q->fifo_head + 1) % XFER_WINDOW_MAX;
	q->fifo_len--;
}

static bool xfer__sum_ready(struct xsess *x, struct xfile *f)
{
	f->tx.state = XTX_HASHED;
	if (!f->from_pipe && f->nchunks <= 1) {
		/* the receiver derives it from the one chunk's digest */
		f->tx.state = XTX_SUMMED;
		return false;
	}
	x->tx.sums[x->tx.nsums++] = f->idx;
	return true;
}

void xfer__sum_if_hashed(struct xsess *x, struct xfile *f)
{
	if (f->tx.state == XTX_SENDING && !f->pipe &&
	    f->finished == f->nchunks && f->tx.cursor == f->nchunks &&
	    xfer__sum_ready(x, f))
		xfer__wake(x);
}

void xfer__chunk_hashed(struct xsess *x, struct xfile *f)
{
	f->finished++;
	xfer__sum_if_hashed(x, f);
}

void xfer__queue_file(struct xsess *x, struct xfile *f)
{
	struct xsend *q = &x->tx;

	f->tx.state = XTX_SENDING;
	if (!f->pipe && f->nchunks == 0) {
		xfer__sum_ready(x, f);
		return;
	}
	f->tx.in_fifo = true;
	q->fifo[(q->fifo_head + q->fifo_len) % XFER_WINDOW_MAX] =
		SLOT(x, f->idx);
	q->fifo_len++;
	/* the caller wakes a stream thread once the whole PLAN is queued,
	 * so that the thread finds many small files for one record */
}

/* Drop a file's queued chunks: the queue rebuilt without it. */
static void fifo_remove(struct xsess *x, struct xfile *f)
{
	struct xsend *q = &x->tx;
	uint32_t keep[XFER_WINDOW_MAX];
	unsigned i, n = 0;

	for (i = 0; i < q->fifo_len; i++) {
		uint32_t s = q->fifo[(q->fifo_head + i) % XFER_WINDOW_MAX];

		if (s != SLOT(x, f->idx))
			keep[n++] = s;
	}
	q->fifo_head = 0;
	q->fifo_len = n;
	memcpy(q->fifo, keep, n * sizeof(keep[0]));
	f->tx.in_fifo = false;
}

void xfer__tx_file_end(struct xsess *x, struct xfile *f)
{
	if (f->tx.in_fifo)
		fifo_remove(x, f);
	x->files_done++;
	f->tx.state = XTX_ENDED;
	if (!f->inflight)
		xfer__file_release(f);
}

/* A file the receiver finished before this thread let go of it frees its
 * slot only now: wake the control thread, which may be waiting for that
 * slot (to announce more, to end the streams) and would not hear of it
 * otherwise. */
void xfer__chunk_put(struct xsess *x, struct xfile *f)
{
	if (!--f->inflight && f->tx.state == XTX_ENDED) {
		xfer__file_release(f);
		xfer__wake(x);
	}
}

/* The next chunk of the file at the head of the queue. */
static void take_chunk(struct xsess *x, struct xfile *f, uint32_t *slot,
		       uint32_t *chunk)
{
	*slot = SLOT(x, f->idx);
	*chunk = f->tx.cursor++;
	f->inflight++;
	if (f->tx.cursor == f->nchunks)
		xfer__fifo_pop(x);
}

/* A chunk asked for again, when one is: 1. */
static int take_retry(struct xsess *x, uint32_t *slot, uint32_t *chunk)
{
	while (x->tx.nretries) {
		struct retry *rt = &x->tx.retries[--x->tx.nretries];
		struct xfile *f = xfer__entry(x, rt->idx);

		if (!f || f->tx.state == XTX_ENDED || rt->chunk >= f->nchunks)
			continue;
		*slot = SLOT(x, rt->idx);
		*chunk = rt->chunk;
		f->inflight++;
		return 1;
	}
	return 0;
}

/* Wait for work on x->cv until idle_until (< 0: for as long as it
 * takes): false when that time has come. Under lock. */
static bool work_wait(struct xsess *x, int64_t idle_until)
{
	struct timespec ts;
	int64_t left;

	if (idle_until < 0) {
		pthread_cond_wait(&x->cv, &x->lock);
		return true;
	}
	left = idle_until - net_now_ms();
	if (left <= 0)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* the clock of x->cv */
	ts.tv_sec += left / 1000;
	ts.tv_nsec += (long)(left % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&x->cv, &x->lock, &ts);
	return true;
}

int xfer__take_work(struct xsess *x, uint32_t *slot, uint32_t *chunk,
		    bool *pipe, int64_t idle_until)
{
	bool more = true;

	for (;;) {
		if (atomic_load(&x->abort))
			return -ECANCELED;
		*pipe = false;
		if (take_retry(x, slot, chunk))
			return 1;
		while (x->tx.fifo_len) {
			struct xfile *f = &x->win[x->tx.fifo[x->tx.fifo_head]];

			if (f->pipe) {
				*slot = SLOT(x, f->idx);
				*pipe = true;
				f->inflight++;
				return 1;
			}
			if (f->tx.cursor < f->nchunks) {
				take_chunk(x, f, slot, chunk);
				return 1;
			}
			xfer__fifo_pop(x);
		}
		if (atomic_load(&x->closing))
			return 0;
		if (xfer__prehash_take(x, slot, chunk))
			return XFER_AHEAD;
		if (!more)
			return XFER_IDLE;
		x->tx.waiters++;
		more = work_wait(x, idle_until);
		x->tx.waiters--;
	}
}

/* More small chunks from the head of the queue for the same record: 1
 * with the slot and chunk, 0 when the next is not small enough. Never
 * blocks. */
int xfer__take_more(struct xsess *x, uint32_t room, uint32_t *slot,
		    uint32_t *chunk)
{
	while (x->tx.fifo_len) {
		struct xfile *f = &x->win[x->tx.fifo[x->tx.fifo_head]];
		uint32_t len;

		if (f->pipe || f->tx.state == XTX_ENDED)
			return 0;
		if (f->tx.cursor >= f->nchunks) {
			xfer__fifo_pop(x);
			continue;
		}
		len = xfer__chunk_len(f, f->tx.cursor, x->chunk);
		if (len > BATCH_SMALL ||
		    len + PROTO_XFER_CHUNK_HDR_LEN > room ||
		    f->cstate[f->tx.cursor] == CS_HELD)
			return 0;
		take_chunk(x, f, slot, chunk);
		return 1;
	}
	return 0;
}

/* After taking work: wake one more thread when work is left. */
void xfer__pass_on(struct xsess *x)
{
	if (x->tx.waiters && (x->tx.fifo_len || x->tx.nretries))
		pthread_cond_signal(&x->cv);
}
