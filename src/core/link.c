// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "link.h"
#include "units.h"
#include "sysfs.h"
#include "banned.h"

int link_read_sysfs(const char *sysroot, const char *ifname,
		    struct link_info *out)
{
	struct link_info tmp, *li = &tmp;
	char path[512], buf[64];
	uint64_t v;

	memset(li, 0, sizeof(*li));
	snprintf(li->ifname, sizeof(li->ifname), "%s", ifname);
	snprintf(path, sizeof(path), "%s/class/net/%s", sysroot, ifname);
	if (!sysfs_exists(path))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/class/net/%s/mtu", sysroot, ifname);
	if (!sysfs_read_small(path, buf, sizeof(buf)) &&
	    !units_parse_uint(buf, 68, 1u << 20, &v))
		li->mtu = (unsigned)v;
	/* speed is in Mbit/s; -1 or a read error means unknown */
	snprintf(path, sizeof(path), "%s/class/net/%s/speed", sysroot, ifname);
	if (!sysfs_read_small(path, buf, sizeof(buf)) &&
	    !units_parse_uint(buf, 1, 10000000, &v))
		li->speed_bps = v * 1000000ull;
	snprintf(path, sizeof(path), "%s/class/net/%s/duplex", sysroot, ifname);
	if (!sysfs_read_small(path, buf, sizeof(buf)) &&
	    (!strncmp(buf, "full", 4) || !strncmp(buf, "half", 4)))
		snprintf(li->duplex, sizeof(li->duplex), "%.4s", buf);
	snprintf(path, sizeof(path), "%s/class/net/%s/wireless", sysroot,
		 ifname);
	li->wireless = sysfs_exists(path);
	snprintf(path, sizeof(path), "%s/class/net/%s/phy80211", sysroot,
		 ifname);
	li->wireless = li->wireless || sysfs_exists(path);
	snprintf(path, sizeof(path), "%s/class/net/%s/device", sysroot, ifname);
	li->virtual_if = !sysfs_exists(path);
	li->loopback = !strcmp(ifname, "lo");
	if (li->virtual_if) {
		li->speed_bps = 0; /* veth reports a made-up 10000 */
		li->duplex[0] = 0;
	}
	*out = tmp;
	return 0;
}

static bool same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family == AF_INET && b->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6 && b->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       16);
	return false;
}

int link_lookup(const struct sockaddr *sa, const char *sysroot,
		struct link_info *li)
{
	struct ifaddrs *ifa, *i;
	struct sockaddr_in v4;
	const struct sockaddr *want = sa;
	int r = -ENOENT;

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			memset(&v4, 0, sizeof(v4));
			v4.sin_family = AF_INET;
			memcpy(&v4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
			want = (const struct sockaddr *)&v4;
		}
	}
	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && same_addr(i->ifa_addr, want)) {
			r = link_read_sysfs(sysroot, i->ifa_name, li);
			break;
		}
	}
	freeifaddrs(ifa);
	return r;
}

double link_goodput_bps(uint64_t speed_bps, unsigned mtu, bool ipv6,
			bool timestamps)
{
	unsigned hdr = ipv6 ? 60 : 40;

	if (timestamps)
		hdr += 12;
	if (!speed_bps || mtu <= hdr)
		return 0.0;
	return (double)speed_bps * (double)(mtu - hdr) / (double)(mtu + 38);
}
