// SPDX-License-Identifier: MIT
/*
 * The one file that includes OpenSSL: every primitive linerate uses goes
 * through the EVP interface of libcrypto 3.0, so that OpenSSL picks its
 * fastest code for this CPU (AES-NI/VAES, AVX-512, NEON, ARMv8 crypto).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) || defined(__arm__)
#include <sys/auxv.h>
#endif

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "crypto.h"
#include "banned.h"

/*
 * EVP takes int lengths: longer inputs are fed in pieces of this size, a
 * multiple of every cipher's block so that no piece is buffered.
 */
#define EVP_CHUNK (1u << 30)

/*
 * The most one nonce may protect: GCM allows 2^36 - 32 bytes (SP 800-38D),
 * ChaCha20-Poly1305 2^38 - 64 (RFC 8439); take the smaller for both.
 */
#define AEAD_MAX_LEN ((UINT64_C(1) << 36) - 32)

#define HKDF_MAX_OUT (255 * CRYPTO_HASH_LEN)

int crypto_random(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len > 0) {
		size_t n = len < EVP_CHUNK ? len : EVP_CHUNK;

		if (RAND_bytes(p, (int)n) != 1)
			return -EIO;
		p += n;
		len -= n;
	}
	return 0;
}

int crypto_memcmp(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) ? 1 : 0;
}

void crypto_wipe(void *p, size_t len)
{
	if (p && len)
		OPENSSL_cleanse(p, len);
}

const char *crypto_library_version(void)
{
	return OpenSSL_version(OPENSSL_VERSION);
}

static const struct {
	enum crypto_cipher cipher;
	const char *name; /* ours, as printed and parsed */
	const char *evp;  /* OpenSSL's algorithm name */
} ciphers[] = {
	{ CRYPTO_NONE, "none", NULL },
	{ CRYPTO_AES256GCM, "aes-256-gcm", "AES-256-GCM" },
	{ CRYPTO_CHACHA20POLY1305, "chacha20-poly1305", "ChaCha20-Poly1305" },
};

#define N_CIPHERS (sizeof(ciphers) / sizeof(ciphers[0]))

const char *crypto_cipher_name(enum crypto_cipher c)
{
	size_t i;

	for (i = 0; i < N_CIPHERS; i++)
		if (ciphers[i].cipher == c)
			return ciphers[i].name;
	return "unknown";
}

int crypto_cipher_parse(const char *s, enum crypto_cipher *out)
{
	size_t i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < N_CIPHERS; i++) {
		if (!strcmp(s, ciphers[i].name)) {
			*out = ciphers[i].cipher;
			return 0;
		}
	}
	return -EINVAL;
}

/* The bits, as the kernel and the CPU define them (and OpenSSL's
 * arm_arch.h for OPENSSL_armcap). */
#define X86_ECX_PCLMUL	   (1ul << 1)
#define X86_ECX_AES	   (1ul << 25)
#define ARM64_HWCAP_AES	   (1ul << 3)
#define ARM64_HWCAP_PMULL  (1ul << 4)
#define ARM32_HWCAP2_AES   (1ul << 0)
#define ARM32_HWCAP2_PMULL (1ul << 1)
#define ARMCAP_AES	   (1ul << 2)
#define ARMCAP_PMULL	   (1ul << 5)

/* A number as OpenSSL 3.0 reads OPENSSL_ia32cap's: 0x hex, 0 octal or
 * decimal, no sign or space, up to the first other character. */
static uint64_t cap_number(const char *s)
{
	unsigned base = 10, d;
	uint64_t v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	} else if (s[0] == '0') {
		base = 8;
	}
	for (;; s++) {
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (d >= base)
			break;
		v = v * base + d;
	}
	return v;
}

/* CPUID.1:ECX as OpenSSL 3.0 takes it with OPENSSL_ia32cap set: its
 * first word "[~]VALUE" (the high half is ECX) clears those bits with
 * '~', else replaces them; a word that starts with ':' keeps what the
 * CPU says; with '~', FXSR (bit 24 of the low half) also clears the XMM
 * features, PCLMULQDQ and AES among them. *masked: it changed them. */
