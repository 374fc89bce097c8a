// SPDX-License-Identifier: MIT
/* `linerate bench --iperf3`: a test against a stock iperf3 server, in
 * iperf3's client sequence, on the loop both clients share (loop.c). */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "config.h"
#include "ip3.h"
#include "link.h"
#include "udp.h"
#include "token.h"
#include "bench_int.h"
#include "banned.h"

_Static_assert(LR_IP3_PORT == IP3_DEFAULT_PORT &&
		       BENCH_IP3_MAX_STREAMS == IP3_MAX_STREAMS,
	       "token.h's and bench.h's iperf3 figures are ip3.h's");

/* Every control read and write has this deadline. */
#define IP3C_CTRL_TIMEOUT_MS	10000
#define IP3C_RESULTS_TIMEOUT_MS 15000
/* Senders: time for the last writes to end and be acknowledged. */
#define SEND_DRAIN_MS 5000
/* Receivers after TEST_END: the data in flight ends when nothing has
 * arrived for QUIET_MS, or at DRAIN_MS at the latest. */
#define RECV_QUIET_MS 100
#define RECV_DRAIN_MS 3000
#define UDP_GRACE_MS  2000
/* -n: a test where no byte moves this long has stalled */
#define STALL_MS 30000

/* What an iperf3 error code (iperf_api.h, 3.x) means, for the common
 * ones a server reports; NULL when not known here. */
static const char *ip3_errstr(int32_t code)
{
	switch (code) {
	case 5: return "test duration too long";
	case 6: return "too many parallel streams";
	case 7: return "block size out of range";
	case 8: return "socket buffer size out of range";
	case 10: return "MSS out of range";
	case 11: return "zero-copy not supported on the server";
	case 12: return "omit value out of range";
	case 20: return "UDP block size out of range";
	case 106: return "cannot read the cookie";
	case 108: return "cannot read from the control socket";
	case 109: return "the control socket closed unexpectedly";
	case 114: return "cannot read the parameters";
	case 117: return "cannot read the results";
	case 119: return "the client has terminated";
	case 121: return "the server is busy running a test";
	case 123: return "cannot set the TCP MSS";
	case 124: return "cannot set the socket buffer size";
	case 130: return "cannot set the socket window size";
	case 134: return "cannot set the TCP congestion control algorithm";
	case 140: return "cannot set the socket pacing rate";
	case 141: return "socket buffer size not as requested";
	case 142: return "test authorization failed";
	case 144: return "no message received in time";
	case 200: return "cannot create a new stream";
	case 201: return "cannot initialize a stream";
	case 202: return "cannot listen for streams";
	case 203: return "cannot connect a stream";
	case 204: return "cannot accept a stream";
	case 205: return "cannot write to a stream";
	case 206: return "cannot read from a stream";
	case 207: return "a stream closed unexpectedly";
	case 208: return "stream has an invalid id";
	default: return NULL;
	}
}

static const char *state_name(int st)
{
	switch (st) {
	case IP3_TEST_START: return "TEST_START";
	case IP3_TEST_RUNNING: return "TEST_RUNNING";
	case IP3_TEST_END: return "TEST_END";
	case IP3_PARAM_EXCHANGE: return "PARAM_EXCHANGE";
	case IP3_CREATE_STREAMS: return "CREATE_STREAMS";
	case IP3_SERVER_TERMINATE: return "SERVER_TERMINATE";
	case IP3_CLIENT_TERMINATE: return "CLIENT_TERMINATE";
	case IP3_EXCHANGE_RESULTS: return "EXCHANGE_RESULTS";
	case IP3_DISPLAY_RESULTS: return "DISPLAY_RESULTS";
	case IP3_IPERF_START: return "IPERF_START";
	case IP3_IPERF_DONE: return "IPERF_DONE";
	case IP3_ACCESS_DENIED: return "ACCESS_DENIED";
	case IP3_SERVER_ERROR: return "SERVER_ERROR";
	default: return "an unknown state";
	}
}

/* The SERVER_ERROR that follows its state byte: iperf3's error code and
 * errno, big-endian ints; some servers (3.12 refusing authentication)
 * close after the first. */
