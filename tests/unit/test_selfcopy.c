// SPDX-License-Identifier: MIT
/*
 * Unit tests of --copy-self (selfcopy.[ch], ssh.c's LINERATE-SELF line):
 * the far shell's line, the machine table, the ELF reader on headers made
 * here, the choice among the programs at hand, and the far script itself,
 * run by /bin/sh and by busybox's sh and tools (those of OpenWrt) when
 * busybox is installed.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "selfcopy.h"
#include "ssh.h"

static void parse_ok(const char *line, const char *os, const char *machine,
		     unsigned order)
{
	struct ssh_self s;
	struct lr_err e = { 0 };

	assert_int_equal(ssh_self_parse(line, strlen(line), &s, &e), 0);
	assert_string_equal(s.os, os);
	assert_string_equal(s.machine, machine);
	assert_int_equal(s.order, order);
}

static void test_self_line(void **state)
{
	static const char *const bad[] = {
		"",
		"LINERATE-SELF",
		"LINERATE-SELF 1 Linux mips",
		"LINERATE-SELF 1 Linux mips \n",
		"LINERATE-SELF 1 Linux  mips little",
		"LINERATE-SSH 1 Linux mips little",
		"LINERATE-SELF 1 Linux mi\001ps little",
		"LINERATE-SELF 1 Linux mips;rm little",
		"LINERATE-SELF 1 $(reboot) mips little",
		"LINERATE-SELF 1 Linux mips middle",
		"LINERATE-SELF 1 Linux mips little more",
		"LINERATE-SELF 1 Linux aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa little",
	};
	struct ssh_self s;
	struct lr_err e = { 0 };
	unsigned i;

	(void)state;
	parse_ok("LINERATE-SELF 1 Linux x86_64 little\n", "Linux", "x86_64", 1);
	/* a CR from a far terminal */
	parse_ok("LINERATE-SELF 1 Linux mips big\r\n", "Linux", "mips", 2);
	/* dd missing: the byte order not said */
	parse_ok("LINERATE-SELF 1 Linux armv7l unknown", "Linux", "armv7l", 0);
	parse_ok("LINERATE-SELF 1 Darwin arm64 little", "Darwin", "arm64", 1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = ssh_self_parse(bad[i], strlen(bad[i]), &s, &e);

		if (r != LR_EBADMSG)
			fail_msg("'%s' gave %d", bad[i], r);
	}
	assert_int_equal(ssh_self_parse("LINERATE-SELF 2 Linux mips big", 30,
					&s, &e),
			 LR_EVERSION);
}

static void want_ok(const char *machine, unsigned order, const char *name,
		    unsigned em, unsigned cls)
{
	struct ssh_self s = { .os = "Linux", .order = order };
	struct selfcopy_elf w;
	char got[SELFCOPY_NAME_MAX];
	struct lr_err e = { 0 };

	snprintf(s.machine, sizeof(s.machine), "%s", machine);
	assert_int_equal(selfcopy_want(&s, &w, got, &e), 0);
	assert_string_equal(got, name);
	assert_int_equal(w.machine, em);
	assert_int_equal(w.elf_class, cls);
}

static void test_machines(void **state)
{
	struct ssh_self s = { .os = "Linux", .machine = "mips" };
	struct selfcopy_elf w;
	char name[SELFCOPY_NAME_MAX];
	struct lr_err e = { 0 };

	(void)state;
	want_ok("x86_64", 0, "x86_64", EM_X86_64, 2);
	want_ok("aarch64", 0, "aarch64", EM_AARCH64, 2);
	want_ok("armv7l", 0, "armhf", EM_ARM, 1);
	want_ok("i686", 0, "i386", EM_386, 1);
	/* MIPS: uname says "mips" for both byte orders; /bin/sh tells */
	want_ok("mips", 1, "mipsel", EM_MIPS, 1);
	want_ok("mips", 2, "mips", EM_MIPS, 1);
	want_ok("s390x", 0, "s390x", EM_S390, 2);
	assert_int_equal(selfcopy_want(&s, &w, name, &e), -ENOTSUP);
	assert_non_null(strstr(e.msg, "byte order"));
	snprintf(s.machine, sizeof(s.machine), "vax");
	assert_int_equal(selfcopy_want(&s, &w, name, &e), -ENOTSUP);
	assert_non_null(strstr(e.msg, "vax"));
	/* not Linux: its uname -m may look like one (arm64, amd64) */
	s = (struct ssh_self){ .os = "FreeBSD",
			       .machine = "x86_64",
			       .order = 1 };
	assert_int_equal(selfcopy_want(&s, &w, name, &e), -ENOTSUP);
	assert_non_null(strstr(e.msg, "FreeBSD"));
}

