// SPDX-License-Identifier: MIT
/*
 * Stock iperf3 clients against `linerate serve` (issue 6): the listener
 * thread (ip3srv_run) and one thread per test (test_main). Facts of the
 * protocol are in ip3.h; the data streams run on the bench engine.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "ip3.h"
#include "ip3server.h"
#include "net.h"
#include "udp.h"
#include "banned.h"

#define CTRL_TIMEOUT_MS	  10000 /* a control message the client owes us */
#define ATTACH_TIMEOUT_MS 10000 /* all data streams after CREATE_STREAMS */
#define DONE_TIMEOUT_MS	  5000	/* IPERF_DONE after DISPLAY_RESULTS */
#define STOP_GRACE_MS	  5000	/* past --max-duration before we end it */
#define DRAIN_MS	  1000	/* TCP data in flight after TEST_END */
#define SAMPLE_MS	  1000
#define MAX_INTERVALS	  4000 /* kept for --get-server-output */
#define RESULTS_CAP	  IP3_MAX_RESULTS_TEXT_JSON

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
	int fd;
	char peer[NET_ADDRSTR];
	uint8_t host[16];
	uint16_t port;
	uint8_t buf[IP3_COOKIE_LEN];
	size_t have;
	int64_t deadline;
	uint64_t seq; /* srv->accepted when it was accepted */
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
	_Atomic uint64_t accepted;   /* TCP connections so far */
	int64_t accept_paused_until; /* out of descriptors: wait */
	struct ip3_pending pend[IP3SRV_MAX_PENDING];
	unsigned npend;
};

static void emit(struct ip3srv *srv, struct server_event *ev)
{
	ev->iperf3 = true;
	if (srv->cb.event)
		srv->cb.event(srv->cb.ctx, ev);
}

static void emit_reject(struct ip3srv *srv, const char *peer,
			const char *reason)
{
	struct server_event ev = { .kind = SERVER_EV_CONN_REJECTED,
				   .reason = reason };

	snprintf(ev.peer, sizeof(ev.peer), "%s", peer);
	emit(srv, &ev);
}

static void wake(struct ip3srv *srv)
{
	uint64_t one = 1;

	if (write(srv->evfd, &one, sizeof(one)) < 0) {
		/* the counter cannot overflow */
	}
}

static void peer_of(const struct sockaddr_storage *ss, char *buf, size_t cap,
		    uint16_t *port, uint8_t host[16])
{
	net_addr_host((const struct sockaddr *)ss, buf, cap, port);
	net_addr_host_key(ss, host);
}

int ip3srv_new(const struct ip3srv_opts *o, const struct ip3srv_callbacks *cb,
	       struct ip3srv **out, struct lr_err *err)
{
	struct ip3srv *srv;
	int r;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return lr_err_setc(err, -ENOMEM, "iperf3 server");
	srv->o = *o;
	if (cb)
		srv->cb = *cb;
	if (!srv->o.max_tests)
		srv->o.max_tests = 1;
	if (srv->o.handshake_ms <= 0)
		srv->o.handshake_ms = 5000;
	srv->lfd = srv->ufd = srv->evfd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	r = net_resolve(o->bind_addr, o->port, o->family, true, &srv->addr,
			err);
	if (r)
		goto out_free;
	r = net_listen(&srv->addr, 128, err);
	if (r < 0)
		goto out_free;
	srv->lfd = r;
	if (fcntl(r, F_SETFL, O_NONBLOCK)) {
		r = lr_err_setc(err, -errno, "iperf3 listener");
		goto out_close;
	}
	/* port 0: the UDP socket takes the port TCP got */
	net_addr_set_port(&srv->addr, net_local_port(srv->lfd));
	r = net_udp_socket(&srv->addr, NULL, err);
	if (r < 0)
		goto out_close;
	srv->ufd = r;
	if (fcntl(r, F_SETFL, O_NONBLOCK)) {
		r = lr_err_setc(err, -errno, "iperf3 UDP socket");
		goto out_close;
	}
	srv->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv->evfd < 0) {
		r = lr_err_setc(err, -errno, "eventfd");
		goto out_close;
	}
	*out = srv;
	return 0;

out_close:
	if (srv->ufd >= 0)
		close(srv->ufd);
	close(srv->lfd);
out_free:
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return r;
}

uint16_t ip3srv_port(const struct ip3srv *srv)
{
	return net_local_port(srv->lfd);
}

void ip3srv_stop(struct ip3srv *srv)
{
	atomic_store(&srv->stopping, true);
	wake(srv);
}

/* ---------------- one test ---------------- */

static int send_state(struct ip3_test *t, int8_t state)
{
	uint8_t b = (uint8_t)state;

	return net_write_full(t->ctrl, &b, 1, net_now_ms() + CTRL_TIMEOUT_MS);
}

/* SERVER_ERROR, iperf3's error code and an errno, best effort. */
static void send_error(struct ip3_test *t, int code, int errnum)
{
	uint8_t b[9];
	uint32_t c = htonl((uint32_t)code), e = htonl((uint32_t)errnum);

	b[0] = (uint8_t)IP3_SERVER_ERROR;
	memcpy(b + 1, &c, 4);
	memcpy(b + 5, &e, 4);
	net_write_full(t->ctrl, b, sizeof(b), net_now_ms() + 2000);
}

static int send_json(struct ip3_test *t, const char *json, size_t len)
{
	uint8_t hdr[4];
	uint32_t n = htonl((uint32_t)len);
	int r;

	memcpy(hdr, &n, 4);
	r = net_write_full(t->ctrl, hdr, 4, net_now_ms() + CTRL_TIMEOUT_MS);
	if (!r)
		r = net_write_full(t->ctrl, json, len,
				   net_now_ms() + CTRL_TIMEOUT_MS);
	return r;
}

/* Read one JSON message of at most max bytes into a malloc'd *out,
 * all of it by dl (net_now_ms). */
