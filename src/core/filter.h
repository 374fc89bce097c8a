/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_FILTER_H
#define LINERATE_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/*
 * What a transfer leaves out: --exclude and --include rules with rsync's
 * meaning for the common cases (docs/linerate.1, "Filter rules"), tried
 * in order against each entry's path relative to the transfer's root
 * (the path the sender announces); the first rule that matches decides,
 * and an entry no rule matches is sent. A directory left out is not
 * walked.
 *
 * A pattern: `*` any run of characters but `/`, `**` any run including
 * `/`, `?` one character but `/`, `[...]` one of a set (`[!...]` or
 * `[^...]` none of it; ranges, `[:alpha:]` classes; never `/`), `\`
 * takes the next character as it is (only in a pattern with a wildcard:
 * a pattern without `*`, `?` or `[` is compared as it is). A leading `/`
 * anchors it at the root; a trailing `/` matches directories only;
 * `dir/` + `***` matches dir and everything below. Without a `/` (but a
 * trailing one) or `**`, a pattern matches the last component of a
 * path; with one, the end of the path (a `**` pattern: the path at any
 * component).
 *
 * Not thread-safe for writing; once built, any thread may match.
 */

#define FILTER_MAX_RULES   1024u
#define FILTER_MAX_PATTERN 1024u /* bytes of one pattern */

struct filter_rule;
struct lr_list; /* filelist.h */

struct lr_filter {
	struct filter_rule **rule;
	unsigned n, cap;
	/* --files-from: only what it admits is sent (the rules then
	 * apply to that); NULL: everything; freed with the filter */
	struct lr_list *list;
};

/* One rule as it travels (docs/PROTOCOL.md section 7.2): a pattern of
 * 1..FILTER_MAX_PATTERN bytes without control characters. */
int filter_add(struct lr_filter *f, bool include, const char *pat, size_t len,
	       struct lr_err *err);

/* A rule as --exclude (include false) or --include (true) takes it: a
 * leading "- " or "+ " says which it is instead; "!" alone clears the
 * rules so far. */
int filter_add_arg(struct lr_filter *f, bool include, const char *arg,
		   struct lr_err *err);

/* The lines of an --exclude-from or --include-from file, each as
 * filter_add_arg takes it; empty lines and lines that start with '#' or
 * ';' are skipped, a "\r" before the line's end is dropped. */
int filter_add_lines(struct lr_filter *f, bool include, const char *buf,
		     size_t len, struct lr_err *err);

/* A rule or list file's contents ("-": standard input), at most 64 MiB,
 * given to parse; 0 or -errno with err set ("PATH: ..."). */
typedef int (*filter_parse_fn)(void *ctx, const char *buf, size_t len,
			       struct lr_err *err);
int filter_read_with(const char *path, filter_parse_fn parse, void *ctx,
		     struct lr_err *err);

/* filter_add_lines of a file's contents ("-": standard input). */
int filter_read_file(struct lr_filter *f, bool include, const char *path,
		     struct lr_err *err);

/* Whether the entry at path (len bytes, relative to the root, no leading
 * or trailing '/') is left out: not admitted by the list, or excluded by
 * the rules. */
bool filter_excluded(const struct lr_filter *f, const char *path, size_t len,
		     bool is_dir);

/* Rule i as it travels: its pattern (not NUL-terminated) and kind. */
const char *filter_rule_text(const struct lr_filter *f, unsigned i, size_t *len,
			     bool *include);

void filter_free(struct lr_filter *f);

#endif
