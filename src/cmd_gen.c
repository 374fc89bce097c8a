// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmds.h"
#include "core/gen.h"
#include "opts.h"
#include "opts_common.h"
#include "report.h"
#include "banned.h"

#define GEN_MAX_SIZE   (1ull << 40) /* 1T */
#define PROGRESS_EVERY 0.5	    /* seconds between progress redraws */

const char cmd_gen_usage[] =
	"usage: linerate gen [options] FILE SIZE\n"
	"\n"
	"Write SIZE bytes of test data (128K, 10M, 1G, up to 1T) to FILE, or\n"
	"to standard output when FILE is '-'. The data comes from a fast\n"
	"seeded generator (xoshiro256**), not the system's random source: it\n"
	"is test data, never key material. FILE is not fsynced.\n"
	"\n"
	"  -c, --compressible PCT  make PCT% (0 to 100) of every 64 KiB block\n"
	"                          zeros, so gzip or zstd shrink the output to\n"
	"                          about (100 - PCT)%; default 0: incompressible\n"
	"  -f, --force             overwrite (truncate) FILE if it exists;\n"
	"                          without it an existing FILE is an error\n"
	"      --progress          show the progress line even when standard\n"
	"                          error is not a terminal\n"
	"  -q, --quiet             no progress line and no summary\n"
	"  -h, --help              this text\n"
	"\n"
	"Exit status: 0 done, 1 failure while writing, 2 usage error.\n";

enum { OPT_PROGRESS = 0x100 };

static const struct option long_opts[] = {
	{ "compressible", required_argument, NULL, 'c' },
	{ "force", no_argument, NULL, 'f' },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The letters of long_opts and the short-only ones, getopt's syntax. */
#define GEN_SHORTS "c:fqh"

const struct cmd_opts cmd_gen_opts = { NULL, GEN_SHORTS, long_opts };

struct gen_cli_opts {
	const char *path;
	uint64_t size;
	uint64_t pct;
	bool force;
	bool progress;
	bool quiet;
};

/* The progress line's state, handed to gen_write's callback. */
struct gen_progress {
	uint64_t size;
	double start;
	double last;
	bool shown;
	bool tty;
};

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int usage_error(const char *msg)
{
	fprintf(stderr, "linerate gen: %s\n", msg);
	fprintf(stderr, "Try 'linerate gen --help'.\n");
	return EXIT_USAGE;
}

static int gen_opts_check(struct gen_cli_opts *o, struct lr_err *err)
{
	if (o->quiet && o->progress)
		return lr_err_set(err, -EINVAL,
				  "--quiet and --progress exclude each other");
	if (o->force && !strcmp(o->path, "-"))
		return lr_err_set(err, -EINVAL,
				  "--force has no meaning with FILE '-'");
	return 0;
}

static int gen_parse(int argc, char **argv, struct gen_cli_opts *o,
		     struct lr_err *err)
{
	int c;

	memset(o, 0, sizeof(*o));
	optind = 1;
	while ((c = getopt_long(argc, argv, ":" GEN_SHORTS, long_opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'c':
			if (opts_uint("--compressible", optarg, 0, GEN_MAX_PCT,
				      &o->pct, err))
				return -EINVAL;
			break;
		case 'f': o->force = true; break;
		case 'q': o->quiet = true; break;
		case OPT_PROGRESS: o->progress = true; break;
		case 'h': return 1;
		default: return opts_getopt_error(c, argv, err);
		}
	}
	if (argc - optind < 2)
		return lr_err_set(err, -EINVAL,
				  optind == argc ? "missing FILE and SIZE"
						 : "missing SIZE");
	if (argc - optind > 2)
		return lr_err_set(err, -EINVAL, "unexpected argument '%s'",
				  argv[optind + 2]);
	o->path = argv[optind];
	if (!*o->path)
		return lr_err_set(err, -EINVAL, "FILE '' is not a file name");
	if (opts_bytes("SIZE", argv[optind + 1], 0, GEN_MAX_SIZE, &o->size,
		       err))
		return -EINVAL;
	return gen_opts_check(o, err);
}

/* One pv-style line: done, percent, rate, elapsed and ETA. */
static void progress_draw(struct gen_progress *p, uint64_t done, double t)
{
	report_gen_progress(stderr, done, p->size, t - p->start, p->tty);
	p->shown = true;
}

static void progress_cb(uint64_t done, void *arg)
{
	struct gen_progress *p = arg;
	double t = now_sec();

	if (t - p->last < PROGRESS_EVERY)
		return;
	p->last = t;
	progress_draw(p, done, t);
}

static int open_out(const struct gen_cli_opts *o, struct lr_err *err)
{
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
	int fd;

	if (!strcmp(o->path, "-"))
		return STDOUT_FILENO;
	flags |= o->force ? O_TRUNC : O_EXCL;
	fd = open(o->path, flags, 0644);
	if (fd < 0 && errno == EEXIST)
		return lr_err_set(err, -EEXIST,
				  "%s exists (--force overwrites it)", o->path);
	if (fd < 0)
		return lr_err_setc(err, -errno, "open %s", o->path);
	return fd;
}

int cmd_gen(int argc, char **argv)
{
	struct gen_cli_opts o;
	struct gen_progress p = { 0 };
	struct lr_err err = { 0 };
	struct gen *g;
	bool to_stdout;
	double sec;
	int fd, r;

	r = gen_parse(argc, argv, &o, &err);
	if (r == 1) {
		fputs(cmd_gen_usage, stdout);
		return EXIT_OK;
	}
	if (r)
		return usage_error(err.msg);
	to_stdout = !strcmp(o.path, "-");
	if (to_stdout && isatty(STDOUT_FILENO))
		return usage_error("will not write test data to a terminal "
				   "(redirect standard output)");
	r = gen_new(NULL, (unsigned int)o.pct, &g);
	if (r) {
		lr_err_setc(&err, r, "no generator");
		goto out_error;
	}
	fd = open_out(&o, &err);
	if (fd < 0) {
		r = fd;
		goto out_free_gen;
	}
	p.size = o.size;
	p.tty = isatty(STDERR_FILENO);
	p.start = p.last = now_sec();
	r = gen_write(g, fd, o.size,
		      !o.quiet && (p.tty || o.progress) ? progress_cb : NULL,
		      &p);
	sec = now_sec() - p.start;
	if (r) {
		lr_err_setc(&err, r, "write %s", to_stdout ? "stdout" : o.path);
		if (p.shown)
			fputc('\n', stderr);
		goto out_unlink;
	}
	if (!to_stdout && close(fd)) {
		r = -errno;
		fd = -1; /* closed even when close() failed */
		lr_err_setc(&err, r, "close %s", o.path);
		goto out_unlink;
	}
	gen_free(g);
	if (p.shown) {
		progress_draw(&p, o.size, now_sec());
		if (p.tty)
			fputc('\n', stderr);
	}
	if (!o.quiet)
		report_gen_done(stderr, o.size, sec);
	return EXIT_OK;

out_unlink:
	/*
	 * A partial file is no use as test data of the asked size: remove it,
	 * but only when this run created it. With --force the path may name
	 * a file or a device (/dev/full) that is not ours to delete.
	 */
	if (!to_stdout) {
		if (fd >= 0)
			close(fd);
		if (!o.force)
			unlink(o.path);
	}
out_free_gen:
	gen_free(g);
out_error:
	fprintf(stderr, "%s: %s\n", report_prog(), err.msg);
	return EXIT_RUNTIME;
}
