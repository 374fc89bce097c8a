// SPDX-License-Identifier: MIT
/*
 * Unit tests of fsio.[ch]: the peer path check, name escaping, side-file
 * names, and directory walks that must never leave the root.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fsio.h"
#include "xfer.h"

struct path_case {
	const char *path;
	size_t len; /* 0: strlen(path) */
};

static const struct path_case bad_paths[] = {
	{ "/etc/passwd", 0 }, { "..", 0 },	 { ".", 0 },
	{ "a/../b", 0 },      { "a/..", 0 },	 { "../a", 0 },
	{ "./a", 0 },	      { "a/./b", 0 },	 { "a//b", 0 },
	{ "a/", 0 },	      { "/", 0 },	 { "", 0 },
	{ "a\0b", 3 },	      { "\0", 1 },	 { "\x1b[31m", 0 },
	{ "a\nb", 0 },	      { "a\rb", 0 },	 { "\t", 0 },
	{ "\x7f", 0 },	      { "dir/\x01", 0 },
};

static const char *const good_paths[] = {
	"a",   "a/b/c",	  "dir with space/f", "ünïcode",  "...",	 "..a",
	"a..", ".hidden", "a/.b/..c/d..",     "\xff\xfe", "x/y/z/w/v/u", "~",
};

static void check_bad(const char *path, size_t len)
{
	const char *why = NULL;
	int r = fsio_path_check(path, len, &why);

	if (r != LR_EBADPATH || !why)
		fail_msg("accepted bad path (len %zu): r=%d", len, r);
	assert_true(why[0] != '\0');
}

static void check_good(const char *path, size_t len)
{
	const char *why = NULL;
	int r = fsio_path_check(path, len, &why);

	if (r != 0)
		fail_msg("rejected good path \"%s\": %s", path,
			 why ? why : "?");
}

static void test_path_check_bad_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++) {
		const struct path_case *c = &bad_paths[i];

		check_bad(c->path, c->len ? c->len : strlen(c->path));
	}
	/* a NULL why is allowed */
	assert_int_equal(fsio_path_check("..", 2, NULL), LR_EBADPATH);
}

static void test_path_check_good_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good_paths) / sizeof(good_paths[0]); i++)
		check_good(good_paths[i], strlen(good_paths[i]));
	/* len bounds the path: bytes after it are not looked at */
	check_good("abc/..", 3);
}

static void test_path_check_limits(void **state)
{
	char *buf = malloc(2 * FSIO_MAX_PATH + 2);
	size_t i;

	(void)state;
	assert_non_null(buf);

	/* one component of 255 bytes is fine, 256 is not */
	memset(buf, 'a', FSIO_MAX_NAME + 1);
	check_good(buf, FSIO_MAX_NAME);
	check_bad(buf, FSIO_MAX_NAME + 1);

	/* 4096 bytes in 199-byte components fits; 4097 does not */
	memset(buf, 'b', FSIO_MAX_PATH + 1);
	for (i = 199; i < 4000; i += 200)
		buf[i] = '/';
	check_good(buf, FSIO_MAX_PATH);
	check_bad(buf, FSIO_MAX_PATH + 1);

	/* 256 components are fine, 257 are not */
	for (i = 0; i < FSIO_MAX_DEPTH + 1; i++) {
		buf[2 * i] = 'c';
		buf[2 * i + 1] = '/';
	}
	check_good(buf, 2 * FSIO_MAX_DEPTH - 1);
	check_bad(buf, 2 * (FSIO_MAX_DEPTH + 1) - 1);
	free(buf);
}

static void test_split(void **state)
{
	char parent[FSIO_MAX_PATH + 1], name[FSIO_MAX_NAME + 1];

	(void)state;
	fsio_split("a/b/c", 5, parent, name);
	assert_string_equal(parent, "a/b");
	assert_string_equal(name, "c");

	fsio_split("top", 3, parent, name);
	assert_string_equal(parent, "");
	assert_string_equal(name, "top");

	fsio_split("dir with space/f.txt", 20, parent, name);
	assert_string_equal(parent, "dir with space");
	assert_string_equal(name, "f.txt");

	/* only len bytes count */
	fsio_split("x/yz/ignored", 4, parent, name);
	assert_string_equal(parent, "x");
	assert_string_equal(name, "yz");
}

