// SPDX-License-Identifier: MIT
/*
 * The sender's sources: a walk of the paths given (push: local paths as
 * the user typed them; pull: paths below the server's root, never through
 * a symlink) in announcement order, a directory before its contents; the
 * count of what a walk will announce, in a thread of its own while the
 * connections are set up; and the number of streams it calls for.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/sysmacros.h>
#include <sys/statfs.h>

#include "filelist.h"
#include "filter.h"
#include "xfer_int.h"
#include "banned.h"

/* Entries that decide the streams (the count's first ones). */
#define COUNT_SAMPLE 1024u

void xfer__walk_init(struct walker *w, const struct xfer_source *src,
		     bool open_files, struct lr_err *err)
{
	memset(w, 0, sizeof(*w));
	w->src = src;
	w->open_files = open_files;
	w->err = err;
	w->list_fd = -1;
}

void xfer__walk_fini(struct walker *w)
{
	while (w->depth)
		closedir(w->st[--w->depth].d);
	if (w->list_fd >= 0)
		close(w->list_fd);
	w->list_fd = -1;
}

static const struct lr_list *the_list(const struct walker *w)
{
	return w->src->filter ? w->src->filter->list : NULL;
}

/* Whether the listed path (len bytes) is there below the source
 * directory, looked up without following a symlink: 0, or -errno. */
static int listed_there(const struct walker *w, const char *path, size_t len)
{
	char parent[FSIO_MAX_PATH + 1], name[FSIO_MAX_NAME + 1];
	struct stat st;
	int pfd, r;

	if (len > FSIO_MAX_PATH)
		return -ENAMETOOLONG;
	fsio_split(path, len, parent, name);
	pfd = fsio_open_dir(w->list_fd, parent, false, 0);
	if (pfd < 0)
		return pfd;
	r = fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
	close(pfd);
	return r;
}

/* After the walk: the next path --files-from lists that is not there,
 * told as a source that could not be read (rsync says the same), or 0
 * when none is left. */
static int list_missing(struct walker *w)
{
	const struct lr_list *l = the_list(w);

	while (l && w->list_fd >= 0 && w->list_i < list_count(l)) {
		size_t len;
		const char *p = list_path(l, w->list_i++, &len);
		int r = len ? listed_there(w, p, len) : 0;

		if (r != -ENOENT && r != -ENOTDIR && r != -ELOOP)
			continue;
		snprintf(w->path, sizeof(w->path), "%.*s", (int)len, p);
		w->plen = len;
		lr_err_setc(&w->eerr, r == -ELOOP ? -ENOTDIR : r,
			    "listed in --files-from");
		return XFER_WALK_UNREADABLE;
	}
	return 0;
}

static bool special(const struct stat *st)
{
	return !S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode) &&
	       !S_ISLNK(st->st_mode);
}

/* A FIFO, socket or device node of a tree, when the options send it: its
 * entry (a device's major and minor as its target). false: told and left
 * out. */
static bool fill_special(struct walker *w, struct wentry *e)
{
	mode_t m = e->st.st_mode;
	bool dev = S_ISCHR(m) || S_ISBLK(m);

	if (dev ? !w->src->devices
		: !(w->src->specials && (S_ISFIFO(m) || S_ISSOCK(m))))
		return false;
	e->kind = S_ISFIFO(m)	? PROTO_XK_FIFO
		  : S_ISSOCK(m) ? PROTO_XK_SOCKET
		  : S_ISCHR(m)	? PROTO_XK_CHARDEV
				: PROTO_XK_BLOCKDEV;
	e->fd = -1;
	e->is_stdin = false;
	e->read_err = 0;
	e->target_len = 0;
	if (dev) {
		uint8_t *t = (uint8_t *)e->target;
		uint32_t ma = major(e->st.st_rdev), mi = minor(e->st.st_rdev);

		t[0] = (uint8_t)(ma >> 24);
		t[1] = (uint8_t)(ma >> 16);
		t[2] = (uint8_t)(ma >> 8);
		t[3] = (uint8_t)ma;
		t[4] = (uint8_t)(mi >> 24);
		t[5] = (uint8_t)(mi >> 16);
		t[6] = (uint8_t)(mi >> 8);
		t[7] = (uint8_t)mi;
		e->target_len = PROTO_XFER_DEV_LEN;
	}
	return true;
}

