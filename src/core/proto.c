// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "err.h"
#include "proto.h"
#include "banned.h"

static void be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void be64(uint8_t *p, uint64_t v)
{
	be32(p, (uint32_t)(v >> 32));
	be32(p + 4, (uint32_t)v);
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}

static uint64_t rd64(const uint8_t *p)
{
	return ((uint64_t)rd32(p) << 32) | rd32(p + 4);
}

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
	n = rd32(buf + 4);
	if (n > max_body)
		return LR_ETOOBIG;
	h->type = buf[0];
	h->flags = buf[1];
	h->len = n;
	return PROTO_HDR_LEN;
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

static uint8_t *put_tlv(struct proto_buf *b, uint16_t tag, size_t n)
{
	uint8_t *q;

	if (n > 0xffff) {
		b->err = -ENOBUFS;
		return NULL;
	}
	q = reserve(b, 4 + n);
	if (!q)
		return NULL;
	be16(q, tag);
	be16(q + 2, (uint16_t)n);
	return q + 4;
}

void proto_put_u8(struct proto_buf *b, uint16_t tag, uint8_t v)
{
	uint8_t *q = put_tlv(b, tag, 1);

	if (q)
		q[0] = v;
}

void proto_put_u16(struct proto_buf *b, uint16_t tag, uint16_t v)
{
	uint8_t *q = put_tlv(b, tag, 2);

	if (q)
		be16(q, v);
}

void proto_put_u32(struct proto_buf *b, uint16_t tag, uint32_t v)
{
	uint8_t *q = put_tlv(b, tag, 4);

	if (q)
		be32(q, v);
}

void proto_put_u64(struct proto_buf *b, uint16_t tag, uint64_t v)
{
	uint8_t *q = put_tlv(b, tag, 8);

	if (q)
		be64(q, v);
}

void proto_put_bytes(struct proto_buf *b, uint16_t tag, const void *v, size_t n)
{
	uint8_t *q = put_tlv(b, tag, n);

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
	be32(b->p + b->start + 4, (uint32_t)body);
	return 0;
}

/* ---- decoding ---- */

struct tlv {
	uint16_t tag;
	uint16_t len;
	const uint8_t *v;
};

/* Returns 1 with *t filled, 0 at the end, LR_EBADMSG when truncated. */
static int tlv_next(const uint8_t *body, size_t len, size_t *off, struct tlv *t)
{
	size_t o = *off;

	if (o == len)
		return 0;
	if (len - o < 4)
		return LR_EBADMSG;
	t->tag = rd16(body + o);
	t->len = rd16(body + o + 2);
	if (len - o - 4 < t->len)
		return LR_EBADMSG;
	t->v = body + o + 4;
	*off = o + 4 + t->len;
	return 1;
}

static int get_u8(const struct tlv *t, uint8_t *v)
{
	if (t->len != 1)
		return LR_EBADMSG;
	*v = t->v[0];
	return 0;
}

static int get_u16(const struct tlv *t, uint16_t *v)
{
	if (t->len != 2)
		return LR_EBADMSG;
	*v = rd16(t->v);
	return 0;
}

static int get_u32(const struct tlv *t, uint32_t *v)
{
	if (t->len != 4)
		return LR_EBADMSG;
	*v = rd32(t->v);
	return 0;
}

static int get_u64(const struct tlv *t, uint64_t *v)
{
	if (t->len != 8)
		return LR_EBADMSG;
	*v = rd64(t->v);
	return 0;
}

/* Printable ASCII only: peer text reaches terminals and logs. */
static int get_str(const struct tlv *t, char *out, size_t cap)
{
	uint16_t i;

	if ((size_t)t->len >= cap)
		return LR_EBADMSG;
	for (i = 0; i < t->len; i++)
		if (t->v[i] < 0x20 || t->v[i] > 0x7e)
			return LR_EBADMSG;
	memcpy(out, t->v, t->len);
	out[t->len] = '\0';
	return 0;
}

static int unknown_tag(const struct tlv *t)
{
	return (t->tag & PROTO_TAG_CRITICAL) ? LR_EBADMSG : 0;
}

/* Each field may appear at most once: seen is a bitmask by field slot. */
static int once(uint32_t *seen, unsigned slot)
{
	if (*seen & (1u << slot))
		return LR_EBADMSG;
	*seen |= 1u << slot;
	return 0;
}

