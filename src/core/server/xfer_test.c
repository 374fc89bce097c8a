// SPDX-License-Identifier: MIT
/* A file transfer on linerate's server: its admission (the six
 * refusals), its paths and destination, its data streams, the engine. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "filelist.h"
#include "filter.h"
#include "fsio.h"
#include "xfer.h"
#include "server_int.h"
#include "banned.h"

/* Refuse with code and why; returns r. */
static int refuse(struct server_test *t, uint32_t code, int r, char *why,
		  size_t cap, const char *text)
{
	snprintf(why, cap, "%s", text);
	server__send_error(&t->cc, code, "%s", why);
	return r;
}

/*
 * Whether this server takes this request: a token, a root, a direction it
 * serves, and setuid/setgid bits only with the receiving operator's
 * consent (a token holder must not plant them on its own say).
 */
static int admit(struct server_test *t, const struct proto_xfer_request *req,
		 char *why, size_t cap)
{
	const struct server_opts *o = &t->srv->o;
	bool push = req->op == PROTO_XFER_PUSH;

	if (!o->psk || !t->cc.secure)
		return refuse(t, PROTO_ERR_AUTH, LR_EAUTH, why, cap,
			      "file transfers need a server started with "
			      "--token-file, and a client holding that "
			      "token");
	if (o->rootfd < 0)
		return refuse(t, PROTO_ERR_BAD_REQUEST, -EPERM, why, cap,
			      "this server has no --root: it answers bench "
			      "tests only");
	if (!push && o->push_only)
		return refuse(t, PROTO_ERR_BAD_REQUEST, -EPERM, why, cap,
			      "this receiver (linerate recv) accepts pushes "
			      "only");
	if (push && o->read_only)
		return refuse(t, PROTO_ERR_BAD_REQUEST, -EPERM, why, cap,
			      "this server is --read-only: pulls only");
	if (push && (req->flags & PROTO_XF_KEEP_SETID) && !o->allow_setid &&
	    !(o->xfer_flags & PROTO_XF_KEEP_SETID))
		return refuse(t, PROTO_ERR_BAD_REQUEST, -EPERM, why, cap,
			      "this receiver does not keep setuid/setgid bits "
			      "(serve needs --allow-setid, recv "
			      "--keep-setid)");
	return 0;
}

/* The request's paths, each checked, as strings of our own. */
static int copy_paths(struct server_test *t,
		      const struct proto_xfer_request *req, char **paths,
		      char *why, size_t cap)
{
	char esc[PROTO_MAX_TEXT];
	unsigned i;

	for (i = 0; i < req->npaths; i++) {
		const char *bad = NULL;

		paths[i] = strndup(req->paths[i], req->path_lens[i]);
		if (!paths[i]) {
			snprintf(why, cap, "out of memory");
			return -ENOMEM;
		}
		if (req->path_lens[i] &&
		    fsio_path_check(paths[i], req->path_lens[i], &bad)) {
			snprintf(why, cap, "refused path '%s': %s",
				 fsio_escape(paths[i], req->path_lens[i], esc,
					     sizeof(esc)),
				 bad);
			server__send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s",
					   why);
			return LR_EBADPATH;
		}
	}
	return 0;
}

/* A pull's filter rules, as strings of our own (the request's buffer
 * is read into again before the walk). */
static int copy_filters(struct server_test *t,
			const struct proto_xfer_request *req,
			struct lr_filter *f, char *why, size_t cap)
{
	struct lr_err e = { 0 };
	unsigned i;

	for (i = 0; i < req->nfilters; i++)
		if (filter_add(f, req->filter_include[i], req->filters[i],
			       req->filter_lens[i], &e)) {
			snprintf(why, cap, "refused filter rule %u: %s", i + 1,
				 e.msg);
			server__send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s",
					   why);
			return LR_EBADMSG;
		}
	if (!req->list)
		return 0;
	/* --files-from: the paths were checked by the decoder */
	if (list_add_wire(&f->list, (const char *)req->list, req->list_len,
			  &e) ||
	    ((req->list_flags & PROTO_XL_ROOT) &&
	     list_add_wire(&f->list, ".", 1, &e))) {
		snprintf(why, cap, "refused file list: %s", e.msg);
		server__send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return LR_EBADMSG;
	}
	list_set_recurse(f->list, req->list_flags & PROTO_XL_RECURSE);
	return 0;
}

