// SPDX-License-Identifier: MIT
/* linerate's server: make it, run its poll loop, stop, reap, free. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crypto.h"
#include "xfer.h"
#include "token.h"
#include "server_int.h"
#include "banned.h"

void server__emit(struct server *srv, struct server_event *ev)
{
	if (srv->cb.event)
		srv->cb.event(srv->cb.ctx, ev);
}

void server__emit_reject(struct server *srv, const char *peer,
			 const char *reason)
{
	struct server_event ev = { .kind = SERVER_EV_CONN_REJECTED,
				   .reason = reason };

	snprintf(ev.peer, sizeof(ev.peer), "%s", peer);
	server__emit(srv, &ev);
}

void server__wake(int evfd)
{
	uint64_t one = 1;

	if (write(evfd, &one, sizeof(one)) < 0) {
		/* counter full is impossible; ignore */
	}
}

/* The listener's view of linerate's pending connections. */
static void on_rejected(void *ctx, const char *peer, const char *reason)
{
	server__emit_reject(ctx, peer, reason);
}

static void on_closing(void *ctx, struct lsn_slot *s)
{
	(void)ctx;
	conn_fini(&((struct pending *)s)->conn);
}

static void on_opened(void *ctx, struct lsn_slot *s,
		      const struct sockaddr_storage *ss)
{
	(void)ctx;
	(void)ss;
	conn_init_plain(&((struct pending *)s)->conn, s->fd);
}

static const struct lsn_ops pending_ops = {
	.rejected = on_rejected,
	.closing = on_closing,
	.opened = on_opened,
};

/* The UDP socket of UDP tests, on the TCP port's number. Without it (the
 * port is taken) the server still serves TCP and refuses UDP tests. */
static void open_udp_port(struct server *srv, const struct net_addr *addr)
{
	struct lr_err e = { 0 };
	uint16_t port = net_local_port(srv->lfd);
	int fd;

	srv->uaddr = *addr;
	net_addr_set_port(&srv->uaddr, port);
	fd = net_udp_socket(&srv->uaddr, NULL, &e);
	if (fd < 0)
		return;
	if (fcntl(fd, F_SETFL, O_NONBLOCK)) {
		close(fd);
		return;
	}
	srv->ufd = fd;
}

void server_opts_init(struct server_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->port = LR_DEFAULT_PORT;
	o->family = AF_UNSPEC;
	o->max_tests = SERVER_DEFAULT_MAX_TESTS;
	o->max_duration_ms = SERVER_DEFAULT_MAX_DURATION_MS;
	o->handshake_ms = SERVER_DEFAULT_HANDSHAKE_MS;
	o->rootfd = -1;
	o->outfd = -1;
}

int server_new(const struct server_opts *o, const struct server_callbacks *cb,
	       struct server **out, struct lr_err *err)
{
	/* the busiest host gives way when the table is full; no bound of
	 * its own per host (a bench of -P 128 opens 129 connections at once) */
	const struct lsn_limits limits = { .max = SERVER_MAX_PENDING,
					   .per_host = SERVER_MAX_PENDING,
					   .wait_ms = o->handshake_ms };
	struct net_addr addr;
	struct server *srv;
	int r;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return lr_err_setc(err, -ENOMEM, "server");
	srv->o = *o;
	srv->cb = *cb;
	srv->lfd = srv->evfd = srv->ufd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	r = net_resolve(o->bind_addr, o->port, o->family, true, &addr, err);
	if (r)
		goto out_free;
	r = net_listen(&addr, 512, err);
	if (r < 0)
		goto out_free;
	srv->lfd = r;
	if (fcntl(r, F_SETFL, O_NONBLOCK)) {
		r = lr_err_setc(err, -errno, "listener");
		goto out_close;
	}
	srv->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv->evfd < 0) {
		r = lr_err_setc(err, -errno, "eventfd");
		goto out_close;
	}
	r = lsn_init(&srv->lsn, srv->lfd, sizeof(struct pending), &limits,
		     &pending_ops, srv);
	if (r) {
		close(srv->evfd);
		r = lr_err_setc(err, r, "the table of new connections");
		goto out_close;
	}
	open_udp_port(srv, &addr);
	*out = srv;
	return 0;

out_close:
	close(srv->lfd);
out_free:
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return r;
}

uint16_t server_port(const struct server *srv)
{
	return net_local_port(srv->lfd);
}

void server_stop(struct server *srv)
{
	atomic_store(&srv->stopping, true);
	server__wake(srv->evfd);
}

/* Join and free tests whose threads have ended. */
static void reap(struct server *srv, bool all)
{
	struct server_test **pp = &srv->tests, *t;

	for (;;) {
		pthread_mutex_lock(&srv->lock);
		t = *pp;
		if (t && !all && !atomic_load(&t->finished)) {
			pp = &t->next;
			pthread_mutex_unlock(&srv->lock);
			continue;
		}
		if (t)
			*pp = t->next;
		pthread_mutex_unlock(&srv->lock);
		if (!t)
			return;
		pthread_join(t->thread, NULL);
		if (srv->o.once)
			srv->once_result = t->result ? -1 : 0;
		pthread_cond_destroy(&t->attach_cv);
		free(t);
	}
}

