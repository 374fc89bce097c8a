/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_CRYPTO_H
#define LINERATE_CRYPTO_H

#include <stddef.h>

/* The only module that includes OpenSSL. */

/* Fill buf with len bytes from the OS-seeded CSPRNG. 0 or -EIO. */
int crypto_random(void *buf, size_t len);

/* Constant-time comparison: 0 when equal. */
int crypto_memcmp(const void *a, const void *b, size_t len);

/* OpenSSL's version text, e.g. "OpenSSL 3.0.15 3 Sep 2024". */
const char *crypto_library_version(void);

#endif
