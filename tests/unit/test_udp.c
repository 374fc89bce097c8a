// SPDX-License-Identifier: MIT
/*
 * Unit tests of udp.[ch]: the iperf3 datagram header against hand-written
 * bytes, the receiver's loss / out-of-order / duplicate / jitter figures
 * (including hostile sequence numbers) and the pacer's arithmetic.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "udp.h"

/* ---- header ---- */

/* 2023-11-14 22:13:20.123456 UTC, seq 0x0102030405060708 */
#define VEC_NOW_US 1700000000123456LL
#define VEC_SEQ	   0x0102030405060708ULL

static const uint8_t vec64[UDP_HDR_LEN64] = {
	0x65, 0x53, 0xf1, 0x00, /* 1700000000 s */
	0x00, 0x01, 0xe2, 0x40, /* 123456 us */
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
};

static const uint8_t vec32[UDP_HDR_LEN32] = {
	0x65, 0x53, 0xf1, 0x00, 0x00, 0x01, 0xe2, 0x40, 0x05, 0x06, 0x07, 0x08,
};

static void test_hdr_vector(void **state)
{
	uint8_t buf[32];
	int64_t t;
	uint64_t seq;

	(void)state;
	memset(buf, 0xaa, sizeof(buf));
	assert_int_equal(udp_hdr_encode(buf, sizeof(buf), VEC_NOW_US, VEC_SEQ,
					true),
			 16);
	assert_memory_equal(buf, vec64, sizeof(vec64));
	assert_int_equal(buf[16], 0xaa); /* nothing written past the header */

	memset(buf, 0xaa, sizeof(buf));
	assert_int_equal(udp_hdr_encode(buf, sizeof(buf), VEC_NOW_US, VEC_SEQ,
					false),
			 12);
	assert_memory_equal(buf, vec32, sizeof(vec32));
	assert_int_equal(buf[12], 0xaa);

	assert_int_equal(udp_hdr_decode(vec64, sizeof(vec64), true, &t, &seq),
			 0);
	assert_true(t == VEC_NOW_US);
	assert_true(seq == VEC_SEQ);
	assert_int_equal(udp_hdr_decode(vec32, sizeof(vec32), false, &t, &seq),
			 0);
	assert_true(t == VEC_NOW_US);
	assert_true(seq == 0x05060708u);
}

static void test_hdr_round_trip(void **state)
{
	static const int64_t times[] = {
		0,	 1,	     999999,
		1000000, VEC_NOW_US, 4294967295LL * 1000000 + 999999
	};
	static const uint64_t seqs[] = { 0, 1, 0xffffffffu, 0x100000000ULL,
					 UINT64_MAX };
	uint8_t buf[UDP_HDR_LEN64];
	int64_t t;
	uint64_t seq;
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		for (j = 0; j < sizeof(seqs) / sizeof(seqs[0]); j++) {
			assert_int_equal(udp_hdr_encode(buf, UDP_HDR_LEN64,
							times[i], seqs[j],
							true),
					 UDP_HDR_LEN64);
			assert_int_equal(udp_hdr_decode(buf, UDP_HDR_LEN64,
							true, &t, &seq),
					 0);
			assert_true(t == times[i]);
			assert_true(seq == seqs[j]);

			assert_int_equal(udp_hdr_encode(buf, UDP_HDR_LEN32,
							times[i], seqs[j],
							false),
					 UDP_HDR_LEN32);
			assert_int_equal(udp_hdr_decode(buf, UDP_HDR_LEN32,
							false, &t, &seq),
					 0);
			assert_true(t == times[i]);
			assert_true(seq == (uint32_t)seqs[j]);
		}
	}
}

static void test_hdr_negative_time(void **state)
{
	static const uint8_t want[UDP_HDR_LEN32] = {
		0xff, 0xff, 0xff, 0xff, 0x00, 0x0f, 0x42, 0x3f, 0, 0, 0, 1,
	};
	uint8_t buf[UDP_HDR_LEN32];

	(void)state;
	/* -1 us is 1 us before the epoch: second -1, microsecond 999999 */
	assert_int_equal(udp_hdr_encode(buf, sizeof(buf), -1, 1, false), 12);
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(udp_hdr_encode(buf, sizeof(buf), INT64_MIN, 1, false),
			 12);
}

