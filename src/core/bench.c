// SPDX-License-Identifier: MIT
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
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "bench.h"
#include "conn.h"
#include "crypto.h"
#include "link.h"
#include "banned.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

/* Data sockets time out blocking calls this often to notice an abort. */
#define STREAM_POLL_MS	   250
#define CTRL_TIMEOUT_MS	   10000
#define RESULTS_TIMEOUT_MS 10000
#define STOP_GRACE_MS	   5000
/* a control message with room for its record header and tag */
#define BUF_LEN (PROTO_MAX_BODY + PROTO_HDR_LEN + CONN_REC_HDR + CRYPTO_TAG_LEN)

unsigned bench_conn_count(const struct proto_test_request *req)
{
	return req->streams * (req->mode == PROTO_MODE_BIDIR ? 2u : 1u);
}

uint8_t bench_stream_dir(const struct proto_test_request *req, unsigned idx)
{
	switch (req->mode) {
	case PROTO_MODE_FORWARD: return PROTO_DIR_C2S;
	case PROTO_MODE_REVERSE: return PROTO_DIR_S2C;
	default: return idx < req->streams ? PROTO_DIR_C2S : PROTO_DIR_S2C;
	}
}

size_t bench_recv_buf(const struct proto_test_request *req)
{
	size_t cap = bench_conn_count(req) <= 16 ? BENCH_RECV_BUF
						 : BENCH_RECV_BUF_MANY;

	return req->blksize > cap ? req->blksize : cap;
}

int bench_run_init(struct bench_run *run, const struct proto_test_request *req,
		   bool is_client, struct lr_err *err)
{
	unsigned i, n = bench_conn_count(req);

	memset(run, 0, sizeof(*run));
	run->evfd = -1;
	run->memfd = -1;
	run->req = *req;
	run->is_client = is_client;
	if ((uint64_t)n * bench_recv_buf(req) > BENCH_MAX_TEST_MEM)
		return lr_err_set(err, -E2BIG,
				  "%u streams of %u-byte buffers exceed the "
				  "%llu MiB bound per test",
				  n, req->blksize, BENCH_MAX_TEST_MEM >> 20);
	run->streams = calloc(n, sizeof(*run->streams));
	if (!run->streams)
		return lr_err_setc(err, -ENOMEM, "stream table");
	run->nstreams = n;
	for (i = 0; i < n; i++) {
		struct bench_stream *s = &run->streams[i];

		s->run = run;
		s->idx = i;
		s->dir = bench_stream_dir(req, i);
		s->sender = (s->dir == PROTO_DIR_C2S) == is_client;
		s->fd = -1;
		conn_init_plain(&s->conn, -1);
		s->conn.abort = &run->abort;
		s->tcp.min_rtt = UINT32_MAX;
	}
	pthread_mutex_init(&run->gate_lock, NULL);
	pthread_cond_init(&run->gate_cv, NULL);
	run->gate_init = true;
	run->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (run->evfd < 0)
		return lr_err_setc(err, -errno, "eventfd");
	atomic_store(&run->budget[0], req->bytes);
	atomic_store(&run->budget[1], req->bytes);
	return 0;
}

static void gate_open(struct bench_run *run)
{
	if (!run->gate_init)
		return;
	pthread_mutex_lock(&run->gate_lock);
	run->go = true;
	pthread_cond_broadcast(&run->gate_cv);
	pthread_mutex_unlock(&run->gate_lock);
}

/* A stream thread is ready; wait until the clock starts. */
static void gate_wait(struct bench_run *run)
{
	pthread_mutex_lock(&run->gate_lock);
	run->ready++;
	pthread_cond_broadcast(&run->gate_cv);
	while (!run->go)
		pthread_cond_wait(&run->gate_cv, &run->gate_lock);
	pthread_mutex_unlock(&run->gate_lock);
}

void bench_run_fini(struct bench_run *run)
{
	unsigned i;

	if (!run->streams)
		goto out_evfd;
	atomic_store(&run->abort, true);
	gate_open(run);
	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream *s = &run->streams[i];

		if (s->started) {
			if (s->fd >= 0)
				shutdown(s->fd, SHUT_RDWR);
			pthread_join(s->thread, NULL);
			s->started = false;
		}
		conn_fini(&s->conn);
		if (s->fd >= 0)
			close(s->fd);
		s->fd = -1;
	}
	free(run->streams);
	run->streams = NULL;
