// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmds.h"
#include "core/disk.h"
#include "opts.h"
#include "opts_common.h"
#include "report.h"
#include "banned.h"

#define PROGRESS_EVERY 0.5 /* seconds between progress redraws */

const char cmd_disk_usage[] =
	"usage: linerate disk [options] [PATH]\n"
	"\n"
	"Measure sequential write and read throughput of the file system\n"
	"holding the directory PATH (default '.'), and name the device behind\n"
	"it. A test file PATH/.linerate-disk-PID.tmp is written, read back and\n"
	"removed, also on SIGINT or SIGTERM. Writes and reads bypass the page\n"
	"cache with O_DIRECT where the file system allows it; elsewhere the\n"
	"timed write ends with fdatasync and the cache is dropped before the\n"
	"read. --buffered measures the way a transfer uses the disk: the\n"
	"page cache always (a receiver's writes, then fdatasync; a sender's\n"
	"reads of a file not in memory), the figure linerate doctor uses.\n"
	"\n"
	"When PATH is an existing regular file, only its sequential read is\n"
	"measured (as dd iflag=direct to /dev/null would): the file is opened\n"
	"read-only, never written, and not followed if it is a symbolic link.\n"
	"JSON then has \"write\": null.\n"
	"\n"
	"  -s, --size SIZE   bytes to write and read (default 256M, up to 1T);\n"
	"                    a multiple of --bs. For a file: read at most\n"
	"                    SIZE bytes (default the whole file)\n"
	"  -b, --bs SIZE     bytes per write and read call (4K to 64M,\n"
	"                    a multiple of 4K; default 1M)\n"
	"      --buffered    through the page cache, never O_DIRECT (as a\n"
	"                    transfer writes and reads)\n"
	"  -J, --json        one JSON document on standard output\n"
	"      --progress    show the progress line even when standard error\n"
	"                    is not a terminal\n"
	"  -h, --help        this text\n"
	"\n"
	"Exit status: 0 done, 1 failure, 2 usage error, 130/143 interrupted\n"
	"by SIGINT/SIGTERM.\n";

enum { OPT_PROGRESS = 0x100, OPT_BUFFERED };

static const struct option long_opts[] = {
	{ "size", required_argument, NULL, 's' },
	{ "bs", required_argument, NULL, 'b' },
	{ "json", no_argument, NULL, 'J' },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ "buffered", no_argument, NULL, OPT_BUFFERED },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The letters of long_opts and the short-only ones, getopt's syntax. */
#define DISK_SHORTS "s:b:Jh"

const struct cmd_opts cmd_disk_opts = { NULL, DISK_SHORTS, long_opts };

struct disk_cli_opts {
	const char *path;
	uint64_t size;
	uint64_t bs;
	bool size_set; /* --size given */
	bool json;
	bool progress;
	bool buffered; /* --buffered: never O_DIRECT */
};

struct disk_progress {
	uint64_t size;
	enum disk_phase phase;
	double start;
	double last;
	bool shown;
	bool tty;
};

/* The signal that stopped the run, or 0. */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int usage_error(const char *msg)
{
	fprintf(stderr, "linerate disk: %s\n", msg);
	fprintf(stderr, "Try 'linerate disk --help'.\n");
	return EXIT_USAGE;
}

static int disk_opts_check(struct disk_cli_opts *o, struct lr_err *err)
{
	if (o->bs % DISK_MIN_BS)
		return lr_err_set(err, -EINVAL,
				  "--bs %llu is not a multiple of 4K",
				  (unsigned long long)o->bs);
	if (!o->size_set) {
		/* the default: the largest multiple of --bs in 256M */
		o->size -= o->size % o->bs;
		if (o->size < o->bs)
			o->size = o->bs;
	}
	if (o->size < o->bs || o->size % o->bs)
		return lr_err_set(err, -EINVAL,
				  "--size %llu is not a multiple of --bs %llu",
				  (unsigned long long)o->size,
				  (unsigned long long)o->bs);
	if (o->json && o->progress)
		return lr_err_set(err, -EINVAL,
				  "--json and --progress exclude each other");
	return 0;
}

