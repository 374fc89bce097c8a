// SPDX-License-Identifier: MIT
/* The listener both servers share: accept, the table of connections that
 * have not yet said what they are, deadlines, room for newcomers, and the
 * penalties of addresses that failed to authenticate. */
#include <errno.h>
#include <stdatomic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server_int.h"
#include "banned.h"

int lsn_init(struct lsn *l, int fd, size_t slot_size,
	     const struct lsn_limits *lim, const struct lsn_ops *ops, void *ctx)
{
	memset(l, 0, sizeof(*l));
	if (slot_size < sizeof(struct lsn_slot) || !lim->max ||
	    lim->max > LSN_MAX_SLOTS)
		return -EINVAL;
	l->slots = calloc(lim->max, slot_size);
	if (!l->slots)
		return -ENOMEM;
	l->fd = fd;
	l->slot_size = slot_size;
	l->lim = *lim;
	if (!l->lim.per_host || l->lim.per_host > l->lim.max)
		l->lim.per_host = l->lim.max;
	l->ops = ops;
	l->ctx = ctx;
	return 0;
}

struct lsn_slot *lsn_at(const struct lsn *l, unsigned i)
{
	return (struct lsn_slot *)(l->slots + (size_t)i * l->slot_size);
}

void lsn_drop(struct lsn *l, unsigned i, const char *reason)
{
	struct lsn_slot *s = lsn_at(l, i);

	if (reason && l->ops->rejected)
		l->ops->rejected(l->ctx, s->peer, reason);
	if (l->ops->closing)
		l->ops->closing(l->ctx, s);
	if (s->fd >= 0)
		close(s->fd);
	memmove(s, lsn_at(l, i + 1), (size_t)(l->n - i - 1) * l->slot_size);
	l->n--;
}

void lsn_fini(struct lsn *l)
{
	while (l->n)
		lsn_drop(l, l->n - 1, NULL);
	free(l->slots);
	l->slots = NULL;
}

/* Entries from host; only those not ready when idle. */
static unsigned count_of(const struct lsn *l, const uint8_t *host, bool idle)
{
	unsigned i, n = 0;

	for (i = 0; i < l->n; i++) {
		const struct lsn_slot *s = lsn_at(l, i);

		if (!memcmp(s->host, host, 16) && (!idle || !s->ready))
			n++;
	}
	return n;
}

/* The oldest entry of host, one not ready if it has any; -1 if none. */
static int oldest_of(const struct lsn *l, const uint8_t *host)
{
	int any = -1;
	unsigned i;

	for (i = 0; i < l->n; i++) {
		const struct lsn_slot *s = lsn_at(l, i);

		if (memcmp(s->host, host, 16))
			continue;
		if (!s->ready)
			return (int)i;
		if (any < 0)
			any = (int)i;
	}
	return any;
}

/* The host holding the most entries (of those with the most, the one
 * whose entry comes first in the table), counted in one pass through a
 * small table of the hosts seen: the table can be full of one flood. */
static const uint8_t *busiest(const struct lsn *l)
{
	uint16_t first[2 * LSN_MAX_SLOTS], count[2 * LSN_MAX_SLOTS];
	unsigned i, h, most = 0, n = 2 * LSN_MAX_SLOTS;
	const uint8_t *key;
	int best = -1;

	memset(first, 0, sizeof(first));
	for (i = 0; i < l->n; i++) {
		key = lsn_at(l, i)->host;
		/* the address's last bytes vary most; open addressing */
		h = ((unsigned)key[15] | (unsigned)key[14] << 8 |
		     (unsigned)key[13] << 16) %
		    n;
		while (first[h] &&
		       memcmp(lsn_at(l, first[h] - 1u)->host, key, 16))
			h = (h + 1) % n;
		if (!first[h]) {
			first[h] = (uint16_t)(i + 1);
			count[h] = 0;
		}
		if (++count[h] > most)
			most = count[h];
	}
	for (h = 0; h < n; h++)
		if (first[h] && count[h] == most &&
		    (best < 0 || first[h] - 1u < (unsigned)best))
			best = (int)first[h] - 1;
	return best < 0 ? NULL : lsn_at(l, (unsigned)best)->host;
}

int lsn_victim(const struct lsn *l, const uint8_t *host, const char **why)
{
	const uint8_t *top;

	if (count_of(l, host, true) >= l->lim.per_host) {
		*why = "gave its place to a newer connection: too many from "
		       "this host waiting to identify themselves";
		return oldest_of(l, host);
	}
	if (l->n < l->lim.max)
		return -1;
	top = busiest(l);
	*why = "gave its place to a newer connection: too many waiting to "
	       "identify themselves";
	return top ? oldest_of(l, top) : -1;
}

