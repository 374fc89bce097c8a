// SPDX-License-Identifier: MIT
/* A bench test against a linerate server: the control connection, the streams, the test, the results. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "conn.h"
#include "crypto.h"
#include "link.h"
#include "udp.h"
#include "bench_int.h"
#include "banned.h"

static int peer_error(const uint8_t *body, size_t len, struct lr_err *err)
{
	struct proto_error pe;

	if (proto_decode_error(body, len, &pe))
		return lr_err_set(err, LR_EBADMSG,
				  "server sent a malformed error message");
	if (pe.code == PROTO_ERR_BUSY)
		return lr_err_set(err, LR_EBUSY, "%s%s",
				  strncmp(pe.text, "server busy", 11)
					  ? "server busy: "
					  : "",
				  pe.text);
	if (pe.code == PROTO_ERR_AUTH)
		return lr_err_set(err, LR_EAUTH, "authentication failed: %s",
				  pe.text);
	return lr_err_set(err, LR_EPEER, "server error: %s", pe.text);
}

/* Read one control message of the expected type (or an ERROR). */
static int expect_msg(struct conn *c, uint8_t type, uint8_t *buf, size_t cap,
		      struct proto_hdr *h, int timeout_ms, const char *what,
		      struct lr_err *err)
{
	int r;

	r = conn_recv_msg(c, buf, cap, h, net_now_ms() + timeout_ms, err);
	if (r == LR_ECLOSED)
		return lr_err_set(err, r,
				  "server closed the connection while "
				  "waiting for %s",
				  what);
	if (r == LR_ETIMEOUT)
		return lr_err_set(err, r, "timed out waiting for %s", what);
	if (r)
		return r;
	if (h->type == PROTO_ERROR)
		return peer_error(buf, h->len, err);
	if (h->type != type)
		return lr_err_set(err, LR_EBADMSG,
				  "expected %s from server, got %s (0x%02x)",
				  proto_type_name(type),
				  proto_type_name(h->type), h->type);
	return 0;
}

static int open_streams(const struct bench_opts *o, const struct net_addr *addr,
			const struct net_addr *bind, const char *where,
			const uint8_t *test_id, struct bench_run *run,
			struct lr_err *err)
{
	struct net_sockopts so = {
		.window = o->req.window,
		.mss = o->req.mss,
		.cc = o->req.cc,
	};
	uint8_t msg[PROTO_HDR_LEN + 64];
	struct proto_data_open dop;
	struct proto_buf b;
	unsigned i;
	int r;

	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream *s = &run->streams[i];
		int64_t dl = net_now_ms() + CTRL_TIMEOUT_MS;
		const struct net_addr *from;
		struct net_addr tmp;

		r = bench__stream_bind(addr, bind, o->cport, i, &tmp, &from,
				       err);
		if (r)
			return r;
		r = net_connect(addr, from, &so, o->connect_timeout_ms, err);
		if (r < 0)
			return r;
		s->fd = r;
		r = conn_client_open(s->fd, o->psk, o->cipher_wish, where, dl,
				     &s->conn, err);
		if (r)
			return r;
		s->conn.abort = &run->abort;
		memcpy(dop.test_id, test_id, PROTO_TEST_ID_LEN);
		dop.stream = (uint16_t)s->idx;
		dop.dir = s->dir;
		proto_buf_init(&b, msg, sizeof(msg));
		if (proto_encode_data_open(&b, &dop))
			return lr_err_set(err, -ENOBUFS, "encoding DATA_OPEN");
		r = conn_send_msg(&s->conn, msg, b.len, dl);
		if (r)
			return lr_err_setc(err, r, "opening stream %u to %s",
					   i + 1, where);
	}
	return 0;
}

/* UDP streams (docs/PROTOCOL.md, "UDP tests"): a connected UDP socket per
 * stream, attached with a hello datagram repeated until the server's
 * answer comes from the stream's own socket, or until the server speaks
 * on the control connection (ctrl_fd): it sends TEST_START only once every
 * stream is attached, so that stands for answers that were lost (a repeated
 * hello goes to the stream's own socket on the server, where nobody reads
 * it before the test), and an ERROR is read by the caller. */
#define UDP_HELLO_EVERY_MS 200
#define UDP_HELLO_TRIES	   25

