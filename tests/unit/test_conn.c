// SPDX-License-Identifier: MIT
/*
 * Unit tests of conn.[ch]: control messages and data in records over
 * socketpairs (docs/PROTOCOL.md section 6), the record format itself,
 * tampering with records on the wire, rekeying, and the client side of a
 * connection's opening against a fake server thread.
 *
 * Tampering works on captured bytes: one conn writes records into a
 * socketpair, the test reads the raw bytes from the other end, changes
 * them, and writes them into a second socketpair that the receiving conn
 * reads.
 *
 * Every conn gets 5 s socket timeouts and an abort flag that is always
 * set, so that a test that would block forever fails with -ECANCELED
 * instead.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "conn.h"
#include "crypto.h"
#include "err.h"
#include "net.h"
#include "proto.h"
#include "session.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Room for the largest control message in a record. */
#define MSG_CAP (PROTO_HDR_LEN + PROTO_MAX_BODY + CONN_REC_HDR + CRYPTO_TAG_LEN)

static const _Atomic bool give_up = true;

static const enum crypto_cipher sealed_ciphers[] = {
	CRYPTO_AES256GCM,
	CRYPTO_CHACHA20POLY1305,
};
static const enum crypto_cipher all_ciphers[] = {
	CRYPTO_AES256GCM,
	CRYPTO_CHACHA20POLY1305,
	CRYPTO_NONE,
};

static int64_t soon(void)
{
	return net_now_ms() + 5000;
}

static void key_fill(uint8_t k[CRYPTO_KEY_LEN], uint8_t seed)
{
	unsigned i;

	for (i = 0; i < CRYPTO_KEY_LEN; i++)
		k[i] = (uint8_t)(seed * 37 + i);
}

static void pattern(uint8_t *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 31 + seed * 7 + 1);
}

static void sock_pair(int sv[2])
{
	struct timeval tv = { .tv_sec = 5 };
	int i;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(setsockopt(sv[i], SOL_SOCKET, SO_RCVTIMEO, &tv,
					    sizeof(tv)),
				 0);
		assert_int_equal(setsockopt(sv[i], SOL_SOCKET, SO_SNDTIMEO, &tv,
					    sizeof(tv)),
				 0);
	}
}

static void close_pair(int sv[2])
{
	close(sv[0]);
	close(sv[1]);
}

static void init_secure(struct conn *c, int fd, enum crypto_cipher ci,
			const uint8_t tx[32], const uint8_t rx[32])
{
	assert_int_equal(conn_init_secure(c, fd, ci, tx, rx), 0);
	c->abort = &give_up;
}

/* a on sv[0] and b on sv[1], each one's tx key the other's rx key. */
static void secure_pair(struct conn *a, struct conn *b, int sv[2],
			enum crypto_cipher ci)
{
	uint8_t k1[32], k2[32];

	key_fill(k1, 1);
	key_fill(k2, 2);
	sock_pair(sv);
	init_secure(a, sv[0], ci, k1, k2);
	init_secure(b, sv[1], ci, k2, k1);
}

static void write_all(int fd, const uint8_t *p, size_t len)
{
	assert_int_equal(net_write_full(fd, p, len, soon()), 0);
}

static void read_all(int fd, uint8_t *p, size_t len)
{
	assert_int_equal(net_read_full(fd, p, len, soon()), 0);
}

static size_t rd24(const uint8_t *p)
{
	return (size_t)p[0] << 16 | (size_t)p[1] << 8 | p[2];
}

/* ---- control messages ---- */

struct msg {
	uint8_t mem[PROTO_HDR_LEN + PROTO_MAX_BODY + 64];
	struct proto_buf b;
};

static void msg_ctrl_open(struct msg *m)
{
	struct proto_ctrl_open o = { .software = "linerate 0.1.0",
				     .features = 0 };

	proto_buf_init(&m->b, m->mem, sizeof(m->mem));
	assert_int_equal(proto_encode_ctrl_open(&m->b, &o), 0);
}

static void msg_error(struct msg *m)
{
	struct proto_error e = { .code = PROTO_ERR_LIMIT,
				 .text = "too long: 90000 s" };

	proto_buf_init(&m->b, m->mem, sizeof(m->mem));
	assert_int_equal(proto_encode_error(&m->b, &e), 0);
}

static void msg_empty(struct msg *m)
{
	proto_buf_init(&m->b, m->mem, sizeof(m->mem));
	assert_int_equal(proto_encode_empty(&m->b, PROTO_TEST_START), 0);
}

static struct proto_stream_result many[256];

static void msg_results(struct msg *m)
{
	struct proto_results r = { .cpu = { 1, 2, 3 }, .cc = "cubic" };
	unsigned i;

	for (i = 0; i < ARRAY_SIZE(many); i++) {
		many[i] = (struct proto_stream_result){
			.stream = (uint16_t)(i / 2),
			.dir = (uint8_t)(i % 2),
			.flags = 1,
			.bytes = 1000000ull * i,
			.duration_us = 10000000,
			.retrans = i,
		};
	}
	r.streams = many;
	r.nstreams = (uint16_t)ARRAY_SIZE(many);
	r.cap = r.nstreams;
	proto_buf_init(&m->b, m->mem, sizeof(m->mem));
	assert_int_equal(proto_encode_results(&m->b, &r), 0);
}

/* A TEST_RESULTS of body_len bytes: CPU, then unknown optional fields
 * (skipped by decoders) as padding. */
static void msg_padded(struct msg *m, size_t body_len)
{
	static uint8_t pad[PROTO_MAX_BODY];
	size_t left;

	proto_buf_init(&m->b, m->mem, sizeof(m->mem));
	proto_msg_begin(&m->b, PROTO_TEST_RESULTS);
	{
		uint8_t cpu[24] = { 0 };

		proto_put_bytes(&m->b, PROTO_T_CPU, cpu, sizeof(cpu));
	}
	left = body_len - 28;
	while (left) {
		size_t v = left - 4 > 30000 ? 30000 : left - 4;

		assert_true(left >= 4);
		pattern(pad, v, (unsigned)left);
		proto_put_bytes(&m->b, 0x7f00, pad, v);
		left -= 4 + v;
	}
	assert_int_equal(proto_msg_end(&m->b), 0);
	assert_int_equal(m->b.len, PROTO_HDR_LEN + body_len);
}

struct msg_sender {
	struct conn *c;
	uint8_t *p;
	size_t len;
	int r;
};

static void *msg_sender_main(void *arg)
{
	struct msg_sender *s = arg;

	s->r = conn_send_msg(s->c, s->p, s->len, soon());
	return NULL;
}

/*
 * Send m from a to b and check b gets the same header and body. The
 * sender is a thread: an AF_UNIX socket stops being writable at a quarter
 * of its buffer, less than the largest message.
 */
static void send_recv_msg(struct conn *a, struct conn *b, struct msg *m)
{
	static uint8_t copy[sizeof(m->mem)], rbuf[MSG_CAP];
	struct msg_sender s = { .c = a, .p = m->mem, .len = m->b.len };
	struct proto_hdr h;
	struct lr_err err;
	size_t len = m->b.len;
	pthread_t t;
	int r;

	memcpy(copy, m->mem, len);
	assert_int_equal(pthread_create(&t, NULL, msg_sender_main, &s), 0);
	memset(&err, 0, sizeof(err));
	r = conn_recv_msg(b, rbuf, sizeof(rbuf), &h, soon(), &err);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(s.r, 0);
	if (r)
		fail_msg("conn_recv_msg: %s", err.msg);
	assert_int_equal(h.type, copy[0]);
	assert_int_equal(h.len + PROTO_HDR_LEN, len);
	assert_memory_equal(rbuf, copy + PROTO_HDR_LEN, h.len);
}

