// SPDX-License-Identifier: MIT
/* The transfer's control messages: XFER_REQUEST, XFER_ACCEPT,
 * XFER_TOTALS, XFER_DONE (docs/PROTOCOL.md section 7). */
#include <string.h>

#include "err.h"
#include "proto_int.h"
#include "banned.h"

#define XF_ALL                                                           \
	(PROTO_XF_OVERWRITE | PROTO_XF_UPDATE | PROTO_XF_NO_FSYNC |      \
	 PROTO_XF_KEEP_SETID | PROTO_XF_STDOUT | PROTO_XF_SCRATCH |      \
	 PROTO_XF_DELETE | PROTO_XF_DELETE_EXCLUDED | PROTO_XF_DRY_RUN | \
	 PROTO_XF_CHECKSUM | PROTO_XF_WHOLE_FILE | PROTO_XF_HARD_LINKS | \
	 PROTO_XF_OWNER | PROTO_XF_GROUP | PROTO_XF_NUMERIC_IDS |        \
	 PROTO_XF_SPECIALS | PROTO_XF_DEVICES | PROTO_XF_XATTRS |        \
	 PROTO_XF_ACLS)
#define XFER_MAX_DEPTH 256u /* components, as fsio_path_check */

/*
 * A path of XFER_REQUEST: components of 1..PROTO_XFER_MAX_NAME bytes
 * separated by single '/', none "." or "..", no NUL or control character.
 * "" is accepted only when empty_ok (the root, as a push destination).
 * The receiver checks again with fsio_path_check; this refuses a bad
 * request before it reaches the file system code.
 */
static bool xfer_path_ok(const uint8_t *p, size_t len, bool empty_ok)
{
	size_t i, start = 0, depth = 0;

	if (len == 0)
		return empty_ok;
	if (len > PROTO_XFER_MAX_PATH)
		return false;
	for (i = 0; i <= len; i++) {
		size_t n;

		if (i < len && p[i] != '/') {
			if (p[i] < 0x20 || p[i] == 0x7f)
				return false;
			continue;
		}
		n = i - start;
		if (n == 0 || n > PROTO_XFER_MAX_NAME)
			return false;
		if (p[start] == '.' &&
		    (n == 1 || (n == 2 && p[start + 1] == '.')))
			return false;
		if (++depth > XFER_MAX_DEPTH)
			return false;
		start = i + 1;
	}
	return true;
}

static bool chunk_size_ok(uint32_t n)
{
	return n >= PROTO_XFER_MIN_CHUNK && n <= PROTO_XFER_MAX_CHUNK;
}

static void put_filter(struct proto_buf *b, bool include, const char *pat,
		       size_t len)
{
	uint8_t v[1 + PROTO_XFER_MAX_PATTERN];

	if (!len || len > PROTO_XFER_MAX_PATTERN)
		len = 0; /* refused by the peer: never sent so */
	v[0] = include ? 1 : 0;
	memcpy(v + 1, pat, len);
	proto_put_bytes(b, PROTO_T_FILTER, v, 1 + len);
}

static int get_filter(void *msg, const struct proto__tlv *t);

/* LIST: flags, then the paths separated by NUL bytes. */
static void put_list(struct proto_buf *b, const struct proto_xfer_request *m)
{
	uint8_t *q = proto__put_tlv(b, PROTO_T_LIST, 1u + (size_t)m->list_len);

	if (!q)
		return; /* too long for the message: proto_msg_end says so */
	q[0] = m->list_flags;
	memcpy(q + 1, m->list, m->list_len);
}

