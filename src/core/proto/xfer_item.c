// SPDX-License-Identifier: MIT
/* The transfer's batch items (XFER_FILES, XFER_PLAN, XFER_SUMS,
 * XFER_ACKS) and the header of a chunk record. */
#include <errno.h>
#include <string.h>

#include "err.h"
#include "proto_int.h"
#include "banned.h"

#define XE_ALL	    (PROTO_XE_SPARSE | PROTO_XE_LINKED)
#define LINK_TO_LEN 4u /* a hard link's target: the idx of its file */

void proto__wait_encode(uint8_t *out, const struct proto_xfer_wait *w)
{
	proto__be64(out, w->net_us);
	proto__be64(out + 8, w->write_us);
	proto__be64(out + 16, w->cipher_us);
}

void proto__wait_decode(const uint8_t *in, struct proto_xfer_wait *w)
{
	w->net_us = proto__rd64(in);
	w->write_us = proto__rd64(in + 8);
	w->cipher_us = proto__rd64(in + 16);
}

/* ---- writing ---- */

bool proto_xfer_batch_room(const struct proto_buf *b, size_t n)
{
	size_t end;

	if (b->err || n > PROTO_MAX_BODY || b->len > b->cap)
		return false;
	end = b->len + 4 + n;
	return end <= b->start + PROTO_HDR_LEN + PROTO_MAX_BODY &&
	       end <= b->cap;
}

static size_t target_len_of(const struct proto_xfer_entry *e)
{
	return e->kind == PROTO_XK_HARDLINK ? LINK_TO_LEN : e->target_len;
}

size_t proto_xfer_entry_size(const struct proto_xfer_entry *e)
{
	return 4 + PROTO_XFER_ENTRY_FIXED + (size_t)e->path_len +
	       target_len_of(e);
}

/* A TLV for a batch item: -ENOBUFS (sticky) past PROTO_MAX_BODY. */
uint8_t *proto__put_item(struct proto_buf *b, uint16_t tag, size_t n)
{
	if (!proto_xfer_batch_room(b, n)) {
		if (!b->err)
			b->err = -ENOBUFS;
		return NULL;
	}
	return proto__put_tlv(b, tag, n);
}

void proto_put_xfer_entry(struct proto_buf *b, const struct proto_xfer_entry *e)
{
	uint8_t *q =
		proto__put_item(b, PROTO_T_ENTRY, proto_xfer_entry_size(e) - 4);

	if (!q)
		return;
	proto__be32(q, e->idx);
	q[4] = e->kind;
	q[5] = e->eflags;
	proto__be16(q + 6, e->mode);
	proto__be64(q + 8, e->size);
	proto__be64(q + 16, (uint64_t)e->mtime_sec);
	proto__be32(q + 24, e->mtime_nsec);
	proto__be16(q + 28, e->path_len);
	proto__be16(q + 30, (uint16_t)target_len_of(e));
	q += PROTO_XFER_ENTRY_FIXED;
	if (e->path_len)
		memcpy(q, e->path, e->path_len);
	if (e->kind == PROTO_XK_HARDLINK)
		proto__be32(q + e->path_len, e->link_to);
	else if (e->target_len)
		memcpy(q + e->path_len, e->target, e->target_len);
}

void proto_put_xfer_plan(struct proto_buf *b, const struct proto_xfer_plan *p)
{
	uint8_t *q = proto__put_item(b, PROTO_T_PLAN, PROTO_XFER_PLAN_LEN);

	if (!q)
		return;
	proto__be32(q, p->idx);
	q[4] = p->action;
}

void proto_put_xfer_held(struct proto_buf *b, const struct proto_xfer_held *h)
{
	uint8_t *q = proto__put_item(b, PROTO_T_HELD, PROTO_XFER_HELD_LEN);

	if (!q)
		return;
	proto__be32(q, h->idx);
	proto__be32(q + 4, h->chunk);
	memcpy(q + 8, h->digest, PROTO_XFER_DIGEST_LEN);
}

