// SPDX-License-Identifier: MIT
/*
 * Unit tests of the listener both servers share (src/core/server/
 * listen.c): room for newcomers (per host, then the busiest host), the
 * order of the table, deadlines, the poll table, penalties, and accept on
 * a real listening socket. linerate's server and the iperf3 one differ
 * only in their limits, so these cover both. Then the end of a bench
 * test's sealed streams (src/core/bench/stream.c), which the server's
 * results wait for, and the client's ERROR (control.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "server/server_int.h"

/* A server's entry: the listener's part first, then its own. */
struct entry {
	struct lsn_slot s;
	int tag;
};

struct events {
	unsigned rejected, closing, opened;
	char last_peer[NET_ADDRSTR];
	char last_reason[200];
};

static void on_rejected(void *ctx, const char *peer, const char *reason)
{
	struct events *ev = ctx;

	ev->rejected++;
	snprintf(ev->last_peer, sizeof(ev->last_peer), "%s", peer);
	snprintf(ev->last_reason, sizeof(ev->last_reason), "%s", reason);
}

static void on_closing(void *ctx, struct lsn_slot *s)
{
	(void)s;
	((struct events *)ctx)->closing++;
}

static void on_opened(void *ctx, struct lsn_slot *s,
		      const struct sockaddr_storage *ss)
{
	(void)ss;
	((struct events *)ctx)->opened++;
	((struct entry *)s)->tag = (int)s->seq * 10;
}

static const struct lsn_ops ops = { .rejected = on_rejected,
				    .closing = on_closing,
				    .opened = on_opened };

/* 10.0.0.HOST:port as a sockaddr_storage. */
static struct sockaddr_storage addr_of(unsigned host, uint16_t port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	sin->sin_addr.s_addr = htonl(0x0a000000u | host);
	return ss;
}

/* An fd that lsn may close: one end of a socket pair (the other closed). */
static int some_fd(void)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[1]);
	return sv[0];
}

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static struct lsn_slot *add(struct lsn *l, unsigned host)
{
	struct sockaddr_storage ss = addr_of(host, (uint16_t)(40000 + l->n));

	return lsn_add(l, some_fd(), &ss);
}

static void make(struct lsn *l, struct events *ev, unsigned max,
		 unsigned per_host)
{
	const struct lsn_limits lim = { .max = max,
					.per_host = per_host,
					.wait_ms = 5000 };

	memset(ev, 0, sizeof(*ev));
	assert_int_equal(lsn_init(l, -1, sizeof(struct entry), &lim, &ops, ev),
			 0);
}

static unsigned host_of(const struct lsn *l, unsigned i)
{
	return lsn_at(l, i)->host[15]; /* v4-mapped: the last byte */
}

static void test_per_host_limit_drops_that_hosts_oldest(void **state)
{
	struct lsn l;
	struct events ev;
	struct lsn_slot *first;
	int first_fd;

	(void)state;
	make(&l, &ev, 16, 3);
	first = add(&l, 1);
	first_fd = first->fd;
	add(&l, 2);
	add(&l, 1);
	add(&l, 1);
	assert_int_equal(l.n, 4);
	assert_int_equal(ev.rejected, 0);
	/* a fourth from host 1: its oldest goes, host 2 keeps its own */
	add(&l, 1);
	assert_int_equal(l.n, 4);
	assert_int_equal(ev.rejected, 1);
	assert_int_equal(ev.closing, 1);
	assert_false(fd_open(first_fd));
	assert_string_equal(ev.last_peer, "10.0.0.1:40000");
	assert_non_null(strstr(ev.last_reason, "from this host"));
	assert_int_equal(host_of(&l, 0), 2);
	/* the order of accept is kept */
	for (unsigned i = 1; i < l.n; i++)
		assert_true(lsn_at(&l, i)->seq > lsn_at(&l, i - 1)->seq);
	lsn_fini(&l);
	assert_int_equal(ev.closing, 5);
}