static int read_json(struct ip3_test *t, uint32_t max, int64_t dl, char **out,
		     size_t *len, char *why, size_t cap, const char *what)
{
	uint8_t hdr[4];
	int64_t n;
	char *buf;
	int r;

	r = net_read_full(t->ctrl, hdr, 4, dl);
	if (r) {
		snprintf(why, cap, "reading the %s: %s", what, lr_strerror(r));
		return r;
	}
	n = ip3_json_len(hdr, max);
	if (n < 0) {
		snprintf(why, cap, "%s: length %u (limit %u)", what,
			 (unsigned)hdr[0] << 24 | (unsigned)hdr[1] << 16 |
				 (unsigned)hdr[2] << 8 | hdr[3],
			 max);
		return (int)n;
	}
	buf = malloc((size_t)n);
	if (!buf) {
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	r = net_read_full(t->ctrl, buf, (size_t)n, dl);
	if (r) {
		snprintf(why, cap, "reading the %s: %s", what, lr_strerror(r));
		free(buf);
		return r;
	}
	*out = buf;
	*len = (size_t)n;
	return 0;
}

/* The client vanished: its control connection is at EOF or failed. */
static bool ctrl_gone(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	uint8_t b;

	if (poll(&pf, 1, 0) <= 0)
		return false;
	if (pf.revents & (POLLERR | POLLHUP | POLLNVAL))
		return true;
	return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* Wait for every data stream; LR_ETIMEOUT, LR_ECLOSED or -ECANCELED. */
static int wait_streams(struct ip3_test *t)
{
	struct ip3srv *srv = t->srv;
	int64_t dl = net_now_ms() + ATTACH_TIMEOUT_MS;
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
		if (ctrl_gone(t->ctrl)) {
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
 * (within ATTACH_TIMEOUT_MS) until the first has all its streams.
 */
static int claim_waiting(struct ip3_test *t, bool udp)
{
	struct ip3srv *srv = t->srv;
	int64_t dl = net_now_ms() + ATTACH_TIMEOUT_MS;
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
			t->wait_seq = atomic_load(&srv->accepted);
		}
		pthread_mutex_unlock(&srv->lock);
		if (!busy)
			return 0;
		if (atomic_load(&srv->stopping))
			return -ECANCELED;
		if (net_now_ms() >= dl)
			return LR_ETIMEOUT;
		if (ctrl_gone(t->ctrl))
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

/* Interval samples kept for the server's own report. */
struct iv_log {
	struct bench_interval *iv;
	unsigned n, cap;
	double last_end;
};

static void iv_log_free(struct iv_log *l)
{
	unsigned i;

	for (i = 0; i < l->n; i++)
		free(l->iv[i].s);
	free(l->iv);
	memset(l, 0, sizeof(*l));
}

/* One sample: into the log when there is one and room, else counters
 * only. */
static void sample(struct bench_run *run, struct iv_log *l)
{
	struct bench_interval *iv;
	bool was_omit = !run->omit_done;

	if (!l || l->n >= MAX_INTERVALS) {
		bench_run_sample(run, NULL, 0);
		return;
	}
	if (l->n == l->cap) {
		unsigned nc = l->cap ? 2 * l->cap : 16;
		struct bench_interval *p;

		if (nc > MAX_INTERVALS)
			nc = MAX_INTERVALS;
		p = realloc(l->iv, nc * sizeof(*p));
		if (!p) {
			bench_run_sample(run, NULL, 0);
			return;
		}
		l->iv = p;
		l->cap = nc;
	}
	iv = &l->iv[l->n];
	memset(iv, 0, sizeof(*iv));
	iv->s = calloc(run->nstreams, sizeof(*iv->s));
	if (!iv->s) {
		bench_run_sample(run, NULL, 0);
		return;
	}
	bench_run_sample(run, iv, l->last_end);
	/* the omitted period's end restarts the clock */
	l->last_end = (was_omit && run->omit_done) ? 0 : iv->end;
	l->n++;
}

/* Run until the client's TEST_END; 0 or an error with why. */
static int data_phase(struct ip3_test *t, struct iv_log *l, char *why,
		      size_t cap)
{
	struct ip3srv *srv = t->srv;
	struct bench_run *run = &t->run;
	int64_t hard_end, next_sample, now, wake_at;
	unsigned i;

	hard_end = run->t0_us / 1000 + (int64_t)srv->o.max_duration_ms +
		   STOP_GRACE_MS;
	next_sample = run->t0_us / 1000 + SAMPLE_MS;
	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = t->ctrl, .events = POLLIN },
			{ .fd = run->evfd, .events = POLLIN },
		};

		wake_at = next_sample < hard_end ? next_sample : hard_end;
		if (!run->omit_done && run->omit_end_us / 1000 < wake_at)
			wake_at = run->omit_end_us / 1000;
		now = net_now_ms();
		if (wake_at > now && poll(pf, 2, (int)(wake_at - now)) < 0 &&
		    errno != EINTR)
			return -errno;
		if (atomic_load(&srv->stopping)) {
			snprintf(why, cap, "server shutting down");
			send_state(t, IP3_SERVER_TERMINATE);
			return -ECANCELED;
		}
		if (pf[0].revents) {
			uint8_t b;
			ssize_t k = recv(t->ctrl, &b, 1, MSG_DONTWAIT);

			if (k == 0 ||
			    (k < 0 && errno != EAGAIN && errno != EINTR)) {
				snprintf(why, cap,
					 "client disconnected during the "
					 "test");
				return LR_ECLOSED;
			}
			if (k == 1) {
				if ((int8_t)b == IP3_TEST_END) {
					t->end_us = net_now_us();
					return 0;
				}
				if ((int8_t)b == IP3_CLIENT_TERMINATE) {
					snprintf(why, cap,
						 "client terminated the test");
					return -ECONNABORTED;
				}
				snprintf(why, cap,
					 "unexpected state %d during the test",
					 (int8_t)b);
				send_error(t, IP3_IEMESSAGE, 0);
				return LR_EBADMSG;
			}
		}
		if (pf[1].revents) {
			uint64_t v;

			if (read(run->evfd, &v, sizeof(v)) < 0) {
				/* drained already */
			}
		}
		for (i = 0; i < run->nstreams; i++) {
			struct bench_stream *s = &run->streams[i];

			if (atomic_load(&s->done) && s->error) {
				snprintf(why, cap, "stream %u: %s", i + 1,
					 lr_strerror(s->error));
				send_error(t,
					   s->sender ? IP3_IESTREAMWRITE
						     : IP3_IESTREAMREAD,
					   -s->error > 0 && -s->error < 4096
						   ? -s->error
						   : 0);
				return s->error;
			}
		}
		now = net_now_ms();
		if (now >= next_sample ||
		    (!run->omit_done && now >= run->omit_end_us / 1000)) {
			sample(run, now >= next_sample ? l : NULL);
			if (now >= next_sample)
				next_sample += SAMPLE_MS;
		}
		if (now >= hard_end) {
			snprintf(why, cap,
				 "test ran past the server's limit of %.1f s "
				 "(--max-duration)",
				 (double)srv->o.max_duration_ms / 1000.0);
			send_state(t, IP3_SERVER_TERMINATE);
			return LR_ETIMEOUT;
		}
	}
}

/* After TEST_END: TCP data still queued for our receivers is counted
 * (bounded by DRAIN_MS), then every stream stops. */
static void engine_stop(struct bench_run *run)
{
	int64_t dl = net_now_ms() + DRAIN_MS;
	unsigned i, quiet = 0;

	if (run->req.udp) {
		bench_run_stop(run, BENCH_UDP_SILENCE_MS + 250);
		return;
	}
	atomic_store(&run->stop, true);
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

static uint32_t stream_id(unsigned idx)
{
	return idx == 0 ? 1 : idx + 2; /* iperf3 skips 2 */
}

static uint64_t tv_us(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000 + (uint64_t)tv->tv_usec;
}

/* The server's view of the test as a bench_result, for the report. */
static int result_of(struct ip3_test *t, const struct ip3_results *ours,
		     const struct ip3_results *theirs, int64_t start_wall,
		     double wall_s, struct bench_result *res)
{
	struct bench_run *run = &t->run;
	int64_t from = run->omit_done ? run->omit_end_us : run->t0_us;
	unsigned i, j;

	memset(res, 0, sizeof(*res));
	res->streams = calloc(run->nstreams ? run->nstreams : 1,
			      sizeof(*res->streams));
	if (!res->streams)
		return -ENOMEM;
	res->req = run->req;
	snprintf(res->remote_host, sizeof(res->remote_host), "%s", t->peer);
	res->remote_port = t->peer_port;
	snprintf(res->server_software, sizeof(res->server_software),
		 "iperf3 client");
	res->nstreams = run->nstreams;
	res->iperf3 = true;
	res->start_time = start_wall;
	res->duration = wall_s;
	res->local_cpu.wall_us = (uint64_t)(wall_s * 1e6);
	res->local_cpu.user_us =
		(uint64_t)(ours->cpu_user / 100.0 * wall_s * 1e6);
	res->local_cpu.sys_us =
		(uint64_t)(ours->cpu_system / 100.0 * wall_s * 1e6);
	res->remote_cpu.wall_us = res->local_cpu.wall_us;
	res->remote_cpu.user_us =
		(uint64_t)(theirs->cpu_user / 100.0 * wall_s * 1e6);
	res->remote_cpu.sys_us =
		(uint64_t)(theirs->cpu_system / 100.0 * wall_s * 1e6);
	if (run->nstreams)
		net_get_cc(run->streams[0].fd, res->local_cc,
			   sizeof(res->local_cc));
	for (i = 0; i < run->nstreams; i++) {
		const struct bench_stream *s = &run->streams[i];
		struct bench_stream_result *o = &res->streams[i];
		struct bench_side mine, *peer;

		o->idx = s->idx;
		o->dir = s->dir;
		o->local = s->local;
		o->peer = s->peer;
		o->local_error = s->error;
		bench_stream_side(run, s, &mine);
		if (t->end_us > from && mine.seconds > 0)
			mine.seconds = (double)(t->end_us - from) / 1e6;
		if (s->sender) {
			o->sender = mine;
			peer = &o->receiver;
		} else {
			o->receiver = mine;
			peer = &o->sender;
		}
		for (j = 0; j < theirs->nstreams; j++) {
			const struct ip3_stream_result *c = &theirs->streams[j];

			if (c->id != stream_id(i))
				continue;
			peer->bytes = c->bytes;
			peer->seconds = c->end_time - c->start_time;
			peer->retrans = c->retransmits > 0
						? (uint32_t)c->retransmits
						: 0;
			peer->has_tcp = !run->req.udp && !s->sender;
			peer->packets = c->packets;
			peer->lost = c->errors;
			peer->jitter_ms = c->jitter * 1000.0;
			break;
		}
	}
	return 0;
}

/* Our EXCHANGE_RESULTS figures. */
static void our_results(struct ip3_test *t, double wall_s,
			const struct rusage *ru0, struct ip3_results *r)
{
	struct bench_run *run = &t->run;
	uint64_t u, s;
	struct rusage ru;
	bool any_sender = false;
	int64_t from = run->omit_done ? run->omit_end_us : run->t0_us;
	unsigned i;

	memset(r, 0, sizeof(*r));
	bench_run_cpu(run, &u, &s);
	if (!getrusage(RUSAGE_THREAD, &ru)) {
		u += tv_us(&ru.ru_utime) - tv_us(&ru0->ru_utime);
		s += tv_us(&ru.ru_stime) - tv_us(&ru0->ru_stime);
	}
	if (wall_s > 0) {
		r->cpu_user = (double)u / (wall_s * 1e4);
		r->cpu_system = (double)s / (wall_s * 1e4);
		r->cpu_total = r->cpu_user + r->cpu_system;
	}
	r->nstreams = run->nstreams;
	for (i = 0; i < run->nstreams; i++) {
		const struct bench_stream *st = &run->streams[i];
		struct ip3_stream_result *o = &r->streams[i];
		struct bench_side d;

		bench_stream_side(run, st, &d);
		any_sender = any_sender || st->sender;
		o->id = stream_id(i);
		o->bytes = d.bytes;
		o->retransmits =
			st->sender && !run->req.udp ? (int64_t)d.retrans : -1;
		if (run->req.udp) {
			struct udp_rx rx;
			uint64_t sent;

			/* iperf3 sends its datagram counts from the start,
			 * omitted period included, and the client takes
			 * its own omitted count off: the highest sequence
			 * number for a receiver, datagrams for a sender */
			bench_stream_udp(st, &rx, &sent);
			if (st->sender) {
				o->packets = sent + st->udp_omit.sent;
			} else {
				o->packets = rx.max_seq;
				o->errors = rx.lost + st->udp_omit.lost;
				o->jitter = rx.jitter_s;
			}
		}
		o->start_time = 0;
		/* iperf3 ends every stream at TEST_END; our receivers may
		 * see their last bytes a poll period after it */
		o->end_time = d.seconds;
		if (t->end_us > from && d.seconds > 0)
			o->end_time = (double)(t->end_us - from) / 1e6;
	}
	r->sender_has_retransmits = !any_sender ? -1 : run->req.udp ? 0 : 1;
}

static char *render_text(struct ip3_test *t, const struct bench_result *res,
			 const struct iv_log *l)
{
	struct ip3srv *srv = t->srv;

	if (!srv->cb.render)
		return NULL;
	return srv->cb.render(srv->cb.ctx, &t->run, res, l->iv, l->n);
}

static int results_phase(struct ip3_test *t, const struct ip3_params *p,
			 const struct iv_log *l, const struct rusage *ru0,
			 int64_t start_wall, struct server_event *ev, char *why,
			 size_t cap)
{
	struct ip3_results *ours = NULL, *theirs = NULL;
	struct bench_result res = { 0 };
	struct lr_err e = { 0 };
	char *json = NULL, *out = NULL, *text = NULL;
	size_t len = 0;
	double wall_s;
	unsigned i;
	int r, n;

	wall_s = (double)(net_now_us() - (t->run.omit_done ? t->run.omit_end_us
							   : t->run.t0_us)) /
		 1e6;
	ours = malloc(sizeof(*ours));
	theirs = malloc(sizeof(*theirs));
	out = malloc(RESULTS_CAP);
	if (!ours || !theirs || !out) {
		snprintf(why, cap, "out of memory");
		r = -ENOMEM;
		goto out_free;
	}
	our_results(t, wall_s, ru0, ours);
	for (i = 0; i < ours->nstreams; i++) {
		if (t->run.streams[i].sender)
			ev->bytes_sent += ours->streams[i].bytes;
		else
			ev->bytes_received += ours->streams[i].bytes;
		if (ours->streams[i].end_time > ev->seconds)
			ev->seconds = ours->streams[i].end_time;
	}
	r = send_state(t, IP3_EXCHANGE_RESULTS);
	if (r) {
		snprintf(why, cap, "sending EXCHANGE_RESULTS: %s",
			 lr_strerror(r));
		goto out_free;
	}
	r = read_json(t, IP3_MAX_RESULTS_JSON, net_now_ms() + CTRL_TIMEOUT_MS,
		      &json, &len, why, cap, "client's results");
	if (r) {
		if (r != LR_ECLOSED && r != LR_ETIMEOUT)
			send_error(t, IP3_IERECVRESULTS, 0);
		goto out_free;
	}
	r = ip3_results_decode(json, len, theirs, &e);
	if (r) {
		snprintf(why, cap, "%s", e.msg);
		send_error(t, IP3_IERECVRESULTS, 0);
		goto out_free;
	}
	if (p->get_server_output &&
	    !result_of(t, ours, theirs, start_wall, wall_s, &res))
		text = render_text(t, &res, l);
	n = ip3_results_encode_text(ours, text, out, RESULTS_CAP);
	if (n < 0) {
		r = n;
		snprintf(why, cap, "encoding our results: %s", lr_strerror(n));
		send_error(t, IP3_IEPACKAGERESULTS, 0);
		goto out_free;
	}
	r = send_json(t, out, (size_t)n);
	if (!r)
		r = send_state(t, IP3_DISPLAY_RESULTS);
	if (r) {
		snprintf(why, cap, "sending results: %s", lr_strerror(r));
		goto out_free;
	}
out_free:
	free(res.streams);
	free(text);
	free(json);
	free(out);
	free(theirs);
	free(ours);
	return r;
}

/* After DISPLAY_RESULTS: the client's IPERF_DONE, or its close. */
static int wait_done(struct ip3_test *t, char *why, size_t cap)
{
	uint8_t b;
	int r;

	r = net_read_full(t->ctrl, &b, 1, net_now_ms() + DONE_TIMEOUT_MS);
	if (r == LR_ECLOSED)
		return 0; /* it has what it needs */
	if (r) {
		snprintf(why, cap, "waiting for IPERF_DONE: %s",
			 lr_strerror(r));
		return r;
	}
	if ((int8_t)b != IP3_IPERF_DONE) {
		snprintf(why, cap, "expected IPERF_DONE, got state %d",
			 (int8_t)b);
		return LR_EBADMSG;
	}
	return 0;
}

static void *test_main(void *arg)
{
	struct ip3_test *t = arg;
	struct ip3srv *srv = t->srv;
	struct server_event ev = { .kind = SERVER_EV_TEST_DONE };
	struct proto_test_request req;
	struct ip3_params p;
	struct iv_log log = { 0 };
	struct lr_err e = { 0 };
	struct net_sockopts so;
	struct rusage ru0;
	char why[LR_ERR_MSG] = "";
	char *json = NULL;
	int64_t start_wall, params_dl;
	size_t len = 0;
	unsigned i;
	int one = 1, r, code;
	bool busy, evicted;

	memset(&ru0, 0, sizeof(ru0));
	getrusage(RUSAGE_THREAD, &ru0);
	setsockopt(t->ctrl, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	params_dl = net_now_ms() + IP3SRV_PARAMS_MS;
	r = send_state(t, IP3_PARAM_EXCHANGE);
	if (r) {
		snprintf(why, sizeof(why), "sending PARAM_EXCHANGE: %s",
			 lr_strerror(r));
		goto out;
	}
	r = read_json(t, IP3_MAX_JSON, params_dl, &json, &len, why, sizeof(why),
		      "parameters");
	if (r) {
		pthread_mutex_lock(&srv->lock);
		if (t->evicted)
			snprintf(why, sizeof(why),
				 "gave its place to a newer test: too many "
				 "waiting for their parameters");
		pthread_mutex_unlock(&srv->lock);
		if (r != LR_ECLOSED && r != LR_ETIMEOUT)
			send_error(t, IP3_IERECVPARAMS, 0);
		goto out;
	}
	r = ip3_params_decode(json, len, &p, &e);
	free(json);
	json = NULL;
	if (r) {
		snprintf(why, sizeof(why), "%s", e.msg);
		send_error(t, IP3_IERECVPARAMS, EINVAL);
		goto out;
	}
	code = params_to_req(srv, &p, &req, why, sizeof(why));
	ev.req = req;
	if (code) {
		r = -EINVAL;
		send_error(t, code, 0);
		goto out;
	}
	/* accepted: from now on it counts against max_tests */
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
		r = LR_ECLOSED;
		snprintf(why, sizeof(why),
			 "gave its place to a newer test: too many waiting "
			 "for their parameters");
		goto out;
	}
	if (busy) {
		r = -EBUSY;
		snprintf(why, sizeof(why),
			 "busy: the limit of iperf3 tests at once is reached "
			 "(--max-tests); answered ACCESS_DENIED");
		send_state(t, IP3_ACCESS_DENIED);
		goto out;
	}
	r = bench_run_init(&t->run, &req, false, &e);
	if (r) {
		snprintf(why, sizeof(why), "%s", e.msg);
		send_error(t, IP3_IENEWTEST, -r > 0 && -r < 4096 ? -r : 0);
		goto out;
	}
	t->run.udp_counters64 = p.udp_counters64;
	r = claim_waiting(t, p.udp);
	if (r) {
		snprintf(why, sizeof(why),
			 "another UDP test from this host kept setting up "
			 "its streams: %s",
			 lr_strerror(r));
		if (r == LR_ETIMEOUT)
			send_error(t, IP3_IESTREAMACCEPT, ETIMEDOUT);
		goto out;
	}
	r = send_state(t, IP3_CREATE_STREAMS);
	if (r) {
		snprintf(why, sizeof(why), "sending CREATE_STREAMS: %s",
			 lr_strerror(r));
		goto out;
	}
	r = wait_streams(t);
	if (r) {
		snprintf(why, sizeof(why),
			 "only %u of %u data streams connected%s", t->attached,
			 t->expected,
			 r == LR_ECLOSED   ? ": client disconnected"
			 : r == -ECANCELED ? ": server shutting down"
					   : " in time");
		if (r == LR_ETIMEOUT)
			send_error(t, IP3_IESTREAMACCEPT, ETIMEDOUT);
		goto out;
	}
	if (!p.udp) {
		so = (struct net_sockopts){ .window = req.window,
					    .mss = req.mss,
					    .cc = req.cc,
					    .nodelay = p.nodelay };
		for (i = 0; i < t->run.nstreams && !r; i++)
			r = net_apply_sockopts(t->run.streams[i].fd, &so, &e);
		if (r) {
			snprintf(why, sizeof(why), "%s", e.msg);
			send_error(t,
				   req.cc[0] ? IP3_IESETCONGESTION
					     : IP3_IECREATESTREAM,
				   -r > 0 && -r < 4096 ? -r : 0);
			goto out;
		}
	}
	r = send_state(t, IP3_TEST_START);
	if (r) {
		snprintf(why, sizeof(why), "sending TEST_START: %s",
			 lr_strerror(r));
		goto out;
	}
	start_wall = (int64_t)time(NULL);
	r = bench_run_start(&t->run, &e);
	if (r) {
		snprintf(why, sizeof(why), "%s", e.msg);
		send_error(t, IP3_IEINITTEST, 0);
		goto out_stop;
	}
	r = send_state(t, IP3_TEST_RUNNING);
	if (r) {
		snprintf(why, sizeof(why), "sending TEST_RUNNING: %s",
			 lr_strerror(r));
		goto out_stop;
	}
	r = data_phase(t, p.get_server_output ? &log : NULL, why, sizeof(why));
	if (r)
		goto out_stop;
	engine_stop(&t->run);
	r = results_phase(t, &p, &log, &ru0, start_wall, &ev, why, sizeof(why));
	if (!r)
		r = wait_done(t, why, sizeof(why));
	goto out;

out_stop:
	atomic_store(&t->run.abort, true);
	bench_run_stop(&t->run, 0);
out:
	ev.ok = r == 0;
	ev.test_no = t->no;
	ev.reason = why;
	snprintf(ev.peer, sizeof(ev.peer), "%s", t->peer);
	emit(srv, &ev);
	iv_log_free(&log);
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
	wake(srv);
	return NULL;
}

/* ---------------- the listener ---------------- */

static struct ip3_test *find_test(struct ip3srv *srv, const uint8_t *cookie)
{
	struct ip3_test *t;

	for (t = srv->tests; t; t = t->next)
		if (!atomic_load(&t->finished) &&
		    !memcmp(t->cookie, cookie, IP3_COOKIE_LEN))
			return t;
	return NULL;
}

/* Tests waiting for their parameters from host (all hosts: NULL). Under
 * srv->lock. */
static unsigned setup_count(struct ip3srv *srv, const uint8_t *host)
{
	struct ip3_test *t;
	unsigned n = 0;

	for (t = srv->tests; t; t = t->next)
		if (t->setup && !t->evicted &&
		    (!host || !memcmp(t->host, host, 16)))
			n++;
	return n;
}

/*
 * Room for one more test waiting for its parameters from host: when that
 * host has IP3SRV_SETUP_PER_HOST of them, or all hosts IP3SRV_MAX_SETUP,
 * the oldest of that host (or of the host with the most) gives up its
 * place: its control connection is shut, its thread ends. Under
 * srv->lock.
 */
static void setup_make_room(struct ip3srv *srv, const uint8_t *host)
{
	struct ip3_test *t, *victim = NULL;
	unsigned n, most = 0;

	if (setup_count(srv, host) < IP3SRV_SETUP_PER_HOST) {
		if (setup_count(srv, NULL) < IP3SRV_MAX_SETUP)
			return;
		for (t = srv->tests; t; t = t->next) {
			if (!t->setup || t->evicted)
				continue;
			n = setup_count(srv, t->host);
			if (n > most) {
				most = n;
				host = t->host;
			}
		}
	}
	for (t = srv->tests; t; t = t->next)
		if (t->setup && !t->evicted && !memcmp(t->host, host, 16) &&
		    (!victim || t->no < victim->no))
			victim = t;
	if (!victim)
		return;
	victim->evicted = true;
	if (victim->ctrl >= 0)
		shutdown(victim->ctrl, SHUT_RDWR);
}

/* Start a test on a control connection; takes fd. Under srv->lock. */
static const char *start_test(struct ip3srv *srv, struct ip3_pending *pd)
{
	struct ip3_test *t;
	uint8_t denied = (uint8_t)IP3_ACCESS_DENIED;

	if (srv->active >= srv->o.max_tests) {
		if (send(pd->fd, &denied, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
			/* it is told by the close, too */
		}
		return "busy: the limit of iperf3 tests at once is reached "
		       "(--max-tests); answered ACCESS_DENIED";
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return "out of memory";
	t->srv = srv;
	t->ctrl = pd->fd;
	t->no = ++srv->next_no;
	memcpy(t->cookie, pd->buf, IP3_COOKIE_LEN);
	snprintf(t->peer, sizeof(t->peer), "%s", pd->peer);
	t->peer_port = pd->port;
	memcpy(t->host, pd->host, 16);
	t->run.evfd = -1;
	t->run.memfd = -1;
	t->setup = true;
	pthread_cond_init(&t->attach_cv, NULL);
	if (pthread_create(&t->thread, NULL, test_main, t)) {
		pthread_cond_destroy(&t->attach_cv);
		free(t);
		return "cannot start a thread for the test";
	}
	setup_make_room(srv, pd->host);
	t->next = srv->tests;
	srv->tests = t;
	pd->fd = -1; /* the test owns it */
	return NULL;
}

static int set_blocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))
		return -errno;
	return 0;
}

/* A complete cookie: a new test, or a data stream of a waiting one. */
static void pending_dispatch(struct ip3srv *srv, struct ip3_pending *pd)
{
	char why[160];
	const char *reason = NULL;
	struct ip3_test *t;

	if (!ip3_cookie_valid(pd->buf)) {
		emit_reject(srv, pd->peer, "not an iperf3 cookie");
		return;
	}
	pthread_mutex_lock(&srv->lock);
	t = find_test(srv, pd->buf);
	if (!t) {
		reason = start_test(srv, pd);
	} else if (!t->waiting || t->udp || t->attached >= t->expected) {
		snprintf(why, sizeof(why),
			 "a connection with the cookie of iperf3 test %u, "
			 "which expects no more",
			 t->no);
		reason = why;
	} else if (memcmp(t->host, pd->host, 16)) {
		snprintf(why, sizeof(why),
			 "a data stream for iperf3 test %u from another host",
			 t->no);
		reason = why;
	} else if (set_blocking(pd->fd)) {
		reason = "fcntl failed";
	} else {
		t->run.streams[t->attached++].fd = pd->fd;
		pd->fd = -1;
		pthread_cond_broadcast(&t->attach_cv);
	}
	pthread_mutex_unlock(&srv->lock);
	if (reason)
		emit_reject(srv, pd->peer, reason);
}

/* Remove entry i, keeping the others in the order they were accepted. */
static void pending_drop(struct ip3srv *srv, unsigned i)
{
	if (srv->pend[i].fd >= 0)
		close(srv->pend[i].fd);
	memmove(&srv->pend[i], &srv->pend[i + 1],
		(srv->npend - i - 1) * sizeof(srv->pend[0]));
	srv->npend--;
}

/* Pending connections from host; only those without a whole cookie
 * when cookieless. */
static unsigned pending_count(const struct ip3srv *srv, const uint8_t *host,
			      bool cookieless)
{
	unsigned i, n = 0;

	for (i = 0; i < srv->npend; i++)
		if (!memcmp(srv->pend[i].host, host, 16) &&
		    (!cookieless || srv->pend[i].have < IP3_COOKIE_LEN))
			n++;
	return n;
}

/* Drop the oldest pending connection of host, one without a whole
 * cookie if it has any. */
static void pending_evict(struct ip3srv *srv, const uint8_t *host,
			  const char *reason)
{
	unsigned i;
	int any = -1;

	for (i = 0; i < srv->npend; i++) {
		if (memcmp(srv->pend[i].host, host, 16))
			continue;
		if (srv->pend[i].have < IP3_COOKIE_LEN) {
			any = (int)i;
			break;
		}
		if (any < 0)
			any = (int)i;
	}
	if (any < 0)
		return;
	emit_reject(srv, srv->pend[any].peer, reason);
	pending_drop(srv, (unsigned)any);
}

/*
 * Room for a new connection from host: one host keeps at most
 * IP3SRV_PENDING_PER_HOST without a cookie, and a full table costs the
 * host holding the most slots its oldest, so that no one host locks the
 * others out.
 */
static void pending_make_room(struct ip3srv *srv, const uint8_t *host)
{
	unsigned i, n, most = 0;
	const uint8_t *top = host;
	uint8_t key[16];

	if (pending_count(srv, host, true) >= IP3SRV_PENDING_PER_HOST) {
		pending_evict(srv, host,
			      "gave its place to a newer connection: too many "
			      "without a cookie from this host");
		return;
	}
	if (srv->npend < IP3SRV_MAX_PENDING)
		return;
	for (i = 0; i < srv->npend; i++) {
		n = pending_count(srv, srv->pend[i].host, false);
		if (n > most) {
			most = n;
			top = srv->pend[i].host;
		}
	}
	memcpy(key, top, 16); /* the entry moves when dropped */
	pending_evict(srv, key,
		      "gave its place to a newer connection: too many "
		      "without a cookie");
}

/* Out of descriptors, the listener stays readable: stop polling it for
 * this long, as server.c does, rather than spin. */
#define ACCEPT_PAUSE_MS 100

static void accept_some(struct ip3srv *srv)
{
	unsigned k;

	for (k = 0; k < 64; k++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct ip3_pending *pd;
		char peer[NET_ADDRSTR];
		uint8_t host[16];
		uint16_t port;
		int64_t wait_ms;
		int fd;

		fd = accept4(srv->lfd, (struct sockaddr *)&ss, &sl,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				srv->accept_paused_until =
					net_now_ms() + ACCEPT_PAUSE_MS;
			return;
		}
		peer_of(&ss, peer, sizeof(peer), &port, host);
		pending_make_room(srv, host);
		pd = &srv->pend[srv->npend++];
		memset(pd, 0, sizeof(*pd));
		pd->fd = fd;
		snprintf(pd->peer, sizeof(pd->peer), "%s", peer);
		pd->port = port;
		memcpy(pd->host, host, 16);
		pd->seq = atomic_fetch_add(&srv->accepted, 1) + 1;
		/* iperf3 sends its cookie right after connecting */
		wait_ms = srv->o.handshake_ms < IP3SRV_COOKIE_MS
				  ? srv->o.handshake_ms
				  : IP3SRV_COOKIE_MS;
		pd->deadline = net_now_ms() + wait_ms;
	}
}

/* Read what the pending connection i has; false when it failed (and was
 * removed). */
static bool pending_read(struct ip3srv *srv, unsigned i)
{
	struct ip3_pending *pd = &srv->pend[i];
	ssize_t n;

	if (pd->have == IP3_COOKIE_LEN)
		return true;
	n = recv(pd->fd, pd->buf + pd->have, IP3_COOKIE_LEN - pd->have,
		 MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0) {
		emit_reject(srv, pd->peer,
			    n == 0 ? "closed before sending a whole cookie"
				   : "read error before the cookie");
		pending_drop(srv, i);
		return false;
	}
	pd->have += (size_t)n;
	return true;
}

/*
 * Whether the complete cookie of pending entry i waits: iperf3 (which
 * reads each cookie before the next accept) numbers a test's data
 * streams in the order they connected, so a data stream waits while an
 * earlier connection from its host that could be one of the same test's
 * streams is still incomplete: accepted after the test began waiting
 * for streams, with what it sent so far matching the cookie. That wait
 * is bounded by the earlier one's deadline.
 */
static bool pending_held(struct ip3srv *srv, unsigned i)
{
	const struct ip3_pending *pd = &srv->pend[i], *o;
	struct ip3_test *t;
	uint64_t since = 0;
	bool stream;
	unsigned j;

	pthread_mutex_lock(&srv->lock);
	t = find_test(srv, pd->buf);
	stream = t && t->waiting && !t->udp;
	if (stream)
		since = t->wait_seq;
	pthread_mutex_unlock(&srv->lock);
	if (!stream)
		return false;
	for (j = 0; j < i; j++) {
		o = &srv->pend[j];
		if (o->have < IP3_COOKIE_LEN && o->seq > since &&
		    !memcmp(o->host, pd->host, 16) &&
		    !memcmp(o->buf, pd->buf, o->have))
			return true;
	}
	return false;
}

/* Hand over complete cookies that need not wait (pending_held). */
static void pending_dispatch_ready(struct ip3srv *srv)
{
	unsigned i = 0;

	while (i < srv->npend) {
		struct ip3_pending *pd = &srv->pend[i];

		if (pd->have < IP3_COOKIE_LEN || pending_held(srv, i)) {
			i++;
			continue;
		}
		pending_dispatch(srv, pd);
		pending_drop(srv, i);
	}
}

/* A datagram on the unconnected UDP socket: a new UDP stream, or noise.
 * False when there was none to read. */
static bool udp_datagram(struct ip3srv *srv)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct net_addr peer;
	struct lr_err e = { 0 };
	char peer_s[NET_ADDRSTR];
	uint8_t b[64], host[16];
	uint32_t v, reply;
	struct ip3_test *t;
	uint16_t port;
	bool native;
	ssize_t n;
	int fd;

	n = recvfrom(srv->ufd, b, sizeof(b), MSG_DONTWAIT,
		     (struct sockaddr *)&ss, &sl);
	if (n < 0)
		return false;
	if (n != 4)
		return true; /* late data of a finished stream, or noise */
	memcpy(&v, b, 4);
	/* iperf3 writes the value in its host's byte order */
	native = v == UDP_CONNECT_MSG;
	if (!native && v != __builtin_bswap32(UDP_CONNECT_MSG))
		return true;
	peer_of(&ss, peer_s, sizeof(peer_s), &port, host);
	pthread_mutex_lock(&srv->lock);
	for (t = srv->tests; t; t = t->next)
		if (t->waiting && t->udp && t->attached < t->expected &&
		    !memcmp(t->host, host, 16))
			break;
	pthread_mutex_unlock(&srv->lock);
	if (!t) {
		emit_reject(srv, peer_s,
			    "UDP stream without an iperf3 test waiting for "
			    "it from that host");
		return true;
	}
	memset(&peer, 0, sizeof(peer));
	memcpy(&peer.ss, &ss, sl);
	peer.len = sl;
	fd = net_udp_socket(&srv->addr, &peer, &e);
	if (fd < 0) {
		emit_reject(srv, peer_s, e.msg);
		return true;
	}
	reply = native ? UDP_CONNECT_REPLY
		       : __builtin_bswap32(UDP_CONNECT_REPLY);
	if (send(fd, &reply, 4, 0) != 4) {
		close(fd);
		emit_reject(srv, peer_s, "cannot answer the UDP stream");
		return true;
	}
	pthread_mutex_lock(&srv->lock);
	/* t cannot be freed meanwhile: only this thread reaps tests */
	if (t->waiting && t->attached < t->expected) {
		t->run.streams[t->attached++].fd = fd;
		fd = -1;
		pthread_cond_broadcast(&t->attach_cv);
	}
	pthread_mutex_unlock(&srv->lock);
	if (fd >= 0)
		close(fd);
	return true;
}

