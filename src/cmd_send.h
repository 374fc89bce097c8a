// SPDX-License-Identifier: MIT
/* linerate send and get (cmd_send.c): their options, shared with the
 * start of the far end over ssh (cmd_send_ssh.c). */
#ifndef LINERATE_CMD_SEND_H
#define LINERATE_CMD_SEND_H

#include <stdbool.h>
#include <stdint.h>

#include "core/filter.h"
#include "core/token.h"
#include "core/xfer.h"
#include "opts_common.h"
#include "results.h"
#include "sshcli.h"

struct send_cli {
	bool pull;
	struct xfer_client_opts c;
	struct opts_common net;
	bool have_token, json, quiet, verbose, stats;
	bool force_tty;		  /* get -: binary data to a terminal too */
	bool own_connect_timeout; /* --connect-timeout given */
	int progress; /* -1 --no-progress, 1 --progress, 0 neither */
	uint64_t link_speed;
	char hostbuf[256];
	struct remote_addr ra;	  /* the last operand (send) or the first */
	struct sshcli_opts ssh;	  /* -e, --remote-path, --no-ssh */
	struct results_opts save; /* --save LABEL, --results FILE */
	bool via_ssh;		  /* the far end started over ssh */
	const char *raw[XFER_MAX_PATHS]; /* get: the paths as typed */
	char root[XFER_MAX_PATH + 1];	 /* get over ssh: the far root */
	char names[XFER_MAX_PATHS][XFER_MAX_PATH + 1]; /* and its paths */
	const char *paths[XFER_MAX_PATHS];
	const char *dest;
	char destbuf[XFER_MAX_PATH + 1];  /* DIR of `send - HOST:DIR/NAME` */
	char destname[XFER_MAX_PATH + 1]; /* get: DEST when it is missing */
	struct lr_filter filter;	  /* --exclude, --include */
	const char *files_from;		  /* --files-from FILE */
	bool from0, recurse;		  /* --from0, -r */
	uint8_t psk[SESSION_PSK_LEN];
};

/* A remote path without the leading "./" and slashes a user may type;
 * "" is the root. */
const char *send_clean_remote(const char *p);
/* Whether the far end starts over ssh: USER@ or -e asks for it. */
int send_want_ssh(struct send_cli *o, struct lr_err *err);
/* Start the far end over ssh and point the client at it. */
int send_ssh_begin(struct send_cli *o, struct sshcli *sc, struct lr_err *err);
/* Nothing listens on HOST's port: the far end starts over ssh (said in
 * one line), unless a port, --no-ssh or a path says otherwise. */
bool send_fall_back(struct send_cli *o);

#endif
