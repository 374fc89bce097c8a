// SPDX-License-Identifier: MIT
/* The ssh mode of the commands, both ends (sshcli.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sshcli.h"
#include "report.h"
#include "banned.h"

/* The far command as one string for the far shell: REMOTE_PATH ARGS;
 * with --copy-self, `sh -c SCRIPT` (selfcopy.h) that runs it when it is
 * there and else a copy of this side's. */
static int far_command(const struct sshcli_opts *o, const char *const args[],
		       char *out, size_t cap, struct lr_err *err)
{
	const char *prog = o->remote_path ? o->remote_path : "linerate";
	char words[8192], script[12288];
	size_t n = 0;
	unsigned i;

	for (i = 0; args[i] && n < sizeof(words); i++)
		n += (size_t)snprintf(words + n, sizeof(words) - n, "%s%s",
				      i ? " " : "", args[i]);
	if (n >= sizeof(words))
		return lr_err_set(err, -E2BIG, "the far command is too long");
	if (!o->copy_self) {
		/* --remote-path is the user's own shell text, as rsync's
		 * --rsync-path is (it may be "sudo linerate") */
		n = (size_t)snprintf(out, cap, "%s %s", prog, words);
		return n >= cap ? lr_err_set(err, -E2BIG,
					     "the far command is too long")
				: 0;
	}
	if (strpbrk(prog, " \t\n"))
		return lr_err_set(err, -EINVAL,
				  "--copy-self runs the far program itself: "
				  "--remote-path must then be one path, not "
				  "'%s'",
				  prog);
	if (selfcopy_far_script(prog, words, script, sizeof(script)) || cap < 7)
		return lr_err_set(err, -E2BIG, "the far command is too long");
	memcpy(out, "sh -c ", 6);
	if (ssh_shell_quote(script, false, out + 6, cap - 6))
		return lr_err_set(err, -E2BIG, "the far command is too long");
	return 0;
}

/* argv for execvp: the -e words, the destination, the far command. */
static int ssh_argv(const struct sshcli_opts *o, const char *dest, char *cmd,
		    char **argv, char *buf, size_t cap, struct lr_err *err)
{
	int n = ssh_split_command(o->rsh ? o->rsh : "ssh", argv,
				  SSH_MAX_ARGS - 2, buf, cap, err);

	if (n < 0)
		return n;
	/* no "--" (a -e wrapper may not take it): remote_parse refuses a
	 * user or host that starts with '-' */
	argv[n++] = (char *)dest;
	argv[n++] = cmd;
	argv[n] = NULL;
	return 0;
}

int sshcli_option(int c, const char *arg, struct sshcli_opts *o)
{
	switch (c) {
	case 'e': o->rsh = arg; return 0;
	case SSHCLI_OPT_REMOTE_PATH: o->remote_path = arg; return 0;
	case SSHCLI_OPT_NO_SSH: o->no_ssh = true; return 0;
	case SSHCLI_OPT_VIA_SSH: o->via_ssh = true; return 0;
	case SSHCLI_OPT_COPY_SELF:
		o->copy_self = true;
		o->copy_self_file = arg;
		return 0;
	default: return 1;
	}
}

int sshcli_wanted(const struct sshcli_opts *o, const struct remote_addr *ra,
		  bool token_file, struct lr_err *err)
{
	bool asked = ra->user[0] || o->rsh || o->via_ssh || o->copy_self;

	if (asked && o->no_ssh)
		return lr_err_set(err, -EINVAL,
				  "%s asks for ssh, and --no-ssh refuses it",
				  ra->user[0]  ? "USER@"
				  : o->rsh     ? "-e"
				  : o->via_ssh ? "--via-ssh"
					       : "--copy-self");
	if (asked && token_file)
		return lr_err_set(err, -EINVAL,
				  "--token-file is for a running server; "
				  "started over ssh, the far end makes its "
				  "own");
	return asked ? 1 : 0;
}

