// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for what the far end over ssh sends back and what a
 * user types: ssh_boot_parse (the far end's line, ssh.h),
 * ssh_self_parse (the far shell's line of --copy-self) and remote_parse
 * ([USER@]HOST[:PATH], remote.h), each on the same input.
 *
 * Invariants checked, beyond "no sanitizer report":
 *  - an accepted line gives a NUL-terminated numeric address, a port
 *    1-65535 and a token that parses, and formats back to a line that
 *    parses to the same;
 *  - a refused line has a message;
 *  - an accepted LINERATE-SELF line gives a NUL-terminated system and
 *    machine of 1-32 letters, digits, '_', '.', '-', '+' and a byte
 *    order 0-2;
 *  - an accepted operand has a non-empty host, and user and host of
 *    letters, digits, '.', '_', '-' (':' and '%' in a host) without a
 *    leading '-'; its path points into the input.
 *
 * The input is copied into a buffer of its exact size (and a NUL-ended
 * copy for remote_parse) so that reading past it is an ASan report.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "remote.h"
#include "ssh.h"
#include "token.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_boot(const char *line, size_t size)
{
	struct ssh_boot b, c;
	struct lr_err e = { 0 };
	uint8_t psk[SESSION_PSK_LEN];
	char again[SSH_BOOT_MAX + 2];

	if (ssh_boot_parse(line, size, &b, &e)) {
		if (!e.msg[0])
			abort();
		return;
	}
	if (!memchr(b.addr, 0, sizeof(b.addr)) || !b.port ||
	    !memchr(b.token, 0, sizeof(b.token)) ||
	    session_token_psk(b.token, psk))
		abort();
	if (ssh_boot_format(&b, again, sizeof(again)) ||
	    ssh_boot_parse(again, strlen(again), &c, &e) ||
	    strcmp(b.addr, c.addr) || b.port != c.port ||
	    strcmp(b.token, c.token))
		abort();
}

static bool self_word(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (!n || n == cap)
		return false;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789_.-+",
			    *s))
			return false;
	return true;
}

static void check_self(const char *line, size_t size)
{
	struct ssh_self s;
	struct lr_err e = { 0 };

	if (ssh_self_parse(line, size, &s, &e)) {
		if (!e.msg[0])
			abort();
		return;
	}
	if (!self_word(s.os, sizeof(s.os)) ||
	    !self_word(s.machine, sizeof(s.machine)) || s.order > 2)
		abort();
}

static bool word_clean(const char *s)
{
	if (s[0] == '-')
		return false;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789._-:%",
			    *s))
			return false;
	return true;
}

static void check_operand(const char *arg, size_t size)
{
	static const unsigned flags[] = { REMOTE_PATH, REMOTE_HOST_ONLY, 0 };
	struct remote_addr ra;
	struct lr_err e = { 0 };
	size_t i;

	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		if (remote_parse(arg, flags[i], &ra, &e)) {
			if (!e.msg[0])
				abort();
			continue;
		}
		if (!ra.host[0] || !word_clean(ra.host) ||
		    (ra.user[0] && !word_clean(ra.user)))
			abort();
		if (ra.has_path && (ra.path < arg || ra.path > arg + size))
			abort();
		if ((flags[i] & REMOTE_PATH) && !ra.has_path)
			abort();
		if ((flags[i] & REMOTE_HOST_ONLY) && ra.has_path)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size ? size : 1), *arg = malloc(size + 1);

	if (!line || !arg)
		abort();
	memcpy(line, data, size);
	check_boot(line, size);
	check_self(line, size);
	memcpy(arg, data, size);
	arg[size] = '\0';
	check_operand(arg, strlen(arg));
	free(line);
	free(arg);
	return 0;
}
