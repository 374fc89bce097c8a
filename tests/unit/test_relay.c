// SPDX-License-Identifier: MIT
/*
 * Unit tests of relay.[ch]: a near and a far relay joined by two pipes,
 * the far one connecting to a listener of the test; bytes both ways, half
 * closes, a reader that stalls while the other channels go on, the far
 * end gone after its last words, and the frame header's checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "relay.h"

struct pair {
	struct relay *near, *far;
	pthread_t tn, tf;
	int near_port;
	int target; /* the listener the far relay connects to */
	int pipes[4];
	int rn, rf;
};

static void *run_main(void *arg)
{
	struct relay *r = arg;

	return (void *)(intptr_t)relay_run(r);
}

static int listen_lo(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 64), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static void pair_start(struct pair *p)
{
	struct relay_opts no = { 0 }, fo = { 0 };
	uint16_t port;
	int a[2], b[2];

	memset(p, 0, sizeof(*p));
	assert_int_equal(pipe2(a, O_CLOEXEC), 0); /* near -> far */
	assert_int_equal(pipe2(b, O_CLOEXEC), 0); /* far -> near */
	p->pipes[0] = a[0], p->pipes[1] = a[1];
	p->pipes[2] = b[0], p->pipes[3] = b[1];
	p->target = listen_lo(&port);
	fo.in = a[0];
	fo.out = b[1];
	fo.addr = "127.0.0.1";
	fo.port = port;
	no.in = b[0];
	no.out = a[1];
	no.near = true;
	assert_int_equal(relay_new(&no, &p->near), 0);
	assert_int_equal(relay_new(&fo, &p->far), 0);
	p->near_port = relay_port(p->near);
	assert_string_equal(relay_addr(p->near), "127.0.0.1");
	assert_int_equal(pthread_create(&p->tn, NULL, run_main, p->near), 0);
	assert_int_equal(pthread_create(&p->tf, NULL, run_main, p->far), 0);
}

static void pair_end(struct pair *p)
{
	void *rv;
	unsigned i;

	relay_stop(p->near);
	relay_stop(p->far);
	pthread_join(p->tn, &rv);
	p->rn = (int)(intptr_t)rv;
	pthread_join(p->tf, &rv);
	p->rf = (int)(intptr_t)rv;
	relay_free(p->near);
	relay_free(p->far);
	for (i = 0; i < 4; i++)
		if (p->pipes[i] >= 0)
			close(p->pipes[i]);
	close(p->target);
}

/* A relay that loses its way fails the test instead of hanging it. */
static void no_hang(int fd)
{
	struct timeval tv = { .tv_sec = 20 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A client through the near relay and the far side's accepted end. */
static void connect_through(struct pair *p, int *client, int *server)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	a.sin_port = htons((uint16_t)p->near_port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(*client, (struct sockaddr *)&a, sizeof(a)), 0);
	*server = accept4(p->target, NULL, NULL, SOCK_CLOEXEC);
	assert_true(*server >= 0);
	no_hang(*client);
	no_hang(*server);
}

static void fill(uint8_t *b, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = (uint8_t)(seed >> 16);
	}
}

struct pump {
	int fd;
	const uint8_t *out;
	size_t out_len;
	uint8_t *in;
	size_t in_len; /* read until EOF; the count */
	size_t in_cap;
	bool shut; /* shut for writes after out */
};

/* Write out (then shut, when asked) while reading to EOF, with poll:
 * both directions at once in one thread. */
