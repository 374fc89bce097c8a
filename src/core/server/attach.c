// SPDX-License-Identifier: MIT
/* Data streams handed to the test waiting for them: TCP connections that
 * sent DATA_OPEN, and UDP streams' hellos. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "udp.h"
#include "server_int.h"
#include "banned.h"

/* Hand a data connection to its test. Returns NULL or a reason. */
const char *server__attach_stream(struct server *srv,
				  const struct proto_data_open *d, int fd,
				  struct conn *c)
{
	const char *why = "unknown test id";
	struct server_test *t;

	pthread_mutex_lock(&srv->lock);
	for (t = srv->tests; t; t = t->next) {
		struct bench_stream *s;

		if (!t->waiting ||
		    crypto_memcmp(t->id, d->test_id, PROTO_TEST_ID_LEN))
			continue;
		why = "stream index out of range";
		if (t->is_xfer) {
			struct conn *x;

			if (d->stream >= t->expected)
				break;
			x = &t->xconns[d->stream];
			why = "stream direction does not match the transfer";
			if (d->dir != t->xdir)
				break;
			why = "stream already connected";
			if (x->fd >= 0)
				break;
			why = "stream not secured like its control connection";
			if (!c->secure || c->cipher != t->cc.cipher)
				break;
			*x = *c;
			x->fd = fd;
			conn_init_plain(c, -1);
			t->attached++;
			pthread_cond_signal(&t->attach_cv);
			why = NULL;
			break;
		}
		if (d->stream >= t->run.nstreams)
			break;
		s = &t->run.streams[d->stream];
		why = "stream direction does not match the test";
		if (s->dir != d->dir)
			break;
		why = "stream already connected";
		if (s->fd >= 0)
			break;
		why = "stream not secured like its control connection";
		if (c->secure != t->cc.secure || c->cipher != t->cc.cipher)
			break;
		s->fd = fd;
		s->conn = *c; /* keys move to the stream */
		s->conn.abort = &t->run.abort;
		conn_init_plain(c, -1);
		t->attached++;
		pthread_cond_signal(&t->attach_cv);
		why = NULL;
		break;
	}
	pthread_mutex_unlock(&srv->lock);
	return why;
}

/*
 * A UDP stream's hello: the test waiting for it gets a socket of its own,
 * bound to the server's UDP port and connected to the sender, and the
 * answer goes out from it. Once that socket exists the sender's datagrams,
 * repeated hellos too, go to it and not here: a client whose answer was
 * lost takes TEST_START, sent once every stream is attached, as the
 * answer. Anything else is dropped without an answer.
 */
static void udp_hello(struct server *srv, const uint8_t *dg, size_t len,
		      const struct net_addr *peer)
{
	struct proto_data_open d;
	struct server_test *t;
	struct lr_err e = { 0 };
	uint8_t ack[PROTO_UDP_HELLO_LEN];
	int fd = -1;

	if (proto_decode_udp_hello(dg, len, false, &d))
		return;
	proto_encode_udp_hello(ack, &d, true);
	pthread_mutex_lock(&srv->lock);
	for (t = srv->tests; t; t = t->next) {
		struct bench_stream *s;

		if (!t->waiting || t->is_xfer || !t->run.req.udp ||
		    crypto_memcmp(t->id, d.test_id, PROTO_TEST_ID_LEN))
			continue;
		if (d.stream >= t->run.nstreams)
			break;
		s = &t->run.streams[d.stream];
		if (s->dir != d.dir)
			break;
		if (s->fd < 0) {
			fd = net_udp_socket(&srv->uaddr, peer, &e);
			if (fd < 0)
				break;
			s->fd = fd;
			t->attached++;
			pthread_cond_signal(&t->attach_cv);
		}
		if (send(s->fd, ack, sizeof(ack), MSG_DONTWAIT) < 0) {
			/* the client repeats its hello */
		}
		break;
	}
	pthread_mutex_unlock(&srv->lock);
}

void server__udp_read_some(struct server *srv)
{
	uint8_t dg[64];
	struct net_addr peer;
	unsigned n;
	ssize_t k;

	for (n = 0; n < 64; n++) {
		peer.len = sizeof(peer.ss);
		k = recvfrom(srv->ufd, dg, sizeof(dg), MSG_DONTWAIT | MSG_TRUNC,
			     (struct sockaddr *)&peer.ss, &peer.len);
		if (k < 0)
			return;
		if ((size_t)k <= sizeof(dg))
			udp_hello(srv, dg, (size_t)k, &peer);
	}
}
