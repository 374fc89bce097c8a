// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "conn.h"
#include "net.h"
#include "session.h"
#include "banned.h"

static const char rekey_label[] = "linerate rekey";

void conn_init_plain(struct conn *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
}

int conn_init_secure(struct conn *c, int fd, enum crypto_cipher cipher,
		     const uint8_t tx[CRYPTO_KEY_LEN],
		     const uint8_t rx[CRYPTO_KEY_LEN])
{
	enum crypto_cipher rc = cipher == CRYPTO_NONE ? CRYPTO_CHACHA20POLY1305
						      : cipher;
	int r;

	conn_init_plain(c, fd);
	c->secure = true;
	c->cipher = cipher;
	c->rekey_records = CONN_REKEY_RECORDS;
	c->rekey_bytes = CONN_REKEY_BYTES;
	memcpy(c->tx.key, tx, CRYPTO_KEY_LEN);
	memcpy(c->rx.key, rx, CRYPTO_KEY_LEN);
	r = crypto_aead_new(rc, tx, &c->tx.aead);
	if (!r)
		r = crypto_aead_new(rc, rx, &c->rx.aead);
	if (r)
		conn_fini(c);
	return r;
}

void conn_fini(struct conn *c)
{
	crypto_aead_free(c->tx.aead);
	crypto_aead_free(c->rx.aead);
	c->tx.aead = c->rx.aead = NULL;
	crypto_wipe(c->tx.key, sizeof(c->tx.key));
	crypto_wipe(c->rx.key, sizeof(c->rx.key));
}

bool conn_data_sealed(const struct conn *c)
{
	return c->secure && c->cipher != CRYPTO_NONE;
}

/* Next key: HKDF-Expand(key, "linerate rekey"), both sides at the same
 * record, so no message is needed. */
static int dir_advance(const struct conn *c, struct conn_dir *d, size_t len)
{
	uint8_t next[CRYPTO_KEY_LEN];
	int r;

	d->seq++;
	d->bytes += len;
	if (d->seq < c->rekey_records && d->bytes < c->rekey_bytes)
		return 0;
	r = crypto_hkdf_expand(d->key, (const uint8_t *)rekey_label,
			       sizeof(rekey_label) - 1, next, sizeof(next));
	if (!r)
		r = crypto_aead_rekey(d->aead, next);
	if (!r)
		memcpy(d->key, next, sizeof(next));
	crypto_wipe(next, sizeof(next));
	d->seq = 0;
	d->bytes = 0;
	return r;
}

