/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_JOURNAL_H
#define LINERATE_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/*
 * The resume journal kept next to a file being received
 * (docs/PROTOCOL.md section 7.8): a header naming the source's size,
 * mtime and chunk size, then one record per chunk written, verified and
 * synced to the device. Records are appended; a torn last record (a crash
 * during the append) is ignored, any other damage makes the whole journal
 * invalid (the file restarts).
 *
 * Header (JOURNAL_HDR_LEN bytes): "LRJ1" size:u64 mtime_sec:i64
 *   mtime_nsec:u32 chunk_size:u32 nchunks:u32 check:u64
 * Record (JOURNAL_REC_LEN bytes): chunk:u32 digest[16] check:u32
 * All big-endian; check is an XXH3-64 of the bytes before it (the record's
 * folded to 32 bits).
 */

#define JOURNAL_HDR_LEN	   40u
#define JOURNAL_REC_LEN	   24u
#define JOURNAL_DIGEST_LEN 16u

struct journal_hdr {
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint32_t chunk_size;
	uint32_t nchunks;
};

void journal_encode_hdr(const struct journal_hdr *h,
			uint8_t out[JOURNAL_HDR_LEN]);
void journal_encode_rec(uint32_t chunk,
			const uint8_t digest[JOURNAL_DIGEST_LEN],
			uint8_t out[JOURNAL_REC_LEN]);

/*
 * Decode a journal's whole contents. Returns 0 and fills *h when the
 * header is valid; LR_EBADMSG otherwise (bad magic, bad check, nchunks not
 * matching size and chunk_size). Then for each valid record calls
 * rec(ctx, chunk, digest), stopping at the first torn or damaged one;
 * a record whose chunk is >= nchunks is damage. *nrec gets the count of
 * records accepted. Does not allocate.
 */
int journal_decode(const uint8_t *buf, size_t len, struct journal_hdr *h,
		   void (*rec)(void *ctx, uint32_t chunk,
			       const uint8_t digest[JOURNAL_DIGEST_LEN]),
		   void *ctx, size_t *nrec);

/* Whether the journal's header describes this source. */
bool journal_matches(const struct journal_hdr *h, uint64_t size,
		     int64_t mtime_sec, uint32_t mtime_nsec,
		     uint32_t chunk_size);

#endif
