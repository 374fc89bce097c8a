// SPDX-License-Identifier: MIT
/* bench: connecting, and the start block. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <time.h>

#include "config.h"
#include "core/cipher.h"
#include "report_int.h"
#include "banned.h"

void report__cb_connecting(void *ctx, const char *host, uint16_t port)
{
	struct report *rp = ctx;

	if (rp->fmt == REPORT_HUMAN) {
		report__print(rp, "Connecting to host %s, port %u\n", host,
			      port);
		fflush(rp->out);
	}
}

static cJSON *start_json(const struct bench_result *res)
{
	cJSON *start = cJSON_CreateObject(), *conn, *o, *ts, *tst;
	char host[NET_ADDRSTR], tbuf[64];
	struct utsname un;
	struct tm tm;
	time_t now = (time_t)res->start_time;
	uint16_t port;
	unsigned i;

	conn = cJSON_AddArrayToObject(start, "connected");
	for (i = 0; i < res->nstreams; i++) {
		const struct bench_stream_result *s = &res->streams[i];

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
	cJSON_AddStringToObject(start, "cookie", res->cookie);
	/* iperf3 names the MSS "tcp_mss" when -M set it */
	if (!res->req.udp && res->req.mss)
		cJSON_AddNumberToObject(start, "tcp_mss", res->req.mss);
	else if (!res->req.udp)
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

void report__cb_started(void *ctx, const struct bench_result *res)
{
	struct report *rp = ctx;
	char host[NET_ADDRSTR], rhost[NET_ADDRSTR];
	uint16_t port, rport;
	unsigned i;

	rp->nstreams = res->nstreams;
	rp->mode = res->req.mode;
	rp->bidir = res->req.mode == BENCH_MODE_BIDIR;
	rp->udp = res->req.udp;
	if (res->title[0] && !rp->title[0])
		report_set_title(rp, res->title);
	rp->dirs = calloc(res->nstreams, 1);
	rp->local_sender = calloc(res->nstreams, sizeof(bool));
	for (i = 0; rp->dirs && rp->local_sender && i < res->nstreams; i++) {
		rp->dirs[i] = res->streams[i].dir;
		rp->local_sender[i] = res->streams[i].local_sender;
		rp->any_sender = rp->any_sender || rp->local_sender[i];
	}
	if (rp->fmt == REPORT_JSON) {
		rp->start = start_json(res);
		cJSON_AddItemToObject(rp->root, "start", rp->start);
		rp->intervals = cJSON_AddArrayToObject(rp->root, "intervals");
		return;
	}
	if (rp->fmt == REPORT_JSON_STREAM) {
		report__emit_stream_event(rp, "start", start_json(res));
		return;
	}
	if (res->req.mode == BENCH_MODE_REVERSE)
		report__print(rp, "Reverse mode, remote host %s is sending\n",
			      res->remote_host);
	for (i = 0; i < res->nstreams; i++) {
		const struct bench_stream_result *s = &res->streams[i];

		net_addr_host((const struct sockaddr *)&s->local.ss, host,
			      sizeof(host), &port);
		net_addr_host((const struct sockaddr *)&s->peer.ss, rhost,
			      sizeof(rhost), &rport);
		report__print(rp,
			      "[%3u]%s local %s port %u connected to %s "
			      "port %u\n",
			      i + 1, report__role_tag(rp, i), host, port, rhost,
			      rport);
	}
	fflush(rp->out);
}

void report_verbose_system(FILE *out)
{
	struct utsname u;
	char when[64];
	time_t now = time(NULL);
	struct tm tm;

	fprintf(out, "linerate %s (%s)\n", LINERATE_VERSION,
		crypto_library_version());
	if (!uname(&u))
		fprintf(out, "%s %s %s %s %s\n", u.sysname, u.nodename,
			u.release, u.version, u.machine);
	if (gmtime_r(&now, &tm) &&
	    strftime(when, sizeof(when), "%a, %d %b %Y %H:%M:%S GMT", &tm))
		fprintf(out, "Time: %s\n", when);
	fflush(out);
}

void report_bench_verbose(FILE *out, const struct proto_test_request *q,
			  bool iperf3)
{
	static const char *const modes[] = { "forward", "reverse",
					     "bidirectional" };

	report_verbose_system(out);
	fprintf(out,
		"Starting Test: protocol: %s, %u streams, %u byte blocks, "
		"omitting %g seconds, ",
		q->udp ? "UDP" : "TCP", (unsigned)q->streams,
		(unsigned)q->blksize, (double)q->omit_ms / 1000.0);
	if (q->bytes)
		fprintf(out, "%llu bytes to send",
			(unsigned long long)q->bytes);
	else
		fprintf(out, "%g second test", (double)q->duration_ms / 1000.0);
	fprintf(out, ", %s, %s server\n", q->mode < 3 ? modes[q->mode] : "?",
		iperf3 ? "iperf3" : "linerate");
	fflush(out);
}