static void test_ready_entries_count_apart_and_go_last(void **state)
{
	struct lsn l;
	struct events ev;
	const char *why = NULL;

	(void)state;
	make(&l, &ev, 16, 2);
	add(&l, 1)->ready = true; /* a whole cookie, say */
	add(&l, 1)->ready = true;
	add(&l, 1);
	/* two ready and one not: host 1 is under its limit */
	assert_int_equal(lsn_victim(&l, lsn_at(&l, 0)->host, &why), -1);
	add(&l, 1);
	assert_int_equal(ev.rejected, 0);
	/* at the limit: the oldest not ready gives way, not a ready one */
	assert_int_equal(lsn_victim(&l, lsn_at(&l, 0)->host, &why), 2);
	lsn_fini(&l);

	/* a full table: the busiest host's oldest not ready goes; a host
	 * whose entries are all ready loses its oldest ready one */
	make(&l, &ev, 4, 4);
	add(&l, 5)->ready = true;
	add(&l, 5)->ready = true;
	add(&l, 5);
	add(&l, 6);
	assert_int_equal(lsn_victim(&l, lsn_at(&l, 3)->host, &why), 2);
	lsn_at(&l, 2)->ready = true;
	assert_int_equal(lsn_victim(&l, lsn_at(&l, 3)->host, &why), 0);
	lsn_fini(&l);
}

/* Of hosts with as many entries, the one whose entry comes first gives
 * way; many hosts at once are counted right. */
static void test_busiest_of_many_hosts(void **state)
{
	struct lsn l;
	struct events ev;
	const char *why = NULL;
	unsigned i;

	(void)state;
	make(&l, &ev, 256, 256);
	for (i = 0; i < 250; i++)
		add(&l, 1 + i % 125); /* 125 hosts, two entries each */
	add(&l, 200);
	add(&l, 201);
	add(&l, 202);
	add(&l, 203);
	add(&l, 204);
	add(&l, 77); /* host 77: three */
	assert_int_equal(l.n, 256);
	assert_int_equal(lsn_victim(&l, lsn_at(&l, 0)->host, &why), 76);
	lsn_drop(&l, 255, NULL);
	add(&l, 9); /* no host over two now but host 9 */
	assert_int_equal(lsn_victim(&l, lsn_at(&l, 0)->host, &why), 8);
	lsn_drop(&l, 255, NULL);
	add(&l, 250);
	/* ties: host 1's first entry comes first */
	assert_int_equal(lsn_victim(&l, lsn_at(&l, 0)->host, &why), 0);
	lsn_fini(&l);
}

static void test_full_table_costs_the_busiest_host(void **state)
{
	struct lsn l;
	struct events ev;
	unsigned i, from1 = 0;

	(void)state;
	make(&l, &ev, 6, 6);
	add(&l, 2);
	for (i = 0; i < 4; i++)
		add(&l, 1);
	add(&l, 3);
	assert_int_equal(l.n, 6);
	/* a newcomer from host 4: host 1 (four entries) loses its oldest,
	 * never the newcomer, never host 2's older entry */
	add(&l, 4);
	assert_int_equal(l.n, 6);
	assert_int_equal(ev.rejected, 1);
	assert_non_null(strstr(ev.last_reason, "too many waiting"));
	assert_string_equal(ev.last_peer, "10.0.0.1:40001");
	assert_int_equal(host_of(&l, 0), 2);
	assert_int_equal(host_of(&l, l.n - 1), 4);
	for (i = 0; i < l.n; i++)
		from1 += host_of(&l, i) == 1;
	assert_int_equal(from1, 3);
	/* the entry's own part came along and the opened hook ran */
	assert_int_equal(ev.opened, 7);
	assert_int_equal(((struct entry *)lsn_at(&l, l.n - 1))->tag, 70);
	lsn_fini(&l);
}

static void test_one_host_floods_alone(void **state)
{
	struct lsn l;
	struct events ev;
	unsigned i, from1 = 0, from2 = 0;

	(void)state;
	make(&l, &ev, 8, 8);
	add(&l, 2);
	add(&l, 2);
	for (i = 0; i < 100; i++)
		add(&l, 1);
	for (i = 0; i < l.n; i++) {
		from1 += host_of(&l, i) == 1;
		from2 += host_of(&l, i) == 2;
	}
	assert_int_equal(l.n, 8);
	assert_int_equal(from2, 2);
	assert_int_equal(from1, 6);
	assert_int_equal(ev.rejected, 94);
	lsn_fini(&l);
}

