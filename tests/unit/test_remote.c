// SPDX-License-Identifier: MIT
/*
 * Unit tests of remote.[ch] and of ssh.[ch]'s pure parts: the grammar of
 * [USER@]HOST[:PATH] per command, the far end's line, the shell quoting
 * of its command, the split of a -e command and SSH_CONNECTION.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "remote.h"
#include "ssh.h"

struct form {
	const char *arg;
	unsigned flags;
	const char *user, *host, *path; /* NULL path: none */
	bool bracketed;
};

/* The table of the man page's "HOST and PATH", as each command reads
 * it: send/get with REMOTE_PATH, bench/doctor with REMOTE_HOST_ONLY. */
static const struct form good[] = {
	{ "pi@raspberrypi:", REMOTE_PATH, "pi", "raspberrypi", "", false },
	{ "nas:backup/2026", REMOTE_PATH, "", "nas", "backup/2026", false },
	{ "nas:/srv/data", REMOTE_PATH, "", "nas", "/srv/data", false },
	{ "nas:~/x", REMOTE_PATH, "", "nas", "~/x", false },
	{ "nas:~bob/x", REMOTE_PATH, "", "nas", "~bob/x", false },
	{ "198.18.0.2:a:b:c", REMOTE_PATH, "", "198.18.0.2", "a:b:c", false },
	{ "[::1]:7703:dir", REMOTE_PATH, "", "::1", "7703:dir", true },
	{ "[2001:db8::1]:dir", REMOTE_PATH, "", "2001:db8::1", "dir", true },
	{ "me@[2001:db8::1]:", REMOTE_PATH, "me", "2001:db8::1", "", true },
	{ "a.b@host:p@q", REMOTE_PATH, "a.b", "host", "p@q", false },
	{ "router", REMOTE_HOST_ONLY, "", "router", NULL, false },
	{ "root@router", REMOTE_HOST_ONLY, "root", "router", NULL, false },
	{ "2001:db8::2", REMOTE_HOST_ONLY, "", "2001:db8::2", NULL, false },
	{ "[2001:db8::2]", REMOTE_HOST_ONLY, "", "2001:db8::2", NULL, true },
	{ "u@2001:db8::2", REMOTE_HOST_ONLY, "u", "2001:db8::2", NULL, false },
};

static void grammar_forms(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		const struct form *f = &good[i];
		struct remote_addr ra;
		struct lr_err e = { 0 };
		int r = remote_parse(f->arg, f->flags, &ra, &e);

		if (r)
			print_error("%s: %s\n", f->arg, e.msg);
		assert_int_equal(r, 0);
		assert_string_equal(ra.user, f->user);
		assert_string_equal(ra.host, f->host);
		assert_int_equal(ra.bracketed, f->bracketed);
		assert_int_equal(ra.has_path, f->path != NULL);
		assert_string_equal(ra.path, f->path ? f->path : "");
	}
}

struct bad {
	const char *arg;
	unsigned flags;
	const char *says; /* a piece of the message */
};

static const struct bad bad[] = {
	{ "file.txt", REMOTE_PATH, "write HOST:PATH" },
	{ "./a:b", REMOTE_PATH, "write HOST:PATH" },
	{ ":dir", REMOTE_PATH, "no host" },
	{ "@host:dir", REMOTE_PATH, "no user" },
	{ "-oProxyCommand=x:dir", REMOTE_PATH, "not starting with '-'" },
	{ "-l@host:dir", REMOTE_PATH, "not starting with '-'" },
	{ "ho st:dir", REMOTE_PATH, "letters, digits" },
	{ "h$(id):dir", REMOTE_PATH, "letters, digits" },
	{ "u;x@host:dir", REMOTE_PATH, "letters, digits" },
	{ "[::1;id]:dir", REMOTE_PATH, "letters, digits" },
	{ "[::1:dir", REMOTE_PATH, "no ']'" },
	{ "[::1]dir", REMOTE_PATH, "after ']'" },
	{ "[]:dir", REMOTE_PATH, "no host" },
	{ "host:dir", REMOTE_HOST_ONLY, "HOST or HOST:PORT, not a path" },
	{ "host:", REMOTE_HOST_ONLY, "not a path" },
	{ "host:0", REMOTE_HOST_ONLY, "not a path" },
	{ "host:65536", REMOTE_HOST_ONLY, "not a path" },
	{ "[::1]:77a", REMOTE_HOST_ONLY, "not a path" },
};

static void grammar_refusals(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct remote_addr ra;
		struct lr_err e = { 0 };
		int r = remote_parse(bad[i].arg, bad[i].flags, &ra, &e);

		if (!r || !strstr(e.msg, bad[i].says))
			print_error("%s: r=%d '%s'\n", bad[i].arg, r, e.msg);
		assert_int_equal(r, -EINVAL);
		assert_non_null(strstr(e.msg, bad[i].says));
	}
}

