/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_XFER_INT_H
#define LINERATE_XFER_INT_H

/*
 * The transfer engine's internal header. Only the files of src/core/xfer/
 * include it (scripts/check-includes.sh checks); everyone else sees
 * ../xfer.h. Helpers shared between the files of the folder carry the
 * prefix xfer__.
 *
 * One session (struct xsess) runs one side of a transfer: the control
 * thread (the caller of xfer_send or xfer_recv) talks on the control
 * connection, and one stream thread per data connection moves chunks.
 *
 * Lock table
 *
 *   x->lock (a mutex) guards
 *     - the window: every field of x->win[] not listed as owned below;
 *     - x->tx: the work queue (fifo, fifo_head, fifo_len, waiters), the
 *       retries, the SUM queue, pace_next_us, late_reason, links;
 *     - x->rx: acks, ack_wake, any_failed, finals, fail_pending, next_out,
 *       announced, dropped, the directory handles' refs, dirty, tick and
 *       gone (their fd and rel change only on the control thread, under
 *       the lock);
 *     - bytes_done, bytes_held, files_done, error, err, waits, xat_said,
 *       the file events waiting for delivery (evq), and the counters and
 *       first_failure of x->res.
 *   Atomics instead of the lock: abort, closing, wake_pending,
 *   last_activity_ms, rx.ended.
 *   The control thread's own (no lock): woken, rx.no_anon, rx.umask,
 *   rx.svc_buf, own, xat_next, xat_tx, the entries' late list and
 *   everything in its loop state.
 *   Set before a file is visible to stream threads, then read-only until
 *   it is released: a file's kind, eflags, mode, mtime, name, dirfd, dh,
 *   jfd, cmode, implicit_sum and (but for a pipe) size. Its path, until
 *   its file event takes it (under the lock, only when no stream thread
 *   holds a chunk of it; a copy otherwise). A COMPLETE file is the
 *   thread's that names it: tmp, anon and xg change there.
 *
 *   x->tx.pipe_lock orders a pipe's reads (its chunks are numbered in
 *   reading order); it is taken before x->lock, never after.
 *   x->rx.wlock[] (by slot) serialises the writes into one file; a leaf:
 *   nothing else is taken while one is held.
 *   Condition variables: x->cv (sender: work queued, or closing) and
 *   x->rx.out_cv (standard output: the next chunk in order), both on
 *   x->lock.
 *
 *   No callback runs with any of these held: file events are queued
 *   under x->lock (xfer__file_event) and delivered by the control thread
 *   (xfer__deliver), which asserts in builds with assertions that it
 *   holds no engine lock (xfer__locks_held).
 *
 * A file's life, on each side, is one state (enum xtx_state on the
 * sender, enum xrx_state on the receiver); only one of the two is ever
 * set in a session, and an entry is in use while its state is not FREE.
 */

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "conn.h"
#include "digest.h"
#include "fsio.h"
#include "proto.h"
#include "../xfer.h"

/* The public names are the wire's values. */
#define XFER__SAME(a, b) ((unsigned)(a) == (unsigned)(b))
_Static_assert(XFER__SAME(XFER_F_OVERWRITE, PROTO_XF_OVERWRITE) &&
		       XFER__SAME(XFER_F_UPDATE, PROTO_XF_UPDATE) &&
		       XFER__SAME(XFER_F_NO_FSYNC, PROTO_XF_NO_FSYNC) &&
		       XFER__SAME(XFER_F_KEEP_SETID, PROTO_XF_KEEP_SETID) &&
		       XFER__SAME(XFER_F_STDOUT, PROTO_XF_STDOUT) &&
		       XFER__SAME(XFER_F_SCRATCH, PROTO_XF_SCRATCH) &&
		       XFER__SAME(XFER_F_WHOLE_FILE, PROTO_XF_WHOLE_FILE) &&
		       XFER__SAME(XFER_F_HARD_LINKS, PROTO_XF_HARD_LINKS) &&
		       XFER__SAME(XFER_F_OWNER, PROTO_XF_OWNER) &&
		       XFER__SAME(XFER_F_GROUP, PROTO_XF_GROUP) &&
		       XFER__SAME(XFER_F_NUMERIC_IDS, PROTO_XF_NUMERIC_IDS) &&
		       XFER__SAME(XFER_F_SPECIALS, PROTO_XF_SPECIALS) &&
		       XFER__SAME(XFER_F_DEVICES, PROTO_XF_DEVICES) &&
		       XFER__SAME(XFER_F_XATTRS, PROTO_XF_XATTRS) &&
		       XFER__SAME(XFER_F_ACLS, PROTO_XF_ACLS),
	       "enum xfer_flag is the wire's");
_Static_assert(XFER__SAME(XFER_PUSH, PROTO_XFER_PUSH) &&
		       XFER__SAME(XFER_PULL, PROTO_XFER_PULL),
	       "enum xfer_op is the wire's");
_Static_assert(XFER_MIN_CHUNK == PROTO_XFER_MIN_CHUNK &&
		       XFER_MAX_CHUNK == PROTO_XFER_MAX_CHUNK &&
		       XFER_MAX_STREAMS == PROTO_MAX_STREAMS &&
		       XFER_MAX_SOCKBUF == PROTO_MAX_WINDOW &&
		       XFER_MAX_PATHS == PROTO_XFER_MAX_PATHS &&
		       XFER_MAX_PATH == PROTO_XFER_MAX_PATH,
	       "the limits of xfer.h are the wire's");

