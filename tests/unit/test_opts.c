// SPDX-License-Identifier: MIT
/*
 * Unit tests of opts_common.[ch]: the table of options the network
 * subcommands share. A command gets only the ones it takes, with its
 * bounds, and its own options reach it untouched.
 */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "core/cipher.h"
#include "opts.h"
#include "opts_common.h"

enum { OWN_JSON = 256 };

static const struct option own[] = {
	{ "time", required_argument, NULL, 't' },
	{ "json", no_argument, NULL, OWN_JSON },
	{ NULL, 0, NULL, 0 },
};

/* The command's own options: -t and --json are counted in *ctx, --help
 * is 1, anything else a mistake. */
static int own_fn(int c, char **argv, void *ctx, struct lr_err *err)
{
	int *nown = ctx;

	if (c == 't' || c == OWN_JSON) {
		(*nown)++;
		return 0;
	}
	if (c == 'h')
		return 1;
	return opts_getopt_error(c, argv, err);
}

/* Parse argv with spec; own options are counted in *nown. */
static int parse(const struct opts_common_spec *spec, int argc, char **argv,
		 struct opts_common *o, int *nown, struct lr_err *err)
{
	*nown = 0;
	return opts_parse(spec, "t:h", own, own_fn, nown, argc, argv, o, err);
}

static const struct opts_common_spec client = {
	.take = OPTS_PORT | OPTS_PARALLEL | OPTS_FAMILY | OPTS_BIND |
		OPTS_TOKEN | OPTS_CIPHER,
	.min_port = 1,
	.max_streams = 16,
};

static const struct opts_common_spec server = {
	.take = OPTS_PORT | OPTS_FAMILY | OPTS_BIND | OPTS_TOKEN,
	.min_port = 0,
};

static void test_common_and_own(void **state)
{
	char *argv[] = { "x",	       "-p",	       "9000", "--parallel=3",
			 "-6",	       "-t",	       "2",    "--bind",
			 "198.18.0.1", "--token-file", "tf",   "--json",
			 "--cipher",   "none",	       "HOST", NULL };
	struct lr_err err = { 0 };
	struct opts_common o;
	uint8_t wish;
	int nown;

	(void)state;
	assert_int_equal(parse(&client, 15, argv, &o, &nown, &err), 0);
	assert_true(o.have_port);
	assert_int_equal(o.port, 9000);
	assert_int_equal(o.streams, 3);
	assert_int_equal(o.family, AF_INET6);
	assert_string_equal(o.bind_addr, "198.18.0.1");
	assert_string_equal(o.token_file, "tf");
	assert_int_equal(nown, 2);
	assert_int_equal(optind, 14); /* the operand HOST is left */
	assert_int_equal(opts_cipher_wish(&o, true, &wish, &err), 0);
	assert_int_equal(wish, CRYPTO_NONE);
	assert_int_equal(opts_cipher_wish(&o, false, &wish, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "--cipher 'none'"));
}

static void test_nothing_given(void **state)
{
	char *argv[] = { "x", "HOST", NULL };
	struct lr_err err = { 0 };
	struct opts_common o;
	uint8_t wish = 0;
	int nown;

	(void)state;
	assert_int_equal(parse(&client, 2, argv, &o, &nown, &err), 0);
	assert_false(o.have_port);
	assert_int_equal(o.streams, 0);
	assert_int_equal(o.family, AF_UNSPEC);
	assert_null(o.bind_addr);
	assert_null(o.token_file);
	assert_int_equal(opts_cipher_wish(&o, true, &wish, &err), 0);
	assert_int_equal(wish, CRYPTO_CIPHER_AUTO);
}

/* The bounds are the command's: a client refuses port 0 and -P above its
 * maximum, a server takes port 0 (any free port). */
static void test_bounds(void **state)
{
	char *p0[] = { "x", "-p", "0", NULL };
	char *p17[] = { "x", "-P", "17", NULL };
	char *p16[] = { "x", "-P", "16", NULL };
	struct lr_err err = { 0 };
	struct opts_common o;
	int nown;

	(void)state;
	assert_int_equal(parse(&client, 3, p0, &o, &nown, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "-p '0' is out of range"));
	assert_int_equal(parse(&server, 3, p0, &o, &nown, &err), 0);
	assert_true(o.have_port);
	assert_int_equal(o.port, 0);
	assert_int_equal(parse(&client, 3, p17, &o, &nown, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "-P '17'"));
	assert_int_equal(parse(&client, 3, p16, &o, &nown, &err), 0);
	assert_int_equal(o.streams, 16);
}

/* An option the command does not take is unknown to it, by either
 * name. */
static void test_not_taken(void **state)
{
	char *shrt[] = { "x", "-P", "2", NULL };
	char *lng[] = { "x", "--cipher", "none", NULL };
	char *miss[] = { "x", "--port", NULL };
	struct lr_err err = { 0 };
	struct opts_common o;
	int nown;

	(void)state;
	assert_int_equal(parse(&server, 3, shrt, &o, &nown, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown option '-P'"));
	assert_int_equal(parse(&server, 3, lng, &o, &nown, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown option '--cipher'"));
	assert_int_equal(parse(&server, 2, miss, &o, &nown, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'--port' needs a value"));
}

/* --help stops the parse with 1; a second parse starts afresh. */
static void test_help_and_again(void **state)
{
	char *help[] = { "x", "-p", "1", "-h", "-6", NULL };
	char *again[] = { "x", "HOST", NULL };
	struct lr_err err = { 0 };
	struct opts_common o;
	int nown;

	(void)state;
	assert_int_equal(parse(&client, 5, help, &o, &nown, &err), 1);
	assert_int_equal(parse(&client, 2, again, &o, &nown, &err), 0);
	assert_false(o.have_port);
	assert_int_equal(optind, 1);
}

static void test_cipher_names(void **state)
{
	struct opts_common o = { 0 };
	struct lr_err err = { 0 };
	uint8_t wish;

	(void)state;
	o.cipher = "auto";
	assert_int_equal(opts_cipher_wish(&o, false, &wish, &err), 0);
	assert_int_equal(wish, CRYPTO_CIPHER_AUTO);
	o.cipher = "chacha20-poly1305";
	assert_int_equal(opts_cipher_wish(&o, false, &wish, &err), 0);
	assert_int_equal(wish, CRYPTO_CHACHA20POLY1305);
	o.cipher = "rot13";
	assert_int_equal(opts_cipher_wish(&o, true, &wish, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "or none"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_common_and_own),
		cmocka_unit_test(test_nothing_given),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_not_taken),
		cmocka_unit_test(test_help_and_again),
		cmocka_unit_test(test_cipher_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
