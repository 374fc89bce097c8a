// SPDX-License-Identifier: MIT
/*
 * Unit tests of the file-transfer part of proto.[ch]: round trips of every
 * message, batch item and the chunk header; filling a batch until it has
 * no room (the message stays within PROTO_MAX_BODY); and tables of
 * malformed requests, items and chunk headers that must be refused; the
 * same for linerate doctor's PROBE_REQUEST and PROBE_RESULT.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "proto.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void wr_be(uint8_t *p, uint64_t v, size_t n)
{
	while (n--) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

/* ---- one message built into a heap buffer big enough for any body ---- */

#define MSG_CAP (PROTO_HDR_LEN + PROTO_MAX_BODY + 4096)

struct msg {
	uint8_t *mem;
	struct proto_buf b;
};

static void msg_init(struct msg *m, size_t cap)
{
	m->mem = malloc(cap);
	assert_non_null(m->mem);
	proto_buf_init(&m->b, m->mem, cap);
}

static void msg_free(struct msg *m)
{
	free(m->mem);
}

/* Check the header of the one message in m; return its body. */
static uint8_t *msg_body(struct msg *m, uint8_t type, size_t *len)
{
	struct proto_hdr h;

	assert_int_equal(proto_decode_hdr(m->mem, m->b.len, PROTO_MAX_BODY, &h),
			 PROTO_HDR_LEN);
	assert_int_equal(h.type, type);
	assert_int_equal(h.len + PROTO_HDR_LEN, m->b.len);
	*len = h.len;
	return m->mem + PROTO_HDR_LEN;
}

static const uint8_t SID[PROTO_TEST_ID_LEN] = { 1, 2,  3,  4,  5,  6,  7,  8,
						9, 10, 11, 12, 13, 14, 15, 16 };

/* ---- whole messages ---- */

static void set_paths(struct proto_xfer_request *r, const char *const *p,
		      unsigned n)
{
	unsigned i;

	r->npaths = n;
	for (i = 0; i < n; i++) {
		r->paths[i] = p[i];
		r->path_lens[i] = (uint16_t)strlen(p[i]);
	}
}

static void request_roundtrip(const struct proto_xfer_request *in)
{
	struct proto_xfer_request out;
	struct msg m;
	uint8_t *body;
	size_t len;
	unsigned i;

	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_request(&m.b, in), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	memset(&out, 0xa5, sizeof(out));
	assert_int_equal(proto_decode_xfer_request(body, len, &out), 0);
	assert_int_equal(out.op, in->op);
	assert_int_equal(out.streams, in->streams);
	assert_int_equal(out.chunk_size, in->chunk_size);
	assert_int_equal(out.flags, in->flags);
	assert_true(out.rate == in->rate);
	assert_int_equal(out.files_window, in->files_window);
	assert_int_equal(out.lone_file, in->lone_file);
	assert_int_equal(out.npaths, in->npaths);
	for (i = 0; i < in->npaths; i++) {
		assert_int_equal(out.path_lens[i], in->path_lens[i]);
		assert_memory_equal(out.paths[i], in->paths[i],
				    in->path_lens[i]);
		/* pointers into the body */
		assert_true((const uint8_t *)out.paths[i] >= body &&
			    (const uint8_t *)out.paths[i] <= body + len);
	}
	msg_free(&m);
}

static void test_request_roundtrip(void **state)
{
	static const char *const push[] = { "" };
	static const char *const push2[] = { "dest/dir" };
	static const char *const pull[] = { "a", "b/c.txt", "d e/f-g_h" };
	static const char *pull_max[PROTO_XFER_MAX_PATHS];
	struct proto_xfer_request r;
	unsigned i;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.op = PROTO_XFER_PUSH;
	r.streams = 1;
	set_paths(&r, push, 1);
	request_roundtrip(&r);

	r.streams = PROTO_MAX_STREAMS;
	r.chunk_size = PROTO_XFER_MIN_CHUNK;
	r.flags = PROTO_XF_OVERWRITE | PROTO_XF_UPDATE | PROTO_XF_NO_FSYNC |
		  PROTO_XF_KEEP_SETID | PROTO_XF_STDOUT | PROTO_XF_CHECKSUM |
		  PROTO_XF_WHOLE_FILE;
	r.rate = UINT64_MAX;
	set_paths(&r, push2, 1);
	request_roundtrip(&r);

	r.op = PROTO_XFER_PULL;
	r.streams = 8;
	r.chunk_size = PROTO_XFER_MAX_CHUNK;
	r.flags = PROTO_XF_UPDATE;
	r.rate = 125000000;
	set_paths(&r, pull, ARRAY_SIZE(pull));
	request_roundtrip(&r);

	for (i = 0; i < PROTO_XFER_MAX_PATHS; i++)
		pull_max[i] = "x/y";
	set_paths(&r, pull_max, PROTO_XFER_MAX_PATHS);
	request_roundtrip(&r);
}

static void test_request_long_path(void **state)
{
	struct proto_xfer_request r;
	char *p = malloc(PROTO_XFER_MAX_PATH + 1);
	size_t i;

	(void)state;
	assert_non_null(p);
	/* components of 127 bytes separated by '/', the last one 128 */
	for (i = 0; i < PROTO_XFER_MAX_PATH; i++)
		p[i] = (i % 128 == 127) ? '/' : 'n';
	p[PROTO_XFER_MAX_PATH - 1] = 'n';
	memset(&r, 0, sizeof(r));
	r.op = PROTO_XFER_PULL;
	r.streams = 2;
	r.npaths = 1;
	r.paths[0] = p;
	r.path_lens[0] = PROTO_XFER_MAX_PATH;
	request_roundtrip(&r);
	free(p);
}

static void test_accept_roundtrip(void **state)
{
	struct proto_xfer_accept in, out;
	struct msg m;
	uint8_t *body;
	size_t len;

	(void)state;
	memset(&in, 0, sizeof(in));
	memcpy(in.session_id, SID, sizeof(SID));
	snprintf(in.software, sizeof(in.software), "linerate 0.1");
	in.streams = 4;
	in.chunk_size = 1u << 20;
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_accept(&m.b, &in), 0);
	body = msg_body(&m, PROTO_XFER_ACCEPT, &len);
	memset(&out, 0xa5, sizeof(out));
	assert_int_equal(proto_decode_xfer_accept(body, len, &out), 0);
	assert_memory_equal(out.session_id, SID, sizeof(SID));
	assert_string_equal(out.software, "linerate 0.1");
	assert_int_equal(out.streams, 4);
	assert_int_equal(out.chunk_size, 1u << 20);
	msg_free(&m);
}

/* FILES_WINDOW: said or not in a request and its answer, within
 * 256..65,536 (docs/PROTOCOL.md 7.2) */
static int window_request(uint32_t w, uint32_t *got)
{
	static const char *const push[] = { "" };
	struct proto_xfer_request r = { .op = PROTO_XFER_PUSH, .streams = 1 };
	struct proto_xfer_request out;
	struct msg m;
	uint8_t *body;
	size_t len;
	int rc;

	set_paths(&r, push, 1);
	r.files_window = w;
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_request(&m.b, &r), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	/* 0 is not said at all: the item is left out */
	assert_int_equal(len, w ? 51u : 43u);
	rc = proto_decode_xfer_request(body, len, &out);
	*got = out.files_window;
	msg_free(&m);
	return rc;
}

static int window_accept(uint32_t w, uint32_t *got)
{
	struct proto_xfer_accept in = { .streams = 2, .chunk_size = 1u << 20 };
	struct proto_xfer_accept out;
	struct msg m;
	uint8_t *body;
	size_t len;
	int rc;

	in.files_window = w;
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_accept(&m.b, &in), 0);
	body = msg_body(&m, PROTO_XFER_ACCEPT, &len);
	rc = proto_decode_xfer_accept(body, len, &out);
	*got = out.files_window;
	msg_free(&m);
	return rc;
}

static void test_files_window(void **state)
{
	static const uint32_t ok[] = { 0, 256, 1024, 65536 };
	static const uint32_t bad[] = { 1, 255, 65537, UINT32_MAX };
	uint32_t got;
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(window_request(ok[i], &got), 0);
		assert_int_equal(got, ok[i]);
		assert_int_equal(window_accept(ok[i], &got), 0);
		assert_int_equal(got, ok[i]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(window_request(bad[i], &got), LR_EBADMSG);
		assert_int_equal(window_accept(bad[i], &got), LR_EBADMSG);
	}
	/* 0 said outright is not "not said": malformed */
	{
		static const uint8_t zero[] = { 0x00, 0x48, 0x00, 0x04,
						0,    0,    0,	  0 };
		struct proto_xfer_accept in = { .streams = 2,
						.chunk_size = 1u << 20 };
		struct proto_xfer_accept out;
		uint8_t copy[256];
		struct msg m;
		uint8_t *body;
		size_t len;

		msg_init(&m, MSG_CAP);
		assert_int_equal(proto_encode_xfer_accept(&m.b, &in), 0);
		body = msg_body(&m, PROTO_XFER_ACCEPT, &len);
		assert_true(len + sizeof(zero) <= sizeof(copy));
		memcpy(copy, body, len);
		assert_int_equal(proto_decode_xfer_accept(copy, len, &out), 0);
		/* the same item with 1,024 is taken: the bytes are right */
		memcpy(copy + len, zero, sizeof(zero));
		copy[len + 6] = 0x04;
		assert_int_equal(proto_decode_xfer_accept(
					 copy, len + sizeof(zero), &out),
				 0);
		assert_int_equal(out.files_window, 1024);
		memcpy(copy + len, zero, sizeof(zero));
		assert_int_equal(proto_decode_xfer_accept(
					 copy, len + sizeof(zero), &out),
				 LR_EBADMSG);
		msg_free(&m);
	}
}

/* LONE_FILE (docs/PROTOCOL.md 7.2): a push's, not with DELETE; its value
 * 1; echoed in the answer. */
static int lone_request(uint8_t op, uint32_t flags, bool *got)
{
	static const char *const one[] = { "new" };
	struct proto_xfer_request r = { .op = op, .streams = 1 };
	struct proto_xfer_request out;
	struct msg m;
	uint8_t *body;
	size_t len;
	int rc;

	set_paths(&r, one, 1);
	r.flags = flags;
	r.lone_file = true;
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_request(&m.b, &r), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	rc = proto_decode_xfer_request(body, len, &out);
	*got = out.lone_file;
	msg_free(&m);
	return rc;
}

/* An answer with the raw item appended (value v; no item when v < 0). */
static int lone_accept(int v, bool *got)
{
	struct proto_xfer_accept in = { .streams = 2, .chunk_size = 1u << 20 };
	struct proto_xfer_accept out;
	uint8_t copy[256], item[] = { 0x00, 0x49, 0x00, 0x01, 0 };
	struct msg m;
	uint8_t *body;
	size_t len;
	int rc;

	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_accept(&m.b, &in), 0);
	body = msg_body(&m, PROTO_XFER_ACCEPT, &len);
	assert_true(len + sizeof(item) <= sizeof(copy));
	memcpy(copy, body, len);
	if (v >= 0) {
		item[4] = (uint8_t)v;
		memcpy(copy + len, item, sizeof(item));
		len += sizeof(item);
	}
	rc = proto_decode_xfer_accept(copy, len, &out);
	*got = out.lone_file;
	msg_free(&m);
	return rc;
}

static void test_lone_file(void **state)
{
	struct proto_xfer_accept in = { .streams = 2,
					.chunk_size = 1u << 20,
					.lone_file = true };
	struct proto_xfer_accept out;
	struct msg m;
	uint8_t *body;
	size_t len;
	bool got;

	(void)state;
	assert_int_equal(lone_request(PROTO_XFER_PUSH, 0, &got), 0);
	assert_true(got);
	assert_int_equal(
		lone_request(PROTO_XFER_PUSH, PROTO_XF_OVERWRITE, &got), 0);
	assert_true(got);
	assert_int_equal(lone_request(PROTO_XFER_PULL, 0, &got), LR_EBADMSG);
	assert_int_equal(lone_request(PROTO_XFER_PUSH, PROTO_XF_DELETE, &got),
			 LR_EBADMSG);
	assert_int_equal(lone_accept(-1, &got), 0);
	assert_false(got);
	assert_int_equal(lone_accept(1, &got), 0);
	assert_true(got);
	assert_int_equal(lone_accept(0, &got), LR_EBADMSG);
	assert_int_equal(lone_accept(2, &got), LR_EBADMSG);
	/* the encoder's bytes are the item's */
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_accept(&m.b, &in), 0);
	body = msg_body(&m, PROTO_XFER_ACCEPT, &len);
	assert_int_equal(proto_decode_xfer_accept(body, len, &out), 0);
	assert_true(out.lone_file);
	assert_memory_equal(body + len - 5,
			    ((const uint8_t[]){ 0x00, 0x49, 0x00, 0x01, 1 }),
			    5);
	msg_free(&m);
}

/* LINKS_WISH: a request's, decoded as said (the server grants it, not
 * the decoder: HARD_LINKS stays as asked); echoed in an answer; only the
 * value 1. KEPT: idx and how, five bytes; an ACK FILE_AGAIN. */
