// SPDX-License-Identifier: MIT
/* What every kind of test does on its control connection, in both
 * servers: errors, empty messages, the wait for its data streams, and the
 * clock of the data phase. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "server_int.h"
#include "banned.h"

int server__send_error(struct conn *c, uint32_t code, const char *fmt, ...)
{
	struct proto_error pe = { .code = code };
	uint8_t buf[PROTO_HDR_LEN + PROTO_MAX_TEXT + 32];
	struct proto_buf b;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pe.text, sizeof(pe.text), fmt, ap);
	va_end(ap);
	proto_buf_init(&b, buf, sizeof(buf));
	if (proto_encode_error(&b, &pe))
		return -ENOBUFS;
	return conn_send_msg(c, buf, b.len, net_now_ms() + 2000);
}

int server__client_error(const uint8_t *body, uint32_t len, char *why,
			 size_t cap)
{
	struct proto_error pe;

	if (proto_decode_error(body, len, &pe)) {
		snprintf(why, cap,
			 "the client ended it with a malformed ERROR");
		return LR_EBADMSG;
	}
	snprintf(why, cap, "the client ended it: %s", pe.text);
	return LR_EPEER;
}

int server__send_simple(struct conn *c, uint8_t type)
{
	uint8_t buf[PROTO_HDR_LEN];
	struct proto_buf b;

	proto_buf_init(&b, buf, sizeof(buf));
	proto_encode_empty(&b, type);
	return conn_send_msg(c, buf, b.len,
			     net_now_ms() + SERVER_CTRL_TIMEOUT_MS);
}

/* Whether the client closed its control connection (it has nothing to
 * say while its streams attach). */
bool server__ctrl_gone(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLRDHUP };

	return poll(&pf, 1, 0) > 0 &&
	       (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Wait for the data streams, in slices that look at the control
 * connection: a client gone lets its slot go at once, not after
 * SERVER_ATTACH_TIMEOUT_MS. 0, LR_ECLOSED or LR_ETIMEOUT. */
int server__wait_streams(struct server_test *t)
{
	struct server *srv = t->srv;
	int64_t dl = net_now_ms() + SERVER_ATTACH_TIMEOUT_MS;
	struct timespec ts;
	bool gone = false;
	int r;

	pthread_mutex_lock(&srv->lock);
	while (t->attached < t->expected && !atomic_load(&srv->stopping) &&
	       net_now_ms() < dl && !gone) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 200 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&t->attach_cv, &srv->lock, &ts);
		if (t->attached < t->expected) {
			pthread_mutex_unlock(&srv->lock);
			gone = server__ctrl_gone(t->cc.fd);
			pthread_mutex_lock(&srv->lock);
		}
	}
	t->waiting = false;
	r = t->attached == t->expected ? 0 : gone ? LR_ECLOSED : LR_ETIMEOUT;
	pthread_mutex_unlock(&srv->lock);
	return r;
}

void server__phase_init(struct server_phase *ph, struct bench_run *run,
			uint64_t max_duration_ms, int grace_ms)
{
	ph->run = run;
	ph->max_duration_ms = max_duration_ms;
	ph->hard_end = run->t0_us / 1000 + (int64_t)max_duration_ms + grace_ms;
	ph->next_sample = bench_ms_ceil(run->t0_us) + SERVER_SAMPLE_MS;
}

int server__phase_wait(struct server_phase *ph, int ctrl)
{
	struct bench_run *run = ph->run;
	struct pollfd pf[2] = {
		{ .fd = ctrl, .events = POLLIN },
		{ .fd = run->evfd, .events = POLLIN },
	};
	int64_t now = net_now_ms(), wake_at;
	uint64_t v;

	wake_at = ph->next_sample < ph->hard_end ? ph->next_sample
						 : ph->hard_end;
	if (!run->omit_done && bench_ms_ceil(run->omit_end_us) < wake_at)
		wake_at = bench_ms_ceil(run->omit_end_us);
	if (wake_at > now && poll(pf, 2, (int)(wake_at - now)) < 0 &&
	    errno != EINTR)
		return -errno;
	if (pf[1].revents && read(run->evfd, &v, sizeof(v)) < 0) {
		/* drained already */
	}
	return pf[0].revents;
}

struct bench_stream *server__phase_failed(const struct server_phase *ph,
					  unsigned *idx)
{
	unsigned i;

	for (i = 0; i < ph->run->nstreams; i++) {
		struct bench_stream *s = &ph->run->streams[i];

		if (atomic_load(&s->done) && s->error) {
			*idx = i;
			return s;
		}
	}
	return NULL;
}

int server__phase_sample_due(struct server_phase *ph)
{
	const struct bench_run *run = ph->run;
	int64_t now = net_now_ms();

	if (now >= ph->next_sample) {
		ph->next_sample += SERVER_SAMPLE_MS;
		return 1;
	}
	return !run->omit_done && now >= bench_ms_ceil(run->omit_end_us) ? 2
									 : 0;
}

bool server__phase_over(const struct server_phase *ph, char *why, size_t cap)
{
	if (net_now_ms() < ph->hard_end)
		return false;
	snprintf(why, cap,
		 "test ran past the server's limit of %.1f s (--max-duration)",
		 (double)ph->max_duration_ms / 1000.0);
	return true;
}