static int disk_parse(int argc, char **argv, struct disk_cli_opts *o,
		      struct lr_err *err)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->path = ".";
	o->size = 256ull << 20;
	o->bs = 1u << 20;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":" DISK_SHORTS, long_opts,
				NULL)) != -1) {
		switch (c) {
		case 's':
			if (opts_bytes("--size", optarg, DISK_MIN_BS,
				       DISK_MAX_SIZE, &o->size, err))
				return -EINVAL;
			o->size_set = true;
			break;
		case 'b':
			if (opts_bytes("--bs", optarg, DISK_MIN_BS, DISK_MAX_BS,
				       &o->bs, err))
				return -EINVAL;
			break;
		case 'J': o->json = true; break;
		case OPT_PROGRESS: o->progress = true; break;
		case OPT_BUFFERED: o->buffered = true; break;
		case 'h': return 1;
		default: return opts_getopt_error(c, argv, err);
		}
	}
	if (argc - optind > 1)
		return lr_err_set(err, -EINVAL, "unexpected argument '%s'",
				  argv[optind + 1]);
	if (argc - optind == 1)
		o->path = argv[optind];
	if (!*o->path)
		return lr_err_set(err, -EINVAL,
				  "PATH '' is not a directory or a file");
	return disk_opts_check(o, err);
}

/* One pv-style line: phase, done, percent, rate. */
static void progress_draw(struct disk_progress *p, uint64_t done, double t)
{
	report_disk_progress(stderr, p->phase, done, p->size, t - p->start,
			     p->tty);
	p->shown = true;
}

static void progress_cb(enum disk_phase phase, uint64_t done, void *arg)
{
	struct disk_progress *p = arg;
	double t = now_sec();

	if (phase != p->phase) {
		p->phase = phase;
		p->start = p->last = t;
	}
	if (t - p->last < PROGRESS_EVERY)
		return;
	p->last = t;
	progress_draw(p, done, t);
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: the loop checks */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int cmd_disk(int argc, char **argv)
{
	struct disk_cli_opts o;
	struct disk_progress p = { 0 };
	struct disk_result res;
	struct disk_info info;
	struct lr_err err = { 0 };
	bool have_info = false;
	int r;

	r = disk_parse(argc, argv, &o, &err);
	if (r == 1) {
		fputs(cmd_disk_usage, stdout);
		return EXIT_OK;
	}
	if (r)
		return usage_error(err.msg);
	catch_signals();
	r = disk_identify(o.path, "/sys", "/proc/self/mountinfo", &info, &err);
	if (r)
		goto out_error;
	have_info = true;
	p.size = o.size;
	if (info.is_file && (!o.size_set || info.file_size < o.size))
		p.size = info.file_size;
	p.tty = isatty(STDERR_FILENO);
	p.phase = info.is_file ? DISK_PHASE_READ : DISK_PHASE_WRITE;
	p.start = p.last = now_sec();
	if (info.is_file)
		r = (o.buffered ? disk_read_file_buffered : disk_read_file)(
			o.path, o.size_set ? o.size : 0, (uint32_t)o.bs,
			&stop_signal,
			!o.json && (p.tty || o.progress) ? progress_cb : NULL,
			&p, &res, &err);
	else
		r = (o.buffered ? disk_run_buffered : disk_run)(
			o.path, o.size, (uint32_t)o.bs, &stop_signal,
			!o.json && (p.tty || o.progress) ? progress_cb : NULL,
			&p, &res, &err);
	if (p.shown && p.tty)
		fputc('\n', stderr);
	if (r)
		goto out_error;
	if (o.json)
		report_disk_json(stdout, o.path, p.size, o.bs, &info, &res,
				 NULL);
	else
		report_disk_human(stdout, &info, &res);
	return EXIT_OK;

out_error:
	if (o.json)
		report_disk_json(stdout, o.path, have_info ? p.size : o.size,
				 o.bs, have_info ? &info : NULL, NULL, err.msg);
	if (r == -EINTR && stop_signal) {
		fprintf(stderr, "linerate disk: interrupted%s\n",
			have_info && info.is_file ? "" : ", test file removed");
		return 128 + stop_signal;
	}
	fprintf(stderr, "%s: %s\n", report_prog(), err.msg);
	return EXIT_RUNTIME;
}
