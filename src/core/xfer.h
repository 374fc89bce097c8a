/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_XFER_H
#define LINERATE_XFER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cipher.h"
#include "err.h"

/*
 * File transfer (docs/PROTOCOL.md section 7): a sender walks its sources
 * and announces entries on the control connection; the receiver answers
 * with a plan per file; chunks with their digests travel striped over the
 * data streams and are written at their offsets into a temporary file,
 * acknowledged on the control connection once written and verified; a
 * file gets its final name after its digest matches. The engine is the
 * same for push and pull: only who connects differs.
 *
 * This header is the engine's face for the command line and the server
 * (docs/ARCHITECTURE.md): the engine's own parts are in xfer/xfer_int.h.
 *
 * Threads: the caller of xfer_send, xfer_recv or xfer_client_run is the
 * session's control thread; the session starts one stream thread per
 * data connection and joins them before it returns.
 */

#define XFER_DEFAULT_CHUNK   (1u << 20)
#define XFER_MIN_CHUNK	     (64u << 10)
#define XFER_MAX_CHUNK	     (8u << 20)
#define XFER_DEFAULT_STREAMS 4u
#define XFER_MAX_STREAMS     128u	  /* data streams of one session */
#define XFER_MAX_SOCKBUF     (256u << 20) /* -w: a socket's buffers */
#define XFER_MAX_PATHS	     64u	  /* source paths of one pull */
#define XFER_MAX_PATH	     4096u	  /* bytes of a relative path */
/* Entries announced and not yet done: a session's window is agreed in
 * XFER_REQUEST and XFER_ACCEPT, at most XFER_WINDOW_MAX; XFER_WINDOW
 * when a peer does not say (docs/PROTOCOL.md section 7.3) */
#define XFER_WINDOW	 256u
#define XFER_WINDOW_MAX	 1024u
#define XFER_MAX_RETRIES 3u /* resends of one chunk */

struct lr_filter; /* filter.h */

enum xfer_op { XFER_PUSH = 1, XFER_PULL = 2 };

/* What the receiving side does, asked by the client (and the server's own
 * options added to a push). */
enum xfer_flag {
	XFER_F_OVERWRITE = 1u << 0, /* replace existing files */
	XFER_F_UPDATE = 1u << 1,   /* as rsync -u: replace unless newer there */
	XFER_F_NO_FSYNC = 1u << 2, /* name files without waiting for the disk */
	XFER_F_KEEP_SETID = 1u << 3, /* keep setuid/setgid bits */
	XFER_F_STDOUT = 1u << 4,     /* a pull of one file into a pipe */
	XFER_F_SCRATCH = 1u << 5,    /* doctor: verify, remove, never name */
	XFER_F_DELETE = 1u << 6,     /* remove what the source does not have */
	XFER_F_DELETE_EXCLUDED = 1u << 7, /* and what the rules leave out */
	XFER_F_DRY_RUN = 1u << 8,  /* plan and tell, write and move nothing */
	XFER_F_CHECKSUM = 1u << 9, /* up to date by content: rsync -c */
	XFER_F_WHOLE_FILE = 1u << 10,  /* replaced files sent whole: rsync -W */
	XFER_F_HARD_LINKS = 1u << 11,  /* hard links kept as links: rsync -H */
	XFER_F_OWNER = 1u << 12,       /* owners kept (root receiver): -o */
	XFER_F_GROUP = 1u << 13,       /* groups kept: -g */
	XFER_F_NUMERIC_IDS = 1u << 14, /* ids as they are: --numeric-ids */
	XFER_F_SPECIALS = 1u << 15,    /* FIFOs and sockets: --specials */
	XFER_F_DEVICES = 1u << 16,     /* device nodes: --devices */
	XFER_F_XATTRS = 1u << 17,      /* extended attributes kept: -X */
	XFER_F_ACLS = 1u << 18,	       /* POSIX ACLs kept: -A */
	/* not on the wire (a granted LINKS_WISH, docs/PROTOCOL.md 7.2): the
	 * far end knows KEPT items; and links are kept by default, not
	 * asked, so a name there is left as a run without them leaves it */
	XFER_F_KEPT_ITEMS = 1u << 29,
	XFER_F_LINKS_DEFAULT = 1u << 30,
};

