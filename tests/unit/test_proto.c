// SPDX-License-Identifier: MIT
/*
 * Unit tests of proto.[ch]: round trips of every encoder/decoder pair, the
 * preamble, version choice and header, the builder's sticky overflow, and
 * rejection of malformed bodies. Most malformed cases are made from a table
 * of valid TLVs per message type by one mutation each (omit, duplicate,
 * resize, truncate, overlong length, bad string, unknown tag).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
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

/* ---- one message built into a stack buffer ---- */

struct msg {
	uint8_t mem[PROTO_HDR_LEN + PROTO_MAX_BODY]; /* the largest message */
	struct proto_buf b;
};

static void msg_init(struct msg *m)
{
	proto_buf_init(&m->b, m->mem, sizeof(m->mem));
}

/* Check the header of the one message in m; return its body. */
static const uint8_t *msg_body(struct msg *m, uint8_t type, size_t *len)
{
	struct proto_hdr h;

	assert_int_equal(proto_decode_hdr(m->mem, m->b.len, PROTO_MAX_BODY, &h),
			 PROTO_HDR_LEN);
	assert_int_equal(h.type, type);
	assert_int_equal(h.flags, 0);
	assert_int_equal(h.len + PROTO_HDR_LEN, m->b.len);
	*len = h.len;
	return m->mem + PROTO_HDR_LEN;
}

/* ---- preamble, version, header ---- */

static void test_preamble_encode(void **state)
{
	uint8_t out[PROTO_PREAMBLE_LEN];

	(void)state;
	proto_encode_preamble(out, 1, 2, 1);
	assert_memory_equal(out, "LNRT\x01\x02\x01\x00", PROTO_PREAMBLE_LEN);
}

static void test_preamble_decode(void **state)
{
	static const uint8_t good[] = "LNRT\x01\x03\x02\x80"
				      "extra";
	struct proto_preamble p;
	size_t n;

	(void)state;
	memset(&p, 0, sizeof(p));
	assert_int_equal(proto_decode_preamble(good, sizeof(good) - 1, &p),
			 PROTO_PREAMBLE_LEN);
	assert_int_equal(p.vmin, 1);
	assert_int_equal(p.vmax, 3);
	assert_int_equal(p.chosen, 2);
	assert_int_equal(p.flags, 0x80);

	/* every proper prefix, even the empty one, needs more */
	for (n = 0; n < PROTO_PREAMBLE_LEN; n++) {
		memset(&p, 0x5a, sizeof(p));
		assert_int_equal(proto_decode_preamble(good, n, &p),
				 LR_ENEEDMORE);
		assert_int_equal(p.vmin, 0x5a);
	}
}

/* clang-format off */
#define B(s) { (const uint8_t *)(s), sizeof(s) - 1 }
/* clang-format on */

static void test_preamble_not_linerate(void **state)
{
	static const struct {
		const uint8_t *p;
		size_t n;
	} other[] = {
		/* clang-format off */
		B("GET / HTTP/1.1\r\n"), B("GET / HTTP"), B("G"), B("GE"),
		B("LNRX\x01\x01"), B("lnrt\x01\x01\x01\x00"), B("LNR\0"),
		B("SSH-2.0-OpenSSH_9.2"), B("LN\0T"), B("\0\0\0\0\0\0\0\0"),
		B("\x16\x03\x01\x02\x00\x01\x00\x01"),	/* TLS hello */
		/* iperf3's cookie: 36 characters and a NUL */
		B("abcdefghijklmnopqrstuvwxyz234567abcd\0"),
		/* clang-format on */
	};
	struct proto_preamble p;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(other); i++) {
		memset(&p, 0x5a, sizeof(p));
		assert_int_equal(proto_decode_preamble(other[i].p, other[i].n,
						       &p),
				 LR_ENOTLINERATE);
		assert_int_equal(p.vmin, 0x5a);
	}
}

/* Asked about zero bytes, before any read: the parser must not pass the
 * NULL to memcmp (undefined behaviour; UBSan reports it). */
static void test_preamble_empty_null(void **state)
{
	struct proto_preamble p;

	(void)state;
	assert_int_equal(proto_decode_preamble(NULL, 0, &p), LR_ENEEDMORE);
}

static void test_version_choose(void **state)
{
	static const uint8_t tab[][5] = {
		/* amin amax bmin bmax want */
		{ 1, 1, 1, 1, 1 },
		{ 1, 3, 1, 2, 2 },
		{ 1, 2, 1, 3, 2 },
		{ 1, 3, 2, 5, 3 },
		{ 2, 5, 1, 3, 3 },
		{ 1, 1, 2, 2, 0 },
		{ 2, 2, 1, 1, 0 },
		{ 3, 4, 1, 2, 0 },
		{ 5, 5, 5, 5, 5 },
		{ 1, 255, 7, 9, 9 },
		{ 0, 255, 0, 255, 255 },
		{ 0, 0, 0, 0, 0 }, /* version 0 does not exist */
		{ 0, 1, 0, 1, 1 },
		{ 0, 0, 1, 1, 0 },
		{ 3, 1, 1, 3, 0 }, /* a's range is empty */
		{ 1, 3, 3, 1, 0 }, /* b's range is empty */
		{ 255, 255, 255, 255, 255 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(tab); i++) {
		uint8_t got = proto_version_choose(tab[i][0], tab[i][1],
						   tab[i][2], tab[i][3]);

		if (got != tab[i][4])
			fail_msg("choose(%u,%u,%u,%u) = %u, want %u", tab[i][0],
				 tab[i][1], tab[i][2], tab[i][3], got,
				 tab[i][4]);
		/* the choice does not depend on who asks */
		assert_int_equal(proto_version_choose(tab[i][2], tab[i][3],
						      tab[i][0], tab[i][1]),
				 got);
	}
	assert_int_equal(
		proto_version_choose(PROTO_VERSION_MIN, PROTO_VERSION_MAX,
				     PROTO_VERSION_MIN, PROTO_VERSION_MAX),
		PROTO_VERSION_MAX);
}

static void hdr_bytes(uint8_t *h, uint8_t type, uint8_t flags, uint16_t rsv,
		      uint32_t len)
{
	h[0] = type;
	h[1] = flags;
	wr_be(h + 2, rsv, 2);
	wr_be(h + 4, len, 4);
}

static void test_hdr_decode(void **state)
{
	uint8_t h[PROTO_HDR_LEN + 4];
	struct proto_hdr d;
	size_t n;

	(void)state;
	hdr_bytes(h, PROTO_TEST_REQUEST, 0x42, 0, 300);
	assert_int_equal(proto_decode_hdr(h, sizeof(h), PROTO_MAX_BODY, &d),
			 PROTO_HDR_LEN);
	assert_int_equal(d.type, PROTO_TEST_REQUEST);
	assert_int_equal(d.flags, 0x42);
	assert_int_equal(d.len, 300);

	for (n = 0; n < PROTO_HDR_LEN; n++) {
		memset(&d, 0x5a, sizeof(d));
		assert_int_equal(proto_decode_hdr(h, n, PROTO_MAX_BODY, &d),
				 LR_ENEEDMORE);
		assert_int_equal(d.type, 0x5a);
	}

	hdr_bytes(h, PROTO_TEST_START, 0, 0, 0);
	assert_int_equal(proto_decode_hdr(h, PROTO_HDR_LEN, 0, &d),
			 PROTO_HDR_LEN);
	assert_int_equal(d.len, 0);
}

static void test_hdr_reserved(void **state)
{
	static const uint16_t rsv[] = { 1, 0x8000, 0x0100, 0xffff };
	uint8_t h[PROTO_HDR_LEN];
	struct proto_hdr d;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(rsv); i++) {
		hdr_bytes(h, PROTO_CTRL_OPEN, 0, rsv[i], 10);
		memset(&d, 0x5a, sizeof(d));
		assert_int_equal(proto_decode_hdr(h, sizeof(h), PROTO_MAX_BODY,
						  &d),
				 LR_EBADMSG);
		assert_int_equal(d.type, 0x5a);
	}
}

