// SPDX-License-Identifier: MIT
/*
 * The client of a transfer: connect, authenticate, ask for a push or a
 * pull, open the data streams (at once, each in a thread of its own) and
 * run the session; a push's sources are counted meanwhile.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "filelist.h"
#include "filter.h"
#include "link.h"
#include "net.h"
#include "xfer_int.h"
#include "banned.h"

/* One client session's state. */
struct xcl {
	const struct xfer_client_opts *o;
	struct lr_err *err;
	struct net_addr addr, bindaddr, *bindp;
	char where[NET_ADDRSTR];
	struct conn ctrl;
	struct conn *data;
	unsigned opened;
	struct proto_xfer_request req;
	struct proto_xfer_accept acc;
	struct counter cnt;
	struct xfer_source src;
	uint8_t *buf;
	char *list; /* a pull's --files-from as it travels */
};

static int expect(struct conn *c, uint8_t type, uint8_t *buf,
		  struct proto_hdr *h, const char *what, struct lr_err *err)
{
	int r = conn_recv_msg(c, buf, MSG_BUF, h,
			      net_now_ms() + CTRL_TIMEOUT_MS, err);

	if (r == LR_ECLOSED)
		return lr_err_set(err, r,
				  "the server closed the connection while "
				  "waiting for %s",
				  what);
	if (r)
		return r;
	if (h->type == PROTO_ERROR)
		return xfer__peer_error(buf, h->len, err);
	if (h->type != type)
		return lr_err_set(err, LR_EBADMSG, "expected %s, got %s",
				  proto_type_name(type),
				  proto_type_name(h->type));
	return 0;
}

unsigned xfer_auto_streams(const struct xfer_client_opts *o,
			   struct xfer_source *src)
{
	struct proto_xfer_totals t;
	struct lr_err e = { 0 };
	uint64_t missing = 0;
	bool pipe;

	if (o->streams)
		return o->streams;
	if (o->op != XFER_PUSH ||
	    xfer__count_sources(&o->src, &t, &pipe, &missing, &e, NULL))
		return XFER_DEFAULT_STREAMS;
	if (src) {
		src->counted = true;
		src->top_missing = missing;
		src->pipe = pipe;
		src->files = t.files;
		src->bytes = t.bytes;
	}
	return xfer__streams_for(&t, pipe);
}

/* ---- the data streams, opened at once: each connects, shakes hands and
 * sends its DATA_OPEN in a thread of its own, so the round trips overlap
 * (four streams one after the other cost four) ---- */

struct opener {
	struct xcl *k;
	const struct net_sockopts *so;
	uint8_t dir;
	unsigned n;
	_Atomic unsigned next;
	pthread_mutex_t lock;
	int r; /* the first failure */
	struct lr_err err;
};

#define OPENERS_MAX 8u

static int open_one(struct opener *op, unsigned i, struct lr_err *err)
{
	struct xcl *k = op->k;
	struct conn *c = &k->data[i];
	struct proto_data_open dop;
	uint8_t mb[PROTO_HDR_LEN + PROTO_TEST_ID_LEN + 64];
	struct proto_buf b;
	int fd, r;

	fd = net_connect(&k->addr, k->bindp, op->so, k->o->connect_timeout_ms,
			 err);
	if (fd < 0)
		return fd;
	r = conn_client_open(fd, k->o->psk, k->o->cipher_wish, k->where,
			     net_now_ms() + CTRL_TIMEOUT_MS, c, err);
	if (r) {
		/* it may hold fd already: the cleanup must not close it again
		 * (by then the number may be another stream's) */
		conn_fini(c);
		conn_init_plain(c, -1);
		close(fd);
		return r;
	}
	memcpy(dop.test_id, k->acc.session_id, PROTO_TEST_ID_LEN);
	dop.stream = (uint16_t)i;
	dop.dir = op->dir;
	proto_buf_init(&b, mb, sizeof(mb));
	r = proto_encode_data_open(&b, &dop) ?: xfer__ctrl_send_raw(c, &b);
	if (r)
		return lr_err_setc(err, r, "opening stream %u to %s", i + 1,
				   k->where);
	return 0;
}