int proto_encode_xfer_request(struct proto_buf *b,
			      const struct proto_xfer_request *m)
{
	unsigned i;

	proto_msg_begin(b, PROTO_XFER_REQUEST);
	proto_put_u8(b, PROTO_T_OP, m->op);
	proto_put_u16(b, PROTO_T_STREAMS, m->streams);
	proto_put_u32(b, PROTO_T_CHUNK_SIZE, m->chunk_size);
	proto_put_u32(b, PROTO_T_XFLAGS, m->flags);
	proto_put_u64(b, PROTO_T_RATE, m->rate);
	for (i = 0; i < m->npaths && i < PROTO_XFER_MAX_PATHS; i++)
		proto_put_bytes(b, PROTO_T_PATH, m->paths[i], m->path_lens[i]);
	if (m->contents)
		proto_put_u64(b, PROTO_T_CONTENTS, m->contents);
	for (i = 0; i < m->nfilters && i < PROTO_XFER_MAX_FILTERS; i++)
		put_filter(b, m->filter_include[i], m->filters[i],
			   m->filter_lens[i]);
	if (m->list)
		put_list(b, m);
	if (m->files_window)
		proto_put_u32(b, PROTO_T_FILES_WINDOW, m->files_window);
	if (m->lone_file)
		proto_put_u8(b, PROTO_T_LONE_FILE, 1);
	if (m->links_wish)
		proto_put_u8(b, PROTO_T_LINKS_WISH, 1);
	return proto_msg_end(b);
}

/* LONE_FILE or LINKS_WISH, when said: 1 (anything else is malformed). */
static int get_lone(bool *lone, const struct proto__tlv *t)
{
	if (t->len != 1 || t->v[0] != 1)
		return LR_EBADMSG;
	*lone = true;
	return 0;
}

static int get_req_lone(void *msg, const struct proto__tlv *t)
{
	return get_lone(&((struct proto_xfer_request *)msg)->lone_file, t);
}

static int get_acc_lone(void *msg, const struct proto__tlv *t)
{
	return get_lone(&((struct proto_xfer_accept *)msg)->lone_file, t);
}

static int get_req_links(void *msg, const struct proto__tlv *t)
{
	return get_lone(&((struct proto_xfer_request *)msg)->links_wish, t);
}

static int get_acc_links(void *msg, const struct proto__tlv *t)
{
	return get_lone(&((struct proto_xfer_accept *)msg)->links, t);
}

/* A FILTER value: kind (0 exclude, 1 include), then the pattern. */
static int get_filter(void *msg, const struct proto__tlv *t)
{
	struct proto_xfer_request *m = msg;

	if (m->nfilters >= PROTO_XFER_MAX_FILTERS || t->len < 2 ||
	    t->len > 1 + PROTO_XFER_MAX_PATTERN || t->v[0] > 1)
		return LR_EBADMSG;
	m->filter_include[m->nfilters] = t->v[0] == 1;
	m->filters[m->nfilters] = (const char *)t->v + 1;
	m->filter_lens[m->nfilters] = (uint16_t)(t->len - 1);
	m->nfilters++;
	return 0;
}

/* LIST: flags, then at least one path or the ROOT flag; each path
 * checked as the request's paths are. */
static int get_list(void *msg, const struct proto__tlv *t)
{
	struct proto_xfer_request *m = msg;
	const uint8_t *p = t->v + 1;
	size_t i, start = 0, n;

	if (t->len < 1 || (t->v[0] & ~(PROTO_XL_RECURSE | PROTO_XL_ROOT)))
		return LR_EBADMSG;
	n = (size_t)t->len - 1;
	if (!n && !(t->v[0] & PROTO_XL_ROOT))
		return LR_EBADMSG;
	for (i = 0; n && i <= n; i++) {
		if (i < n && p[i])
			continue;
		if (!xfer_path_ok(p + start, i - start, false))
			return LR_EBADMSG;
		start = i + 1;
	}
	m->list = p;
	m->list_len = (uint16_t)n;
	m->list_flags = t->v[0];
	return 0;
}

/* FILES_WINDOW, when said: 256..65,536 (an explicit 0 is malformed). */
static int get_window(uint32_t *w, const struct proto__tlv *t)
{
	if (t->len != 4)
		return LR_EBADMSG;
	*w = proto__rd32(t->v);
	if (*w < PROTO_XFER_WINDOW_DEFAULT || *w > PROTO_XFER_WINDOW_LIMIT)
		return LR_EBADMSG;
	return 0;
}

