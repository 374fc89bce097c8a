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
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "bench.h"
#include "conn.h"
#include "crypto.h"
#include "link.h"
#include "udp.h"
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
/* UDP receivers wake this often to notice the stop and the silence */
#define UDP_POLL_MS 50
/* datagrams per recvmmsg */
#define UDP_BATCH 32
/* longest single sleep of a paced sender, so stop is seen in time */
#define PACE_STEP_US 20000
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
		if (s->udp_lock_init)
			pthread_mutex_destroy(&s->udp_lock);
		s->udp_lock_init = false;
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

static bool must_stop(const struct bench_run *run)
{
	return atomic_load_explicit(&run->stop, memory_order_relaxed) ||
	       atomic_load_explicit(&run->abort, memory_order_relaxed);
}

static void sleep_us(int64_t us)
{
	struct timespec ts = { .tv_sec = us / 1000000,
			       .tv_nsec = (us % 1000000) * 1000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
	}
}

/* Wait until the pacer (if any) lets len more bytes go, in short sleeps;
 * false when the stream must stop instead (stop, abort, end of time). */
static bool pace(struct bench_run *run, struct udp_pacer *p, size_t len)
{
	for (;;) {
		int64_t now = net_now_us(), w;

		if (must_stop(run))
			return false;
		if (run->send_end_us && now >= run->send_end_us)
			return false;
		if (!p->rate_bps)
			return true;
		w = udp_pacer_wait_us(p, now, len);
		if (w <= 0)
			return true;
		if (w > PACE_STEP_US)
			w = PACE_STEP_US;
		if (run->send_end_us && now + w > run->send_end_us)
			w = run->send_end_us - now;
		sleep_us(w);
	}
}