static void test_drop_hands_over_and_reports(void **state)
{
	struct lsn l;
	struct events ev;
	struct lsn_slot *s;
	int fd;

	(void)state;
	make(&l, &ev, 4, 4);
	s = add(&l, 1);
	add(&l, 2);
	fd = s->fd;
	s->fd = -1; /* handed over: a test took it */
	lsn_drop(&l, 0, NULL);
	assert_true(fd_open(fd));
	close(fd);
	assert_int_equal(ev.rejected, 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(host_of(&l, 0), 2);
	fd = lsn_at(&l, 0)->fd;
	lsn_drop(&l, 0, "why not");
	assert_false(fd_open(fd));
	assert_int_equal(ev.rejected, 1);
	assert_string_equal(ev.last_reason, "why not");
	lsn_fini(&l);
}

static void test_deadlines_and_poll_table(void **state)
{
	struct lsn l;
	struct events ev;
	struct pollfd pf[5];
	int64_t now = net_now_ms(), timeout = 1000;

	(void)state;
	make(&l, &ev, 4, 4);
	l.fd = 99;
	add(&l, 1)->deadline = now + 300;
	add(&l, 2)->ready = true;
	lsn_at(&l, 1)->deadline = now - 1; /* ready: never expires */
	add(&l, 3)->hold_until = now + 200;
	lsn_at(&l, 2)->deadline = now + 700;
	assert_int_equal(lsn_poll_fill(&l, pf, now, &timeout), 3);
	assert_int_equal(pf[0].fd, 99);
	assert_int_equal(pf[1].fd, lsn_at(&l, 0)->fd);
	assert_int_equal(pf[2].fd, -1); /* ready */
	assert_int_equal(pf[3].fd, -1); /* held */
	assert_true(timeout <= 200 && timeout >= 199);
	assert_false(lsn_expired(&l, 0, now));
	assert_true(lsn_expired(&l, 0, now + 300));
	assert_false(lsn_expired(&l, 1, now + 100000));
	/* a paused listener is not polled, and the pause bounds the wait */
	l.paused_until = now + 50;
	timeout = 1000;
	lsn_poll_fill(&l, pf, now, &timeout);
	assert_int_equal(pf[0].fd, -1);
	assert_true(timeout <= 50);
	lsn_fini(&l);
}

static void test_penalties_double_cap_and_fade(void **state)
{
	struct lsn l;
	struct events ev;
	struct sockaddr_storage ss = addr_of(7, 1);
	uint8_t h[16], other[16];
	int64_t now = 1000000;
	unsigned i;

	(void)state;
	make(&l, &ev, 4, 4);
	net_addr_host_key(&ss, h);
	ss = addr_of(8, 1);
	net_addr_host_key(&ss, other);
	assert_int_equal(lsn_held_until(&l, h, now), 0);
	lsn_penalize(&l, h, now);
	assert_int_equal(lsn_held_until(&l, h, now), now + 1000);
	lsn_penalize(&l, h, now);
	assert_int_equal(lsn_held_until(&l, h, now), now + 2000);
	for (i = 0; i < 10; i++)
		lsn_penalize(&l, h, now);
	assert_int_equal(lsn_held_until(&l, h, now), now + LSN_PENALTY_MAX_MS);
	assert_int_equal(lsn_held_until(&l, other, now), 0);
	/* seconds, never a lockout: 1, 2, then 4 s at most, forgotten a
	 * minute after the last failure */
	assert_int_equal(LSN_PENALTY_MAX_MS, 4000);
	assert_int_equal(LSN_PENALTY_FORGET_MS, 60000);
	/* over once the wait is over; forgotten after a quiet minute */
	assert_int_equal(lsn_held_until(&l, h, now + LSN_PENALTY_MAX_MS), 0);
	now += LSN_PENALTY_FORGET_MS + 1;
	lsn_penalize(&l, h, now);
	assert_int_equal(lsn_held_until(&l, h, now), now + 1000);
	/* a connection from a held address is not read until the hold is
	 * over, and has its whole time to identify itself after it */
	lsn_fini(&l);
	make(&l, &ev, 4, 4);
	now = net_now_ms();
	lsn_penalize(&l, h, now);
	lsn_penalize(&l, h, now);
	ss = addr_of(7, 2);
	{
		struct lsn_slot *s = lsn_add(&l, some_fd(), &ss);

		assert_non_null(s);
		assert_int_equal(s->hold_until, now + 2000);
		assert_int_equal(s->deadline, s->hold_until + 5000);
		s = add(&l, 8); /* another address: no hold */
		assert_int_equal(s->hold_until, 0);
	}
	lsn_fini(&l);
}

static void test_penalty_table_keeps_the_recent(void **state)
{
	struct lsn l;
	struct events ev;
	uint8_t h[LSN_PENALTY_SLOTS + 1][16];
	int64_t now = 5000000;
	unsigned i;

	(void)state;
	make(&l, &ev, 4, 4);
	for (i = 0; i <= LSN_PENALTY_SLOTS; i++) {
		struct sockaddr_storage ss = addr_of(100 + i, 1);

		net_addr_host_key(&ss, h[i]);
		lsn_penalize(&l, h[i], now + i);
	}
	/* the least recently penalized made room for the last */
	assert_int_equal(lsn_held_until(&l, h[0], now + 10), 0);
	assert_true(lsn_held_until(&l, h[1], now + 10) > now + 10);
	assert_true(lsn_held_until(&l, h[LSN_PENALTY_SLOTS], now + 10) >
		    now + 10);
	lsn_fini(&l);
}

/* accept on a real listener: every connection is taken, within bounds */
static void test_accept_real_connections(void **state)
{
	struct lsn l;
	struct events ev;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	const struct lsn_limits lim = { .max = 4, .per_host = 3, .wait_ms = 1 };
	int lfd, c[5], i;

	(void)state;
	memset(&ev, 0, sizeof(ev));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(lfd, 16), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sin, &sl), 0);
	assert_int_equal(
		lsn_init(&l, lfd, sizeof(struct entry), &lim, &ops, &ev), 0);
	for (i = 0; i < 5; i++) {
		c[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(
			connect(c[i], (struct sockaddr *)&sin, sizeof(sin)), 0);
	}
	lsn_accept(&l);
	/* five from one host with three allowed: the two oldest gave way */
	assert_int_equal(l.n, 3);
	assert_int_equal(ev.rejected, 2);
	assert_int_equal(ev.opened, 5);
	assert_non_null(strstr(lsn_at(&l, 0)->peer, "127.0.0.1:"));
	assert_int_equal(lsn_at(&l, 0)->seq, 3);
	/* nothing more to take: accept returns */
	lsn_accept(&l);
	assert_int_equal(l.n, 3);
	/* deadlines of 1 ms: past 2 ms from now */
	assert_true(lsn_expired(&l, 0, net_now_ms() + 2));
	lsn_fini(&l);
	for (i = 0; i < 5; i++)
		close(c[i]);
	close(lfd);
}

