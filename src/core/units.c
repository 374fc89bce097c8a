// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "units.h"
#include "banned.h"

/* A number as typed: the whole part exactly, the fraction as a double. */
struct decimal {
	uint64_t whole;
	double frac; /* in [0, 1] */
	bool over;   /* the whole part does not fit in 64 bits */
};

/* Parse the leading unsigned decimal (digits, optional '.' and digits).
 * Rejects signs, whitespace, hex, exponents, inf and nan. */
static int parse_decimal(const char *s, struct decimal *d, const char **rest)
{
	const char *p = s;
	double scale = 1.0;
	int digits = 0;

	d->whole = 0;
	d->frac = 0.0;
	d->over = false;
	while (isdigit((unsigned char)*p)) {
		unsigned dig = (unsigned)(*p - '0');

		if (d->whole > (UINT64_MAX - dig) / 10)
			d->over = true;
		else
			d->whole = d->whole * 10 + dig;
		p++;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p)) {
			scale /= 10.0;
			d->frac += (*p - '0') * scale;
			p++;
			digits++;
		}
	}
	if (!digits)
		return -EINVAL;
	*rest = p;
	return 0;
}

/* d x mult rounded to the nearest integer, checked against [min, max] in
 * integers: a double holds only 53 bits. */
static int scaled(const struct decimal *d, uint64_t mult, uint64_t min,
		  uint64_t max, uint64_t *out)
{
	uint64_t v, f;

	if (d->over || d->whole > UINT64_MAX / mult)
		return -ERANGE;
	v = d->whole * mult;
	/* frac <= 1 and mult <= 2^40: exact enough, and no overflow */
	f = (uint64_t)floor(d->frac * (double)mult + 0.5);
	if (f > UINT64_MAX - v)
		return -ERANGE;
	v += f;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static int prefix_power(char c, int *power)
{
	switch (tolower((unsigned char)c)) {
	case 'k': *power = 1; return 1;
	case 'm': *power = 2; return 1;
	case 'g': *power = 3; return 1;
	case 't': *power = 4; return 1;
	default: *power = 0; return 0;
	}
}

int units_parse_bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	struct decimal d;
	const char *p;
	uint64_t mult = 1;
	int power, i;

	if (!s || parse_decimal(s, &d, &p))
		return -EINVAL;
	if (prefix_power(*p, &power))
		p++;
	for (i = 0; i < power; i++)
		mult *= 1024;
	if (power && (!strcmp(p, "iB") || !strcmp(p, "ib")))
		p += 2;
	else if (*p == 'B' || *p == 'b')
		p++;
	if (*p)
		return -EINVAL;
	return scaled(&d, mult, min, max, out);
}

int units_parse_rate(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	struct decimal d;
	const char *p;
	uint64_t mult = 1;
	int power, i;

	if (!s || parse_decimal(s, &d, &p))
		return -EINVAL;
	if (prefix_power(*p, &power))
		p++;
	for (i = 0; i < power; i++)
		mult *= 1000;
	if (*p && strcasecmp(p, "bit") && strcasecmp(p, "bit/s") &&
	    strcasecmp(p, "bits") && strcasecmp(p, "bits/s") &&
	    strcasecmp(p, "bps") && strcmp(p, "b"))
		return -EINVAL;
	return scaled(&d, mult, min, max, out);
}

/* A duration's suffix, in milliseconds; none is the option's own unit,
 * bare_ms. In a duration "m" is minutes (in a size or a rate it is mega). */
static int duration_unit(const char *p, uint64_t bare_ms, uint64_t *mult)
{
	static const struct {
		const char *name;
		uint64_t ms;
	} units[] = { { "ms", 1 },	 { "s", 1000 },	   { "m", 60000 },
		      { "min", 60000 },	 { "h", 3600000 }, { "d", 86400000 },
		      { "w", 604800000 } };
	size_t i;

	if (!*p) {
		*mult = bare_ms;
		return 0;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(p, units[i].name)) {
			*mult = units[i].ms;
			return 0;
		}
	return -EINVAL;
}

/* The one duration parser: a number in bare_ms units, or with a suffix of
 * duration_unit; in milliseconds, a fraction rounded. */
static int parse_duration(const char *s, uint64_t bare_ms, uint64_t min_ms,
			  uint64_t max_ms, uint64_t *out_ms)
{
	struct decimal d;
	uint64_t mult, v;
	const char *p;
	int r;

	if (!s || parse_decimal(s, &d, &p) || duration_unit(p, bare_ms, &mult))
		return -EINVAL;
	r = scaled(&d, mult, 0, UINT64_MAX, &v);
	/* a moment that rounds to 0 ms is not 0 (often "none") */
	if (!r && !v && (d.whole || d.frac > 0))
		v = 1;
	if (!r && (v < min_ms || v > max_ms))
		r = -ERANGE;
	if (!r)
		*out_ms = v;
	return r;
}

