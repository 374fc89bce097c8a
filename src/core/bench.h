/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_BENCH_H
#define LINERATE_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cipher.h"
#include "err.h"
#include "net.h"
#include "proto.h"
#include "udp.h"

/*
 * The throughput test engine's public face: a client's options, the
 * results and interval figures, the callbacks through which it reports,
 * and the two client entries (a linerate and an iperf3 server). The run
 * that drives one test's data streams on one side, client or server, is
 * in bench/bench_int.h, shared with src/core/server/ alone
 * (docs/ARCHITECTURE.md).
 */

/* What the command line checks and chooses, by the engine's names. */
#define BENCH_MAX_STREAMS      PROTO_MAX_STREAMS /* per direction */
#define BENCH_MAX_DURATION_MS  PROTO_MAX_DURATION_MS
#define BENCH_MAX_BLKSIZE      PROTO_MAX_BLKSIZE
#define BENCH_MAX_WINDOW       PROTO_MAX_WINDOW
#define BENCH_MODE_FORWARD     PROTO_MODE_FORWARD
#define BENCH_MODE_REVERSE     PROTO_MODE_REVERSE
#define BENCH_MODE_BIDIR       PROTO_MODE_BIDIR
#define BENCH_DIR_C2S	       PROTO_DIR_C2S /* a stream's direction */
#define BENCH_DIR_S2C	       PROTO_DIR_S2C
#define BENCH_ZC_SENDFILE      PROTO_ZC_SENDFILE
#define BENCH_ZC_MSG	       PROTO_ZC_MSG
#define BENCH_UDP_HDR_LEN32    UDP_HDR_LEN32
#define BENCH_UDP_HDR_LEN64    UDP_HDR_LEN64
#define BENCH_UDP_DEFAULT_LEN  UDP_DEFAULT_LEN
#define BENCH_UDP_MAX_LEN      UDP_MAX_LEN
#define BENCH_UDP_DEFAULT_RATE UDP_DEFAULT_RATE
/* iperf3's limit on streams (ip3.h says why) */
#define BENCH_IP3_MAX_STREAMS 128u
/* 512 KiB writes: 1.5x iperf3's 128 KiB rate between namespaces at
 * 0.7x the CPU per GB (docs/BENCHMARKS.md) */
#define BENCH_DEFAULT_BLKSIZE (512u << 10)
/* Bound on the sum of per-stream buffers of one test, either side. */
#define BENCH_MAX_TEST_MEM (256ull << 20)

/* Bytes per read on receiving streams under req. */
size_t bench_recv_buf(const struct proto_test_request *req);
/* Number of data connections req needs. */
unsigned bench_conn_count(const struct proto_test_request *req);

/* Client options (what `linerate bench` parsed). */
struct bench_opts {
	const char *host;
	uint16_t port;
	int family;	       /* AF_UNSPEC, AF_INET, AF_INET6 */
	const char *bind_addr; /* -B, may be NULL */
	/* the link facts: the route to this host when the streams go
	 * through a local relay (ssh); NULL: the first stream's own */
	const char *link_host;
	uint16_t cport; /* --cport: stream i from port cport + i */
	struct proto_test_request req;
	uint64_t interval_ms; /* 0 = no interval reports */
	int connect_timeout_ms;
	uint64_t link_speed_bps; /* --link-speed; 0 = read from /sys */
	const uint8_t *psk;	 /* the token's key; NULL = no token */
	uint8_t cipher_wish;	 /* enum crypto_cipher or SESSION_CIPHER_AUTO */
};

/* One stream's figures for one interval. */
struct bench_iv_stream {
	unsigned idx;
	uint8_t dir;
	bool sender;
	uint64_t bytes;
	uint32_t retrans;
	uint32_t cwnd;
	uint32_t snd_wnd; /* the peer's advertised window, bytes */
	/* seconds since TEST_START when this stream's part ends: the
	 * interval's end, but in the last interval the end of this
	 * stream's period (a sender's deadline, a receiver's last byte) */
	double end;
	uint32_t rtt_us, rttvar_us, pmtu;
	bool has_tcp; /* retrans/cwnd meaningful (sending side) */
	/* UDP (req.udp): datagrams this interval, as iperf3 counts them:
	 * sent, or on the receiving side accounted for (received without
	 * duplicates, plus lost: the advance of the highest sequence
	 * number); the receiving side also has lost / out of order /
	 * duplicates this interval and the jitter estimate at its end */
	uint64_t packets, lost, ooo, dup;
	double jitter_ms;
};

struct bench_interval {
	double start, end; /* seconds since TEST_START */
	bool omitted;
	unsigned n;
	struct bench_iv_stream *s;
};

