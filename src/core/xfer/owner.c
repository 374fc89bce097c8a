// SPDX-License-Identifier: MIT
/*
 * -o/-g, owners and groups kept as rsync keeps them (docs/PROTOCOL.md
 * section 7.3, OWNER items). The sender tells each entry's uid and gid
 * and, unless --numeric-ids, their names on its machine; the receiver
 * maps a name to the id of that name on its own machine (the id as sent
 * when the name is not known there), and applies the owner only as root
 * and the group as root or when it is one of its own groups, on the
 * descriptor before the mode (a chown clears setuid bits; they come back
 * only with the receiver's consent, as before).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfer_int.h"
#include "banned.h"

#define NAME_BUF 4096 /* getpwuid_r's scratch */

/* -o/-g: names and ids looked up, the last XOWN_CACHE of each kind */
#define XOWN_CACHE 64
struct xown_cache {
	struct xown_cell {
		uint32_t id;
		bool known; /* the name has an id on this machine */
		char name[PROTO_XFER_MAX_IDNAME + 1];
	} v[XOWN_CACHE];
	unsigned n, next;
};
struct xowners {
	struct xown_cache users, groups;
	bool root;	       /* receiver: may give files any owner */
	gid_t *groups_of_mine; /* supplementary groups */
	unsigned ngroups;
	/* receiver: the OWNER item before the next entry, mapped here */
	struct xown_pending {
		uint32_t idx;
		bool valid;
		uid_t uid;
		gid_t gid;
	} next;
};

/* A name the cache keeps for an id, or the id it keeps for a name: the
 * last XOWN_CACHE looked up, replaced in turn. */
static struct xown_cell *cache_find_id(struct xown_cache *c, uint32_t id)
{
	unsigned i;

	for (i = 0; i < c->n; i++)
		if (c->v[i].id == id)
			return &c->v[i];
	return NULL;
}

static struct xown_cell *cache_find_name(struct xown_cache *c, const char *name)
{
	unsigned i;

	for (i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].name, name))
			return &c->v[i];
	return NULL;
}

static void cache_put(struct xown_cache *c, uint32_t id, const char *name,
		      bool known)
{
	struct xown_cell *e = &c->v[c->n < XOWN_CACHE ? c->n++ : c->next++];

	c->next %= XOWN_CACHE;
	e->id = id;
	e->known = known;
	snprintf(e->name, sizeof(e->name), "%s", name);
}

/* One getpwuid_r / getgrgid_r / getpwnam_r / getgrnam_r, its buffer
 * grown while it is too small (a group of many members): 1 found (its
 * name or id out), 0 not there, -errno when the look-up failed (not
 * kept: the next entry asks again). */
static int nss_lookup(bool group, bool by_name, const char *name, uint32_t id,
		      char *name_out, uint32_t *id_out)
{
	size_t cap = 4096;
	int r;

	for (;;) {
		char *buf = malloc(cap);
		struct passwd pw, *pr = NULL;
		struct group gr, *gp = NULL;

		if (!buf)
			return -ENOMEM;
		if (group)
			r = by_name ? getgrnam_r(name, &gr, buf, cap, &gp)
				    : getgrgid_r((gid_t)id, &gr, buf, cap, &gp);
		else
			r = by_name ? getpwnam_r(name, &pw, buf, cap, &pr)
				    : getpwuid_r((uid_t)id, &pw, buf, cap, &pr);
		if (!r && (gp || pr)) {
			snprintf(name_out, PROTO_XFER_MAX_IDNAME + 1, "%s",
				 gp ? gp->gr_name : pr->pw_name);
			*id_out = gp ? (uint32_t)gp->gr_gid
				     : (uint32_t)pr->pw_uid;
			r = gp ? strlen(gp->gr_name) : strlen(pr->pw_name);
			r = r <= (int)PROTO_XFER_MAX_IDNAME ? 1 : 0;
		} else if (!r || r == ENOENT || r == ESRCH) {
			r = 0; /* not there */
		} else if (r == ERANGE && cap < (1u << 24)) {
			free(buf);
			cap *= 4;
			continue;
		} else {
			r = -r;
		}
		free(buf);
		return r;
	}
}

