// SPDX-License-Identifier: MIT
/*
 * The relay (relay.h): one poll loop in one thread moves bytes between
 * the frames of a byte stream and the channels' TCP connections.
 *
 * Lock: r->lock guards flushed, done and the counts read by other
 * threads (relay_wait_*, relay_counts); the loop's own state is its
 * thread's alone. The stop flag is an atomic with an eventfd to wake the
 * loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net.h"
#include "relay.h"
#include "../banned.h"

#define QUEUE_CAP (1024u * 1024) /* frames waiting to go out */
#define INBUF_CAP (1024u * 1024) /* frames read, not yet handled */
#define CTRL_ROOM 4096u		 /* kept free for control frames */
#define DRAIN_MS  2000		 /* the other end gone: the last writes */
_Static_assert(INBUF_CAP >= 2 * (RELAY_HDR + RELAY_FRAME_MAX),
	       "a frame fits in what is read");
_Static_assert(QUEUE_CAP >= 2 * (RELAY_HDR + RELAY_FRAME_MAX + CTRL_ROOM),
	       "a frame fits in what is queued");
#define PIPE_SZ	    (1024 * 1024) /* what a pipe to ssh may buffer */
#define REFUSED_MAX 64		  /* OPENs beyond the channels, to refuse */

/* One channel: a TCP connection and what the other end sent for it. */
struct chan {
	uint32_t id;
	int fd;		     /* -1 once closed */
	bool connecting;     /* the far end: connect() in progress */
	bool rd_open;	     /* its connection may still say something */
	bool eof_owed;	     /* it ended: EOF to send */
	bool open_owed;	     /* the near end: OPEN to send */
	bool close_owed;     /* it failed: CLOSE to send, then gone */
	bool peer_eof;	     /* the other end sent EOF */
	bool wr_done;	     /* and this connection has been shut for writes */
	uint32_t credit;     /* bytes the other end has room for */
	uint32_t owed;	     /* bytes drained here, not yet granted back */
	uint32_t window;     /* the room granted to the other end */
	uint64_t since_grow; /* bytes drained since it last grew */
	uint8_t *buf;	     /* what the other end sent, not yet written */
	size_t head, tail, cap;
};

struct relay {
	struct relay_opts o;
	int listen_fd;		/* the near end's; -1 at the far end */
	struct net_addr target; /* the far end's */
	uint16_t port;
	const char *lo;
	int wake; /* eventfd */
	_Atomic bool stop;
	struct chan *ch[RELAY_MAX_CHANNELS];
	unsigned nch;
	uint32_t next_id;
	uint64_t grown; /* the windows' growth beyond their start, summed */
	/* the far end: OPENs refused for want of a slot, CLOSE owed */
	uint32_t refused[REFUSED_MAX];
	unsigned nrefused;
	uint8_t *q; /* out */
	size_t qhead, qtail;
	uint8_t *in;
	size_t inlen;
	bool in_eof;
	uint64_t sent, received; /* the loop's */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool flushed, done;
	uint64_t pub_sent, pub_received; /* as last published */
};