/* Open streams until none is left or one failed. */
static void *opener_main(void *arg)
{
	struct opener *op = arg;
	unsigned i;

	while ((i = atomic_fetch_add(&op->next, 1)) < op->n) {
		struct lr_err e = { 0 };
		int r;

		pthread_mutex_lock(&op->lock);
		r = op->r;
		pthread_mutex_unlock(&op->lock);
		if (r)
			break;
		r = open_one(op, i, &e);
		if (r) {
			pthread_mutex_lock(&op->lock);
			if (!op->r) {
				op->r = r;
				op->err = e;
			}
			pthread_mutex_unlock(&op->lock);
			break;
		}
	}
	return NULL;
}

static int open_streams(struct xcl *k)
{
	struct net_sockopts so = { .window = k->o->window };
	struct opener op = {
		.k = k,
		.so = &so,
		.dir = k->req.op == PROTO_XFER_PUSH ? PROTO_DIR_C2S
						    : PROTO_DIR_S2C,
		.n = k->acc.streams,
	};
	pthread_t th[OPENERS_MAX];
	unsigned i, started = 0, want = op.n < OPENERS_MAX ? op.n : OPENERS_MAX;

	k->data = calloc(op.n, sizeof(*k->data));
	if (!k->data)
		return lr_err_setc(k->err, -ENOMEM, "streams");
	for (i = 0; i < op.n; i++)
		conn_init_plain(&k->data[i], -1);
	k->opened = op.n;
	pthread_mutex_init(&op.lock, NULL);
	for (i = 1; i < want; i++) {
		if (pthread_create(&th[started], NULL, opener_main, &op))
			break;
		started++;
	}
	opener_main(&op);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&op.lock);
	if (op.r)
		*k->err = op.err;
	return op.r;
}

/* ---- the control connection ---- */

static int client_connect(struct xcl *k)
{
	struct net_sockopts ctrl_so = { .nodelay = true };
	const struct xfer_client_opts *o = k->o;
	int fd, r;

	r = net_resolve(o->host, o->port, o->family, false, &k->addr, k->err);
	if (r)
		return r;
	if (o->bind_addr) {
		r = net_resolve(o->bind_addr, 0, k->addr.ss.ss_family, true,
				&k->bindaddr, k->err);
		if (r)
			return r;
		k->bindp = &k->bindaddr;
	}
	net_addr_str((struct sockaddr *)&k->addr.ss, k->where,
		     sizeof(k->where));
	fd = net_connect(&k->addr, k->bindp, &ctrl_so, o->connect_timeout_ms,
			 k->err);
	if (fd < 0)
		return fd;
	r = conn_client_open(fd, o->psk, o->cipher_wish, k->where,
			     net_now_ms() + CTRL_TIMEOUT_MS, &k->ctrl, k->err);
	if (r) {
		/* it may hold fd already: closed once, here */
		conn_fini(&k->ctrl);
		conn_init_plain(&k->ctrl, -1);
		close(fd);
	}
	return r;
}

/* CTRL_OPEN and the request; a server that refused us may have said
 * why. */
static int client_request(struct xcl *k)
{
	struct proto_ctrl_open co = { .features = 0 };
	struct proto_buf b;
	struct proto_hdr h;
	struct lr_err e2 = { 0 };
	int r;

	snprintf(co.software, sizeof(co.software), "linerate %s",
		 LINERATE_VERSION);
	proto_buf_init(&b, k->buf, MSG_BUF);
	r = proto_encode_ctrl_open(&b, &co)
		    ?: xfer__ctrl_send_raw(&k->ctrl, &b);
	k->req.streams = (uint16_t)(k->o->streams ? k->o->streams
				    : k->cnt.started
					    ? xfer__counter_streams(&k->cnt)
					    : xfer_auto_streams(k->o, &k->src));
	proto_buf_init(&b, k->buf, MSG_BUF);
	if (!r)
		r = proto_encode_xfer_request(&b, &k->req)
			    ?: xfer__ctrl_send_raw(&k->ctrl, &b);
	if (!r)
		return 0;
	if (expect(&k->ctrl, PROTO_XFER_ACCEPT, k->buf, &h, "an answer", &e2) !=
		    LR_EPEER &&
	    e2.code != LR_EBUSY && e2.code != LR_EAUTH)
		return lr_err_setc(k->err, r, "sending the request to %s",
				   k->where);
	*k->err = e2;
	return e2.code;
}