static bool udp_answer_ok(int fd, const struct proto_data_open *want)
{
	uint8_t dg[64];
	struct proto_data_open got;
	ssize_t k;

	/* read everything queued: late answers to earlier hellos too */
	while ((k = recv(fd, dg, sizeof(dg), MSG_DONTWAIT)) >= 0 ||
	       errno == ECONNREFUSED || errno == EINTR) {
		if (k < 0)
			continue;
		if (!proto_decode_udp_hello(dg, (size_t)k, true, &got) &&
		    !memcmp(got.test_id, want->test_id, PROTO_TEST_ID_LEN) &&
		    got.stream == want->stream && got.dir == want->dir)
			return true;
	}
	return false;
}

static int open_udp_streams(const struct net_addr *addr,
			    const struct net_addr *bind, uint16_t cport,
			    const char *where, const uint8_t *test_id,
			    int ctrl_fd, struct bench_run *run,
			    struct lr_err *err)
{
	struct pollfd *pf;
	bool *ok;
	unsigned i, left = run->nstreams, tries;
	int r = 0;

	pf = calloc(run->nstreams + 1, sizeof(*pf));
	ok = calloc(run->nstreams, sizeof(*ok));
	if (!pf || !ok) {
		r = lr_err_setc(err, -ENOMEM, "UDP stream table");
		goto out_free;
	}
	for (i = 0; i < run->nstreams; i++) {
		const struct net_addr *from;
		struct net_addr tmp;

		r = bench__stream_bind(addr, bind, cport, i, &tmp, &from, err);
		if (!r)
			r = net_udp_socket(from, addr, err);
		if (r < 0)
			goto out_free;
		run->streams[i].fd = r;
		r = 0;
	}
	for (tries = 0; left && tries < UDP_HELLO_TRIES; tries++) {
		int64_t until = net_now_ms() + UDP_HELLO_EVERY_MS, now;

		for (i = 0; i < run->nstreams; i++) {
			struct bench_stream *s = &run->streams[i];
			struct proto_data_open d = { .stream = (uint16_t)s->idx,
						     .dir = s->dir };
			uint8_t dg[PROTO_UDP_HELLO_LEN];

			pf[i].fd = ok[i] ? -1 : s->fd;
			pf[i].events = POLLIN;
			if (ok[i])
				continue;
			memcpy(d.test_id, test_id, PROTO_TEST_ID_LEN);
			proto_encode_udp_hello(dg, &d, false);
			/* a refusal (ICMP) is retried like a loss */
			if (send(s->fd, dg, sizeof(dg), 0) < 0 &&
			    errno != ECONNREFUSED && errno != EINTR &&
			    errno != ENOBUFS && errno != EAGAIN) {
				r = lr_err_setc(err, -errno,
						"UDP stream %u to %s", i + 1,
						where);
				goto out_free;
			}
		}
		pf[run->nstreams] =
			(struct pollfd){ .fd = ctrl_fd, .events = POLLIN };
		while (left && (now = net_now_ms()) < until) {
			if (poll(pf, run->nstreams + 1, (int)(until - now)) <=
			    0)
				continue;
			if (pf[run->nstreams].revents) {
				left = 0; /* TEST_START or ERROR: the caller */
				break;
			}
			for (i = 0; i < run->nstreams; i++) {
				struct bench_stream *s = &run->streams[i];
				struct proto_data_open d = {
					.stream = (uint16_t)s->idx,
					.dir = s->dir
				};

				if (ok[i] || !pf[i].revents)
					continue;
				memcpy(d.test_id, test_id, PROTO_TEST_ID_LEN);
				if (udp_answer_ok(s->fd, &d)) {
					ok[i] = true;
					pf[i].fd = -1;
					left--;
				}
			}
		}
	}
	if (left)
		r = lr_err_set(err, LR_ETIMEOUT,
			       "%u of %u UDP streams got no answer from %s "
			       "(UDP blocked on the way?)",
			       left, run->nstreams, where);
out_free:
	free(pf);
	free(ok);
	return r;
}

/* One test against a linerate server, as its steps see it. */
struct lr_client {
	const struct bench_opts *o;
	const struct bench_callbacks *cb;
	struct bench_result *res;
	struct bench__dial d;
	struct conn ctrl;
	int fd;
	uint8_t *buf;
	struct proto_test_accept acc;
	struct bench_run run;
	bool run_ok; /* bench_run_init succeeded: fini it */
	struct bench_interval iv;
	struct bench_client_clock clk;
	struct proto_stream_result *rarr, *larr;
};

