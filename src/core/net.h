/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_NET_H
#define LINERATE_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "err.h"
#include "proto.h"

#define NET_ADDRSTR 64 /* enough for "[v6addr%scope]:port" */

/* A socket address with its length. */
struct net_addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

/* TCP_INFO figures of one socket. */
struct net_tcp_stats {
	uint32_t total_retrans;
	uint32_t cwnd_bytes; /* snd_cwnd * snd_mss */
	uint32_t rtt_us;
	uint32_t rttvar_us;
	uint32_t pmtu;
	uint32_t snd_mss;
	uint32_t snd_wnd; /* the peer's advertised window, bytes; 0 when
			     the kernel does not say (before Linux 5.4) */
	bool timestamps;
};

/* Monotonic milliseconds and microseconds. */
int64_t net_now_ms(void);
int64_t net_now_us(void);

/* The local address the route to host (a name or literal) leaves from:
 * a UDP socket connected, which sends nothing, and asked. 0 or -1. */
int net_route_from(const char *host, struct sockaddr_storage *ss,
		   socklen_t *sl);

/* Resolve host (name or literal; NULL = wildcard when passive) and port.
 * family is AF_UNSPEC, AF_INET or AF_INET6. */
int net_resolve(const char *host, uint16_t port, int family, bool passive,
		struct net_addr *out, struct lr_err *err);

/* Options applied to a socket before connect (client) or after accept. */
struct net_sockopts {
	uint32_t window; /* SO_SNDBUF and SO_RCVBUF; 0 = default */
	uint32_t mss;	 /* TCP_MAXSEG; 0 = default */
	const char *cc;	 /* TCP_CONGESTION; NULL or "" = default */
	bool nodelay;
};

/*
 * Connect a TCP socket to addr within timeout_ms, bound to bind (may be
 * NULL), with opts applied before connecting. Returns the fd or -errno with
 * err naming the address.
 */
int net_connect(const struct net_addr *addr, const struct net_addr *bind,
		const struct net_sockopts *opts, int timeout_ms,
		struct lr_err *err);

/* Apply opts to a connected socket. */
int net_apply_sockopts(int fd, const struct net_sockopts *opts,
		       struct lr_err *err);

/* Listen on addr (dual-stack when it is the IPv6 wildcard). Returns fd. */
int net_listen(const struct net_addr *addr, int backlog, struct lr_err *err);

/*
 * A UDP socket (close-on-exec, SO_REUSEPORT so that a server's connected
 * sockets share its port): bound to local when given (dual-stack when it
 * is the IPv6 wildcard), connected to peer when given. Returns the fd or
 * a negative errno with err set.
 */
int net_udp_socket(const struct net_addr *local, const struct net_addr *peer,
		   struct lr_err *err);

/* Set the port of addr (IPv4 or IPv6). */
void net_addr_set_port(struct net_addr *addr, uint16_t port);

/* The address of ss without its port, IPv4 as IPv4-mapped IPv6, so that
 * hosts compare with memcmp; zeros for other families. */
void net_addr_host_key(const struct sockaddr_storage *ss, uint8_t out[16]);

/* Port a bound socket listens on, or 0. */
uint16_t net_local_port(int fd);

/* "198.18.0.2" or "::1" (no port) and the port, from a sockaddr. */
void net_addr_host(const struct sockaddr *sa, char *buf, size_t cap,
		   uint16_t *port);
/* "198.18.0.2:7350" or "[::1]:7350". */
void net_addr_str(const struct sockaddr *sa, char *buf, size_t cap);

/* Read or write exactly len bytes before the monotonic deadline (ms).
 * Return 0, LR_ETIMEOUT, LR_ECLOSED (EOF before len) or -errno. */
int net_read_full(int fd, void *buf, size_t len, int64_t deadline_ms);
int net_write_full(int fd, const void *buf, size_t len, int64_t deadline_ms);

/* Skip k bytes written from the n entries at *piov; returns the entries
 * left, *piov pointing at the first. */
int net_iov_advance(struct iovec **piov, int n, size_t k);

/* Write the iov array fully before the deadline (iov is modified). */
int net_writev_full(int fd, struct iovec *iov, int n, int64_t deadline_ms);

/*
 * Read one message: header, then a body bounded by cap (and by
 * PROTO_MAX_BODY) into buf. Returns 0 with *h filled, or an error with err
 * naming what went wrong. A PROTO_ERROR from the peer is returned as is.
 */
int net_recv_msg(int fd, uint8_t *buf, size_t cap, struct proto_hdr *h,
		 int64_t deadline_ms, struct lr_err *err);

/* Fill *st from TCP_INFO. */
int net_tcp_stats(int fd, struct net_tcp_stats *st);

/* Congestion control algorithm in use on fd into buf (cap >= 16). */
int net_get_cc(int fd, char *buf, size_t cap);

#endif
