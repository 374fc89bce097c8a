// SPDX-License-Identifier: MIT
/* linerate doctor --local: the machine alone, its verdict in a paragraph
 * and a line for a table of devices. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cipher.h"
#include "core/cryptobench.h"
#include "report_int.h"
#include "banned.h"

/* Links a reader may choose between: name, speed. */
static const struct {
	const char *name;
	uint64_t bps;
} links[] = {
	{ "Fast Ethernet", 100000000ull },
	{ "gigabit Ethernet", 1000000000ull },
	{ "2.5 GbE", 2500000000ull },
	{ "10 GbE", 10000000000ull },
};

static double mbs(double bps)
{
	return bps / 1e6;
}

/* What holds a direction back alone: its CPU (the cipher) or the disk. */
static double direction_limit(double cpu_bps, double disk_bps,
			      const char **what)
{
	*what = "the CPU";
	if (disk_bps > 0 && (cpu_bps <= 0 || disk_bps < cpu_bps)) {
		*what = "the disk";
		return disk_bps;
	}
	return cpu_bps;
}

/* What the machine can receive and send alone: the CPU's capacity, the
 * disk's for receiving when it is less; what limits each into *rw, *sw. */
static void directions(const struct doctor_local_report *r, double *rx,
		       const char **rw, double *tx, const char **sw)
{
	const struct doctor_stage *dest = &r->d.stage[DOCTOR_DEST];

	*rx = direction_limit(r->recv_bps, dest->measured ? dest->bps : 0, rw);
	*tx = direction_limit(r->send_bps, r->disk_read_bps, sw);
}

/* The verdict: what each direction can carry, and for each link speed
 * whether the link or this machine will be the limit. */
static void verdict(FILE *out, const struct doctor_local_report *r)
{
	const char *rw, *sw;
	double rx, tx, lo;
	unsigned i;

	directions(r, &rx, &rw, &tx, &sw);
	lo = rx < tx ? rx : tx;
	fprintf(out,
		"\nThis machine can receive an encrypted transfer at "
		"%.0f MB/s (%s limits it) and send one at %.0f MB/s (%s).",
		mbs(rx), rw, mbs(tx), sw);
	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		double ceil =
			link_goodput_bps(links[i].bps, 1500, false, true) / 8;

		fprintf(out, "%s %s (%.1f MB/s) ", i ? "; on" : " On",
			links[i].name, mbs(ceil));
		if (lo >= ceil)
			fprintf(out, "the link will limit it");
		else
			fprintf(out, "%s will, %s", tx <= rx ? sw : rw,
				tx <= rx ? "sending" : "receiving");
		if (lo < ceil)
			break; /* faster links: the same machine limit */
	}
	fprintf(out, ".\n");
}

static void machine_lines(FILE *out, const struct doctor_local_report *r)
{
	const struct doctor_side *l = &r->d.local;

	fprintf(out, "  machine    ");
	report_escaped(out, r->model);
	fprintf(out, "; %.2f cores usable", l->cores);
	if (r->cpus_online && l->cores + 0.01 < (double)r->cpus_online)
		fprintf(out, " of %u online (a cgroup CPU quota)",
			r->cpus_online);
	fprintf(out, "; governor %s",
		l->p.governor[0] ? l->p.governor : "unknown");
	if (r->nfreq > 1) { /* clusters apart: big and LITTLE cores */
		size_t i;

		for (i = 0; i < r->nfreq; i++) {
			const struct sysfs_cpufreq *c = &r->freq[i];

			fprintf(out, "%s %s", i ? "," : "; CPUs", c->cpus);
			if (c->cur_khz)
				fprintf(out, " at %.0f MHz", c->cur_khz / 1e3);
			if (c->max_khz)
				fprintf(out, " (at most %.0f)",
					c->max_khz / 1e3);
			if (c->governor[0] &&
			    strcmp(c->governor, l->p.governor))
				fprintf(out, " governor %s", c->governor);
		}
	} else if (r->cur_khz) {
		fprintf(out, "; CPU 0 at %.0f MHz", r->cur_khz / 1e3);
		if (r->max_khz)
			fprintf(out, " (at most %.0f)", r->max_khz / 1e3);
	}
	fprintf(out, "; %s\n", r->kernel);
}

/* Whether advice line i is the server's word for word as this side's:
 * both ends are this machine, said once. */
