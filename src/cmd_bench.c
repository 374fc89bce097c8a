// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cmds.h"
#include "core/bench.h"
#include "core/cipher.h"
#include "core/token.h"
#include "core/remote.h"
#include "opts.h"
#include "opts_common.h"
#include "outopts.h"
#include "results.h"
#include "report.h"
#include "sshcli.h"
#include "banned.h"

const char cmd_bench_usage[] =
	"usage: linerate bench [options] [USER@]HOST[:PORT]\n"
	"\n"
	"Measure throughput, memory to memory, against `linerate serve` on HOST,\n"
	"or against a stock `iperf3 -s` with --iperf3. With USER@ or -e (or when\n"
	"nothing listens on HOST's port) the server is started there over ssh,\n"
	"for this test, with a fresh token.\n"
	"\n"
	"  -p, --port PORT        server port (default 7350; 5201 with --iperf3)\n"
	"      --iperf3           the server is a stock iperf3 server\n"
	"  -u, --udp              UDP datagrams instead of TCP (jitter, loss)\n"
	"  -b, --bitrate RATE     pace each stream to RATE bits/s (UDP default 1m;\n"
	"                         TCP default unlimited; 0 = unlimited)\n"
	"  -t, --time SEC         seconds to transmit (default 10)\n"
	"  -n, --bytes SIZE       bytes to transmit per direction instead of -t\n"
	"  -i, --interval SEC     seconds between reports (default 1; 0: one at\n"
	"                         the end, covering the test, as iperf3)\n"
	"  -P, --parallel N       parallel streams, one thread each (1-128)\n"
	"  -R, --reverse          the server sends, this side receives\n"
	"      --bidir            both sides send at once (N streams each way)\n"
	"  -O, --omit SEC         leave the first SEC seconds out of the totals\n"
	"  -l, --length SIZE      buffer length per write (default 512K; UDP: the\n"
	"                         datagram payload, default 1460)\n"
	"  -w, --window SIZE      socket buffer size (SO_SNDBUF/SO_RCVBUF)\n"
	"  -C, --congestion ALGO  TCP congestion control on both ends (cubic, bbr)\n"
	"  -M, --set-mss MSS      TCP maximum segment size\n"
	"  -Z, --zerocopy[=HOW]   zero-copy send: msg (MSG_ZEROCOPY, the default)\n"
	"                         or sendfile\n"
	"  -4, --ipv4 / -6, --ipv6  use only that address family\n"
	"  -B, --bind ADDR        bind to local address ADDR\n"
	"  -T, --title STR        prefix the report's lines with STR\n"
	"      --get-server-output  show the iperf3 server's own report (--iperf3)\n"
	"      --udp-counters-64bit  64-bit UDP sequence numbers (--iperf3)\n"
	"  -J, --json             one JSON document at the end (iperf3 -J schema)\n"
	"      --json-stream      one JSON object per line as results arrive\n"
	"  -f, --format F         rates in F as iperf3: k, m, g, t (bits/s) or\n"
	"                         K, M, G, T (bytes/s, 1024-based)\n"
	"      --logfile FILE     append the output and the errors to FILE\n"
	"      --timestamps[=FMT] start each line with the time (strftime's\n"
	"                         FMT; default '%c ')\n"
	"      --forceflush       write each line at once (into a pipe)\n"
	"  -V, --verbose          version, system and the test's parameters\n"
	"  -I, --pidfile FILE     this process's id in FILE, removed at the end\n"
	"      --save LABEL       keep the run, its JSON and both ends' facts,\n"
	"                         in the results file (linerate results)\n"
	"      --results FILE     that file instead of\n"
	"                         ~/.local/share/linerate/results.jsonl\n"
	"      --cport PORT       stream N connects from local port PORT+N-1\n"
	"      --link-speed RATE  speed of the link (e.g. 1gbit) when /sys does not\n"
	"                         know it; prints the TCP ceiling and the share reached\n"
	"      --connect-timeout MS  give up connecting after MS milliseconds, as\n"
	"                         iperf3 (5s and 500ms work too; default 5s)\n"
	"      --token-file FILE  the server's token (else LINERATE_TOKEN, else a\n"
	"                         prompt when the server asks for one); not\n"
	"                         with --iperf3\n"
	"      --cipher NAME      auto (default), aes-256-gcm, chacha20-poly1305\n"
	"                         or none (data in clear; the server must allow it)\n"
	"  -e, --rsh CMD          start the far end with CMD (default ssh)\n"
	"      --remote-path P    the far end's linerate (default: on its PATH)\n"
	"      --no-ssh           never start the far end over ssh\n"
	"      --via-ssh          the data through the ssh session too (for a\n"
	"                         firewall; said when a direct connection fails)\n"
	"      --copy-self[=F]    no linerate on the far end: copy one there for\n"
	"                         the run (F, or a static build for its machine)\n"
	"  -h, --help             this text\n"
	"\n"
	"SIZE takes K, M, G (1024-based); RATE takes k, m, g bits (1000-based).\n"
	"SEC and MS take a unit too: 500ms, 2s, 1m (minutes), 1h.\n"
	"Exit status: 0 success, 1 the test failed, 2 usage error.\n";