/* ---- the sender ---- */

static void name_of(struct xown_cache *c, uint32_t id, bool group, char *out)
{
	struct xown_cell *e = cache_find_id(c, id);
	char name[PROTO_XFER_MAX_IDNAME + 1] = "";
	uint32_t got;
	int r;

	if (!e) {
		r = nss_lookup(group, false, NULL, id, name, &got);
		/* a name the wire cannot carry goes as its id alone */
		if (r == 1 && !proto_xfer_idname_ok(name, strlen(name)))
			r = 0;
		if (r >= 0)
			cache_put(c, id, r == 1 ? name : "", r == 1);
		snprintf(out, PROTO_XFER_MAX_IDNAME + 1, "%s",
			 r == 1 ? name : "");
		return;
	}
	snprintf(out, PROTO_XFER_MAX_IDNAME + 1, "%s", e->known ? e->name : "");
}

bool xfer__owner_item(struct xsess *x, const struct stat *st, uint32_t idx,
		      struct proto_xfer_owner *o)
{
	uint32_t flags = x->o->flags;

	if (!(flags & (XFER_F_OWNER | XFER_F_GROUP)))
		return false;
	*o = (struct proto_xfer_owner){ .idx = idx,
					.uid = (uint32_t)st->st_uid,
					.gid = (uint32_t)st->st_gid };
	if (flags & XFER_F_NUMERIC_IDS)
		return true;
	if (flags & XFER_F_OWNER)
		name_of(&x->own->users, o->uid, false, o->user);
	if (flags & XFER_F_GROUP)
		name_of(&x->own->groups, o->gid, true, o->group);
	return true;
}

size_t xfer__owner_size(const struct proto_xfer_owner *o)
{
	return 4 + PROTO__OWNER_FIXED + strlen(o->user) + strlen(o->group);
}

/* ---- the receiver ---- */

/* The local id of name (the sent id when the name is not known here, or
 * cannot be looked up now). */
static uint32_t id_of(struct xown_cache *c, const char *name, uint32_t sent,
		      bool group)
{
	struct xown_cell *e;
	char found[PROTO_XFER_MAX_IDNAME + 1];
	uint32_t id = 0;
	int r;

	if (!name[0])
		return sent;
	e = cache_find_name(c, name);
	if (e)
		return e->known ? e->id : sent;
	r = nss_lookup(group, true, name, 0, found, &id);
	if (r >= 0)
		cache_put(c, id, name, r == 1);
	return r == 1 ? id : sent;
}

/* Whether this process may give a file group gid without being root. */
static bool my_group(struct xsess *x, gid_t gid)
{
	unsigned i;

	if (gid == getegid())
		return true;
	for (i = 0; i < x->own->ngroups; i++)
		if (x->own->groups_of_mine[i] == gid)
			return true;
	return false;
}

int xfer__owner_init(struct xsess *x)
{
	struct xowners *o = calloc(1, sizeof(*o));
	int n = getgroups(0, NULL);

	if (!o)
		return -ENOMEM;
	o->root = geteuid() == 0;
	o->groups_of_mine = n > 0 ? calloc((size_t)n, sizeof(gid_t)) : NULL;
	n = o->groups_of_mine ? getgroups(n, o->groups_of_mine) : 0;
	o->ngroups = n > 0 ? (unsigned)n : 0;
	x->own = o;
	return 0;
}

void xfer__owner_fini(struct xsess *x)
{
	if (!x->own)
		return;
	free(x->own->groups_of_mine);
	free(x->own);
	x->own = NULL;
}

bool xfer__owner_root(const struct xsess *x)
{
	return x->own && x->own->root;
}

