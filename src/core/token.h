/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_TOKEN_H
#define LINERATE_TOKEN_H

#include <stddef.h>
#include <stdint.h>

/*
 * What a client needs to reach a linerate server and what both ends need
 * to trust each other: the port a server listens on (bench, transfers
 * and doctor alike), and the token they share (docs/SECURITY.md), from
 * which both derive the same key. Part of the engine's public face
 * (docs/ARCHITECTURE.md); implemented in session.c.
 */

/* The port of a linerate server, and of an iperf3 server (iperf3's). */
#define LR_DEFAULT_PORT 7350
#define LR_IP3_PORT	5201

#define SESSION_TOKEN_BYTES 20 /* 160 bits */
#define SESSION_TOKEN_CHARS 40 /* 32 base32 digits, 7 dashes, NUL */
#define SESSION_PSK_LEN	    32 /* the key a token stands for */

/* A fresh random token, "abcd-efgh-..." (NUL-terminated). 0 or -EIO. */
int session_token_new(char out[SESSION_TOKEN_CHARS]);

/* The pre-shared key of a token as typed: dashes, spaces and case are
 * ignored; fewer than 128 bits or a non-base32 digit is -EINVAL. */
int session_token_psk(const char *token, uint8_t psk[SESSION_PSK_LEN]);

/* Overwrite a token or its key in memory, in a way the compiler keeps. */
void session_token_wipe(void *p, size_t len);

#endif
