// SPDX-License-Identifier: MIT
/*
 * Unit tests of units.[ch]: the one checked number parser and the
 * iperf3-style formatter.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "units.h"

#define SENTINEL 0xdeadbeefcafef00dull

typedef int (*parse_fn)(const char *, uint64_t, uint64_t, uint64_t *);

static void accept_one(parse_fn fn, const char *s, uint64_t want)
{
	uint64_t out = SENTINEL;
	int r = fn(s, 0, UINT64_MAX, &out);

	if (r || out != want)
		print_error("\"%s\": r=%d out=%llu want %llu\n", s, r,
			    (unsigned long long)out, (unsigned long long)want);
	assert_int_equal(r, 0);
	assert_true(out == want);
}

/* A failure returns want_err and leaves *out alone. */
static void reject_one(parse_fn fn, const char *s, uint64_t min, uint64_t max,
		       int want_err)
{
	uint64_t out = SENTINEL;
	int r = fn(s, min, max, &out);

	if (r != want_err)
		print_error("\"%s\": r=%d want %d\n", s ? s : "(null)", r,
			    want_err);
	assert_int_equal(r, want_err);
	assert_true(out == SENTINEL);
}

/* Text that is no number of any kind, for every parser. */
/* clang-format off */
static const char *const garbage[] = {
	"", "-1", "+1", " 1", "1 ", "\t1", "1x", "nan", "NaN", "inf",
	"Infinity", "0x10", "1e3", "1E3", ".", "-", "1,5", "1..5", "1.5.",
	"one", "1\n", "K", "M",
};
/* clang-format on */

static void test_garbage_rejected(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		reject_one(units_parse_bytes, garbage[i], 0, UINT64_MAX,
			   -EINVAL);
		reject_one(units_parse_rate, garbage[i], 0, UINT64_MAX,
			   -EINVAL);
		reject_one(units_parse_ms, garbage[i], 0, UINT64_MAX, -EINVAL);
		reject_one(units_parse_msec, garbage[i], 0, UINT64_MAX,
			   -EINVAL);
		reject_one(units_parse_age, garbage[i], 0, UINT64_MAX, -EINVAL);
		reject_one(units_parse_uint, garbage[i], 0, UINT64_MAX,
			   -EINVAL);
	}
	reject_one(units_parse_bytes, NULL, 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_rate, NULL, 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_ms, NULL, 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_msec, NULL, 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_uint, NULL, 0, UINT64_MAX, -EINVAL);
}

static void test_bytes_accepted(void **state)
{
	(void)state;
	accept_one(units_parse_bytes, "0", 0);
	accept_one(units_parse_bytes, "65536", 65536);
	accept_one(units_parse_bytes, "10M", 10485760);
	accept_one(units_parse_bytes, "10m", 10485760);
	accept_one(units_parse_bytes, "10MB", 10485760);
	accept_one(units_parse_bytes, "10MiB", 10485760);
	accept_one(units_parse_bytes, "1G", 1073741824);
	accept_one(units_parse_bytes, "1.5K", 1536);
	accept_one(units_parse_bytes, "128K", 131072);
	accept_one(units_parse_bytes, "128KiB", 131072);
	accept_one(units_parse_bytes, "128kib", 131072);
	accept_one(units_parse_bytes, "128KB", 131072);
	accept_one(units_parse_bytes, "1.5G", 1610612736);
	accept_one(units_parse_bytes, "2T", 2199023255552ull);
	accept_one(units_parse_bytes, "100B", 100);
	accept_one(units_parse_bytes, "0.5K", 512);
	/* 2^64 - 2^40, the largest whole number of TBytes */
	accept_one(units_parse_bytes, "16777215T", 18446742974197923840ull);
}

