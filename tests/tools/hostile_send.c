// SPDX-License-Identifier: MIT
/*
 * hostile_send: a sender holding the token that breaks the transfer rules
 * on purpose, for tests/integration/test_hostile.py.
 *
 *   LINERATE_TOKEN=... [HOSTILE_WINDOW=N] hostile_send HOST PORT CASE OUTSIDE
 *
 * It pushes to the root ("") of `linerate serve --root` and misbehaves as
 * CASE says. OUTSIDE is an absolute directory
 * beside the receiver's root that must stay empty: absolute paths and
 * symlink targets point into it, and relative targets use
 * "../<its basename>". Cases: see run_case. An act that pauses prints
 * "paused before END" and goes on at a line (or the end) on stdin.
 *
 * A case runs one or more acts, each a session of its own. Every act
 * prints what the receiver answered ("ERROR: <text>", plans, failures,
 * the outcome); the exit status is 0 when the case ran (whatever the
 * receiver did), 1 on a local setup error (cannot connect, authenticate
 * or get the transfer accepted), 2 on usage, 3 when the receiver did not
 * answer in time (a hang). Every wait is bounded.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "conn.h"
#include "crypto.h"
#include "digest.h"
#include "err.h"
#include "fsio.h"
#include "net.h"
#include "proto.h"
#include "session.h"

#define WAIT_MS	    10000 /* one answer from the receiver */
#define ACT_SECONDS 30	  /* one act, all in (then: a hang) */
#define NSTREAMS    2
#define CHUNK	    (64u << 10)
#define MAX_ENTS    8
#define MSG_CAP	    (PROTO_MAX_BODY + PROTO_HDR_LEN + CONN_REC_HDR + 64)
#define DATA_CAP    (PROTO_XFER_CHUNK_HDR_LEN + (2u << 20) + CRYPTO_TAG_LEN)

/* What a scenario does wrong. */
enum misdeed {
	M_NONE = 0,
	M_RAW_FILES,	   /* FILES body given as raw bytes */
	M_BIG_RECORD,	   /* a 1 MiB chunk record for a small file */
	M_FULL_LEN,	   /* a full-chunk length for a 10-byte file */
	M_CHUNK_BEYOND,	   /* a chunk index past the file's last */
	M_CHUNK_TWICE,	   /* a chunk again after it was acknowledged */
	M_LEN_VS_RECORD,   /* header len 10, record of 1 MiB */
	M_ZERO_OVER_CHUNK, /* a hole chunk longer than the chunk size */
	M_DATA_OVER_CHUNK, /* a data chunk longer than the chunk size */
	M_UNASKED,	   /* a chunk for an entry never announced */
	M_UNASKED_DIR,	   /* a chunk for entry 0, a directory */
	M_WRONG_DIGEST,	   /* every copy of chunk 0 with a wrong digest */
	M_BAD_SUM,	   /* right chunks, wrong file digest */
	M_FLOOD_FAILED,	   /* wrong digests, then chunks of the failed file */
	M_ZERO_ONE,	   /* a 10-byte file, not sparse, as one ZERO chunk */
	M_ABANDON,	   /* chunk 0, a pause for the journal, then gone */
	M_ZERO_HELD,	   /* a resume with a ZERO chunk over the held one */
	M_PIPE_SHORT_SUM,  /* a pipe of two whole chunks, a SUM of less */
	M_NO_TOTALS,	   /* FILES as the first message */
	M_FILES_AFTER_END, /* END, then one more FILES, chunks not sent */
};

/* An extended attribute as an XATTRS item carries it. */
struct xa {
	const char *name;
	const void *value;
	uint16_t len;
};

struct ent {
	uint8_t kind;
	const char *path;
	size_t path_len; /* 0: strlen(path) */
	const char *target;
	uint64_t size;
	uint16_t mode;
	uint8_t eflags;	  /* LINKED */
	uint32_t link_to; /* a HARDLINK's file */
	/* an OWNER item before the entry: uid, gid, names as given */
	bool owned;
	uint32_t uid, gid;
	const char *user, *group;
	uint32_t major, minor; /* a device node's */
	/* -X/-A: an XATTRS item of nxattrs names (xattrs set) and an ACL
	 * item (acl set) before the entry, as given, for entry idx + xa_skew */
	const struct xa *xattrs;
	unsigned nxattrs;
	const struct proto_xfer_acl *acl;
	uint32_t xa_skew;
	uint8_t xa_flags; /* the XATTRS item's flags (sent with no name) */
};

struct act {
	const char *what;
	uint32_t flags; /* XFER_REQUEST flags */
	struct ent ents[MAX_ENTS];
	unsigned nents;
	bool totals_set;
	uint64_t tot_files, tot_bytes;
	enum misdeed mis;
	const uint8_t *raw;
	size_t raw_len;
	const char *dest; /* of the push; NULL = "" (the root) */
	bool lone;	  /* LONE_FILE asked: dest may name the one file */
	bool refusal_ok;  /* the session itself may be refused */
	bool pause_end;	  /* files settled: a line on stdin before END */
};

struct sess {
	struct conn ctrl;
	struct conn data[NSTREAMS];
	unsigned n;
	uint32_t chunk;
	uint8_t *mbuf, *rbuf, *dbuf;
	bool terminal;		/* ERROR, DONE or closed: nothing more comes */
	int plan[MAX_ENTS];	/* -1 until planned */
	int outcome[MAX_ENTS];	/* 0 pending, 1 done, 2 failed */
	unsigned bad[MAX_ENTS]; /* CHUNK_BAD answers */
	uint32_t resend_idx[64], resend_chunk[64];
	unsigned nresend;
	unsigned chunks_sent[MAX_ENTS];
	unsigned nplans; /* plan items of any entry */
	uint32_t window; /* entries in flight agreed (256 when not said) */
};

static const char *g_host;
static uint16_t g_port;
static uint8_t g_psk[CRYPTO_KEY_LEN];
static char g_outside[FSIO_MAX_PATH];
static char g_rel[FSIO_MAX_PATH]; /* "../<basename of outside>" */
static bool g_no_streams;	  /* sess_open stops after XFER_ACCEPT */
static uint32_t g_window;	  /* FILES_WINDOW asked; 0: not said */
static bool g_lone;		  /* LONE_FILE asked in the next request */

static void on_alarm(int sig)
{
	static const char msg[] =
		"TIMEOUT: the receiver did not answer in time (hang?)\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing to do */
	}
	_exit(3);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static size_t ent_len(const struct ent *e)
{
	return e->path_len ? e->path_len : strlen(e->path);
}

static const char *esc(const char *p, size_t n, char *out, size_t cap)
{
	return fsio_escape(p, n, out, cap);
}

static uint8_t fill_of(unsigned i)
{
	return (uint8_t)('A' + i);
}

/* ------------------------------ session ------------------------------ */

static int open_conn(const struct net_addr *addr, struct conn *c,
		     struct lr_err *err)
{
	struct net_sockopts so = { .nodelay = true };
	int fd = net_connect(addr, NULL, &so, 5000, err);
	int r;

	if (fd < 0)
		return fd;
	r = conn_client_open(fd, g_psk, SESSION_CIPHER_AUTO, "receiver",
			     net_now_ms() + WAIT_MS, c, err);
	if (r)
		close(fd);
	return r;
}

static int send_msg(struct conn *c, struct proto_buf *b)
{
	if (b->err)
		return b->err;
	return conn_send_msg(c, b->p, b->len, net_now_ms() + WAIT_MS);
}

