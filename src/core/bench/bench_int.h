/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_BENCH_INT_H
#define LINERATE_BENCH_INT_H

/*
 * The bench engine's internal header. The files of src/core/bench/
 * include it, and those of src/core/server/, whose tests drive a run too:
 * the one exception to "internal headers stay in their folders"
 * (docs/ARCHITECTURE.md; scripts/check-includes.sh checks). Everyone else
 * sees ../bench.h. Its first part is the run, which both sides use; the
 * rest is the clients'. Helpers shared between the files carry the prefix
 * bench__.
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
 * test thread) is the run's control thread; bench_run_ready starts one
 * thread per stream, bench_run_go lets them go, bench_run_stop joins them. The counters of a stream
 * are atomics; callbacks are called from the control thread only.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/time.h>

#include "bench.h"
#include "conn.h"
#include "net.h"
#include "udp.h"

/* ---- the run: one test's data streams on one side (client or server):
 * a thread per stream, byte counters, TCP_INFO sampling, the omitted
 * period, the graceful stop that lets every byte in flight reach the
 * receiver, and the per-stream results ---- */

#define BENCH_RECV_BUF	    (1u << 20)
#define BENCH_RECV_BUF_MANY (256u << 10) /* above 16 connections */
#define BENCH_RCVLOWAT	    (512u << 10)
#define BENCH_MAX_CONNS	    (2 * PROTO_MAX_STREAMS)
/* Rolling TCP figures of one stream. */
struct bench_tcp_acc {
	uint32_t retrans_base; /* total_retrans at start of totals */
	uint32_t retrans_last;
	uint32_t max_cwnd;
	uint32_t max_snd_wnd;
	uint32_t min_rtt, max_rtt;
	uint64_t rtt_sum;
	uint32_t rtt_n;
};

struct bench_run;

/* UDP counters of one stream at a moment (interval start, omit end). */
struct bench_udp_mark {
	uint64_t sent; /* datagrams sent (sending side) */
	uint64_t packets, lost, ooo, dup, bytes; /* receiving side */
};

/* Silence after the stop that ends a UDP receiver (it has no EOF). */
#define BENCH_UDP_SILENCE_MS 250
/* Receive buffer of UDP receivers when req.window is not given. */
#define BENCH_UDP_RCVBUF (4u << 20)

struct bench_stream {
	struct bench_run *run;
	unsigned idx; /* unique in the test */
	uint8_t dir;  /* enum proto_dir */
	bool sender;  /* this side sends on it */
	int fd;
	struct conn conn; /* records on fd, once the handshake is done */
	pthread_t thread;
	bool started;
	/* the thread's buffer, made (a sender's filled with random bytes)
	 * when the run is set up, not when the clock is about to start:
	 * cap bytes and room for a record's tag */
	uint8_t *buf;
	size_t cap;
	_Atomic uint64_t bytes;	 /* moved so far */
	_Atomic int64_t last_us; /* time of the last byte moved */
	_Atomic bool done;
	int error;	     /* 0 or -errno, written by the thread */
	const char *why;     /* error's words beyond lr_strerror's, or NULL */
	uint64_t bytes_omit; /* bytes when the omitted period ended */
	uint64_t iv_bytes;   /* bytes at the start of the interval */
	uint32_t iv_retrans;
	struct bench_tcp_acc tcp;
	uint64_t cpu_user_us, cpu_sys_us; /* the thread's, at exit */
	struct net_addr local, peer;
	/* UDP (run->req.udp); read them with bench_stream_udp() */
	pthread_mutex_t udp_lock; /* guards udp */
	bool udp_lock_init;
	struct udp_rx udp;		/* receiving side's figures */
	_Atomic uint64_t udp_sent;	/* datagrams sent */
	_Atomic uint64_t udp_bad;	/* received, shorter than the header */
	_Atomic uint64_t udp_send_err;	/* sends refused (ECONNREFUSED,
					  ENOBUFS): not counted, not fatal */
	struct bench_udp_mark udp_iv;	/* at the start of the interval */
	struct bench_udp_mark udp_omit; /* when the omitted period ended */
};