static int fill_symlink(struct walker *w, int dirfd, const char *name,
			struct wentry *e)
{
	ssize_t k;

	e->kind = PROTO_XK_SYMLINK;
	k = readlinkat(dirfd, name, e->target, PROTO_XFER_MAX_PATH);
	if (k <= 0) {
		lr_err_setc(&w->eerr, k < 0 ? -errno : -EINVAL,
			    "reading the symlink");
		return XFER_WALK_UNREADABLE;
	}
	e->target[k] = 0;
	e->target_len = (uint16_t)k;
	return 0;
}

/* A directory: its entries come next (a frame pushed). */
static int fill_dir(struct walker *w, int dirfd, const char *name,
		    struct wentry *e)
{
	DIR *d;
	int fd;

	e->kind = PROTO_XK_DIR;
	if (w->depth >= FSIO_MAX_DEPTH) {
		e->read_err = lr_err_set(&w->eerr, -ELOOP,
					 "its entries are deeper than %u "
					 "levels: not sent",
					 FSIO_MAX_DEPTH);
		return 0;
	}
	fd = openat(dirfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		/* announced all the same (rsync makes it too), empty */
		e->read_err = lr_err_setc(&w->eerr, -errno,
					  "its entries could not be read");
		if (fd >= 0)
			close(fd);
		return 0;
	}
	w->st[w->depth].d = d;
	w->st[w->depth].plen = w->plen;
	w->depth++;
	return 0;
}

/* Fill e for name in dirfd (already lstat'ed into e->st). */
static int walk_fill(struct walker *w, int dirfd, const char *name,
		     struct wentry *e)
{
	int fd;

	e->fd = -1;
	e->is_stdin = false;
	e->target_len = 0;
	e->read_err = 0;
	if (S_ISLNK(e->st.st_mode))
		return fill_symlink(w, dirfd, name, e);
	if (S_ISDIR(e->st.st_mode))
		return fill_dir(w, dirfd, name, e);
	e->kind = PROTO_XK_FILE;
	if (w->open_files) {
		struct stat st;

		/* never blocking on (nor opening as a device) a node renamed
		 * over the file since its stat: O_NONBLOCK, then the same
		 * regular file, or it is gone */
		fd = openat(dirfd, name,
			    O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK |
				    O_NOCTTY);
		if (fd < 0 && errno == ENOENT)
			return XFER_WALK_VANISHED; /* gone since its stat */
		if (fd < 0) {
			lr_err_setc(&w->eerr, -errno, "could not be read");
			return XFER_WALK_UNREADABLE;
		}
		if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
		    st.st_dev != e->st.st_dev || st.st_ino != e->st.st_ino) {
			close(fd);
			return XFER_WALK_VANISHED;
		}
		/* e->st came from fstatat a moment ago; a file that
		 * changes size since is caught by its reads */
		e->fd = fd;
	}
	return 0;
}

/* Whether the entry at w->path is left out by the filter rules. */
static bool left_out(const struct walker *w, const struct stat *st)
{
	return w->src->filter && filter_excluded(w->src->filter, w->path,
						 w->plen, S_ISDIR(st->st_mode));
}

/* A directory whose contents are the source (a trailing '/'): its
 * entries come with paths from the root down, itself is not announced.
 * Takes fd. */
static int walk_contents(struct walker *w, int fd, const char *arg)
{
	DIR *d;

	if (the_list(w) && w->list_fd < 0)
		w->list_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return lr_err_setc(w->err, -errno, "reading %s", arg);
	}
	w->st[0].d = d;
	w->st[0].plen = 0;
	w->depth = 1;
	w->plen = 0;
	w->path[0] = 0;
	return XFER_WALK_SKIP;
}

static int walk_set_path(struct walker *w, size_t base, const char *name)
{
	size_t n = strlen(name);

	if (base + (base ? 1 : 0) + n > FSIO_MAX_PATH)
		return lr_err_set(w->err, -ENAMETOOLONG,
				  "a path below %.*s is longer than %u bytes",
				  (int)base, w->path, FSIO_MAX_PATH);
	if (base)
		w->path[base++] = '/';
	memcpy(w->path + base, name, n + 1);
	w->plen = base + n;
	return 0;
}

