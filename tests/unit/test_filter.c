// SPDX-License-Identifier: MIT
/*
 * Unit tests of filter.[ch]: each rule of the documented list against
 * paths, with the answers rsync (3.5.0 here) gave for the same rules and trees
 * (rsync -a --exclude=... SRC/ DST/); rule order; the rule-file parser;
 * bounds; and patterns built to make a naive matcher backtrack forever.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "err.h"
#include "filelist.h"
#include "filter.h"

struct probe {
	const char *path;
	bool dir, out; /* out: left out */
};

/* One exclude rule against probes: each answer as rsync's. */
static void check1(const char *rule, const struct probe *p, size_t n)
{
	struct lr_filter f = { 0 };
	struct lr_err e = { 0 };
	size_t i;

	assert_int_equal(filter_add_arg(&f, false, rule, &e), 0);
	for (i = 0; i < n; i++) {
		bool got = filter_excluded(&f, p[i].path, strlen(p[i].path),
					   p[i].dir);
		if (got != p[i].out)
			fail_msg("rule '%s', path '%s'%s: %s, rsync: %s", rule,
				 p[i].path, p[i].dir ? "/" : "",
				 got ? "out" : "in", p[i].out ? "out" : "in");
	}
	filter_free(&f);
}

#define CHECK(rule, ...)                                      \
	do {                                                  \
		const struct probe p_[] = { __VA_ARGS__ };    \
		check1(rule, p_, sizeof(p_) / sizeof(p_[0])); \
	} while (0)

static void test_star_and_question(void **s)
{
	(void)s;
	CHECK("*.txt", { "a.txt", 0, 1 }, { "d/a.txt", 0, 1 },
	      { "a.txt.gz", 0, 0 }, { "txt", 0, 0 }, { "d.txt", 1, 1 });
	CHECK("c?", { "c1", 0, 1 }, { "cx", 0, 1 }, { "c", 0, 0 },
	      { "c12", 0, 0 }, { "x/c2", 0, 1 });
	CHECK("*", { "a", 0, 1 }, { "d", 1, 1 });
	/* '*' never crosses a '/' */
	CHECK("a*b", { "axb", 0, 1 }, { "a/b", 0, 0 }, { "q/ab", 0, 1 });
}

static void test_sets(void **s)
{
	(void)s;
	CHECK("c[12]", { "c1", 0, 1 }, { "c2", 0, 1 }, { "cx", 0, 0 });
	CHECK("c[!1]", { "c1", 0, 0 }, { "c2", 0, 1 }, { "cx", 0, 1 });
	CHECK("c[^1]", { "c1", 0, 0 }, { "c2", 0, 1 });
	CHECK("[]a]", { "]", 0, 1 }, { "a", 0, 1 }, { "b", 0, 0 });
	CHECK("[a-c]x", { "bx", 0, 1 }, { "dx", 0, 0 });
	CHECK("[[:digit:]]", { "7", 0, 1 }, { "a", 0, 0 });
	/* "[a]" names a file "[a]" only through an escape */
	CHECK("br[a]ck", { "brack", 0, 1 }, { "br[a]ck", 0, 0 });
	CHECK("br\\[a]ck", { "br[a]ck", 0, 1 }, { "brack", 0, 0 });
	/* a set without its ']' matches nothing */
	CHECK("a[b*", { "a[bc", 0, 0 }, { "ab", 0, 0 });
}

static void test_escapes_and_literals(void **s)
{
	(void)s;
	CHECK("q\\*", { "q*", 0, 1 }, { "qx", 0, 0 });
	CHECK("st\\*r", { "st*r", 0, 1 }, { "star", 0, 0 });
	/* no wildcard: compared as it is, backslash and all */
	CHECK("st\\\\ar", { "st\\\\ar", 0, 1 }, { "st\\ar", 0, 0 });
}

static void test_anchor(void **s)
{
	(void)s;
	CHECK("/a/b", { "a/b", 0, 1 }, { "x/a/b", 0, 0 }, { "a/b", 1, 1 });
	CHECK("/top", { "top", 0, 1 }, { "d/top", 0, 0 });
	CHECK("/**/b", { "a/b", 1, 1 }, { "x/a/b", 1, 1 }, { "b", 1, 0 });
	CHECK("/x/h/1", { "x/h/1", 0, 1 }, { "y/x/h/1", 0, 0 });
}

static void test_trailing_slash(void **s)
{
	(void)s;
	CHECK("foo/", { "foo", 1, 1 }, { "foo", 0, 0 }, { "k/foo", 1, 1 },
	      { "m/foo", 0, 0 });
	CHECK("k/foo/", { "k/foo", 1, 1 }, { "x/k/foo", 1, 1 },
	      { "k/foo", 0, 0 });
	CHECK("x/h/", { "x/h", 1, 1 }, { "x/h", 0, 0 });
}