/* The handshake, CTRL_OPEN and TEST_REQUEST, then TEST_ACCEPT. */
static int request_test(void *arg, struct lr_err *err)
{
	struct lr_client *c = arg;
	const struct bench_opts *o = c->o;
	struct proto_ctrl_open co = { .features = 0 };
	struct proto_hdr h;
	struct proto_buf b;
	int r;

	/* preamble and handshake; nothing about the test before it */
	r = conn_client_open(c->fd, o->psk, o->cipher_wish, c->d.where,
			     net_now_ms() + CTRL_TIMEOUT_MS, &c->ctrl, err);
	if (r)
		return r;
	c->res->authenticated = c->ctrl.secure;
	c->res->cipher = c->ctrl.cipher;
	if (o->req.zerocopy && conn_data_sealed(&c->ctrl))
		return lr_err_set(err, -EINVAL,
				  "-Z cannot be used with encryption: the data "
				  "is encrypted in user space (--cipher none "
				  "sends it in clear)");
	snprintf(co.software, sizeof(co.software), "linerate %s",
		 LINERATE_VERSION);
	proto_buf_init(&b, c->buf, 1024);
	r = proto_encode_ctrl_open(&b, &co);
	if (!r)
		r = conn_send_msg(&c->ctrl, c->buf, b.len,
				  net_now_ms() + CTRL_TIMEOUT_MS);
	proto_buf_init(&b, c->buf, 1024);
	if (!r)
		r = proto_encode_test_request(&b, &o->req);
	if (!r)
		r = conn_send_msg(&c->ctrl, c->buf, b.len,
				  net_now_ms() + CTRL_TIMEOUT_MS);
	if (r) {
		/* a server that refused us may have said why */
		struct lr_err e2 = { 0 };

		if (expect_msg(&c->ctrl, PROTO_TEST_ACCEPT, c->buf, BUF_LEN, &h,
			       2000, "an answer", &e2) != LR_EPEER &&
		    e2.code != LR_EBUSY && e2.code != LR_EAUTH)
			return lr_err_setc(err, r, "sending request to %s",
					   c->d.where);
		*err = e2;
		return e2.code;
	}
	r = expect_msg(&c->ctrl, PROTO_TEST_ACCEPT, c->buf, BUF_LEN, &h,
		       CTRL_TIMEOUT_MS, "the test to be accepted", err);
	if (r)
		return r;
	r = proto_decode_test_accept(c->buf, h.len, &c->acc);
	if (r)
		return lr_err_set(err, r, "malformed TEST_ACCEPT from server");
	snprintf(c->res->server_software, sizeof(c->res->server_software), "%s",
		 c->acc.software);
	for (unsigned i = 0; i < PROTO_TEST_ID_LEN; i++)
		snprintf(c->res->cookie + 2 * i, 3, "%02x", c->acc.test_id[i]);
	return 0;
}

/* The run and its streams, then TEST_START. */
static int open_test(void *arg, struct lr_err *err)
{
	struct lr_client *c = arg;
	const struct bench_opts *o = c->o;
	struct proto_hdr h;
	int r;

	r = bench_run_init(&c->run, &o->req, true, err);
	if (r)
		return r;
	c->run_ok = true;
	c->run.udp_counters64 = true; /* linerate's UDP tests always are */
	if (o->req.udp)
		r = open_udp_streams(&c->d.addr, c->d.bindp, o->cport,
				     c->d.where, c->acc.test_id, c->fd, &c->run,
				     err);
	else
		r = open_streams(o, &c->d.addr, c->d.bindp, c->d.where,
				 c->acc.test_id, &c->run, err);
	if (r)
		return r;
	c->rarr = calloc(c->run.nstreams, sizeof(*c->rarr));
	c->larr = calloc(c->run.nstreams, sizeof(*c->larr));
	if (!c->rarr || !c->larr)
		return lr_err_setc(err, -ENOMEM, "result tables");
	r = bench__client_ready(&c->run, c->res, &c->iv, err);
	if (!r)
		r = expect_msg(&c->ctrl, PROTO_TEST_START, c->buf, BUF_LEN, &h,
			       CTRL_TIMEOUT_MS, "the test to start", err);
	if (r)
		return r;
	bench__client_go(&c->run, o, c->cb, c->res);
	return 0;
}

