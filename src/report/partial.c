// SPDX-License-Identifier: MIT
/* serve --list-partial and --clean-partial, and the sweep's log line. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "core/units.h"
#include "report_int.h"
#include "banned.h"

/* A byte count without iperf3's padding. */
static const char *fmt_size(char *buf, size_t cap, uint64_t bytes)
{
	const char *p = units_fmt_iec(buf, cap, (double)bytes);

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
		units_fmt_iec(size, sizeof(size), (double)p->bytes));
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
