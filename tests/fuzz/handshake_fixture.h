/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_FUZZ_HANDSHAKE_FIXTURE_H
#define LINERATE_FUZZ_HANDSHAKE_FIXTURE_H

/*
 * The fixed keys and hellos of fuzz_handshake.c, shared with
 * gen_handshake_corpus.c so that the seeds it writes are valid messages
 * for the target. Changing anything here invalidates the valid seeds:
 * run the generator again.
 *
 * An input is one mode byte and the bytes for that mode:
 *   mode = byte % FX_MODES, cipher = fx_ciphers[(byte / FX_MODES) % 3].
 */

#include <stdint.h>

#include "crypto.h"
#include "session.h"

enum fx_mode {
	FX_READ_INIT = 0, /* server: session_hs_read_init(bytes) */
	FX_READ_RESP = 1, /* client after HS_INIT: session_hs_read_resp */
	FX_OPEN_MSG = 2,  /* conn_open_msg(4-byte header, record) */
	FX_RECV_MSG = 3,  /* conn_recv_msg over a socketpair */
	FX_RECV_DATA = 4, /* conn_recv_data over a socketpair */
	FX_MODES = 5,
};

static const enum crypto_cipher fx_ciphers[3] = {
	CRYPTO_AES256GCM,
	CRYPTO_CHACHA20POLY1305,
	CRYPTO_NONE,
};

/* The token's key: any 32 bytes will do. */
static const uint8_t fx_psk[CRYPTO_KEY_LEN] = {
	0x6c, 0x69, 0x6e, 0x65, 0x72, 0x61, 0x74, 0x65, 0x20, 0x66, 0x75,
	0x7a, 0x7a, 0x20, 0x70, 0x73, 0x6b, 0x00, 0x01, 0x02, 0x03, 0x04,
	0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e,
};

/* RFC 7748 section 6.1: Alice's private key for the client's e, Bob's
 * for the server's. */
static const uint8_t fx_client_e[CRYPTO_X25519_LEN] = {
	0x77, 0x07, 0x6d, 0x0a, 0x73, 0x18, 0xa5, 0x7d, 0x3c, 0x16, 0xc1,
	0x72, 0x51, 0xb2, 0x66, 0x45, 0xdf, 0x4c, 0x2f, 0x87, 0xeb, 0xc0,
	0x99, 0x2a, 0xb1, 0x77, 0xfb, 0xa5, 0x1d, 0xb9, 0x2c, 0x2a,
};
static const uint8_t fx_server_e[CRYPTO_X25519_LEN] = {
	0x5d, 0xab, 0x08, 0x7e, 0x62, 0x4a, 0x8a, 0x4b, 0x79, 0xe1, 0x7f,
	0x8b, 0x83, 0x80, 0x0e, 0xe6, 0x6f, 0x3b, 0xb1, 0x29, 0x26, 0x18,
	0xb6, 0xfd, 0x1c, 0x2f, 0x8b, 0x27, 0xff, 0x88, 0xe0, 0xeb,
};

/* The hellos, with the preambles and headers each side sent in clear
 * (the handshake's prologue is empty). */
static const struct session_hello fx_client_hello = {
	.version = SESSION_VERSION,
	.cipher = SESSION_CIPHER_AUTO,
	.flags = SESSION_F_HAS_AES,
	.wire = { 'L', 'N', 'R', 'T', 2, 2, 0, 0, 0x20, 0, 0, 0, 0, 0, 0,
		  SESSION_HS_LEN },
};
static const struct session_hello fx_server_hello = {
	.version = SESSION_VERSION,
	.cipher = CRYPTO_CHACHA20POLY1305,
	.flags = 0,
	.wire = { 'L', 'N', 'R', 'T', 2, 2, 2, 0, 0x21, 0, 0, 0, 0, 0, 0,
		  SESSION_HS_LEN },
};

/* The receiving conn's rx key (and the sending conn's tx key). */
static const uint8_t fx_rec_key[CRYPTO_KEY_LEN] = {
	0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87, 0x78, 0x69, 0x5a,
	0x4b, 0x3c, 0x2d, 0x1e, 0x0f, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55,
	0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
};
/* The other direction's key, unused by the target but needed by conn. */
static const uint8_t fx_other_key[CRYPTO_KEY_LEN] = { 0x01 };

#endif
