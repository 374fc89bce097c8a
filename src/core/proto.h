/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_PROTO_H
#define LINERATE_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * linerate's wire format (docs/PROTOCOL.md): encoders and bounds-checked
 * decoders. No I/O and no allocation here: encoders write into a caller's
 * buffer, decoders read from one and fill caller-owned structs.
 *
 * Every connection starts with an 8-byte preamble in each direction:
 *   "LNRT" vmin vmax chosen flags
 * followed by messages, each an 8-byte header and a body of TLVs:
 *   type:u8 flags:u8 reserved:u16(=0) length:u32   (big-endian)
 *   tag:u16 length:u16 value...                     (repeated)
 */

#define PROTO_MAGIC	      "LNRT"
#define PROTO_PREAMBLE_LEN    8
#define PROTO_VERSION_MIN     2
#define PROTO_VERSION_MAX     2
#define PROTO_HDR_LEN	      8
#define PROTO_MAX_BODY	      65536u /* any message, any state */
#define PROTO_MAX_OPEN_BODY   512u   /* first message of a connection */
#define PROTO_TEST_ID_LEN     16
#define PROTO_MAX_STREAMS     128u /* per direction */
#define PROTO_MAX_BLKSIZE     (16u << 20)
#define PROTO_MAX_WINDOW      (256u << 20)
#define PROTO_MAX_DURATION_MS (24ull * 3600 * 1000)
#define PROTO_MAX_TEXT	      200u
#define PROTO_MAX_NAME	      64u
#define PROTO_CC_LEN	      16u /* TCP_CA_NAME_MAX */

enum proto_type {
	PROTO_CTRL_OPEN = 0x01,
	PROTO_DATA_OPEN = 0x02,
	PROTO_ERROR = 0x03,
	PROTO_TEST_REQUEST = 0x10,
	PROTO_TEST_ACCEPT = 0x11,
	PROTO_TEST_START = 0x12,
	PROTO_TEST_STOP = 0x13,
	PROTO_TEST_RESULTS = 0x14,
	PROTO_HS_INIT =
		0x20, /* raw body: the Noise handshake's first message */
	PROTO_HS_RESP = 0x21, /* raw body: its answer */
	/* 0x22-0x2f: more authentication */
	/* 0x30-0x5f: file transfer (docs/PROTOCOL.md section 7) */
	PROTO_XFER_REQUEST = 0x30, /* client: push or pull, streams, paths */
	PROTO_XFER_ACCEPT = 0x31,  /* server: session id, streams, chunk */
	PROTO_XFER_TOTALS = 0x32,  /* sender: files and bytes announced */
	PROTO_XFER_FILES = 0x33,   /* sender: a batch of entries */
	PROTO_XFER_PLAN = 0x34,	   /* receiver: what it needs per file */
	PROTO_XFER_SUMS = 0x35,	   /* sender: file digests */
	PROTO_XFER_ACKS = 0x36,	   /* receiver: chunks and files done */
	PROTO_XFER_END = 0x37,	   /* sender: every entry and sum sent */
	PROTO_XFER_DONE = 0x38,	   /* receiver: the outcome */
	PROTO_XFER_ALIVE = 0x39,   /* either: a heartbeat, empty */
	/* 0x40-0x4f: linerate doctor */
	PROTO_PROBE_REQUEST = 0x40, /* client: the server's facts, please */
	PROTO_PROBE_RESULT = 0x41,  /* server: CPU, ciphers, disk, buffers */
};

