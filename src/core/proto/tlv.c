// SPDX-License-Identifier: MIT
/* The TLV reader: one loop that reads a message's body against the table
 * of its fields. */
#include <string.h>

#include "err.h"
#include "proto_int.h"
#include "banned.h"

int proto__tlv_next(const uint8_t *body, size_t len, size_t *off,
		    struct proto__tlv *t)
{
	size_t o = *off;

	if (o == len)
		return 0;
	if (len - o < 4)
		return LR_EBADMSG;
	t->tag = proto__rd16(body + o);
	t->len = proto__rd16(body + o + 2);
	if (len - o - 4 < t->len)
		return LR_EBADMSG;
	t->v = body + o + 4;
	*off = o + 4 + t->len;
	return 1;
}

int proto__get_str(const struct proto__tlv *t, char *out, size_t cap)
{
	uint16_t i;

	if ((size_t)t->len >= cap)
		return LR_EBADMSG;
	for (i = 0; i < t->len; i++)
		if (t->v[i] < 0x20 || t->v[i] > 0x7e)
			return LR_EBADMSG;
	memcpy(out, t->v, t->len);
	out[t->len] = '\0';
	return 0;
}

/* The width of a number kind, 0 for the others. */
static unsigned num_width(uint8_t kind)
{
	switch (kind) {
	case PROTO__U8: return 1;
	case PROTO__U16: return 2;
	case PROTO__U32: return 4;
	case PROTO__U64: return 8;
	default: return 0;
	}
}

/* A number of exactly its width, stored in the member of that width. */
static int read_num(const struct proto__field *f, const struct proto__tlv *t,
		    uint8_t *at)
{
	unsigned w = num_width(f->kind);
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	if (t->len != w)
		return LR_EBADMSG;
	switch (w) {
	case 1: *at = t->v[0]; break;
	case 2:
		v16 = proto__rd16(t->v);
		memcpy(at, &v16, 2);
		break;
	case 4:
		v32 = proto__rd32(t->v);
		memcpy(at, &v32, 4);
		break;
	default: v64 = proto__rd64(t->v); memcpy(at, &v64, 8);
	}
	return 0;
}

/* One field's value into the message. */
static int read_field(const struct proto__field *f, const struct proto__tlv *t,
		      void *msg)
{
	uint8_t *at = (uint8_t *)msg + f->off;

	switch (f->kind) {
	case PROTO__STR: return proto__get_str(t, (char *)at, f->len);
	case PROTO__BYTES:
		if (t->len != f->len)
			return LR_EBADMSG;
		memcpy(at, t->v, f->len);
		return 0;
	case PROTO__FN:
		if (f->len && t->len != f->len)
			return LR_EBADMSG;
		return f->fn(msg, t);
	default: return read_num(f, t, at);
	}
}

/* The field of tag among fields[0..n), or n. */
static unsigned field_of(const struct proto__field *fields, unsigned n,
			 uint16_t tag)
{
	unsigned i;

	for (i = 0; i < n && fields[i].tag != tag; i++)
		;
	return i;
}

static bool all_required(const struct proto__field *fields, unsigned n,
			 uint32_t seen)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if ((fields[i].flags & PROTO__REQUIRED) && !(seen & (1u << i)))
			return false;
	return true;
}

int proto__decode(const uint8_t *body, size_t len,
		  const struct proto__field *fields, unsigned n, void *msg)
{
	size_t off = 0;
	uint32_t seen = 0;
	struct proto__tlv t;
	unsigned i;
	int r;

	if (n > PROTO__MAX_FIELDS)
		return LR_EBADMSG;
	while ((r = proto__tlv_next(body, len, &off, &t)) == 1) {
		i = field_of(fields, n, t.tag);
		if (i == n) {
			if (t.tag & PROTO_TAG_CRITICAL)
				return LR_EBADMSG;
			continue;
		}
		if ((seen & (1u << i)) && !(fields[i].flags & PROTO__MANY))
			return LR_EBADMSG;
		seen |= 1u << i;
		if ((r = read_field(&fields[i], &t, msg)))
			return r;
	}
	if (r)
		return r;
	return all_required(fields, n, seen) ? 0 : LR_EBADMSG;
}