static void test_hdr_too_big(void **state)
{
	uint8_t h[PROTO_HDR_LEN];
	struct proto_hdr d;

	(void)state;
	hdr_bytes(h, PROTO_CTRL_OPEN, 0, 0, PROTO_MAX_BODY);
	assert_int_equal(proto_decode_hdr(h, sizeof(h), PROTO_MAX_BODY, &d),
			 PROTO_HDR_LEN);
	assert_int_equal(d.len, PROTO_MAX_BODY);
	hdr_bytes(h, PROTO_CTRL_OPEN, 0, 0, PROTO_MAX_BODY + 1);
	assert_int_equal(proto_decode_hdr(h, sizeof(h), PROTO_MAX_BODY, &d),
			 LR_ETOOBIG);
	/* iperf3's CVE-2023-38403: 0xFFFFFFFF, then + 1 */
	hdr_bytes(h, PROTO_CTRL_OPEN, 0, 0, 0xffffffffu);
	memset(&d, 0x5a, sizeof(d));
	assert_int_equal(proto_decode_hdr(h, sizeof(h), PROTO_MAX_BODY, &d),
			 LR_ETOOBIG);
	assert_int_equal(d.type, 0x5a);
	assert_int_equal(proto_decode_hdr(h, sizeof(h), PROTO_MAX_OPEN_BODY,
					  &d),
			 LR_ETOOBIG);
	hdr_bytes(h, PROTO_CTRL_OPEN, 0, 0, PROTO_MAX_OPEN_BODY);
	assert_int_equal(proto_decode_hdr(h, sizeof(h), PROTO_MAX_OPEN_BODY,
					  &d),
			 PROTO_HDR_LEN);
	hdr_bytes(h, PROTO_CTRL_OPEN, 0, 0, PROTO_MAX_OPEN_BODY + 1);
	assert_int_equal(proto_decode_hdr(h, sizeof(h), PROTO_MAX_OPEN_BODY,
					  &d),
			 LR_ETOOBIG);
	hdr_bytes(h, PROTO_CTRL_OPEN, 0, 0, 1);
	assert_int_equal(proto_decode_hdr(h, sizeof(h), 0, &d), LR_ETOOBIG);
}

static void test_type_names(void **state)
{
	(void)state;
	assert_string_equal(proto_type_name(PROTO_CTRL_OPEN), "CTRL_OPEN");
	assert_string_equal(proto_type_name(PROTO_DATA_OPEN), "DATA_OPEN");
	assert_string_equal(proto_type_name(PROTO_ERROR), "ERROR");
	assert_string_equal(proto_type_name(PROTO_TEST_REQUEST),
			    "TEST_REQUEST");
	assert_string_equal(proto_type_name(PROTO_TEST_ACCEPT), "TEST_ACCEPT");
	assert_string_equal(proto_type_name(PROTO_TEST_START), "TEST_START");
	assert_string_equal(proto_type_name(PROTO_TEST_STOP), "TEST_STOP");
	assert_string_equal(proto_type_name(PROTO_TEST_RESULTS),
			    "TEST_RESULTS");
	assert_string_equal(proto_type_name(0), "unknown");
	assert_string_equal(proto_type_name(0xff), "unknown");
}

/* ---- round trips ---- */

static void ctrl_open_eq(const struct proto_ctrl_open *a,
			 const struct proto_ctrl_open *b)
{
	assert_string_equal(a->software, b->software);
	assert_true(a->features == b->features);
}

static void test_rt_ctrl_open(void **state)
{
	struct proto_ctrl_open in, out;
	const uint8_t *body;
	struct msg m;
	size_t len;

	(void)state;
	memset(&in, 0, sizeof(in));
	snprintf(in.software, sizeof(in.software), "linerate 0.1.0");
	in.features = 0x8000000000000001ull;
	msg_init(&m);
	assert_int_equal(proto_encode_ctrl_open(&m.b, &in), 0);
	body = msg_body(&m, PROTO_CTRL_OPEN, &len);
	assert_int_equal(proto_decode_ctrl_open(body, len, &out), 0);
	ctrl_open_eq(&in, &out);

	/* the longest name, and the empty one */
	memset(in.software, '~', PROTO_MAX_NAME);
	in.software[PROTO_MAX_NAME] = '\0';
	msg_init(&m);
	assert_int_equal(proto_encode_ctrl_open(&m.b, &in), 0);
	body = msg_body(&m, PROTO_CTRL_OPEN, &len);
	assert_int_equal(proto_decode_ctrl_open(body, len, &out), 0);
	ctrl_open_eq(&in, &out);
	in.software[0] = '\0';
	in.features = 0;
	msg_init(&m);
	assert_int_equal(proto_encode_ctrl_open(&m.b, &in), 0);
	body = msg_body(&m, PROTO_CTRL_OPEN, &len);
	assert_int_equal(proto_decode_ctrl_open(body, len, &out), 0);
	ctrl_open_eq(&in, &out);
}

static void test_rt_data_open(void **state)
{
	static const struct {
		uint16_t stream;
		uint8_t dir;
	} tab[] = { { 0, 0 }, { 1, 1 }, { 127, 0 }, { 255, 1 } };
	struct proto_data_open in, out;
	const uint8_t *body;
	struct msg m;
	size_t len, i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(tab); i++) {
		memset(&in, 0, sizeof(in));
		memcpy(in.test_id,
		       "\x00\x01\x02\x03\x04\x05\x06\x07"
		       "\xf8\xf9\xfa\xfb\xfc\xfd\xfe\xff",
		       PROTO_TEST_ID_LEN);
		in.stream = tab[i].stream;
		in.dir = tab[i].dir;
		msg_init(&m);
		assert_int_equal(proto_encode_data_open(&m.b, &in), 0);
		body = msg_body(&m, PROTO_DATA_OPEN, &len);
		assert_int_equal(proto_decode_data_open(body, len, &out), 0);
		assert_memory_equal(out.test_id, in.test_id, PROTO_TEST_ID_LEN);
		assert_int_equal(out.stream, in.stream);
		assert_int_equal(out.dir, in.dir);
	}
}

static void test_rt_error(void **state)
{
	struct proto_error in, out;
	const uint8_t *body;
	struct msg m;
	size_t len;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.code = PROTO_ERR_BUSY;
	snprintf(in.text, sizeof(in.text), "server busy: %d tests running", 4);
	msg_init(&m);
	assert_int_equal(proto_encode_error(&m.b, &in), 0);
	body = msg_body(&m, PROTO_ERROR, &len);
	assert_int_equal(proto_decode_error(body, len, &out), 0);
	assert_int_equal(out.code, in.code);
	assert_string_equal(out.text, in.text);

	/* text filled to the last byte, unterminated: 200 characters go */
	memset(in.text, 'x', sizeof(in.text));
	in.code = 0xffffffffu;
	msg_init(&m);
	assert_int_equal(proto_encode_error(&m.b, &in), 0);
	body = msg_body(&m, PROTO_ERROR, &len);
	assert_int_equal(proto_decode_error(body, len, &out), 0);
	assert_int_equal(out.code, 0xffffffffu);
	assert_int_equal(strlen(out.text), PROTO_MAX_TEXT);
	assert_memory_equal(out.text, in.text, PROTO_MAX_TEXT);

	in.text[0] = '\0';
	msg_init(&m);
	assert_int_equal(proto_encode_error(&m.b, &in), 0);
	body = msg_body(&m, PROTO_ERROR, &len);
	assert_int_equal(proto_decode_error(body, len, &out), 0);
	assert_string_equal(out.text, "");
}

static void test_request_eq(const struct proto_test_request *a,
			    const struct proto_test_request *b)
{
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->streams, b->streams);
	assert_true(a->duration_ms == b->duration_ms);
	assert_true(a->bytes == b->bytes);
	assert_int_equal(a->blksize, b->blksize);
	assert_int_equal(a->window, b->window);
	assert_string_equal(a->cc, b->cc);
	assert_int_equal(a->mss, b->mss);
	assert_int_equal(a->zerocopy, b->zerocopy);
	assert_true(a->omit_ms == b->omit_ms);
	assert_true(a->rate_bps == b->rate_bps);
	assert_int_equal(a->udp, b->udp);
}

