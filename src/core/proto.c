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
	if (m->rate_bps)
		proto_put_u64(b, PROTO_T_RATE, m->rate_bps);
	if (m->udp)
		proto_put_u8(b, PROTO_T_UDP, m->udp);
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
		case PROTO_T_RATE:
			r = once(&seen, 10) ?: get_u64(&t, &m->rate_bps);
			break;
		case PROTO_T_UDP:
			r = once(&seen, 11) ?: get_u8(&t, &m->udp);
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
	if (m->mode > PROTO_MODE_BIDIR || m->zerocopy > PROTO_ZC_MSG ||
	    m->udp > 1)
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

void proto_encode_udp_hello(uint8_t out[PROTO_UDP_HELLO_LEN],
			    const struct proto_data_open *d, bool ack)
{
	memcpy(out, ack ? "LRUA" : "LRUH", 4);
	memcpy(out + 4, d->test_id, PROTO_TEST_ID_LEN);
	be16(out + 4 + PROTO_TEST_ID_LEN, d->stream);
	out[6 + PROTO_TEST_ID_LEN] = d->dir;
}

int proto_decode_udp_hello(const uint8_t *buf, size_t len, bool ack,
			   struct proto_data_open *d)
{
	if (len != PROTO_UDP_HELLO_LEN ||
	    memcmp(buf, ack ? "LRUA" : "LRUH", 4) ||
	    buf[6 + PROTO_TEST_ID_LEN] > PROTO_DIR_S2C ||
	    rd16(buf + 4 + PROTO_TEST_ID_LEN) >= 2 * PROTO_MAX_STREAMS)
		return LR_EBADMSG;
	memcpy(d->test_id, buf + 4, PROTO_TEST_ID_LEN);
	d->stream = rd16(buf + 4 + PROTO_TEST_ID_LEN);
	d->dir = buf[6 + PROTO_TEST_ID_LEN];
	return 0;
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
		if (s->udp) {
			uint8_t ur[PROTO_UDP_RESULT_LEN] = { 0 };

			be16(ur, s->stream);
			ur[2] = s->dir;
			be64(ur + 4, s->packets);
			be64(ur + 12, s->lost);
			be64(ur + 20, s->ooo);
			be64(ur + 28, s->dup);
			be64(ur + 36, s->jitter_ns);
			proto_put_bytes(b, PROTO_T_UDP_RESULT, ur, sizeof(ur));
		}
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
			s->udp = false;
			s->packets = s->lost = s->ooo = s->dup = 0;
			s->jitter_ns = 0;
			if (s->dir > PROTO_DIR_S2C ||
			    s->stream >= 2 * PROTO_MAX_STREAMS)
				return LR_EBADMSG;
			r = 0;
			break;
		}
		case PROTO_T_UDP_RESULT: {
			struct proto_stream_result *s;

			/* belongs to the stream result just before it */
			if (t.len != PROTO_UDP_RESULT_LEN || !m->nstreams)
				return LR_EBADMSG;
			s = &m->streams[m->nstreams - 1];
			if (s->udp || rd16(t.v) != s->stream ||
			    t.v[2] != s->dir)
				return LR_EBADMSG;
			s->udp = true;
			s->packets = rd64(t.v + 4);
			s->lost = rd64(t.v + 12);
			s->ooo = rd64(t.v + 20);
			s->dup = rd64(t.v + 28);
			s->jitter_ns = rd64(t.v + 36);
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

/* ---- file transfer ---- */

#define XF_ALL                                                      \
	(PROTO_XF_OVERWRITE | PROTO_XF_UPDATE | PROTO_XF_NO_FSYNC | \
	 PROTO_XF_KEEP_SETID | PROTO_XF_STDOUT | PROTO_XF_SCRATCH)
#define XE_ALL	       (PROTO_XE_SPARSE)
#define XFER_WAIT_LEN  24u
#define XFER_MAX_DEPTH 256u /* components, as fsio_path_check */

/*
 * A path of XFER_REQUEST: components of 1..PROTO_XFER_MAX_NAME bytes
 * separated by single '/', none "." or "..", no NUL or control character.
 * "" is accepted only when empty_ok (the root, as a push destination).
 * The receiver checks again with fsio_path_check; this refuses a bad
 * request before it reaches the file system code.
 */
static bool xfer_path_ok(const uint8_t *p, size_t len, bool empty_ok)
{
	size_t i, start = 0, depth = 0;

	if (len == 0)
		return empty_ok;
	if (len > PROTO_XFER_MAX_PATH)
		return false;
	for (i = 0; i <= len; i++) {
		size_t n;

		if (i < len && p[i] != '/') {
			if (p[i] < 0x20 || p[i] == 0x7f)
				return false;
			continue;
		}
		n = i - start;
		if (n == 0 || n > PROTO_XFER_MAX_NAME)
			return false;
		if (p[start] == '.' &&
		    (n == 1 || (n == 2 && p[start + 1] == '.')))
			return false;
		if (++depth > XFER_MAX_DEPTH)
			return false;
		start = i + 1;
	}
	return true;
}

static int get_id(const struct tlv *t, uint8_t *id)
{
	if (t->len != PROTO_TEST_ID_LEN)
		return LR_EBADMSG;
	memcpy(id, t->v, PROTO_TEST_ID_LEN);
	return 0;
}

static bool chunk_size_ok(uint32_t n)
{
	return n >= PROTO_XFER_MIN_CHUNK && n <= PROTO_XFER_MAX_CHUNK;
}

int proto_encode_xfer_request(struct proto_buf *b,
			      const struct proto_xfer_request *m)
{
	unsigned i;

	proto_msg_begin(b, PROTO_XFER_REQUEST);
	proto_put_u8(b, PROTO_T_OP, m->op);
	proto_put_u16(b, PROTO_T_STREAMS, m->streams);
	proto_put_u32(b, PROTO_T_CHUNK_SIZE, m->chunk_size);
	proto_put_u32(b, PROTO_T_XFLAGS, m->flags);
	proto_put_u64(b, PROTO_T_RATE, m->rate);
	for (i = 0; i < m->npaths && i < PROTO_XFER_MAX_PATHS; i++)
		proto_put_bytes(b, PROTO_T_PATH, m->paths[i], m->path_lens[i]);
	return proto_msg_end(b);
}

int proto_decode_xfer_request(const uint8_t *body, size_t len,
			      struct proto_xfer_request *m)
{
	size_t off = 0;
	uint32_t seen = 0;
	struct tlv t;
	unsigned i;
	int r;

	memset(m, 0, sizeof(*m));
	while ((r = tlv_next(body, len, &off, &t)) == 1) {
		switch (t.tag) {
		case PROTO_T_OP:
			r = once(&seen, 0) ?: get_u8(&t, &m->op);
			break;
		case PROTO_T_STREAMS:
			r = once(&seen, 1) ?: get_u16(&t, &m->streams);
			break;
		case PROTO_T_CHUNK_SIZE:
			r = once(&seen, 2) ?: get_u32(&t, &m->chunk_size);
			break;
		case PROTO_T_XFLAGS:
			r = once(&seen, 3) ?: get_u32(&t, &m->flags);
			break;
		case PROTO_T_RATE:
			r = once(&seen, 4) ?: get_u64(&t, &m->rate);
			break;
		case PROTO_T_PATH:
			if (m->npaths >= PROTO_XFER_MAX_PATHS ||
			    t.len > PROTO_XFER_MAX_PATH)
				return LR_EBADMSG;
			m->paths[m->npaths] = (const char *)t.v;
			m->path_lens[m->npaths] = t.len;
			m->npaths++;
			r = 0;
			break;
		default: r = unknown_tag(&t);
		}
		if (r)
			return r;
	}
	if (r)
		return r;
	/* op and streams are required */
	if ((seen & 3) != 3)
		return LR_EBADMSG;
	if (m->op != PROTO_XFER_PUSH && m->op != PROTO_XFER_PULL)
		return LR_EBADMSG;
	if (m->streams < 1 || m->streams > PROTO_MAX_STREAMS)
		return LR_EBADMSG;
	if (m->chunk_size && !chunk_size_ok(m->chunk_size))
		return LR_EBADMSG;
	if (m->flags & ~(uint32_t)XF_ALL)
		return LR_EBADMSG;
	if (m->npaths < 1 || (m->op == PROTO_XFER_PUSH && m->npaths != 1))
		return LR_EBADMSG;
	for (i = 0; i < m->npaths; i++)
		if (!xfer_path_ok((const uint8_t *)m->paths[i], m->path_lens[i],
				  m->op == PROTO_XFER_PUSH))
			return LR_EBADMSG;
	return 0;
}

int proto_encode_xfer_accept(struct proto_buf *b,
			     const struct proto_xfer_accept *m)
{
	proto_msg_begin(b, PROTO_XFER_ACCEPT);
	proto_put_bytes(b, PROTO_T_TEST_ID, m->session_id, PROTO_TEST_ID_LEN);
	proto_put_str(b, PROTO_T_SOFTWARE, m->software);
	proto_put_u16(b, PROTO_T_STREAMS, m->streams);
	proto_put_u32(b, PROTO_T_CHUNK_SIZE, m->chunk_size);
	return proto_msg_end(b);
}

int proto_decode_xfer_accept(const uint8_t *body, size_t len,
			     struct proto_xfer_accept *m)
{
	size_t off = 0;
	uint32_t seen = 0;
	struct tlv t;
	int r;

	memset(m, 0, sizeof(*m));
	while ((r = tlv_next(body, len, &off, &t)) == 1) {
		switch (t.tag) {
		case PROTO_T_TEST_ID:
			r = once(&seen, 0) ?: get_id(&t, m->session_id);
			break;
		case PROTO_T_SOFTWARE:
			r = once(&seen, 1)
				    ?: get_str(&t, m->software,
					       sizeof(m->software));
			break;
		case PROTO_T_STREAMS:
			r = once(&seen, 2) ?: get_u16(&t, &m->streams);
			break;
		case PROTO_T_CHUNK_SIZE:
			r = once(&seen, 3) ?: get_u32(&t, &m->chunk_size);
			break;
		default: r = unknown_tag(&t);
		}
		if (r)
			return r;
	}
	if (r)
		return r;
	/* all but the software name are required */
	if ((seen & 0xd) != 0xd)
		return LR_EBADMSG;
	if (m->streams < 1 || m->streams > PROTO_MAX_STREAMS)
		return LR_EBADMSG;
	if (!chunk_size_ok(m->chunk_size))
		return LR_EBADMSG;
	return 0;
}

int proto_encode_xfer_totals(struct proto_buf *b,
			     const struct proto_xfer_totals *m)
{
	proto_msg_begin(b, PROTO_XFER_TOTALS);
	proto_put_u64(b, PROTO_T_FILES, m->files);
	proto_put_u64(b, PROTO_T_BYTES, m->bytes);
	return proto_msg_end(b);
}

int proto_decode_xfer_totals(const uint8_t *body, size_t len,
			     struct proto_xfer_totals *m)
{
	size_t off = 0;
	uint32_t seen = 0;
	struct tlv t;
	int r;

	memset(m, 0, sizeof(*m));
	while ((r = tlv_next(body, len, &off, &t)) == 1) {
		switch (t.tag) {
		case PROTO_T_FILES:
			r = once(&seen, 0) ?: get_u64(&t, &m->files);
			break;
		case PROTO_T_BYTES:
			r = once(&seen, 1) ?: get_u64(&t, &m->bytes);
			break;
		default: r = unknown_tag(&t);
		}
		if (r)
			return r;
	}
	if (r)
		return r;
	if (seen != 3 || m->files > PROTO_XFER_MAX_FILES)
		return LR_EBADMSG;
	return 0;
}

static void wait_encode(uint8_t *out, const struct proto_xfer_wait *w)
{
	be64(out, w->net_us);
	be64(out + 8, w->write_us);
	be64(out + 16, w->cipher_us);
}

static void wait_decode(const uint8_t *in, struct proto_xfer_wait *w)
{
	w->net_us = rd64(in);
	w->write_us = rd64(in + 8);
	w->cipher_us = rd64(in + 16);
}

int proto_encode_xfer_done(struct proto_buf *b, const struct proto_xfer_done *m)
{
	uint8_t w[XFER_WAIT_LEN];

	proto_msg_begin(b, PROTO_XFER_DONE);
	proto_put_u64(b, PROTO_T_FILES, m->files_ok);
	proto_put_u64(b, PROTO_T_FILES_FAILED, m->files_failed);
	proto_put_u64(b, PROTO_T_FILES_SKIPPED, m->files_skipped);
	proto_put_u64(b, PROTO_T_BYTES, m->bytes);
	wait_encode(w, &m->wait);
	proto_put_bytes(b, PROTO_T_WAIT, w, sizeof(w));
	return proto_msg_end(b);
}

int proto_decode_xfer_done(const uint8_t *body, size_t len,
			   struct proto_xfer_done *m)
{
	size_t off = 0;
	uint32_t seen = 0;
	struct tlv t;
	int r;

	memset(m, 0, sizeof(*m));
	while ((r = tlv_next(body, len, &off, &t)) == 1) {
		switch (t.tag) {
		case PROTO_T_FILES:
			r = once(&seen, 0) ?: get_u64(&t, &m->files_ok);
			break;
		case PROTO_T_FILES_FAILED:
			r = once(&seen, 1) ?: get_u64(&t, &m->files_failed);
			break;
		case PROTO_T_FILES_SKIPPED:
			r = once(&seen, 2) ?: get_u64(&t, &m->files_skipped);
			break;
		case PROTO_T_BYTES:
			r = once(&seen, 3) ?: get_u64(&t, &m->bytes);
			break;
		case PROTO_T_WAIT:
			r = once(&seen, 4);
			if (!r && t.len != XFER_WAIT_LEN)
				r = LR_EBADMSG;
			if (!r)
				wait_decode(t.v, &m->wait);
			break;
		default: r = unknown_tag(&t);
		}
		if (r)
			return r;
	}
	if (r)
		return r;
	/* the counts and bytes are required, the wait times optional */
	if ((seen & 0xf) != 0xf)
		return LR_EBADMSG;
	/* each at most 2^32, so the sum cannot wrap */
	if (m->files_ok > PROTO_XFER_MAX_FILES ||
	    m->files_failed > PROTO_XFER_MAX_FILES ||
	    m->files_skipped > PROTO_XFER_MAX_FILES ||
	    m->files_ok + m->files_failed + m->files_skipped >
		    PROTO_XFER_MAX_FILES)
		return LR_EBADMSG;
	return 0;
}

bool proto_xfer_batch_room(const struct proto_buf *b, size_t n)
{
	size_t end;

	if (b->err || n > PROTO_MAX_BODY || b->len > b->cap)
		return false;
	end = b->len + 4 + n;
	return end <= b->start + PROTO_HDR_LEN + PROTO_MAX_BODY &&
	       end <= b->cap;
}

size_t proto_xfer_entry_size(const struct proto_xfer_entry *e)
{
	return 4 + PROTO_XFER_ENTRY_FIXED + (size_t)e->path_len + e->target_len;
}

/* put_tlv for a batch item: -ENOBUFS (sticky) past PROTO_MAX_BODY. */
static uint8_t *put_item(struct proto_buf *b, uint16_t tag, size_t n)
{
	if (!proto_xfer_batch_room(b, n)) {
		if (!b->err)
			b->err = -ENOBUFS;
		return NULL;
	}
	return put_tlv(b, tag, n);
}

void proto_put_xfer_entry(struct proto_buf *b, const struct proto_xfer_entry *e)
{
	uint8_t *q = put_item(b, PROTO_T_ENTRY, proto_xfer_entry_size(e) - 4);

	if (!q)
		return;
	be32(q, e->idx);
	q[4] = e->kind;
	q[5] = e->eflags;
	be16(q + 6, e->mode);
	be64(q + 8, e->size);
	be64(q + 16, (uint64_t)e->mtime_sec);
	be32(q + 24, e->mtime_nsec);
	be16(q + 28, e->path_len);
	be16(q + 30, e->target_len);
	q += PROTO_XFER_ENTRY_FIXED;
	if (e->path_len)
		memcpy(q, e->path, e->path_len);
	if (e->target_len)
		memcpy(q + e->path_len, e->target, e->target_len);
}

void proto_put_xfer_plan(struct proto_buf *b, const struct proto_xfer_plan *p)
{
	uint8_t *q = put_item(b, PROTO_T_PLAN, PROTO_XFER_PLAN_LEN);

	if (!q)
		return;
	be32(q, p->idx);
	q[4] = p->action;
}

void proto_put_xfer_held(struct proto_buf *b, const struct proto_xfer_held *h)
{
	uint8_t *q = put_item(b, PROTO_T_HELD, PROTO_XFER_HELD_LEN);

	if (!q)
		return;
	be32(q, h->idx);
	be32(q + 4, h->chunk);
	memcpy(q + 8, h->digest, PROTO_XFER_DIGEST_LEN);
}

void proto_put_xfer_sum(struct proto_buf *b, const struct proto_xfer_sum *s)
{
	uint8_t *q = put_item(b, PROTO_T_SUM, PROTO_XFER_SUM_LEN);

	if (!q)
		return;
	be32(q, s->idx);
	be64(q + 4, s->size);
	be32(q + 12, s->nchunks);
	be32(q + 16, s->sent);
	memcpy(q + 20, s->digest, PROTO_XFER_DIGEST_LEN);
}

void proto_put_xfer_ack(struct proto_buf *b, const struct proto_xfer_ack *a)
{
	uint8_t *q = put_item(b, PROTO_T_ACK, PROTO_XFER_ACK_LEN);

	if (!q)
		return;
	be32(q, a->idx);
	be32(q + 4, a->chunk);
	q[8] = a->status;
	be32(q + 9, a->bytes);
}

void proto_put_xfer_fail(struct proto_buf *b, const struct proto_xfer_fail *f)
{
	size_t n = strnlen(f->text, PROTO_MAX_TEXT);
	uint8_t *q = put_item(b, PROTO_T_FAIL, 8 + n);

	if (!q)
		return;
	be32(q, f->idx);
	be32(q + 4, f->code);
	memcpy(q + 8, f->text, n);
}

void proto_put_xfer_wait(struct proto_buf *b, const struct proto_xfer_wait *w)
{
	uint8_t *q = put_item(b, PROTO_T_WAIT, XFER_WAIT_LEN);

	if (q)
		wait_encode(q, w);
}

void proto_xfer_iter_init(struct proto_xfer_iter *it, const uint8_t *body,
			  size_t len)
{
	memset(it, 0, sizeof(*it));
	it->body = body;
	it->len = len;
}

int proto_xfer_iter_next(struct proto_xfer_iter *it)
{
	struct tlv t;
	int r;

	if (it->off > it->len)
		return LR_EBADMSG;
	r = tlv_next(it->body, it->len, &it->off, &t);
	if (r == 1) {
		it->tag = t.tag;
		it->value = t.v;
		it->vlen = t.len;
	}
	return r;
}

/* The current item is tag with exactly vlen bytes. */
static bool item_is(const struct proto_xfer_iter *it, uint16_t tag, size_t vlen)
{
	return it->tag == tag && it->vlen == vlen && it->value;
}

int proto_xfer_get_entry(const struct proto_xfer_iter *it,
			 struct proto_xfer_entry *e)
{
	const uint8_t *v = it->value;
	struct proto_xfer_entry x;

	if (it->tag != PROTO_T_ENTRY || !v || it->vlen < PROTO_XFER_ENTRY_FIXED)
		return LR_EBADMSG;
	x.idx = rd32(v);
	x.kind = v[4];
	x.eflags = v[5];
	x.mode = rd16(v + 6);
	x.size = rd64(v + 8);
	x.mtime_sec = (int64_t)rd64(v + 16);
	x.mtime_nsec = rd32(v + 24);
	x.path_len = rd16(v + 28);
	x.target_len = rd16(v + 30);
	if ((size_t)it->vlen !=
	    PROTO_XFER_ENTRY_FIXED + (size_t)x.path_len + x.target_len)
		return LR_EBADMSG;
	if (x.kind < PROTO_XK_FILE || x.kind > PROTO_XK_SYMLINK)
		return LR_EBADMSG;
	if (x.eflags & ~(unsigned)XE_ALL)
		return LR_EBADMSG;
	if (x.mode > 07777 || x.mtime_nsec >= 1000000000u)
		return LR_EBADMSG;
	if (x.path_len < 1 || x.path_len > PROTO_XFER_MAX_PATH)
		return LR_EBADMSG;
	if (x.kind == PROTO_XK_SYMLINK) {
		if (x.target_len < 1 || x.target_len > PROTO_XFER_MAX_PATH)
			return LR_EBADMSG;
	} else if (x.target_len) {
		return LR_EBADMSG;
	}
	/* only a file has a size; a pipe's is UNKNOWN until its SUM */
	if (x.kind != PROTO_XK_FILE && x.size)
		return LR_EBADMSG;
	x.path = (const char *)v + PROTO_XFER_ENTRY_FIXED;
	x.target = x.target_len ? x.path + x.path_len : NULL;
	*e = x;
	return 0;
}

int proto_xfer_get_plan(const struct proto_xfer_iter *it,
			struct proto_xfer_plan *p)
{
	if (!item_is(it, PROTO_T_PLAN, PROTO_XFER_PLAN_LEN) ||
	    it->value[4] > PROTO_XA_REFUSE)
		return LR_EBADMSG;
	p->idx = rd32(it->value);
	p->action = it->value[4];
	return 0;
}

int proto_xfer_get_held(const struct proto_xfer_iter *it,
			struct proto_xfer_held *h)
{
	if (!item_is(it, PROTO_T_HELD, PROTO_XFER_HELD_LEN))
		return LR_EBADMSG;
	h->idx = rd32(it->value);
	h->chunk = rd32(it->value + 4);
	memcpy(h->digest, it->value + 8, PROTO_XFER_DIGEST_LEN);
	return 0;
}

int proto_xfer_get_sum(const struct proto_xfer_iter *it,
		       struct proto_xfer_sum *s)
{
	const uint8_t *v = it->value;

	if (!item_is(it, PROTO_T_SUM, PROTO_XFER_SUM_LEN))
		return LR_EBADMSG;
	/* the final size is known by now; sent counts distinct chunks */
	if (rd64(v + 4) == PROTO_XFER_SIZE_UNKNOWN ||
	    rd32(v + 16) > rd32(v + 12))
		return LR_EBADMSG;
	s->idx = rd32(v);
	s->size = rd64(v + 4);
	s->nchunks = rd32(v + 12);
	s->sent = rd32(v + 16);
	memcpy(s->digest, v + 20, PROTO_XFER_DIGEST_LEN);
	return 0;
}

int proto_xfer_get_ack(const struct proto_xfer_iter *it,
		       struct proto_xfer_ack *a)
{
	const uint8_t *v = it->value;
	uint32_t bytes;

	if (!item_is(it, PROTO_T_ACK, PROTO_XFER_ACK_LEN) ||
	    v[8] > PROTO_XS_FILE_FAILED)
		return LR_EBADMSG;
	bytes = rd32(v + 9);
	if (v[8] == PROTO_XS_CHUNK_OK &&
	    (bytes < 1 || bytes > PROTO_XFER_MAX_CHUNK))
		return LR_EBADMSG;
	a->idx = rd32(v);
	a->chunk = rd32(v + 4);
	a->status = v[8];
	a->bytes = bytes;
	return 0;
}

int proto_xfer_get_fail(const struct proto_xfer_iter *it,
			struct proto_xfer_fail *f)
{
	struct tlv t;

	if (it->tag != PROTO_T_FAIL || !it->value || it->vlen < 8)
		return LR_EBADMSG;
	t.tag = it->tag;
	t.len = (uint16_t)(it->vlen - 8);
	t.v = it->value + 8;
	if (get_str(&t, f->text, sizeof(f->text)))
		return LR_EBADMSG;
	f->idx = rd32(it->value);
	f->code = rd32(it->value + 4);
	return 0;
}

int proto_xfer_get_wait(const struct proto_xfer_iter *it,
			struct proto_xfer_wait *w)
{
	if (!item_is(it, PROTO_T_WAIT, XFER_WAIT_LEN))
		return LR_EBADMSG;
	wait_decode(it->value, w);
	return 0;
}

void proto_xfer_chunk_encode(uint8_t *out, const struct proto_xfer_chunk_hdr *h)
{
	out[0] = h->kind;
	out[1] = 0;
	out[2] = 0;
	out[3] = 0;
	be32(out + 4, h->idx);
	be32(out + 8, h->chunk);
	be32(out + 12, h->len);
	memcpy(out + 16, h->digest, PROTO_XFER_DIGEST_LEN);
}

int proto_xfer_chunk_decode(const uint8_t *in, struct proto_xfer_chunk_hdr *h)
{
	uint32_t n = rd32(in + 12);

	if (in[0] != PROTO_XC_DATA && in[0] != PROTO_XC_ZERO)
		return LR_EBADMSG;
	if (in[1] || in[2] || in[3])
		return LR_EBADMSG;
	if (n < 1 || n > PROTO_XFER_MAX_CHUNK)
		return LR_EBADMSG;
	h->kind = in[0];
	h->idx = rd32(in + 4);
	h->chunk = rd32(in + 8);
	h->len = n;
	memcpy(h->digest, in + 16, PROTO_XFER_DIGEST_LEN);
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
	case PROTO_PROBE_REQUEST: return "PROBE_REQUEST";
	case PROTO_PROBE_RESULT: return "PROBE_RESULT";
	default: return "unknown";
	}
}