static void check_side_name(const char *out, const char *suffix)
{
	size_t n = strlen(out), s = strlen(suffix);

	assert_true(n <= FSIO_MAX_NAME);
	assert_true(n > s);
	assert_int_equal(out[0], '.');
	assert_string_equal(out + n - s, suffix);
	assert_null(strchr(out, '/'));
}

static void test_temp_names(void **state)
{
	char out[FSIO_MAX_NAME + 1], out2[FSIO_MAX_NAME + 1];
	char lng[FSIO_MAX_NAME + 1];
	size_t i;

	(void)state;
	fsio_temp_name("file.bin", out);
	assert_string_equal(out, ".file.bin.lrpart");
	fsio_journal_name("file.bin", out);
	assert_string_equal(out, ".file.bin.lrjournal");

	/* the longest name kept as is: 1 + 247 + 7 = 255 */
	memset(lng, 'n', 247);
	lng[247] = '\0';
	fsio_temp_name(lng, out);
	check_side_name(out, ".lrpart");
	assert_int_equal(strlen(out), FSIO_MAX_NAME);
	assert_memory_equal(out + 1, lng, 247);

	/* a maximal name is replaced by 16 hex digits of its hash */
	memset(lng, 'n', FSIO_MAX_NAME);
	lng[FSIO_MAX_NAME] = '\0';
	fsio_temp_name(lng, out);
	check_side_name(out, ".lrpart");
	assert_int_equal(strlen(out), 1 + 16 + 7);
	for (i = 1; i <= 16; i++)
		assert_non_null(strchr("0123456789abcdef", out[i]));

	fsio_journal_name(lng, out2);
	check_side_name(out2, ".lrjournal");
	assert_int_equal(strlen(out2), 1 + 16 + 10);
	/* the same name hashes the same for both */
	assert_memory_equal(out, out2, 17);

	/* names that differ in one byte get different temp names */
	lng[100] = 'm';
	fsio_temp_name(lng, out2);
	check_side_name(out2, ".lrpart");
	assert_string_not_equal(out, out2);

	/* a name that fits with .lrpart but not with .lrjournal */
	memset(lng, 'j', 246);
	lng[246] = '\0';
	fsio_temp_name(lng, out);
	assert_int_equal(strlen(out), 1 + 246 + 7);
	fsio_journal_name(lng, out);
	check_side_name(out, ".lrjournal");
	assert_int_equal(strlen(out), 1 + 16 + 10);
}

