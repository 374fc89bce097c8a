/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_FUZZ_CHECK_H
#define LINERATE_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

/*
 * The fuzz targets' invariant check: a failed CHECK prints the file, line
 * and condition and aborts, which libFuzzer reports as a crash with the
 * input that caused it.
 */
static inline void fuzz_check_failed(const char *file, int line,
				     const char *what)
{
	fprintf(stderr, "%s:%d: invariant failed: %s\n", file, line, what);
	abort();
}

#define CHECK(c)                                                   \
	do {                                                       \
		if (!(c))                                          \
			fuzz_check_failed(__FILE__, __LINE__, #c); \
	} while (0)

#endif
