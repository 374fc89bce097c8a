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
 *
 * Where the file system shares extents (btrfs, XFS made with reflink), a
 * chunk is cloned from the old copy instead (FICLONERANGE): nothing is
 * written, the new file shares the old one's blocks, and what the
 * temporary file then holds is read back and digested, so that the
 * digest is of what is there even if the old copy changes meanwhile.
 * Elsewhere the first refusal turns cloning off for the file.
 *
 * A large old copy is read by up to SEED_THREADS threads, each over its
 * own run of chunks: writing fresh pages of the temporary file is most
 * of the cost, and it spreads over the cores. Each thread touches only
 * its own chunks' digests and states; the calling thread alone talks to
 * the peer (the keep-alive) and counts what was held once all are back.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "net.h"
#include "xfer_int.h"
#include "banned.h"

#define SEED_THREADS  4u
#define SEED_PART_MIN 16u /* chunks a thread is worth starting for */

/* What one seeding thread needs: the old copy, its run of the chunks to
 * seed, a buffer, the digest of a chunk of zeros (a reserved temporary
 * file reads as zeros already). */
struct seed {
	struct xsess *x;
	struct xfile *f;
	int basis;
	uint64_t basis_size;
	const uint32_t *todo;  /* chunk numbers, ascending */
	uint32_t from, to;     /* todo[from..to) */
	atomic_int *stop;      /* a write failed somewhere: all stop */
	atomic_bool *no_clone; /* the file system shares no extents */
	uint8_t *buf;
	uint8_t zero[DIGEST_LEN];
	uint32_t zero_len;
	int64_t told_ms;
	bool lead;  /* the calling thread: it keeps the link alive */
	bool wrote; /* into the temporary file, even in part */
	int err;    /* the control link failed */
	pthread_t th;
	bool started;
	atomic_bool done;
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

/* Chunk i (len bytes at off) cloned from the old copy, then read back
 * from the temporary file into s->buf: 1 done, 0 not tried, -1 tried
 * and failed, or not read back: the range may hold part of the old
 * copy, so the chunk is copied and written whatever it holds. */
static int seed_clone(struct seed *s, uint64_t off, uint32_t len)
{
	struct file_clone_range cr = { .src_fd = s->basis,
				       .src_offset = off,
				       .src_length = len,
				       .dest_offset = off };

	if (atomic_load(s->no_clone))
		return 0;
	/* the temporary file may change, even when the clone fails */
	s->wrote = true;
	if (ioctl(s->f->fd, FICLONERANGE, &cr)) {
		/* EINVAL on the last chunk: its length (the file's end);
		 * on any other, or another error: none of this file will
		 * clone (block size, nodatacow, no reflink, EXDEV) */
		if (errno != EINVAL || len == s->x->chunk)
			atomic_store(s->no_clone, true);
		return -1;
	}
	/* what is there now is what is digested */
	return fsio_pread_all(s->f->fd, s->buf, len, off) ? -1 : 1;
}

/* Chunk i of the old copy into the temporary file, held with its
 * digest: 1 when held, 0 when the old copy is too short for it or could
 * not be read there, -errno when writing failed (seeding stops). */
static int seed_chunk(struct seed *s, uint32_t i)
{
	struct xfile *f = s->f;
	uint32_t chunk = s->x->chunk;
	uint64_t off = (uint64_t)i * chunk;
	uint32_t len = xfer__chunk_len(f, i, chunk);
	uint8_t *d = f->digests + (size_t)i * DIGEST_LEN;
	int r, clone;

	if (s->basis_size < off + len)
		return 0;
	/* a short chunk only where the old copy ends too: the sender
	 * chooses the new size, and the digest of a few old bytes would
	 * tell them */
	if (len != chunk && s->basis_size != off + len)
		return 0;
	clone = seed_clone(s, off, len);
	if (clone > 0) {
		digest_chunk(s->buf, len, d);
		f->cstate[i] = CS_HELD;
		return 1;
	}
	if (fsio_pread_all(s->basis, s->buf, len, off))
		return 0;
	digest_chunk(s->buf, len, d);
	if (len != s->zero_len) {
		digest_zeros(len, s->zero);
		s->zero_len = len;
	}
	/* a temporary file made now reads as zeros where nothing was
	 * written (fallocate or ftruncate); a resumed one, or one a failed
	 * clone may have touched, may not */
	if (f->rx.resumed || clone < 0 || memcmp(d, s->zero, DIGEST_LEN)) {
		s->wrote = true;
		r = fsio_pwrite_all(f->fd, s->buf, len, off);
		if (r)
			return r;
	}
	f->cstate[i] = CS_HELD; /* this thread's chunk alone */
	return 1;
}

/* One thread's run: chunk by chunk until the old copy ends, a write
 * fails, another thread's did, or the transfer is cancelled. */
static void seed_run(struct seed *s)
{
	const atomic_bool *cancel = s->x->o->cancel;
	uint32_t k;
	int r;

	for (k = s->from; k < s->to; k++) {
		if (atomic_load(s->stop) || (cancel && atomic_load(cancel)))
			return;
		r = seed_chunk(s, s->todo[k]);
		if (r > 0 && s->lead && keep_alive(s->x, s))
			s->err = r = -EIO; /* the link: fatal */
		if (r < 0) /* a write failed: the file will say why */
			atomic_store(s->stop, 1);
		if (r <= 0)
			return;
	}
}

static void *seed_main(void *arg)
{
	struct seed *s = arg;

	seed_run(s);
	atomic_store(&s->done, true);
	return NULL;
}

/* The calling thread waits for helper h, keeping the link alive
 * meanwhile (its own run may end long before: an unreadable part). */
static void seed_wait(struct seed *lead, struct seed *h)
{
	const struct timespec tick = { .tv_sec = 0, .tv_nsec = 10000000 };

	while (!atomic_load(&h->done)) {
		if (!lead->err && keep_alive(lead->x, lead)) {
			lead->err = -EIO;
			atomic_store(lead->stop, 1);
		}
		nanosleep(&tick, NULL);
	}
	pthread_join(h->th, NULL);
}

/* How many threads for n chunks to seed: one per SEED_PART_MIN, no more
 * than the cores or SEED_THREADS. */
static unsigned seed_threads(uint32_t n)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned t = n / SEED_PART_MIN;

