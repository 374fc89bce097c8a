// SPDX-License-Identifier: MIT
/* iperf3's output options, shared by bench and serve (outopts.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "outopts.h"
#include "report.h"
#include "banned.h"

/* The pid file to remove when a signal ends the process, and the
 * dispositions replaced to do it. */
static char pid_path[4096];
#define PID_SIGS 3
static const int pid_sigs[PID_SIGS] = { SIGINT, SIGTERM, SIGHUP };
static struct sigaction pid_old[PID_SIGS];
static bool pid_set[PID_SIGS];

static void pid_signals_back(void);

/* How long outopts_end waits for a pump's last bytes. */
#define PUMP_DRAIN_S 2

int outopts_option(struct outopts *o, int c, const char *arg,
		   struct lr_err *err)
{
	switch (c) {
	case 'f':
		if (strlen(arg) != 1 || !strchr("kmgtKMGT", arg[0]))
			return lr_err_set(err, -EINVAL,
					  "-f '%s': use k, m, g or t (bits/s, "
					  "1000-based) or K, M, G or T "
					  "(bytes/s, 1024-based)",
					  arg);
		o->format = arg[0];
		return 0;
	case OUTOPTS_OPT_LOGFILE: o->logfile = arg; return 0;
	case OUTOPTS_OPT_TIMESTAMPS:
		o->ts_fmt = arg && arg[0] ? arg : OUTOPTS_TS_DEFAULT;
		return 0;
	case OUTOPTS_OPT_FORCEFLUSH: o->forceflush = true; return 0;
	case 'V': o->verbose = true; return 0;
	case 'I': o->pidfile = arg; return 0;
	}
	return 1;
}

/* The pid a pid file holds, or 0. */
static pid_t pidfile_read(const char *path)
{
	char buf[32];
	ssize_t n;
	long v;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	v = strtol(buf, NULL, 10);
	return v > 0 && v < 1L << 30 ? (pid_t)v : 0;
}

/* One try of pidfile_open. */
static int pidfile_open_once(struct outopts *o, struct lr_err *err)
{
	struct stat st;
	int fd = open(o->pidfile,
		      O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
		      0644);

	if (fd < 0)
		return lr_err_setc(err, -errno, "--pidfile %s", o->pidfile);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return lr_err_set(err, -EINVAL,
				  "--pidfile %s: not a regular file",
				  o->pidfile);
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int e = -errno;

		close(fd);
		if (e == -EWOULDBLOCK)
			return lr_err_set(err, -EEXIST,
					  "--pidfile %s: another process "
					  "holds it",
					  o->pidfile);
		return lr_err_setc(err, e, "--pidfile %s", o->pidfile);
	}
	return fd;
}

/* Whether fd is still the file at path: a process that held it may
 * have removed it between our open and our lock. */
static bool pidfile_same(int fd, const char *path)
{
	struct stat a, b;

	return !fstat(fd, &a) && !lstat(path, &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* -I: the pid file opened (never through a symlink, never a FIFO or a
 * device) and locked, the one at its path (opened again when the one
 * opened was removed meanwhile); -errno with err set. */
static int pidfile_open(struct outopts *o, struct lr_err *err)
{
	int fd, tries;

	for (tries = 0; tries < 3; tries++) {
		fd = pidfile_open_once(o, err);
		if (fd < 0 || pidfile_same(fd, o->pidfile))
			return fd;
		close(fd);
	}
	return lr_err_set(err, -EAGAIN,
			  "--pidfile %s: removed and made again by another "
			  "process as it was opened",
			  o->pidfile);
}

/* -I: this process's pid into the file, as iperf3 writes it; refused
 * while another process holds it (locked, or its pid a live process's).
 * The file stays open and locked until outopts_end. */
static int pidfile_write(struct outopts *o, struct lr_err *err)
{
	pid_t old = pidfile_read(o->pidfile);
	char buf[32];
	int fd, n;

	if (old && old != getpid() && (kill(old, 0) == 0 || errno == EPERM))
		return lr_err_set(err, -EEXIST,
				  "--pidfile %s: process %ld (in it) is "
				  "running",
				  o->pidfile, (long)old);
	if ((fd = pidfile_open(o, err)) < 0)
		return fd;
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)n, 0) != n) {
		int e = -errno;

		close(fd);
		unlink(o->pidfile);
		return lr_err_setc(err, e ? e : -EIO, "--pidfile %s",
				   o->pidfile);
	}
	o->pid_fd = fd;
	o->pid_written = true;
	return 0;
}

/* --logfile: standard output and error appended to the file. */
static int logfile_open(struct outopts *o, struct lr_err *err)
{
	int fd = open(o->logfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
		      0644);
	int saved;

	if (fd < 0)
		return lr_err_setc(err, -errno, "--logfile %s", o->logfile);
	fflush(stdout);
	fflush(stderr);
	saved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) {
		int e = -errno;

		if (saved >= 0)
			dup2(saved, STDOUT_FILENO); /* the error seen */
		close(fd);
		if (saved >= 0)
			close(saved);
		return lr_err_setc(err, e, "--logfile %s", o->logfile);
	}
	if (saved >= 0)
		close(saved);
	close(fd);
	return 0;
}