static void test_links_wish(void **state)
{
	static const char *const one[] = { "t" };
	struct proto_xfer_request r = { .op = PROTO_XFER_PULL, .streams = 1 };
	struct proto_xfer_request out;
	struct proto_xfer_accept a = { .streams = 2,
				       .chunk_size = 1u << 20,
				       .links = true },
				 ao;
	struct proto_xfer_iter it;
	uint8_t kb[32];
	struct proto_buf kbuf;
	struct msg m;
	uint8_t *body;
	struct proto_xfer_ack ack;
	uint32_t idx = 0;
	uint8_t how = 0;
	size_t len;

	(void)state;
	set_paths(&r, one, 1);
	r.links_wish = true;
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_request(&m.b, &r), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &out), 0);
	assert_true(out.links_wish && !(out.flags & PROTO_XF_HARD_LINKS));
	/* the item's bytes, and a value other than 1: malformed */
	assert_memory_equal(body + len - 5,
			    ((const uint8_t[]){ 0x00, 0x4c, 0x00, 0x01, 1 }),
			    5);
	body[len - 1] = 2;
	assert_int_equal(proto_decode_xfer_request(body, len, &out),
			 LR_EBADMSG);
	msg_free(&m);
	/* with -H asked as well: both said, both kept */
	r.flags = PROTO_XF_HARD_LINKS;
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_request(&m.b, &r), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &out), 0);
	assert_true(out.links_wish && (out.flags & PROTO_XF_HARD_LINKS));
	msg_free(&m);
	/* the answer */
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_accept(&m.b, &a), 0);
	body = msg_body(&m, PROTO_XFER_ACCEPT, &len);
	assert_int_equal(proto_decode_xfer_accept(body, len, &ao), 0);
	assert_true(ao.links && !ao.lone_file);
	msg_free(&m);
	/* KEPT: tag 0x004d, idx big-endian, how 1 or 2; another length or
	 * how is malformed */
	proto_buf_init(&kbuf, kb, sizeof(kb));
	proto_put_xfer_kept(&kbuf, 0x01020304u, PROTO_KEPT_LINKED);
	assert_int_equal(kbuf.len, 9);
	assert_memory_equal(
		kb,
		((const uint8_t[]){ 0x00, 0x4d, 0x00, 0x05, 1, 2, 3, 4, 2 }),
		9);
	proto_xfer_iter_init(&it, kb, kbuf.len);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_kept(&it, &idx, &how), 0);
	assert_int_equal(idx, 0x01020304u);
	assert_int_equal(how, PROTO_KEPT_LINKED);
	kb[8] = 3;
	assert_int_equal(proto_xfer_get_kept(&it, &idx, &how), LR_EBADMSG);
	kb[8] = 0;
	assert_int_equal(proto_xfer_get_kept(&it, &idx, &how), LR_EBADMSG);
	kb[8] = PROTO_KEPT_OWN;
	assert_int_equal(proto_xfer_get_kept(&it, &idx, &how), 0);
	assert_int_equal(how, PROTO_KEPT_OWN);
	it.vlen = 4;
	assert_int_equal(proto_xfer_get_kept(&it, &idx, &how), LR_EBADMSG);
	it.tag = PROTO_T_FAIL;
	it.vlen = 5;
	assert_int_equal(proto_xfer_get_kept(&it, &idx, &how), LR_EBADMSG);
	/* an ACK of status FILE_AGAIN (4): a name to go as a file */
	proto_buf_init(&kbuf, kb, sizeof(kb));
	proto_put_xfer_ack(&kbuf,
			   &(struct proto_xfer_ack){
				   .idx = 9, .status = PROTO_XS_FILE_AGAIN });
	proto_xfer_iter_init(&it, kb, kbuf.len);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_ack(&it, &ack), 0);
	assert_true(ack.idx == 9 && ack.status == PROTO_XS_FILE_AGAIN);
}

static void test_totals_roundtrip(void **state)
{
	struct proto_xfer_totals in = { PROTO_XFER_MAX_FILES, UINT64_MAX }, out;
	struct msg m;
	uint8_t *body;
	size_t len;

	(void)state;
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_totals(&m.b, &in), 0);
	body = msg_body(&m, PROTO_XFER_TOTALS, &len);
	assert_int_equal(proto_decode_xfer_totals(body, len, &out), 0);
	assert_true(out.files == in.files && out.bytes == in.bytes);
	msg_free(&m);
}

/* An XFER_DONE begun in m with its required counts: 5 ok, 1 skipped, 9
 * bytes. */
static void done_counts(struct msg *m)
{
	msg_init(m, MSG_CAP);
	proto_msg_begin(&m->b, PROTO_XFER_DONE);
	proto_put_u64(&m->b, PROTO_T_FILES, 5);
	proto_put_u64(&m->b, PROTO_T_FILES_FAILED, 0);
	proto_put_u64(&m->b, PROTO_T_FILES_SKIPPED, 1);
	proto_put_u64(&m->b, PROTO_T_BYTES, 9);
}

static void test_done_roundtrip(void **state)
{
	struct proto_xfer_done in, out;
	struct msg m;
	uint8_t *body;
	size_t len;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.files_ok = 1000;
	in.files_failed = 2;
	in.files_skipped = 30;
	in.bytes = 1ull << 40;
	in.wait.net_us = 11;
	in.wait.write_us = 22;
	in.wait.cipher_us = 33;
	in.xattrs_failed = 4;
	snprintf(in.xattrs_why, sizeof(in.xattrs_why), "f: user.big too large");
	in.deletes_failed = 3;
	snprintf(in.deletes_why, sizeof(in.deletes_why),
		 "'a/b' could not be deleted: Operation not permitted");
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_done(&m.b, &in), 0);
	body = msg_body(&m, PROTO_XFER_DONE, &len);
	memset(&out, 0xa5, sizeof(out));
	assert_int_equal(proto_decode_xfer_done(body, len, &out), 0);
	assert_memory_equal(&in, &out, sizeof(in));
	msg_free(&m);

	/* without the optional wait times */
	done_counts(&m);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_DONE, &len);
	memset(&out, 0xa5, sizeof(out));
	assert_int_equal(proto_decode_xfer_done(body, len, &out), 0);
	assert_true(out.files_ok == 5 && out.files_skipped == 1 &&
		    out.bytes == 9 && out.wait.net_us == 0 &&
		    out.wait.cipher_us == 0 && out.deletes_failed == 0 &&
		    !out.deletes_why[0]);
	msg_free(&m);

	/* more removals failed than a session can hold: malformed */
	done_counts(&m);
	proto_put_u64(&m.b, PROTO_T_DELETES_FAILED, PROTO_XFER_MAX_FILES + 1);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_DONE, &len);
	assert_int_equal(proto_decode_xfer_done(body, len, &out), LR_EBADMSG);
	msg_free(&m);
}

static void test_type_names(void **state)
{
	(void)state;
	assert_string_equal(proto_type_name(PROTO_XFER_REQUEST),
			    "XFER_REQUEST");
	assert_string_equal(proto_type_name(PROTO_XFER_ACCEPT), "XFER_ACCEPT");
	assert_string_equal(proto_type_name(PROTO_XFER_TOTALS), "XFER_TOTALS");
	assert_string_equal(proto_type_name(PROTO_XFER_FILES), "XFER_FILES");
	assert_string_equal(proto_type_name(PROTO_XFER_PLAN), "XFER_PLAN");
	assert_string_equal(proto_type_name(PROTO_XFER_SUMS), "XFER_SUMS");
	assert_string_equal(proto_type_name(PROTO_XFER_ACKS), "XFER_ACKS");
	assert_string_equal(proto_type_name(PROTO_XFER_END), "XFER_END");
	assert_string_equal(proto_type_name(PROTO_XFER_DONE), "XFER_DONE");
	assert_string_equal(proto_type_name(PROTO_XFER_ALIVE), "XFER_ALIVE");
	assert_int_equal(PROTO_XFER_ALIVE, 0x39); /* the wire's */
	assert_string_equal(proto_type_name(0x3a), "unknown");
	assert_string_equal(proto_type_name(0x5f), "unknown");
}

/* XFER_ALIVE, the heartbeat: a header and no body. */
static void test_alive_is_empty(void **state)
{
	uint8_t buf[PROTO_HDR_LEN];
	struct proto_buf b;
	struct proto_hdr h;

	(void)state;
	proto_buf_init(&b, buf, sizeof(buf));
	assert_int_equal(proto_encode_empty(&b, PROTO_XFER_ALIVE), 0);
	assert_int_equal(b.len, PROTO_HDR_LEN);
	assert_int_equal(proto_decode_hdr(buf, b.len, 0, &h), PROTO_HDR_LEN);
	assert_int_equal(h.type, PROTO_XFER_ALIVE);
	assert_int_equal(h.len, 0);
}

/* ---- batch items ---- */

static void test_items_roundtrip(void **state)
{
	struct proto_xfer_entry file = { .idx = 0,
					 .kind = PROTO_XK_FILE,
					 .eflags = PROTO_XE_SPARSE |
						   PROTO_XE_LINKED,
					 .mode = 0644,
					 .size = 123456789,
					 .mtime_sec = -5,
					 .mtime_nsec = 999999999,
					 .path = "dir/file.bin",
					 .path_len = 12 };
	struct proto_xfer_entry pipe = { .idx = 1,
					 .kind = PROTO_XK_FILE,
					 .mode = 07777,
					 .size = PROTO_XFER_SIZE_UNKNOWN,
					 .path = "-",
					 .path_len = 1 };
	struct proto_xfer_entry dir = { .idx = 2,
					.kind = PROTO_XK_DIR,
					.mode = 0755,
					.mtime_sec = INT64_MAX,
					.path = "dir",
					.path_len = 3 };
	struct proto_xfer_entry link = { .idx = 3,
					 .kind = PROTO_XK_SYMLINK,
					 .mode = 0777,
					 .mtime_sec = 1700000000,
					 .path = "dir/ln",
					 .path_len = 6,
					 .target = "../../etc/passwd",
					 .target_len = 16 };
	struct proto_xfer_entry hard = { .idx = 4,
					 .kind = PROTO_XK_HARDLINK,
					 .path = "dir/hard",
					 .path_len = 8,
					 .link_to = 0 };
	struct proto_xfer_entry fifo = { .idx = 5,
					 .kind = PROTO_XK_FIFO,
					 .mode = 0640,
					 .path = "p",
					 .path_len = 1 };
	struct proto_xfer_entry dev = { .idx = 6,
					.kind = PROTO_XK_CHARDEV,
					.mode = 0600,
					.path = "null",
					.path_len = 4,
					.target = "\0\0\0\x01\0\0\0\x03",
					.target_len = 8 };
	const struct proto_xfer_entry *entries[] = { &file, &pipe, &dir, &link,
						     &hard, &fifo, &dev };
	struct proto_xfer_plan plan = { 7, PROTO_XA_RESUME }, plan2;
	struct proto_xfer_held held = { 7, 3, { 0xde, 0xad } }, held2;
	struct proto_xfer_sum sum = { 7, 1ull << 33, 1024, 1000, { 1, 2, 3 } },
			      sum2;
	struct proto_xfer_ack ack = { 7, 9, PROTO_XS_CHUNK_OK,
				      PROTO_XFER_MAX_CHUNK },
			      ack2;
	struct proto_xfer_fail fail = { 8, ENOSPC, "no space left" }, fail2;
	struct proto_xfer_wait wait = { 1, UINT64_MAX, 3 }, wait2;
	struct proto_xfer_entry e;
	struct proto_xfer_iter it;
	struct msg m;
	uint8_t *body;
	size_t len, i;

	(void)state;
	msg_init(&m, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_FILES);
	for (i = 0; i < ARRAY_SIZE(entries); i++)
		proto_put_xfer_entry(&m.b, entries[i]);
	proto_put_xfer_plan(&m.b, &plan);
	proto_put_xfer_held(&m.b, &held);
	proto_put_xfer_sum(&m.b, &sum);
	proto_put_xfer_ack(&m.b, &ack);
	proto_put_xfer_fail(&m.b, &fail);
	proto_put_xfer_wait(&m.b, &wait);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_FILES, &len);

	proto_xfer_iter_init(&it, body, len);
	for (i = 0; i < ARRAY_SIZE(entries); i++) {
		const struct proto_xfer_entry *x = entries[i];

		assert_int_equal(proto_xfer_iter_next(&it), 1);
		assert_int_equal(it.tag, PROTO_T_ENTRY);
		assert_int_equal(it.vlen + 4, proto_xfer_entry_size(x));
		/* every other getter refuses an entry */
		assert_int_equal(proto_xfer_get_plan(&it, &plan2), LR_EBADMSG);
		assert_int_equal(proto_xfer_get_wait(&it, &wait2), LR_EBADMSG);
		assert_int_equal(proto_xfer_get_fail(&it, &fail2), LR_EBADMSG);
		memset(&e, 0xa5, sizeof(e));
		assert_int_equal(proto_xfer_get_entry(&it, &e), 0);
		assert_int_equal(e.idx, x->idx);
		assert_int_equal(e.kind, x->kind);
		assert_int_equal(e.eflags, x->eflags);
		assert_int_equal(e.mode, x->mode);
		assert_true(e.size == x->size);
		assert_true(e.mtime_sec == x->mtime_sec);
		assert_int_equal(e.mtime_nsec, x->mtime_nsec);
		assert_int_equal(e.path_len, x->path_len);
		assert_memory_equal(e.path, x->path, x->path_len);
		assert_int_equal(e.target_len, x->target_len);
		if (x->target_len)
			assert_memory_equal(e.target, x->target, x->target_len);
		if (x->kind == PROTO_XK_HARDLINK)
			assert_int_equal(e.link_to, x->link_to);
	}
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_entry(&it, &e), LR_EBADMSG);
	assert_int_equal(proto_xfer_get_plan(&it, &plan2), 0);
	assert_true(plan2.idx == plan.idx && plan2.action == plan.action);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_sum(&it, &sum2), LR_EBADMSG);
	assert_int_equal(proto_xfer_get_held(&it, &held2), 0);
	assert_true(held2.idx == held.idx && held2.chunk == held.chunk &&
		    !memcmp(held2.digest, held.digest, PROTO_XFER_DIGEST_LEN));
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_held(&it, &held2), LR_EBADMSG);
	assert_int_equal(proto_xfer_get_sum(&it, &sum2), 0);
	assert_true(sum2.idx == sum.idx && sum2.size == sum.size &&
		    sum2.nchunks == sum.nchunks && sum2.sent == sum.sent &&
		    !memcmp(sum2.digest, sum.digest, PROTO_XFER_DIGEST_LEN));
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_ack(&it, &ack2), 0);
	assert_true(ack2.idx == ack.idx && ack2.chunk == ack.chunk &&
		    ack2.status == ack.status && ack2.bytes == ack.bytes);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_fail(&it, &fail2), 0);
	assert_int_equal(fail2.idx, 8);
	assert_int_equal(fail2.code, ENOSPC);
	assert_string_equal(fail2.text, "no space left");
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_wait(&it, &wait2), 0);
	assert_true(wait2.net_us == wait.net_us &&
		    wait2.write_us == wait.write_us &&
		    wait2.cipher_us == wait.cipher_us);
	assert_int_equal(proto_xfer_iter_next(&it), 0);
	assert_int_equal(proto_xfer_iter_next(&it), 0);
	msg_free(&m);
}

/* A failure text of the maximum length, and an empty one. */
/* A pull's filter rules and CONTENTS travel; a push with CONTENTS 2, a
 * bit past the paths or a bad FILTER kind is malformed. */
static void test_request_filters(void **state)
{
	static const char *const pull[] = { "a", "b" };
	struct proto_xfer_request r, out;
	struct msg m;
	uint8_t *body;
	size_t len;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.op = PROTO_XFER_PULL;
	r.streams = 2;
	set_paths(&r, pull, 2);
	r.contents = 2;
	r.nfilters = 2;
	r.filters[0] = "*.o";
	r.filter_lens[0] = 3;
	r.filters[1] = "keep/***";
	r.filter_lens[1] = 8;
	r.filter_include[1] = true;
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_request(&m.b, &r), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &out), 0);
	assert_true(out.contents == 2);
	assert_int_equal(out.nfilters, 2);
	assert_false(out.filter_include[0]);
	assert_true(out.filter_include[1]);
	assert_memory_equal(out.filters[1], "keep/***", 8);
	msg_free(&m);

	r.contents = 4; /* path 2 of 2 */
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_request(&m.b, &r), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &out),
			 LR_EBADMSG);
	msg_free(&m);

	/* a push (its rules only with DELETE): CONTENTS 0 or 1 only (the
	 * destination is the transfer's root) */
	r.contents = 1;
	r.op = PROTO_XFER_PUSH;
	r.flags = PROTO_XF_DELETE;
	set_paths(&r, pull, 1);
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_request(&m.b, &r), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &out), 0);
	msg_free(&m);
	r.contents = 2;
	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_request(&m.b, &r), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &out),
			 LR_EBADMSG);
	msg_free(&m);
}

