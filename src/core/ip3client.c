// SPDX-License-Identifier: MIT
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
#include "bench.h"
#include "link.h"
#include "udp.h"
#include "banned.h"

_Static_assert(BENCH_IP3_PORT == IP3_DEFAULT_PORT &&
		       BENCH_IP3_MAX_STREAMS == IP3_MAX_STREAMS,
	       "bench.h's iperf3 figures are ip3.h's");

/* Every control read and write has this deadline. */
#define CTRL_TIMEOUT_MS	   10000
#define RESULTS_TIMEOUT_MS 15000
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

	if (net_read_full(fd, b, 4, net_now_ms() + CTRL_TIMEOUT_MS))
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
	int r = net_write_full(fd, &b, 1, net_now_ms() + CTRL_TIMEOUT_MS);

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
	int64_t dl = net_now_ms() + CTRL_TIMEOUT_MS;
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
	int64_t dl = net_now_ms() + RESULTS_TIMEOUT_MS;
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

		if (o->req.udp) {
			r = udp_stream_open(addr, bind, o->req.window,
					    o->connect_timeout_ms, where, i + 1,
					    err);
			if (r < 0)
				return r;
			s->fd = r;
			continue;
		}
		r = net_connect(addr, bind, &so, o->connect_timeout_ms, err);
		if (r < 0)
			return r;
		s->fd = r;
		r = net_write_full(s->fd, cookie, IP3_COOKIE_LEN,
				   net_now_ms() + CTRL_TIMEOUT_MS);
		if (r)
			return lr_err_setc(err, r, "opening stream %u to %s",
					   i + 1, where);
	}
	return 0;
}