int proto_encode_ctrl_open(struct proto_buf *b, const struct proto_ctrl_open *m)
{
	proto_msg_begin(b, PROTO_CTRL_OPEN);
	proto_put_str(b, PROTO_T_SOFTWARE, m->software);
	proto_put_u64(b, PROTO_T_FEATURES, m->features);
	return proto_msg_end(b);
}

int proto_decode_ctrl_open(const uint8_t *body, size_t len,
			   struct proto_ctrl_open *m)
{
	size_t off = 0;
	uint32_t seen = 0;
	struct tlv t;
	int r;

	memset(m, 0, sizeof(*m));
	while ((r = tlv_next(body, len, &off, &t)) == 1) {
		switch (t.tag) {
		case PROTO_T_SOFTWARE:
			r = once(&seen, 0)
				    ?: get_str(&t, m->software,
					       sizeof(m->software));
			break;
		case PROTO_T_FEATURES:
			r = once(&seen, 1) ?: get_u64(&t, &m->features);
			break;
		default: r = unknown_tag(&t);
		}
		if (r)
			return r;
	}
	return r;
}

int proto_encode_data_open(struct proto_buf *b, const struct proto_data_open *m)
{
	proto_msg_begin(b, PROTO_DATA_OPEN);
	proto_put_bytes(b, PROTO_T_TEST_ID, m->test_id, PROTO_TEST_ID_LEN);
	proto_put_u16(b, PROTO_T_STREAM, m->stream);
	proto_put_u8(b, PROTO_T_DIR, m->dir);
	return proto_msg_end(b);
}

int proto_decode_data_open(const uint8_t *body, size_t len,
			   struct proto_data_open *m)
{
	size_t off = 0;
	uint32_t seen = 0;
	struct tlv t;
	int r;

	memset(m, 0, sizeof(*m));
	while ((r = tlv_next(body, len, &off, &t)) == 1) {
		switch (t.tag) {
		case PROTO_T_TEST_ID:
			r = once(&seen, 0);
			if (!r && t.len != PROTO_TEST_ID_LEN)
				r = LR_EBADMSG;
			if (!r)
				memcpy(m->test_id, t.v, PROTO_TEST_ID_LEN);
			break;
		case PROTO_T_STREAM:
			r = once(&seen, 1) ?: get_u16(&t, &m->stream);
			break;
		case PROTO_T_DIR:
			r = once(&seen, 2) ?: get_u8(&t, &m->dir);
			if (!r && m->dir > PROTO_DIR_S2C)
				r = LR_EBADMSG;
			break;
		default: r = unknown_tag(&t);
		}
		if (r)
			return r;
	}
	if (r)
		return r;
	if (seen != 7 || m->stream >= 2 * PROTO_MAX_STREAMS)
		return LR_EBADMSG;
	return 0;
}

int proto_encode_error(struct proto_buf *b, const struct proto_error *m)
{
	size_t n = strnlen(m->text, PROTO_MAX_TEXT);

	proto_msg_begin(b, PROTO_ERROR);
	proto_put_u32(b, PROTO_T_CODE, m->code);
	proto_put_bytes(b, PROTO_T_TEXT, m->text, n);
	return proto_msg_end(b);
}

int proto_decode_error(const uint8_t *body, size_t len, struct proto_error *m)
{
	size_t off = 0;
	uint32_t seen = 0;
	struct tlv t;
	int r;

	memset(m, 0, sizeof(*m));
	while ((r = tlv_next(body, len, &off, &t)) == 1) {
		switch (t.tag) {
		case PROTO_T_CODE:
			r = once(&seen, 0) ?: get_u32(&t, &m->code);
			break;
		case PROTO_T_TEXT:
			r = once(&seen, 1)
				    ?: get_str(&t, m->text, sizeof(m->text));
			break;
		default: r = unknown_tag(&t);
		}
		if (r)
			return r;
	}
	if (r)
		return r;
	return (seen & 1) ? 0 : LR_EBADMSG;
}

int proto_encode_test_request(struct proto_buf *b,
			      const struct proto_test_request *m)
{
	proto_msg_begin(b, PROTO_TEST_REQUEST);
	proto_put_u8(b, PROTO_T_MODE, m->mode);
	proto_put_u16(b, PROTO_T_STREAMS, m->streams);
	proto_put_u64(b, PROTO_T_DURATION_MS, m->duration_ms);
	proto_put_u64(b, PROTO_T_BYTES, m->bytes);
	proto_put_u32(b, PROTO_T_BLKSIZE, m->blksize);
	proto_put_u32(b, PROTO_T_WINDOW, m->window);
	if (m->cc[0])
		proto_put_str(b, PROTO_T_CC, m->cc);
	proto_put_u32(b, PROTO_T_MSS, m->mss);
	proto_put_u8(b, PROTO_T_ZEROCOPY, m->zerocopy);
	proto_put_u64(b, PROTO_T_OMIT_MS, m->omit_ms);
	return proto_msg_end(b);
}