static void rec_nonce(uint64_t seq, uint8_t nonce[CRYPTO_NONCE_LEN])
{
	unsigned i;

	memset(nonce, 0, 4);
	for (i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(seq >> (56 - 8 * i));
}

static void rec_hdr(uint8_t hdr[CONN_REC_HDR], uint8_t type, size_t len)
{
	hdr[0] = type;
	hdr[1] = (uint8_t)(len >> 16);
	hdr[2] = (uint8_t)(len >> 8);
	hdr[3] = (uint8_t)len;
}

static int seal(struct conn *c, uint8_t hdr[CONN_REC_HDR], uint8_t *buf,
		size_t len, uint8_t tag[CRYPTO_TAG_LEN])
{
	uint8_t nonce[CRYPTO_NONCE_LEN];
	int r;

	rec_nonce(c->tx.seq, nonce);
	r = crypto_aead_seal(c->tx.aead, nonce, hdr, CONN_REC_HDR, buf, len,
			     tag);
	return r ? r : dir_advance(c, &c->tx, len);
}

static int open_rec(struct conn *c, const uint8_t hdr[CONN_REC_HDR],
		    uint8_t *buf, size_t len, const uint8_t *tag)
{
	uint8_t nonce[CRYPTO_NONCE_LEN];
	int r;

	rec_nonce(c->rx.seq, nonce);
	r = crypto_aead_open(c->rx.aead, nonce, hdr, CONN_REC_HDR, buf, len,
			     tag);
	if (r == -EBADMSG)
		return LR_ERECORD;
	return r ? r : dir_advance(c, &c->rx, len);
}

int conn_send_msg(struct conn *c, uint8_t *msg, size_t len, int64_t deadline_ms)
{
	uint8_t hdr[CONN_REC_HDR], tag[CRYPTO_TAG_LEN];
	int r;

	if (!c->secure)
		return net_write_full(c->fd, msg, len, deadline_ms);
	if (len > CONN_REC_MAX)
		return -EMSGSIZE;
	rec_hdr(hdr, CONN_REC_CTRL, len);
	r = seal(c, hdr, msg, len, tag);
	if (r)
		return r;
	/* one write: a record split over segments could be cut off by a
	 * close that follows it (an ERROR before the server hangs up) */
	{
		struct iovec iov[3] = {
			{ .iov_base = hdr, .iov_len = sizeof(hdr) },
			{ .iov_base = msg, .iov_len = len },
			{ .iov_base = tag, .iov_len = sizeof(tag) },
		};

		return net_writev_full(c->fd, iov, 3, deadline_ms);
	}
}

int conn_recv_msg(struct conn *c, uint8_t *buf, size_t cap, struct proto_hdr *h,
		  int64_t deadline_ms, struct lr_err *err)
{
	uint8_t hdr[CONN_REC_HDR];
	size_t len, max;
	int r;

	if (!c->secure)
		return net_recv_msg(c->fd, buf, cap, h, deadline_ms, err);
	if (cap < PROTO_HDR_LEN + CRYPTO_TAG_LEN)
		return lr_err_set(err, -ENOBUFS, "message buffer");
	r = net_read_full(c->fd, hdr, sizeof(hdr), deadline_ms);
	if (r)
		return lr_err_setc(err, r, "reading record header");
	len = ((size_t)hdr[1] << 16) | ((size_t)hdr[2] << 8) | hdr[3];
	max = cap - CRYPTO_TAG_LEN;
	if (max > PROTO_HDR_LEN + PROTO_MAX_BODY)
		max = PROTO_HDR_LEN + PROTO_MAX_BODY;
	if (hdr[0] != CONN_REC_CTRL || len < PROTO_HDR_LEN || len > max)
		return lr_err_set(err, LR_EBADMSG,
				  "bad control record "
				  "(type %u, %zu bytes)",
				  hdr[0], len);
	r = net_read_full(c->fd, buf, len + CRYPTO_TAG_LEN, deadline_ms);
	if (r)
		return lr_err_setc(err, r, "reading record");
	r = conn_open_msg(c, hdr, buf, len, h, err);
	if (!r)
		memmove(buf, buf + PROTO_HDR_LEN, h->len);
	return r;
}

int conn_open_msg(struct conn *c, const uint8_t hdr[CONN_REC_HDR], uint8_t *rec,
		  size_t len, struct proto_hdr *h, struct lr_err *err)
{
	int r;

	if (hdr[0] != CONN_REC_CTRL || len < PROTO_HDR_LEN)
		return lr_err_set(err, LR_EBADMSG, "bad control record");
	r = open_rec(c, hdr, rec, len, rec + len);
	if (r)
		return lr_err_setc(err, r, "control record");
	r = proto_decode_hdr(rec, len, len - PROTO_HDR_LEN, h);
	if (r < 0 || h->len != len - PROTO_HDR_LEN)
		return lr_err_set(err, LR_EBADMSG,
				  "malformed message in "
				  "record");
	return 0;
}

/* Write iov fully, retrying on send timeouts until *abort. */
static int send_all(struct conn *c, struct iovec *iov, int n)
{
	struct msghdr mh;
	ssize_t k;

	while (n) {
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = iov;
		mh.msg_iovlen = (size_t)n;
		k = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (c->abort && atomic_load(c->abort))
					return -ECANCELED;
				continue;
			}
			return -errno;
		}
		n = net_iov_advance(&iov, n, (size_t)k);
	}
	return 0;
}