/* A request the server found malformed that asked for what came after
 * the first transfers: an older server does not know it. The options, in
 * the user's words, to say so. */
static const char *newer_options(const struct proto_xfer_request *q)
{
	if (q->flags & (PROTO_XF_XATTRS | PROTO_XF_ACLS))
		return "-X or -A";
	if (q->flags & (PROTO_XF_SPECIALS | PROTO_XF_DEVICES))
		return "--specials, --devices or -D";
	if (q->flags & (PROTO_XF_OWNER | PROTO_XF_GROUP | PROTO_XF_HARD_LINKS))
		return "-o, -g, -a or -H";
	return NULL;
}

static int client_accept(struct xcl *k)
{
	struct proto_hdr h;
	const char *newer;
	int r;

	r = expect(&k->ctrl, PROTO_XFER_ACCEPT, k->buf, &h,
		   "the transfer to be accepted", k->err);
	newer = newer_options(&k->req);
	if (r == LR_EPEER && newer &&
	    strstr(k->err->msg, "malformed XFER_REQUEST")) {
		char was[sizeof(k->err->msg)];

		snprintf(was, sizeof(was), "%s", k->err->msg);
		return lr_err_set(k->err, r,
				  "%s (an older linerate there refuses %s, "
				  "which it does not know: update it, or leave "
				  "the option out)",
				  was, newer);
	}
	if (!r && proto_decode_xfer_accept(k->buf, h.len, &k->acc))
		r = lr_err_set(k->err, LR_EBADMSG, "malformed XFER_ACCEPT");
	if (!r && (k->acc.streams < 1 || k->acc.streams > k->req.streams))
		k->acc.streams = k->req.streams;
	if (!r && k->acc.links && !k->req.links_wish)
		r = lr_err_set(k->err, LR_EBADMSG,
			       "malformed XFER_ACCEPT: LINKS_WISH not asked");
	if (!r && k->acc.lone_file && !k->req.lone_file)
		r = lr_err_set(k->err, LR_EBADMSG,
			       "malformed XFER_ACCEPT: LONE_FILE not asked");
	/* a window larger than asked would overrun this end's */
	if (!r && k->acc.files_window > k->req.files_window)
		r = lr_err_set(k->err, LR_EBADMSG,
			       "malformed XFER_ACCEPT: a window of %u files, "
			       "%u asked",
			       k->acc.files_window, k->req.files_window);
	return r;
}

/* The link the first data stream leaves by, or, through a relay, the
 * link of the route to the far host (the relay's is loopback). */
static void client_link(struct xcl *k, struct xfer_result *lk)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct link_info li;

	if (k->o->link_host
		    ? net_route_from(k->o->link_host, &ss, &sl)
		    : getsockname(k->data[0].fd, (struct sockaddr *)&ss, &sl))
		return;
	if (!link_lookup((struct sockaddr *)&ss, "/sys", &li)) {
		lk->link_known = true;
		snprintf(lk->link_if, sizeof(lk->link_if), "%s", li.ifname);
		lk->link_speed_bps = li.speed_bps;
		lk->link_mtu = li.mtu;
		lk->link_wireless = li.wireless;
		lk->link_virtual = li.virtual_if;
	}
	lk->ipv6 = ss.ss_family == AF_INET6;
}

/* A granted LINKS_WISH: both ends keep links, and know KEPT items. An
 * older server skipped it: links kept by default are not kept, and a
 * push's tree, counted with them, is counted again without. */
static void links_agreed(struct xcl *k, struct xfer_opts *xo)
{
	bool asked = k->req.flags & PROTO_XF_HARD_LINKS;

	if (k->req.links_wish && k->acc.links) {
		xo->flags |= XFER_F_HARD_LINKS | XFER_F_KEPT_ITEMS |
			     (asked ? 0 : XFER_F_LINKS_DEFAULT);
	} else if (k->req.links_wish && !asked) {
		xfer__counter_join(&k->cnt, NULL, true);
		k->src.hard_links = false;
		k->src.counted = false;
	}
}

