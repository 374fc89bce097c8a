// SPDX-License-Identifier: MIT
/* A bench test on linerate's server: accept it, take its streams, start
 * them, run the data phase until TEST_STOP, see every stream end whole,
 * and trade results. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "config.h"
#include "server_int.h"
#include "banned.h"

/* Set the run up, answer TEST_ACCEPT, wait for every stream. */
static int bench_accept(struct server_test *t, uint8_t *buf,
			const struct proto_test_request *req,
			struct proto_stream_result **arr, char *why, size_t cap)
{
	struct server *srv = t->srv;
	struct proto_test_accept acc = { 0 };
	struct lr_err e = { 0 };
	struct proto_buf b;
	int one = 1, r;

	/* TEST_START follows TEST_ACCEPT with nothing from the client in
	 * between: Nagle's algorithm would hold it until the delayed ACK of
	 * TEST_ACCEPT (40 ms on Linux), and the client's clock would start
	 * that much after ours */
	setsockopt(t->ctrl, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	r = bench_run_init(&t->run, req, false, &e);
	t->expected = t->run.nstreams;
	if (r) {
		snprintf(why, cap, "%s", e.msg);
		server__send_error(&t->cc, PROTO_ERR_LIMIT, "%s", why);
		return r;
	}
	*arr = calloc(t->run.nstreams, sizeof(**arr));
	if (!*arr || crypto_random(t->id, sizeof(t->id))) {
		snprintf(why, cap, "out of memory");
		server__send_error(&t->cc, PROTO_ERR_INTERNAL, "%s", why);
		return -ENOMEM;
	}
	pthread_mutex_lock(&srv->lock);
	t->waiting = true;
	acc.overlap = (uint16_t)(srv->active - 1);
	pthread_mutex_unlock(&srv->lock);
	memcpy(acc.test_id, t->id, sizeof(t->id));
	snprintf(acc.software, sizeof(acc.software), "linerate %s",
		 LINERATE_VERSION);
	acc.max_duration_ms = srv->o.max_duration_ms;
	proto_buf_init(&b, buf, PROTO_MAX_BODY);
	r = proto_encode_test_accept(&b, &acc);
	if (!r)
		r = conn_send_msg(&t->cc, buf, b.len,
				  net_now_ms() + SERVER_CTRL_TIMEOUT_MS);
	if (r) {
		snprintf(why, cap, "sending TEST_ACCEPT: %s", lr_strerror(r));
		return r;
	}
	r = server__wait_streams(t);
	if (r == LR_ECLOSED) {
		snprintf(why, cap, SERVER_CTRL_GONE_WORDS, t->attached,
			 t->run.nstreams);
		return r;
	}
	if (r) {
		snprintf(why, cap,
			 "only %u of %u data streams connected within %d s",
			 t->attached, t->run.nstreams,
			 SERVER_ATTACH_TIMEOUT_MS / 1000);
		server__send_error(&t->cc, PROTO_ERR_TIMEOUT, "%s", why);
	}
	return r;
}

/* The streams' socket options, the run's threads, then TEST_START. */
static int bench_start(struct server_test *t,
		       const struct proto_test_request *req, char *why,
		       size_t cap)
{
	struct net_sockopts so = { .window = req->window,
				   .cc = req->udp ? NULL : req->cc };
	struct lr_err e = { 0 };
	unsigned i;
	int r = 0;

	for (i = 0; i < t->run.nstreams && !r; i++)
		r = net_apply_sockopts(t->run.streams[i].fd, &so, &e);
	if (!r)
		r = bench_run_ready(&t->run, &e);
	if (r) {
		snprintf(why, cap, "%s", e.msg);
		server__send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "server: %s",
				   why);
		return r;
	}
	/* the clock starts as TEST_START leaves, so that the two sides'
	 * differ by its way to the client (docs/PROTOCOL.md) */
	r = server__send_simple(&t->cc, PROTO_TEST_START);
	if (r) {
		snprintf(why, cap, "sending TEST_START: %s", lr_strerror(r));
		return r;
	}
	bench_run_go(&t->run);
	return 0;
}

