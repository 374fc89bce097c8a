// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
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
