// SPDX-License-Identifier: MIT
/*
 * Unit tests of the pure parts of doctor.[ch]: doctor_pick on sample stage
 * figures (the slowest measured stage wins, NET_BACK never does, a
 * CPU-bound network counts as the cipher) and doctor_advise on sample
 * reports (each fact that deserves a line gets one; a clean report none).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "doctor.h"
#include "sysfs.h"

/* ---- doctor_pick ---- */

static void set_stage(struct doctor_stage *st, enum doctor_stage_id id,
		      double bps)
{
	st[id].measured = true;
	st[id].bps = bps;
}

static void pick_slowest(void **state)
{
	struct doctor_stage st[DOCTOR_NSTAGES] = { 0 };

	(void)state;
	set_stage(st, DOCTOR_SOURCE, 900e6);
	set_stage(st, DOCTOR_NET, 117e6);
	set_stage(st, DOCTOR_CIPHER, 1500e6);
	set_stage(st, DOCTOR_DEST, 21e6);
	assert_int_equal(doctor_pick(st), DOCTOR_DEST);

	st[DOCTOR_DEST].bps = 2000e6;
	assert_int_equal(doctor_pick(st), DOCTOR_NET);

	st[DOCTOR_SOURCE].bps = 50e6;
	assert_int_equal(doctor_pick(st), DOCTOR_SOURCE);

	st[DOCTOR_SOURCE].bps = 900e6;
	st[DOCTOR_CIPHER].bps = 80e6;
	assert_int_equal(doctor_pick(st), DOCTOR_CIPHER);
}

static void pick_ignores_unmeasured(void **state)
{
	struct doctor_stage st[DOCTOR_NSTAGES] = { 0 };

	(void)state;
	set_stage(st, DOCTOR_NET, 117e6);
	set_stage(st, DOCTOR_DEST, 400e6);
	/* a figure without "measured" is not a measurement */
	st[DOCTOR_SOURCE].bps = 1e6;
	st[DOCTOR_CIPHER].bps = 2e6;
	assert_int_equal(doctor_pick(st), DOCTOR_NET);

	/* measured but nothing came through: no figure to compare */
	st[DOCTOR_SOURCE].measured = true;
	st[DOCTOR_SOURCE].bps = 0;
	assert_int_equal(doctor_pick(st), DOCTOR_NET);
	st[DOCTOR_SOURCE].bps = -5;
	assert_int_equal(doctor_pick(st), DOCTOR_NET);
}

static void pick_cpu_bound_net_is_cipher(void **state)
{
	struct doctor_stage st[DOCTOR_NSTAGES] = { 0 };

	(void)state;
	set_stage(st, DOCTOR_NET, 30e6);
	set_stage(st, DOCTOR_CIPHER, 45e6);
	set_stage(st, DOCTOR_DEST, 400e6);
	st[DOCTOR_NET].cpu_bound = true;
	assert_int_equal(doctor_pick(st), DOCTOR_CIPHER);

	/* even when the cipher's own figure was not measured */
	st[DOCTOR_CIPHER].measured = false;
	assert_int_equal(doctor_pick(st), DOCTOR_CIPHER);

	/* CPU-bound but not the slowest: the slowest stage still wins */
	set_stage(st, DOCTOR_DEST, 10e6);
	assert_int_equal(doctor_pick(st), DOCTOR_DEST);

	/* not CPU-bound: the network */
	st[DOCTOR_DEST].bps = 400e6;
	st[DOCTOR_NET].cpu_bound = false;
	assert_int_equal(doctor_pick(st), DOCTOR_NET);

	/* cpu_bound on the reverse direction changes nothing */
	set_stage(st, DOCTOR_NET_BACK, 25e6);
	st[DOCTOR_NET_BACK].cpu_bound = true;
	assert_int_equal(doctor_pick(st), DOCTOR_NET);

	/* the destination written through the page cache with its CPU at
	 * the limit (a CPU quota): the CPU, not the disk */
	st[DOCTOR_NET_BACK].cpu_bound = false;
	set_stage(st, DOCTOR_DEST, 20e6);
	st[DOCTOR_DEST].cpu_bound = true;
	assert_int_equal(doctor_pick(st), DOCTOR_CIPHER);
	st[DOCTOR_DEST].cpu_bound = false;
	assert_int_equal(doctor_pick(st), DOCTOR_DEST);
}

