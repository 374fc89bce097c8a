// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "digest.h"
#include "fsio.h"
#include "journal.h"
#include "link.h"
#include "xfer.h"
#include "banned.h"

#define CTRL_TIMEOUT_MS	   10000
#define IDLE_MS		   30000 /* a peer silent this long has gone */
#define ACK_FLUSH_MS	   50
#define WLOCKS		   16 /* receiver write locks, by slot */
#define JOURNAL_MS	   1000
#define JOURNAL_MIN_CHUNKS 4  /* smaller files simply start again */
#define READY_MAX	   64 /* receiver: small files named together */
#define MSG_BUF		   (PROTO_MAX_BODY + PROTO_HDR_LEN + CONN_REC_HDR + CRYPTO_TAG_LEN)
#define DIRH_MAX	   16
/* Chunks of one file at most: its arrays cost 19 bytes a chunk (4 TiB at
 * 1 MiB chunks, 32 TiB at 8 MiB); larger files are refused. */
#define XFER_MAX_CHUNKS (1u << 22)
/* How far past the chunks seen so far a pipe's next chunk may be (its
 * arrays grow with the chunk number the peer gives). */
#define PIPE_LEAD 4096u
#define SLOT(i)	  ((i) % XFER_WINDOW)

enum cstate {
	CS_NEEDED = 0,
	CS_HELD = 1,	 /* receiver: from the journal; sender: to verify */
	CS_INFLIGHT = 2, /* receiver: being written */
	CS_GOT = 3,	 /* receiver: verified; sender: sent or matched */
	CS_RESEND = 4,	 /* receiver: bad digest, asked again */
};

/* A directory open for the files being received in it, shared. */
struct dirh {
	int fd;
	unsigned refs; /* files of the window using it */
	bool dirty;    /* names changed: fsync it */
	bool fresh;    /* made by this session: names in it are free */
	bool gone;     /* rel was made anew since: not found by name */
	uint64_t tick; /* last use, to reuse the oldest free handle */
	char rel[FSIO_MAX_PATH + 1];
};

/* One entry of the window, on either side. */
struct xfile {
	bool used;
	bool planned; /* sender: work queued or answered */
	bool done;    /* no more work for this file */
	bool failed;
	bool pipe;	   /* size unknown until its SUM */
	bool sum_sent;	   /* sender */
	bool have_sum;	   /* receiver */
	bool in_fifo;	   /* sender: in the work FIFO */
	bool dead;	   /* sender: finished; released when inflight is 0 */
	bool from_pipe;	   /* its size came from its SUM */
	bool implicit_sum; /* one chunk or none: no SUM travels for it */
	bool anon;	   /* receiver: fd is unnamed (O_TMPFILE), tmp empty */
	unsigned inflight; /* chunks a stream thread is working on */
	uint32_t idx;
	uint8_t kind, eflags;
	uint16_t mode;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint64_t size;
	uint32_t nchunks, cap; /* chunks known / room in the arrays */
	uint8_t *digests;      /* nchunks * DIGEST_LEN */
	uint8_t *cstate;
	uint8_t *tries;
	uint32_t cursor;   /* sender: next chunk to take */
	uint32_t finished; /* chunks hashed (sender) or verified (receiver) */
	uint32_t sent;	   /* distinct chunks sent / received this session */
	int fd;		   /* source, or the temporary file */
	int dirfd;	   /* receiver: parent directory */
	struct dirh *dh;   /* receiver: dirfd belongs to this handle */
	uint16_t cmode;	   /* receiver: mode the temporary file got */
	int jfd;	   /* receiver: journal, -1 without */
	uint32_t *jpend;   /* receiver: chunks to journal */
	uint32_t njpend;
	struct proto_xfer_sum sum; /* receiver: what the sender said */
	/* its own allocation: a window of 256 paths of 4 KiB would make
	 * every session touch a megabyte and every release clear 4 KiB */
	char *path;
	char name[FSIO_MAX_NAME + 1], tmp[FSIO_MAX_NAME + 1];
	char reason[PROTO_MAX_TEXT + 1];
};

static const char *fpath(const struct xfile *f)
{
	return f->path ? f->path : "";
}

struct retry {
	uint32_t slot, chunk;
};

/* A directory whose mode and time are applied at the end, or a symlink
 * made then. */
struct late {
	struct late *next;
	uint8_t kind;
	uint16_t mode;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	char *path;
	char *target;
};

struct xsess {
	struct xfer_conns *cs;
	const struct xfer_opts *o;
	const struct xfer_callbacks *cb;
	struct xfer_result *res;
	bool sender;
	uint32_t chunk;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int evfd;
	_Atomic bool abort;
	_Atomic bool closing;
	bool no_anon;		/* receiver: O_TMPFILE refused here once */
	_Atomic unsigned ended; /* receiver: stream threads finished */
	int error;		/* first fatal error, under lock */
	struct lr_err err;
	struct xfile win[XFER_WINDOW];
	/* sender */
	uint32_t fifo[XFER_WINDOW];
	unsigned fifo_head, fifo_len;
	unsigned waiters; /* stream threads waiting for work */
	struct retry *retries;
	unsigned nretries, cap_retries;
	uint32_t sums[XFER_WINDOW]; /* entries whose SUM is ready */
	unsigned nsums;
	pthread_mutex_t pipe_lock;
	/* receiver: one writer per file at a time (by slot), see recv_unit */
	pthread_mutex_t wlock[WLOCKS];
	int64_t pace_next_us;
	/* receiver */
	struct proto_xfer_ack *acks;
	unsigned nacks, cap_acks;
	bool ack_wake;	 /* the ack queue went from empty to not empty */
	bool any_failed; /* some file failed: scan the window for them */
	_Atomic bool wake_pending; /* the event counter was written */
	bool woken;		   /* control thread: a stream thread woke it */
	uint32_t finals[XFER_WINDOW]; /* slots ready to finalize */
	unsigned nfinals;
	bool fail_pending[XFER_WINDOW];
	int destfd, outfd;
	uint32_t next_out;  /* stdout: next chunk to write */
	uint32_t announced; /* receiver: entries announced so far */
	char late_reason[PROTO_MAX_TEXT + 1]; /* sender: a FAIL without ACK */
	struct dirh dirh[DIRH_MAX]; /* receiver: directories of the window */
	uint64_t dirh_tick;
	mode_t umask;		      /* receiver: the process's, read once */
	uint64_t dropped, drop_limit; /* chunks of failed files drained */
	pthread_cond_t out_cv;
	/* both */
	uint64_t bytes_done, bytes_held;
	uint64_t files_done;
	_Atomic int64_t last_activity_ms;
	struct xfer_waits waits; /* summed at thread exit, under lock */
	int64_t t0_us;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void wake(struct xsess *x)
{
	uint64_t v = 1;

	if (atomic_exchange(&x->wake_pending, true))
		return; /* the control thread has not looked yet */
	if (write(x->evfd, &v, sizeof(v)) < 0) {
		/* the counter is full: the control thread is awake anyway */
	}
}

/* Record the first fatal error and stop everyone. */
static void fatal(struct xsess *x, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fatal(struct xsess *x, int code, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&x->lock);
	if (!x->error) {
		x->error = code ? code : -EIO;
		x->err.code = x->error;
		va_start(ap, fmt);
		vsnprintf(x->err.msg, sizeof(x->err.msg), fmt, ap);
		va_end(ap);
	}
	atomic_store(&x->abort, true);
	pthread_cond_broadcast(&x->cv);
	pthread_cond_broadcast(&x->out_cv);
	pthread_mutex_unlock(&x->lock);
	wake(x);
}

static int sess_init(struct xsess *x, struct xfer_conns *cs,
		     const struct xfer_opts *o, const struct xfer_callbacks *cb,
		     struct xfer_result *res, bool sender)
{
	pthread_condattr_t ca;
	unsigned i;

	memset(x, 0, sizeof(*x));
	x->cs = cs;
	x->o = o;
	x->cb = cb;
	x->res = res;
	x->sender = sender;
	x->chunk = o->chunk_size ? o->chunk_size : XFER_DEFAULT_CHUNK;
	x->destfd = x->outfd = -1;
	for (i = 0; i < XFER_WINDOW; i++)
		x->win[i].fd = x->win[i].dirfd = x->win[i].jfd = -1;
	x->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (x->evfd < 0)
		return -errno;
	pthread_mutex_init(&x->lock, NULL);
	pthread_mutex_init(&x->pipe_lock, NULL);
	for (i = 0; i < WLOCKS; i++)
		pthread_mutex_init(&x->wlock[i], NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&x->cv, &ca);
	pthread_cond_init(&x->out_cv, &ca);
	pthread_condattr_destroy(&ca);
	x->t0_us = net_now_us();
	atomic_store(&x->last_activity_ms, net_now_ms());
	{
		/* plans and acknowledgements are small and must not wait
		 * for the peer's delayed ACK (Nagle) */
		int one = 1;

		setsockopt(cs->ctrl->fd, IPPROTO_TCP, TCP_NODELAY, &one,
			   sizeof(one));
	}
	memset(res, 0, sizeof(*res));
	res->is_sender = sender;
	res->streams = cs->n;
	res->chunk_size = x->chunk;
	res->authenticated = cs->ctrl->secure;
	res->cipher = cs->ctrl->cipher;
	return 0;
}

static void file_release(struct xfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	if (f->dh)
		f->dh->refs--;
	else if (f->dirfd >= 0)
		close(f->dirfd);
	if (f->jfd >= 0)
		close(f->jfd);
	free(f->digests);
	free(f->cstate);
	free(f->tries);
	free(f->jpend);
	free(f->path);
	memset(f, 0, sizeof(*f));
	f->fd = f->dirfd = f->jfd = -1;
}

static void sess_fini(struct xsess *x)
{
	unsigned i;

	for (i = 0; i < XFER_WINDOW; i++)
		if (x->win[i].used)
			file_release(&x->win[i]);
	free(x->retries);
	free(x->acks);
	close(x->evfd);
	pthread_mutex_destroy(&x->lock);
	pthread_mutex_destroy(&x->pipe_lock);
	for (i = 0; i < WLOCKS; i++)
		pthread_mutex_destroy(&x->wlock[i]);
	pthread_cond_destroy(&x->cv);
	pthread_cond_destroy(&x->out_cv);
}

/* Chunks of a file of size bytes, in 64 bits (no overflow near 2^64). */
static uint64_t chunks_of64(uint64_t size, uint32_t chunk)
{
	return size / chunk + (size % chunk != 0);
}

/* The same for a size already checked against XFER_MAX_CHUNKS. */
static uint32_t chunks_of(uint64_t size, uint32_t chunk)
{
	return (uint32_t)chunks_of64(size, chunk);
}

static uint32_t chunk_len(const struct xfile *f, uint32_t chunk, uint32_t cs)
{
	uint64_t off = (uint64_t)chunk * cs;

	if (f->pipe)
		return cs;
	return f->size - off < cs ? (uint32_t)(f->size - off) : cs;
}

/* Make room for n chunks in a file's arrays. */
static int file_grow(struct xfile *f, uint32_t n)
{
	uint32_t cap = f->cap ? f->cap : 16;
	uint8_t *d, *c, *t;

	if (n <= f->cap)
		return 0;
	while (cap < n)
		cap = cap > UINT32_MAX / 2 ? n : cap * 2;
	d = realloc(f->digests, (size_t)cap * DIGEST_LEN);
	if (!d)
		return -ENOMEM;
	f->digests = d;
	c = realloc(f->cstate, cap);
	if (!c)
		return -ENOMEM;
	f->cstate = c;
	t = realloc(f->tries, cap);
	if (!t)
		return -ENOMEM;
	f->tries = t;
	memset(f->cstate + f->cap, 0, cap - f->cap);
	memset(f->tries + f->cap, 0, cap - f->cap);
	f->cap = cap;
	return 0;
}

static void emit(struct xsess *x, struct xfer_event *ev)
{
	if (x->cb && x->cb->event)
		x->cb->event(x->cb->ctx, ev);
}

static void progress_fill(struct xsess *x, struct xfer_progress *p,
			  uint64_t total, bool known, uint64_t files_total)
{
	pthread_mutex_lock(&x->lock);
	p->bytes_done = x->bytes_done + x->bytes_held;
	p->files_done = x->files_done;
	pthread_mutex_unlock(&x->lock);
	p->bytes_total = total;
	p->total_known = known;
	p->files_total = files_total;
	p->elapsed = (double)(net_now_us() - x->t0_us) / 1e6;
}

/* Progress events every o->progress_ms, the current rate over the last
 * two seconds (acknowledgements come in bursts of whole chunks). */
struct pclock {
	int64_t next;
	int64_t ms[9];
	uint64_t bytes[9];
	unsigned n;
};

static void progress_tick(struct xsess *x, struct pclock *pc, int64_t now,
			  uint64_t total, bool known, uint64_t files)
{
	struct xfer_event ev = { .kind = XFER_EV_PROGRESS };
	int period = x->o->progress_ms ? x->o->progress_ms : 1000;
	unsigned keep = (unsigned)(2000 / period) + 1, i;

	if (now < pc->next)
		return;
	if (keep > 9)
		keep = 9;
	progress_fill(x, &ev.p, total, known, files);
	if (pc->n == keep) {
		for (i = 1; i < keep; i++) {
			pc->ms[i - 1] = pc->ms[i];
			pc->bytes[i - 1] = pc->bytes[i];
		}
		pc->n--;
	}
	pc->ms[pc->n] = now;
	pc->bytes[pc->n] = ev.p.bytes_done;
	pc->n++;
	if (pc->n > 1 && now > pc->ms[0])
		ev.p.rate_now = (double)(ev.p.bytes_done - pc->bytes[0]) *
				1000.0 / (double)(now - pc->ms[0]);
	if (x->o->progress_ms)
		emit(x, &ev);
	pc->next = now + period;
}

static void file_event(struct xsess *x, const struct xfile *f, bool ok,
		       bool skipped, const char *reason)
{
	struct xfer_event ev = { .kind = XFER_EV_FILE };
	char esc[FSIO_MAX_PATH * 4 + 1];

	ev.path = fsio_escape(fpath(f), strlen(fpath(f)), esc, sizeof(esc));
	ev.size = f->size;
	ev.ok = ok;
	ev.skipped = skipped;
	ev.reason = reason;
	emit(x, &ev);
}

static void note_failure(struct xsess *x, const struct xfile *f,
			 const char *reason)
{
	char esc[FSIO_MAX_PATH * 4 + 1];

	if (x->res->first_failure[0])
		return;
	snprintf(x->res->first_failure, sizeof(x->res->first_failure), "%s: %s",
		 fsio_escape(fpath(f), strlen(fpath(f)), esc, sizeof(esc)),
		 reason);
}

/* Send one message built in b on the control connection. */
static int ctrl_send(struct xsess *x, struct proto_buf *b)
{
	int r;

	if (b->err)
		return b->err;
	if (!b->len)
		return 0;
	r = conn_send_msg(x->cs->ctrl, b->p, b->len,
			  net_now_ms() + CTRL_TIMEOUT_MS);
	b->len = 0;
	b->start = 0;
	return r;
}

static int ctrl_send_raw(struct conn *c, struct proto_buf *b)
{
	if (b->err)
		return b->err;
	return conn_send_msg(c, b->p, b->len, net_now_ms() + CTRL_TIMEOUT_MS);
}

static int send_error_msg(struct xsess *x, uint32_t code, const char *text)
{
	struct proto_error pe = { .code = code };
	uint8_t buf[PROTO_HDR_LEN + PROTO_MAX_TEXT + 32];
	struct proto_buf b;

	snprintf(pe.text, sizeof(pe.text), "%s", text);
	proto_buf_init(&b, buf, sizeof(buf));
	if (proto_encode_error(&b, &pe))
		return -ENOBUFS;
	return conn_send_msg(x->cs->ctrl, buf, b.len, net_now_ms() + 2000);
}

static int peer_error(const uint8_t *body, size_t len, struct lr_err *err)
{
	struct proto_error pe;

	if (proto_decode_error(body, len, &pe))
		return lr_err_set(err, LR_EBADMSG,
				  "peer sent a malformed error message");
	if (pe.code == PROTO_ERR_AUTH)
		return lr_err_set(err, LR_EAUTH, "authentication failed: %s",
				  pe.text);
	if (pe.code == PROTO_ERR_BUSY)
		return lr_err_set(err, LR_EBUSY, "%s", pe.text);
	return lr_err_set(err, LR_EPEER, "peer: %s", pe.text);
}

static void data_sockopts(struct xsess *x)
{
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	unsigned i;
	int one = 1;

	for (i = 0; i < x->cs->n; i++) {
		struct conn *c = &x->cs->data[i];

		setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->abort = &x->abort;
		c->timing = true;
	}
}

/* Let the file descriptors of a full window fit. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max &&
	    rl.rlim_cur < 4096) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void add_waits(struct xsess *x, const struct conn *c, uint64_t disk_ns,
		      uint64_t hash_ns, int64_t t0)
{
	pthread_mutex_lock(&x->lock);
	x->waits.disk_us += disk_ns / 1000;
	x->waits.hash_us += hash_ns / 1000;
	x->waits.cipher_us += c->cipher_ns / 1000;
	x->waits.net_us += c->io_ns / 1000;
	x->waits.wall_us += (uint64_t)(net_now_us() - t0);
	x->waits.streams++;
	pthread_mutex_unlock(&x->lock);
}

static bool window_empty(struct xsess *x);
static int recv_service(struct xsess *x, uint8_t *buf);
static int finish_file(struct xsess *x, struct xfile *f, bool synced);
static int finish_files(struct xsess *x, struct xfile *const *fs, unsigned n,
			bool synced);
static int dirh_get(struct xsess *x, const char *rel, struct xfile *f);

/*
 * One turn of a control loop: wait up to tmo ms for the peer or a stream
 * thread. 1 with a message in rbuf and *h, 0 without one, or a negative
 * error with err filled and the peer told why (peer and me name the two
 * sides in messages).
 */
static int ctrl_turn(struct xsess *x, int64_t tmo, uint8_t *rbuf,
		     struct proto_hdr *h, const char *peer, const char *me,
		     struct lr_err *err)
{
	struct pollfd pf[2] = {
		{ .fd = x->cs->ctrl->fd, .events = POLLIN },
		{ .fd = x->evfd, .events = POLLIN },
	};
	char text[64];
	int r;

