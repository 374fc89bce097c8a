// SPDX-License-Identifier: MIT
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "conn.h"
#include "crypto.h"
#include "cryptobench.h"
#include "disk.h"
#include "doctor.h"
#include "fsio.h"
#include "gen.h"
#include "net.h"
#include "session.h"
#include "sysfs.h"
#include "banned.h"

#define CTRL_TIMEOUT_MS	 10000
#define PROBE_TIMEOUT_MS 180000 /* a slow disk writing its test file */
#define CPU_BOUND	 0.85	/* share of usable CPU that counts as full */

/* Per-core seal and open of both ciphers, large records. */
static void cipher_rates(uint32_t ms, struct proto_probe_result *f)
{
	struct cryptobench_result res;
	struct lr_err e = { 0 };
	unsigned i;

	f->nrates = 0;
	if (!ms || cryptobench_run(ms, &res, &e))
		return;
	for (i = 0; i < res.nrows && f->nrates < PROTO_PROBE_MAX_RATES; i++) {
		const struct cryptobench_row *row = &res.rows[i];

		if (row->record != CRYPTOBENCH_BIG_RECORD)
			continue;
		f->rates[f->nrates].cipher = (uint8_t)row->cipher;
		f->rates[f->nrates].seal = (uint64_t)(row->seal.mbps * 1e6);
		f->rates[f->nrates].open = (uint64_t)(row->open.mbps * 1e6);
		f->nrates++;
	}
}

void doctor_probe_answer(const struct proto_probe_request *req, int rootfd,
			 struct proto_probe_result *out)
{
	char dir[64];
	int dfd = -1;

	if (rootfd >= 0) {
		dfd = fsio_open_dir(rootfd, req->dir, false, 0);
		if (dfd >= 0)
			snprintf(dir, sizeof(dir), "/proc/self/fd/%d", dfd);
	}
	doctor_local_facts(out, dfd >= 0 ? dir : NULL);
	cipher_rates(req->cipher_ms, out);
	if (rootfd < 0) {
		snprintf(out->disk_error, sizeof(out->disk_error),
			 "the server has no --root");
	} else if (dfd < 0) {
		snprintf(out->disk_error, sizeof(out->disk_error),
			 "cannot open the directory below the root: %s",
			 lr_strerror(dfd));
	} else if (req->disk_bytes) {
		static const volatile sig_atomic_t never;
		struct disk_result dr;
		struct lr_err e = { 0 };
		uint64_t size = req->disk_bytes & ~((1ull << 20) - 1);

		if (!size)
			size = 1u << 20;
		/* as the receiver writes: page cache, chunk-size writes,
		 * synced; never the O_DIRECT figure of linerate disk */
		if (!disk_run_buffered(dir, size, XFER_DEFAULT_CHUNK, &never,
				       NULL, NULL, &dr, &e)) {
			out->disk_bytes = dr.bytes;
			out->disk_usec = (uint64_t)(dr.write_sec * 1e6);
			out->disk_cpu_usec = (uint64_t)(dr.write_cpu_sec * 1e6)
						     ?: 1;
		} else {
			snprintf(out->disk_error, sizeof(out->disk_error), "%s",
				 e.msg);
		}
	}
	if (dfd >= 0)
		close(dfd);
}

double doctor_limit(const struct doctor_report *r)
{
	const struct doctor_stage *net = &r->stage[DOCTOR_NET],
				  *ci = &r->stage[DOCTOR_CIPHER];

	if (r->bottleneck < 0)
		return 0;
	if (r->bottleneck == DOCTOR_CIPHER && net->cpu_bound) {
		/* the CPU held the network stage: the lower of what the
		 * network reached and what the cipher estimate allows */
		if (ci->measured && ci->bps > 0 && ci->bps < net->bps)
			return ci->bps;
		return net->bps;
	}
	return r->stage[r->bottleneck].bps;
}

int doctor_pick(const struct doctor_stage st[DOCTOR_NSTAGES])
{
	static const int order[] = { DOCTOR_SOURCE, DOCTOR_NET, DOCTOR_CIPHER,
				     DOCTOR_DEST };
	double best = 0;
	int pick = -1;
	unsigned i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const struct doctor_stage *s = &st[order[i]];

		if (!s->measured || s->bps <= 0)
			continue;
		if (pick < 0 || s->bps < best) {
			best = s->bps;
			pick = order[i];
		}
	}
	/* the network or the disk measured with a CPU at its limit: the
	 * CPU held it */
	if ((pick == DOCTOR_NET || pick == DOCTOR_DEST) && st[pick].cpu_bound)
		pick = DOCTOR_CIPHER;
	return pick;
}