/* Decode r as encoded into m (the caller frees it: out points into
 * it): 0 or LR_EBADMSG. */
static int request_decoded(const struct proto_xfer_request *r,
			   struct proto_xfer_request *out, struct msg *m)
{
	uint8_t *body;
	size_t len;

	msg_init(m, MSG_CAP);
	assert_int_equal(proto_encode_xfer_request(&m->b, r), 0);
	body = msg_body(m, PROTO_XFER_REQUEST, &len);
	return proto_decode_xfer_request(body, len, out);
}

/* request_decoded's answer, its message freed. */
static int request_rc(const struct proto_xfer_request *r)
{
	struct proto_xfer_request out;
	struct msg m;
	int rc = request_decoded(r, &out, &m);

	msg_free(&m);
	return rc;
}

/* LIST (a pull's --files-from): a round trip; a push's, one with
 * DELETE, two paths, no CONTENTS, a bad path in it, an empty list
 * without ROOT and unknown flags are malformed. */
static void test_request_list(void **state)
{
	static const char *const one[] = { "dir" };
	static const char *const two[] = { "a", "b" };
	static const char list[] = "a/b/f\0top\0c";
	static const char *const bad[] = { "a/../x", "/abs", "a//b", "./a",
					   "a\x01" };
	struct proto_xfer_request r, out;
	struct msg m;
	unsigned i;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.op = PROTO_XFER_PULL;
	r.streams = 2;
	set_paths(&r, one, 1);
	r.contents = 1;
	r.list = (const uint8_t *)list;
	r.list_len = sizeof(list) - 1;
	r.list_flags = PROTO_XL_RECURSE;
	assert_int_equal(request_decoded(&r, &out, &m), 0);
	assert_int_equal(out.list_len, sizeof(list) - 1);
	assert_memory_equal(out.list, list, sizeof(list) - 1);
	assert_int_equal(out.list_flags, PROTO_XL_RECURSE);
	msg_free(&m);
	r.list_len = 0; /* the directory itself */
	r.list_flags = PROTO_XL_ROOT;
	assert_int_equal(request_rc(&r), 0);
	r.list_flags = 0;
	assert_int_equal(request_rc(&r), LR_EBADMSG);
	r.list_len = sizeof(list) - 1;
	r.list_flags = 4;
	assert_int_equal(request_rc(&r), LR_EBADMSG);
	r.list_flags = 0;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r.list = (const uint8_t *)bad[i];
		r.list_len = (uint16_t)strlen(bad[i]);
		assert_int_equal(request_rc(&r), LR_EBADMSG);
	}
	r.list = (const uint8_t *)"a\0\0b"; /* an empty path between */
	r.list_len = 4;
	assert_int_equal(request_rc(&r), LR_EBADMSG);
	r.list = (const uint8_t *)list;
	r.list_len = sizeof(list) - 1;
	r.flags = PROTO_XF_DELETE;
	assert_int_equal(request_rc(&r), LR_EBADMSG);
	r.flags = 0;
	r.contents = 0;
	assert_int_equal(request_rc(&r), LR_EBADMSG);
	set_paths(&r, two, 2);
	r.contents = 3;
	assert_int_equal(request_rc(&r), LR_EBADMSG);
	set_paths(&r, one, 1);
	r.contents = 1;
	r.op = PROTO_XFER_PUSH;
	assert_int_equal(request_rc(&r), LR_EBADMSG);
}

/* UNREAD items: a round trip; code 0, a NUL in the path and an empty
 * path are malformed. */
static void test_unread_item(void **state)
{
	struct proto_xfer_unread u = { .code = 13,
				       .path_len = 5,
				       .path = "a/b.c" },
				 g;
	struct proto_xfer_iter it;
	struct msg m;
	uint8_t *body;
	size_t len;

	(void)state;
	msg_init(&m, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_FILES);
	proto_put_xfer_unread(&m.b, &u);
	u.code = 0;
	proto_put_xfer_unread(&m.b, &u);
	u.code = 2;
	u.path = "a\0b";
	u.path_len = 3;
	proto_put_xfer_unread(&m.b, &u);
	u.path_len = 0;
	proto_put_xfer_unread(&m.b, &u);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_FILES, &len);
	proto_xfer_iter_init(&it, body, len);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_unread(&it, &g), 0);
	assert_int_equal(g.code, 13);
	assert_int_equal(g.path_len, 5);
	assert_memory_equal(g.path, "a/b.c", 5);
	/* an UNREAD is not an ENTRY */
	{
		struct proto_xfer_entry e;

		assert_int_equal(proto_xfer_get_entry(&it, &e), LR_EBADMSG);
	}
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_unread(&it, &g), LR_EBADMSG);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_unread(&it, &g), LR_EBADMSG);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_unread(&it, &g), LR_EBADMSG);
	msg_free(&m);
}

/* FDIGEST items: a round trip of idx and digest; another length is
 * malformed, and an FDIGEST is no ENTRY. */
static void test_fdigest_item(void **state)
{
	struct proto_xfer_fdigest d = { .idx = 0x01020304u }, g;
	struct proto_xfer_entry e;
	struct proto_xfer_unread u = { .code = 2, .path = "ab", .path_len = 2 };
	struct proto_xfer_iter it;
	const uint8_t *body;
	struct msg m;
	size_t len;
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(d.digest); i++)
		d.digest[i] = (uint8_t)(0xa0 + i);
	msg_init(&m, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_FILES);
	proto_put_xfer_fdigest(&m.b, &d);
	proto_put_xfer_unread(&m.b, &u); /* 6 bytes: not an FDIGEST */
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_FILES, &len);
	proto_xfer_iter_init(&it, body, len);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(it.tag, PROTO_T_FDIGEST);
	assert_int_equal(it.vlen, 20);
	assert_int_equal(proto_xfer_get_fdigest(&it, &g), 0);
	assert_int_equal(g.idx, 0x01020304u);
	assert_memory_equal(g.digest, d.digest, sizeof(d.digest));
	assert_memory_equal(body + 4, "\x01\x02\x03\x04", 4);
	assert_int_equal(proto_xfer_get_entry(&it, &e), LR_EBADMSG);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_fdigest(&it, &g), LR_EBADMSG);
	msg_free(&m);
}

/* One OWNER item of raw bytes (ulen, glen as given, names as given):
 * what get says of it. */
static int owner_raw(uint8_t ulen, uint8_t glen, const char *names, size_t nlen,
		     struct proto_xfer_owner *o)
{
	uint8_t raw[128] = { PROTO_T_OWNER >> 8, PROTO_T_OWNER & 0xff, 0,
			     (uint8_t)(14 + nlen) };
	struct proto_xfer_iter it;

	raw[4 + 3] = 7;	  /* idx 7 */
	raw[4 + 7] = 100; /* uid 100 */
	raw[4 + 11] = 50; /* gid 50 */
	raw[4 + 12] = ulen;
	raw[4 + 13] = glen;
	memcpy(raw + 18, names, nlen);
	proto_xfer_iter_init(&it, raw, 18 + nlen);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	return proto_xfer_get_owner(&it, o);
}

/* OWNER items: a round trip with names, with none, with the longest;
 * a name of a character outside [A-Za-z0-9._@$-], lengths that do not
 * add up and a name of 33 bytes are malformed. */
static void test_owner_item(void **state)
{
	struct proto_xfer_owner o = { .idx = 3,
				      .uid = 0xfffffffeu,
				      .gid = 0,
				      .user = "www-data",
				      .group = "adm$" },
				g, n = { .idx = 4, .uid = 1, .gid = 2 }, l;
	struct proto_xfer_iter it;
	const uint8_t *body;
	struct msg m;
	size_t len;

	(void)state;
	memset(l.user, 'u', PROTO_XFER_MAX_IDNAME);
	l.user[PROTO_XFER_MAX_IDNAME] = 0;
	memset(l.group, 'g', PROTO_XFER_MAX_IDNAME);
	l.group[PROTO_XFER_MAX_IDNAME] = 0;
	l.idx = l.uid = l.gid = 9;
	msg_init(&m, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_FILES);
	proto_put_xfer_owner(&m.b, &o);
	proto_put_xfer_owner(&m.b, &n);
	proto_put_xfer_owner(&m.b, &l);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_FILES, &len);
	proto_xfer_iter_init(&it, body, len);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(it.vlen, 14 + 8 + 4);
	assert_int_equal(proto_xfer_get_owner(&it, &g), 0);
	assert_true(g.idx == 3 && g.uid == 0xfffffffeu && g.gid == 0);
	assert_string_equal(g.user, "www-data");
	assert_string_equal(g.group, "adm$");
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_owner(&it, &g), 0);
	assert_true(g.idx == 4 && g.uid == 1 && g.gid == 2);
	assert_string_equal(g.user, "");
	assert_string_equal(g.group, "");
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_owner(&it, &g), 0);
	assert_string_equal(g.user, l.user);
	assert_string_equal(g.group, l.group);
	assert_int_equal(proto_xfer_iter_next(&it), 0);
	msg_free(&m);

	assert_int_equal(owner_raw(2, 1, "abc", 3, &g), 0);
	assert_string_equal(g.user, "ab");
	assert_int_equal(owner_raw(2, 1, "a:c", 3, &g), LR_EBADMSG);
	assert_int_equal(owner_raw(2, 1, "a/c", 3, &g), LR_EBADMSG);
	assert_int_equal(owner_raw(2, 1, "a\nc", 3, &g), LR_EBADMSG);
	assert_int_equal(owner_raw(1, 1, "a\0", 2, &g), LR_EBADMSG);
	assert_int_equal(owner_raw(2, 2, "abc", 3, &g), LR_EBADMSG);
	assert_int_equal(owner_raw(1, 1, "abc", 3, &g), LR_EBADMSG);
	assert_int_equal(owner_raw(33, 0, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
				   33, &g),
			 LR_EBADMSG);
	assert_false(proto_xfer_idname_ok("", 0));
	assert_true(proto_xfer_idname_ok("a.b_c-d@e$", 10));
}

/* One XATTRS or ACL item of value v (n bytes) as its getter reads it. */
static int attr_raw(uint16_t tag, const uint8_t *v, size_t n, void *out)
{
	static uint8_t raw[4 + PROTO_XFER_MAX_XATTR_LEN + 16];
	struct proto_xfer_iter it;

	raw[0] = (uint8_t)(tag >> 8);
	raw[1] = (uint8_t)tag;
	raw[2] = (uint8_t)(n >> 8);
	raw[3] = (uint8_t)n;
	memcpy(raw + 4, v, n);
	proto_xfer_iter_init(&it, raw, 4 + n);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	return tag == PROTO_T_XATTRS ? proto_xfer_get_xattrs(&it, out)
				     : proto_xfer_get_acl(&it, out);
}

/* XATTRS items: a round trip (a binary value, an empty one); names out
 * of the three namespaces, out of order, twice, with a control
 * character, and lengths that do not add up are malformed; an item past
 * 32 KiB is not written. */
static void test_xattrs_item(void **state)
{
	static struct proto_xfer_xattrs a, g;
	static uint8_t big[PROTO_XFER_MAX_XATTR_LEN];
	/* idx 9, flags 0, 2 names: "user.a" = 00 ff, "user.b" = "" */
	uint8_t v[] = { 0, 0,	0,   9,	  0,   0,   2,	 6,   0,
			2, 'u', 's', 'e', 'r', '.', 'a', 0,   0xff,
			6, 0,	0,   'u', 's', 'e', 'r', '.', 'b' };
	struct proto_xfer_iter it;
	const uint8_t *body;
	struct msg m;
	size_t len;

	(void)state;
	a.idx = 3;
	a.n = 3;
	a.v[0] = (struct proto_xattr){ "security.selinux", (const uint8_t *)"x",
				       16, 1 };
	a.v[1] = (struct proto_xattr){ "trusted.t", (const uint8_t *)"\0\1", 9,
				       2 };
	a.v[2] = (struct proto_xattr){ "user.z", NULL, 6, 0 };
	msg_init(&m, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_FILES);
	proto_put_xfer_xattrs(&m.b, &a);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_FILES, &len);
	assert_int_equal(len, proto_xfer_xattrs_size(&a));
	proto_xfer_iter_init(&it, body, len);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_xattrs(&it, &g), 0);
	assert_int_equal(g.idx, 3);
	assert_int_equal(g.n, 3);
	assert_memory_equal(g.v[1].name, "trusted.t", 9);
	assert_int_equal(g.v[1].value_len, 2);
	assert_memory_equal(g.v[1].value, "\0\1", 2);
	assert_int_equal(g.v[2].value_len, 0);
	msg_free(&m);

	assert_int_equal(attr_raw(PROTO_T_XATTRS, v, sizeof(v), &g), 0);
	assert_int_equal(g.idx, 9);
	assert_int_equal(g.v[0].value[1], 0xff);
	v[26] = 'a'; /* "user.a" twice */
	assert_int_equal(attr_raw(PROTO_T_XATTRS, v, sizeof(v), &g),
			 LR_EBADMSG);
	v[26] = '0'; /* "user.0" after "user.a": out of order */
	assert_int_equal(attr_raw(PROTO_T_XATTRS, v, sizeof(v), &g),
			 LR_EBADMSG);
	v[26] = 'b';
	memcpy(v + 10, "usex", 4); /* no namespace */
	assert_int_equal(attr_raw(PROTO_T_XATTRS, v, sizeof(v), &g),
			 LR_EBADMSG);
	memcpy(v + 10, "user", 4);
	v[15] = '\n';
	assert_int_equal(attr_raw(PROTO_T_XATTRS, v, sizeof(v), &g),
			 LR_EBADMSG);
	v[15] = 'a';
	assert_int_equal(attr_raw(PROTO_T_XATTRS, v, sizeof(v) - 1, &g),
			 LR_EBADMSG);
	v[4] = 4; /* an unknown flag */
	assert_int_equal(attr_raw(PROTO_T_XATTRS, v, sizeof(v), &g),
			 LR_EBADMSG);
	v[4] = PROTO_XAF_PARTIAL | PROTO_XAF_ACL_UNREAD;
	assert_int_equal(attr_raw(PROTO_T_XATTRS, v, sizeof(v), &g), 0);
	assert_int_equal(g.flags, 3);
	v[6] = 3; /* three said, two there */
	assert_int_equal(attr_raw(PROTO_T_XATTRS, v, sizeof(v), &g),
			 LR_EBADMSG);
	assert_false(proto_xfer_xattr_name_ok("user.", 5));
	assert_false(proto_xfer_xattr_name_ok("system.posix_acl_access", 23));
	assert_true(proto_xfer_xattr_name_ok("trusted.x", 9));

	/* one value of 32 KiB: past the item's bound, not written */
	a.n = 1;
	a.v[0] = (struct proto_xattr){ "user.big", big, 8,
				       PROTO_XFER_MAX_XATTR_LEN - 10 };
	msg_init(&m, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_FILES);
	proto_put_xfer_xattrs(&m.b, &a);
	assert_int_not_equal(proto_msg_end(&m.b), 0);
	msg_free(&m);
}

