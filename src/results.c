// SPDX-License-Identifier: MIT
/* Saved runs: where they go, appending one, the JSON captured on the way
 * (results.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "results.h"
#include "core/cipher.h"
#include "core/doctor.h"
#include "banned.h"

/* The biggest results file read whole. */
#define RESULTS_MAX_FILE (256u << 20)

int results_option(struct results_opts *o, int c, const char *arg,
		   struct lr_err *err)
{
	const unsigned char *p;

	switch (c) {
	case RESULTS_OPT_SAVE:
		if (!arg[0] || strlen(arg) > RESULTS_MAX_LABEL)
			return lr_err_set(err, -EINVAL,
					  "--save: a label of 1 to %d bytes",
					  RESULTS_MAX_LABEL);
		for (p = (const unsigned char *)arg; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				return lr_err_set(err, -EINVAL,
						  "--save: no control "
						  "characters in a label");
		if (!report_utf8_valid(arg))
			return lr_err_set(err, -EINVAL,
					  "--save: a label in UTF-8");
		o->label = arg;
		return 0;
	case RESULTS_OPT_FILE:
		if (!arg[0])
			return lr_err_set(err, -EINVAL,
					  "--results: a file name");
		o->file = arg;
		return 0;
	}
	return 1;
}

int results_path(const struct results_opts *o, char *buf, size_t cap,
		 struct lr_err *err)
{
	const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	int n;

	if (o->file)
		n = snprintf(buf, cap, "%s", o->file);
	else if (xdg && xdg[0] == '/') /* the spec: relative ones ignored */
		n = snprintf(buf, cap, "%s/linerate/results.jsonl", xdg);
	else if (home && home[0])
		n = snprintf(buf, cap, "%s/.local/share/linerate/results.jsonl",
			     home);
	else
		return lr_err_set(err, -ENOENT,
				  "no results file: set HOME or "
				  "XDG_DATA_HOME, or give --results FILE");
	if (n < 0 || (size_t)n >= cap)
		return lr_err_set(err, -ENAMETOOLONG, "results file name");
	return 0;
}

/* A run of NUL bytes in a results file as results_read gives it: the
 * two bytes of modified UTF-8's NUL, which are not UTF-8, so that the
 * text stays a C string and the line is still there to be named. */
#define RESULTS_NUL "\xc0\x80"

/* buf's n bytes as a malloc'd C string, each run of NUL bytes made
 * RESULTS_NUL; NULL when out of memory. */
static char *nul_free(const char *buf, size_t n)
{
	size_t need = 0, i, o = 0;
	char *s;

	for (i = 0; i < n; i++)
		if (buf[i])
			need++;
		else if (!i || buf[i - 1])
			need += 2;
	s = malloc(need + 1);
	for (i = 0; s && i < n; i++) {
		if (buf[i])
			s[o++] = buf[i];
		else if (!i || buf[i - 1]) {
			memcpy(s + o, RESULTS_NUL, 2);
			o += 2;
		}
	}
	if (s)
		s[o] = '\0';
	return s;
}

/* The whole of fd into a malloc'd C string, read by its length (NUL
 * bytes as nul_free makes them). */
static int read_fd(int fd, const char *path, char **text, struct lr_err *err)
{
	struct stat st;
	size_t got = 0;
	ssize_t k;
	char *buf, *s;

	if (fstat(fd, &st))
		return lr_err_setc(err, -errno, "%s", path);
	if (!S_ISREG(st.st_mode))
		return lr_err_set(err, -EINVAL, "%s: not a regular file", path);
	if ((uint64_t)st.st_size > RESULTS_MAX_FILE)
		return lr_err_set(err, -EFBIG,
				  "%s: more than 256 MiB: start another with "
				  "--results FILE",
				  path);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return lr_err_setc(err, -ENOMEM, "%s", path);
	while (got < (size_t)st.st_size &&
	       (k = pread(fd, buf + got, (size_t)st.st_size - got,
			  (off_t)got)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int e = -errno;

			free(buf);
			return lr_err_setc(err, e, "reading %s", path);
		}
		got += (size_t)k;
	}
	buf[got] = '\0';
	if (memchr(buf, '\0', got)) {
		s = nul_free(buf, got);
		free(buf);
		if (!s)
			return lr_err_setc(err, -ENOMEM, "%s", path);
		buf = s;
	}
	*text = buf;
	return 0;
}

int results_read(const char *path, char **text, struct lr_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), r;

