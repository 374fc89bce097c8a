// SPDX-License-Identifier: MIT
/* bench: the end, as iperf3's text has it. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/units.h"
#include "report_int.h"
#include "banned.h"

static void human_total_line(struct report *rp, const char *id, const char *tag,
			     const struct bench_side *d, bool sender,
			     const char *what)
{
	char tb[32], rb[32];

	report__print(rp, "[%s]%s %6.2f-%-6.2f sec  %s  %s", id, tag, 0.0,
		      d->seconds,
		      units_fmt_bytes(tb, sizeof(tb), (double)d->bytes),
		      report__fmt_rate(rb, sizeof(rb),
				       report__rate(d->bytes, d->seconds)));
	if (rp->udp) {
		/* iperf3: the sender's line has no jitter or loss, its
		 * total is what it sent */
		uint64_t tot = d->packets;

		if (sender)
			report__print(rp, "  %5.3f ms  %d/%llu (%.2g%%)  %s\n",
				      0.0, 0, (unsigned long long)d->packets,
				      0.0, what);
		else
			report__print(rp,
				      "  %5.3f ms  %llu/%llu (%.2g%%)  %s\n",
				      d->jitter_ms, (unsigned long long)d->lost,
				      (unsigned long long)tot,
				      report__pct(d->lost, tot), what);
		if (!sender)
			report__human_ooo_line(rp, id, tag, 0.0, d->seconds,
					       d->ooo, d->dup);
		return;
	}
	if (sender)
		report__print(rp, "  %4u", d->retrans);
	else
		report__print(rp, "      ");
	report__print(rp, "             %s\n", what);
}

/* The table of totals: a sender and a receiver line per stream, then the
 * sums per direction; rcv gets the receivers' sums. */
static void human_totals(struct report *rp, const struct bench_result *res,
			 struct sums rcv[2])
{
	struct sums snd[2] = { 0 };
	unsigned i;
	char id[8];
	int k;

	if (!rp->sep_done)
		report__print(rp, "%s", SEP);
	report__print(rp,
		      "[ ID]%s Interval           Transfer     Bitrate"
		      "         %s\n",
		      rp->bidir ? "[Role]" : "",
		      rp->udp ? "Jitter    Lost/Total Datagrams" : "Retr");
	for (i = 0; i < res->nstreams; i++) {
		const struct bench_stream_result *s = &res->streams[i];

		snprintf(id, sizeof(id), "%3u", i + 1);
		human_total_line(rp, id, report__role_tag(rp, i), &s->sender,
				 true, "sender");
		human_total_line(rp, id, report__role_tag(rp, i), &s->receiver,
				 false, "receiver");
		k = report__dir_slot(res, s->dir);
		report__sum_add(&snd[k], &s->sender);
		report__sum_add(&rcv[k], &s->receiver);
	}
	if (res->req.streams <= 1)
		return;
	for (k = 0; k < (rp->bidir ? 2 : 1); k++) {
		struct bench_side ds = report__sums_side(&snd[k]);
		struct bench_side dr = report__sums_side(&rcv[k]);
		/* k 0 is the client's sending direction */
		const char *tag = report__role(rp, (k == 0) != rp->server_side);

		human_total_line(rp, "SUM", tag, &ds, true, "sender");
		human_total_line(rp, "SUM", tag, &dr, false, "receiver");
	}
}

/* Both ends' CPU, and TCP's congestion control. */
static void human_cpu(struct report *rp, const struct bench_result *res)
{
	const struct proto_cpu *l = &res->local_cpu, *r = &res->remote_cpu;

	report__print(
		rp,
		"CPU Utilization: local %.1f%% (%.1f%%u/%.1f%%s), "
		"remote %.1f%% (%.1f%%u/%.1f%%s); %.2f + %.2f CPU seconds\n",
		report__cpu_pct(l->user_us + l->sys_us, l->wall_us),
		report__cpu_pct(l->user_us, l->wall_us),
		report__cpu_pct(l->sys_us, l->wall_us),
		report__cpu_pct(r->user_us + r->sys_us, r->wall_us),
		report__cpu_pct(r->user_us, r->wall_us),
		report__cpu_pct(r->sys_us, r->wall_us),
		(double)(l->user_us + l->sys_us) / 1e6,
		(double)(r->user_us + r->sys_us) / 1e6);
	if (!res->req.udp)
		report__print(rp,
			      "TCP congestion control: local %s, remote %s\n",
			      res->local_cc[0] ? res->local_cc : "?",
			      res->remote_cc[0] ? res->remote_cc : "?");
}