static int server_error(int fd, struct lr_err *err)
{
	uint8_t b[8];
	int32_t code, eno = 0;
	const char *what;

	if (net_read_full(fd, b, 4, net_now_ms() + IP3C_CTRL_TIMEOUT_MS))
		return lr_err_set(err, LR_EPEER,
				  "iperf3 server reported an error, then "
				  "closed the connection");
	code = (int32_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
			 (uint32_t)b[2] << 8 | b[3]);
	if (!net_read_full(fd, b + 4, 4, net_now_ms() + 1000))
		eno = (int32_t)((uint32_t)b[4] << 24 | (uint32_t)b[5] << 16 |
				(uint32_t)b[6] << 8 | b[7]);
	what = ip3_errstr(code);
	if (eno > 0 && eno < 4096)
		return lr_err_set(err, LR_EPEER,
				  "iperf3 server error: %s (iperf3 error %d): "
				  "%s",
				  what ? what : "see iperf3's error list", code,
				  lr_strerror(-eno));
	return lr_err_set(err, LR_EPEER,
			  "iperf3 server error: %s (iperf3 error %d)",
			  what ? what : "see iperf3's error list", code);
}

/* Read one state byte; the ones that end a test become errors. */
static int read_state(int fd, int64_t deadline_ms, const char *what, int *state,
		      struct lr_err *err)
{
	int8_t st;
	int r;

	r = net_read_full(fd, &st, 1, deadline_ms);
	if (r == LR_ECLOSED)
		return lr_err_set(err, r,
				  "iperf3 server closed the connection while "
				  "waiting for %s",
				  what);
	if (r == LR_ETIMEOUT)
		return lr_err_set(err, r,
				  "timed out waiting for %s from the "
				  "iperf3 server",
				  what);
	if (r)
		return lr_err_setc(err, r, "reading from the iperf3 server");
	switch (st) {
	case IP3_ACCESS_DENIED:
		return lr_err_set(err, LR_EBUSY,
				  "server busy: the iperf3 server is running "
				  "another test (ACCESS_DENIED)");
	case IP3_SERVER_ERROR: return server_error(fd, err);
	case IP3_SERVER_TERMINATE:
		return lr_err_set(err, LR_EPEER,
				  "the iperf3 server was terminated");
	default: break;
	}
	*state = st;
	return 0;
}

static int expect_state(int fd, int want, int timeout_ms, struct lr_err *err)
{
	int st = 0, r;

	r = read_state(fd, net_now_ms() + timeout_ms, state_name(want), &st,
		       err);
	if (r)
		return r;
	if (st != want)
		return lr_err_set(err, LR_EBADMSG,
				  "expected %s from the iperf3 server, got "
				  "%s (%d)",
				  state_name(want), state_name(st), st);
	return 0;
}

static int send_state(int fd, int st, struct lr_err *err)
{
	int8_t b = (int8_t)st;
	int r = net_write_full(fd, &b, 1, net_now_ms() + IP3C_CTRL_TIMEOUT_MS);

	return r ? lr_err_setc(err, r, "sending %s to the iperf3 server",
			       state_name(st))
		 : 0;
}

/* A JSON message: 4-byte big-endian length, then the text. */
static int send_json(int fd, const char *json, size_t len, const char *what,
		     struct lr_err *err)
{
	uint8_t hdr[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16),
			   (uint8_t)(len >> 8), (uint8_t)len };
	int64_t dl = net_now_ms() + IP3C_CTRL_TIMEOUT_MS;
	int r = net_write_full(fd, hdr, 4, dl);

	if (!r)
		r = net_write_full(fd, json, len, dl);
	return r ? lr_err_setc(err, r, "sending %s to the iperf3 server", what)
		 : 0;
}

/* Read a JSON message into buf (cap >= max): its length is bounded by
 * max before anything is read into buf. */
