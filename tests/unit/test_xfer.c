// SPDX-License-Identifier: MIT
/*
 * Unit tests of the transfer engine (src/core/xfer/) run in one process:
 * both sides, or one side against a sender played by the test, over
 * socket pairs with plain connections (no handshake, data in clear).
 *
 * - A slow event callback (200 ms a call) on the sender does not hold the
 *   stream threads: the receiver keeps acknowledging data while it sleeps.
 * - A file that fails on the receiver while one of its chunks is still
 *   being written, and whose window slot the sender announces again, does
 *   not make the receiver send the new entry's plan under another type.
 * - The sender matches the receiver's FAIL items to files by idx: two
 *   files failing in one message each get their own reason and code.
 * - The ends of a session: a sender's heartbeat on a sealed control
 *   connection, its data stream's END followed by its end of file, a lost
 *   XFER_DONE told apart; a receiver that finds a byte after a stream's
 *   END, or no END, fails at once.
 *
 * pwrite is interposed here (the test's definition wins over libc's for
 * the engine linked into this executable) so that a test can hold one
 * chunk's write and fail another's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "conn.h"
#include "digest.h"
#include "net.h"
#include "proto.h"
#include "xfer.h"

#define MSG_CAP (PROTO_HDR_LEN + PROTO_MAX_BODY + CONN_REC_HDR + CRYPTO_TAG_LEN)

/* ---- pwrite, interposed ---- */

struct hook {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool armed;
	uint64_t hold_off, fail_off; /* offsets of the held and failed writes */
	uint32_t len;		     /* of both writes */
	bool holding, release;
};

static struct hook hook = { PTHREAD_MUTEX_INITIALIZER,
			    PTHREAD_COND_INITIALIZER };

ssize_t pwrite(int fd, const void *p, size_t n, off_t off);

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
static pwrite_fn real_pwrite;
static pthread_once_t real_pwrite_once = PTHREAD_ONCE_INIT;

/* The wrapped pwrite, found once (stream threads call it at once). With
 * _FILE_OFFSET_BITS=64 on 32-bit glibc this file's pwrite is pwrite64,
 * and so is the one it wraps; "pwrite" there takes a 32-bit offset. musl
 * has no pwrite64: its pwrite is 64-bit. */
static void find_real_pwrite(void)
{
	real_pwrite = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite64");
	if (!real_pwrite)
		real_pwrite = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite");
}

ssize_t pwrite(int fd, const void *p, size_t n, off_t off)
{
	pwrite_fn real;
	bool hold = false, fail = false;

	pthread_once(&real_pwrite_once, find_real_pwrite);
	real = real_pwrite;
	pthread_mutex_lock(&hook.lock);
	if (hook.armed && n == hook.len) {
		hold = (uint64_t)off == hook.hold_off;
		fail = (uint64_t)off == hook.fail_off;
	}
	if (hold) {
		hook.holding = true;
		pthread_cond_broadcast(&hook.cv);
		while (!hook.release)
			pthread_cond_wait(&hook.cv, &hook.lock);
		hook.holding = false;
	}
	pthread_mutex_unlock(&hook.lock);
	if (fail) {
		errno = ENOSPC;
		return -1;
	}
	return real(fd, p, n, off);
}

static void hook_arm(uint64_t hold_off, uint64_t fail_off, uint32_t len)
{
	pthread_mutex_lock(&hook.lock);
	hook.armed = true;
	hook.hold_off = hold_off;
	hook.fail_off = fail_off;
	hook.len = len;
	hook.holding = hook.release = false;
	pthread_mutex_unlock(&hook.lock);
}

static void hook_wait_holding(void)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&hook.lock);
	while (!hook.holding &&
	       pthread_cond_timedwait(&hook.cv, &hook.lock, &until) == 0)
		;
	assert_true(hook.holding);
	pthread_mutex_unlock(&hook.lock);
}

static void hook_release(void)
{
	pthread_mutex_lock(&hook.lock);
	hook.release = true;
	hook.armed = false;
	pthread_cond_broadcast(&hook.cv);
	pthread_mutex_unlock(&hook.lock);
}

/* ---- connections and directories ---- */

#define MAX_STREAMS 4

/* Two ends of a session: a control connection and n data streams. */
struct link {
	struct conn ctrl[2];
	struct conn data[2][MAX_STREAMS];
	struct xfer_conns cs[2];
	unsigned n;
};

static void link_open(struct link *l, unsigned n)
{
	int sv[2];
	unsigned i, s;

	memset(l, 0, sizeof(*l));
	l->n = n;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
	conn_init_plain(&l->ctrl[0], sv[0]);
	conn_init_plain(&l->ctrl[1], sv[1]);
	for (i = 0; i < n; i++) {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC,
					    0, sv),
				 0);
		conn_init_plain(&l->data[0][i], sv[0]);
		conn_init_plain(&l->data[1][i], sv[1]);
	}
	for (s = 0; s < 2; s++)
		l->cs[s] = (struct xfer_conns){ .ctrl = &l->ctrl[s],
						.n = n,
						.data = l->data[s] };
}

