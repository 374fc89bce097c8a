/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_SERVER_H
#define LINERATE_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "crypto.h"
#include "err.h"
#include "net.h"
#include "proto.h"
#include "xfer.h"

#define SERVER_DEFAULT_MAX_TESTS       4
#define SERVER_DEFAULT_MAX_DURATION_MS (60 * 1000)
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
	int rootfd;	     /* --root; -1 = no transfers */
	bool read_only;	     /* serve pulls, refuse pushes */
	bool allow_setid;    /* pushes may keep setuid/setgid bits */
	bool push_only;	     /* accept pushes, refuse pulls (recv) */
	uint32_t xfer_flags; /* PROTO_XF_* added to every push */
	int outfd;	     /* with PROTO_XF_STDOUT: where the file goes */
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
	bool iperf3;		   /* a stock iperf3 client (ip3server.c) */
	/* SERVER_EV_XFER_DONE */
	uint8_t xfer_op; /* enum proto_xfer_op */
	struct xfer_result xres;
};

struct server_callbacks {
	void *ctx;
	/* May be called from several threads; the callee serialises. */
	void (*event)(void *ctx, const struct server_event *ev);
};

struct server;

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

#endif