static int recv_json(int fd, char *buf, uint32_t max, size_t *len,
		     const char *what, struct lr_err *err)
{
	int64_t dl = net_now_ms() + IP3C_RESULTS_TIMEOUT_MS;
	uint8_t hdr[4];
	int64_t n;
	int r;

	r = net_read_full(fd, hdr, 4, dl);
	if (!r) {
		n = ip3_json_len(hdr, max);
		if (n < 0)
			return lr_err_set(err, (int)n,
					  "iperf3 server sent %s of a bad "
					  "length (limit %u bytes)",
					  what, max);
		r = net_read_full(fd, buf, (size_t)n, dl);
		if (!r) {
			*len = (size_t)n;
			return 0;
		}
	}
	if (r == LR_ECLOSED)
		return lr_err_set(err, r,
				  "iperf3 server closed the connection while "
				  "sending %s",
				  what);
	if (r == LR_ETIMEOUT)
		return lr_err_set(err, r,
				  "timed out waiting for %s from the iperf3 "
				  "server",
				  what);
	return lr_err_setc(err, r, "reading %s from the iperf3 server", what);
}

/* iperf3 numbers its streams 1, 3, 4, 5, ...: 2 is skipped. */
static uint32_t stream_id(unsigned idx)
{
	return idx ? idx + 2 : 1;
}

static uint32_t ceil_s(uint64_t ms)
{
	uint64_t s = (ms + 999) / 1000;

	return s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

static void make_params(const struct bench_opts *o,
			const struct ip3_client_opts *x, struct ip3_params *p)
{
	const struct proto_test_request *q = &o->req;

	memset(p, 0, sizeof(*p));
	p->udp = q->udp;
	p->tcp = !q->udp;
	p->reverse = q->mode == PROTO_MODE_REVERSE;
	p->bidir = q->mode == PROTO_MODE_BIDIR;
	/* the client owns the timer: iperf3 counts whole seconds, the
	 * server only uses them for its own checks */
	p->time_s = q->bytes ? 0 : ceil_s(q->duration_ms);
	p->bytes = q->bytes;
	p->omit_s = ceil_s(q->omit_ms);
	p->parallel = q->streams;
	p->len = q->blksize;
	p->bandwidth = q->rate_bps;
	p->window = q->window;
	p->mss = q->mss;
	p->zerocopy = q->zerocopy != PROTO_ZC_NONE;
	p->get_server_output = x->get_server_output;
	p->udp_counters64 = q->udp && x->counters64;
	snprintf(p->congestion, sizeof(p->congestion), "%s", q->cc);
	if (x->title)
		snprintf(p->title, sizeof(p->title), "%s", x->title);
	snprintf(p->client_version, sizeof(p->client_version), "linerate %s",
		 LINERATE_VERSION);
}

/* One UDP data stream: connect, send iperf3's 4-byte hello (a host-order
 * int, as iperf3 writes it), wait for the server's 4 bytes. */
static int udp_stream_open(const struct net_addr *addr,
			   const struct net_addr *local, uint32_t window,
			   int timeout_ms, const char *where, unsigned n,
			   struct lr_err *err)
{
	uint32_t hello = UDP_CONNECT_MSG, reply;
	struct pollfd pf;
	int64_t dl = net_now_ms() + timeout_ms;
	int fd, r, sz;
	ssize_t k;

	fd = socket(addr->ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return lr_err_setc(err, -errno, "UDP socket");
	if (local &&
	    bind(fd, (const struct sockaddr *)&local->ss, local->len)) {
		r = lr_err_setc(err, -errno, "binding UDP stream %u", n);
		goto out_close;
	}
	if (window) {
		sz = (int)window;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	}
	if (connect(fd, (const struct sockaddr *)&addr->ss, addr->len)) {
		r = lr_err_setc(err, -errno, "connect UDP %s", where);
		goto out_close;
	}
	if (send(fd, &hello, sizeof(hello), 0) != (ssize_t)sizeof(hello)) {
		r = lr_err_setc(err, -errno, "UDP stream %u to %s", n, where);
		goto out_close;
	}
	for (;;) {
		int64_t left = dl - net_now_ms();

		if (left <= 0) {
			r = lr_err_set(err, LR_ETIMEOUT,
				       "UDP stream %u: no answer from the "
				       "iperf3 server at %s",
				       n, where);
			goto out_close;
		}
		pf.fd = fd;
		pf.events = POLLIN;
		pf.revents = 0;
		if (poll(&pf, 1, (int)left) < 0 && errno != EINTR) {
			r = lr_err_setc(err, -errno, "poll");
			goto out_close;
		}
		if (!pf.revents)
			continue;
		k = recv(fd, &reply, sizeof(reply), MSG_DONTWAIT);
		if (k == (ssize_t)sizeof(reply))
			break;
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		r = k < 0 ? lr_err_setc(err, -errno, "UDP stream %u to %s", n,
					where)
			  : lr_err_set(err, LR_EBADMSG,
				       "UDP stream %u: the iperf3 server's "
				       "answer is %zd bytes, not 4",
				       n, k);
		goto out_close;
	}
	return fd;

out_close:
	close(fd);
	return r;
}

static int open_streams(const struct bench_opts *o, const struct net_addr *addr,
			const struct net_addr *bind, const char *where,
			const char cookie[IP3_COOKIE_LEN],
			struct bench_run *run, struct lr_err *err)
{
	struct net_sockopts so = {
		.window = o->req.window,
		.mss = o->req.mss,
		.cc = o->req.cc,
	};
	unsigned i;
	int r;

	/* iperf3 connects the sending streams first (--bidir): as the
	 * engine orders them */
	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream *s = &run->streams[i];
		const struct net_addr *from;
		struct net_addr tmp;

		r = bench__stream_bind(addr, bind, o->cport, i, &tmp, &from,
				       err);
		if (r)
			return r;
		if (o->req.udp) {
			r = udp_stream_open(addr, from, o->req.window,
					    o->connect_timeout_ms, where, i + 1,
					    err);
			if (r < 0)
				return r;
			s->fd = r;
			continue;
		}
		r = net_connect(addr, from, &so, o->connect_timeout_ms, err);
		if (r < 0)
			return r;
		s->fd = r;
		r = net_write_full(s->fd, cookie, IP3_COOKIE_LEN,
				   net_now_ms() + IP3C_CTRL_TIMEOUT_MS);
		if (r)
			return lr_err_setc(err, r, "opening stream %u to %s",
					   i + 1, where);
	}
	return 0;
}

/* Bytes received so far on the streams this side receives on. */
static uint64_t received(const struct bench_run *run)
{
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i < run->nstreams; i++)
		if (!run->streams[i].sender)
			sum += atomic_load(&run->streams[i].bytes);
	return sum;
}

