// SPDX-License-Identifier: MIT
/* A bench run's stream threads: TCP (plain, sealed, zero-copy) and UDP senders and receivers. */
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
	struct bench_lowat tail;

	udp_pacer_init(&pacer, run->req.rate_bps, net_now_us());
	bench__lowat_init(&tail, run, net_now_us());
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
				/* past the deadline the peer may close
				 * first (iperf3's server at TEST_END):
				 * the write in progress is moot */
				if ((errno == EPIPE || errno == ECONNRESET) &&
				    atomic_load(&run->stop))
					return 0;
				return -errno;
			}
			off += (size_t)k;
			now = net_now_us();
			atomic_fetch_add_explicit(&s->bytes, (uint64_t)k,
						  memory_order_relaxed);
			atomic_store_explicit(&s->last_us, now,
					      memory_order_relaxed);
			bench__lowat_step(&tail, s, (size_t)k, now);
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

/* Sender with records: seal each block in place and send it; after the
 * last one an END record, then the end of file (shutdown), which tell the
 * receiver nothing was cut off. */
static int send_sealed(struct bench_stream *s, uint8_t *buf)
{
	struct bench_run *run = s->run;
	_Atomic uint64_t *budget = run->req.bytes ? &run->budget[s->dir] : NULL;
	size_t n;
	int64_t now;
	int r;
	struct udp_pacer pacer;
	struct bench_lowat tail;

	udp_pacer_init(&pacer, run->req.rate_bps, net_now_us());
	bench__lowat_init(&tail, run, net_now_us());
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
		bench__lowat_step(&tail, s, n, now);
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

/* After a sealed stream's END record: its end of file, with nothing
 * before it. A peer that neither closes nor sends (or a run given up
 * meanwhile) leaves the stream unfinished. */
static int recv_eof_after_end(struct bench_stream *s)
{
	int r = conn_recv_eof(&s->conn, BENCH_EOF_MS);

	if (r == LR_EFRAME) {
		s->why = "data after the stream's END";
	} else if (r == LR_ETIMEOUT || r == -ECANCELED) {
		s->why = "no end of file after the stream's END";
		r = LR_ETIMEOUT;
	}
	return r;
}

/* Receiver with records: open each in place and count its bytes once it
 * opened. The stream is whole only with its END record and then its end
 * of file; given up (abort) before END, it was cut short. */
static int recv_sealed(struct bench_stream *s, uint8_t *buf, size_t cap)
{
	uint8_t type;
	size_t n;
	int r;

	for (;;) {
		r = conn_recv_data(&s->conn, buf, cap, &type, &n);
		if (r == -ECANCELED)
			return LR_ETRUNC;
		if (r)
			return r;
		if (type == CONN_REC_END)
			break;
		atomic_fetch_add_explicit(&s->bytes, n, memory_order_relaxed);
		atomic_store_explicit(&s->last_us, net_now_us(),
				      memory_order_relaxed);
	}
	return recv_eof_after_end(s);
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

size_t bench__udp_hdr_len(const struct bench_run *run)
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
	size_t slot = run->req.blksize, hl = bench__udp_hdr_len(run);
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

void *bench__stream_main(void *arg)
{
	struct bench_stream *s = arg;
	struct bench_run *run = s->run;
	size_t cap = s->cap;
	uint8_t *buf = s->buf;
	struct rusage ru;
	uint64_t one = 1;

	if (conn_data_sealed(&s->conn))
		cap += CRYPTO_TAG_LEN;
	bench__gate_wait(run);
	if (atomic_load(&run->abort))
		goto out;
	if (run->req.udp)
		s->error = s->sender ? send_udp(s, buf) : recv_udp(s, buf, cap);
	else if (conn_data_sealed(&s->conn))
		s->error = s->sender ? send_sealed(s, buf)
				     : recv_sealed(s, buf, cap);
	else
		s->error = s->sender ? send_loop(s, buf)
				     : recv_loop(s, buf, cap);
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