static void advise(struct doctor_report *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void advise(struct doctor_report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nadvice >= sizeof(r->advice) / sizeof(r->advice[0]))
		return;
	va_start(ap, fmt);
	vsnprintf(r->advice[r->nadvice++], sizeof(r->advice[0]), fmt, ap);
	va_end(ap);
}

static void advise_side(struct doctor_report *r, const char *who,
			const struct doctor_side *s)
{
	const struct proto_probe_result *p = &s->p;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (p->governor[0] && strcmp(p->governor, "performance"))
		advise(r,
		       "%s: CPU frequency governor '%s': for transfers set "
		       "'performance' (cpupower frequency-set -g performance)",
		       who, p->governor);
	if (s->cores > 0 && s->cores < 1.0)
		advise(r,
		       "%s: only %.2f of a core is usable (a cgroup CPU "
		       "quota): the cipher and the network stack share it",
		       who, s->cores);
	else if (n > 0 && s->cores > 0 && s->cores + 0.01 < (double)n &&
		 !strcmp(who, "this side"))
		advise(r, "%s: %.2f cores usable of %ld (a cgroup CPU quota)",
		       who, s->cores, n);
	if (!p->aes)
		advise(r,
		       "%s: no AES instructions: ChaCha20-Poly1305 is the "
		       "faster cipher there (auto chooses it)",
		       who);
	if (!strncmp(p->storage, "SD/MMC card", 11) ||
	    !strncmp(p->storage, "USB storage", 11))
		advise(r,
		       "%s: storage is %s: expect slow writes; a USB 3 "
		       "SSD is several times faster",
		       who, p->storage);
}

void doctor_advise(struct doctor_report *r)
{
	r->nadvice = 0;
	if (r->link_known) {
		if (r->link.wireless)
			advise(r,
			       "%s is Wi-Fi: retries and a shared medium cost "
			       "throughput; use Ethernet for big transfers",
			       r->link.ifname);
		if (!strcmp(r->link.duplex, "half"))
			advise(r,
			       "%s runs half duplex: check autonegotiation on "
			       "both ends (a duplex mismatch costs most of the "
			       "throughput)",
			       r->link.ifname);
		if (r->link.speed_bps && r->link.speed_bps < 1000000000ull &&
		    !r->link.virtual_if)
			advise(r,
			       "%s negotiated %.0f Mbit/s: check the cable "
			       "(Cat5e or better) and the port at the other end",
			       r->link.ifname, (double)r->link.speed_bps / 1e6);
	}
	advise_side(r, "this side", &r->local);
	if (r->remote.cores > 0) /* its facts known */
		advise_side(r, "the server", &r->remote);
	if (r->bdp_bytes > 0) {
		uint32_t rmax = r->local.p.sockbuf[2] < r->remote.p.sockbuf[2]
					? r->local.p.sockbuf[2]
					: r->remote.p.sockbuf[2];

		if (rmax && (double)rmax < 2 * r->bdp_bytes)
			advise(r,
			       "socket buffers: tcp_rmem max %u bytes is below "
			       "twice the path's bandwidth-delay product "
			       "(%.0f bytes): raise net.ipv4.tcp_rmem and "
			       "net.core.rmem_max",
			       rmax, r->bdp_bytes);
	}
	if (r->bottleneck == DOCTOR_NET && r->ceiling_bps > 0 &&
	    r->stage[DOCTOR_NET].bps < 0.8 * r->ceiling_bps)
		advise(r,
		       "the network reached %.0f%% of the link's TCP ceiling: "
		       "look for a slower hop, Wi-Fi on the way, or traffic "
		       "from others",
		       100.0 * r->stage[DOCTOR_NET].bps / r->ceiling_bps);
}

static double side_cores(const struct proto_probe_result *p)
{
	return p->centicores ? (double)p->centicores / 100.0 : 1.0;
}

static const struct proto_probe_rate *
rate_of(const struct proto_probe_result *p, enum crypto_cipher c)
{
	unsigned i;

	for (i = 0; i < p->nrates; i++)
		if (p->rates[i].cipher == c)
			return &p->rates[i];
	return NULL;
}

