/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_SYSFS_H
#define LINERATE_SYSFS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Small helpers for /sys and /proc files (or the sample trees tests pass
 * instead of them).
 */

/* Read a small file into buf (cap >= 2), NUL-terminated, trailing newline
 * and spaces removed. 0, -errno, or -EIO when it is empty. */
int sysfs_read_small(const char *path, char *buf, size_t cap);

/* Whether path exists (stat follows links). */
bool sysfs_exists(const char *path);

/* One CPU frequency policy (a cluster of cores that share a clock, as
 * the big and LITTLE ones of a board): its CPUs as a list ("0-3",
 * "0,2"), its frequency now and at most (kHz, 0 unknown), its governor
 * ("" unknown). */
struct sysfs_cpufreq {
	char cpus[64];
	unsigned long long cur_khz, max_khz;
	char governor[32];
};
#define SYSFS_CPUFREQ_ROOT "/sys/devices/system/cpu/cpufreq"

/* The policies under root (SYSFS_CPUFREQ_ROOT, or a sample tree), in
 * the order of their number, at most cap: how many (0 when the machine
 * has no cpufreq, as in most virtual machines). */
size_t sysfs_cpufreq(const char *root, struct sysfs_cpufreq *out, size_t cap);

#endif
