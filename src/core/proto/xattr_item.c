// SPDX-License-Identifier: MIT
/* The XATTRS and ACL items of XFER_FILES (-X, -A): docs/PROTOCOL.md
 * section 7.3. Every length is checked against the item's before use. */
#include <errno.h>
#include <string.h>

#include "err.h"
#include "proto_int.h"
#include "banned.h"

static const char *const xattr_spaces[] = { "user.", "trusted.", "security." };

bool proto_xfer_xattr_name_ok(const char *name, size_t n)
{
	size_t i;
	bool in_space = false;

	if (n < 1 || n > PROTO_XFER_MAX_XATTR_NAME)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 ||
		    (unsigned char)name[i] == 0x7f)
			return false;
	for (i = 0; i < sizeof(xattr_spaces) / sizeof(xattr_spaces[0]); i++) {
		size_t k = strlen(xattr_spaces[i]);

		if (n > k && !memcmp(name, xattr_spaces[i], k))
			in_space = true;
	}
	return in_space;
}

/* a before b in byte order, a shorter name before one it begins */
static int name_cmp(const struct proto_xattr *a, const struct proto_xattr *b)
{
	size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = memcmp(a->name, b->name, n);

	return c ? c : (int)a->name_len - (int)b->name_len;
}

size_t proto_xfer_xattrs_size(const struct proto_xfer_xattrs *a)
{
	size_t n = 4 + PROTO__XATTRS_FIXED;
	unsigned i;

	for (i = 0; i < a->n && i < PROTO_XFER_MAX_XATTRS; i++)
		n += PROTO__XATTR_EACH + a->v[i].name_len + a->v[i].value_len;
	return n;
}

void proto_put_xfer_xattrs(struct proto_buf *b,
			   const struct proto_xfer_xattrs *a)
{
	size_t len = proto_xfer_xattrs_size(a) - 4, at = PROTO__XATTRS_FIXED;
	uint8_t *q;
	unsigned i;

	if (a->n > PROTO_XFER_MAX_XATTRS || len > PROTO_XFER_MAX_XATTR_LEN ||
	    (a->flags & ~(PROTO_XAF_PARTIAL | PROTO_XAF_ACL_UNREAD))) {
		if (!b->err)
			b->err = -EMSGSIZE;
		return;
	}
	q = proto__put_item(b, PROTO_T_XATTRS, len);
	if (!q)
		return;
	proto__be32(q, a->idx);
	q[4] = a->flags;
	proto__be16(q + 5, a->n);
	for (i = 0; i < a->n; i++) {
		const struct proto_xattr *e = &a->v[i];

		q[at] = e->name_len;
		proto__be16(q + at + 1, e->value_len);
		at += PROTO__XATTR_EACH;
		memcpy(q + at, e->name, e->name_len);
		at += e->name_len;
		if (e->value_len)
			memcpy(q + at, e->value, e->value_len);
		at += e->value_len;
	}
}

int proto_xfer_get_xattrs(const struct proto_xfer_iter *it,
			  struct proto_xfer_xattrs *a)
{
	const uint8_t *v = it->value;
	size_t at = PROTO__XATTRS_FIXED, len = it->vlen;
	unsigned i;

	if (it->tag != PROTO_T_XATTRS || !v || len < PROTO__XATTRS_FIXED ||
	    len > PROTO_XFER_MAX_XATTR_LEN)
		return LR_EBADMSG;
	a->idx = proto__rd32(v);
	a->flags = v[4];
	a->n = proto__rd16(v + 5);
	if (a->n > PROTO_XFER_MAX_XATTRS ||
	    (a->flags & ~(PROTO_XAF_PARTIAL | PROTO_XAF_ACL_UNREAD)))
		return LR_EBADMSG;
	for (i = 0; i < a->n; i++) {
		struct proto_xattr *e = &a->v[i];

		if (len - at < PROTO__XATTR_EACH)
			return LR_EBADMSG;
		e->name_len = v[at];
		e->value_len = proto__rd16(v + at + 1);
		at += PROTO__XATTR_EACH;
		if (len - at < (size_t)e->name_len + e->value_len)
			return LR_EBADMSG;
		e->name = (const char *)v + at;
		e->value = v + at + e->name_len;
		at += (size_t)e->name_len + e->value_len;
		if (!proto_xfer_xattr_name_ok(e->name, e->name_len) ||
		    (i && name_cmp(&a->v[i - 1], e) >= 0))
			return LR_EBADMSG;
	}
	return at == len ? 0 : LR_EBADMSG;
}

