// SPDX-License-Identifier: MIT
/*
 * Unit tests of gen.[ch]: the test-data generator. Statistical bounds are
 * loose on purpose: they catch a broken generator, not a slightly biased
 * one.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "gen.h"

#define SAMPLE (4u << 20)

static const uint8_t seed_a[GEN_SEED_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8 };
static const uint8_t seed_b[GEN_SEED_LEN] = { 1, 2, 3, 4, 5, 6, 7, 9 };

static uint8_t *sample(const uint8_t *seed, unsigned int pct, size_t len)
{
	struct gen *g = NULL;
	uint8_t *buf = malloc(len);

	assert_non_null(buf);
	assert_int_equal(gen_new(seed, pct, &g), 0);
	assert_non_null(g);
	gen_fill(g, buf, len);
	gen_free(g);
	return buf;
}

static void test_same_seed_same_stream(void **state)
{
	uint8_t *a = sample(seed_a, 0, SAMPLE);
	uint8_t *b = sample(seed_a, 0, SAMPLE);

	(void)state;
	assert_memory_equal(a, b, SAMPLE);
	free(a);
	free(b);
}

/* The stream does not depend on how it is cut into gen_fill calls. */
static void test_cut_does_not_matter(void **state)
{
	static const size_t cuts[] = { 1, 7, 4095, 65536, 65537, 3, 200000 };
	uint8_t *a = sample(seed_a, 30, SAMPLE);
	uint8_t *b = malloc(SAMPLE);
	struct gen *g;
	size_t off = 0, i = 0, n;

	(void)state;
	assert_non_null(b);
	assert_int_equal(gen_new(seed_a, 30, &g), 0);
	while (off < SAMPLE) {
		n = cuts[i++ % (sizeof(cuts) / sizeof(cuts[0]))];
		if (n > SAMPLE - off)
			n = SAMPLE - off;
		gen_fill(g, b + off, n);
		off += n;
	}
	gen_free(g);
	assert_memory_equal(a, b, SAMPLE);
	free(a);
	free(b);
}

static void test_seeds_differ(void **state)
{
	uint8_t *a = sample(seed_a, 0, 4096);
	uint8_t *b = sample(seed_b, 0, 4096);
	uint8_t *c = sample(NULL, 0, 4096);
	uint8_t *d = sample(NULL, 0, 4096);
	size_t i, same = 0;

	(void)state;
	for (i = 0; i < 4096; i++)
		same += a[i] == b[i];
	assert_true(same < 64); /* about 16 by chance */
	assert_memory_not_equal(a, b, 4096);
	assert_memory_not_equal(a, c, 4096);
	assert_memory_not_equal(c, d, 4096);
	free(a);
	free(b);
	free(c);
	free(d);
}

static void test_bad_pct(void **state)
{
	struct gen *g = (struct gen *)0x1;

	(void)state;
	assert_int_equal(gen_new(seed_a, 101, &g), -EINVAL);
	assert_true(g == (struct gen *)0x1); /* untouched on failure */
	gen_free(NULL);
}

/* gen_write writes exactly size bytes, the same bytes as gen_fill, and
 * reports progress that ends at size. */
struct prog {
	uint64_t last;
	unsigned int calls;
};

static void on_progress(uint64_t done, void *arg)
{
	struct prog *p = arg;

	assert_true(done > p->last);
	p->last = done;
	p->calls++;
}

static void test_write_exact_sizes(void **state)
{
	static const uint64_t sizes[] = { 0, 1, 4095, (1u << 20) + 3,
					  2 * GEN_CHUNK + 5 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct prog p = { 0 };
		struct stat st;
		struct gen *g;
		uint8_t *want, *got;
		int fd = memfd_create("test_gen", MFD_CLOEXEC);

		assert_true(fd >= 0);
		assert_int_equal(gen_new(seed_a, 0, &g), 0);
		assert_int_equal(gen_write(g, fd, sizes[i], on_progress, &p),
				 0);
		gen_free(g);
		assert_int_equal(fstat(fd, &st), 0);
		assert_int_equal((uint64_t)st.st_size, sizes[i]);
		assert_true(p.last == sizes[i]);
		assert_int_equal(p.calls,
				 (sizes[i] + GEN_CHUNK - 1) / GEN_CHUNK);
		want = sample(seed_a, 0, sizes[i] + 1);
		got = malloc(sizes[i] + 1);
		assert_non_null(got);
		assert_int_equal(pread(fd, got, sizes[i], 0),
				 (ssize_t)sizes[i]);
		assert_memory_equal(want, got, sizes[i]);
		free(want);
		free(got);
		close(fd);
	}
}

static void test_write_bad_fd(void **state)
{
	struct gen *g;

	(void)state;
	assert_int_equal(gen_new(seed_a, 0, &g), 0);
	assert_int_equal(gen_write(g, -1, 10, NULL, NULL), -EBADF);
	assert_int_equal(gen_write(g, -1, 0, NULL, NULL), 0);
	gen_free(g);
}

/* pct 0: byte values uniform. Chi-square with 255 degrees of freedom has
 * mean 255 and deviation 22.6; 400 is over six deviations. */
static void test_uniform_histogram(void **state)
{
	uint8_t *a = sample(seed_a, 0, SAMPLE);
	uint64_t hist[256] = { 0 };
	double expect = SAMPLE / 256.0, chi2 = 0;
	size_t i;

	(void)state;
	for (i = 0; i < SAMPLE; i++)
		hist[a[i]]++;
	for (i = 0; i < 256; i++)
		chi2 += (hist[i] - expect) * (hist[i] - expect) / expect;
	if (chi2 >= 400)
		print_error("chi2 = %.1f\n", chi2);
	assert_true(chi2 < 400);
	free(a);
}

static size_t zeros(const uint8_t *p, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		n += !p[i];
	return n;
}

/* pct 50: every block about half zeros (plus the 1/256 of the random half
 * that is zero by chance); pct 100: all zeros. */
static void test_compressible_blocks(void **state)
{
	uint8_t *a = sample(seed_a, 50, SAMPLE);
	uint8_t *b = sample(seed_a, 100, GEN_BLOCK * 2);
	size_t blk, z;

	(void)state;
	for (blk = 0; blk < SAMPLE / GEN_BLOCK; blk++) {
		z = zeros(a + blk * GEN_BLOCK, GEN_BLOCK);
		assert_true(z >= GEN_BLOCK / 2);
		assert_true(z <= GEN_BLOCK / 2 + GEN_BLOCK / 64);
	}
	assert_int_equal(zeros(b, GEN_BLOCK * 2), GEN_BLOCK * 2);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_seed_same_stream),
		cmocka_unit_test(test_cut_does_not_matter),
		cmocka_unit_test(test_seeds_differ),
		cmocka_unit_test(test_bad_pct),
		cmocka_unit_test(test_write_exact_sizes),
		cmocka_unit_test(test_write_bad_fd),
		cmocka_unit_test(test_uniform_histogram),
		cmocka_unit_test(test_compressible_blocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