static void pick_never_net_back(void **state)
{
	struct doctor_stage st[DOCTOR_NSTAGES] = { 0 };

	(void)state;
	set_stage(st, DOCTOR_NET, 117e6);
	set_stage(st, DOCTOR_NET_BACK, 1e3);
	set_stage(st, DOCTOR_DEST, 400e6);
	assert_int_equal(doctor_pick(st), DOCTOR_NET);

	/* the reverse direction alone is not a bottleneck of a push */
	memset(st, 0, sizeof(st));
	set_stage(st, DOCTOR_NET_BACK, 1e3);
	assert_int_equal(doctor_pick(st), -1);
}

static void pick_nothing_measured(void **state)
{
	struct doctor_stage st[DOCTOR_NSTAGES] = { 0 };
	unsigned i;

	(void)state;
	assert_int_equal(doctor_pick(st), -1);
	for (i = 0; i < DOCTOR_NSTAGES; i++)
		st[i].bps = 1e6; /* figures, none measured */
	assert_int_equal(doctor_pick(st), -1);
	for (i = 0; i < DOCTOR_NSTAGES; i++) {
		st[i].measured = true;
		st[i].bps = 0;
	}
	assert_int_equal(doctor_pick(st), -1);
}

/* Equal figures: the first in the data's path (source, network, cipher,
 * destination) is named, so the answer does not flicker between runs. */
static void pick_ties(void **state)
{
	struct doctor_stage st[DOCTOR_NSTAGES] = { 0 };

	(void)state;
	set_stage(st, DOCTOR_SOURCE, 100e6);
	set_stage(st, DOCTOR_NET, 100e6);
	set_stage(st, DOCTOR_CIPHER, 100e6);
	set_stage(st, DOCTOR_DEST, 100e6);
	assert_int_equal(doctor_pick(st), DOCTOR_SOURCE);
	st[DOCTOR_SOURCE].measured = false;
	assert_int_equal(doctor_pick(st), DOCTOR_NET);
	st[DOCTOR_NET].measured = false;
	assert_int_equal(doctor_pick(st), DOCTOR_CIPHER);
	st[DOCTOR_CIPHER].measured = false;
	assert_int_equal(doctor_pick(st), DOCTOR_DEST);
	/* only two of them tie */
	memset(st, 0, sizeof(st));
	set_stage(st, DOCTOR_NET, 50e6);
	set_stage(st, DOCTOR_DEST, 50e6);
	set_stage(st, DOCTOR_SOURCE, 900e6);
	assert_int_equal(doctor_pick(st), DOCTOR_NET);
}

/* ---- doctor_advise ---- */

static double online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (double)n : 1;
}

/* A report with nothing to say: a 1 Gbit/s Ethernet link, both CPUs
 * with AES and the performance governor, every core usable, a virtual
 * disk (see advise_storage_kinds for the others), socket
 * buffers far above the path's BDP, the network at its ceiling. */
static void clean_report(struct doctor_report *r)
{
	struct doctor_side *sides[2] = { &r->local, &r->remote };
	unsigned i;

	memset(r, 0, sizeof(*r));
	r->link_known = true;
	snprintf(r->link.ifname, sizeof(r->link.ifname), "eth0");
	r->link.speed_bps = 1000000000ull;
	r->link.mtu = 1500;
	r->ceiling_bps = 117.6e6;
	r->rtt_us = 200;
	r->bdp_bytes = r->ceiling_bps * r->rtt_us / 1e6;
	for (i = 0; i < 2; i++) {
		struct proto_probe_result *p = &sides[i]->p;

		snprintf(p->model, sizeof(p->model), "Test CPU");
		snprintf(p->governor, sizeof(p->governor), "performance");
		p->aes = 1;
		snprintf(p->storage, sizeof(p->storage),
			 "virtual disk vda1, ext4");
		snprintf(p->cc, sizeof(p->cc), "cubic");
		p->sockbuf[0] = p->sockbuf[1] = 4194304;
		p->sockbuf[2] = p->sockbuf[3] = 6291456;
		sides[i]->cores = online_cpus();
		p->centicores = (uint32_t)(sides[i]->cores * 100);
	}
	r->stage[DOCTOR_NET].measured = true;
	r->stage[DOCTOR_NET].bps = 117e6;
	r->bottleneck = DOCTOR_NET;
}

