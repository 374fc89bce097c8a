// SPDX-License-Identifier: MIT
/*
 * Unit tests of crypto.[ch]: known answers from the RFCs and the GCM spec,
 * taken only through the module's own functions, and the behaviour around
 * them (tampering, in-place round trips, rekeying, bad peer keys, names).
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

static const enum crypto_cipher both[] = { CRYPTO_AES256GCM,
					   CRYPTO_CHACHA20POLY1305 };

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	fail_msg("bad hex digit '%c'", c);
	return -1;
}

/* Decode hex into a new buffer (at least one byte) and its length. */
static uint8_t *unhex(const char *hex, size_t *len)
{
	size_t n = strlen(hex), i;
	uint8_t *p;

	assert_int_equal(n % 2, 0);
	p = malloc(n / 2 + 1);
	assert_non_null(p);
	for (i = 0; i < n / 2; i++)
		p[i] = (uint8_t)(hexval(hex[2 * i]) << 4 |
				 hexval(hex[2 * i + 1]));
	*len = n / 2;
	return p;
}

/* Decode hex of exactly len bytes into out. */
static void unhex_to(const char *hex, uint8_t *out, size_t len)
{
	size_t n;
	uint8_t *p = unhex(hex, &n);

	assert_int_equal(n, len);
	memcpy(out, p, len);
	free(p);
}

static void assert_hex_equal(const uint8_t *got, size_t len, const char *hex)
{
	size_t n;
	uint8_t *want = unhex(hex, &n);

	assert_int_equal(len, n);
	assert_memory_equal(got, want, n);
	free(want);
}

struct aead_vector {
	const char *name;
	enum crypto_cipher cipher;
	const char *key, *nonce, *aad, *pt, *ct, *tag;
};

/*
 * Seal the vector's plaintext in place and compare, then open the result
 * in place with a second context and compare again.
 */
static void check_aead_vector(const struct aead_vector *v)
{
	uint8_t key[CRYPTO_KEY_LEN], nonce[CRYPTO_NONCE_LEN];
	uint8_t tag[CRYPTO_TAG_LEN];
	struct crypto_aead *enc = NULL, *dec = NULL;
	size_t aadlen, ptlen, ctlen;
	uint8_t *aad, *pt, *buf;

	print_message("# %s\n", v->name);
	unhex_to(v->key, key, sizeof(key));
	unhex_to(v->nonce, nonce, sizeof(nonce));
	aad = unhex(v->aad, &aadlen);
	pt = unhex(v->pt, &ptlen);
	buf = unhex(v->pt, &ctlen);

	assert_int_equal(crypto_aead_new(v->cipher, key, &enc), 0);
	assert_int_equal(crypto_aead_new(v->cipher, key, &dec), 0);
	assert_int_equal(
		crypto_aead_seal(enc, nonce, aad, aadlen, buf, ptlen, tag), 0);
	assert_hex_equal(buf, ptlen, v->ct);
	assert_hex_equal(tag, sizeof(tag), v->tag);
	assert_int_equal(
		crypto_aead_open(dec, nonce, aad, aadlen, buf, ptlen, tag), 0);
	assert_memory_equal(buf, pt, ptlen);

	crypto_aead_free(enc);
	crypto_aead_free(dec);
	free(aad);
	free(pt);
	free(buf);
}

/* RFC 8439 section 2.8.2: the AEAD construction's example. */
static void test_chacha_rfc8439_2_8_2(void **state)
{
	static const char sunscreen[] =
		"Ladies and Gentlemen of the class of '99: If I could offer "
		"you only one tip for the future, sunscreen would be it.";
	char pthex[2 * sizeof(sunscreen)];
	struct aead_vector v = {
		.name = "RFC 8439 2.8.2",
		.cipher = CRYPTO_CHACHA20POLY1305,
		.key = "808182838485868788898a8b8c8d8e8f"
		       "909192939495969798999a9b9c9d9e9f",
		.nonce = "070000004041424344454647",
		.aad = "50515253c0c1c2c3c4c5c6c7",
		.ct = "d31a8d34648e60db7b86afbc53ef7ec2"
		      "a4aded51296e08fea9e2b5a736ee62d6"
		      "3dbea45e8ca9671282fafb69da92728b"
		      "1a71de0a9e060b2905d6a5b67ecd3b36"
		      "92ddbd7f2d778b8c9803aee328091b58"
		      "fab324e4fad675945585808b4831d7bc"
		      "3ff4def08e4b7a9de576d26586cec64b"
		      "6116",
		.tag = "1ae10b594f09e26a7e902ecbd0600691",
	};
	size_t i;

	(void)state;
	assert_int_equal(strlen(sunscreen), 114);
	for (i = 0; i < strlen(sunscreen); i++)
		snprintf(pthex + 2 * i, 3, "%02x", (uint8_t)sunscreen[i]);
	v.pt = pthex;
	check_aead_vector(&v);
}