static bool same_as_here(const struct doctor_report *d, unsigned i)
{
	static const char there[] = "the server: ", here[] = "this side: ";
	unsigned j;

	if (strncmp(d->advice[i], there, sizeof(there) - 1))
		return false;
	for (j = 0; j < d->nadvice; j++)
		if (!strncmp(d->advice[j], here, sizeof(here) - 1) &&
		    !strcmp(d->advice[j] + sizeof(here) - 1,
			    d->advice[i] + sizeof(there) - 1))
			return true;
	return false;
}

/* The advice of the JSON's "advice", under the machine line. */
static void advice_lines(FILE *out, const struct doctor_report *d)
{
	bool first = true;
	unsigned i;

	for (i = 0; i < d->nadvice; i++) {
		if (same_as_here(d, i))
			continue;
		fprintf(out, "  %-10s - ", first ? "advice" : "");
		report_escaped(out, d->advice[i]);
		fputc('\n', out);
		first = false;
	}
}

/* Each frequency policy, [] when the machine has none (a VM). */
static void freq_json(cJSON *m, const struct doctor_local_report *r)
{
	cJSON *a = cJSON_AddArrayToObject(m, "cpufreq");
	size_t i;

	for (i = 0; a && i < r->nfreq; i++) {
		cJSON *c = cJSON_CreateObject();

		if (!c)
			return;
		cJSON_AddStringToObject(c, "cpus", r->freq[i].cpus);
		report__add_num(c, "khz", (double)r->freq[i].cur_khz);
		report__add_num(c, "max_khz", (double)r->freq[i].max_khz);
		cJSON_AddStringToObject(c, "governor", r->freq[i].governor);
		cJSON_AddItemToArray(a, c);
	}
}

void report_doctor_local_human(FILE *out, const struct doctor_local_report *r,
			       const char *dir)
{
	const struct doctor_report *d = &r->d;
	const char *cipher = crypto_cipher_name(d->cipher), *rw, *sw;
	double rx, tx;
	unsigned i;

	fprintf(out, "linerate doctor --local: this machine alone, %s\n",
		r->namespaces ? "through a veth pair between two network "
				"namespaces"
			      : "over loopback");
	if (!r->namespaces && r->why_loopback[0])
		fprintf(out, "  (%s)\n", r->why_loopback);
	machine_lines(out, r);
	advice_lines(out, d);
	fprintf(out, "  cipher     %s: ", cryptobench_cipher_label(d->cipher));
	for (i = 0; i < d->local.p.nrates; i++)
		if (d->local.p.rates[i].cipher == d->cipher)
			fprintf(out, "seal %.0f, open %.0f MB/s on one core; ",
				mbs((double)d->local.p.rates[i].seal),
				mbs((double)d->local.p.rates[i].open));
	fprintf(out, "every core at once: seal %.0f MB/s\n",
		mbs(r->cipher_all_cores_bps));
	fprintf(out,
		"  network    plain TCP %.0f MB/s; encrypted, %u streams: "
		"%.0f MB/s one way, %.0f MB/s the other\n",
		mbs(r->plain_bps), d->streams, mbs(d->stage[DOCTOR_NET].bps),
		mbs(d->stage[DOCTOR_NET_BACK].bps));
	fprintf(out, "  disk       ");
	report_escaped(out, dir);
	fprintf(out, " (");
	report_escaped(out, d->remote.p.storage[0] ? d->remote.p.storage : "?");
	fprintf(out,
		"): written as received (page cache, fdatasync) %.0f "
		"MB/s; read as sent (from the device) %.0f MB/s\n",
		mbs(d->stage[DOCTOR_DEST].bps), mbs(r->disk_read_bps));
	fprintf(out,
		"  transfer   %.0f MB/s with both ends on this machine; "
		"CPU per GB: sending %.2f s, receiving %.2f s\n",
		mbs(d->xfer_bps), r->cpu_s_per_gb_send, r->cpu_s_per_gb_recv);
	if (r->send_bps <= 0 || r->recv_bps <= 0) {
		fprintf(out, "  alone      not known: the transfer's CPU time "
			     "could not be read\n");
		return;
	}
	fprintf(out,
		"  alone      with %.2f cores (usable, at most one a "
		"stream): send %.0f MB/s, receive %.0f MB/s (cores / CPU "
		"s per GB)\n",
		r->cores_used, mbs(r->send_bps), mbs(r->recv_bps));
	verdict(out, r);
	directions(r, &rx, &rw, &tx, &sw);
	fprintf(out,
		"\nFor a table of devices (model | cores | kernel | cipher "
		"| MB/s send / receive):\n");
	report_escaped(out, r->model);
	fprintf(out, " | %.2f | %s | %s | %.0f / %.0f\n", d->local.cores,
		r->kernel, cipher, mbs(tx), mbs(rx));
}