static void link_close(struct link *l)
{
	unsigned i, s;

	for (s = 0; s < 2; s++) {
		close(l->ctrl[s].fd);
		conn_fini(&l->ctrl[s]);
		for (i = 0; i < l->n; i++) {
			close(l->data[s][i].fd);
			conn_fini(&l->data[s][i]);
		}
	}
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void write_file(const char *dir, const char *name, size_t size,
		       unsigned seed)
{
	char path[512];
	uint8_t *buf = malloc(size ? size : 1);
	size_t i;
	int fd;

	assert_non_null(buf);
	for (i = 0; i < size; i++)
		buf[i] = (uint8_t)(i * 131u + seed * 7u + (i >> 12));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, size), (ssize_t)size);
	close(fd);
	free(buf);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the two sides in threads ---- */

struct side {
	struct xfer_conns *cs;
	struct xfer_source src; /* sender */
	int destfd;		/* receiver */
	struct xfer_opts o;
	struct xfer_callbacks cb;
	struct xfer_result res;
	struct lr_err err;
	int r;
	pthread_t th;
};

static void *send_main(void *arg)
{
	struct side *s = arg;

	s->r = xfer_send(s->cs, &s->src, &s->o, &s->cb, &s->res, &s->err);
	return NULL;
}

static void *recv_main(void *arg)
{
	struct side *s = arg;
	struct xfer_dest d = { .dirfd = s->destfd, .path = "" };

	s->r = xfer_recv(s->cs, &d, -1, &s->o, &s->cb, &s->res, &s->err);
	return NULL;
}

/* ================= a slow callback does not hold the data ============== */

#define SLEEP_MS    200
#define MAX_RECORDS 4096
#define SMALL_FILES 8
#define BIG_SIZE    (16u << 20)

struct sleepy {
	pthread_mutex_t lock;
	unsigned n;
	double in[MAX_RECORDS], out[MAX_RECORDS];
	enum xfer_event_kind kind[MAX_RECORDS];
};

/* The receiver's progress as it saw it, every 10 ms. */
struct watch {
	pthread_mutex_t lock;
	unsigned n;
	double t[MAX_RECORDS];
	uint64_t bytes[MAX_RECORDS];
};

static void sleepy_event(void *ctx, const struct xfer_event *ev)
{
	struct sleepy *s = ctx;
	struct timespec ts = { 0, SLEEP_MS * 1000000L };
	unsigned k;

	pthread_mutex_lock(&s->lock);
	k = s->n < MAX_RECORDS ? s->n++ : MAX_RECORDS - 1;
	s->in[k] = now_s();
	s->kind[k] = ev->kind;
	pthread_mutex_unlock(&s->lock);
	nanosleep(&ts, NULL);
	pthread_mutex_lock(&s->lock);
	s->out[k] = now_s();
	pthread_mutex_unlock(&s->lock);
}

static void watch_event(void *ctx, const struct xfer_event *ev)
{
	struct watch *w = ctx;

	if (ev->kind != XFER_EV_PROGRESS && ev->kind != XFER_EV_END)
		return;
	pthread_mutex_lock(&w->lock);
	if (w->n < MAX_RECORDS) {
		w->t[w->n] = now_s();
		w->bytes[w->n] = ev->p.bytes_done;
		w->n++;
	}
	pthread_mutex_unlock(&w->lock);
}

/* The receiver's bytes at time t (its last report at or before t). */
static uint64_t bytes_at(const struct watch *w, double t)
{
	uint64_t b = 0;
	unsigned i;

	for (i = 0; i < w->n && w->t[i] <= t; i++)
		b = w->bytes[i];
	return b;
}

