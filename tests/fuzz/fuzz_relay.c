// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the frames of the connections carried through ssh
 * (relay.h): the input is what the other end sent, handed to a far
 * relay as bytes already read, its input then ending. OPEN frames
 * connect to a loopback port where nothing listens (refused at once).
 *
 * Invariants checked, beyond "no sanitizer report":
 *  - relay_run returns 0 or -EPROTO (nothing else: no hang, no other
 *    failure on any input);
 *  - a header that relay_hdr_decode accepts encodes back to the same 12
 *    bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_hdr(const uint8_t *data, size_t size)
{
	uint8_t again[RELAY_HDR], type;
	uint32_t chan, len;

	if (size < RELAY_HDR || relay_hdr_decode(data, &type, &chan, &len))
		return;
	relay_hdr_encode(again, type, chan, len);
	if (memcmp(again, data, RELAY_HDR))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct relay_opts o = { .addr = "127.0.0.1", .port = 9 };
	struct relay *r;
	int in[2], out[2], e;

	check_hdr(data, size);
	if (size > 64 * 1024)
		return 0;
	if (pipe2(in, O_CLOEXEC))
		return 0;
	if (pipe2(out, O_CLOEXEC)) {
		close(in[0]);
		close(in[1]);
		return 0;
	}
	close(in[1]); /* the other end has said all it will */
	o.in = in[0];
	o.out = out[1];
	o.pre = data;
	o.pre_len = size;
	if (!relay_new(&o, &r)) {
		e = relay_run(r);
		if (e != 0 && e != -EPROTO)
			abort();
		relay_free(r);
	}
	close(in[0]);
	close(out[0]);
	close(out[1]);
	return 0;
}