/* ---- a bench run's sealed streams (src/core/bench/stream.c) and the
 * client's ERROR (control.c): a stream is whole only with its END record
 * and then its end of file; anything else fails the test ---- */

static const uint8_t key_a[CRYPTO_KEY_LEN] = { 1 };
static const uint8_t key_b[CRYPTO_KEY_LEN] = { 2 };

/* A TCP connection on loopback: fds[0] and fds[1] are its ends. */
static void tcp_pair(int fds[2])
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int lfd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sin, &sl), 0);
	fds[1] = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(fds[1], (struct sockaddr *)&sin, sizeof(sin)),
			 0);
	fds[0] = accept(lfd, NULL, NULL);
	assert_true(fds[0] >= 0);
	close(lfd);
}

/* A run of one sealed stream (forward, -n bytes when bytes) on one side;
 * the test is the other end (peer). */
struct sealed {
	struct bench_run run;
	struct conn peer;
};

static void sealed_start(struct sealed *x, bool is_client, uint64_t bytes)
{
	struct proto_test_request req = { .mode = PROTO_MODE_FORWARD,
					  .streams = 1,
					  .blksize = 1000,
					  .bytes = bytes };
	struct lr_err e = { 0 };
	struct bench_stream *s;
	int fds[2];

	assert_int_equal(bench_run_init(&x->run, &req, is_client, &e), 0);
	tcp_pair(fds);
	s = &x->run.streams[0];
	s->fd = fds[0];
	assert_int_equal(conn_init_secure(&s->conn, fds[0], CRYPTO_AES256GCM,
					  key_a, key_b),
			 0);
	s->conn.abort = &x->run.abort;
	assert_int_equal(conn_init_secure(&x->peer, fds[1], CRYPTO_AES256GCM,
					  key_b, key_a),
			 0);
	assert_int_equal(bench_run_ready(&x->run, &e), 0);
	bench_run_go(&x->run);
}

