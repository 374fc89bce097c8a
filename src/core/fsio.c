// SPDX-License-Identifier: MIT
/*
 * Safe access to a file tree on behalf of a peer: path checks, escaping of
 * names for display, and directory walks that never follow a symlink.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <xxhash.h>

#include "fsio.h"
#include "banned.h"

static bool is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

int fsio_path_check(const char *path, size_t len, const char **why)
{
	const char *reason;
	size_t i, start = 0, depth = 0;

	if (len == 0) {
		reason = "empty path";
		goto out_bad;
	}
	if (len > FSIO_MAX_PATH) {
		reason = "path too long";
		goto out_bad;
	}
	if (path[0] == '/') {
		reason = "absolute path";
		goto out_bad;
	}
	for (i = 0; i <= len; i++) {
		size_t n;

		if (i < len) {
			unsigned char c = (unsigned char)path[i];

			if (c == '\0') {
				reason = "NUL in path";
				goto out_bad;
			}
			if (is_ctl(c)) {
				reason = "control character in path";
				goto out_bad;
			}
			if (c != '/')
				continue;
		}
		/* path[start, i) is one component */
		n = i - start;
		if (n == 0) {
			reason = "empty component";
			goto out_bad;
		}
		if (n > FSIO_MAX_NAME) {
			reason = "component too long";
			goto out_bad;
		}
		if (path[start] == '.' &&
		    (n == 1 || (n == 2 && path[start + 1] == '.'))) {
			reason = "\".\" or \"..\" component";
			goto out_bad;
		}
		if (++depth > FSIO_MAX_DEPTH) {
			reason = "too many components";
			goto out_bad;
		}
		start = i + 1;
	}
	return 0;

out_bad:
	if (why)
		*why = reason;
	return LR_EBADPATH;
}

char *fsio_escape(const char *name, size_t len, char *out, size_t cap)
{
	return lr_escape(name, len, out, cap, true);
}

