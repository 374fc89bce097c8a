/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_SERVER_INT_H
#define LINERATE_SERVER_INT_H

/*
 * The servers' internal header. Only the files of src/core/server/
 * include it (scripts/check-includes.sh checks); everyone else sees
 * ../server.h. Helpers shared between the files carry the prefix
 * server__ (linerate's server) or ip3s__ (the iperf3 one).
 *
 *   listen.c       the listener both servers share (lsn_*)
 *   server.c       linerate's server: make, run (the poll loop), stop,
 *                  reap, free; the sweeper of partial files
 *   opening.c      a new connection until it says what it is: preamble,
 *                  handshake, first record, CTRL_OPEN or DATA_OPEN
 *   attach.c       data streams (TCP and UDP) handed to their test
 *   session.c      a test's thread: its request, then a bench test, a
 *                  transfer or a probe, then its end
 *   control.c      what every kind of test does on its control
 *                  connection: errors, empty messages, waiting for the
 *                  data streams, the clock of the data phase (both
 *                  servers)
 *   bench_test.c   a bench test: accept, streams, the data phase, results
 *   xfer_test.c    a transfer: the admission (its six refusals), the
 *                  destination, the streams, the engine
 *   probe_test.c   doctor's probe
 *   ip3_server.c   the iperf3 server: make, run, the cookies of new
 *                  connections, UDP streams, reap, free
 *   ip3_test.c     an iperf3 test's thread
 *
 * Locks: srv->lock (each server has one) guards its list of tests, the
 * counters (active, started, next_no) and each test's attach state
 * (waiting, attached, expected, the streams' fds as they attach, and for
 * the iperf3 server setup, evicted, counted, ctrl). The listener's table
 * belongs to the thread of server_run / ip3srv_run alone. Callbacks
 * (server_callbacks, ip3srv_callbacks) are never called with a lock held.
 */

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "bench/bench_int.h" /* the run: the exception of docs/ARCHITECTURE.md */
#include "conn.h"
#include "crypto.h"
#include "ip3.h"
#include "net.h"
#include "proto.h"
#include "server.h"

/* ---------------- the listener (listen.c) ---------------- */

/*
 * Both servers, linerate's and the iperf3 one, take new connections the
 * same way: accept what the listening socket has, keep each in a table
 * until it has said what it is, drop it at its deadline, and make room
 * so that no one host locks the others out. A server's own entry begins
 * with struct lsn_slot; the listener moves entries as whole (slot_size
 * bytes) and keeps them in the order they were accepted.
 */
struct lsn_slot {
	int fd;			/* -1 once handed over */
	char peer[NET_ADDRSTR]; /* address and port, for the log */
	uint8_t host[16];	/* address without port (net_addr_host_key) */
	uint64_t seq;		/* accepted connections before it, + 1 */
	int64_t deadline;	/* net_now_ms: dropped then unless ready */
	int64_t hold_until;	/* penalized address: not read before */
	bool ready;		/* said enough: not read, not evicted first */
};

struct lsn_ops {
	/* A connection dropped, with why (reason is never NULL). */
	void (*rejected)(void *ctx, const char *peer, const char *reason);
	/* Before a slot's fd is closed or the slot is reused; may be NULL. */
	void (*closing)(void *ctx, struct lsn_slot *s);
	/* A new slot: fd, peer, host, seq, deadline and hold_until are set,
	 * the rest of the entry is zero; may be NULL. */
	void (*opened)(void *ctx, struct lsn_slot *s,
		       const struct sockaddr_storage *ss);
};

struct lsn_limits {
	unsigned max;	   /* entries in the table */
	unsigned per_host; /* entries not ready from one host */
	int wait_ms;	   /* from accept (or the end of a hold) to deadline */
};

#define LSN_MAX_SLOTS	      256 /* entries of one table, at most */
#define LSN_PENALTY_SLOTS     64
#define LSN_PENALTY_FIRST_MS  1000
#define LSN_PENALTY_MAX_MS    4000
#define LSN_PENALTY_FORGET_MS (60 * 1000)
#define LSN_PAUSE_MS	      100 /* out of descriptors: accept later */
#define LSN_ACCEPT_BURST      64  /* connections taken per readiness */

/* Failed authentications of an address. */
struct lsn_penalty {
	uint8_t host[16];
	unsigned fails;
	int64_t until, last;
};