/* How many advice lines contain every one of the given words. */
static unsigned count_lines(const struct doctor_report *r, const char *a,
			    const char *b)
{
	unsigned i, n = 0;

	for (i = 0; i < r->nadvice; i++)
		if (strstr(r->advice[i], a) && (!b || strstr(r->advice[i], b)))
			n++;
	return n;
}

static void print_advice(const struct doctor_report *r)
{
	unsigned i;

	for (i = 0; i < r->nadvice; i++)
		print_message("# advice: %s\n", r->advice[i]);
}

static void expect_one(const struct doctor_report *r, const char *a,
		       const char *b)
{
	if (count_lines(r, a, b) != 1) {
		print_advice(r);
		fail_msg("expected one advice line with \"%s\"%s%s%s, of %u", a,
			 b ? " and \"" : "", b ? b : "", b ? "\"" : "",
			 r->nadvice);
	}
}

static void advise_clean(void **state)
{
	struct doctor_report r;

	(void)state;
	clean_report(&r);
	doctor_advise(&r);
	if (r.nadvice)
		print_advice(&r);
	assert_int_equal(r.nadvice, 0);

	/* advising twice does not pile up lines */
	r.local.p.aes = 0;
	doctor_advise(&r);
	doctor_advise(&r);
	assert_int_equal(r.nadvice, 1);
}

static void advise_wifi(void **state)
{
	struct doctor_report r;

	(void)state;
	clean_report(&r);
	snprintf(r.link.ifname, sizeof(r.link.ifname), "wlan0");
	r.link.wireless = true;
	doctor_advise(&r);
	expect_one(&r, "Wi-Fi", "wlan0");

	/* the link not known: nothing said about it */
	r.link_known = false;
	doctor_advise(&r);
	assert_int_equal(count_lines(&r, "Wi-Fi", NULL), 0);
}

static void advise_half_duplex(void **state)
{
	struct doctor_report r;

	(void)state;
	clean_report(&r);
	snprintf(r.link.ifname, sizeof(r.link.ifname), "eth0");
	snprintf(r.link.duplex, sizeof(r.link.duplex), "half");
	doctor_advise(&r);
	expect_one(&r, "half duplex", "eth0");

	snprintf(r.link.duplex, sizeof(r.link.duplex), "full");
	doctor_advise(&r);
	assert_int_equal(count_lines(&r, "duplex", NULL), 0);
}

static void advise_slow_ethernet(void **state)
{
	struct doctor_report r;

	(void)state;
	clean_report(&r);
	r.link.speed_bps = 100000000ull;
	r.ceiling_bps = 11.7e6;
	r.stage[DOCTOR_NET].bps = 11.6e6;
	r.bdp_bytes = r.ceiling_bps * r.rtt_us / 1e6;
	doctor_advise(&r);
	expect_one(&r, "cable", "100 Mbit/s");
	assert_int_equal(r.nadvice, 1);

	/* a virtual interface has no cable */
	r.link.virtual_if = true;
	doctor_advise(&r);
	assert_int_equal(count_lines(&r, "cable", NULL), 0);

	/* 1 Gbit/s and faster: no cable line */
	r.link.virtual_if = false;
	r.link.speed_bps = 10000000000ull;
	doctor_advise(&r);
	assert_int_equal(count_lines(&r, "cable", NULL), 0);
}

static void advise_governor(void **state)
{
	struct doctor_report r;

	(void)state;
	clean_report(&r);
	snprintf(r.local.p.governor, sizeof(r.local.p.governor), "powersave");
	doctor_advise(&r);
	expect_one(&r, "governor", "powersave");
	expect_one(&r, "this side", "governor");
	assert_int_equal(count_lines(&r, "the server", "governor"), 0);

	clean_report(&r);
	snprintf(r.remote.p.governor, sizeof(r.remote.p.governor), "powersave");
	doctor_advise(&r);
	expect_one(&r, "governor", "powersave");
	expect_one(&r, "the server", "governor");
	assert_int_equal(count_lines(&r, "this side", "governor"), 0);

	/* both: one line each */
	snprintf(r.local.p.governor, sizeof(r.local.p.governor), "ondemand");
	doctor_advise(&r);
	assert_int_equal(count_lines(&r, "governor", NULL), 2);
	expect_one(&r, "this side", "ondemand");

	/* performance, or not known: nothing */
	clean_report(&r);
	doctor_advise(&r);
	assert_int_equal(count_lines(&r, "governor", NULL), 0);
	r.local.p.governor[0] = 0;
	r.remote.p.governor[0] = 0;
	doctor_advise(&r);
	assert_int_equal(count_lines(&r, "governor", NULL), 0);
}