static int open_dir_beneath(int dirfd, const char *rel)
{
	struct open_how how = {
		.flags = O_DIRECTORY | O_RDONLY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	return (int)fd;
}

/* Walk rel one component at a time from dirfd, each with O_NOFOLLOW. */
static int walk_dir(int dirfd, const char *rel, size_t len, bool create,
		    mode_t mode, bool *made)
{
	const int flags = O_DIRECTORY | O_NOFOLLOW | O_RDONLY | O_CLOEXEC;
	char comp[FSIO_MAX_NAME + 1];
	size_t start = 0;
	int cur = dirfd;
	int err;

	while (start < len) {
		const char *slash = memchr(rel + start, '/', len - start);
		size_t end = slash ? (size_t)(slash - rel) : len;
		int fd;

		memcpy(comp, rel + start, end - start);
		comp[end - start] = '\0';
		fd = openat(cur, comp, flags);
		if (made)
			*made = false;
		if (fd < 0 && errno == ENOENT && create) {
			if (mkdirat(cur, comp, mode) == 0) {
				if (made)
					*made = true;
			} else if (errno != EEXIST) {
				err = -errno;
				goto out_close_cur;
			}
			fd = openat(cur, comp, flags);
		}
		if (fd < 0) {
			err = -errno;
			goto out_close_cur;
		}
		if (cur != dirfd)
			close(cur);
		cur = fd;
		start = end + 1;
	}
	return cur;

out_close_cur:
	if (cur != dirfd)
		close(cur);
	return err;
}

int fsio_open_dir(int dirfd, const char *rel, bool create, mode_t mode)
{
	size_t len;
	int fd;

	if (!rel)
		return -EINVAL;
	if (rel[0] == '\0') {
		fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	len = strnlen(rel, FSIO_MAX_PATH + 1);
	if (fsio_path_check(rel, len, NULL))
		return LR_EBADPATH;
	if (!create) {
		fd = open_dir_beneath(dirfd, rel);
		/*
		 * Old kernels (ENOSYS, EINVAL for unknown resolve flags),
		 * seccomp filters (EPERM) and a concurrent rename (EAGAIN)
		 * fall back to the walk, which is as strict.
		 */
		if (fd != -ENOSYS && fd != -EINVAL && fd != -EPERM &&
		    fd != -EAGAIN)
			return fd;
	}
	return walk_dir(dirfd, rel, len, create, mode, NULL);
}

int fsio_make_dir(int dirfd, const char *rel, mode_t mode, bool *made)
{
	size_t len;

	*made = false;
	if (!rel || !rel[0])
		return fsio_open_dir(dirfd, rel, false, 0);
	len = strnlen(rel, FSIO_MAX_PATH + 1);
	if (fsio_path_check(rel, len, NULL))
		return LR_EBADPATH;
	return walk_dir(dirfd, rel, len, true, mode, made);
}

void fsio_split(const char *path, size_t len, char *parent, char *name)
{
	size_t cut = len, plen, nlen;

	while (cut > 0 && path[cut - 1] != '/')
		cut--;
	/* path[0, cut - 1) is the parent, path[cut, len) the name */
	plen = cut ? cut - 1 : 0;
	nlen = len - cut;
	if (plen > FSIO_MAX_PATH)
		plen = FSIO_MAX_PATH;
	if (nlen > FSIO_MAX_NAME)
		nlen = FSIO_MAX_NAME;
	memcpy(parent, path, plen);
	parent[plen] = '\0';
	memcpy(name, path + cut, nlen);
	name[nlen] = '\0';
}

/* out = "." name suffix, or "." <16 hex of a hash of name> suffix. */
static void side_name(const char *name, const char *suffix, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(name), s = strlen(suffix), o = 0;
	uint64_t h;
	int i;

	out[o++] = '.';
	if (1 + n + s <= FSIO_MAX_NAME) {
		memcpy(out + o, name, n);
		o += n;
	} else {
		h = XXH3_64bits(name, n);
		for (i = 60; i >= 0; i -= 4)
			out[o++] = hex[(h >> i) & 0xf];
	}
	memcpy(out + o, suffix, s + 1);
}

void fsio_temp_name(const char *name, char *out)
{
	side_name(name, ".lrpart", out);
}

void fsio_journal_name(const char *name, char *out)
{
	side_name(name, ".lrjournal", out);
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

bool fsio_is_side_name(const char *name, size_t len)
{
	return len > 1 && name[0] == '.' &&
	       (ends_with(name, len, ".lrpart") ||
		ends_with(name, len, ".lrjournal") ||
		ends_with(name, len, ".lrtoken"));
}

int fsio_reserve(int fd, uint64_t size, bool sparse)
{
	struct statfs sfs;
	struct statvfs svfs;

	if (size > (uint64_t)INT64_MAX)
		return -EFBIG;
	if (!sparse && fstatfs(fd, &sfs) == 0 &&
	    sfs.f_type == (typeof(sfs.f_type))TMPFS_MAGIC) {
		/* size=0 mounts have no limit and report 0 blocks */
		if (fstatvfs(fd, &svfs) == 0 && svfs.f_frsize &&
		    svfs.f_blocks &&
		    svfs.f_bavail < (size + svfs.f_frsize - 1) / svfs.f_frsize)
			return -ENOSPC;
		sparse = true;
	}
	if (!sparse && fallocate(fd, 0, 0, (off_t)size) == 0)
		return 0;
	if (!sparse && errno != EOPNOTSUPP && errno != ENOSYS)
		return -errno;
	return ftruncate(fd, (off_t)size) ? -errno : 0;
}

int fsio_open_anon(int dirfd, mode_t mode)
{
	int fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, mode);

	return fd < 0 ? -errno : fd;
}

/* Whether linkat(AT_EMPTY_PATH) names a file here: it needs
 * CAP_DAC_READ_SEARCH (root has it) and is one lookup cheaper than the
 * /proc/self/fd path. 0 untried, 1 it does, -1 it does not. */
static _Atomic int empty_path_links;

static int link_proc(int fd, int dirfd, const char *name)
{
	char p[40];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, p, dirfd, name, AT_SYMLINK_FOLLOW) ? -errno : 0;
}

int fsio_link_anon(int fd, int dirfd, const char *name)
{
	int known = atomic_load(&empty_path_links), r;

	if (known < 0)
		return link_proc(fd, dirfd, name);
	r = linkat(fd, "", dirfd, name, AT_EMPTY_PATH) ? -errno : 0;
	if (!r) {
		atomic_store(&empty_path_links, 1);
		return 0;
	}
	/* once it worked, a failure is the link's; untried, any failure
	 * but EEXIST may be the method's (ENOENT without the capability,
	 * a policy's EPERM or EINVAL): /proc decides, and a link made
	 * there turns the first way off */
	if (known > 0 || r == -EEXIST)
		return r;
	r = link_proc(fd, dirfd, name);
	if (!r)
		atomic_store(&empty_path_links, -1);
	return r;
}

/*
 * A receiver's lock on its temporary file is an open file description
 * lock (F_OFD_SETLK, write, the whole file): two sessions of one process
 * exclude each other as two processes do, and a look (F_OFD_GETLK) never
 * takes it.
 */
int fsio_lock_temp(int fd)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (!fcntl(fd, F_OFD_SETLK, &l))
		return 0;
	if (errno == EAGAIN || errno == EACCES)
		return -EBUSY;
	return 0; /* a file system without locks: none to hold */
}

