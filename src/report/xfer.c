// SPDX-License-Identifier: MIT
/* send, get and recv: progress, files and the end. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "core/units.h"
#include "report_int.h"
#include "banned.h"

struct report_xfer {
	FILE *out;
	enum report_format fmt;
	bool quiet, tty;
	const char *verb; /* "sent" or "received" */
	int64_t last_plain_ms;
	bool line_open;	  /* a progress line waits for its end */
	bool verbose;	  /* -v: every file as it is done */
	bool dry_run;	  /* -n: what would be done */
	bool stats;	  /* --stats: the counts, one a line, at the end */
	int progress;	  /* -1 --no-progress, 0 on a terminal, 1 --progress */
	uint64_t entries; /* the end's entries: files, directories, links */
	pthread_mutex_t lock;
};

void report_xfer_set_mode(struct report_xfer *rx, bool verbose, bool dry_run)
{
	rx->verbose = verbose;
	rx->dry_run = dry_run;
}

void report_xfer_set_progress(struct report_xfer *rx, int progress)
{
	rx->progress = progress;
}

void report_xfer_set_stats(struct report_xfer *rx, bool stats)
{
	rx->stats = stats;
}

/* --stats (when asked): what was considered and what became of it, and the file
 * data that crossed the network against what was there already. */
static void end_stats(struct report_xfer *rx, const struct xfer_result *res)
{
	char b1[32], b2[32];

	if (!rx->stats)
		return;
	units_fmt_iec(b1, sizeof(b1), (double)res->bytes);
	units_fmt_iec(b2, sizeof(b2), (double)res->bytes_held);
	fprintf(rx->out,
		"files considered: %llu\n"
		"  %s: %llu\n"
		"  up to date (skipped): %llu\n"
		"  failed: %llu (of which unreadable at the source: %llu)\n"
		"  special (FIFO, socket, device), not sent: %llu\n"
		"  hard links (-H), made to a file sent: %llu\n"
		"%s at the destination: %llu (not deleted: %llu)\n"
		"file data %s: %llu bytes (%s)\n"
		"file data already there: %llu bytes (%s)\n"
		"seconds: %.3f\n",
		(unsigned long long)(res->files_ok + res->files_skipped +
				     res->files_failed + res->files_special +
				     res->files_linked),
		rx->dry_run ? "would be sent" : rx->verb,
		(unsigned long long)res->files_ok,
		(unsigned long long)res->files_skipped,
		(unsigned long long)res->files_failed,
		(unsigned long long)res->files_unread,
		(unsigned long long)res->files_special,
		(unsigned long long)res->files_linked,
		rx->dry_run ? "would be deleted" : "deleted",
		(unsigned long long)res->files_deleted,
		(unsigned long long)res->deletes_failed,
		rx->dry_run ? "moved" : rx->verb,
		(unsigned long long)res->bytes, b1,
		(unsigned long long)res->bytes_held, b2, res->seconds);
	fflush(rx->out);
}

/* A file event's status word (JSON). */
static const char *file_status(const struct xfer_event *ev)
{
	if (!ev->ok)
		return ev->deleted ? "delete_failed" : "failed";
	if (ev->deleted)
		return ev->dry_run ? "would_delete" : "deleted";
	if (ev->linked)
		return ev->dry_run ? "would_link" : "linked";
	if (ev->dry_run)
		return ev->replace ? "would_replace" : "would_send";
	/* a FIFO, socket or device left out: not counted among the files
	 * up to date */
	if (ev->special)
		return "special";
	return ev->skipped ? "skipped" : "done";
}

/* A line of its own: the progress line ended first. */
static void end_line(struct report_xfer *rx)
{
	if (rx->line_open)
		fputc('\n', rx->out);
	rx->line_open = false;
}

/* A file event as a line of its own (human), when -v or -n asks for it
 * (deletions and failures always). */
