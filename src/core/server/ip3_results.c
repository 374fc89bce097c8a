// SPDX-License-Identifier: MIT
/* An iperf3 test's figures: the interval samples kept for
 * --get-server-output, both sides' results, and their exchange. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "server_int.h"
#include "banned.h"

void ip3s__iv_log_free(struct iv_log *l)
{
	unsigned i;

	for (i = 0; i < l->n; i++)
		free(l->iv[i].s);
	free(l->iv);
	memset(l, 0, sizeof(*l));
}

/* One sample: into the log when there is one and room, else counters
 * only. */
void ip3s__sample(struct bench_run *run, struct iv_log *l)
{
	struct bench_interval *iv;
	bool was_omit = !run->omit_done;

	if (!l || l->n >= IP3S_MAX_INTERVALS) {
		bench_run_sample(run, NULL, 0);
		return;
	}
	if (l->n == l->cap) {
		unsigned nc = l->cap ? 2 * l->cap : 16;
		struct bench_interval *p;

		if (nc > IP3S_MAX_INTERVALS)
			nc = IP3S_MAX_INTERVALS;
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
	bench_run_describe(run, res->streams);
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
	/* as iperf3's server: the congestion control of its side, which
	 * the client shows as receiver_tcp_congestion (or sender_ with -R) */
	if (!run->req.udp && run->nstreams)
		net_get_cc(run->streams[0].fd, r->congestion_used,
			   sizeof(r->congestion_used));
}

static char *render_text(struct ip3_test *t, const struct bench_result *res,
			 const struct iv_log *l)
{
	struct ip3srv *srv = t->srv;

	if (!srv->cb.render)
		return NULL;
	return srv->cb.render(srv->cb.ctx, res, l->iv, l->n);
}

int ip3s__results_phase(struct ip3_test *t, const struct ip3_params *p,
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
	out = malloc(IP3S_RESULTS_CAP);
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
	r = ip3s__send_state(t, IP3_EXCHANGE_RESULTS);
	if (r) {
		snprintf(why, cap, "sending EXCHANGE_RESULTS: %s",
			 lr_strerror(r));
		goto out_free;
	}
	r = ip3s__read_json(t, IP3_MAX_RESULTS_JSON,
			    net_now_ms() + IP3S_CTRL_TIMEOUT_MS, &json, &len,
			    why, cap, "client's results");
	if (r) {
		if (r != LR_ECLOSED && r != LR_ETIMEOUT)
			ip3s__send_error(t, IP3_IERECVRESULTS, 0);
		goto out_free;
	}
	r = ip3_results_decode(json, len, theirs, &e);
	if (r) {
		snprintf(why, cap, "%s", e.msg);
		ip3s__send_error(t, IP3_IERECVRESULTS, 0);
		goto out_free;
	}
	if (p->get_server_output &&
	    !result_of(t, ours, theirs, start_wall, wall_s, &res))
		text = render_text(t, &res, l);
	n = ip3_results_encode_text(ours, text, out, IP3S_RESULTS_CAP);
	if (n < 0) {
		r = n;
		snprintf(why, cap, "encoding our results: %s", lr_strerror(n));
		ip3s__send_error(t, IP3_IEPACKAGERESULTS, 0);
		goto out_free;
	}
	r = ip3s__send_json(t, out, (size_t)n);
	if (!r)
		r = ip3s__send_state(t, IP3_DISPLAY_RESULTS);
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
