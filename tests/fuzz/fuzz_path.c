// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the receiver's path handling in fsio.[ch]: the
 * input is a relative path as a peer sends it. Nothing here touches the
 * file system.
 *
 * Invariants checked, beyond "no sanitizer report":
 *  - an accepted path is 1..FSIO_MAX_PATH bytes, has no leading, trailing
 *    or doubled '/', no NUL or control byte, no "." or ".." component, no
 *    component over FSIO_MAX_NAME and at most FSIO_MAX_DEPTH components;
 *  - a rejected path has a non-empty reason;
 *  - fsio_split of an accepted path gives a NUL-terminated parent and
 *    name that join back to the path, and a name that is itself accepted;
 *  - the temporary and journal names of that name are accepted single
 *    components starting with '.';
 *  - fsio_escape (of any input) gives NUL-terminated output within cap,
 *    with no control byte; with room for everything, un-escaping it gives
 *    the input back; a smaller cap gives a prefix of that output.
 *
 * The input is copied into a buffer of its exact size so that reading past
 * it is an ASan report.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "fsio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void check_accepted(const char *p, size_t len)
{
	size_t i, start = 0, depth = 0;

	if (len == 0 || len > FSIO_MAX_PATH || p[0] == '/' || p[len - 1] == '/')
		abort();
	for (i = 0; i <= len; i++) {
		size_t n;

		if (i < len) {
			unsigned char c = (unsigned char)p[i];

			if (c < 0x20 || c == 0x7f)
				abort();
			if (c != '/')
				continue;
		}
		n = i - start;
		if (n == 0 || n > FSIO_MAX_NAME)
			abort();
		if (n <= 2 && p[start] == '.' &&
		    (n == 1 || p[start + 1] == '.'))
			abort();
		depth++;
		start = i + 1;
	}
	if (depth > FSIO_MAX_DEPTH)
		abort();
}

static void check_single_name(const char *name)
{
	size_t n = strnlen(name, FSIO_MAX_NAME + 1);
	const char *why = NULL;

	if (n > FSIO_MAX_NAME || memchr(name, '/', n))
		abort();
	if (fsio_path_check(name, n, &why))
		abort();
}

static void check_split(const char *p, size_t len)
{
	char *parent = malloc(FSIO_MAX_PATH + 1);
	char *name = malloc(FSIO_MAX_NAME + 1);
	char *side = malloc(FSIO_MAX_NAME + 1);
	size_t plen, nlen;

	if (!parent || !name || !side)
		abort();
	fsio_split(p, len, parent, name);
	plen = strnlen(parent, FSIO_MAX_PATH + 1);
	nlen = strnlen(name, FSIO_MAX_NAME + 1);
	if (plen > FSIO_MAX_PATH || nlen > FSIO_MAX_NAME || nlen == 0)
		abort();
	if (plen == 0) {
		if (nlen != len || memcmp(name, p, len))
			abort();
	} else {
		if (plen + 1 + nlen != len || memcmp(parent, p, plen) ||
		    p[plen] != '/' || memcmp(name, p + plen + 1, nlen))
			abort();
	}
	check_single_name(name);

	fsio_temp_name(name, side);
	if (side[0] != '.')
		abort();
	check_single_name(side);
	fsio_journal_name(name, side);
	if (side[0] != '.')
		abort();
	check_single_name(side);

	free(side);
	free(name);
	free(parent);
}

/* Undo fsio_escape; false when out is not a well-formed escaping. */
static bool unescape_equals(const char *out, const char *in, size_t len)
{
	size_t i = 0, o = 0;

	while (out[o]) {
		unsigned char c = (unsigned char)out[o];
		int hi, lo;

		if (c < 0x20 || c == 0x7f)
			return false;
		if (c != '\\') {
			o++;
		} else if (out[o + 1] == '\\') {
			o += 2;
		} else if (out[o + 1] == 'x') {
			hi = hexval(out[o + 2]);
			lo = out[o + 2] ? hexval(out[o + 3]) : -1;
			if (hi < 0 || lo < 0)
				return false;
			c = (unsigned char)(hi << 4 | lo);
			o += 4;
		} else {
			return false;
		}
		if (i >= len || (unsigned char)in[i] != c)
			return false;
		i++;
	}
	return i == len;
}

static void check_escape(const char *p, size_t len)
{
	static const size_t caps[] = { 1, 2, 4, 5, 17, 256 };
	size_t full_cap = 4 * len + 1, full_len, i;
	char *full = malloc(full_cap);
	char none = 'z';

	if (!full)
		abort();
	if (fsio_escape(p, len, full, full_cap) != full)
		abort();
	full_len = strnlen(full, full_cap);
	if (full_len >= full_cap || !unescape_equals(full, p, len))
		abort();

	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		char *out = malloc(caps[i]);
		size_t n;

		if (!out)
			abort();
		fsio_escape(p, len, out, caps[i]);
		n = strnlen(out, caps[i]);
		if (n >= caps[i] || n > full_len || memcmp(out, full, n))
			abort();
		free(out);
	}
	fsio_escape(p, len, &none, 0);
	if (none != 'z')
		abort();
	free(full);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *p = malloc(size ? size : 1);
	const char *why = NULL;
	int r;

	if (!p)
		return 0;
	memcpy(p, data, size);
	r = fsio_path_check(p, size, &why);
	if (r == 0) {
		check_accepted(p, size);
		check_split(p, size);
	} else if (r != LR_EBADPATH || !why || !why[0]) {
		abort();
	}
	check_escape(p, size);
	free(p);
	return 0;
}