static void test_rt_test_request(void **state)
{
	struct proto_test_request in, out;
	const uint8_t *body;
	struct msg m;
	size_t len;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.mode = PROTO_MODE_BIDIR;
	in.streams = 4;
	in.duration_ms = 10000;
	in.blksize = 128 * 1024;
	in.window = 4u << 20;
	snprintf(in.cc, sizeof(in.cc), "bbr");
	in.mss = 1448;
	in.zerocopy = PROTO_ZC_MSG;
	in.omit_ms = 2000;
	in.rate_bps = 100000000;
	in.udp = 1;
	msg_init(&m);
	assert_int_equal(proto_encode_test_request(&m.b, &in), 0);
	body = msg_body(&m, PROTO_TEST_REQUEST, &len);
	assert_int_equal(proto_decode_test_request(body, len, &out), 0);
	test_request_eq(&in, &out);

	/* byte-limited, defaults, extremes */
	memset(&in, 0, sizeof(in));
	in.mode = PROTO_MODE_REVERSE;
	in.streams = PROTO_MAX_STREAMS;
	in.bytes = UINT64_MAX;
	in.blksize = PROTO_MAX_BLKSIZE;
	in.window = PROTO_MAX_WINDOW;
	in.mss = 65535;
	in.omit_ms = PROTO_MAX_DURATION_MS;
	memset(in.cc, 'c', PROTO_CC_LEN - 1);
	msg_init(&m);
	assert_int_equal(proto_encode_test_request(&m.b, &in), 0);
	body = msg_body(&m, PROTO_TEST_REQUEST, &len);
	assert_int_equal(proto_decode_test_request(body, len, &out), 0);
	test_request_eq(&in, &out);

	memset(&in, 0, sizeof(in));
	in.streams = 1;
	in.duration_ms = PROTO_MAX_DURATION_MS;
	in.blksize = 1;
	msg_init(&m);
	assert_int_equal(proto_encode_test_request(&m.b, &in), 0);
	body = msg_body(&m, PROTO_TEST_REQUEST, &len);
	assert_int_equal(proto_decode_test_request(body, len, &out), 0);
	test_request_eq(&in, &out);
}

static void test_rt_test_accept(void **state)
{
	struct proto_test_accept in, out;
	const uint8_t *body;
	struct msg m;
	size_t len;

	(void)state;
	memset(&in, 0, sizeof(in));
	memset(in.test_id, 0xa5, sizeof(in.test_id));
	in.test_id[15] = 0;
	snprintf(in.software, sizeof(in.software), "linerate 0.1.0 (x86_64)");
	in.overlap = 65535;
	in.max_duration_ms = 3600000;
	msg_init(&m);
	assert_int_equal(proto_encode_test_accept(&m.b, &in), 0);
	body = msg_body(&m, PROTO_TEST_ACCEPT, &len);
	assert_int_equal(proto_decode_test_accept(body, len, &out), 0);
	assert_memory_equal(out.test_id, in.test_id, PROTO_TEST_ID_LEN);
	assert_string_equal(out.software, in.software);
	assert_int_equal(out.overlap, in.overlap);
	assert_true(out.max_duration_ms == in.max_duration_ms);
}

static void test_rt_empty(void **state)
{
	static const uint8_t types[] = { PROTO_TEST_START, PROTO_TEST_STOP,
					 0x7f, 0xff };
	const uint8_t *body;
	struct msg m;
	size_t len, i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		msg_init(&m);
		assert_int_equal(proto_encode_empty(&m.b, types[i]), 0);
		assert_int_equal(m.b.len, PROTO_HDR_LEN);
		body = msg_body(&m, types[i], &len);
		assert_int_equal(len, 0);
		assert_int_equal(proto_decode_empty(body, len), 0);
	}
}

static void stream_result_fill(struct proto_stream_result *s, unsigned i)
{
	memset(s, 0, sizeof(*s));
	s->stream = (uint16_t)i;
	s->dir = (uint8_t)(i & 1);
	s->flags = (uint8_t)(0xf0 | i);
	s->bytes = 0x0102030405060708ull * (i + 1);
	s->duration_us = 10000000ull + i;
	s->retrans = 0xfffffff0u + (i & 0xf);
	s->max_cwnd = 1u << (i % 32);
	s->min_rtt = 20 + i;
	s->mean_rtt = 40 + i;
	s->max_rtt = 0xffffffffu - i;
	if (i % 3 == 1) { /* some carry UDP figures */
		s->udp = true;
		s->packets = 1000000ull + i;
		s->lost = i;
		s->ooo = 2 * i;
		s->dup = 3 * i;
		s->jitter_ns = 0xffffffffffffull - i;
	} else if (i % 3 == 2) { /* some a TCP sender's window */
		s->has_tcp_result = true;
		s->max_snd_wnd = 0xfffffff0u - i;
	}
}

static void results_eq(const struct proto_results *a,
		       const struct proto_results *b)
{
	uint16_t i;

	assert_true(a->cpu.user_us == b->cpu.user_us);
	assert_true(a->cpu.sys_us == b->cpu.sys_us);
	assert_true(a->cpu.wall_us == b->cpu.wall_us);
	assert_string_equal(a->cc, b->cc);
	assert_int_equal(a->overlap, b->overlap);
	assert_int_equal(a->nstreams, b->nstreams);
	for (i = 0; i < a->nstreams; i++) {
		const struct proto_stream_result *x = &a->streams[i];
		const struct proto_stream_result *y = &b->streams[i];

		assert_int_equal(x->stream, y->stream);
		assert_int_equal(x->dir, y->dir);
		assert_int_equal(x->flags, y->flags);
		assert_true(x->bytes == y->bytes);
		assert_true(x->duration_us == y->duration_us);
		assert_int_equal(x->retrans, y->retrans);
		assert_int_equal(x->max_cwnd, y->max_cwnd);
		assert_int_equal(x->min_rtt, y->min_rtt);
		assert_int_equal(x->mean_rtt, y->mean_rtt);
		assert_int_equal(x->max_rtt, y->max_rtt);
		assert_int_equal(x->udp, y->udp);
		assert_int_equal(x->has_tcp_result, y->has_tcp_result);
		assert_int_equal(x->max_snd_wnd, y->max_snd_wnd);
		assert_true(x->packets == y->packets);
		assert_true(x->lost == y->lost);
		assert_true(x->ooo == y->ooo);
		assert_true(x->dup == y->dup);
		assert_true(x->jitter_ns == y->jitter_ns);
	}
}

static void test_rt_results(void **state)
{
	struct proto_stream_result sin[5], sout[8];
	struct proto_results in, out;
	const uint8_t *body;
	struct msg m;
	size_t len;
	unsigned i;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.cpu.user_us = 1234567;
	in.cpu.sys_us = 7654321;
	in.cpu.wall_us = 0xffffffffffffffffull;
	snprintf(in.cc, sizeof(in.cc), "cubic");
	in.overlap = 3;
	for (i = 0; i < ARRAY_SIZE(sin); i++)
		stream_result_fill(&sin[i], i * 50 + 1);
	in.streams = sin;
	in.nstreams = ARRAY_SIZE(sin);
	in.cap = ARRAY_SIZE(sin);
	msg_init(&m);
	assert_int_equal(proto_encode_results(&m.b, &in), 0);
	body = msg_body(&m, PROTO_TEST_RESULTS, &len);

	memset(&out, 0x5a, sizeof(out));
	out.streams = sout;
	out.cap = ARRAY_SIZE(sout);
	assert_int_equal(proto_decode_results(body, len, &out), 0);
	results_eq(&in, &out);
	assert_ptr_equal(out.streams, sout);
	assert_int_equal(out.cap, ARRAY_SIZE(sout));

	/* exactly cap entries fit */
	out.cap = ARRAY_SIZE(sin);
	assert_int_equal(proto_decode_results(body, len, &out), 0);
	results_eq(&in, &out);

	/* no streams, no cc: a receiver's results */
	in.nstreams = 0;
	in.cc[0] = '\0';
	in.overlap = 0;
	msg_init(&m);
	assert_int_equal(proto_encode_results(&m.b, &in), 0);
	body = msg_body(&m, PROTO_TEST_RESULTS, &len);
	out.streams = NULL;
	out.cap = 0;
	assert_int_equal(proto_decode_results(body, len, &out), 0);
	results_eq(&in, &out);
}

/* A TCP_RESULT belongs to the STREAM_RESULT just before it: another
 * stream's, a second one, or one before any stream is malformed. */
