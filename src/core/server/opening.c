// SPDX-License-Identifier: MIT
/* A new connection to linerate's server until it says what it is: the
 * preamble, the handshake when it has a token, its first message in clear
 * or in the first record, then CTRL_OPEN (a test's thread) or DATA_OPEN
 * (a stream handed to its test). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "session.h"
#include "server_int.h"
#include "banned.h"

static struct pending *pending_at(struct server *srv, unsigned i)
{
	return (struct pending *)lsn_at(&srv->lsn, i);
}

static int fcntl_blocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))
		return -errno;
	return 0;
}

void server__reject(struct server *srv, unsigned i, uint32_t code,
		    const char *reason)
{
	struct pending *p = pending_at(srv, i);

	if (code) {
		uint8_t junk[4096];
		unsigned k;

		server__send_error(&p->conn, code, "%s", reason);
		/* read what the peer already sent, so that closing does not
		 * answer with a reset that destroys the ERROR in flight */
		for (k = 0; k < 16; k++)
			if (recv(p->s.fd, junk, sizeof(junk), MSG_DONTWAIT) <=
			    0)
				break;
		shutdown(p->s.fd, SHUT_WR);
	}
	server__emit_reject(srv, p->s.peer, reason);
	lsn_drop(&srv->lsn, i, NULL);
}

int server__start_test(struct server *srv, struct pending *p)
{
	struct server_test *t, *o;
	int r;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->srv = srv;
	t->ctrl = p->s.fd;
	t->cc = p->conn; /* keys move to the test */
	conn_init_plain(&p->conn, -1);
	t->run.evfd = t->run.memfd = -1;
	snprintf(t->peer, sizeof(t->peer), "%s", p->s.peer);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&t->attach_cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_lock(&srv->lock);
	t->no = ++srv->next_no;
	srv->active++;
	srv->started++;
	for (o = srv->tests; o; o = o->next)
		if (!atomic_load(&o->finished) && o->overlap < srv->active - 1)
			o->overlap = srv->active - 1;
	t->overlap = srv->active - 1;
	t->next = srv->tests;
	srv->tests = t;
	pthread_mutex_unlock(&srv->lock);
	r = pthread_create(&t->thread, NULL, server__test_main, t);
	if (r) {
		pthread_mutex_lock(&srv->lock);
		srv->tests = t->next;
		srv->active--;
		srv->started--;
		pthread_mutex_unlock(&srv->lock);
		pthread_cond_destroy(&t->attach_cv);
		p->conn = t->cc; /* the caller still owns the connection */
		free(t);
		return -r;
	}
	return 0;
}

/* The first message is complete: decide what the connection is. */
static void pending_dispatch(struct server *srv, unsigned i,
			     const struct proto_hdr *h, const uint8_t *body)
{
	struct pending *p = pending_at(srv, i);
	struct proto_ctrl_open co;
	struct proto_data_open d;
	const char *why;
	char msg[160];
	unsigned active = 0;
	bool busy;

	if (srv->o.psk && !p->secured &&
	    (h->type == PROTO_CTRL_OPEN || h->type == PROTO_DATA_OPEN)) {
		server__reject(
			srv, i, PROTO_ERR_AUTH,
			"this server requires a token (LINERATE_TOKEN or "
			"--token-file)");
		return;
	}
	if (h->type == PROTO_CTRL_OPEN) {
		if (proto_decode_ctrl_open(body, h->len, &co)) {
			server__reject(srv, i, PROTO_ERR_BAD_REQUEST,
				       "malformed CTRL_OPEN");
			return;
		}
		pthread_mutex_lock(&srv->lock);
		active = srv->active;
		busy = srv->active >= srv->o.max_tests ||
		       (srv->o.once && srv->started > 0) ||
		       atomic_load(&srv->stopping);
		pthread_mutex_unlock(&srv->lock);
		if (busy) {
			snprintf(msg, sizeof(msg),
				 "server busy: %u of %u "
				 "test slots in use, try again later",
				 active, srv->o.max_tests);
			server__reject(srv, i, PROTO_ERR_BUSY, msg);
			return;
		}
		if (fcntl_blocking(p->s.fd) || server__start_test(srv, p)) {
			server__reject(srv, i, PROTO_ERR_INTERNAL,
				       "cannot start a test thread");
			return;
		}
		p->s.fd = -1; /* owned by the test now */
		lsn_drop(&srv->lsn, i, NULL);
		return;
	}
	if (h->type == PROTO_DATA_OPEN) {
		if (proto_decode_data_open(body, h->len, &d)) {
			server__reject(srv, i, PROTO_ERR_BAD_REQUEST,
				       "malformed DATA_OPEN");
			return;
		}
		if (fcntl_blocking(p->s.fd)) {
			server__reject(srv, i, 0, "fcntl failed");
			return;
		}
		why = server__attach_stream(srv, &d, p->s.fd, &p->conn);
		if (why) {
			server__reject(srv, i, PROTO_ERR_UNKNOWN_TEST, why);
			return;
		}
		p->s.fd = -1;
		lsn_drop(&srv->lsn, i, NULL);
		return;
	}
	snprintf(msg, sizeof(msg), "unexpected first message %s (0x%02x)",
		 proto_type_name(h->type), h->type);
	server__reject(srv, i, PROTO_ERR_UNEXPECTED, msg);
}

