// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for what a peer sends during and after the handshake:
 * session_hs_read_init (the server reading HS_INIT), session_hs_read_resp
 * (the client reading HS_RESP), and the record layer of conn.c
 * (conn_open_msg on bytes in memory, conn_recv_msg and conn_recv_data on
 * a socketpair).
 *
 * The first byte selects the mode and, for the record modes, the cipher
 * (handshake_fixture.h); the rest is the peer's bytes. Keys, psk and
 * prologue are fixed, so the seed corpus can hold valid messages
 * (gen_handshake_corpus.c writes them).
 *
 * Invariants checked, beyond "no sanitizer report":
 *  - return values are one of the documented ones; a length other than
 *    SESSION_HS_LEN is -EINVAL;
 *  - success means the input is a valid message: it is exactly what the
 *    sending side's code produces for the same keys and the plaintext that
 *    was read (re-sealed and compared byte for byte). Random input never
 *    passes; a mutation of a valid seed passes only if it changed nothing
 *    the tag covers, which is nothing;
 *  - an HS_RESP is only ever accepted from the fixed server key;
 *  - records never claim more than the caller's buffer.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "crypto.h"
#include "err.h"
#include "net.h"
#include "proto.h"
#include "session.h"
#include "handshake_fixture.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What fits a socketpair's buffer at once, so that writing never waits. */
#define MAX_STREAM 40000
#define DATA_CAP   4096
#define MSG_CAP	   (PROTO_HDR_LEN + 1024 + CRYPTO_TAG_LEN)
/* Records looked at per input. */
#define MAX_RECS 8

/* Built once: the states every input starts from. */
static struct {
	bool ready;
	struct session_hs server;     /* after session_hs_init */
	struct session_hs client;     /* after write_init */
	uint8_t init[SESSION_HS_LEN]; /* the client's HS_INIT */
	uint8_t server_pub[CRYPTO_X25519_LEN];
	struct conn rx[3]; /* per cipher, rx key fx_rec_key */
} fx;

static const _Atomic bool give_up = true;

static void setup(void)
{
	unsigned i;

	CHECK(session_hs_init(&fx.server, fx_psk, NULL, 0) == 0);
	CHECK(session_hs_init(&fx.client, fx_psk, NULL, 0) == 0);
	CHECK(session_hs_set_ephemeral(&fx.client, fx_client_e) == 0);
	CHECK(session_hs_write_init(&fx.client, &fx_client_hello, fx.init) ==
	      0);
	CHECK(crypto_x25519_public(fx_server_e, fx.server_pub) == 0);
	for (i = 0; i < 3; i++) {
		CHECK(conn_init_secure(&fx.rx[i], -1, fx_ciphers[i],
				       fx_other_key, fx_rec_key) == 0);
		fx.rx[i].abort = &give_up;
	}
	fx.ready = true;
}

static bool hello_eq(const struct session_hello *a,
		     const struct session_hello *b)
{
	return a->version == b->version && a->cipher == b->cipher &&
	       a->flags == b->flags &&
	       !memcmp(a->wire, b->wire, SESSION_WIRE_LEN);
}

/* Copy of the input in a buffer of its exact size (ASan sees overreads). */
static uint8_t *dup_exact(const uint8_t *p, size_t len)
{
	uint8_t *q = malloc(len ? len : 1);

	CHECK(q != NULL);
	if (len)
		memcpy(q, p, len);
	return q;
}

static void fuzz_read_init(const uint8_t *in, size_t len)
{
	struct session_hs s = fx.server, c;
	struct session_hello peer, peer2;
	uint8_t again[SESSION_HS_LEN], resp[SESSION_HS_LEN];
	uint8_t c2s[CRYPTO_KEY_LEN], s2c[CRYPTO_KEY_LEN];
	uint8_t *p = dup_exact(in, len);
	int r;

	memset(&peer, 0xa5, sizeof(peer));
	r = session_hs_read_init(&s, p, len, &peer);
	CHECK(r == 0 || r == -EACCES || r == -EINVAL);
	if (len != SESSION_HS_LEN)
		CHECK(r == -EINVAL);
	if (r)
		goto out;
	CHECK(peer.version == SESSION_VERSION);
	/* the client's code makes the same bytes from e.pub and the hello */
	CHECK(session_hs_init(&c, fx_psk, NULL, 0) == 0);
	memcpy(c.e_pub, p, CRYPTO_X25519_LEN);
	c.fixed_e = true;
	CHECK(session_hs_write_init(&c, &peer, again) == 0);
	CHECK(memcmp(again, p, SESSION_HS_LEN) == 0);
	/* and the answer: refused only for a low-order client key */
	CHECK(session_hs_set_ephemeral(&s, fx_server_e) == 0);
	r = session_hs_write_resp(&s, &fx_server_hello, resp);
	CHECK(r == 0 || r == -EINVAL);
	if (!r) {
		/* a client with that e (ours, when it is ours) agrees */
		if (!memcmp(p, fx.init, SESSION_HS_LEN)) {
			struct session_hs cl = fx.client;

			CHECK(session_hs_read_resp(&cl, resp, sizeof(resp),
						   &peer2) == 0);
			CHECK(hello_eq(&peer2, &fx_server_hello));
			session_hs_wipe(&cl);
		}
		CHECK(session_hs_split(&s, c2s, s2c) == 0);
	}
	session_hs_wipe(&c);
out:
	session_hs_wipe(&s);
	free(p);
}

