/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_LINK_H
#define LINERATE_LINK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* What is known of the interface a connection leaves through. */
struct link_info {
	char ifname[32];
	uint64_t speed_bps; /* 0 = not known */
	unsigned mtu;
	bool wireless;
	bool virtual_if; /* veth, loopback, tunnel: no physical speed */
	bool loopback;
	char duplex[8]; /* "full", "half", or "" when not known */
};

/*
 * Find the interface holding the local address sa and read its speed, MTU
 * and kind from sysroot (normally "/sys"; tests pass a sample tree).
 * Returns 0 or -ENOENT when no interface holds the address.
 */
int link_lookup(const struct sockaddr *sa, const char *sysroot,
		struct link_info *li);

/* Read speed, MTU and kind of the named interface from sysroot. */
int link_read_sysfs(const char *sysroot, const char *ifname,
		    struct link_info *li);

/*
 * TCP goodput ceiling in bits/s of a link of speed_bps and the given MTU:
 * Ethernet adds 38 bytes per frame (header, FCS, preamble, gap); IPv4 and
 * TCP take 40 bytes (60 for IPv6) and the timestamp option 12 more.
 */
double link_goodput_bps(uint64_t speed_bps, unsigned mtu, bool ipv6,
			bool timestamps);

#endif
