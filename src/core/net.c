// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net.h"
#include "banned.h"

int64_t net_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t net_now_ms(void)
{
	return net_now_us() / 1000;
}

int net_resolve(const char *host, uint16_t port, int family, bool passive,
		struct net_addr *out, struct lr_err *err)
{
	struct addrinfo hints, *res = NULL;
	char portstr[8];
	int r;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	if (!host && passive && family == AF_UNSPEC)
		hints.ai_family = AF_INET6; /* dual-stack wildcard */
	snprintf(portstr, sizeof(portstr), "%u", port);
	r = getaddrinfo(host, portstr, &hints, &res);
	if (r == EAI_FAMILY && !host && passive) {
		hints.ai_family = AF_INET;
		r = getaddrinfo(host, portstr, &hints, &res);
	}
	if (r) {
		return lr_err_set(err, -EHOSTUNREACH, "cannot resolve %s: %s",
				  host ? host : "wildcard", gai_strerror(r));
	}
	memcpy(&out->ss, res->ai_addr, res->ai_addrlen);
	out->len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

int net_route_from(const char *host, struct sockaddr_storage *ss, socklen_t *sl)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM,
				  .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *ai = NULL;
	int fd = -1, r = -1;

	if (getaddrinfo(host, "9", &hints, &ai) || !ai)
		return -1;
	fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && !connect(fd, ai->ai_addr, ai->ai_addrlen) &&
	    !getsockname(fd, (struct sockaddr *)ss, sl))
		r = 0;
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return r;
}

int net_apply_sockopts(int fd, const struct net_sockopts *o, struct lr_err *err)
{
	int one = 1, v;

	if (!o)
		return 0;
	if (o->nodelay &&
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return lr_err_setc(err, -errno, "TCP_NODELAY");
	if (o->window) {
		v = (int)o->window;
		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) ||
		    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)))
			return lr_err_setc(err, -errno, "socket buffer %u",
					   o->window);
	}
	if (o->mss) {
		v = (int)o->mss;
		if (setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &v, sizeof(v)))
			return lr_err_setc(err, -errno, "MSS %u", o->mss);
	}
	if (o->cc && o->cc[0] &&
	    setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, o->cc, strlen(o->cc)))
		return lr_err_setc(err, -errno, "congestion control '%s'",
				   o->cc);
	return 0;
}

/* The port of an address (0: any). */
static uint16_t addr_port(const struct net_addr *a)
{
	if (a->ss.ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)&a->ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)&a->ss)->sin_port);
}

int net_connect(const struct net_addr *addr, const struct net_addr *bind_to,
		const struct net_sockopts *opts, int timeout_ms,
		struct lr_err *err)
{
	char where[NET_ADDRSTR];
	struct pollfd pfd;
	socklen_t sl;
	int fd, r, soerr = 0;

	net_addr_str((const struct sockaddr *)&addr->ss, where, sizeof(where));
	fd = socket(addr->ss.ss_family,
		    SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return lr_err_setc(err, -errno, "socket");
	/* a chosen local port (bench --cport) may still be in TIME_WAIT
	 * from the run before: that does not stop a new connection */
	if (bind_to && addr_port(bind_to))
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 },
			   sizeof(int));
	if (bind_to &&
	    bind(fd, (const struct sockaddr *)&bind_to->ss, bind_to->len)) {
		char b[NET_ADDRSTR];

		r = -errno;
		net_addr_str((const struct sockaddr *)&bind_to->ss, b,
			     sizeof(b));
		lr_err_setc(err, r, "bind %s", b);
		goto out_close;
	}
	r = net_apply_sockopts(fd, opts, err);
	if (r)
		goto out_close;
	if (connect(fd, (const struct sockaddr *)&addr->ss, addr->len) &&
	    errno != EINPROGRESS) {
		r = lr_err_setc(err, -errno, "connect %s", where);
		goto out_close;
	}
	pfd.fd = fd;
	pfd.events = POLLOUT;
	do {
		r = poll(&pfd, 1, timeout_ms);
	} while (r < 0 && errno == EINTR);
	if (r == 0) {
		r = lr_err_set(err, LR_ETIMEOUT, "connect %s: timed out",
			       where);
		goto out_close;
	}
	sl = sizeof(soerr);
	if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl))
		soerr = errno;
	if (soerr) {
		r = lr_err_setc(err, -soerr, "connect %s", where);
		goto out_close;
	}
	if (fcntl(fd, F_SETFL, 0)) {
		r = lr_err_setc(err, -errno, "fcntl");
		goto out_close;
	}
	return fd;