static void *pump_main(void *arg)
{
	struct pump *u = arg;
	size_t done = 0;
	bool eof = false, shut = false;

	while (!eof || done < u->out_len) {
		struct pollfd f = { .fd = u->fd, .events = 0 };
		ssize_t n;

		if (!eof)
			f.events |= POLLIN;
		if (done < u->out_len)
			f.events |= POLLOUT;
		if (poll(&f, 1, 20000) <= 0)
			return (void *)-1;
		if (f.revents & POLLIN) {
			n = recv(u->fd, u->in + u->in_len,
				 u->in_cap - u->in_len, MSG_DONTWAIT);
			if (n == 0)
				eof = true;
			else if (n > 0)
				u->in_len += (size_t)n;
			else if (errno != EAGAIN)
				return (void *)-2;
		}
		if (f.revents & POLLOUT) {
			n = send(u->fd, u->out + done, u->out_len - done,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0)
				done += (size_t)n;
			else if (n < 0 && errno != EAGAIN)
				return (void *)-3;
		}
		if (u->shut && !shut && done == u->out_len) {
			shutdown(u->fd, SHUT_WR);
			shut = true;
		}
	}
	return NULL;
}

/* 8 MiB each way at once on one channel, each side shutting for writes
 * when done: every byte arrives, in order, and each side sees the end. */
static void test_both_ways(void **state)
{
	size_t n = 8u << 20;
	uint8_t *a = malloc(n), *b = malloc(n);
	struct pump pa = { 0 }, pb = { 0 };
	struct pair p;
	pthread_t ta, tb;
	void *ra, *rb;
	uint64_t sent, recvd;
	int c, s;

	(void)state;
	fill(a, n, 1);
	fill(b, n, 2);
	pair_start(&p);
	connect_through(&p, &c, &s);
	pa = (struct pump){ .fd = c,
			    .out = a,
			    .out_len = n,
			    .in = malloc(n + 1),
			    .in_cap = n + 1,
			    .shut = true };
	pb = (struct pump){ .fd = s,
			    .out = b,
			    .out_len = n,
			    .in = malloc(n + 1),
			    .in_cap = n + 1,
			    .shut = true };
	pthread_create(&ta, NULL, pump_main, &pa);
	pthread_create(&tb, NULL, pump_main, &pb);
	pthread_join(ta, &ra);
	pthread_join(tb, &rb);
	assert_null(ra);
	assert_null(rb);
	assert_int_equal(pa.in_len, n);
	assert_int_equal(pb.in_len, n);
	assert_memory_equal(pa.in, b, n);
	assert_memory_equal(pb.in, a, n);
	/* every byte went through the near relay, both ways (its counts
	 * are published a moment after the last write) */
	for (int i = 0; i < 500; i++) {
		relay_counts(p.near, &sent, &recvd);
		if (sent == n && recvd == n)
			break;
		usleep(10000);
	}
	assert_int_equal(sent, n);
	assert_int_equal(recvd, n);
	assert_true(relay_wait_flushed(p.near, 5000));
	close(c);
	close(s);
	pair_end(&p);
	assert_int_equal(p.rn, 0);
	assert_int_equal(p.rf, 0);
	free(pa.in);
	free(pb.in);
	free(a);
	free(b);
}

/* One channel's reader stops reading (its window fills); the others
 * still carry 2 MiB each. */
static void test_stalled_channel(void **state)
{
	enum { N = 4 };
	size_t n = 2u << 20, big = 64u << 20;
	uint8_t *a = malloc(big), *got = malloc(n);
	struct pair p;
	int c[N], s[N], i;
	size_t stalled = 0;

	(void)state;
	fill(a, big, 3);
	pair_start(&p);
	for (i = 0; i < N; i++)
		connect_through(&p, &c[i], &s[i]);
	/* channel 0: more than its window plus the sockets' buffers can
	 * hold; nobody reads s[0] */
	fcntl(c[0], F_SETFL, O_NONBLOCK);
	{
		size_t done = 0;
		int tries = 0;

		while (done < big && tries++ < 200) {
			ssize_t k =
				send(c[0], a + done, big - done, MSG_NOSIGNAL);
			if (k > 0)
				done += (size_t)k;
			else
				usleep(5000);
		}
		assert_true(done < big); /* it did stall */
		stalled = done;
	}
	for (i = 1; i < N; i++) {
		size_t have = 0;

		fcntl(c[i], F_SETFL, 0);
		assert_int_equal(send(c[i], a, n, MSG_NOSIGNAL), (ssize_t)n);
		while (have < n) {
			ssize_t k = recv(s[i], got + have, n - have, 0);

			assert_true(k > 0);
			have += (size_t)k;
		}
		assert_memory_equal(got, a, n);
	}
	/* and channel 0, read at last, holds what was sent, in order */
	{
		uint8_t *all = malloc(stalled);
		size_t have = 0;

		while (have < stalled) {
			ssize_t k = recv(s[0], all + have, stalled - have, 0);

			assert_true(k > 0);
			have += (size_t)k;
		}
		assert_memory_equal(all, a, stalled);
		free(all);
	}
	for (i = 0; i < N; i++) {
		close(c[i]);
		close(s[i]);
	}
	pair_end(&p);
	assert_int_equal(p.rn, 0);
	assert_int_equal(p.rf, 0);
	free(a);
	free(got);
}

