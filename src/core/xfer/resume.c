// SPDX-License-Identifier: MIT
/*
 * Resume: a file of JOURNAL_MIN_CHUNKS chunks or more is received with a
 * journal beside its temporary file, appended with the chunks written and
 * verified once their data has reached the device; a later attempt at the
 * same file (same size, mtime and chunk size) picks up the temporary file
 * and tells the sender which chunks it holds. journal.c is the codec.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "xfer_int.h"
#include "banned.h"

struct held_ctx {
	struct xfile *f;
	uint32_t count;
};

static void held_rec(void *ctx, uint32_t chunk, const uint8_t *digest)
{
	struct held_ctx *hc = ctx;
	struct xfile *f = hc->f;

	/* a journal left by another version of the file may count more
	 * chunks than this one: its header is compared only afterwards */
	if (chunk >= f->nchunks)
		return;
	/* a chunk sent again (its source changed) has a later record: the
	 * data last written, which the latest record names, wins */
	if (f->cstate[chunk] != CS_HELD)
		hc->count++;
	f->cstate[chunk] = CS_HELD;
	memcpy(f->digests + (size_t)chunk * DIGEST_LEN, digest, DIGEST_LEN);
}

/* The held marks journal_read made, cleared: only those chunks are
 * written (the state of a huge file stays untouched memory). */
static void forget_held(struct xfile *f)
{
	uint32_t i;

	for (i = 0; i < f->nchunks; i++)
		if (f->cstate[i])
			f->cstate[i] = CS_NEEDED;
}

/* The journal jname of an earlier attempt, read into f's chunk states:
 * true when it matches the entry. */
static bool journal_read(struct xsess *x, struct xfile *f,
			 const struct proto_xfer_entry *e, const char *jname,
			 struct held_ctx *hc)
{
	struct journal_hdr jh;
	struct stat st;
	size_t cap, nrec;
	uint8_t *jb;
	ssize_t k;
	int jfd;

