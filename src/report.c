// SPDX-License-Identifier: MIT
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "config.h"
#include "core/cipher.h"
#include "report.h"
#include "core/units.h"
#include "banned.h"

#define SEP "- - - - - - - - - - - - - - - - - - - - - - - - -\n"

struct report {
	FILE *out;
	enum report_format fmt;
	cJSON *root; /* REPORT_JSON: the whole document */
	cJSON *intervals;
	cJSON *start; /* kept until the end for REPORT_JSON */
	bool header_done;
	bool sep_done; /* the last line printed is a separator */
	bool bidir;
	bool any_sender; /* this side sends on some stream */
	unsigned nstreams;
	uint8_t mode;
	uint8_t *dirs; /* per stream */
	bool *local_sender;
	bool udp;
	bool bol;	 /* at the beginning of a line (for the title) */
	char title[128]; /* iperf3's --title: a prefix on every line */
};

struct report *report_new(FILE *out, enum report_format fmt)
{
	struct report *rp = calloc(1, sizeof(*rp));

	if (!rp)
		return NULL;
	rp->out = out;
	rp->fmt = fmt;
	rp->bol = true;
	if (fmt == REPORT_JSON) {
		rp->root = cJSON_CreateObject();
		if (!rp->root) {
			free(rp);
			return NULL;
		}
	}
	return rp;
}

void report_free(struct report *rp)
{
	if (!rp)
		return;
	cJSON_Delete(rp->root);
	free(rp->dirs);
	free(rp->local_sender);
	free(rp);
}

void report_escaped(FILE *out, const char *s)
{
	size_t n = strlen(s), cap = 4 * n + 1;
	char sbuf[1024], *buf = cap <= sizeof(sbuf) ? sbuf : malloc(cap);

	/* names in the engine's messages are escaped already (fsio_escape):
	 * controls are escaped here, backslashes and UTF-8 kept, so that a
	 * name is not escaped twice */
	if (!buf)
		return;
	fputs(lr_escape(s, n, buf, cap, false), out);
	if (buf != sbuf)
		free(buf);
}

void report_set_title(struct report *rp, const char *title)
{
	snprintf(rp->title, sizeof(rp->title), "%s", title ? title : "");
}

/* Human bench output: like fprintf, with iperf3's "TITLE:  " in front of
 * every line when a title is set. */