int proto_decode_test_request(const uint8_t *body, size_t len,
			      struct proto_test_request *m)
{
	size_t off = 0;
	uint32_t seen = 0;
	struct tlv t;
	int r;

	memset(m, 0, sizeof(*m));
	while ((r = tlv_next(body, len, &off, &t)) == 1) {
		switch (t.tag) {
		case PROTO_T_MODE:
			r = once(&seen, 0) ?: get_u8(&t, &m->mode);
			break;
		case PROTO_T_STREAMS:
			r = once(&seen, 1) ?: get_u16(&t, &m->streams);
			break;
		case PROTO_T_DURATION_MS:
			r = once(&seen, 2) ?: get_u64(&t, &m->duration_ms);
			break;
		case PROTO_T_BYTES:
			r = once(&seen, 3) ?: get_u64(&t, &m->bytes);
			break;
		case PROTO_T_BLKSIZE:
			r = once(&seen, 4) ?: get_u32(&t, &m->blksize);
			break;
		case PROTO_T_WINDOW:
			r = once(&seen, 5) ?: get_u32(&t, &m->window);
			break;
		case PROTO_T_CC:
			r = once(&seen, 6) ?: get_str(&t, m->cc, sizeof(m->cc));
			break;
		case PROTO_T_MSS:
			r = once(&seen, 7) ?: get_u32(&t, &m->mss);
			break;
		case PROTO_T_ZEROCOPY:
			r = once(&seen, 8) ?: get_u8(&t, &m->zerocopy);
			break;
		case PROTO_T_OMIT_MS:
			r = once(&seen, 9) ?: get_u64(&t, &m->omit_ms);
			break;
		default: r = unknown_tag(&t);
		}
		if (r)
			return r;
	}
	if (r)
		return r;
	/* mode, streams, duration, bytes and blksize are required */
	if ((seen & 0x1f) != 0x1f)
		return LR_EBADMSG;
	if (m->mode > PROTO_MODE_BIDIR || m->zerocopy > PROTO_ZC_MSG)
		return LR_EBADMSG;
	if (m->streams < 1 || m->streams > PROTO_MAX_STREAMS)
		return LR_EBADMSG;
	if ((m->duration_ms == 0) == (m->bytes == 0))
		return LR_EBADMSG;
	if (m->duration_ms > PROTO_MAX_DURATION_MS ||
	    m->omit_ms > PROTO_MAX_DURATION_MS)
		return LR_EBADMSG;
	if (m->blksize < 1 || m->blksize > PROTO_MAX_BLKSIZE)
		return LR_EBADMSG;
	if (m->window > PROTO_MAX_WINDOW || m->mss > 65535)
		return LR_EBADMSG;
	return 0;
}

int proto_encode_test_accept(struct proto_buf *b,
			     const struct proto_test_accept *m)
{
	proto_msg_begin(b, PROTO_TEST_ACCEPT);
	proto_put_bytes(b, PROTO_T_TEST_ID, m->test_id, PROTO_TEST_ID_LEN);
	proto_put_str(b, PROTO_T_SOFTWARE, m->software);
	proto_put_u16(b, PROTO_T_OVERLAP, m->overlap);
	proto_put_u64(b, PROTO_T_MAX_DURATION_MS, m->max_duration_ms);
	return proto_msg_end(b);
}

int proto_decode_test_accept(const uint8_t *body, size_t len,
			     struct proto_test_accept *m)
{
	size_t off = 0;
	uint32_t seen = 0;
	struct tlv t;
	int r;

	memset(m, 0, sizeof(*m));
	while ((r = tlv_next(body, len, &off, &t)) == 1) {
		switch (t.tag) {
		case PROTO_T_TEST_ID:
			r = once(&seen, 0);
			if (!r && t.len != PROTO_TEST_ID_LEN)
				r = LR_EBADMSG;
			if (!r)
				memcpy(m->test_id, t.v, PROTO_TEST_ID_LEN);
			break;
		case PROTO_T_SOFTWARE:
			r = once(&seen, 1)
				    ?: get_str(&t, m->software,
					       sizeof(m->software));
			break;
		case PROTO_T_OVERLAP:
			r = once(&seen, 2) ?: get_u16(&t, &m->overlap);
			break;
		case PROTO_T_MAX_DURATION_MS:
			r = once(&seen, 3) ?: get_u64(&t, &m->max_duration_ms);
			break;
		default: r = unknown_tag(&t);
		}
		if (r)
			return r;
	}
	if (r)
		return r;
	return (seen & 1) ? 0 : LR_EBADMSG;
}

