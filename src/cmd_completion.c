// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "opts.h"
#include "report.h"
#include "banned.h"

const char cmd_completion_usage[] =
	"usage: linerate completion bash|zsh|list\n"
	"\n"
	"Print the completion script of a shell, written from the option\n"
	"tables the commands' parsers read:\n"
	"  bash   for bash-completion: save it as\n"
	"         ~/.local/share/bash-completion/completions/linerate, or\n"
	"         run `source <(linerate completion bash)` in ~/.bashrc\n"
	"  zsh    save it as _linerate in a directory of $fpath\n"
	"  list   every command's options, one per line: command, letter,\n"
	"         long name and whether it takes a value, tab-separated\n"
	"`meson install` puts both scripts where the shells look.\n";

int cmd_completion(int argc, char **argv)
{
	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(cmd_completion_usage, stdout);
		return EXIT_OK;
	}
	if (argc == 2 && !strcmp(argv[1], "bash")) {
		report_completion_bash(stdout);
		return EXIT_OK;
	}
	if (argc == 2 && !strcmp(argv[1], "zsh")) {
		report_completion_zsh(stdout);
		return EXIT_OK;
	}
	if (argc == 2 && !strcmp(argv[1], "list")) {
		report_completion_list(stdout);
		return EXIT_OK;
	}
	fprintf(stderr,
		"%s: %s: say bash, zsh or list\n"
		"Try 'linerate completion --help'.\n",
		report_prog(), argc < 2 ? "no shell named" : "unknown shell");
	return EXIT_USAGE;
}