__attribute__((format(printf, 2, 3))) static void rp_print(struct report *rp,
							   const char *fmt, ...)
{
	char sbuf[512], *buf = sbuf, *p;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(sbuf, sizeof(sbuf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(sbuf)) {
		buf = malloc((size_t)n + 1);
		if (!buf)
			return;
		va_start(ap, fmt);
		vsnprintf(buf, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	for (p = buf; *p; p++) {
		if (rp->bol && rp->title[0])
			fprintf(rp->out, "%s:  ", rp->title);
		fputc(*p, rp->out);
		rp->bol = *p == '\n';
	}
	if (buf != sbuf)
		free(buf);
}

/* Text from a peer: lines and tabs kept, other control bytes escaped. */
static void text_out(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
}

/* JSON numbers are never NaN or infinite. */
static double json_num(double v)
{
	return isfinite(v) ? v : 0.0;
}

static double rate(uint64_t bytes, double seconds)
{
	return seconds > 0 ? (double)bytes * 8.0 / seconds : 0.0;
}

static void add_num(cJSON *o, const char *k, double v)
{
	cJSON_AddNumberToObject(o, k, json_num(v));
}

static void emit_stream_event(struct report *rp, const char *event, cJSON *data)
{
	cJSON *o = cJSON_CreateObject();
	char *txt;

	cJSON_AddStringToObject(o, "event", event);
	cJSON_AddItemToObject(o, "data", data);
	txt = cJSON_PrintUnformatted(o);
	if (txt) {
		fprintf(rp->out, "%s\n", txt);
		fflush(rp->out);
	}
	free(txt);
	cJSON_Delete(o);
}

static const char *role_tag(const struct report *rp, unsigned i)
{
	if (!rp->bidir)
		return "";
	return rp->local_sender[i] ? "[TX-C]" : "[RX-C]";
}

/* ---------------- start ---------------- */

static void cb_connecting(void *ctx, const char *host, uint16_t port)
{
	struct report *rp = ctx;

	if (rp->fmt == REPORT_HUMAN) {
		rp_print(rp, "Connecting to host %s, port %u\n", host, port);
		fflush(rp->out);
	}
}

static cJSON *start_json(const struct bench_run *run,
			 const struct bench_result *res)
{
	cJSON *start = cJSON_CreateObject(), *conn, *o, *ts, *tst;
	char host[NET_ADDRSTR], tbuf[64];
	struct utsname un;
	struct tm tm;
	time_t now = (time_t)res->start_time;
	uint16_t port;
	unsigned i;

	conn = cJSON_AddArrayToObject(start, "connected");
	for (i = 0; i < run->nstreams; i++) {
		const struct bench_stream *s = &run->streams[i];

		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "socket", i + 1);
		net_addr_host((const struct sockaddr *)&s->local.ss, host,
			      sizeof(host), &port);
		cJSON_AddStringToObject(o, "local_host", host);
		cJSON_AddNumberToObject(o, "local_port", port);
		net_addr_host((const struct sockaddr *)&s->peer.ss, host,
			      sizeof(host), &port);
		cJSON_AddStringToObject(o, "remote_host", host);
		cJSON_AddNumberToObject(o, "remote_port", port);
		cJSON_AddItemToArray(conn, o);
	}
	cJSON_AddStringToObject(start, "version", "linerate " LINERATE_VERSION);
	if (!uname(&un)) {
		char sys[512];

		snprintf(sys, sizeof(sys), "%s %s %s %s %s", un.sysname,
			 un.nodename, un.release, un.version, un.machine);
		cJSON_AddStringToObject(start, "system_info", sys);
	}
	ts = cJSON_AddObjectToObject(start, "timestamp");
	gmtime_r(&now, &tm);
	strftime(tbuf, sizeof(tbuf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	cJSON_AddStringToObject(ts, "time", tbuf);
	cJSON_AddNumberToObject(ts, "timesecs", (double)res->start_time);
	o = cJSON_AddObjectToObject(start, "connecting_to");
	cJSON_AddStringToObject(o, "host", res->remote_host);
	cJSON_AddNumberToObject(o, "port", res->remote_port);
	if (!res->req.udp)
		cJSON_AddNumberToObject(start, "tcp_mss_default", res->mss);
	cJSON_AddNumberToObject(start, "target_bitrate",
				(double)res->req.rate_bps);
	cJSON_AddNumberToObject(start, "sock_bufsize", res->req.window);
	cJSON_AddNumberToObject(start, "sndbuf_actual", res->sndbuf);
	cJSON_AddNumberToObject(start, "rcvbuf_actual", res->rcvbuf);
	tst = cJSON_AddObjectToObject(start, "test_start");
	cJSON_AddStringToObject(tst, "protocol", res->req.udp ? "UDP" : "TCP");
	cJSON_AddNumberToObject(tst, "num_streams", res->req.streams);
	cJSON_AddNumberToObject(tst, "blksize", res->req.blksize);
	cJSON_AddNumberToObject(tst, "omit", (double)res->req.omit_ms / 1e3);
	cJSON_AddNumberToObject(tst, "duration",
				(double)res->req.duration_ms / 1e3);
	cJSON_AddNumberToObject(tst, "bytes", (double)res->req.bytes);
	cJSON_AddNumberToObject(tst, "blocks", 0);
	cJSON_AddNumberToObject(tst, "reverse",
				res->req.mode == BENCH_MODE_REVERSE);
	cJSON_AddNumberToObject(tst, "tos", 0);
	cJSON_AddNumberToObject(tst, "target_bitrate",
				(double)res->req.rate_bps);
	cJSON_AddNumberToObject(tst, "bidir",
				res->req.mode == BENCH_MODE_BIDIR);
	cJSON_AddNumberToObject(tst, "fqrate", 0);
	cJSON_AddNumberToObject(tst, "zerocopy", res->req.zerocopy);
	return start;
}

static void cb_started(void *ctx, const struct bench_run *run,
		       const struct bench_result *res)
{
	struct report *rp = ctx;
	char host[NET_ADDRSTR], rhost[NET_ADDRSTR];
	uint16_t port, rport;
	unsigned i;

	rp->nstreams = run->nstreams;
	rp->mode = res->req.mode;
	rp->bidir = res->req.mode == BENCH_MODE_BIDIR;
	rp->udp = res->req.udp;
	if (res->title[0] && !rp->title[0])
		report_set_title(rp, res->title);
	rp->dirs = calloc(run->nstreams, 1);
	rp->local_sender = calloc(run->nstreams, sizeof(bool));
	for (i = 0; rp->dirs && rp->local_sender && i < run->nstreams; i++) {
		rp->dirs[i] = run->streams[i].dir;
		rp->local_sender[i] = run->streams[i].sender;
		rp->any_sender = rp->any_sender || run->streams[i].sender;
	}
	if (rp->fmt == REPORT_JSON) {
		rp->start = start_json(run, res);
		cJSON_AddItemToObject(rp->root, "start", rp->start);
		rp->intervals = cJSON_AddArrayToObject(rp->root, "intervals");
		return;
	}
	if (rp->fmt == REPORT_JSON_STREAM) {
		emit_stream_event(rp, "start", start_json(run, res));
		return;
	}
	if (res->req.mode == BENCH_MODE_REVERSE)
		rp_print(rp, "Reverse mode, remote host %s is sending\n",
			 res->remote_host);
	for (i = 0; i < run->nstreams; i++) {
		const struct bench_stream *s = &run->streams[i];

		net_addr_host((const struct sockaddr *)&s->local.ss, host,
			      sizeof(host), &port);
		net_addr_host((const struct sockaddr *)&s->peer.ss, rhost,
			      sizeof(rhost), &rport);
		rp_print(rp,
			 "[%3u]%s local %s port %u connected to %s "
			 "port %u\n",
			 i + 1, role_tag(rp, i), host, port, rhost, rport);
	}
	fflush(rp->out);
}

/* ---------------- intervals ---------------- */

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* The figures of one line of the interval table. */
struct line_fig {
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
		rp_print(rp, "  %llu  %s\n", (unsigned long long)f->packets,
			 omitted ? "(omitted)" : "");
	else
		rp_print(rp, "  %5.3f ms  %llu/%llu (%.2g%%)  %s\n",
			 f->jitter_ms, (unsigned long long)f->lost,
			 (unsigned long long)tot, pct(f->lost, tot),
			 omitted ? "(omitted)" : "");
}

/* A UDP receiver's datagrams out of order (a line as iperf3 prints) and
 * duplicates (linerate's own count), when there were any. */
static void human_ooo_line(struct report *rp, const char *id, const char *tag,
			   double start, double end, uint64_t ooo, uint64_t dup)
{
	if (!ooo && !dup)
		return;
	rp_print(rp,
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
	double secs = iv->end - iv->start;

	rp_print(rp, "[%s]%s %6.2f-%-6.2f sec  %s  %s", id, tag, iv->start,
		 iv->end, units_fmt_bytes(tb, sizeof(tb), (double)f->bytes),
		 units_fmt_rate(rb, sizeof(rb), rate(f->bytes, secs)));
	if (rp->udp) {
		human_udp_tail(rp, f, iv->omitted);
		/* as iperf3 does for datagrams out of order; duplicates
		 * are linerate's own count */
		if (!f->sender)
			human_ooo_line(rp, id, tag, iv->start, iv->end, f->ooo,
				       f->dup);
		return;
	}
	if (f->sender && f->has_tcp) {
		rp_print(rp, "  %4u", f->retr);
		if (per_stream)
			rp_print(rp, "   %s  %6.2f ms",
				 units_fmt_bytes(cb, sizeof(cb), f->cwnd),
				 f->rtt_us / 1000.0);
	}
	rp_print(rp, "%s\n", iv->omitted ? "  (omitted)" : "");
}

static void human_iv_header(struct report *rp)
{
	if (rp->udp)
		rp_print(rp,
			 "[ ID]%s Interval           Transfer     Bitrate"
			 "         %s\n",
			 rp->bidir ? "[Role]" : "",
			 rp->any_sender && !rp->bidir
				 ? "Total Datagrams"
				 : "Jitter    Lost/Total Datagrams");
	else if (rp->bidir)
		rp_print(rp, "[ ID][Role] Interval           "
			     "Transfer     Bitrate         Retr  Cwnd"
			     "          RTT\n");
	else if (rp->any_sender)
		rp_print(rp, "[ ID] Interval           Transfer"
			     "     Bitrate         Retr  Cwnd          "
			     "RTT\n");
	else
		rp_print(rp, "[ ID] Interval           Transfer"
			     "     Bitrate\n");
}

static void human_interval(struct report *rp, const struct bench_interval *iv)
{
	struct line_fig sum[2] = { { .sender = true }, { .sender = false } };
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
		human_iv_line(rp, id, role_tag(rp, i), iv, &f, true);
		k = s->sender ? 0 : 1;
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
			human_iv_line(rp, "SUM",
				      rp->bidir ? (k ? "[RX-C]" : "[TX-C]")
						: "",
				      iv, &sum[k], false);
		}
		rp_print(rp, "%s", SEP);
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
	add_num(o, "jitter_ms", f->jitter_ms);
	cJSON_AddNumberToObject(o, "lost_packets", (double)f->lost);
	cJSON_AddNumberToObject(o, "packets", (double)tot);
	add_num(o, "lost_percent", pct(f->lost, tot));
	cJSON_AddNumberToObject(o, "out_of_order", (double)f->ooo);
	/* not iperf3's: datagrams that came twice */
	cJSON_AddNumberToObject(o, "duplicates", (double)f->dup);
}

static cJSON *interval_json(struct report *rp, const struct bench_interval *iv)
{
	cJSON *o = cJSON_CreateObject(), *arr, *s, *sum;
	struct line_fig tot[2] = { { .bytes = 0 } };
	unsigned jn[2] = { 0, 0 };
	bool has[2] = { false, false };
	double secs = iv->end - iv->start;
	unsigned i;
	int k;

	arr = cJSON_AddArrayToObject(o, "streams");
	for (i = 0; i < iv->n; i++) {
		const struct bench_iv_stream *st = &iv->s[i];

		s = cJSON_CreateObject();
		cJSON_AddNumberToObject(s, "socket", i + 1);
		add_num(s, "start", iv->start);
		add_num(s, "end", iv->end);
		add_num(s, "seconds", secs);
		cJSON_AddNumberToObject(s, "bytes", (double)st->bytes);
		add_num(s, "bits_per_second", rate(st->bytes, secs));
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
			cJSON_AddNumberToObject(s, "rtt", st->rtt_us);
			cJSON_AddNumberToObject(s, "rttvar", st->rttvar_us);
			cJSON_AddNumberToObject(s, "pmtu", st->pmtu);
		}
		cJSON_AddBoolToObject(s, "omitted", iv->omitted);
		cJSON_AddBoolToObject(s, "sender", st->sender);
		cJSON_AddItemToArray(arr, s);
		k = (rp->bidir && st->dir == BENCH_DIR_S2C) ? 1 : 0;
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
		add_num(sum, "start", iv->start);
		add_num(sum, "end", iv->end);
		add_num(sum, "seconds", secs);
		cJSON_AddNumberToObject(sum, "bytes", (double)tot[k].bytes);
		add_num(sum, "bits_per_second", rate(tot[k].bytes, secs));
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

static void cb_interval(void *ctx, const struct bench_interval *iv)
{
	struct report *rp = ctx;

	if (rp->fmt == REPORT_HUMAN)
		human_interval(rp, iv);
	else if (rp->fmt == REPORT_JSON)
		cJSON_AddItemToArray(rp->intervals, interval_json(rp, iv));
	else
		emit_stream_event(rp, "interval", interval_json(rp, iv));
}

/* ---------------- end ---------------- */

struct sums {
	uint64_t bytes;
	double seconds;
	uint32_t retrans;
	bool has_tcp;
	uint64_t packets, lost, ooo, dup; /* UDP */
	double jitter_sum;
	unsigned n;
};

static void sum_add(struct sums *s, const struct bench_side *d)
{
	s->bytes += d->bytes;
	if (d->seconds > s->seconds)
		s->seconds = d->seconds;
	s->retrans += d->retrans;
	s->has_tcp = s->has_tcp || d->has_tcp;
	s->packets += d->packets;
	s->lost += d->lost;
	s->ooo += d->ooo;
	s->dup += d->dup;
	s->jitter_sum += d->jitter_ms;
	s->n++;
}

/* The sums as one side, for the formatters of one side (jitter: the
 * streams' mean, as iperf3). */
static struct bench_side sums_side(const struct sums *s)
{
	struct bench_side d = {
		.bytes = s->bytes,
		.seconds = s->seconds,
		.retrans = s->retrans,
		.has_tcp = s->has_tcp,
		.packets = s->packets,
		.lost = s->lost,
		.ooo = s->ooo,
		.dup = s->dup,
		.jitter_ms = s->n ? s->jitter_sum / s->n : 0,
	};

	return d;
}

/* Streams of the test's main direction go to k=0; with --bidir the
 * server-to-client ones go to k=1. */
static int dir_slot(const struct bench_result *res, uint8_t dir)
{
	return res->req.mode == BENCH_MODE_BIDIR && dir == BENCH_DIR_S2C;
}

static cJSON *side_json(unsigned id, const struct bench_side *d,
			bool local_sender, bool sender_side)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "socket", id);
	cJSON_AddNumberToObject(o, "start", 0);
	add_num(o, "end", d->seconds);
	add_num(o, "seconds", d->seconds);
	cJSON_AddNumberToObject(o, "bytes", (double)d->bytes);
	add_num(o, "bits_per_second", rate(d->bytes, d->seconds));
	if (sender_side) {
		cJSON_AddNumberToObject(o, "retransmits", d->retrans);
		cJSON_AddNumberToObject(o, "max_snd_cwnd", d->max_cwnd);
		cJSON_AddNumberToObject(o, "max_rtt", d->max_rtt);
		cJSON_AddNumberToObject(o, "min_rtt", d->min_rtt);
		cJSON_AddNumberToObject(o, "mean_rtt", d->mean_rtt);
	}
	cJSON_AddBoolToObject(o, "sender", local_sender);
	return o;
}

/* iperf3's four UDP keys of a summary: the receiver's jitter and loss;
 * on the sender's side jitter and loss are 0 and packets is sent. */
static void udp_sum_keys(cJSON *o, const struct bench_side *d, bool sender_side)
{
	uint64_t tot = d->packets;

	add_num(o, "jitter_ms", sender_side ? 0 : d->jitter_ms);
	cJSON_AddNumberToObject(o, "lost_packets",
				sender_side ? 0 : (double)d->lost);
	cJSON_AddNumberToObject(o, "packets",
				(double)(sender_side ? d->packets : tot));
	add_num(o, "lost_percent", sender_side ? 0 : pct(d->lost, tot));
}

static cJSON *sum_json(const struct sums *s, bool sender_side,
		       bool local_sender, bool udp)
{
	cJSON *o = cJSON_CreateObject();
	struct bench_side d = sums_side(s);

	cJSON_AddNumberToObject(o, "start", 0);
	add_num(o, "end", s->seconds);
	add_num(o, "seconds", s->seconds);
	cJSON_AddNumberToObject(o, "bytes", (double)s->bytes);
	add_num(o, "bits_per_second", rate(s->bytes, s->seconds));
	if (udp)
		udp_sum_keys(o, &d, sender_side);
	else if (sender_side)
		cJSON_AddNumberToObject(o, "retransmits", s->retrans);
	/* iperf3 marks a UDP test's sums by their side, a TCP test's by
	 * whether this end sends */
	cJSON_AddBoolToObject(o, "sender", udp ? sender_side : local_sender);
	return o;
}

/* end.streams[].udp (and end.sum of a UDP test): this side's bytes and
 * seconds, the receiver's jitter and loss. */
static cJSON *udp_end_json(int id, const struct bench_side *snd,
			   const struct bench_side *rcv, bool local_sender,
			   bool with_ooo)
{
	cJSON *o = cJSON_CreateObject();
	const struct bench_side *mine = local_sender ? snd : rcv;
	uint64_t tot = rcv->packets;

	if (id > 0)
		cJSON_AddNumberToObject(o, "socket", id);
	cJSON_AddNumberToObject(o, "start", 0);
	add_num(o, "end", mine->seconds);
	add_num(o, "seconds", mine->seconds);
	cJSON_AddNumberToObject(o, "bytes", (double)mine->bytes);
	add_num(o, "bits_per_second", rate(mine->bytes, mine->seconds));
	add_num(o, "jitter_ms", rcv->jitter_ms);
	cJSON_AddNumberToObject(o, "lost_packets", (double)rcv->lost);
	cJSON_AddNumberToObject(o, "packets",
				(double)(local_sender ? snd->packets : tot));
	add_num(o, "lost_percent", pct(rcv->lost, tot));
	if (with_ooo) {
		cJSON_AddNumberToObject(o, "out_of_order", (double)rcv->ooo);
		cJSON_AddNumberToObject(o, "duplicates", (double)rcv->dup);
	}
	cJSON_AddBoolToObject(o, "sender", local_sender);
	return o;
}

static double cpu_pct(uint64_t us, uint64_t wall_us)
{
	return wall_us ? 100.0 * (double)us / (double)wall_us : 0.0;
}

static bool local_sends(uint8_t dir)
{
	return dir == BENCH_DIR_C2S;
}

static cJSON *end_json(const struct bench_result *res)
{
	cJSON *end = cJSON_CreateObject(), *arr, *o, *cpu, *lr, *link;
	struct sums snd[2] = { 0 }, rcv[2] = { 0 };
	unsigned i;
	int k;

	arr = cJSON_AddArrayToObject(end, "streams");
	for (i = 0; i < res->nstreams; i++) {
		const struct bench_stream_result *s = &res->streams[i];
		bool ls = local_sends(s->dir);

		o = cJSON_CreateObject();
		if (res->req.udp) {
			cJSON_AddItemToObject(
				o, "udp",
				udp_end_json((int)i + 1, &s->sender,
					     &s->receiver, ls, true));
		} else {
			cJSON_AddItemToObject(o, "sender",
					      side_json(i + 1, &s->sender, ls,
							true));
			cJSON_AddItemToObject(o, "receiver",
					      side_json(i + 1, &s->receiver, ls,
							false));
		}
		cJSON_AddItemToArray(arr, o);
		k = dir_slot(res, s->dir);
		sum_add(&snd[k], &s->sender);
		sum_add(&rcv[k], &s->receiver);
	}
	for (k = 0; k < (res->req.mode == BENCH_MODE_BIDIR ? 2 : 1); k++) {
		bool ls = res->req.mode == BENCH_MODE_FORWARD ||
			  (res->req.mode == BENCH_MODE_BIDIR && k == 0);

		if (res->req.udp) {
			struct bench_side ds = sums_side(&snd[k]);
			struct bench_side dr = sums_side(&rcv[k]);

			cJSON_AddItemToObject(
				end, k ? "sum_bidir_reverse" : "sum",
				udp_end_json(0, &ds, &dr, ls, false));
		}
		cJSON_AddItemToObject(
			end, k ? "sum_sent_bidir_reverse" : "sum_sent",
			sum_json(&snd[k], true, ls, res->req.udp));
		cJSON_AddItemToObject(
			end, k ? "sum_received_bidir_reverse" : "sum_received",
			sum_json(&rcv[k], false, ls, res->req.udp));
	}
	cpu = cJSON_AddObjectToObject(end, "cpu_utilization_percent");
	add_num(cpu, "host_total",
		cpu_pct(res->local_cpu.user_us + res->local_cpu.sys_us,
			res->local_cpu.wall_us));
	add_num(cpu, "host_user",
		cpu_pct(res->local_cpu.user_us, res->local_cpu.wall_us));
	add_num(cpu, "host_system",
		cpu_pct(res->local_cpu.sys_us, res->local_cpu.wall_us));
	add_num(cpu, "remote_total",
		cpu_pct(res->remote_cpu.user_us + res->remote_cpu.sys_us,
			res->remote_cpu.wall_us));
	add_num(cpu, "remote_user",
		cpu_pct(res->remote_cpu.user_us, res->remote_cpu.wall_us));
	add_num(cpu, "remote_system",
		cpu_pct(res->remote_cpu.sys_us, res->remote_cpu.wall_us));
	if (res->req.udp) {
		/* no congestion control to name */
	} else if (res->req.mode == BENCH_MODE_REVERSE) {
		cJSON_AddStringToObject(end, "sender_tcp_congestion",
					res->remote_cc);
		cJSON_AddStringToObject(end, "receiver_tcp_congestion",
					res->local_cc);
	} else {
		cJSON_AddStringToObject(end, "sender_tcp_congestion",
					res->local_cc);
		cJSON_AddStringToObject(end, "receiver_tcp_congestion",
					res->remote_cc);
	}
	lr = cJSON_AddObjectToObject(end, "linerate");
	cJSON_AddStringToObject(lr, "server_version", res->server_software);
	cJSON_AddBoolToObject(lr, "iperf3_server", res->iperf3);
	cJSON_AddNumberToObject(lr, "overlapping_tests", res->overlap);
	cJSON_AddBoolToObject(lr, "truncated", res->truncated);
	cJSON_AddBoolToObject(lr, "authenticated", res->authenticated);
	/* UDP datagrams are never sealed (docs/SECURITY.md) */
	cJSON_AddStringToObject(lr, "cipher",
				crypto_cipher_name(res->authenticated &&
								   !res->req.udp
							   ? res->cipher
							   : CRYPTO_NONE));
	add_num(lr, "local_cpu_seconds",
		(double)(res->local_cpu.user_us + res->local_cpu.sys_us) / 1e6);
	add_num(lr, "remote_cpu_seconds",
		(double)(res->remote_cpu.user_us + res->remote_cpu.sys_us) /
			1e6);
	link = cJSON_AddObjectToObject(lr, "link");
	if (res->link_known)
		cJSON_AddStringToObject(link, "interface", res->link_if);
	cJSON_AddNumberToObject(link, "speed_bits_per_second",
				(double)res->link_speed_bps);
	cJSON_AddNumberToObject(link, "mtu", res->link_mtu);
	cJSON_AddBoolToObject(link, "wireless", res->link_wireless);
	cJSON_AddBoolToObject(link, "virtual", res->link_virtual);
	add_num(link, "tcp_ceiling_bits_per_second", res->link_ceiling_bps);
	if (res->link_ceiling_bps > 0)
		add_num(link, "percent_of_ceiling",
			100.0 * rate(rcv[0].bytes, rcv[0].seconds) /
				res->link_ceiling_bps);
	return end;
}

static void human_total_line(struct report *rp, const char *id, const char *tag,
			     const struct bench_side *d, bool sender,
			     const char *what)
{
	char tb[32], rb[32];

	rp_print(rp, "[%s]%s %6.2f-%-6.2f sec  %s  %s", id, tag, 0.0,
		 d->seconds, units_fmt_bytes(tb, sizeof(tb), (double)d->bytes),
		 units_fmt_rate(rb, sizeof(rb), rate(d->bytes, d->seconds)));
	if (rp->udp) {
		/* iperf3: the sender's line has no jitter or loss, its
		 * total is what it sent */
		uint64_t tot = d->packets;

		if (sender)
			rp_print(rp, "  %5.3f ms  %d/%llu (%.2g%%)  %s\n", 0.0,
				 0, (unsigned long long)d->packets, 0.0, what);
		else
			rp_print(rp, "  %5.3f ms  %llu/%llu (%.2g%%)  %s\n",
				 d->jitter_ms, (unsigned long long)d->lost,
				 (unsigned long long)tot, pct(d->lost, tot),
				 what);
		if (!sender)
			human_ooo_line(rp, id, tag, 0.0, d->seconds, d->ooo,
				       d->dup);
		return;
	}
	if (sender)
		rp_print(rp, "  %4u", d->retrans);
	else
		rp_print(rp, "      ");
	rp_print(rp, "             %s\n", what);
}

static void human_end(struct report *rp, const struct bench_result *res)
{
	struct sums snd[2] = { 0 }, rcv[2] = { 0 };
	unsigned i, per_dir = res->req.streams;
	char id[8], rb[32], cb[32];
	int k;

	if (!rp->sep_done)
		rp_print(rp, "%s", SEP);
	rp_print(rp,
		 "[ ID]%s Interval           Transfer     Bitrate"
		 "         %s\n",
		 rp->bidir ? "[Role]" : "",
		 rp->udp ? "Jitter    Lost/Total Datagrams" : "Retr");
	for (i = 0; i < res->nstreams; i++) {
		const struct bench_stream_result *s = &res->streams[i];

		snprintf(id, sizeof(id), "%3u", i + 1);
		human_total_line(rp, id, role_tag(rp, i), &s->sender, true,
				 "sender");
		human_total_line(rp, id, role_tag(rp, i), &s->receiver, false,
				 "receiver");
		k = dir_slot(res, s->dir);
		sum_add(&snd[k], &s->sender);
		sum_add(&rcv[k], &s->receiver);
	}
	if (per_dir > 1) {
		for (k = 0; k < (rp->bidir ? 2 : 1); k++) {
			struct bench_side ds = sums_side(&snd[k]);
			struct bench_side dr = sums_side(&rcv[k]);
			const char *tag = rp->bidir ? (k ? "[RX-C]" : "[TX-C]")
						    : "";

			human_total_line(rp, "SUM", tag, &ds, true, "sender");
			human_total_line(rp, "SUM", tag, &dr, false,
					 "receiver");
		}
	}
	rp_print(rp,
		 "CPU Utilization: local %.1f%% (%.1f%%u/%.1f%%s), "
		 "remote %.1f%% (%.1f%%u/%.1f%%s); %.2f + %.2f CPU seconds\n",
		 cpu_pct(res->local_cpu.user_us + res->local_cpu.sys_us,
			 res->local_cpu.wall_us),
		 cpu_pct(res->local_cpu.user_us, res->local_cpu.wall_us),
		 cpu_pct(res->local_cpu.sys_us, res->local_cpu.wall_us),
		 cpu_pct(res->remote_cpu.user_us + res->remote_cpu.sys_us,
			 res->remote_cpu.wall_us),
		 cpu_pct(res->remote_cpu.user_us, res->remote_cpu.wall_us),
		 cpu_pct(res->remote_cpu.sys_us, res->remote_cpu.wall_us),
		 (double)(res->local_cpu.user_us + res->local_cpu.sys_us) / 1e6,
		 (double)(res->remote_cpu.user_us + res->remote_cpu.sys_us) /
			 1e6);
	if (!res->req.udp)
		rp_print(rp, "TCP congestion control: local %s, remote %s\n",
			 res->local_cc[0] ? res->local_cc : "?",
			 res->remote_cc[0] ? res->remote_cc : "?");
	if (res->req.udp) {
		/* a paced test: the TCP ceiling says nothing about it */
	} else if (res->link_ceiling_bps > 0) {
		for (k = 0; k < (rp->bidir ? 2 : 1); k++) {
			rp_print(rp,
				 "Link %s%s: %s, MTU %u, TCP ceiling "
				 "%s; %sreceived %.1f%% of it\n",
				 res->link_if[0] ? res->link_if : "?",
				 res->link_wireless ? " (Wi-Fi)" : "",
				 units_fmt_rate(rb, sizeof(rb),
						(double)res->link_speed_bps),
				 res->link_mtu,
				 units_fmt_rate(cb, sizeof(cb),
						res->link_ceiling_bps),
				 rp->bidir ? (k ? "reverse " : "forward ") : "",
				 100.0 * rate(rcv[k].bytes, rcv[k].seconds) /
					 res->link_ceiling_bps);
		}
	} else if (res->link_known) {
		rp_print(rp,
			 "Link %s: %s, speed not known (--link-speed "
			 "RATE gives the TCP ceiling)\n",
			 res->link_if,
			 res->link_virtual ? (strcmp(res->link_if, "lo")
						      ? "virtual interface"
						      : "loopback")
					   : "physical interface");
	}
	if (res->iperf3)
		rp_print(rp, "Security: none (iperf3 protocol: not "
			     "authenticated, not encrypted)\n");
	else if (!res->authenticated)
		rp_print(rp, "Security: none (no token: not authenticated, "
			     "not encrypted)\n");
	else if (res->req.udp)
		rp_print(rp, "Security: authenticated with the token; UDP "
			     "datagrams in clear (random test data)\n");
	else if (res->cipher == CRYPTO_NONE)
		rp_print(rp, "Security: authenticated with the token; "
			     "data in clear (--cipher none)\n");
	else
		rp_print(rp,
			 "Security: authenticated with the token; "
			 "data encrypted with %s\n",
			 crypto_cipher_name(res->cipher));
	if (res->truncated)
		rp_print(rp, "Note: stopped at the server's time limit "
			     "before all bytes were sent\n");
	if (res->overlap)
		rp_print(rp,
			 "Note: %u other test%s ran on the server during "
			 "this one and shared its CPU and link\n",
			 res->overlap, res->overlap == 1 ? "" : "s");
	if (res->server_output) {
		/* as iperf3 --get-server-output: the peer's own text, not
		 * prefixed with the title */
		rp_print(rp, "\n");
		if (res->server_output_json) {
			/* iperf3 prints a -J server's document formatted */
			cJSON *doc = cJSON_Parse(res->server_output);
			char *pretty = doc ? cJSON_Print(doc) : NULL;

			fputs("Server JSON output:\n", rp->out);
			text_out(rp->out, pretty ? pretty : res->server_output);
			free(pretty);
			cJSON_Delete(doc);
		} else {
			fputs("Server output:\n", rp->out);
			text_out(rp->out, res->server_output);
		}
		fputc('\n', rp->out);
		rp->bol = true;
	}
	rp_print(rp, "\nlinerate Done.\n");
	fflush(rp->out);
}

/* --get-server-output, as iperf3 -J has it: "server_output_text", or
 * "server_output_json" (the document) from a server run with -J. */
static const char *server_output_key(const struct bench_result *res)
{
	return res->server_output_json ? "server_output_json"
				       : "server_output_text";
}

static cJSON *server_output_item(const struct bench_result *res)
{
	cJSON *doc = NULL;

	if (res->server_output_json)
		doc = cJSON_Parse(res->server_output);
	return doc ? doc : cJSON_CreateString(res->server_output);
}

static void cb_finished(void *ctx, const struct bench_result *res)
{
	struct report *rp = ctx;

	if (rp->fmt == REPORT_HUMAN) {
		human_end(rp, res);
		return;
	}
	if (rp->fmt == REPORT_JSON) {
		cJSON_AddItemToObject(rp->root, "end", end_json(res));
		/* iperf3 -J: both at the top level */
		if (rp->title[0] || res->title[0])
			cJSON_AddStringToObject(rp->root, "title",
						rp->title[0] ? rp->title
							     : res->title);
		if (res->server_output)
			cJSON_AddItemToObject(rp->root, server_output_key(res),
					      server_output_item(res));
		return;
	}
	emit_stream_event(rp, "end", end_json(res));
	if (res->server_output)
		emit_stream_event(rp, server_output_key(res),
				  server_output_item(res));
}

void report_bench_callbacks(struct report *rp, struct bench_callbacks *cb)
{
	cb->ctx = rp;
	cb->connecting = cb_connecting;
	cb->started = cb_started;
	cb->interval = cb_interval;
	cb->finished = cb_finished;
}

void report_bench_error(struct report *rp, FILE *err_out, const char *msg)
{
	if (rp->fmt == REPORT_JSON) {
		cJSON_AddStringToObject(rp->root, "error", msg);
		report_bench_flush(rp);
	} else if (rp->fmt == REPORT_JSON_STREAM) {
		emit_stream_event(rp, "error", cJSON_CreateString(msg));
	} else {
		fflush(rp->out);
		fprintf(err_out, "linerate: error - ");
		report_escaped(err_out, msg);
		fputc('\n', err_out);
	}
}

void report_bench_flush(struct report *rp)
{
	char *txt;

	if (rp->fmt != REPORT_JSON)
		return;
	if (!cJSON_GetObjectItem(rp->root, "start"))
		cJSON_AddObjectToObject(rp->root, "start");
	if (!cJSON_GetObjectItem(rp->root, "intervals"))
		cJSON_AddArrayToObject(rp->root, "intervals");
	if (!cJSON_GetObjectItem(rp->root, "end"))
		cJSON_AddObjectToObject(rp->root, "end");
	txt = cJSON_Print(rp->root);
	if (txt)
		fprintf(rp->out, "%s\n", txt);
	free(txt);
	fflush(rp->out);
}

/* ---------------- partial files ---------------- */

/* A byte count without iperf3's padding. */
static const char *fmt_size(char *buf, size_t cap, uint64_t bytes)
{
	const char *p = units_fmt_bytes(buf, cap, (double)bytes);

	while (*p == ' ')
		p++;
	return p;
}

/* An age in the largest unit that fits: "45 s", "12 min", "5 h", "3 d". */
static char *fmt_age(char *buf, size_t cap, int64_t s)
{
	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(buf, cap, "%lld s", (long long)s);
	else if (s < 2 * 3600)
		snprintf(buf, cap, "%lld min", (long long)(s / 60));
	else if (s < 2 * 86400)
		snprintf(buf, cap, "%lld h", (long long)(s / 3600));
	else
		snprintf(buf, cap, "%lld d", (long long)(s / 86400));
	return buf;
}

void report_partial(FILE *out, const struct xfer_partial *p, int64_t now)
{
	char age[32], size[32];

	fprintf(out, "%10s  %12s  ", fmt_age(age, sizeof(age), now - p->mtime),
		units_fmt_bytes(size, sizeof(size), (double)p->bytes));
	report_escaped(out, p->path);
	fprintf(out, "%s%s\n", p->journal ? "" : " (no journal: not resumable)",
		p->in_use ? " (in use: a transfer is writing it)" : "");
}

void report_partial_header(FILE *out)
{
	fprintf(out, "%10s  %12s  %s\n", "UNCHANGED", "DISK", "PATH");
}

void report_partial_removed(FILE *out, const struct xfer_partial *p, int r)
{
	char size[32];

	fprintf(out, "%s ", r ? "kept" : "removed");
	report_escaped(out, p->path);
	if (r == -EBUSY)
		fprintf(out, ": in use (a transfer is writing it)\n");
	else if (r)
		fprintf(out, ": %s\n", lr_strerror(r));
	else
		fprintf(out, " (%s)\n", fmt_size(size, sizeof(size), p->bytes));
}

void report_partial_total(FILE *out, unsigned n, uint64_t bytes,
			  unsigned in_use, const char *verb)
{
	char size[32];

	fprintf(out, "%u partial file%s %s, %s", n, n == 1 ? "" : "s", verb,
		fmt_size(size, sizeof(size), bytes));
	if (in_use)
		fprintf(out, "; %u in use", in_use);
	fputc('\n', out);
}

void report_sweep_line(FILE *out, const struct xfer_sweep *r,
		       const struct xfer_partial_policy *pol)
{
	char tb[32], kb[32], age[32];

	fprintf(out, "removed %u (%s)", r->removed,
		fmt_size(tb, sizeof(tb), r->removed_bytes));
	if (pol->max_age_s)
		fprintf(out, ", unchanged for over %s",
			fmt_age(age, sizeof(age), pol->max_age_s));
	if (pol->max_bytes)
		fprintf(out, "%s the oldest over the cap of %s",
			pol->max_age_s ? ", or" : ",",
			fmt_size(kb, sizeof(kb), pol->max_bytes));
	fprintf(out, "; kept %u (%s)", r->kept,
		fmt_size(kb, sizeof(kb), r->kept_bytes));
	if (r->in_use)
		fprintf(out, ", %u in use", r->in_use);
	if (r->failed)
		fprintf(out, ", %u could not be removed", r->failed);
	fputc('\n', out);
}

/* ---------------- server log ---------------- */

static const char *mode_name(uint8_t mode)
{
	switch (mode) {
	case BENCH_MODE_REVERSE: return "reverse";
	case BENCH_MODE_BIDIR: return "bidir";
	default: return "forward";
	}
}

void report_server_event(FILE *out, FILE *log, const struct server_event *ev)
{
	char ts[32], tb[32], rb[32];
	struct tm tm;
	time_t now = time(NULL);

	if (ev->kind == SERVER_EV_LISTENING) {
		/* the iperf3 port's line is told apart: scripts read the
		 * first form back for the linerate port */
		fprintf(out, "Server listening on %s port %u%s\n", ev->peer,
			ev->port, ev->iperf3 ? " (iperf3 clients)" : "");
		fflush(out);
		return;
	}
	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	flockfile(log);
	if (ev->kind == SERVER_EV_PROBE_DONE) {
		fprintf(log, "%s probe %u from %s (linerate doctor)%s", ts,
			ev->test_no, ev->peer,
			ev->ok ? ": ok\n" : ": failed: ");
		if (!ev->ok) {
			report_escaped(log, ev->reason ? ev->reason : "?");
			fputc('\n', log);
		}
	} else if (ev->kind == SERVER_EV_XFER_DONE) {
		const struct xfer_result *x = &ev->xres;

		fprintf(log, "%s transfer %u from %s: %s", ts, ev->test_no,
			ev->peer, ev->xfer_op == XFER_PULL ? "pull" : "push");
		if (x->seconds > 0)
			fprintf(log, ", %llu file%s, %s in %.2f s (%s), %s",
				(unsigned long long)x->files_ok,
				x->files_ok == 1 ? "" : "s",
				units_fmt_bytes(tb, sizeof(tb),
						(double)x->bytes),
				x->seconds,
				units_fmt_rate(rb, sizeof(rb),
					       rate(x->bytes, x->seconds)),
				x->authenticated ? crypto_cipher_name(x->cipher)
						 : "no token");
		if (ev->ok) {
			fprintf(log, ": ok\n");
		} else {
			fprintf(log, ": failed: ");
			report_escaped(log, ev->reason ? ev->reason : "?");
			fputc('\n', log);
		}
	} else if (ev->kind == SERVER_EV_PARTIALS) {
		fprintf(log, "%s partial files: ", ts);
		if (ev->reason) {
			fprintf(log, "sweep failed: ");
			report_escaped(log, ev->reason);
			fputc('\n', log);
		} else {
			report_sweep_line(log, &ev->sweep, &ev->partial);
		}
	} else if (ev->kind == SERVER_EV_CONN_REJECTED) {
		fprintf(log, "%s %s: rejected: ", ts, ev->peer);
		report_escaped(log, ev->reason ? ev->reason : "?");
		fputc('\n', log);
	} else {
		uint64_t b = ev->bytes_sent + ev->bytes_received;

		fprintf(log, "%s test %u from %s", ts, ev->test_no, ev->peer);
		if (ev->req.streams)
			fprintf(log, ": %s, %u stream%s",
				mode_name(ev->req.mode), ev->req.streams,
				ev->req.streams == 1 ? "" : "s");
		if (ev->req.udp)
			fprintf(log, ", UDP");
		if (ev->iperf3)
			fprintf(log, ", iperf3 protocol");
		if (ev->ok) {
			fprintf(log, ", %s",
				!ev->secure   ? "no token"
				: ev->req.udp ? "token, datagrams in clear"
					      : crypto_cipher_name(ev->cipher));
			fprintf(log, ", %.2f s", ev->seconds);
			if (ev->bytes_sent ||
			    ev->req.mode != BENCH_MODE_FORWARD)
				fprintf(log, ", sent %s",
					units_fmt_bytes(tb, sizeof(tb),
							(double)ev->bytes_sent));
			if (ev->bytes_received ||
			    ev->req.mode != BENCH_MODE_REVERSE)
				fprintf(log, ", received %s",
					units_fmt_bytes(
						rb, sizeof(rb),
						(double)ev->bytes_received));
			fprintf(log, " (%s)",
				units_fmt_rate(tb, sizeof(tb),
					       rate(b, ev->seconds)));
			if (ev->overlap)
				fprintf(log, ", overlapped %u other test%s",
					ev->overlap,
					ev->overlap == 1 ? "" : "s");
			fprintf(log, ": ok\n");
		} else {
			fprintf(log, ": failed: ");
			report_escaped(log, ev->reason ? ev->reason : "?");
			fputc('\n', log);
		}
	}
	funlockfile(log);
	fflush(log);
}

/* ---------------- linerate crypto ---------------- */

static void print_features(FILE *out, const struct cryptobench_cpu *cpu)
{
	unsigned i;

	fprintf(out, "Features:   ");
	for (i = 0; i < cpu->nfeatures; i++)
		fprintf(out, "%s%s %s", i ? ", " : "", cpu->features[i].name,
			cpu->features[i].present ? "yes" : "no");
	fprintf(out, "\n");
}

void report_crypto_human(FILE *out, const struct cryptobench_cpu *cpu,
			 const struct cryptobench_result *res)
{
	unsigned i;

	fprintf(out, "CPU:        %s (%s)\n",
		cpu->model[0] ? cpu->model : "unknown", cpu->arch);
	print_features(out, cpu);
	fprintf(out, "Governor:   %s\n",
		cpu->governor[0] ? cpu->governor : "unknown (no cpufreq)");
	fprintf(out, "Library:    %s\n", crypto_library_version());
	fprintf(out,
		"One thread, %.2f s per cell, in-place AEAD; "
		"MB/s = 10^6 bytes/s\n\n",
		(double)res->ms_per_cell / 1000.0);
	fprintf(out, "%-18s %8s %11s %11s   %s\n", "Cipher", "Record",
		"Seal MB/s", "Open MB/s", "Cores for 1 GbE (seal/open)");
	for (i = 0; i < res->nrows; i++) {
		const struct cryptobench_row *r = &res->rows[i];

		fprintf(out, "%-18s %4zu KiB %11.1f %11.1f   %.3f / %.3f\n",
			cryptobench_cipher_label(r->cipher), r->record >> 10,
			r->seal.mbps, r->open.mbps,
			cryptobench_cores_for(r->seal.mbps,
					      CRYPTOBENCH_GBE_MBPS),
			cryptobench_cores_for(r->open.mbps,
					      CRYPTOBENCH_GBE_MBPS));
	}
	fprintf(out,
		"\n1 GbE carries %.1f MB/s each way: the sender seals it, the "
		"receiver opens it.\n",
		CRYPTOBENCH_GBE_MBPS);
	fprintf(out, "auto: %s\n", cryptobench_auto_reason(cpu->aes));
}

static cJSON *cpu_json(const struct cryptobench_cpu *cpu)
{
	cJSON *o = cJSON_CreateObject(), *feat;
	unsigned i;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "model", cpu->model);
	cJSON_AddStringToObject(o, "arch", cpu->arch);
	if (cpu->governor[0])
		cJSON_AddStringToObject(o, "governor", cpu->governor);
	else
		cJSON_AddNullToObject(o, "governor");
	feat = cJSON_AddObjectToObject(o, "features");
	for (i = 0; feat && i < cpu->nfeatures; i++)
		cJSON_AddBoolToObject(feat, cpu->features[i].name,
				      cpu->features[i].present);
	return o;
}

static cJSON *cell_json(const char *op, const struct cryptobench_row *r,
			const struct cryptobench_cell *c)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "cipher", crypto_cipher_name(r->cipher));
	cJSON_AddStringToObject(o, "op", op);
	cJSON_AddNumberToObject(o, "record_bytes", (double)r->record);
	cJSON_AddNumberToObject(o, "bytes", (double)c->bytes);
	cJSON_AddNumberToObject(o, "seconds", json_num(c->seconds));
	cJSON_AddNumberToObject(o, "mbytes_per_second", json_num(c->mbps));
	cJSON_AddNumberToObject(
		o, "cores_for_1gbe",
		json_num(cryptobench_cores_for(c->mbps, CRYPTOBENCH_GBE_MBPS)));
	return o;
}

