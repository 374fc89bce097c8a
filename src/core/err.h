/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_ERR_H
#define LINERATE_ERR_H

#include <stdarg.h>
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

#endif
