// SPDX-License-Identifier: MIT
/* A timed TCP sender's last moments: keep the socket's unsent queue short
 * as the deadline nears, so that what was written before it is on its way
 * when it comes (docs/PROTOCOL.md §3 "Durations"). The deadline is the
 * run's own (send_end_us) or, where the peer owns the clock, the one it
 * announced (deadline_us). */
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "bench_int.h"
#include "banned.h"

/* the plan is made this long before the deadline */
#define LOWAT_LOOK_US 500000
/* the unsent bytes a socket may hold once the tail begins */
#define LOWAT_BYTES (128u * 1024)

void bench__lowat_init(struct bench_lowat *t, const struct bench_run *run,
		       int64_t now_us)
{
	t->t0_us = now_us;
	t->sent = 0;
	t->at_us = 0;
	t->planned = false;
	/* a -n test has no deadline to be ready for */
	t->done = !run->deadline_us;
}

/* When to begin: twice the time the unsent queue takes to leave at the
 * rate measured so far, at least 1 ms, at most LOWAT_LOOK_US. Where the
 * sender is the bottleneck the queue is short and so is the tail: the
 * rate is untouched; where the path is, the queue is long and the tail
 * is too, and shortening it costs nothing, the path being full. */
static void lowat_plan(struct bench_lowat *t, int fd, int64_t end_us,
		       int64_t now_us)
{
	int64_t el = now_us - t->t0_us, lead = LOWAT_LOOK_US;
	int q = 0;

	if (el <= 0 || !t->sent)
		return;
	if (!ioctl(fd, SIOCOUTQNSD, &q) && q >= 0)
		lead = 2 * (int64_t)q * el / (int64_t)t->sent + 1000;
	if (lead > LOWAT_LOOK_US)
		lead = LOWAT_LOOK_US;
	t->at_us = end_us - lead;
	t->planned = true;
}

void bench__lowat_step(struct bench_lowat *t, const struct bench_stream *s,
		       size_t moved, int64_t now_us)
{
	int lw = (int)LOWAT_BYTES;

	if (t->done)
		return;
	t->sent += moved;
	if (now_us < s->run->deadline_us - LOWAT_LOOK_US)
		return;
	if (!t->planned)
		lowat_plan(t, s->fd, s->run->deadline_us, now_us);
	if (!t->planned || now_us < t->at_us)
		return;
	if (lw < (int)s->run->req.blksize)
		lw = (int)s->run->req.blksize;
	setsockopt(s->fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lw, sizeof(lw));
	t->done = true;
}