/* A message from the server during the test ends it: why. */
static int ctrl_readable(void *ctx, struct lr_err *err)
{
	struct lr_client *c = ctx;
	struct proto_hdr h;
	int r;

	r = conn_recv_msg(&c->ctrl, c->buf, BUF_LEN, &h,
			  net_now_ms() + CTRL_TIMEOUT_MS, err);
	if (!r && h.type == PROTO_ERROR)
		return peer_error(c->buf, h.len, err);
	if (r == LR_ECLOSED)
		return lr_err_set(err, r,
				  "server closed the connection during the "
				  "test");
	if (!r)
		return lr_err_set(err, LR_EBADMSG,
				  "unexpected %s from server during the test",
				  proto_type_name(h.type));
	return r;
}

/* -n: the test is over when every stream has moved its bytes. */
static int after_turn(void *ctx, int64_t now_ms, struct lr_err *err)
{
	struct lr_client *c = ctx;

	(void)now_ms;
	(void)err;
	return c->o->req.bytes && bench_run_all_done(&c->run);
}

static const struct bench__client_ops lr_ops = {
	.ctrl_readable = ctrl_readable,
	.after_turn = after_turn,
};

/* TEST_STOP: the server stops its senders, we stop ours, everyone
 * drains; then, when every stream we received ended whole (its END and
 * its end of file), the last part of an interval. */
static int stop_test(struct lr_client *c, struct lr_err *err)
{
	struct proto_buf b;
	int r;

	proto_buf_init(&b, c->buf, 64);
	proto_encode_empty(&b, PROTO_TEST_STOP);
	r = conn_send_msg(&c->ctrl, c->buf, b.len,
			  net_now_ms() + CTRL_TIMEOUT_MS);
	if (r)
		return lr_err_setc(err, r, "sending TEST_STOP");
	bench_run_stop(&c->run, STOP_GRACE_MS);
	r = bench_run_error(&c->run, false, err);
	if (r)
		return r;
	bench__client_tail(&c->run, c->o, c->cb, &c->clk);
	return 0;
}

/* One of our streams failed (why): tell the server in an ERROR, so that
 * it fails the test too and logs the reason. Best effort: the test has
 * failed either way. */
static void tell_server(struct lr_client *c, const struct lr_err *why)
{
	struct proto_error pe = { .code = PROTO_ERR_INTERNAL };
	struct proto_buf b;

	if (why->code == LR_ERECORD || why->code == LR_ETRUNC ||
	    why->code == LR_EFRAME)
		pe.code = PROTO_ERR_TAMPERED;
	snprintf(pe.text, sizeof(pe.text), "%s", why->msg);
	proto_buf_init(&b, c->buf, BUF_LEN);
	if (!proto_encode_error(&b, &pe))
		(void)conn_send_msg(&c->ctrl, c->buf, b.len,
				    net_now_ms() + 2000);
}

/* Sending our results failed: a server that failed the test (a stream of
 * its own failed) may have said why before it closed. */
static int results_refused(struct lr_client *c, int r, struct lr_err *err)
{
	struct lr_err e2 = { 0 };
	struct proto_hdr h;

	if (expect_msg(&c->ctrl, PROTO_TEST_RESULTS, c->buf, BUF_LEN, &h, 1000,
		       "the server's results", &e2) == LR_EPEER) {
		*err = e2;
		return e2.code;
	}
	return lr_err_setc(err, r, "sending results");
}

/* Our results for the server, then the server's into pres. The server
 * answers with an ERROR instead when one of its streams failed. */
static int trade_results(struct lr_client *c, struct proto_results *lres,
			 struct proto_results *pres, struct lr_err *err)
{
	struct proto_hdr h;
	struct proto_buf b;
	struct rusage ru1;
	int r;

	getrusage(RUSAGE_SELF, &ru1);
	bench_run_results(&c->run, lres, c->larr);
	lres->cpu.user_us =
		bench__tv_us(&ru1.ru_utime) - bench__tv_us(&c->d.ru0.ru_utime);
	lres->cpu.sys_us =
		bench__tv_us(&ru1.ru_stime) - bench__tv_us(&c->d.ru0.ru_stime);
	lres->cpu.wall_us = (uint64_t)(net_now_us() - c->d.t_wall0);
	proto_buf_init(&b, c->buf, PROTO_MAX_BODY);
	if (proto_encode_results(&b, lres))
		return lr_err_set(err, -ENOBUFS, "encoding results");
	r = conn_send_msg(&c->ctrl, c->buf, b.len,
			  net_now_ms() + CTRL_TIMEOUT_MS);
	if (r)
		return results_refused(c, r, err);
	r = expect_msg(&c->ctrl, PROTO_TEST_RESULTS, c->buf, BUF_LEN, &h,
		       RESULTS_TIMEOUT_MS, "the server's results", err);
	if (r)
		return r;
	pres->streams = c->rarr;
	pres->cap = (uint16_t)c->run.nstreams;
	r = proto_decode_results(c->buf, h.len, pres);
	if (r)
		return lr_err_set(err, r, "malformed results from server");
	return 0;
}

