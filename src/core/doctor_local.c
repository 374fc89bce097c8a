// SPDX-License-Identifier: MIT
/* linerate doctor --local: what this machine can do by itself. A server
 * in a child process and doctor's stages against it, through a veth pair
 * between two private network namespaces (made by unshare, so they go
 * with the processes whatever happens) or over loopback; each end's CPU
 * seconds per GB of the transfer give its capacity alone. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cryptobench.h"
#include "disk.h"
#include "fsio.h"
#include "link.h"
#include "doctor.h"
#include "server.h"
#include "sysfs.h"
#include "token.h"
#include "banned.h"

#define ADDR_A	 "198.18.0.1"
#define ADDR_B	 "198.18.0.2"
#define LOOPBACK "127.0.0.1"

extern char **environ;

/* lo up in this process's network namespace (a new one has it down),
 * without ip. */
static int lo_up(void)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		r = -errno;
	ifr.ifr_flags |= IFF_UP;
	if (!r && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* `ip ARGS...` in this process's network namespace: 0 or why not. */
static int run_ip(char *const argv[], char *why, size_t cap)
{
	static const char *const where[] = { "ip", "/usr/sbin/ip", "/sbin/ip",
					     "/usr/bin/ip", "/bin/ip" };
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st = 0, r = ENOENT, w;
	unsigned i;

	/* its own words would mix with ours (and with --json): quiet */
	if (posix_spawn_file_actions_init(&fa))
		return -ENOMEM;
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null",
					 O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null",
					 O_WRONLY, 0);
	/* PATH may lack the sbin directories (su, cron) */
	for (i = 0; r == ENOENT && i < sizeof(where) / sizeof(where[0]); i++)
		r = i ? posix_spawn(&pid, where[i], &fa, NULL, argv, environ)
		      : posix_spawnp(&pid, where[i], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r) {
		snprintf(why, cap, "cannot run ip (iproute2): %s",
			 lr_strerror(-r));
		return -r;
	}
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (w < 0) {
		snprintf(why, cap, "ip: %s", lr_strerror(-errno));
		return -ECHILD;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(why, cap, "ip %s %s failed", argv[1], argv[2]);
		return -EIO;
	}
	return 0;
}

/* lo and ifname up, addr/24 on ifname (empty: lo only). */
static int ns_configure(const char *ifname, const char *addr, char *why,
			size_t cap)
{
	char cidr[32];
	char *lo[] = { "ip", "link", "set", "lo", "up", NULL };
	char *ad[] = { "ip", "addr", "add", cidr, "dev", (char *)ifname, NULL };
	char *up[] = { "ip", "link", "set", (char *)ifname, "up", NULL };
	int r;

	snprintf(cidr, sizeof(cidr), "%s/24", addr);
	r = run_ip(lo, why, cap);
	if (!r && ifname[0])
		r = run_ip(ad, why, cap);
	if (!r && ifname[0])
		r = run_ip(up, why, cap);
	return r;
}

