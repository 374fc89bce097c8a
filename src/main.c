// SPDX-License-Identifier: MIT
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cmd_list.h"
#include "core/cipher.h"
#include "opts.h"
#include "report.h"
#include "banned.h"

static void usage(FILE *out)
{
	const struct cmd *cmds;
	size_t i, n;

	cmds = cmd_list(&n);
	fprintf(out,
		"usage: linerate <command> [options]\n\n"
		"linerate measures and moves data between your machines at "
		"line rate.\n\nCommands:\n");
	for (i = 0; i < n; i++)
		fprintf(out, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(out, "  %-10s %s\n  %-10s %s\n\n", "help", "help [COMMAND]",
		"version", "print the version");
	fprintf(out, "`linerate COMMAND --help` shows a command's options; "
		     "`man linerate` has the rest.\n");
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
			c = cmd_find(argv[2]);
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
	c = cmd_find(argv[1]);
	if (!c) {
		fprintf(stderr, "linerate: unknown command '%s'\n\n", argv[1]);
		usage(stderr);
		return EXIT_USAGE;
	}
	report_set_command(c->name);
	return c->fn(argc - 1, argv + 1);
}
