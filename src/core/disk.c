// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#include "disk.h"
#include "gen.h"
#include "sysfs.h"
#include "units.h"
#include "banned.h"

/* Not all of these are in every linux/magic.h. */
#ifndef CIFS_SUPER_MAGIC
#define CIFS_SUPER_MAGIC 0xFF534D42
#endif
#ifndef SMB2_SUPER_MAGIC
#define SMB2_SUPER_MAGIC 0xFE534D42
#endif
#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

static const struct {
	const char *name;
	const char *desc;
} kinds[] = {
	[DISK_UNKNOWN] = { "block", "block device" },
	[DISK_NVME] = { "nvme", "NVMe SSD" },
	[DISK_MMC] = { "mmc", "SD/MMC card" },
	[DISK_USB] = { "usb", "USB storage" },
	[DISK_HDD] = { "hdd", "rotational disk" },
	[DISK_SSD] = { "ssd", "SSD" },
	[DISK_VIRTIO] = { "virtio", "virtual disk" },
	[DISK_LOOP] = { "loop", "loop device" },
	[DISK_TMPFS] = { "tmpfs", "memory" },
	[DISK_NFS] = { "nfs", "NFS network file system" },
	[DISK_CIFS] = { "cifs", "SMB/CIFS network file system" },
	[DISK_FUSE] = { "fuse", "FUSE file system" },
	[DISK_NODEV] = { "nodev", "no block device" },
};

const char *disk_kind_name(enum disk_kind kind)
{
	if ((unsigned int)kind >= sizeof(kinds) / sizeof(kinds[0]))
		return "unknown";
	return kinds[kind].name;
}