struct lsn {
	int fd; /* the listening socket (the server's; not closed here) */
	uint8_t *slots;
	size_t slot_size;
	unsigned n;
	struct lsn_limits lim;
	/* read by the iperf3 server's test threads (wait_seq) */
	_Atomic uint64_t accepted;
	int64_t paused_until;
	struct lsn_penalty pen[LSN_PENALTY_SLOTS];
	const struct lsn_ops *ops;
	void *ctx;
};

/* 0, -EINVAL (slot_size below sizeof(struct lsn_slot), its first part,
 * or lim->max not 1..LSN_MAX_SLOTS) or -ENOMEM. */
int lsn_init(struct lsn *l, int fd, size_t slot_size,
	     const struct lsn_limits *lim, const struct lsn_ops *ops,
	     void *ctx);
/* Close every entry (no event) and free the table. */
void lsn_fini(struct lsn *l);
struct lsn_slot *lsn_at(const struct lsn *l, unsigned i);
/* Take what the listening socket has (at most LSN_ACCEPT_BURST). */
void lsn_accept(struct lsn *l);
/* Add fd (accepted from ss) after making room; the slot, or NULL when
 * there is no room (fd is then closed). */
struct lsn_slot *lsn_add(struct lsn *l, int fd,
			 const struct sockaddr_storage *ss);
/* Remove entry i, closing its fd when not handed over (fd -1); with a
 * reason, the server is told. Later entries move down by one. */
void lsn_drop(struct lsn *l, unsigned i, const char *reason);
/* The entry that gives way for a new connection from host, or -1 when
 * there is room: the oldest not ready of host when host has per_host of
 * them; when the table is full, the oldest (not ready first) of the host
 * holding the most entries. why says which. */
int lsn_victim(const struct lsn *l, const uint8_t *host, const char **why);
/* The poll table: pf[0] the listening socket (-1 while paused), pf[1 +
 * i] entry i (-1 while held or ready); *timeout_ms lowered to the next
 * deadline, hold or pause. Returns the number of entries filled. */
unsigned lsn_poll_fill(const struct lsn *l, struct pollfd *pf, int64_t now,
		       int64_t *timeout_ms);
/* Whether entry i is past its deadline and not ready. */
bool lsn_expired(const struct lsn *l, unsigned i, int64_t now);
/* A failed authentication from host: its next connections wait 1 s,
 * doubling up to 30 s; forgotten after 10 min without another. */
void lsn_penalize(struct lsn *l, const uint8_t *host, int64_t now);
/* Until when host's connections wait (0: not penalized). */
int64_t lsn_held_until(struct lsn *l, const uint8_t *host, int64_t now);

/* ---------------- linerate's server ---------------- */

#define SERVER_CTRL_TIMEOUT_MS	 10000
#define SERVER_ATTACH_TIMEOUT_MS 10000
#define SERVER_STOP_GRACE_MS	 5000
#define SERVER_SAMPLE_MS	 1000
/* the first message, in clear or in its record */
#define SERVER_OPEN_BUF                                             \
	(PROTO_PREAMBLE_LEN + PROTO_HDR_LEN + PROTO_MAX_OPEN_BODY + \
	 CONN_REC_HDR + CRYPTO_TAG_LEN)
#define SERVER_BUF_LEN \
	(PROTO_MAX_BODY + PROTO_HDR_LEN + CONN_REC_HDR + CRYPTO_TAG_LEN)

struct server_test {
	struct server *srv;
	struct server_test *next;
	unsigned no;
	int ctrl;
	struct conn cc; /* control messages on ctrl */
	char peer[NET_ADDRSTR];
	uint8_t id[PROTO_TEST_ID_LEN];
	bool waiting; /* accepting data connections */
	unsigned attached, expected;
	/* a file transfer's data connections */
	bool is_xfer;
	uint8_t xdir;
	uint32_t xwindow; /* the files window agreed (0: the default) */
	struct conn *xconns;
	pthread_cond_t attach_cv;
	struct bench_run run;
	pthread_t thread;
	_Atomic bool finished;
	unsigned overlap; /* most other tests at once; under srv->lock */
	int result;
};

