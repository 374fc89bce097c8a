// SPDX-License-Identifier: MIT
/* bench: the end, as iperf3's JSON has it. */
#include <stdbool.h>
#include <stdint.h>

#include "report_int.h"
#include "banned.h"

void report__sum_add(struct sums *s, const struct bench_side *d)
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
struct bench_side report__sums_side(const struct sums *s)
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
int report__dir_slot(const struct bench_result *res, uint8_t dir)
{
	return res->req.mode == BENCH_MODE_BIDIR && dir == BENCH_DIR_S2C;
}

static cJSON *side_json(unsigned id, const struct bench_side *d,
			bool local_sender, bool sender_side)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "socket", id);
	cJSON_AddNumberToObject(o, "start", 0);
	report__add_num(o, "end", d->seconds);
	report__add_num(o, "seconds", d->seconds);
	cJSON_AddNumberToObject(o, "bytes", (double)d->bytes);
	report__add_num(o, "bits_per_second",
			report__rate(d->bytes, d->seconds));
	if (sender_side) {
		cJSON_AddNumberToObject(o, "retransmits", d->retrans);
		cJSON_AddNumberToObject(o, "max_snd_cwnd", d->max_cwnd);
		cJSON_AddNumberToObject(o, "max_snd_wnd", d->max_snd_wnd);
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

	report__add_num(o, "jitter_ms", sender_side ? 0 : d->jitter_ms);
	cJSON_AddNumberToObject(o, "lost_packets",
				sender_side ? 0 : (double)d->lost);
	cJSON_AddNumberToObject(o, "packets",
				(double)(sender_side ? d->packets : tot));
	report__add_num(o, "lost_percent",
			sender_side ? 0 : report__pct(d->lost, tot));
}

static cJSON *sum_json(const struct sums *s, bool sender_side,
		       bool local_sender, bool udp)
{
	cJSON *o = cJSON_CreateObject();
	struct bench_side d = report__sums_side(s);

	cJSON_AddNumberToObject(o, "start", 0);
	report__add_num(o, "end", s->seconds);
	report__add_num(o, "seconds", s->seconds);
	cJSON_AddNumberToObject(o, "bytes", (double)s->bytes);
	report__add_num(o, "bits_per_second",
			report__rate(s->bytes, s->seconds));
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
	report__add_num(o, "end", mine->seconds);
	report__add_num(o, "seconds", mine->seconds);
	cJSON_AddNumberToObject(o, "bytes", (double)mine->bytes);
	report__add_num(o, "bits_per_second",
			report__rate(mine->bytes, mine->seconds));
	report__add_num(o, "jitter_ms", rcv->jitter_ms);
	cJSON_AddNumberToObject(o, "lost_packets", (double)rcv->lost);
	cJSON_AddNumberToObject(o, "packets",
				(double)(local_sender ? snd->packets : tot));
	report__add_num(o, "lost_percent", report__pct(rcv->lost, tot));
	if (with_ooo) {
		cJSON_AddNumberToObject(o, "out_of_order", (double)rcv->ooo);
		cJSON_AddNumberToObject(o, "duplicates", (double)rcv->dup);
	}
	cJSON_AddBoolToObject(o, "sender", local_sender);
	return o;
}

double report__cpu_pct(uint64_t us, uint64_t wall_us)
{
	return wall_us ? 100.0 * (double)us / (double)wall_us : 0.0;
}

static bool local_sends(uint8_t dir)
{
	return dir == BENCH_DIR_C2S;
}

/* end.streams: each stream's sender and receiver (UDP: one object); the
 * sums per direction into snd and rcv. */
static void end_streams(cJSON *end, const struct bench_result *res,
			struct sums snd[2], struct sums rcv[2])
{
	cJSON *arr = cJSON_AddArrayToObject(end, "streams"), *o;
	unsigned i;
	int k;

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
		k = report__dir_slot(res, s->dir);
		report__sum_add(&snd[k], &s->sender);
		report__sum_add(&rcv[k], &s->receiver);
	}
}

