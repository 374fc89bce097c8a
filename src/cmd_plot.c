// SPDX-License-Identifier: MIT
/* linerate plot: charts of saved runs and of --json files, as SVG or an
 * HTML page. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmds.h"
#include "opts.h"
#include "opts_common.h"
#include "report.h"
#include "results.h"
#include "banned.h"

#define PLOT_MAX_RUNS 256

const char cmd_plot_usage[] =
	"usage: linerate plot [RUN...] -o FILE.svg|FILE.html [options]\n"
	"\n"
	"Draw throughput over time of runs (bench's intervals, summed and per\n"
	"stream when there is one run; a transfer's progress) and, for saved\n"
	"runs of two labels or more, each label's median MB/s by command and\n"
	"direction (as results --compare groups them).\n"
	"RUN is a saved run's id, a label (every run saved with it), or a\n"
	"file written by --json (bench -J, send/get --json, doctor --json; an\n"
	"iperf3 -J file too). Without RUN: the runs of the label saved last.\n"
	"An .html page holds the charts and a table and needs no network.\n"
	"\n"
	"  -o, --output FILE    FILE.svg, FILE.html (or .htm); - is SVG on\n"
	"                       standard output\n"
	"      --title TEXT     the page's title (default: linerate runs)\n"
	"      --results FILE   the results file of saved runs\n"
	"  -h, --help           this text\n"
	"\n"
	"Exit status: 0 written, 1 a run not found or not linerate's JSON,\n"
	"2 usage error.\n";

enum { OPT_TITLE = 0x100 };

static const struct option long_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "title", required_argument, NULL, OPT_TITLE },
	{ "help", no_argument, NULL, 'h' },
	{ "results", required_argument, NULL, RESULTS_OPT_FILE },
	{ NULL, 0, NULL, 0 },
};

#define PLOT_SHORTS "o:h"

const struct cmd_opts cmd_plot_opts = { NULL, PLOT_SHORTS, long_opts };

struct plot_cli {
	struct results_opts ro;
	const char *output, *title;
	bool html;
	char **sel; /* the RUN operands */
	int nsel;
};

/* What we give report_plot, and the memory behind it. */
struct plot_in {
	struct report_plot_run runs[PLOT_MAX_RUNS];
	char *owned[PLOT_MAX_RUNS * 3];
	size_t n, nowned;
	bool full;
};

static char *keep(struct plot_in *in, char *s)
{
	if (s && in->nowned < sizeof(in->owned) / sizeof(in->owned[0])) {
		in->owned[in->nowned++] = s;
		return s;
	}
	free(s);
	return NULL;
}

static void in_free(struct plot_in *in)
{
	size_t i;

	for (i = 0; i < in->nowned; i++)
		free(in->owned[i]);
}

static int plot_parse(int argc, char **argv, struct plot_cli *o,
		      struct lr_err *err)
{
	const char *dot;
	int c, r;

	memset(o, 0, sizeof(*o));
	o->title = "linerate runs";
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":" PLOT_SHORTS, long_opts,
				NULL)) != -1) {
		if (c == 'h')
			return 1;
		if (c == 'o' || c == OPT_TITLE) {
			*(c == 'o' ? &o->output : &o->title) = optarg;
			continue;
		}
		r = results_option(&o->ro, c, optarg, err);
		if (r <= 0) {
			if (r)
				return r;
			continue;
		}
		return opts_getopt_error(c, argv, err);
	}
	if (!o->output)
		return lr_err_set(err, -EINVAL,
				  "-o FILE.svg or -o FILE.html: where to draw");
	dot = strrchr(o->output, '.');
	o->html = dot && (!strcmp(dot, ".html") || !strcmp(dot, ".htm"));
	if (strcmp(o->output, "-") && !o->html &&
	    !(dot && !strcmp(dot, ".svg")))
		return lr_err_set(err, -EINVAL,
				  "-o %s: name a .svg or .html file",
				  o->output);
	o->sel = argv + optind;
	o->nsel = argc - optind;
	return 0;
}

static void add_saved(void *ctx, const char *line, size_t len, unsigned id,
		      const char *label)
{
	struct plot_in *in = ctx;
	struct report_plot_run *r;
	char name[200];

	if (in->n == PLOT_MAX_RUNS) {
		in->full = true;
		return;
	}
	r = &in->runs[in->n];
	snprintf(name, sizeof(name), "%s #%u", label, id);
	r->text = keep(in, strndup(line, len));
	r->name = keep(in, strdup(name));
	r->label = keep(in, strdup(label));
	r->saved = true;
	if (r->text && r->name && r->label)
		in->n++;
}

