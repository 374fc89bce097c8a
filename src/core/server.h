/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_SERVER_H
#define LINERATE_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench.h"
#include "cipher.h"
#include "err.h"
#include "net.h"
#include "proto.h"
#include "xfer.h"

#define SERVER_DEFAULT_MAX_TESTS       4
#define SERVER_DEFAULT_MAX_DURATION_MS (60 * 1000)
#define SERVER_MAX_DURATION_MS	       PROTO_MAX_DURATION_MS
#define SERVER_DEFAULT_HANDSHAKE_MS    5000
#define SERVER_MAX_PENDING	       256

struct server_opts {
	const char *bind_addr; /* NULL = all addresses, IPv4 and IPv6 */
	uint16_t port;
	int family;
	bool once; /* serve one test, then return */
	unsigned max_tests;
	uint64_t max_duration_ms;
	int handshake_ms;     /* a new connection must identify itself */
	const uint8_t *psk;   /* the token's key; NULL = no token */
	bool allow_plaintext; /* accept --cipher none */
	/* file transfers (a token is required for them) */
	int rootfd; /* --root; -1 = no transfers */
	/* the root is this directory below rootfd, made when a push first
	 * writes (recv DIR of a DIR not there yet); NULL: rootfd itself */
	const char *root_sub;
	/* a lone file pushed with an empty PATH (LONE_FILE) may take
	 * root_sub's name: `recv --ssh DIR`, DIR being the user's
	 * HOST:PATH; never for a recv DIR the user named a directory */
	bool root_sub_names_file;
	/* partial files of pushes below the root, removed at the start
	 * and every partial_sweep_ms (0: an hour) by this policy, when it
	 * has a limit and the server takes pushes into rootfd itself */
	struct xfer_partial_policy partial;
	int64_t partial_sweep_ms;
	bool read_only;	     /* serve pulls, refuse pushes */
	bool allow_setid;    /* pushes may keep setuid/setgid bits */
	bool allow_devices;  /* pushes may make device nodes (-D) */
	bool push_only;	     /* accept pushes, refuse pulls (recv) */
	uint32_t xfer_flags; /* enum xfer_flag, added to every push */
	int outfd;	     /* with XFER_F_STDOUT: where the file goes */
	int progress_ms;     /* for xfer_cb progress events */
	const struct xfer_callbacks *xfer_cb; /* may be NULL */
	const _Atomic bool *cancel;
};

enum server_event_kind {
	SERVER_EV_LISTENING,	 /* addr, port */
	SERVER_EV_CONN_REJECTED, /* peer, reason */
	SERVER_EV_TEST_DONE,	 /* peer, test, figures, reason if failed */
	SERVER_EV_XFER_DONE,	 /* peer, test, xfer figures, reason */
	SERVER_EV_PROBE_DONE,	 /* peer, test: linerate doctor's probe */
	SERVER_EV_PARTIALS,	 /* a sweep of partial files removed some */
};

/* What the server tells its caller; the CLI formats it. */
struct server_event {
	enum server_event_kind kind;
	char peer[NET_ADDRSTR];
	uint16_t port; /* LISTENING */
	unsigned test_no;
	struct proto_test_request req;
	bool ok;
	unsigned overlap;
	uint64_t bytes_sent, bytes_received; /* by the server */
	double seconds;
	bool secure;		   /* authenticated with the token */
	enum crypto_cipher cipher; /* of the data streams, when secure */
	const char *reason;	   /* failures and rejections */
	bool iperf3;		   /* a stock iperf3 client (server/ip3_*.c) */
	/* SERVER_EV_XFER_DONE */
	enum xfer_op xfer_op;
	struct xfer_result xres;
	/* SERVER_EV_PARTIALS (reason: why a sweep failed) */
	struct xfer_sweep sweep;
	struct xfer_partial_policy partial;
};

struct server_callbacks {
	void *ctx;
	/* Called from the thread of server_run (LISTENING, rejected
	 * connections) and from each test's thread (its end), never with a
	 * server lock held: several at once; the callee serialises. */
	void (*event)(void *ctx, const struct server_event *ev);
};

