// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cmds.h"
#include "core/bench.h"
#include "core/server.h"
#include "core/token.h"
#include "core/units.h"
#include "core/xfer.h"
#include "opts.h"
#include "opts_common.h"
#include "outopts.h"
#include "report.h"
#include "sshcli.h"
#include "banned.h"

const char cmd_serve_usage[] =
	"usage: linerate serve [options]\n"
	"\n"
	"Answer `linerate bench` clients (several tests at once), stock iperf3\n"
	"clients (`iperf3 -c`, on TCP and UDP port 5201) and, with --root,\n"
	"`linerate send` and `linerate get`.\n"
	"\n"
	"  -p, --port PORT            port to listen on (default 7350; 0 = any)\n"
	"  -B, --bind ADDR            listen on ADDR only (default: all, IPv4+IPv6)\n"
	"  -4, --ipv4 / -6, --ipv6    only that address family\n"
	"  -1, --once                 serve one test, then exit with its status\n"
	"      --ssh                  the far end of get/bench/doctor over ssh:\n"
	"                             on the address ssh came in on, a fresh\n"
	"                             token on standard output, the end when\n"
	"                             standard input closes (run by ssh)\n"
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
	"      --allow-setid          with --root: accept pushes asking to keep\n"
	"                             setuid/setgid bits (send --keep-setid);\n"
	"                             refused otherwise\n"
	"      --allow-devices        with --root, as root: make the device\n"
	"                             nodes of pushes (send --devices, -D);\n"
	"                             each is refused otherwise\n"
	"      --partial-max-age AGE  with --root: remove the partial files of\n"
	"                             interrupted pushes (.NAME.lrpart and its\n"
	"                             .lrjournal) unchanged for longer than AGE\n"
	"                             (90s, 30m, 12h, 7d; default 7d; 0 = keep),\n"
	"                             at the start and every hour\n"
	"      --partial-max-size SIZE  with --root: then remove the oldest until\n"
	"                             all of them take at most SIZE (10G; default\n"
	"                             no cap). Files being written are kept\n"
	"      --list-partial         with --root: list the partial files below\n"
	"                             DIR and exit\n"
	"      --clean-partial        with --root: remove them (those not being\n"
	"                             written now) and exit\n"
	"      --iperf3-port PORT     answer iperf3 clients on PORT, TCP and UDP\n"
	"                             (default 5201; if 5201 is taken, a warning\n"
	"                             and linerate only; a PORT given here must\n"
	"                             be free). --max-tests, --max-duration and\n"
	"                             --handshake-timeout apply to them too.\n"
	"                             With --token-file, only when given: iperf3\n"
	"                             clients have no token to show\n"
	"      --no-iperf3            do not answer iperf3 clients\n"
	"  -f, --format F             test rates in the log as iperf3: k, m, g, t\n"
	"                             (bits/s) or K, M, G, T (bytes/s)\n"
	"      --logfile FILE         append the output and the log to FILE\n"
	"      --timestamps[=FMT]     start each line with the time\n"
	"                             (strftime's FMT; default '%c ')\n"
	"      --forceflush           write each line at once (into a pipe)\n"
	"  -V, --verbose              version and system at the start\n"
	"  -I, --pidfile FILE         this process's id in FILE while it\n"
	"                             runs; refused while another live one\n"
	"                             holds it\n"
	"  -h, --help                 this text\n"
	"\n"
	"SEC and AGE take a unit too: 500ms, 2s, 1m (minutes), 1h, 7d.\n"
	"One log line per test and per rejected connection goes to standard error.\n"
	"Exit status: 0 success, 1 failure, 2 usage error.\n";