static void grammar_port_like_and_remote(void **state)
{
	struct remote_addr ra;
	struct lr_err e = { 0 };
	char d[300];

	(void)state;
	assert_int_equal(remote_parse("[::1]:7703:dir", REMOTE_PATH, &ra, &e),
			 0);
	assert_true(ra.port_like);
	assert_int_equal(remote_parse("h:2026-backup", REMOTE_PATH, &ra, &e),
			 0);
	assert_false(ra.port_like);
	assert_true(remote_is_remote("h:x"));
	assert_true(remote_is_remote("[::1]:x"));
	assert_true(remote_is_remote("u@[::1]:x"));
	assert_false(remote_is_remote("./h:x"));
	assert_false(remote_is_remote("/abs/h:x"));
	assert_false(remote_is_remote("plain"));
	assert_int_equal(remote_parse("u@[::1]:", REMOTE_PATH, &ra, &e), 0);
	assert_int_equal(remote_ssh_dest(&ra, d, sizeof(d)), 0);
	assert_string_equal(d, "u@::1");
	assert_int_equal(remote_ssh_dest(&ra, d, 4), -ENAMETOOLONG);
	/* a command without a path reads a port there */
	assert_int_equal(remote_parse("host:7703", REMOTE_HOST_ONLY, &ra, &e),
			 0);
	assert_string_equal(ra.host, "host");
	assert_int_equal(ra.port, 7703);
	assert_false(ra.has_path);
	assert_int_equal(
		remote_parse("me@[::1]:65535", REMOTE_HOST_ONLY, &ra, &e), 0);
	assert_string_equal(ra.host, "::1");
	assert_string_equal(ra.user, "me");
	assert_int_equal(ra.port, 65535);
	assert_int_equal(remote_parse("2001:db8::2", REMOTE_HOST_ONLY, &ra, &e),
			 0);
	assert_int_equal(ra.port, 0);
}

static const char TOKEN[] = "abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567";

static void boot_line_round_trip(void **state)
{
	struct ssh_boot b = { .addr = "198.18.0.2", .port = 40123 }, c;
	struct lr_err e = { 0 };
	char line[SSH_BOOT_MAX + 2];

	(void)state;
	snprintf(b.token, sizeof(b.token), "%s", TOKEN);
	assert_int_equal(ssh_boot_format(&b, line, sizeof(line)), 0);
	assert_int_equal(ssh_boot_parse(line, strlen(line), &c, &e), 0);
	assert_string_equal(c.addr, "198.18.0.2");
	assert_int_equal(c.port, 40123);
	assert_string_equal(c.token, TOKEN);
	snprintf(b.addr, sizeof(b.addr), "2001:db8::7");
	assert_int_equal(ssh_boot_format(&b, line, sizeof(line)), 0);
	assert_int_equal(ssh_boot_parse(line, strlen(line), &c, &e), 0);
	assert_string_equal(c.addr, "2001:db8::7");
	assert_int_equal(ssh_boot_format(&b, line, 20), -ENAMETOOLONG);
}

/* pattern with its "%s" (if any) replaced by TOKEN */
static void fill_token(char *out, size_t cap, const char *pattern)
{
	const char *at = strstr(pattern, "%s");

	if (!at) {
		snprintf(out, cap, "%s", pattern);
		return;
	}
	snprintf(out, cap, "%.*s%s%s", (int)(at - pattern), pattern, TOKEN,
		 at + 2);
}

static void boot_line_refusals(void **state)
{
	static const char *const lines[] = {
		"",
		"LINERATE-SSH",
		"LINERATE-SSH 1 198.18.0.2 40123",
		"LINERATE-SSX 1 198.18.0.2 40123 %s",
		"LINERATE-SSH 1 host.example 40123 %s",
		"LINERATE-SSH 1 198.18.0.2 0 %s",
		"LINERATE-SSH 1 198.18.0.2 65536 %s",
		"LINERATE-SSH 1 198.18.0.2 040123 %s",
		"LINERATE-SSH 1 198.18.0.2 +4012 %s",
		"LINERATE-SSH 1 198.18.0.2  40123 %s",
		"LINERATE-SSH 1 198.18.0.2 40123 %s extra",
		"LINERATE-SSH 1 198.18.0.2 40123 %s ",
		"LINERATE-SSH 1 198.18.0.2 40123 not-a-token",
		"LINERATE-SSH 1 198.18.0.2\t40123 %s",
	};
	struct ssh_boot c;
	struct lr_err e = { 0 };
	char line[400];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		fill_token(line, sizeof(line), lines[i]);
		if (ssh_boot_parse(line, strlen(line), &c, &e) != LR_EBADMSG)
			print_error("accepted: '%s'\n", line);
		assert_int_equal(ssh_boot_parse(line, strlen(line), &c, &e),
				 LR_EBADMSG);
	}
	fill_token(line, sizeof(line), "LINERATE-SSH 2 198.18.0.2 1 %s");
	assert_int_equal(ssh_boot_parse(line, strlen(line), &c, &e),
			 LR_EVERSION);
	assert_non_null(strstr(e.msg, "same release"));
	/* a line at the bound's end, and one over it */
	memset(line, 'x', sizeof(line));
	memcpy(line, "LINERATE-SSH ", 13);
	assert_int_equal(ssh_boot_parse(line, SSH_BOOT_MAX + 1, &c, &e),
			 LR_EBADMSG);
}

