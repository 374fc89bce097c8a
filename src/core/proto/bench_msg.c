// SPDX-License-Identifier: MIT
/* The bench test's messages: TEST_REQUEST, TEST_ACCEPT, TEST_RESULTS. */
#include <string.h>

#include "err.h"
#include "proto_int.h"
#include "banned.h"

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

#define TR struct proto_test_request
static const struct proto__field test_request_fields[] = {
	PROTO__F_U8(PROTO_T_MODE, TR, mode, PROTO__REQUIRED),
	PROTO__F_U16(PROTO_T_STREAMS, TR, streams, PROTO__REQUIRED),
	PROTO__F_U64(PROTO_T_DURATION_MS, TR, duration_ms, PROTO__REQUIRED),
	PROTO__F_U64(PROTO_T_BYTES, TR, bytes, PROTO__REQUIRED),
	PROTO__F_U32(PROTO_T_BLKSIZE, TR, blksize, PROTO__REQUIRED),
	PROTO__F_U32(PROTO_T_WINDOW, TR, window, 0),
	PROTO__F_STR(PROTO_T_CC, TR, cc, 0),
	PROTO__F_U32(PROTO_T_MSS, TR, mss, 0),
	PROTO__F_U8(PROTO_T_ZEROCOPY, TR, zerocopy, 0),
	PROTO__F_U64(PROTO_T_OMIT_MS, TR, omit_ms, 0),
	PROTO__F_U64(PROTO_T_RATE, TR, rate_bps, 0),
	PROTO__F_U8(PROTO_T_UDP, TR, udp, 0),
};
#undef TR

/* The bounds of a test request (docs/PROTOCOL.md section 5). */
static bool test_request_ok(const struct proto_test_request *m)
{
	if (m->mode > PROTO_MODE_BIDIR || m->zerocopy > PROTO_ZC_MSG ||
	    m->udp > 1)
		return false;
	if (m->streams < 1 || m->streams > PROTO_MAX_STREAMS)
		return false;
	if ((m->duration_ms == 0) == (m->bytes == 0))
		return false;
	if (m->duration_ms > PROTO_MAX_DURATION_MS ||
	    m->omit_ms > PROTO_MAX_DURATION_MS)
		return false;
	if (m->blksize < 1 || m->blksize > PROTO_MAX_BLKSIZE)
		return false;
	return m->window <= PROTO_MAX_WINDOW && m->mss <= 65535;
}

int proto_decode_test_request(const uint8_t *body, size_t len,
			      struct proto_test_request *m)
{
	int r;