struct serve_opts {
	struct server_opts s;
	struct opts_common net;
	struct outopts out; /* -f, --logfile, --timestamps, -V, -I */
	const char *root;
	uint8_t psk[SESSION_PSK_LEN];
	bool list_partial, clean_partial;
	bool partial_set;  /* --partial-max-age or --partial-max-size given */
	bool ip3;	   /* answer iperf3 clients */
	bool ip3_explicit; /* --iperf3-port given: failing to bind is fatal */
	uint16_t ip3_port;
	bool ssh;			 /* --ssh: started by ssh (sshcli.h) */
	char ssh_addr[SSH_ADDR_MAX];	 /* where ssh came in */
	char token[SESSION_TOKEN_CHARS]; /* --ssh: the fresh one */
};

enum {
	OPT_MAX_TESTS = 256,
	OPT_MAX_DURATION,
	OPT_HANDSHAKE,
	OPT_ALLOW_PLAINTEXT,
	OPT_ALLOW_SETID,
	OPT_ALLOW_DEVICES,
	OPT_ROOT,
	OPT_READ_ONLY,
	OPT_IPERF3_PORT,
	OPT_NO_IPERF3,
	OPT_PARTIAL_MAX_AGE,
	OPT_PARTIAL_MAX_SIZE,
	OPT_LIST_PARTIAL,
	OPT_CLEAN_PARTIAL,
	OPT_SSH,
};

/* Partial files unchanged this long go by default: a week, as an
 * interrupted push is usually re-run the same day. */
#define PARTIAL_DEFAULT_MAX_AGE_S (7 * 86400)

static const struct opts_common_spec common_spec = {
	.take = OPTS_PORT | OPTS_FAMILY | OPTS_BIND | OPTS_TOKEN,
	.min_port = 0, /* any free port */
};

static const struct option long_opts[] = {
	{ "once", no_argument, NULL, '1' },
	{ "max-tests", required_argument, NULL, OPT_MAX_TESTS },
	{ "max-duration", required_argument, NULL, OPT_MAX_DURATION },
	{ "handshake-timeout", required_argument, NULL, OPT_HANDSHAKE },
	{ "allow-plaintext", no_argument, NULL, OPT_ALLOW_PLAINTEXT },
	{ "allow-setid", no_argument, NULL, OPT_ALLOW_SETID },
	{ "allow-devices", no_argument, NULL, OPT_ALLOW_DEVICES },
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "read-only", no_argument, NULL, OPT_READ_ONLY },
	{ "iperf3-port", required_argument, NULL, OPT_IPERF3_PORT },
	{ "no-iperf3", no_argument, NULL, OPT_NO_IPERF3 },
	{ "partial-max-age", required_argument, NULL, OPT_PARTIAL_MAX_AGE },
	{ "partial-max-size", required_argument, NULL, OPT_PARTIAL_MAX_SIZE },
	{ "list-partial", no_argument, NULL, OPT_LIST_PARTIAL },
	{ "clean-partial", no_argument, NULL, OPT_CLEAN_PARTIAL },
	{ "ssh", no_argument, NULL, OPT_SSH },
	OUTOPTS_LONG_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The letters of long_opts and the short-only ones, getopt's syntax. */
#define SERVE_SHORTS "1h" OUTOPTS_SHORTS

const struct cmd_opts cmd_serve_opts = { &common_spec, SERVE_SHORTS,
					 long_opts };

/* The signal handler's only way to reach the servers. */
static struct server *volatile the_server;
static struct ip3srv *volatile the_ip3srv;

/* A stop asked before the servers ran (while starting). */
static volatile sig_atomic_t stop_asked;

static void on_signal(int sig)
{
	(void)sig;
	stop_asked = 1;
	if (the_server)
		server_stop(the_server);
	if (the_ip3srv)
		ip3srv_stop(the_ip3srv);
}

/* --get-server-output: the server's human report of an iperf3 test, in
 * a malloc'd string for the core to send. */
