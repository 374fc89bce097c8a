// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for proto.[ch], the parser of everything a peer sends
 * before and after authentication.
 *
 * The input is the first bytes of a connection: a preamble, then messages
 * (header and body) until the input runs out or a header is refused. Each
 * body goes to the decoder its type names and then to every other decoder
 * too, so that each decoder sees every shape of body. Input that does not
 * start with a preamble is fed to the decoders as one body.
 *
 * Invariants checked, beyond "no sanitizer report":
 *  - return values are one of the documented ones;
 *  - a decoded string is NUL-terminated, printable ASCII, within its array;
 *  - a decoded message is inside its protocol bounds;
 *  - decoded results hold at most cap streams, and a smaller cap gives
 *    LR_ETOOBIG exactly when the streams do not fit;
 *  - re-encoding a decoded message succeeds, decodes again to an equal
 *    struct, and encoding that gives the same bytes (canonical form).
 *
 * Each body is copied into a buffer of its exact size, so that reading
 * past a body is an ASan report even when more input follows.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "proto.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Enough for every stream of a test, both ways. */
#define RES_CAP (2 * PROTO_MAX_STREAMS)
#define ENC_CAP (PROTO_HDR_LEN + PROTO_MAX_BODY)
/* Messages looked at per input; more adds time, not coverage. */
#define MAX_MSGS 16

/* Scratch space for one input, on the caller's stack. */
struct ctx {
	struct proto_stream_result s1[RES_CAP], s2[RES_CAP];
	uint8_t enc1[ENC_CAP], enc2[ENC_CAP];
};

union msg {
	struct proto_ctrl_open co;
	struct proto_data_open dop;
	struct proto_error er;
	struct proto_test_request rq;
	struct proto_test_accept acc;
	struct proto_results res;
};

static void check_str(const char *s, size_t cap)
{
	const char *end = memchr(s, '\0', cap);

	CHECK(end != NULL);
	for (; s < end; s++)
		CHECK(*s >= 0x20 && *s <= 0x7e);
}

/* ---- per message type: check, compare ---- */

static void check_ctrl_open(const union msg *m)
{
	check_str(m->co.software, sizeof(m->co.software));
}

static bool eq_ctrl_open(const union msg *a, const union msg *b)
{
	return !strcmp(a->co.software, b->co.software) &&
	       a->co.features == b->co.features;
}

static void check_data_open(const union msg *m)
{
	CHECK(m->dop.dir <= PROTO_DIR_S2C);
	CHECK(m->dop.stream < 2 * PROTO_MAX_STREAMS);
}

static bool eq_data_open(const union msg *a, const union msg *b)
{
	return !memcmp(a->dop.test_id, b->dop.test_id, PROTO_TEST_ID_LEN) &&
	       a->dop.stream == b->dop.stream && a->dop.dir == b->dop.dir;
}

static void check_error(const union msg *m)
{
	check_str(m->er.text, sizeof(m->er.text));
}

static bool eq_error(const union msg *a, const union msg *b)
{
	return a->er.code == b->er.code && !strcmp(a->er.text, b->er.text);
}

static void check_test_request(const union msg *m)
{
	const struct proto_test_request *r = &m->rq;

	CHECK(r->mode <= PROTO_MODE_BIDIR);
	CHECK(r->streams >= 1 && r->streams <= PROTO_MAX_STREAMS);
	CHECK((r->duration_ms == 0) != (r->bytes == 0));
	CHECK(r->duration_ms <= PROTO_MAX_DURATION_MS);
	CHECK(r->omit_ms <= PROTO_MAX_DURATION_MS);
	CHECK(r->blksize >= 1 && r->blksize <= PROTO_MAX_BLKSIZE);
	CHECK(r->window <= PROTO_MAX_WINDOW);
	CHECK(r->mss <= 65535);
	CHECK(r->zerocopy <= PROTO_ZC_MSG);
	CHECK(r->udp <= 1);
	check_str(r->cc, sizeof(r->cc));
}