static void test_slow_callback_does_not_hold_streams(void **state)
{
	char src[] = "/tmp/lr-xfer-src-XXXXXX",
	     dst[] = "/tmp/lr-xfer-dst-XXXXXX";
	const char *paths[SMALL_FILES + 1];
	char names[SMALL_FILES + 1][600];
	static struct sleepy sl = { .lock = PTHREAD_MUTEX_INITIALIZER };
	static struct watch wa = { .lock = PTHREAD_MUTEX_INITIALIZER };
	_Atomic bool cancel = false;
	struct side tx = { 0 }, rx = { 0 };
	uint64_t total = (uint64_t)SMALL_FILES * 4096 + BIG_SIZE;
	unsigned i, judged = 0, moving = 0;
	struct link l;

	(void)state;
	assert_non_null(mkdtemp(src));
	assert_non_null(mkdtemp(dst));
	for (i = 0; i < SMALL_FILES; i++) {
		char n[16];

		snprintf(n, sizeof(n), "s%u", i);
		write_file(src, n, 4096, i);
		snprintf(names[i], sizeof(names[i]), "%s/%s", src, n);
		paths[i] = names[i];
	}
	write_file(src, "big", BIG_SIZE, 99);
	snprintf(names[SMALL_FILES], sizeof(names[0]), "%s/big", src);
	paths[SMALL_FILES] = names[SMALL_FILES];

	link_open(&l, 2);
	tx.cs = &l.cs[0];
	tx.src = (struct xfer_source){ .rootfd = -1,
				       .npaths = SMALL_FILES + 1,
				       .paths = paths };
	/* 12 MiB/s: the big file takes over a second, several sleeps */
	tx.o = (struct xfer_opts){ .chunk_size = 1u << 20,
				   .rate = 12u << 20,
				   .progress_ms = 50,
				   .cancel = &cancel };
	tx.cb = (struct xfer_callbacks){ .ctx = &sl, .event = sleepy_event };
	rx.cs = &l.cs[1];
	rx.destfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(rx.destfd >= 0);
	rx.o = (struct xfer_opts){ .chunk_size = 1u << 20,
				   .flags = PROTO_XF_NO_FSYNC,
				   .progress_ms = 10,
				   .cancel = &cancel };
	rx.cb = (struct xfer_callbacks){ .ctx = &wa, .event = watch_event };
	assert_int_equal(pthread_create(&rx.th, NULL, recv_main, &rx), 0);
	assert_int_equal(pthread_create(&tx.th, NULL, send_main, &tx), 0);
	pthread_join(tx.th, NULL);
	pthread_join(rx.th, NULL);
	if (tx.r || rx.r)
		fail_msg("sender %d (%s), receiver %d (%s)", tx.r, tx.err.msg,
			 rx.r, rx.err.msg);
	assert_int_equal(rx.res.bytes, total);
	assert_int_equal(rx.res.files_ok, SMALL_FILES + 1);

	/* every sleep of the sender's callback while data was still due:
	 * the receiver took data in its second half, when what was in the
	 * sockets at its start has long arrived */
	for (i = 0; i < sl.n; i++) {
		double mid = sl.in[i] + SLEEP_MS / 2000.0;
		uint64_t a = bytes_at(&wa, sl.in[i]), b;

		if (a == 0 || bytes_at(&wa, sl.out[i]) >= total)
			continue;
		b = bytes_at(&wa, sl.out[i]);
		judged++;
		if (b > bytes_at(&wa, mid))
			moving++;
		else
			print_message("# sleep %u (event kind %d): receiver at "
				      "%llu bytes throughout its second half\n",
				      i, (int)sl.kind[i],
				      (unsigned long long)b);
	}
	print_message("# %u of %u sleeps during the data saw it move\n", moving,
		      judged);
	assert_true(judged >= 3);
	assert_int_equal(moving, judged);

	close(rx.destfd);
	link_close(&l);
	rm_tree(src);
	rm_tree(dst);
}

/* ============ a failed file's slot announced again: a PLAN ============== */

#define CHUNK (64u << 10) /* PROTO_XFER_MIN_CHUNK */

/* The test plays the sender. */
struct fake {
	struct conn *ctrl;
	struct conn *data;
	uint8_t *buf, *rbuf;
};

static void fake_send(struct fake *f, struct proto_buf *b)
{
	assert_int_equal(b->err, 0);
	assert_int_equal(
		conn_send_msg(f->ctrl, b->p, b->len, net_now_ms() + 10000), 0);
}

static void fake_files(struct fake *f, const struct proto_xfer_entry *e,
		       unsigned n)
{
	struct proto_buf b;
	unsigned i;

	proto_buf_init(&b, f->buf, MSG_CAP);
	proto_msg_begin(&b, PROTO_XFER_FILES);
	for (i = 0; i < n; i++) {
		assert_true(proto_xfer_batch_room(
			&b, proto_xfer_entry_size(&e[i])));
		proto_put_xfer_entry(&b, &e[i]);
	}
	assert_int_equal(proto_msg_end(&b), 0);
	fake_send(f, &b);
}

/* One chunk of file idx on data stream s: len bytes of pattern seed,
 * with a wrong digest when bad. */
static void fake_chunk(struct fake *f, unsigned s, uint32_t idx, uint32_t chunk,
		       uint32_t len, unsigned seed, bool bad)
{
	uint8_t *rec = malloc(PROTO_XFER_CHUNK_HDR_LEN + len + CRYPTO_TAG_LEN);
	struct proto_xfer_chunk_hdr h = {
		.kind = PROTO_XC_DATA, .idx = idx, .chunk = chunk, .len = len
	};
	uint32_t i;

	assert_non_null(rec);
	for (i = 0; i < len; i++)
		rec[PROTO_XFER_CHUNK_HDR_LEN + i] = (uint8_t)(i ^ seed);
	digest_chunk(rec + PROTO_XFER_CHUNK_HDR_LEN, len, h.digest);
	h.digest[0] ^= bad ? 1 : 0;
	proto_xfer_chunk_encode(rec, &h);
	assert_int_equal(conn_send_data(&f->data[s], CONN_REC_DATA, rec,
					PROTO_XFER_CHUNK_HDR_LEN + len),
			 0);
	free(rec);
}

/* Each data stream's END record, then our side shut, as a sender does
 * (docs/PROTOCOL.md section 6). */
static void fake_end_streams(struct fake *f, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		assert_int_equal(conn_send_data(&f->data[i], CONN_REC_END,
						f->buf, 0),
				 0);
		assert_int_equal(shutdown(f->data[i].fd, SHUT_WR), 0);
	}
}

/* What the receiver said about one entry, from the messages read. */
struct seen {
	bool plan, plan_in_plan_msg, done, failed;
	uint8_t action;
};

