// SPDX-License-Identifier: MIT
/*
 * Unit tests of session.[ch]: tokens and the Noise NNpsk0 handshake
 * (docs/PROTOCOL.md section 5).
 *
 * Beyond round trips and rejections, two checks tie the handshake to
 * something other than session.c itself:
 *  - a second, deliberately naive implementation of the Noise symmetric
 *    state lives in this file (HMAC written out over SHA-256, Noise's HKDF
 *    from HMAC, ChaCha20-Poly1305 with Noise's nonce). It is first checked
 *    against the Noise_NNpsk0_25519_ChaChaPoly_SHA256 vector of the
 *    cacophony test suite (the vectors the Noise implementations share),
 *    then session.c's messages and keys are checked against it;
 *  - the bytes of both messages and the split keys for fixed inputs are
 *    pinned, so that any change to the construction is seen.
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

#include "crypto.h"
#include "session.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	fail_msg("bad hex digit '%c'", c);
	return -1;
}

/* Decode exactly len bytes of hex into out. */
static void unhex(const char *hex, uint8_t *out, size_t len)
{
	size_t i;

	assert_int_equal(strlen(hex), 2 * len);
	for (i = 0; i < len; i++)
		out[i] = (uint8_t)(hexval(hex[2 * i]) << 4 |
				   hexval(hex[2 * i + 1]));
}

static void assert_hex(const uint8_t *got, size_t len, const char *hex)
{
	uint8_t want[128];

	assert_true(len <= sizeof(want));
	unhex(hex, want, len);
	assert_memory_equal(got, want, len);
}

/* RFC 7748 section 6.1: Alice's and Bob's private and public keys. */
static const char alice_priv[] =
	"77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a";
static const char alice_pub[] =
	"8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a";
static const char bob_priv[] =
	"5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb";
static const char bob_pub[] =
	"de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f";

/* The preambles and handshake headers a client and a server send in
 * clear, repeated in their hellos' wire (the prologue is empty): "LNRT"
 * 2 2 0 0 and HS_INIT's header, "LNRT" 2 2 2 0 and HS_RESP's. */
static const uint8_t preamble[8] = { 'L', 'N', 'R', 'T', 2, 2, 0, 0 };
#define WIRE_C                                                               \
	{                                                                    \
		'L', 'N', 'R', 'T', 2, 2, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0x43 \
	}
#define WIRE_S                                                               \
	{                                                                    \
		'L', 'N', 'R', 'T', 2, 2, 2, 0, 0x21, 0, 0, 0, 0, 0, 0, 0x43 \
	}

static void psk_fill(uint8_t psk[CRYPTO_KEY_LEN], uint8_t seed)
{
	unsigned i;

	for (i = 0; i < CRYPTO_KEY_LEN; i++)
		psk[i] = (uint8_t)(seed + 7 * i);
}

/* ---- tokens ---- */

static bool is_b32(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '2' && c <= '7');
}

static void test_token_format(void **state)
{
	char t[SESSION_TOKEN_CHARS];
	unsigned i, round;

	(void)state;
	for (round = 0; round < 64; round++) {
		memset(t, 'X', sizeof(t));
		assert_int_equal(session_token_new(t), 0);
		assert_int_equal(strlen(t), 39);
		for (i = 0; i < 39; i++) {
			if (i % 5 == 4)
				assert_int_equal(t[i], '-');
			else
				assert_true(is_b32(t[i]));
		}
	}
}

static void test_token_new_differs(void **state)
{
	char a[SESSION_TOKEN_CHARS], b[SESSION_TOKEN_CHARS];
	uint8_t pa[CRYPTO_KEY_LEN], pb[CRYPTO_KEY_LEN];

	(void)state;
	assert_int_equal(session_token_new(a), 0);
	assert_int_equal(session_token_new(b), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(session_token_psk(a, pa), 0);
	assert_int_equal(session_token_psk(b, pb), 0);
	assert_memory_not_equal(pa, pb, sizeof(pa));
}

/* Every way of typing a fresh token gives the same key. */
static void test_token_psk_spellings(void **state)
{
	char t[SESSION_TOKEN_CHARS], v[128];
	uint8_t want[CRYPTO_KEY_LEN], got[CRYPTO_KEY_LEN];
	size_t i, n;

	(void)state;
	assert_int_equal(session_token_new(t), 0);
	assert_int_equal(session_token_psk(t, want), 0);

	/* upper case */
	for (i = 0; t[i]; i++)
		v[i] = (t[i] >= 'a' && t[i] <= 'z') ? (char)(t[i] - 'a' + 'A')
						    : t[i];
	v[i] = '\0';
	assert_int_equal(session_token_psk(v, got), 0);
	assert_memory_equal(got, want, sizeof(got));

	/* without dashes */
	for (i = n = 0; t[i]; i++)
		if (t[i] != '-')
			v[n++] = t[i];
	v[n] = '\0';
	assert_int_equal(strlen(v), 32);
	assert_int_equal(session_token_psk(v, got), 0);
	assert_memory_equal(got, want, sizeof(got));

	/* spaces for dashes, surrounding white space, a final newline, as
	 * read from a file or pasted */
	n = 0;
	v[n++] = ' ';
	v[n++] = '\t';
	for (i = 0; t[i]; i++)
		v[n++] = t[i] == '-' ? ' ' : t[i];
	v[n++] = '\r';
	v[n++] = '\n';
	v[n] = '\0';
	assert_int_equal(session_token_psk(v, got), 0);
	assert_memory_equal(got, want, sizeof(got));

	/* mixed case, a dash in an odd place */
	snprintf(v, sizeof(v), "%.3s-%s", t, t + 3);
	if (v[0] >= 'a' && v[0] <= 'z')
		v[0] = (char)(v[0] - 'a' + 'A');
	assert_int_equal(session_token_psk(v, got), 0);
	assert_memory_equal(got, want, sizeof(got));
}

/*
 * Known answers: the token bits come from Python's base64.b32decode (RFC
 * 4648) and the keys from hashlib.sha256("linerate token v1" || bits).
 */
static void test_token_psk_known(void **state)
{
	static const struct {
		const char *token;
		const char *psk;
	} v[] = {
		/* bytes 0x00..0x13: 160 bits */
		{ "aaaq-eaye-auda-ocaj-bifq-ydio-b4ib-ceqt",
		  "d1b64ff6e3f5ead48b9f98d9770733c5"
		  "85e747667a1ea14ac9e81a5a2bfdf351" },
		{ "AAAQEAYEAUDAOCAJBIFQYDIOB4IBCEQT\n",
		  "d1b64ff6e3f5ead48b9f98d9770733c5"
		  "85e747667a1ea14ac9e81a5a2bfdf351" },
		/* bytes 0x00..0x0f: 26 digits, 130 bits; the last 2 bits do
		 * not make a byte and are dropped */
		{ "aaaqeayeaudaocajbifqydiob4",
		  "8289babe7b404822309c308748859a72"
		  "f93185018e242987ce1dd124d379778e" },
		{ "aaaqeayeaudaocajbifqydiob7",
		  "8289babe7b404822309c308748859a72"
		  "f93185018e242987ce1dd124d379778e" },
		/* twenty zero bytes */
		{ "aaaa-aaaa-aaaa-aaaa-aaaa-aaaa-aaaa-aaaa",
		  "436f7dca33a8c7469153b23978bc2c47"
		  "a0b5991a84675d362469d5346794b55e" },
	};
	uint8_t got[CRYPTO_KEY_LEN];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(v); i++) {
		assert_int_equal(session_token_psk(v[i].token, got), 0);
		assert_hex(got, sizeof(got), v[i].psk);
	}
}

