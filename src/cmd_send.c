// SPDX-License-Identifier: MIT
/* linerate send and linerate get: the client side of a transfer. */
#include <errno.h>
#include <fcntl.h>
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
#include "core/token.h"
#include "core/xfer.h"
#include "opts.h"
#include "opts_common.h"
#include "report.h"
#include "banned.h"

#define COMMON_HELP                                                                 \
	"  -p, --port PORT       server port (default 7350)\n"                      \
	"  -P, --parallel N      parallel TCP streams (default: 4, or 2 for many\n" \
	"                        small files)\n"                                    \
	"  -4, --ipv4 / -6, --ipv6  only that address family\n"                     \
	"  -B, --bind ADDR       local address to connect from\n"                   \
	"      --token-file FILE the server's token (else LINERATE_TOKEN,\n"        \
	"                        else a prompt); never on the command line\n"       \
	"      --cipher NAME     auto (default), aes-256-gcm,\n"                    \
	"                        chacha20-poly1305, or none (data in clear on\n"    \
	"                        a trusted cable; the server must allow it)\n"      \
	"      --limit RATE      cap the rate: 50M is 50 MiB/s (a bare number is\n" \
	"                        bytes/s), 400mbit is bits/s\n"                     \
	"      --chunk SIZE      chunk size, 64K-8M (default 1M)\n"                 \
	"  -w, --window SIZE     socket buffer size (default: the kernel's)\n"      \
	"      --overwrite       replace existing files\n"                          \
	"      --update          replace existing files whose size or mtime\n"      \
	"                        differ; skip the others\n"                         \
	"      --no-fsync        do not wait for the destination disk before\n"     \
	"                        renaming (faster; a crash or power loss of\n"      \
	"                        the receiver can then lose the newest files)\n"    \
	"      --keep-setid      keep setuid/setgid bits (dropped by default)\n"    \
	"      --link-speed RATE speed of the link for the %% of its ceiling\n"     \
	"      --json            one JSON object per event on standard output\n"    \
	"  -q, --quiet           no progress, only errors\n"                        \
	"  -h, --help            this text\n"

const char cmd_send_usage[] =
	"usage: linerate send [options] PATH... HOST:[DIR]\n"
	"\n"
	"Push files and directory trees to `linerate recv` or to\n"
	"`linerate serve --root`. DIR is below the receiver's root and is made\n"
	"when missing. `-` as PATH sends standard input, as the file named by\n"
	"HOST:NAME. An IPv6 address goes in brackets: [2001:db8::1]:dir.\n"
	"\n" COMMON_HELP "\n"
	"Files appear under their final names only when complete and verified;\n"
	"run the same command again after an interruption to resume.\n"
	"Exit status: 0 every file written and verified, 1 failure, 2 usage.\n";

const char cmd_get_usage[] =
	"usage: linerate get [options] HOST:PATH... [DEST]\n"
	"\n"
	"Pull files and directory trees from `linerate serve --root` into\n"
	"DEST (default: the current directory; `-` writes the one file to\n"
	"standard output).\n"
	"\n" COMMON_HELP "\n"
	"Exit status: 0 every file written and verified, 1 failure, 2 usage.\n";

struct send_cli {
	bool pull;
	struct xfer_client_opts c;
	struct opts_common net;
	bool have_token, json, quiet;
	uint64_t link_speed;
	char hostbuf[256];
	const char *paths[XFER_MAX_PATHS];
	const char *dest;
	char destbuf[XFER_MAX_PATH + 1];  /* DIR of `send - HOST:DIR/NAME` */
	char destname[XFER_MAX_PATH + 1]; /* get: DEST when it is missing */
	uint8_t psk[SESSION_PSK_LEN];
};

enum {
	OPT_LIMIT = 256,
	OPT_CHUNK,
	OPT_OVERWRITE,
	OPT_UPDATE,
	OPT_NO_FSYNC,
	OPT_KEEP_SETID,
	OPT_LINK_SPEED,
	OPT_JSON,
};

static const struct opts_common_spec common_spec = {
	.take = OPTS_PORT | OPTS_PARALLEL | OPTS_FAMILY | OPTS_BIND |
		OPTS_TOKEN | OPTS_CIPHER,
	.min_port = 1,
	.max_streams = XFER_MAX_STREAMS,
};

