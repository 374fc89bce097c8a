// SPDX-License-Identifier: MIT
/* Unit tests of err.[ch]: the caller's error struct and lr_strerror. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"

static void test_set_formats(void **state)
{
	struct lr_err e;

	(void)state;
	memset(&e, 0x55, sizeof(e));
	assert_int_equal(lr_err_set(&e, -ECONNREFUSED, "connect %s:%d",
				    "198.18.0.2", 7350),
			 -ECONNREFUSED);
	assert_int_equal(e.code, -ECONNREFUSED);
	assert_string_equal(e.msg, "connect 198.18.0.2:7350");
}

static void test_setc_appends_description(void **state)
{
	struct lr_err e;

	(void)state;
	assert_int_equal(lr_err_setc(&e, -ECONNREFUSED, "connect %s:%d",
				     "198.18.0.2", 7350),
			 -ECONNREFUSED);
	assert_int_equal(e.code, -ECONNREFUSED);
	assert_string_equal(e.msg, "connect 198.18.0.2:7350: "
				   "Connection refused");
	assert_int_equal(lr_err_setc(&e, LR_EBADMSG, "%s from %s",
				     "TEST_REQUEST", "peer"),
			 LR_EBADMSG);
	assert_int_equal(e.code, LR_EBADMSG);
	assert_string_equal(e.msg, "TEST_REQUEST from peer: "
				   "malformed message");
	/* a positive errno is described the same way */
	lr_err_setc(&e, ENOENT, "open %s", "x");
	assert_string_equal(e.msg, "open x: No such file or directory");
}

static void test_set_overwrites(void **state)
{
	struct lr_err e;

	(void)state;
	lr_err_setc(&e, -EINVAL, "%s", "first, a long message");
	lr_err_set(&e, LR_ETIMEOUT, "%s", "second");
	assert_int_equal(e.code, LR_ETIMEOUT);
	assert_string_equal(e.msg, "second");
}

static void test_set_truncates(void **state)
{
	char big[LR_ERR_MSG * 2];
	struct lr_err e;

	(void)state;
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memset(&e, 0x55, sizeof(e));
	lr_err_set(&e, -EIO, "%s", big);
	assert_int_equal(strlen(e.msg), LR_ERR_MSG - 1);
	assert_memory_equal(e.msg, big, LR_ERR_MSG - 1);

	/* too long for any description: cut, still terminated */
	memset(&e, 0x55, sizeof(e));
	lr_err_setc(&e, -EIO, "%s", big);
	assert_int_equal(e.code, -EIO);
	assert_int_equal(strlen(e.msg), LR_ERR_MSG - 1);
	assert_memory_equal(e.msg, big, LR_ERR_MSG - 1);
}

/* A message that leaves room for part of the description. */
static void test_setc_truncates_description(void **state)
{
	char head[LR_ERR_MSG - 6];
	char want[LR_ERR_MSG], full[LR_ERR_MSG];
	struct lr_err e;

	(void)state;
	memset(head, 'b', sizeof(head) - 1);
	head[sizeof(head) - 1] = '\0';
	lr_err_setc(&e, LR_EBADMSG, "%s", head);
	snprintf(want, sizeof(want), "%s: malformed message", head);
	assert_int_equal(strlen(e.msg), LR_ERR_MSG - 1);
	assert_string_equal(e.msg, want);
	assert_memory_equal(e.msg + sizeof(head) - 1, ": mal", 5);

	/* exactly full: nothing of the description fits */
	memset(full, 'c', sizeof(full) - 1);
	full[sizeof(full) - 1] = '\0';
	lr_err_setc(&e, LR_EBADMSG, "%s", full);
	assert_string_equal(e.msg, full);
}

static void test_null_err(void **state)
{
	(void)state;
	assert_int_equal(lr_err_set(NULL, -ENOMEM, "x %d", 1), -ENOMEM);
	assert_int_equal(lr_err_setc(NULL, LR_EPEER, "y %s", "z"), LR_EPEER);
	assert_int_equal(lr_err_set(NULL, 0, "%s", "ok"), 0);
}

static void test_strerror_lr_codes(void **state)
{
	static const struct {
		int code;
		const char *text;
	} tab[] = {
		{ LR_EBUSY, "server busy" },
		{ LR_EVERSION, "incompatible protocol version" },
		{ LR_EPEER, "error reported by peer" },
		{ LR_EBADMSG, "malformed message" },
		{ LR_ETOOBIG, "message too long" },
		{ LR_ENEEDMORE, "incomplete message" },
		{ LR_ETIMEOUT, "timed out" },
		{ LR_ECLOSED, "connection closed by peer" },
		{ LR_ENOTLINERATE,
		  "peer does not speak the linerate protocol" },
		{ LR_EAUTH, "authentication failed" },
		{ LR_ETRUNC, "stream cut short (no end record)" },
		{ LR_ETAMPER, "the connection was tampered with (bytes changed "
			      "in transit)" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		assert_string_equal(lr_strerror(tab[i].code), tab[i].text);
		/* either sign */
		assert_string_equal(lr_strerror(-tab[i].code), tab[i].text);
	}
}

static void test_strerror_errno(void **state)
{
	(void)state;
	assert_string_equal(lr_strerror(-ENOENT), "No such file or directory");
	assert_string_equal(lr_strerror(ENOENT), "No such file or directory");
	assert_string_equal(lr_strerror(-ECONNREFUSED), "Connection refused");
	assert_string_equal(lr_strerror(-ETIMEDOUT), "Connection timed out");
	assert_string_equal(lr_strerror(-ENOBUFS), "No buffer space available");
	assert_string_equal(lr_strerror(-ERANGE),
			    "Numerical result out of range");
	assert_string_equal(lr_strerror(0), "Success");
}

static void test_strerror_unknown(void **state)
{
	(void)state;
	assert_string_equal(lr_strerror(LR_EPROTO_BASE), "unknown error");
	assert_string_equal(lr_strerror(-9999), "unknown error");
	assert_string_equal(lr_strerror(-10999), "unknown error");
	assert_string_equal(lr_strerror(INT_MAX), "unknown error");
}

/* lr_strerror negates its argument: INT_MIN overflows (UBSan reports it). */
static void test_strerror_int_min(void **state)
{
	(void)state;
	assert_string_equal(lr_strerror(INT_MIN), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_formats),
		cmocka_unit_test(test_setc_appends_description),
		cmocka_unit_test(test_set_overwrites),
		cmocka_unit_test(test_set_truncates),
		cmocka_unit_test(test_setc_truncates_description),
		cmocka_unit_test(test_null_err),
		cmocka_unit_test(test_strerror_lr_codes),
		cmocka_unit_test(test_strerror_errno),
		cmocka_unit_test(test_strerror_unknown),
		cmocka_unit_test(test_strerror_int_min),
	};
	return cmocka_run_group_tests_name("err", tests, NULL, NULL);
}
