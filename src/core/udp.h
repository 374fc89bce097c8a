/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_UDP_H
#define LINERATE_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * UDP tests: the datagram header, the receiver's figures and the pacer
 * (issue 6). The header is iperf3's, so that the same code speaks to stock
 * iperf3 peers and to linerate ones: seconds (u32), microseconds (u32) of
 * the sender's clock, then the sequence number, u32 or (iperf3's
 * --udp-counters-64bit) u64, all big-endian. Sequence numbers start at 1.
 * No I/O here: the callers own the sockets and the clock.
 */

#define UDP_HDR_LEN32	  12u
#define UDP_HDR_LEN64	  16u
#define UDP_DEFAULT_LEN	  1460u	      /* iperf3's default datagram payload */
#define UDP_MAX_LEN	  65507u      /* largest IPv4 UDP payload */
#define UDP_DEFAULT_RATE  1000000u    /* bits/s: iperf3's UDP default */
#define UDP_CONNECT_MSG	  0x36373839u /* iperf3: client -> server */
#define UDP_CONNECT_REPLY 0x39383736u /* iperf3: server -> client */
/* recent sequence numbers remembered to tell duplicates from late ones */
#define UDP_DUP_WINDOW 4096u

/* Write the header for seq at time now_us (microseconds, any epoch the
 * receiver shares for jitter; iperf3 uses the wall clock) into buf.
 * Seconds go modulo 2^32, microseconds in [0, 999999] (floor division).
 * Returns the header length, or -EINVAL when len is below it. */
int udp_hdr_encode(uint8_t *buf, size_t len, int64_t now_us, uint64_t seq,
		   bool counters64);

/* Read a header: -EBADMSG when len is below the header length. */
int udp_hdr_decode(const uint8_t *buf, size_t len, bool counters64,
		   int64_t *sent_us, uint64_t *seq);

/* The receiver's figures for one stream. */
struct udp_rx {
	uint64_t packets; /* datagrams received, duplicates included */
	uint64_t bytes;	  /* their payload bytes */
	uint64_t lost;	  /* missing below the highest seq (iperf3's
			      "errors": late arrivals are taken back) */
	uint64_t ooo;	  /* arrived after a higher seq (not duplicates) */
	uint64_t dup;	  /* seen before (within UDP_DUP_WINDOW) */
	uint64_t max_seq; /* highest seq seen; 0 = none yet */
	double jitter_s;  /* RFC 1889: J += (|D| - J) / 16 */
	double prev_transit_us; /* a whole number of microseconds */
	bool have_transit;
	uint64_t seen[UDP_DUP_WINDOW / 64]; /* bit per seq, mod window */
};

void udp_rx_init(struct udp_rx *rx);
/* Account one datagram: its seq and send time from the header, its
 * arrival time on the receiver's clock, its payload length.
 * seq 0 (invalid: iperf3 starts at 1) counts in packets, bytes, jitter and
 * ooo, and never changes max_seq, lost or the duplicate window. A seq below
 * the window (max_seq - UDP_DUP_WINDOW + 1) counts as ooo and takes back
 * one lost, as iperf3 does. Counters saturate; any seq is safe. */
void udp_rx_packet(struct udp_rx *rx, uint64_t seq, int64_t sent_us,
		   int64_t arrival_us, size_t bytes);

/*
 * A pacer: rate_bps bits/s averaged from start, bursts bounded so that a
 * late sender does not flood to catch up after a stall of more than
 * burst_us. rate_bps 0 means no pacing.
 */
struct udp_pacer {
	uint64_t rate_bps;
	int64_t t0_us;
	uint64_t bytes; /* accounted so far */
	int64_t burst_us;
};

/* burst_us defaults to 10000 (10 ms); the caller may change it after. */
void udp_pacer_init(struct udp_pacer *p, uint64_t rate_bps, int64_t now_us);
/* Microseconds to wait before sending len more bytes at now_us (0 = send
 * now): the wait makes bytes + len, sent at now_us + wait, average at
 * most rate_bps since t0, so the first datagram too waits len * 8 / rate.
 * After a stall it moves t0 forward: at most burst_us worth plus the one
 * datagram due go back to back. Never negative; INT64_MAX at most. */
int64_t udp_pacer_wait_us(struct udp_pacer *p, int64_t now_us, size_t len);
/* Account len bytes sent (applying the same stall bound first). */
void udp_pacer_sent(struct udp_pacer *p, int64_t now_us, size_t len);

#endif
