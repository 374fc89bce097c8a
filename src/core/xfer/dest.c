// SPDX-License-Identifier: MIT
/*
 * The receiver's destination: what to do with each announced file (its
 * directory, what is there already, resume, its temporary file and
 * space), naming a complete file (verified, its mode and time applied,
 * synced, then linked or renamed, never over a name it must not
 * replace), the directories the window's files are in, held open and
 * synced once per batch, and the symlinks and directory modes applied at
 * the end. Every path is walked through fsio, never following a symlink.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "net.h"
#include "units.h"
#include "xfer_int.h"
#include "banned.h"

/* The plan is REFUSE, for the reason given: 1. */
/* a name another session is receiving now (its temporary file locked) */
#define BUSY_WORDS "another transfer is receiving it now"

static int refuse(struct xfile *f, struct proto_xfer_plan *plan, int code,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int refuse(struct xfile *f, struct proto_xfer_plan *plan, int code,
		  const char *fmt, ...)
{
	va_list ap;

	plan->action = PROTO_XA_REFUSE;
	f->rx.code = code;
	va_start(ap, fmt);
	vsnprintf(f->rx.reason, sizeof(f->rx.reason), fmt, ap);
	va_end(ap);
	return 1;
}

/* The file's chunk arrays: 0, 1 when refused, or -ENOMEM (a pipe). */
static int plan_chunks(struct xsess *x, struct xfile *f,
		       const struct proto_xfer_entry *e,
		       struct proto_xfer_plan *plan)
{
	if (f->pipe)
		return xfer__file_grow(f, 16);
	if (xfer__chunks_of64(e->size, x->chunk) > XFER_MAX_CHUNKS)
		return refuse(f, plan, -EFBIG,
			      "too large for the chunk size: at most %u "
			      "chunks a file",
			      XFER_MAX_CHUNKS);
	f->nchunks = xfer__chunks_of(e->size, x->chunk);
	f->rx.implicit_sum = f->nchunks <= 1;
	f->rx.jpend = malloc((size_t)(f->nchunks ? f->nchunks : 1) *
			     sizeof(*f->rx.jpend));
	if (xfer__file_grow(f, f->nchunks ? f->nchunks : 1) || !f->rx.jpend)
		return refuse(f, plan, -ENOMEM,
			      "out of memory for its %u chunks", f->nchunks);
	return 0;
}

static int dirh_get(struct xsess *x, const char *rel, struct xfile *f);

/* The file's directory, made when missing: 0, or 1 when refused. */
static int plan_dir(struct xsess *x, struct xfile *f, const char *parent,
		    struct proto_xfer_plan *plan)
{
	int dfd = dirh_get(x, parent, f);

	if (dfd < 0)
		return refuse(f, plan, dfd, "cannot open its directory: %s",
			      lr_strerror(dfd));
	f->rx.dirfd = dfd;
	return 0;
}

/* Whether what is there (st) was modified after the entry's source, in
 * whole seconds as rsync -u compares them (a file system that keeps
 * coarser times than the source's must not make every file "newer"). */
static bool newer(const struct stat *st, const struct proto_xfer_entry *e)
{
	return st->st_mtim.tv_sec > e->mtime_sec;
}

/* What st (lstat of the name) says of the entry: 1 when decided (SKIP or
 * REFUSE), 0 to replace it. */
static bool quick_same(const struct stat *st, const struct proto_xfer_entry *e)
{
	return (uint64_t)st->st_size == e->size &&
	       st->st_mtim.tv_sec == e->mtime_sec &&
	       (uint32_t)st->st_mtim.tv_nsec == e->mtime_nsec;
}

static int decide_existing(struct xsess *x, struct xfile *f, int dirfd,
			   const struct proto_xfer_entry *e,
			   const struct stat *st, struct proto_xfer_plan *plan)
{
	uint32_t flags = x->o->flags;
	bool reg = S_ISREG(st->st_mode) && !f->pipe;

	f->rx.have_st = true; /* -o/-g: what an up-to-date file has */
	f->rx.st_uid = st->st_uid;
	f->rx.st_gid = st->st_gid;
	f->rx.st_dev = st->st_dev;
	f->rx.st_ino = st->st_ino;
	f->rx.st_mode = st->st_mode;
	f->rx.st_nlink = st->st_nlink;
	if (S_ISDIR(st->st_mode))
		return refuse(f, plan, -EISDIR,
			      "a directory of that name exists");
	/* the same size and mtime: up to date, whatever the flags (rsync's
	 * quick check); it lets an interrupted transfer be run again
	 * without --overwrite. With --checksum: the same content instead,
	 * whatever the mtime. */
	if (reg &&
	    ((flags & XFER_F_CHECKSUM)
		     ? (uint64_t)st->st_size == e->size &&
			       xfer__same_content(x, dirfd, f->rx.name, e)
		     : !(flags & XFER_F_OVERWRITE) && quick_same(st, e))) {
		plan->action = PROTO_XA_SKIP;
		return 1;
	}
	if (!(flags & (XFER_F_OVERWRITE | XFER_F_UPDATE)))
		return refuse(f, plan, -EEXIST, "exists");
	/* --update as rsync's -u: a copy newer than the source's is kept */
	if ((flags & XFER_F_UPDATE) && !f->pipe && S_ISREG(st->st_mode) &&
	    newer(st, e)) {
		f->rx.kept_newer = true; /* no name links to it (-H) */
		plan->action = PROTO_XA_SKIP;
		return 1;
	}
	return 0;
}

/* What is there under the name already: 0 to go on, 1 when decided (SKIP
 * or REFUSE). In a directory this session made, nothing is there it did
 * not make: no lookup. */
static int plan_existing(struct xsess *x, struct xfile *f,
			 const struct proto_xfer_entry *e,
			 struct proto_xfer_plan *plan)
{
	struct stat st;

	if ((x->o->flags & XFER_F_SCRATCH) || (f->rx.dh && f->rx.dh->fresh) ||
	    fstatat(f->rx.dirfd, f->rx.name, &st, AT_SYMLINK_NOFOLLOW))
		return 0;
	return decide_existing(x, f, f->rx.dirfd, e, &st, plan);
}

/* Whether f is made unnamed (create_anon) where it can be. */
static bool anon_fits(const struct xsess *x, const struct xfile *f)
{
	return ((f->rx.dh && f->rx.dh->fresh) ||
		(x->o->flags & XFER_F_SCRATCH)) &&
	       !x->rx.no_anon && !f->pipe && f->nchunks < JOURNAL_MIN_CHUNKS;
}

/* A file without a journal (it would start again anyway) in a directory
 * this session made (no name, and no temporary file or journal of an
 * earlier attempt, can be there): unnamed until complete, then linked.
 * One change to the directory instead of two (create, rename), so the
 * stream threads naming files and this thread creating them meet less on
 * the directory's lock, and nothing is left behind when interrupted. */
static bool create_anon(struct xsess *x, struct xfile *f)
{
	int r;

	if (!anon_fits(x, f))
		return false;
	r = fsio_open_anon(f->rx.dirfd, (mode_t)((f->mode & 0777) | 0600));
	if (r >= 0) {
		f->fd = r;
		f->rx.anon = true;
		f->rx.tmp[0] = '\0';
		return true;
	}
	if (r == -EOPNOTSUPP || r == -EISDIR || r == -EINVAL)
		x->rx.no_anon = true;
	return false;
}

/* Whether f's temporary file is free of another session's lock, waiting
 * for it within the session's budget (BUSY_WAIT_MS in all): a session
 * whose sender was killed ends at once, one whose link was cut within
 * IDLE_MS. Meanwhile an empty XFER_ACKS every KEEPALIVE_MS tells our
 * sender we are here, and the silence is not held against it after. */
static bool wait_unbusy(struct xsess *x, struct xfile *f)
{
	const struct timespec step = { .tv_nsec = 50 * 1000000 };
	int64_t told = net_now_ms();
	uint8_t kb[PROTO_HDR_LEN + 8];
	struct proto_buf b;
	bool free_now = true;

	while (fsio_temp_busy(f->rx.dirfd, f->rx.tmp)) {
		free_now = false;
		if (x->rx.busy_waited_ms >= BUSY_WAIT_MS ||
		    (x->o->cancel && atomic_load(x->o->cancel)))
			return false;
		/* it may be this session's own, withdrawn or failed: its
		 * acknowledgement out and its slot let go here */
		if (xfer__recv_service(x))
			return false;
		if (!fsio_temp_busy(f->rx.dirfd, f->rx.tmp))
			break;
		if (net_now_ms() - told >= KEEPALIVE_MS) {
			proto_buf_init(&b, kb, sizeof(kb));
			proto_msg_begin(&b, PROTO_XFER_ACKS);
			if (proto_msg_end(&b) || xfer__ctrl_send(x, &b))
				return false;
			told = net_now_ms();
		}
		nanosleep(&step, NULL);
		x->rx.busy_waited_ms += 50;
	}
	if (!free_now)
		atomic_store(&x->last_activity_ms, net_now_ms());
	return true;
}

/* The file to write into, and its space: 0, or 1 when refused. */
static int plan_create(struct xsess *x, struct xfile *f,
		       const struct proto_xfer_entry *e,
		       struct proto_xfer_plan *plan)
{
	bool not_waited = anon_fits(x, f); /* xfer__plan_file's choice */
	char need[32];
	int r;

	/* created with its final permissions when the umask allows (no
	 * chmod later), and always writable by its owner (a resume) */
	f->rx.cmode = (uint16_t)(((f->mode & 0777) | 0600) & ~x->rx.umask);
	if (!create_anon(x, f)) {
		/* a temporary name after all: another session's first */
		if (not_waited && !wait_unbusy(x, f))
			return refuse(f, plan, -EBUSY, BUSY_WORDS);
		r = fsio_create_temp(f->rx.dirfd, f->rx.tmp,
				     (mode_t)((f->mode & 0777) | 0600));
		if (r == -EBUSY)
			return refuse(f, plan, r, BUSY_WORDS);
		if (r < 0)
			return refuse(f, plan, r,
				      "cannot create its temporary file: %s",
				      lr_strerror(r));
		f->fd = r;
	}
	if (f->pipe || f->nchunks <= 1)
		return 0;
	r = fsio_reserve(f->fd, e->size, e->eflags & PROTO_XE_SPARSE);
	if (!r)
		return 0;
	if (!f->rx.anon) /* removed while ours (locked) */
		unlinkat(f->rx.dirfd, f->rx.tmp, 0);
	close(f->fd);
	f->fd = -1;
	units_fmt_iec(need, sizeof(need), (double)e->size);
	return refuse(f, plan, r, "%s (%s needed)",
		      r == -ENOSPC ? "no space left on the destination"
				   : lr_strerror(r),
		      need);
}

/* DRY_RUN: what would be done, looked up without making or writing
 * anything: SEND for a new name, REPLACE, SKIP or REFUSE as for real. */
static int plan_dry(struct xsess *x, struct xfile *f,
		    const struct proto_xfer_entry *e,
		    struct proto_xfer_plan *plan)
{
	char parent[FSIO_MAX_PATH + 1];
	struct stat st;
	int dfd, r;

	fsio_split(e->path, e->path_len, parent, f->rx.name);
	dfd = x->rx.destfd < 0 ? -ENOENT
			       : fsio_open_dir(x->rx.destfd, parent, false, 0);
	if (dfd < 0 && dfd != -ENOENT && dfd != -ENOTDIR)
		return refuse(f, plan, dfd, "cannot open its directory: %s",
			      lr_strerror(dfd));
	if (dfd < 0)
		return 0; /* its directory would be made: new */
	r = fstatat(dfd, f->rx.name, &st, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
	if (!r && !decide_existing(x, f, dfd, e, &st, plan))
		plan->action = PROTO_XA_REPLACE;
	close(dfd);
	return 0;
}

int xfer__plan_file(struct xsess *x, struct xfile *f,
		    const struct proto_xfer_entry *e, struct proto_buf *b,
		    struct proto_xfer_plan *plan)
{
	char parent[FSIO_MAX_PATH + 1], jname[FSIO_MAX_NAME + 1];
	uint32_t flags = x->o->flags;
	int r;

	plan->idx = e->idx;
	plan->action = PROTO_XA_SEND;
	r = plan_chunks(x, f, e, plan);
	if (r || (flags & XFER_F_STDOUT))
		return r < 0 ? r : 0;
	if (flags & XFER_F_DRY_RUN) {
		plan_dry(x, f, e, plan);
		return 0;
	}
	fsio_split(e->path, e->path_len, parent, f->rx.name);
	if (plan_dir(x, f, parent, plan))
		return 0;
	fsio_temp_name(f->rx.name, f->rx.tmp);
	fsio_journal_name(f->rx.name, jname);
	/* another session receiving this name: its end first, then what
	 * it left (a file it finished is up to date). An unnamed file in a
	 * directory this session made has no temporary name to share. */
	if (!anon_fits(x, f) && !wait_unbusy(x, f)) {
		refuse(f, plan, -EBUSY, BUSY_WORDS);
		return 0;
	}
	if (plan_existing(x, f, e, plan))
		return 0;
	r = !f->pipe && f->nchunks >= JOURNAL_MIN_CHUNKS &&
			    !(flags & (XFER_F_SCRATCH | XFER_F_NO_FSYNC))
		    ? xfer__try_resume(x, f, e, jname)
		    : 0;
	if (r == -EBUSY) {
		refuse(f, plan, r, BUSY_WORDS);
		return 0;
	}
	if (r != 1) {
		if (plan_create(x, f, e, plan))
			return 0;
		/* an earlier attempt's journal, once its temporary file is
		 * ours */
		if (f->nchunks >= JOURNAL_MIN_CHUNKS)
			unlinkat(f->rx.dirfd, jname, 0);
		xfer__journal_start(x, f, e, jname);
	}
	/* the old copy under the name, for what neither holds yet */
	if (xfer__delta_wanted(x, f)) {
		int held = xfer__delta_seed(x, f);

		if (held < 0)
			return held;
		r = held ? 1 : r;
	}
	if (r != 1)
		return 0;
	plan->action = PROTO_XA_RESUME;
	return xfer__put_held(x, f, b);
}

/* A temporary name no other file has: ".lr-<16 random hex>.lrpart". */
static void anon_name(char *out)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^
		    (uint64_t)(uintptr_t)out;
	snprintf(out, FSIO_MAX_NAME + 1, ".lr-%016llx.lrpart",
		 (unsigned long long)v);
}

/* Name the complete unnamed file f. The name was free when the file was
 * planned; if one appeared since, --overwrite and --update replace it
 * through a temporary name, as named files are. 0 or -errno. */
static int link_anon(struct xfile *f, bool replace)
{
	int r = fsio_link_anon(f->fd, f->rx.dirfd, f->rx.name);

	if (r != -EEXIST || !replace)
		return r;
	/* a name of this file's own, never the temporary name another
	 * session may be writing */
	anon_name(f->rx.tmp);
	fsio_lock_temp(f->fd); /* a sweep leaves it alone while named so */
	r = fsio_link_anon(f->fd, f->rx.dirfd, f->rx.tmp);
	if (!r) {
		r = fsio_commit(f->fd, f->rx.dirfd, f->rx.tmp, f->rx.name,
				true);
		if (r)
			unlinkat(f->rx.dirfd, f->rx.tmp, 0);
	}
	f->rx.tmp[0] = '\0';
	return r;
}

/* A step of finalize failed with r: the reason, and r. */
static int failed(struct xfile *f, int r, const char *what)
{
	snprintf(f->rx.reason, sizeof(f->rx.reason), "%s: %s", what,
		 lr_strerror(r));
	return r;
}

/* Size, mode and mtime on the descriptor, then fsync. */
static int apply_meta(struct xsess *x, struct xfile *f, bool synced)
{
	uint32_t flags = x->o->flags;
	struct timespec ts[2] = { { 0, UTIME_NOW },
				  { f->mtime_sec, f->mtime_nsec } };
	mode_t mode = f->mode & ((flags & XFER_F_KEEP_SETID) ? 07777 : 01777);

	if ((f->from_pipe || f->rx.zeroed || (f->eflags & PROTO_XE_SPARSE)) &&
	    ftruncate(f->fd, (off_t)f->size))
		return failed(f, -errno, "truncate");
	/* the owner first: a chown clears setuid and setgid bits. One that
	 * cannot be given (no CAP_CHOWN after all, an id the file system or
	 * user namespace has not) leaves the verified file as it is: said,
	 * not failed */
	if (f->rx.owned && fchown(f->fd, f->rx.uid, f->rx.gid))
		f->rx.owner_err = -errno;
	/* -X/-A: after the owner (a chown clears file capabilities), before
	 * the mode (an ACL changes it); what is not given is said, the file
	 * kept */
	xfer__xattr_file(x, f);
	if ((mode != f->rx.cmode || !f->rx.cmode || f->rx.owned ||
	     (flags & XFER_F_ACLS)) && /* an ACL set changed it */
	    fchmod(f->fd, mode))
		return failed(f, -errno, "chmod");
	if (futimens(f->fd, ts))
		return failed(f, -errno, "setting mtime");
	if (!(flags & XFER_F_NO_FSYNC) && !synced && fsync(f->fd))
		return failed(f, -errno, "fsync");
	return 0;
}

int xfer__finalize(struct xsess *x, struct xfile *f, bool synced)
{
	uint32_t flags = x->o->flags;
	bool replace = flags & (XFER_F_OVERWRITE | XFER_F_UPDATE);
	char jname[FSIO_MAX_NAME + 1];
	uint8_t d[DIGEST_LEN];
	int r;

	digest_file(f->size, x->chunk, f->nchunks, f->digests, d);
	if (!f->rx.implicit_sum && memcmp(d, f->rx.sum.digest, DIGEST_LEN)) {
		snprintf(f->rx.reason, sizeof(f->rx.reason),
			 "file digest mismatch (the source changed during "
			 "the transfer?)");
		return LR_EDIGEST;
	}
	if (flags & XFER_F_STDOUT)
		return 0;
	r = apply_meta(x, f, synced);
	if (r)
		return r;
	if (flags & XFER_F_SCRATCH) {
		/* doctor: written, verified and synced; never named */
		if (!f->rx.anon)
			unlinkat(f->rx.dirfd, f->rx.tmp, 0);
		return 0;
	}
	r = f->rx.anon ? link_anon(f, replace)
		       : fsio_commit(f->fd, f->rx.dirfd, f->rx.tmp, f->rx.name,
				     replace);
	if (r) {
		snprintf(f->rx.reason, sizeof(f->rx.reason), "%s",
			 r == -EEXIST ? "exists" : lr_strerror(r));
		return r;
	}
	if (f->rx.jfd >= 0) {
		fsio_journal_name(f->rx.name, jname);
		unlinkat(f->rx.dirfd, jname, 0);
	}
	return 0;
}

/* ---- directory handles ---- */

bool xfer__dir_named(struct xsess *x, struct xfile *f)
{
	/* a directory of its own is synced at once; true when a shared
	 * handle must be marked dirty (under the lock, by the caller) to be
	 * synced once per batch */
	if (f->rx.dirfd < 0 ||
	    (x->o->flags & (XFER_F_NO_FSYNC | XFER_F_STDOUT)))
		return false;
	if (!f->rx.dh) {
		fsync(f->rx.dirfd);
		return false;
	}
	return true;
}

void xfer__dirs_sync(struct xsess *x)
{
	unsigned i;

	/* the handles' fds stay open while a file refers to them, and only
	 * the control thread closes or replaces them */
	for (i = 0; i < DIRH_MAX; i++) {
		bool d;

		xfer__lock(&x->lock);
		d = x->rx.dirh[i].dirty && x->rx.dirh[i].fd >= 0;
		x->rx.dirh[i].dirty = false;
		xfer__unlock(&x->lock);
		if (d)
			fsync(x->rx.dirh[i].fd);
	}
}

/* The handle on directory rel, or NULL. Under the lock. */
static struct dirh *dirh_find(struct xsess *x, const char *rel)
{
	unsigned i;

	for (i = 0; i < DIRH_MAX; i++)
		if (x->rx.dirh[i].fd >= 0 && !x->rx.dirh[i].gone &&
		    !strcmp(x->rx.dirh[i].rel, rel))
			return &x->rx.dirh[i];
	return NULL;
}

/* Make h the handle on directory rel, open as fd, closing what it held
 * (no file refers to it: dirh_free). Under the lock. */
static void dirh_set(struct dirh *h, const char *rel, int fd, bool fresh)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = fd;
	h->fresh = fresh;
	h->dirty = false;
	h->gone = false;
	snprintf(h->rel, sizeof(h->rel), "%s", rel);
}

