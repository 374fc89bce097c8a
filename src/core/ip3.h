/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_IP3_H
#define LINERATE_IP3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/*
 * iperf3's control protocol, as a peer (issue 6; facts in
 * ../REFERENCE section 4): the cookie, the control state bytes, and the
 * JSON messages (a 4-byte big-endian length, then unformatted JSON) with
 * strict decoders: every length bounded before use, every key of the
 * expected JSON type and range, unknown keys ignored. No I/O.
 */

#define IP3_DEFAULT_PORT     5201
#define IP3_COOKIE_LEN	     37 /* 36 characters of [a-z2-7] and a NUL */
#define IP3_MAX_JSON	     (8u << 10) /* parameters; results see below */
#define IP3_MAX_RESULTS_JSON (64u << 10)
/* --get-server-output: the server's text, and a results message that
 * carries it (the text JSON-escaped, plus the streams) */
#define IP3_MAX_SERVER_OUTPUT	  (256u << 10)
#define IP3_MAX_RESULTS_TEXT_JSON (1u << 20)
#define IP3_MAX_STREAMS		  128u

enum ip3_state {
	IP3_TEST_START = 1,
	IP3_TEST_RUNNING = 2,
	IP3_TEST_END = 4,
	IP3_PARAM_EXCHANGE = 9,
	IP3_CREATE_STREAMS = 10,
	IP3_SERVER_TERMINATE = 11,
	IP3_CLIENT_TERMINATE = 12,
	IP3_EXCHANGE_RESULTS = 13,
	IP3_DISPLAY_RESULTS = 14,
	IP3_IPERF_START = 15,
	IP3_IPERF_DONE = 16,
	IP3_ACCESS_DENIED = -1,
	IP3_SERVER_ERROR = -2,
};

/* iperf3's error codes (iperf_api.h) a server sends after SERVER_ERROR. */
enum ip3_errcode {
	IP3_IEDURATION = 5,
	IP3_IENUMSTREAMS = 6,
	IP3_IEBLOCKSIZE = 7,
	IP3_IEUDPBLOCKSIZE = 20,
	IP3_IEREVERSEBIDIR = 25,
	IP3_IETOTALRATE = 27,
	IP3_IENEWTEST = 100,
	IP3_IEINITTEST = 101,
	IP3_IECTRLREAD = 108,
	IP3_IEMESSAGE = 110,
	IP3_IERECVPARAMS = 114,
	IP3_IEPACKAGERESULTS = 115,
	IP3_IERECVRESULTS = 117,
	IP3_IESERVERTERM = 120,
	IP3_IEACCESSDENIED = 121,
	IP3_IESETCONGESTION = 134,
	IP3_IECREATESTREAM = 200,
	IP3_IESTREAMACCEPT = 204,
	IP3_IESTREAMWRITE = 205,
	IP3_IESTREAMREAD = 206,
};

/* A test's parameters (the client's PARAM_EXCHANGE JSON). */
struct ip3_params {
	bool tcp, udp; /* exactly one */
	bool reverse, bidir;
	uint32_t time_s; /* 0 when bytes or blocks */
	uint64_t bytes;	 /* "num" */
	uint64_t blocks; /* "blockcount" */
	uint32_t omit_s;
	uint32_t parallel;  /* 1..IP3_MAX_STREAMS */
	uint32_t len;	    /* block length, 1..16 MiB (UDP: <= 65507) */
	uint64_t bandwidth; /* bits/s, 0 = unlimited */
	uint32_t window;    /* socket buffer, 0 = default */
	uint32_t mss;
	bool nodelay;
	bool zerocopy;
	bool get_server_output;
	bool udp_counters64; /* "udp_counters_64bit": 64-bit sequence numbers */
	char congestion[16];
	char title[128];
	char client_version[64];
};

/* A new cookie: 36 random characters of [a-z2-7] and a NUL. 0 or -EIO. */
int ip3_cookie_new(char out[IP3_COOKIE_LEN]);
/* Whether buf (IP3_COOKIE_LEN bytes) is a well-formed cookie. */
bool ip3_cookie_valid(const uint8_t *buf);

/* Encode p as unformatted JSON into out (cap bytes, NUL-terminated), with
 * iperf3's key names: tcp or udp, omit, time, parallel and len always; the
 * other numbers and strings when not 0 / empty; flags only when true (a
 * stock server takes a flag's mere presence, even as false, as set).
 * Returns the length, -ENOBUFS when cap is short, or -ENOMEM. */
int ip3_params_encode(const struct ip3_params *p, char *out, size_t cap);

