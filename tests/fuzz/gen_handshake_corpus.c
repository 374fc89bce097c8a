// SPDX-License-Identifier: MIT
/*
 * Writes the seed corpus of fuzz_handshake into a directory:
 *
 *   build-fuzz/tests/fuzz/gen_handshake_corpus tests/fuzz/corpus/handshake
 *
 * Valid messages are made with the project's own code (session.c and
 * conn.c) under the fixed keys of handshake_fixture.h, so that the fuzzer
 * starts from inputs that reach the end of every path; a few invalid ones
 * stop at each check on the way. Run it again after a change to the
 * handshake, the record format or the fixture, and commit the output.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "crypto.h"
#include "net.h"
#include "proto.h"
#include "session.h"
#include "handshake_fixture.h"

static const char *const cipher_names[3] = { "aes", "chacha", "none" };

static const char *out_dir;

static void die(const char *what)
{
	fprintf(stderr, "gen_handshake_corpus: %s\n", what);
	exit(1);
}

/* Write mode byte + bytes into out_dir/name. */
static void put(const char *name, uint8_t mode_byte, const uint8_t *p,
		size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", out_dir, name);
	f = fopen(path, "wb");
	if (!f)
		die(path);
	if (fputc(mode_byte, f) == EOF ||
	    (len && fwrite(p, 1, len, f) != len) || fclose(f))
		die(path);
}

static uint8_t mode_byte(enum fx_mode m, unsigned ci)
{
	return (uint8_t)(m + FX_MODES * ci);
}

/* ---- the handshake ---- */

static void client_init(struct session_hs *c, const struct session_hello *h,
			uint8_t out[SESSION_HS_LEN])
{
	if (session_hs_init(c, fx_psk, NULL, 0) ||
	    session_hs_set_ephemeral(c, fx_client_e) ||
	    session_hs_write_init(c, h, out))
		die("HS_INIT");
}

static void gen_init(void)
{
	static const struct session_hello none = { SESSION_VERSION, CRYPTO_NONE,
						   0 };
	static const struct session_hello v1 = { 1, SESSION_CIPHER_AUTO, 0 };
	static const struct session_hello v3 = { 3, SESSION_CIPHER_AUTO, 0 };
	const uint8_t m = mode_byte(FX_READ_INIT, 0);
	uint8_t init[SESSION_HS_LEN], junk[SESSION_HS_LEN + 1];
	struct session_hs c;
	unsigned i;

	client_init(&c, &fx_client_hello, init);
	put("init_valid", m, init, sizeof(init));
	put("init_short", m, init, sizeof(init) - 1);
	memcpy(junk, init, sizeof(init));
	junk[SESSION_HS_LEN] = 0;
	put("init_long", m, junk, sizeof(junk));
	junk[40] ^= 1;
	put("init_bad_tag", m, junk, SESSION_HS_LEN);

	client_init(&c, &none, init);
	put("init_valid_wish_none", m, init, sizeof(init));
	client_init(&c, &v1, init);
	put("init_version_1", m, init, sizeof(init));
	client_init(&c, &v3, init);
	put("init_version_3", m, init, sizeof(init));

	/* a valid tag around an all-zero e: the server refuses to answer */
	if (session_hs_init(&c, fx_psk, NULL, 0))
		die("init");
	memset(c.e_pub, 0, sizeof(c.e_pub));
	c.fixed_e = true;
	if (session_hs_write_init(&c, &fx_client_hello, init))
		die("HS_INIT");
	put("init_zero_e", m, init, sizeof(init));

	for (i = 0; i < SESSION_HS_LEN; i++)
		junk[i] = (uint8_t)(i * 151 + 7);
	put("init_junk", m, junk, SESSION_HS_LEN);
	session_hs_wipe(&c);
}

static void gen_resp(void)
{
	static const struct session_hello refused = { SESSION_VERSION,
						      SESSION_CIPHER_REFUSED,
						      SESSION_F_HAS_AES };
	const uint8_t m = mode_byte(FX_READ_RESP, 0);
	uint8_t init[SESSION_HS_LEN], resp[SESSION_HS_LEN + 1];
	const struct session_hello *hellos[2] = { &fx_server_hello, &refused };
	static const char *const names[2] = { "resp_valid",
					      "resp_valid_refused" };
	struct session_hello peer;
	struct session_hs c, s;
	unsigned i;

	for (i = 0; i < 2; i++) {
		client_init(&c, &fx_client_hello, init);
		if (session_hs_init(&s, fx_psk, NULL, 0) ||
		    session_hs_set_ephemeral(&s, fx_server_e) ||
		    session_hs_read_init(&s, init, sizeof(init), &peer) ||
		    session_hs_write_resp(&s, hellos[i], resp))
			die("HS_RESP");
		/* check it before writing it */
		if (session_hs_read_resp(&c, resp, SESSION_HS_LEN, &peer))
			die("HS_RESP does not verify");
		put(names[i], m, resp, SESSION_HS_LEN);
	}
	put("resp_short", m, resp, SESSION_HS_LEN - 1);
	resp[SESSION_HS_LEN] = 0xff;
	put("resp_long", m, resp, SESSION_HS_LEN + 1);
	resp[50] ^= 0x80;
	put("resp_bad_tag", m, resp, SESSION_HS_LEN);
	/* HS_INIT where HS_RESP is due */
	put("resp_is_init", m, init, SESSION_HS_LEN);
	/* an all-zero server key */
	memset(resp, 0, 32);
	put("resp_zero_e", m, resp, SESSION_HS_LEN);
	session_hs_wipe(&c);
	session_hs_wipe(&s);
}

/* ---- records ---- */

