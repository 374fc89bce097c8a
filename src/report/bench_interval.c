// SPDX-License-Identifier: MIT
/* bench: the interval lines and objects. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/units.h"
#include "report_int.h"
#include "banned.h"

double report__pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* The figures of one line of the interval table. */
struct line_fig {
	double end; /* the line's end: the stream's, or its streams' last */
	uint64_t bytes;
	bool sender; /* the sending side's figures */
	bool has_tcp;
	uint32_t retr, cwnd, rtt_us;
	uint64_t packets, lost, ooo, dup; /* UDP */
	double jitter_ms;
};

static void human_udp_tail(struct report *rp, const struct line_fig *f,
			   bool omitted)
{
	uint64_t tot = f->packets;

	if (f->sender)
		report__print(rp, "  %llu  %s\n",
			      (unsigned long long)f->packets,
			      omitted ? "(omitted)" : "");
	else
		report__print(rp, "  %5.3f ms  %llu/%llu (%.2g%%)  %s\n",
			      f->jitter_ms, (unsigned long long)f->lost,
			      (unsigned long long)tot,
			      report__pct(f->lost, tot),
			      omitted ? "(omitted)" : "");
}

/* A UDP receiver's datagrams out of order (a line as iperf3 prints) and
 * duplicates (linerate's own count), when there were any. */
void report__human_ooo_line(struct report *rp, const char *id, const char *tag,
			    double start, double end, uint64_t ooo,
			    uint64_t dup)
{
	if (!ooo && !dup)
		return;
	report__print(rp,
		      "[%s]%s %6.2f-%-6.2f sec  %llu datagram%s received "
		      "out-of-order, %llu duplicate%s\n",
		      id, tag, start, end, (unsigned long long)ooo,
		      ooo == 1 ? "" : "s", (unsigned long long)dup,
		      dup == 1 ? "" : "s");
}

static void human_iv_line(struct report *rp, const char *id, const char *tag,
			  const struct bench_interval *iv,
			  const struct line_fig *f, bool per_stream)
{
	char tb[32], rb[32], cb[32];
	double secs = f->end - iv->start;

	report__print(rp, "[%s]%s %6.2f-%-6.2f sec  %s  %s", id, tag, iv->start,
		      f->end, units_fmt_bytes(tb, sizeof(tb), (double)f->bytes),
		      report__fmt_rate(rb, sizeof(rb),
				       report__rate(f->bytes, secs)));
	if (rp->udp) {
		human_udp_tail(rp, f, iv->omitted);
		/* as iperf3 does for datagrams out of order; duplicates
		 * are linerate's own count */
		if (!f->sender)
			report__human_ooo_line(rp, id, tag, iv->start, f->end,
					       f->ooo, f->dup);
		return;
	}
	if (f->sender && f->has_tcp) {
		report__print(rp, "  %4u", f->retr);
		if (per_stream)
			report__print(rp, "   %s  %6.2f ms",
				      units_fmt_bytes(cb, sizeof(cb), f->cwnd),
				      f->rtt_us / 1000.0);
	}
	report__print(rp, "%s\n", iv->omitted ? "  (omitted)" : "");
}

static void human_iv_header(struct report *rp)
{
	if (rp->udp)
		report__print(rp,
			      "[ ID]%s Interval           Transfer     Bitrate"
			      "         %s\n",
			      rp->bidir ? "[Role]" : "",
			      rp->any_sender && !rp->bidir
				      ? "Total Datagrams"
				      : "Jitter    Lost/Total Datagrams");
	else if (rp->bidir)
		report__print(rp, "[ ID][Role] Interval           "
				  "Transfer     Bitrate         Retr  Cwnd"
				  "          RTT\n");
	else if (rp->any_sender)
		report__print(rp, "[ ID] Interval           Transfer"
				  "     Bitrate         Retr  Cwnd          "
				  "RTT\n");
	else
		report__print(rp, "[ ID] Interval           Transfer"
				  "     Bitrate\n");
}

static void human_interval(struct report *rp, const struct bench_interval *iv)
{
	struct line_fig sum[2] = { { .sender = true, .end = iv->start },
				   { .sender = false, .end = iv->start } };
	unsigned jn[2] = { 0, 0 };
	bool has[2] = { false, false };
	char id[8];
	unsigned i;
	int k;

	rp->sep_done = false;
	if (!rp->header_done) {
		human_iv_header(rp);
		rp->header_done = true;
	}
	for (i = 0; i < iv->n; i++) {
		const struct bench_iv_stream *s = &iv->s[i];
		struct line_fig f = {
			.end = s->end,
			.bytes = s->bytes,
			.sender = s->sender,
			.has_tcp = s->has_tcp,
			.retr = s->retrans,
			.cwnd = s->cwnd,
			.rtt_us = s->rtt_us,
			.packets = s->packets,
			.lost = s->lost,
			.ooo = s->ooo,
			.dup = s->dup,
			.jitter_ms = s->jitter_ms,
		};

		snprintf(id, sizeof(id), "%3u", i + 1);
		human_iv_line(rp, id, report__role_tag(rp, i), iv, &f, true);
		k = s->sender ? 0 : 1;
		if (s->end > sum[k].end)
			sum[k].end = s->end;
		sum[k].bytes += s->bytes;
		sum[k].retr += s->retrans;
		sum[k].has_tcp = sum[k].has_tcp || s->has_tcp;
		sum[k].packets += s->packets;
		sum[k].lost += s->lost;
		sum[k].ooo += s->ooo;
		sum[k].dup += s->dup;
		sum[k].jitter_ms += s->jitter_ms;
		jn[k]++;
		has[k] = true;
	}
	if (rp->nstreams / (rp->bidir ? 2u : 1u) > 1) {
		for (k = 0; k < 2; k++) {
			if (!has[k])
				continue;
			/* iperf3 shows the streams' mean jitter */
			if (jn[k])
				sum[k].jitter_ms /= jn[k];
			human_iv_line(rp, "SUM", report__role(rp, k == 0), iv,
				      &sum[k], false);
		}
		report__print(rp, "%s", SEP);
		rp->sep_done = true;
	}
	fflush(rp->out);
}