static void test_hdr_short(void **state)
{
	uint8_t buf[UDP_HDR_LEN64] = { 0 };
	int64_t t = 77;
	uint64_t seq = 78;

	(void)state;
	assert_int_equal(udp_hdr_encode(buf, 11, 0, 1, false), -EINVAL);
	assert_int_equal(udp_hdr_encode(buf, 15, 0, 1, true), -EINVAL);
	assert_int_equal(udp_hdr_encode(buf, 12, 0, 1, true), -EINVAL);
	assert_int_equal(udp_hdr_encode(buf, 0, 0, 1, false), -EINVAL);
	assert_int_equal(udp_hdr_encode(NULL, 0, 0, 1, false), -EINVAL);

	assert_int_equal(udp_hdr_decode(buf, 11, false, &t, &seq), -EBADMSG);
	assert_int_equal(udp_hdr_decode(buf, 15, true, &t, &seq), -EBADMSG);
	assert_int_equal(udp_hdr_decode(buf, 12, true, &t, &seq), -EBADMSG);
	assert_int_equal(udp_hdr_decode(buf, 0, false, &t, &seq), -EBADMSG);
	assert_int_equal(udp_hdr_decode(NULL, 0, true, &t, &seq), -EBADMSG);
	/* out-parameters untouched on failure */
	assert_true(t == 77);
	assert_true(seq == 78);
	/* a 64-bit header is long enough for a 32-bit decode */
	assert_int_equal(udp_hdr_decode(buf, 16, false, &t, &seq), 0);
}

/* ---- receiver ---- */

static void rx_seq(struct udp_rx *rx, uint64_t seq)
{
	udp_rx_packet(rx, seq, 1000, 2000, 100);
}

static void rx_expect(const struct udp_rx *rx, uint64_t packets, uint64_t lost,
		      uint64_t ooo, uint64_t dup, uint64_t max_seq)
{
	assert_true(rx->packets == packets);
	assert_true(rx->bytes == packets * 100);
	assert_true(rx->lost == lost);
	assert_true(rx->ooo == ooo);
	assert_true(rx->dup == dup);
	assert_true(rx->max_seq == max_seq);
}

static void test_rx_init(void **state)
{
	struct udp_rx rx;
	size_t i;

	(void)state;
	memset(&rx, 0x5a, sizeof(rx));
	udp_rx_init(&rx);
	rx_expect(&rx, 0, 0, 0, 0, 0);
	assert_false(rx.have_transit);
	assert_true(rx.jitter_s == 0.0);
	for (i = 0; i < sizeof(rx.seen) / sizeof(rx.seen[0]); i++)
		assert_true(rx.seen[i] == 0);
}

static void test_rx_in_order(void **state)
{
	struct udp_rx rx;
	uint64_t s;

	(void)state;
	udp_rx_init(&rx);
	for (s = 1; s <= 10000; s++)
		rx_seq(&rx, s);
	rx_expect(&rx, 10000, 0, 0, 0, 10000);
}

static void test_rx_gap_and_late(void **state)
{
	struct udp_rx rx;

	(void)state;
	udp_rx_init(&rx);
	rx_seq(&rx, 1);
	rx_seq(&rx, 2);
	rx_seq(&rx, 5);
	rx_expect(&rx, 3, 2, 0, 0, 5); /* 3 and 4 missing */
	rx_seq(&rx, 3);
	rx_expect(&rx, 4, 1, 1, 0, 5); /* late: lost back down, ooo up */
	rx_seq(&rx, 4);
	rx_expect(&rx, 5, 0, 2, 0, 5);
	rx_seq(&rx, 6);
	rx_expect(&rx, 6, 0, 2, 0, 6);
	/* the first packet may already have a gap below it, as in iperf3 */
	udp_rx_init(&rx);
	rx_seq(&rx, 4);
	rx_expect(&rx, 1, 3, 0, 0, 4);
}

static void test_rx_duplicates(void **state)
{
	struct udp_rx rx;

	(void)state;
	udp_rx_init(&rx);
	rx_seq(&rx, 1);
	rx_seq(&rx, 1);
	rx_expect(&rx, 2, 0, 0, 1, 1);
	rx_seq(&rx, 4);
	rx_expect(&rx, 3, 2, 0, 1, 4);
	rx_seq(&rx, 4); /* dup of max_seq: lost unchanged */
	rx_seq(&rx, 1); /* dup below max_seq: not ooo, lost unchanged */
	rx_expect(&rx, 5, 2, 0, 3, 4);
	rx_seq(&rx, 2); /* late, first time */
	rx_expect(&rx, 6, 1, 1, 3, 4);
	rx_seq(&rx, 2); /* and again: dup */
	rx_expect(&rx, 7, 1, 1, 4, 4);
}