static uint64_t moved_bytes(const struct bench_run *run)
{
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i < run->nstreams; i++)
		sum += atomic_load(&run->streams[i].bytes);
	return sum;
}

static bool senders_done(const struct bench_run *run)
{
	unsigned i;

	for (i = 0; i < run->nstreams; i++)
		if (run->streams[i].sender &&
		    !atomic_load(&run->streams[i].done))
			return false;
	return true;
}

static bool senders_any(const struct bench_run *run)
{
	unsigned i;

	for (i = 0; i < run->nstreams; i++)
		if (run->streams[i].sender)
			return true;
	return false;
}

static bool have_receivers(const struct bench_run *run)
{
	unsigned i;

	for (i = 0; i < run->nstreams; i++)
		if (!run->streams[i].sender)
			return true;
	return false;
}

/* -n: this side has sent its bytes and received the server's. */
static bool bytes_done(const struct bench_run *run)
{
	if (!senders_done(run))
		return false;
	return !have_receivers(run) || received(run) >= run->req.bytes;
}

static void wait_ev(struct bench_run *run, int ms)
{
	struct pollfd pf = { .fd = run->evfd, .events = POLLIN };
	uint64_t v;

	if (poll(&pf, 1, ms) > 0 && read(run->evfd, &v, sizeof(v)) < 0) {
		/* drained elsewhere */
	}
}

/*
 * Before TEST_END. A timed test ends at its deadline, as with iperf3's
 * own client: the senders stopped there by themselves (a write still
 * blocked on a full socket ends when it can) and TEST_END goes at once,
 * so that the server's clock stops with ours and it sends nothing after
 * it; what is in flight then is what iperf3's figures leave out too. A
 * test of -n bytes has no deadline: there the senders end their writes
 * and the server's kernel acknowledges every byte first, so that the
 * server counts (all but what it has yet to read of) what we sent.
 */