static int sess_open(struct sess *s, uint32_t flags, const char *dest)
{
	struct proto_ctrl_open co = { .features = 0 };
	struct proto_xfer_request req = { 0 };
	struct proto_xfer_accept acc;
	struct lr_err err = { 0 };
	struct net_addr addr;
	struct proto_buf b;
	struct proto_hdr h;
	unsigned i;
	int r;

	conn_init_plain(&s->ctrl, -1);
	for (i = 0; i < NSTREAMS; i++)
		conn_init_plain(&s->data[i], -1);
	for (i = 0; i < MAX_ENTS; i++)
		s->plan[i] = -1;
	r = net_resolve(g_host, g_port, AF_UNSPEC, false, &addr, &err);
	if (!r)
		r = open_conn(&addr, &s->ctrl, &err);
	if (r) {
		say("SETUP: %s", err.msg);
		return r;
	}
	snprintf(co.software, sizeof(co.software), "hostile_send");
	proto_buf_init(&b, s->mbuf, MSG_CAP);
	r = proto_encode_ctrl_open(&b, &co) ?: send_msg(&s->ctrl, &b);
	req.op = PROTO_XFER_PUSH;
	req.streams = NSTREAMS;
	req.chunk_size = CHUNK;
	req.flags = flags;
	req.files_window = g_window;
	req.lone_file = g_lone;
	req.npaths = 1;
	req.paths[0] = dest ? dest : "";
	req.path_lens[0] = (uint16_t)strlen(req.paths[0]);
	proto_buf_init(&b, s->mbuf, MSG_CAP);
	if (!r)
		r = proto_encode_xfer_request(&b, &req)
			    ?: send_msg(&s->ctrl, &b);
	if (!r)
		r = conn_recv_msg(&s->ctrl, s->rbuf, MSG_CAP, &h,
				  net_now_ms() + WAIT_MS, &err);
	if (r) {
		say("SETUP: sending the request: %s",
		    err.msg[0] ? err.msg : lr_strerror(r));
		return r;
	}
	if (h.type == PROTO_ERROR) {
		struct proto_error pe = { 0 };

		proto_decode_error(s->rbuf, h.len, &pe);
		say("SETUP: the receiver refused the session: %s", pe.text);
		return -EPERM;
	}
	if (h.type != PROTO_XFER_ACCEPT ||
	    proto_decode_xfer_accept(s->rbuf, h.len, &acc)) {
		say("SETUP: expected XFER_ACCEPT, got %s",
		    proto_type_name(h.type));
		return LR_EBADMSG;
	}
	s->chunk = acc.chunk_size;
	s->window = acc.files_window ? acc.files_window
				     : PROTO_XFER_WINDOW_DEFAULT;
	s->n = acc.streams < 1 || acc.streams > NSTREAMS ? NSTREAMS
							 : acc.streams;
	if (g_no_streams)
		return 0;
	for (i = 0; i < s->n; i++) {
		struct proto_data_open dop = { .stream = (uint16_t)i,
					       .dir = PROTO_DIR_C2S };
		struct timeval tv = { .tv_sec = 10 };

		r = open_conn(&addr, &s->data[i], &err);
		if (r) {
			say("SETUP: stream %u: %s", i + 1, err.msg);
			return r;
		}
		/* a receiver that stops reading fails our sends, not hangs */
		setsockopt(s->data[i].fd, SOL_SOCKET, SO_SNDTIMEO, &tv,
			   sizeof(tv));
		memcpy(dop.test_id, acc.session_id, PROTO_TEST_ID_LEN);
		proto_buf_init(&b, s->mbuf, MSG_CAP);
		r = proto_encode_data_open(&b, &dop)
			    ?: send_msg(&s->data[i], &b);
		if (r) {
			say("SETUP: opening stream %u: %s", i + 1,
			    lr_strerror(r));
			return r;
		}
	}
	return 0;
}

static void sess_close(struct sess *s)
{
	unsigned i;

	for (i = 0; i < NSTREAMS; i++) {
		if (s->data[i].fd >= 0)
			close(s->data[i].fd);
		conn_fini(&s->data[i]);
	}
	if (s->ctrl.fd >= 0)
		close(s->ctrl.fd);
	conn_fini(&s->ctrl);
}

static const char *action_name(uint8_t a)
{
	switch (a) {
	case PROTO_XA_SEND: return "SEND";
	case PROTO_XA_SKIP: return "SKIP";
	case PROTO_XA_RESUME: return "RESUME";
	case PROTO_XA_REFUSE: return "REFUSE";
	}
	return "?";
}

/* Items of a PLAN or ACKS message. */
static void on_items(struct sess *s, const uint8_t *body, size_t len)
{
	struct proto_xfer_iter it;
	int r;

	proto_xfer_iter_init(&it, body, len);
	while ((r = proto_xfer_iter_next(&it)) == 1) {
		struct proto_xfer_plan p;
		struct proto_xfer_fail f;
		struct proto_xfer_ack a;

		if (!proto_xfer_get_plan(&it, &p)) {
			s->nplans++;
			if (p.idx < MAX_ENTS)
				say("plan: entry %u: %s", p.idx,
				    action_name(p.action));
			if (p.idx < MAX_ENTS) {
				s->plan[p.idx] = p.action;
				if (p.action == PROTO_XA_REFUSE ||
				    p.action == PROTO_XA_SKIP)
					s->outcome[p.idx] = 2;
			}
		} else if (!proto_xfer_get_fail(&it, &f)) {
			say("failed: entry %u: %s", f.idx, f.text);
		} else if (!proto_xfer_get_ack(&it, &a)) {
			if (a.status == PROTO_XS_CHUNK_BAD) {
				say("ack: entry %u chunk %u: BAD (asked again)",
				    a.idx, a.chunk);
				if (a.idx < MAX_ENTS)
					s->bad[a.idx]++;
				if (s->nresend < 64) {
					s->resend_idx[s->nresend] = a.idx;
					s->resend_chunk[s->nresend++] = a.chunk;
				}
			} else if (a.status == PROTO_XS_FILE_DONE) {
				say("ack: entry %u: done", a.idx);
				if (a.idx < MAX_ENTS)
					s->outcome[a.idx] = 1;
			} else if (a.status == PROTO_XS_FILE_FAILED) {
				say("ack: entry %u: FAILED", a.idx);
				if (a.idx < MAX_ENTS)
					s->outcome[a.idx] = 2;
			}
		} else if (it.tag == PROTO_T_HELD) {
			/* a resume: all chunks are sent anyway */
		} else {
			say("receiver sent an item with tag 0x%04x", it.tag);
		}
	}
	if (r)
		say("receiver sent a malformed batch");
}

/* Read and handle one control message, waiting up to ms. Returns 1 when
 * one came, 0 on timeout; terminal set when nothing more will come. */
static int pump(struct sess *s, int ms)
{
	struct lr_err err = { 0 };
	struct pollfd pfd;
	struct proto_hdr h;
	int r;

	if (s->terminal)
		return 0;
	/* wait for the first byte only: a deadline that ends inside a
	 * record would leave the rest of it to be read as a new one */
	pfd.fd = s->ctrl.fd;
	pfd.events = POLLIN;
	r = poll(&pfd, 1, ms);
	if (r == 0 || (r < 0 && errno == EINTR))
		return 0;
	r = conn_recv_msg(&s->ctrl, s->rbuf, MSG_CAP, &h,
			  net_now_ms() + WAIT_MS, &err);
	if (r) {
		say("receiver closed the control connection (%s)",
		    err.msg[0] ? err.msg : lr_strerror(r));
		s->terminal = true;
		return 1;
	}
	switch (h.type) {
	case PROTO_ERROR: {
		struct proto_error pe = { 0 };

		if (proto_decode_error(s->rbuf, h.len, &pe))
			say("ERROR: (malformed)");
		else
			say("ERROR: %s", pe.text);
		s->terminal = true;
		break;
	}
	case PROTO_XFER_PLAN:
	case PROTO_XFER_ACKS: on_items(s, s->rbuf, h.len); break;
	case PROTO_XFER_ALIVE: break; /* the receiver's heartbeat */
	case PROTO_XFER_DONE: {
		struct proto_xfer_done d;

		if (proto_decode_xfer_done(s->rbuf, h.len, &d))
			say("DONE: (malformed)");
		else
			say("DONE: ok %llu failed %llu skipped %llu bytes %llu",
			    (unsigned long long)d.files_ok,
			    (unsigned long long)d.files_failed,
			    (unsigned long long)d.files_skipped,
			    (unsigned long long)d.bytes);
		if (d.xattrs_failed || d.xattrs_why[0])
			say("DONE: kept without all their attributes: %llu "
			    "(%s)",
			    (unsigned long long)d.xattrs_failed, d.xattrs_why);
		s->terminal = true;
		break;
	}
	default: say("receiver sent an unexpected %s", proto_type_name(h.type));
	}
	return 1;
}

/* Pump until cond holds, the session ends or ms pass. */
static bool pump_until(struct sess *s, bool (*cond)(struct sess *, void *),
		       void *arg, int ms)
{
	int64_t end = net_now_ms() + ms;

	while (!s->terminal && !cond(s, arg)) {
		int64_t left = end - net_now_ms();

		if (left <= 0)
			return false;
		pump(s, (int)(left < 200 ? left : 200));
	}
	return cond(s, arg);
}

/* ------------------------------ data ------------------------------ */

static uint32_t nchunks_of(uint64_t size, uint32_t chunk)
{
	return (uint32_t)((size + chunk - 1) / chunk);
}

static uint32_t len_of(uint64_t size, uint32_t c, uint32_t chunk)
{
	uint64_t off = (uint64_t)c * chunk;

	return size - off < chunk ? (uint32_t)(size - off) : chunk;
}

/* Send one chunk record: kind, entry, chunk, header length hlen, data
 * record of dlen bytes of fill (0 for a hole), digest of the data (or a
 * wrong one). */