static const struct option long_opts[] = {
	{ "window", required_argument, NULL, 'w' },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "chunk", required_argument, NULL, OPT_CHUNK },
	{ "overwrite", no_argument, NULL, OPT_OVERWRITE },
	{ "update", no_argument, NULL, OPT_UPDATE },
	{ "no-fsync", no_argument, NULL, OPT_NO_FSYNC },
	{ "keep-setid", no_argument, NULL, OPT_KEEP_SETID },
	{ "link-speed", required_argument, NULL, OPT_LINK_SPEED },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static _Atomic bool cancelled;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&cancelled, true);
}

/* Split "host:path" or "[v6]:path"; host goes into buf. */
static int split_remote(const char *arg, char *buf, size_t cap,
			const char **host, const char **path,
			struct lr_err *err)
{
	const char *colon;
	size_t n;

	if (arg[0] == '[') {
		const char *end = strchr(arg, ']');

		if (!end || end[1] != ':')
			return lr_err_set(err, -EINVAL,
					  "'%s': write [IPv6]:PATH", arg);
		n = (size_t)(end - arg - 1);
		colon = end + 1;
		arg++;
	} else {
		colon = strchr(arg, ':');
		if (!colon)
			return lr_err_set(err, -EINVAL,
					  "'%s': write HOST:PATH (HOST: for "
					  "the root)",
					  arg);
		n = (size_t)(colon - arg);
	}
	if (!n || n >= cap)
		return lr_err_set(err, -EINVAL, "'%s': no host", arg);
	memcpy(buf, arg, n);
	buf[n] = 0;
	*host = buf;
	*path = colon + 1;
	return 0;
}

/* Drop leading "./" and slashes a user may type; "" is the root. */
static const char *clean_remote(const char *p)
{
	while (*p == '/' || (p[0] == '.' && p[1] == '/'))
		p += *p == '/' ? 1 : 2;
	return strcmp(p, ".") ? p : "";
}

/* --limit: bytes/s as rsync --bwlimit and pv -L read it; a "bit" suffix
 * (400mbit) gives bits/s. */
static int parse_limit(const char *arg, uint64_t *out, struct lr_err *err)
{
	uint64_t v;

	if (strstr(arg, "bit")) {
		if (opts_rate("--limit", arg, 8000, UINT64_MAX / 2, &v, err))
			return -EINVAL;
		*out = v / 8;
		return 0;
	}
	return opts_bytes("--limit", arg, 1000, UINT64_MAX / 2, out, err);
}

/* One of send's and get's own options. */
static int own_option(int c, char **argv, void *ctx, struct lr_err *err)
{
	struct send_cli *o = ctx;
	uint64_t v;

	switch (c) {
	case 'w':
		if (opts_bytes("-w", optarg, 4096, XFER_MAX_SOCKBUF, &v, err))
			return -EINVAL;
		o->c.window = (uint32_t)v;
		return 0;
	case OPT_LIMIT: return parse_limit(optarg, &o->c.x.rate, err);
	case OPT_CHUNK:
		if (opts_bytes("--chunk", optarg, XFER_MIN_CHUNK,
			       XFER_MAX_CHUNK, &v, err))
			return -EINVAL;
		o->c.x.chunk_size = (uint32_t)v;
		return 0;
	case OPT_OVERWRITE: o->c.x.flags |= XFER_F_OVERWRITE; return 0;
	case OPT_UPDATE: o->c.x.flags |= XFER_F_UPDATE; return 0;
	case OPT_NO_FSYNC: o->c.x.flags |= XFER_F_NO_FSYNC; return 0;
	case OPT_KEEP_SETID: o->c.x.flags |= XFER_F_KEEP_SETID; return 0;
	case OPT_LINK_SPEED:
		return opts_rate("--link-speed", optarg, 1000, UINT64_MAX / 2,
				 &o->link_speed, err);
	case OPT_JSON: o->json = true; return 0;
	case 'q': o->quiet = true; return 0;
	case 'h': return 1;
	default: return opts_getopt_error(c, argv, err);
	}
}

/* `send - HOST:DIR/NAME`: NAME names the file, DIR is its parent. */
static int stdin_dest(const char *path, struct send_cli *o, struct lr_err *err)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!*path || (slash && !slash[1]))
		return lr_err_set(err, -EINVAL,
				  "sending standard input needs a name: "
				  "HOST:NAME");
	o->c.src.stdin_name = slash ? slash + 1 : path;
	if (!slash) {
		o->dest = "";
		return 0;
	}
	n = (size_t)(slash - path);
	if (n >= sizeof(o->destbuf))
		return lr_err_set(err, -ENAMETOOLONG, "%s: too long", path);
	memcpy(o->destbuf, path, n);
	o->destbuf[n] = '\0';
	o->dest = o->destbuf;
	return 0;
}