	if (poll(pf, 2, (int)tmo) < 0 && errno != EINTR)
		return lr_err_setc(err, -errno, "poll");
	if (x->o->cancel && atomic_load(x->o->cancel)) {
		snprintf(text, sizeof(text), "the %s was interrupted", me);
		send_error_msg(x, PROTO_ERR_INTERNAL, text);
		return lr_err_set(err, -ECANCELED, "interrupted");
	}
	if (pf[1].revents) {
		uint64_t v;

		x->woken = true;
		/* drain first, then allow the next write: cleared before
		 * the read, a wake between the two would be drained with
		 * wake_pending left set, and no stream thread would write
		 * the counter again for the rest of the session (the loop
		 * then ran on its timer alone) */
		if (read(x->evfd, &v, sizeof(v)) < 0) {
			/* drained already */
		}
		atomic_store(&x->wake_pending, false);
	}
	if (atomic_load(&x->abort)) {
		pthread_mutex_lock(&x->lock);
		*err = x->err;
		r = x->error;
		pthread_mutex_unlock(&x->lock);
		send_error_msg(x, PROTO_ERR_BAD_REQUEST, err->msg);
		return r ? r : -ECANCELED;
	}
	if (!pf[0].revents)
		return 0;
	r = conn_recv_msg(x->cs->ctrl, rbuf, MSG_BUF, h,
			  net_now_ms() + CTRL_TIMEOUT_MS, err);
	if (r == LR_ECLOSED)
		return lr_err_set(err, r, "the %s closed the connection", peer);
	if (r) {
		/* tell the peer why (a forged record) */
		send_error_msg(x, PROTO_ERR_BAD_REQUEST, err->msg);
		return r;
	}
	atomic_store(&x->last_activity_ms, net_now_ms());
	return 1;
}

/* ======================== the sending side ======================== */

/* One entry of the walk. */
struct wentry {
	uint8_t kind;
	struct stat st;
	int fd; /* files in pass 2: opened for reading */
	bool is_stdin;
	char target[PROTO_XFER_MAX_PATH + 1];
	uint16_t target_len;
};

struct wframe {
	DIR *d;
	size_t plen; /* path length before this directory's entries */
};

struct walker {
	const struct xfer_source *src;
	bool open_files;
	unsigned arg;
	struct wframe st[FSIO_MAX_DEPTH];
	unsigned depth;
	char path[FSIO_MAX_PATH + 1];
	size_t plen;
	struct lr_err *err;
};

static void walk_init(struct walker *w, const struct xfer_source *src,
		      bool open_files, struct lr_err *err)
{
	memset(w, 0, sizeof(*w));
	w->src = src;
	w->open_files = open_files;
	w->err = err;
}

static void walk_fini(struct walker *w)
{
	while (w->depth)
		closedir(w->st[--w->depth].d);
}

static bool special(const struct stat *st)
{
	return !S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode) &&
	       !S_ISLNK(st->st_mode);
}

/* Fill e for name in dirfd (already lstat'ed into e->st). */
static int walk_fill(struct walker *w, int dirfd, const char *name,
		     struct wentry *e)
{
	ssize_t k;
	int fd;

	e->fd = -1;
	e->is_stdin = false;
	e->target_len = 0;
	if (S_ISLNK(e->st.st_mode)) {
		e->kind = PROTO_XK_SYMLINK;
		k = readlinkat(dirfd, name, e->target, PROTO_XFER_MAX_PATH);
		if (k <= 0)
			return lr_err_setc(w->err, k < 0 ? -errno : -EINVAL,
					   "reading the symlink %s", w->path);
		e->target[k] = 0;
		e->target_len = (uint16_t)k;
		return 0;
	}
	if (S_ISDIR(e->st.st_mode)) {
		DIR *d;

		if (w->depth >= FSIO_MAX_DEPTH)
			return lr_err_set(w->err, -ELOOP,
					  "%s: tree deeper than %u levels",
					  w->path, FSIO_MAX_DEPTH);
		e->kind = PROTO_XK_DIR;
		fd = openat(dirfd, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return lr_err_setc(w->err, -errno, "opening %s",
					   w->path);
		d = fdopendir(fd);
		if (!d) {
			close(fd);
			return lr_err_setc(w->err, -errno, "reading %s",
					   w->path);
		}
		w->st[w->depth].d = d;
		w->st[w->depth].plen = w->plen;
		w->depth++;
		return 0;
	}
	e->kind = PROTO_XK_FILE;
	if (w->open_files) {
		fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return lr_err_setc(w->err, -errno, "opening %s",
					   w->path);
		/* e->st came from fstatat a moment ago; a file that
		 * changes size since is caught by its reads */
		e->fd = fd;
	}
	return 0;
}

static int walk_set_path(struct walker *w, size_t base, const char *name)
{
	size_t n = strlen(name);

	if (base + (base ? 1 : 0) + n > FSIO_MAX_PATH)
		return lr_err_set(w->err, -ENAMETOOLONG,
				  "a path below %.*s is longer than %u bytes",
				  (int)base, w->path, FSIO_MAX_PATH);
	if (base)
		w->path[base++] = '/';
	memcpy(w->path + base, name, n + 1);
	w->plen = base + n;
	return 0;
}

/* A top-level source. */
static int walk_top(struct walker *w, const char *arg, struct wentry *e)
{
	const struct xfer_source *s = w->src;
	char parent[FSIO_MAX_PATH + 1], name[FSIO_MAX_NAME + 1];
	const char *why;
	int pfd, r;

	if (s->rootfd < 0 && !strcmp(arg, "-")) {
		r = walk_set_path(w, 0,
				  s->stdin_name ? s->stdin_name : "stdin");
		if (r)
			return r;
		memset(&e->st, 0, sizeof(e->st));
		e->st.st_mode = S_IFREG | 0644;
		e->st.st_mtime = time(NULL);
		e->kind = PROTO_XK_FILE;
		e->is_stdin = true;
		e->fd = w->open_files ? STDIN_FILENO : -1;
		e->target_len = 0;
		return 0;
	}
	if (s->rootfd >= 0) {
		/* pull: a path below the root, never through a symlink */
		if (fsio_path_check(arg, strlen(arg), &why))
			return lr_err_set(w->err, LR_EBADPATH, "%s", why);
		fsio_split(arg, strlen(arg), parent, name);
		pfd = fsio_open_dir(s->rootfd, parent, false, 0);
		if (pfd < 0)
			return lr_err_setc(w->err, pfd, "opening %s", parent);
	} else {
		/* push: a local path as the user typed it */
		char buf[PATH_MAX], *slash, *base;
		size_t n = strlen(arg);

		if (n >= sizeof(buf))
			return lr_err_set(w->err, -ENAMETOOLONG, "%s", arg);
		memcpy(buf, arg, n + 1);
		while (n > 1 && buf[n - 1] == '/')
			buf[--n] = 0;
		slash = strrchr(buf, '/');
		base = slash ? slash + 1 : buf;
		if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
			char *rp = realpath(arg, NULL);

			if (!rp)
				return lr_err_setc(w->err, -errno, "%s", arg);
			slash = strrchr(rp, '/');
			snprintf(name, sizeof(name), "%s",
				 slash && slash[1] ? slash + 1 : "");
			free(rp);
			if (!name[0])
				return lr_err_set(w->err, -EINVAL,
						  "%s: name a directory "
						  "below /, not / itself",
						  arg);
			pfd = open(arg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (pfd < 0)
				return lr_err_setc(w->err, -errno, "%s", arg);
			/* the directory itself, opened as "." of pfd */
			if (fstat(pfd, &e->st)) {
				close(pfd);
				return lr_err_setc(w->err, -errno, "%s", arg);
			}
			r = walk_set_path(w, 0, name);
			if (!r)
				r = walk_fill(w, pfd, ".", e);
			close(pfd);
			return r;
		}
		snprintf(name, sizeof(name), "%s", base);
		if (slash == buf)
			snprintf(parent, sizeof(parent), "/");
		else if (slash)
			snprintf(parent, sizeof(parent), "%.*s",
				 (int)(slash - buf), buf);
		else
			snprintf(parent, sizeof(parent), ".");
		pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0)
			return lr_err_setc(w->err, -errno, "%s", parent);
		/* the user named it: follow a symlink at the top */
		if (fstatat(pfd, name, &e->st, 0)) {
			r = lr_err_setc(w->err, -errno, "%s", arg);
			close(pfd);
			return r;
		}
		if (S_ISDIR(e->st.st_mode) || S_ISREG(e->st.st_mode)) {
			int fd = openat(pfd, name, O_RDONLY | O_CLOEXEC);

			if (fd < 0) {
				r = lr_err_setc(w->err, -errno, "%s", arg);
				close(pfd);
				return r;
			}
			close(pfd);
			snprintf(name, sizeof(name), "%s", base);
			r = walk_set_path(w, 0, name);
			if (!r && S_ISREG(e->st.st_mode)) {
				/* the file itself: already open */
				e->kind = PROTO_XK_FILE;
				e->is_stdin = false;
				e->target_len = 0;
				e->fd = -1;
				if (w->open_files && !fstat(fd, &e->st)) {
					e->fd = fd;
					return 0;
				}
				close(fd);
				return 0;
			}
			if (!r)
				r = walk_fill(w, fd, ".", e);
			close(fd);
			return r;
		}
	}
	if (fstatat(pfd, name, &e->st, AT_SYMLINK_NOFOLLOW)) {
		r = lr_err_setc(w->err, -errno, "%s", arg);
		close(pfd);
		return r;
	}
	if (special(&e->st)) {
		close(pfd);
		return lr_err_set(w->err, -EINVAL,
				  "%s: not a file, directory or symlink", arg);
	}
	r = walk_set_path(w, 0, name);
	if (!r)
		r = walk_fill(w, pfd, name, e);
	close(pfd);
	return r;
}

