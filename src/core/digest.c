// SPDX-License-Identifier: MIT
/*
 * XXH3-128 chunk and file digests (digest.h). Builds of libxxhash's
 * header: the architecture's baseline here (SSE2 on x86-64; elsewhere
 * what xxhash picks for the target: NEON on aarch64, plain C on the
 * rest) and, on x86-64, AVX2 in digest_avx2.c; the first call picks one
 * by CPU and every later call uses it.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define XXH_INLINE_ALL
#if defined(__x86_64__)
#define XXH_VECTOR XXH_SSE2
#define BASE_NAME  "sse2"
#elif defined(__aarch64__) || defined(__ARM_NEON) || defined(__ARM_NEON__)
#define BASE_NAME "neon"
#else
#define BASE_NAME "scalar"
#endif
#include <xxhash.h>

#include "digest.h"
#include "digest_impl.h"
#include "banned.h"

const uint8_t digest_zero_buf[DIGEST_ZERO_BUF];

#define DIGEST_BUILD_OPS  digest_ops_base
#define DIGEST_BUILD_NAME BASE_NAME
#include "digest_build.h"

bool digest_avx2_usable(void)
{
#ifdef DIGEST_HAVE_AVX2
	/* libgcc and compiler-rt also check that the OS saves the YMM
	 * state (XGETBV) before they report avx2. */
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
#else
	return false;
#endif
}

/* Chosen once; racing first callers store the same pointer. */
static const struct digest_ops *_Atomic chosen;

static const struct digest_ops *ops(void)
{
	const struct digest_ops *o;

	o = atomic_load_explicit(&chosen, memory_order_acquire);
	if (o)
		return o;
#ifdef DIGEST_HAVE_AVX2
	o = digest_avx2_usable() ? &digest_ops_avx2 : &digest_ops_base;
#else
	o = &digest_ops_base;
#endif
	atomic_store_explicit(&chosen, o, memory_order_release);
	return o;
}

void digest_chunk(const void *p, size_t n, uint8_t out[DIGEST_LEN])
{
	ops()->chunk(p, n, out);
}

void digest_zeros(size_t n, uint8_t out[DIGEST_LEN])
{
	ops()->zeros(n, out);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void digest_file(uint64_t size, uint32_t chunk_size, uint32_t nchunks,
		 const uint8_t *chunk_digests, uint8_t out[DIGEST_LEN])
{
	uint8_t hdr[16];

	put_be32(hdr, (uint32_t)(size >> 32));
	put_be32(hdr + 4, (uint32_t)size);
	put_be32(hdr + 8, chunk_size);
	put_be32(hdr + 12, nchunks);
	ops()->two(hdr, sizeof(hdr), chunk_digests,
		   (size_t)nchunks * DIGEST_LEN, out);
}

const char *digest_impl(void)
{
	return ops()->name;
}
