// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>
#include <string.h>

#include "opts.h"
#include "core/token.h"
#include "core/units.h"
#include "banned.h"

/* Beyond this a bound is no bound a user meets: "at least MIN". */
#define BOUND_NONE (1ull << 60)

/* The kinds of values, each with its parser and how its bounds read. */
enum kind { K_UINT, K_BYTES, K_BYTE_RATE, K_RATE, K_SEC, K_MSEC, K_AGE };

typedef int (*parse_fn)(const char *s, uint64_t min, uint64_t max,
			uint64_t *out);

static const struct {
	parse_fn parse;
	const char *what; /* "'VAL' is not WHAT" */
} kinds[] = {
	[K_UINT] = { units_parse_uint, "a whole number" },
	[K_BYTES] = { units_parse_bytes, "a size such as 128K, 10M or 1G" },
	[K_BYTE_RATE] = { units_parse_bytes,
			  "a rate such as 50M (MiB/s) or 400mbit" },
	[K_RATE] = { units_parse_rate, "a rate such as 940m or 1gbit" },
	[K_SEC] = { units_parse_ms,
		    "a duration such as 10 (seconds), 500ms, 1m or 2h" },
	[K_MSEC] = { units_parse_msec,
		     "a duration such as 500 (milliseconds), 2s or 1m" },
	[K_AGE] = { units_parse_age,
		    "an age such as 90 (seconds), 30m, 12h, 7d or 2w" },
};

/* v as the option would take it: with the largest suffix of sfx (steps
 * of base) that divides it ("64K", "8M", "940m"), else the number. */
static void fmt_bound(char *buf, size_t cap, uint64_t v, uint64_t base,
		      const char *sfx)
{
	uint64_t div = 1;
	int i = -1;

	while (sfx[i + 1] && v && v % (div * base) == 0) {
		div *= base;
		i++;
	}
	if (i < 0)
		snprintf(buf, cap, "%llu", (unsigned long long)v);
	else
		snprintf(buf, cap, "%llu%c", (unsigned long long)(v / div),
			 sfx[i]);
}

/* A cap beyond the suffixes, as a person reads it: "8 EiB", "9.22
 * Ebits/s" (unit after the prefix). */
static void fmt_huge(char *buf, size_t cap, uint64_t v, uint64_t base,
		     const char *unit)
{
	const char *prefix = base == 1024 ? "KMGTPE" : "kMGTPE";
	double n = (double)v;
	int i = -1;

	while (prefix[i + 1] && n >= (double)base) {
		n /= (double)base;
		i++;
	}
	if (i < 0)
		snprintf(buf, cap, "%.3g %s", n, unit);
	else
		snprintf(buf, cap, "%.3g %c%s", n, prefix[i], unit);
}

/* ms in the largest unit it is a whole number of: "0", "500 ms", "10 s",
 * "10 min", "24 h", "7 d" (a day only past 24 h). */
static void fmt_duration(char *buf, size_t cap, uint64_t ms)
{
	static const struct {
		uint64_t ms;
		const char *name;
	} units[] = { { 86400000, "d" },
		      { 3600000, "h" },
		      { 60000, "min" },
		      { 1000, "s" },
		      { 1, "ms" } };
	size_t i;

	if (!ms) {
		snprintf(buf, cap, "0");
		return;
	}
	for (i = 0; ms % units[i].ms || (i == 0 && ms == units[i].ms); i++)
		;
	snprintf(buf, cap, "%llu %s", (unsigned long long)(ms / units[i].ms),
		 units[i].name);
}