void relay_hdr_encode(uint8_t *buf, uint8_t type, uint32_t chan, uint32_t len)
{
	buf[0] = type;
	buf[1] = buf[2] = buf[3] = 0;
	buf[4] = (uint8_t)(chan >> 24);
	buf[5] = (uint8_t)(chan >> 16);
	buf[6] = (uint8_t)(chan >> 8);
	buf[7] = (uint8_t)chan;
	buf[8] = (uint8_t)(len >> 24);
	buf[9] = (uint8_t)(len >> 16);
	buf[10] = (uint8_t)(len >> 8);
	buf[11] = (uint8_t)len;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

int relay_hdr_decode(const uint8_t *buf, uint8_t *type, uint32_t *chan,
		     uint32_t *len)
{
	*type = buf[0];
	*chan = be32(buf + 4);
	*len = be32(buf + 8);
	if (buf[1] || buf[2] || buf[3] || *chan == 0)
		return -EPROTO;
	switch (*type) {
	case RELAY_DATA: return *len && *len <= RELAY_FRAME_MAX ? 0 : -EPROTO;
	case RELAY_CREDIT: return *len && *len <= RELAY_WINDOW ? 0 : -EPROTO;
	case RELAY_OPEN:
	case RELAY_EOF:
	case RELAY_CLOSE: return *len == 0 ? 0 : -EPROTO;
	default: return -EPROTO;
	}
}

/* ---- channels ---- */

static struct chan *chan_find(struct relay *r, uint32_t id)
{
	unsigned i;

	for (i = 0; i < r->nch; i++)
		if (r->ch[i]->id == id)
			return r->ch[i];
	return NULL;
}

static struct chan *chan_add(struct relay *r, uint32_t id, int fd)
{
	struct chan *c;

	if (r->nch >= RELAY_MAX_CHANNELS)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->id = id;
	c->fd = fd;
	c->rd_open = true;
	c->credit = RELAY_WINDOW_START;
	c->window = RELAY_WINDOW_START;
	r->ch[r->nch++] = c;
	return c;
}

/* Close a channel's connection; reset: as a reset (RST), so its reader
 * sees a failure and not an end. */
static void chan_close_fd(struct chan *c, bool reset)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (c->fd < 0)
		return;
	if (reset)
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(c->fd);
	c->fd = -1;
	c->rd_open = false;
}

static void chan_remove(struct relay *r, unsigned i)
{
	struct chan *c = r->ch[i];

	chan_close_fd(c, false);
	r->grown -= c->window - RELAY_WINDOW_START;
	free(c->buf);
	free(c);
	r->ch[i] = r->ch[--r->nch];
}

/* The connection failed here: reset it, tell the other end. */
static void chan_fail(struct chan *c)
{
	chan_close_fd(c, true);
	c->close_owed = true;
	c->eof_owed = false;
	c->head = c->tail = 0;
}

/* Whether a channel is over: nothing left to do for it. */
static bool chan_over(const struct chan *c)
{
	if (c->close_owed || c->open_owed || c->eof_owed)
		return false;
	return c->fd < 0 || (!c->rd_open && c->wr_done);
}

/* ---- the queue of frames going out ---- */

static size_t q_room(const struct relay *r)
{
	return QUEUE_CAP - r->qtail;
}

static void q_compact(struct relay *r)
{
	if (r->qhead == r->qtail) {
		r->qhead = r->qtail = 0;
	} else if (r->qhead > QUEUE_CAP / 2) {
		memmove(r->q, r->q + r->qhead, r->qtail - r->qhead);
		r->qtail -= r->qhead;
		r->qhead = 0;
	}
}

/* A control frame, when there is room: true when queued. */
static bool q_ctrl(struct relay *r, uint8_t type, uint32_t chan, uint32_t len)
{
	if (q_room(r) < RELAY_HDR)
		return false;
	relay_hdr_encode(r->q + r->qtail, type, chan, len);
	r->qtail += RELAY_HDR;
	return true;
}

/* How much c's window grows with this grant: doubled when it has moved a
 * window's worth since it last grew and its connection keeps up (nothing
 * waits to be written), within RELAY_WINDOW and the relay's budget. */
static uint32_t window_growth(struct relay *r, struct chan *c)
{
	uint64_t grow = c->window;

	if (c->window >= RELAY_WINDOW || c->head != c->tail ||
	    c->since_grow < c->window)
		return 0;
	if (grow > RELAY_WINDOW - c->window)
		grow = RELAY_WINDOW - c->window;
	if (grow > RELAY_BUDGET - r->grown)
		grow = RELAY_BUDGET - r->grown;
	return (uint32_t)grow;
}