static void file_line(struct report_xfer *rx, const struct xfer_event *ev)
{
	const char *what = NULL;

	if (ev->deleted && !ev->ok)
		what = NULL; /* not deleted: the failure's line says it */
	else if (ev->deleted)
		what = ev->dry_run ? "would delete" : "deleting";
	else if (ev->linked && (rx->verbose || rx->dry_run))
		what = ev->dry_run ? "would link" : "linked";
	else if (ev->linked)
		what = NULL;
	else if (ev->dry_run && ev->replace)
		what = ev->delta ? "would replace (delta)" : "would replace";
	else if (ev->dry_run)
		what = "would send";
	else if (ev->special)
		what = "skipping"; /* a FIFO, a device: always said */
	else if (ev->skipped && ev->reason)
		what = "up to date"; /* with something said of it */
	else if (ev->ok && ev->reason)
		what = rx->verb; /* kept without its owner: always said */
	else if (ev->ok && (rx->verbose || rx->dry_run))
		what = ev->skipped ? "up to date" : rx->verb;
	if (!what)
		return;
	end_line(rx);
	if (ev->ok && ev->reason)
		fprintf(rx->out, "%s %s (%s)\n", what, ev->path, ev->reason);
	else
		fprintf(rx->out, "%s %s\n", what, ev->path);
}

struct report_xfer *report_xfer_new(FILE *out, enum report_format fmt,
				    bool quiet, bool tty, const char *verb)
{
	struct report_xfer *rx = calloc(1, sizeof(*rx));

	if (!rx)
		return NULL;
	rx->out = out;
	rx->fmt = fmt;
	rx->quiet = quiet;
	rx->tty = tty;
	rx->verb = verb;
	pthread_mutex_init(&rx->lock, NULL);
	return rx;
}

void report_xfer_free(struct report_xfer *rx)
{
	if (!rx)
		return;
	pthread_mutex_destroy(&rx->lock);
	free(rx);
}

/* Rates as pv and rsync -h print them: MiB/s (units.h). */
static void fmt_mbs(char *buf, size_t cap, double bytes_per_sec)
{
	units_fmt_iec_rate(buf, cap, bytes_per_sec);
}

static cJSON *progress_json(const char *event, const struct xfer_progress *p)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "event", event);
	report__add_num(o, "bytes_done", (double)p->bytes_done);
	report__add_num(o, "bytes_already_held", (double)p->bytes_held);
	if (p->total_known)
		report__add_num(o, "bytes_total", (double)p->bytes_total);
	report__add_num(o, "files_done", (double)p->files_done);
	report__add_num(o, "files_total", (double)p->files_total);
	report__add_num(o, "seconds", p->elapsed);
	report__add_num(o, "bytes_per_second", p->rate_now);
	return o;
}

/* The terminal's width in columns (80 when it does not say). Asked at
 * every redraw: a resize (SIGWINCH) is followed at the next one. */
static int term_width(FILE *out)
{
	struct winsize ws;

	if (ioctl(fileno(out), TIOCGWINSZ, &ws) || !ws.ws_col)
		return 80;
	return ws.ws_col;
}

#define PFIELDS 7

/* Bytes per second this run moved (what was there already is not). */
static double moved_rate(const struct xfer_progress *p)
{
	return p->elapsed > 0
		       ? (double)(p->bytes_done - p->bytes_held) / p->elapsed
		       : 0;
}

/* The progress line's fields, most needed first: amount (and share),
 * rate now, ETA, average, elapsed, entries, what was already there. A
 * line too wide for the terminal drops them from the last (as pv does).
 * The amount counts what is at the destination, the rates only what
 * this run moved. */
static void progress_fields(const struct xfer_progress *p, char f[PFIELDS][48])
{
	char done[24], total[24], r[24], t[16];
	double avg = moved_rate(p);

	units_fmt_iec(done, sizeof(done), (double)p->bytes_done);
	if (p->total_known) {
		units_fmt_iec(total, sizeof(total), (double)p->bytes_total);
		snprintf(f[0], 48, "%10s / %-10s %3.0f%%", done, total,
			 p->bytes_total ? 100.0 * (double)p->bytes_done /
						  (double)p->bytes_total
					: 100.0);
	} else {
		snprintf(f[0], 48, "%10s", done);
	}
	/* before a second sample there is no rate of the moment yet */
	fmt_mbs(r, sizeof(r), p->rate_known ? p->rate_now : avg);
	snprintf(f[1], 48, "%11s", r);
	f[2][0] = '\0';
	if (p->total_known && avg > 0) {
		report__fmt_hms(
			t, sizeof(t),
			p->bytes_total > p->bytes_done
				? (double)(p->bytes_total - p->bytes_done) / avg
				: 0);
		snprintf(f[2], 48, "ETA %s", t);
	} else if (p->total_known) {
		snprintf(f[2], 48, "ETA %s",
			 p->bytes_done >= p->bytes_total ? "0:00" : "-:--");
	}
	fmt_mbs(r, sizeof(r), avg);
	snprintf(f[3], 48, "avg %11s", r);
	report__fmt_hms(t, sizeof(t), p->elapsed);
	snprintf(f[4], 48, "%s", t);
	f[5][0] = '\0';
	if (p->total_known)
		snprintf(f[5], 48, "entries %llu/%llu",
			 (unsigned long long)p->files_done,
			 (unsigned long long)p->files_total);
	f[6][0] = '\0';
	if (p->bytes_held) {
		units_fmt_iec(r, sizeof(r), (double)p->bytes_held);
		snprintf(f[6], 48, "%s already there", r);
	}
}