static void test_rx_window_reuse(void **state)
{
	struct udp_rx rx;
	uint64_t s;

	(void)state;
	udp_rx_init(&rx);
	for (s = 1; s <= 10; s++)
		rx_seq(&rx, s);
	/* a step below the window: bits of 1..5 are reused by 4097..4101 */
	rx_seq(&rx, UDP_DUP_WINDOW + 5);
	rx_expect(&rx, 11, UDP_DUP_WINDOW - 6, 0, 0, UDP_DUP_WINDOW + 5);
	for (s = 6; s <= 10; s++)
		rx_seq(&rx, s); /* still in the window and seen */
	rx_expect(&rx, 16, UDP_DUP_WINDOW - 6, 0, 5, UDP_DUP_WINDOW + 5);
	rx_seq(&rx, UDP_DUP_WINDOW + 4); /* same bit as 4, never seen */
	rx_expect(&rx, 17, UDP_DUP_WINDOW - 7, 1, 5, UDP_DUP_WINDOW + 5);
	rx_seq(&rx, 5); /* below the window: can't tell, ooo */
	rx_expect(&rx, 18, UDP_DUP_WINDOW - 8, 2, 5, UDP_DUP_WINDOW + 5);
	rx_seq(&rx, 11); /* in the window, unseen */
	rx_expect(&rx, 19, UDP_DUP_WINDOW - 9, 3, 5, UDP_DUP_WINDOW + 5);
	rx_seq(&rx, 11);
	rx_expect(&rx, 20, UDP_DUP_WINDOW - 9, 3, 6, UDP_DUP_WINDOW + 5);
}

static void test_rx_huge_jump(void **state)
{
	struct udp_rx rx;
	uint64_t big = 1 + 10ULL * UDP_DUP_WINDOW + 5;
	uint64_t s;

	(void)state;
	udp_rx_init(&rx);
	for (s = 1; s <= 100; s++)
		rx_seq(&rx, s);
	rx_seq(&rx, big);
	rx_expect(&rx, 101, big - 101, 0, 0, big);
	/* every bit was cleared: the seq that shares 100's bit is unseen */
	s = big - (big - 100) % UDP_DUP_WINDOW;
	assert_true(s % UDP_DUP_WINDOW == 100 % UDP_DUP_WINDOW);
	rx_seq(&rx, s);
	rx_expect(&rx, 102, big - 102, 1, 0, big);
	rx_seq(&rx, s);
	rx_expect(&rx, 103, big - 102, 1, 1, big);
	rx_seq(&rx, 100); /* too old for the window */
	rx_expect(&rx, 104, big - 103, 2, 1, big);
	rx_seq(&rx, big);
	rx_expect(&rx, 105, big - 103, 2, 2, big);
}

static void test_rx_uint64_max(void **state)
{
	struct udp_rx rx;

	(void)state;
	udp_rx_init(&rx);
	rx_seq(&rx, 1);
	rx_seq(&rx, UINT64_MAX);
	rx_expect(&rx, 2, UINT64_MAX - 2, 0, 0, UINT64_MAX);
	rx_seq(&rx, UINT64_MAX);
	rx_expect(&rx, 3, UINT64_MAX - 2, 0, 1, UINT64_MAX);
	rx_seq(&rx, UINT64_MAX - 1);
	rx_expect(&rx, 4, UINT64_MAX - 3, 1, 1, UINT64_MAX);
	rx_seq(&rx, 2);
	rx_expect(&rx, 5, UINT64_MAX - 4, 2, 1, UINT64_MAX);
	rx_seq(&rx, UINT64_MAX - UDP_DUP_WINDOW + 1); /* oldest in window */
	rx_expect(&rx, 6, UINT64_MAX - 5, 3, 1, UINT64_MAX);
	rx_seq(&rx, UINT64_MAX - UDP_DUP_WINDOW + 1);
	rx_expect(&rx, 7, UINT64_MAX - 5, 3, 2, UINT64_MAX);

	/* as the very first packet, then going backwards */
	udp_rx_init(&rx);
	rx_seq(&rx, UINT64_MAX);
	rx_expect(&rx, 1, UINT64_MAX - 1, 0, 0, UINT64_MAX);
	rx_seq(&rx, 1);
	rx_seq(&rx, 0);
	rx_seq(&rx, UINT64_MAX);
	rx_expect(&rx, 4, UINT64_MAX - 2, 2, 1, UINT64_MAX);
}

