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
#include <sys/stat.h>
#include <unistd.h>

#include "cmds.h"
#include "core/cipher.h"
#include "core/doctor.h"
#include "core/token.h"
#include "core/remote.h"
#include "opts.h"
#include "opts_common.h"
#include "report.h"
#include "results.h"
#include "sshcli.h"
#include "banned.h"

const char cmd_doctor_usage[] =
	"usage: linerate doctor [options] [USER@]HOST[:PORT]\n"
	"       linerate doctor --local [options] [DIR]\n"
	"\n"
	"Measure each stage of a transfer to a `linerate serve --root`\n"
	"server (with USER@ or -e, or when nothing listens on HOST's port, one\n"
	"started there over ssh, its root the login's home): source read on this side, the network both ways, the cipher\n"
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
	"                        else a prompt when the server wants one;\n"
	"                        a server without a token: the stages that\n"
	"                        need none)\n"
	"      --cipher NAME     auto (default), aes-256-gcm, chacha20-poly1305\n"
	"      --source FILE     read and send FILE (default: generated data)\n"
	"      --size SIZE       bytes for the disk test and the transfer\n"
	"                        (default 256M; at most 1G)\n"
	"  -t, --time SEC        seconds of each network direction (default 3)\n"
	"      --link-speed RATE the link's speed when /sys does not know it\n"
	"      --local           no HOST: this machine alone, measured with a\n"
	"                        server of its own (through two network\n"
	"                        namespaces as root, else loopback) and the\n"
	"                        disk of DIR (default .): what it can send\n"
	"                        and receive, and which link it would fill\n"
	"      --json            one JSON document\n"
	"      --save LABEL      keep the report and both ends' facts in the\n"
	"                        results file (linerate results)\n"
	"      --results FILE    that file, not ~/.local/share/linerate/...\n"
	"  -e, --rsh CMD         start the far end with CMD (default ssh)\n"
	"      --remote-path P   the far end's linerate (default: on its PATH)\n"
	"      --no-ssh          never start the far end over ssh\n"
	"      --via-ssh         the data through the ssh session too (for a\n"
	"                        firewall; said when a direct connection fails)\n"
	"      --copy-self[=F]   no linerate on the far end: copy one there for\n"
	"                        the run (F, or a static build for its machine)\n"
	"  -h, --help            this text\n"
	"\n"
	"Exit status: 0 measured, 1 failure, 2 usage error.\n";

enum {
	OPT_SOURCE = 256,
	OPT_SIZE,
	OPT_LINK_SPEED,
	OPT_JSON,
	OPT_LOCAL,
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
	{ "local", no_argument, NULL, OPT_LOCAL },
	SSHCLI_LONG_OPTIONS,
	RESULTS_LONG_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The letters of long_opts and the short-only ones, getopt's syntax. */
#define DOCTOR_SHORTS "t:e:h"

const struct cmd_opts cmd_doctor_opts = { &common_spec, DOCTOR_SHORTS,
					  long_opts };

struct doctor_cli {
	struct doctor_opts d;
	struct opts_common net;
	bool json, have_token;
	char hostbuf[256];
	uint8_t psk[SESSION_PSK_LEN];
	struct remote_addr ra;	  /* HOST as given */
	struct sshcli_opts ssh;	  /* -e, --remote-path, --no-ssh */
	struct results_opts save; /* --save LABEL, --results FILE */
	bool via_ssh;		  /* the far end started over ssh */
	bool local;		  /* --local [DIR]: the machine alone */
	const char *dir;	  /* its DIR */
	bool no_token;		  /* the server wants a token, none to hand */
	/* the server has none while we held one: its words (and where the
	 * token came from); measured without it */
	char token_why[LR_ERR_MSG];
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
	int r;

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
	case OPT_LOCAL: o->local = true; return 0;
	case 'h': return 1;
	default:
		if (!sshcli_option(c, optarg, &o->ssh))
			return 0;
		r = results_option(&o->save, c, optarg, err);
		if (r <= 0)
			return r;
		return opts_getopt_error(c, argv, err);
	}
}

/* --save: the report's JSON and both ends' facts appended to the results
 * file. */
