// SPDX-License-Identifier: MIT
/*
 * The sending side's reading of the receiver's answers (docs/PROTOCOL.md
 * sections 7.4 and 7.5): XFER_PLAN's items (PLAN, HELD, FAIL) and the
 * items of XFER_ACKS (ACK, FAIL, DELETED), each counted and told. The
 * items that change what the sender does next (an ACK FILE_AGAIN, which
 * announces a name again) are send.c's; KEPT is links_told.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfer_int.h"
#include "banned.h"

/* A FAIL item: kept with its entry for the REFUSE or FILE_FAILED that
 * follows, or with a symlink made at the end; one for nothing known is
 * the session's late failure. Its text is the far end's, said so ("at
 * the receiver: ..."), unless this side's said back. Under lock. */
static int fail_item(struct xsess *x, const struct proto_xfer_iter *it)
{
	char why[sizeof(x->tx.late_reason)];
	struct proto_xfer_fail fl;
	struct tx_link *l;
	struct xfile *f;
	int code; /* an errno value; anything else: only that it failed */

	if (proto_xfer_get_fail(it, &fl))
		return LR_EBADMSG;
	code = fl.code && fl.code < 4096 ? -(int)fl.code : -EIO;
	f = xfer__entry(x, fl.idx);
	snprintf(why, sizeof(why), "%s%s", /* not this side's said back */
		 f && f->tx.own_fail == fl.code + 1u ? "" : "at the receiver: ",
		 fl.text);
	l = f ? NULL : xfer__link_find(x, fl.idx);
	if (l && !l->fail) {
		l->fail = strdup(why);
		l->code = code;
		return 0;
	}
	if (!f || f->tx.state == XTX_ENDED) {
		memcpy(x->tx.late_reason, why, sizeof(why));
		x->tx.late_code = code;
		return 0;
	}
	free(f->tx.fail_text);
	f->tx.fail_text = strdup(why);
	f->tx.fail_code = code;
	return 0;
}

/* A file's end as the receiver said it, under lock: counted, its event
 * queued, its slot let go. */
static void file_failed(struct xsess *x, struct xfile *f, const char *dflt)
{
	const char *why = f->tx.fail_text ? f->tx.fail_text : dflt;
	int code = f->tx.fail_text ? f->tx.fail_code : -EIO;

	x->res->files_failed++;
	xfer__note_failure(x, f, why, code);
	xfer__file_event(x, f, false, false, why, code);
	xfer__tx_file_end(x, f);
}

/* ---- the receiver's PLAN ---- */

static int plan_held(struct xsess *x, const struct proto_xfer_iter *it)
{
	struct proto_xfer_held h;
	struct xfile *f;

	if (proto_xfer_get_held(it, &h))
		return LR_EBADMSG;
	f = xfer__entry(x, h.idx);
	if (!f || f->tx.state != XTX_ANNOUNCED || f->kind != PROTO_XK_FILE ||
	    f->pipe || h.chunk >= f->nchunks)
		return LR_EBADMSG;
	f->cstate[h.chunk] = CS_HELD;
	memcpy(f->digests + (size_t)h.chunk * DIGEST_LEN, h.digest, DIGEST_LEN);
	return 0;
}

static int plan_one(struct xsess *x, const struct proto_xfer_iter *it,
		    bool *queued)
{
	struct proto_xfer_plan p;
	struct xfile *f;

	if (proto_xfer_get_plan(it, &p))
		return LR_EBADMSG;
	f = xfer__entry(x, p.idx);
	if (!f || f->tx.state != XTX_ANNOUNCED || f->kind != PROTO_XK_FILE)
		return LR_EBADMSG;
	if (x->o->flags & XFER_F_DRY_RUN) {
		if (p.action == PROTO_XA_RESUME)
			return LR_EBADMSG;
		if (p.action == PROTO_XA_SEND || p.action == PROTO_XA_REPLACE) {
			x->res->files_ok++; /* would be sent */
			xfer__dry_event(x, f, p.action == PROTO_XA_REPLACE);
			xfer__tx_file_end(x, f);
			return 0;
		}
	} else if (p.action == PROTO_XA_REPLACE) {
		return LR_EBADMSG;
	}
	if (p.action == PROTO_XA_SEND || p.action == PROTO_XA_RESUME) {
		xfer__queue_file(x, f);
		*queued = true;
		if (x->tx.nsums)
			xfer__wake(x);
		return 0;
	}
	if (p.action == PROTO_XA_SKIP) {
		x->res->files_skipped++;
		x->bytes_held += f->size;
		xfer__file_event(x, f, true, true, NULL, 0);
		xfer__tx_file_end(x, f);
		return 0;
	}
	file_failed(x, f, "refused");
	return 0;
}

/* Handle PLAN items. The whole message is taken under the lock and a
 * stream thread woken after it, so that the thread finds all the files
 * the message queued: many small files then travel in one record. */
