/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_BANNED_H
#define LINERATE_BANNED_H
/*
 * Functions that are easy to misuse: unbounded copies, hidden static state,
 * unchecked number parsing. Including this header makes any use a compile
 * error. Use snprintf, memcpy with a checked length, strtok_r-free parsing
 * and units_parse_* instead.
 */
#define BANNED(func) sorry_##func##_is_banned
#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) BANNED(strncat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef atol
#define atol(x) BANNED(atol)
#undef atoll
#define atoll(x) BANNED(atoll)
#undef atof
#define atof(x) BANNED(atof)
#undef gets
#define gets(x) BANNED(gets)
#undef strerror
#define strerror(x) BANNED(strerror)
#endif
