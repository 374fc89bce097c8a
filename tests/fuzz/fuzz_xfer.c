// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the file-transfer part of proto.[ch]: the
 * XFER_REQUEST, XFER_ACCEPT, XFER_TOTALS and XFER_DONE decoders, the
 * batch iterator with every proto_xfer_get_* on each item, the chunk
 * header decoder, and linerate doctor's PROBE_REQUEST and PROBE_RESULT
 * decoders.
 *
 * The first byte selects one decoder (0-7), any other value runs them
 * all; the rest is the body. Invariants checked, beyond "no sanitizer
 * report":
 *  - return values are one of the documented ones;
 *  - what a decoder accepted is inside its protocol bounds, its pointers
 *    lie inside the body;
 *  - re-encoding what was decoded gives a message that decodes again to
 *    the same values.
 * The body is copied into a buffer of its exact size, so that reading past
 * it is an ASan report.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "proto.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ENC_CAP (PROTO_HDR_LEN + PROTO_MAX_BODY)

/* The value length of an OWNER item as decoded. */
static size_t xfer_owner_len(const struct proto_xfer_owner *o)
{
	return 14 + strlen(o->user) + strlen(o->group);
}

static bool inside(const void *p, size_t n, const uint8_t *body, size_t len)
{
	const uint8_t *q = p;

	return q >= body && n <= len && q - body <= (ptrdiff_t)(len - n);
}

/* The one message in enc: its body. */
static const uint8_t *reparse(const uint8_t *enc, const struct proto_buf *b,
			      uint8_t type, size_t *len)
{
	struct proto_hdr h;

	CHECK(b->err == 0);
	CHECK(proto_decode_hdr(enc, b->len, PROTO_MAX_BODY, &h) ==
	      PROTO_HDR_LEN);
	CHECK(h.type == type && h.len + PROTO_HDR_LEN == b->len);
	*len = h.len;
	return enc + PROTO_HDR_LEN;
}