/* The session over the streams, and the link's facts into res. */
static int client_session(struct xcl *k, const struct xfer_callbacks *cb,
			  struct xfer_result *res)
{
	struct xfer_conns cs = { .ctrl = &k->ctrl,
				 .n = k->acc.streams,
				 .data = k->data };
	struct xfer_opts xo = k->o->x;
	struct xfer_result lk = { 0 };
	int r;

	client_link(k, &lk);
	xo.chunk_size = k->acc.chunk_size;
	xo.files_window = k->acc.files_window;
	xo.flags = k->req.flags;
	links_agreed(k, &xo);
	xfer__counter_join(&k->cnt, &k->src, false);
	if (k->req.op == PROTO_XFER_PUSH)
		r = xfer_send(&cs, &k->src, &xo, cb, res, k->err);
	else
		r = xfer_recv(&cs, &k->o->dest, k->o->outfd, &xo, cb, res,
			      k->err);
	res->link_known = lk.link_known;
	res->ipv6 = lk.ipv6;
	memcpy(res->link_if, lk.link_if, sizeof(res->link_if));
	res->link_speed_bps = lk.link_speed_bps;
	res->link_mtu = lk.link_mtu;
	res->link_wireless = lk.link_wireless;
	res->link_virtual = lk.link_virtual;
	res->lone_as_dir = k->req.lone_file && !k->acc.lone_file;
	return r;
}

static void client_close(struct xcl *k)
{
	unsigned i;

	for (i = 0; i < k->opened; i++) {
		if (k->data[i].fd >= 0)
			close(k->data[i].fd);
		conn_fini(&k->data[i]);
	}
	free(k->data);
	free(k->list);
	if (k->ctrl.fd >= 0)
		close(k->ctrl.fd);
	conn_fini(&k->ctrl);
	xfer__counter_join(&k->cnt, NULL, true);
	free(k->buf);
}

/* A pull's --files-from, the paths separated by NUL bytes, into the
 * request; its size added to *bytes. */
static int request_list(struct xcl *k, const struct lr_list *l, size_t *bytes)
{
	struct proto_xfer_request *req = &k->req;
	uint32_t n = list_bytes(l), i, count = list_count(l);
	size_t at = 0;

	/* a TLV of at most 65,535 bytes, in a request of 65,536 */
	if (n > PROTO_MAX_BODY - *bytes - 8)
		return lr_err_set(k->err, -E2BIG,
				  "--files-from: the list takes %u bytes; a "
				  "pull carries it in its request, with %zu "
				  "bytes of paths and rules, 65,536 in all: "
				  "split it, or run `linerate send "
				  "--files-from` on the far machine",
				  n, *bytes);
	k->list = malloc(n ? n : 1);
	if (!k->list)
		return lr_err_setc(k->err, -ENOMEM, "--files-from");
	for (i = 0; i < count; i++) {
		size_t len;
		const char *p = list_path(l, i, &len);

		if (!len)
			continue; /* the directory itself: a flag */
		if (at)
			k->list[at++] = '\0';
		memcpy(k->list + at, p, len);
		at += len;
	}
	req->list = (const uint8_t *)k->list;
	req->list_len = (uint16_t)at;
	req->list_flags = (uint8_t)((list_recurses(l) ? PROTO_XL_RECURSE : 0) |
				    (list_has_root(l) ? PROTO_XL_ROOT : 0));
	*bytes += 5 + at;
	return 0;
}

/* A pull: the sender (the server) walks, so the filter rules and which
 * paths are sent as their contents travel in the request; a push with
 * --delete: the receiver keeps what the rules leave out, and deletes in
 * the destination itself when a source came as its contents. */
