// SPDX-License-Identifier: MIT
/* The subcommands, in one table: main dispatches through it, `completion`
 * writes the shells' scripts from it. */
#include <string.h>

#include "cmd_list.h"
#include "cmds.h"
#include "banned.h"

static const struct cmd cmds[] = {
	{ "bench", cmd_bench, cmd_bench_usage,
	  "measure TCP throughput against a linerate server (iperf3-style)",
	  &cmd_bench_opts },
	{ "completion", cmd_completion, cmd_completion_usage,
	  "print the bash or zsh completion script", NULL },
	{ "crypto", cmd_crypto, cmd_crypto_usage,
	  "measure this CPU's cipher speed and what auto picks",
	  &cmd_crypto_opts },
	{ "disk", cmd_disk, cmd_disk_usage,
	  "measure sequential write and read speed of a file system's disk",
	  &cmd_disk_opts },
	{ "doctor", cmd_doctor, cmd_doctor_usage,
	  "measure each stage of a transfer and name the bottleneck",
	  &cmd_doctor_opts },
	{ "gen", cmd_gen, cmd_gen_usage,
	  "write test data, incompressible or PCT% compressible",
	  &cmd_gen_opts },
	{ "get", cmd_get, cmd_get_usage,
	  "pull files and directory trees from a linerate server",
	  &cmd_send_opts },
#ifdef LINERATE_PLOT
	{ "plot", cmd_plot, cmd_plot_usage,
	  "draw runs as SVG or HTML: throughput over time, labels compared",
	  &cmd_plot_opts },
#endif
	{ "recv", cmd_recv, cmd_recv_usage,
	  "receive one transfer into a directory, with a fresh token",
	  &cmd_recv_opts },
	{ "results", cmd_results, cmd_results_usage,
	  "list the runs saved with --save, compare two labels",
	  &cmd_results_opts },
	{ "send", cmd_send, cmd_send_usage,
	  "push files and directory trees to linerate recv or serve",
	  &cmd_send_opts },
	{ "serve", cmd_serve, cmd_serve_usage,
	  "answer bench clients and serve files (--root) to send and get",
	  &cmd_serve_opts },
	{ "token", cmd_token, cmd_token_usage,
	  "print a new token for serve --token-file and clients", NULL },
};

const struct cmd *cmd_list(size_t *n)
{
	*n = sizeof(cmds) / sizeof(cmds[0]);
	return cmds;
}

const struct cmd *cmd_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}
