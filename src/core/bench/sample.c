// SPDX-License-Identifier: MIT
/* A bench run's figures: interval samples, each stream's end figures, the results message. */
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
	/* on the millisecond the callers' timers wait for (bench_ms_ceil),
	 * so that a sample just before it does not cross without them */
	bool cross_omit = !run->omit_done &&
			  now / 1000 >= bench_ms_ceil(run->omit_end_us);
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
			o->end = iv->end;
			o->sender = s->sender;
			o->bytes = b - s->iv_bytes;
			o->has_tcp = tcp;
			if (tcp) {
				o->retrans = st.total_retrans - s->iv_retrans;
				o->cwnd = st.cwnd_bytes;
				o->snd_wnd = st.snd_wnd;
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
			if (st.snd_wnd > s->tcp.max_snd_wnd)
				s->tcp.max_snd_wnd = st.snd_wnd;
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

int64_t bench__stream_end_us(const struct bench_run *run,
			     const struct bench_stream *s)
{
	int64_t last = atomic_load(&s->last_us);

	/* a test that ran to its deadline: a sender's period ends there,
	 * also when its last write returned after it or, paced, before it;
	 * a receiver's at the deadline or at the last byte's arrival, the
	 * later (docs/PROTOCOL.md, "Durations") */
	/* stopped before the deadline (truncated, cancelled): the last
	 * byte; stop_us is 0 while nothing asked the run to stop */
	/* where the peer owns the clock (iperf3's client), the deadline it
	 * announced (deadline_us) */
	if (!run->deadline_us || s->error ||
	    (run->stop_us ? run->stop_us : net_now_us()) < run->deadline_us)
		return last;
	if (s->sender || last < run->deadline_us)
		return run->deadline_us;
	return last;
}

static void side_from_stream(const struct bench_run *run,
			     const struct bench_stream *s,
			     struct proto_stream_result *o)
{
	int64_t from = run->omit_done ? run->omit_end_us : run->t0_us;
	int64_t last = bench__stream_end_us(run, s);

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
		o->has_tcp_result = true;
		o->max_snd_wnd = s->tcp.max_snd_wnd;
		o->min_rtt = s->tcp.rtt_n ? s->tcp.min_rtt : 0;
		o->max_rtt = s->tcp.max_rtt;
		o->mean_rtt =
			s->tcp.rtt_n ? (uint32_t)(s->tcp.rtt_sum / s->tcp.rtt_n)
				     : 0;
	}
}

void bench__side_fill(struct bench_side *d, const struct proto_stream_result *r)
{
	d->bytes = r->bytes;
	d->seconds = (double)r->duration_us / 1e6;
	d->retrans = r->retrans;
	d->max_cwnd = r->max_cwnd;
	d->max_snd_wnd = r->max_snd_wnd;
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
	bench__side_fill(out, &r);
}

void bench_run_describe(const struct bench_run *run,
			struct bench_stream_result *out)
{
	unsigned i;

	for (i = 0; i < run->nstreams; i++) {
		const struct bench_stream *s = &run->streams[i];

		out[i].idx = s->idx;
		out[i].dir = s->dir;
		out[i].local_sender = s->sender;
		out[i].local = s->local;
		out[i].peer = s->peer;
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
