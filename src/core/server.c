// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "bench.h"
#include "conn.h"
#include "doctor.h"
#include "fsio.h"
#include "xfer.h"
#include "crypto.h"
#include "session.h"
#include "udp.h"
#include "server.h"
#include "banned.h"

#define CTRL_TIMEOUT_MS	  10000
#define ATTACH_TIMEOUT_MS 10000
#define STOP_GRACE_MS	  5000
#define SAMPLE_MS	  1000
/* the first message, in clear or in its record */
#define OPEN_BUF                                                    \
	(PROTO_PREAMBLE_LEN + PROTO_HDR_LEN + PROTO_MAX_OPEN_BODY + \
	 CONN_REC_HDR + CRYPTO_TAG_LEN)
#define BUF_LEN (PROTO_MAX_BODY + PROTO_HDR_LEN + CONN_REC_HDR + CRYPTO_TAG_LEN)
/* an address that failed to authenticate waits this long, doubling */
#define PENALTY_FIRST_MS  1000
#define PENALTY_MAX_MS	  30000
#define PENALTY_FORGET_MS (10 * 60 * 1000)
#define PENALTY_SLOTS	  64

struct server_test {
	struct server *srv;
	struct server_test *next;
	unsigned no;
	int ctrl;
	struct conn cc; /* control messages on ctrl */
	char peer[NET_ADDRSTR];
	uint8_t id[PROTO_TEST_ID_LEN];
	bool waiting; /* accepting data connections */
	unsigned attached, expected;
	/* a file transfer's data connections */
	bool is_xfer;
	uint8_t xdir;
	struct conn *xconns;
	pthread_cond_t attach_cv;
	struct bench_run run;
	pthread_t thread;
	_Atomic bool finished;
	unsigned overlap; /* most other tests at once; under srv->lock */
	int result;
};

/* A connection that has not yet said what it is. */
struct pending {
	int fd;
	struct conn conn; /* plain until the handshake is done */
	char peer[NET_ADDRSTR];
	uint8_t host[16]; /* address without port, for penalties */
	uint8_t buf[OPEN_BUF];
	size_t have;
	int64_t deadline;
	int64_t hold_until; /* penalty: not read before */
	bool answered;	    /* our preamble was sent */
	bool secured;	    /* handshake done; a record comes next */
};

/* Failed authentications per address. */
struct penalty {
	uint8_t host[16];
	unsigned fails;
	int64_t until, last;
};

struct server {
	struct server_opts o;
	struct server_callbacks cb;
	int lfd;
	int ufd; /* UDP tests' streams say hello here; -1 = none */
	struct net_addr uaddr; /* its address, for the streams' sockets */
	int evfd;
	_Atomic bool stopping;
	pthread_mutex_t lock;
	struct server_test *tests;
	unsigned active;
	unsigned next_no;
	unsigned started;
	int once_result;
	struct pending pend[SERVER_MAX_PENDING];
	unsigned npend;
	struct penalty pen[PENALTY_SLOTS];
};

static void emit(struct server *srv, struct server_event *ev)
{
	if (srv->cb.event)
		srv->cb.event(srv->cb.ctx, ev);
}

static void emit_reject(struct server *srv, const char *peer,
			const char *reason)
{
	struct server_event ev = { .kind = SERVER_EV_CONN_REJECTED,
				   .reason = reason };

	snprintf(ev.peer, sizeof(ev.peer), "%s", peer);
	emit(srv, &ev);
}

static void wake(struct server *srv)
{
	uint64_t one = 1;

	if (write(srv->evfd, &one, sizeof(one)) < 0) {
		/* counter full is impossible; ignore */
	}
}

/* The UDP socket of UDP tests, on the TCP port's number. Without it (the
 * port is taken) the server still serves TCP and refuses UDP tests. */
static void open_udp_port(struct server *srv, const struct net_addr *addr)
{
	struct lr_err e = { 0 };
	uint16_t port = net_local_port(srv->lfd);
	int fd;

	srv->uaddr = *addr;
	net_addr_set_port(&srv->uaddr, port);
	fd = net_udp_socket(&srv->uaddr, NULL, &e);
	if (fd < 0)
		return;
	if (fcntl(fd, F_SETFL, O_NONBLOCK)) {
		close(fd);
		return;
	}
	srv->ufd = fd;
}

int server_new(const struct server_opts *o, const struct server_callbacks *cb,
	       struct server **out, struct lr_err *err)
{
	struct net_addr addr;
	struct server *srv;
	int r;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return lr_err_setc(err, -ENOMEM, "server");
	srv->o = *o;
	srv->cb = *cb;
	srv->lfd = srv->evfd = srv->ufd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	r = net_resolve(o->bind_addr, o->port, o->family, true, &addr, err);
	if (r)
		goto out_free;
	r = net_listen(&addr, 512, err);
	if (r < 0)
		goto out_free;
	srv->lfd = r;
	if (fcntl(r, F_SETFL, O_NONBLOCK)) {
		r = lr_err_setc(err, -errno, "listener");
		goto out_close;
	}
	srv->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv->evfd < 0) {
		r = lr_err_setc(err, -errno, "eventfd");
		goto out_close;
	}
	open_udp_port(srv, &addr);
	*out = srv;
	return 0;

out_close:
	close(srv->lfd);
out_free:
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return r;
}

uint16_t server_port(const struct server *srv)
{
	return net_local_port(srv->lfd);
}

void server_stop(struct server *srv)
{
	atomic_store(&srv->stopping, true);
	wake(srv);
}

/* ---------------- one test ---------------- */

static int send_error(struct conn *c, uint32_t code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int send_error(struct conn *c, uint32_t code, const char *fmt, ...)
{
	struct proto_error pe = { .code = code };
	uint8_t buf[PROTO_HDR_LEN + PROTO_MAX_TEXT + 32];
	struct proto_buf b;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pe.text, sizeof(pe.text), fmt, ap);
	va_end(ap);
	proto_buf_init(&b, buf, sizeof(buf));
	if (proto_encode_error(&b, &pe))
		return -ENOBUFS;
	return conn_send_msg(c, buf, b.len, net_now_ms() + 2000);
}

static int send_simple(struct conn *c, uint8_t type)
{
	uint8_t buf[PROTO_HDR_LEN];
	struct proto_buf b;

	proto_buf_init(&b, buf, sizeof(buf));
	proto_encode_empty(&b, type);
	return conn_send_msg(c, buf, b.len, net_now_ms() + CTRL_TIMEOUT_MS);
}

