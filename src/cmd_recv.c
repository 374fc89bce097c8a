// SPDX-License-Identifier: MIT
/* linerate recv: a one-shot receiver with a fresh token. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cmds.h"
#include "core/server.h"
#include "core/token.h"
#include "opts.h"
#include "opts_common.h"
#include "report.h"
#include "sshcli.h"
#include "banned.h"

const char cmd_recv_usage[] =
	"usage: linerate recv [options] [DIR]\n"
	"\n"
	"Receive one transfer from `linerate send` into DIR (default: the\n"
	"current directory; made when missing), then exit. Prints this host's\n"
	"addresses, the port, a fresh one-time token and the command to run on\n"
	"the sender.\n"
	"\n"
	"  -p, --port PORT       port to listen on (default 7350; 0 = any)\n"
	"  -B, --bind ADDR       listen on ADDR only\n"
	"  -4, --ipv4 / -6, --ipv6  only that address family\n"
	"      --token-file FILE use this token instead of a fresh one\n"
	"      --allow-plaintext accept a sender asking for --cipher none\n"
	"      --overwrite       replace existing files\n"
	"      --update          replace files whose size or mtime differ,\n"
	"                        except those newer here (rsync's -u)\n"
	"      --no-fsync        do not wait for the disk before renaming\n"
	"      --keep-setid      keep setuid/setgid bits\n"
	"      --allow-devices   make the device nodes a sender sends (-D;\n"
	"                        as root)\n"
	"      --stdout          write the one incoming file to standard output\n"
	"      --json            one JSON object per event\n"
	"      --ssh             the far end of `linerate send USER@HOST:DIR`:\n"
	"                        listen where the ssh connection came in, say\n"
	"                        where and the token on standard output, end\n"
	"                        when standard input closes (run by ssh)\n"
	"  -q, --quiet           print only the token lines and errors\n"
	"  -h, --help            this text\n"
	"\n"
	"Exit status: 0 every file written and verified, 1 failure, 2 usage,\n"
	"23 the sender could not read some sources (everything else arrived).\n";

enum {
	OPT_ALLOW_PLAINTEXT = 256,
	OPT_OVERWRITE,
	OPT_UPDATE,
	OPT_NO_FSYNC,
	OPT_KEEP_SETID,
	OPT_ALLOW_DEVICES,
	OPT_STDOUT,
	OPT_JSON,
	OPT_SSH,
};

static const struct opts_common_spec common_spec = {
	.take = OPTS_PORT | OPTS_FAMILY | OPTS_BIND | OPTS_TOKEN,
	.min_port = 0, /* any free port */
};

static const struct option long_opts[] = {
	{ "allow-plaintext", no_argument, NULL, OPT_ALLOW_PLAINTEXT },
	{ "overwrite", no_argument, NULL, OPT_OVERWRITE },
	{ "update", no_argument, NULL, OPT_UPDATE },
	{ "no-fsync", no_argument, NULL, OPT_NO_FSYNC },
	{ "keep-setid", no_argument, NULL, OPT_KEEP_SETID },
	{ "allow-devices", no_argument, NULL, OPT_ALLOW_DEVICES },
	{ "stdout", no_argument, NULL, OPT_STDOUT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "ssh", no_argument, NULL, OPT_SSH },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The letters of long_opts and the short-only ones, getopt's syntax. */
#define RECV_SHORTS "qh"

const struct cmd_opts cmd_recv_opts = { &common_spec, RECV_SHORTS, long_opts };

struct recv_cli {
	struct server_opts s;
	struct opts_common net;
	const char *dir;
	bool json, quiet;
	bool ssh;		     /* --ssh: started by ssh (sshcli.h) */
	char ssh_addr[SSH_ADDR_MAX]; /* where ssh came in */
	bool ssh_failed;	     /* the line could not be written */
	char token[SESSION_TOKEN_CHARS];
	uint8_t psk[SESSION_PSK_LEN];
	int dirfd;	   /* DIR, when it is there */
	char dirname[256]; /* DIR's name, when it is not there yet */
	bool token_saved;  /* kept in DIR */
	bool token_kept;   /* the kept token of an unfinished transfer */
	struct xfer_callbacks report_cb;
	FILE *msg; /* where words go: stderr when data goes to stdout */
	struct report_xfer *rx;
	struct xfer_result res;
	bool got_result, ok;
	char reason[LR_ERR_MSG];
};

static struct server *volatile the_server;
static _Atomic bool cancelled;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&cancelled, true);
	if (the_server)
		server_stop(the_server);
}