/* Write all of buf to fd. */
static void write_all(int fd, const char *buf, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		buf += w;
		n -= (size_t)w;
	}
}

/* The stamp of a line starting now, into buf; its length. */
static size_t stamp(char *buf, size_t cap, const char *fmt)
{
	struct tm tm;
	time_t now = time(NULL);

	if (!localtime_r(&now, &tm))
		return 0;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	return strftime(buf, cap, fmt, &tm); /* the user's, as iperf3 */
#pragma GCC diagnostic pop
}

#define PUMP_IN	   4096
#define PUMP_STAMP 256

/* One read's bytes to where the streams went, a stamp before each line
 * that starts. A line's stamp and its bytes go out in one write (unless
 * the line is longer than the buffer), so no other line comes between. */
static void pump_out(struct outopts_pump *p, const char *in, size_t n,
		     bool *line_start)
{
	char out[2 * PUMP_IN];
	size_t o = 0, i;

	for (i = 0; i < n; i++) {
		if (*line_start) {
			if (sizeof(out) - o < PUMP_STAMP + 1) {
				write_all(p->saved, out, o);
				o = 0;
			}
			o += stamp(out + o, PUMP_STAMP, p->fmt);
			*line_start = false;
		}
		if (o == sizeof(out)) {
			write_all(p->saved, out, o);
			o = 0;
		}
		out[o++] = in[i];
		if (in[i] == '\n')
			*line_start = true;
	}
	write_all(p->saved, out, o);
}

/* A pump's thread: the pipe's bytes to where the streams went, a stamp
 * before each line, until every writer closed the pipe. */
static void *pump_run(void *arg)
{
	struct outopts_pump *p = arg;
	char in[PUMP_IN];
	bool line_start = true;
	ssize_t n;

	for (;;) {
		atomic_store(&p->in_read, true);
		n = read(p->in, in, sizeof(in));
		atomic_store(&p->in_read, false);
		atomic_fetch_add(&p->reads, 1);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		pump_out(p, in, (size_t)n, &line_start);
	}
	sem_post(&p->done);
	return NULL;
}

/* The pipe's write end in the place of fd (and fd2 with it). */
static int pump_redirect(struct outopts_pump *p, int wr)
{
	if (dup2(wr, p->fd) < 0)
		return -errno;
	if (p->fd2 >= 0 && dup2(wr, p->fd2) < 0) {
		int e = -errno;

		dup2(p->saved, p->fd);
		return e;
	}
	return 0;
}

/* The streams back where they went. */
static void pump_restore(struct outopts_pump *p)
{
	dup2(p->saved, p->fd);
	if (p->fd2 >= 0)
		dup2(p->saved2, p->fd2);
}

static void pump_close_saved(struct outopts_pump *p)
{
	close(p->saved);
	if (p->fd2 >= 0)
		close(p->saved2);
	p->saved = p->saved2 = -1;
}

/* Put a pump in the place of fd (and of fd2, >= 0, with it). */
static int pump_start(struct outopts_pump *p, int fd, int fd2, const char *fmt,
		      struct lr_err *err)
{
	int pp[2], e;

	p->fd = fd;
	p->fd2 = fd2;
	p->fmt = fmt;
	atomic_init(&p->reads, 0);
	atomic_init(&p->in_read, false);
	p->saved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	p->saved2 = fd2 >= 0 ? fcntl(fd2, F_DUPFD_CLOEXEC, 3) : -1;
	if (p->saved < 0 || (fd2 >= 0 && p->saved2 < 0)) {
		e = -errno;
		goto fail_saved;
	}
	if (pipe2(pp, O_CLOEXEC)) {
		e = -errno;
		goto fail_saved;
	}
	if (sem_init(&p->done, 0, 0)) {
		e = -errno;
		goto fail_pipe;
	}
	p->in = pp[0];
	if ((e = pump_redirect(p, pp[1])))
		goto fail_sem;
	if (pthread_create(&p->th, NULL, pump_run, p)) {
		e = -EAGAIN;
		pump_restore(p);
		goto fail_sem;
	}
	close(pp[1]);
	return 0;
fail_sem:
	sem_destroy(&p->done);
fail_pipe:
	close(pp[0]);
	close(pp[1]);
fail_saved:
	if (p->saved >= 0)
		close(p->saved);
	if (p->saved2 >= 0)
		close(p->saved2);
	p->saved = p->saved2 = -1;
	return lr_err_setc(err, e, "--timestamps");
}

/* The pump's last bytes through. It ends when every writer closed the
 * pipe; while it writes (to a slow reader) it is waited for as long as
 * that takes, but a pipe still held open by a child that outlives us
 * (idle for PUMP_DRAIN_S) is left to the thread, never closed under it. */