/* Read the request and check it against this server's limits. */
static int test_request(struct server_test *t, uint8_t *buf,
			struct proto_test_request *req, char *why, size_t cap,
			uint32_t *xlen)
{
	struct server *srv = t->srv;
	struct lr_err e = { 0 };
	struct proto_hdr h;
	int r;

	r = conn_recv_msg(&t->cc, buf, BUF_LEN, &h,
			  net_now_ms() + CTRL_TIMEOUT_MS, &e);
	if (r) {
		snprintf(why, cap, "no test request: %s", e.msg);
		if (r != LR_ECLOSED && r != LR_ETIMEOUT)
			send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", e.msg);
		return r;
	}
	if (h.type == PROTO_XFER_REQUEST) {
		*xlen = h.len;
		return 1;
	}
	if (h.type == PROTO_PROBE_REQUEST) {
		*xlen = h.len;
		return 2;
	}
	if (h.type != PROTO_TEST_REQUEST) {
		snprintf(why, cap, "expected TEST_REQUEST, got %s (0x%02x)",
			 proto_type_name(h.type), h.type);
		send_error(&t->cc, PROTO_ERR_UNEXPECTED, "%s", why);
		return LR_EBADMSG;
	}
	r = proto_decode_test_request(buf, h.len, req);
	if (r) {
		memset(req, 0, sizeof(*req));
		snprintf(why, cap, "malformed TEST_REQUEST");
		send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return r;
	}
	if (req->udp && srv->ufd < 0) {
		snprintf(why, cap,
			 "UDP tests: UDP port %u is not available on this "
			 "server",
			 (unsigned)server_port(srv));
		send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return -EPROTONOSUPPORT;
	}
	if (req->udp &&
	    (req->zerocopy || req->mss || req->cc[0] ||
	     req->blksize > UDP_MAX_LEN || req->blksize < UDP_HDR_LEN64)) {
		snprintf(why, cap,
			 "UDP tests take neither -Z, -M nor -C, and "
			 "datagrams of %u to %u bytes",
			 UDP_HDR_LEN64, UDP_MAX_LEN);
		send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return -EINVAL;
	}
	if (req->duration_ms + req->omit_ms > srv->o.max_duration_ms) {
		snprintf(why, cap,
			 "requested %.1f s exceeds this server's "
			 "limit of %.1f s (--max-duration)",
			 (double)(req->duration_ms + req->omit_ms) / 1000.0,
			 (double)srv->o.max_duration_ms / 1000.0);
		send_error(&t->cc, PROTO_ERR_LIMIT, "%s", why);
		return -E2BIG;
	}
	return 0;
}

#define CTRL_GONE_WORDS                                                \
	"the client closed its control connection with %u of %u data " \
	"streams connected"

/* Whether the client closed its control connection (it has nothing to
 * say while its streams attach). */
static bool ctrl_gone(const struct server_test *t)
{
	struct pollfd pf = { .fd = t->cc.fd, .events = POLLRDHUP };

	return poll(&pf, 1, 0) > 0 &&
	       (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Wait for the data streams, in slices that look at the control
 * connection: a client gone lets its slot go at once, not after
 * ATTACH_TIMEOUT_MS. 0, LR_ECLOSED or LR_ETIMEOUT. */
static int wait_streams(struct server_test *t)
{
	struct server *srv = t->srv;
	int64_t dl = net_now_ms() + ATTACH_TIMEOUT_MS;
	struct timespec ts;
	bool gone = false;
	int r;

	pthread_mutex_lock(&srv->lock);
	while (t->attached < t->expected && !atomic_load(&srv->stopping) &&
	       net_now_ms() < dl && !gone) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 200 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&t->attach_cv, &srv->lock, &ts);
		if (t->attached < t->expected) {
			pthread_mutex_unlock(&srv->lock);
			gone = ctrl_gone(t);
			pthread_mutex_lock(&srv->lock);
		}
	}
	t->waiting = false;
	r = t->attached == t->expected ? 0 : gone ? LR_ECLOSED : LR_ETIMEOUT;
	pthread_mutex_unlock(&srv->lock);
	return r;
}

/* Run the data phase until TEST_STOP; returns 0 or an error with why. */
static int test_data_phase(struct server_test *t, uint8_t *buf, char *why,
			   size_t cap)
{
	struct server *srv = t->srv;
	struct bench_run *run = &t->run;
	struct lr_err e = { 0 };
	struct proto_hdr h;
	int64_t hard_end, next_sample, now, wake_at;
	unsigned i;
	int r;

	hard_end = run->t0_us / 1000 + (int64_t)srv->o.max_duration_ms +
		   STOP_GRACE_MS;
	next_sample = run->t0_us / 1000 + SAMPLE_MS;
	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = t->ctrl, .events = POLLIN },
			{ .fd = run->evfd, .events = POLLIN },
		};

		wake_at = next_sample < hard_end ? next_sample : hard_end;
		if (!run->omit_done && run->omit_end_us / 1000 < wake_at)
			wake_at = run->omit_end_us / 1000;
		now = net_now_ms();
		if (wake_at > now && poll(pf, 2, (int)(wake_at - now)) < 0 &&
		    errno != EINTR)
			return -errno;
		if (atomic_load(&srv->stopping)) {
			atomic_store(&run->abort, true);
			snprintf(why, cap, "server shutting down");
			send_error(&t->cc, PROTO_ERR_INTERNAL, "%s", why);
			return -ECANCELED;
		}
		if (pf[0].revents) {
			r = conn_recv_msg(&t->cc, buf, BUF_LEN, &h,
					  net_now_ms() + CTRL_TIMEOUT_MS, &e);
			if (r == LR_ECLOSED) {
				snprintf(why, cap,
					 "client disconnected "
					 "during the test");
				return r;
			}
			if (r) {
				snprintf(why, cap, "%s", e.msg);
				send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s",
					   e.msg);
				return r;
			}
			if (h.type == PROTO_TEST_STOP)
				return 0;
			snprintf(why, cap, "unexpected %s during the test",
				 proto_type_name(h.type));
			send_error(&t->cc, PROTO_ERR_UNEXPECTED, "%s", why);
			return LR_EBADMSG;
		}
		if (pf[1].revents) {
			uint64_t v;

			if (read(run->evfd, &v, sizeof(v)) < 0) {
				/* already drained */
			}
		}
		for (i = 0; i < run->nstreams; i++) {
			struct bench_stream *s = &run->streams[i];

			if (atomic_load(&s->done) && s->error) {
				snprintf(why, cap, "stream %u: %s", i + 1,
					 lr_strerror(s->error));
				send_error(&t->cc, PROTO_ERR_INTERNAL, "%s",
					   why);
				return s->error;
			}
		}
		now = net_now_ms();
		if (now >= next_sample ||
		    (!run->omit_done && now >= run->omit_end_us / 1000)) {
			bench_run_sample(run, NULL, 0);
			if (now >= next_sample)
				next_sample += SAMPLE_MS;
		}
		if (now >= hard_end) {
			snprintf(why, cap,
				 "test ran past the server's limit "
				 "of %.1f s (--max-duration)",
				 (double)srv->o.max_duration_ms / 1000.0);
			send_error(&t->cc, PROTO_ERR_LIMIT, "%s", why);
			return LR_ETIMEOUT;
		}
	}
}

