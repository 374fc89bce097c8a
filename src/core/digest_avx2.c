// SPDX-License-Identifier: MIT
/*
 * XXH3-128 from libxxhash's header, built inline for AVX2. meson compiles
 * this file alone with -mavx2; digest.c calls it only when the CPU has
 * AVX2. VEX-encoded code does not pay the penalty that legacy SSE code
 * pays while the upper vector state is dirty (after OpenSSL's AVX-512
 * ciphers), and the compiler ends each function with a vzeroupper.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>

#include "digest.h"
#include "digest_impl.h"
#include "banned.h"

static void avx2_chunk(const void *p, size_t n, uint8_t out[DIGEST_LEN])
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
	memcpy(out, c.digest, DIGEST_LEN);
}

static void avx2_zeros(size_t n, uint8_t out[DIGEST_LEN])
{
	XXH3_state_t st;
	XXH128_canonical_t c;
	size_t k;

	if (n <= DIGEST_ZERO_BUF) {
		avx2_chunk(digest_zero_buf, n, out);
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

static void avx2_two(const void *a, size_t alen, const void *b, size_t blen,
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

const struct digest_ops digest_ops_avx2 = {
	.name = "avx2",
	.chunk = avx2_chunk,
	.zeros = avx2_zeros,
	.two = avx2_two,
};