/* Whether fd is the file name in dirfd is now. */
static bool is_named(int fd, int dirfd, const char *name)
{
	struct stat a, b;

	return !fstat(fd, &a) &&
	       !fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bool fsio_temp_busy(int dirfd, const char *name)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct stat st;
	bool busy;
	int fd;

	fd = openat(dirfd, name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	busy = !fstat(fd, &st) && S_ISREG(st.st_mode) &&
	       !fcntl(fd, F_OFD_GETLK, &l) && l.l_type != F_UNLCK;
	close(fd);
	return busy;
}

int fsio_take_temp(int dirfd, const char *name)
{
	struct stat st;
	int fd, r;

	fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP || errno == ENXIO || errno == EISDIR
			       ? -EINVAL
			       : -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	r = fsio_lock_temp(fd);
	if (!r && !is_named(fd, dirfd, name))
		r = -EAGAIN; /* replaced while we opened it */
	if (r) {
		close(fd);
		return r;
	}
	return fd;
}

int fsio_create_temp(int dirfd, const char *name, mode_t mode)
{
	int flags = O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC;
	int fd, old, tries;

	for (tries = 0; tries < 4; tries++) {
		fd = openat(dirfd, name, flags, mode);
		if (fd >= 0) {
			if (!fsio_lock_temp(fd) && is_named(fd, dirfd, name))
				return fd;
			close(fd); /* taken or replaced in between */
			continue;
		}
		if (errno != EEXIST)
			return -errno;
		/* left by an earlier attempt that cannot be resumed: removed
		 * under its lock, unless a receiver is writing it */
		old = fsio_take_temp(dirfd, name);
		if (old == -EBUSY)
			return -EBUSY;
		if (old >= 0) {
			unlinkat(dirfd, name, 0);
			close(old);
		} else if (old == -EINVAL && unlinkat(dirfd, name, 0)) {
			return -EEXIST; /* a directory of that name */
		}
	}
	return -EBUSY;
}

int fsio_commit(int fd, int dirfd, const char *tmp, const char *name,
		bool replace)
{
	if (fd >= 0 && !is_named(fd, dirfd, tmp))
		return -ESTALE; /* the temporary name is not ours any more */
	if (replace)
		return renameat(dirfd, tmp, dirfd, name) ? -errno : 0;
	/* the system call itself: musl 1.2.3 has no renameat2 */
	return syscall(SYS_renameat2, dirfd, tmp, dirfd, name, RENAME_NOREPLACE)
		       ? -errno
		       : 0;
}

int fsio_symlink_replace(int dirfd, const char *name, const char *target,
			 bool replace)
{
	struct stat st;
	int e;

	char have[FSIO_MAX_PATH + 1];
	ssize_t k;

	if (!symlinkat(target, dirfd, name))
		return 0;
	e = -errno;
	if (e != -EEXIST)
		return e;
	/* the same link is there already: as an identical file is */
	k = readlinkat(dirfd, name, have, sizeof(have));
	if (k >= 0 && (size_t)k == strlen(target) &&
	    !memcmp(have, target, (size_t)k))
		return 0;
	if (!replace || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) ||
	    S_ISDIR(st.st_mode) || unlinkat(dirfd, name, 0))
		return e;
	return symlinkat(target, dirfd, name) ? -errno : 0;
}

int fsio_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;
	size_t got = 0;
	ssize_t k;

	while (got < len) {
		k = pread(fd, p + got, len - got, (off_t)(off + got));
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return LR_ETRUNC;
		got += (size_t)k;
	}
	return 0;
}

/* write len bytes, at off when off >= 0 */
static int put_all(int fd, const void *buf, size_t len, int64_t off)
{
	const uint8_t *p = buf;
	size_t done = 0;
	ssize_t k;

	while (done < len) {
		k = off < 0 ? write(fd, p + done, len - done)
			    : pwrite(fd, p + done, len - done,
				     (off_t)(off + (int64_t)done));
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)k;
	}
	return 0;
}

int fsio_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	return put_all(fd, buf, len, (int64_t)off);
}

int fsio_write_all(int fd, const void *buf, size_t len)
{
	return put_all(fd, buf, len, -1);
}

int fsio_read_small(const char *path, size_t max, char **buf, size_t *len)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC)
				   : STDIN_FILENO;
	size_t cap = 0;
	int r = 0;

	*buf = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t k;

		if (*len == cap) {
			char *grown;

			if (cap > max) {
				r = -EFBIG;
				break;
			}
			cap = cap ? cap * 2 : 65536;
			grown = realloc(*buf, cap);
			if (!grown) {
				r = -ENOMEM;
				break;
			}
			*buf = grown;
		}
		k = read(fd, *buf + *len, cap - *len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r = k < 0 ? -errno : 0;
			break;
		}
		*len += (size_t)k;
	}
	if (!r && *len > max)
		r = -EFBIG;
	if (fd != STDIN_FILENO)
		close(fd);
	if (r) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	return r;
}

int fsio_zero_range(int fd, uint64_t off, uint64_t len)
{
	static const uint8_t zeros[65536];
	int r = 0;

	if (!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		       (off_t)off, (off_t)len))
		return 0;
	while (len && !r) {
		size_t k = len < sizeof(zeros) ? (size_t)len : sizeof(zeros);

		r = fsio_pwrite_all(fd, zeros, k, off);
		off += k;
		len -= k;
	}
	return r;
}