	if (fd < 0 && errno == ENOENT) {
		*text = strdup("");
		return *text ? 0 : lr_err_setc(err, -ENOMEM, "%s", path);
	}
	if (fd < 0)
		return lr_err_setc(err, -errno, "%s", path);
	r = read_fd(fd, path, text, err);
	close(fd);
	return r;
}

int results_capture_open(struct results_capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	return c->f ? 0 : -ENOMEM;
}

const char *results_capture_text(struct results_capture *c)
{
	if (c->f)
		fflush(c->f);
	return c->buf ? c->buf : "";
}

void results_capture_close(struct results_capture *c)
{
	if (c->f)
		fclose(c->f);
	free(c->buf);
	c->f = NULL;
	c->buf = NULL;
}

static void tee_connecting(void *ctx, const char *host, uint16_t port)
{
	struct results_bench_tee *t = ctx;

	if (t->a.connecting)
		t->a.connecting(t->a.ctx, host, port);
	if (t->b.connecting)
		t->b.connecting(t->b.ctx, host, port);
}

static void tee_started(void *ctx, const struct bench_result *res)
{
	struct results_bench_tee *t = ctx;

	if (t->a.started)
		t->a.started(t->a.ctx, res);
	if (t->b.started)
		t->b.started(t->b.ctx, res);
}

static void tee_interval(void *ctx, const struct bench_interval *iv)
{
	struct results_bench_tee *t = ctx;

	if (t->a.interval)
		t->a.interval(t->a.ctx, iv);
	if (t->b.interval)
		t->b.interval(t->b.ctx, iv);
}

static void tee_finished(void *ctx, const struct bench_result *res)
{
	struct results_bench_tee *t = ctx;

	if (t->a.finished)
		t->a.finished(t->a.ctx, res);
	if (t->b.finished)
		t->b.finished(t->b.ctx, res);
}

void results_bench_tee(struct results_bench_tee *t,
		       const struct bench_callbacks *a,
		       const struct bench_callbacks *b,
		       struct bench_callbacks *out)
{
	t->a = *a;
	t->b = *b;
	out->ctx = t;
	out->connecting = tee_connecting;
	out->started = tee_started;
	out->interval = tee_interval;
	out->finished = tee_finished;
}

static void tee_event(void *ctx, const struct xfer_event *ev)
{
	struct results_xfer_tee *t = ctx;

	if (t->a.event)
		t->a.event(t->a.ctx, ev);
	if (t->b.event)
		t->b.event(t->b.ctx, ev);
}

void results_xfer_tee(struct results_xfer_tee *t,
		      const struct xfer_callbacks *a,
		      const struct xfer_callbacks *b,
		      struct xfer_callbacks *out)
{
	t->a = *a;
	t->b = *b;
	out->ctx = t;
	out->event = tee_event;
}

/* CPU seconds per 10^9 bytes, < 0 unknown. */
static double cpu_per_gb(const struct proto_cpu *c, uint64_t bytes)
{
	if (!c->wall_us || !bytes)
		return -1;
	return (double)(c->user_us + c->sys_us) / 1e6 / ((double)bytes / 1e9);
}

void results_from_bench(const struct bench_result *res, const char *host,
			struct report_saved_run *r, struct link_info *link)
{
	uint64_t bytes = 0;
	double sec = 0;
	unsigned i;