static void stage_label(struct doctor_report *r)
{
	char extra[120] = "";
	const struct doctor_stage *s;

	if (r->bottleneck < 0) {
		snprintf(r->bottleneck_label, sizeof(r->bottleneck_label),
			 "nothing could be measured");
		return;
	}
	s = &r->stage[r->bottleneck];
	switch (r->bottleneck) {
	case DOCTOR_SOURCE:
		snprintf(r->bottleneck_label, sizeof(r->bottleneck_label),
			 "source disk (%s)", s->detail);
		break;
	case DOCTOR_DEST:
		snprintf(r->bottleneck_label, sizeof(r->bottleneck_label),
			 "destination disk (%s)", s->detail);
		break;
	case DOCTOR_CIPHER:
		snprintf(r->bottleneck_label, sizeof(r->bottleneck_label),
			 "cipher / CPU (%s)", r->stage[DOCTOR_CIPHER].detail);
		break;
	default:
		if (r->link_known && r->link.speed_bps && !r->link.virtual_if)
			snprintf(extra, sizeof(extra), ", %s %.0f Mbit/s%s",
				 r->link.ifname,
				 (double)r->link.speed_bps / 1e6,
				 r->link.wireless ? " Wi-Fi" : "");
		snprintf(r->bottleneck_label, sizeof(r->bottleneck_label),
			 "network%s", extra);
	}
}

/* Open a control connection with the handshake and CTRL_OPEN sent. */
static int open_ctrl(const struct doctor_opts *o, struct conn *c,
		     struct net_addr *addr, char *where, size_t cap,
		     struct lr_err *err)
{
	struct net_sockopts so = { .nodelay = true };
	struct proto_ctrl_open co = { .features = 0 };
	uint8_t buf[1024];
	struct proto_buf b;
	int fd, r;

	r = net_resolve(o->host, o->port, o->family, false, addr, err);
	if (r)
		return r;
	net_addr_str((struct sockaddr *)&addr->ss, where, cap);
	fd = net_connect(addr, NULL, &so, 10000, err);
	if (fd < 0)
		return fd;
	r = conn_client_open(fd, o->psk, o->cipher_wish, where,
			     net_now_ms() + CTRL_TIMEOUT_MS, c, err);
	if (r) {
		close(fd);
		return r;
	}
	snprintf(co.software, sizeof(co.software), "linerate %s",
		 LINERATE_VERSION);
	proto_buf_init(&b, buf, sizeof(buf));
	r = proto_encode_ctrl_open(&b, &co);
	if (!r)
		r = conn_send_msg(c, buf, b.len,
				  net_now_ms() + CTRL_TIMEOUT_MS);
	if (r) {
		close(fd);
		conn_fini(c);
		return lr_err_setc(err, r, "talking to %s", where);
	}
	return 0;
}

static int probe(const struct doctor_opts *o, const char *dir,
		 uint64_t disk_bytes, uint32_t cipher_ms,
		 struct proto_probe_result *out, struct lr_err *err)
{
	struct proto_probe_request req = {
		.disk_bytes = disk_bytes,
		.cipher_ms = cipher_ms,
	};
	uint8_t *buf = malloc(PROTO_MAX_BODY + 64);
	char where[NET_ADDRSTR];
	struct net_addr addr;
	struct proto_buf b;
	struct proto_hdr h;
	struct conn c;
	int r;

	if (!buf)
		return lr_err_setc(err, -ENOMEM, "buffer");
	snprintf(req.dir, sizeof(req.dir), "%s", dir ? dir : "");
	if (req.disk_bytes > PROTO_PROBE_MAX_DISK)
		req.disk_bytes = PROTO_PROBE_MAX_DISK;
	r = open_ctrl(o, &c, &addr, where, sizeof(where), err);
	if (r) {
		free(buf);
		return r;
	}
	proto_buf_init(&b, buf, PROTO_MAX_BODY);
	r = proto_encode_probe_request(&b, &req);
	if (!r)
		r = conn_send_msg(&c, buf, b.len,
				  net_now_ms() + CTRL_TIMEOUT_MS);
	if (!r)
		r = conn_recv_msg(&c, buf, PROTO_MAX_BODY + 64, &h,
				  net_now_ms() + PROBE_TIMEOUT_MS, err);
	if (!r && h.type == PROTO_ERROR) {
		struct proto_error pe;

		r = proto_decode_error(buf, h.len, &pe)
			    ? lr_err_set(err, LR_EBADMSG, "malformed error")
			    : lr_err_set(err, LR_EPEER, "server: %s", pe.text);
	} else if (!r && (h.type != PROTO_PROBE_RESULT ||
			  proto_decode_probe_result(buf, h.len, out))) {
		r = lr_err_set(err, LR_EBADMSG,
			       "%s did not answer the probe (an older "
			       "linerate?)",
			       where);
	} else if (r && !err->msg[0]) {
		lr_err_setc(err, r, "probe of %s", where);
	}
	close(c.fd);
	conn_fini(&c);
	free(buf);
	return r;
}

int doctor_probe_facts(const struct doctor_opts *o,
		       struct proto_probe_result *out, struct lr_err *err)
{
	return probe(o, NULL, 0, 0, out, err);
}

