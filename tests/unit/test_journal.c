// SPDX-License-Identifier: MIT
/*
 * Unit tests of journal.[ch]: round trips, the torn-record rule, damage
 * anywhere else, header geometry, journal_matches, and garbage input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "journal.h"
#include "proto.h"

#define NREC	 6u
#define JBUF_LEN (JOURNAL_HDR_LEN + NREC * JOURNAL_REC_LEN)

struct seen {
	size_t n;
	uint32_t chunk[64];
	uint8_t digest[64][JOURNAL_DIGEST_LEN];
};

static void on_rec(void *ctx, uint32_t chunk,
		   const uint8_t digest[JOURNAL_DIGEST_LEN])
{
	struct seen *s = ctx;

	assert_true(s->n < 64);
	s->chunk[s->n] = chunk;
	memcpy(s->digest[s->n], digest, JOURNAL_DIGEST_LEN);
	s->n++;
}

static const struct journal_hdr hdr0 = {
	.size = 10u * (1u << 20) + 17, /* 11 chunks of 1 MiB */
	.mtime_sec = -1700000000,      /* sign survives */
	.mtime_nsec = 999999999,
	.chunk_size = 1u << 20,
	.nchunks = 11,
};

static void digest_of(uint32_t i, uint8_t d[JOURNAL_DIGEST_LEN])
{
	size_t k;

	for (k = 0; k < JOURNAL_DIGEST_LEN; k++)
		d[k] = (uint8_t)(i * 31 + k);
}

/* A journal of hdr0 and NREC records for chunks 10, 0, 9, 1, 8, 2. */
static void build(uint8_t buf[JBUF_LEN])
{
	uint8_t d[JOURNAL_DIGEST_LEN];
	uint32_t i, chunk;

	journal_encode_hdr(&hdr0, buf);
	for (i = 0; i < NREC; i++) {
		chunk = i % 2 ? i / 2 : 10 - i / 2;
		digest_of(chunk, d);
		journal_encode_rec(chunk, d,
				   buf + JOURNAL_HDR_LEN + i * JOURNAL_REC_LEN);
	}
}

static void assert_recs(const struct seen *s, size_t n)
{
	uint8_t d[JOURNAL_DIGEST_LEN];
	uint32_t i, chunk;

	assert_int_equal(s->n, n);
	for (i = 0; i < n; i++) {
		chunk = i % 2 ? i / 2 : 10 - i / 2;
		digest_of(chunk, d);
		assert_int_equal(s->chunk[i], chunk);
		assert_memory_equal(s->digest[i], d, JOURNAL_DIGEST_LEN);
	}
}

static int decode(const uint8_t *buf, size_t len, struct journal_hdr *h,
		  struct seen *s, size_t *nrec)
{
	memset(s, 0, sizeof(*s));
	return journal_decode(buf, len, h, on_rec, s, nrec);
}

