// SPDX-License-Identifier: MIT
/*
 * Stock iperf3 clients against `linerate serve` (issue 6): the iperf3
 * server's listener thread (ip3srv_run), on the listener both servers
 * share: new connections until their cookie is whole, then a new test
 * (ip3_test.c) or a data stream of a waiting one; UDP streams. Facts of
 * the protocol are in ip3.h; the data streams run on the bench engine.
 */
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

#include "udp.h"
#include "server_int.h"
#include "banned.h"

void ip3s__emit(struct ip3srv *srv, struct server_event *ev)
{
	ev->iperf3 = true;
	if (srv->cb.event)
		srv->cb.event(srv->cb.ctx, ev);
}

void ip3s__emit_reject(struct ip3srv *srv, const char *peer, const char *reason)
{
	struct server_event ev = { .kind = SERVER_EV_CONN_REJECTED,
				   .reason = reason };

	snprintf(ev.peer, sizeof(ev.peer), "%s", peer);
	ip3s__emit(srv, &ev);
}

static void peer_of(const struct sockaddr_storage *ss, char *buf, size_t cap,
		    uint16_t *port, uint8_t host[16])
{
	net_addr_host((const struct sockaddr *)ss, buf, cap, port);
	net_addr_host_key(ss, host);
}

static struct ip3_pending *pending_at(struct ip3srv *srv, unsigned i)
{
	return (struct ip3_pending *)lsn_at(&srv->lsn, i);
}

/* The listener's view of the iperf3 server's pending connections: the
 * log names them by address, without the port. */
static void on_rejected(void *ctx, const char *peer, const char *reason)
{
	ip3s__emit_reject(ctx, peer, reason);
}

static void on_opened(void *ctx, struct lsn_slot *s,
		      const struct sockaddr_storage *ss)
{
	struct ip3_pending *pd = (struct ip3_pending *)s;

	(void)ctx;
	net_addr_host((const struct sockaddr *)ss, pd->s.peer,
		      sizeof(pd->s.peer), &pd->port);
}

static const struct lsn_ops pending_ops = {
	.rejected = on_rejected,
	.opened = on_opened,
};

static struct ip3_test *find_test(struct ip3srv *srv, const uint8_t *cookie)
{
	struct ip3_test *t;

	for (t = srv->tests; t; t = t->next)
		if (!atomic_load(&t->finished) &&
		    !memcmp(t->cookie, cookie, IP3_COOKIE_LEN))
			return t;
	return NULL;
}

/* Tests waiting for their parameters from host (all hosts: NULL). Under
 * srv->lock. */
static unsigned setup_count(struct ip3srv *srv, const uint8_t *host)
{
	struct ip3_test *t;
	unsigned n = 0;

	for (t = srv->tests; t; t = t->next)
		if (t->setup && !t->evicted &&
		    (!host || !memcmp(t->host, host, 16)))
			n++;
	return n;
}

/*
 * Room for one more test waiting for its parameters from host: when that
 * host has IP3SRV_SETUP_PER_HOST of them, or all hosts IP3SRV_MAX_SETUP,
 * the oldest of that host (or of the host with the most) gives up its
 * place: its control connection is shut, its thread ends. Under
 * srv->lock.
 */
static void setup_make_room(struct ip3srv *srv, const uint8_t *host)
{
	struct ip3_test *t, *victim = NULL;
	unsigned n, most = 0;

	if (setup_count(srv, host) < IP3SRV_SETUP_PER_HOST) {
		if (setup_count(srv, NULL) < IP3SRV_MAX_SETUP)
			return;
		for (t = srv->tests; t; t = t->next) {
			if (!t->setup || t->evicted)
				continue;
			n = setup_count(srv, t->host);
			if (n > most) {
				most = n;
				host = t->host;
			}
		}
	}
	for (t = srv->tests; t; t = t->next)
		if (t->setup && !t->evicted && !memcmp(t->host, host, 16) &&
		    (!victim || t->no < victim->no))
			victim = t;
	if (!victim)
		return;
	victim->evicted = true;
	if (victim->ctrl >= 0)
		shutdown(victim->ctrl, SHUT_RDWR);
}