static unsigned long ia32cap_ecx(unsigned long ecx, const char *env,
				 bool *masked)
{
	const unsigned long xmm = 1ul << 1 | 1ul << 11 | 1ul << 25 | 1ul << 28;
	bool clear = env[0] == '~';
	uint64_t v;
	unsigned long out;

	if (env[0] == ':') {
		*masked = false;
		return ecx;
	}
	v = cap_number(env + clear);
	out = (unsigned long)((v >> 32) & 0xffffffffu);
	if (clear) {
		out = ecx & ~out;
		if (v & (1u << 24))
			out &= ~xmm;
	}
	*masked = true;
	return out;
}

void crypto_caps_from(enum crypto_arch arch, unsigned long hw, const char *env,
		      struct crypto_caps *out)
{
	unsigned long v;

	memset(out, 0, sizeof(*out));
	switch (arch) {
	case CRYPTO_ARCH_X86:
		v = env ? ia32cap_ecx(hw, env, &out->masked) : hw;
		out->aes = v & X86_ECX_AES;
		out->clmul = v & X86_ECX_PCLMUL;
		break;
	case CRYPTO_ARCH_ARM64:
	case CRYPTO_ARCH_ARM32:
		/* OpenSSL: strtoul(env, NULL, 0) replaces what the CPU says,
		 * an empty one too */
		if (env) {
			v = strtoul(env, NULL, 0);
			out->masked = true;
			out->aes = v & ARMCAP_AES;
			out->clmul = v & ARMCAP_PMULL;
		} else if (arch == CRYPTO_ARCH_ARM64) {
			out->aes = hw & ARM64_HWCAP_AES;
			out->clmul = hw & ARM64_HWCAP_PMULL;
		} else {
			out->aes = hw & ARM32_HWCAP2_AES;
			out->clmul = hw & ARM32_HWCAP2_PMULL;
		}
		break;
	default: break;
	}
}

void crypto_caps_probe(struct crypto_caps *out)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned int eax, ebx, ecx = 0, edx;

	if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
		ecx = 0;
	crypto_caps_from(CRYPTO_ARCH_X86, ecx, getenv("OPENSSL_ia32cap"), out);
#elif defined(__aarch64__)
	crypto_caps_from(CRYPTO_ARCH_ARM64, getauxval(AT_HWCAP),
			 getenv("OPENSSL_armcap"), out);
#elif defined(__arm__)
	crypto_caps_from(CRYPTO_ARCH_ARM32, getauxval(AT_HWCAP2),
			 getenv("OPENSSL_armcap"), out);
#else
	crypto_caps_from(CRYPTO_ARCH_OTHER, 0, NULL, out);
#endif
}

const char *crypto_caps_words(const struct crypto_caps *c, char *buf,
			      size_t cap)
{
#if defined(__x86_64__) || defined(__i386__)
	const char *mul = "PCLMULQDQ", *var = "OPENSSL_ia32cap";
#else
	const char *mul = "PMULL", *var = "OPENSSL_armcap";
#endif
	size_t n;

	if (c->aes && c->clmul)
		n = (size_t)snprintf(buf, cap,
				     "this CPU has AES and carry-less "
				     "multiply (%s) instructions",
				     mul);
	else if (c->aes)
		n = (size_t)snprintf(buf, cap,
				     "this CPU has AES instructions but no "
				     "carry-less multiply (%s), which GCM "
				     "needs",
				     mul);
	else
		n = (size_t)snprintf(buf, cap,
				     "this CPU lacks AES instructions");
	if (c->masked && n < cap)
		snprintf(buf + n, cap - n, " (as %s says)", var);
	return buf;
}

bool crypto_cpu_has_aes(void)
{
	struct crypto_caps c;

	crypto_caps_probe(&c);
	return c.aes && c.clmul;
}

/* Feed len bytes to a digest in pieces EVP can take. */
static int digest_update(EVP_MD_CTX *ctx, const void *p, size_t len)
{
	const unsigned char *c = p;

	while (len > 0) {
		size_t n = len < EVP_CHUNK ? len : EVP_CHUNK;

		if (!EVP_DigestUpdate(ctx, c, n))
			return -EIO;
		c += n;
		len -= n;
	}
	return 0;
}