static int send_chunk(struct sess *s, unsigned stream, uint8_t kind,
		      uint32_t idx, uint32_t chunk, uint32_t hlen, size_t dlen,
		      uint8_t fill, bool wrong_digest)
{
	struct proto_xfer_chunk_hdr h = {
		.kind = kind, .idx = idx, .chunk = chunk, .len = hlen
	};
	uint8_t *data = s->dbuf + PROTO_XFER_CHUNK_HDR_LEN;
	int r;

	memset(data, fill, dlen);
	if (kind == PROTO_XC_ZERO)
		digest_zeros(hlen, h.digest);
	else
		digest_chunk(data, dlen, h.digest);
	if (wrong_digest)
		h.digest[0] ^= 0xff;
	proto_xfer_chunk_encode(s->dbuf, &h);
	r = conn_send_data(&s->data[stream % s->n], CONN_REC_DATA, s->dbuf,
			   PROTO_XFER_CHUNK_HDR_LEN + dlen);
	if (r)
		say("sending chunk %u of entry %u: %s (the receiver hung up?)",
		    chunk, idx, lr_strerror(r));
	return r;
}

static void file_digest(const struct ent *e, unsigned i, uint32_t chunk,
			uint8_t out[DIGEST_LEN])
{
	uint32_t n = nchunks_of(e->size, chunk), c;
	uint8_t *ds = calloc(n ? n : 1, DIGEST_LEN);
	uint8_t *p = malloc(chunk);

	if (!ds || !p) {
		memset(out, 0, DIGEST_LEN);
		free(ds);
		free(p);
		return;
	}
	memset(p, fill_of(i), chunk);
	for (c = 0; c < n; c++)
		digest_chunk(p, len_of(e->size, c, chunk),
			     ds + (size_t)c * DIGEST_LEN);
	digest_file(e->size, chunk, n, ds, out);
	free(ds);
	free(p);
}

static bool all_planned(struct sess *s, void *arg)
{
	const struct act *a = arg;
	unsigned i;

	for (i = 0; i < a->nents; i++)
		if (a->ents[i].kind == PROTO_XK_FILE && s->plan[i] < 0)
			return false;
	return true;
}

static bool all_settled(struct sess *s, void *arg)
{
	const struct act *a = arg;
	unsigned i;

	if (s->nresend)
		return true; /* work to do */
	for (i = 0; i < a->nents; i++)
		if (a->ents[i].kind == PROTO_XK_FILE && !s->outcome[i])
			return false;
	return true;
}

static bool never(struct sess *s, void *arg)
{
	(void)s;
	(void)arg;
	return false;
}

static bool sending(const struct sess *s, unsigned i)
{
	return s->plan[i] == PROTO_XA_SEND || s->plan[i] == PROTO_XA_RESUME;
}

/* Files settled, END not sent: "paused" printed, then wait for a line
 * (or the end) on stdin while answering the receiver, for the caller to
 * change the destination meanwhile. */
static void pause_before_end(struct sess *s, const struct act *a)
{
	int64_t end;
	char c;

	if (!pump_until(s, all_settled, (void *)a, WAIT_MS) && !s->terminal)
		say("no outcome for every file within %d s", WAIT_MS / 1000);
	if (s->terminal)
		return;
	say("paused before END: a line on stdin goes on");
	end = net_now_ms() + 2 * WAIT_MS;
	while (!s->terminal && net_now_ms() < end) {
		struct pollfd p[2] = { { .fd = STDIN_FILENO, .events = POLLIN },
				       { .fd = s->ctrl.fd, .events = POLLIN } };

		if (poll(p, 2, 200) < 0 && errno != EINTR)
			break;
		if (p[0].revents) {
			while (read(STDIN_FILENO, &c, 1) == 1 && c != '\n')
				;
			say("going on: END");
			return;
		}
		if (p[1].revents)
			pump(s, 0);
	}
	say("no word on stdin within %d s: END anyway", 2 * WAIT_MS / 1000);
}

/* XFER_END while entry 0 is still in the window, then one more entry:
 * the receiver must read it and end the session (PROTOCOL 7.9). */
static void files_after_end(struct sess *s)
{
	struct proto_xfer_entry pe = {
		.idx = 1,
		.kind = PROTO_XK_FILE,
		.mode = 0644,
		.size = 10,
		.mtime_sec = 1700000000,
		.path = "after_end_2",
		.path_len = sizeof("after_end_2") - 1,
	};
	struct proto_buf b;
	int r;

	proto_buf_init(&b, s->mbuf, MSG_CAP);
	r = proto_encode_empty(&b, PROTO_XFER_END) ?: send_msg(&s->ctrl, &b);
	proto_buf_init(&b, s->mbuf, MSG_CAP);
	proto_msg_begin(&b, PROTO_XFER_FILES);
	proto_put_xfer_entry(&b, &pe);
	r = r ?: proto_msg_end(&b) ?: send_msg(&s->ctrl, &b);
	if (r) {
		say("sending END and FILES: %s", lr_strerror(r));
		return;
	}
	say("sent END, then FILES of 'after_end_2'");
	if (!pump_until(s, never, NULL, WAIT_MS) && !s->terminal)
		say("the session went on after FILES after END");
}

/* The misdeeds of the chunk phase; 1 when the act's chunks are done. */
static int chunk_misdeed(struct sess *s, const struct act *a)
{
	switch (a->mis) {
	case M_BIG_RECORD:
		send_chunk(s, 0, PROTO_XC_DATA, 0, 0, 1u << 20, 1u << 20,
			   fill_of(0), false);
		return 1;
	case M_FULL_LEN:
		send_chunk(s, 0, PROTO_XC_DATA, 0, 0, s->chunk, s->chunk,
			   fill_of(0), false);
		return 1;
	case M_LEN_VS_RECORD:
		send_chunk(s, 0, PROTO_XC_DATA, 0, 0, 10, 1u << 20, fill_of(0),
			   false);
		return 1;
	case M_ZERO_OVER_CHUNK:
		send_chunk(s, 0, PROTO_XC_ZERO, 0, 0, s->chunk + 1, 0, 0,
			   false);
		return 1;
	case M_DATA_OVER_CHUNK:
		send_chunk(s, 0, PROTO_XC_DATA, 0, 0, s->chunk + 1,
			   s->chunk + 1, fill_of(0), false);
		return 1;
	case M_UNASKED:
		send_chunk(s, 0, PROTO_XC_DATA, 7, 0, 10, 10, 'x', false);
		return 1;
	case M_UNASKED_DIR:
		send_chunk(s, 0, PROTO_XC_DATA, 0, 0, 10, 10, 'x', false);
		return 1;
	case M_ZERO_ONE:
		send_chunk(s, 0, PROTO_XC_ZERO, 0, 0, 10, 0, 0, false);
		return 1;
	case M_ABANDON:
		send_chunk(s, 0, PROTO_XC_DATA, 0, 0, s->chunk, s->chunk,
			   fill_of(0), false);
		/* past the receiver's journal flush (once a second), then
		 * gone without END: the next act resumes the file */
		pump_until(s, never, NULL, 2500);
		s->terminal = true;
		say("gone, the file unfinished");
		return 1;
	case M_ZERO_HELD:
		send_chunk(s, 0, PROTO_XC_ZERO, 0, 0, s->chunk, 0, 0, false);
		for (unsigned c = 1; c < 5; c++)
			send_chunk(s, c, PROTO_XC_DATA, 0, c, s->chunk,
				   s->chunk, fill_of(0), false);
		return 1;
	case M_PIPE_SHORT_SUM:
		send_chunk(s, 0, PROTO_XC_DATA, 0, 0, s->chunk, s->chunk,
			   fill_of(0), false);
		send_chunk(s, 1, PROTO_XC_DATA, 0, 1, s->chunk, s->chunk,
			   fill_of(0), false);
		return 1;
	case M_FILES_AFTER_END: files_after_end(s); return 1;
	default: return 0;
	}
}

/* The SUM of an act whose chunks lie, consistent with what was sent, so
 * that only the receiver's own checks can find it: 1 when put. */
static int sum_misdeed(const struct act *a, struct sess *s, struct proto_buf *b)
{
	uint8_t ds[5 * DIGEST_LEN];
	uint8_t *p = malloc(s->chunk);
	struct proto_xfer_sum sum = { .idx = 0 };
	unsigned c;

	if (!p)
		return 0;
	memset(p, fill_of(0), s->chunk);
	switch (a->mis) {
	case M_ZERO_HELD:
		digest_zeros(s->chunk, ds);
		for (c = 1; c < 5; c++)
			digest_chunk(p, s->chunk, ds + c * DIGEST_LEN);
		sum.size = 5ull * s->chunk;
		sum.nchunks = sum.sent = 5;
		break;
	case M_PIPE_SHORT_SUM:
		digest_chunk(p, s->chunk, ds);
		digest_chunk(p, s->chunk, ds + DIGEST_LEN);
		sum.size = s->chunk + 100;
		sum.nchunks = sum.sent = 2;
		break;
	default: free(p); return 0;
	}
	digest_file(sum.size, s->chunk, sum.nchunks, ds, sum.digest);
	proto_put_xfer_sum(b, &sum);
	free(p);
	return 1;
}

