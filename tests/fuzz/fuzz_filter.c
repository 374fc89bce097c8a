// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for filter.[ch], the parser of rule files and the
 * matcher that a pull's peer feeds with its own patterns: the input is
 * rule lines, then a NUL byte, then paths, one a line (a trailing '/'
 * marks a directory).
 *
 * Invariants checked, beyond "no sanitizer report" (and no hang: the
 * matcher's tries stay near pattern × path):
 *  - a parse that fails leaves the rules added before it usable;
 *  - every rule's text, added again with filter_add, gives a filter that
 *    answers every path the same way (what a server rebuilds from the
 *    request is what the client meant);
 *  - the answer for a path does not depend on anything past its length;
 *  - the same rule lines read as a --files-from list: every path it
 *    keeps is relative, below the source directory (no "..", no ".",
 *    no empty component), admitted by the list, and admitted the same
 *    by a list rebuilt from it as it travels (NUL-separated).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "filelist.h"
#include "filter.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void match_paths(const struct lr_filter *f, const struct lr_filter *g,
			const char *p, size_t n)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t k = nl ? (size_t)(nl - p) : n;
		size_t len = k;
		bool dir = len && p[len - 1] == '/';
		char *copy;

		if (dir)
			len--;
		if (len <= 4096) {
			copy = malloc(len + 1);
			if (!copy)
				return;
			memcpy(copy, p, len);
			copy[len] = 'X'; /* past the length: never read */
			CHECK(filter_excluded(f, copy, len, dir) ==
			      filter_excluded(g, copy, len, dir));
			free(copy);
		}
		p += k + (nl ? 1 : 0);
		n -= k + (nl ? 1 : 0);
	}
}

/* A path as a list keeps it: relative, every component real. */
static void check_path(const char *p, size_t n)
{
	size_t i, start = 0;

	for (i = 0; i <= n; i++) {
		if (i < n && p[i] != '/')
			continue;
		CHECK(i > start);
		CHECK(!(i - start == 1 && p[start] == '.'));
		CHECK(!(i - start == 2 && p[start] == '.' &&
			p[start + 1] == '.'));
		start = i + 1;
	}
}

static void check_list(const char *txt, size_t n, const char *paths,
		       size_t plen)
{
	struct lr_filter f = { 0 }, g = { 0 };
	struct lr_err e = { 0 };
	uint32_t i, count;
	char *wire;
	size_t at = 0;

	if (list_add_buf(&f.list, txt, n, false, &e) || !f.list) {
		filter_free(&f);
		return;
	}
	count = list_count(f.list);
	wire = malloc((size_t)list_bytes(f.list) + 1);
	CHECK(wire != NULL);
	for (i = 0; i < count; i++) {
		size_t len;
		const char *p = list_path(f.list, i, &len);

		if (!len)
			continue;
		check_path(p, len);
		CHECK(!filter_excluded(&f, p, len, false));
		if (at)
			wire[at++] = '\0';
		memcpy(wire + at, p, len);
		at += len;
	}
	CHECK(list_add_wire(&g.list, wire, at, &e) == 0);
	if (list_has_root(f.list))
		CHECK(list_add_wire(&g.list, ".", 1, &e) == 0);
	CHECK(list_count(g.list) == count);
	if (paths)
		match_paths(&f, &g, paths, plen);
	free(wire);
	filter_free(&f);
	filter_free(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t nrules = nul ? (size_t)(nul - data) : size;
	struct lr_filter f = { 0 }, g = { 0 };
	struct lr_err e = { 0 };
	char *rules = malloc(nrules ? nrules : 1);
	unsigned i;

	if (!rules)
		return 0;
	memcpy(rules, data, nrules);
	(void)filter_add_lines(&f, size && data[0] == '+', rules, nrules, &e);
	free(rules);
	for (i = 0; i < f.n; i++) {
		size_t n;
		bool inc;
		const char *t = filter_rule_text(&f, i, &n, &inc);

		CHECK(filter_add(&g, inc, t, n, &e) == 0);
	}
	CHECK(g.n == f.n);
	if (nul)
		match_paths(&f, &g, (const char *)nul + 1, size - nrules - 1);
	filter_free(&f);
	filter_free(&g);
	check_list((const char *)data, nrules,
		   nul ? (const char *)nul + 1 : NULL,
		   nul ? size - nrules - 1 : 0);
	return 0;
}