#define CTRL_TIMEOUT_MS 10000
#define IDLE_MS		30000 /* a peer silent this long has gone */
/* The session's idle limit: --timeout, else IDLE_MS. */
#define XFER_IDLE_MS(x)	   ((x)->o->idle_ms ? (x)->o->idle_ms : IDLE_MS)
#define BUSY_WAIT_MS	   35000 /* for others' temporary files (dest.c) */
#define KEEPALIVE_MS	   5000	 /* an empty XFER_ACKS while so waiting */
#define ACK_FLUSH_MS	   50
#define WLOCKS		   16 /* receiver write locks, by slot */
#define JOURNAL_MS	   1000
#define JOURNAL_MIN_CHUNKS 4  /* smaller files simply start again */
#define READY_MAX	   64 /* receiver: small files named together */
#define MSG_BUF		   (PROTO_MAX_BODY + PROTO_HDR_LEN + CONN_REC_HDR + CRYPTO_TAG_LEN)
#define DIRH_MAX	   16
/* Chunks of one file at most: its arrays cost 19 bytes a chunk (4 TiB at
 * 1 MiB chunks, 32 TiB at 8 MiB); larger files are refused. */
#define XFER_MAX_CHUNKS	    (1u << 22)
#define PIPE_LEAD	    4096u /* a pipe's next chunk past those seen, at most */
#define XFER_ANNOUNCE_BATCH 64u /* files in one FILES message (window.c) */
_Static_assert(XFER_ANNOUNCE_BATCH <= XFER_WINDOW, "a batch fits the window");
#define SLOT(x, i)  ((i) % (x)->wn) /* the session's window */
#define BATCH_MAX   64		    /* chunks in one record */
#define BATCH_SMALL (64u << 10)	    /* chunks up to this size share records */
#define ESC_MAX	    (FSIO_MAX_PATH * 4 + 1) /* an escaped path */
#define RX_NAMES    (4 * XFER_WINDOW_MAX)   /* cells of the table of names */

/* A sealed connection idle for ALIVE_MS carries a heartbeat: XFER_ALIVE
 * on control, an empty DATA record on a sender's data stream. Records are
 * numbered: a record dropped makes the heartbeat fail to open, a loss is
 * found within ALIVE_MS. Neither counts as activity for IDLE_MS. */
#define ALIVE_MS  1000
#define TAIL_MS	  3000 /* receiver: a data stream's EOF after its END */
#define LINGER_MS 1500 /* receiver: the sender's close after XFER_DONE */

/* A chunk's state in a file's cstate array. */
enum cstate {
	CS_NEEDED = 0,
	CS_HELD = 1,	 /* receiver: from the journal; sender: to verify */
	CS_INFLIGHT = 2, /* receiver: being written */
	CS_GOT = 3,	 /* receiver: verified; sender: sent or matched */
	CS_RESEND = 4,	 /* receiver: bad digest, asked again */
};

/* A file's life on the sending side. */
enum xtx_state {
	XTX_FREE = 0,
	XTX_ANNOUNCED, /* in a FILES message, waiting for its plan */
	XTX_SENDING,   /* SEND or RESUME: chunks queued or being sent */
	XTX_HASHED,    /* every chunk hashed: its SUM is queued */
	XTX_SUMMED,    /* SUM sent, or none needed: waiting for FILE_DONE */
	XTX_ENDED,     /* done, skipped or failed: freed when inflight is 0 */
};

