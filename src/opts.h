/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_OPTS_H
#define LINERATE_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"

/*
 * Command-line helpers shared by the cmd_*.c files: each parses one
 * option's value through the checked parsers of units.h and, on failure,
 * fills err with a message naming the option and the value, and a range
 * in the option's own unit ("(100 ms to 1 h)", "too large (at most 8
 * EiB)"), never a raw count. Return 0 or a negative errno.
 */
int opts_bytes(const char *opt, const char *val, uint64_t min, uint64_t max,
	       uint64_t *out, struct lr_err *err);
/* Bytes per second, a size's syntax (send's --limit: 50M is 50 MiB/s). */
int opts_byte_rate(const char *opt, const char *val, uint64_t min, uint64_t max,
		   uint64_t *out, struct lr_err *err);
/* Bits per second (units_parse_rate). */
int opts_rate(const char *opt, const char *val, uint64_t min, uint64_t max,
	      uint64_t *out, struct lr_err *err);
/* A duration, a bare number in seconds (units_parse_ms); out in ms. */
int opts_ms(const char *opt, const char *val, uint64_t min_ms, uint64_t max_ms,
	    uint64_t *out, struct lr_err *err);
/* As opts_ms, and 0 ("0", "0s") besides [min_ms, max_ms]: none. */
int opts_ms_or_zero(const char *opt, const char *val, uint64_t min_ms,
		    uint64_t max_ms, uint64_t *out, struct lr_err *err);
/* A duration, a bare number in milliseconds as iperf3 (units_parse_msec). */
int opts_msec(const char *opt, const char *val, uint64_t min_ms,
	      uint64_t max_ms, uint64_t *out, struct lr_err *err);
/* An age in whole seconds (units_parse_age). */
int opts_age(const char *opt, const char *val, uint64_t min_s, uint64_t max_s,
	     uint64_t *out, struct lr_err *err);
int opts_uint(const char *opt, const char *val, uint64_t min, uint64_t max,
	      uint64_t *out, struct lr_err *err);
/* The message for getopt_long's ':' (missing value) or '?' (unknown
 * option) result c; call right after getopt_long returned it. */
int opts_getopt_error(int c, char **argv, struct lr_err *err);

/*
 * The token's key for a client or server: from the file (first line) when
 * path is set, else from LINERATE_TOKEN when use_env. *have is false when
 * neither gives one. Never from argv.
 */
int opts_token_psk(const char *path, bool use_env, uint8_t psk[32], bool *have,
		   struct lr_err *err);

/* Ask for the token on the terminal, without echo; -ENOTTY without one. */
int opts_prompt_token(const char *prompt, uint8_t psk[32], struct lr_err *err);

/* After a transfer's error message msg (cap bytes), the option that helps
 * with a file that failed with code (-EEXIST: --overwrite or --update;
 * -EFBIG: --chunk), when one does. */
void opts_add_hint(char *msg, size_t cap, int code);

/* Exit codes, documented in the man page. */
enum {
	EXIT_OK = 0,
	EXIT_RUNTIME = 1,
	EXIT_USAGE = 2,
	EXIT_PARTIAL = 23, /* rsync's: sources not read; the rest went */
};

#endif
