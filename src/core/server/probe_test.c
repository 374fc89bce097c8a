// SPDX-License-Identifier: MIT
/* doctor's probe on linerate's server. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor.h"
#include "fsio.h"
#include "server_int.h"
#include "banned.h"

/* linerate doctor's questions: facts, ciphers, a disk write in the root. */
int server__probe_test(struct server_test *t, uint8_t *buf, uint32_t len,
		       char *why, size_t cap)
{
	struct server *srv = t->srv;
	struct proto_probe_request req;
	struct proto_probe_result *res;
	struct proto_buf b;
	const char *bad = NULL;
	int probe_root, r;

	if (proto_decode_probe_request(buf, len, &req) ||
	    (req.dir[0] && fsio_path_check(req.dir, strlen(req.dir), &bad))) {
		snprintf(why, cap, "malformed PROBE_REQUEST%s%s",
			 bad ? ": " : "", bad ? bad : "");
		server__send_error(&t->cc, PROTO_ERR_BAD_REQUEST, "%s", why);
		return LR_EBADMSG;
	}
	if (!srv->o.psk || !t->cc.secure) {
		snprintf(why, cap,
			 "linerate doctor needs a server started with "
			 "--token-file, and a client holding that token");
		server__send_error(&t->cc, PROTO_ERR_AUTH, "%s", why);
		return LR_EAUTH;
	}
	res = malloc(sizeof(*res));
	if (!res) {
		snprintf(why, cap, "out of memory");
		server__send_error(&t->cc, PROTO_ERR_INTERNAL, "%s", why);
		return -ENOMEM;
	}
	/* the root is recv's DIR when it is not there yet: no disk facts
	 * until a transfer makes it (never its parent's) */
	probe_root = srv->o.root_sub ? fsio_open_dir(srv->o.rootfd,
						     srv->o.root_sub, false, 0)
				     : srv->o.rootfd;
	doctor_probe_answer(&req, probe_root < 0 ? -1 : probe_root, res);
	if (srv->o.root_sub && probe_root >= 0)
		close(probe_root);
	proto_buf_init(&b, buf, PROTO_MAX_BODY);
	r = proto_encode_probe_result(&b, res);
	if (!r)
		r = conn_send_msg(&t->cc, buf, b.len,
				  net_now_ms() + SERVER_CTRL_TIMEOUT_MS);
	if (r)
		snprintf(why, cap, "sending PROBE_RESULT: %s", lr_strerror(r));
	free(res);
	return r;
}
