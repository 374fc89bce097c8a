/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_OPTS_COMMON_H
#define LINERATE_OPTS_COMMON_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"

/*
 * The options the network subcommands share (bench, serve, send and get,
 * recv, doctor), declared and parsed in one table. Each command says
 * which of them it takes and within which bounds, and gives a function
 * for its own options; it still owns their defaults and its checks.
 */

enum opts_common_bit {
	OPTS_PORT = 1u << 0,	 /* -p, --port PORT */
	OPTS_PARALLEL = 1u << 1, /* -P, --parallel N */
	OPTS_FAMILY = 1u << 2,	 /* -4, --ipv4 and -6, --ipv6 */
	OPTS_BIND = 1u << 3,	 /* -B, --bind ADDR */
	OPTS_TOKEN = 1u << 4,	 /* --token-file FILE */
	OPTS_CIPHER = 1u << 5,	 /* --cipher NAME */
};

/* getopt_long's values of the long-only ones; a command's own long-only
 * options start at 256. */
enum { OPTS_ID_TOKEN_FILE = 200, OPTS_ID_CIPHER };

/* What a command takes of them. */
struct opts_common_spec {
	unsigned take;	      /* enum opts_common_bit */
	uint16_t min_port;    /* 0 where 0 asks for any free port */
	unsigned max_streams; /* -P's bound (OPTS_PARALLEL) */
	bool ssh_hint;	      /* -P out of range: say where ssh's port goes */
};

/* Their values; what was not given is 0, NULL or AF_UNSPEC. */
struct opts_common {
	uint16_t port; /* -p */
	bool have_port;
	unsigned streams;      /* -P; 0 when not given */
	int family;	       /* AF_UNSPEC unless -4 or -6 */
	const char *bind_addr; /* -B; NULL */
	const char *token_file, *cipher;
};

/* One of a command's own options: c is getopt_long's value (optarg
 * holds its value); ':' and '?' are mistakes (opts_getopt_error says
 * which). 0, 1 for --help, or -EINVAL with err set. */
typedef int (*opts_own_fn)(int c, char **argv, void *ctx, struct lr_err *err);

/*
 * Parse argv's options: the common ones of spec->take into *net, the
 * others through own(c, argv, ctx, err). own_shorts is getopt's syntax without the leading ':',
 * own_longs ends with a zero entry; together with the common ones at most
 * OPTS_MAX_LONG. 0 with optind at the first operand, 1 for --help, or
 * -EINVAL with err set.
 */
#define OPTS_MAX_LONG 64
int opts_parse(const struct opts_common_spec *spec, const char *own_shorts,
	       const struct option *own_longs, opts_own_fn own, void *ctx,
	       int argc, char **argv, struct opts_common *net,
	       struct lr_err *err);

/*
 * A command's option tables, as its parser reads them: the common ones it
 * takes (common is NULL when it takes none), its own letters in getopt's
 * syntax without the leading ':', its own long options ending with a zero
 * entry. The completion scripts and the help checks read the same tables.
 */
struct cmd_opts {
	const struct opts_common_spec *common;
	const char *shorts;
	const struct option *longs;
};

/* One option of a command: its letter (0 for a long-only one), its long
 * name (NULL for a letter without one) and getopt's has_arg. */
struct opts_entry {
	int letter;
	const char *name;
	int has_arg;
};

/* The options of t, common ones first, up to cap of them into out; how
 * many there are (more than cap when out is too small). */
size_t opts_entries(const struct cmd_opts *t, struct opts_entry *out,
		    size_t cap);

/* Where to connect from or listen on, into the command's own options:
 * the port given, else dflt; the family; the -B address when bind_addr
 * is not NULL. */
void opts_common_addr(const struct opts_common *n, uint16_t dflt,
		      uint16_t *port, int *family, const char **bind_addr);

/* --cipher's name as the engine wants it (enum crypto_cipher), or
 * CRYPTO_CIPHER_AUTO when it is not given or "auto"; without allow_none,
 * "none" is refused as well. -EINVAL with err set. */
int opts_cipher_wish(const struct opts_common *o, bool allow_none,
		     uint8_t *wish, struct lr_err *err);

/*
 * A server without a token refused a token the client took from
 * LINERATE_TOKEN in its environment (not --token-file): err's message
 * says so, and how to leave it out.
 */
void opts_env_token_hint(const struct opts_common *net, struct lr_err *err);

#endif