static void test_rx_seq_zero(void **state)
{
	struct udp_rx rx;

	(void)state;
	udp_rx_init(&rx);
	rx_seq(&rx, 0); /* invalid: counted as ooo, state untouched */
	rx_expect(&rx, 1, 0, 1, 0, 0);
	rx_seq(&rx, 1);
	rx_expect(&rx, 2, 0, 1, 0, 1);
	rx_seq(&rx, 0); /* never a dup, never takes back a loss */
	rx_expect(&rx, 3, 0, 2, 0, 1);
	rx_seq(&rx, 3);
	rx_seq(&rx, 0);
	rx_expect(&rx, 5, 1, 3, 0, 3);
}

static void test_rx_bytes(void **state)
{
	struct udp_rx rx;

	(void)state;
	udp_rx_init(&rx);
	udp_rx_packet(&rx, 1, 0, 0, 1460);
	udp_rx_packet(&rx, 1, 0, 0, 1000); /* duplicates still count */
	udp_rx_packet(&rx, 2, 0, 0, 0);
	assert_true(rx.packets == 3);
	assert_true(rx.bytes == 2460);
	assert_true(rx.dup == 1);
}

static void test_rx_jitter_constant(void **state)
{
	struct udp_rx rx;
	int64_t i;

	(void)state;
	udp_rx_init(&rx);
	for (i = 1; i <= 1000; i++)
		udp_rx_packet(&rx, (uint64_t)i, VEC_NOW_US + i * 1000,
			      VEC_NOW_US + i * 1000 + 2500, 1460);
	assert_true(rx.have_transit);
	assert_true(rx.jitter_s == 0.0);

	/* the first packet only sets prev_transit_us */
	udp_rx_init(&rx);
	udp_rx_packet(&rx, 1, 0, 123456789, 1);
	assert_true(rx.jitter_s == 0.0);
	assert_true(rx.have_transit);
}

static void test_rx_jitter_alternating(void **state)
{
	struct udp_rx rx;
	double want = 0.0;
	double prev = 0.001;
	int64_t i;

	(void)state;
	udp_rx_init(&rx);
	/* transit alternates 1 ms, 3 ms: |D| = 2 ms after the first */
	for (i = 0; i < 400; i++) {
		int64_t transit = i % 2 ? 3000 : 1000;
		double t = (double)transit / 1e6;

		udp_rx_packet(&rx, (uint64_t)i + 1, i * 10000,
			      i * 10000 + transit, 100);
		if (i > 0) {
			want += (fabs(t - prev) - want) / 16.0;
			prev = t;
		}
		assert_true(fabs(rx.jitter_s - want) < 1e-12);
		if (i == 1)
			assert_true(fabs(rx.jitter_s - 0.002 / 16) < 1e-12);
	}
	/* J_n = 2 ms * (1 - (15/16)^n): converged to 2 ms */
	assert_true(fabs(rx.jitter_s - 0.002) < 1e-9);
	assert_true(rx.jitter_s <= 0.002);
}

static void test_rx_jitter_hostile(void **state)
{
	struct udp_rx rx;

	(void)state;
	udp_rx_init(&rx);
	udp_rx_packet(&rx, 1, INT64_MIN, INT64_MAX, 1);
	udp_rx_packet(&rx, 2, INT64_MAX, INT64_MIN, 1);
	udp_rx_packet(&rx, 3, INT64_MIN, INT64_MAX, 1);
	assert_true(isfinite(rx.jitter_s));
	assert_true(rx.jitter_s > 0.0);
}

/* ---- pacer ---- */

