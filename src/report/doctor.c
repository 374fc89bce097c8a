// SPDX-License-Identifier: MIT
/* linerate doctor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/units.h"
#include "report_int.h"
#include "banned.h"

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
	fprintf(out,
		", %.2f cores usable, governor %s, AES and carry-less "
		"multiply %s, %s\n",
		s->cores, p->governor[0] ? p->governor : "unknown",
		p->aes ? "yes" : "no (so ChaCha20-Poly1305)",
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

/* The verdict's words, lines of at most 78 columns (a word longer than
 * that on a line of its own); escaped, as the label is the server's. */
static void doctor_wrapped(FILE *out, const char *s)
{
	char word[256];
	size_t col = 0, n;

	while (*s) {
		while (*s == ' ')
			s++;
		n = strcspn(s, " ");
		if (!n)
			break;
		snprintf(word, sizeof(word), "%.*s", (int)n, s);
		if (col && col + 1 + n > 78) {
			fputc('\n', out);
			col = 0;
		}
		if (col++)
			fputc(' ', out);
		report_escaped(out, word);
		col += n;
		s += n;
	}
	fputc('\n', out);
}

void report_doctor_human(FILE *out, const struct doctor_report *r)
{
	char b[32];
	unsigned i;

	fprintf(out, "Stage                         MB/s (10^6 bytes/s)\n");
	for (i = 0; i < DOCTOR_NSTAGES; i++) {
		const struct doctor_stage *s = &r->stage[i];

		fprintf(out, "  %-26s ",
			i == DOCTOR_CIPHER && r->tokenless
				? "cipher (this CPU)" /* the server's unknown */
				: doctor_stage_names[i]);
		if (s->measured)
			fprintf(out, "%8.1f", s->bps / 1e6);
		else
			fprintf(out, "%8s", "-");
		/* a transfer well below its figure: not what held it */
		if ((int)i == r->bottleneck)
			fprintf(out, "  <- %s",
				r->xfer_done && !r->held ? "slowest"
							 : "limits");
		if (s->detail[0]) {
			fprintf(out, "  (");
			report_escaped(out, s->detail);
			fputc(')', out);
		} else if (i == DOCTOR_SOURCE && r->source_desc[0]) {
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
	if (r->verdict[0])
		doctor_wrapped(out, r->verdict);
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
	if (r->remote.cores > 0)
		doctor_side_human(out, "server", &r->remote);
	else if (r->tokenless)
		fprintf(out, "  %-10s not known: it has no token\n", "server");
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
	report__add_num(o, "cores_usable", s->cores);
	cJSON_AddStringToObject(o, "governor", p->governor);
	cJSON_AddBoolToObject(o, "aes", p->aes);
	cJSON_AddStringToObject(o, "congestion_control", p->cc);
	report__add_num(o, "rmem_max", p->sockbuf[0]);
	report__add_num(o, "wmem_max", p->sockbuf[1]);
	report__add_num(o, "tcp_rmem_max", p->sockbuf[2]);
	report__add_num(o, "tcp_wmem_max", p->sockbuf[3]);
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
		report__add_num(c, "seal_bytes_per_second",
				(double)p->rates[i].seal);
		report__add_num(c, "open_bytes_per_second",
				(double)p->rates[i].open);
		cJSON_AddItemToArray(rates, c);
	}
	return o;
}

/* What the transfer itself showed; unknown figures left out. */
static void doctor_xfer_facts_json(cJSON *x, const struct doctor_xfer_facts *f)
{
	if (f->here_cores >= 0)
		report__add_num(x, "cpu_cores_this_side",
				report__json_num(f->here_cores));
	if (f->machine_cores >= 0 && f->machine_cpus) {
		report__add_num(x, "cpu_cores_this_machine",
				report__json_num(f->machine_cores));
		report__add_num(x, "cpus_this_machine", f->machine_cpus);
	}
	cJSON_AddBoolToObject(x, "same_machine", f->same_machine);
	if (f->waited[0]) {
		cJSON_AddStringToObject(x, "threads_waited_most", f->waited);
		report__add_num(x, "threads_waited_share",
				report__json_num(f->waited_share));
	}
}

void report_doctor_json(FILE *out, const struct doctor_report *r,
			const char *error)
{
	cJSON *o = report__doctor_json(r, error);
	char *s = o ? cJSON_Print(o) : NULL;

	if (s) {
		fprintf(out, "%s\n", s);
		free(s);
	}
	cJSON_Delete(o);
	fflush(out);
}

cJSON *report__doctor_json(const struct doctor_report *r, const char *error)
{
	cJSON *o = cJSON_CreateObject(), *st, *adv;
	unsigned i;

	if (!o)
		return NULL;
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
		report__add_num(c, "bytes_per_second",
				report__json_num(g->bps));
		cJSON_AddStringToObject(c, "detail", g->detail);
		if (i == DOCTOR_NET || i == DOCTOR_NET_BACK)
			cJSON_AddBoolToObject(c, "cpu_bound", g->cpu_bound);
	}
	if (r->xfer_done) {
		cJSON *x = cJSON_AddObjectToObject(o, "transfer");

		if (x) {
			report__add_num(x, "bytes", (double)r->xfer_bytes);
			report__add_num(x, "bytes_per_second",
					report__json_num(r->xfer_bps));
			doctor_xfer_facts_json(x, &r->xf);
		}
	}
	if (r->bottleneck >= 0) {
		cJSON *b = cJSON_AddObjectToObject(o, "bottleneck");

		if (b) {
			cJSON_AddStringToObject(
				b, "stage", doctor_stage_keys[r->bottleneck]);
			cJSON_AddStringToObject(b, "label",
						r->bottleneck_label);
			report__add_num(b, "transfer_share",
					report__json_num(r->xfer_share));
			report__add_num(b, "bytes_per_second",
					report__json_num(r->limit_bps));
			if (r->xfer_done) {
				cJSON_AddBoolToObject(b, "held_transfer",
						      r->held);
				cJSON_AddStringToObject(b, "verdict",
							r->verdict);
			}
		}
	}
	if (r->source_desc[0])
		cJSON_AddStringToObject(o, "source", r->source_desc);
	/* a session that never began had no cipher, not "none" */
	if (r->stage[DOCTOR_NET].measured)
		cJSON_AddStringToObject(o, "cipher",
					crypto_cipher_name(r->cipher));
	if (r->tokenless)
		cJSON_AddBoolToObject(o, "server_without_token", true);
	report__add_num(o, "streams", r->streams);
	if (r->link_known) {
		cJSON *l = cJSON_AddObjectToObject(o, "link");

		if (l) {
			cJSON_AddStringToObject(l, "interface", r->link.ifname);
			cJSON_AddStringToObject(l, "kind",
						r->link.wireless ? "wifi"
						: r->link.virtual_if
							? "virtual"
							: "ethernet");
			report__add_num(l, "speed_bps",
					(double)r->link.speed_bps);
			report__add_num(l, "mtu", r->link.mtu);
			cJSON_AddStringToObject(l, "duplex", r->link.duplex);
			report__add_num(l, "tcp_ceiling_bytes_per_second",
					report__json_num(r->ceiling_bps));
		}
	}
	report__add_num(o, "rtt_us", r->rtt_us);
	report__add_num(o, "bdp_bytes", report__json_num(r->bdp_bytes));
	cJSON_AddItemToObject(o, "local", doctor_side_json(&r->local));
	if (r->remote.cores > 0) /* the server's facts arrived */
		cJSON_AddItemToObject(o, "server",
				      doctor_side_json(&r->remote));
	if (r->remote.p.disk_error[0])
		cJSON_AddStringToObject(o, "destination_disk_error",
					r->remote.p.disk_error);
	adv = cJSON_AddArrayToObject(o, "advice");
	for (i = 0; adv && i < r->nadvice; i++)
		cJSON_AddItemToArray(adv, cJSON_CreateString(r->advice[i]));
	return o;
}