static void fuzz_read_resp(const uint8_t *in, size_t len)
{
	struct session_hs c = fx.client, s;
	struct session_hello peer, seen;
	uint8_t again[SESSION_HS_LEN];
	uint8_t c2s[CRYPTO_KEY_LEN], s2c[CRYPTO_KEY_LEN];
	uint8_t *p = dup_exact(in, len);
	int r;

	r = session_hs_read_resp(&c, p, len, &peer);
	CHECK(r == 0 || r == -EACCES || r == -EINVAL);
	if (len != SESSION_HS_LEN)
		CHECK(r == -EINVAL);
	if (r)
		goto out;
	CHECK(peer.version == SESSION_VERSION);
	/* only the fixed server key can have made it... */
	CHECK(memcmp(p, fx.server_pub, CRYPTO_X25519_LEN) == 0);
	/* ...and the server's code makes the same bytes for that hello */
	s = fx.server;
	CHECK(session_hs_read_init(&s, fx.init, sizeof(fx.init), &seen) == 0);
	CHECK(hello_eq(&seen, &fx_client_hello));
	CHECK(session_hs_set_ephemeral(&s, fx_server_e) == 0);
	CHECK(session_hs_write_resp(&s, &peer, again) == 0);
	CHECK(memcmp(again, p, SESSION_HS_LEN) == 0);
	session_hs_wipe(&s);
	CHECK(session_hs_split(&c, c2s, s2c) == 0);
out:
	session_hs_wipe(&c);
	free(p);
}

/* Seal pt (len bytes) as record number seq under fx_rec_key and compare
 * with the record as it came: header, ciphertext, tag. */