enum proto_tag {
	PROTO_T_SOFTWARE = 0x0001,
	PROTO_T_FEATURES = 0x0002,
	PROTO_T_TEST_ID = 0x0003,
	PROTO_T_STREAM = 0x0004,
	PROTO_T_DIR = 0x0005,
	PROTO_T_CODE = 0x0006,
	PROTO_T_TEXT = 0x0007,
	PROTO_T_MODE = 0x0010,
	PROTO_T_STREAMS = 0x0011,
	PROTO_T_DURATION_MS = 0x0012,
	PROTO_T_BYTES = 0x0013,
	PROTO_T_BLKSIZE = 0x0014,
	PROTO_T_WINDOW = 0x0015,
	PROTO_T_CC = 0x0016,
	PROTO_T_MSS = 0x0017,
	PROTO_T_ZEROCOPY = 0x0018,
	PROTO_T_OMIT_MS = 0x0019,
	/* TEST_REQUEST also carries PROTO_T_RATE (bits/s per stream) */
	PROTO_T_UDP = 0x801a, /* critical: a server must know UDP */
	PROTO_T_OVERLAP = 0x0020,
	PROTO_T_CPU = 0x0021,
	PROTO_T_STREAM_RESULT = 0x0022,
	PROTO_T_MAX_DURATION_MS = 0x0023,
	PROTO_T_UDP_RESULT = 0x0024, /* follows its STREAM_RESULT */
	PROTO_T_TCP_RESULT = 0x0025, /* follows its STREAM_RESULT */
	/* file transfer */
	PROTO_T_OP = 0x0030,
	PROTO_T_CHUNK_SIZE = 0x0031,
	PROTO_T_XFLAGS = 0x0032,
	PROTO_T_PATH = 0x0033,
	PROTO_T_RATE = 0x0034,
	PROTO_T_FILES = 0x0035,
	PROTO_T_DIRS = 0x0036,
	PROTO_T_ENTRY = 0x0037,
	PROTO_T_PLAN = 0x0038,
	PROTO_T_HELD = 0x0039,
	PROTO_T_SUM = 0x003a,
	PROTO_T_ACK = 0x003b,
	PROTO_T_FAIL = 0x003c,
	PROTO_T_WAIT = 0x003d,
	/* XFER_DONE: files that failed (u64), files skipped (u64); the
	 * files written come in PROTO_T_FILES */
	PROTO_T_FILES_FAILED = 0x003e,
	PROTO_T_FILES_SKIPPED = 0x003f,
	PROTO_T_DELETED = 0x0041, /* XFER_ACKS: removed at the destination */
	PROTO_T_FDIGEST =
		0x0042,		 /* XFER_FILES: idx:u32 digest[16] (CHECKSUM) */
	PROTO_T_UNREAD = 0x0040, /* XFER_FILES: a source the sender could
				    not read */
	PROTO_T_OWNER = 0x0043,	 /* XFER_FILES: idx uid gid names (OWNER) */
	PROTO_T_XATTRS = 0x0044, /* XFER_FILES: idx, names and values (-X) */
	PROTO_T_ACL = 0x0045,	 /* XFER_FILES: idx, which, entries (-A) */
	/* XFER_DONE, optional: entries kept without all their attributes
	 * (u64), and the first reason (text) */
	PROTO_T_XATTRS_FAILED = 0x0046,
	PROTO_T_XATTRS_WHY = 0x0047,
	/* XFER_REQUEST: the most entries the requester keeps in flight;
	 * XFER_ACCEPT: the session's window (u32, both optional) */
	PROTO_T_FILES_WINDOW = 0x0048,
	PROTO_T_LONE_FILE = 0x0049, /* u8 1: a push's PATH may name its file */
	/* XFER_DONE, optional: --delete removals that failed (u64), and the
	 * first reason (text) */
	PROTO_T_DELETES_FAILED = 0x004a,
	PROTO_T_DELETES_WHY = 0x004b,
	/* XFER_REQUEST: u8 1, hard links kept where the responder knows
	 * this item (a default unless HARD_LINKS is asked too); XFER_ACCEPT:
	 * u8 1, granted (both ends keep links, and know KEPT) */
	PROTO_T_LINKS_WISH = 0x004c,
	/* XFER_ACKS under a granted LINKS_WISH: idx:u32 how:u8, a hard
	 * link's name left as it was there (skipped, not linked) */
	PROTO_T_KEPT = 0x004d,
	/* XFER_REQUEST, critical: a peer that does not know them must refuse
	 * the request rather than send what they leave out */
	PROTO_T_FILTER = 0x8040,   /* kind:u8 pattern; repeated */
	PROTO_T_CONTENTS = 0x8041, /* u64: pull paths sent as their contents */
	PROTO_T_LIST = 0x8042,	   /* pull --files-from: flags:u8 paths */
	/* linerate doctor */
	PROTO_T_DISK_BYTES = 0x0050,
	PROTO_T_DISK_USEC = 0x0051,
	PROTO_T_CPU_MODEL = 0x0052,
	PROTO_T_CENTICORES = 0x0053,
	PROTO_T_GOVERNOR = 0x0054,
	PROTO_T_AES = 0x0055,
	PROTO_T_CIPHER_RATE = 0x0056,
	PROTO_T_STORAGE = 0x0057,
	PROTO_T_SOCKBUF = 0x0058,
	PROTO_T_CIPHER_MS = 0x0059,
	PROTO_T_DISK_CPU_USEC = 0x005A,
};

/* A tag with this bit set must be understood; unknown ones are skipped. */
#define PROTO_TAG_CRITICAL 0x8000u

enum proto_mode {
	PROTO_MODE_FORWARD = 0,
	PROTO_MODE_REVERSE = 1,
	PROTO_MODE_BIDIR = 2
};
/* Direction of one data stream: who sends. */
enum proto_dir { PROTO_DIR_C2S = 0, PROTO_DIR_S2C = 1 };
enum proto_zc { PROTO_ZC_NONE = 0, PROTO_ZC_SENDFILE = 1, PROTO_ZC_MSG = 2 };

/* Error codes carried in PROTO_ERROR. */
enum proto_errcode {
	PROTO_ERR_INTERNAL = 1,
	PROTO_ERR_BUSY = 2,
	PROTO_ERR_BAD_REQUEST = 3,
	PROTO_ERR_LIMIT = 4,
	PROTO_ERR_UNEXPECTED = 5,
	PROTO_ERR_TIMEOUT = 6,
	PROTO_ERR_UNKNOWN_TEST = 7,
	PROTO_ERR_AUTH = 8,	/* wrong, missing or unexpected token */
	PROTO_ERR_TAMPERED = 9, /* bytes changed in transit */
};

struct proto_preamble {
	uint8_t vmin, vmax, chosen, flags;
};

struct proto_hdr {
	uint8_t type;
	uint8_t flags;
	uint32_t len;
};

struct proto_ctrl_open {
	char software[PROTO_MAX_NAME + 1];
	uint64_t features;
};

struct proto_data_open {
	uint8_t test_id[PROTO_TEST_ID_LEN];
	uint16_t stream;
	uint8_t dir;
};

struct proto_error {
	uint32_t code;
	char text[PROTO_MAX_TEXT + 1];
};

/*
 * UDP tests attach their data streams with one datagram each (docs/
 * PROTOCOL.md section 4.4): "LRUH", the test id, the stream (u16) and its
 * direction; the server answers from the stream's own socket with the
 * same bytes under "LRUA". The test id is the capability, as for TCP
 * streams; it travels inside the sealed control connection.
 */
#define PROTO_UDP_HELLO_LEN (4u + PROTO_TEST_ID_LEN + 3u)

/* Encode d as a hello (ack false) or its answer (ack true). */
void proto_encode_udp_hello(uint8_t out[PROTO_UDP_HELLO_LEN],
			    const struct proto_data_open *d, bool ack);