static void test_slash_inside(void **s)
{
	(void)s;
	/* the end of the path, whole components */
	CHECK("a/b", { "a/b", 1, 1 }, { "x/a/b", 1, 1 }, { "xa/b", 1, 0 },
	      { "a/bfile", 0, 0 }, { "b", 0, 0 });
	CHECK("a/*", { "a/b", 1, 1 }, { "a/bfile", 0, 1 }, { "x/a/b", 1, 1 },
	      { "a", 1, 0 });
	CHECK("*a/b", { "a/b", 1, 1 }, { "x/a/b", 1, 1 }, { "xa/b", 1, 1 });
}

static void test_double_star(void **s)
{
	(void)s;
	CHECK("**/foo", { "foo", 1, 1 }, { "x/foo", 1, 1 }, { "a/b/foo", 0, 1 },
	      { "xfoo", 0, 0 });
	CHECK("foo/**", { "foo", 1, 0 }, { "foo/f", 0, 1 }, { "x/foo/g", 0, 1 },
	      { "foo/d/e", 0, 1 });
	CHECK("x/**/h", { "x/a/b/h", 0, 1 }, { "x/h", 1, 0 },
	      { "x/q/h", 1, 1 });
	CHECK("**foo", { "foo", 1, 1 }, { "x/foo", 1, 1 }, { "xfoo", 0, 1 });
	CHECK("a**", { "a", 1, 1 }, { "x/a", 1, 1 }, { "xa", 0, 0 },
	      { "ab/c", 0, 1 });
	CHECK("**", { "a", 0, 1 }, { "a/b", 1, 1 });
	CHECK("**/h/*", { "x/h/1", 0, 1 }, { "x/q/h/2", 0, 1 },
	      { "x/h", 1, 0 });
}

static void test_triple_star(void **s)
{
	(void)s;
	CHECK("d1/***", { "d1", 1, 1 }, { "d1", 0, 0 }, { "d1/d2", 1, 1 },
	      { "d1/d2/z.c", 0, 1 }, { "x/d1", 1, 1 }, { "d1x", 1, 0 });
}

/* First match wins; nothing matched is kept. */
static void test_order(void **s)
{
	struct lr_filter f = { 0 };
	struct lr_err e = { 0 };

	(void)s;
	assert_int_equal(filter_add_arg(&f, true, "*/", &e), 0);
	assert_int_equal(filter_add_arg(&f, false, "*", &e), 0);
	assert_false(filter_excluded(&f, "x", 1, true));
	assert_true(filter_excluded(&f, "x/a", 3, false));
	filter_free(&f);

	/* "+ " and "- " say which kind, whatever the option */
	assert_int_equal(filter_add_arg(&f, false, "+ bb", &e), 0);
	assert_int_equal(filter_add_arg(&f, true, "- b*", &e), 0);
	assert_false(filter_excluded(&f, "bb", 2, false));
	assert_true(filter_excluded(&f, "ba", 2, false));
	assert_false(filter_excluded(&f, "k", 1, false));
	/* "!" clears */
	assert_int_equal(filter_add_arg(&f, false, "!", &e), 0);
	assert_int_equal(f.n, 0);
	assert_false(filter_excluded(&f, "ba", 2, false));
	filter_free(&f);
	assert_false(filter_excluded(NULL, "x", 1, false));
}

static void test_rule_text_travels(void **s)
{
	struct lr_filter f = { 0 }, g = { 0 };
	struct lr_err e = { 0 };
	const char *rules[] = { "/a/", "- *.o", "+ keep/***", "**/x" };
	unsigned i;

	(void)s;
	for (i = 0; i < 4; i++)
		assert_int_equal(filter_add_arg(&f, false, rules[i], &e), 0);
	/* what the server rebuilds from the text and kind is the same */
	for (i = 0; i < f.n; i++) {
		size_t n;
		bool inc;
		const char *t = filter_rule_text(&f, i, &n, &inc);

		assert_int_equal(filter_add(&g, inc, t, n, &e), 0);
	}
	assert_memory_equal(filter_rule_text(&f, 0, &(size_t){ 0 },
					     &(bool){ 0 }),
			    "/a/", 3);
	{
		const char *paths[] = { "a",	"b/a",	    "x.o",
					"keep", "keep/y.o", "q/x" };
		for (i = 0; i < 6; i++) {
			size_t n = strlen(paths[i]);

			assert_int_equal(filter_excluded(&f, paths[i], n, true),
					 filter_excluded(&g, paths[i], n,
							 true));
		}
	}
	assert_true(filter_excluded(&g, "a", 1, true));
	assert_true(filter_excluded(&g, "keep/y.o", 8, false)); /* *.o first */
	assert_false(filter_excluded(&g, "keep/y", 6, false));
	filter_free(&f);
	filter_free(&g);
}

