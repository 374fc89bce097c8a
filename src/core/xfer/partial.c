// SPDX-License-Identifier: MIT
/*
 * Partial files below a root: the temporary files and journals of files a
 * receiver has not finished, found, paired, listed and removed by age and
 * by total size. A receiver holds a lock on the temporary file it writes
 * (fsio_lock_temp): such a file is in use and is never removed. The
 * sweeper is the thread of `serve`'s --partial-max-age and
 * --partial-max-size.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../fsio.h"
#include "../xfer.h"
#include "banned.h"

#define PART_SUFFIX    ".lrpart"
#define JOURNAL_SUFFIX ".lrjournal"

/* One side file of a directory: its stem (the name without the suffix),
 * whether it is the journal, its disk use and mtime. */
struct side {
	char stem[FSIO_MAX_NAME + 1];
	bool journal;
	uint64_t bytes;
	int64_t mtime;
};

struct walk {
	int rootfd;
	xfer_partial_fn fn;
	void *ctx;
	const _Atomic bool *stop;
	char path[XFER_MAX_PATH + 1]; /* of the directory being read */
	struct lr_err *err;
};

static bool has_suffix(const char *name, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n > k && !memcmp(name + n - k, suffix, k);
}

/* name's stem and kind when it is a temporary file or journal. */
static bool side_of(const char *name, struct side *s)
{
	size_t n = strlen(name), k;

	if (n < 2 || name[0] != '.')
		return false;
	if (has_suffix(name, n, PART_SUFFIX)) {
		k = n - strlen(PART_SUFFIX);
		s->journal = false;
	} else if (has_suffix(name, n, JOURNAL_SUFFIX)) {
		k = n - strlen(JOURNAL_SUFFIX);
		s->journal = true;
	} else {
		return false;
	}
	memcpy(s->stem, name, k);
	s->stem[k] = '\0';
	return true;
}

static int by_stem(const void *a, const void *b)
{
	const struct side *x = a, *y = b;
	int c = strcmp(x->stem, y->stem);

	return c ? c : (int)x->journal - (int)y->journal;
}

/* The partial file of a stem (its temporary file first when both are
 * there) to the callback. */
static int report(struct walk *w, int dirfd, const struct side *s, unsigned n)
{
	struct xfer_partial p = { 0 };
	char name[FSIO_MAX_NAME + 1];
	unsigned i;

	for (i = 0; i < n; i++) {
		p.bytes += s[i].bytes;
		if (s[i].mtime > p.mtime)
			p.mtime = s[i].mtime;
		p.journal |= s[i].journal;
	}
	snprintf(name, sizeof(name), "%s%s", s[0].stem,
		 s[0].journal ? JOURNAL_SUFFIX : PART_SUFFIX);
	if ((size_t)snprintf(p.path, sizeof(p.path), "%s%s%s", w->path,
			     w->path[0] ? "/" : "", name) >= sizeof(p.path))
		return 0; /* beyond any path a transfer writes */
	p.in_use = !s[0].journal && fsio_temp_busy(dirfd, name);
	return w->fn(w->ctx, &p);
}

static int walk_dir(struct walk *w, int dirfd, unsigned depth);

/* Into the subdirectory name of dirfd. */
static int walk_sub(struct walk *w, int dirfd, const char *name, unsigned depth)
{
	size_t len = strlen(w->path);
	int fd, r;

	if (depth >= XFER_PARTIAL_MAX_DEPTH ||
	    len + 1 + strlen(name) > XFER_MAX_PATH)
		return 0;
	fd = openat(dirfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0; /* gone, or not ours to read: nothing of ours */
	snprintf(w->path + len, sizeof(w->path) - len, "%s%s", len ? "/" : "",
		 name);
	r = walk_dir(w, fd, depth + 1);
	w->path[len] = '\0';
	return r;
}

/* The side files of one directory, sorted by stem, then reported; its
 * subdirectories walked. fd is consumed. */
static int walk_dir(struct walk *w, int fd, unsigned depth)
{
	struct side *sides = NULL, s, *grown;
	unsigned n = 0, cap = 0, i, j;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int r = 0;

	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while (!r && (de = readdir(d))) {
		if (w->stop && atomic_load(w->stop)) {
			r = -EINTR;
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISDIR(st.st_mode)) {
			r = walk_sub(w, dirfd(d), de->d_name, depth);
			continue;
		}
		if (!S_ISREG(st.st_mode) || !side_of(de->d_name, &s))
			continue;
		s.bytes = (uint64_t)st.st_blocks * 512u;
		s.mtime = st.st_mtim.tv_sec;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			grown = realloc(sides, cap * sizeof(*sides));
			if (!grown) {
				r = lr_err_setc(w->err, -ENOMEM, "%s",
						w->path[0] ? w->path : ".");
				break;
			}
			sides = grown;
		}
		sides[n++] = s;
	}
	if (n)
		qsort(sides, n, sizeof(*sides), by_stem);
	for (i = 0; !r && i < n; i = j) {
		for (j = i + 1; j < n && !strcmp(sides[j].stem, sides[i].stem);)
			j++;
		r = report(w, dirfd(d), &sides[i], j - i);
	}
	free(sides);
	closedir(d);
	return r;
}