/* send's operands: PATH... HOST:[DIR]. */
static int push_args(int argc, char **argv, int first, struct send_cli *o,
		     struct lr_err *err)
{
	const char *host, *path;
	int i, last = argc - 1;

	if (argc - first < 2)
		return lr_err_set(err, -EINVAL, "need PATH... and HOST:[DIR]");
	if (split_remote(argv[last], o->hostbuf, sizeof(o->hostbuf), &host,
			 &path, err))
		return -EINVAL;
	if (last - first > (int)XFER_MAX_PATHS)
		return lr_err_set(err, -E2BIG,
				  "at most %u PATH arguments (name their "
				  "directory instead)",
				  XFER_MAX_PATHS);
	for (i = first; i < last; i++) {
		if (!strcmp(argv[i], "-") && last - first != 1)
			return lr_err_set(err, -EINVAL,
					  "'-' (standard input) goes alone");
		o->paths[i - first] = argv[i];
	}
	o->c.src.npaths = (unsigned)(last - first);
	o->c.src.paths = o->paths;
	path = clean_remote(path);
	o->dest = path;
	if (!strcmp(argv[first], "-") && stdin_dest(path, o, err))
		return -EINVAL;
	o->c.op = XFER_PUSH;
	o->c.npaths = 1;
	o->c.paths[0] = o->dest;
	o->c.host = host;
	return 0;
}

/* get's operands: HOST:PATH... [DEST]. */
static int pull_args(int argc, char **argv, int first, struct send_cli *o,
		     struct lr_err *err)
{
	int i, last = argc - 1;
	const char *host, *path;

	if (argc - first < 1)
		return lr_err_set(err, -EINVAL, "need HOST:PATH");
	/* the last argument is DEST unless it is remote */
	if (argc - first >= 2 && (!strchr(argv[last], ':') ||
				  argv[last][0] == '/' || argv[last][0] == '.'))
		o->dest = argv[last--];
	else
		o->dest = ".";
	if (last - first + 1 > (int)XFER_MAX_PATHS)
		return lr_err_set(err, -E2BIG, "at most %u HOST:PATH arguments",
				  XFER_MAX_PATHS);
	for (i = first; i <= last; i++) {
		char hb[256];

		if (split_remote(argv[i], hb, sizeof(hb), &host, &path, err))
			return -EINVAL;
		if (i == first)
			snprintf(o->hostbuf, sizeof(o->hostbuf), "%s", hb);
		else if (strcmp(o->hostbuf, hb))
			return lr_err_set(err, -EINVAL,
					  "all HOST:PATH arguments must name "
					  "one host");
		path = clean_remote(path);
		if (!*path)
			return lr_err_set(err, -EINVAL,
					  "'%s': name a file or directory "
					  "below the root",
					  argv[i]);
		o->c.paths[o->c.npaths++] = path;
	}
	o->c.host = o->hostbuf;
	o->c.op = XFER_PULL;
	if (!strcmp(o->dest, "-")) {
		if (o->c.npaths != 1)
			return lr_err_set(err, -EINVAL, "'-' takes one file");
		o->c.x.flags |= XFER_F_STDOUT;
	}
	return 0;
}

static int send_parse(int argc, char **argv, struct send_cli *o,
		      struct lr_err *err)
{
	int r;

	o->c.dest.dirfd = o->c.outfd = -1;
	o->c.src.rootfd = -1;
	o->c.connect_timeout_ms = 10000;
	o->c.x.progress_ms = 250;
	o->c.x.cancel = &cancelled;
	r = opts_parse(&common_spec, "w:qh", long_opts, own_option, o, argc,
		       argv, &o->net, err);
	if (r)
		return r;
	opts_common_addr(&o->net, LR_DEFAULT_PORT, &o->c.port, &o->c.family,
			 &o->c.bind_addr);
	o->c.streams = o->net.streams; /* 0: chosen from the sources */
	r = o->pull ? pull_args(argc, argv, optind, o, err)
		    : push_args(argc, argv, optind, o, err);
	if (r)
		return -EINVAL;
	if ((o->c.x.flags & XFER_F_OVERWRITE) && (o->c.x.flags & XFER_F_UPDATE))
		return lr_err_set(err, -EINVAL,
				  "--overwrite and --update exclude each "
				  "other");
	return 0;
}