/* A handle to reuse for another directory: the oldest one no file of the
 * window refers to, synced when dirty; NULL when all are in use. Under
 * the lock (dropped and taken again around the fsync). */
static struct dirh *dirh_free(struct xsess *x)
{
	struct dirh *h = NULL;
	unsigned i;

	for (i = 0; i < DIRH_MAX; i++)
		if (!x->rx.dirh[i].refs && (!h || x->rx.dirh[i].fd < 0 ||
					    x->rx.dirh[i].tick < h->tick)) {
			h = &x->rx.dirh[i];
			if (h->fd < 0)
				break;
		}
	if (h && h->fd >= 0 && h->dirty) {
		/* no file refers to it, and only this thread replaces
		 * handles: it can be synced without the lock */
		h->dirty = false;
		xfer__unlock(&x->lock);
		fsync(h->fd);
		xfer__lock(&x->lock);
	}
	return h;
}

/* The descriptor of directory rel below the destination for file f,
 * made when missing: a shared handle (f->rx.dh) or, when every handle is
 * in use, one of f's own. Control thread only. */
static int dirh_get(struct xsess *x, const char *rel, struct xfile *f)
{
	struct dirh *h;
	bool made;
	int fd;

	xfer__lock(&x->lock);
	h = dirh_find(x, rel);
	if (!h) {
		h = dirh_free(x);
		if (h) {
			fd = fsio_make_dir(x->rx.destfd, rel, 0755, &made);
			if (fd < 0) {
				xfer__unlock(&x->lock);
				return fd;
			}
			dirh_set(h, rel, fd, made);
		}
	}
	if (h) {
		h->refs++;
		h->tick = ++x->rx.dirh_tick;
		f->rx.dh = h;
		xfer__unlock(&x->lock);
		return h->fd;
	}
	xfer__unlock(&x->lock);
	return fsio_open_dir(x->rx.destfd, rel, true, 0755);
}

