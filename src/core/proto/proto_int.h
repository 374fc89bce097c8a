/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_PROTO_INT_H
#define LINERATE_PROTO_INT_H

/*
 * The wire format's internal header. Only the files of src/core/proto/
 * include it (scripts/check-includes.sh checks); everyone else sees
 * ../proto.h. Helpers shared between the files of the folder carry the
 * prefix proto__.
 *
 *   frame.c       the preamble, the message header, the buffer and the
 *                 TLV writers, the names of the message types
 *   tlv.c         the TLV reader: one table per message (struct
 *                 proto__field) read by one loop, proto__decode
 *   session_msg.c CTRL_OPEN, DATA_OPEN, ERROR and the empty messages
 *   bench_msg.c   TEST_REQUEST, TEST_ACCEPT, TEST_RESULTS
 *   udp_msg.c     the UDP hello datagram
 *   xfer_msg.c    the transfer's messages: REQUEST, ACCEPT, TOTALS, DONE
 *   xfer_item.c   the transfer's batch items (entries, plans, held
 *                 chunks, sums, acks, failures, waits) and the chunk
 *                 record's header
 *   probe_msg.c   PROBE_REQUEST and PROBE_RESULT (doctor)
 */

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* ---- big-endian bytes ---- */

static inline void proto__be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void proto__be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void proto__be64(uint8_t *p, uint64_t v)
{
	proto__be32(p, (uint32_t)(v >> 32));
	proto__be32(p + 4, (uint32_t)v);
}

static inline uint16_t proto__rd16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static inline uint32_t proto__rd32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t proto__rd64(const uint8_t *p)
{
	return ((uint64_t)proto__rd32(p) << 32) | proto__rd32(p + 4);
}

/* ---- writing (frame.c) ---- */

/* Room for a TLV of n value bytes: its value's first byte, or NULL (and
 * b->err set, sticky) when it does not fit. */
uint8_t *proto__put_tlv(struct proto_buf *b, uint16_t tag, size_t n);
/* A TLV for a batch item (xfer_item.c): NULL and -ENOBUFS (sticky) past
 * PROTO_MAX_BODY. */
uint8_t *proto__put_item(struct proto_buf *b, uint16_t tag, size_t n);

/* ---- reading (tlv.c) ---- */

struct proto__tlv {
	uint16_t tag;
	uint16_t len;
	const uint8_t *v;
};

/* 1 with *t filled, 0 at the end of the body, LR_EBADMSG when the TLV
 * at *off is truncated. */
int proto__tlv_next(const uint8_t *body, size_t len, size_t *off,
		    struct proto__tlv *t);

/* Printable ASCII of fewer than cap bytes into out, NUL-terminated: peer
 * text reaches terminals and logs. 0 or LR_EBADMSG. */
int proto__get_str(const struct proto__tlv *t, char *out, size_t cap);

enum proto__kind {
	PROTO__U8 = 1, /* exactly 1, 2, 4 or 8 bytes, big-endian */
	PROTO__U16,
	PROTO__U32,
	PROTO__U64,
	PROTO__STR,   /* printable ASCII, shorter than the member */
	PROTO__BYTES, /* exactly len bytes, copied */
	PROTO__FN,    /* handed to fn (exactly len bytes unless len is 0) */
};

enum proto__flag {
	PROTO__REQUIRED = 1u << 0, /* the message is malformed without it */
	PROTO__MANY = 1u << 1,	   /* may repeat (PROTO__FN only) */
};

/*
 * One field of a message: its tag, how its value is read and where it
 * goes in the message's struct. A field that is not PROTO__MANY may
 * appear once; an unknown tag is skipped unless critical.
 */
struct proto__field {
	uint16_t tag;
	uint8_t kind;
	uint8_t flags;
	uint16_t len; /* PROTO__STR: the member's size; BYTES, FN: exact */
	size_t off;   /* offsetof the member */
	int (*fn)(void *msg, const struct proto__tlv *t);
};

#define PROTO__MAX_FIELDS 32u

/*
 * Reads body against the table fields[0..n) into msg (which the caller
 * has cleared). 0, LR_EBADMSG (truncated, a field twice or of the wrong
 * length, a critical unknown tag, a required field missing) or what a
 * PROTO__FN field's function returned.
 */
int proto__decode(const uint8_t *body, size_t len,
		  const struct proto__field *fields, unsigned n, void *msg);

/* The offset of member m of type T, which must be n bytes: a table entry
 * that names a member of the wrong size does not compile. */
#define PROTO__OFF(T, m, n) \
	(offsetof(T, m) + 0 * sizeof(char[sizeof(((T *)0)->m) == (n) ? 1 : -1]))

#define PROTO__NUM(tag, kind, n, T, m, fl)                        \
	{                                                         \
		(tag), (kind), (fl), 0, PROTO__OFF(T, m, n), NULL \
	}
#define PROTO__F_U8(tag, T, m, fl)  PROTO__NUM(tag, PROTO__U8, 1, T, m, fl)
#define PROTO__F_U16(tag, T, m, fl) PROTO__NUM(tag, PROTO__U16, 2, T, m, fl)
#define PROTO__F_U32(tag, T, m, fl) PROTO__NUM(tag, PROTO__U32, 4, T, m, fl)
#define PROTO__F_U64(tag, T, m, fl) PROTO__NUM(tag, PROTO__U64, 8, T, m, fl)
#define PROTO__F_STR(tag, T, m, fl)                                     \
	{                                                               \
		(tag), PROTO__STR, (fl), (uint16_t)sizeof(((T *)0)->m), \
			offsetof(T, m), NULL                            \
	}
#define PROTO__F_BYTES(tag, T, m, n, fl)                                  \
	{                                                                 \
		(tag), PROTO__BYTES, (fl), (n), PROTO__OFF(T, m, n), NULL \
	}
#define PROTO__F_FN(tag, fn, n, fl)                  \
	{                                            \
		(tag), PROTO__FN, (fl), (n), 0, (fn) \
	}

#define PROTO__NFIELDS(a) ((unsigned)(sizeof(a) / sizeof((a)[0])))

/* ---- the transfer's wait times, an item and a field (xfer_item.c) ---- */

#define PROTO__WAIT_LEN 24u
void proto__wait_encode(uint8_t *out, const struct proto_xfer_wait *w);
void proto__wait_decode(const uint8_t *in, struct proto_xfer_wait *w);

#endif
