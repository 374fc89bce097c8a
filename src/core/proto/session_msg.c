// SPDX-License-Identifier: MIT
/* The messages that open and end a connection: CTRL_OPEN, DATA_OPEN,
 * ERROR, and the empty ones. */
#include <string.h>

#include "err.h"
#include "proto_int.h"
#include "banned.h"

int proto_encode_ctrl_open(struct proto_buf *b, const struct proto_ctrl_open *m)
{
	proto_msg_begin(b, PROTO_CTRL_OPEN);
	proto_put_str(b, PROTO_T_SOFTWARE, m->software);
	proto_put_u64(b, PROTO_T_FEATURES, m->features);
	return proto_msg_end(b);
}

static const struct proto__field ctrl_open_fields[] = {
	PROTO__F_STR(PROTO_T_SOFTWARE, struct proto_ctrl_open, software, 0),
	PROTO__F_U64(PROTO_T_FEATURES, struct proto_ctrl_open, features, 0),
};

int proto_decode_ctrl_open(const uint8_t *body, size_t len,
			   struct proto_ctrl_open *m)
{
	memset(m, 0, sizeof(*m));
	return proto__decode(body, len, ctrl_open_fields,
			     PROTO__NFIELDS(ctrl_open_fields), m);
}

int proto_encode_data_open(struct proto_buf *b, const struct proto_data_open *m)
{
	proto_msg_begin(b, PROTO_DATA_OPEN);
	proto_put_bytes(b, PROTO_T_TEST_ID, m->test_id, PROTO_TEST_ID_LEN);
	proto_put_u16(b, PROTO_T_STREAM, m->stream);
	proto_put_u8(b, PROTO_T_DIR, m->dir);
	return proto_msg_end(b);
}

static const struct proto__field data_open_fields[] = {
	PROTO__F_BYTES(PROTO_T_TEST_ID, struct proto_data_open, test_id,
		       PROTO_TEST_ID_LEN, PROTO__REQUIRED),
	PROTO__F_U16(PROTO_T_STREAM, struct proto_data_open, stream,
		     PROTO__REQUIRED),
	PROTO__F_U8(PROTO_T_DIR, struct proto_data_open, dir, PROTO__REQUIRED),
};

int proto_decode_data_open(const uint8_t *body, size_t len,
			   struct proto_data_open *m)
{
	int r;

	memset(m, 0, sizeof(*m));
	r = proto__decode(body, len, data_open_fields,
			  PROTO__NFIELDS(data_open_fields), m);
	if (r)
		return r;
	if (m->dir > PROTO_DIR_S2C || m->stream >= 2 * PROTO_MAX_STREAMS)
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

static const struct proto__field error_fields[] = {
	PROTO__F_U32(PROTO_T_CODE, struct proto_error, code, PROTO__REQUIRED),
	PROTO__F_STR(PROTO_T_TEXT, struct proto_error, text, 0),
};

int proto_decode_error(const uint8_t *body, size_t len, struct proto_error *m)
{
	memset(m, 0, sizeof(*m));
	return proto__decode(body, len, error_fields,
			     PROTO__NFIELDS(error_fields), m);
}

int proto_encode_empty(struct proto_buf *b, uint8_t type)
{
	proto_msg_begin(b, type);
	return proto_msg_end(b);
}

int proto_decode_empty(const uint8_t *body, size_t len)
{
	return proto__decode(body, len, NULL, 0, NULL);
}