/* An ELF file as a linker would write its headers: class, byte order,
 * machine, and a PT_INTERP header or not. */
static void put(unsigned char *p, uint64_t v, unsigned n, bool big)
{
	unsigned i;

	for (i = 0; i < n; i++)
		p[big ? n - 1 - i : i] = (unsigned char)(v >> (8 * i));
}

static void make_elf(const char *path, bool wide, bool big, unsigned em,
		     bool interp, unsigned phnum_lie)
{
	unsigned char b[512] = { 0 };
	unsigned phoff = wide ? 64 : 52, phent = wide ? 56 : 32, i, n = 3;
	FILE *f;

	memcpy(b, ELFMAG, SELFMAG);
	b[EI_CLASS] = wide ? ELFCLASS64 : ELFCLASS32;
	b[EI_DATA] = big ? ELFDATA2MSB : ELFDATA2LSB;
	b[EI_VERSION] = EV_CURRENT;
	put(b + 16, ET_EXEC, 2, big);
	put(b + 18, em, 2, big);
	if (wide)
		put(b + 32, phoff, 8, big);
	else
		put(b + 28, phoff, 4, big);
	put(b + (wide ? 54 : 42), phent, 2, big);
	put(b + (wide ? 56 : 44), phnum_lie ? phnum_lie : n, 2, big);
	for (i = 0; i < n; i++)
		put(b + phoff + i * phent,
		    i == 1 && interp ? PT_INTERP : PT_LOAD, 4, big);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, sizeof(b), f), sizeof(b));
	fclose(f);
	chmod(path, 0755);
}

static int read_elf(const char *path, struct selfcopy_elf *e)
{
	struct lr_err err = { 0 };
	int fd = open(path, O_RDONLY), r;

	assert_true(fd >= 0);
	r = selfcopy_read_elf(fd, e, &err);
	close(fd);
	return r;
}

static char tmpdir[64];