/* linerate doctor's questions: facts, ciphers, a disk write in the root. */
static int probe_session(struct server_test *t, uint8_t *buf, uint32_t len,
			 char *why, size_t cap)
{
	struct server *srv = t->srv;
	struct proto_probe_request req;
	struct proto_probe_result *res;
	struct proto_buf b;
	const char *bad = NULL;
	int probe_root, r;

	if (proto_decode_probe_request(buf, len, &req) ||
	    (req.dir[0] && fsio_path_check(req.dir, strlen(req.dir), &bad))) {
		snprintf(why, cap, "malformed PROBE_REQUEST%s%s",
			 bad ? ": " : "", bad ? bad : "");
		send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return LR_EBADMSG;
	}
	if (!srv->o.psk || !t->cc.secure) {
		snprintf(why, cap,
			 "linerate doctor needs a server started with "
			 "--token-file, and a client holding that token");
		send_error(&t->cc, PROTO_ERR_AUTH, "%s", why);
		return LR_EAUTH;
	}
	res = malloc(sizeof(*res));
	if (!res) {
		snprintf(why, cap, "out of memory");
		send_error(&t->cc, PROTO_ERR_INTERNAL, "%s", why);
		return -ENOMEM;
	}
	/* the root is recv's DIR when it is not there yet: no disk facts
	 * until a transfer makes it (never its parent's) */
	probe_root = srv->o.root_sub ? fsio_open_dir(srv->o.rootfd,
						     srv->o.root_sub, false, 0)
				     : srv->o.rootfd;
	doctor_probe_answer(&req, probe_root < 0 ? -1 : probe_root, res);
	if (srv->o.root_sub && probe_root >= 0)
		close(probe_root);
	proto_buf_init(&b, buf, PROTO_MAX_BODY);
	r = proto_encode_probe_result(&b, res);
	if (!r)
		r = conn_send_msg(&t->cc, buf, b.len,
				  net_now_ms() + CTRL_TIMEOUT_MS);
	if (r)
		snprintf(why, cap, "sending PROBE_RESULT: %s", lr_strerror(r));
	free(res);
	return r;
}

/* A file transfer on this control connection: body holds its request. */
/*
 * A push's destination below the root: opened when it is there; when it
 * is missing, made by the receiver when the first entry comes (a push
 * that fails first leaves no directory behind), after a check that what
 * is there of it is no symlink or file. path is the request's; the root
 * may itself be made so (root_sub: `linerate recv DIR` of a DIR that is
 * not there yet). 0 or -errno.
 */
static int push_dest(struct server *srv, const char *path,
		     struct xfer_dest *dest, int *destfd, char *buf)
{
	const char *sub = srv->o.root_sub;
	int fd;

	snprintf(buf, 2 * FSIO_MAX_PATH + 2, "%s%s%s", sub ? sub : "",
		 sub && path[0] ? "/" : "", path);
	fd = fsio_open_dir(srv->o.rootfd, buf, false, 0);
	if (fd >= 0) {
		*destfd = fd;
		*dest = (struct xfer_dest){ .dirfd = fd, .path = "" };
		return 0;
	}
	if (fd != -ENOENT)
		return fd;
	*dest = (struct xfer_dest){ .dirfd = srv->o.rootfd, .path = buf };
	return 0;
}