static void advise_quota(void **state)
{
	struct doctor_report r;

	(void)state;
	clean_report(&r);
	r.remote.cores = 0.2;
	r.remote.p.centicores = 20;
	doctor_advise(&r);
	expect_one(&r, "the server", "0.20");
	expect_one(&r, "quota", NULL);

	clean_report(&r);
	r.local.cores = 0.2;
	r.local.p.centicores = 20;
	doctor_advise(&r);
	expect_one(&r, "this side", "0.20");
	expect_one(&r, "quota", NULL);
}

static void advise_no_aes(void **state)
{
	struct doctor_report r;

	(void)state;
	clean_report(&r);
	r.remote.p.aes = 0;
	doctor_advise(&r);
	expect_one(&r, "ChaCha20", "the server");
	assert_int_equal(r.nadvice, 1);

	clean_report(&r);
	r.local.p.aes = 0;
	doctor_advise(&r);
	expect_one(&r, "ChaCha20", "this side");
	assert_int_equal(r.nadvice, 1);
}

static void advise_storage(void **state)
{
	struct doctor_report r;

	(void)state;
	clean_report(&r);
	snprintf(r.remote.p.storage, sizeof(r.remote.p.storage),
		 "SD/MMC card mmcblk0p2, ext4");
	doctor_advise(&r);
	expect_one(&r, "storage", "mmcblk0p2");
	expect_one(&r, "the server", "storage");
	assert_int_equal(r.nadvice, 1);

	/* USB storage too */
	clean_report(&r);
	snprintf(r.local.p.storage, sizeof(r.local.p.storage),
		 "USB storage sdb1, exfat");
	doctor_advise(&r);
	expect_one(&r, "this side", "USB storage sdb1");
	assert_int_equal(r.nadvice, 1);
}

/* The descriptions disk_kind_desc() really gives: only SD/MMC cards and
 * USB storage are slow enough for a line; SSDs (whose name contains
 * "SD") and the rest are not. */
