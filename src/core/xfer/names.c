// SPDX-License-Identifier: MIT
/*
 * The receiver's table of the window's file names: a second entry of a
 * name whose first is still in flight is refused ("announced twice"), so
 * that one name never has two temporary files (docs/PROTOCOL.md section
 * 7.4, step 1). An open table of RX_NAMES cells keyed by FNV-1a, made
 * again from the window when it fills with stale cells. And the name of
 * a lone file pulled into a DEST that is not a directory.
 */
#include <string.h>

#include "xfer_int.h"
#include "banned.h"

/* FNV-1a of a path, never 0. */
static uint64_t name_hash(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--) {
		h ^= (uint8_t)*p++;
		h *= 0x100000001b3ull;
	}
	return h ? h : 1;
}

/* The cells left by files that have gone are dropped: the table is
 * made again from the window's files (at most the window's x->wn of RX_NAMES
 * cells). Under lock. */
static void names_rebuild(struct xsess *x)
{
	unsigned i, k;

	memset(x->rx.names, 0, sizeof(x->rx.names));
	x->rx.nnames = 0;
	for (i = 0; i < x->wn; i++) {
		const struct xfile *f = &x->win[i];

		if (!xfer__used(f) || f->kind != PROTO_XK_FILE || !f->path)
			continue;
		k = name_hash(f->path, strlen(f->path)) % RX_NAMES;
		while (x->rx.names[k].h)
			k = (k + 1) % RX_NAMES;
		x->rx.names[k] =
			(struct rx_name){ name_hash(f->path, strlen(f->path)),
					  f->idx };
		x->rx.nnames++;
	}
}

/* get HOST:FILE DEST, DEST not a directory: a session of one regular
 * file names it DEST in DEST's parent; anything else goes into DEST made
 * a directory. Decided at the first entry, before DEST is made. */
void xfer__lone_file(struct xsess *x, uint64_t files,
		     struct proto_xfer_entry *e)
{
	struct xfer_dest *d = &x->rx.dest;

	if (!d->one_file || e->idx != 0)
		return;
	/* --delete is for trees: its root stays DEST */
	if (files == 1 && e->kind == PROTO_XK_FILE &&
	    !(x->o->flags & XFER_F_DELETE) &&
	    !memchr(e->path, '/', e->path_len)) {
		e->path = d->one_file;
		e->path_len = (uint16_t)strlen(d->one_file);
		d->path = "";
	}
	d->one_file = NULL;
}

bool xfer__name_taken(struct xsess *x, const struct proto_xfer_entry *e)
{
	uint64_t h = name_hash(e->path, e->path_len);
	unsigned k = h % RX_NAMES;

	if (x->rx.nnames >= RX_NAMES * 3 / 4)
		names_rebuild(x);
	for (; x->rx.names[k].h; k = (k + 1) % RX_NAMES) {
		const struct xfile *f = xfer__entry(x, x->rx.names[k].idx);

		if (x->rx.names[k].h == h && x->rx.names[k].idx != e->idx &&
		    f && f->path && f->rx.state != XRX_FAILED &&
		    strlen(f->path) == e->path_len &&
		    !memcmp(f->path, e->path, e->path_len))
			return true;
	}
	x->rx.names[k] = (struct rx_name){ h, e->idx };
	x->rx.nnames++;
	return false;
}