static double now_s(void)
{
	return (double)net_now_us() / 1e6;
}

/* Read the source from the device (page cache dropped first). */
static int source_read(const char *path, uint64_t size, double *bps, char *desc,
		       size_t cap, struct lr_err *err)
{
	struct disk_info di;
	struct lr_err e2 = { 0 };
	uint8_t *buf;
	uint64_t done = 0;
	double t0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return lr_err_setc(err, -errno, "%s", path);
	buf = malloc(1u << 20);
	if (!buf) {
		close(fd);
		return lr_err_setc(err, -ENOMEM, "buffer");
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	t0 = now_s();
	while (!size || done < size) {
		ssize_t k = read(fd, buf, 1u << 20);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		done += (uint64_t)k;
	}
	*bps = done ? (double)done / (now_s() - t0 + 1e-9) : 0;
	close(fd);
	free(buf);
	if (!disk_identify(path, "/sys", "/proc/self/mountinfo", &di, &e2))
		snprintf(desc, cap, "%s%s%s", disk_kind_desc(di.kind),
			 di.part[0] ? " " : "", di.part);
	else
		snprintf(desc, cap, "%s", path);
	return 0;
}

/* A generated source in memory (tmpfs): its path into out. */
static int make_source(uint64_t size, char *out, size_t cap, double *bps,
		       struct lr_err *err)
{
	const char *base = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
	struct gen *g;
	double t0;
	int fd, r;

	snprintf(out, cap, "%s/.linerate-doctor-%ld.bin", base, (long)getpid());
	fd = open(out, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return lr_err_setc(err, -errno, "%s", out);
	r = gen_new(NULL, 0, &g);
	if (r) {
		close(fd);
		unlink(out);
		return lr_err_setc(err, r, "test data");
	}
	t0 = now_s();
	r = gen_write(g, fd, size, NULL, NULL);
	*bps = (double)size / (now_s() - t0 + 1e-9);
	gen_free(g);
	close(fd);
	if (r) {
		unlink(out);
		return lr_err_setc(err, r, "writing %s", out);
	}
	return 0;
}

static bool cpu_full(const struct proto_cpu *c, double cores)
{
	double used;

	if (!c->wall_us || cores <= 0)
		return false;
	used = (double)(c->user_us + c->sys_us) / (double)c->wall_us;
	return used >= CPU_BOUND * cores;
}

static int net_stage(const struct doctor_opts *o, bool reverse,
		     struct doctor_report *rep, struct doctor_stage *st,
		     struct lr_err *err)
{
	struct bench_opts bo = { 0 };
	struct bench_callbacks cb = { 0 };
	struct bench_result res;
	uint64_t bytes = 0;
	double secs = 0;
	unsigned i;
	int r;

	bo.host = o->host;
	bo.port = o->port;
	bo.family = o->family;
	bo.link_host = o->link_host;
	bo.psk = o->psk;
	/* without a token the data goes in clear: no cipher to ask for */
	bo.cipher_wish = o->psk ? o->cipher_wish : CRYPTO_CIPHER_AUTO;
	bo.connect_timeout_ms = 10000;
	bo.link_speed_bps = o->link_speed_bps;
	bo.req.mode = reverse ? PROTO_MODE_REVERSE : PROTO_MODE_FORWARD;
	bo.req.streams = (uint16_t)o->streams;
	bo.req.duration_ms = o->net_ms;
	bo.req.blksize = BENCH_DEFAULT_BLKSIZE;
	r = bench_client_run(&bo, &cb, &res, err);
	if (r)
		return r;
	/* what the receiving end counted, over the time it counted it
	 * (the bytes still in flight at the stop included) */
	for (i = 0; i < res.nstreams; i++) {
		bytes += res.streams[i].receiver.bytes;
		if (res.streams[i].receiver.seconds > secs)
			secs = res.streams[i].receiver.seconds;
	}
	if (secs <= 0)
		secs = res.duration;
	st->measured = true;
	st->bps = secs > 0 ? (double)bytes / secs : 0;
	st->cpu_bound = cpu_full(&res.local_cpu, rep->local.cores) ||
			cpu_full(&res.remote_cpu, rep->remote.cores);
	snprintf(st->detail, sizeof(st->detail), "%u stream%s, %s%s",
		 o->streams, o->streams == 1 ? "" : "s",
		 res.authenticated ? crypto_cipher_name(res.cipher) : "clear",
		 st->cpu_bound ? ", a CPU at its limit" : "");
	if (!reverse) {
		rep->cipher = res.cipher;
		rep->link_known = res.link_known;
		rep->ipv6 = res.ipv6;
		snprintf(rep->link.ifname, sizeof(rep->link.ifname), "%s",
			 res.link_if);
		rep->link.speed_bps = res.link_speed_bps;
		rep->link.mtu = res.link_mtu;
		rep->link.wireless = res.link_wireless;
		rep->link.virtual_if = res.link_virtual;
		rep->ceiling_bps = res.link_ceiling_bps / 8.0;
		if (res.nstreams)
			rep->rtt_us = res.streams[0].sender.mean_rtt;
	}
	bench_result_free(&res);
	return 0;
}

static void say_stage(const struct doctor_callbacks *cb, const char *what)
{
	if (cb && cb->stage)
		cb->stage(cb->ctx, what);
}

/* Both sides' facts: the server's by probe (its disk written in dir),
 * this side's ciphers here (its other facts are in already). */
static int both_sides(const struct doctor_opts *o,
		      const struct doctor_callbacks *cb,
		      struct doctor_report *rep, char *dir, struct lr_err *err)
{
	int r;

	say_stage(cb, "the server's CPU, ciphers and disk");
	r = probe(o, dir, o->size, 150, &rep->remote.p, err);
	if (r)
		return r;
	rep->remote.cores = side_cores(&rep->remote.p);
	say_stage(cb, "this side's CPU and ciphers");
	cipher_rates(150, &rep->local.p);
	return 0;
}

/* The source: the user's file read, or data made (*made) into src. */
static int source_stage(const struct doctor_opts *o,
			const struct doctor_callbacks *cb,
			struct doctor_report *rep, char *src, size_t cap,
			bool *made, struct lr_err *err)
{
	struct doctor_stage *s = &rep->stage[DOCTOR_SOURCE];
	double gen_bps = 0;
	int r;

	say_stage(cb, "source read");
	if (o->source) {
		r = source_read(o->source, o->size, &s->bps, s->detail,
				sizeof(s->detail), err);
		if (r)
			return r;
		s->measured = true;
		snprintf(src, cap, "%s", o->source);
		snprintf(rep->source_desc, sizeof(rep->source_desc), "%s",
			 o->source);
		return 0;
	}
	r = make_source(o->size, src, cap, &gen_bps, err);
	if (r)
		return r;
	*made = true;
	snprintf(rep->source_desc, sizeof(rep->source_desc),
		 "generated data (%.0f MB/s from linerate gen)", gen_bps / 1e6);
	return 0;
}

/* The network both ways, the BDP, the link's duplex. */
static int network_stage(const struct doctor_opts *o,
			 const struct doctor_callbacks *cb,
			 struct doctor_report *rep, struct lr_err *err)
{
	struct link_info li;
	int r;

	say_stage(cb, "network, this side to the server");
	r = net_stage(o, false, rep, &rep->stage[DOCTOR_NET], err);
	if (r)
		return r;
	say_stage(cb, "network, the server to this side");
	r = net_stage(o, true, rep, &rep->stage[DOCTOR_NET_BACK], err);
	if (r)
		return r;
	if (rep->ceiling_bps > 0 && rep->rtt_us)
		rep->bdp_bytes = rep->ceiling_bps * rep->rtt_us / 1e6;
	if (rep->link_known && rep->link.ifname[0] &&
	    !link_read_sysfs("/sys", rep->link.ifname, &li))
		memcpy(rep->link.duplex, li.duplex, sizeof(rep->link.duplex));
	return 0;
}

/* The cipher: this side seals, the server opens, each on the streams'
 * threads, as many as there are usable cores. */
static void cipher_stage(const struct doctor_opts *o, struct doctor_report *rep)
{
	const struct proto_probe_rate *a, *b;
	struct doctor_stage *s = &rep->stage[DOCTOR_CIPHER];
	double lc, rc, ls, ro;

	if (rep->cipher == CRYPTO_NONE)
		return;
	a = rate_of(&rep->local.p, rep->cipher);
	b = rate_of(&rep->remote.p, rep->cipher);
	if (!a || !b)
		return;
	lc = rep->local.cores < o->streams ? rep->local.cores : o->streams;
	rc = rep->remote.cores < o->streams ? rep->remote.cores : o->streams;
	ls = (double)a->seal * lc;
	ro = (double)b->open * rc;
	s->measured = true;
	s->bps = ls < ro ? ls : ro;
	snprintf(s->detail, sizeof(s->detail),
		 "%s; %s at %.0f MB/s per core x %.2f cores",
		 cryptobench_cipher_label(rep->cipher),
		 ls < ro ? "this side seals" : "the server opens",
		 (double)(ls < ro ? a->seal : b->open) / 1e6,
		 ls < ro ? lc : rc);
}

/* The destination: the server's disk write of the probe. */
void doctor_dest_stage(struct doctor_report *rep)
{
	struct doctor_stage *s = &rep->stage[DOCTOR_DEST];
	const struct proto_probe_result *p = &rep->remote.p;
	double cores = rep->remote.cores > 0 && rep->remote.cores < 1
			       ? rep->remote.cores
			       : 1;

	if (!p->disk_bytes || !p->disk_usec)
		return;
	s->measured = true;
	s->bps = (double)p->disk_bytes * 1e6 / (double)p->disk_usec;
	/* the write through the page cache is copies: a writer that had its
	 * CPU (one thread, at most the usable cores) nearly all the time
	 * was held by the CPU, not the disk (a peer's figure: compared,
	 * never trusted beyond) */
	s->cpu_bound = p->disk_cpu_usec &&
		       (double)p->disk_cpu_usec >=
			       CPU_BOUND * cores * (double)p->disk_usec;
	/* a server that writes as the receiver does says its CPU time (at
	 * least 1); an older one wrote with O_DIRECT, past the page cache */
	snprintf(s->detail, sizeof(s->detail), "%s; %s%s",
		 p->storage[0] ? p->storage : "the server's disk",
		 p->disk_cpu_usec ? "as received: page cache, fdatasync"
				  : "an older server's figure (O_DIRECT, not "
				    "the page cache a transfer writes through)",
		 s->cpu_bound ? ", a CPU at its limit" : "");
}

/* This process's CPU seconds and the machine's busy ones (/proc/stat's
 * first line), each < 0 when not known. */
static void cpu_seconds(double *self, double *machine)
{
	unsigned long long v[8];
	struct rusage ru;
	char buf[256];
	long tck = sysconf(_SC_CLK_TCK);

	*self = *machine = -1;
	if (!getrusage(RUSAGE_SELF, &ru))
		*self = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
			(double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	if (tck > 0 && !sysfs_read_small("/proc/stat", buf, sizeof(buf)) &&
	    sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8)
		/* all but idle and iowait */
		*machine = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) /
			   (double)tck;
}

/* The transfer's facts: each CPU over its time, where its threads
 * spent theirs. */
static void xfer_facts(const struct doctor_opts *o, struct doctor_report *rep,
		       const struct xfer_result *xr, const double before[2],
		       double wall)
{
	struct doctor_xfer_facts *x = &rep->xf;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	double after[2], share = 0;
	const char *waited = xfer_bottleneck(xr, &share);

	cpu_seconds(&after[0], &after[1]);
	x->here_cores = before[0] >= 0 && after[0] >= 0 && wall > 0
				? (after[0] - before[0]) / wall
				: -1;
	x->machine_cores = before[1] >= 0 && after[1] >= 0 && wall > 0
				   ? (after[1] - before[1]) / wall
				   : -1;
	x->machine_cpus = n > 0 ? (unsigned)n : 0;
	x->same_machine = o->same_machine ||
			  (rep->link_known && !strcmp(rep->link.ifname, "lo"));
	if (xr->local.wall_us) {
		snprintf(x->waited, sizeof(x->waited), "%s", waited);
		x->waited_share = share;
	}
}

/* A real transfer of src into dir, verified, never named on the server. */
static int transfer_stage(const struct doctor_opts *o,
			  const struct doctor_callbacks *cb,
			  struct doctor_report *rep, const char *dir,
			  const char *src, struct lr_err *err)
{
	struct xfer_client_opts xo = { 0 };
	struct xfer_callbacks xcb = { 0 };
	struct xfer_result xr;
	const char *paths[1] = { src };
	double before[2], t0;
	int r;

	say_stage(cb, "a transfer");
	xo.host = o->host;
	xo.port = o->port;
	xo.family = o->family;
	xo.link_host = o->link_host;
	xo.psk = o->psk;
	xo.cipher_wish = o->cipher_wish;
	xo.streams = o->streams;
	xo.connect_timeout_ms = 10000;
	xo.op = XFER_PUSH;
	xo.npaths = 1;
	xo.paths[0] = dir;
	xo.x.flags = XFER_F_SCRATCH;
	xo.x.cancel = o->cancel;
	xo.src.rootfd = -1;
	xo.src.npaths = 1;
	xo.src.paths = paths;
	xo.outfd = xo.dest.dirfd = -1;
	cpu_seconds(&before[0], &before[1]);
	t0 = now_s();
	r = xfer_client_run(&xo, &xcb, &xr, err);
	if (r)
		return r;
	rep->xfer_done = true;
	rep->xfer_bytes = xr.bytes;
	rep->xfer_bps = xr.seconds > 0 ? (double)xr.bytes / xr.seconds : 0;
	xfer_facts(o, rep, &xr, before, now_s() - t0);
	return 0;
}

/* The transfer's own facts in words: each end's CPU as far as known,
 * where the stream threads spent their time. */
static size_t facts_words(const struct doctor_report *r, char *out, size_t cap)
{
	const struct doctor_xfer_facts *x = &r->xf;
	size_t n = 0;

	out[0] = 0;
	if (x->here_cores >= 0 && n < cap)
		n += (size_t)snprintf(out + n, cap - n,
				      "this side's CPU %.2f of %.2f usable "
				      "cores busy",
				      x->here_cores, r->local.cores);
	if (x->machine_cores >= 0 && x->machine_cpus && n < cap)
		n += (size_t)snprintf(
			out + n, cap - n,
			"%sthis machine's CPUs %.2f of %u busy%s",
			n ? "; " : "", x->machine_cores, x->machine_cpus,
			x->same_machine ? " (both ends run here)" : "");
	if (x->waited[0] && n < cap)
		n += (size_t)snprintf(out + n, cap - n,
				      "%sthe stream threads' most time: %s, "
				      "%.0f%%",
				      n ? "; " : "", x->waited,
				      100.0 * x->waited_share);
	return n < cap ? n : cap - 1;
}

/* No fact names what held the transfer: said, with every measured
 * stage's figure (the reverse network is not a push's). */
static void unexplained_words(const struct doctor_report *r, char *out,
			      size_t cap)
{
	static const char *const names[DOCTOR_NSTAGES] = {
		[DOCTOR_SOURCE] = "the source",
		[DOCTOR_NET] = "the network",
		[DOCTOR_CIPHER] = "the cipher",
		[DOCTOR_DEST] = "the destination",
	};
	size_t n = (size_t)snprintf(out, cap,
				    "The stage estimates do not "
				    "explain it:");
	const char *sep = "";
	unsigned i;

	for (i = 0; i < DOCTOR_NSTAGES && n < cap; i++) {
		if (!names[i] || !r->stage[i].measured)
			continue;
		n += (size_t)snprintf(out + n, cap - n, "%s %s %.1f", sep,
				      names[i], r->stage[i].bps / 1e6);
		sep = ",";
	}
	if (n < cap)
		snprintf(out + n, cap - n, " MB/s.");
}

/* What held a transfer that its slowest stage did not: a CPU busy, both
 * ends sharing this machine's, where the stream threads waited; or
 * nothing the facts show. */
static void cause_words(const struct doctor_report *r, char *out, size_t cap)
{
	const struct doctor_xfer_facts *x = &r->xf;
	double lc = r->local.cores;

	if (r->streams && lc > r->streams)
		lc = r->streams; /* a stream is a thread */
	if (x->same_machine && x->machine_cpus &&
	    x->machine_cores >= CPU_BOUND * x->machine_cpus)
		snprintf(out, cap,
			 "Both ends ran on this machine and shared its %u "
			 "CPUs, busy during the transfer: the CPUs held it "
			 "(each stage was measured alone; the transfer runs "
			 "them all at once).",
			 x->machine_cpus);
	else if (x->here_cores >= 0 && lc > 0 &&
		 x->here_cores >= CPU_BOUND * lc)
		snprintf(out, cap,
			 "This side's CPU held it: busy during the transfer "
			 "(reading, hashing and sealing at once), up to the "
			 "%.2f cores its %u stream%s can use.",
			 lc, r->streams, r->streams == 1 ? "" : "s");
	else if (x->waited[0] && strcmp(x->waited, "network") &&
		 x->waited_share >= 0.5)
		snprintf(out, cap,
			 "The %s held it: the stream threads spent most of "
			 "their time there, below the stage's own figure.",
			 x->waited);
	else
		unexplained_words(r, out, cap);
}

/* The verdict in words: the stage that held the transfer, or what the
 * transfer's facts show when it reached too little of the stage's
 * figure for that stage to have held it. */
static void verdict_words(struct doctor_report *r)
{
	char cause[320], facts[240];

	r->verdict[0] = 0;
	r->held = false;
	if (!r->xfer_done || r->bottleneck < 0 || r->limit_bps <= 0)
		return;
	if (r->xfer_share >= DOCTOR_HELD_SHARE) {
		r->held = true;
		snprintf(r->verdict, sizeof(r->verdict),
			 "Limited by %s: %.1f MB/s; transfer %.1f MB/s, %.0f%%",
			 r->bottleneck_label, r->limit_bps / 1e6,
			 r->xfer_bps / 1e6, 100.0 * r->xfer_share);
		return;
	}
	cause_words(r, cause, sizeof(cause));
	facts_words(r, facts, sizeof(facts));
	snprintf(r->verdict, sizeof(r->verdict),
		 "The transfer, %.1f MB/s, reached %.0f%% of the slowest "
		 "stage, %s at %.1f MB/s: that stage did not hold it. %s%s%s%s",
		 r->xfer_bps / 1e6, 100.0 * r->xfer_share, r->bottleneck_label,
		 r->limit_bps / 1e6, cause,
		 facts[0] ? " During the transfer: " : "", facts,
		 facts[0] ? "." : "");
}

void doctor_verdict(struct doctor_report *r)
{
	r->bottleneck = doctor_pick(r->stage);
	stage_label(r);
	r->limit_bps = r->bottleneck >= 0 ? doctor_limit(r) : 0;
	r->xfer_share = r->limit_bps > 0 ? r->xfer_bps / r->limit_bps : 0;
	verdict_words(r);
	doctor_advise(r);
}

/* The cipher on this side's CPU alone (a server without a token tells
 * nothing of its own): what this side seals with its streams' cores. */
static void cipher_stage_here(const struct doctor_opts *o,
			      struct doctor_report *rep)
{
	struct doctor_stage *s = &rep->stage[DOCTOR_CIPHER];
	enum crypto_cipher c = o->cipher_wish != CRYPTO_CIPHER_AUTO
				       ? (enum crypto_cipher)o->cipher_wish
			       : rep->local.p.aes ? CRYPTO_AES256GCM
						  : CRYPTO_CHACHA20POLY1305;
	const struct proto_probe_rate *a = rate_of(&rep->local.p, c);
	double lc = rep->local.cores < o->streams ? rep->local.cores
						  : o->streams;

	if (!a || c == CRYPTO_NONE)
		return;
	s->measured = true;
	s->bps = (double)a->seal * lc;
	snprintf(s->detail, sizeof(s->detail),
		 "%s; this side seals at %.0f MB/s per core x %.2f cores; "
		 "the server's CPU not measured",
		 cryptobench_cipher_label(c), (double)a->seal / 1e6, lc);
}

/* A server without a token (ask first: a bench-only server answers, one
 * that wants a token says so at once): the network both ways in clear,
 * the cipher on this side's CPU; what needs a token said. */
static int tokenless_run(const struct doctor_opts *o,
			 const struct doctor_callbacks *cb,
			 struct doctor_report *rep, struct lr_err *err)
{
	int r;

	rep->tokenless = true;
	r = network_stage(o, cb, rep, err);
	if (r)
		return r;
	say_stage(cb, "this side's CPU and ciphers");
	cipher_rates(150, &rep->local.p);
	cipher_stage_here(o, rep);
	snprintf(rep->not_measured, sizeof(rep->not_measured),
		 "this server has no token: the network was measured in "
		 "clear, the cipher on this side only; the server's CPU, "
		 "its disk and a transfer need `linerate serve --root DIR "
		 "--token-file FILE` and its token");
	doctor_verdict(rep);
	return 0;
}

int doctor_run(const struct doctor_opts *o, const struct doctor_callbacks *cb,
	       struct doctor_report *rep, struct lr_err *err)
{
	char src[512] = "", dir[PROTO_XFER_MAX_PATH + 1] = "";
	bool made = false;
	int r;

	memset(rep, 0, sizeof(*rep));
	rep->bottleneck = -1;
	rep->streams = o->streams;
	/* this side's facts need no peer: in the report also on failure */
	doctor_local_facts(&rep->local.p, o->source ? o->source : ".");
	rep->local.cores = side_cores(&rep->local.p);
	if (!o->psk)
		return tokenless_run(o, cb, rep, err);
	r = both_sides(o, cb, rep, dir, err);
	if (!r && strstr(rep->remote.p.disk_error, "no --root"))
		say_stage(cb, "without a transfer: the server has no --root");
	if (!r)
		r = source_stage(o, cb, rep, src, sizeof(src), &made, err);
	if (r)
		return r;
	r = network_stage(o, cb, rep, err);
	if (!r) {
		cipher_stage(o, rep);
		doctor_dest_stage(rep);
		/* known from the probe: no transfer to try (ask first) */
		if (strstr(rep->remote.p.disk_error, "no --root"))
			snprintf(rep->not_measured, sizeof(rep->not_measured),
				 "the server has no --root: the transfer was "
				 "not measured (start it with --root DIR)");
		else
			r = transfer_stage(o, cb, rep, dir, src, err);
	}
	if (!r)
		doctor_verdict(rep);
	if (made)
		unlink(src);
	return r;
}
