// SPDX-License-Identifier: MIT
/*
 * -X and -A at the sender (docs/PROTOCOL.md section 7.3, XATTRS and ACL
 * items): a file's or directory's attributes read on its descriptor, the
 * user., trusted. and security. names this end can see (system. ones
 * are the ACLs, sent apart with -A), sorted, without a name twice, the
 * first within the item's bounds; its ACLs as Linux keeps them
 * (system.posix_acl_access, and a directory's system.posix_acl_default),
 * checked as the receiver will check them, their ids with their names
 * here as OWNER items give them. What cannot be read is said, counted
 * once for the entry, and flagged in the item, so that the receiver
 * removes nothing of that kind from its copy: a read that failed is not
 * an attribute the source lacks.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "xfer_int.h"
#include "banned.h"

#define LIST_MAX     65536u /* Linux's XATTR_LIST_MAX */
#define ACL_V2	     2u	    /* the version of Linux's ACL xattr value */
#define ACL_BLOB_MAX (4u + 8u * PROTO_XFER_MAX_ACL)

static const char *const acl_names[2] = { "system.posix_acl_access",
					  "system.posix_acl_default" };

struct xattr_tx {
	struct proto_xfer_xattrs a;
	bool has_a, has_acl[2];
	struct proto_xfer_acl acl[2];
	char list[LIST_MAX];
	const char *names[LIST_MAX / 2]; /* into list, sorted */
	uint8_t values[PROTO_XFER_MAX_XATTR_LEN];
	uint8_t blob[ACL_BLOB_MAX];
};

static uint16_t rd_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* What of path's could not go, said here (the flags of its item tell the
 * receiver, which counts the entry once). */
static void left_out(struct xsess *x, const char *path, const char *what)
{
	char why[PROTO_MAX_TEXT], esc[ESC_MAX];

	snprintf(why, sizeof(why), "%s: not sent", what);
	xfer__lock(&x->lock);
	if (!x->res->xattrs_why[0])
		snprintf(x->res->xattrs_why, sizeof(x->res->xattrs_why),
			 "%s: %s",
			 fsio_escape(path, strlen(path), esc, sizeof(esc)),
			 why);
	xfer__path_event(x, path, true, why, 0);
	xfer__unlock(&x->lock);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of fd's attributes that may travel, sorted, none twice (a
 * file system may list one twice): how many, or -1 when the list could
 * not be read. */
static int list_names(struct xattr_tx *t, int fd)
{
	ssize_t len = flistxattr(fd, t->list, sizeof(t->list)), i = 0;
	unsigned n = 0, k, kept = 0;

	if (len < 0)
		return errno == ENOTSUP || errno == EOPNOTSUPP ? 0 : -1;
	while (i < len) {
		const char *name = t->list + i;
		size_t l = strnlen(name, (size_t)(len - i));

		if (proto_xfer_xattr_name_ok(name, l) && i + (ssize_t)l < len)
			t->names[n++] = name;
		i += (ssize_t)l + 1;
	}
	qsort(t->names, n, sizeof(t->names[0]), by_name);
	for (k = 0; k < n; k++)
		if (!kept || strcmp(t->names[kept - 1], t->names[k]))
			t->names[kept++] = t->names[k];
	return (int)kept;
}

static void read_attrs(struct xsess *x, struct xattr_tx *t, int fd,
		       const char *path)
{
	size_t room = PROTO_XFER_MAX_XATTR_LEN - PROTO__XATTRS_FIXED, used = 0;
	int n = list_names(t, fd), i;
	bool cut = n > (int)PROTO_XFER_MAX_XATTRS, unread = n < 0;

	for (i = 0; i < n && t->a.n < PROTO_XFER_MAX_XATTRS; i++) {
		size_t nl = strlen(t->names[i]), cap;
		ssize_t vl;

		if (room < PROTO__XATTR_EACH + nl) {
			cut = true;
			break;
		}
		cap = room - PROTO__XATTR_EACH - nl;
		if (cap > UINT16_MAX)
			cap = UINT16_MAX;
		/* a size of 0 asks for the value's length: no room is no
		 * room, not a question */
		vl = cap ? fgetxattr(fd, t->names[i], t->values + used, cap)
			 : (errno = ERANGE, -1);
		if (vl < 0 && errno == ENODATA)
			continue; /* gone since the list: as if never there */
		if (vl < 0 || (size_t)vl > cap) {
			cut |= vl >= 0 || errno == ERANGE || errno == E2BIG;
			unread |= vl < 0 && errno != ERANGE && errno != E2BIG;
			continue;
		}
		t->a.v[t->a.n++] = (struct proto_xattr){
			.name = t->names[i],
			.name_len = (uint8_t)nl,
			.value = t->values + used,
			.value_len = (uint16_t)vl,
		};
		used += (size_t)vl;
		room -= PROTO__XATTR_EACH + nl + (size_t)vl;
	}
	if (cut || unread)
		t->a.flags |= PROTO_XAF_PARTIAL;
	if (cut)
		left_out(x, path,
			 "extended attributes past 128 or 32 KiB in all");
	if (unread)
		left_out(x, path, "extended attributes that could not be read");
}

/* Linux's ACL value blob (n bytes) into a: false when it is not one the
 * wire can carry. */
static bool acl_of_blob(struct xsess *x, const uint8_t *blob, size_t n,
			struct proto_xfer_acl *a)
{
	bool numeric = x->o->flags & XFER_F_NUMERIC_IDS;
	size_t i;