static void exchange_all(struct conn *a, struct conn *b)
{
	struct proto_stream_result got[256];
	struct proto_results res = { .streams = got, .cap = 256 };
	static uint8_t rbuf[MSG_CAP];
	static struct msg m;
	struct proto_hdr h;

	msg_ctrl_open(&m);
	send_recv_msg(a, b, &m);
	msg_error(&m);
	send_recv_msg(b, a, &m);
	msg_empty(&m);
	send_recv_msg(a, b, &m);
	msg_results(&m);
	send_recv_msg(b, a, &m);
	/* 60 KiB: the size of TEST_RESULTS with many streams and fields */
	msg_padded(&m, 60 * 1024);
	send_recv_msg(a, b, &m);
	/* the largest message the protocol allows */
	msg_padded(&m, PROTO_MAX_BODY);
	send_recv_msg(b, a, &m);

	/* and what arrives decodes */
	msg_results(&m);
	assert_int_equal(conn_send_msg(a, m.mem, m.b.len, soon()), 0);
	assert_int_equal(conn_recv_msg(b, rbuf, sizeof(rbuf), &h, soon(), NULL),
			 0);
	assert_int_equal(h.type, PROTO_TEST_RESULTS);
	assert_int_equal(proto_decode_results(rbuf, h.len, &res), 0);
	assert_int_equal(res.nstreams, 256);
	assert_string_equal(res.cc, "cubic");
	assert_int_equal(got[255].retrans, 255);
}

static void test_msg_round_trip(void **state)
{
	struct conn a, b;
	int sv[2];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(all_ciphers); i++) {
		secure_pair(&a, &b, sv, all_ciphers[i]);
		assert_true(a.secure && b.secure);
		assert_int_equal(conn_data_sealed(&a),
				 all_ciphers[i] != CRYPTO_NONE);
		exchange_all(&a, &b);
		conn_fini(&a);
		conn_fini(&b);
		close_pair(sv);
	}
}

static void test_msg_plain(void **state)
{
	static uint8_t raw[PROTO_HDR_LEN + 64];
	struct conn a, b;
	struct msg m;
	int sv[2];

	(void)state;
	sock_pair(sv);
	conn_init_plain(&a, sv[0]);
	conn_init_plain(&b, sv[1]);
	assert_false(a.secure);
	assert_false(conn_data_sealed(&a));
	exchange_all(&a, &b);

	/* in clear, the bytes on the wire are the message */
	msg_ctrl_open(&m);
	assert_true(m.b.len <= sizeof(raw));
	memcpy(raw, m.mem, m.b.len);
	assert_int_equal(conn_send_msg(&a, m.mem, m.b.len, soon()), 0);
	{
		uint8_t got[sizeof(raw)];

		read_all(sv[1], got, m.b.len);
		assert_memory_equal(got, raw, m.b.len);
	}
	conn_fini(&a);
	conn_fini(&b);
	close_pair(sv);
}

/* A control record: type CTRL, the length, ciphertext, tag; it opens by
 * hand with the documented nonce and associated data. */