/* Next entry: 1, 0 at the end, or an error with w->err filled. */
static int walk_next(struct walker *w, struct wentry *e)
{
	struct dirent *de;
	int r;

	while (w->depth) {
		struct wframe *f = &w->st[w->depth - 1];

		errno = 0;
		de = readdir(f->d);
		if (!de) {
			if (errno)
				return lr_err_setc(w->err, -errno,
						   "reading %.*s", (int)f->plen,
						   w->path);
			closedir(f->d);
			w->depth--;
			continue;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		w->plen = f->plen;
		r = walk_set_path(w, f->plen, de->d_name);
		if (r)
			return r;
		if (fstatat(dirfd(f->d), de->d_name, &e->st,
			    AT_SYMLINK_NOFOLLOW)) {
			if (errno == ENOENT)
				continue; /* gone since readdir */
			return lr_err_setc(w->err, -errno, "%s", w->path);
		}
		if (special(&e->st))
			continue; /* devices, fifos, sockets: not sent */
		r = walk_fill(w, dirfd(f->d), de->d_name, e);
		return r ? r : 1;
	}
	if (w->arg >= w->src->npaths)
		return 0;
	r = walk_top(w, w->src->paths[w->arg++], e);
	return r ? r : 1;
}

/* Pass 1 in a thread of its own (a push): walking a big tree takes as
 * long as setting up the connections, and neither needs the other until
 * the request says how many streams, which a sample decides. */
#define COUNT_SAMPLE 1024u /* entries that decide the streams */

struct counter {
	const struct xfer_source *src;
	pthread_t th;
	bool started;
	_Atomic bool stop;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	/* under lock */
	struct proto_xfer_totals t; /* so far */
	bool pipe, done;
	int r;
	struct lr_err err;
};

/* Pass 1: count what will be announced; c (may be NULL) sees the count
 * grow. */
static int count_sources(const struct xfer_source *src,
			 struct proto_xfer_totals *t, bool *pipe,
			 struct lr_err *err, struct counter *c)
{
	struct walker w;
	struct wentry e;
	int r;

	memset(t, 0, sizeof(*t));
	*pipe = false;
	walk_init(&w, src, false, err);
	while ((r = walk_next(&w, &e)) == 1) {
		t->files++;
		if (e.is_stdin)
			*pipe = true;
		else if (e.kind == PROTO_XK_FILE)
			t->bytes += (uint64_t)e.st.st_size;
		if (c && t->files % 256 == 0) {
			if (atomic_load(&c->stop)) {
				r = -ECANCELED;
				break;
			}
			pthread_mutex_lock(&c->lock);
			c->t = *t;
			c->pipe = *pipe;
			pthread_cond_broadcast(&c->cv);
			pthread_mutex_unlock(&c->lock);
		}
	}
	walk_fini(&w);
	if (*pipe)
		t->bytes = UINT64_MAX;
	return r;
}

static void *counter_main(void *arg)
{
	struct counter *c = arg;
	struct proto_xfer_totals t;
	struct lr_err err = { 0 };
	bool pipe;
	int r = count_sources(c->src, &t, &pipe, &err, c);

	pthread_mutex_lock(&c->lock);
	c->t = t;
	c->pipe = pipe;
	c->r = r;
	c->err = err;
	c->done = true;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Start counting src in the background; false when it cannot (the
 * caller counts when needed, as before). */
static bool counter_start(struct counter *c, const struct xfer_source *src)
{
	memset(c, 0, sizeof(*c));
	c->src = src;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cv, NULL);
	if (pthread_create(&c->th, NULL, counter_main, c)) {
		pthread_mutex_destroy(&c->lock);
		pthread_cond_destroy(&c->cv);
		return false;
	}
	c->started = true;
	return true;
}

/* Many small files gain nothing from more streams and pay for their
 * contention: two; a pipe or big files: four. */
static unsigned streams_for(const struct proto_xfer_totals *t, bool pipe)
{
	if (!pipe && t->files && t->bytes / t->files < (256u << 10))
		return 2;
	return XFER_DEFAULT_STREAMS;
}

/* The streams for what the first COUNT_SAMPLE entries (or all) are. */
static unsigned counter_streams(struct counter *c)
{
	unsigned n;

	pthread_mutex_lock(&c->lock);
	while (!c->done && c->t.files < COUNT_SAMPLE)
		pthread_cond_wait(&c->cv, &c->lock);
	n = c->r ? XFER_DEFAULT_STREAMS : streams_for(&c->t, c->pipe);
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* Wait for the count (or stop it: cancel) and hand its totals to src when
 * it succeeded; otherwise src stays uncounted and xfer_send counts (and
 * reports what failed). */
static void counter_join(struct counter *c, struct xfer_source *src,
			 bool cancel)
{
	if (!c->started)
		return;
	if (cancel)
		atomic_store(&c->stop, true);
	pthread_join(c->th, NULL);
	c->started = false;
	if (!c->r && src) {
		src->counted = true;
		src->pipe = c->pipe;
		src->files = c->t.files;
		src->bytes = c->t.bytes;
	}
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cv);
}

static void pace(struct xsess *x, uint32_t len)
{
	int64_t now, at, wait;
	uint64_t rate = x->o->rate;

	if (!rate)
		return;
	/* a chunk goes once the time its bytes take at the rate has
	 * passed, so the first one does not come for free */
	pthread_mutex_lock(&x->lock);
	now = net_now_us();
	at = x->pace_next_us > now ? x->pace_next_us : now;
	at += (int64_t)((double)len * 1e6 / (double)rate);
	x->pace_next_us = at;
	pthread_mutex_unlock(&x->lock);
	wait = at - now;
	while (wait > 0 && !atomic_load(&x->abort)) {
		struct timespec ts = {
			.tv_sec = 0,
			.tv_nsec = (wait > 100000 ? 100000 : wait) * 1000
		};

		nanosleep(&ts, NULL);
		wait = at - net_now_us();
	}
}

/* A file's chunks are all hashed: its SUM can go. Under lock. */
static bool sum_ready(struct xsess *x, struct xfile *f)
{
	f->done = true;
	if (!f->from_pipe && f->nchunks <= 1) {
		/* the receiver derives it from the one chunk's digest */
		f->sum_sent = true;
		return false;
	}
	x->sums[x->nsums++] = f->idx;
	return true;
}

static void chunk_put(struct xsess *x, struct xfile *f);

/* Take work: 1 with the slot and chunk, 0 when closing. Under lock. */
static int take_work(struct xsess *x, uint32_t *slot, uint32_t *chunk,
		     bool *pipe)
{
	for (;;) {
		if (atomic_load(&x->abort))
			return -ECANCELED;
		while (x->nretries) {
			struct xfile *f;

			x->nretries--;
			*slot = x->retries[x->nretries].slot;
			*chunk = x->retries[x->nretries].chunk;
			*pipe = false;
			f = &x->win[*slot];
			if (!f->used || f->dead)
				continue;
			f->inflight++;
			return 1;
		}
		while (x->fifo_len) {
			struct xfile *f = &x->win[x->fifo[x->fifo_head]];
			if (f->pipe) {
				*slot = SLOT(f->idx);
				*pipe = true;
				f->inflight++;
				return 1;
			}
			if (f->cursor < f->nchunks) {
				*slot = SLOT(f->idx);
				*chunk = f->cursor++;
				*pipe = false;
				f->inflight++;
				if (f->cursor == f->nchunks) {
					f->in_fifo = false;
					x->fifo_head = (x->fifo_head + 1) %
						       XFER_WINDOW;
					x->fifo_len--;
				}
				return 1;
			}
			f->in_fifo = false;
			x->fifo_head = (x->fifo_head + 1) % XFER_WINDOW;
			x->fifo_len--;
		}
		if (atomic_load(&x->closing))
			return 0;
		x->waiters++;
		pthread_cond_wait(&x->cv, &x->lock);
		x->waiters--;
	}
}

/* After taking work: wake one more thread when work is left. Under lock. */
static void pass_on(struct xsess *x)
{
	if (x->waiters && (x->fifo_len || x->nretries))
		pthread_cond_signal(&x->cv);
}

static int read_full_at(int fd, uint8_t *p, size_t len, uint64_t off)
{
	size_t got = 0;
	ssize_t k;

	while (got < len) {
		k = pread(fd, p + got, len - got, (off_t)(off + got));
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return LR_ETRUNC;
		got += (size_t)k;
	}
	return 0;
}

/* Read up to len bytes from a pipe; *got < len only at its end. */
static int read_pipe(int fd, uint8_t *p, size_t len, size_t *got)
{
	ssize_t k;

	*got = 0;
	while (*got < len) {
		k = read(fd, p + *got, len - *got);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		*got += (size_t)k;
	}
	return 0;
}

static bool is_hole(int fd, uint64_t off, uint32_t len)
{
	off_t d = lseek(fd, (off_t)off, SEEK_DATA);

	if (d < 0)
		return errno == ENXIO;
	return (uint64_t)d >= off + len;
}

struct sthread {
	struct xsess *x;
	unsigned i;
	pthread_t th;
	bool started;
	/* receiver: small files completed by the record being read, named
	 * together after one syncfs */
	struct xfile *ready[READY_MAX];
	unsigned nready;
};

/* One chunk in a record being built. */
struct item {
	struct xfile *f;
	uint32_t chunk, len;
	bool held, zero, skip;
	uint8_t d[DIGEST_LEN];
};

#define BATCH_MAX   64		/* chunks in one record */
#define BATCH_SMALL (64u << 10) /* chunks up to this size share records */

/* More small chunks from the head of the queue for the same record: 1
 * with the slot and chunk, 0 when the next is not small enough. Under
 * lock; never blocks. */
static int take_more(struct xsess *x, uint32_t room, uint32_t *slot,
		     uint32_t *chunk)
{
	while (x->fifo_len) {
		struct xfile *f = &x->win[x->fifo[x->fifo_head]];
		uint32_t len;

		if (f->pipe || f->dead)
			return 0;
		if (f->cursor >= f->nchunks) {
			f->in_fifo = false;
			x->fifo_head = (x->fifo_head + 1) % XFER_WINDOW;
			x->fifo_len--;
			continue;
		}
		len = chunk_len(f, f->cursor, x->chunk);
		if (len > BATCH_SMALL ||
		    len + PROTO_XFER_CHUNK_HDR_LEN > room ||
		    f->cstate[f->cursor] == CS_HELD)
			return 0;
		*slot = SLOT(f->idx);
		*chunk = f->cursor++;
		f->inflight++;
		if (f->cursor == f->nchunks) {
			f->in_fifo = false;
			x->fifo_head = (x->fifo_head + 1) % XFER_WINDOW;
			x->fifo_len--;
		}
		return 1;
	}
	return 0;
}

/* Read the next chunk of a pipe (stdin) into data: 1 with *it filled, 0
 * when the pipe ended (or the file is finished), <0 on error. */
static int pipe_chunk(struct xsess *x, struct xfile *f, uint8_t *data,
		      struct item *it, uint64_t *disk_ns)
{
	size_t got;
	uint64_t t;
	int r;

	/* chunks of a pipe are numbered in reading order */
	pthread_mutex_lock(&x->pipe_lock);
	pthread_mutex_lock(&x->lock);
	if (!f->pipe || f->done || f->dead) {
		pthread_mutex_unlock(&x->lock);
		pthread_mutex_unlock(&x->pipe_lock);
		return 0;
	}
	pthread_mutex_unlock(&x->lock);
	t = now_ns();
	r = read_pipe(f->fd, data, x->chunk, &got);
	*disk_ns += now_ns() - t;
	if (r) {
		pthread_mutex_unlock(&x->pipe_lock);
		return r;
	}
	pthread_mutex_lock(&x->lock);
	if (got == 0) {
		/* end of the pipe: the size is known */
		f->size = (uint64_t)f->cursor * x->chunk;
		f->pipe = false;
		if (f->in_fifo) {
			f->in_fifo = false;
			x->fifo_head = (x->fifo_head + 1) % XFER_WINDOW;
			x->fifo_len--;
		}
		if (f->finished == f->nchunks && sum_ready(x, f))
			wake(x);
		pthread_mutex_unlock(&x->lock);
		pthread_mutex_unlock(&x->pipe_lock);
		return 0;
	}
	it->chunk = f->cursor++;
	r = file_grow(f, f->cursor);
	if (!r)
		f->nchunks = f->cursor;
	if (got < x->chunk) {
		/* short read: the end of the pipe */
		f->size = (uint64_t)it->chunk * x->chunk + got;
		f->pipe = false;
		if (f->in_fifo) {
			f->in_fifo = false;
			x->fifo_head = (x->fifo_head + 1) % XFER_WINDOW;
			x->fifo_len--;
		}
	}
	pthread_mutex_unlock(&x->lock);
	pthread_mutex_unlock(&x->pipe_lock);
	if (r)
		return r;
	it->len = (uint32_t)got;
	return 1;
}

static void *send_stream(void *arg)
{
	struct sthread *st = arg;
	struct xsess *x = st->x;
	struct conn *c = &x->cs->data[st->i];
	size_t cap = PROTO_XFER_CHUNK_HDR_LEN + x->chunk + CRYPTO_TAG_LEN;
	uint64_t disk_ns = 0, hash_ns = 0, t;
	int64_t t0 = net_now_us();
	uint8_t *buf = malloc(cap);
	struct item items[BATCH_MAX];
	int r = 0;

	if (!buf) {
		fatal(x, -ENOMEM, "out of memory for a stream buffer");
		return NULL;
	}
	for (;;) {
		uint32_t slot, chunk = 0, data_len = 0;
		unsigned n = 0, i;
		size_t off = 0;
		bool pipe;

		pthread_mutex_lock(&x->lock);
		r = take_work(x, &slot, &chunk, &pipe);
		if (r <= 0) {
			pthread_mutex_unlock(&x->lock);
			break;
		}
		items[0] = (struct item){ .f = &x->win[slot], .chunk = chunk };
		if (items[0].f->dead) {
			chunk_put(x, items[0].f);
			pthread_mutex_unlock(&x->lock);
			continue;
		}
		n = 1;
		r = 0;
		if (!pipe) {
			struct item *it = &items[0];
			uint32_t used;

			it->held = it->f->cstate[chunk] == CS_HELD;
			it->len = chunk_len(it->f, chunk, x->chunk);
			used = PROTO_XFER_CHUNK_HDR_LEN + it->len;
			/* small chunks travel together: one record, one
			 * seal, one send for many small files */
			while (!it->held && it->len <= BATCH_SMALL &&
			       n < BATCH_MAX &&
			       take_more(x,
					 x->chunk + PROTO_XFER_CHUNK_HDR_LEN -
						 used,
					 &slot, &chunk)) {
				items[n] = (struct item){ .f = &x->win[slot],
							  .chunk = chunk };
				items[n].len =
					chunk_len(items[n].f, chunk, x->chunk);
				used += PROTO_XFER_CHUNK_HDR_LEN + items[n].len;
				n++;
			}
		}
		pass_on(x);
		pthread_mutex_unlock(&x->lock);

		if (pipe) {
			r = pipe_chunk(x, items[0].f,
				       buf + PROTO_XFER_CHUNK_HDR_LEN,
				       &items[0], &disk_ns);
			if (r <= 0) {
				pthread_mutex_lock(&x->lock);
				chunk_put(x, items[0].f);
				pthread_mutex_unlock(&x->lock);
				if (r < 0) {
					fatal(x, r,
					      "reading standard input: %s",
					      lr_strerror(r));
					break;
				}
				continue;
			}
			r = 0;
		}
		/* read and hash every chunk into place */
		for (i = 0; i < n; i++) {
			struct item *it = &items[i];
			struct xfile *f = it->f;
			uint8_t *data = buf + off + PROTO_XFER_CHUNK_HDR_LEN;
			uint64_t at = (uint64_t)it->chunk * x->chunk;
			struct proto_xfer_chunk_hdr h = {
				.kind = PROTO_XC_DATA,
				.idx = f->idx,
				.chunk = it->chunk,
				.len = it->len,
			};

			if (!pipe && (f->eflags & PROTO_XE_SPARSE) &&
			    !it->held && is_hole(f->fd, at, it->len)) {
				it->zero = true;
				h.kind = PROTO_XC_ZERO;
			} else if (!pipe) {
				t = now_ns();
				r = read_full_at(f->fd, data, it->len, at);
				disk_ns += now_ns() - t;
				if (r) {
					char esc[FSIO_MAX_PATH * 4 + 1];

					fatal(x, r,
					      "%s: %s while reading it "
					      "(the file changed during the "
					      "transfer?)",
					      fsio_escape(fpath(f),
							  strlen(fpath(f)), esc,
							  sizeof(esc)),
					      r == LR_ETRUNC ? "shrank"
							     : lr_strerror(r));
					break;
				}
			}
			t = now_ns();
			if (it->zero)
				digest_zeros(it->len, it->d);
			else
				digest_chunk(data, it->len, it->d);
			hash_ns += now_ns() - t;
			if (it->held) {
				bool same;

				pthread_mutex_lock(&x->lock);
				same = !memcmp(f->digests + (size_t)it->chunk *
								    DIGEST_LEN,
					       it->d, DIGEST_LEN);
				if (same && !f->dead) {
					f->cstate[it->chunk] = CS_GOT;
					x->bytes_held += it->len;
					f->finished++;
					if (f->finished == f->nchunks &&
					    f->cursor == f->nchunks &&
					    !f->done && sum_ready(x, f))
						wake(x);
				}
				if (same || f->dead) {
					it->skip = true;
					chunk_put(x, f);
				}
				pthread_mutex_unlock(&x->lock);
				if (it->skip)
					continue;
			}
			memcpy(h.digest, it->d, DIGEST_LEN);
			proto_xfer_chunk_encode(buf + off, &h);
			off += PROTO_XFER_CHUNK_HDR_LEN +
			       (it->zero ? 0 : it->len);
			data_len += it->len;
		}
		if (r)
			break;
		if (off) {
			pace(x, data_len);
			r = conn_send_data(c, CONN_REC_DATA, buf, off);
			if (r) {
				if (r != -ECANCELED)
					fatal(x, r, "stream %u: %s", st->i + 1,
					      lr_strerror(r));
				break;
			}
			atomic_store(&x->last_activity_ms, net_now_ms());
		}
		pthread_mutex_lock(&x->lock);
		for (i = 0; i < n; i++) {
			struct item *it = &items[i];
			struct xfile *f = it->f;

			if (it->skip)
				continue;
			if (!f->dead && f->cstate[it->chunk] != CS_GOT) {
				f->cstate[it->chunk] = CS_GOT;
				memcpy(f->digests +
					       (size_t)it->chunk * DIGEST_LEN,
				       it->d, DIGEST_LEN);
				f->sent++;
				f->finished++;
				if (f->finished == f->nchunks && !f->pipe &&
				    f->cursor == f->nchunks && !f->done &&
				    sum_ready(x, f))
					wake(x);
			}
			chunk_put(x, f);
		}
		pthread_mutex_unlock(&x->lock);
	}
	if (!atomic_load(&x->abort)) {
		r = conn_send_data(c, CONN_REC_END, buf, 0);
		if (r && r != -ECANCELED)
			fatal(x, r, "stream %u: %s", st->i + 1, lr_strerror(r));
	}
	add_waits(x, c, disk_ns, hash_ns, t0);
	free(buf);
	return NULL;
}

static int start_threads(struct xsess *x, struct sthread *ts,
			 void *(*fn)(void *))
{
	unsigned i;
	int r;

	for (i = 0; i < x->cs->n; i++) {
		ts[i].x = x;
		ts[i].i = i;
		r = pthread_create(&ts[i].th, NULL, fn, &ts[i]);
		if (r) {
			fatal(x, -r, "cannot start a stream thread");
			return -r;
		}
		ts[i].started = true;
	}
	return 0;
}

static void join_threads(struct xsess *x, struct sthread *ts)
{
	unsigned i;

	pthread_mutex_lock(&x->lock);
	atomic_store(&x->closing, true);
	pthread_cond_broadcast(&x->cv);
	pthread_cond_broadcast(&x->out_cv);
	pthread_mutex_unlock(&x->lock);
	for (i = 0; i < x->cs->n; i++)
		if (ts[i].started) {
			pthread_join(ts[i].th, NULL);
			ts[i].started = false;
		}
}

/* Sender: queue a planned file's chunks. Under lock. */
static void queue_file(struct xsess *x, struct xfile *f)
{
	f->planned = true;
	if (!f->pipe && f->nchunks == 0) {
		sum_ready(x, f);
		return;
	}
	f->in_fifo = true;
	x->fifo[(x->fifo_head + x->fifo_len) % XFER_WINDOW] = SLOT(f->idx);
	x->fifo_len++;
	/* the caller wakes a stream thread once the whole PLAN is queued,
	 * so that the thread finds many small files for one record */
}

/* Sender: a file is finished one way or another. Under lock. */
static void sender_file_end(struct xsess *x, struct xfile *f)
{
	if (f->in_fifo) {
		/* drop its queued chunks: rebuild the FIFO without it */
		uint32_t keep[XFER_WINDOW];
		unsigned i, n = 0;

		for (i = 0; i < x->fifo_len; i++) {
			uint32_t s = x->fifo[(x->fifo_head + i) % XFER_WINDOW];

			if (s != SLOT(f->idx))
				keep[n++] = s;
		}
		x->fifo_head = 0;
		x->fifo_len = n;
		memcpy(x->fifo, keep, n * sizeof(keep[0]));
	}
	x->files_done++;
	f->dead = true;
	if (!f->inflight)
		file_release(f);
}

/* A stream thread is done with a chunk of f. Under lock. A file the
 * receiver finished before this thread let go of it frees its slot only
 * now: wake the control thread, which may be waiting for that slot (to
 * announce more, to end the streams) and would not hear of it otherwise. */
static void chunk_put(struct xsess *x, struct xfile *f)
{
	if (!--f->inflight && f->dead) {
		file_release(f);
		wake(x);
	}
}

static int send_sums(struct xsess *x, uint8_t *buf)
{
	struct proto_buf b;
	uint32_t slots[XFER_WINDOW];
	unsigned i, n;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	n = x->nsums;
	memcpy(slots, x->sums, n * sizeof(slots[0]));
	x->nsums = 0;
	pthread_mutex_unlock(&x->lock);
	if (!n)
		return 0;
	proto_buf_init(&b, buf, MSG_BUF);
	proto_msg_begin(&b, PROTO_XFER_SUMS);
	for (i = 0; i < n && !r; i++) {
		struct xfile *f = &x->win[SLOT(slots[i])];
		struct proto_xfer_sum s = { .idx = slots[i] };

		pthread_mutex_lock(&x->lock);
		if (!f->used || f->idx != slots[i] || f->dead) {
			pthread_mutex_unlock(&x->lock);
			continue;
		}
		s.size = f->size;
		s.nchunks = f->nchunks;
		s.sent = f->sent;
		digest_file(f->size, x->chunk, f->nchunks, f->digests,
			    s.digest);
		f->sum_sent = true;
		pthread_mutex_unlock(&x->lock);
		if (!proto_xfer_batch_room(&b, PROTO_XFER_SUM_LEN)) {
			r = proto_msg_end(&b) ?: ctrl_send(x, &b);
			proto_msg_begin(&b, PROTO_XFER_SUMS);
		}
		proto_put_xfer_sum(&b, &s);
	}
	if (!r)
		r = proto_msg_end(&b) ?: ctrl_send(x, &b);
	return r;
}

/* Sender: whether to announce more files now. Slots free up one by one as
 * the receiver finishes files; announcing each at once would send small
 * FILES and PLAN messages and records of one small file each. So, while
 * plenty is in flight, wait until ANNOUNCE_BATCH slots in a row are free
 * (or as many as files are left to announce); with less in flight (a long
 * file still holding a slot ahead, or the start), announce what is free. */
#define ANNOUNCE_BATCH 64u
_Static_assert(ANNOUNCE_BATCH <= XFER_WINDOW, "a batch fits the window");

static bool window_room(struct xsess *x, uint32_t next_idx, uint64_t left)
{
	unsigned k, used = 0, need;
	bool room = true;

	need = left < ANNOUNCE_BATCH ? (unsigned)(left ? left : 1)
				     : ANNOUNCE_BATCH;
	pthread_mutex_lock(&x->lock);
	if (x->win[SLOT(next_idx)].used) {
		room = false;
		goto out;
	}
	for (k = 0; k < XFER_WINDOW && used < ANNOUNCE_BATCH; k++)
		used += x->win[k].used;
	if (used < ANNOUNCE_BATCH)
		goto out;
	for (k = 1; k < need; k++)
		if (x->win[SLOT(next_idx + k)].used) {
			room = false;
			break;
		}
out:
	pthread_mutex_unlock(&x->lock);
	return room;
}

/* Sender: handle PLAN items. The whole message is taken under the lock and
 * a stream thread woken after it, so that the thread finds all the files
 * the message queued: many small files then travel in one record. */
static int on_plan(struct xsess *x, const uint8_t *body, size_t len)
{
	struct proto_xfer_iter it;
	char reason[PROTO_MAX_TEXT + 1] = "";
	bool queued = false;
	int r;

	proto_xfer_iter_init(&it, body, len);
	pthread_mutex_lock(&x->lock);
	while ((r = proto_xfer_iter_next(&it)) == 1) {
		struct xfile *f;

		r = LR_EBADMSG;
		if (it.tag == PROTO_T_HELD) {
			struct proto_xfer_held h;

			if (proto_xfer_get_held(&it, &h))
				break;
			f = &x->win[SLOT(h.idx)];
			if (!f->used || f->idx != h.idx || f->planned ||
			    f->kind != PROTO_XK_FILE || f->pipe ||
			    h.chunk >= f->nchunks)
				break;
			f->cstate[h.chunk] = CS_HELD;
			memcpy(f->digests + (size_t)h.chunk * DIGEST_LEN,
			       h.digest, DIGEST_LEN);
		} else if (it.tag == PROTO_T_FAIL) {
			struct proto_xfer_fail fl;

			if (proto_xfer_get_fail(&it, &fl))
				break;
			snprintf(reason, sizeof(reason), "%s", fl.text);
		} else if (it.tag == PROTO_T_PLAN) {
			struct proto_xfer_plan p;

			if (proto_xfer_get_plan(&it, &p))
				break;
			f = &x->win[SLOT(p.idx)];
			if (!f->used || f->idx != p.idx || f->planned ||
			    f->kind != PROTO_XK_FILE)
				break;
			if (p.action == PROTO_XA_SEND ||
			    p.action == PROTO_XA_RESUME) {
				queue_file(x, f);
				queued = true;
				if (x->nsums)
					wake(x);
				continue;
			}
			f->planned = true;
			if (p.action == PROTO_XA_SKIP) {
				x->res->files_skipped++;
				x->bytes_held += f->size;
				file_event(x, f, true, true, NULL);
			} else {
				x->res->files_failed++;
				note_failure(x, f,
					     reason[0] ? reason : "refused");
				file_event(x, f, false, false,
					   reason[0] ? reason : "refused");
			}
			reason[0] = 0;
			sender_file_end(x, f);
		} else {
			break;
		}
	}
	if (queued && x->waiters)
		pthread_cond_signal(&x->cv); /* it passes the word on */
	pthread_mutex_unlock(&x->lock);
	return r;
}

/* Sender: handle ACK items. */
static int on_acks(struct xsess *x, const uint8_t *body, size_t len)
{
	struct proto_xfer_iter it;
	char reason[PROTO_MAX_TEXT + 1] = "";
	int r;

	proto_xfer_iter_init(&it, body, len);
	while ((r = proto_xfer_iter_next(&it)) == 1) {
		struct proto_xfer_ack a;
		struct xfile *f;

		if (it.tag == PROTO_T_FAIL) {
			struct proto_xfer_fail fl;

			if (proto_xfer_get_fail(&it, &fl))
				return LR_EBADMSG;
			snprintf(reason, sizeof(reason), "%s", fl.text);
			continue;
		}
		if (proto_xfer_get_ack(&it, &a))
			return LR_EBADMSG;
		f = &x->win[SLOT(a.idx)];
		/* stream threads release slots: look at it under the lock;
		 * a file that ended takes no more acknowledgements */
		pthread_mutex_lock(&x->lock);
		if (!f->used || f->idx != a.idx || f->dead ||
		    ((a.status == PROTO_XS_CHUNK_OK ||
		      a.status == PROTO_XS_CHUNK_BAD) &&
		     a.chunk >= f->nchunks)) {
			pthread_mutex_unlock(&x->lock);
			return LR_EBADMSG;
		}
		switch (a.status) {
		case PROTO_XS_CHUNK_OK: x->bytes_done += a.bytes; break;
		case PROTO_XS_CHUNK_BAD:
			if (++f->tries[a.chunk] > XFER_MAX_RETRIES) {
				char esc[FSIO_MAX_PATH * 4 + 1];

				pthread_mutex_unlock(&x->lock);
				fatal(x, LR_EDIGEST,
				      "%s: chunk %u failed verification %u "
				      "times",
				      fsio_escape(fpath(f), strlen(fpath(f)),
						  esc, sizeof(esc)),
				      a.chunk, XFER_MAX_RETRIES + 1);
				return LR_EDIGEST;
			}
			if (x->nretries == x->cap_retries) {
				unsigned nc = x->cap_retries
						      ? x->cap_retries * 2
						      : 64;
				struct retry *nr =
					realloc(x->retries, nc * sizeof(*nr));

				if (!nr) {
					pthread_mutex_unlock(&x->lock);
					return -ENOMEM;
				}
				x->retries = nr;
				x->cap_retries = nc;
			}
			x->retries[x->nretries++] =
				(struct retry){ SLOT(a.idx), a.chunk };
			pthread_cond_broadcast(&x->cv);
			break;
		case PROTO_XS_FILE_DONE:
			if (f->kind == PROTO_XK_FILE)
				x->res->files_ok++;
			file_event(x, f, true, false, NULL);
			sender_file_end(x, f);
			break;
		default:
			x->res->files_failed++;
			note_failure(x, f, reason[0] ? reason : "failed");
			file_event(x, f, false, false,
				   reason[0] ? reason : "failed");
			reason[0] = 0;
			sender_file_end(x, f);
		}
		pthread_mutex_unlock(&x->lock);
	}
	if (!r && reason[0]) {
		/* a FAIL with no ACK after it: a failure found at the end */
		pthread_mutex_lock(&x->lock);
		snprintf(x->late_reason, sizeof(x->late_reason), "%s", reason);
		pthread_mutex_unlock(&x->lock);
	}
	return r;
}

static uint16_t mode_bits(const struct stat *st)
{
	return (uint16_t)(st->st_mode & 07777);
}

int xfer_send(struct xfer_conns *cs, const struct xfer_source *src,
	      const struct xfer_opts *o, const struct xfer_callbacks *cb,
	      struct xfer_result *res, struct lr_err *err)
{
	struct proto_xfer_totals tot;
	struct proto_xfer_done done;
	struct sthread *ts = NULL;
	struct xfer_event ev = { 0 };
	struct walker w;
	struct xsess x;
	struct proto_buf b;
	struct proto_hdr h;
	struct wentry e;
	uint8_t *buf, *rbuf;
	uint32_t next_idx = 0;
	uint64_t announced = 0, bytes_ann = 0;
	bool walk_done = false, end_sent = false, got_done = false;
	bool streams_closed = false;
	bool has_pipe;
	struct pclock pc = { 0 };
	int r;

	raise_nofile();
	r = sess_init(&x, cs, o, cb, res, true);
	if (r)
		return lr_err_setc(err, r, "starting the transfer");
	buf = malloc(MSG_BUF);
	rbuf = malloc(MSG_BUF);
	ts = calloc(cs->n, sizeof(*ts));
	if (!buf || !rbuf || !ts) {
		r = lr_err_setc(err, -ENOMEM, "transfer buffers");
		goto out;
	}
	if (src->counted) {
		tot.files = src->files;
		tot.bytes = src->bytes;
		has_pipe = src->pipe;
		r = 0;
	} else {
		r = count_sources(src, &tot, &has_pipe, err, NULL);
	}
	if (r) {
		send_error_msg(&x, PROTO_ERR_INTERNAL, err->msg);
		goto out;
	}
	proto_buf_init(&b, buf, MSG_BUF);
	r = proto_encode_xfer_totals(&b, &tot) ?: ctrl_send(&x, &b);
	if (r) {
		lr_err_setc(err, r, "sending the totals");
		goto out;
	}
	ev.kind = XFER_EV_START;
	progress_fill(&x, &ev.p, tot.bytes, !has_pipe, tot.files);
	emit(&x, &ev);
	data_sockopts(&x);
	r = start_threads(&x, ts, send_stream);
	if (r)
		goto out_join;
	walk_init(&w, src, true, err);
	pc.next = net_now_ms() + (o->progress_ms ? o->progress_ms : 1000);
	while (!got_done) {
		int64_t now, tmo;

		/* announce while the window has room */
		if (!walk_done &&
		    window_room(&x, next_idx,
				tot.files > announced ? tot.files - announced
						      : 0)) {
			proto_buf_init(&b, buf, MSG_BUF);
			proto_msg_begin(&b, PROTO_XFER_FILES);
			while (!walk_done && !x.win[SLOT(next_idx)].used) {
				struct proto_xfer_entry pe = { 0 };
				struct xfile *f = &x.win[SLOT(next_idx)];

				r = walk_next(&w, &e);
				if (r < 0)
					break;
				if (r == 0) {
					walk_done = true;
					break;
				}
				r = 0;
				if (++announced > tot.files ||
				    (e.kind == PROTO_XK_FILE && !e.is_stdin &&
				     (bytes_ann += (uint64_t)e.st.st_size) >
					     tot.bytes)) {
					if (e.fd >= 0 && !e.is_stdin)
						close(e.fd);
					r = lr_err_set(err, -EAGAIN,
						       "the source grew during "
						       "the transfer (%s)",
						       w.path);
					break;
				}
				pe.idx = next_idx;
				pe.kind = e.kind;
				pe.mode = mode_bits(&e.st);
				pe.mtime_sec = e.st.st_mtim.tv_sec;
				pe.mtime_nsec = (uint32_t)e.st.st_mtim.tv_nsec;
				pe.path = w.path;
				pe.path_len = (uint16_t)strlen(w.path);
				if (e.kind == PROTO_XK_FILE) {
					pe.size =
						e.is_stdin
							? PROTO_XFER_SIZE_UNKNOWN
							: (uint64_t)e.st.st_size;
					if (!e.is_stdin &&
					    (uint64_t)e.st.st_blocks * 512 <
						    (uint64_t)e.st.st_size)
						pe.eflags |= PROTO_XE_SPARSE;
				}
				if (e.kind == PROTO_XK_SYMLINK) {
					pe.target = e.target;
					pe.target_len = e.target_len;
				}
				if (!proto_xfer_batch_room(
					    &b, proto_xfer_entry_size(&pe))) {
					r = proto_msg_end(&b)
						    ?: ctrl_send(&x, &b);
					if (r)
						break;
					proto_msg_begin(&b, PROTO_XFER_FILES);
				}
				proto_put_xfer_entry(&b, &pe);
				pthread_mutex_lock(&x.lock);
				f->used = true;
				f->idx = next_idx;
				f->kind = e.kind;
				f->eflags = pe.eflags;
				f->mode = pe.mode;
				f->size = pe.size;
				f->pipe = e.is_stdin;
				f->from_pipe = e.is_stdin;
				f->fd = e.fd;
				f->path = strdup(w.path);
				if (!f->path)
					r = -ENOMEM;
				else if (e.kind == PROTO_XK_FILE && !f->pipe) {
					f->nchunks =
						chunks_of(f->size, x.chunk);
					r = file_grow(f, f->nchunks);
				} else if (f->pipe) {
					r = file_grow(f, 16);
				}
				pthread_mutex_unlock(&x.lock);
				if (r)
					break;
				next_idx++;
			}
			if (!r)
				r = proto_msg_end(&b) ?: ctrl_send(&x, &b);
			if (r) {
				if (!err->msg[0])
					lr_err_setc(err, r, "announcing files");
				send_error_msg(&x, PROTO_ERR_INTERNAL,
					       err->msg);
				goto out_walk;
			}
		}
		r = send_sums(&x, buf);
		if (r) {
			lr_err_setc(err, r, "sending file digests");
			goto out_walk;
		}
		if (walk_done && !end_sent) {
			bool all = true;
			unsigned i;

			pthread_mutex_lock(&x.lock);
			for (i = 0; i < XFER_WINDOW && all; i++)
				if (x.win[i].used &&
				    x.win[i].kind == PROTO_XK_FILE &&
				    x.win[i].planned && !x.win[i].sum_sent)
					all = false;
				else if (x.win[i].used &&
					 x.win[i].kind == PROTO_XK_FILE &&
					 !x.win[i].planned)
					all = false;
			pthread_mutex_unlock(&x.lock);
			if (all) {
				proto_buf_init(&b, buf, MSG_BUF);
				r = proto_encode_empty(&b, PROTO_XFER_END)
					    ?: ctrl_send(&x, &b);
				if (r) {
					lr_err_setc(err, r, "sending END");
					goto out_walk;
				}
				end_sent = true;
			}
		}
		if (end_sent && !streams_closed && window_empty(&x)) {
			/* nothing can be asked again: end the streams */
			join_threads(&x, ts);
			streams_closed = true;
			if (x.error) {
				*err = x.err;
				r = x.error;
				goto out_walk;
			}
		}
		now = net_now_ms();
		tmo = pc.next - now;
		if (tmo < 0)
			tmo = 0;
		r = ctrl_turn(&x, tmo, rbuf, &h, "receiver", "sender", err);
		if (r < 0)
			goto out_walk;
		if (r == 1) {
			r = 0;
			switch (h.type) {
			case PROTO_XFER_PLAN:
				r = on_plan(&x, rbuf, h.len);
				break;
			case PROTO_XFER_ACKS:
				r = on_acks(&x, rbuf, h.len);
				break;
			case PROTO_XFER_DONE:
				r = end_sent ? proto_decode_xfer_done(
						       rbuf, h.len, &done)
					     : LR_EBADMSG;
				got_done = !r;
				break;
			case PROTO_ERROR:
				r = peer_error(rbuf, h.len, err);
				goto out_walk;
			default: r = LR_EBADMSG;
			}
			if (r) {
				if (!err->msg[0] || r == LR_EBADMSG)
					lr_err_set(err, r,
						   "the receiver sent a bad %s "
						   "message",
						   proto_type_name(h.type));
				if (x.error)
					*err = x.err;
				send_error_msg(&x, PROTO_ERR_BAD_REQUEST,
					       err->msg);
				goto out_walk;
			}
		}
		now = net_now_ms();
		if (now - atomic_load(&x.last_activity_ms) > IDLE_MS) {
			r = lr_err_set(err, LR_ETIMEOUT,
				       "no answer from the receiver for %d s",
				       IDLE_MS / 1000);
			goto out_walk;
		}
		progress_tick(&x, &pc, now, tot.bytes, !has_pipe, tot.files);
	}
	res->remote.disk_us = done.wait.write_us;
	res->remote.net_us = done.wait.net_us;
	res->remote.cipher_us = done.wait.cipher_us;
	if (done.files_failed > res->files_failed) {
		/* failures only the receiver saw (symlinks made last) */
		res->files_failed = done.files_failed;
		if (!res->first_failure[0])
			snprintf(res->first_failure, sizeof(res->first_failure),
				 "%s",
				 x.late_reason[0] ? x.late_reason
						  : "see the receiver's log");
	}
	r = 0;
out_walk:
	walk_fini(&w);
out_join:
	if (r)
		atomic_store(&x.abort, true);
	join_threads(&x, ts);
	res->bytes = x.bytes_done;
	res->bytes_held = x.bytes_held;
	res->local = x.waits;
	res->seconds = (double)(net_now_us() - x.t0_us) / 1e6;
	if (!r && res->files_failed) {
		r = lr_err_set(err, -EIO,
			       "%llu of %llu entries failed; first: %s",
			       (unsigned long long)res->files_failed,
			       (unsigned long long)tot.files,
			       res->first_failure);
	}
	ev = (struct xfer_event){ .kind = XFER_EV_END };
	progress_fill(&x, &ev.p, tot.bytes, !has_pipe, tot.files);
	ev.ok = r == 0;
	emit(&x, &ev);
out:
	free(ts);
	free(buf);
	free(rbuf);
	sess_fini(&x);
	return r;
}

/* ======================== the receiving side ======================== */

/* Queue an ACK item for the control thread. Under lock. */
static int push_ack(struct xsess *x, uint32_t idx, uint32_t chunk,
		    uint8_t status, uint32_t bytes)
{
	if (x->nacks == x->cap_acks) {
		unsigned nc = x->cap_acks ? x->cap_acks * 2 : 256;
		struct proto_xfer_ack *na = realloc(x->acks, nc * sizeof(*na));

		if (!na)
			return -ENOMEM;
		x->acks = na;
		x->cap_acks = nc;
	}
	x->acks[x->nacks++] =
		(struct proto_xfer_ack){ idx, chunk, status, bytes };
	if (x->nacks == 1)
		x->ack_wake = true;
	return 0;
}

/* A file has every chunk and its SUM: hand it to the control thread.
 * Under lock. */
static bool final_ready(const struct xfile *f)
{
	return f->used && (f->have_sum || f->implicit_sum) && !f->done &&
	       !f->failed && f->finished == f->nchunks &&
	       (f->implicit_sum || f->sent == f->sum.sent);
}

/* Queue a complete file for the control thread. Under lock. */
static void maybe_final(struct xsess *x, struct xfile *f)
{
	if (final_ready(f)) {
		f->done = true;
		x->finals[x->nfinals++] = SLOT(f->idx);
	}
}

/* A file failed on the receiving side (reason set). Under lock. */
static void recv_file_fail(struct xsess *x, struct xfile *f, const char *fmt,
			   ...) __attribute__((format(printf, 3, 4)));

static void recv_file_fail(struct xsess *x, struct xfile *f, const char *fmt,
			   ...)
{
	va_list ap;

	if (f->failed || f->done)
		return;
	f->failed = true;
	va_start(ap, fmt);
	vsnprintf(f->reason, sizeof(f->reason), fmt, ap);
	va_end(ap);
	x->fail_pending[SLOT(f->idx)] = true;
	x->any_failed = true;
	x->ack_wake = true;
}

/* Wake the control thread when there is something new to send. */
static void wake_if(struct xsess *x)
{
	bool w;

	pthread_mutex_lock(&x->lock);
	w = x->ack_wake;
	x->ack_wake = false;
	pthread_mutex_unlock(&x->lock);
	if (w)
		wake(x);
}

static int write_full_at(int fd, const uint8_t *p, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t k;

	while (done < len) {
		k = pwrite(fd, p + done, len - done, (off_t)(off + done));
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)k;
	}
	return 0;
}