/* RFC 8439 appendix A.5: decrypting a given ciphertext and tag. */
static void test_chacha_rfc8439_a5(void **state)
{
	static const char draft[] =
		"Internet-Drafts are draft documents valid for a maximum of "
		"six months and may be updated, replaced, or obsoleted by "
		"other documents at any time. It is inappropriate to use "
		"Internet-Drafts as reference material or to cite them other "
		"than as /\xe2\x80\x9cwork in progress./\xe2\x80\x9d";
	static const char cthex[] = "64a0861575861af460f062c79be643bd"
				    "5e805cfd345cf389f108670ac76c8cb2"
				    "4c6cfc18755d43eea09ee94e382d26b0"
				    "bdb7b73c321b0100d4f03b7f355894cf"
				    "332f830e710b97ce98c8a84abd0b9481"
				    "14ad176e008d33bd60f982b1ff37c855"
				    "9797a06ef4f0ef61c186324e2b350638"
				    "3606907b6a7c02b0f9f6157b53c867e4"
				    "b9166c767b804d46a59b5216cde7a4e9"
				    "9040c5a40433225ee282a1b0a06c523e"
				    "af4534d7f83fa1155b0047718cbc546a"
				    "0d072b04b3564eea1b422273f548271a"
				    "0bb2316053fa76991955ebd63159434e"
				    "cebb4e466dae5a1073a6727627097a10"
				    "49e617d91d361094fa68f0ff77987130"
				    "305beaba2eda04df997b714d6c6f2c29"
				    "a6ad5cb4022b02709b";
	uint8_t key[CRYPTO_KEY_LEN], nonce[CRYPTO_NONCE_LEN];
	uint8_t aad[12], tag[CRYPTO_TAG_LEN], tag2[CRYPTO_TAG_LEN];
	struct crypto_aead *a = NULL;
	uint8_t *buf;
	size_t len;

	(void)state;
	unhex_to("1c9240a5eb55d38af333888604f6b5f0"
		 "473917c1402b80099dca5cbc207075c0",
		 key, sizeof(key));
	unhex_to("000000000102030405060708", nonce, sizeof(nonce));
	unhex_to("f33388860000000000004e91", aad, sizeof(aad));
	unhex_to("eead9d67890cbb22392336fea1851f38", tag, sizeof(tag));
	buf = unhex(cthex, &len);
	assert_int_equal(len, 265);
	assert_int_equal(strlen(draft), 265);

	assert_int_equal(crypto_aead_new(CRYPTO_CHACHA20POLY1305, key, &a), 0);
	assert_int_equal(
		crypto_aead_open(a, nonce, aad, sizeof(aad), buf, len, tag), 0);
	assert_memory_equal(buf, draft, len);
	/* and the same context seals it back */
	assert_int_equal(crypto_aead_seal(a, nonce, aad, sizeof(aad), buf, len,
					  tag2),
			 0);
	assert_hex_equal(buf, len, cthex);
	assert_memory_equal(tag2, tag, sizeof(tag));
	crypto_aead_free(a);
	free(buf);
}

#define GCM_K0                             \
	"00000000000000000000000000000000" \
	"00000000000000000000000000000000"
#define GCM_K15                            \
	"feffe9928665731c6d6a8f9467308308" \
	"feffe9928665731c6d6a8f9467308308"
#define GCM_P15                            \
	"d9313225f88406e5a55909c5aff5269a" \
	"86a7a9531534f7da2e4c303d8a318a72" \
	"1c3c0c95956809532fcf0e2449a6b525" \
	"b16aedf5aa0de657ba637b39"
#define GCM_C15                            \
	"522dc1f099567d07f47f37a32a84427d" \
	"643a8cdcbfe5c0c97598a2bd2555d1aa" \
	"8cb08e48590dbb3da7b08b1056828838" \
	"c5f61e6393ba7a0abcc9f662"

/* McGrew and Viega, "The Galois/Counter Mode of Operation", cases 13-16. */
static void test_gcm_spec_aes256(void **state)
{
	static const struct aead_vector v[] = {
		{
			.name = "GCM spec test case 13",
			.cipher = CRYPTO_AES256GCM,
			.key = GCM_K0,
			.nonce = "000000000000000000000000",
			.aad = "",
			.pt = "",
			.ct = "",
			.tag = "530f8afbc74536b9a963b4f1c4cb738b",
		},
		{
			.name = "GCM spec test case 14",
			.cipher = CRYPTO_AES256GCM,
			.key = GCM_K0,
			.nonce = "000000000000000000000000",
			.aad = "",
			.pt = "00000000000000000000000000000000",
			.ct = "cea7403d4d606b6e074ec5d3baf39d18",
			.tag = "d0d1c8a799996bf0265b98b5d48ab919",
		},
		{
			.name = "GCM spec test case 15",
			.cipher = CRYPTO_AES256GCM,
			.key = GCM_K15,
			.nonce = "cafebabefacedbaddecaf888",
			.aad = "",
			.pt = GCM_P15 "1aafd255",
			.ct = GCM_C15 "898015ad",
			.tag = "b094dac5d93471bdec1a502270e3cc6c",
		},
		{
			.name = "GCM spec test case 16",
			.cipher = CRYPTO_AES256GCM,
			.key = GCM_K15,
			.nonce = "cafebabefacedbaddecaf888",
			.aad = "feedfacedeadbeeffeedfacedeadbeef"
			       "abaddad2",
			.pt = GCM_P15,
			.ct = GCM_C15,
			.tag = "76fc6ece0f4e1768cddf8853bb2d551b",
		},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		check_aead_vector(&v[i]);
}

/*
 * One context sealing and opening in turn, over several messages, gives
 * what fresh contexts give: no state leaks from one call to the next.
 */
static void test_aead_context_reuse(void **state)
{
	uint8_t key[CRYPTO_KEY_LEN], nonce[CRYPTO_NONCE_LEN];
	uint8_t aad[20], tag[CRYPTO_TAG_LEN], junk[100];
	uint8_t other[CRYPTO_NONCE_LEN] = { 1, 2, 3 };
	struct crypto_aead *a = NULL;
	uint8_t *buf;
	size_t len, i;

	(void)state;
	unhex_to(GCM_K15, key, sizeof(key));
	unhex_to("cafebabefacedbaddecaf888", nonce, sizeof(nonce));
	unhex_to("feedfacedeadbeeffeedfacedeadbeefabaddad2", aad, sizeof(aad));
	assert_int_equal(crypto_aead_new(CRYPTO_AES256GCM, key, &a), 0);
	for (i = 0; i < 3; i++) {
		/* an unrelated message in each direction first */
		memset(junk, (int)i, sizeof(junk));
		assert_int_equal(crypto_aead_seal(a, other, junk + 50, 7, junk,
						  33, tag),
				 0);
		assert_int_equal(crypto_aead_open(a, other, junk + 50, 7, junk,
						  33, tag),
				 0);
		assert_int_equal(crypto_aead_open(a, nonce, junk + 50, 7, junk,
						  33, tag),
				 -EBADMSG);

		buf = unhex(GCM_P15, &len);
		assert_int_equal(crypto_aead_seal(a, nonce, aad, sizeof(aad),
						  buf, len, tag),
				 0);
		assert_hex_equal(buf, len, GCM_C15);
		assert_hex_equal(tag, sizeof(tag),
				 "76fc6ece0f4e1768cddf8853bb2d551b");
		assert_int_equal(crypto_aead_open(a, nonce, aad, sizeof(aad),
						  buf, len, tag),
				 0);
		assert_hex_equal(buf, len, GCM_P15);
		free(buf);
	}
	crypto_aead_free(a);
}

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 131 + (i >> 9));
}