static void drain_senders(struct bench_run *run)
{
	struct timespec settle = { 0, 20 * 1000 * 1000 };
	int64_t dl = net_now_ms() + SEND_DRAIN_MS;
	unsigned i;
	bool busy;

	bench_run_halt(run);
	if (!senders_any(run) || run->req.duration_ms)
		return;
	while (!senders_done(run) && net_now_ms() < dl)
		wait_ev(run, 10);
	if (run->req.udp)
		goto out_settle;
	do {
		busy = false;
		for (i = 0; i < run->nstreams; i++) {
			int q = 0;

			if (run->streams[i].sender &&
			    !ioctl(run->streams[i].fd, SIOCOUTQ, &q) && q > 0)
				busy = true;
		}
		if (busy) {
			struct timespec ts = { 0, 2 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
	} while (busy && net_now_ms() < dl);
	/* the server reads what its kernel holds within a few ms; with
	 * --bidir its one thread is busy sending as well (3.12 has one
	 * thread for all streams) and may hold the whole receive buffer
	 * (tcp_rmem, 32 MiB on loopback here) for longer */
	if (have_receivers(run))
		settle.tv_nsec = 200 * 1000 * 1000;
out_settle:
	nanosleep(&settle, NULL);
}

/*
 * After the server has stopped sending (it answered TEST_END): read what
 * is still in flight until the receivers are quiet, then stop the engine.
 * The server keeps its sockets open until IPERF_DONE, so there is no EOF
 * to wait for.
 */
static void stop_receivers(struct bench_run *run)
{
	int64_t dl = net_now_ms() + RECV_DRAIN_MS, quiet_since = net_now_ms();
	uint64_t last = received(run), now_b;

	if (!run->req.udp && have_receivers(run)) {
		while (net_now_ms() < dl) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			nanosleep(&ts, NULL);
			now_b = received(run);
			if (now_b != last) {
				last = now_b;
				quiet_since = net_now_ms();
			} else if (net_now_ms() - quiet_since >=
				   RECV_QUIET_MS) {
				break;
			}
		}
	}
	bench_run_stop(run, run->req.udp ? UDP_GRACE_MS : 0);
}

static void side_from_remote(struct bench_side *d,
			     const struct ip3_stream_result *r, bool udp,
			     bool sender, int sender_has_retransmits,
			     double duration)
{
	memset(d, 0, sizeof(*d));
	d->bytes = r->bytes;
	d->seconds = r->end_time > r->start_time ? r->end_time - r->start_time
						 : duration;
	if (sender && !udp && r->retransmits >= 0 &&
	    sender_has_retransmits == 1) {
		d->has_tcp = true;
		d->retrans = r->retransmits > UINT32_MAX
				     ? UINT32_MAX
				     : (uint32_t)r->retransmits;
	}
	if (udp) {
		d->packets = r->packets;
		if (!sender) {
			d->lost = r->errors;
			d->jitter_ms = r->jitter * 1000.0;
		}
	}
}

/* One test against an iperf3 server, as its steps see it. */
struct ip3_client {
	const struct bench_opts *o;
	const struct ip3_client_opts *x;
	const struct bench_callbacks *cb;
	struct bench_result *res;
	struct bench__dial d;
	int fd;
	char *buf;
	uint32_t res_max;
	char cookie[IP3_COOKIE_LEN];
	struct ip3_results *lres, *rres;
	struct bench_run run;
	bool run_ok; /* bench_run_init succeeded: fini it */
	struct bench_interval iv;
	struct bench_client_clock clk;
	uint64_t last_moved;
	int64_t last_move_ms;
};

/* The cookie, the parameters, then CREATE_STREAMS. */
static int send_params(void *arg, struct lr_err *err)
{
	struct ip3_client *c = arg;
	struct ip3_params params;
	int r;

	r = ip3_cookie_new(c->cookie);
	if (r)
		return lr_err_setc(err, r, "making a cookie");
	snprintf(c->res->cookie, sizeof(c->res->cookie), "%.*s",
		 IP3_COOKIE_LEN - 1, c->cookie);
	r = net_write_full(c->fd, c->cookie, IP3_COOKIE_LEN,
			   net_now_ms() + IP3C_CTRL_TIMEOUT_MS);
	if (r)
		return lr_err_setc(err, r, "sending the cookie to %s",
				   c->d.where);
	r = expect_state(c->fd, IP3_PARAM_EXCHANGE, IP3C_CTRL_TIMEOUT_MS, err);
	if (r)
		return r;
	make_params(c->o, c->x, &params);
	r = ip3_params_encode(&params, c->buf, IP3_MAX_JSON);
	if (r < 0)
		return lr_err_setc(err, r, "encoding the iperf3 parameters");
	r = send_json(c->fd, c->buf, (size_t)r, "the parameters", err);
	if (r)
		return r;
	return expect_state(c->fd, IP3_CREATE_STREAMS, IP3C_CTRL_TIMEOUT_MS,
			    err);
}

/* The run and its streams, TEST_START and TEST_RUNNING, the start. */
static int open_test(void *arg, struct lr_err *err)
{
	struct ip3_client *c = arg;
	int r;

	r = bench_run_init(&c->run, &c->o->req, true, err);
	if (r)
		return r;
	c->run_ok = true;
	c->run.udp_counters64 = c->x->counters64;
	r = open_streams(c->o, &c->d.addr, c->d.bindp, c->d.where, c->cookie,
			 &c->run, err);
	if (!r)
		r = bench__client_ready(&c->run, c->res, &c->iv, err);
	if (!r)
		r = expect_state(c->fd, IP3_TEST_START, IP3C_CTRL_TIMEOUT_MS,
				 err);
	if (!r)
		r = expect_state(c->fd, IP3_TEST_RUNNING, IP3C_CTRL_TIMEOUT_MS,
				 err);
	if (r)
		return r;
	bench__client_go(&c->run, c->o, c->cb, c->res);
	return 0;
}

/* A state byte from the server during the test ends it: why. */
static int ctrl_readable(void *ctx, struct lr_err *err)
{
	struct ip3_client *c = ctx;
	int r, st = 0;

	r = read_state(c->fd, net_now_ms() + IP3C_CTRL_TIMEOUT_MS,
		       "the end of the test", &st, err);
	if (!r)
		r = lr_err_set(err, LR_EBADMSG,
			       "unexpected %s (%d) from the iperf3 server "
			       "during the test",
			       state_name(st), st);
	if (r == LR_ECLOSED)
		r = lr_err_set(err, r,
			       "iperf3 server closed the connection during "
			       "the test");
	return r;
}

/* -n has no timer: the test ends with the bytes, and a test where
 * nothing moves ends with an error. */
static int after_turn(void *ctx, int64_t now_ms, struct lr_err *err)
{
	struct ip3_client *c = ctx;
	uint64_t moved;

	if (!c->o->req.bytes)
		return 0;
	if (c->run.omit_done && bytes_done(&c->run))
		return 1;
	moved = moved_bytes(&c->run);
	if (moved != c->last_moved) {
		c->last_moved = moved;
		c->last_move_ms = now_ms;
	} else if (now_ms - c->last_move_ms >= STALL_MS) {
		return lr_err_set(err, LR_ETIMEOUT, "no data moved for %d s",
				  STALL_MS / 1000);
	}
	return 0;
}

/* The end: our senders drain, TEST_END, the server stops sending and
 * says EXCHANGE_RESULTS, our receivers read what is in flight. */
static int end_test(struct ip3_client *c, struct lr_err *err)
{
	int r;

	drain_senders(&c->run);
	r = send_state(c->fd, IP3_TEST_END, err);
	if (!r)
		r = expect_state(c->fd, IP3_EXCHANGE_RESULTS,
				 IP3C_RESULTS_TIMEOUT_MS, err);
	if (r)
		return r;
	stop_receivers(&c->run);
	bench__client_tail(&c->run, c->o, c->cb, &c->clk);
	return bench_run_error(&c->run, false, err);
}

/* This side's figures: CPU, duration, each stream, and iperf3's
 * results object for the server. */
static void our_results(struct ip3_client *c)
{
	struct bench_result *res = c->res;
	struct ip3_results *lres = c->lres;
	struct bench_run *run = &c->run;
	struct rusage ru1;
	bool has_retrans = false;
	int64_t wall_us;
	double cpu_wall;
	unsigned i;

	getrusage(RUSAGE_SELF, &ru1);
	wall_us = net_now_us() - c->d.t_wall0;
	res->local_cpu.user_us =
		bench__tv_us(&ru1.ru_utime) - bench__tv_us(&c->d.ru0.ru_utime);
	res->local_cpu.sys_us =
		bench__tv_us(&ru1.ru_stime) - bench__tv_us(&c->d.ru0.ru_stime);
	res->local_cpu.wall_us = (uint64_t)wall_us;
	res->duration =
		(double)(net_now_us() -
			 (run->omit_done ? run->omit_end_us : run->t0_us)) /
		1e6;
	if (c->o->req.duration_ms)
		res->duration = (double)c->o->req.duration_ms / 1000.0;
	cpu_wall = wall_us > 0 ? (double)wall_us : 1.0;
	lres->cpu_user = 100.0 * (double)res->local_cpu.user_us / cpu_wall;
	lres->cpu_system = 100.0 * (double)res->local_cpu.sys_us / cpu_wall;
	lres->cpu_total = lres->cpu_user + lres->cpu_system;
	lres->nstreams = run->nstreams;
	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream *s = &run->streams[i];
		struct bench_stream_result *sr = &res->streams[i];
		struct ip3_stream_result *l = &lres->streams[i];
		struct bench_side side;

		bench_stream_side(run, s, &side);
		if (s->sender)
			sr->sender = side;
		else
			sr->receiver = side;
		l->id = stream_id(i);
		l->bytes = side.bytes;
		l->retransmits =
			s->sender && side.has_tcp ? (int64_t)side.retrans : -1;
		if (s->sender && side.has_tcp)
			has_retrans = true;
		l->packets = side.packets;
		if (!s->sender) {
			l->jitter = side.jitter_ms / 1000.0;
			l->errors = side.lost;
		}
		l->start_time = 0;
		l->end_time = side.seconds > 0 ? side.seconds : res->duration;
	}
	lres->sender_has_retransmits = !senders_any(run) ? -1
				       : has_retrans	 ? 1
							 : 0;
	if (!c->o->req.udp)
		snprintf(lres->congestion_used, sizeof(lres->congestion_used),
			 "%s", res->local_cc);
}