static void send_sums(struct sess *s, const struct act *a)
{
	struct proto_buf b;
	unsigned i;
	int r;

	proto_buf_init(&b, s->mbuf, MSG_CAP);
	proto_msg_begin(&b, PROTO_XFER_SUMS);
	for (i = 0; i < a->nents && !sum_misdeed(a, s, &b); i++) {
		const struct ent *e = &a->ents[i];
		struct proto_xfer_sum sum = { .idx = i, .size = e->size };

		if (e->kind != PROTO_XK_FILE || !sending(s, i))
			continue;
		sum.nchunks = nchunks_of(e->size, s->chunk);
		sum.sent = sum.nchunks;
		file_digest(e, i, s->chunk, sum.digest);
		if (a->mis == M_BAD_SUM)
			sum.digest[3] ^= 0x5a;
		proto_put_xfer_sum(&b, &sum);
	}
	r = proto_msg_end(&b) ?: send_msg(&s->ctrl, &b);
	if (r)
		say("sending SUMS: %s", lr_strerror(r));
}

/* -X/-A: the entry's XATTRS and ACL items, as given (names unchecked,
 * in the order given): the receiver checks. */
static void put_xattr_items(struct proto_buf *b, const struct ent *e,
			    uint32_t idx)
{
	static struct proto_xfer_xattrs xs;
	static struct proto_xfer_acl acl;
	unsigned j;

	if (e->xattrs || e->xa_flags) {
		xs.idx = idx + e->xa_skew;
		xs.flags = e->xa_flags;
		xs.n = (uint16_t)e->nxattrs;
		for (j = 0; j < e->nxattrs; j++)
			xs.v[j] = (struct proto_xattr){
				.name = e->xattrs[j].name,
				.name_len = (uint8_t)strlen(e->xattrs[j].name),
				.value = e->xattrs[j].value,
				.value_len = e->xattrs[j].len,
			};
		say("announce: an XATTRS item of %u names, flags %u, for "
		    "entry %u",
		    e->nxattrs, e->xa_flags, xs.idx);
		proto_put_xfer_xattrs(b, &xs);
	}
	if (e->acl) {
		acl = *e->acl;
		acl.idx = idx + e->xa_skew;
		say("announce: an ACL item (%s) for entry %u",
		    acl.which == PROTO_ACL_DEFAULT ? "default" : "access",
		    acl.idx);
		proto_put_xfer_acl(b, &acl);
	}
}

static int run_act(const struct act *a, unsigned no)
{
	struct sess s;
	struct proto_buf b;
	struct proto_xfer_totals tot = { 0 };
	unsigned i, k;
	int r;

	memset(&s, 0, sizeof(s));
	alarm(ACT_SECONDS);
	say("== act %u: %s", no, a->what);
	s.mbuf = malloc(MSG_CAP);
	s.rbuf = malloc(MSG_CAP);
	s.dbuf = malloc(DATA_CAP);
	if (!s.mbuf || !s.rbuf || !s.dbuf) {
		say("SETUP: out of memory");
		r = -ENOMEM;
		goto out;
	}
	g_lone = a->lone;
	r = sess_open(&s, a->flags, a->dest);
	g_lone = false;
	if (r && a->refusal_ok) {
		say("the session was refused, as it should be");
		r = 0;
		goto out;
	}
	if (r)
		goto out;

	/* totals and entries */
	for (i = 0; i < a->nents; i++) {
		tot.files++;
		if (a->ents[i].kind == PROTO_XK_FILE)
			tot.bytes += a->ents[i].size;
	}
	if (a->totals_set) {
		tot.files = a->tot_files;
		tot.bytes = a->tot_bytes;
	}
	proto_buf_init(&b, s.mbuf, MSG_CAP);
	r = a->mis == M_NO_TOTALS
		    ? 0
		    : proto_encode_xfer_totals(&b, &tot) ?: send_msg(&s.ctrl, &b);
	if (r) {
		say("SETUP: sending TOTALS: %s", lr_strerror(r));
		goto out;
	}
	proto_buf_init(&b, s.mbuf, MSG_CAP);
	proto_msg_begin(&b, PROTO_XFER_FILES);
	if (a->mis == M_RAW_FILES) {
		memcpy(s.mbuf + PROTO_HDR_LEN, a->raw, a->raw_len);
		b.len = PROTO_HDR_LEN + a->raw_len;
	}
	for (i = 0; i < a->nents; i++) {
		const struct ent *e = &a->ents[i];
		struct proto_xfer_entry pe = {
			.idx = i,
			.kind = e->kind,
			.mode = e->mode ? e->mode
					: (e->kind == PROTO_XK_DIR ? 0755
								   : 0644),
			.size = e->size,
			.mtime_sec = 1700000000,
			.path = e->path,
			.path_len = (uint16_t)ent_len(e),
			.target = e->target,
			.target_len =
				(uint16_t)(e->target ? strlen(e->target) : 0),
			.eflags = e->eflags,
			.link_to = e->link_to,
		};
		char pe_esc[FSIO_MAX_PATH * 4 + 1];
		char devt[8];

		if (e->owned) {
			struct proto_xfer_owner o = { .idx = i,
						      .uid = e->uid,
						      .gid = e->gid };

			/* as given, checked or not: the receiver checks */
			memcpy(o.user, e->user ? e->user : "",
			       strlen(e->user ? e->user : ""));
			memcpy(o.group, e->group ? e->group : "",
			       strlen(e->group ? e->group : ""));
			proto_put_xfer_owner(&b, &o);
		}
		put_xattr_items(&b, e, i);
		if (e->kind == PROTO_XK_CHARDEV ||
		    e->kind == PROTO_XK_BLOCKDEV) {
			uint32_t mm[2] = { e->major, e->minor };
			unsigned j;

			for (j = 0; j < 8; j++)
				devt[j] =
					(char)(mm[j / 4] >> (24 - 8 * (j % 4)));
			pe.target = devt;
			pe.target_len = 8;
		}
		say("announce: entry %u kind %u '%s'%s%s size %llu", i, e->kind,
		    esc(e->path, ent_len(e), pe_esc, sizeof(pe_esc)),
		    e->target ? " -> " : "", e->target ? e->target : "",
		    (unsigned long long)e->size);
		proto_put_xfer_entry(&b, &pe);
	}
	r = proto_msg_end(&b) ?: send_msg(&s.ctrl, &b);
	if (r) {
		say("SETUP: sending FILES: %s", lr_strerror(r));
		goto out;
	}

	/* plans */
	if (!pump_until(&s, all_planned, (void *)a, WAIT_MS) && !s.terminal)
		say("no plan for every file within %d s", WAIT_MS / 1000);

	/* chunks */
	if (!s.terminal && !chunk_misdeed(&s, a)) {
		for (i = 0; i < a->nents && !s.terminal; i++) {
			const struct ent *e = &a->ents[i];
			uint32_t n = nchunks_of(e->size, s.chunk), c;

			if (e->kind != PROTO_XK_FILE || !sending(&s, i))
				continue;
			for (c = 0; c < n; c++) {
				uint32_t l = len_of(e->size, c, s.chunk);

				if (send_chunk(&s, c, PROTO_XC_DATA, i, c, l, l,
					       fill_of(i),
					       a->mis == M_WRONG_DIGEST ||
						       a->mis ==
							       M_FLOOD_FAILED))
					break;
				s.chunks_sent[i]++;
			}
			if (a->mis == M_CHUNK_BEYOND)
				send_chunk(&s, 1, PROTO_XC_DATA, i, n, 10, 10,
					   fill_of(i), false);
			if (a->mis == M_CHUNK_TWICE) {
				/* once it is acknowledged */
				pump_until(&s, never, NULL, 500);
				send_chunk(&s, 0, PROTO_XC_DATA, i, 0,
					   len_of(e->size, 0, s.chunk),
					   len_of(e->size, 0, s.chunk),
					   fill_of(i), false);
			}
		}
	}
	if (!s.terminal)
		send_sums(&s, a);
	if (!s.terminal && a->pause_end)
		pause_before_end(&s, a);
	if (!s.terminal) {
		proto_buf_init(&b, s.mbuf, MSG_CAP);
		r = proto_encode_empty(&b, PROTO_XFER_END)
			    ?: send_msg(&s.ctrl, &b);
		if (r)
			say("sending END: %s", lr_strerror(r));
	}

	/* answers: resend what is asked for until every file settles */
	for (k = 0; k < 50 && !s.terminal; k++) {
		if (!pump_until(&s, all_settled, (void *)a, WAIT_MS))
			break;
		if (!s.nresend)
			break;
		for (i = 0; i < s.nresend && !s.terminal; i++) {
			uint32_t idx = s.resend_idx[i], c = s.resend_chunk[i];
			const struct ent *e;
			uint32_t l;

			if (idx >= a->nents)
				continue;
			e = &a->ents[idx];
			l = len_of(e->size, c, s.chunk);
			send_chunk(&s, c, PROTO_XC_DATA, idx, c, l, l,
				   fill_of(idx),
				   a->mis == M_WRONG_DIGEST ||
					   a->mis == M_FLOOD_FAILED);
			s.chunks_sent[idx]++;
		}
		s.nresend = 0;
	}
	if (a->mis == M_WRONG_DIGEST)
		say("chunk 0 of entry 0 sent %u times, BAD answered %u times",
		    s.chunks_sent[0], s.bad[0]);
	if (a->mis == M_FLOOD_FAILED && !s.terminal) {
		/* 80 MiB of a file that failed: drained, within a bound */
		for (k = 0; k < 1280 && !s.terminal; k++) {
			if (send_chunk(&s, k, PROTO_XC_DATA, 0, 0, s.chunk,
				       s.chunk, fill_of(0), false))
				break;
			if (k % 64 == 0)
				pump(&s, 0);
		}
		say("sent %u chunks of the failed file", k);
	}
	/* end the streams (END, then our side shut: PROTOCOL section 6),
	 * then the outcome */
	if (!s.terminal) {
		for (i = 0; i < s.n; i++)
			if (!conn_send_data(&s.data[i], CONN_REC_END, s.dbuf,
					    0))
				shutdown(s.data[i].fd, SHUT_WR);
		if (!pump_until(&s, never, NULL, WAIT_MS) && !s.terminal)
			say("no outcome from the receiver within %d s",
			    WAIT_MS / 1000);
	}
	r = 0;
out:
	alarm(0);
	sess_close(&s);
	free(s.mbuf);
	free(s.rbuf);
	free(s.dbuf);
	return r;
}