/* What a sender sends: local paths (push) or paths below a root (pull). */
struct xfer_source {
	int rootfd;	 /* pull: the server's root; -1 for push */
	unsigned npaths; /* push: CLI arguments; "-" is stdin */
	const char *const *paths;
	/* bit i: paths[i] is a directory whose contents are sent, not the
	 * directory itself (a trailing '/', as rsync reads it) */
	uint64_t contents;
	const struct lr_filter *filter; /* what is left out; NULL: nothing */
	const char *stdin_name;		/* push of "-": the name to give it */
	/* the totals when the caller counted them already (one walk less) */
	bool counted, pipe;
	uint64_t files, bytes;
	/* bit i: source i could not be looked at when counted (so it is
	 * "not there", not "vanished", when the sender comes to it) */
	uint64_t top_missing;
	/* -H: files with more than one name are announced once, their other
	 * names in the transfer as hard links to it */
	bool hard_links;
	/* --specials, --devices: FIFOs and sockets, device nodes in a tree
	 * are announced (else told and left out) */
	bool specials, devices;
};

struct xfer_opts {
	uint32_t flags;		    /* enum xfer_flag */
	uint32_t chunk_size;	    /* of the session; 0: the default */
	uint32_t files_window;	    /* agreed; 0: XFER_WINDOW */
	uint64_t rate;		    /* bytes/s, sender side; 0 = no cap */
	int progress_ms;	    /* between progress events; 0 = none */
	const _Atomic bool *cancel; /* set by a signal handler */
	/* receiver with XFER_F_DELETE: the rules, which keep what they
	 * leave out (unless XFER_F_DELETE_EXCLUDED), and whether the
	 * destination directory itself was sent (a source sent as its
	 * contents), so that its own entries are in the deletion's scope */
	const struct lr_filter *filter;
	bool delete_root;
	/* XFER_F_STDOUT to a terminal: a first chunk with a NUL byte (or a
	 * hole) is binary data, refused (LR_EBINARY) before it is written */
	bool tty_guard;
	/* sender of a pipe (send -): its expected size (--size, pv's -s),
	 * the progress's total while the real one is unknown; 0 none */
	uint64_t size_hint;
	/* --timeout: silence of the peer that ends the session (ms); 0:
	 * IDLE_MS */
	int idle_ms;
	/* receiver with XFER_F_DEVICES: it consents to make device nodes
	 * (serve/recv --allow-devices; a pull's own client) */
	bool allow_devices;
};

enum xfer_event_kind {
	XFER_EV_START,	  /* totals known */
	XFER_EV_PROGRESS, /* every progress_ms */
	XFER_EV_FILE,	  /* a file done, skipped or failed */
	XFER_EV_END,
};

struct xfer_progress {
	uint64_t bytes_done; /* acknowledged written and verified, and
				bytes_held */
	uint64_t bytes_held; /* of those, already at the destination (a
				resume, --update's unchanged chunks): not moved */
	uint64_t bytes_total;
	bool total_known; /* false when a pipe is among the sources */
	/* entries (files, directories, symlinks, ...) done, of all */
	uint64_t files_done, files_total;
	double elapsed;	 /* seconds since start */
	double rate_now; /* bytes moved per second over the last period */
	bool rate_known; /* rate_now measured (not at the first tick) */
};