/* The room c's drained bytes free, and any growth, as one CREDIT. */
static bool q_credit(struct relay *r, struct chan *c)
{
	uint32_t grow = window_growth(r, c);

	if (!q_ctrl(r, RELAY_CREDIT, c->id, c->owed + grow))
		return false;
	c->owed = 0;
	if (grow) {
		c->window += grow;
		r->grown += grow;
		c->since_grow = 0;
	}
	return true;
}

/* Queue what each channel owes the other end: OPEN, CREDIT, EOF, CLOSE
 * (in that order: its data went before its EOF), and the refusals.
 * Whether some are still owed (no room for them yet). */
static bool q_owed(struct relay *r)
{
	bool left = false;
	unsigned i;

	while (r->nrefused &&
	       q_ctrl(r, RELAY_CLOSE, r->refused[r->nrefused - 1], 0))
		r->nrefused--;
	for (i = 0; i < r->nch; i++) {
		struct chan *c = r->ch[i];

		if (c->open_owed && q_ctrl(r, RELAY_OPEN, c->id, 0))
			c->open_owed = false;
		if (c->owed && !q_credit(r, c))
			left = true;
		if (c->eof_owed && q_ctrl(r, RELAY_EOF, c->id, 0))
			c->eof_owed = false;
		if (c->close_owed && q_ctrl(r, RELAY_CLOSE, c->id, 0))
			c->close_owed = false;
		left = left || c->open_owed || c->eof_owed || c->close_owed;
	}
	return left || r->nrefused;
}

/* Write what is queued. -errno when out failed. */
static int q_flush(struct relay *r)
{
	ssize_t n;

	while (r->qhead < r->qtail) {
		n = write(r->o.out, r->q + r->qhead, r->qtail - r->qhead);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		r->qhead += (size_t)n;
	}
	q_compact(r);
	return 0;
}

/* ---- a channel's connection ---- */

/* Read from c's connection into a DATA frame, as far as credit and the
 * queue allow. */
static void chan_read(struct relay *r, struct chan *c)
{
	size_t room = q_room(r), want;
	ssize_t n;

	if (room < RELAY_HDR + CTRL_ROOM + 1 || !c->credit)
		return; /* (a hang-up with no room: its write will fail) */
	want = room - RELAY_HDR - CTRL_ROOM;
	if (want > RELAY_FRAME_MAX)
		want = RELAY_FRAME_MAX;
	if (want > c->credit)
		want = c->credit;
	n = recv(c->fd, r->q + r->qtail + RELAY_HDR, want, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		chan_fail(c);
	} else if (n == 0) {
		c->rd_open = false;
		c->eof_owed = true;
	} else {
		relay_hdr_encode(r->q + r->qtail, RELAY_DATA, c->id,
				 (uint32_t)n);
		r->qtail += RELAY_HDR + (size_t)n;
		c->credit -= (uint32_t)n;
		r->sent += (uint64_t)n;
	}
}

/* Write what the other end sent to c's connection; its EOF after it. */
static void chan_write(struct chan *c)
{
	ssize_t n;

	while (c->head < c->tail) {
		n = send(c->fd, c->buf + c->head, c->tail - c->head,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			chan_fail(c);
			return;
		}
		c->head += (size_t)n;
		c->owed += (uint32_t)n;
		c->since_grow += (uint64_t)n;
	}
	c->head = c->tail = 0;
	if (c->peer_eof && !c->wr_done) {
		shutdown(c->fd, SHUT_WR);
		c->wr_done = true;
	}
}