struct bench_run {
	struct proto_test_request req;
	bool is_client;
	unsigned nstreams;
	struct bench_stream *streams;
	_Atomic bool stop;  /* senders: finish and shut down writing */
	int64_t stop_us;    /* when stop was first asked (bench_run_halt) */
	_Atomic bool abort; /* everyone: give up now */
	_Atomic uint64_t budget[2]; /* bytes left per direction (-n) */
	int evfd;		    /* written when a stream thread ends */
	int64_t t0_us;		    /* TEST_START */
	int64_t omit_end_us;
	bool omit_done;
	int memfd; /* payload for sendfile (-Z) */
	/* threads get ready (buffers filled), then wait for go: the clock
	 * starts when every thread exists, not while they are created */
	pthread_mutex_t gate_lock;
	pthread_cond_t gate_cv;
	unsigned ready;
	bool go;
	bool gate_init;
	int64_t send_end_us; /* senders stop by themselves then; 0 = never */
	/* where the peer owns the clock (iperf3's client: our senders stop
	 * at its TEST_END), the duration it announced, set before
	 * bench_run_go; 0 = none */
	uint64_t expect_ms;
	/* the deadline: send_end_us, or the one expect_ms announced; 0 =
	 * none. Each stream's period ends there (bench__stream_end_us) and
	 * the senders' unsent queues shorten before it (bench__lowat_*) */
	int64_t deadline_us;
	/* UDP: 64-bit sequence numbers in the datagram header (iperf3's
	 * --udp-counters-64bit). bench_run_init sets it true, as linerate's
	 * own protocol wants; iperf3 callers set it after bench_run_init */
	bool udp_counters64;
};

/* Set up a run for req on this side; streams get fds later. With
 * req->udp the streams' fds must be connected UDP sockets, req->blksize
 * (the datagram size) at least the header's and at most UDP_MAX_LEN
 * (-EINVAL otherwise). req->rate_bps paces every sending stream, TCP
 * or UDP. */
int bench_run_init(struct bench_run *run, const struct proto_test_request *req,
		   bool is_client, struct lr_err *err);
/* Release threads' resources, close stream fds; safe on a partial init. */
void bench_run_fini(struct bench_run *run);
/* Direction of stream idx under req. */
uint8_t bench_stream_dir(const struct proto_test_request *req, unsigned idx);
/* Start one thread per stream and wait until each is ready (buffers
 * made, waiting for the clock); nothing is sent yet. */
int bench_run_ready(struct bench_run *run, struct lr_err *err);
/* The clock starts: t0 is now, the threads go. After bench_run_ready. */
void bench_run_go(struct bench_run *run);
/* Sample all streams: update TCP accumulators, handle the omit boundary and
 * (if iv != NULL, with iv->s sized nstreams) fill an interval report. */
void bench_run_sample(struct bench_run *run, struct bench_interval *iv,
		      double iv_start);
/* Ask the senders to stop (finish and shut down writing); the first
 * call's time is the run's stop_us. Control thread only. */
void bench_run_halt(struct bench_run *run);
/* True when every stream thread has ended. */
bool bench_run_all_done(const struct bench_run *run);
/* Stop sending, wait up to grace_ms for receivers to reach EOF (sealed
 * ones: their END record, then EOF; UDP receivers: BENCH_UDP_SILENCE_MS
 * without a datagram), then force the rest and join all threads. A sealed
 * receiver forced before its END fails with LR_ETRUNC. */
void bench_run_stop(struct bench_run *run, int grace_ms);
/* This side's per-stream results and CPU, for TEST_RESULTS. */
void bench_run_results(const struct bench_run *run, struct proto_results *out,
		       struct proto_stream_result *arr);
/*
 * UDP figures of stream s, counted from the end of the omitted period:
 * the receiving side's struct udp_rx (packets, bytes, lost, ooo, dup,
 * jitter_s; the duplicate window and transit state as they are) and the
 * datagrams the sending side sent. Safe while the stream's thread runs.
 * Either out-pointer may be NULL. On a TCP stream both read as zero.
 */
void bench_stream_udp(const struct bench_stream *s, struct udp_rx *rx_out,
		      uint64_t *pkts_sent_out);
/* This side's end figures of stream s (bytes and seconds after the
 * omitted period; TCP figures on the sending side; UDP datagrams, and on
 * the receiving side lost/ooo/dup/jitter), as the report wants them. */
void bench_stream_side(const struct bench_run *run,
		       const struct bench_stream *s, struct bench_side *out);
