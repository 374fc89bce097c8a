/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_DIGEST_H
#define LINERATE_DIGEST_H

#include <stddef.h>
#include <stdint.h>

/*
 * XXH3-128 for chunk and file digests (docs/PROTOCOL.md section 7).
 * Built inline from libxxhash's header twice, for SSE2 and AVX2, chosen
 * at run time: Debian's shared SSE2 build runs ~4x slower after
 * OpenSSL's AVX-512 code (../REFERENCE section 3), the AVX2 build does not.
 */

#define DIGEST_LEN 16

/* The XXH3-128 of p[0..n), in canonical (big-endian) byte order. */
void digest_chunk(const void *p, size_t n, uint8_t out[DIGEST_LEN]);

/* The digest of n zero bytes (a hole), without touching n bytes of
 * memory when it can be avoided; equal to digest_chunk over zeros. */
void digest_zeros(size_t n, uint8_t out[DIGEST_LEN]);

/*
 * A file's digest: XXH3-128 of size:u64be || chunk_size:u32be ||
 * nchunks:u32be || the chunk digests in chunk order.
 */
void digest_file(uint64_t size, uint32_t chunk_size, uint32_t nchunks,
		 const uint8_t *chunk_digests, uint8_t out[DIGEST_LEN]);

/* The implementation in use: "avx2" or "sse2" on x86-64, "neon" or
 * "scalar" elsewhere. */
const char *digest_impl(void);

#endif