static int request_filters(struct xcl *k)
{
	const struct xfer_client_opts *o = k->o;
	struct proto_xfer_request *req = &k->req;
	struct lr_err *err = k->err;
	const struct lr_filter *f = o->src.filter;
	/* the fixed fields, then each path's and rule's TLV */
	size_t bytes = 64;
	unsigned i;

	/* a push: only whether the destination is the transfer's root */
	req->contents = o->op == XFER_PULL ? o->src.contents
					   : o->src.contents != 0;
	for (i = 0; i < req->npaths; i++)
		bytes += 4 + req->path_lens[i];
	if (!f)
		return 0;
	if (f->n > PROTO_XFER_MAX_FILTERS)
		return lr_err_set(err, -E2BIG,
				  "%u filter rules: a pull takes %u at most",
				  f->n, PROTO_XFER_MAX_FILTERS);
	if (f->list && o->op == XFER_PULL && request_list(k, f->list, &bytes))
		return k->err->code;
	for (i = 0; i < f->n; i++) {
		size_t n;
		bool inc;
		const char *t = filter_rule_text(f, i, &n, &inc);

		bytes += 4 + 1 + n;
		req->filters[i] = t;
		req->filter_lens[i] = (uint16_t)n;
		req->filter_include[i] = inc;
	}
	/* the request is one message of at most 64 KiB */
	if (bytes > PROTO_MAX_BODY)
		return lr_err_set(err, -E2BIG,
				  "the filter rules and paths take %zu bytes "
				  "of the request: 65,536 at most",
				  bytes);
	req->nfilters = f->n;
	return 0;
}

/* The request the options make. */
static int request_of(struct xcl *k)
{
	const struct xfer_client_opts *o = k->o;
	struct proto_xfer_request *req = &k->req;
	struct lr_err *err = k->err;
	unsigned i;

	if (o->npaths < 1 || o->npaths > XFER_MAX_PATHS ||
	    (o->op == XFER_PUSH && o->npaths != 1))
		return lr_err_set(err, -EINVAL, "%u paths for a %s", o->npaths,
				  o->op == XFER_PUSH ? "push" : "pull");
	*req = (struct proto_xfer_request){ .op = (uint8_t)o->op,
					    .chunk_size = o->x.chunk_size,
					    .flags = o->x.flags,
					    .rate = o->x.rate,
					    .npaths = o->npaths };
	/* the most this end keeps: the server answers what both keep */
	req->files_window = xfer_window_fit(1);
	if (o->x.files_window && o->x.files_window < req->files_window)
		req->files_window = o->x.files_window < XFER_WINDOW
					    ? XFER_WINDOW
					    : o->x.files_window;
	for (i = 0; i < o->npaths; i++) {
		size_t n = strlen(o->paths[i]);

		if (n > XFER_MAX_PATH)
			return lr_err_set(err, -ENAMETOOLONG,
					  "a path of %zu bytes", n);
		req->paths[i] = o->paths[i];
		req->path_lens[i] = (uint16_t)n;
	}
	req->lone_file = o->lone_file && o->op == XFER_PUSH &&
			 !(o->x.flags & XFER_F_DELETE);
	/* said with -H too: a server that grants it knows KEPT items */
	req->links_wish =
		(o->links_default || (o->x.flags & XFER_F_HARD_LINKS)) &&
		!(o->x.flags & (XFER_F_STDOUT | XFER_F_SCRATCH));
	if (o->op == XFER_PULL || (o->x.flags & XFER_F_DELETE))
		return request_filters(k);
	return 0;
}

int xfer_client_run(const struct xfer_client_opts *o,
		    const struct xfer_callbacks *cb, struct xfer_result *res,
		    struct lr_err *err)
{
	struct xcl k = { .o = o, .err = err, .src = o->src };
	int r;

	memset(res, 0, sizeof(*res));
	conn_init_plain(&k.ctrl, -1);
	if (!o->psk)
		return lr_err_set(err, LR_EAUTH,
				  "file transfers need the server's token");
	r = request_of(&k);
	if (r)
		return r;
	k.buf = malloc(MSG_BUF);
	if (!k.buf)
		return lr_err_setc(err, -ENOMEM, "buffer");
	if (o->op == XFER_PUSH && !k.src.counted)
		xfer__counter_start(&k.cnt, &o->src);
	r = client_connect(&k);
	if (!r)
		r = client_request(&k);
	if (!r)
		r = client_accept(&k);
	if (!r)
		r = open_streams(&k);
	if (!r)
		r = client_session(&k, cb, res);
	client_close(&k);
	return r;
}