struct stream {
	struct conn tx;
	int sv[2];
	uint8_t wire[16384];
	size_t len;
};

static void stream_open(struct stream *st, unsigned ci)
{
	memset(st, 0, sizeof(*st));
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, st->sv))
		die("socketpair");
	if (conn_init_secure(&st->tx, st->sv[0], fx_ciphers[ci], fx_rec_key,
			     fx_other_key))
		die("conn_init_secure");
}

/* Move what tx wrote into st->wire. */
static void stream_drain(struct stream *st)
{
	ssize_t n;

	for (;;) {
		n = recv(st->sv[1], st->wire + st->len,
			 sizeof(st->wire) - st->len, MSG_DONTWAIT);
		if (n > 0) {
			st->len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EAGAIN)
			return;
		die("recv");
	}
}

static void stream_close(struct stream *st)
{
	conn_fini(&st->tx);
	close(st->sv[0]);
	close(st->sv[1]);
}

static void send_msg(struct stream *st, struct proto_buf *b)
{
	if (b->err || conn_send_msg(&st->tx, b->p, b->len, net_now_ms() + 1000))
		die("conn_send_msg");
	stream_drain(st);
}

static void msg_ctrl_open(struct proto_buf *b, uint8_t *mem, size_t cap)
{
	struct proto_ctrl_open o = { .software = "linerate 0.1.0" };

	proto_buf_init(b, mem, cap);
	proto_encode_ctrl_open(b, &o);
}

static void msg_request(struct proto_buf *b, uint8_t *mem, size_t cap)
{
	struct proto_test_request rq = {
		.mode = PROTO_MODE_FORWARD,
		.streams = 4,
		.duration_ms = 10000,
		.blksize = 131072,
		.cc = "cubic",
	};

	proto_buf_init(b, mem, cap);
	proto_encode_test_request(b, &rq);
}

static void gen_records(unsigned ci)
{
	uint8_t mem[1024], data[1000];
	struct stream st;
	struct proto_buf b;
	char name[64];
	const char *cn = cipher_names[ci];

	/* conn_open_msg: one record */
	stream_open(&st, ci);
	msg_ctrl_open(&b, mem, sizeof(mem));
	send_msg(&st, &b);
	snprintf(name, sizeof(name), "open_%s_ctrl_open", cn);
	put(name, mode_byte(FX_OPEN_MSG, ci), st.wire, st.len);
	stream_close(&st);

	stream_open(&st, ci);
	proto_buf_init(&b, mem, sizeof(mem));
	proto_encode_empty(&b, PROTO_TEST_START);
	send_msg(&st, &b);
	snprintf(name, sizeof(name), "open_%s_test_start", cn);
	put(name, mode_byte(FX_OPEN_MSG, ci), st.wire, st.len);
	stream_close(&st);

	/* a sealed record holding a malformed message (reserved bits) */
	stream_open(&st, ci);
	proto_buf_init(&b, mem, sizeof(mem));
	proto_encode_empty(&b, PROTO_TEST_STOP);
	mem[2] = 1;
	send_msg(&st, &b);
	snprintf(name, sizeof(name), "open_%s_bad_message", cn);
	put(name, mode_byte(FX_OPEN_MSG, ci), st.wire, st.len);
	stream_close(&st);

	/* conn_recv_msg: a few records */
	stream_open(&st, ci);
	msg_ctrl_open(&b, mem, sizeof(mem));
	send_msg(&st, &b);
	msg_request(&b, mem, sizeof(mem));
	send_msg(&st, &b);
	proto_buf_init(&b, mem, sizeof(mem));
	proto_encode_empty(&b, PROTO_TEST_STOP);
	send_msg(&st, &b);
	snprintf(name, sizeof(name), "recvmsg_%s", cn);
	put(name, mode_byte(FX_RECV_MSG, ci), st.wire, st.len);
	snprintf(name, sizeof(name), "recvmsg_%s_cut", cn);
	put(name, mode_byte(FX_RECV_MSG, ci), st.wire, st.len - 5);
	stream_close(&st);

	/* conn_recv_data: records of several sizes, then END */
	stream_open(&st, ci);
	memset(data, 0x5a, sizeof(data));
	if (conn_send_data(&st.tx, CONN_REC_DATA, data, 100) ||
	    conn_send_data(&st.tx, CONN_REC_DATA, data, 0) ||
	    conn_send_data(&st.tx, CONN_REC_DATA, data, sizeof(data)) ||
	    conn_send_data(&st.tx, CONN_REC_END, data, 0))
		die("conn_send_data");
	stream_drain(&st);
	snprintf(name, sizeof(name), "recvdata_%s", cn);
	put(name, mode_byte(FX_RECV_DATA, ci), st.wire, st.len);
	/* without END: cut short */
	snprintf(name, sizeof(name), "recvdata_%s_no_end", cn);
	put(name, mode_byte(FX_RECV_DATA, ci), st.wire,
	    st.len - CONN_REC_HDR - CRYPTO_TAG_LEN);
	stream_close(&st);

	/* a control record on a data stream */
	stream_open(&st, ci);
	if (conn_send_data(&st.tx, CONN_REC_CTRL, data, 10))
		die("conn_send_data");
	stream_drain(&st);
	snprintf(name, sizeof(name), "recvdata_%s_ctrl_type", cn);
	put(name, mode_byte(FX_RECV_DATA, ci), st.wire, st.len);
	stream_close(&st);
}

int main(int argc, char **argv)
{
	unsigned ci;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	out_dir = argv[1];
	gen_init();
	gen_resp();
	for (ci = 0; ci < 3; ci++)
		gen_records(ci);
	return 0;
}