/* Read one control message and note what it says of entries below n. */
static void fake_read(struct fake *f, struct seen *seen, unsigned n)
{
	struct proto_xfer_iter it;
	struct proto_hdr h;
	struct lr_err err = { 0 };
	int r;

	r = conn_recv_msg(f->ctrl, f->rbuf, MSG_CAP, &h, net_now_ms() + 10000,
			  &err);
	if (r)
		fail_msg("reading the receiver: %s", err.msg);
	if (h.type == PROTO_ERROR)
		fail_msg("the receiver sent an error");
	assert_true(h.type == PROTO_XFER_PLAN || h.type == PROTO_XFER_ACKS);
	proto_xfer_iter_init(&it, f->rbuf, h.len);
	while ((r = proto_xfer_iter_next(&it)) == 1) {
		if (it.tag == PROTO_T_PLAN) {
			struct proto_xfer_plan p;

			assert_int_equal(proto_xfer_get_plan(&it, &p), 0);
			assert_true(p.idx < n);
			seen[p.idx].plan = true;
			seen[p.idx].action = p.action;
			seen[p.idx].plan_in_plan_msg = h.type ==
						       PROTO_XFER_PLAN;
		} else if (it.tag == PROTO_T_ACK) {
			struct proto_xfer_ack a;

			assert_int_equal(proto_xfer_get_ack(&it, &a), 0);
			assert_true(a.idx < n);
			if (a.status == PROTO_XS_FILE_DONE)
				seen[a.idx].done = true;
			if (a.status == PROTO_XS_FILE_FAILED)
				seen[a.idx].failed = true;
		}
	}
	assert_int_equal(r, 0);
}

/* The window asked for fits the descriptor limit: a file in flight holds
 * one or two, a session 176 besides (streams, directories, the rest). In
 * a child: a hard limit once lowered stays so. */
static int fit_under(rlim_t lim, unsigned sessions)
{
	struct rlimit rl = { lim, lim };
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		if (setrlimit(RLIMIT_NOFILE, &rl))
			_exit(255);
		/* the window divided by 8: it fits an exit status */
		_exit((int)(xfer_window_fit(sessions) / 8));
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st) * 8;
}

static void test_window_fit(void **state)
{
	(void)state;
	assert_int_equal(fit_under(1024, 1), 424); /* (1024 - 176) / 2 */
	assert_int_equal(fit_under(1024, 4), XFER_WINDOW);
	assert_int_equal(fit_under(20000, 1), XFER_WINDOW_MAX);
	assert_int_equal(fit_under(20000, 16), 536);	  /* (1250 - 176) / 2 */
	assert_int_equal(fit_under(256, 1), XFER_WINDOW); /* never below */
}