static void *relay_main(void *arg)
{
	struct sshcli *s = arg;

	s->relay_err = relay_run(s->relay);
	return NULL;
}

static int write_all(int fd, const char *p, size_t n)
{
	ssize_t k;

	while (n) {
		k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EPIPE;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The connections through ssh: the far end is told (its relay starts),
 * then ours listens on loopback. */
static int relay_begin(struct sshcli *s, struct lr_err *err)
{
	struct relay_opts ro = { .in = s->far.out,
				 .out = s->far.lifeline,
				 .near = true };
	int r;

	r = write_all(s->far.lifeline, RELAY_LINE, strlen(RELAY_LINE));
	if (!r)
		r = relay_new(&ro, &s->relay);
	if (r)
		return lr_err_setc(err, r, "the connections through ssh");
	if (pthread_create(&s->relay_thread, NULL, relay_main, s)) {
		relay_free(s->relay);
		s->relay = NULL;
		return lr_err_set(err, -EAGAIN, "no thread for the relay");
	}
	snprintf(s->addr, sizeof(s->addr), "%s", relay_addr(s->relay));
	s->port = relay_port(s->relay);
	return 0;
}

/* --copy-self: the far shell found no linerate and said what it runs;
 * the one that runs there goes down ssh's standard input, its size
 * first. */
static int send_self(struct sshcli *s, const struct sshcli_opts *o,
		     const struct ssh_self *self, struct lr_err *err)
{
	char exe[SELFCOPY_PATH_MAX], head[32], buf[65536];
	struct selfcopy_pick pick;
	uint64_t off = 0;
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int r;

	if (k <= 0)
		return lr_err_setc(err, k < 0 ? -errno : -ENOENT,
				   "--copy-self: /proc/self/exe");
	exe[k] = '\0';
	/* replaced since it started (an upgrade): the path names the new
	 * one, which is what to copy */
	if (k > 10 && !strcmp(exe + k - 10, " (deleted)"))
		exe[k - 10] = '\0';
	r = selfcopy_find(exe, o->copy_self_file, self, &pick, err);
	if (r && pick.tried[0])
		report_msg(stderr, "--copy-self looked at:\n%s", pick.tried);
	if (r)
		return r;
	report_msg(stderr,
		   "no linerate on %s (%s); copying %s (%.1f MB%s) "
		   "there for this run\n",
		   s->host, self->machine, pick.path, (double)pick.size / 1e6,
		   pick.dynamic ? ", dynamically linked: it needs the same "
				  "libraries there"
				: "");
	snprintf(head, sizeof(head), "%llu\n", (unsigned long long)pick.size);
	r = write_all(s->far.lifeline, head, strlen(head));
	while (!r && off < pick.size) {
		size_t want = pick.size - off < sizeof(buf)
				      ? (size_t)(pick.size - off)
				      : sizeof(buf);

		k = pread(pick.fd, buf, want, (off_t)off);
		if (k <= 0) {
			r = k < 0 ? -errno : -EIO;
			break;
		}
		r = write_all(s->far.lifeline, buf, (size_t)k);
		off += (uint64_t)k;
	}
	close(pick.fd);
	return r ? lr_err_setc(err, r, "copying %s to %s", pick.path, s->host)
		 : 0;
}

/* Straight to the far end's port, or through ssh when it cannot be
 * reached (said why) or --via-ssh asks. */
static int choose_path(struct sshcli *s, const struct sshcli_opts *o,
		       struct lr_err *err)
{
	struct lr_err ce = { 0 };

	snprintf(s->addr, sizeof(s->addr), "%s", s->boot.addr);
	s->port = s->boot.port;
	if (!o->via_ssh) {
		if (!ssh_try_connect(s->boot.addr, s->boot.port, AF_UNSPEC,
				     SSHCLI_CONNECT_MS, &ce))
			return 0;
		report_msg(stderr,
			   "no direct connection to the far end (%s); "
			   "the data goes through ssh instead, slower\n",
			   ce.msg);
	}
	return relay_begin(s, err);
}

int sshcli_start(struct sshcli *s, const struct sshcli_opts *o,
		 const struct remote_addr *ra, const char *const far_args[],
		 uint8_t psk[SESSION_PSK_LEN], struct lr_err *err)
{
	char dest[REMOTE_MAX_USER + REMOTE_MAX_HOST + 2], cmd[32768];
	struct ssh_self self;
	char words[1024], *argv[SSH_MAX_ARGS];
	int r;

	memset(s, 0, sizeof(*s));
	snprintf(s->host, sizeof(s->host), "%s", ra->host);
	if (remote_ssh_dest(ra, dest, sizeof(dest)))
		return lr_err_set(err, -ENAMETOOLONG, "%s: too long", ra->host);
	r = far_command(o, far_args, cmd, sizeof(cmd), err);
	if (!r)
		r = ssh_argv(o, dest, cmd, argv, words, sizeof(words), err);
	if (!r)
		r = ssh_far_start(&s->far, argv, STDERR_FILENO, err);
	if (r)
		return r;
	s->started = true;
	r = ssh_far_boot(&s->far, SSHCLI_BOOT_MS, ra->host, &s->boot,
			 o->copy_self ? &self : NULL, err);
	if (r == 1) {
		/* no linerate there: a copy of one, then its line */
		r = send_self(s, o, &self, err);
		if (!r)
			r = ssh_far_boot(&s->far, SSHCLI_BOOT_MS, ra->host,
					 &s->boot, NULL, err);
	}
	if (r) {
		/* ssh's own words, as it said them (a failed login): the
		 * last line is in err; more than one, here */
		if (s->far.status == 255) {
			char tail[SSH_TAIL_MAX];
			size_t n;

			ssh_far_tail(&s->far, tail, sizeof(tail));
			n = strlen(tail);
			while (n && tail[n - 1] == '\n')
				tail[--n] = '\0';
			if (strchr(tail, '\n'))
				fprintf(stderr, "%s\n", tail);
		}
		ssh_far_finish(&s->far, 0, 2000);
		s->started = false;
		return r;
	}
	ssh_far_go_live(&s->far);
	r = session_token_psk(s->boot.token, psk);
	if (r) {
		sshcli_finish(s, false, NULL);
		return lr_err_setc(err, r, "the far end's token");
	}
	r = choose_path(s, o, err);
	if (r)
		sshcli_finish(s, false, NULL);
	return r;
}

/* The relay's end: what this side said has left; a far end that ends by
 * itself has (its output ended), or is cut off. */
static void relay_end(struct sshcli *s, bool ok)
{
	if (!s->relay)
		return;
	relay_wait_flushed(s->relay, 2000);
	if (ok && s->ends_itself)
		relay_wait_done(s->relay, SSHCLI_LINGER_MS);
	relay_stop(s->relay);
	pthread_join(s->relay_thread, NULL);
	relay_free(s->relay);
	s->relay = NULL;
	if (s->relay_err)
		report_msg(stderr, "the connections through ssh: %s\n",
			   lr_strerror(-s->relay_err));
}

const char *sshcli_link_host(const struct sshcli *s,
			     const struct remote_addr *ra)
{
	if (!s->relay)
		return NULL;
	return s->boot.addr[0] ? s->boot.addr : ra->host;
}

int sshcli_finish(struct sshcli *s, bool ok, struct lr_err *err)
{
	char last[256];
	int st;

	if (!s->started)
		return 0;
	s->started = false;
	session_token_wipe(s->boot.token, sizeof(s->boot.token));
	relay_end(s, ok);
	/* after a transfer that worked the far end ends by itself (it
	 * serves one); a far end that failed first has ended, or ends now */
	st = ssh_far_finish(&s->far,
			    ok && s->ends_itself ? SSHCLI_LINGER_MS : 0, 2000);
	if (st == 0)
		return 0;
	if (!err)
		return -EPIPE;
	ssh_far_last_line(&s->far, last, sizeof(last));
	if (!err->msg[0]) {
		lr_err_set(
			err, -EPIPE,
			"the far end (linerate on %s) ended with exit %d%s%s",
			s->host, st, last[0] ? ": " : "", last);
	} else {
		size_t n = strlen(err->msg);

		snprintf(
			err->msg + n, sizeof(err->msg) - n,
			" (the far end, linerate on %s, ended with exit %d%s%s)",
			s->host, st, last[0] ? ": " : "", last);
	}
	return -EPIPE;
}

int sshcli_far_addr(char *addr, unsigned cap, struct lr_err *err)
{
	return ssh_conn_local_addr(getenv("SSH_CONNECTION"), addr, cap, err);
}

/* The far end's relay, when the near end asks for one: guarded by
 * far_lock (made by the lifeline thread, never freed: the process ends
 * with it). */
static pthread_mutex_t far_lock = PTHREAD_MUTEX_INITIALIZER;
static struct relay *far_relay;
/* set before the lifeline thread starts, read-only after */
static int far_out = -1; /* ssh's standard output, for the relay */
static char far_addr[SSH_ADDR_MAX];
static uint16_t far_port;

/* Carry the connections through standard input and output (pre: what
 * was read after the relay's line) until standard input ends. */
static void far_relay_run(const char *pre, size_t n)
{
	struct relay_opts ro = { .in = STDIN_FILENO,
				 .out = far_out,
				 .addr = far_addr,
				 .port = far_port,
				 .pre = (const uint8_t *)pre,
				 .pre_len = n };
	struct relay *r;
	int e = relay_new(&ro, &r);

	if (!e) {
		pthread_mutex_lock(&far_lock);
		far_relay = r;
		pthread_mutex_unlock(&far_lock);
		e = relay_run(r);
	}
	if (e)
		report_msg(stderr, "the connections through ssh: %s\n",
			   lr_strerror(-e));
}

/* The lifeline: standard input, which ssh closes when the near end
 * closes its side or dies. Its first bytes may ask for the relay. */
static void *lifeline_main(void *arg)
{
	const size_t want = strlen(RELAY_LINE);
	char buf[256];
	size_t have = 0;
	ssize_t k;

	(void)arg;
	while (have < want) {
		k = read(STDIN_FILENO, buf + have, sizeof(buf) - have);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		have += (size_t)k;
	}
	if (have >= want && !memcmp(buf, RELAY_LINE, want))
		far_relay_run(buf + want, have - want);
	else if (have >= want)
		do
			k = read(STDIN_FILENO, buf, sizeof(buf));
		while (k > 0 || (k < 0 && errno == EINTR));
	kill(getpid(), SIGTERM);
	return NULL;
}

void sshcli_far_done(void)
{
	struct relay *r;

	pthread_mutex_lock(&far_lock);
	r = far_relay;
	pthread_mutex_unlock(&far_lock);
	if (r)
		relay_wait_flushed(r, 5000);
}

int sshcli_far_ready(const char *addr, uint16_t port, const char *token)
{
	struct ssh_boot b = { .port = port };
	char line[SSH_BOOT_MAX + 2];
	pthread_t t;
	int r;

	snprintf(b.addr, sizeof(b.addr), "%s", addr);
	snprintf(b.token, sizeof(b.token), "%s", token);
	r = ssh_boot_format(&b, line, sizeof(line));
	session_token_wipe(b.token, sizeof(b.token));
	if (r)
		return r;
	fputs(line, stdout);
	session_token_wipe(line, sizeof(line));
	if (fflush(stdout))
		return -errno;
	/* ssh's standard output stays for the relay's frames */
	far_out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	snprintf(far_addr, sizeof(far_addr), "%s", addr);
	far_port = port;
	if (far_out < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		return -errno;
	if (pthread_create(&t, NULL, lifeline_main, NULL))
		return -EAGAIN;
	pthread_detach(t);
	return 0;
}
