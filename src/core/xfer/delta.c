// SPDX-License-Identifier: MIT
/*
 * Delta of a changed file: when a regular file at the destination is
 * replaced, the receiver reads its old copy chunk by chunk at the
 * session's chunk size, digests each chunk, writes it into the new
 * temporary file at the same offset, and holds it as it holds a resumed
 * chunk (HELD items, plan RESUME). The sender reads and digests its own
 * chunks and sends only those whose digests differ. The old file stays
 * under its name until the new one is complete and verified.
 *
 * Fixed offsets: a change in place and growth or truncation at the end
 * leave the other chunks held; an insertion or removal shifts every
 * later chunk, which then travels whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "net.h"
#include "xfer_int.h"
#include "banned.h"

/* What seeding needs: the old copy, a buffer, the digest of a chunk of
 * zeros (a reserved temporary file reads as zeros already). */
struct seed {
	int basis;
	uint64_t basis_size;
	uint8_t *buf;
	uint8_t zero[DIGEST_LEN];
	uint32_t zero_len;
	int64_t told_ms;
	bool wrote; /* into the temporary file, even in part */
};

bool xfer__delta_wanted(const struct xsess *x, const struct xfile *f)
{
	uint32_t no = XFER_F_WHOLE_FILE | XFER_F_STDOUT | XFER_F_SCRATCH;

	return !(x->o->flags & no) && !f->pipe &&
	       f->nchunks >= DELTA_MIN_CHUNKS;
}

/* The old copy under f's name: a regular file (looked at before it is
 * opened: a device node is never opened), opened without following a
 * symlink or waiting; -1 when there is none to use. */
static int open_basis(const struct xfile *f, uint64_t *size)
{
	struct stat st, st2;
	int fd;

	if (fstatat(f->rx.dirfd, f->rx.name, &st, AT_SYMLINK_NOFOLLOW) ||
	    !S_ISREG(st.st_mode) || st.st_size <= 0)
		return -1;
	fd = openat(f->rx.dirfd, f->rx.name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st2) || !S_ISREG(st2.st_mode) ||
	    st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
		close(fd);
		return -1;
	}
	*size = (uint64_t)st2.st_size;
	return fd;
}

/* Room to journal every chunk twice: once seeded, once sent again when
 * the sender finds it changed. */
static int grow_jpend(struct xfile *f)
{
	uint32_t *p;

	if (f->rx.jfd < 0)
		return 0;
	p = realloc(f->rx.jpend, (size_t)f->nchunks * 2 * sizeof(*p));
	if (!p)
		return -ENOMEM;
	f->rx.jpend = p;
	return 0;
}

/* An empty XFER_ACKS every KEEPALIVE_MS while a large old copy is read,
 * so that the sender does not take the silence for a dead link. Only
 * that: queued acknowledgements wait for this message's plans (a file
 * acknowledged before its plan is a broken message to the sender). */
static int keep_alive(struct xsess *x, struct seed *s)
{
	uint8_t kb[PROTO_HDR_LEN + 8];
	struct proto_buf b;

	if (net_now_ms() - s->told_ms < KEEPALIVE_MS)
		return 0;
	proto_buf_init(&b, kb, sizeof(kb));
	proto_msg_begin(&b, PROTO_XFER_ACKS);
	if (proto_msg_end(&b) || xfer__ctrl_send(x, &b))
		return -EIO;
	s->told_ms = net_now_ms();
	atomic_store(&x->last_activity_ms, s->told_ms);
	return 0;
}

/* Chunk i of the old copy into the temporary file, held with its
 * digest: 1 when held, 0 when the old copy is too short for it, -errno
 * when reading or writing failed (seeding stops there). */
static int seed_chunk(struct xsess *x, struct xfile *f, struct seed *s,
		      uint32_t i)
{
	uint64_t off = (uint64_t)i * x->chunk;
	uint32_t len = xfer__chunk_len(f, i, x->chunk);
	uint8_t *d = f->digests + (size_t)i * DIGEST_LEN;
	int r;

	if (s->basis_size < off + len)
		return 0;
	/* a short chunk only where the old copy ends too: the sender
	 * chooses the new size, and the digest of a few old bytes would
	 * tell them */
	if (len != x->chunk && s->basis_size != off + len)
		return 0;
	r = fsio_pread_all(s->basis, s->buf, len, off);
	if (r)
		return r;
	digest_chunk(s->buf, len, d);
	if (len != s->zero_len) {
		digest_zeros(len, s->zero);
		s->zero_len = len;
	}
	/* a temporary file made now reads as zeros where nothing was
	 * written (fallocate or ftruncate); a resumed one may not */
	if (f->rx.resumed || memcmp(d, s->zero, DIGEST_LEN)) {
		s->wrote = true;
		r = fsio_pwrite_all(f->fd, s->buf, len, off);
		if (r)
			return r;
	}
	f->cstate[i] = CS_HELD;
	f->finished++;
	if (f->rx.jfd >= 0)
		f->rx.jpend[f->rx.njpend++] = i;
	return 1;
}

int xfer__delta_seed(struct xsess *x, struct xfile *f)
{
	struct seed s = { .told_ms = net_now_ms() };
	uint32_t i;
	int held = 0, r = 1, fatal = 0;

	s.basis = open_basis(f, &s.basis_size);
	if (s.basis < 0)
		return 0;
	s.buf = malloc(x->chunk);
	if (!s.buf || grow_jpend(f)) {
		free(s.buf);
		close(s.basis);
		return 0;
	}
	/* the old copy ending (0) or failing to read (< 0) ends seeding:
	 * what is held so far stays held */
	for (i = 0; i < f->nchunks && r > 0 && !fatal; i++) {
		if (f->cstate[i] != CS_NEEDED)
			continue;
		if (x->o->cancel && atomic_load(x->o->cancel))
			break;
		r = seed_chunk(x, f, &s, i);
		if (r > 0) {
			held++;
			fatal = keep_alive(x, &s);
		}
	}
	free(s.buf);
	close(s.basis);
	/* a ZERO chunk over a held one must now clear it */
	if (held || s.wrote)
		f->rx.resumed = true;
	return fatal ? fatal : held;
}