static void fuzz_request(const uint8_t *body, size_t len, uint8_t *enc)
{
	struct proto_xfer_request m, m2;
	struct proto_buf b;
	const uint8_t *body2;
	size_t len2;
	unsigned i;
	int r;

	r = proto_decode_xfer_request(body, len, &m);
	CHECK(r == 0 || r == LR_EBADMSG);
	if (r)
		return;
	CHECK(m.op == PROTO_XFER_PUSH || m.op == PROTO_XFER_PULL);
	CHECK(m.streams >= 1 && m.streams <= PROTO_MAX_STREAMS);
	CHECK(m.chunk_size == 0 || (m.chunk_size >= PROTO_XFER_MIN_CHUNK &&
				    m.chunk_size <= PROTO_XFER_MAX_CHUNK));
	CHECK(m.npaths >= 1 && m.npaths <= PROTO_XFER_MAX_PATHS);
	CHECK(m.op == PROTO_XFER_PULL || m.npaths == 1);
	CHECK(m.files_window == 0 ||
	      (m.files_window >= PROTO_XFER_WINDOW_DEFAULT &&
	       m.files_window <= PROTO_XFER_WINDOW_LIMIT));
	for (i = 0; i < m.npaths; i++) {
		const char *p = m.paths[i];
		size_t n = m.path_lens[i];

		CHECK(n <= PROTO_XFER_MAX_PATH);
		CHECK(n || m.op == PROTO_XFER_PUSH);
		CHECK(inside(p, n, body, len));
		CHECK(!n || (p[0] != '/' && p[n - 1] != '/'));
		CHECK(!memchr(p, '\0', n));
	}
	/* LONE_FILE: a push's, not with DELETE */
	CHECK(!m.lone_file ||
	      (m.op == PROTO_XFER_PUSH && !(m.flags & PROTO_XF_DELETE)));
	CHECK(m.op == PROTO_XFER_PULL || m.contents <= 1);
	CHECK(m.npaths == 64 || (m.contents >> m.npaths) == 0);
	CHECK(m.nfilters <= PROTO_XFER_MAX_FILTERS);
	for (i = 0; i < m.nfilters; i++)
		CHECK(m.filter_lens[i] >= 1 &&
		      m.filter_lens[i] <= PROTO_XFER_MAX_PATTERN &&
		      inside(m.filters[i], m.filter_lens[i], body, len));
	/* a list: a pull's, of one directory's contents, without DELETE;
	 * no empty path, none absolute or with a trailing '/' */
	if (m.list) {
		CHECK(m.op == PROTO_XFER_PULL && m.npaths == 1 &&
		      (m.contents & 1) && !(m.flags & PROTO_XF_DELETE));
		CHECK(m.list_len || (m.list_flags & PROTO_XL_ROOT));
		CHECK(!(m.list_flags & ~(PROTO_XL_RECURSE | PROTO_XL_ROOT)));
		CHECK(!m.list_len ||
		      inside((const char *)m.list, m.list_len, body, len));
		CHECK(!m.list_len || (m.list[0] && m.list[0] != '/' &&
				      m.list[m.list_len - 1] &&
				      m.list[m.list_len - 1] != '/'));
	}

	proto_buf_init(&b, enc, ENC_CAP);
	CHECK(proto_encode_xfer_request(&b, &m) == 0);
	body2 = reparse(enc, &b, PROTO_XFER_REQUEST, &len2);
	CHECK(proto_decode_xfer_request(body2, len2, &m2) == 0);
	CHECK(m.op == m2.op && m.streams == m2.streams &&
	      m.chunk_size == m2.chunk_size && m.flags == m2.flags &&
	      m.rate == m2.rate && m.npaths == m2.npaths &&
	      m.files_window == m2.files_window &&
	      m.lone_file == m2.lone_file && m.links_wish == m2.links_wish);
	for (i = 0; i < m.npaths; i++)
		CHECK(m.path_lens[i] == m2.path_lens[i] &&
		      !memcmp(m.paths[i], m2.paths[i], m.path_lens[i]));
	CHECK(m.contents == m2.contents && m.nfilters == m2.nfilters);
	for (i = 0; i < m.nfilters; i++)
		CHECK(m.filter_include[i] == m2.filter_include[i] &&
		      m.filter_lens[i] == m2.filter_lens[i] &&
		      !memcmp(m.filters[i], m2.filters[i], m.filter_lens[i]));
	CHECK(!m.list == !m2.list && m.list_len == m2.list_len &&
	      m.list_flags == m2.list_flags &&
	      (!m.list_len || !memcmp(m.list, m2.list, m.list_len)));
}

static void check_str(const char *s, size_t cap)
{
	const char *end = memchr(s, '\0', cap);

	CHECK(end != NULL);
	for (; s < end; s++)
		CHECK(*s >= 0x20 && *s <= 0x7e);
}

static void fuzz_accept(const uint8_t *body, size_t len, uint8_t *enc)
{
	struct proto_xfer_accept m, m2;
	struct proto_buf b;
	const uint8_t *body2;
	size_t len2;
	int r;

	r = proto_decode_xfer_accept(body, len, &m);
	CHECK(r == 0 || r == LR_EBADMSG);
	if (r)
		return;
	check_str(m.software, sizeof(m.software));
	CHECK(m.streams >= 1 && m.streams <= PROTO_MAX_STREAMS);
	CHECK(m.chunk_size >= PROTO_XFER_MIN_CHUNK &&
	      m.chunk_size <= PROTO_XFER_MAX_CHUNK);
	CHECK(m.files_window == 0 ||
	      (m.files_window >= PROTO_XFER_WINDOW_DEFAULT &&
	       m.files_window <= PROTO_XFER_WINDOW_LIMIT));
	proto_buf_init(&b, enc, ENC_CAP);
	CHECK(proto_encode_xfer_accept(&b, &m) == 0);
	body2 = reparse(enc, &b, PROTO_XFER_ACCEPT, &len2);
	CHECK(proto_decode_xfer_accept(body2, len2, &m2) == 0);
	CHECK(!memcmp(m.session_id, m2.session_id, PROTO_TEST_ID_LEN) &&
	      !strcmp(m.software, m2.software) && m.streams == m2.streams &&
	      m.chunk_size == m2.chunk_size &&
	      m.files_window == m2.files_window && m.lone_file == m2.lone_file);
}