struct lsn_slot *lsn_add(struct lsn *l, int fd,
			 const struct sockaddr_storage *ss)
{
	const char *why = NULL;
	struct lsn_slot *s;
	uint8_t host[16];
	int64_t now = net_now_ms();
	int v;

	net_addr_host_key(ss, host);
	v = lsn_victim(l, host, &why);
	if (v >= 0)
		lsn_drop(l, (unsigned)v, why);
	if (l->n >= l->lim.max) {
		close(fd);
		return NULL;
	}
	s = lsn_at(l, l->n++);
	memset(s, 0, l->slot_size);
	s->fd = fd;
	memcpy(s->host, host, 16);
	net_addr_str((const struct sockaddr *)ss, s->peer, sizeof(s->peer));
	s->seq = atomic_fetch_add(&l->accepted, 1) + 1;
	s->hold_until = lsn_held_until(l, host, now);
	s->deadline = (s->hold_until ? s->hold_until : now) + l->lim.wait_ms;
	if (l->ops->opened)
		l->ops->opened(l->ctx, s, ss);
	return s;
}

/* Out of descriptors: a waiting entry gives its own up, or accepting
 * pauses, rather than spin on a listener that stays readable. */
static bool out_of_fds(struct lsn *l, int err)
{
	const uint8_t *top;
	int v;

	if ((err == EMFILE || err == ENFILE) && l->n) {
		top = busiest(l);
		v = top ? oldest_of(l, top) : -1;
		if (v >= 0) {
			lsn_drop(l, (unsigned)v,
				 "out of file descriptors: the oldest "
				 "connection waiting to identify itself gave "
				 "its place");
			return true;
		}
	}
	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM)
		l->paused_until = net_now_ms() + LSN_PAUSE_MS;
	return false;
}

void lsn_accept(struct lsn *l)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	unsigned k;
	int fd;

	for (k = 0; k < LSN_ACCEPT_BURST; k++) {
		sl = sizeof(ss);
		fd = accept4(l->fd, (struct sockaddr *)&ss, &sl,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (out_of_fds(l, errno))
				continue;
			return;
		}
		lsn_add(l, fd, &ss);
	}
}

static void lower(int64_t *timeout, int64_t at, int64_t now)
{
	if (at - now < *timeout)
		*timeout = at > now ? at - now : 0;
}

unsigned lsn_poll_fill(const struct lsn *l, struct pollfd *pf, int64_t now,
		       int64_t *timeout_ms)
{
	unsigned i;

	pf[0] = (struct pollfd){ .fd = now >= l->paused_until ? l->fd : -1,
				 .events = POLLIN };
	if (l->paused_until > now)
		lower(timeout_ms, l->paused_until, now);
	for (i = 0; i < l->n; i++) {
		const struct lsn_slot *s = lsn_at(l, i);
		bool held = s->hold_until > now;

		/* an address being penalized is not read yet; a ready
		 * entry waits for its server, not for its peer */
		pf[1 + i] =
			(struct pollfd){ .fd = held || s->ready ? -1 : s->fd,
					 .events = POLLIN };
		if (held)
			lower(timeout_ms, s->hold_until, now);
		if (!s->ready)
			lower(timeout_ms, s->deadline, now);
	}
	return l->n;
}

bool lsn_expired(const struct lsn *l, unsigned i, int64_t now)
{
	const struct lsn_slot *s = lsn_at(l, i);

	return !s->ready && s->deadline <= now;
}

/* The penalty of host, forgetting old ones on the way; with create, a
 * slot for it (the least recently used). */
static struct lsn_penalty *penalty_of(struct lsn *l, const uint8_t *host,
				      int64_t now, bool create)
{
	struct lsn_penalty *oldest = &l->pen[0];
	unsigned i;

	for (i = 0; i < LSN_PENALTY_SLOTS; i++) {
		struct lsn_penalty *q = &l->pen[i];

		if (q->fails && now - q->last > LSN_PENALTY_FORGET_MS)
			memset(q, 0, sizeof(*q));
		if (q->fails && !memcmp(q->host, host, 16))
			return q;
		if (q->last < oldest->last)
			oldest = q;
	}
	if (!create)
		return NULL;
	memset(oldest, 0, sizeof(*oldest));
	memcpy(oldest->host, host, 16);
	return oldest;
}

void lsn_penalize(struct lsn *l, const uint8_t *host, int64_t now)
{
	struct lsn_penalty *q = penalty_of(l, host, now, true);
	int64_t wait = LSN_PENALTY_FIRST_MS;
	unsigned k;

	q->fails++;
	for (k = 1; k < q->fails && wait < LSN_PENALTY_MAX_MS; k++)
		wait *= 2;
	if (wait > LSN_PENALTY_MAX_MS)
		wait = LSN_PENALTY_MAX_MS;
	q->last = now;
	q->until = now + wait;
}

int64_t lsn_held_until(struct lsn *l, const uint8_t *host, int64_t now)
{
	struct lsn_penalty *q = penalty_of(l, host, now, false);

	return q && q->until > now ? q->until : 0;
}