	memset(m, 0, sizeof(*m));
	r = proto__decode(body, len, test_request_fields,
			  PROTO__NFIELDS(test_request_fields), m);
	if (r)
		return r;
	return test_request_ok(m) ? 0 : LR_EBADMSG;
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

#define TA struct proto_test_accept
static const struct proto__field test_accept_fields[] = {
	PROTO__F_BYTES(PROTO_T_TEST_ID, TA, test_id, PROTO_TEST_ID_LEN,
		       PROTO__REQUIRED),
	PROTO__F_STR(PROTO_T_SOFTWARE, TA, software, 0),
	PROTO__F_U16(PROTO_T_OVERLAP, TA, overlap, 0),
	PROTO__F_U64(PROTO_T_MAX_DURATION_MS, TA, max_duration_ms, 0),
};
#undef TA

int proto_decode_test_accept(const uint8_t *body, size_t len,
			     struct proto_test_accept *m)
{
	memset(m, 0, sizeof(*m));
	return proto__decode(body, len, test_accept_fields,
			     PROTO__NFIELDS(test_accept_fields), m);
}

static void put_stream_result(struct proto_buf *b,
			      const struct proto_stream_result *s)
{
	uint8_t sr[PROTO_STREAM_RESULT_LEN];

	proto__be16(sr, s->stream);
	sr[2] = s->dir;
	sr[3] = s->flags;
	proto__be64(sr + 4, s->bytes);
	proto__be64(sr + 12, s->duration_us);
	proto__be32(sr + 20, s->retrans);
	proto__be32(sr + 24, s->max_cwnd);
	proto__be32(sr + 28, s->min_rtt);
	proto__be32(sr + 32, s->mean_rtt);
	proto__be32(sr + 36, s->max_rtt);
	proto_put_bytes(b, PROTO_T_STREAM_RESULT, sr, sizeof(sr));
}

static void put_udp_result(struct proto_buf *b,
			   const struct proto_stream_result *s)
{
	uint8_t ur[PROTO_UDP_RESULT_LEN] = { 0 };

	proto__be16(ur, s->stream);
	ur[2] = s->dir;
	proto__be64(ur + 4, s->packets);
	proto__be64(ur + 12, s->lost);
	proto__be64(ur + 20, s->ooo);
	proto__be64(ur + 28, s->dup);
	proto__be64(ur + 36, s->jitter_ns);
	proto_put_bytes(b, PROTO_T_UDP_RESULT, ur, sizeof(ur));
}

static void put_tcp_result(struct proto_buf *b,
			   const struct proto_stream_result *s)
{
	uint8_t tr[PROTO_TCP_RESULT_LEN] = { 0 };

	proto__be16(tr, s->stream);
	tr[2] = s->dir;
	proto__be32(tr + 4, s->max_snd_wnd);
	proto_put_bytes(b, PROTO_T_TCP_RESULT, tr, sizeof(tr));
}

int proto_encode_results(struct proto_buf *b, const struct proto_results *m)
{
	uint8_t cpu[24];
	uint16_t i;

	proto_msg_begin(b, PROTO_TEST_RESULTS);
	proto__be64(cpu, m->cpu.user_us);
	proto__be64(cpu + 8, m->cpu.sys_us);
	proto__be64(cpu + 16, m->cpu.wall_us);
	proto_put_bytes(b, PROTO_T_CPU, cpu, sizeof(cpu));
	if (m->cc[0])
		proto_put_str(b, PROTO_T_CC, m->cc);
	proto_put_u16(b, PROTO_T_OVERLAP, m->overlap);
	for (i = 0; i < m->nstreams; i++) {
		put_stream_result(b, &m->streams[i]);
		if (m->streams[i].udp)
			put_udp_result(b, &m->streams[i]);
		if (m->streams[i].has_tcp_result)
			put_tcp_result(b, &m->streams[i]);
	}
	return proto_msg_end(b);
}

static int get_cpu(void *msg, const struct proto__tlv *t)
{
	struct proto_results *m = msg;

	m->cpu.user_us = proto__rd64(t->v);
	m->cpu.sys_us = proto__rd64(t->v + 8);
	m->cpu.wall_us = proto__rd64(t->v + 16);
	return 0;
}

static int get_stream_result(void *msg, const struct proto__tlv *t)
{
	struct proto_results *m = msg;
	struct proto_stream_result *s;

	if (m->nstreams >= m->cap)
		return LR_ETOOBIG;
	s = &m->streams[m->nstreams++];
	memset(s, 0, sizeof(*s));
	s->stream = proto__rd16(t->v);
	s->dir = t->v[2];
	s->flags = t->v[3];
	s->bytes = proto__rd64(t->v + 4);
	s->duration_us = proto__rd64(t->v + 12);
	s->retrans = proto__rd32(t->v + 20);
	s->max_cwnd = proto__rd32(t->v + 24);
	s->min_rtt = proto__rd32(t->v + 28);
	s->mean_rtt = proto__rd32(t->v + 32);
	s->max_rtt = proto__rd32(t->v + 36);
	if (s->dir > PROTO_DIR_S2C || s->stream >= 2 * PROTO_MAX_STREAMS)
		return LR_EBADMSG;
	return 0;
}

/* A UDP result belongs to the stream result just before it. */
static int get_udp_result(void *msg, const struct proto__tlv *t)
{
	struct proto_results *m = msg;
	struct proto_stream_result *s;

	if (!m->nstreams)
		return LR_EBADMSG;
	s = &m->streams[m->nstreams - 1];
	if (s->udp || s->has_tcp_result || proto__rd16(t->v) != s->stream ||
	    t->v[2] != s->dir)
		return LR_EBADMSG;
	s->udp = true;
	s->packets = proto__rd64(t->v + 4);
	s->lost = proto__rd64(t->v + 12);
	s->ooo = proto__rd64(t->v + 20);
	s->dup = proto__rd64(t->v + 28);
	s->jitter_ns = proto__rd64(t->v + 36);
	return 0;
}

/* A TCP result belongs to the stream result just before it (after its
 * UDP result, if any: a stream has one or the other). */
static int get_tcp_result(void *msg, const struct proto__tlv *t)
{
	struct proto_results *m = msg;
	struct proto_stream_result *s;

	if (!m->nstreams)
		return LR_EBADMSG;
	s = &m->streams[m->nstreams - 1];
	if (s->has_tcp_result || s->udp || proto__rd16(t->v) != s->stream ||
	    t->v[2] != s->dir || t->v[3])
		return LR_EBADMSG;
	s->has_tcp_result = true;
	s->max_snd_wnd = proto__rd32(t->v + 4);
	return 0;
}

static const struct proto__field results_fields[] = {
	PROTO__F_FN(PROTO_T_CPU, get_cpu, 24, PROTO__REQUIRED),
	PROTO__F_STR(PROTO_T_CC, struct proto_results, cc, 0),
	PROTO__F_U16(PROTO_T_OVERLAP, struct proto_results, overlap, 0),
	PROTO__F_FN(PROTO_T_STREAM_RESULT, get_stream_result,
		    PROTO_STREAM_RESULT_LEN, PROTO__MANY),
	PROTO__F_FN(PROTO_T_UDP_RESULT, get_udp_result, PROTO_UDP_RESULT_LEN,
		    PROTO__MANY),
	PROTO__F_FN(PROTO_T_TCP_RESULT, get_tcp_result, PROTO_TCP_RESULT_LEN,
		    PROTO__MANY),
};

/* m->streams and m->cap are the caller's; the rest is cleared first. */
int proto_decode_results(const uint8_t *body, size_t len,
			 struct proto_results *m)
{
	m->nstreams = 0;
	m->overlap = 0;
	m->cc[0] = '\0';
	memset(&m->cpu, 0, sizeof(m->cpu));
	return proto__decode(body, len, results_fields,
			     PROTO__NFIELDS(results_fields), m);
}