static void shell_quoting(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(ssh_shell_quote("dir", true, out, sizeof(out)), 0);
	assert_string_equal(out, "'dir'");
	assert_int_equal(ssh_shell_quote("it's", false, out, sizeof(out)), 0);
	assert_string_equal(out, "'it'\\''s'");
	assert_int_equal(ssh_shell_quote("~/a b", true, out, sizeof(out)), 0);
	assert_string_equal(out, "~/'a b'");
	assert_int_equal(ssh_shell_quote("~bob/x", true, out, sizeof(out)), 0);
	assert_string_equal(out, "~bob/'x'");
	assert_int_equal(ssh_shell_quote("~", true, out, sizeof(out)), 0);
	assert_string_equal(out, "~");
	/* no shell word may follow the ~ unquoted */
	assert_int_equal(ssh_shell_quote("~$(id)/x", true, out, sizeof(out)),
			 0);
	assert_string_equal(out, "'~$(id)/x'");
	assert_int_equal(ssh_shell_quote("~/x", false, out, sizeof(out)), 0);
	assert_string_equal(out, "'~/x'");
	assert_int_equal(ssh_shell_quote("", true, out, sizeof(out)), 0);
	assert_string_equal(out, "''");
	assert_int_equal(ssh_shell_quote("abcdef", false, out, 9), 0);
	assert_int_equal(ssh_shell_quote("abcdefg", false, out, 9),
			 -ENAMETOOLONG);
}

static void command_split(void **state)
{
	char buf[128], *w[8];
	struct lr_err e = { 0 };

	(void)state;
	assert_int_equal(ssh_split_command("ssh -p 2222  -i 'my key'", w, 8,
					   buf, sizeof(buf), &e),
			 5);
	assert_string_equal(w[0], "ssh");
	assert_string_equal(w[2], "2222");
	assert_string_equal(w[4], "my key");
	assert_null(w[5]);
	assert_int_equal(ssh_split_command("ssh -o \"A=\"\"b\"\"\"", w, 8, buf,
					   sizeof(buf), &e),
			 3);
	assert_string_equal(w[2], "A=\"b\"");
	assert_int_equal(ssh_split_command("ssh 'open", w, 8, buf, sizeof(buf),
					   &e),
			 -EINVAL);
	assert_int_equal(ssh_split_command("   ", w, 8, buf, sizeof(buf), &e),
			 -EINVAL);
	assert_int_equal(ssh_split_command("a b c d e f g h i", w, 8, buf,
					   sizeof(buf), &e),
			 -E2BIG);
}

static void ssh_connection(void **state)
{
	char a[SSH_ADDR_MAX];
	struct lr_err e = { 0 };

	(void)state;
	assert_int_equal(ssh_conn_local_addr("198.18.0.1 51000 198.18.0.2 22",
					     a, sizeof(a), &e),
			 0);
	assert_string_equal(a, "198.18.0.2");
	assert_int_equal(ssh_conn_local_addr("2001:db8::1 5 2001:db8::2 22", a,
					     sizeof(a), &e),
			 0);
	assert_string_equal(a, "2001:db8::2");
	assert_int_equal(ssh_conn_local_addr(NULL, a, sizeof(a), &e), -EINVAL);
	assert_int_equal(ssh_conn_local_addr("1.2.3.4 5 6", a, sizeof(a), &e),
			 -EINVAL);
	assert_int_equal(ssh_conn_local_addr("1.2.3.4 5 host 22", a, sizeof(a),
					     &e),
			 -EINVAL);
}

/* A path below the server's root: "~" is the root, ".." is refused. */
static void root_paths(void **state)
{
	static const struct {
		const char *in, *out; /* out NULL: refused */
	} cases[] = {
		{ "dir/x", "dir/x" },
		{ "", "" },
		{ "~", "" },
		{ "~/", "" },
		{ "~/photos", "photos" },
		{ "~//x", "x" },
		{ "~x", NULL },
		{ "a/~/b", "a/~/b" },
		{ "..", NULL },
		{ "../escape", NULL },
		{ "a/../ok", NULL },
		{ "a/..", NULL },
		{ "~/../x", NULL },
		{ "a..b/c", "a..b/c" },
		{ ".../x", ".../x" },
	};
	struct lr_err e = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *p = cases[i].in;
		int r = remote_root_path(&p, &e);

		if (!cases[i].out) {
			assert_int_equal(r, -EINVAL);
			assert_true(strstr(e.msg, "may not leave its root") ||
				    strstr(e.msg, "~USER"));
			assert_ptr_equal(p, cases[i].in);
		} else {
			assert_int_equal(r, 0);
			assert_string_equal(p, cases[i].out);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(grammar_forms),
		cmocka_unit_test(root_paths),
		cmocka_unit_test(grammar_refusals),
		cmocka_unit_test(grammar_port_like_and_remote),
		cmocka_unit_test(boot_line_round_trip),
		cmocka_unit_test(boot_line_refusals),
		cmocka_unit_test(shell_quoting),
		cmocka_unit_test(command_split),
		cmocka_unit_test(ssh_connection),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