static cJSON *auto_json(bool aes)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(
		o, "peer_with_aes",
		crypto_cipher_name(cryptobench_auto_pick(aes, true)));
	cJSON_AddStringToObject(
		o, "peer_without_aes",
		crypto_cipher_name(cryptobench_auto_pick(aes, false)));
	cJSON_AddStringToObject(o, "reason", cryptobench_auto_reason(aes));
	return o;
}

int report_crypto_json(FILE *out, const struct cryptobench_cpu *cpu,
		       const struct cryptobench_result *res)
{
	cJSON *root = cJSON_CreateObject(), *arr;
	char *text;
	unsigned i;

	if (!root)
		return -ENOMEM;
	cJSON_AddItemToObject(root, "cpu", cpu_json(cpu));
	cJSON_AddStringToObject(root, "library", crypto_library_version());
	cJSON_AddNumberToObject(root, "seconds_per_cell",
				(double)res->ms_per_cell / 1000.0);
	cJSON_AddNumberToObject(root, "link_1gbe_mbytes_per_second",
				CRYPTOBENCH_GBE_MBPS);
	arr = cJSON_AddArrayToObject(root, "results");
	for (i = 0; arr && i < res->nrows; i++) {
		cJSON_AddItemToArray(arr, cell_json("seal", &res->rows[i],
						    &res->rows[i].seal));
		cJSON_AddItemToArray(arr, cell_json("open", &res->rows[i],
						    &res->rows[i].open));
	}
	cJSON_AddItemToObject(root, "auto", auto_json(cpu->aes));
	text = cJSON_Print(root);
	cJSON_Delete(root);
	if (!text)
		return -ENOMEM;
	fprintf(out, "%s\n", text);
	free(text);
	return 0;
}