/* ------------------------------ cases ------------------------------ */

#define FILE10(p)                                              \
	{                                                      \
		.kind = PROTO_XK_FILE, .path = (p), .size = 10 \
	}
#define DIR(p)                                    \
	{                                         \
		.kind = PROTO_XK_DIR, .path = (p) \
	}
#define LINK(p, t)                                                   \
	{                                                            \
		.kind = PROTO_XK_SYMLINK, .path = (p), .target = (t) \
	}

/* -H: a 10-byte file others may link to, and a hard link to entry i */
#define LFILE10(p)                                              \
	{                                                       \
		.kind = PROTO_XK_FILE, .path = (p), .size = 10, \
		.eflags = PROTO_XE_LINKED                       \
	}
#define HLINK(p, i)                                                    \
	{                                                              \
		.kind = PROTO_XK_HARDLINK, .path = (p), .link_to = (i) \
	}
#define HL PROTO_XF_HARD_LINKS

/* -X/-A: an entry's items, and the flags */
#define XATTRS(v) .xattrs = (v), .nxattrs = sizeof(v) / sizeof((v)[0])
#define XA	  PROTO_XF_XATTRS
#define ACLS	  PROTO_XF_ACLS

/* Linux's value of system.posix_acl_access (version 2; tag, perm, id
 * little-endian): user::rwx group::rwx other::rwx */
static const uint8_t g_acl_blob[] = {
	2,    0, 0, 0,			       /* version */
	0x01, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, /* USER_OBJ */
	0x04, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, /* GROUP_OBJ */
	0x20, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, /* OTHER */
};

/* security.capability, VFS_CAP_REVISION_2, effective: cap_setuid
 * permitted */
static const uint8_t g_fcaps[] = {
	0x01, 0, 0, 0x02, /* magic_etc */
	0x80, 0, 0, 0,	  /* permitted, low: bit 7 */
	0,    0, 0, 0,	  /* inheritable, low */
	0,    0, 0, 0,	  /* permitted, high */
	0,    0, 0, 0,	  /* inheritable, high */
};

static const struct xa g_xa_sys[] = {
	{ "system.posix_acl_access", g_acl_blob, sizeof(g_acl_blob) },
};
static const struct xa g_xa_os2[] = { { "os2.x", "v", 1 } };
static const struct xa g_xa_bare[] = { { "user.", "v", 1 } };
static const struct xa g_xa_order[] = { { "user.b", "v", 1 },
					{ "user.a", "v", 1 } };
static const struct xa g_xa_user[] = { { "user.x", "v", 1 } };
/* in byte order: 's' before 'u' */
static const struct xa g_xa_cap[] = {
	{ "security.capability", g_fcaps, sizeof(g_fcaps) },
	{ "user.kept", "yes", 3 },
};

/* user::rwx group::rwx other::rwx, as an access or a default ACL */
static const struct proto_xfer_acl g_acl_access = {
	.which = PROTO_ACL_ACCESS,
	.n = 3,
	.e = { { .tag = PROTO_ACL_USER_OBJ, .perm = 7 },
	       { .tag = PROTO_ACL_GROUP_OBJ, .perm = 7 },
	       { .tag = PROTO_ACL_OTHER, .perm = 7 } },
};
static const struct proto_xfer_acl g_acl_default = {
	.which = PROTO_ACL_DEFAULT,
	.n = 3,
	.e = { { .tag = PROTO_ACL_USER_OBJ, .perm = 7 },
	       { .tag = PROTO_ACL_GROUP_OBJ, .perm = 7 },
	       { .tag = PROTO_ACL_OTHER, .perm = 7 } },
};

static char g_abs_file[FSIO_MAX_PATH], g_abs_dir[FSIO_MAX_PATH],
	g_abs_link[FSIO_MAX_PATH], g_out_target[FSIO_MAX_PATH];

/* An entry whose path_len says 60000: short body, then a real one. */
static uint8_t g_raw[PROTO_MAX_BODY];

static size_t raw_entry(uint8_t *p, uint16_t vlen, uint16_t path_len,
			size_t real)
{
	memset(p, 0, 4 + 32 + real);
	p[0] = PROTO_T_ENTRY >> 8;
	p[1] = PROTO_T_ENTRY & 0xff;
	p[2] = (uint8_t)(vlen >> 8);
	p[3] = (uint8_t)vlen;
	p += 4;
	p[4] = PROTO_XK_FILE;
	p[6] = 0x01; /* mode 0644 */
	p[7] = 0xa4;
	p[15] = 10; /* size */
	p[28] = (uint8_t)(path_len >> 8);
	p[29] = (uint8_t)path_len;
	memset(p + 32, 'a', real);
	return 4 + 32 + real;
}

/*
 * Memory on trust (issue 15, item 9): a window of SPARSE files of SIZE
 * bytes announced and planned, no data (the window asked with
 * HOSTILE_WINDOW; "window N" printed); with OVER, one entry more than
 * the window, which the receiver must refuse. The session then held for
 * HOLD_S seconds ("holding" printed), for the caller to read the
 * receiver's memory.
 */
#define HUGE_MAX 1025u
/* Entries *i..upto-1: SPARSE files of size bytes, in FILES messages. */
static int announce_sparse(struct sess *s, unsigned *i, unsigned upto,
			   uint64_t size)
{
	static char paths[HUGE_MAX][16];
	struct proto_buf b;
	int r = 0;

	while (!r && *i < upto) {
		proto_buf_init(&b, s->mbuf, MSG_CAP);
		proto_msg_begin(&b, PROTO_XFER_FILES);
		for (; *i < upto && b.len + 64 < PROTO_MAX_BODY; (*i)++) {
			struct proto_xfer_entry pe = {
				.idx = *i,
				.kind = PROTO_XK_FILE,
				.eflags = PROTO_XE_SPARSE,
				.mode = 0644,
				.size = size,
				.mtime_sec = 1700000000,
				.path = paths[*i],
			};

			snprintf(paths[*i], sizeof(paths[*i]), "sparse_%u", *i);
			pe.path_len = (uint16_t)strlen(paths[*i]);
			proto_put_xfer_entry(&b, &pe);
		}
		r = proto_msg_end(&b) ?: send_msg(&s->ctrl, &b);
	}
	return r;
}

