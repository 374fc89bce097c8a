/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_CMD_LIST_H
#define LINERATE_CMD_LIST_H

#include <stddef.h>

struct cmd_opts;

/* One subcommand: its name, entry point, --help text, one-line summary
 * and option tables (NULL for one without options). */
struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;
	const char *summary;
	const struct cmd_opts *opts;
};

/* The subcommands in the order `linerate --help` lists them; *n their
 * count. help and version are main's, not in the list. */
const struct cmd *cmd_list(size_t *n);

/* The subcommand called name, or NULL. */
const struct cmd *cmd_find(const char *name);

#endif