out_close:
	close(fd);
	return r;
}

int net_listen(const struct net_addr *addr, int backlog, struct lr_err *err)
{
	char where[NET_ADDRSTR];
	int fd, one = 1, zero = 0, r;

	net_addr_str((const struct sockaddr *)&addr->ss, where, sizeof(where));
	fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return lr_err_setc(err, -errno, "socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr->ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 =
			(const struct sockaddr_in6 *)&addr->ss;

		if (IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero,
				   sizeof(zero));
	}
	if (bind(fd, (const struct sockaddr *)&addr->ss, addr->len)) {
		r = lr_err_setc(err, -errno, "bind %s", where);
		goto out_close;
	}
	if (listen(fd, backlog)) {
		r = lr_err_setc(err, -errno, "listen %s", where);
		goto out_close;
	}
	return fd;

out_close:
	close(fd);
	return r;
}

int net_udp_socket(const struct net_addr *local, const struct net_addr *peer,
		   struct lr_err *err)
{
	const struct net_addr *a = local ? local : peer;
	char where[NET_ADDRSTR];
	int fd, one = 1, zero = 0, r;

	if (!a)
		return lr_err_set(err, -EINVAL, "UDP socket without address");
	fd = socket(a->ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return lr_err_setc(err, -errno, "UDP socket");
	if (local) {
		/* SO_REUSEPORT, not SO_REUSEADDR: sharing the port takes
		 * the same user, so another user's process cannot bind it
		 * and take hellos meant for this server; connected sockets
		 * in the group still get their own peer's datagrams */
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
		if (local->ss.ss_family == AF_INET6) {
			const struct sockaddr_in6 *s6 =
				(const struct sockaddr_in6 *)&local->ss;

			if (IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))
				setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero,
					   sizeof(zero));
		}
		if (bind(fd, (const struct sockaddr *)&local->ss, local->len)) {
			net_addr_str((const struct sockaddr *)&local->ss, where,
				     sizeof(where));
			r = lr_err_setc(err, -errno, "bind UDP %s", where);
			goto out_close;
		}
	}
	if (peer &&
	    connect(fd, (const struct sockaddr *)&peer->ss, peer->len)) {
		net_addr_str((const struct sockaddr *)&peer->ss, where,
			     sizeof(where));
		r = lr_err_setc(err, -errno, "connect UDP %s", where);
		goto out_close;
	}
	return fd;

out_close:
	close(fd);
	return r;
}

void net_addr_set_port(struct net_addr *addr, uint16_t port)
{
	if (addr->ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&addr->ss)->sin6_port = htons(port);
	else if (addr->ss.ss_family == AF_INET)
		((struct sockaddr_in *)&addr->ss)->sin_port = htons(port);
}

void net_addr_host_key(const struct sockaddr_storage *ss, uint8_t out[16])
{
	memset(out, 0, 16);
	if (ss->ss_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	} else if (ss->ss_family == AF_INET) {
		out[10] = out[11] = 0xff; /* as an IPv4-mapped address */
		memcpy(out + 12, &((const struct sockaddr_in *)ss)->sin_addr,
		       4);
	}
}

uint16_t net_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	uint16_t port = 0;
	char host[NET_ADDRSTR];

	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		return 0;
	net_addr_host((struct sockaddr *)&ss, host, sizeof(host), &port);
	return port;
}