/* Start a test on a control connection; takes fd. Under srv->lock. */
static const char *start_test(struct ip3srv *srv, struct ip3_pending *pd)
{
	struct ip3_test *t;
	uint8_t denied = (uint8_t)IP3_ACCESS_DENIED;

	if (srv->active >= srv->o.max_tests) {
		if (send(pd->s.fd, &denied, 1, MSG_DONTWAIT | MSG_NOSIGNAL) <
		    0) {
			/* it is told by the close, too */
		}
		return "busy: the limit of iperf3 tests at once is reached "
		       "(--max-tests); answered ACCESS_DENIED";
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return "out of memory";
	t->srv = srv;
	t->ctrl = pd->s.fd;
	t->no = ++srv->next_no;
	memcpy(t->cookie, pd->buf, IP3_COOKIE_LEN);
	snprintf(t->peer, sizeof(t->peer), "%s", pd->s.peer);
	t->peer_port = pd->port;
	memcpy(t->host, pd->s.host, 16);
	t->run.evfd = -1;
	t->run.memfd = -1;
	t->setup = true;
	pthread_cond_init(&t->attach_cv, NULL);
	if (pthread_create(&t->thread, NULL, ip3s__test_main, t)) {
		pthread_cond_destroy(&t->attach_cv);
		free(t);
		return "cannot start a thread for the test";
	}
	setup_make_room(srv, pd->s.host);
	t->next = srv->tests;
	srv->tests = t;
	pd->s.fd = -1; /* the test owns it */
	return NULL;
}

static int set_blocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))
		return -errno;
	return 0;
}

/* A complete cookie: a new test, or a data stream of a waiting one. */
static void pending_dispatch(struct ip3srv *srv, struct ip3_pending *pd)
{
	char why[160];
	const char *reason = NULL;
	struct ip3_test *t;

	if (!ip3_cookie_valid(pd->buf)) {
		ip3s__emit_reject(srv, pd->s.peer, "not an iperf3 cookie");
		return;
	}
	pthread_mutex_lock(&srv->lock);
	t = find_test(srv, pd->buf);
	if (!t) {
		reason = start_test(srv, pd);
	} else if (!t->waiting || t->udp || t->attached >= t->expected) {
		snprintf(why, sizeof(why),
			 "a connection with the cookie of iperf3 test %u, "
			 "which expects no more",
			 t->no);
		reason = why;
	} else if (memcmp(t->host, pd->s.host, 16)) {
		snprintf(why, sizeof(why),
			 "a data stream for iperf3 test %u from another host",
			 t->no);
		reason = why;
	} else if (set_blocking(pd->s.fd)) {
		reason = "fcntl failed";
	} else {
		t->run.streams[t->attached++].fd = pd->s.fd;
		pd->s.fd = -1;
		pthread_cond_broadcast(&t->attach_cv);
	}
	pthread_mutex_unlock(&srv->lock);
	if (reason)
		ip3s__emit_reject(srv, pd->s.peer, reason);
}

/* Read what the pending connection i has; false when it failed (and was
 * removed). */
static bool pending_read(struct ip3srv *srv, unsigned i)
{
	struct ip3_pending *pd = pending_at(srv, i);
	ssize_t n;

	if (pd->have == IP3_COOKIE_LEN)
		return true;
	n = recv(pd->s.fd, pd->buf + pd->have, IP3_COOKIE_LEN - pd->have,
		 MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0) {
		lsn_drop(&srv->lsn, i,
			 n == 0 ? "closed before sending a whole cookie"
				: "read error before the cookie");
		return false;
	}
	pd->have += (size_t)n;
	/* a whole cookie waits for its test, not for its peer */
	pd->s.ready = pd->have == IP3_COOKIE_LEN;
	return true;
}

/*
 * Whether the complete cookie of pending entry i waits: iperf3 (which
 * reads each cookie before the next accept) numbers a test's data
 * streams in the order they connected, so a data stream waits while an
 * earlier connection from its host that could be one of the same test's
 * streams is still incomplete: accepted after the test began waiting
 * for streams, with what it sent so far matching the cookie. That wait
 * is bounded by the earlier one's deadline.
 */
static bool pending_held(struct ip3srv *srv, unsigned i)
{
	const struct ip3_pending *pd = pending_at(srv, i), *o;
	struct ip3_test *t;
	uint64_t since = 0;
	bool stream;
	unsigned j;

	pthread_mutex_lock(&srv->lock);
	t = find_test(srv, pd->buf);
	stream = t && t->waiting && !t->udp;
	if (stream)
		since = t->wait_seq;
	pthread_mutex_unlock(&srv->lock);
	if (!stream)
		return false;
	for (j = 0; j < i; j++) {
		o = pending_at(srv, j);
		if (o->have < IP3_COOKIE_LEN && o->s.seq > since &&
		    !memcmp(o->s.host, pd->s.host, 16) &&
		    !memcmp(o->buf, pd->buf, o->have))
			return true;
	}
	return false;
}