/* Decode one; LR_EBADMSG unless it is exactly a hello (or answer) with a
 * direction in range. */
int proto_decode_udp_hello(const uint8_t *buf, size_t len, bool ack,
			   struct proto_data_open *d);

struct proto_test_request {
	uint8_t mode;
	uint16_t streams;     /* per direction, 1..PROTO_MAX_STREAMS */
	uint64_t duration_ms; /* 0 when bytes is set */
	uint64_t bytes;	      /* per direction; 0 = time-limited */
	uint32_t blksize;
	uint32_t window;       /* 0 = kernel default */
	char cc[PROTO_CC_LEN]; /* "" = peer's default */
	uint32_t mss;	       /* 0 = default */
	uint8_t zerocopy;
	uint64_t omit_ms;
	uint64_t rate_bps; /* per stream, paced; 0 = as fast as it goes */
	uint8_t udp;	   /* datagrams instead of TCP streams */
};

struct proto_test_accept {
	uint8_t test_id[PROTO_TEST_ID_LEN];
	char software[PROTO_MAX_NAME + 1];
	uint16_t overlap; /* other tests running when this one began */
	uint64_t max_duration_ms;
};

struct proto_cpu {
	uint64_t user_us, sys_us, wall_us;
};

struct proto_stream_result {
	uint16_t stream;
	uint8_t dir;
	uint8_t flags;
	uint64_t bytes;	      /* counted after the omitted period */
	uint64_t duration_us; /* from end of omit to last byte */
	uint32_t retrans;
	uint32_t max_cwnd;		     /* bytes */
	uint32_t min_rtt, mean_rtt, max_rtt; /* microseconds */
	/* TCP_RESULT (a sender's, optional): the peer's largest
	 * advertised window, bytes */
	bool has_tcp_result;
	uint32_t max_snd_wnd;
	/* UDP tests: datagrams, and as seen by the receiving side lost,
	 * out of order, duplicates and the jitter at the end */
	bool udp;
	uint64_t packets, lost, ooo, dup;
	uint64_t jitter_ns;
};
#define PROTO_STREAM_RESULT_LEN 40u
#define PROTO_UDP_RESULT_LEN	44u
#define PROTO_TCP_RESULT_LEN	8u

struct proto_results {
	struct proto_cpu cpu;
	char cc[PROTO_CC_LEN];
	uint16_t overlap; /* most other tests seen at once */
	uint16_t nstreams;
	struct proto_stream_result *streams; /* caller-owned array */
	uint16_t cap;			     /* its capacity */
};

/* ---------------- file transfer (docs/PROTOCOL.md section 7) ----------- */

#define PROTO_XFER_MAX_PATH    4096u /* bytes of a relative path */
#define PROTO_XFER_MAX_NAME    255u  /* bytes of one component */
#define PROTO_XFER_MAX_PATHS   64u   /* source paths of one pull */
#define PROTO_XFER_MAX_FILTERS 1024u /* filter rules of one request */
/* Entries announced and not done: the window of a session whose request
 * or answer says none, and the most either may say */
#define PROTO_XFER_WINDOW_DEFAULT 256u
#define PROTO_XFER_WINDOW_LIMIT	  65536u
#define PROTO_XFER_MAX_PATTERN	  1024u /* bytes of a filter pattern */
#define PROTO_XFER_MIN_CHUNK	  (64u << 10)
#define PROTO_XFER_MAX_CHUNK	  (8u << 20)
#define PROTO_XFER_DIGEST_LEN	  16u
#define PROTO_XFER_MAX_FILES	  (1ull << 32) /* per session */
#define PROTO_XFER_SIZE_UNKNOWN	  UINT64_MAX   /* a pipe */
#define PROTO_XFER_CHUNK_HDR_LEN  32u

enum proto_xfer_op { PROTO_XFER_PUSH = 1, PROTO_XFER_PULL = 2 };

/* XFER_REQUEST flags */
enum proto_xfer_flag {
	PROTO_XF_OVERWRITE = 1u << 0,
	PROTO_XF_UPDATE = 1u << 1, /* overwrite unless newer there (rsync -u) */
	PROTO_XF_NO_FSYNC = 1u << 2,
	PROTO_XF_KEEP_SETID = 1u << 3, /* keep setuid/setgid bits */
	PROTO_XF_STDOUT = 1u << 4,  /* pull into a pipe: one file, in order */
	PROTO_XF_SCRATCH = 1u << 5, /* doctor: verify, then remove, no name */
	PROTO_XF_DELETE = 1u << 6,  /* remove what the source has not */
	PROTO_XF_DELETE_EXCLUDED = 1u << 7, /* also what the rules leave out */
	PROTO_XF_DRY_RUN = 1u << 8,  /* plans only: nothing written or sent */
	PROTO_XF_CHECKSUM = 1u << 9, /* up to date by content (rsync -c) */
	PROTO_XF_WHOLE_FILE = 1u << 10,	 /* no delta of replaced files (-W) */
	PROTO_XF_HARD_LINKS = 1u << 11,	 /* hard links kept as links (-H) */
	PROTO_XF_OWNER = 1u << 12,	 /* owners kept (-o, a root receiver) */
	PROTO_XF_GROUP = 1u << 13,	 /* groups kept (-g) */
	PROTO_XF_NUMERIC_IDS = 1u << 14, /* ids as they are, no names */
	PROTO_XF_SPECIALS = 1u << 15,	 /* FIFOs and sockets (--specials) */
	PROTO_XF_DEVICES = 1u << 16,	 /* device nodes (--devices) */
	PROTO_XF_XATTRS = 1u << 17,	 /* extended attributes kept (-X) */
	PROTO_XF_ACLS = 1u << 18,	 /* POSIX ACLs kept (-A) */
};