/* The code of the ERROR that tells the client about a failed stream:
 * its records were changed, dropped or cut on the way, or something else
 * went wrong. */
static uint32_t stream_errcode(int error)
{
	switch (error) {
	case LR_ERECORD:
	case LR_ETRUNC:
	case LR_EFRAME: return PROTO_ERR_TAMPERED;
	case LR_ETIMEOUT: return PROTO_ERR_TIMEOUT;
	default: return PROTO_ERR_INTERNAL;
	}
}

/* Whether a stream failed (with ended_only, among those whose thread has
 * ended): then the client is told why in an ERROR, and the error is
 * returned with why; 0 when none did. */
static int stream_failed(struct server_test *t, bool ended_only, char *why,
			 size_t cap)
{
	struct lr_err e = { 0 };
	int r;

	r = bench_run_error(&t->run, ended_only, &e);
	if (!r)
		return 0;
	snprintf(why, cap, "%s", e.msg);
	server__send_error(&t->cc, stream_errcode(r), "%s", why);
	return r;
}

/* The client's message during the data phase: 0 at TEST_STOP, else an
 * error with why (an ERROR from the client: what it said). */
static int phase_message(struct server_test *t, uint8_t *buf, char *why,
			 size_t cap)
{
	struct lr_err e = { 0 };
	struct proto_hdr h;
	int r;

	r = conn_recv_msg(&t->cc, buf, SERVER_BUF_LEN, &h,
			  net_now_ms() + SERVER_CTRL_TIMEOUT_MS, &e);
	if (r == LR_ECLOSED) {
		snprintf(why, cap, "client disconnected during the test");
		return r;
	}
	if (r) {
		snprintf(why, cap, "%s", e.msg);
		server__send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", e.msg);
		return r;
	}
	if (h.type == PROTO_TEST_STOP)
		return 0;
	if (h.type == PROTO_ERROR)
		return server__client_error(buf, h.len, why, cap);
	snprintf(why, cap, "unexpected %s during the test",
		 proto_type_name(h.type));
	server__send_error(&t->cc, PROTO_ERR_UNEXPECTED, "%s", why);
	return LR_EBADMSG;
}

/* Run the data phase until TEST_STOP; returns 0 or an error with why. A
 * stream that failed is looked at before the control connection, so that
 * its failure is what the test ends with. */
static int data_phase(struct server_test *t, uint8_t *buf, char *why,
		      size_t cap)
{
	struct server *srv = t->srv;
	struct server_phase ph;
	int ev, r;

	server__phase_init(&ph, &t->run, srv->o.max_duration_ms,
			   SERVER_STOP_GRACE_MS);
	for (;;) {
		ev = server__phase_wait(&ph, t->ctrl);
		if (ev < 0)
			return ev;
		if (atomic_load(&srv->stopping)) {
			atomic_store(&t->run.abort, true);
			snprintf(why, cap, "server shutting down");
			server__send_error(&t->cc, PROTO_ERR_INTERNAL, "%s",
					   why);
			return -ECANCELED;
		}
		r = stream_failed(t, true, why, cap);
		if (r)
			return r;
		if (ev)
			return phase_message(t, buf, why, cap);
		if (server__phase_sample_due(&ph))
			bench_run_sample(&t->run, NULL, 0);
		if (server__phase_over(&ph, why, cap)) {
			server__send_error(&t->cc, PROTO_ERR_LIMIT, "%s", why);
			return LR_ETIMEOUT;
		}
	}
}

/* After TEST_STOP: our senders end their streams (END, then the end of
 * file) and every stream we receive ends with its END and its end of file
 * or fails, within SERVER_STOP_GRACE_MS. Results only when all are whole:
 * a stream that failed fails the test, and the client gets an ERROR with
 * its reason instead of TEST_RESULTS. */
