// SPDX-License-Identifier: MIT
/* The ssh mode of the commands, both ends (sshcli.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sshcli.h"
#include "banned.h"

/* The far command as one string for the far shell: REMOTE_PATH ARGS. */
static int far_command(const struct sshcli_opts *o, const char *const args[],
		       char *out, size_t cap, struct lr_err *err)
{
	size_t n;
	unsigned i;

	/* --remote-path is the user's own shell text, as rsync's
	 * --rsync-path is (it may be "sudo linerate") */
	n = (size_t)snprintf(out, cap, "%s",
			     o->remote_path ? o->remote_path : "linerate");
	for (i = 0; args[i] && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, " %s", args[i]);
	if (n >= cap)
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
	default: return 1;
	}
}

int sshcli_wanted(const struct sshcli_opts *o, const struct remote_addr *ra,
		  bool token_file, struct lr_err *err)
{
	bool asked = ra->user[0] || o->rsh;

	if (asked && o->no_ssh)
		return lr_err_set(err, -EINVAL,
				  "%s asks for ssh, and --no-ssh refuses it",
				  ra->user[0] ? "USER@" : "-e");
	if (asked && token_file)
		return lr_err_set(err, -EINVAL,
				  "--token-file is for a running server; "
				  "started over ssh, the far end makes its "
				  "own");
	return asked ? 1 : 0;
}

int sshcli_start(struct sshcli *s, const struct sshcli_opts *o,
		 const struct remote_addr *ra, const char *const far_args[],
		 uint8_t psk[SESSION_PSK_LEN], struct lr_err *err)
{
	char dest[REMOTE_MAX_USER + REMOTE_MAX_HOST + 2], cmd[8192];
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
	r = ssh_far_boot(&s->far, SSHCLI_BOOT_MS, ra->host, &s->boot, err);
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
	return 0;
}

int sshcli_finish(struct sshcli *s, bool ok, struct lr_err *err)
{
	char last[256];
	int st;

	if (!s->started)
		return 0;
	s->started = false;
	session_token_wipe(s->boot.token, sizeof(s->boot.token));
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

/* The lifeline: standard input, which ssh closes when the near end
 * closes its side or dies. */
static void *lifeline_main(void *arg)
{
	char buf[256];
	ssize_t k;

	(void)arg;
	do
		k = read(STDIN_FILENO, buf, sizeof(buf));
	while (k > 0 || (k < 0 && errno == EINTR));
	kill(getpid(), SIGTERM);
	return NULL;
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
	if (fflush(stdout) || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		return -errno;
	if (pthread_create(&t, NULL, lifeline_main, NULL))
		return -EAGAIN;
	pthread_detach(t);
	return 0;
}