static void fuzz_totals(const uint8_t *body, size_t len, uint8_t *enc)
{
	struct proto_xfer_totals m, m2;
	struct proto_buf b;
	const uint8_t *body2;
	size_t len2;
	int r;

	r = proto_decode_xfer_totals(body, len, &m);
	CHECK(r == 0 || r == LR_EBADMSG);
	if (r)
		return;
	CHECK(m.files <= PROTO_XFER_MAX_FILES);
	proto_buf_init(&b, enc, ENC_CAP);
	CHECK(proto_encode_xfer_totals(&b, &m) == 0);
	body2 = reparse(enc, &b, PROTO_XFER_TOTALS, &len2);
	CHECK(proto_decode_xfer_totals(body2, len2, &m2) == 0);
	CHECK(m.files == m2.files && m.bytes == m2.bytes);
}

static void fuzz_done(const uint8_t *body, size_t len, uint8_t *enc)
{
	struct proto_xfer_done m, m2;
	struct proto_buf b;
	const uint8_t *body2;
	size_t len2;
	int r;

	r = proto_decode_xfer_done(body, len, &m);
	CHECK(r == 0 || r == LR_EBADMSG);
	if (r)
		return;
	CHECK(m.files_ok + m.files_failed + m.files_skipped <=
	      PROTO_XFER_MAX_FILES);
	proto_buf_init(&b, enc, ENC_CAP);
	CHECK(proto_encode_xfer_done(&b, &m) == 0);
	body2 = reparse(enc, &b, PROTO_XFER_DONE, &len2);
	CHECK(proto_decode_xfer_done(body2, len2, &m2) == 0);
	CHECK(m.files_ok == m2.files_ok && m.files_failed == m2.files_failed &&
	      m.files_skipped == m2.files_skipped && m.bytes == m2.bytes &&
	      m.wait.net_us == m2.wait.net_us &&
	      m.wait.write_us == m2.wait.write_us &&
	      m.wait.cipher_us == m2.wait.cipher_us &&
	      m.xattrs_failed == m2.xattrs_failed &&
	      !strcmp(m.xattrs_why, m2.xattrs_why));
	CHECK(m.xattrs_failed <= PROTO_XFER_MAX_FILES);
	check_str(m.xattrs_why, sizeof(m.xattrs_why));
}

/* XATTRS and ACL items: what the getter accepted holds its promises
 * (bounded, inside the item, names in their namespaces and in order; an
 * ACL of known tags, in order, with its required entries) and is
 * re-appended. Both structures are large: static (one thread). */
static int fuzz_attr_items(const struct proto_xfer_iter *it,
			   const uint8_t *body, size_t len, struct proto_buf *b)
{
	static struct proto_xfer_xattrs xa;
	static struct proto_xfer_acl acl;
	int ok = 0;
	unsigned i;

	if (proto_xfer_get_xattrs(it, &xa) == 0) {
		ok++;
		CHECK(it->tag == PROTO_T_XATTRS &&
		      xa.n <= PROTO_XFER_MAX_XATTRS);
		CHECK(it->vlen <= PROTO_XFER_MAX_XATTR_LEN);
		for (i = 0; i < xa.n; i++) {
			CHECK(inside(xa.v[i].name, xa.v[i].name_len, body,
				     len));
			CHECK(!xa.v[i].value_len ||
			      inside(xa.v[i].value, xa.v[i].value_len, body,
				     len));
			CHECK(proto_xfer_xattr_name_ok(xa.v[i].name,
						       xa.v[i].name_len));
		}
		CHECK(proto_xfer_xattrs_size(&xa) == 4u + it->vlen);
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_xattrs(b, &xa);
	}
	if (proto_xfer_get_acl(it, &acl) == 0) {
		ok++;
		CHECK(it->tag == PROTO_T_ACL);
		CHECK(acl.which == PROTO_ACL_ACCESS ||
		      acl.which == PROTO_ACL_DEFAULT);
		CHECK(acl.n >= 3 && acl.n <= PROTO_XFER_MAX_ACL);
		for (i = 0; i < acl.n; i++) {
			CHECK(acl.e[i].perm <= 7);
			CHECK(!i || acl.e[i].tag >= acl.e[i - 1].tag);
			CHECK(!acl.e[i].name[0] ||
			      proto_xfer_idname_ok(acl.e[i].name,
						   strlen(acl.e[i].name)));
		}
		CHECK(proto_xfer_acl_size(&acl) == 4u + it->vlen);
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_acl(b, &acl);
	}
	return ok;
}

