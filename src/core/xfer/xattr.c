// SPDX-License-Identifier: MIT
/*
 * -X extended attributes and -A POSIX ACLs, kept as rsync -X and -A keep
 * them (docs/PROTOCOL.md section 7.3, XATTRS and ACL items).
 *
 * The sender reads a file's or directory's attributes on its descriptor:
 * the user., trusted. and security. names it can see (system. ones are
 * the ACLs, sent apart with -A), in byte order, within the item's bounds.
 * It reads the ACLs as Linux keeps them (system.posix_acl_access and,
 * for a directory, system.posix_acl_default) and sends their entries with
 * the names of their ids, as OWNER items do.
 *
 * The receiver keeps the names it may set (user.; as root trusted. and
 * security., security.capability only with the setid consent), maps the
 * ACL names to its own ids, and gives them on the descriptor: a file's
 * before it is named, after its owner and before its mode (a chown
 * clears file capabilities; a chmod after the ACL keeps the mode sent).
 * What the source has not is removed: user. names (and trusted. as
 * root) and the ACLs. security. names are only ever set.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "xfer_int.h"
#include "banned.h"

#define LIST_MAX     65536u /* Linux's XATTR_LIST_MAX */
#define ACL_V2	     2u	    /* the version of Linux's ACL xattr value */
#define ACL_UNDEF    0xffffffffu
#define ACL_BLOB_MAX (4u + 8u * PROTO_XFER_MAX_ACL)

static const char *const acl_names[2] = { "system.posix_acl_access",
					  "system.posix_acl_default" };

/* What the receiver gives an entry, from its items: the names it keeps,
 * the ACLs as Linux's xattr values with this machine's ids. */
struct xgive_attr {
	char *name; /* into the same allocation */
	const uint8_t *value;
	uint16_t len;
};
struct xgive {
	uint32_t idx;
	bool attrs_came; /* an XATTRS item came (at most one) */
	unsigned n;
	struct xgive_attr *v;
	uint8_t *acl[2]; /* access, default: NULL when none came */
	uint32_t acl_len[2];
	char *why; /* a name or ACL not kept, in words (NULL: none) */
	/* a file's: what giving them failed with (-errno) and why, said
	 * when it is named */
	int err;
	char *err_why;
};

struct xattr_tx {
	struct proto_xfer_xattrs a;
	bool has_a, has_acl[2];
	struct proto_xfer_acl acl[2];
	char list[LIST_MAX];
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

static void wr_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void wr_le32(uint8_t *p, uint32_t v)
{
	wr_le16(p, (uint16_t)v);
	wr_le16(p + 2, (uint16_t)(v >> 16));
}

/* ---- the sender ---- */

static void left_out(struct xsess *x, const char *path, const char *what)
{
	char why[PROTO_MAX_TEXT];

	snprintf(why, sizeof(why), "%s: not sent", what);
	xfer__lock(&x->lock);
	x->res->xattrs_failed++;
	if (!x->res->xattrs_why[0])
		snprintf(x->res->xattrs_why, sizeof(x->res->xattrs_why),
			 "%s: %s", path, why);
	xfer__path_event(x, path, true, why, 0);
	xfer__unlock(&x->lock);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of fd's attributes that may travel, sorted, into v (at most
 * PROTO_XFER_MAX_XATTRS + 1, to tell that there are more): how many. */
static unsigned list_names(struct xattr_tx *t, int fd, const char **v)
{
	ssize_t len = flistxattr(fd, t->list, sizeof(t->list));
	unsigned n = 0;
	ssize_t i = 0;

	while (len > 0 && i < len && n <= PROTO_XFER_MAX_XATTRS) {
		const char *name = t->list + i;
		size_t k = strnlen(name, (size_t)(len - i));

		if (proto_xfer_xattr_name_ok(name, k))
			v[n++] = name;
		i += (ssize_t)k + 1;
	}
	qsort(v, n, sizeof(*v), by_name);
	return n;
}

static void read_attrs(struct xsess *x, struct xattr_tx *t, int fd,
		       const char *path)
{
	const char *names[PROTO_XFER_MAX_XATTRS + 1];
	size_t room = PROTO_XFER_MAX_XATTR_LEN - PROTO__XATTRS_FIXED, used = 0;
	unsigned n = list_names(t, fd, names), i;
	bool cut = n > PROTO_XFER_MAX_XATTRS;

	for (i = 0; i < n && t->a.n < PROTO_XFER_MAX_XATTRS; i++) {
		size_t nl = strlen(names[i]), cap;
		ssize_t vl;

		if (room < PROTO__XATTR_EACH + nl) {
			cut = true;
			break;
		}
		cap = room - PROTO__XATTR_EACH - nl;
		vl = fgetxattr(fd, names[i], t->values + used,
			       cap < UINT16_MAX ? cap : UINT16_MAX);
		if (vl < 0) {
			cut |= errno == ERANGE || errno == E2BIG;
			continue; /* gone since the list: as if never there */
		}
		t->a.v[t->a.n++] = (struct proto_xattr){
			.name = names[i],
			.name_len = (uint8_t)nl,
			.value = t->values + used,
			.value_len = (uint16_t)vl,
		};
		used += (size_t)vl;
		room -= PROTO__XATTR_EACH + nl + (size_t)vl;
	}
	t->has_a = t->a.n > 0;
	if (cut)
		left_out(x, path,
			 "extended attributes past 128 or 32 KiB in all");
}

/* Linux's ACL value blob (n bytes) into a: false when it is not one
 * this end can send. */
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