/* A source the count saw that is gone now (errno ENOENT, the announcing
 * walk): XFER_WALK_VANISHED with w->path its name; else 0. */
static int vanished(struct walker *w, const char *name)
{
	if (errno != ENOENT || !w->open_files || walk_set_path(w, 0, name))
		return 0;
	return XFER_WALK_VANISHED;
}

/* A source not there: counted, then gone (XFER_WALK_VANISHED, as a file
 * below the top would be), or not there when counted either (0: an
 * error of its own); the count notes it so. */
static int top_gone(struct walker *w, const char *name)
{
	unsigned i = w->arg - 1;
	bool seen = i >= 64 || !((w->top_missing >> i) & 1);

	if (errno != ENOENT)
		return 0;
	if (!w->open_files) {
		if (i < 64)
			w->top_missing |= 1ull << i;
		return 0;
	}
	return seen ? vanished(w, name) : 0;
}

/* "-": standard input, as the file its name says. */
static int top_stdin(struct walker *w, struct wentry *e)
{
	const struct xfer_source *s = w->src;
	int r = walk_set_path(w, 0, s->stdin_name ? s->stdin_name : "stdin");

	if (r)
		return r;
	memset(&e->st, 0, sizeof(e->st));
	e->st.st_mode = S_IFREG | 0644;
	e->st.st_mtime = time(NULL);
	e->kind = PROTO_XK_FILE;
	e->is_stdin = true;
	e->fd = w->open_files ? STDIN_FILENO : -1;
	e->target_len = 0;
	return 0;
}

/* What a FIFO, socket or device node is, in words. */
static const char *special_words(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	return S_ISCHR(mode) ? "a character device" : "a block device";
}

/* Whether the symlink name in dirfd points at a process's descriptor
 * (/dev/stdin is /proc/self/fd/0): sent as a link, it would dangle. */
static bool fd_link(int dirfd, const char *name)
{
	struct statfs fs;
	char t[64];
	ssize_t k;

	/* /dev/fd/0 itself: a link in /proc/self/fd, to "pipe:[N]" */
	if (!fstatfs(dirfd, &fs) && fs.f_type == PROC_SUPER_MAGIC)
		return true;
	k = readlinkat(dirfd, name, t, sizeof(t) - 1);
	if (k <= 0)
		return false;
	t[k] = '\0';
	return !strncmp(t, "/proc/self/fd/", 14) ||
	       !strncmp(t, "/dev/fd/", 8) ||
	       !strncmp(t, "/proc/thread-self/fd/", 21) ||
	       !strncmp(t, "pipe:[", 6) || !strncmp(t, "socket:[", 8) ||
	       !strncmp(t, "anon_inode:", 11);
}

/* A source named on the command line that is never sent: a FIFO,
 * socket or device (its contents go as '-'), a link to a descriptor.
 * -EINVAL with err saying what to do, or 0. */
static int top_refused(int pfd, const char *name, const char *arg,
		       const struct stat *st, struct lr_err *err)
{
	if (special(st))
		return lr_err_set(err, -EINVAL,
				  "%s: %s, not a file, directory or symlink; "
				  "to send what it carries, give '-' and feed "
				  "it to standard input (linerate send - "
				  "HOST:NAME < %s)",
				  arg, special_words(st->st_mode), arg);
	if (S_ISLNK(st->st_mode) && fd_link(pfd, name))
		return lr_err_set(err, -EINVAL,
				  "%s: a link to one of this process's own "
				  "descriptors (its standard input?); give "
				  "'-' to send standard input",
				  arg);
	return 0;
}

int xfer_source_check(const char *path, struct lr_err *err)
{
	char parent[FSIO_MAX_PATH + 1], name[FSIO_MAX_NAME + 1];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int pfd, r = 0;

	if (strlen(path) > FSIO_MAX_PATH || (slash && !slash[1]))
		return 0; /* the walk tells */
	fsio_split(path, strlen(path), parent, name);
	if (!name[0])
		return 0;
	pfd = open(parent[0]	    ? parent
		   : path[0] == '/' ? "/"
				    : ".",
		   O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return 0;
	if (!fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW))
		r = top_refused(pfd, name, path, &st, err);
	close(pfd);
	return r;
}

