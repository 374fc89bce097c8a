/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_FILELIST_H
#define LINERATE_FILELIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/*
 * --files-from (rsync's): the only paths a transfer sends, relative to
 * its source directory, with their parent directories ("implied"), and,
 * when the list recurses (-r), everything below a listed directory. A
 * path is normalized as rsync reads it: leading slashes, "." components
 * and repeated or trailing slashes go; ".." is refused. Blank entries
 * and entries that start with '#' or ';' are skipped.
 *
 * Not thread-safe for writing; once built, any thread may look up.
 */

#define FILELIST_MAX_PATHS (1u << 22) /* entries of one list */
#define FILELIST_MAX_PATH  4096u      /* bytes of one path */

struct lr_list;

/* Add one path (len bytes, not NUL-terminated): 0, or -EINVAL with why
 * set (a ".." component, too long), -E2BIG past FILELIST_MAX_PATHS,
 * -ENOMEM. *l is made on first use. An
 * entry that normalizes to nothing (".", "/") names the source
 * directory itself: with recursion, everything. */
int list_add(struct lr_list **l, const char *path, size_t len,
	     const char **why);

/* The entries of buf (len bytes), separated by newlines (a "\r" before
 * one is dropped) or, with from0, by NUL bytes. Errors name the entry's
 * line. */
int list_add_buf(struct lr_list **l, const char *buf, size_t len, bool from0,
		 struct lr_err *err);

/* The paths as they travel (docs/PROTOCOL.md, LIST): separated by NUL
 * bytes, each taken as it is (no comments). */
int list_add_wire(struct lr_list **l, const char *buf, size_t len,
		  struct lr_err *err);

/* The bytes the listed paths take with a separator each, and whether
 * the source directory itself is listed (it has no path). */
uint32_t list_bytes(const struct lr_list *l);
bool list_has_root(const struct lr_list *l);

/* list_add_buf of a file's contents ("-": standard input), at most
 * 64 MiB. */
int list_read_file(struct lr_list **l, const char *path, bool from0,
		   struct lr_err *err);

/* Listed directories bring everything below them (rsync's -r with
 * --files-from). */
void list_set_recurse(struct lr_list *l, bool on);
bool list_recurses(const struct lr_list *l);

/* Whether the entry at path (relative to the source directory, no
 * leading or trailing '/') is sent: listed, the parent of one, or below
 * a listed directory when the list recurses. */
bool list_admits(const struct lr_list *l, const char *path, size_t len,
		 bool is_dir);

/* The listed paths, normalized, in the order first given: count, and
 * entry i (not NUL-terminated). The source directory itself, when
 * listed, is the empty path, last. */
uint32_t list_count(const struct lr_list *l);
const char *list_path(const struct lr_list *l, uint32_t i, size_t *len);

void list_free(struct lr_list *l);

#endif