/* The flags of a LIST item */
enum proto_xfer_list_flag {
	PROTO_XL_RECURSE = 1u << 0, /* below a listed directory too (-r) */
	PROTO_XL_ROOT = 1u << 1,    /* the source directory itself listed */
};

struct proto_xfer_request {
	uint8_t op;	     /* enum proto_xfer_op */
	uint16_t streams;    /* 1..PROTO_MAX_STREAMS */
	uint32_t chunk_size; /* 0 = the server chooses */
	uint32_t flags;	     /* enum proto_xfer_flag */
	uint64_t rate;	     /* bytes/s cap of the sender, 0 = none */
	/* push: one path, the destination directory below the root ("" =
	 * the root); pull: 1..PROTO_XFER_MAX_PATHS source paths. Each a
	 * relative path, checked by the decoder with fsio_path_check rules
	 * except that "" is allowed for a push. Pointers into the body. */
	unsigned npaths;
	const char *paths[PROTO_XFER_MAX_PATHS];
	uint16_t path_lens[PROTO_XFER_MAX_PATHS];
	/* pull: bit i set = paths[i] is a directory whose contents are sent
	 * (a trailing '/' as the user typed it), not the directory itself */
	uint64_t contents;
	/* filter rules in order (filter.h): include or exclude, and the
	 * pattern, 1..PROTO_XFER_MAX_PATTERN bytes, pointers into the body
	 * (the receiver checks the text with filter_add) */
	unsigned nfilters;
	const char *filters[PROTO_XFER_MAX_FILTERS];
	uint16_t filter_lens[PROTO_XFER_MAX_FILTERS];
	bool filter_include[PROTO_XFER_MAX_FILTERS];
	/* pull --files-from (LIST): the only paths below the one source
	 * directory that are sent, separated by NUL bytes, each checked as
	 * a path; a pointer into the body (NULL: no list) */
	const uint8_t *list;
	uint16_t list_len;
	uint8_t list_flags; /* enum proto_xfer_list_flag */
	/* the most entries the requester keeps announced and not done,
	 * PROTO_XFER_WINDOW_DEFAULT..LIMIT; 0: not said (the default) */
	uint32_t files_window;
	/* push: PATH names the file when the session is one regular file
	 * and PATH is no directory there (`send FILE HOST:NAME`) */
	bool lone_file;
	/* LINKS_WISH: hard links kept where the responder knows this item
	 * (the responder grants it, not with STDOUT or SCRATCH) */
	bool links_wish;
};

struct proto_xfer_accept {
	uint8_t session_id[PROTO_TEST_ID_LEN];
	char software[PROTO_MAX_NAME + 1];
	uint16_t streams;
	uint32_t chunk_size;
	/* the session's window, at most the request's; 0: not said (the
	 * default, and what a server answers a request that said none) */
	uint32_t files_window;
	/* the request's LONE_FILE understood and applied */
	bool lone_file;
	/* the request's LINKS_WISH granted: HARD_LINKS in this session */
	bool links;
};

struct proto_xfer_totals {
	uint64_t files; /* entries of kind file, symlink and dir */
	uint64_t bytes; /* sum of file sizes; UINT64_MAX when a pipe */
};

enum proto_xfer_kind {
	PROTO_XK_FILE = 1,
	PROTO_XK_DIR = 2,
	PROTO_XK_SYMLINK = 3,
	PROTO_XK_HARDLINK = 4, /* HARD_LINKS only: a name of an earlier file */
	PROTO_XK_FIFO = 5,     /* SPECIALS only */
	PROTO_XK_SOCKET = 6,   /* SPECIALS only */
	PROTO_XK_CHARDEV = 7,  /* DEVICES only: target major:u32 minor:u32 */
	PROTO_XK_BLOCKDEV = 8, /* DEVICES only: the same */
};
#define PROTO_XFER_DEV_LEN 8u /* a device node's target: major, minor */

/* entry flags */
enum proto_xfer_eflag {
	PROTO_XE_SPARSE = 1u << 0, /* has holes: zero chunks may come */
	PROTO_XE_LINKED = 1u
			  << 1, /* HARD_LINKS: later entries may link to it */
};

/*
 * One entry of XFER_FILES (tag PROTO_T_ENTRY, fixed layout, big-endian):
 *   idx:u32 kind:u8 eflags:u8 mode:u16 size:u64 mtime_sec:i64
 *   mtime_nsec:u32 path_len:u16 target_len:u16 path target
 * idx counts from 0 in announcement order. path is relative to the
 * transfer's destination; target is a symlink's contents (kind symlink
 * only, 1..PROTO_XFER_MAX_PATH bytes, not checked: it is data), or, for
 * a hard link, the idx of the earlier file entry it is a name of (4
 * bytes, link_to).
 */
#define PROTO_XFER_ENTRY_FIXED 32u /* the fields before path */
struct proto_xfer_entry {
	uint32_t idx;
	uint8_t kind;
	uint8_t eflags;
	uint16_t mode; /* permission bits, 07777 */
	uint64_t size; /* files; PROTO_XFER_SIZE_UNKNOWN for a pipe */
	int64_t mtime_sec;
	uint32_t mtime_nsec; /* < 1e9 */
	const char *path;    /* not NUL-terminated; points into the body */
	uint16_t path_len;
	const char *target;
	uint16_t target_len;
	uint32_t link_to; /* kind HARDLINK: the idx of its file */
};

enum proto_xfer_action {
	PROTO_XA_SEND = 0,    /* send every chunk */
	PROTO_XA_SKIP = 1,    /* the receiver has it (--update): nothing */
	PROTO_XA_RESUME = 2,  /* send what HELD entries did not list */
	PROTO_XA_REFUSE = 3,  /* will not be written (text says why) */
	PROTO_XA_REPLACE = 4, /* DRY_RUN only: would replace what is there */
};