static void sealed_send(struct conn *c, uint8_t type, size_t len)
{
	uint8_t buf[1000 + CRYPTO_TAG_LEN];

	memset(buf, 0x5a, len);
	assert_int_equal(conn_send_data(c, type, buf, len), 0);
}

/* Stop the run (grace_ms for its streams to end by themselves): the
 * first stream error, its text in e. */
static int sealed_end(struct sealed *x, int grace_ms, struct lr_err *e)
{
	bench_run_stop(&x->run, grace_ms);
	return bench_run_error(&x->run, false, e);
}

static void sealed_free(struct sealed *x)
{
	close(x->peer.fd);
	conn_fini(&x->peer);
	bench_run_fini(&x->run);
}

/* DATA, DATA, DATA, END, end of file: whole, every byte counted */
static void test_sealed_stream_whole(void **state)
{
	struct lr_err e = { 0 };
	struct sealed x;
	int i;

	(void)state;
	sealed_start(&x, false, 0);
	for (i = 0; i < 3; i++)
		sealed_send(&x.peer, CONN_REC_DATA, 1000);
	sealed_send(&x.peer, CONN_REC_END, 0);
	shutdown(x.peer.fd, SHUT_WR);
	assert_int_equal(sealed_end(&x, 5000, &e), 0);
	assert_int_equal(atomic_load(&x.run.streams[0].bytes), 3000);
	sealed_free(&x);
}

/* the end of file without END: cut short */
static void test_sealed_stream_without_end(void **state)
{
	struct lr_err e = { 0 };
	struct sealed x;

	(void)state;
	sealed_start(&x, false, 0);
	sealed_send(&x.peer, CONN_REC_DATA, 1000);
	shutdown(x.peer.fd, SHUT_WR);
	assert_int_equal(sealed_end(&x, 5000, &e), LR_ETRUNC);
	assert_string_equal(e.msg,
			    "stream 1: stream cut short (no end record)");
	sealed_free(&x);
}

/* neither END nor the end of file when the run gives up on the stream
 * (its stop, then the grace): cut short, not a clean end */
static void test_sealed_stream_given_up_before_end(void **state)
{
	struct lr_err e = { 0 };
	struct sealed x;

	(void)state;
	sealed_start(&x, false, 0);
	sealed_send(&x.peer, CONN_REC_DATA, 1000);
	assert_int_equal(sealed_end(&x, 300, &e), LR_ETRUNC);
	assert_int_equal(atomic_load(&x.run.streams[0].bytes), 1000);
	sealed_free(&x);
}

/* a byte after END, or no end of file after it: the stream failed */
static void test_sealed_stream_after_end(void **state)
{
	struct lr_err e = { 0 };
	struct sealed x;

	(void)state;
	sealed_start(&x, false, 0);
	sealed_send(&x.peer, CONN_REC_DATA, 1000);
	sealed_send(&x.peer, CONN_REC_END, 0);
	assert_int_equal(write(x.peer.fd, "x", 1), 1);
	shutdown(x.peer.fd, SHUT_WR);
	assert_int_equal(sealed_end(&x, 5000, &e), LR_EFRAME);
	assert_string_equal(e.msg, "stream 1: data after the stream's END");
	sealed_free(&x);

	sealed_start(&x, false, 0);
	sealed_send(&x.peer, CONN_REC_END, 0);
	assert_int_equal(sealed_end(&x, 300, &e), LR_ETIMEOUT);
	assert_string_equal(e.msg, "stream 1: no end of file after the "
				   "stream's END");
	sealed_free(&x);
}

/* a record that fails to open (one replayed: its sequence number again)
 * fails the stream and is not counted */