static void reap(struct ip3srv *srv, bool all)
{
	struct ip3_test **pp = &srv->tests, *t;

	for (;;) {
		pthread_mutex_lock(&srv->lock);
		while (*pp && !(all || atomic_load(&(*pp)->finished)))
			pp = &(*pp)->next;
		t = *pp;
		if (t)
			*pp = t->next;
		pthread_mutex_unlock(&srv->lock);
		if (!t)
			return;
		pthread_join(t->thread, NULL);
		pthread_cond_destroy(&t->attach_cv);
		free(t);
	}
}

int ip3srv_run(struct ip3srv *srv, struct lr_err *err)
{
	struct pollfd pf[3 + IP3SRV_MAX_PENDING];
	struct ip3_test *t;
	unsigned i, np;
	struct server_event ev = { .kind = SERVER_EV_LISTENING };
	int64_t now, next;
	int r = 0;

	ev.port = ip3srv_port(srv);
	snprintf(ev.peer, sizeof(ev.peer), "%s",
		 srv->o.bind_addr ? srv->o.bind_addr : "*");
	emit(srv, &ev);
	while (!atomic_load(&srv->stopping)) {
		now = net_now_ms();
		next = now + 1000;
		pf[0] = (struct pollfd){ .fd = now >= srv->accept_paused_until
						       ? srv->lfd
						       : -1,
					 .events = POLLIN };
		if (now < srv->accept_paused_until)
			next = srv->accept_paused_until;
		pf[1] = (struct pollfd){ .fd = srv->ufd, .events = POLLIN };
		pf[2] = (struct pollfd){ .fd = srv->evfd, .events = POLLIN };
		np = srv->npend;
		for (i = 0; i < np; i++) {
			const struct ip3_pending *pd = &srv->pend[i];

			/* a held cookie is complete: what else it has, or
			 * its close, waits for its test (fd -1: not
			 * polled); it goes when the earlier connection
			 * that holds it completes or expires */
			pf[3 + i] = (struct pollfd){
				.fd = pd->have < IP3_COOKIE_LEN ? pd->fd : -1,
				.events = POLLIN
			};
			if (pd->have < IP3_COOKIE_LEN && pd->deadline < next)
				next = pd->deadline;
		}
		if (poll(pf, 3 + np, next > now ? (int)(next - now) : 0) < 0) {
			if (errno == EINTR)
				continue;
			r = lr_err_setc(err, -errno, "poll");
			break;
		}
		if (pf[2].revents) {
			uint64_t v;

			if (read(srv->evfd, &v, sizeof(v)) < 0) {
				/* drained */
			}
			reap(srv, false);
		}
		/* entries move up when one is dropped: walk down */
		for (i = np; i-- > 0;)
			if (pf[3 + i].revents)
				pending_read(srv, i);
		now = net_now_ms();
		for (i = srv->npend; i-- > 0;) {
			if (srv->pend[i].have < IP3_COOKIE_LEN &&
			    srv->pend[i].deadline <= now) {
				emit_reject(srv, srv->pend[i].peer,
					    "no iperf3 cookie in time");
				pending_drop(srv, i);
			}
		}
		if (pf[0].revents)
			accept_some(srv);
		pending_dispatch_ready(srv);
		if (pf[1].revents)
			for (i = 0; i < 64 && udp_datagram(srv); i++) {
			}
	}
	/* abort running tests: wake their control reads */
	pthread_mutex_lock(&srv->lock);
	for (t = srv->tests; t; t = t->next)
		if (t->ctrl >= 0)
			shutdown(t->ctrl, SHUT_RDWR);
	pthread_mutex_unlock(&srv->lock);
	reap(srv, true);
	while (srv->npend)
		pending_drop(srv, srv->npend - 1);
	return r;
}

void ip3srv_free(struct ip3srv *srv)
{
	if (!srv)
		return;
	atomic_store(&srv->stopping, true);
	reap(srv, true);
	while (srv->npend)
		pending_drop(srv, srv->npend - 1);
	if (srv->lfd >= 0)
		close(srv->lfd);
	if (srv->ufd >= 0)
		close(srv->ufd);
	if (srv->evfd >= 0)
		close(srv->evfd);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}
