// SPDX-License-Identifier: MIT
/* The UDP test's hello datagram and its answer. */
#include <string.h>

#include "err.h"
#include "proto_int.h"
#include "banned.h"

void proto_encode_udp_hello(uint8_t out[PROTO_UDP_HELLO_LEN],
			    const struct proto_data_open *d, bool ack)
{
	memcpy(out, ack ? "LRUA" : "LRUH", 4);
	memcpy(out + 4, d->test_id, PROTO_TEST_ID_LEN);
	proto__be16(out + 4 + PROTO_TEST_ID_LEN, d->stream);
	out[6 + PROTO_TEST_ID_LEN] = d->dir;
}

int proto_decode_udp_hello(const uint8_t *buf, size_t len, bool ack,
			   struct proto_data_open *d)
{
	if (len != PROTO_UDP_HELLO_LEN ||
	    memcmp(buf, ack ? "LRUA" : "LRUH", 4) ||
	    buf[6 + PROTO_TEST_ID_LEN] > PROTO_DIR_S2C ||
	    proto__rd16(buf + 4 + PROTO_TEST_ID_LEN) >= 2 * PROTO_MAX_STREAMS)
		return LR_EBADMSG;
	memcpy(d->test_id, buf + 4, PROTO_TEST_ID_LEN);
	d->stream = proto__rd16(buf + 4 + PROTO_TEST_ID_LEN);
	d->dir = buf[6 + PROTO_TEST_ID_LEN];
	return 0;
}