static int run_huge_sparse(uint64_t size, int hold_s, bool over)
{
	struct proto_xfer_totals tot = { 0 };
	unsigned nents = 0, i = 0;
	char dest[32];
	struct proto_buf b;
	struct sess s;
	int64_t end;
	int r;

	memset(&s, 0, sizeof(s));
	alarm((unsigned)hold_s + 2 * ACT_SECONDS);
	/* one directory a process: several run at once */
	snprintf(dest, sizeof(dest), "huge_%ld", (long)getpid());
	s.mbuf = malloc(MSG_CAP);
	s.rbuf = malloc(MSG_CAP);
	s.dbuf = malloc(DATA_CAP);
	r = !s.mbuf || !s.rbuf || !s.dbuf ? -ENOMEM : sess_open(&s, 0, dest);
	if (!r) {
		say("window %u", s.window);
		nents = s.window + (over ? 1 : 0);
		if (nents > HUGE_MAX)
			r = -E2BIG;
		tot = (struct proto_xfer_totals){ .files = nents,
						  .bytes = nents * size };
	}
	proto_buf_init(&b, s.mbuf, MSG_CAP);
	if (!r)
		r = proto_encode_xfer_totals(&b, &tot) ?: send_msg(&s.ctrl, &b)
			?: announce_sparse(&s, &i, s.window, size);
	if (r) {
		say("SETUP: announcing: %s", lr_strerror(r));
		goto out;
	}
	end = net_now_ms() + 3 * WAIT_MS; /* four at once on a busy host */
	while (!s.terminal && s.nplans < s.window && net_now_ms() < end)
		pump(&s, 200);
	say("planned %u of %u", s.nplans, nents);
	/* one more, past the window: it must end the session */
	if (over && !s.terminal && !announce_sparse(&s, &i, nents, size)) {
		end = net_now_ms() + WAIT_MS;
		while (!s.terminal && net_now_ms() < end)
			pump(&s, 200);
	}
	say("holding");
	end = net_now_ms() + hold_s * 1000;
	while (!s.terminal && net_now_ms() < end)
		pump(&s, 200);
	say("released");
out:
	sess_close(&s);
	free(s.mbuf);
	free(s.rbuf);
	free(s.dbuf);
	return r ? 1 : 0;
}

