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

#endif
