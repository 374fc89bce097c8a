/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_DISK_H
#define LINERATE_DISK_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"

/*
 * Sequential disk throughput of the file system holding a directory, or
 * of reading one existing file, and what device that file system lives on. Silent: no printing, no exiting.
 * Functions that act return 0 or a negative errno.
 */

#define DISK_MIN_BS   4096u
#define DISK_MAX_BS   (64u << 20)
#define DISK_MAX_SIZE (1ull << 40) /* 1T */

enum disk_kind {
	DISK_UNKNOWN = 0, /* a block device we cannot tell more about */
	DISK_NVME,
	DISK_MMC, /* SD card or eMMC */
	DISK_USB,
	DISK_HDD,    /* queue/rotational 1 */
	DISK_SSD,    /* queue/rotational 0 */
	DISK_VIRTIO, /* a virtual machine's disk */
	DISK_LOOP,
	DISK_TMPFS,
	DISK_NFS,
	DISK_CIFS, /* CIFS or SMB2/3 */
	DISK_FUSE,
	DISK_NODEV, /* no block device and no kind we know */
};

struct disk_info {
	enum disk_kind kind;
	unsigned int major, minor; /* of st_dev */
	char disk[64];		   /* whole disk name ("nvme0n1"), or "" */
	char part[64];		   /* block device of st_dev ("nvme0n1p2") */
	char backing[512];	   /* a loop device's backing file, or "" */
	char fstype[64];	   /* from mountinfo ("ext4"), or "" */
	char mnt[512];		   /* mount point, or "" */
	char source[512];	   /* mount source ("/dev/sda1", "srv:/x") */
	bool is_file;		   /* the path is a regular file, not a dir */
	uint64_t file_size;	   /* its size in bytes when is_file */
};

/* A constant short name ("nvme", "tmpfs") and description ("NVMe SSD"). */
const char *disk_kind_name(enum disk_kind kind);
const char *disk_kind_desc(enum disk_kind kind);

/*
 * Classify the block device major:minor from the sysfs tree under sysroot
 * ("/sys" on a live system): follows sysroot/dev/block/MAJ:MIN to the
 * whole disk when it is a partition and fills kind, disk, part and
 * backing of *out (other fields untouched). 0, or -ENOENT when the
 * device is not in the tree.
 */
int disk_classify_block(const char *sysroot, unsigned int major,
			unsigned int minor, struct disk_info *out);

/* The kind a file system type name implies ("tmpfs", "nfs4", "cifs",
 * "smb3", "fuse.sshfs"), or DISK_UNKNOWN for a disk-backed one. */
enum disk_kind disk_kind_from_fstype(const char *fstype);

/*
 * Find the mount of major:minor in a /proc/self/mountinfo-format file;
 * of several (bind mounts), the one whose mount point is the longest
 * prefix of the absolute path abspath. Fills fstype, mnt and source.
 * 0, -ENOENT (no such mount) or a negative errno of reading the file.
 */
int disk_mountinfo_lookup(const char *mountinfo, unsigned int major,
			  unsigned int minor, const char *abspath,
			  struct disk_info *out);

/*
 * Everything about the file system holding path, a directory or a regular
 * file: statfs for tmpfs and network file systems, mountinfo for the type
 * and mount point, sysfs for the device. *out is written only on success;
 * 0 or a negative errno (with err filled) when path cannot be examined:
 * -EINVAL when it is neither a directory nor a regular file (a FIFO, a
 * device), -ELOOP when it is a symbolic link to a file. A device that
 * cannot be classified is not an error: its kind is DISK_UNKNOWN or
 * DISK_NODEV.
 */
int disk_identify(const char *path, const char *sysroot, const char *mountinfo,
		  struct disk_info *out, struct lr_err *err);

enum disk_phase { DISK_PHASE_WRITE, DISK_PHASE_READ };

struct disk_result {
	uint64_t bytes;	      /* written, and read back */
	double write_sec;     /* includes the final fdatasync */
	double write_cpu_sec; /* this thread's CPU time in it (the copies) */
	double read_sec;
	bool write_direct; /* O_DIRECT, else buffered + fdatasync */
	bool read_direct;  /* O_DIRECT, else after POSIX_FADV_DONTNEED */
	bool read_only;	   /* disk_read_file: no write, write_* unset */
};

/*
 * Write size bytes (a multiple of bs) to a new file dir/.linerate-disk-PID.tmp
 * (created with O_EXCL), fdatasync it, then read it back from the device,
 * bs bytes per call, and remove the file, whatever happens. O_DIRECT when
 * the file system takes it, else buffered I/O with fdatasync inside the
 * timed write and the page cache dropped before the read. The blocks read
 * are checked against what was written.
 *
 * progress (if not NULL) is called after each block with the phase and the
 * bytes done in it. When *stop becomes nonzero (a signal handler sets it),
 * the run stops after the current block and returns -EINTR. *out is
 * written only on success. 0, -EINTR, -ENOSPC (less free space than size)
 * or the negative errno of the failing call, with err filled.
 */
int disk_run(const char *dir, uint64_t size, uint32_t bs,
	     const volatile sig_atomic_t *stop,
	     void (*progress)(enum disk_phase phase, uint64_t done, void *arg),
	     void *arg, struct disk_result *out, struct lr_err *err);

/*
 * disk_run the way a transfer uses the disk: never direct I/O. The write
 * goes through the page cache in bs-byte writes and is timed up to the
 * end of its fdatasync, as a receiver writes a file (chunk-size writes,
 * synced before its rename); the read drops the pages first and reads
 * through the page cache, as a sender reads a file not in memory.
 */
int disk_run_buffered(const char *dir, uint64_t size, uint32_t bs,
		      const volatile sig_atomic_t *stop,
		      void (*progress)(enum disk_phase phase, uint64_t done,
				       void *arg),
		      void *arg, struct disk_result *out, struct lr_err *err);

/*
 * Read the existing regular file path sequentially, bs bytes per call,
 * from offset 0 up to size_limit bytes (0: the whole file; a file shorter
 * than the limit is read whole), the last block possibly short. Nothing is
 * written: the file is opened O_RDONLY | O_NOFOLLOW (a symbolic link is
 * refused with -ELOOP, anything but a regular file with -EINVAL, an empty
 * file with -ENODATA). O_DIRECT when the file system takes it, else the
 * file's clean pages are dropped (POSIX_FADV_DONTNEED) first.
 *
 * progress and stop as for disk_run, with phase DISK_PHASE_READ. *out
 * (read_only set, bytes the bytes read) is written only on success. 0,
 * -EINTR or the negative errno of the failing call, with err filled.
 */
int disk_read_file(const char *path, uint64_t size_limit, uint32_t bs,
		   const volatile sig_atomic_t *stop,
		   void (*progress)(enum disk_phase phase, uint64_t done,
				    void *arg),
		   void *arg, struct disk_result *out, struct lr_err *err);

/* disk_read_file as a sender reads a file not in memory: its pages
 * dropped, then read through the page cache, never O_DIRECT. */
int disk_read_file_buffered(const char *path, uint64_t size_limit, uint32_t bs,
			    const volatile sig_atomic_t *stop,
			    void (*progress)(enum disk_phase phase,
					     uint64_t done, void *arg),
			    void *arg, struct disk_result *out,
			    struct lr_err *err);

#endif
