// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sysfs.h"
#include "banned.h"

int sysfs_read_small(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	if (n == 0)
		return -EIO;
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

bool sysfs_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* related_cpus ("0 1 2 3", "0 2") as a list of ranges into out. */
static void cpu_ranges(const char *list, char *out, size_t cap)
{
	long first = -1, last = -1;
	size_t at = 0;
	const char *p = list;

	out[0] = '\0';
	for (;;) {
		char *end;
		long c = strtol(p, &end, 10);
		bool more = end != p && c >= 0;

		if (more && c == last + 1 && first >= 0) {
			last = c;
		} else {
			if (first >= 0 && at < cap) {
				int k = first == last
						? snprintf(out + at, cap - at,
							   "%s%ld",
							   at ? "," : "", first)
						: snprintf(out + at, cap - at,
							   "%s%ld-%ld",
							   at ? "," : "", first,
							   last);

				at += k > 0 ? (size_t)k : 0;
			}
			first = last = more ? c : -1;
		}
		if (!more)
			break;
		p = end;
	}
}

static int by_number(const void *a, const void *b)
{
	long x = strtol(*(const char *const *)a + 6, NULL, 10); /* policyN */
	long y = strtol(*(const char *const *)b + 6, NULL, 10);

	return (x > y) - (x < y);
}

/* One value of policy dir: into buf, "" when it cannot be read. */
static void policy_value(const char *root, const char *dir, const char *name,
			 char *buf, size_t cap)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s/%s", root, dir, name);
	if (sysfs_read_small(path, buf, cap))
		buf[0] = '\0';
}

size_t sysfs_cpufreq(const char *root, struct sysfs_cpufreq *out, size_t cap)
{
	char *names[256], buf[512];
	size_t n = 0, i, k = 0;
	struct dirent *de;
	DIR *d = opendir(root);

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < 256)
		if (!strncmp(de->d_name, "policy", 6) && de->d_name[6] >= '0' &&
		    de->d_name[6] <= '9' && (names[n] = strdup(de->d_name)))
			n++;
	closedir(d);
	qsort(names, n, sizeof(names[0]), by_number);
	for (i = 0; i < n; i++) {
		struct sysfs_cpufreq *c = &out[k];

		if (k < cap) {
			memset(c, 0, sizeof(*c));
			policy_value(root, names[i], "related_cpus", buf,
				     sizeof(buf));
			cpu_ranges(buf, c->cpus, sizeof(c->cpus));
			policy_value(root, names[i], "scaling_cur_freq", buf,
				     sizeof(buf));
			c->cur_khz = strtoull(buf, NULL, 10);
			policy_value(root, names[i], "cpuinfo_max_freq", buf,
				     sizeof(buf));
			c->max_khz = strtoull(buf, NULL, 10);
			policy_value(root, names[i], "scaling_governor",
				     c->governor, sizeof(c->governor));
			k += c->cpus[0] != '\0';
		}
		free(names[i]);
	}
	return k;
}