static void test_bytes_rejected(void **state)
{
	(void)state;
	reject_one(units_parse_bytes, "10X", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_bytes, "10iB", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_bytes, "10KiBs", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_bytes, "10 M", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_bytes, "10MM", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_bytes, "1Gbit", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_bytes, "99999999999999999999", 0, UINT64_MAX,
		   -ERANGE);
	reject_one(units_parse_bytes, "17179869184G", 0, UINT64_MAX, -ERANGE);
	reject_one(units_parse_bytes, "16777216T", 0, UINT64_MAX, -ERANGE);
	reject_one(units_parse_bytes, "99999999999T", 0, UINT64_MAX, -ERANGE);
	reject_one(units_parse_bytes, "1K", 0, 1023, -ERANGE);
	reject_one(units_parse_bytes, "1K", 1025, UINT64_MAX, -ERANGE);
	reject_one(units_parse_bytes, "0", 1, 10, -ERANGE);
	accept_one(units_parse_bytes, "1K", 1024);
}

static void test_bytes_bounds_inclusive(void **state)
{
	uint64_t out = 0;

	(void)state;
	assert_int_equal(units_parse_bytes("1K", 1024, 1024, &out), 0);
	assert_true(out == 1024);
	assert_int_equal(units_parse_bytes("16M", 1, 16u << 20, &out), 0);
	assert_true(out == 16u << 20);
}

static void test_rate_accepted(void **state)
{
	(void)state;
	accept_one(units_parse_rate, "0", 0);
	accept_one(units_parse_rate, "500", 500);
	accept_one(units_parse_rate, "500m", 500000000);
	accept_one(units_parse_rate, "500M", 500000000);
	accept_one(units_parse_rate, "940m", 940000000);
	accept_one(units_parse_rate, "1g", 1000000000);
	accept_one(units_parse_rate, "1G", 1000000000);
	accept_one(units_parse_rate, "1gbit", 1000000000);
	accept_one(units_parse_rate, "1Gbit", 1000000000);
	accept_one(units_parse_rate, "1Gbits", 1000000000);
	accept_one(units_parse_rate, "1Gbits/s", 1000000000);
	accept_one(units_parse_rate, "2.5Gbit/s", 2500000000ull);
	accept_one(units_parse_rate, "100Mbps", 100000000);
	accept_one(units_parse_rate, "100Mb", 100000000);
	accept_one(units_parse_rate, "1.5k", 1500);
	accept_one(units_parse_rate, "10K", 10000);
	accept_one(units_parse_rate, "1T", 1000000000000ull);
	accept_one(units_parse_rate, "64bit", 64);
}

static void test_rate_rejected(void **state)
{
	(void)state;
	/* "B" is bytes: a rate in bytes must not pass for one in bits */
	reject_one(units_parse_rate, "100MB", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_rate, "100MiB", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_rate, "1gbit/", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_rate, "1 gbit", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_rate, "1gbitx", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_rate, "1x", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_rate, "99999999999999999999", 0, UINT64_MAX,
		   -ERANGE);
	reject_one(units_parse_rate, "99999999999T", 0, UINT64_MAX, -ERANGE);
	reject_one(units_parse_rate, "1g", 0, 999999999, -ERANGE);
	reject_one(units_parse_rate, "1k", 1001, UINT64_MAX, -ERANGE);
}

static void test_ms(void **state)
{
	(void)state;
	accept_one(units_parse_ms, "10", 10000);
	accept_one(units_parse_ms, "10s", 10000);
	accept_one(units_parse_ms, "0.5", 500);
	accept_one(units_parse_ms, "1.25", 1250);
	accept_one(units_parse_ms, "0", 0);
	accept_one(units_parse_ms, "86400", 86400000);
	accept_one(units_parse_ms, "10ms", 10);
	accept_one(units_parse_ms, "500ms", 500);
	accept_one(units_parse_ms, "0.0004", 1); /* a moment is not 0 */
	accept_one(units_parse_msec, "0.4", 1);
	accept_one(units_parse_ms, "0.5ms", 1);	   /* rounded */
	accept_one(units_parse_ms, "10m", 600000); /* minutes, not mega */
	accept_one(units_parse_ms, "1.5m", 90000);
	accept_one(units_parse_ms, "2min", 120000);
	accept_one(units_parse_ms, "2h", 7200000);
	accept_one(units_parse_ms, "0.25h", 900000);
	accept_one(units_parse_ms, "1d", 86400000);
	accept_one(units_parse_ms, "1w", 604800000);
	accept_one(units_parse_ms, "0s", 0);
	reject_one(units_parse_ms, "10ss", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_ms, "5mss", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_ms, "10S", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_ms, "10M", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_ms, "10H", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_ms, "10 s", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_ms, "10sec", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_ms, "1h30m", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_ms, "s", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_ms, "-1s", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_ms, "1e3ms", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_ms, "1m", 0, 59999, -ERANGE);
	reject_one(units_parse_ms, "9ms", 10, 20, -ERANGE);
	reject_one(units_parse_ms, "99999999999999999w", 0, UINT64_MAX,
		   -ERANGE);
	reject_one(units_parse_ms, "18446744073709552s", 0, UINT64_MAX,
		   -ERANGE);
	reject_one(units_parse_ms, "0.5", 1000, 60000, -ERANGE);
	reject_one(units_parse_ms, "61", 1000, 60000, -ERANGE);
	reject_one(units_parse_ms, "99999999999999999999", 0, UINT64_MAX,
		   -ERANGE);
}