/* A RUN that is a file: its JSON. */
static int add_file(struct plot_in *in, const char *path, struct lr_err *err)
{
	struct report_plot_run *r = &in->runs[in->n];
	const char *base = strrchr(path, '/');
	char *text = NULL;
	int e;

	if (in->n == PLOT_MAX_RUNS)
		return lr_err_set(err, -E2BIG, "at most %d runs",
				  PLOT_MAX_RUNS);
	e = results_read(path, &text, err);
	if (e)
		return e;
	r->text = keep(in, text);
	r->name = base ? base + 1 : path;
	r->label = "";
	r->saved = false;
	in->n++;
	return 0;
}

/* The runs the operands name: files first asked of the file system,
 * then ids and labels of the results file. */
static int gather(const struct plot_cli *o, struct plot_in *in,
		  struct lr_err *err)
{
	char path[PATH_MAX], *text = NULL;
	struct stat st;
	int i, r;

	r = results_path(&o->ro, path, sizeof(path), err);
	if (!r)
		r = results_read(path, &text, err);
	if (r)
		return r;
	if (!o->nsel && !report_saved_select(text, NULL, add_saved, in))
		r = lr_err_set(err, -ENOENT,
			       "no saved run in %s: name a run or a --json "
			       "file",
			       path);
	for (i = 0; !r && i < o->nsel; i++) {
		if (!stat(o->sel[i], &st) && S_ISREG(st.st_mode))
			r = add_file(in, o->sel[i], err);
		else if (!report_saved_select(text, o->sel[i], add_saved, in))
			r = lr_err_set(err, -ENOENT,
				       "%s: no such file, and no run saved "
				       "with that id or label in %s",
				       o->sel[i], path);
	}
	free(text);
	if (!r && in->full)
		r = lr_err_set(err, -E2BIG, "at most %d runs in a plot",
			       PLOT_MAX_RUNS);
	return r;
}

/* The chart into o->output: a file written beside and renamed over it
 * (a failed plot never leaves half a file), or standard output. */
static int draw(const struct plot_cli *o, const struct plot_in *in,
		struct lr_err *err)
{
	char tmp[PATH_MAX], msg[LR_ERR_MSG];
	FILE *f = stdout;
	int r, fd = -1;

	if (strcmp(o->output, "-")) {
		snprintf(tmp, sizeof(tmp), "%s.tmpXXXXXX", o->output);
		fd = mkstemp(tmp);
		if (fd < 0 || !(f = fdopen(fd, "w"))) {
			r = lr_err_setc(err, -errno, "%s", o->output);
			if (fd >= 0) {
				close(fd);
				unlink(tmp);
			}
			return r;
		}
		fchmod(fd, 0644);
	}
	r = report_plot(f, o->html, o->title, in->runs, in->n, msg,
			sizeof(msg));
	if (r)
		lr_err_set(err, r, "%s", msg);
	if (f != stdout) {
		if (fclose(f) && !r)
			r = lr_err_setc(err, -errno, "writing %s", o->output);
		if (!r && rename(tmp, o->output))
			r = lr_err_setc(err, -errno, "%s", o->output);
		if (r)
			unlink(tmp);
	} else if (fflush(stdout) && !r) {
		r = lr_err_setc(err, -errno, "standard output");
	}
	return r;
}

int cmd_plot(int argc, char **argv)
{
	struct plot_cli o;
	struct lr_err err = { 0 };
	struct plot_in *in;
	int r = plot_parse(argc, argv, &o, &err);

	if (r == 1) {
		fputs(cmd_plot_usage, stdout);
		return EXIT_OK;
	}
	if (r) {
		fprintf(stderr,
			"linerate plot: %s\nTry 'linerate plot --help'.\n",
			err.msg);
		return EXIT_USAGE;
	}
	in = calloc(1, sizeof(*in));
	if (!in) {
		fprintf(stderr, "linerate plot: out of memory\n");
		return EXIT_RUNTIME;
	}
	r = gather(&o, in, &err);
	if (!r)
		r = draw(&o, in, &err);
	if (r)
		fprintf(stderr, "linerate plot: %s\n", err.msg);
	else if (strcmp(o.output, "-"))
		fprintf(stderr, "linerate plot: %zu run%s drawn in %s\n", in->n,
			in->n == 1 ? "" : "s", o.output);
	in_free(in);
	free(in);
	return r ? EXIT_RUNTIME : EXIT_OK;
}