struct server;

/* The defaults: port LR_DEFAULT_PORT on every address family, the
 * SERVER_DEFAULT_* limits, no root, no token, nothing to stdout. */
void server_opts_init(struct server_opts *o);

/* Create and bind a server; nothing runs until server_run. */
int server_new(const struct server_opts *o, const struct server_callbacks *cb,
	       struct server **out, struct lr_err *err);
/* The port it is bound to (useful with port 0). */
uint16_t server_port(const struct server *srv);
/*
 * Serve until server_stop is called (or after one test with once). Returns
 * 0, or with once the result of that test (-1 when it failed).
 */
int server_run(struct server *srv, struct lr_err *err);
/* Ask server_run to return; async-signal-safe. */
void server_stop(struct server *srv);
/* Wait for running tests to end (they are aborted) and free. NULL is ok. */
void server_free(struct server *srv);

/*
 * `linerate serve` answering stock iperf3 clients (issue 6), on TCP and
 * UDP port 5201 by default. Unlike iperf3 -s it runs several tests at
 * once: a thread per control connection; one listener thread reads each
 * new TCP connection's cookie (within handshake_ms) and either starts a
 * test (an unknown cookie) or hands the connection to the test with that
 * cookie as a data stream. UDP streams: the first datagram of a client
 * (iperf3's 4-byte UDP_CONNECT_MSG) gets a new UDP socket on the same
 * port, connected to the client, which goes to a test from the same host
 * waiting for UDP streams. The data streams run on the bench engine.
 * Every wait has a deadline; a peer's lengths are bounded (ip3.h). The
 * core prints nothing: events go to the callbacks.
 *
 * No one host can lock the others out: connections without a whole
 * cookie are bounded per host and, when the table is full, the host
 * holding the most slots loses its oldest; a test counts against
 * max_tests only once its parameters came and were accepted, and the
 * tests still waiting for them are bounded per host the same way.
 */

struct ip3srv_opts {
	const char *bind_addr; /* NULL = all addresses, IPv4 and IPv6 */
	uint16_t port;	       /* 0 = any (see ip3srv_port) */
	int family;
	unsigned max_tests; /* iperf3 tests at once; beyond: ACCESS_DENIED */
	uint64_t max_duration_ms; /* longest test (omit + time) accepted */
	int handshake_ms; /* a new connection must send its cookie (at most
			   * IP3SRV_COOKIE_MS) */
};

struct ip3srv_callbacks {
	void *ctx;
	/* One line per test or rejected connection (kind TEST_DONE or
	 * CONN_REJECTED, iperf3 set). May be called from several threads;
	 * the callee serialises. May be NULL. */
	void (*event)(void *ctx, const struct server_event *ev);
	/*
	 * --get-server-output: render the server's own report of a test as
	 * human text: res (the server's streams, described as the started
	 * callback of bench.h has them, and the per stream figures of both
	 * sides) and the niv interval samples. Returns
	 * a malloc'd NUL-terminated string the core frees, or NULL. May be
	 * NULL (then the client gets no text). Called from a test's thread.
	 */
	char *(*render)(void *ctx, const struct bench_result *res,
			const struct bench_interval *ivs, unsigned niv);
};

struct ip3srv;

/* Create and bind the server (TCP listener and UDP socket on one port);
 * nothing runs until ip3srv_run. 0 or -errno with err set. */
int ip3srv_new(const struct ip3srv_opts *o, const struct ip3srv_callbacks *cb,
	       struct ip3srv **out, struct lr_err *err);
/* The port it is bound to. */
uint16_t ip3srv_port(const struct ip3srv *srv);
/* Serve until ip3srv_stop; returns 0, or -errno when the listener fails. */
int ip3srv_run(struct ip3srv *srv, struct lr_err *err);
/* Ask ip3srv_run to return; async-signal-safe. */
void ip3srv_stop(struct ip3srv *srv);
/* Abort running tests, wait for them and free. NULL is ok. */
void ip3srv_free(struct ip3srv *srv);

#endif
