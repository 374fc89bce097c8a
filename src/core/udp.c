// SPDX-License-Identifier: MIT
/*
 * UDP tests: iperf3's datagram header, the receiver's loss / order /
 * duplicate / jitter figures, and the sender's pacer. See udp.h.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "udp.h"
#include "banned.h"

#define US_PER_S 1000000

/* Default bound on a catch-up burst after the sender fell behind. */
#define PACER_BURST_US 10000

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}

/*
 * now_us is split with floor division so that usec is always in
 * [0, 1e6); seconds are sent modulo 2^32 as iperf3 does.
 */
int udp_hdr_encode(uint8_t *buf, size_t len, int64_t now_us, uint64_t seq,
		   bool counters64)
{
	size_t need = counters64 ? UDP_HDR_LEN64 : UDP_HDR_LEN32;
	int64_t sec = now_us / US_PER_S;
	int64_t usec = now_us % US_PER_S;

	if (!buf || len < need)
		return -EINVAL;
	if (usec < 0) {
		usec += US_PER_S;
		sec -= 1;
	}
	put_be32(buf, (uint32_t)sec);
	put_be32(buf + 4, (uint32_t)usec);
	if (counters64) {
		put_be32(buf + 8, (uint32_t)(seq >> 32));
		put_be32(buf + 12, (uint32_t)seq);
	} else {
		put_be32(buf + 8, (uint32_t)seq);
	}
	return (int)need;
}

/*
 * Any 32-bit microseconds field is accepted (a peer may send more than
 * 999999): sent_us is at most (2^32 - 1) * 1000001, far inside int64_t.
 */
int udp_hdr_decode(const uint8_t *buf, size_t len, bool counters64,
		   int64_t *sent_us, uint64_t *seq)
{
	size_t need = counters64 ? UDP_HDR_LEN64 : UDP_HDR_LEN32;
	uint64_t s;

	if (!buf || len < need)
		return -EBADMSG;
	if (counters64)
		s = ((uint64_t)get_be32(buf + 8) << 32) | get_be32(buf + 12);
	else
		s = get_be32(buf + 8);
	*sent_us = (int64_t)get_be32(buf) * US_PER_S + get_be32(buf + 4);
	*seq = s;
	return 0;
}