static void test_lines(void **s)
{
	struct lr_filter f = { 0 };
	struct lr_err e = { 0 };
	const char text[] = "# a comment\n; another\n\n+ bb\r\nb*\n- x/\nk \n"
			    "last";

	(void)s;
	assert_int_equal(
		filter_add_lines(&f, false, text, sizeof(text) - 1, &e), 0);
	assert_int_equal(f.n, 5);
	assert_false(filter_excluded(&f, "bb", 2, false));
	assert_true(filter_excluded(&f, "ba", 2, false));
	assert_true(filter_excluded(&f, "x", 1, true));
	/* whitespace is part of a pattern, as in rsync */
	assert_false(filter_excluded(&f, "k", 1, false));
	assert_true(filter_excluded(&f, "k ", 2, false));
	assert_true(filter_excluded(&f, "last", 4, false));
	filter_free(&f);

	/* include-from: plain lines are includes */
	assert_int_equal(filter_add_lines(&f, true, "a\n", 2, &e), 0);
	assert_false(filter_excluded(&f, "a", 1, false));
	filter_free(&f);
}

static void test_bounds(void **s)
{
	struct lr_filter f = { 0 };
	struct lr_err e = { 0 };
	char big[FILTER_MAX_PATTERN + 2];
	unsigned i;

	(void)s;
	assert_int_equal(filter_add(&f, false, "", 0, &e), -EINVAL);
	assert_int_equal(filter_add(&f, false, "a\tb", 3, &e), -EINVAL);
	assert_int_equal(filter_add(&f, false, "a\nb", 3, &e), -EINVAL);
	assert_int_equal(filter_add(&f, false, "/", 1, &e), -EINVAL);
	assert_int_equal(filter_add(&f, false, "//", 2, &e), -EINVAL);
	memset(big, 'a', sizeof(big));
	assert_int_equal(filter_add(&f, false, big, FILTER_MAX_PATTERN, &e), 0);
	assert_int_equal(filter_add(&f, false, big, FILTER_MAX_PATTERN + 1, &e),
			 -EINVAL);
	filter_free(&f);
	for (i = 0; i < FILTER_MAX_RULES; i++)
		assert_int_equal(filter_add(&f, false, "x", 1, &e), 0);
	assert_int_equal(filter_add(&f, false, "x", 1, &e), -E2BIG);
	filter_free(&f);
	/* a line with a NUL in it */
	assert_int_equal(filter_add_lines(&f, false, "a\0b\n", 4, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "line 1"));
	filter_free(&f);
}

static void test_read_file(void **s)
{
	struct lr_filter f = { 0 };
	struct lr_err e = { 0 };
	char path[] = "/tmp/lr-filter-XXXXXX";
	int fd = mkstemp(path);

	(void)s;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "*.o\n+ x\n", 8), 8);
	close(fd);
	assert_int_equal(filter_read_file(&f, false, path, &e), 0);
	assert_int_equal(f.n, 2);
	assert_true(filter_excluded(&f, "a.o", 3, false));
	filter_free(&f);
	unlink(path);
	assert_int_equal(filter_read_file(&f, false, path, &e), -ENOENT);
	assert_non_null(strstr(e.msg, path));
}

/* --files-from: what a list admits, with and without -r, as rsync -a
 * --files-from (-r) sends it; normalization; comments; refusals. */