/* Hand over complete cookies that need not wait (pending_held). */
static void pending_dispatch_ready(struct ip3srv *srv)
{
	unsigned i = 0;

	while (i < srv->lsn.n) {
		struct ip3_pending *pd = pending_at(srv, i);

		if (pd->have < IP3_COOKIE_LEN || pending_held(srv, i)) {
			i++;
			continue;
		}
		pending_dispatch(srv, pd);
		lsn_drop(&srv->lsn, i, NULL);
	}
}

/* A datagram on the unconnected UDP socket: a new UDP stream, or noise.
 * False when there was none to read. */
static bool udp_datagram(struct ip3srv *srv)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct net_addr peer;
	struct lr_err e = { 0 };
	char peer_s[NET_ADDRSTR];
	uint8_t b[64], host[16];
	uint32_t v, reply;
	struct ip3_test *t;
	uint16_t port;
	bool native;
	ssize_t n;
	int fd;

	n = recvfrom(srv->ufd, b, sizeof(b), MSG_DONTWAIT,
		     (struct sockaddr *)&ss, &sl);
	if (n < 0)
		return false;
	if (n != 4)
		return true; /* late data of a finished stream, or noise */
	memcpy(&v, b, 4);
	/* iperf3 writes the value in its host's byte order */
	native = v == UDP_CONNECT_MSG;
	if (!native && v != __builtin_bswap32(UDP_CONNECT_MSG))
		return true;
	peer_of(&ss, peer_s, sizeof(peer_s), &port, host);
	pthread_mutex_lock(&srv->lock);
	for (t = srv->tests; t; t = t->next)
		if (t->waiting && t->udp && t->attached < t->expected &&
		    !memcmp(t->host, host, 16))
			break;
	pthread_mutex_unlock(&srv->lock);
	if (!t) {
		ip3s__emit_reject(
			srv, peer_s,
			"UDP stream without an iperf3 test waiting for "
			"it from that host");
		return true;
	}
	memset(&peer, 0, sizeof(peer));
	memcpy(&peer.ss, &ss, sl);
	peer.len = sl;
	fd = net_udp_socket(&srv->addr, &peer, &e);
	if (fd < 0) {
		ip3s__emit_reject(srv, peer_s, e.msg);
		return true;
	}
	reply = native ? UDP_CONNECT_REPLY
		       : __builtin_bswap32(UDP_CONNECT_REPLY);
	if (send(fd, &reply, 4, 0) != 4) {
		close(fd);
		ip3s__emit_reject(srv, peer_s, "cannot answer the UDP stream");
		return true;
	}
	pthread_mutex_lock(&srv->lock);
	/* t cannot be freed meanwhile: only this thread reaps tests */
	if (t->waiting && t->attached < t->expected) {
		t->run.streams[t->attached++].fd = fd;
		fd = -1;
		pthread_cond_broadcast(&t->attach_cv);
	}
	pthread_mutex_unlock(&srv->lock);
	if (fd >= 0)
		close(fd);
	return true;
}

static void reap(struct ip3srv *srv, bool all)
{
	struct ip3_test **pp = &srv->tests, *t;

	for (;;) {
		pthread_mutex_lock(&srv->lock);
		while (*pp && !(all || atomic_load(&(*pp)->finished)))
			pp = &(*pp)->next;
		t = *pp;
		if (t)
			*pp = t->next;
		pthread_mutex_unlock(&srv->lock);
		if (!t)
			return;
		pthread_join(t->thread, NULL);
		pthread_cond_destroy(&t->attach_cv);
		free(t);
	}
}

int ip3srv_new(const struct ip3srv_opts *o, const struct ip3srv_callbacks *cb,
	       struct ip3srv **out, struct lr_err *err)
{
	struct lsn_limits limits = { .max = IP3SRV_MAX_PENDING,
				     .per_host = IP3SRV_PENDING_PER_HOST };
	struct ip3srv *srv;
	int r;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return lr_err_setc(err, -ENOMEM, "iperf3 server");
	srv->o = *o;
	if (cb)
		srv->cb = *cb;
	if (!srv->o.max_tests)
		srv->o.max_tests = 1;
	if (srv->o.handshake_ms <= 0)
		srv->o.handshake_ms = 5000;
	srv->lfd = srv->ufd = srv->evfd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	r = net_resolve(o->bind_addr, o->port, o->family, true, &srv->addr,
			err);
	if (r)
		goto out_free;
	r = net_listen(&srv->addr, 128, err);
	if (r < 0)
		goto out_free;
	srv->lfd = r;
	if (fcntl(r, F_SETFL, O_NONBLOCK)) {
		r = lr_err_setc(err, -errno, "iperf3 listener");
		goto out_close;
	}
	/* port 0: the UDP socket takes the port TCP got */
	net_addr_set_port(&srv->addr, net_local_port(srv->lfd));
	r = net_udp_socket(&srv->addr, NULL, err);
	if (r < 0)
		goto out_close;
	srv->ufd = r;
	if (fcntl(r, F_SETFL, O_NONBLOCK)) {
		r = lr_err_setc(err, -errno, "iperf3 UDP socket");
		goto out_close;
	}
	srv->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv->evfd < 0) {
		r = lr_err_setc(err, -errno, "eventfd");
		goto out_close;
	}
	/* iperf3 sends its cookie right after connecting */
	limits.wait_ms = srv->o.handshake_ms < IP3SRV_COOKIE_MS
				 ? srv->o.handshake_ms
				 : IP3SRV_COOKIE_MS;
	r = lsn_init(&srv->lsn, srv->lfd, sizeof(struct ip3_pending), &limits,
		     &pending_ops, srv);
	if (r) {
		close(srv->evfd);
		r = lr_err_setc(err, r, "the table of new connections");
		goto out_close;
	}
	*out = srv;
	return 0;

