// SPDX-License-Identifier: MIT
/* A bench run: its streams set up, started, stopped and freed. */
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

/* Every stream's buffer, a sender's full of random bytes (the ones not
 * made yet). Filling fresh pages takes milliseconds: a client makes them
 * before its streams connect, so that they are ready when TEST_START
 * comes and both sides' clocks start together (docs/PROTOCOL.md); a
 * server once every stream has attached, before it says go, so that a
 * request alone makes it allocate nothing. Freed by bench_run_fini. */
static int make_buffers(struct bench_run *run, struct lr_err *err)
{
	unsigned i;

	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream *s = &run->streams[i];

		if (s->buf)
			continue;
		s->cap = s->sender ? run->req.blksize
				   : bench_recv_buf(&run->req);
		s->buf = malloc(s->cap + CRYPTO_TAG_LEN);
		if (!s->buf)
			return lr_err_setc(err, -ENOMEM, "stream buffers");
		if (s->sender && crypto_random(s->buf, s->cap))
			return lr_err_setc(err, -EIO, "random payload");
	}
	return 0;
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
	/* linerate's own UDP tests always use 64-bit sequence numbers
	 * (docs/PROTOCOL.md); iperf3 callers set it from the parameters */
	run->udp_counters64 = true;
	if (req->udp &&
	    (req->blksize < UDP_HDR_LEN32 || req->blksize > UDP_MAX_LEN))
		return lr_err_set(err, -EINVAL,
				  "UDP datagrams of %u bytes: the size must "
				  "be %u to %u",
				  req->blksize, UDP_HDR_LEN32, UDP_MAX_LEN);
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
		udp_rx_init(&s->udp);
		pthread_mutex_init(&s->udp_lock, NULL);
		s->udp_lock_init = true;
	}
	pthread_mutex_init(&run->gate_lock, NULL);
	pthread_cond_init(&run->gate_cv, NULL);
	run->gate_init = true;
	run->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (run->evfd < 0)
		return lr_err_setc(err, -errno, "eventfd");
	atomic_store(&run->budget[0], req->bytes);
	atomic_store(&run->budget[1], req->bytes);
	if (is_client && make_buffers(run, err)) {
		bench_run_fini(run);
		return -ENOMEM;
	}
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
void bench__gate_wait(struct bench_run *run)
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
		if (s->udp_lock_init)
			pthread_mutex_destroy(&s->udp_lock);
		s->udp_lock_init = false;
		free(s->buf);
		s->buf = NULL;
	}
	free(run->streams);
	run->streams = NULL;
	run->nstreams = 0;
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

/* UDP sockets: no TCP options; a generous receive buffer so that bursts
 * are not dropped by the receiving socket. */
static void udp_sockopts(const struct bench_run *run, struct bench_stream *s)
{
	struct timeval tv = { 0, STREAM_POLL_MS * 1000 };
	struct timeval utv = { 0, UDP_POLL_MS * 1000 };
	int b = run->req.window ? (int)run->req.window : (int)BENCH_UDP_RCVBUF;

	setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &utv, sizeof(utv));
	if (!s->sender)
		setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof(b));
	else if (run->req.window)
		setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof(b));
}

static int tcp_sockopts(const struct bench_run *run, struct bench_stream *s,
			struct lr_err *err)
{
	struct timeval tv = { 0, STREAM_POLL_MS * 1000 };
	int one = 1;

	setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* a record's tail must not wait for an ACK (Nagle): the
	 * receiver needs the whole record before it can use any */
	if (conn_data_sealed(&s->conn))
		setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!s->sender) {
		/* wake the receiver for big batches, not for every
		 * segment: measured 1.5x the throughput at 0.6x the
		 * CPU per GB between namespaces (docs/BENCHMARKS.md) */
		int lw = BENCH_RCVLOWAT;

		if (run->req.window && run->req.window / 4 < BENCH_RCVLOWAT)
			lw = (int)(run->req.window / 4);
		setsockopt(s->fd, SOL_SOCKET, SO_RCVLOWAT, &lw, sizeof(lw));
	}
	if (run->req.zerocopy == PROTO_ZC_MSG && s->sender &&
	    setsockopt(s->fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)))
		return lr_err_setc(err, -errno, "SO_ZEROCOPY");
	return 0;
}

