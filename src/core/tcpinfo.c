// SPDX-License-Identifier: MIT
/*
 * TCP_INFO, read with the kernel's own struct tcp_info (linux/tcp.h):
 * glibc's copy in netinet/tcp.h stops before tcpi_snd_wnd, and the two
 * headers cannot be included in one file. A kernel older than a field
 * returns a shorter struct; what it leaves out reads as 0.
 */
#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include "net.h"
#include "banned.h"

int net_tcp_stats(int fd, struct net_tcp_stats *st)
{
	struct tcp_info ti;
	socklen_t sl = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &sl))
		return -errno;
	memset(st, 0, sizeof(*st));
	st->total_retrans = ti.tcpi_total_retrans;
	st->cwnd_bytes = ti.tcpi_snd_cwnd * ti.tcpi_snd_mss;
	st->rtt_us = ti.tcpi_rtt;
	st->rttvar_us = ti.tcpi_rttvar;
	st->pmtu = ti.tcpi_pmtu;
	st->snd_mss = ti.tcpi_snd_mss;
	if (sl >=
	    offsetof(struct tcp_info, tcpi_snd_wnd) + sizeof(ti.tcpi_snd_wnd))
		st->snd_wnd = ti.tcpi_snd_wnd;
	st->timestamps = (ti.tcpi_options & TCPI_OPT_TIMESTAMPS) != 0;
	return 0;
}