void proto_put_xfer_sum(struct proto_buf *b, const struct proto_xfer_sum *s)
{
	uint8_t *q = proto__put_item(b, PROTO_T_SUM, PROTO_XFER_SUM_LEN);

	if (!q)
		return;
	proto__be32(q, s->idx);
	proto__be64(q + 4, s->size);
	proto__be32(q + 12, s->nchunks);
	proto__be32(q + 16, s->sent);
	memcpy(q + 20, s->digest, PROTO_XFER_DIGEST_LEN);
}

void proto_put_xfer_ack(struct proto_buf *b, const struct proto_xfer_ack *a)
{
	uint8_t *q = proto__put_item(b, PROTO_T_ACK, PROTO_XFER_ACK_LEN);

	if (!q)
		return;
	proto__be32(q, a->idx);
	proto__be32(q + 4, a->chunk);
	q[8] = a->status;
	proto__be32(q + 9, a->bytes);
}

void proto_put_xfer_fail(struct proto_buf *b, const struct proto_xfer_fail *f)
{
	size_t n = strnlen(f->text, PROTO_MAX_TEXT);
	uint8_t *q = proto__put_item(b, PROTO_T_FAIL, 8 + n);

	if (!q)
		return;
	proto__be32(q, f->idx);
	proto__be32(q + 4, f->code);
	memcpy(q + 8, f->text, n);
}

void proto_put_xfer_unread(struct proto_buf *b,
			   const struct proto_xfer_unread *u)
{
	size_t n = u->path_len;
	uint8_t *q;

	if (n > PROTO_XFER_MAX_PATH)
		n = PROTO_XFER_MAX_PATH;
	q = proto__put_item(b, PROTO_T_UNREAD, 4 + n);
	if (!q)
		return;
	proto__be32(q, u->code);
	memcpy(q + 4, u->path, n);
}

void proto_put_xfer_fdigest(struct proto_buf *b,
			    const struct proto_xfer_fdigest *d)
{
	uint8_t *q = proto__put_item(b, PROTO_T_FDIGEST, PROTO__FDIGEST_LEN);

	if (!q)
		return;
	proto__be32(q, d->idx);
	memcpy(q + 4, d->digest, sizeof(d->digest));
}

void proto_put_xfer_wait(struct proto_buf *b, const struct proto_xfer_wait *w)
{
	uint8_t *q = proto__put_item(b, PROTO_T_WAIT, PROTO__WAIT_LEN);

	if (q)
		proto__wait_encode(q, w);
}

/* ---- reading ---- */

void proto_xfer_iter_init(struct proto_xfer_iter *it, const uint8_t *body,
			  size_t len)
{
	memset(it, 0, sizeof(*it));
	it->body = body;
	it->len = len;
}

int proto_xfer_iter_next(struct proto_xfer_iter *it)
{
	struct proto__tlv t;
	int r;

	if (it->off > it->len)
		return LR_EBADMSG;
	r = proto__tlv_next(it->body, it->len, &it->off, &t);
	if (r == 1) {
		it->tag = t.tag;
		it->value = t.v;
		it->vlen = t.len;
	}
	return r;
}

/* The current item is tag with exactly vlen bytes. */
static bool item_is(const struct proto_xfer_iter *it, uint16_t tag, size_t vlen)
{
	return it->tag == tag && it->vlen == vlen && it->value;
}

