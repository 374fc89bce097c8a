/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_SSHCLI_H
#define LINERATE_SSHCLI_H

/*
 * The ssh mode of the commands (docs/linerate.1, "THE FAR END OVER
 * SSH"): the near end starts linerate on the far machine through ssh and
 * reads its line; the far end listens, says where and with which token,
 * and lives as long as ssh's standard input stays open.
 */

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/relay.h"
#include "core/remote.h"
#include "core/selfcopy.h"
#include "core/ssh.h"

/* what the near end was told: -e, --remote-path, --no-ssh */
struct sshcli_opts {
	const char *rsh;	    /* -e/--rsh CMD; NULL = "ssh" */
	const char *remote_path;    /* --remote-path; NULL = "linerate" */
	bool no_ssh;		    /* --no-ssh */
	bool via_ssh;		    /* --via-ssh: the data through ssh too */
	bool copy_self;		    /* --copy-self[=FILE] */
	const char *copy_self_file; /* its FILE; NULL: found (selfcopy.h) */
};

/* Their ids in a command's option table (above any command's own) and
 * the table's entries: { "rsh", 'e' }, { "remote-path" }, { "no-ssh" },
 * { "via-ssh" }, { "copy-self" }. */
enum {
	SSHCLI_OPT_REMOTE_PATH = 0x5300,
	SSHCLI_OPT_NO_SSH,
	SSHCLI_OPT_VIA_SSH,
	SSHCLI_OPT_COPY_SELF,
};
/* clang-format off */
#define SSHCLI_LONG_OPTIONS                                              \
	{ "rsh", required_argument, NULL, 'e' },                         \
	{ "remote-path", required_argument, NULL, SSHCLI_OPT_REMOTE_PATH }, \
	{ "no-ssh", no_argument, NULL, SSHCLI_OPT_NO_SSH },              \
	{ "via-ssh", no_argument, NULL, SSHCLI_OPT_VIA_SSH },            \
	{ "copy-self", optional_argument, NULL, SSHCLI_OPT_COPY_SELF }
/* clang-format on */

/* One of those options (c: getopt's value, arg its value): 0 when it was
 * one, 1 when not. */
int sshcli_option(int c, const char *arg, struct sshcli_opts *o);

/* Whether the far end starts over ssh: USER@, -e, --via-ssh or
 * --copy-self asks for it (not with --no-ssh, nor with a token file: an error in err). 1 yes,
 * 0 no. */
int sshcli_wanted(const struct sshcli_opts *o, const struct remote_addr *ra,
		  bool token_file, struct lr_err *err);

/* The near end, once started. */
struct sshcli {
	struct ssh_far far;
	struct ssh_boot boot;
	char host[REMOTE_MAX_HOST + 1]; /* for messages */
	bool started;
	/* the far end serves one session and then ends by itself (recv
	 * --ssh); else it ends when its lifeline closes (serve --ssh). Set
	 * after sshcli_start, which clears the struct */
	bool ends_itself;
	/* where this side connects: the far end's address and port, or,
	 * when they cannot be reached (or --via-ssh), the relay's loopback
	 * port, which carries the connections through ssh */
	char addr[SSH_ADDR_MAX];
	uint16_t port;
	struct relay *relay; /* NULL: direct */
	pthread_t relay_thread;
	int relay_err; /* relay_run's, read once the thread is joined */
};

/* How long the far end may take to say where it listens: ssh's login,
 * prompts included. */
#define SSHCLI_BOOT_MS 120000
/* and the direct connection to it */
#define SSHCLI_CONNECT_MS 2000
/* and its own end, once the work is done */
#define SSHCLI_LINGER_MS 10000

/*
 * Start `REMOTE_PATH ARGS...` on ra's host through ssh and wait for its
 * line: far_args are words for the far shell, already quoted where they
 * need it (ssh_shell_quote). ssh's prompts reach the terminal; what it
 * writes to standard error is kept until the far end is ready, then
 * copied to ours; psk gets the key of the far end's token. When the far
 * end's port cannot be reached within SSHCLI_CONNECT_MS (said in one
 * line), or with --via-ssh, the connections go through ssh: s->addr and
 * s->port say where to connect. 0 or an error in err (ssh's own message
 * in it).
 */
int sshcli_start(struct sshcli *s, const struct sshcli_opts *o,
		 const struct remote_addr *ra, const char *const far_args[],
		 uint8_t psk[SESSION_PSK_LEN], struct lr_err *err);

/* Through the relay, the host whose route is the run's link: the far
 * end's address as it told it (an ssh alias resolves nowhere else), else
 * the host as typed; NULL when the connections go direct (their own
 * link is the one). */
const char *sshcli_link_host(const struct sshcli *s,
			     const struct remote_addr *ra);

/*
 * End the far end (its lifeline closed) and wait for it. ok: this side's
 * work succeeded. 0 when the far end ended well; else its failure in err
 * (when err has no message yet) and -EPIPE.
 */
int sshcli_finish(struct sshcli *s, bool ok, struct lr_err *err);

/* The far end: the address SSH_CONNECTION says this side has. */
int sshcli_far_addr(char *addr, unsigned cap, struct lr_err *err);

/* The far end is listening: its line on standard output (then standard
 * output goes to standard error: nothing else may travel there), and a
 * thread that ends the process (SIGTERM) when standard input closes; when
 * the near end asks, that thread carries the connections to addr:port
 * through standard input and output first (relay.h). */
int sshcli_far_ready(const char *addr, uint16_t port, const char *token);

/* The far end is done: what it said on its connections has left through
 * ssh (when relayed), within a few seconds. */
void sshcli_far_done(void);

#endif
