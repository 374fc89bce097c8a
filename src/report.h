/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_REPORT_H
#define LINERATE_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "core/bench.h"
#include "core/cryptobench.h"
#include "core/disk.h"
#include "core/server.h"
#include "core/xfer.h"
#include "core/doctor.h"

/*
 * The only formatter: human text in iperf3's layout, one JSON document in
 * iperf3's -J schema, or a JSON object per line (--json-stream).
 */

enum report_format { REPORT_HUMAN, REPORT_JSON, REPORT_JSON_STREAM };

struct report;

/* A reporter writing to out; NULL on allocation failure. */
struct report *report_new(FILE *out, enum report_format fmt);
void report_free(struct report *rp);

/* iperf3's --title: human lines get "TITLE:  " in front (as iperf3 does;
 * set it before the first line), JSON a top-level "title". The result's
 * title (bench_result.title) is used when none is set here. */
void report_set_title(struct report *rp, const char *title);
/* The report is the server's own (serve's iperf3 --get-server-output):
 * --bidir roles read [TX-S] and [RX-S], as iperf3's server prints them. */
void report_set_server_side(struct report *rp);
/* Callbacks for bench_client_run, bound to rp. */
void report_bench_callbacks(struct report *rp, struct bench_callbacks *cb);
/* Report a failed test: human "linerate: error - ..." on err_out, or the
 * JSON document (with an "error" key) on out. */
void report_bench_error(struct report *rp, FILE *err_out, const char *msg);
/* Print the JSON document gathered so far (REPORT_JSON only). */
void report_bench_flush(struct report *rp);

/* One line for a server event: LISTENING goes to out, the rest to log. */
void report_server_event(FILE *out, FILE *log, const struct server_event *ev);

/* serve --list-partial and --clean-partial: a table's header, one line per
 * partial file (now: seconds, for its age), one per removal (r: 0 or
 * -errno), the total; and a sweep's summary (the server log). */
void report_partial_header(FILE *out);
void report_partial(FILE *out, const struct xfer_partial *p, int64_t now);
void report_partial_removed(FILE *out, const struct xfer_partial *p, int r);
void report_partial_total(FILE *out, unsigned n, uint64_t bytes,
			  unsigned in_use, const char *verb);
void report_sweep_line(FILE *out, const struct xfer_sweep *r,
		       const struct xfer_partial_policy *pol);

/* -V (iperf3's): this program's version and library, the system (as
 * uname -a) and the time; for bench, then the test's parameters. */
void report_verbose_system(FILE *out);
void report_bench_verbose(FILE *out, const struct proto_test_request *q,
			  bool iperf3);

/* iperf3's -f: the unit of bench's and serve's rates, 0 (adaptive bits)
 * or one of kmgtKMGT (units_fmt_rate_as). */
void report_set_rate_format(char format);

/* `linerate completion`: the bash and zsh completion scripts and the
 * option list, from the parsers' option tables. */
void report_completion_bash(FILE *out);
void report_completion_zsh(FILE *out);
void report_completion_list(FILE *out);

/* Write s with control and non-ASCII bytes escaped (\xNN). */
/* The command running (main sets it): every message of it starts with
 * report_prog(), "linerate CMD" ("linerate" before one is known). */