/* ACL items: a round trip; a missing OTHER, a named entry without a
 * mask, tags out of order, a perm above 7, a name on USER_OBJ, a
 * default ACL kind 3 are malformed. */
static void test_acl_item(void **state)
{
	static struct proto_xfer_acl a, g;
	/* idx 2, access, 4 entries: user:: 6, user:1000 "daemon" 4,
	 * group:: 4, other:: 0 (no mask: malformed), then fixed below */
	uint8_t v[] = { 0,  0, 0, 2, 1, 0,    5,		/* */
			1,  6, 0, 0, 0, 0,    0,		/* user:: */
			2,  4, 0, 0, 3, 0xe8, 3, 'b', 'i', 'n', /* user:bin */
			4,  4, 0, 0, 0, 0,    0,		/* group:: */
			16, 6, 0, 0, 0, 0,    0,		/* mask:: */
			32, 0, 0, 0, 0, 0,    0 /* other:: */ };
	struct proto_xfer_iter it;
	const uint8_t *body;
	struct msg m;
	size_t len;

	(void)state;
	a.idx = 1;
	a.which = PROTO_ACL_DEFAULT;
	a.n = 3;
	a.e[0] = (struct proto_acl_entry){ .tag = PROTO_ACL_USER_OBJ,
					   .perm = 7 };
	a.e[1] = (struct proto_acl_entry){ .tag = PROTO_ACL_GROUP_OBJ,
					   .perm = 5 };
	a.e[2] = (struct proto_acl_entry){ .tag = PROTO_ACL_OTHER, .perm = 1 };
	msg_init(&m, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_FILES);
	proto_put_xfer_acl(&m.b, &a);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_FILES, &len);
	assert_int_equal(len, proto_xfer_acl_size(&a));
	proto_xfer_iter_init(&it, body, len);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_acl(&it, &g), 0);
	assert_true(g.idx == 1 && g.which == PROTO_ACL_DEFAULT && g.n == 3);
	assert_int_equal(g.e[2].perm, 1);
	msg_free(&m);

	assert_int_equal(attr_raw(PROTO_T_ACL, v, sizeof(v), &g), 0);
	assert_int_equal(g.e[1].id, 1000);
	assert_string_equal(g.e[1].name, "bin");
	v[31] = 8; /* mask -> group: a named entry without a mask */
	assert_int_equal(attr_raw(PROTO_T_ACL, v, sizeof(v), &g), LR_EBADMSG);
	v[31] = 16;
	v[38] = 16; /* other -> a second mask, no other */
	assert_int_equal(attr_raw(PROTO_T_ACL, v, sizeof(v), &g), LR_EBADMSG);
	v[38] = 32;
	v[7] = 4; /* user:: -> group:: before user: out of order */
	assert_int_equal(attr_raw(PROTO_T_ACL, v, sizeof(v), &g), LR_EBADMSG);
	v[7] = 1;
	v[8] = 8; /* perm 8 */
	assert_int_equal(attr_raw(PROTO_T_ACL, v, sizeof(v), &g), LR_EBADMSG);
	v[8] = 6;
	v[13] = 1; /* a name on user:: (and the lengths then off) */
	assert_int_equal(attr_raw(PROTO_T_ACL, v, sizeof(v), &g), LR_EBADMSG);
	v[13] = 0;
	v[4] = 3; /* which 3 */
	assert_int_equal(attr_raw(PROTO_T_ACL, v, sizeof(v), &g), LR_EBADMSG);
	v[4] = 2;
	assert_int_equal(attr_raw(PROTO_T_ACL, v, sizeof(v), &g), 0);
}

/* DELETED items: a round trip; kind 0 or 5, a NUL and an empty path
 * are malformed. */
static void test_deleted_item(void **state)
{
	struct proto_xfer_deleted d = { .kind = PROTO_XK_DIR,
					.path_len = 3,
					.path = "a/b" },
				  g;
	struct proto_xfer_iter it;
	struct msg m;
	uint8_t *body;
	size_t len;
	unsigned i;

	(void)state;
	msg_init(&m, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_ACKS);
	proto_put_xfer_deleted(&m.b, &d);
	d.kind = 0;
	proto_put_xfer_deleted(&m.b, &d);
	d.kind = 5;
	proto_put_xfer_deleted(&m.b, &d);
	d.kind = 4;
	d.path = "a\0b";
	proto_put_xfer_deleted(&m.b, &d);
	d.path_len = 0;
	proto_put_xfer_deleted(&m.b, &d);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_ACKS, &len);
	proto_xfer_iter_init(&it, body, len);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_deleted(&it, &g), 0);
	assert_int_equal(g.kind, PROTO_XK_DIR);
	assert_int_equal(g.path_len, 3);
	assert_memory_equal(g.path, "a/b", 3);
	for (i = 0; i < 4; i++) {
		assert_int_equal(proto_xfer_iter_next(&it), 1);
		assert_int_equal(proto_xfer_get_deleted(&it, &g), LR_EBADMSG);
	}
	msg_free(&m);
}

static void test_fail_text_bounds(void **state)
{
	struct proto_xfer_fail f, g;
	struct proto_xfer_iter it;
	struct msg m;
	uint8_t *body;
	size_t len;

	(void)state;
	memset(f.text, 'x', sizeof(f.text));
	f.text[PROTO_MAX_TEXT] = '\0';
	f.idx = 1;
	f.code = PROTO_ERR_LIMIT;
	msg_init(&m, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_ACKS);
	proto_put_xfer_fail(&m.b, &f);
	f.text[0] = '\0';
	proto_put_xfer_fail(&m.b, &f);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_ACKS, &len);
	proto_xfer_iter_init(&it, body, len);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(it.vlen, 8 + PROTO_MAX_TEXT);
	assert_int_equal(proto_xfer_get_fail(&it, &g), 0);
	assert_int_equal(strlen(g.text), PROTO_MAX_TEXT);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_fail(&it, &g), 0);
	assert_string_equal(g.text, "");
	msg_free(&m);
}

static void test_batch_fill(void **state)
{
	char path[300];
	struct proto_xfer_entry e = {
		.kind = PROTO_XK_FILE, .mode = 0600, .size = 10, .path = path
	};
	struct proto_xfer_iter it;
	struct msg m;
	uint8_t *body;
	size_t len, n = 0, before;
	int r;

	(void)state;
	memset(path, 'p', sizeof(path));
	e.path_len = 255;
	msg_init(&m, MSG_CAP);
	/* a message before this one: room counts from b->start */
	assert_int_equal(proto_encode_xfer_totals(
				 &m.b, &(struct proto_xfer_totals){ 1, 2 }),
			 0);
	proto_msg_begin(&m.b, PROTO_XFER_FILES);
	while (proto_xfer_batch_room(&m.b, proto_xfer_entry_size(&e) - 4)) {
		e.idx = (uint32_t)n++;
		proto_put_xfer_entry(&m.b, &e);
		assert_int_equal(m.b.err, 0);
	}
	assert_true(n > 100);
	before = m.b.len;
	/* less than one more entry of room remains */
	assert_true(before - m.b.start - PROTO_HDR_LEN +
			    proto_xfer_entry_size(&e) >
		    PROTO_MAX_BODY);
	/* a small item may still fit; the entry does not and is sticky */
	proto_put_xfer_entry(&m.b, &e);
	assert_int_equal(m.b.err, -ENOBUFS);
	assert_int_equal(m.b.len, before);
	proto_put_xfer_plan(&m.b, &(struct proto_xfer_plan){ 0, 0 });
	assert_int_equal(m.b.len, before);
	assert_false(proto_xfer_batch_room(&m.b, 0));
	assert_int_equal(proto_msg_end(&m.b), -ENOBUFS);

	/* the same without the failed put: a valid message <= MAX_BODY */
	m.b.err = 0;
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = m.mem + m.b.start + PROTO_HDR_LEN;
	len = m.b.len - m.b.start - PROTO_HDR_LEN;
	assert_true(len <= PROTO_MAX_BODY);
	proto_xfer_iter_init(&it, body, len);
	n = 0;
	while ((r = proto_xfer_iter_next(&it)) == 1) {
		struct proto_xfer_entry x;

		assert_int_equal(proto_xfer_get_entry(&it, &x), 0);
		assert_int_equal(x.idx, n);
		n++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(n, e.idx + 1);
	msg_free(&m);
}

/* The buffer's capacity, smaller than PROTO_MAX_BODY, bounds the room. */
static void test_batch_room_cap(void **state)
{
	struct proto_xfer_plan p = { 1, PROTO_XA_SEND };
	struct msg m;
	size_t n = 0;

	(void)state;
	msg_init(&m, PROTO_HDR_LEN + 10 * (4 + PROTO_XFER_PLAN_LEN) + 3);
	proto_msg_begin(&m.b, PROTO_XFER_PLAN);
	while (proto_xfer_batch_room(&m.b, PROTO_XFER_PLAN_LEN)) {
		proto_put_xfer_plan(&m.b, &p);
		n++;
	}
	assert_int_equal(n, 10);
	assert_int_equal(m.b.err, 0);
	assert_true(proto_xfer_batch_room(&m.b, 0) == false);
	proto_put_xfer_plan(&m.b, &p);
	assert_int_equal(m.b.err, -ENOBUFS);
	assert_false(proto_xfer_batch_room(&m.b, 0));
	assert_false(proto_xfer_batch_room(&m.b, SIZE_MAX));
	msg_free(&m);
}

/* ---- malformed items: one valid item, one mutation each ---- */

enum item {
	I_FILE,
	I_DIR,
	I_LINK,
	I_HLINK,
	I_DEV,
	I_PLAN,
	I_HELD,
	I_SUM,
	I_ACK,
	I_FAIL,
	I_WAIT
};

struct item_case {
	const char *name;
	enum item item;
	int off;      /* of the value byte to overwrite, -1 for none */
	uint64_t v;   /* value written there */
	int width;    /* its width in bytes */
	int dvlen;    /* change of the TLV's length field (and body) */
	uint16_t tag; /* nonzero: the TLV's tag instead */
};

static const struct item_case item_cases[] = {
	{ "entry kind 0", I_FILE, 4, 0, 1, 0, 0 },
	{ "entry kind 4", I_FILE, 4, 4, 1, 0, 0 },
	{ "entry unknown eflag", I_FILE, 5, 4, 1, 0, 0 },
	{ "dir LINKED", I_DIR, 5, PROTO_XE_LINKED, 1, 0, 0 },
	{ "symlink LINKED", I_LINK, 5, PROTO_XE_LINKED, 1, 0, 0 },
	{ "hard link LINKED", I_HLINK, 5, PROTO_XE_LINKED, 1, 0, 0 },
	{ "hard link SPARSE", I_HLINK, 5, PROTO_XE_SPARSE, 1, 0, 0 },
	{ "entry kind 9", I_HLINK, 4, 9, 1, 0, 0 },
	{ "FIFO with a target", I_HLINK, 4, PROTO_XK_FIFO, 1, 0, 0 },
	{ "socket with a target", I_HLINK, 4, PROTO_XK_SOCKET, 1, 0, 0 },
	{ "char device of 4 bytes", I_HLINK, 4, PROTO_XK_CHARDEV, 1, 0, 0 },
	{ "block device of 9 bytes", I_DEV, 30, 9, 2, 1, 0 },
	{ "device without a target", I_DEV, 30, 0, 2, -8, 0 },
	{ "device with size", I_DEV, 8, 1, 8, 0, 0 },
	{ "device LINKED", I_DEV, 5, PROTO_XE_LINKED, 1, 0, 0 },
	{ "hard link without its file", I_HLINK, 30, 0, 2, -4, 0 },
	{ "hard link target_len 5", I_HLINK, 30, 5, 2, 1, 0 },
	{ "hard link target_len 3", I_HLINK, 30, 3, 2, -1, 0 },
	{ "hard link to itself", I_HLINK, 40, 1, 4, 0, 0 },
	{ "hard link to a later entry", I_HLINK, 40, 2, 4, 0, 0 },
	{ "hard link with size", I_HLINK, 8, 1, 8, 0, 0 },
	{ "entry mode 010000", I_FILE, 6, 010000, 2, 0, 0 },
	{ "entry mode 0xffff", I_FILE, 6, 0xffff, 2, 0, 0 },
	{ "entry nsec 1e9", I_FILE, 24, 1000000000, 4, 0, 0 },
	{ "entry nsec max", I_FILE, 24, UINT32_MAX, 4, 0, 0 },
	{ "entry path_len 0", I_FILE, 28, 0, 2, 0, 0 },
	{ "entry path_len +1", I_FILE, 28, 9, 2, 0, 0 },
	{ "entry path_len -1", I_FILE, 28, 7, 2, 0, 0 },
	{ "entry path_len max", I_FILE, 28, 0xffff, 2, 0, 0 },
	{ "entry target on a file", I_FILE, 30, 1, 2, 1, 0 },
	{ "entry vlen short", I_FILE, -1, 0, 0, -1, 0 },
	{ "entry vlen long", I_FILE, -1, 0, 0, 1, 0 },
	{ "entry only fixed short", I_FILE, -1, 0, 0, -10, 0 },
	{ "dir with size", I_DIR, 8, 1, 8, 0, 0 },
	{ "dir size unknown", I_DIR, 8, UINT64_MAX, 8, 0, 0 },
	{ "dir with target", I_DIR, 30, 1, 2, 1, 0 },
	{ "symlink no target", I_LINK, 30, 0, 2, -4, 0 },
	{ "symlink with size", I_LINK, 8, 4, 8, 0, 0 },
	{ "symlink size unknown", I_LINK, 8, UINT64_MAX, 8, 0, 0 },
	{ "symlink target_len long", I_LINK, 30, 5, 2, 0, 0 },
	{ "entry as plan", I_FILE, -1, 0, 0, 0, PROTO_T_PLAN },
	{ "plan action 5", I_PLAN, 4, 5, 1, 0, 0 },
	{ "plan action 0xff", I_PLAN, 4, 0xff, 1, 0, 0 },
	{ "plan short", I_PLAN, -1, 0, 0, -1, 0 },
	{ "plan long", I_PLAN, -1, 0, 0, 1, 0 },
	{ "plan as ack", I_PLAN, -1, 0, 0, 0, PROTO_T_ACK },
	{ "held short", I_HELD, -1, 0, 0, -1, 0 },
	{ "held long", I_HELD, -1, 0, 0, 1, 0 },
	{ "held as sum", I_HELD, -1, 0, 0, 0, PROTO_T_SUM },
	{ "sum size unknown", I_SUM, 4, UINT64_MAX, 8, 0, 0 },
	{ "sum sent > nchunks", I_SUM, 16, 2, 4, 0, 0 },
	{ "sum short", I_SUM, -1, 0, 0, -1, 0 },
	{ "sum long", I_SUM, -1, 0, 0, 1, 0 },
	{ "ack status 5", I_ACK, 8, 5, 1, 0, 0 },
	{ "ack ok bytes 0", I_ACK, 9, 0, 4, 0, 0 },
	{ "ack ok bytes > max", I_ACK, 9, PROTO_XFER_MAX_CHUNK + 1, 4, 0, 0 },
	{ "ack short", I_ACK, -1, 0, 0, -1, 0 },
	{ "ack long", I_ACK, -1, 0, 0, 1, 0 },
	{ "fail control char", I_FAIL, 9, 0x1b, 1, 0, 0 },
	{ "fail NUL", I_FAIL, 8, 0, 1, 0, 0 },
	{ "fail DEL", I_FAIL, 10, 0x7f, 1, 0, 0 },
	{ "fail high byte", I_FAIL, 10, 0xc3, 1, 0, 0 },
	{ "fail short", I_FAIL, -1, 0, 0, -9, 0 },
	{ "wait short", I_WAIT, -1, 0, 0, -1, 0 },
	{ "wait long", I_WAIT, -1, 0, 0, 1, 0 },
	{ "wait as held", I_WAIT, -1, 0, 0, 0, PROTO_T_HELD },
};

static void put_item(struct proto_buf *b, enum item item)
{
	struct proto_xfer_entry e = { .idx = 1,
				      .kind = PROTO_XK_FILE,
				      .mode = 0644,
				      .size = 1,
				      .path = "a/b/file",
				      .path_len = 8 };

	switch (item) {
	case I_FILE: proto_put_xfer_entry(b, &e); break;
	case I_DIR:
		e.kind = PROTO_XK_DIR;
		e.size = 0;
		proto_put_xfer_entry(b, &e);
		break;
	case I_DEV:
		e.kind = PROTO_XK_BLOCKDEV;
		e.size = 0;
		e.target = "\0\0\0\x07\0\0\0\x01";
		e.target_len = 8;
		proto_put_xfer_entry(b, &e);
		break;
	case I_HLINK:
		e.kind = PROTO_XK_HARDLINK;
		e.size = 0;
		e.link_to = 0;
		proto_put_xfer_entry(b, &e);
		break;
	case I_LINK:
		e.kind = PROTO_XK_SYMLINK;
		e.size = 0;
		e.target = "tgt1";
		e.target_len = 4;
		proto_put_xfer_entry(b, &e);
		break;
	case I_PLAN:
		proto_put_xfer_plan(b, &(struct proto_xfer_plan){ 1, 0 });
		break;
	case I_HELD:
		proto_put_xfer_held(b,
				    &(struct proto_xfer_held){ 1, 2, { 0 } });
		break;
	case I_SUM:
		proto_put_xfer_sum(
			b, &(struct proto_xfer_sum){ 1, 5, 1, 1, { 0 } });
		break;
	case I_ACK:
		proto_put_xfer_ack(b, &(struct proto_xfer_ack){ 1, 0, 0, 5 });
		break;
	case I_FAIL:
		proto_put_xfer_fail(b,
				    &(struct proto_xfer_fail){ 1, 2, "oops" });
		break;
	case I_WAIT:
		proto_put_xfer_wait(b, &(struct proto_xfer_wait){ 1, 2, 3 });
		break;
	}
}

static int get_item(const struct proto_xfer_iter *it, enum item item)
{
	union {
		struct proto_xfer_entry e;
		struct proto_xfer_plan p;
		struct proto_xfer_held h;
		struct proto_xfer_sum s;
		struct proto_xfer_ack a;
		struct proto_xfer_fail f;
		struct proto_xfer_wait w;
	} u;

	switch (item) {
	case I_FILE:
	case I_DIR:
	case I_LINK:
	case I_HLINK:
	case I_DEV: return proto_xfer_get_entry(it, &u.e);
	case I_PLAN: return proto_xfer_get_plan(it, &u.p);
	case I_HELD: return proto_xfer_get_held(it, &u.h);
	case I_SUM: return proto_xfer_get_sum(it, &u.s);
	case I_ACK: return proto_xfer_get_ack(it, &u.a);
	case I_FAIL: return proto_xfer_get_fail(it, &u.f);
	case I_WAIT: return proto_xfer_get_wait(it, &u.w);
	}
	return -1;
}

/* Build the item, mutated by c (or not when c is NULL); return get's
 * result. */
static int item_try(enum item item, const struct item_case *c)
{
	uint8_t buf[512], raw[512];
	struct proto_buf b;
	struct proto_xfer_iter it;
	size_t vlen;
	int r;

	proto_buf_init(&b, buf, sizeof(buf));
	put_item(&b, item);
	assert_int_equal(b.err, 0);
	memset(raw, 'z', sizeof(raw));
	memcpy(raw, buf, b.len);
	vlen = b.len - 4;
	if (c) {
		if (c->off >= 0)
			wr_be(raw + 4 + c->off, c->v, (size_t)c->width);
		vlen = (size_t)((int)vlen + c->dvlen);
		wr_be(raw + 2, vlen, 2);
		if (c->tag)
			wr_be(raw, c->tag, 2);
	}
	proto_xfer_iter_init(&it, raw, 4 + vlen);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	r = get_item(&it, item);
	assert_int_equal(proto_xfer_iter_next(&it), 0);
	return r;
}

static void test_items_malformed(void **state)
{
	size_t i;

	(void)state;
	for (i = I_FILE; i <= I_WAIT; i++)
		assert_int_equal(item_try((enum item)i, NULL), 0);
	for (i = 0; i < ARRAY_SIZE(item_cases); i++) {
		const struct item_case *c = &item_cases[i];
		int r = item_try(c->item, c);

		if (r != LR_EBADMSG)
			fail_msg("item case \"%s\": got %d", c->name, r);
	}
}

static void test_entry_path_too_long(void **state)
{
	uint8_t *raw =
		calloc(1, 4 + PROTO_XFER_ENTRY_FIXED + PROTO_XFER_MAX_PATH + 1);
	struct proto_xfer_iter it;
	struct proto_xfer_entry e;
	size_t vlen = PROTO_XFER_ENTRY_FIXED + PROTO_XFER_MAX_PATH + 1;

	(void)state;
	assert_non_null(raw);
	wr_be(raw, PROTO_T_ENTRY, 2);
	wr_be(raw + 2, vlen, 2);
	raw[4 + 4] = PROTO_XK_FILE;
	wr_be(raw + 4 + 28, PROTO_XFER_MAX_PATH + 1, 2);
	proto_xfer_iter_init(&it, raw, 4 + vlen);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_entry(&it, &e), LR_EBADMSG);
	/* at the maximum it is accepted */
	vlen--;
	wr_be(raw + 2, vlen, 2);
	wr_be(raw + 4 + 28, PROTO_XFER_MAX_PATH, 2);
	proto_xfer_iter_init(&it, raw, 4 + vlen);
	assert_int_equal(proto_xfer_iter_next(&it), 1);
	assert_int_equal(proto_xfer_get_entry(&it, &e), 0);
	assert_int_equal(e.path_len, PROTO_XFER_MAX_PATH);
	free(raw);
}