/* ---------------- linerate doctor ---------------- */

int proto_encode_probe_request(struct proto_buf *b,
			       const struct proto_probe_request *m)
{
	proto_msg_begin(b, PROTO_PROBE_REQUEST);
	proto_put_u64(b, PROTO_T_DISK_BYTES, m->disk_bytes);
	proto_put_u32(b, PROTO_T_CIPHER_MS, m->cipher_ms);
	if (m->dir[0])
		proto_put_str(b, PROTO_T_PATH, m->dir);
	return proto_msg_end(b);
}

int proto_decode_probe_request(const uint8_t *body, size_t len,
			       struct proto_probe_request *m)
{
	size_t off = 0;
	uint32_t seen = 0;
	struct tlv t;
	int r;

	memset(m, 0, sizeof(*m));
	while ((r = tlv_next(body, len, &off, &t)) == 1) {
		switch (t.tag) {
		case PROTO_T_DISK_BYTES:
			r = once(&seen, 0) ?: get_u64(&t, &m->disk_bytes);
			break;
		case PROTO_T_CIPHER_MS:
			r = once(&seen, 1) ?: get_u32(&t, &m->cipher_ms);
			break;
		case PROTO_T_PATH:
			r = once(&seen, 2)
				    ?: get_str(&t, m->dir, sizeof(m->dir));
			break;
		default: r = unknown_tag(&t);
		}
		if (r)
			return r;
	}
	if (r)
		return r;
	if ((seen & 3) != 3 || m->disk_bytes > PROTO_PROBE_MAX_DISK ||
	    m->cipher_ms > PROTO_PROBE_MAX_MS)
		return LR_EBADMSG;
	return 0;
}