static void test_plan_after_failed_slot(void **state)
{
	char dst[] = "/tmp/lr-xfer-dst-XXXXXX";
	enum { N = XFER_WINDOW + 1 };
	static struct proto_xfer_entry e[N];
	static char dname[N][16];
	static struct seen seen[N];
	_Atomic bool cancel = false;
	struct side rx = { 0 };
	struct proto_xfer_totals tot = { .files = N,
					 .bytes = 2 * CHUNK + 4096 };
	struct fake f;
	struct proto_buf b;
	struct link l;
	unsigned i;
	int unread, tries;

	(void)state;
	assert_non_null(mkdtemp(dst));
	memset(seen, 0, sizeof(seen));
	link_open(&l, 2);
	f = (struct fake){ .ctrl = &l.ctrl[0],
			   .data = l.data[0],
			   .buf = malloc(MSG_CAP),
			   .rbuf = malloc(MSG_CAP) };
	assert_non_null(f.buf);
	assert_non_null(f.rbuf);
	rx.cs = &l.cs[1];
	rx.destfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(rx.destfd >= 0);
	rx.o = (struct xfer_opts){ .chunk_size = CHUNK,
				   .flags = PROTO_XF_NO_FSYNC,
				   .cancel = &cancel };
	assert_int_equal(pthread_create(&rx.th, NULL, recv_main, &rx), 0);

	/* entry 0: a file of two chunks; 1..255: directories; 256, in
	 * entry 0's slot: a file of one small chunk */
	e[0] = (struct proto_xfer_entry){ .idx = 0,
					  .kind = PROTO_XK_FILE,
					  .mode = 0644,
					  .size = 2 * CHUNK,
					  .path = "two",
					  .path_len = 3 };
	for (i = 1; i < XFER_WINDOW; i++) {
		snprintf(dname[i], sizeof(dname[i]), "d%u", i);
		e[i] = (struct proto_xfer_entry){
			.idx = i,
			.kind = PROTO_XK_DIR,
			.mode = 0755,
			.path = dname[i],
			.path_len = (uint16_t)strlen(dname[i]),
		};
	}
	e[XFER_WINDOW] = (struct proto_xfer_entry){ .idx = XFER_WINDOW,
						    .kind = PROTO_XK_FILE,
						    .mode = 0644,
						    .size = 4096,
						    .path = "later",
						    .path_len = 5 };
	proto_buf_init(&b, f.buf, MSG_CAP);
	assert_int_equal(proto_encode_xfer_totals(&b, &tot), 0);
	fake_send(&f, &b);
	fake_files(&f, &e[0], 1);
	while (!seen[0].plan)
		fake_read(&f, seen, N);
	assert_int_equal(seen[0].action, PROTO_XA_SEND);

	/* chunk 1 stays in its write; chunk 0 fails verification once more
	 * than the receiver allows: the file fails with a chunk in flight */
	hook_arm(CHUNK, UINT64_MAX, CHUNK);
	fake_chunk(&f, 1, 0, 1, CHUNK, 1, false);
	hook_wait_holding();
	for (i = 0; i <= XFER_MAX_RETRIES; i++)
		fake_chunk(&f, 0, 0, 0, CHUNK, 0, true);
	while (!seen[0].failed)
		fake_read(&f, seen, N);

	/* its slot announced again (after 255 entries that end at once)
	 * while chunk 1 is still being written */
	fake_files(&f, &e[1], XFER_WINDOW - 1);
	fake_files(&f, &e[XFER_WINDOW], 1);
	/* let the receiver read both messages and meet the busy slot before
	 * the held write ends */
	for (tries = 0; tries < 1000; tries++) {
		struct timespec ts = { 0, 1000000 };

		assert_int_equal(ioctl(l.ctrl[1].fd, FIONREAD, &unread), 0);
		if (!unread)
			break;
		nanosleep(&ts, NULL);
	}
	assert_int_equal(unread, 0);
	{
		struct timespec settle = { 0, 100000000 };

		nanosleep(&settle, NULL);
	}
	hook_release();
	while (!seen[XFER_WINDOW].plan)
		fake_read(&f, seen, N);
	if (!seen[XFER_WINDOW].plan_in_plan_msg)
		fail_msg("the plan of entry %u came in an ACKS message",
			 XFER_WINDOW);
	assert_int_equal(seen[XFER_WINDOW].action, PROTO_XA_SEND);

	/* finish the session: its chunk, the ends of the streams, END */
	fake_chunk(&f, 0, XFER_WINDOW, 0, 4096, 7, false);
	while (!seen[XFER_WINDOW].done)
		fake_read(&f, seen, N);
	fake_end_streams(&f, l.n);
	proto_buf_init(&b, f.buf, MSG_CAP);
	assert_int_equal(proto_encode_empty(&b, PROTO_XFER_END), 0);
	fake_send(&f, &b);
	for (;;) {
		struct proto_hdr h;
		struct lr_err err = { 0 };

		assert_int_equal(conn_recv_msg(f.ctrl, f.rbuf, MSG_CAP, &h,
					       net_now_ms() + 10000, &err),
				 0);
		if (h.type == PROTO_XFER_DONE)
			break;
		assert_true(h.type == PROTO_XFER_ACKS ||
			    h.type == PROTO_XFER_PLAN);
	}
	/* the receiver lingers after XFER_DONE until our end */
	shutdown(f.ctrl->fd, SHUT_WR);
	pthread_join(rx.th, NULL);
	assert_int_equal(rx.r, -EIO); /* entry 0 failed */
	assert_int_equal(rx.res.files_failed, 1);
	assert_int_equal(rx.res.files_ok, 1);
	{
		struct stat st;

		assert_int_equal(fstatat(rx.destfd, "later", &st, 0), 0);
		assert_int_equal(st.st_size, 4096);
		assert_int_not_equal(fstatat(rx.destfd, "two", &st, 0), 0);
	}
	close(rx.destfd);
	free(f.buf);
	free(f.rbuf);
	link_close(&l);
	rm_tree(dst);
}

/* ============ FAIL items matched to their files by idx ================ */

struct fevents {
	unsigned n;
	char path[4][64], reason[4][64];
	int code[4];
	bool ok[4];
};

static void record_event(void *ctx, const struct xfer_event *ev)
{
	struct fevents *fe = ctx;

	if (ev->kind != XFER_EV_FILE || fe->n >= 4)
		return;
	snprintf(fe->path[fe->n], sizeof(fe->path[0]), "%s", ev->path);
	snprintf(fe->reason[fe->n], sizeof(fe->reason[0]), "%s",
		 ev->reason ? ev->reason : "");
	fe->code[fe->n] = ev->code;
	fe->ok[fe->n] = ev->ok;
	fe->n++;
}

/* The test plays the receiver: read messages until one of type. */
static void fake_expect(struct fake *f, uint8_t type, struct proto_hdr *h)
{
	struct lr_err err = { 0 };

	for (;;) {
		assert_int_equal(conn_recv_msg(f->ctrl, f->rbuf, MSG_CAP, h,
					       net_now_ms() + 10000, &err),
				 0);
		if (h->type == type)
			return;
		assert_true(h->type == PROTO_XFER_SUMS ||
			    h->type == PROTO_XFER_FILES);
	}
}