/* The bounds of an entry (docs/PROTOCOL.md, the bounds table). */
static bool entry_ok(const struct proto_xfer_entry *x)
{
	if (x->kind < PROTO_XK_FILE || x->kind > PROTO_XK_BLOCKDEV)
		return false;
	if (x->eflags & ~(unsigned)XE_ALL)
		return false;
	/* only a file has names that link to it; a hard link has no flags */
	if (x->kind != PROTO_XK_FILE && (x->eflags & PROTO_XE_LINKED))
		return false;
	if (x->kind == PROTO_XK_HARDLINK && x->eflags)
		return false;
	if (x->mode > 07777 || x->mtime_nsec >= 1000000000u)
		return false;
	if (x->path_len < 1 || x->path_len > PROTO_XFER_MAX_PATH)
		return false;
	if (x->kind == PROTO_XK_SYMLINK) {
		if (x->target_len < 1 || x->target_len > PROTO_XFER_MAX_PATH)
			return false;
	} else if (x->kind == PROTO_XK_HARDLINK) {
		/* an earlier entry's idx */
		if (x->target_len != LINK_TO_LEN)
			return false;
	} else if (x->kind == PROTO_XK_CHARDEV ||
		   x->kind == PROTO_XK_BLOCKDEV) {
		/* major, minor */
		if (x->target_len != PROTO_XFER_DEV_LEN)
			return false;
	} else if (x->target_len) {
		return false;
	}
	/* only a file has a size; a pipe's is UNKNOWN until its SUM */
	return x->kind == PROTO_XK_FILE || !x->size;
}

int proto_xfer_get_entry(const struct proto_xfer_iter *it,
			 struct proto_xfer_entry *e)
{
	const uint8_t *v = it->value;
	struct proto_xfer_entry x;

	if (it->tag != PROTO_T_ENTRY || !v || it->vlen < PROTO_XFER_ENTRY_FIXED)
		return LR_EBADMSG;
	x.idx = proto__rd32(v);
	x.kind = v[4];
	x.eflags = v[5];
	x.mode = proto__rd16(v + 6);
	x.size = proto__rd64(v + 8);
	x.mtime_sec = (int64_t)proto__rd64(v + 16);
	x.mtime_nsec = proto__rd32(v + 24);
	x.path_len = proto__rd16(v + 28);
	x.target_len = proto__rd16(v + 30);
	if ((size_t)it->vlen !=
	    PROTO_XFER_ENTRY_FIXED + (size_t)x.path_len + x.target_len)
		return LR_EBADMSG;
	if (!entry_ok(&x))
		return LR_EBADMSG;
	x.path = (const char *)v + PROTO_XFER_ENTRY_FIXED;
	x.target = x.target_len ? x.path + x.path_len : NULL;
	x.link_to = 0;
	if (x.kind == PROTO_XK_HARDLINK) {
		x.link_to = proto__rd32((const uint8_t *)x.target);
		if (x.link_to >= x.idx)
			return LR_EBADMSG; /* a name of a file announced before */
		x.target = NULL;
		x.target_len = 0;
	}
	*e = x;
	return 0;
}

int proto_xfer_get_plan(const struct proto_xfer_iter *it,
			struct proto_xfer_plan *p)
{
	if (!item_is(it, PROTO_T_PLAN, PROTO_XFER_PLAN_LEN) ||
	    it->value[4] > PROTO_XA_REPLACE)
		return LR_EBADMSG;
	p->idx = proto__rd32(it->value);
	p->action = it->value[4];
	return 0;
}

int proto_xfer_get_held(const struct proto_xfer_iter *it,
			struct proto_xfer_held *h)
{
	if (!item_is(it, PROTO_T_HELD, PROTO_XFER_HELD_LEN))
		return LR_EBADMSG;
	h->idx = proto__rd32(it->value);
	h->chunk = proto__rd32(it->value + 4);
	memcpy(h->digest, it->value + 8, PROTO_XFER_DIGEST_LEN);
	return 0;
}

int proto_xfer_get_sum(const struct proto_xfer_iter *it,
		       struct proto_xfer_sum *s)
{
	const uint8_t *v = it->value;

	if (!item_is(it, PROTO_T_SUM, PROTO_XFER_SUM_LEN))
		return LR_EBADMSG;
	/* the final size is known by now; sent counts distinct chunks */
	if (proto__rd64(v + 4) == PROTO_XFER_SIZE_UNKNOWN ||
	    proto__rd32(v + 16) > proto__rd32(v + 12))
		return LR_EBADMSG;
	s->idx = proto__rd32(v);
	s->size = proto__rd64(v + 4);
	s->nchunks = proto__rd32(v + 12);
	s->sent = proto__rd32(v + 16);
	memcpy(s->digest, v + 20, PROTO_XFER_DIGEST_LEN);
	return 0;
}

