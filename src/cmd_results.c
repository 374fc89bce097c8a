// SPDX-License-Identifier: MIT
/* linerate results: the runs --save kept, as a table or JSON, and the
 * ratios between two labels. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "opts.h"
#include "opts_common.h"
#include "report.h"
#include "results.h"
#include "banned.h"

const char cmd_results_usage[] =
	"usage: linerate results [--results FILE] [--json]\n"
	"       linerate results --compare A B [--results FILE] [--json]\n"
	"\n"
	"List the runs saved with --save LABEL by bench, send, get and doctor:\n"
	"id, time, label, command, direction (from this end), far end, MB/s\n"
	"(10^6 bytes/s), CPU seconds per GB here and there, cipher. The file:\n"
	"--results FILE, else $XDG_DATA_HOME/linerate/results.jsonl, else\n"
	"~/.local/share/linerate/results.jsonl (one JSON object a line). A line\n"
	"that is not a saved run (cut short, foreign, holding a NUL byte) is\n"
	"named and skipped.\n"
	"\n"
	"      --compare A B    per command and direction, the median MB/s of\n"
	"                       the runs labelled A and of those labelled B,\n"
	"                       and B/A\n"
	"      --results FILE   the results file to read\n"
	"      --json           a JSON array of the saved runs (with --compare,\n"
	"                       one object: a, b and the groups)\n"
	"  -h, --help           this text\n"
	"\n"
	"Exit status: 0 done, 1 no run (or no label to compare), 2 usage "
	"error.\n";

enum { OPT_COMPARE = 0x100, OPT_JSON };

static const struct option long_opts[] = {
	{ "compare", required_argument, NULL, OPT_COMPARE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ "results", required_argument, NULL, RESULTS_OPT_FILE },
	{ NULL, 0, NULL, 0 },
};

#define RESULTS_SHORTS "h"

const struct cmd_opts cmd_results_opts = { NULL, RESULTS_SHORTS, long_opts };

struct results_cli {
	struct results_opts ro;
	const char *a, *b; /* --compare A B */
	bool json;
};

static int results_parse(int argc, char **argv, struct results_cli *o,
			 struct lr_err *err)
{
	int c, r;

	memset(o, 0, sizeof(*o));
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":" RESULTS_SHORTS, long_opts,
				NULL)) != -1) {
		if (c == 'h')
			return 1;
		if (c == OPT_COMPARE) {
			o->a = optarg;
			continue;
		}
		if (c == OPT_JSON) {
			o->json = true;
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
	if (o->a && optind < argc)
		o->b = argv[optind++];
	else if (o->a)
		return lr_err_set(err, -EINVAL, "--compare A B: two labels");
	if (optind < argc)
		return lr_err_set(err, -EINVAL, "unexpected argument '%s'",
				  argv[optind]);
	return 0;
}

int cmd_results(int argc, char **argv)
{
	struct results_cli o;
	struct lr_err err = { 0 };
	char path[PATH_MAX], *text = NULL;
	int r = results_parse(argc, argv, &o, &err);

	if (r == 1) {
		fputs(cmd_results_usage, stdout);
		return EXIT_OK;
	}
	if (r) {
		fprintf(stderr,
			"linerate results: %s\nTry 'linerate results "
			"--help'.\n",
			err.msg);
		return EXIT_USAGE;
	}
	r = results_path(&o.ro, path, sizeof(path), &err);
	if (!r)
		r = results_read(path, &text, &err);
	if (r) {
		fprintf(stderr, "linerate results: %s\n", err.msg);
		return EXIT_RUNTIME;
	}
	if (o.a)
		r = report_saved_compare(stdout, stderr, path, text, o.a, o.b,
					 o.json);
	else
		r = report_saved_list(stdout, stderr, path, text, o.json);
	free(text);
	return r ? EXIT_RUNTIME : EXIT_OK;
}
