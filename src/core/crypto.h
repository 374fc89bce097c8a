/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_CRYPTO_H
#define LINERATE_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cipher.h"

/*
 * The only module that includes OpenSSL: random bytes, constant-time
 * comparison, SHA-256, HKDF-SHA256 (RFC 5869), X25519 (RFC 7748) and the
 * two AEADs (AES-256-GCM, ChaCha20-Poly1305) through the EVP interface.
 * Functions return 0 or a negative errno; -EBADMSG means an AEAD tag did not
 * verify.
 */

#define CRYPTO_KEY_LEN	  32
#define CRYPTO_TAG_LEN	  16
#define CRYPTO_NONCE_LEN  12
#define CRYPTO_X25519_LEN 32
#define CRYPTO_HASH_LEN	  32

/* Fill buf with len bytes from the OS-seeded CSPRNG. 0 or -EIO. */
int crypto_random(void *buf, size_t len);

/* Constant-time comparison: 0 when equal. */
int crypto_memcmp(const void *a, const void *b, size_t len);

/* Overwrite len bytes at p in a way the compiler keeps. */
void crypto_wipe(void *p, size_t len);

/*
 * What decides whether AES-256-GCM is the fast cipher here: instructions
 * for AES's rounds and for GCM's carry-less multiply (x86 AES-NI and
 * PCLMULQDQ, ARMv8 AES and PMULL), as OpenSSL will use them, that is
 * after the masks of OPENSSL_ia32cap / OPENSSL_armcap when those are set.
 */
struct crypto_caps {
	bool aes;
	bool clmul;
	bool masked; /* an OPENSSL_*cap variable decided (part of) it */
};

enum crypto_arch {
	CRYPTO_ARCH_X86,   /* hw: CPUID leaf 1 ECX; env: OPENSSL_ia32cap */
	CRYPTO_ARCH_ARM64, /* hw: AT_HWCAP; env: OPENSSL_armcap */
	CRYPTO_ARCH_ARM32, /* hw: AT_HWCAP2; env: OPENSSL_armcap */
	CRYPTO_ARCH_OTHER, /* neither, whatever hw says */
};

/* The rule alone, on raw values (env: the variable's text, NULL when
 * unset): for the unit tests' table and crypto_caps_probe. */
void crypto_caps_from(enum crypto_arch arch, unsigned long hw, const char *env,
		      struct crypto_caps *out);

/* This CPU's. */
void crypto_caps_probe(struct crypto_caps *out);

/* Why auto picks as it does on these caps, in words ("this CPU has AES
 * and carry-less multiply instructions (PMULL)", "... lacks PMULL", "...
 * OPENSSL_armcap masks them"). */
const char *crypto_caps_words(const struct crypto_caps *c, char *buf,
			      size_t cap);

/* True when AES-GCM is fast on this CPU: AES and carry-less multiply
 * instructions, after OpenSSL's masks (crypto_caps_probe). */
bool crypto_cpu_has_aes(void);

/* SHA-256 of the concatenation a || b (b may be NULL with blen 0). */
int crypto_sha256(const void *a, size_t alen, const void *b, size_t blen,
		  uint8_t out[CRYPTO_HASH_LEN]);

/* HKDF-SHA256 extract (RFC 5869 section 2.2). */
int crypto_hkdf_extract(const uint8_t *salt, size_t saltlen, const uint8_t *ikm,
			size_t ikmlen, uint8_t prk[CRYPTO_HASH_LEN]);
/* HKDF-SHA256 expand into out (outlen <= 255 * 32). */
int crypto_hkdf_expand(const uint8_t prk[CRYPTO_HASH_LEN], const uint8_t *info,
		       size_t infolen, uint8_t *out, size_t outlen);

/*
 * Do once what the first handshake and the first AEAD of each cipher
 * would pay for (OpenSSL's random generator seeding, method fetches):
 * a server calls it before it waits for clients, so that the first
 * session does not wait for it. Best effort; silent.
 */
void crypto_warm(void);

/* A fresh X25519 key pair. */
int crypto_x25519_keypair(uint8_t priv[CRYPTO_X25519_LEN],
			  uint8_t pub[CRYPTO_X25519_LEN]);
/* The public key of priv. */
int crypto_x25519_public(const uint8_t priv[CRYPTO_X25519_LEN],
			 uint8_t pub[CRYPTO_X25519_LEN]);
/* The shared secret of priv and peer; -EINVAL when it is all zero (a
 * low-order peer key). */
int crypto_x25519(const uint8_t priv[CRYPTO_X25519_LEN],
		  const uint8_t peer[CRYPTO_X25519_LEN],
		  uint8_t shared[CRYPTO_X25519_LEN]);

/*
 * An AEAD context bound to one cipher and key, for one direction of one
 * connection. Not thread-safe: one user at a time.
 */
struct crypto_aead;

int crypto_aead_new(enum crypto_cipher c, const uint8_t key[CRYPTO_KEY_LEN],
		    struct crypto_aead **out);
void crypto_aead_free(struct crypto_aead *a);
/* Replace the key (same cipher). */
int crypto_aead_rekey(struct crypto_aead *a, const uint8_t key[CRYPTO_KEY_LEN]);
/* Encrypt len bytes at buf in place and write the tag. */
int crypto_aead_seal(struct crypto_aead *a,
		     const uint8_t nonce[CRYPTO_NONCE_LEN], const uint8_t *aad,
		     size_t aadlen, uint8_t *buf, size_t len,
		     uint8_t tag[CRYPTO_TAG_LEN]);
/* Decrypt len bytes at buf in place; -EBADMSG when the tag is wrong (buf
 * then holds garbage and must not be used). */
int crypto_aead_open(struct crypto_aead *a,
		     const uint8_t nonce[CRYPTO_NONCE_LEN], const uint8_t *aad,
		     size_t aadlen, uint8_t *buf, size_t len,
		     const uint8_t tag[CRYPTO_TAG_LEN]);

#endif