static void on_event(void *ctx, const struct server_event *ev)
{
	struct recv_cli *o = ctx;

	if (ev->kind == SERVER_EV_LISTENING && o->ssh) {
		if (sshcli_far_ready(o->ssh_addr, ev->port, o->token)) {
			o->ssh_failed = true;
			if (the_server)
				server_stop(the_server);
		}
		return;
	}
	if (ev->kind == SERVER_EV_LISTENING) {
		const struct report_recv_banner b = {
			.port = ev->port,
			.token = o->token,
			.dest = o->s.outfd >= 0 ? "standard output" : o->dir,
			.to_stdout = o->s.outfd >= 0,
			.bind_addr = o->s.bind_addr,
			.family = o->s.family,
			.token_kept = o->token_kept,
		};

		report_recv_listening(o->msg, &b, o->json);
		return;
	}
	if (ev->kind == SERVER_EV_XFER_DONE) {
		o->res = ev->xres;
		o->got_result = true;
		o->ok = ev->ok;
		snprintf(o->reason, sizeof(o->reason), "%s",
			 ev->reason ? ev->reason : "");
		return;
	}
	if (ev->kind == SERVER_EV_TEST_DONE) {
		report_server_event(o->msg, o->msg, ev);
		return;
	}
	/* a rejected connection: a wrong token, a scan */
	if (!o->quiet)
		report_server_event(o->msg, o->msg, ev);
}

/* One of recv's own options. */
static int own_option(int c, char **argv, void *ctx, struct lr_err *err)
{
	struct recv_cli *o = ctx;
	switch (c) {
	case OPT_ALLOW_PLAINTEXT: o->s.allow_plaintext = true; return 0;
	case OPT_OVERWRITE: o->s.xfer_flags |= XFER_F_OVERWRITE; return 0;
	case OPT_UPDATE: o->s.xfer_flags |= XFER_F_UPDATE; return 0;
	case OPT_NO_FSYNC: o->s.xfer_flags |= XFER_F_NO_FSYNC; return 0;
	case OPT_KEEP_SETID: o->s.xfer_flags |= XFER_F_KEEP_SETID; return 0;
	case OPT_ALLOW_DEVICES: o->s.allow_devices = true; return 0;
	case OPT_STDOUT:
		o->s.xfer_flags |= XFER_F_STDOUT;
		o->s.outfd = STDOUT_FILENO;
		return 0;
	case OPT_JSON: o->json = true; return 0;
	case OPT_SSH: o->ssh = true; return 0;
	case 'q': o->quiet = true; return 0;
	case 'h': return 1;
	default: return opts_getopt_error(c, argv, err);
	}
}

/* DIR, and what excludes what. */
static int recv_check(int argc, char **argv, struct recv_cli *o,
		      struct lr_err *err)
{
	if (argc - optind > 1)
		return lr_err_set(err, -EINVAL, "unexpected argument '%s'",
				  argv[optind + 1]);
	if (optind < argc)
		o->dir = argv[optind];
	if (!o->dir[0])
		return lr_err_set(err, -EINVAL, "DIR is empty (. is here)");
	if (o->s.outfd >= 0 && optind < argc)
		return lr_err_set(err, -EINVAL,
				  "--stdout and DIR exclude each other");
	if ((o->s.xfer_flags & XFER_F_OVERWRITE) &&
	    (o->s.xfer_flags & XFER_F_UPDATE))
		return lr_err_set(
			err, -EINVAL,
			"--overwrite and --update exclude each other");
	return 0;
}