struct bench_cli_opts {
	struct bench_opts b;
	struct opts_common net;
	bool have_time, have_bytes, reverse, bidir, have_token;
	bool have_len, have_rate, iperf3;
	struct ip3_client_opts ip3;
	uint8_t psk[SESSION_PSK_LEN];
	enum report_format fmt;
	char hostbuf[256];
	struct remote_addr ra;	  /* HOST as given */
	struct sshcli_opts ssh;	  /* -e, --remote-path, --no-ssh */
	struct outopts out;	  /* -f, --logfile, --timestamps, -V, -I */
	struct results_opts save; /* --save LABEL, --results FILE */
	bool via_ssh;		  /* the far end started over ssh */
};

enum {
	OPT_BIDIR = 256,
	OPT_JSON_STREAM,
	OPT_LINK_SPEED,
	OPT_CONNECT_TIMEOUT,
	OPT_IPERF3,
	OPT_GET_SERVER_OUTPUT,
	OPT_UDP_COUNTERS64,
	OPT_CPORT,
};

static const struct opts_common_spec common_spec = {
	.take = OPTS_PORT | OPTS_PARALLEL | OPTS_FAMILY | OPTS_BIND |
		OPTS_TOKEN | OPTS_CIPHER,
	.min_port = 1,
	.max_streams = BENCH_MAX_STREAMS,
};