/*
 * `send FILE HOST:NAME` (LONE_FILE), NAME (buf) no directory beneath the
 * root: the one file may take NAME when NAME is missing or a regular file,
 * looked at from its parent, never through a symlink (its missing parents
 * are made as a destination's). Anything else there is refused as a
 * destination that is no directory.
 */
static int lone_dest(struct server *srv, char *buf, struct xfer_dest *dest,
		     int *destfd)
{
	char parent[FSIO_MAX_PATH + 1], name[FSIO_MAX_NAME + 1];
	struct stat st;
	int pfd, r = 0;

	fsio_split(buf, strlen(buf), parent, name);
	pfd = fsio_open_dir(srv->o.rootfd, parent, false, 0);
	if (pfd == -ENOENT) {
		*dest = (struct xfer_dest){ .dirfd = srv->o.rootfd,
					    .path = buf,
					    .one_file = buf };
		return 0;
	}
	if (pfd < 0)
		return pfd;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW))
		r = errno == ENOENT ? 0 : -errno;
	else if (!S_ISREG(st.st_mode))
		r = S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
	if (r) {
		close(pfd);
		return r;
	}
	/* the name, kept beside the path the request's buffer holds */
	memcpy(buf + FSIO_MAX_PATH + 1, name, strlen(name) + 1);
	*destfd = pfd;
	*dest = (struct xfer_dest){ .dirfd = pfd,
				    .path = buf + FSIO_MAX_PATH + 1,
				    .one_file = buf + FSIO_MAX_PATH + 1 };
	return 0;
}

/*
 * A push's destination below the root: opened when it is there; when it
 * is missing, made by the receiver when the first entry comes (a push
 * that fails first leaves no directory behind), after a check that what
 * is there of it is no symlink or file. path is the request's; the root
 * may itself be made so (root_sub: `linerate recv DIR` of a DIR that is
 * not there yet). 0 or -errno.
 */
static int push_dest(struct server *srv, const char *path, bool lone,
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
	if (lone && (path[0] || srv->o.root_sub_names_file) && buf[0] &&
	    strlen(buf) <= FSIO_MAX_PATH && (fd == -ENOENT || fd == -ENOTDIR))
		return lone_dest(srv, buf, dest, destfd);
	if (fd != -ENOENT)
		return fd;
	*dest = (struct xfer_dest){ .dirfd = srv->o.rootfd, .path = buf };
	return 0;
}

/* The same memory bound as a bench test: a buffer of one chunk per
 * stream on each side. */
static int within_memory(struct server_test *t,
			 const struct proto_xfer_request *req, char *why,
			 size_t cap)
{
	uint32_t chunk = req->chunk_size ? req->chunk_size : XFER_DEFAULT_CHUNK;

	if ((uint64_t)req->streams * chunk <= BENCH_MAX_TEST_MEM)
		return 0;
	snprintf(why, cap,
		 "%u streams of %u-byte chunks pass this server's %llu MiB "
		 "per transfer",
		 req->streams, chunk,
		 (unsigned long long)(BENCH_MAX_TEST_MEM >> 20));
	server__send_error(&t->cc, PROTO_ERR_LIMIT, "%s", why);
	return -E2BIG;
}

/* The session's window: what both ends keep, when the request said how
 * many it keeps (this end: what its descriptors hold with every test slot
 * taken); 0 (the protocol's default) when it did not. */
static uint32_t agreed_window(const struct server *srv,
			      const struct proto_xfer_request *req)
{
	uint32_t fit = xfer_window_fit(srv->o.max_tests);

	return req->files_window < fit ? req->files_window : fit;
}