/* Read exactly len bytes; 1 at a clean end of file before any byte. */
static int recv_all(struct conn *c, uint8_t *buf, size_t len)
{
	size_t got = 0;
	ssize_t k;

	while (got < len) {
		k = recv(c->fd, buf + got, len - got, MSG_WAITALL);
		if (k > 0) {
			got += (size_t)k;
			continue;
		}
		if (k == 0)
			return got ? LR_ETRUNC : 1;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			if (c->abort && atomic_load(c->abort))
				return -ECANCELED;
			continue;
		}
		return -errno;
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int conn_send_data(struct conn *c, uint8_t type, uint8_t *buf, size_t len)
{
	uint8_t hdr[CONN_REC_HDR], tag[CRYPTO_TAG_LEN];
	struct iovec iov[3];
	bool sealed = conn_data_sealed(c);
	uint64_t t0 = 0, t1;
	int r;

	if (len > CONN_REC_MAX)
		return -EMSGSIZE;
	rec_hdr(hdr, type, len);
	if (c->timing)
		t0 = now_ns();
	if (sealed) {
		r = seal(c, hdr, buf, len, tag);
		if (r)
			return r;
	}
	if (c->timing) {
		t1 = now_ns();
		c->cipher_ns += t1 - t0;
		t0 = t1;
	}
	iov[0] = (struct iovec){ .iov_base = hdr, .iov_len = sizeof(hdr) };
	iov[1] = (struct iovec){ .iov_base = buf, .iov_len = len };
	iov[2] = (struct iovec){ .iov_base = tag, .iov_len = sizeof(tag) };
	r = send_all(c, iov, sealed ? 3 : 2);
	if (c->timing)
		c->io_ns += now_ns() - t0;
	return r;
}

int conn_recv_data(struct conn *c, uint8_t *buf, size_t cap, uint8_t *type,
		   size_t *len)
{
	uint8_t hdr[CONN_REC_HDR];
	bool sealed = conn_data_sealed(c);
	size_t n, tl = sealed ? CRYPTO_TAG_LEN : 0;
	uint64_t t0 = 0, t1;
	int r;

	if (c->timing)
		t0 = now_ns();
	r = recv_all(c, hdr, sizeof(hdr));
	if (r == 1)
		return LR_ETRUNC; /* end of file without an END record */
	if (r)
		return r;
	n = ((size_t)hdr[1] << 16) | ((size_t)hdr[2] << 8) | hdr[3];
	/* framing before authentication: a record too long for the stream
	 * or not a data record is not the cipher's finding */
	if ((hdr[0] != CONN_REC_DATA && hdr[0] != CONN_REC_END) ||
	    n + tl > cap || (hdr[0] == CONN_REC_END && n))
		return LR_EFRAME;
	r = recv_all(c, buf, n + tl);
	if (r == 1)
		return LR_ETRUNC;
	if (r)
		return r;
	if (c->timing) {
		t1 = now_ns();
		c->io_ns += t1 - t0;
		t0 = t1;
	}
	if (sealed) {
		r = open_rec(c, hdr, buf, n, buf + n);
		if (r)
			return r;
		if (c->timing)
			c->cipher_ns += now_ns() - t0;
	}
	*type = hdr[0];
	*len = n;
	return 0;
}

int conn_recv_eof(struct conn *c, int64_t timeout_ms)
{
	int64_t end = net_now_ms() + timeout_ms, left;
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	uint8_t b;
	ssize_t k;

	for (;;) {
		k = recv(c->fd, &b, 1, MSG_DONTWAIT);
		if (k == 0)
			return 0;
		if (k > 0)
			return LR_EFRAME;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (c->abort && atomic_load(c->abort))
			return -ECANCELED;
		left = end - net_now_ms();
		if (left <= 0)
			return LR_ETIMEOUT;
		/* wake now and then to see the abort flag */
		(void)poll(&pfd, 1, left < 100 ? (int)left : 100);
	}
}

/* The message a changed preamble or handshake header gives. */
#define TAMPERED \
	"the connection was tampered with (preamble changed in transit)"

/*
 * The server's preamble, into raw (as received). Its chosen version must
 * be one both ranges hold, and 0 only when they have none in common: a
 * server that refuses a version we share, or picks one we do not speak,
 * was shown a changed preamble or sent one changed on the way.
 */
static int read_preamble(int fd, const char *where, int64_t deadline_ms,
			 uint8_t raw[PROTO_PREAMBLE_LEN], struct lr_err *err)
{
	struct proto_preamble pre;
	uint8_t common;
	int r;

	r = net_read_full(fd, raw, PROTO_PREAMBLE_LEN, deadline_ms);
	if (r == LR_ECLOSED)
		return lr_err_set(err, LR_ENOTLINERATE,
				  "%s closed the "
				  "connection without answering: not a "
				  "linerate server?",
				  where);
	if (r == LR_ETIMEOUT)
		return lr_err_set(err, r, "%s did not answer in time", where);
	if (r)
		return lr_err_setc(err, r, "%s", where);
	if (proto_decode_preamble(raw, PROTO_PREAMBLE_LEN, &pre) < 0)
		return lr_err_set(err, LR_ENOTLINERATE,
				  "%s does not speak "
				  "the linerate protocol (an iperf3 server?)",
				  where);
	common = proto_version_choose(pre.vmin, pre.vmax, PROTO_VERSION_MIN,
				      PROTO_VERSION_MAX);
	if (!pre.chosen && !common)
		return lr_err_set(err, LR_EVERSION,
				  "incompatible version: "
				  "server speaks protocol %u..%u, this client "
				  "%u..%u",
				  pre.vmin, pre.vmax, PROTO_VERSION_MIN,
				  PROTO_VERSION_MAX);
	if (pre.chosen != common && common)
		return lr_err_set(err, LR_ETAMPER,
				  "%s: " TAMPERED ": the server chose version "
				  "%u where both speak %u",
				  where, pre.chosen, common);
	if (pre.chosen != common)
		return lr_err_set(err, LR_ETAMPER,
				  "%s: " TAMPERED ": the server chose version "
				  "%u, which this client does not speak",
				  where, pre.chosen);
	return 0;
}

/* An ERROR from the server before the handshake ended. */
static int early_error(const uint8_t *body, size_t len, const char *where,
		       struct lr_err *err)
{
	struct proto_error pe;

	if (proto_decode_error(body, len, &pe))
		return lr_err_set(err, LR_EBADMSG, "%s sent a malformed error",
				  where);
	if (pe.code == PROTO_ERR_AUTH)
		return lr_err_set(err, LR_EAUTH, "authentication failed: %s",
				  pe.text);
	if (pe.code == PROTO_ERR_TAMPERED)
		return lr_err_set(err, LR_ETAMPER, "%s: %s", where, pe.text);
	if (pe.code == PROTO_ERR_BUSY)
		return lr_err_set(err, LR_EBUSY, "%s", pe.text);
	return lr_err_set(err, LR_EPEER, "server error: %s", pe.text);
}

/* The preamble and, with a token, HS_INIT after it, in one write; hs is
 * set up when psk is given (wiped again on failure). The hello repeats
 * the preamble and HS_INIT's header as sent. */
static int client_hello(int fd, const uint8_t *psk, uint8_t wish,
			const char *where, int64_t deadline_ms,
			struct session_hs *hs, struct lr_err *err)
{
	uint8_t out[PROTO_PREAMBLE_LEN + PROTO_HDR_LEN + SESSION_HS_LEN];
	struct session_hello me = { .version = SESSION_VERSION,
				    .cipher = wish };
	size_t n = PROTO_PREAMBLE_LEN;
	struct proto_buf b;
	int r;

	_Static_assert(SESSION_WIRE_LEN == PROTO_PREAMBLE_LEN + PROTO_HDR_LEN,
		       "the wire is a preamble and a header");
	proto_encode_preamble(out, PROTO_VERSION_MIN, PROTO_VERSION_MAX, 0);
	if (psk) {
		me.flags = crypto_cpu_has_aes() ? SESSION_F_HAS_AES : 0;
		r = session_hs_init(hs, psk, NULL, 0);
		if (r)
			return lr_err_setc(err, r, "handshake");
		proto_buf_init(&b, out + n, sizeof(out) - n);
		proto_msg_begin(&b, PROTO_HS_INIT);
		b.len += SESSION_HS_LEN; /* the body is raw */
		proto_msg_end(&b);
		memcpy(me.wire, out, SESSION_WIRE_LEN);
		r = session_hs_write_init(hs, &me, out + n + PROTO_HDR_LEN);
		if (r) {
			session_hs_wipe(hs);
			return lr_err_setc(err, r, "handshake");
		}
		n += b.len;
	}
	r = net_write_full(fd, out, n, deadline_ms);
	if (r) {
		if (psk)
			session_hs_wipe(hs);
		return lr_err_setc(err, r, "%s", where);
	}
	return 0;
}

/* The server's HS_RESP, read and checked against hs; its hello in srv,
 * its header as received in hdr. */
static int client_read_resp(int fd, const char *where, int64_t deadline_ms,
			    struct session_hs *hs, struct session_hello *srv,
			    uint8_t hdr[PROTO_HDR_LEN], struct lr_err *err)
{
	uint8_t body[PROTO_HDR_LEN + PROTO_MAX_TEXT + 64];
	struct proto_hdr h;
	int r;

	r = net_recv_msg(fd, body, sizeof(body), &h, deadline_ms, err);
	if (r == LR_ECLOSED)
		return lr_err_set(err, LR_EAUTH,
				  "authentication failed: %s closed the "
				  "connection during the handshake",
				  where);
	if (r)
		return r;
	if (h.type == PROTO_ERROR)
		return early_error(body, h.len, where, err);
	if (h.type != PROTO_HS_RESP)
		return lr_err_set(err, LR_EBADMSG,
				  "expected HS_RESP from %s, got %s", where,
				  proto_type_name(h.type));
	proto_encode_hdr(hdr, &h);
	r = session_hs_read_resp(hs, body, h.len, srv);
	/* a server that took our HS_INIT holds our token: an answer that
	 * does not verify was changed on the way, or is not that server's */
	if (r == -EACCES)
		return lr_err_set(err, LR_EAUTH,
				  "authentication failed: the handshake answer "
				  "of %s did not verify (another token, or the "
				  "connection was tampered with)",
				  where);
	if (r)
		return lr_err_set(err, LR_EBADMSG, "malformed HS_RESP from %s",
				  where);
	return 0;
}

/* A changed preamble found after the handshake: tell the server in a
 * sealed ERROR (so that its log says why), at most a short wait. */
static void tell_tampered(struct conn *c)
{
	uint8_t msg[PROTO_HDR_LEN + PROTO_MAX_TEXT + 16 + CRYPTO_TAG_LEN];
	struct proto_error pe = { .code = PROTO_ERR_TAMPERED };
	struct proto_buf b;

	snprintf(pe.text, sizeof(pe.text), "%s", TAMPERED);
	proto_buf_init(&b, msg, sizeof(msg) - CRYPTO_TAG_LEN);
	if (proto_encode_error(&b, &pe) == 0)
		(void)conn_send_msg(c, msg, b.len, net_now_ms() + 500);
}

/* The cipher the server chose: one we know, the one asked for, and
 * never data in clear unless asked for by name. */
static int client_check_cipher(uint8_t chosen, uint8_t wish, struct lr_err *err)
{
	if (chosen == SESSION_CIPHER_REFUSED)
		return lr_err_set(err, LR_EPEER,
				  "the server does not allow --cipher none "
				  "(it must be started with "
				  "--allow-plaintext)");
	if (chosen != CRYPTO_AES256GCM && chosen != CRYPTO_CHACHA20POLY1305 &&
	    chosen != CRYPTO_NONE)
		return lr_err_set(err, LR_EBADMSG,
				  "server chose an unknown cipher %u", chosen);
	if (wish != SESSION_CIPHER_AUTO && chosen != wish)
		return lr_err_set(err, LR_EBADMSG,
				  "server chose %s, not the %s asked for",
				  crypto_cipher_name(chosen),
				  crypto_cipher_name(wish));
	/* auto means one of the two ciphers, never data in clear */
	if (wish == SESSION_CIPHER_AUTO && chosen == CRYPTO_NONE)
		return lr_err_set(err, LR_EBADMSG,
				  "server chose none, not a cipher as asked "
				  "for");
	return 0;
}

int conn_client_open(int fd, const uint8_t *psk, uint8_t wish,
		     const char *where, int64_t deadline_ms, struct conn *c,
		     struct lr_err *err)
{
	uint8_t c2s[CRYPTO_KEY_LEN], s2c[CRYPTO_KEY_LEN];
	uint8_t pre[PROTO_PREAMBLE_LEN], hdr[PROTO_HDR_LEN];
	struct session_hello srv;
	struct session_hs hs;
	bool changed;
	int r;

	r = client_hello(fd, psk, wish, where, deadline_ms, &hs, err);
	if (r)
		return r;
	r = read_preamble(fd, where, deadline_ms, pre, err);
	if (!r && !psk) {
		conn_init_plain(c, fd);
		return 0;
	}
	if (!r)
		r = client_read_resp(fd, where, deadline_ms, &hs, &srv, hdr,
				     err);
	changed = !r && !session_hello_wire_ok(&srv, pre, hdr);
	if (!r && !changed)
		r = client_check_cipher(srv.cipher, wish, err);
	if (r) {
		if (psk)
			session_hs_wipe(&hs);
		return r;
	}
	r = session_hs_split(&hs, c2s, s2c);
	if (!r)
		r = conn_init_secure(c, fd, srv.cipher, c2s, s2c);
	crypto_wipe(c2s, sizeof(c2s));
	crypto_wipe(s2c, sizeof(s2c));
	if (changed) {
		if (!r) {
			tell_tampered(c);
			conn_fini(c);
		}
		return lr_err_set(err, LR_ETAMPER, "%s: " TAMPERED, where);
	}
	if (r)
		return lr_err_setc(err, r, "session keys");
	return 0;
}