	if (n < 4 || (n - 4) % 8 || rd_le32(blob) != ACL_V2 ||
	    (n - 4) / 8 > PROTO_XFER_MAX_ACL)
		return false;
	a->n = (uint16_t)((n - 4) / 8);
	for (i = 0; i < a->n; i++) {
		const uint8_t *p = blob + 4 + 8 * i;
		struct proto_acl_entry *e = &a->e[i];

		if (rd_le16(p) > 0xff || rd_le16(p + 2) > 7)
			return false;
		e->tag = (uint8_t)rd_le16(p);
		e->perm = (uint8_t)rd_le16(p + 2);
		e->name[0] = '\0';
		e->id = 0;
		if (e->tag == PROTO_ACL_USER || e->tag == PROTO_ACL_GROUP) {
			e->id = rd_le32(p + 4);
			if (!numeric)
				xfer__owner_name(x, e->id,
						 e->tag == PROTO_ACL_GROUP,
						 e->name);
		}
	}
	/* the kernel keeps what a file system gave it: checked here as the
	 * receiver checks it, so that one odd ACL cannot end the session */
	return proto_xfer_acl_ok(a);
}

static void read_acl(struct xsess *x, struct xattr_tx *t, int fd, int which,
		     const char *path)
{
	ssize_t n = fgetxattr(fd, acl_names[which], t->blob, sizeof(t->blob));
	struct proto_xfer_acl *a = &t->acl[which];

	if (n < 0 &&
	    (errno == ENODATA || errno == ENOTSUP || errno == EOPNOTSUPP))
		return; /* none: the mode says it all */
	a->which = (uint8_t)(which + 1);
	if (n < 0 || !acl_of_blob(x, t->blob, (size_t)n, a)) {
		t->a.flags |= PROTO_XAF_ACL_UNREAD;
		left_out(x, path,
			 n < 0 && errno == ERANGE ? "an ACL of more than 256 "
						    "entries"
			 : n < 0		  ? "an ACL that could not be "
						    "read"
						  : "an ACL of a form this end "
						    "cannot send");
		return;
	}
	/* the three entries the mode has already: nothing more to say */
	if (which == 0 && a->n == 3)
		return;
	t->has_acl[which] = true;
}

/* The descriptor to read an entry's attributes on: a file's own, a
 * directory's that the walk opened to list it (-1: not opened). */
static int attr_fd(const struct walker *w, const struct wentry *e, uint8_t kind)
{
	if (kind == PROTO_XK_FILE)
		return e->fd;
	if (kind == PROTO_XK_DIR && !e->read_err && w->depth > 0)
		return dirfd(w->st[w->depth - 1].d);
	return -1;
}

int xfer__xattr_read(struct xsess *x, const struct walker *w,
		     const struct wentry *e, uint8_t kind, uint32_t idx,
		     const char *path)
{
	uint32_t flags = x->o->flags;
	struct xattr_tx *t = x->xat_tx;
	int fd = attr_fd(w, e, kind);

	if (!t)
		t = x->xat_tx = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->has_a = t->has_acl[0] = t->has_acl[1] = false;
	t->a.n = 0;
	t->a.flags = 0;
	t->a.idx = t->acl[0].idx = t->acl[1].idx = idx;
	if ((kind != PROTO_XK_FILE && kind != PROTO_XK_DIR) || e->is_stdin)
		return 0; /* none of their own */
	if (fd < 0) {
		/* a directory that could not be opened: nothing of it is
		 * known, so nothing of the copy there is to go */
		t->a.flags = ((flags & XFER_F_XATTRS) ? PROTO_XAF_PARTIAL : 0) |
			     ((flags & XFER_F_ACLS) ? PROTO_XAF_ACL_UNREAD : 0);
		t->has_a = kind == PROTO_XK_DIR;
		return 0;
	}
	if (flags & XFER_F_XATTRS)
		read_attrs(x, t, fd, path);
	if (flags & XFER_F_ACLS)
		read_acl(x, t, fd, 0, path);
	if ((flags & XFER_F_ACLS) && kind == PROTO_XK_DIR)
		read_acl(x, t, fd, 1, path);
	t->has_a = t->a.n > 0 || t->a.flags;
	return 0;
}

size_t xfer__xattr_size(const struct xsess *x)
{
	const struct xattr_tx *t = x->xat_tx;

	if (!t)
		return 0;
	return (t->has_a ? proto_xfer_xattrs_size(&t->a) : 0) +
	       (t->has_acl[0] ? proto_xfer_acl_size(&t->acl[0]) : 0) +
	       (t->has_acl[1] ? proto_xfer_acl_size(&t->acl[1]) : 0);
}

void xfer__xattr_put(struct xsess *x, struct proto_buf *b)
{
	const struct xattr_tx *t = x->xat_tx;
	int i;

	if (!t)
		return;
	if (t->has_a)
		proto_put_xfer_xattrs(b, &t->a);
	for (i = 0; i < 2; i++)
		if (t->has_acl[i])
			proto_put_xfer_acl(b, &t->acl[i]);
}

/* The session's end: both sides' state (the receiver's next items too) */
void xfer__xattr_fini(struct xsess *x)
{
	xfer__xgive_free(x->xat_next);
	x->xat_next = NULL;
	free(x->xat_tx);
	x->xat_tx = NULL;
}