/* The far relay says its last words and goes (its output closes): they
 * still reach the client, then the client reads the end. */
static void test_far_gone(void **state)
{
	struct pair p;
	char buf[64];
	ssize_t k;
	size_t have = 0;
	int c, s;

	(void)state;
	pair_start(&p);
	connect_through(&p, &c, &s);
	assert_int_equal(send(s, "last words", 10, 0), 10);
	close(s);
	/* the far end's process ends: its relay stops, its output closes */
	assert_true(relay_wait_flushed(p.far, 5000));
	relay_stop(p.far);
	pthread_join(p.tf, NULL);
	close(p.pipes[3]);
	p.pipes[3] = -1;
	while ((k = recv(c, buf + have, sizeof(buf) - have, 0)) > 0)
		have += (size_t)k;
	assert_int_equal(k, 0);
	assert_int_equal(have, 10);
	assert_memory_equal(buf, "last words", 10);
	/* the near relay saw its input end */
	assert_true(relay_wait_done(p.near, 5000));
	close(c);
	relay_stop(p.near);
	pthread_join(p.tn, NULL);
	relay_free(p.near);
	relay_free(p.far);
	for (int i = 0; i < 4; i++)
		if (p.pipes[i] >= 0)
			close(p.pipes[i]);
	close(p.target);
}

/* Nothing listens where the far relay connects: the client's connection
 * is reset, not ended. */
