// SPDX-License-Identifier: MIT
/* linerate send and linerate get: the client side of a transfer. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmds.h"
#include "core/cipher.h"
#include "core/filelist.h"
#include "core/filter.h"
#include "core/token.h"
#include "core/xfer.h"
#include "opts.h"
#include "opts_common.h"
#include "report.h"
#include "sshcli.h"
#include "cmd_send.h"
#include "banned.h"

enum {
	OPT_LIMIT = 256,
	OPT_CHUNK,
	OPT_OVERWRITE,
	OPT_UPDATE,
	OPT_NO_FSYNC,
	OPT_KEEP_SETID,
	OPT_LINK_SPEED,
	OPT_JSON,
	OPT_EXCLUDE,
	OPT_INCLUDE,
	OPT_EXCLUDE_FROM,
	OPT_INCLUDE_FROM,
	OPT_DELETE,
	OPT_STATS,
	OPT_FORCE_TTY,
	OPT_NUMERIC_IDS,
	OPT_SPECIALS,
	OPT_DEVICES,
	OPT_SIZE,
	OPT_CONNECT_TIMEOUT,
	OPT_TIMEOUT,
	OPT_PROGRESS,
	OPT_NO_PROGRESS,
	OPT_DELETE_EXCLUDED,
	OPT_FILES_FROM,
	OPT_FROM0,
	OPT_NO_HARD_LINKS,
};

static const struct opts_common_spec common_spec = {
	.take = OPTS_PORT | OPTS_PARALLEL | OPTS_FAMILY | OPTS_BIND |
		OPTS_TOKEN | OPTS_CIPHER,
	.min_port = 1,
	.max_streams = XFER_MAX_STREAMS,
	.ssh_hint = true, /* scp -P 2222 */
};

static const struct option long_opts[] = {
	{ "window", required_argument, NULL, 'w' },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "chunk", required_argument, NULL, OPT_CHUNK },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
	{ "overwrite", no_argument, NULL, OPT_OVERWRITE },
	{ "update", no_argument, NULL, OPT_UPDATE },
	{ "no-fsync", no_argument, NULL, OPT_NO_FSYNC },
	{ "keep-setid", no_argument, NULL, OPT_KEEP_SETID },
	{ "link-speed", required_argument, NULL, OPT_LINK_SPEED },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "exclude", required_argument, NULL, OPT_EXCLUDE },
	{ "include", required_argument, NULL, OPT_INCLUDE },
	{ "exclude-from", required_argument, NULL, OPT_EXCLUDE_FROM },
	{ "include-from", required_argument, NULL, OPT_INCLUDE_FROM },
	{ "files-from", required_argument, NULL, OPT_FILES_FROM },
	{ "from0", no_argument, NULL, OPT_FROM0 },
	{ "delete", no_argument, NULL, OPT_DELETE },
	{ "delete-excluded", no_argument, NULL, OPT_DELETE_EXCLUDED },
	{ "dry-run", no_argument, NULL, 'n' },
	{ "checksum", no_argument, NULL, 'c' },
	{ "whole-file", no_argument, NULL, 'W' },
	{ "hard-links", no_argument, NULL, 'H' },
	{ "no-hard-links", no_argument, NULL, OPT_NO_HARD_LINKS },
	{ "owner", no_argument, NULL, 'o' },
	{ "group", no_argument, NULL, 'g' },
	{ "archive", no_argument, NULL, 'a' },
	{ "numeric-ids", no_argument, NULL, OPT_NUMERIC_IDS },
	{ "xattrs", no_argument, NULL, 'X' },
	{ "acls", no_argument, NULL, 'A' },
	{ "specials", no_argument, NULL, OPT_SPECIALS },
	{ "devices", no_argument, NULL, OPT_DEVICES },
	{ "verbose", no_argument, NULL, 'v' },
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "force-tty", no_argument, NULL, OPT_FORCE_TTY },
	SSHCLI_LONG_OPTIONS,
	RESULTS_LONG_OPTIONS,
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The letters of long_opts and the short-only ones, getopt's syntax. */
#define SEND_SHORTS "w:e:rqhnvcWHogaDXA"