/* name in pfd, never followed: a file, directory or symlink. Closes
 * pfd. */
static int top_entry(struct walker *w, int pfd, const char *arg,
		     const char *name, struct wentry *e)
{
	int r;

	if (fstatat(pfd, name, &e->st, AT_SYMLINK_NOFOLLOW)) {
		r = lr_err_setc(w->err, -errno, "%s", arg);
		close(pfd);
		return r;
	}
	r = top_refused(pfd, name, arg, &e->st, w->err);
	if (r) {
		close(pfd);
		return r;
	}
	r = walk_set_path(w, 0, name);
	if (!r && left_out(w, &e->st))
		r = XFER_WALK_SKIP;
	if (!r)
		r = walk_fill(w, pfd, name, e);
	close(pfd);
	return r;
}

/* The current source: its contents, not itself (a trailing '/'). */
static bool contents_only(const struct walker *w)
{
	unsigned i = w->arg - 1; /* walk_next took it */

	return i < 64 && (w->src->contents >> i) & 1;
}

/* Pull: a path below the root, never through a symlink. */
static int top_pull(struct walker *w, const char *arg, struct wentry *e)
{
	char parent[FSIO_MAX_PATH + 1], name[FSIO_MAX_NAME + 1];
	const char *why;
	int pfd;

	if (fsio_path_check(arg, strlen(arg), &why))
		return lr_err_set(w->err, LR_EBADPATH, "%s", why);
	fsio_split(arg, strlen(arg), parent, name);
	if (fsio_is_side_name(name, strlen(name)))
		return lr_err_setc(w->err, -ENOENT, "%s", arg);
	if (contents_only(w)) {
		pfd = fsio_open_dir(w->src->rootfd, arg, false, 0);
		if (pfd < 0)
			return lr_err_setc(w->err, pfd, "%s", arg);
		return walk_contents(w, pfd, arg);
	}
	pfd = fsio_open_dir(w->src->rootfd, parent, false, 0);
	if (pfd < 0)
		return lr_err_setc(w->err, pfd, "opening %s", parent);
	return top_entry(w, pfd, arg, name, e);
}

/* Push of ".", ".." or a path ending in one: the directory itself,
 * opened as "." of it, under its real name. */
