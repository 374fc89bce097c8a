// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "opts.h"
#include "core/token.h"
#include "banned.h"

const char cmd_token_usage[] =
	"usage: linerate token\n"
	"\n"
	"Print a new token: 160 bits from the system's random source, in\n"
	"groups of four letters and digits. Give it to `linerate serve\n"
	"--token-file FILE` and to clients through LINERATE_TOKEN or\n"
	"--token-file; never on a command line, where other users can see it.\n";

int cmd_token(int argc, char **argv)
{
	char tok[SESSION_TOKEN_CHARS];

	if (argc > 1 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(cmd_token_usage, stdout);
		return EXIT_OK;
	}
	if (argc > 1) {
		fprintf(stderr,
			"linerate token: unexpected argument '%s'\n"
			"Try 'linerate token --help'.\n",
			argv[1]);
		return EXIT_USAGE;
	}
	if (session_token_new(tok)) {
		fprintf(stderr, "linerate token: no random bytes from the "
				"system\n");
		return EXIT_RUNTIME;
	}
	printf("%s\n", tok);
	return EXIT_OK;
}