/* Every getter on the current item: at most one accepts it, the one its
 * tag names; what it accepted is re-appended to b. */
static void fuzz_item(const struct proto_xfer_iter *it, const uint8_t *body,
		      size_t len, struct proto_buf *b)
{
	struct proto_xfer_entry e;
	struct proto_xfer_plan p;
	struct proto_xfer_held h;
	struct proto_xfer_sum s;
	struct proto_xfer_ack a;
	struct proto_xfer_fail f;
	struct proto_xfer_wait w;
	struct proto_xfer_unread u;
	struct proto_xfer_deleted d;
	uint32_t kept;
	uint8_t how;
	struct proto_xfer_fdigest g;
	struct proto_xfer_owner own;
	int ok = 0;

	CHECK(inside(it->value, it->vlen, body, len));
	ok += fuzz_attr_items(it, body, len, b);
	if (proto_xfer_get_unread(it, &u) == 0) {
		ok++;
		CHECK(u.code >= 1 && u.code <= 4095);
		CHECK(u.path_len >= 1 && u.path_len <= PROTO_XFER_MAX_PATH);
		CHECK(inside(u.path, u.path_len, body, len));
		CHECK(!memchr(u.path, 0, u.path_len));
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_unread(b, &u);
	}
	if (proto_xfer_get_fdigest(it, &g) == 0) {
		ok++;
		CHECK(it->tag == PROTO_T_FDIGEST && it->vlen == 20);
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_fdigest(b, &g);
	}
	if (proto_xfer_get_owner(it, &own) == 0) {
		ok++;
		CHECK(it->tag == PROTO_T_OWNER);
		CHECK(strlen(own.user) <= PROTO_XFER_MAX_IDNAME &&
		      strlen(own.group) <= PROTO_XFER_MAX_IDNAME);
		CHECK(!own.user[0] ||
		      proto_xfer_idname_ok(own.user, strlen(own.user)));
		CHECK(!own.group[0] ||
		      proto_xfer_idname_ok(own.group, strlen(own.group)));
		CHECK(xfer_owner_len(&own) == it->vlen);
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_owner(b, &own);
	}
	if (proto_xfer_get_deleted(it, &d) == 0) {
		ok++;
		CHECK(d.kind >= 1 && d.kind <= 4);
		CHECK(d.path_len >= 1 && d.path_len <= PROTO_XFER_MAX_PATH);
		CHECK(inside(d.path, d.path_len, body, len));
		CHECK(!memchr(d.path, 0, d.path_len));
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_deleted(b, &d);
	}
	if (proto_xfer_get_kept(it, &kept, &how) == 0) {
		ok++;
		CHECK(it->tag == PROTO_T_KEPT && it->vlen == 5);
		CHECK(how == PROTO_KEPT_OWN || how == PROTO_KEPT_LINKED);
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_kept(b, kept, how);
	}
	if (proto_xfer_get_entry(it, &e) == 0) {
		ok++;
		CHECK(it->tag == PROTO_T_ENTRY);
		CHECK(e.kind >= PROTO_XK_FILE && e.kind <= PROTO_XK_BLOCKDEV);
		/* a hard link names an earlier entry; only a file is LINKED */
		CHECK(e.kind != PROTO_XK_HARDLINK || e.link_to < e.idx);
		CHECK(e.kind == PROTO_XK_FILE || !(e.eflags & PROTO_XE_LINKED));
		CHECK(e.mode <= 07777 && e.mtime_nsec < 1000000000u);
		CHECK(e.path_len >= 1 && e.path_len <= PROTO_XFER_MAX_PATH);
		CHECK(inside(e.path, e.path_len, body, len));
		CHECK((e.kind == PROTO_XK_SYMLINK ||
		       e.kind == PROTO_XK_CHARDEV ||
		       e.kind == PROTO_XK_BLOCKDEV) == (e.target_len > 0));
		CHECK(e.kind == PROTO_XK_SYMLINK || e.target_len == 0 ||
		      e.target_len == PROTO_XFER_DEV_LEN);
		CHECK(e.target_len <= PROTO_XFER_MAX_PATH);
		CHECK(!e.target_len ||
		      inside(e.target, e.target_len, body, len));
		CHECK(e.kind == PROTO_XK_FILE || e.size == 0);
		CHECK(proto_xfer_entry_size(&e) == 4u + it->vlen);
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_entry(b, &e);
	}
	if (proto_xfer_get_plan(it, &p) == 0) {
		ok++;
		CHECK(p.action <= PROTO_XA_REPLACE);
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_plan(b, &p);
	}
	if (proto_xfer_get_held(it, &h) == 0) {
		ok++;
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_held(b, &h);
	}
	if (proto_xfer_get_sum(it, &s) == 0) {
		ok++;
		CHECK(s.size != PROTO_XFER_SIZE_UNKNOWN && s.sent <= s.nchunks);
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_sum(b, &s);
	}
	if (proto_xfer_get_ack(it, &a) == 0) {
		ok++;
		CHECK(a.status <= PROTO_XS_FILE_AGAIN);
		CHECK(a.status != PROTO_XS_CHUNK_OK ||
		      (a.bytes >= 1 && a.bytes <= PROTO_XFER_MAX_CHUNK));
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_ack(b, &a);
	}
	if (proto_xfer_get_fail(it, &f) == 0) {
		ok++;
		check_str(f.text, sizeof(f.text));
		CHECK(strlen(f.text) + 8 == it->vlen);
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_fail(b, &f);
	}
	if (proto_xfer_get_wait(it, &w) == 0) {
		ok++;
		if (proto_xfer_batch_room(b, it->vlen))
			proto_put_xfer_wait(b, &w);
	}
	CHECK(ok <= 1);
}

