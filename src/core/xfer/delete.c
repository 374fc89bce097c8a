// SPDX-License-Identifier: MIT
/*
 * The receiver's --delete (docs/PROTOCOL.md section 7.9): every path the
 * sender announces is noted (8 bytes of its XXH3 digest in an open
 * table); at the end, each directory the session was sent (its
 * announced directories, and the destination itself when a source came
 * as its contents) is listed, and what is in it that was not announced
 * is removed: a directory with everything below it, never through a
 * symlink (a symlink is removed as itself), never the temporary files
 * and journals of transfers. What the filter rules leave out is kept
 * unless DELETE_EXCLUDED; a directory that holds something kept stays.
 * Nothing is removed when the sender could not read a source, or when
 * the table could not grow. Each removal is told to the sender in a
 * DELETED item and to this side's callback.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "filter.h"
#include "xfer_int.h"
#include "banned.h"

static uint64_t path_key(const char *p, size_t n)
{
	uint8_t d[DIGEST_LEN];
	uint64_t k = 0;
	unsigned i;

	digest_chunk(p, n, d);
	for (i = 0; i < 8; i++)
		k = k << 8 | d[i];
	return k ? k : 1;
}

static void put_key(struct xdel *d, uint64_t k)
{
	size_t i = (size_t)k & (d->cap - 1);

	while (d->h[i] && d->h[i] != k)
		i = (i + 1) & (d->cap - 1);
	if (!d->h[i]) {
		d->h[i] = k;
		d->n++;
	}
}

static bool has_key(const struct xdel *d, uint64_t k)
{
	size_t i = (size_t)k & (d->cap - 1);

	while (d->h[i]) {
		if (d->h[i] == k)
			return true;
		i = (i + 1) & (d->cap - 1);
	}
	return false;
}

/* The table at most half full: doubled (and filled again) when needed. */
static bool grow(struct xdel *d)
{
	size_t cap = d->cap ? d->cap * 2 : 4096, i;
	uint64_t *old = d->h, *h = calloc(cap, sizeof(*h));

	if (!h)
		return false;
	d->h = h;
	d->cap = cap;
	d->n = 0;
	for (i = 0; old && i < cap / 2; i++)
		if (old[i])
			put_key(d, old[i]);
	free(old);
	return true;
}

void xfer__del_note(struct xsess *x, const char *path, size_t len)
{
	struct xdel *d = &x->rx.del;

	if (!(x->o->flags & XFER_F_DELETE) || d->failed)
		return;
	if ((d->n + 1) * 2 > d->cap && !grow(d)) {
		d->failed = true; /* delete nothing rather than too much */
		return;
	}
	put_key(d, path_key(path, len));
}

void xfer__del_free(struct xsess *x)
{
	free(x->rx.del.h);
	x->rx.del = (struct xdel){ 0 };
}

/* The walk of one listed directory. */
struct dwalk {
	struct xsess *x;
	struct proto_buf *b;
	char path[FSIO_MAX_PATH + 1]; /* relative to the destination */
	size_t plen;
	bool dry; /* DRY_RUN: told, not removed */
	int r;
};

static bool kept_by_rules(const struct dwalk *w, bool is_dir)
{
	const struct xfer_opts *o = w->x->o;

	return o->filter && !(o->flags & XFER_F_DELETE_EXCLUDED) &&
	       filter_excluded(o->filter, w->path, w->plen, is_dir);
}

static uint8_t kind_of(mode_t m)
{
	return S_ISREG(m)   ? PROTO_XK_FILE
	       : S_ISDIR(m) ? PROTO_XK_DIR
	       : S_ISLNK(m) ? PROTO_XK_SYMLINK
			    : 4;
}

/* A removal that failed (e): counted (exit status 23), the first kept
 * for the sender (XFER_DONE), said here. rsync reports these too. */
static void failed(struct dwalk *w, int e)
{
	struct xsess *x = w->x;
	char esc[ESC_MAX], why[PROTO_MAX_TEXT];
	struct xfile f = { .path = strdup(w->path) };
	unsigned n;

	snprintf(why, sizeof(why), "could not be deleted: %s",
		 e == -ELOOP ? "deeper than a transfer goes (not walked)"
		 : e == -ENAMETOOLONG ? "a name in it makes too long a path"
				      : lr_strerror(e));
	xfer__lock(&x->lock);
	if (!x->res->deletes_failed++)
		snprintf(x->res->deletes_why, sizeof(x->res->deletes_why),
			 "'%.150s' %s",
			 fsio_escape(w->path, w->plen, esc, sizeof(esc)), why);
	n = x->evq.n;
	if (f.path)
		xfer__file_event(x, &f, false, false, why, e);
	if (x->evq.n > n)
		x->evq.v[x->evq.n - 1].deleted = true;
	xfer__unlock(&x->lock);
	free(f.path); /* NULL when the event took it */
}

/* A removal: counted, told to the sender and here. */
static void told(struct dwalk *w, uint8_t kind)
{
	struct xsess *x = w->x;
	struct proto_xfer_deleted dl = { .kind = kind,
					 .path_len = (uint16_t)w->plen,
					 .path = w->path };

	if (!w->r)
		w->r = xfer__batch_room(x, w->b, 8 + w->plen, PROTO_XFER_ACKS);
	if (!w->r)
		proto_put_xfer_deleted(w->b, &dl);
	xfer__deleted(x, w->path);
	xfer__alive(x);
}

static bool path_push(struct dwalk *w, const char *name, size_t *was)
{
	size_t n = strlen(name);

	*was = w->plen;
	if (w->plen + (w->plen ? 1 : 0) + n > FSIO_MAX_PATH)
		return false;
	if (w->plen)
		w->path[w->plen++] = '/';
	memcpy(w->path + w->plen, name, n + 1);
	w->plen += n;
	return true;
}