/* Each single-bit change to tag, ciphertext, AAD or nonce is caught. */
static void test_aead_tamper(void **state)
{
	uint8_t key[CRYPTO_KEY_LEN], nonce[CRYPTO_NONCE_LEN];
	uint8_t aad[13], tag[CRYPTO_TAG_LEN], pt[1000], buf[1000];
	struct crypto_aead *a;
	size_t c;

	(void)state;
	fill(key, sizeof(key), 1);
	fill(nonce, sizeof(nonce), 2);
	fill(aad, sizeof(aad), 3);
	fill(pt, sizeof(pt), 4);
	for (c = 0; c < 2; c++) {
		a = NULL;
		assert_int_equal(crypto_aead_new(both[c], key, &a), 0);
		memcpy(buf, pt, sizeof(buf));
		assert_int_equal(crypto_aead_seal(a, nonce, aad, sizeof(aad),
						  buf, sizeof(buf), tag),
				 0);
		assert_memory_not_equal(buf, pt, sizeof(buf));

#define OPEN_FAILS(what, i)                                                   \
	do {                                                                  \
		uint8_t b[sizeof(buf)];                                       \
		what[i] ^= 0x01;                                              \
		memcpy(b, buf, sizeof(b));                                    \
		assert_int_equal(crypto_aead_open(a, nonce, aad, sizeof(aad), \
						  b, sizeof(b), tag),         \
				 -EBADMSG);                                   \
		what[i] ^= 0x01;                                              \
	} while (0)
		OPEN_FAILS(tag, 0);
		OPEN_FAILS(tag, CRYPTO_TAG_LEN - 1);
		OPEN_FAILS(buf, 0);
		OPEN_FAILS(buf, sizeof(buf) - 1);
		OPEN_FAILS(aad, 0);
		OPEN_FAILS(aad, sizeof(aad) - 1);
		OPEN_FAILS(nonce, 0);
		OPEN_FAILS(nonce, CRYPTO_NONCE_LEN - 1);
#undef OPEN_FAILS
		/* a shorter AAD or ciphertext is caught too */
		{
			uint8_t b[sizeof(buf)];

			memcpy(b, buf, sizeof(b));
			assert_int_equal(crypto_aead_open(a, nonce, aad,
							  sizeof(aad) - 1, b,
							  sizeof(b), tag),
					 -EBADMSG);
			memcpy(b, buf, sizeof(b));
			assert_int_equal(crypto_aead_open(a, nonce, aad,
							  sizeof(aad), b,
							  sizeof(b) - 1, tag),
					 -EBADMSG);
		}
		/* the failures left the context usable */
		assert_int_equal(crypto_aead_open(a, nonce, aad, sizeof(aad),
						  buf, sizeof(buf), tag),
				 0);
		assert_memory_equal(buf, pt, sizeof(buf));
		crypto_aead_free(a);
	}
}