/* Walk the items; the accepted ones re-encoded must be the same bytes. */
static void fuzz_batch(const uint8_t *body, size_t len, uint8_t *enc)
{
	struct proto_xfer_iter it, it2;
	struct proto_buf b;
	size_t n = 0, n2 = 0;
	int r;

	proto_buf_init(&b, enc, ENC_CAP);
	proto_msg_begin(&b, PROTO_XFER_FILES);
	proto_xfer_iter_init(&it, body, len);
	while ((r = proto_xfer_iter_next(&it)) == 1) {
		size_t before = b.len;

		CHECK(it.off <= len);
		fuzz_item(&it, body, len, &b);
		if (b.len != before) {
			CHECK(b.len - before == 4u + it.vlen);
			CHECK(!memcmp(enc + before, it.value - 4,
				      b.len - before));
			n++;
		}
	}
	CHECK(r == 0 || r == LR_EBADMSG);
	CHECK(proto_msg_end(&b) == 0);
	CHECK(b.len <= ENC_CAP);

	/* each re-encoded item is accepted again */
	proto_xfer_iter_init(&it2, enc + PROTO_HDR_LEN, b.len - PROTO_HDR_LEN);
	while ((r = proto_xfer_iter_next(&it2)) == 1)
		n2++;
	CHECK(r == 0 && n2 == n);
}

static void fuzz_chunk(const uint8_t *body, size_t len)
{
	struct proto_xfer_chunk_hdr h;
	uint8_t out[PROTO_XFER_CHUNK_HDR_LEN];
	int r;

	if (len < PROTO_XFER_CHUNK_HDR_LEN)
		return;
	r = proto_xfer_chunk_decode(body, &h);
	CHECK(r == 0 || r == LR_EBADMSG);
	if (r)
		return;
	CHECK(h.kind == PROTO_XC_DATA || h.kind == PROTO_XC_ZERO);
	CHECK(h.len >= 1 && h.len <= PROTO_XFER_MAX_CHUNK);
	proto_xfer_chunk_encode(out, &h);
	CHECK(!memcmp(out, body, PROTO_XFER_CHUNK_HDR_LEN));
}