out_evfd:
	if (run->gate_init) {
		pthread_cond_destroy(&run->gate_cv);
		pthread_mutex_destroy(&run->gate_lock);
		run->gate_init = false;
	}
	if (run->evfd >= 0)
		close(run->evfd);
	run->evfd = -1;
	if (run->memfd >= 0)
		close(run->memfd);
	run->memfd = -1;
}

/* Take up to want bytes from a -n budget; 0 when it is spent. */
static size_t budget_take(_Atomic uint64_t *b, size_t want)
{
	uint64_t cur = atomic_load(b), take;

	do {
		if (!cur)
			return 0;
		take = cur < want ? cur : want;
	} while (!atomic_compare_exchange_weak(b, &cur, cur - take));
	return (size_t)take;
}

static void drain_zerocopy(int fd)
{
	char ctl[256];
	struct msghdr msg;
	int i;

	for (i = 0; i < 64; i++) {
		memset(&msg, 0, sizeof(msg));
		msg.msg_control = ctl;
		msg.msg_controllen = sizeof(ctl);
		if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return;
	}
}

static int send_loop(struct bench_stream *s, uint8_t *buf)
{
	struct bench_run *run = s->run;
	_Atomic uint64_t *budget = run->req.bytes ? &run->budget[s->dir] : NULL;
	uint8_t zc = run->req.zerocopy;
	size_t n, off;
	ssize_t k;
	unsigned sends = 0;
	int64_t now = 0;

	while (!atomic_load_explicit(&run->stop, memory_order_relaxed) &&
	       !atomic_load_explicit(&run->abort, memory_order_relaxed)) {
		n = run->req.blksize;
		if (budget && !(n = budget_take(budget, n)))
			break;
		for (off = 0; off < n;) {
			if (zc == PROTO_ZC_SENDFILE) {
				off_t fo = (off_t)off;

				k = sendfile(s->fd, run->memfd, &fo, n - off);
			} else {
				k = send(s->fd, buf + off, n - off,
					 MSG_NOSIGNAL | (zc == PROTO_ZC_MSG
								 ? MSG_ZEROCOPY
								 : 0));
			}
			if (k < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN) {
					if (atomic_load(&run->abort))
						return 0;
					continue;
				}
				if (errno == ENOBUFS && zc == PROTO_ZC_MSG) {
					drain_zerocopy(s->fd);
					continue;
				}
				return -errno;
			}
			off += (size_t)k;
			now = net_now_us();
			atomic_fetch_add_explicit(&s->bytes, (uint64_t)k,
						  memory_order_relaxed);
			atomic_store_explicit(&s->last_us, now,
					      memory_order_relaxed);
		}
		if (zc == PROTO_ZC_MSG && (++sends & 15) == 0)
			drain_zerocopy(s->fd);
		if (run->send_end_us && now >= run->send_end_us)
			break;
	}
	if (zc == PROTO_ZC_MSG)
		drain_zerocopy(s->fd);
	if (shutdown(s->fd, SHUT_WR) && errno != ENOTCONN)
		return -errno;
	return 0;
}

/* Sender with records: seal each block in place and send it; an END
 * record tells the receiver nothing was cut off. */
static int send_sealed(struct bench_stream *s, uint8_t *buf)
{
	struct bench_run *run = s->run;
	_Atomic uint64_t *budget = run->req.bytes ? &run->budget[s->dir] : NULL;
	size_t n;
	int64_t now;
	int r;

	while (!atomic_load_explicit(&run->stop, memory_order_relaxed) &&
	       !atomic_load_explicit(&run->abort, memory_order_relaxed)) {
		n = run->req.blksize;
		if (budget && !(n = budget_take(budget, n)))
			break;
		r = conn_send_data(&s->conn, CONN_REC_DATA, buf, n);
		if (r == -ECANCELED)
			return 0;
		if (r)
			return r;
		now = net_now_us();
		atomic_fetch_add_explicit(&s->bytes, n, memory_order_relaxed);
		atomic_store_explicit(&s->last_us, now, memory_order_relaxed);
		if (run->send_end_us && now >= run->send_end_us)
			break;
	}
	if (atomic_load(&run->abort))
		return 0;
	r = conn_send_data(&s->conn, CONN_REC_END, buf, 0);
	if (r == -ECANCELED)
		return 0;
	if (r)
		return r;
	if (shutdown(s->fd, SHUT_WR) && errno != ENOTCONN)
		return -errno;
	return 0;
}

/* Receiver with records: open each in place; the stream must end with an
 * END record. */