int proto_xfer_get_ack(const struct proto_xfer_iter *it,
		       struct proto_xfer_ack *a)
{
	const uint8_t *v = it->value;
	uint32_t bytes;

	if (!item_is(it, PROTO_T_ACK, PROTO_XFER_ACK_LEN) ||
	    v[8] > PROTO_XS_FILE_AGAIN)
		return LR_EBADMSG;
	bytes = proto__rd32(v + 9);
	if (v[8] == PROTO_XS_CHUNK_OK &&
	    (bytes < 1 || bytes > PROTO_XFER_MAX_CHUNK))
		return LR_EBADMSG;
	a->idx = proto__rd32(v);
	a->chunk = proto__rd32(v + 4);
	a->status = v[8];
	a->bytes = bytes;
	return 0;
}

int proto_xfer_get_fail(const struct proto_xfer_iter *it,
			struct proto_xfer_fail *f)
{
	struct proto__tlv t;

	if (it->tag != PROTO_T_FAIL || !it->value || it->vlen < 8)
		return LR_EBADMSG;
	t.tag = it->tag;
	t.len = (uint16_t)(it->vlen - 8);
	t.v = it->value + 8;
	if (proto__get_str(&t, f->text, sizeof(f->text)))
		return LR_EBADMSG;
	f->idx = proto__rd32(it->value);
	f->code = proto__rd32(it->value + 4);
	return 0;
}

int proto_xfer_get_unread(const struct proto_xfer_iter *it,
			  struct proto_xfer_unread *u)
{
	const uint8_t *v = it->value;
	uint32_t code;

	if (it->tag != PROTO_T_UNREAD || !v || it->vlen < 5 ||
	    it->vlen > 4 + PROTO_XFER_MAX_PATH)
		return LR_EBADMSG;
	code = proto__rd32(v);
	if (code < 1 || code > 4095 || memchr(v + 4, 0, it->vlen - 4u))
		return LR_EBADMSG;
	u->code = code;
	u->path_len = (uint16_t)(it->vlen - 4u);
	u->path = (const char *)v + 4;
	return 0;
}

int proto_xfer_get_fdigest(const struct proto_xfer_iter *it,
			   struct proto_xfer_fdigest *d)
{
	if (!item_is(it, PROTO_T_FDIGEST, PROTO__FDIGEST_LEN))
		return LR_EBADMSG;
	d->idx = proto__rd32(it->value);
	memcpy(d->digest, it->value + 4, sizeof(d->digest));
	return 0;
}

bool proto_xfer_idname_ok(const char *s, size_t n)
{
	size_t i;

	if (n < 1 || n > PROTO_XFER_MAX_IDNAME)
		return false;
	for (i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
		      ch == '-' || ch == '@' || ch == '$'))
			return false;
	}
	return true;
}

void proto_put_xfer_owner(struct proto_buf *b, const struct proto_xfer_owner *o)
{
	size_t ul = strnlen(o->user, PROTO_XFER_MAX_IDNAME),
	       gl = strnlen(o->group, PROTO_XFER_MAX_IDNAME);
	uint8_t *q =
		proto__put_item(b, PROTO_T_OWNER, PROTO__OWNER_FIXED + ul + gl);

	if (!q)
		return;
	proto__be32(q, o->idx);
	proto__be32(q + 4, o->uid);
	proto__be32(q + 8, o->gid);
	q[12] = (uint8_t)ul;
	q[13] = (uint8_t)gl;
	memcpy(q + PROTO__OWNER_FIXED, o->user, ul);
	memcpy(q + PROTO__OWNER_FIXED + ul, o->group, gl);
}

int proto_xfer_get_owner(const struct proto_xfer_iter *it,
			 struct proto_xfer_owner *o)
{
	const uint8_t *v = it->value;
	size_t ul, gl;

