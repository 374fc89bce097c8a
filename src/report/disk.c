// SPDX-License-Identifier: MIT
/* linerate disk. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/units.h"
#include "report_int.h"
#include "banned.h"

/* MiB/s, as the other file commands (units.h). */
static void disk_fmt_rate(char *buf, size_t cap, double bytes_per_sec)
{
	units_fmt_iec_rate(buf, cap, bytes_per_sec);
}

static double disk_rate_of(uint64_t bytes, double sec)
{
	return sec > 0 ? (double)bytes / sec : 0;
}

/* "/dev/nvme0n1 (NVMe SSD)", "tmpfs (memory)", "srv:/x (NFS ...)" */
static void disk_fmt_device(char *buf, size_t cap, const struct disk_info *d)
{
	const char *desc = disk_kind_desc(d->kind);

	if (d->kind == DISK_LOOP && d->backing[0])
		snprintf(buf, cap, "/dev/%s (loop device backed by %s)",
			 d->disk, d->backing);
	else if (d->disk[0])
		snprintf(buf, cap, "/dev/%s (%s)", d->disk, desc);
	else if (d->source[0])
		snprintf(buf, cap, "%s (%s)", d->source, desc);
	else
		snprintf(buf, cap, "%u:%u (%s)", d->major, d->minor, desc);
}

void report_disk_human(FILE *out, const struct disk_info *d,
		       const struct disk_result *res)
{
	char dev[1200], w[32], r[32];

	disk_fmt_device(dev, sizeof(dev), d);
	disk_fmt_rate(w, sizeof(w), disk_rate_of(res->bytes, res->write_sec));
	disk_fmt_rate(r, sizeof(r), disk_rate_of(res->bytes, res->read_sec));
	fprintf(out, "Device: %s, file system %s on %s\n", dev,
		d->fstype[0] ? d->fstype : "?", d->mnt[0] ? d->mnt : "?");
	if (!res->read_only)
		fprintf(out, "write %s (%s)\n", w,
			res->write_direct ? "O_DIRECT"
					  : "buffered + fdatasync");
	fprintf(out, "read %s (%s)\n", r,
		res->read_direct ? "O_DIRECT" : "after dropping the cache");
}

void report_disk_progress(FILE *out, enum disk_phase phase, uint64_t done,
			  uint64_t size, double sec, bool tty)
{
	char bytes[32], r[32];
	double rate = sec > 0 ? (double)done / sec : 0;

	units_fmt_iec(bytes, sizeof(bytes), (double)done);
	units_fmt_iec_rate(r, sizeof(r), rate);
	fprintf(out, "%s%-5s %10s %6.1f s [%11s] %3.0f%%%s", tty ? "\r" : "",
		phase == DISK_PHASE_WRITE ? "write" : "read", bytes, sec, r,
		size ? 100.0 * (double)done / (double)size : 100.0,
		tty ? "\033[K" : "\n");
	fflush(out);
}

static cJSON *disk_json_phase(uint64_t bytes, double sec, const char *mode)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "bytes", (double)bytes);
	cJSON_AddNumberToObject(o, "seconds", report__json_num(sec));
	cJSON_AddNumberToObject(o, "bytes_per_second",
				disk_rate_of(bytes, sec));
	cJSON_AddStringToObject(o, "mode", mode);
	return o;
}

int report_disk_json(FILE *out, const char *path, uint64_t size, uint64_t bs,
		     const struct disk_info *d, const struct disk_result *res,
		     const char *error)
{
	cJSON *root = cJSON_CreateObject(), *dev;
	char devname[80];
	char *text;

	if (!root)
		return -ENOMEM;
	if (d) {
		dev = cJSON_AddObjectToObject(root, "device");
		snprintf(devname, sizeof(devname), "/dev/%s", d->disk);
		if (d->disk[0])
			cJSON_AddStringToObject(dev, "name", devname);
		else
			cJSON_AddNullToObject(dev, "name");
		cJSON_AddStringToObject(dev, "kind", disk_kind_name(d->kind));
		cJSON_AddStringToObject(dev, "description",
					disk_kind_desc(d->kind));
		if (d->backing[0])
			cJSON_AddStringToObject(dev, "backing_file",
						d->backing);
		cJSON_AddStringToObject(dev, "fstype", d->fstype);
		cJSON_AddStringToObject(dev, "mount_point", d->mnt);
		cJSON_AddStringToObject(dev, "source", d->source);
	}
	cJSON_AddStringToObject(root, "path", path);
	cJSON_AddNumberToObject(root, "size", (double)size);
	cJSON_AddNumberToObject(root, "bs", (double)bs);
	if (res && res->read_only) {
		/* a file read: nothing was written */
		cJSON_AddNullToObject(root, "write");
	} else if (res) {
		cJSON_AddItemToObject(
			root, "write",
			disk_json_phase(res->bytes, res->write_sec,
					res->write_direct
						? "O_DIRECT"
						: "buffered+fdatasync"));
	}
	if (res) {
		cJSON_AddItemToObject(
			root, "read",
			disk_json_phase(res->bytes, res->read_sec,
					res->read_direct ? "O_DIRECT"
							 : "fadvise_dontneed"));
	}
	if (error)
		cJSON_AddStringToObject(root, "error", error);
	text = cJSON_Print(root);
	cJSON_Delete(root);
	if (!text)
		return -ENOMEM;
	fprintf(out, "%s\n", text);
	cJSON_free(text);
	return 0;
}
