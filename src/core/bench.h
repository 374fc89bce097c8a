/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_BENCH_H
#define LINERATE_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cipher.h"
#include "conn.h"
#include "err.h"
#include "net.h"
#include "proto.h"
#include "token.h"
#include "udp.h"

/*
 * The throughput test engine. One struct bench_run drives the data streams
 * of one test on one side (client or server): a thread per stream, byte
 * counters, TCP_INFO sampling, the omitted period, the graceful stop that
 * lets every byte in flight reach the receiver, and the per-stream results.
 * The clients (bench/client.c, bench/ip3_client.c) and the servers
 * (server/bench_test.c, server/ip3_test.c) wrap it.
 */

#define BENCH_DEFAULT_PORT LINERATE_DEFAULT_PORT
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
/* iperf3's port, and its limit on streams (ip3.h says why) */
#define BENCH_IP3_PORT	      5201
#define BENCH_IP3_MAX_STREAMS 128u
/* 512 KiB writes: 1.5x iperf3's 128 KiB rate between namespaces at
 * 0.7x the CPU per GB (docs/BENCHMARKS.md) */
#define BENCH_DEFAULT_BLKSIZE (512u << 10)
#define BENCH_RECV_BUF	      (1u << 20)
#define BENCH_RECV_BUF_MANY   (256u << 10) /* above 16 connections */
#define BENCH_RCVLOWAT	      (512u << 10)
#define BENCH_MAX_CONNS	      (2 * PROTO_MAX_STREAMS)
/* Bound on the sum of per-stream buffers of one test, either side. */
#define BENCH_MAX_TEST_MEM (256ull << 20)

/* Client options (what `linerate bench` parsed). */
struct bench_opts {
	const char *host;
	uint16_t port;
	int family;	       /* AF_UNSPEC, AF_INET, AF_INET6 */
	const char *bind_addr; /* -B, may be NULL */
	struct proto_test_request req;
	uint64_t interval_ms; /* 0 = no interval reports */
	int connect_timeout_ms;
	uint64_t link_speed_bps; /* --link-speed; 0 = read from /sys */
	const uint8_t *psk;	 /* the token's key; NULL = no token */
	uint8_t cipher_wish;	 /* enum crypto_cipher or SESSION_CIPHER_AUTO */
};

/* Rolling TCP figures of one stream. */
struct bench_tcp_acc {
	uint32_t retrans_base; /* total_retrans at start of totals */
	uint32_t retrans_last;
	uint32_t max_cwnd;
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
	_Atomic uint64_t bytes;	 /* moved so far */
	_Atomic int64_t last_us; /* time of the last byte moved */
	_Atomic bool done;
	int error;	     /* 0 or -errno, written by the thread */
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
	_Atomic bool stop;	    /* senders: finish and shut down writing */
	_Atomic bool abort;	    /* everyone: give up now */
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
	/* UDP: 64-bit sequence numbers in the datagram header (iperf3's
	 * --udp-counters-64bit). bench_run_init sets it true, as linerate's
	 * own protocol wants; iperf3 callers set it after bench_run_init */
	bool udp_counters64;
};

/* One stream's figures for one interval. */
struct bench_iv_stream {
	unsigned idx;
	uint8_t dir;
	bool sender;
	uint64_t bytes;
	uint32_t retrans;
	uint32_t cwnd;
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
	struct net_addr local, peer;
	struct bench_side sender, receiver;
	int local_error;
};

struct bench_result {
	struct proto_test_request req;
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
	/* streams connected, the test is about to start */
	void (*started)(void *ctx, const struct bench_run *run,
			const struct bench_result *res);
	void (*interval)(void *ctx, const struct bench_interval *iv);
	void (*finished)(void *ctx, const struct bench_result *res);
};

/* ---- the run, shared by the clients and the servers ---- */

/* Set up a run for req on this side; streams get fds later. With
 * req->udp the streams' fds must be connected UDP sockets, req->blksize
 * (the datagram size) at least the header's and at most UDP_MAX_LEN
 * (-EINVAL otherwise). req->rate_bps paces every sending stream, TCP
 * or UDP. */
int bench_run_init(struct bench_run *run, const struct proto_test_request *req,
		   bool is_client, struct lr_err *err);
/* Release threads' resources, close stream fds; safe on a partial init. */
void bench_run_fini(struct bench_run *run);
/* Bytes per read on receiving streams under req. */
size_t bench_recv_buf(const struct proto_test_request *req);
/* Number of data connections req needs. */
unsigned bench_conn_count(const struct proto_test_request *req);
/* Direction of stream idx under req. */
uint8_t bench_stream_dir(const struct proto_test_request *req, unsigned idx);
/* Start one thread per stream; t0 is now. */
int bench_run_start(struct bench_run *run, struct lr_err *err);
/* Sample all streams: update TCP accumulators, handle the omit boundary and
 * (if iv != NULL, with iv->s sized nstreams) fill an interval report. */
void bench_run_sample(struct bench_run *run, struct bench_interval *iv,
		      double iv_start);
/* True when every stream thread has ended. */
bool bench_run_all_done(const struct bench_run *run);
/* Stop sending, wait up to grace_ms for receivers to reach EOF (UDP
 * receivers: BENCH_UDP_SILENCE_MS without a datagram), then force the rest
 * and join all threads. */
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
/* CPU used by this run's stream threads. */
void bench_run_cpu(const struct bench_run *run, uint64_t *user_us,
		   uint64_t *sys_us);

/* The first stream that failed (with ended_only, only among those whose
 * thread has ended): its error into err; 0 when none did. */
int bench_run_error(const struct bench_run *run, bool ended_only,
		    struct lr_err *err);

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
