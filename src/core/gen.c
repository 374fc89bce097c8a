// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypto.h"
#include "gen.h"

/* Four independent generators, stored lane-wise so that the compiler can
 * run them in SIMD registers (the multiplications by 5 and 9 are shifts
 * and adds, which plain SSE2 has). */
#define LANES 4

struct gen {
	uint64_t s0[LANES], s1[LANES], s2[LANES], s3[LANES];
	size_t rand_len; /* random bytes at the head of each block */
	size_t off;	 /* bytes of block[] already handed out */
	uint8_t block[GEN_BLOCK];
};

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* n words (a multiple of LANES) of xoshiro256** output, lane-interleaved,
 * stored little-endian so the stream is the same on every host. */
static void gen_words(struct gen *g, uint8_t *dst, size_t n)
{
	uint64_t s0[LANES], s1[LANES], s2[LANES], s3[LANES], w[LANES];
	size_t i;
	int j;

	memcpy(s0, g->s0, sizeof(s0));
	memcpy(s1, g->s1, sizeof(s1));
	memcpy(s2, g->s2, sizeof(s2));
	memcpy(s3, g->s3, sizeof(s3));
	for (i = 0; i < n; i += LANES) {
		for (j = 0; j < LANES; j++) {
			uint64_t x = (s1[j] << 2) + s1[j]; /* s1 * 5 */
			uint64_t t = s1[j] << 17;

			x = rotl(x, 7);
			w[j] = (x << 3) + x; /* * 9 */
			s2[j] ^= s0[j];
			s3[j] ^= s1[j];
			s1[j] ^= s2[j];
			s0[j] ^= s3[j];
			s2[j] ^= t;
			s3[j] = rotl(s3[j], 45);
		}
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
		for (j = 0; j < LANES; j++)
			w[j] = __builtin_bswap64(w[j]);
#endif
		memcpy(dst + i * 8, w, sizeof(w));
	}
	memcpy(g->s0, s0, sizeof(s0));
	memcpy(g->s1, s1, sizeof(s1));
	memcpy(g->s2, s2, sizeof(s2));
	memcpy(g->s3, s3, sizeof(s3));
}

/* One whole block of the stream into dst. */
static void gen_block(struct gen *g, uint8_t *dst)
{
	gen_words(g, dst, g->rand_len / 8);
	memset(dst + g->rand_len, 0, GEN_BLOCK - g->rand_len);
}

int gen_new(const uint8_t *seed, unsigned int pct, struct gen **out)
{
	uint8_t buf[GEN_SEED_LEN];
	uint64_t x = 0, k;
	struct gen *g;
	int i, r;

	if (pct > GEN_MAX_PCT)
		return -EINVAL;
	if (!seed) {
		r = crypto_random(buf, sizeof(buf));
		if (r)
			return r;
		seed = buf;
	}
	g = malloc(sizeof(*g));
	if (!g)
		return -ENOMEM;
	/* Fold the seed into one splitmix64 state per seed word, then
	 * expand: no lane is all zero, and lanes differ. */
	for (i = 0; i < GEN_SEED_LEN / 8; i++) {
		memcpy(&k, seed + i * 8, 8);
		x ^= k;
		(void)splitmix64(&x);
	}
	for (i = 0; i < LANES; i++) {
		g->s0[i] = splitmix64(&x);
		g->s1[i] = splitmix64(&x);
		g->s2[i] = splitmix64(&x);
		g->s3[i] = splitmix64(&x);
	}
	/* whole groups of LANES words, so a block is whole generator steps */
	g->rand_len = (size_t)GEN_BLOCK * (GEN_MAX_PCT - pct) / GEN_MAX_PCT;
	g->rand_len -= g->rand_len % (LANES * 8);
	g->off = GEN_BLOCK;
	crypto_wipe(buf, sizeof(buf));
	*out = g;
	return 0;
}

void gen_free(struct gen *g)
{
	free(g);
}

void gen_fill(struct gen *g, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t n;

	while (len) {
		if (g->off == GEN_BLOCK) {
			if (len >= GEN_BLOCK) {
				/* straight into the caller's buffer */
				gen_block(g, p);
				p += GEN_BLOCK;
				len -= GEN_BLOCK;
				continue;
			}
			gen_block(g, g->block);
			g->off = 0;
		}
		n = GEN_BLOCK - g->off;
		if (n > len)
			n = len;
		memcpy(p, g->block + g->off, n);
		g->off += n;
		p += n;
		len -= n;
	}
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int gen_write(struct gen *g, int fd, uint64_t size,
	      void (*progress)(uint64_t done, void *arg), void *arg)
{
	uint64_t done = 0;
	uint8_t *buf;
	size_t n;
	int r = 0;

	buf = aligned_alloc(4096, GEN_CHUNK);
	if (!buf)
		return -ENOMEM;
	while (done < size) {
		n = size - done < GEN_CHUNK ? (size_t)(size - done) : GEN_CHUNK;
		gen_fill(g, buf, n);
		r = write_all(fd, buf, n);
		if (r)
			goto out_free_buf;
		done += n;
		if (progress)
			progress(done, arg);
	}
out_free_buf:
	free(buf);
	return r;
}
