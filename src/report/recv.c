// SPDX-License-Identifier: MIT
/* recv's banner: where it waits, this host's addresses, the port, the
 * token and the command to run on the sender. */
#include <cjson/cJSON.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/token.h"
#include "report_int.h"
#include "banned.h"

/* An interface address a sender can use (up, not loopback, of family
 * unless AF_UNSPEC): true with its numeric form in host. */
static bool usable(const struct ifaddrs *i, int family, char *host, size_t cap)
{
	const struct sockaddr *sa = i->ifa_addr;

	if (!sa || (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP) ||
	    (sa->sa_family != AF_INET && sa->sa_family != AF_INET6) ||
	    (family != AF_UNSPEC && sa->sa_family != family))
		return false;
	return !getnameinfo(sa,
			    sa->sa_family == AF_INET
				    ? sizeof(struct sockaddr_in)
				    : sizeof(struct sockaddr_in6),
			    host, (socklen_t)cap, NULL, 0, NI_NUMERICHOST);
}

/* The addresses a sender can use, one line. */
static void print_addresses(FILE *out, const char *bind_addr, int family)
{
	struct ifaddrs *ifa, *i;
	bool any = false;

	if (bind_addr) {
		fprintf(out, "  address: %s\n", bind_addr);
		return;
	}
	if (getifaddrs(&ifa))
		return;
	fprintf(out, "  addresses:");
	for (i = ifa; i; i = i->ifa_next) {
		char host[NI_MAXHOST];

		if (!usable(i, family, host, sizeof(host)))
			continue;
		if (!strncmp(host, "fe80:", 5))
			continue; /* link-local needs a scope: skip */
		fprintf(out, "%s %s (%s)", any ? "," : "", host, i->ifa_name);
		any = true;
	}
	fprintf(out, "%s\n", any ? "" : " none up besides loopback");
	freeifaddrs(ifa);
}

/* First non-loopback address for the suggested command. */
static void first_address(char *buf, size_t cap, int family)
{
	struct ifaddrs *ifa, *i;

	snprintf(buf, cap, "THIS-HOST");
	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next) {
		char host[NI_MAXHOST];

		if (!usable(i, family, host, sizeof(host)))
			continue;
		if (!strncmp(host, "fe80:", 5))
			continue;
		snprintf(buf, cap,
			 i->ifa_addr->sa_family == AF_INET6 ? "[%s]" : "%s",
			 host);
		break;
	}
	freeifaddrs(ifa);
}

static void listening_json(FILE *out, const struct report_recv_banner *b)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "event", "listening");
	cJSON_AddNumberToObject(o, "port", b->port);
	cJSON_AddStringToObject(o, "token", b->token);
	report__json_line(out, o);
}

void report_recv_listening(FILE *out, const struct report_recv_banner *b,
			   bool json)
{
	char addr[NI_MAXHOST + 2];

	if (json) {
		listening_json(out, b);
		return;
	}
	fprintf(out, "linerate recv: waiting for one transfer into %s\n",
		b->dest);
	print_addresses(out, b->bind_addr, b->family);
	fprintf(out, "  port: %u\n  token: %s\n", b->port, b->token);
	if (b->token_kept)
		fprintf(out, "  (the token of the unfinished transfer into "
			     "this directory: the sender's same command "
			     "resumes it)\n");
	if (b->bind_addr)
		snprintf(addr, sizeof(addr),
			 strchr(b->bind_addr, ':') ? "[%s]" : "%s",
			 b->bind_addr);
	else
		first_address(addr, sizeof(addr), b->family);
	fprintf(out,
		"On the sender, run:\n  LINERATE_TOKEN=%s linerate "
		"send%s%.0u %s %s:%s\n",
		b->token, b->port != LR_DEFAULT_PORT ? " -p " : "",
		b->port != LR_DEFAULT_PORT ? b->port : 0,
		b->to_stdout ? "-" : "PATH...", addr,
		b->to_stdout ? "NAME" : "");
	fflush(out);
}
