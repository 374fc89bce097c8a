// SPDX-License-Identifier: MIT
/*
 * XXH3-128 from libxxhash's header, built inline for AVX2. meson compiles
 * this file alone with -mavx2; digest.c calls it only when the CPU has
 * AVX2. VEX-encoded code does not pay the penalty that legacy SSE code
 * pays while the upper vector state is dirty (after OpenSSL's AVX-512
 * ciphers), and the compiler ends each function with a vzeroupper.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>

#include "digest.h"
#include "digest_impl.h"
#include "banned.h"

#define DIGEST_BUILD_OPS  digest_ops_avx2
#define DIGEST_BUILD_NAME "avx2"
#include "digest_build.h"