void udp_rx_init(struct udp_rx *rx)
{
	memset(rx, 0, sizeof(*rx));
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static bool seen_test(const struct udp_rx *rx, uint64_t seq)
{
	uint64_t bit = seq % UDP_DUP_WINDOW;

	return (rx->seen[bit / 64] >> (bit % 64)) & 1;
}

static void seen_set(struct udp_rx *rx, uint64_t seq)
{
	uint64_t bit = seq % UDP_DUP_WINDOW;

	rx->seen[bit / 64] |= (uint64_t)1 << (bit % 64);
}

static void seen_clear(struct udp_rx *rx, uint64_t seq)
{
	uint64_t bit = seq % UDP_DUP_WINDOW;

	rx->seen[bit / 64] &= ~((uint64_t)1 << (bit % 64));
}

/*
 * The window covers max_seq - UDP_DUP_WINDOW + 1 .. max_seq. Moving
 * max_seq forward to seq forgets the sequence numbers that leave it: their
 * bits are reused by max_seq + 1 .. seq, which have not been seen.
 */
static void seen_advance(struct udp_rx *rx, uint64_t seq)
{
	uint64_t step = seq - rx->max_seq; /* > 0 */
	uint64_t i;

	if (step >= UDP_DUP_WINDOW) {
		memset(rx->seen, 0, sizeof(rx->seen));
		return;
	}
	for (i = 1; i <= step; i++)
		seen_clear(rx, rx->max_seq + i);
}

static void rx_jitter(struct udp_rx *rx, int64_t sent_us, int64_t arrival_us)
{
	/* in whole microseconds, so that equal transits give a difference
	 * of exactly 0 whatever the FPU's precision (x87 keeps more than a
	 * double in its registers); in double when the difference of two
	 * hostile int64 would overflow */
	int64_t diff;
	double transit, d;

	if (__builtin_sub_overflow(arrival_us, sent_us, &diff))
		transit = (double)arrival_us - (double)sent_us;
	else
		transit = (double)diff;
	if (!rx->have_transit) {
		rx->prev_transit_us = transit;
		rx->have_transit = true;
		return;
	}
	d = fabs(transit - rx->prev_transit_us) / 1e6;
	rx->prev_transit_us = transit;
	rx->jitter_s += (d - rx->jitter_s) / 16.0;
}

/*
 * iperf3's accounting (iperf_udp_recv) with duplicates told apart:
 * - seq > max_seq: the gap below it is lost, max_seq moves up;
 * - seq seen before within the window: dup, nothing else changes;
 * - otherwise below max_seq: ooo, and one lost is taken back. A seq too old
 *   for the window (below max_seq - UDP_DUP_WINDOW + 1) cannot be checked
 *   and is counted as ooo, as iperf3 would.
 * seq 0 is not a valid sequence number (iperf3 starts at 1) and max_seq 0
 * means "none yet": a datagram with seq 0 counts in packets, bytes and
 * jitter and as ooo (iperf3 sees it below the expected 1 too), but never
 * moves max_seq, lost or the window.
 * Counters saturate at UINT64_MAX instead of wrapping.
 */
void udp_rx_packet(struct udp_rx *rx, uint64_t seq, int64_t sent_us,
		   int64_t arrival_us, size_t bytes)
{
	rx->packets = sat_add(rx->packets, 1);
	rx->bytes = sat_add(rx->bytes, bytes);
	rx_jitter(rx, sent_us, arrival_us);

	if (seq == 0) {
		rx->ooo = sat_add(rx->ooo, 1);
		return;
	}
	if (seq > rx->max_seq) {
		rx->lost = sat_add(rx->lost, seq - rx->max_seq - 1);
		seen_advance(rx, seq);
		rx->max_seq = seq;
		seen_set(rx, seq);
		return;
	}
	if (rx->max_seq - seq < UDP_DUP_WINDOW) {
		if (seen_test(rx, seq)) {
			rx->dup = sat_add(rx->dup, 1);
			return;
		}
		seen_set(rx, seq);
	}
	rx->ooo = sat_add(rx->ooo, 1);
	if (rx->lost > 0)
		rx->lost--;
}

/*
 * The pacer lets a datagram go once the bytes sent with it would not make
 * the average since t0 exceed the rate: the send of the n-th byte is due at
 * t0 + n * 8e6 / rate_bps microseconds (rounded up). So even the first
 * datagram waits its own time at the rate. At 100 Gbit/s for 24 h, bytes
 * * 8e6 is about 8.6e21, beyond 64 bits: the quotient by the rate is
 * taken first, and only the remainder (below the rate) is multiplied.
 * 64-bit arithmetic only, for 32-bit CPUs without a 128-bit type, and
 * exact: the same microsecond as a 128-bit computation for every input.
 */

/* ceil(a * b / d) for a < d, where a * b may pass 64 bits: the product
 * in two halves, then long division (a rate above 2.3 Tbit/s only).
 * The quotient is below b. */
static uint64_t muldiv_ceil(uint64_t a, uint64_t b, uint64_t d)
{
	uint64_t a0 = a & 0xffffffffu, a1 = a >> 32;
	uint64_t b0 = b & 0xffffffffu, b1 = b >> 32;
	uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
	uint64_t hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
	uint64_t lo = (mid << 32) | (p00 & 0xffffffffu);
	uint64_t r = hi, q = 0, top;
	int i;

	/* hi < d because a < d: the quotient fits in 64 bits */
	for (i = 63; i >= 0; i--) {
		top = r >> 63;
		r = (r << 1) | ((lo >> i) & 1);
		q <<= 1;
		if (top || r >= d) {
			r -= d;
			q |= 1;
		}
	}
	return q + (r != 0);
}

/* ceil(bytes * 8e6 / rate) microseconds; false when beyond 64 bits. */
static bool pacer_us(uint64_t bytes, uint64_t rate, uint64_t *us)
{
	const uint64_t k = 8 * US_PER_S;
	uint64_t q = bytes / rate, rem = bytes % rate, part;

	if (rem <= UINT64_MAX / k) /* any rate below 2.3 Tbit/s */
		part = rem * k / rate + (rem * k % rate != 0);
	else
		part = muldiv_ceil(rem, k, rate);
	if (q > UINT64_MAX / k || q * k > UINT64_MAX - part)
		return false;
	*us = q * k + part;
	return true;
}

/* Where now is against the due time of byte number bytes: *late > 0
 * when past it, else *wait until it (both saturated at UINT64_MAX; the
 * due time itself may lie beyond int64 while the wait does not). */
static void pacer_when(const struct udp_pacer *p, uint64_t bytes,
		       int64_t now_us, uint64_t *late, uint64_t *wait)
{
	uint64_t us, gap;

	*late = *wait = 0;
	if (!pacer_us(bytes, p->rate_bps, &us)) {
		*wait = UINT64_MAX;
		return;
	}
	/* (as unsigned: each difference fits, for every t0 and now) */
	if (now_us >= p->t0_us) {
		gap = (uint64_t)now_us - (uint64_t)p->t0_us; /* elapsed */
		if (gap > us)
			*late = gap - us;
		else
			*wait = us - gap;
	} else {
		gap = (uint64_t)p->t0_us - (uint64_t)now_us; /* before t0 */
		*wait = us > UINT64_MAX - gap ? UINT64_MAX : us + gap;
	}
}

/* bytes + len, saturated */
static uint64_t pacer_total(const struct udp_pacer *p, size_t len)
{
	return p->bytes > UINT64_MAX - len ? UINT64_MAX : p->bytes + len;
}

/*
 * When the next len bytes were due more than burst_us before now, the
 * sender has stalled: move t0 forward so that they were due exactly
 * burst_us ago. Back to back then go at most burst_us worth of datagrams
 * plus the one that was due; bytes stays the total accounted. Lateness up
 * to burst_us (timer slop) is still made up, so the average holds even
 * when one datagram takes longer than burst_us at the rate.
 */
static void pacer_catch_up(struct udp_pacer *p, int64_t now_us, size_t len)
{
	uint64_t burst = p->burst_us < 0 ? 0 : (uint64_t)p->burst_us, late;
	uint64_t wait;

	pacer_when(p, pacer_total(p, len), now_us, &late, &wait);
	/* (t0 + late - burst stays at most now) */
	if (late > burst)
		p->t0_us = (int64_t)((uint64_t)p->t0_us + (late - burst));
}

void udp_pacer_init(struct udp_pacer *p, uint64_t rate_bps, int64_t now_us)
{
	p->rate_bps = rate_bps;
	p->t0_us = now_us;
	p->bytes = 0;
	p->burst_us = PACER_BURST_US;
}

int64_t udp_pacer_wait_us(struct udp_pacer *p, int64_t now_us, size_t len)
{
	uint64_t late, wait;

	if (p->rate_bps == 0)
		return 0;
	pacer_catch_up(p, now_us, len);
	pacer_when(p, pacer_total(p, len), now_us, &late, &wait);
	return wait > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)wait;
}

void udp_pacer_sent(struct udp_pacer *p, int64_t now_us, size_t len)
{
	if (p->rate_bps != 0)
		pacer_catch_up(p, now_us, len);
	p->bytes = sat_add(p->bytes, len);
}