static void path_pop(struct dwalk *w, size_t was)
{
	w->plen = was;
	w->path[was] = 0;
}

static bool remove_entry(struct dwalk *w, int dfd, const char *name,
			 unsigned depth);

/* Everything in the directory name (in dfd) that the rules do not keep,
 * then the directory itself if that emptied it: whether it went (a dry
 * run: would go). */
static bool remove_tree(struct dwalk *w, int dfd, const char *name,
			unsigned depth)
{
	int fd = openat(dfd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool all = true;
	struct dirent *de;
	DIR *dir;

	if (fd < 0) {
		if (errno == ENOENT)
			return true; /* gone already: nothing to tell */
		failed(w, -errno);
		return false;
	}
	dir = fdopendir(fd);
	if (!dir) {
		failed(w, -errno);
		close(fd);
		return false;
	}
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!remove_entry(w, dirfd(dir), de->d_name, depth + 1))
			all = false;
	}
	closedir(dir);
	/* what stays in it (kept by the rules, or not removed: said) keeps
	 * it */
	if (!all)
		return false;
	if (!w->dry && unlinkat(dfd, name, AT_REMOVEDIR) != 0) {
		if (errno == ENOENT)
			return true;
		failed(w, -errno);
		return false;
	}
	told(w, PROTO_XK_DIR);
	return true;
}

/* A name (in dfd, at w->path) that is not a directory: removed (a dry
 * run: would be) and told; gone already: true, not told. */
static bool remove_leaf(struct dwalk *w, int dfd, const char *name, mode_t mode)
{
	if (!w->dry && unlinkat(dfd, name, 0)) {
		if (errno == ENOENT)
			return true;
		failed(w, -errno);
		return false;
	}
	told(w, kind_of(mode));
	return true;
}

/* name (in dfd, at w->path) is not the source's: removed, unless kept.
 * Whether it went (or was gone already); one that could not be looked
 * at or removed is said (failed). */
static bool remove_entry(struct dwalk *w, int dfd, const char *name,
			 unsigned depth)
{
	bool gone = false;
	struct stat st;
	size_t was;

	if (fsio_is_side_name(name, strlen(name)))
		return false;
	if (!path_push(w, name, &was)) {
		failed(w, -ENAMETOOLONG); /* said of its directory */
		return false;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		gone = errno == ENOENT;
		if (!gone)
			failed(w, -errno);
	} else if (kept_by_rules(w, S_ISDIR(st.st_mode))) {
		gone = false;
	} else if (!S_ISDIR(st.st_mode)) {
		gone = remove_leaf(w, dfd, name, st.st_mode);
	} else if (depth >= FSIO_MAX_DEPTH) {
		failed(w, -ELOOP);
	} else {
		gone = remove_tree(w, dfd, name, depth);
	}
	path_pop(w, was);
	return gone;
}

/* One directory the session was sent, at rel ("" = the destination):
 * what is in it and was not announced goes. */
static void delete_in(struct dwalk *w, const char *rel)
{
	struct xsess *x = w->x;
	struct dirent *de;
	DIR *dir;
	int fd;

	fd = fsio_open_dir(x->rx.destfd, rel, false, 0);
	if (fd < 0)
		return; /* not made (refused), or no longer a directory */
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	snprintf(w->path, sizeof(w->path), "%s", rel);
	w->plen = strlen(w->path);
	while ((de = readdir(dir))) {
		size_t was;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!path_push(w, de->d_name, &was)) {
			failed(w, -ENAMETOOLONG);
			continue;
		}
		if (has_key(&x->rx.del, path_key(w->path, w->plen))) {
			path_pop(w, was);
			continue;
		}
		path_pop(w, was);
		remove_entry(w, dirfd(dir), de->d_name, 0);
	}
	closedir(dir);
}

/* The destination, for a transfer that announced nothing into it. */
static int open_dest(struct xsess *x)
{
	const struct xfer_dest *d = &x->rx.dest;

	if (x->rx.destfd < 0)
		x->rx.destfd = fsio_open_dir(d->dirfd, d->path ? d->path : "",
					     false, 0);
	return x->rx.destfd;
}

int xfer__del_run(struct xsess *x, const struct late *l, uint64_t unread,
		  struct proto_buf *b)
{
	struct dwalk *w;
	int r;

	if (!(x->o->flags & XFER_F_DELETE) ||
	    (x->o->flags & (XFER_F_STDOUT | XFER_F_SCRATCH)))
		return 0;
	if (unread || x->rx.del.failed) {
		xfer__lock(&x->lock);
		x->res->delete_skipped = true;
		xfer__unlock(&x->lock);
		return 0;
	}
	if (open_dest(x) < 0)
		return 0; /* nothing there to delete */
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->x = x;
	w->b = b;
	w->dry = (x->o->flags & XFER_F_DRY_RUN) != 0;
	if (x->o->delete_root)
		delete_in(w, "");
	for (; l; l = l->next)
		if (l->kind == PROTO_XK_DIR)
			delete_in(w, l->path);
	r = w->r;
	free(w);
	return r;
}

void xfer__del_done(const struct xsess *x, struct proto_xfer_done *d)
{
	const char *s = x->res->deletes_why;
	size_t i;

	d->deletes_failed = x->res->deletes_failed;
	/* printable ASCII (the path is escaped already) */
	for (i = 0; s[i] && i + 1 < sizeof(d->deletes_why); i++)
		d->deletes_why[i] = (s[i] >= 0x20 && s[i] <= 0x7e) ? s[i] : '?';
	d->deletes_why[i] = '\0';
}