static bool pump_drained(struct outopts_pump *p)
{
	struct timespec until;
	int idle_ticks = 0, last = -1, now;

	for (;;) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 100 * 1000 * 1000;
		if (until.tv_nsec >= 1000 * 1000 * 1000) {
			until.tv_sec++;
			until.tv_nsec -= 1000 * 1000 * 1000;
		}
		if (!sem_timedwait(&p->done, &until))
			return true;
		if (errno == EINTR)
			continue;
		now = atomic_load(&p->reads);
		if (atomic_load(&p->in_read) && now == last)
			idle_ticks++;
		else
			idle_ticks = 0;
		last = now;
		if (idle_ticks >= PUMP_DRAIN_S * 10)
			return false;
	}
}

/* The streams back where they went; the pump's last bytes written; *pp
 * freed (NULL: none). */
static void pump_stop(struct outopts_pump **pp)
{
	struct outopts_pump *p = *pp;

	*pp = NULL;
	if (!p)
		return;
	pump_restore(p);
	if (!pump_drained(p)) {
		/* a child holds the pipe: the thread keeps p and all it
		 * uses (on the heap) until the process ends */
		pthread_detach(p->th);
		return;
	}
	pthread_join(p->th, NULL);
	sem_destroy(&p->done);
	close(p->in);
	pump_close_saved(p);
	free(p);
}

/* A pump in the place of fd (and fd2), on the heap: a thread left with
 * a pipe a child holds may outlive the caller's frame. */
static int pump_new(struct outopts_pump **pp, int fd, int fd2, const char *fmt,
		    struct lr_err *err)
{
	struct outopts_pump *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return lr_err_setc(err, -ENOMEM, "--timestamps");
	r = pump_start(p, fd, fd2, fmt, err);
	if (r)
		free(p);
	else
		*pp = p;
	return r;
}

/* Whether standard output and error are the same open file (a log
 * file, a terminal): then one pump keeps their lines in order. */
static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return !fstat(a, &sa) && !fstat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

static int pumps_start(struct outopts *o, struct lr_err *err)
{
	int r;

	if (same_file(STDOUT_FILENO, STDERR_FILENO))
		return pump_new(&o->pumps[0], STDOUT_FILENO, STDERR_FILENO,
				o->ts_fmt, err);
	r = pump_new(&o->pumps[0], STDOUT_FILENO, -1, o->ts_fmt, err);
	if (!r)
		r = pump_new(&o->pumps[1], STDERR_FILENO, -1, o->ts_fmt, err);
	return r;
}

int outopts_start(struct outopts *o, bool json, struct lr_err *err)
{
	int r;

	o->pumps[0] = o->pumps[1] = NULL;
	report_set_rate_format(o->format);
	if (o->pidfile && (r = pidfile_write(o, err)))
		return r;
	if (o->logfile && (r = logfile_open(o, err)))
		goto fail;
	if (o->forceflush || (o->ts_fmt && !json))
		setvbuf(stdout, NULL, _IOLBF, 0);
	if (o->ts_fmt && !json) {
		if ((r = pumps_start(o, err)))
			goto fail;
	}
	return 0;
fail:
	outopts_end(o);
	return r;
}

void outopts_end(struct outopts *o)
{
	fflush(stdout);
	fflush(stderr);
	pump_stop(&o->pumps[0]);
	pump_stop(&o->pumps[1]);
	pid_signals_back(); /* no late signal removes a successor's file */
	if (o->pid_written && pidfile_read(o->pidfile) == getpid())
		unlink(o->pidfile);
	if (o->pid_written)
		close(o->pid_fd);
	o->pid_written = false;
}

static void pid_on_signal(int sig)
{
	unlink(pid_path); /* async-signal-safe */
	signal(sig, SIG_DFL);
	raise(sig);
}

void outopts_end_on_signal(const struct outopts *o)
{
	struct sigaction sa;
	unsigned i;

	if (!o->pid_written || strlen(o->pidfile) >= sizeof(pid_path))
		return;
	memcpy(pid_path, o->pidfile, strlen(o->pidfile) + 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = pid_on_signal;
	sigemptyset(&sa.sa_mask);
	/* one the starter ignores (nohup, a script's &) stays ignored */
	for (i = 0; i < PID_SIGS; i++)
		if (!sigaction(pid_sigs[i], NULL, &pid_old[i]) &&
		    pid_old[i].sa_handler != SIG_IGN &&
		    !sigaction(pid_sigs[i], &sa, NULL))
			pid_set[i] = true;
}

/* The dispositions outopts_end_on_signal replaced, back. */
static void pid_signals_back(void)
{
	unsigned i;

	for (i = 0; i < PID_SIGS; i++)
		if (pid_set[i]) {
			sigaction(pid_sigs[i], &pid_old[i], NULL);
			pid_set[i] = false;
		}
}