/* 1 MiB in place, and 0 bytes with and without AAD, for both ciphers. */
static void test_aead_roundtrip(void **state)
{
	static const size_t len = 1 << 20;
	uint8_t key[CRYPTO_KEY_LEN], nonce[CRYPTO_NONCE_LEN];
	uint8_t aad[32], tag[CRYPTO_TAG_LEN], tag0[CRYPTO_TAG_LEN];
	struct crypto_aead *a;
	uint8_t *pt, *buf;
	size_t c;

	(void)state;
	pt = malloc(len);
	buf = malloc(len);
	assert_non_null(pt);
	assert_non_null(buf);
	assert_int_equal(crypto_random(pt, len), 0);
	assert_int_equal(crypto_random(key, sizeof(key)), 0);
	assert_int_equal(crypto_random(aad, sizeof(aad)), 0);
	memset(nonce, 0, sizeof(nonce));
	for (c = 0; c < 2; c++) {
		a = NULL;
		assert_int_equal(crypto_aead_new(both[c], key, &a), 0);
		memcpy(buf, pt, len);
		assert_int_equal(crypto_aead_seal(a, nonce, aad, sizeof(aad),
						  buf, len, tag),
				 0);
		assert_memory_not_equal(buf, pt, 4096);
		assert_memory_not_equal(buf + len - 4096, pt + len - 4096,
					4096);
		assert_int_equal(crypto_aead_open(a, nonce, aad, sizeof(aad),
						  buf, len, tag),
				 0);
		assert_memory_equal(buf, pt, len);

		/* nothing to encrypt: the tag covers the AAD alone */
		assert_int_equal(crypto_aead_seal(a, nonce, aad, sizeof(aad),
						  NULL, 0, tag),
				 0);
		assert_int_equal(crypto_aead_open(a, nonce, aad, sizeof(aad),
						  NULL, 0, tag),
				 0);
		aad[5] ^= 0x80;
		assert_int_equal(crypto_aead_open(a, nonce, aad, sizeof(aad),
						  NULL, 0, tag),
				 -EBADMSG);
		aad[5] ^= 0x80;
		/* nothing at all */
		assert_int_equal(
			crypto_aead_seal(a, nonce, NULL, 0, buf, 0, tag0), 0);
		assert_memory_not_equal(tag0, tag, sizeof(tag));
		assert_int_equal(
			crypto_aead_open(a, nonce, NULL, 0, buf, 0, tag0), 0);
		tag0[3] ^= 1;
		assert_int_equal(crypto_aead_open(a, nonce, NULL, 0, buf, 0,
						  tag0),
				 -EBADMSG);
		crypto_aead_free(a);
	}
	free(pt);
	free(buf);
}

static void test_aead_rekey(void **state)
{
	uint8_t k1[CRYPTO_KEY_LEN], k2[CRYPTO_KEY_LEN];
	uint8_t nonce[CRYPTO_NONCE_LEN] = { 0 };
	uint8_t t1[CRYPTO_TAG_LEN], t2[CRYPTO_TAG_LEN], t3[CRYPTO_TAG_LEN];
	uint8_t pt[256], b1[256], b2[256], b3[256];
	struct crypto_aead *a, *fresh;
	size_t c;

	(void)state;
	fill(k1, sizeof(k1), 10);
	fill(k2, sizeof(k2), 11);
	fill(pt, sizeof(pt), 12);
	for (c = 0; c < 2; c++) {
		a = fresh = NULL;
		assert_int_equal(crypto_aead_new(both[c], k1, &a), 0);
		assert_int_equal(crypto_aead_new(both[c], k2, &fresh), 0);
		memcpy(b1, pt, sizeof(pt));
		memcpy(b2, pt, sizeof(pt));
		memcpy(b3, pt, sizeof(pt));
		assert_int_equal(crypto_aead_seal(a, nonce, NULL, 0, b1,
						  sizeof(b1), t1),
				 0);
		assert_int_equal(crypto_aead_rekey(a, k2), 0);
		assert_int_equal(crypto_aead_seal(a, nonce, NULL, 0, b2,
						  sizeof(b2), t2),
				 0);
		assert_memory_not_equal(b1, b2, sizeof(b1));
		assert_memory_not_equal(t1, t2, sizeof(t1));
		/* the new key, and only it, is in use in both directions */
		assert_int_equal(crypto_aead_seal(fresh, nonce, NULL, 0, b3,
						  sizeof(b3), t3),
				 0);
		assert_memory_equal(b2, b3, sizeof(b2));
		assert_memory_equal(t2, t3, sizeof(t2));
		assert_int_equal(crypto_aead_open(a, nonce, NULL, 0, b1,
						  sizeof(b1), t1),
				 -EBADMSG);
		assert_int_equal(crypto_aead_open(a, nonce, NULL, 0, b2,
						  sizeof(b2), t2),
				 0);
		assert_memory_equal(b2, pt, sizeof(pt));
		crypto_aead_free(a);
		crypto_aead_free(fresh);
	}
}

static void test_aead_bad_args(void **state)
{
	static char sentinel;
	uint8_t key[CRYPTO_KEY_LEN] = { 0 };
	struct crypto_aead *a = (struct crypto_aead *)&sentinel;

	(void)state;
	assert_int_equal(crypto_aead_new(CRYPTO_NONE, key, &a), -EINVAL);
	assert_int_equal(crypto_aead_new((enum crypto_cipher)7, key, &a),
			 -EINVAL);
	assert_ptr_equal(a, (struct crypto_aead *)&sentinel);
	crypto_aead_free(NULL);
}