int xfer_partials_walk(int rootfd, xfer_partial_fn fn, void *ctx,
		       const _Atomic bool *stop, struct lr_err *err)
{
	struct walk *w = calloc(1, sizeof(*w));
	int fd, r;

	if (!w)
		return lr_err_setc(err, -ENOMEM, "walking the root");
	*w = (struct walk){
		.rootfd = rootfd, .fn = fn, .ctx = ctx, .stop = stop, .err = err
	};
	fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = fd < 0 ? lr_err_setc(err, -errno, "the root") : walk_dir(w, fd, 0);
	free(w);
	return r;
}

int xfer_partial_remove(int rootfd, const struct xfer_partial *p)
{
	char parent[FSIO_MAX_PATH + 1], name[FSIO_MAX_NAME + 1];
	char part[FSIO_MAX_NAME + 1], journal[FSIO_MAX_NAME + 1];
	struct side s;
	int dfd, fd, r = 0;

	fsio_split(p->path, strlen(p->path), parent, name);
	if (!side_of(name, &s))
		return -EINVAL;
	dfd = fsio_open_dir(rootfd, parent, false, 0);
	if (dfd < 0)
		return dfd;
	snprintf(part, sizeof(part), "%s%s", s.stem, PART_SUFFIX);
	snprintf(journal, sizeof(journal), "%s%s", s.stem, JOURNAL_SUFFIX);
	/* both go while the temporary file is ours (locked), so that a
	 * receiver that resumes it now is never written into a removed
	 * file; the journal first: a temporary file without one is never
	 * resumed */
	fd = fsio_take_temp(dfd, part);
	if (fd == -EBUSY || fd == -EAGAIN) {
		close(dfd);
		return -EBUSY;
	}
	if (unlinkat(dfd, journal, 0) && errno != ENOENT)
		r = -errno;
	if (!r && fd >= 0 && unlinkat(dfd, part, 0) && errno != ENOENT)
		r = -errno;
	if (fd >= 0)
		close(fd);
	close(dfd);
	return r;
}

/* The sweep's list of the partial files not in use. */
struct sweep {
	struct xfer_partial *v;
	size_t n, cap;
	struct xfer_sweep *res;
	uint64_t total; /* of all of them, in use too */
};

static int sweep_collect(void *ctx, const struct xfer_partial *p)
{
	struct sweep *s = ctx;
	struct xfer_partial *grown;

	s->total += p->bytes;
	if (p->in_use) {
		s->res->in_use++;
		s->res->kept++;
		s->res->kept_bytes += p->bytes;
		return 0;
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		grown = realloc(s->v, s->cap * sizeof(*s->v));
		if (!grown)
			return -ENOMEM;
		s->v = grown;
	}
	s->v[s->n++] = *p;
	return 0;
}

