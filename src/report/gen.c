// SPDX-License-Identifier: MIT
/* linerate gen. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/units.h"
#include "report_int.h"
#include "banned.h"

/* Elapsed time and ETA as pv prints them: M:SS, H:MM:SS past an hour. */
void report__fmt_hms(char *buf, size_t cap, double s)
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
	char bytes[32], el[32], eta[32], r[32];
	double rate = sec > 0 ? (double)done / sec : 0;
	double pct = size ? 100.0 * (double)done / (double)size : 100;

	units_fmt_iec(bytes, sizeof(bytes), (double)done);
	units_fmt_iec_rate(r, sizeof(r), rate);
	report__fmt_hms(el, sizeof(el), sec);
	report__fmt_hms(eta, sizeof(eta),
			rate > 0 ? (double)(size - done) / rate : 0);
	fprintf(out, "%s%10s %s [%11s] %3.0f%% ETA %s%s", tty ? "\r" : "",
		bytes, el, r, pct, eta, tty ? "\033[K" : "\n");
	fflush(out);
}

void report_gen_done(FILE *out, uint64_t size, double sec)
{
	char b[32], r[32];

	units_fmt_iec(b, sizeof(b), (double)size);
	units_fmt_iec_rate(r, sizeof(r), sec > 0 ? (double)size / sec : 0);
	fprintf(out, "%s: %s (%llu bytes) in %.3f s, %s\n", report_prog(), b,
		(unsigned long long)size, sec, r);
}