/* The far end's connect finished (POLLOUT): did it work? */
static void chan_connected(struct chan *c)
{
	int e = 0;
	socklen_t len = sizeof(e);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &len) || e) {
		chan_fail(c);
		return;
	}
	c->connecting = false;
}

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The near end: a new connection on the loopback port. */
static void accept_one(struct relay *r)
{
	struct chan *c;
	int fd;

	fd = accept4(r->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	set_nodelay(fd);
	c = chan_add(r, ++r->next_id, fd);
	if (!c) {
		close(fd);
		return;
	}
	c->open_owed = true;
}

/* The far end: OPEN id: connect to the target. */
static int far_open(struct relay *r, uint32_t id)
{
	struct chan *c;
	int fd;

	if (r->o.near || chan_find(r, id))
		return -EPROTO;
	fd = socket(r->target.ss.ss_family,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	c = fd >= 0 ? chan_add(r, id, fd) : NULL;
	if (!c) {
		if (fd >= 0)
			close(fd);
		/* no room: refuse this one (the near end's slots free at
		 * other times than ours; beyond REFUSED_MAX it ignores ours) */
		if (r->nrefused == REFUSED_MAX)
			return -ENOBUFS;
		r->refused[r->nrefused++] = id;
		return 0;
	}
	set_nodelay(fd);
	if (connect(fd, (const struct sockaddr *)&r->target.ss,
		    r->target.len) == 0)
		return 0;
	if (errno == EINPROGRESS)
		c->connecting = true;
	else
		chan_fail(c);
	return 0;
}

/* ---- frames coming in ---- */

/* DATA for c: keep it until its connection takes it. */
static int chan_keep(struct relay *r, struct chan *c, const uint8_t *p,
		     uint32_t len)
{
	size_t pending = c->tail - c->head;

	/* what it sent that this side has not granted back yet */
	if (pending + c->owed + len > c->window || c->peer_eof)
		return -EPROTO; /* more than the room granted */
	r->received += len;
	if (c->fd < 0)
		return 0; /* failed here: dropped */
	if (!pending && !c->connecting) {
		/* nothing waits before it: straight to the connection */
		ssize_t n = send(c->fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			chan_fail(c);
			return 0;
		}
		if (n > 0) {
			c->owed += (uint32_t)n;
			c->since_grow += (uint64_t)n;
			p += n;
			len -= (uint32_t)n;
		}
		if (!len)
			return 0;
	}
	if (c->cap - c->tail < len && c->head) {
		memmove(c->buf, c->buf + c->head, pending);
		c->head = 0;
		c->tail = pending;
	}
	if (c->cap - c->tail < len) {
		size_t cap = c->cap ? c->cap : 64 * 1024;
		uint8_t *b;

		while (cap < pending + len)
			cap *= 2;
		if (cap > RELAY_WINDOW)
			cap = RELAY_WINDOW;
		b = realloc(c->buf, cap);
		if (!b)
			return -ENOMEM;
		c->buf = b;
		c->cap = cap;
	}
	memcpy(c->buf + c->tail, p, len);
	c->tail += len;
	return 0;
}

static int frame(struct relay *r, uint8_t type, uint32_t id, const uint8_t *p,
		 uint32_t len)
{
	struct chan *c;

	if (type == RELAY_OPEN)
		return far_open(r, id);
	c = chan_find(r, id);
	if (!c)
		return 0; /* a channel already gone here */
	switch (type) {
	case RELAY_DATA: return chan_keep(r, c, p, len);
	case RELAY_CREDIT:
		if ((uint64_t)c->credit + len > RELAY_WINDOW)
			return -EPROTO;
		c->credit += len;
		return 0;
	case RELAY_EOF: c->peer_eof = true; return 0;
	default: /* CLOSE: the other end's connection failed */
		chan_close_fd(c, true);
		c->eof_owed = c->open_owed = false;
		c->wr_done = true;
		return 0;
	}
}

/* Handle the whole frames read so far. */
static int frames_in(struct relay *r)
{
	size_t at = 0;
	uint8_t type;
	uint32_t id, len;
	size_t body;
	int e;

	while (r->inlen - at >= RELAY_HDR) {
		if (relay_hdr_decode(r->in + at, &type, &id, &len))
			return -EPROTO;
		body = type == RELAY_DATA ? len : 0; /* CREDIT's is a count */
		if (r->inlen - at < RELAY_HDR + body)
			break;
		e = frame(r, type, id, r->in + at + RELAY_HDR, len);
		if (e)
			return e;
		at += RELAY_HDR + body;
	}
	memmove(r->in, r->in + at, r->inlen - at);
	r->inlen -= at;
	return 0;
}

static int read_in(struct relay *r)
{
	ssize_t n = read(r->o.in, r->in + r->inlen, INBUF_CAP - r->inlen);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		r->in_eof = true;
		return n < 0 ? -errno : 0;
	}
	r->inlen += (size_t)n;
	return frames_in(r);
}

/* ---- the loop ---- */

/* Which events each descriptor waits for: [0] wake, [1] in, [2] out,
 * [3] listen, then the channels. */
static unsigned poll_set(struct relay *r, struct pollfd *p)
{
	bool room = q_room(r) >= RELAY_HDR + CTRL_ROOM + 1;
	unsigned i, n = 4;

	p[0] = (struct pollfd){ .fd = r->wake, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = r->o.in, .events = POLLIN };
	if (r->inlen == INBUF_CAP)
		p[1].fd = -1;
	p[2] = (struct pollfd){ .fd = r->qhead < r->qtail ? r->o.out : -1,
				.events = POLLOUT };
	p[3] = (struct pollfd){ .fd = r->listen_fd, .events = POLLIN };
	if (r->nch >= RELAY_MAX_CHANNELS)
		p[3].fd = -1;
	for (i = 0; i < r->nch; i++, n++) {
		struct chan *c = r->ch[i];

		p[n] = (struct pollfd){ .fd = c->fd };
		if (c->connecting)
			p[n].events = POLLOUT;
		else if (c->rd_open && c->credit && room && !c->open_owed)
			p[n].events |= POLLIN;
		if (!c->connecting && c->head < c->tail)
			p[n].events |= POLLOUT;
		if (!p[n].events)
			p[n].fd = -1;
	}
	return n;
}

/* Act on what poll said about the channels, then drop those over. */
static void chans_step(struct relay *r, const struct pollfd *p, unsigned n)
{
	unsigned i;

	for (i = 0; i + 4 < n && i < r->nch; i++) {
		struct chan *c = r->ch[i];
		short ev = p[i + 4].revents;

		if (c->fd < 0 || !ev)
			continue;
		if (c->connecting) {
			chan_connected(c);
			continue;
		}
		if (ev & (POLLIN | POLLHUP | POLLERR) && c->rd_open)
			chan_read(r, c);
		if (c->fd >= 0 && c->head < c->tail && ev & (POLLOUT | POLLERR))
			chan_write(c);
	}
	/* EOF from the other end with nothing left to write (a connection
	 * still being made is shut once it is) */
	for (i = 0; i < r->nch; i++)
		if (r->ch[i]->fd >= 0 && r->ch[i]->peer_eof &&
		    !r->ch[i]->connecting && r->ch[i]->head == r->ch[i]->tail)
			chan_write(r->ch[i]);
	for (i = r->nch; i-- > 0;)
		if (chan_over(r->ch[i]))
			chan_remove(r, i);
}

/* Tell waiting threads how far it got. */
static void publish(struct relay *r, bool done)
{
	bool flushed = r->qhead == r->qtail;
	unsigned i;

	for (i = 0; i < r->nch && flushed; i++)
		if (r->ch[i]->rd_open || r->ch[i]->eof_owed ||
		    r->ch[i]->close_owed)
			flushed = false;
	pthread_mutex_lock(&r->lock);
	r->pub_sent = r->sent;
	r->pub_received = r->received;
	if (flushed != r->flushed || done) {
		r->flushed = flushed;
		r->done = r->done || done;
		pthread_cond_broadcast(&r->cond);
	}
	pthread_mutex_unlock(&r->lock);
}

static int loop_once(struct relay *r, struct pollfd *p)
{
	unsigned n = poll_set(r, p), k;
	int e = 0;

	if (poll(p, n, -1) < 0)
		return errno == EINTR ? 0 : -errno;
	if (p[1].revents && !r->in_eof)
		e = read_in(r);
	if (!e && p[3].revents)
		accept_one(r);
	if (!e)
		chans_step(r, p, n);
	/* until nothing is owed or the output is full (then poll waits for
	 * it, and this runs again) */
	for (k = 0; !e && k < 8; k++) {
		bool left = q_owed(r);

		e = q_flush(r);
		if (!left || r->qhead < r->qtail)
			break;
	}
	publish(r, false);
	return e;
}

/* One channel's step of the drain: true when it is over. A channel the
 * other end ended (EOF) gets what came before, then its end, and its
 * reader's last words are read and dropped (a close with unread bytes
 * would reset it, and lose what was still to go); one it did not end is
 * reset once what came is written: its reader sees a failure. */
static bool drain_one(struct chan *c)
{
	uint8_t junk[4096];
	ssize_t n;

	if (c->fd < 0 || c->connecting)
		return true; /* nobody at the other end any more */
	if (c->head < c->tail)
		chan_write(c);
	if (c->fd < 0 || c->head < c->tail)
		return c->fd < 0;
	if (!c->peer_eof) {
		chan_close_fd(c, true);
		return true;
	}
	if (!c->wr_done) {
		shutdown(c->fd, SHUT_WR);
		c->wr_done = true;
	}
	do
		n = recv(c->fd, junk, sizeof(junk), MSG_DONTWAIT);
	while (n > 0);
	return n == 0 || (errno != EAGAIN && errno != EINTR);
}

/* The other end has gone: what it sent before it went still reaches
 * the connections (each then ends as it would have), for up to
 * DRAIN_MS. */
static void drain(struct relay *r, struct pollfd *p)
{
	int64_t until = net_now_ms() + DRAIN_MS;
	unsigned i, n;

	for (i = 0; i < r->nch; i++)
		r->ch[i]->rd_open = false; /* nowhere to send it */
	for (;;) {
		for (i = r->nch; i-- > 0;)
			if (drain_one(r->ch[i]))
				chan_remove(r, i);
		if (!r->nch || net_now_ms() >= until || atomic_load(&r->stop))
			return;
		for (i = n = 0; i < r->nch; i++) {
			struct chan *c = r->ch[i];

			p[n++] = (struct pollfd){ .fd = c->fd,
						  .events = c->head < c->tail
								    ? POLLOUT
								    : POLLIN };
		}
		p[n++] = (struct pollfd){ .fd = r->wake, .events = POLLIN };
		poll(p, n, 100);
	}
}

int relay_run(struct relay *r)
{
	struct pollfd *p = calloc(RELAY_MAX_CHANNELS + 4, sizeof(*p));
	int e = p ? 0 : -ENOMEM;

	if (!e && r->inlen)
		e = frames_in(r);
	while (!e && !r->in_eof && !atomic_load(&r->stop))
		e = loop_once(r, p);
	if (!e && r->in_eof && !atomic_load(&r->stop))
		drain(r, p);
	free(p);
	while (r->nch) {
		chan_close_fd(r->ch[r->nch - 1], true);
		chan_remove(r, r->nch - 1);
	}
	publish(r, true);
	return e;
}

/* Non-blocking, and a pipe's buffer as large as the system lets it be
 * (fewer switches between the relay and ssh). */
static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fcntl(fd, F_GETPIPE_SZ) > 0 && fcntl(fd, F_GETPIPE_SZ) < PIPE_SZ)
		fcntl(fd, F_SETPIPE_SZ, PIPE_SZ); /* a hint: may fail */

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -1 : 0;
}

