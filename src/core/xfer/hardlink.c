// SPDX-License-Identifier: MIT
/*
 * -H, hard links kept as links (docs/PROTOCOL.md section 7.3 and 7.7).
 * The sender announces a file of more than one name once, flagged LINKED,
 * and each other name it meets in the transfer as a HARDLINK entry that
 * carries the first one's idx: the data travels once. The receiver keeps
 * the LINKED entries and whether each got its name, and makes the links
 * at the end, when every file is done: a link is made only to a file this
 * session received and verified (or found up to date), still the same
 * inode under its name, and only beneath the destination.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfer_int.h"
#include "banned.h"

/* ---- the sender's table of files with more than one name ---- */

static uint64_t mix(uint64_t dev, uint64_t ino)
{
	uint64_t z = dev * 0x9e3779b97f4a7c15ull ^ ino;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static struct xlink_cell *cell_of(struct xlinks *l, uint64_t dev, uint64_t ino)
{
	size_t i = (size_t)mix(dev, ino) & (l->cap - 1);

	while (l->h[i].used && (l->h[i].dev != dev || l->h[i].ino != ino))
		i = (i + 1) & (l->cap - 1);
	return &l->h[i];
}

static int grow(struct xlinks *l)
{
	size_t cap = l->cap ? l->cap * 2 : 256, i;
	struct xlink_cell *old = l->h, *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	l->h = h;
	l->cap = cap;
	for (i = 0; old && i < cap / 2; i++)
		if (old[i].used)
			*cell_of(l, old[i].dev, old[i].ino) = old[i];
	free(old);
	return 0;
}

/* The cell of st's inode, taken (new: used is false) or found; NULL
 * without memory. */
static struct xlink_cell *lookup(struct xlinks *l, const struct stat *st)
{
	if ((l->n + 1) * 2 > l->cap && grow(l))
		return NULL;
	return cell_of(l, (uint64_t)st->st_dev, (uint64_t)st->st_ino);
}

/* st's cell when it is in the table, without taking one. */
static struct xlink_cell *find(struct xlinks *l, uint64_t dev, uint64_t ino)
{
	struct xlink_cell *c;

	if (!l->cap)
		return NULL;
	c = cell_of(l, dev, ino);
	return c->used ? c : NULL;
}

static bool has_names(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_nlink > 1;
}

/* The file announced as idx with its path and inode, kept for the lines
 * of its links and to find its cell again. */
static int file_keep(struct xlinks *l, uint32_t idx, const char *path,
		     const struct stat *st)
{
	if (l->nfiles == l->cap_files) {
		size_t nc = l->cap_files ? l->cap_files * 2 : 64;
		struct xlink_file *nv = realloc(l->files, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		l->files = nv;
		l->cap_files = nc;
	}
	l->files[l->nfiles] = (struct xlink_file){
		.idx = idx,
		.dev = (uint64_t)st->st_dev,
		.ino = (uint64_t)st->st_ino,
		.size = (uint64_t)st->st_size,
		.path = strdup(path),
	};
	if (!l->files[l->nfiles].path)
		return -ENOMEM;
	l->nfiles++;
	return 0;
}

static const struct xlink_file *file_of(const struct xlinks *l, uint32_t idx)
{
	size_t lo = 0, hi = l->nfiles;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->files[mid].idx == idx)
			return &l->files[mid];
		if (l->files[mid].idx < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *xfer__hl_path(const struct xlinks *l, uint32_t idx, uint64_t *size)
{
	const struct xlink_file *f = file_of(l, idx);

	if (size)
		*size = f ? f->size : 0;
	return f ? f->path : NULL;
}

int xfer__hl_decide(struct xlinks *l, struct wentry *e, bool again)
{
	struct xlink_cell *c;

	if (e->kind != PROTO_XK_FILE || e->is_stdin || !has_names(&e->st))
		return 0;
	c = find(l, (uint64_t)e->st.st_dev, (uint64_t)e->st.st_ino);
	if (c && c->idx != XLINK_DEAD && !again) {
		e->kind = PROTO_XK_HARDLINK;
		e->link_to = c->idx;
		return 1;
	}
	e->linked = true;
	return 0;
}

int xfer__hl_commit(struct xlinks *l, const struct wentry *e, uint32_t idx,
		    const char *path)
{
	struct xlink_cell *c;

	if (!e->linked)
		return 0;
	c = lookup(l, &e->st);
	if (!c)
		return -ENOMEM;
	if (!c->used)
		l->n++;
	*c = (struct xlink_cell){ .dev = (uint64_t)e->st.st_dev,
				  .ino = (uint64_t)e->st.st_ino,
				  .idx = idx,
				  .used = true };
	return file_keep(l, idx, path, &e->st);
}

void xfer__hl_dead(struct xlinks *l, uint32_t idx)
{
	const struct xlink_file *f = file_of(l, idx);
	struct xlink_cell *c = f ? find(l, f->dev, f->ino) : NULL;

	if (c && c->idx == idx)
		c->idx = XLINK_DEAD;
}

void xfer__hl_forget(struct xlinks *l, const struct stat *st)
{
	struct xlink_cell *c =
		find(l, (uint64_t)st->st_dev, (uint64_t)st->st_ino);

	if (c)
		c->idx = XLINK_DEAD;
}

bool xfer__hl_counted(struct xlinks *l, const struct stat *st)
{
	struct xlink_cell *c;

	if (!has_names(st))
		return false;
	c = lookup(l, st);
	if (!c || c->used)
		return c != NULL;
	l->n++;
	*c = (struct xlink_cell){ .dev = (uint64_t)st->st_dev,
				  .ino = (uint64_t)st->st_ino,
				  .used = true };
	return false;
}

void xfer__hl_free(struct xlinks *l)
{
	size_t i;

	for (i = 0; i < l->nfiles; i++)
		free(l->files[i].path);
	free(l->files);
	free(l->h);
	*l = (struct xlinks){ 0 };
}

/* ---- the receiver's LINKED files ---- */

/* The LINKED entry idx, or NULL (they come in idx order). */
static struct xleader *leader_of(struct xsess *x, uint32_t idx)
{
	struct xleaders *s = &x->rx.leaders;
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].idx == idx)
			return &s->v[mid];
		if (s->v[mid].idx < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int xfer__hl_leader_add(struct xsess *x, const struct proto_xfer_entry *e,
			const char *path)
{
	struct xleaders *s = &x->rx.leaders;

	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 64;
		struct xleader *nv = realloc(s->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = nc;
	}
	/* REFUSE until its plan says otherwise (refused before it: its
	 * names go as files, kept by default) */
	s->v[s->n] = (struct xleader){ .idx = e->idx,
				       .plan = PROTO_XA_REFUSE,
				       .size = e->size,
				       .path = strdup(path) };
	if (!s->v[s->n].path)
		return -ENOMEM;
	s->n++;
	return 0;
}

void xfer__hl_leader_named(struct xsess *x, const struct xfile *f, int dirfd,
			   const char *name)
{
	struct xleader *d;
	struct stat st;

	if (!(f->eflags & PROTO_XE_LINKED) || !(d = leader_of(x, f->idx)))
		return;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) ||
	    !S_ISREG(st.st_mode))
		return; /* not linked to, then */
	d->ok = true;
	d->dev = (uint64_t)st.st_dev;
	d->ino = (uint64_t)st.st_ino;
}

void xfer__hl_leader_planned(struct xsess *x, const struct xfile *f,
			     uint8_t action)
{
	bool reg = f->rx.have_st && S_ISREG(f->rx.st_mode);
	struct xleader *d;

	if (!(f->eflags & PROTO_XE_LINKED) || !(d = leader_of(x, f->idx)))
		return;
	d->plan = action;
	if (f->rx.have_st) { /* what its name was when planned */
		d->was_dev = (uint64_t)f->rx.st_dev;
		d->was_ino = (uint64_t)f->rx.st_ino;
	}
	if (action == PROTO_XA_SKIP && f->rx.kept_newer) {
		d->newer = true; /* another file: nothing links to it */
	} else if (action == PROTO_XA_SKIP && reg) {
		d->ok = true; /* up to date: that file */
		d->dev = d->was_dev;
		d->ino = d->was_ino;
	} else if ((x->o->flags & XFER_F_DRY_RUN) &&
		   (action == PROTO_XA_SEND || action == PROTO_XA_REPLACE)) {
		d->ok = true; /* would be received: no inode yet */
	}
}

/* Links kept by default: whether link e's name goes as a file of its
 * own, as without links. It does when its file will not be named (kept
 * newer by UPDATE, or refused), or when something is at the name that is
 * not what the file's name was when planned (a copy made without links,
 * another file): the file rules then decide it (up to date, -c, UPDATE,
 * "exists"). A name that is missing, or is the group's inode, is linked
 * at the end. d: a copy (the lookup is not made under the lock). */
static bool goes_as_file(struct xsess *x, const struct xleader *d,
			 const struct proto_xfer_entry *e)
{
	char parent[FSIO_MAX_PATH + 1], name[FSIO_MAX_NAME + 1];
	struct stat st;
	int dfd, r;

	if (d->newer ||
	    (d->plan != PROTO_XA_SEND && d->plan != PROTO_XA_RESUME &&
	     d->plan != PROTO_XA_REPLACE && d->plan != PROTO_XA_SKIP))
		return true;
	if (x->rx.destfd < 0)
		return false; /* a dry run into a destination not there */
	fsio_split(e->path, e->path_len, parent, name);
	dfd = fsio_open_dir(x->rx.destfd, parent, false, 0);
	r = dfd < 0 ? dfd : fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);
	if (dfd >= 0)
		close(dfd);
	if (r)
		return false; /* nothing there (or not to be looked at) */
	return !(d->was_dev || d->was_ino) ||
	       (uint64_t)st.st_dev != d->was_dev ||
	       (uint64_t)st.st_ino != d->was_ino;
}

