// SPDX-License-Identifier: MIT
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "crypto.h"
#include "banned.h"

int crypto_random(void *buf, size_t len)
{
	if (len > 0x7fffffff)
		return -EINVAL;
	return RAND_bytes(buf, (int)len) == 1 ? 0 : -EIO;
}

int crypto_memcmp(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len);
}

const char *crypto_library_version(void)
{
	return OpenSSL_version(OPENSSL_VERSION);
}