static void test_token_psk_rejects(void **state)
{
	static const char *const bad[] = {
		"",
		"   ",
		"----",
		"\n",
		/* 25 digits: 125 bits, under 128 */
		"aaaqeayeaudaocajbifqydiob",
		"aaaq-eaye-auda-ocaj-bifq-ydio-b",
		/* not in the alphabet */
		"aaaq-eaye-auda-ocaj-bifq-ydio-b4ib-ceq0",
		"aaaq-eaye-auda-ocaj-bifq-ydio-b4ib-ceq1",
		"aaaq-eaye-auda-ocaj-bifq-ydio-b4ib-ceq8",
		"aaaq-eaye-auda-ocaj-bifq-ydio-b4ib-ceq9",
		"aaaq-eaye-auda-ocaj-bifq-ydio-b4ib-ceq!",
		"aaaq-eaye-auda-ocaj-bifq-ydio-b4ib-ceq=",
		"aaaq_eaye_auda_ocaj_bifq_ydio_b4ib_ceqt",
		"aaaq.eaye.auda.ocaj.bifq.ydio.b4ib.ceqt",
		"0aaq-eaye-auda-ocaj-bifq-ydio-b4ib-ceqt",
		"aaaq-eaye-auda-ocaj-bifq-ydio-b4ib-ceqt\xc3\xa9",
		/* far too long for any key: more than 64 bytes of bits */
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	};
	uint8_t psk[CRYPTO_KEY_LEN], zero[CRYPTO_KEY_LEN];
	size_t i;

	(void)state;
	memset(zero, 0, sizeof(zero));
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(psk, 0, sizeof(psk));
		if (session_token_psk(bad[i], psk) != -EINVAL)
			fail_msg("token \"%s\" was not refused", bad[i]);
		/* nothing written on failure */
		assert_memory_equal(psk, zero, sizeof(psk));
	}
}

static void test_token_psk_distinct(void **state)
{
	uint8_t a[CRYPTO_KEY_LEN], b[CRYPTO_KEY_LEN];

	(void)state;
	assert_int_equal(
		session_token_psk("aaaq-eaye-auda-ocaj-bifq-ydio-b4ib-ceqt", a),
		0);
	/* one digit different */
	assert_int_equal(
		session_token_psk("aaaq-eaye-auda-ocaj-bifq-ydio-b4ib-cequ", b),
		0);
	assert_memory_not_equal(a, b, sizeof(a));
	/* a prefix of the same bits is a different token */
	assert_int_equal(
		session_token_psk("aaaq-eaye-auda-ocaj-bifq-ydio-b4ib", b), 0);
	assert_memory_not_equal(a, b, sizeof(a));
}

/* ---- a naive Noise symmetric state, written from the specification ---- */

/* HMAC-SHA256 (RFC 2104) over SHA-256 alone: keys here are 32 bytes. */
static void ref_hmac(const uint8_t *key, size_t klen, const uint8_t *data,
		     size_t dlen, uint8_t out[32])
{
	uint8_t k0[64], pad[64], inner[32];
	size_t i;

	assert_true(klen <= sizeof(k0));
	memset(k0, 0, sizeof(k0));
	memcpy(k0, key, klen);
	for (i = 0; i < 64; i++)
		pad[i] = k0[i] ^ 0x36;
	assert_int_equal(crypto_sha256(pad, 64, data, dlen, inner), 0);
	for (i = 0; i < 64; i++)
		pad[i] = k0[i] ^ 0x5c;
	assert_int_equal(crypto_sha256(pad, 64, inner, 32, out), 0);
}

/* Noise section 4.3: HKDF(chaining_key, input_key_material, n). */
static void ref_hkdf(const uint8_t ck[32], const uint8_t *ikm, size_t len,
		     uint8_t *out, unsigned n)
{
	uint8_t temp[32], in[33];
	unsigned i;

	ref_hmac(ck, 32, ikm, len, temp);
	in[0] = 0x01;
	ref_hmac(temp, 32, in, 1, out);
	for (i = 1; i < n; i++) {
		memcpy(in, out + 32 * (i - 1), 32);
		in[32] = (uint8_t)(i + 1);
		ref_hmac(temp, 32, in, 33, out + 32 * i);
	}
}

struct ref {
	uint8_t h[32], ck[32], k[32];
	uint64_t n;
};

static void ref_mix_hash(struct ref *s, const uint8_t *data, size_t len)
{
	assert_int_equal(crypto_sha256(s->h, 32, data, len, s->h), 0);
}

static void ref_mix_key(struct ref *s, const uint8_t *ikm, size_t len)
{
	uint8_t out[64];

	ref_hkdf(s->ck, ikm, len, out, 2);
	memcpy(s->ck, out, 32);
	memcpy(s->k, out + 32, 32);
	s->n = 0;
}

static void ref_mix_key_and_hash(struct ref *s, const uint8_t *ikm, size_t len)
{
	uint8_t out[96];

	ref_hkdf(s->ck, ikm, len, out, 3);
	memcpy(s->ck, out, 32);
	ref_mix_hash(s, out + 32, 32);
	memcpy(s->k, out + 64, 32);
	s->n = 0;
}