int proto_encode_empty(struct proto_buf *b, uint8_t type)
{
	proto_msg_begin(b, type);
	return proto_msg_end(b);
}

int proto_decode_empty(const uint8_t *body, size_t len)
{
	size_t off = 0;
	struct tlv t;
	int r;

	while ((r = tlv_next(body, len, &off, &t)) == 1)
		if ((r = unknown_tag(&t)))
			return r;
	return r;
}

int proto_encode_results(struct proto_buf *b, const struct proto_results *m)
{
	uint8_t cpu[24], sr[PROTO_STREAM_RESULT_LEN];
	uint16_t i;

	proto_msg_begin(b, PROTO_TEST_RESULTS);
	be64(cpu, m->cpu.user_us);
	be64(cpu + 8, m->cpu.sys_us);
	be64(cpu + 16, m->cpu.wall_us);
	proto_put_bytes(b, PROTO_T_CPU, cpu, sizeof(cpu));
	if (m->cc[0])
		proto_put_str(b, PROTO_T_CC, m->cc);
	proto_put_u16(b, PROTO_T_OVERLAP, m->overlap);
	for (i = 0; i < m->nstreams; i++) {
		const struct proto_stream_result *s = &m->streams[i];

		be16(sr, s->stream);
		sr[2] = s->dir;
		sr[3] = s->flags;
		be64(sr + 4, s->bytes);
		be64(sr + 12, s->duration_us);
		be32(sr + 20, s->retrans);
		be32(sr + 24, s->max_cwnd);
		be32(sr + 28, s->min_rtt);
		be32(sr + 32, s->mean_rtt);
		be32(sr + 36, s->max_rtt);
		proto_put_bytes(b, PROTO_T_STREAM_RESULT, sr, sizeof(sr));
	}
	return proto_msg_end(b);
}

int proto_decode_results(const uint8_t *body, size_t len,
			 struct proto_results *m)
{
	size_t off = 0;
	uint32_t seen = 0;
	struct tlv t;
	int r;

	m->nstreams = 0;
	m->overlap = 0;
	m->cc[0] = '\0';
	memset(&m->cpu, 0, sizeof(m->cpu));
	while ((r = tlv_next(body, len, &off, &t)) == 1) {
		switch (t.tag) {
		case PROTO_T_CPU:
			r = once(&seen, 0);
			if (!r && t.len != 24)
				r = LR_EBADMSG;
			if (!r) {
				m->cpu.user_us = rd64(t.v);
				m->cpu.sys_us = rd64(t.v + 8);
				m->cpu.wall_us = rd64(t.v + 16);
			}
			break;
		case PROTO_T_CC:
			r = once(&seen, 1) ?: get_str(&t, m->cc, sizeof(m->cc));
			break;
		case PROTO_T_OVERLAP:
			r = once(&seen, 2) ?: get_u16(&t, &m->overlap);
			break;
		case PROTO_T_STREAM_RESULT: {
			struct proto_stream_result *s;

			if (t.len != PROTO_STREAM_RESULT_LEN)
				return LR_EBADMSG;
			if (m->nstreams >= m->cap)
				return LR_ETOOBIG;
			s = &m->streams[m->nstreams++];
			s->stream = rd16(t.v);
			s->dir = t.v[2];
			s->flags = t.v[3];
			s->bytes = rd64(t.v + 4);
			s->duration_us = rd64(t.v + 12);
			s->retrans = rd32(t.v + 20);
			s->max_cwnd = rd32(t.v + 24);
			s->min_rtt = rd32(t.v + 28);
			s->mean_rtt = rd32(t.v + 32);
			s->max_rtt = rd32(t.v + 36);
			if (s->dir > PROTO_DIR_S2C ||
			    s->stream >= 2 * PROTO_MAX_STREAMS)
				return LR_EBADMSG;
			r = 0;
			break;
		}
		default: r = unknown_tag(&t);
		}
		if (r)
			return r;
	}
	if (r)
		return r;
	return (seen & 1) ? 0 : LR_EBADMSG;
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
	default: return "unknown";
	}
}