int units_parse_ms(const char *s, uint64_t min_ms, uint64_t max_ms,
		   uint64_t *out_ms)
{
	return parse_duration(s, 1000, min_ms, max_ms, out_ms);
}

int units_parse_msec(const char *s, uint64_t min_ms, uint64_t max_ms,
		     uint64_t *out_ms)
{
	return parse_duration(s, 1, min_ms, max_ms, out_ms);
}

int units_parse_age(const char *s, uint64_t min_s, uint64_t max_s,
		    uint64_t *out_s)
{
	uint64_t ms, v;
	int r = parse_duration(s, 1000, 0, UINT64_MAX, &ms);

	if (r)
		return r;
	/* up: an age is never shorter than asked (0 often means "none") */
	v = ms / 1000 + (ms % 1000 != 0);
	if (v < min_s || v > max_s)
		return -ERANGE;
	*out_s = v;
	return 0;
}

int units_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *p = s;
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static char *fmt_scaled(char *buf, size_t cap, double n, double base,
			const char *const *labels, int nlabels)
{
	int i = 0;
	int prec;

	if (!isfinite(n) || n < 0)
		n = 0;
	while (n >= base && i < nlabels - 1) {
		n /= base;
		i++;
	}
	if (n < 9.995)
		prec = 2;
	else if (n < 99.95)
		prec = 1;
	else
		prec = 0;
	snprintf(buf, cap, "%4.*f %s", prec, n, labels[i]);
	return buf;
}

char *units_fmt_bytes(char *buf, size_t cap, double bytes)
{
	static const char *const labels[] = { "Bytes", "KBytes", "MBytes",
					      "GBytes", "TBytes" };

	return fmt_scaled(buf, cap, bytes, 1024.0, labels, 5);
}

char *units_fmt_rate(char *buf, size_t cap, double bits_per_sec)
{
	static const char *const labels[] = { "bits/sec", "Kbits/sec",
					      "Mbits/sec", "Gbits/sec",
					      "Tbits/sec" };

	return fmt_scaled(buf, cap, bits_per_sec, 1000.0, labels, 5);
}

char *units_fmt_rate_as(char *buf, size_t cap, double bits_per_sec, char format)
{
	static const char *const bits[] = { "bits/sec", "Kbits/sec",
					    "Mbits/sec", "Gbits/sec",
					    "Tbits/sec" };
	static const char *const bytes[] = { "Bytes/sec", "KBytes/sec",
					     "MBytes/sec", "GBytes/sec",
					     "TBytes/sec" };
	static const char lower[] = "kmgt", upper[] = "KMGT";
	const char *at = format ? strchr(lower, format) : NULL;
	const char *At = format ? strchr(upper, format) : NULL;
	double n = bits_per_sec;
	int i, steps;
	int prec;

	if (!at && !At)
		return units_fmt_rate(buf, cap, bits_per_sec);
	if (!isfinite(n) || n < 0)
		n = 0;
	steps = at ? (int)(at - lower) + 1 : (int)(At - upper) + 1;
	if (At)
		n /= 8;
	for (i = 0; i < steps; i++)
		n /= At ? 1024.0 : 1000.0;
	prec = n < 9.995 ? 2 : n < 99.95 ? 1 : 0;
	snprintf(buf, cap, "%4.*f %s", prec, n,
		 At ? bytes[steps] : bits[steps]);
	return buf;
}

/* n in 1024 steps with the IEC names, 3 significant digits, no padding. */
static char *fmt_iec(char *buf, size_t cap, double n, const char *suffix)
{
	static const char *const names[] = { "B",   "KiB", "MiB",
					     "GiB", "TiB", "PiB" };
	int i = 0, prec;

	if (!isfinite(n) || n < 0)
		n = 0;
	while (n >= 1023.5 && i < 5) {
		n /= 1024.0;
		i++;
	}
	prec = i == 0 ? 0 : n < 9.995 ? 2 : n < 99.95 ? 1 : 0;
	snprintf(buf, cap, "%.*f %s%s", prec, n, names[i], suffix);
	return buf;
}

char *units_fmt_iec(char *buf, size_t cap, double bytes)
{
	return fmt_iec(buf, cap, bytes, "");
}

char *units_fmt_iec_rate(char *buf, size_t cap, double bytes_per_sec)
{
	return fmt_iec(buf, cap, bytes_per_sec, "/s");
}
