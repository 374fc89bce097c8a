// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "session.h"
#include "banned.h"

static const char protocol_name[] = "Noise_NNpsk0_25519_ChaChaPoly_SHA256";
static const char psk_label[] = "linerate token v1";
static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";

int session_token_new(char out[SESSION_TOKEN_CHARS])
{
	uint8_t raw[SESSION_TOKEN_BYTES];
	unsigned bit, i, o = 0;
	int r;

	r = crypto_random(raw, sizeof(raw));
	if (r)
		return r;
	for (i = 0; i < SESSION_TOKEN_BYTES * 8 / 5; i++) {
		unsigned v = 0, k;

		for (k = 0; k < 5; k++) {
			bit = i * 5 + k;
			v = (v << 1) | ((raw[bit / 8] >> (7 - bit % 8)) & 1);
		}
		if (i && i % 4 == 0)
			out[o++] = '-';
		out[o++] = b32[v];
	}
	out[o] = '\0';
	crypto_wipe(raw, sizeof(raw));
	return 0;
}

void session_token_wipe(void *p, size_t len)
{
	crypto_wipe(p, len);
}

int session_token_psk(const char *token, uint8_t psk[SESSION_PSK_LEN])
{
	uint8_t raw[64];
	unsigned nbits = 0, acc = 0, nbytes = 0;
	const char *p, *q;
	int r;

	memset(raw, 0, sizeof(raw));
	for (p = token; *p; p++) {
		char c = *p;

		if (c == '-' || c == ' ' || c == '\t' || c == '\n' || c == '\r')
			continue;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		q = strchr(b32, c);
		if (!q || !c || nbytes >= sizeof(raw))
			goto out_inval;
		acc = (acc << 5) | (unsigned)(q - b32);
		nbits += 5;
		if (nbits >= 8) {
			raw[nbytes++] = (uint8_t)(acc >> (nbits - 8));
			nbits -= 8;
			acc &= (1u << nbits) - 1;
		}
	}
	if (nbytes * 8 < 128)
		goto out_inval;
	r = crypto_sha256(psk_label, sizeof(psk_label) - 1, raw, nbytes, psk);
	crypto_wipe(raw, sizeof(raw));
	return r;

out_inval:
	crypto_wipe(raw, sizeof(raw));
	return -EINVAL;
}

/* ---- the Noise symmetric state ---- */

static int mix_hash(struct session_hs *hs, const uint8_t *data, size_t len)
{
	return crypto_sha256(hs->h, sizeof(hs->h), data, len, hs->h);
}

/* HKDF(ck, ikm) with 2 or 3 outputs (Noise section 4.3). */
static int hkdf(const uint8_t ck[32], const uint8_t *ikm, size_t len,
		uint8_t *out, size_t n)
{
	uint8_t prk[CRYPTO_HASH_LEN];
	int r;

	r = crypto_hkdf_extract(ck, 32, ikm, len, prk);
	if (!r)
		r = crypto_hkdf_expand(prk, NULL, 0, out, n * 32);
	crypto_wipe(prk, sizeof(prk));
	return r;
}

static int mix_key(struct session_hs *hs, const uint8_t *ikm, size_t len)
{
	uint8_t out[64];
	int r;

	r = hkdf(hs->ck, ikm, len, out, 2);
	if (!r) {
		memcpy(hs->ck, out, 32);
		memcpy(hs->k, out + 32, 32);
		hs->n = 0;
	}
	crypto_wipe(out, sizeof(out));
	return r;
}

static int mix_key_and_hash(struct session_hs *hs, const uint8_t *ikm,
			    size_t len)
{
	uint8_t out[96];
	int r;

	r = hkdf(hs->ck, ikm, len, out, 3);
	if (!r) {
		memcpy(hs->ck, out, 32);
		r = mix_hash(hs, out + 32, 32);
		memcpy(hs->k, out + 64, 32);
		hs->n = 0;
	}
	crypto_wipe(out, sizeof(out));
	return r;
}