static void test_escape(void **state)
{
	char out[256];
	char tiny[6];

	(void)state;
	assert_ptr_equal(fsio_escape("plain", 5, out, sizeof(out)), out);
	assert_string_equal(out, "plain");

	fsio_escape("\x1b[31mred", 8, out, sizeof(out));
	assert_string_equal(out, "\\x1b[31mred");

	fsio_escape("a\nb\x7f", 4, out, sizeof(out));
	assert_string_equal(out, "a\\x0ab\\x7f");

	fsio_escape("a\\b", 3, out, sizeof(out));
	assert_string_equal(out, "a\\\\b");

	fsio_escape("a\0b", 3, out, sizeof(out));
	assert_string_equal(out, "a\\x00b");

	/* the bidirectional controls and line separators are escaped:
	 * U+202E (right-to-left override) would show "gpj.exe" as
	 * "exe.jpg", U+2066 and U+061C likewise */
	fsio_escape("a\xe2\x80\xaetxt.exe", 11, out, sizeof(out));
	assert_string_equal(out, "a\\xe2\\x80\\xaetxt.exe");
	fsio_escape("\xe2\x81\xa6x\xd8\x9c\xe2\x80\xa8", 9, out, sizeof(out));
	assert_string_equal(out, "\\xe2\\x81\\xa6x\\xd8\\x9c\\xe2\\x80\\xa8");
	/* neighbours that are not: U+2010 (a hyphen), U+202F (a space) */
	fsio_escape("\xe2\x80\x90\xe2\x80\xaf", 6, out, sizeof(out));
	assert_string_equal(out, "\xe2\x80\x90\xe2\x80\xaf");

	/* valid UTF-8 is kept, 2, 3 and 4 byte forms */
	fsio_escape("ünïcode €𝄞", strlen("ünïcode €𝄞"), out, sizeof(out));
	assert_string_equal(out, "ünïcode €𝄞");

	/* invalid: lone continuation, truncated, overlong, surrogate */
	fsio_escape("\x80x\xc3", 3, out, sizeof(out));
	assert_string_equal(out, "\\x80x\\xc3");
	fsio_escape("\xc0\xaf", 2, out, sizeof(out));
	assert_string_equal(out, "\\xc0\\xaf");
	fsio_escape("\xed\xa0\x80", 3, out, sizeof(out));
	assert_string_equal(out, "\\xed\\xa0\\x80");
	fsio_escape("\xf4\x90\x80\x80", 4, out, sizeof(out));
	assert_string_equal(out, "\\xf4\\x90\\x80\\x80");

	/* C1 control CSI (U+009B) encoded as UTF-8 */
	fsio_escape("\xc2\x9b", 2, out, sizeof(out));
	assert_string_equal(out, "\\xc2\\x9b");

	/* truncation never splits an escape or a UTF-8 sequence */
	fsio_escape("ab\x1b", 3, tiny, sizeof(tiny));
	assert_string_equal(tiny, "ab");
	fsio_escape("abc€", strlen("abc€"), tiny, sizeof(tiny));
	assert_string_equal(tiny, "abc");
	fsio_escape("abcdefgh", 8, tiny, sizeof(tiny));
	assert_string_equal(tiny, "abcde");
	fsio_escape("abc", 3, tiny, 1);
	assert_string_equal(tiny, "");
}

/* A temporary tree: <top>/root is the root, <top>/outside a sibling. */
struct tree {
	char top[64];
	int top_fd;
	int root;
};

static int rm_one(const char *p, const struct stat *st, int type,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(p) : unlink(p);
}

