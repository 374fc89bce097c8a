/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_RESULTS_H
#define LINERATE_RESULTS_H

/*
 * Saved runs: --save LABEL and --results FILE on bench, send, get and
 * doctor append the run (its JSON, the label, the time, both ends'
 * facts) to a results file, one JSON object a line, under
 * $XDG_DATA_HOME/linerate/ (~/.local/share/linerate/) unless --results
 * names another; `linerate results` reads it. The file is only ever
 * appended to (under an flock), so a bad line never costs the others.
 */

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "core/bench.h"
#include "core/err.h"
#include "core/xfer.h"
#include "report.h"

struct results_opts {
	const char *label; /* --save LABEL; NULL: not saved */
	const char *file;  /* --results FILE; NULL: the default */
};

enum {
	RESULTS_OPT_SAVE = 0x4e00,
	RESULTS_OPT_FILE,
};
/* clang-format off */
#define RESULTS_LONG_OPTIONS                                               \
	{ "save", required_argument, NULL, RESULTS_OPT_SAVE },              \
	{ "results", required_argument, NULL, RESULTS_OPT_FILE }
/* clang-format on */

/* The longest label. */
#define RESULTS_MAX_LABEL 64

/* One of those options: 0 when it was one, 1 when not, -EINVAL with err
 * set for a wrong value (an empty label, control characters). */
int results_option(struct results_opts *o, int c, const char *arg,
		   struct lr_err *err);

/* The results file: --results FILE, else $XDG_DATA_HOME/linerate/
 * results.jsonl, else ~/.local/share/linerate/results.jsonl. -ENOENT
 * (err set) with neither XDG_DATA_HOME nor HOME. */
int results_path(const struct results_opts *o, char *buf, size_t cap,
		 struct lr_err *err);

/* The whole file into a malloc'd string (*text; "" when it is not
 * there), read by its length: each run of NUL bytes (a crash's
 * zero-filled block) becomes the two bytes C0 80 (modified UTF-8's NUL,
 * never UTF-8), so the text is a C string holding every line, and the
 * line with the NUL is still there for the reader to name and skip. */
int results_read(const char *path, char **text, struct lr_err *err);

/* A run's JSON as the command writes it, kept in memory. */
struct results_capture {
	FILE *f;
	char *buf;
	size_t len;
};
int results_capture_open(struct results_capture *c);
/* Its text so far ("" when none). */
const char *results_capture_text(struct results_capture *c);
void results_capture_close(struct results_capture *c);

/* Callbacks that call two sets in turn: the command's report and the
 * capture's. */
struct results_bench_tee {
	struct bench_callbacks a, b;
};
void results_bench_tee(struct results_bench_tee *t,
		       const struct bench_callbacks *a,
		       const struct bench_callbacks *b,
		       struct bench_callbacks *out);
struct results_xfer_tee {
	struct xfer_callbacks a, b;
};
void results_xfer_tee(struct results_xfer_tee *t,
		      const struct xfer_callbacks *a,
		      const struct xfer_callbacks *b,
		      struct xfer_callbacks *out);

/* A finished run's summary into r (command, direction, host, rate, CPU
 * per GB, cipher, link); run and facts are the caller's. */
void results_from_bench(const struct bench_result *res, const char *host,
			struct report_saved_run *r, struct link_info *link);
void results_from_xfer(const struct xfer_result *res, bool pull,
		       const char *host, struct report_saved_run *r,
		       struct link_info *link);

/* The far end's facts by a probe (a linerate server that took the
 * token): 0, or -errno (the run is saved without them). */
int results_far_facts(const char *host, uint16_t port, int family,
		      const uint8_t *psk, uint8_t cipher_wish,
		      struct proto_probe_result *out);

/* A command's check before its work: true (said on stderr as `linerate
 * CMD: --save: ...`) when --save was given and its file cannot be
 * written; false otherwise. */
bool results_refused(const struct results_opts *o, const char *cmd);

/* Append the run to the results file (its id: one more than the
 * largest there), this end's facts gathered here (storage of dir, may be
 * NULL), and say where on msg (NULL: silent). -errno with err set. */
int results_save(const struct results_opts *o, struct report_saved_run *r,
		 const char *dir, FILE *msg, struct lr_err *err);

#endif