static void advise_storage_kinds(void **state)
{
	static const struct {
		const char *storage;
		bool line;
	} cases[] = {
		{ "SD/MMC card mmcblk0p2, ext4", true },
		{ "USB storage sdb1, ext4", true },
		{ "NVMe SSD nvme0n1p2, ext4", false },
		{ "SSD sda1, xfs", false },
		{ "rotational disk sdc1, ext4", false },
		{ "virtual disk vda1, ext4", false },
		{ "loop device loop0, ext4", false },
		{ "memory, tmpfs", false },
		{ "NFS network file system, nfs4", false },
	};
	struct doctor_report r;
	unsigned i, bad = 0;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		clean_report(&r);
		snprintf(r.remote.p.storage, sizeof(r.remote.p.storage), "%s",
			 cases[i].storage);
		doctor_advise(&r);
		if (count_lines(&r, "storage is", NULL) !=
		    (cases[i].line ? 1u : 0u)) {
			print_message("# storage \"%s\": %u advice line(s)\n",
				      cases[i].storage, r.nadvice);
			print_advice(&r);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void advise_sockbuf(void **state)
{
	struct doctor_report r;

	(void)state;
	clean_report(&r);
	/* 1 Gbit/s and 20 ms: BDP 2.35 MB, twice that 4.7 MB */
	r.rtt_us = 20000;
	r.bdp_bytes = r.ceiling_bps * r.rtt_us / 1e6;
	r.remote.p.sockbuf[2] = 4194304;
	doctor_advise(&r);
	expect_one(&r, "tcp_rmem", "4194304");
	assert_int_equal(r.nadvice, 1);

	/* the smaller of the two sides counts */
	r.remote.p.sockbuf[2] = 16777216;
	r.local.p.sockbuf[2] = 1048576;
	doctor_advise(&r);
	expect_one(&r, "tcp_rmem", "1048576");

	/* above twice the BDP on both sides: nothing */
	r.local.p.sockbuf[2] = 16777216;
	doctor_advise(&r);
	assert_int_equal(count_lines(&r, "tcp_rmem", NULL), 0);

	/* no BDP known: nothing either */
	r.local.p.sockbuf[2] = 65536;
	r.bdp_bytes = 0;
	doctor_advise(&r);
	assert_int_equal(count_lines(&r, "tcp_rmem", NULL), 0);
}

/* Many problems at once: the lines stop at the array's size, each one
 * NUL-terminated. */
static void advise_many(void **state)
{
	struct doctor_report r;
	unsigned i;

	(void)state;
	clean_report(&r);
	r.link.wireless = true;
	r.link.speed_bps = 54000000ull;
	r.stage[DOCTOR_NET].bps = 1e6;
	r.rtt_us = 50000;
	r.bdp_bytes = 1e9;
	r.local.cores = r.remote.cores = 0.2;
	r.local.p.aes = r.remote.p.aes = 0;
	snprintf(r.local.p.governor, sizeof(r.local.p.governor), "powersave");
	snprintf(r.remote.p.governor, sizeof(r.remote.p.governor), "schedutil");
	snprintf(r.local.p.storage, sizeof(r.local.p.storage), "USB disk sdb1");
	snprintf(r.remote.p.storage, sizeof(r.remote.p.storage),
		 "SD/MMC card mmcblk0p2");
	doctor_advise(&r);
	assert_true(r.nadvice >= 10);
	assert_true(r.nadvice <= sizeof(r.advice) / sizeof(r.advice[0]));
	for (i = 0; i < r.nadvice; i++)
		assert_non_null(memchr(r.advice[i], 0, sizeof(r.advice[i])));
}

/* A file of a sample cpufreq tree. */
static void put(const char *root, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The policies of a big.LITTLE board (policy4 before policy0 on disk
 * does not matter; policy10 after policy4), a list with a gap, a policy
 * without related_cpus left out, and a machine without cpufreq. */
static void cpufreq_policies(void **state)
{
	char root[] = "/tmp/lr-cpufreq-XXXXXX", cmd[600];
	struct sysfs_cpufreq c[4];
	const char *dirs[] = { "policy0", "policy4", "policy10", "policy7" };
	size_t i, n;

	(void)state;
	assert_non_null(mkdtemp(root));
	for (i = 0; i < 4; i++) {
		char p[512];

		snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	put(root, "policy0/related_cpus", "0 1 2 3\n");
	put(root, "policy0/scaling_cur_freq", "1800000\n");
	put(root, "policy0/cpuinfo_max_freq", "1800000\n");
	put(root, "policy0/scaling_governor", "schedutil\n");
	put(root, "policy4/related_cpus", "4 5 7\n");
	put(root, "policy4/scaling_cur_freq", "408000\n");
	put(root, "policy4/cpuinfo_max_freq", "2400000\n");
	put(root, "policy4/scaling_governor", "performance\n");
	put(root, "policy10/related_cpus", "10\n");
	n = sysfs_cpufreq(root, c, 4);
	assert_int_equal(n, 3);
	assert_string_equal(c[0].cpus, "0-3");
	assert_true(c[0].cur_khz == 1800000 && c[0].max_khz == 1800000);
	assert_string_equal(c[0].governor, "schedutil");
	assert_string_equal(c[1].cpus, "4-5,7");
	assert_true(c[1].cur_khz == 408000 && c[1].max_khz == 2400000);
	assert_string_equal(c[1].governor, "performance");
	assert_string_equal(c[2].cpus, "10");
	assert_true(c[2].cur_khz == 0 && c[2].governor[0] == '\0');
	assert_int_equal(sysfs_cpufreq(root, c, 1), 1);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(sysfs_cpufreq(root, c, 4), 0);
}

/* ---- doctor_dest_stage ---- */

/* The probe's write: its rate; a writer at its CPU limit named; a server
 * without DISK_CPU_USEC (older, O_DIRECT) said to be so. */
static void dest_stage_words(void **state)
{
	struct doctor_report *r = calloc(1, sizeof(*r));

	(void)state;
	assert_non_null(r);
	doctor_dest_stage(r); /* no disk test: not measured */
	assert_false(r->stage[DOCTOR_DEST].measured);
	r->remote.cores = 2;
	r->remote.p.disk_bytes = 500000000;
	r->remote.p.disk_usec = 1000000;
	r->remote.p.disk_cpu_usec = 300000;
	snprintf(r->remote.p.storage, sizeof(r->remote.p.storage), "sda (SSD)");
	doctor_dest_stage(r);
	assert_true(r->stage[DOCTOR_DEST].measured);
	assert_true(r->stage[DOCTOR_DEST].bps > 499e6 &&
		    r->stage[DOCTOR_DEST].bps < 501e6);
	assert_false(r->stage[DOCTOR_DEST].cpu_bound);
	assert_non_null(strstr(r->stage[DOCTOR_DEST].detail,
			       "sda (SSD); as received: page cache"));
	/* the writer had its CPU all the time (one core of two): the CPU */
	r->remote.p.disk_cpu_usec = 990000;
	memset(&r->stage[DOCTOR_DEST], 0, sizeof(r->stage[DOCTOR_DEST]));
	doctor_dest_stage(r);
	assert_true(r->stage[DOCTOR_DEST].cpu_bound);
	assert_non_null(
		strstr(r->stage[DOCTOR_DEST].detail, "a CPU at its limit"));
	/* an older server: no CPU time said, its figure an O_DIRECT one */
	r->remote.p.disk_cpu_usec = 0;
	memset(&r->stage[DOCTOR_DEST], 0, sizeof(r->stage[DOCTOR_DEST]));
	doctor_dest_stage(r);
	assert_true(r->stage[DOCTOR_DEST].measured);
	assert_false(r->stage[DOCTOR_DEST].cpu_bound);
	assert_null(strstr(r->stage[DOCTOR_DEST].detail, "as received"));
	assert_non_null(strstr(r->stage[DOCTOR_DEST].detail,
			       "an older server's figure (O_DIRECT"));
	free(r);
}

/* ---- doctor_verdict ---- */

/* The audit's loopback run: the destination disk the slowest stage at
 * 947 MB/s, the transfer 513 MB/s, both ends on one machine of 2 CPUs;
 * xf as measured around the transfer (here: nothing known). */
static struct doctor_report *loopback_report(void)
{
	struct doctor_report *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->streams = 4;
	r->local.cores = r->remote.cores = 2;
	set_stage(r->stage, DOCTOR_NET, 2790e6);
	set_stage(r->stage, DOCTOR_NET_BACK, 2445e6);
	set_stage(r->stage, DOCTOR_CIPHER, 7565e6);
	set_stage(r->stage, DOCTOR_DEST, 947e6);
	snprintf(r->stage[DOCTOR_DEST].detail,
		 sizeof(r->stage[DOCTOR_DEST].detail), "virtual disk vda");
	r->xfer_done = true;
	r->xfer_bytes = 128ull << 20;
	r->xfer_bps = 513e6;
	r->link_known = true;
	snprintf(r->link.ifname, sizeof(r->link.ifname), "lo");
	r->link.virtual_if = true;
	r->xf.here_cores = -1;
	r->xf.machine_cores = -1;
	return r;
}

static void expect_verdict(const struct doctor_report *r, const char *words)
{
	if (!strstr(r->verdict, words))
		fail_msg("no \"%s\" in the verdict: %s", words, r->verdict);
}

/* A transfer near the slowest stage's figure: that stage held it. */
static void verdict_held(void **state)
{
	struct doctor_report *r = loopback_report();

	(void)state;
	r->xfer_bps = 900e6;
	doctor_verdict(r);
	assert_int_equal(r->bottleneck, DOCTOR_DEST);
	assert_true(r->held);
	assert_true(r->xfer_share > 0.95 && r->xfer_share < 0.951);
	assert_true(!strncmp(r->verdict, "Limited by destination disk", 27));
	expect_verdict(r, "947.0 MB/s; transfer 900.0 MB/s, 95%");

	/* at the share's edge: still held */
	r->xfer_bps = DOCTOR_HELD_SHARE * 947e6 + 1;
	doctor_verdict(r);
	assert_true(r->held);
	free(r);
}

/* The audit's case: 54% of the destination's figure, both ends on this
 * machine with its CPUs busy: not "Limited by destination disk"; the
 * shared CPUs named, with the figures. */
static void verdict_shared_cpus(void **state)
{
	struct doctor_report *r = loopback_report();

	(void)state;
	r->xf.same_machine = true;
	r->xf.machine_cpus = 2;
	r->xf.machine_cores = 1.96;
	r->xf.here_cores = 0.4;
	doctor_verdict(r);
	assert_int_equal(r->bottleneck, DOCTOR_DEST); /* the slowest stage */
	assert_false(r->held);
	assert_null(strstr(r->verdict, "Limited by"));
	expect_verdict(r, "The transfer, 513.0 MB/s, reached 54% of the "
			  "slowest stage, destination disk (virtual disk vda) "
			  "at 947.0 MB/s: that stage did not hold it.");
	expect_verdict(r, "Both ends ran on this machine and shared its 2 "
			  "CPUs");
	expect_verdict(r, "this machine's CPUs 1.96 of 2 busy");
	expect_verdict(r, "this side's CPU 0.40 of 2.00 usable cores busy");

	/* the CPUs not busy: not said to have held it */
	r->xf.machine_cores = 0.9;
	doctor_verdict(r);
	assert_false(r->held);
	assert_null(strstr(r->verdict, "the CPUs held it"));
	expect_verdict(r, "do not explain it");
	free(r);
}

/* Another machine: this side's CPU busy up to what its streams can use. */
static void verdict_this_side_cpu(void **state)
{
	struct doctor_report *r = loopback_report();

	(void)state;
	snprintf(r->link.ifname, sizeof(r->link.ifname), "eth0");
	r->xf.machine_cpus = 8;
	r->xf.machine_cores = 1.9;
	r->xf.here_cores = 1.9;
	doctor_verdict(r);
	assert_false(r->held);
	expect_verdict(r, "This side's CPU held it");
	expect_verdict(r, "2.00 cores its 4 streams can use");

	/* one stream: one core is its limit */
	r->streams = 1;
	r->xf.here_cores = 0.95;
	doctor_verdict(r);
	expect_verdict(r, "1.00 cores its 1 stream can use");
	free(r);
}

/* The stream threads' own time: the stage they waited on named (below
 * its figure measured alone); the network's waits explain nothing by
 * themselves. */
static void verdict_waits(void **state)
{
	struct doctor_report *r = loopback_report();

	(void)state;
	r->xf.here_cores = 0.3;
	snprintf(r->xf.waited, sizeof(r->xf.waited), "source disk");
	r->xf.waited_share = 0.8;
	doctor_verdict(r);
	assert_false(r->held);
	expect_verdict(r, "The source disk held it");
	expect_verdict(r, "the stream threads' most time: source disk, 80%");

	snprintf(r->xf.waited, sizeof(r->xf.waited), "network");
	doctor_verdict(r);
	expect_verdict(r, "The stage estimates do not explain it: the network "
			  "2790.0, the cipher 7565.0, the destination 947.0 "
			  "MB/s.");
	free(r);
}

/* No transfer (a server without --root or a token): no verdict words,
 * the slowest stage still picked. */
static void verdict_without_transfer(void **state)
{
	struct doctor_report *r = loopback_report();

	(void)state;
	r->xfer_done = false;
	r->xfer_bps = 0;
	doctor_verdict(r);
	assert_int_equal(r->bottleneck, DOCTOR_DEST);
	assert_false(r->held);
	assert_string_equal(r->verdict, "");
	free(r);
}

/* A server whose facts never came (no token): nothing advised of it. */
static void advise_server_unknown(void **state)
{
	struct doctor_report r;

	(void)state;
	clean_report(&r);
	memset(&r.remote, 0, sizeof(r.remote));
	doctor_advise(&r);
	assert_int_equal(count_lines(&r, "the server", NULL), 0);
	assert_int_equal(r.nadvice, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pick_slowest),
		cmocka_unit_test(pick_ignores_unmeasured),
		cmocka_unit_test(pick_cpu_bound_net_is_cipher),
		cmocka_unit_test(pick_never_net_back),
		cmocka_unit_test(pick_nothing_measured),
		cmocka_unit_test(pick_ties),
		cmocka_unit_test(advise_clean),
		cmocka_unit_test(advise_wifi),
		cmocka_unit_test(advise_half_duplex),
		cmocka_unit_test(advise_slow_ethernet),
		cmocka_unit_test(advise_governor),
		cmocka_unit_test(advise_quota),
		cmocka_unit_test(advise_no_aes),
		cmocka_unit_test(advise_storage),
		cmocka_unit_test(advise_storage_kinds),
		cmocka_unit_test(advise_sockbuf),
		cmocka_unit_test(advise_many),
		cmocka_unit_test(cpufreq_policies),
		cmocka_unit_test(dest_stage_words),
		cmocka_unit_test(verdict_held),
		cmocka_unit_test(verdict_shared_cpus),
		cmocka_unit_test(verdict_this_side_cpu),
		cmocka_unit_test(verdict_waits),
		cmocka_unit_test(verdict_without_transfer),
		cmocka_unit_test(advise_server_unknown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