static int get_req_window(void *msg, const struct proto__tlv *t)
{
	return get_window(&((struct proto_xfer_request *)msg)->files_window, t);
}

static int get_acc_window(void *msg, const struct proto__tlv *t)
{
	return get_window(&((struct proto_xfer_accept *)msg)->files_window, t);
}

/* A path: a pointer into the body, checked with the others at the end. */
static int get_path(void *msg, const struct proto__tlv *t)
{
	struct proto_xfer_request *m = msg;

	if (m->npaths >= PROTO_XFER_MAX_PATHS || t->len > PROTO_XFER_MAX_PATH)
		return LR_EBADMSG;
	m->paths[m->npaths] = (const char *)t->v;
	m->path_lens[m->npaths] = t->len;
	m->npaths++;
	return 0;
}

#define XR struct proto_xfer_request
static const struct proto__field xfer_request_fields[] = {
	PROTO__F_U8(PROTO_T_OP, XR, op, PROTO__REQUIRED),
	PROTO__F_U16(PROTO_T_STREAMS, XR, streams, PROTO__REQUIRED),
	PROTO__F_U32(PROTO_T_CHUNK_SIZE, XR, chunk_size, 0),
	PROTO__F_U32(PROTO_T_XFLAGS, XR, flags, 0),
	PROTO__F_U64(PROTO_T_RATE, XR, rate, 0),
	PROTO__F_FN(PROTO_T_PATH, get_path, 0, PROTO__MANY),
	PROTO__F_U64(PROTO_T_CONTENTS, XR, contents, 0),
	PROTO__F_FN(PROTO_T_FILTER, get_filter, 0, PROTO__MANY),
	PROTO__F_FN(PROTO_T_LIST, get_list, 0, 0),
	PROTO__F_FN(PROTO_T_FILES_WINDOW, get_req_window, 0, 0),
	PROTO__F_FN(PROTO_T_LONE_FILE, get_req_lone, 0, 0),
	PROTO__F_FN(PROTO_T_LINKS_WISH, get_req_links, 0, 0),
};
#undef XR

static bool xfer_request_ok(const struct proto_xfer_request *m)
{
	bool push = m->op == PROTO_XFER_PUSH;
	unsigned i;

	if (!push && m->op != PROTO_XFER_PULL)
		return false;
	if (m->streams < 1 || m->streams > PROTO_MAX_STREAMS)
		return false;
	if (m->chunk_size && !chunk_size_ok(m->chunk_size))
		return false;
	if (m->flags & ~(uint32_t)XF_ALL)
		return false;
	if (m->npaths < 1 || (push && m->npaths != 1))
		return false;
	/* a push: bit 0 alone, the destination is the transfer's root */
	if (push ? m->contents > 1
		 : m->npaths < 64 && (m->contents >> m->npaths) != 0)
		return false;
	if ((m->flags & PROTO_XF_DELETE_EXCLUDED) &&
	    !(m->flags & PROTO_XF_DELETE))
		return false;
	/* ids as they are: of owners, groups or ACL entries kept */
	if ((m->flags & PROTO_XF_NUMERIC_IDS) &&
	    !(m->flags & (PROTO_XF_OWNER | PROTO_XF_GROUP | PROTO_XF_ACLS)))
		return false;
	/* links between files of one named tree, and attributes of named
	 * files: not into a pipe, not in doctor's test transfer (nothing
	 * there is named) */
	if ((m->flags &
	     (PROTO_XF_HARD_LINKS | PROTO_XF_XATTRS | PROTO_XF_ACLS)) &&
	    (m->flags & (PROTO_XF_STDOUT | PROTO_XF_SCRATCH)))
		return false;
	/* a push's rules are for its receiver's deletions only */
	if (push && m->nfilters && !(m->flags & PROTO_XF_DELETE))
		return false;
	/* a name for one file: a push's, not of a tree to --delete in */
	if (m->lone_file && (!push || (m->flags & PROTO_XF_DELETE)))
		return false;
	/* a list is a pull's, of one directory sent as its contents, and
	 * not with DELETE */
	if (m->list && (push || m->npaths != 1 || !(m->contents & 1) ||
			(m->flags & PROTO_XF_DELETE)))
		return false;
	for (i = 0; i < m->npaths; i++)
		if (!xfer_path_ok((const uint8_t *)m->paths[i], m->path_lens[i],
				  push))
			return false;
	return true;
}