static void fuzz_probe_request(const uint8_t *body, size_t len, uint8_t *enc)
{
	struct proto_probe_request m, m2;
	struct proto_buf b;
	const uint8_t *body2;
	size_t len2;
	int r;

	r = proto_decode_probe_request(body, len, &m);
	CHECK(r == 0 || r == LR_EBADMSG);
	if (r)
		return;
	CHECK(m.disk_bytes <= PROTO_PROBE_MAX_DISK);
	CHECK(m.cipher_ms <= PROTO_PROBE_MAX_MS);
	check_str(m.dir, sizeof(m.dir));
	proto_buf_init(&b, enc, ENC_CAP);
	CHECK(proto_encode_probe_request(&b, &m) == 0);
	body2 = reparse(enc, &b, PROTO_PROBE_REQUEST, &len2);
	CHECK(proto_decode_probe_request(body2, len2, &m2) == 0);
	CHECK(m.disk_bytes == m2.disk_bytes && m.cipher_ms == m2.cipher_ms &&
	      !strcmp(m.dir, m2.dir));
}

static void fuzz_probe_result(const uint8_t *body, size_t len, uint8_t *enc)
{
	struct proto_probe_result m, m2;
	struct proto_buf b;
	const uint8_t *body2;
	size_t len2;
	unsigned i;
	int r;

	r = proto_decode_probe_result(body, len, &m);
	CHECK(r == 0 || r == LR_EBADMSG);
	if (r)
		return;
	check_str(m.model, sizeof(m.model));
	check_str(m.governor, sizeof(m.governor));
	check_str(m.storage, sizeof(m.storage));
	check_str(m.cc, sizeof(m.cc));
	check_str(m.disk_error, sizeof(m.disk_error));
	CHECK(m.aes <= 1);
	CHECK(m.nrates <= PROTO_PROBE_MAX_RATES);
	for (i = 0; i < m.nrates; i++)
		CHECK(m.rates[i].cipher == 1 || m.rates[i].cipher == 2);
	CHECK(m.disk_bytes <= PROTO_PROBE_MAX_DISK);
	proto_buf_init(&b, enc, ENC_CAP);
	CHECK(proto_encode_probe_result(&b, &m) == 0);
	body2 = reparse(enc, &b, PROTO_PROBE_RESULT, &len2);
	CHECK(proto_decode_probe_result(body2, len2, &m2) == 0);
	CHECK(!strcmp(m.model, m2.model) && m.centicores == m2.centicores &&
	      !strcmp(m.governor, m2.governor) && m.aes == m2.aes &&
	      m.nrates == m2.nrates && !strcmp(m.storage, m2.storage) &&
	      !memcmp(m.sockbuf, m2.sockbuf, sizeof(m.sockbuf)) &&
	      !strcmp(m.cc, m2.cc) && m.disk_bytes == m2.disk_bytes &&
	      m.disk_usec == m2.disk_usec &&
	      !strcmp(m.disk_error, m2.disk_error));
	for (i = 0; i < m.nrates; i++)
		CHECK(m.rates[i].cipher == m2.rates[i].cipher &&
		      m.rates[i].seal == m2.rates[i].seal &&
		      m.rates[i].open == m2.rates[i].open);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *enc, *body;
	uint8_t sel;
	size_t len;

	if (size < 1)
		return 0;
	sel = data[0];
	len = size - 1;
	enc = malloc(ENC_CAP);
	body = malloc(len ? len : 1);
	CHECK(enc && body);
	if (len)
		memcpy(body, data + 1, len);
	if (sel == 0 || sel > 7)
		fuzz_request(body, len, enc);
	if (sel == 1 || sel > 7)
		fuzz_accept(body, len, enc);
	if (sel == 2 || sel > 7)
		fuzz_totals(body, len, enc);
	if (sel == 3 || sel > 7)
		fuzz_done(body, len, enc);
	if (sel == 4 || sel > 7)
		fuzz_batch(body, len, enc);
	if (sel == 5 || sel > 7)
		fuzz_chunk(body, len);
	if (sel == 6 || sel > 7)
		fuzz_probe_request(body, len, enc);
	if (sel == 7 || sel > 7)
		fuzz_probe_result(body, len, enc);
	CHECK(proto_type_name(sel) != NULL);
	free(body);
	free(enc);
	return 0;
}
