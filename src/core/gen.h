/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_GEN_H
#define LINERATE_GEN_H

#include <stddef.h>
#include <stdint.h>

/*
 * Test data: a fast, seeded, non-cryptographic byte stream (four
 * interleaved xoshiro256** generators), made of GEN_BLOCK-byte blocks.
 * With a compressible percentage pct, the last pct% of every block is
 * zeros and the rest is random, so gzip or zstd shrink the output to
 * about (100 - pct)% of its size. The stream depends only on the seed and
 * pct, never on how it is cut into calls. Never use it for keys or tokens:
 * that is crypto_random's job.
 *
 * Silent: no printing, no exiting. Functions that act return 0 or a
 * negative errno.
 */

#define GEN_SEED_LEN 32
#define GEN_BLOCK    (64 * 1024)
#define GEN_CHUNK    (2 * 1024 * 1024) /* bytes per write() */
#define GEN_MAX_PCT  100

struct gen;

/*
 * A new generator for the compressible percentage pct (0..100). seed is
 * GEN_SEED_LEN bytes, or NULL to take one from crypto_random. *out is set
 * only on success; free it with gen_free. 0, -EINVAL (pct over 100),
 * -ENOMEM or -EIO (no random seed).
 */
int gen_new(const uint8_t *seed, unsigned int pct, struct gen **out);

/* Free g; gen_free(NULL) does nothing. */
void gen_free(struct gen *g);

/* Write the next len bytes of g's stream to buf (caller-owned). */
void gen_fill(struct gen *g, void *buf, size_t len);

/*
 * Write the next size bytes of g's stream to fd, in GEN_CHUNK writes
 * (retried on EINTR and short writes). After each chunk, progress (if not
 * NULL) is called with the bytes written so far and arg. 0, or the
 * negative errno of the failing write (bytes before it were written), or
 * -ENOMEM. -EIO when write() returns 0.
 */
int gen_write(struct gen *g, int fd, uint64_t size,
	      void (*progress)(uint64_t done, void *arg), void *arg);

#endif