/* iperf3's --connect-timeout unit: a bare number is milliseconds. */
static void test_msec(void **state)
{
	(void)state;
	accept_one(units_parse_msec, "1000", 1000);
	accept_one(units_parse_msec, "1000ms", 1000);
	accept_one(units_parse_msec, "5s", 5000);
	accept_one(units_parse_msec, "0.2s", 200);
	accept_one(units_parse_msec, "2.5", 3); /* rounded */
	accept_one(units_parse_msec, "5m", 300000);
	accept_one(units_parse_msec, "1h", 3600000);
	accept_one(units_parse_msec, "1.5min", 90000);
	accept_one(units_parse_msec, "18446744073709551615",
		   18446744073709551615ull);
	reject_one(units_parse_msec, "18446744073709551616", 0, UINT64_MAX,
		   -ERANGE);
	reject_one(units_parse_msec, "18446744073709552s", 0, UINT64_MAX,
		   -ERANGE);
	reject_one(units_parse_msec, "5M", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_msec, "5sec", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_msec, "ms", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_msec, "10mss", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_msec, "99", 100, 3600000, -ERANGE);
	reject_one(units_parse_msec, "3601s", 100, 3600000, -ERANGE);
}

static void test_uint(void **state)
{
	(void)state;
	accept_one(units_parse_uint, "0", 0);
	accept_one(units_parse_uint, "007", 7);
	accept_one(units_parse_uint, "65535", 65535);
	accept_one(units_parse_uint, "18446744073709551615", UINT64_MAX);
	reject_one(units_parse_uint, "18446744073709551616", 0, UINT64_MAX,
		   -ERANGE);
	reject_one(units_parse_uint, "99999999999999999999", 0, UINT64_MAX,
		   -ERANGE);
	reject_one(units_parse_uint, "1.0", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_uint, "1K", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_uint, "0", 1, 128, -ERANGE);
	reject_one(units_parse_uint, "129", 1, 128, -ERANGE);
	accept_one(units_parse_uint, "128", 128);
}

/*
 * A whole number of bytes is exact. parse_decimal accumulates in a double,
 * so integers above 2^53 lose their low bits, and the [min, max] check is
 * done on doubles too: see the report.
 */
static void test_bytes_exact_above_2_53(void **state)
{
	uint64_t out = SENTINEL;
	int r;

	(void)state;
	accept_one(units_parse_bytes, "9007199254740993", 9007199254740993ull);
	accept_one(units_parse_bytes, "18446744073709551615", UINT64_MAX);
	/* a value below min must not pass because min rounds down */
	r = units_parse_bytes("9007199254740993", 9007199254740994ull,
			      UINT64_MAX, &out);
	assert_int_equal(r, -ERANGE);
	assert_true(out == SENTINEL);
}

/* ---- formatting ---- */

static void fmt_bytes_is(double v, const char *want)
{
	char buf[32];

	assert_ptr_equal(units_fmt_bytes(buf, sizeof(buf), v), buf);
	assert_string_equal(buf, want);
}