		e->tag = (uint8_t)rd_le16(p);
		e->perm = (uint8_t)(rd_le16(p + 2) & 7);
		e->name[0] = '\0';
		e->id = 0;
		if (rd_le16(p) > 0xff)
			return false;
		if (e->tag == PROTO_ACL_USER || e->tag == PROTO_ACL_GROUP) {
			e->id = rd_le32(p + 4);
			if (!numeric)
				xfer__owner_name(x, e->id,
						 e->tag == PROTO_ACL_GROUP,
						 e->name);
		}
	}
	return true;
}

static void read_acl(struct xsess *x, struct xattr_tx *t, int fd, int which,
		     const char *path)
{
	ssize_t n = fgetxattr(fd, acl_names[which], t->blob, sizeof(t->blob));
	struct proto_xfer_acl *a = &t->acl[which];

	if (n < 0 && errno != ENODATA && errno != EOPNOTSUPP &&
	    errno != ENOTSUP)
		left_out(x, path,
			 errno == ERANGE ? "an ACL of more than 256 "
					   "entries"
					 : "an ACL that could not be "
					   "read");
	if (n < 0)
		return;
	a->which = (uint8_t)(which + 1);
	if (!acl_of_blob(x, t->blob, (size_t)n, a)) {
		left_out(x, path, "an ACL of a form this end does not know");
		return;
	}
	/* the three entries the mode has already: nothing more to say */
	if (which == 0 && a->n == 3)
		return;
	t->has_acl[which] = true;
}