int xfer__hl_again(struct xsess *x, struct xfile *f,
		   const struct proto_xfer_entry *e, uint64_t *n, uint64_t *b)
{
	struct xleader d = { 0 }, *p;
	int r;

	if (!(x->o->flags & XFER_F_LINKS_DEFAULT))
		return 0;
	xfer__lock(&x->lock);
	p = leader_of(x, e->link_to);
	if (p)
		d = *p; /* a copy: the lookup is made without the lock */
	xfer__unlock(&x->lock);
	if (!p || !goes_as_file(x, &d, e))
		return 0;
	xfer__lock(&x->lock);
	r = xfer__push_ack(x, e->idx, 0, PROTO_XS_FILE_AGAIN, 0);
	xfer__file_release(f);
	xfer__unlock(&x->lock);
	/* announced again as a file of the size its file was announced
	 * with: entries admitted (*n) and the bytes the totals allow (*b) */
	(*n)--;
	*b += d.size < UINT64_MAX - *b ? d.size : 0;
	return r ? r : 1;
}

const char *xfer__hl_refused(struct xsess *x, const struct proto_xfer_entry *e)
{
	return leader_of(x, e->link_to) ? NULL
					: "a hard link to an entry that is not "
					  "a file others may link to";
}

void xfer__hl_leaders_free(struct xsess *x)
{
	struct xleaders *s = &x->rx.leaders;
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i].path);
	free(s->v);
	*s = (struct xleaders){ 0 };
}