static void test_tcp_result_placement(void **state)
{
	struct proto_stream_result sin[1], sout[2];
	struct proto_results in, out;
	uint8_t body[256];
	const uint8_t *b;
	struct msg m;
	size_t len;

	(void)state;
	memset(&in, 0, sizeof(in));
	stream_result_fill(&sin[0], 2); /* has a TCP_RESULT, stream 2 */
	in.streams = sin;
	in.nstreams = in.cap = 1;
	msg_init(&m);
	assert_int_equal(proto_encode_results(&m.b, &in), 0);
	b = msg_body(&m, PROTO_TEST_RESULTS, &len);
	assert_true(len + 4 + PROTO_TCP_RESULT_LEN <= sizeof(body));
	memcpy(body, b, len);
	out.streams = sout;
	out.cap = 2;
	assert_int_equal(proto_decode_results(body, len, &out), 0);
	assert_true(out.streams[0].has_tcp_result);
	/* another stream's number */
	body[len - PROTO_TCP_RESULT_LEN + 1] ^= 1;
	assert_int_equal(proto_decode_results(body, len, &out), LR_EBADMSG);
	body[len - PROTO_TCP_RESULT_LEN + 1] ^= 1;
	/* twice for one stream */
	memcpy(body + len, body + len - 4 - PROTO_TCP_RESULT_LEN,
	       4 + PROTO_TCP_RESULT_LEN);
	assert_int_equal(proto_decode_results(
				 body, len + 4 + PROTO_TCP_RESULT_LEN, &out),
			 LR_EBADMSG);
}

static void test_udp_hello(void **state)
{
	struct proto_data_open in = { .stream = 255, .dir = PROTO_DIR_S2C },
			       out;
	uint8_t b[PROTO_UDP_HELLO_LEN];
	unsigned i;

	(void)state;
	for (i = 0; i < PROTO_TEST_ID_LEN; i++)
		in.test_id[i] = (uint8_t)(0xa0 + i);
	proto_encode_udp_hello(b, &in, false);
	assert_memory_equal(b, "LRUH", 4);
	assert_int_equal(b[20], 0);
	assert_int_equal(b[21], 255);
	assert_int_equal(b[22], PROTO_DIR_S2C);
	assert_int_equal(proto_decode_udp_hello(b, sizeof(b), false, &out), 0);
	assert_memory_equal(out.test_id, in.test_id, PROTO_TEST_ID_LEN);
	assert_int_equal(out.stream, 255);
	assert_int_equal(out.dir, PROTO_DIR_S2C);
	/* a hello is not an answer, lengths are exact, ranges checked */
	assert_int_equal(proto_decode_udp_hello(b, sizeof(b), true, &out),
			 LR_EBADMSG);
	assert_int_equal(proto_decode_udp_hello(b, sizeof(b) - 1, false, &out),
			 LR_EBADMSG);
	b[22] = 2;
	assert_int_equal(proto_decode_udp_hello(b, sizeof(b), false, &out),
			 LR_EBADMSG);
	b[22] = 0;
	b[20] = 1; /* stream 511: above 2 x PROTO_MAX_STREAMS */
	assert_int_equal(proto_decode_udp_hello(b, sizeof(b), false, &out),
			 LR_EBADMSG);
	proto_encode_udp_hello(b, &in, true);
	assert_int_equal(proto_decode_udp_hello(b, sizeof(b), true, &out), 0);
}

/* A UDP result must follow the stream result it belongs to. */
static void test_results_udp_order(void **state)
{
	struct proto_stream_result sin[1], sout[2];
	struct proto_results in, out;
	const uint8_t *body;
	uint8_t copy[512];
	struct msg m;
	size_t len;

	(void)state;
	memset(&in, 0, sizeof(in));
	stream_result_fill(&sin[0], 1); /* udp */
	assert_true(sin[0].udp);
	in.streams = sin;
	in.nstreams = 1;
	in.cap = 1;
	msg_init(&m);
	assert_int_equal(proto_encode_results(&m.b, &in), 0);
	body = msg_body(&m, PROTO_TEST_RESULTS, &len);
	assert_true(len <= sizeof(copy));
	memcpy(copy, body, len);
	out.streams = sout;
	out.cap = 2;
	assert_int_equal(proto_decode_results(copy, len, &out), 0);
	assert_true(out.streams[0].udp);
	/* the UDP result names another stream: refused */
	copy[len - PROTO_UDP_RESULT_LEN + 1] ^= 1;
	assert_int_equal(proto_decode_results(copy, len, &out), LR_EBADMSG);
	/* the UDP result alone, without its stream result: refused */
	copy[len - PROTO_UDP_RESULT_LEN + 1] ^= 1;
	{
		size_t ulen = 4 + PROTO_UDP_RESULT_LEN, cpu = 4 + 24;
		uint8_t only[4 + 24 + 4 + PROTO_UDP_RESULT_LEN];

		memcpy(only, copy, cpu); /* the CPU tag comes first */
		memcpy(only + cpu, copy + len - ulen, ulen);
		assert_int_equal(proto_decode_results(only, sizeof(only), &out),
				 LR_EBADMSG);
	}
}

/* The most streams a test can have: 128 each way. */
static void test_rt_results_max(void **state)
{
	enum { N = 2 * PROTO_MAX_STREAMS };
	struct proto_stream_result *sin, *sout;
	struct proto_results in, out;
	const uint8_t *body;
	struct msg *m;
	size_t len;
	unsigned i;

	(void)state;
	sin = calloc(N, sizeof(*sin));
	sout = calloc(N, sizeof(*sout));
	m = malloc(sizeof(*m));
	assert_non_null(sin);
	assert_non_null(sout);
	assert_non_null(m);
	memset(&in, 0, sizeof(in));
	for (i = 0; i < N; i++) {
		stream_result_fill(&sin[i], i);
		sin[i].dir = (uint8_t)(i >= PROTO_MAX_STREAMS);
	}
	in.streams = sin;
	in.nstreams = N;
	msg_init(m);
	assert_int_equal(proto_encode_results(&m->b, &in), 0);
	body = msg_body(m, PROTO_TEST_RESULTS, &len);
	memset(&out, 0, sizeof(out));
	out.streams = sout;
	out.cap = N;
	assert_int_equal(proto_decode_results(body, len, &out), 0);
	results_eq(&in, &out);
	out.cap = N - 1;
	assert_int_equal(proto_decode_results(body, len, &out), LR_ETOOBIG);
	assert_true(out.nstreams <= out.cap);
	free(m);
	free(sout);
	free(sin);
}

/* Several messages in one buffer, read back in order. */
static void test_rt_sequence(void **state)
{
	struct proto_ctrl_open co, co2;
	struct proto_test_request rq, rq2;
	struct proto_hdr h;
	struct msg m;
	size_t off;

	(void)state;
	memset(&co, 0, sizeof(co));
	snprintf(co.software, sizeof(co.software), "linerate 0.1.0");
	memset(&rq, 0, sizeof(rq));
	rq.streams = 2;
	rq.duration_ms = 5000;
	rq.blksize = 65536;
	msg_init(&m);
	assert_int_equal(proto_encode_ctrl_open(&m.b, &co), 0);
	assert_int_equal(proto_encode_test_request(&m.b, &rq), 0);
	assert_int_equal(proto_encode_empty(&m.b, PROTO_TEST_START), 0);

	off = 0;
	assert_int_equal(proto_decode_hdr(m.mem, m.b.len, PROTO_MAX_OPEN_BODY,
					  &h),
			 PROTO_HDR_LEN);
	assert_int_equal(h.type, PROTO_CTRL_OPEN);
	off += PROTO_HDR_LEN;
	assert_int_equal(proto_decode_ctrl_open(m.mem + off, h.len, &co2), 0);
	ctrl_open_eq(&co, &co2);
	off += h.len;
	assert_int_equal(proto_decode_hdr(m.mem + off, m.b.len - off,
					  PROTO_MAX_BODY, &h),
			 PROTO_HDR_LEN);
	assert_int_equal(h.type, PROTO_TEST_REQUEST);
	off += PROTO_HDR_LEN;
	assert_int_equal(proto_decode_test_request(m.mem + off, h.len, &rq2),
			 0);
	test_request_eq(&rq, &rq2);
	off += h.len;
	assert_int_equal(proto_decode_hdr(m.mem + off, m.b.len - off,
					  PROTO_MAX_BODY, &h),
			 PROTO_HDR_LEN);
	assert_int_equal(h.type, PROTO_TEST_START);
	assert_int_equal(h.len, 0);
	off += PROTO_HDR_LEN;
	assert_int_equal(off, m.b.len);
}

/* ---- the builder ---- */

