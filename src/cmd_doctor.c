// SPDX-License-Identifier: MIT
/* linerate doctor: each stage of a transfer measured, the bottleneck named. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cmds.h"
#include "core/cipher.h"
#include "core/doctor.h"
#include "core/token.h"
#include "opts.h"
#include "opts_common.h"
#include "report.h"
#include "banned.h"

const char cmd_doctor_usage[] =
	"usage: linerate doctor [options] HOST[:]\n"
	"\n"
	"Measure each stage of a transfer to a `linerate serve --root`\n"
	"server: source read on this side, the network both ways, the cipher\n"
	"on both CPUs, the destination disk (a test file in the server's root,\n"
	"removed afterwards), then a real transfer (verified,\n"
	"never given a name). Name the stage that limits, and the facts that\n"
	"explain it: link kind and speed, TCP ceiling, CPU governor and quota,\n"
	"socket buffers against the path, storage types.\n"
	"\n"
	"  -p, --port PORT       server port (default 7350)\n"
	"  -P, --parallel N      streams, as for a transfer (default 4)\n"
	"  -4, --ipv4 / -6, --ipv6  only that address family\n"
	"      --token-file FILE the server's token (else LINERATE_TOKEN,\n"
	"                        else a prompt)\n"
	"      --cipher NAME     auto (default), aes-256-gcm, chacha20-poly1305\n"
	"      --source FILE     read and send FILE (default: generated data)\n"
	"      --size SIZE       bytes for the disk test and the transfer\n"
	"                        (default 256M; at most 1G)\n"
	"  -t, --time SEC        seconds of each network direction (default 3)\n"
	"      --link-speed RATE the link's speed when /sys does not know it\n"
	"      --json            one JSON document\n"
	"  -h, --help            this text\n"
	"\n"
	"Exit status: 0 measured, 1 failure, 2 usage error.\n";

enum {
	OPT_SOURCE = 256,
	OPT_SIZE,
	OPT_LINK_SPEED,
	OPT_JSON,
};

static const struct opts_common_spec common_spec = {
	.take = OPTS_PORT | OPTS_PARALLEL | OPTS_FAMILY | OPTS_TOKEN |
		OPTS_CIPHER,
	.min_port = 1,
	.max_streams = DOCTOR_MAX_STREAMS,
};

static const struct option long_opts[] = {
	{ "time", required_argument, NULL, 't' },
	{ "source", required_argument, NULL, OPT_SOURCE },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "link-speed", required_argument, NULL, OPT_LINK_SPEED },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct doctor_cli {
	struct doctor_opts d;
	struct opts_common net;
	bool json, have_token;
	char hostbuf[256];
	uint8_t psk[SESSION_PSK_LEN];
};

static _Atomic bool cancelled;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&cancelled, true);
}

static void on_stage(void *ctx, const char *what)
{
	const struct doctor_cli *o = ctx;

	if (!o->json) {
		fprintf(stderr, "linerate doctor: measuring %s...\n", what);
		fflush(stderr);
	}
}

/* One of doctor's own options. */
static int own_option(int c, char **argv, void *ctx, struct lr_err *err)
{
	struct doctor_cli *o = ctx;
	switch (c) {
	case 't': return opts_ms("-t", optarg, 500, 60000, &o->d.net_ms, err);
	case OPT_SOURCE: o->d.source = optarg; return 0;
	case OPT_SIZE:
		return opts_bytes("--size", optarg, 1u << 20, DOCTOR_MAX_DISK,
				  &o->d.size, err);
	case OPT_LINK_SPEED:
		return opts_rate("--link-speed", optarg, 1000, UINT64_MAX / 2,
				 &o->d.link_speed_bps, err);
	case OPT_JSON: o->json = true; return 0;
	case 'h': return 1;
	default: return opts_getopt_error(c, argv, err);
	}
}

/* HOST, HOST: or [v6]:, nothing below the root yet. */
static int doctor_host(const char *arg, struct doctor_cli *o,
		       struct lr_err *err)
{
	const char *colon;

	if (arg[0] == '[') {
		const char *end = strchr(arg, ']');

		if (!end || (end[1] && end[1] != ':'))
			return lr_err_set(err, -EINVAL, "'%s': write [IPv6]",
					  arg);
		snprintf(o->hostbuf, sizeof(o->hostbuf), "%.*s",
			 (int)(end - arg - 1), arg + 1);
		colon = end[1] ? end + 1 : NULL;
	} else {
		colon = strchr(arg, ':');
		snprintf(o->hostbuf, sizeof(o->hostbuf), "%.*s",
			 colon ? (int)(colon - arg) : (int)strlen(arg), arg);
	}
	if (colon && colon[1])
		return lr_err_set(err, -EINVAL,
				  "a DIR below the root is not supported yet: "
				  "write HOST or HOST:");
	o->d.host = o->hostbuf;
	return 0;
}

static int doctor_parse(int argc, char **argv, struct doctor_cli *o,
			struct lr_err *err)
{
	int r;

	o->d.size = 256ull << 20;
	o->d.net_ms = 3000;
	o->d.cancel = &cancelled;
	r = opts_parse(&common_spec, "t:h", long_opts, own_option, o, argc,
		       argv, &o->net, err);
	if (r)
		return r;
	opts_common_addr(&o->net, LR_DEFAULT_PORT, &o->d.port, &o->d.family,
			 NULL);
	o->d.streams = o->net.streams ? o->net.streams : XFER_DEFAULT_STREAMS;
	if (argc - optind != 1)
		return lr_err_set(err, -EINVAL,
				  optind == argc ? "missing HOST"
						 : "one HOST[:] expected");
	return doctor_host(argv[optind], o, err);
}

/* The token (file, environment or a prompt) and the cipher asked for. */
static int doctor_security(struct doctor_cli *o, struct lr_err *err)
{
	int r;

	r = opts_token_psk(o->net.token_file, true, o->psk, &o->have_token,
			   err);
	if (!r && !o->have_token && opts_prompt_token("Token: ", o->psk, err))
		r = lr_err_set(err, -EINVAL,
			       "no token: set LINERATE_TOKEN or use "
			       "--token-file");
	o->d.psk = o->psk;
	return r ?: opts_cipher_wish(&o->net, false, &o->d.cipher_wish, err);
}

int cmd_doctor(int argc, char **argv)
{
	struct doctor_callbacks cb = { .stage = on_stage };
	struct doctor_report *rep;
	struct lr_err err = { 0 };
	struct sigaction sa;
	struct doctor_cli o;
	int r;

	memset(&o, 0, sizeof(o));
	r = doctor_parse(argc, argv, &o, &err);
	if (r == 1) {
		fputs(cmd_doctor_usage, stdout);
		return EXIT_OK;
	}
	if (!r)
		r = doctor_security(&o, &err);
	if (r) {
		fprintf(stderr,
			"linerate doctor: %s\nTry 'linerate doctor --help'.\n",
			err.msg);
		return EXIT_USAGE;
	}
	rep = calloc(1, sizeof(*rep));
	if (!rep) {
		fprintf(stderr, "linerate: out of memory\n");
		return EXIT_RUNTIME;
	}
	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	cb.ctx = &o;
	r = doctor_run(&o.d, &cb, rep, &err);
	session_token_wipe(o.psk, sizeof(o.psk));
	if (o.json)
		report_doctor_json(stdout, rep, r ? err.msg : NULL);
	else if (r)
		fprintf(stderr, "linerate doctor: %s\n", err.msg);
	else
		report_doctor_human(stdout, rep);
	free(rep);
	return r ? EXIT_RUNTIME : EXIT_OK;
}
