// SPDX-License-Identifier: MIT
/*
 * One side of a transfer session: its set-up and end, the control
 * connection (sending, the turn that waits for the peer or a stream
 * thread, errors both ways), the stream threads, and the bottleneck read
 * from both sides' waits.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "link.h"
#include "net.h"
#include "xfer_int.h"
#include "banned.h"

#ifndef NDEBUG
_Thread_local unsigned xfer__locks_held;
#endif

static void init_locks(struct xsess *x)
{
	pthread_condattr_t ca;
	unsigned i;

	pthread_mutex_init(&x->lock, NULL);
	pthread_mutex_init(&x->tx.pipe_lock, NULL);
	for (i = 0; i < WLOCKS; i++)
		pthread_mutex_init(&x->rx.wlock[i], NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&x->cv, &ca);
	pthread_cond_init(&x->rx.out_cv, &ca);
	pthread_condattr_destroy(&ca);
}

int xfer__sess_init(struct xsess *x, struct xfer_conns *cs,
		    const struct xfer_opts *o, const struct xfer_callbacks *cb,
		    struct xfer_result *res, bool sender)
{
	int one = 1;
	unsigned i;

	/* x comes zeroed from calloc: what the window does not use stays
	 * untouched */
	x->cs = cs;
	x->o = o;
	x->cb = cb;
	x->res = res;
	x->sender = sender;
	x->chunk = o->chunk_size ? o->chunk_size : XFER_DEFAULT_CHUNK;
	x->wn = o->files_window ? o->files_window : XFER_WINDOW;
	if (x->wn < XFER_WINDOW || x->wn > XFER_WINDOW_MAX)
		return -EINVAL;
	x->rx.destfd = x->rx.outfd = -1;
	for (i = 0; i < x->wn; i++)
		x->win[i].fd = x->win[i].rx.dirfd = x->win[i].rx.jfd = -1;
	for (i = 0; i < DIRH_MAX; i++)
		x->rx.dirh[i].fd = -1;
	x->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (x->evfd < 0)
		return -errno;
	if (xfer__owner_init(x)) {
		close(x->evfd);
		return -ENOMEM;
	}
	init_locks(x);
	x->t0_us = net_now_us();
	x->ctrl_sent_ms = net_now_ms();
	atomic_store(&x->last_activity_ms, x->ctrl_sent_ms);
	/* plans and acknowledgements are small and must not wait for the
	 * peer's delayed ACK (Nagle) */
	setsockopt(cs->ctrl->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(res, 0, sizeof(*res));
	res->is_sender = sender;
	res->rate_limit = x->o->rate;
	res->streams = cs->n;
	res->chunk_size = x->chunk;
	res->authenticated = cs->ctrl->secure;
	res->cipher = cs->ctrl->cipher;
	return 0;
}

void xfer__sess_fini(struct xsess *x)
{
	unsigned i;

	xfer__window_fini(x);
	xfer__evq_free(x);
	xfer__links_free(x);
	xfer__owner_fini(x);
	xfer__xattr_fini(x);
	free(x->tx.retries);
	free(x->rx.acks);
	free(x->rx.svc_buf);
	close(x->evfd);
	pthread_mutex_destroy(&x->lock);
	pthread_mutex_destroy(&x->tx.pipe_lock);
	for (i = 0; i < WLOCKS; i++)
		pthread_mutex_destroy(&x->rx.wlock[i]);
	pthread_cond_destroy(&x->cv);
	pthread_cond_destroy(&x->rx.out_cv);
}

void xfer__wake(struct xsess *x)
{
	uint64_t v = 1;

	if (atomic_exchange(&x->wake_pending, true))
		return; /* the control thread has not looked yet */
	if (write(x->evfd, &v, sizeof(v)) < 0) {
		/* the counter is full: the control thread is awake anyway */
	}
}

/* The first fatal error recorded (later ones dropped) and everyone
 * stopped; under x->lock, which it releases. */
