// SPDX-License-Identifier: MIT
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cmds.h"
#include "core/cipher.h"
#include "opts.h"
#include "report.h"
#include "banned.h"

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;
	const char *summary;
};

static const struct cmd cmds[] = {
	{ "bench", cmd_bench, cmd_bench_usage,
	  "measure TCP throughput against a linerate server (iperf3-style)" },
	{ "crypto", cmd_crypto, cmd_crypto_usage,
	  "measure this CPU's cipher speed and what auto picks" },
	{ "disk", cmd_disk, cmd_disk_usage,
	  "measure sequential write and read speed of a file system's disk" },
	{ "doctor", cmd_doctor, cmd_doctor_usage,
	  "measure each stage of a transfer and name the bottleneck" },
	{ "gen", cmd_gen, cmd_gen_usage,
	  "write test data, incompressible or PCT% compressible" },
	{ "get", cmd_get, cmd_get_usage,
	  "pull files and directory trees from a linerate server" },
	{ "recv", cmd_recv, cmd_recv_usage,
	  "receive one transfer into a directory, with a fresh token" },
	{ "send", cmd_send, cmd_send_usage,
	  "push files and directory trees to linerate recv or serve" },
	{ "serve", cmd_serve, cmd_serve_usage,
	  "answer bench clients and serve files (--root) to send and get" },
	{ "token", cmd_token, cmd_token_usage,
	  "print a new token for serve --token-file and clients" },
};

static void usage(FILE *out)
{
	size_t i;

	fprintf(out,
		"usage: linerate <command> [options]\n\n"
		"linerate measures and moves data between your machines at "
		"line rate.\n\nCommands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(out, "  %-8s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(out, "  %-8s %s\n  %-8s %s\n\n", "help", "help [COMMAND]",
		"version", "print the version");
	fprintf(out, "`linerate COMMAND --help` shows a command's options; "
		     "`man linerate` has the rest.\n");
}

static const struct cmd *find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

/* Standard input, output and error open (on /dev/null when they are not):
 * a pipe or socket made later must never become one of them. */
static void std_fds_open(void)
{
	int fd;

	while ((fd = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0 && fd <= 2)
		fcntl(fd, F_SETFD, 0); /* keep it: it is 0, 1 or 2 now */
	if (fd > 2)
		close(fd);
}

int main(int argc, char **argv)
{
	const struct cmd *c;

	std_fds_open();
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") ||
	    !strcmp(argv[1], "version")) {
		printf("linerate %s (%s)\n", LINERATE_VERSION,
		       crypto_library_version());
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		/* `help --help` and `help help`: this list */
		if (argc > 2 && strcmp(argv[2], "--help") &&
		    strcmp(argv[2], "-h") && strcmp(argv[2], "help")) {
			c = find(argv[2]);
			if (!c) {
				fprintf(stderr,
					"linerate: unknown command "
					"'%s'\n",
					argv[2]);
				return EXIT_USAGE;
			}
			fputs(c->usage, stdout);
			return EXIT_OK;
		}
		usage(stdout);
		return EXIT_OK;
	}
	c = find(argv[1]);
	if (!c) {
		fprintf(stderr, "linerate: unknown command '%s'\n\n", argv[1]);
		usage(stderr);
		return EXIT_USAGE;
	}
	report_set_command(c->name);
	return c->fn(argc - 1, argv + 1);
}