/* PROTO_T_PLAN: idx:u32 action:u8 */
struct proto_xfer_plan {
	uint32_t idx;
	uint8_t action;
};
#define PROTO_XFER_PLAN_LEN 5u

/* PROTO_T_HELD: idx:u32 chunk:u32 digest[16]: a chunk the receiver holds
 * verified from an earlier attempt; precedes the file's RESUME plan. */
struct proto_xfer_held {
	uint32_t idx;
	uint32_t chunk;
	uint8_t digest[PROTO_XFER_DIGEST_LEN];
};
#define PROTO_XFER_HELD_LEN 24u

/* PROTO_T_SUM: idx:u32 size:u64 nchunks:u32 sent:u32 digest[16] */
struct proto_xfer_sum {
	uint32_t idx;
	uint64_t size; /* final size (a pipe's is known only now) */
	uint32_t nchunks;
	uint32_t sent; /* distinct chunks sent this session (<= nchunks) */
	uint8_t digest[PROTO_XFER_DIGEST_LEN];
};
#define PROTO_XFER_SUM_LEN 36u

enum proto_xfer_ack_status {
	PROTO_XS_CHUNK_OK = 0,	  /* chunk written and verified */
	PROTO_XS_CHUNK_BAD = 1,	  /* digest mismatch: send it again */
	PROTO_XS_FILE_DONE = 2,	  /* file complete under its final name */
	PROTO_XS_FILE_FAILED = 3, /* see the PROTO_T_FAIL entry */
	/* a granted LINKS_WISH, a HARDLINK entry: its name is to go as a
	 * file of its own, announced again */
	PROTO_XS_FILE_AGAIN = 4
};

/* PROTO_T_ACK: idx:u32 chunk:u32 status:u8 bytes:u32 */
struct proto_xfer_ack {
	uint32_t idx;
	uint32_t chunk;
	uint8_t status;
	uint32_t bytes; /* chunk OK: its length */
};
#define PROTO_XFER_ACK_LEN 13u

/* PROTO_T_FAIL: idx:u32 code:u32 text (<= PROTO_MAX_TEXT, printable) */
struct proto_xfer_fail {
	uint32_t idx;
	uint32_t code; /* errno value (positive) or PROTO_ERR_* */
	char text[PROTO_MAX_TEXT + 1];
};

/* PROTO_T_UNREAD: code:u32 path: a source the sender could not read
 * (never announced, or a directory announced whose entries it could not
 * list): the receiver counts it failed, and deletes nothing. */
struct proto_xfer_unread {
	uint32_t code;	   /* errno value, 1..4095 */
	uint16_t path_len; /* 1..PROTO_XFER_MAX_PATH, no NUL */
	const char *path;  /* into the message */
};

/* PROTO_T_FDIGEST: idx:u32 digest[16]: with CHECKSUM, the file digest
 * (section 7.6) of the regular file whose ENTRY follows it at once. */
#define PROTO__FDIGEST_LEN 20u
struct proto_xfer_fdigest {
	uint32_t idx;
	uint8_t digest[16];
};

/* PROTO_T_OWNER: idx:u32 uid:u32 gid:u32 ulen:u8 glen:u8 user group:
 * with OWNER or GROUP, the owner and group of the entry that follows it
 * at once, with their names on the sender (0..PROTO_XFER_MAX_IDNAME bytes
 * of [A-Za-z0-9._@$-] each; none with NUMERIC_IDS or without a name). */
#define PROTO_XFER_MAX_IDNAME 32u
#define PROTO__OWNER_FIXED    14u
struct proto_xfer_owner {
	uint32_t idx;
	uint32_t uid, gid;
	char user[PROTO_XFER_MAX_IDNAME + 1]; /* "" when none */
	char group[PROTO_XFER_MAX_IDNAME + 1];
};

/* PROTO_T_XATTRS: idx:u32 flags:u8 n:u16, then n times nlen:u8 vlen:u16
 * name value: with XATTRS, the extended attributes of the file or
 * directory whose ENTRY follows it at once. Names are 1..255 bytes
 * without control characters, in the user., trusted. or security.
 * namespace with at least one byte after it, in strictly increasing byte
 * order (so none twice); the whole value is at most
 * PROTO_XFER_MAX_XATTR_LEN bytes. flags: what the sender could not read
 * (the receiver then removes nothing of that kind). */
#define PROTO_XFER_MAX_XATTRS	  128u
#define PROTO_XFER_MAX_XATTR_LEN  32768u
#define PROTO_XFER_MAX_XATTR_NAME 255u
#define PROTO__XATTRS_FIXED	  7u
enum proto_xattrs_flag {
	PROTO_XAF_PARTIAL = 1u << 0,	/* not every attribute read (XATTRS) */
	PROTO_XAF_ACL_UNREAD = 1u << 1, /* its ACLs not read (ACLS) */
};
#define PROTO__XATTR_EACH 3u /* nlen vlen */
struct proto_xattr {
	const char *name; /* into the message, not terminated */
	const uint8_t *value;
	uint8_t name_len;
	uint16_t value_len;
};
struct proto_xfer_xattrs {
	uint32_t idx;
	uint8_t flags; /* enum proto_xattrs_flag */
	uint16_t n;
	struct proto_xattr v[PROTO_XFER_MAX_XATTRS];
};