/* HS_INIT arrived: check the token, answer, switch to records. Returns
 * true if i was removed. */
static bool pending_handshake(struct server *srv, unsigned i,
			      const struct proto_hdr *h, const uint8_t *body)
{
	struct pending *p = pending_at(srv, i);
	uint8_t out[PROTO_HDR_LEN + SESSION_HS_LEN];
	uint8_t c2s[CRYPTO_KEY_LEN], s2c[CRYPTO_KEY_LEN];
	struct session_hello peer, me = { .version = SESSION_VERSION };
	struct session_hs hs;
	struct proto_buf b;
	enum crypto_cipher cipher;
	int r;

	if (!srv->o.psk) {
		server__reject(srv, i, PROTO_ERR_AUTH,
			       "this server has no token (start it with "
			       "--token-file)");
		return true;
	}
	r = session_hs_init(&hs, srv->o.psk, NULL, 0);
	if (!r)
		r = session_hs_read_init(&hs, body, h->len, &peer);
	if (r == -EACCES) {
		/* a flipped bit in flight looks the same: the penalty is
		 * seconds (docs/PROTOCOL.md section 5) */
		session_hs_wipe(&hs);
		lsn_penalize(&srv->lsn, p->s.host, net_now_ms());
		server__reject(srv, i, PROTO_ERR_AUTH,
			       "wrong token, or the connection was tampered "
			       "with");
		return true;
	}
	if (r) {
		session_hs_wipe(&hs);
		server__reject(srv, i, PROTO_ERR_BAD_REQUEST,
			       "malformed HS_INIT");
		return true;
	}
	/* the client holds the token: what it says it sent in clear must
	 * be what came */
	if (!session_hello_wire_ok(&peer, p->buf,
				   p->buf + PROTO_PREAMBLE_LEN)) {
		session_hs_wipe(&hs);
		server__reject(srv, i, PROTO_ERR_TAMPERED,
			       "the connection was tampered with (preamble "
			       "changed in transit)");
		return true;
	}
	cipher = session_pick_cipher(peer.cipher,
				     peer.flags & SESSION_F_HAS_AES,
				     crypto_cpu_has_aes());
	me.cipher = (uint8_t)cipher;
	/* a refusal travels inside the authenticated answer */
	if (cipher == CRYPTO_NONE && !srv->o.allow_plaintext)
		me.cipher = SESSION_CIPHER_REFUSED;
	me.flags = crypto_cpu_has_aes() ? SESSION_F_HAS_AES : 0;
	proto_buf_init(&b, out, sizeof(out));
	proto_msg_begin(&b, PROTO_HS_RESP);
	b.len += SESSION_HS_LEN; /* the body is raw */
	proto_msg_end(&b);
	memcpy(me.wire, p->sent, PROTO_PREAMBLE_LEN);
	memcpy(me.wire + PROTO_PREAMBLE_LEN, out, PROTO_HDR_LEN);
	r = session_hs_write_resp(&hs, &me, out + PROTO_HDR_LEN);
	if (!r)
		r = session_hs_split(&hs, c2s, s2c);
	else
		session_hs_wipe(&hs);
	if (!r)
		r = conn_init_secure(&p->conn, p->s.fd, cipher, s2c, c2s);
	crypto_wipe(c2s, sizeof(c2s));
	crypto_wipe(s2c, sizeof(s2c));
	if (!r && send(p->s.fd, out, sizeof(out),
		       MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(out))
		r = -EIO;
	if (r) {
		server__reject(srv, i, 0, "handshake failed");
		return true;
	}
	p->secured = true;
	p->have = 0;
	if (me.cipher == SESSION_CIPHER_REFUSED) {
		server__reject(
			srv, i, 0,
			"client asked for --cipher none; not allowed without "
			"--allow-plaintext");
		return true;
	}
	return false;
}

/* The client's first record is an ERROR (it found our preamble changed
 * on the way): log its words; no answer. */
static void client_ended(struct server *srv, unsigned i,
			 const struct proto_hdr *h, const uint8_t *body)
{
	char why[PROTO_MAX_TEXT + 32];

	(void)server__client_error(body, h->len, why, sizeof(why));
	server__reject(srv, i, 0, why);
}

/* After the handshake: the first record, holding CTRL_OPEN or DATA_OPEN.
 * Returns true if i was removed. */
static bool pending_record(struct server *srv, unsigned i, size_t *need)
{
	struct pending *p = pending_at(srv, i);
	struct lr_err e = { 0 };
	struct proto_hdr h;
	size_t len;
	int r;

	*need = CONN_REC_HDR;
	if (p->have < CONN_REC_HDR)
		return false;
	len = ((size_t)p->buf[1] << 16) | ((size_t)p->buf[2] << 8) | p->buf[3];
	if (p->buf[0] != CONN_REC_CTRL || len < PROTO_HDR_LEN ||
	    len > PROTO_HDR_LEN + PROTO_MAX_OPEN_BODY) {
		server__reject(srv, i, PROTO_ERR_BAD_REQUEST,
			       "bad first record");
		return true;
	}
	*need = CONN_REC_HDR + len + CRYPTO_TAG_LEN;
	if (p->have < *need)
		return false;
	r = conn_open_msg(&p->conn, p->buf, p->buf + CONN_REC_HDR, len, &h, &e);
	if (r) {
		server__reject(srv, i, PROTO_ERR_BAD_REQUEST, e.msg);
		return true;
	}
	if (h.type == PROTO_ERROR) {
		client_ended(srv, i, &h, p->buf + CONN_REC_HDR + PROTO_HDR_LEN);
		return true;
	}
	pending_dispatch(srv, i, &h, p->buf + CONN_REC_HDR + PROTO_HDR_LEN);
	return true;
}

/* What a step of reading a new connection came to. */
enum step {
	STEP_WAIT,  /* nothing more to read now */
	STEP_MORE,  /* read on */
	STEP_AGAIN, /* the handshake is done: the first record comes */
	STEP_GONE,  /* it left the table */
};

/*
 * In clear, before any handshake: how many bytes the preamble and the
 * first message's header say are due (*need), or, once they are all
 * here, that message: HS_INIT starts the handshake, anything else is
 * dispatched.
 */
static enum step clear_step(struct server *srv, unsigned i, size_t *need)
{
	struct pending *p = pending_at(srv, i);
	const uint8_t *q = p->buf + PROTO_PREAMBLE_LEN;
	struct proto_hdr h;
	char msg[160];
	int r;

	*need = PROTO_PREAMBLE_LEN;
	if (p->have >= PROTO_PREAMBLE_LEN)
		*need += PROTO_HDR_LEN;
	if (p->have < PROTO_PREAMBLE_LEN + PROTO_HDR_LEN)
		return STEP_MORE;
	r = proto_decode_hdr(q, PROTO_HDR_LEN, PROTO_MAX_OPEN_BODY, &h);
	if (r == LR_ETOOBIG) {
		snprintf(msg, sizeof(msg),
			 "announced a %u-byte first message (limit %u)",
			 ((unsigned)q[4] << 24) | (q[5] << 16) | (q[6] << 8) |
				 q[7],
			 PROTO_MAX_OPEN_BODY);
		server__reject(srv, i, PROTO_ERR_BAD_REQUEST, msg);
		return STEP_GONE;
	}
	if (r < 0) {
		server__reject(srv, i, PROTO_ERR_BAD_REQUEST,
			       "malformed message header");
		return STEP_GONE;
	}
	*need += h.len;
	if (p->have < *need)
		return STEP_MORE;
	if (h.type != PROTO_HS_INIT) {
		pending_dispatch(srv, i, &h, q + PROTO_HDR_LEN);
		return STEP_GONE;
	}
	return pending_handshake(srv, i, &h, q + PROTO_HDR_LEN) ? STEP_GONE
								: STEP_AGAIN;
}

/* Once the client's preamble is here: ours, with the version chosen. */
static bool answer_preamble(struct server *srv, unsigned i)
{
	struct pending *p = pending_at(srv, i);
	uint8_t reply[PROTO_PREAMBLE_LEN];
	struct proto_preamble pre;
	char msg[160];
	uint8_t v;

	if (p->answered || p->have < 4)
		return false;
	if (proto_decode_preamble(p->buf, p->have, &pre) == LR_ENOTLINERATE) {
		server__reject(srv, i, 0,
			       "not a linerate client (garbage or another "
			       "protocol)");
		return true;
	}
	if (p->have < PROTO_PREAMBLE_LEN)
		return false;
	v = proto_version_choose(pre.vmin, pre.vmax, PROTO_VERSION_MIN,
				 PROTO_VERSION_MAX);
	proto_encode_preamble(reply, PROTO_VERSION_MIN, PROTO_VERSION_MAX, v);
	memcpy(p->sent, reply, sizeof(reply));
	p->answered = true;
	if (send(p->s.fd, reply, sizeof(reply), MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(reply)) {
		server__reject(srv, i, 0, "cannot answer");
		return true;
	}
	if (!v) {
		snprintf(msg, sizeof(msg),
			 "incompatible version: client speaks %u..%u", pre.vmin,
			 pre.vmax);
		server__reject(srv, i, 0, msg);
		return true;
	}
	return false;
}

/* Up to need bytes more: STEP_MORE when some came, STEP_WAIT when none
 * is there yet, STEP_GONE when the peer closed or failed. */
static enum step read_more(struct server *srv, unsigned i, size_t need)
{
	struct pending *p = pending_at(srv, i);
	char msg[160];
	ssize_t n;

	n = recv(p->s.fd, p->buf + p->have, need - p->have, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return STEP_WAIT;
	if (n == 0)
		snprintf(msg, sizeof(msg),
			 "closed after %zu bytes, before identifying itself",
			 p->have);
	else if (n < 0)
		snprintf(msg, sizeof(msg), "read: %s", lr_strerror(errno));
	if (n <= 0) {
		server__reject(srv, i, 0, msg);
		return STEP_GONE;
	}
	p->have += (size_t)n;
	return STEP_MORE;
}

/* Read what a pending connection has sent; returns true if i was removed. */
bool server__pending_read(struct server *srv, unsigned i)
{
	struct pending *p = pending_at(srv, i);
	enum step st;
	size_t need;

	for (;;) {
		if (p->secured) {
			if (pending_record(srv, i, &need))
				return true;
		} else {
			st = clear_step(srv, i, &need);
			if (st == STEP_GONE)
				return true;
			if (st == STEP_AGAIN)
				continue;
		}
		st = read_more(srv, i, need);
		if (st != STEP_MORE)
			return st == STEP_GONE;
		if (!p->secured && answer_preamble(srv, i))
			return true;
	}
}