static int xfer_session(struct server_test *t, uint8_t *buf, uint32_t len,
			char *why, size_t cap, struct server_event *ev)
{
	struct server *srv = t->srv;
	struct proto_xfer_request req;
	struct proto_xfer_accept acc = { 0 };
	struct xfer_opts xo = { 0 };
	struct xfer_conns cs = { 0 };
	struct xfer_source src = { .rootfd = -1 };
	struct lr_err e = { 0 };
	struct proto_buf b;
	char *paths[PROTO_XFER_MAX_PATHS] = { 0 };
	char destpath[2 * FSIO_MAX_PATH + 2];
	struct xfer_dest dest = { .dirfd = -1, .path = "" };
	int destfd = -1, r;
	unsigned i, n;

	if (proto_decode_xfer_request(buf, len, &req)) {
		snprintf(why, cap, "malformed XFER_REQUEST");
		send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return LR_EBADMSG;
	}
	ev->xfer_op = req.op;
	if (!srv->o.psk || !t->cc.secure) {
		snprintf(why, cap,
			 "file transfers need a server started with "
			 "--token-file, and a client holding that token");
		send_error(&t->cc, PROTO_ERR_AUTH, "%s", why);
		return LR_EAUTH;
	}
	if (srv->o.rootfd < 0) {
		snprintf(why, cap,
			 "this server has no --root: it answers bench tests "
			 "only");
		send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return -EPERM;
	}
	if (req.op == PROTO_XFER_PULL && srv->o.push_only) {
		snprintf(why, cap,
			 "this receiver (linerate recv) accepts pushes only");
		send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return -EPERM;
	}
	if (req.op == PROTO_XFER_PUSH && srv->o.read_only) {
		snprintf(why, cap, "this server is --read-only: pulls only");
		send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return -EPERM;
	}
	/* setuid/setgid files are made only with the receiving operator's
	 * consent: a token holder must not plant them on its own say */
	if (req.op == PROTO_XFER_PUSH && (req.flags & PROTO_XF_KEEP_SETID) &&
	    !srv->o.allow_setid && !(srv->o.xfer_flags & PROTO_XF_KEEP_SETID)) {
		snprintf(why, cap,
			 "this receiver does not keep setuid/setgid bits "
			 "(serve needs --allow-setid, recv --keep-setid)");
		send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return -EPERM;
	}
	for (i = 0; i < req.npaths; i++) {
		const char *bad = NULL;

		paths[i] = strndup(req.paths[i], req.path_lens[i]);
		if (!paths[i]) {
			r = -ENOMEM;
			snprintf(why, cap, "out of memory");
			goto out;
		}
		if (req.path_lens[i] &&
		    fsio_path_check(paths[i], req.path_lens[i], &bad)) {
			char esc[PROTO_MAX_TEXT];

			snprintf(why, cap, "refused path '%s': %s",
				 fsio_escape(paths[i], req.path_lens[i], esc,
					     sizeof(esc)),
				 bad);
			send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
			r = LR_EBADPATH;
			goto out;
		}
	}
	if (req.op == PROTO_XFER_PUSH) {
		r = push_dest(srv, paths[0], &dest, &destfd, destpath);
		if (r) {
			char esc[PROTO_MAX_TEXT];

			snprintf(why, cap, "destination '%s': %s",
				 fsio_escape(paths[0], strlen(paths[0]), esc,
					     sizeof(esc)),
				 lr_strerror(r));
			send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
			goto out;
		}
	}
	n = req.streams;
	/* the same memory bound as a bench test: a buffer of one chunk per
	 * stream on each side */
	if ((uint64_t)n *
		    (req.chunk_size ? req.chunk_size : XFER_DEFAULT_CHUNK) >
	    BENCH_MAX_TEST_MEM) {
		snprintf(why, cap,
			 "%u streams of %u-byte chunks pass this server's "
			 "%llu MiB per transfer",
			 n,
			 req.chunk_size ? req.chunk_size : XFER_DEFAULT_CHUNK,
			 (unsigned long long)(BENCH_MAX_TEST_MEM >> 20));
		send_error(&t->cc, PROTO_ERR_LIMIT, "%s", why);
		r = -E2BIG;
		goto out;
	}
	t->xconns = calloc(n, sizeof(*t->xconns));
	if (!t->xconns || crypto_random(t->id, sizeof(t->id))) {
		r = -ENOMEM;
		snprintf(why, cap, "out of memory");
		send_error(&t->cc, PROTO_ERR_INTERNAL, "%s", why);
		goto out;
	}
	for (i = 0; i < n; i++)
		conn_init_plain(&t->xconns[i], -1);
	pthread_mutex_lock(&srv->lock);
	t->is_xfer = true;
	t->xdir = req.op == PROTO_XFER_PUSH ? PROTO_DIR_C2S : PROTO_DIR_S2C;
	t->expected = n;
	t->waiting = true;
	pthread_mutex_unlock(&srv->lock);
	memcpy(acc.session_id, t->id, sizeof(t->id));
	snprintf(acc.software, sizeof(acc.software), "linerate %s",
		 LINERATE_VERSION);
	acc.streams = (uint16_t)n;
	acc.chunk_size = req.chunk_size ? req.chunk_size : XFER_DEFAULT_CHUNK;
	proto_buf_init(&b, buf, PROTO_MAX_BODY);
	r = proto_encode_xfer_accept(&b, &acc);
	if (!r)
		r = conn_send_msg(&t->cc, buf, b.len,
				  net_now_ms() + CTRL_TIMEOUT_MS);
	if (r) {
		snprintf(why, cap, "sending XFER_ACCEPT: %s", lr_strerror(r));
		goto out;
	}
	r = wait_streams(t);
	if (r == LR_ECLOSED) {
		snprintf(why, cap, CTRL_GONE_WORDS, t->attached, n);
		goto out;
	}
	if (r) {
		snprintf(why, cap,
			 "only %u of %u data streams connected "
			 "within %d s",
			 t->attached, n, ATTACH_TIMEOUT_MS / 1000);
		send_error(&t->cc, PROTO_ERR_TIMEOUT, "%s", why);
		goto out;
	}
	cs.ctrl = &t->cc;
	cs.n = n;
	cs.data = t->xconns;
	xo.chunk_size = acc.chunk_size;
	/* what a client may ask for; STDOUT is the server's own choice
	 * (linerate recv --stdout), never the peer's */
	xo.flags = (req.flags & ~(uint32_t)PROTO_XF_STDOUT) | srv->o.xfer_flags;
	xo.rate = req.rate;
	xo.progress_ms = srv->o.progress_ms;
	xo.cancel = srv->o.cancel ? srv->o.cancel : &srv->stopping;
	if (req.op == PROTO_XFER_PUSH) {
		r = xfer_recv(&cs, &dest, srv->o.outfd, &xo, srv->o.xfer_cb,
			      &ev->xres, &e);
	} else {
		src.rootfd = srv->o.rootfd;
		src.npaths = req.npaths;
		src.paths = (const char *const *)paths;
		xo.flags &= ~(uint32_t)PROTO_XF_STDOUT;
		r = xfer_send(&cs, &src, &xo, srv->o.xfer_cb, &ev->xres, &e);
	}
	if (r)
		snprintf(why, cap, "%s", e.msg);
out:
	if (destfd >= 0)
		close(destfd);
	for (i = 0; i < PROTO_XFER_MAX_PATHS; i++)
		free(paths[i]);
	return r;
}