static void test_sealed_stream_counts_only_what_opened(void **state)
{
	struct lr_err e = { 0 };
	struct sealed x;
	struct conn replay;

	(void)state;
	sealed_start(&x, false, 0);
	assert_int_equal(conn_init_secure(&replay, x.peer.fd, CRYPTO_AES256GCM,
					  key_b, key_a),
			 0);
	sealed_send(&x.peer, CONN_REC_DATA, 1000);
	sealed_send(&replay, CONN_REC_DATA, 700);
	sealed_send(&x.peer, CONN_REC_END, 0);
	shutdown(x.peer.fd, SHUT_WR);
	assert_int_equal(sealed_end(&x, 5000, &e), LR_ERECORD);
	assert_non_null(strstr(e.msg, "stream 1: record failed "
				      "authentication"));
	assert_int_equal(atomic_load(&x.run.streams[0].bytes), 1000);
	conn_fini(&replay);
	sealed_free(&x);
}

/* a sender's stream: its last DATA record, END, then the end of file */
static void test_sealed_sender_ends_with_end_then_eof(void **state)
{
	uint8_t buf[1000 + CRYPTO_TAG_LEN], type;
	struct lr_err e = { 0 };
	struct sealed x;
	uint64_t got = 0;
	size_t n;
	int i;

	(void)state;
	sealed_start(&x, true, 2500);
	for (i = 0; i < 3; i++) {
		assert_int_equal(conn_recv_data(&x.peer, buf, sizeof(buf),
						&type, &n),
				 0);
		assert_int_equal(type, CONN_REC_DATA);
		got += n;
	}
	assert_int_equal(got, 2500);
	assert_int_equal(conn_recv_data(&x.peer, buf, sizeof(buf), &type, &n),
			 0);
	assert_int_equal(type, CONN_REC_END);
	assert_int_equal(conn_recv_eof(&x.peer, 5000), 0);
	assert_int_equal(sealed_end(&x, 5000, &e), 0);
	sealed_free(&x);
}

/* the client's ERROR during a test: what the server's log says */
static void test_client_error_is_told(void **state)
{
	struct proto_error pe = { .code = PROTO_ERR_TAMPERED };
	uint8_t buf[PROTO_HDR_LEN + PROTO_MAX_TEXT + 32];
	char why[LR_ERR_MSG];
	struct proto_buf b;

	(void)state;
	snprintf(pe.text, sizeof(pe.text), "stream 2: stream cut short");
	proto_buf_init(&b, buf, sizeof(buf));
	assert_int_equal(proto_encode_error(&b, &pe), 0);
	assert_int_equal(server__client_error(buf + PROTO_HDR_LEN,
					      (uint32_t)(b.len - PROTO_HDR_LEN),
					      why, sizeof(why)),
			 LR_EPEER);
	assert_string_equal(why, "the client ended it: stream 2: stream cut "
				 "short");
	assert_int_equal(server__client_error(buf + PROTO_HDR_LEN, 1, why,
					      sizeof(why)),
			 LR_EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_host_limit_drops_that_hosts_oldest),
		cmocka_unit_test(test_ready_entries_count_apart_and_go_last),
		cmocka_unit_test(test_full_table_costs_the_busiest_host),
		cmocka_unit_test(test_busiest_of_many_hosts),
		cmocka_unit_test(test_one_host_floods_alone),
		cmocka_unit_test(test_drop_hands_over_and_reports),
		cmocka_unit_test(test_deadlines_and_poll_table),
		cmocka_unit_test(test_penalties_double_cap_and_fade),
		cmocka_unit_test(test_penalty_table_keeps_the_recent),
		cmocka_unit_test(test_accept_real_connections),
		cmocka_unit_test(test_sealed_stream_whole),
		cmocka_unit_test(test_sealed_stream_without_end),
		cmocka_unit_test(test_sealed_stream_given_up_before_end),
		cmocka_unit_test(test_sealed_stream_after_end),
		cmocka_unit_test(test_sealed_stream_counts_only_what_opened),
		cmocka_unit_test(test_sealed_sender_ends_with_end_then_eof),
		cmocka_unit_test(test_client_error_is_told),
	};
	return cmocka_run_group_tests_name("server", tests, NULL, NULL);
}