int proto_decode_xfer_request(const uint8_t *body, size_t len,
			      struct proto_xfer_request *m)
{
	int r;

	memset(m, 0, sizeof(*m));
	r = proto__decode(body, len, xfer_request_fields,
			  PROTO__NFIELDS(xfer_request_fields), m);
	if (r)
		return r;
	return xfer_request_ok(m) ? 0 : LR_EBADMSG;
}

int proto_encode_xfer_accept(struct proto_buf *b,
			     const struct proto_xfer_accept *m)
{
	proto_msg_begin(b, PROTO_XFER_ACCEPT);
	proto_put_bytes(b, PROTO_T_TEST_ID, m->session_id, PROTO_TEST_ID_LEN);
	proto_put_str(b, PROTO_T_SOFTWARE, m->software);
	proto_put_u16(b, PROTO_T_STREAMS, m->streams);
	proto_put_u32(b, PROTO_T_CHUNK_SIZE, m->chunk_size);
	if (m->files_window)
		proto_put_u32(b, PROTO_T_FILES_WINDOW, m->files_window);
	if (m->lone_file)
		proto_put_u8(b, PROTO_T_LONE_FILE, 1);
	if (m->links)
		proto_put_u8(b, PROTO_T_LINKS_WISH, 1);
	return proto_msg_end(b);
}

/* All but the software name, the window, LONE_FILE and LINKS_WISH are
 * required. */
#define XA struct proto_xfer_accept
static const struct proto__field xfer_accept_fields[] = {
	PROTO__F_BYTES(PROTO_T_TEST_ID, XA, session_id, PROTO_TEST_ID_LEN,
		       PROTO__REQUIRED),
	PROTO__F_STR(PROTO_T_SOFTWARE, XA, software, 0),
	PROTO__F_U16(PROTO_T_STREAMS, XA, streams, PROTO__REQUIRED),
	PROTO__F_U32(PROTO_T_CHUNK_SIZE, XA, chunk_size, PROTO__REQUIRED),
	PROTO__F_FN(PROTO_T_FILES_WINDOW, get_acc_window, 0, 0),
	PROTO__F_FN(PROTO_T_LONE_FILE, get_acc_lone, 0, 0),
	PROTO__F_FN(PROTO_T_LINKS_WISH, get_acc_links, 0, 0),
};
#undef XA

int proto_decode_xfer_accept(const uint8_t *body, size_t len,
			     struct proto_xfer_accept *m)
{
	int r;

	memset(m, 0, sizeof(*m));
	r = proto__decode(body, len, xfer_accept_fields,
			  PROTO__NFIELDS(xfer_accept_fields), m);
	if (r)
		return r;
	if (m->streams < 1 || m->streams > PROTO_MAX_STREAMS ||
	    !chunk_size_ok(m->chunk_size))
		return LR_EBADMSG;
	return 0;
}

int proto_encode_xfer_totals(struct proto_buf *b,
			     const struct proto_xfer_totals *m)
{
	proto_msg_begin(b, PROTO_XFER_TOTALS);
	proto_put_u64(b, PROTO_T_FILES, m->files);
	proto_put_u64(b, PROTO_T_BYTES, m->bytes);
	return proto_msg_end(b);
}

static const struct proto__field xfer_totals_fields[] = {
	PROTO__F_U64(PROTO_T_FILES, struct proto_xfer_totals, files,
		     PROTO__REQUIRED),
	PROTO__F_U64(PROTO_T_BYTES, struct proto_xfer_totals, bytes,
		     PROTO__REQUIRED),
};