static void fmt_rate_is(double v, const char *want)
{
	char buf[32];

	assert_ptr_equal(units_fmt_rate(buf, sizeof(buf), v), buf);
	assert_string_equal(buf, want);
}

static void fmt_rate_as_is(double v, char f, const char *want)
{
	char buf[32];

	assert_ptr_equal(units_fmt_rate_as(buf, sizeof(buf), v, f), buf);
	assert_string_equal(buf, want);
}

/* iperf3 -f: fixed units; lower case bits (1000s), upper case bytes
 * (1024s): iperf3 printed "2573 MBytes/sec" for 2.51 GBytes in 1 s. */
static void test_fmt_rate_as(void **state)
{
	(void)state;
	fmt_rate_as_is(941e6, 0, " 941 Mbits/sec");
	fmt_rate_as_is(941e6, 'm', " 941 Mbits/sec");
	fmt_rate_as_is(941e6, 'k', "941000 Kbits/sec");
	fmt_rate_as_is(941e6, 'g', "0.94 Gbits/sec");
	fmt_rate_as_is(941e6, 't', "0.00 Tbits/sec");
	fmt_rate_as_is(8.0 * 1048576 * 112, 'M', " 112 MBytes/sec");
	fmt_rate_as_is(8.0 * 1024 * 5, 'K', "5.00 KBytes/sec");
	fmt_rate_as_is(8.0 * 1073741824 * 2.5, 'G', "2.50 GBytes/sec");
	fmt_rate_as_is(8.0 * 1099511627776.0 * 12, 'T', "12.0 TBytes/sec");
	fmt_rate_as_is(-1, 'M', "0.00 MBytes/sec");
	fmt_rate_as_is(1e9, 'x', "1.00 Gbits/sec"); /* not -f's: adaptive */
}

/*
 * iperf3's unit_snprintf: "%4.2f" below 9.995, "%4.1f" below 99.95,
 * "%4.0f" above, so a number takes at least four characters and gets a
 * leading space when it has three digits (" 941 Mbits/sec"). Bytes step
 * by 1024 and stay in a unit until 1024 ("1014 KBytes").
 */
static void test_fmt_bytes(void **state)
{
	(void)state;
	fmt_bytes_is(0, "0.00 Bytes");
	fmt_bytes_is(1, "1.00 Bytes");
	fmt_bytes_is(10, "10.0 Bytes");
	fmt_bytes_is(100, " 100 Bytes");
	fmt_bytes_is(1023, "1023 Bytes");
	fmt_bytes_is(1024, "1.00 KBytes");
	fmt_bytes_is(1014.0 * 1024, "1014 KBytes");
	fmt_bytes_is(902.0 * 1024, " 902 KBytes");
	fmt_bytes_is(138.0 * 1024 * 1024, " 138 MBytes");
	fmt_bytes_is(112.0 * 1024 * 1024, " 112 MBytes");
	fmt_bytes_is(1.32 * 1024 * 1024 * 1024, "1.32 GBytes");
	fmt_bytes_is(10.9 * 1024 * 1024 * 1024, "10.9 GBytes");
	fmt_bytes_is(2.0 * 1024 * 1024 * 1024 * 1024, "2.00 TBytes");
	/* TBytes is the last unit */
	fmt_bytes_is(2048.0 * 1024 * 1024 * 1024 * 1024, "2048 TBytes");
}

static void test_fmt_rate(void **state)
{
	(void)state;
	fmt_rate_is(0, "0.00 bits/sec");
	fmt_rate_is(1.13e9, "1.13 Gbits/sec");
	fmt_rate_is(941e6, " 941 Mbits/sec");
	fmt_rate_is(941.48e6, " 941 Mbits/sec");
	fmt_rate_is(14.7e9, "14.7 Gbits/sec");
	fmt_rate_is(17.2e9, "17.2 Gbits/sec");
	fmt_rate_is(925e6, " 925 Mbits/sec");
	fmt_rate_is(1500, "1.50 Kbits/sec");
	fmt_rate_is(999, " 999 bits/sec");
	fmt_rate_is(1000, "1.00 Kbits/sec");
	fmt_rate_is(3e12, "3.00 Tbits/sec");
}