/* Ours out, the server's in (with its report when asked for), then
 * DISPLAY_RESULTS and IPERF_DONE. */
static int trade_results(struct ip3_client *c, struct lr_err *err)
{
	struct bench_result *res = c->res;
	size_t len = 0;
	int r;

	r = ip3_results_encode(c->lres, c->buf, IP3_MAX_RESULTS_JSON + 1);
	if (r < 0)
		return lr_err_setc(err, r, "encoding our results");
	r = send_json(c->fd, c->buf, (size_t)r, "our results", err);
	if (!r)
		r = recv_json(c->fd, c->buf, c->res_max, &len, "its results",
			      err);
	if (r)
		return r;
	if (c->x->get_server_output) {
		r = ip3_server_output_decode(c->buf, len, &res->server_output,
					     err);
		if (!r && !res->server_output) {
			/* a server run with -J sends its JSON instead */
			r = ip3_server_output_json_decode(
				c->buf, len, &res->server_output, err);
			res->server_output_json = res->server_output != NULL;
		}
		if (r)
			return r;
	}
	r = ip3_results_decode(c->buf, len, c->rres, err);
	if (r)
		return r;
	snprintf(res->remote_cc, sizeof(res->remote_cc), "%s",
		 c->rres->congestion_used);
	r = expect_state(c->fd, IP3_DISPLAY_RESULTS, IP3C_CTRL_TIMEOUT_MS, err);
	if (!r)
		r = send_state(c->fd, IP3_IPERF_DONE, err);
	return r;
}