/* A file's life on the receiving side. */
enum xrx_state {
	XRX_FREE = 0,
	XRX_ANNOUNCED, /* being planned by the control thread */
	XRX_RECEIVING, /* SEND or RESUME: its chunks arrive */
	XRX_COMPLETE,  /* every chunk and its sum: being named */
	XRX_FAILED,    /* reported, then freed when inflight is 0 */
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

/* The sender's part of a window entry. */
struct xfile_tx {
	enum xtx_state state;
	bool in_fifo, withdrawn, as_file; /* queued; FAIL 0 sent; FILE_AGAIN */
	uint32_t cursor;		  /* next chunk to take */
	/* the receiver's FAIL item for this entry, for the REFUSE or
	 * FILE_FAILED that follows it (the reasons of one message are
	 * matched by idx, not by position) */
	char *fail_text;
	int fail_code;
	/* the source's ctime as the walk saw it (its size and mtime are the
	 * entry's), to tell after the last chunk is read whether the file
	 * changed meanwhile */
	int64_t ctime_sec;
	uint32_t ctime_nsec;
	uint8_t rereads;   /* announced again this often: it changed as read */
	uint32_t own_fail; /* the code + 1 of a FAIL sent here, or 0 */
	int read_err;	   /* a read failed (it shrank, EIO): -errno */
	/* digests read ahead of the plan (prehash.c): nchunks of them,
	 * then a state byte each; NULL when none */
	uint8_t *pre, *pre_state;
	uint32_t pre_cursor; /* the next chunk to read ahead */
};

/* The receiver's part of a window entry. */
struct xfile_rx {
	enum xrx_state state;
	bool have_sum;	   /* the sender's SUM came */
	bool implicit_sum; /* one chunk or none: no SUM travels for it */
	bool anon;	   /* fd is unnamed (O_TMPFILE), tmp empty */
	bool resumed;	   /* the temporary file holds an earlier attempt */
	bool zeroed;	   /* a ZERO chunk came: its size is set at the end */
	bool withdrawn;	   /* the sender gave it up to announce it again */
	bool kept_newer;   /* SKIP: UPDATE keeps a newer copy (not the same) */
	/* -o/-g: the owner and group to give it ((uid_t)-1: as it is), and
	 * those of the copy there (a SKIP's, have_st) */
	bool owned, have_st;
	uid_t uid, st_uid;
	gid_t gid, st_gid;
	dev_t st_dev;
	ino_t st_ino;
	mode_t st_mode;
	nlink_t st_nlink;
	int owner_err;	  /* -errno: the owner could not be given (kept) */
	struct xgive *xg; /* -X/-A (xattr.c): its items, what was not given */
	/* a pipe's short chunk (its end) before its SUM: index + 1, 0 for
	 * none, and its length; every other chunk before the SUM is whole */
	uint32_t pipe_end, pipe_end_len;
	int dirfd;	 /* parent directory */
	struct dirh *dh; /* dirfd belongs to this handle */
	uint16_t cmode;	 /* mode the temporary file got */
	int jfd;	 /* journal, -1 without */
	uint32_t *jpend; /* chunks to journal */
	uint32_t njpend;
	struct proto_xfer_sum sum; /* what the sender said */
	int code;		   /* why it failed: -errno */
	char name[FSIO_MAX_NAME + 1], tmp[FSIO_MAX_NAME + 1];
	char reason[PROTO_MAX_TEXT + 1];
};

/* One entry of the window. */
struct xfile {
	uint32_t idx;
	uint8_t kind, eflags;
	uint16_t mode;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint64_t size;
	bool pipe;	       /* size unknown until its SUM */
	bool from_pipe;	       /* its size came from its SUM */
	unsigned inflight;     /* chunks a stream thread is working on */
	uint32_t nchunks, cap; /* chunks known / room in the arrays */
	uint8_t *digests;      /* nchunks * DIGEST_LEN */
	uint8_t *cstate;
	uint8_t *tries;
	uint32_t link_to;  /* a hard link: the idx of its file */
	uint32_t finished; /* chunks hashed (sender) or verified (receiver) */
	uint32_t sent;	   /* distinct chunks sent / received this session */
	int fd;		   /* source, or the temporary file */
	/* its own allocation: a window of paths of 4 KiB would make every
	 * session touch megabytes and every release clear 4 KiB */
	char *path;
	struct xfile_tx tx;
	struct xfile_rx rx;
};

/* A chunk the receiver asked for again: entry idx may have ended and its
 * slot been taken by another when a thread comes to it. */
struct retry {
	uint32_t idx, chunk;
};

/* A symlink the receiver makes at the end, and what became of it. */
struct tx_link {
	uint32_t idx;
	bool hard;   /* a hard link (-H), counted as linked when made */
	uint32_t to; /* a hard link: the idx of its file */
	char *path;
	char *fail; /* its FAIL's text, NULL while none came */
	int code;
	uint8_t kept; /* a hard link's name left as it was there: KEPT's how */
};

#define XLINK_DEAD UINT32_MAX /* its file failed: the next name is a file */
/* -H, sender: the files with more than one name met so far, by device and
 * inode, with the idx of the entry that announced each (an open table, at
 * most half full; hardlink.c) */
struct xlinks {
	struct xlink_cell {
		uint64_t dev, ino;
		uint32_t idx;
		bool used;
	} * h;
	size_t cap, n;
	/* the files so announced, in idx order, with their paths (what a
	 * link's line names) and sizes (what a name asked again adds) */
	struct xlink_file {
		uint32_t idx;
		uint64_t dev, ino, size;
		char *path;
	} * files;
	size_t nfiles, cap_files;
};

/* -H, receiver: the file entries announced LINKED, in idx order, and
 * whether each got its name (received and verified, or up to date), with
 * the device and inode it then had (hardlink.c; under lock) */
struct xleaders {
	struct xleader {
		uint32_t idx;
		bool ok;
		bool newer; /* UPDATE kept a newer copy there: not linked to */
		uint8_t plan;	   /* its PLAN's action */
		uint64_t dev, ino; /* 0 0: a dry run's, not named */
		uint64_t size, was_dev, was_ino; /* what was there, planned */
		char *path;
	} * v;
	size_t n, cap;
};

/* A file event waiting for the control thread. */
struct xfer__fev {
	char *path; /* taken from the file */
	uint64_t size;
	bool ok, skipped, deleted, replace, delta, dry_run, linked, special;
	int code;
	char *reason; /* NULL when ok */
};

struct xfer__evq {
	struct xfer__fev *v;
	unsigned n, cap;
};

/* The sender's shared state. */
struct xsend {
	uint32_t fifo[XFER_WINDOW_MAX]; /* slots with chunks to take */
	unsigned fifo_head, fifo_len;
	unsigned waiters; /* stream threads waiting for work */
	struct retry *retries;
	unsigned nretries, cap_retries;
	uint32_t sums[XFER_WINDOW_MAX]; /* entries whose SUM is ready */
	unsigned nsums;
	uint32_t pre_q[XFER_WINDOW_MAX]; /* slots to read ahead (prehash.c) */
	unsigned pre_head, pre_len;
	pthread_mutex_t pipe_lock;
	int64_t pace_next_us;
	char late_reason[PROTO_MAX_TEXT + 24]; /* a FAIL without ACK */
	int late_code;
	/* symlinks done for now, made by the receiver at the end: their
	 * outcome is told after XFER_DONE (in idx order) */
	struct tx_link *links;
	unsigned nlinks, cap_links;
	struct xlinks hl; /* -H: files of more than one name met (control
			     thread) */
};

/* The receiver's shared state. */
/* --delete: the paths announced, as 64-bit keys in an open table, 0 for
 * an empty cell, at most half full (control thread; delete.c) */
struct xdel {
	uint64_t *h;
	size_t cap, n;
	bool failed; /* could not grow: nothing is deleted */
};

struct xrecv {
	pthread_mutex_t wlock[WLOCKS]; /* one writer per file, by slot */
	pthread_cond_t out_cv;
	struct proto_xfer_ack *acks;
	unsigned nacks, cap_acks;
	/* CHECKSUM: the FDIGEST item that came before the next ENTRY */
	bool has_fdig;
	uint32_t fdig_idx;
	uint8_t fdig[DIGEST_LEN];
	bool ack_wake;			  /* the ack queue went from empty */
	bool any_failed;		  /* scan the window for failures */
	uint32_t finals[XFER_WINDOW_MAX]; /* slots ready to finalize */
	unsigned nfinals;
	bool fail_pending[XFER_WINDOW_MAX];
	struct xfer_dest dest;	/* made into destfd at the first entry */
	int64_t busy_waited_ms; /* for other sessions' temporary files */
	int destfd, outfd;
	uint32_t next_out;  /* standard output: next chunk to write */
	uint32_t announced; /* entries announced so far */
	struct dirh dirh[DIRH_MAX];
	uint64_t dirh_tick;
	mode_t umask;		      /* the process's, read once */
	bool no_anon;		      /* O_TMPFILE refused here once */
	uint64_t dropped, drop_limit; /* chunks of failed files drained */
	_Atomic unsigned ended;	      /* stream threads finished */
	uint8_t *svc_buf;	      /* recv_service's own message */
	/* the paths of the window's files, to refuse a second entry of one
	 * name while the first is in flight (control thread) */
	struct rx_name {
		uint64_t h; /* 0: empty */
		uint32_t idx;
	} names[RX_NAMES];
	unsigned nnames; /* cells taken, stale ones too */
	struct xdel del;
	struct xleaders leaders;
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
	_Atomic bool abort, closing;
	_Atomic bool wake_pending; /* the event counter was written */
	bool woken;		   /* control thread: a stream thread woke it */
	int error;		   /* first fatal error */
	struct lr_err err;
	uint32_t wn; /* the window: slots of win[] in use, idx mod wn */
	struct xfile win[XFER_WINDOW_MAX];
	struct xsend tx;
	struct xrecv rx;
	struct xfer__evq evq, evq_spare;
	struct xowners *own; /* -o/-g (owner.c; control thread) */
	/* -X/-A (xattr.c): the next entry's items, an entry's read; control
	 * thread but xat_said (under the lock) */
	struct xgive *xat_next;
	struct xattr_tx *xat_tx;
	unsigned xat_said; /* reasons said once a session */
	uint64_t bytes_done, bytes_held;
	uint64_t files_done;
	_Atomic int64_t last_activity_ms;
	int64_t ctrl_sent_ms;	 /* control thread: the last message sent */
	struct xfer_waits waits; /* summed at thread exit */
	int64_t t0_us;
};

/* A stream thread. */
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

/* Progress events every o->progress_ms, the current rate over the last
 * two seconds (acknowledgements come in bursts of whole chunks). */
struct pclock {
	int64_t next;
	int64_t ms[9];
	uint64_t bytes[9];
	unsigned n;
};

/* ---- locks (session.c) ---- */

#ifndef NDEBUG
/* Engine locks this thread holds, for the callback assertion. */
extern _Thread_local unsigned xfer__locks_held;
#define XFER__HELD(d) (xfer__locks_held += (d))
#else
#define XFER__HELD(d) ((void)0)
#endif

static inline void xfer__lock(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	XFER__HELD(1);
}

static inline void xfer__unlock(pthread_mutex_t *m)
{
	XFER__HELD(-1);
	pthread_mutex_unlock(m);
}

/* ---- session.c: one session's set-up, control connection, threads ---- */

static inline uint64_t xfer__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
int xfer__sess_init(struct xsess *x, struct xfer_conns *cs,
		    const struct xfer_opts *o, const struct xfer_callbacks *cb,
		    struct xfer_result *res, bool sender);
void xfer__sess_fini(struct xsess *x);
/* Wake the control thread (from any thread, any lock). */
void xfer__wake(struct xsess *x);
/* Record the first fatal error and stop everyone. Without x->lock. */
void xfer__fatal(struct xsess *x, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A data stream that ended without its END (cut or reset): most often the
 * peer ending the session, whose ERROR on control, when it comes within a
 * moment, is the session's; else this one. It sleeps (up to half a
 * second): from a stream thread only, never the control thread. */
void xfer__fatal_cut(struct xsess *x, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Send the message built in b on the control connection; b is empty
 * afterwards. */
int xfer__ctrl_send(struct xsess *x, struct proto_buf *b);
int xfer__ctrl_send_raw(struct conn *c, struct proto_buf *b);
/* End the message in b, send it, and begin another of type type. */
int xfer__msg_next(struct xsess *x, struct proto_buf *b, uint8_t type);
/* Make room for n more bytes of items in the open message of type
 * type in b: when full, end it, send it and begin another. */
int xfer__batch_room(struct xsess *x, struct proto_buf *b, size_t n,
		     uint8_t type);
int xfer__send_error(struct xsess *x, uint32_t code, const char *text);
int xfer__peer_error(const uint8_t *body, size_t len, struct lr_err *err);
void xfer__data_sockopts(struct xsess *x);
void xfer__raise_nofile(void);
void xfer__add_waits(struct xsess *x, const struct conn *c, uint64_t disk_ns,
		     uint64_t hash_ns, int64_t t0);
/* One turn of a control loop: the heartbeat when due, then wait up to
 * tmo ms for the peer or a stream thread. 1 with a message in rbuf and *h
 * (never XFER_ALIVE: taken here), 0 without one, or a negative error with
 * err filled and the peer told why. */
int xfer__ctrl_turn(struct xsess *x, int64_t tmo, uint8_t *rbuf,
		    struct proto_hdr *h, const char *peer, const char *me,
		    struct lr_err *err);
/* XFER_ALIVE when the sealed control connection sent nothing for
 * ALIVE_MS. A failed heartbeat is not an error of its own: the read that
 * follows tells what became of the peer. Control thread. */
void xfer__alive(struct xsess *x);
/* After XFER_DONE: shut our side and wait up to LINGER_MS for the peer's
 * close, reading and dropping what it sends meanwhile, so that our last
 * message is not lost to a reset. Control thread. */
void xfer__ctrl_linger(struct xsess *x);
int xfer__start_threads(struct xsess *x, struct sthread *ts,
			void *(*fn)(void *));
void xfer__join_threads(struct xsess *x, struct sthread *ts);

/* ---- events.c: callbacks, delivered by the control thread ---- */

/* Queue a file event for f, taking f's path. Under x->lock. */
void xfer__file_event(struct xsess *x, struct xfile *f, bool ok, bool skipped,
		      const char *reason, int code);
/* An entry the walk set aside (XFER_WALK_VANISHED: failed;
 * XFER_WALK_SPECIAL: told and skipped, mode its type): counted, its
 * event queued. Not under lock. */
void xfer__walk_aside(struct xsess *x, const char *path, int what, mode_t mode);
/* Queue a file event for a path that has no window entry (a symlink made
 * at the end). Under x->lock. */
/* A hard link made (or, dry_run, that would be) to the file file (its
 * path, NULL when unknown): its event, which names that file. Under
 * lock. */
void xfer__link_event(struct xsess *x, const char *path, const char *file,
		      bool dry_run);
void xfer__path_event(struct xsess *x, const char *path, bool ok,
		      const char *reason, int code);
/* An entry --delete removed (or would, in a dry run): counted, its event
 * queued. Takes x->lock. */
void xfer__deleted(struct xsess *x, const char *path);
/* DRY_RUN: the event of a file that would be sent (replace: over an
 * existing one). Under x->lock. */
void xfer__dry_event(struct xsess *x, struct xfile *f, bool replace);
/* Deliver the queued file events. Control thread, no lock held. */
void xfer__deliver(struct xsess *x);
void xfer__progress_tick(struct xsess *x, struct pclock *pc, int64_t now,
			 uint64_t total, bool known, uint64_t files);
/* START and END events, and the clock of the progress events. */
void xfer__emit_edge(struct xsess *x, enum xfer_event_kind kind, bool ok,
		     uint64_t total, bool known, uint64_t files);
/* Keep the first failure for the session's error. Under x->lock. */
void xfer__note_failure(struct xsess *x, const struct xfile *f,
			const char *reason, int code);
void xfer__note_failure_at(struct xsess *x, const char *path,
			   const char *reason, int code);
const char *xfer__path(const struct xfile *f);
/* The session's end: its figures into x->res, and -EIO with err naming
 * the first failed file when the session ran but files failed. */
int xfer__result(struct xsess *x, int r, uint64_t files, struct lr_err *err);
void xfer__evq_free(struct xsess *x);

/* ---- window.c: the entries, their chunks, the sender's work queue ---- */

/* Chunks of a file of size bytes, in 64 bits (no overflow near 2^64). */
static inline uint64_t xfer__chunks_of64(uint64_t size, uint32_t chunk)
{
	return size / chunk + (size % chunk != 0);
}

/* The same for a size already checked against XFER_MAX_CHUNKS. */
static inline uint32_t xfer__chunks_of(uint64_t size, uint32_t chunk)
{
	return (uint32_t)xfer__chunks_of64(size, chunk);
}

/* The length of chunk chunk of f at chunk size cs. */
static inline uint32_t xfer__chunk_len(const struct xfile *f, uint32_t chunk,
				       uint32_t cs)
{
	uint64_t off = (uint64_t)chunk * cs;

	if (f->pipe)
		return cs;
	return f->size - off < cs ? (uint32_t)(f->size - off) : cs;
}
int xfer__file_grow(struct xfile *f, uint32_t n);
/* A free slot (zero, as released) takes the announced entry e (its path
 * copied); the caller sets its state. 0 or -ENOMEM. */
int xfer__file_init(struct xfile *f, const struct proto_xfer_entry *e);
void xfer__file_release(struct xfile *f);

static inline bool xfer__used(const struct xfile *f)
{
	return f->tx.state != XTX_FREE || f->rx.state != XRX_FREE;
}

/* The entry of slot idx when it holds entry idx, else NULL. Under lock. */
static inline struct xfile *xfer__entry(struct xsess *x, uint32_t idx)
{
	struct xfile *f = &x->win[SLOT(x, idx)];

	return xfer__used(f) && f->idx == idx ? f : NULL;
}
bool xfer__window_empty(struct xsess *x);
void xfer__window_fini(struct xsess *x);
/* Sender: how many entries to announce now (left: entries not announced
 * yet): the free slots from next_idx on, or 0 to wait for more. */
unsigned xfer__window_room(struct xsess *x, uint32_t next_idx, uint64_t left);
/* Sender, under lock: queue a planned file's chunks; end a file (its
 * queued chunks dropped, freed once no thread holds one). */
void xfer__queue_file(struct xsess *x, struct xfile *f);
void xfer__tx_file_end(struct xsess *x, struct xfile *f);
/* Sender, under lock: a stream thread is done with a chunk of f. */
void xfer__chunk_put(struct xsess *x, struct xfile *f);
/* Sender, under lock: one more chunk of f is hashed (sent or matched). */
void xfer__chunk_hashed(struct xsess *x, struct xfile *f);
/* Sender, under lock: when every chunk of f is taken and hashed and its
 * size known, its SUM is queued and the control thread woken. */
void xfer__sum_if_hashed(struct xsess *x, struct xfile *f);
/* Sender, under lock: the head of the work queue leaves it. */
void xfer__fifo_pop(struct xsess *x);
/* Sender, under lock: work for a stream thread (1), 0 when closing,
 * XFER_IDLE when none came by idle_until (a net_now_ms time; < 0: wait
 * as long as it takes), XFER_AHEAD for a chunk to read ahead of its plan
 * (prehash.c), -ECANCELED on abort. */
#define XFER_IDLE  2
#define XFER_AHEAD 3
int xfer__take_work(struct xsess *x, uint32_t *slot, uint32_t *chunk,
		    bool *pipe, int64_t idle_until);
int xfer__take_more(struct xsess *x, uint32_t room, uint32_t *slot,
		    uint32_t *chunk);
void xfer__pass_on(struct xsess *x);

/* ---- walk.c: the sender's sources ---- */

/* One entry of the walk. */
struct wentry {
	uint8_t kind;
	struct stat st;
	int fd; /* files in pass 2: opened for reading */
	bool is_stdin;
	char target[PROTO_XFER_MAX_PATH + 1];
	uint16_t target_len;
	/* a directory announced whose entries could not be read: the
	 * -errno, with the walker's err saying what failed */
	int read_err;
	/* -H: announced as a name of entry link_to (kind HARDLINK), or as a
	 * file other names may link to (LINKED) */
	bool linked;
	uint32_t link_to;
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
	struct lr_err eerr;   /* why an entry could not be read */
	uint64_t top_missing; /* as xfer_source's: set by the caller; the
				 count fills it */
	/* --files-from: the source directory, to tell the listed paths
	 * that are not there once the walk is over, from list_i on */
	int list_fd;
	uint32_t list_i;
};

/* The count of a push in a thread of its own (client.c). */
struct counter {
	const struct xfer_source *src;
	pthread_t th;
	bool started;
	_Atomic bool stop;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	/* under lock */
	struct proto_xfer_totals t; /* so far */
	uint64_t missing;	    /* xfer_source's top_missing, at the end */
	bool pipe, done;
	int r;
	struct lr_err err;
};

void xfer__walk_init(struct walker *w, const struct xfer_source *src,
		     bool open_files, struct lr_err *err);
void xfer__walk_fini(struct walker *w);
/* Next entry: 1, XFER_WALK_VANISHED for a file that went between its
 * stat and its open, XFER_WALK_UNREADABLE for an entry that could not be
 * read (w->err says why: the walk goes on), XFER_WALK_SPECIAL for a FIFO,
 * socket or device node in a directory (e->st is its lstat: not sent;
 * w->path names each), 0 at the end, or an error with w->err filled. A
 * directory whose entries cannot be read comes as 1 with e->read_err. */
#define XFER_WALK_VANISHED   2
#define XFER_WALK_UNREADABLE 3
#define XFER_WALK_SKIP	     4 /* inside walk.c only */
#define XFER_WALK_SPECIAL    5
int xfer__walk_next(struct walker *w, struct wentry *e);
int xfer__count_sources(const struct xfer_source *src,
			struct proto_xfer_totals *t, bool *pipe,
			uint64_t *missing, struct lr_err *err,
			struct counter *c);
unsigned xfer__streams_for(const struct proto_xfer_totals *t, bool pipe);
bool xfer__counter_start(struct counter *c, const struct xfer_source *src);
unsigned xfer__counter_streams(struct counter *c);
void xfer__counter_join(struct counter *c, struct xfer_source *src,
			bool cancel);

/* ---- links_told.c: symlinks and hard links made at the end (sender) */

/* The kept one of entry idx, or NULL; f kept (under lock); a KEPT item
 * (LR_EBADMSG unless known); each told after XFER_DONE; freed. */
struct tx_link *xfer__link_find(struct xsess *x, uint32_t idx);
int xfer__link_keep(struct xsess *x, struct xfile *f);
int xfer__link_kept(struct xsess *x, const struct proto_xfer_iter *it);
void xfer__links_told(struct xsess *x);
void xfer__links_free(struct xsess *x);
/* send_answers.c: the receiver's PLAN; one ACKS item but FILE_AGAIN, KEPT */
int xfer__tx_on_plan(struct xsess *x, const uint8_t *body, size_t len);
int xfer__tx_acks_item(struct xsess *x, const struct proto_xfer_iter *it);

/* ---- send_stream.c, recv_stream.c: the stream threads ---- */

void *xfer__send_stream(void *arg);
void *xfer__recv_stream(void *arg);

/* ---- recv_state.c: the receiver's bookkeeping of finished files ---- */

/* Queue an ACK item for the control thread. Under lock. */
int xfer__push_ack(struct xsess *x, uint32_t idx, uint32_t chunk,
		   uint8_t status, uint32_t bytes);
bool xfer__final_ready(const struct xfile *f);
void xfer__maybe_final(struct xsess *x, struct xfile *f);
/* A file failed on the receiving side (reason, code set). Under lock. */
void xfer__rx_fail(struct xsess *x, struct xfile *f, int code, const char *fmt,
		   ...) __attribute__((format(printf, 4, 5)));
void xfer__wake_if(struct xsess *x);
/* Name complete files and account for them under one lock. No lock. */
int xfer__finish_files(struct xsess *x, struct xfile *const *fs, unsigned n,
		       bool synced);
int xfer__finish_file(struct xsess *x, struct xfile *f, bool synced);
/* Abandon a file: a resumable one keeps its temporary file and journal
 * (keep: no lock held, the journal is flushed; else under lock or at the
 * end). */
void xfer__rx_abandon(struct xsess *x, struct xfile *f, bool keep);
/* Flush queued ACKs and file outcomes, finalize ready files, on the
 * control thread. */
int xfer__recv_service(struct xsess *x);

/* ---- dest.c: the destination's files and directories ---- */

/* Decide what to do with an announced file; fills plan (and HELD items
 * into b when resuming). 0 or a fatal error. Control thread. */
int xfer__plan_file(struct xsess *x, struct xfile *f,
		    const struct proto_xfer_entry *e, struct proto_buf *b,
		    struct proto_xfer_plan *plan);
/* Give a complete file its final name. 0 or -errno with reason set. */
int xfer__finalize(struct xsess *x, struct xfile *f, bool synced);
bool xfer__dir_named(struct xsess *x, struct xfile *f);
void xfer__dirs_sync(struct xsess *x);
void xfer__dirh_made(struct xsess *x, const char *rel, int fd);
void xfer__dirh_fini(struct xsess *x);
mode_t xfer__read_umask(void);

/* A directory whose mode and time are applied at the end, or a symlink
 * made then. */
struct late {
	struct late *next;
	uint32_t idx;
	uint8_t kind;
	uint16_t mode;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	char *path;
	char *target;
	uint32_t link_to; /* a hard link: the idx of its file */
	bool owned;	  /* -o/-g: uid and gid to give it (-1: as it is) */
	uid_t uid;
	gid_t gid;
	uint32_t dev_major, dev_minor; /* a device node's */
	struct xgive *xg; /* -A: a directory's ACLs, given with its mode */
};

int xfer__late_add(struct late **head, const struct proto_xfer_entry *e);
void xfer__late_free(struct late *l);
/* Symlinks, then directories' modes and times; failures counted into
 * failed and put as FAIL items into fb. */
void xfer__late_apply(struct xsess *x, struct late *l, struct proto_buf *fb,
		      uint64_t *failed);

/* ---- delete.c: --delete at the receiver ---- */

/* Note an announced path (control thread); remove what was not announced
 * in the directories sent (l: the late list), DELETED items into b, none
 * after an UNREAD (0/-errno); the removals that failed into XFER_DONE
 * (under lock). */
void xfer__del_note(struct xsess *x, const char *path, size_t len);
int xfer__del_run(struct xsess *x, const struct late *l, uint64_t unread,
		  struct proto_buf *b);
void xfer__del_done(const struct xsess *x, struct proto_xfer_done *d);
void xfer__del_free(struct xsess *x);

/* ---- checksum.c: -c/--checksum ---- */
bool xfer__entry_digest(struct xsess *x, int fd,
			const struct proto_xfer_entry *pe,
			struct proto_xfer_fdigest *d);
bool xfer__same_content(struct xsess *x, int dirfd, const char *name,
			const struct proto_xfer_entry *e);

/* ---- names.c: one temporary file a name; a lone file (receiver) ---- */
/* Entry e (a file) and the window's files: true when one of them, still
 * in flight, has its path; else e's is noted. Under lock. */
bool xfer__name_taken(struct xsess *x, const struct proto_xfer_entry *e);
/* get HOST:FILE DEST (rx.dest.one_file): entry e, the first of a session
 * of `files` entries, named DEST in DEST's parent when it is one file. */
void xfer__lone_file(struct xsess *x, uint64_t files,
		     struct proto_xfer_entry *e);

/* ---- owner.c: -o/-g ---- */

/* Sender: the OWNER item of an entry with st, true when one goes. */
bool xfer__owner_item(struct xsess *x, const struct stat *st, uint32_t idx,
		      struct proto_xfer_owner *o);
size_t xfer__owner_size(const struct proto_xfer_owner *o); /* in a batch */
/* At the session's start (-ENOMEM) and end; whether this end is root.
 * Receiver: an OWNER item noted (mapped to this machine's ids) for the
 * next entry (NULL, or why it is out of place or malformed), forgotten
 * after that entry; the ids it gives entry idx: true with uid/gid set
 * ((uid_t)-1: as it is) when there is anything to change. */
int xfer__owner_init(struct xsess *x);
void xfer__owner_fini(struct xsess *x);
bool xfer__owner_root(const struct xsess *x);
const char *xfer__owner_on_item(struct xsess *x,
				const struct proto_xfer_iter *it);
void xfer__owner_next_gone(struct xsess *x);
bool xfer__owner_take(struct xsess *x, uint32_t idx, uid_t *uid, gid_t *gid);
/* An up-to-date file (SKIP): owner and group, setid bits (consent) again
 * and the entry's mode (rsync -p), on a descriptor of the inode looked at;
 * what could not be given in f->rx.reason, for its event. */
void xfer__owner_fix(struct xsess *x, struct xfile *f);
/* A symlink or node l made as name in dfd: opened without following it,
 * checked to be of m's type (and inode, made), given l's owner (a failure
 * said) and m's mode and times: 0, or -errno (not what was made). */
struct xnode_meta {
	mode_t type;
	const struct stat *made;
	const mode_t *mode;
	const struct timespec *ts;
};
int xfer__owner_node(struct xsess *x, const struct late *l, int dfd,
		     const char *name, const struct xnode_meta *m);
/* An owner not given (e): counted, said in a file event. Under lock. */
void xfer__owner_said(struct xsess *x, const char *path, int e);
/* ACL entries: id's name here ("" none), a name's id (sent: unknown) */
void xfer__owner_name(struct xsess *x, uint32_t id, bool group, char *out);
uint32_t xfer__owner_id(struct xsess *x, const char *name, uint32_t sent,
			bool group);

/* ---- xattr.c: -X extended attributes, -A POSIX ACLs ---- */

/* Sender (xattr_read.c): entry e's items read, their size, put */
int xfer__xattr_read(struct xsess *x, const struct walker *w,
		     const struct wentry *e, uint8_t kind, uint32_t idx,
		     const char *path);
size_t xfer__xattr_size(const struct xsess *x);
void xfer__xattr_put(struct xsess *x, struct proto_buf *b);
/* Receiver: an item noted, whether e may have them (NULL, or why not),
 * taken; given on descriptors (a file's, an up-to-date file's under lock,
 * a directory's, its ACLs at the end); said when named; in XFER_DONE. */
const char *xfer__xattr_note(struct xsess *x, const struct proto_xfer_iter *it);
const char *xfer__xattr_check(const struct xsess *x,
			      const struct proto_xfer_entry *e);
struct xgive *xfer__xattr_take(struct xsess *x, uint32_t idx);
void xfer__xattr_file(struct xsess *x, struct xfile *f);
void xfer__xattr_fix(struct xsess *x, struct xfile *f);
void xfer__xattr_dir(struct xsess *x, int dfd, uint32_t idx, const char *path);
void xfer__xattr_dir_acls(struct xsess *x, int dfd, struct late *l);
void xfer__xattr_named(struct xsess *x, struct xfile *f);
void xfer__xattr_done(const struct xsess *x, struct proto_xfer_done *d);
void xfer__xgive_free(struct xgive *g);
void xfer__xattr_fini(struct xsess *x);

/* ---- nodes.c: FIFOs, sockets and device nodes (-D) ---- */

/* One the request did not
 * ask for (the session ends), or why one is not made here (a receiver
 * not running as root; a device without the receiver's consent), NULL
 * when it is. */
bool xfer__node_unasked(const struct xsess *x,
			const struct proto_xfer_entry *e);
const char *xfer__node_refused(const struct xsess *x,
			       const struct proto_xfer_entry *e);

/* ---- hardlink.c: -H ---- */

/* Sender: 1 when file e is a name of one announced (e made a HARDLINK to
 * it), 0 when it goes as a file (LINKED with more names; again: the one
 * later names link to). Noted by xfer__hl_commit. */
int xfer__hl_decide(struct xlinks *l, struct wentry *e, bool again);
int xfer__hl_commit(struct xlinks *l, const struct wentry *e, uint32_t idx,
		    const char *path);
/* The file announced as idx (or st's) failed: its next name is a file */
void xfer__hl_dead(struct xlinks *l, uint32_t idx);
void xfer__hl_forget(struct xlinks *l, const struct stat *st);
/* The path (and size) of the file announced as idx (LINKED), or NULL;
 * counter: st is a name of a file counted before. */
const char *xfer__hl_path(const struct xlinks *l, uint32_t idx, uint64_t *size);
bool xfer__hl_counted(struct xlinks *l, const struct stat *st);
void xfer__hl_free(struct xlinks *l);
/* Receiver, under lock: a LINKED file entry is announced (0, -ENOMEM);
 * planned (action); received and named (dirfd/name: where). */
int xfer__hl_leader_add(struct xsess *x, const struct proto_xfer_entry *e,
			const char *path);
void xfer__hl_leader_planned(struct xsess *x, const struct xfile *f,
			     uint8_t action);
void xfer__hl_leader_named(struct xsess *x, const struct xfile *f, int dirfd,
			   const char *name);
/* By default, e answered FILE_AGAIN (1: f gone, room made: *n, *b bytes;
 * takes the lock); under lock: why e is refused (no LINKED file), or NULL */
int xfer__hl_again(struct xsess *x, struct xfile *f,
		   const struct proto_xfer_entry *e, uint64_t *n, uint64_t *b);
const char *xfer__hl_refused(struct xsess *x, const struct proto_xfer_entry *e);
/* At the end, link l (dry: look): 0, skipped (KEPT's how), -errno, why */
int xfer__hl_make(struct xsess *x, const struct late *l, char *why,
		  size_t whylen);
/* The path of the file a hard link names (until the session's end). */
const char *xfer__hl_file(struct xsess *x, uint32_t idx);
void xfer__hl_leaders_free(struct xsess *x);

/* ---- prehash.c: digests ahead of the plan (sender) ---- */

/* Files of fewer chunks wait for their plan to be read. */
#define PREHASH_MIN_CHUNKS 16u
/* An announced file, offered to idle stream threads if it may be
 * replaced by a delta. Under lock. */
void xfer__prehash_offer(struct xsess *x, struct xfile *f);
/* A chunk to read ahead: 1 with *slot and *chunk (the file's inflight
 * counts it), 0 when there is none. Under lock. */
int xfer__prehash_take(struct xsess *x, uint32_t *slot, uint32_t *chunk);
/* Read and digest the chunk taken, into buf (a chunk's room), and let go
 * of it. Not under lock. */
void xfer__prehash_chunk(struct xsess *x, uint32_t slot, uint32_t chunk,
			 uint8_t *buf);
/* The digest read ahead for f's chunk into d: true when there is one.
 * Not under lock. */
bool xfer__prehashed(struct xsess *x, const struct xfile *f, uint32_t chunk,
		     uint8_t *d);

/* ---- delta.c: the old copy of a replaced file ---- */

/* Files of fewer chunks are sent whole when replaced. */
#define DELTA_MIN_CHUNKS 2u
/* Whether a replaced f may be built from its old copy (no -W). */
bool xfer__delta_wanted(const struct xsess *x, const struct xfile *f);
/* Hold every chunk of the old copy under f's name that f needs: read,
 * digested and written into f's temporary file at its offset, by up
 * to four threads for a large file. The count held, or a fatal error
 * (the control connection). Control thread, before the plan. */
int xfer__delta_seed(struct xsess *x, struct xfile *f);

/* ---- resume.c: the journal of an interrupted file ---- */

/* Pick up an earlier attempt at f: 1 when resumed, 0 when there is none
 * to resume, -EBUSY when a receiver is writing its temporary file. */
int xfer__try_resume(struct xsess *x, struct xfile *f,
		     const struct proto_xfer_entry *e, const char *jname);
/* HELD items for the chunks f holds, into the PLAN message in b. */
int xfer__put_held(struct xsess *x, struct xfile *f, struct proto_buf *b);
/* Start f's journal (a file of JOURNAL_MIN_CHUNKS or more). */
void xfer__journal_start(struct xsess *x, struct xfile *f,
			 const struct proto_xfer_entry *e, const char *jname);
/* Append the chunks written since the last time, after their data
 * (any thread, no lock held). */
void xfer__journal_flush(struct xsess *x, struct xfile *f);
void xfer__journal_flush_all(struct xsess *x);

#endif