static void test_far_refused(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct pair p;
	char b;
	ssize_t k;
	int c;

	(void)state;
	pair_start(&p);
	close(p.target); /* the port is now closed */
	p.target = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_port = htons((uint16_t)p.near_port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	k = recv(c, &b, 1, 0);
	assert_int_equal(k, -1);
	assert_int_equal(errno, ECONNRESET);
	close(c);
	pair_end(&p);
}

/* A frame that breaks the rules ends the relay with -EPROTO. */
static void test_bad_frame(void **state)
{
	struct relay_opts o = { 0 };
	struct relay *r;
	int a[2], b[2];
	uint8_t h[RELAY_HDR];

	(void)state;
	assert_int_equal(pipe2(a, O_CLOEXEC), 0);
	assert_int_equal(pipe2(b, O_CLOEXEC), 0);
	o.in = a[0];
	o.out = b[1];
	o.addr = "127.0.0.1";
	o.port = 9;
	/* DATA for a channel that the far end never opened is dropped;
	 * then DATA beyond the frame bound */
	relay_hdr_encode(h, RELAY_DATA, 7, 3);
	assert_int_equal(write(a[1], h, sizeof(h)), (ssize_t)sizeof(h));
	assert_int_equal(write(a[1], "abc", 3), 3);
	relay_hdr_encode(h, RELAY_EOF, 7, 0);
	assert_int_equal(write(a[1], h, sizeof(h)), (ssize_t)sizeof(h));
	relay_hdr_encode(h, RELAY_DATA, 7, RELAY_FRAME_MAX + 1);
	assert_int_equal(write(a[1], h, sizeof(h)), (ssize_t)sizeof(h));
	assert_int_equal(relay_new(&o, &r), 0);
	assert_int_equal(relay_run(r), -EPROTO);
	relay_free(r);
	close(a[0]), close(a[1]), close(b[0]), close(b[1]);
}

/* The other end sends more of a channel's data than the room granted
 * (all at once, before any CREDIT could have reached it): -EPROTO. And
 * exactly the room is fine. */
static int overrun(size_t extra)
{
	struct relay_opts o = { 0 };
	size_t total = RELAY_WINDOW_START + extra, at = 0, off = 0;
	uint8_t *pre = calloc(1, total + 64 * RELAY_HDR);
	struct relay *r;
	uint16_t port;
	int a[2], b[2], lfd, e;

	lfd = listen_lo(&port); /* never accepts: nothing is read */
	relay_hdr_encode(pre, RELAY_OPEN, 1, 0);
	off = RELAY_HDR;
	while (at < total) {
		uint32_t k = total - at > 65536 ? 65536
						: (uint32_t)(total - at);

		relay_hdr_encode(pre + off, RELAY_DATA, 1, k);
		off += RELAY_HDR + k;
		at += k;
	}
	assert_int_equal(pipe2(a, O_CLOEXEC), 0);
	assert_int_equal(pipe2(b, O_CLOEXEC), 0);
	close(a[1]); /* then the input ends */
	o.in = a[0];
	o.out = b[1];
	o.addr = "127.0.0.1";
	o.port = port;
	o.pre = pre;
	o.pre_len = off;
	assert_int_equal(relay_new(&o, &r), 0);
	e = relay_run(r);
	relay_free(r);
	close(a[0]), close(b[0]), close(b[1]), close(lfd);
	free(pre);
	return e;
}

static void test_credit_overrun(void **state)
{
	(void)state;
	assert_int_equal(overrun(0), 0);
	assert_int_equal(overrun(1), -EPROTO);
}

static void test_hdr(void **state)
{
	uint8_t h[RELAY_HDR], t;
	uint32_t c, l;

	(void)state;
	relay_hdr_encode(h, RELAY_DATA, 0x01020304u, 0x0000ffffu);
	assert_int_equal(h[0], RELAY_DATA);
	assert_int_equal(h[4], 1);
	assert_int_equal(h[7], 4);
	assert_int_equal(h[10], 0xff);
	assert_int_equal(relay_hdr_decode(h, &t, &c, &l), 0);
	assert_int_equal(c, 0x01020304u);
	assert_int_equal(l, 0xffffu);
	relay_hdr_encode(h, RELAY_DATA, 1, 0);
	assert_int_equal(relay_hdr_decode(h, &t, &c, &l), -EPROTO);
	relay_hdr_encode(h, RELAY_OPEN, 1, 1);
	assert_int_equal(relay_hdr_decode(h, &t, &c, &l), -EPROTO);
	relay_hdr_encode(h, RELAY_OPEN, 0, 0);
	assert_int_equal(relay_hdr_decode(h, &t, &c, &l), -EPROTO);
	relay_hdr_encode(h, RELAY_CREDIT, 1, RELAY_WINDOW + 1);
	assert_int_equal(relay_hdr_decode(h, &t, &c, &l), -EPROTO);
	relay_hdr_encode(h, RELAY_CREDIT, 1, RELAY_WINDOW);
	assert_int_equal(relay_hdr_decode(h, &t, &c, &l), 0);
	relay_hdr_encode(h, 9, 1, 0);
	assert_int_equal(relay_hdr_decode(h, &t, &c, &l), -EPROTO);
	relay_hdr_encode(h, RELAY_EOF, 1, 0);
	h[2] = 1;
	assert_int_equal(relay_hdr_decode(h, &t, &c, &l), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr),
		cmocka_unit_test(test_bad_frame),
		cmocka_unit_test(test_credit_overrun),
		cmocka_unit_test(test_both_ways),
		cmocka_unit_test(test_stalled_channel),
		cmocka_unit_test(test_far_gone),
		cmocka_unit_test(test_far_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
