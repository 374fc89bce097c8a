// SPDX-License-Identifier: MIT
/*
 * Unit tests of disk.[ch]: device classification from sample sysfs trees
 * and mountinfo files built in a temporary directory, and one small real
 * write/read run in that directory.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "disk.h"

struct tree {
	char root[PATH_MAX];
};

static void mkdir_p(const char *root, const char *rel)
{
	char path[PATH_MAX + 256];
	size_t n;
	char *p;

	n = (size_t)snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_true(n < sizeof(path));
	for (p = path + strlen(root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	mkdir(path, 0755);
}

static void put_file(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX + 256], dir[512];
	const char *slash = strrchr(rel, '/');
	FILE *f;

	if (slash) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
		mkdir_p(root, dir);
	}
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void put_link(const char *root, const char *rel, const char *target)
{
	char path[PATH_MAX + 256];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

/* A block device dir under devices/ with its dev/block/MAJ:MIN link. */
static void put_block(const char *root, const char *devdir, const char *majmin)
{
	char rel[512], target[512];

	mkdir_p(root, devdir);
	mkdir_p(root, "dev/block");
	snprintf(rel, sizeof(rel), "dev/block/%s", majmin);
	snprintf(target, sizeof(target), "../../%s", devdir);
	put_link(root, rel, target);
}

