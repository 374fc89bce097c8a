/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_DOCTOR_H
#define LINERATE_DOCTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "bench.h"
#include "err.h"
#include "link.h"
#include "proto.h"
#include "sysfs.h"
#include "xfer.h"

/* What the command line checks, by the engine's names. */
#define DOCTOR_MAX_STREAMS XFER_MAX_STREAMS
#define DOCTOR_MAX_DISK	   PROTO_PROBE_MAX_DISK /* bytes the server writes */

/*
 * linerate doctor: measure each stage of a transfer (source read, the
 * network both ways, the cipher on both CPUs, destination write, then a
 * real transfer), name the slowest, and gather the facts that explain it.
 */

enum doctor_stage_id {
	DOCTOR_SOURCE,	 /* reading the source on this side */
	DOCTOR_NET,	 /* network, this side to the server */
	DOCTOR_NET_BACK, /* network, the server to this side */
	DOCTOR_CIPHER,	 /* sealing and opening on both CPUs */
	DOCTOR_DEST,	 /* writing on the server's disk */
	DOCTOR_NSTAGES,
};

struct doctor_stage {
	bool measured;
	double bps;	  /* bytes/s */
	bool cpu_bound;	  /* NET, DEST: a CPU was saturated while measuring */
	char detail[160]; /* e.g. "SD/MMC card mmcblk0", "AES-256-GCM" */
};

/* A transfer that reached less than this share of the slowest stage's
 * figure was not held by that stage: the verdict says what the
 * transfer's own facts show instead. */
#define DOCTOR_HELD_SHARE 0.7

/* What the transfer itself showed, measured around it. */
struct doctor_xfer_facts {
	double here_cores;     /* this process's CPU, cores busy; < 0 unknown */
	double machine_cores;  /* every process of this machine; < 0 unknown */
	unsigned machine_cpus; /* online CPUs of this machine; 0 unknown */
	bool same_machine;     /* both ends ran here (loopback, --local) */
	/* where the stream threads of both ends spent their time most
	 * (xfer_bottleneck: "network", "cipher (CPU)", ...), and its share
	 * of their time; "" unknown */
	char waited[32];
	double waited_share;
};

/* One side's facts (the server's arrive in a PROBE_RESULT). */
struct doctor_side {
	struct proto_probe_result p;
	double cores; /* usable CPU */
};

struct doctor_report {
	struct doctor_stage stage[DOCTOR_NSTAGES];
	struct doctor_side local, remote;
	enum crypto_cipher cipher; /* what the transfer used */
	unsigned streams;
	/* the link of this side's connection */
	bool link_known, ipv6;
	struct link_info link;
	double ceiling_bps; /* TCP goodput, bytes/s; 0 = unknown */
	uint32_t rtt_us;
	double bdp_bytes;
	char source_desc[200]; /* the file, or "generated data" */
	/* the transfer */
	bool xfer_done;
	/* the transfer could not be measured (a server without --root):
	 * why; the other stages are in the report */
	char not_measured[256];
	double xfer_bps;
	uint64_t xfer_bytes;
	struct doctor_xfer_facts xf;
	/* the server has no token: the network measured in clear, the
	 * cipher on this side's CPU only, the server's facts not known */
	bool tokenless;
	/* the verdict */
	int bottleneck; /* enum doctor_stage_id, -1 = none measured */
	char bottleneck_label[200];
	double xfer_share; /* transfer / limit_bps */
	double limit_bps;  /* what the limiting stage allows */
	/* the transfer came within DOCTOR_HELD_SHARE of limit_bps: the
	 * bottleneck stage held it; else verdict says what the transfer's
	 * facts show */
	bool held;
	char verdict[640]; /* in words, with the figures; "" no transfer */
	unsigned nadvice;
	char advice[10][240];
};

struct doctor_opts {
	const char *host;
	uint16_t port;
	int family;
	const char *link_host; /* through a relay: the route's host (bench.h) */
	const uint8_t *psk;
	uint8_t cipher_wish;
	unsigned streams;
	const char *source;	 /* a file to read and send; NULL = generated */
	uint64_t size;		 /* bytes per stage (transfer, disk) */
	uint64_t net_ms;	 /* each network direction */
	uint64_t link_speed_bps; /* --link-speed; 0 = from /sys */
	bool same_machine;	 /* the server runs on this machine */
	const _Atomic bool *cancel;
};

struct doctor_callbacks {
	void *ctx;
	/* a stage starts ("network", ...) */
	void (*stage)(void *ctx, const char *what);
};

/* linerate doctor --local: the machine alone. */
/* The least --size of doctor --local: a transfer long enough for each
 * end's CPU time, counted in 10 ms ticks. */
#define DOCTOR_LOCAL_MIN_SIZE (64ull << 20)