void report_crypto_json_error(FILE *out, const char *msg)
{
	cJSON *root = cJSON_CreateObject();
	char *text;

	if (!root)
		return;
	cJSON_AddStringToObject(root, "error", msg);
	text = cJSON_Print(root);
	cJSON_Delete(root);
	if (text)
		fprintf(out, "%s\n", text);
	free(text);
}

/* ---------------- linerate disk ---------------- */

static void disk_fmt_rate(char *buf, size_t cap, double bytes_per_sec)
{
	if (bytes_per_sec >= 1e9)
		snprintf(buf, cap, "%.1f GB/s", bytes_per_sec / 1e9);
	else if (bytes_per_sec >= 1e6)
		snprintf(buf, cap, "%.0f MB/s", bytes_per_sec / 1e6);
	else
		snprintf(buf, cap, "%.0f kB/s", bytes_per_sec / 1e3);
}

static double disk_rate_of(uint64_t bytes, double sec)
{
	return sec > 0 ? (double)bytes / sec : 0;
}

/* "/dev/nvme0n1 (NVMe SSD)", "tmpfs (memory)", "srv:/x (NFS ...)" */
static void disk_fmt_device(char *buf, size_t cap, const struct disk_info *d)
{
	const char *desc = disk_kind_desc(d->kind);

	if (d->kind == DISK_LOOP && d->backing[0])
		snprintf(buf, cap, "/dev/%s (loop device backed by %s)",
			 d->disk, d->backing);
	else if (d->disk[0])
		snprintf(buf, cap, "/dev/%s (%s)", d->disk, desc);
	else if (d->source[0])
		snprintf(buf, cap, "%s (%s)", d->source, desc);
	else
		snprintf(buf, cap, "%u:%u (%s)", d->major, d->minor, desc);
}