static int64_t wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
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
	struct udp_pacer pacer;

	udp_pacer_init(&pacer, run->req.rate_bps, net_now_us());
	while (!must_stop(run)) {
		n = run->req.blksize;
		if (!pace(run, &pacer, n))
			break;
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
		udp_pacer_sent(&pacer, now, n);
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
	struct udp_pacer pacer;

	udp_pacer_init(&pacer, run->req.rate_bps, net_now_us());
	while (!must_stop(run)) {
		n = run->req.blksize;
		if (!pace(run, &pacer, n))
			break;
		if (budget && !(n = budget_take(budget, n)))
			break;
		r = conn_send_data(&s->conn, CONN_REC_DATA, buf, n);
		if (r == -ECANCELED)
			return 0;
		if (r)
			return r;
		now = net_now_us();
		udp_pacer_sent(&pacer, now, n);
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
	return r ? r : LR_EFRAME;
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

static size_t udp_hdr_len(const struct bench_run *run)
{
	return run->udp_counters64 ? UDP_HDR_LEN64 : UDP_HDR_LEN32;
}

/* UDP sender: datagrams of blksize bytes with iperf3's header (wall clock,
 * seq from 1), paced; no end marker, the receiver ends on silence. */
static int send_udp(struct bench_stream *s, uint8_t *buf)
{
	struct bench_run *run = s->run;
	_Atomic uint64_t *budget = run->req.bytes ? &run->budget[s->dir] : NULL;
	size_t n = run->req.blksize;
	struct udp_pacer pacer;
	uint64_t seq = 1;
	int64_t now;
	size_t taken = 0;
	ssize_t k;

	udp_pacer_init(&pacer, run->req.rate_bps, net_now_us());
	while (!must_stop(run)) {
		if (!pace(run, &pacer, n))
			break;
		/* like iperf3, -n counts whole datagrams */
		if (budget && !(taken = budget_take(budget, n)))
			break;
		if (udp_hdr_encode(buf, n, wall_us(), seq,
				   run->udp_counters64) < 0)
			return -EINVAL;
		k = send(s->fd, buf, n, 0);
		now = net_now_us();
		if (k < 0 && (errno == EINTR || errno == EAGAIN)) {
			/* not sent: what it took goes back to the budget */
			if (budget)
				atomic_fetch_add(budget, taken);
			continue;
		}
		if (k < 0) {
			if (errno != ECONNREFUSED && errno != ENOBUFS)
				return -errno;
			/* iperf3 ignores these; the pacer still advances,
			 * so a refusing peer is not hammered */
			atomic_fetch_add_explicit(&s->udp_send_err, 1,
						  memory_order_relaxed);
			udp_pacer_sent(&pacer, now, n);
			continue;
		}
		seq++;
		udp_pacer_sent(&pacer, now, (size_t)k);
		atomic_fetch_add_explicit(&s->bytes, (uint64_t)k,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&s->udp_sent, 1,
					  memory_order_relaxed);
		atomic_store_explicit(&s->last_us, now, memory_order_relaxed);
	}
	return 0;
}

/* UDP receiver: batches of datagrams into the stream's udp_rx. It ends on
 * abort, or BENCH_UDP_SILENCE_MS without a datagram after the stop. */
static int recv_udp(struct bench_stream *s, uint8_t *buf, size_t cap)
{
	struct bench_run *run = s->run;
	size_t slot = run->req.blksize, hl = udp_hdr_len(run);
	unsigned i, nslots = (unsigned)(cap / slot);
	struct mmsghdr msgs[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	int64_t stop_seen = 0, last = net_now_us(), now, sent_us, arrival;
	uint64_t seq, good_bytes;
	int k;

	if (nslots > UDP_BATCH)
		nslots = UDP_BATCH;
	if (!nslots)
		return -EINVAL;
	for (;;) {
		if (atomic_load(&run->abort))
			return 0;
		if (atomic_load_explicit(&run->stop, memory_order_relaxed)) {
			now = net_now_us();
			if (!stop_seen)
				stop_seen = now;
			if (now - (last > stop_seen ? last : stop_seen) >=
			    BENCH_UDP_SILENCE_MS * 1000)
				return 0;
		}
		memset(msgs, 0, sizeof(msgs[0]) * nslots);
		for (i = 0; i < nslots; i++) {
			iov[i].iov_base = buf + (size_t)i * slot;
			iov[i].iov_len = slot;
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		k = recvmmsg(s->fd, msgs, nslots, MSG_WAITFORONE, NULL);
		if (k < 0) {
			if (errno == EINTR || errno == EAGAIN ||
			    errno == ECONNREFUSED)
				continue;
			return -errno;
		}
		arrival = wall_us();
		good_bytes = 0;
		pthread_mutex_lock(&s->udp_lock);
		for (i = 0; i < (unsigned)k; i++) {
			size_t len = msgs[i].msg_len;

			/* a repeated hello (server) or a late answer to
			 * one (client) is no data */
			if (len < hl ||
			    (len == PROTO_UDP_HELLO_LEN &&
			     (!memcmp(iov[i].iov_base, "LRUA", 4) ||
			      !memcmp(iov[i].iov_base, "LRUH", 4))) ||
			    udp_hdr_decode(iov[i].iov_base, len,
					   run->udp_counters64, &sent_us,
					   &seq)) {
				atomic_fetch_add_explicit(&s->udp_bad, 1,
							  memory_order_relaxed);
				continue;
			}
			udp_rx_packet(&s->udp, seq, sent_us, arrival, len);
			good_bytes += len;
		}
		pthread_mutex_unlock(&s->udp_lock);
		if (good_bytes) {
			last = net_now_us();
			atomic_fetch_add_explicit(&s->bytes, good_bytes,
						  memory_order_relaxed);
			atomic_store_explicit(&s->last_us, last,
					      memory_order_relaxed);
		}
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
	if (run->req.udp)
		s->error = s->sender ? send_udp(s, buf) : recv_udp(s, buf, cap);
	else if (conn_data_sealed(&s->conn))
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

int bench_run_start(struct bench_run *run, struct lr_err *err)
{
	unsigned i;
	int r;

	if (run->req.udp && run->req.blksize < udp_hdr_len(run))
		return lr_err_set(err, -EINVAL,
				  "UDP datagrams of %u bytes are shorter than "
				  "the %zu-byte header",
				  run->req.blksize, udp_hdr_len(run));
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

/* Raw UDP counters of s now (from the start, omitted period included). */
static void udp_mark(const struct bench_stream *s, struct bench_udp_mark *m,
		     double *jitter_s)
{
	pthread_mutex_t *lk = (pthread_mutex_t *)&s->udp_lock;

	pthread_mutex_lock(lk);
	m->packets = s->udp.packets;
	m->bytes = s->udp.bytes;
	m->lost = s->udp.lost;
	m->ooo = s->udp.ooo;
	m->dup = s->udp.dup;
	*jitter_s = s->udp.jitter_s;
	pthread_mutex_unlock(lk);
	m->sent = atomic_load(&s->udp_sent);
}

/* a - b for counters that may go back (late arrivals un-lose packets) */
static uint64_t delta0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* Datagrams a receiver accounts for: received (duplicates aside) and lost,
 * which is iperf3's receiver "packets" (its highest sequence number). */
static uint64_t accounted(uint64_t packets, uint64_t dup, uint64_t lost)
{
	return delta0(packets, dup) + lost;
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
		bool udp = run->req.udp;
		bool tcp = !udp && s->sender && !net_tcp_stats(s->fd, &st);
		struct bench_udp_mark um = { 0 };
		double jit = 0;

		if (udp)
			udp_mark(s, &um, &jit);

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
			if (udp && s->sender) {
				o->packets = delta0(um.sent, s->udp_iv.sent);
			} else if (udp) {
				const struct bench_udp_mark *m0 = &s->udp_iv;

				o->packets = delta0(
					accounted(um.packets, um.dup, um.lost),
					accounted(m0->packets, m0->dup,
						  m0->lost));
				o->lost = delta0(um.lost, s->udp_iv.lost);
				o->ooo = delta0(um.ooo, s->udp_iv.ooo);
				o->dup = delta0(um.dup, s->udp_iv.dup);
				o->jitter_ms = jit * 1000.0;
			}
		}
		if (iv) {
			s->iv_bytes = b;
			s->udp_iv = um;
		}
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
		if (cross_omit) {
			s->bytes_omit = b;
			s->udp_omit = um;
		}
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
	if (run->req.udp) {
		struct udp_rx rx;
		uint64_t sent;

		bench_stream_udp(s, &rx, &sent);
		o->udp = true;
		o->packets = s->sender ? sent : rx.packets;
		if (!s->sender) {
			o->lost = rx.lost;
			o->ooo = rx.ooo;
			o->dup = rx.dup;
			o->jitter_ns = (uint64_t)(rx.jitter_s * 1e9);
		}
	} else if (s->sender) {
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
	/* the wire carries datagrams received; a side shows them the way
	 * iperf3 does (a sender's lost and dup are 0) */
	d->packets = accounted(r->packets, r->dup, r->lost);
	d->lost = r->lost;
	d->ooo = r->ooo;
	d->dup = r->dup;
	d->jitter_ms = (double)r->jitter_ns / 1e6;
}

void bench_stream_udp(const struct bench_stream *s, struct udp_rx *rx_out,
		      uint64_t *pkts_sent_out)
{
	pthread_mutex_t *lk = (pthread_mutex_t *)&s->udp_lock;
	const struct bench_udp_mark *om = &s->udp_omit;

	if (rx_out) {
		pthread_mutex_lock(lk);
		*rx_out = s->udp;
		pthread_mutex_unlock(lk);
		rx_out->packets = delta0(rx_out->packets, om->packets);
		rx_out->bytes = delta0(rx_out->bytes, om->bytes);
		rx_out->lost = delta0(rx_out->lost, om->lost);
		rx_out->ooo = delta0(rx_out->ooo, om->ooo);
		rx_out->dup = delta0(rx_out->dup, om->dup);
	}
	if (pkts_sent_out)
		*pkts_sent_out = delta0(atomic_load(&s->udp_sent), om->sent);
}

void bench_stream_side(const struct bench_run *run,
		       const struct bench_stream *s, struct bench_side *out)
{
	struct proto_stream_result r;

	side_from_stream(run, s, &r);
	memset(out, 0, sizeof(*out));
	side_fill(out, &r);
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

void bench_fill_link(const struct bench_opts *o, struct bench_run *run,
		     struct bench_result *res)
{
	struct bench_stream *s = &run->streams[0];
	struct net_tcp_stats st;
	struct link_info li;
	int v;
	socklen_t sl = sizeof(v);

	if (!getsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &v, &sl))
		res->sndbuf = (uint32_t)v;
	sl = sizeof(v);
	if (!getsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &v, &sl))
		res->rcvbuf = (uint32_t)v;
	res->ipv6 = s->local.ss.ss_family == AF_INET6 &&
		    !IN6_IS_ADDR_V4MAPPED(
			    &((struct sockaddr_in6 *)&s->local.ss)->sin6_addr);
	if (!run->req.udp && !net_tcp_stats(s->fd, &st)) {
		res->timestamps = st.timestamps;
		res->mss = st.snd_mss;
	}
	if (!link_lookup((struct sockaddr *)&s->local.ss, "/sys", &li)) {
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
	if (!run->req.udp)
		net_get_cc(s->fd, res->local_cc, sizeof(res->local_cc));
}

void bench_client_tick(struct bench_run *run, const struct bench_opts *o,
		       const struct bench_callbacks *cb,
		       struct bench_client_clock *clk, int64_t now_ms)
{
	if (!run->omit_done && now_ms >= run->omit_end_us / 1000) {
		/* the omitted phase ends: report its last part, then the
		 * interval clock restarts at zero */
		bench_run_sample(run, clk->iv, clk->iv_start);
		if (o->interval_ms && cb->interval &&
		    clk->iv->end - clk->iv->start >= 0.001)
			cb->interval(cb->ctx, clk->iv);
		clk->iv_start = 0;
		clk->next_iv = run->omit_end_us / 1000 + clk->tick;
	} else if (now_ms >= clk->next_iv) {
		bench_run_sample(run, clk->iv, clk->iv_start);
		if (o->interval_ms && cb->interval)
			cb->interval(cb->ctx, clk->iv);
		clk->iv_start = clk->iv->end;
		clk->next_iv += clk->tick;
	}
}

int64_t bench_client_wake(const struct bench_run *run,
			  const struct bench_client_clock *clk, int64_t end_ms,
			  int64_t hard_end)
{
	int64_t wake = clk->next_iv;

	if (end_ms && end_ms < wake)
		wake = end_ms;
	if (hard_end < wake)
		wake = hard_end;
	if (!run->omit_done && run->omit_end_us / 1000 < wake)
		wake = run->omit_end_us / 1000;
	return wake;
}

int bench_client_turn(struct bench_run *run, const struct bench_opts *o,
		      const struct bench_callbacks *cb,
		      struct bench_client_clock *clk, bool woken,
		      int64_t end_ms, int64_t hard_end, int64_t *now_ms,
		      bool *truncated, struct lr_err *err)
{
	uint64_t ev;
	int r;

	if (woken && read(run->evfd, &ev, sizeof(ev)) < 0) {
		/* nothing to drain */
	}
	*now_ms = net_now_ms();
	bench_client_tick(run, o, cb, clk, *now_ms);
	r = bench_run_error(run, true, err);
	if (r)
		return r;
	if (o->req.duration_ms && *now_ms >= end_ms)
		return 1;
	if (*now_ms >= hard_end) {
		*truncated = true;
		return 1;
	}
	return 0;
}

int bench_run_error(const struct bench_run *run, bool ended_only,
		    struct lr_err *err)
{
	unsigned i;

	for (i = 0; i < run->nstreams; i++) {
		const struct bench_stream *s = &run->streams[i];

		if ((!ended_only || atomic_load(&s->done)) && s->error)
			return lr_err_setc(err, s->error, "stream %u", i + 1);
	}
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
			    const struct net_addr *bind, const char *where,
			    const uint8_t *test_id, int ctrl_fd,
			    struct bench_run *run, struct lr_err *err)
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
		r = net_udp_socket(bind, addr, err);
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

/* The last interval of a UDP test ends with its last datagram, not after
 * the receivers' wait for silence; with none in it, it is empty. */
static void udp_last_interval(const struct bench_run *run,
			      struct bench_interval *iv)
{
	int64_t base = run->omit_done ? run->omit_end_us : run->t0_us, last = 0;
	bool any = false;
	unsigned i;
	double end;

	for (i = 0; i < iv->n; i++) {
		int64_t l = atomic_load(&run->streams[i].last_us);

		if (l > last)
			last = l;
		any = any || iv->s[i].bytes;
	}
	end = (double)(last - base) / 1e6;
	if (!any)
		iv->end = iv->start;
	else if (end > iv->start && end < iv->end)
		iv->end = end;
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
	struct bench_client_clock clk = { .iv = &iv };
	int64_t t_wall0, end_ms, hard_end, now;
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
	run.udp_counters64 = true; /* linerate's UDP tests always are */
	if (o->req.udp)
		r = open_udp_streams(&addr, bindp, where, acc.test_id, fd, &run,
				     err);
	else
		r = open_streams(o, &addr, bindp, where, acc.test_id, &run,
				 err);
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
	r = bench_run_start(&run, err);
	if (r)
		goto out_run;
	bench_fill_link(o, &run, res);
	if (cb->started)
		cb->started(cb->ctx, &run, res);

	/* the test: intervals until the time or the bytes run out; TCP
	 * figures are sampled every tick even when intervals are not shown */
	clk.tick = o->interval_ms ? (int64_t)o->interval_ms : 1000;
	end_ms = run.omit_end_us / 1000 + (int64_t)o->req.duration_ms;
	hard_end = run.t0_us / 1000 + (int64_t)o->req.omit_ms +
		   (int64_t)(acc.max_duration_ms ? acc.max_duration_ms
						 : PROTO_MAX_DURATION_MS);
	clk.next_iv = run.t0_us / 1000 + clk.tick;
	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = run.evfd, .events = POLLIN },
		};
		int64_t wake = bench_client_wake(
			&run, &clk, o->req.duration_ms ? end_ms : 0, hard_end);

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
		r = bench_client_turn(&run, o, cb, &clk, pf[1].revents, end_ms,
				      hard_end, &now, &res->truncated, err);
		if (r < 0)
			goto out_run;
		if (r)
			break;
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

		bench_run_sample(&run, &iv, clk.iv_start);
		if (o->req.udp)
			udp_last_interval(&run, &iv);
		span = iv.end - iv.start;
		if (span * 1000.0 >= (double)o->interval_ms * 0.05)
			cb->interval(cb->ctx, &iv);
	}
	r = bench_run_error(&run, false, err);
	if (r)
		goto out_run;
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
			bench_stream_side(&run, &run.streams[i], &sr->sender);
			if (remote)
				side_fill(&sr->receiver, remote);
		} else {
			bench_stream_side(&run, &run.streams[i], &sr->receiver);
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
	free(res->server_output);
	res->server_output = NULL;
}