/* The UDP keys of an interval or summary object, iperf3's way: the
 * sender has its datagram count, the receiver also jitter and loss. */
static void udp_json_keys(cJSON *o, bool sender, const struct line_fig *f)
{
	uint64_t tot = f->packets;

	if (sender) {
		cJSON_AddNumberToObject(o, "packets", (double)f->packets);
		return;
	}
	report__add_num(o, "jitter_ms", f->jitter_ms);
	cJSON_AddNumberToObject(o, "lost_packets", (double)f->lost);
	cJSON_AddNumberToObject(o, "packets", (double)tot);
	report__add_num(o, "lost_percent", report__pct(f->lost, tot));
	cJSON_AddNumberToObject(o, "out_of_order", (double)f->ooo);
	/* not iperf3's: datagrams that came twice */
	cJSON_AddNumberToObject(o, "duplicates", (double)f->dup);
}

static cJSON *interval_json(struct report *rp, const struct bench_interval *iv)
{
	cJSON *o = cJSON_CreateObject(), *arr, *s, *sum;
	struct line_fig tot[2] = { { .end = iv->start }, { .end = iv->start } };
	unsigned jn[2] = { 0, 0 };
	bool has[2] = { false, false };
	double secs;
	unsigned i;
	int k;

	arr = cJSON_AddArrayToObject(o, "streams");
	for (i = 0; i < iv->n; i++) {
		const struct bench_iv_stream *st = &iv->s[i];

		secs = st->end - iv->start;
		s = cJSON_CreateObject();
		cJSON_AddNumberToObject(s, "socket", i + 1);
		report__add_num(s, "start", iv->start);
		report__add_num(s, "end", st->end);
		report__add_num(s, "seconds", secs);
		cJSON_AddNumberToObject(s, "bytes", (double)st->bytes);
		report__add_num(s, "bits_per_second",
				report__rate(st->bytes, secs));
		if (rp->udp) {
			struct line_fig f = { .packets = st->packets,
					      .lost = st->lost,
					      .ooo = st->ooo,
					      .dup = st->dup,
					      .jitter_ms = st->jitter_ms };

			udp_json_keys(s, st->sender, &f);
		}
		if (st->sender && st->has_tcp) {
			cJSON_AddNumberToObject(s, "retransmits", st->retrans);
			cJSON_AddNumberToObject(s, "snd_cwnd", st->cwnd);
			cJSON_AddNumberToObject(s, "snd_wnd", st->snd_wnd);
			cJSON_AddNumberToObject(s, "rtt", st->rtt_us);
			cJSON_AddNumberToObject(s, "rttvar", st->rttvar_us);
			cJSON_AddNumberToObject(s, "pmtu", st->pmtu);
		}
		cJSON_AddBoolToObject(s, "omitted", iv->omitted);
		cJSON_AddBoolToObject(s, "sender", st->sender);
		cJSON_AddItemToArray(arr, s);
		k = (rp->bidir && st->dir == BENCH_DIR_S2C) ? 1 : 0;
		if (st->end > tot[k].end)
			tot[k].end = st->end;
		tot[k].bytes += st->bytes;
		tot[k].retr += st->retrans;
		tot[k].packets += st->packets;
		tot[k].lost += st->lost;
		tot[k].ooo += st->ooo;
		tot[k].dup += st->dup;
		tot[k].jitter_ms += st->jitter_ms;
		jn[k]++;
		has[k] = has[k] || st->sender;
	}
	for (k = 0; k < (rp->bidir ? 2 : 1); k++) {
		sum = cJSON_AddObjectToObject(o,
					      k ? "sum_bidir_reverse" : "sum");
		secs = tot[k].end - iv->start;
		report__add_num(sum, "start", iv->start);
		report__add_num(sum, "end", tot[k].end);
		report__add_num(sum, "seconds", secs);
		cJSON_AddNumberToObject(sum, "bytes", (double)tot[k].bytes);
		report__add_num(sum, "bits_per_second",
				report__rate(tot[k].bytes, secs));
		if (rp->udp) {
			tot[k].jitter_ms = jn[k] ? tot[k].jitter_ms / jn[k] : 0;
			udp_json_keys(sum, has[k], &tot[k]);
		} else if (has[k])
			cJSON_AddNumberToObject(sum, "retransmits",
						tot[k].retr);
		cJSON_AddBoolToObject(sum, "omitted", iv->omitted);
		cJSON_AddBoolToObject(sum, "sender", has[k]);
	}
	return o;
}

void report__cb_interval(void *ctx, const struct bench_interval *iv)
{
	struct report *rp = ctx;

	if (rp->fmt == REPORT_HUMAN)
		human_interval(rp, iv);
	else if (rp->fmt == REPORT_JSON)
		cJSON_AddItemToArray(rp->intervals, interval_json(rp, iv));
	else
		report__emit_stream_event(rp, "interval",
					  interval_json(rp, iv));
}
