// SPDX-License-Identifier: MIT
/* Numbers, escaping and the JSON writer every report uses; struct report. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/units.h"
#include "report_int.h"
#include "banned.h"

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

/* "linerate CMD", the prefix of every message the command prints */
static char prog[48] = "linerate";

void report_set_command(const char *cmd)
{
	snprintf(prog, sizeof(prog), "linerate %s", cmd);
}

const char *report_prog(void)
{
	return prog;
}

void report_msg(FILE *out, const char *fmt, ...)
{
	va_list ap;

	fprintf(out, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
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
void report__print(struct report *rp, const char *fmt, ...)
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
void report__text_out(FILE *out, const char *s)
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
double report__json_num(double v)
{
	return isfinite(v) ? v : 0.0;
}

double report__rate(uint64_t bytes, double seconds)
{
	return seconds > 0 ? (double)bytes * 8.0 / seconds : 0.0;
}

void report__add_num(cJSON *o, const char *k, double v)
{
	cJSON_AddNumberToObject(o, k, report__json_num(v));
}

void report__emit_stream_event(struct report *rp, const char *event,
			       cJSON *data)
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

void report_set_server_side(struct report *rp)
{
	rp->server_side = true;
}

const char *report__role(const struct report *rp, bool local_sender)
{
	if (!rp->bidir)
		return "";
	if (rp->server_side)
		return local_sender ? "[TX-S]" : "[RX-S]";
	return local_sender ? "[TX-C]" : "[RX-C]";
}

const char *report__role_tag(const struct report *rp, unsigned i)
{
	return rp->bidir ? report__role(rp, rp->local_sender[i]) : "";
}

void report__json_line(FILE *out, cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);

	if (s) {
		fprintf(out, "%s\n", s);
		fflush(out);
		free(s);
	}
	cJSON_Delete(o);
}

/* -f of bench and serve: 0 or one of kmgtKMGT */
static char rate_format;

void report_set_rate_format(char format)
{
	rate_format = format;
}

char *report__fmt_rate(char *buf, size_t cap, double bits_per_sec)
{
	return units_fmt_rate_as(buf, cap, bits_per_sec, rate_format);
}
