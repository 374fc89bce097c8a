/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_CIPHER_H
#define LINERATE_CIPHER_H

/*
 * The ciphers by name, as the command line and the reports name them: the
 * part of crypto.[ch] outside the engine may see (docs/ARCHITECTURE.md).
 */

enum crypto_cipher {
	CRYPTO_NONE = 0,
	CRYPTO_AES256GCM = 1,
	CRYPTO_CHACHA20POLY1305 = 2,
};

/* A client's wish: let the server pick (by both CPUs). */
#define CRYPTO_CIPHER_AUTO 0xff

/* "aes-256-gcm", "chacha20-poly1305", "none". */
const char *crypto_cipher_name(enum crypto_cipher c);

/* Parse a cipher name (as printed by crypto_cipher_name); -EINVAL. */
int crypto_cipher_parse(const char *s, enum crypto_cipher *out);

/* OpenSSL's version text, e.g. "OpenSSL 3.0.15 3 Sep 2024". */
const char *crypto_library_version(void);

#endif