/* Answer XFER_ACCEPT and wait for the data streams. */
static int open_streams(struct server_test *t,
			const struct proto_xfer_request *req, uint8_t *buf,
			char *why, size_t cap)
{
	struct server *srv = t->srv;
	struct proto_xfer_accept acc = { 0 };
	unsigned i, n = req->streams;
	struct proto_buf b;
	int r;

	t->xconns = calloc(n, sizeof(*t->xconns));
	if (!t->xconns || crypto_random(t->id, sizeof(t->id))) {
		snprintf(why, cap, "out of memory");
		server__send_error(&t->cc, PROTO_ERR_INTERNAL, "%s", why);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		conn_init_plain(&t->xconns[i], -1);
	pthread_mutex_lock(&srv->lock);
	t->is_xfer = true;
	t->xdir = req->op == PROTO_XFER_PUSH ? PROTO_DIR_C2S : PROTO_DIR_S2C;
	t->expected = n;
	t->waiting = true;
	pthread_mutex_unlock(&srv->lock);
	memcpy(acc.session_id, t->id, sizeof(t->id));
	snprintf(acc.software, sizeof(acc.software), "linerate %s",
		 LINERATE_VERSION);
	acc.streams = (uint16_t)n;
	acc.chunk_size = req->chunk_size ? req->chunk_size : XFER_DEFAULT_CHUNK;
	acc.files_window = t->xwindow = agreed_window(srv, req);
	acc.lone_file = req->lone_file; /* understood: open_dest applied it */
	acc.links = req->links_wish;	/* granted: grant_links */
	proto_buf_init(&b, buf, PROTO_MAX_BODY);
	r = proto_encode_xfer_accept(&b, &acc);
	if (!r)
		r = conn_send_msg(&t->cc, buf, b.len,
				  net_now_ms() + SERVER_CTRL_TIMEOUT_MS);
	if (r) {
		snprintf(why, cap, "sending XFER_ACCEPT: %s", lr_strerror(r));
		return r;
	}
	r = server__wait_streams(t);
	if (r == LR_ECLOSED) {
		snprintf(why, cap, SERVER_CTRL_GONE_WORDS, t->attached, n);
	} else if (r) {
		snprintf(why, cap,
			 "only %u of %u data streams connected within %d s",
			 t->attached, n, SERVER_ATTACH_TIMEOUT_MS / 1000);
		server__send_error(&t->cc, PROTO_ERR_TIMEOUT, "%s", why);
	}
	return r;
}

/* The engine, as the receiver of a push or the sender of a pull. */
static int run_engine(struct server_test *t,
		      const struct proto_xfer_request *req, char **paths,
		      const struct lr_filter *filter,
		      const struct xfer_dest *dest, struct server_event *ev,
		      char *why, size_t cap)
{
	struct server *srv = t->srv;
	struct xfer_conns cs = { .ctrl = &t->cc,
				 .n = req->streams,
				 .data = t->xconns };
	struct xfer_source src = { .rootfd = srv->o.rootfd };
	struct xfer_opts xo = { 0 };
	struct lr_err e = { 0 };
	int r;

	xo.chunk_size = req->chunk_size ? req->chunk_size : XFER_DEFAULT_CHUNK;
	xo.files_window = t->xwindow; /* as XFER_ACCEPT said */
	/* what a client may ask for; STDOUT is the server's own choice
	 * (linerate recv --stdout), never the peer's */
	xo.flags = (req->flags & ~(uint32_t)PROTO_XF_STDOUT) |
		   srv->o.xfer_flags;
	if (req->links_wish) /* both ends keep links, and know KEPT */
		xo.flags |= XFER_F_HARD_LINKS | XFER_F_KEPT_ITEMS |
			    (req->flags & PROTO_XF_HARD_LINKS
				     ? 0
				     : XFER_F_LINKS_DEFAULT);
	xo.rate = req->rate;
	xo.allow_devices = srv->o.allow_devices;
	xo.progress_ms = srv->o.progress_ms;
	xo.cancel = srv->o.cancel ? srv->o.cancel : &srv->stopping;
	if (req->op == PROTO_XFER_PUSH) {
		xo.filter = filter->n || filter->list ? filter : NULL;
		xo.delete_root = req->contents & 1;
		r = xfer_recv(&cs, dest, srv->o.outfd, &xo, srv->o.xfer_cb,
			      &ev->xres, &e);
	} else {
		src.npaths = req->npaths;
		src.paths = (const char *const *)paths;
		src.contents = req->contents;
		src.filter = filter->n || filter->list ? filter : NULL;
		src.hard_links = xo.flags & XFER_F_HARD_LINKS;
		src.specials = req->flags & PROTO_XF_SPECIALS;
		src.devices = req->flags & PROTO_XF_DEVICES;
		xo.flags &= ~(uint32_t)PROTO_XF_STDOUT;
		r = xfer_send(&cs, &src, &xo, srv->o.xfer_cb, &ev->xres, &e);
		/* the client verified every file and finished; only its
		 * XFER_DONE was lost or tampered with on the way: not a
		 * failure of the transfer (the log says what happened) */
		if (r && ev->xres.peer_end_lost)
			r = 0;
	}
	if (r)
		snprintf(why, cap, "%s", e.msg);
	return r;
}

/* LINKS_WISH: granted where names are made, not into standard output
 * nor in doctor's test transfer (then not answered, as an older server
 * skips it). */
static void grant_links(const struct server *srv,
			struct proto_xfer_request *req)
{
	if ((req->flags & (PROTO_XF_STDOUT | PROTO_XF_SCRATCH)) ||
	    (srv->o.xfer_flags & PROTO_XF_STDOUT))
		req->links_wish = false;
}

/* A push's destination, or the refusal of a bad one. */
static int open_dest(struct server_test *t, const char *path, bool lone,
		     struct xfer_dest *dest, int *destfd, char *buf, char *why,
		     size_t cap)
{
	char esc[PROTO_MAX_TEXT];
	int r = push_dest(t->srv, path, lone, dest, destfd, buf);

	if (!r)
		return 0;
	/* buf: the path as looked up (below recv's DIR's parent, when that
	 * DIR was not there) */
	snprintf(why, cap, "destination '%s': %s",
		 fsio_escape(buf, strlen(buf), esc, sizeof(esc)),
		 r == -ELOOP ? "a symlink (never written through)"
			     : lr_strerror(r));
	server__send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
	return r;
}

int server__xfer_test(struct server_test *t, uint8_t *buf, uint32_t len,
		      char *why, size_t cap, struct server_event *ev)
{
	struct proto_xfer_request req;
	char *paths[PROTO_XFER_MAX_PATHS] = { 0 };
	char destpath[2 * FSIO_MAX_PATH + 2];
	struct xfer_dest dest = { .dirfd = -1, .path = "" };
	struct lr_filter filter = { 0 };
	int destfd = -1, r;
	unsigned i;

	if (proto_decode_xfer_request(buf, len, &req))
		return refuse(t, PROTO_ERR_BAD_REQUEST, LR_EBADMSG, why, cap,
			      "malformed XFER_REQUEST");
	ev->xfer_op = req.op;
	grant_links(t->srv, &req);
	r = admit(t, &req, why, cap);
	if (!r)
		r = copy_paths(t, &req, paths, why, cap);
	if (!r)
		r = copy_filters(t, &req, &filter, why, cap);
	if (!r && req.op == PROTO_XFER_PUSH)
		r = open_dest(t, paths[0], req.lone_file, &dest, &destfd,
			      destpath, why, cap);
	if (!r)
		r = within_memory(t, &req, why, cap);
	if (!r)
		r = open_streams(t, &req, buf, why, cap);
	if (!r)
		r = run_engine(t, &req, paths, &filter, &dest, ev, why, cap);
	if (destfd >= 0)
		close(destfd);
	filter_free(&filter);
	for (i = 0; i < PROTO_XFER_MAX_PATHS; i++)
		free(paths[i]);
	return r;
}
