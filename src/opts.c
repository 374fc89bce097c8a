// SPDX-License-Identifier: MIT
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

/* The range of a value that was out of it, in the value's own syntax. */
static int report_range(int r, const char *opt, const char *val, uint64_t min,
			uint64_t max, uint64_t base, const char *sfx,
			const char *unit, struct lr_err *err)
{
	char lo[32], hi[32];

	fmt_bound(lo, sizeof(lo), min, base, sfx);
	fmt_bound(hi, sizeof(hi), max, base, sfx);
	if (max >= BOUND_NONE)
		return lr_err_set(err, r,
				  "%s '%s' is out of range (at least "
				  "%s%s)",
				  opt, val, lo, unit);
	return lr_err_set(err, r, "%s '%s' is out of range (%s to %s%s)", opt,
			  val, lo, hi, unit);
}

static int report(int r, const char *opt, const char *val, const char *what,
		  uint64_t min, uint64_t max, const char *unit,
		  struct lr_err *err)
{
	if (r == -ERANGE)
		return report_range(r, opt, val, min, max, 1, "", unit, err);
	return lr_err_set(err, r, "%s '%s' is not %s", opt, val, what);
}

int opts_bytes(const char *opt, const char *val, uint64_t min, uint64_t max,
	       uint64_t *out, struct lr_err *err)
{
	int r = units_parse_bytes(val, min, max, out);

	if (r == -ERANGE)
		return report_range(r, opt, val, min, max, 1024, "KMGT",
				    min < 1024 && max < 1024 ? " bytes" : "",
				    err);
	return r ? report(r, opt, val, "a size such as 128K, 10M or 1G", min,
			  max, "", err)
		 : 0;
}

int opts_rate(const char *opt, const char *val, uint64_t min, uint64_t max,
	      uint64_t *out, struct lr_err *err)
{
	int r = units_parse_rate(val, min, max, out);

	if (r == -ERANGE)
		return report_range(r, opt, val, min, max, 1000, "kmgt",
				    " bits/s", err);
	return r ? report(r, opt, val, "a rate such as 940m or 1gbit", min, max,
			  "", err)
		 : 0;
}

int opts_ms(const char *opt, const char *val, uint64_t min_ms, uint64_t max_ms,
	    uint64_t *out, struct lr_err *err)
{
	int r = units_parse_ms(val, min_ms, max_ms, out);

	if (r == -ERANGE)
		return lr_err_set(err, r,
				  "%s '%s' is out of range (%.3g to "
				  "%.6g seconds)",
				  opt, val, min_ms / 1000.0, max_ms / 1000.0);
	return r ? lr_err_set(err, r, "%s '%s' is not a number of seconds", opt,
			      val)
		 : 0;
}

int opts_msec(const char *opt, const char *val, uint64_t min_ms,
	      uint64_t max_ms, uint64_t *out, struct lr_err *err)
{
	int r = units_parse_msec(val, min_ms, max_ms, out);

	return r ? report(r, opt, val,
			  "a time in milliseconds (500, 500ms or 0.5s)", min_ms,
			  max_ms, " ms", err)
		 : 0;
}

int opts_uint(const char *opt, const char *val, uint64_t min, uint64_t max,
	      uint64_t *out, struct lr_err *err)
{
	int r = units_parse_uint(val, min, max, out);

	return r ? report(r, opt, val, "a whole number", min, max, "", err) : 0;
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