void report_set_command(const char *cmd);
const char *report_prog(void);
/* A message of the command: report_prog(), ": ", then fmt. */
void report_msg(FILE *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void report_escaped(FILE *out, const char *s);

/*
 * linerate crypto: a human table, or one JSON document. Neither takes
 * ownership.
 */

/* The CPU, the table of MB/s and 1 GbE core counts, and auto's pick. */
void report_crypto_human(FILE *out, const struct cryptobench_cpu *cpu,
			 const struct cryptobench_result *res);

/* The same as one JSON document (no NaN or infinity). 0 or -ENOMEM. */
int report_crypto_json(FILE *out, const struct cryptobench_cpu *cpu,
		       const struct cryptobench_result *res);

/* A JSON document {"error": msg}, for a failed --json run. */
void report_crypto_json_error(FILE *out, const char *msg);

/* linerate disk: the human lines, or one JSON document (error may be
 * NULL; d and res may be NULL when the test did not get that far). */
void report_disk_human(FILE *out, const struct disk_info *d,
		       const struct disk_result *res);
int report_disk_json(FILE *out, const char *path, uint64_t size, uint64_t bs,
		     const struct disk_info *d, const struct disk_result *res,
		     const char *error);
/* A file read (res->read_only): the human output has no write line, and
 * the JSON document "write": null. */

/* linerate disk's pv-style progress line: phase, done, percent of size,
 * rate over sec. Redrawn in place when tty, else one line each call. */
void report_disk_progress(FILE *out, enum disk_phase phase, uint64_t done,
			  uint64_t size, double sec, bool tty);

/* linerate gen's progress line: done, elapsed, rate, percent of size and
 * ETA. Redrawn in place when tty, else one line each call. */
/* gen's summary: the size in MiB (and exact), the time, the rate. */
void report_gen_done(FILE *out, uint64_t size, double sec);
void report_gen_progress(FILE *out, uint64_t done, uint64_t size, double sec,
			 bool tty);

/*
 * linerate send / get / recv: progress (pv-like, redrawn on a terminal,
 * a plain line every 5 s otherwise; or one JSON object per event), the
 * final lines and the bottleneck. verb is "sent" or "received".
 */
struct report_xfer;
struct report_xfer *report_xfer_new(FILE *out, enum report_format fmt,
				    bool quiet, bool tty, const char *verb);
void report_xfer_free(struct report_xfer *rx);
/* -v: a line per file as it is done; -n: the lines say what would be. */
void report_xfer_set_mode(struct report_xfer *rx, bool verbose, bool dry_run);
/* --stats: a block of counts after the end line (human output only; the
 * JSON end event has them all). Printed with -q too. */
void report_xfer_set_stats(struct report_xfer *rx, bool stats);
/* The progress line: -1 never (--no-progress), 0 on a terminal only (the
 * default), 1 also elsewhere, one plain line every few seconds
 * (--progress). On a terminal it fits the width, dropping fields from
 * the last: files, elapsed, average, ETA, rate. */
void report_xfer_set_progress(struct report_xfer *rx, int progress);
void report_xfer_callbacks(struct report_xfer *rx, struct xfer_callbacks *cb);
/* link_speed_bps overrides what /sys said (0 = use the result's). */
void report_xfer_end(struct report_xfer *rx, const struct xfer_result *res,
		     uint64_t link_speed_bps, const char *error);

/* linerate doctor: the stage table, the verdict, facts and advice; or one
 * JSON document (error may be NULL). */
/* recv's banner: where it waits for its one transfer, this host's
 * addresses (or bind_addr), the port, the token, and the command to run
 * on the sender; with json one object: event "listening", port, token. */
struct report_recv_banner {
	uint16_t port;
	const char *token;
	const char *dest; /* DIR, or "standard output" */
	bool to_stdout;
	const char *bind_addr; /* NULL: every address of this host */
	int family;	       /* AF_UNSPEC, AF_INET or AF_INET6 */
	bool token_kept;       /* the token of an unfinished transfer */
};
void report_recv_listening(FILE *out, const struct report_recv_banner *b,
			   bool json);

/* Saved runs (--save LABEL, linerate results): one JSON object a line
 * of a results file. */
struct report_saved_run {
	unsigned id;
	const char *label;
	int64_t time;		 /* seconds since the epoch */
	const char *command;	 /* bench, send, get, doctor */
	const char *direction;	 /* send, receive, both: from this end */
	const char *host;	 /* the far end as given */
	double bytes_per_second; /* the run's rate */
	uint64_t bytes;
	double seconds;
	double cpu_s_per_gb[2];	      /* this end, the far end; < 0 unknown */
	const char *cipher;	      /* "" or NULL: none or unknown */
	const struct link_info *link; /* NULL: unknown */
	const char *nodename, *kernel;
	const struct proto_probe_result *local; /* this end's facts */
	double local_cores;
	const struct proto_probe_result *remote; /* NULL: not known */
	double remote_cores;
	int argc;
	char *const *argv; /* the command's arguments */
	const char *run;   /* its JSON: a document, or lines of events */
};

/* Whether s is valid UTF-8 (labels must be: the results file is JSON). */
bool report_utf8_valid(const char *s);

/* How a saved run's line starts (its id follows). */
#define REPORT_SAVED_PREFIX "{\"format\":\"linerate run 1\",\"id\":"

/* The run as one line of JSON, newline included; malloc'd, NULL when out
 * of memory. */
char *report_saved_line(const struct report_saved_run *r);

/* linerate results: the runs in text (the results file path's contents)
 * as a table, or a JSON array of them. A line that is not a saved run is
 * named on warn (PATH:LINE: why) and skipped. 0, or -ENOENT (said) when
 * there is none. */
int report_saved_list(FILE *out, FILE *warn, const char *path, const char *text,
		      bool json);

/* --compare A B: for each command and direction, the median rate of the
 * runs labelled A and B and B over A. -ENOENT (said on warn) when a label
 * has no run. */
int report_saved_compare(FILE *out, FILE *warn, const char *path,
			 const char *text, const char *a, const char *b,
			 bool json);

/* The saved runs of text that sel names: an id, a label (all its runs),
 * or NULL (the runs of the label saved last); fn called with each one's
 * line (not NUL-terminated: len bytes), id and label. How many. */
size_t report_saved_select(const char *text, const char *sel,
			   void (*fn)(void *ctx, const char *line, size_t len,
				      unsigned id, const char *label),
			   void *ctx);

/* linerate plot: one run to draw. */
struct report_plot_run {
	const char *name;  /* in the legend: "LABEL #ID", or the file */
	const char *label; /* the comparison's group; "" for a file */
	const char *text;  /* a saved run's line, or a file's JSON */
	bool saved;	   /* text is a saved run's line */
};

/* Throughput over time of the runs (bench intervals, per stream when
 * there is one run; a transfer's progress) and, with runs of two labels
 * or more, their medians by label, command and direction (never a bench
 * run with a file transfer): an SVG document, or
 * with html a page holding it and a table. -EINVAL with err set when a
 * run is not linerate's JSON (the line named) or nothing can be drawn. */
int report_plot(FILE *out, bool html, const char *title,
		const struct report_plot_run *runs, size_t n, char *err,
		size_t errcap);

void report_doctor_human(FILE *out, const struct doctor_report *r);
/* doctor --local: the machine, the cipher, the network, the disk of DIR,
 * the transfer's CPU per GB of each end and what each direction can
 * carry; the verdict in one paragraph and a line for a table of devices.
 * dir: the directory measured. */
void report_doctor_local_human(FILE *out, const struct doctor_local_report *r,
			       const char *dir);
void report_doctor_local_json(FILE *out, const struct doctor_local_report *r,
			      const char *dir, const char *error);
void report_doctor_json(FILE *out, const struct doctor_report *r,
			const char *error);

#endif