/* The near end: a port on loopback, IPv4 or else IPv6. */
static int near_listen(struct relay *r)
{
	static const char *const lo[] = { "127.0.0.1", "::1" };
	struct lr_err err;
	struct net_addr a;
	unsigned i;
	int fd = -EADDRNOTAVAIL;

	for (i = 0; i < 2 && fd < 0; i++) {
		if (net_resolve(lo[i], 0, AF_UNSPEC, true, &a, &err))
			continue;
		fd = net_listen(&a, 64, &err);
		r->lo = lo[i];
	}
	if (fd < 0)
		return fd;
	if (nonblock(fd)) {
		close(fd);
		return -errno;
	}
	r->listen_fd = fd;
	a.len = sizeof(a.ss);
	if (getsockname(fd, (struct sockaddr *)&a.ss, &a.len))
		return -errno;
	r->port = a.ss.ss_family == AF_INET
			  ? ntohs(((struct sockaddr_in *)&a.ss)->sin_port)
			  : ntohs(((struct sockaddr_in6 *)&a.ss)->sin6_port);
	return 0;
}

static int far_target(struct relay *r, const struct relay_opts *o)
{
	struct lr_err err;

	return net_resolve(o->addr, o->port, AF_UNSPEC, false, &r->target,
			   &err);
}

