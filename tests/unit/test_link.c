// SPDX-License-Identifier: MIT
/*
 * Unit tests of link.[ch]: the TCP goodput ceiling against
 * ../shared/REFERENCE.md section 1, and interface facts read from sample
 * sysfs trees built in a temporary directory.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <ifaddrs.h>
#include <math.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "link.h"

/* ---- goodput ceiling ---- */

static void goodput_is(uint64_t speed, unsigned mtu, bool ipv6, bool ts,
		       double want_mbit)
{
	double got = link_goodput_bps(speed, mtu, ipv6, ts) / 1e6;

	if (got < want_mbit - 0.1 || got > want_mbit + 0.1)
		fail_msg("speed %llu mtu %u ipv6 %d ts %d: %.3f Mbit/s, "
			 "want %.1f",
			 (unsigned long long)speed, mtu, ipv6, ts, got,
			 want_mbit);
}

static void test_goodput_reference(void **state)
{
	(void)state;
	goodput_is(1000000000ull, 1500, false, true, 941.5);
	goodput_is(1000000000ull, 1500, false, false, 949.3);
	goodput_is(1000000000ull, 1500, true, true, 928.5);
	goodput_is(1000000000ull, 9000, false, true, 990.0);
	goodput_is(2500000000ull, 1500, false, true, 2353.7);
	goodput_is(10000000000ull, 1500, false, true, 9414.8);
}

static void test_goodput_exact(void **state)
{
	(void)state;
	/* 1e9 x 1448 / 1538, to the bit */
	assert_true(fabs(link_goodput_bps(1000000000ull, 1500, false, true) -
			 1e9 * 1448.0 / 1538.0) < 1e-3);
	/* IPv6 without timestamps: 1500 - 60 */
	assert_true(fabs(link_goodput_bps(1000000000ull, 1500, true, false) -
			 1e9 * 1440.0 / 1538.0) < 1e-3);
}

static void test_goodput_unknown(void **state)
{
	(void)state;
	assert_true(link_goodput_bps(0, 1500, false, true) == 0.0);
	assert_true(link_goodput_bps(1000000000ull, 0, false, true) == 0.0);
	/* an MTU that cannot carry the headers carries nothing */
	assert_true(link_goodput_bps(1000000000ull, 52, false, true) == 0.0);
	assert_true(link_goodput_bps(1000000000ull, 72, true, true) == 0.0);
	assert_true(link_goodput_bps(1000000000ull, 53, false, true) > 0.0);
}

/* ---- sample sysfs trees ---- */

struct tree {
	char root[256];
};

static void mkdir_p(const char *root, const char *rel)
{
	char path[512];
	size_t i, n;

	n = (size_t)snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_true(n < sizeof(path));
	for (i = strlen(root) + 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			fail_msg("mkdir %s: %d", path, errno);
		if (i < n)
			path[i] = '/';
	}
}

static void put_file(const char *root, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "we");
	if (!f)
		fail_msg("create %s: %d", path, errno);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void put_link(const char *root, const char *rel, const char *target)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (symlink(target, path))
		fail_msg("symlink %s: %d", path, errno);
}

/*
 * Interfaces as the kernel shows them: a physical NIC has a "device" link,
 * a wifi NIC also a "wireless" directory or a "phy80211" link, a veth has
 * neither and claims 10000 Mbit/s, a link that is down reads speed -1, and
 * on some drivers reading speed fails (a directory here makes fread fail).
 */