static void *test_main(void *arg)
{
	struct server_test *t = arg;
	struct server *srv = t->srv;
	struct server_event ev = { .kind = SERVER_EV_TEST_DONE };
	struct proto_stream_result *arr = NULL;
	struct proto_test_accept acc = { 0 };
	struct proto_test_request req;
	struct proto_results res;
	struct lr_err e = { 0 };
	struct proto_hdr h;
	struct proto_buf b;
	struct net_sockopts so;
	struct rusage ru;
	char why[LR_ERR_MSG] = "";
	uint8_t *buf;
	uint32_t xlen = 0;
	unsigned i;
	int r;

	buf = malloc(BUF_LEN);
	if (!buf) {
		r = -ENOMEM;
		snprintf(why, sizeof(why), "out of memory");
		goto out;
	}
	memset(&req, 0, sizeof(req));
	r = test_request(t, buf, &req, why, sizeof(why), &xlen);
	ev.req = req;
	if (r == 1) {
		ev.kind = SERVER_EV_XFER_DONE;
		r = xfer_session(t, buf, xlen, why, sizeof(why), &ev);
		goto out;
	}
	if (r == 2) {
		ev.kind = SERVER_EV_PROBE_DONE;
		r = probe_session(t, buf, xlen, why, sizeof(why));
		goto out;
	}
	if (r)
		goto out;
	r = bench_run_init(&t->run, &req, false, &e);
	t->expected = t->run.nstreams;
	if (r) {
		snprintf(why, sizeof(why), "%s", e.msg);
		send_error(&t->cc, PROTO_ERR_LIMIT, "%s", why);
		goto out;
	}
	arr = calloc(t->run.nstreams, sizeof(*arr));
	if (!arr || crypto_random(t->id, sizeof(t->id))) {
		r = -ENOMEM;
		snprintf(why, sizeof(why), "out of memory");
		send_error(&t->cc, PROTO_ERR_INTERNAL, "%s", why);
		goto out;
	}
	pthread_mutex_lock(&srv->lock);
	t->waiting = true;
	acc.overlap = (uint16_t)(srv->active - 1);
	pthread_mutex_unlock(&srv->lock);
	memcpy(acc.test_id, t->id, sizeof(t->id));
	snprintf(acc.software, sizeof(acc.software), "linerate %s",
		 LINERATE_VERSION);
	acc.max_duration_ms = srv->o.max_duration_ms;
	proto_buf_init(&b, buf, PROTO_MAX_BODY);
	r = proto_encode_test_accept(&b, &acc);
	if (!r)
		r = conn_send_msg(&t->cc, buf, b.len,
				  net_now_ms() + CTRL_TIMEOUT_MS);
	if (r) {
		snprintf(why, sizeof(why), "sending TEST_ACCEPT: %s",
			 lr_strerror(r));
		goto out;
	}
	r = wait_streams(t);
	if (r == LR_ECLOSED) {
		snprintf(why, sizeof(why), CTRL_GONE_WORDS, t->attached,
			 t->run.nstreams);
		goto out;
	}
	if (r) {
		snprintf(why, sizeof(why),
			 "only %u of %u data streams "
			 "connected within %d s",
			 t->attached, t->run.nstreams,
			 ATTACH_TIMEOUT_MS / 1000);
		send_error(&t->cc, PROTO_ERR_TIMEOUT, "%s", why);
		goto out;
	}
	so = (struct net_sockopts){ .window = req.window,
				    .cc = req.udp ? NULL : req.cc };
	for (i = 0; i < t->run.nstreams && !r; i++)
		r = net_apply_sockopts(t->run.streams[i].fd, &so, &e);
	if (!r)
		r = bench_run_start(&t->run, &e);
	if (r) {
		snprintf(why, sizeof(why), "%s", e.msg);
		send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "server: %s", why);
		goto out;
	}
	r = send_simple(&t->cc, PROTO_TEST_START);
	if (r) {
		snprintf(why, sizeof(why), "sending TEST_START: %s",
			 lr_strerror(r));
		goto out;
	}
	r = test_data_phase(t, buf, why, sizeof(why));
	bench_run_stop(&t->run, STOP_GRACE_MS);
	if (r)
		goto out;
	bench_run_results(&t->run, &res, arr);
	if (!getrusage(RUSAGE_THREAD, &ru)) {
		res.cpu.user_us += (uint64_t)ru.ru_utime.tv_sec * 1000000 +
				   (uint64_t)ru.ru_utime.tv_usec;
		res.cpu.sys_us += (uint64_t)ru.ru_stime.tv_sec * 1000000 +
				  (uint64_t)ru.ru_stime.tv_usec;
	}
	res.cpu.wall_us = (uint64_t)(net_now_us() - t->run.t0_us);
	pthread_mutex_lock(&srv->lock);
	res.overlap = (uint16_t)t->overlap;
	pthread_mutex_unlock(&srv->lock);
	ev.overlap = res.overlap;
	for (i = 0; i < res.nstreams; i++) {
		double secs = (double)arr[i].duration_us / 1e6;

		if (t->run.streams[i].sender)
			ev.bytes_sent += arr[i].bytes;
		else
			ev.bytes_received += arr[i].bytes;
		if (secs > ev.seconds)
			ev.seconds = secs;
	}
	proto_buf_init(&b, buf, PROTO_MAX_BODY);
	r = proto_encode_results(&b, &res);
	if (!r)
		r = conn_send_msg(&t->cc, buf, b.len,
				  net_now_ms() + CTRL_TIMEOUT_MS);
	if (r) {
		snprintf(why, sizeof(why), "sending results: %s",
			 lr_strerror(r));
		goto out;
	}
	/* the client's results complete the exchange */
	r = conn_recv_msg(&t->cc, buf, BUF_LEN, &h,
			  net_now_ms() + CTRL_TIMEOUT_MS, &e);
	if (!r && h.type == PROTO_TEST_RESULTS) {
		struct proto_results cres = {
			.streams = arr, .cap = (uint16_t)t->run.nstreams
		};

		r = proto_decode_results(buf, h.len, &cres);
		if (r)
			snprintf(why, sizeof(why), "malformed client results");
	} else if (!r) {
		r = LR_EBADMSG;
		snprintf(why, sizeof(why), "expected TEST_RESULTS, got %s",
			 proto_type_name(h.type));
	} else {
		snprintf(why, sizeof(why), "client results: %s", e.msg);
	}

out:
	ev.ok = r == 0;
	ev.test_no = t->no;
	ev.secure = t->cc.secure;
	ev.cipher = t->cc.cipher;
	ev.reason = why;
	snprintf(ev.peer, sizeof(ev.peer), "%s", t->peer);
	emit(srv, &ev);
	t->result = r;
	free(arr);
	free(buf);
	pthread_mutex_lock(&srv->lock);
	conn_fini(&t->cc);
	close(t->ctrl);
	t->ctrl = -1;
	t->waiting = false;
	if (t->xconns) {
		for (i = 0; i < t->expected; i++) {
			if (t->xconns[i].fd >= 0)
				close(t->xconns[i].fd);
			conn_fini(&t->xconns[i]);
		}
		free(t->xconns);
		t->xconns = NULL;
	}
	srv->active--;
	pthread_mutex_unlock(&srv->lock);
	bench_run_fini(&t->run);
	atomic_store(&t->finished, true);
	wake(srv);
	return NULL;
}

/* ---------------- accepting ---------------- */

static int fcntl_blocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))
		return -errno;
	return 0;
}