/* The verdict per link speed: which end or the link limits. */
static void links_json(cJSON *o, const struct doctor_local_report *r)
{
	cJSON *arr = cJSON_AddArrayToObject(o, "links");
	const char *rw, *sw;
	double rx, tx, lo;
	unsigned i;

	if (!arr || r->send_bps <= 0 || r->recv_bps <= 0)
		return;
	directions(r, &rx, &rw, &tx, &sw);
	lo = rx < tx ? rx : tx;
	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		double ceil = doctor_link_ceiling(links[i].bps);
		cJSON *l = cJSON_CreateObject();
		char who[48];

		if (!l)
			return;
		snprintf(who, sizeof(who), "%s, %s", tx <= rx ? sw + 4 : rw + 4,
			 tx <= rx ? "sending" : "receiving");
		cJSON_AddStringToObject(l, "link", links[i].name);
		report__add_num(l, "tcp_ceiling_bytes_per_second", ceil);
		cJSON_AddStringToObject(l, "limited_by",
					lo >= ceil ? "link" : who);
		cJSON_AddItemToArray(arr, l);
	}
}

void report_doctor_local_json(FILE *out, const struct doctor_local_report *r,
			      const char *dir, const char *error)
{
	cJSON *o = report__doctor_json(&r->d, error), *m, *c;
	char *s;

	if (!o)
		return;
	cJSON_AddStringToObject(o, "mode",
				r->namespaces ? "namespaces" : "loopback");
	if (r->why_loopback[0])
		cJSON_AddStringToObject(o, "why_loopback", r->why_loopback);
	cJSON_AddStringToObject(o, "directory", dir);
	m = cJSON_AddObjectToObject(o, "machine");
	if (m) {
		cJSON_AddStringToObject(m, "model", r->model);
		cJSON_AddStringToObject(m, "kernel", r->kernel);
		report__add_num(m, "cores_usable", r->d.local.cores);
		report__add_num(m, "cpus_online", r->cpus_online);
		cJSON_AddStringToObject(m, "governor", r->d.local.p.governor);
		report__add_num(m, "cpu0_khz", (double)r->cur_khz);
		report__add_num(m, "cpu0_max_khz", (double)r->max_khz);
		freq_json(m, r);
	}
	report__add_num(o, "disk_read_bytes_per_second",
			report__json_num(r->disk_read_bps));
	report__add_num(o, "plain_tcp_bytes_per_second",
			report__json_num(r->plain_bps));
	report__add_num(o, "cipher_all_cores_bytes_per_second",
			report__json_num(r->cipher_all_cores_bps));
	c = cJSON_AddObjectToObject(o, "capacity");
	if (c) {
		const char *rw, *sw;
		double rx, tx;

		directions(r, &rx, &rw, &tx, &sw);
		report__add_num(c, "can_send_bytes_per_second",
				report__json_num(tx));
		report__add_num(c, "can_receive_bytes_per_second",
				report__json_num(rx));
		cJSON_AddStringToObject(c, "send_limited_by", sw + 4);
		cJSON_AddStringToObject(c, "receive_limited_by", rw + 4);
		report__add_num(c, "cpu_send_bytes_per_second",
				report__json_num(r->send_bps));
		report__add_num(c, "cpu_receive_bytes_per_second",
				report__json_num(r->recv_bps));
		report__add_num(c, "cpu_seconds_per_gb_send",
				report__json_num(r->cpu_s_per_gb_send));
		report__add_num(c, "cpu_seconds_per_gb_receive",
				report__json_num(r->cpu_s_per_gb_recv));
	}
	links_json(o, r);
	s = cJSON_Print(o);
	if (s) {
		fprintf(out, "%s\n", s);
		free(s);
	}
	cJSON_Delete(o);
	fflush(out);
}