/* The switch points where rounding would add a digit. */
static void test_fmt_rounding_edges(void **state)
{
	(void)state;
	fmt_rate_is(9.994e6, "9.99 Mbits/sec");
	fmt_rate_is(9.996e6, "10.0 Mbits/sec");
	fmt_rate_is(99.94e6, "99.9 Mbits/sec");
	fmt_rate_is(99.96e6, " 100 Mbits/sec");
	/* iperf3 prints 999.6 M as "1000 Mbits/sec", not "1.00 Gbits/sec" */
	fmt_rate_is(999.6e6, "1000 Mbits/sec");
	fmt_bytes_is(1023.6 * 1024, "1024 KBytes");
}

static void test_fmt_bad_input(void **state)
{
	(void)state;
	fmt_rate_is(NAN, "0.00 bits/sec");
	fmt_rate_is(INFINITY, "0.00 bits/sec");
	fmt_rate_is(-5e6, "0.00 bits/sec");
	fmt_bytes_is(-1, "0.00 Bytes");
	fmt_bytes_is(NAN, "0.00 Bytes");
}

static void test_fmt_truncates(void **state)
{
	char buf[8];

	(void)state;
	memset(buf, 'x', sizeof(buf));
	units_fmt_rate(buf, 5, 1.13e9);
	assert_string_equal(buf, "1.13");
	assert_int_equal(buf[5], 'x');
	units_fmt_bytes(buf, 1, 1e9);
	assert_string_equal(buf, "");
	units_fmt_bytes(buf, sizeof(buf), 138.0 * 1024 * 1024);
	assert_string_equal(buf, " 138 MB");
}

/* Ages: seconds by default, the durations' suffixes; no other suffix,
 * no sign; whole seconds. */
static void test_age(void **state)
{
	(void)state;
	accept_one(units_parse_age, "0", 0);
	accept_one(units_parse_age, "90", 90);
	accept_one(units_parse_age, "90s", 90);
	accept_one(units_parse_age, "30m", 1800);
	accept_one(units_parse_age, "12h", 43200);
	accept_one(units_parse_age, "7d", 604800);
	accept_one(units_parse_age, "2w", 1209600);
	accept_one(units_parse_age, "1.5h", 5400);
	accept_one(units_parse_age, "1m", 60);
	accept_one(units_parse_age, "1.5d", 129600);
	accept_one(units_parse_age, "1500ms", 2); /* rounded up: never */
	accept_one(units_parse_age, "1400ms", 2); /* shorter than asked */
	accept_one(units_parse_age, "1000ms", 1);
	accept_one(units_parse_age, "500ms", 1);
	accept_one(units_parse_age, "1ms", 1); /* not 0, which keeps */
	accept_one(units_parse_age, "0s", 0);
	reject_one(units_parse_age, "5mss", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_age, "7days", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_age, "1x", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_age, "-1d", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_age, "d", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_age, "", 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_age, NULL, 0, UINT64_MAX, -EINVAL);
	reject_one(units_parse_age, "2d", 0, 86400, -ERANGE);
	reject_one(units_parse_age, "99999999999999999999w", 0, UINT64_MAX,
		   -ERANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_garbage_rejected),
		cmocka_unit_test(test_bytes_accepted),
		cmocka_unit_test(test_bytes_rejected),
		cmocka_unit_test(test_bytes_bounds_inclusive),
		cmocka_unit_test(test_rate_accepted),
		cmocka_unit_test(test_rate_rejected),
		cmocka_unit_test(test_ms),
		cmocka_unit_test(test_msec),
		cmocka_unit_test(test_uint),
		cmocka_unit_test(test_age),
		cmocka_unit_test(test_fmt_bytes),
		cmocka_unit_test(test_fmt_rate),
		cmocka_unit_test(test_fmt_rate_as),
		cmocka_unit_test(test_fmt_rounding_edges),
		cmocka_unit_test(test_fmt_bad_input),
		cmocka_unit_test(test_fmt_truncates),
		cmocka_unit_test(test_bytes_exact_above_2_53),
	};
	return cmocka_run_group_tests_name("units", tests, NULL, NULL);
}