	/* O_NONBLOCK: a FIFO planted there must not hold us in open() */
	jfd = openat(f->rx.dirfd, jname,
		     O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (jfd < 0)
		return false;
	cap = JOURNAL_HDR_LEN + (size_t)f->nchunks * 2 * JOURNAL_REC_LEN;
	jb = malloc(cap);
	if (!jb || fstat(jfd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > cap) {
		free(jb);
		close(jfd);
		return false;
	}
	k = pread(jfd, jb, cap, 0);
	close(jfd);
	if (k < 0 || journal_decode(jb, (size_t)k, &jh, held_rec, hc, &nrec) ||
	    !journal_matches(&jh, e->size, e->mtime_sec, e->mtime_nsec,
			     x->chunk)) {
		free(jb);
		forget_held(f);
		return false;
	}
	free(jb);
	return true;
}

int xfer__try_resume(struct xsess *x, struct xfile *f,
		     const struct proto_xfer_entry *e, const char *jname)
{
	struct held_ctx hc = { .f = f };
	struct stat st;
	int fd;

	if (!journal_read(x, f, e, jname, &hc))
		return 0;
	fd = fsio_take_temp(f->rx.dirfd, f->rx.tmp);
	if (fd < 0 || fstat(fd, &st) || st.st_nlink != 1 ||
	    (uint64_t)st.st_size != e->size) {
		if (fd >= 0)
			close(fd);
		forget_held(f);
		return fd == -EBUSY ? -EBUSY : 0;
	}
	f->fd = fd;
	f->rx.resumed = true;
	f->rx.jfd = openat(f->rx.dirfd, jname,
			   O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK |
				   O_CLOEXEC);
	if (f->rx.jfd >= 0 && (fstat(f->rx.jfd, &st) || !S_ISREG(st.st_mode))) {
		close(f->rx.jfd); /* replaced since it was read */
		f->rx.jfd = -1;
	}
	f->finished = hc.count;
	return 1;
}

int xfer__put_held(struct xsess *x, struct xfile *f, struct proto_buf *b)
{
	uint32_t i;
	int r;

	for (i = 0; i < f->nchunks; i++) {
		struct proto_xfer_held hd = { .idx = f->idx, .chunk = i };

		if (f->cstate[i] != CS_HELD)
			continue;
		memcpy(hd.digest, f->digests + (size_t)i * DIGEST_LEN,
		       DIGEST_LEN);
		r = xfer__batch_room(x, b, PROTO_XFER_HELD_LEN,
				     PROTO_XFER_PLAN);
		if (r)
			return r;
		proto_put_xfer_held(b, &hd);
		xfer__lock(&x->lock);
		x->bytes_held += xfer__chunk_len(f, i, x->chunk);
		xfer__unlock(&x->lock);
	}
	return 0;
}

void xfer__journal_start(struct xsess *x, struct xfile *f,
			 const struct proto_xfer_entry *e, const char *jname)
{
	struct journal_hdr jh = {
		.size = e->size,
		.mtime_sec = e->mtime_sec,
		.mtime_nsec = e->mtime_nsec,
		.chunk_size = x->chunk,
		.nchunks = f->nchunks,
	};
	uint8_t hb[JOURNAL_HDR_LEN];

	/* without fsync a journal could claim data the disk lost: none */
	if (f->pipe || f->nchunks < JOURNAL_MIN_CHUNKS ||
	    (x->o->flags & (XFER_F_NO_FSYNC | XFER_F_SCRATCH)))
		return;
	journal_encode_hdr(&jh, hb);
	f->rx.jfd = openat(f->rx.dirfd, jname,
			   O_CREAT | O_EXCL | O_WRONLY | O_APPEND | O_NOFOLLOW |
				   O_CLOEXEC,
			   0600);
	if (f->rx.jfd >= 0 && fsio_write_all(f->rx.jfd, hb, sizeof(hb))) {
		close(f->rx.jfd);
		f->rx.jfd = -1;
		unlinkat(f->rx.dirfd, jname, 0);
	}
}

/* The records of the chunks written since the last time, and copies of
 * the file's descriptors: a stream thread may name the file and close
 * them meanwhile. Under lock. */
static uint8_t *journal_take(struct xfile *f, size_t *len, int *dfd, int *jfd)
{
	uint32_t n = f->rx.njpend, i;
	uint8_t *out;

	if (!xfer__used(f) || !n || f->rx.jfd < 0)
		return NULL;
	out = malloc((size_t)n * JOURNAL_REC_LEN);
	if (!out)
		return NULL;
	*dfd = dup(f->fd);
	*jfd = dup(f->rx.jfd);
	if (*dfd < 0 || *jfd < 0) {
		if (*dfd >= 0)
			close(*dfd);
		if (*jfd >= 0)
			close(*jfd);
		free(out);
		return NULL;
	}
	for (i = 0; i < n; i++)
		journal_encode_rec(f->rx.jpend[i],
				   f->digests +
					   (size_t)f->rx.jpend[i] * DIGEST_LEN,
				   out + (size_t)i * JOURNAL_REC_LEN);
	f->rx.njpend = 0;
	*len = (size_t)n * JOURNAL_REC_LEN;
	return out;
}

void xfer__journal_flush(struct xsess *x, struct xfile *f)
{
	size_t len = 0;
	uint8_t *out;
	int dfd = -1, jfd = -1;

	xfer__lock(&x->lock);
	out = journal_take(f, &len, &dfd, &jfd);
	xfer__unlock(&x->lock);
	if (!out)
		return;
	/* the records after the data they describe has reached the device */
	if (!(x->o->flags & XFER_F_NO_FSYNC))
		fdatasync(dfd);
	if (fsio_write_all(jfd, out, len)) {
		/* a journal that cannot grow only costs a resume */
	}
	close(dfd);
	close(jfd);
	free(out);
}

void xfer__journal_flush_all(struct xsess *x)
{
	unsigned i;

	for (i = 0; i < x->wn; i++)
		xfer__journal_flush(x, &x->win[i]);
}