/* The directory rel was just made (fd open on it): keep fd in a handle,
 * marked fresh, for the files that follow it. Takes fd. Control thread. */
void xfer__dirh_made(struct xsess *x, const char *rel, int fd)
{
	struct dirh *h;

	xfer__lock(&x->lock);
	h = dirh_find(x, rel);
	if (h) {
		/* a handle on a directory of that name that was moved or
		 * removed since: files in flight keep it, new ones must not
		 * find it */
		h->gone = true;
	}
	h = dirh_free(x);
	if (!h || strlen(rel) >= sizeof(h->rel)) {
		xfer__unlock(&x->lock);
		close(fd);
		return;
	}
	dirh_set(h, rel, fd, true);
	h->tick = ++x->rx.dirh_tick;
	xfer__unlock(&x->lock);
}

void xfer__dirh_fini(struct xsess *x)
{
	unsigned i;

	for (i = 0; i < DIRH_MAX; i++)
		if (x->rx.dirh[i].fd >= 0) {
			close(x->rx.dirh[i].fd);
			x->rx.dirh[i].fd = -1;
		}
}

mode_t xfer__read_umask(void)
{
	char line[128];
	unsigned m = 022;
	FILE *f = fopen("/proc/self/status", "r");

	/* the process's umask without changing it (no other thread races) */
	if (!f)
		return 022;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Umask: %o", &m) == 1)
			break;
	fclose(f);
	return (mode_t)m;
}

