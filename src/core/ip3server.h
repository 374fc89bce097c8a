/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_IP3SERVER_H
#define LINERATE_IP3SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "bench.h"
#include "err.h"
#include "server.h"

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

#define IP3SRV_MAX_PENDING	64 /* connections without a cookie, all hosts */
#define IP3SRV_PENDING_PER_HOST 8  /* ... from one host */
#define IP3SRV_COOKIE_MS	3000 /* at most, for the cookie (iperf3: at once) */
#define IP3SRV_MAX_SETUP	32 /* tests waiting for parameters, all hosts */
#define IP3SRV_SETUP_PER_HOST	4  /* ... from one host */
#define IP3SRV_PARAMS_MS	5000 /* for the parameters, header and body */

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
	 * human text: run (the server's side, its streams), res (the per
	 * stream figures of both sides) and the niv interval samples. Returns
	 * a malloc'd NUL-terminated string the core frees, or NULL. May be
	 * NULL (then the client gets no text). Called from a test's thread.
	 */
	char *(*render)(void *ctx, const struct bench_run *run,
			const struct bench_result *res,
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