static uint64_t tv_us(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000 + (uint64_t)tv->tv_usec;
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
 * Before TEST_END: the senders end their last writes and the server's
 * kernel acknowledges every byte, so that what the server counts when
 * TEST_END reaches it is (all but what it has yet to read of) what we
 * sent. iperf3's own client sends TEST_END with data still in flight.
 */
static void drain_senders(struct bench_run *run)
{
	struct timespec settle = { 0, 20 * 1000 * 1000 };
	int64_t dl = net_now_ms() + SEND_DRAIN_MS;
	unsigned i;
	bool busy;

	atomic_store(&run->stop, true);
	if (!senders_any(run))
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

int ip3_client_run(const struct bench_opts *o, const struct ip3_client_opts *x,
		   const struct bench_callbacks *cb, struct bench_result *res,
		   struct lr_err *err)
{
	struct net_sockopts ctrl_so = { .nodelay = true };
	struct net_addr addr, bindaddr, *bindp = NULL;
	struct ip3_params params;
	struct ip3_results *lres = NULL, *rres = NULL;
	struct bench_interval iv = { 0 };
	struct bench_run run;
	struct rusage ru0, ru1;
	char cookie[IP3_COOKIE_LEN];
	char where[NET_ADDRSTR];
	char *buf;
	size_t len;
	uint32_t res_max;
	struct bench_client_clock clk = { .iv = &iv };
	int64_t t_wall0, end_ms, hard_end, now, wall_us;
	double cpu_wall;
	bool has_retrans = false;
	uint64_t last_moved = 0;
	int64_t last_move_ms = net_now_ms();
	unsigned i, j;
	int fd = -1, r, st = 0;

	memset(res, 0, sizeof(*res));
	memset(&run, 0, sizeof(run));
	run.evfd = run.memfd = -1;
	if (o->psk)
		return lr_err_set(err, -EINVAL,
				  "an iperf3 server takes no token");
	res_max = x->get_server_output ? IP3_MAX_RESULTS_TEXT_JSON
				       : IP3_MAX_RESULTS_JSON;
	buf = malloc(res_max + 1);
	lres = calloc(1, sizeof(*lres));
	rres = calloc(1, sizeof(*rres));
	if (!buf || !lres || !rres) {
		r = lr_err_setc(err, -ENOMEM, "buffers");
		goto out_free;
	}
	if (bench_conn_count(&o->req) > IP3_MAX_STREAMS) {
		r = lr_err_set(err, -EINVAL,
			       "iperf3 tests have at most %u streams in all",
			       IP3_MAX_STREAMS);
		goto out_free;
	}
	r = net_resolve(o->host, o->port, o->family, false, &addr, err);
	if (r)
		goto out_free;
	if (o->bind_addr) {
		r = net_resolve(o->bind_addr, 0, addr.ss.ss_family, true,
				&bindaddr, err);
		if (r)
			goto out_free;
		bindp = &bindaddr;
	}
	net_addr_str((struct sockaddr *)&addr.ss, where, sizeof(where));
	net_addr_host((struct sockaddr *)&addr.ss, res->remote_host,
		      sizeof(res->remote_host), &res->remote_port);
	res->req = o->req;
	res->iperf3 = true;
	snprintf(res->server_software, sizeof(res->server_software), "iperf3");
	if (x->title)
		snprintf(res->title, sizeof(res->title), "%s", x->title);
	res->start_time = time(NULL);
	if (cb->connecting)
		cb->connecting(cb->ctx, res->remote_host, res->remote_port);
	getrusage(RUSAGE_SELF, &ru0);
	t_wall0 = net_now_us();

	/* control connection and cookie */
	fd = net_connect(&addr, bindp, &ctrl_so, o->connect_timeout_ms, err);
	if (fd < 0) {
		r = fd;
		goto out_free;
	}
	r = ip3_cookie_new(cookie);
	if (r) {
		lr_err_setc(err, r, "making a cookie");
		goto out_close;
	}
	r = net_write_full(fd, cookie, IP3_COOKIE_LEN,
			   net_now_ms() + CTRL_TIMEOUT_MS);
	if (r) {
		lr_err_setc(err, r, "sending the cookie to %s", where);
		goto out_close;
	}
	r = expect_state(fd, IP3_PARAM_EXCHANGE, CTRL_TIMEOUT_MS, err);
	if (r)
		goto out_close;

	/* parameters */
	make_params(o, x, &params);
	r = ip3_params_encode(&params, buf, IP3_MAX_JSON);
	if (r < 0) {
		lr_err_setc(err, r, "encoding the iperf3 parameters");
		goto out_close;
	}
	len = (size_t)r;
	r = send_json(fd, buf, len, "the parameters", err);
	if (r)
		goto out_close;
	r = expect_state(fd, IP3_CREATE_STREAMS, CTRL_TIMEOUT_MS, err);
	if (r)
		goto out_close;

	/* data streams */
	r = bench_run_init(&run, &o->req, true, err);
	if (r)
		goto out_close;
	run.udp_counters64 = x->counters64;
	r = open_streams(o, &addr, bindp, where, cookie, &run, err);
	if (r)
		goto out_run;
	r = expect_state(fd, IP3_TEST_START, CTRL_TIMEOUT_MS, err);
	if (!r)
		r = expect_state(fd, IP3_TEST_RUNNING, CTRL_TIMEOUT_MS, err);
	if (r)
		goto out_run;

	res->nstreams = run.nstreams;
	res->streams = calloc(run.nstreams, sizeof(*res->streams));
	iv.s = calloc(run.nstreams, sizeof(*iv.s));
	if (!res->streams || !iv.s) {
		r = lr_err_setc(err, -ENOMEM, "result tables");
		goto out_run;
	}
	r = bench_run_start(&run, err);
	if (r)
		goto out_run;
	bench_fill_link(o, &run, res);
	if (cb->started)
		cb->started(cb->ctx, &run, res);

	/* the test: this side owns the timer, also with -R */
	clk.tick = o->interval_ms ? (int64_t)o->interval_ms : 1000;
	end_ms = run.omit_end_us / 1000 + (int64_t)o->req.duration_ms;
	hard_end = run.t0_us / 1000 + (int64_t)o->req.omit_ms +
		   (int64_t)PROTO_MAX_DURATION_MS;
	clk.next_iv = run.t0_us / 1000 + clk.tick;
	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = run.evfd, .events = POLLIN },
		};
		int64_t wake = bench_client_wake(
			&run, &clk, o->req.duration_ms ? end_ms : 0, hard_end);

		/* -n ends with the bytes: look often */
		if (o->req.bytes && wake > net_now_ms() + 5)
			wake = net_now_ms() + 5;
		now = net_now_ms();
		if (wake > now && poll(pf, 2, (int)(wake - now)) < 0 &&
		    errno != EINTR) {
			r = lr_err_setc(err, -errno, "poll");
			goto out_run;
		}
		if (pf[0].revents) {
			r = read_state(fd, net_now_ms() + CTRL_TIMEOUT_MS,
				       "the end of the test", &st, err);
			if (!r)
				r = lr_err_set(err, LR_EBADMSG,
					       "unexpected %s (%d) from the "
					       "iperf3 server during the test",
					       state_name(st), st);
			if (r == LR_ECLOSED)
				r = lr_err_set(err, r,
					       "iperf3 server closed the "
					       "connection during the test");
			goto out_run;
		}
		r = bench_client_turn(&run, o, cb, &clk, pf[1].revents, end_ms,
				      hard_end, &now, &res->truncated, err);
		if (r < 0)
			goto out_run;
		if (r)
			break;
		if (o->req.bytes && run.omit_done && bytes_done(&run))
			break;
		/* -n has no timer: a test where nothing moves ends here */
		if (o->req.bytes) {
			uint64_t moved = moved_bytes(&run);

			if (moved != last_moved) {
				last_moved = moved;
				last_move_ms = now;
			} else if (now - last_move_ms >= STALL_MS) {
				r = lr_err_set(err, LR_ETIMEOUT,
					       "no data moved for %d s",
					       STALL_MS / 1000);
				goto out_run;
			}
		}
	}

	/* the end: our senders drain, TEST_END, the server stops sending
	 * and says EXCHANGE_RESULTS, our receivers read what is in flight */
	drain_senders(&run);
	r = send_state(fd, IP3_TEST_END, err);
	if (r)
		goto out_run;
	r = expect_state(fd, IP3_EXCHANGE_RESULTS, RESULTS_TIMEOUT_MS, err);
	if (r)
		goto out_run;
	stop_receivers(&run);
	if (o->interval_ms && cb->interval) {
		double span;

		bool moved = false;

		bench_run_sample(&run, &iv, clk.iv_start);
		span = iv.end - iv.start;
		/* the tail after the timer: only when data came in it */
		for (j = 0; j < iv.n; j++)
			if (iv.s[j].bytes)
				moved = true;
		if (moved && span * 1000.0 >= (double)o->interval_ms * 0.05)
			cb->interval(cb->ctx, &iv);
	}
	r = bench_run_error(&run, false, err);
	if (r)
		goto out_run;
	getrusage(RUSAGE_SELF, &ru1);
	wall_us = net_now_us() - t_wall0;
	res->local_cpu.user_us = tv_us(&ru1.ru_utime) - tv_us(&ru0.ru_utime);
	res->local_cpu.sys_us = tv_us(&ru1.ru_stime) - tv_us(&ru0.ru_stime);
	res->local_cpu.wall_us = (uint64_t)wall_us;
	res->duration = (double)(net_now_us() - (run.omit_done ? run.omit_end_us
							       : run.t0_us)) /
			1e6;
	if (o->req.duration_ms)
		res->duration = (double)o->req.duration_ms / 1000.0;

	/* our results, then the server's */
	cpu_wall = wall_us > 0 ? (double)wall_us : 1.0;
	lres->cpu_user = 100.0 * (double)res->local_cpu.user_us / cpu_wall;
	lres->cpu_system = 100.0 * (double)res->local_cpu.sys_us / cpu_wall;
	lres->cpu_total = lres->cpu_user + lres->cpu_system;
	lres->nstreams = run.nstreams;
	for (i = 0; i < run.nstreams; i++) {
		struct bench_stream *s = &run.streams[i];
		struct bench_stream_result *sr = &res->streams[i];
		struct ip3_stream_result *l = &lres->streams[i];
		struct bench_side side;

		bench_stream_side(&run, s, &side);
		sr->idx = i;
		sr->dir = s->dir;
		sr->local = s->local;
		sr->peer = s->peer;
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
	lres->sender_has_retransmits = !senders_any(&run) ? -1
				       : has_retrans	  ? 1
							  : 0;
	if (!o->req.udp)
		snprintf(lres->congestion_used, sizeof(lres->congestion_used),
			 "%s", res->local_cc);
	r = ip3_results_encode(lres, buf, IP3_MAX_RESULTS_JSON + 1);
	if (r < 0) {
		lr_err_setc(err, r, "encoding our results");
		goto out_run;
	}
	r = send_json(fd, buf, (size_t)r, "our results", err);
	if (r)
		goto out_run;
	r = recv_json(fd, buf, res_max, &len, "its results", err);
	if (r)
		goto out_run;
	if (x->get_server_output) {
		r = ip3_server_output_decode(buf, len, &res->server_output,
					     err);
		if (!r && !res->server_output) {
			/* a server run with -J sends its JSON instead */
			r = ip3_server_output_json_decode(
				buf, len, &res->server_output, err);
			res->server_output_json = res->server_output != NULL;
		}
		if (r)
			goto out_run;
	}
	r = ip3_results_decode(buf, len, rres, err);
	if (r)
		goto out_run;
	snprintf(res->remote_cc, sizeof(res->remote_cc), "%s",
		 rres->congestion_used);
	r = expect_state(fd, IP3_DISPLAY_RESULTS, CTRL_TIMEOUT_MS, err);
	if (r)
		goto out_run;
	r = send_state(fd, IP3_IPERF_DONE, err);
	if (r)
		goto out_run;

	/* the server's side of each stream, by iperf3's stream id */
	res->remote_cpu.wall_us = 1000000;
	res->remote_cpu.user_us = (uint64_t)(rres->cpu_user * 10000.0);
	res->remote_cpu.sys_us = (uint64_t)(rres->cpu_system * 10000.0);
	for (i = 0; i < run.nstreams; i++) {
		struct bench_stream_result *sr = &res->streams[i];
		const struct ip3_stream_result *rs = NULL;

		for (j = 0; j < rres->nstreams; j++)
			if (rres->streams[j].id == stream_id(i))
				rs = &rres->streams[j];
		if (!rs)
			continue;
		if (run.streams[i].sender)
			side_from_remote(&sr->receiver, rs, o->req.udp, false,
					 rres->sender_has_retransmits,
					 res->duration);
		else
			side_from_remote(&sr->sender, rs, o->req.udp, true,
					 rres->sender_has_retransmits,
					 res->duration);
	}
	if (cb->finished)
		cb->finished(cb->ctx, res);
	r = 0;

out_run:
	bench_run_fini(&run);
out_close:
	close(fd);
out_free:
	free(iv.s);
	free(lres);
	free(rres);
	free(buf);
	if (r) {
		free(res->streams);
		res->streams = NULL;
		res->nstreams = 0;
		free(res->server_output);
		res->server_output = NULL;
	}
	return r;
}