static void owner_note(struct xsess *x, const struct proto_xfer_owner *o)
{
	uint32_t flags = x->o->flags;
	bool numeric = flags & XFER_F_NUMERIC_IDS;
	struct xown_pending *p = &x->own->next;

	*p = (struct xown_pending){
		.idx = o->idx, .valid = true, .uid = (uid_t)-1, .gid = (gid_t)-1
	};
	if ((flags & XFER_F_OWNER) && x->own->root)
		p->uid = (uid_t)(numeric ? o->uid
					 : id_of(&x->own->users, o->user,
						 o->uid, false));
	if (flags & XFER_F_GROUP) {
		gid_t g = (gid_t)(numeric ? o->gid
					  : id_of(&x->own->groups, o->group,
						  o->gid, true));

		if (x->own->root || my_group(x, g))
			p->gid = g;
	}
}

const char *xfer__owner_on_item(struct xsess *x,
				const struct proto_xfer_iter *it)
{
	struct proto_xfer_owner o;

	if (!(x->o->flags & (XFER_F_OWNER | XFER_F_GROUP)) ||
	    x->own->next.valid)
		return "an owner out of place (only with -o or -g, one before "
		       "its entry)";
	if (proto_xfer_get_owner(it, &o))
		return "a malformed owner (a name is 1..32 bytes of A-Z a-z "
		       "0-9 . _ - @ $)";
	owner_note(x, &o);
	return NULL;
}

void xfer__owner_next_gone(struct xsess *x)
{
	x->own->next.valid = false;
}

bool xfer__owner_take(struct xsess *x, uint32_t idx, uid_t *uid, gid_t *gid)
{
	struct xown_pending *p = &x->own->next;
	bool have = p->valid && p->idx == idx &&
		    (p->uid != (uid_t)-1 || p->gid != (gid_t)-1);

	*uid = have ? p->uid : (uid_t)-1;
	*gid = have ? p->gid : (gid_t)-1;
	return have;
}

/* Mode m of the inode fd (an O_PATH descriptor) stands for. */
static int chmod_fd(int fd, mode_t m)
{
	char p[32];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	return chmod(p, m) ? -errno : 0;
}

/* The owner and group of f's inode, when they differ; whether they were
 * left alone for the inode's other names. */
static bool owner_give(struct xsess *x, const struct xfile *f)
{
	const struct xfile_rx *r = &f->rx;
	mode_t keep = (x->o->flags & XFER_F_KEEP_SETID) ? 07777 : 01777;
	struct stat st;
	int fd;

	/* a copy --update keeps (newer) is not this file: left alone */
	if (!r->owned || !r->have_st || r->kept_newer ||
	    (x->o->flags & XFER_F_DRY_RUN))
		return false;
	if ((r->uid == (uid_t)-1 || r->uid == r->st_uid) &&
	    (r->gid == (gid_t)-1 || r->gid == r->st_gid))
		return false;
	/* another name of the inode may be outside the destination */
	if (r->st_nlink != 1)
		return true;
	fd = openat(r->dirfd, r->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	/* the inode that was looked at, changed on its descriptor */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
	    st.st_dev == r->st_dev && st.st_ino == r->st_ino &&
	    !fchownat(fd, "", r->uid, r->gid, AT_EMPTY_PATH) &&
	    (st.st_mode & 06000))
		(void)chmod_fd(fd, st.st_mode & keep & 07777);
	close(fd);
	return false;
}

/* What mode_give could not give (e), kept as the reason its up-to-date
 * event says. */
static void mode_said(struct xfile *f, int e)
{
	if (e == -ENOENT && access("/proc/self/fd", X_OK))
		snprintf(f->rx.reason, sizeof(f->rx.reason),
			 "its mode is kept where /proc is not mounted");
	else
		snprintf(f->rx.reason, sizeof(f->rx.reason),
			 "its mode could not be given: %s", lr_strerror(e));
}

/* The mode of f's inode, when it differs: 0 (given, or nothing to give),
 * -EMLINK (other names: left alone), or -errno. */