static bool eq_test_request(const union msg *a, const union msg *b)
{
	const struct proto_test_request *x = &a->rq, *y = &b->rq;

	return x->mode == y->mode && x->streams == y->streams &&
	       x->duration_ms == y->duration_ms && x->bytes == y->bytes &&
	       x->blksize == y->blksize && x->window == y->window &&
	       !strcmp(x->cc, y->cc) && x->mss == y->mss &&
	       x->zerocopy == y->zerocopy && x->omit_ms == y->omit_ms &&
	       x->rate_bps == y->rate_bps && x->udp == y->udp;
}

static void check_test_accept(const union msg *m)
{
	check_str(m->acc.software, sizeof(m->acc.software));
}

static bool eq_test_accept(const union msg *a, const union msg *b)
{
	const struct proto_test_accept *x = &a->acc, *y = &b->acc;

	return !memcmp(x->test_id, y->test_id, PROTO_TEST_ID_LEN) &&
	       !strcmp(x->software, y->software) && x->overlap == y->overlap &&
	       x->max_duration_ms == y->max_duration_ms;
}

static void check_results(const union msg *m)
{
	const struct proto_results *r = &m->res;
	uint16_t i;

	CHECK(r->nstreams <= r->cap);
	check_str(r->cc, sizeof(r->cc));
	for (i = 0; i < r->nstreams; i++) {
		CHECK(r->streams[i].dir <= PROTO_DIR_S2C);
		CHECK(r->streams[i].stream < 2 * PROTO_MAX_STREAMS);
	}
}

static bool sr_eq(const struct proto_stream_result *x,
		  const struct proto_stream_result *y)
{
	return x->stream == y->stream && x->dir == y->dir &&
	       x->flags == y->flags && x->bytes == y->bytes &&
	       x->duration_us == y->duration_us && x->retrans == y->retrans &&
	       x->max_cwnd == y->max_cwnd && x->min_rtt == y->min_rtt &&
	       x->mean_rtt == y->mean_rtt && x->max_rtt == y->max_rtt &&
	       x->udp == y->udp && x->packets == y->packets &&
	       x->lost == y->lost && x->ooo == y->ooo && x->dup == y->dup &&
	       x->jitter_ns == y->jitter_ns;
}

static bool eq_results(const union msg *a, const union msg *b)
{
	const struct proto_results *x = &a->res, *y = &b->res;
	uint16_t i;

	if (x->cpu.user_us != y->cpu.user_us ||
	    x->cpu.sys_us != y->cpu.sys_us ||
	    x->cpu.wall_us != y->cpu.wall_us || strcmp(x->cc, y->cc) ||
	    x->overlap != y->overlap || x->nstreams != y->nstreams)
		return false;
	for (i = 0; i < x->nstreams; i++)
		if (!sr_eq(&x->streams[i], &y->streams[i]))
			return false;
	return true;
}

/* ---- uniform wrappers ---- */

static int dec_ctrl_open(const uint8_t *b, size_t n, union msg *m)
{
	return proto_decode_ctrl_open(b, n, &m->co);
}

static int enc_ctrl_open(struct proto_buf *b, const union msg *m)
{
	return proto_encode_ctrl_open(b, &m->co);
}

static int dec_data_open(const uint8_t *b, size_t n, union msg *m)
{
	return proto_decode_data_open(b, n, &m->dop);
}

static int enc_data_open(struct proto_buf *b, const union msg *m)
{
	return proto_encode_data_open(b, &m->dop);
}

static int dec_error(const uint8_t *b, size_t n, union msg *m)
{
	return proto_decode_error(b, n, &m->er);
}

static int enc_error(struct proto_buf *b, const union msg *m)
{
	return proto_encode_error(b, &m->er);
}

static int dec_test_request(const uint8_t *b, size_t n, union msg *m)
{
	return proto_decode_test_request(b, n, &m->rq);
}

static int enc_test_request(struct proto_buf *b, const union msg *m)
{
	return proto_encode_test_request(b, &m->rq);
}

static int dec_test_accept(const uint8_t *b, size_t n, union msg *m)
{
	return proto_decode_test_accept(b, n, &m->acc);
}

static int enc_test_accept(struct proto_buf *b, const union msg *m)
{
	return proto_encode_test_accept(b, &m->acc);
}