uint16_t relay_port(const struct relay *r)
{
	return r->port;
}

const char *relay_addr(const struct relay *r)
{
	return r->lo;
}

int relay_new(const struct relay_opts *o, struct relay **out)
{
	struct relay *r = calloc(1, sizeof(*r));
	int e;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	if (o->pre_len > INBUF_CAP) {
		free(r);
		return -E2BIG;
	}
	r->o = *o;
	r->o.pre = NULL; /* copied below */
	r->listen_fd = -1;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->q = malloc(QUEUE_CAP);
	r->in = malloc(INBUF_CAP);
	r->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	e = !r->q || !r->in ? -ENOMEM : r->wake < 0 ? -errno : 0;
	if (!e && (nonblock(o->in) || nonblock(o->out)))
		e = -errno;
	if (!e)
		e = o->near ? near_listen(r) : far_target(r, o);
	if (e) {
		relay_free(r);
		return e;
	}
	if (o->pre_len)
		memcpy(r->in, o->pre, o->pre_len);
	r->inlen = o->pre_len;
	*out = r;
	return 0;
}

void relay_stop(struct relay *r)
{
	uint64_t one = 1;
	int saved = errno; /* (a signal handler may call it) */

	atomic_store(&r->stop, true);
	if (write(r->wake, &one, sizeof(one)) < 0) {
		/* the counter is far from full */
	}
	errno = saved;
}

/* Wait up to timeout_ms for *what (under r->lock). */
static bool wait_for(struct relay *r, const bool *what, int timeout_ms)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&r->lock);
	while (!*what && !r->done &&
	       pthread_cond_timedwait(&r->cond, &r->lock, &until) == 0)
		;
	ok = *what || r->done;
	pthread_mutex_unlock(&r->lock);
	return ok;
}

bool relay_wait_flushed(struct relay *r, int timeout_ms)
{
	return wait_for(r, &r->flushed, timeout_ms);
}

bool relay_wait_done(struct relay *r, int timeout_ms)
{
	return wait_for(r, &r->done, timeout_ms);
}

void relay_counts(struct relay *r, uint64_t *sent, uint64_t *received)
{
	pthread_mutex_lock(&r->lock);
	*sent = r->pub_sent;
	*received = r->pub_received;
	pthread_mutex_unlock(&r->lock);
}

void relay_free(struct relay *r)
{
	if (!r)
		return;
	while (r->nch)
		chan_remove(r, r->nch - 1);
	if (r->listen_fd >= 0)
		close(r->listen_fd);
	if (r->wake > 0)
		close(r->wake);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	free(r->q);
	free(r->in);
	free(r);
}