struct xfer_event {
	enum xfer_event_kind kind;
	struct xfer_progress p;
	const char *path; /* FILE: escaped for printing */
	uint64_t size;
	bool ok, skipped;
	bool deleted; /* FILE: removed at the destination (--delete) */
	bool replace; /* FILE: an existing file replaced */
	bool delta;   /* FILE replace: only chunks that differ travel */
	bool dry_run; /* FILE: what would be done (nothing was) */
	bool linked;  /* FILE: a hard link to a file of the transfer (-H),
			reason "to PATH" names it */
	bool special; /* FILE: a FIFO, socket or device left out (skipped) */
	const char *reason; /* FILE failed */
	int code;	    /* FILE failed: why, -errno (-EEXIST: the name
			       exists; -EFBIG: too many chunks) */
};

/*
 * Called on the session's control thread, never with an engine lock held:
 * START first, then PROGRESS every progress_ms, FILE events (which the
 * stream threads queue and the control thread delivers between messages,
 * in the order the files ended), END last. A slow callback delays the
 * control connection's messages (acknowledgements, announcements), not
 * the stream threads' work in hand. ev and what it points to are valid
 * during the call only.
 */
struct xfer_callbacks {
	void *ctx;
	void (*event)(void *ctx, const struct xfer_event *ev);
};

/* Where each side's threads spent their time (microseconds, summed over
 * the stream threads), for the bottleneck line. */
struct xfer_waits {
	uint64_t disk_us;   /* sender: reading the source; receiver: writing */
	uint64_t cipher_us; /* sealing or opening records */
	uint64_t net_us;    /* in socket calls */
	uint64_t hash_us;   /* chunk digests */
	uint64_t wall_us;   /* of the session, per stream thread */
	unsigned streams;
};

struct xfer_result {
	uint64_t bytes;	     /* written and verified this session */
	uint64_t bytes_held; /* already held by the receiver (resume) */
	uint64_t files_ok, files_failed, files_skipped;
	/* of files_failed: sources the sender could not read (or, for a
	 * directory, list); the rest of the tree went (exit status 23) */
	uint64_t files_unread;
	uint64_t files_deleted; /* --delete: entries removed */
	/* sender: FIFOs, sockets and device nodes found in a tree, each
	 * told and left out (not files, directories or symlinks) */
	uint64_t files_special;
	/* -H: names made as hard links to a file of the transfer (not in
	 * files_ok: their data is the file's) */
	uint64_t files_linked;
	/* receiver, -o/-g: entries kept without the owner or group asked
	 * (the receiver could not give it: no CAP_CHOWN, an unmapped id) */
	uint64_t owners_failed;
	/* receiver, -X/-A: entries kept without some of their extended
	 * attributes or ACLs (the destination refused them); sender: ones
	 * left out of the item (past the bounds of docs/PROTOCOL.md) */
	uint64_t xattrs_failed;
	char xattrs_why[LR_ERR_MSG]; /* the first, "" when none */
	uint64_t rate_limit; /* --limit (bytes/s) this end knows of; 0 none */
	bool delete_skipped; /* --delete: skipped after a read error */
	/* --delete: entries that could not be removed (exit status 23), and
	 * the first, "" when none */
	uint64_t deletes_failed;
	char deletes_why[LR_ERR_MSG];
	double seconds;
	bool authenticated;
	enum crypto_cipher cipher;
	unsigned streams;
	uint32_t chunk_size;
	struct xfer_waits local, remote; /* remote: from XFER_DONE */
	bool is_sender;
	char first_failure[LR_ERR_MSG]; /* when files_failed */
	int first_failure_code;		/* its -errno */
	/* sender, on a failed session: it failed only for want of the
	 * receiver's XFER_DONE, lost or tampered with after every file was
	 * acknowledged verified (the receiver finished) */
	bool peer_end_lost;
	/* the link of the first data stream (client side) */
	bool link_known, ipv6;
	char link_if[32];
	uint64_t link_speed_bps; /* 0 = unknown */
	unsigned link_mtu;
	bool link_wireless, link_virtual; /* Wi-Fi; veth, loopback, tunnel */
	/* client of a push that asked lone_file: the server did not answer
	 * it (an older one), so its PATH was taken as a directory */
	bool lone_as_dir;
};