	for (i = 0; i < res->nstreams; i++) {
		bytes += res->streams[i].receiver.bytes;
		if (res->streams[i].receiver.seconds > sec)
			sec = res->streams[i].receiver.seconds;
	}
	if (sec <= 0)
		sec = res->duration;
	r->command = "bench";
	r->direction = res->req.mode == BENCH_MODE_BIDIR     ? "both"
		       : res->req.mode == BENCH_MODE_REVERSE ? "receive"
							     : "send";
	r->host = host;
	r->bytes = bytes;
	r->seconds = sec;
	r->bytes_per_second = sec > 0 ? (double)bytes / sec : 0;
	r->cpu_s_per_gb[0] = cpu_per_gb(&res->local_cpu, bytes);
	r->cpu_s_per_gb[1] = cpu_per_gb(&res->remote_cpu, bytes);
	r->cipher = res->iperf3		 ? "none (iperf3)"
		    : res->authenticated ? crypto_cipher_name(res->cipher)
					 : "none";
	if (res->link_known) {
		memset(link, 0, sizeof(*link));
		snprintf(link->ifname, sizeof(link->ifname), "%s",
			 res->link_if);
		link->speed_bps = res->link_speed_bps;
		link->mtu = res->link_mtu;
		link->wireless = res->link_wireless;
		link->virtual_if = res->link_virtual;
		link->loopback = !strcmp(res->link_if, "lo");
		r->link = link;
	}
}

void results_from_xfer(const struct xfer_result *res, bool pull,
		       const char *host, struct report_saved_run *r,
		       struct link_info *link)
{
	r->command = pull ? "get" : "send";
	r->direction = pull ? "receive" : "send";
	r->host = host;
	r->bytes = res->bytes;
	r->seconds = res->seconds;
	r->bytes_per_second =
		res->seconds > 0 ? (double)res->bytes / res->seconds : 0;
	r->cpu_s_per_gb[0] = r->cpu_s_per_gb[1] = -1;
	r->cipher = res->authenticated ? crypto_cipher_name(res->cipher) : "";
	if (res->link_known) {
		memset(link, 0, sizeof(*link));
		snprintf(link->ifname, sizeof(link->ifname), "%s",
			 res->link_if);
		link->mtu = res->link_mtu;
		link->speed_bps = res->link_speed_bps;
		link->wireless = res->link_wireless;
		link->virtual_if = res->link_virtual;
		link->loopback = !strcmp(res->link_if, "lo");
		r->link = link;
	}
}

int results_far_facts(const char *host, uint16_t port, int family,
		      const uint8_t *psk, uint8_t cipher_wish,
		      struct proto_probe_result *out)
{
	struct doctor_opts o = { .host = host,
				 .port = port,
				 .family = family,
				 .psk = psk,
				 .cipher_wish = cipher_wish };
	struct lr_err err = { 0 };

	memset(out, 0, sizeof(*out));
	return doctor_probe_facts(&o, out, &err);
}

/* mkdir -p of the results file's directory (the default one only: a
 * --results FILE's directory is the user's to make). */
static int make_dirs(const char *path, struct lr_err *err)
{
	char dir[PATH_MAX];
	char *p;

	snprintf(dir, sizeof(dir), "%s", path);
	p = strrchr(dir, '/');
	if (!p || p == dir)
		return 0;
	*p = '\0';
	for (p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) && errno != EEXIST)
			return lr_err_setc(err, -errno, "mkdir %s", dir);
		*p = '/';
	}
	if (mkdir(dir, 0700) && errno != EEXIST)
		return lr_err_setc(err, -errno, "mkdir %s", dir);
	return 0;
}