static void test_x25519_rfc7748_5_2(void **state)
{
	static const char *const v[][3] = {
		{ "a546e36bf0527c9d3b16154b82465edd"
		  "62144c0ac1fc5a18506a2244ba449ac4",
		  "e6db6867583030db3594c1a424b15f7c"
		  "726624ec26b3353b10a903a6d0ab1c4c",
		  "c3da55379de9c6908e94ea4df28d084f"
		  "32eccf03491c71f754b4075577a28552" },
		/* the u-coordinate's top bit is set and must be ignored */
		{ "4b66e9d4d1b4673c5ad22691957d6af5"
		  "c11b6421e0ea01d42ca4169e7918ba0d",
		  "e5210f12786811d3f4b7959d0538ae2c"
		  "31dbe7106fc03c3efc4cd549c715a493",
		  "95cbde9476e8907d7aade45cb4b873f8"
		  "8b595a68799fa152e6f8f7647aac7957" },
	};
	uint8_t k[CRYPTO_X25519_LEN], u[CRYPTO_X25519_LEN];
	uint8_t out[CRYPTO_X25519_LEN];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		unhex_to(v[i][0], k, sizeof(k));
		unhex_to(v[i][1], u, sizeof(u));
		assert_int_equal(crypto_x25519(k, u, out), 0);
		assert_hex_equal(out, sizeof(out), v[i][2]);
	}
}

/* RFC 7748 section 5.2, iterated: k = X25519(k, u), u = old k, from 9. */
static void test_x25519_rfc7748_iterated(void **state)
{
	uint8_t k[CRYPTO_X25519_LEN] = { 9 }, u[CRYPTO_X25519_LEN] = { 9 };
	uint8_t r[CRYPTO_X25519_LEN];
	int i;

	(void)state;
	for (i = 1; i <= 1000; i++) {
		assert_int_equal(crypto_x25519(k, u, r), 0);
		memcpy(u, k, sizeof(u));
		memcpy(k, r, sizeof(k));
		if (i == 1)
			assert_hex_equal(k, sizeof(k),
					 "422c8e7a6227d7bca1350b3e2bb7279f"
					 "7897b87bb6854b783c60e80311ae3079");
	}
	assert_hex_equal(k, sizeof(k),
			 "684cf59ba83309552800ef566f2f4d3c"
			 "1c3887c49360e3875f2eb94d99532c51");
}

/* RFC 7748 section 6.1: Alice and Bob. */
static void test_x25519_rfc7748_6_1(void **state)
{
	static const char shared_hex[] = "4a5d9d5ba4ce2de1728e3bf480350f25"
					 "e07e21c947d19e3376f09b3c1e161742";
	uint8_t a_priv[CRYPTO_X25519_LEN], b_priv[CRYPTO_X25519_LEN];
	uint8_t a_pub[CRYPTO_X25519_LEN], b_pub[CRYPTO_X25519_LEN];
	uint8_t s1[CRYPTO_X25519_LEN], s2[CRYPTO_X25519_LEN];

	(void)state;
	unhex_to("77076d0a7318a57d3c16c17251b26645"
		 "df4c2f87ebc0992ab177fba51db92c2a",
		 a_priv, sizeof(a_priv));
	unhex_to("5dab087e624a8a4b79e17f8b83800ee6"
		 "6f3bb1292618b6fd1c2f8b27ff88e0eb",
		 b_priv, sizeof(b_priv));
	assert_int_equal(crypto_x25519_public(a_priv, a_pub), 0);
	assert_hex_equal(a_pub, sizeof(a_pub),
			 "8520f0098930a754748b7ddcb43ef75a"
			 "0dbf3a0d26381af4eba4a98eaa9b4e6a");
	assert_int_equal(crypto_x25519_public(b_priv, b_pub), 0);
	assert_hex_equal(b_pub, sizeof(b_pub),
			 "de9edb7d7b7dc1b4d35b61c2ece43537"
			 "3f8343c85b78674dadfc7e146f882b4f");
	assert_int_equal(crypto_x25519(a_priv, b_pub, s1), 0);
	assert_int_equal(crypto_x25519(b_priv, a_pub, s2), 0);
	assert_hex_equal(s1, sizeof(s1), shared_hex);
	assert_hex_equal(s2, sizeof(s2), shared_hex);
}

static void test_x25519_keypair(void **state)
{
	uint8_t a_priv[CRYPTO_X25519_LEN], a_pub[CRYPTO_X25519_LEN];
	uint8_t b_priv[CRYPTO_X25519_LEN], b_pub[CRYPTO_X25519_LEN];
	uint8_t pub[CRYPTO_X25519_LEN];
	uint8_t s1[CRYPTO_X25519_LEN], s2[CRYPTO_X25519_LEN];

	(void)state;
	assert_int_equal(crypto_x25519_keypair(a_priv, a_pub), 0);
	assert_int_equal(crypto_x25519_keypair(b_priv, b_pub), 0);
	assert_memory_not_equal(a_priv, b_priv, sizeof(a_priv));
	assert_int_equal(crypto_x25519_public(a_priv, pub), 0);
	assert_memory_equal(pub, a_pub, sizeof(pub));
	assert_int_equal(crypto_x25519(a_priv, b_pub, s1), 0);
	assert_int_equal(crypto_x25519(b_priv, a_pub, s2), 0);
	assert_memory_equal(s1, s2, sizeof(s1));
}