int xfer__tx_on_plan(struct xsess *x, const uint8_t *body, size_t len)
{
	struct proto_xfer_iter it;
	bool queued = false;
	int r;

	proto_xfer_iter_init(&it, body, len);
	xfer__lock(&x->lock);
	while ((r = proto_xfer_iter_next(&it)) == 1) {
		if (it.tag == PROTO_T_HELD)
			r = plan_held(x, &it);
		else if (it.tag == PROTO_T_FAIL)
			r = fail_item(x, &it);
		else if (it.tag == PROTO_T_PLAN)
			r = plan_one(x, &it, &queued);
		else
			r = LR_EBADMSG;
		if (r)
			break;
	}
	if (queued && x->tx.waiters)
		pthread_cond_signal(&x->cv); /* it passes the word on */
	xfer__unlock(&x->lock);
	return r;
}

/* ---- the receiver's ACKS ---- */

/* Queue chunk chunk of entry idx to be sent again. Under lock. */
static int ack_resend(struct xsess *x, uint32_t idx, uint32_t chunk)
{
	struct xsend *q = &x->tx;

	if (q->nretries == q->cap_retries) {
		unsigned nc = q->cap_retries ? q->cap_retries * 2 : 64;
		struct retry *nr = realloc(q->retries, nc * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		q->retries = nr;
		q->cap_retries = nc;
	}
	q->retries[q->nretries++] = (struct retry){ idx, chunk };
	pthread_cond_broadcast(&x->cv);
	return 0;
}

/* One ACK item. */
static int ack_one(struct xsess *x, const struct proto_xfer_ack *a)
{
	bool chunk = a->status == PROTO_XS_CHUNK_OK ||
		     a->status == PROTO_XS_CHUNK_BAD;
	char esc[ESC_MAX];
	struct xfile *f;
	int r = 0;

	/* stream threads release slots: look at it under the lock; a file
	 * that ended takes no more acknowledgements */
	xfer__lock(&x->lock);
	f = xfer__entry(x, a->idx);
	if (!f || f->tx.state == XTX_ENDED ||
	    (chunk && a->chunk >= f->nchunks)) {
		xfer__unlock(&x->lock);
		return LR_EBADMSG;
	}
	switch (a->status) {
	case PROTO_XS_CHUNK_OK: x->bytes_done += a->bytes; break;
	case PROTO_XS_CHUNK_BAD:
		if (++f->tries[a->chunk] > XFER_MAX_RETRIES) {
			fsio_escape(xfer__path(f), strlen(xfer__path(f)), esc,
				    sizeof(esc));
			r = LR_EDIGEST;
			break;
		}
		r = ack_resend(x, a->idx, a->chunk);
		break;
	case PROTO_XS_FILE_DONE:
		if (f->kind == PROTO_XK_FILE)
			x->res->files_ok++;
		if (f->kind == PROTO_XK_HARDLINK) /* told at the end */
			r = xfer__link_keep(x, f);
		else if (x->o->flags & XFER_F_DRY_RUN) /* would be made */
			xfer__dry_event(x, f, false);
		else if (f->kind != PROTO_XK_FILE && f->kind != PROTO_XK_DIR)
			r = xfer__link_keep(x, f); /* made, told at the end */
		else
			xfer__file_event(x, f, true, false, NULL, 0);
		xfer__tx_file_end(x, f);
		break;
	default:
		if (f->tx.withdrawn) /* as asked: it is announced again */
			xfer__tx_file_end(x, f);
		else
			file_failed(x, f, "failed");
	}
	xfer__unlock(&x->lock);
	if (r == LR_EDIGEST)
		xfer__fatal(x, r, "%s: chunk %u failed verification %u times",
			    esc, a->chunk, XFER_MAX_RETRIES + 1);
	return r;
}

/* An entry the receiver's --delete removed: told. */
static int deleted_item(struct xsess *x, const struct proto_xfer_iter *it)
{
	struct proto_xfer_deleted d;
	char path[PROTO_XFER_MAX_PATH + 1];

	/* the decoder bounds path_len by PROTO_XFER_MAX_PATH */
	if (proto_xfer_get_deleted(it, &d) || !(x->o->flags & XFER_F_DELETE))
		return LR_EBADMSG;
	memcpy(path, d.path, d.path_len);
	path[d.path_len] = 0;
	xfer__deleted(x, path);
	return 0;
}

int xfer__tx_acks_item(struct xsess *x, const struct proto_xfer_iter *it)
{
	struct proto_xfer_ack a;
	int r;

	if (it->tag == PROTO_T_FAIL) {
		xfer__lock(&x->lock);
		r = fail_item(x, it);
		xfer__unlock(&x->lock);
		return r;
	}
	if (it->tag == PROTO_T_DELETED)
		return deleted_item(x, it);
	if (proto_xfer_get_ack(it, &a) || a.status == PROTO_XS_FILE_AGAIN)
		return LR_EBADMSG;
	return ack_one(x, &a);
}