/* ENCRYPT(k, n, ad, plaintext) with ChaChaPoly: out gets len + 16 bytes. */
static void ref_encrypt(const uint8_t k[32], uint64_t n, const uint8_t *ad,
			size_t adlen, const uint8_t *pt, size_t len,
			uint8_t *out)
{
	struct crypto_aead *a;
	uint8_t nonce[12] = { 0 };
	unsigned i;

	/* 32 bits of zeros, then the counter little-endian */
	for (i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(n >> (8 * i));
	assert_int_equal(crypto_aead_new(CRYPTO_CHACHA20POLY1305, k, &a), 0);
	memcpy(out, pt, len);
	assert_int_equal(
		crypto_aead_seal(a, nonce, ad, adlen, out, len, out + len), 0);
	crypto_aead_free(a);
}

static void ref_encrypt_and_hash(struct ref *s, const uint8_t *pt, size_t len,
				 uint8_t *out)
{
	ref_encrypt(s->k, s->n, s->h, 32, pt, len, out);
	s->n++;
	ref_mix_hash(s, out, len + 16);
}

/* InitializeSymmetric(protocol_name), MixHash(prologue), and the psk
 * token of NNpsk0's first message: MixKeyAndHash(psk). */
static void ref_start(struct ref *s, const uint8_t *prologue, size_t plen,
		      const uint8_t psk[32])
{
	static const char name[] = "Noise_NNpsk0_25519_ChaChaPoly_SHA256";

	memset(s, 0, sizeof(*s));
	/* longer than HASHLEN (36 > 32): h = HASH(protocol_name) */
	assert_true(sizeof(name) - 1 > 32);
	assert_int_equal(crypto_sha256(name, sizeof(name) - 1, NULL, 0, s->h),
			 0);
	memcpy(s->ck, s->h, 32);
	ref_mix_hash(s, prologue, plen);
	ref_mix_key_and_hash(s, psk, 32);
}

/*
 * A whole NNpsk0 exchange on one symmetric state (both sides hold the same
 * one after each message):
 *   -> psk, e     MixHash(e.pub), MixKey(e.pub) [psk modifier], payload
 *   <- e, ee      MixHash(e.pub), MixKey(e.pub), MixKey(DH(e, re)), payload
 * then Split(). Messages are e.pub || ENCRYPT(payload) || tag.
 */
struct ref_run {
	uint8_t msg1[256], msg2[256];
	size_t len1, len2;
	uint8_t c2s[32], s2c[32];
};

static void ref_nnpsk0(const uint8_t *prologue, size_t plen,
		       const uint8_t psk[32], const uint8_t ie_priv[32],
		       const uint8_t re_priv[32], const uint8_t *p1,
		       size_t p1len, const uint8_t *p2, size_t p2len,
		       struct ref_run *out)
{
	uint8_t ie_pub[32], re_pub[32], dh[32], split[64];
	struct ref s;

	assert_true(p1len + 48 <= sizeof(out->msg1));
	assert_true(p2len + 48 <= sizeof(out->msg2));
	assert_int_equal(crypto_x25519_public(ie_priv, ie_pub), 0);
	assert_int_equal(crypto_x25519_public(re_priv, re_pub), 0);
	ref_start(&s, prologue, plen, psk);

	ref_mix_hash(&s, ie_pub, 32);
	ref_mix_key(&s, ie_pub, 32);
	memcpy(out->msg1, ie_pub, 32);
	ref_encrypt_and_hash(&s, p1, p1len, out->msg1 + 32);
	out->len1 = 32 + p1len + 16;

	ref_mix_hash(&s, re_pub, 32);
	ref_mix_key(&s, re_pub, 32);
	assert_int_equal(crypto_x25519(re_priv, ie_pub, dh), 0);
	ref_mix_key(&s, dh, 32);
	memcpy(out->msg2, re_pub, 32);
	ref_encrypt_and_hash(&s, p2, p2len, out->msg2 + 32);
	out->len2 = 32 + p2len + 16;

	ref_hkdf(s.ck, NULL, 0, split, 2);
	memcpy(out->c2s, split, 32);
	memcpy(out->s2c, split + 32, 32);
}

/*
 * The reference above against the cacophony vector for
 * Noise_NNpsk0_25519_ChaChaPoly_SHA256 (its first four messages: the two
 * handshake messages and one transport message each way, nonce 0, empty
 * associated data). The vector's "handshake_hash" field is not checked: in
 * the copy we took it from it is not the final h of revision 34 for any
 * pattern (an independent Python implementation agrees with every message
 * and with this file, not with that field).
 */
static void test_reference_matches_cacophony(void **state)
{
	uint8_t prologue[9], psk[32], ie[32], re[32], ct[64];
	uint8_t p1[16], p2[15], p3[11], p4[11];
	struct ref_run run;

	(void)state;
	unhex("4a6f686e2047616c74", prologue, sizeof(prologue));
	unhex("54686973206973206d79204175737472"
	      "69616e20706572737065637469766521",
	      psk, sizeof(psk));
	unhex("893e28b9dc6ca8d611ab664754b8ceb7"
	      "bac5117349a4439a6b0569da977c464a",
	      ie, sizeof(ie));
	unhex("bbdb4cdbd309f1a1f2e1456967fe288c"
	      "add6f712d65dc7b7793d5e63da6b375b",
	      re, sizeof(re));
	unhex("4c756477696720766f6e204d69736573", p1, sizeof(p1));
	unhex("4d757272617920526f746862617264", p2, sizeof(p2));
	unhex("462e20412e20486179656b", p3, sizeof(p3));
	unhex("4361726c204d656e676572", p4, sizeof(p4));

	ref_nnpsk0(prologue, sizeof(prologue), psk, ie, re, p1, sizeof(p1), p2,
		   sizeof(p2), &run);
	assert_int_equal(run.len1, 64);
	assert_hex(run.msg1, run.len1,
		   "ca35def5ae56cec33dc2036731ab1489"
		   "6bc4c75dbb07a61f879f8e3afa4c7944"
		   "79b962b8aff8485742ac32f905ba4536"
		   "9e2465fb59e138a93d67a0d1266b6a54");
	assert_int_equal(run.len2, 63);
	assert_hex(run.msg2, run.len2,
		   "95ebc60d2b1fa672c1f46a8aa265ef51"
		   "bfe38e7ccb39ec5be34069f144808843"
		   "d6062704d5a9c422a8e834423f8c1fea"
		   "da7e8d0d910a1a2cd030fb584221e3");
	/* the split keys, through one transport message each way */
	ref_encrypt(run.c2s, 0, NULL, 0, p3, sizeof(p3), ct);
	assert_hex(ct, sizeof(p3) + 16,
		   "e632c3763d7669067383433197a3baddf146e9e70ad4b4e9e59e0f");
	ref_encrypt(run.s2c, 0, NULL, 0, p4, sizeof(p4), ct);
	assert_hex(ct, sizeof(p4) + 16,
		   "64c6bee32ea91c8474bb4c21d7a700109ad45af77b29764ba5eb1e");
}

/* ---- the handshake ---- */

struct hs_pair {
	struct session_hs c, s;
	uint8_t init[SESSION_HS_LEN], resp[SESSION_HS_LEN];
	struct session_hello c_saw, s_saw; /* what each side read */
	uint8_t c_c2s[32], c_s2c[32], s_c2s[32], s_s2c[32];
};

/* One full handshake; fixed ephemeral keys when c_e / s_e are set. */
static void handshake(struct hs_pair *p, const uint8_t psk[32],
		      const uint8_t *c_e, const uint8_t *s_e,
		      const struct session_hello *ch,
		      const struct session_hello *sh)
{
	memset(p, 0, sizeof(*p));
	assert_int_equal(session_hs_init(&p->c, psk, NULL, 0), 0);
	if (c_e)
		assert_int_equal(session_hs_set_ephemeral(&p->c, c_e), 0);
	assert_int_equal(session_hs_write_init(&p->c, ch, p->init), 0);

	assert_int_equal(session_hs_init(&p->s, psk, NULL, 0), 0);
	if (s_e)
		assert_int_equal(session_hs_set_ephemeral(&p->s, s_e), 0);
	assert_int_equal(session_hs_read_init(&p->s, p->init, sizeof(p->init),
					      &p->s_saw),
			 0);
	assert_int_equal(session_hs_write_resp(&p->s, sh, p->resp), 0);

	assert_int_equal(session_hs_read_resp(&p->c, p->resp, sizeof(p->resp),
					      &p->c_saw),
			 0);
	assert_int_equal(session_hs_split(&p->c, p->c_c2s, p->c_s2c), 0);
	assert_int_equal(session_hs_split(&p->s, p->s_c2s, p->s_s2c), 0);
}

static void assert_hello(const struct session_hello *a,
			 const struct session_hello *b)
{
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->cipher, b->cipher);
	assert_int_equal(a->flags, b->flags);
	assert_memory_equal(a->wire, b->wire, SESSION_WIRE_LEN);
}