/* Points of small order give an all-zero secret, which is refused. */
static void test_x25519_low_order(void **state)
{
	uint8_t priv[CRYPTO_X25519_LEN], peer[CRYPTO_X25519_LEN] = { 0 };
	uint8_t out[CRYPTO_X25519_LEN];

	(void)state;
	fill(priv, sizeof(priv), 99);
	memset(out, 0xa5, sizeof(out));
	assert_int_equal(crypto_x25519(priv, peer, out), -EINVAL);
	peer[0] = 1; /* u = 1, order 4 */
	assert_int_equal(crypto_x25519(priv, peer, out), -EINVAL);
	/* u = p - 1 = 2^255 - 20, order 2 */
	memset(peer, 0xff, sizeof(peer));
	peer[0] = 0xec;
	peer[31] = 0x7f;
	assert_int_equal(crypto_x25519(priv, peer, out), -EINVAL);
	/* out untouched on failure */
	for (size_t i = 0; i < sizeof(out); i++)
		assert_int_equal(out[i], 0xa5);
}

struct hkdf_vector {
	const char *ikm, *salt, *info, *prk, *okm;
};

/* RFC 5869 appendix A, test cases 1-3 (SHA-256). */
static void test_hkdf_rfc5869(void **state)
{
	static const struct hkdf_vector v[] = {
		{
			.ikm = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b",
			.salt = "000102030405060708090a0b0c",
			.info = "f0f1f2f3f4f5f6f7f8f9",
			.prk = "077709362c2e32df0ddc3f0dc47bba63"
			       "90b6c73bb50f9c3122ec844ad7c2b3e5",
			.okm = "3cb25f25faacd57a90434f64d0362f2a"
			       "2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
			       "34007208d5b887185865",
		},
		{
			.ikm = "000102030405060708090a0b0c0d0e0f"
			       "101112131415161718191a1b1c1d1e1f"
			       "202122232425262728292a2b2c2d2e2f"
			       "303132333435363738393a3b3c3d3e3f"
			       "404142434445464748494a4b4c4d4e4f",
			.salt = "606162636465666768696a6b6c6d6e6f"
				"707172737475767778797a7b7c7d7e7f"
				"808182838485868788898a8b8c8d8e8f"
				"909192939495969798999a9b9c9d9e9f"
				"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf",
			.info = "b0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
				"c0c1c2c3c4c5c6c7c8c9cacbcccdcecf"
				"d0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
				"e0e1e2e3e4e5e6e7e8e9eaebecedeeef"
				"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
			.prk = "06a6b88c5853361a06104c9ceb35b45c"
			       "ef760014904671014a193f40c15fc244",
			.okm = "b11e398dc80327a1c8e7f78c596a4934"
			       "4f012eda2d4efad8a050cc4c19afa97c"
			       "59045a99cac7827271cb41c65e590e09"
			       "da3275600c2f09b8367793a9aca3db71"
			       "cc30c58179ec3e87c14c01d5c1f3434f"
			       "1d87",
		},
		{
			.ikm = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b",
			.salt = "",
			.info = "",
			.prk = "19ef24a32c717b167f33a91d6f648bdf"
			       "96596776afdb6377ac434c1c293ccb04",
			.okm = "8da4e775a563c18f715f802a063c5a31"
			       "b8a11f5c5ee1879ec3454e5f3c738d2d"
			       "9d201395faa4b61a96c8",
		},
	};
	uint8_t prk[CRYPTO_HASH_LEN];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		size_t ikmlen, saltlen, infolen, okmlen;
		uint8_t *ikm = unhex(v[i].ikm, &ikmlen);
		uint8_t *salt = unhex(v[i].salt, &saltlen);
		uint8_t *info = unhex(v[i].info, &infolen);
		uint8_t *okm = unhex(v[i].okm, &okmlen);

		print_message("# RFC 5869 test case %zu\n", i + 1);
		assert_int_equal(crypto_hkdf_extract(salt, saltlen, ikm, ikmlen,
						     prk),
				 0);
		assert_hex_equal(prk, sizeof(prk), v[i].prk);
		memset(okm, 0, okmlen);
		assert_int_equal(
			crypto_hkdf_expand(prk, info, infolen, okm, okmlen), 0);
		assert_hex_equal(okm, okmlen, v[i].okm);
		free(ikm);
		free(salt);
		free(info);
		free(okm);
	}
}

/* Expand's output limit, and an empty IKM (the RFC's defaults). */
static void test_hkdf_bounds(void **state)
{
	static uint8_t out[255 * CRYPTO_HASH_LEN + 1];
	uint8_t prk[CRYPTO_HASH_LEN], prk2[CRYPTO_HASH_LEN];
	uint8_t small[CRYPTO_HASH_LEN];

	(void)state;
	fill(prk, sizeof(prk), 5);
	memset(out, 0x5a, sizeof(out));
	assert_int_equal(crypto_hkdf_expand(prk, NULL, 0, out, sizeof(out)),
			 -EINVAL);
	assert_int_equal(out[0], 0x5a);
	assert_int_equal(crypto_hkdf_expand(prk, NULL, 0, out, sizeof(out) - 1),
			 0);
	/* output is a prefix of any longer output */
	assert_int_equal(crypto_hkdf_expand(prk, NULL, 0, small, sizeof(small)),
			 0);
	assert_memory_equal(small, out, sizeof(small));
	assert_int_equal(crypto_hkdf_expand(prk, NULL, 0, small, 0), 0);

	assert_int_equal(crypto_hkdf_extract(NULL, 0, NULL, 0, prk), 0);
	assert_int_equal(crypto_hkdf_extract(NULL, 0, NULL, 0, prk2), 0);
	assert_memory_equal(prk, prk2, sizeof(prk));
	assert_int_equal(crypto_hkdf_extract(NULL, 1, NULL, 0, prk), -EINVAL);
}