int proto_encode_probe_result(struct proto_buf *b,
			      const struct proto_probe_result *m)
{
	uint8_t v[16];
	unsigned i;

	proto_msg_begin(b, PROTO_PROBE_RESULT);
	proto_put_str(b, PROTO_T_CPU_MODEL, m->model);
	proto_put_u32(b, PROTO_T_CENTICORES, m->centicores);
	proto_put_str(b, PROTO_T_GOVERNOR, m->governor);
	proto_put_u8(b, PROTO_T_AES, m->aes);
	for (i = 0; i < m->nrates && i < PROTO_PROBE_MAX_RATES; i++) {
		uint8_t rv[17];

		rv[0] = m->rates[i].cipher;
		be64(rv + 1, m->rates[i].seal);
		be64(rv + 9, m->rates[i].open);
		proto_put_bytes(b, PROTO_T_CIPHER_RATE, rv, sizeof(rv));
	}
	proto_put_str(b, PROTO_T_STORAGE, m->storage);
	for (i = 0; i < 4; i++)
		be32(v + 4 * i, m->sockbuf[i]);
	proto_put_bytes(b, PROTO_T_SOCKBUF, v, sizeof(v));
	proto_put_str(b, PROTO_T_CC, m->cc);
	proto_put_u64(b, PROTO_T_DISK_BYTES, m->disk_bytes);
	proto_put_u64(b, PROTO_T_DISK_USEC, m->disk_usec);
	if (m->disk_error[0])
		proto_put_str(b, PROTO_T_TEXT, m->disk_error);
	return proto_msg_end(b);
}