static int make_tmp(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lr-selfcopy-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmp(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_elf_reader(void **state)
{
	struct selfcopy_elf e;
	char p[128];
	FILE *f;

	(void)state;
	snprintf(p, sizeof(p), "%s/a", tmpdir);
	make_elf(p, true, false, EM_AARCH64, false, 0);
	assert_int_equal(read_elf(p, &e), 0);
	assert_int_equal(e.machine, EM_AARCH64);
	assert_int_equal(e.elf_class, 2);
	assert_int_equal(e.elf_data, 1);
	assert_false(e.dynamic);
	make_elf(p, false, true, EM_MIPS, true, 0);
	assert_int_equal(read_elf(p, &e), 0);
	assert_int_equal(e.machine, EM_MIPS);
	assert_int_equal(e.elf_class, 1);
	assert_int_equal(e.elf_data, 2);
	assert_true(e.dynamic);
	/* program headers past the end of the file, or too many */
	make_elf(p, false, false, EM_MIPS, false, 200);
	assert_int_equal(read_elf(p, &e), LR_EBADMSG);
	make_elf(p, true, false, EM_MIPS, false, 60000);
	assert_int_equal(read_elf(p, &e), LR_EBADMSG);
	/* not ELF, and short */
	f = fopen(p, "wb");
	fputs("#!/bin/sh\necho hi\n", f);
	fclose(f);
	assert_int_equal(read_elf(p, &e), LR_EBADMSG);
	f = fopen(p, "wb");
	fputs("\177ELF\002\001", f);
	fclose(f);
	assert_int_equal(read_elf(p, &e), LR_EBADMSG);
	/* this program: dynamic or static, it reads as this machine's */
	assert_int_equal(read_elf("/proc/self/exe", &e), 0);
	assert_true(e.elf_class == 1 || e.elf_class == 2);
}

static void test_find(void **state)
{
	struct ssh_self far = { .os = "Linux", .machine = "mips", .order = 1 };
	struct selfcopy_pick pick;
	struct lr_err e = { 0 };
	char exe[128], p[160];

	(void)state;
	snprintf(p, sizeof(p), "%s/bin", tmpdir);
	mkdir(p, 0755);
	snprintf(exe, sizeof(exe), "%s/bin/linerate", tmpdir);
	make_elf(exe, true, false, EM_X86_64, true, 0);
	/* nothing for MIPS: every place tried is named */
	assert_int_equal(selfcopy_find(exe, NULL, &far, &pick, &e), -ENOENT);
	assert_non_null(strstr(pick.tried, "build-static-mipsel/linerate"));
	assert_non_null(strstr(pick.tried, "libexec/linerate/mipsel/linerate"));
	assert_non_null(strstr(pick.tried, "another machine"));
	assert_non_null(strstr(e.msg, "scripts/cross.sh static-mipsel"));
	assert_int_equal(pick.fd, -1);
	/* a static MIPS build beside it */
	snprintf(p, sizeof(p), "%s/build-static-mipsel", tmpdir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/build-static-mipsel/linerate", tmpdir);
	make_elf(p, false, false, EM_MIPS, false, 0);
	assert_int_equal(selfcopy_find(exe, NULL, &far, &pick, &e), 0);
	assert_non_null(strstr(pick.path, "build-static-mipsel/linerate"));
	assert_null(strstr(pick.path, "/../"));
	assert_false(pick.dynamic);
	assert_int_equal(pick.size, 512);
	close(pick.fd);
	/* big-endian MIPS is another machine */
	far.order = 2;
	assert_int_equal(selfcopy_find(exe, NULL, &far, &pick, &e), -ENOENT);
	assert_non_null(strstr(pick.tried, "build-static-mips/linerate"));
	assert_non_null(strstr(e.msg, "has no static build for it"));
	/* a dynamic one of the far machine's kind is the last resort */
	far = (struct ssh_self){ .os = "Linux", .machine = "x86_64" };
	assert_int_equal(selfcopy_find(exe, NULL, &far, &pick, &e), 0);
	assert_string_equal(pick.path, exe);
	assert_true(pick.dynamic);
	close(pick.fd);
	/* --copy-self=FILE: that one, or why not */
	far = (struct ssh_self){ .os = "Linux", .machine = "mips", .order = 1 };
	assert_int_equal(selfcopy_find(exe, p, &far, &pick, &e), 0);
	close(pick.fd);
	assert_int_equal(selfcopy_find(exe, exe, &far, &pick, &e), -ENOEXEC);
	assert_non_null(strstr(e.msg, "another machine"));
}

/* The far script, run by sh (path) with PATH=path_env and
 * TMPDIR=tmpdir/t: what it printed first (its LINERATE-SELF line or the
 * installed program's output) into first; then send (n bytes, with
 * announce as the size line) unless NULL; then its whole output after
 * that into rest. Its exit status. */
static int run_script(const char *sh, const char *path_env, const char *prog,
		      const char *args, const char *announce, const char *send,
		      size_t n, char *first, size_t cap, char *rest,
		      size_t rcap)
{
	char script[8192], t[128];
	int in[2], out[2], st;
	size_t got = 0;
	ssize_t k;
	pid_t pid;

	assert_int_equal(
		selfcopy_far_script(prog, args, script, sizeof(script)), 0);
	snprintf(t, sizeof(t), "%s/t", tmpdir);
	mkdir(t, 0700);
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		setenv("PATH", path_env, 1);
		setenv("TMPDIR", t, 1);
		execl(sh, "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	/* the first line, byte by byte as the near end reads it */
	while (got + 1 < cap && (k = read(out[0], first + got, 1)) == 1)
		if (first[got++] == '\n')
			break;
	first[got] = '\0';
	if (announce) {
		assert_int_equal(write(in[1], announce, strlen(announce)),
				 (ssize_t)strlen(announce));
		if (n)
			assert_int_equal(write(in[1], send, n), (ssize_t)n);
	}
	close(in[1]);
	got = 0;
	while (got + 1 < rcap &&
	       (k = read(out[0], rest + got, rcap - 1 - got)) > 0)
		got += (size_t)k;
	rest[got] = '\0';
	close(out[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* tmpdir/t holds nothing: the copy's directory went */
static void assert_no_leftover(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "[ -z \"$(ls -A '%s/t')\" ]", tmpdir);
	assert_int_equal(system(cmd), 0);
}

/* `uname -s` and `uname -m` as sh (with PATH=path_env) runs them */
static void shell_says(const char *sh, const char *path_env, char *os,
		       size_t ocap, char *machine, size_t mcap)
{
	char cmd[512];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "PATH='%s' '%s' -c 'uname -s; uname -m'",
		 path_env, sh);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(os, (int)ocap, p));
	assert_non_null(fgets(machine, (int)mcap, p));
	pclose(p);
	os[strcspn(os, "\n")] = '\0';
	machine[strcspn(machine, "\n")] = '\0';
}

/* an ELF file's byte order (its byte 5): 1 little, 2 big */
static unsigned elf_order(const char *path)
{
	unsigned char h[6];
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	assert_int_equal(fread(h, 1, sizeof(h), f), sizeof(h));
	fclose(f);
	return h[5];
}

static void script_cases(const char *sh, const char *path_env)
{
	static const char payload[] = "#!/bin/sh\necho \"ran $# $1 $2\"\n";
	char first[256], rest[256], size[32], os[64], machine[64];
	struct ssh_self s;
	struct lr_err e = { 0 };

	/* installed: it runs, no line */
	assert_int_equal(run_script(sh, path_env, "echo", "installed 'a b'",
				    NULL, NULL, 0, first, sizeof(first), rest,
				    sizeof(rest)),
			 0);
	assert_string_equal(first, "installed a b\n");
	/* missing: the line, the copy, its run with the arguments, and
	 * nothing left behind */
	snprintf(size, sizeof(size), "%zu\n", strlen(payload));
	assert_int_equal(run_script(sh, path_env, "no-such-linerate-xyz",
				    "version 'a b'", size, payload,
				    strlen(payload), first, sizeof(first), rest,
				    sizeof(rest)),
			 0);
	assert_int_equal(ssh_self_parse(first, strlen(first), &s, &e), 0);
	/* what the shell's own uname says, and /bin/sh's ELF byte order
	 * (under qemu-user this test's uname(2) is the emulated CPU's, the
	 * shell the host's) */
	shell_says(sh, path_env, os, sizeof(os), machine, sizeof(machine));
	assert_string_equal(s.os, os);
	assert_string_equal(s.machine, machine);
	assert_int_equal(s.order, elf_order("/bin/sh"));
	assert_string_equal(rest, "ran 2 version a b\n");
	assert_no_leftover();
	/* cut short (the near end gone mid-copy): no run, nothing left */
	assert_int_equal(run_script(sh, path_env, "no-such-linerate-xyz",
				    "version", "1000\n", payload,
				    strlen(payload), first, sizeof(first), rest,
				    sizeof(rest)),
			 1);
	assert_string_equal(rest, "");
	assert_no_leftover();
	/* no size at all, or not a number */
	assert_int_equal(run_script(sh, path_env, "no-such-linerate-xyz",
				    "version", NULL, NULL, 0, first,
				    sizeof(first), rest, sizeof(rest)),
			 1);
	assert_int_equal(run_script(sh, path_env, "no-such-linerate-xyz",
				    "version", "12; rm -rf /\n", NULL, 0, first,
				    sizeof(first), rest, sizeof(rest)),
			 1);
	assert_no_leftover();
}

static void test_script_dash(void **state)
{
	(void)state;
	script_cases("/bin/sh", "/usr/bin:/bin");
}

/* busybox's sh, head, dd, mktemp, wc, ... alone on PATH: what a stock
 * OpenWrt has (its busybox has no od) */
static void test_script_busybox(void **state)
{
	static const char *const applets[] = { "sh",	 "head", "dd",
					       "mktemp", "wc",	 "uname",
					       "chmod",	 "rm",	 "echo" };
	const char *bb = NULL;
	char dir[128], link[192];
	unsigned i, pass;

	(void)state;
	if (!access("/bin/busybox", X_OK))
		bb = "/bin/busybox";
	else if (!access("/usr/bin/busybox", X_OK))
		bb = "/usr/bin/busybox";
	if (!bb) {
		printf("# skipped: no busybox (scripts/deps.sh installs it)\n");
		skip();
	}
	/* then without head: dd reads the copy, byte by byte */
	for (pass = 0; pass < 2; pass++) {
		snprintf(dir, sizeof(dir), "%s/bb%u", tmpdir, pass);
		mkdir(dir, 0755);
		for (i = 0; i < sizeof(applets) / sizeof(applets[0]); i++) {
			if (pass && !strcmp(applets[i], "head"))
				continue;
			snprintf(link, sizeof(link), "%s/%s", dir, applets[i]);
			if (symlink(bb, link) && errno != EEXIST)
				fail_msg("symlink %s", link);
		}
		snprintf(link, sizeof(link), "%s/sh", dir);
		script_cases(link, dir);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_line),
		cmocka_unit_test(test_machines),
		cmocka_unit_test_setup_teardown(test_elf_reader, make_tmp,
						remove_tmp),
		cmocka_unit_test_setup_teardown(test_find, make_tmp,
						remove_tmp),
		cmocka_unit_test_setup_teardown(test_script_dash, make_tmp,
						remove_tmp),
		cmocka_unit_test_setup_teardown(test_script_busybox, make_tmp,
						remove_tmp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