static int recv_parse(int argc, char **argv, struct recv_cli *o,
		      struct lr_err *err)
{
	int r;

	server_opts_init(&o->s);
	o->s.max_tests = 1;
	o->s.once = true;
	o->s.push_only = true;
	o->s.progress_ms = 250;
	o->s.cancel = &cancelled;
	o->dir = ".";
	r = opts_parse(&common_spec, RECV_SHORTS, long_opts, own_option, o,
		       argc, argv, &o->net, err);
	if (r)
		return r;
	opts_common_addr(&o->net, LR_DEFAULT_PORT, &o->s.port, &o->s.family,
			 &o->s.bind_addr);
	r = recv_check(argc, argv, o, err);
	if (r || !o->ssh)
		return r;
	/* the ssh mode: any port on the address ssh came in on, a fresh
	 * token kept nowhere, nothing on standard output but the line */
	if (o->net.token_file || o->s.outfd >= 0 || o->json)
		return lr_err_set(err, -EINVAL,
				  "--ssh takes none of --token-file, --stdout, "
				  "--json");
	r = sshcli_far_addr(o->ssh_addr, sizeof(o->ssh_addr), err);
	o->s.bind_addr = o->ssh_addr;
	o->s.port = 0;
	o->quiet = true;
	return r;
}

/* The token of an unfinished transfer into DIR, kept in DIR (mode 0600)
 * until the transfer completes, so that running recv again takes the
 * sender's same command (its LINERATE_TOKEN). The name is one a
 * transfer never sends nor writes. */
#define RECV_TOKEN_NAME ".linerate-recv.lrtoken"

/* DIR's kept token into o->token and o->psk: true when there is one,
 * ours alone (a regular file of this user, mode 0600, one link). */
static bool token_load(struct recv_cli *o, int dirfd)
{
	struct stat st;
	ssize_t k;
	int fd;

	fd = openat(dirfd, RECV_TOKEN_NAME,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) || st.st_nlink != 1) {
		close(fd);
		return false;
	}
	k = read(fd, o->token, sizeof(o->token) - 1);
	close(fd);
	if (k <= 0)
		return false;
	o->token[k] = '\0';
	o->token[strcspn(o->token, "\r\n")] = '\0';
	return !session_token_psk(o->token, o->psk);
}