int crypto_sha256(const void *a, size_t alen, const void *b, size_t blen,
		  uint8_t out[CRYPTO_HASH_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx;
	int r;

	if ((!a && alen) || (!b && blen))
		return -EINVAL;
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -ENOMEM;
	r = -EIO;
	if (!EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
		goto out_free_ctx;
	r = digest_update(ctx, a, alen);
	if (r)
		goto out_free_ctx;
	r = digest_update(ctx, b, blen);
	if (r)
		goto out_free_ctx;
	r = -EIO;
	if (!EVP_DigestFinal_ex(ctx, md, &mdlen) || mdlen != CRYPTO_HASH_LEN)
		goto out_free_ctx;
	memcpy(out, md, CRYPTO_HASH_LEN);
	r = 0;
out_free_ctx:
	EVP_MD_CTX_free(ctx);
	return r;
}

/*
 * One HKDF-SHA256 step (mode EXTRACT_ONLY or EXPAND_ONLY) into out. key is
 * the IKM for extract and the PRK for expand; extra is the salt for extract
 * and the info for expand. An empty salt or info is left out, which OpenSSL
 * treats as the RFC's default (HashLen zero bytes, or no info).
 */
static int hkdf(int mode, const uint8_t *key, size_t keylen,
		const uint8_t *extra, size_t extralen, uint8_t *out,
		size_t outlen)
{
	/* OpenSSL wants a key parameter even when the IKM is empty */
	static const uint8_t empty[1];
	OSSL_PARAM params[5], *p = params;
	EVP_KDF_CTX *kctx;
	EVP_KDF *kdf;
	int r;

	kdf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_HKDF, NULL);
	if (!kdf)
		return -EOPNOTSUPP;
	kctx = EVP_KDF_CTX_new(kdf);
	if (!kctx) {
		r = -ENOMEM;
		goto out_free_kdf;
	}
	*p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
						(char *)"SHA256", 0);
	*p++ = OSSL_PARAM_construct_octet_string(
		OSSL_KDF_PARAM_KEY, (void *)(keylen ? key : empty), keylen);
	if (extralen)
		*p++ = OSSL_PARAM_construct_octet_string(
			mode == EVP_KDF_HKDF_MODE_EXTRACT_ONLY
				? OSSL_KDF_PARAM_SALT
				: OSSL_KDF_PARAM_INFO,
			(void *)extra, extralen);
	*p = OSSL_PARAM_construct_end();
	r = EVP_KDF_derive(kctx, out, outlen, params) == 1 ? 0 : -EIO;
	EVP_KDF_CTX_free(kctx);
out_free_kdf:
	EVP_KDF_free(kdf);
	return r;
}

int crypto_hkdf_extract(const uint8_t *salt, size_t saltlen, const uint8_t *ikm,
			size_t ikmlen, uint8_t prk[CRYPTO_HASH_LEN])
{
	uint8_t tmp[CRYPTO_HASH_LEN];
	int r;

	if ((!salt && saltlen) || (!ikm && ikmlen))
		return -EINVAL;
	r = hkdf(EVP_KDF_HKDF_MODE_EXTRACT_ONLY, ikm, ikmlen, salt, saltlen,
		 tmp, sizeof(tmp));
	if (!r)
		memcpy(prk, tmp, sizeof(tmp));
	crypto_wipe(tmp, sizeof(tmp));
	return r;
}

int crypto_hkdf_expand(const uint8_t prk[CRYPTO_HASH_LEN], const uint8_t *info,
		       size_t infolen, uint8_t *out, size_t outlen)
{
	uint8_t tmp[HKDF_MAX_OUT];
	int r;

	if (!prk || (!info && infolen) || !out || outlen > HKDF_MAX_OUT)
		return -EINVAL;
	if (outlen == 0)
		return 0;
	r = hkdf(EVP_KDF_HKDF_MODE_EXPAND_ONLY, prk, CRYPTO_HASH_LEN, info,
		 infolen, tmp, outlen);
	if (!r)
		memcpy(out, tmp, outlen);
	crypto_wipe(tmp, outlen);
	return r;
}

