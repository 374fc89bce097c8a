// SPDX-License-Identifier: MIT
/*
 * The sender's side of the names a receiver makes at the end, symlinks
 * and hard links (docs/PROTOCOL.md section 7.7): each is done for now at
 * its FILE_DONE, and its outcome is told after XFER_DONE, failed when a
 * FAIL item of the last XFER_ACKS named its idx.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfer_int.h"
#include "banned.h"

/* The symlink of entry idx among those kept for the end, or NULL (they
 * are kept in idx order). */
struct tx_link *xfer__link_find(struct xsess *x, uint32_t idx)
{
	unsigned lo = 0, hi = x->tx.nlinks;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (x->tx.links[mid].idx == idx)
			return &x->tx.links[mid];
		if (x->tx.links[mid].idx < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* A symlink is done for now: the receiver makes it at the end, and says
 * then if it failed; its event waits for that. Under lock. */
int xfer__link_keep(struct xsess *x, struct xfile *f)
{
	struct xsend *q = &x->tx;

	if (q->nlinks == q->cap_links) {
		unsigned nc = q->cap_links ? q->cap_links * 2 : 64;
		struct tx_link *nl = realloc(q->links, nc * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		q->links = nl;
		q->cap_links = nc;
	}
	q->links[q->nlinks++] =
		(struct tx_link){ .idx = f->idx,
				  .hard = f->kind == PROTO_XK_HARDLINK,
				  .to = f->link_to,
				  .path = f->path };
	f->path = NULL;
	return 0;
}

/* A KEPT item: the hard link's name was left as it was there (a file of
 * its own, up to date or newer; or that file's name already). Only from
 * a receiver that granted (or was granted) LINKS_WISH, and only of a hard
 * link; else malformed. */
int xfer__link_kept(struct xsess *x, const struct proto_xfer_iter *it)
{
	struct tx_link *l = NULL;
	uint32_t idx;
	uint8_t how;

	if (!(x->o->flags & XFER_F_KEPT_ITEMS) ||
	    proto_xfer_get_kept(it, &idx, &how))
		return LR_EBADMSG;
	xfer__lock(&x->lock);
	l = xfer__link_find(x, idx);
	if (l && l->hard)
		l->kept = how;
	xfer__unlock(&x->lock);
	return l && l->hard ? 0 : LR_EBADMSG;
}

/* A hard link's name left as it was: skipped, said (a file of its own;
 * the link there already is just up to date). Under lock. */
static void kept_told(struct xsess *x, struct tx_link *l)
{
	const char *to = xfer__hl_path(&x->tx.hl, l->to, NULL);
	struct xfile f = { .path = l->path };
	char why[PROTO_MAX_TEXT], esc[ESC_MAX];

	snprintf(why, sizeof(why),
		 "left as it was: a file of its own, not a link to %s",
		 to ? fsio_escape(to, strlen(to), esc, sizeof(esc))
		    : "its file");
	x->res->files_skipped++;
	xfer__file_event(x, &f, true, true,
			 l->kept == PROTO_KEPT_OWN ? why : NULL, 0);
	l->path = f.path; /* NULL when the event took it */
}

/* After XFER_DONE: each kept symlink's event, failed when a FAIL named
 * it; a hard link's linked, or left (KEPT); would be, in a dry run. */
void xfer__links_told(struct xsess *x)
{
	struct xsend *q = &x->tx;
	unsigned i;

	xfer__lock(&x->lock);
	for (i = 0; i < q->nlinks; i++) {
		struct tx_link *l = &q->links[i];
		const char *p = l->path ? l->path : "";

		if (l->fail) {
			x->res->files_failed++;
			xfer__note_failure_at(x, p, l->fail, l->code);
		} else if (l->hard && l->kept) {
			kept_told(x, l);
			continue;
		} else if (l->hard) {
			x->res->files_linked++;
			xfer__link_event(x, p,
					 xfer__hl_path(&q->hl, l->to, NULL),
					 x->o->flags & XFER_F_DRY_RUN);
			continue;
		}
		xfer__path_event(x, p, !l->fail, l->fail, l->code);
	}
	xfer__unlock(&x->lock);
}

void xfer__links_free(struct xsess *x)
{
	unsigned i;

	for (i = 0; i < x->tx.nlinks; i++) {
		free(x->tx.links[i].path);
		free(x->tx.links[i].fail);
	}
	free(x->tx.links);
	x->tx.links = NULL;
	x->tx.nlinks = x->tx.cap_links = 0;
	xfer__hl_free(&x->tx.hl);
}