	if (it->tag != PROTO_T_OWNER || !v || it->vlen < PROTO__OWNER_FIXED)
		return LR_EBADMSG;
	ul = v[12];
	gl = v[13];
	if (it->vlen != PROTO__OWNER_FIXED + ul + gl ||
	    (ul && !proto_xfer_idname_ok((const char *)v + 14, ul)) ||
	    (gl && !proto_xfer_idname_ok((const char *)v + 14 + ul, gl)))
		return LR_EBADMSG;
	o->idx = proto__rd32(v);
	o->uid = proto__rd32(v + 4);
	o->gid = proto__rd32(v + 8);
	memcpy(o->user, v + 14, ul);
	o->user[ul] = '\0';
	memcpy(o->group, v + 14 + ul, gl);
	o->group[gl] = '\0';
	return 0;
}

void proto_put_xfer_deleted(struct proto_buf *b,
			    const struct proto_xfer_deleted *d)
{
	size_t n = d->path_len;
	uint8_t *q;

	if (n > PROTO_XFER_MAX_PATH)
		n = PROTO_XFER_MAX_PATH;
	q = proto__put_item(b, PROTO_T_DELETED, 1 + n);
	if (!q)
		return;
	q[0] = d->kind;
	memcpy(q + 1, d->path, n);
}

int proto_xfer_get_deleted(const struct proto_xfer_iter *it,
			   struct proto_xfer_deleted *d)
{
	const uint8_t *v = it->value;

	if (it->tag != PROTO_T_DELETED || !v || it->vlen < 2 ||
	    it->vlen > 1 + PROTO_XFER_MAX_PATH || v[0] < 1 || v[0] > 4 ||
	    memchr(v + 1, 0, it->vlen - 1u))
		return LR_EBADMSG;
	d->kind = v[0];
	d->path_len = (uint16_t)(it->vlen - 1u);
	d->path = (const char *)v + 1;
	return 0;
}

void proto_put_xfer_kept(struct proto_buf *b, uint32_t idx, uint8_t how)
{
	uint8_t *q = proto__put_item(b, PROTO_T_KEPT, 5);

	if (!q)
		return;
	proto__be32(q, idx);
	q[4] = how;
}

int proto_xfer_get_kept(const struct proto_xfer_iter *it, uint32_t *idx,
			uint8_t *how)
{
	if (it->tag != PROTO_T_KEPT || !it->value || it->vlen != 5 ||
	    (it->value[4] != PROTO_KEPT_OWN &&
	     it->value[4] != PROTO_KEPT_LINKED))
		return LR_EBADMSG;
	*idx = proto__rd32(it->value);
	*how = it->value[4];
	return 0;
}

int proto_xfer_get_wait(const struct proto_xfer_iter *it,
			struct proto_xfer_wait *w)
{
	if (!item_is(it, PROTO_T_WAIT, PROTO__WAIT_LEN))
		return LR_EBADMSG;
	proto__wait_decode(it->value, w);
	return 0;
}

/* ---- the chunk record's header ---- */

void proto_xfer_chunk_encode(uint8_t *out, const struct proto_xfer_chunk_hdr *h)
{
	out[0] = h->kind;
	out[1] = 0;
	out[2] = 0;
	out[3] = 0;
	proto__be32(out + 4, h->idx);
	proto__be32(out + 8, h->chunk);
	proto__be32(out + 12, h->len);
	memcpy(out + 16, h->digest, PROTO_XFER_DIGEST_LEN);
}

int proto_xfer_chunk_decode(const uint8_t *in, struct proto_xfer_chunk_hdr *h)
{
	uint32_t n = proto__rd32(in + 12);

	if (in[0] != PROTO_XC_DATA && in[0] != PROTO_XC_ZERO)
		return LR_EBADMSG;
	if (in[1] || in[2] || in[3])
		return LR_EBADMSG;
	if (n < 1 || n > PROTO_XFER_MAX_CHUNK)
		return LR_EBADMSG;
	h->kind = in[0];
	h->idx = proto__rd32(in + 4);
	h->chunk = proto__rd32(in + 8);
	h->len = n;
	memcpy(h->digest, in + 16, PROTO_XFER_DIGEST_LEN);
	return 0;
}