static void test_fail_reasons_by_idx(void **state)
{
	char src[] = "/tmp/lr-xfer-src-XXXXXX";
	char p0[600], p1[600];
	const char *paths[2] = { p0, p1 };
	static struct fevents fe;
	static struct link l;
	_Atomic bool cancel = false;
	struct side tx = { 0 };
	struct proto_xfer_plan plan;
	struct proto_xfer_fail fl;
	struct proto_xfer_ack ack;
	struct proto_xfer_done done = { .files_failed = 2 };
	struct proto_buf b;
	struct proto_hdr h;
	struct fake f;
	unsigned i;

	(void)state;
	memset(&fe, 0, sizeof(fe));
	assert_non_null(mkdtemp(src));
	write_file(src, "f0", 4096, 0);
	write_file(src, "f1", 4096, 1);
	snprintf(p0, sizeof(p0), "%s/f0", src);
	snprintf(p1, sizeof(p1), "%s/f1", src);
	link_open(&l, 1);
	f = (struct fake){ .ctrl = &l.ctrl[1],
			   .data = l.data[1],
			   .buf = malloc(MSG_CAP),
			   .rbuf = malloc(MSG_CAP) };
	assert_non_null(f.buf);
	assert_non_null(f.rbuf);
	tx.cs = &l.cs[0];
	tx.src = (struct xfer_source){ .rootfd = -1,
				       .npaths = 2,
				       .paths = paths };
	tx.o = (struct xfer_opts){ .chunk_size = CHUNK, .cancel = &cancel };
	tx.cb = (struct xfer_callbacks){ .ctx = &fe, .event = record_event };
	assert_int_equal(pthread_create(&tx.th, NULL, send_main, &tx), 0);

	fake_expect(&f, PROTO_XFER_TOTALS, &h);
	fake_expect(&f, PROTO_XFER_FILES, &h);
	proto_buf_init(&b, f.buf, MSG_CAP);
	proto_msg_begin(&b, PROTO_XFER_PLAN);
	for (i = 0; i < 2; i++) {
		plan = (struct proto_xfer_plan){ i, PROTO_XA_SEND };
		proto_put_xfer_plan(&b, &plan);
	}
	assert_int_equal(proto_msg_end(&b), 0);
	fake_send(&f, &b);
	/* both fail in one message, their reasons first, as a receiver
	 * sends them: FAIL 0, FAIL 1, then the FILE_FAILED of each */
	proto_buf_init(&b, f.buf, MSG_CAP);
	proto_msg_begin(&b, PROTO_XFER_ACKS);
	fl = (struct proto_xfer_fail){ .idx = 0, .code = EACCES };
	snprintf(fl.text, sizeof(fl.text), "reason of f0");
	proto_put_xfer_fail(&b, &fl);
	fl = (struct proto_xfer_fail){ .idx = 1, .code = EEXIST };
	snprintf(fl.text, sizeof(fl.text), "reason of f1");
	proto_put_xfer_fail(&b, &fl);
	for (i = 0; i < 2; i++) {
		ack = (struct proto_xfer_ack){ i, 0, PROTO_XS_FILE_FAILED, 0 };
		proto_put_xfer_ack(&b, &ack);
	}
	assert_int_equal(proto_msg_end(&b), 0);
	fake_send(&f, &b);
	fake_expect(&f, PROTO_XFER_END, &h);
	proto_buf_init(&b, f.buf, MSG_CAP);
	assert_int_equal(proto_encode_xfer_done(&b, &done), 0);
	fake_send(&f, &b);
	pthread_join(tx.th, NULL);

	assert_int_equal(tx.r, -EIO);
	assert_int_equal(tx.res.files_failed, 2);
	assert_int_equal(fe.n, 2);
	for (i = 0; i < 2; i++) {
		char want[48];

		/* said as the far end's */
		snprintf(want, sizeof(want), "at the receiver: reason of f%u",
			 i);
		assert_false(fe.ok[i]);
		assert_non_null(strstr(fe.path[i], i ? "f1" : "f0"));
		assert_string_equal(fe.reason[i], want);
		assert_int_equal(fe.code[i], i ? -EEXIST : -EACCES);
	}
	assert_non_null(strstr(tx.res.first_failure,
			       "f0: at the receiver: reason of f0"));
	assert_int_equal(tx.res.first_failure_code, -EACCES);
	free(f.buf);
	free(f.rbuf);
	link_close(&l);
	rm_tree(src);
}

/* ============ the ends of a session (docs/PROTOCOL.md 6, 7.9) ========= */

/* The control connection of l sealed both ways (the data streams stay
 * in clear): what the handshake would give. */
static void link_seal_ctrl(struct link *l)
{
	uint8_t k1[CRYPTO_KEY_LEN], k2[CRYPTO_KEY_LEN];
	int fd0 = l->ctrl[0].fd, fd1 = l->ctrl[1].fd;

	memset(k1, 0x11, sizeof(k1));
	memset(k2, 0x22, sizeof(k2));
	assert_int_equal(conn_init_secure(&l->ctrl[0], fd0,
					  CRYPTO_CHACHA20POLY1305, k1, k2),
			 0);
	assert_int_equal(conn_init_secure(&l->ctrl[1], fd1,
					  CRYPTO_CHACHA20POLY1305, k2, k1),
			 0);
}

/* The next control message, within ms: 0, or the read's error. */
static int fake_next(struct fake *f, struct proto_hdr *h, int64_t ms)
{
	struct lr_err err = { 0 };

	return conn_recv_msg(f->ctrl, f->rbuf, MSG_CAP, h, net_now_ms() + ms,
			     &err);
}

