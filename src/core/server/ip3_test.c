// SPDX-License-Identifier: MIT
/* An iperf3 test's thread on linerate's iperf3 server: its parameters,
 * its place among --max-tests, its streams, the data phase until the
 * client's TEST_END, the results. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server_int.h"
#include "banned.h"

#define EVICTED_WORDS                                       \
	"gave its place to a newer test: too many waiting " \
	"for their parameters"

/* Wait for every data stream; LR_ETIMEOUT, LR_ECLOSED or -ECANCELED. */
static int wait_streams(struct ip3_test *t)
{
	struct ip3srv *srv = t->srv;
	int64_t dl = net_now_ms() + IP3S_ATTACH_TIMEOUT_MS;
	int r = 0;

	pthread_mutex_lock(&srv->lock);
	while (t->attached < t->expected) {
		struct timespec ts;

		if (atomic_load(&srv->stopping)) {
			r = -ECANCELED;
			break;
		}
		if (net_now_ms() >= dl) {
			r = LR_ETIMEOUT;
			break;
		}
		if (ip3s__ctrl_gone(t->ctrl)) {
			r = LR_ECLOSED;
			break;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&t->attach_cv, &srv->lock, &ts);
	}
	t->waiting = false;
	pthread_mutex_unlock(&srv->lock);
	return r;
}

/*
 * Start accepting data streams. UDP streams carry no cookie: they go to
 * the test from the same host that waits for them, so only one UDP test
 * per host may wait at a time; another one holds back its CREATE_STREAMS
 * (within IP3S_ATTACH_TIMEOUT_MS) until the first has all its streams.
 */
static int claim_waiting(struct ip3_test *t, bool udp)
{
	struct ip3srv *srv = t->srv;
	int64_t dl = net_now_ms() + IP3S_ATTACH_TIMEOUT_MS;
	struct ip3_test *o;

	for (;;) {
		struct timespec ts = { 0, 20 * 1000000L };
		bool busy = false;

		pthread_mutex_lock(&srv->lock);
		for (o = srv->tests; udp && o && !busy; o = o->next)
			busy = o != t && o->udp && o->waiting &&
			       !memcmp(o->host, t->host, 16);
		if (!busy) {
			t->udp = udp;
			t->expected = t->run.nstreams;
			t->waiting = true;
			/* its streams connect after CREATE_STREAMS, so
			 * are accepted after this */
			t->wait_seq = atomic_load(&srv->lsn.accepted);
		}
		pthread_mutex_unlock(&srv->lock);
		if (!busy)
			return 0;
		if (atomic_load(&srv->stopping))
			return -ECANCELED;
		if (net_now_ms() >= dl)
			return LR_ETIMEOUT;
		if (ip3s__ctrl_gone(t->ctrl))
			return LR_ECLOSED;
		nanosleep(&ts, NULL);
	}
}

/* iperf3's parameters as a linerate test request; 0 or an iperf3 error
 * code with why. */
static int params_to_req(const struct ip3srv *srv, const struct ip3_params *p,
			 struct proto_test_request *req, char *why, size_t cap)
{
	uint64_t per_stream;

	memset(req, 0, sizeof(*req));
	req->mode = p->bidir	 ? PROTO_MODE_BIDIR
		    : p->reverse ? PROTO_MODE_REVERSE
				 : PROTO_MODE_FORWARD;
	req->streams = (uint16_t)p->parallel;
	req->blksize = p->len;
	req->window = p->window;
	req->mss = p->mss;
	req->zerocopy = p->zerocopy ? PROTO_ZC_SENDFILE : PROTO_ZC_NONE;
	req->omit_ms = (uint64_t)p->omit_s * 1000;
	req->rate_bps = p->bandwidth;
	req->udp = p->udp;
	snprintf(req->cc, sizeof(req->cc), "%s", p->congestion);
	/* the client owns the clock: our senders stop at its TEST_END */
	req->duration_ms = 0;
	if (p->bytes)
		req->bytes = p->bytes;
	else if (p->blocks)
		req->bytes = p->blocks > UINT64_MAX / p->len
				     ? UINT64_MAX
				     : p->blocks * (uint64_t)p->len;
	if (p->udp &&
	    p->len < (p->udp_counters64 ? UDP_HDR_LEN64 : UDP_HDR_LEN32)) {
		snprintf(why, cap,
			 "UDP datagrams of %u bytes are shorter "
			 "than the header",
			 p->len);
		return IP3_IEUDPBLOCKSIZE;
	}
	if ((uint64_t)(p->time_s + p->omit_s) * 1000 > srv->o.max_duration_ms) {
		snprintf(why, cap,
			 "requested %u s exceeds this server's limit of "
			 "%.1f s (--max-duration)",
			 p->time_s + p->omit_s,
			 (double)srv->o.max_duration_ms / 1000.0);
		return IP3_IEDURATION;
	}
	per_stream = bench_recv_buf(req);
	if ((uint64_t)bench_conn_count(req) * per_stream > BENCH_MAX_TEST_MEM) {
		snprintf(why, cap,
			 "%u streams of %u-byte blocks exceed the "
			 "server's memory bound per test",
			 bench_conn_count(req), p->len);
		return IP3_IEBLOCKSIZE;
	}
	return 0;
}