struct conn; /* conn.h: the engine's own */

/* A session's connections: control and data streams, ready (handshake
 * done, DATA_OPEN exchanged). */
struct xfer_conns {
	struct conn *ctrl;
	unsigned n;
	struct conn *data; /* n entries */
};

/*
 * Run the sending side of a session over cs. Returns 0 when every file
 * was written and verified, LR_EPEER-style errors with err filled on a
 * failed session, and -EIO with err naming the first failed file when the
 * session ran to its end but some files failed (res counts them).
 */
int xfer_send(struct xfer_conns *cs, const struct xfer_source *src,
	      const struct xfer_opts *o, const struct xfer_callbacks *cb,
	      struct xfer_result *res, struct lr_err *err);

/*
 * Where a receiver's entries land: the directory path below dirfd ("" =
 * dirfd itself; a path checked as a peer's would be), made (mode 0755,
 * never through a symlink) only when the first entry comes, so that a
 * transfer that never starts leaves nothing behind. dirfd is the caller's
 * (not closed).
 */
struct xfer_dest {
	int dirfd;
	const char *path;
	/* get HOST:PATH DEST where DEST is not a directory: when the session
	 * turns out to be one regular file, it is named one_file in dirfd
	 * (as scp and rsync do) and path is not made; otherwise path is */
	const char *one_file;
};

/*
 * Run the receiving side: entries land in dest. With XFER_F_STDOUT in
 * o->flags the one file is written, in order, to outfd instead (dest is
 * not used). Returns as xfer_send.
 */
int xfer_recv(struct xfer_conns *cs, const struct xfer_dest *dest, int outfd,
	      const struct xfer_opts *o, const struct xfer_callbacks *cb,
	      struct xfer_result *res, struct lr_err *err);

/* The window to ask for or agree to when `sessions` may run at once in
 * this process: XFER_WINDOW_MAX, less when the descriptor limit (raised
 * toward its hard limit first) would not hold that many files in flight
 * in each, never below XFER_WINDOW. */
uint32_t xfer_window_fit(unsigned sessions);

/* Client side: connect, authenticate, ask for a push or a pull, open the
 * streams and run the session. */
struct xfer_client_opts {
	const char *host;
	uint16_t port;
	int family;
	const char *bind_addr;
	/* the link facts of the result: the route to this host, when the
	 * streams go through a local relay (ssh), else NULL: the first
	 * stream's own */
	const char *link_host;
	const uint8_t *psk; /* required: transfers are always authenticated */
	uint8_t cipher_wish;
	unsigned streams; /* 0 = chosen: xfer_auto_streams */
	int connect_timeout_ms;
	uint32_t window; /* socket buffers; 0 = default */
	enum xfer_op op;
	/* push: one path, the destination directory below the server's
	 * root ("" = the root); pull: 1..XFER_MAX_PATHS source paths */
	unsigned npaths;
	const char *paths[XFER_MAX_PATHS];
	/* push of one source to a PATH written without a trailing slash:
	 * when the source is one regular file and PATH is no directory on
	 * the server, the file is named PATH (scp's and rsync's meaning) */
	bool lone_file;
	/* hard links kept by default where the server knows them (x.flags
	 * without XFER_F_HARD_LINKS; src.hard_links set for a push's walk,
	 * taken back with an older server) */
	bool links_default;
	/* flags, chunk_size (0: the server chooses), rate, progress */
	struct xfer_opts x;
	/* push: what to send; pull: where (dest), or outfd for a pipe */
	struct xfer_source src;
	struct xfer_dest dest;
	int outfd;
};

/* The streams for a session: o->streams, or when 0, two for a push of
 * many small files (under 256 KiB on average), else four. src (may be
 * NULL) gets the totals counted on the way, when they were. */
unsigned xfer_auto_streams(const struct xfer_client_opts *o,
			   struct xfer_source *src);