/* Noise's ChaChaPoly nonce: 32 zero bits, then n little-endian. */
static void noise_nonce(uint64_t n, uint8_t nonce[CRYPTO_NONCE_LEN])
{
	unsigned i;

	memset(nonce, 0, 4);
	for (i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(n >> (8 * i));
}

static int encrypt_and_hash(struct session_hs *hs, const uint8_t *pt,
			    size_t len, uint8_t *out)
{
	struct crypto_aead *a;
	uint8_t nonce[CRYPTO_NONCE_LEN];
	int r;

	r = crypto_aead_new(CRYPTO_CHACHA20POLY1305, hs->k, &a);
	if (r)
		return r;
	noise_nonce(hs->n, nonce);
	memcpy(out, pt, len);
	r = crypto_aead_seal(a, nonce, hs->h, sizeof(hs->h), out, len,
			     out + len);
	crypto_aead_free(a);
	if (!r) {
		hs->n++;
		r = mix_hash(hs, out, len + CRYPTO_TAG_LEN);
	}
	return r;
}

static int decrypt_and_hash(struct session_hs *hs, const uint8_t *ct,
			    size_t len, uint8_t *pt)
{
	struct crypto_aead *a;
	uint8_t nonce[CRYPTO_NONCE_LEN], h[CRYPTO_HASH_LEN];
	int r;

	if (len < CRYPTO_TAG_LEN)
		return -EINVAL;
	memcpy(h, hs->h, sizeof(h));
	r = mix_hash(hs, ct, len);
	if (r)
		return r;
	r = crypto_aead_new(CRYPTO_CHACHA20POLY1305, hs->k, &a);
	if (r)
		return r;
	noise_nonce(hs->n, nonce);
	memcpy(pt, ct, len - CRYPTO_TAG_LEN);
	r = crypto_aead_open(a, nonce, h, sizeof(h), pt, len - CRYPTO_TAG_LEN,
			     ct + len - CRYPTO_TAG_LEN);
	crypto_aead_free(a);
	if (r == -EBADMSG)
		return -EACCES;
	if (!r)
		hs->n++;
	return r;
}

int session_hs_init(struct session_hs *hs, const uint8_t psk[CRYPTO_KEY_LEN],
		    const uint8_t *prologue, size_t plen)
{
	int r;

	memset(hs, 0, sizeof(*hs));
	/* the name is longer than 32 bytes: h = HASH(name) */
	r = crypto_sha256(protocol_name, sizeof(protocol_name) - 1, NULL, 0,
			  hs->h);
	if (r)
		return r;
	memcpy(hs->ck, hs->h, sizeof(hs->ck));
	r = mix_hash(hs, prologue, plen);
	if (!r)
		r = mix_key_and_hash(hs, psk, CRYPTO_KEY_LEN);
	if (r)
		session_hs_wipe(hs);
	return r;
}

int session_hs_set_ephemeral(struct session_hs *hs,
			     const uint8_t priv[CRYPTO_X25519_LEN])
{
	int r = crypto_x25519_public(priv, hs->e_pub);

	if (r)
		return r;
	memcpy(hs->e_priv, priv, CRYPTO_X25519_LEN);
	hs->fixed_e = true;
	return 0;
}

/* The token "e" with a PSK: MixHash(e.pub), MixKey(e.pub). */
static int token_e(struct session_hs *hs, const uint8_t pub[32])
{
	int r = mix_hash(hs, pub, 32);

	return r ? r : mix_key(hs, pub, 32);
}

static int hello_check(const struct session_hello *h)
{
	if (h->version != SESSION_VERSION)
		return -EINVAL;
	return 0;
}

static void hello_put(const struct session_hello *h, uint8_t *p)
{
	p[0] = h->version;
	p[1] = h->cipher;
	p[2] = h->flags;
	memcpy(p + 3, h->wire, SESSION_WIRE_LEN);
}

static void hello_get(const uint8_t *p, struct session_hello *h)
{
	h->version = p[0];
	h->cipher = p[1];
	h->flags = p[2];
	memcpy(h->wire, p + 3, SESSION_WIRE_LEN);
}

bool session_hello_wire_ok(const struct session_hello *h,
			   const uint8_t *preamble, const uint8_t *hdr)
{
	return !memcmp(h->wire, preamble, SESSION_WIRE_LEN / 2) &&
	       !memcmp(h->wire + SESSION_WIRE_LEN / 2, hdr,
		       SESSION_WIRE_LEN / 2);
}

int session_hs_write_init(struct session_hs *hs, const struct session_hello *me,
			  uint8_t out[SESSION_HS_LEN])
{
	uint8_t pt[SESSION_HELLO_LEN];
	int r = 0;

	if (!hs->fixed_e)
		r = crypto_x25519_keypair(hs->e_priv, hs->e_pub);
	if (!r)
		r = token_e(hs, hs->e_pub);
	if (r)
		return r;
	memcpy(out, hs->e_pub, 32);
	hello_put(me, pt);
	return encrypt_and_hash(hs, pt, sizeof(pt), out + 32);
}

int session_hs_read_init(struct session_hs *hs, const uint8_t *in, size_t len,
			 struct session_hello *peer)
{
	uint8_t pt[SESSION_HELLO_LEN];
	struct session_hello h;
	int r;

	if (len != SESSION_HS_LEN)
		return -EINVAL;
	r = token_e(hs, in);
	if (r)
		return r;
	memcpy(hs->re, in, 32);
	r = decrypt_and_hash(hs, in + 32, len - 32, pt);
	if (r)
		return r;
	hello_get(pt, &h);
	r = hello_check(&h);
	if (!r)
		*peer = h;
	return r;
}

int session_hs_write_resp(struct session_hs *hs, const struct session_hello *me,
			  uint8_t out[SESSION_HS_LEN])
{
	uint8_t dh[32], pt[SESSION_HELLO_LEN];
	int r = 0;

	if (!hs->fixed_e)
		r = crypto_x25519_keypair(hs->e_priv, hs->e_pub);
	if (!r)
		r = token_e(hs, hs->e_pub);
	if (!r)
		r = crypto_x25519(hs->e_priv, hs->re, dh);
	if (!r)
		r = mix_key(hs, dh, sizeof(dh));
	crypto_wipe(dh, sizeof(dh));
	if (r)
		return r;
	memcpy(out, hs->e_pub, 32);
	hello_put(me, pt);
	return encrypt_and_hash(hs, pt, sizeof(pt), out + 32);
}

int session_hs_read_resp(struct session_hs *hs, const uint8_t *in, size_t len,
			 struct session_hello *peer)
{
	uint8_t dh[32], pt[SESSION_HELLO_LEN];
	struct session_hello h;
	int r;

	if (len != SESSION_HS_LEN)
		return -EINVAL;
	r = token_e(hs, in);
	if (!r)
		r = crypto_x25519(hs->e_priv, in, dh);
	if (r == -EINVAL)
		r = -EACCES; /* a low-order key is an attack */
	if (!r)
		r = mix_key(hs, dh, sizeof(dh));
	crypto_wipe(dh, sizeof(dh));
	if (!r)
		r = decrypt_and_hash(hs, in + 32, len - 32, pt);
	if (r)
		return r;
	hello_get(pt, &h);
	r = hello_check(&h);
	if (!r)
		*peer = h;
	return r;
}

int session_hs_split(struct session_hs *hs, uint8_t c2s[CRYPTO_KEY_LEN],
		     uint8_t s2c[CRYPTO_KEY_LEN])
{
	uint8_t out[64];
	int r;

	r = hkdf(hs->ck, NULL, 0, out, 2);
	if (!r) {
		memcpy(c2s, out, 32);
		memcpy(s2c, out + 32, 32);
	}
	crypto_wipe(out, sizeof(out));
	session_hs_wipe(hs);
	return r;
}

void session_hs_wipe(struct session_hs *hs)
{
	crypto_wipe(hs, sizeof(*hs));
}

enum crypto_cipher session_pick_cipher(uint8_t wish, bool client_aes,
				       bool server_aes)
{
	switch (wish) {
	case CRYPTO_NONE: return CRYPTO_NONE;
	case CRYPTO_AES256GCM: return CRYPTO_AES256GCM;
	case CRYPTO_CHACHA20POLY1305: return CRYPTO_CHACHA20POLY1305;
	default:
		return client_aes && server_aes ? CRYPTO_AES256GCM
						: CRYPTO_CHACHA20POLY1305;
	}
}