/* PROTO_T_ACL: idx:u32 which:u8 n:u16, then n times tag:u8 perm:u8
 * id:u32 nlen:u8 name: with ACLS, a POSIX ACL of the file or directory
 * whose ENTRY follows it at once (which 1 access; 2 default, of a
 * directory). Tags are Linux's (1 USER_OBJ, 2 USER, 4 GROUP_OBJ, 8 GROUP,
 * 16 MASK, 32 OTHER) in that order; USER_OBJ, GROUP_OBJ and OTHER once
 * each, MASK at most once and present when a USER or GROUP entry is;
 * perm 0..7; id and name (the sender's, as an OWNER item's; none with
 * NUMERIC_IDS) only in USER and GROUP entries, id 0 and no name in the
 * others. 3..PROTO_XFER_MAX_ACL entries. */
#define PROTO_XFER_MAX_ACL 256u
#define PROTO__ACL_FIXED   7u
#define PROTO__ACL_EACH	   7u /* tag perm id nlen */
enum proto_acl_which { PROTO_ACL_ACCESS = 1, PROTO_ACL_DEFAULT = 2 };
enum proto_acl_tag {
	PROTO_ACL_USER_OBJ = 0x01,
	PROTO_ACL_USER = 0x02,
	PROTO_ACL_GROUP_OBJ = 0x04,
	PROTO_ACL_GROUP = 0x08,
	PROTO_ACL_MASK = 0x10,
	PROTO_ACL_OTHER = 0x20,
};
struct proto_acl_entry {
	uint8_t tag, perm;
	uint32_t id;
	char name[PROTO_XFER_MAX_IDNAME + 1]; /* "" when none */
};
struct proto_xfer_acl {
	uint32_t idx;
	uint8_t which;
	uint16_t n;
	struct proto_acl_entry e[PROTO_XFER_MAX_ACL];
};

/* PROTO_T_DELETED: kind:u8 path: an entry --delete removed (kind as an
 * ENTRY's, 4 for anything else), path as an entry's would be. */
struct proto_xfer_deleted {
	uint8_t kind;	   /* 1..4 */
	uint16_t path_len; /* 1..PROTO_XFER_MAX_PATH, no NUL */
	const char *path;  /* into the message */
};

/* PROTO_T_WAIT: where the receiver's stream threads spent their time,
 * microseconds: net:u64 write:u64 cipher:u64 (for the bottleneck line). */
struct proto_xfer_wait {
	uint64_t net_us, write_us, cipher_us;
};

struct proto_xfer_done {
	uint64_t files_ok, files_failed, files_skipped;
	uint64_t bytes; /* written and verified this session */
	struct proto_xfer_wait wait;
	/* -X/-A: kept without all their attributes, and why (printable
	 * ASCII, "" when none) */
	uint64_t xattrs_failed;
	char xattrs_why[PROTO_MAX_TEXT + 1];
	/* --delete: entries that could not be removed, and the first
	 * (printable ASCII, "" when none) */
	uint64_t deletes_failed;
	char deletes_why[PROTO_MAX_TEXT + 1];
};

/* The chunk header at the start of each data record of a transfer
 * stream (PROTO_XFER_CHUNK_HDR_LEN bytes, layout at
 * proto_xfer_chunk_encode). A chunk's offset is chunk * chunk_size. */
enum proto_xfer_chunk_kind {
	PROTO_XC_DATA = 1, /* len bytes follow */
	PROTO_XC_ZERO = 2, /* len zero bytes, none follow (a hole) */
};
struct proto_xfer_chunk_hdr {
	uint8_t kind;
	uint32_t idx;
	uint32_t chunk;
	uint32_t len; /* <= PROTO_XFER_MAX_CHUNK */
	uint8_t digest[PROTO_XFER_DIGEST_LEN];
};

/* ---------------- linerate doctor ---------------- */

struct proto_buf;

#define PROTO_PROBE_MAX_DISK  (1ull << 30) /* bytes the server writes */
#define PROTO_PROBE_MAX_MS    2000u	   /* per cipher measurement */
#define PROTO_PROBE_MAX_RATES 2u

struct proto_probe_request {
	uint64_t disk_bytes; /* 0 = no disk test; <= PROTO_PROBE_MAX_DISK */
	uint32_t cipher_ms;  /* 0 = no cipher test; <= PROTO_PROBE_MAX_MS */
	char dir[PROTO_XFER_MAX_PATH + 1]; /* below the root; "" = root */
};

/* PROTO_T_CIPHER_RATE: cipher:u8 seal:u64 open:u64 (bytes/s, one core) */
struct proto_probe_rate {
	uint8_t cipher;
	uint64_t seal, open;
};

struct proto_probe_result {
	char model[PROTO_MAX_TEXT + 1];
	uint32_t centicores; /* usable CPU (a cgroup quota counts), x100 */
	char governor[PROTO_MAX_NAME + 1];
	uint8_t aes;
	unsigned nrates;
	struct proto_probe_rate rates[PROTO_PROBE_MAX_RATES];
	char storage[PROTO_MAX_TEXT + 1]; /* the root's device, described */
	/* SOCKBUF: rmem_max wmem_max tcp_rmem_max tcp_wmem_max, u32 each */
	uint32_t sockbuf[4];
	char cc[PROTO_CC_LEN];
	uint64_t disk_bytes, disk_usec; /* write with fdatasync; 0 = none */
	/* the writer's CPU time in it; 0 = not said (an older server) */
	uint64_t disk_cpu_usec;
	char disk_error[PROTO_MAX_TEXT + 1];
};

int proto_encode_probe_request(struct proto_buf *b,
			       const struct proto_probe_request *m);
int proto_decode_probe_request(const uint8_t *body, size_t len,
			       struct proto_probe_request *m);
int proto_encode_probe_result(struct proto_buf *b,
			      const struct proto_probe_result *m);