static void test_sha256(void **state)
{
	static const char abc_hex[] = "ba7816bf8f01cfea414140de5dae2223"
				      "b00361a396177a9cb410ff61f20015ad";
	static const char text[] = "linerate moves files at line rate";
	uint8_t h[CRYPTO_HASH_LEN], h2[CRYPTO_HASH_LEN];
	size_t cut;

	(void)state;
	assert_int_equal(crypto_sha256("abc", 3, NULL, 0, h), 0);
	assert_hex_equal(h, sizeof(h), abc_hex);
	assert_int_equal(crypto_sha256("a", 1, "bc", 2, h), 0);
	assert_hex_equal(h, sizeof(h), abc_hex);
	assert_int_equal(crypto_sha256("", 0, "abc", 3, h), 0);
	assert_hex_equal(h, sizeof(h), abc_hex);
	assert_int_equal(crypto_sha256("", 0, NULL, 0, h), 0);
	assert_hex_equal(h, sizeof(h),
			 "e3b0c44298fc1c149afbf4c8996fb924"
			 "27ae41e4649b934ca495991b7852b855");

	assert_int_equal(crypto_sha256(text, strlen(text), NULL, 0, h), 0);
	for (cut = 0; cut <= strlen(text); cut++) {
		assert_int_equal(crypto_sha256(text, cut, text + cut,
					       strlen(text) - cut, h2),
				 0);
		assert_memory_equal(h, h2, sizeof(h));
	}
}

static void test_cipher_names(void **state)
{
	static const char *const bad[] = {
		"",	    "aes",     "AES-256-GCM", "aes-256-gcm ",
		"chacha20", "unknown", "aes-128-gcm"
	};
	static const enum crypto_cipher all[] = { CRYPTO_NONE, CRYPTO_AES256GCM,
						  CRYPTO_CHACHA20POLY1305 };
	enum crypto_cipher c;
	size_t i;

	(void)state;
	assert_string_equal(crypto_cipher_name(CRYPTO_NONE), "none");
	assert_string_equal(crypto_cipher_name(CRYPTO_AES256GCM),
			    "aes-256-gcm");
	assert_string_equal(crypto_cipher_name(CRYPTO_CHACHA20POLY1305),
			    "chacha20-poly1305");
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		c = (enum crypto_cipher)42;
		assert_int_equal(
			crypto_cipher_parse(crypto_cipher_name(all[i]), &c), 0);
		assert_int_equal(c, all[i]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = (enum crypto_cipher)42;
		assert_int_equal(crypto_cipher_parse(bad[i], &c), -EINVAL);
		assert_int_equal(c, 42);
	}
	assert_int_equal(crypto_cipher_parse(NULL, &c), -EINVAL);
	assert_string_equal(crypto_cipher_name((enum crypto_cipher)42),
			    "unknown");
}

static void test_memcmp_wipe_random(void **state)
{
	uint8_t a[64], b[64];

	(void)state;
	fill(a, sizeof(a), 7);
	memcpy(b, a, sizeof(b));
	assert_int_equal(crypto_memcmp(a, b, sizeof(a)), 0);
	assert_int_equal(crypto_memcmp(a, b, 0), 0);
	b[63] ^= 0x80;
	assert_int_not_equal(crypto_memcmp(a, b, sizeof(a)), 0);
	assert_int_equal(crypto_memcmp(a, b, 63), 0);
	b[0] ^= 1;
	assert_int_not_equal(crypto_memcmp(a, b, 1), 0);

	crypto_wipe(a, sizeof(a));
	memset(b, 0, sizeof(b));
	assert_memory_equal(a, b, sizeof(a));
	crypto_wipe(NULL, 0);

	assert_int_equal(crypto_random(a, sizeof(a)), 0);
	assert_int_equal(crypto_random(b, sizeof(b)), 0);
	assert_memory_not_equal(a, b, sizeof(a));
	assert_int_equal(crypto_random(a, 0), 0);
}

static void test_version_and_cpu(void **state)
{
	const char *v = crypto_library_version();

	(void)state;
	assert_non_null(v);
	assert_true(strncmp(v, "OpenSSL 3.", 10) == 0);
#if defined(__x86_64__) || defined(__i386__)
	assert_int_equal(crypto_cpu_has_aes(), !!__builtin_cpu_supports("aes"));
#else
	(void)crypto_cpu_has_aes();
#endif
}

/* warming OpenSSL up changes nothing a session sees: the known answers
 * still come out, twice over */
static void test_warm_then_known_answers(void **state)
{
	crypto_warm();
	crypto_warm();
	test_gcm_spec_aes256(state);
	test_chacha_rfc8439_2_8_2(state);
}

/* The rule behind --cipher auto, over a table of capability sets: AES
 * and carry-less multiply both, after OpenSSL's masks. */