int crypto_x25519_public(const uint8_t priv[CRYPTO_X25519_LEN],
			 uint8_t pub[CRYPTO_X25519_LEN])
{
	uint8_t tmp[CRYPTO_X25519_LEN];
	size_t len = sizeof(tmp);
	EVP_PKEY *key;
	int r = -EIO;

	key = EVP_PKEY_new_raw_private_key_ex(NULL, "X25519", NULL, priv,
					      CRYPTO_X25519_LEN);
	if (!key)
		return -ENOMEM;
	if (EVP_PKEY_get_raw_public_key(key, tmp, &len) != 1 ||
	    len != CRYPTO_X25519_LEN)
		goto out_free_key;
	memcpy(pub, tmp, sizeof(tmp));
	r = 0;
out_free_key:
	EVP_PKEY_free(key);
	return r;
}

int crypto_x25519_keypair(uint8_t priv[CRYPTO_X25519_LEN],
			  uint8_t pub[CRYPTO_X25519_LEN])
{
	uint8_t sk[CRYPTO_X25519_LEN], pk[CRYPTO_X25519_LEN];
	int r;

	/* any 32 bytes are a private key: X25519 clamps them (RFC 7748 s5) */
	r = crypto_random(sk, sizeof(sk));
	if (r)
		goto out_wipe;
	r = crypto_x25519_public(sk, pk);
	if (r)
		goto out_wipe;
	memcpy(priv, sk, sizeof(sk));
	memcpy(pub, pk, sizeof(pk));
out_wipe:
	crypto_wipe(sk, sizeof(sk));
	return r;
}

/* True when all len bytes at p are zero, in time independent of them. */
static bool all_zero(const uint8_t *p, size_t len)
{
	uint8_t acc = 0;
	size_t i;

	for (i = 0; i < len; i++)
		acc |= p[i];
	return (((unsigned int)acc - 1) >> 8) & 1;
}

int crypto_x25519(const uint8_t priv[CRYPTO_X25519_LEN],
		  const uint8_t peer[CRYPTO_X25519_LEN],
		  uint8_t shared[CRYPTO_X25519_LEN])
{
	uint8_t tmp[CRYPTO_X25519_LEN];
	size_t len = sizeof(tmp);
	EVP_PKEY *key, *peerkey;
	EVP_PKEY_CTX *ctx;
	int r = -ENOMEM;

	key = EVP_PKEY_new_raw_private_key_ex(NULL, "X25519", NULL, priv,
					      CRYPTO_X25519_LEN);
	if (!key)
		return -ENOMEM;
	peerkey = EVP_PKEY_new_raw_public_key_ex(NULL, "X25519", NULL, peer,
						 CRYPTO_X25519_LEN);
	if (!peerkey)
		goto out_free_key;
	ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
	if (!ctx)
		goto out_free_peerkey;
	r = -EIO;
	if (EVP_PKEY_derive_init(ctx) != 1 ||
	    EVP_PKEY_derive_set_peer(ctx, peerkey) != 1)
		goto out_free_ctx;
	/*
	 * OpenSSL itself refuses an all-zero result (a low-order peer point),
	 * and that is the only way derive fails once set up: report it as a
	 * bad peer key. Check again here so that does not rest on OpenSSL.
	 */
	r = -EINVAL;
	if (EVP_PKEY_derive(ctx, tmp, &len) != 1 || len != CRYPTO_X25519_LEN ||
	    all_zero(tmp, sizeof(tmp)))
		goto out_free_ctx;
	memcpy(shared, tmp, sizeof(tmp));
	r = 0;
out_free_ctx:
	EVP_PKEY_CTX_free(ctx);
out_free_peerkey:
	EVP_PKEY_free(peerkey);
out_free_key:
	EVP_PKEY_free(key);
	crypto_wipe(tmp, sizeof(tmp));
	return r;
}