/* end.sum (UDP), sum_sent, sum_received, and their _bidir_reverse. */
static void end_sums(cJSON *end, const struct bench_result *res,
		     const struct sums snd[2], const struct sums rcv[2])
{
	int k;

	for (k = 0; k < (res->req.mode == BENCH_MODE_BIDIR ? 2 : 1); k++) {
		bool ls = res->req.mode == BENCH_MODE_FORWARD ||
			  (res->req.mode == BENCH_MODE_BIDIR && k == 0);

		if (res->req.udp) {
			struct bench_side ds = report__sums_side(&snd[k]);
			struct bench_side dr = report__sums_side(&rcv[k]);

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
}

/* end.cpu_utilization_percent, and the congestion control of each side
 * (UDP: none to name). */
static void end_cpu(cJSON *end, const struct bench_result *res)
{
	const struct proto_cpu *l = &res->local_cpu, *r = &res->remote_cpu;
	cJSON *cpu = cJSON_AddObjectToObject(end, "cpu_utilization_percent");
	bool rev = res->req.mode == BENCH_MODE_REVERSE;

	report__add_num(cpu, "host_total",
			report__cpu_pct(l->user_us + l->sys_us, l->wall_us));
	report__add_num(cpu, "host_user",
			report__cpu_pct(l->user_us, l->wall_us));
	report__add_num(cpu, "host_system",
			report__cpu_pct(l->sys_us, l->wall_us));
	report__add_num(cpu, "remote_total",
			report__cpu_pct(r->user_us + r->sys_us, r->wall_us));
	report__add_num(cpu, "remote_user",
			report__cpu_pct(r->user_us, r->wall_us));
	report__add_num(cpu, "remote_system",
			report__cpu_pct(r->sys_us, r->wall_us));
	if (res->req.udp)
		return;
	cJSON_AddStringToObject(end, "sender_tcp_congestion",
				rev ? res->remote_cc : res->local_cc);
	cJSON_AddStringToObject(end, "receiver_tcp_congestion",
				rev ? res->local_cc : res->remote_cc);
}

/* end.linerate: what iperf3 does not have, the link among it. */
static void end_linerate(cJSON *end, const struct bench_result *res,
			 const struct sums rcv[2])
{
	cJSON *lr = cJSON_AddObjectToObject(end, "linerate"), *link;

	cJSON_AddStringToObject(lr, "server_version", res->server_software);
	cJSON_AddBoolToObject(lr, "iperf3_server", res->iperf3);
	cJSON_AddNumberToObject(lr, "overlapping_tests", res->overlap);
	cJSON_AddBoolToObject(lr, "truncated", res->truncated);
	cJSON_AddBoolToObject(lr, "authenticated", res->authenticated);
	/* the MSS in use (TCP_INFO), also when -M asked for one */
	if (!res->req.udp)
		cJSON_AddNumberToObject(lr, "tcp_mss", res->mss);
	/* UDP datagrams are never sealed (docs/SECURITY.md) */
	cJSON_AddStringToObject(lr, "cipher",
				crypto_cipher_name(res->authenticated &&
								   !res->req.udp
							   ? res->cipher
							   : CRYPTO_NONE));
	report__add_num(
		lr, "local_cpu_seconds",
		(double)(res->local_cpu.user_us + res->local_cpu.sys_us) / 1e6);
	report__add_num(
		lr, "remote_cpu_seconds",
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
	report__add_num(link, "tcp_ceiling_bits_per_second",
			res->link_ceiling_bps);
	if (res->link_ceiling_bps > 0)
		report__add_num(
			link, "percent_of_ceiling",
			100.0 * report__rate(rcv[0].bytes, rcv[0].seconds) /
				res->link_ceiling_bps);
}

cJSON *report__end_json(const struct bench_result *res)
{
	cJSON *end = cJSON_CreateObject();
	struct sums snd[2] = { 0 }, rcv[2] = { 0 };

	end_streams(end, res, snd, rcv);
	end_sums(end, res, snd, rcv);
	end_cpu(end, res);
	end_linerate(end, res, rcv);
	return end;
}