static int tree_setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	const char *tmp = getenv("TMPDIR");
	const char *r;

	if (!t)
		return -1;
	snprintf(t->root, sizeof(t->root), "%s/linerate-link-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(t->root)) {
		free(t);
		return -1;
	}
	r = t->root;
	mkdir_p(r, "devices/pci0000:00/0000:00:1f.6");
	mkdir_p(r, "devices/pci0000:00/0000:02:00.0");
	mkdir_p(r, "devices/pci0000:00/0000:03:00.0/ieee80211/phy0");

	mkdir_p(r, "class/net/eth0");
	put_file(r, "class/net/eth0/mtu", "1500\n");
	put_file(r, "class/net/eth0/speed", "1000\n");
	put_file(r, "class/net/eth0/duplex", "full\n");
	put_link(r, "class/net/eth0/device",
		 "../../../devices/pci0000:00/0000:00:1f.6");

	mkdir_p(r, "class/net/enp2s0");
	put_file(r, "class/net/enp2s0/mtu", "9000\n");
	put_file(r, "class/net/enp2s0/speed", "2500\n");
	put_file(r, "class/net/enp2s0/duplex", "half\n");
	mkdir_p(r, "class/net/enp2s0/device");

	mkdir_p(r, "class/net/eno1");
	put_file(r, "class/net/eno1/mtu", "1500\n");
	put_file(r, "class/net/eno1/speed", "-1\n");
	put_link(r, "class/net/eno1/device",
		 "../../../devices/pci0000:00/0000:02:00.0");

	mkdir_p(r, "class/net/wlan0/wireless");
	put_file(r, "class/net/wlan0/mtu", "1500\n");
	mkdir_p(r, "class/net/wlan0/speed"); /* read fails */
	put_link(r, "class/net/wlan0/device",
		 "../../../devices/pci0000:00/0000:03:00.0");

	mkdir_p(r, "class/net/wlp3s0");
	put_file(r, "class/net/wlp3s0/mtu", "1500\n");
	put_link(r, "class/net/wlp3s0/phy80211",
		 "../../../devices/pci0000:00/0000:03:00.0/ieee80211/phy0");
	put_link(r, "class/net/wlp3s0/device",
		 "../../../devices/pci0000:00/0000:03:00.0");

	mkdir_p(r, "class/net/veth0");
	put_file(r, "class/net/veth0/mtu", "1500\n");
	put_file(r, "class/net/veth0/speed", "10000\n");

	mkdir_p(r, "class/net/lo");
	put_file(r, "class/net/lo/mtu", "65536\n");

	mkdir_p(r, "class/net/bad0/device");
	put_file(r, "class/net/bad0/mtu", "12x\n");
	put_file(r, "class/net/bad0/speed", "");

	mkdir_p(r, "class/net/tiny0/device");
	put_file(r, "class/net/tiny0/mtu", "67");
	put_file(r, "class/net/tiny0/speed", "0\n");

	*state = t;
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int tree_teardown(void **state)
{
	struct tree *t = *state;
	int r;

	if (!t)
		return 0;
	r = nftw(t->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(t);
	return r ? -1 : 0;
}

static void read_ok(void **state, const char *ifname, struct link_info *li)
{
	struct tree *t = *state;
	int r = link_read_sysfs(t->root, ifname, li);

	if (r)
		fail_msg("link_read_sysfs %s: %d", ifname, r);
	assert_string_equal(li->ifname, ifname);
}

static void test_sysfs_ethernet(void **state)
{
	struct link_info li;

	read_ok(state, "eth0", &li);
	assert_true(li.speed_bps == 1000000000ull);
	assert_string_equal(li.duplex, "full");
	assert_int_equal(li.mtu, 1500);
	assert_false(li.wireless);
	assert_false(li.virtual_if);
	assert_false(li.loopback);

	read_ok(state, "enp2s0", &li);
	assert_true(li.speed_bps == 2500000000ull);
	assert_string_equal(li.duplex, "half");
	assert_int_equal(li.mtu, 9000);
	assert_false(li.virtual_if);
}

static void test_sysfs_link_down(void **state)
{
	struct link_info li;

	read_ok(state, "eno1", &li);
	assert_true(li.speed_bps == 0);
	assert_int_equal(li.mtu, 1500);
	assert_false(li.virtual_if);
	assert_false(li.wireless);
}

static void test_sysfs_wireless(void **state)
{
	struct link_info li;

	read_ok(state, "wlan0", &li);
	assert_true(li.wireless);
	assert_false(li.virtual_if);
	assert_true(li.speed_bps == 0);
	assert_int_equal(li.mtu, 1500);

	read_ok(state, "wlp3s0", &li);
	assert_true(li.wireless);
	assert_false(li.virtual_if);
	assert_true(li.speed_bps == 0);
}

static void test_sysfs_veth(void **state)
{
	struct link_info li;

	read_ok(state, "veth0", &li);
	assert_true(li.virtual_if);
	assert_true(li.speed_bps == 0); /* not the made-up 10000 */
	assert_int_equal(li.mtu, 1500);
	assert_false(li.wireless);
	assert_false(li.loopback);
}

static void test_sysfs_loopback(void **state)
{
	struct link_info li;

	read_ok(state, "lo", &li);
	assert_true(li.loopback);
	assert_true(li.virtual_if);
	assert_true(li.speed_bps == 0);
	assert_int_equal(li.mtu, 65536);
}

static void test_sysfs_garbage(void **state)
{
	struct link_info li;

	read_ok(state, "bad0", &li);
	assert_int_equal(li.mtu, 0);
	assert_true(li.speed_bps == 0);
	read_ok(state, "tiny0", &li);
	assert_int_equal(li.mtu, 0); /* below the IPv4 minimum of 68 */
	assert_true(li.speed_bps == 0);
}

static void test_sysfs_missing(void **state)
{
	struct tree *t = *state;
	struct link_info li;

	assert_int_equal(link_read_sysfs(t->root, "nope0", &li), -ENOENT);
	assert_int_equal(link_read_sysfs("/nonexistent-linerate", "eth0", &li),
			 -ENOENT);
}

/* ---- link_lookup, against this host's own addresses ---- */

/* Name of the interface that holds the IPv4 address a, or NULL. */
static const char *holder_v4(const char *a, char *name, size_t cap)
{
	struct ifaddrs *ifa, *i;
	struct in_addr want;
	const char *found = NULL;

	assert_int_equal(inet_pton(AF_INET, a, &want), 1);
	if (getifaddrs(&ifa))
		return NULL;
	for (i = ifa; i; i = i->ifa_next) {
		const struct sockaddr_in *s =
			(const struct sockaddr_in *)i->ifa_addr;

		if (!s || s->sin_family != AF_INET ||
		    s->sin_addr.s_addr != want.s_addr)
			continue;
		snprintf(name, cap, "%s", i->ifa_name);
		found = name;
		break;
	}
	freeifaddrs(ifa);
	return found;
}

static void test_lookup_loopback(void **state)
{
	struct tree *t = *state;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct link_info li;
	char name[64];

	if (!holder_v4("127.0.0.1", name, sizeof(name)) || strcmp(name, "lo"))
		skip();
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memset(&li, 0, sizeof(li));
	assert_int_equal(link_lookup((struct sockaddr *)&sin, t->root, &li), 0);
	assert_string_equal(li.ifname, "lo");
	assert_true(li.loopback);
	assert_int_equal(li.mtu, 65536);

	/* a v4-mapped IPv6 address, as a dual-stack socket reports it */
	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	assert_int_equal(
		inet_pton(AF_INET6, "::ffff:127.0.0.1", &sin6.sin6_addr), 1);
	memset(&li, 0, sizeof(li));
	assert_int_equal(link_lookup((struct sockaddr *)&sin6, t->root, &li),
			 0);
	assert_string_equal(li.ifname, "lo");
	assert_true(li.loopback);
}

static void test_lookup_absent(void **state)
{
	struct tree *t = *state;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct link_info li;
	char name[64];

	/* the last address of the benchmarking range, held by nobody here */
	if (holder_v4("198.19.255.254", name, sizeof(name)))
		skip();
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, "198.19.255.254", &sin.sin_addr),
			 1);
	assert_int_equal(link_lookup((struct sockaddr *)&sin, t->root, &li),
			 -ENOENT);

	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, "2001:2::fffe", &sin6.sin6_addr),
			 1);
	assert_int_equal(link_lookup((struct sockaddr *)&sin6, t->root, &li),
			 -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_goodput_reference),
		cmocka_unit_test(test_goodput_exact),
		cmocka_unit_test(test_goodput_unknown),
		cmocka_unit_test(test_sysfs_ethernet),
		cmocka_unit_test(test_sysfs_link_down),
		cmocka_unit_test(test_sysfs_wireless),
		cmocka_unit_test(test_sysfs_veth),
		cmocka_unit_test(test_sysfs_loopback),
		cmocka_unit_test(test_sysfs_garbage),
		cmocka_unit_test(test_sysfs_missing),
		cmocka_unit_test(test_lookup_loopback),
		cmocka_unit_test(test_lookup_absent),
	};

	return cmocka_run_group_tests_name("link", tests, tree_setup,
					   tree_teardown);
}