int proto_decode_probe_result(const uint8_t *body, size_t len,
			      struct proto_probe_result *m);

/* Preamble: encode into out[PROTO_PREAMBLE_LEN]. */
void proto_encode_preamble(uint8_t *out, uint8_t vmin, uint8_t vmax,
			   uint8_t chosen);
/* Returns PROTO_PREAMBLE_LEN, LR_ENEEDMORE or LR_ENOTLINERATE. */
int proto_decode_preamble(const uint8_t *buf, size_t len,
			  struct proto_preamble *p);
/* Highest version in both ranges, or 0 when they do not overlap. */
uint8_t proto_version_choose(uint8_t amin, uint8_t amax, uint8_t bmin,
			     uint8_t bmax);

/* Header: returns PROTO_HDR_LEN, LR_ENEEDMORE, LR_EBADMSG (reserved bits
 * set) or LR_ETOOBIG (length above max_body). */
int proto_decode_hdr(const uint8_t *buf, size_t len, size_t max_body,
		     struct proto_hdr *h);
/* The header's 8 bytes again from a decoded one (decoding accepts only
 * zero reserved bits, so this gives back exactly what was read). */
void proto_encode_hdr(uint8_t out[PROTO_HDR_LEN], const struct proto_hdr *h);

/*
 * A message builder over a caller's buffer. Errors are sticky: after an
 * overflow every put is a no-op and proto_msg_end returns -ENOBUFS.
 */
struct proto_buf {
	uint8_t *p;
	size_t cap;
	size_t len;
	size_t start; /* offset of the current message's header */
	int err;
};

void proto_buf_init(struct proto_buf *b, uint8_t *mem, size_t cap);
void proto_msg_begin(struct proto_buf *b, uint8_t type);
void proto_put_u8(struct proto_buf *b, uint16_t tag, uint8_t v);
void proto_put_u16(struct proto_buf *b, uint16_t tag, uint16_t v);
void proto_put_u32(struct proto_buf *b, uint16_t tag, uint32_t v);
void proto_put_u64(struct proto_buf *b, uint16_t tag, uint64_t v);
void proto_put_bytes(struct proto_buf *b, uint16_t tag, const void *v,
		     size_t n);
void proto_put_str(struct proto_buf *b, uint16_t tag, const char *s);
/* Patch the length of the current message; returns 0 or -ENOBUFS. */
int proto_msg_end(struct proto_buf *b);

/* Whole-message encoders: append one message to b; 0 or -ENOBUFS. */
int proto_encode_ctrl_open(struct proto_buf *b,
			   const struct proto_ctrl_open *m);
int proto_encode_data_open(struct proto_buf *b,
			   const struct proto_data_open *m);
int proto_encode_error(struct proto_buf *b, const struct proto_error *m);
int proto_encode_test_request(struct proto_buf *b,
			      const struct proto_test_request *m);
int proto_encode_test_accept(struct proto_buf *b,
			     const struct proto_test_accept *m);
int proto_encode_empty(struct proto_buf *b, uint8_t type);
int proto_encode_results(struct proto_buf *b, const struct proto_results *m);

/*
 * Body decoders: body/len is one message's body (after the header). They
 * return 0 and fill *m, or LR_EBADMSG for anything malformed: a truncated
 * TLV, a wrong value length, a missing required field, a value outside its
 * protocol bound, an unknown critical tag, a string with a NUL or a control
 * character. *m may be partly written on failure.
 */
int proto_decode_ctrl_open(const uint8_t *body, size_t len,
			   struct proto_ctrl_open *m);
int proto_decode_data_open(const uint8_t *body, size_t len,
			   struct proto_data_open *m);
int proto_decode_error(const uint8_t *body, size_t len, struct proto_error *m);
int proto_decode_test_request(const uint8_t *body, size_t len,
			      struct proto_test_request *m);
int proto_decode_test_accept(const uint8_t *body, size_t len,
			     struct proto_test_accept *m);
int proto_decode_empty(const uint8_t *body, size_t len);
/* m->streams and m->cap are set by the caller; more entries than cap is
 * LR_ETOOBIG. */
int proto_decode_results(const uint8_t *body, size_t len,
			 struct proto_results *m);

/*
 * File transfer messages. Batch messages (FILES, PLAN, ACKS, SUMS) are
 * built with proto_msg_begin, the proto_put_xfer_* appenders (which fail
 * with -ENOBUFS, sticky, when the message would pass PROTO_MAX_BODY) and
 * proto_msg_end; proto_xfer_batch_room tells whether one more entry of n
 * bytes fits. They are read with proto_xfer_iter: one TLV at a time,
 * each decoded and checked by the matching proto_xfer_get_* call.
 */
int proto_encode_xfer_request(struct proto_buf *b,
			      const struct proto_xfer_request *m);
int proto_decode_xfer_request(const uint8_t *body, size_t len,
			      struct proto_xfer_request *m);
int proto_encode_xfer_accept(struct proto_buf *b,
			     const struct proto_xfer_accept *m);
int proto_decode_xfer_accept(const uint8_t *body, size_t len,
			     struct proto_xfer_accept *m);
int proto_encode_xfer_totals(struct proto_buf *b,
			     const struct proto_xfer_totals *m);
int proto_decode_xfer_totals(const uint8_t *body, size_t len,
			     struct proto_xfer_totals *m);
int proto_encode_xfer_done(struct proto_buf *b,
			   const struct proto_xfer_done *m);
int proto_decode_xfer_done(const uint8_t *body, size_t len,
			   struct proto_xfer_done *m);

bool proto_xfer_batch_room(const struct proto_buf *b, size_t n);
/* Encoded size of an entry's TLV (header included). */
size_t proto_xfer_entry_size(const struct proto_xfer_entry *e);
void proto_put_xfer_entry(struct proto_buf *b,
			  const struct proto_xfer_entry *e);