/* Bound v of a value of kind k, in the option's own unit. */
static void fmt_value(char *buf, size_t cap, enum kind k, uint64_t v)
{
	size_t n;

	switch (k) {
	case K_BYTES:
	case K_BYTE_RATE:
		if (v >= BOUND_NONE) {
			fmt_huge(buf, cap, v, 1024,
				 k == K_BYTES ? "iB" : "iB/s");
			return;
		}
		fmt_bound(buf, cap, v, 1024, "KMGT");
		n = strlen(buf);
		/* "1000 bytes/s", "50M/s" */
		if (k == K_BYTE_RATE && n && n < cap)
			snprintf(buf + n, cap - n, "%s",
				 isdigit((unsigned char)buf[n - 1]) ? " bytes/s"
								    : "/s");
		return;
	case K_RATE:
		if (v >= BOUND_NONE) {
			fmt_huge(buf, cap, v, 1000, "bits/s");
			return;
		}
		fmt_bound(buf, cap, v, 1000, "kmgt");
		n = strlen(buf);
		if (n < cap)
			snprintf(buf + n, cap - n, " bits/s");
		return;
	case K_SEC:
	case K_MSEC: fmt_duration(buf, cap, v); return;
	case K_AGE:
		fmt_duration(buf, cap,
			     v > UINT64_MAX / 1000 ? UINT64_MAX : v * 1000);
		return;
	case K_UINT: break;
	}
	snprintf(buf, cap, "%llu", (unsigned long long)v);
}

/*
 * val as a value of kind k in [min, max] (or 0 too, with or_zero) into
 * *out. Out of range, the message gives the range in the option's own
 * unit: "(10 s to 24 h)"; where max is no bound a user meets, only the
 * bound val passed: "too small (at least 1000 bytes/s)", "too large (at
 * most 8 EiB/s)".
 */
static int checked(enum kind k, const char *opt, const char *val, uint64_t min,
		   uint64_t max, bool or_zero, uint64_t *out,
		   struct lr_err *err)
{
	char lo[40], hi[40];
	uint64_t v = 0;
	int r = kinds[k].parse(val, 0, UINT64_MAX, &v);

	if (r && r != -ERANGE)
		return lr_err_set(err, r, "%s '%s' is not %s", opt, val,
				  kinds[k].what);
	if (!r && ((or_zero && !v) || (v >= min && v <= max))) {
		*out = v;
		return 0;
	}
	fmt_value(lo, sizeof(lo), k, min);
	fmt_value(hi, sizeof(hi), k, max);
	if (max < BOUND_NONE)
		return lr_err_set(err, -ERANGE,
				  "%s '%s' is out of range (%s to %s%s)", opt,
				  val, lo, hi, or_zero ? ", or 0" : "");
	if (r || v > max) /* r: beyond 64 bits */
		return lr_err_set(err, -ERANGE,
				  "%s '%s' is too large (at most %s)", opt, val,
				  hi);
	return lr_err_set(err, -ERANGE, "%s '%s' is too small (at least %s)",
			  opt, val, lo);
}

int opts_bytes(const char *opt, const char *val, uint64_t min, uint64_t max,
	       uint64_t *out, struct lr_err *err)
{
	return checked(K_BYTES, opt, val, min, max, false, out, err);
}

int opts_byte_rate(const char *opt, const char *val, uint64_t min, uint64_t max,
		   uint64_t *out, struct lr_err *err)
{
	return checked(K_BYTE_RATE, opt, val, min, max, false, out, err);
}

int opts_rate(const char *opt, const char *val, uint64_t min, uint64_t max,
	      uint64_t *out, struct lr_err *err)
{
	return checked(K_RATE, opt, val, min, max, false, out, err);
}

int opts_ms(const char *opt, const char *val, uint64_t min_ms, uint64_t max_ms,
	    uint64_t *out, struct lr_err *err)
{
	return checked(K_SEC, opt, val, min_ms, max_ms, false, out, err);
}

int opts_ms_or_zero(const char *opt, const char *val, uint64_t min_ms,
		    uint64_t max_ms, uint64_t *out, struct lr_err *err)
{
	return checked(K_SEC, opt, val, min_ms, max_ms, true, out, err);
}

