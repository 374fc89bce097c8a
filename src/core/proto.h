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
#define PROTO_VERSION_MIN     1
#define PROTO_VERSION_MAX     1
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
	/* 0x22-0x2f: more authentication; 0x30-0x5f: file transfer */
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
	PROTO_T_OVERLAP = 0x0020,
	PROTO_T_CPU = 0x0021,
	PROTO_T_STREAM_RESULT = 0x0022,
	PROTO_T_MAX_DURATION_MS = 0x0023,
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
	PROTO_ERR_AUTH = 8, /* wrong, missing or unexpected token */
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
};
#define PROTO_STREAM_RESULT_LEN 40u

struct proto_results {
	struct proto_cpu cpu;
	char cc[PROTO_CC_LEN];
	uint16_t overlap; /* most other tests seen at once */
	uint16_t nstreams;
	struct proto_stream_result *streams; /* caller-owned array */
	uint16_t cap;			     /* its capacity */
};

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

/* Name of a message type for error messages ("TEST_REQUEST"). */
const char *proto_type_name(uint8_t type);

#endif