/* With once: the one test has run and ended. active and started change
 * under the lock on the tests' threads. */
static bool once_done(struct server *srv)
{
	bool done;

	if (!srv->o.once)
		return false;
	pthread_mutex_lock(&srv->lock);
	done = srv->started && !srv->active;
	pthread_mutex_unlock(&srv->lock);
	return done;
}

/* A sweep of partial files: told when it removed or failed anything. */
static void on_sweep(void *ctx, const struct xfer_sweep *res, const char *error)
{
	struct server *srv = ctx;
	struct server_event ev = { .kind = SERVER_EV_PARTIALS,
				   .reason = error,
				   .partial = srv->o.partial };

	if (res && !res->removed && !res->failed)
		return;
	if (res)
		ev.sweep = *res;
	snprintf(ev.peer, sizeof(ev.peer), "-");
	server__emit(srv, &ev);
}

/* The sweeper of partial files, when there is something to apply. */
static struct xfer_sweeper *sweeper_start(struct server *srv)
{
	const struct server_opts *o = &srv->o;
	struct xfer_sweeper *sw = NULL;

	if (o->rootfd < 0 || o->read_only || o->root_sub || o->push_only ||
	    (!o->partial.max_age_s && !o->partial.max_bytes))
		return NULL;
	if (xfer_sweeper_start(o->rootfd, &o->partial, o->partial_sweep_ms,
			       on_sweep, srv, &sw))
		on_sweep(srv, NULL, "cannot start the sweep of partial files");
	return sw;
}

/* The deadlines of entries not identified in time. */
static void expire_pending(struct server *srv, int64_t now)
{
	char msg[96];
	unsigned i;

	for (i = srv->lsn.n; i-- > 0;) {
		if (!lsn_expired(&srv->lsn, i, now))
			continue;
		snprintf(msg, sizeof(msg),
			 "sent %zu bytes in %.1f s without identifying itself",
			 ((struct pending *)lsn_at(&srv->lsn, i))->have,
			 srv->o.handshake_ms / 1000.0);
		server__reject(srv, i, 0, msg);
	}
}

/* One turn of the loop: poll, then reap, read, expire, accept. */
static int serve_turn(struct server *srv, struct pollfd *pf, struct lr_err *err)
{
	int64_t now = net_now_ms(), timeout = 1000;
	unsigned i, n;
	uint64_t v;

	pf[0] = (struct pollfd){ .fd = srv->evfd, .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = srv->ufd, .events = POLLIN };
	/* pf[2]: the listener, pf[3 + i]: entry i */
	n = 3 + lsn_poll_fill(&srv->lsn, pf + 2, now, &timeout);
	if (poll(pf, n, (int)timeout) < 0 && errno != EINTR)
		return lr_err_setc(err, -errno, "poll");
	if (pf[0].revents && read(srv->evfd, &v, sizeof(v)) > 0)
		reap(srv, false);
	/* entries, walked backwards: a removal moves the later ones down,
	 * and those have been seen already */
	for (i = n - 3; i-- > 0;)
		if (i < srv->lsn.n && pf[3 + i].revents)
			server__pending_read(srv, i);
	expire_pending(srv, net_now_ms());
	if (pf[2].revents)
		lsn_accept(&srv->lsn);
	if (pf[1].revents)
		server__udp_read_some(srv);
	return 0;
}

int server_run(struct server *srv, struct lr_err *err)
{
	struct xfer_sweeper *sweeper;
	struct pollfd *pf;
	struct server_event ev = { .kind = SERVER_EV_LISTENING };
	int r = 0;

	pf = calloc(SERVER_MAX_PENDING + 3, sizeof(*pf));
	if (!pf)
		return lr_err_setc(err, -ENOMEM, "poll table");
	ev.port = server_port(srv);
	snprintf(ev.peer, sizeof(ev.peer), "%s",
		 srv->o.bind_addr ? srv->o.bind_addr : "*");
	/* OpenSSL's first-use costs, not in the first client's time */
	crypto_warm();
	server__emit(srv, &ev);
	sweeper = sweeper_start(srv);
	while (!r && !atomic_load(&srv->stopping) && !once_done(srv))
		r = serve_turn(srv, pf, err);
	free(pf);
	xfer_sweeper_stop(sweeper);
	if (r)
		return r;
	return srv->o.once ? srv->once_result : 0;
}

void server_free(struct server *srv)
{
	struct server_test *t;

	if (!srv)
		return;
	atomic_store(&srv->stopping, true);
	pthread_mutex_lock(&srv->lock);
	for (t = srv->tests; t; t = t->next) {
		pthread_cond_signal(&t->attach_cv);
		/* wake a reader; writing stays open for the ERROR */
		if (t->ctrl >= 0)
			shutdown(t->ctrl, SHUT_RD);
	}
	pthread_mutex_unlock(&srv->lock);
	reap(srv, true);
	lsn_fini(&srv->lsn);
	close(srv->lfd);
	if (srv->ufd >= 0)
		close(srv->ufd);
	close(srv->evfd);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}