static int top_push_dot(struct walker *w, const char *arg, struct wentry *e)
{
	char name[FSIO_MAX_NAME + 1], *slash;
	char *rp = realpath(arg, NULL);
	int pfd, r;

	if (!rp)
		return lr_err_setc(w->err, -errno, "%s", arg);
	slash = strrchr(rp, '/');
	snprintf(name, sizeof(name), "%s", slash && slash[1] ? slash + 1 : "");
	free(rp);
	pfd = open(arg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return lr_err_setc(w->err, -errno, "%s", arg);
	if (fstat(pfd, &e->st)) {
		close(pfd);
		return lr_err_setc(w->err, -errno, "%s", arg);
	}
	/* "/", "." or "dir/.": its contents (of / too, as rsync sends) */
	if (contents_only(w))
		return walk_contents(w, pfd, arg);
	if (!name[0]) {
		close(pfd);
		return lr_err_set(w->err, -EINVAL,
				  "%s: name a directory below /, not / itself "
				  "(or / for its contents)",
				  arg);
	}
	r = walk_set_path(w, 0, name);
	if (!r && left_out(w, &e->st))
		r = XFER_WALK_SKIP;
	if (!r)
		r = walk_fill(w, pfd, ".", e);
	close(pfd);
	return r;
}

/* Push of a file or directory the user named (a symlink to one
 * followed), st filled: opened from pfd, which it closes. */
static int top_push_named(struct walker *w, int pfd, const char *name,
			  const char *arg, struct wentry *e)
{
	/* O_NONBLOCK: a FIFO swapped in since the check never blocks (it is
	 * refused by its type below) */
	int fd = openat(pfd, name,
			O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY),
	    r;

	if (fd < 0 && S_ISDIR(e->st.st_mode) && !contents_only(w) &&
	    errno != ENOENT) {
		/* announced, empty, as one below the top would be */
		e->read_err = lr_err_setc(&w->eerr, -errno,
					  "its entries could not be read");
		close(pfd);
		r = walk_set_path(w, 0, name);
		if (!r && left_out(w, &e->st))
			r = XFER_WALK_SKIP;
		e->kind = PROTO_XK_DIR;
		e->fd = -1;
		e->is_stdin = false;
		e->target_len = 0;
		if (r)
			e->read_err = 0;
		return r;
	}
	if (fd < 0) {
		r = vanished(w, name) ?: lr_err_setc(w->err, -errno, "%s", arg);
		close(pfd);
		return r;
	}
	close(pfd);
	if (contents_only(w)) {
		if (S_ISDIR(e->st.st_mode))
			return walk_contents(w, fd, arg);
		close(fd);
		return lr_err_setc(w->err, -ENOTDIR, "%s", arg);
	}
	r = walk_set_path(w, 0, name);
	if (!r && left_out(w, &e->st))
		r = XFER_WALK_SKIP;
	if (!r && S_ISREG(e->st.st_mode)) {
		/* the file itself: already open */
		e->kind = PROTO_XK_FILE;
		e->is_stdin = false;
		e->target_len = 0;
		e->fd = -1;
		if (w->open_files && !fstat(fd, &e->st)) {
			e->fd = fd;
			return 0;
		}
		close(fd);
		return 0;
	}
	if (!r)
		r = walk_fill(w, fd, ".", e);
	close(fd);
	return r;
}

/* Push: a local path as the user typed it. */
static int top_push(struct walker *w, const char *arg, struct wentry *e)
{
	char parent[FSIO_MAX_PATH + 1], name[FSIO_MAX_NAME + 1];
	char buf[PATH_MAX], *slash, *base;
	size_t n = strlen(arg);
	int pfd, r;

	if (n >= sizeof(buf))
		return lr_err_set(w->err, -ENAMETOOLONG, "%s", arg);
	memcpy(buf, arg, n + 1);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = 0;
	slash = strrchr(buf, '/');
	base = slash ? slash + 1 : buf;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return top_push_dot(w, arg, e);
	snprintf(name, sizeof(name), "%s", base);
	if (slash == buf)
		snprintf(parent, sizeof(parent), "/");
	else if (slash)
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - buf),
			 buf);
	else
		snprintf(parent, sizeof(parent), ".");
	pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return lr_err_setc(w->err, -errno, "%s", parent);
	/* the user named it: follow a symlink at the top */
	if (fstatat(pfd, name, &e->st, 0)) {
		r = top_gone(w, name) ?: lr_err_setc(w->err, -errno, "%s", arg);
		close(pfd);
		return r;
	}
	if (S_ISDIR(e->st.st_mode) || S_ISREG(e->st.st_mode))
		return top_push_named(w, pfd, name, arg, e);
	if (contents_only(w)) {
		close(pfd);
		return lr_err_setc(w->err, -ENOTDIR, "%s", arg);
	}
	return top_entry(w, pfd, arg, name, e);
}

/* A top-level source. */
static int walk_top(struct walker *w, const char *arg, struct wentry *e)
{
	if (w->src->rootfd < 0 && !strcmp(arg, "-"))
		return top_stdin(w, e);
	if (w->src->rootfd >= 0)
		return top_pull(w, arg, e);
	return top_push(w, arg, e);
}

/* A source as given that cannot be sent: the walker's err (which the
 * top-level steps filled) moves to eerr, the path is the source's. */
