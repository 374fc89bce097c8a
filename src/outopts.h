/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_OUTOPTS_H
#define LINERATE_OUTOPTS_H

/*
 * iperf3's output options, shared by bench and serve: -f (the rate's
 * unit), --logfile, --timestamps, --forceflush, -V and -I/--pidfile.
 * outopts_start applies them before the command's first line;
 * outopts_end undoes what needs undoing (the pid file, the timestamp
 * pumps) after its last.
 */

#include <getopt.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "core/err.h"

/* The streams (standard output, and error with it when both go to the
 * same file) whose lines get a timestamp: a pipe in their place and a
 * thread that copies it to where they went. */
struct outopts_pump {
	int fd;	    /* 1 or 2 */
	int fd2;    /* 2 when it shares the pump (one order for both), or -1 */
	int saved;  /* where fd went before; -1 when not started */
	int saved2; /* where fd2 went before */
	int in;	    /* the pipe's read end */
	const char *fmt;
	pthread_t th;
	sem_t done;	     /* posted when every writer closed the pipe */
	atomic_int reads;    /* reads that returned, to see it still moves */
	atomic_bool in_read; /* waiting for bytes, not writing them */
};

struct outopts {
	char format;	     /* -f: 0 (adaptive bits) or one of kmgtKMGT */
	const char *logfile; /* --logfile FILE */
	const char *ts_fmt;  /* --timestamps[=FMT]: strftime's; NULL none */
	bool forceflush;     /* --forceflush */
	bool verbose;	     /* -V */
	const char *pidfile; /* -I, --pidfile FILE */
	bool pid_written;
	int pid_fd; /* the pid file, open and locked while written */
	struct outopts_pump *pumps[2]; /* NULL: none */
};

/* Their ids (above any command's own) and entries in a table. */
enum {
	OUTOPTS_OPT_LOGFILE = 0x4f00,
	OUTOPTS_OPT_TIMESTAMPS,
	OUTOPTS_OPT_FORCEFLUSH,
};
/* clang-format off */
#define OUTOPTS_SHORTS "f:VI:"
#define OUTOPTS_LONG_OPTIONS                                                \
	{ "format", required_argument, NULL, 'f' },                          \
	{ "logfile", required_argument, NULL, OUTOPTS_OPT_LOGFILE },          \
	{ "timestamps", optional_argument, NULL, OUTOPTS_OPT_TIMESTAMPS },    \
	{ "forceflush", no_argument, NULL, OUTOPTS_OPT_FORCEFLUSH },          \
	{ "verbose", no_argument, NULL, 'V' },                               \
	{ "pidfile", required_argument, NULL, 'I' }
/* clang-format on */

/* iperf3's default --timestamps format */
#define OUTOPTS_TS_DEFAULT "%c "

/* One of those options (c: getopt's value, arg its value): 0 when it was
 * one, 1 when not, -EINVAL with err set for a wrong value. */
int outopts_option(struct outopts *o, int c, const char *arg,
		   struct lr_err *err);

/* Apply them: the pid file written (refused while another live process
 * holds it), standard output and error to the log file, line-buffered
 * with --forceflush or --timestamps, each line stamped unless json (a
 * JSON document is never cut into stamped lines). -errno with err set. */
int outopts_start(struct outopts *o, bool json, struct lr_err *err);

/* The last lines through, the streams back, the pid file removed (when
 * it still holds this process's pid). */
void outopts_end(struct outopts *o);

/* For a command that a signal ends at once (bench): SIGINT, SIGTERM and
 * SIGHUP remove the pid file first, then end the process as they would. */
void outopts_end_on_signal(const struct outopts *o);

#endif
