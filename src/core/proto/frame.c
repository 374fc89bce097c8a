// SPDX-License-Identifier: MIT
/* The preamble, the message header, the buffer and the TLV writers. */
#include <errno.h>
#include <string.h>

#include "err.h"
#include "proto_int.h"
#include "banned.h"

void proto_encode_preamble(uint8_t *out, uint8_t vmin, uint8_t vmax,
			   uint8_t chosen)
{
	memcpy(out, PROTO_MAGIC, 4);
	out[4] = vmin;
	out[5] = vmax;
	out[6] = chosen;
	out[7] = 0;
}

int proto_decode_preamble(const uint8_t *buf, size_t len,
			  struct proto_preamble *p)
{
	size_t n = len < 4 ? len : 4;

	if (n && memcmp(buf, PROTO_MAGIC, n))
		return LR_ENOTLINERATE;
	if (len < PROTO_PREAMBLE_LEN)
		return LR_ENEEDMORE;
	p->vmin = buf[4];
	p->vmax = buf[5];
	p->chosen = buf[6];
	p->flags = buf[7];
	return PROTO_PREAMBLE_LEN;
}

uint8_t proto_version_choose(uint8_t amin, uint8_t amax, uint8_t bmin,
			     uint8_t bmax)
{
	uint8_t lo = amin > bmin ? amin : bmin;
	uint8_t hi = amax < bmax ? amax : bmax;

	if (lo == 0)
		lo = 1;
	return lo <= hi ? hi : 0;
}

int proto_decode_hdr(const uint8_t *buf, size_t len, size_t max_body,
		     struct proto_hdr *h)
{
	uint32_t n;

	if (len < PROTO_HDR_LEN)
		return LR_ENEEDMORE;
	if (buf[2] || buf[3])
		return LR_EBADMSG;
	n = proto__rd32(buf + 4);
	if (n > max_body)
		return LR_ETOOBIG;
	h->type = buf[0];
	h->flags = buf[1];
	h->len = n;
	return PROTO_HDR_LEN;
}

void proto_encode_hdr(uint8_t out[PROTO_HDR_LEN], const struct proto_hdr *h)
{
	out[0] = h->type;
	out[1] = h->flags;
	out[2] = 0;
	out[3] = 0;
	proto__be32(out + 4, h->len);
}

void proto_buf_init(struct proto_buf *b, uint8_t *mem, size_t cap)
{
	b->p = mem;
	b->cap = cap;
	b->len = 0;
	b->start = 0;
	b->err = 0;
}

static uint8_t *reserve(struct proto_buf *b, size_t n)
{
	uint8_t *q;

	if (b->err || n > b->cap - b->len) {
		b->err = -ENOBUFS;
		return NULL;
	}
	q = b->p + b->len;
	b->len += n;
	return q;
}

void proto_msg_begin(struct proto_buf *b, uint8_t type)
{
	uint8_t *q;

	b->start = b->len;
	q = reserve(b, PROTO_HDR_LEN);
	if (!q)
		return;
	memset(q, 0, PROTO_HDR_LEN);
	q[0] = type;
}

uint8_t *proto__put_tlv(struct proto_buf *b, uint16_t tag, size_t n)
{
	uint8_t *q;

	if (n > 0xffff) {
		b->err = -ENOBUFS;
		return NULL;
	}
	q = reserve(b, 4 + n);
	if (!q)
		return NULL;
	proto__be16(q, tag);
	proto__be16(q + 2, (uint16_t)n);
	return q + 4;
}

void proto_put_u8(struct proto_buf *b, uint16_t tag, uint8_t v)
{
	uint8_t *q = proto__put_tlv(b, tag, 1);

	if (q)
		q[0] = v;
}

void proto_put_u16(struct proto_buf *b, uint16_t tag, uint16_t v)
{
	uint8_t *q = proto__put_tlv(b, tag, 2);

	if (q)
		proto__be16(q, v);
}

void proto_put_u32(struct proto_buf *b, uint16_t tag, uint32_t v)
{
	uint8_t *q = proto__put_tlv(b, tag, 4);

	if (q)
		proto__be32(q, v);
}

void proto_put_u64(struct proto_buf *b, uint16_t tag, uint64_t v)
{
	uint8_t *q = proto__put_tlv(b, tag, 8);

	if (q)
		proto__be64(q, v);
}

void proto_put_bytes(struct proto_buf *b, uint16_t tag, const void *v, size_t n)
{
	uint8_t *q = proto__put_tlv(b, tag, n);

	if (q && n)
		memcpy(q, v, n);
}

void proto_put_str(struct proto_buf *b, uint16_t tag, const char *s)
{
	proto_put_bytes(b, tag, s, strnlen(s, 0xffff));
}

int proto_msg_end(struct proto_buf *b)
{
	size_t body;

	if (b->err)
		return b->err;
	body = b->len - b->start - PROTO_HDR_LEN;
	if (body > PROTO_MAX_BODY) {
		b->err = -ENOBUFS;
		return b->err;
	}
	proto__be32(b->p + b->start + 4, (uint32_t)body);
	return 0;
}

const char *proto_type_name(uint8_t type)
{
	switch (type) {
	case PROTO_CTRL_OPEN: return "CTRL_OPEN";
	case PROTO_DATA_OPEN: return "DATA_OPEN";
	case PROTO_ERROR: return "ERROR";
	case PROTO_TEST_REQUEST: return "TEST_REQUEST";
	case PROTO_TEST_ACCEPT: return "TEST_ACCEPT";
	case PROTO_TEST_START: return "TEST_START";
	case PROTO_TEST_STOP: return "TEST_STOP";
	case PROTO_TEST_RESULTS: return "TEST_RESULTS";
	case PROTO_HS_INIT: return "HS_INIT";
	case PROTO_HS_RESP: return "HS_RESP";
	case PROTO_XFER_REQUEST: return "XFER_REQUEST";
	case PROTO_XFER_ACCEPT: return "XFER_ACCEPT";
	case PROTO_XFER_TOTALS: return "XFER_TOTALS";
	case PROTO_XFER_FILES: return "XFER_FILES";
	case PROTO_XFER_PLAN: return "XFER_PLAN";
	case PROTO_XFER_SUMS: return "XFER_SUMS";
	case PROTO_XFER_ACKS: return "XFER_ACKS";
	case PROTO_XFER_END: return "XFER_END";
	case PROTO_XFER_DONE: return "XFER_DONE";
	case PROTO_XFER_ALIVE: return "XFER_ALIVE";
	case PROTO_PROBE_REQUEST: return "PROBE_REQUEST";
	case PROTO_PROBE_RESULT: return "PROBE_RESULT";
	default: return "unknown";
	}
}