static void open_by_hand(enum crypto_cipher ci, const uint8_t key[32],
			 uint64_t seq, const uint8_t *rec, size_t rec_len,
			 uint8_t *pt_out)
{
	uint8_t nonce[12] = { 0 };
	struct crypto_aead *x;
	size_t n = rd24(rec + 1);
	unsigned i;

	assert_int_equal(rec_len, CONN_REC_HDR + n + CRYPTO_TAG_LEN);
	for (i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(seq >> (56 - 8 * i));
	memcpy(pt_out, rec + CONN_REC_HDR, n);
	assert_int_equal(crypto_aead_new(ci, key, &x), 0);
	assert_int_equal(crypto_aead_open(x, nonce, rec, CONN_REC_HDR, pt_out,
					  n, rec + CONN_REC_HDR + n),
			 0);
	crypto_aead_free(x);
}

static void test_msg_wire_format(void **state)
{
	static uint8_t rec[CONN_REC_HDR + 256 + CRYPTO_TAG_LEN], pt[256];
	uint8_t k1[32], plain[256];
	struct conn a, b;
	struct msg m;
	unsigned seq;
	size_t i, len;
	int sv[2];

	(void)state;
	key_fill(k1, 1);
	for (i = 0; i < ARRAY_SIZE(all_ciphers); i++) {
		enum crypto_cipher hand = all_ciphers[i] == CRYPTO_NONE
						  ? CRYPTO_CHACHA20POLY1305
						  : all_ciphers[i];

		secure_pair(&a, &b, sv, all_ciphers[i]);
		for (seq = 0; seq < 3; seq++) {
			msg_error(&m);
			len = m.b.len;
			assert_true(len <= sizeof(plain));
			memcpy(plain, m.mem, len);
			assert_int_equal(conn_send_msg(&a, m.mem, len, soon()),
					 0);
			read_all(sv[1], rec, CONN_REC_HDR);
			assert_int_equal(rec[0], CONN_REC_CTRL);
			assert_int_equal(rd24(rec + 1), len);
			read_all(sv[1], rec + CONN_REC_HDR,
				 len + CRYPTO_TAG_LEN);
			/* sealed: the message is not on the wire */
			assert_memory_not_equal(rec + CONN_REC_HDR, plain, len);
			open_by_hand(hand, k1, seq, rec,
				     CONN_REC_HDR + len + CRYPTO_TAG_LEN, pt);
			assert_memory_equal(pt, plain, len);
		}
		conn_fini(&a);
		conn_fini(&b);
		close_pair(sv);
	}
}

/* With cipher none, control records are ChaCha20-Poly1305: a conn set up
 * for ChaCha20-Poly1305 with the same keys reads them, one for AES-GCM
 * does not. */
static void test_msg_none_is_chacha(void **state)
{
	static uint8_t rbuf[MSG_CAP];
	uint8_t k1[32], k2[32];
	struct conn a, b;
	struct proto_hdr h;
	struct msg m;
	int sv[2];

	(void)state;
	key_fill(k1, 1);
	key_fill(k2, 2);

	sock_pair(sv);
	init_secure(&a, sv[0], CRYPTO_NONE, k1, k2);
	init_secure(&b, sv[1], CRYPTO_CHACHA20POLY1305, k2, k1);
	assert_false(conn_data_sealed(&a));
	assert_true(conn_data_sealed(&b));
	msg_ctrl_open(&m);
	send_recv_msg(&a, &b, &m);
	msg_error(&m);
	send_recv_msg(&b, &a, &m);
	conn_fini(&a);
	conn_fini(&b);
	close_pair(sv);

	sock_pair(sv);
	init_secure(&a, sv[0], CRYPTO_NONE, k1, k2);
	init_secure(&b, sv[1], CRYPTO_AES256GCM, k2, k1);
	msg_ctrl_open(&m);
	assert_int_equal(conn_send_msg(&a, m.mem, m.b.len, soon()), 0);
	assert_int_equal(conn_recv_msg(&b, rbuf, sizeof(rbuf), &h, soon(),
				       NULL),
			 LR_ERECORD);
	conn_fini(&a);
	conn_fini(&b);
	close_pair(sv);
}

/* Bounds of conn_recv_msg: more than PROTO_MAX_BODY, or more than the
 * caller's buffer, is refused before anything is read into it. */
static void test_msg_bounds(void **state)
{
	static uint8_t rbuf[MSG_CAP];
	static struct msg m;
	struct conn a, b;
	struct proto_hdr h;
	struct lr_err err;
	int sv[2];

	(void)state;
	/* a record announcing a message of PROTO_MAX_BODY + 1 bytes: refused
	 * on its header alone */
	secure_pair(&a, &b, sv, CRYPTO_CHACHA20POLY1305);
	{
		size_t n = PROTO_HDR_LEN + PROTO_MAX_BODY + 1;
		const uint8_t hdr[CONN_REC_HDR] = { CONN_REC_CTRL,
						    (uint8_t)(n >> 16),
						    (uint8_t)(n >> 8),
						    (uint8_t)n };

		write_all(sv[0], hdr, sizeof(hdr));
	}
	assert_int_equal(conn_recv_msg(&b, rbuf, sizeof(rbuf), &h, soon(),
				       &err),
			 LR_EBADMSG);
	assert_int_equal(err.code, LR_EBADMSG);
	conn_fini(&a);
	conn_fini(&b);
	close_pair(sv);

	/* a message that does not fit the caller's buffer */
	secure_pair(&a, &b, sv, CRYPTO_AES256GCM);
	msg_error(&m);
	assert_int_equal(conn_send_msg(&a, m.mem, m.b.len, soon()), 0);
	assert_int_equal(conn_recv_msg(&b, rbuf, m.b.len + CRYPTO_TAG_LEN - 1,
				       &h, soon(), NULL),
			 LR_EBADMSG);
	conn_fini(&a);
	conn_fini(&b);
	close_pair(sv);

	/* exactly enough room */
	secure_pair(&a, &b, sv, CRYPTO_AES256GCM);
	msg_error(&m);
	assert_int_equal(conn_send_msg(&a, m.mem, m.b.len, soon()), 0);
	assert_int_equal(conn_recv_msg(&b, rbuf, m.b.len + CRYPTO_TAG_LEN, &h,
				       soon(), NULL),
			 0);
	/* a DATA record where a control record is due */
	{
		uint8_t d[10];

		pattern(d, sizeof(d), 1);
		assert_int_equal(
			conn_send_data(&a, CONN_REC_DATA, d, sizeof(d)), 0);
		assert_int_equal(conn_recv_msg(&b, rbuf, sizeof(rbuf), &h,
					       soon(), NULL),
				 LR_EBADMSG);
	}
	conn_fini(&a);
	conn_fini(&b);
	close_pair(sv);
}

/* ---- data records ---- */

struct sender {
	struct conn *c;
	const size_t *sizes;
	size_t n;
	bool end;
	int r;
};

static void *sender_main(void *arg)
{
	struct sender *s = arg;
	uint8_t *buf;
	size_t i;

	s->r = 0;
	for (i = 0; i < s->n && !s->r; i++) {
		buf = malloc(s->sizes[i] ? s->sizes[i] : 1);
		if (!buf) {
			s->r = -ENOMEM;
			break;
		}
		pattern(buf, s->sizes[i], (unsigned)i);
		s->r = conn_send_data(s->c, CONN_REC_DATA, buf, s->sizes[i]);
		free(buf);
	}
	if (!s->r && s->end) {
		uint8_t none[1];

		s->r = conn_send_data(s->c, CONN_REC_END, none, 0);
	}
	return NULL;
}

static void test_data_round_trip(void **state)
{
	static const size_t sizes[] = { 1,     2,      100,	   1000,
					16384, 65536,  512 * 1024, 0,
					7,     100000, 1 << 20 };
	const size_t cap = (1 << 20) + CRYPTO_TAG_LEN;
	uint8_t *buf = malloc(cap), *want = malloc(1 << 20);
	struct sender s;
	struct conn a, b;
	pthread_t t;
	uint8_t type;
	size_t i, j, len;
	int sv[2];

	(void)state;
	assert_non_null(buf);
	assert_non_null(want);
	for (i = 0; i < ARRAY_SIZE(sealed_ciphers); i++) {
		secure_pair(&a, &b, sv, sealed_ciphers[i]);
		s = (struct sender){ .c = &a,
				     .sizes = sizes,
				     .n = ARRAY_SIZE(sizes),
				     .end = true };
		assert_int_equal(pthread_create(&t, NULL, sender_main, &s), 0);
		for (j = 0; j < ARRAY_SIZE(sizes); j++) {
			assert_int_equal(
				conn_recv_data(&b, buf, cap, &type, &len), 0);
			assert_int_equal(type, CONN_REC_DATA);
			assert_int_equal(len, sizes[j]);
			pattern(want, len, (unsigned)j);
			assert_memory_equal(buf, want, len);
		}
		assert_int_equal(conn_recv_data(&b, buf, cap, &type, &len), 0);
		assert_int_equal(type, CONN_REC_END);
		assert_int_equal(len, 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_equal(s.r, 0);
		conn_fini(&a);
		conn_fini(&b);
		close_pair(sv);
	}
	free(buf);
	free(want);
}

/* The other direction of the same connection, and the record format by
 * hand: a record sealed by the test with the documented nonce and
 * associated data opens in conn_recv_data. */
static void test_data_wire_format(void **state)
{
	uint8_t k2[32], rec[CONN_REC_HDR + 300 + CRYPTO_TAG_LEN], buf[400];
	uint8_t nonce[12], type;
	struct crypto_aead *x;
	struct conn a, b;
	size_t i, len;
	uint64_t seq;
	unsigned k;
	int sv[2];

	(void)state;
	key_fill(k2, 2);
	for (i = 0; i < ARRAY_SIZE(sealed_ciphers); i++) {
		secure_pair(&a, &b, sv, sealed_ciphers[i]);
		assert_int_equal(crypto_aead_new(sealed_ciphers[i], k2, &x), 0);
		for (seq = 0; seq < 4; seq++) {
			size_t n = seq == 3 ? 0 : 100 * (seq + 1);

			rec[0] = seq == 3 ? CONN_REC_END : CONN_REC_DATA;
			rec[1] = 0;
			rec[2] = (uint8_t)(n >> 8);
			rec[3] = (uint8_t)n;
			pattern(rec + CONN_REC_HDR, n, (unsigned)seq);
			memset(nonce, 0, sizeof(nonce));
			for (k = 0; k < 8; k++)
				nonce[4 + k] = (uint8_t)(seq >> (56 - 8 * k));
			assert_int_equal(
				crypto_aead_seal(x, nonce, rec, CONN_REC_HDR,
						 rec + CONN_REC_HDR, n,
						 rec + CONN_REC_HDR + n),
				0);
			/* b sends to a: a's rx key is k2 */
			write_all(sv[1], rec,
				  CONN_REC_HDR + n + CRYPTO_TAG_LEN);
			assert_int_equal(conn_recv_data(&a, buf, sizeof(buf),
							&type, &len),
					 0);
			assert_int_equal(type, rec[0]);
			assert_int_equal(len, n);
			pattern(rec, n, (unsigned)seq);
			assert_memory_equal(buf, rec, n);
		}
		crypto_aead_free(x);
		conn_fini(&a);
		conn_fini(&b);
		close_pair(sv);
	}
}

/* ---- tampering on the wire ---- */

struct rec_spec {
	uint8_t type;
	size_t len;
};

struct wire {
	uint8_t p[64 * 1024];
	size_t len;
	size_t off[16]; /* where each record starts */
	size_t n;
};

/* The bytes conn_send_data puts on the wire for recs, sent under tx. */
static void capture(struct wire *w, enum crypto_cipher ci, const uint8_t tx[32],
		    const struct rec_spec *recs, size_t n)
{
	uint8_t other[32], buf[8192];
	struct conn c;
	size_t i, rl;
	int sv[2];

	key_fill(other, 99);
	memset(w, 0, sizeof(*w));
	sock_pair(sv);
	init_secure(&c, sv[0], ci, tx, other);
	for (i = 0; i < n; i++) {
		assert_true(recs[i].len <= sizeof(buf));
		rl = CONN_REC_HDR + recs[i].len + CRYPTO_TAG_LEN;
		assert_true(w->len + rl <= sizeof(w->p));
		assert_true(i < ARRAY_SIZE(w->off));
		pattern(buf, recs[i].len, (unsigned)i);
		assert_int_equal(
			conn_send_data(&c, recs[i].type, buf, recs[i].len), 0);
		read_all(sv[1], w->p + w->len, rl);
		w->off[w->n++] = w->len;
		w->len += rl;
	}
	conn_fini(&c);
	close_pair(sv);
}

static size_t rec_len(const struct wire *w, size_t i)
{
	return (i + 1 < w->n ? w->off[i + 1] : w->len) - w->off[i];
}

/* Append record i of w to out. */
static void take(struct wire *out, const struct wire *w, size_t i)
{
	size_t rl = rec_len(w, i);

	assert_true(out->len + rl <= sizeof(out->p));
	memcpy(out->p + out->len, w->p + w->off[i], rl);
	out->off[out->n++] = out->len;
	out->len += rl;
}

struct outcome {
	int r;	       /* first non-zero result, or 0 */
	unsigned data; /* DATA records opened before it */
	bool end;      /* an END record was opened */
};

/*
 * Write raw into a fresh socketpair (closing the writing side when eof)
 * and read records from it with a conn whose rx key is rx, into a buffer
 * of cap bytes, until an error, END, or max records.
 */
static struct outcome receive(const uint8_t *raw, size_t len, bool eof,
			      enum crypto_cipher ci, const uint8_t rx[32],
			      size_t cap, unsigned max)
{
	struct outcome o = { 0 };
	uint8_t other[32], *buf = malloc(cap ? cap : 1), type;
	struct conn c;
	size_t n;
	int sv[2];

	assert_non_null(buf);
	key_fill(other, 98);
	sock_pair(sv);
	if (len)
		write_all(sv[0], raw, len);
	if (eof)
		assert_int_equal(shutdown(sv[0], SHUT_WR), 0);
	init_secure(&c, sv[1], ci, other, rx);
	while (o.data < max) {
		o.r = conn_recv_data(&c, buf, cap, &type, &n);
		if (o.r)
			break;
		if (type == CONN_REC_END) {
			o.end = true;
			break;
		}
		assert_int_equal(type, CONN_REC_DATA);
		o.data++;
	}
	conn_fini(&c);
	close_pair(sv);
	free(buf);
	return o;
}

#define CAP 4096

static const struct rec_spec five_k[] = {
	{ CONN_REC_DATA, 1000 }, { CONN_REC_DATA, 1000 },
	{ CONN_REC_DATA, 1000 }, { CONN_REC_DATA, 1000 },
	{ CONN_REC_DATA, 1000 },
};

/* The untouched capture opens: the baseline of every tampering test. */
static void test_tamper_baseline(void **state)
{
	static struct wire w;
	uint8_t k1[32];
	struct outcome o;
	size_t i;

	(void)state;
	key_fill(k1, 1);
	for (i = 0; i < ARRAY_SIZE(sealed_ciphers); i++) {
		capture(&w, sealed_ciphers[i], k1, five_k, 5);
		o = receive(w.p, w.len, false, sealed_ciphers[i], k1, CAP, 5);
		assert_int_equal(o.r, 0);
		assert_int_equal(o.data, 5);
	}
}

/* One bit of the first record's header: type or length. More records
 * follow, so that a larger length still finds bytes to read. */
static void test_tamper_header(void **state)
{
	static struct wire w, t;
	uint8_t k1[32];
	struct outcome o;
	unsigned bit;
	size_t i;

	(void)state;
	key_fill(k1, 1);
	for (i = 0; i < ARRAY_SIZE(sealed_ciphers); i++) {
		capture(&w, sealed_ciphers[i], k1, five_k, 5);
		for (bit = 0; bit < 32; bit++) {
			t = w;
			t.p[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			o = receive(t.p, t.len, false, sealed_ciphers[i], k1,
				    CAP, 5);
			/* a type or length the stream cannot take is found
			 * before the cipher (a framing error), the rest by
			 * the cipher: refused either way, nothing delivered */
			if ((o.r != LR_ERECORD && o.r != LR_EFRAME) ||
			    o.data != 0)
				fail_msg("header bit %u: result %d after %u "
					 "records",
					 bit, o.r, o.data);
		}
	}
}

/* One bit of the ciphertext (first, middle, last byte) or of the tag. */
static void test_tamper_body(void **state)
{
	static struct wire w, t;
	const size_t where[] = { CONN_REC_HDR, CONN_REC_HDR + 500,
				 CONN_REC_HDR + 999 };
	uint8_t k1[32];
	struct outcome o;
	unsigned bit;
	size_t i, j, at;

	(void)state;
	key_fill(k1, 1);
	for (i = 0; i < ARRAY_SIZE(sealed_ciphers); i++) {
		capture(&w, sealed_ciphers[i], k1, five_k, 2);
		for (j = 0; j < ARRAY_SIZE(where) + CRYPTO_TAG_LEN; j++) {
			at = j < ARRAY_SIZE(where)
				     ? where[j]
				     : CONN_REC_HDR + 1000 +
					       (j - ARRAY_SIZE(where));
			for (bit = 0; bit < 8; bit++) {
				t = w;
				t.p[at] ^= (uint8_t)(1u << bit);
				o = receive(t.p, t.len, true, sealed_ciphers[i],
					    k1, CAP, 5);
				if (o.r != LR_ERECORD || o.data != 0)
					fail_msg("byte %zu bit %u: result %d "
						 "after %u records",
						 at, bit, o.r, o.data);
			}
		}
		/* the same flip in the second record: the first opens */
		t = w;
		t.p[w.off[1] + CONN_REC_HDR] ^= 1;
		o = receive(t.p, t.len, true, sealed_ciphers[i], k1, CAP, 5);
		assert_int_equal(o.r, LR_ERECORD);
		assert_int_equal(o.data, 1);
	}
}

/* Records dropped, reordered, replayed, or from another connection. */
static void test_tamper_order(void **state)
{
	static const struct rec_spec three[] = {
		{ CONN_REC_DATA, 100 },
		{ CONN_REC_DATA, 200 },
		{ CONN_REC_DATA, 300 },
		{ CONN_REC_END, 0 },
	};
	static struct wire w, x, t;
	uint8_t k1[32], k3[32];
	struct outcome o;
	size_t i;

	(void)state;
	key_fill(k1, 1);
	key_fill(k3, 3);
	for (i = 0; i < ARRAY_SIZE(sealed_ciphers); i++) {
		enum crypto_cipher ci = sealed_ciphers[i];

		capture(&w, ci, k1, three, 4);
		o = receive(w.p, w.len, true, ci, k1, CAP, 10);
		assert_int_equal(o.r, 0);
		assert_int_equal(o.data, 3);
		assert_true(o.end);

		/* the first record dropped */
		memset(&t, 0, sizeof(t));
		take(&t, &w, 1);
		take(&t, &w, 2);
		take(&t, &w, 3);
		o = receive(t.p, t.len, true, ci, k1, CAP, 10);
		assert_int_equal(o.r, LR_ERECORD);
		assert_int_equal(o.data, 0);

		/* a record in the middle dropped */
		memset(&t, 0, sizeof(t));
		take(&t, &w, 0);
		take(&t, &w, 2);
		take(&t, &w, 3);
		o = receive(t.p, t.len, true, ci, k1, CAP, 10);
		assert_int_equal(o.r, LR_ERECORD);
		assert_int_equal(o.data, 1);

		/* the END record dropped: cut short */
		memset(&t, 0, sizeof(t));
		take(&t, &w, 0);
		take(&t, &w, 1);
		take(&t, &w, 2);
		o = receive(t.p, t.len, true, ci, k1, CAP, 10);
		assert_int_equal(o.r, LR_ETRUNC);
		assert_int_equal(o.data, 3);

		/* two records swapped */
		memset(&t, 0, sizeof(t));
		take(&t, &w, 1);
		take(&t, &w, 0);
		take(&t, &w, 2);
		take(&t, &w, 3);
		o = receive(t.p, t.len, true, ci, k1, CAP, 10);
		assert_int_equal(o.r, LR_ERECORD);
		assert_int_equal(o.data, 0);
		memset(&t, 0, sizeof(t));
		take(&t, &w, 0);
		take(&t, &w, 2);
		take(&t, &w, 1);
		take(&t, &w, 3);
		o = receive(t.p, t.len, true, ci, k1, CAP, 10);
		assert_int_equal(o.r, LR_ERECORD);
		assert_int_equal(o.data, 1);

		/* a record replayed */
		memset(&t, 0, sizeof(t));
		take(&t, &w, 0);
		take(&t, &w, 0);
		take(&t, &w, 1);
		o = receive(t.p, t.len, true, ci, k1, CAP, 10);
		assert_int_equal(o.r, LR_ERECORD);
		assert_int_equal(o.data, 1);

		/* END replayed after END is the caller's business; END
		 * where record 1 is due fails */
		memset(&t, 0, sizeof(t));
		take(&t, &w, 0);
		take(&t, &w, 3);
		o = receive(t.p, t.len, true, ci, k1, CAP, 10);
		assert_int_equal(o.r, LR_ERECORD);
		assert_int_equal(o.data, 1);

		/* the same records sealed under another connection's keys
		 * (a stream moved to this connection) */
		capture(&x, ci, k3, three, 4);
		o = receive(x.p, x.len, true, ci, k1, CAP, 10);
		assert_int_equal(o.r, LR_ERECORD);
		assert_int_equal(o.data, 0);
		/* ...or just its first record in front of ours */
		memset(&t, 0, sizeof(t));
		take(&t, &x, 0);
		take(&t, &w, 1);
		o = receive(t.p, t.len, true, ci, k1, CAP, 10);
		assert_int_equal(o.r, LR_ERECORD);
		assert_int_equal(o.data, 0);

		/* and under the right key but the other cipher */
		o = receive(w.p, w.len, true,
			    ci == CRYPTO_AES256GCM ? CRYPTO_CHACHA20POLY1305
						   : CRYPTO_AES256GCM,
			    k1, CAP, 10);
		assert_int_equal(o.r, LR_ERECORD);
	}
}

/* Our own records sent back to us (the other direction's key) fail. */
static void test_tamper_reflected(void **state)
{
	static const struct rec_spec one[] = { { CONN_REC_DATA, 64 } };
	uint8_t k1[32], k2[32];
	static struct wire w;
	struct outcome o;

	(void)state;
	key_fill(k1, 1);
	key_fill(k2, 2);
	/* sent under k1 (our tx); we read under k2 */
	capture(&w, CRYPTO_CHACHA20POLY1305, k1, one, 1);
	o = receive(w.p, w.len, true, CRYPTO_CHACHA20POLY1305, k2, CAP, 5);
	assert_int_equal(o.r, LR_ERECORD);
}

static void test_truncated(void **state)
{
	static const struct rec_spec two[] = {
		{ CONN_REC_DATA, 500 },
		{ CONN_REC_DATA, 500 },
	};
	static struct wire w;
	const size_t cuts[] = {
		1,			 /* inside the header */
		CONN_REC_HDR - 1,	 /* ... its last byte */
		CONN_REC_HDR,		 /* right after it */
		CONN_REC_HDR + 100,	 /* in the ciphertext */
		CONN_REC_HDR + 500,	 /* before the tag */
		CONN_REC_HDR + 500 + 15, /* inside the tag */
	};
	uint8_t k1[32];
	struct outcome o;
	size_t i, j;

	(void)state;
	key_fill(k1, 1);
	for (i = 0; i < ARRAY_SIZE(sealed_ciphers); i++) {
		capture(&w, sealed_ciphers[i], k1, two, 2);
		/* nothing at all */
		o = receive(w.p, 0, true, sealed_ciphers[i], k1, CAP, 5);
		assert_int_equal(o.r, LR_ETRUNC);
		assert_int_equal(o.data, 0);
		/* whole records, then end of file without END */
		o = receive(w.p, w.len, true, sealed_ciphers[i], k1, CAP, 5);
		assert_int_equal(o.r, LR_ETRUNC);
		assert_int_equal(o.data, 2);
		/* one record, then part of the next */
		for (j = 0; j < ARRAY_SIZE(cuts); j++) {
			o = receive(w.p, w.off[1] + cuts[j], true,
				    sealed_ciphers[i], k1, CAP, 5);
			if (o.r != LR_ETRUNC || o.data != 1)
				fail_msg("cut at %zu: result %d after %u",
					 cuts[j], o.r, o.data);
		}
	}
}

/* Records whose type has no place on a data stream, an END with a body,
 * and a record longer than the buffer. */
static void test_bad_records(void **state)
{
	static const uint8_t types[] = { 0, CONN_REC_CTRL, 4, 0x7f, 0xff };
	static struct wire w;
	struct rec_spec spec[1];
	uint8_t k1[32];
	struct outcome o;
	size_t i, j;

	(void)state;
	key_fill(k1, 1);
	for (i = 0; i < ARRAY_SIZE(sealed_ciphers); i++) {
		enum crypto_cipher ci = sealed_ciphers[i];

		/* a control record on a data stream, or no type at all:
		 * framing (LR_EFRAME), found before the cipher, and told as
		 * such, not as a record that failed authentication */
		for (j = 0; j < ARRAY_SIZE(types); j++) {
			spec[0] = (struct rec_spec){ types[j], 10 };
			capture(&w, ci, k1, spec, 1);
			o = receive(w.p, w.len, true, ci, k1, CAP, 5);
			assert_int_equal(o.r, LR_EFRAME);
		}
		/* an END record with a body, properly sealed */
		spec[0] = (struct rec_spec){ CONN_REC_END, 5 };
		capture(&w, ci, k1, spec, 1);
		o = receive(w.p, w.len, true, ci, k1, CAP, 5);
		assert_int_equal(o.r, LR_EFRAME);
		assert_false(o.end);

		/* 2000 bytes: 2016 with the tag; over the stream's bound */
		spec[0] = (struct rec_spec){ CONN_REC_DATA, 2000 };
		capture(&w, ci, k1, spec, 1);
		o = receive(w.p, w.len, false, ci, k1, 2015, 1);
		assert_int_equal(o.r, LR_EFRAME);
		o = receive(w.p, w.len, false, ci, k1, 2016, 1);
		assert_int_equal(o.r, 0);
		assert_int_equal(o.data, 1);
		/* no room even for a tag */
		o = receive(w.p, w.len, false, ci, k1, 0, 1);
		assert_int_equal(o.r, LR_EFRAME);
	}
}

/* A record longer than the format allows is refused by the sender. */
static void test_send_too_big(void **state)
{
	struct conn a, b;
	uint8_t *big = malloc(CONN_REC_MAX + 1);
	int sv[2];

	(void)state;
	assert_non_null(big);
	secure_pair(&a, &b, sv, CRYPTO_CHACHA20POLY1305);
	assert_int_equal(conn_send_data(&a, CONN_REC_DATA, big,
					(size_t)CONN_REC_MAX + 1),
			 -EMSGSIZE);
	assert_int_equal(conn_send_msg(&a, big, (size_t)CONN_REC_MAX + 1,
				       soon()),
			 -EMSGSIZE);
	conn_fini(&a);
	conn_fini(&b);
	close_pair(sv);
	free(big);
}

/* ---- rekeying ---- */

struct rekey_case {
	uint64_t records, bytes; /* sender's thresholds */
	bool receiver_too;
	size_t len;	  /* per record */
	unsigned want_ok; /* records that open of 10 */
};

static void run_rekey(enum crypto_cipher ci, const struct rekey_case *rc)
{
	uint8_t buf[1024], rbuf[1024 + CRYPTO_TAG_LEN], type;
	struct conn a, b;
	unsigned i, ok = 0;
	size_t len;
	int sv[2], r = 0;

	secure_pair(&a, &b, sv, ci);
	a.rekey_records = rc->records;
	a.rekey_bytes = rc->bytes;
	if (rc->receiver_too) {
		b.rekey_records = rc->records;
		b.rekey_bytes = rc->bytes;
	}
	assert_true(rc->len <= sizeof(buf));
	for (i = 0; i < 10; i++) {
		pattern(buf, rc->len, i);
		assert_int_equal(
			conn_send_data(&a, CONN_REC_DATA, buf, rc->len), 0);
	}
	for (i = 0; i < 10; i++) {
		r = conn_recv_data(&b, rbuf, sizeof(rbuf), &type, &len);
		if (r)
			break;
		pattern(buf, rc->len, i);
		assert_int_equal(len, rc->len);
		assert_memory_equal(rbuf, buf, len);
		ok++;
	}
	assert_int_equal(ok, rc->want_ok);
	if (ok < 10)
		assert_int_equal(r, LR_ERECORD);
	conn_fini(&a);
	conn_fini(&b);
	close_pair(sv);
}

static void test_rekey(void **state)
{
	static const struct rekey_case cases[] = {
		/* after 3 records */
		{ 3, CONN_REKEY_BYTES, true, 100, 10 },
		{ 3, CONN_REKEY_BYTES, false, 100, 3 },
		/* after 1000 bytes: 400-byte records, the third passes it */
		{ CONN_REKEY_RECORDS, 1000, true, 400, 10 },
		{ CONN_REKEY_RECORDS, 1000, false, 400, 3 },
		/* every record */
		{ 1, CONN_REKEY_BYTES, true, 10, 10 },
		{ 1, CONN_REKEY_BYTES, false, 10, 1 },
	};
	size_t i, j;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(sealed_ciphers); i++)
		for (j = 0; j < ARRAY_SIZE(cases); j++)
			run_rekey(sealed_ciphers[i], &cases[j]);
}

/* The next key is HKDF-Expand(key, "linerate rekey", 32), as documented,
 * and the count starts again; control records rekey too. */
static void test_rekey_derivation(void **state)
{
	static const char label[] = "linerate rekey";
	static uint8_t rbuf[MSG_CAP];
	uint8_t k1[32], next[32], buf[16];
	struct proto_hdr h;
	struct conn a, b;
	struct msg m;
	unsigned i;
	int sv[2];

	(void)state;
	key_fill(k1, 1);
	secure_pair(&a, &b, sv, CRYPTO_AES256GCM);
	a.rekey_records = b.rekey_records = 2;
	for (i = 0; i < 2; i++) {
		pattern(buf, sizeof(buf), i);
		assert_int_equal(
			conn_send_data(&a, CONN_REC_DATA, buf, sizeof(buf)), 0);
	}
	assert_int_equal(crypto_hkdf_expand(k1, (const uint8_t *)label,
					    strlen(label), next, 32),
			 0);
	assert_memory_equal(a.tx.key, next, 32);
	assert_int_equal(a.tx.seq, 0);
	assert_int_equal(a.tx.bytes, 0);
	/* two more: the key changes again */
	for (i = 0; i < 2; i++)
		assert_int_equal(
			conn_send_data(&a, CONN_REC_DATA, buf, sizeof(buf)), 0);
	memcpy(k1, next, 32);
	assert_int_equal(crypto_hkdf_expand(k1, (const uint8_t *)label,
					    strlen(label), next, 32),
			 0);
	assert_memory_equal(a.tx.key, next, 32);
	for (i = 0; i < 4; i++) {
		uint8_t type;
		size_t len;

		assert_int_equal(
			conn_recv_data(&b, rbuf, sizeof(rbuf), &type, &len), 0);
	}
	assert_memory_equal(b.rx.key, next, 32);

	/* control messages over the same keys, across more rekeys */
	for (i = 0; i < 7; i++) {
		msg_error(&m);
		assert_int_equal(conn_send_msg(&a, m.mem, m.b.len, soon()), 0);
		assert_int_equal(conn_recv_msg(&b, rbuf, sizeof(rbuf), &h,
					       soon(), NULL),
				 0);
	}
	conn_fini(&a);
	conn_fini(&b);
	close_pair(sv);
}

/* ---- conn_client_open against a fake server ---- */

enum fake_mode {
	FAKE_OK,	  /* a real handshake with its psk, then echo */
	FAKE_IGNORE_AUTH, /* answer HS_RESP even when HS_INIT failed */
	FAKE_ERROR,	  /* preamble, then ERROR err_code */
	FAKE_RAW,	  /* answer with raw bytes, then close */
	FAKE_PLAIN,	  /* no token: preamble, then echo in clear */
};

struct fake {
	int fd;
	enum fake_mode mode;
	const uint8_t *psk;
	int choose; /* cipher byte to answer, -1: pick for the wish */
	bool srv_aes;
	uint8_t vmin, vmax, chosen; /* our preamble */
	int tamper_at;		    /* a byte of our preamble+header, or -1 */
	uint8_t tamper_xor;	    /* changed in transit, after the hello */
	uint32_t err_code;
	const uint8_t *raw;
	size_t raw_len;
	/* what happened */
	int r;
	uint8_t pre[PROTO_PREAMBLE_LEN];
	struct proto_hdr h;
	struct session_hello hello;
	int hs_r;
	bool echoed, data_echoed;
	uint8_t first_type;  /* the first message after the handshake */
	uint32_t first_code; /* its code, when it is an ERROR */
};

static int fake_send_error(struct fake *f, uint32_t code)
{
	uint8_t out[PROTO_PREAMBLE_LEN + 256];
	struct proto_error e = { .code = code, .text = "wrong token" };
	struct proto_buf b;

	proto_encode_preamble(out, f->vmin, f->vmax, f->chosen);
	proto_buf_init(&b, out + PROTO_PREAMBLE_LEN,
		       sizeof(out) - PROTO_PREAMBLE_LEN);
	if (proto_encode_error(&b, &e))
		return -ENOBUFS;
	return net_write_full(f->fd, out, PROTO_PREAMBLE_LEN + b.len, soon());
}

/* Echo one control message, and one data record and END when sealed. */
static int fake_echo(struct fake *f, struct conn *sc)
{
	static uint8_t buf[MSG_CAP];
	struct proto_hdr h;
	uint8_t type;
	size_t len;
	int r;

	r = conn_recv_msg(sc, buf + PROTO_HDR_LEN, sizeof(buf) - PROTO_HDR_LEN,
			  &h, soon(), NULL);
	if (r)
		return r;
	f->first_type = h.type;
	if (h.type == PROTO_ERROR) {
		struct proto_error pe;

		r = proto_decode_error(buf + PROTO_HDR_LEN, h.len, &pe);
		f->first_code = r ? 0 : pe.code;
		return r;
	}
	buf[0] = h.type;
	buf[1] = h.flags;
	buf[2] = buf[3] = 0;
	buf[4] = (uint8_t)(h.len >> 24);
	buf[5] = (uint8_t)(h.len >> 16);
	buf[6] = (uint8_t)(h.len >> 8);
	buf[7] = (uint8_t)h.len;
	r = conn_send_msg(sc, buf, PROTO_HDR_LEN + h.len, soon());
	if (r)
		return r;
	f->echoed = true;
	if (!conn_data_sealed(sc))
		return 0;
	r = conn_recv_data(sc, buf, sizeof(buf), &type, &len);
	if (!r && type != CONN_REC_DATA)
		r = -EPROTO;
	if (!r)
		r = conn_send_data(sc, CONN_REC_DATA, buf, len);
	if (!r)
		r = conn_send_data(sc, CONN_REC_END, buf, 0);
	if (!r)
		f->data_echoed = true;
	return r;
}

static int fake_handshake(struct fake *f, const uint8_t *body)
{
	uint8_t out[PROTO_PREAMBLE_LEN + PROTO_HDR_LEN + SESSION_HS_LEN];
	uint8_t c2s[32], s2c[32];
	struct session_hello me;
	struct session_hs hs;
	struct conn sc;
	int r;

	r = session_hs_init(&hs, f->psk, NULL, 0);
	if (r)
		return r;
	f->hs_r = session_hs_read_init(&hs, body, SESSION_HS_LEN, &f->hello);
	if (f->hs_r && f->mode == FAKE_OK) {
		session_hs_wipe(&hs);
		return fake_send_error(f, PROTO_ERR_AUTH);
	}
	me.version = SESSION_VERSION;
	me.cipher = f->choose >= 0 ? (uint8_t)f->choose
				   : (uint8_t)session_pick_cipher(
					     f->hello.cipher,
					     f->hello.flags & SESSION_F_HAS_AES,
					     f->srv_aes);
	me.flags = f->srv_aes ? SESSION_F_HAS_AES : 0;
	proto_encode_preamble(out, f->vmin, f->vmax, f->chosen);
	memcpy(out + 8,
	       (const uint8_t[]){ PROTO_HS_RESP, 0, 0, 0, 0, 0, 0,
				  SESSION_HS_LEN },
	       8);
	memcpy(me.wire, out, SESSION_WIRE_LEN);
	r = session_hs_write_resp(&hs, &me, out + 16);
	if (r) {
		session_hs_wipe(&hs);
		return r;
	}
	if (f->tamper_at >= 0)
		out[f->tamper_at] ^= f->tamper_xor;
	r = net_write_full(f->fd, out, sizeof(out), soon());
	if (r || f->hs_r) {
		session_hs_wipe(&hs);
		return r;
	}
	r = session_hs_split(&hs, c2s, s2c);
	if (r)
		return r;
	if (me.cipher != CRYPTO_NONE && me.cipher != CRYPTO_AES256GCM &&
	    me.cipher != CRYPTO_CHACHA20POLY1305)
		return 0; /* the client must give up here */
	r = conn_init_secure(&sc, f->fd, me.cipher, s2c, c2s);
	if (r)
		return r;
	sc.abort = &give_up;
	r = fake_echo(f, &sc);
	conn_fini(&sc);
	return r;
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	uint8_t hdr[PROTO_HDR_LEN], body[PROTO_MAX_OPEN_BODY];
	int r;

	r = net_read_full(f->fd, f->pre, sizeof(f->pre), soon());
	if (r)
		goto out;
	if (f->mode == FAKE_PLAIN) {
		struct conn pc;

		proto_encode_preamble(hdr, f->vmin, f->vmax, f->chosen);
		r = net_write_full(f->fd, hdr, PROTO_PREAMBLE_LEN, soon());
		if (r)
			goto out;
		conn_init_plain(&pc, f->fd);
		r = fake_echo(f, &pc);
		goto out;
	}
	r = net_read_full(f->fd, hdr, sizeof(hdr), soon());
	if (r)
		goto out;
	r = proto_decode_hdr(hdr, sizeof(hdr), PROTO_MAX_OPEN_BODY, &f->h);
	if (r != PROTO_HDR_LEN) {
		r = -EPROTO;
		goto out;
	}
	r = net_read_full(f->fd, body, f->h.len, soon());
	if (r)
		goto out;
	if (f->h.type != PROTO_HS_INIT || f->h.len != SESSION_HS_LEN) {
		r = -EPROTO;
		goto out;
	}
	switch (f->mode) {
	case FAKE_RAW:
		r = f->raw_len
			    ? net_write_full(f->fd, f->raw, f->raw_len, soon())
			    : 0;
		break;
	case FAKE_ERROR: r = fake_send_error(f, f->err_code); break;
	default: r = fake_handshake(f, body); break;
	}
out:
	f->r = r;
	shutdown(f->fd, SHUT_WR);
	return NULL;
}

static void fake_init(struct fake *f, enum fake_mode mode, const uint8_t *psk)
{
	memset(f, 0, sizeof(*f));
	f->mode = mode;
	f->psk = psk;
	f->choose = -1;
	f->vmin = PROTO_VERSION_MIN;
	f->vmax = PROTO_VERSION_MAX;
	f->chosen = PROTO_VERSION_MAX;
	f->tamper_at = -1;
	f->srv_aes = true;
}

/* The client's half of fake_echo. */
static void client_echo(struct conn *c)
{
	static uint8_t rbuf[MSG_CAP];
	uint8_t data[3000], type;
	struct proto_hdr h;
	struct msg m;
	size_t len;

	msg_ctrl_open(&m);
	{
		uint8_t copy[256];
		size_t n = m.b.len;

		memcpy(copy, m.mem, n);
		assert_int_equal(conn_send_msg(c, m.mem, n, soon()), 0);
		assert_int_equal(conn_recv_msg(c, rbuf, sizeof(rbuf), &h,
					       soon(), NULL),
				 0);
		assert_int_equal(h.type, PROTO_CTRL_OPEN);
		assert_int_equal(h.len + PROTO_HDR_LEN, n);
		assert_memory_equal(rbuf, copy + PROTO_HDR_LEN, h.len);
	}
	if (!conn_data_sealed(c))
		return;
	pattern(data, sizeof(data), 5);
	assert_int_equal(conn_send_data(c, CONN_REC_DATA, data, sizeof(data)),
			 0);
	assert_int_equal(conn_recv_data(c, rbuf, sizeof(rbuf), &type, &len), 0);
	assert_int_equal(type, CONN_REC_DATA);
	assert_int_equal(len, sizeof(data));
	pattern(data, sizeof(data), 5);
	assert_memory_equal(rbuf, data, len);
	assert_int_equal(conn_recv_data(c, rbuf, sizeof(rbuf), &type, &len), 0);
	assert_int_equal(type, CONN_REC_END);
}

/* conn_client_open against f; on success the echo round trip too. */
static int open_against(struct fake *f, const uint8_t *psk, uint8_t wish,
			struct conn *c, struct lr_err *err)
{
	pthread_t t;
	int sv[2], r;

	sock_pair(sv);
	f->fd = sv[1];
	assert_int_equal(pthread_create(&t, NULL, fake_main, f), 0);
	memset(err, 0, sizeof(*err));
	memset(c, 0, sizeof(*c));
	r = conn_client_open(sv[0], psk, wish, "fake:7350", soon(), c, err);
	if (!r) {
		c->abort = &give_up;
		client_echo(c);
	} else {
		assert_int_equal(err->code, r);
		assert_true(err->msg[0] != '\0');
	}
	/* unblock the fake server whatever state it is in */
	shutdown(sv[0], SHUT_RDWR);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (!r)
		conn_fini(c);
	close_pair(sv);
	return r;
}

static const uint8_t client_preamble[8] = { 'L', 'N', 'R', 'T', 2, 2, 0, 0 };

static void test_open_ok(void **state)
{
	static const uint8_t wishes[] = {
		CRYPTO_AES256GCM,
		CRYPTO_CHACHA20POLY1305,
		CRYPTO_NONE,
		SESSION_CIPHER_AUTO,
	};
	const bool cpu_aes = crypto_cpu_has_aes();
	uint8_t psk[32], hdr[PROTO_HDR_LEN];
	struct lr_err err;
	struct fake f;
	struct conn c;
	size_t i;
	int srv_aes, r;

	(void)state;
	key_fill(psk, 50);
	for (i = 0; i < ARRAY_SIZE(wishes); i++) {
		for (srv_aes = 0; srv_aes < 2; srv_aes++) {
			enum crypto_cipher want = session_pick_cipher(
				wishes[i], cpu_aes, srv_aes);

			fake_init(&f, FAKE_OK, psk);
			f.srv_aes = srv_aes;
			r = open_against(&f, psk, wishes[i], &c, &err);
			if (r)
				fail_msg("wish %u: %s", wishes[i], err.msg);
			assert_int_equal(f.r, 0);
			assert_memory_equal(f.pre, client_preamble, 8);
			assert_int_equal(f.h.type, PROTO_HS_INIT);
			assert_int_equal(f.h.len, SESSION_HS_LEN);
			assert_int_equal(f.hs_r, 0);
			assert_int_equal(f.hello.version, SESSION_VERSION);
			/* the hello repeats what was sent in clear */
			proto_encode_hdr(hdr, &f.h);
			assert_true(
				session_hello_wire_ok(&f.hello, f.pre, hdr));
			assert_int_equal(f.hello.cipher, wishes[i]);
			assert_int_equal(f.hello.flags,
					 cpu_aes ? SESSION_F_HAS_AES : 0);
			assert_true(c.secure);
			assert_int_equal(c.cipher, want);
			assert_true(f.echoed);
			assert_int_equal(f.data_echoed, want != CRYPTO_NONE);
		}
	}
}

static void test_open_plain(void **state)
{
	struct lr_err err;
	struct fake f;
	struct conn c;

	(void)state;
	fake_init(&f, FAKE_PLAIN, NULL);
	assert_int_equal(open_against(&f, NULL, SESSION_CIPHER_AUTO, &c, &err),
			 0);
	assert_int_equal(f.r, 0);
	assert_memory_equal(f.pre, client_preamble, 8);
	assert_false(c.secure);
	assert_true(f.echoed);
}

static void test_open_auth_errors(void **state)
{
	uint8_t psk[32], other[32];
	struct lr_err err;
	struct fake f;
	struct conn c;

	(void)state;
	key_fill(psk, 51);
	key_fill(other, 52);

	/* the server holds another token: it answers ERROR AUTH */
	fake_init(&f, FAKE_OK, other);
	assert_int_equal(open_against(&f, psk, SESSION_CIPHER_AUTO, &c, &err),
			 LR_EAUTH);
	assert_int_equal(f.hs_r, -EACCES);
	assert_non_null(strstr(err.msg, "wrong token"));

	/* ... or answers HS_RESP all the same, which we refuse */
	fake_init(&f, FAKE_IGNORE_AUTH, other);
	assert_int_equal(open_against(&f, psk, SESSION_CIPHER_AUTO, &c, &err),
			 LR_EAUTH);
	assert_int_equal(f.hs_r, -EACCES);
	assert_non_null(strstr(err.msg, "did not verify"));

	/* a server that found our preamble changed on the way */
	fake_init(&f, FAKE_ERROR, NULL);
	f.err_code = PROTO_ERR_TAMPERED;
	assert_int_equal(open_against(&f, psk, CRYPTO_AES256GCM, &c, &err),
			 LR_ETAMPER);

	/* a server without a token answers ERROR AUTH */
	fake_init(&f, FAKE_ERROR, NULL);
	f.err_code = PROTO_ERR_AUTH;
	assert_int_equal(open_against(&f, psk, CRYPTO_AES256GCM, &c, &err),
			 LR_EAUTH);

	/* other errors before the handshake ends */
	fake_init(&f, FAKE_ERROR, NULL);
	f.err_code = PROTO_ERR_BUSY;
	assert_int_equal(open_against(&f, psk, CRYPTO_AES256GCM, &c, &err),
			 LR_EBUSY);
	fake_init(&f, FAKE_ERROR, NULL);
	f.err_code = PROTO_ERR_INTERNAL;
	assert_int_equal(open_against(&f, psk, CRYPTO_AES256GCM, &c, &err),
			 LR_EPEER);
}

static void test_open_not_linerate(void **state)
{
	static const char http[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
	static const uint8_t zeros[16] = { 0 };
	static const uint8_t iperf3[] = { 0x09, 0, 0, 0, 0, 0, 0, 0 };
	uint8_t psk[32];
	struct lr_err err;
	struct fake f;
	struct conn c;

	(void)state;
	key_fill(psk, 53);

	fake_init(&f, FAKE_RAW, psk);
	f.raw = (const uint8_t *)http;
	f.raw_len = strlen(http);
	assert_int_equal(open_against(&f, psk, SESSION_CIPHER_AUTO, &c, &err),
			 LR_ENOTLINERATE);

	fake_init(&f, FAKE_RAW, psk);
	f.raw = zeros;
	f.raw_len = sizeof(zeros);
	assert_int_equal(open_against(&f, psk, SESSION_CIPHER_AUTO, &c, &err),
			 LR_ENOTLINERATE);

	fake_init(&f, FAKE_RAW, psk);
	f.raw = iperf3;
	f.raw_len = sizeof(iperf3);
	assert_int_equal(open_against(&f, psk, SESSION_CIPHER_AUTO, &c, &err),
			 LR_ENOTLINERATE);

	/* closed without a word */
	fake_init(&f, FAKE_RAW, psk);
	assert_int_equal(open_against(&f, psk, SESSION_CIPHER_AUTO, &c, &err),
			 LR_ENOTLINERATE);
}

static void test_open_bad_answers(void **state)
{
	uint8_t psk[32], raw[128];
	struct lr_err err;
	struct fake f;
	struct conn c;

	(void)state;
	key_fill(psk, 54);

	/* a preamble, then the connection closes: a token server that
	 * dropped us */
	fake_init(&f, FAKE_RAW, psk);
	proto_encode_preamble(raw, 2, 2, 2);
	f.raw = raw;
	f.raw_len = PROTO_PREAMBLE_LEN;
	assert_int_equal(open_against(&f, psk, SESSION_CIPHER_AUTO, &c, &err),
			 LR_EAUTH);

	/* no version in common: a server of a later protocol */
	fake_init(&f, FAKE_OK, psk);
	f.vmin = f.vmax = PROTO_VERSION_MAX + 1;
	f.chosen = 0;
	assert_int_equal(open_against(&f, psk, SESSION_CIPHER_AUTO, &c, &err),
			 LR_EVERSION);

	/* HS_RESP of the wrong length */
	fake_init(&f, FAKE_RAW, psk);
	memset(raw, 0, sizeof(raw));
	proto_encode_preamble(raw, 2, 2, 2);
	raw[8] = PROTO_HS_RESP;
	raw[15] = SESSION_HS_LEN - 1;
	f.raw = raw;
	f.raw_len = 16 + SESSION_HS_LEN - 1;
	assert_int_equal(open_against(&f, psk, SESSION_CIPHER_AUTO, &c, &err),
			 LR_EBADMSG);

	/* a message that is not HS_RESP */
	fake_init(&f, FAKE_RAW, psk);
	raw[8] = PROTO_TEST_START;
	raw[15] = 0;
	f.raw = raw;
	f.raw_len = 16;
	assert_int_equal(open_against(&f, psk, SESSION_CIPHER_AUTO, &c, &err),
			 LR_EBADMSG);

	/* an announced length far beyond any answer */
	fake_init(&f, FAKE_RAW, psk);
	raw[8] = PROTO_HS_RESP;
	raw[12] = raw[13] = raw[14] = raw[15] = 0xff;
	f.raw = raw;
	f.raw_len = 16;
	assert_int_equal(open_against(&f, psk, SESSION_CIPHER_AUTO, &c, &err),
			 LR_ETOOBIG);
}

/*
 * The server's preamble or HS_RESP header changed on the way, after the
 * server wrote its hello: the client refuses with LR_ETAMPER, and when the
 * handshake itself went through, tells the server in a sealed ERROR.
 */
static void test_open_tampered(void **state)
{
	static const struct {
		int at;
		uint8_t mask;
		bool told; /* the handshake ended: the server hears why */
	} v[] = {
		{ 4, 0x01, false }, /* vmin 2 -> 3: no common version */
		{ 4, 0x02, true },  /* vmin 2 -> 0: a wider range */
		{ 5, 0x01, true },  /* vmax 2 -> 3 */
		{ 5, 0x03, false }, /* vmax 2 -> 1: no common version */
		{ 6, 0x03, false }, /* chosen 2 -> 1 */
		{ 6, 0x02, false }, /* chosen 2 -> 0: a refusal */
		{ 7, 0x80, true },  /* flags */
		{ 9, 0x01, true },  /* HS_RESP header's flags */
	};
	uint8_t psk[32];
	struct lr_err err;
	struct fake f;
	struct conn c;
	size_t i;
	int r;

	(void)state;
	key_fill(psk, 56);
	for (i = 0; i < ARRAY_SIZE(v); i++) {
		fake_init(&f, FAKE_OK, psk);
		f.tamper_at = v[i].at;
		f.tamper_xor = v[i].mask;
		r = open_against(&f, psk, SESSION_CIPHER_AUTO, &c, &err);
		if (r != LR_ETAMPER)
			fail_msg("byte %d ^ 0x%02x: got %d (%s)", v[i].at,
				 v[i].mask, r, err.msg);
		assert_non_null(strstr(err.msg, "tampered with (preamble "
						"changed in transit)"));
		assert_int_equal(f.hs_r, 0);
		assert_int_equal(f.first_type, v[i].told ? PROTO_ERROR : 0);
		assert_int_equal(f.first_code,
				 v[i].told ? PROTO_ERR_TAMPERED : 0);
	}
}

static void test_open_cipher_choice(void **state)
{
	static const struct {
		uint8_t wish;
		int choose;
		int want;
	} v[] = {
		/* not what we asked for */
		{ CRYPTO_AES256GCM, CRYPTO_CHACHA20POLY1305, LR_EBADMSG },
		{ CRYPTO_CHACHA20POLY1305, CRYPTO_AES256GCM, LR_EBADMSG },
		{ CRYPTO_AES256GCM, CRYPTO_NONE, LR_EBADMSG },
		{ CRYPTO_NONE, CRYPTO_AES256GCM, LR_EBADMSG },
		/* no such cipher */
		{ SESSION_CIPHER_AUTO, 7, LR_EBADMSG },
		{ SESSION_CIPHER_AUTO, SESSION_CIPHER_AUTO, LR_EBADMSG },
		/* auto is one of the two ciphers, never none */
		{ SESSION_CIPHER_AUTO, CRYPTO_NONE, LR_EBADMSG },
		/* the server does not allow none */
		{ CRYPTO_NONE, SESSION_CIPHER_REFUSED, LR_EPEER },
		{ SESSION_CIPHER_AUTO, SESSION_CIPHER_REFUSED, LR_EPEER },
		/* auto may be either cipher */
		{ SESSION_CIPHER_AUTO, CRYPTO_AES256GCM, 0 },
		{ SESSION_CIPHER_AUTO, CRYPTO_CHACHA20POLY1305, 0 },
	};
	uint8_t psk[32];
	struct lr_err err;
	struct fake f;
	struct conn c;
	size_t i;
	int r;

	(void)state;
	key_fill(psk, 55);
	for (i = 0; i < ARRAY_SIZE(v); i++) {
		fake_init(&f, FAKE_OK, psk);
		f.choose = v[i].choose;
		r = open_against(&f, psk, v[i].wish, &c, &err);
		if (r != v[i].want)
			fail_msg("wish %u, server chose %d: got %d (%s), "
				 "want %d",
				 v[i].wish, v[i].choose, r, err.msg, v[i].want);
		if (!r)
			assert_int_equal(c.cipher, v[i].choose);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_msg_round_trip),
		cmocka_unit_test(test_msg_plain),
		cmocka_unit_test(test_msg_wire_format),
		cmocka_unit_test(test_msg_none_is_chacha),
		cmocka_unit_test(test_msg_bounds),
		cmocka_unit_test(test_data_round_trip),
		cmocka_unit_test(test_data_wire_format),
		cmocka_unit_test(test_tamper_baseline),
		cmocka_unit_test(test_tamper_header),
		cmocka_unit_test(test_tamper_body),
		cmocka_unit_test(test_tamper_order),
		cmocka_unit_test(test_tamper_reflected),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_send_too_big),
		cmocka_unit_test(test_rekey),
		cmocka_unit_test(test_rekey_derivation),
		cmocka_unit_test(test_open_ok),
		cmocka_unit_test(test_open_plain),
		cmocka_unit_test(test_open_auth_errors),
		cmocka_unit_test(test_open_not_linerate),
		cmocka_unit_test(test_open_bad_answers),
		cmocka_unit_test(test_open_cipher_choice),
		cmocka_unit_test(test_open_tampered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