/* ---- making the links, at the end ---- */

/* What becomes of the name a link would take. */
enum verdict {
	V_LINK, /* made (a name there replaced) */
	V_KEEP, /* left as it was: skipped */
	V_HAS	/* the name is that file already: as good as made */
};

/* The verdict on link l to d's file (d->ok: it got its name) where have
 * is there (NULL: nothing), or -errno with why filled: an existing name
 * is replaced only with OVERWRITE or UPDATE (never a directory; UPDATE
 * keeps a newer regular file, rsync's -u). Links kept by default meet
 * here only a missing name or the group's own inode (xfer__hl_again). */
static int verdict(struct xsess *x, const struct late *l,
		   const struct xleader *d, const struct stat *have, char *why,
		   size_t whylen)
{
	uint32_t flags = x->o->flags;
	char esc[ESC_MAX];

	if (have && d->ok && (d->dev || d->ino) &&
	    (uint64_t)have->st_dev == d->dev &&
	    (uint64_t)have->st_ino == d->ino)
		return V_HAS;
	if (!d->ok) {
		fsio_escape(d->path, strlen(d->path), esc, sizeof(esc));
		if (d->newer)
			snprintf(why, whylen,
				 "not linked: %s is newer at the destination "
				 "(kept by --update)",
				 esc);
		else
			snprintf(why, whylen, "not linked: %s was not received",
				 esc);
		return d->newer ? -ESTALE : -ENOENT;
	}
	if (!have)
		return V_LINK;
	if (S_ISDIR(have->st_mode))
		return snprintf(why, whylen, "a directory of that name exists"),
		       -EISDIR;
	if (!(flags & (XFER_F_OVERWRITE | XFER_F_UPDATE)))
		return snprintf(why, whylen, "exists"), -EEXIST;
	if (!(flags & XFER_F_OVERWRITE) && S_ISREG(have->st_mode) &&
	    have->st_mtim.tv_sec > l->mtime_sec)
		return V_KEEP;
	return V_LINK;
}