static int recv_sealed(struct bench_stream *s, uint8_t *buf, size_t cap)
{
	uint8_t type;
	size_t n;
	int r;

	for (;;) {
		r = conn_recv_data(&s->conn, buf, cap, &type, &n);
		if (r == -ECANCELED)
			return 0;
		if (r)
			return r;
		if (type == CONN_REC_END)
			break;
		atomic_fetch_add_explicit(&s->bytes, n, memory_order_relaxed);
		atomic_store_explicit(&s->last_us, net_now_us(),
				      memory_order_relaxed);
	}
	/* nothing may follow the END record */
	r = conn_recv_data(&s->conn, buf, cap, &type, &n);
	if (r == LR_ETRUNC)
		return 0;
	if (r == -ECANCELED)
		return 0;
	return r ? r : LR_ERECORD;
}

static int recv_loop(struct bench_stream *s, uint8_t *buf, size_t cap)
{
	struct bench_run *run = s->run;
	ssize_t k;

	for (;;) {
		k = recv(s->fd, buf, cap, 0);
		if (k > 0) {
			atomic_fetch_add_explicit(&s->bytes, (uint64_t)k,
						  memory_order_relaxed);
			atomic_store_explicit(&s->last_us, net_now_us(),
					      memory_order_relaxed);
			continue;
		}
		if (k == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			if (atomic_load(&run->abort))
				return 0;
			continue;
		}
		return -errno;
	}
}

static void *stream_main(void *arg)
{
	struct bench_stream *s = arg;
	struct bench_run *run = s->run;
	size_t cap = run->req.blksize;
	struct rusage ru;
	uint64_t one = 1;
	uint8_t *buf;

	if (!s->sender)
		cap = bench_recv_buf(&run->req);
	if (conn_data_sealed(&s->conn))
		cap += CRYPTO_TAG_LEN;
	buf = malloc(cap);
	if (!buf) {
		s->error = -ENOMEM;
		gate_wait(run);
		goto out;
	}
	if (s->sender && crypto_random(buf, cap)) {
		s->error = -EIO;
		gate_wait(run);
		goto out_free;
	}
	gate_wait(run);
	if (atomic_load(&run->abort))
		goto out_free;
	if (conn_data_sealed(&s->conn))
		s->error = s->sender ? send_sealed(s, buf)
				     : recv_sealed(s, buf, cap);
	else
		s->error = s->sender ? send_loop(s, buf)
				     : recv_loop(s, buf, cap);
out_free:
	free(buf);
out:
	if (!getrusage(RUSAGE_THREAD, &ru)) {
		s->cpu_user_us = (uint64_t)ru.ru_utime.tv_sec * 1000000 +
				 (uint64_t)ru.ru_utime.tv_usec;
		s->cpu_sys_us = (uint64_t)ru.ru_stime.tv_sec * 1000000 +
				(uint64_t)ru.ru_stime.tv_usec;
	}
	atomic_store(&s->done, true);
	if (write(run->evfd, &one, sizeof(one)) < 0) {
		/* the counter cannot overflow; nothing else to do */
	}
	return NULL;
}

static int setup_memfd(struct bench_run *run, struct lr_err *err)
{
	uint8_t *p;
	int fd, r;

	fd = memfd_create("linerate-payload", MFD_CLOEXEC);
	if (fd < 0)
		return lr_err_setc(err, -errno, "memfd_create");
	if (ftruncate(fd, run->req.blksize)) {
		r = lr_err_setc(err, -errno, "payload file");
		goto out_close;
	}
	p = mmap(NULL, run->req.blksize, PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		r = lr_err_setc(err, -errno, "payload map");
		goto out_close;
	}
	r = crypto_random(p, run->req.blksize);
	munmap(p, run->req.blksize);
	if (r) {
		lr_err_setc(err, r, "payload");
		goto out_close;
	}
	run->memfd = fd;
	return 0;

out_close:
	close(fd);
	return r;
}