/* The fields that fit in width - 1 columns (the last one stays empty,
 * so the terminal never wraps the line), joined into line. */
static void fit_line(char f[PFIELDS][48], int width, char *line, size_t cap)
{
	int n = PFIELDS, i;
	size_t len;

	for (;;) {
		line[0] = '\0';
		len = 0;
		for (i = 0; i < n; i++) {
			if (!f[i][0])
				continue;
			len += (size_t)snprintf(line + len, cap - len, "%s%s",
						len ? "  " : "", f[i]);
			if (len >= cap)
				len = cap - 1;
		}
		if ((int)len < width || n == 1)
			break;
		n--;
	}
	if ((int)len >= width)
		line[width - 1] = '\0';
}

static void progress_human(struct report_xfer *rx,
			   const struct xfer_progress *p)
{
	char f[PFIELDS][48], line[PFIELDS * 50];

	progress_fields(p, f);
	if (rx->tty) {
		int width = term_width(rx->out);

		if (width < 2)
			return; /* no room for a line */
		fit_line(f, width, line, sizeof(line));
		fprintf(rx->out, "\r%s\033[K", line);
	} else {
		fit_line(f, 1000, line, sizeof(line));
		fprintf(rx->out, "%s\n", line);
	}
	rx->line_open = rx->tty;
	fflush(rx->out);
}

static void xfer_event_cb(void *ctx, const struct xfer_event *ev)
{
	struct report_xfer *rx = ctx;
	cJSON *o;

	if (rx->quiet)
		return;
	pthread_mutex_lock(&rx->lock);
	if (rx->fmt != REPORT_HUMAN) {
		switch (ev->kind) {
		case XFER_EV_START:
			report__json_line(rx->out,
					  progress_json("start", &ev->p));
			break;
		case XFER_EV_PROGRESS:
			report__json_line(rx->out,
					  progress_json("progress", &ev->p));
			break;
		case XFER_EV_FILE:
			o = cJSON_CreateObject();
			if (!o)
				break;
			cJSON_AddStringToObject(o, "event", "file");
			cJSON_AddStringToObject(o, "path", ev->path);
			report__add_num(
				o, "size",
				ev->size == UINT64_MAX ? -1 : (double)ev->size);
			cJSON_AddStringToObject(o, "status", file_status(ev));
			if (ev->dry_run && ev->replace)
				cJSON_AddStringToObject(o, "method",
							ev->delta ? "delta"
								  : "whole");
			if (ev->reason)
				cJSON_AddStringToObject(
					o, ev->ok ? "reason" : "error",
					ev->reason);
			report__json_line(rx->out, o);
			break;
		case XFER_EV_END: break;
		}
		pthread_mutex_unlock(&rx->lock);
		return;
	}
	switch (ev->kind) {
	case XFER_EV_START: rx->last_plain_ms = 0; break;
	case XFER_EV_PROGRESS:
		if (rx->progress < 0 || (!rx->tty && !rx->progress))
			break; /* --no-progress; not a terminal */
		if (!rx->tty) {
			/* --progress: one plain line every few seconds */
			int64_t ms = (int64_t)(ev->p.elapsed * 1000);

			if (ms - rx->last_plain_ms < 5000)
				break;
			rx->last_plain_ms = ms;
		}
		progress_human(rx, &ev->p);
		break;
	case XFER_EV_FILE:
		file_line(rx, ev);
		if (!ev->ok) {
			end_line(rx);
			fprintf(rx->out, "%s: %s: %s\n", report_prog(),
				ev->path, ev->reason ? ev->reason : "failed");
		}
		break;
	case XFER_EV_END:
		rx->entries = ev->p.files_total;
		if (rx->progress >= 0 &&
		    (rx->tty || (rx->progress > 0 && ev->p.elapsed >= 5))) {
			struct xfer_progress p = ev->p;

			/* the last line: the average, not the last instant */
			p.rate_now = moved_rate(&p);
			p.rate_known = true;
			progress_human(rx, &p);
		}
		if (rx->line_open)
			fputc('\n', rx->out);
		rx->line_open = false;
		break;
	}
	fflush(rx->out);
	pthread_mutex_unlock(&rx->lock);
}