static int write_full(int fd, const uint8_t *p, size_t len)
{
	size_t done = 0;
	ssize_t k;

	while (done < len) {
		k = write(fd, p + done, len - done);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)k;
	}
	return 0;
}

/* One chunk of a data record at u (avail bytes left in the record):
 * check it, verify it, write it. 0 to go on (*used set), -1 after a fatal
 * error (reported). */
static int recv_unit(struct xsess *x, struct sthread *st, const uint8_t *u,
		     size_t avail, size_t *used, uint64_t *disk_ns,
		     uint64_t *hash_ns)
{
	static const uint8_t zeros[4096];
	const uint8_t *data = u + PROTO_XFER_CHUNK_HDR_LEN;
	bool stdout_mode = x->o->flags & PROTO_XF_STDOUT;
	struct proto_xfer_chunk_hdr h;
	struct xfile *f;
	uint8_t d[DIGEST_LEN], prev;
	uint64_t off, t;
	bool mine, shared;
	int fd, r = 0;

	*used = avail;
	if (avail < PROTO_XFER_CHUNK_HDR_LEN ||
	    proto_xfer_chunk_decode(u, &h)) {
		fatal(x, LR_EBADMSG, "stream %u: malformed chunk", st->i + 1);
		return -1;
	}
	*used = PROTO_XFER_CHUNK_HDR_LEN +
		(h.kind == PROTO_XC_DATA ? h.len : 0);
	if (*used > avail || h.len > x->chunk) {
		fatal(x, LR_EBADMSG,
		      "stream %u: chunk length does not match its "
		      "record",
		      st->i + 1);
		return -1;
	}
	pthread_mutex_lock(&x->lock);
	f = &x->win[SLOT(h.idx)];
	r = 0;
	if (h.idx < x->announced &&
	    (!f->used || f->idx != h.idx || f->failed)) {
		/* a chunk of a file that failed, in flight when it
		 * did: drained, within a bound */
		x->dropped += h.len;
		r = x->dropped > x->drop_limit ? LR_ETOOBIG : 0;
		pthread_mutex_unlock(&x->lock);
		if (!r)
			return 0;
		fatal(x, r,
		      "the sender keeps sending chunks of files that "
		      "failed: cut off");
		return -1;
	}
	if (!f->used || f->idx != h.idx || f->kind != PROTO_XK_FILE ||
	    !f->planned || f->done) {
		r = LR_EBADMSG;
	} else if (f->pipe && !f->have_sum) {
		if (h.chunk >= f->nchunks + PIPE_LEAD ||
		    h.chunk >= XFER_MAX_CHUNKS ||
		    (stdout_mode && h.chunk > x->next_out + PIPE_LEAD))
			r = LR_ETOOBIG;
		else if (h.chunk >= f->nchunks) {
			r = file_grow(f, h.chunk + 1);
			if (!r)
				f->nchunks = h.chunk + 1;
		}
	} else if (h.chunk >= f->nchunks ||
		   h.len != chunk_len(f, h.chunk, x->chunk)) {
		r = LR_EBADMSG;
	}
	if (!r && f->cstate[h.chunk] != CS_NEEDED &&
	    f->cstate[h.chunk] != CS_HELD && f->cstate[h.chunk] != CS_RESEND)
		r = LR_EBADMSG;
	if (r) {
		pthread_mutex_unlock(&x->lock);
		fatal(x, r,
		      "the sender sent a chunk that was not asked for "
		      "(entry %u, chunk %u): cut off",
		      h.idx, h.chunk);
		return -1;
	}
	prev = f->cstate[h.chunk];
	f->cstate[h.chunk] = CS_INFLIGHT;
	f->inflight++;
	fd = f->fd;
	shared = f->nchunks > 1 || f->pipe;
	pthread_mutex_unlock(&x->lock);

	t = now_ns();
	if (h.kind == PROTO_XC_ZERO)
		digest_zeros(h.len, d);
	else
		digest_chunk(data, h.len, d);
	*hash_ns += now_ns() - t;
	if (memcmp(d, h.digest, DIGEST_LEN)) {
		pthread_mutex_lock(&x->lock);
		f->cstate[h.chunk] = CS_RESEND;
		if (++f->tries[h.chunk] > XFER_MAX_RETRIES)
			recv_file_fail(x, f,
				       "chunk %u failed verification "
				       "%u times",
				       h.chunk, XFER_MAX_RETRIES + 1);
		else
			r = push_ack(x, h.idx, h.chunk, PROTO_XS_CHUNK_BAD, 0);
		f->inflight--;
		pthread_mutex_unlock(&x->lock);
		wake(x);
		if (r) {
			fatal(x, r, "out of memory");
			return -1;
		}
		return 0;
	}
	off = (uint64_t)h.chunk * x->chunk;
	t = now_ns();
	if (stdout_mode) {
		pthread_mutex_lock(&x->lock);
		while (x->next_out != h.chunk && !atomic_load(&x->abort))
			pthread_cond_wait(&x->out_cv, &x->lock);
		pthread_mutex_unlock(&x->lock);
		if (atomic_load(&x->abort))
			return -1;
		if (h.kind == PROTO_XC_DATA) {
			r = write_full(x->outfd, data, h.len);
		} else {
			uint32_t left = h.len;

			while (left && !r) {
				uint32_t k = left < sizeof(zeros)
						     ? left
						     : sizeof(zeros);

				r = write_full(x->outfd, zeros, k);
				left -= k;
			}
		}
		pthread_mutex_lock(&x->lock);
		x->next_out++;
		pthread_cond_broadcast(&x->out_cv);
		pthread_mutex_unlock(&x->lock);
	} else if (h.kind == PROTO_XC_DATA) {
		/* Stream threads writing one file at once meet on its inode
		 * lock, where the kernel spins while the holder copies a
		 * chunk: on a small machine that spinning takes the cores
		 * the cipher and the sender need. Queue here instead, asleep. A
		 * file of one chunk has one writer: no lock. */
		pthread_mutex_t *wl = &x->wlock[SLOT(h.idx) % WLOCKS];

		if (shared)
			pthread_mutex_lock(wl);
		r = write_full_at(fd, data, h.len, off);
		if (shared)
			pthread_mutex_unlock(wl);
	}
	*disk_ns += now_ns() - t;
	pthread_mutex_lock(&x->lock);
	if (r) {
		if (stdout_mode) {
			pthread_mutex_unlock(&x->lock);
			fatal(x, r, "writing to standard output: %s",
			      lr_strerror(r));
			return -1;
		}
		recv_file_fail(x, f, "writing: %s", lr_strerror(r));
		r = 0;
	} else if (f->failed) {
		/* failed meanwhile: nothing to acknowledge */
	} else {
		f->cstate[h.chunk] = CS_GOT;
		memcpy(f->digests + (size_t)h.chunk * DIGEST_LEN, d,
		       DIGEST_LEN);
		f->sent++;
		if (prev != CS_HELD)
			f->finished++;
		x->bytes_done += h.len;
		r = push_ack(x, h.idx, h.chunk, PROTO_XS_CHUNK_OK, h.len);
		if (!r && f->jfd >= 0)
			f->jpend[f->njpend++] = h.chunk;
	}
	f->inflight--;
	mine = !r && !f->inflight && final_ready(f);
	if (mine)
		f->done = true;
	if (mine && f->implicit_sum && st->nready < READY_MAX) {
		/* small files: named after the whole record is written,
		 * with one syncfs for all of them */
		st->ready[st->nready++] = f;
		mine = false;
	}
	pthread_mutex_unlock(&x->lock);
	if (mine)
		r = finish_file(x, f, false);
	/* the control thread is woken once per record (recv_stream), not
	 * once per small file in it */
	if (r) {
		fatal(x, r, "out of memory");
		return -1;
	}
	return 0;
}