const struct cmd_opts cmd_send_opts = { &common_spec, SEND_SHORTS, long_opts };

static _Atomic bool cancelled;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&cancelled, true);
}

/* HOST:PATH as remote.h reads it; host goes into buf. */
static int split_remote(const char *arg, struct remote_addr *ra, char *buf,
			size_t cap, const char **host, const char **path,
			struct lr_err *err)
{
	if (remote_parse(arg, REMOTE_PATH, ra, err))
		return -EINVAL;
	if (ra->port_like)
		report_msg(stderr,
			   "note: '%s' is a path on %s; a port goes "
			   "with -p\n",
			   ra->path, ra->host);
	snprintf(buf, cap, "%s", ra->host);
	*host = buf;
	*path = ra->path;
	return 0;
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
	return opts_byte_rate("--limit", arg, 1000, UINT64_MAX / 2, out, err);
}

/* --exclude or --include PATTERN. */
static int filter_rule_option(struct send_cli *o, bool include, const char *arg,
			      struct lr_err *err)
{
	char msg[LR_ERR_MSG];
	int r = filter_add_arg(&o->filter, include, arg, err);

	if (r) {
		snprintf(msg, sizeof(msg), "%s", err->msg);
		lr_err_set(err, r, "--%s '%.60s%s': %s",
			   include ? "include" : "exclude", arg,
			   strlen(arg) > 60 ? "..." : "", msg);
	}
	return r;
}

/* One of send's and get's own options. */
/* The options that only set transfer flags, with rsync's meanings. */
static const struct {
	int opt;
	uint32_t flags;
} flag_opts[] = {
	{ OPT_OVERWRITE, XFER_F_OVERWRITE },
	{ OPT_UPDATE, XFER_F_UPDATE },
	{ OPT_NO_FSYNC, XFER_F_NO_FSYNC },
	{ OPT_KEEP_SETID, XFER_F_KEEP_SETID },
	{ OPT_DELETE, XFER_F_DELETE },
	{ OPT_DELETE_EXCLUDED, XFER_F_DELETE | XFER_F_DELETE_EXCLUDED },
	{ 'n', XFER_F_DRY_RUN },
	{ 'c', XFER_F_CHECKSUM },
	{ 'W', XFER_F_WHOLE_FILE },
	{ 'o', XFER_F_OWNER },
	{ 'g', XFER_F_GROUP },
	/* rsync's -a is -rlptgoD; linerate keeps -rlpt always, and -D is
	 * asked apart: device nodes need the receiver's consent, and an
	 * older receiver refuses what it does not know; -X and -A are not
	 * in it, as in rsync */
	{ 'a', XFER_F_OWNER | XFER_F_GROUP },
	{ 'D', XFER_F_SPECIALS | XFER_F_DEVICES },
	{ OPT_SPECIALS, XFER_F_SPECIALS },
	{ OPT_DEVICES, XFER_F_DEVICES },
	{ OPT_NUMERIC_IDS, XFER_F_NUMERIC_IDS },
	{ 'X', XFER_F_XATTRS },
	{ 'A', XFER_F_ACLS },
};