void proto_put_xfer_plan(struct proto_buf *b, const struct proto_xfer_plan *p);
void proto_put_xfer_held(struct proto_buf *b, const struct proto_xfer_held *h);
void proto_put_xfer_sum(struct proto_buf *b, const struct proto_xfer_sum *s);
void proto_put_xfer_ack(struct proto_buf *b, const struct proto_xfer_ack *a);
void proto_put_xfer_fail(struct proto_buf *b, const struct proto_xfer_fail *f);
void proto_put_xfer_wait(struct proto_buf *b, const struct proto_xfer_wait *w);
void proto_put_xfer_unread(struct proto_buf *b,
			   const struct proto_xfer_unread *u);
void proto_put_xfer_fdigest(struct proto_buf *b,
			    const struct proto_xfer_fdigest *d);
void proto_put_xfer_deleted(struct proto_buf *b,
			    const struct proto_xfer_deleted *d);
/* PROTO_T_KEPT: idx:u32 how:u8, a hard link's name left as it was: a
 * file of its own there (1), or that file's name already (2) */
enum proto_kept { PROTO_KEPT_OWN = 1, PROTO_KEPT_LINKED = 2 };
void proto_put_xfer_kept(struct proto_buf *b, uint32_t idx, uint8_t how);

struct proto_xfer_iter {
	const uint8_t *body;
	size_t len, off;
	uint16_t tag;	      /* of the current item */
	const uint8_t *value; /* its value */
	uint16_t vlen;
};
void proto_xfer_iter_init(struct proto_xfer_iter *it, const uint8_t *body,
			  size_t len);
/* 1 with it->tag/value set, 0 at the end, LR_EBADMSG when truncated. */
int proto_xfer_iter_next(struct proto_xfer_iter *it);
/* Decode the current item; LR_EBADMSG when its tag or value is wrong:
 * entry: unknown kind, mode above 07777, mtime_nsec >= 1e9, path_len 0 or
 * above PROTO_XFER_MAX_PATH, lengths not matching vlen, a target on a
 * non-symlink or none on a symlink, size UNKNOWN on a non-file. The path
 * itself is checked by the caller (fsio_path_check). */
int proto_xfer_get_entry(const struct proto_xfer_iter *it,
			 struct proto_xfer_entry *e);
int proto_xfer_get_plan(const struct proto_xfer_iter *it,
			struct proto_xfer_plan *p);
int proto_xfer_get_held(const struct proto_xfer_iter *it,
			struct proto_xfer_held *h);
int proto_xfer_get_sum(const struct proto_xfer_iter *it,
		       struct proto_xfer_sum *s);
int proto_xfer_get_ack(const struct proto_xfer_iter *it,
		       struct proto_xfer_ack *a);
int proto_xfer_get_fail(const struct proto_xfer_iter *it,
			struct proto_xfer_fail *f);
int proto_xfer_get_wait(const struct proto_xfer_iter *it,
			struct proto_xfer_wait *w);
int proto_xfer_get_unread(const struct proto_xfer_iter *it,
			  struct proto_xfer_unread *u);
int proto_xfer_get_fdigest(const struct proto_xfer_iter *it,
			   struct proto_xfer_fdigest *d);
void proto_put_xfer_owner(struct proto_buf *b,
			  const struct proto_xfer_owner *o);
int proto_xfer_get_owner(const struct proto_xfer_iter *it,
			 struct proto_xfer_owner *o);
/* A name fit for an OWNER item: 1..32 bytes of [A-Za-z0-9._@$-]. */
bool proto_xfer_idname_ok(const char *s, size_t n);
/* PROTO_T_XATTRS: its size in a batch (tag and length included), put,
 * and read (checked as above; the names and values point into it). */
size_t proto_xfer_xattrs_size(const struct proto_xfer_xattrs *a);
void proto_put_xfer_xattrs(struct proto_buf *b,
			   const struct proto_xfer_xattrs *a);
int proto_xfer_get_xattrs(const struct proto_xfer_iter *it,
			  struct proto_xfer_xattrs *a);
/* Whether name (n bytes) may travel in an XATTRS item. */
bool proto_xfer_xattr_name_ok(const char *name, size_t n);
/* PROTO_T_ACL: the same; whether a holds the rules above. */
bool proto_xfer_acl_ok(const struct proto_xfer_acl *a);
size_t proto_xfer_acl_size(const struct proto_xfer_acl *a);
void proto_put_xfer_acl(struct proto_buf *b, const struct proto_xfer_acl *a);
int proto_xfer_get_acl(const struct proto_xfer_iter *it,
		       struct proto_xfer_acl *a);
int proto_xfer_get_deleted(const struct proto_xfer_iter *it,
			   struct proto_xfer_deleted *d);
int proto_xfer_get_kept(const struct proto_xfer_iter *it, uint32_t *idx,
			uint8_t *how);

/* Chunk header: encode into out[PROTO_XFER_CHUNK_HDR_LEN]; decode returns
 * 0 or LR_EBADMSG (unknown kind, len 0 or above PROTO_XFER_MAX_CHUNK,
 * nonzero padding). Layout: kind:u8 pad:u8[3] idx:u32 chunk:u32 len:u32
 * digest[16]. */
void proto_xfer_chunk_encode(uint8_t *out,
			     const struct proto_xfer_chunk_hdr *h);
int proto_xfer_chunk_decode(const uint8_t *in, struct proto_xfer_chunk_hdr *h);

/* Name of a message type for error messages ("TEST_REQUEST"). */
const char *proto_type_name(uint8_t type);

#endif
