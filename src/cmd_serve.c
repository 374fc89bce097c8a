// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"
#include "crypto.h"
#include "cmds.h"
#include "opts.h"
#include "report.h"
#include "server.h"
#include "banned.h"

const char cmd_serve_usage[] =
	"usage: linerate serve [options]\n"
	"\n"
	"Answer `linerate bench` clients (several tests at once) and, with\n"
	"--root, `linerate send` and `linerate get`.\n"
	"\n"
	"  -p, --port PORT            port to listen on (default 7350; 0 = any)\n"
	"  -B, --bind ADDR            listen on ADDR only (default: all, IPv4+IPv6)\n"
	"  -4, --ipv4 / -6, --ipv6    only that address family\n"
	"  -1, --once                 serve one test, then exit with its status\n"
	"      --max-tests N          tests at once before answering busy (default 4)\n"
	"      --max-duration SEC     longest test accepted (default 60)\n"
	"      --handshake-timeout SEC  time a new connection has to identify\n"
	"                             itself (default 5)\n"
	"      --token-file FILE      require this token (from `linerate token`)\n"
	"                             of every client, bench tests included\n"
	"      --allow-plaintext      accept clients asking for --cipher none\n"
	"      --root DIR             accept pushes (`linerate send`) into DIR and\n"
	"                             serve pulls (`linerate get`) from it; needs\n"
	"                             --token-file\n"
	"      --read-only            with --root: serve pulls, refuse pushes\n"
	"  -h, --help                 this text\n"
	"\n"
	"One log line per test and per rejected connection goes to standard error.\n"
	"Exit status: 0 success, 1 failure, 2 usage error.\n";

struct serve_opts {
	struct server_opts s;
	const char *token_file;
	const char *root;
	uint8_t psk[CRYPTO_KEY_LEN];
};

enum {
	OPT_MAX_TESTS = 256,
	OPT_MAX_DURATION,
	OPT_HANDSHAKE,
	OPT_TOKEN_FILE,
	OPT_ALLOW_PLAINTEXT,
	OPT_ROOT,
	OPT_READ_ONLY,
};

static const struct option long_opts[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "bind", required_argument, NULL, 'B' },
	{ "ipv4", no_argument, NULL, '4' },
	{ "ipv6", no_argument, NULL, '6' },
	{ "once", no_argument, NULL, '1' },
	{ "max-tests", required_argument, NULL, OPT_MAX_TESTS },
	{ "max-duration", required_argument, NULL, OPT_MAX_DURATION },
	{ "handshake-timeout", required_argument, NULL, OPT_HANDSHAKE },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "allow-plaintext", no_argument, NULL, OPT_ALLOW_PLAINTEXT },
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "read-only", no_argument, NULL, OPT_READ_ONLY },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The signal handler's only way to reach the server. */
static struct server *volatile the_server;

static void on_signal(int sig)
{
	(void)sig;
	if (the_server)
		server_stop(the_server);
}

static void on_event(void *ctx, const struct server_event *ev)
{
	(void)ctx;
	report_server_event(stdout, stderr, ev);
}

static int serve_parse(int argc, char **argv, struct serve_opts *o,
		       struct lr_err *err)
{
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->s.port = BENCH_DEFAULT_PORT;
	o->s.family = AF_UNSPEC;
	o->s.max_tests = SERVER_DEFAULT_MAX_TESTS;
	o->s.max_duration_ms = SERVER_DEFAULT_MAX_DURATION_MS;
	o->s.handshake_ms = SERVER_DEFAULT_HANDSHAKE_MS;
	o->s.rootfd = -1;
	o->s.outfd = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":p:B:461h", long_opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'p':
			if (opts_uint("-p", optarg, 0, 65535, &v, err))
				return -EINVAL;
			o->s.port = (uint16_t)v;
			break;
		case 'B': o->s.bind_addr = optarg; break;
		case '4': o->s.family = AF_INET; break;
		case '6': o->s.family = AF_INET6; break;
		case '1': o->s.once = true; break;
		case OPT_MAX_TESTS:
			if (opts_uint("--max-tests", optarg, 1, 64, &v, err))
				return -EINVAL;
			o->s.max_tests = (unsigned)v;
			break;
		case OPT_MAX_DURATION:
			if (opts_ms("--max-duration", optarg, 1000,
				    PROTO_MAX_DURATION_MS,
				    &o->s.max_duration_ms, err))
				return -EINVAL;
			break;
		case OPT_HANDSHAKE:
			if (opts_ms("--handshake-timeout", optarg, 100, 600000,
				    &v, err))
				return -EINVAL;
			o->s.handshake_ms = (int)v;
			break;
		case OPT_TOKEN_FILE: o->token_file = optarg; break;
		case OPT_ALLOW_PLAINTEXT: o->s.allow_plaintext = true; break;
		case OPT_ROOT: o->root = optarg; break;
		case OPT_READ_ONLY: o->s.read_only = true; break;
		case 'h': return 1;
		default: return opts_getopt_error(c, argv, err);
		}
	}
	if (optind != argc)
		return lr_err_set(err, -EINVAL, "unexpected argument '%s'",
				  argv[optind]);
	return 0;
}

/* Tests at once times streams needs many descriptors: raise the soft
 * limit to the hard one. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int cmd_serve(int argc, char **argv)
{
	struct server_callbacks cb = { .event = on_event };
	struct sigaction sa;
	struct serve_opts o;
	struct lr_err err = { 0 };
	struct server *srv;
	int r;

	r = serve_parse(argc, argv, &o, &err);
	if (r == 1) {
		fputs(cmd_serve_usage, stdout);
		return EXIT_OK;
	}
	if (!r && o.token_file) {
		bool have;

		r = opts_token_psk(o.token_file, false, o.psk, &have, &err);
		o.s.psk = o.psk;
	}
	if (!r && o.s.allow_plaintext && !o.s.psk)
		r = lr_err_set(&err, -EINVAL,
			       "--allow-plaintext needs "
			       "--token-file: without a token every test is "
			       "in clear anyway");
	if (!r && o.s.read_only && !o.root)
		r = lr_err_set(&err, -EINVAL, "--read-only needs --root");
	if (!r && o.root && !o.s.psk)
		r = lr_err_set(&err, -EINVAL,
			       "--root needs --token-file: files are only "
			       "ever written for a client that proves it holds "
			       "the token");
	if (!r && o.root) {
		o.s.rootfd = open(o.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (o.s.rootfd < 0)
			r = lr_err_setc(&err, -errno, "--root %s", o.root);
	}
	if (r) {
		fprintf(stderr,
			"linerate serve: %s\nTry 'linerate serve "
			"--help'.\n",
			err.msg);
		return EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	r = server_new(&o.s, &cb, &srv, &err);
	if (r) {
		fprintf(stderr, "linerate serve: %s\n", err.msg);
		return EXIT_RUNTIME;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	the_server = srv;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	r = server_run(srv, &err);
	if (r && err.msg[0])
		fprintf(stderr, "linerate serve: %s\n", err.msg);
	the_server = NULL;
	server_free(srv);
	if (o.s.rootfd >= 0)
		close(o.s.rootfd);
	return r ? EXIT_RUNTIME : EXIT_OK;
}