/* A state byte from the client during the data phase: 0 at TEST_END,
 * 1 when there was none after all, else an error with why. */
static int phase_state(struct ip3_test *t, char *why, size_t cap)
{
	uint8_t b;
	ssize_t k = recv(t->ctrl, &b, 1, MSG_DONTWAIT);

	if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
		snprintf(why, cap, "client disconnected during the test");
		return LR_ECLOSED;
	}
	if (k < 0)
		return 1;
	if ((int8_t)b == IP3_TEST_END) {
		t->end_us = net_now_us();
		return 0;
	}
	if ((int8_t)b == IP3_CLIENT_TERMINATE) {
		snprintf(why, cap, "client terminated the test");
		return -ECONNABORTED;
	}
	snprintf(why, cap, "unexpected state %d during the test", (int8_t)b);
	ip3s__send_error(t, IP3_IEMESSAGE, 0);
	return LR_EBADMSG;
}

/* Run until the client's TEST_END; 0 or an error with why. */
static int data_phase(struct ip3_test *t, struct iv_log *l, char *why,
		      size_t cap)
{
	struct ip3srv *srv = t->srv;
	struct server_phase ph;
	struct bench_stream *s;
	unsigned i;
	int ev, r, due;

	/* a test without an end of its own (iperf3 -t 0) ends at the
	 * limit itself; the others have the grace for their TEST_END */
	server__phase_init(&ph, &t->run, srv->o.max_duration_ms,
			   t->run.req.duration_ms || t->run.req.bytes
				   ? SERVER_STOP_GRACE_MS
				   : 0);
	for (;;) {
		ev = server__phase_wait(&ph, t->ctrl);
		if (ev < 0)
			return ev;
		if (atomic_load(&srv->stopping)) {
			snprintf(why, cap, "server shutting down");
			ip3s__send_state(t, IP3_SERVER_TERMINATE);
			return -ECANCELED;
		}
		if (ev && (r = phase_state(t, why, cap)) != 1)
			return r;
		if ((s = server__phase_failed(&ph, &i))) {
			snprintf(why, cap, "stream %u: %s", i + 1,
				 lr_strerror(s->error));
			ip3s__send_error(t,
					 s->sender ? IP3_IESTREAMWRITE
						   : IP3_IESTREAMREAD,
					 -s->error > 0 && -s->error < 4096
						 ? -s->error
						 : 0);
			return s->error;
		}
		due = server__phase_sample_due(&ph);
		if (due)
			ip3s__sample(&t->run, due == 1 ? l : NULL);
		if (server__phase_over(&ph, why, cap)) {
			ip3s__send_state(t, IP3_SERVER_TERMINATE);
			return LR_ETIMEOUT;
		}
	}
}

/* After TEST_END: TCP data still queued for our receivers is counted
 * (bounded by IP3S_DRAIN_MS), then every stream stops. */