void report_disk_human(FILE *out, const struct disk_info *d,
		       const struct disk_result *res)
{
	char dev[1200], w[32], r[32];

	disk_fmt_device(dev, sizeof(dev), d);
	disk_fmt_rate(w, sizeof(w), disk_rate_of(res->bytes, res->write_sec));
	disk_fmt_rate(r, sizeof(r), disk_rate_of(res->bytes, res->read_sec));
	fprintf(out, "Device: %s, file system %s on %s\n", dev,
		d->fstype[0] ? d->fstype : "?", d->mnt[0] ? d->mnt : "?");
	if (!res->read_only)
		fprintf(out, "write %s (%s)\n", w,
			res->write_direct ? "O_DIRECT"
					  : "buffered + fdatasync");
	fprintf(out, "read %s (%s)\n", r,
		res->read_direct ? "O_DIRECT" : "after dropping the cache");
}

void report_disk_progress(FILE *out, enum disk_phase phase, uint64_t done,
			  uint64_t size, double sec, bool tty)
{
	char bytes[32];
	double rate = sec > 0 ? (double)done / sec : 0;

	units_fmt_bytes(bytes, sizeof(bytes), (double)done);
	fprintf(out, "%s%-5s %12s %6.1f s [%8.1f MB/s] %3.0f%%%s",
		tty ? "\r" : "", phase == DISK_PHASE_WRITE ? "write" : "read",
		bytes, sec, rate / 1e6,
		size ? 100.0 * (double)done / (double)size : 100.0,
		tty ? "\033[K" : "\n");
	fflush(out);
}