static int run_case(const char *name)
{
	struct act acts[12];
	unsigned n = 0, i;
	int r = 0;

	memset(acts, 0, sizeof(acts));
	snprintf(g_abs_file, sizeof(g_abs_file), "%s/abs_file", g_outside);
	snprintf(g_abs_dir, sizeof(g_abs_dir), "%s/abs_dir", g_outside);
	snprintf(g_abs_link, sizeof(g_abs_link), "%s/abs_link", g_outside);
	snprintf(g_out_target, sizeof(g_out_target), "%s/target", g_outside);

	if (!strcmp(name, "abs_path")) {
		acts[n++] = (struct act){
			.what = "absolute paths, then a good file",
			.ents = { FILE10(g_abs_file), DIR(g_abs_dir),
				  LINK(g_abs_link, "x"), FILE10("/tmp/x"),
				  FILE10("ok_abs_path") },
			.nents = 5,
		};
	} else if (!strcmp(name, "dotdot")) {
		acts[n++] = (struct act){
			.what = "'..' paths, then a good file",
			.ents = { FILE10("../escape"), FILE10(".."),
				  DIR("../escape_dir"),
				  LINK("../escape_link", "x"),
				  FILE10("ok_dotdot") },
			.nents = 5,
		};
	} else if (!strcmp(name, "dotdot_mid")) {
		acts[n++] = (struct act){
			.what = "'..' inside paths, then a good file",
			.ents = { FILE10("a/../../escape"),
				  FILE10("a/b/../../../escape"),
				  FILE10("a/./b"), FILE10("ok_dotdot_mid") },
			.nents = 4,
		};
	} else if (!strcmp(name, "nul_in_path")) {
		acts[n++] = (struct act){
			.what = "a NUL inside the path, then a good file",
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "nul\0evil",
				    .path_len = 8,
				    .size = 10 },
				  { .kind = PROTO_XK_FILE,
				    .path = "nul_tail\0",
				    .path_len = 9,
				    .size = 10 },
				  FILE10("ok_nul_in_path") },
			.nents = 3,
		};
	} else if (!strcmp(name, "control_chars")) {
		acts[n++] = (struct act){
			.what = "control characters in paths, then a good "
				"file",
			.ents = { FILE10("evil\x1b[31m.txt"), FILE10("a\nb"),
				  FILE10("del\x7f"), DIR("dir\x1b]0;x\x07"),
				  FILE10("ok_control_chars") },
			.nents = 5,
		};
	} else if (!strcmp(name, "empty_component")) {
		acts[n++] = (struct act){
			.what = "empty components, then a good file",
			.ents = { FILE10("a//b"), FILE10("trail/"), FILE10("/"),
				  FILE10("ok_empty_component") },
			.nents = 4,
		};
	} else if (!strcmp(name, "symlink_then_write")) {
		acts[n++] = (struct act){
			.what = "symlink 'link' to OUTSIDE and 'link/pwned' "
				"in one session",
			.ents = { LINK("link", g_outside),
				  FILE10("link/pwned") },
			.nents = 2,
		};
		acts[n++] = (struct act){
			.what = "symlinks 'link2' to OUTSIDE, 'rel' to "
				"../OUTSIDE, 'f' to OUTSIDE/target",
			.ents = { LINK("link2", g_outside), LINK("rel", g_rel),
				  LINK("f", g_out_target) },
			.nents = 3,
		};
		acts[n++] = (struct act){
			.what = "files through the symlinks of the last "
				"session",
			.ents = { FILE10("link2/pwned"), FILE10("rel/pwned"),
				  FILE10("ok_symlink_then_write") },
			.nents = 3,
		};
		acts[n++] = (struct act){
			.what = "--overwrite of the symlink 'f' by a file",
			.flags = PROTO_XF_OVERWRITE,
			.ents = { FILE10("f") },
			.nents = 1,
		};
	} else if (!strcmp(name, "symlink_escape_dir")) {
		acts[n++] = (struct act){
			.what = "symlink 'd' to OUTSIDE, dir 'd', file 'd/x' "
				"in one session",
			.ents = { LINK("d", g_outside), DIR("d"),
				  FILE10("d/x") },
			.nents = 3,
		};
		acts[n++] = (struct act){
			.what = "symlink 'd2' to OUTSIDE",
			.ents = { LINK("d2", g_outside) },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "dir 'd2', dir 'd2/sub', file 'd2/x' through "
				"it",
			.flags = PROTO_XF_OVERWRITE,
			.ents = { DIR("d2"), DIR("d2/sub"), FILE10("d2/x"),
				  FILE10("ok_symlink_escape_dir") },
			.nents = 4,
		};
	} else if (!strcmp(name, "dest_escape")) {
		acts[n++] = (struct act){
			.what = "symlink 'dl' to OUTSIDE",
			.ents = { LINK("dl", g_outside) },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "a push into 'dl'",
			.dest = "dl",
			.refusal_ok = true,
			.ents = { FILE10("x") },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "a push into 'dl/sub'",
			.dest = "dl/sub",
			.refusal_ok = true,
			.ents = { FILE10("x") },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "a push into '..'",
			.dest = "..",
			.refusal_ok = true,
			.ents = { FILE10("dest_dotdot") },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "a push into OUTSIDE (absolute)",
			.dest = g_outside,
			.refusal_ok = true,
			.ents = { FILE10("x") },
			.nents = 1,
		};
	} else if (!strcmp(name, "lone_file")) {
		acts[n++] = (struct act){
			.what = "LONE_FILE: one file named 'lone_a'",
			.dest = "lone_a",
			.lone = true,
			.ents = { FILE10("x") },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "symlink 'lone_l' to OUTSIDE/target",
			.ents = { LINK("lone_l", g_out_target) },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "LONE_FILE: one file named 'lone_l' (the symlink)",
			.dest = "lone_l",
			.lone = true,
			.refusal_ok = true,
			.ents = { FILE10("y") },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "LONE_FILE: one file under 'lone_l/below'",
			.dest = "lone_l/below",
			.lone = true,
			.refusal_ok = true,
			.ents = { FILE10("y") },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "LONE_FILE: one file 'sub/z' into 'lone_b'",
			.dest = "lone_b",
			.lone = true,
			.ents = { FILE10("sub/z") },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "LONE_FILE: two files into 'lone_c'",
			.dest = "lone_c",
			.lone = true,
			.ents = { FILE10("p"), FILE10("q") },
			.nents = 2,
		};
		acts[n++] = (struct act){
			.what = "LONE_FILE: a directory and a file onto the "
				"file 'lone_a'",
			.dest = "lone_a",
			.lone = true,
			.refusal_ok = true,
			.ents = { DIR("d"), FILE10("d/w") },
			.nents = 2,
		};
		acts[n++] = (struct act){
			.what = "LONE_FILE: one file onto '..'",
			.dest = "..",
			.lone = true,
			.refusal_ok = true,
			.ents = { FILE10("lone_dotdot") },
			.nents = 1,
		};
	} else if (!strcmp(name, "planted_temp")) {
		acts[n++] = (struct act){
			.what = "symlinks named as the temporary file and "
				"journal of 'g'",
			.ents = { LINK(".g.lrpart", g_out_target),
				  LINK(".g.lrjournal", g_out_target) },
			.nents = 2,
		};
		acts[n++] = (struct act){
			.what = "file 'g' of 5 chunks",
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "g",
				    .size = 5 * CHUNK - 7 } },
			.nents = 1,
		};
	} else if (!strcmp(name, "oversize_length")) {
		size_t k = raw_entry(g_raw, 32 + 5, 60000, 5);

		acts[n++] = (struct act){
			.what = "an entry whose path_len says 60000 (5 "
				"bytes follow)",
			.mis = M_RAW_FILES,
			.raw = g_raw,
			.raw_len = k,
			.totals_set = true,
			.tot_files = 1,
			.tot_bytes = 10,
		};
		k = raw_entry(g_raw + k, 32 + 60000, 60000, 60000);
		acts[n++] = (struct act){
			.what = "an entry with a 60000-byte path",
			.mis = M_RAW_FILES,
			.raw = g_raw + acts[0].raw_len,
			.raw_len = k,
			.totals_set = true,
			.tot_files = 1,
			.tot_bytes = 10,
		};
		acts[n++] = (struct act){
			.what = "a hole chunk longer than the chunk size",
			.mis = M_ZERO_OVER_CHUNK,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "over_zero",
				    .size = 2 * CHUNK } },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "a data chunk longer than the chunk size",
			.mis = M_DATA_OVER_CHUNK,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "over_data",
				    .size = 2 * CHUNK } },
			.nents = 1,
		};
	} else if (!strcmp(name, "more_bytes")) {
		static const char *const w[] = {
			"a 1 MiB chunk for a 10-byte file",
			"a full-size chunk for a 10-byte file",
			"a chunk past the end of a 10-byte file",
			"a chunk header of 10 bytes on a 1 MiB record",
			"chunk 0 again after it was acknowledged",
		};
		static const enum misdeed m[] = { M_BIG_RECORD, M_FULL_LEN,
						  M_CHUNK_BEYOND,
						  M_LEN_VS_RECORD,
						  M_CHUNK_TWICE };

		static const char *const names[] = {
			"more_bytes_1", "more_bytes_2", "more_bytes_3",
			"more_bytes_4", "more_bytes_5",
		};

		for (i = 0; i < 5; i++)
			acts[n++] = (struct act){
				.what = w[i],
				.mis = m[i],
				.ents = { FILE10(names[i]) },
				.nents = 1,
				.totals_set = true,
				.tot_files = 1,
				.tot_bytes = 10,
			};
	} else if (!strcmp(name, "more_files")) {
		acts[n++] = (struct act){
			.what = "totals of 1 file, 2 announced",
			.ents = { FILE10("more_files_1"),
				  FILE10("more_files_2") },
			.nents = 2,
			.totals_set = true,
			.tot_files = 1,
			.tot_bytes = 20,
		};
		acts[n++] = (struct act){
			.what = "totals of 10 bytes, 20 announced",
			.ents = { FILE10("more_files_3"),
				  FILE10("more_files_4") },
			.nents = 2,
			.totals_set = true,
			.tot_files = 2,
			.tot_bytes = 10,
		};
	} else if (!strcmp(name, "unasked_chunk")) {
		acts[n++] = (struct act){
			.what = "a chunk for entry 7, never announced",
			.mis = M_UNASKED,
			.ents = { FILE10("unasked") },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "a chunk for entry 0, a directory",
			.mis = M_UNASKED_DIR,
			.ents = { DIR("unasked_dir") },
			.nents = 1,
		};
	} else if (!strcmp(name, "wrong_digest_forever")) {
		acts[n++] = (struct act){
			.what = "chunk 0 with a wrong digest, again and again",
			.mis = M_WRONG_DIGEST,
			.ents = { FILE10("wrong_digest"),
				  FILE10("wrong_digest_2") },
			.nents = 2,
		};
		acts[n++] = (struct act){
			.what = "wrong digests until the file fails, then 80 "
				"MiB more of it",
			.mis = M_FLOOD_FAILED,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "flood_failed",
				    .size = CHUNK } },
			.nents = 1,
		};
	} else if (!strcmp(name, "zero_one_chunk")) {
		acts[n++] = (struct act){
			.what = "a 10-byte file, not sparse, as one ZERO chunk",
			.mis = M_ZERO_ONE,
			.ents = { FILE10("zero_one") },
			.nents = 1,
		};
	} else if (!strcmp(name, "zero_over_held")) {
		acts[n++] = (struct act){
			.what = "chunk 0 of a 5-chunk file, then gone",
			.mis = M_ABANDON,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "zero_held",
				    .size = 5 * CHUNK } },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "the same file resumed, chunk 0 as ZERO",
			.mis = M_ZERO_HELD,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "zero_held",
				    .size = 5 * CHUNK } },
			.nents = 1,
		};
	} else if (!strcmp(name, "pipe_short_sum")) {
		acts[n++] = (struct act){
			.what = "a pipe of two whole chunks, a SUM of one and "
				"100 bytes",
			.mis = M_PIPE_SHORT_SUM,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "pipe_short",
				    .size = PROTO_XFER_SIZE_UNKNOWN } },
			.nents = 1,
			.totals_set = true,
			.tot_files = 1,
			.tot_bytes = UINT64_MAX,
		};
	} else if (!strcmp(name, "first_message")) {
		acts[n++] = (struct act){
			.what = "XFER_FILES as the first message",
			.mis = M_NO_TOTALS,
			.ents = { FILE10("first_files") },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "XFER_TOTALS of 2^32 + 1 files",
			.ents = { FILE10("first_big") },
			.nents = 1,
			.totals_set = true,
			.tot_files = (1ull << 32) + 1,
			.tot_bytes = 10,
		};
	} else if (!strcmp(name, "files_after_end")) {
		acts[n++] = (struct act){
			.what = "END while a file is open, then FILES",
			.mis = M_FILES_AFTER_END,
			.ents = { FILE10("after_end") },
			.nents = 1,
			.totals_set = true,
			.tot_files = 2,
			.tot_bytes = 20,
		};
	} else if (!strcmp(name, "ctrl_closed_after_accept")) {
		struct sess s;

		memset(&s, 0, sizeof(s));
		s.mbuf = malloc(MSG_CAP);
		s.rbuf = malloc(MSG_CAP);
		g_no_streams = true;
		r = !s.mbuf || !s.rbuf || sess_open(&s, 0, "gone");
		say("accepted; closing the control connection, no streams");
		sess_close(&s);
		free(s.mbuf);
		free(s.rbuf);
		return r ? 1 : 0;
	} else if (!strcmp(name, "huge_sparse")) {
		const char *hold = getenv("HOSTILE_HOLD_S");

		return run_huge_sparse(256ull << 30, hold ? atoi(hold) : 5,
				       false);
	} else if (!strcmp(name, "window_overrun")) {
		return run_huge_sparse(1ull << 20, 0, true);
	} else if (!strcmp(name, "hardlink_targets")) {
		acts[n++] = (struct act){
			.what = "hard links to a file not flagged LINKED, to a "
				"directory, and one to a good file",
			.flags = HL,
			.ents = { FILE10("hl_plain"), DIR("hl_dir"),
				  HLINK("hl_a", 0), HLINK("hl_b", 1),
				  LFILE10("ok_hl"), HLINK("ok_hl_link", 4) },
			.nents = 6,
		};
		acts[n++] = (struct act){
			.what = "hard links named outside the root",
			.flags = HL,
			.ents = { LFILE10("ok_hl_2"), HLINK("../escape_hl", 0),
				  HLINK(g_abs_file, 0), HLINK("a/../../x", 0) },
			.nents = 4,
		};
		acts[n++] = (struct act){
			.what = "a hard link to a later entry",
			.flags = HL,
			.ents = { HLINK("hl_fw", 1), LFILE10("hl_after") },
			.nents = 2,
		};
		acts[n++] = (struct act){
			.what = "a LINKED file without HARD_LINKS asked",
			.ents = { LFILE10("hl_unasked") },
			.nents = 1,
		};
	} else if (!strcmp(name, "hardlink_unverified")) {
		acts[n++] = (struct act){
			.what = "a hard link to a file whose digest is wrong",
			.flags = HL,
			.mis = M_BAD_SUM,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "hl_sum",
				    .eflags = PROTO_XE_LINKED,
				    .size = 5 * CHUNK + 3 },
				  HLINK("hl_sum_link", 0) },
			.nents = 2,
		};
	} else if (!strcmp(name, "hardlink_over_symlink")) {
		acts[n++] = (struct act){
			.what = "symlink 'hl_sym' to OUTSIDE/target",
			.ents = { LINK("hl_sym", g_out_target) },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "--overwrite -H: a hard link named 'hl_sym'",
			.flags = HL | PROTO_XF_OVERWRITE,
			.ents = { LFILE10("hl_src"), HLINK("hl_sym", 0) },
			.nents = 2,
		};
	} else if (!strcmp(name, "hardlink_changed")) {
		/* the caller replaces 'hl_f' while the act is paused */
		acts[n++] = (struct act){
			.what = "-H: 'hl_f' verified, a hard link 'hl_g' to it, "
				"a pause before END",
			.flags = HL,
			.pause_end = true,
			.ents = { LFILE10("hl_f"), HLINK("hl_g", 0) },
			.nents = 2,
		};
	} else if (!strcmp(name, "owner_cases")) {
		acts[n++] = (struct act){
			.what = "root's setuid file, owner kept, no consent",
			.flags = PROTO_XF_OWNER | PROTO_XF_GROUP,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "own_suid",
				    .size = 10,
				    .mode = 04755,
				    .owned = true },
				  { .kind = PROTO_XK_DIR,
				    .path = "own_sgid_dir",
				    .mode = 02777,
				    .owned = true } },
			.nents = 2,
		};
		acts[n++] = (struct act){
			.what = "an owner without -o or -g asked",
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "own_unasked",
				    .size = 10,
				    .owned = true } },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "an owner name with a ':' and a '/'",
			.flags = PROTO_XF_OWNER,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "own_badname",
				    .size = 10,
				    .owned = true,
				    .user = "root:x",
				    .group = "../etc" } },
			.nents = 1,
		};
	} else if (!strcmp(name, "xattr_cases")) {
		/* every act but the capability one cut off at the entry:
		 * an act of its own each */
		acts[n++] = (struct act){
			.what = "-X: system.posix_acl_access (rwx to all) as "
				"an extended attribute",
			.flags = XA,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "xa_sys",
				    .size = 10,
				    XATTRS(g_xa_sys) } },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "-X: a name in os2.",
			.flags = XA,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "xa_os2",
				    .size = 10,
				    XATTRS(g_xa_os2) } },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "-X: the name 'user.', nothing after it",
			.flags = XA,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "xa_bare",
				    .size = 10,
				    XATTRS(g_xa_bare) } },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "-X: names out of order (user.b, user.a)",
			.flags = XA,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "xa_order",
				    .size = 10,
				    XATTRS(g_xa_order) } },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "-A: an ACL (rwx to all) on a symlink to "
				"OUTSIDE",
			.flags = ACLS,
			.ents = { { .kind = PROTO_XK_SYMLINK,
				    .path = "xa_link",
				    .target = g_outside,
				    .acl = &g_acl_access } },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "-A: a default ACL on a file",
			.flags = ACLS,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "xa_dflt",
				    .size = 10,
				    .acl = &g_acl_default } },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "extended attributes without -X asked",
			.flags = ACLS,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "xa_unasked",
				    .size = 10,
				    XATTRS(g_xa_user) } },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "an ACL without -A asked",
			.flags = XA,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "xa_unasked_acl",
				    .size = 10,
				    .acl = &g_acl_access } },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "-X: extended attributes of entry 1 before "
				"entry 0",
			.flags = XA,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "xa_other",
				    .size = 10,
				    XATTRS(g_xa_user),
				    .xa_skew = 1 },
				  FILE10("xa_other_1") },
			.nents = 2,
		};
		acts[n++] = (struct act){
			.what = "-X -o -g: root's file with "
				"security.capability (cap_setuid), no setid "
				"consent",
			.flags = XA | PROTO_XF_OWNER | PROTO_XF_GROUP,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "xa_cap",
				    .size = 10,
				    .mode = 0755,
				    .owned = true,
				    .user = "root",
				    .group = "root",
				    XATTRS(g_xa_cap) } },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "-X -H: extended attributes before a hard link",
			.flags = XA | HL,
			.ents = { LFILE10("xa_hl_src"),
				  { .kind = PROTO_XK_HARDLINK,
				    .path = "xa_hl",
				    .link_to = 0,
				    XATTRS(g_xa_user) } },
			.nents = 2,
		};
	} else if (!strcmp(name, "xattr_partial")) {
		/* the same two files twice, up to date the second time: the
		 * one whose item says the sender could not read them all
		 * keeps its user. names, the one without an item loses them */
		acts[n++] = (struct act){
			.what = "-X: two files with user.x",
			.flags = XA,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "xp_keep",
				    .size = 10,
				    XATTRS(g_xa_user) },
				  { .kind = PROTO_XK_FILE,
				    .path = "xp_gone",
				    .size = 10,
				    XATTRS(g_xa_user) } },
			.nents = 2,
		};
		acts[n++] = (struct act){
			.what = "-X: the same files up to date, the first with "
				"PARTIAL and no name, the second without an item",
			.flags = XA,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "xp_keep",
				    .size = 10,
				    .xa_flags = PROTO_XAF_PARTIAL },
				  FILE10("xp_gone") },
			.nents = 2,
		};
	} else if (!strcmp(name, "special_cases")) {
		acts[n++] = (struct act){
			.what = "a device node 1:3 mode 0666 without the "
				"receiver's consent, a FIFO, a device outside",
			.flags = PROTO_XF_SPECIALS | PROTO_XF_DEVICES,
			.ents = { { .kind = PROTO_XK_CHARDEV,
				    .path = "sp_dev",
				    .mode = 0666,
				    .major = 1,
				    .minor = 3 },
				  { .kind = PROTO_XK_BLOCKDEV,
				    .path = "../sp_escape",
				    .mode = 0666,
				    .major = 8 },
				  { .kind = PROTO_XK_FIFO,
				    .path = "sp_fifo",
				    .mode = 04666 },
				  FILE10("ok_special_cases") },
			.nents = 4,
		};
		acts[n++] = (struct act){
			.what = "a FIFO without --specials asked",
			.ents = { { .kind = PROTO_XK_FIFO,
				    .path = "sp_unasked" } },
			.nents = 1,
		};
		acts[n++] = (struct act){
			.what = "a device with --specials only",
			.flags = PROTO_XF_SPECIALS,
			.ents = { { .kind = PROTO_XK_CHARDEV,
				    .path = "sp_dev2",
				    .major = 1,
				    .minor = 5 } },
			.nents = 1,
		};
	} else if (!strcmp(name, "bad_sum")) {
		acts[n++] = (struct act){
			.what = "right chunks, wrong file digest",
			.mis = M_BAD_SUM,
			.ents = { { .kind = PROTO_XK_FILE,
				    .path = "bad_sum",
				    .size = 5 * CHUNK + 3 } },
			.nents = 1,
		};
	} else {
		fprintf(stderr, "hostile_send: unknown case '%s'\n", name);
		return 2;
	}
	for (i = 0; i < n && !r; i++)
		if (run_act(&acts[i], i + 1))
			r = 1;
	return r;
}

