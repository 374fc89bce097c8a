// SPDX-License-Identifier: MIT
/*
 * -X extended attributes and -A POSIX ACLs at the receiver, kept as
 * rsync -X and -A keep them (docs/PROTOCOL.md section 7.3, XATTRS and
 * ACL items; the sender's part is xattr_read.c).
 *
 * It keeps the names it may set: user. names; trusted. and security.
 * names (which carry privilege, as setuid bits do: file capabilities,
 * security labels, overlay redirects) only when it runs as root and has
 * the setid consent. It maps the ACL names to its own ids, and gives
 * them on the descriptor: a file's before it is named, after its owner
 * and before its mode (a chown clears file capabilities; the chmod after
 * the ACL keeps the mode sent); a directory's attributes when it is
 * announced, its ACLs at the end with its mode. What the source has not
 * is removed: user. names and the ACLs; never what the sender could not
 * read, never trusted. or security. names.
 */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "xfer_int.h"
#include "banned.h"

#define LIST_MAX  65536u /* Linux's XATTR_LIST_MAX */
#define ACL_V2	  2u	 /* the version of Linux's ACL xattr value */
#define ACL_UNDEF 0xffffffffu

/* What give() gives of the attributes */
enum give_attrs { GA_NONE, GA_SYNC, GA_FRESH };

/* Reasons said once a session (x->xat_said) */
#define SAID_UNSUPPORTED 1u
#define SAID_CONSENT	 2u
#define SAID_NOPROC	 4u

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
	bool keep_attrs; /* the sender could not read them all */
	bool keep_acls;	 /* ... nor its ACLs: the copy keeps its own */
	bool acl_came[2];
	bool counted; /* in xattrs_failed already */
	unsigned n;
	struct xgive_attr *v;
	uint8_t *acl[2]; /* access, default: NULL when none is given */
	uint32_t acl_len[2];
	char *why;	   /* a name or ACL not kept, in words (NULL: none) */
	unsigned why_once; /* why is a SAID_* reason, said once a session */
	/* what giving them failed with (-errno) and why, said when the
	 * entry is done */
	int err;
	char *err_why;
};

/* Where attributes are given: a descriptor open for reading (a file
 * being received, a directory), or an O_PATH one through /proc (a file
 * found up to date, never opened for reading: it may be a node now). */
struct xh {
	int fd;
	char path[32]; /* "" for fd */
};

static ssize_t h_list(const struct xh *h, char *buf, size_t n)
{
	return h->path[0] ? listxattr(h->path, buf, n)
			  : flistxattr(h->fd, buf, n);
}

static int h_set(const struct xh *h, const char *name, const void *v, size_t n)
{
	return h->path[0] ? setxattr(h->path, name, v, n, 0)
			  : fsetxattr(h->fd, name, v, n, 0);
}

/* Whether name holds exactly v (n bytes) already. */
static bool h_same(const struct xh *h, const char *name, const void *v,
		   size_t n)
{
	uint8_t buf[512];
	ssize_t k;

	if (n >= sizeof(buf))
		return false; /* a large one is simply set again */
	k = h->path[0] ? getxattr(h->path, name, buf, sizeof(buf))
		       : fgetxattr(h->fd, name, buf, sizeof(buf));
	return k == (ssize_t)n && !memcmp(buf, v, n);
}