/* m->res.streams and cap are set by the caller */
static int dec_results(const uint8_t *b, size_t n, union msg *m)
{
	return proto_decode_results(b, n, &m->res);
}

static int enc_results(struct proto_buf *b, const union msg *m)
{
	return proto_encode_results(b, &m->res);
}

struct kind {
	uint8_t type;
	int (*dec)(const uint8_t *body, size_t len, union msg *m);
	int (*enc)(struct proto_buf *b, const union msg *m);
	void (*check)(const union msg *m);
	bool (*eq)(const union msg *a, const union msg *b);
};

static const struct kind kinds[] = {
	{ PROTO_CTRL_OPEN, dec_ctrl_open, enc_ctrl_open, check_ctrl_open,
	  eq_ctrl_open },
	{ PROTO_DATA_OPEN, dec_data_open, enc_data_open, check_data_open,
	  eq_data_open },
	{ PROTO_ERROR, dec_error, enc_error, check_error, eq_error },
	{ PROTO_TEST_REQUEST, dec_test_request, enc_test_request,
	  check_test_request, eq_test_request },
	{ PROTO_TEST_ACCEPT, dec_test_accept, enc_test_accept,
	  check_test_accept, eq_test_accept },
	{ PROTO_TEST_RESULTS, dec_results, enc_results, check_results,
	  eq_results },
};

/* The one message in buf: its header must say type and the length. */
static const uint8_t *reparse(const uint8_t *buf, size_t len, uint8_t type,
			      size_t *body_len)
{
	struct proto_hdr h;

	CHECK(proto_decode_hdr(buf, len, PROTO_MAX_BODY, &h) == PROTO_HDR_LEN);
	CHECK(h.type == type);
	CHECK(h.flags == 0);
	CHECK(h.len + PROTO_HDR_LEN == len);
	*body_len = h.len;
	return buf + PROTO_HDR_LEN;
}

/* Results again with room for only a few streams. */
static void results_small_cap(const uint8_t *body, size_t len, int r_full,
			      const union msg *full)
{
	struct proto_stream_result few[2];
	union msg m;
	int r;

	memset(&m, 0, sizeof(m));
	m.res.streams = few;
	m.res.cap = ARRAY_SIZE(few);
	r = proto_decode_results(body, len, &m.res);
	CHECK(m.res.nstreams <= m.res.cap);
	if (r_full == 0 && full->res.nstreams <= ARRAY_SIZE(few)) {
		CHECK(r == 0);
		CHECK(eq_results(full, &m));
	} else if (r_full == 0) {
		CHECK(r == LR_ETOOBIG);
	} else if (r_full == LR_ETOOBIG) {
		CHECK(r == LR_ETOOBIG);
	}
}

static void run_kind(struct ctx *c, const struct kind *k, const uint8_t *body,
		     size_t len)
{
	union msg m, m2;
	struct proto_buf b;
	const uint8_t *body2;
	size_t len2, enc_len;
	int r;

	/* garbage where the decoder is to write */
	memset(&m, 0xa5, sizeof(m));
	memset(&m2, 0xa5, sizeof(m2));
	if (k->type == PROTO_TEST_RESULTS) {
		m.res.streams = c->s1;
		m.res.cap = RES_CAP;
		m2.res.streams = c->s2;
		m2.res.cap = RES_CAP;
	}

	r = k->dec(body, len, &m);
	if (k->type == PROTO_TEST_RESULTS) {
		CHECK(r == 0 || r == LR_EBADMSG || r == LR_ETOOBIG);
		CHECK(m.res.nstreams <= m.res.cap);
		CHECK(m.res.streams == c->s1 && m.res.cap == RES_CAP);
		results_small_cap(body, len, r, &m);
	} else {
		CHECK(r == 0 || r == LR_EBADMSG);
	}
	if (r)
		return;
	k->check(&m);

	/* re-encode, decode again, compare */
	proto_buf_init(&b, c->enc1, sizeof(c->enc1));
	CHECK(k->enc(&b, &m) == 0);
	enc_len = b.len;
	body2 = reparse(c->enc1, enc_len, k->type, &len2);
	r = k->dec(body2, len2, &m2);
	CHECK(r == 0);
	k->check(&m2);
	CHECK(k->eq(&m, &m2));

	/* and the encoding of what came back is the same bytes */
	proto_buf_init(&b, c->enc2, sizeof(c->enc2));
	CHECK(k->enc(&b, &m2) == 0);
	CHECK(b.len == enc_len);
	CHECK(!memcmp(c->enc1, c->enc2, enc_len));
}

