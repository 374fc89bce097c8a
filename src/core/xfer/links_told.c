// SPDX-License-Identifier: MIT
/*
 * The sender's side of the names a receiver makes at the end, symlinks
 * and hard links (docs/PROTOCOL.md section 7.7): each is done for now at
 * its FILE_DONE, and its outcome is told after XFER_DONE, failed when a
 * FAIL item of the last XFER_ACKS named its idx.
 */
#include <errno.h>
#include <stdlib.h>

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

/* After XFER_DONE: each kept symlink's event, failed when a FAIL named
 * it. */
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
		} else if (l->hard) {
			x->res->files_linked++;
			xfer__link_event(x, p, xfer__hl_path(&q->hl, l->to),
					 false);
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