static int read_all(int fd, void *buf, size_t n)
{
	char *p = buf;
	ssize_t k;

	while (n) {
		k = read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EPIPE;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* What the server child tells: its port, or why it could not serve. */
struct child_msg {
	int err;
	uint16_t port;
	char why[160];
};

static struct server *volatile child_server;

static void child_stop(int sig)
{
	(void)sig;
	if (child_server)
		server_stop(child_server);
	else
		_exit(1); /* not serving yet: nothing to end cleanly */
}

/* The server child: its own namespace (with ns), configured when the
 * parent says (the veth's end is there), then serving until SIGTERM. */
static void server_child(bool ns, const char *ifname, const uint8_t *psk,
			 int rootfd, pid_t parent, int go, int tell)
{
	struct server_callbacks cb = { 0 };
	struct child_msg m = { 0 };
	struct server_opts so;
	struct lr_err err = { 0 };
	struct server *srv;
	char c;

	signal(SIGTERM, child_stop);
	/* a doctor killed outright takes its server along (also one killed
	 * before this line: then the parent is gone already) */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(1);
	if (ns && unshare(CLONE_NEWNET))
		m.err = -errno;
	fsio_write_all(tell, &m, sizeof(m)); /* unshared (or not) */
	if (m.err || read_all(go, &c, 1))
		_exit(1);
	if (ns &&
	    (m.err = ns_configure(ifname, ADDR_B, m.why, sizeof(m.why)))) {
		fsio_write_all(tell, &m, sizeof(m));
		_exit(1);
	}
	server_opts_init(&so);
	so.bind_addr = ns ? ADDR_B : LOOPBACK;
	so.port = 0;
	so.psk = psk;
	so.allow_plaintext = true;
	so.rootfd = rootfd; /* opened by the parent: its error is said there */
	m.err = server_new(&so, &cb, &srv, &err);
	if (!m.err)
		m.port = server_port(srv);
	snprintf(m.why, sizeof(m.why), "%s", err.msg);
	fsio_write_all(tell, &m, sizeof(m));
	if (m.err)
		_exit(1);
	child_server = srv;
	server_run(srv, &err);
	_exit(0);
}

/* CPU seconds of a process (utime + stime of /proc/PID/stat), < 0 not
 * known. */
static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (sysfs_read_small(path, buf, sizeof(buf)))
		return -1;
	p = strrchr(buf, ')'); /* the name may hold spaces */
	if (!p || sscanf(p + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%lu %lu",
			 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return -1;
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* doctor's stage callback: the CPU of both ends when the transfer
 * starts (and the user's callback). */
struct local_ctx {
	const struct doctor_callbacks *user;
	pid_t server;
	double here0, there0; /* at the transfer's start; < 0 not yet */
};

static void on_stage(void *ctx, const char *what)
{
	struct local_ctx *c = ctx;

	if (!strcmp(what, "a transfer")) {
		c->here0 = self_cpu_s();
		c->there0 = proc_cpu_s(c->server);
	}
	if (c->user && c->user->stage)
		c->user->stage(c->user->ctx, what);
}

/* Plain TCP (no cipher) with the transfer's streams, bytes/s. */
static double plain_tcp(const struct doctor_local_opts *o, const char *host,
			uint16_t port, const uint8_t *psk)
{
	struct bench_opts b = { 0 };
	struct bench_callbacks cb = { 0 };
	struct bench_result res;
	struct lr_err err = { 0 };
	uint64_t bytes = 0;
	double sec = 0;
	unsigned i;

	b.host = host;
	b.port = port;
	b.psk = psk;
	b.cipher_wish = CRYPTO_NONE;
	b.connect_timeout_ms = 5000;
	b.req.streams = (uint16_t)(o->streams ? o->streams : 4);
	b.req.duration_ms = o->net_ms;
	b.req.blksize = BENCH_DEFAULT_BLKSIZE;
	b.req.mode = BENCH_MODE_FORWARD;
	if (bench_client_run(&b, &cb, &res, &err))
		return 0;
	for (i = 0; i < res.nstreams; i++) {
		bytes += res.streams[i].receiver.bytes;
		if (res.streams[i].receiver.seconds > sec)
			sec = res.streams[i].receiver.seconds;
	}
	bench_result_free(&res);
	return sec > 0 ? (double)bytes / sec : 0;
}

/* The cipher on every core at once: one measurement a core, at the same
 * time; the sum of their seal rates of the cipher used. */
struct core_job {
	pthread_t th;
	enum crypto_cipher cipher;
	double bps;
};

static void *core_run(void *arg)
{
	struct core_job *j = arg;
	struct cryptobench_result res;
	struct lr_err e = { 0 };
	unsigned i;

	if (cryptobench_run(100, &res, &e))
		return NULL;
	for (i = 0; i < res.nrows; i++)
		if (res.rows[i].cipher == j->cipher &&
		    res.rows[i].record == CRYPTOBENCH_BIG_RECORD)
			j->bps = res.rows[i].seal.mbps * 1e6;
	return NULL;
}

static double cipher_all_cores(enum crypto_cipher cipher)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	struct core_job *j;
	double sum = 0;
	long i, started = 0;

	if (n < 1 || n > 1024)
		n = 1;
	j = calloc((size_t)n, sizeof(*j));
	if (!j)
		return 0;
	for (i = 0; i < n; i++) {
		j[i].cipher = cipher;
		if (!pthread_create(&j[i].th, NULL, core_run, &j[i]))
			started = i + 1;
		else
			break;
	}
	for (i = 0; i < started; i++) {
		pthread_join(j[i].th, NULL);
		sum += j[i].bps;
	}
	free(j);
	return sum;
}

/* This machine: its model, kernel, CPU frequency now and at most (CPU
 * 0's, and each cluster's). */
static void machine_facts(struct doctor_local_report *r)
{
	struct utsname u;
	char buf[32];
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (sysfs_read_small("/proc/device-tree/model", r->model,
			     sizeof(r->model)) &&
	    sysfs_read_small("/sys/class/dmi/id/product_name", r->model,
			     sizeof(r->model)))
		snprintf(r->model, sizeof(r->model), "%s", r->d.local.p.model);
	r->cpus_online = n > 0 ? (unsigned)n : 0;
	if (!uname(&u))
		snprintf(r->kernel, sizeof(r->kernel), "%s %s", u.release,
			 u.machine);
	r->nfreq = sysfs_cpufreq(SYSFS_CPUFREQ_ROOT, r->freq, 8);
	if (!sysfs_read_small("/sys/devices/system/cpu/cpu0/cpufreq/"
			      "scaling_cur_freq",
			      buf, sizeof(buf)))
		r->cur_khz = strtoull(buf, NULL, 10);
	if (!sysfs_read_small("/sys/devices/system/cpu/cpu0/cpufreq/"
			      "cpuinfo_max_freq",
			      buf, sizeof(buf)))
		r->max_khz = strtoull(buf, NULL, 10);
}

static bool cancelled(const struct doctor_local_opts *o)
{
	return o->cancel && atomic_load(o->cancel);
}

/* The disk of dir read as a sender reads a file not in memory (its
 * pages dropped, then through the page cache in chunk-size reads). */
static void disk_read(const struct doctor_local_opts *o,
		      struct doctor_local_report *r)
{
	static const volatile sig_atomic_t never;
	struct disk_result res;
	struct lr_err e = { 0 };
	uint64_t size = o->size & ~((1ull << 20) - 1);

	/* disk_run removes its file also when stopped; a signal here is
	 * seen by the next check of o->cancel (the stage is short) */

	if (!size)
		size = 1u << 20;
	if (!disk_run_buffered(o->dir, size, XFER_DEFAULT_CHUNK, &never, NULL,
			       NULL, &res, &e) &&
	    res.read_sec > 0)
		r->disk_read_bps = (double)res.bytes / res.read_sec;
}

/* Each end's CPU per GB of the transfer, and what that lets it carry
 * with all its usable cores. */
static void capacities(struct doctor_local_report *r, double here, double there)
{
	double gb = (double)r->d.xfer_bytes / 1e9;
	double cores = r->d.local.cores > 0 ? r->d.local.cores : 1;

	/* a stream is a thread on each end: no more cores than streams */
	if (r->d.streams && cores > r->d.streams)
		cores = r->d.streams;
	r->cores_used = cores;

	if (gb <= 0 || here <= 0 || there <= 0)
		return;
	r->cpu_s_per_gb_send = here / gb;
	r->cpu_s_per_gb_recv = there / gb;
	r->send_bps = cores / r->cpu_s_per_gb_send * 1e9;
	r->recv_bps = cores / r->cpu_s_per_gb_recv * 1e9;
}

/* Into a namespace of our own with a veth pair to the child's, both
 * configured; 0, or why not (then loopback, in whatever namespace this
 * process is in now). */
static int ns_setup(pid_t child, char *ifa, char *ifb, char *why, size_t cap)
{
	char pid[16];
	char *add[] = { "ip",	"link", "add", ifa,	"type", "veth",
			"peer", "name", ifb,   "netns", pid,	NULL };

	snprintf(pid, sizeof(pid), "%ld", (long)child);
	if (run_ip(add, why, cap))
		return -EIO;
	return ns_configure(ifa, ADDR_A, why, cap);
}

/* A child that is not to serve: gone, reaped. */
static void child_end(pid_t child)
{
	kill(child, SIGKILL);
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
}

/* The server child started, its first word (unshared or not) read into
 * *m; the pipe ends the parent keeps into go_w, tell_r. */
static int fork_child(bool ns, const char *ifb, const uint8_t *psk, int rootfd,
		      pid_t *child, int *go_w, int *tell_r, struct child_msg *m,
		      struct lr_err *err)
{
	int go[2], tell[2], r;
	pid_t parent = getpid();

	if (pipe2(go, O_CLOEXEC))
		return lr_err_setc(err, -errno, "pipe");
	if (pipe2(tell, O_CLOEXEC)) {
		r = lr_err_setc(err, -errno, "pipe");
		goto fail_go;
	}
	*child = fork();
	if (*child < 0) {
		r = lr_err_setc(err, -errno, "fork");
		close(tell[0]);
		close(tell[1]);
		goto fail_go;
	}
	if (!*child) {
		close(go[1]);
		close(tell[0]);
		server_child(ns, ifb, psk, rootfd, parent, go[0], tell[1]);
	}
	close(go[0]);
	close(tell[1]);
	*go_w = go[1];
	*tell_r = tell[0];
	r = read_all(tell[0], m, sizeof(*m));
	if (r) {
		child_end(*child);
		close(go[1]);
		close(tell[0]);
		return lr_err_set(err, r, "the local server ended at once");
	}
	return 0;
fail_go:
	close(go[0]);
	close(go[1]);
	return r;
}

/* Start the server child: in a network namespace of its own with a veth
 * pair to ours when we may make them (rep->namespaces), else both over
 * loopback in ours (rep->why_loopback says why). */
static int start_child(const struct doctor_local_opts *o, const uint8_t *psk,
		       int rootfd, struct doctor_local_report *rep,
		       pid_t *child, uint16_t *port, struct lr_err *err)
{
	char ifa[16], ifb[16];
	struct child_msg m;
	int go, tell, r;
	bool ns = !o->loopback;

	snprintf(ifa, sizeof(ifa), "lrd%lda", (long)getpid() % 100000);
	snprintf(ifb, sizeof(ifb), "lrd%ldb", (long)getpid() % 100000);
	if (ns && unshare(CLONE_NEWNET)) {
		snprintf(rep->why_loopback, sizeof(rep->why_loopback),
			 "no network namespaces (%s): over loopback",
			 errno == EPERM ? "not permitted: not root"
					: lr_strerror(-errno));
		ns = false;
	}
	r = fork_child(ns, ifb, psk, rootfd, child, &go, &tell, &m, err);
	if (r)
		return r;
	if (ns && (m.err || ns_setup(*child, ifa, ifb, rep->why_loopback,
				     sizeof(rep->why_loopback)))) {
		/* the child's namespace cannot be had or reached: again,
		 * both in this one (lo up), over loopback */
		if (m.err)
			snprintf(rep->why_loopback, sizeof(rep->why_loopback),
				 "no network namespace for the server (%s): "
				 "over loopback",
				 lr_strerror(m.err));
		child_end(*child);
		close(go);
		close(tell);
		lo_up();
		ns = false;
		r = fork_child(false, ifb, psk, rootfd, child, &go, &tell, &m,
			       err);
		if (r)
			return r;
	}
	rep->namespaces = ns;
	fsio_write_all(go, "g", 1);
	r = read_all(tell, &m, sizeof(m));
	close(go);
	close(tell);
	if (r || m.err) {
		child_end(*child);
		*child = -1;
		return lr_err_set(err, r ? r : m.err, "the local server: %s",
				  r ? "it ended" : m.why);
	}
	*port = m.port;
	return 0;
}

/* The child asked to end, waited for a few seconds, then killed. */
static void child_stop_wait(pid_t child)
{
	int i;

	kill(child, SIGTERM);
	for (i = 0; i < 50; i++) {
		pid_t w = waitpid(child, NULL, WNOHANG);

		if (w == child || (w < 0 && errno != EINTR))
			return;
		usleep(100 * 1000);
	}
	child_end(child);
}

int doctor_local_run(const struct doctor_local_opts *o,
		     const struct doctor_callbacks *cb,
		     struct doctor_local_report *rep, struct lr_err *err)
{
	char tok[SESSION_TOKEN_CHARS];
	uint8_t psk[SESSION_PSK_LEN];
	struct doctor_opts d = { 0 };
	struct doctor_callbacks mine = { 0 };
	struct local_ctx lc = { .user = cb, .here0 = -1, .there0 = -1 };
	double here, there;
	uint16_t port = 0;
	pid_t child = -1;
	int r, rootfd;

	memset(rep, 0, sizeof(*rep));
	if (session_token_new(tok) || session_token_psk(tok, psk))
		return lr_err_set(err, -EIO, "no random bytes for a token");
	rootfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return lr_err_setc(err, -errno, "%s", o->dir);
	r = start_child(o, psk, rootfd, rep, &child, &port, err);
	close(rootfd);
	if (!r) {
		d.host = rep->namespaces ? ADDR_B : LOOPBACK;
		d.port = port;
		d.psk = psk;
		d.same_machine = true; /* namespaces too: the same CPUs */
		d.cipher_wish = o->cipher_wish;
		d.streams = o->streams ? o->streams : 4;
		d.size = o->size;
		d.net_ms = o->net_ms;
		d.cancel = o->cancel;
		d.source = o->source;
		lc.server = child;
		mine.ctx = &lc;
		mine.stage = on_stage;
		r = doctor_run(&d, &mine, &rep->d, err);
	}
	if (!r && cancelled(o))
		r = lr_err_set(err, -EINTR, "interrupted");
	if (!r) {
		here = self_cpu_s() - lc.here0;
		there = proc_cpu_s(child) - lc.there0;
		capacities(rep, lc.here0 >= 0 ? here : -1,
			   lc.there0 >= 0 ? there : -1);
		if (cb && cb->stage)
			cb->stage(cb->ctx, "plain TCP");
		rep->plain_bps = plain_tcp(o, d.host, port, psk);
		if (cb && cb->stage)
			cb->stage(cb->ctx, "the cipher on every core");
		rep->cipher_all_cores_bps = cipher_all_cores(rep->d.cipher);
		if (cb && cb->stage && !cancelled(o))
			cb->stage(cb->ctx, "the disk as a sender reads it");
		if (!cancelled(o))
			disk_read(o, rep);
		if (cancelled(o))
			r = lr_err_set(err, -EINTR, "interrupted");
		machine_facts(rep);
	}
	if (child > 0)
		child_stop_wait(child);
	session_token_wipe(tok, sizeof(tok));
	session_token_wipe(psk, sizeof(psk));
	return r;
}

/* ---- this machine's facts (both sides of doctor have them) ---- */

/* The first number of a small /proc or /sys file, or 0 (also for "max"
 * and negative values such as cfs_quota_us's -1: no limit). */
static uint64_t read_num(const char *path)
{
	char buf[128];
	unsigned long long v;
	char *end;

	if (sysfs_read_small(path, buf, sizeof(buf)) || buf[0] == '-')
		return 0;
	v = strtoull(buf, &end, 10);
	return end == buf ? 0 : (uint64_t)v;
}

/* The last of the three numbers of tcp_rmem / tcp_wmem. */
static uint64_t read_third(const char *path)
{
	char buf[128], *p;

	if (sysfs_read_small(path, buf, sizeof(buf)))
		return 0;
	p = strrchr(buf, '\t') ? strrchr(buf, '\t') : strrchr(buf, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* A cgroup's quota in cores from its cpu directory, or 0 for none. */
static double quota_v1(const char *dir)
{
	char path[512];
	uint64_t q, p;

	snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir);
	q = read_num(path);
	snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir);
	p = read_num(path);
	return q && p ? (double)q / (double)p : 0;
}

/* Spin for 300 ms and return the thread's CPU time over wall time: 1.0
 * on a free core, the quota's share under a CFS quota below one core. */
static double measured_share(void)
{
	struct timespec w0, w1, c0, c1;
	volatile uint64_t spin = 0;
	double wall, cpu;

	clock_gettime(CLOCK_MONOTONIC, &w0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	do {
		for (unsigned i = 0; i < 100000; i++)
			spin += i;
		clock_gettime(CLOCK_MONOTONIC, &w1);
	} while ((w1.tv_sec - w0.tv_sec) * 1000000000ll +
			 (w1.tv_nsec - w0.tv_nsec) <
		 300000000ll);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	wall = (double)(w1.tv_sec - w0.tv_sec) +
	       (double)(w1.tv_nsec - w0.tv_nsec) / 1e9;
	cpu = (double)(c1.tv_sec - c0.tv_sec) +
	      (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
	(void)spin;
	return wall > 0 ? cpu / wall : 0;
}

double doctor_usable_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	double cores = n > 0 ? (double)n : 1, q = 0;
	char line[512];
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (!f)
		return cores;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2, dir[700];

		if (!c1)
			continue;
		c2 = strchr(c1 + 1, ':');
		if (!c2)
			continue;
		c2[strcspn(c2, "\n")] = 0;
		*c2 = 0;
		if (c1[1] == 0) {
			/* cgroup v2: cpu.max "QUOTA PERIOD" or "max ..." */
			char path[760], buf[64];
			long long qq, pp;

			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpu.max",
				 c2 + 1);
			if (!sysfs_read_small(path, buf, sizeof(buf)) &&
			    sscanf(buf, "%lld %lld", &qq, &pp) == 2 && qq > 0 &&
			    pp > 0)
				q = (double)qq / (double)pp;
			continue;
		}
		if (!strstr(c1 + 1, "cpu") || strstr(c1 + 1, "cpuset"))
			if (!strstr(c1 + 1, "cpu,") && strcmp(c1 + 1, "cpu"))
				continue;
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s%s", c1 + 1,
			 c2 + 1);
		q = quota_v1(dir);
		if (!q) {
			snprintf(dir, sizeof(dir), "/sys/fs/cgroup/cpu%s",
				 c2 + 1);
			q = quota_v1(dir);
		}
		if (q)
			break;
	}
	fclose(f);
	if (q <= 0) {
		/* no cgroup files to read (a fresh sysfs, as under `ip netns
		 * exec`): measure how much of one core this thread gets */
		double m = measured_share();

		if (m > 0 && m < 0.9)
			q = m;
	}
	return q > 0 && q < cores ? q : cores;
}

void doctor_local_facts(struct proto_probe_result *f, const char *dir)
{
	struct cryptobench_cpu cpu;
	struct disk_info di;
	struct lr_err e = { 0 };

	memset(f, 0, sizeof(*f));
	cryptobench_cpu_probe(&cpu);
	snprintf(f->model, sizeof(f->model), "%s",
		 cpu.model[0] ? cpu.model : cpu.arch);
	snprintf(f->governor, sizeof(f->governor), "%s", cpu.governor);
	f->aes = cpu.aes;
	f->centicores = (uint32_t)(doctor_usable_cores() * 100 + 0.5);
	f->sockbuf[0] = (uint32_t)read_num("/proc/sys/net/core/rmem_max");
	f->sockbuf[1] = (uint32_t)read_num("/proc/sys/net/core/wmem_max");
	f->sockbuf[2] = (uint32_t)read_third("/proc/sys/net/ipv4/tcp_rmem");
	f->sockbuf[3] = (uint32_t)read_third("/proc/sys/net/ipv4/tcp_wmem");
	if (sysfs_read_small("/proc/sys/net/ipv4/tcp_congestion_control", f->cc,
			     sizeof(f->cc)))
		f->cc[0] = 0;
	if (dir && !disk_identify(dir, "/sys", "/proc/self/mountinfo", &di, &e))
		snprintf(f->storage, sizeof(f->storage), "%s%s%s%s%s",
			 disk_kind_desc(di.kind), di.part[0] ? " " : "",
			 di.part, di.fstype[0] ? ", " : "", di.fstype);
}

double doctor_link_ceiling(uint64_t speed_bps)
{
	return link_goodput_bps(speed_bps, 1500, false, true) / 8;
}