static int by_age(const void *a, const void *b)
{
	const struct xfer_partial *x = a, *y = b;

	return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

static void sweep_remove(int rootfd, struct sweep *s,
			 const struct xfer_partial *p)
{
	int r = xfer_partial_remove(rootfd, p);

	if (!r) {
		s->res->removed++;
		s->res->removed_bytes += p->bytes;
		s->total -= p->bytes;
		return;
	}
	if (r == -EBUSY)
		s->res->in_use++;
	else
		s->res->failed++;
	s->res->kept++;
	s->res->kept_bytes += p->bytes;
}

int xfer_partials_sweep(int rootfd, const struct xfer_partial_policy *pol,
			int64_t now, const _Atomic bool *stop,
			struct xfer_sweep *res, struct lr_err *err)
{
	struct sweep s = { .res = res };
	size_t i;
	int r;

	memset(res, 0, sizeof(*res));
	r = xfer_partials_walk(rootfd, sweep_collect, &s, stop, err);
	if (r == -ENOMEM && !err->msg[0])
		lr_err_setc(err, r, "the list of partial files");
	if (r) {
		free(s.v);
		return r;
	}
	if (s.n) /* the oldest first */
		qsort(s.v, s.n, sizeof(*s.v), by_age);
	for (i = 0; i < s.n && !(stop && atomic_load(stop)); i++) {
		const struct xfer_partial *p = &s.v[i];
		bool old = pol->max_age_s > 0 &&
			   now - p->mtime > pol->max_age_s;
		bool over = pol->max_bytes > 0 && s.total > pol->max_bytes;

		if (old || over) {
			sweep_remove(rootfd, &s, p);
		} else {
			res->kept++;
			res->kept_bytes += p->bytes;
		}
	}
	free(s.v);
	return 0;
}

struct xfer_sweeper {
	int rootfd;
	struct xfer_partial_policy pol;
	int64_t interval_ms;
	xfer_sweep_fn done;
	void *ctx;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* on CLOCK_MONOTONIC */
	bool stop;
	_Atomic bool stopping; /* stop, seen by a sweep under way */
};

static void sweep_once(struct xfer_sweeper *sw)
{
	struct lr_err err = { 0 };
	struct xfer_sweep res;
	int r;

	r = xfer_partials_sweep(sw->rootfd, &sw->pol, (int64_t)time(NULL),
				&sw->stopping, &res, &err);
	if (r == -EINTR)
		return; /* stopped */
	if (sw->done)
		sw->done(sw->ctx, r ? NULL : &res, r ? err.msg : NULL);
}

static void *sweeper_main(void *arg)
{
	struct xfer_sweeper *sw = arg;
	struct timespec at;

	pthread_mutex_lock(&sw->lock);
	while (!sw->stop) {
		pthread_mutex_unlock(&sw->lock);
		sweep_once(sw); /* the callback runs with no lock held */
		pthread_mutex_lock(&sw->lock);
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_sec += sw->interval_ms / 1000;
		at.tv_nsec += (sw->interval_ms % 1000) * 1000000;
		if (at.tv_nsec >= 1000000000) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000;
		}
		while (!sw->stop &&
		       pthread_cond_timedwait(&sw->cond, &sw->lock, &at) == 0)
			;
	}
	pthread_mutex_unlock(&sw->lock);
	return NULL;
}

int xfer_sweeper_start(int rootfd, const struct xfer_partial_policy *pol,
		       int64_t interval_ms, xfer_sweep_fn done, void *ctx,
		       struct xfer_sweeper **out)
{
	struct xfer_sweeper *sw = calloc(1, sizeof(*sw));
	pthread_condattr_t ca;
	int r;

	*out = NULL;
	if (!sw)
		return -ENOMEM;
	*sw = (struct xfer_sweeper){ .rootfd = rootfd,
				     .pol = *pol,
				     .interval_ms = interval_ms > 0
							    ? interval_ms
							    : 3600000,
				     .done = done,
				     .ctx = ctx };
	pthread_mutex_init(&sw->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sw->cond, &ca);
	pthread_condattr_destroy(&ca);
	r = pthread_create(&sw->thread, NULL, sweeper_main, sw);
	if (r) {
		pthread_cond_destroy(&sw->cond);
		pthread_mutex_destroy(&sw->lock);
		free(sw);
		return -r;
	}
	*out = sw;
	return 0;
}

void xfer_sweeper_stop(struct xfer_sweeper *sw)
{
	if (!sw)
		return;
	atomic_store(&sw->stopping, true);
	pthread_mutex_lock(&sw->lock);
	sw->stop = true;
	pthread_cond_signal(&sw->cond);
	pthread_mutex_unlock(&sw->lock);
	pthread_join(sw->thread, NULL);
	pthread_cond_destroy(&sw->cond);
	pthread_mutex_destroy(&sw->lock);
	free(sw);
}