/* One side's view of one stream at the end. */
struct bench_side {
	uint64_t bytes;
	double seconds;
	uint32_t retrans;
	uint32_t max_cwnd;
	uint32_t max_snd_wnd;
	uint32_t min_rtt, mean_rtt, max_rtt;
	bool has_tcp;
	/* UDP: datagrams as iperf3 counts them: sent, or on the receiving
	 * side accounted for (received without duplicates, plus lost:
	 * iperf3's receiver "packets", its highest sequence number); the
	 * receiving side also lost ("errors"), out of order, duplicates and
	 * jitter at the end */
	uint64_t packets, lost, ooo, dup;
	double jitter_ms;
};

struct bench_stream_result {
	unsigned idx;
	uint8_t dir;
	bool local_sender; /* this side sends on it */
	struct net_addr local, peer;
	struct bench_side sender, receiver;
	int local_error;
};

struct bench_result {
	struct proto_test_request req;
	/* the test's name on the wire, as iperf3's start.cookie: iperf3's
	 * cookie, or linerate's test id in hex */
	char cookie[40];
	char remote_host[NET_ADDRSTR];
	uint16_t remote_port;
	char server_software[PROTO_MAX_NAME + 1];
	unsigned nstreams;
	struct bench_stream_result *streams;
	struct proto_cpu local_cpu, remote_cpu;
	char local_cc[PROTO_CC_LEN], remote_cc[PROTO_CC_LEN];
	uint16_t overlap;   /* other tests on the server during ours */
	double duration;    /* seconds of the test after the omitted part */
	bool truncated;	    /* stopped at the server's duration limit */
	bool authenticated; /* token handshake done */
	enum crypto_cipher cipher; /* of the data streams */
	int64_t start_time;	   /* wall clock, seconds since the epoch */
	uint32_t sndbuf, rcvbuf, mss;
	bool ipv6, timestamps;
	/* link of the first stream's local address */
	bool link_known;
	char link_if[32];
	uint64_t link_speed_bps;
	unsigned link_mtu;
	bool link_wireless, link_virtual;
	double link_ceiling_bps;
	/* iperf3 peers (issue 6) */
	bool iperf3;	     /* the server spoke iperf3's protocol */
	char title[128];     /* --title: iperf3 prefixes its lines with it */
	char *server_output; /* --get-server-output: the server's text,
				malloc'd, freed by bench_result_free */
	bool server_output_json; /* it is the JSON of a server run with -J */
};

/* Callbacks through which the core reports; the CLI formats. */
struct bench_callbacks {
	void *ctx;
	/* connecting: before the first connection; may be NULL */
	void (*connecting)(void *ctx, const char *host, uint16_t port);
	/* streams connected, the test is about to start: res->streams
	 * has each stream's idx, dir, local_sender and addresses */
	void (*started)(void *ctx, const struct bench_result *res);
	void (*interval)(void *ctx, const struct bench_interval *iv);
	void (*finished)(void *ctx, const struct bench_result *res);
};

/*
 * Run one test as a client against a linerate server. Blocks for the
 * test's duration; reports through cb. On success *res is filled (its
 * streams array allocated; free with bench_result_free).
 */
int bench_client_run(const struct bench_opts *o,
		     const struct bench_callbacks *cb, struct bench_result *res,
		     struct lr_err *err);
void bench_result_free(struct bench_result *res);

/*
 * `linerate bench --iperf3 HOST`: one test against a stock iperf3 server
 * (issue 6), in iperf3's client sequence: cookie, parameters, data
 * streams, TEST_START / TEST_RUNNING, the test on linerate's engine,
 * TEST_END, the results exchange, IPERF_DONE. bench/ip3_client.c.
 */
struct ip3_client_opts {
	const char *title;	/* -T: sent to the server, kept in res; NULL */
	bool get_server_output; /* ask for the server's report text */
	bool counters64;	/* UDP: 64-bit sequence numbers */
};

/*
 * Run one test against the iperf3 server at o->host / o->port with the
 * options of o (o->psk must be NULL: iperf3 has no token). Blocks for
 * the test's duration and reports through cb as bench_client_run does.
 * On success *res is filled (res->iperf3 set; free with
 * bench_result_free); on failure err says why (a busy server is
 * LR_EBUSY, an error the server reported LR_EPEER) and *res holds
 * nothing to free.
 */
int ip3_client_run(const struct bench_opts *o, const struct ip3_client_opts *x,
		   const struct bench_callbacks *cb, struct bench_result *res,
		   struct lr_err *err);

#endif