/* ---- symlinks and directories, at the end ---- */

void xfer__late_free(struct late *l)
{
	while (l) {
		struct late *n = l->next;

		free(l->path);
		free(l->target);
		xfer__xgive_free(l->xg);
		free(l);
		l = n;
	}
}

int xfer__late_add(struct late **head, const struct proto_xfer_entry *e)
{
	struct late *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->idx = e->idx;
	l->kind = e->kind;
	l->mode = e->mode;
	l->mtime_sec = e->mtime_sec;
	l->mtime_nsec = e->mtime_nsec;
	l->path = strndup(e->path, e->path_len);
	l->link_to = e->link_to;
	if (e->kind == PROTO_XK_CHARDEV || e->kind == PROTO_XK_BLOCKDEV) {
		const uint8_t *t = (const uint8_t *)e->target;

		/* the decoder took exactly PROTO_XFER_DEV_LEN bytes */
		l->dev_major = (uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 |
			       (uint32_t)t[2] << 8 | t[3];
		l->dev_minor = (uint32_t)t[4] << 24 | (uint32_t)t[5] << 16 |
			       (uint32_t)t[6] << 8 | t[7];
	} else if (e->target_len) {
		l->target = strndup(e->target, e->target_len);
	}
	if (!l->path || (e->kind == PROTO_XK_SYMLINK && !l->target)) {
		free(l->path);
		free(l->target);
		free(l);
		return -ENOMEM;
	}
	l->next = *head;
	*head = l;
	return 0;
}

/* A symlink or hard link that could not be made (why: in words, else
 * e's): counted, the first failure kept, a FAIL item into fb. */
static void late_failed(struct xsess *x, const struct late *l, int e,
			const char *why, struct proto_buf *fb,
			uint64_t *failed_n)
{
	struct proto_xfer_fail fl = { .idx = l->idx, .code = (uint32_t)-e };

	if (!why)
		why = e == -EEXIST ? "exists" : lr_strerror(e);
	/* what happened; the sender names the entry by its idx */
	snprintf(fl.text, sizeof(fl.text), "%s", why);
	(*failed_n)++;
	xfer__lock(&x->lock);
	xfer__note_failure_at(x, l->path, why, e);
	xfer__path_event(x, l->path, false, why, e);
	xfer__unlock(&x->lock);
	/* a full message goes, and the rest follow in another */
	if (!xfer__batch_room(x, fb, 4 + 8 + strlen(fl.text), PROTO_XFER_ACKS))
		proto_put_xfer_fail(fb, &fl);
}

static void late_symlink(struct xsess *x, const struct late *l,
			 struct proto_buf *fb, uint64_t *failed_n)
{
	char parent[FSIO_MAX_PATH + 1], name[FSIO_MAX_NAME + 1];
	bool replace = x->o->flags & (XFER_F_OVERWRITE | XFER_F_UPDATE);
	struct timespec ts[2] = { { .tv_nsec = UTIME_NOW },
				  { l->mtime_sec, l->mtime_nsec } };
	int dfd, e;

	fsio_split(l->path, strlen(l->path), parent, name);
	dfd = fsio_open_dir(x->rx.destfd, parent, true, 0755);
	e = dfd < 0 ? dfd : fsio_symlink_replace(dfd, name, l->target, replace);
	if (e)
		late_failed(x, l, e, NULL, fb, failed_n);
	else {
		if (l->owned) /* the link made, never what it points to */
			xfer__owner_node(
				x, l, dfd, name,
				&(struct xnode_meta){ .type = S_IFLNK });
		utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW);
	}
	if (dfd >= 0)
		close(dfd);
}