static void *recv_stream(void *arg)
{
	struct sthread *st = arg;
	struct xsess *x = st->x;
	struct conn *c = &x->cs->data[st->i];
	size_t cap = PROTO_XFER_CHUNK_HDR_LEN + x->chunk + CRYPTO_TAG_LEN;
	uint64_t disk_ns = 0, hash_ns = 0;
	int64_t t0 = net_now_us();
	uint8_t *buf = malloc(cap);
	int r = 0;

	if (!buf) {
		fatal(x, -ENOMEM, "out of memory for a stream buffer");
		return NULL;
	}
	for (;;) {
		uint8_t type;
		size_t n, pos = 0, used;

		r = conn_recv_data(c, buf, cap, &type, &n);
		if (r) {
			if (r != -ECANCELED)
				fatal(x, r, "stream %u: %s", st->i + 1,
				      r == LR_ETRUNC ? "the sender's stream "
						       "ended early (cut?)"
						     : lr_strerror(r));
			break;
		}
		if (type == CONN_REC_END)
			break;
		atomic_store(&x->last_activity_ms, net_now_ms());
		/* a record holds one chunk, or several small ones */
		st->nready = 0;
		while (pos < n && !r) {
			r = recv_unit(x, st, buf + pos, n - pos, &used,
				      &disk_ns, &hash_ns);
			pos += used;
		}
		if (!r && st->nready) {
			/* one syncfs costs less than an fsync per file */
			bool synced = st->nready > 2 &&
				      !(x->o->flags & (PROTO_XF_NO_FSYNC |
						       PROTO_XF_STDOUT)) &&
				      !syncfs(x->destfd);
			uint64_t tt = now_ns();

			r = finish_files(x, st->ready, st->nready, synced);
			disk_ns += now_ns() - tt;
			if (r)
				fatal(x, r, "out of memory");
		}
		wake_if(x);
		if (r)
			break;
	}
	add_waits(x, c, disk_ns, hash_ns, t0);
	atomic_fetch_add(&x->ended, 1);
	free(buf);
	return NULL;
}

/* Append the chunks written since the last time to a file's journal,
 * after the data they describe has reached the device. */
static void journal_flush(struct xsess *x, struct xfile *f)
{
	uint32_t *list, n, i;
	uint8_t *out;

	pthread_mutex_lock(&x->lock);
	n = f->njpend;
	if (!n || f->jfd < 0) {
		pthread_mutex_unlock(&x->lock);
		return;
	}
	list = malloc((size_t)n * sizeof(*list));
	out = malloc((size_t)n * JOURNAL_REC_LEN);
	if (!list || !out) {
		pthread_mutex_unlock(&x->lock);
		free(list);
		free(out);
		return;
	}
	memcpy(list, f->jpend, (size_t)n * sizeof(*list));
	for (i = 0; i < n; i++)
		journal_encode_rec(list[i],
				   f->digests + (size_t)list[i] * DIGEST_LEN,
				   out + (size_t)i * JOURNAL_REC_LEN);
	f->njpend = 0;
	pthread_mutex_unlock(&x->lock);
	if (!(x->o->flags & PROTO_XF_NO_FSYNC))
		fdatasync(f->fd);
	if (write_full(f->jfd, out, (size_t)n * JOURNAL_REC_LEN)) {
		/* a journal that cannot grow only costs a resume */
	}
	free(list);
	free(out);
}

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
	if (chunk >= f->nchunks || f->cstate[chunk] == CS_HELD)
		return;
	f->cstate[chunk] = CS_HELD;
	memcpy(f->digests + (size_t)chunk * DIGEST_LEN, digest, DIGEST_LEN);
	hc->count++;
}

