// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) || defined(__arm__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "crypto.h"
#include "cryptobench.h"
#include "session.h"
#include "sysfs.h"
#include "banned.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nonce_next(uint8_t nonce[CRYPTO_NONCE_LEN])
{
	int i;

	for (i = CRYPTO_NONCE_LEN - 1; i >= 0; i--)
		if (++nonce[i])
			break;
}

/* Seal len bytes at buf again and again for ms milliseconds. */
static int time_seal(struct crypto_aead *a, uint8_t *buf, size_t len,
		     uint64_t ms, struct cryptobench_cell *cell)
{
	uint8_t nonce[CRYPTO_NONCE_LEN] = { 0 }, tag[CRYPTO_TAG_LEN];
	double t0, t, end;
	uint64_t n = 0;
	int r;

	r = crypto_aead_seal(a, nonce, NULL, 0, buf, len, tag); /* warm up */
	if (r)
		return r;
	t0 = now_s();
	end = t0 + (double)ms / 1000.0;
	do {
		nonce_next(nonce);
		r = crypto_aead_seal(a, nonce, NULL, 0, buf, len, tag);
		if (r)
			return r;
		n++;
		t = now_s();
	} while (t < end);
	cell->bytes = n * len;
	cell->seconds = t - t0;
	cell->mbps = (double)cell->bytes / cell->seconds / 1e6;
	return 0;
}

/*
 * Open len bytes at buf again and again for ms milliseconds, with every
 * tag verifying and no copy in the loop. The AEADs are stream ciphers
 * under one nonce: open turns C into P and, run again, P back into C. So
 * take tag_c, the tag of C = seal(P), and tag_p, the tag P would carry as
 * a ciphertext (seal of a copy of C gives P and that tag), and alternate.
 */
static int time_open(struct crypto_aead *a, uint8_t *buf, uint8_t *scratch,
		     size_t len, uint64_t ms, struct cryptobench_cell *cell)
{
	const uint8_t nonce[CRYPTO_NONCE_LEN] = { 1 };
	uint8_t tags[2][CRYPTO_TAG_LEN];
	double t0, t, end;
	uint64_t n = 0;
	int r;

	r = crypto_aead_seal(a, nonce, NULL, 0, buf, len, tags[0]);
	if (r)
		return r;
	memcpy(scratch, buf, len);
	r = crypto_aead_seal(a, nonce, NULL, 0, scratch, len, tags[1]);
	if (r)
		return r;
	r = crypto_aead_open(a, nonce, NULL, 0, buf, len, tags[0]); /* warm */
	if (r)
		return r;
	t0 = now_s();
	end = t0 + (double)ms / 1000.0;
	do {
		r = crypto_aead_open(a, nonce, NULL, 0, buf, len,
				     tags[(n + 1) & 1]);
		if (r)
			return r;
		n++;
		t = now_s();
	} while (t < end);
	cell->bytes = n * len;
	cell->seconds = t - t0;
	cell->mbps = (double)cell->bytes / cell->seconds / 1e6;
	return 0;
}

int cryptobench_run(uint64_t ms_per_cell, struct cryptobench_result *res,
		    struct lr_err *err)
{
	static const enum crypto_cipher ciphers[] = { CRYPTO_AES256GCM,
						      CRYPTO_CHACHA20POLY1305 };
	static const size_t records[] = { CRYPTOBENCH_BIG_RECORD,
					  CRYPTOBENCH_SMALL_RECORD };
	uint8_t key[CRYPTO_KEY_LEN];
	struct cryptobench_result out = { .ms_per_cell = ms_per_cell };
	struct crypto_aead *a;
	uint8_t *buf, *scratch;
	size_t ci, ri;
	int r;