static void test_files_from(void **s)
{
	static const char txt[] = "a/b/f1\n/top\n./c//\n# x\n;y\n\r\n"
				  "d/./e\r\n";
	struct lr_filter f = { 0 };
	struct lr_err e = { 0 };
	const char *why = NULL;
	size_t len;

	(void)s;
	assert_int_equal(list_add_buf(&f.list, txt, sizeof(txt) - 1, false, &e),
			 0);
	assert_int_equal(list_count(f.list), 4);
	assert_string_equal(list_path(f.list, 1, &len), "top");
	assert_string_equal(list_path(f.list, 2, &len), "c");
	assert_string_equal(list_path(f.list, 3, &len), "d/e");
	/* listed, and the parents of listed paths (directories only) */
	assert_false(filter_excluded(&f, "a", 1, true));
	assert_true(filter_excluded(&f, "a", 1, false));
	assert_false(filter_excluded(&f, "a/b", 3, true));
	assert_false(filter_excluded(&f, "a/b/f1", 6, false));
	assert_true(filter_excluded(&f, "a/b/f2", 6, false));
	assert_false(filter_excluded(&f, "top", 3, false));
	assert_false(filter_excluded(&f, "c", 1, true));
	assert_true(filter_excluded(&f, "c/h", 3, false));
	assert_true(filter_excluded(&f, "#x", 2, false));
	assert_true(filter_excluded(&f, "other", 5, true));
	/* -r: below a listed directory too, not below an implied one */
	list_set_recurse(f.list, true);
	assert_false(filter_excluded(&f, "c/h", 3, false));
	assert_false(filter_excluded(&f, "c/x/y", 5, false));
	assert_true(filter_excluded(&f, "a/g", 3, false));
	/* the rules still apply to what the list admits */
	assert_int_equal(filter_add_arg(&f, false, "*.o", &e), 0);
	assert_int_equal(list_add(&f.list, "c/k.o", 5, &why), 0);
	assert_true(filter_excluded(&f, "c/k.o", 5, false));
	filter_free(&f);

	/* NUL-separated, comments and all as they come on the wire */
	assert_int_equal(list_add_wire(&f.list, "#a\0b/c", 6, &e), 0);
	assert_false(filter_excluded(&f, "#a", 2, false));
	assert_false(filter_excluded(&f, "b", 1, true));
	assert_int_equal(list_bytes(f.list), 7);
	filter_free(&f);
	/* ".": the directory itself, everything with -r */
	assert_int_equal(list_add_buf(&f.list, ".\n", 2, false, &e), 0);
	assert_true(list_has_root(f.list));
	assert_true(filter_excluded(&f, "x", 1, false));
	list_set_recurse(f.list, true);
	assert_false(filter_excluded(&f, "x/y", 3, false));
	filter_free(&f);
	/* --from0: a newline is part of a name */
	assert_int_equal(list_add_buf(&f.list, "x\ny\0z", 5, true, &e), 0);
	assert_int_equal(list_count(f.list), 2);
	assert_false(filter_excluded(&f, "x\ny", 3, false));
	filter_free(&f);
	/* never above the source directory */
	assert_int_equal(list_add_buf(&f.list, "ok\na/../x\n", 11, false, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "entry 2"));
	filter_free(&f);
}

/* Many entries: the set grows and still finds each one. */
static void test_files_from_many(void **s)
{
	struct lr_list *l = NULL;
	const char *why = NULL;
	char p[64];
	int i, n;

	(void)s;
	for (i = 0; i < 50000; i++) {
		n = snprintf(p, sizeof(p), "d%d/f%d", i % 97, i);
		assert_int_equal(list_add(&l, p, (size_t)n, &why), 0);
	}
	assert_int_equal(list_count(l), 50000);
	for (i = 0; i < 50000; i += 7) {
		n = snprintf(p, sizeof(p), "d%d/f%d", i % 97, i);
		assert_true(list_admits(l, p, (size_t)n, false));
		n = snprintf(p, sizeof(p), "d%d/g%d", i % 97, i);
		assert_false(list_admits(l, p, (size_t)n, false));
	}
	assert_true(list_admits(l, "d5", 2, true));
	list_free(l);
}

/* Stars that make a naive backtracking matcher take exponential time:
 * each must answer at once (a hang fails the test by its timeout). */
static void test_no_runaway_backtracking(void **s)
{
	struct lr_filter f = { 0 };
	struct lr_err e = { 0 };
	char pat[FILTER_MAX_PATTERN + 1], path[4097];
	size_t i;

	(void)s;
	for (i = 0; i + 2 <= 600; i += 2)
		memcpy(pat + i, "*a", 2);
	memcpy(pat + 600, "b", 2);
	assert_int_equal(filter_add(&f, false, pat, 601, &e), 0);
	for (i = 0; i < 4000; i++)
		path[i] = 'a';
	assert_false(filter_excluded(&f, path, 4000, false));
	filter_free(&f);

	for (i = 0; i + 3 <= 600; i += 3)
		memcpy(pat + i, "**a", 3);
	memcpy(pat + 600, "b", 2);
	assert_int_equal(filter_add(&f, false, pat, 601, &e), 0);
	for (i = 0; i < 4000; i++)
		path[i] = i % 2 ? '/' : 'a';
	assert_false(filter_excluded(&f, path, 3999, false));
	filter_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_star_and_question),
		cmocka_unit_test(test_sets),
		cmocka_unit_test(test_escapes_and_literals),
		cmocka_unit_test(test_anchor),
		cmocka_unit_test(test_trailing_slash),
		cmocka_unit_test(test_slash_inside),
		cmocka_unit_test(test_double_star),
		cmocka_unit_test(test_triple_star),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_rule_text_travels),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_files_from),
		cmocka_unit_test(test_files_from_many),
		cmocka_unit_test(test_no_runaway_backtracking),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