static int tree_setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	const char *tmp = getenv("TMPDIR");

	if (!t)
		return -1;
	snprintf(t->top, sizeof(t->top), "%s/fsio.XXXXXX",
		 tmp && strlen(tmp) < 40 ? tmp : "/tmp");
	if (!mkdtemp(t->top))
		goto out_free;
	t->top_fd = open(t->top, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (t->top_fd < 0)
		goto out_free;
	if (mkdirat(t->top_fd, "root", 0755) ||
	    mkdirat(t->top_fd, "outside", 0755))
		goto out_close;
	t->root = openat(t->top_fd, "root", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (t->root < 0)
		goto out_close;
	*state = t;
	return 0;

out_close:
	close(t->top_fd);
out_free:
	free(t);
	return -1;
}

static int tree_teardown(void **state)
{
	struct tree *t = *state;

	close(t->root);
	close(t->top_fd);
	nftw(t->top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(t);
	return 0;
}

static bool is_dir_at(int dirfd, const char *p)
{
	struct stat st;

	return fstatat(dirfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(st.st_mode);
}

static bool exists_at(int dirfd, const char *p)
{
	struct stat st;

	return fstatat(dirfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void same_inode(int fd, int dirfd, const char *p)
{
	struct stat a, b;

	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstatat(dirfd, p, &b, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

static void test_open_dir_create(void **state)
{
	struct tree *t = *state;
	int fd, fd2;

	fd = fsio_open_dir(t->root, "a/b/c", false, 0755);
	assert_int_equal(fd, -ENOENT);
	assert_false(exists_at(t->root, "a"));

	fd = fsio_open_dir(t->root, "a/b/c", true, 0755);
	assert_true(fd >= 0);
	assert_true(is_dir_at(t->root, "a/b/c"));
	same_inode(fd, t->root, "a/b/c");
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);

	/* existing dirs: with and without create */
	fd = fsio_open_dir(t->root, "a/b", false, 0755);
	assert_true(fd >= 0);
	same_inode(fd, t->root, "a/b");
	fd2 = fsio_open_dir(t->root, "a/b/c/d", true, 0700);
	assert_true(fd2 >= 0);
	same_inode(fd2, fd, "c/d");
	close(fd2);
	close(fd);
}

static void test_open_dir_empty_is_dup(void **state)
{
	struct tree *t = *state;
	int fd = fsio_open_dir(t->root, "", false, 0755);

	assert_true(fd >= 0);
	assert_int_not_equal(fd, t->root);
	same_inode(fd, t->top_fd, "root");
	close(fd);
}

static void test_open_dir_symlink(void **state)
{
	struct tree *t = *state;
	int fd;

	assert_int_equal(symlinkat("../outside", t->root, "evil"), 0);
	assert_int_equal(symlinkat("/tmp", t->root, "abs"), 0);
	assert_int_equal(symlinkat("nowhere", t->root, "dangling"), 0);

	fd = fsio_open_dir(t->root, "evil/x", true, 0755);
	assert_true(fd == -ELOOP || fd == -ENOTDIR);
	fd = fsio_open_dir(t->root, "evil", true, 0755);
	assert_true(fd == -ELOOP || fd == -ENOTDIR);
	fd = fsio_open_dir(t->root, "evil", false, 0755);
	assert_true(fd == -ELOOP || fd == -ENOTDIR);
	fd = fsio_open_dir(t->root, "abs/x", true, 0755);
	assert_true(fd == -ELOOP || fd == -ENOTDIR);
	fd = fsio_open_dir(t->root, "abs", false, 0755);
	assert_true(fd == -ELOOP || fd == -ENOTDIR);
	/* a dangling symlink is not made into a directory either */
	fd = fsio_open_dir(t->root, "dangling/x", true, 0755);
	assert_true(fd == -ELOOP || fd == -ENOTDIR);

	/* nothing was made outside the root */
	assert_false(exists_at(t->top_fd, "outside/x"));
	assert_false(exists_at(t->top_fd, "nowhere"));
	assert_false(exists_at(t->root, "nowhere"));

	/* a symlink deeper in the tree, too */
	assert_int_equal(mkdirat(t->root, "d", 0755), 0);
	assert_int_equal(symlinkat("../../outside", t->root, "d/l"), 0);
	fd = fsio_open_dir(t->root, "d/l/y", true, 0755);
	assert_true(fd == -ELOOP || fd == -ENOTDIR);
	fd = fsio_open_dir(t->root, "d/l", false, 0755);
	assert_true(fd == -ELOOP || fd == -ENOTDIR);
	assert_false(exists_at(t->top_fd, "outside/y"));
}

static void test_open_dir_file_component(void **state)
{
	struct tree *t = *state;
	int fd;

	fd = openat(t->root, "f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		    0644);
	assert_true(fd >= 0);
	close(fd);

	assert_int_equal(fsio_open_dir(t->root, "f", false, 0755), -ENOTDIR);
	assert_int_equal(fsio_open_dir(t->root, "f", true, 0755), -ENOTDIR);
	assert_int_equal(fsio_open_dir(t->root, "f/x", true, 0755), -ENOTDIR);
	assert_int_equal(fsio_open_dir(t->root, "f/x", false, 0755), -ENOTDIR);
}

static void test_open_dir_bad_rel(void **state)
{
	struct tree *t = *state;

	assert_int_equal(fsio_open_dir(t->root, "../outside", true, 0755),
			 LR_EBADPATH);
	assert_int_equal(fsio_open_dir(t->root, "/tmp", false, 0755),
			 LR_EBADPATH);
	assert_int_equal(fsio_open_dir(t->root, "a//b", true, 0755),
			 LR_EBADPATH);
	assert_int_equal(fsio_open_dir(t->root, "a/", true, 0755), LR_EBADPATH);
	assert_false(exists_at(t->root, "a"));
}

/* an unlinked empty file in dir, or -1 */
static int anon_file(const char *dir)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/lr-reserve-XXXXXX", dir);
	fd = mkstemp(p);
	if (fd >= 0)
		unlink(p);
	return fd;
}

static bool on_tmpfs(int fd)
{
	struct statfs sfs;

	return fstatfs(fd, &sfs) == 0 &&
	       sfs.f_type == (typeof(sfs.f_type))TMPFS_MAGIC;
}

static void test_reserve_tmpfs(void **state)
{
	struct statvfs v;
	struct stat st;
	int fd = anon_file("/dev/shm");

	(void)state;
	if (fd < 0 || !on_tmpfs(fd)) {
		if (fd >= 0)
			close(fd);
		print_message("skipped: /dev/shm is not a writable tmpfs\n");
		skip();
	}
	/* the size is set and no page is cleared ahead of the data */
	assert_int_equal(fsio_reserve(fd, 8u << 20, false), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 8 << 20);
	assert_int_equal(st.st_blocks, 0);
	/* more than the file system has left: refused, nothing changed */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(fstatvfs(fd, &v), 0);
	assert_int_equal(
		fsio_reserve(fd, (uint64_t)(v.f_bavail + 1024) * v.f_frsize,
			     false),
		-ENOSPC);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(fsio_reserve(fd, UINT64_MAX, false), -EFBIG);
	close(fd);
}

static void test_reserve_disk(void **state)
{
	struct stat st;
	int fd = anon_file(".");

	(void)state;
	assert_true(fd >= 0);
	if (on_tmpfs(fd)) {
		close(fd);
		print_message("skipped: the build directory is on tmpfs\n");
		skip();
	}
	/* sparse: the size only */
	assert_int_equal(fsio_reserve(fd, 4u << 20, true), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 4 << 20);
	assert_int_equal(st.st_blocks, 0);
	assert_int_equal(ftruncate(fd, 0), 0);
	/* otherwise the blocks are reserved where fallocate works */
	assert_int_equal(fsio_reserve(fd, 4u << 20, false), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 4 << 20);
	if (fallocate(fd, 0, 0, 4096) == 0)
		assert_true((uint64_t)st.st_blocks * 512 >= (4u << 20));
	close(fd);
}

static void test_anon_link(void **state)
{
	struct tree *t = *state;
	char buf[8] = { 0 };
	struct stat st;
	int fd, fd2, rfd;

	fd = fsio_open_anon(t->root, 0640);
	if (fd == -EOPNOTSUPP || fd == -EISDIR || fd == -EINVAL) {
		print_message("skipped: no O_TMPFILE here\n");
		skip();
	}
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "payload", 7), 7);
	/* unnamed until linked */
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_nlink, 0);
	assert_int_equal(fsio_link_anon(fd, t->root, "f"), 0);
	rfd = openat(t->root, "f", O_RDONLY);
	assert_true(rfd >= 0);
	assert_int_equal(read(rfd, buf, sizeof(buf)), 7);
	assert_string_equal(buf, "payload");
	close(rfd);
	assert_int_equal(fstatat(t->root, "f", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0640 & ~(mode_t)umask(umask(0)));
	/* never replaces: an existing name, or a symlink planted there */
	fd2 = fsio_open_anon(t->root, 0600);
	assert_true(fd2 >= 0);
	assert_int_equal(fsio_link_anon(fd2, t->root, "f"), -EEXIST);
	assert_int_equal(symlinkat("target-outside", t->root, "ln"), 0);
	assert_int_equal(fsio_link_anon(fd2, t->root, "ln"), -EEXIST);
	assert_int_equal(fstatat(t->root, "ln", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_false(exists_at(t->root, "target-outside"));
	close(fd2);
	close(fd);
}

static void put_side(struct tree *t, const char *rel, size_t size, int64_t age);

/* A receiver's temporary file is locked: a second receiver gets -EBUSY
 * instead of removing it, and is free to take it once the first closed. */
static void test_temp_lock(void **state)
{
	struct tree *t = *state;
	int a, b;

	a = fsio_create_temp(t->root, ".f.lrpart", 0600);
	assert_true(a >= 0);
	assert_true(fsio_temp_busy(t->root, ".f.lrpart"));
	assert_int_equal(fsio_create_temp(t->root, ".f.lrpart", 0600), -EBUSY);
	b = openat(t->root, ".f.lrpart", O_RDWR | O_CLOEXEC);
	assert_true(b >= 0);
	assert_int_equal(fsio_lock_temp(b), -EBUSY);
	close(b);
	close(a);
	assert_false(fsio_temp_busy(t->root, ".f.lrpart"));
	assert_false(fsio_temp_busy(t->root, ".missing.lrpart"));
	b = fsio_create_temp(t->root, ".f.lrpart", 0600);
	assert_true(b >= 0);
	/* a look never takes the lock: the writer keeps it */
	assert_true(fsio_temp_busy(t->root, ".f.lrpart"));
	assert_int_equal(fsio_take_temp(t->root, ".f.lrpart"), -EBUSY);
	close(b);
	/* free: taken for a resume; a FIFO is no temporary file */
	a = fsio_take_temp(t->root, ".f.lrpart");
	assert_true(a >= 0);
	assert_true(fsio_temp_busy(t->root, ".f.lrpart"));
	close(a);
	assert_int_equal(mkfifoat(t->root, ".p.lrpart", 0600), 0);
	assert_int_equal(fsio_take_temp(t->root, ".p.lrpart"), -EINVAL);
	a = fsio_create_temp(t->root, ".p.lrpart", 0600); /* replaces it */
	assert_true(a >= 0);
	close(a);
}

/* A name is given only to the file that still has the temporary name. */
static void test_commit_checks_the_file(void **state)
{
	struct tree *t = *state;
	int a = fsio_create_temp(t->root, ".c.lrpart", 0600), b;

	assert_true(a >= 0);
	/* another file took the temporary name meanwhile */
	assert_int_equal(unlinkat(t->root, ".c.lrpart", 0), 0);
	b = fsio_create_temp(t->root, ".c.lrpart", 0600);
	assert_true(b >= 0);
	assert_int_equal(fsio_commit(a, t->root, ".c.lrpart", "c", false),
			 -ESTALE);
	assert_int_not_equal(faccessat(t->root, "c", F_OK, 0), 0);
	assert_int_equal(fsio_commit(b, t->root, ".c.lrpart", "c", false), 0);
	assert_int_equal(faccessat(t->root, "c", F_OK, 0), 0);
	close(a);
	close(b);
}

struct sweeps {
	pthread_mutex_t lock;
	unsigned n;
	unsigned removed;
};

static void on_sweep(void *ctx, const struct xfer_sweep *res, const char *error)
{
	struct sweeps *s = ctx;

	assert_null(error);
	pthread_mutex_lock(&s->lock);
	s->n++;
	s->removed += res->removed;
	pthread_mutex_unlock(&s->lock);
}

/* The sweeper sweeps at once, then every interval, and stops. */
static void test_sweeper_repeats_and_stops(void **state)
{
	struct tree *t = *state;
	struct xfer_partial_policy pol = { .max_age_s = 60 };
	struct sweeps s = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct xfer_sweeper *sw;
	struct timespec nap = { .tv_nsec = 20 * 1000000 };
	unsigned i, n = 0;

	put_side(t, ".a.lrpart", 100, 600);
	assert_int_equal(
		xfer_sweeper_start(t->root, &pol, 50, on_sweep, &s, &sw), 0);
	bool b_put = false;

	for (i = 0; i < 250 && n < 4; i++) {
		nanosleep(&nap, NULL);
		pthread_mutex_lock(&s.lock);
		n = s.n;
		pthread_mutex_unlock(&s.lock);
		if (n >= 1 && !b_put) {
			put_side(t, ".b.lrpart", 100,
				 600); /* for a later one */
			b_put = true;
		}
	}
	xfer_sweeper_stop(sw);
	assert_true(n >= 3);
	assert_int_equal(s.removed, 2);
	xfer_sweeper_stop(NULL);
}

/* A side file of size bytes under rel, unchanged for age seconds. */
static void put_side(struct tree *t, const char *rel, size_t size, int64_t age)
{
	static const char block[4096];
	struct timespec ts[2];
	int fd = openat(t->root, rel, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC,
			0600);
	size_t done;

	assert_true(fd >= 0);
	for (done = 0; done < size; done += sizeof(block))
		assert_true(write(fd, block, sizeof(block)) > 0);
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= age;
	ts[1] = ts[0];
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
}

static int count_partial(void *ctx, const struct xfer_partial *p)
{
	unsigned *n = ctx;

	(void)p;
	(*n)++;
	return 0;
}

/* Sweeps: by age, then the oldest over the cap; a locked one is kept,
 * and pairs go together; names that are not side names stay. */
static void test_partials_sweep(void **state)
{
	struct tree *t = *state;
	struct xfer_partial_policy pol = { .max_age_s = 3600 };
	struct lr_err err = { 0 };
	struct xfer_sweep res;
	time_t now = time(NULL);
	unsigned n = 0;
	int busy;

	assert_int_equal(mkdirat(t->root, "d", 0755), 0);
	assert_int_equal(mkdirat(t->root, "d/e", 0755), 0);
	put_side(t, "d/.old.lrpart", 8192, 7200);
	put_side(t, "d/.old.lrjournal", 100, 7200);
	put_side(t, "d/e/.mid.lrpart", 8192, 1800);
	put_side(t, "d/e/.new.lrpart", 8192, 60);
	put_side(t, ".lone.lrjournal", 100, 9000);
	put_side(t, "plain.lrpart", 100, 9000);
	busy = fsio_create_temp(t->root, ".busy.lrpart", 0600);
	assert_true(busy >= 0);
	put_side(t, ".busy.lrjournal", 100, 9000);
	assert_int_equal(symlinkat("../outside", t->root, "link"), 0);
	put_side(t, "../outside/.far.lrpart", 4096, 9000);

	assert_int_equal(
		xfer_partials_walk(t->root, count_partial, &n, NULL, &err), 0);
	assert_int_equal(n, 5); /* old, mid, new, lone, busy */

	assert_int_equal(
		xfer_partials_sweep(t->root, &pol, now, NULL, &res, &err), 0);
	assert_int_equal(res.removed, 2); /* old (pair), lone */
	assert_int_equal(res.in_use, 1);  /* busy, 2.5 h old */
	assert_int_equal(res.kept, 3);
	assert_int_not_equal(faccessat(t->root, "d/.old.lrpart", F_OK, 0), 0);
	assert_int_not_equal(faccessat(t->root, "d/.old.lrjournal", F_OK, 0),
			     0);
	assert_int_equal(faccessat(t->root, ".busy.lrpart", F_OK, 0), 0);
	assert_int_equal(faccessat(t->root, "plain.lrpart", F_OK, 0), 0);
	assert_int_equal(faccessat(t->top_fd, "outside/.far.lrpart", F_OK, 0),
			 0);

	/* a cap: the oldest (mid) goes, new stays; busy counts, stays */
	pol = (struct xfer_partial_policy){ .max_bytes = 12288 + 4096 };
	assert_int_equal(
		xfer_partials_sweep(t->root, &pol, now, NULL, &res, &err), 0);
	assert_int_equal(res.removed, 1);
	assert_int_not_equal(faccessat(t->root, "d/e/.mid.lrpart", F_OK, 0), 0);
	assert_int_equal(faccessat(t->root, "d/e/.new.lrpart", F_OK, 0), 0);
	close(busy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_check_bad_table),
		cmocka_unit_test(test_path_check_good_table),
		cmocka_unit_test(test_path_check_limits),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_temp_names),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_reserve_tmpfs),
		cmocka_unit_test(test_reserve_disk),
		cmocka_unit_test_setup_teardown(test_open_dir_create,
						tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_open_dir_empty_is_dup,
						tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_open_dir_symlink,
						tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_open_dir_file_component,
						tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_open_dir_bad_rel,
						tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_anon_link, tree_setup,
						tree_teardown),
		cmocka_unit_test_setup_teardown(test_temp_lock, tree_setup,
						tree_teardown),
		cmocka_unit_test_setup_teardown(test_partials_sweep, tree_setup,
						tree_teardown),
		cmocka_unit_test_setup_teardown(test_commit_checks_the_file,
						tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_sweeper_repeats_and_stops,
						tree_setup, tree_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