static void test_builder_overflow(void **state)
{
	struct proto_ctrl_open co;
	uint8_t mem[256];
	struct proto_buf b;
	size_t need, cap;

	(void)state;
	memset(&co, 0, sizeof(co));
	snprintf(co.software, sizeof(co.software), "linerate 0.1.0");
	proto_buf_init(&b, mem, sizeof(mem));
	assert_int_equal(proto_encode_ctrl_open(&b, &co), 0);
	need = b.len;

	for (cap = 0; cap < need; cap++) {
		memset(mem, 0xee, sizeof(mem));
		proto_buf_init(&b, mem, cap);
		assert_int_equal(proto_encode_ctrl_open(&b, &co), -ENOBUFS);
		assert_int_equal(b.err, -ENOBUFS);
		assert_true(b.len <= cap);
		/* nothing written past cap */
		assert_int_equal(mem[cap], 0xee);
	}
	proto_buf_init(&b, mem, need);
	assert_int_equal(proto_encode_ctrl_open(&b, &co), 0);
	assert_int_equal(b.len, need);
	/* full now: the next message does not fit */
	assert_int_equal(proto_encode_empty(&b, PROTO_TEST_START), -ENOBUFS);
}

static void test_builder_sticky(void **state)
{
	uint8_t mem[64];
	struct proto_buf b;
	size_t len;

	(void)state;
	proto_buf_init(&b, mem, 20);
	proto_msg_begin(&b, PROTO_ERROR);
	proto_put_u64(&b, PROTO_T_FEATURES, 1); /* 8 + 12 = 20: fits */
	assert_int_equal(b.err, 0);
	proto_put_u8(&b, PROTO_T_DIR, 1); /* does not */
	assert_int_equal(b.err, -ENOBUFS);
	len = b.len;
	/* every later put is a no-op, every end fails */
	proto_put_u8(&b, PROTO_T_DIR, 1);
	proto_put_u16(&b, PROTO_T_STREAM, 1);
	proto_put_u32(&b, PROTO_T_CODE, 1);
	proto_put_u64(&b, PROTO_T_BYTES, 1);
	proto_put_bytes(&b, PROTO_T_TEST_ID, "", 0);
	proto_put_str(&b, PROTO_T_TEXT, "");
	assert_int_equal(b.len, len);
	assert_int_equal(proto_msg_end(&b), -ENOBUFS);
	assert_int_equal(proto_msg_end(&b), -ENOBUFS);
	assert_int_equal(proto_encode_empty(&b, PROTO_TEST_STOP), -ENOBUFS);
	assert_int_equal(b.len, len);
	assert_int_equal(b.err, -ENOBUFS);

	/* a value longer than a TLV can say */
	proto_buf_init(&b, mem, sizeof(mem));
	proto_msg_begin(&b, PROTO_ERROR);
	proto_put_bytes(&b, PROTO_T_TEXT, mem, 0x10000);
	assert_int_equal(b.err, -ENOBUFS);
	assert_int_equal(b.len, PROTO_HDR_LEN);
	assert_int_equal(proto_msg_end(&b), -ENOBUFS);
}

/* A body over PROTO_MAX_BODY cannot be ended, one at the limit can. */
static void test_builder_max_body(void **state)
{
	size_t cap = 2 * PROTO_MAX_BODY + 64;
	uint8_t *mem = malloc(cap), *val = calloc(1, 0xffff);
	struct proto_hdr h;
	struct proto_buf b;

	(void)state;
	assert_non_null(mem);
	assert_non_null(val);
	proto_buf_init(&b, mem, cap);
	proto_msg_begin(&b, PROTO_ERROR);
	proto_put_bytes(&b, 0x7000, val, PROTO_MAX_BODY - 4);
	assert_int_equal(proto_msg_end(&b), 0);
	assert_int_equal(proto_decode_hdr(mem, b.len, PROTO_MAX_BODY, &h),
			 PROTO_HDR_LEN);
	assert_int_equal(h.len, PROTO_MAX_BODY);

	/* one byte over */
	proto_buf_init(&b, mem, cap);
	proto_msg_begin(&b, PROTO_ERROR);
	proto_put_bytes(&b, 0x7000, val, PROTO_MAX_BODY - 3);
	assert_int_equal(b.err, 0);
	assert_int_equal(proto_msg_end(&b), -ENOBUFS);

	proto_buf_init(&b, mem, cap);
	proto_msg_begin(&b, PROTO_ERROR);
	proto_put_bytes(&b, 0x7000, val, 0xffff);
	proto_put_bytes(&b, 0x7000, val, 0xffff);
	assert_int_equal(b.err, 0);
	assert_int_equal(proto_msg_end(&b), -ENOBUFS);
	assert_int_equal(proto_msg_end(&b), -ENOBUFS);

	/* a TLV value of 0x10000 does not fit its 16-bit length, even
	 * where the buffer has room */
	proto_buf_init(&b, mem, cap);
	proto_msg_begin(&b, PROTO_ERROR);
	proto_put_bytes(&b, 0x7000, mem + cap / 2, 0x10000);
	assert_int_equal(b.err, -ENOBUFS);
	assert_int_equal(b.len, PROTO_HDR_LEN);
	free(val);
	free(mem);
}

/* ---- malformed bodies, by mutation of a table of valid TLVs ---- */

typedef int (*decode_fn)(const uint8_t *body, size_t len);

static int dec_ctrl_open(const uint8_t *body, size_t len)
{
	struct proto_ctrl_open m;

	return proto_decode_ctrl_open(body, len, &m);
}

static int dec_data_open(const uint8_t *body, size_t len)
{
	struct proto_data_open m;

	return proto_decode_data_open(body, len, &m);
}

static int dec_error(const uint8_t *body, size_t len)
{
	struct proto_error m;

	return proto_decode_error(body, len, &m);
}

static int dec_test_request(const uint8_t *body, size_t len)
{
	struct proto_test_request m;

	return proto_decode_test_request(body, len, &m);
}

static int dec_test_accept(const uint8_t *body, size_t len)
{
	struct proto_test_accept m;

	return proto_decode_test_accept(body, len, &m);
}

static int dec_empty(const uint8_t *body, size_t len)
{
	return proto_decode_empty(body, len);
}

static int dec_results(const uint8_t *body, size_t len)
{
	struct proto_stream_result s[4];
	struct proto_results m;

	memset(&m, 0, sizeof(m));
	m.streams = s;
	m.cap = ARRAY_SIZE(s);
	return proto_decode_results(body, len, &m);
}

#define MAXV 64

struct field {
	uint16_t tag;
	uint16_t len;
	uint8_t v[MAXV];
	unsigned strcap; /* a string into char[strcap]; 0: fixed size */
	bool required;
	bool repeat; /* may appear more than once */
};

struct spec {
	const char *name;
	decode_fn dec;
	struct field f[12];
	size_t n;
};

/* Big-endian bytes of a constant, for the initializers below. */
#define BE16(x) (uint8_t)((x) >> 8), (uint8_t)(x)
#define BE32(x) BE16((uint32_t)(x) >> 16), BE16(x)
#define BE64(x) BE32((uint64_t)(x) >> 32), BE32(x)
#define ID16(b) b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b

/* clang-format off */
#define F(t, req, ...) { .tag = (t), \
	.len = sizeof((uint8_t[]){ __VA_ARGS__ }), .v = { __VA_ARGS__ }, \
	.required = (req) }
#define S(t, s, cap) { .tag = (t), .len = sizeof(s) - 1, .v = s, \
		       .strcap = (cap) }
/* A valid stream result: stream, dir, flags, bytes, duration, rest 0. */
#define SR(stream, dir) { .tag = PROTO_T_STREAM_RESULT, \
	.len = PROTO_STREAM_RESULT_LEN, .v = { BE16(stream), (dir), 0x01, \
	BE64(1ull << 40), BE64(10000000) }, .repeat = true }

enum { SP_CTRL_OPEN, SP_DATA_OPEN, SP_ERROR, SP_TEST_REQUEST,
       SP_TEST_ACCEPT, SP_RESULTS };