static void test_pacer_rate(void **state)
{
	struct udp_pacer p;
	int64_t now = 5000000;
	int64_t w;
	int i;

	(void)state;
	udp_pacer_init(&p, 8000000, now); /* 8 Mbit/s = 1 MB/s */
	assert_true(p.burst_us > 0);
	assert_true(udp_pacer_wait_us(&p, now, 1000000) == 1000000);
	assert_true(udp_pacer_wait_us(&p, now, 1000) == 1000);
	assert_true(udp_pacer_wait_us(&p, now, 1) == 1);
	for (i = 0; i < 1000; i++) {
		w = udp_pacer_wait_us(&p, now, 1000);
		assert_true(w == 1000);
		now += w;
		assert_true(udp_pacer_wait_us(&p, now, 1000) == 0);
		udp_pacer_sent(&p, now, 1000);
	}
	/* 1 MB at 1 MB/s: the last byte went at exactly one second */
	assert_true(now == 5000000 + 1000000);
	assert_true(p.bytes == 1000000);
	assert_true(p.t0_us == 5000000);
	/* half way there, half the wait */
	assert_true(udp_pacer_wait_us(&p, now + 500, 1000) == 500);
}

static void test_pacer_burst(void **state)
{
	struct udp_pacer p;
	int64_t now = 0;
	int64_t burst;
	int n;

	(void)state;
	udp_pacer_init(&p, 8000000, now);
	burst = p.burst_us;
	assert_true(burst == 10000);
	for (n = 0; n < 10; n++) {
		now += udp_pacer_wait_us(&p, now, 1000);
		udp_pacer_sent(&p, now, 1000);
	}
	assert_true(now == 10000);
	/* a one-second stall, then as many datagrams as go at once */
	now += 1000000;
	n = 0;
	while (udp_pacer_wait_us(&p, now, 1000) == 0) {
		udp_pacer_sent(&p, now, 1000);
		n++;
		assert_true(n < 1000);
	}
	/* burst_us worth (10 x 1000 B at 1 MB/s) plus the one that was due */
	assert_int_equal(n, burst / 1000 + 1);
	assert_true(udp_pacer_wait_us(&p, now, 1000) == 1000);
	/* and then the rate again */
	for (n = 0; n < 100; n++) {
		int64_t w = udp_pacer_wait_us(&p, now, 1000);

		assert_true(w == 1000);
		now += w;
		udp_pacer_sent(&p, now, 1000);
	}

	/* a smaller bound set by the caller */
	udp_pacer_init(&p, 8000000, 0);
	p.burst_us = 0;
	now = 1000000;
	n = 0;
	while (udp_pacer_wait_us(&p, now, 1000) == 0) {
		udp_pacer_sent(&p, now, 1000);
		n++;
		assert_true(n < 1000);
	}
	assert_int_equal(n, 1);
}

/* A datagram longer than burst_us at the rate, each sent a bit late: the
 * pacer makes up the slop and keeps the average (iperf3's default 1460 B
 * at 1 Mbit/s takes 11.68 ms). */
static void test_pacer_slop(void **state)
{
	struct udp_pacer p;
	int64_t now = 0;
	int i;

	(void)state;
	udp_pacer_init(&p, 1000000, now);
	for (i = 0; i < 100; i++) {
		now += udp_pacer_wait_us(&p, now, 1460) + 500;
		udp_pacer_sent(&p, now, 1460);
	}
	assert_true(p.t0_us == 0);
	assert_true(now == 100 * 11680 + 500);
}