/* A local source named on the command line that is never sent (a FIFO,
 * socket or device; a link to a descriptor such as /dev/stdin): -EINVAL
 * with err saying what to do instead, before anything connects; 0 for
 * anything else (a missing one is the walk's to tell). */
int xfer_source_check(const char *path, struct lr_err *err);

int xfer_client_run(const struct xfer_client_opts *o,
		    const struct xfer_callbacks *cb, struct xfer_result *res,
		    struct lr_err *err);

/* The name of the stage that held the transfer back, from both sides'
 * waits: "source disk", "destination disk", "cipher (CPU)", "network";
 * "your --limit" when the rate reached 85% of this end's --limit. */
const char *xfer_bottleneck(const struct xfer_result *res, double *share);

/* The TCP goodput ceiling of the link in res at speed_bps (0: the speed
 * the link reported), bits/s; 0 when the speed is unknown. */
double xfer_ceiling_bps(const struct xfer_result *res, uint64_t speed_bps);

/*
 * Partial files: the temporary file and journal a receiver keeps of a file
 * it has not finished (`.NAME.lrpart`, `.NAME.lrjournal`) so that the same
 * command resumes it. A receiver holds an exclusive flock(2) on the
 * temporary file it writes; one that is locked is "in use" and is never
 * removed here.
 */
struct xfer_partial {
	char path[XFER_MAX_PATH + 1]; /* below the root: the temporary file,
				       * or the journal when it is alone */
	bool journal;		      /* a journal is there too (or alone) */
	bool in_use;		      /* a receiver is writing it now */
	uint64_t bytes;		      /* disk space of both (allocated) */
	int64_t mtime;		      /* the later of both, seconds */
};

/* Called for each partial file below rootfd; non-zero stops the walk. */
typedef int (*xfer_partial_fn)(void *ctx, const struct xfer_partial *p);

/* Walk the tree below rootfd (never through a symlink, at most
 * XFER_PARTIAL_MAX_DEPTH levels) for partial files, until stop (may be
 * NULL) is set. 0, what fn returned, -EINTR when stopped, or -errno. */
#define XFER_PARTIAL_MAX_DEPTH 256u
int xfer_partials_walk(int rootfd, xfer_partial_fn fn, void *ctx,
		       const _Atomic bool *stop, struct lr_err *err);

/* Remove one: 0, -EBUSY when a receiver is writing it, or -errno. */
int xfer_partial_remove(int rootfd, const struct xfer_partial *p);

/* What a sweep keeps: partial files untouched for longer than max_age_s
 * go (0: any age is kept), then the oldest until all of them take at most
 * max_bytes (0: no cap). Files in use are never removed (and count). */
struct xfer_partial_policy {
	int64_t max_age_s;
	uint64_t max_bytes;
};

struct xfer_sweep {
	unsigned removed, kept, in_use, failed;
	uint64_t removed_bytes, kept_bytes;
};

/* Apply the policy below rootfd at time now (seconds), until stop (may be
 * NULL) is set. 0 or -errno. */
int xfer_partials_sweep(int rootfd, const struct xfer_partial_policy *pol,
			int64_t now, const _Atomic bool *stop,
			struct xfer_sweep *res, struct lr_err *err);

/*
 * A thread that sweeps at once, then every interval_ms, until
 * xfer_sweeper_stop; done (may be NULL) is called after each sweep, from
 * that thread, with the result or an error's text.
 */
struct xfer_sweeper;
typedef void (*xfer_sweep_fn)(void *ctx, const struct xfer_sweep *res,
			      const char *error);
int xfer_sweeper_start(int rootfd, const struct xfer_partial_policy *pol,
		       int64_t interval_ms, xfer_sweep_fn done, void *ctx,
		       struct xfer_sweeper **out);
/* Stop the thread (waits for a sweep under way) and free it; NULL is
 * fine. */
void xfer_sweeper_stop(struct xfer_sweeper *sw);

#endif