/* A hello's plaintext as docs/PROTOCOL.md section 5 lays it out. */
static void hello_bytes(const struct session_hello *h,
			uint8_t out[SESSION_HELLO_LEN])
{
	out[0] = h->version;
	out[1] = h->cipher;
	out[2] = h->flags;
	memcpy(out + 3, h->wire, SESSION_WIRE_LEN);
}

static void test_hs_round_trip(void **state)
{
	static const struct {
		struct session_hello c, s;
	} v[] = {
		{ { SESSION_VERSION, SESSION_CIPHER_AUTO, SESSION_F_HAS_AES },
		  { SESSION_VERSION, CRYPTO_AES256GCM, SESSION_F_HAS_AES } },
		{ { SESSION_VERSION, SESSION_CIPHER_AUTO, 0 },
		  { SESSION_VERSION, CRYPTO_CHACHA20POLY1305,
		    SESSION_F_HAS_AES } },
		{ { SESSION_VERSION, CRYPTO_AES256GCM, 0 },
		  { SESSION_VERSION, CRYPTO_AES256GCM, 0 } },
		{ { SESSION_VERSION, CRYPTO_CHACHA20POLY1305,
		    SESSION_F_HAS_AES },
		  { SESSION_VERSION, CRYPTO_CHACHA20POLY1305, 0 } },
		{ { SESSION_VERSION, CRYPTO_NONE, 0 },
		  { SESSION_VERSION, CRYPTO_NONE, 0 } },
		{ { SESSION_VERSION, CRYPTO_NONE, 0 },
		  { SESSION_VERSION, SESSION_CIPHER_REFUSED, 0 } },
		/* flags the version does not define travel untouched */
		{ { SESSION_VERSION, 0x42, 0xfe },
		  { SESSION_VERSION, 0x77, 0x80 } },
	};
	uint8_t psk[32], zero[sizeof(struct session_hs)];
	struct hs_pair p;
	size_t i;

	(void)state;
	memset(zero, 0, sizeof(zero));
	psk_fill(psk, 1);
	for (i = 0; i < ARRAY_SIZE(v); i++) {
		handshake(&p, psk, NULL, NULL, &v[i].c, &v[i].s);
		assert_hello(&p.s_saw, &v[i].c);
		assert_hello(&p.c_saw, &v[i].s);
		assert_memory_equal(p.c_c2s, p.s_c2s, 32);
		assert_memory_equal(p.c_s2c, p.s_s2c, 32);
		assert_memory_not_equal(p.c_c2s, p.c_s2c, 32);
		/* split wipes the handshake state */
		assert_memory_equal(&p.c, zero, sizeof(p.c));
		assert_memory_equal(&p.s, zero, sizeof(p.s));
		/* the keys are not the psk */
		assert_memory_not_equal(p.c_c2s, psk, 32);
		assert_memory_not_equal(p.c_s2c, psk, 32);
	}
}

/* Random ephemeral keys: two handshakes never give the same keys. */
static void test_hs_fresh_keys(void **state)
{
	static const struct session_hello ch = { SESSION_VERSION,
						 SESSION_CIPHER_AUTO, 0 };
	static const struct session_hello sh = { SESSION_VERSION,
						 CRYPTO_CHACHA20POLY1305, 0 };
	uint8_t psk[32];
	struct hs_pair a, b;

	(void)state;
	psk_fill(psk, 2);
	handshake(&a, psk, NULL, NULL, &ch, &sh);
	handshake(&b, psk, NULL, NULL, &ch, &sh);
	assert_memory_not_equal(a.init, b.init, 32);
	assert_memory_not_equal(a.resp, b.resp, 32);
	assert_memory_not_equal(a.c_c2s, b.c_c2s, 32);
	assert_memory_not_equal(a.c_s2c, b.c_s2c, 32);
}

static void test_hs_set_ephemeral(void **state)
{
	struct session_hs hs;
	uint8_t psk[32], priv[32];

	(void)state;
	psk_fill(psk, 3);
	unhex(alice_priv, priv, 32);
	assert_int_equal(session_hs_init(&hs, psk, NULL, 0), 0);
	assert_int_equal(session_hs_set_ephemeral(&hs, priv), 0);
	assert_true(hs.fixed_e);
	assert_hex(hs.e_pub, 32, alice_pub);
	session_hs_wipe(&hs);
}

/*
 * session.c against the reference of this file, for several inputs: the
 * same HS_INIT and HS_RESP bytes and the same split keys. Together with
 * test_reference_matches_cacophony this shows that session.c is
 * Noise_NNpsk0_25519_ChaChaPoly_SHA256 as docs/PROTOCOL.md says.
 */
