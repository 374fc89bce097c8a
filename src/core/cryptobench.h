/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_CRYPTOBENCH_H
#define LINERATE_CRYPTOBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cipher.h"
#include "err.h"

/*
 * Single-core throughput of the AEADs linerate can use, through crypto.h's
 * in-place seal and open, and a probe of the CPU features that decide it.
 * Silent: fills structs for the caller to report.
 */

/* Payload rate of 1 GbE (TCP over IPv4, 1500 MTU, timestamps), MB/s. */
#define CRYPTOBENCH_GBE_MBPS 117.7

#define CRYPTOBENCH_BIG_RECORD	 (512u << 10) /* bench's default blksize */
#define CRYPTOBENCH_SMALL_RECORD (16u << 10)
#define CRYPTOBENCH_ROWS	 4 /* 2 ciphers x 2 record sizes */
#define CRYPTOBENCH_MAX_FEATURES 8

/* One measurement: bytes processed in seconds, and MB/s (10^6 bytes/s). */
struct cryptobench_cell {
	uint64_t bytes;
	double seconds;
	double mbps;
};

/* One cipher at one record size, both directions. */
struct cryptobench_row {
	enum crypto_cipher cipher;
	size_t record;
	struct cryptobench_cell seal;
	struct cryptobench_cell open;
};

struct cryptobench_result {
	uint64_t ms_per_cell;
	unsigned nrows;
	struct cryptobench_row rows[CRYPTOBENCH_ROWS];
};

/* A named CPU feature, e.g. { "avx2", true }. */
struct cryptobench_feature {
	const char *name; /* static string */
	bool present;
};

struct cryptobench_cpu {
	const char *arch;  /* "x86_64", "aarch64", "arm", "other" */
	char model[128];   /* "" when /proc/cpuinfo does not say */
	char governor[32]; /* cpu0's cpufreq governor, "" when unreadable */
	/* AES-GCM is fast here: AES and carry-less multiply instructions
	 * after OpenSSL's masks (crypto_caps_probe), and why in words */
	bool aes;
	char aes_why[160];
	unsigned nfeatures; /* aes first, then the arch's vector features */
	struct cryptobench_feature features[CRYPTOBENCH_MAX_FEATURES];
};

/*
 * Probe this CPU: features via cpuid (x86) or the auxiliary vector's
 * HWCAPs (ARM), model from /proc/cpuinfo, governor from sysfs. Missing
 * files leave empty strings. Never fails.
 */
void cryptobench_cpu_probe(struct cryptobench_cpu *cpu);

/*
 * Measure seal and open of each cipher at 512 KiB and 16 KiB records, one
 * thread, ms_per_cell milliseconds each (at least one operation). Every
 * open verifies its tag. 0, -ENOMEM, or the crypto error (err filled).
 * *res is written only on success.
 */
int cryptobench_run(uint64_t ms_per_cell, struct cryptobench_result *res,
		    struct lr_err *err);

/* Cores' worth of this throughput that link_mbps needs (0 when mbps <= 0). */
double cryptobench_cores_for(double mbps, double link_mbps);

/* "AES-256-GCM", "ChaCha20-Poly1305", "none": names as people write them. */
const char *cryptobench_cipher_label(enum crypto_cipher c);

/* What `--cipher auto` picks between this CPU and a peer: the same rule as
 * session_pick_cipher. */
enum crypto_cipher cryptobench_auto_pick(bool local_aes, bool peer_aes);

/* Why auto picks what it does on a CPU with (or without) AES instructions,
 * for any peer; a constant string. */
const char *cryptobench_auto_reason(bool local_aes);

/*
 * One (local, peer) case in words, naming the cipher picked, e.g.
 * "this CPU and the peer both have AES instructions: AES-256-GCM".
 * Written to buf (cap bytes, truncated); returns buf.
 */
char *cryptobench_auto_explain(bool local_aes, bool peer_aes, char *buf,
			       size_t cap);

#endif