#ifdef __SIZEOF_INT128__
/* The pacer as it was computed with a 128-bit type, for comparison. */
static int64_t ref_wait(struct udp_pacer *p, int64_t now, size_t len)
{
	__int128 r = (__int128)p->rate_bps, due, behind, wait;
	__int128 bytes = (__int128)p->bytes + len;
	__int128 burst = p->burst_us < 0 ? 0 : p->burst_us;

	due = (__int128)p->t0_us + (bytes * 8 * 1000000 + r - 1) / r;
	behind = (__int128)now - due;
	if (behind > burst)
		p->t0_us = (int64_t)((__int128)p->t0_us + behind - burst);
	due = (__int128)p->t0_us + (bytes * 8 * 1000000 + r - 1) / r;
	wait = due - now;
	if (wait <= 0)
		return 0;
	return wait > INT64_MAX ? INT64_MAX : (int64_t)wait;
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The 64-bit pacer (what 32-bit CPUs run) against the 128-bit one, on
 * random inputs of every magnitude and on the edges: the same wait and
 * the same t0 after. */
static void test_pacer_matches_128bit(void **state)
{
	static const uint64_t rates[] = { 1,
					  999,
					  1000000,
					  100000000000ULL,
					  2305843009213ULL,
					  3000000000000ULL,
					  8000000000000ULL,
					  UINT64_MAX };
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	int i;

	(void)state;
	for (i = 0; i < 300000; i++) {
		struct udp_pacer a, b;
		uint64_t rate = i < 8 ? rates[i]
				      : xs(&seed) >> (xs(&seed) % 64);
		int64_t t0 = (int64_t)(xs(&seed) >> (1 + xs(&seed) % 63));
		int64_t now;
		size_t len = 1 + xs(&seed) % 65507;

		if (!rate)
			rate = 1;
		if (xs(&seed) & 1)
			t0 = -t0;
		now = t0 + (int64_t)(xs(&seed) % 20000000000ULL) - 1000000000;
		udp_pacer_init(&a, rate, t0);
		a.bytes =
			(xs(&seed) >> (xs(&seed) % 64)) % (UINT64_MAX - 65536);
		if (i % 7 ==
		    0) /* the review's case: near the 2.3 Tbit/s edge */
			a.bytes = 2305843008213ULL;
		b = a;
		if (udp_pacer_wait_us(&a, now, len) != ref_wait(&b, now, len) ||
		    a.t0_us != b.t0_us)
			fail_msg("rate %" PRIu64 " bytes %" PRIu64
				 " t0 %" PRId64 " now %" PRId64 " len %zu",
				 rate, b.bytes, t0, now, len);
	}
}
#endif

static void test_pacer_large(void **state)
{
	struct udp_pacer p;
	int64_t day = 86400LL * 1000000;

	(void)state;
	/* 100 Gbit/s for 24 h: 1.08e15 bytes */
	udp_pacer_init(&p, 100000000000ULL, 0);
	p.bytes = 1080000000000000ULL;
	assert_true(udp_pacer_wait_us(&p, day - 1000, 1500) == 1001);
	assert_true(udp_pacer_wait_us(&p, day + 1, 1500) == 0);
	assert_true(p.t0_us == 0);

	/* absurd: 1 bit/s, nearly 2^64 bytes sent: clamped, no overflow */
	udp_pacer_init(&p, 1, 0);
	p.bytes = UINT64_MAX - 1;
	assert_true(udp_pacer_wait_us(&p, 0, UDP_MAX_LEN) == INT64_MAX);
	udp_pacer_sent(&p, 0, UDP_MAX_LEN);
	assert_true(p.bytes == UINT64_MAX);
	udp_pacer_init(&p, UINT64_MAX, INT64_MAX - 10);
	assert_true(udp_pacer_wait_us(&p, INT64_MIN, 1) == INT64_MAX);
	assert_true(udp_pacer_wait_us(&p, INT64_MAX, 1) == 0);
}

static void test_pacer_rate_zero(void **state)
{
	struct udp_pacer p;
	int i;

	(void)state;
	udp_pacer_init(&p, 0, 0);
	for (i = 0; i < 100; i++) {
		assert_true(udp_pacer_wait_us(&p, 0, UDP_MAX_LEN) == 0);
		udp_pacer_sent(&p, 0, UDP_MAX_LEN);
	}
	assert_true(udp_pacer_wait_us(&p, INT64_MIN, UDP_MAX_LEN) == 0);
	assert_true(p.bytes == 100ULL * UDP_MAX_LEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_vector),
		cmocka_unit_test(test_hdr_round_trip),
		cmocka_unit_test(test_hdr_negative_time),
		cmocka_unit_test(test_hdr_short),
		cmocka_unit_test(test_rx_init),
		cmocka_unit_test(test_rx_in_order),
		cmocka_unit_test(test_rx_gap_and_late),
		cmocka_unit_test(test_rx_duplicates),
		cmocka_unit_test(test_rx_window_reuse),
		cmocka_unit_test(test_rx_huge_jump),
		cmocka_unit_test(test_rx_uint64_max),
		cmocka_unit_test(test_rx_seq_zero),
		cmocka_unit_test(test_rx_bytes),
		cmocka_unit_test(test_rx_jitter_constant),
		cmocka_unit_test(test_rx_jitter_alternating),
		cmocka_unit_test(test_rx_jitter_hostile),
		cmocka_unit_test(test_pacer_rate),
		cmocka_unit_test(test_pacer_burst),
		cmocka_unit_test(test_pacer_slop),
		cmocka_unit_test(test_pacer_large),
#ifdef __SIZEOF_INT128__
		cmocka_unit_test(test_pacer_matches_128bit),
#endif
		cmocka_unit_test(test_pacer_rate_zero),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