int bench_run_start(struct bench_run *run, struct lr_err *err)
{
	struct timeval tv = { 0, STREAM_POLL_MS * 1000 };
	unsigned i;
	int r, one = 1;

	if (run->req.zerocopy == PROTO_ZC_SENDFILE) {
		r = setup_memfd(run, err);
		if (r)
			return r;
	}
	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream *s = &run->streams[i];

		setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		/* a record's tail must not wait for an ACK (Nagle): the
		 * receiver needs the whole record before it can use any */
		if (conn_data_sealed(&s->conn))
			setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one,
				   sizeof(one));
		if (!s->sender) {
			/* wake the receiver for big batches, not for every
			 * segment: measured 1.5x the throughput at 0.6x the
			 * CPU per GB between namespaces (docs/BENCHMARKS.md) */
			int lw = BENCH_RCVLOWAT;

			if (run->req.window &&
			    run->req.window / 4 < BENCH_RCVLOWAT)
				lw = (int)(run->req.window / 4);
			setsockopt(s->fd, SOL_SOCKET, SO_RCVLOWAT, &lw,
				   sizeof(lw));
		}
		if (run->req.zerocopy == PROTO_ZC_MSG && s->sender &&
		    setsockopt(s->fd, SOL_SOCKET, SO_ZEROCOPY, &one,
			       sizeof(one)))
			return lr_err_setc(err, -errno, "SO_ZEROCOPY");
		s->local.len = sizeof(s->local.ss);
		getsockname(s->fd, (struct sockaddr *)&s->local.ss,
			    &s->local.len);
		s->peer.len = sizeof(s->peer.ss);
		getpeername(s->fd, (struct sockaddr *)&s->peer.ss,
			    &s->peer.len);
	}
	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream *s = &run->streams[i];

		r = pthread_create(&s->thread, NULL, stream_main, s);
		if (r) {
			atomic_store(&run->abort, true);
			gate_open(run);
			return lr_err_setc(err, -r, "starting stream thread");
		}
		s->started = true;
	}
	pthread_mutex_lock(&run->gate_lock);
	while (run->ready < run->nstreams)
		pthread_cond_wait(&run->gate_cv, &run->gate_lock);
	pthread_mutex_unlock(&run->gate_lock);

	run->t0_us = net_now_us();
	run->omit_end_us = run->t0_us + (int64_t)run->req.omit_ms * 1000;
	if (run->req.duration_ms)
		run->send_end_us =
			run->omit_end_us + (int64_t)run->req.duration_ms * 1000;
	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream *s = &run->streams[i];
		struct net_tcp_stats st;

		atomic_store(&s->last_us, run->t0_us);
		/* no omitted period: totals start from zero */
		if (!run->req.omit_ms && s->sender &&
		    !net_tcp_stats(s->fd, &st)) {
			s->tcp.retrans_base = st.total_retrans;
			s->tcp.retrans_last = st.total_retrans;
			s->iv_retrans = st.total_retrans;
		}
	}
	if (!run->req.omit_ms)
		run->omit_done = true;
	gate_open(run);
	return 0;
}

bool bench_run_all_done(const struct bench_run *run)
{
	unsigned i;

	for (i = 0; i < run->nstreams; i++)
		if (!atomic_load(&run->streams[i].done))
			return false;
	return true;
}

void bench_run_sample(struct bench_run *run, struct bench_interval *iv,
		      double iv_start)
{
	int64_t now = net_now_us();
	/* millisecond resolution, as the callers' timers */
	bool cross_omit = !run->omit_done &&
			  now / 1000 >= run->omit_end_us / 1000;
	double base;
	unsigned i;

	if (iv) {
		base = (double)((run->omit_done ? run->omit_end_us
						: run->t0_us)) /
		       1e6;
		iv->start = iv_start;
		iv->end = (double)now / 1e6 - base;
		iv->omitted = !run->omit_done;
		iv->n = run->nstreams;
	}
	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream *s = &run->streams[i];
		struct net_tcp_stats st;
		uint64_t b = atomic_load(&s->bytes);
		bool tcp = s->sender && !net_tcp_stats(s->fd, &st);

		if (iv) {
			struct bench_iv_stream *o = &iv->s[i];

			memset(o, 0, sizeof(*o));
			o->idx = s->idx;
			o->dir = s->dir;
			o->sender = s->sender;
			o->bytes = b - s->iv_bytes;
			o->has_tcp = tcp;
			if (tcp) {
				o->retrans = st.total_retrans - s->iv_retrans;
				o->cwnd = st.cwnd_bytes;
				o->rtt_us = st.rtt_us;
				o->rttvar_us = st.rttvar_us;
				o->pmtu = st.pmtu;
			}
		}
		if (iv)
			s->iv_bytes = b;
		if (tcp) {
			if (iv)
				s->iv_retrans = st.total_retrans;
			s->tcp.retrans_last = st.total_retrans;
			if (cross_omit) {
				memset(&s->tcp, 0, sizeof(s->tcp));
				s->tcp.min_rtt = UINT32_MAX;
				s->tcp.retrans_base = st.total_retrans;
				s->tcp.retrans_last = st.total_retrans;
			}
			if (st.cwnd_bytes > s->tcp.max_cwnd)
				s->tcp.max_cwnd = st.cwnd_bytes;
			if (st.rtt_us) {
				if (st.rtt_us < s->tcp.min_rtt)
					s->tcp.min_rtt = st.rtt_us;
				if (st.rtt_us > s->tcp.max_rtt)
					s->tcp.max_rtt = st.rtt_us;
				s->tcp.rtt_sum += st.rtt_us;
				s->tcp.rtt_n++;
			}
		}
		if (cross_omit)
			s->bytes_omit = b;
	}
	if (cross_omit)
		run->omit_done = true;
}