out_close:
	if (srv->ufd >= 0)
		close(srv->ufd);
	close(srv->lfd);
out_free:
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return r;
}

uint16_t ip3srv_port(const struct ip3srv *srv)
{
	return net_local_port(srv->lfd);
}

void ip3srv_stop(struct ip3srv *srv)
{
	atomic_store(&srv->stopping, true);
	server__wake(srv->evfd);
}

/* One turn of the loop: poll, then reap, read, expire, accept, hand
 * cookies over, take UDP streams. */
static int serve_turn(struct ip3srv *srv, struct pollfd *pf, struct lr_err *err)
{
	int64_t now = net_now_ms(), timeout = 1000;
	unsigned i, n;
	uint64_t v;

	pf[0] = (struct pollfd){ .fd = srv->ufd, .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = srv->evfd, .events = POLLIN };
	/* pf[2]: the listener, pf[3 + i]: entry i; a held cookie is
	 * complete: what else it has, or its close, waits for its test; it
	 * goes when the earlier connection that holds it completes or
	 * expires */
	n = 3 + lsn_poll_fill(&srv->lsn, pf + 2, now, &timeout);
	if (poll(pf, n, (int)timeout) < 0) {
		if (errno == EINTR)
			return 0;
		return lr_err_setc(err, -errno, "poll");
	}
	if (pf[1].revents) {
		if (read(srv->evfd, &v, sizeof(v)) < 0) {
			/* drained */
		}
		reap(srv, false);
	}
	/* entries move down when one is dropped: walk down */
	for (i = n - 3; i-- > 0;)
		if (i < srv->lsn.n && pf[3 + i].revents)
			pending_read(srv, i);
	now = net_now_ms();
	for (i = srv->lsn.n; i-- > 0;)
		if (lsn_expired(&srv->lsn, i, now))
			lsn_drop(&srv->lsn, i, "no iperf3 cookie in time");
	if (pf[2].revents)
		lsn_accept(&srv->lsn);
	pending_dispatch_ready(srv);
	if (pf[0].revents)
		for (i = 0; i < 64 && udp_datagram(srv); i++) {
		}
	return 0;
}

int ip3srv_run(struct ip3srv *srv, struct lr_err *err)
{
	struct pollfd pf[3 + IP3SRV_MAX_PENDING];
	struct server_event ev = { .kind = SERVER_EV_LISTENING };
	struct ip3_test *t;
	int r = 0;

	ev.port = ip3srv_port(srv);
	snprintf(ev.peer, sizeof(ev.peer), "%s",
		 srv->o.bind_addr ? srv->o.bind_addr : "*");
	ip3s__emit(srv, &ev);
	while (!r && !atomic_load(&srv->stopping))
		r = serve_turn(srv, pf, err);
	/* abort running tests: wake their control reads */
	pthread_mutex_lock(&srv->lock);
	for (t = srv->tests; t; t = t->next)
		if (t->ctrl >= 0)
			shutdown(t->ctrl, SHUT_RDWR);
	pthread_mutex_unlock(&srv->lock);
	reap(srv, true);
	while (srv->lsn.n)
		lsn_drop(&srv->lsn, srv->lsn.n - 1, NULL);
	return r;
}

void ip3srv_free(struct ip3srv *srv)
{
	if (!srv)
		return;
	atomic_store(&srv->stopping, true);
	reap(srv, true);
	lsn_fini(&srv->lsn);
	if (srv->lfd >= 0)
		close(srv->lfd);
	if (srv->ufd >= 0)
		close(srv->ufd);
	if (srv->evfd >= 0)
		close(srv->evfd);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}