/*
 * Decode a PARAM_EXCHANGE JSON text (json/len, not NUL-terminated) into
 * *p. LR_ETOOBIG above IP3_MAX_JSON; LR_EBADMSG for JSON that does not
 * parse, is not an object, has a key of the wrong type (a string where a
 * number goes, a fraction, a negative number), a value out of range
 * (parallel 0 or above IP3_MAX_STREAMS, len 0 or above 16 MiB, time above
 * 24 h, ...), both tcp and udp, both reverse and bidirectional, or
 * bidirectional with more than IP3_MAX_STREAMS / 2 streams each way (the
 * results of both directions must fit one struct ip3_results), or a known
 * key given twice. Flags are JSON true/false or the integer 0/1. Defaults
 * as iperf3's: tcp (when neither is given), time 10 s, parallel 1, len
 * 128 KiB (UDP 1460). Unknown keys are ignored. *p is written only on
 * success. err gets the reason.
 */
int ip3_params_decode(const char *json, size_t len, struct ip3_params *p,
		      struct lr_err *err);

/*
 * The 4-byte big-endian length prefix of a JSON message: decode it and
 * check it against max (IP3_MAX_JSON or IP3_MAX_RESULTS_JSON): returns
 * the length, or LR_ETOOBIG (0 is LR_EBADMSG). CVE-2023-38403 was a
 * length of 0xffffffff plus one.
 */
int64_t ip3_json_len(const uint8_t hdr[4], uint32_t max);

/* One stream's figures in a results message. */
struct ip3_stream_result {
	uint32_t id;
	uint64_t bytes;
	int64_t retransmits; /* -1 when not known */
	double jitter;	     /* seconds (UDP) */
	uint64_t errors, packets;
	double start_time, end_time;
};

struct ip3_results {
	double cpu_total, cpu_user, cpu_system; /* percent */
	int sender_has_retransmits;		/* -1, 0 or 1 */
	char congestion_used[16]; /* "" when not given (optional key) */
	unsigned nstreams;
	struct ip3_stream_result streams[IP3_MAX_STREAMS];
};

/*
 * Encode / decode an EXCHANGE_RESULTS JSON message. Encode returns the
 * length, -ENOBUFS, -ENOMEM, or -EINVAL when nstreams is above
 * IP3_MAX_STREAMS. Decode bounds and type-checks like ip3_params_decode:
 * LR_ETOOBIG above IP3_MAX_RESULTS_TEXT_JSON (a message may carry the
 * server's text; read its length prefix with that bound when
 * get_server_output was asked for, else IP3_MAX_RESULTS_JSON), or for
 * more than IP3_MAX_STREAMS
 * streams; LR_EBADMSG for a missing cpu_util_* / sender_has_retransmits /
 * streams or stream key (start_time and end_time may be missing, as from
 * iperf3 before 3.2: then 0), NaN or infinity, bytes and packets that are
 * not non-negative integers, retransmits below -1, a stream id twice. A
 * negative errors count (iperf3 takes back late packets) reads as 0.
 * *r is written only on success.
 */
int ip3_results_encode(const struct ip3_results *r, char *out, size_t cap);
int ip3_results_decode(const char *json, size_t len, struct ip3_results *r,
		       struct lr_err *err);

/*
 * ip3_results_encode plus "server_output_text": text (NUL-terminated; NULL
 * or "" = none), as a server answering --get-server-output sends it. A
 * text longer than IP3_MAX_SERVER_OUTPUT, or one that does not fit cap, is
 * cut at a line end and marked "[... truncated]" so the message still
 * fits (cap must hold the results without text). Returns as
 * ip3_results_encode.
 */
int ip3_results_encode_text(const struct ip3_results *r, const char *text,
			    char *out, size_t cap);

/*
 * The "server_output_text" string of a results message (json/len, not
 * NUL-terminated, at most IP3_MAX_RESULTS_TEXT_JSON). On success *text is
 * a malloc'd NUL-terminated copy (at most IP3_MAX_SERVER_OUTPUT bytes;
 * the caller frees it), or NULL when the key is absent; other keys,
 * "server_output_json" included, are ignored. LR_ETOOBIG for a longer
 * message or text, LR_EBADMSG for JSON that does not parse, is not an
 * object, or has server_output_text of a type other than string; -ENOMEM.
 * *text is written only on success.
 */
int ip3_server_output_decode(const char *json, size_t len, char **text,
			     struct lr_err *err);

/*
 * The "server_output_json" object of a results message (a server run
 * with -J sends it instead of the text), as unformatted JSON text in
 * *text (malloc'd, at most IP3_MAX_SERVER_OUTPUT bytes), or NULL when the
 * key is absent. LR_EBADMSG when it is not an object; otherwise as
 * ip3_server_output_decode.
 */
int ip3_server_output_json_decode(const char *json, size_t len, char **text,
				  struct lr_err *err);

#endif