/* One body: to its own decoder first (type 0 when there is none), then
 * to all the others. */
static void fuzz_body(struct ctx *c, uint8_t type, const uint8_t *data,
		      size_t len)
{
	uint8_t *body = malloc(len ? len : 1);
	size_t i;
	int r;

	CHECK(body != NULL);
	if (len)
		memcpy(body, data, len);
	CHECK(proto_type_name(type) != NULL);
	for (i = 0; i < ARRAY_SIZE(kinds); i++)
		if (kinds[i].type == type)
			run_kind(c, &kinds[i], body, len);
	r = proto_decode_empty(body, len);
	CHECK(r == 0 || r == LR_EBADMSG);
	for (i = 0; i < ARRAY_SIZE(kinds); i++)
		if (kinds[i].type != type)
			run_kind(c, &kinds[i], body, len);
	/* a UDP stream's hello and its answer: exact, and canonical */
	for (i = 0; i < 2; i++) {
		struct proto_data_open d;
		uint8_t again[PROTO_UDP_HELLO_LEN];

		r = proto_decode_udp_hello(body, len, i, &d);
		CHECK(r == 0 || r == LR_EBADMSG);
		if (r)
			continue;
		CHECK(len == PROTO_UDP_HELLO_LEN && d.dir <= PROTO_DIR_S2C &&
		      d.stream < 2 * PROTO_MAX_STREAMS);
		proto_encode_udp_hello(again, &d, i);
		CHECK(!memcmp(again, body, len));
	}
	free(body);
}

static void check_version(const struct proto_preamble *p)
{
	uint8_t v = proto_version_choose(PROTO_VERSION_MIN, PROTO_VERSION_MAX,
					 p->vmin, p->vmax);

	if (!v)
		return;
	CHECK(v >= 1);
	CHECK(v >= PROTO_VERSION_MIN && v <= PROTO_VERSION_MAX);
	CHECK(v >= p->vmin && v <= p->vmax);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx *c = malloc(sizeof(*c));
	struct proto_preamble pre;
	struct proto_hdr h, h2;
	size_t off;
	int r, r2, n;

	CHECK(c != NULL);
	r = proto_decode_preamble(data, size, &pre);
	CHECK(r == PROTO_PREAMBLE_LEN || r == LR_ENEEDMORE ||
	      r == LR_ENOTLINERATE);
	CHECK(r != LR_ENEEDMORE || size < PROTO_PREAMBLE_LEN);
	if (r != PROTO_PREAMBLE_LEN) {
		fuzz_body(c, 0, data, size);
		goto out_free;
	}
	check_version(&pre);

	off = PROTO_PREAMBLE_LEN;
	for (n = 0; n < MAX_MSGS; n++) {
		r = proto_decode_hdr(data + off, size - off, PROTO_MAX_BODY,
				     &h);
		CHECK(r == PROTO_HDR_LEN || r == LR_ENEEDMORE ||
		      r == LR_EBADMSG || r == LR_ETOOBIG);
		if (r != PROTO_HDR_LEN)
			break;
		CHECK(h.len <= PROTO_MAX_BODY);
		/* the tighter bound of a connection's first message */
		r2 = proto_decode_hdr(data + off, size - off,
				      PROTO_MAX_OPEN_BODY, &h2);
		CHECK(r2 == (h.len > PROTO_MAX_OPEN_BODY ? LR_ETOOBIG
							 : PROTO_HDR_LEN));
		off += PROTO_HDR_LEN;
		if (size - off < h.len)
			break; /* a reader would wait for more */
		fuzz_body(c, h.type, data + off, h.len);
		off += h.len;
	}
out_free:
	free(c);
	return 0;
}
