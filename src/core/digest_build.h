/* SPDX-License-Identifier: MIT */
/*
 * The XXH3-128 routines of one build of libxxhash's header, included once
 * by digest.c (the architecture's baseline) and, on x86-64, once by
 * digest_avx2.c (AVX2, compiled with -mavx2). The includer defines XXH_INLINE_ALL and XXH_VECTOR, includes
 * <xxhash.h>, then defines DIGEST_BUILD_OPS (the table's name) and
 * DIGEST_BUILD_NAME (its label) before including this file. Not a header
 * to include anywhere else.
 */
#ifndef DIGEST_BUILD_OPS
#error "define DIGEST_BUILD_OPS and DIGEST_BUILD_NAME first"
#endif

static void build_chunk(const void *p, size_t n, uint8_t out[DIGEST_LEN])
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
	memcpy(out, c.digest, DIGEST_LEN);
}

static void build_zeros(size_t n, uint8_t out[DIGEST_LEN])
{
	XXH3_state_t st;
	XXH128_canonical_t c;
	size_t k;

	if (n <= DIGEST_ZERO_BUF) {
		build_chunk(digest_zero_buf, n, out);
		return;
	}
	XXH3_INITSTATE(&st);
	XXH3_128bits_reset(&st);
	for (; n; n -= k) {
		k = n < DIGEST_ZERO_BUF ? n : DIGEST_ZERO_BUF;
		XXH3_128bits_update(&st, digest_zero_buf, k);
	}
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
	memcpy(out, c.digest, DIGEST_LEN);
}

static void build_two(const void *a, size_t alen, const void *b, size_t blen,
		      uint8_t out[DIGEST_LEN])
{
	XXH3_state_t st;
	XXH128_canonical_t c;

	XXH3_INITSTATE(&st);
	XXH3_128bits_reset(&st);
	XXH3_128bits_update(&st, a, alen);
	XXH3_128bits_update(&st, b, blen);
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
	memcpy(out, c.digest, DIGEST_LEN);
}

const struct digest_ops DIGEST_BUILD_OPS = {
	.name = DIGEST_BUILD_NAME,
	.chunk = build_chunk,
	.zeros = build_zeros,
	.two = build_two,
};