static void doctor_save(const struct doctor_cli *o,
			const struct doctor_report *rep,
			const struct doctor_local_report *lrep, int argc,
			char **argv)
{
	struct report_saved_run run = { .argc = argc - 1, .argv = argv + 1 };
	struct results_capture txt;
	struct lr_err err = { 0 };

	if (!rep->xfer_done || results_capture_open(&txt))
		return;
	if (lrep)
		report_doctor_local_json(txt.f, lrep, o->dir, NULL);
	else
		report_doctor_json(txt.f, rep, NULL);
	run.command = "doctor";
	run.direction = "send";
	run.host = o->local	   ? "this machine (--local)"
		   : o->ra.host[0] ? o->ra.host
				   : o->d.host;
	run.bytes = rep->xfer_bytes;
	run.bytes_per_second = rep->xfer_bps;
	run.seconds =
		rep->xfer_bps > 0 ? (double)rep->xfer_bytes / rep->xfer_bps : 0;
	/* --local: both ends were this machine's, the transfer timed */
	run.cpu_s_per_gb[0] = lrep ? lrep->cpu_s_per_gb_send : -1;
	run.cpu_s_per_gb[1] = lrep ? lrep->cpu_s_per_gb_recv : -1;
	run.cipher = crypto_cipher_name(rep->cipher);
	if (rep->link_known)
		run.link = &rep->link;
	run.remote = &rep->remote.p;
	run.remote_cores = rep->remote.cores;
	run.run = results_capture_text(&txt);
	if (results_save(&o->save, &run, o->d.source, o->json ? stderr : stdout,
			 &err))
		report_msg(stderr, "--save: %s\n", err.msg);
	results_capture_close(&txt);
}

/* The report's JSON; its error after the server's words on a token it
 * does not have (with the environment's hint), when it said them. */
static void doctor_json(const struct doctor_cli *o,
			const struct doctor_report *rep, const char *error)
{
	char why[2 * LR_ERR_MSG + 8];

	if (error && o->token_why[0]) {
		snprintf(why, sizeof(why), "%s; %s", o->token_why, error);
		error = why;
	}
	report_doctor_json(stdout, rep, error);
}

/* HOST or HOST:PORT (remote.h; "HOST:" as before: the root). */
static int doctor_host(const char *arg, struct doctor_cli *o,
		       struct lr_err *err)
{
	struct remote_addr ra;
	char plain[REMOTE_MAX_USER + REMOTE_MAX_HOST + 8];
	size_t n = strlen(arg);

	if (n >= sizeof(plain))
		return lr_err_set(err, -EINVAL, "'%.40s...': too long", arg);
	snprintf(plain, sizeof(plain), "%s", arg);
	if (n && n < sizeof(plain) && plain[n - 1] == ':' &&
	    (plain[0] == '[' || !strchr(plain, ':') ||
	     strchr(plain, ':') == plain + n - 1))
		plain[n - 1] = '\0';
	if (remote_parse(plain, REMOTE_HOST_ONLY, &ra, err))
		return -EINVAL;
	o->ra = ra;
	snprintf(o->hostbuf, sizeof(o->hostbuf), "%s", ra.host);
	if (ra.port) {
		o->net.port = ra.port;
		o->net.have_port = true;
	}
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
	r = opts_parse(&common_spec, DOCTOR_SHORTS, long_opts, own_option, o,
		       argc, argv, &o->net, err);
	if (r)
		return r;
	o->d.streams = o->net.streams ? o->net.streams : XFER_DEFAULT_STREAMS;
	if (o->local) {
		if (argc - optind > 1)
			return lr_err_set(err, -EINVAL,
					  "--local takes one DIR at most");
		/* what names a far end has no meaning here: said, not
		 * dropped */
		if (o->net.have_port || o->net.family || o->net.token_file ||
		    o->d.link_speed_bps || o->ssh.rsh || o->ssh.remote_path ||
		    o->ssh.no_ssh || o->ssh.via_ssh || o->ssh.copy_self)
			return lr_err_set(err, -EINVAL,
					  "--local takes none of -p, -4, -6, "
					  "--token-file, --link-speed and the "
					  "ssh options: it makes its own "
					  "server");
		if (o->d.size < DOCTOR_LOCAL_MIN_SIZE)
			return lr_err_set(err, -EINVAL,
					  "--local: --size at least 64M (each "
					  "end's CPU is timed in 10 ms ticks)");
		o->dir = optind < argc ? argv[optind] : ".";
		return opts_cipher_wish(&o->net, false, &o->d.cipher_wish, err);
	}
	if (argc - optind != 1)
		return lr_err_set(err, -EINVAL,
				  optind == argc ? "missing HOST"
						 : "one HOST[:PORT] expected");
	r = doctor_host(argv[optind], o, err);
	opts_common_addr(&o->net, LR_DEFAULT_PORT, &o->d.port, &o->d.family,
			 NULL);
	if (!r)
		r = sshcli_wanted(&o->ssh, &o->ra, o->net.token_file, err);
	o->via_ssh = r > 0;
	return r < 0 ? r : 0;
}

