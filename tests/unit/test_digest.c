// SPDX-License-Identifier: MIT
/*
 * Unit tests of digest.[ch]: the SSE2 and AVX2 builds agree with each
 * other and with libxxhash's own XXH3-128, digest_zeros equals a digest
 * of real zeros, and digest_file covers every input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <xxhash.h>

#include "digest.h"
#include "digest_impl.h"

/* libxxhash's shared build, the reference. */
static void ref_digest(const void *p, size_t n, uint8_t out[DIGEST_LEN])
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
	memcpy(out, c.digest, DIGEST_LEN);
}

/* Every implementation this CPU can run, the baseline first. */
static size_t impls(const struct digest_ops *o[2])
{
	o[0] = &digest_ops_base;
#ifdef DIGEST_HAVE_AVX2
	if (digest_avx2_usable()) {
		o[1] = &digest_ops_avx2;
		return 2;
	}
#endif
	return 1;
}

static void check_all(const void *p, size_t n)
{
	const struct digest_ops *o[2];
	uint8_t want[DIGEST_LEN], got[DIGEST_LEN];
	size_t i, k = impls(o);

	ref_digest(p, n, want);
	for (i = 0; i < k; i++) {
		memset(got, 0xa5, sizeof(got));
		o[i]->chunk(p, n, got);
		assert_memory_equal(got, want, DIGEST_LEN);
	}
	digest_chunk(p, n, got);
	assert_memory_equal(got, want, DIGEST_LEN);
}

static void test_empty_known_answer(void **state)
{
	/* XXH3-128 of "", canonical: high 64 bits first. */
	static const uint8_t want[DIGEST_LEN] = {
		0x99, 0xaa, 0x06, 0xd3, 0x01, 0x47, 0x98, 0xd8,
		0x60, 0x01, 0xc3, 0x24, 0x46, 0x8d, 0x49, 0x7f,
	};
	uint8_t got[DIGEST_LEN];

	(void)state;
	digest_chunk("", 0, got);
	assert_memory_equal(got, want, DIGEST_LEN);
	check_all("", 0);
}

static void test_short_strings(void **state)
{
	static const char s[] = "linerate moves bytes at line rate";
	char buf[300];
	size_t n;

	(void)state;
	check_all(s, sizeof(s) - 1);
	for (n = 0; n < sizeof(buf); n++)
		buf[n] = s[n % (sizeof(s) - 1)] ^ (char)(n / 33);
	/* Every length class of XXH3: 0, 1-3, 4-8, 9-16, 17-128, 129-240
	 * and the long path above. */
	for (n = 0; n <= sizeof(buf); n++)
		check_all(buf, n);
}

static void test_pattern_1mib(void **state)
{
	size_t n = 1u << 20, i;
	uint8_t *p = malloc(n + 7);
	uint32_t x = 0x12345678;

	(void)state;
	assert_non_null(p);
	for (i = 0; i < n + 7; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
	check_all(p, n);
	/* Unaligned start and odd lengths around the 1 KiB stripe block. */
	check_all(p + 3, n);
	check_all(p + 1, 1023);
	check_all(p + 1, 1025);
	check_all(p, 241);
	free(p);
}

static void test_impl_name(void **state)
{
	const char *name = digest_impl();

	(void)state;
	assert_string_equal(name, digest_avx2_usable() ? "avx2"
						       : digest_ops_base.name);
	/* The choice is made once. */
	assert_ptr_equal(digest_impl(), name);
}

static void test_zeros_match_chunk(void **state)
{
	static const size_t sizes[] = {
		0, 1, 65535, 65536, 65537, (3u << 20) + 5,
	};
	const struct digest_ops *o[2];
	size_t max = (3u << 20) + 5, i, j, k = impls(o);
	uint8_t *z = calloc(1, max);
	uint8_t want[DIGEST_LEN], got[DIGEST_LEN];

	(void)state;
	assert_non_null(z);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ref_digest(z, sizes[i], want);
		digest_zeros(sizes[i], got);
		assert_memory_equal(got, want, DIGEST_LEN);
		digest_chunk(z, sizes[i], got);
		assert_memory_equal(got, want, DIGEST_LEN);
		for (j = 0; j < k; j++) {
			o[j]->zeros(sizes[i], got);
			assert_memory_equal(got, want, DIGEST_LEN);
		}
	}
	free(z);
}

/* digest_file's definition, spelled out: one buffer, one XXH3-128. */
static void file_ref(uint64_t size, uint32_t chunk_size, uint32_t nchunks,
		     const uint8_t *digests, uint8_t out[DIGEST_LEN])
{
	size_t n = 16 + (size_t)nchunks * DIGEST_LEN, i;
	uint8_t *b = malloc(n);

	assert_non_null(b);
	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)(size >> (56 - 8 * i));
	for (i = 0; i < 4; i++) {
		b[8 + i] = (uint8_t)(chunk_size >> (24 - 8 * i));
		b[12 + i] = (uint8_t)(nchunks >> (24 - 8 * i));
	}
	if (nchunks)
		memcpy(b + 16, digests, (size_t)nchunks * DIGEST_LEN);
	ref_digest(b, n, out);
	free(b);
}

static void test_file_definition(void **state)
{
	uint8_t d[5 * DIGEST_LEN], want[DIGEST_LEN], got[DIGEST_LEN];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 7 + 1);
	file_ref(5ull * 65536 - 100, 65536, 5, d, want);
	digest_file(5ull * 65536 - 100, 65536, 5, d, got);
	assert_memory_equal(got, want, DIGEST_LEN);

	/* The empty file: no chunk digests at all. */
	file_ref(0, 65536, 0, NULL, want);
	digest_file(0, 65536, 0, NULL, got);
	assert_memory_equal(got, want, DIGEST_LEN);
}

static void test_file_changes_with_every_input(void **state)
{
	uint8_t d[4 * DIGEST_LEN], base[DIGEST_LEN], got[DIGEST_LEN];
	uint64_t size = (1ull << 40) + 3 * 65536 + 1;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i ^ 0x5c);
	digest_file(size, 65536, 4, d, base);

	/* Any bit of any chunk digest. */
	for (i = 0; i < sizeof(d) * 8; i++) {
		d[i / 8] ^= (uint8_t)(1u << (i % 8));
		digest_file(size, 65536, 4, d, got);
		assert_memory_not_equal(got, base, DIGEST_LEN);
		d[i / 8] ^= (uint8_t)(1u << (i % 8));
	}
	/* Any bit of size, chunk_size or nchunks. */
	for (i = 0; i < 64; i++) {
		digest_file(size ^ (1ull << i), 65536, 4, d, got);
		assert_memory_not_equal(got, base, DIGEST_LEN);
	}
	for (i = 0; i < 32; i++) {
		digest_file(size, 65536u ^ (1u << i), 4, d, got);
		assert_memory_not_equal(got, base, DIGEST_LEN);
	}
	digest_file(size, 65536, 3, d, got);
	assert_memory_not_equal(got, base, DIGEST_LEN);

	/* And it is deterministic. */
	digest_file(size, 65536, 4, d, got);
	assert_memory_equal(got, base, DIGEST_LEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_known_answer),
		cmocka_unit_test(test_short_strings),
		cmocka_unit_test(test_pattern_1mib),
		cmocka_unit_test(test_impl_name),
		cmocka_unit_test(test_zeros_match_chunk),
		cmocka_unit_test(test_file_definition),
		cmocka_unit_test(test_file_changes_with_every_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