int proto_decode_xfer_totals(const uint8_t *body, size_t len,
			     struct proto_xfer_totals *m)
{
	int r;

	memset(m, 0, sizeof(*m));
	r = proto__decode(body, len, xfer_totals_fields,
			  PROTO__NFIELDS(xfer_totals_fields), m);
	if (r)
		return r;
	return m->files > PROTO_XFER_MAX_FILES ? LR_EBADMSG : 0;
}

int proto_encode_xfer_done(struct proto_buf *b, const struct proto_xfer_done *m)
{
	uint8_t w[PROTO__WAIT_LEN];

	proto_msg_begin(b, PROTO_XFER_DONE);
	proto_put_u64(b, PROTO_T_FILES, m->files_ok);
	proto_put_u64(b, PROTO_T_FILES_FAILED, m->files_failed);
	proto_put_u64(b, PROTO_T_FILES_SKIPPED, m->files_skipped);
	proto_put_u64(b, PROTO_T_BYTES, m->bytes);
	proto__wait_encode(w, &m->wait);
	proto_put_bytes(b, PROTO_T_WAIT, w, sizeof(w));
	if (m->xattrs_failed)
		proto_put_u64(b, PROTO_T_XATTRS_FAILED, m->xattrs_failed);
	if (m->xattrs_why[0])
		proto_put_str(b, PROTO_T_XATTRS_WHY, m->xattrs_why);
	if (m->deletes_failed)
		proto_put_u64(b, PROTO_T_DELETES_FAILED, m->deletes_failed);
	if (m->deletes_why[0])
		proto_put_str(b, PROTO_T_DELETES_WHY, m->deletes_why);
	return proto_msg_end(b);
}

static int get_done_wait(void *msg, const struct proto__tlv *t)
{
	proto__wait_decode(t->v, &((struct proto_xfer_done *)msg)->wait);
	return 0;
}

/* The counts and bytes are required, the wait times optional. */
#define XD struct proto_xfer_done
static const struct proto__field xfer_done_fields[] = {
	PROTO__F_U64(PROTO_T_FILES, XD, files_ok, PROTO__REQUIRED),
	PROTO__F_U64(PROTO_T_FILES_FAILED, XD, files_failed, PROTO__REQUIRED),
	PROTO__F_U64(PROTO_T_FILES_SKIPPED, XD, files_skipped, PROTO__REQUIRED),
	PROTO__F_U64(PROTO_T_BYTES, XD, bytes, PROTO__REQUIRED),
	PROTO__F_FN(PROTO_T_WAIT, get_done_wait, PROTO__WAIT_LEN, 0),
	PROTO__F_U64(PROTO_T_XATTRS_FAILED, XD, xattrs_failed, 0),
	PROTO__F_STR(PROTO_T_XATTRS_WHY, XD, xattrs_why, 0),
	PROTO__F_U64(PROTO_T_DELETES_FAILED, XD, deletes_failed, 0),
	PROTO__F_STR(PROTO_T_DELETES_WHY, XD, deletes_why, 0),
};
#undef XD

int proto_decode_xfer_done(const uint8_t *body, size_t len,
			   struct proto_xfer_done *m)
{
	int r;

	memset(m, 0, sizeof(*m));
	r = proto__decode(body, len, xfer_done_fields,
			  PROTO__NFIELDS(xfer_done_fields), m);
	if (r)
		return r;
	/* each at most 2^32, so the sum cannot wrap */
	if (m->files_ok > PROTO_XFER_MAX_FILES ||
	    m->files_failed > PROTO_XFER_MAX_FILES ||
	    m->files_skipped > PROTO_XFER_MAX_FILES ||
	    m->files_ok + m->files_failed + m->files_skipped >
		    PROTO_XFER_MAX_FILES ||
	    m->xattrs_failed > PROTO_XFER_MAX_FILES ||
	    m->deletes_failed > PROTO_XFER_MAX_FILES)
		return LR_EBADMSG;
	return 0;
}
