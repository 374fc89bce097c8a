// SPDX-License-Identifier: MIT
/* doctor's messages: PROBE_REQUEST and PROBE_RESULT. */
#include <string.h>

#include "err.h"
#include "proto_int.h"
#include "banned.h"

#define CIPHER_RATE_LEN 17u
#define SOCKBUF_LEN	16u

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

#define PQ struct proto_probe_request
static const struct proto__field probe_request_fields[] = {
	PROTO__F_U64(PROTO_T_DISK_BYTES, PQ, disk_bytes, PROTO__REQUIRED),
	PROTO__F_U32(PROTO_T_CIPHER_MS, PQ, cipher_ms, PROTO__REQUIRED),
	PROTO__F_STR(PROTO_T_PATH, PQ, dir, 0),
};
#undef PQ

int proto_decode_probe_request(const uint8_t *body, size_t len,
			       struct proto_probe_request *m)
{
	int r;

	memset(m, 0, sizeof(*m));
	r = proto__decode(body, len, probe_request_fields,
			  PROTO__NFIELDS(probe_request_fields), m);
	if (r)
		return r;
	if (m->disk_bytes > PROTO_PROBE_MAX_DISK ||
	    m->cipher_ms > PROTO_PROBE_MAX_MS)
		return LR_EBADMSG;
	return 0;
}

int proto_encode_probe_result(struct proto_buf *b,
			      const struct proto_probe_result *m)
{
	uint8_t v[SOCKBUF_LEN];
	unsigned i;

	proto_msg_begin(b, PROTO_PROBE_RESULT);
	proto_put_str(b, PROTO_T_CPU_MODEL, m->model);
	proto_put_u32(b, PROTO_T_CENTICORES, m->centicores);
	proto_put_str(b, PROTO_T_GOVERNOR, m->governor);
	proto_put_u8(b, PROTO_T_AES, m->aes);
	for (i = 0; i < m->nrates && i < PROTO_PROBE_MAX_RATES; i++) {
		uint8_t rv[CIPHER_RATE_LEN];

		rv[0] = m->rates[i].cipher;
		proto__be64(rv + 1, m->rates[i].seal);
		proto__be64(rv + 9, m->rates[i].open);
		proto_put_bytes(b, PROTO_T_CIPHER_RATE, rv, sizeof(rv));
	}
	proto_put_str(b, PROTO_T_STORAGE, m->storage);
	for (i = 0; i < 4; i++)
		proto__be32(v + 4 * i, m->sockbuf[i]);
	proto_put_bytes(b, PROTO_T_SOCKBUF, v, sizeof(v));
	proto_put_str(b, PROTO_T_CC, m->cc);
	proto_put_u64(b, PROTO_T_DISK_BYTES, m->disk_bytes);
	proto_put_u64(b, PROTO_T_DISK_USEC, m->disk_usec);
	if (m->disk_cpu_usec)
		proto_put_u64(b, PROTO_T_DISK_CPU_USEC, m->disk_cpu_usec);
	if (m->disk_error[0])
		proto_put_str(b, PROTO_T_TEXT, m->disk_error);
	return proto_msg_end(b);
}

static int get_cipher_rate(void *msg, const struct proto__tlv *t)
{
	struct proto_probe_result *m = msg;
	struct proto_probe_rate *rt;

	if (m->nrates >= PROTO_PROBE_MAX_RATES)
		return LR_EBADMSG;
	rt = &m->rates[m->nrates++];
	rt->cipher = t->v[0];
	rt->seal = proto__rd64(t->v + 1);
	rt->open = proto__rd64(t->v + 9);
	return 0;
}

static int get_sockbuf(void *msg, const struct proto__tlv *t)
{
	struct proto_probe_result *m = msg;
	unsigned i;

	for (i = 0; i < 4; i++)
		m->sockbuf[i] = proto__rd32(t->v + 4 * i);
	return 0;
}

/* All but the cipher rates (repeated), the disk's error text and its
 * CPU time are required. */
#define PR  struct proto_probe_result
#define REQ PROTO__REQUIRED
static const struct proto__field probe_result_fields[] = {
	PROTO__F_STR(PROTO_T_CPU_MODEL, PR, model, REQ),
	PROTO__F_U32(PROTO_T_CENTICORES, PR, centicores, REQ),
	PROTO__F_STR(PROTO_T_GOVERNOR, PR, governor, REQ),
	PROTO__F_U8(PROTO_T_AES, PR, aes, REQ),
	PROTO__F_FN(PROTO_T_CIPHER_RATE, get_cipher_rate, CIPHER_RATE_LEN,
		    PROTO__MANY),
	PROTO__F_STR(PROTO_T_STORAGE, PR, storage, REQ),
	PROTO__F_FN(PROTO_T_SOCKBUF, get_sockbuf, SOCKBUF_LEN, REQ),
	PROTO__F_STR(PROTO_T_CC, PR, cc, REQ),
	PROTO__F_U64(PROTO_T_DISK_BYTES, PR, disk_bytes, REQ),
	PROTO__F_U64(PROTO_T_DISK_USEC, PR, disk_usec, REQ),
	PROTO__F_U64(PROTO_T_DISK_CPU_USEC, PR, disk_cpu_usec, 0),
	PROTO__F_STR(PROTO_T_TEXT, PR, disk_error, 0),
};
#undef REQ
#undef PR

int proto_decode_probe_result(const uint8_t *body, size_t len,
			      struct proto_probe_result *m)
{
	unsigned i;
	int r;

	memset(m, 0, sizeof(*m));
	r = proto__decode(body, len, probe_result_fields,
			  PROTO__NFIELDS(probe_result_fields), m);
	if (r)
		return r;
	if (m->aes > 1 || m->disk_bytes > PROTO_PROBE_MAX_DISK)
		return LR_EBADMSG;
	for (i = 0; i < m->nrates; i++)
		if (m->rates[i].cipher != 1 && m->rates[i].cipher != 2)
			return LR_EBADMSG;
	return 0;
}