/* Send an empty message of type (XFER_END, XFER_ALIVE). */
static void fake_empty(struct fake *f, uint8_t type)
{
	struct proto_buf b;

	proto_buf_init(&b, f->buf, MSG_CAP);
	assert_int_equal(proto_encode_empty(&b, type), 0);
	fake_send(f, &b);
}

/* A message sealed and numbered but never delivered: an attacker's drop
 * (it goes into a socket nobody reads). */
static void fake_drop(struct fake *f, struct proto_buf *b)
{
	int sv[2], fd = f->ctrl->fd;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
	f->ctrl->fd = sv[0];
	fake_send(f, b);
	f->ctrl->fd = fd;
	close(sv[0]);
	close(sv[1]);
}

/* The sender on a sealed control connection: idle, it sends XFER_ALIVE
 * after about a second, and takes ours as nothing; its data stream's END
 * record is followed by its end of file; when its session then fails for
 * a lost XFER_DONE only (the next record fails to open), the result says
 * so. */
static void test_sender_heartbeat_and_lost_done(void **state)
{
	char src[] = "/tmp/lr-xfer-src-XXXXXX", p0[600];
	const char *paths[1] = { p0 };
	static struct link l;
	_Atomic bool cancel = false;
	struct side tx = { 0 };
	struct proto_xfer_plan plan = { 0, PROTO_XA_SEND };
	struct proto_xfer_ack ack;
	struct proto_xfer_done done = { .files_ok = 1, .bytes = 4096 };
	struct proto_buf b;
	struct proto_hdr h;
	struct fake f;
	uint8_t type;
	size_t n;
	double t0, idle;
	unsigned k;

	(void)state;
	assert_non_null(mkdtemp(src));
	write_file(src, "one", 4096, 3);
	snprintf(p0, sizeof(p0), "%s/one", src);
	link_open(&l, 1);
	link_seal_ctrl(&l);
	f = (struct fake){ .ctrl = &l.ctrl[1],
			   .data = l.data[1],
			   .buf = malloc(MSG_CAP),
			   .rbuf = malloc(MSG_CAP) };
	assert_non_null(f.buf);
	assert_non_null(f.rbuf);
	tx.cs = &l.cs[0];
	tx.src = (struct xfer_source){ .rootfd = -1,
				       .npaths = 1,
				       .paths = paths };
	tx.o = (struct xfer_opts){ .chunk_size = CHUNK, .cancel = &cancel };
	assert_int_equal(pthread_create(&tx.th, NULL, send_main, &tx), 0);

	fake_expect(&f, PROTO_XFER_TOTALS, &h);
	fake_expect(&f, PROTO_XFER_FILES, &h);
	t0 = now_s();
	assert_int_equal(fake_next(&f, &h, 5000), 0);
	idle = now_s() - t0;
	assert_int_equal(h.type, PROTO_XFER_ALIVE);
	assert_int_equal(h.len, 0);
	print_message("# the sender's heartbeat after %.2f s of silence\n",
		      idle);
	assert_true(idle > 0.5 && idle < 3.0);

	/* ours is nothing to it; then the plan, the chunk, its ACKs */
	fake_empty(&f, PROTO_XFER_ALIVE);
	proto_buf_init(&b, f.buf, MSG_CAP);
	proto_msg_begin(&b, PROTO_XFER_PLAN);
	proto_put_xfer_plan(&b, &plan);
	assert_int_equal(proto_msg_end(&b), 0);
	fake_send(&f, &b);
	assert_int_equal(conn_recv_data(&f.data[0], f.rbuf, MSG_CAP, &type, &n),
			 0);
	assert_int_equal(type, CONN_REC_DATA);
	assert_int_equal(n, PROTO_XFER_CHUNK_HDR_LEN + 4096);
	proto_buf_init(&b, f.buf, MSG_CAP);
	proto_msg_begin(&b, PROTO_XFER_ACKS);
	ack = (struct proto_xfer_ack){ 0, 0, PROTO_XS_CHUNK_OK, 4096 };
	proto_put_xfer_ack(&b, &ack);
	ack = (struct proto_xfer_ack){ 0, 0, PROTO_XS_FILE_DONE, 0 };
	proto_put_xfer_ack(&b, &ack);
	assert_int_equal(proto_msg_end(&b), 0);
	fake_send(&f, &b);
	for (k = 0; k < 16; k++) {
		assert_int_equal(fake_next(&f, &h, 10000), 0);
		if (h.type == PROTO_XFER_END)
			break;
		assert_true(h.type == PROTO_XFER_SUMS ||
			    h.type == PROTO_XFER_ALIVE);
	}
	assert_int_equal(h.type, PROTO_XFER_END);

	/* END on the stream, then the sender's end of file */
	assert_int_equal(conn_recv_data(&f.data[0], f.rbuf, MSG_CAP, &type, &n),
			 0);
	assert_int_equal(type, CONN_REC_END);
	assert_int_equal(conn_recv_eof(&f.data[0], 5000), 0);

	/* XFER_DONE lost on the way: the next record does not open */
	proto_buf_init(&b, f.buf, MSG_CAP);
	assert_int_equal(proto_encode_xfer_done(&b, &done), 0);
	fake_drop(&f, &b);
	fake_empty(&f, PROTO_XFER_ALIVE);
	pthread_join(tx.th, NULL);
	assert_int_equal(tx.r, LR_ERECORD);
	assert_true(tx.res.peer_end_lost);
	assert_int_equal(tx.res.files_ok, 1);
	assert_int_equal(tx.res.files_failed, 0);
	free(f.buf);
	free(f.rbuf);
	link_close(&l);
	rm_tree(src);
}