static void test_iter_truncated(void **state)
{
	uint8_t buf[256];
	struct proto_buf b;
	struct proto_xfer_iter it;
	size_t full, cut;

	(void)state;
	proto_buf_init(&b, buf, sizeof(buf));
	put_item(&b, I_PLAN);
	put_item(&b, I_SUM);
	full = b.len;
	for (cut = 1; cut < full; cut++) {
		int r, n = 0;

		proto_xfer_iter_init(&it, buf, cut);
		while ((r = proto_xfer_iter_next(&it)) == 1)
			n++;
		if (cut == 4 + PROTO_XFER_PLAN_LEN) {
			assert_int_equal(r, 0);
			assert_int_equal(n, 1);
		} else {
			assert_int_equal(r, LR_EBADMSG);
			/* and it stays so */
			assert_int_equal(proto_xfer_iter_next(&it), LR_EBADMSG);
		}
	}
	proto_xfer_iter_init(&it, buf, 0);
	assert_int_equal(proto_xfer_iter_next(&it), 0);
}

/* ---- malformed requests ---- */

#define F_OP	  (1u << 0)
#define F_STREAMS (1u << 1)
#define F_CHUNK	  (1u << 2)
#define F_FLAGS	  (1u << 3)
#define F_RATE	  (1u << 4)

struct rq_case {
	const char *name;
	uint8_t op;
	uint16_t streams;
	uint32_t chunk;
	uint32_t flags;
	const char *paths[3];
	unsigned npaths;
	unsigned omit; /* F_* not written */
	unsigned dup;  /* F_* written twice */
	bool ok;
};

static const struct rq_case rq_cases[] = {
	{ "valid push", 1, 4, 0, 0, { "" }, 1, 0, 0, true },
	{ "valid push dir", 1, 4, 0, 0, { "a/b" }, 1, 0, 0, true },
	{ "valid pull", 2, 4, 0, 0, { "a", "b" }, 2, 0, 0, true },
	{ "valid no optional",
	  2,
	  1,
	  0,
	  0,
	  { "a" },
	  1,
	  F_CHUNK | F_FLAGS | F_RATE,
	  0,
	  true },
	{ "valid dots in names",
	  2,
	  1,
	  0,
	  0,
	  { "...", "a..", ".b" },
	  3,
	  0,
	  0,
	  true },
	{ "missing op", 1, 4, 0, 0, { "" }, 1, F_OP, 0, false },
	{ "missing streams", 1, 4, 0, 0, { "" }, 1, F_STREAMS, 0, false },
	{ "duplicate op", 1, 4, 0, 0, { "" }, 1, 0, F_OP, false },
	{ "duplicate streams", 1, 4, 0, 0, { "" }, 1, 0, F_STREAMS, false },
	{ "duplicate chunk", 1, 4, 0, 0, { "" }, 1, 0, F_CHUNK, false },
	{ "duplicate flags", 1, 4, 0, 0, { "" }, 1, 0, F_FLAGS, false },
	{ "duplicate rate", 1, 4, 0, 0, { "" }, 1, 0, F_RATE, false },
	{ "op 0", 0, 4, 0, 0, { "" }, 1, 0, 0, false },
	{ "op 3", 3, 4, 0, 0, { "" }, 1, 0, 0, false },
	{ "streams 0", 1, 0, 0, 0, { "" }, 1, 0, 0, false },
	{ "streams max+1",
	  1,
	  PROTO_MAX_STREAMS + 1,
	  0,
	  0,
	  { "" },
	  1,
	  0,
	  0,
	  false },
	{ "chunk below min",
	  1,
	  4,
	  PROTO_XFER_MIN_CHUNK - 1,
	  0,
	  { "" },
	  1,
	  0,
	  0,
	  false },
	{ "chunk 1", 1, 4, 1, 0, { "" }, 1, 0, 0, false },
	{ "chunk above max",
	  1,
	  4,
	  PROTO_XFER_MAX_CHUNK + 1,
	  0,
	  { "" },
	  1,
	  0,
	  0,
	  false },
	{ "unknown flag bit", 1, 4, 0, 1u << 19, { "" }, 1, 0, 0, false },
	{ "xattrs and acls",
	  1,
	  4,
	  0,
	  PROTO_XF_XATTRS | PROTO_XF_ACLS,
	  { "" },
	  1,
	  0,
	  0,
	  true },
	{ "numeric ids with acls",
	  1,
	  4,
	  0,
	  PROTO_XF_ACLS | PROTO_XF_NUMERIC_IDS,
	  { "" },
	  1,
	  0,
	  0,
	  true },
	{ "acls into a pipe",
	  2,
	  4,
	  0,
	  PROTO_XF_ACLS | PROTO_XF_STDOUT,
	  { "a" },
	  1,
	  0,
	  0,
	  false },
	{ "xattrs in doctor's test",
	  1,
	  4,
	  0,
	  PROTO_XF_XATTRS | PROTO_XF_SCRATCH,
	  { "" },
	  1,
	  0,
	  0,
	  false },
	{ "hard links", 1, 4, 0, PROTO_XF_HARD_LINKS, { "" }, 1, 0, 0, true },
	{ "hard links into a pipe",
	  2,
	  4,
	  0,
	  PROTO_XF_HARD_LINKS | PROTO_XF_STDOUT,
	  { "a" },
	  1,
	  0,
	  0,
	  false },
	{ "numeric ids alone",
	  1,
	  4,
	  0,
	  PROTO_XF_NUMERIC_IDS,
	  { "" },
	  1,
	  0,
	  0,
	  false },
	{ "owner, group, numeric ids",
	  1,
	  4,
	  0,
	  PROTO_XF_OWNER | PROTO_XF_GROUP | PROTO_XF_NUMERIC_IDS,
	  { "" },
	  1,
	  0,
	  0,
	  true },
	{ "hard links, scratch",
	  1,
	  4,
	  0,
	  PROTO_XF_HARD_LINKS | PROTO_XF_SCRATCH,
	  { "" },
	  1,
	  0,
	  0,
	  false },
	{ "delete-excluded alone", 1, 4, 0, 1u << 7, { "" }, 1, 0, 0, false },
	{ "high flag bit", 1, 4, 0, 1u << 31, { "" }, 1, 0, 0, false },
	{ "push two paths", 1, 4, 0, 0, { "a", "b" }, 2, 0, 0, false },
	{ "push no path", 1, 4, 0, 0, { "" }, 0, 0, 0, false },
	{ "pull no path", 2, 4, 0, 0, { "" }, 0, 0, 0, false },
	{ "pull empty path", 2, 4, 0, 0, { "a", "" }, 2, 0, 0, false },
	{ "dotdot", 2, 4, 0, 0, { ".." }, 1, 0, 0, false },
	{ "dotdot inside", 2, 4, 0, 0, { "a/../b" }, 1, 0, 0, false },
	{ "dotdot last", 1, 4, 0, 0, { "a/.." }, 1, 0, 0, false },
	{ "dot", 2, 4, 0, 0, { "a/./b" }, 1, 0, 0, false },
	{ "absolute", 2, 4, 0, 0, { "/etc/passwd" }, 1, 0, 0, false },
	{ "absolute push", 1, 4, 0, 0, { "/" }, 1, 0, 0, false },
	{ "trailing slash", 2, 4, 0, 0, { "a/" }, 1, 0, 0, false },
	{ "double slash", 2, 4, 0, 0, { "a//b" }, 1, 0, 0, false },
	{ "control char", 2, 4, 0, 0, { "a\nb" }, 1, 0, 0, false },
	{ "escape", 2, 4, 0, 0, { "a\x1b[2J" }, 1, 0, 0, false },
	{ "DEL", 2, 4, 0, 0, { "a\x7f" }, 1, 0, 0, false },
	{ "bad second path", 2, 4, 0, 0, { "ok", "../x" }, 2, 0, 0, false },
};

