/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_FSIO_H
#define LINERATE_FSIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/*
 * Safe access to a file tree on behalf of a peer (docs/SECURITY.md): every
 * path from the peer is checked, then walked from a held directory
 * descriptor with O_NOFOLLOW on every component (openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where the kernel has it), so no
 * path and no symlink planted in the tree leads outside it.
 */

#define FSIO_MAX_PATH  4096u /* bytes, as PROTO_XFER_MAX_PATH */
#define FSIO_MAX_NAME  255u
#define FSIO_MAX_DEPTH 256u /* components */

/*
 * Check a relative path from the peer (path/len, not NUL-terminated):
 * 1..FSIO_MAX_PATH bytes, components separated by single '/', each
 * 1..FSIO_MAX_NAME bytes, none "." or "..", no leading or trailing '/',
 * no NUL, no control character (0x01-0x1f, 0x7f), valid UTF-8 not
 * required, at most FSIO_MAX_DEPTH components. Returns 0 or LR_EBADPATH
 * with *why (a constant string) set when why is not NULL.
 */
int fsio_path_check(const char *path, size_t len, const char **why);

/*
 * Copy name into out (cap bytes, NUL-terminated, truncated), escaping
 * control characters (C0, DEL and the UTF-8 encoded C1 U+0080-U+009F),
 * the bidirectional controls (lr_escape) and bytes >= 0x80 that are not
 * part of valid UTF-8 as \xNN, and backslash as \\, so a peer's name
 * cannot drive the terminal nor reorder what it shows. Truncation never
 * splits an escape or a UTF-8 sequence. Returns out.
 */
char *fsio_escape(const char *name, size_t len, char *out, size_t cap);

/*
 * Open the directory at the checked relative path rel (NUL-terminated;
 * "" = dirfd itself, dup'ed) beneath dirfd, never following a symlink.
 * With create, missing components are made with mkdirat(mode) first.
 * Returns a new O_DIRECTORY descriptor or -errno (-ELOOP or -ENOTDIR when
 * a component is a symlink or not a directory); LR_EBADPATH when rel
 * fails fsio_path_check.
 */
int fsio_open_dir(int dirfd, const char *rel, bool create, mode_t mode);

/*
 * fsio_open_dir with create, and *made set when the last component was
 * made by this call (it was missing, so it holds nothing this caller did
 * not put there). rel "" is dirfd itself, never made.
 */
int fsio_make_dir(int dirfd, const char *rel, mode_t mode, bool *made);

/*
 * Split a checked relative path into its parent ("" for a top-level
 * name) and last component, both NUL-terminated, into parent (cap
 * FSIO_MAX_PATH + 1) and name (cap FSIO_MAX_NAME + 1).
 */
void fsio_split(const char *path, size_t len, char *parent, char *name);

/*
 * The temporary name of a file being received as name in the same
 * directory: ".<name>.lrpart" (a hash of name instead of name when too
 * long); its journal ".<name>.lrjournal". out needs FSIO_MAX_NAME + 1.
 */
void fsio_temp_name(const char *name, char *out);
void fsio_journal_name(const char *name, char *out);

/* Whether the name (one component, len bytes) is one of those: a
 * temporary file or journal of a transfer, or a kept token of `linerate
 * recv` (".*.lrtoken"), never listed, sent or written as an entry's
 * name. */
bool fsio_is_side_name(const char *name, size_t len);

/*
 * Give the open, empty file fd its final size and, where that is cheap,
 * reserve its blocks, so a destination too small is found before any
 * data is sent: fallocate on disk file systems (unwritten extents), a
 * free-space check and ftruncate on tmpfs, where fallocate would clear
 * every page only for the data to overwrite it (70 ms a GiB here), and
 * ftruncate where fallocate is not supported. sparse: ftruncate only.
 * 0 or -errno (-ENOSPC when it cannot fit).
 */
int fsio_reserve(int fd, uint64_t size, bool sparse);

/*
 * An unnamed regular file in the directory dirfd (O_TMPFILE, read and
 * write, close-on-exec) with mode less the umask: a file that is lost
 * when closed unless fsio_link_anon names it. The fd or -errno
 * (-EOPNOTSUPP, -EISDIR or -EINVAL where the file system or kernel has
 * no O_TMPFILE).
 */
int fsio_open_anon(int dirfd, mode_t mode);

/*
 * Name the unnamed file fd as name in dirfd, never replacing anything:
 * -EEXIST when name exists. By AT_EMPTY_PATH where the process may
 * (CAP_DAC_READ_SEARCH), else through /proc/self/fd. 0 or -errno.
 */
int fsio_link_anon(int fd, int dirfd, const char *name);

/*
 * Create the temporary file name in dirfd for writing (O_EXCL, never
 * through a symlink), removing one an earlier attempt left there, and
 * take its lock (fsio_lock_temp). The fd (the file of that name, checked
 * after the lock), -EBUSY when a receiver writes the one there, or
 * -errno.
 */
int fsio_create_temp(int dirfd, const char *name, mode_t mode);

/* Open the temporary file name in dirfd, read-write, and take its lock:
 * the fd (the file of that name, checked after the lock), -EBUSY when a
 * receiver holds it, -EINVAL when it is no regular file, -EAGAIN when it
 * was replaced meanwhile, or -errno. For a resume and for a removal. */
int fsio_take_temp(int dirfd, const char *name);

/* A receiver's lock on the temporary file it writes (an open file
 * description lock, held until the last descriptor of that open closes):
 * 0, or -EBUSY when another holds it. On a file system without locks, 0:
 * nothing tells such files apart. */
int fsio_lock_temp(int fd);

/* Whether the temporary file name in dirfd is locked by a receiver (a
 * look that never takes the lock). */
bool fsio_temp_busy(int dirfd, const char *name);

/*
 * Rename the complete temporary file tmp to name in dirfd; without
 * replace an existing name is never replaced (-EEXIST). With fd >= 0,
 * only when tmp is still the file fd (else -ESTALE): a name is never
 * given to a file another took the temporary name for. 0 or -errno.
 */
int fsio_commit(int fd, int dirfd, const char *tmp, const char *name,
		bool replace);

/*
 * Make the symlink name -> target in dirfd: 0 too when that very symlink
 * is there already; with replace, another name that exists and is not a
 * directory is replaced. 0 or -errno (-EEXIST).
 */
int fsio_symlink_replace(int dirfd, const char *name, const char *target,
			 bool replace);

/* Read len bytes at off (LR_ETRUNC when the file is shorter), write len
 * bytes at off, or write len bytes (a pipe): 0 or -errno, EINTR retried. */
int fsio_pread_all(int fd, void *buf, size_t len, uint64_t off);
int fsio_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int fsio_write_all(int fd, const void *buf, size_t len);

/* The whole of a small file ("-": standard input), at most max bytes,
 * into *buf (malloc'ed, the caller frees) and *len: 0, -EFBIG when it is
 * larger, or -errno (EINTR retried). */
int fsio_read_small(const char *path, size_t max, char **buf, size_t *len);

/* Make len bytes at off read as zeros: a hole punched, or zeros written
 * where the file system punches none. 0 or -errno. */
int fsio_zero_range(int fd, uint64_t off, uint64_t len);

#endif