	buf = aligned_alloc(64, CRYPTOBENCH_BIG_RECORD);
	scratch = aligned_alloc(64, CRYPTOBENCH_BIG_RECORD);
	if (!buf || !scratch) {
		r = lr_err_set(err, -ENOMEM, "no memory for the records");
		goto out_free;
	}
	r = crypto_random(key, sizeof(key));
	if (!r)
		r = crypto_random(buf, CRYPTOBENCH_BIG_RECORD);
	if (r) {
		lr_err_setc(err, r, "random bytes");
		goto out_free;
	}
	for (ci = 0; ci < sizeof(ciphers) / sizeof(ciphers[0]); ci++) {
		r = crypto_aead_new(ciphers[ci], key, &a);
		if (r) {
			lr_err_setc(err, r, "%s",
				    crypto_cipher_name(ciphers[ci]));
			goto out_free;
		}
		for (ri = 0; ri < sizeof(records) / sizeof(records[0]); ri++) {
			struct cryptobench_row *row = &out.rows[out.nrows++];

			row->cipher = ciphers[ci];
			row->record = records[ri];
			r = time_seal(a, buf, row->record, ms_per_cell,
				      &row->seal);
			if (!r)
				r = time_open(a, buf, scratch, row->record,
					      ms_per_cell, &row->open);
			if (r) {
				lr_err_setc(err, r, "%s on %zu-byte records",
					    crypto_cipher_name(row->cipher),
					    row->record);
				crypto_aead_free(a);
				goto out_free;
			}
		}
		crypto_aead_free(a);
	}
	*res = out;
out_free:
	crypto_wipe(key, sizeof(key));
	free(scratch);
	free(buf);
	return r;
}

double cryptobench_cores_for(double mbps, double link_mbps)
{
	return mbps > 0 ? link_mbps / mbps : 0.0;
}

static void add_feature(struct cryptobench_cpu *cpu, const char *name,
			bool present)
{
	if (cpu->nfeatures < CRYPTOBENCH_MAX_FEATURES)
		cpu->features[cpu->nfeatures++] =
			(struct cryptobench_feature){ name, present };
}

static void probe_features(struct cryptobench_cpu *cpu)
{
	struct crypto_caps caps;

#if defined(__x86_64__) || defined(__i386__)
	unsigned int eax, ebx, ecx = 0, edx;
	bool vaes = false, vpclmul = false;

	cpu->arch = sizeof(void *) == 8 ? "x86_64" : "i386";
	__builtin_cpu_init();
	/* __builtin_cpu_supports also checks that the OS saves the AVX and
	 * AVX-512 state (XGETBV). */
	add_feature(cpu, "aes", __builtin_cpu_supports("aes"));
	add_feature(cpu, "pclmul", __builtin_cpu_supports("pclmul"));
	add_feature(cpu, "avx2", __builtin_cpu_supports("avx2"));
	add_feature(cpu, "avx512f", __builtin_cpu_supports("avx512f"));
	/* Not every compiler knows "vaes" in __builtin_cpu_supports: cpuid
	 * leaf 7, ECX bits 9 and 10; usable only when the OS saves AVX state,
	 * which the avx2 check above covers. */
	if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) &&
	    __builtin_cpu_supports("avx2")) {
		vaes = (ecx & (1u << 9)) != 0;
		vpclmul = (ecx & (1u << 10)) != 0;
	}
	add_feature(cpu, "vaes", vaes);
	add_feature(cpu, "vpclmulqdq", vpclmul);
#elif defined(__aarch64__)
	unsigned long hw = getauxval(AT_HWCAP);

	cpu->arch = "aarch64";
	add_feature(cpu, "aes", (hw & HWCAP_AES) != 0);
	add_feature(cpu, "pmull", (hw & HWCAP_PMULL) != 0);
	add_feature(cpu, "asimd", (hw & HWCAP_ASIMD) != 0);
	add_feature(cpu, "sha2", (hw & HWCAP_SHA2) != 0);
#elif defined(__arm__)
	unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);

	cpu->arch = "arm";
	add_feature(cpu, "aes", (hw2 & HWCAP2_AES) != 0);
	add_feature(cpu, "pmull", (hw2 & HWCAP2_PMULL) != 0);
	add_feature(cpu, "neon", (hw & HWCAP_NEON) != 0);
#else
	cpu->arch = "other";
	add_feature(cpu, "aes", false);
#endif
	/* the rule, not the raw bit: what auto decides on */
	crypto_caps_probe(&caps);
	cpu->aes = caps.aes && caps.clmul;
	crypto_caps_words(&caps, cpu->aes_why, sizeof(cpu->aes_why));
}