void report_xfer_callbacks(struct report_xfer *rx, struct xfer_callbacks *cb)
{
	cb->ctx = rx;
	cb->event = xfer_event_cb;
}

/* -n's last line: what a real run would have done. */
static void end_dry_run(struct report_xfer *rx, const struct xfer_result *res)
{
	fprintf(rx->out,
		"dry run, nothing written: %llu file%s would be sent, %llu "
		"up to date",
		(unsigned long long)res->files_ok,
		res->files_ok == 1 ? "" : "s",
		(unsigned long long)res->files_skipped);
	if (res->files_linked)
		fprintf(rx->out, ", %llu hard link%s would be made",
			(unsigned long long)res->files_linked,
			res->files_linked == 1 ? "" : "s");
	if (res->files_deleted)
		fprintf(rx->out, ", %llu would be deleted",
			(unsigned long long)res->files_deleted);
	if (res->files_failed)
		fprintf(rx->out, ", %llu would fail",
			(unsigned long long)res->files_failed);
	fputc('\n', rx->out);
	fflush(rx->out);
}

/* The end line's counts: files, up to date, failed, deleted, special,
 * already there. */
static void summary_counts(struct report_xfer *rx,
			   const struct xfer_result *res)
{
	char b1[32];

	uint64_t files = res->files_ok + res->files_skipped +
			 res->files_failed + res->files_special +
			 res->files_linked;

	fprintf(rx->out, "; %llu file%s", (unsigned long long)res->files_ok,
		res->files_ok == 1 ? "" : "s");
	/* the progress line's entries: said where they are more */
	if (rx->entries > files)
		fprintf(rx->out,
			" (of %llu entries with the directories "
			"and symlinks)",
			(unsigned long long)rx->entries);
	if (res->files_skipped)
		fprintf(rx->out, ", %llu up to date",
			(unsigned long long)res->files_skipped);
	if (res->files_failed)
		fprintf(rx->out, ", %llu FAILED",
			(unsigned long long)res->files_failed);
	if (res->files_deleted)
		fprintf(rx->out, ", %llu deleted",
			(unsigned long long)res->files_deleted);
	if (res->deletes_failed)
		fprintf(rx->out, ", %llu NOT deleted (%s)",
			(unsigned long long)res->deletes_failed,
			res->deletes_why[0] ? res->deletes_why : "see the log");
	if (res->files_special)
		fprintf(rx->out, ", %llu special skipped",
			(unsigned long long)res->files_special);
	if (res->files_linked)
		fprintf(rx->out, ", %llu hard link%s",
			(unsigned long long)res->files_linked,
			res->files_linked == 1 ? "" : "s");
	if (res->owners_failed)
		fprintf(rx->out, ", %llu without their owner",
			(unsigned long long)res->owners_failed);
	if (res->xattrs_failed)
		fprintf(rx->out, ", %llu without all their attributes (%s)",
			(unsigned long long)res->xattrs_failed,
			res->xattrs_why[0] ? res->xattrs_why : "see the log");
	if (res->bytes_held) {
		units_fmt_iec(b1, sizeof(b1), (double)res->bytes_held);
		fprintf(rx->out, ", %s already there", b1);
	}
}