static const struct option long_opts[] = {
	{ "time", required_argument, NULL, 't' },
	{ "bytes", required_argument, NULL, 'n' },
	{ "interval", required_argument, NULL, 'i' },
	{ "reverse", no_argument, NULL, 'R' },
	{ "bidir", no_argument, NULL, OPT_BIDIR },
	{ "omit", required_argument, NULL, 'O' },
	{ "length", required_argument, NULL, 'l' },
	{ "window", required_argument, NULL, 'w' },
	{ "congestion", required_argument, NULL, 'C' },
	{ "set-mss", required_argument, NULL, 'M' },
	{ "zerocopy", optional_argument, NULL, 'Z' },
	{ "json", no_argument, NULL, 'J' },
	{ "json-stream", no_argument, NULL, OPT_JSON_STREAM },
	{ "link-speed", required_argument, NULL, OPT_LINK_SPEED },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
	{ "iperf3", no_argument, NULL, OPT_IPERF3 },
	{ "udp", no_argument, NULL, 'u' },
	{ "bitrate", required_argument, NULL, 'b' },
	{ "title", required_argument, NULL, 'T' },
	{ "get-server-output", no_argument, NULL, OPT_GET_SERVER_OUTPUT },
	{ "udp-counters-64bit", no_argument, NULL, OPT_UDP_COUNTERS64 },
	{ "cport", required_argument, NULL, OPT_CPORT },
	SSHCLI_LONG_OPTIONS,
	OUTOPTS_LONG_OPTIONS,
	RESULTS_LONG_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The letters of long_opts and the short-only ones, getopt's syntax. */
#define BENCH_SHORTS "t:n:i:RO:l:w:C:M:Z::JhuT:b:e:" OUTOPTS_SHORTS

const struct cmd_opts cmd_bench_opts = { &common_spec, BENCH_SHORTS,
					 long_opts };

static int usage_error(const char *msg)
{
	fprintf(stderr, "linerate bench: %s\n", msg);
	fprintf(stderr, "Try 'linerate bench --help'.\n");
	return EXIT_USAGE;
}

/* Conflicts between options, in one place. */
static int bench_opts_check(struct bench_cli_opts *o, struct lr_err *err)
{
	struct proto_test_request *q = &o->b.req;

	if (o->have_time && o->have_bytes)
		return lr_err_set(err, -EINVAL, "-t and -n exclude each other");
	if (o->reverse && o->bidir)
		return lr_err_set(err, -EINVAL,
				  "-R and --bidir exclude each "
				  "other");
	if (!o->iperf3 && (o->ip3.get_server_output || o->ip3.counters64))
		return lr_err_set(err, -EINVAL,
				  "--get-server-output and "
				  "--udp-counters-64bit go with --iperf3");
	if (o->iperf3 && (o->net.token_file || o->net.cipher))
		return lr_err_set(err, -EINVAL,
				  "--token-file and --cipher do not go with "
				  "--iperf3: an iperf3 server has no tokens "
				  "and sends in clear");
	if (o->ip3.counters64 && !q->udp)
		return lr_err_set(err, -EINVAL,
				  "--udp-counters-64bit needs -u");
	if (q->udp) {
		uint32_t hdr = o->ip3.counters64 ? BENCH_UDP_HDR_LEN64
						 : BENCH_UDP_HDR_LEN32;

		if (!o->have_len)
			q->blksize = BENCH_UDP_DEFAULT_LEN;
		if (!o->have_rate)
			q->rate_bps = BENCH_UDP_DEFAULT_RATE;
		if (q->blksize < hdr || q->blksize > BENCH_UDP_MAX_LEN)
			return lr_err_set(err, -EINVAL,
					  "-l %u: a UDP datagram carries %u "
					  "to %u bytes",
					  q->blksize, hdr, BENCH_UDP_MAX_LEN);
		if (q->zerocopy)
			return lr_err_set(err, -EINVAL, "-Z is for TCP tests");
	}
	if (o->iperf3 && bench_conn_count(q) > BENCH_IP3_MAX_STREAMS)
		return lr_err_set(err, -EINVAL,
				  "--iperf3 takes at most %u streams in all",
				  BENCH_IP3_MAX_STREAMS);
	if (o->have_bytes)
		q->duration_ms = 0;
	q->mode = o->bidir     ? BENCH_MODE_BIDIR
		  : o->reverse ? BENCH_MODE_REVERSE
			       : BENCH_MODE_FORWARD;
	if (o->b.cport &&
	    (unsigned)o->b.cport + bench_conn_count(q) - 1 > 65535)
		return lr_err_set(err, -EINVAL,
				  "--cport %u: %u streams need ports up to "
				  "%u (at most 65535)",
				  (unsigned)o->b.cport, bench_conn_count(q),
				  (unsigned)o->b.cport + bench_conn_count(q) -
					  1);
	if ((uint64_t)bench_conn_count(q) * bench_recv_buf(q) >
	    BENCH_MAX_TEST_MEM)
		return lr_err_set(err, -EINVAL,
				  "-P %u with -l %u needs more "
				  "than %llu MiB of buffers",
				  q->streams, q->blksize,
				  BENCH_MAX_TEST_MEM >> 20);
	return 0;
}

/* -Z, -Z=HOW, --zerocopy=HOW: MSG_ZEROCOPY by default, 10-15% ahead of
 * sendfile here (docs/BENCHMARKS.md). */
static int parse_zerocopy(const char *arg, uint8_t *out, struct lr_err *err)
{
	if (arg && arg[0] == '=')
		arg++; /* -Z=msg */
	if (!arg || !strcmp(arg, "msg"))
		*out = BENCH_ZC_MSG;
	else if (!strcmp(arg, "sendfile"))
		*out = BENCH_ZC_SENDFILE;
	else
		return lr_err_set(err, -EINVAL, "-Z '%s': use sendfile or msg",
				  arg);
	return 0;
}

/* The options of how the test runs: its length, streams, TCP. */
static int test_option(int c, struct bench_cli_opts *o, struct lr_err *err)
{
	struct proto_test_request *q = &o->b.req;
	uint64_t v;

	switch (c) {
	case 't':
		o->have_time = true;
		return opts_ms("-t", optarg, 100, BENCH_MAX_DURATION_MS,
			       &q->duration_ms, err);
	case 'n':
		o->have_bytes = true;
		return opts_bytes("-n", optarg, 1, UINT64_MAX / 2, &q->bytes,
				  err);
	case 'R': o->reverse = true; return 0;
	case OPT_BIDIR: o->bidir = true; return 0;
	case 'O':
		return opts_ms("-O", optarg, 0, 3600 * 1000, &q->omit_ms, err);
	case 'l':
		if (opts_bytes("-l", optarg, 1, BENCH_MAX_BLKSIZE, &v, err))
			return -EINVAL;
		q->blksize = (uint32_t)v;
		o->have_len = true;
		return 0;
	case 'w':
		if (opts_bytes("-w", optarg, 1024, BENCH_MAX_WINDOW, &v, err))
			return -EINVAL;
		q->window = (uint32_t)v;
		return 0;
	case 'C':
		if (strlen(optarg) >= sizeof(q->cc) || !optarg[0])
			return lr_err_set(err, -EINVAL,
					  "-C '%s' is not a congestion "
					  "control name",
					  optarg);
		snprintf(q->cc, sizeof(q->cc), "%s", optarg);
		return 0;
	case 'M':
		if (opts_uint("-M", optarg, 88, 65535, &v, err))
			return -EINVAL;
		q->mss = (uint32_t)v;
		return 0;
	case 'Z': return parse_zerocopy(optarg, &q->zerocopy, err);
	case 'u': q->udp = 1; return 0;
	case 'b':
		o->have_rate = true;
		return opts_rate("-b", optarg, 0, UINT64_MAX / 2, &q->rate_bps,
				 err);
	}
	return 1;
}

/* The options of what is reported, and of the iperf3 peer. */
static int report_option(int c, char **argv, struct bench_cli_opts *o,
			 struct lr_err *err)
{
	uint64_t v;
	int r;

	switch (c) {
	case 'i':
		return opts_ms_or_zero("-i", optarg, 100, 3600 * 1000,
				       &o->b.interval_ms, err);
	case 'J': o->fmt = REPORT_JSON; return 0;
	case OPT_JSON_STREAM: o->fmt = REPORT_JSON_STREAM; return 0;
	case OPT_LINK_SPEED:
		return opts_rate("--link-speed", optarg, 1000, UINT64_MAX / 2,
				 &o->b.link_speed_bps, err);
	case OPT_CONNECT_TIMEOUT:
		if (opts_msec("--connect-timeout", optarg, 100, 3600 * 1000, &v,
			      err))
			return -EINVAL;
		o->b.connect_timeout_ms = (int)v;
		return 0;
	case OPT_IPERF3: o->iperf3 = true; return 0;
	case 'T':
		/* res.title and iperf3's parameter hold 127 */
		if (strlen(optarg) > 127)
			return lr_err_set(err, -EINVAL,
					  "-T: a title has at most 127 bytes");
		o->ip3.title = optarg;
		return 0;
	case OPT_GET_SERVER_OUTPUT: o->ip3.get_server_output = true; return 0;
	case OPT_UDP_COUNTERS64: o->ip3.counters64 = true; return 0;
	case OPT_CPORT:
		if (opts_uint("--cport", optarg, 1, 65535, &v, err))
			return -EINVAL;
		o->b.cport = (uint16_t)v;
		return 0;
	case 'h': return 1;
	default:
		if (!sshcli_option(c, optarg, &o->ssh))
			return 0;
		r = outopts_option(&o->out, c, optarg, err);
		if (r == 1)
			r = results_option(&o->save, c, optarg, err);
		if (r <= 0)
			return r;
		return opts_getopt_error(c, argv, err);
	}
}

/* One of bench's own options. */
static int bench_own(int c, char **argv, void *ctx, struct lr_err *err)
{
	int r = test_option(c, ctx, err);

	return r > 0 ? report_option(c, argv, ctx, err) : r;
}

/* HOST or HOST:PORT, the one operand (remote.h). */
static int bench_host(int argc, char **argv, struct bench_cli_opts *o,
		      struct lr_err *err)
{
	struct remote_addr ra;

	if (optind != argc - 1)
		return lr_err_set(err, -EINVAL,
				  optind == argc ? "missing HOST"
						 : "one HOST expected");
	if (remote_parse(argv[optind], REMOTE_HOST_ONLY, &ra, err))
		return -EINVAL;
	o->ra = ra;
	snprintf(o->hostbuf, sizeof(o->hostbuf), "%s", ra.host);
	o->b.host = o->hostbuf;
	if (ra.port) {
		o->net.port = ra.port;
		o->net.have_port = true;
	}
	return 0;
}

static int bench_parse(int argc, char **argv, struct bench_cli_opts *o,
		       struct lr_err *err)
{
	struct proto_test_request *q = &o->b.req;
	int r;

	memset(o, 0, sizeof(*o));
	o->b.interval_ms = 1000;
	o->b.connect_timeout_ms = 5000;
	q->streams = 1;
	q->duration_ms = 10000;
	q->blksize = BENCH_DEFAULT_BLKSIZE;
	r = opts_parse(&common_spec, BENCH_SHORTS, long_opts, bench_own, o,
		       argc, argv, &o->net, err);
	if (r)
		return r;
	if (bench_host(argc, argv, o, err))
		return -EINVAL;
	r = sshcli_wanted(&o->ssh, &o->ra, o->net.token_file, err);
	if (r < 0)
		return r;
	o->via_ssh = r > 0;
	if (o->via_ssh && o->iperf3)
		return lr_err_set(err, -EINVAL,
				  "--iperf3 tests a running iperf3 server: "
				  "nothing to start over ssh");
	opts_common_addr(&o->net, o->iperf3 ? LR_IP3_PORT : LR_DEFAULT_PORT,
			 &o->b.port, &o->b.family, &o->b.bind_addr);
	if (o->net.streams)
		q->streams = (uint16_t)o->net.streams;
	return bench_opts_check(o, err);
}

/* The token (file or environment) and the cipher asked for. */
static int bench_security(struct bench_cli_opts *o, struct lr_err *err)
{
	int r;

	r = opts_token_psk(o->net.token_file, true, o->psk, &o->have_token,
			   err);
	if (r)
		return r;
	o->b.psk = o->have_token ? o->psk : NULL;
	r = opts_cipher_wish(&o->net, true, &o->b.cipher_wish, err);
	if (r)
		return r;
	if (o->b.cipher_wish != CRYPTO_CIPHER_AUTO && !o->have_token)
		return lr_err_set(err, -EINVAL,
				  "--cipher needs a token "
				  "(LINERATE_TOKEN or --token-file)");
	return 0;
}

/* Start `linerate serve --ssh` on HOST and point the test at it. */
static int bench_ssh(struct bench_cli_opts *o, struct sshcli *sc,
		     struct lr_err *err)
{
	const char *words[] = { "serve", "--ssh", NULL, NULL };
	int r;

	if (o->b.cipher_wish == CRYPTO_NONE)
		words[2] = "--allow-plaintext";
	r = sshcli_start(sc, &o->ssh, &o->ra, words, o->psk, err);
	if (r)
		return r;
	o->have_token = true;
	o->b.psk = o->psk;
	o->b.host = sc->addr;
	o->b.port = sc->port;
	o->b.connect_timeout_ms = SSHCLI_CONNECT_MS;
	if (sc->relay) { /* a loopback port: -4/-6 and -B were for the far end */
		o->b.family = AF_UNSPEC;
		o->b.bind_addr = NULL;
	}
	o->b.link_host = sshcli_link_host(sc, &o->ra);
	return 0;
}

/* The test against a linerate server: over ssh when asked, or when
 * nothing listens on HOST's port (said in one line; not with --no-ssh). */
static int bench_linerate(struct bench_cli_opts *o, struct sshcli *sc,
			  const struct bench_callbacks *cb,
			  struct bench_result *res, struct lr_err *err)
{
	int r = o->via_ssh ? bench_ssh(o, sc, err) : 0;

	if (!r)
		r = bench_client_run(&o->b, cb, res, err);
	/* (a port given names a server: nothing to start) */
	if (r == -ECONNREFUSED && !o->via_ssh && !o->ssh.no_ssh &&
	    !o->net.token_file && !o->net.have_port) {
		report_msg(stderr,
			   "no linerate server on %s:%u; starting one "
			   "over ssh\n",
			   o->b.host, (unsigned)o->b.port);
		o->via_ssh = true;
		memset(err, 0, sizeof(*err));
		r = bench_ssh(o, sc, err);
		if (!r)
			r = bench_client_run(&o->b, cb, res, err);
	}
	if (o->via_ssh && sshcli_finish(sc, r == 0, err) && !r)
		r = -EPIPE;
	return r;
}

/* The test, reported through rp: 0 or a negative errno with err set. */
static int bench_run_reported(struct bench_cli_opts *o, struct report *rp,
			      struct report *cap, struct bench_result *res,
			      struct lr_err *err)
{
	struct bench_callbacks cb = { 0 }, cb1 = { 0 }, cb2 = { 0 };
	struct results_bench_tee tee;
	struct sshcli sc = { 0 };
	int r;

	report_bench_callbacks(rp, &cb1);
	cb = cb1;
	if (cap) {
		/* --save: the JSON document made beside the output */
		report_bench_callbacks(cap, &cb2);
		results_bench_tee(&tee, &cb1, &cb2, &cb);
	}
	if (o->ip3.title)
		report_set_title(rp, o->ip3.title);
	if (o->out.verbose && o->fmt == REPORT_HUMAN)
		report_bench_verbose(stdout, &o->b.req, o->iperf3);
	if (o->iperf3)
		r = ip3_client_run(&o->b, &o->ip3, &cb, res, err);
	else
		r = bench_linerate(o, &sc, &cb, res, err);
	if (!o->iperf3 && r == LR_EAUTH && !o->have_token &&
	    isatty(STDIN_FILENO) && o->fmt == REPORT_HUMAN) {
		/* the server wants a token we were not given: ask */
		struct lr_err e2 = { 0 };

		if (!opts_prompt_token("Token: ", o->psk, &e2)) {
			o->have_token = true;
			o->b.psk = o->psk;
			r = bench_client_run(&o->b, &cb, res, err);
		}
	}
	return r;
}

/* --save: the run (its JSON in cap) appended to the results file, the
 * server's facts asked for when it took our token. */
static void bench_save(struct bench_cli_opts *o, const struct bench_result *res,
		       struct report *cap, struct results_capture *txt,
		       int argc, char **argv)
{
	struct report_saved_run run = { .argc = argc - 1, .argv = argv + 1 };
	struct proto_probe_result far;
	struct lr_err err = { 0 };
	struct link_info link;

	report_bench_flush(cap);
	/* the far end as typed (over ssh, b.host is its address) */
	results_from_bench(res, o->ra.host[0] ? o->ra.host : o->b.host, &run,
			   &link);
	run.run = results_capture_text(txt);
	if (!o->iperf3 && !o->via_ssh && o->have_token &&
	    !results_far_facts(o->b.host, o->b.port, o->b.family, o->b.psk,
			       o->b.cipher_wish, &far)) {
		run.remote = &far;
		run.remote_cores = far.centicores / 100.0;
	}
	if (results_save(&o->save, &run, NULL,
			 o->fmt == REPORT_HUMAN ? stdout : stderr, &err))
		report_msg(stderr, "--save: %s\n", err.msg);
}

int cmd_bench(int argc, char **argv)
{
	struct bench_cli_opts o;
	struct bench_result res;
	struct lr_err err = { 0 };
	struct results_capture txt = { 0 };
	struct report *rp, *cap = NULL;
	int r;

	r = bench_parse(argc, argv, &o, &err);
	if (r == 1) {
		fputs(cmd_bench_usage, stdout);
		return EXIT_OK;
	}
	if (!r && !o.iperf3 && o.via_ssh)
		r = opts_cipher_wish(&o.net, true, &o.b.cipher_wish, &err);
	else if (!r && !o.iperf3)
		r = bench_security(&o, &err);
	if (r)
		return usage_error(err.msg);
	if (outopts_start(&o.out, o.fmt != REPORT_HUMAN, &err)) {
		report_msg(stderr, "%s\n", err.msg);
		return EXIT_RUNTIME;
	}
	outopts_end_on_signal(&o.out);
	if (!o.iperf3 && o.b.cipher_wish == CRYPTO_NONE)
		report_msg(
			stderr,
			"warning: --cipher none: the data "
			"travels in clear; only the handshake and the control "
			"messages are protected\n");
	signal(SIGPIPE, SIG_IGN);
	rp = report_new(stdout, o.fmt);
	if (!rp) {
		report_msg(stderr, "out of memory\n");
		outopts_end(&o.out);
		return EXIT_RUNTIME;
	}
	/* a run to be saved where it cannot be: said before the test */
	if (results_refused(&o.save, "bench")) {
		report_free(rp);
		outopts_end(&o.out);
		return EXIT_RUNTIME;
	}
	if (o.save.label && (results_capture_open(&txt) ||
			     !(cap = report_new(txt.f, REPORT_JSON)))) {
		report_msg(stderr, "out of memory\n");
		results_capture_close(&txt);
		report_free(rp);
		outopts_end(&o.out);
		return EXIT_RUNTIME;
	}
	r = bench_run_reported(&o, rp, cap, &res, &err);
	if (r) {
		opts_env_token_hint(&o.net, &err);
		report_bench_error(rp, stderr, err.msg);
	} else {
		report_bench_flush(rp);
		if (cap)
			bench_save(&o, &res, cap, &txt, argc, argv);
		bench_result_free(&res);
	}
	session_token_wipe(o.psk, sizeof(o.psk));
	report_free(rp);
	if (cap) {
		report_free(cap);
		results_capture_close(&txt);
	}
	outopts_end(&o.out);
	return r ? EXIT_RUNTIME : EXIT_OK;
}