static void pending_close(struct server *srv, unsigned i)
{
	conn_fini(&srv->pend[i].conn);
	if (srv->pend[i].fd >= 0)
		close(srv->pend[i].fd);
	srv->pend[i] = srv->pend[--srv->npend];
}

static void reject(struct server *srv, unsigned i, uint32_t code,
		   const char *reason)
{
	struct pending *p = &srv->pend[i];

	if (code) {
		uint8_t junk[4096];
		unsigned k;

		send_error(&p->conn, code, "%s", reason);
		/* read what the peer already sent, so that closing does not
		 * answer with a reset that destroys the ERROR in flight */
		for (k = 0; k < 16; k++)
			if (recv(p->fd, junk, sizeof(junk), MSG_DONTWAIT) <= 0)
				break;
		shutdown(p->fd, SHUT_WR);
	}
	emit_reject(srv, p->peer, reason);
	pending_close(srv, i);
}

static int start_test(struct server *srv, struct pending *p)
{
	struct server_test *t, *o;
	int r;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->srv = srv;
	t->ctrl = p->fd;
	t->cc = p->conn; /* keys move to the test */
	conn_init_plain(&p->conn, -1);
	t->run.evfd = t->run.memfd = -1;
	snprintf(t->peer, sizeof(t->peer), "%s", p->peer);
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
	r = pthread_create(&t->thread, NULL, test_main, t);
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

/* Hand a data connection to its test. Returns NULL or a reason. */
static const char *attach_stream(struct server *srv,
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

static void udp_read_some(struct server *srv)
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

/* The first message is complete: decide what the connection is. */
static void pending_dispatch(struct server *srv, unsigned i,
			     const struct proto_hdr *h, const uint8_t *body)
{
	struct pending *p = &srv->pend[i];
	struct proto_ctrl_open co;
	struct proto_data_open d;
	const char *why;
	char msg[160];
	unsigned active = 0;
	bool busy;

	if (srv->o.psk && !p->secured &&
	    (h->type == PROTO_CTRL_OPEN || h->type == PROTO_DATA_OPEN)) {
		reject(srv, i, PROTO_ERR_AUTH,
		       "this server requires a token (LINERATE_TOKEN or "
		       "--token-file)");
		return;
	}
	if (h->type == PROTO_CTRL_OPEN) {
		if (proto_decode_ctrl_open(body, h->len, &co)) {
			reject(srv, i, PROTO_ERR_BAD_REQUEST,
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
			reject(srv, i, PROTO_ERR_BUSY, msg);
			return;
		}
		if (fcntl_blocking(p->fd) || start_test(srv, p)) {
			reject(srv, i, PROTO_ERR_INTERNAL,
			       "cannot start a test thread");
			return;
		}
		p->fd = -1; /* owned by the test now */
		pending_close(srv, i);
		return;
	}
	if (h->type == PROTO_DATA_OPEN) {
		if (proto_decode_data_open(body, h->len, &d)) {
			reject(srv, i, PROTO_ERR_BAD_REQUEST,
			       "malformed DATA_OPEN");
			return;
		}
		if (fcntl_blocking(p->fd)) {
			reject(srv, i, 0, "fcntl failed");
			return;
		}
		why = attach_stream(srv, &d, p->fd, &p->conn);
		if (why) {
			reject(srv, i, PROTO_ERR_UNKNOWN_TEST, why);
			return;
		}
		p->fd = -1;
		pending_close(srv, i);
		return;
	}
	snprintf(msg, sizeof(msg), "unexpected first message %s (0x%02x)",
		 proto_type_name(h->type), h->type);
	reject(srv, i, PROTO_ERR_UNEXPECTED, msg);
}

/* The address of a peer without its port, as 16 bytes. */
static struct penalty *penalty_find(struct server *srv, const uint8_t *host,
				    bool create)
{
	struct penalty *oldest = &srv->pen[0];
	int64_t now = net_now_ms();
	unsigned i;

	for (i = 0; i < PENALTY_SLOTS; i++) {
		struct penalty *q = &srv->pen[i];

		if (q->fails && now - q->last > PENALTY_FORGET_MS)
			memset(q, 0, sizeof(*q));
		if (q->fails && !memcmp(q->host, host, 16))
			return q;
		if (q->last < oldest->last)
			oldest = q;
	}
	if (!create)
		return NULL;
	memset(oldest, 0, sizeof(*oldest));
	memcpy(oldest->host, host, 16);
	return oldest;
}

/* A failed authentication: the next attempt from the address waits
 * longer, 1 s doubling to 30 s. */
static void penalize(struct server *srv, const uint8_t *host)
{
	struct penalty *q = penalty_find(srv, host, true);
	int64_t wait = PENALTY_FIRST_MS;
	unsigned k;

	q->fails++;
	for (k = 1; k < q->fails && wait < PENALTY_MAX_MS; k++)
		wait *= 2;
	if (wait > PENALTY_MAX_MS)
		wait = PENALTY_MAX_MS;
	q->last = net_now_ms();
	q->until = q->last + wait;
}

/* HS_INIT arrived: check the token, answer, switch to records. Returns
 * true if i was removed. */
static bool pending_handshake(struct server *srv, unsigned i,
			      const struct proto_hdr *h, const uint8_t *body)
{
	struct pending *p = &srv->pend[i];
	uint8_t out[PROTO_HDR_LEN + SESSION_HS_LEN];
	uint8_t c2s[CRYPTO_KEY_LEN], s2c[CRYPTO_KEY_LEN];
	struct session_hello peer, me = { .version = 1 };
	struct session_hs hs;
	struct proto_buf b;
	enum crypto_cipher cipher;
	int r;

	if (!srv->o.psk) {
		reject(srv, i, PROTO_ERR_AUTH,
		       "this server has no token (start it with "
		       "--token-file)");
		return true;
	}
	r = session_hs_init(&hs, srv->o.psk, p->buf, PROTO_PREAMBLE_LEN);
	if (!r)
		r = session_hs_read_init(&hs, body, h->len, &peer);
	if (r == -EACCES) {
		session_hs_wipe(&hs);
		penalize(srv, p->host);
		reject(srv, i, PROTO_ERR_AUTH, "wrong token");
		return true;
	}
	if (r) {
		session_hs_wipe(&hs);
		reject(srv, i, PROTO_ERR_BAD_REQUEST, "malformed HS_INIT");
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
	r = session_hs_write_resp(&hs, &me, out + PROTO_HDR_LEN);
	if (!r)
		r = session_hs_split(&hs, c2s, s2c);
	else
		session_hs_wipe(&hs);
	if (!r)
		r = conn_init_secure(&p->conn, p->fd, cipher, s2c, c2s);
	crypto_wipe(c2s, sizeof(c2s));
	crypto_wipe(s2c, sizeof(s2c));
	if (!r && send(p->fd, out, sizeof(out), MSG_DONTWAIT | MSG_NOSIGNAL) !=
			  (ssize_t)sizeof(out))
		r = -EIO;
	if (r) {
		reject(srv, i, 0, "handshake failed");
		return true;
	}
	p->secured = true;
	p->have = 0;
	if (me.cipher == SESSION_CIPHER_REFUSED) {
		reject(srv, i, 0,
		       "client asked for --cipher none; not allowed without "
		       "--allow-plaintext");
		return true;
	}
	return false;
}

/* After the handshake: the first record, holding CTRL_OPEN or DATA_OPEN.
 * Returns true if i was removed. */
static bool pending_record(struct server *srv, unsigned i, size_t *need)
{
	struct pending *p = &srv->pend[i];
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
		reject(srv, i, PROTO_ERR_BAD_REQUEST, "bad first record");
		return true;
	}
	*need = CONN_REC_HDR + len + CRYPTO_TAG_LEN;
	if (p->have < *need)
		return false;
	r = conn_open_msg(&p->conn, p->buf, p->buf + CONN_REC_HDR, len, &h, &e);
	if (r) {
		reject(srv, i, PROTO_ERR_BAD_REQUEST, e.msg);
		return true;
	}
	pending_dispatch(srv, i, &h, p->buf + CONN_REC_HDR + PROTO_HDR_LEN);
	return true;
}

/* Read what a pending connection has sent; returns true if i was removed. */
static bool pending_read(struct server *srv, unsigned i)
{
	struct pending *p = &srv->pend[i];
	struct proto_preamble pre;
	struct proto_hdr h;
	uint8_t reply[PROTO_PREAMBLE_LEN];
	size_t need;
	ssize_t n;
	char msg[160];
	int r;

	for (;;) {
		if (p->secured) {
			if (pending_record(srv, i, &need))
				return true;
			goto more;
		}
		need = PROTO_PREAMBLE_LEN;
		if (p->have >= PROTO_PREAMBLE_LEN)
			need += PROTO_HDR_LEN;
		if (p->have >= PROTO_PREAMBLE_LEN + PROTO_HDR_LEN) {
			r = proto_decode_hdr(p->buf + PROTO_PREAMBLE_LEN,
					     PROTO_HDR_LEN, PROTO_MAX_OPEN_BODY,
					     &h);
			if (r == LR_ETOOBIG) {
				const uint8_t *q = p->buf + PROTO_PREAMBLE_LEN;

				snprintf(msg, sizeof(msg),
					 "announced a %u-byte "
					 "first message (limit %u)",
					 ((unsigned)q[4] << 24) | (q[5] << 16) |
						 (q[6] << 8) | q[7],
					 PROTO_MAX_OPEN_BODY);
				reject(srv, i, PROTO_ERR_BAD_REQUEST, msg);
				return true;
			}
			if (r < 0) {
				reject(srv, i, PROTO_ERR_BAD_REQUEST,
				       "malformed message header");
				return true;
			}
			need += h.len;
			if (p->have == need) {
				const uint8_t *body = p->buf +
						      PROTO_PREAMBLE_LEN +
						      PROTO_HDR_LEN;

				if (h.type != PROTO_HS_INIT) {
					pending_dispatch(srv, i, &h, body);
					return true;
				}
				if (pending_handshake(srv, i, &h, body))
					return true;
				continue;
			}
		}
more:
		n = recv(p->fd, p->buf + p->have, need - p->have, MSG_DONTWAIT);
		if (n == 0) {
			snprintf(msg, sizeof(msg),
				 "closed after %zu bytes, "
				 "before identifying itself",
				 p->have);
			reject(srv, i, 0, msg);
			return true;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return false;
			snprintf(msg, sizeof(msg), "read: %s",
				 lr_strerror(errno));
			reject(srv, i, 0, msg);
			return true;
		}
		p->have += (size_t)n;
		if (p->secured)
			continue;
		if (!p->answered && p->have >= 4 &&
		    proto_decode_preamble(p->buf, p->have, &pre) ==
			    LR_ENOTLINERATE) {
			reject(srv, i, 0,
			       "not a linerate client (garbage "
			       "or another protocol)");
			return true;
		}
		if (!p->answered && p->have >= PROTO_PREAMBLE_LEN) {
			uint8_t v;

			proto_decode_preamble(p->buf, p->have, &pre);
			v = proto_version_choose(pre.vmin, pre.vmax,
						 PROTO_VERSION_MIN,
						 PROTO_VERSION_MAX);
			proto_encode_preamble(reply, PROTO_VERSION_MIN,
					      PROTO_VERSION_MAX, v);
			p->answered = true;
			if (send(p->fd, reply, sizeof(reply),
				 MSG_DONTWAIT | MSG_NOSIGNAL) !=
			    (ssize_t)sizeof(reply)) {
				reject(srv, i, 0, "cannot answer");
				return true;
			}
			if (!v) {
				snprintf(msg, sizeof(msg),
					 "incompatible "
					 "version: client speaks %u..%u",
					 pre.vmin, pre.vmax);
				reject(srv, i, 0, msg);
				return true;
			}
		}
	}
}

static void accept_some(struct server *srv, int64_t *paused_until)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	unsigned k, i, oldest;
	int fd;

	for (k = 0; k < 64; k++) {
		sl = sizeof(ss);
		fd = accept4(srv->lfd, (struct sockaddr *)&ss, &sl,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				if (srv->npend)
					goto evict;
				*paused_until = net_now_ms() + 100;
			}
			return;
		}
		if (srv->npend == SERVER_MAX_PENDING) {
evict:
			oldest = 0;
			for (i = 1; i < srv->npend; i++)
				if (srv->pend[i].deadline <
				    srv->pend[oldest].deadline)
					oldest = i;
			reject(srv, oldest, 0,
			       "too many connections waiting "
			       "to identify themselves: dropped the oldest");
			if (fd < 0)
				continue;
		}
		memset(&srv->pend[srv->npend], 0, sizeof(srv->pend[0]));
		{
			struct pending *p = &srv->pend[srv->npend];
			struct penalty *q;

			p->fd = fd;
			conn_init_plain(&p->conn, fd);
			net_addr_host_key(&ss, p->host);
			q = penalty_find(srv, p->host, false);
			if (q && q->until > net_now_ms())
				p->hold_until = q->until;
			p->deadline =
				(p->hold_until ? p->hold_until : net_now_ms()) +
				srv->o.handshake_ms;
		}
		net_addr_str((struct sockaddr *)&ss, srv->pend[srv->npend].peer,
			     sizeof(srv->pend[0].peer));
		srv->npend++;
	}
}

/* Join and free tests whose threads have ended. */
static void reap(struct server *srv, bool all)
{
	struct server_test **pp = &srv->tests, *t;

	for (;;) {
		pthread_mutex_lock(&srv->lock);
		t = *pp;
		if (t && !all && !atomic_load(&t->finished)) {
			pp = &t->next;
			pthread_mutex_unlock(&srv->lock);
			continue;
		}
		if (t)
			*pp = t->next;
		pthread_mutex_unlock(&srv->lock);
		if (!t)
			return;
		pthread_join(t->thread, NULL);
		if (srv->o.once)
			srv->once_result = t->result ? -1 : 0;
		pthread_cond_destroy(&t->attach_cv);
		free(t);
	}
}

/* With once: the one test has run and ended. active and started change
 * under the lock on the tests' threads. */
static bool once_done(struct server *srv)
{
	bool done;

	if (!srv->o.once)
		return false;
	pthread_mutex_lock(&srv->lock);
	done = srv->started && !srv->active;
	pthread_mutex_unlock(&srv->lock);
	return done;
}

/* A sweep of partial files: told when it removed or failed anything. */
static void on_sweep(void *ctx, const struct xfer_sweep *res, const char *error)
{
	struct server *srv = ctx;
	struct server_event ev = { .kind = SERVER_EV_PARTIALS,
				   .reason = error,
				   .partial = srv->o.partial };

	if (res && !res->removed && !res->failed)
		return;
	if (res)
		ev.sweep = *res;
	snprintf(ev.peer, sizeof(ev.peer), "-");
	emit(srv, &ev);
}

/* The sweeper of partial files, when there is something to apply. */
static struct xfer_sweeper *sweeper_start(struct server *srv)
{
	const struct server_opts *o = &srv->o;
	struct xfer_sweeper *sw = NULL;

	if (o->rootfd < 0 || o->read_only || o->root_sub || o->push_only ||
	    (!o->partial.max_age_s && !o->partial.max_bytes))
		return NULL;
	if (xfer_sweeper_start(o->rootfd, &o->partial, o->partial_sweep_ms,
			       on_sweep, srv, &sw))
		on_sweep(srv, NULL, "cannot start the sweep of partial files");
	return sw;
}

int server_run(struct server *srv, struct lr_err *err)
{
	struct xfer_sweeper *sweeper;
	struct pollfd *pf;
	struct server_event ev = { .kind = SERVER_EV_LISTENING };
	int64_t now, paused_until = 0, timeout;
	unsigned i, n;
	uint64_t v;

	pf = calloc(SERVER_MAX_PENDING + 3, sizeof(*pf));
	if (!pf)
		return lr_err_setc(err, -ENOMEM, "poll table");
	ev.port = server_port(srv);
	snprintf(ev.peer, sizeof(ev.peer), "%s",
		 srv->o.bind_addr ? srv->o.bind_addr : "*");
	/* OpenSSL's first-use costs, not in the first client's time */
	crypto_warm();
	emit(srv, &ev);
	sweeper = sweeper_start(srv);
	while (!atomic_load(&srv->stopping)) {
		if (once_done(srv))
			break;
		now = net_now_ms();
		timeout = 1000;
		n = 0;
		pf[n++] = (struct pollfd){ .fd = srv->evfd, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = now >= paused_until ? srv->lfd
								     : -1,
					   .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = srv->ufd, .events = POLLIN };
		for (i = 0; i < srv->npend; i++) {
			struct pending *p = &srv->pend[i];
			bool held = p->hold_until > now;

			/* an address being penalized is not read yet */
			pf[n++] = (struct pollfd){ .fd = held ? -1 : p->fd,
						   .events = POLLIN };
			if (held && p->hold_until - now < timeout)
				timeout = p->hold_until - now;
			if (p->deadline - now < timeout)
				timeout = p->deadline - now;
		}
		if (paused_until > now && paused_until - now < timeout)
			timeout = paused_until - now;
		if (timeout < 0)
			timeout = 0;
		if (poll(pf, n, (int)timeout) < 0 && errno != EINTR) {
			free(pf);
			xfer_sweeper_stop(sweeper);
			return lr_err_setc(err, -errno, "poll");
		}
		if (pf[0].revents && read(srv->evfd, &v, sizeof(v)) > 0)
			reap(srv, false);
		/* pending connections, walked backwards: removal swaps in
		 * the last entry, which has been seen already */
		now = net_now_ms();
		for (i = srv->npend; i-- > 0;) {
			if (pf[3 + i].revents && pending_read(srv, i))
				continue;
			if (i < srv->npend && srv->pend[i].deadline <= now) {
				char msg[96];

				snprintf(msg, sizeof(msg),
					 "sent %zu bytes in "
					 "%.1f s without identifying itself",
					 srv->pend[i].have,
					 srv->o.handshake_ms / 1000.0);
				reject(srv, i, 0, msg);
			}
		}
		if (pf[1].revents)
			accept_some(srv, &paused_until);
		if (pf[2].revents)
			udp_read_some(srv);
	}
	free(pf);
	xfer_sweeper_stop(sweeper);
	return srv->o.once ? srv->once_result : 0;
}

void server_free(struct server *srv)
{
	struct server_test *t;

	if (!srv)
		return;
	atomic_store(&srv->stopping, true);
	pthread_mutex_lock(&srv->lock);
	for (t = srv->tests; t; t = t->next) {
		pthread_cond_signal(&t->attach_cv);
		/* wake a reader; writing stays open for the ERROR */
		if (t->ctrl >= 0)
			shutdown(t->ctrl, SHUT_RD);
	}
	pthread_mutex_unlock(&srv->lock);
	reap(srv, true);
	while (srv->npend)
		pending_close(srv, 0);
	close(srv->lfd);
	if (srv->ufd >= 0)
		close(srv->ufd);
	close(srv->evfd);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}