static void wake_wait(struct bench_run *run, int64_t deadline_ms)
{
	struct pollfd pfd = { .fd = run->evfd, .events = POLLIN };
	uint64_t v;
	int64_t left = deadline_ms - net_now_ms();

	if (left > 0 && poll(&pfd, 1, (int)left) > 0 &&
	    read(run->evfd, &v, sizeof(v)) < 0) {
		/* drained by someone else: fine */
	}
}

void bench_run_stop(struct bench_run *run, int grace_ms)
{
	int64_t deadline = net_now_ms() + grace_ms;
	unsigned i;

	atomic_store(&run->stop, true);
	while (!bench_run_all_done(run) && net_now_ms() < deadline)
		wake_wait(run, deadline);
	if (!bench_run_all_done(run))
		atomic_store(&run->abort, true);
	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream *s = &run->streams[i];

		if (s->started) {
			pthread_join(s->thread, NULL);
			s->started = false;
		}
	}
	/* last TCP figures for the totals */
	bench_run_sample(run, NULL, 0);
}

static void side_from_stream(const struct bench_run *run,
			     const struct bench_stream *s,
			     struct proto_stream_result *o)
{
	int64_t from = run->omit_done ? run->omit_end_us : run->t0_us;
	int64_t last = atomic_load(&s->last_us);

	memset(o, 0, sizeof(*o));
	o->stream = (uint16_t)s->idx;
	o->dir = s->dir;
	o->bytes = atomic_load(&s->bytes) - s->bytes_omit;
	o->duration_us = last > from ? (uint64_t)(last - from) : 0;
	if (s->sender) {
		o->flags = 1;
		o->retrans = s->tcp.retrans_last - s->tcp.retrans_base;
		o->max_cwnd = s->tcp.max_cwnd;
		o->min_rtt = s->tcp.rtt_n ? s->tcp.min_rtt : 0;
		o->max_rtt = s->tcp.max_rtt;
		o->mean_rtt =
			s->tcp.rtt_n ? (uint32_t)(s->tcp.rtt_sum / s->tcp.rtt_n)
				     : 0;
	}
}

void bench_run_cpu(const struct bench_run *run, uint64_t *user_us,
		   uint64_t *sys_us)
{
	unsigned i;

	*user_us = 0;
	*sys_us = 0;
	for (i = 0; i < run->nstreams; i++) {
		*user_us += run->streams[i].cpu_user_us;
		*sys_us += run->streams[i].cpu_sys_us;
	}
}

void bench_run_results(const struct bench_run *run, struct proto_results *out,
		       struct proto_stream_result *arr)
{
	unsigned i;

	memset(out, 0, sizeof(*out));
	out->streams = arr;
	out->cap = (uint16_t)run->nstreams;
	out->nstreams = (uint16_t)run->nstreams;
	for (i = 0; i < run->nstreams; i++)
		side_from_stream(run, &run->streams[i], &arr[i]);
	bench_run_cpu(run, &out->cpu.user_us, &out->cpu.sys_us);
	if (run->nstreams)
		net_get_cc(run->streams[0].fd, out->cc, sizeof(out->cc));
}

/* ---------------- client ---------------- */

static void side_fill(struct bench_side *d, const struct proto_stream_result *r)
{
	d->bytes = r->bytes;
	d->seconds = (double)r->duration_us / 1e6;
	d->retrans = r->retrans;
	d->max_cwnd = r->max_cwnd;
	d->min_rtt = r->min_rtt;
	d->mean_rtt = r->mean_rtt;
	d->max_rtt = r->max_rtt;
	d->has_tcp = r->flags & 1;
}

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

static uint64_t tv_us(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000 + (uint64_t)tv->tv_usec;
}

static void fill_link(const struct bench_opts *o, struct bench_run *run,
		      struct bench_result *res)
{
	struct bench_stream *s = &run->streams[0];
	struct net_tcp_stats st;
	struct link_info li;
	bool have = !link_lookup((struct sockaddr *)&s->local.ss, "/sys", &li);

