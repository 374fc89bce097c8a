// SPDX-License-Identifier: MIT
/*
 * -c/--checksum (rsync's): a regular file is up to date when its content
 * is, whatever its mtime. The sender digests each file it announces and
 * sends the digest in an FDIGEST item before the ENTRY; the receiver
 * digests its copy of the same size the same way (the file digest of
 * docs/PROTOCOL.md 7.6, at the session's chunk size) and plans SKIP when
 * the two agree.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "xfer_int.h"
#include "banned.h"

/* size bytes of fd, chunk by chunk: the chunk digests, then the file
 * digest into out. -ESTALE when the file is shorter than size now. */
static int fd_digest(int fd, uint64_t size, uint32_t chunk,
		     uint8_t out[DIGEST_LEN])
{
	uint64_t n64 = size ? (size - 1) / chunk + 1 : 0;
	uint8_t *buf, *sums;
	uint32_t i, n;
	int r = 0;

	if (n64 > XFER_MAX_CHUNKS)
		return -EFBIG;
	n = (uint32_t)n64;
	buf = malloc(chunk);
	sums = malloc((size_t)n * DIGEST_LEN + 1);
	if (!buf || !sums) {
		free(buf);
		free(sums);
		return -ENOMEM;
	}
	for (i = 0; i < n && !r; i++) {
		uint64_t off = (uint64_t)i * chunk;
		size_t want = size - off < chunk ? (size_t)(size - off) : chunk;
		size_t got = 0;

		while (got < want) {
			ssize_t k = pread(fd, buf + got, want - got,
					  (off_t)(off + got));

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				r = k < 0 ? -errno : -ESTALE;
				break;
			}
			got += (size_t)k;
		}
		if (!r)
			digest_chunk(buf, want, sums + (size_t)i * DIGEST_LEN);
	}
	if (!r)
		digest_file(size, chunk, n, sums, out);
	free(buf);
	free(sums);
	return r;
}

/* Sender: the content's digest of a regular file read through fd, sent
 * before its entry. A file that cannot be read whole now goes without one:
 * the receiver then finds nothing the same and asks for it, and its reads
 * tell what went wrong. */
bool xfer__entry_digest(struct xsess *x, int fd,
			const struct proto_xfer_entry *pe,
			struct proto_xfer_fdigest *d)
{
	if (!(x->o->flags & XFER_F_CHECKSUM) || pe->kind != PROTO_XK_FILE)
		return false;
	d->idx = pe->idx;
	return !fd_digest(fd, pe->size, x->chunk, d->digest);
}

/* Receiver: whether name in dirfd, a regular file of e's size, holds
 * what the sender's digest says (x->rx.fdig, for e->idx). When it does,
 * its mtime becomes the source's (rsync -c -t updates a matching file's
 * times), so that the next run's quick check agrees; not in a dry run. */
bool xfer__same_content(struct xsess *x, int dirfd, const char *name,
			const struct proto_xfer_entry *e)
{
	uint8_t mine[DIGEST_LEN];
	struct stat st;
	bool same;
	int fd;

	if (!x->rx.has_fdig || x->rx.fdig_idx != e->idx)
		return false;
	fd = openat(dirfd, name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return false;
	same = !fstat(fd, &st) && S_ISREG(st.st_mode) &&
	       (uint64_t)st.st_size == e->size &&
	       !fd_digest(fd, e->size, x->chunk, mine) &&
	       !memcmp(mine, x->rx.fdig, DIGEST_LEN);
	if (same && !(x->o->flags & XFER_F_DRY_RUN) &&
	    (st.st_mtim.tv_sec != e->mtime_sec ||
	     (uint32_t)st.st_mtim.tv_nsec != e->mtime_nsec)) {
		struct timespec ts[2] = {
			{ .tv_nsec = UTIME_OMIT },
			{ .tv_sec = e->mtime_sec, .tv_nsec = e->mtime_nsec },
		};

		(void)futimens(fd, ts); /* best effort: it is up to date */
	}
	close(fd);
	return same;
}