void xfer__xattr_read(struct xsess *x, int fd, uint8_t kind, uint32_t idx,
		      const char *path)
{
	uint32_t flags = x->o->flags;
	struct xattr_tx *t = x->xat_tx;

	if (!t && (flags & (XFER_F_XATTRS | XFER_F_ACLS)))
		t = x->xat_tx = malloc(sizeof(*t));
	if (!t)
		return;
	t->has_a = t->has_acl[0] = t->has_acl[1] = false;
	t->a.n = 0;
	t->a.idx = t->acl[0].idx = t->acl[1].idx = idx;
	if (fd < 0 || (kind != PROTO_XK_FILE && kind != PROTO_XK_DIR))
		return;
	if (flags & XFER_F_XATTRS)
		read_attrs(x, t, fd, path);
	if (flags & XFER_F_ACLS)
		read_acl(x, t, fd, 0, path);
	if ((flags & XFER_F_ACLS) && kind == PROTO_XK_DIR)
		read_acl(x, t, fd, 1, path);
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

/* ---- the receiver ---- */

void xfer__xgive_free(struct xgive *g)
{
	if (!g)
		return;
	free(g->v);
	free(g->acl[0]);
	free(g->acl[1]);
	free(g->why);
	free(g->err_why);
	free(g);
}

void xfer__xattr_fini(struct xsess *x)
{
	xfer__xgive_free(x->xat_next);
	x->xat_next = NULL;
	free(x->xat_tx);
	x->xat_tx = NULL;
}

static bool prefixed(const char *s, size_t n, const char *p)
{
	size_t k = strlen(p);

	return n > k && !memcmp(s, p, k);
}

/* Whether this receiver sets name (n bytes), and if not, why (NULL:
 * left out without a word, as rsync leaves trusted. and security. names
 * to a receiver that is not root). */
static bool may_set(const struct xsess *x, const char *name, size_t n,
		    const char **why)
{
	*why = NULL;
	if (prefixed(name, n, "user."))
		return true;
	if (geteuid() != 0)
		return false;
	if (n == strlen("security.capability") &&
	    !memcmp(name, "security.capability", n) &&
	    !(x->o->flags & XFER_F_KEEP_SETID)) {
		*why = "its file capabilities (security.capability) need the "
		       "setid consent (--keep-setid)";
		return false;
	}
	return true;
}

static void note_why(struct xgive *g, const char *why)
{
	if (why && !g->why)
		g->why = strdup(why);
}

/* The entry's record, made at its first item. */
static struct xgive *next_of(struct xsess *x, uint32_t idx)
{
	struct xgive *g = x->xat_next;

	if (g)
		return g->idx == idx ? g : NULL;
	g = calloc(1, sizeof(*g));
	if (g) {
		g->idx = idx;
		x->xat_next = g;
	}
	return g;
}

static const char *note_attrs(struct xsess *x,
			      const struct proto_xfer_xattrs *a)
{
	struct xgive *g = next_of(x, a->idx);
	size_t bytes = 0;
	char *data;
	unsigned i;

	if (!g || g->attrs_came)
		return "extended attributes out of place (one item, for the "
		       "entry that follows it)";
	g->attrs_came = true;
	for (i = 0; i < a->n; i++)
		bytes += a->v[i].name_len + 1u + a->v[i].value_len;
	g->v = malloc(a->n * sizeof(*g->v) + bytes + 1);
	if (!g->v)
		return "no memory for extended attributes";
	data = (char *)(g->v + a->n);
	for (i = 0; i < a->n; i++) {
		const struct proto_xattr *e = &a->v[i];
		const char *why;

		if (!may_set(x, e->name, e->name_len, &why)) {
			note_why(g, why);
			continue;
		}
		memcpy(data, e->name, e->name_len);
		data[e->name_len] = '\0';
		g->v[g->n].name = data;
		data += e->name_len + 1;
		if (e->value_len)
			memcpy(data, e->value, e->value_len);
		g->v[g->n].value = (const uint8_t *)data;
		g->v[g->n++].len = e->value_len;
		data += e->value_len;
	}
	return NULL;
}

static int by_tag_id(const void *a, const void *b)
{
	const struct proto_acl_entry *p = a, *q = b;

	if (p->tag != q->tag)
		return p->tag < q->tag ? -1 : 1;
	return p->id < q->id ? -1 : p->id > q->id;
}

static const char *note_acl(struct xsess *x, struct proto_xfer_acl *a)
{
	bool numeric = x->o->flags & XFER_F_NUMERIC_IDS;
	struct xgive *g = next_of(x, a->idx);
	int w = a->which - 1;
	unsigned i;
	uint8_t *blob;

	if (!g || g->acl[w])
		return "an ACL out of place (one of each kind, for the entry "
		       "that follows it)";
	for (i = 0; i < a->n; i++) {
		struct proto_acl_entry *e = &a->e[i];

		if (e->tag == PROTO_ACL_USER || e->tag == PROTO_ACL_GROUP)
			e->id = numeric ? e->id
					: xfer__owner_id(
						  x, e->name, e->id,
						  e->tag == PROTO_ACL_GROUP);
		else
			e->id = ACL_UNDEF;
	}
	/* the kernel's order: by tag, then id; two names of one id here
	 * cannot both be given */
	qsort(a->e, a->n, sizeof(a->e[0]), by_tag_id);
	for (i = 1; i < a->n; i++)
		if (a->e[i].tag == a->e[i - 1].tag &&
		    a->e[i].id == a->e[i - 1].id) {
			note_why(g, "two entries of its ACL name one id here: "
				    "the ACL is not given");
			return NULL;
		}
	blob = malloc(4 + 8u * a->n);
	if (!blob)
		return "no memory for an ACL";
	wr_le32(blob, ACL_V2);
	for (i = 0; i < a->n; i++) {
		wr_le16(blob + 4 + 8 * i, a->e[i].tag);
		wr_le16(blob + 6 + 8 * i, a->e[i].perm);
		wr_le32(blob + 8 + 8 * i, a->e[i].id);
	}
	g->acl[w] = blob;
	g->acl_len[w] = 4 + 8u * a->n;
	return NULL;
}

const char *xfer__xattr_note(struct xsess *x, const struct proto_xfer_iter *it)
{
	uint32_t flags = x->o->flags;
	const char *why;

	if (it->tag == PROTO_T_XATTRS) {
		struct proto_xfer_xattrs *a;

		if (!(flags & XFER_F_XATTRS))
			return "extended attributes out of place (only with -X)";
		a = malloc(sizeof(*a));
		if (!a)
			return "no memory for extended attributes";
		why = proto_xfer_get_xattrs(it, a)
			      ? "malformed extended attributes (names in user., "
				"trusted. or security., in order, 32 KiB in all)"
			      : note_attrs(x, a);
		free(a);
		return why;
	} else {
		struct proto_xfer_acl *a;

		if (!(flags & XFER_F_ACLS))
			return "an ACL out of place (only with -A)";
		a = malloc(sizeof(*a));
		if (!a)
			return "no memory for an ACL";
		why = proto_xfer_get_acl(it, a) ? "a malformed ACL"
						: note_acl(x, a);
		free(a);
		return why;
	}
}

const char *xfer__xattr_check(const struct xsess *x,
			      const struct proto_xfer_entry *e)
{
	const struct xgive *g = x->xat_next;

	if (!g)
		return NULL;
	if (g->idx != e->idx)
		return "extended attributes or an ACL for another entry than "
		       "the one that follows them";
	if (e->kind != PROTO_XK_FILE && e->kind != PROTO_XK_DIR)
		return "extended attributes or an ACL for an entry that is "
		       "not a file or directory";
	if (g->acl[1] && e->kind != PROTO_XK_DIR)
		return "a default ACL for an entry that is not a directory";
	return NULL;
}

struct xgive *xfer__xattr_take(struct xsess *x, uint32_t idx)
{
	struct xgive *g = x->xat_next;

	if (!g || g->idx != idx)
		return NULL;
	x->xat_next = NULL;
	return g;
}

/* A name there that the source may have had and has not: removed. */
static bool managed(const char *name)
{
	return prefixed(name, strlen(name), "user.") ||
	       (geteuid() == 0 && prefixed(name, strlen(name), "trusted."));
}

static bool in_give(const struct xgive *g, const char *name)
{
	unsigned i;

	for (i = 0; g && i < g->n; i++)
		if (!strcmp(g->v[i].name, name))
			return true;
	return false;
}

static int give_fail(int e, const char *what, const char *name, char *why,
		     size_t cap)
{
	if (e == -ENOTSUP || e == -EOPNOTSUPP)
		snprintf(why, cap,
			 "the destination's file system does not hold %s",
			 what);
	else if (e == -E2BIG || e == -ENOSPC || e == -ERANGE)
		snprintf(why, cap,
			 "%s too large for the destination's file system",
			 name);
	else
		snprintf(why, cap, "%s could not be given: %s", name,
			 lr_strerror(e));
	return e;
}

static int remove_extra(int fd, const struct xgive *g, char *why, size_t cap)
{
	char *list = malloc(LIST_MAX);
	ssize_t len, i = 0;
	int r = 0;

	if (!list)
		return -ENOMEM;
	len = flistxattr(fd, list, LIST_MAX);
	while (len > 0 && i < len) {
		const char *name = list + i;

		i += (ssize_t)strnlen(name, (size_t)(len - i)) + 1;
		if (!managed(name) || in_give(g, name))
			continue;
		if (fremovexattr(fd, name) && errno != ENODATA && !r)
			r = give_fail(-errno, "extended attributes", name, why,
				      cap);
	}
	free(list);
	return r;
}

static int give_attrs(int fd, const struct xgive *g, char *why, size_t cap)
{
	int r = remove_extra(fd, g, why, cap);
	unsigned i;

	for (i = 0; g && i < g->n; i++)
		if (fsetxattr(fd, g->v[i].name, g->v[i].value, g->v[i].len,
			      0) &&
		    !r)
			r = give_fail(-errno, "extended attributes",
				      g->v[i].name, why, cap);
	return r;
}

static int give_acls(int fd, const struct xgive *g, bool dir, char *why,
		     size_t cap)
{
	int w, r = 0;

	for (w = 0; w < (dir ? 2 : 1); w++) {
		if (g && g->acl[w]) {
			if (fsetxattr(fd, acl_names[w], g->acl[w],
				      g->acl_len[w], 0) &&
			    !r)
				r = give_fail(-errno, "ACLs",
					      w ? "its default ACL" : "its ACL",
					      why, cap);
		} else if (fremovexattr(fd, acl_names[w]) && errno != ENODATA &&
			   errno != ENOTSUP && errno != EOPNOTSUPP && !r) {
			r = give_fail(-errno, "ACLs",
				      w ? "its default ACL" : "its ACL", why,
				      cap);
		}
	}
	return r;
}

/* Give fd (a file, or with dir a directory) what g says, and remove what
 * the source has not: attrs and/or acls. 0, or the first -errno with its
 * reason in words into why. */
static int give(struct xsess *x, int fd, const struct xgive *g, bool dir,
		bool attrs, bool acls, char *why, size_t cap)
{
	uint32_t flags = x->o->flags;
	int r = 0, e;

	why[0] = '\0';
	if (attrs && (flags & XFER_F_XATTRS))
		r = give_attrs(fd, g, why, cap);
	if (acls && (flags & XFER_F_ACLS)) {
		char w2[PROTO_MAX_TEXT];

		e = give_acls(fd, g, dir, r ? w2 : why, r ? sizeof(w2) : cap);
		r = r ?: e;
	}
	return r;
}

/* What could not be given to path (e: -errno, or 0 for a name left out):
 * counted, said (the destination's lack of them once). Under lock. */
static void said(struct xsess *x, const char *path, int e, const char *why)
{
	char line[PROTO_MAX_TEXT];

	x->res->xattrs_failed++;
	if (!x->res->xattrs_why[0])
		snprintf(x->res->xattrs_why, sizeof(x->res->xattrs_why),
			 "%s: %s", path, why);
	if (e == -ENOTSUP || e == -EOPNOTSUPP) {
		if (x->xat_unsaid)
			return;
		x->xat_unsaid = true;
	}
	snprintf(line, sizeof(line), "kept without all its attributes: %s",
		 why);
	xfer__path_event(x, path, true, line, 0);
}

void xfer__xattr_file(struct xsess *x, struct xfile *f)
{
	char why[PROTO_MAX_TEXT];
	int e;

	if (!(x->o->flags & (XFER_F_XATTRS | XFER_F_ACLS)))
		return;
	e = give(x, f->fd, f->rx.xg, false, true, true, why, sizeof(why));
	if (!e)
		return;
	if (!f->rx.xg && (f->rx.xg = calloc(1, sizeof(*f->rx.xg))))
		f->rx.xg->idx = f->idx;
	if (f->rx.xg && !f->rx.xg->err_why) {
		f->rx.xg->err = e;
		f->rx.xg->err_why = strdup(why);
	}
}

void xfer__xattr_named(struct xsess *x, struct xfile *f)
{
	const struct xgive *g = f->rx.xg;

	if (g && (g->err_why || g->why))
		said(x, xfer__path(f), g->err_why ? g->err : 0,
		     g->err_why ? g->err_why : g->why);
}

void xfer__xattr_done(const struct xsess *x, struct proto_xfer_done *d)
{
	const char *s = x->res->xattrs_why;
	size_t i;

	d->xattrs_failed = x->res->xattrs_failed;
	/* printable ASCII: another byte of a path or name as '?' */
	for (i = 0; s[i] && i + 1 < sizeof(d->xattrs_why); i++)
		d->xattrs_why[i] = (s[i] >= 0x20 && s[i] <= 0x7e) ? s[i] : '?';
	d->xattrs_why[i] = '\0';
}

void xfer__xattr_dir(struct xsess *x, int dfd, uint32_t idx, const char *path)
{
	const struct xgive *g = x->xat_next;
	char why[PROTO_MAX_TEXT];
	int r;

	if (g && g->idx != idx)
		g = NULL;
	r = give(x, dfd, g, true, true, false, why, sizeof(why));
	if (!r && !(g && g->why))
		return;
	xfer__lock(&x->lock);
	said(x, path, r, r ? why : g->why);
	xfer__unlock(&x->lock);
}

void xfer__xattr_dir_acls(struct xsess *x, int dfd, const struct late *l)
{
	char why[PROTO_MAX_TEXT];
	int e = give(x, dfd, l->xg, true, false, true, why, sizeof(why));

	if (!e)
		return;
	xfer__lock(&x->lock);
	said(x, l->path, e, why);
	xfer__unlock(&x->lock);
}

void xfer__xattr_fix(struct xsess *x, struct xfile *f)
{
	const struct xfile_rx *r = &f->rx;
	mode_t keep = (x->o->flags & XFER_F_KEEP_SETID) ? 07777 : 01777;
	char why[PROTO_MAX_TEXT];
	struct stat st;
	int fd, e;

	if (!(x->o->flags & (XFER_F_XATTRS | XFER_F_ACLS)) || !r->have_st ||
	    r->kept_newer || (x->o->flags & XFER_F_DRY_RUN))
		return;
	/* another name of the inode may be outside the destination */
	if (r->st_nlink != 1)
		return;
	fd = openat(r->dirfd, r->name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
	    st.st_dev == r->st_dev && st.st_ino == r->st_ino) {
		e = give(x, fd, r->xg, false, true, true, why, sizeof(why));
		/* an ACL given or removed changed the mode: the entry's */
		if (x->o->flags & XFER_F_ACLS)
			(void)fchmod(fd, f->mode & keep);
		if (e || (r->xg && r->xg->why))
			said(x, xfer__path(f), e, e ? why : r->xg->why);
	}
	close(fd);
}