	if (cpus > 0 && t > (unsigned long)cpus)
		t = (unsigned)cpus;
	if (t > SEED_THREADS)
		t = SEED_THREADS;
	return t ? t : 1;
}

/* The chunks neither end holds yet, ascending; their count in *n. */
static uint32_t *chunks_to_seed(const struct xfile *f, uint32_t *n)
{
	uint32_t *todo = malloc((size_t)f->nchunks * sizeof(*todo));
	uint32_t i;

	*n = 0;
	if (!todo)
		return NULL;
	for (i = 0; i < f->nchunks; i++)
		if (f->cstate[i] == CS_NEEDED)
			todo[(*n)++] = i;
	return todo;
}

/* Start the helpers (parts 1..t-1) and run part 0 here; a helper that
 * cannot start leaves its part to this thread. */
static void seed_parts(struct seed *s, unsigned t)
{
	unsigned k;

	for (k = 1; k < t; k++)
		s[k].started =
			!pthread_create(&s[k].th, NULL, seed_main, &s[k]);
	seed_run(&s[0]);
	for (k = 1; k < t; k++) {
		if (s[k].started) {
			seed_wait(&s[0], &s[k]);
		} else {
			s[k].lead = true; /* here, it keeps the link alive */
			s[k].told_ms = s[0].told_ms;
			seed_run(&s[k]);
			s[0].told_ms = s[k].told_ms;
		}
	}
}

/* The threads' states for t parts of todo[0..n), each with a buffer:
 * 0, or -ENOMEM with every buffer freed. */
static int seed_setup(struct seed *s, unsigned t, const struct seed *proto,
		      uint32_t n)
{
	unsigned k;

	for (k = 0; k < t; k++) {
		s[k] = *proto;
		s[k].from = (uint32_t)((uint64_t)n * k / t);
		s[k].to = (uint32_t)((uint64_t)n * (k + 1) / t);
		s[k].lead = k == 0;
		atomic_init(&s[k].done, false);
		s[k].buf = malloc(proto->x->chunk);
		if (!s[k].buf) {
			while (k--)
				free(s[k].buf);
			return -ENOMEM;
		}
	}
	return 0;
}

/* What the threads held, counted and journalled in chunk order: the
 * count, or the control link's failure. */
static int seed_collect(struct xfile *f, struct seed *s, unsigned t,
			const uint32_t *todo, uint32_t n)
{
	bool wrote = false;
	uint32_t k, held = 0;
	int err = 0;

	for (k = 0; k < n; k++) {
		if (f->cstate[todo[k]] != CS_HELD)
			continue;
		held++;
		f->finished++;
		if (f->rx.jfd >= 0)
			f->rx.jpend[f->rx.njpend++] = todo[k];
	}
	for (k = 0; k < t; k++) {
		wrote |= s[k].wrote;
		if (!err)
			err = s[k].err;
		free(s[k].buf);
	}
	/* a ZERO chunk over a held one must now clear it */
	if (held || wrote)
		f->rx.resumed = true;
	return err ? err : (int)(held > INT32_MAX ? INT32_MAX : held);
}

int xfer__delta_seed(struct xsess *x, struct xfile *f)
{
	struct seed s[SEED_THREADS], proto = { .x = x, .f = f };
	atomic_bool no_clone = false;
	atomic_int stop = 0;
	uint32_t n, *todo;
	unsigned t;
	int r;

	proto.basis = open_basis(f, &proto.basis_size);
	if (proto.basis < 0)
		return 0;
	todo = chunks_to_seed(f, &n);
	t = seed_threads(n);
	proto.todo = todo;
	proto.stop = &stop;
	proto.no_clone = &no_clone;
	proto.told_ms = net_now_ms();
	if (!todo || !n || grow_jpend(f) || seed_setup(s, t, &proto, n)) {
		free(todo);
		close(proto.basis);
		return 0;
	}
	seed_parts(s, t);
	r = seed_collect(f, s, t, todo, n);
	free(todo);
	close(proto.basis);
	return r;
}