static void test_round_trip(void **state)
{
	uint8_t buf[JBUF_LEN];
	struct journal_hdr h;
	struct seen s;
	size_t nrec = 99;

	(void)state;
	build(buf);
	assert_memory_equal(buf, "LRJ1", 4);
	assert_int_equal(decode(buf, sizeof(buf), &h, &s, &nrec), 0);
	assert_int_equal(nrec, NREC);
	assert_true(h.size == hdr0.size);
	assert_true(h.mtime_sec == hdr0.mtime_sec);
	assert_int_equal(h.mtime_nsec, hdr0.mtime_nsec);
	assert_int_equal(h.chunk_size, hdr0.chunk_size);
	assert_int_equal(h.nchunks, hdr0.nchunks);
	assert_recs(&s, NREC);

	/* A header alone: no records, no calls; NULL rec and nrec allowed. */
	assert_int_equal(decode(buf, JOURNAL_HDR_LEN, &h, &s, &nrec), 0);
	assert_int_equal(nrec, 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(journal_decode(buf, sizeof(buf), &h, NULL, NULL, NULL),
			 0);
}

static void test_big_endian_layout(void **state)
{
	static const uint8_t d[JOURNAL_DIGEST_LEN] = { 0xd0, 0xd1 };
	uint8_t rec[JOURNAL_REC_LEN], hb[JOURNAL_HDR_LEN];

	(void)state;
	journal_encode_rec(0x01020304, d, rec);
	assert_memory_equal(rec, "\x01\x02\x03\x04\xd0\xd1", 6);
	journal_encode_hdr(&hdr0, hb);
	/* size 0x00a00011, chunk_size 0x00100000, nchunks 11 */
	assert_memory_equal(hb + 4, "\0\0\0\0\x00\xa0\x00\x11", 8);
	assert_memory_equal(hb + 24, "\x00\x10\x00\x00\0\0\0\x0b", 8);
}

static void test_torn_tail_ignored(void **state)
{
	uint8_t buf[JBUF_LEN];
	struct journal_hdr h;
	struct seen s;
	size_t nrec, cut;

	(void)state;
	build(buf);
	/* Every length that ends inside the last record. */
	for (cut = 1; cut < JOURNAL_REC_LEN; cut++) {
		assert_int_equal(decode(buf, sizeof(buf) - cut, &h, &s, &nrec),
				 0);
		assert_int_equal(nrec, NREC - 1);
		assert_recs(&s, NREC - 1);
	}
	/* Inside the first record. */
	assert_int_equal(decode(buf, JOURNAL_HDR_LEN + 5, &h, &s, &nrec), 0);
	assert_int_equal(nrec, 0);
}

static void test_header_damage(void **state)
{
	uint8_t buf[JBUF_LEN];
	struct journal_hdr h = { 0 };
	struct seen s;
	size_t nrec = 77, bit, len;

	(void)state;
	build(buf);
	for (bit = 0; bit < JOURNAL_HDR_LEN * 8; bit++) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_equal(decode(buf, sizeof(buf), &h, &s, &nrec),
				 LR_EBADMSG);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	/* A torn header is no journal at all. */
	for (len = 0; len < JOURNAL_HDR_LEN; len++)
		assert_int_equal(decode(buf, len, &h, &s, &nrec), LR_EBADMSG);
	assert_int_equal(journal_decode(NULL, 0, &h, NULL, NULL, &nrec),
			 LR_EBADMSG);
	/* Nothing written or called on failure. */
	assert_int_equal(nrec, 77);
	assert_true(h.size == 0);
	assert_int_equal(s.n, 0);
}

static void test_middle_record_damage(void **state)
{
	uint8_t buf[JBUF_LEN];
	struct journal_hdr h;
	struct seen s;
	size_t nrec = 77, bit;

	(void)state;
	build(buf);
	/* Any bit of any record but the last. */
	for (bit = JOURNAL_HDR_LEN * 8; bit < (JBUF_LEN - JOURNAL_REC_LEN) * 8;
	     bit++) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_equal(decode(buf, sizeof(buf), &h, &s, &nrec),
				 LR_EBADMSG);
		assert_int_equal(s.n, 0);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	assert_int_equal(nrec, 77);
	/* A damaged record followed only by a torn one: still damage. */
	buf[JOURNAL_HDR_LEN + 4 * JOURNAL_REC_LEN + 7] ^= 1;
	assert_int_equal(decode(buf, sizeof(buf) - 1, &h, &s, &nrec),
			 LR_EBADMSG);
}

static void test_last_record_damage_is_torn(void **state)
{
	uint8_t buf[JBUF_LEN];
	struct journal_hdr h;
	struct seen s;
	size_t nrec, bit;

	(void)state;
	build(buf);
	for (bit = (JBUF_LEN - JOURNAL_REC_LEN) * 8; bit < JBUF_LEN * 8;
	     bit++) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		nrec = 77;
		assert_int_equal(decode(buf, sizeof(buf), &h, &s, &nrec), 0);
		assert_int_equal(nrec, NREC - 1);
		assert_recs(&s, NREC - 1);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	/* An append torn as zeros (the file grew, the data did not land). */
	memset(buf + JBUF_LEN - JOURNAL_REC_LEN, 0, JOURNAL_REC_LEN);
	assert_int_equal(decode(buf, sizeof(buf), &h, &s, &nrec), 0);
	assert_int_equal(nrec, NREC - 1);
}

static void test_chunk_out_of_range(void **state)
{
	uint8_t buf[JBUF_LEN + JOURNAL_REC_LEN];
	uint8_t d[JOURNAL_DIGEST_LEN] = { 0 };
	struct journal_hdr h;
	struct seen s;
	size_t nrec;

	(void)state;
	build(buf);
	/* chunk == nchunks with a good check, last or not: damage. */
	journal_encode_rec(hdr0.nchunks, d, buf + JOURNAL_HDR_LEN);
	assert_int_equal(decode(buf, JBUF_LEN, &h, &s, &nrec), LR_EBADMSG);
	build(buf);
	journal_encode_rec(hdr0.nchunks, d, buf + JBUF_LEN);
	assert_int_equal(decode(buf, sizeof(buf), &h, &s, &nrec), LR_EBADMSG);
	journal_encode_rec(UINT32_MAX, d, buf + JBUF_LEN);
	assert_int_equal(decode(buf, sizeof(buf), &h, &s, &nrec), LR_EBADMSG);
	assert_int_equal(s.n, 0);
	/* The last chunk itself is fine. */
	journal_encode_rec(hdr0.nchunks - 1, d, buf + JBUF_LEN);
	assert_int_equal(decode(buf, sizeof(buf), &h, &s, &nrec), 0);
	assert_int_equal(nrec, NREC + 1);
	assert_int_equal(s.chunk[NREC], hdr0.nchunks - 1);
}

static int decode_hdr_only(const struct journal_hdr *src)
{
	uint8_t b[JOURNAL_HDR_LEN];
	struct journal_hdr h;

	journal_encode_hdr(src, b);
	return journal_decode(b, sizeof(b), &h, NULL, NULL, NULL);
}

static void test_header_geometry(void **state)
{
	struct journal_hdr g = hdr0;

	(void)state;
	assert_int_equal(decode_hdr_only(&g), 0);
	g.nchunks = 10;
	assert_int_equal(decode_hdr_only(&g), LR_EBADMSG);
	g.nchunks = 12;
	assert_int_equal(decode_hdr_only(&g), LR_EBADMSG);

	/* Exact multiple; empty file; one byte. */
	g.size = 3ull * PROTO_XFER_MIN_CHUNK;
	g.chunk_size = PROTO_XFER_MIN_CHUNK;
	g.nchunks = 3;
	assert_int_equal(decode_hdr_only(&g), 0);
	g.size = 0;
	g.nchunks = 0;
	assert_int_equal(decode_hdr_only(&g), 0);
	g.nchunks = 1;
	assert_int_equal(decode_hdr_only(&g), LR_EBADMSG);
	g.size = 1;
	assert_int_equal(decode_hdr_only(&g), 0);

	/* chunk_size bounds. */
	g.size = 1;
	g.nchunks = 1;
	g.chunk_size = PROTO_XFER_MAX_CHUNK;
	assert_int_equal(decode_hdr_only(&g), 0);
	g.chunk_size = PROTO_XFER_MAX_CHUNK + 1;
	assert_int_equal(decode_hdr_only(&g), LR_EBADMSG);
	g.chunk_size = PROTO_XFER_MIN_CHUNK - 1;
	assert_int_equal(decode_hdr_only(&g), LR_EBADMSG);
	g.chunk_size = 0;
	assert_int_equal(decode_hdr_only(&g), LR_EBADMSG);

	/* More chunks than a u32 counts can never match. */
	g.chunk_size = PROTO_XFER_MIN_CHUNK;
	g.size = ((uint64_t)UINT32_MAX + 1) * PROTO_XFER_MIN_CHUNK;
	g.nchunks = 0;
	assert_int_equal(decode_hdr_only(&g), LR_EBADMSG);
	g.size -= PROTO_XFER_MIN_CHUNK;
	g.nchunks = UINT32_MAX;
	assert_int_equal(decode_hdr_only(&g), 0);
}

static void test_matches(void **state)
{
	const struct journal_hdr *h = &hdr0;

	(void)state;
	assert_true(journal_matches(h, h->size, h->mtime_sec, h->mtime_nsec,
				    h->chunk_size));
	assert_false(journal_matches(h, h->size + 1, h->mtime_sec,
				     h->mtime_nsec, h->chunk_size));
	assert_false(journal_matches(h, h->size, h->mtime_sec + 1,
				     h->mtime_nsec, h->chunk_size));
	assert_false(journal_matches(h, h->size, h->mtime_sec,
				     h->mtime_nsec - 1, h->chunk_size));
	assert_false(journal_matches(h, h->size, h->mtime_sec, h->mtime_nsec,
				     h->chunk_size * 2));
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint8_t rnd8(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)rng;
}

static void test_garbage_never_crashes(void **state)
{
	uint8_t buf[JBUF_LEN];
	struct journal_hdr h;
	struct seen s;
	size_t nrec, len, i, round;
	int r;

	(void)state;
	for (round = 0; round < 20000; round++) {
		len = rnd8() % (sizeof(buf) + 1);
		if (round % 2) {
			/* Random bytes behind a valid header, or random
			 * flips in a valid journal. */
			build(buf);
			for (i = 0; i < 3; i++)
				buf[rnd8() % sizeof(buf)] ^= rnd8();
		} else {
			for (i = 0; i < sizeof(buf); i++)
				buf[i] = rnd8();
		}
		r = decode(buf, len, &h, &s, &nrec);
		assert_true(r == 0 || r == LR_EBADMSG);
		if (r == 0) {
			assert_int_equal(nrec, s.n);
			assert_true(nrec <=
				    (len - JOURNAL_HDR_LEN) / JOURNAL_REC_LEN);
			for (i = 0; i < s.n; i++)
				assert_true(s.chunk[i] < h.nchunks);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_big_endian_layout),
		cmocka_unit_test(test_torn_tail_ignored),
		cmocka_unit_test(test_header_damage),
		cmocka_unit_test(test_middle_record_damage),
		cmocka_unit_test(test_last_record_damage_is_torn),
		cmocka_unit_test(test_chunk_out_of_range),
		cmocka_unit_test(test_header_geometry),
		cmocka_unit_test(test_matches),
		cmocka_unit_test(test_garbage_never_crashes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