/* How a fake sender ends the data stream of test_receiver_stream_ends. */
enum tail {
	TAIL_WHOLE,  /* END, then its end of file */
	TAIL_JUNK,   /* END, then a byte */
	TAIL_NO_END, /* end of file without END */
};

/* One small file to a real receiver, its data stream ended as t says:
 * whole, the receiver's XFER_DONE; else its ERROR at once, and the
 * session's error says what came after END or that it never came. */
static void receiver_stream_end(enum tail t)
{
	char dst[] = "/tmp/lr-xfer-dst-XXXXXX";
	static struct link l;
	static struct seen seen[1];
	_Atomic bool cancel = false;
	struct side rx = { 0 };
	struct proto_xfer_totals tot = { .files = 1, .bytes = 4096 };
	struct proto_xfer_entry e = { .idx = 0,
				      .kind = PROTO_XK_FILE,
				      .mode = 0644,
				      .size = 4096,
				      .path = "one",
				      .path_len = 3 };
	struct proto_buf b;
	struct proto_hdr h;
	struct fake f;
	unsigned k;
	double t0;

	assert_non_null(mkdtemp(dst));
	memset(seen, 0, sizeof(seen));
	link_open(&l, 1);
	f = (struct fake){ .ctrl = &l.ctrl[0],
			   .data = l.data[0],
			   .buf = malloc(MSG_CAP),
			   .rbuf = malloc(MSG_CAP) };
	assert_non_null(f.buf);
	assert_non_null(f.rbuf);
	rx.cs = &l.cs[1];
	rx.destfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(rx.destfd >= 0);
	rx.o = (struct xfer_opts){ .chunk_size = CHUNK,
				   .flags = PROTO_XF_NO_FSYNC,
				   .cancel = &cancel };
	assert_int_equal(pthread_create(&rx.th, NULL, recv_main, &rx), 0);

	proto_buf_init(&b, f.buf, MSG_CAP);
	assert_int_equal(proto_encode_xfer_totals(&b, &tot), 0);
	fake_send(&f, &b);
	fake_files(&f, &e, 1);
	while (!seen[0].plan)
		fake_read(&f, seen, 1);
	fake_chunk(&f, 0, 0, 0, 4096, 5, false);
	while (!seen[0].done)
		fake_read(&f, seen, 1);
	t0 = now_s();
	if (t != TAIL_NO_END)
		assert_int_equal(
			conn_send_data(&f.data[0], CONN_REC_END, f.buf, 0), 0);
	if (t == TAIL_JUNK)
		assert_int_equal(write(f.data[0].fd, "x", 1), 1);
	assert_int_equal(shutdown(f.data[0].fd, SHUT_WR), 0);
	fake_empty(&f, PROTO_XFER_END);
	for (k = 0; k < 16; k++) {
		assert_int_equal(fake_next(&f, &h, 10000), 0);
		if (h.type == PROTO_XFER_DONE || h.type == PROTO_ERROR)
			break;
		assert_int_equal(h.type, PROTO_XFER_ACKS);
	}
	assert_int_equal(h.type,
			 t == TAIL_WHOLE ? PROTO_XFER_DONE : PROTO_ERROR);
	/* at once, not after a timer */
	assert_true(now_s() - t0 < 2.0);
	shutdown(f.ctrl->fd, SHUT_WR);
	pthread_join(rx.th, NULL);
	print_message("# tail %d: %s\n", (int)t, rx.err.msg);
	if (t == TAIL_WHOLE) {
		assert_int_equal(rx.r, 0);
	} else if (t == TAIL_JUNK) {
		assert_int_equal(rx.r, LR_EFRAME);
		assert_non_null(
			strstr(rx.err.msg, "data after the stream's END"));
	} else {
		assert_int_equal(rx.r, LR_ETRUNC);
		assert_non_null(strstr(rx.err.msg, "cut short"));
	}
	/* the file was named before: it is whole either way */
	assert_int_equal(faccessat(rx.destfd, "one", F_OK, 0), 0);
	close(rx.destfd);
	free(f.buf);
	free(f.rbuf);
	link_close(&l);
	rm_tree(dst);
}

static void test_receiver_stream_ends(void **state)
{
	(void)state;
	receiver_stream_end(TAIL_WHOLE);
	receiver_stream_end(TAIL_JUNK);
	receiver_stream_end(TAIL_NO_END);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slow_callback_does_not_hold_streams),
		cmocka_unit_test(test_window_fit),
		cmocka_unit_test(test_plan_after_failed_slot),
		cmocka_unit_test(test_fail_reasons_by_idx),
		cmocka_unit_test(test_sender_heartbeat_and_lost_done),
		cmocka_unit_test(test_receiver_stream_ends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