static cJSON *disk_json_phase(uint64_t bytes, double sec, const char *mode)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "bytes", (double)bytes);
	cJSON_AddNumberToObject(o, "seconds", json_num(sec));
	cJSON_AddNumberToObject(o, "bytes_per_second",
				disk_rate_of(bytes, sec));
	cJSON_AddStringToObject(o, "mode", mode);
	return o;
}

int report_disk_json(FILE *out, const char *path, uint64_t size, uint64_t bs,
		     const struct disk_info *d, const struct disk_result *res,
		     const char *error)
{
	cJSON *root = cJSON_CreateObject(), *dev;
	char devname[80];
	char *text;

	if (!root)
		return -ENOMEM;
	if (d) {
		dev = cJSON_AddObjectToObject(root, "device");
		snprintf(devname, sizeof(devname), "/dev/%s", d->disk);
		if (d->disk[0])
			cJSON_AddStringToObject(dev, "name", devname);
		else
			cJSON_AddNullToObject(dev, "name");
		cJSON_AddStringToObject(dev, "kind", disk_kind_name(d->kind));
		cJSON_AddStringToObject(dev, "description",
					disk_kind_desc(d->kind));
		if (d->backing[0])
			cJSON_AddStringToObject(dev, "backing_file",
						d->backing);
		cJSON_AddStringToObject(dev, "fstype", d->fstype);
		cJSON_AddStringToObject(dev, "mount_point", d->mnt);
		cJSON_AddStringToObject(dev, "source", d->source);
	}
	cJSON_AddStringToObject(root, "path", path);
	cJSON_AddNumberToObject(root, "size", (double)size);
	cJSON_AddNumberToObject(root, "bs", (double)bs);
	if (res && res->read_only) {
		/* a file read: nothing was written */
		cJSON_AddNullToObject(root, "write");
	} else if (res) {
		cJSON_AddItemToObject(
			root, "write",
			disk_json_phase(res->bytes, res->write_sec,
					res->write_direct
						? "O_DIRECT"
						: "buffered+fdatasync"));
	}
	if (res) {
		cJSON_AddItemToObject(
			root, "read",
			disk_json_phase(res->bytes, res->read_sec,
					res->read_direct ? "O_DIRECT"
							 : "fadvise_dontneed"));
	}
	if (error)
		cJSON_AddStringToObject(root, "error", error);
	text = cJSON_Print(root);
	cJSON_Delete(root);
	if (!text)
		return -ENOMEM;
	fprintf(out, "%s\n", text);
	cJSON_free(text);
	return 0;
}

/* ---------------- linerate gen ---------------- */

/* Elapsed time and ETA as pv prints them: M:SS, H:MM:SS past an hour. */
static void fmt_hms(char *buf, size_t cap, double s)
{
	long t = s > 0 && s < 1e8 ? (long)(s + 0.5) : 0;

	if (t >= 3600)
		snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60,
			 t % 60);
	else
		snprintf(buf, cap, "%ld:%02ld", t / 60, t % 60);
}

void report_gen_progress(FILE *out, uint64_t done, uint64_t size, double sec,
			 bool tty)
{
	char bytes[32], el[32], eta[32];
	double rate = sec > 0 ? (double)done / sec : 0;
	double pct = size ? 100.0 * (double)done / (double)size : 100;

	units_fmt_bytes(bytes, sizeof(bytes), (double)done);
	fmt_hms(el, sizeof(el), sec);
	fmt_hms(eta, sizeof(eta), rate > 0 ? (double)(size - done) / rate : 0);
	fprintf(out, "%s%12s %s [%8.1f MB/s] %3.0f%% ETA %s%s", tty ? "\r" : "",
		bytes, el, rate / 1e6, pct, eta, tty ? "\033[K" : "\n");
	fflush(out);
}

/* ---------------- linerate send / get / recv ---------------- */

struct report_xfer {
	FILE *out;
	enum report_format fmt;
	bool quiet, tty;
	const char *verb; /* "sent" or "received" */
	int64_t last_plain_ms;
	bool line_open; /* a progress line waits for its end */
	pthread_mutex_t lock;
};