/* Try to pick up an earlier attempt at f: 1 when resumed. */
static int try_resume(struct xsess *x, struct xfile *f,
		      const struct proto_xfer_entry *e, char *jname)
{
	struct journal_hdr jh;
	struct held_ctx hc = { .f = f };
	struct stat st;
	size_t cap, nrec;
	uint8_t *jb;
	ssize_t k;
	int jfd, fd;

	jfd = openat(f->dirfd, jname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd < 0)
		return 0;
	cap = JOURNAL_HDR_LEN + (size_t)f->nchunks * 2 * JOURNAL_REC_LEN;
	jb = malloc(cap);
	if (!jb || fstat(jfd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > cap) {
		free(jb);
		close(jfd);
		return 0;
	}
	k = pread(jfd, jb, cap, 0);
	close(jfd);
	if (k < 0 || journal_decode(jb, (size_t)k, &jh, held_rec, &hc, &nrec) ||
	    !journal_matches(&jh, e->size, e->mtime_sec, e->mtime_nsec,
			     x->chunk)) {
		free(jb);
		memset(f->cstate, 0, f->nchunks);
		return 0;
	}
	free(jb);
	fd = openat(f->dirfd, f->tmp, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_nlink != 1 || (uint64_t)st.st_size != e->size) {
		if (fd >= 0)
			close(fd);
		memset(f->cstate, 0, f->nchunks);
		return 0;
	}
	f->fd = fd;
	f->jfd = openat(f->dirfd, jname,
			O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	f->finished = hc.count;
	return 1;
}

/* Decide what to do with an announced file; fills plan (and HELD items
 * into b when resuming). Returns 0 or a fatal error. */
static int plan_file(struct xsess *x, struct xfile *f,
		     const struct proto_xfer_entry *e, struct proto_buf *b,
		     struct proto_xfer_plan *plan)
{
	char parent[FSIO_MAX_PATH + 1], jname[FSIO_MAX_NAME + 1];
	uint32_t flags = x->o->flags;
	struct stat st;
	int dfd, r;

	plan->idx = e->idx;
	plan->action = PROTO_XA_SEND;
	if (!f->pipe) {
		if (chunks_of64(e->size, x->chunk) > XFER_MAX_CHUNKS) {
			plan->action = PROTO_XA_REFUSE;
			snprintf(f->reason, sizeof(f->reason),
				 "too large for the chunk size: at most %u "
				 "chunks a file (use --chunk 8M)",
				 XFER_MAX_CHUNKS);
			return 0;
		}
		f->nchunks = chunks_of(e->size, x->chunk);
		f->implicit_sum = f->nchunks <= 1;
		f->jpend = malloc((size_t)(f->nchunks ? f->nchunks : 1) *
				  sizeof(*f->jpend));
		if (file_grow(f, f->nchunks ? f->nchunks : 1) || !f->jpend) {
			plan->action = PROTO_XA_REFUSE;
			snprintf(f->reason, sizeof(f->reason),
				 "out of memory for its %u chunks", f->nchunks);
			return 0;
		}
	} else if (file_grow(f, 16)) {
		return -ENOMEM;
	}
	if (flags & PROTO_XF_STDOUT)
		return 0;
	fsio_split(e->path, e->path_len, parent, f->name);
	dfd = dirh_get(x, parent, f);
	if (dfd < 0) {
		plan->action = PROTO_XA_REFUSE;
		snprintf(f->reason, sizeof(f->reason),
			 "cannot open its directory: %s", lr_strerror(dfd));
		return 0;
	}
	f->dirfd = dfd;
	/* in a directory this session made, nothing is there it did not
	 * make: no lookup */
	if (!(flags & PROTO_XF_SCRATCH) && !(f->dh && f->dh->fresh) &&
	    !fstatat(dfd, f->name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (S_ISDIR(st.st_mode)) {
			plan->action = PROTO_XA_REFUSE;
			snprintf(f->reason, sizeof(f->reason),
				 "a directory of that name exists");
			return 0;
		}
		/* the same size and mtime: up to date, whatever the flags
		 * (rsync's quick check); it lets an interrupted transfer be
		 * run again without --overwrite */
		if (!(flags & PROTO_XF_OVERWRITE) && S_ISREG(st.st_mode) &&
		    !f->pipe && (uint64_t)st.st_size == e->size &&
		    st.st_mtim.tv_sec == e->mtime_sec &&
		    (uint32_t)st.st_mtim.tv_nsec == e->mtime_nsec) {
			plan->action = PROTO_XA_SKIP;
			return 0;
		}
		if (!(flags & (PROTO_XF_OVERWRITE | PROTO_XF_UPDATE))) {
			plan->action = PROTO_XA_REFUSE;
			snprintf(f->reason, sizeof(f->reason),
				 "exists (use --overwrite or --update)");
			return 0;
		}
	}
	fsio_temp_name(f->name, f->tmp);
	fsio_journal_name(f->name, jname);
	if (!f->pipe && f->nchunks >= JOURNAL_MIN_CHUNKS &&
	    !(flags & (PROTO_XF_SCRATCH | PROTO_XF_NO_FSYNC)) &&
	    try_resume(x, f, e, jname)) {
		uint32_t i;

		plan->action = PROTO_XA_RESUME;
		for (i = 0; i < f->nchunks; i++) {
			struct proto_xfer_held hd = { .idx = e->idx,
						      .chunk = i };

			if (f->cstate[i] != CS_HELD)
				continue;
			memcpy(hd.digest, f->digests + (size_t)i * DIGEST_LEN,
			       DIGEST_LEN);
			if (!proto_xfer_batch_room(b, PROTO_XFER_HELD_LEN)) {
				r = proto_msg_end(b) ?: ctrl_send(x, b);
				if (r)
					return r;
				proto_msg_begin(b, PROTO_XFER_PLAN);
			}
			proto_put_xfer_held(b, &hd);
			pthread_mutex_lock(&x->lock);
			x->bytes_held += chunk_len(f, i, x->chunk);
			pthread_mutex_unlock(&x->lock);
		}
		return 0;
	}
	if (f->nchunks >= JOURNAL_MIN_CHUNKS)
		unlinkat(dfd, jname, 0);
	/* created with its final permissions when the umask allows (no
	 * chmod later), and always writable by its owner (a resume) */
	f->cmode = (uint16_t)(((f->mode & 0777) | 0600) & ~x->umask);
	/* a file without a journal (it would start again anyway) in a
	 * directory this session made (no name, and no temporary file or
	 * journal of an earlier attempt, can be there): unnamed until
	 * complete, then linked. One change to the directory instead of two
	 * (create, rename), so the stream threads naming files and this
	 * thread creating them meet less on the directory's lock, and
	 * nothing is left behind when interrupted. */
	if (((f->dh && f->dh->fresh) || (flags & PROTO_XF_SCRATCH)) &&
	    !x->no_anon && !f->pipe && f->nchunks < JOURNAL_MIN_CHUNKS) {
		r = fsio_open_anon(dfd, (mode_t)((f->mode & 0777) | 0600));
		if (r >= 0) {
			f->fd = r;
			f->anon = true;
			f->tmp[0] = '\0';
			goto created;
		}
		if (r == -EOPNOTSUPP || r == -EISDIR || r == -EINVAL)
			x->no_anon = true;
	}
	f->fd = openat(dfd, f->tmp,
		       O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC,
		       (mode_t)((f->mode & 0777) | 0600));
	if (f->fd < 0 && errno == EEXIST) {
		/* left by an earlier attempt that cannot be resumed */
		unlinkat(dfd, f->tmp, 0);
		f->fd = openat(dfd, f->tmp,
			       O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW |
				       O_CLOEXEC,
			       (mode_t)((f->mode & 0777) | 0600));
	}
	if (f->fd < 0) {
		plan->action = PROTO_XA_REFUSE;
		snprintf(f->reason, sizeof(f->reason),
			 "cannot create its temporary file: %s",
			 lr_strerror(-errno));
		return 0;
	}
created:
	if (!f->pipe && f->nchunks > 1) {
		r = fsio_reserve(f->fd, e->size, e->eflags & PROTO_XE_SPARSE);
		if (r) {
			plan->action = PROTO_XA_REFUSE;
			snprintf(f->reason, sizeof(f->reason),
				 "%s (%llu bytes needed)",
				 r == -ENOSPC ? "no space left on the "
						"destination"
					      : lr_strerror(r),
				 (unsigned long long)e->size);
			close(f->fd);
			f->fd = -1;
			if (!f->anon)
				unlinkat(dfd, f->tmp, 0);
			return 0;
		}
	}
	/* without fsync a journal could claim data the disk lost: none */
	if (!f->pipe && f->nchunks >= JOURNAL_MIN_CHUNKS &&
	    !(x->o->flags & (PROTO_XF_NO_FSYNC | PROTO_XF_SCRATCH))) {
		struct journal_hdr jh = {
			.size = e->size,
			.mtime_sec = e->mtime_sec,
			.mtime_nsec = e->mtime_nsec,
			.chunk_size = x->chunk,
			.nchunks = f->nchunks,
		};
		uint8_t hb[JOURNAL_HDR_LEN];

		journal_encode_hdr(&jh, hb);
		f->jfd = openat(dfd, jname,
				O_CREAT | O_EXCL | O_WRONLY | O_APPEND |
					O_NOFOLLOW | O_CLOEXEC,
				0600);
		if (f->jfd >= 0 && write_full(f->jfd, hb, sizeof(hb))) {
			close(f->jfd);
			f->jfd = -1;
			unlinkat(dfd, jname, 0);
		}
	}
	return 0;
}

/* Name the complete unnamed file f. The name was free when the file was
 * planned; if one appeared since, --overwrite and --update replace it
 * through a temporary name, as named files are. 0 or -errno. */
static int link_anon(struct xfile *f, uint32_t flags)
{
	int r = fsio_link_anon(f->fd, f->dirfd, f->name);

	if (r != -EEXIST || !(flags & (PROTO_XF_OVERWRITE | PROTO_XF_UPDATE)))
		return r;
	fsio_temp_name(f->name, f->tmp);
	unlinkat(f->dirfd, f->tmp, 0);
	r = fsio_link_anon(f->fd, f->dirfd, f->tmp);
	if (!r && renameat(f->dirfd, f->tmp, f->dirfd, f->name)) {
		r = -errno;
		unlinkat(f->dirfd, f->tmp, 0);
	}
	f->tmp[0] = '\0';
	return r;
}

/* Give a complete file its final name. Returns 0 or fills f->reason. */
static int finalize(struct xsess *x, struct xfile *f, bool synced)
{
	uint8_t d[DIGEST_LEN];
	char jname[FSIO_MAX_NAME + 1];
	struct timespec ts[2];
	uint32_t flags = x->o->flags;
	mode_t mode;
	int r;

	digest_file(f->size, x->chunk, f->nchunks, f->digests, d);
	if (!f->implicit_sum && memcmp(d, f->sum.digest, DIGEST_LEN)) {
		snprintf(f->reason, sizeof(f->reason),
			 "file digest mismatch (the source changed during "
			 "the transfer?)");
		return LR_EDIGEST;
	}
	if (flags & PROTO_XF_STDOUT)
		return 0;
	if ((f->from_pipe || (f->eflags & PROTO_XE_SPARSE)) &&
	    ftruncate(f->fd, (off_t)f->size)) {
		snprintf(f->reason, sizeof(f->reason), "truncate: %s",
			 lr_strerror(-errno));
		return -errno;
	}
	mode = f->mode & ((flags & PROTO_XF_KEEP_SETID) ? 07777 : 01777);
	if ((mode != f->cmode || !f->cmode) && fchmod(f->fd, mode)) {
		snprintf(f->reason, sizeof(f->reason), "chmod: %s",
			 lr_strerror(-errno));
		return -errno;
	}
	ts[0].tv_sec = 0;
	ts[0].tv_nsec = UTIME_NOW;
	ts[1].tv_sec = f->mtime_sec;
	ts[1].tv_nsec = f->mtime_nsec;
	if (futimens(f->fd, ts)) {
		snprintf(f->reason, sizeof(f->reason), "setting mtime: %s",
			 lr_strerror(-errno));
		return -errno;
	}
	if (!(flags & PROTO_XF_NO_FSYNC) && !synced && fsync(f->fd)) {
		snprintf(f->reason, sizeof(f->reason), "fsync: %s",
			 lr_strerror(-errno));
		return -errno;
	}
	if (flags & PROTO_XF_SCRATCH) {
		/* doctor: written, verified and synced; never named */
		if (!f->anon)
			unlinkat(f->dirfd, f->tmp, 0);
		return 0;
	}
	r = f->anon ? link_anon(f, flags)
	    : renameat2(f->dirfd, f->tmp, f->dirfd, f->name,
			(flags & (PROTO_XF_OVERWRITE | PROTO_XF_UPDATE))
				? 0
				: RENAME_NOREPLACE)
		    ? -errno
		    : 0;
	if (r) {
		snprintf(f->reason, sizeof(f->reason), "%s",
			 r == -EEXIST ? "exists (use --overwrite or --update)"
				      : lr_strerror(r));
		return r;
	}
	if (f->jfd >= 0) {
		fsio_journal_name(f->name, jname);
		unlinkat(f->dirfd, jname, 0);
	}
	return 0;
}

/* A file got its name in f->dirfd: a directory of its own is synced at
 * once; true when a shared handle must be marked dirty (under the lock,
 * by the caller) to be synced once per batch. */
static bool dir_named(struct xsess *x, struct xfile *f)
{
	if (f->dirfd < 0 ||
	    (x->o->flags & (PROTO_XF_NO_FSYNC | PROTO_XF_STDOUT)))
		return false;
	if (!f->dh) {
		fsync(f->dirfd);
		return false;
	}
	return true;
}

/* fsync the directories noted since the last time. */
static void dirs_sync(struct xsess *x)
{
	unsigned i;

	/* the handles' fds stay open while a file refers to them, and only
	 * the control thread closes or replaces them */
	for (i = 0; i < DIRH_MAX; i++) {
		bool d;

		pthread_mutex_lock(&x->lock);
		d = x->dirh[i].dirty && x->dirh[i].fd >= 0;
		x->dirh[i].dirty = false;
		pthread_mutex_unlock(&x->lock);
		if (d)
			fsync(x->dirh[i].fd);
	}
}

/* The handle on directory rel, or NULL. Under the lock. */
static struct dirh *dirh_find(struct xsess *x, const char *rel)
{
	unsigned i;

	for (i = 0; i < DIRH_MAX; i++)
		if (x->dirh[i].fd >= 0 && !x->dirh[i].gone &&
		    !strcmp(x->dirh[i].rel, rel))
			return &x->dirh[i];
	return NULL;
}

/* Make h the handle on directory rel, open as fd, closing what it held
 * (no file refers to it: dirh_free). Under the lock. */
static void dirh_set(struct dirh *h, const char *rel, int fd, bool fresh)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = fd;
	h->fresh = fresh;
	h->dirty = false;
	h->gone = false;
	snprintf(h->rel, sizeof(h->rel), "%s", rel);
}

/* A handle to reuse for another directory: the oldest one no file of the
 * window refers to, synced when dirty; NULL when all are in use. Under
 * the lock (dropped and taken again around the fsync). */
static struct dirh *dirh_free(struct xsess *x)
{
	struct dirh *h = NULL;
	unsigned i;

	for (i = 0; i < DIRH_MAX; i++)
		if (!x->dirh[i].refs &&
		    (!h || x->dirh[i].fd < 0 || x->dirh[i].tick < h->tick)) {
			h = &x->dirh[i];
			if (h->fd < 0)
				break;
		}
	if (h && h->fd >= 0 && h->dirty) {
		/* no file refers to it, and only this thread replaces
		 * handles: it can be synced without the lock */
		h->dirty = false;
		pthread_mutex_unlock(&x->lock);
		fsync(h->fd);
		pthread_mutex_lock(&x->lock);
	}
	return h;
}

/* The descriptor of directory rel below the destination for file f,
 * made when missing: a shared handle (f->dh) or, when every handle is in
 * use, one of f's own. Control thread only. */
static int dirh_get(struct xsess *x, const char *rel, struct xfile *f)
{
	struct dirh *h;
	bool made;
	int fd;

	pthread_mutex_lock(&x->lock);
	h = dirh_find(x, rel);
	if (!h) {
		h = dirh_free(x);
		if (h) {
			fd = fsio_make_dir(x->destfd, rel, 0755, &made);
			if (fd < 0) {
				pthread_mutex_unlock(&x->lock);
				return fd;
			}
			dirh_set(h, rel, fd, made);
		}
	}
	if (h) {
		h->refs++;
		h->tick = ++x->dirh_tick;
		f->dh = h;
		pthread_mutex_unlock(&x->lock);
		return h->fd;
	}
	pthread_mutex_unlock(&x->lock);
	return fsio_open_dir(x->destfd, rel, true, 0755);
}

/* The directory rel was just made (fd open on it): keep fd in a handle,
 * marked fresh, for the files that follow it. Takes fd. Control thread. */
static void dirh_made(struct xsess *x, const char *rel, int fd)
{
	struct dirh *h;

	pthread_mutex_lock(&x->lock);
	h = dirh_find(x, rel);
	if (h) {
		/* a handle on a directory of that name that was moved or
		 * removed since: files in flight keep it, new ones must not
		 * find it */
		h->gone = true;
	}
	h = dirh_free(x);
	if (!h || strlen(rel) >= sizeof(h->rel)) {
		pthread_mutex_unlock(&x->lock);
		close(fd);
		return;
	}
	dirh_set(h, rel, fd, true);
	h->tick = ++x->dirh_tick;
	pthread_mutex_unlock(&x->lock);
}

/* The process's umask without changing it (no other thread races). */
static mode_t read_umask(void)
{
	char line[128];
	unsigned m = 022;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 022;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Umask: %o", &m) == 1)
			break;
	fclose(f);
	return (mode_t)m;
}

/* Finalize files that are complete (done set, no chunk in flight) and
 * account for them under one lock. Called without the lock. */
static int finish_files(struct xsess *x, struct xfile *const *fs, unsigned n,
			bool synced)
{
	int fr[READY_MAX];
	bool dirty[READY_MAX];
	unsigned i;
	int r = 0;

	if (n > READY_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		fr[i] = finalize(x, fs[i], synced);
		dirty[i] = !fr[i] && dir_named(x, fs[i]);
	}
	pthread_mutex_lock(&x->lock);
	for (i = 0; i < n; i++) {
		struct xfile *f = fs[i];

		if (dirty[i])
			f->dh->dirty = true;
		if (fr[i]) {
			char why[sizeof(f->reason)];

			memcpy(why, f->reason, sizeof(why));
			f->done = false;
			recv_file_fail(x, f, "%s", why);
			continue;
		}
		if (!r)
			r = push_ack(x, f->idx, 0, PROTO_XS_FILE_DONE, 0);
		x->res->files_ok++;
		x->files_done++;
		file_event(x, f, true, false, NULL);
		file_release(f);
	}
	pthread_mutex_unlock(&x->lock);
	return r;
}

static int finish_file(struct xsess *x, struct xfile *f, bool synced)
{
	return finish_files(x, &f, 1, synced);
}

/* Abandon a file: a resumable one keeps its temporary file and journal. */
static void recv_abandon(struct xsess *x, struct xfile *f, bool keep)
{
	char jname[FSIO_MAX_NAME + 1];

	if (f->kind != PROTO_XK_FILE || (x->o->flags & PROTO_XF_STDOUT) ||
	    f->dirfd < 0 || !f->tmp[0])
		return;
	if (keep && f->jfd >= 0) {
		journal_flush(x, f);
		return;
	}
	if (f->fd >= 0 || f->jfd >= 0) {
		unlinkat(f->dirfd, f->tmp, 0);
		fsio_journal_name(f->name, jname);
		unlinkat(f->dirfd, jname, 0);
	}
}

static void late_free(struct late *l)
{
	while (l) {
		struct late *n = l->next;

		free(l->path);
		free(l->target);
		free(l);
		l = n;
	}
}

static int late_add(struct late **head, const struct proto_xfer_entry *e)
{
	struct late *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->kind = e->kind;
	l->mode = e->mode;
	l->mtime_sec = e->mtime_sec;
	l->mtime_nsec = e->mtime_nsec;
	l->path = strndup(e->path, e->path_len);
	if (e->target_len)
		l->target = strndup(e->target, e->target_len);
	if (!l->path || (e->target_len && !l->target)) {
		free(l->path);
		free(l->target);
		free(l);
		return -ENOMEM;
	}
	l->next = *head;
	*head = l;
	return 0;
}

/* Symlinks, then directories' modes and times (children first: the list
 * is in reverse order of announcement). Failures counted into failed. */
static void late_apply(struct xsess *x, struct late *l, struct proto_buf *fb,
		       uint64_t *failed)
{
	char parent[FSIO_MAX_PATH + 1], name[FSIO_MAX_NAME + 1];
	bool overwrite = x->o->flags & (PROTO_XF_OVERWRITE | PROTO_XF_UPDATE);
	struct late *i;

	for (i = l; i; i = i->next) {
		int dfd, e = 0;

		if (i->kind != PROTO_XK_SYMLINK)
			continue;
		fsio_split(i->path, strlen(i->path), parent, name);
		dfd = fsio_open_dir(x->destfd, parent, true, 0755);
		if (dfd < 0) {
			e = dfd;
		} else if (symlinkat(i->target, dfd, name)) {
			struct stat st;

			e = -errno;
			if (e == -EEXIST && overwrite &&
			    !fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
			    !S_ISDIR(st.st_mode) && !unlinkat(dfd, name, 0))
				e = symlinkat(i->target, dfd, name) ? -errno
								    : 0;
		}
		if (e) {
			struct proto_xfer_fail fl = { .code = (uint32_t)-e };
			char esc[FSIO_MAX_PATH * 4 + 1];

			snprintf(fl.text, sizeof(fl.text), "%s: %s",
				 fsio_escape(i->path, strlen(i->path), esc,
					     sizeof(esc)),
				 e == -EEXIST ? "exists (use --overwrite)"
					      : lr_strerror(e));
			(*failed)++;
			if (!x->res->first_failure[0])
				snprintf(x->res->first_failure,
					 sizeof(x->res->first_failure), "%s",
					 fl.text);
			if (proto_xfer_batch_room(fb, 4 + 8 + strlen(fl.text)))
				proto_put_xfer_fail(fb, &fl);
		} else {
			struct timespec ts[2] = {
				{ .tv_nsec = UTIME_NOW },
				{ i->mtime_sec, i->mtime_nsec },
			};

			utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW);
		}
		if (dfd >= 0)
			close(dfd);
	}
	for (i = l; i; i = i->next) {
		struct timespec ts[2] = {
			{ .tv_nsec = UTIME_NOW },
			{ i->mtime_sec, i->mtime_nsec },
		};
		int dfd;

		if (i->kind != PROTO_XK_DIR)
			continue;
		dfd = fsio_open_dir(x->destfd, i->path, false, 0);
		if (dfd < 0)
			continue;
		fchmod(dfd,
		       i->mode & ((x->o->flags & PROTO_XF_KEEP_SETID) ? 07777
								      : 01777));
		futimens(dfd, ts);
		if (!(x->o->flags & PROTO_XF_NO_FSYNC))
			fsync(dfd);
		close(dfd);
	}
}

/* Flush queued ACKs and file outcomes; finalize ready files. */
static int recv_service(struct xsess *x, uint8_t *buf)
{
	struct proto_xfer_ack *acks;
	uint32_t finals[XFER_WINDOW];
	unsigned nacks, nfinals, i, limit;
	struct proto_buf b;
	bool synced;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	nfinals = x->nfinals;
	memcpy(finals, x->finals, nfinals * sizeof(finals[0]));
	x->nfinals = 0;
	pthread_mutex_unlock(&x->lock);
	/* one syncfs for a batch of files costs less than an fsync each */
	synced = nfinals > 2 && x->destfd >= 0 &&
		 !(x->o->flags & (PROTO_XF_NO_FSYNC | PROTO_XF_STDOUT)) &&
		 !syncfs(x->destfd);
	for (i = 0; i < nfinals; i++) {
		r = finish_file(x, &x->win[finals[i]], synced);
		if (r)
			return r;
	}
	/* a FILE_DONE goes out only after its directory is synced: take
	 * the acknowledgements queued so far, then sync */
	pthread_mutex_lock(&x->lock);
	limit = x->nacks;
	pthread_mutex_unlock(&x->lock);
	dirs_sync(x);
	proto_buf_init(&b, buf, MSG_BUF);
	proto_msg_begin(&b, PROTO_XFER_ACKS);
	pthread_mutex_lock(&x->lock);
	for (i = 0; i < XFER_WINDOW && x->any_failed; i++) {
		struct xfile *f = &x->win[i];
		struct proto_xfer_fail fl = { .idx = f->idx, .code = EIO };

		if (!x->fail_pending[i])
			continue;
		x->fail_pending[i] = false;
		snprintf(fl.text, sizeof(fl.text), "%s", f->reason);
		if (!proto_xfer_batch_room(&b, 4 + 8 + strlen(fl.text) +
						       PROTO_XFER_ACK_LEN + 4))
			break;
		proto_put_xfer_fail(&b, &fl);
		push_ack(x, f->idx, 0, PROTO_XS_FILE_FAILED, 0);
		limit = x->nacks;
		x->res->files_failed++;
		x->files_done++;
		note_failure(x, f, f->reason);
		file_event(x, f, false, false, f->reason);
		/* its temporary file goes; chunks still in flight drain */
		recv_abandon(x, f, false);
		f->planned = true;
	}
	pthread_mutex_unlock(&x->lock);
	for (;;) {
		pthread_mutex_lock(&x->lock);
		acks = x->acks;
		nacks = limit < x->nacks ? limit : x->nacks;
		if (!nacks) {
			pthread_mutex_unlock(&x->lock);
			break;
		}
		/* FAIL items must precede their ACK: they are in b already */
		for (i = 0; i < nacks; i++) {
			if (!proto_xfer_batch_room(&b, PROTO_XFER_ACK_LEN))
				break;
			proto_put_xfer_ack(&b, &acks[i]);
		}
		memmove(acks, acks + i, (x->nacks - i) * sizeof(*acks));
		x->nacks -= i;
		limit -= i;
		pthread_mutex_unlock(&x->lock);
		r = proto_msg_end(&b) ?: ctrl_send(x, &b);
		if (r)
			return r;
		proto_msg_begin(&b, PROTO_XFER_ACKS);
		if (!limit) {
			/* more came meanwhile: sync their directories and
			 * send them too, rather than wait for the next tick
			 * (their pushes did not wake us: the queue was not
			 * empty) */
			pthread_mutex_lock(&x->lock);
			limit = x->nacks;
			pthread_mutex_unlock(&x->lock);
			if (limit)
				dirs_sync(x);
		}
	}
	/* release failed files no chunk of which is still being written */
	pthread_mutex_lock(&x->lock);
	for (i = 0; i < XFER_WINDOW && x->any_failed; i++) {
		struct xfile *f = &x->win[i];

		if (f->used && f->failed && !x->fail_pending[i] && !f->inflight)
			file_release(f);
	}
	pthread_mutex_unlock(&x->lock);
	return 0;
}

static bool window_empty(struct xsess *x)
{
	unsigned i;
	bool empty = true;

	pthread_mutex_lock(&x->lock);
	for (i = 0; i < XFER_WINDOW && empty; i++)
		empty = !x->win[i].used;
	pthread_mutex_unlock(&x->lock);
	return empty;
}

/* Receiver: one FILES message. */
static int on_files(struct xsess *x, const uint8_t *body, size_t len,
		    uint8_t *out, uint32_t *next_idx,
		    const struct proto_xfer_totals *tot, uint64_t *nfiles,
		    uint64_t *nbytes, struct late **late, struct lr_err *err)
{
	struct proto_xfer_iter it;
	struct proto_buf b;
	int r;

	proto_buf_init(&b, out, MSG_BUF);
	proto_msg_begin(&b, PROTO_XFER_PLAN);
	proto_xfer_iter_init(&it, body, len);
	while ((r = proto_xfer_iter_next(&it)) == 1) {
		struct proto_xfer_entry e;
		struct proto_xfer_plan plan;
		struct xfile *f;
		const char *why;
		char path[FSIO_MAX_PATH + 1];

		if (proto_xfer_get_entry(&it, &e))
			return lr_err_set(err, LR_EBADMSG,
					  "the sender announced a malformed "
					  "entry");
		if (e.idx != *next_idx)
			return lr_err_set(err, LR_EBADMSG,
					  "entry %u announced out of order",
					  e.idx);
		f = &x->win[SLOT(e.idx)];
		if (f->used && f->failed) {
			/* a failed file's last chunks are still draining */
			int64_t until = net_now_ms() + 5000;

			/* plans before any acknowledgement */
			r = proto_msg_end(&b) ?: ctrl_send(x, &b);
			if (r)
				return lr_err_setc(err, r, "sending a plan");
			proto_msg_begin(&b, PROTO_XFER_PLAN);

			pthread_mutex_lock(&x->lock);
			while (f->used &&
			       (f->inflight || x->fail_pending[SLOT(e.idx)]) &&
			       net_now_ms() < until) {
				pthread_mutex_unlock(&x->lock);
				recv_service(x, out);
				usleep(1000);
				pthread_mutex_lock(&x->lock);
			}
			if (f->used && !f->inflight &&
			    !x->fail_pending[SLOT(e.idx)])
				file_release(f);
			pthread_mutex_unlock(&x->lock);
		}
		if (f->used)
			return lr_err_set(err, LR_EBADMSG,
					  "the sender overran the window of "
					  "%u files",
					  XFER_WINDOW);
		if (++*nfiles > tot->files)
			return lr_err_set(err, LR_ETOOBIG,
					  "the sender announced more than the "
					  "%llu entries it said: cut off",
					  (unsigned long long)tot->files);
		if (e.kind == PROTO_XK_FILE &&
		    e.size != PROTO_XFER_SIZE_UNKNOWN &&
		    (*nbytes += e.size) > tot->bytes)
			return lr_err_set(err, LR_ETOOBIG,
					  "the sender announced more bytes "
					  "than the %llu it said: cut off",
					  (unsigned long long)tot->bytes);
		if ((x->o->flags & PROTO_XF_STDOUT) &&
		    (e.kind != PROTO_XK_FILE || e.idx > 0))
			return lr_err_set(err, LR_EBADMSG,
					  "--stdout takes one file, and the "
					  "sender sent more");
		(*next_idx)++;
		pthread_mutex_lock(&x->lock);
		x->announced = *next_idx;
		memset(f, 0, sizeof(*f));
		f->fd = f->dirfd = f->jfd = -1;
		f->used = true;
		f->idx = e.idx;
		f->kind = e.kind;
		f->eflags = e.eflags;
		f->mode = e.mode;
		f->mtime_sec = e.mtime_sec;
		f->mtime_nsec = e.mtime_nsec;
		f->size = e.size;
		f->pipe = e.size == PROTO_XFER_SIZE_UNKNOWN;
		f->path = strndup(e.path, e.path_len);
		pthread_mutex_unlock(&x->lock);
		if (!f->path)
			return lr_err_setc(err, -ENOMEM, "an entry's path");
		memcpy(path, e.path, e.path_len);
		path[e.path_len] = 0;
		if (fsio_path_check(e.path, e.path_len, &why)) {
			/* nothing is written for it; the session goes on */
			pthread_mutex_lock(&x->lock);
			f->planned = true;
			recv_file_fail(x, f, "refused: %s", why);
			pthread_mutex_unlock(&x->lock);
			if (e.kind == PROTO_XK_FILE) {
				plan = (struct proto_xfer_plan){
					e.idx, PROTO_XA_REFUSE
				};
				pthread_mutex_lock(&x->lock);
				x->fail_pending[SLOT(e.idx)] = false;
				x->res->files_failed++;
				x->files_done++;
				note_failure(x, f, f->reason);
				file_event(x, f, false, false, f->reason);
				pthread_mutex_unlock(&x->lock);
				goto put_plan;
			}
			continue;
		}
		if (e.kind == PROTO_XK_DIR) {
			bool made;
			int dfd = fsio_make_dir(x->destfd, path, 0700, &made);

			/* kept for its files, which follow it */
			if (dfd >= 0 && made)
				dirh_made(x, path, dfd);
			else if (dfd >= 0)
				close(dfd);
			pthread_mutex_lock(&x->lock);
			f->planned = true;
			r = 0;
			if (dfd < 0) {
				recv_file_fail(x, f, "%s", lr_strerror(dfd));
			} else {
				r = late_add(late, &e);
				f->done = true;
				x->files_done++;
				if (!r)
					r = push_ack(x, e.idx, 0,
						     PROTO_XS_FILE_DONE, 0);
				file_release(f);
			}
			pthread_mutex_unlock(&x->lock);
			if (r)
				return lr_err_setc(err, r, "memory");
			continue;
		}
		if (e.kind == PROTO_XK_SYMLINK) {
			pthread_mutex_lock(&x->lock);
			r = late_add(late, &e);
			x->files_done++;
			if (!r)
				r = push_ack(x, e.idx, 0, PROTO_XS_FILE_DONE,
					     0);
			file_release(f);
			pthread_mutex_unlock(&x->lock);
			if (r)
				return lr_err_setc(err, r, "memory");
			continue;
		}
		r = plan_file(x, f, &e, &b, &plan);
		if (r)
			return lr_err_setc(err, r, "planning %s", fpath(f));
		pthread_mutex_lock(&x->lock);
		f->planned = true;
		if (plan.action == PROTO_XA_SKIP) {
			x->res->files_skipped++;
			x->files_done++;
			x->bytes_held += e.size;
			file_event(x, f, true, true, NULL);
			file_release(f);
		} else if (plan.action == PROTO_XA_REFUSE) {
			x->res->files_failed++;
			x->files_done++;
			note_failure(x, f, f->reason);
			file_event(x, f, false, false, f->reason);
		}
		pthread_mutex_unlock(&x->lock);
		if (plan.action == PROTO_XA_SEND && f->nchunks == 0 &&
		    !f->pipe) {
			/* empty: complete now (its PLAN goes out before any
			 * acknowledgement, which waits for recv_service) */
			f->done = true;
			r = finish_file(x, f, false);
			if (r)
				return lr_err_setc(err, r, "memory");
		}
put_plan:
		if (plan.action == PROTO_XA_REFUSE) {
			struct proto_xfer_fail fl = { .idx = e.idx,
						      .code = EEXIST };

			snprintf(fl.text, sizeof(fl.text), "%s", f->reason);
			if (!proto_xfer_batch_room(
				    &b, 4 + 8 + strlen(fl.text) + 4 +
						PROTO_XFER_PLAN_LEN)) {
				r = proto_msg_end(&b) ?: ctrl_send(x, &b);
				if (r)
					return lr_err_setc(err, r, "sending");
				proto_msg_begin(&b, PROTO_XFER_PLAN);
			}
			proto_put_xfer_fail(&b, &fl);
			pthread_mutex_lock(&x->lock);
			if (f->dirfd >= 0 || f->fd >= 0)
				recv_abandon(x, f, false);
			file_release(f);
			pthread_mutex_unlock(&x->lock);
		}
		if (!proto_xfer_batch_room(&b, PROTO_XFER_PLAN_LEN)) {
			r = proto_msg_end(&b) ?: ctrl_send(x, &b);
			if (r)
				return lr_err_setc(err, r, "sending a plan");
			proto_msg_begin(&b, PROTO_XFER_PLAN);
		}
		proto_put_xfer_plan(&b, &plan);
	}
	if (r)
		return lr_err_set(err, LR_EBADMSG, "malformed FILES message");
	r = proto_msg_end(&b) ?: ctrl_send(x, &b);
	if (r)
		return lr_err_setc(err, r, "sending a plan");
	return 0;
}

static int on_sums(struct xsess *x, const uint8_t *body, size_t len,
		   struct lr_err *err)
{
	struct proto_xfer_iter it;
	int r;

	proto_xfer_iter_init(&it, body, len);
	while ((r = proto_xfer_iter_next(&it)) == 1) {
		struct proto_xfer_sum s;
		struct xfile *f;

		if (proto_xfer_get_sum(&it, &s))
			return lr_err_set(err, LR_EBADMSG, "malformed SUM");
		f = &x->win[SLOT(s.idx)];
		pthread_mutex_lock(&x->lock);
		if (!f->used || f->idx != s.idx || f->kind != PROTO_XK_FILE ||
		    f->have_sum) {
			bool gone = !f->used || f->idx != s.idx;

			pthread_mutex_unlock(&x->lock);
			if (gone)
				continue; /* failed and released already */
			return lr_err_set(err, LR_EBADMSG,
					  "a SUM for entry %u that is not a "
					  "file waiting for one",
					  s.idx);
		}
		if (f->pipe) {
			if (s.nchunks != chunks_of64(s.size, x->chunk) ||
			    s.nchunks < f->nchunks ||
			    s.nchunks > f->nchunks + PIPE_LEAD ||
			    s.nchunks > XFER_MAX_CHUNKS) {
				pthread_mutex_unlock(&x->lock);
				return lr_err_set(err, LR_EBADMSG,
						  "a pipe's SUM does not match "
						  "its chunks");
			}
			if (file_grow(f, s.nchunks ? s.nchunks : 1)) {
				pthread_mutex_unlock(&x->lock);
				return lr_err_setc(err, -ENOMEM, "memory");
			}
			f->nchunks = s.nchunks;
			f->size = s.size;
			f->pipe = false; /* chunk lengths are known now */
		} else if (s.size != f->size || s.nchunks != f->nchunks ||
			   s.sent > f->nchunks) {
			pthread_mutex_unlock(&x->lock);
			return lr_err_set(err, LR_EBADMSG,
					  "a SUM does not match its entry");
		}
		f->sum = s;
		f->have_sum = true;
		maybe_final(x, f);
		pthread_mutex_unlock(&x->lock);
	}
	if (r)
		return lr_err_set(err, LR_EBADMSG, "malformed SUMS message");
	wake(x);
	return 0;
}

int xfer_recv(struct xfer_conns *cs, int destfd, int outfd,
	      const struct xfer_opts *o, const struct xfer_callbacks *cb,
	      struct xfer_result *res, struct lr_err *err)
{
	struct proto_xfer_totals tot = { 0 };
	struct proto_xfer_done done = { 0 };
	struct sthread *ts = NULL;
	struct xfer_event ev = { 0 };
	struct late *late = NULL;
	struct xsess x;
	struct proto_buf b;
	struct proto_hdr h;
	uint8_t *buf, *rbuf;
	uint32_t next_idx = 0;
	uint64_t nfiles = 0, nbytes = 0;
	struct pclock pc = { 0 };
	bool got_end = false;
	int64_t next_tick, next_journal;
	int r;

	raise_nofile();
	r = sess_init(&x, cs, o, cb, res, false);
	if (r)
		return lr_err_setc(err, r, "starting the transfer");
	x.destfd = destfd;
	x.outfd = outfd;
	for (unsigned i = 0; i < DIRH_MAX; i++)
		x.dirh[i].fd = -1;
	/* an unnamed file is named through /proc/self/fd (AT_EMPTY_PATH
	 * needs a capability on older kernels): none without /proc */
	x.no_anon = access("/proc/self/fd", F_OK) != 0;
	x.umask = read_umask();
	buf = malloc(MSG_BUF);
	rbuf = malloc(MSG_BUF);
	ts = calloc(cs->n, sizeof(*ts));
	if (!buf || !rbuf || !ts) {
		r = lr_err_setc(err, -ENOMEM, "transfer buffers");
		goto out;
	}
	r = conn_recv_msg(cs->ctrl, rbuf, MSG_BUF, &h,
			  net_now_ms() + CTRL_TIMEOUT_MS, err);
	if (!r && h.type == PROTO_ERROR)
		r = peer_error(rbuf, h.len, err);
	else if (!r && (h.type != PROTO_XFER_TOTALS ||
			proto_decode_xfer_totals(rbuf, h.len, &tot)))
		r = lr_err_set(err, LR_EBADMSG,
			       "expected the sender's totals, got %s",
			       proto_type_name(h.type));
	else if (r && r != LR_ECLOSED)
		send_error_msg(&x, PROTO_ERR_BAD_REQUEST, err->msg);
	if (r)
		goto out;
	x.drop_limit = tot.bytes == UINT64_MAX ? UINT64_MAX / 2
					       : tot.bytes + (64u << 20);
	ev.kind = XFER_EV_START;
	progress_fill(&x, &ev.p, tot.bytes, tot.bytes != UINT64_MAX, tot.files);
	emit(&x, &ev);
	data_sockopts(&x);
	r = start_threads(&x, ts, recv_stream);
	if (r) {
		lr_err_setc(err, r, "starting stream threads");
		goto out_join;
	}
	next_tick = net_now_ms() + ACK_FLUSH_MS;
	next_journal = net_now_ms() + JOURNAL_MS;
	pc.next = net_now_ms() + (o->progress_ms ? o->progress_ms : 1000);
	for (;;) {
		int64_t now = net_now_ms(), tmo = next_tick - now;

		if (got_end && window_empty(&x))
			break;
		r = ctrl_turn(&x, tmo > 0 ? tmo : 0, rbuf, &h, "sender",
			      "receiver", err);
		if (r < 0)
			goto out_join;
		if (r == 1) {
			r = 0;
			switch (h.type) {
			case PROTO_XFER_FILES:
				r = got_end ? lr_err_set(err, LR_EBADMSG,
							 "FILES after END")
					    : on_files(&x, rbuf, h.len, buf,
						       &next_idx, &tot, &nfiles,
						       &nbytes, &late, err);
				break;
			case PROTO_XFER_SUMS:
				r = on_sums(&x, rbuf, h.len, err);
				break;
			case PROTO_XFER_END: got_end = true; break;
			case PROTO_ERROR:
				r = peer_error(rbuf, h.len, err);
				goto out_join;
			default:
				r = lr_err_set(err, LR_EBADMSG,
					       "unexpected %s from the sender",
					       proto_type_name(h.type));
			}
			if (r) {
				send_error_msg(&x, PROTO_ERR_BAD_REQUEST,
					       err->msg);
				goto out_join;
			}
		}
		now = net_now_ms();
		if (now >= next_tick || x.woken || got_end) {
			x.woken = false;
			r = recv_service(&x, buf);
			if (r) {
				lr_err_setc(err, r, "sending acknowledgements");
				goto out_join;
			}
			next_tick = now + ACK_FLUSH_MS;
		}
		if (now >= next_journal) {
			unsigned i;

			for (i = 0; i < XFER_WINDOW; i++)
				if (x.win[i].used && x.win[i].jfd >= 0)
					journal_flush(&x, &x.win[i]);
			next_journal = now + JOURNAL_MS;
		}
		if (now - atomic_load(&x.last_activity_ms) > IDLE_MS) {
			r = lr_err_set(err, LR_ETIMEOUT,
				       "nothing from the sender for %d s",
				       IDLE_MS / 1000);
			goto out_join;
		}
		progress_tick(&x, &pc, now, tot.bytes, tot.bytes != UINT64_MAX,
			      tot.files);
	}
	/* every file is done: the last acknowledgements (a stream thread
	 * may have finished the last file after the loop's last service),
	 * symlinks and directories, then the outcome */
	r = recv_service(&x, buf);
	if (r) {
		lr_err_setc(err, r, "sending acknowledgements");
		goto out_join;
	}
	proto_buf_init(&b, buf, MSG_BUF);
	proto_msg_begin(&b, PROTO_XFER_ACKS);
	late_apply(&x, late, &b, &res->files_failed);
	r = proto_msg_end(&b);
	if (!r && b.len > b.start + PROTO_HDR_LEN)
		r = ctrl_send(&x, &b);
	pthread_mutex_lock(&x.lock);
	done.files_ok = res->files_ok;
	done.files_failed = res->files_failed;
	done.files_skipped = res->files_skipped;
	done.bytes = x.bytes_done;
	done.wait.write_us = x.waits.disk_us;
	done.wait.net_us = x.waits.net_us;
	done.wait.cipher_us = x.waits.cipher_us;
	pthread_mutex_unlock(&x.lock);
	/* stream threads end at the sender's END records, within bounds */
	{
		int64_t until = net_now_ms() + IDLE_MS;

		while (atomic_load(&x.ended) < cs->n &&
		       !atomic_load(&x.abort)) {
			if (net_now_ms() > until) {
				fatal(&x, LR_ETIMEOUT,
				      "the sender did not end its streams");
				break;
			}
			usleep(2000);
		}
	}
	for (unsigned i = 0; i < cs->n; i++)
		if (ts[i].started)
			pthread_join(ts[i].th, NULL), ts[i].started = false;
	pthread_mutex_lock(&x.lock);
	done.wait.write_us = x.waits.disk_us;
	done.wait.net_us = x.waits.net_us;
	done.wait.cipher_us = x.waits.cipher_us;
	r = x.error;
	if (r)
		*err = x.err;
	pthread_mutex_unlock(&x.lock);
	if (r) /* a stream cut or forged at the very end: say so */
		send_error_msg(&x, PROTO_ERR_BAD_REQUEST, err->msg);
	if (!r) {
		proto_buf_init(&b, buf, MSG_BUF);
		r = proto_encode_xfer_done(&b, &done) ?: ctrl_send(&x, &b);
		if (r)
			lr_err_setc(err, r, "sending the outcome");
	}
out_join:
	if (r)
		atomic_store(&x.abort, true);
	join_threads(&x, ts);
	if (r) {
		unsigned i;

		for (i = 0; i < XFER_WINDOW; i++)
			if (x.win[i].used)
				recv_abandon(&x, &x.win[i], true);
	}
	res->bytes = x.bytes_done;
	res->bytes_held = x.bytes_held;
	res->local = x.waits;
	res->seconds = (double)(net_now_us() - x.t0_us) / 1e6;
	if (!r && res->files_failed)
		r = lr_err_set(err, -EIO,
			       "%llu of %llu entries failed; first: %s",
			       (unsigned long long)res->files_failed,
			       (unsigned long long)tot.files,
			       res->first_failure);
	ev = (struct xfer_event){ .kind = XFER_EV_END };
	progress_fill(&x, &ev.p, tot.bytes, tot.bytes != UINT64_MAX, tot.files);
	ev.ok = r == 0;
	emit(&x, &ev);
	dirs_sync(&x);
out:
	for (unsigned i = 0; i < DIRH_MAX; i++)
		if (x.dirh[i].fd >= 0)
			close(x.dirh[i].fd);
	late_free(late);
	free(ts);
	free(buf);
	free(rbuf);
	sess_fini(&x);
	return r;
}

/* ======================== the client side ======================== */

static int expect(struct conn *c, uint8_t type, uint8_t *buf,
		  struct proto_hdr *h, const char *what, struct lr_err *err)
{
	int r = conn_recv_msg(c, buf, MSG_BUF, h,
			      net_now_ms() + CTRL_TIMEOUT_MS, err);

	if (r == LR_ECLOSED)
		return lr_err_set(err, r,
				  "the server closed the connection while "
				  "waiting for %s",
				  what);
	if (r)
		return r;
	if (h->type == PROTO_ERROR)
		return peer_error(buf, h->len, err);
	if (h->type != type)
		return lr_err_set(err, LR_EBADMSG, "expected %s, got %s",
				  proto_type_name(type),
				  proto_type_name(h->type));
	return 0;
}

unsigned xfer_auto_streams(const struct xfer_client_opts *o,
			   struct xfer_source *src)
{
	struct proto_xfer_totals t;
	struct lr_err e = { 0 };
	bool pipe;

	if (o->streams)
		return o->streams;
	if (o->req.op != PROTO_XFER_PUSH ||
	    count_sources(&o->src, &t, &pipe, &e, NULL))
		return XFER_DEFAULT_STREAMS;
	if (src) {
		src->counted = true;
		src->pipe = pipe;
		src->files = t.files;
		src->bytes = t.bytes;
	}
	return streams_for(&t, pipe);
}

/* The data streams of a client session, opened at once: each connects,
 * shakes hands and sends its DATA_OPEN in a thread of its own, so the
 * round trips overlap (four streams one after the other cost four). */
struct opener {
	const struct net_addr *addr, *bindp;
	const struct net_sockopts *so;
	const struct xfer_client_opts *o;
	const char *where;
	const uint8_t *session_id;
	uint8_t dir;
	struct conn *data; /* n, each conn_init_plain'ed; fd -1 if not open */
	unsigned n;
	_Atomic unsigned next;
	pthread_mutex_t lock;
	int r; /* the first failure */
	struct lr_err err;
};

static int open_one(struct opener *op, unsigned i, struct lr_err *err)
{
	struct proto_data_open dop;
	uint8_t mb[PROTO_HDR_LEN + PROTO_TEST_ID_LEN + 64];
	struct proto_buf b;
	int fd, r;

	fd = net_connect(op->addr, op->bindp, op->so, op->o->connect_timeout_ms,
			 err);
	if (fd < 0)
		return fd;
	r = conn_client_open(fd, op->o->psk, op->o->cipher_wish, op->where,
			     net_now_ms() + CTRL_TIMEOUT_MS, &op->data[i], err);
	if (r) {
		/* it may hold fd already: the cleanup must not close it again
		 * (by then the number may be another stream's) */
		conn_fini(&op->data[i]);
		conn_init_plain(&op->data[i], -1);
		close(fd);
		return r;
	}
	memcpy(dop.test_id, op->session_id, PROTO_TEST_ID_LEN);
	dop.stream = (uint16_t)i;
	dop.dir = op->dir;
	proto_buf_init(&b, mb, sizeof(mb));
	r = proto_encode_data_open(&b, &dop) ?: ctrl_send_raw(&op->data[i], &b);
	if (r)
		return lr_err_setc(err, r, "opening stream %u to %s", i + 1,
				   op->where);
	return 0;
}

/* Open streams until none is left or one failed. */
static void *opener_main(void *arg)
{
	struct opener *op = arg;
	unsigned i;

	while ((i = atomic_fetch_add(&op->next, 1)) < op->n) {
		struct lr_err e = { 0 };
		int r;

		pthread_mutex_lock(&op->lock);
		r = op->r;
		pthread_mutex_unlock(&op->lock);
		if (r)
			break;
		r = open_one(op, i, &e);
		if (r) {
			pthread_mutex_lock(&op->lock);
			if (!op->r) {
				op->r = r;
				op->err = e;
			}
			pthread_mutex_unlock(&op->lock);
			break;
		}
	}
	return NULL;
}

#define OPENERS_MAX 8u

static int open_streams(struct opener *op, struct lr_err *err)
{
	pthread_t th[OPENERS_MAX];
	unsigned k, started = 0,
		    want = op->n < OPENERS_MAX ? op->n : OPENERS_MAX;

	atomic_store(&op->next, 0);
	op->r = 0;
	pthread_mutex_init(&op->lock, NULL);
	for (k = 1; k < want; k++) {
		if (pthread_create(&th[started], NULL, opener_main, op))
			break;
		started++;
	}
	opener_main(op);
	for (k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	pthread_mutex_destroy(&op->lock);
	if (op->r)
		*err = op->err;
	return op->r;
}

int xfer_client_run(const struct xfer_client_opts *o,
		    const struct xfer_callbacks *cb, struct xfer_result *res,
		    struct lr_err *err)
{
	struct net_sockopts ctrl_so = { .nodelay = true };
	struct net_sockopts so = { .window = o->window };
	struct net_addr addr, bindaddr, *bindp = NULL;
	struct proto_ctrl_open co = { .features = 0 };
	struct proto_xfer_request req = o->req;
	struct proto_xfer_accept acc;
	struct xfer_conns cs = { 0 };
	struct xfer_opts xo = o->x;
	struct xfer_result lk = { 0 };
	struct xfer_source src = o->src;
	struct conn ctrl, *data = NULL;
	struct counter cnt = { .started = false };
	struct proto_buf b;
	struct proto_hdr h;
	char where[NET_ADDRSTR];
	uint8_t *buf;
	unsigned i, opened = 0;
	int fd, r;

	memset(res, 0, sizeof(*res));
	conn_init_plain(&ctrl, -1);
	if (!o->psk)
		return lr_err_set(err, LR_EAUTH,
				  "file transfers need the server's token "
				  "(LINERATE_TOKEN or --token-file)");
	buf = malloc(MSG_BUF);
	if (!buf)
		return lr_err_setc(err, -ENOMEM, "buffer");
	if (o->req.op == PROTO_XFER_PUSH && !src.counted)
		counter_start(&cnt, &o->src);
	r = net_resolve(o->host, o->port, o->family, false, &addr, err);
	if (r)
		goto out;
	if (o->bind_addr) {
		r = net_resolve(o->bind_addr, 0, addr.ss.ss_family, true,
				&bindaddr, err);
		if (r)
			goto out;
		bindp = &bindaddr;
	}
	net_addr_str((struct sockaddr *)&addr.ss, where, sizeof(where));
	fd = net_connect(&addr, bindp, &ctrl_so, o->connect_timeout_ms, err);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	r = conn_client_open(fd, o->psk, o->cipher_wish, where,
			     net_now_ms() + CTRL_TIMEOUT_MS, &ctrl, err);
	if (r) {
		close(fd);
		goto out;
	}
	snprintf(co.software, sizeof(co.software), "linerate %s",
		 LINERATE_VERSION);
	proto_buf_init(&b, buf, MSG_BUF);
	r = proto_encode_ctrl_open(&b, &co) ?: ctrl_send_raw(&ctrl, &b);
	req.streams = (uint16_t)(o->streams    ? o->streams
				 : cnt.started ? counter_streams(&cnt)
					       : xfer_auto_streams(o, &src));
	proto_buf_init(&b, buf, MSG_BUF);
	if (!r)
		r = proto_encode_xfer_request(&b, &req)
			    ?: ctrl_send_raw(&ctrl, &b);
	if (r) {
		struct lr_err e2 = { 0 };

		/* a server that refused us may have said why */
		if (expect(&ctrl, PROTO_XFER_ACCEPT, buf, &h, "an answer",
			   &e2) != LR_EPEER &&
		    e2.code != LR_EBUSY && e2.code != LR_EAUTH)
			lr_err_setc(err, r, "sending the request to %s", where);
		else
			*err = e2, r = e2.code;
		goto out_ctrl;
	}
	r = expect(&ctrl, PROTO_XFER_ACCEPT, buf, &h,
		   "the transfer to be "
		   "accepted",
		   err);
	if (!r && proto_decode_xfer_accept(buf, h.len, &acc))
		r = lr_err_set(err, LR_EBADMSG, "malformed XFER_ACCEPT");
	if (r)
		goto out_ctrl;
	if (acc.streams < 1 || acc.streams > req.streams)
		acc.streams = req.streams;
	data = calloc(acc.streams, sizeof(*data));
	if (!data) {
		r = lr_err_setc(err, -ENOMEM, "streams");
		goto out_ctrl;
	}
	for (i = 0; i < acc.streams; i++)
		conn_init_plain(&data[i], -1);
	opened = acc.streams;
	{
		struct opener op = {
			.addr = &addr,
			.bindp = bindp,
			.so = &so,
			.o = o,
			.where = where,
			.session_id = acc.session_id,
			.dir = req.op == PROTO_XFER_PUSH ? PROTO_DIR_C2S
							 : PROTO_DIR_S2C,
			.data = data,
			.n = acc.streams,
		};

		r = open_streams(&op, err);
	}
	if (r)
		goto out_data;
	cs.ctrl = &ctrl;
	cs.n = acc.streams;
	cs.data = data;
	{
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct link_info li;

		if (!getsockname(data[0].fd, (struct sockaddr *)&ss, &sl) &&
		    !link_lookup((struct sockaddr *)&ss, "/sys", &li)) {
			lk.link_known = true;
			snprintf(lk.link_if, sizeof(lk.link_if), "%s",
				 li.ifname);
			lk.link_speed_bps = li.speed_bps;
			lk.link_mtu = li.mtu;
		}
		lk.ipv6 = ss.ss_family == AF_INET6;
	}
	xo.chunk_size = acc.chunk_size;
	xo.flags = req.flags;
	counter_join(&cnt, &src, false);
	if (req.op == PROTO_XFER_PUSH)
		r = xfer_send(&cs, &src, &xo, cb, res, err);
	else
		r = xfer_recv(&cs, o->destfd, o->outfd, &xo, cb, res, err);
	res->link_known = lk.link_known;
	res->ipv6 = lk.ipv6;
	memcpy(res->link_if, lk.link_if, sizeof(res->link_if));
	res->link_speed_bps = lk.link_speed_bps;
	res->link_mtu = lk.link_mtu;
out_data:
	for (i = 0; i < opened; i++) {
		if (data[i].fd >= 0)
			close(data[i].fd);
		conn_fini(&data[i]);
	}
	free(data);
out_ctrl:
	close(ctrl.fd);
	conn_fini(&ctrl);
out:
	counter_join(&cnt, NULL, true);
	free(buf);
	return r;
}

const char *xfer_bottleneck(const struct xfer_result *res, double *share)
{
	const struct xfer_waits *snd = res->is_sender ? &res->local
						      : &res->remote;
	const struct xfer_waits *rcv = res->is_sender ? &res->remote
						      : &res->local;
	double wall = (double)(res->local.wall_us ? res->local.wall_us : 1);
	double src_disk = (double)snd->disk_us, dst_disk = (double)rcv->disk_us;
	double cipher = (double)(snd->cipher_us > rcv->cipher_us
					 ? snd->cipher_us
					 : rcv->cipher_us);
	double best = src_disk;
	const char *name = "source disk";

	if (dst_disk > best) {
		best = dst_disk;
		name = "destination disk";
	}
	if (cipher > best) {
		best = cipher;
		name = "cipher (CPU)";
	}
	if (best < 0.4 * wall) {
		/* nobody was busy most of the time: the wire held them */
		name = "network";
		best = wall - best;
	}
	if (share)
		*share = best / wall;
	return name;
}