static void test_hs_matches_reference(void **state)
{
	static const struct session_hello ch = { SESSION_VERSION,
						 SESSION_CIPHER_AUTO,
						 SESSION_F_HAS_AES, WIRE_C };
	static const struct session_hello sh = { SESSION_VERSION,
						 CRYPTO_AES256GCM,
						 SESSION_F_HAS_AES, WIRE_S };
	uint8_t p1[SESSION_HELLO_LEN], p2[SESSION_HELLO_LEN];
	uint8_t psk[32], ie[32], re[32];
	struct ref_run ref;
	struct hs_pair p;
	unsigned round;

	(void)state;
	hello_bytes(&ch, p1);
	hello_bytes(&sh, p2);
	for (round = 0; round < 4; round++) {
		psk_fill(psk, (uint8_t)(0x40 + round));
		if (round == 0) {
			unhex(alice_priv, ie, 32);
			unhex(bob_priv, re, 32);
		} else {
			assert_int_equal(crypto_random(ie, 32), 0);
			assert_int_equal(crypto_random(re, 32), 0);
		}
		handshake(&p, psk, ie, re, &ch, &sh);
		ref_nnpsk0(NULL, 0, psk, ie, re, p1, sizeof(p1), p2, sizeof(p2),
			   &ref);
		assert_int_equal(ref.len1, SESSION_HS_LEN);
		assert_int_equal(ref.len2, SESSION_HS_LEN);
		assert_memory_equal(p.init, ref.msg1, SESSION_HS_LEN);
		assert_memory_equal(p.resp, ref.msg2, SESSION_HS_LEN);
		assert_memory_equal(p.c_c2s, ref.c2s, 32);
		assert_memory_equal(p.c_s2c, ref.s2c, 32);
	}
}

/*
 * The HS_INIT body re-derived step by step from crypto.h primitives, as
 * the spec reads, without the reference helpers above (HKDF here is
 * crypto.h's RFC 5869 extract and expand, which for Noise's 2 and 3
 * outputs is the same function).
 */
static void test_hs_init_step_by_step(void **state)
{
	static const char name[] = "Noise_NNpsk0_25519_ChaChaPoly_SHA256";
	static const struct session_hello ch = { SESSION_VERSION,
						 CRYPTO_CHACHA20POLY1305,
						 SESSION_F_HAS_AES, WIRE_C };
	uint8_t h[32], ck[32], k[32], prk[32], out[96], e_priv[32], e_pub[32];
	uint8_t body[SESSION_HS_LEN], psk[32], nonce[12];
	struct session_hs hs;
	struct crypto_aead *a;

	(void)state;
	psk_fill(psk, 9);
	unhex(alice_priv, e_priv, 32);

	/* h = SHA256(protocol name), ck = h */
	assert_int_equal(crypto_sha256(name, strlen(name), NULL, 0, h), 0);
	memcpy(ck, h, 32);
	/* MixHash(prologue), an empty one */
	assert_int_equal(crypto_sha256(h, 32, NULL, 0, h), 0);
	/* psk: MixKeyAndHash(psk): ck, temp_h, temp_k = HKDF(ck, psk, 3) */
	assert_int_equal(crypto_hkdf_extract(ck, 32, psk, 32, prk), 0);
	assert_int_equal(crypto_hkdf_expand(prk, NULL, 0, out, 96), 0);
	memcpy(ck, out, 32);
	assert_int_equal(crypto_sha256(h, 32, out + 32, 32, h), 0);
	memcpy(k, out + 64, 32);
	/* e: MixHash(e.pub), and with a psk MixKey(e.pub) */
	assert_int_equal(crypto_x25519_public(e_priv, e_pub), 0);
	assert_int_equal(crypto_sha256(h, 32, e_pub, 32, h), 0);
	assert_int_equal(crypto_hkdf_extract(ck, 32, e_pub, 32, prk), 0);
	assert_int_equal(crypto_hkdf_expand(prk, NULL, 0, out, 64), 0);
	memcpy(ck, out, 32);
	memcpy(k, out + 32, 32);
	/* EncryptAndHash(hello): ChaChaPoly, n = 0, ad = h */
	memcpy(body, e_pub, 32);
	body[32] = ch.version;
	body[33] = ch.cipher;
	body[34] = ch.flags;
	memcpy(body + 35, ch.wire, 16);
	memset(nonce, 0, sizeof(nonce)); /* 32 zero bits + LE64(0) */
	assert_int_equal(crypto_aead_new(CRYPTO_CHACHA20POLY1305, k, &a), 0);
	assert_int_equal(
		crypto_aead_seal(a, nonce, h, 32, body + 32, 19, body + 51), 0);
	crypto_aead_free(a);

	assert_int_equal(session_hs_init(&hs, psk, NULL, 0), 0);
	assert_int_equal(session_hs_set_ephemeral(&hs, e_priv), 0);
	assert_int_equal(session_hs_write_init(&hs, &ch, out), 0);
	assert_memory_equal(out, body, SESSION_HS_LEN);
	/* and the state's h is MixHash(ciphertext) of ours */
	assert_int_equal(crypto_sha256(h, 32, body + 32, 35, h), 0);
	assert_memory_equal(hs.h, h, 32);
	session_hs_wipe(&hs);
}

/*
 * Regression values of our own implementation, computed once by running
 * session.c (which the tests above check against the Noise specification
 * and the cacophony vector; a separate Python implementation over
 * pyca/cryptography gave the same bytes when they were pinned): client
 * ephemeral = RFC 7748 Alice, server ephemeral = Bob, psk = the key of
 * token "aaaq-eaye-auda-ocaj-bifq-ydio-b4ib-ceqt", an empty prologue,
 * hellos { 2, auto, AES, WIRE_C } and { 2, AES-256-GCM, AES, WIRE_S }.
 * (The split keys are version 1's: Noise derives them from the chaining
 * key, which neither the prologue nor the hellos enter; those are bound
 * through the AEAD's associated data.)
 */