int bench_run_ready(struct bench_run *run, struct lr_err *err)
{
	unsigned i;
	int r;

	r = make_buffers(run, err);
	if (r)
		return r;
	if (run->req.udp && run->req.blksize < bench__udp_hdr_len(run))
		return lr_err_set(err, -EINVAL,
				  "UDP datagrams of %u bytes are shorter than "
				  "the %zu-byte header",
				  run->req.blksize, bench__udp_hdr_len(run));
	if (run->req.zerocopy == PROTO_ZC_SENDFILE && !run->req.udp) {
		r = setup_memfd(run, err);
		if (r)
			return r;
	}
	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream *s = &run->streams[i];

		if (run->req.udp) {
			udp_sockopts(run, s);
		} else {
			r = tcp_sockopts(run, s, err);
			if (r)
				return r;
		}
		s->local.len = sizeof(s->local.ss);
		getsockname(s->fd, (struct sockaddr *)&s->local.ss,
			    &s->local.len);
		s->peer.len = sizeof(s->peer.ss);
		getpeername(s->fd, (struct sockaddr *)&s->peer.ss,
			    &s->peer.len);
	}
	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream *s = &run->streams[i];

		r = pthread_create(&s->thread, NULL, bench__stream_main, s);
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
	return 0;
}

void bench_run_go(struct bench_run *run)
{
	unsigned i;

	run->t0_us = net_now_us();
	run->omit_end_us = run->t0_us + (int64_t)run->req.omit_ms * 1000;
	if (run->req.duration_ms)
		run->send_end_us =
			run->omit_end_us + (int64_t)run->req.duration_ms * 1000;
	run->deadline_us = run->send_end_us;
	if (!run->deadline_us && run->expect_ms)
		run->deadline_us =
			run->omit_end_us + (int64_t)run->expect_ms * 1000;
	for (i = 0; i < run->nstreams; i++) {
		struct bench_stream *s = &run->streams[i];
		struct net_tcp_stats st;

		atomic_store(&s->last_us, run->t0_us);
		/* no omitted period: totals start from zero */
		if (!run->req.omit_ms && s->sender && !run->req.udp &&
		    !net_tcp_stats(s->fd, &st)) {
			s->tcp.retrans_base = st.total_retrans;
			s->tcp.retrans_last = st.total_retrans;
			s->iv_retrans = st.total_retrans;
		}
	}
	if (!run->req.omit_ms)
		run->omit_done = true;
	gate_open(run);
}

bool bench_run_all_done(const struct bench_run *run)
{
	unsigned i;

	for (i = 0; i < run->nstreams; i++)
		if (!atomic_load(&run->streams[i].done))
			return false;
	return true;
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

void bench_run_halt(struct bench_run *run)
{
	if (!run->stop_us)
		run->stop_us = net_now_us();
	atomic_store(&run->stop, true);
}

void bench_run_stop(struct bench_run *run, int grace_ms)
{
	int64_t deadline = net_now_ms() + grace_ms;
	unsigned i;

	bench_run_halt(run);
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

int bench_run_error(const struct bench_run *run, bool ended_only,
		    struct lr_err *err)
{
	unsigned i;

	for (i = 0; i < run->nstreams; i++) {
		const struct bench_stream *s = &run->streams[i];

		if ((ended_only && !atomic_load(&s->done)) || !s->error)
			continue;
		if (s->why)
			return lr_err_set(err, s->error, "stream %u: %s", i + 1,
					  s->why);
		return lr_err_setc(err, s->error, "stream %u", i + 1);
	}
	return 0;
}