static void test_caps_rule(void **state)
{
	static const struct {
		enum crypto_arch arch;
		unsigned long hw;
		const char *env;
		bool aes, clmul, masked;
	} t[] = {
		/* x86: CPUID.1 ECX bit 25 AES, bit 1 PCLMULQDQ */
		{ CRYPTO_ARCH_X86, 1ul << 25 | 1ul << 1, NULL, 1, 1, 0 },
		{ CRYPTO_ARCH_X86, 1ul << 25, NULL, 1, 0, 0 },
		{ CRYPTO_ARCH_X86, 1ul << 1, NULL, 0, 1, 0 },
		/* OPENSSL_ia32cap: the high word is ECX; '~' clears */
		{ CRYPTO_ARCH_X86, 1ul << 25 | 1ul << 1, "~0x200000000000000",
		  0, 1, 1 },
		{ CRYPTO_ARCH_X86, 1ul << 25 | 1ul << 1, "~0x200000200000000",
		  0, 0, 1 },
		{ CRYPTO_ARCH_X86, 0, "0x200000200000000", 1, 1, 1 },
		/* as OpenSSL 3.0 reads it: "" replaces with nothing, a
		 * leading ':' keeps the CPU's first word, '~' with FXSR
		 * (bit 24) clears the XMM features too, no sign or space */
		{ CRYPTO_ARCH_X86, 1ul << 25 | 1ul << 1, "", 0, 0, 1 },
		{ CRYPTO_ARCH_X86, 1ul << 25 | 1ul << 1, ":0x0", 1, 1, 0 },
		{ CRYPTO_ARCH_X86, 1ul << 25 | 1ul << 1, "~0x1000000", 0, 0,
		  1 },
		{ CRYPTO_ARCH_X86, 1ul << 25 | 1ul << 1, "~", 1, 1, 1 },
		{ CRYPTO_ARCH_X86, 1ul << 25 | 1ul << 1, "-1", 0, 0, 1 },
		{ CRYPTO_ARCH_X86, 0, "0X200000200000000", 1, 1, 1 },
		/* aarch64: HWCAP bit 3 AES, bit 4 PMULL (a Pi 4 has none) */
		{ CRYPTO_ARCH_ARM64, 1ul << 3 | 1ul << 4, NULL, 1, 1, 0 },
		{ CRYPTO_ARCH_ARM64, 0, NULL, 0, 0, 0 },
		{ CRYPTO_ARCH_ARM64, 1ul << 3, NULL, 1, 0, 0 },
		/* OPENSSL_armcap replaces: bit 2 AES, bit 5 PMULL */
		{ CRYPTO_ARCH_ARM64, 1ul << 3 | 1ul << 4, "0", 0, 0, 1 },
		{ CRYPTO_ARCH_ARM64, 0, "0x24", 1, 1, 1 },
		{ CRYPTO_ARCH_ARM64, 1ul << 3 | 1ul << 4, "0x4", 1, 0, 1 },
		{ CRYPTO_ARCH_ARM64, 1ul << 3 | 1ul << 4, "", 0, 0, 1 },
		/* armv7/armv8 32-bit: HWCAP2 bit 0 AES, bit 1 PMULL */
		{ CRYPTO_ARCH_ARM32, 3, NULL, 1, 1, 0 },
		{ CRYPTO_ARCH_ARM32, 1, NULL, 1, 0, 0 },
		{ CRYPTO_ARCH_ARM32, 0, NULL, 0, 0, 0 },
		/* MIPS, s390x and the rest: ChaCha20 */
		{ CRYPTO_ARCH_OTHER, ~0ul, "0x24", 0, 0, 0 },
	};
	struct crypto_caps c;
	char words[200];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		crypto_caps_from(t[i].arch, t[i].hw, t[i].env, &c);
		if (c.aes != t[i].aes || c.clmul != t[i].clmul ||
		    c.masked != t[i].masked)
			fail_msg("case %zu: aes %d clmul %d masked %d", i,
				 c.aes, c.clmul, c.masked);
	}
	c = (struct crypto_caps){ .aes = true, .clmul = true };
	assert_non_null(strstr(crypto_caps_words(&c, words, sizeof(words)),
			       "has AES and carry-less multiply"));
	c = (struct crypto_caps){ .aes = true, .masked = true };
	crypto_caps_words(&c, words, sizeof(words));
	assert_non_null(strstr(words, "no carry-less multiply"));
	assert_non_null(strstr(words, "says)"));
	c = (struct crypto_caps){ 0 };
	assert_non_null(strstr(crypto_caps_words(&c, words, sizeof(words)),
			       "lacks AES"));
	/* the probe agrees with the rule on this CPU's own words */
	crypto_caps_probe(&c);
	assert_int_equal(crypto_cpu_has_aes(), c.aes && c.clmul);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chacha_rfc8439_2_8_2),
		cmocka_unit_test(test_chacha_rfc8439_a5),
		cmocka_unit_test(test_gcm_spec_aes256),
		cmocka_unit_test(test_aead_context_reuse),
		cmocka_unit_test(test_aead_tamper),
		cmocka_unit_test(test_warm_then_known_answers),
		cmocka_unit_test(test_aead_roundtrip),
		cmocka_unit_test(test_aead_rekey),
		cmocka_unit_test(test_aead_bad_args),
		cmocka_unit_test(test_x25519_rfc7748_5_2),
		cmocka_unit_test(test_x25519_rfc7748_iterated),
		cmocka_unit_test(test_x25519_rfc7748_6_1),
		cmocka_unit_test(test_x25519_keypair),
		cmocka_unit_test(test_x25519_low_order),
		cmocka_unit_test(test_hkdf_rfc5869),
		cmocka_unit_test(test_hkdf_bounds),
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_cipher_names),
		cmocka_unit_test(test_memcmp_wipe_random),
		cmocka_unit_test(test_version_and_cpu),
		cmocka_unit_test(test_caps_rule),
	};
	return cmocka_run_group_tests_name("crypto", tests, NULL, NULL);
}