static void test_hs_pinned(void **state)
{
	static const struct session_hello ch = { SESSION_VERSION,
						 SESSION_CIPHER_AUTO,
						 SESSION_F_HAS_AES, WIRE_C };
	static const struct session_hello sh = { SESSION_VERSION,
						 CRYPTO_AES256GCM,
						 SESSION_F_HAS_AES, WIRE_S };
	uint8_t psk[32], ie[32], re[32];
	struct hs_pair p;

	(void)state;
	assert_int_equal(
		session_token_psk("aaaq-eaye-auda-ocaj-bifq-ydio-b4ib-ceqt",
				  psk),
		0);
	unhex(alice_priv, ie, 32);
	unhex(bob_priv, re, 32);
	handshake(&p, psk, ie, re, &ch, &sh);
	assert_hex(p.init, 32, alice_pub);
	assert_hex(p.resp, 32, bob_pub);
	assert_hex(p.init, SESSION_HS_LEN,
		   "8520f0098930a754748b7ddcb43ef75a"
		   "0dbf3a0d26381af4eba4a98eaa9b4e6a"
		   "b8a4da861e39216cd8751804bf1f56f0"
		   "1edc94a9f79e6b730471ab8b19145492"
		   "042537");
	assert_hex(p.resp, SESSION_HS_LEN,
		   "de9edb7d7b7dc1b4d35b61c2ece43537"
		   "3f8343c85b78674dadfc7e146f882b4f"
		   "b9f9b3af83d947d0f0bfac9d350ca60b"
		   "075dc82af99c07699bb720b87fd9c9da"
		   "960a50");
	assert_hex(p.c_c2s, 32,
		   "b432ad0bf486d0bfc0d65f77f831ccd2"
		   "c7e61c0d6eec011e6c6525068092101b");
	assert_hex(p.c_s2c, 32,
		   "18f6bcef566f0f28ea0dd18fcf0866ed"
		   "95b71168b4bf580b3185d54feb2f8621");
}

/* ---- failures ---- */

static const struct session_hello hello_c = { SESSION_VERSION,
					      SESSION_CIPHER_AUTO, 0 };
static const struct session_hello hello_s = { SESSION_VERSION,
					      CRYPTO_CHACHA20POLY1305, 0 };

/* A client's HS_INIT under psk, from a fixed (Alice) ephemeral key. */
static void make_init(const uint8_t psk[32], struct session_hs *c,
		      uint8_t init[SESSION_HS_LEN])
{
	uint8_t priv[32];

	unhex(alice_priv, priv, 32);
	assert_int_equal(session_hs_init(c, psk, NULL, 0), 0);
	assert_int_equal(session_hs_set_ephemeral(c, priv), 0);
	assert_int_equal(session_hs_write_init(c, &hello_c, init), 0);
}

static int server_read(const uint8_t psk[32], const uint8_t *init, size_t len,
		       struct session_hello *peer)
{
	struct session_hs s;
	int r;

	assert_int_equal(session_hs_init(&s, psk, NULL, 0), 0);
	r = session_hs_read_init(&s, init, len, peer);
	session_hs_wipe(&s);
	return r;
}

static void test_hs_wrong_psk(void **state)
{
	uint8_t psk[32], other[32], init[SESSION_HS_LEN];
	struct session_hello peer, untouched;
	struct session_hs c;

	(void)state;
	psk_fill(psk, 10);
	psk_fill(other, 11);
	make_init(psk, &c, init);
	memset(&peer, 0x5a, sizeof(peer));
	untouched = peer;
	assert_int_equal(server_read(other, init, sizeof(init), &peer),
			 -EACCES);
	assert_memory_equal(&peer, &untouched, sizeof(peer));
	/* one bit of the psk is enough */
	memcpy(other, psk, 32);
	other[31] ^= 0x80;
	assert_int_equal(server_read(other, init, sizeof(init), &peer),
			 -EACCES);
	/* a prologue is bound too (linerate's is empty): one the client
	 * did not use fails */
	{
		struct session_hs s;
		uint8_t pre2[8];

		memcpy(pre2, preamble, 8);
		pre2[5] = 2;
		assert_int_equal(session_hs_init(&s, psk, pre2, 8), 0);
		assert_int_equal(session_hs_read_init(&s, init, sizeof(init),
						      &peer),
				 -EACCES);
		session_hs_wipe(&s);
	}
	assert_int_equal(server_read(psk, init, sizeof(init), &peer), 0);
	assert_hello(&peer, &hello_c);
	session_hs_wipe(&c);
}

/* Every single-bit change of HS_INIT, in e, in the ciphertext and in the
 * tag, is refused as a wrong token. */
static void test_hs_tampered_init(void **state)
{
	uint8_t psk[32], init[SESSION_HS_LEN], bad[SESSION_HS_LEN];
	struct session_hello peer;
	struct session_hs c;
	unsigned i, bit;

	(void)state;
	psk_fill(psk, 12);
	make_init(psk, &c, init);
	for (i = 0; i < SESSION_HS_LEN; i++) {
		for (bit = 0; bit < 8; bit++) {
			memcpy(bad, init, sizeof(bad));
			bad[i] ^= (uint8_t)(1u << bit);
			if (server_read(psk, bad, sizeof(bad), &peer) !=
			    -EACCES)
				fail_msg("HS_INIT byte %u bit %u flipped was "
					 "not refused",
					 i, bit);
		}
	}
	/* truncated or extended: a length error */
	assert_int_equal(server_read(psk, init, SESSION_HS_LEN - 1, &peer),
			 -EINVAL);
	session_hs_wipe(&c);
}

/* HS_RESP: every single-bit change is refused, and so is the answer of a
 * server holding another token. */
static void test_hs_tampered_resp(void **state)
{
	uint8_t psk[32], other[32], init[SESSION_HS_LEN], priv[32];
	uint8_t resp[SESSION_HS_LEN], bad[SESSION_HS_LEN];
	struct session_hs c0, c, s;
	struct session_hello peer;
	unsigned i, bit;

	(void)state;
	psk_fill(psk, 13);
	psk_fill(other, 14);
	unhex(bob_priv, priv, 32);

	make_init(psk, &c0, init);
	assert_int_equal(session_hs_init(&s, psk, NULL, 0), 0);
	assert_int_equal(session_hs_set_ephemeral(&s, priv), 0);
	assert_int_equal(session_hs_read_init(&s, init, sizeof(init), &peer),
			 0);
	assert_int_equal(session_hs_write_resp(&s, &hello_s, resp), 0);
	session_hs_wipe(&s);

	for (i = 0; i < SESSION_HS_LEN; i++) {
		for (bit = 0; bit < 8; bit++) {
			memcpy(bad, resp, sizeof(bad));
			bad[i] ^= (uint8_t)(1u << bit);
			c = c0;
			if (session_hs_read_resp(&c, bad, sizeof(bad), &peer) !=
			    -EACCES)
				fail_msg("HS_RESP byte %u bit %u flipped was "
					 "not refused",
					 i, bit);
		}
	}
	c = c0;
	assert_int_equal(session_hs_read_resp(&c, resp, sizeof(resp), &peer),
			 0);
	assert_hello(&peer, &hello_s);

	/* A server with another token: it makes a valid-looking HS_RESP for
	 * the same client ephemeral key (an HS_INIT made under its own psk
	 * by a client with the same e), which our client refuses. */
	{
		struct session_hs c_other;
		uint8_t init_other[SESSION_HS_LEN];

		make_init(other, &c_other, init_other);
		assert_memory_equal(init_other, init, 32);
		assert_int_equal(session_hs_init(&s, other, NULL, 0), 0);
		assert_int_equal(session_hs_read_init(&s, init_other,
						      sizeof(init_other),
						      &peer),
				 0);
		assert_int_equal(session_hs_write_resp(&s, &hello_s, resp), 0);
		session_hs_wipe(&s);
		c = c0;
		assert_int_equal(session_hs_read_resp(&c, resp, sizeof(resp),
						      &peer),
				 -EACCES);
		/* while the client of that token accepts it */
		assert_int_equal(session_hs_read_resp(&c_other, resp,
						      sizeof(resp), &peer),
				 0);
		session_hs_wipe(&c_other);
	}
	session_hs_wipe(&c);
	session_hs_wipe(&c0);
}