static int own_option(int c, char **argv, void *ctx, struct lr_err *err)
{
	struct send_cli *o = ctx;
	uint64_t v;
	size_t i;
	int r;

	for (i = 0; i < sizeof(flag_opts) / sizeof(flag_opts[0]); i++)
		if (flag_opts[i].opt == c) {
			o->c.x.flags |= flag_opts[i].flags;
			return 0;
		}
	switch (c) {
	case 'w':
		if (opts_bytes("-w", optarg, 4096, XFER_MAX_SOCKBUF, &v, err))
			return -EINVAL;
		o->c.window = (uint32_t)v;
		return 0;
	case OPT_LIMIT: return parse_limit(optarg, &o->c.x.rate, err);
	case OPT_CONNECT_TIMEOUT:
		if (opts_msec("--connect-timeout", optarg, 100, 3600 * 1000, &v,
			      err))
			return -EINVAL;
		o->c.connect_timeout_ms = (int)v;
		o->own_connect_timeout = true;
		return 0;
	case OPT_TIMEOUT: /* seconds as rsync's (1m, 45000ms too); 0: none */
		if (opts_ms_or_zero("--timeout", optarg, 10000,
				    24 * 3600 * 1000, &v, err))
			return -EINVAL;
		o->c.x.idle_ms = v ? (int)v : INT_MAX;
		return 0;
	case OPT_SIZE:
		return opts_bytes("--size", optarg, 1, UINT64_MAX / 2,
				  &o->c.x.size_hint, err)
			       ? -EINVAL
			       : 0;
	case OPT_CHUNK:
		if (opts_bytes("--chunk", optarg, XFER_MIN_CHUNK,
			       XFER_MAX_CHUNK, &v, err))
			return -EINVAL;
		o->c.x.chunk_size = (uint32_t)v;
		return 0;
	case OPT_LINK_SPEED:
		return opts_rate("--link-speed", optarg, 1000, UINT64_MAX / 2,
				 &o->link_speed, err);
	case OPT_JSON: o->json = true; return 0;
	case OPT_EXCLUDE:
	case OPT_INCLUDE:
		return filter_rule_option(o, c == OPT_INCLUDE, optarg, err);
	case OPT_EXCLUDE_FROM:
	case OPT_INCLUDE_FROM:
		return filter_read_file(&o->filter, c == OPT_INCLUDE_FROM,
					optarg, err);
	case 'H': /* the last of -H and --no-hard-links counts */
		o->c.x.flags |= XFER_F_HARD_LINKS;
		o->c.links_default = true;
		return 0;
	case OPT_NO_HARD_LINKS:
		o->c.x.flags &= ~(uint32_t)XFER_F_HARD_LINKS;
		o->c.links_default = false;
		return 0;
	case 'v': o->verbose = true; return 0;
	case OPT_STATS: o->stats = true; return 0;
	case OPT_FORCE_TTY: o->force_tty = true; return 0;
	case OPT_PROGRESS: o->progress = 1; return 0;
	case OPT_NO_PROGRESS: o->progress = -1; return 0;
	case OPT_FILES_FROM: o->files_from = optarg; return 0;
	case OPT_FROM0: o->from0 = true; return 0;
	/* scp's habit (trees are always recursive); with --files-from,
	 * rsync's: below listed directories too */
	case 'r': o->recurse = true; return 0;
	case 'q': o->quiet = true; return 0;
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

/* HOST:DIR as the server takes it: "a//b/./c/" is "a/b/c" (empty and
 * "." parts go, as a shell and rsync read them). */
static int dest_dir(const char *path, struct send_cli *o, struct lr_err *err)
{
	const char *p = path, *e;
	size_t n = 0, k;

	for (; *p; p = *e ? e + 1 : e) {
		e = strchrnul(p, '/');
		k = (size_t)(e - p);
		if (!k || (k == 1 && *p == '.'))
			continue;
		if (n + k + 2 > sizeof(o->destbuf))
			return lr_err_set(err, -ENAMETOOLONG, "%s: too long",
					  path);
		if (n)
			o->destbuf[n++] = '/';
		memmove(o->destbuf + n, p, k); /* path may be destbuf */
		n += k;
	}
	o->destbuf[n] = '\0';
	o->dest = o->destbuf;
	return 0;
}

/* A source sent as its contents, as rsync reads it: "dir/", ".", "dir/."
 * (its entries land in DIR), not "dir" (which lands as DIR/dir). */
static bool contents_of(const char *arg)
{
	size_t n = strlen(arg);

	return (n && arg[n - 1] == '/') || !strcmp(arg, ".") ||
	       (n >= 2 && !strcmp(arg + n - 2, "/."));
}

/* HOST:PATH that may name the one file sent (scp's and rsync's
 * meaning): no trailing slash, and a last component that is a name. */
static bool names_file(const char *path)
{
	size_t n = strlen(path);
	const char *last = strrchr(path, '/');

	last = last ? last + 1 : path;
	return n && path[n - 1] != '/' && strcmp(last, ".") &&
	       strcmp(last, "..") && strcmp(last, "~");
}

/* send's operands: PATH... HOST:[DIR]. */
static int push_args(int argc, char **argv, int first, struct send_cli *o,
		     struct lr_err *err)
{
	const char *host, *path;
	int i, last = argc - 1;
	struct stat st;

	if (argc - first < 2)
		return lr_err_set(err, -EINVAL, "need PATH... and HOST:[DIR]");
	if (split_remote(argv[last], &o->ra, o->hostbuf, sizeof(o->hostbuf),
			 &host, &path, err))
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
		if (strcmp(argv[i], "-") && xfer_source_check(argv[i], err))
			return -EINVAL;
		o->paths[i - first] = argv[i];
		if (contents_of(argv[i]))
			o->c.src.contents |= 1ull << (i - first);
	}
	o->c.src.npaths = (unsigned)(last - first);
	o->c.src.paths = o->paths;
	/* `send FILE HOST:NAME`: the server names the file NAME when NAME
	 * is no directory there (anything else sent goes into NAME) */
	o->c.lone_file = last - first == 1 && strcmp(argv[first], "-") &&
			 !lstat(argv[first], &st) && S_ISREG(st.st_mode) &&
			 !contents_of(argv[first]) && names_file(path);
	path = send_clean_remote(path);
	o->dest = path;
	if (!strcmp(argv[first], "-") && stdin_dest(path, o, err))
		return -EINVAL;
	if (dest_dir(o->dest, o, err))
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
	if (argc - first >= 2 && !remote_is_remote(argv[last]))
		o->dest = argv[last--];
	else
		o->dest = ".";
	if (last - first + 1 > (int)XFER_MAX_PATHS)
		return lr_err_set(err, -E2BIG, "at most %u HOST:PATH arguments",
				  XFER_MAX_PATHS);
	for (i = first; i <= last; i++) {
		struct remote_addr ra;
		char hb[256];

		if (split_remote(argv[i], &ra, hb, sizeof(hb), &host, &path,
				 err))
			return -EINVAL;
		if (i == first)
			o->ra = ra;
		/* HOST:DIR/ sends DIR's contents; the path goes without the
		 * slash (argv is ours to change) */
		if (path[0] && path[strlen(path) - 1] == '/') {
			char *end = (char *)path + strlen(path);

			while (end > path + 1 && end[-1] == '/')
				*--end = '\0';
			o->c.src.contents |= 1ull << o->c.npaths;
		}
		if (i == first)
			snprintf(o->hostbuf, sizeof(o->hostbuf), "%s", hb);
		else if (strcmp(o->hostbuf, hb))
			return lr_err_set(err, -EINVAL,
					  "all HOST:PATH arguments must name "
					  "one host");
		o->raw[o->c.npaths] = path;
		path = send_clean_remote(path);
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

/* --files-from FILE: the paths to send, relative to the one source
 * directory, which is sent as its contents (rsync's meaning). */
static int files_from(struct send_cli *o, struct lr_err *err)
{
	unsigned n = o->pull ? o->c.npaths : o->c.src.npaths;
	struct stat st;

	if (n != 1)
		return lr_err_set(err, -EINVAL,
				  "--files-from takes one source directory; "
				  "its paths are relative to it");
	if (o->c.x.flags & XFER_F_DELETE)
		return lr_err_set(err, -EINVAL,
				  "--delete with --files-from: not "
				  "supported; send the directories whole to "
				  "delete in them");
	if (o->pull && (o->c.x.flags & XFER_F_STDOUT))
		return lr_err_set(err, -EINVAL,
				  "--files-from with standard output: name "
				  "the one file instead");
	if (!o->pull && !strcmp(o->paths[0], "-"))
		return lr_err_set(err, -EINVAL,
				  "--files-from with standard input as the "
				  "source: name a directory");
	/* a missing one is told by the walk, as any missing source */
	if (!o->pull && !stat(o->paths[0], &st) && !S_ISDIR(st.st_mode))
		return lr_err_set(err, -ENOTDIR,
				  "--files-from: '%s' is not a directory "
				  "(the listed paths are relative to it)",
				  o->paths[0]);
	if (list_read_file(&o->filter.list, o->files_from, o->from0, err))
		return -EINVAL;
	if (!list_count(o->filter.list))
		return lr_err_set(err, -EINVAL, "--files-from %s: no paths",
				  o->files_from);
	list_set_recurse(o->filter.list, o->recurse);
	/* the listed paths are relative to the directory: its contents */
	o->c.src.contents |= 1;
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
	o->c.links_default = true; /* as tar: -H where the server knows it */
	r = opts_parse(&common_spec, SEND_SHORTS, long_opts, own_option, o,
		       argc, argv, &o->net, err);
	if (r)
		return r;
	/* a push's walk, counted so (again without, by an older server) */
	o->c.src.hard_links = o->c.links_default;
	opts_common_addr(&o->net, LR_DEFAULT_PORT, &o->c.port, &o->c.family,
			 &o->c.bind_addr);
	o->c.streams = o->net.streams; /* 0: chosen from the sources */
	r = o->pull ? pull_args(argc, argv, optind, o, err)
		    : push_args(argc, argv, optind, o, err);
	if (r)
		return -EINVAL;
	if (o->files_from && files_from(o, err))
		return -EINVAL;
	o->c.src.filter = o->filter.n || o->filter.list ? &o->filter : NULL;
	o->c.src.specials = o->c.x.flags & XFER_F_SPECIALS; /* a push's walk */
	o->c.src.devices = o->c.x.flags & XFER_F_DEVICES;
	if (o->pull) { /* this side receives: deletes, keeps what is left out */
		o->c.x.allow_devices = true; /* -D: the user's own consent */
		o->c.x.filter = o->c.src.filter;
		o->c.x.delete_root = o->c.src.contents != 0;
	}
	if ((o->c.x.flags & XFER_F_NUMERIC_IDS) &&
	    !(o->c.x.flags & (XFER_F_OWNER | XFER_F_GROUP | XFER_F_ACLS)))
		return lr_err_set(err, -EINVAL,
				  "--numeric-ids goes with -o, -g, -a or -A");
	if ((o->c.x.flags & XFER_F_HARD_LINKS) &&
	    (o->c.x.flags & XFER_F_STDOUT))
		return lr_err_set(err, -EINVAL,
				  "-H needs a destination directory, not "
				  "standard output");
	if ((o->c.x.flags & (XFER_F_XATTRS | XFER_F_ACLS)) &&
	    (o->c.x.flags & XFER_F_STDOUT))
		return lr_err_set(err, -EINVAL,
				  "-X and -A need a destination directory, "
				  "not standard output");
	if ((o->c.x.flags & XFER_F_DELETE) && (o->c.x.flags & XFER_F_STDOUT))
		return lr_err_set(err, -EINVAL,
				  "--delete needs a destination directory, "
				  "not standard output");
	if ((o->c.x.flags & XFER_F_DELETE) && !o->pull &&
	    !strcmp(o->paths[0], "-"))
		return lr_err_set(err, -EINVAL,
				  "--delete with standard input: nothing to "
				  "compare with");
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

/* A pull that may bring one regular file: one HOST:PATH without a
 * trailing slash, no --files-from, no --delete (which is for trees). */
static bool get_lone(const struct send_cli *o)
{
	return o->c.npaths == 1 && !o->c.src.contents && !o->files_from &&
	       !(o->c.x.flags & XFER_F_DELETE);
}

/* get's DEST: opened when it is a directory; when it is missing, its
 * parent, with DEST's name to be made when the first file comes (a get
 * that fails first leaves nothing behind). When one file is pulled (lone)
 * and DEST, written without a trailing slash, is missing or a file, the
 * file may take DEST's name instead, as with scp and rsync: the receiver
 * decides when it sees what came (xfer_dest.one_file). */
static int get_dest(const char *dest, bool lone, struct xfer_dest *d,
		    char *name, struct lr_err *err)
{
	char parent[XFER_MAX_PATH + 1];
	size_t n = strlen(dest);
	const char *base;
	struct stat st;
	int fd, e;

	fd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		*d = (struct xfer_dest){ .dirfd = fd, .path = "" };
		return 0;
	}
	e = errno;
	if (!n)
		return lr_err_set(err, -EINVAL, "DEST is empty (. is here)");
	lone = lone && dest[n - 1] != '/';
	if ((e == ENOTDIR || e == ENOENT) && !lstat(dest, &st)) {
		/* a file there: replaced by the one file as any file is
		 * (skipped when up to date, refused without --overwrite or
		 * --update) */
		if (S_ISREG(st.st_mode) && lone)
			e = ENOENT;
		else if (S_ISLNK(st.st_mode))
			return lr_err_set(err, -ENOTDIR,
					  "%s: a symlink to no directory "
					  "(written through by no get: name "
					  "its target, or a directory)",
					  dest);
		else if (!S_ISREG(st.st_mode))
			return lr_err_set(err, -ENOTDIR,
					  "%s: neither a directory nor a "
					  "regular file (- writes to standard "
					  "output)",
					  dest);
	}
	if (e != ENOENT || n > XFER_MAX_PATH)
		return lr_err_setc(err, -e, "%s", dest);
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
	*d = (struct xfer_dest){ .dirfd = fd,
				 .path = name,
				 .one_file = lone ? name : NULL };
	return 0;
}

/* `send FILE HOST:NAME` to an older server: NAME was taken as a
 * directory (it did not answer LONE_FILE). */
static void lone_note(const struct send_cli *o, const struct xfer_result *res,
		      int r)
{
	if (!r && res->lone_as_dir && !o->quiet)
		report_msg(stderr,
			   "note: the server, an older linerate, took '%s' as "
			   "a directory: what was sent is in it (a newer one "
			   "names a lone file so, as scp does)\n",
			   o->ra.path);
}

/* The exit status of a session that ran (r its outcome), after a word
 * on --delete when nothing was deleted. */
static int exit_status(const struct send_cli *o, const struct xfer_result *res,
		       int r)
{
	if ((o->c.x.flags & XFER_F_DELETE) &&
	    (res->files_unread || res->delete_skipped))
		report_msg(stderr, "--delete: nothing was deleted, since the "
				   "sender could not read everything\n");
	/* the session ran to its end and every failure was a source that
	 * could not be read: rsync's "partial transfer due to error" */
	if (r == -EIO && res->files_unread &&
	    res->files_unread >= res->files_failed)
		return EXIT_PARTIAL;
	/* --delete could not remove everything: rsync's 23 too */
	if (!r && res->deletes_failed)
		return EXIT_PARTIAL;
	return r ? EXIT_RUNTIME : EXIT_OK;
}

/* The direct mode's paths below the server's root, before connecting:
 * "~" is the root, ".." is refused in words. */
static int direct_paths(struct send_cli *o, struct lr_err *err)
{
	unsigned i;

	for (i = 0; i < o->c.npaths; i++) {
		const char *raw = o->c.paths[i];

		if (remote_root_path(&o->c.paths[i], err))
			return -EINVAL;
		o->c.paths[i] = send_clean_remote(o->c.paths[i]);
		if (o->pull && !o->c.paths[i][0])
			return lr_err_set(err, -EINVAL,
					  "'%s': name a file or directory "
					  "below the root",
					  raw);
	}
	if (o->c.op == XFER_PUSH)
		o->dest = o->c.paths[0];
	return 0;
}

/* --size and --force-tty: only where a pipe is. */
static int pipe_options(const struct send_cli *o, bool pull, struct lr_err *err)
{
	if (o->c.x.size_hint &&
	    (pull || !o->paths[0] || strcmp(o->paths[0], "-")))
		return lr_err_set(err, -EINVAL,
				  "--size is for `send -` (standard input)");
	if (o->force_tty && !(pull && (o->c.x.flags & XFER_F_STDOUT)))
		return lr_err_set(err, -EINVAL,
				  "--force-tty is for `get HOST:FILE -` "
				  "(standard output)");
	return 0;
}

/* SIGINT and SIGTERM cancel the transfer (it ends cleanly); a closed
 * pipe is an error returned, not a signal. */
static void catch_signals(void)
{
	struct sigaction sa;

	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* The report of a run on out, its callbacks into cb; NULL when out of
 * memory. No progress line is drawn by default where the data itself
 * goes to a terminal (get HOST:FILE -), as curl's meter: it would be
 * drawn into the text. */
static struct report_xfer *make_report(const struct send_cli *o, FILE *out,
				       struct xfer_callbacks *cb)
{
	bool data_on_tty = o->c.outfd == STDOUT_FILENO && isatty(STDOUT_FILENO);
	struct report_xfer *rx = report_xfer_new(
		out, o->json ? REPORT_JSON_STREAM : REPORT_HUMAN, o->quiet,
		!o->json && !data_on_tty && isatty(fileno(out)),
		o->pull ? "received" : "sent");

	if (!rx)
		return NULL;
	report_xfer_set_mode(rx, o->verbose,
			     (o->c.x.flags & XFER_F_DRY_RUN) != 0);
	report_xfer_set_progress(rx, o->progress);
	report_xfer_set_stats(rx, o->stats);
	report_xfer_callbacks(rx, cb);
	return rx;
}

/* This process's CPU seconds per 10^9 bytes moved, < 0 unknown. */
static double own_cpu_per_gb(uint64_t bytes)
{
	struct rusage ru;

	if (!bytes || getrusage(RUSAGE_SELF, &ru))
		return -1;
	return ((double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		(double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6) /
	       ((double)bytes / 1e9);
}

/* --save: the run's JSON events made beside the output. */
struct send_save {
	struct results_capture txt;
	struct report_xfer *rx;
	struct results_xfer_tee tee;
};

static int save_begin(struct send_cli *o, struct xfer_callbacks *cb,
		      struct send_save *sv)
{
	struct xfer_callbacks mine = { 0 }, theirs = *cb;

	if (results_capture_open(&sv->txt))
		return -ENOMEM;
	sv->rx = report_xfer_new(sv->txt.f, REPORT_JSON_STREAM, false, false,
				 o->pull ? "received" : "sent");
	if (!sv->rx) {
		results_capture_close(&sv->txt);
		return -ENOMEM;
	}
	report_xfer_callbacks(sv->rx, &mine);
	results_xfer_tee(&sv->tee, &theirs, &mine, cb);
	return 0;
}

/* A run that went well saved (the server's facts asked for when it took
 * our token); the capture freed either way. */
static void save_end(struct send_cli *o, struct send_save *sv, int r,
		     const struct xfer_result *res, int argc, char **argv)
{
	struct report_saved_run run = { .argc = argc - 1, .argv = argv + 1 };
	struct proto_probe_result far;
	struct lr_err err = { 0 };
	struct link_info link;

	report_xfer_end(sv->rx, res, o->link_speed, r ? "failed" : NULL);
	if (!r && !(o->c.x.flags & XFER_F_DRY_RUN) && !res->bytes)
		report_msg(stderr, "--save: nothing was moved (all there "
				   "already): no rate to keep, not saved\n");
	else if (!r && !(o->c.x.flags & XFER_F_DRY_RUN)) {
		/* the far end as typed (over ssh, c.host is its address) */
		results_from_xfer(res, o->pull,
				  o->ra.host[0] ? o->ra.host : o->c.host, &run,
				  &link);
		run.cpu_s_per_gb[0] = own_cpu_per_gb(res->bytes);
		run.run = results_capture_text(&sv->txt);
		if (!o->via_ssh && o->have_token &&
		    !results_far_facts(o->c.host, o->c.port, o->c.family,
				       o->c.psk, o->c.cipher_wish, &far)) {
			run.remote = &far;
			run.remote_cores = far.centicores / 100.0;
		}
		if (results_save(&o->save, &run,
				 o->pull		    ? o->dest
				 : strcmp(o->paths[0], "-") ? o->paths[0]
							    : NULL,
				 o->json || o->c.outfd >= 0 ? stderr : stdout,
				 &err))
			report_msg(stderr, "--save: %s\n", err.msg);
	}
	report_xfer_free(sv->rx);
	results_capture_close(&sv->txt);
}

/* What a failure's message adds: the first failure's hint, where the
 * token came from. */
static void error_hints(const struct send_cli *o, int r,
			const struct xfer_result *res, struct lr_err *err)
{
	if (r == -EIO)
		opts_add_hint(err->msg, sizeof(err->msg),
			      res->first_failure_code);
	if (r)
		opts_env_token_hint(&o->net, err);
	/* an older far end's refusal of newer flags: client_accept says it
	 * (once) */
}

static int run(int argc, char **argv, bool pull)
{
	const char *name = pull ? "get" : "send";
	struct xfer_callbacks cb = { 0 };
	struct xfer_result res = { 0 };
	struct lr_err err = { 0 };
	struct report_xfer *rx;
	/* static: large (the paths' buffers), and what it holds stays
	 * reachable on every way out (run is called once) */
	static struct send_cli o;
	struct sshcli sc = { 0 };
	struct send_save sv = { 0 };
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
		r = pipe_options(&o, pull, &err);
	if (!r)
		r = send_want_ssh(&o, &err);
	/* a run to be saved where it cannot be: said before any work */
	if (!r && results_refused(&o.save, name))
		return EXIT_RUNTIME;
	/* no token to hand (it would be asked for): is there a server? */
	if (!r && !o.via_ssh && !o.ssh.no_ssh && !o.net.token_file &&
	    !o.net.have_port && !getenv("LINERATE_TOKEN") &&
	    ssh_nothing_listens(o.c.host, o.c.port, o.c.family,
				o.own_connect_timeout ? o.c.connect_timeout_ms
						      : SSHCLI_CONNECT_MS))
		send_fall_back(&o);
	if (!r && !o.via_ssh)
		r = direct_paths(&o, &err);
	if (!r && o.via_ssh)
		r = opts_cipher_wish(&o.net, true, &o.c.cipher_wish, &err);
	else if (!r)
		r = send_security(&o, &err);
	if (r) {
		fprintf(stderr, "linerate %s: %s\nTry 'linerate %s --help'.\n",
			name, err.msg, name);
		/* a token missing or malformed alike: what the command line
		 * (or LINERATE_TOKEN) must give, exit 2 */
		return EXIT_USAGE;
	}
	if (o.c.cipher_wish == CRYPTO_NONE)
		report_msg(
			stderr,
			"warning: --cipher none: file data travels "
			"in clear (checked by digests, not protected against "
			"an attacker on the wire)\n");
	if (pull && !(o.c.x.flags & XFER_F_STDOUT) &&
	    get_dest(o.dest, get_lone(&o), &o.c.dest, o.destname, &err)) {
		fprintf(stderr, "linerate get: %s\n", err.msg);
		return EXIT_RUNTIME;
	}
	if (pull && (o.c.x.flags & XFER_F_STDOUT)) {
		o.c.outfd = STDOUT_FILENO;
		o.c.x.tty_guard = !o.force_tty && isatty(STDOUT_FILENO);
	}
	catch_signals();
	/* data on standard output: every message goes to standard error */
	out = o.json && o.c.outfd < 0 ? stdout : stderr;
	rx = make_report(&o, out, &cb);
	if (!rx || (o.save.label && save_begin(&o, &cb, &sv))) {
		report_msg(stderr, "out of memory\n");
		report_xfer_free(rx);
		return EXIT_RUNTIME;
	}
	r = o.via_ssh ? send_ssh_begin(&o, &sc, &err) : 0;
	if (!r)
		r = xfer_client_run(&o.c, &cb, &res, &err);
	if (r == -ECONNREFUSED && !o.net.token_file && send_fall_back(&o)) {
		memset(&err, 0, sizeof(err));
		memset(&res, 0, sizeof(res));
		r = send_ssh_begin(&o, &sc, &err);
		if (!r)
			r = xfer_client_run(&o.c, &cb, &res, &err);
	}
	error_hints(&o, r, &res, &err);
	if (o.via_ssh && sshcli_finish(&sc, r == 0, &err) && !r)
		r = -EPIPE;
	report_xfer_end(rx, &res, o.link_speed, r ? err.msg : NULL);
	lone_note(&o, &res, r);
	if (o.save.label)
		save_end(&o, &sv, r, &res, argc, argv);
	session_token_wipe(o.psk, sizeof(o.psk));
	report_xfer_free(rx);
	if (o.c.dest.dirfd >= 0)
		close(o.c.dest.dirfd);
	filter_free(&o.filter);
	if (atomic_load(&cancelled))
		return 130;
	return exit_status(&o, &res, r);
}

int cmd_send(int argc, char **argv)
{
	return run(argc, argv, false);
}

int cmd_get(int argc, char **argv)
{
	return run(argc, argv, true);
}