static char *render_ip3(void *ctx, const struct bench_result *res,
			const struct bench_interval *ivs, unsigned niv)
{
	struct bench_callbacks cb = { 0 };
	struct report *rp;
	char *buf = NULL;
	size_t len = 0;
	unsigned i;
	FILE *f;

	(void)ctx;
	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	rp = report_new(f, REPORT_HUMAN);
	if (rp) {
		report_set_server_side(rp);
		report_bench_callbacks(rp, &cb);
		if (cb.started)
			cb.started(cb.ctx, res);
		for (i = 0; cb.interval && i < niv; i++)
			cb.interval(cb.ctx, &ivs[i]);
		if (cb.finished)
			cb.finished(cb.ctx, res);
		report_bench_flush(rp);
		report_free(rp);
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void *ip3_main(void *arg)
{
	struct ip3srv *srv = arg;
	struct lr_err err = { 0 };

	if (ip3srv_run(srv, &err) && err.msg[0])
		fprintf(stderr, "linerate serve: iperf3: %s\n", err.msg);
	return NULL;
}

/* --ssh: the one server, and what its line says */
static struct serve_opts *volatile the_ssh;

static void on_event(void *ctx, const struct server_event *ev)
{
	struct serve_opts *o = the_ssh;

	(void)ctx;
	if (!o) {
		report_server_event(stdout, stderr, ev);
		return;
	}
	/* the ssh mode says where it listens and nothing else: the near
	 * end reports the session */
	if (ev->kind == SERVER_EV_LISTENING &&
	    sshcli_far_ready(o->ssh_addr, ev->port, o->token) && the_server)
		server_stop(the_server);
}

/* --partial-max-age and --partial-max-size. */
static int partial_option(int c, const char *arg, struct serve_opts *o,
			  struct lr_err *err)
{
	uint64_t v;

	o->partial_set = true;
	if (c == OPT_PARTIAL_MAX_SIZE)
		return opts_bytes("--partial-max-size", arg, 0, UINT64_MAX / 2,
				  &o->s.partial.max_bytes, err);
	if (opts_age("--partial-max-age", arg, 0, 100ull * 365 * 86400, &v,
		     err))
		return -EINVAL;
	o->s.partial.max_age_s = (int64_t)v;
	return 0;
}

/* One of serve's own options. */
static int own_option(int c, char **argv, void *ctx, struct lr_err *err)
{
	struct serve_opts *o = ctx;
	uint64_t v;
	int r;

	switch (c) {
	case '1': o->s.once = true; return 0;
	case OPT_MAX_TESTS:
		if (opts_uint("--max-tests", optarg, 1, 64, &v, err))
			return -EINVAL;
		o->s.max_tests = (unsigned)v;
		return 0;
	case OPT_MAX_DURATION:
		return opts_ms("--max-duration", optarg, 1000,
			       SERVER_MAX_DURATION_MS, &o->s.max_duration_ms,
			       err);
	case OPT_HANDSHAKE:
		if (opts_ms("--handshake-timeout", optarg, 100, 600000, &v,
			    err))
			return -EINVAL;
		o->s.handshake_ms = (int)v;
		return 0;
	case OPT_ALLOW_PLAINTEXT: o->s.allow_plaintext = true; return 0;
	case OPT_ROOT: o->root = optarg; return 0;
	case OPT_READ_ONLY: o->s.read_only = true; return 0;
	case OPT_ALLOW_SETID: o->s.allow_setid = true; return 0;
	case OPT_ALLOW_DEVICES: o->s.allow_devices = true; return 0;
	case OPT_IPERF3_PORT:
		if (opts_uint("--iperf3-port", optarg, 0, 65535, &v, err))
			return -EINVAL;
		o->ip3_port = (uint16_t)v;
		o->ip3_explicit = true;
		return 0;
	case OPT_NO_IPERF3: o->ip3 = false; return 0;
	case OPT_PARTIAL_MAX_AGE:
	case OPT_PARTIAL_MAX_SIZE: return partial_option(c, optarg, o, err);
	case OPT_LIST_PARTIAL: o->list_partial = true; return 0;
	case OPT_CLEAN_PARTIAL: o->clean_partial = true; return 0;
	case OPT_SSH: o->ssh = true; return 0;
	case 'h': return 1;
	default:
		r = outopts_option(&o->out, c, optarg, err);
		return r <= 0 ? r : opts_getopt_error(c, argv, err);
	}
}

/* What excludes what among the options. */
static int serve_check(struct serve_opts *o, struct lr_err *err)
{
	if ((o->list_partial || o->clean_partial || o->partial_set) && !o->root)
		return lr_err_set(err, -EINVAL, "--%s needs --root DIR",
				  o->list_partial    ? "list-partial"
				  : o->clean_partial ? "clean-partial"
						     : "partial-max-age/size");
	if (o->partial_set && o->s.read_only)
		return lr_err_set(err, -EINVAL,
				  "--partial-max-age/size and --read-only "
				  "conflict: a read-only server removes "
				  "nothing");
	if (o->list_partial && o->clean_partial)
		return lr_err_set(
			err, -EINVAL,
			"--list-partial and --clean-partial conflict");
	if (!o->ip3 && o->ip3_explicit)
		return lr_err_set(err, -EINVAL,
				  "--iperf3-port and --no-iperf3 conflict");
	/* --once serves one linerate test; iperf3 only when asked */
	if (o->s.once && !o->ip3_explicit)
		o->ip3 = false;
	return 0;
}

/* --ssh: linerate's protocol only, on any port of the address ssh came
 * in on, with a fresh token kept nowhere, until standard input closes. */
static int serve_ssh(struct serve_opts *o, struct lr_err *err)
{
	int r;

	if (o->net.token_file || o->ip3_explicit || o->list_partial ||
	    o->clean_partial)
		return lr_err_set(err, -EINVAL,
				  "--ssh takes none of --token-file, "
				  "--iperf3-port, --list-partial, "
				  "--clean-partial");
	/* its standard output carries the start line to the near end */
	if (o->out.logfile || o->out.ts_fmt || o->out.verbose)
		return lr_err_set(err, -EINVAL,
				  "--ssh takes none of --logfile, "
				  "--timestamps, -V: its output is the near "
				  "end's");
	r = sshcli_far_addr(o->ssh_addr, sizeof(o->ssh_addr), err);
	if (r)
		return r;
	/* until the lifeline closes: doctor runs several tests */
	o->s.bind_addr = o->ssh_addr;
	o->s.port = 0;
	o->ip3 = false;
	r = session_token_new(o->token) ?: session_token_psk(o->token, o->psk);
	if (r)
		return lr_err_setc(err, r, "making a token");
	o->s.psk = o->psk;
	return 0;
}

static int serve_parse(int argc, char **argv, struct serve_opts *o,
		       struct lr_err *err)
{
	int r;

	memset(o, 0, sizeof(*o));
	server_opts_init(&o->s);
	o->s.partial.max_age_s = PARTIAL_DEFAULT_MAX_AGE_S;
	o->ip3 = true;
	o->ip3_port = LR_IP3_PORT;
	r = opts_parse(&common_spec, SERVE_SHORTS, long_opts, own_option, o,
		       argc, argv, &o->net, err);
	if (r)
		return r;
	opts_common_addr(&o->net, LR_DEFAULT_PORT, &o->s.port, &o->s.family,
			 &o->s.bind_addr);
	if (o->ssh)
		return serve_ssh(o, err);
	if (optind != argc)
		return lr_err_set(err, -EINVAL, "unexpected argument '%s'",
				  argv[optind]);
	return serve_check(o, err);
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

/* --list-partial and --clean-partial: one line per partial file. */
struct partial_cli {
	int rootfd;
	bool clean;
	int64_t now;
	unsigned n, in_use, failed;
	uint64_t bytes;
};

static int on_partial(void *ctx, const struct xfer_partial *p)
{
	struct partial_cli *c = ctx;
	int r;

	if (!c->clean) {
		if (!c->n)
			report_partial_header(stdout);
		report_partial(stdout, p, c->now);
		c->n++;
		c->bytes += p->bytes;
		c->in_use += p->in_use;
		return 0;
	}
	r = xfer_partial_remove(c->rootfd, p);
	report_partial_removed(stdout, p, r);
	if (!r) {
		c->n++;
		c->bytes += p->bytes;
	} else if (r == -EBUSY) {
		c->in_use++;
	} else {
		c->failed++;
	}
	return 0;
}

static int partial_cmd(const struct serve_opts *o)
{
	struct partial_cli c = { .rootfd = o->s.rootfd,
				 .clean = o->clean_partial,
				 .now = (int64_t)time(NULL) };
	struct lr_err err = { 0 };
	int r;

	r = xfer_partials_walk(o->s.rootfd, on_partial, &c, NULL, &err);
	if (r) {
		fprintf(stderr, "linerate serve: %s: %s\n", o->root, err.msg);
		return EXIT_RUNTIME;
	}
	report_partial_total(stdout, c.n, c.bytes, c.in_use,
			     c.clean ? "removed" : "below the root");
	return c.failed ? EXIT_RUNTIME : EXIT_OK;
}

/* The token, and what needs it or --root. */
static int serve_security(struct serve_opts *o, struct lr_err *err)
{
	bool have;
	int r;

	if (o->net.token_file) {
		r = opts_token_psk(o->net.token_file, false, o->psk, &have,
				   err);
		if (r)
			return r;
		o->s.psk = o->psk;
	}
	if (o->s.allow_plaintext && !o->s.psk)
		return lr_err_set(err, -EINVAL,
				  "--allow-plaintext needs --token-file: "
				  "without a token every test is in clear "
				  "anyway");
	if (o->s.read_only && !o->root)
		return lr_err_set(err, -EINVAL, "--read-only needs --root");
	if (o->s.allow_setid && !o->root)
		return lr_err_set(err, -EINVAL, "--allow-setid needs --root");
	if (o->s.allow_devices && !o->root)
		return lr_err_set(err, -EINVAL, "--allow-devices needs --root");
	return 0;
}

/* --root DIR, opened; a server with one needs the token. */
static int serve_root(struct serve_opts *o, struct lr_err *err)
{
	if (!o->root)
		return 0;
	if (!o->s.psk)
		return lr_err_set(err, -EINVAL,
				  "--root needs --token-file: files are only "
				  "ever written for a client that proves it "
				  "holds the token");
	o->s.rootfd = open(o->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->s.rootfd < 0)
		return lr_err_setc(err, -errno, "--root %s", o->root);
	return 0;
}

/* --list-partial and --clean-partial, which need no server. */
static int serve_partial(struct serve_opts *o)
{
	int r;

	o->s.rootfd = open(o->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->s.rootfd < 0) {
		fprintf(stderr, "linerate serve: --root %s: %s\n", o->root,
			lr_strerror(-errno));
		return EXIT_RUNTIME;
	}
	r = partial_cmd(o);
	close(o->s.rootfd);
	return r;
}

/* A token is asked of every client; iperf3 has none to give, so its port
 * stays closed unless asked for by name (then with a warning). */
static void ip3_with_token(struct serve_opts *o)
{
	if (o->s.psk && o->ip3 && !o->ip3_explicit)
		o->ip3 = false;
	else if (o->s.psk && o->ip3)
		fprintf(stderr,
			"linerate serve: warning: --iperf3-port: iperf3 "
			"clients are served without the token (iperf3 has "
			"none to give)\n");
}

/* The iperf3 server beside linerate's, when it is wanted: NULL when it
 * is not or cannot be (a warning), -1 when a port asked for by name is
 * not free (an error). */
static int ip3_start(struct serve_opts *o, struct ip3srv **out)
{
	struct ip3srv_opts io = {
		.bind_addr = o->s.bind_addr,
		.port = o->ip3_port,
		.family = o->s.family,
		.max_tests = o->s.max_tests,
		.max_duration_ms = o->s.max_duration_ms,
		.handshake_ms = o->s.handshake_ms,
	};
	struct ip3srv_callbacks icb = { .event = on_event,
					.render = render_ip3 };
	struct lr_err err = { 0 };

	*out = NULL;
	if (!o->ip3 || !ip3srv_new(&io, &icb, out, &err))
		return 0;
	*out = NULL;
	if (o->ip3_explicit) {
		fprintf(stderr, "linerate serve: iperf3 port %u: %s\n",
			o->ip3_port, err.msg);
		return -1;
	}
	fprintf(stderr,
		"linerate serve: warning: not answering iperf3 clients: port "
		"%u: %s (--iperf3-port PORT picks another, --no-iperf3 "
		"silences this)\n",
		o->ip3_port, err.msg);
	return 0;
}

/* SIGINT, SIGTERM and SIGHUP end the server the clean way (the pid
 * file removed), from before its first line. */
static void serve_signals(void)
{
	struct sigaction sa;

	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction old;
	unsigned i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* one the starter ignores (nohup, a script's &) stays ignored */
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!sigaction(sigs[i], NULL, &old) &&
		    old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
}

/* Both servers until a signal (or --once); the iperf3 one in a thread. */
static int serve_both(struct server *srv, struct ip3srv *ip3)
{
	struct lr_err err = { 0 };
	pthread_t ip3_thread;
	bool ip3_running = false;
	int r;

	the_server = srv;
	the_ip3srv = ip3;
	if (stop_asked) {
		server_stop(srv);
		if (ip3)
			ip3srv_stop(ip3);
	}
	if (ip3 && pthread_create(&ip3_thread, NULL, ip3_main, ip3) == 0)
		ip3_running = true;
	else if (ip3)
		fprintf(stderr, "linerate serve: warning: cannot start the "
				"iperf3 thread; linerate only\n");
	r = server_run(srv, &err);
	if (r && err.msg[0])
		fprintf(stderr, "linerate serve: %s\n", err.msg);
	if (ip3) {
		ip3srv_stop(ip3);
		if (ip3_running)
			pthread_join(ip3_thread, NULL);
	}
	the_ip3srv = NULL;
	the_server = NULL;
	return r;
}

int cmd_serve(int argc, char **argv)
{
	struct server_callbacks cb = { .event = on_event };
	struct serve_opts o;
	struct lr_err err = { 0 };
	struct ip3srv *ip3 = NULL;
	struct server *srv;
	int r;

	r = serve_parse(argc, argv, &o, &err);
	if (r == 1) {
		fputs(cmd_serve_usage, stdout);
		return EXIT_OK;
	}
	if (!r)
		r = serve_security(&o, &err);
	if (!r && o.root && (o.list_partial || o.clean_partial))
		return serve_partial(&o);
	if (!r && o.ssh)
		the_ssh = &o;
	if (!r)
		r = serve_root(&o, &err);
	if (r) {
		fprintf(stderr,
			"linerate serve: %s\nTry 'linerate serve --help'.\n",
			err.msg);
		return EXIT_USAGE;
	}
	serve_signals();
	if (outopts_start(&o.out, false, &err)) {
		fprintf(stderr, "linerate serve: %s\n", err.msg);
		return EXIT_RUNTIME;
	}
	if (o.out.verbose)
		report_verbose_system(stdout);
	ip3_with_token(&o);
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	r = server_new(&o.s, &cb, &srv, &err);
	if (r) {
		fprintf(stderr, "linerate serve: %s\n", err.msg);
	} else if (ip3_start(&o, &ip3)) {
		server_free(srv);
		r = -EIO;
	} else {
		r = serve_both(srv, ip3);
		ip3srv_free(ip3);
		server_free(srv);
	}
	outopts_end(&o.out);
	session_token_wipe(o.token, sizeof(o.token));
	session_token_wipe(o.psk, sizeof(o.psk));
	if (o.s.rootfd >= 0)
		close(o.s.rootfd);
	return r ? EXIT_RUNTIME : EXIT_OK;
}