/* A connection that has not yet said what it is. */
struct pending {
	struct lsn_slot s; /* first: the listener's part */
	struct conn conn;  /* plain until the handshake is done */
	uint8_t buf[SERVER_OPEN_BUF];
	size_t have;
	bool answered;			  /* our preamble was sent */
	uint8_t sent[PROTO_PREAMBLE_LEN]; /* that preamble, as sent */
	bool secured; /* handshake done; a record comes next */
};

struct server {
	struct server_opts o;
	struct server_callbacks cb;
	int lfd;
	int ufd; /* UDP tests' streams say hello here; -1 = none */
	struct net_addr uaddr; /* its address, for the streams' sockets */
	int evfd;
	_Atomic bool stopping;
	pthread_mutex_t lock;
	struct server_test *tests;
	unsigned active;
	unsigned next_no;
	unsigned started;
	int once_result;
	struct lsn lsn; /* connections not yet identified */
};

/* server.c */
void server__emit(struct server *srv, struct server_event *ev);
void server__emit_reject(struct server *srv, const char *peer,
			 const char *reason);
void server__wake(int evfd);

/* opening.c: read what entry i sent; true when it left the table (a test
 * or a stream took it, or it was refused) */
bool server__pending_read(struct server *srv, unsigned i);
/* Refuse entry i: an ERROR of code (0: none) with reason, then close. */
void server__reject(struct server *srv, unsigned i, uint32_t code,
		    const char *reason);
/* A server_test for the control connection of entry p, its thread
 * started; 0 or -errno (p still owns the connection). */
int server__start_test(struct server *srv, struct pending *p);

/* attach.c */
const char *server__attach_stream(struct server *srv,
				  const struct proto_data_open *d, int fd,
				  struct conn *c);
void server__udp_read_some(struct server *srv);

/* session.c: a test's thread */
void *server__test_main(void *arg);

