/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_SESSION_H
#define LINERATE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "token.h"

/*
 * The token and the handshake (docs/PROTOCOL.md section 5): the Noise
 * pattern NNpsk0 with X25519, ChaCha20-Poly1305 and SHA-256, the token's
 * key as the pre-shared key.
 *
 *   -> psk, e      HS_INIT:  e.pub (32) || AEAD(client hello)
 *   <- e, ee       HS_RESP:  e.pub (32) || AEAD(server hello)
 *
 * A peer without the token cannot produce HS_INIT's tag (the server checks
 * it before doing anything else) nor read or forge HS_RESP; both ends get
 * transport keys that depend on both ephemeral keys (forward secrecy), the
 * token and the whole transcript.
 */

#define SESSION_VERSION	  2  /* the protocol version a hello speaks */
#define SESSION_WIRE_LEN  16 /* a preamble and a message header */
#define SESSION_HELLO_LEN (3 + SESSION_WIRE_LEN) /* both hellos' size */
#define SESSION_HS_LEN	  (CRYPTO_X25519_LEN + SESSION_HELLO_LEN + CRYPTO_TAG_LEN)

/* The tokens (session_token_new, session_token_psk): token.h. */
_Static_assert(SESSION_PSK_LEN == CRYPTO_KEY_LEN, "a token's key is a key");

/*
 * What each side says in its (encrypted) hello. wire holds the bytes this
 * side sent in clear before the hello: its 8-byte preamble and the 8-byte
 * header of the handshake message carrying the hello. The peer compares
 * them with what it received, so a preamble or header changed in transit
 * is found (docs/PROTOCOL.md section 5).
 */
struct session_hello {
	uint8_t version; /* SESSION_VERSION */
	uint8_t cipher;	 /* client: wish (SESSION_CIPHER_*), server: chosen */
	uint8_t flags;	 /* SESSION_F_* */
	uint8_t wire[SESSION_WIRE_LEN];
};
#define SESSION_CIPHER_AUTO    CRYPTO_CIPHER_AUTO /* let the server pick */
#define SESSION_CIPHER_REFUSED 0xfe /* server: --cipher none not allowed */
#define SESSION_F_HAS_AES      0x01 /* this CPU has AES instructions */

struct session_hs {
	uint8_t h[CRYPTO_HASH_LEN];
	uint8_t ck[CRYPTO_HASH_LEN];
	uint8_t k[CRYPTO_KEY_LEN];
	uint64_t n;
	uint8_t e_priv[CRYPTO_X25519_LEN];
	uint8_t e_pub[CRYPTO_X25519_LEN];
	uint8_t re[CRYPTO_X25519_LEN]; /* the peer's ephemeral key */
	bool fixed_e; /* tests: e set by session_hs_set_ephemeral */
};

/* Begin: psk and the prologue (linerate's is empty: the bytes sent in
 * clear travel in the hellos' wire instead, where a change is told apart
 * from a wrong token). */
int session_hs_init(struct session_hs *hs, const uint8_t psk[CRYPTO_KEY_LEN],
		    const uint8_t *prologue, size_t plen);
/* Tests only: use priv as the ephemeral key instead of a random one. */
int session_hs_set_ephemeral(struct session_hs *hs,
			     const uint8_t priv[CRYPTO_X25519_LEN]);

/* Client: write HS_INIT's body (SESSION_HS_LEN bytes) into out. */
int session_hs_write_init(struct session_hs *hs, const struct session_hello *me,
			  uint8_t out[SESSION_HS_LEN]);
/* Server: check HS_INIT's body; -EACCES when the tag does not verify (a
 * wrong token), -EINVAL for a malformed hello. */
int session_hs_read_init(struct session_hs *hs, const uint8_t *in, size_t len,
			 struct session_hello *peer);
/* Server: write HS_RESP's body. */
int session_hs_write_resp(struct session_hs *hs, const struct session_hello *me,
			  uint8_t out[SESSION_HS_LEN]);
/* Client: check HS_RESP's body; -EACCES when it does not verify. */
int session_hs_read_resp(struct session_hs *hs, const uint8_t *in, size_t len,
			 struct session_hello *peer);
/* Both: the transport keys, client-to-server and server-to-client. Wipes
 * the handshake state. */
int session_hs_split(struct session_hs *hs, uint8_t c2s[CRYPTO_KEY_LEN],
		     uint8_t s2c[CRYPTO_KEY_LEN]);
/* Wipe the state (after a failure). */
void session_hs_wipe(struct session_hs *hs);

/* Whether a peer's hello names the preamble and the handshake message
 * header (SESSION_WIRE_LEN bytes together) exactly as received. */
bool session_hello_wire_ok(const struct session_hello *h,
			   const uint8_t *preamble, const uint8_t *hdr);

/* The cipher the server picks for a client's wish: the wish when it is a
 * cipher; for auto, AES-256-GCM when both CPUs have AES instructions and
 * ChaCha20-Poly1305 otherwise. */
enum crypto_cipher session_pick_cipher(uint8_t wish, bool client_aes,
				       bool server_aes);

#endif
