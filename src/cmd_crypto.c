// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "cmds.h"
#include "core/cryptobench.h"
#include "opts.h"
#include "opts_common.h"
#include "report.h"
#include "banned.h"

const char cmd_crypto_usage[] =
	"usage: linerate crypto [--json] [--seconds S]\n"
	"\n"
	"Measure, on one core, how fast this machine seals and opens records\n"
	"with each cipher linerate can use (AES-256-GCM, ChaCha20-Poly1305), at\n"
	"512 KiB (bench's record size) and 16 KiB; show the CPU features that\n"
	"matter, the cores a 1 GbE link needs each way, and what `--cipher auto`\n"
	"picks here and why.\n"
	"\n"
	"  -s, --seconds S   seconds per measurement, 0.05 to 10 (default 0.5;\n"
	"                    500ms and 2s work too)\n"
	"  -J, --json        one JSON document\n"
	"  -h, --help        this text\n"
	"\n"
	"MB/s are 10^6 bytes per second.\n"
	"Exit status: 0 success, 1 the measurement failed, 2 usage error.\n";

struct crypto_cli_opts {
	uint64_t ms;
	bool json;
};

static const struct option long_opts[] = {
	{ "seconds", required_argument, NULL, 's' },
	{ "json", no_argument, NULL, 'J' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The letters of long_opts and the short-only ones, getopt's syntax. */
#define CRYPTO_SHORTS "s:Jh"

const struct cmd_opts cmd_crypto_opts = { NULL, CRYPTO_SHORTS, long_opts };

/* 0, 1 for --help, or a negative errno with err filled. */
static int crypto_parse(int argc, char **argv, struct crypto_cli_opts *o,
			struct lr_err *err)
{
	int c;

	o->ms = 500;
	o->json = false;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":" CRYPTO_SHORTS, long_opts,
				NULL)) != -1) {
		switch (c) {
		case 's':
			if (opts_ms("--seconds", optarg, 50, 10000, &o->ms,
				    err))
				return -EINVAL;
			break;
		case 'J': o->json = true; break;
		case 'h': return 1;
		default: return opts_getopt_error(c, argv, err);
		}
	}
	if (optind != argc)
		return lr_err_set(err, -EINVAL, "unexpected argument '%s'",
				  argv[optind]);
	return 0;
}

int cmd_crypto(int argc, char **argv)
{
	struct crypto_cli_opts o;
	struct cryptobench_cpu cpu;
	struct cryptobench_result res;
	struct lr_err err = { 0 };
	int r;

	r = crypto_parse(argc, argv, &o, &err);
	if (r == 1) {
		fputs(cmd_crypto_usage, stdout);
		return EXIT_OK;
	}
	if (r) {
		fprintf(stderr,
			"linerate crypto: %s\n"
			"Try 'linerate crypto --help'.\n",
			err.msg);
		return EXIT_USAGE;
	}
	cryptobench_cpu_probe(&cpu);
	r = cryptobench_run(o.ms, &res, &err);
	if (r) {
		if (o.json)
			report_crypto_json_error(stdout, err.msg);
		fprintf(stderr, "%s: %s\n", report_prog(), err.msg);
		return EXIT_RUNTIME;
	}
	if (!o.json) {
		report_crypto_human(stdout, &cpu, &res);
		return EXIT_OK;
	}
	if (report_crypto_json(stdout, &cpu, &res)) {
		fprintf(stderr, "%s: out of memory\n", report_prog());
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}