/* control.c */
int server__send_error(struct conn *c, uint32_t code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int server__send_simple(struct conn *c, uint8_t type);
/* The client's ERROR (its body, len bytes) ends the test: why says "the
 * client ended it: TEXT". LR_EPEER, or LR_EBADMSG when it is malformed. */
int server__client_error(const uint8_t *body, uint32_t len, char *why,
			 size_t cap);
bool server__ctrl_gone(int fd);
/* 0, LR_ECLOSED (the client closed its control connection) or
 * LR_ETIMEOUT */
int server__wait_streams(struct server_test *t);
/*
 * The clock of a test's data phase, the same in both servers: a sample
 * every SERVER_SAMPLE_MS and at the end of the omitted period, and the
 * end SERVER_STOP_GRACE_MS past the longest test the server takes.
 */
struct server_phase {
	struct bench_run *run;
	uint64_t max_duration_ms;
	int64_t hard_end, next_sample;
};
/* grace_ms past max_duration_ms the test is ended (0 for a test with no
 * end of its own). */
void server__phase_init(struct server_phase *ph, struct bench_run *run,
			uint64_t max_duration_ms, int grace_ms);
/* Until the control connection is readable, a stream tells something or
 * the clock is due: the control fd's revents (0: none), or -errno. */
int server__phase_wait(struct server_phase *ph, int ctrl);
/* The first stream that failed (*idx its index), or NULL. */
struct bench_stream *server__phase_failed(const struct server_phase *ph,
					  unsigned *idx);
/* A sample due now: 1 at an interval's end, 2 at the end of the omitted
 * period only, 0 none. */
int server__phase_sample_due(struct server_phase *ph);
/* Past the server's limit (--max-duration and the grace): true, with
 * why saying so. */
bool server__phase_over(const struct server_phase *ph, char *why, size_t cap);
#define SERVER_CTRL_GONE_WORDS                                         \
	"the client closed its control connection with %u of %u data " \
	"streams connected"

/* The kinds of test; each returns 0 or an error with why. */
int server__bench_test(struct server_test *t, uint8_t *buf,
		       const struct proto_test_request *req,
		       struct server_event *ev, char *why, size_t cap);
int server__xfer_test(struct server_test *t, uint8_t *buf, uint32_t len,
		      char *why, size_t cap, struct server_event *ev);
int server__probe_test(struct server_test *t, uint8_t *buf, uint32_t len,
		       char *why, size_t cap);

/* ---------------- the iperf3 server ---------------- */

#define IP3SRV_MAX_PENDING	64 /* connections without a cookie, all hosts */
#define IP3SRV_PENDING_PER_HOST 8  /* ... from one host */
#define IP3SRV_COOKIE_MS	3000 /* at most, for the cookie (iperf3: at once) */
#define IP3SRV_MAX_SETUP	32 /* tests waiting for parameters, all hosts */
#define IP3SRV_SETUP_PER_HOST	4  /* ... from one host */
#define IP3SRV_PARAMS_MS	5000 /* for the parameters, header and body */

#define IP3S_CTRL_TIMEOUT_MS   10000 /* a control message the client owes us */
#define IP3S_ATTACH_TIMEOUT_MS 10000 /* all data streams after CREATE_STREAMS */
#define IP3S_DONE_TIMEOUT_MS   5000  /* IPERF_DONE after DISPLAY_RESULTS */
#define IP3S_DRAIN_MS	       1000  /* TCP data in flight after TEST_END */
#define IP3S_MAX_INTERVALS     4000  /* kept for --get-server-output */
#define IP3S_RESULTS_CAP       IP3_MAX_RESULTS_TEXT_JSON

struct ip3_test {
	struct ip3srv *srv;
	struct ip3_test *next;
	unsigned no;
	int ctrl; /* -1 once closed; under srv->lock */
	uint8_t cookie[IP3_COOKIE_LEN];
	char peer[NET_ADDRSTR];
	uint16_t peer_port;
	uint8_t host[16]; /* the control connection's address */
	bool udp;
	bool waiting; /* accepting data streams; under srv->lock */
	/* under srv->lock: waiting for its parameters (not yet counted
	 * against max_tests); told to give up its place; counted */
	bool setup, evicted, counted;
	uint64_t wait_seq; /* srv->accepted when it began to wait */
	unsigned attached, expected;
	pthread_cond_t attach_cv;
	struct bench_run run;
	pthread_t thread;
	_Atomic bool finished;
	int64_t end_us; /* when TEST_END came: the streams' end time */
};

/* A TCP connection that has not yet sent its cookie. */
struct ip3_pending {
	struct lsn_slot s; /* first: the listener's part; ready: a whole
			    * cookie */
	uint16_t port;
	uint8_t buf[IP3_COOKIE_LEN];
	size_t have;
};

struct ip3srv {
	struct ip3srv_opts o;
	struct ip3srv_callbacks cb;
	struct net_addr addr; /* bound address (its port is the real one) */
	int lfd, ufd, evfd;
	_Atomic bool stopping;
	pthread_mutex_t lock;
	struct ip3_test *tests;
	unsigned active; /* tests counted against max_tests */
	unsigned next_no;
	struct lsn lsn; /* connections without a whole cookie yet */
};

/* Interval samples kept for the server's own report. */
struct iv_log {
	struct bench_interval *iv;
	unsigned n, cap;
	double last_end;
};

/* ip3_server.c */
void ip3s__emit(struct ip3srv *srv, struct server_event *ev);
void ip3s__emit_reject(struct ip3srv *srv, const char *peer,
		       const char *reason);

/* ip3_test.c: a test's thread */
void *ip3s__test_main(void *arg);

/* ip3_wire.c */
int ip3s__send_state(struct ip3_test *t, int8_t state);
/* SERVER_ERROR, iperf3's error code and an errno, best effort. */
void ip3s__send_error(struct ip3_test *t, int code, int errnum);
int ip3s__send_json(struct ip3_test *t, const char *json, size_t len);
/* One JSON message of at most max bytes into a malloc'd *out, all of it
 * by dl (net_now_ms). */
int ip3s__read_json(struct ip3_test *t, uint32_t max, int64_t dl, char **out,
		    size_t *len, char *why, size_t cap, const char *what);
/* The client vanished: its control connection is at EOF or failed. */
bool ip3s__ctrl_gone(int fd);
int ip3s__wait_done(struct ip3_test *t, char *why, size_t cap);

/* ip3_results.c */
void ip3s__iv_log_free(struct iv_log *l);
/* One sample: into the log when there is one and room, else counters
 * only. */
void ip3s__sample(struct bench_run *run, struct iv_log *l);
int ip3s__results_phase(struct ip3_test *t, const struct ip3_params *p,
			const struct iv_log *l, const struct rusage *ru0,
			int64_t start_wall, struct server_event *ev, char *why,
			size_t cap);

#endif