/* One valid body per message type, as a list of TLVs. */
static const struct spec specs[] = {
	[SP_CTRL_OPEN] = { "CTRL_OPEN", dec_ctrl_open, {
		S(PROTO_T_SOFTWARE, "linerate 0.1.0", PROTO_MAX_NAME + 1),
		F(PROTO_T_FEATURES, false, BE64(3)),
	}, 2 },
	[SP_DATA_OPEN] = { "DATA_OPEN", dec_data_open, {
		F(PROTO_T_TEST_ID, true, ID16(0x11)),
		F(PROTO_T_STREAM, true, BE16(7)),
		F(PROTO_T_DIR, true, PROTO_DIR_S2C),
	}, 3 },
	[SP_ERROR] = { "ERROR", dec_error, {
		F(PROTO_T_CODE, true, BE32(PROTO_ERR_BUSY)),
		S(PROTO_T_TEXT, "no free test slot", PROTO_MAX_TEXT + 1),
	}, 2 },
	[SP_TEST_REQUEST] = { "TEST_REQUEST", dec_test_request, {
		F(PROTO_T_MODE, true, PROTO_MODE_FORWARD),
		F(PROTO_T_STREAMS, true, BE16(4)),
		F(PROTO_T_DURATION_MS, true, BE64(10000)),
		F(PROTO_T_BYTES, true, BE64(0)),
		F(PROTO_T_BLKSIZE, true, BE32(131072)),
		F(PROTO_T_WINDOW, false, BE32(0)),
		S(PROTO_T_CC, "cubic", PROTO_CC_LEN),
		F(PROTO_T_MSS, false, BE32(0)),
		F(PROTO_T_ZEROCOPY, false, PROTO_ZC_SENDFILE),
		F(PROTO_T_OMIT_MS, false, BE64(1000)),
	}, 10 },
	[SP_TEST_ACCEPT] = { "TEST_ACCEPT", dec_test_accept, {
		F(PROTO_T_TEST_ID, true, ID16(0x22)),
		S(PROTO_T_SOFTWARE, "linerate 0.1.0", PROTO_MAX_NAME + 1),
		F(PROTO_T_OVERLAP, false, BE16(1)),
		F(PROTO_T_MAX_DURATION_MS, false, BE64(60000)),
	}, 4 },
	[SP_RESULTS] = { "TEST_RESULTS", dec_results, {
		F(PROTO_T_CPU, true, BE64(100), BE64(200), BE64(10000000)),
		S(PROTO_T_CC, "bbr", PROTO_CC_LEN),
		F(PROTO_T_OVERLAP, false, BE16(0)),
		SR(0, PROTO_DIR_C2S),
		SR(128, PROTO_DIR_S2C),
	}, 5 },
};
/* clang-format on */

static size_t field_index(const struct spec *s, uint16_t tag)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->f[i].tag == tag)
			return i;
	fail_msg("%s has no tag %#x", s->name, tag);
	return 0;
}

static void set_u(struct field *f, uint64_t v)
{
	wr_be(f->v, v, f->len);
}

/* Serialize fields into out; returns the body length. */
static size_t put_fields(uint8_t *out, size_t cap, const struct field *f,
			 size_t n)
{
	size_t i, off = 0;

	for (i = 0; i < n; i++) {
		assert_true(off + 4 + f[i].len <= cap);
		wr_be(out + off, f[i].tag, 2);
		wr_be(out + off + 2, f[i].len, 2);
		memcpy(out + off + 4, f[i].v, f[i].len);
		off += 4 + f[i].len;
	}
	return off;
}

static int decode_fields(const struct spec *s, const struct field *f, size_t n)
{
	uint8_t body[2048];
	size_t len = put_fields(body, sizeof(body), f, n);

	return s->dec(body, len);
}

static void expect(const struct spec *s, const char *what, size_t i, int r,
		   int want)
{
	if (r != want)
		fail_msg("%s, %s (field %zu): got %d, want %d", s->name, what,
			 i, r, want);
}

static void test_bad_baseline_valid(void **state)
{
	size_t k;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(specs); k++)
		expect(&specs[k], "valid", 0,
		       decode_fields(&specs[k], specs[k].f, specs[k].n), 0);
}

static void test_bad_missing(void **state)
{
	struct field f[12];
	size_t k, i;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(specs); k++) {
		const struct spec *s = &specs[k];

		for (i = 0; i < s->n; i++) {
			memcpy(f, s->f, i * sizeof(f[0]));
			memcpy(f + i, s->f + i + 1,
			       (s->n - i - 1) * sizeof(f[0]));
			expect(s, "omitted", i, decode_fields(s, f, s->n - 1),
			       s->f[i].required ? LR_EBADMSG : 0);
		}
	}
	/* an empty body has none of the required fields */
	assert_int_equal(dec_data_open(NULL, 0), LR_EBADMSG);
	assert_int_equal(dec_error(NULL, 0), LR_EBADMSG);
	assert_int_equal(dec_test_request(NULL, 0), LR_EBADMSG);
	assert_int_equal(dec_test_accept(NULL, 0), LR_EBADMSG);
	assert_int_equal(dec_results(NULL, 0), LR_EBADMSG);
	/* CTRL_OPEN has no required field */
	assert_int_equal(dec_ctrl_open(NULL, 0), 0);
}

static void test_bad_duplicate(void **state)
{
	struct field f[13];
	size_t k, i;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(specs); k++) {
		const struct spec *s = &specs[k];

		for (i = 0; i < s->n; i++) {
			/* the copy goes right after, and at the end */
			memcpy(f, s->f, (i + 1) * sizeof(f[0]));
			memcpy(f + i + 1, s->f + i, (s->n - i) * sizeof(f[0]));
			expect(s, "duplicated", i,
			       decode_fields(s, f, s->n + 1),
			       s->f[i].repeat ? 0 : LR_EBADMSG);
			memcpy(f, s->f, s->n * sizeof(f[0]));
			f[s->n] = s->f[i];
			expect(s, "duplicated at end", i,
			       decode_fields(s, f, s->n + 1),
			       s->f[i].repeat ? 0 : LR_EBADMSG);
		}
	}
}

static void test_bad_value_length(void **state)
{
	static const int delta[] = { -1, 1, 2 };
	struct field f[12];
	size_t k, i, d;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(specs); k++) {
		const struct spec *s = &specs[k];

		for (i = 0; i < s->n; i++) {
			if (s->f[i].strcap)
				continue;
			for (d = 0; d < ARRAY_SIZE(delta); d++) {
				memcpy(f, s->f, s->n * sizeof(f[0]));
				f[i].len = (uint16_t)(f[i].len + delta[d]);
				expect(s, "value length off by one", i,
				       decode_fields(s, f, s->n), LR_EBADMSG);
			}
			memcpy(f, s->f, s->n * sizeof(f[0]));
			f[i].len = 0;
			expect(s, "value length 0", i,
			       decode_fields(s, f, s->n), LR_EBADMSG);
		}
	}
}

/* Cut at every byte: inside a TLV is malformed, between TLVs is a body
 * that lacks the later fields. */
static void test_bad_truncated(void **state)
{
	uint8_t body[2048];
	size_t k, i, cut, len, edge, nfields;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(specs); k++) {
		const struct spec *s = &specs[k];

		len = put_fields(body, sizeof(body), s->f, s->n);
		for (cut = 0; cut < len; cut++) {
			bool req_missing = false;

			edge = 0;
			nfields = 0;
			while (nfields < s->n && edge < cut) {
				edge += 4 + s->f[nfields].len;
				nfields++;
			}
			if (edge != cut) {
				expect(s, "truncated inside a TLV", cut,
				       s->dec(body, cut), LR_EBADMSG);
				continue;
			}
			for (i = nfields; i < s->n; i++)
				req_missing = req_missing || s->f[i].required;
			expect(s, "truncated between TLVs", cut,
			       s->dec(body, cut), req_missing ? LR_EBADMSG : 0);
		}
	}
}

/* A TLV whose length runs past the end of the body. */
static void test_bad_length_beyond_body(void **state)
{
	uint8_t body[2048];
	size_t k, i, off, len;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(specs); k++) {
		const struct spec *s = &specs[k];

		len = put_fields(body, sizeof(body), s->f, s->n);
		off = 0;
		for (i = 0; i < s->n; i++) {
			uint16_t l = s->f[i].len;

			wr_be(body + off + 2, 0xffff, 2);
			expect(s, "TLV length 0xffff", i, s->dec(body, len),
			       LR_EBADMSG);
			wr_be(body + off + 2, (uint16_t)(len - off - 3), 2);
			expect(s, "TLV length one past the end", i,
			       s->dec(body, len), LR_EBADMSG);
			wr_be(body + off + 2, l, 2);
			off += 4 + l;
		}
		assert_int_equal(off, len);
	}
}