static void engine_stop(struct bench_run *run)
{
	int64_t dl = net_now_ms() + IP3S_DRAIN_MS;
	unsigned i, quiet = 0;

	if (run->req.udp) {
		bench_run_stop(run, BENCH_UDP_SILENCE_MS + 250);
		return;
	}
	bench_run_halt(run);
	while (net_now_ms() < dl && quiet < 2) {
		bool empty = true;

		for (i = 0; i < run->nstreams; i++) {
			int q = 0;

			if (run->streams[i].sender)
				continue;
			if (!ioctl(run->streams[i].fd, FIONREAD, &q) && q > 0)
				empty = false;
		}
		quiet = empty ? quiet + 1 : 0;
		if (quiet < 2) {
			struct timespec ts = { 0, 10 * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
	bench_run_stop(run, 0);
}

/* PARAM_EXCHANGE, then the client's parameters as a test request; 0 or
 * an error with why (the client told what it can be told). */
static int read_params(struct ip3_test *t, struct ip3_params *p,
		       struct proto_test_request *req, struct server_event *ev,
		       char *why, size_t cap)
{
	struct ip3srv *srv = t->srv;
	int64_t params_dl = net_now_ms() + IP3SRV_PARAMS_MS;
	struct lr_err e = { 0 };
	char *json = NULL;
	size_t len = 0;
	int r, code;

	r = ip3s__send_state(t, IP3_PARAM_EXCHANGE);
	if (r) {
		snprintf(why, cap, "sending PARAM_EXCHANGE: %s",
			 lr_strerror(r));
		return r;
	}
	r = ip3s__read_json(t, IP3_MAX_JSON, params_dl, &json, &len, why, cap,
			    "parameters");
	if (r) {
		pthread_mutex_lock(&srv->lock);
		if (t->evicted)
			snprintf(why, cap, EVICTED_WORDS);
		pthread_mutex_unlock(&srv->lock);
		if (r != LR_ECLOSED && r != LR_ETIMEOUT)
			ip3s__send_error(t, IP3_IERECVPARAMS, 0);
		return r;
	}
	r = ip3_params_decode(json, len, p, &e);
	free(json);
	if (r) {
		snprintf(why, cap, "%s", e.msg);
		ip3s__send_error(t, IP3_IERECVPARAMS, EINVAL);
		return r;
	}
	code = params_to_req(srv, p, req, why, cap);
	ev->req = *req;
	if (code) {
		ip3s__send_error(t, code, 0);
		return -EINVAL;
	}
	return 0;
}

/* Accepted: from now on the test counts against max_tests, unless it
 * gave its place up meanwhile or the limit is reached. */
static int take_slot(struct ip3_test *t, char *why, size_t cap)
{
	struct ip3srv *srv = t->srv;
	bool busy, evicted;

	pthread_mutex_lock(&srv->lock);
	evicted = t->evicted;
	busy = srv->active >= srv->o.max_tests;
	if (!evicted && !busy) {
		t->setup = false;
		t->counted = true;
		srv->active++;
	}
	pthread_mutex_unlock(&srv->lock);
	if (evicted) {
		snprintf(why, cap, EVICTED_WORDS);
		return LR_ECLOSED;
	}
	if (busy) {
		snprintf(why, cap,
			 "busy: the limit of iperf3 tests at once is reached "
			 "(--max-tests); answered ACCESS_DENIED");
		ip3s__send_state(t, IP3_ACCESS_DENIED);
		return -EBUSY;
	}
	return 0;
}

/* The streams' socket options (TCP tests). */
static int apply_sockopts(struct ip3_test *t, const struct ip3_params *p,
			  const struct proto_test_request *req, char *why,
			  size_t cap)
{
	struct net_sockopts so = { .window = req->window,
				   .mss = req->mss,
				   .cc = req->cc,
				   .nodelay = p->nodelay };
	struct lr_err e = { 0 };
	unsigned i;
	int r = 0;

	if (p->udp)
		return 0;
	for (i = 0; i < t->run.nstreams && !r; i++)
		r = net_apply_sockopts(t->run.streams[i].fd, &so, &e);
	if (r) {
		snprintf(why, cap, "%s", e.msg);
		ip3s__send_error(t,
				 req->cc[0] ? IP3_IESETCONGESTION
					    : IP3_IECREATESTREAM,
				 -r > 0 && -r < 4096 ? -r : 0);
	}
	return r;
}

/* The run, then CREATE_STREAMS and every stream connected. */
static int setup_streams(struct ip3_test *t, const struct ip3_params *p,
			 const struct proto_test_request *req, char *why,
			 size_t cap)
{
	struct lr_err e = { 0 };
	int r;

	r = bench_run_init(&t->run, req, false, &e);
	if (!r && !req->bytes)
		t->run.expect_ms = (uint64_t)p->time_s * 1000;
	if (r) {
		snprintf(why, cap, "%s", e.msg);
		ip3s__send_error(t, IP3_IENEWTEST,
				 -r > 0 && -r < 4096 ? -r : 0);
		return r;
	}
	t->run.udp_counters64 = p->udp_counters64;
	r = claim_waiting(t, p->udp);
	if (r) {
		snprintf(why, cap,
			 "another UDP test from this host kept setting up "
			 "its streams: %s",
			 lr_strerror(r));
		if (r == LR_ETIMEOUT)
			ip3s__send_error(t, IP3_IESTREAMACCEPT, ETIMEDOUT);
		return r;
	}
	r = ip3s__send_state(t, IP3_CREATE_STREAMS);
	if (r) {
		snprintf(why, cap, "sending CREATE_STREAMS: %s",
			 lr_strerror(r));
		return r;
	}
	r = wait_streams(t);
	if (r) {
		snprintf(why, cap, "only %u of %u data streams connected%s",
			 t->attached, t->expected,
			 r == LR_ECLOSED   ? ": client disconnected"
			 : r == -ECANCELED ? ": server shutting down"
					   : " in time");
		if (r == LR_ETIMEOUT)
			ip3s__send_error(t, IP3_IESTREAMACCEPT, ETIMEDOUT);
		return r;
	}
	return apply_sockopts(t, p, req, why, cap);
}

/* TEST_START, the run, TEST_RUNNING, the data phase until TEST_END, the
 * results, IPERF_DONE. */
static int run_test(struct ip3_test *t, const struct ip3_params *p,
		    struct iv_log *log, const struct rusage *ru0,
		    struct server_event *ev, char *why, size_t cap)
{
	struct lr_err e = { 0 };
	int64_t start_wall;
	int r;

	r = ip3s__send_state(t, IP3_TEST_START);
	if (r) {
		snprintf(why, cap, "sending TEST_START: %s", lr_strerror(r));
		return r;
	}
	start_wall = (int64_t)time(NULL);
	r = bench_run_ready(&t->run, &e);
	if (r) {
		snprintf(why, cap, "%s", e.msg);
		ip3s__send_error(t, IP3_IEINITTEST, 0);
	}
	if (!r) {
		r = ip3s__send_state(t, IP3_TEST_RUNNING);
		if (r)
			snprintf(why, cap, "sending TEST_RUNNING: %s",
				 lr_strerror(r));
	}
	/* the clock starts as TEST_RUNNING leaves: iperf3's client starts
	 * its own when it arrives */
	if (!r)
		bench_run_go(&t->run);
	if (!r)
		r = data_phase(t, p->get_server_output ? log : NULL, why, cap);
	if (r) {
		atomic_store(&t->run.abort, true);
		bench_run_stop(&t->run, 0);
		return r;
	}
	engine_stop(&t->run);
	r = ip3s__results_phase(t, p, log, ru0, start_wall, ev, why, cap);
	if (!r)
		r = ip3s__wait_done(t, why, cap);
	return r;
}

/* The test is over: tell the caller, close, give the slot back. */
static void test_end(struct ip3_test *t, struct server_event *ev, int r,
		     const char *why)
{
	struct ip3srv *srv = t->srv;

	ev->ok = r == 0;
	ev->test_no = t->no;
	ev->reason = why;
	snprintf(ev->peer, sizeof(ev->peer), "%s", t->peer);
	ip3s__emit(srv, ev);
	pthread_mutex_lock(&srv->lock);
	t->waiting = false;
	t->setup = false;
	close(t->ctrl);
	t->ctrl = -1;
	if (t->counted)
		srv->active--;
	pthread_mutex_unlock(&srv->lock);
	bench_run_fini(&t->run);
	atomic_store(&t->finished, true);
	server__wake(srv->evfd);
}

void *ip3s__test_main(void *arg)
{
	struct ip3_test *t = arg;
	struct server_event ev = { .kind = SERVER_EV_TEST_DONE };
	struct proto_test_request req;
	struct ip3_params p;
	struct iv_log log = { 0 };
	struct rusage ru0;
	char why[LR_ERR_MSG] = "";
	int one = 1, r;

	memset(&ru0, 0, sizeof(ru0));
	memset(&req, 0, sizeof(req));
	getrusage(RUSAGE_THREAD, &ru0);
	setsockopt(t->ctrl, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	r = read_params(t, &p, &req, &ev, why, sizeof(why));
	if (!r)
		r = take_slot(t, why, sizeof(why));
	if (!r)
		r = setup_streams(t, &p, &req, why, sizeof(why));
	if (!r)
		r = run_test(t, &p, &log, &ru0, &ev, why, sizeof(why));
	test_end(t, &ev, r, why);
	ip3s__iv_log_free(&log);
	return NULL;
}