/* Keep the token in DIR (made first when missing: a transfer started). */
static void token_save(struct recv_cli *o)
{
	int fd, i;

	if (o->token_saved || o->net.token_file || o->s.outfd >= 0 || o->ssh)
		return;
	/* DIR below its parent as the transfer makes it: never through a
	 * symlink, and there already when the transfer made it first */
	if (o->dirfd < 0 && o->s.root_sub &&
	    (!mkdirat(o->s.rootfd, o->dirname, 0755) || errno == EEXIST))
		o->dirfd =
			openat(o->s.rootfd, o->dirname,
			       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (o->dirfd < 0)
		return;
	for (i = 0; i < 2; i++) {
		fd = openat(o->dirfd, RECV_TOKEN_NAME,
			    O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW |
				    O_CLOEXEC,
			    0600);
		if (fd >= 0 || errno != EEXIST)
			break;
		unlinkat(o->dirfd, RECV_TOKEN_NAME, 0); /* not ours, or old */
	}
	if (fd < 0)
		return;
	if (dprintf(fd, "%s\n", o->token) > 0 && !fsync(fd))
		o->token_saved = true;
	close(fd);
}

/* The transfer into DIR completed: its token is not needed again. */
static void token_drop(struct recv_cli *o)
{
	if (o->token_saved && o->dirfd >= 0)
		unlinkat(o->dirfd, RECV_TOKEN_NAME, 0);
}

/* recv's own xfer callback: keeps the token once a transfer starts, then
 * reports. */
static void on_xfer_event(void *ctx, const struct xfer_event *ev)
{
	struct recv_cli *o = ctx;

	if (ev->kind == XFER_EV_START)
		token_save(o);
	if (o->report_cb.event)
		o->report_cb.event(o->report_cb.ctx, ev);
}

/* The token: from --token-file, kept in DIR by an unfinished transfer,
 * or new. 0 or an error. */
static int recv_token(struct recv_cli *o, struct lr_err *err)
{
	bool have;
	int r;

	if (o->net.token_file) {
		FILE *f = fopen(o->net.token_file, "r");

		r = opts_token_psk(o->net.token_file, false, o->psk, &have,
				   err);
		if (!r && f && fgets(o->token, sizeof(o->token), f))
			o->token[strcspn(o->token, "\r\n")] = 0;
		if (f)
			fclose(f);
		return r;
	}
	if (!o->ssh && o->dirfd >= 0 && token_load(o, o->dirfd)) {
		o->token_saved = true;
		o->token_kept = true;
		return 0;
	}
	r = session_token_new(o->token) ?: session_token_psk(o->token, o->psk);
	return r ? lr_err_setc(err, r, "making a token") : 0;
}

/* The root: DIR when it is there; else its parent, DIR made when the
 * first transfer starts (a recv that gets nothing leaves nothing). */
static int recv_root(struct recv_cli *o, struct lr_err *err)
{
	char parent[4096];
	size_t n = strlen(o->dir);
	struct stat st;
	char *slash;

	o->dirfd = -1;
	if (o->s.outfd >= 0) {
		o->s.rootfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		return 0;
	}
	o->dirfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->dirfd >= 0) {
		o->s.rootfd = dup(o->dirfd);
		return o->s.rootfd < 0 ? lr_err_setc(err, -errno, "%s", o->dir)
				       : 0;
	}
	/* over ssh, DIR is the user's HOST:PATH: a file there may be the
	 * name of the one file sent (LONE_FILE), so it is taken as missing
	 * (a push of anything else is refused when it comes) */
	if (errno == ENOTDIR && o->ssh && !lstat(o->dir, &st) &&
	    S_ISREG(st.st_mode))
		errno = ENOENT;
	if (errno != ENOENT || n >= sizeof(parent))
		return lr_err_setc(err, -errno, "%s", o->dir);
	memcpy(parent, o->dir, n + 1);
	while (n > 1 && parent[n - 1] == '/')
		parent[--n] = '\0';
	slash = strrchr(parent, '/');
	snprintf(o->dirname, sizeof(o->dirname), "%s",
		 slash ? slash + 1 : parent);
	if (slash == parent)
		parent[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(parent, sizeof(parent), ".");
	if (!strcmp(o->dirname, ".") || !strcmp(o->dirname, ".."))
		return lr_err_setc(err, -ENOENT, "%s", o->dir);
	o->s.rootfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->s.rootfd < 0)
		return lr_err_setc(err, -errno, "%s", parent);
	o->s.root_sub = o->dirname;
	o->s.root_sub_names_file = o->ssh;
	return 0;
}

/* Before listening: the directory files will land in (DIR, or the parent
 * it is made in) takes them: writable, on a file system with room. 0 or
 * -errno with err saying so in words. */
static int recv_writable(struct recv_cli *o, struct lr_err *err)
{
	int fd = o->dirfd >= 0 ? o->dirfd : o->s.rootfd;
	const char *what = o->dirfd >= 0 ? o->dir : "its parent directory";
	struct statvfs v;

	if (o->s.outfd >= 0 || fd < 0)
		return 0;
	if (faccessat(fd, ".", W_OK | X_OK, AT_EACCESS))
		return lr_err_set(err, -errno,
				  "%s: %s cannot be written (%s); nothing "
				  "could be received",
				  o->dir, what,
				  errno == EROFS ? "a read-only file system"
						 : lr_strerror(-errno));
	/* root may use the reserved blocks */
	if (!fstatvfs(fd, &v) && v.f_blocks &&
	    !(geteuid() ? v.f_bavail : v.f_bfree))
		return lr_err_set(err, -ENOSPC,
				  "%s: no space left on its file system; "
				  "nothing could be received",
				  o->dir);
	return 0;
}