static int tree_setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	const char *tmp = getenv("TMPDIR");
	const char *r;

	if (!t)
		return -1;
	snprintf(t->root, sizeof(t->root), "%s/linerate-disk-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(t->root)) {
		free(t);
		return -1;
	}
	r = t->root;
	/* NVMe whole disk and partition */
	put_block(r, "devices/pci0000:00/0000:00:1d.0/nvme/nvme0/nvme0n1",
		  "259:0");
	put_block(
		r,
		"devices/pci0000:00/0000:00:1d.0/nvme/nvme0/nvme0n1/nvme0n1p2",
		"259:2");
	put_file(r,
		 "devices/pci0000:00/0000:00:1d.0/nvme/nvme0/nvme0n1/nvme0n1p2/"
		 "partition",
		 "2\n");
	put_file(r,
		 "devices/pci0000:00/0000:00:1d.0/nvme/nvme0/nvme0n1/queue/"
		 "rotational",
		 "0\n");
	/* SD card partition */
	put_block(r,
		  "devices/platform/fe320000.mmc/mmc_host/mmc1/mmc1:59b4/"
		  "block/mmcblk1/mmcblk1p1",
		  "179:1");
	put_file(r,
		 "devices/platform/fe320000.mmc/mmc_host/mmc1/mmc1:59b4/"
		 "block/mmcblk1/mmcblk1p1/partition",
		 "1\n");
	/* USB stick: rotational 1 (as many report), but USB wins */
	put_block(r,
		  "devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/"
		  "target6:0:0/6:0:0:0/block/sdb/sdb1",
		  "8:17");
	put_file(r,
		 "devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/"
		 "target6:0:0/6:0:0:0/block/sdb/sdb1/partition",
		 "1\n");
	put_file(r,
		 "devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/"
		 "target6:0:0/6:0:0:0/block/sdb/queue/rotational",
		 "1\n");
	/* SATA hard disk, whole-disk file system */
	put_block(r,
		  "devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/"
		  "0:0:0:0/block/sda",
		  "8:0");
	put_file(r,
		 "devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/"
		 "0:0:0:0/block/sda/queue/rotational",
		 "1\n");
	/* SATA SSD partition */
	put_block(r,
		  "devices/pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/"
		  "1:0:0:0/block/sdc/sdc3",
		  "8:35");
	put_file(r,
		 "devices/pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/"
		 "1:0:0:0/block/sdc/sdc3/partition",
		 "3\n");
	put_file(r,
		 "devices/pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/"
		 "1:0:0:0/block/sdc/queue/rotational",
		 "0\n");
	/* loop device with a backing file */
	put_block(r, "devices/virtual/block/loop3", "7:3");
	mkdir_p(r, "devices/virtual/block/loop3/loop");
	put_file(r, "devices/virtual/block/loop3/loop/backing_file",
		 "/var/lib/images/disk with space.img\n");
	put_file(r, "devices/virtual/block/loop3/queue/rotational", "1\n");

	put_file(r, "mountinfo",
		 "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 "
		 "rw\n"
		 "30 22 0:25 / /dev/shm rw shared:3 - tmpfs tmpfs rw\n"
		 "40 22 259:2 /srv /mnt/my\\040data rw - ext4 "
		 "/dev/nvme0n1p2 rw\n"
		 "41 22 0:50 / /net/home rw - nfs4 srv:/home rw,vers=4.2\n");
	*state = t;
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int tree_teardown(void **state)
{
	struct tree *t = *state;

	nftw(t->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(t);
	return 0;
}

static void classify_is(void **state, unsigned int maj, unsigned int min,
			enum disk_kind kind, const char *disk, const char *part)
{
	struct tree *t = *state;
	struct disk_info d;

	memset(&d, 0, sizeof(d));
	assert_int_equal(disk_classify_block(t->root, maj, min, &d), 0);
	assert_string_equal(disk_kind_name(d.kind), disk_kind_name(kind));
	assert_string_equal(d.disk, disk);
	assert_string_equal(d.part, part);
}

static void test_nvme_partition(void **state)
{
	classify_is(state, 259, 2, DISK_NVME, "nvme0n1", "nvme0n1p2");
	classify_is(state, 259, 0, DISK_NVME, "nvme0n1", "nvme0n1");
}

static void test_mmc(void **state)
{
	classify_is(state, 179, 1, DISK_MMC, "mmcblk1", "mmcblk1p1");
}

static void test_usb(void **state)
{
	classify_is(state, 8, 17, DISK_USB, "sdb", "sdb1");
}

static void test_rotational(void **state)
{
	classify_is(state, 8, 0, DISK_HDD, "sda", "sda");
}

static void test_ssd(void **state)
{
	classify_is(state, 8, 35, DISK_SSD, "sdc", "sdc3");
}

static void test_loop(void **state)
{
	struct tree *t = *state;
	struct disk_info d;

	memset(&d, 0, sizeof(d));
	classify_is(state, 7, 3, DISK_LOOP, "loop3", "loop3");
	assert_int_equal(disk_classify_block(t->root, 7, 3, &d), 0);
	assert_string_equal(d.backing, "/var/lib/images/disk with space.img");
}

static void test_missing(void **state)
{
	struct tree *t = *state;
	struct disk_info d;

	memset(&d, 0, sizeof(d));
	assert_int_equal(disk_classify_block(t->root, 8, 99, &d), -ENOENT);
}

static void test_fstype(void **state)
{
	(void)state;
	assert_int_equal(disk_kind_from_fstype("tmpfs"), DISK_TMPFS);
	assert_int_equal(disk_kind_from_fstype("nfs4"), DISK_NFS);
	assert_int_equal(disk_kind_from_fstype("cifs"), DISK_CIFS);
	assert_int_equal(disk_kind_from_fstype("smb3"), DISK_CIFS);
	assert_int_equal(disk_kind_from_fstype("fuse.sshfs"), DISK_FUSE);
	assert_int_equal(disk_kind_from_fstype("ext4"), DISK_UNKNOWN);
}

static void test_mountinfo(void **state)
{
	struct tree *t = *state;
	char mi[PATH_MAX + 16];
	struct disk_info d;

	snprintf(mi, sizeof(mi), "%s/mountinfo", t->root);
	memset(&d, 0, sizeof(d));
	assert_int_equal(disk_mountinfo_lookup(mi, 259, 2, "/home/u", &d), 0);
	assert_string_equal(d.mnt, "/");
	assert_string_equal(d.fstype, "ext4");
	assert_string_equal(d.source, "/dev/nvme0n1p2");
	/* the bind mount is the longer prefix; its name has an escape */
	assert_int_equal(
		disk_mountinfo_lookup(mi, 259, 2, "/mnt/my data/x", &d), 0);
	assert_string_equal(d.mnt, "/mnt/my data");
	/* "/mnt/my dataX" is not under "/mnt/my data" */
	assert_int_equal(disk_mountinfo_lookup(mi, 259, 2, "/mnt/my dataX", &d),
			 0);
	assert_string_equal(d.mnt, "/");
	assert_int_equal(disk_mountinfo_lookup(mi, 0, 50, "/net/home/a", &d),
			 0);
	assert_string_equal(d.fstype, "nfs4");
	assert_string_equal(d.source, "srv:/home");
	assert_int_equal(disk_mountinfo_lookup(mi, 9, 9, "/", &d), -ENOENT);
}

/* A line longer than any fixed buffer (overlayfs with a long lowerdir=),
 * whose tail would look like a line of device 0:99 if it were cut. */
static void test_mountinfo_long_line(void **state)
{
	struct tree *t = *state;
	char mi[PATH_MAX + 32];
	struct disk_info d;
	size_t len = 0;
	FILE *f;
	int i;

	snprintf(mi, sizeof(mi), "%s/mountinfo-long", t->root);
	f = fopen(mi, "w");
	assert_non_null(f);
	len += (size_t)fprintf(f, "50 22 0:60 / /var/lib/docker/overlay2/m "
				  "rw shared:9 - overlay overlay "
				  "rw,lowerdir=");
	for (i = 0; len < 9000; i++)
		len += (size_t)fprintf(f, "%s/var/lib/docker/overlay2/l/%04d",
				       i ? ":" : "", i);
	/* what a 4096-byte fgets would have taken for a line of its own */
	fprintf(f, ",x 1 0:99 / /fake rw - ext4 /dev/fake rw,upperdir=/u\n");
	fprintf(f, "51 22 0:99 / /real\\040mnt rw shared:10 - xfs /dev/sdz1 "
		   "rw\n");
	fclose(f);
	assert_true(len > 8192);

	memset(&d, 0, sizeof(d));
	assert_int_equal(disk_mountinfo_lookup(mi, 0, 99, "/real mnt/a", &d),
			 0);
	assert_string_equal(d.mnt, "/real mnt");
	assert_string_equal(d.fstype, "xfs");
	assert_string_equal(d.source, "/dev/sdz1");
	/* no abspath: still only the real line is 0:99 */
	memset(&d, 0, sizeof(d));
	assert_int_equal(disk_mountinfo_lookup(mi, 0, 99, NULL, &d), 0);
	assert_string_equal(d.mnt, "/real mnt");
	/* the long line itself is found whole */
	memset(&d, 0, sizeof(d));
	assert_int_equal(disk_mountinfo_lookup(
				 mi, 0, 60, "/var/lib/docker/overlay2/m/x", &d),
			 0);
	assert_string_equal(d.mnt, "/var/lib/docker/overlay2/m");
	assert_string_equal(d.fstype, "overlay");
	assert_string_equal(d.source, "overlay");
	assert_int_equal(disk_mountinfo_lookup(mi, 0, 98, NULL, &d), -ENOENT);
}

/* A file read: the whole file with a short tail, a limit, and refusals. */
static void test_read_file(void **state)
{
	struct tree *t = *state;
	volatile sig_atomic_t stop = 0;
	struct disk_result res;
	struct lr_err err = { 0 };
	char name[PATH_MAX + 32], link[PATH_MAX + 32];
	uint64_t size = (3 << 20) + 12345;
	uint64_t i;
	FILE *f;

	snprintf(name, sizeof(name), "%s/read-me", t->root);
	snprintf(link, sizeof(link), "%s/read-link", t->root);
	f = fopen(name, "w");
	assert_non_null(f);
	for (i = 0; i < size; i++)
		fputc((int)(i * 7 % 251), f);
	fclose(f);

	memset(&res, 0, sizeof(res));
	assert_int_equal(disk_read_file(name, 0, 1 << 20, &stop, NULL, NULL,
					&res, &err),
			 0);
	assert_int_equal(res.bytes, size);
	assert_true(res.read_only);
	assert_true(res.read_sec > 0);
	assert_true(res.write_sec == 0);
	/* a limit below the size; one above it reads the whole file */
	assert_int_equal(disk_read_file(name, 2 << 20, 1 << 20, &stop, NULL,
					NULL, &res, &err),
			 0);
	assert_int_equal(res.bytes, 2 << 20);
	assert_int_equal(disk_read_file(name, 8 << 20, 1 << 20, &stop, NULL,
					NULL, &res, &err),
			 0);
	assert_int_equal(res.bytes, size);

	assert_int_equal(symlink(name, link), 0);
	assert_int_equal(disk_read_file(link, 0, 1 << 20, &stop, NULL, NULL,
					&res, &err),
			 -ELOOP);
	assert_int_equal(disk_read_file(t->root, 0, 1 << 20, &stop, NULL, NULL,
					&res, &err),
			 -EINVAL);
	stop = 2;
	assert_int_equal(disk_read_file(name, 0, 1 << 20, &stop, NULL, NULL,
					&res, &err),
			 -EINTR);
	unlink(link);
	unlink(name);
}

static void test_run_small(void **state)
{
	struct tree *t = *state;
	volatile sig_atomic_t stop = 0;
	struct disk_result res;
	struct lr_err err = { 0 };
	char name[PATH_MAX + 64];

	assert_int_equal(disk_run(t->root, 1 << 20, 64 << 10, &stop, NULL, NULL,
				  &res, &err),
			 0);
	assert_int_equal(res.bytes, 1 << 20);
	assert_true(res.write_sec > 0 && res.read_sec > 0);
	snprintf(name, sizeof(name), "%s/.linerate-disk-%ld.tmp", t->root,
		 (long)getpid());
	assert_int_equal(access(name, F_OK), -1);
	/* not a multiple of bs */
	assert_int_equal(disk_run(t->root, 100000, 4096, &stop, NULL, NULL,
				  &res, &err),
			 -EINVAL);
}

static void test_run_stopped(void **state)
{
	struct tree *t = *state;
	volatile sig_atomic_t stop = 2;
	struct disk_result res;
	struct lr_err err = { 0 };
	char name[PATH_MAX + 64];

	assert_int_equal(disk_run(t->root, 1 << 20, 4096, &stop, NULL, NULL,
				  &res, &err),
			 -EINTR);
	snprintf(name, sizeof(name), "%s/.linerate-disk-%ld.tmp", t->root,
		 (long)getpid());
	assert_int_equal(access(name, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nvme_partition),
		cmocka_unit_test(test_mmc),
		cmocka_unit_test(test_usb),
		cmocka_unit_test(test_rotational),
		cmocka_unit_test(test_ssd),
		cmocka_unit_test(test_loop),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_fstype),
		cmocka_unit_test(test_mountinfo),
		cmocka_unit_test(test_mountinfo_long_line),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_run_small),
		cmocka_unit_test(test_run_stopped),
	};

	return cmocka_run_group_tests(tests, tree_setup, tree_teardown);
}