/*
 * Two EVP contexts, both keyed once: one only encrypts and one only
 * decrypts, so that each call sets just the nonce. Switching one context
 * between directions would set the key (the AES key schedule and GHASH
 * table, or the ChaCha key) again on every switch.
 */
struct crypto_aead {
	enum crypto_cipher cipher;
	EVP_CIPHER *evp;
	EVP_CIPHER_CTX *enc;
	EVP_CIPHER_CTX *dec;
};

/* Two new contexts of evp keyed with key, or -errno and none. */
static int aead_ctx_pair(EVP_CIPHER *evp, const uint8_t *key,
			 EVP_CIPHER_CTX **enc, EVP_CIPHER_CTX **dec)
{
	EVP_CIPHER_CTX *e, *d;
	int r = -ENOMEM;

	e = EVP_CIPHER_CTX_new();
	if (!e)
		return -ENOMEM;
	d = EVP_CIPHER_CTX_new();
	if (!d)
		goto out_free_e;
	r = -EIO;
	if (EVP_EncryptInit_ex(e, evp, NULL, key, NULL) != 1 ||
	    EVP_DecryptInit_ex(d, evp, NULL, key, NULL) != 1 ||
	    EVP_CIPHER_CTX_get_iv_length(e) != CRYPTO_NONCE_LEN ||
	    EVP_CIPHER_CTX_get_key_length(e) != CRYPTO_KEY_LEN)
		goto out_free_d;
	*enc = e;
	*dec = d;
	return 0;
out_free_d:
	EVP_CIPHER_CTX_free(d);
out_free_e:
	EVP_CIPHER_CTX_free(e);
	return r;
}

int crypto_aead_new(enum crypto_cipher c, const uint8_t key[CRYPTO_KEY_LEN],
		    struct crypto_aead **out)
{
	struct crypto_aead *a;
	const char *name = NULL;
	size_t i;
	int r;

	for (i = 0; i < N_CIPHERS; i++)
		if (ciphers[i].cipher == c)
			name = ciphers[i].evp;
	if (!name || !key)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->cipher = c;
	a->evp = EVP_CIPHER_fetch(NULL, name, NULL);
	if (!a->evp) {
		r = -EOPNOTSUPP;
		goto out_free_a;
	}
	r = aead_ctx_pair(a->evp, key, &a->enc, &a->dec);
	if (r)
		goto out_free_evp;
	*out = a;
	return 0;
out_free_evp:
	EVP_CIPHER_free(a->evp);
out_free_a:
	free(a);
	return r;
}

void crypto_aead_free(struct crypto_aead *a)
{
	if (!a)
		return;
	/* the providers wipe the key schedules as they free them */
	EVP_CIPHER_CTX_free(a->enc);
	EVP_CIPHER_CTX_free(a->dec);
	EVP_CIPHER_free(a->evp);
	free(a);
}

int crypto_aead_rekey(struct crypto_aead *a, const uint8_t key[CRYPTO_KEY_LEN])
{
	EVP_CIPHER_CTX *enc, *dec;
	int r;

	if (!a || !key)
		return -EINVAL;
	/* key new contexts first, so a failure leaves the old key working */
	r = aead_ctx_pair(a->evp, key, &enc, &dec);
	if (r)
		return r;
	EVP_CIPHER_CTX_free(a->enc);
	EVP_CIPHER_CTX_free(a->dec);
	a->enc = enc;
	a->dec = dec;
	return 0;
}

/*
 * Run len bytes at in through ctx into out (which may equal in), or, with
 * out NULL, take them as AAD. EVP takes int lengths, hence the pieces.
 */
static int aead_update(EVP_CIPHER_CTX *ctx, uint8_t *out, const uint8_t *in,
		       size_t len)
{
	while (len > 0) {
		int n = (int)(len < EVP_CHUNK ? len : EVP_CHUNK), outl;

		if (EVP_CipherUpdate(ctx, out, &outl, in, n) != 1 ||
		    (out && outl != n))
			return -EIO;
		if (out)
			out += n;
		in += n;
		len -= (size_t)n;
	}
	return 0;
}