/* Write all of buf at the end of fd. */
static int append_all(int fd, const char *buf, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The id a line's first bytes hold, when they are a saved run's. */
static unsigned line_id(const char *head, size_t n)
{
	static const char pre[] = REPORT_SAVED_PREFIX;
	unsigned long v = 0;
	size_t i = sizeof(pre) - 1;

	if (n <= i || memcmp(head, pre, i))
		return 0;
	for (; i < n && head[i] >= '0' && head[i] <= '9' && v < 1000000000; i++)
		v = v * 10 + (unsigned long)(head[i] - '0');
	return (unsigned)v;
}

/* The largest id in the file, read a block at a time (never all of it in
 * memory, never a run parsed), and whether its last byte ends a line. */
static int scan_ids(int fd, unsigned *max, bool *ends_line)
{
	char buf[65536], head[64];
	size_t hn = 0;
	bool start = true;
	off_t off = 0;
	ssize_t k, i;

	*max = 0;
	*ends_line = true;
	while ((k = pread(fd, buf, sizeof(buf), off)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		for (i = 0; i < k; i++) {
			if (start && hn < sizeof(head))
				head[hn++] = buf[i];
			if (buf[i] != '\n' && hn < sizeof(head))
				continue;
			if (start && line_id(head, hn) > *max)
				*max = line_id(head, hn);
			start = buf[i] == '\n';
			hn = 0;
		}
		*ends_line = buf[k - 1] == '\n';
		off += k;
	}
	return 0;
}

/* The run's line at the end of the locked file fd: on a line of its own
 * even when the last one was cut short, its id one more than any. */
static int append_run(int fd, const char *path, struct report_saved_run *r,
		      struct lr_err *err)
{
	char *line;
	unsigned max;
	bool ends_line;
	int e;

	e = scan_ids(fd, &max, &ends_line);
	if (e)
		return lr_err_setc(err, e, "reading %s", path);
	r->id = max + 1;
	e = !ends_line ? append_all(fd, "\n", 1) : 0;
	line = e ? NULL : report_saved_line(r);
	if (!e && !line)
		e = -ENOMEM;
	if (!e)
		e = append_all(fd, line, strlen(line));
	free(line);
	return e ? lr_err_setc(err, e, "saving to %s", path) : 0;
}

/* This end's facts, gathered here. */
static void local_facts(struct report_saved_run *r, const char *dir,
			struct proto_probe_result *p, struct utsname *u)
{
	memset(p, 0, sizeof(*p));
	doctor_local_facts(p, dir ? dir : ".");
	r->local = p;
	r->local_cores = p->centicores / 100.0;
	if (!uname(u)) {
		r->nodename = u->nodename;
		r->kernel = u->release;
	}
}

/* The results file's path, its default directory made. */
static int results_where(const struct results_opts *o, char *path, size_t cap,
			 struct lr_err *err)
{
	int e = results_path(o, path, cap, err);

	return !e && !o->file ? make_dirs(path, err) : e;
}

/* Before the run: the results file can be appended to, or made (the
 * default directory made as results_save would). -errno with err set. */
static int results_ready(const struct results_opts *o, struct lr_err *err)
{
	char path[PATH_MAX], dir[PATH_MAX];
	char *slash;
	int fd, e;

	e = results_where(o, path, sizeof(path), err);
	if (e)
		return e;
	/* there: opened as it will be, for appending; else its directory
	 * must let a file be made (nothing made now: a run that fails
	 * leaves no empty results file) */
	fd = open(path,
		  O_WRONLY | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != ENOENT)
		return lr_err_setc(err, -errno, "%s", path);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash)
		slash[slash == dir ? 1 : 0] = '\0';
	if (access(slash ? dir : ".", W_OK | X_OK))
		return lr_err_setc(err, -errno, "%s: cannot be made in %s",
				   path, slash ? dir : ".");
	return 0;
}

bool results_refused(const struct results_opts *o, const char *cmd)
{
	struct lr_err err = { 0 };

	if (!o->label || !results_ready(o, &err))
		return false;
	fprintf(stderr, "linerate %s: --save: %s\n", cmd, err.msg);
	return true;
}

int results_save(const struct results_opts *o, struct report_saved_run *r,
		 const char *dir, FILE *msg, struct lr_err *err)
{
	struct proto_probe_result lp;
	struct utsname u;
	char path[PATH_MAX];
	int fd, e;

	e = results_where(o, path, sizeof(path), err);
	if (e)
		return e;
	r->label = o->label;
	r->time = (int64_t)time(NULL);
	local_facts(r, dir, &lp, &u);
	fd = open(path,
		  O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK |
			  O_NOCTTY,
		  0600);
	if (fd < 0)
		return lr_err_setc(err, -errno, "%s", path);
	if (flock(fd, LOCK_EX))
		e = lr_err_setc(err, -errno, "locking %s", path);
	else
		e = append_run(fd, path, r, err);
	close(fd);
	if (!e && msg)
		fprintf(msg, "%s: saved as run %u, label '%s', in %s\n",
			report_prog(), r->id, r->label, path);
	return e;
}
