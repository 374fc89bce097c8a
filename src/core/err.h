/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_ERR_H
#define LINERATE_ERR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Project-specific error codes live below the errno range, as libuv's
 * UV_EOF does. Functions return 0 or a negative errno / LR_E* value.
 */
enum {
	LR_EPROTO_BASE = -10000,
	LR_EBUSY = -10001,	  /* server has no free test slot */
	LR_EVERSION = -10002,	  /* no protocol version in common */
	LR_EPEER = -10003,	  /* the peer reported an error */
	LR_EBADMSG = -10004,	  /* malformed message from the peer */
	LR_ETOOBIG = -10005,	  /* peer-announced length over its bound */
	LR_ENEEDMORE = -10006,	  /* parser needs more bytes */
	LR_ETIMEOUT = -10007,	  /* a deadline passed */
	LR_ECLOSED = -10008,	  /* peer closed the connection */
	LR_ENOTLINERATE = -10009, /* the peer does not speak linerate */
	LR_EAUTH = -10010,	  /* authentication failed (token) */
	LR_ERECORD = -10011,	  /* a record failed to open: tampering */
	LR_ETRUNC = -10012,	  /* a stream ended without its END record */
	LR_EBADPATH = -10013,	  /* a path from the peer is not acceptable */
	LR_EDIGEST = -10014,	  /* data does not match its digest */
	LR_EFRAME = -10015,	  /* a record of the wrong type or length */
	LR_ETAMPER = -10016,	  /* bytes changed in transit (handshake) */
	LR_EBINARY = -10017,	  /* binary data for a terminal */
};

#define LR_ERR_MSG 256

/*
 * Human context for a failure, filled at the failure site by the core and
 * printed by the CLI (or carried in JSON). code is the same value the
 * function returned.
 */
struct lr_err {
	int code;
	char msg[LR_ERR_MSG];
};

/* Set err (if not NULL) to code and a formatted message; returns code. */
int lr_err_set(struct lr_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Like lr_err_set, appending ": <description of code>". Returns code. */
int lr_err_setc(struct lr_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A constant description of an errno or LR_E* code (negative or positive). */
const char *lr_strerror(int code);

/*
 * Text for a terminal or a log: copy s (len bytes) into out (cap bytes,
 * NUL-terminated, truncated), writing control characters (C0, DEL, the
 * UTF-8 encoded C1 U+0080-U+009F), the bidirectional controls and line
 * separators (U+061C, U+200E-F, U+2028-E, U+2066-9) and bytes that are not
 * valid UTF-8 as \xNN, and, with backslash, a backslash as \\ (so that
 * an escaped name reads back unambiguously). Truncation never splits an
 * escape or a UTF-8 sequence. Returns out. fsio_escape is this with
 * backslash, for names from a peer; text already made of escaped names
 * goes through it without.
 */
char *lr_escape(const char *s, size_t len, char *out, size_t cap,
		bool backslash);

#endif