int main(int argc, char **argv)
{
	const char *tok = getenv("LINERATE_TOKEN");
	const char *base;
	char *end;
	unsigned long port;

	if (argc != 5) {
		fprintf(stderr,
			"usage: LINERATE_TOKEN=... hostile_send HOST PORT CASE "
			"OUTSIDE\n");
		return 2;
	}
	g_host = argv[1];
	port = strtoul(argv[2], &end, 10);
	if (*end || !port || port > 65535) {
		fprintf(stderr, "hostile_send: bad port '%s'\n", argv[2]);
		return 2;
	}
	g_port = (uint16_t)port;
	if (!tok || session_token_psk(tok, g_psk)) {
		fprintf(stderr,
			"hostile_send: LINERATE_TOKEN missing or bad\n");
		return 1;
	}
	snprintf(g_outside, sizeof(g_outside), "%s", argv[4]);
	if (g_outside[0] != '/') {
		fprintf(stderr, "hostile_send: OUTSIDE must be absolute\n");
		return 2;
	}
	base = strrchr(g_outside, '/') + 1;
	snprintf(g_rel, sizeof(g_rel), "../%s", base);
	/* the window to ask for (FILES_WINDOW); unset: none said */
	if (getenv("HOSTILE_WINDOW"))
		g_window =
			(uint32_t)strtoul(getenv("HOSTILE_WINDOW"), NULL, 10);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	return run_case(argv[3]);
}