/* The token (file or environment) and the cipher asked for. Without a
 * token the server is asked first (doctor_token_retry): one that has
 * none is measured as far as it can be, one that wants one gets a
 * prompt. */
static int doctor_security(struct doctor_cli *o, struct lr_err *err)
{
	int r;

	if (o->via_ssh)
		return opts_cipher_wish(&o->net, false, &o->d.cipher_wish, err);
	r = opts_token_psk(o->net.token_file, true, o->psk, &o->have_token,
			   err);
	o->d.psk = o->have_token ? o->psk : NULL;
	return r ?: opts_cipher_wish(&o->net, false, &o->d.cipher_wish, err);
}

/* The server's answer about the token, after a run that ended in r: one
 * that wants a token and got none is asked for it (a prompt) and
 * measured again; one that has none while we hold one is measured
 * without it (said at once, with where the token came from). */
static int doctor_token_retry(struct doctor_cli *o,
			      const struct doctor_callbacks *cb,
			      struct doctor_report *rep, int r,
			      struct lr_err *err)
{
	struct lr_err e = { 0 };

	if (r == LR_EAUTH && !o->have_token) {
		if (opts_prompt_token("Token: ", o->psk, &e)) {
			o->no_token = true;
			return lr_err_set(err, -EINVAL,
					  "no token: the server wants one: set "
					  "LINERATE_TOKEN or use --token-file "
					  "(%s)",
					  e.msg);
		}
		o->have_token = true;
		o->d.psk = o->psk;
	} else if (r == LR_EAUTH && o->have_token &&
		   strstr(err->msg, "has no token")) {
		opts_env_token_hint(&o->net, err);
		snprintf(o->token_why, sizeof(o->token_why), "%s", err->msg);
		if (!o->json)
			report_msg(stderr, "%s; measuring without it\n",
				   o->token_why);
		o->d.psk = NULL;
	} else {
		return r;
	}
	memset(err, 0, sizeof(*err));
	return doctor_run(&o->d, cb, rep, err);
}

/* Start `linerate serve --ssh --root .` (the login's home) on HOST and
 * point the doctor at it. */
static int doctor_ssh(struct doctor_cli *o, struct sshcli *sc,
		      struct lr_err *err)
{
	const char *words[] = { "serve", "--ssh", "--root", ".", NULL };
	int r;

	r = sshcli_start(sc, &o->ssh, &o->ra, words, o->psk, err);
	if (r)
		return r;
	o->have_token = true;
	o->d.psk = o->psk;
	o->d.host = sc->addr;
	o->d.port = sc->port;
	/* through ssh every stream shares one ssh channel: one is enough */
	if (sc->relay && !o->net.streams)
		o->d.streams = 1;
	if (sc->relay) /* a loopback port: -4/-6 were for the far end */
		o->d.family = AF_UNSPEC;
	o->d.link_host = sshcli_link_host(sc, &o->ra);
	return 0;
}

/* The doctor's run: over ssh when asked, or when nothing listens on
 * HOST's port and no token was given (said in one line). */
static int doctor_go(struct doctor_cli *o, struct sshcli *sc,
		     const struct doctor_callbacks *cb,
		     struct doctor_report *rep, struct lr_err *err)
{
	int r = 0;

	if (o->via_ssh)
		r = doctor_ssh(o, sc, err);
	if (!r)
		r = doctor_run(&o->d, cb, rep, err);
	if (!o->via_ssh)
		r = doctor_token_retry(o, cb, rep, r, err);
	if (o->via_ssh && sshcli_finish(sc, r == 0, err) && !r)
		r = -EPIPE;
	return r;
}

/* SIGINT and SIGTERM stop the stages; every test file is removed. */
static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* doctor --local [DIR]: the machine alone (a server of its own in a
 * child), reported. */