/* Copy s without its trailing newline and spaces into dst. */
static void copy_trimmed(char *dst, size_t cap, const char *s)
{
	size_t n = strcspn(s, "\n");

	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n >= cap)
		n = cap - 1;
	memmove(dst, s, n);
	dst[n] = '\0';
}

/* The value of the first "key : value" line of /proc/cpuinfo whose key is
 * one of keys, in the order of keys. */
static void probe_model(char *model, size_t cap)
{
	static const char *const keys[] = { "model name", "Model", "Hardware",
					    "cpu model" };
	char line[256], found[3][128] = { "", "", "" };
	size_t k;
	FILE *f;

	model[0] = '\0';
	f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		size_t klen;

		if (!colon)
			continue;
		klen = (size_t)(colon - line);
		while (klen > 0 &&
		       (line[klen - 1] == ' ' || line[klen - 1] == '\t'))
			klen--;
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			const char *v = colon + 1;

			if (strlen(keys[k]) != klen ||
			    memcmp(line, keys[k], klen))
				continue;
			while (*v == ' ' || *v == '\t')
				v++;
			if (k == 0) {
				copy_trimmed(model, cap, v);
				goto out_close;
			}
			if (!found[k - 1][0])
				copy_trimmed(found[k - 1], sizeof(found[k - 1]),
					     v);
		}
	}
	for (k = 0; k < 3; k++)
		if (found[k][0]) {
			copy_trimmed(model, cap, found[k]);
			break;
		}
out_close:
	fclose(f);
}

/* The governor, the one of a cluster that is not "performance" when
 * the clusters differ (a board's big cores may be set and its LITTLE
 * ones not): the one a transfer's advice is about. */
static void probe_governor(char *gov, size_t cap)
{
	struct sysfs_cpufreq c[16];
	size_t n = sysfs_cpufreq(SYSFS_CPUFREQ_ROOT, c, 16), i;
	FILE *f;

	gov[0] = '\0';
	for (i = 0; i < n; i++)
		if (c[i].governor[0] &&
		    (!i || strcmp(c[i].governor, "performance"))) {
			snprintf(gov, cap, "%s", c[i].governor);
			if (strcmp(c[i].governor, "performance"))
				return;
		}
	if (n)
		return;
	f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
		  "re");
	if (!f)
		return;
	if (fgets(gov, (int)cap, f))
		copy_trimmed(gov, cap, gov);
	else
		gov[0] = '\0';
	fclose(f);
}

void cryptobench_cpu_probe(struct cryptobench_cpu *cpu)
{
	memset(cpu, 0, sizeof(*cpu));
	probe_features(cpu);
	probe_model(cpu->model, sizeof(cpu->model));
	probe_governor(cpu->governor, sizeof(cpu->governor));
}

const char *cryptobench_cipher_label(enum crypto_cipher c)
{
	switch (c) {
	case CRYPTO_AES256GCM: return "AES-256-GCM";
	case CRYPTO_CHACHA20POLY1305: return "ChaCha20-Poly1305";
	default: return "none";
	}
}

enum crypto_cipher cryptobench_auto_pick(bool local_aes, bool peer_aes)
{
	/* Symmetric in the two ends; this side may be either. */
	return session_pick_cipher(SESSION_CIPHER_AUTO, local_aes, peer_aes);
}

const char *cryptobench_auto_reason(bool local_aes)
{
	return local_aes ? "AES-256-GCM needs AES and carry-less multiply "
			   "instructions at both ends: this CPU has them, so "
			   "AES-256-GCM if the peer has them too, else "
			   "ChaCha20-Poly1305"
			 : "AES-256-GCM needs AES and carry-less multiply "
			   "instructions at both ends: this CPU lacks them, so "
			   "ChaCha20-Poly1305 whatever the peer has";
}

char *cryptobench_auto_explain(bool local_aes, bool peer_aes, char *buf,
			       size_t cap)
{
	const char *who;

	if (local_aes && peer_aes)
		who = "this CPU and the peer both have AES instructions";
	else if (local_aes)
		who = "the peer lacks AES instructions";
	else if (peer_aes)
		who = "this CPU lacks AES instructions";
	else
		who = "neither end has AES instructions";
	snprintf(buf, cap, "%s: %s", who,
		 cryptobench_cipher_label(
			 cryptobench_auto_pick(local_aes, peer_aes)));
	return buf;
}