/* ---- ACL ---- */

static bool acl_named(uint8_t tag)
{
	return tag == PROTO_ACL_USER || tag == PROTO_ACL_GROUP;
}

/* The entries' tags: known, in order, the single ones once, a mask when
 * a named entry needs one; perms, ids and names where they belong. */
bool proto_xfer_acl_ok(const struct proto_xfer_acl *a)
{
	unsigned i, seen = 0, named = 0;
	uint8_t prev = 0;

	if (a->which != PROTO_ACL_ACCESS && a->which != PROTO_ACL_DEFAULT)
		return false;
	if (a->n < 3 || a->n > PROTO_XFER_MAX_ACL)
		return false;
	for (i = 0; i < a->n; i++) {
		const struct proto_acl_entry *e = &a->e[i];

		switch (e->tag) {
		case PROTO_ACL_USER_OBJ:
		case PROTO_ACL_GROUP_OBJ:
		case PROTO_ACL_MASK:
		case PROTO_ACL_OTHER:
			if ((seen & e->tag) || e->id || e->name[0])
				return false;
			seen |= e->tag;
			break;
		case PROTO_ACL_USER:
		case PROTO_ACL_GROUP: named++; break;
		default: return false;
		}
		if (e->tag < prev || e->perm > 7)
			return false;
		prev = e->tag;
	}
	return (seen & PROTO_ACL_USER_OBJ) && (seen & PROTO_ACL_GROUP_OBJ) &&
	       (seen & PROTO_ACL_OTHER) && (!named || (seen & PROTO_ACL_MASK));
}

size_t proto_xfer_acl_size(const struct proto_xfer_acl *a)
{
	size_t n = 4 + PROTO__ACL_FIXED;
	unsigned i;

	for (i = 0; i < a->n && i < PROTO_XFER_MAX_ACL; i++)
		n += PROTO__ACL_EACH +
		     strnlen(a->e[i].name, PROTO_XFER_MAX_IDNAME);
	return n;
}

void proto_put_xfer_acl(struct proto_buf *b, const struct proto_xfer_acl *a)
{
	size_t at = PROTO__ACL_FIXED;
	uint8_t *q;
	unsigned i;

	if (!proto_xfer_acl_ok(a)) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	q = proto__put_item(b, PROTO_T_ACL, proto_xfer_acl_size(a) - 4);
	if (!q)
		return;
	proto__be32(q, a->idx);
	q[4] = a->which;
	proto__be16(q + 5, a->n);
	for (i = 0; i < a->n; i++) {
		const struct proto_acl_entry *e = &a->e[i];
		size_t nl = strnlen(e->name, PROTO_XFER_MAX_IDNAME);

		q[at] = e->tag;
		q[at + 1] = e->perm;
		proto__be32(q + at + 2, e->id);
		q[at + 6] = (uint8_t)nl;
		memcpy(q + at + PROTO__ACL_EACH, e->name, nl);
		at += PROTO__ACL_EACH + nl;
	}
}

int proto_xfer_get_acl(const struct proto_xfer_iter *it,
		       struct proto_xfer_acl *a)
{
	const uint8_t *v = it->value;
	size_t at = PROTO__ACL_FIXED, len = it->vlen;
	unsigned i;

	if (it->tag != PROTO_T_ACL || !v || len < PROTO__ACL_FIXED)
		return LR_EBADMSG;
	a->idx = proto__rd32(v);
	a->which = v[4];
	a->n = proto__rd16(v + 5);
	if (a->n > PROTO_XFER_MAX_ACL)
		return LR_EBADMSG;
	for (i = 0; i < a->n; i++) {
		struct proto_acl_entry *e = &a->e[i];
		size_t nl;

		if (len - at < PROTO__ACL_EACH)
			return LR_EBADMSG;
		e->tag = v[at];
		e->perm = v[at + 1];
		e->id = proto__rd32(v + at + 2);
		nl = v[at + 6];
		at += PROTO__ACL_EACH;
		if (len - at < nl ||
		    (nl && (!acl_named(e->tag) ||
			    !proto_xfer_idname_ok((const char *)v + at, nl))))
			return LR_EBADMSG;
		memcpy(e->name, v + at, nl);
		e->name[nl] = '\0';
		at += nl;
	}
	return at == len && proto_xfer_acl_ok(a) ? 0 : LR_EBADMSG;
}