/* Both sides' figures into the result, stream by stream. */
static void fill_result(struct lr_client *c, const struct proto_results *lres,
			const struct proto_results *pres)
{
	struct bench_result *res = c->res;
	struct bench_run *run = &c->run;
	unsigned i, j;

	res->local_cpu = lres->cpu;
	res->remote_cpu = pres->cpu;
	snprintf(res->remote_cc, sizeof(res->remote_cc), "%s", pres->cc);
	res->overlap = pres->overlap > c->acc.overlap ? pres->overlap
						      : c->acc.overlap;
	res->duration =
		(double)(net_now_us() -
			 (run->omit_done ? run->omit_end_us : run->t0_us)) /
		1e6;
	if (c->o->req.duration_ms)
		res->duration = (double)c->o->req.duration_ms / 1000.0;
	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream_result *sr = &res->streams[i];
		const struct proto_stream_result *remote = NULL;

		for (j = 0; j < pres->nstreams; j++)
			if (c->rarr[j].stream == i && c->rarr[j].dir == sr->dir)
				remote = &c->rarr[j];
		if (run->streams[i].sender) {
			bench_stream_side(run, &run->streams[i], &sr->sender);
			if (remote)
				bench__side_fill(&sr->receiver, remote);
		} else {
			bench_stream_side(run, &run->streams[i], &sr->receiver);
			if (remote)
				bench__side_fill(&sr->sender, remote);
		}
	}
}

/* The test once its streams run: the loop, the stop, the results. */
static int run_test(void *arg, struct lr_err *err)
{
	struct lr_client *c = arg;
	struct proto_results pres, lres;
	int r;

	bench__client_clock_init(&c->clk, &c->run, c->o, &c->iv,
				 c->acc.max_duration_ms
					 ? c->acc.max_duration_ms
					 : PROTO_MAX_DURATION_MS);
	r = bench__client_loop(&c->run, c->o, c->cb, &c->clk, c->fd, c->res,
			       &lr_ops, c, err);
	if (!r)
		r = stop_test(c, err);
	/* the test failed here, with one of our streams: the server hears
	 * it from us (not when it told us, LR_EPEER) */
	if (r && r != LR_EPEER && bench_run_error(&c->run, true, NULL))
		tell_server(c, err);
	if (!r)
		r = trade_results(c, &lres, &pres, err);
	if (r)
		return r;
	fill_result(c, &lres, &pres);
	if (c->cb->finished)
		c->cb->finished(c->cb->ctx, c->res);
	return 0;
}

static void close_ctrl(void *arg)
{
	struct lr_client *c = arg;

	conn_fini(&c->ctrl);
}

static const struct bench__client_steps lr_steps = {
	.ask = request_test,
	.open = open_test,
	.run = run_test,
	.close = close_ctrl,
};

int bench_client_run(const struct bench_opts *o,
		     const struct bench_callbacks *cb, struct bench_result *res,
		     struct lr_err *err)
{
	struct lr_client *c;
	int r;

	memset(res, 0, sizeof(*res));
	c = calloc(1, sizeof(*c));
	if (c)
		c->buf = malloc(BUF_LEN);
	if (!c || !c->buf) {
		free(c);
		return lr_err_setc(err, -ENOMEM, "buffer");
	}
	c->o = o;
	c->cb = cb;
	c->res = res;
	c->run.evfd = c->run.memfd = -1;
	conn_init_plain(&c->ctrl, -1);
	c->fd = bench__client_dial(o, cb, res, &c->d, err);
	r = bench__client_session(c->fd, &lr_steps, c, &c->run, &c->run_ok,
				  err);
	free(c->iv.s);
	free(c->rarr);
	free(c->larr);
	free(c->buf);
	free(c);
	if (r)
		bench__result_drop(res);
	return r;
}

void bench_result_free(struct bench_result *res)
{
	if (!res)
		return;
	free(res->streams);
	res->streams = NULL;
	free(res->server_output);
	res->server_output = NULL;
}