/* The server's side of each stream, by iperf3's stream id. */
static void their_results(struct ip3_client *c)
{
	const struct ip3_results *rres = c->rres;
	struct bench_result *res = c->res;
	bool udp = c->o->req.udp;
	unsigned i, j;

	res->remote_cpu.wall_us = 1000000;
	res->remote_cpu.user_us = (uint64_t)(rres->cpu_user * 10000.0);
	res->remote_cpu.sys_us = (uint64_t)(rres->cpu_system * 10000.0);
	for (i = 0; i < c->run.nstreams; i++) {
		struct bench_stream_result *sr = &res->streams[i];
		const struct ip3_stream_result *rs = NULL;

		for (j = 0; j < rres->nstreams; j++)
			if (rres->streams[j].id == stream_id(i))
				rs = &rres->streams[j];
		if (!rs)
			continue;
		if (c->run.streams[i].sender)
			side_from_remote(&sr->receiver, rs, udp, false,
					 rres->sender_has_retransmits,
					 res->duration);
		else
			side_from_remote(&sr->sender, rs, udp, true,
					 rres->sender_has_retransmits,
					 res->duration);
	}
}

/* The test once its streams run: this side owns the timer, also with
 * -R; -n looks often, as it ends with the bytes. */
static int run_test(void *arg, struct lr_err *err)
{
	struct ip3_client *c = arg;
	const struct bench__client_ops ops = {
		.ctrl_readable = ctrl_readable,
		.after_turn = after_turn,
		.max_wait_ms = c->o->req.bytes ? 5 : 0,
	};
	int r;

	bench__client_clock_init(&c->clk, &c->run, c->o, &c->iv,
				 PROTO_MAX_DURATION_MS);
	c->last_move_ms = net_now_ms();
	r = bench__client_loop(&c->run, c->o, c->cb, &c->clk, c->fd, c->res,
			       &ops, c, err);
	if (!r)
		r = end_test(c, err);
	if (r)
		return r;
	our_results(c);
	r = trade_results(c, err);
	if (r)
		return r;
	their_results(c);
	if (c->cb->finished)
		c->cb->finished(c->cb->ctx, c->res);
	return 0;
}

