// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for udp.[ch]: the iperf3 datagram header and the
 * receiver's figures, both fed by a peer's datagrams.
 *
 * The input is read twice, once as 32-bit-counter records and once as
 * 64-bit ones. A record is a datagram header (12 or 16 bytes) followed by
 * 4 bytes: a signed big-endian offset of the arrival time from the send
 * time (microseconds), whose low 16 bits are also the payload length. Each
 * header goes through udp_hdr_decode and then udp_rx_packet; a trailing
 * partial record must be refused. Each record also drives a pacer (rate =
 * seq, now = arrival) to catch overflow there. Invariants checked, beyond
 * "no sanitizer report":
 *  - decode accepts exactly the buffers at least a header long;
 *  - a header whose microseconds are below 1e6 re-encodes to its bytes;
 *  - packets and bytes are the sums of what was fed;
 *  - dup + ooo <= packets; lost < max_seq unless both are 0;
 *  - max_seq is the highest nonzero seq fed, and its bit is set;
 *  - jitter is finite and >= 0;
 *  - lost, ooo and dup equal those of a naive model that remembers every
 *    seq (up to MODEL_CAP records);
 *  - the pacer never asks for a negative wait.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "udp.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MODEL_CAP 4096

/*
 * The same accounting done the slow way, from the list of every seq fed
 * before: a seq is a duplicate when it was fed before and is within
 * UDP_DUP_WINDOW of the highest.
 */
struct model {
	uint64_t seqs[MODEL_CAP];
	size_t n;
	uint64_t max_seq, lost, ooo, dup;
};

static void model_packet(struct model *m, uint64_t seq)
{
	bool seen = false;
	size_t i;

	for (i = 0; i < m->n && !seen; i++)
		seen = m->seqs[i] == seq;
	if (m->n < MODEL_CAP)
		m->seqs[m->n++] = seq;
	if (seq == 0) {
		m->ooo++;
	} else if (seq > m->max_seq) {
		uint64_t gap = seq - m->max_seq - 1;

		m->lost = m->lost > UINT64_MAX - gap ? UINT64_MAX
						     : m->lost + gap;
		m->max_seq = seq;
	} else if (seen && m->max_seq - seq < UDP_DUP_WINDOW) {
		m->dup++;
	} else {
		m->ooo++;
		if (m->lost)
			m->lost--;
	}
}

static uint32_t rd32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}

static void check_rx(const struct udp_rx *rx, uint64_t packets, uint64_t bytes,
		     uint64_t max_seq)
{
	uint64_t bit = rx->max_seq % UDP_DUP_WINDOW;

	CHECK(rx->packets == packets);
	CHECK(rx->bytes == bytes);
	CHECK(rx->dup <= rx->packets);
	CHECK(rx->ooo <= rx->packets);
	CHECK(rx->dup + rx->ooo <= rx->packets);
	CHECK(rx->max_seq == max_seq);
	CHECK(rx->lost < rx->max_seq || (rx->lost == 0 && rx->max_seq == 0));
	if (rx->max_seq)
		CHECK((rx->seen[bit / 64] >> (bit % 64)) & 1);
	CHECK(isfinite(rx->jitter_s));
	CHECK(rx->jitter_s >= 0.0);
}

static void run(const uint8_t *data, size_t size, bool counters64)
{
	size_t hlen = counters64 ? UDP_HDR_LEN64 : UDP_HDR_LEN32;
	size_t rlen = hlen + 4;
	struct udp_rx rx;
	struct udp_pacer pacer;
	struct model *model;
	uint64_t packets = 0, bytes = 0, max_seq = 0;
	uint8_t enc[UDP_HDR_LEN64];
	uint8_t *hdr;
	size_t off;

	udp_rx_init(&rx);
	udp_pacer_init(&pacer, 0, 0);
	/* exactly a header's size: a read past it is an ASan report */
	hdr = malloc(hlen);
	model = calloc(1, sizeof(*model));
	if (!hdr || !model)
		goto out_free;
	for (off = 0; size - off >= rlen; off += rlen) {
		int64_t sent_us, arrival_us, w;
		uint64_t seq;
		int32_t delta = (int32_t)rd32(data + off + hlen);
		size_t n = (uint16_t)delta;

		memcpy(hdr, data + off, hlen);
		CHECK(udp_hdr_decode(hdr, hlen - 1, counters64, &sent_us,
				     &seq) == -EBADMSG);
		CHECK(udp_hdr_decode(hdr, hlen, counters64, &sent_us, &seq) ==
		      0);
		CHECK(sent_us >= 0);
		if (rd32(hdr + 4) < 1000000) {
			CHECK(udp_hdr_encode(enc, sizeof(enc), sent_us, seq,
					     counters64) == (int)hlen);
			CHECK(memcmp(enc, hdr, hlen) == 0);
		}

		arrival_us = sent_us + delta;
		udp_rx_packet(&rx, seq, sent_us, arrival_us, n);
		packets++;
		bytes += n;
		if (seq > max_seq)
			max_seq = seq;
		check_rx(&rx, packets, bytes, max_seq);
		if (model->n < MODEL_CAP) {
			model_packet(model, seq);
			CHECK(rx.lost == model->lost);
			CHECK(rx.ooo == model->ooo);
			CHECK(rx.dup == model->dup);
		}

		if (!pacer.rate_bps || seq % 8 == 0)
			udp_pacer_init(&pacer, seq, sent_us);
		w = udp_pacer_wait_us(&pacer, arrival_us, n);
		CHECK(w >= 0);
		udp_pacer_sent(&pacer, arrival_us, n);
	}
	if (size - off > 0) {
		int64_t t;
		uint64_t s;
		size_t rest = size - off < hlen ? size - off : hlen;

		memcpy(hdr, data + off, rest);
		CHECK(udp_hdr_decode(hdr, rest, counters64, &t, &s) ==
		      (rest < hlen ? -EBADMSG : 0));
	}
out_free:
	free(model);
	free(hdr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run(data, size, false);
	run(data, size, true);
	return 0;
}