/* A replayed HS_INIT passes the tag check again (NNpsk0's first message
 * cannot prevent that), but each server state answers with a fresh
 * ephemeral key: a different HS_RESP and different transport keys, which
 * the replayer, without the client's ephemeral private key, cannot use. */
static void test_hs_replayed_init(void **state)
{
	uint8_t psk[32], init[SESSION_HS_LEN], resp1[SESSION_HS_LEN];
	uint8_t resp2[SESSION_HS_LEN], k1[2][32], k2[2][32], kc[2][32];
	struct session_hs c, s1, s2;
	struct session_hello peer;

	(void)state;
	psk_fill(psk, 15);
	make_init(psk, &c, init);

	assert_int_equal(session_hs_init(&s1, psk, NULL, 0), 0);
	assert_int_equal(session_hs_read_init(&s1, init, sizeof(init), &peer),
			 0);
	assert_int_equal(session_hs_write_resp(&s1, &hello_s, resp1), 0);
	assert_int_equal(session_hs_split(&s1, k1[0], k1[1]), 0);

	assert_int_equal(session_hs_init(&s2, psk, NULL, 0), 0);
	assert_int_equal(session_hs_read_init(&s2, init, sizeof(init), &peer),
			 0);
	assert_int_equal(session_hs_write_resp(&s2, &hello_s, resp2), 0);
	assert_int_equal(session_hs_split(&s2, k2[0], k2[1]), 0);

	assert_memory_not_equal(resp1, resp2, 32);
	assert_memory_not_equal(resp1 + 32, resp2 + 32, SESSION_HS_LEN - 32);
	assert_memory_not_equal(k1[0], k2[0], 32);
	assert_memory_not_equal(k1[1], k2[1], 32);

	/* the real client completes with the first answer */
	assert_int_equal(session_hs_read_resp(&c, resp1, sizeof(resp1), &peer),
			 0);
	assert_int_equal(session_hs_split(&c, kc[0], kc[1]), 0);
	assert_memory_equal(kc, k1, sizeof(kc));
}

static void test_hs_wrong_lengths(void **state)
{
	static const size_t lens[] = { 0, 1, 32, 34, 35, 50, 52, 64, 512 };
	uint8_t psk[32], init[SESSION_HS_LEN], buf[600];
	struct session_hs c, cc, s;
	struct session_hello peer;
	size_t i;

	(void)state;
	psk_fill(psk, 16);
	make_init(psk, &c, init);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, init, sizeof(init));
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		assert_int_equal(session_hs_init(&s, psk, NULL, 0), 0);
		assert_int_equal(session_hs_read_init(&s, buf, lens[i], &peer),
				 -EINVAL);
		session_hs_wipe(&s);
		cc = c;
		assert_int_equal(session_hs_read_resp(&cc, buf, lens[i], &peer),
				 -EINVAL);
	}
	session_hs_wipe(&c);
	session_hs_wipe(&cc);
}

/*
 * A server ephemeral key of small order makes the DH output all zero: the
 * answer is refused as an attack (-EACCES), whatever the rest says. The
 * points are the well-known low-order ones and their non-canonical forms.
 */
static void test_hs_low_order_resp(void **state)
{
	static const char *const points[] = {
		"00000000000000000000000000000000"
		"00000000000000000000000000000000",
		"01000000000000000000000000000000"
		"00000000000000000000000000000000",
		"e0eb7a7c3b41b8ae1656e3faf19fc46a"
		"da098deb9c32b1fd866205165f49b800",
		"5f9c95bca3508c24b1d0b1559c83ef5b"
		"04445cc4581c8e86d8224eddd09f1157",
		"ecffffffffffffffffffffffffffffff"
		"ffffffffffffffffffffffffffffff7f",
		"edffffffffffffffffffffffffffffff"
		"ffffffffffffffffffffffffffffff7f",
		"eeffffffffffffffffffffffffffffff"
		"ffffffffffffffffffffffffffffff7f",
		"00000000000000000000000000000000"
		"00000000000000000000000000000080",
		"01000000000000000000000000000000"
		"00000000000000000000000000000080",
	};
	uint8_t psk[32], init[SESSION_HS_LEN], resp[SESSION_HS_LEN];
	struct session_hs c0, c;
	struct session_hello peer;
	size_t i;

	(void)state;
	psk_fill(psk, 17);
	make_init(psk, &c0, init);
	for (i = 0; i < ARRAY_SIZE(points); i++) {
		memset(resp, 0, sizeof(resp));
		unhex(points[i], resp, 32);
		c = c0;
		if (session_hs_read_resp(&c, resp, sizeof(resp), &peer) !=
		    -EACCES)
			fail_msg("low-order point %s accepted", points[i]);
	}
	session_hs_wipe(&c0);
	session_hs_wipe(&c);
}

/*
 * Someone holding the token can send an HS_INIT with an all-zero e: it
 * passes the tag check (the first message involves no DH), and the server
 * then refuses to answer it: write_resp fails instead of deriving keys
 * from a zero secret.
 */
static void test_hs_low_order_init(void **state)
{
	uint8_t psk[32], init[SESSION_HS_LEN], resp[SESSION_HS_LEN];
	const uint8_t hello[SESSION_HELLO_LEN] = { SESSION_VERSION,
						   SESSION_CIPHER_AUTO, 0 };
	struct session_hello peer;
	struct session_hs s;
	struct ref r;

	(void)state;
	psk_fill(psk, 18);
	ref_start(&r, NULL, 0, psk);
	memset(init, 0, 32);
	ref_mix_hash(&r, init, 32);
	ref_mix_key(&r, init, 32);
	ref_encrypt_and_hash(&r, hello, sizeof(hello), init + 32);

	assert_int_equal(session_hs_init(&s, psk, NULL, 0), 0);
	assert_int_equal(session_hs_read_init(&s, init, sizeof(init), &peer),
			 0);
	assert_int_not_equal(session_hs_write_resp(&s, &hello_s, resp), 0);
	session_hs_wipe(&s);
}