/* Each stream's idx, dir, local_sender and addresses into out[0..n). */
void bench_run_describe(const struct bench_run *run,
			struct bench_stream_result *out);
/* CPU used by this run's stream threads. */
void bench_run_cpu(const struct bench_run *run, uint64_t *user_us,
		   uint64_t *sys_us);

/* The first stream that failed (with ended_only, only among those whose
 * thread has ended): its error into err ("stream N: what"); 0 when none
 * did. A sealed stream fails unless its END record came and then its end
 * of file: a stream cut short (LR_ETRUNC, also when the run gave up on it
 * before its END), a record that failed to open (LR_ERECORD), a byte after
 * END (LR_EFRAME). */
int bench_run_error(const struct bench_run *run, bool ended_only,
		    struct lr_err *err);

/* ---- the bench engine's own ---- */

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
/* A sealed receiver waits this long for the end of file after END. */
#define BENCH_EOF_MS 2000
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

/* A moment of the run (microseconds) as the millisecond the timers wait
 * for: rounded up, so that a timer never fires before it. */
static inline int64_t bench_ms_ceil(int64_t us)
{
	return (us + 999) / 1000;
}

/* sample.c: when stream s's period ends: its last byte moved; in a test
 * that ran to its deadline (send_end_us) a sender's at the deadline, a
 * receiver's at the deadline or the last byte's arrival, the later. */
int64_t bench__stream_end_us(const struct bench_run *run,
			     const struct bench_stream *s);

/* lowat.c: a timed TCP sender's unsent queue, kept short as the deadline
 * nears (TCP_NOTSENT_LOWAT from a moment planned 0.5 s before it). One
 * per sender thread; step after every write with the bytes it moved. */
struct bench_lowat {
	int64_t t0_us;
	uint64_t sent;
	int64_t at_us;
	bool planned, done;
};
void bench__lowat_init(struct bench_lowat *t, const struct bench_run *run,
		       int64_t now_us);
void bench__lowat_step(struct bench_lowat *t, const struct bench_stream *s,
		       size_t moved, int64_t now_us);

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
 * control of the first stream, into res. After bench_run_go. */
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

/* Where stream i connects from: d's -B address (or none) with
 * --cport, port cport + i (in tmp); -ERANGE past port 65535. */
int bench__stream_bind(const struct net_addr *addr,
		       const struct net_addr *bindp, uint16_t cport, unsigned i,
		       struct net_addr *tmp, const struct net_addr **out,
		       struct lr_err *err);

/* The streams are connected: the result tables (res->streams, iv->s)
 * and the run's threads, ready for the clock. Before the server's go
 * (TEST_START), so that the clock starts on both sides at once. */
int bench__client_ready(struct bench_run *run, struct bench_result *res,
			struct bench_interval *iv, struct lr_err *err);
/* The server said go: the clock starts, then the link facts and the
 * started callback. */
void bench__client_go(struct bench_run *run, const struct bench_opts *o,
		      const struct bench_callbacks *cb,
		      struct bench_result *res);

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

/* A client's steps once its control connection is up: ask for the test,
 * open its streams, run it; close (may be NULL) lets go of what the
 * client keeps on the control connection. */
struct bench__client_steps {
	int (*ask)(void *c, struct lr_err *err);
	int (*open)(void *c, struct lr_err *err);
	int (*run)(void *c, struct lr_err *err);
	void (*close)(void *c);
};

/* Both clients' test, on the connection fd of bench__client_dial (a
 * negative fd is its error, returned): the steps in turn, then the run
 * finished when *run_ok, the connection closed. 0 or -errno. */
int bench__client_session(int fd, const struct bench__client_steps *st, void *c,
			  struct bench_run *run, const bool *run_ok,
			  struct lr_err *err);
/* A failed test's result: nothing of it kept. */
void bench__result_drop(struct bench_result *res);

/* After the senders stopped and the receivers drained: the last
 * interval, from the last one reported to the last byte this side moved
 * (a sender's at most at the deadline), when it holds bytes; with -i 0
 * the one interval of the test. So the intervals add up to the totals. */
void bench__client_tail(struct bench_run *run, const struct bench_opts *o,
			const struct bench_callbacks *cb,
			struct bench_client_clock *clk);

#endif