static int send_security(struct send_cli *o, struct lr_err *err)
{
	int r;

	r = opts_token_psk(o->net.token_file, true, o->psk, &o->have_token,
			   err);
	if (!r)
		r = opts_cipher_wish(&o->net, true, &o->c.cipher_wish, err);
	if (r)
		return r;
	if (!o->have_token) {
		r = opts_prompt_token("Token: ", o->psk, err);
		if (r)
			return lr_err_set(err, LR_EAUTH,
					  "no token: set LINERATE_TOKEN or use "
					  "--token-file (file transfers are "
					  "always authenticated)");
		o->have_token = true;
	}
	o->c.psk = o->psk;
	return 0;
}

/* get's DEST: opened when it is a directory; when it is missing, its
 * parent, with DEST's name to be made when the first file comes (a get
 * that fails first leaves nothing behind). */
static int get_dest(const char *dest, struct xfer_dest *d, char *name,
		    struct lr_err *err)
{
	char parent[XFER_MAX_PATH + 1];
	size_t n = strlen(dest);
	const char *base;
	int fd;

	fd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		*d = (struct xfer_dest){ .dirfd = fd, .path = "" };
		return 0;
	}
	if (!n)
		return lr_err_set(err, -EINVAL, "DEST is empty (. is here)");
	if (errno != ENOENT || n > XFER_MAX_PATH)
		return lr_err_setc(err, -errno, "%s", dest);
	memcpy(parent, dest, n + 1);
	while (n > 1 && parent[n - 1] == '/')
		parent[--n] = '\0';
	base = strrchr(parent, '/');
	snprintf(name, XFER_MAX_PATH + 1, "%s", base ? base + 1 : parent);
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return lr_err_setc(err, -ENOENT, "%s", dest);
	if (base == parent)
		parent[1] = '\0'; /* below / */
	else if (base)
		parent[base - parent] = '\0';
	else
		snprintf(parent, sizeof(parent), ".");
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return lr_err_setc(err, -errno, "%s", parent);
	*d = (struct xfer_dest){ .dirfd = fd, .path = name };
	return 0;
}

static int run(int argc, char **argv, bool pull)
{
	const char *name = pull ? "get" : "send";
	struct xfer_callbacks cb = { 0 };
	struct xfer_result res;
	struct lr_err err = { 0 };
	struct report_xfer *rx;
	struct sigaction sa;
	struct send_cli o;
	FILE *out;
	int r;

	memset(&o, 0, sizeof(o));
	o.pull = pull;
	r = send_parse(argc, argv, &o, &err);
	if (r == 1) {
		fputs(pull ? cmd_get_usage : cmd_send_usage, stdout);
		return EXIT_OK;
	}
	if (!r)
		r = send_security(&o, &err);
	if (r) {
		fprintf(stderr, "linerate %s: %s\nTry 'linerate %s --help'.\n",
			name, err.msg, name);
		return r == LR_EAUTH ? EXIT_RUNTIME : EXIT_USAGE;
	}
	if (o.c.cipher_wish == CRYPTO_NONE)
		fprintf(stderr,
			"linerate: warning: --cipher none: file data travels "
			"in clear (checked by digests, not protected against "
			"an attacker on the wire)\n");
	if (pull && !(o.c.x.flags & XFER_F_STDOUT) &&
	    get_dest(o.dest, &o.c.dest, o.destname, &err)) {
		fprintf(stderr, "linerate get: %s\n", err.msg);
		return EXIT_RUNTIME;
	}
	if (pull && (o.c.x.flags & XFER_F_STDOUT))
		o.c.outfd = STDOUT_FILENO;
	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* data on standard output: every message goes to standard error */
	out = o.json && o.c.outfd < 0 ? stdout : stderr;
	rx = report_xfer_new(out, o.json ? REPORT_JSON_STREAM : REPORT_HUMAN,
			     o.quiet, !o.json && isatty(fileno(out)),
			     pull ? "received" : "sent");
	if (!rx) {
		fprintf(stderr, "linerate: out of memory\n");
		return EXIT_RUNTIME;
	}
	report_xfer_callbacks(rx, &cb);
	r = xfer_client_run(&o.c, &cb, &res, &err);
	if (r == -EIO)
		opts_add_hint(err.msg, sizeof(err.msg), res.first_failure_code);
	session_token_wipe(o.psk, sizeof(o.psk));
	report_xfer_end(rx, &res, o.link_speed, r ? err.msg : NULL);
	report_xfer_free(rx);
	if (o.c.dest.dirfd >= 0)
		close(o.c.dest.dirfd);
	if (atomic_load(&cancelled))
		return 130;
	return r ? EXIT_RUNTIME : EXIT_OK;
}

int cmd_send(int argc, char **argv)
{
	return run(argc, argv, false);
}

int cmd_get(int argc, char **argv)
{
	return run(argc, argv, true);
}