static void put_field(struct proto_buf *b, const struct rq_case *c, unsigned f)
{
	switch (f) {
	case F_OP: proto_put_u8(b, PROTO_T_OP, c->op); break;
	case F_STREAMS: proto_put_u16(b, PROTO_T_STREAMS, c->streams); break;
	case F_CHUNK: proto_put_u32(b, PROTO_T_CHUNK_SIZE, c->chunk); break;
	case F_FLAGS: proto_put_u32(b, PROTO_T_XFLAGS, c->flags); break;
	case F_RATE: proto_put_u64(b, PROTO_T_RATE, 0); break;
	}
}

static void test_request_malformed(void **state)
{
	struct proto_xfer_request r;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(rq_cases); i++) {
		const struct rq_case *c = &rq_cases[i];
		struct msg m;
		uint8_t *body;
		size_t len;
		unsigned f, k;
		int got;

		msg_init(&m, 4096);
		proto_msg_begin(&m.b, PROTO_XFER_REQUEST);
		for (f = F_OP; f <= F_RATE; f <<= 1) {
			if (!(c->omit & f))
				put_field(&m.b, c, f);
			if (c->dup & f)
				put_field(&m.b, c, f);
		}
		for (k = 0; k < c->npaths; k++)
			proto_put_str(&m.b, PROTO_T_PATH, c->paths[k]);
		assert_int_equal(proto_msg_end(&m.b), 0);
		body = msg_body(&m, PROTO_XFER_REQUEST, &len);
		got = proto_decode_xfer_request(body, len, &r);
		if (got != (c->ok ? 0 : LR_EBADMSG))
			fail_msg("request case \"%s\": got %d", c->name, got);
		msg_free(&m);
	}
}

/* Paths that need explicit lengths: a NUL, too long, too many. */
static void test_request_paths_raw(void **state)
{
	static const char *const many[PROTO_XFER_MAX_PATHS + 1] = { 0 };
	struct proto_xfer_request r;
	char *p = malloc(PROTO_XFER_MAX_PATH + 1);
	struct msg m;
	uint8_t *body;
	size_t len;
	unsigned i;

	(void)state;
	(void)many;
	assert_non_null(p);
	msg_init(&m, MSG_CAP);

	/* NUL inside */
	proto_msg_begin(&m.b, PROTO_XFER_REQUEST);
	proto_put_u8(&m.b, PROTO_T_OP, PROTO_XFER_PULL);
	proto_put_u16(&m.b, PROTO_T_STREAMS, 1);
	proto_put_bytes(&m.b, PROTO_T_PATH, "a\0b", 3);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &r), LR_EBADMSG);

	/* longer than PROTO_XFER_MAX_PATH */
	for (i = 0; i <= PROTO_XFER_MAX_PATH; i++)
		p[i] = (i % 100 == 99) ? '/' : 'q';
	proto_buf_init(&m.b, m.mem, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_REQUEST);
	proto_put_u8(&m.b, PROTO_T_OP, PROTO_XFER_PULL);
	proto_put_u16(&m.b, PROTO_T_STREAMS, 1);
	proto_put_bytes(&m.b, PROTO_T_PATH, p, PROTO_XFER_MAX_PATH + 1);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &r), LR_EBADMSG);

	/* one component longer than PROTO_XFER_MAX_NAME */
	memset(p, 'n', PROTO_XFER_MAX_NAME + 1);
	proto_buf_init(&m.b, m.mem, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_REQUEST);
	proto_put_u8(&m.b, PROTO_T_OP, PROTO_XFER_PULL);
	proto_put_u16(&m.b, PROTO_T_STREAMS, 1);
	proto_put_bytes(&m.b, PROTO_T_PATH, p, PROTO_XFER_MAX_NAME + 1);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &r), LR_EBADMSG);

	/* more than PROTO_XFER_MAX_PATHS */
	proto_buf_init(&m.b, m.mem, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_REQUEST);
	proto_put_u8(&m.b, PROTO_T_OP, PROTO_XFER_PULL);
	proto_put_u16(&m.b, PROTO_T_STREAMS, 1);
	for (i = 0; i <= PROTO_XFER_MAX_PATHS; i++)
		proto_put_str(&m.b, PROTO_T_PATH, "f");
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &r), LR_EBADMSG);

	/* unknown tags: skipped, unless critical */
	proto_buf_init(&m.b, m.mem, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_REQUEST);
	proto_put_u8(&m.b, PROTO_T_OP, PROTO_XFER_PULL);
	proto_put_u16(&m.b, PROTO_T_STREAMS, 1);
	proto_put_str(&m.b, PROTO_T_PATH, "f");
	proto_put_u32(&m.b, 0x4fff, 1);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &r), 0);
	proto_buf_init(&m.b, m.mem, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_REQUEST);
	proto_put_u8(&m.b, PROTO_T_OP, PROTO_XFER_PULL);
	proto_put_u16(&m.b, PROTO_T_STREAMS, 1);
	proto_put_str(&m.b, PROTO_T_PATH, "f");
	proto_put_u32(&m.b, PROTO_TAG_CRITICAL | 0x4fff, 1);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &r), LR_EBADMSG);

	/* wrong value lengths */
	proto_buf_init(&m.b, m.mem, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_REQUEST);
	proto_put_u16(&m.b, PROTO_T_OP, PROTO_XFER_PULL);
	proto_put_u16(&m.b, PROTO_T_STREAMS, 1);
	proto_put_str(&m.b, PROTO_T_PATH, "f");
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &r), LR_EBADMSG);
	proto_buf_init(&m.b, m.mem, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_XFER_REQUEST);
	proto_put_u8(&m.b, PROTO_T_OP, PROTO_XFER_PULL);
	proto_put_u32(&m.b, PROTO_T_STREAMS, 1);
	proto_put_str(&m.b, PROTO_T_PATH, "f");
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_REQUEST, &len);
	assert_int_equal(proto_decode_xfer_request(body, len, &r), LR_EBADMSG);

	msg_free(&m);
	free(p);
}

/* Whether cut falls between two TLVs of the valid body. */
static bool at_boundary(const uint8_t *body, size_t len, size_t cut)
{
	struct proto_xfer_iter it;

	proto_xfer_iter_init(&it, body, len);
	if (cut == 0)
		return true;
	while (proto_xfer_iter_next(&it) == 1)
		if (it.off == cut)
			return true;
	return false;
}

/* Every proper prefix of a valid body that cuts a TLV is refused, and so
 * is a TLV whose length runs past the body. */
static void test_truncated_messages(void **state)
{
	static const char *const pull[] = { "a/b", "c" };
	struct proto_xfer_request rq;
	struct proto_xfer_accept ac;
	struct proto_xfer_totals to = { 3, 4 };
	struct proto_xfer_done dn;
	struct msg m;
	uint8_t *body;
	size_t len, cut;
	int k;

	(void)state;
	memset(&rq, 0, sizeof(rq));
	rq.op = PROTO_XFER_PULL;
	rq.streams = 3;
	set_paths(&rq, pull, 2);
	memset(&ac, 0, sizeof(ac));
	ac.streams = 2;
	ac.chunk_size = PROTO_XFER_MIN_CHUNK;
	snprintf(ac.software, sizeof(ac.software), "lr");
	memset(&dn, 0, sizeof(dn));
	dn.files_ok = 3;

	for (k = 0; k < 4; k++) {
		msg_init(&m, MSG_CAP);
		switch (k) {
		case 0: proto_encode_xfer_request(&m.b, &rq); break;
		case 1: proto_encode_xfer_accept(&m.b, &ac); break;
		case 2: proto_encode_xfer_totals(&m.b, &to); break;
		case 3: proto_encode_xfer_done(&m.b, &dn); break;
		}
		assert_int_equal(m.b.err, 0);
		body = m.mem + PROTO_HDR_LEN;
		len = m.b.len - PROTO_HDR_LEN;
		for (cut = 0; cut <= len; cut++) {
			uint8_t *copy = malloc(cut ? cut : 1);
			int r = 0;

			memcpy(copy, body, cut);
			switch (k) {
			case 0:
				r = proto_decode_xfer_request(copy, cut, &rq);
				break;
			case 1:
				r = proto_decode_xfer_accept(copy, cut, &ac);
				break;
			case 2:
				r = proto_decode_xfer_totals(copy, cut, &to);
				break;
			case 3:
				r = proto_decode_xfer_done(copy, cut, &dn);
				break;
			}
			/* a cut between TLVs may leave a valid message
			 * (optional fields or paths dropped); inside one
			 * it never does */
			if (cut == len)
				assert_int_equal(r, 0);
			else if (!at_boundary(body, len, cut))
				assert_int_equal(r, LR_EBADMSG);
			else
				assert_true(r == 0 || r == LR_EBADMSG);
			free(copy);
		}
		/* the first TLV's length grown past the body */
		wr_be(body + 2, len, 2);
		switch (k) {
		case 0:
			assert_int_equal(proto_decode_xfer_request(body, len,
								   &rq),
					 LR_EBADMSG);
			break;
		case 1:
			assert_int_equal(proto_decode_xfer_accept(body, len,
								  &ac),
					 LR_EBADMSG);
			break;
		case 2:
			assert_int_equal(proto_decode_xfer_totals(body, len,
								  &to),
					 LR_EBADMSG);
			break;
		case 3:
			assert_int_equal(proto_decode_xfer_done(body, len, &dn),
					 LR_EBADMSG);
			break;
		}
		msg_free(&m);
	}
}

/* ---- malformed accept, totals, done ---- */

static int accept_with(unsigned omit, unsigned dup, uint16_t streams,
		       uint32_t chunk, size_t idlen)
{
	struct proto_xfer_accept a;
	uint8_t id[PROTO_TEST_ID_LEN + 1] = { 0 };
	struct msg m;
	uint8_t *body;
	size_t len;
	int r, n;

	msg_init(&m, 4096);
	proto_msg_begin(&m.b, PROTO_XFER_ACCEPT);
	for (n = 0; n < ((dup & 1) ? 2 : 1) && !(omit & 1); n++)
		proto_put_bytes(&m.b, PROTO_T_TEST_ID, id, idlen);
	for (n = 0; n < ((dup & 2) ? 2 : 1) && !(omit & 2); n++)
		proto_put_str(&m.b, PROTO_T_SOFTWARE, "sw");
	for (n = 0; n < ((dup & 4) ? 2 : 1) && !(omit & 4); n++)
		proto_put_u16(&m.b, PROTO_T_STREAMS, streams);
	for (n = 0; n < ((dup & 8) ? 2 : 1) && !(omit & 8); n++)
		proto_put_u32(&m.b, PROTO_T_CHUNK_SIZE, chunk);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_ACCEPT, &len);
	r = proto_decode_xfer_accept(body, len, &a);
	msg_free(&m);
	return r;
}

static void test_accept_malformed(void **state)
{
	const uint32_t c = PROTO_XFER_MIN_CHUNK;
	unsigned f;

	(void)state;
	assert_int_equal(accept_with(0, 0, 1, c, 16), 0);
	assert_int_equal(accept_with(2, 0, 1, c, 16), 0); /* no software */
	assert_int_equal(accept_with(1, 0, 1, c, 16), LR_EBADMSG);
	assert_int_equal(accept_with(4, 0, 1, c, 16), LR_EBADMSG);
	assert_int_equal(accept_with(8, 0, 1, c, 16), LR_EBADMSG);
	for (f = 1; f <= 8; f <<= 1)
		assert_int_equal(accept_with(0, f, 1, c, 16), LR_EBADMSG);
	assert_int_equal(accept_with(0, 0, 0, c, 16), LR_EBADMSG);
	assert_int_equal(accept_with(0, 0, PROTO_MAX_STREAMS + 1, c, 16),
			 LR_EBADMSG);
	assert_int_equal(accept_with(0, 0, 1, 0, 16), LR_EBADMSG);
	assert_int_equal(accept_with(0, 0, 1, c - 1, 16), LR_EBADMSG);
	assert_int_equal(accept_with(0, 0, 1, PROTO_XFER_MAX_CHUNK + 1, 16),
			 LR_EBADMSG);
	assert_int_equal(accept_with(0, 0, 1, PROTO_XFER_MAX_CHUNK, 16), 0);
	assert_int_equal(accept_with(0, 0, 1, c, 15), LR_EBADMSG);
	assert_int_equal(accept_with(0, 0, 1, c, 17), LR_EBADMSG);
}

static void test_totals_done_malformed(void **state)
{
	static const uint16_t done_tags[] = { PROTO_T_FILES,
					      PROTO_T_FILES_FAILED,
					      PROTO_T_FILES_SKIPPED,
					      PROTO_T_BYTES };
	struct proto_xfer_totals t;
	struct proto_xfer_done d;
	uint8_t w[25] = { 0 };
	struct msg m;
	uint8_t *body;
	size_t len, i, j;

	(void)state;
	msg_init(&m, 4096);
	/* totals: files over the bound, missing, duplicated, wrong size */
	proto_msg_begin(&m.b, PROTO_XFER_TOTALS);
	proto_put_u64(&m.b, PROTO_T_FILES, PROTO_XFER_MAX_FILES + 1);
	proto_put_u64(&m.b, PROTO_T_BYTES, 0);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_TOTALS, &len);
	assert_int_equal(proto_decode_xfer_totals(body, len, &t), LR_EBADMSG);

	proto_buf_init(&m.b, m.mem, 4096);
	proto_msg_begin(&m.b, PROTO_XFER_TOTALS);
	proto_put_u64(&m.b, PROTO_T_BYTES, 0);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_TOTALS, &len);
	assert_int_equal(proto_decode_xfer_totals(body, len, &t), LR_EBADMSG);

	proto_buf_init(&m.b, m.mem, 4096);
	proto_msg_begin(&m.b, PROTO_XFER_TOTALS);
	proto_put_u64(&m.b, PROTO_T_FILES, 1);
	proto_put_u64(&m.b, PROTO_T_FILES, 1);
	proto_put_u64(&m.b, PROTO_T_BYTES, 0);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_TOTALS, &len);
	assert_int_equal(proto_decode_xfer_totals(body, len, &t), LR_EBADMSG);

	proto_buf_init(&m.b, m.mem, 4096);
	proto_msg_begin(&m.b, PROTO_XFER_TOTALS);
	proto_put_u32(&m.b, PROTO_T_FILES, 1);
	proto_put_u64(&m.b, PROTO_T_BYTES, 0);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_XFER_TOTALS, &len);
	assert_int_equal(proto_decode_xfer_totals(body, len, &t), LR_EBADMSG);

	/* done: each required field missing or duplicated */
	for (i = 0; i < ARRAY_SIZE(done_tags); i++) {
		for (j = 0; j < 2; j++) {
			size_t k;

			proto_buf_init(&m.b, m.mem, 4096);
			proto_msg_begin(&m.b, PROTO_XFER_DONE);
			for (k = 0; k < ARRAY_SIZE(done_tags); k++) {
				if (k == i && j == 0)
					continue;
				proto_put_u64(&m.b, done_tags[k], 1);
				if (k == i && j == 1)
					proto_put_u64(&m.b, done_tags[k], 1);
			}
			assert_int_equal(proto_msg_end(&m.b), 0);
			body = msg_body(&m, PROTO_XFER_DONE, &len);
			assert_int_equal(proto_decode_xfer_done(body, len, &d),
					 LR_EBADMSG);
		}
	}
	/* counts over the bound, alone or summed; wait of a wrong size or
	 * twice */
	for (i = 0; i < 5; i++) {
		proto_buf_init(&m.b, m.mem, 4096);
		proto_msg_begin(&m.b, PROTO_XFER_DONE);
		proto_put_u64(&m.b, PROTO_T_FILES,
			      i == 0 ? PROTO_XFER_MAX_FILES + 1
				     : (i == 1 ? PROTO_XFER_MAX_FILES : 0));
		proto_put_u64(&m.b, PROTO_T_FILES_FAILED,
			      i == 1 ? 1 : (i == 2 ? UINT64_MAX : 0));
		proto_put_u64(&m.b, PROTO_T_FILES_SKIPPED, 0);
		proto_put_u64(&m.b, PROTO_T_BYTES, 0);
		if (i == 3)
			proto_put_bytes(&m.b, PROTO_T_WAIT, w, 25);
		if (i == 4) {
			proto_put_bytes(&m.b, PROTO_T_WAIT, w, 24);
			proto_put_bytes(&m.b, PROTO_T_WAIT, w, 24);
		}
		assert_int_equal(proto_msg_end(&m.b), 0);
		body = msg_body(&m, PROTO_XFER_DONE, &len);
		assert_int_equal(proto_decode_xfer_done(body, len, &d),
				 LR_EBADMSG);
	}
	msg_free(&m);
}