static int aead_check(const struct crypto_aead *a, const uint8_t *nonce,
		      const uint8_t *aad, size_t aadlen, const uint8_t *buf,
		      size_t len, const uint8_t *tag)
{
	if (!a || !nonce || !tag || (!aad && aadlen) || (!buf && len))
		return -EINVAL;
#if SIZE_MAX > AEAD_MAX_LEN /* (a 32-bit size_t never is) */
	if ((uint64_t)len > AEAD_MAX_LEN)
		return -EMSGSIZE;
#endif
	return 0;
}

int crypto_aead_seal(struct crypto_aead *a,
		     const uint8_t nonce[CRYPTO_NONCE_LEN], const uint8_t *aad,
		     size_t aadlen, uint8_t *buf, size_t len,
		     uint8_t tag[CRYPTO_TAG_LEN])
{
	uint8_t t[CRYPTO_TAG_LEN];
	int r, outl;

	r = aead_check(a, nonce, aad, aadlen, buf, len, tag);
	if (r)
		return r;
	/* the key stays; only the nonce is set, which restarts the message */
	if (EVP_EncryptInit_ex(a->enc, NULL, NULL, NULL, nonce) != 1)
		return -EIO;
	r = aead_update(a->enc, NULL, aad, aadlen);
	if (r)
		return r;
	r = aead_update(a->enc, buf, buf, len);
	if (r)
		return r;
	if (EVP_EncryptFinal_ex(a->enc, t, &outl) != 1 ||
	    EVP_CIPHER_CTX_ctrl(a->enc, EVP_CTRL_AEAD_GET_TAG, CRYPTO_TAG_LEN,
				t) != 1)
		return -EIO;
	memcpy(tag, t, CRYPTO_TAG_LEN);
	return 0;
}

int crypto_aead_open(struct crypto_aead *a,
		     const uint8_t nonce[CRYPTO_NONCE_LEN], const uint8_t *aad,
		     size_t aadlen, uint8_t *buf, size_t len,
		     const uint8_t tag[CRYPTO_TAG_LEN])
{
	uint8_t t[CRYPTO_TAG_LEN];
	int r, outl;

	r = aead_check(a, nonce, aad, aadlen, buf, len, tag);
	if (r)
		return r;
	/* EVP wants a writable tag buffer */
	memcpy(t, tag, CRYPTO_TAG_LEN);
	if (EVP_DecryptInit_ex(a->dec, NULL, NULL, NULL, nonce) != 1 ||
	    EVP_CIPHER_CTX_ctrl(a->dec, EVP_CTRL_AEAD_SET_TAG, CRYPTO_TAG_LEN,
				t) != 1)
		return -EIO;
	r = aead_update(a->dec, NULL, aad, aadlen);
	if (r)
		return r;
	r = aead_update(a->dec, buf, buf, len);
	if (r)
		return r;
	/* Final only compares tags (in constant time): its failure is that */
	if (EVP_DecryptFinal_ex(a->dec, t, &outl) != 1)
		return -EBADMSG;
	return 0;
}

void crypto_warm(void)
{
	static const enum crypto_cipher warm[] = { CRYPTO_AES256GCM,
						   CRYPTO_CHACHA20POLY1305 };
	uint8_t priv[CRYPTO_X25519_LEN], pub[CRYPTO_X25519_LEN];
	uint8_t shared[CRYPTO_X25519_LEN], key[CRYPTO_KEY_LEN] = { 1 };
	uint8_t nonce[CRYPTO_NONCE_LEN] = { 0 }, tag[CRYPTO_TAG_LEN];
	uint8_t buf[64] = { 0 };
	unsigned i;

	if (!crypto_x25519_keypair(priv, pub))
		(void)crypto_x25519(priv, pub, shared);
	for (i = 0; i < sizeof(warm) / sizeof(warm[0]); i++) {
		struct crypto_aead *a;

		if (crypto_aead_new(warm[i], key, &a))
			continue;
		(void)crypto_aead_seal(a, nonce, NULL, 0, buf, sizeof(buf),
				       tag);
		crypto_aead_free(a);
	}
	crypto_wipe(priv, sizeof(priv));
	crypto_wipe(shared, sizeof(shared));
}