static int streams_whole(struct server_test *t, char *why, size_t cap)
{
	bench_run_stop(&t->run, SERVER_STOP_GRACE_MS);
	return stream_failed(t, false, why, cap);
}

/* Our results into res (arr for its streams) and the event's figures. */
static void our_results(struct server_test *t, struct proto_results *res,
			struct proto_stream_result *arr,
			struct server_event *ev)
{
	struct server *srv = t->srv;
	struct rusage ru;
	unsigned i;

	bench_run_results(&t->run, res, arr);
	if (!getrusage(RUSAGE_THREAD, &ru)) {
		res->cpu.user_us += (uint64_t)ru.ru_utime.tv_sec * 1000000 +
				    (uint64_t)ru.ru_utime.tv_usec;
		res->cpu.sys_us += (uint64_t)ru.ru_stime.tv_sec * 1000000 +
				   (uint64_t)ru.ru_stime.tv_usec;
	}
	res->cpu.wall_us = (uint64_t)(net_now_us() - t->run.t0_us);
	pthread_mutex_lock(&srv->lock);
	res->overlap = (uint16_t)t->overlap;
	pthread_mutex_unlock(&srv->lock);
	ev->overlap = res->overlap;
	for (i = 0; i < res->nstreams; i++) {
		double secs = (double)arr[i].duration_us / 1e6;

		if (t->run.streams[i].sender)
			ev->bytes_sent += arr[i].bytes;
		else
			ev->bytes_received += arr[i].bytes;
		if (secs > ev->seconds)
			ev->seconds = secs;
	}
}

/* Send our results; the client's complete the exchange. */
static int trade_results(struct server_test *t, uint8_t *buf,
			 struct proto_stream_result *arr,
			 struct server_event *ev, char *why, size_t cap)
{
	struct proto_results res;
	struct lr_err e = { 0 };
	struct proto_hdr h;
	struct proto_buf b;
	int r;

	our_results(t, &res, arr, ev);
	proto_buf_init(&b, buf, PROTO_MAX_BODY);
	r = proto_encode_results(&b, &res);
	if (!r)
		r = conn_send_msg(&t->cc, buf, b.len,
				  net_now_ms() + SERVER_CTRL_TIMEOUT_MS);
	if (r) {
		snprintf(why, cap, "sending results: %s", lr_strerror(r));
		return r;
	}
	r = conn_recv_msg(&t->cc, buf, SERVER_BUF_LEN, &h,
			  net_now_ms() + SERVER_CTRL_TIMEOUT_MS, &e);
	if (!r && h.type == PROTO_TEST_RESULTS) {
		struct proto_results cres = {
			.streams = arr, .cap = (uint16_t)t->run.nstreams
		};

		r = proto_decode_results(buf, h.len, &cres);
		if (r)
			snprintf(why, cap, "malformed client results");
	} else if (!r && h.type == PROTO_ERROR) {
		r = server__client_error(buf, h.len, why, cap);
	} else if (!r) {
		r = LR_EBADMSG;
		snprintf(why, cap, "expected TEST_RESULTS, got %s",
			 proto_type_name(h.type));
	} else {
		snprintf(why, cap, "client results: %s", e.msg);
	}
	return r;
}

int server__bench_test(struct server_test *t, uint8_t *buf,
		       const struct proto_test_request *req,
		       struct server_event *ev, char *why, size_t cap)
{
	struct proto_stream_result *arr = NULL;
	int r;

	r = bench_accept(t, buf, req, &arr, why, cap);
	if (!r)
		r = bench_start(t, req, why, cap);
	if (!r) {
		r = data_phase(t, buf, why, cap);
		if (r)
			bench_run_stop(&t->run, SERVER_STOP_GRACE_MS);
		else
			r = streams_whole(t, why, cap);
		if (!r)
			r = trade_results(t, buf, arr, ev, why, cap);
	}
	free(arr);
	return r;
}