static void check_reseal(enum crypto_cipher ci, uint64_t seq,
			 const uint8_t *hdr, const uint8_t *pt, size_t len,
			 const uint8_t *wire)
{
	enum crypto_cipher rc = ci == CRYPTO_NONE ? CRYPTO_CHACHA20POLY1305
						  : ci;
	uint8_t nonce[CRYPTO_NONCE_LEN] = { 0 }, tag[CRYPTO_TAG_LEN];
	struct crypto_aead *a;
	uint8_t *buf = dup_exact(pt, len);
	unsigned i;

	for (i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(seq >> (56 - 8 * i));
	CHECK(crypto_aead_new(rc, fx_rec_key, &a) == 0);
	CHECK(crypto_aead_seal(a, nonce, hdr, CONN_REC_HDR, buf, len, tag) ==
	      0);
	crypto_aead_free(a);
	CHECK(memcmp(buf, wire, len) == 0);
	CHECK(memcmp(tag, wire + len, CRYPTO_TAG_LEN) == 0);
	free(buf);
}

static struct conn *rx_conn(unsigned ci)
{
	struct conn *c = &fx.rx[ci];

	c->rx.seq = 0;
	c->rx.bytes = 0;
	c->fd = -1;
	return c;
}

static void fuzz_open_msg(unsigned ci, const uint8_t *in, size_t size)
{
	struct conn *c = rx_conn(ci);
	struct proto_hdr h;
	struct lr_err err;
	uint8_t hdr[CONN_REC_HDR], *rec;
	size_t len;
	int r;

	if (size < CONN_REC_HDR + CRYPTO_TAG_LEN)
		return;
	memcpy(hdr, in, CONN_REC_HDR);
	len = size - CONN_REC_HDR - CRYPTO_TAG_LEN;
	rec = dup_exact(in + CONN_REC_HDR, len + CRYPTO_TAG_LEN);
	memset(&err, 0, sizeof(err));
	r = conn_open_msg(c, hdr, rec, len, &h, &err);
	CHECK(r == 0 || r == LR_EBADMSG || r == LR_ERECORD);
	if (r) {
		CHECK(err.code == r);
		CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
	} else {
		CHECK(hdr[0] == CONN_REC_CTRL);
		CHECK(h.len + PROTO_HDR_LEN == len);
		CHECK(h.type == rec[0]);
		CHECK(c->rx.seq == 1);
		check_reseal(fx_ciphers[ci], 0, hdr, rec, len,
			     in + CONN_REC_HDR);
	}
	free(rec);
}

/* A socketpair whose reading end holds the input, the other end shut. */
static int stream_of(const uint8_t *in, size_t size, int sv[2])
{
	ssize_t n;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	if (size) {
		n = send(sv[0], in, size, MSG_NOSIGNAL);
		CHECK(n == (ssize_t)size);
	}
	shutdown(sv[0], SHUT_WR);
	return 0;
}

static void fuzz_recv_msg(unsigned ci, const uint8_t *in, size_t size)
{
	static uint8_t buf[MSG_CAP];
	struct conn *c = rx_conn(ci);
	struct proto_hdr h;
	struct lr_err err;
	size_t off = 0, n;
	unsigned i;
	int sv[2], r;

	if (size > MAX_STREAM)
		size = MAX_STREAM;
	if (stream_of(in, size, sv))
		return;
	c->fd = sv[1];
	for (i = 0; i < MAX_RECS; i++) {
		memset(&err, 0, sizeof(err));
		r = conn_recv_msg(c, buf, sizeof(buf), &h, net_now_ms() + 1000,
				  &err);
		CHECK(r == 0 || r == LR_EBADMSG || r == LR_ERECORD ||
		      r == LR_ECLOSED);
		if (r) {
			CHECK(err.code == r);
			break;
		}
		/* the record this came from, as it was on the wire */
		CHECK(off + CONN_REC_HDR <= size);
		n = (size_t)in[off + 1] << 16 | (size_t)in[off + 2] << 8 |
		    in[off + 3];
		CHECK(n == PROTO_HDR_LEN + h.len);
		CHECK(n + CRYPTO_TAG_LEN <= sizeof(buf));
		CHECK(off + CONN_REC_HDR + n + CRYPTO_TAG_LEN <= size);
		{
			uint8_t *pt = malloc(n);

			CHECK(pt != NULL);
			/* the message again: its header, then the body */
			pt[0] = h.type;
			pt[1] = h.flags;
			pt[2] = pt[3] = 0;
			pt[4] = (uint8_t)(h.len >> 24);
			pt[5] = (uint8_t)(h.len >> 16);
			pt[6] = (uint8_t)(h.len >> 8);
			pt[7] = (uint8_t)h.len;
			memcpy(pt + PROTO_HDR_LEN, buf, h.len);
			check_reseal(fx_ciphers[ci], i, in + off, pt, n,
				     in + off + CONN_REC_HDR);
			free(pt);
		}
		off += CONN_REC_HDR + n + CRYPTO_TAG_LEN;
	}
	close(sv[0]);
	close(sv[1]);
}

static void fuzz_recv_data(unsigned ci, const uint8_t *in, size_t size)
{
	static uint8_t buf[DATA_CAP];
	struct conn *c = rx_conn(ci);
	size_t off = 0, n;
	size_t tl = fx_ciphers[ci] == CRYPTO_NONE ? 0 : CRYPTO_TAG_LEN;
	uint8_t type;
	unsigned i;
	int sv[2], r;

	if (size > MAX_STREAM)
		size = MAX_STREAM;
	if (stream_of(in, size, sv))
		return;
	c->fd = sv[1];
	for (i = 0; i < MAX_RECS; i++) {
		r = conn_recv_data(c, buf, sizeof(buf), &type, &n);
		CHECK(r == 0 || r == LR_ERECORD || r == LR_EFRAME ||
		      r == LR_ETRUNC);
		if (r)
			break;
		CHECK(type == CONN_REC_DATA || type == CONN_REC_END);
		CHECK(type != CONN_REC_END || n == 0);
		CHECK(n + tl <= sizeof(buf));
		CHECK(off + CONN_REC_HDR + n + tl <= size);
		CHECK(in[off] == type);
		if (tl)
			check_reseal(fx_ciphers[ci], i, in + off, buf, n,
				     in + off + CONN_REC_HDR);
		else /* cipher none: data records travel in clear */
			CHECK(!memcmp(buf, in + off + CONN_REC_HDR, n));
		off += CONN_REC_HDR + n + tl;
		if (type == CONN_REC_END)
			break;
	}
	close(sv[0]);
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned mode, ci;

	if (!fx.ready)
		setup();
	if (!size)
		return 0;
	mode = data[0] % FX_MODES;
	ci = (unsigned)(data[0] / FX_MODES) % 3;
	data++;
	size--;
	switch (mode) {
	case FX_READ_INIT: fuzz_read_init(data, size); break;
	case FX_READ_RESP: fuzz_read_resp(data, size); break;
	case FX_OPEN_MSG: fuzz_open_msg(ci, data, size); break;
	case FX_RECV_MSG: fuzz_recv_msg(ci, data, size); break;
	default: fuzz_recv_data(ci, data, size); break;
	}
	return 0;
}