/* A TLV header cut short after the last complete TLV. */
static void test_bad_truncated_tlv_header(void **state)
{
	uint8_t body[2048];
	size_t k, len, extra;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(specs); k++) {
		const struct spec *s = &specs[k];

		len = put_fields(body, sizeof(body), s->f, s->n);
		memset(body + len, 0, 4);
		for (extra = 1; extra < 4; extra++)
			expect(s, "partial TLV header", extra,
			       s->dec(body, len + extra), LR_EBADMSG);
	}
	assert_int_equal(dec_empty((const uint8_t *)"\x70", 1), LR_EBADMSG);
	assert_int_equal(dec_empty((const uint8_t *)"\x70\x00\x00", 3),
			 LR_EBADMSG);
}

/* Unknown tags: skipped without the critical bit, fatal with it. */
static void test_bad_unknown_tags(void **state)
{
	static const uint16_t skip_tags[] = { 0x0000, 0x002f, 0x00ff, 0x0100,
					      0x7fff };
	static const uint16_t crit_tags[] = { 0x8000, 0x8001, 0x802f, 0xc000,
					      0xffff };
	struct field f[13];
	size_t k, i, t, pos;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(specs); k++) {
		const struct spec *s = &specs[k];

		for (pos = 0; pos <= s->n; pos++) {
			memcpy(f, s->f, pos * sizeof(f[0]));
			memcpy(f + pos + 1, s->f + pos,
			       (s->n - pos) * sizeof(f[0]));
			memset(&f[pos], 0, sizeof(f[pos]));
			for (t = 0; t < ARRAY_SIZE(skip_tags); t++) {
				f[pos].tag = skip_tags[t];
				for (i = 0; i < 3; i++) {
					f[pos].len = (uint16_t)(i * 9);
					expect(s, "unknown tag", pos,
					       decode_fields(s, f, s->n + 1),
					       0);
				}
			}
			for (t = 0; t < ARRAY_SIZE(crit_tags); t++) {
				f[pos].tag = crit_tags[t];
				f[pos].len = 4;
				expect(s, "unknown critical tag", pos,
				       decode_fields(s, f, s->n + 1),
				       LR_EBADMSG);
			}
		}
	}
}

/* Every string field: printable ASCII only, shorter than its buffer. */
static void test_bad_strings(void **state)
{
	static const struct {
		const char *s;
		size_t n;
	} bad[] = {
		{ "a\0b", 3 }, { "\0", 1 },   { "a\nb", 3 },
		{ "\r", 1 },   { "\t", 1 },   { "\x1b[31m", 5 },
		{ "\x01", 1 }, { "\x1f", 1 }, { "\x7f", 1 },
		{ "\x80", 1 }, { "\xff", 1 }, { "caf\xc3\xa9", 5 },
	};
	struct field f[12];
	size_t k, i, b, room;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(specs); k++) {
		const struct spec *s = &specs[k];

		for (i = 0; i < s->n; i++) {
			unsigned cap = s->f[i].strcap;

			if (!cap)
				continue;
			memcpy(f, s->f, s->n * sizeof(f[0]));
			for (b = 0; b < ARRAY_SIZE(bad); b++) {
				memcpy(f[i].v, bad[b].s, bad[b].n);
				f[i].len = (uint16_t)bad[b].n;
				expect(s, "bad string", b,
				       decode_fields(s, f, s->n), LR_EBADMSG);
			}
			f[i].len = 0;
			expect(s, "empty string", i, decode_fields(s, f, s->n),
			       0);
			/* all of printable ASCII is fine */
			room = cap - 1 < MAXV ? cap - 1 : MAXV;
			for (b = 0x20; b <= 0x7e; b++) {
				size_t at = (b - 0x20) % room;

				f[i].v[at] = (uint8_t)b;
				f[i].len = (uint16_t)(at + 1);
				if (at == room - 1 || b == 0x7e)
					expect(s, "printable string", b,
					       decode_fields(s, f, s->n), 0);
			}
		}
	}
}

/* A string of n printable characters after nreq fields of req: accepted
 * while shorter than cap, the size of the char array it lands in. */
static void string_limit(uint16_t tag, decode_fn dec, const struct field *req,
			 size_t nreq, unsigned cap)
{
	uint8_t body[1024];
	size_t len = put_fields(body, sizeof(body), req, nreq);
	size_t n, j;

	for (n = cap - 2; n <= cap + 1; n++) {
		wr_be(body + len, tag, 2);
		wr_be(body + len + 2, n, 2);
		for (j = 0; j < n; j++)
			body[len + 4 + j] = (uint8_t)(0x20 + j % 95);
		if (dec(body, len + 4 + n) != (n < cap ? 0 : LR_EBADMSG))
			fail_msg("tag %#x, %zu characters into char[%u]", tag,
				 n, cap);
	}
}

static void test_bad_string_length(void **state)
{
	(void)state;
	string_limit(PROTO_T_SOFTWARE, dec_ctrl_open, NULL, 0,
		     PROTO_MAX_NAME + 1);
	string_limit(PROTO_T_TEXT, dec_error, specs[SP_ERROR].f, 1,
		     PROTO_MAX_TEXT + 1);
	string_limit(PROTO_T_CC, dec_test_request, specs[SP_TEST_REQUEST].f, 5,
		     PROTO_CC_LEN);
	string_limit(PROTO_T_SOFTWARE, dec_test_accept, specs[SP_TEST_ACCEPT].f,
		     1, PROTO_MAX_NAME + 1);
	string_limit(PROTO_T_CC, dec_results, specs[SP_RESULTS].f, 1,
		     PROTO_CC_LEN);
}

/* The valid body of specs[k] with one field set to v. */
static int with_u(size_t k, uint16_t tag, uint64_t v)
{
	const struct spec *s = &specs[k];
	struct field f[12];

	memcpy(f, s->f, s->n * sizeof(f[0]));
	set_u(&f[field_index(s, tag)], v);
	return decode_fields(s, f, s->n);
}

/* A TEST_REQUEST with the given duration and byte limits. */
static int with_limits(uint64_t duration_ms, uint64_t bytes)
{
	const struct spec *s = &specs[SP_TEST_REQUEST];
	struct field f[12];

	memcpy(f, s->f, s->n * sizeof(f[0]));
	set_u(&f[field_index(s, PROTO_T_DURATION_MS)], duration_ms);
	set_u(&f[field_index(s, PROTO_T_BYTES)], bytes);
	return decode_fields(s, f, s->n);
}

static void test_bad_request_ranges(void **state)
{
	const size_t k = SP_TEST_REQUEST;

	(void)state;
	assert_int_equal(with_u(k, PROTO_T_STREAMS, 0), LR_EBADMSG);
	assert_int_equal(with_u(k, PROTO_T_STREAMS, 1), 0);
	assert_int_equal(with_u(k, PROTO_T_STREAMS, PROTO_MAX_STREAMS), 0);
	assert_int_equal(with_u(k, PROTO_T_STREAMS, PROTO_MAX_STREAMS + 1),
			 LR_EBADMSG);
	assert_int_equal(with_u(k, PROTO_T_STREAMS, 0xffff), LR_EBADMSG);

	assert_int_equal(with_u(k, PROTO_T_BLKSIZE, 0), LR_EBADMSG);
	assert_int_equal(with_u(k, PROTO_T_BLKSIZE, 1), 0);
	assert_int_equal(with_u(k, PROTO_T_BLKSIZE, PROTO_MAX_BLKSIZE), 0);
	assert_int_equal(with_u(k, PROTO_T_BLKSIZE, PROTO_MAX_BLKSIZE + 1),
			 LR_EBADMSG);
	assert_int_equal(with_u(k, PROTO_T_BLKSIZE, 0xffffffffu), LR_EBADMSG);

	assert_int_equal(with_u(k, PROTO_T_MODE, PROTO_MODE_REVERSE), 0);
	assert_int_equal(with_u(k, PROTO_T_MODE, PROTO_MODE_BIDIR), 0);
	assert_int_equal(with_u(k, PROTO_T_MODE, 3), LR_EBADMSG);
	assert_int_equal(with_u(k, PROTO_T_MODE, 0xff), LR_EBADMSG);

	assert_int_equal(with_u(k, PROTO_T_ZEROCOPY, PROTO_ZC_NONE), 0);
	assert_int_equal(with_u(k, PROTO_T_ZEROCOPY, PROTO_ZC_MSG), 0);
	assert_int_equal(with_u(k, PROTO_T_ZEROCOPY, 3), LR_EBADMSG);

	assert_int_equal(with_u(k, PROTO_T_MSS, 65535), 0);
	assert_int_equal(with_u(k, PROTO_T_MSS, 65536), LR_EBADMSG);
	assert_int_equal(with_u(k, PROTO_T_MSS, 0xffffffffu), LR_EBADMSG);

	assert_int_equal(with_u(k, PROTO_T_WINDOW, PROTO_MAX_WINDOW), 0);
	assert_int_equal(with_u(k, PROTO_T_WINDOW, PROTO_MAX_WINDOW + 1),
			 LR_EBADMSG);

	assert_int_equal(with_u(k, PROTO_T_OMIT_MS, PROTO_MAX_DURATION_MS), 0);
	assert_int_equal(with_u(k, PROTO_T_OMIT_MS, PROTO_MAX_DURATION_MS + 1),
			 LR_EBADMSG);
	assert_int_equal(with_u(k, PROTO_T_OMIT_MS, UINT64_MAX), LR_EBADMSG);

	/* exactly one of duration and bytes */
	assert_int_equal(with_limits(10000, 0), 0);
	assert_int_equal(with_limits(0, 1), 0);
	assert_int_equal(with_limits(0, UINT64_MAX), 0);
	assert_int_equal(with_limits(10000, 1000000), LR_EBADMSG);
	assert_int_equal(with_limits(0, 0), LR_EBADMSG);
	assert_int_equal(with_limits(PROTO_MAX_DURATION_MS, 0), 0);
	assert_int_equal(with_limits(PROTO_MAX_DURATION_MS + 1, 0), LR_EBADMSG);
	assert_int_equal(with_limits(UINT64_MAX, 0), LR_EBADMSG);
}