static mode_t type_of(const struct late *l)
{
	return l->kind == PROTO_XK_FIFO	     ? S_IFIFO
	       : l->kind == PROTO_XK_SOCKET  ? S_IFSOCK
	       : l->kind == PROTO_XK_CHARDEV ? S_IFCHR
					     : S_IFBLK;
}

/* A FIFO, socket or device node named name in dfd, of l's kind: made
 * (mode 0600 until its owner and mode are set), or already that node (a
 * re-run; only when it has no other name, which may be outside the
 * destination); another existing name is replaced only with OVERWRITE
 * or UPDATE (never a directory), by a node made under the temporary name
 * and renamed over it, so that a node that cannot be made leaves the old
 * one. What was made (or found) into *made. 0 or -errno. */
static int node_make(struct xsess *x, const struct late *l, int dfd,
		     const char *name, struct stat *made)
{
	mode_t type = type_of(l);
	dev_t rdev = (type == S_IFCHR || type == S_IFBLK)
			     ? makedev(l->dev_major, l->dev_minor)
			     : 0;
	char tmp[FSIO_MAX_NAME + 1];
	struct stat st;
	int e;

	if (!mknodat(dfd, name, type | 0600, rdev))
		return fstatat(dfd, name, made, AT_SYMLINK_NOFOLLOW) ? -errno
								     : 0;
	if (errno != EEXIST)
		return -errno;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if ((st.st_mode & S_IFMT) == type && st.st_rdev == rdev &&
	    st.st_nlink == 1) {
		*made = st;
		return 0;
	}
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!(x->o->flags & (XFER_F_OVERWRITE | XFER_F_UPDATE)))
		return -EEXIST;
	fsio_temp_name(name, tmp);
	unlinkat(dfd, tmp, 0); /* a stale one */
	if (mknodat(dfd, tmp, type | 0600, rdev))
		return -errno;
	if (renameat(dfd, tmp, dfd, name)) {
		e = -errno;
		unlinkat(dfd, tmp, 0);
		return e;
	}
	return fstatat(dfd, name, made, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

static void late_node(struct xsess *x, const struct late *l,
		      struct proto_buf *fb, uint64_t *failed_n)
{
	char parent[FSIO_MAX_PATH + 1], name[FSIO_MAX_NAME + 1];
	struct timespec ts[2] = { { .tv_nsec = UTIME_NOW },
				  { l->mtime_sec, l->mtime_nsec } };
	mode_t mode = l->mode &
		      ((x->o->flags & XFER_F_KEEP_SETID) ? 07777 : 01777);
	struct xnode_meta m = { .type = type_of(l), .mode = &mode, .ts = ts };
	struct stat made;
	int dfd, e;

	fsio_split(l->path, strlen(l->path), parent, name);
	dfd = fsio_open_dir(x->rx.destfd, parent, true, 0755);
	e = dfd < 0 ? dfd : node_make(x, l, dfd, name, &made);
	/* owner, mode and times on the node made (never through a name
	 * that changed since, nor a symlink) */
	m.made = &made;
	if (!e)
		e = xfer__owner_node(x, l, dfd, name, &m);
	if (e)
		late_failed(x, l, e, NULL, fb, failed_n);
	if (dfd >= 0)
		close(dfd);
}

/* A hard link (or, in a dry run, what would be): made, left as it was
 * (told to a sender that knows KEPT items), or failed. */
static void late_hardlink(struct xsess *x, const struct late *l,
			  struct proto_buf *fb, uint64_t *failed_n)
{
	char why[PROTO_MAX_TEXT], esc[ESC_MAX];
	bool dry = x->o->flags & XFER_F_DRY_RUN;
	/* a dry run's links, to a sender older than KEPT items: it says
	 * "would link" of each, and so does this end */
	int e = dry && !(x->o->flags & XFER_F_KEPT_ITEMS)
			? 0
			: xfer__hl_make(x, l, why, sizeof(why));
	const char *file = xfer__hl_file(x, l->link_to); /* takes the lock */
	struct xfile f = { 0 };

	if (e < 0) {
		late_failed(x, l, e, why, fb, failed_n);
		return;
	}
	if (e && (x->o->flags & XFER_F_KEPT_ITEMS) &&
	    !xfer__batch_room(x, fb, 4 + 5, PROTO_XFER_ACKS))
		proto_put_xfer_kept(fb, l->idx,
				    e == 1 ? PROTO_KEPT_OWN
					   : PROTO_KEPT_LINKED);
	if (e) {
		f.path = strdup(l->path);
		snprintf(why, sizeof(why),
			 "left as it was: a file of its own, not a link to %s",
			 file ? fsio_escape(file, strlen(file), esc,
					    sizeof(esc))
			      : "its file");
	}
	xfer__lock(&x->lock);
	if (e) { /* a file there kept, or the link there: up to date */
		x->res->files_skipped++;
		if (f.path)
			xfer__file_event(x, &f, true, true, e == 1 ? why : NULL,
					 0);
	} else {
		x->res->files_linked++;
		xfer__link_event(x, l->path, file, dry);
	}
	xfer__unlock(&x->lock);
	free(f.path); /* NULL when the event took it */
}

/* fn for each entry of kind kind in l, in the order of announcement (l
 * is in reverse order; without memory for that, in l's). */
static void late_each(struct xsess *x, struct late *l, uint8_t kind,
		      void (*fn)(struct xsess *, const struct late *,
				 struct proto_buf *, uint64_t *),
		      struct proto_buf *fb, uint64_t *failed_n)
{
	struct late **v, *i;
	size_t n = 0, k;

	for (i = l; i; i = i->next)
		n += i->kind == kind;
	v = n ? malloc(n * sizeof(*v)) : NULL;
	for (k = 0, i = l; v && i; i = i->next)
		if (i->kind == kind)
			v[k++] = i;
	for (k = n; v && k--;)
		fn(x, v[k], fb, failed_n);
	for (i = l; !v && i; i = i->next)
		if (i->kind == kind)
			fn(x, i, fb, failed_n);
	free(v);
}

static void late_dir(struct xsess *x, struct late *l)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_NOW },
				  { l->mtime_sec, l->mtime_nsec } };
	uint32_t flags = x->o->flags;
	int dfd = fsio_open_dir(x->rx.destfd, l->path, false, 0), e;

	if (dfd < 0)
		return;
	/* before the mode: a chown clears setgid */
	if (l->owned && fchown(dfd, l->uid, l->gid)) {
		e = -errno;
		xfer__lock(&x->lock);
		xfer__owner_said(x, l->path, e);
		xfer__unlock(&x->lock);
	}
	if (flags & XFER_F_ACLS) /* before the mode, which the ACL changes */
		xfer__xattr_dir_acls(x, dfd, l);
	fchmod(dfd, l->mode & ((flags & XFER_F_KEEP_SETID) ? 07777 : 01777));
	futimens(dfd, ts);
	if (!(flags & XFER_F_NO_FSYNC))
		fsync(dfd);
	close(dfd);
}

void xfer__late_apply(struct xsess *x, struct late *l, struct proto_buf *fb,
		      uint64_t *failed_n)
{
	struct late *i;

	/* hard links (in their order) and symlinks, then directories
	 * children first: the list is in reverse order of announcement; a
	 * dry run tells what would become of the links, changes nothing */
	late_each(x, l, PROTO_XK_HARDLINK, late_hardlink, fb, failed_n);
	if (x->o->flags & XFER_F_DRY_RUN)
		return;
	for (i = l; i; i = i->next)
		if (i->kind >= PROTO_XK_FIFO && i->kind <= PROTO_XK_BLOCKDEV)
			late_node(x, i, fb, failed_n);
	for (i = l; i; i = i->next)
		if (i->kind == PROTO_XK_SYMLINK)
			late_symlink(x, i, fb, failed_n);
	for (i = l; i; i = i->next)
		if (i->kind == PROTO_XK_DIR)
			late_dir(x, i);
}
