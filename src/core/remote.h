/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_REMOTE_H
#define LINERATE_REMOTE_H

/*
 * The one grammar of an operand that names another machine, for every
 * command (docs/linerate.1, "HOST and PATH"):
 *
 *   [USER@]HOST:PATH     send, get
 *   [USER@]HOST[:PORT]   bench, doctor (no path, so a port may follow)
 *
 * HOST is a name, an IPv4 address or an IPv6 address in brackets
 * ([2001:db8::1]); everything after the first ':' that follows the host
 * is the path, colons included; the port of a command with a path is
 * never part of it (-p). A bare IPv6 address (two colons or more, no
 * brackets) is a HOST where no path may follow (bench, doctor).
 */

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

#define REMOTE_MAX_USER 64
#define REMOTE_MAX_HOST 255

enum {
	REMOTE_PATH = 1u << 0,	    /* a ':' must follow the host */
	REMOTE_HOST_ONLY = 1u << 1, /* none may; a PORT may */
};

struct remote_addr {
	char user[REMOTE_MAX_USER + 1]; /* "" = none given */
	char host[REMOTE_MAX_HOST + 1]; /* without brackets */
	bool bracketed;			/* written [HOST] */
	bool has_path;			/* a ':' followed the host */
	uint16_t port;	  /* REMOTE_HOST_ONLY: after it; 0 = none */
	const char *path; /* after it, in the operand; "" if none */
	/* the path starts with digits and then ':' or ends there: perhaps
	 * meant as a port (the CLI says where a port goes) */
	bool port_like;
};

/*
 * Whether an operand names another machine rather than a local path: it
 * has a ':' before any '/' (scp's rule; ./a:b is local), or starts with
 * '[' (a bracketed host; ./[a is local).
 */
bool remote_is_remote(const char *arg);

/*
 * Parse arg as [USER@]HOST[:PATH] (flags: REMOTE_PATH or
 * REMOTE_HOST_ONLY). USER and HOST are letters, digits, '.', '_' and '-'
 * (HOST also ':' and '%' of an IPv6 address), not empty and not starting
 * with '-': they may reach ssh's command line and a ProxyCommand.
 * ra->path points into arg. 0 or -EINVAL with err set.
 */
int remote_parse(const char *arg, unsigned flags, struct remote_addr *ra,
		 struct lr_err *err);

/*
 * A PATH below a linerate server's root (the direct mode, not ssh's), as
 * the user typed it, checked before connecting: a leading "~" or "~/"
 * means the root itself (*path advances past it and its slashes; never
 * a directory named "~"); "~USER" and a ".." component are refused in
 * words (the server's root cannot be left). 0 or -EINVAL with err set.
 */
int remote_root_path(const char **path, struct lr_err *err);

/*
 * USER@HOST or HOST as ssh takes it (an IPv6 address without brackets)
 * into out (cap bytes). 0 or -ENAMETOOLONG.
 */
int remote_ssh_dest(const struct remote_addr *ra, char *out, unsigned cap);

#endif