/* The end event's counts (JSON): what the summary and --stats say. */
static void end_json_counts(cJSON *o, const struct xfer_result *res)
{
	report__add_num(o, "files_ok", (double)res->files_ok);
	report__add_num(o, "files_failed", (double)res->files_failed);
	report__add_num(o, "files_skipped", (double)res->files_skipped);
	report__add_num(o, "files_unread", (double)res->files_unread);
	report__add_num(o, "files_deleted", (double)res->files_deleted);
	report__add_num(o, "files_special", (double)res->files_special);
	report__add_num(o, "files_linked", (double)res->files_linked);
	report__add_num(o, "owners_failed", (double)res->owners_failed);
	report__add_num(o, "xattrs_failed", (double)res->xattrs_failed);
	if (res->xattrs_why[0])
		cJSON_AddStringToObject(o, "xattrs_why", res->xattrs_why);
	report__add_num(o, "deletes_failed", (double)res->deletes_failed);
	if (res->deletes_why[0])
		cJSON_AddStringToObject(o, "deletes_why", res->deletes_why);
}

void report_xfer_end(struct report_xfer *rx, const struct xfer_result *res,
		     uint64_t link_speed_bps, const char *error)
{
	uint64_t speed = link_speed_bps ? link_speed_bps : res->link_speed_bps;
	double bps = res->seconds > 0 ? (double)res->bytes / res->seconds : 0;
	double ceiling = xfer_ceiling_bps(res, link_speed_bps) / 8.0;
	double share = 0;
	const char *neck = xfer_bottleneck(res, &share);
	char b1[32], b2[32], b3[32], b4[32];
	cJSON *o;

	if (rx->fmt != REPORT_HUMAN) {
		o = cJSON_CreateObject();
		if (!o)
			return;
		cJSON_AddStringToObject(o, "event", "end");
		cJSON_AddBoolToObject(o, "ok", !error);
		if (error)
			cJSON_AddStringToObject(o, "error", error);
		report__add_num(o, "bytes", (double)res->bytes);
		report__add_num(o, "bytes_already_held",
				(double)res->bytes_held);
		report__add_num(o, "seconds", report__json_num(res->seconds));
		report__add_num(o, "bytes_per_second", report__json_num(bps));
		end_json_counts(o, res);
		report__add_num(o, "streams", res->streams);
		report__add_num(o, "chunk_size", res->chunk_size);
		/* a session that never began had no cipher, not "none" */
		if (res->streams)
			cJSON_AddStringToObject(
				o, "cipher",
				res->authenticated
					? crypto_cipher_name(res->cipher)
					: "none");
		if (ceiling > 0) {
			report__add_num(o, "link_speed_bps", (double)speed);
			report__add_num(o, "tcp_ceiling_bytes_per_second",
					ceiling);
			report__add_num(o, "percent_of_ceiling",
					100.0 * bps / ceiling);
		}
		if (!error || res->seconds > 0) {
			cJSON_AddStringToObject(o, "limited_by", neck);
			report__add_num(o, "limited_by_share",
					report__json_num(share));
		}
		report__json_line(rx->out, o);
		return;
	}
	if (error) {
		fprintf(rx->out, "%s: ", report_prog());
		report_escaped(rx->out, error);
		fputc('\n', rx->out);
		if (!res->seconds)
			return;
	}
	if (rx->quiet && !error) {
		end_stats(rx, res);
		return;
	}
	if (rx->dry_run) {
		end_dry_run(rx, res);
		end_stats(rx, res);
		return;
	}
	units_fmt_iec(b1, sizeof(b1), (double)res->bytes);
	fmt_mbs(b2, sizeof(b2), bps);
	fprintf(rx->out, "%s %s in %.2f s: %s", rx->verb, b1, res->seconds, b2);
	if (ceiling > 0) {
		fmt_mbs(b4, sizeof(b4), ceiling);
		fprintf(rx->out, " (%.1f%% of the %s link's TCP ceiling, %s)",
			100.0 * bps / ceiling,
			units_fmt_rate(b3, sizeof(b3), (double)speed), b4);
	}
	summary_counts(rx, res);
	fprintf(rx->out, "; %s, %u stream%s\n",
		res->authenticated ? crypto_cipher_name(res->cipher) : "none",
		res->streams, res->streams == 1 ? "" : "s");
	if (res->seconds > 0.2 && res->rate_limit &&
	    !strcmp(neck, "your --limit")) {
		fmt_mbs(b4, sizeof(b4), (double)res->rate_limit);
		fprintf(rx->out, "limited by: your --limit (%s)\n", b4);
	} else if (res->seconds > 0.2) {
		fprintf(rx->out, "limited by: %s (%.0f%% of the time)\n", neck,
			100.0 * share);
	}
	end_stats(rx, res);
	fflush(rx->out);
}