int opts_msec(const char *opt, const char *val, uint64_t min_ms,
	      uint64_t max_ms, uint64_t *out, struct lr_err *err)
{
	return checked(K_MSEC, opt, val, min_ms, max_ms, false, out, err);
}

int opts_age(const char *opt, const char *val, uint64_t min_s, uint64_t max_s,
	     uint64_t *out, struct lr_err *err)
{
	return checked(K_AGE, opt, val, min_s, max_s, false, out, err);
}

int opts_uint(const char *opt, const char *val, uint64_t min, uint64_t max,
	      uint64_t *out, struct lr_err *err)
{
	return checked(K_UINT, opt, val, min, max, false, out, err);
}

int opts_getopt_error(int c, char **argv, struct lr_err *err)
{
	const char *arg = argv[optind - 1];
	char name[3] = { '-', (char)optopt, '\0' };

	if (optopt && (arg[0] != '-' || arg[1] != '-'))
		arg = name;
	if (c == ':')
		return lr_err_set(err, -EINVAL, "option '%s' needs a value",
				  arg);
	return lr_err_set(err, -EINVAL, "unknown option '%s'", arg);
}

int opts_token_psk(const char *path, bool use_env, uint8_t psk[32], bool *have,
		   struct lr_err *err)
{
	char line[256];
	const char *env;
	FILE *f;
	int r;

	*have = false;
	if (path) {
		f = fopen(path, "re");
		if (!f)
			return lr_err_setc(err, -errno, "--token-file %s",
					   path);
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
		r = session_token_psk(line, psk);
		session_token_wipe(line, sizeof(line));
		if (r)
			return lr_err_set(err, r,
					  "--token-file %s does not "
					  "hold a token (make one with "
					  "`linerate token`)",
					  path);
		*have = true;
		return 0;
	}
	env = use_env ? getenv("LINERATE_TOKEN") : NULL;
	if (!env || !*env)
		return 0;
	r = session_token_psk(env, psk);
	if (r)
		return lr_err_set(err, r,
				  "LINERATE_TOKEN does not hold a "
				  "token (make one with `linerate token`)");
	*have = true;
	return 0;
}

int opts_prompt_token(const char *prompt, uint8_t psk[32], struct lr_err *err)
{
	struct termios old, quiet;
	char line[256];
	ssize_t n;
	int fd, r;

	fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return lr_err_set(err, -ENOTTY,
				  "no terminal to ask for the "
				  "token on");
	if (tcgetattr(fd, &old)) {
		close(fd);
		return lr_err_set(err, -ENOTTY,
				  "no terminal to ask for the "
				  "token on");
	}
	quiet = old;
	quiet.c_lflag &= ~(tcflag_t)ECHO;
	tcsetattr(fd, TCSAFLUSH, &quiet);
	if (write(fd, prompt, strlen(prompt)) < 0) {
		/* the prompt is a courtesy */
	}
	n = read(fd, line, sizeof(line) - 1);
	tcsetattr(fd, TCSAFLUSH, &old);
	if (write(fd, "\n", 1) < 0) {
		/* as above */
	}
	close(fd);
	line[n > 0 ? n : 0] = '\0';
	r = session_token_psk(line, psk);
	session_token_wipe(line, sizeof(line));
	if (r)
		return lr_err_set(err, r, "that is not a token");
	return 0;
}

void opts_add_hint(char *msg, size_t cap, int code)
{
	size_t n = strlen(msg);
	const char *hint = NULL;

	/* the engine says what happened; which flag helps is ours to say */
	if (code == -EEXIST && !strstr(msg, "--overwrite"))
		hint = " (use --overwrite or --update)";
	else if (code == -EFBIG && !strstr(msg, "--chunk"))
		hint = " (use a larger --chunk, up to 8M)";
	if (hint && n < cap)
		snprintf(msg + n, cap - n, "%s", hint);
}
