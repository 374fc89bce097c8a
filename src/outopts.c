// SPDX-License-Identifier: MIT
/* iperf3's output options, shared by bench and serve (outopts.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "outopts.h"
#include "report.h"
#include "banned.h"

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
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	v = strtol(buf, NULL, 10);
	return v > 0 && v < 1L << 30 ? (pid_t)v : 0;
}

/* -I: this process's pid into the file, as iperf3 writes it; refused
 * while the pid it holds is a live process's. */
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
	fd = open(o->pidfile,
		  O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return lr_err_setc(err, -errno, "--pidfile %s", o->pidfile);
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (write(fd, buf, (size_t)n) != n) {
		int e = -errno;

		close(fd);
		unlink(o->pidfile);
		return lr_err_setc(err, e ? e : -EIO, "--pidfile %s",
				   o->pidfile);
	}
	close(fd);
	o->pid_written = true;
	return 0;
}

/* --logfile: standard output and error appended to the file. */
static int logfile_open(struct outopts *o, struct lr_err *err)
{
	int fd = open(o->logfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
		      0644);

	if (fd < 0)
		return lr_err_setc(err, -errno, "--logfile %s", o->logfile);
	fflush(stdout);
	fflush(stderr);
	if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) {
		int e = -errno;

		close(fd);
		return lr_err_setc(err, e, "--logfile %s", o->logfile);
	}
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

/* The stamp of a line starting now. */
static void stamp(int fd, const char *fmt)
{
	char buf[256];
	struct tm tm;
	time_t now = time(NULL);
	size_t n;

	if (!localtime_r(&now, &tm))
		return;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	n = strftime(buf, sizeof(buf), fmt, &tm); /* the user's, as iperf3 */
#pragma GCC diagnostic pop
	write_all(fd, buf, n);
}

/* A pump's thread: the pipe's bytes to where the stream went, a stamp
 * before each line, until every writer closed the pipe. */
static void *pump_run(void *arg)
{
	struct outopts_pump *p = arg;
	char buf[4096];
	bool line_start = true;
	ssize_t n, i, from;

	while ((n = read(p->in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0, from = 0; i < n; i++) {
			if (line_start) {
				write_all(p->saved, buf + from,
					  (size_t)(i - from));
				from = i;
				stamp(p->saved, p->fmt);
				line_start = false;
			}
			if (buf[i] == '\n')
				line_start = true;
		}
		write_all(p->saved, buf + from, (size_t)(n - from));
	}
	sem_post(&p->done);
	return NULL;
}

/* Put a pump in the place of fd. */
static int pump_start(struct outopts_pump *p, int fd, const char *fmt,
		      struct lr_err *err)
{
	int pp[2];

	p->fd = fd;
	p->fmt = fmt;
	p->saved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (p->saved < 0)
		return lr_err_setc(err, -errno, "--timestamps");
	if (pipe2(pp, O_CLOEXEC) || sem_init(&p->done, 0, 0)) {
		int e = -errno;

		close(p->saved);
		p->saved = -1;
		return lr_err_setc(err, e, "--timestamps");
	}
	p->in = pp[0];
	if (dup2(pp[1], fd) < 0 || pthread_create(&p->th, NULL, pump_run, p)) {
		dup2(p->saved, fd);
		close(pp[0]);
		close(pp[1]);
		close(p->saved);
		sem_destroy(&p->done);
		p->saved = -1;
		return lr_err_set(err, -EAGAIN, "--timestamps: no thread");
	}
	close(pp[1]);
	pthread_detach(p->th);
	return 0;
}

/* The stream back where it went; the pump's last bytes written (waited
 * for a bounded time: a child may still hold the pipe). */
static void pump_stop(struct outopts_pump *p)
{
	struct timespec until;
	int r;

	if (p->saved < 0)
		return;
	dup2(p->saved, p->fd);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += PUMP_DRAIN_S;
	while ((r = sem_timedwait(&p->done, &until)) && errno == EINTR)
		;
	close(p->saved);
	if (!r)
		close(p->in);
	p->saved = -1;
}

int outopts_start(struct outopts *o, bool json, struct lr_err *err)
{
	int r;

	o->pumps[0].saved = o->pumps[1].saved = -1;
	report_set_rate_format(o->format);
	if (o->pidfile && (r = pidfile_write(o, err)))
		return r;
	if (o->logfile && (r = logfile_open(o, err)))
		goto fail;
	if (o->forceflush || (o->ts_fmt && !json))
		setvbuf(stdout, NULL, _IOLBF, 0);
	if (o->ts_fmt && !json) {
		r = pump_start(&o->pumps[0], STDOUT_FILENO, o->ts_fmt, err);
		if (!r)
			r = pump_start(&o->pumps[1], STDERR_FILENO, o->ts_fmt,
				       err);
		if (r)
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
	if (o->pid_written && pidfile_read(o->pidfile) == getpid())
		unlink(o->pidfile);
	o->pid_written = false;
}
