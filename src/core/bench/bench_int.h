/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_BENCH_INT_H
#define LINERATE_BENCH_INT_H

/*
 * The bench engine's internal header. Only the files of src/core/bench/
 * include it (scripts/check-includes.sh checks); everyone else sees
 * ../bench.h. Helpers shared between the files carry the prefix bench__.
 *
 *   run.c         a run's streams: set up, started, stopped, freed
 *   stream.c      the stream threads: TCP (plain, sealed, zero-copy) and
 *                 UDP senders and receivers
 *   sample.c      interval samples, each stream's end figures, results
 *   loop.c        what both clients share: the link facts, the interval
 *                 clock, the dial, the start, the test loop and its tail
 *   client.c      a test against a linerate server
 *   ip3_client.c  a test against a stock iperf3 server
 *
 * Threads: the caller of bench_client_run / ip3_client_run (or a server's
 * test thread) is the run's control thread; bench_run_start starts one
 * thread per stream, bench_run_stop joins them. The counters of a stream
 * are atomics; callbacks are called from the control thread only.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/time.h>

#include "bench.h"
#include "net.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

/* Data sockets time out blocking calls this often to notice an abort. */
#define STREAM_POLL_MS	   250
#define CTRL_TIMEOUT_MS	   10000
#define RESULTS_TIMEOUT_MS 10000
#define STOP_GRACE_MS	   5000
/* UDP receivers wake this often to notice the stop and the silence */
#define UDP_POLL_MS 50
/* datagrams per recvmmsg */
#define UDP_BATCH 32
/* longest single sleep of a paced sender, so stop is seen in time */
#define PACE_STEP_US 20000
/* a control message with room for its record header and tag */
#define BUF_LEN (PROTO_MAX_BODY + PROTO_HDR_LEN + CONN_REC_HDR + CRYPTO_TAG_LEN)

/* run.c */
/* A stream thread waits here until every stream is ready to start. */
void bench__gate_wait(struct bench_run *run);

/* stream.c */
void *bench__stream_main(void *arg);
size_t bench__udp_hdr_len(const struct bench_run *run);

/* sample.c */
/* The peer's figures of a stream (from its results) as a side. */
void bench__side_fill(struct bench_side *d,
		      const struct proto_stream_result *r);

/* loop.c */
uint64_t bench__tv_us(const struct timeval *tv);

/* Socket buffers, MSS, timestamps, the local link and its TCP ceiling
 * (o->link_speed_bps overrides the link's speed) and the congestion
 * control of the first stream, into res. After bench_run_start. */
void bench_fill_link(const struct bench_opts *o, struct bench_run *run,
		     struct bench_result *res);

/* A client's interval clock. */
struct bench_client_clock {
	struct bench_interval *iv; /* iv->s sized nstreams */
	double iv_start;	   /* seconds since TEST_START */
	int64_t next_iv;	   /* ms (net_now_ms) of the next report */
	int64_t tick;		   /* ms between reports */
	int64_t end_ms;		   /* the duration's end (-t) */
	int64_t hard_end;	   /* the server's limit: truncated there */
};

/* One turn of a client's test loop at now_ms: the end of the omitted
 * period and the interval clock; intervals reported through cb when
 * o->interval_ms. */
void bench_client_tick(struct bench_run *run, const struct bench_opts *o,
		       const struct bench_callbacks *cb,
		       struct bench_client_clock *clk, int64_t now_ms);

/* When the client's loop must wake: the next report, the end of the
 * omitted period, the test's end_ms (0 = none) or hard_end. */
int64_t bench_client_wake(const struct bench_run *run,
			  const struct bench_client_clock *clk, int64_t end_ms,
			  int64_t hard_end);

/* After a client loop's wait (woken: the stream threads' counter was
 * readable): drain the counter, run bench_client_tick at *now_ms (set
 * here) and say whether the test is over: a negative error from a failed
 * stream (err filled), 1 when the duration is up (end_ms) or hard_end
 * passed (*truncated set), 0 to go on. An end by byte count is the
 * caller's: it differs by peer. */
int bench_client_turn(struct bench_run *run, const struct bench_opts *o,
		      const struct bench_callbacks *cb,
		      struct bench_client_clock *clk, bool woken,
		      int64_t end_ms, int64_t hard_end, int64_t *now_ms,
		      bool *truncated, struct lr_err *err);

/* Where a client connects, and what it measures from. */
struct bench__dial {
	struct net_addr addr, bindaddr, *bindp;
	char where[NET_ADDRSTR];
	struct rusage ru0;
	int64_t t_wall0; /* net_now_us */
};

/* Resolve o->host (and o->bind_addr), fill res's peer, start time and
 * request, say connecting, and connect the control connection: its fd,
 * or -errno with err set. */
int bench__client_dial(const struct bench_opts *o,
		       const struct bench_callbacks *cb,
		       struct bench_result *res, struct bench__dial *d,
		       struct lr_err *err);

/* The streams are connected: the result tables (res->streams, iv->s),
 * the run's threads, the link facts, then the started callback. */
int bench__client_start(struct bench_run *run, const struct bench_opts *o,
			const struct bench_callbacks *cb,
			struct bench_result *res, struct bench_interval *iv,
			struct lr_err *err);

/* The clock of a test that just started; max_ms is the longest test the
 * server takes (past it the test is truncated). */
void bench__client_clock_init(struct bench_client_clock *clk,
			      const struct bench_run *run,
			      const struct bench_opts *o,
			      struct bench_interval *iv, uint64_t max_ms);

/* What differs between the clients in their test loop. */
struct bench__client_ops {
	/* The control connection became readable during the test: read
	 * what came and return the error that ends the test (never 0). */
	int (*ctrl_readable)(void *ctx, struct lr_err *err);
	/* After each turn: 1 when the test is over (its bytes are done),
	 * a negative error, or 0 to go on. May be NULL. */
	int (*after_turn)(void *ctx, int64_t now_ms, struct lr_err *err);
	int64_t max_wait_ms; /* poll at most this long (0: no bound) */
};

/* The test, on the control connection ctrl: intervals until the time or
 * the bytes run out, or the server's limit (res->truncated). 0 or an
 * error with err set. */
int bench__client_loop(struct bench_run *run, const struct bench_opts *o,
		       const struct bench_callbacks *cb,
		       struct bench_client_clock *clk, int ctrl,
		       struct bench_result *res,
		       const struct bench__client_ops *ops, void *ctx,
		       struct lr_err *err);

/* After the loop: the last part of an interval, when it lasted 5% of one
 * or more; with need_data only when data came in it; fix (may be NULL)
 * adjusts it first. */
void bench__client_tail(struct bench_run *run, const struct bench_opts *o,
			const struct bench_callbacks *cb,
			struct bench_client_clock *clk, bool need_data,
			void (*fix)(const struct bench_run *run,
				    struct bench_interval *iv));

#endif
