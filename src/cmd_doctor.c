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
	OPT_TOKEN_FILE = 256,
	OPT_CIPHER,
	OPT_SOURCE,
	OPT_SIZE,
	OPT_LINK_SPEED,
	OPT_JSON,
};

static const struct option long_opts[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "parallel", required_argument, NULL, 'P' },
	{ "ipv4", no_argument, NULL, '4' },
	{ "ipv6", no_argument, NULL, '6' },
	{ "time", required_argument, NULL, 't' },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "cipher", required_argument, NULL, OPT_CIPHER },
	{ "source", required_argument, NULL, OPT_SOURCE },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "link-speed", required_argument, NULL, OPT_LINK_SPEED },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct doctor_cli {
	struct doctor_opts d;
	const char *token_file, *cipher;
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

static int doctor_parse(int argc, char **argv, struct doctor_cli *o,
			struct lr_err *err)
{
	const char *arg, *colon;
	uint64_t v;
	int c;

	o->d.port = LINERATE_DEFAULT_PORT;
	o->d.family = AF_UNSPEC;
	o->d.streams = XFER_DEFAULT_STREAMS;
	o->d.size = 256ull << 20;
	o->d.net_ms = 3000;
	o->d.cancel = &cancelled;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":p:P:46t:h", long_opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'p':
			if (opts_uint("-p", optarg, 1, 65535, &v, err))
				return -EINVAL;
			o->d.port = (uint16_t)v;
			break;
		case 'P':
			if (opts_uint("-P", optarg, 1, DOCTOR_MAX_STREAMS, &v,
				      err))
				return -EINVAL;
			o->d.streams = (unsigned)v;
			break;
		case '4': o->d.family = AF_INET; break;
		case '6': o->d.family = AF_INET6; break;
		case 't':
			if (opts_ms("-t", optarg, 500, 60000, &o->d.net_ms,
				    err))
				return -EINVAL;
			break;
		case OPT_TOKEN_FILE: o->token_file = optarg; break;
		case OPT_CIPHER: o->cipher = optarg; break;
		case OPT_SOURCE: o->d.source = optarg; break;
		case OPT_SIZE:
			if (opts_bytes("--size", optarg, 1u << 20,
				       DOCTOR_MAX_DISK, &o->d.size, err))
				return -EINVAL;
			break;
		case OPT_LINK_SPEED:
			if (opts_rate("--link-speed", optarg, 1000,
				      UINT64_MAX / 2, &o->d.link_speed_bps,
				      err))
				return -EINVAL;
			break;
		case OPT_JSON: o->json = true; break;
		case 'h': return 1;
		default: return opts_getopt_error(c, argv, err);
		}
	}
	if (argc - optind != 1)
		return lr_err_set(err, -EINVAL,
				  optind == argc ? "missing HOST"
						 : "one HOST[:] expected");
	arg = argv[optind];
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

int cmd_doctor(int argc, char **argv)
{
	struct doctor_callbacks cb = { .stage = on_stage };
	struct doctor_report *rep;
	struct lr_err err = { 0 };
	struct sigaction sa;
	struct doctor_cli o;
	enum crypto_cipher ci;
	int r;

	memset(&o, 0, sizeof(o));
	r = doctor_parse(argc, argv, &o, &err);
	if (r == 1) {
		fputs(cmd_doctor_usage, stdout);
		return EXIT_OK;
	}
	if (!r)
		r = opts_token_psk(o.token_file, true, o.psk, &o.have_token,
				   &err);
	if (!r && !o.have_token) {
		r = opts_prompt_token("Token: ", o.psk, &err);
		if (r)
			r = lr_err_set(&err, -EINVAL,
				       "no token: set LINERATE_TOKEN or use "
				       "--token-file");
	}
	o.d.psk = o.psk;
	o.d.cipher_wish = CRYPTO_CIPHER_AUTO;
	if (!r && o.cipher && strcmp(o.cipher, "auto")) {
		if (crypto_cipher_parse(o.cipher, &ci) || ci == CRYPTO_NONE)
			r = lr_err_set(&err, -EINVAL,
				       "--cipher '%s': use auto, aes-256-gcm "
				       "or chacha20-poly1305",
				       o.cipher);
		else
			o.d.cipher_wish = (uint8_t)ci;
	}
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