struct report_xfer *report_xfer_new(FILE *out, enum report_format fmt,
				    bool quiet, bool tty, const char *verb)
{
	struct report_xfer *rx = calloc(1, sizeof(*rx));

	if (!rx)
		return NULL;
	rx->out = out;
	rx->fmt = fmt;
	rx->quiet = quiet;
	rx->tty = tty;
	rx->verb = verb;
	pthread_mutex_init(&rx->lock, NULL);
	return rx;
}

void report_xfer_free(struct report_xfer *rx)
{
	if (!rx)
		return;
	pthread_mutex_destroy(&rx->lock);
	free(rx);
}

/* Decimal MB/s as pv and rsync users read it. */
static void fmt_mbs(char *buf, size_t cap, double bytes_per_sec)
{
	if (bytes_per_sec >= 1e9)
		snprintf(buf, cap, "%.2f GB/s", bytes_per_sec / 1e9);
	else
		snprintf(buf, cap, "%.1f MB/s", bytes_per_sec / 1e6);
}

static void json_line(FILE *out, cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);

	if (s) {
		fprintf(out, "%s\n", s);
		fflush(out);
		free(s);
	}
	cJSON_Delete(o);
}

static cJSON *progress_json(const char *event, const struct xfer_progress *p)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "event", event);
	add_num(o, "bytes_done", (double)p->bytes_done);
	if (p->total_known)
		add_num(o, "bytes_total", (double)p->bytes_total);
	add_num(o, "files_done", (double)p->files_done);
	add_num(o, "files_total", (double)p->files_total);
	add_num(o, "seconds", p->elapsed);
	add_num(o, "bytes_per_second", p->rate_now);
	return o;
}

static void progress_human(struct report_xfer *rx,
			   const struct xfer_progress *p)
{
	char done[32], total[32], now[32], avg[32], eta[16], el[16];
	double avg_bps = p->elapsed > 0 ? (double)p->bytes_done / p->elapsed
					: 0;

	units_fmt_bytes(done, sizeof(done), (double)p->bytes_done);
	fmt_mbs(now, sizeof(now), p->rate_now);
	fmt_mbs(avg, sizeof(avg), avg_bps);
	fmt_hms(el, sizeof(el), p->elapsed);
	if (p->total_known) {
		double pct = p->bytes_total ? 100.0 * (double)p->bytes_done /
						      (double)p->bytes_total
					    : 100.0;

		units_fmt_bytes(total, sizeof(total), (double)p->bytes_total);
		if (avg_bps > 0)
			fmt_hms(eta, sizeof(eta),
				(double)(p->bytes_total - p->bytes_done) /
					avg_bps);
		else
			snprintf(eta, sizeof(eta), "-:--");
		fprintf(rx->out,
			"%s%10s / %-10s %3.0f%%  %11s  avg %11s  ETA %s  "
			"%s  files %llu/%llu%s",
			rx->tty ? "\r" : "", done, total, pct, now, avg, eta,
			el, (unsigned long long)p->files_done,
			(unsigned long long)p->files_total,
			rx->tty ? "\033[K" : "\n");
	} else {
		fprintf(rx->out, "%s%10s  %11s  avg %11s  %s%s",
			rx->tty ? "\r" : "", done, now, avg, el,
			rx->tty ? "\033[K" : "\n");
	}
	rx->line_open = rx->tty;
	fflush(rx->out);
}

static void xfer_event_cb(void *ctx, const struct xfer_event *ev)
{
	struct report_xfer *rx = ctx;
	cJSON *o;

	if (rx->quiet)
		return;
	pthread_mutex_lock(&rx->lock);
	if (rx->fmt != REPORT_HUMAN) {
		switch (ev->kind) {
		case XFER_EV_START:
			json_line(rx->out, progress_json("start", &ev->p));
			break;
		case XFER_EV_PROGRESS:
			json_line(rx->out, progress_json("progress", &ev->p));
			break;
		case XFER_EV_FILE:
			o = cJSON_CreateObject();
			if (!o)
				break;
			cJSON_AddStringToObject(o, "event", "file");
			cJSON_AddStringToObject(o, "path", ev->path);
			add_num(o, "size",
				ev->size == UINT64_MAX ? -1 : (double)ev->size);
			cJSON_AddStringToObject(o, "status",
						!ev->ok	      ? "failed"
						: ev->skipped ? "skipped"
							      : "done");
			if (ev->reason)
				cJSON_AddStringToObject(o, "error", ev->reason);
			json_line(rx->out, o);
			break;
		case XFER_EV_END: break;
		}
		pthread_mutex_unlock(&rx->lock);
		return;
	}
	switch (ev->kind) {
	case XFER_EV_START: rx->last_plain_ms = 0; break;
	case XFER_EV_PROGRESS:
		if (!rx->tty) {
			/* one plain line every few seconds in a log */
			int64_t ms = (int64_t)(ev->p.elapsed * 1000);

			if (ms - rx->last_plain_ms < 5000)
				break;
			rx->last_plain_ms = ms;
		}
		progress_human(rx, &ev->p);
		break;
	case XFER_EV_FILE:
		if (!ev->ok) {
			if (rx->line_open)
				fputc('\n', rx->out);
			rx->line_open = false;
			fprintf(rx->out, "linerate: %s: %s\n", ev->path,
				ev->reason ? ev->reason : "failed");
		}
		break;
	case XFER_EV_END:
		if (rx->tty || ev->p.elapsed >= 5) {
			struct xfer_progress p = ev->p;

			/* the last line: the average, not the last instant */
			p.rate_now = p.elapsed > 0
					     ? (double)p.bytes_done / p.elapsed
					     : 0;
			progress_human(rx, &p);
		}
		if (rx->line_open)
			fputc('\n', rx->out);
		rx->line_open = false;
		break;
	}
	fflush(rx->out);
	pthread_mutex_unlock(&rx->lock);
}

void report_xfer_callbacks(struct report_xfer *rx, struct xfer_callbacks *cb)
{
	cb->ctx = rx;
	cb->event = xfer_event_cb;
}

void report_xfer_end(struct report_xfer *rx, const struct xfer_result *res,
		     uint64_t link_speed_bps, const char *error)
{
	uint64_t speed = link_speed_bps ? link_speed_bps : res->link_speed_bps;
	double bps = res->seconds > 0 ? (double)res->bytes / res->seconds : 0;
	double ceiling = xfer_ceiling_bps(res, link_speed_bps) / 8.0;
	double share = 0;
	const char *neck = xfer_bottleneck(res, &share);
	char b1[32], b2[32], b3[32], b4[32];
	cJSON *o;

	if (rx->fmt != REPORT_HUMAN) {
		o = cJSON_CreateObject();
		if (!o)
			return;
		cJSON_AddStringToObject(o, "event", "end");
		cJSON_AddBoolToObject(o, "ok", !error);
		if (error)
			cJSON_AddStringToObject(o, "error", error);
		add_num(o, "bytes", (double)res->bytes);
		add_num(o, "bytes_already_held", (double)res->bytes_held);
		add_num(o, "seconds", json_num(res->seconds));
		add_num(o, "bytes_per_second", json_num(bps));
		add_num(o, "files_ok", (double)res->files_ok);
		add_num(o, "files_failed", (double)res->files_failed);
		add_num(o, "files_skipped", (double)res->files_skipped);
		add_num(o, "streams", res->streams);
		add_num(o, "chunk_size", res->chunk_size);
		cJSON_AddStringToObject(
			o, "cipher",
			res->authenticated ? crypto_cipher_name(res->cipher)
					   : "none");
		if (ceiling > 0) {
			add_num(o, "link_speed_bps", (double)speed);
			add_num(o, "tcp_ceiling_bytes_per_second", ceiling);
			add_num(o, "percent_of_ceiling", 100.0 * bps / ceiling);
		}
		if (!error || res->seconds > 0) {
			cJSON_AddStringToObject(o, "limited_by", neck);
			add_num(o, "limited_by_share", json_num(share));
		}
		json_line(rx->out, o);
		return;
	}
	if (error) {
		fprintf(rx->out, "linerate: error - ");
		report_escaped(rx->out, error);
		fputc('\n', rx->out);
		if (!res->seconds)
			return;
	}
	if (rx->quiet && !error)
		return;
	units_fmt_bytes(b1, sizeof(b1), (double)res->bytes);
	fmt_mbs(b2, sizeof(b2), bps);
	fprintf(rx->out, "%s %s in %.2f s: %s", rx->verb, b1, res->seconds, b2);
	if (ceiling > 0) {
		fmt_mbs(b4, sizeof(b4), ceiling);
		fprintf(rx->out, " (%.1f%% of the %s link's TCP ceiling, %s)",
			100.0 * bps / ceiling,
			units_fmt_rate(b3, sizeof(b3), (double)speed), b4);
	}
	fprintf(rx->out, "; %llu file%s", (unsigned long long)res->files_ok,
		res->files_ok == 1 ? "" : "s");
	if (res->files_skipped)
		fprintf(rx->out, ", %llu up to date",
			(unsigned long long)res->files_skipped);
	if (res->files_failed)
		fprintf(rx->out, ", %llu FAILED",
			(unsigned long long)res->files_failed);
	if (res->bytes_held) {
		units_fmt_bytes(b1, sizeof(b1), (double)res->bytes_held);
		fprintf(rx->out, ", %s already there", b1);
	}
	fprintf(rx->out, "; %s, %u stream%s\n",
		res->authenticated ? crypto_cipher_name(res->cipher) : "none",
		res->streams, res->streams == 1 ? "" : "s");
	if (res->seconds > 0.2)
		fprintf(rx->out, "limited by: %s (%.0f%% of the time)\n", neck,
			100.0 * share);
	fflush(rx->out);
}