/* ---- chunk header ---- */

static void test_chunk(void **state)
{
	struct proto_xfer_chunk_hdr h = { PROTO_XC_DATA,
					  0xa1b2c3d4,
					  77,
					  PROTO_XFER_MAX_CHUNK,
					  { 9, 8, 7, 6, 5, 4, 3, 2, 1 } },
				    g;
	uint8_t out[PROTO_XFER_CHUNK_HDR_LEN], bad[PROTO_XFER_CHUNK_HDR_LEN];
	static const struct {
		int off;
		uint32_t v;
		int width;
	} muts[] = {
		{ 0, 0, 1 },	       { 0, 3, 1 },
		{ 0, 0xff, 1 },	       { 1, 1, 1 },
		{ 2, 0x80, 1 },	       { 3, 1, 1 },
		{ 12, 0, 4 },	       { 12, PROTO_XFER_MAX_CHUNK + 1, 4 },
		{ 12, UINT32_MAX, 4 },
	};
	size_t i;

	(void)state;
	memset(out, 0xee, sizeof(out));
	proto_xfer_chunk_encode(out, &h);
	assert_int_equal(out[0], PROTO_XC_DATA);
	assert_int_equal(out[1] | out[2] | out[3], 0);
	memset(&g, 0, sizeof(g));
	assert_int_equal(proto_xfer_chunk_decode(out, &g), 0);
	assert_true(g.kind == h.kind && g.idx == h.idx && g.chunk == h.chunk &&
		    g.len == h.len &&
		    !memcmp(g.digest, h.digest, PROTO_XFER_DIGEST_LEN));

	h.kind = PROTO_XC_ZERO;
	h.len = 1;
	proto_xfer_chunk_encode(out, &h);
	assert_int_equal(proto_xfer_chunk_decode(out, &g), 0);
	assert_int_equal(g.kind, PROTO_XC_ZERO);
	assert_int_equal(g.len, 1);

	for (i = 0; i < ARRAY_SIZE(muts); i++) {
		memcpy(bad, out, sizeof(bad));
		wr_be(bad + muts[i].off, muts[i].v, (size_t)muts[i].width);
		memset(&g, 0x5a, sizeof(g));
		if (proto_xfer_chunk_decode(bad, &g) != LR_EBADMSG)
			fail_msg("chunk mutation %zu accepted", i);
	}
}

/* ---- linerate doctor: PROBE_REQUEST and PROBE_RESULT ---- */

static void probe_request_rt(const struct proto_probe_request *in)
{
	struct proto_probe_request out;
	struct msg m;
	uint8_t *body;
	size_t len;

	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_probe_request(&m.b, in), 0);
	body = msg_body(&m, PROTO_PROBE_REQUEST, &len);
	memset(&out, 0x5a, sizeof(out));
	assert_int_equal(proto_decode_probe_request(body, len, &out), 0);
	assert_true(out.disk_bytes == in->disk_bytes);
	assert_int_equal(out.cipher_ms, in->cipher_ms);
	assert_string_equal(out.dir, in->dir);
	msg_free(&m);
}

static void test_probe_request_roundtrip(void **state)
{
	struct proto_probe_request rq;

	(void)state;
	memset(&rq, 0, sizeof(rq));
	probe_request_rt(&rq);
	rq.disk_bytes = 256ull << 20;
	rq.cipher_ms = 150;
	probe_request_rt(&rq);
	snprintf(rq.dir, sizeof(rq.dir), "a/b c/d-e_f.g");
	probe_request_rt(&rq);
	/* the limits themselves are accepted */
	rq.disk_bytes = PROTO_PROBE_MAX_DISK;
	rq.cipher_ms = PROTO_PROBE_MAX_MS;
	memset(rq.dir, 'd', PROTO_XFER_MAX_PATH);
	rq.dir[PROTO_XFER_MAX_PATH] = 0;
	probe_request_rt(&rq);
}

/* The fields of a PROBE_REQUEST, each put (or not) on its own. */
enum { QF_DISK = 1, QF_MS = 2, QF_PATH = 4 };

struct pq_case {
	const char *name;
	unsigned omit, dup;
	uint64_t disk;
	uint32_t ms;
	/* a raw TLV appended after the fields: tag, value, length */
	uint16_t tag;
	const char *val;
	size_t vlen;
	bool ok;
};

static const struct pq_case pq_cases[] = {
	{ "valid", 0, 0, 1 << 20, 100, 0, NULL, 0, true },
	{ "no path", QF_PATH, 0, 1 << 20, 100, 0, NULL, 0, true },
	{ "zeros", 0, 0, 0, 0, 0, NULL, 0, true },
	{ "disk at max", 0, 0, PROTO_PROBE_MAX_DISK, 1, 0, NULL, 0, true },
	{ "disk over max", 0, 0, PROTO_PROBE_MAX_DISK + 1, 1, 0, NULL, 0,
	  false },
	{ "disk huge", 0, 0, UINT64_MAX, 1, 0, NULL, 0, false },
	{ "ms at max", 0, 0, 1, PROTO_PROBE_MAX_MS, 0, NULL, 0, true },
	{ "ms over max", 0, 0, 1, PROTO_PROBE_MAX_MS + 1, 0, NULL, 0, false },
	{ "ms huge", 0, 0, 1, UINT32_MAX, 0, NULL, 0, false },
	{ "no disk", QF_DISK, 0, 1, 1, 0, NULL, 0, false },
	{ "no ms", QF_MS, 0, 1, 1, 0, NULL, 0, false },
	{ "nothing", QF_DISK | QF_MS | QF_PATH, 0, 1, 1, 0, NULL, 0, false },
	{ "dup disk", 0, QF_DISK, 1, 1, 0, NULL, 0, false },
	{ "dup ms", 0, QF_MS, 1, 1, 0, NULL, 0, false },
	{ "dup path", 0, QF_PATH, 1, 1, 0, NULL, 0, false },
	{ "disk as u32", QF_DISK, 0, 1, 1, PROTO_T_DISK_BYTES, "\0\0\0\1", 4,
	  false },
	{ "ms as u64", QF_MS, 0, 1, 1, PROTO_T_CIPHER_MS, "\0\0\0\0\0\0\0\1", 8,
	  false },
	{ "path newline", QF_PATH, 0, 1, 1, PROTO_T_PATH, "a\nb", 3, false },
	{ "path escape", QF_PATH, 0, 1, 1, PROTO_T_PATH, "a\x1b[2J", 5, false },
	{ "path DEL", QF_PATH, 0, 1, 1, PROTO_T_PATH, "a\x7f", 2, false },
	{ "path NUL", QF_PATH, 0, 1, 1, PROTO_T_PATH, "a\0b", 3, false },
	{ "path high byte", QF_PATH, 0, 1, 1, PROTO_T_PATH, "a\xc3\xa9", 3,
	  false },
	{ "unknown tag", 0, 0, 1, 1, 0x4fff, "x", 1, true },
	{ "critical unknown tag", 0, 0, 1, 1, PROTO_TAG_CRITICAL | 0x4fff, "x",
	  1, false },
};

static void put_pq(struct proto_buf *b, const struct pq_case *c, unsigned f)
{
	switch (f) {
	case QF_DISK: proto_put_u64(b, PROTO_T_DISK_BYTES, c->disk); break;
	case QF_MS: proto_put_u32(b, PROTO_T_CIPHER_MS, c->ms); break;
	case QF_PATH: proto_put_str(b, PROTO_T_PATH, "sub/dir"); break;
	}
}

static void test_probe_request_malformed(void **state)
{
	struct proto_probe_request rq;
	char *p = malloc(PROTO_XFER_MAX_PATH + 2);
	struct msg m;
	uint8_t *body;
	size_t i, len;

	(void)state;
	assert_non_null(p);
	for (i = 0; i < ARRAY_SIZE(pq_cases); i++) {
		const struct pq_case *c = &pq_cases[i];
		unsigned f;
		int got;

		msg_init(&m, 4096);
		proto_msg_begin(&m.b, PROTO_PROBE_REQUEST);
		for (f = QF_DISK; f <= QF_PATH; f <<= 1) {
			if (!(c->omit & f))
				put_pq(&m.b, c, f);
			if (c->dup & f)
				put_pq(&m.b, c, f);
		}
		if (c->val)
			proto_put_bytes(&m.b, c->tag, c->val, c->vlen);
		assert_int_equal(proto_msg_end(&m.b), 0);
		body = msg_body(&m, PROTO_PROBE_REQUEST, &len);
		got = proto_decode_probe_request(body, len, &rq);
		if (got != (c->ok ? 0 : LR_EBADMSG))
			fail_msg("probe request case \"%s\": got %d", c->name,
				 got);
		msg_free(&m);
	}

	/* a path one byte longer than PROTO_XFER_MAX_PATH */
	memset(p, 'q', PROTO_XFER_MAX_PATH + 1);
	msg_init(&m, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_PROBE_REQUEST);
	proto_put_u64(&m.b, PROTO_T_DISK_BYTES, 1);
	proto_put_u32(&m.b, PROTO_T_CIPHER_MS, 1);
	proto_put_bytes(&m.b, PROTO_T_PATH, p, PROTO_XFER_MAX_PATH + 1);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_PROBE_REQUEST, &len);
	assert_int_equal(proto_decode_probe_request(body, len, &rq),
			 LR_EBADMSG);

	/* every proper prefix: a cut TLV or a missing field */
	proto_buf_init(&m.b, m.mem, MSG_CAP);
	proto_msg_begin(&m.b, PROTO_PROBE_REQUEST);
	proto_put_str(&m.b, PROTO_T_PATH, "x");
	proto_put_u64(&m.b, PROTO_T_DISK_BYTES, 1);
	proto_put_u32(&m.b, PROTO_T_CIPHER_MS, 1);
	assert_int_equal(proto_msg_end(&m.b), 0);
	body = msg_body(&m, PROTO_PROBE_REQUEST, &len);
	assert_int_equal(proto_decode_probe_request(body, len, &rq), 0);
	for (i = 0; i < len; i++) {
		uint8_t *cut = malloc(i ? i : 1);

		assert_non_null(cut);
		memcpy(cut, body, i);
		if (proto_decode_probe_request(cut, i, &rq) != LR_EBADMSG)
			fail_msg("probe request prefix of %zu bytes accepted",
				 i);
		free(cut);
	}
	msg_free(&m);
	free(p);
}

static void sample_result(struct proto_probe_result *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->model, sizeof(r->model),
		 "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz");
	r->centicores = 20;
	snprintf(r->governor, sizeof(r->governor), "powersave");
	r->aes = 1;
	r->nrates = 2;
	r->rates[0].cipher = 1;
	r->rates[0].seal = 3000000000ull;
	r->rates[0].open = 2900000000ull;
	r->rates[1].cipher = 2;
	r->rates[1].seal = UINT64_MAX;
	r->rates[1].open = 1;
	snprintf(r->storage, sizeof(r->storage), "SD/MMC card mmcblk0p2, ext4");
	r->sockbuf[0] = 212992;
	r->sockbuf[1] = 212992;
	r->sockbuf[2] = 6291456;
	r->sockbuf[3] = UINT32_MAX;
	snprintf(r->cc, sizeof(r->cc), "bbr");
	r->disk_bytes = PROTO_PROBE_MAX_DISK;
	r->disk_usec = 51200000;
	r->disk_cpu_usec = 1234567;
	snprintf(r->disk_error, sizeof(r->disk_error), "no space left: 5%%");
}

static void probe_result_rt(const struct proto_probe_result *in)
{
	struct proto_probe_result out;
	struct msg m;
	uint8_t *body;
	size_t len;
	unsigned i;

	msg_init(&m, MSG_CAP);
	assert_int_equal(proto_encode_probe_result(&m.b, in), 0);
	body = msg_body(&m, PROTO_PROBE_RESULT, &len);
	memset(&out, 0x5a, sizeof(out));
	assert_int_equal(proto_decode_probe_result(body, len, &out), 0);
	assert_string_equal(out.model, in->model);
	assert_int_equal(out.centicores, in->centicores);
	assert_string_equal(out.governor, in->governor);
	assert_int_equal(out.aes, in->aes);
	assert_int_equal(out.nrates, in->nrates);
	for (i = 0; i < in->nrates; i++) {
		assert_int_equal(out.rates[i].cipher, in->rates[i].cipher);
		assert_true(out.rates[i].seal == in->rates[i].seal);
		assert_true(out.rates[i].open == in->rates[i].open);
	}
	assert_string_equal(out.storage, in->storage);
	assert_memory_equal(out.sockbuf, in->sockbuf, sizeof(in->sockbuf));
	assert_string_equal(out.cc, in->cc);
	assert_true(out.disk_bytes == in->disk_bytes);
	assert_true(out.disk_usec == in->disk_usec);
	/* optional: an older server's result has none, read as 0 */
	assert_true(out.disk_cpu_usec == in->disk_cpu_usec);
	assert_string_equal(out.disk_error, in->disk_error);
	msg_free(&m);
}

static void test_probe_result_roundtrip(void **state)
{
	struct proto_probe_result r;

	(void)state;
	sample_result(&r);
	probe_result_rt(&r);

	/* empty strings, no rates, no disk test, no error */
	memset(&r, 0, sizeof(r));
	probe_result_rt(&r);

	/* strings at their longest */
	sample_result(&r);
	memset(r.model, 'm', PROTO_MAX_TEXT);
	r.model[PROTO_MAX_TEXT] = 0;
	memset(r.governor, 'g', PROTO_MAX_NAME);
	r.governor[PROTO_MAX_NAME] = 0;
	memset(r.storage, 's', PROTO_MAX_TEXT);
	r.storage[PROTO_MAX_TEXT] = 0;
	memset(r.cc, 'c', PROTO_CC_LEN - 1);
	r.cc[PROTO_CC_LEN - 1] = 0;
	memset(r.disk_error, 'e', PROTO_MAX_TEXT);
	r.disk_error[PROTO_MAX_TEXT] = 0;
	r.nrates = 1;
	probe_result_rt(&r);
}