void net_addr_host(const struct sockaddr *sa, char *buf, size_t cap,
		   uint16_t *port)
{
	char tmp[INET6_ADDRSTRLEN] = "?";

	*port = 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, tmp, sizeof(tmp));
		*port = ntohs(s4->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
			inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], tmp,
				  sizeof(tmp));
		else
			inet_ntop(AF_INET6, &s6->sin6_addr, tmp, sizeof(tmp));
		*port = ntohs(s6->sin6_port);
	}
	snprintf(buf, cap, "%s", tmp);
}

void net_addr_str(const struct sockaddr *sa, char *buf, size_t cap)
{
	char host[INET6_ADDRSTRLEN];
	uint16_t port;

	net_addr_host(sa, host, sizeof(host), &port);
	if (strchr(host, ':'))
		snprintf(buf, cap, "[%s]:%u", host, port);
	else
		snprintf(buf, cap, "%s:%u", host, port);
}

static int wait_fd(int fd, short ev, int64_t deadline_ms)
{
	struct pollfd pfd = { .fd = fd, .events = ev };
	int64_t left;
	int r;

	for (;;) {
		left = deadline_ms - net_now_ms();
		if (left <= 0)
			return LR_ETIMEOUT;
		r = poll(&pfd, 1, left > 1000000 ? 1000000 : (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

int net_read_full(int fd, void *buf, size_t len, int64_t deadline_ms)
{
	uint8_t *p = buf;
	ssize_t n;
	int r;

	while (len) {
		r = wait_fd(fd, POLLIN, deadline_ms);
		if (r)
			return r;
		n = recv(fd, p, len, MSG_DONTWAIT);
		if (n == 0)
			return LR_ECLOSED;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int net_write_full(int fd, const void *buf, size_t len, int64_t deadline_ms)
{
	const uint8_t *p = buf;
	ssize_t n;
	int r;

	while (len) {
		r = wait_fd(fd, POLLOUT, deadline_ms);
		if (r)
			return r;
		n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int net_iov_advance(struct iovec **piov, int n, size_t k)
{
	struct iovec *iov = *piov;

	while (n && k >= iov->iov_len) {
		k -= iov->iov_len;
		iov++;
		n--;
	}
	if (n) {
		iov->iov_base = (uint8_t *)iov->iov_base + k;
		iov->iov_len -= k;
	}
	*piov = iov;
	return n;
}

int net_writev_full(int fd, struct iovec *iov, int n, int64_t deadline_ms)
{
	struct msghdr mh;
	ssize_t k;
	int r;

	while (n) {
		r = wait_fd(fd, POLLOUT, deadline_ms);
		if (r)
			return r;
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = iov;
		mh.msg_iovlen = (size_t)n;
		k = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (k < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		n = net_iov_advance(&iov, n, (size_t)k);
	}
	return 0;
}

int net_recv_msg(int fd, uint8_t *buf, size_t cap, struct proto_hdr *h,
		 int64_t deadline_ms, struct lr_err *err)
{
	uint8_t hdr[PROTO_HDR_LEN];
	size_t max = cap < PROTO_MAX_BODY ? cap : PROTO_MAX_BODY;
	int r;

	r = net_read_full(fd, hdr, sizeof(hdr), deadline_ms);
	if (r)
		return lr_err_setc(err, r, "reading message header");
	r = proto_decode_hdr(hdr, sizeof(hdr), max, h);
	if (r == LR_ETOOBIG)
		return lr_err_set(
			err, r, "peer announced a %u-byte message (limit %zu)",
			(unsigned)((uint32_t)hdr[4] << 24 |
				   (uint32_t)hdr[5] << 16 |
				   (uint32_t)hdr[6] << 8 | hdr[7]),
			max);
	if (r < 0)
		return lr_err_setc(err, r, "message header");
	r = net_read_full(fd, buf, h->len, deadline_ms);
	if (r)
		return lr_err_setc(err, r, "reading %s body",
				   proto_type_name(h->type));
	return 0;
}

int net_get_cc(int fd, char *buf, size_t cap)
{
	char name[PROTO_CC_LEN + 1];
	socklen_t sl = PROTO_CC_LEN;

	memset(name, 0, sizeof(name));
	if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &sl))
		return -errno;
	snprintf(buf, cap, "%s", name);
	return 0;
}