/* ---------------- linerate doctor ---------------- */

static const char *const doctor_stage_names[DOCTOR_NSTAGES] = {
	[DOCTOR_SOURCE] = "source read",
	[DOCTOR_NET] = "network, to the server",
	[DOCTOR_NET_BACK] = "network, from the server",
	[DOCTOR_CIPHER] = "cipher (both CPUs)",
	[DOCTOR_DEST] = "destination write",
};

static const char *const doctor_stage_keys[DOCTOR_NSTAGES] = {
	[DOCTOR_SOURCE] = "source_read",       [DOCTOR_NET] = "network",
	[DOCTOR_NET_BACK] = "network_reverse", [DOCTOR_CIPHER] = "cipher",
	[DOCTOR_DEST] = "destination_write",
};

static void doctor_side_human(FILE *out, const char *who,
			      const struct doctor_side *s)
{
	const struct proto_probe_result *p = &s->p;

	fprintf(out, "  %-10s ", who);
	report_escaped(out, p->model);
	fprintf(out, ", %.2f cores usable, governor %s, AES %s, %s\n", s->cores,
		p->governor[0] ? p->governor : "unknown", p->aes ? "yes" : "no",
		p->cc[0] ? p->cc : "?");
	fprintf(out,
		"  %-10s socket buffers: rmem_max %u, tcp_rmem max %u, "
		"wmem_max %u, tcp_wmem max %u\n",
		"", p->sockbuf[0], p->sockbuf[2], p->sockbuf[1], p->sockbuf[3]);
	if (p->storage[0]) {
		fprintf(out, "  %-10s storage: ", "");
		report_escaped(out, p->storage);
		fputc('\n', out);
	}
}

void report_doctor_human(FILE *out, const struct doctor_report *r)
{
	char b[32];
	unsigned i;

	fprintf(out, "Stage                         MB/s\n");
	for (i = 0; i < DOCTOR_NSTAGES; i++) {
		const struct doctor_stage *s = &r->stage[i];

		fprintf(out, "  %-26s ", doctor_stage_names[i]);
		if (s->measured)
			fprintf(out, "%8.1f", s->bps / 1e6);
		else
			fprintf(out, "%8s", "-");
		if ((int)i == r->bottleneck)
			fprintf(out, "  <- limits");
		if (s->detail[0]) {
			fprintf(out, "  (");
			report_escaped(out, s->detail);
			fputc(')', out);
		} else if (i == DOCTOR_SOURCE && !s->measured) {
			fprintf(out, "  (");
			report_escaped(out, r->source_desc);
			fputc(')', out);
		}
		fputc('\n', out);
	}
	if (r->xfer_done)
		fprintf(out, "  %-26s %8.1f\n", "a transfer",
			r->xfer_bps / 1e6);
	fputc('\n', out);
	if (r->bottleneck >= 0 && r->xfer_done) {
		double lim = r->limit_bps;

		fprintf(out, "Limited by ");
		report_escaped(out, r->bottleneck_label);
		fprintf(out, ": %.1f MB/s; transfer %.1f MB/s, %.0f%%\n",
			lim / 1e6, r->xfer_bps / 1e6, 100.0 * r->xfer_share);
	}
	fprintf(out, "\nFacts\n");
	if (r->link_known) {
		fprintf(out, "  link       %s: %s", r->link.ifname,
			r->link.wireless     ? "Wi-Fi"
			: r->link.virtual_if ? "virtual (no physical speed)"
					     : "Ethernet");
		if (r->link.speed_bps)
			fprintf(out, ", %s",
				units_fmt_rate(b, sizeof(b),
					       (double)r->link.speed_bps));
		if (r->link.duplex[0])
			fprintf(out, " %s duplex", r->link.duplex);
		fprintf(out, ", MTU %u", r->link.mtu);
		if (r->ceiling_bps > 0)
			fprintf(out, ", TCP ceiling %.1f MB/s",
				r->ceiling_bps / 1e6);
		fputc('\n', out);
	}
	if (r->rtt_us) {
		fprintf(out, "  path       RTT %.2f ms", r->rtt_us / 1000.0);
		if (r->bdp_bytes > 0)
			fprintf(out, ", bandwidth-delay product %.0f bytes",
				r->bdp_bytes);
		fputc('\n', out);
	}
	doctor_side_human(out, "this side", &r->local);
	doctor_side_human(out, "server", &r->remote);
	if (r->remote.p.disk_error[0]) {
		fprintf(out, "  destination disk test: ");
		report_escaped(out, r->remote.p.disk_error);
		fputc('\n', out);
	}
	if (r->nadvice) {
		fprintf(out, "\nAdvice\n");
		for (i = 0; i < r->nadvice; i++) {
			fprintf(out, "  - ");
			report_escaped(out, r->advice[i]);
			fputc('\n', out);
		}
	}
	fflush(out);
}

static cJSON *doctor_side_json(const struct doctor_side *s)
{
	const struct proto_probe_result *p = &s->p;
	cJSON *o = cJSON_CreateObject(), *rates;
	unsigned i;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "cpu_model", p->model);
	add_num(o, "cores_usable", s->cores);
	cJSON_AddStringToObject(o, "governor", p->governor);
	cJSON_AddBoolToObject(o, "aes", p->aes);
	cJSON_AddStringToObject(o, "congestion_control", p->cc);
	add_num(o, "rmem_max", p->sockbuf[0]);
	add_num(o, "wmem_max", p->sockbuf[1]);
	add_num(o, "tcp_rmem_max", p->sockbuf[2]);
	add_num(o, "tcp_wmem_max", p->sockbuf[3]);
	cJSON_AddStringToObject(o, "storage", p->storage);
	rates = cJSON_AddArrayToObject(o, "cipher_per_core");
	for (i = 0; rates && i < p->nrates; i++) {
		cJSON *c = cJSON_CreateObject();

		if (!c)
			break;
		cJSON_AddStringToObject(
			c, "cipher",
			crypto_cipher_name(
				(enum crypto_cipher)p->rates[i].cipher));
		add_num(c, "seal_bytes_per_second", (double)p->rates[i].seal);
		add_num(c, "open_bytes_per_second", (double)p->rates[i].open);
		cJSON_AddItemToArray(rates, c);
	}
	return o;
}

void report_doctor_json(FILE *out, const struct doctor_report *r,
			const char *error)
{
	cJSON *o = cJSON_CreateObject(), *st, *adv;
	char *s;
	unsigned i;

	if (!o)
		return;
	if (error)
		cJSON_AddStringToObject(o, "error", error);
	st = cJSON_AddObjectToObject(o, "stages");
	for (i = 0; st && i < DOCTOR_NSTAGES; i++) {
		const struct doctor_stage *g = &r->stage[i];
		cJSON *c;

		if (!g->measured)
			continue;
		c = cJSON_AddObjectToObject(st, doctor_stage_keys[i]);
		if (!c)
			break;
		add_num(c, "bytes_per_second", json_num(g->bps));
		cJSON_AddStringToObject(c, "detail", g->detail);
		if (i == DOCTOR_NET || i == DOCTOR_NET_BACK)
			cJSON_AddBoolToObject(c, "cpu_bound", g->cpu_bound);
	}
	if (r->xfer_done) {
		cJSON *x = cJSON_AddObjectToObject(o, "transfer");

		if (x) {
			add_num(x, "bytes", (double)r->xfer_bytes);
			add_num(x, "bytes_per_second", json_num(r->xfer_bps));
		}
	}
	if (r->bottleneck >= 0) {
		cJSON *b = cJSON_AddObjectToObject(o, "bottleneck");

		if (b) {
			cJSON_AddStringToObject(
				b, "stage", doctor_stage_keys[r->bottleneck]);
			cJSON_AddStringToObject(b, "label",
						r->bottleneck_label);
			add_num(b, "transfer_share", json_num(r->xfer_share));
			add_num(b, "bytes_per_second", json_num(r->limit_bps));
		}
	}
	cJSON_AddStringToObject(o, "source", r->source_desc);
	cJSON_AddStringToObject(o, "cipher", crypto_cipher_name(r->cipher));
	add_num(o, "streams", r->streams);
	if (r->link_known) {
		cJSON *l = cJSON_AddObjectToObject(o, "link");

		if (l) {
			cJSON_AddStringToObject(l, "interface", r->link.ifname);
			cJSON_AddStringToObject(l, "kind",
						r->link.wireless ? "wifi"
						: r->link.virtual_if
							? "virtual"
							: "ethernet");
			add_num(l, "speed_bps", (double)r->link.speed_bps);
			add_num(l, "mtu", r->link.mtu);
			cJSON_AddStringToObject(l, "duplex", r->link.duplex);
			add_num(l, "tcp_ceiling_bytes_per_second",
				json_num(r->ceiling_bps));
		}
	}
	add_num(o, "rtt_us", r->rtt_us);
	add_num(o, "bdp_bytes", json_num(r->bdp_bytes));
	cJSON_AddItemToObject(o, "local", doctor_side_json(&r->local));
	cJSON_AddItemToObject(o, "server", doctor_side_json(&r->remote));
	if (r->remote.p.disk_error[0])
		cJSON_AddStringToObject(o, "destination_disk_error",
					r->remote.p.disk_error);
	adv = cJSON_AddArrayToObject(o, "advice");
	for (i = 0; adv && i < r->nadvice; i++)
		cJSON_AddItemToArray(adv, cJSON_CreateString(r->advice[i]));
	s = cJSON_Print(o);
	if (s) {
		fprintf(out, "%s\n", s);
		free(s);
	}
	cJSON_Delete(o);
	fflush(out);
}