	res->ipv6 = s->local.ss.ss_family == AF_INET6 &&
		    !IN6_IS_ADDR_V4MAPPED(
			    &((struct sockaddr_in6 *)&s->local.ss)->sin6_addr);
	if (!net_tcp_stats(s->fd, &st)) {
		res->timestamps = st.timestamps;
		res->mss = st.snd_mss;
	}
	if (have) {
		res->link_known = true;
		snprintf(res->link_if, sizeof(res->link_if), "%s", li.ifname);
		res->link_speed_bps = li.speed_bps;
		res->link_mtu = li.mtu;
		res->link_wireless = li.wireless;
		res->link_virtual = li.virtual_if;
	}
	if (o->link_speed_bps)
		res->link_speed_bps = o->link_speed_bps;
	if (!res->link_mtu)
		res->link_mtu = 1500;
	res->link_ceiling_bps = link_goodput_bps(
		res->link_speed_bps, res->link_mtu, res->ipv6, res->timestamps);
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

		r = net_connect(addr, bind, &so, o->connect_timeout_ms, err);
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

int bench_client_run(const struct bench_opts *o,
		     const struct bench_callbacks *cb, struct bench_result *res,
		     struct lr_err *err)
{
	struct net_sockopts ctrl_so = { .nodelay = true };
	struct net_addr addr, bindaddr, *bindp = NULL;
	struct proto_ctrl_open co = { .features = 0 };
	struct proto_test_accept acc;
	struct proto_results pres, lres;
	struct proto_stream_result *rarr = NULL, *larr = NULL;
	struct bench_interval iv = { 0 };
	struct bench_run run;
	struct conn ctrl;
	struct proto_hdr h;
	struct proto_buf b;
	struct rusage ru0, ru1;
	char where[NET_ADDRSTR];
	uint8_t *buf;
	int64_t t_wall0, next_iv, end_ms, hard_end, now, tick;
	double iv_start = 0;
	unsigned i;
	int fd, r;

	memset(res, 0, sizeof(*res));
	memset(&run, 0, sizeof(run));
	run.evfd = run.memfd = -1;
	conn_init_plain(&ctrl, -1);
	buf = malloc(BUF_LEN);
	if (!buf)
		return lr_err_setc(err, -ENOMEM, "buffer");
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
	res->start_time = time(NULL);
	if (cb->connecting)
		cb->connecting(cb->ctx, res->remote_host, res->remote_port);
	getrusage(RUSAGE_SELF, &ru0);
	t_wall0 = net_now_us();

	fd = net_connect(&addr, bindp, &ctrl_so, o->connect_timeout_ms, err);
	if (fd < 0) {
		r = fd;
		goto out_free;
	}
	/* preamble and handshake; nothing about the test before it */
	r = conn_client_open(fd, o->psk, o->cipher_wish, where,
			     net_now_ms() + CTRL_TIMEOUT_MS, &ctrl, err);
	if (r)
		goto out_close;
	res->authenticated = ctrl.secure;
	res->cipher = ctrl.cipher;
	if (o->req.zerocopy && conn_data_sealed(&ctrl)) {
		r = lr_err_set(err, -EINVAL,
			       "-Z cannot be used with "
			       "encryption: the data is encrypted in user "
			       "space (--cipher none sends it in clear)");
		goto out_close;
	}
	snprintf(co.software, sizeof(co.software), "linerate %s",
		 LINERATE_VERSION);
	proto_buf_init(&b, buf, 1024);
	r = proto_encode_ctrl_open(&b, &co);
	if (!r)
		r = conn_send_msg(&ctrl, buf, b.len,
				  net_now_ms() + CTRL_TIMEOUT_MS);
	proto_buf_init(&b, buf, 1024);
	if (!r)
		r = proto_encode_test_request(&b, &o->req);
	if (!r)
		r = conn_send_msg(&ctrl, buf, b.len,
				  net_now_ms() + CTRL_TIMEOUT_MS);
	if (r) {
		/* a server that refused us may have said why */
		struct lr_err e2 = { 0 };

		if (expect_msg(&ctrl, PROTO_TEST_ACCEPT, buf, BUF_LEN, &h, 2000,
			       "an answer", &e2) != LR_EPEER &&
		    e2.code != LR_EBUSY && e2.code != LR_EAUTH) {
			lr_err_setc(err, r, "sending request to %s", where);
		} else {
			*err = e2;
			r = e2.code;
		}
		goto out_close;
	}
	r = expect_msg(&ctrl, PROTO_TEST_ACCEPT, buf, BUF_LEN, &h,
		       CTRL_TIMEOUT_MS, "the test to be accepted", err);
	if (r)
		goto out_close;
	r = proto_decode_test_accept(buf, h.len, &acc);
	if (r) {
		lr_err_set(err, r, "malformed TEST_ACCEPT from server");
		goto out_close;
	}
	snprintf(res->server_software, sizeof(res->server_software), "%s",
		 acc.software);
	r = bench_run_init(&run, &o->req, true, err);
	if (r)
		goto out_close;
	r = open_streams(o, &addr, bindp, where, acc.test_id, &run, err);
	if (r)
		goto out_run;
	r = expect_msg(&ctrl, PROTO_TEST_START, buf, BUF_LEN, &h,
		       CTRL_TIMEOUT_MS, "the test to start", err);
	if (r)
		goto out_run;