static int mode_give(struct xsess *x, const struct xfile *f)
{
	const struct xfile_rx *r = &f->rx;
	mode_t keep = (x->o->flags & XFER_F_KEEP_SETID) ? 07777 : 01777;
	mode_t want = f->mode & keep;
	struct stat st;
	int fd, e = 0;

	/* a copy --update keeps (newer) is not this file: left alone */
	if (!r->have_st || r->kept_newer || !S_ISREG(r->st_mode) ||
	    (r->st_mode & 07777) == want || (x->o->flags & XFER_F_DRY_RUN))
		return 0;
	/* another name of the inode may be outside the destination */
	if (r->st_nlink != 1)
		return -EMLINK;
	fd = openat(r->dirfd, r->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* the inode that was looked at (a chown since may have cleared its
	 * setid bits: compared again), changed on its descriptor */
	if (fstat(fd, &st))
		e = -errno;
	else if (!S_ISREG(st.st_mode) || st.st_nlink != 1 ||
		 st.st_dev != r->st_dev || st.st_ino != r->st_ino)
		e = -ESTALE;
	else if ((st.st_mode & 07777) != want)
		e = chmod_fd(fd, want);
	close(fd);
	return e;
}

/* What an up-to-date file with other names keeps (its owner kept,
 * mode_give's e, -X/-A asked), said in its event's reason: "its owner
 * and mode are kept: ...". */
static void kept_said(struct xsess *x, struct xfile *f, bool owner, int e)
{
	const struct xfile_rx *r = &f->rx;
	const char *what[3];
	unsigned n = 0;

	if (owner)
		what[n++] = "owner";
	if (e == -EMLINK)
		what[n++] = "mode";
	if ((x->o->flags & (XFER_F_XATTRS | XFER_F_ACLS)) && r->have_st &&
	    !r->kept_newer && r->st_nlink != 1 &&
	    !(x->o->flags & XFER_F_DRY_RUN))
		what[n++] = "attributes";
	if (!n)
		return;
	snprintf(f->rx.reason, sizeof(f->rx.reason),
		 "its %s%s%s%s%s %s kept: the file has other names, which may "
		 "be outside the destination",
		 what[0],
		 n == 3	  ? ", "
		 : n == 2 ? " and "
			  : "",
		 n > 1 ? what[1] : "", n == 3 ? " and " : "",
		 n == 3 ? what[2] : "",
		 n == 1 && strcmp(what[0], "attributes") ? "is" : "are");
}

void xfer__owner_fix(struct xsess *x, struct xfile *f)
{
	/* the owner first: a chown clears setid bits */
	bool owner_kept = owner_give(x, f);
	int e = mode_give(x, f);

	if (e && e != -EMLINK)
		mode_said(f, e);
	else
		kept_said(x, f, owner_kept, e);
}

int xfer__owner_node(struct xsess *x, const struct late *l, int dfd,
		     const char *name, const struct xnode_meta *m)
{
	struct stat st;
	char p[32];
	int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || (st.st_mode & S_IFMT) != m->type ||
	    (m->made &&
	     (st.st_dev != m->made->st_dev || st.st_ino != m->made->st_ino)))
		r = -ESTALE; /* not the node that was made */
	if (!r && l->owned && fchownat(fd, "", l->uid, l->gid, AT_EMPTY_PATH)) {
		int e = -errno;

		xfer__lock(&x->lock);
		xfer__owner_said(x, l->path, e);
		xfer__unlock(&x->lock);
	}
	if (!r && m->mode)
		r = chmod_fd(fd, *m->mode);
	/* the node itself (a FIFO or device is not opened for it) */
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	if (!r && m->ts)
		(void)utimensat(AT_FDCWD, p, m->ts, 0);
	close(fd);
	return r;
}

void xfer__owner_name(struct xsess *x, uint32_t id, bool group, char *out)
{
	name_of(group ? &x->own->groups : &x->own->users, id, group, out);
}

uint32_t xfer__owner_id(struct xsess *x, const char *name, uint32_t sent,
			bool group)
{
	return id_of(group ? &x->own->groups : &x->own->users, name, sent,
		     group);
}

void xfer__owner_said(struct xsess *x, const char *path, int e)
{
	char why[PROTO_MAX_TEXT];

	snprintf(why, sizeof(why), "its owner and group could not be given: %s",
		 lr_strerror(e));
	x->res->owners_failed++;
	xfer__path_event(x, path, true, why, 0);
}
