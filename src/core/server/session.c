// SPDX-License-Identifier: MIT
/* A test's thread on linerate's server: its request, then a bench test, a
 * transfer or a probe, then its end. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "udp.h"
#include "server_int.h"
#include "banned.h"

enum request_kind { REQ_BENCH, REQ_XFER, REQ_PROBE };

/* Read the request and check it against this server's limits: a
 * request_kind (the body of a transfer's or a probe's in buf, *xlen
 * bytes), or an error with why. */
static int test_request(struct server_test *t, uint8_t *buf,
			struct proto_test_request *req, char *why, size_t cap,
			uint32_t *xlen)
{
	struct server *srv = t->srv;
	struct lr_err e = { 0 };
	struct proto_hdr h;
	int r;

	r = conn_recv_msg(&t->cc, buf, SERVER_BUF_LEN, &h,
			  net_now_ms() + SERVER_CTRL_TIMEOUT_MS, &e);
	if (r) {
		snprintf(why, cap, "no test request: %s", e.msg);
		if (r != LR_ECLOSED && r != LR_ETIMEOUT)
			server__send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s",
					   e.msg);
		return r;
	}
	if (h.type == PROTO_XFER_REQUEST) {
		*xlen = h.len;
		return REQ_XFER;
	}
	if (h.type == PROTO_PROBE_REQUEST) {
		*xlen = h.len;
		return REQ_PROBE;
	}
	if (h.type != PROTO_TEST_REQUEST) {
		snprintf(why, cap, "expected TEST_REQUEST, got %s (0x%02x)",
			 proto_type_name(h.type), h.type);
		server__send_error(&t->cc, PROTO_ERR_UNEXPECTED, "%s", why);
		return LR_EBADMSG;
	}
	r = proto_decode_test_request(buf, h.len, req);
	if (r) {
		memset(req, 0, sizeof(*req));
		snprintf(why, cap, "malformed TEST_REQUEST");
		server__send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return r;
	}
	if (req->udp && srv->ufd < 0) {
		snprintf(why, cap,
			 "UDP tests: UDP port %u is not available on this "
			 "server",
			 (unsigned)server_port(srv));
		server__send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return -EPROTONOSUPPORT;
	}
	if (req->udp &&
	    (req->zerocopy || req->mss || req->cc[0] ||
	     req->blksize > UDP_MAX_LEN || req->blksize < UDP_HDR_LEN64)) {
		snprintf(why, cap,
			 "UDP tests take neither -Z, -M nor -C, and "
			 "datagrams of %u to %u bytes",
			 UDP_HDR_LEN64, UDP_MAX_LEN);
		server__send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return -EINVAL;
	}
	if (req->duration_ms + req->omit_ms > srv->o.max_duration_ms) {
		snprintf(why, cap,
			 "requested %.1f s exceeds this server's "
			 "limit of %.1f s (--max-duration)",
			 (double)(req->duration_ms + req->omit_ms) / 1000.0,
			 (double)srv->o.max_duration_ms / 1000.0);
		server__send_error(&t->cc, PROTO_ERR_LIMIT, "%s", why);
		return -E2BIG;
	}
	return 0;
}

/* The test is over: tell the caller, close its connections, give its
 * slot back and let the listener reap it. */
static void test_end(struct server_test *t, struct server_event *ev, int r,
		     const char *why)
{
	struct server *srv = t->srv;
	unsigned i;

	ev->ok = r == 0;
	ev->test_no = t->no;
	ev->secure = t->cc.secure;
	ev->cipher = t->cc.cipher;
	ev->reason = why;
	snprintf(ev->peer, sizeof(ev->peer), "%s", t->peer);
	server__emit(srv, ev);
	t->result = r;
	pthread_mutex_lock(&srv->lock);
	conn_fini(&t->cc);
	close(t->ctrl);
	t->ctrl = -1;
	t->waiting = false;
	if (t->xconns) {
		for (i = 0; i < t->expected; i++) {
			if (t->xconns[i].fd >= 0)
				close(t->xconns[i].fd);
			conn_fini(&t->xconns[i]);
		}
		free(t->xconns);
		t->xconns = NULL;
	}
	srv->active--;
	pthread_mutex_unlock(&srv->lock);
	bench_run_fini(&t->run);
	atomic_store(&t->finished, true);
	server__wake(srv->evfd);
}

void *server__test_main(void *arg)
{
	struct server_test *t = arg;
	struct server_event ev = { .kind = SERVER_EV_TEST_DONE };
	struct proto_test_request req;
	char why[LR_ERR_MSG] = "";
	uint32_t xlen = 0;
	uint8_t *buf;
	int r;

	memset(&req, 0, sizeof(req));
	buf = malloc(SERVER_BUF_LEN);
	if (!buf) {
		snprintf(why, sizeof(why), "out of memory");
		test_end(t, &ev, -ENOMEM, why);
		return NULL;
	}
	r = test_request(t, buf, &req, why, sizeof(why), &xlen);
	ev.req = req;
	if (r == REQ_XFER) {
		ev.kind = SERVER_EV_XFER_DONE;
		r = server__xfer_test(t, buf, xlen, why, sizeof(why), &ev);
	} else if (r == REQ_PROBE) {
		ev.kind = SERVER_EV_PROBE_DONE;
		r = server__probe_test(t, buf, xlen, why, sizeof(why));
	} else if (r == REQ_BENCH) {
		r = server__bench_test(t, buf, &req, &ev, why, sizeof(why));
	}
	free(buf);
	test_end(t, &ev, r, why);
	return NULL;
}
