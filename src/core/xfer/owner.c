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

/* ---- the sender ---- */

static void name_of(struct xown_cache *c, uint32_t id, bool group, char *out)
{
	struct xown_cell *e = cache_find_id(c, id);
	char buf[NAME_BUF];
	const char *name = NULL;

	if (!e) {
		struct passwd pw, *pr = NULL;
		struct group gr, *gp = NULL;

		if (group) {
			if (!getgrgid_r((gid_t)id, &gr, buf, sizeof(buf),
					&gp) &&
			    gp)
				name = gp->gr_name;
		} else if (!getpwuid_r((uid_t)id, &pw, buf, sizeof(buf), &pr) &&
			   pr) {
			name = pr->pw_name;
		}
		/* a name the wire cannot carry goes as its id alone */
		if (name && !proto_xfer_idname_ok(name, strlen(name)))
			name = NULL;
		cache_put(c, id, name ? name : "", name != NULL);
		e = cache_find_id(c, id);
	}
	snprintf(out, PROTO_XFER_MAX_IDNAME + 1, "%s",
		 e && e->known ? e->name : "");
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
		name_of(&x->own.users, o->uid, false, o->user);
	if (flags & XFER_F_GROUP)
		name_of(&x->own.groups, o->gid, true, o->group);
	return true;
}

size_t xfer__owner_size(const struct proto_xfer_owner *o)
{
	return 4 + PROTO__OWNER_FIXED + strlen(o->user) + strlen(o->group);
}

/* ---- the receiver ---- */

/* The local id of name (the sent id when the name is not known here). */
static uint32_t id_of(struct xown_cache *c, const char *name, uint32_t sent,
		      bool group)
{
	struct xown_cell *e;
	char buf[NAME_BUF];

	if (!name[0])
		return sent;
	e = cache_find_name(c, name);
	if (!e) {
		struct passwd pw, *pr = NULL;
		struct group gr, *gp = NULL;
		uint32_t id = 0;
		bool known = false;

		if (group) {
			if (!getgrnam_r(name, &gr, buf, sizeof(buf), &gp) &&
			    gp) {
				known = true;
				id = (uint32_t)gp->gr_gid;
			}
		} else if (!getpwnam_r(name, &pw, buf, sizeof(buf), &pr) &&
			   pr) {
			known = true;
			id = (uint32_t)pr->pw_uid;
		}
		cache_put(c, id, name, known);
		e = cache_find_name(c, name);
	}
	return e && e->known ? e->id : sent;
}

/* Whether this process may give a file group gid without being root. */
static bool my_group(struct xsess *x, gid_t gid)
{
	unsigned i;

	if (gid == getegid())
		return true;
	for (i = 0; i < x->own.ngroups; i++)
		if (x->own.groups_of_mine[i] == gid)
			return true;
	return false;
}

void xfer__owner_init(struct xsess *x)
{
	int n;

	x->own.root = geteuid() == 0;
	n = getgroups(XOWN_MY_GROUPS, x->own.groups_of_mine);
	x->own.ngroups = n > 0 ? (unsigned)n : 0;
}

void xfer__owner_note(struct xsess *x, const struct proto_xfer_owner *o)
{
	uint32_t flags = x->o->flags;
	bool numeric = flags & XFER_F_NUMERIC_IDS;
	struct xown_pending *p = &x->own.next;

	*p = (struct xown_pending){
		.idx = o->idx, .valid = true, .uid = (uid_t)-1, .gid = (gid_t)-1
	};
	if ((flags & XFER_F_OWNER) && x->own.root)
		p->uid = (uid_t)(numeric ? o->uid
					 : id_of(&x->own.users, o->user, o->uid,
						 false));
	if (flags & XFER_F_GROUP) {
		gid_t g = (gid_t)(numeric ? o->gid
					  : id_of(&x->own.groups, o->group,
						  o->gid, true));

		if (x->own.root || my_group(x, g))
			p->gid = g;
	}
}

bool xfer__owner_take(struct xsess *x, uint32_t idx, uid_t *uid, gid_t *gid)
{
	struct xown_pending *p = &x->own.next;
	bool have = p->valid && p->idx == idx &&
		    (p->uid != (uid_t)-1 || p->gid != (gid_t)-1);

	*uid = have ? p->uid : (uid_t)-1;
	*gid = have ? p->gid : (gid_t)-1;
	return have;
}

void xfer__owner_fix(struct xsess *x, const struct xfile *f)
{
	const struct xfile_rx *r = &f->rx;

	if (!r->owned || !r->have_st || (x->o->flags & XFER_F_DRY_RUN))
		return;
	if ((r->uid == (uid_t)-1 || r->uid == r->st_uid) &&
	    (r->gid == (gid_t)-1 || r->gid == r->st_gid))
		return;
	/* best effort, as its mtime for -c: the file is up to date */
	(void)fchownat(r->dirfd, r->name, r->uid, r->gid, AT_SYMLINK_NOFOLLOW);
}
