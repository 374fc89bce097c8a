/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_CONN_H
#define LINERATE_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "err.h"
#include "proto.h"

/*
 * One TCP connection after its handshake: control messages and data in
 * AEAD records (docs/PROTOCOL.md section 6), or in clear when the
 * connection is not secure (no token) or carries data with cipher none.
 *
 * A record: type:u8 length:u24 (big-endian), then length bytes of
 * ciphertext and a 16-byte tag. The 4 header bytes are the AEAD's
 * associated data; the nonce is 4 zero bytes and the record's sequence
 * number (u64, big-endian), so a record dropped, repeated or reordered
 * fails to open, and keys are per connection and direction, so a record
 * moved to another stream fails too. A stream ends with an END record;
 * end of file before it is an error.
 */

#define CONN_REC_HDR	   4
#define CONN_REC_MAX	   ((1u << 24) - 1)
#define CONN_REKEY_RECORDS (1ull << 24)
#define CONN_REKEY_BYTES   (1ull << 36)

enum conn_rec_type {
	CONN_REC_CTRL = 1, /* one control message */
	CONN_REC_DATA = 2,
	CONN_REC_END = 3, /* empty: the sender is done */
};

struct conn_dir {
	struct crypto_aead *aead;
	uint8_t key[CRYPTO_KEY_LEN];
	uint64_t seq;	/* records under this key */
	uint64_t bytes; /* plaintext bytes under this key */
};

struct conn {
	int fd;
	bool secure;		   /* control travels in records */
	enum crypto_cipher cipher; /* data: CRYPTO_NONE = in clear */
	struct conn_dir tx, rx;
	uint64_t rekey_records,
		rekey_bytes;	   /* CONN_REKEY_*; tests lower them */
	const _Atomic bool *abort; /* give up blocking data I/O */
	/* with timing, conn_send_data / conn_recv_data add the time they
	 * spend in the cipher and in socket calls (for the bottleneck) */
	bool timing;
	uint64_t cipher_ns, io_ns;
};

/* A connection without records (no token). */
void conn_init_plain(struct conn *c, int fd);
/* Records under keys from the handshake; data in clear when cipher is
 * CRYPTO_NONE (control then uses ChaCha20-Poly1305). */
int conn_init_secure(struct conn *c, int fd, enum crypto_cipher cipher,
		     const uint8_t tx[CRYPTO_KEY_LEN],
		     const uint8_t rx[CRYPTO_KEY_LEN]);
/* Free the AEAD contexts and wipe keys; leaves fd open. */
void conn_fini(struct conn *c);
/* Whether data is carried in records. */
bool conn_data_sealed(const struct conn *c);

/* Send one encoded control message (header and body). */
int conn_send_msg(struct conn *c, uint8_t *msg, size_t len,
		  int64_t deadline_ms);
/*
 * Receive one control message: its body into buf (cap bytes) and its
 * header into *h. buf needs PROTO_HDR_LEN + CRYPTO_TAG_LEN bytes of room
 * beyond the body when the connection is secure. Returns 0 or
 * an error with err filled; LR_ERECORD when a record fails to open.
 */
int conn_recv_msg(struct conn *c, uint8_t *buf, size_t cap, struct proto_hdr *h,
		  int64_t deadline_ms, struct lr_err *err);

/* Open a control record already in memory: hdr, then rec holding len
 * bytes of ciphertext and the tag. On success rec holds the message
 * (header and body) and *h its header. */
int conn_open_msg(struct conn *c, const uint8_t hdr[CONN_REC_HDR], uint8_t *rec,
		  size_t len, struct proto_hdr *h, struct lr_err *err);

/*
 * Data records on a blocking socket with send/receive timeouts: the calls
 * retry on timeouts until done or *abort. When the data is not sealed
 * (cipher none, or no token) the records carry no tag and are not
 * encrypted: their integrity is the caller's (chunk digests). conn_send_data seals buf in place
 * (buf is ciphertext afterwards). conn_recv_data opens the next record into
 * buf and returns its type and length; LR_EFRAME when its type is not a
 * data record's or its length does not fit cap (found before the cipher),
 * LR_ERECORD when it fails to open, LR_ETRUNC when the stream ends without
 * an END record, -ECANCELED on abort.
 */
int conn_send_data(struct conn *c, uint8_t type, uint8_t *buf, size_t len);
int conn_recv_data(struct conn *c, uint8_t *buf, size_t cap, uint8_t *type,
		   size_t *len);
/*
 * After a stream's END record: wait for its end of file, at most
 * timeout_ms. Nothing may follow END (docs/PROTOCOL.md section 6): a byte
 * after it is LR_EFRAME; LR_ETIMEOUT when the peer neither closes nor
 * sends; -ECANCELED on abort; a reset is -ECONNRESET.
 */
int conn_recv_eof(struct conn *c, int64_t timeout_ms);

struct session_hello;

/*
 * Client side of a connection's opening: our preamble, the handshake when
 * psk is set (wish: the cipher asked for, or SESSION_CIPHER_AUTO), the
 * server's preamble and answer. On success *c is ready for messages and
 * c->cipher holds the cipher the server chose (CRYPTO_NONE without psk).
 * where names the server in messages. LR_EAUTH: wrong or missing token.
 */
int conn_client_open(int fd, const uint8_t *psk, uint8_t wish,
		     const char *where, int64_t deadline_ms, struct conn *c,
		     struct lr_err *err);

#endif
