// SPDX-License-Identifier: MIT
/*
 * Digests ahead of the plan: while a large file waits for its plan (the
 * receiver may be reading its old copy for a delta, which takes as long
 * as reading the file), stream threads with nothing else to do read and
 * digest its chunks. A chunk the plan then says the receiver holds is
 * compared with that digest and, when equal, is not read again: the two
 * ends read their copies at the same time instead of one after the
 * other. Only where a file may be replaced (--update, --overwrite; not
 * with --checksum, which read it already) and not sent whole; a plan
 * that comes first stops it.
 * Only the oldest file still waiting is read ahead, the one the receiver
 * is working on: a file after it may be up to date, and is then never
 * read.
 */
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "xfer_int.h"
#include "banned.h"

/* A chunk's digest ahead: none, being read, there. */
enum { PRE_NONE = 0, PRE_BUSY, PRE_DONE };

static bool wanted(const struct xsess *x, const struct xfile *f)
{
	uint32_t flags = x->o->flags;

	/* with --checksum the file was read for its entry already, and is
	 * mostly up to date: not read again before its plan */
	return (flags & (XFER_F_UPDATE | XFER_F_OVERWRITE)) &&
	       !(flags &
		 (XFER_F_WHOLE_FILE | XFER_F_DRY_RUN | XFER_F_CHECKSUM)) &&
	       f->kind == PROTO_XK_FILE && !f->pipe && f->fd >= 0 &&
	       f->nchunks >= PREHASH_MIN_CHUNKS;
}

/* Drop the queue's head while its file no longer waits for a plan. */
static struct xfile *pop_stale(struct xsess *x)
{
	struct xsend *q = &x->tx;

	while (q->pre_len) {
		struct xfile *f = xfer__entry(x, q->pre_q[q->pre_head]);

		if (f && f->tx.state == XTX_ANNOUNCED)
			return f;
		q->pre_head = (q->pre_head + 1) % XFER_WINDOW_MAX;
		q->pre_len--;
	}
	return NULL;
}

void xfer__prehash_offer(struct xsess *x, struct xfile *f)
{
	struct xsend *q = &x->tx;

	/* entry numbers, not slots (a slot may hold a younger file by the
	 * time a thread comes to it). Behind a live head only entries of
	 * the window it is in: never a full queue. */
	pop_stale(x);
	if (!wanted(x, f) || q->pre_len == XFER_WINDOW_MAX)
		return;
	q->pre_q[(q->pre_head + q->pre_len) % XFER_WINDOW_MAX] = f->idx;
	q->pre_len++;
	if (q->waiters)
		pthread_cond_signal(&x->cv);
}

/* The oldest offered file still waiting for its plan, its digests'
 * room made when it becomes so; NULL when there is none (or no room:
 * then it is read when the plan comes, as without). */
static struct xfile *head_file(struct xsess *x)
{
	struct xfile *f = pop_stale(x);

	if (f && !f->tx.pre) {
		f->tx.pre = calloc(f->nchunks, DIGEST_LEN + 1);
		if (!f->tx.pre)
			return NULL;
		f->tx.pre_state = f->tx.pre + (size_t)f->nchunks * DIGEST_LEN;
	}
	return f;
}

int xfer__prehash_take(struct xsess *x, uint32_t *slot, uint32_t *chunk)
{
	struct xfile *f = head_file(x);

	/* only the oldest waiting, the receiver's work now: the next waits
	 * for its plan, which may say it is up to date (never read) */
	if (!f || f->tx.pre_cursor == f->nchunks)
		return 0;
	*slot = SLOT(x, f->idx);
	*chunk = f->tx.pre_cursor++;
	f->tx.pre_state[*chunk] = PRE_BUSY;
	f->inflight++;
	/* another idle thread for the rest */
	if (f->tx.pre_cursor < f->nchunks && x->tx.waiters)
		pthread_cond_signal(&x->cv);
	return 1;
}

void xfer__prehash_chunk(struct xsess *x, uint32_t slot, uint32_t chunk,
			 uint8_t *buf)
{
	struct xfile *f = &x->win[slot];
	uint32_t len = xfer__chunk_len(f, chunk, x->chunk);
	uint8_t d[DIGEST_LEN];
	bool ok;

	/* the slot is ours while inflight counts this chunk: its fd and
	 * size stay */
	ok = !fsio_pread_all(f->fd, buf, len, (uint64_t)chunk * x->chunk);
	if (ok)
		digest_chunk(buf, len, d);
	xfer__lock(&x->lock);
	if (ok)
		memcpy(f->tx.pre + (size_t)chunk * DIGEST_LEN, d, DIGEST_LEN);
	f->tx.pre_state[chunk] = ok ? PRE_DONE : PRE_NONE;
	xfer__chunk_put(x, f);
	xfer__unlock(&x->lock);
}

bool xfer__prehashed(struct xsess *x, const struct xfile *f, uint32_t chunk,
		     uint8_t *d)
{
	bool there;

	xfer__lock(&x->lock);
	there = f->tx.pre && chunk < f->nchunks &&
		f->tx.pre_state[chunk] == PRE_DONE;
	if (there)
		memcpy(d, f->tx.pre + (size_t)chunk * DIGEST_LEN, DIGEST_LEN);
	xfer__unlock(&x->lock);
	return there;
}