/* The fields of a PROBE_RESULT, put one by one from sample_result. */
enum {
	RF_MODEL = 1u << 0,
	RF_CORES = 1u << 1,
	RF_GOV = 1u << 2,
	RF_AES = 1u << 3,
	RF_RATES = 1u << 4,
	RF_STORAGE = 1u << 5,
	RF_SOCKBUF = 1u << 6,
	RF_CC = 1u << 7,
	RF_DBYTES = 1u << 8,
	RF_DUSEC = 1u << 9,
	RF_TEXT = 1u << 10,
	RF_LAST = RF_TEXT,
};

struct pr_case {
	const char *name;
	unsigned omit, dup;
	uint16_t tag; /* a raw TLV appended, when val */
	const char *val;
	size_t vlen;
	bool ok;
};

#define RATE_AES "\x01\0\0\0\0\0\0\0\x09\0\0\0\0\0\0\0\x08"
#define RATE(c)	 c "\0\0\0\0\0\0\0\x09\0\0\0\0\0\0\0\x08"

static const struct pr_case pr_cases[] = {
	{ "valid", 0, 0, 0, NULL, 0, true },
	{ "no rates", RF_RATES, 0, 0, NULL, 0, true },
	{ "no disk error", RF_TEXT, 0, 0, NULL, 0, true },
	{ "no model", RF_MODEL, 0, 0, NULL, 0, false },
	{ "no cores", RF_CORES, 0, 0, NULL, 0, false },
	{ "no governor", RF_GOV, 0, 0, NULL, 0, false },
	{ "no aes", RF_AES, 0, 0, NULL, 0, false },
	{ "no storage", RF_STORAGE, 0, 0, NULL, 0, false },
	{ "no sockbuf", RF_SOCKBUF, 0, 0, NULL, 0, false },
	{ "no cc", RF_CC, 0, 0, NULL, 0, false },
	{ "no disk bytes", RF_DBYTES, 0, 0, NULL, 0, false },
	{ "no disk usec", RF_DUSEC, 0, 0, NULL, 0, false },
	{ "empty", ~0u, 0, 0, NULL, 0, false },
	{ "dup model", 0, RF_MODEL, 0, NULL, 0, false },
	{ "dup cores", 0, RF_CORES, 0, NULL, 0, false },
	{ "dup governor", 0, RF_GOV, 0, NULL, 0, false },
	{ "dup aes", 0, RF_AES, 0, NULL, 0, false },
	{ "dup storage", 0, RF_STORAGE, 0, NULL, 0, false },
	{ "dup sockbuf", 0, RF_SOCKBUF, 0, NULL, 0, false },
	{ "dup cc", 0, RF_CC, 0, NULL, 0, false },
	{ "dup disk bytes", 0, RF_DBYTES, 0, NULL, 0, false },
	{ "dup disk usec", 0, RF_DUSEC, 0, NULL, 0, false },
	{ "dup disk error", 0, RF_TEXT, 0, NULL, 0, false },
	/* the two rates again: four */
	{ "too many rates", 0, RF_RATES, 0, NULL, 0, false },
	{ "third rate", 0, 0, PROTO_T_CIPHER_RATE, RATE_AES, 17, false },
	{ "one rate", RF_RATES, 0, PROTO_T_CIPHER_RATE, RATE_AES, 17, true },
	{ "chacha rate", RF_RATES, 0, PROTO_T_CIPHER_RATE, RATE("\x02"), 17,
	  true },
	{ "rate cipher 0", RF_RATES, 0, PROTO_T_CIPHER_RATE, RATE("\x00"), 17,
	  false },
	{ "rate cipher 3", RF_RATES, 0, PROTO_T_CIPHER_RATE, RATE("\x03"), 17,
	  false },
	{ "rate cipher 255", RF_RATES, 0, PROTO_T_CIPHER_RATE, RATE("\xff"), 17,
	  false },
	{ "rate short", RF_RATES, 0, PROTO_T_CIPHER_RATE, RATE_AES, 16, false },
	{ "rate long", RF_RATES, 0, PROTO_T_CIPHER_RATE, RATE_AES "x", 18,
	  false },
	{ "rate empty", RF_RATES, 0, PROTO_T_CIPHER_RATE, "", 0, false },
	{ "aes 0", RF_AES, 0, PROTO_T_AES, "\x00", 1, true },
	{ "aes 2", RF_AES, 0, PROTO_T_AES, "\x02", 1, false },
	{ "aes 255", RF_AES, 0, PROTO_T_AES, "\xff", 1, false },
	{ "aes as u32", RF_AES, 0, PROTO_T_AES, "\0\0\0\1", 4, false },
	{ "sockbuf 15", RF_SOCKBUF, 0, PROTO_T_SOCKBUF, "0123456789abcde", 15,
	  false },
	{ "sockbuf 17", RF_SOCKBUF, 0, PROTO_T_SOCKBUF, "0123456789abcdefg", 17,
	  false },
	{ "sockbuf 0", RF_SOCKBUF, 0, PROTO_T_SOCKBUF, "", 0, false },
	{ "sockbuf 4", RF_SOCKBUF, 0, PROTO_T_SOCKBUF, "\0\0\1\0", 4, false },
	{ "disk bytes over max", RF_DBYTES, 0, PROTO_T_DISK_BYTES,
	  "\0\0\0\0\x40\0\0\x01", 8, false },
	{ "disk bytes at max", RF_DBYTES, 0, PROTO_T_DISK_BYTES,
	  "\0\0\0\0\x40\0\0\0", 8, true },
	{ "disk bytes huge", RF_DBYTES, 0, PROTO_T_DISK_BYTES,
	  "\xff\xff\xff\xff\xff\xff\xff\xff", 8, false },
	{ "disk bytes as u32", RF_DBYTES, 0, PROTO_T_DISK_BYTES, "\0\0\0\1", 4,
	  false },
	{ "disk usec as u32", RF_DUSEC, 0, PROTO_T_DISK_USEC, "\0\0\0\1", 4,
	  false },
	{ "cores as u64", RF_CORES, 0, PROTO_T_CENTICORES, "\0\0\0\0\0\0\0\x14",
	  8, false },
	{ "model newline", RF_MODEL, 0, PROTO_T_CPU_MODEL, "cpu\n", 4, false },
	{ "model tab", RF_MODEL, 0, PROTO_T_CPU_MODEL, "c\tpu", 4, false },
	{ "model escape", RF_MODEL, 0, PROTO_T_CPU_MODEL, "\x1b]0;x\x07", 6,
	  false },
	{ "model NUL", RF_MODEL, 0, PROTO_T_CPU_MODEL, "c\0pu", 4, false },
	{ "model UTF-8", RF_MODEL, 0, PROTO_T_CPU_MODEL, "caf\xc3\xa9", 5,
	  false },
	{ "governor CR", RF_GOV, 0, PROTO_T_GOVERNOR, "perf\r", 5, false },
	{ "governor DEL", RF_GOV, 0, PROTO_T_GOVERNOR, "\x7f", 1, false },
	{ "storage newline", RF_STORAGE, 0, PROTO_T_STORAGE, "SD\ncard", 7,
	  false },
	{ "cc escape", RF_CC, 0, PROTO_T_CC, "\x1b[1m", 4, false },
	{ "cc too long", RF_CC, 0, PROTO_T_CC, "0123456789abcdef", 16, false },
	{ "cc longest", RF_CC, 0, PROTO_T_CC, "0123456789abcde", 15, true },
	{ "error newline", RF_TEXT, 0, PROTO_T_TEXT, "disk\nfull", 9, false },
	{ "error bell", RF_TEXT, 0, PROTO_T_TEXT, "\x07", 1, false },
	{ "unknown tag", 0, 0, 0x4ffe, "x", 1, true },
	{ "critical unknown tag", 0, 0, PROTO_TAG_CRITICAL | 0x4ffe, "x", 1,
	  false },
};

static void put_pr(struct proto_buf *b, const struct proto_probe_result *r,
		   unsigned f)
{
	uint8_t v[17];
	unsigned i;

	switch (f) {
	case RF_MODEL: proto_put_str(b, PROTO_T_CPU_MODEL, r->model); break;
	case RF_CORES:
		proto_put_u32(b, PROTO_T_CENTICORES, r->centicores);
		break;
	case RF_GOV: proto_put_str(b, PROTO_T_GOVERNOR, r->governor); break;
	case RF_AES: proto_put_u8(b, PROTO_T_AES, r->aes); break;
	case RF_RATES:
		for (i = 0; i < r->nrates; i++) {
			v[0] = r->rates[i].cipher;
			wr_be(v + 1, r->rates[i].seal, 8);
			wr_be(v + 9, r->rates[i].open, 8);
			proto_put_bytes(b, PROTO_T_CIPHER_RATE, v, 17);
		}
		break;
	case RF_STORAGE: proto_put_str(b, PROTO_T_STORAGE, r->storage); break;
	case RF_SOCKBUF:
		for (i = 0; i < 4; i++)
			wr_be(v + 4 * i, r->sockbuf[i], 4);
		proto_put_bytes(b, PROTO_T_SOCKBUF, v, 16);
		break;
	case RF_CC: proto_put_str(b, PROTO_T_CC, r->cc); break;
	case RF_DBYTES:
		proto_put_u64(b, PROTO_T_DISK_BYTES, r->disk_bytes);
		break;
	case RF_DUSEC: proto_put_u64(b, PROTO_T_DISK_USEC, r->disk_usec); break;
	case RF_TEXT: proto_put_str(b, PROTO_T_TEXT, r->disk_error); break;
	}
}

static void test_probe_result_malformed(void **state)
{
	struct proto_probe_result in, out;
	struct msg m;
	uint8_t *body;
	size_t i, len;

	(void)state;
	sample_result(&in);
	for (i = 0; i < ARRAY_SIZE(pr_cases); i++) {
		const struct pr_case *c = &pr_cases[i];
		unsigned f;
		int got;

		msg_init(&m, 4096);
		proto_msg_begin(&m.b, PROTO_PROBE_RESULT);
		for (f = RF_MODEL; f <= RF_LAST; f <<= 1) {
			if (!(c->omit & f))
				put_pr(&m.b, &in, f);
			if (c->dup & f)
				put_pr(&m.b, &in, f);
		}
		if (c->val)
			proto_put_bytes(&m.b, c->tag, c->val, c->vlen);
		assert_int_equal(proto_msg_end(&m.b), 0);
		body = msg_body(&m, PROTO_PROBE_RESULT, &len);
		got = proto_decode_probe_result(body, len, &out);
		if (got != (c->ok ? 0 : LR_EBADMSG))
			fail_msg("probe result case \"%s\": got %d", c->name,
				 got);
		msg_free(&m);
	}

	/* strings one byte longer than their field */
	for (i = 0; i < 4; i++) {
		static const uint16_t tags[] = { PROTO_T_CPU_MODEL,
						 PROTO_T_GOVERNOR,
						 PROTO_T_STORAGE,
						 PROTO_T_TEXT };
		static const unsigned omit[] = { RF_MODEL, RF_GOV, RF_STORAGE,
						 RF_TEXT };
		static const size_t n[] = { PROTO_MAX_TEXT + 1,
					    PROTO_MAX_NAME + 1,
					    PROTO_MAX_TEXT + 1,
					    PROTO_MAX_TEXT + 1 };
		char s[PROTO_MAX_TEXT + 2];
		unsigned f;

		memset(s, 'x', sizeof(s));
		msg_init(&m, 4096);
		proto_msg_begin(&m.b, PROTO_PROBE_RESULT);
		for (f = RF_MODEL; f <= RF_LAST; f <<= 1)
			if (!(omit[i] & f))
				put_pr(&m.b, &in, f);
		proto_put_bytes(&m.b, tags[i], s, n[i]);
		assert_int_equal(proto_msg_end(&m.b), 0);
		body = msg_body(&m, PROTO_PROBE_RESULT, &len);
		if (proto_decode_probe_result(body, len, &out) != LR_EBADMSG)
			fail_msg("string of tag 0x%04x, %zu bytes, accepted",
				 tags[i], n[i]);
		msg_free(&m);
	}

	/* every proper prefix of a result whose last field is required
	 * (the optional CPU time and error text left out) */
	in.disk_error[0] = 0;
	in.disk_cpu_usec = 0;
	msg_init(&m, 4096);
	assert_int_equal(proto_encode_probe_result(&m.b, &in), 0);
	body = msg_body(&m, PROTO_PROBE_RESULT, &len);
	assert_int_equal(proto_decode_probe_result(body, len, &out), 0);
	for (i = 0; i < len; i++) {
		uint8_t *cut = malloc(i ? i : 1);

		assert_non_null(cut);
		memcpy(cut, body, i);
		if (proto_decode_probe_result(cut, i, &out) != LR_EBADMSG)
			fail_msg("probe result prefix of %zu bytes accepted",
				 i);
		free(cut);
	}
	msg_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_roundtrip),
		cmocka_unit_test(test_request_long_path),
		cmocka_unit_test(test_accept_roundtrip),
		cmocka_unit_test(test_files_window),
		cmocka_unit_test(test_lone_file),
		cmocka_unit_test(test_links_wish),
		cmocka_unit_test(test_totals_roundtrip),
		cmocka_unit_test(test_done_roundtrip),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_alive_is_empty),
		cmocka_unit_test(test_items_roundtrip),
		cmocka_unit_test(test_fail_text_bounds),
		cmocka_unit_test(test_request_filters),
		cmocka_unit_test(test_request_list),
		cmocka_unit_test(test_unread_item),
		cmocka_unit_test(test_fdigest_item),
		cmocka_unit_test(test_owner_item),
		cmocka_unit_test(test_deleted_item),
		cmocka_unit_test(test_batch_fill),
		cmocka_unit_test(test_batch_room_cap),
		cmocka_unit_test(test_items_malformed),
		cmocka_unit_test(test_entry_path_too_long),
		cmocka_unit_test(test_iter_truncated),
		cmocka_unit_test(test_request_malformed),
		cmocka_unit_test(test_request_paths_raw),
		cmocka_unit_test(test_truncated_messages),
		cmocka_unit_test(test_accept_malformed),
		cmocka_unit_test(test_totals_done_malformed),
		cmocka_unit_test(test_chunk),
		cmocka_unit_test(test_probe_request_roundtrip),
		cmocka_unit_test(test_probe_request_malformed),
		cmocka_unit_test(test_probe_result_roundtrip),
		cmocka_unit_test(test_probe_result_malformed),
		cmocka_unit_test(test_xattrs_item),
		cmocka_unit_test(test_acl_item),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