/* The local link and how much of its TCP ceiling the receivers got (a
 * paced UDP test: the ceiling says nothing about it). */
static void human_link(struct report *rp, const struct bench_result *res,
		       const struct sums rcv[2])
{
	char rb[32], cb[32];
	int k;

	if (res->req.udp)
		return;
	if (res->link_ceiling_bps > 0) {
		for (k = 0; k < (rp->bidir ? 2 : 1); k++)
			report__print(
				rp,
				"Link %s%s: %s, MTU %u, TCP ceiling "
				"%s; %sreceived %.1f%% of it\n",
				res->link_if[0] ? res->link_if : "?",
				res->link_wireless ? " (Wi-Fi)" : "",
				units_fmt_rate(rb, sizeof(rb),
					       (double)res->link_speed_bps),
				res->link_mtu,
				report__fmt_rate(cb, sizeof(cb),
						 res->link_ceiling_bps),
				rp->bidir ? (k ? "reverse " : "forward ") : "",
				100.0 *
					report__rate(rcv[k].bytes,
						     rcv[k].seconds) /
					res->link_ceiling_bps);
	} else if (res->link_known) {
		report__print(rp,
			      "Link %s: %s, speed not known (--link-speed "
			      "RATE gives the TCP ceiling)\n",
			      res->link_if,
			      res->link_virtual ? (strcmp(res->link_if, "lo")
							   ? "virtual interface"
							   : "loopback")
						: "physical interface");
	}
}

/* What protected the test, and what else the reader should know. */
static void human_security(struct report *rp, const struct bench_result *res)
{
	if (res->iperf3)
		report__print(rp, "Security: none (iperf3 protocol: not "
				  "authenticated, not encrypted)\n");
	else if (!res->authenticated)
		report__print(rp,
			      "Security: none (no token: not authenticated, "
			      "not encrypted)\n");
	else if (res->req.udp)
		report__print(rp, "Security: authenticated with the token; UDP "
				  "datagrams in clear (random test data)\n");
	else if (res->cipher == CRYPTO_NONE)
		report__print(rp, "Security: authenticated with the token; "
				  "data in clear (--cipher none)\n");
	else
		report__print(rp,
			      "Security: authenticated with the token; "
			      "data encrypted with %s\n",
			      crypto_cipher_name(res->cipher));
	if (res->truncated)
		report__print(rp, "Note: stopped at the server's time limit "
				  "before all bytes were sent\n");
	if (res->overlap)
		report__print(rp,
			      "Note: %u other test%s ran on the server during "
			      "this one and shared its CPU and link\n",
			      res->overlap, res->overlap == 1 ? "" : "s");
}

/* As iperf3 --get-server-output: the peer's own text, not prefixed with
 * the title; a -J server's document formatted, as iperf3 prints it. */
static void human_server_output(struct report *rp,
				const struct bench_result *res)
{
	if (!res->server_output)
		return;
	report__print(rp, "\n");
	if (res->server_output_json) {
		cJSON *doc = cJSON_Parse(res->server_output);
		char *pretty = doc ? cJSON_Print(doc) : NULL;

		fputs("Server JSON output:\n", rp->out);
		report__text_out(rp->out, pretty ? pretty : res->server_output);
		free(pretty);
		cJSON_Delete(doc);
	} else {
		fputs("Server output:\n", rp->out);
		report__text_out(rp->out, res->server_output);
	}
	fputc('\n', rp->out);
	rp->bol = true;
}

void report__human_end(struct report *rp, const struct bench_result *res)
{
	struct sums rcv[2] = { 0 };

	human_totals(rp, res, rcv);
	human_cpu(rp, res);
	human_link(rp, res, rcv);
	human_security(rp, res);
	human_server_output(rp, res);
	report__print(rp, "\nlinerate Done.\n");
	fflush(rp->out);
}
