/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_RELAY_H
#define LINERATE_RELAY_H

/*
 * TCP connections carried through one byte stream (docs/PROTOCOL.md §11,
 * "Through ssh"): when the far end's port cannot be reached directly, the
 * near end listens on loopback and every connection accepted there
 * becomes a channel of the ssh session's standard input and output; the
 * far end connects each channel to its own listening port. Both ends run
 * the same relay. Each frame is
 *
 *   type (1 byte), 3 zero bytes, channel (u32 BE), length (u32 BE)
 *
 * and a DATA frame's length bytes follow. A side sends a channel's data
 * only as far as the other has room for it (CREDIT frames grant room as
 * it drains, and more of it to a channel that keeps up), so one slow
 * connection never stops the others. What
 * travels is linerate's own sealed records: the relay adds no secrecy
 * and needs none.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RELAY_HDR	12
#define RELAY_FRAME_MAX (256u * 1024) /* a DATA frame's payload */
/* the room for a channel's data that the other end has not written yet:
 * it starts at RELAY_WINDOW_START and, for a channel that moves a lot and
 * keeps up, doubles up to RELAY_WINDOW, while all that growth stays
 * within RELAY_BUDGET per relay */
#define RELAY_WINDOW_START (256u * 1024)
#define RELAY_WINDOW	   (16u * 1024 * 1024)
#define RELAY_BUDGET	   (64u * 1024 * 1024)
#define RELAY_MAX_CHANNELS 300u /* open at once: a session's streams */
#define RELAY_LINE	   "LINERATE-RELAY 1\n" /* what starts the frames */

enum relay_frame {
	RELAY_OPEN = 1, /* near -> far: a new connection on this channel */
	RELAY_DATA = 2,
	RELAY_EOF = 3,	  /* the sender's connection will send no more */
	RELAY_CLOSE = 4,  /* the connection failed: reset it */
	RELAY_CREDIT = 5, /* length = bytes of room granted */
};

struct relay_opts {
	int in;	 /* frames come from here */
	int out; /* and go here */
	/* the near end: channels are accepted on a loopback port
	 * (relay_port); else the far end: each connects to addr:port */
	bool near;
	const char *addr; /* numeric */
	uint16_t port;
	/* bytes already read from in (they come first) */
	const uint8_t *pre;
	size_t pre_len;
};

struct relay;

/* A relay over o's descriptors (the caller keeps them, made
 * non-blocking here). 0 or -errno. */
int relay_new(const struct relay_opts *o, struct relay **out);

/* The near end's loopback port, and its address ("127.0.0.1" or "::1"). */
uint16_t relay_port(const struct relay *r);
const char *relay_addr(const struct relay *r);

/*
 * Carry the channels until in ends, relay_stop is called, or the other
 * end breaks the framing (-EPROTO); every channel is then reset. Runs in
 * the caller's thread (one thread per relay). 0 or -errno.
 */
int relay_run(struct relay *r);

/* Ask relay_run to return. Any thread; async-signal-safe. */
void relay_stop(struct relay *r);

/* Wait up to timeout_ms until every channel's connection has said all
 * it had (read to its end) and it has left: true when so, or when
 * relay_run has returned. Any thread. */
bool relay_wait_flushed(struct relay *r, int timeout_ms);

/* Wait up to timeout_ms for relay_run to return: true when it has. */
bool relay_wait_done(struct relay *r, int timeout_ms);

/* What it carried: bytes in DATA frames each way. */
void relay_counts(struct relay *r, uint64_t *sent, uint64_t *received);

/* Once relay_run has returned (or was never called). NULL is ok. */
void relay_free(struct relay *r);

/* Encode one frame's header (buf: RELAY_HDR bytes). */
void relay_hdr_encode(uint8_t *buf, uint8_t type, uint32_t chan, uint32_t len);

/* Decode and check one (len bounded by RELAY_FRAME_MAX for DATA, zero
 * for OPEN, EOF and CLOSE, 1..RELAY_WINDOW for CREDIT). 0 or -EPROTO. */
int relay_hdr_decode(const uint8_t *buf, uint8_t *type, uint32_t *chan,
		     uint32_t *len);

#endif
