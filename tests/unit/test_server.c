// SPDX-License-Identifier: MIT
/*
 * Unit tests of the listener both servers share (src/core/server/
 * listen.c): room for newcomers (per host, then the busiest host), the
 * order of the table, deadlines, the poll table, penalties, and accept on
 * a real listening socket. linerate's server and the iperf3 one differ
 * only in their limits, so these cover both.
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
	/* over once the wait is over; forgotten after ten quiet minutes */
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
	};
	return cmocka_run_group_tests_name("server", tests, NULL, NULL);
}