static int h_remove(const struct xh *h, const char *name)
{
	return h->path[0] ? removexattr(h->path, name)
			  : fremovexattr(h->fd, name);
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

static bool prefixed(const char *s, size_t n, const char *p)
{
	size_t k = strlen(p);

	return n > k && !memcmp(s, p, k);
}

/* Whether this receiver sets name (n bytes); when not, *once says why
 * (a SAID_* reason), 0 to leave it out without a word (as rsync leaves
 * trusted. and security. names to a receiver that is not root). */
static bool may_set(const struct xsess *x, const char *name, size_t n,
		    unsigned *once)
{
	*once = 0;
	if (prefixed(name, n, "user."))
		return true;
	if (geteuid() != 0)
		return false;
	if (!(x->o->flags & XFER_F_KEEP_SETID)) {
		*once = SAID_CONSENT;
		return false;
	}
	return true;
}

static void note_why(struct xgive *g, const char *why, unsigned once)
{
	if (why && !g->why) {
		g->why = strdup(why);
		g->why_once = once;
	}
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
	uint32_t flags = x->o->flags;
	struct xgive *g = next_of(x, a->idx);
	size_t bytes = 0;
	unsigned i, once;
	char *data;

	if (!g || g->attrs_came)
		return "extended attributes out of place (one item, for the "
		       "entry that follows it)";
	if (((a->n || (a->flags & PROTO_XAF_PARTIAL)) &&
	     !(flags & XFER_F_XATTRS)) ||
	    ((a->flags & PROTO_XAF_ACL_UNREAD) && !(flags & XFER_F_ACLS)))
		return "extended attributes out of place (only with -X)";
	g->attrs_came = true;
	g->keep_attrs = a->flags & PROTO_XAF_PARTIAL;
	g->keep_acls = a->flags & PROTO_XAF_ACL_UNREAD;
	if (a->flags) /* the sender's log says which */
		note_why(g,
			 "the sender could not read or send all its "
			 "attributes: the copy keeps its own",
			 0);
	for (i = 0; i < a->n; i++)
		bytes += a->v[i].name_len + 1u + a->v[i].value_len;
	g->v = malloc(a->n * sizeof(*g->v) + bytes + 1);
	if (!g->v)
		return "no memory for extended attributes";
	data = (char *)(g->v + a->n);
	for (i = 0; i < a->n; i++) {
		const struct proto_xattr *e = &a->v[i];

		if (!may_set(x, e->name, e->name_len, &once)) {
			if (once)
				note_why(g,
					 "its trusted. and security. names "
					 "need the setid consent (--keep-setid "
					 "and the receiver's)",
					 once);
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

	if (!g || g->acl_came[w])
		return "an ACL out of place (one of each kind, for the entry "
		       "that follows it)";
	g->acl_came[w] = true;
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
	 * cannot both be given: the copy keeps its own ACL */
	qsort(a->e, a->n, sizeof(a->e[0]), by_tag_id);
	for (i = 1; i < a->n; i++)
		if (a->e[i].tag == a->e[i - 1].tag &&
		    a->e[i].id == a->e[i - 1].id) {
			note_why(g,
				 "two entries of its ACL name one id here: "
				 "the ACL is not given",
				 0);
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

		if (!(flags & (XFER_F_XATTRS | XFER_F_ACLS)))
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
	if (g->acl_came[1] && e->kind != PROTO_XK_DIR)
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

static bool in_give(const struct xgive *g, const char *name)
{
	unsigned i;

	for (i = 0; g && i < g->n; i++)
		if (!strcmp(g->v[i].name, name))
			return true;
	return false;
}

static int give_fail(int e, const char *what, const char *raw, char *why,
		     size_t cap)
{
	char name[ESC_MAX]; /* a name of the copy there may be anything */

	fsio_escape(raw, strlen(raw), name, sizeof(name));
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

/* The copy's user. names the source has not: removed (not when the
 * sender could not read them all). */
static int remove_extra(const struct xh *h, const struct xgive *g, char *why,
			size_t cap)
{
	char small[1024], *list = small;
	ssize_t len, i = 0;
	int r = 0;

	if (g && g->keep_attrs)
		return 0;
	/* most lists are short: the whole 64 KiB only when it is not */
	len = h_list(h, small, sizeof(small));
	if (len < 0 && errno == ERANGE) {
		list = malloc(LIST_MAX);
		if (!list)
			return -ENOMEM;
		len = h_list(h, list, LIST_MAX);
	}
	while (len > 0 && i < len) {
		const char *name = list + i;
		size_t l = strnlen(name, (size_t)(len - i));

		i += (ssize_t)l + 1;
		if (!prefixed(name, l, "user.") || in_give(g, name))
			continue;
		if (h_remove(h, name) && errno != ENODATA && !r)
			r = give_fail(-errno, "extended attributes", name, why,
				      cap);
	}
	if (list != small)
		free(list);
	return r;
}

/* fresh: made by this session (a file being received, not resumed),
 * so it has no names of its own to remove */
static int give_attrs(const struct xh *h, const struct xgive *g, bool fresh,
		      char *why, size_t cap)
{
	int r = fresh ? 0 : remove_extra(h, g, why, cap);
	unsigned i;

	for (i = 0; g && i < g->n; i++)
		if (!(!fresh &&
		      h_same(h, g->v[i].name, g->v[i].value, g->v[i].len)) &&
		    h_set(h, g->v[i].name, g->v[i].value, g->v[i].len) && !r)
			r = give_fail(-errno, "extended attributes",
				      g->v[i].name, why, cap);
	return r;
}

/* The ACLs that came given, the others removed: not one that came but
 * could not be given, nor any the sender could not read. */
static int give_acls(const struct xh *h, const struct xgive *g, bool dir,
		     char *why, size_t cap)
{
	int w, r = 0;

	for (w = 0; w < (dir ? 2 : 1); w++) {
		const char *what = w ? "its default ACL" : "its ACL";

		if (g && g->acl[w]) {
			if (!h_same(h, acl_names[w], g->acl[w],
				    g->acl_len[w]) &&
			    h_set(h, acl_names[w], g->acl[w], g->acl_len[w]) &&
			    !r)
				r = give_fail(-errno, "ACLs", what, why, cap);
		} else if (!(g && (g->acl_came[w] || g->keep_acls)) &&
			   h_remove(h, acl_names[w]) && errno != ENODATA &&
			   errno != ENOTSUP && errno != EOPNOTSUPP && !r) {
			r = give_fail(-errno, "ACLs", what, why, cap);
		}
	}
	return r;
}

/* Give h (a file, or with dir a directory) what g says, and remove what
 * the source has not: attributes (GA_FRESH: to a file made here, with
 * nothing to remove) and/or acls. 0, or the first -errno with its
 * reason in words into why. */
static int give(struct xsess *x, const struct xh *h, const struct xgive *g,
		bool dir, enum give_attrs attrs, bool acls, char *why,
		size_t cap)
{
	uint32_t flags = x->o->flags;
	char w2[PROTO_MAX_TEXT];
	int r = 0, e = 0;

	why[0] = '\0';
	if (attrs != GA_NONE && (flags & XFER_F_XATTRS))
		r = give_attrs(h, g, attrs == GA_FRESH, why, cap);
	if (acls && (flags & XFER_F_ACLS))
		e = give_acls(h, g, dir, r ? w2 : why, r ? sizeof(w2) : cap);
	return r ?: e;
}

/* What could not be given to path (e: -errno, or 0 for a name not kept):
 * the entry counted once (g, when it has one), the reason said (the
 * destination's lack of them, and the consent, once a session). Under
 * lock. */
static void said(struct xsess *x, struct xgive *g, const char *path, int e,
		 const char *why, unsigned once)
{
	char line[PROTO_MAX_TEXT], esc[ESC_MAX];

	if (g && g->counted)
		return;
	if (g)
		g->counted = true;
	x->res->xattrs_failed++;
	if (!x->res->xattrs_why[0])
		snprintf(x->res->xattrs_why, sizeof(x->res->xattrs_why),
			 "%s: %s",
			 fsio_escape(path, strlen(path), esc, sizeof(esc)),
			 why);
	if (e == -ENOTSUP || e == -EOPNOTSUPP)
		once = SAID_UNSUPPORTED;
	if (once && (x->xat_said & once))
		return;
	x->xat_said |= once;
	snprintf(line, sizeof(line), "kept without all its attributes: %s",
		 why);
	xfer__path_event(x, path, true, line, 0);
}

/* A failure of giving into g (made when there is none, for entry idx):
 * said when the entry is done. */
static struct xgive *keep_failure(struct xgive **gp, uint32_t idx, int e,
				  const char *why)
{
	if (!*gp && (*gp = calloc(1, sizeof(**gp))))
		(*gp)->idx = idx;
	if (*gp && !(*gp)->err_why) {
		(*gp)->err = e;
		(*gp)->err_why = strdup(why);
	}
	return *gp;
}

void xfer__xattr_file(struct xsess *x, struct xfile *f)
{
	struct xh h = { .fd = f->fd };
	char why[PROTO_MAX_TEXT];
	int e;

	if (!(x->o->flags & (XFER_F_XATTRS | XFER_F_ACLS)))
		return;
	e = give(x, &h, f->rx.xg, false, f->rx.resumed ? GA_SYNC : GA_FRESH,
		 true, why, sizeof(why));
	if (e)
		keep_failure(&f->rx.xg, f->idx, e, why);
}

void xfer__xattr_named(struct xsess *x, struct xfile *f)
{
	struct xgive *g = f->rx.xg;

	if (g && (g->err_why || g->why))
		said(x, g, xfer__path(f), g->err_why ? g->err : 0,
		     g->err_why ? g->err_why : g->why,
		     g->err_why ? 0 : g->why_once);
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
	struct xgive *g = x->xat_next && x->xat_next->idx == idx ? x->xat_next
								 : NULL;
	struct xh h = { .fd = dfd };
	char why[PROTO_MAX_TEXT];
	int r = give(x, &h, g, true, GA_SYNC, false, why, sizeof(why));

	/* only its ACLs are held to the end */
	if (g) {
		free(g->v);
		g->v = NULL;
		g->n = 0;
	}
	if (r && !g) /* the entry's record, to count it once */
		g = keep_failure(&x->xat_next, idx, r, why);
	if (!r && !(g && g->why))
		return;
	xfer__lock(&x->lock);
	said(x, g, path, r, r ? why : g->why, r ? 0 : g->why_once);
	xfer__unlock(&x->lock);
}

void xfer__xattr_dir_acls(struct xsess *x, int dfd, struct late *l)
{
	struct xh h = { .fd = dfd };
	char why[PROTO_MAX_TEXT];
	int e = give(x, &h, l->xg, true, GA_NONE, true, why, sizeof(why));

	if (!e && !(l->xg && l->xg->why))
		return;
	xfer__lock(&x->lock);
	said(x, l->xg, l->path, e, e ? why : l->xg->why,
	     e ? 0 : l->xg->why_once);
	xfer__unlock(&x->lock);
}

/* Whether /proc/self/fd can be used: looked at once a process (the
 * mounts of a running receiver do not come and go). */
static bool have_proc(void)
{
	static _Atomic int known; /* 0 not yet, 1 yes, 2 no */
	int k = atomic_load(&known);

	if (!k) {
		k = access("/proc/self/fd", X_OK) ? 2 : 1;
		atomic_store(&known, k);
	}
	return k == 1;
}

void xfer__xattr_fix(struct xsess *x, struct xfile *f)
{
	const struct xfile_rx *r = &f->rx;
	mode_t keep = (x->o->flags & XFER_F_KEEP_SETID) ? 07777 : 01777;
	char why[PROTO_MAX_TEXT];
	struct xh h;
	struct stat st;
	int e;

	if (!(x->o->flags & (XFER_F_XATTRS | XFER_F_ACLS)) || !r->have_st ||
	    r->kept_newer || (x->o->flags & XFER_F_DRY_RUN))
		return;
	/* another name of the inode may be outside the destination */
	if (r->st_nlink != 1)
		return;
	/* never opened for reading (a node renamed in since its stat would
	 * be): an O_PATH descriptor, checked, then its /proc name */
	if (!have_proc()) {
		if (!f->rx.xg && (f->rx.xg = calloc(1, sizeof(*f->rx.xg))))
			f->rx.xg->idx = f->idx;
		if (f->rx.xg)
			note_why(f->rx.xg,
				 "up-to-date files keep their attributes "
				 "where /proc is not mounted",
				 SAID_NOPROC);
		return;
	}
	h.fd = openat(r->dirfd, r->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (h.fd < 0)
		return;
	snprintf(h.path, sizeof(h.path), "/proc/self/fd/%d", h.fd);
	if (!fstat(h.fd, &st) && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
	    st.st_dev == r->st_dev && st.st_ino == r->st_ino) {
		e = give(x, &h, r->xg, false, GA_SYNC, true, why, sizeof(why));
		if (e)
			keep_failure(&f->rx.xg, f->idx, e, why);
		/* an ACL given or removed changed the mode: the entry's (no
		 * chmod, and no new ctime, when it is that already) */
		if ((x->o->flags & XFER_F_ACLS) && !fstat(h.fd, &st) &&
		    (st.st_mode & 07777) != (f->mode & keep))
			(void)chmod(h.path, f->mode & keep);
	}
	close(h.fd);
}