static int top_unreadable(struct walker *w, int r)
{
	const char *arg = w->src->paths[w->arg - 1];
	size_t k = strlen(arg);
	const char *base;

	/* told by the name it would have had (the receiver's view), or as
	 * typed when it has none ("/", ".", "..") */
	while (k > 1 && arg[k - 1] == '/')
		k--;
	base = memrchr(arg, '/', k);
	base = base ? base + 1 : arg;
	if (base >= arg + k ||
	    (base[0] == '.' &&
	     (base + 1 == arg + k || (base[1] == '.' && base + 2 == arg + k))))
		base = arg, k = strlen(arg);
	snprintf(w->path, sizeof(w->path), "%.*s", (int)(arg + k - base), base);
	w->plen = strlen(w->path);
	if (w->err && w->err->msg[0]) {
		size_t n = strlen(arg);
		const char *m = w->err->msg;

		/* "ARG: No such file or directory": the path goes apart */
		if (!strncmp(m, arg, n) && m[n] == ':' && m[n + 1] == ' ')
			m += n + 2;
		lr_err_set(&w->eerr, w->err->code, "%s", m);
		memset(w->err, 0, sizeof(*w->err));
	} else {
		lr_err_setc(&w->eerr, r, "could not be read");
	}
	return XFER_WALK_UNREADABLE;
}

/* The directory at w->path[0..plen) (the frame just left): told as
 * unreadable; the top of a source sent as its contents by the source's
 * name. */
static int dir_unreadable(struct walker *w, size_t plen)
{
	w->plen = plen;
	w->path[plen] = 0;
	if (!plen) {
		snprintf(w->path, sizeof(w->path), "%s",
			 w->src->paths[w->arg - 1]);
		w->plen = strlen(w->path);
	}
	return XFER_WALK_UNREADABLE;
}

/* Whether a source's failure means only that it could not be read (told,
 * and the others go); anything else ends the walk. */
static bool per_source(int r)
{
	return r == -ENOENT || r == -EACCES || r == -EPERM || r == -ENOTDIR ||
	       r == -ELOOP || r == -EIO || r == -ESTALE || r == -ENXIO ||
	       r == -ENODEV;
}

int xfer__walk_next(struct walker *w, struct wentry *e)
{
	struct dirent *de;
	int r;

	e->read_err = 0;
	e->linked = false;
	e->link_to = 0;
	while (w->depth) {
		struct wframe *f = &w->st[w->depth - 1];

		errno = 0;
		de = readdir(f->d);
		if (!de) {
			int err = errno;

			closedir(f->d);
			w->depth--;
			if (!err)
				continue;
			/* the rest of this directory is not sent */
			lr_err_setc(&w->eerr, -err,
				    "its entries could not all be read");
			return dir_unreadable(w, f->plen);
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		/* another transfer's temporary file or journal: never sent,
		 * nor counted */
		if (fsio_is_side_name(de->d_name, strlen(de->d_name)))
			continue;
		w->plen = f->plen;
		r = walk_set_path(w, f->plen, de->d_name);
		if (r)
			return r;
		if (fstatat(dirfd(f->d), de->d_name, &e->st,
			    AT_SYMLINK_NOFOLLOW)) {
			if (errno == EACCES || errno == EPERM) {
				/* a directory listed but not searchable:
				 * one line for it, not one per name */
				lr_err_setc(&w->eerr, -errno,
					    "its entries could not be read");
				closedir(f->d);
				w->depth--;
				return dir_unreadable(w, f->plen);
			}
			if (errno != ENOENT) {
				lr_err_setc(&w->eerr, -errno,
					    "could not be read");
				return XFER_WALK_UNREADABLE;
			}
			if (w->open_files)
				return XFER_WALK_VANISHED; /* counted, gone */
			continue; /* gone since readdir */
		}
		if (left_out(w, &e->st))
			continue;
		if (special(&e->st) && !fill_special(w, e))
			return XFER_WALK_SPECIAL; /* not asked for: told */
		if (special(&e->st))
			return 1;
		r = walk_fill(w, dirfd(f->d), de->d_name, e);
		return r ? r : 1;
	}
	if (w->arg >= w->src->npaths)
		return list_missing(w);
	r = walk_top(w, w->src->paths[w->arg++], e);
	if (r == XFER_WALK_SKIP) /* left out, or only its contents */
		return xfer__walk_next(w, e);
	if (r < 0 && per_source(r)) /* this source: told, the others go */
		return top_unreadable(w, r);
	return r ? r : 1;
}

/* The counter thread sees the count grow: publish it every 256
 * entries. false when it was asked to stop. */
static bool count_publish(struct counter *c, const struct proto_xfer_totals *t,
			  bool pipe)
{
	if (atomic_load(&c->stop))
		return false;
	pthread_mutex_lock(&c->lock);
	c->t = *t;
	c->pipe = pipe;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->lock);
	return true;
}