	res->nstreams = run.nstreams;
	res->streams = calloc(run.nstreams, sizeof(*res->streams));
	iv.s = calloc(run.nstreams, sizeof(*iv.s));
	rarr = calloc(run.nstreams, sizeof(*rarr));
	larr = calloc(run.nstreams, sizeof(*larr));
	if (!res->streams || !iv.s || !rarr || !larr) {
		r = lr_err_setc(err, -ENOMEM, "result tables");
		goto out_run;
	}
	{
		int v;
		socklen_t sl = sizeof(v);

		if (!getsockopt(run.streams[0].fd, SOL_SOCKET, SO_SNDBUF, &v,
				&sl))
			res->sndbuf = (uint32_t)v;
		sl = sizeof(v);
		if (!getsockopt(run.streams[0].fd, SOL_SOCKET, SO_RCVBUF, &v,
				&sl))
			res->rcvbuf = (uint32_t)v;
	}
	r = bench_run_start(&run, err);
	if (r)
		goto out_run;
	fill_link(o, &run, res);
	net_get_cc(run.streams[0].fd, res->local_cc, sizeof(res->local_cc));
	if (cb->started)
		cb->started(cb->ctx, &run, res);

	/* the test: intervals until the time or the bytes run out; TCP
	 * figures are sampled every tick even when intervals are not shown */
	tick = o->interval_ms ? (int64_t)o->interval_ms : 1000;
	end_ms = run.omit_end_us / 1000 + (int64_t)o->req.duration_ms;
	hard_end = run.t0_us / 1000 + (int64_t)o->req.omit_ms +
		   (int64_t)(acc.max_duration_ms ? acc.max_duration_ms
						 : PROTO_MAX_DURATION_MS);
	next_iv = run.t0_us / 1000 + tick;
	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = run.evfd, .events = POLLIN },
		};
		int64_t wake = next_iv;
		uint64_t ev;

		if (o->req.duration_ms && end_ms < wake)
			wake = end_ms;
		if (hard_end < wake)
			wake = hard_end;
		if (!run.omit_done && run.omit_end_us / 1000 < wake)
			wake = run.omit_end_us / 1000;
		now = net_now_ms();
		if (wake > now && poll(pf, 2, (int)(wake - now)) < 0 &&
		    errno != EINTR) {
			r = lr_err_setc(err, -errno, "poll");
			goto out_run;
		}
		if (pf[0].revents) {
			r = conn_recv_msg(&ctrl, buf, BUF_LEN, &h,
					  net_now_ms() + CTRL_TIMEOUT_MS, err);
			if (!r && h.type == PROTO_ERROR)
				r = peer_error(buf, h.len, err);
			else if (r == LR_ECLOSED)
				r = lr_err_set(err, r,
					       "server closed the "
					       "connection during the test");
			else if (!r)
				r = lr_err_set(err, LR_EBADMSG,
					       "unexpected %s "
					       "from server during the test",
					       proto_type_name(h.type));
			goto out_run;
		}
		if (pf[1].revents && read(run.evfd, &ev, sizeof(ev)) < 0) {
			/* nothing to drain */
		}
		now = net_now_ms();
		if (!run.omit_done && now >= run.omit_end_us / 1000) {
			/* the omitted phase ends: report its last part, then
			 * the interval clock restarts at zero */
			bench_run_sample(&run, &iv, iv_start);
			if (o->interval_ms && cb->interval &&
			    iv.end - iv.start >= 0.001)
				cb->interval(cb->ctx, &iv);
			iv_start = 0;
			next_iv = run.omit_end_us / 1000 + tick;
		} else if (now >= next_iv) {
			bench_run_sample(&run, &iv, iv_start);
			if (o->interval_ms && cb->interval)
				cb->interval(cb->ctx, &iv);
			iv_start = iv.end;
			next_iv += tick;
		}
		for (i = 0; i < run.nstreams; i++) {
			if (atomic_load(&run.streams[i].done) &&
			    run.streams[i].error) {
				r = lr_err_setc(err, run.streams[i].error,
						"stream %u", i + 1);
				goto out_run;
			}
		}
		if (o->req.duration_ms && now >= end_ms)
			break;
		if (now >= hard_end) {
			res->truncated = true;
			break;
		}
		if (o->req.bytes && bench_run_all_done(&run))
			break;
	}
	/* stop: the server stops its senders, we stop ours, everyone drains */
	proto_buf_init(&b, buf, 64);
	proto_encode_empty(&b, PROTO_TEST_STOP);
	r = conn_send_msg(&ctrl, buf, b.len, net_now_ms() + CTRL_TIMEOUT_MS);
	if (r) {
		lr_err_setc(err, r, "sending TEST_STOP");
		goto out_run;
	}
	bench_run_stop(&run, STOP_GRACE_MS);
	if (o->interval_ms && cb->interval) {
		double span;

		bench_run_sample(&run, &iv, iv_start);
		span = iv.end - iv.start;
		if (span * 1000.0 >= (double)o->interval_ms * 0.05)
			cb->interval(cb->ctx, &iv);
	}
	for (i = 0; i < run.nstreams; i++) {
		if (run.streams[i].error) {
			r = lr_err_setc(err, run.streams[i].error, "stream %u",
					i + 1);
			goto out_run;
		}
	}
	getrusage(RUSAGE_SELF, &ru1);
	bench_run_results(&run, &lres, larr);
	lres.cpu.user_us = tv_us(&ru1.ru_utime) - tv_us(&ru0.ru_utime);
	lres.cpu.sys_us = tv_us(&ru1.ru_stime) - tv_us(&ru0.ru_stime);
	lres.cpu.wall_us = (uint64_t)(net_now_us() - t_wall0);
	proto_buf_init(&b, buf, PROTO_MAX_BODY);
	if (proto_encode_results(&b, &lres)) {
		r = lr_err_set(err, -ENOBUFS, "encoding results");
		goto out_run;
	}
	r = conn_send_msg(&ctrl, buf, b.len, net_now_ms() + CTRL_TIMEOUT_MS);
	if (r) {
		lr_err_setc(err, r, "sending results");
		goto out_run;
	}
	r = expect_msg(&ctrl, PROTO_TEST_RESULTS, buf, BUF_LEN, &h,
		       RESULTS_TIMEOUT_MS, "the server's results", err);
	if (r)
		goto out_run;
	pres.streams = rarr;
	pres.cap = (uint16_t)run.nstreams;
	r = proto_decode_results(buf, h.len, &pres);
	if (r) {
		lr_err_set(err, r, "malformed results from server");
		goto out_run;
	}

	res->local_cpu = lres.cpu;
	res->remote_cpu = pres.cpu;
	snprintf(res->remote_cc, sizeof(res->remote_cc), "%s", pres.cc);
	res->overlap = pres.overlap > acc.overlap ? pres.overlap : acc.overlap;
	res->duration = (double)(net_now_us() - (run.omit_done ? run.omit_end_us
							       : run.t0_us)) /
			1e6;
	if (o->req.duration_ms)
		res->duration = (double)o->req.duration_ms / 1000.0;
	for (i = 0; i < run.nstreams; i++) {
		struct bench_stream_result *sr = &res->streams[i];
		const struct proto_stream_result *remote = NULL;
		unsigned j;

		sr->idx = i;
		sr->dir = run.streams[i].dir;
		sr->local = run.streams[i].local;
		sr->peer = run.streams[i].peer;
		for (j = 0; j < pres.nstreams; j++)
			if (rarr[j].stream == i && rarr[j].dir == sr->dir)
				remote = &rarr[j];
		if (run.streams[i].sender) {
			side_fill(&sr->sender, &larr[i]);
			if (remote)
				side_fill(&sr->receiver, remote);
		} else {
			side_fill(&sr->receiver, &larr[i]);
			if (remote)
				side_fill(&sr->sender, remote);
		}
	}
	if (cb->finished)
		cb->finished(cb->ctx, res);
	r = 0;

out_run:
	bench_run_fini(&run);
out_close:
	conn_fini(&ctrl);
	close(fd);
out_free:
	free(iv.s);
	free(rarr);
	free(larr);
	free(buf);
	if (r) {
		free(res->streams);
		res->streams = NULL;
	}
	return r;
}

void bench_result_free(struct bench_result *res)
{
	if (!res)
		return;
	free(res->streams);
	res->streams = NULL;
}