static void test_bad_data_open_ranges(void **state)
{
	const size_t k = SP_DATA_OPEN;

	(void)state;
	assert_int_equal(with_u(k, PROTO_T_STREAM, 0), 0);
	assert_int_equal(with_u(k, PROTO_T_STREAM, 2 * PROTO_MAX_STREAMS - 1),
			 0);
	assert_int_equal(with_u(k, PROTO_T_STREAM, 2 * PROTO_MAX_STREAMS),
			 LR_EBADMSG);
	assert_int_equal(with_u(k, PROTO_T_STREAM, 0xffff), LR_EBADMSG);
	assert_int_equal(with_u(k, PROTO_T_DIR, PROTO_DIR_C2S), 0);
	assert_int_equal(with_u(k, PROTO_T_DIR, 2), LR_EBADMSG);
	assert_int_equal(with_u(k, PROTO_T_DIR, 0xff), LR_EBADMSG);
}

/* A TEST_RESULTS body with n stream results, the first of the given
 * stream and dir, decoded with room for cap. */
static int results_with(uint16_t stream, uint8_t dir, size_t n, uint16_t cap)
{
	const struct spec *s = &specs[SP_RESULTS];
	const struct field *sr = &s->f[field_index(s, PROTO_T_STREAM_RESULT)];
	struct proto_stream_result out[4];
	struct proto_results m;
	struct field f[12];
	uint8_t body[2048];
	size_t i, len;
	int r;

	assert_true(n < ARRAY_SIZE(f));
	assert_true(cap <= ARRAY_SIZE(out));
	f[0] = s->f[field_index(s, PROTO_T_CPU)];
	for (i = 0; i < n; i++) {
		f[1 + i] = *sr;
		wr_be(f[1 + i].v, i ? 100 + i : stream, 2);
		f[1 + i].v[2] = i ? 0 : dir;
	}
	len = put_fields(body, sizeof(body), f, 1 + n);
	memset(&m, 0, sizeof(m));
	m.streams = out;
	m.cap = cap;
	r = proto_decode_results(body, len, &m);
	assert_true(m.nstreams <= cap);
	return r;
}

static void test_bad_results(void **state)
{
	(void)state;
	assert_int_equal(results_with(0, 0, 1, 4), 0);
	assert_int_equal(results_with(255, 1, 1, 4), 0);
	assert_int_equal(results_with(256, 0, 1, 4), LR_EBADMSG);
	assert_int_equal(results_with(0xffff, 0, 1, 4), LR_EBADMSG);
	assert_int_equal(results_with(0, 2, 1, 4), LR_EBADMSG);
	assert_int_equal(results_with(0, 0xff, 1, 4), LR_EBADMSG);
	/* more stream results than the caller has room for */
	assert_int_equal(results_with(0, 0, 4, 4), 0);
	assert_int_equal(results_with(0, 0, 5, 4), LR_ETOOBIG);
	assert_int_equal(results_with(0, 0, 10, 4), LR_ETOOBIG);
	assert_int_equal(results_with(0, 0, 1, 0), LR_ETOOBIG);
	assert_int_equal(results_with(0, 0, 0, 0), 0);
	assert_int_equal(results_with(0, 0, 2, 1), LR_ETOOBIG);
}

static void test_bad_empty(void **state)
{
	static const uint8_t skip_one[] = { 0x70, 0x00, 0x00, 0x02, 'h', 'i' };
	static const uint8_t crit_one[] = { 0x80, 0x01, 0x00, 0x00 };
	static const uint8_t past[] = { 0x70, 0x00, 0x00, 0x03, 'h', 'i' };

	(void)state;
	assert_int_equal(dec_empty(NULL, 0), 0);
	assert_int_equal(dec_empty(skip_one, sizeof(skip_one)), 0);
	assert_int_equal(dec_empty(crit_one, sizeof(crit_one)), LR_EBADMSG);
	assert_int_equal(dec_empty(past, sizeof(past)), LR_EBADMSG);
	/* a known tag means nothing in an empty message, but is not
	 * critical: skipped */
	assert_int_equal(dec_empty((const uint8_t *)"\x00\x01\x00\x00", 4), 0);
}

/* Decoders of other message types reject each other's bodies, as far as
 * their required fields tell them apart. */
static void test_bad_cross_type(void **state)
{
	uint8_t body[2048];
	size_t len;

	(void)state;
	len = put_fields(body, sizeof(body), specs[SP_TEST_REQUEST].f,
			 specs[SP_TEST_REQUEST].n);
	assert_int_equal(dec_data_open(body, len), LR_EBADMSG);
	assert_int_equal(dec_error(body, len), LR_EBADMSG);
	assert_int_equal(dec_results(body, len), LR_EBADMSG);
	assert_int_equal(dec_test_accept(body, len), LR_EBADMSG);
	len = put_fields(body, sizeof(body), specs[SP_CTRL_OPEN].f,
			 specs[SP_CTRL_OPEN].n);
	assert_int_equal(dec_test_request(body, len), LR_EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_preamble_encode),
		cmocka_unit_test(test_preamble_decode),
		cmocka_unit_test(test_preamble_not_linerate),
		cmocka_unit_test(test_version_choose),
		cmocka_unit_test(test_hdr_decode),
		cmocka_unit_test(test_hdr_reserved),
		cmocka_unit_test(test_hdr_too_big),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_rt_ctrl_open),
		cmocka_unit_test(test_rt_data_open),
		cmocka_unit_test(test_rt_error),
		cmocka_unit_test(test_rt_test_request),
		cmocka_unit_test(test_rt_test_accept),
		cmocka_unit_test(test_rt_empty),
		cmocka_unit_test(test_rt_results),
		cmocka_unit_test(test_tcp_result_placement),
		cmocka_unit_test(test_results_udp_order),
		cmocka_unit_test(test_udp_hello),
		cmocka_unit_test(test_rt_results_max),
		cmocka_unit_test(test_rt_sequence),
		cmocka_unit_test(test_builder_overflow),
		cmocka_unit_test(test_builder_sticky),
		cmocka_unit_test(test_builder_max_body),
		cmocka_unit_test(test_bad_baseline_valid),
		cmocka_unit_test(test_bad_missing),
		cmocka_unit_test(test_bad_duplicate),
		cmocka_unit_test(test_bad_value_length),
		cmocka_unit_test(test_bad_truncated),
		cmocka_unit_test(test_bad_length_beyond_body),
		cmocka_unit_test(test_bad_truncated_tlv_header),
		cmocka_unit_test(test_bad_unknown_tags),
		cmocka_unit_test(test_bad_strings),
		cmocka_unit_test(test_bad_string_length),
		cmocka_unit_test(test_bad_request_ranges),
		cmocka_unit_test(test_bad_data_open_ranges),
		cmocka_unit_test(test_bad_results),
		cmocka_unit_test(test_bad_empty),
		cmocka_unit_test(test_bad_cross_type),
		cmocka_unit_test(test_preamble_empty_null),
	};
	return cmocka_run_group_tests_name("proto", tests, NULL, NULL);
}