int xfer__count_sources(const struct xfer_source *src,
			struct proto_xfer_totals *t, bool *pipe,
			uint64_t *missing, struct lr_err *err,
			struct counter *c)
{
	struct xlinks hl = { 0 }; /* -H: each file's bytes counted once */
	struct walker w;
	struct wentry e;
	int r;

	memset(t, 0, sizeof(*t));
	*pipe = false;
	xfer__walk_init(&w, src, false, err);
	while ((r = xfer__walk_next(&w, &e)) > 0) {
		if (r == XFER_WALK_SPECIAL)
			continue; /* never announced */
		t->files++;	  /* an unreadable one too: its UNREAD counts */
		if (r != 1)
			continue;
		if (e.is_stdin)
			*pipe = true;
		else if (e.kind == PROTO_XK_FILE &&
			 !(src->hard_links && xfer__hl_counted(&hl, &e.st)))
			t->bytes += (uint64_t)e.st.st_size;
		if (c && t->files % 256 == 0 && !count_publish(c, t, *pipe)) {
			r = -ECANCELED;
			break;
		}
	}
	xfer__walk_fini(&w);
	xfer__hl_free(&hl);
	if (*pipe)
		t->bytes = UINT64_MAX;
	if (missing)
		*missing = w.top_missing;
	return r;
}

static void *counter_main(void *arg)
{
	struct counter *c = arg;
	struct proto_xfer_totals t;
	struct lr_err err = { 0 };
	uint64_t missing = 0;
	bool pipe;
	int r = xfer__count_sources(c->src, &t, &pipe, &missing, &err, c);

	pthread_mutex_lock(&c->lock);
	c->t = t;
	c->missing = missing;
	c->pipe = pipe;
	c->r = r;
	c->err = err;
	c->done = true;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Start counting src in the background: walking a big tree takes as long
 * as setting up the connections, and neither needs the other until the
 * request says how many streams, which a sample decides. false when it
 * cannot (the caller counts when needed, as before). */
bool xfer__counter_start(struct counter *c, const struct xfer_source *src)
{
	memset(c, 0, sizeof(*c));
	c->src = src;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cv, NULL);
	if (pthread_create(&c->th, NULL, counter_main, c)) {
		pthread_mutex_destroy(&c->lock);
		pthread_cond_destroy(&c->cv);
		return false;
	}
	c->started = true;
	return true;
}

/* Many small files gain nothing from more streams and pay for their
 * contention: two; a pipe or big files: four. */
unsigned xfer__streams_for(const struct proto_xfer_totals *t, bool pipe)
{
	if (!pipe && t->files && t->bytes / t->files < (256u << 10))
		return 2;
	return XFER_DEFAULT_STREAMS;
}

/* The streams for what the first COUNT_SAMPLE entries (or all) are. */
unsigned xfer__counter_streams(struct counter *c)
{
	unsigned n;

	pthread_mutex_lock(&c->lock);
	while (!c->done && c->t.files < COUNT_SAMPLE)
		pthread_cond_wait(&c->cv, &c->lock);
	n = c->r ? XFER_DEFAULT_STREAMS : xfer__streams_for(&c->t, c->pipe);
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* Wait for the count (or stop it: cancel) and hand its totals to src when
 * it succeeded; otherwise src stays uncounted and xfer_send counts (and
 * reports what failed). */
void xfer__counter_join(struct counter *c, struct xfer_source *src, bool cancel)
{
	if (!c->started)
		return;
	if (cancel)
		atomic_store(&c->stop, true);
	pthread_join(c->th, NULL);
	c->started = false;
	if (!c->r && src) {
		src->counted = true;
		src->pipe = c->pipe;
		src->files = c->t.files;
		src->bytes = c->t.bytes;
		src->top_missing = c->missing;
	}
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cv);
}
