/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_DIGEST_IMPL_H
#define LINERATE_DIGEST_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "digest.h"

/*
 * Private to digest.c, digest_avx2.c and their tests: one table of
 * XXH3-128 routines per build of libxxhash's header. digest.c picks one
 * at first use; the tests compare them with each other.
 */
struct digest_ops {
	const char *name;
	/* XXH3-128 of p[0..n), canonical byte order. */
	void (*chunk)(const void *p, size_t n, uint8_t out[DIGEST_LEN]);
	/* XXH3-128 of n zero bytes. */
	void (*zeros)(size_t n, uint8_t out[DIGEST_LEN]);
	/* XXH3-128 of a[0..alen) || b[0..blen). */
	void (*two)(const void *a, size_t alen, const void *b, size_t blen,
		    uint8_t out[DIGEST_LEN]);
};

/* The build for the architecture's baseline (digest.c), always usable:
 * SSE2 on x86-64, NEON where the compiler targets it (aarch64), plain C
 * elsewhere (armhf, MIPS, s390x, i386). */
extern const struct digest_ops digest_ops_base;

#if defined(__x86_64__)
#define DIGEST_HAVE_AVX2 1
/* The AVX2 build (digest_avx2.c, x86-64 only); only for a CPU where
 * digest_avx2_usable() is true. */
extern const struct digest_ops digest_ops_avx2;
#endif

/* Whether this CPU and OS can run digest_ops_avx2 (false where there is
 * none). */
bool digest_avx2_usable(void);

/* Zeros that digest_zeros hashes from, over and over (in digest.c). */
#define DIGEST_ZERO_BUF (64u << 10)
extern const uint8_t digest_zero_buf[DIGEST_ZERO_BUF];

#endif