/* A hello of another version (1 was the first, without a wire) is
 * malformed (-EINVAL), on both sides. */
static void test_hs_bad_version(void **state)
{
	static const struct session_hello v1 = { 1, SESSION_CIPHER_AUTO, 0 };
	static const struct session_hello v0 = { 0, CRYPTO_AES256GCM, 0 };
	uint8_t psk[32], init[SESSION_HS_LEN], resp[SESSION_HS_LEN];
	struct session_hs c, s;
	struct session_hello peer;

	(void)state;
	psk_fill(psk, 19);
	assert_int_equal(session_hs_init(&c, psk, NULL, 0), 0);
	assert_int_equal(session_hs_write_init(&c, &v1, init), 0);
	assert_int_equal(server_read(psk, init, sizeof(init), &peer), -EINVAL);
	session_hs_wipe(&c);

	assert_int_equal(session_hs_init(&c, psk, NULL, 0), 0);
	assert_int_equal(session_hs_write_init(&c, &hello_c, init), 0);
	assert_int_equal(session_hs_init(&s, psk, NULL, 0), 0);
	assert_int_equal(session_hs_read_init(&s, init, sizeof(init), &peer),
			 0);
	assert_int_equal(session_hs_write_resp(&s, &v0, resp), 0);
	assert_int_equal(session_hs_read_resp(&c, resp, sizeof(resp), &peer),
			 -EINVAL);
	session_hs_wipe(&c);
	session_hs_wipe(&s);
}

/*
 * The wire a hello carries: it arrives as sent, and every one-bit change
 * of the preamble or header received (a relay lowering vmax, say) no
 * longer matches it, while the hello itself still verifies.
 */
static void test_hs_wire(void **state)
{
	static const struct session_hello ch = { SESSION_VERSION,
						 SESSION_CIPHER_AUTO, 0,
						 WIRE_C };
	uint8_t psk[32], init[SESSION_HS_LEN], got[SESSION_WIRE_LEN];
	struct session_hello peer;
	struct session_hs c;
	unsigned i, bit;

	(void)state;
	psk_fill(psk, 21);
	assert_int_equal(session_hs_init(&c, psk, NULL, 0), 0);
	assert_int_equal(session_hs_write_init(&c, &ch, init), 0);
	assert_int_equal(server_read(psk, init, sizeof(init), &peer), 0);
	assert_hello(&peer, &ch);
	memcpy(got, ch.wire, sizeof(got));
	assert_true(session_hello_wire_ok(&peer, got, got + 8));
	for (i = 0; i < SESSION_WIRE_LEN; i++)
		for (bit = 0; bit < 8; bit++) {
			got[i] ^= (uint8_t)(1u << bit);
			assert_false(
				session_hello_wire_ok(&peer, got, got + 8));
			got[i] ^= (uint8_t)(1u << bit);
		}
	/* the downgrade of the issue: vmax lowered from 2 to 1 */
	got[5] = 1;
	assert_false(session_hello_wire_ok(&peer, got, got + 8));
	session_hs_wipe(&c);
}

/* The handshake's two messages are not interchangeable: an HS_INIT echoed
 * back as HS_RESP is refused. */
static void test_hs_reflected_init(void **state)
{
	uint8_t psk[32], init[SESSION_HS_LEN];
	struct session_hello peer;
	struct session_hs c;

	(void)state;
	psk_fill(psk, 20);
	make_init(psk, &c, init);
	assert_int_equal(session_hs_read_resp(&c, init, sizeof(init), &peer),
			 -EACCES);
	session_hs_wipe(&c);
}

static void test_pick_cipher(void **state)
{
	static const struct {
		uint8_t wish;
		bool c_aes, s_aes;
		enum crypto_cipher want;
	} v[] = {
		{ SESSION_CIPHER_AUTO, true, true, CRYPTO_AES256GCM },
		{ SESSION_CIPHER_AUTO, true, false, CRYPTO_CHACHA20POLY1305 },
		{ SESSION_CIPHER_AUTO, false, true, CRYPTO_CHACHA20POLY1305 },
		{ SESSION_CIPHER_AUTO, false, false, CRYPTO_CHACHA20POLY1305 },
		{ CRYPTO_AES256GCM, false, false, CRYPTO_AES256GCM },
		{ CRYPTO_AES256GCM, true, true, CRYPTO_AES256GCM },
		{ CRYPTO_CHACHA20POLY1305, true, true,
		  CRYPTO_CHACHA20POLY1305 },
		{ CRYPTO_CHACHA20POLY1305, false, false,
		  CRYPTO_CHACHA20POLY1305 },
		{ CRYPTO_NONE, true, true, CRYPTO_NONE },
		{ CRYPTO_NONE, false, false, CRYPTO_NONE },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(v); i++)
		assert_int_equal(session_pick_cipher(v[i].wish, v[i].c_aes,
						     v[i].s_aes),
				 v[i].want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_format),
		cmocka_unit_test(test_token_new_differs),
		cmocka_unit_test(test_token_psk_spellings),
		cmocka_unit_test(test_token_psk_known),
		cmocka_unit_test(test_token_psk_rejects),
		cmocka_unit_test(test_token_psk_distinct),
		cmocka_unit_test(test_reference_matches_cacophony),
		cmocka_unit_test(test_hs_round_trip),
		cmocka_unit_test(test_hs_fresh_keys),
		cmocka_unit_test(test_hs_set_ephemeral),
		cmocka_unit_test(test_hs_matches_reference),
		cmocka_unit_test(test_hs_init_step_by_step),
		cmocka_unit_test(test_hs_pinned),
		cmocka_unit_test(test_hs_wrong_psk),
		cmocka_unit_test(test_hs_tampered_init),
		cmocka_unit_test(test_hs_tampered_resp),
		cmocka_unit_test(test_hs_replayed_init),
		cmocka_unit_test(test_hs_wrong_lengths),
		cmocka_unit_test(test_hs_low_order_resp),
		cmocka_unit_test(test_hs_low_order_init),
		cmocka_unit_test(test_hs_bad_version),
		cmocka_unit_test(test_hs_wire),
		cmocka_unit_test(test_hs_reflected_init),
		cmocka_unit_test(test_pick_cipher),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