static void recv_close(struct recv_cli *o)
{
	if (o->s.rootfd >= 0)
		close(o->s.rootfd);
	if (o->dirfd >= 0)
		close(o->dirfd);
}

/* Serve one transfer; the exit status. */
static int recv_run(struct recv_cli *o)
{
	struct server_callbacks cb = { .event = on_event, .ctx = o };
	struct xfer_callbacks xcb = { .ctx = o, .event = on_xfer_event };
	struct lr_err err = { 0 };
	struct sigaction sa;
	struct server *srv;
	int r;

	o->s.xfer_cb = &xcb;
	signal(SIGPIPE, SIG_IGN);
	r = server_new(&o->s, &cb, &srv, &err);
	if (r) {
		fprintf(stderr, "linerate recv: %s\n", err.msg);
		return EXIT_RUNTIME;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	the_server = srv;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	r = server_run(srv, &err);
	the_server = NULL;
	server_free(srv);
	if (o->ssh)
		sshcli_far_done();
	if (!r && o->got_result && o->ok)
		token_drop(o);
	session_token_wipe(o->psk, sizeof(o->psk));
	session_token_wipe(o->token, sizeof(o->token));
	if (o->got_result && !o->ok)
		opts_add_hint(o->reason, sizeof(o->reason),
			      o->res.first_failure_code);
	if (o->got_result)
		report_xfer_end(o->rx, &o->res, 0, o->ok ? NULL : o->reason);
	else if (r && err.msg[0])
		fprintf(stderr, "linerate recv: %s\n", err.msg);
	if (atomic_load(&cancelled))
		return 130;
	/* --delete could not remove everything: rsync's 23 too */
	if (!r && o->got_result && o->ok)
		return o->res.deletes_failed ? EXIT_PARTIAL : EXIT_OK;
	/* every failure a source the sender could not read: the rest
	 * arrived (rsync's "partial transfer due to error") */
	if (o->got_result && o->res.files_unread &&
	    o->res.files_unread >= o->res.files_failed)
		return EXIT_PARTIAL;
	return EXIT_RUNTIME;
}

int cmd_recv(int argc, char **argv)
{
	struct lr_err err = { 0 };
	struct recv_cli o;
	FILE *out;
	int r;

	memset(&o, 0, sizeof(o));
	o.dirfd = o.s.rootfd = -1;
	r = recv_parse(argc, argv, &o, &err);
	if (r == 1) {
		fputs(cmd_recv_usage, stdout);
		return EXIT_OK;
	}
	if (r) {
		fprintf(stderr,
			"linerate recv: %s\nTry 'linerate recv --help'.\n",
			err.msg);
		return EXIT_USAGE;
	}
	r = recv_root(&o, &err);
	if (!r)
		r = recv_writable(&o, &err);
	if (r) {
		fprintf(stderr, "linerate recv: %s\n", err.msg);
		recv_close(&o);
		return EXIT_RUNTIME;
	}
	r = recv_token(&o, &err);
	if (r) {
		fprintf(stderr,
			"linerate recv: %s\nTry 'linerate recv --help'.\n",
			err.msg);
		recv_close(&o);
		return EXIT_USAGE;
	}
	o.s.psk = o.psk;
	o.msg = o.s.outfd >= 0 ? stderr : stdout;
	out = o.json ? o.msg : stderr;
	o.rx = report_xfer_new(out, o.json ? REPORT_JSON_STREAM : REPORT_HUMAN,
			       o.quiet, !o.json && isatty(fileno(out)),
			       "received");
	if (!o.rx) {
		report_msg(stderr, "out of memory\n");
		recv_close(&o);
		return EXIT_RUNTIME;
	}
	/* a receiver waiting in a log or a service: a line every 5 s */
	report_xfer_set_progress(o.rx, 1);
	report_xfer_callbacks(o.rx, &o.report_cb);
	r = recv_run(&o);
	report_xfer_free(o.rx);
	recv_close(&o);
	return r;
}