struct doctor_local_opts {
	const char *dir;    /* the disk measured: the local server's root */
	const char *source; /* a file to send; NULL = generated data */
	uint64_t size;	    /* bytes of the disk test and the transfer */
	uint64_t net_ms;    /* each network direction, and plain TCP */
	unsigned streams;   /* 0: 4 */
	uint8_t cipher_wish;
	bool loopback; /* never namespaces */
	const _Atomic bool *cancel;
};

struct doctor_local_report {
	struct doctor_report d; /* the stages, as against a server */
	/* a veth pair between two network namespaces of our own; else
	 * loopback, and why */
	bool namespaces;
	char why_loopback[160];
	double plain_bps;	     /* plain TCP, no cipher */
	double cipher_all_cores_bps; /* sealing on every core at once */
	double cpu_s_per_gb_send;    /* the transfer's sending end */
	double cpu_s_per_gb_recv;    /* and its receiving end */
	double send_bps, recv_bps;   /* cores used / CPU s per byte */
	double cores_used;	     /* usable cores, at most one a stream */
	unsigned cpus_online;	     /* of the machine; more than its usable
					cores under a cgroup CPU quota */
	double disk_read_bps;	     /* DIR read as a sender reads; 0 not */
	char model[128];	     /* the board or machine */
	char kernel[96];
	uint64_t cur_khz, max_khz; /* CPU 0's frequency; 0 unknown */
	/* each frequency policy (a cluster: big and LITTLE cores apart) */
	struct sysfs_cpufreq freq[8];
	size_t nfreq;
};

/* A server in a child process (its own network namespace and a veth
 * pair to ours when we may make them: root; else loopback), every stage
 * of doctor_run against it, plain TCP, the cipher on every core, and
 * each end's CPU per GB of the transfer. Leaves this process in a
 * network namespace of its own: call it last. */
int doctor_local_run(const struct doctor_local_opts *o,
		     const struct doctor_callbacks *cb,
		     struct doctor_local_report *rep, struct lr_err *err);

/* The TCP goodput ceiling of an Ethernet link of speed_bps (MTU 1500,
 * IPv4, timestamps), bytes/s: what doctor --local's verdict holds up to
 * the machine's figures. */
double doctor_link_ceiling(uint64_t speed_bps);

/* This machine's facts: CPU (model, usable cores with a cgroup quota,
 * governor, AES), socket buffer limits, congestion control; storage of
 * dir (may be NULL). */
void doctor_local_facts(struct proto_probe_result *f, const char *dir);

/* Usable cores: online CPUs, or fewer under a cgroup v1/v2 CPU quota. */
double doctor_usable_cores(void);

/* The slowest measured stage (the network: the direction of the data),
 * or -1. A network or destination stage measured while a CPU was
 * saturated counts as the cipher's (CPU). Pure: unit-tested on sample figures. */
int doctor_pick(const struct doctor_stage st[DOCTOR_NSTAGES]);

/* What the limiting stage allows, bytes/s (a CPU-bound network: the lower
 * of the network and cipher figures). Pure. */
double doctor_limit(const struct doctor_report *r);

/* The destination stage from the probe's disk figures (rep->remote.p):
 * its rate, whether a CPU held it, and in words how it was written (an
 * older server's figure, without DISK_CPU_USEC, may be an O_DIRECT one).
 * Pure: unit-tested. */
void doctor_dest_stage(struct doctor_report *rep);

/* Facts worth a line, each with its fix where there is one (the server's
 * only when its facts are known: remote.cores > 0). Pure but for the
 * count of online CPUs. */
void doctor_advise(struct doctor_report *r);

/* The verdict from the stages and the transfer (r->stage, xfer_*, xf):
 * the bottleneck, its label, limit and share, whether it held the
 * transfer, the verdict's words, the advice. A transfer well below the
 * slowest stage's figure is not said to be held by it: the words name
 * what the transfer's facts show (a CPU busy, both ends sharing one
 * machine's CPUs), or say that the estimates do not explain it, with
 * the figures. Pure but for the count of online CPUs: unit-tested. */
void doctor_verdict(struct doctor_report *r);

/* Run every stage against the server; fills *rep. Without o->psk (no
 * token): the network both ways in clear and the cipher on this side's
 * CPU (rep->tokenless, rep->not_measured says what needs a token); a
 * server that wants a token answers LR_EAUTH. This side's facts are in
 * *rep also on failure. */
int doctor_run(const struct doctor_opts *o, const struct doctor_callbacks *cb,
	       struct doctor_report *rep, struct lr_err *err);

/* The server's facts only (host, port, family, psk and cipher_wish of
 * o): a probe without disk test or cipher rates. */
int doctor_probe_facts(const struct doctor_opts *o,
		       struct proto_probe_result *out, struct lr_err *err);

/* The server's side of PROBE_REQUEST: facts, ciphers, a disk write below
 * rootfd (-1 = none). */
void doctor_probe_answer(const struct proto_probe_request *req, int rootfd,
			 struct proto_probe_result *out);

#endif