const char *disk_kind_desc(enum disk_kind kind)
{
	if ((unsigned int)kind >= sizeof(kinds) / sizeof(kinds[0]))
		return "unknown";
	return kinds[kind].desc;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

int disk_classify_block(const char *sysroot, unsigned int major,
			unsigned int minor, struct disk_info *out)
{
	char link[512], dev[PATH_MAX], path[PATH_MAX + 64], buf[PATH_MAX];
	enum disk_kind kind;
	char *slash;

	snprintf(link, sizeof(link), "%s/dev/block/%u:%u", sysroot, major,
		 minor);
	if (!realpath(link, dev))
		return -ENOENT;
	copy_str(out->part, sizeof(out->part), base_name(dev));
	/* A partition's directory sits inside its whole disk's. */
	snprintf(path, sizeof(path), "%s/partition", dev);
	if (sysfs_exists(path)) {
		slash = strrchr(dev, '/');
		if (slash && slash != dev)
			*slash = '\0';
	}
	copy_str(out->disk, sizeof(out->disk), base_name(dev));
	out->backing[0] = '\0';

	if (!strncmp(out->disk, "loop", 4)) {
		kind = DISK_LOOP;
		snprintf(path, sizeof(path), "%s/loop/backing_file", dev);
		if (!sysfs_read_small(path, buf, sizeof(buf)))
			copy_str(out->backing, sizeof(out->backing), buf);
	} else if (!strncmp(out->disk, "nvme", 4)) {
		kind = DISK_NVME;
	} else if (!strncmp(out->disk, "mmcblk", 6)) {
		kind = DISK_MMC;
	} else if (strstr(dev, "/usb")) {
		kind = DISK_USB;
	} else if (strstr(dev, "/virtio")) {
		kind = DISK_VIRTIO;
	} else {
		kind = DISK_UNKNOWN;
		snprintf(path, sizeof(path), "%s/queue/rotational", dev);
		if (!sysfs_read_small(path, buf, sizeof(buf))) {
			if (!strcmp(buf, "1"))
				kind = DISK_HDD;
			else if (!strcmp(buf, "0"))
				kind = DISK_SSD;
		}
	}
	out->kind = kind;
	return 0;
}

enum disk_kind disk_kind_from_fstype(const char *fstype)
{
	if (!strcmp(fstype, "tmpfs") || !strcmp(fstype, "ramfs"))
		return DISK_TMPFS;
	if (!strncmp(fstype, "nfs", 3))
		return DISK_NFS;
	if (!strcmp(fstype, "cifs") || !strncmp(fstype, "smb", 3))
		return DISK_CIFS;
	if (!strncmp(fstype, "fuse", 4))
		return DISK_FUSE;
	return DISK_UNKNOWN;
}

/* Undo mountinfo's octal escapes ("\040" for a space) in place. */
static void unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* Is mount point mnt a prefix of path, at a component boundary? */
static size_t mount_prefix(const char *mnt, const char *path)
{
	size_t n = strlen(mnt);

	if (!strcmp(mnt, "/"))
		return 1;
	if (strncmp(mnt, path, n) || (path[n] != '/' && path[n] != '\0'))
		return 0;
	return n;
}

int disk_mountinfo_lookup(const char *mountinfo, unsigned int major,
			  unsigned int minor, const char *abspath,
			  struct disk_info *out)
{
	char *line = NULL, want[32];
	size_t cap = 0, best = 0;
	bool found = false;
	int r = 0;
	FILE *f;

	f = fopen(mountinfo, "re");
	if (!f)
		return -errno;
	snprintf(want, sizeof(want), "%u:%u", major, minor);
	/* getline: overlayfs lines with long lowerdir= run past any fixed
	 * buffer, and a cut line's tail would be parsed as a line of its own. */
	errno = 0;
	while (getline(&line, &cap, f) >= 0) {
		/* id parent maj:min root mnt opts [optional...] - type src sopts */
		char *fields[6], *sep, *save = NULL, *tok, *tail;
		int n = 0;
		size_t score;

		sep = strstr(line, " - ");
		if (!sep)
			continue;
		*sep = '\0';
		tail = sep + 3;
		for (tok = strtok_r(line, " ", &save); tok && n < 6;
		     tok = strtok_r(NULL, " ", &save))
			fields[n++] = tok;
		if (n < 5 || strcmp(fields[2], want))
			continue;
		unescape(fields[4]);
		score = abspath ? mount_prefix(fields[4], abspath) : 1;
		if (abspath && !score)
			continue;
		if (found && score <= best)
			continue;
		found = true;
		best = score;
		copy_str(out->mnt, sizeof(out->mnt), fields[4]);
		save = NULL;
		tok = strtok_r(tail, " \n", &save);
		copy_str(out->fstype, sizeof(out->fstype), tok ? tok : "");
		tok = tok ? strtok_r(NULL, " \n", &save) : NULL;
		if (tok)
			unescape(tok);
		copy_str(out->source, sizeof(out->source), tok ? tok : "");
	}
	/* getline sets ENOMEM without the stream's error flag */
	if (ferror(f) || errno == ENOMEM)
		r = errno ? -errno : -EIO;
	free(line);
	fclose(f);
	if (found)
		return 0;
	return r ? r : -ENOENT;
}

static enum disk_kind kind_from_magic(long type)
{
	switch ((unsigned long)type & 0xffffffffu) {
	case TMPFS_MAGIC:
	case RAMFS_MAGIC: return DISK_TMPFS;
	case NFS_SUPER_MAGIC: return DISK_NFS;
	case CIFS_SUPER_MAGIC:
	case SMB2_SUPER_MAGIC: return DISK_CIFS;
	case FUSE_SUPER_MAGIC: return DISK_FUSE;
	default: return DISK_UNKNOWN;
	}
}

int disk_identify(const char *path, const char *sysroot, const char *mountinfo,
		  struct disk_info *out, struct lr_err *err)
{
	struct disk_info info;
	char abspath[PATH_MAX];
	struct statfs sfs;
	struct stat st, src;
	enum disk_kind kind;

	memset(&info, 0, sizeof(info));
	if (stat(path, &st))
		return lr_err_setc(err, -errno, "stat %s", path);
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return lr_err_set(err, -EINVAL,
				  "%s is not a directory or a regular file",
				  path);
	/* A file is read with O_NOFOLLOW: say why here, before any work. */
	if (S_ISREG(st.st_mode) && !lstat(path, &src) && S_ISLNK(src.st_mode))
		return lr_err_set(err, -ELOOP,
				  "%s is a symbolic link (not followed: give "
				  "the file itself)",
				  path);
	info.is_file = S_ISREG(st.st_mode);
	if (info.is_file)
		info.file_size = (uint64_t)st.st_size;
	if (statfs(path, &sfs))
		return lr_err_setc(err, -errno, "statfs %s", path);
	if (!realpath(path, abspath))
		return lr_err_setc(err, -errno, "realpath %s", path);
	info.major = major(st.st_dev);
	info.minor = minor(st.st_dev);
	/* The mount is context only: a missing /proc is not an error. */
	disk_mountinfo_lookup(mountinfo, info.major, info.minor, abspath,
			      &info);

	kind = kind_from_magic(sfs.f_type);
	if (kind == DISK_UNKNOWN && info.fstype[0])
		kind = disk_kind_from_fstype(info.fstype);
	if (kind != DISK_UNKNOWN) {
		info.kind = kind;
		goto out;
	}
	if (!disk_classify_block(sysroot, info.major, info.minor, &info))
		goto out;
	/*
	 * An anonymous device (btrfs subvolume, overlayfs, ...): the mount
	 * source may still name the block device.
	 */
	if (!strncmp(info.source, "/dev/", 5) && !stat(info.source, &src) &&
	    S_ISBLK(src.st_mode) &&
	    !disk_classify_block(sysroot, major(src.st_rdev),
				 minor(src.st_rdev), &info))
		goto out;
	info.kind = DISK_NODEV;
out:
	*out = info;
	return 0;
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Each block carries its index in its first 8 bytes, so that a block the
 * device (or a dedup layer) mixed up is caught, and no two are equal. */
static void stamp(uint8_t *buf, uint64_t i)
{
	memcpy(buf, &i, sizeof(i));
}

static int write_block(int fd, const uint8_t *buf, uint32_t bs, off_t off)
{
	ssize_t n;
	uint32_t done = 0;

	while (done < bs) {
		n = pwrite(fd, buf + done, bs - done, off + done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (uint32_t)n;
	}
	return 0;
}

/*
 * Read into buf from off until need bytes (need <= len) are in or the file
 * ends; *got says how many came. Each call asks for all of the rest of len,
 * so that under O_DIRECT a final short block goes out with the aligned
 * length and comes back short at the end of the file.
 */
static int read_upto(int fd, uint8_t *buf, uint32_t len, uint32_t need,
		     off_t off, uint32_t *got)
{
	ssize_t n;
	uint32_t done = 0;

	while (done < need) {
		n = pread(fd, buf + done, len - done, off + done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (uint32_t)n;
	}
	*got = done;
	return 0;
}

static int read_block(int fd, uint8_t *buf, uint32_t bs, off_t off)
{
	uint32_t got = 0;
	int r = read_upto(fd, buf, bs, bs, off, &got);

	if (r)
		return r;
	return got < bs ? -EIO : 0; /* the file is shorter than written */
}

static int set_direct(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? fl | O_DIRECT : fl & ~O_DIRECT;
	return fcntl(fd, F_SETFL, fl) ? -errno : 0;
}

/* One run's state, for its steps. */
struct disk_job {
	const char *name;
	int fd;
	uint8_t *buf;
	uint32_t bs;
	uint64_t blocks;
	const volatile sig_atomic_t *stop;
	void (*progress)(enum disk_phase phase, uint64_t done, void *arg);
	void *arg;
	struct disk_result res;
};

/* A size of whole blocks, and the room for it in dir. */
static int check_room(const char *dir, uint64_t size, uint32_t bs,
		      struct lr_err *err)
{
	struct statvfs vfs;

	if (bs < DISK_MIN_BS || bs > DISK_MAX_BS || !size || size % bs)
		return lr_err_set(err, -EINVAL,
				  "size %llu is not a multiple of block size "
				  "%u",
				  (unsigned long long)size, bs);
	if (statvfs(dir, &vfs))
		return lr_err_setc(err, -errno, "statvfs %s", dir);
	if ((uint64_t)vfs.f_bavail * vfs.f_frsize < size) {
		char have[32], need[32];

		units_fmt_iec(have, sizeof(have),
			      (double)vfs.f_bavail * vfs.f_frsize);
		units_fmt_iec(need, sizeof(need), (double)size);
		return lr_err_set(err, -ENOSPC,
				  "%s has %s free, the test needs %s (-s "
				  "sets less)",
				  dir, have, need);
	}
	return 0;
}

/* An aligned block of test data. */
static int make_block(uint8_t **buf, uint32_t bs, struct lr_err *err)
{
	struct gen *g;
	int r;

	r = posix_memalign((void **)buf, 4096, bs);
	if (r)
		return lr_err_setc(err, -r, "block buffer");
	r = gen_new(NULL, 0, &g);
	if (r) {
		free(*buf);
		return lr_err_setc(err, r, "test data");
	}
	gen_fill(g, *buf, bs);
	gen_free(g);
	return 0;
}

/* This thread's CPU seconds so far. */
static double thread_cpu_sec(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Every block written, each stamped with its index, then fdatasync:
 * with direct I/O too, block allocation is only durable after it. */
static int write_phase(struct disk_job *j, struct lr_err *err)
{
	double t0 = now_sec(), c0 = thread_cpu_sec();
	uint64_t i;
	int r;

	for (i = 0; i < j->blocks; i++) {
		if (*j->stop)
			return lr_err_set(err, -EINTR, "interrupted");
		stamp(j->buf, i);
		r = write_block(j->fd, j->buf, j->bs, (off_t)(i * j->bs));
		if (r == -EINVAL && j->res.write_direct && i == 0) {
			/* direct I/O accepted at open, refused at write */
			j->res.write_direct = false;
			r = set_direct(j->fd, false);
			if (!r)
				r = write_block(j->fd, j->buf, j->bs, 0);
		}
		if (r)
			return lr_err_setc(err, r, "write %s", j->name);
		if (j->progress)
			j->progress(DISK_PHASE_WRITE, (i + 1) * j->bs, j->arg);
	}
	if (fdatasync(j->fd))
		return lr_err_setc(err, -errno, "fdatasync %s", j->name);
	j->res.write_cpu_sec = thread_cpu_sec() - c0;
	j->res.write_sec = now_sec() - t0;
	return 0;
}

/* Every block read back and its stamp checked; without direct I/O the
 * (clean) pages are dropped first, so that the disk is read. */
static int read_phase(struct disk_job *j, struct lr_err *err)
{
	uint64_t i, got;
	double t0;
	int r;

	j->res.read_direct = j->res.write_direct;
	if (!j->res.read_direct) {
		r = posix_fadvise(j->fd, 0, 0, POSIX_FADV_DONTNEED);
		if (r)
			return lr_err_setc(err, -r, "posix_fadvise %s",
					   j->name);
	}
	t0 = now_sec();
	for (i = 0; i < j->blocks; i++) {
		if (*j->stop)
			return lr_err_set(err, -EINTR, "interrupted");
		r = read_block(j->fd, j->buf, j->bs, (off_t)(i * j->bs));
		if (r)
			return lr_err_setc(err, r, "read %s", j->name);
		memcpy(&got, j->buf, sizeof(got));
		if (got != i)
			return lr_err_set(err, -EIO,
					  "read %s: block %llu came back as "
					  "block %llu",
					  j->name, (unsigned long long)i,
					  (unsigned long long)got);
		if (j->progress)
			j->progress(DISK_PHASE_READ, (i + 1) * j->bs, j->arg);
	}
	j->res.read_sec = now_sec() - t0;
	/* a signal during the last block still counts */
	if (*j->stop)
		return lr_err_set(err, -EINTR, "interrupted");
	return 0;
}

/* disk_run and disk_run_buffered: direct I/O tried or never. */
static int run_job(const char *dir, uint64_t size, uint32_t bs, bool direct,
		   const volatile sig_atomic_t *stop,
		   void (*progress)(enum disk_phase phase, uint64_t done,
				    void *arg),
		   void *arg, struct disk_result *out, struct lr_err *err)
{
	struct disk_job j = {
		.bs = bs, .stop = stop, .progress = progress, .arg = arg
	};
	char name[PATH_MAX];
	int r;

	r = check_room(dir, size, bs, err);
	if (!r)
		r = make_block(&j.buf, bs, err);
	if (r)
		return r;
	j.blocks = size / bs;
	j.name = name;
	snprintf(name, sizeof(name), "%s/.linerate-disk-%ld.tmp", dir,
		 (long)getpid());
	j.fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		    0600);
	if (j.fd < 0) {
		r = lr_err_setc(err, -errno, "create %s", name);
		free(j.buf);
		return r;
	}
	/* fcntl refuses O_DIRECT where the file system has no direct I/O. */
	j.res.write_direct = direct && !set_direct(j.fd, true);
	r = write_phase(&j, err);
	if (!r)
		r = read_phase(&j, err);
	close(j.fd);
	if (unlink(name) && !r)
		r = lr_err_setc(err, -errno, "remove %s", name);
	free(j.buf);
	if (r)
		return r;
	j.res.bytes = size;
	*out = j.res;
	return 0;
}

int disk_run(const char *dir, uint64_t size, uint32_t bs,
	     const volatile sig_atomic_t *stop,
	     void (*progress)(enum disk_phase phase, uint64_t done, void *arg),
	     void *arg, struct disk_result *out, struct lr_err *err)
{
	return run_job(dir, size, bs, true, stop, progress, arg, out, err);
}

int disk_run_buffered(const char *dir, uint64_t size, uint32_t bs,
		      const volatile sig_atomic_t *stop,
		      void (*progress)(enum disk_phase phase, uint64_t done,
				       void *arg),
		      void *arg, struct disk_result *out, struct lr_err *err)
{
	return run_job(dir, size, bs, false, stop, progress, arg, out, err);
}

/* path opened for reading, a regular file, not through a symlink; *total
 * the bytes to read (at most size_limit when it is set). The fd, or an
 * error with err set. */
static int open_source(const char *path, uint64_t size_limit, uint64_t *total,
		       struct lr_err *err)
{
	struct stat st;
	int fd, fl, r;

	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	fd = open(path,
		  O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP)
		return lr_err_set(err, -ELOOP,
				  "%s is a symbolic link (not followed: give "
				  "the file itself)",
				  path);
	if (fd < 0)
		return lr_err_setc(err, -errno, "open %s", path);
	if (fstat(fd, &st))
		r = lr_err_setc(err, -errno, "stat %s", path);
	else if (!S_ISREG(st.st_mode))
		r = lr_err_set(err, -EINVAL, "%s is not a regular file", path);
	else if (!st.st_size)
		r = lr_err_set(err, -ENODATA, "%s is empty: nothing to read",
			       path);
	else if ((fl = fcntl(fd, F_GETFL)) < 0 ||
		 fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))
		r = lr_err_setc(err, -errno, "fcntl %s", path);
	else
		r = 0;
	if (r) {
		close(fd);
		return r;
	}
	*total = (uint64_t)st.st_size;
	if (size_limit && size_limit < *total)
		*total = size_limit;
	return fd;
}

/* The next need bytes at done into j->buf; direct I/O refused at read
 * (or a short direct read, FUSE and NFS, whose rest would be unaligned)
 * goes on through the page cache, and *t0 restarts if nothing was read
 * yet. */
static int read_next(struct disk_job *j, uint64_t done, uint32_t need,
		     uint32_t *got, double *t0)
{
	int r;

	/* Under O_DIRECT the length stays bs (aligned) for a short last
	 * block; the read stops at the end of the file. */
	r = read_upto(j->fd, j->buf, j->res.read_direct ? j->bs : need, need,
		      (off_t)done, got);
	if (r != -EINVAL || !j->res.read_direct)
		return r;
	j->res.read_direct = false;
	r = set_direct(j->fd, false);
	if (!r)
		r = -posix_fadvise(j->fd, 0, 0, POSIX_FADV_DONTNEED);
	if (done == 0)
		*t0 = now_sec();
	if (!r)
		r = read_upto(j->fd, j->buf, need, need, (off_t)done, got);
	return r;
}

/* The file read once, block by block, timed. */
static int read_file_phase(struct disk_job *j, uint64_t total,
			   struct lr_err *err)
{
	double t0 = now_sec();
	uint64_t done = 0;
	int r;

	while (done < total) {
		uint64_t left = total - done;
		uint32_t need = left < j->bs ? (uint32_t)left : j->bs, got = 0;

		if (*j->stop)
			return lr_err_set(err, -EINTR, "interrupted");
		r = read_next(j, done, need, &got, &t0);
		if (r)
			return lr_err_setc(err, r, "read %s", j->name);
		if (got < need)
			return lr_err_set(err, -EIO,
					  "read %s: the file ended at %llu "
					  "bytes, %llu expected (truncated "
					  "while read?)",
					  j->name,
					  (unsigned long long)(done + got),
					  (unsigned long long)total);
		done += need;
		if (j->progress)
			j->progress(DISK_PHASE_READ, done, j->arg);
	}
	j->res.read_sec = now_sec() - t0;
	/* a signal during the last block still counts */
	if (*j->stop)
		return lr_err_set(err, -EINTR, "interrupted");
	return 0;
}

/* disk_read_file and disk_read_file_buffered: direct I/O tried or never */
static int read_file_job(const char *path, uint64_t size_limit, uint32_t bs,
			 bool direct, const volatile sig_atomic_t *stop,
			 void (*progress)(enum disk_phase phase, uint64_t done,
					  void *arg),
			 void *arg, struct disk_result *out, struct lr_err *err)
{
	struct disk_job j = { .name = path,
			      .bs = bs,
			      .stop = stop,
			      .progress = progress,
			      .arg = arg };
	uint64_t total = 0;
	int r;

	if (bs < DISK_MIN_BS || bs > DISK_MAX_BS || bs % DISK_MIN_BS)
		return lr_err_set(err, -EINVAL, "bad block size %u", bs);
	j.fd = open_source(path, size_limit, &total, err);
	if (j.fd < 0)
		return j.fd;
	r = posix_memalign((void **)&j.buf, 4096, bs);
	if (r) {
		close(j.fd);
		return lr_err_setc(err, -r, "block buffer");
	}
	/* fcntl refuses O_DIRECT where the file system has no direct I/O;
	 * without it only clean pages go: nothing is written to make more
	 * so. */
	j.res.read_direct = direct && !set_direct(j.fd, true);
	r = j.res.read_direct ? 0
			      : posix_fadvise(j.fd, 0, 0, POSIX_FADV_DONTNEED);
	if (r)
		r = lr_err_setc(err, -r, "posix_fadvise %s", path);
	if (!r)
		r = read_file_phase(&j, total, err);
	free(j.buf);
	close(j.fd);
	if (r)
		return r;
	j.res.bytes = total;
	j.res.read_only = true;
	*out = j.res;
	return 0;
}

int disk_read_file(const char *path, uint64_t size_limit, uint32_t bs,
		   const volatile sig_atomic_t *stop,
		   void (*progress)(enum disk_phase phase, uint64_t done,
				    void *arg),
		   void *arg, struct disk_result *out, struct lr_err *err)
{
	return read_file_job(path, size_limit, bs, true, stop, progress, arg,
			     out, err);
}

int disk_read_file_buffered(const char *path, uint64_t size_limit, uint32_t bs,
			    const volatile sig_atomic_t *stop,
			    void (*progress)(enum disk_phase phase,
					     uint64_t done, void *arg),
			    void *arg, struct disk_result *out,
			    struct lr_err *err)
{
	return read_file_job(path, size_limit, bs, false, stop, progress, arg,
			     out, err);
}