static void fatal_locked(struct xsess *x, int code, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

static void fatal_locked(struct xsess *x, int code, const char *fmt, va_list ap)
{
	if (!x->error) {
		x->error = code ? code : -EIO;
		x->err.code = x->error;
		vsnprintf(x->err.msg, sizeof(x->err.msg), fmt, ap);
	}
	atomic_store(&x->abort, true);
	pthread_cond_broadcast(&x->cv);
	pthread_cond_broadcast(&x->rx.out_cv);
	xfer__unlock(&x->lock);
	xfer__wake(x);
}

void xfer__fatal(struct xsess *x, int code, const char *fmt, ...)
{
	va_list ap;

	xfer__lock(&x->lock);
	va_start(ap, fmt);
	fatal_locked(x, code, fmt, ap);
	va_end(ap);
}

/* How long a cut stream waits for the peer's word on the control
 * connection. */
#define CUT_GRACE_MS 500

void xfer__fatal_cut(struct xsess *x, int code, const char *fmt, ...)
{
	struct timespec until;
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += (long)CUT_GRACE_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	xfer__lock(&x->lock);
	while (!x->error && !atomic_load(&x->abort) &&
	       pthread_cond_timedwait(&x->cv, &x->lock, &until) == 0)
		;
	va_start(ap, fmt);
	fatal_locked(x, code, fmt, ap);
	va_end(ap);
}

int xfer__ctrl_send(struct xsess *x, struct proto_buf *b)
{
	int r;

	if (b->err)
		return b->err;
	if (!b->len)
		return 0;
	r = conn_send_msg(x->cs->ctrl, b->p, b->len,
			  net_now_ms() + CTRL_TIMEOUT_MS);
	b->len = 0;
	b->start = 0;
	x->ctrl_sent_ms = net_now_ms();
	return r;
}

void xfer__alive(struct xsess *x)
{
	uint8_t buf[PROTO_HDR_LEN];
	struct proto_buf b;

	if (!x->cs->ctrl->secure || net_now_ms() - x->ctrl_sent_ms < ALIVE_MS)
		return;
	proto_buf_init(&b, buf, sizeof(buf));
	if (proto_encode_empty(&b, PROTO_XFER_ALIVE) ||
	    xfer__ctrl_send(x, &b)) {
		/* the next read says what became of the peer */
	}
}

/* Milliseconds until the next heartbeat is due, at most tmo. */
static int64_t alive_due(const struct xsess *x, int64_t tmo)
{
	int64_t due = x->ctrl_sent_ms + ALIVE_MS - net_now_ms();

	if (!x->cs->ctrl->secure || due > tmo)
		return tmo;
	return due > 0 ? due : 0;
}

/* The bounds of a linger: what one read takes, and how many. */
#define LINGER_BUF   512
#define LINGER_READS 4096

void xfer__ctrl_linger(struct xsess *x)
{
	struct pollfd pf = { .fd = x->cs->ctrl->fd, .events = POLLIN };
	int64_t end = net_now_ms() + LINGER_MS, left;
	uint8_t buf[LINGER_BUF];
	unsigned n;
	ssize_t k;

	if (shutdown(pf.fd, SHUT_WR))
		return; /* gone already */
	for (n = 0; n < LINGER_READS; n++) {
		left = end - net_now_ms();
		if (left <= 0 || (x->o->cancel && atomic_load(x->o->cancel)))
			return;
		/* wake now and then to see the cancel flag */
		if (poll(&pf, 1, left < 100 ? (int)left : 100) <= 0)
			continue;
		k = recv(pf.fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
			return; /* its end, or a reset */
	}
}

int xfer__ctrl_send_raw(struct conn *c, struct proto_buf *b)
{
	if (b->err)
		return b->err;
	return conn_send_msg(c, b->p, b->len, net_now_ms() + CTRL_TIMEOUT_MS);
}

int xfer__msg_next(struct xsess *x, struct proto_buf *b, uint8_t type)
{
	int r = proto_msg_end(b) ?: xfer__ctrl_send(x, b);

	if (!r)
		proto_msg_begin(b, type);
	return r;
}

int xfer__batch_room(struct xsess *x, struct proto_buf *b, size_t n,
		     uint8_t type)
{
	return proto_xfer_batch_room(b, n) ? 0 : xfer__msg_next(x, b, type);
}

int xfer__send_error(struct xsess *x, uint32_t code, const char *text)
{
	struct proto_error pe = { .code = code };
	uint8_t buf[PROTO_HDR_LEN + PROTO_MAX_TEXT + 32];
	struct proto_buf b;

	snprintf(pe.text, sizeof(pe.text), "%s", text);
	proto_buf_init(&b, buf, sizeof(buf));
	if (proto_encode_error(&b, &pe))
		return -ENOBUFS;
	return conn_send_msg(x->cs->ctrl, buf, b.len, net_now_ms() + 2000);
}

int xfer__peer_error(const uint8_t *body, size_t len, struct lr_err *err)
{
	struct proto_error pe;

	if (proto_decode_error(body, len, &pe))
		return lr_err_set(err, LR_EBADMSG,
				  "peer sent a malformed error message");
	if (pe.code == PROTO_ERR_AUTH)
		return lr_err_set(err, LR_EAUTH, "authentication failed: %s",
				  pe.text);
	if (pe.code == PROTO_ERR_BUSY)
		return lr_err_set(err, LR_EBUSY, "%s", pe.text);
	return lr_err_set(err, LR_EPEER, "peer: %s", pe.text);
}

void xfer__data_sockopts(struct xsess *x)
{
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	unsigned i;
	int one = 1;

	for (i = 0; i < x->cs->n; i++) {
		struct conn *c = &x->cs->data[i];

		setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->abort = &x->abort;
		c->timing = true;
	}
}

/* Descriptors a session holds besides its window's files: data streams,
 * directory handles, the control connection and the rest */
#define SESSION_FDS (XFER_MAX_STREAMS + DIRH_MAX + 32)
#define NOFILE_WANT 65536u /* the soft limit raised toward this */

void xfer__raise_nofile(void)
{
	struct rlimit rl;

	/* the file descriptors of full windows must fit */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max &&
	    rl.rlim_cur < NOFILE_WANT) {
		rl.rlim_cur = rl.rlim_max < NOFILE_WANT ? rl.rlim_max
							: NOFILE_WANT;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

uint32_t xfer_window_fit(unsigned sessions)
{
	struct rlimit rl;
	uint64_t per;

	xfer__raise_nofile();
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return XFER_WINDOW_MAX;
	per = (uint64_t)rl.rlim_cur / (sessions ? sessions : 1);
	/* a file in flight holds a descriptor, two with its journal */
	per = per > SESSION_FDS ? (per - SESSION_FDS) / 2 : 0;
	if (per < XFER_WINDOW)
		return XFER_WINDOW;
	return per > XFER_WINDOW_MAX ? XFER_WINDOW_MAX : (uint32_t)per;
}

void xfer__add_waits(struct xsess *x, const struct conn *c, uint64_t disk_ns,
		     uint64_t hash_ns, int64_t t0)
{
	xfer__lock(&x->lock);
	x->waits.disk_us += disk_ns / 1000;
	x->waits.hash_us += hash_ns / 1000;
	x->waits.cipher_us += c->cipher_ns / 1000;
	x->waits.net_us += c->io_ns / 1000;
	x->waits.wall_us += (uint64_t)(net_now_us() - t0);
	x->waits.streams++;
	xfer__unlock(&x->lock);
}

/* The stream threads woke us: drain the counter first, then allow the
 * next write. Cleared before the read, a wake between the two would be
 * drained with wake_pending left set, and no stream thread would write
 * the counter again for the rest of the session (the loop then ran on
 * its timer alone). */
static void take_wake(struct xsess *x)
{
	uint64_t v;

	x->woken = true;
	if (read(x->evfd, &v, sizeof(v)) < 0) {
		/* drained already */
	}
	atomic_store(&x->wake_pending, false);
}

/* A stream thread failed the session: its error, told to the peer. */
static int aborted(struct xsess *x, struct lr_err *err)
{
	int r;

	xfer__lock(&x->lock);
	*err = x->err;
	r = x->error;
	xfer__unlock(&x->lock);
	xfer__send_error(x, PROTO_ERR_BAD_REQUEST, err->msg);
	return r ? r : -ECANCELED;
}

/* A message read: the peer's heartbeat is taken here (0, and no
 * activity: it must not keep a stalled session alive), anything else
 * counts (1). */
static int took_msg(struct xsess *x, const struct proto_hdr *h,
		    struct lr_err *err)
{
	if (h->type != PROTO_XFER_ALIVE) {
		atomic_store(&x->last_activity_ms, net_now_ms());
		return 1;
	}
	if (!h->len)
		return 0;
	lr_err_set(err, LR_EBADMSG, "malformed XFER_ALIVE (%u bytes)", h->len);
	xfer__send_error(x, PROTO_ERR_BAD_REQUEST, err->msg);
	return LR_EBADMSG;
}

/* peer and me name the two sides in messages. */
int xfer__ctrl_turn(struct xsess *x, int64_t tmo, uint8_t *rbuf,
		    struct proto_hdr *h, const char *peer, const char *me,
		    struct lr_err *err)
{
	struct pollfd pf[2] = {
		{ .fd = x->cs->ctrl->fd, .events = POLLIN },
		{ .fd = x->evfd, .events = POLLIN },
	};
	char text[64];
	int r;

	xfer__alive(x);
	tmo = alive_due(x, tmo);
	if (poll(pf, 2, (int)tmo) < 0 && errno != EINTR)
		return lr_err_setc(err, -errno, "poll");
	if (x->o->cancel && atomic_load(x->o->cancel)) {
		snprintf(text, sizeof(text), "the %s was interrupted", me);
		xfer__send_error(x, PROTO_ERR_INTERNAL, text);
		return lr_err_set(err, -ECANCELED, "interrupted");
	}
	if (pf[1].revents)
		take_wake(x);
	if (atomic_load(&x->abort))
		return aborted(x, err);
	if (!pf[0].revents)
		return 0;
	r = conn_recv_msg(x->cs->ctrl, rbuf, MSG_BUF, h,
			  net_now_ms() + CTRL_TIMEOUT_MS, err);
	if (r == LR_ECLOSED)
		/* a side that fails says why first (ERROR): a close
		 * without a word before the session's end is a cut */
		return lr_err_set(err, r,
				  "the %s closed the connection before the "
				  "session's end (control connection cut "
				  "short)",
				  peer);
	if (r) {
		/* tell the peer why (a forged record) */
		xfer__send_error(x, PROTO_ERR_BAD_REQUEST, err->msg);
		return r;
	}
	return took_msg(x, h, err);
}

int xfer__start_threads(struct xsess *x, struct sthread *ts,
			void *(*fn)(void *))
{
	unsigned i;
	int r;

	for (i = 0; i < x->cs->n; i++) {
		ts[i].x = x;
		ts[i].i = i;
		r = pthread_create(&ts[i].th, NULL, fn, &ts[i]);
		if (r) {
			xfer__fatal(x, -r, "cannot start a stream thread");
			return -r;
		}
		ts[i].started = true;
	}
	return 0;
}

void xfer__join_threads(struct xsess *x, struct sthread *ts)
{
	unsigned i;

	xfer__lock(&x->lock);
	atomic_store(&x->closing, true);
	pthread_cond_broadcast(&x->cv);
	pthread_cond_broadcast(&x->rx.out_cv);
	xfer__unlock(&x->lock);
	for (i = 0; i < x->cs->n; i++)
		if (ts[i].started) {
			pthread_join(ts[i].th, NULL);
			ts[i].started = false;
		}
}

const char *xfer_bottleneck(const struct xfer_result *res, double *share)
{
	const struct xfer_waits *snd = res->is_sender ? &res->local
						      : &res->remote;
	const struct xfer_waits *rcv = res->is_sender ? &res->remote
						      : &res->local;
	double wall = (double)(res->local.wall_us ? res->local.wall_us : 1);
	double src_disk = (double)snd->disk_us, dst_disk = (double)rcv->disk_us;
	double cipher = (double)(snd->cipher_us > rcv->cipher_us
					 ? snd->cipher_us
					 : rcv->cipher_us);
	double best = src_disk;
	const char *name = "source disk";
	double rate = res->seconds > 0 ? (double)res->bytes / res->seconds : 0;

	/* the user's cap, reached: not the network's doing */
	if (res->rate_limit && rate >= 0.85 * (double)res->rate_limit) {
		if (share)
			*share = rate >= (double)res->rate_limit
					 ? 1.0
					 : rate / (double)res->rate_limit;
		return "your --limit";
	}

	if (dst_disk > best) {
		best = dst_disk;
		name = "destination disk";
	}
	if (cipher > best) {
		best = cipher;
		name = "cipher (CPU)";
	}
	if (best < 0.4 * wall) {
		/* nobody was busy most of the time: the wire held them */
		name = "network";
		best = wall - best;
	}
	if (share)
		*share = best / wall;
	return name;
}

double xfer_ceiling_bps(const struct xfer_result *res, uint64_t speed_bps)
{
	uint64_t speed = speed_bps ? speed_bps : res->link_speed_bps;

	if (!speed)
		return 0;
	return link_goodput_bps(speed, res->link_mtu ? res->link_mtu : 1500,
				res->ipv6, true);
}