static int doctor_local(struct doctor_cli *o, int argc, char **argv)
{
	struct doctor_local_opts lo = { .dir = o->dir,
					.source = o->d.source,
					.size = o->d.size,
					.net_ms = o->d.net_ms,
					.streams = o->d.streams,
					.cipher_wish = o->d.cipher_wish,
					.cancel = &cancelled };
	struct doctor_callbacks cb = { .ctx = o, .stage = on_stage };
	struct doctor_local_report *rep = calloc(1, sizeof(*rep));
	struct lr_err err = { 0 };
	struct stat st;
	int r;

	if (!rep) {
		report_msg(stderr, "out of memory\n");
		return EXIT_RUNTIME;
	}
	signal(SIGPIPE, SIG_IGN);
	catch_signals();
	if (stat(o->dir, &st))
		r = lr_err_setc(&err, -errno, "%s", o->dir);
	else if (!S_ISDIR(st.st_mode))
		r = lr_err_set(&err, -ENOTDIR, "%s: not a directory", o->dir);
	else if (access(o->dir, W_OK | X_OK))
		r = lr_err_setc(&err, -errno,
				"%s: its disk is measured by writing there",
				o->dir);
	else
		r = doctor_local_run(&lo, &cb, rep, &err);
	if (!r && rep->d.not_measured[0])
		r = lr_err_set(&err, -EAGAIN, "%s", rep->d.not_measured);
	if (r && atomic_load(&cancelled))
		r = lr_err_set(&err, -EINTR, "interrupted");
	if (o->json)
		report_doctor_local_json(stdout, rep, o->dir,
					 r ? err.msg : NULL);
	else if (r)
		fprintf(stderr, "linerate doctor: %s\n", err.msg);
	else
		report_doctor_local_human(stdout, rep, o->dir);
	if (!r && o->save.label)
		doctor_save(o, &rep->d, rep, argc, argv);
	free(rep);
	return r ? EXIT_RUNTIME : EXIT_OK;
}

int cmd_doctor(int argc, char **argv)
{
	struct doctor_callbacks cb = { .stage = on_stage };
	struct doctor_report *rep;
	struct lr_err err = { 0 };
	struct doctor_cli o;
	struct sshcli sc = { 0 };
	int r;

	memset(&o, 0, sizeof(o));
	r = doctor_parse(argc, argv, &o, &err);
	if (r == 1) {
		fputs(cmd_doctor_usage, stdout);
		return EXIT_OK;
	}
	/* a run to be saved where it cannot be: said before any work */
	if (!r && results_refused(&o.save, "doctor"))
		return EXIT_RUNTIME;
	if (!r && o.local)
		return doctor_local(&o, argc, argv);
	/* no token to hand (one would be asked for): is there a server? */
	if (!r && !o.via_ssh && !o.ssh.no_ssh && !o.net.token_file &&
	    !o.net.have_port && !getenv("LINERATE_TOKEN") &&
	    ssh_nothing_listens(o.d.host, o.d.port, o.d.family,
				SSHCLI_CONNECT_MS)) {
		report_msg(stderr,
			   "no linerate server on %s:%u; starting one "
			   "over ssh\n",
			   o.d.host, (unsigned)o.d.port);
		o.via_ssh = true;
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
		report_msg(stderr, "out of memory\n");
		return EXIT_RUNTIME;
	}
	signal(SIGPIPE, SIG_IGN);
	catch_signals();
	cb.ctx = &o;
	r = doctor_go(&o, &sc, &cb, rep, &err);
	session_token_wipe(o.psk, sizeof(o.psk));
	if (r && o.no_token) {
		fprintf(stderr,
			"linerate doctor: %s\nTry 'linerate doctor --help'.\n",
			err.msg);
		free(rep);
		return EXIT_USAGE;
	}
	if (!r && rep->not_measured[0])
		r = lr_err_set(&err, -EAGAIN, "%s", rep->not_measured);
	if (o.json)
		doctor_json(&o, rep, r ? err.msg : NULL);
	else if (r && !rep->not_measured[0])
		fprintf(stderr, "linerate doctor: %s\n", err.msg);
	else
		report_doctor_human(stdout, rep);
	if (!o.json && rep->not_measured[0])
		fprintf(stderr, "linerate doctor: %s\n", rep->not_measured);
	if (!r && o.save.label)
		doctor_save(&o, rep, NULL, argc, argv);
	free(rep);
	return r ? EXIT_RUNTIME : EXIT_OK;
}
