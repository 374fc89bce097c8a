/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_REPORT_INT_H
#define LINERATE_REPORT_INT_H

/*
 * The formatter's internal header. Only the files of src/report/ include
 * it (scripts/check-includes.sh checks); the command line sees
 * ../report.h. Helpers shared between the files carry the prefix
 * report__.
 *
 *   common.c           numbers, escaping and the JSON writer every
 *                      subcommand's report uses; struct report
 *   bench.c            bench's callbacks, its errors, the JSON document
 *   bench_start.c      bench: connecting, the start block
 *   bench_interval.c   bench: the interval lines and objects
 *   bench_end_json.c   bench: the end, as iperf3's JSON has it
 *   bench_end_human.c  bench: the end, as iperf3's text has it
 *   server_log.c       serve's log lines
 *   partial.c          serve --list-partial / --clean-partial, the sweep
 *   crypto.c           linerate crypto
 *   disk.c             linerate disk
 *   gen.c              linerate gen
 *   xfer.c             send, get and recv: progress, files, the end
 *   recv.c             recv's banner: where it listens, the token, the
 *                      command to run on the sender
 *   doctor.c           linerate doctor
 *   doctor_local.c     linerate doctor --local: the machine alone
 *   completion.c       linerate completion: the shells' scripts
 *   results.c          saved runs: the line --save appends, linerate
 *                      results (the table, JSON, --compare)
 */

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

#define SEP "- - - - - - - - - - - - - - - - - - - - - - - - -\n"

struct report {
	FILE *out;
	enum report_format fmt;
	cJSON *root; /* REPORT_JSON: the whole document */
	cJSON *intervals;
	cJSON *start; /* kept until the end for REPORT_JSON */
	bool header_done;
	bool sep_done; /* the last line printed is a separator */
	bool bidir;
	bool any_sender; /* this side sends on some stream */
	unsigned nstreams;
	uint8_t mode;
	uint8_t *dirs; /* per stream */
	bool *local_sender;
	bool udp;
	bool server_side; /* the server's own report: [TX-S], [RX-S] */
	bool bol;	  /* at the beginning of a line (for the title) */
	char title[128];  /* iperf3's --title: a prefix on every line */
};

/* A bench report's sums over streams of one direction. */
struct sums {
	uint64_t bytes;
	double seconds;
	uint32_t retrans;
	bool has_tcp;
	uint64_t packets, lost, ooo, dup; /* UDP */
	double jitter_sum;
	unsigned n;
};

/* common.c */
/* Human bench output: like fprintf, with iperf3's "TITLE:  " in front of
 * every line when a title is set. */
__attribute__((format(printf, 2, 3))) void report__print(struct report *rp,
							 const char *fmt, ...);
/* Text from a peer: lines and tabs kept, other control bytes escaped. */
void report__text_out(FILE *out, const char *s);
/* JSON numbers are never NaN or infinite. */
double report__json_num(double v);
/* bits per second */
double report__rate(uint64_t bytes, double seconds);
/* A rate in the unit -f chose (report_set_rate_format), else iperf3's
 * adaptive bits. */
char *report__fmt_rate(char *buf, size_t cap, double bits_per_sec);
void report__add_num(cJSON *o, const char *k, double v);
/* One line of JSON_STREAM output: {"event": event, "data": data}. */
void report__emit_stream_event(struct report *rp, const char *event,
			       cJSON *data);
/* A --bidir line's role: [TX-C] or [RX-C], [TX-S] or [RX-S] in the
 * server's own report; "" without --bidir. */
const char *report__role(const struct report *rp, bool local_sender);
const char *report__role_tag(const struct report *rp, unsigned i);
/* One JSON object on a line of its own, flushed; o is freed. */
void report__json_line(FILE *out, cJSON *o);

/* bench_start.c, bench_interval.c: bench's callbacks */
void report__cb_connecting(void *ctx, const char *host, uint16_t port);
void report__cb_started(void *ctx, const struct bench_result *res);
void report__cb_interval(void *ctx, const struct bench_interval *iv);
double report__pct(uint64_t part, uint64_t whole);
void report__human_ooo_line(struct report *rp, const char *id, const char *tag,
			    double start, double end, uint64_t ooo,
			    uint64_t dup);

/* bench_end_json.c, bench_end_human.c */
void report__sum_add(struct sums *s, const struct bench_side *d);
struct bench_side report__sums_side(const struct sums *s);
int report__dir_slot(const struct bench_result *res, uint8_t dir);
double report__cpu_pct(uint64_t us, uint64_t wall_us);
cJSON *report__end_json(const struct bench_result *res);
void report__human_end(struct report *rp, const struct bench_result *res);

/* doctor.c: doctor's JSON document, for doctor --local's to hold */
cJSON *report__doctor_json(const struct doctor_report *r, const char *error);

/* gen.c */
void report__fmt_hms(char *buf, size_t cap, double s);

#endif