/* The file's name opened (its directory into *ldfd) and checked: still
 * the file this session named. */
static int leader_open(struct xsess *x, const struct xleader *d, int *ldfd,
		       char *lname, struct stat *st)
{
	char parent[FSIO_MAX_PATH + 1];

	fsio_split(d->path, strlen(d->path), parent, lname);
	*ldfd = fsio_open_dir(x->rx.destfd, parent, false, 0);
	if (*ldfd < 0)
		return *ldfd;
	if (fstatat(*ldfd, lname, st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISREG(st->st_mode) || (uint64_t)st->st_dev != d->dev ||
	    (uint64_t)st->st_ino != d->ino)
		return -ESTALE;
	return 0;
}

/* The file a link names, copied: its LINKED entry, or, when that one
 * did not get its name (it changed as it was read and was announced
 * again), a later LINKED entry of the same path that did. false when
 * there is none. */
static bool leader_for(struct xsess *x, uint32_t idx, struct xleader *out)
{
	struct xleaders *s = &x->rx.leaders;
	struct xleader *p;
	size_t i;

	xfer__lock(&x->lock);
	p = leader_of(x, idx);
	if (p)
		*out = *p;
	for (i = p ? (size_t)(p - s->v) + 1 : s->n; p && !out->ok && i < s->n;
	     i++)
		if (s->v[i].ok && !strcmp(s->v[i].path, p->path))
			*out = s->v[i];
	xfer__unlock(&x->lock);
	return p != NULL;
}

const char *xfer__hl_file(struct xsess *x, uint32_t idx)
{
	struct xleader d;

	return leader_for(x, idx, &d) ? d.path : NULL;
}

/* Link nname in ndfd to d's file, which is still the file this session
 * named: 0, or -errno with why filled. A name there (the verdict's to
 * replace) is unlinked first. */
static int link_to(struct xsess *x, const struct xleader *d, int ndfd,
		   const char *nname, bool there, char *why, size_t whylen)
{
	char lname[FSIO_MAX_NAME + 1], esc[ESC_MAX];
	struct stat st;
	int ldfd = -1, r;

	r = leader_open(x, d, &ldfd, lname, &st);
	if (r)
		snprintf(why, whylen, "not linked: %s %s",
			 fsio_escape(d->path, strlen(d->path), esc,
				     sizeof(esc)),
			 r == -ESTALE || r == -ENOENT
				 ? "changed since it was received"
				 : lr_strerror(r));
	else if ((there && unlinkat(ndfd, nname, 0)) ||
		 linkat(ldfd, lname, ndfd, nname, 0))
		r = -errno;
	if (r && !why[0])
		snprintf(why, whylen, "%s",
			 r == -EEXIST ? "exists" : lr_strerror(r));
	if (ldfd >= 0)
		close(ldfd);
	return r;
}

int xfer__hl_make(struct xsess *x, const struct late *l, char *why,
		  size_t whylen)
{
	char parent[FSIO_MAX_PATH + 1], name[FSIO_MAX_NAME + 1];
	bool dry = x->o->flags & XFER_F_DRY_RUN;
	struct xleader d = { 0 };
	struct stat have;
	bool there;
	int ndfd, r;

	why[0] = 0;
	if (!leader_for(x, l->link_to, &d) || !d.path) {
		snprintf(why, whylen, "not linked: its file was not received");
		return -ENOENT;
	}
	fsio_split(l->path, strlen(l->path), parent, name);
	/* a dry run looks, never makes (nor the destination) */
	ndfd = dry && x->rx.destfd < 0
		       ? -ENOENT
		       : fsio_open_dir(x->rx.destfd, parent, !dry, 0755);
	if (ndfd < 0 && !(dry && ndfd == -ENOENT)) {
		snprintf(why, whylen, "%s", lr_strerror(ndfd));
		return ndfd;
	}
	there = ndfd >= 0 && !fstatat(ndfd, name, &have, AT_SYMLINK_NOFOLLOW);
	r = verdict(x, l, &d, there ? &have : NULL, why, whylen);
	if (r == V_LINK && !dry)
		r = link_to(x, &d, ndfd, name, there, why, whylen);
	if (ndfd >= 0)
		close(ndfd);
	/* a name that is the file already: up to date, where the sender
	 * hears of it (KEPT); else among the links, as it always was */
	if (r == V_HAS)
		return (x->o->flags & XFER_F_KEPT_ITEMS) ? 2 : 0;
	return r;
}
