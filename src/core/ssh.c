// SPDX-License-Identifier: MIT
/* The far end over ssh: its line, the quoting of its command, and ssh run
 * as a child with its three standard streams on pipes (ssh.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "net.h"
#include "ssh.h"
#include "banned.h"

/* lines of a far login's own (a motd from a shell's rc file) skipped
 * before the one that counts, at most this many bytes */
#define SSH_JUNK_MAX 16384

static bool numeric_addr(const char *s, size_t n)
{
	char buf[SSH_ADDR_MAX];
	unsigned char bin[16];

	if (!n || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return inet_pton(AF_INET, buf, bin) == 1 ||
	       inet_pton(AF_INET6, buf, bin) == 1;
}

int ssh_conn_local_addr(const char *sc, char *addr, size_t cap,
			struct lr_err *err)
{
	const char *w[4];
	size_t n[4];
	const char *p = sc;
	unsigned i;

	if (!sc || !*sc)
		return lr_err_set(err, -EINVAL,
				  "SSH_CONNECTION is not set: the ssh mode "
				  "is for a far end started by ssh");
	for (i = 0; i < 4; i++) {
		p += strspn(p, " ");
		w[i] = p;
		n[i] = strcspn(p, " ");
		p += n[i];
		if (!n[i])
			break;
	}
	if (i < 4 || !numeric_addr(w[2], n[2]) || n[2] >= cap)
		return lr_err_set(err, -EINVAL,
				  "SSH_CONNECTION '%.80s' is not 'client "
				  "port server port'",
				  sc);
	memcpy(addr, w[2], n[2]);
	addr[n[2]] = '\0';
	return 0;
}

int ssh_boot_format(const struct ssh_boot *b, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s %d %s %u %s\n", SSH_BOOT_WORD,
			 SSH_BOOT_VERSION, b->addr, (unsigned)b->port,
			 b->token);

	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static int bad_line(struct lr_err *err, const char *what)
{
	return lr_err_set(err, LR_EBADMSG,
			  "the far end's line is not linerate's: %s", what);
}

/* "1".."65535", no sign, no leading zero */
static bool parse_port(const char *s, size_t n, uint16_t *port)
{
	unsigned long v = 0;
	size_t i;

	if (!n || n > 5 || s[0] == '0')
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

static int boot_token(const char *s, size_t n, struct ssh_boot *b,
		      struct lr_err *err)
{
	uint8_t psk[SESSION_PSK_LEN];
	int r;

	if (!n || n >= sizeof(b->token))
		return bad_line(err, "no token of the right length");
	memcpy(b->token, s, n);
	b->token[n] = '\0';
	r = session_token_psk(b->token, psk);
	session_token_wipe(psk, sizeof(psk));
	if (r) {
		session_token_wipe(b->token, sizeof(b->token));
		return bad_line(err, "the token does not parse");
	}
	return 0;
}

/* Both lines: five words, one space apart, a newline (and a CR before
 * it) dropped, at most SSH_BOOT_MAX bytes. */
#define SSH_WORDS 5

static int split_line(const char *line, size_t len, const char *w[SSH_WORDS],
		      size_t n[SSH_WORDS], struct lr_err *err)
{
	size_t at = 0;
	unsigned i;

	if (len && line[len - 1] == '\n')
		len--;
	if (len && line[len - 1] == '\r')
		len--;
	if (len > SSH_BOOT_MAX)
		return bad_line(err, "too long");
	for (i = 0; i < SSH_WORDS; i++) {
		w[i] = line + at;
		n[i] = 0;
		while (at < len && line[at] != ' ') {
			if ((unsigned char)line[at] < ' ')
				return bad_line(err, "a control character");
			at++;
			n[i]++;
		}
		if (!n[i] ||
		    (i < SSH_WORDS - 1 && (at >= len || line[at] != ' ')))
			return bad_line(err, "a word missing");
		at++;
	}
	if (at <= len)
		return bad_line(err, "more words than five");
	return 0;
}

int ssh_boot_parse(const char *line, size_t len, struct ssh_boot *b,
		   struct lr_err *err)
{
	const char *w[SSH_WORDS];
	size_t n[SSH_WORDS];
	int r;

	memset(b, 0, sizeof(*b));
	r = split_line(line, len, w, n, err);
	if (r)
		return r;
	if (n[0] != strlen(SSH_BOOT_WORD) || memcmp(w[0], SSH_BOOT_WORD, n[0]))
		return bad_line(err, "no LINERATE-SSH");
	if (n[1] != 1 || w[1][0] != '0' + SSH_BOOT_VERSION)
		return lr_err_set(err, LR_EVERSION,
				  "the far end's linerate speaks another "
				  "version of the ssh start (%.*s, this one "
				  "%d): install the same release on both",
				  (int)(n[1] > 8 ? 8 : n[1]), w[1],
				  SSH_BOOT_VERSION);
	if (!numeric_addr(w[2], n[2]))
		return bad_line(err, "no numeric address");
	memcpy(b->addr, w[2], n[2]);
	b->addr[n[2]] = '\0';
	if (!parse_port(w[3], n[3], &b->port))
		return bad_line(err, "no port 1-65535");
	return boot_token(w[4], n[4], b, err);
}

static bool machine_ok(const char *s, size_t n)
{
	size_t i;

	if (!n || n > SSH_MACHINE_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-' || c == '+'))
			return false;
	}
	return true;
}

static int self_word(char *out, const char *w, size_t n, struct lr_err *err,
		     const char *what)
{
	if (!machine_ok(w, n))
		return bad_line(err, what);
	memcpy(out, w, n);
	out[n] = '\0';
	return 0;
}

int ssh_self_parse(const char *line, size_t len, struct ssh_self *s,
		   struct lr_err *err)
{
	const char *w[SSH_WORDS];
	size_t n[SSH_WORDS];
	int r;

	memset(s, 0, sizeof(*s));
	r = split_line(line, len, w, n, err);
	if (r)
		return r;
	if (n[0] != strlen(SSH_SELF_WORD) || memcmp(w[0], SSH_SELF_WORD, n[0]))
		return bad_line(err, "no LINERATE-SELF");
	if (n[1] != 1 || w[1][0] != '0' + SSH_SELF_VERSION)
		return lr_err_set(err, LR_EVERSION,
				  "the far shell speaks another version of "
				  "--copy-self (%.*s, this one %d)",
				  (int)(n[1] > 8 ? 8 : n[1]), w[1],
				  SSH_SELF_VERSION);
	r = self_word(s->os, w[2], n[2], err, "no system name");
	if (!r)
		r = self_word(s->machine, w[3], n[3], err, "no machine name");
	if (r)
		return r;
	if (n[4] == 6 && !memcmp(w[4], "little", 6))
		s->order = 1;
	else if (n[4] == 3 && !memcmp(w[4], "big", 3))
		s->order = 2;
	else if (!(n[4] == 7 && !memcmp(w[4], "unknown", 7)))
		return bad_line(err, "no byte order");
	return 0;
}

static bool tilde_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

int ssh_shell_quote(const char *s, bool tilde, char *out, size_t cap)
{
	size_t o = 0, pre = 0, i;
	const char *p;

	/* the tilde-prefix and the '/' after it unquoted: the shell expands
	 * a prefix only up to an unquoted '/' */
	if (tilde && s[0] == '~') {
		pre = 1;
		while (s[pre] && s[pre] != '/' && tilde_ok(s[pre]))
			pre++;
		if (s[pre] == '/')
			pre++;
		else if (s[pre])
			pre = 0; /* ~ then something odd: all quoted */
	}
	if (pre >= cap)
		return -ENAMETOOLONG;
	memcpy(out, s, pre);
	o = pre;
	p = s + pre;
	if (!*p && pre) {
		out[o] = '\0';
		return 0;
	}
	for (i = 0;; i++) {
		const char *piece = p[i] == '\'' ? "'\\''" : NULL;
		size_t k = piece ? 4 : 1;

		if (i == 0) {
			if (o + 1 >= cap)
				return -ENAMETOOLONG;
			out[o++] = '\'';
		}
		if (!p[i])
			break;
		if (o + k >= cap)
			return -ENAMETOOLONG;
		if (piece)
			memcpy(out + o, piece, k);
		else
			out[o] = p[i];
		o += k;
	}
	if (o + 2 > cap)
		return -ENAMETOOLONG;
	out[o++] = '\'';
	out[o] = '\0';
	return 0;
}

int ssh_split_command(const char *cmd, char **words, unsigned max, char *buf,
		      size_t cap, struct lr_err *err)
{
	size_t o = 0;
	unsigned n = 0;
	const char *p = cmd;

	while (*p) {
		char q = 0;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (n + 1 >= max)
			return lr_err_set(err, -E2BIG, "-e: more than %u words",
					  max - 1);
		words[n++] = buf + o;
		for (; *p && (q || *p != ' '); p++) {
			if (!q && (*p == '\'' || *p == '"')) {
				q = *p;
				continue;
			}
			if (q && *p == q) {
				if (p[1] != q) {
					q = 0;
					continue;
				}
				p++; /* a doubled quote: one of it */
			}
			if (o + 1 >= cap)
				return lr_err_set(err, -E2BIG, "-e: too long");
			buf[o++] = *p;
		}
		if (q)
			return lr_err_set(err, -EINVAL,
					  "-e '%.60s': a quote is not closed",
					  cmd);
		if (o + 1 >= cap)
			return lr_err_set(err, -E2BIG, "-e: too long");
		buf[o++] = '\0';
	}
	if (!n)
		return lr_err_set(err, -EINVAL, "-e: no command");
	words[n] = NULL;
	return (int)n;
}

/* ---- ssh as a child ---- */

static void tail_add(struct ssh_far *f, const char *s, size_t n)
{
	if (n >= SSH_TAIL_MAX) {
		s += n - (SSH_TAIL_MAX - 1);
		n = SSH_TAIL_MAX - 1;
	}
	if (f->tail_len + n >= SSH_TAIL_MAX) {
		size_t drop = f->tail_len + n - (SSH_TAIL_MAX - 1);

		memmove(f->tail, f->tail + drop, f->tail_len - drop);
		f->tail_len -= drop;
	}
	memcpy(f->tail + f->tail_len, s, n);
	f->tail_len += n;
}

static void write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t k = write(fd, s, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

/* ssh's standard error: kept (its tail), and copied once live. */
static void *relay_main(void *arg)
{
	struct ssh_far *f = arg;
	char buf[1024];
	ssize_t k;
	bool live;

	for (;;) {
		struct pollfd pfd = { .fd = f->errfd, .events = POLLIN };
		bool stop;

		pthread_mutex_lock(&f->lock);
		stop = f->stop;
		pthread_mutex_unlock(&f->lock);
		if (stop)
			break;
		/* a bounded wait: a grandchild of ssh (a ProxyCommand) may
		 * hold the pipe open after ssh has ended */
		if (poll(&pfd, 1, 200) == 0)
			continue;
		k = read(f->errfd, buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		pthread_mutex_lock(&f->lock);
		tail_add(f, buf, (size_t)k);
		live = f->live;
		pthread_mutex_unlock(&f->lock);
		if (live && f->relay_to >= 0)
			write_all(f->relay_to, buf, (size_t)k);
	}
	pthread_mutex_lock(&f->lock);
	f->relay_done = true;
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The child: its pipes as 0, 1, 2, then ssh; an exec failure's errno
 * through report (close-on-exec: nothing arrives when exec works). */
static void child(char *const argv[], char *const envp[], const int in[2],
		  const int out[2], const int er[2], int report)
{
	int e;

	if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(er[1], 2) < 0)
		_exit(126);
	signal(SIGPIPE, SIG_DFL);
	execvpe(argv[0], argv, envp);
	e = errno;
	if (write(report, &e, sizeof(e)) < 0) {
		/* the parent then sees no report and an exit of 126 */
	}
	_exit(126);
}

static int spawn(struct ssh_far *f, char *const argv[], char *const envp[],
		 int fds[4][2], struct lr_err *err)
{
	int e = 0;
	ssize_t k;

	f->pid = fork();
	if (f->pid < 0) {
		f->pid = 0;
		return lr_err_setc(err, -errno, "starting %s", argv[0]);
	}
	if (f->pid == 0)
		child(argv, envp, fds[0], fds[1], fds[2], fds[3][1]);
	close_fd(&fds[3][1]);
	do
		k = read(fds[3][0], &e, sizeof(e));
	while (k < 0 && errno == EINTR);
	close_fd(&fds[3][0]);
	if (k == (ssize_t)sizeof(e)) {
		waitpid(f->pid, NULL, 0);
		f->pid = 0;
		return lr_err_setc(err, -e, "cannot run '%s'", argv[0]);
	}
	return 0;
}

/* This process's environment without LINERATE_TOKEN: ssh, a -e command
 * and a ProxyCommand have no use for it. */
static int clean_env(char ***out)
{
	size_t n = 0, k = 0;
	char **e;

	while (environ[n])
		n++;
	e = calloc(n + 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (n = 0; environ[n]; n++)
		if (strncmp(environ[n], "LINERATE_TOKEN=", 15))
			e[k++] = environ[n];
	e[k] = NULL;
	*out = e;
	return 0;
}

int ssh_far_start(struct ssh_far *f, char *const argv[], int relay_to,
		  struct lr_err *err)
{
	char **envp = NULL;
	int fds[4][2], i, r;

	memset(f, 0, sizeof(*f));
	f->lifeline = f->out = f->errfd = -1;
	f->relay_to = relay_to;
	f->status = -1;
	for (i = 0; i < 4; i++)
		fds[i][0] = fds[i][1] = -1;
	for (i = 0; i < 4; i++)
		if (pipe2(fds[i], O_CLOEXEC)) {
			r = lr_err_setc(err, -errno, "pipe");
			goto fail;
		}
	pthread_mutex_init(&f->lock, NULL);
	r = clean_env(&envp);
	if (!r) {
		r = spawn(f, argv, envp, fds, err);
		free(envp);
	} else {
		lr_err_setc(err, r, "the environment for ssh");
	}
	if (r)
		goto fail_lock;
	close_fd(&fds[0][0]);
	close_fd(&fds[1][1]);
	close_fd(&fds[2][1]);
	f->lifeline = fds[0][1];
	f->out = fds[1][0];
	f->errfd = fds[2][0];
	if (pthread_create(&f->relay, NULL, relay_main, f)) {
		/* nothing would read ssh's standard error: do not go on */
		ssh_far_finish(f, 0, 1000);
		ssh_far_free(f);
		return lr_err_set(err, -EAGAIN, "no thread for ssh's messages");
	}
	f->relaying = true;
	return 0;
fail_lock:
	pthread_mutex_destroy(&f->lock);
fail:
	for (i = 0; i < 4; i++) {
		close_fd(&fds[i][0]);
		close_fd(&fds[i][1]);
	}
	return r;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reap ssh, waiting up to ms. True when it has ended. */
static bool reap(struct ssh_far *f, int ms)
{
	int64_t end = now_ms() + ms;
	int st;

	if (!f->pid)
		return true;
	for (;;) {
		pid_t p = waitpid(f->pid, &st, WNOHANG);

		if (p == f->pid) {
			f->status = WIFEXITED(st) ? WEXITSTATUS(st)
						  : 128 + WTERMSIG(st);
			f->pid = 0;
			return true;
		}
		if (p < 0 && errno != EINTR) {
			f->pid = 0;
			return true;
		}
		if (now_ms() >= end)
			return false;
		usleep(10000);
	}
}

bool ssh_far_ended(struct ssh_far *f)
{
	return reap(f, 0);
}

void ssh_far_tail(struct ssh_far *f, char *out, size_t cap)
{
	pthread_mutex_lock(&f->lock);
	lr_escape(f->tail, f->tail_len, out, cap, false);
	pthread_mutex_unlock(&f->lock);
}

void ssh_far_last_line(struct ssh_far *f, char *out, size_t cap)
{
	size_t end, start;

	pthread_mutex_lock(&f->lock);
	end = f->tail_len;
	while (end && (f->tail[end - 1] == '\n' || f->tail[end - 1] == '\r'))
		end--;
	for (;;) {
		start = end;
		while (start && f->tail[start - 1] != '\n')
			start--;
		/* a usage error's second line says where help is: the one
		 * before it says what was wrong */
		if (!start || end - start < 5 ||
		    memcmp(f->tail + start, "Try '", 5))
			break;
		end = start - 1;
		while (end &&
		       (f->tail[end - 1] == '\n' || f->tail[end - 1] == '\r'))
			end--;
	}
	lr_escape(f->tail + start, end - start, out, cap, false);
	pthread_mutex_unlock(&f->lock);
}

void ssh_far_go_live(struct ssh_far *f)
{
	char keep[SSH_TAIL_MAX];
	size_t n;

	pthread_mutex_lock(&f->lock);
	n = f->tail_len;
	memcpy(keep, f->tail, n);
	f->live = true;
	pthread_mutex_unlock(&f->lock);
	if (f->relay_to >= 0)
		write_all(f->relay_to, keep, n);
}

/* ssh ended before the line: why, in one message. */
static int ended_early(struct ssh_far *f, const char *host, struct lr_err *err)
{
	char last[256];

	/* its standard error to its end, so that the tail is whole (a
	 * bounded wait: a grandchild of ssh may keep it open) */
	if (f->relaying) {
		bool done = false;
		int i;

		for (i = 0; i < 50 && !done; i++) {
			pthread_mutex_lock(&f->lock);
			done = f->relay_done;
			pthread_mutex_unlock(&f->lock);
			if (!done)
				usleep(20000);
		}
		pthread_mutex_lock(&f->lock);
		f->stop = true;
		pthread_mutex_unlock(&f->lock);
		pthread_join(f->relay, NULL);
		f->relaying = false;
	}
	ssh_far_last_line(f, last, sizeof(last));
	if (f->status == 127)
		return lr_err_set(err, -ENOENT,
				  "linerate is not installed on %s: ssh said "
				  "'%s'; install it there, give "
				  "--remote-path, or --copy-self to copy "
				  "this one there for the run",
				  host, last);
	if (f->status == 255)
		return lr_err_set(err, -ECONNREFUSED, "ssh to %s failed: %s",
				  host, last[0] ? last : "exit 255");
	return lr_err_set(err, -EPIPE,
			  "the far end (linerate on %s) ended before it was "
			  "ready, exit %d: %s",
			  host, f->status, last[0] ? last : "no message");
}

/* Read a byte of ssh's standard output into line (at most cap bytes
 * kept); 1 when a whole line ending in '\n' is there, 0 for more, -1 at
 * the end of the stream. A line longer than any of ours is not it: its
 * bytes are dropped (and counted in *junk) up to its end. */
static int read_line(int fd, char *line, size_t cap, size_t *len, bool *skip,
		     size_t *junk)
{
	char c;
	ssize_t k;

	do
		k = read(fd, &c, 1);
	while (k < 0 && errno == EINTR);
	if (k <= 0)
		return -1;
	if (*skip) {
		(*junk)++;
		*skip = c != '\n';
		return 0;
	}
	line[(*len)++] = c;
	if (c == '\n')
		return 1;
	if (*len >= cap) {
		*junk += *len;
		*len = 0;
		*skip = true;
	}
	return 0;
}

/* The wait for the line, into line (cap bytes). */
static int boot_wait(struct ssh_far *f, int timeout_ms, const char *host,
		     char *line, size_t cap, struct ssh_boot *b,
		     struct ssh_self *self, struct lr_err *err)
{
	size_t len = 0, junk = 0;
	bool skip = false;
	int64_t end = now_ms() + timeout_ms;
	struct pollfd pfd = { .fd = f->out, .events = POLLIN };
	const size_t wlen = strlen(SSH_BOOT_WORD);

	for (;;) {
		int64_t left = end - now_ms();
		int r;

		if (left <= 0)
			return lr_err_set(err, LR_ETIMEOUT,
					  "no word from the far end on %s "
					  "within %d s",
					  host, timeout_ms / 1000);
		if (junk > SSH_JUNK_MAX)
			return lr_err_set(err, LR_EBADMSG,
					  "the far end on %s wrote %d bytes "
					  "and no LINERATE-SSH line",
					  host, SSH_JUNK_MAX);
		r = poll(&pfd, 1, (int)left);
		if (r <= 0)
			continue;
		r = read_line(f->out, line, cap, &len, &skip, &junk);
		if (r < 0) {
			reap(f, 5000);
			return ended_early(f, host, err);
		}
		if (!r)
			continue;
		if (len > wlen && !memcmp(line, SSH_BOOT_WORD " ", wlen + 1))
			return ssh_boot_parse(line, len, b, err);
		if (self && len > strlen(SSH_SELF_WORD) &&
		    !memcmp(line, SSH_SELF_WORD " ",
			    strlen(SSH_SELF_WORD) + 1)) {
			r = ssh_self_parse(line, len, self, err);
			return r ? r : 1;
		}
		junk += len;
		len = 0;
	}
}

int ssh_far_boot(struct ssh_far *f, int timeout_ms, const char *host,
		 struct ssh_boot *b, struct ssh_self *self, struct lr_err *err)
{
	char line[SSH_BOOT_MAX + 2];
	int r = boot_wait(f, timeout_ms, host, line, sizeof(line) - 1, b, self,
			  err);

	session_token_wipe(line, sizeof(line));
	return r;
}

int ssh_try_connect(const char *host, uint16_t port, int family, int timeout_ms,
		    struct lr_err *err)
{
	const struct net_sockopts so = { 0 };
	struct net_addr a;
	int fd, r;

	r = net_resolve(host, port, family, false, &a, err);
	if (r)
		return r;
	fd = net_connect(&a, NULL, &so, timeout_ms, err);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

bool ssh_nothing_listens(const char *host, uint16_t port, int family,
			 int timeout_ms)
{
	struct lr_err e = { 0 };

	return ssh_try_connect(host, port, family, timeout_ms, &e) ==
	       -ECONNREFUSED;
}

int ssh_far_finish(struct ssh_far *f, int linger_ms, int timeout_ms)
{
	/* a far end with its work done ends by itself: let it, before its
	 * lifeline closes (which would cut its last steps short) */
	if (linger_ms > 0)
		reap(f, linger_ms);
	close_fd(&f->lifeline);
	if (!reap(f, timeout_ms)) {
		kill(f->pid, SIGTERM);
		if (!reap(f, 1000)) {
			kill(f->pid, SIGKILL);
			reap(f, 5000);
		}
	}
	close_fd(&f->out);
	if (f->relaying) {
		pthread_mutex_lock(&f->lock);
		f->stop = true;
		pthread_mutex_unlock(&f->lock);
		pthread_join(f->relay, NULL);
		f->relaying = false;
	}
	close_fd(&f->errfd);
	return f->status;
}

void ssh_far_free(struct ssh_far *f)
{
	pthread_mutex_destroy(&f->lock);
}