int proto_decode_probe_result(const uint8_t *body, size_t len,
			      struct proto_probe_result *m)
{
	size_t off = 0;
	uint32_t seen = 0;
	struct tlv t;
	unsigned i;
	int r;

	memset(m, 0, sizeof(*m));
	while ((r = tlv_next(body, len, &off, &t)) == 1) {
		switch (t.tag) {
		case PROTO_T_CPU_MODEL:
			r = once(&seen, 0)
				    ?: get_str(&t, m->model, sizeof(m->model));
			break;
		case PROTO_T_CENTICORES:
			r = once(&seen, 1) ?: get_u32(&t, &m->centicores);
			break;
		case PROTO_T_GOVERNOR:
			r = once(&seen, 2)
				    ?: get_str(&t, m->governor,
					       sizeof(m->governor));
			break;
		case PROTO_T_AES:
			r = once(&seen, 3) ?: get_u8(&t, &m->aes);
			if (!r && m->aes > 1)
				r = LR_EBADMSG;
			break;
		case PROTO_T_CIPHER_RATE:
			if (t.len != 17 || m->nrates >= PROTO_PROBE_MAX_RATES) {
				r = LR_EBADMSG;
				break;
			}
			m->rates[m->nrates].cipher = t.v[0];
			m->rates[m->nrates].seal = rd64(t.v + 1);
			m->rates[m->nrates].open = rd64(t.v + 9);
			m->nrates++;
			r = 0;
			break;
		case PROTO_T_STORAGE:
			r = once(&seen, 4)
				    ?: get_str(&t, m->storage,
					       sizeof(m->storage));
			break;
		case PROTO_T_SOCKBUF:
			r = once(&seen, 5);
			if (!r && t.len != 16)
				r = LR_EBADMSG;
			for (i = 0; !r && i < 4; i++)
				m->sockbuf[i] = rd32(t.v + 4 * i);
			break;
		case PROTO_T_CC:
			r = once(&seen, 6) ?: get_str(&t, m->cc, sizeof(m->cc));
			break;
		case PROTO_T_DISK_BYTES:
			r = once(&seen, 7) ?: get_u64(&t, &m->disk_bytes);
			break;
		case PROTO_T_DISK_USEC:
			r = once(&seen, 8) ?: get_u64(&t, &m->disk_usec);
			break;
		case PROTO_T_TEXT:
			r = once(&seen, 9)
				    ?: get_str(&t, m->disk_error,
					       sizeof(m->disk_error));
			break;
		default: r = unknown_tag(&t);
		}
		if (r)
			return r;
	}
	if (r)
		return r;
	if ((seen & 0x1ff) != 0x1ff || m->disk_bytes > PROTO_PROBE_MAX_DISK)
		return LR_EBADMSG;
	for (i = 0; i < m->nrates; i++)
		if (m->rates[i].cipher != 1 && m->rates[i].cipher != 2)
			return LR_EBADMSG;
	return 0;
}