/* The client's own checks and buffers, before anything is sent. */
static int client_new(struct ip3_client *c, struct lr_err *err)
{
	const struct bench_opts *o = c->o;

	if (o->psk)
		return lr_err_set(err, -EINVAL,
				  "an iperf3 server takes no token");
	c->res_max = c->x->get_server_output ? IP3_MAX_RESULTS_TEXT_JSON
					     : IP3_MAX_RESULTS_JSON;
	c->buf = malloc(c->res_max + 1);
	c->lres = calloc(1, sizeof(*c->lres));
	c->rres = calloc(1, sizeof(*c->rres));
	if (!c->buf || !c->lres || !c->rres)
		return lr_err_setc(err, -ENOMEM, "buffers");
	if (bench_conn_count(&o->req) > IP3_MAX_STREAMS)
		return lr_err_set(err, -EINVAL,
				  "iperf3 tests have at most %u streams in all",
				  IP3_MAX_STREAMS);
	c->res->iperf3 = true;
	snprintf(c->res->server_software, sizeof(c->res->server_software),
		 "iperf3");
	if (c->x->title)
		snprintf(c->res->title, sizeof(c->res->title), "%s",
			 c->x->title);
	return 0;
}

static const struct bench__client_steps ip3_steps = {
	.ask = send_params,
	.open = open_test,
	.run = run_test,
};

int ip3_client_run(const struct bench_opts *o, const struct ip3_client_opts *x,
		   const struct bench_callbacks *cb, struct bench_result *res,
		   struct lr_err *err)
{
	struct ip3_client *c;
	int r;

	memset(res, 0, sizeof(*res));
	c = calloc(1, sizeof(*c));
	if (!c)
		return lr_err_setc(err, -ENOMEM, "buffers");
	*c = (struct ip3_client){
		.o = o, .x = x, .cb = cb, .res = res, .fd = -1
	};
	c->run.evfd = c->run.memfd = -1;
	r = client_new(c, err);
	if (!r)
		r = c->fd = bench__client_dial(o, cb, res, &c->d, err);
	if (c->fd >= 0)
		r = bench__client_session(c->fd, &ip3_steps, c, &c->run,
					  &c->run_ok, err);
	free(c->iv.s);
	free(c->lres);
	free(c->rres);
	free(c->buf);
	free(c);
	if (r)
		bench__result_drop(res);
	return r;
}
