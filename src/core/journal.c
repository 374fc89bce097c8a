// SPDX-License-Identifier: MIT
/*
 * The resume journal (journal.h): encode and decode, no I/O, no
 * allocation. Checks are XXH3-64 from the shared libxxhash; the inputs
 * are 20 and 32 bytes, where XXH3 runs scalar code.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <xxhash.h>

#include "err.h"
#include "journal.h"
#include "proto.h"
#include "banned.h"

#define JOURNAL_MAGIC "LRJ1"
#define HDR_CHECK_OFF 32u
#define REC_CHECK_OFF 20u

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static uint32_t rec_check(const uint8_t *rec)
{
	return (uint32_t)XXH3_64bits(rec, REC_CHECK_OFF);
}

void journal_encode_hdr(const struct journal_hdr *h,
			uint8_t out[JOURNAL_HDR_LEN])
{
	memcpy(out, JOURNAL_MAGIC, 4);
	put_be64(out + 4, h->size);
	put_be64(out + 12, (uint64_t)h->mtime_sec);
	put_be32(out + 20, h->mtime_nsec);
	put_be32(out + 24, h->chunk_size);
	put_be32(out + 28, h->nchunks);
	put_be64(out + HDR_CHECK_OFF, XXH3_64bits(out, HDR_CHECK_OFF));
}

void journal_encode_rec(uint32_t chunk,
			const uint8_t digest[JOURNAL_DIGEST_LEN],
			uint8_t out[JOURNAL_REC_LEN])
{
	put_be32(out, chunk);
	memcpy(out + 4, digest, JOURNAL_DIGEST_LEN);
	put_be32(out + REC_CHECK_OFF, rec_check(out));
}

/* Whether nchunks is ceil(size / chunk_size) for a legal chunk_size. */
static bool hdr_geometry_ok(const struct journal_hdr *h)
{
	uint64_t n;

	if (h->chunk_size < PROTO_XFER_MIN_CHUNK ||
	    h->chunk_size > PROTO_XFER_MAX_CHUNK)
		return false;
	n = h->size / h->chunk_size + (h->size % h->chunk_size != 0);
	return n == h->nchunks;
}

static int decode_hdr(const uint8_t *buf, struct journal_hdr *h)
{
	if (memcmp(buf, JOURNAL_MAGIC, 4) != 0)
		return LR_EBADMSG;
	if (get_be64(buf + HDR_CHECK_OFF) != XXH3_64bits(buf, HDR_CHECK_OFF))
		return LR_EBADMSG;
	h->size = get_be64(buf + 4);
	h->mtime_sec = (int64_t)get_be64(buf + 12);
	h->mtime_nsec = get_be32(buf + 20);
	h->chunk_size = get_be32(buf + 24);
	h->nchunks = get_be32(buf + 28);
	return hdr_geometry_ok(h) ? 0 : LR_EBADMSG;
}

/*
 * Counts the records to accept. A complete record whose check fails is
 * a torn append when it is the last bytes of the journal, damage when
 * anything follows it. A record whose check holds but whose chunk is out
 * of range was written whole and is wrong: damage wherever it is.
 */
static int count_recs(const uint8_t *p, size_t len, uint32_t nchunks,
		      size_t *count)
{
	size_t n = 0;

	for (; len >= JOURNAL_REC_LEN;
	     p += JOURNAL_REC_LEN, len -= JOURNAL_REC_LEN, n++) {
		if (get_be32(p + REC_CHECK_OFF) != rec_check(p)) {
			if (len == JOURNAL_REC_LEN)
				break;
			return LR_EBADMSG;
		}
		if (get_be32(p) >= nchunks)
			return LR_EBADMSG;
	}
	*count = n;
	return 0;
}

int journal_decode(const uint8_t *buf, size_t len, struct journal_hdr *h,
		   void (*rec)(void *ctx, uint32_t chunk,
			       const uint8_t digest[JOURNAL_DIGEST_LEN]),
		   void *ctx, size_t *nrec)
{
	struct journal_hdr hd;
	const uint8_t *p;
	size_t n, i;
	int r;

	if (!buf || len < JOURNAL_HDR_LEN)
		return LR_EBADMSG;
	r = decode_hdr(buf, &hd);
	if (r)
		return r;
	p = buf + JOURNAL_HDR_LEN;
	/* Validate everything first: no callback runs for a journal that
	 * turns out to be invalid. */
	r = count_recs(p, len - JOURNAL_HDR_LEN, hd.nchunks, &n);
	if (r)
		return r;
	if (rec) {
		for (i = 0; i < n; i++, p += JOURNAL_REC_LEN)
			rec(ctx, get_be32(p), p + 4);
	}
	*h = hd;
	if (nrec)
		*nrec = n;
	return 0;
}

bool journal_matches(const struct journal_hdr *h, uint64_t size,
		     int64_t mtime_sec, uint32_t mtime_nsec,
		     uint32_t chunk_size)
{
	return h->size == size && h->mtime_sec == mtime_sec &&
	       h->mtime_nsec == mtime_nsec && h->chunk_size == chunk_size;
}
