// SPDX-License-Identifier: MIT
/* What both clients (linerate and iperf3) share: the link facts, the interval clock, the test loop and its tail. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "conn.h"
#include "crypto.h"
#include "link.h"
#include "udp.h"
#include "bench_int.h"
#include "banned.h"

uint64_t bench__tv_us(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000 + (uint64_t)tv->tv_usec;
}

void bench_fill_link(const struct bench_opts *o, struct bench_run *run,
		     struct bench_result *res)
{
	struct bench_stream *s = &run->streams[0];
	struct net_tcp_stats st;
	struct link_info li;
	struct sockaddr_storage rs;
	socklen_t rsl = sizeof(rs);
	const struct sockaddr *at = (const struct sockaddr *)&s->local.ss;
	int v;
	socklen_t sl = sizeof(v);

	if (!getsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &v, &sl))
		res->sndbuf = (uint32_t)v;
	sl = sizeof(v);
	if (!getsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &v, &sl))
		res->rcvbuf = (uint32_t)v;
	res->ipv6 = s->local.ss.ss_family == AF_INET6 &&
		    !IN6_IS_ADDR_V4MAPPED(
			    &((struct sockaddr_in6 *)&s->local.ss)->sin6_addr);
	if (!run->req.udp && !net_tcp_stats(s->fd, &st)) {
		res->timestamps = st.timestamps;
		res->mss = st.snd_mss;
	}
	/* through a relay (ssh): the route to the far host, or unknown */
	if (o->link_host)
		at = net_route_from(o->link_host, &rs, &rsl)
			     ? NULL
			     : (const struct sockaddr *)&rs;
	if (at && !link_lookup(at, "/sys", &li)) {
		res->link_known = true;
		snprintf(res->link_if, sizeof(res->link_if), "%s", li.ifname);
		res->link_speed_bps = li.speed_bps;
		res->link_mtu = li.mtu;
		res->link_wireless = li.wireless;
		res->link_virtual = li.virtual_if;
	}
	if (o->link_speed_bps)
		res->link_speed_bps = o->link_speed_bps;
	if (!res->link_mtu)
		res->link_mtu = 1500;
	res->link_ceiling_bps = link_goodput_bps(
		res->link_speed_bps, res->link_mtu, res->ipv6, res->timestamps);
	if (!run->req.udp)
		net_get_cc(s->fd, res->local_cc, sizeof(res->local_cc));
}

void bench_client_tick(struct bench_run *run, const struct bench_opts *o,
		       const struct bench_callbacks *cb,
		       struct bench_client_clock *clk, int64_t now_ms)
{
	if (!run->omit_done && now_ms >= bench_ms_ceil(run->omit_end_us)) {
		/* the omitted phase ends: report its last part, then the
		 * interval clock restarts at zero */
		bench_run_sample(run, clk->iv, clk->iv_start);
		if (o->interval_ms && cb->interval &&
		    clk->iv->end - clk->iv->start >= 0.001)
			cb->interval(cb->ctx, clk->iv);
		clk->iv_start = 0;
		clk->next_iv = bench_ms_ceil(run->omit_end_us) + clk->tick;
	} else if (now_ms >= clk->next_iv) {
		clk->next_iv += clk->tick;
		if (!o->interval_ms || !cb->interval) {
			/* -i 0: TCP figures only; the one interval is the
			 * tail's */
			bench_run_sample(run, NULL, 0);
			return;
		}
		/* at the deadline the last interval is the tail's, after
		 * the senders have stopped, so that it holds every byte */
		if (o->req.duration_ms && now_ms >= clk->end_ms)
			return;
		bench_run_sample(run, clk->iv, clk->iv_start);
		cb->interval(cb->ctx, clk->iv);
		clk->iv_start = clk->iv->end;
	}
}

int64_t bench_client_wake(const struct bench_run *run,
			  const struct bench_client_clock *clk, int64_t end_ms,
			  int64_t hard_end)
{
	int64_t wake = clk->next_iv;

	if (end_ms && end_ms < wake)
		wake = end_ms;
	if (hard_end < wake)
		wake = hard_end;
	if (!run->omit_done && bench_ms_ceil(run->omit_end_us) < wake)
		wake = bench_ms_ceil(run->omit_end_us);
	return wake;
}

int bench_client_turn(struct bench_run *run, const struct bench_opts *o,
		      const struct bench_callbacks *cb,
		      struct bench_client_clock *clk, bool woken,
		      int64_t end_ms, int64_t hard_end, int64_t *now_ms,
		      bool *truncated, struct lr_err *err)
{
	uint64_t ev;
	int r;

	if (woken && read(run->evfd, &ev, sizeof(ev)) < 0) {
		/* nothing to drain */
	}
	*now_ms = net_now_ms();
	bench_client_tick(run, o, cb, clk, *now_ms);
	r = bench_run_error(run, true, err);
	if (r)
		return r;
	/* the deadline to the microsecond: the senders' own */
	if (o->req.duration_ms && run->send_end_us &&
	    net_now_us() >= run->send_end_us)
		return 1;
	if (o->req.duration_ms && *now_ms >= end_ms)
		return 1;
	if (*now_ms >= hard_end) {
		*truncated = true;
		return 1;
	}
	return 0;
}

int bench__client_dial(const struct bench_opts *o,
		       const struct bench_callbacks *cb,
		       struct bench_result *res, struct bench__dial *d,
		       struct lr_err *err)
{
	struct net_sockopts ctrl_so = { .nodelay = true };
	int r;

	d->bindp = NULL;
	r = net_resolve(o->host, o->port, o->family, false, &d->addr, err);
	if (r)
		return r;
	if (o->bind_addr) {
		r = net_resolve(o->bind_addr, 0, d->addr.ss.ss_family, true,
				&d->bindaddr, err);
		if (r)
			return r;
		d->bindp = &d->bindaddr;
	}
	net_addr_str((struct sockaddr *)&d->addr.ss, d->where,
		     sizeof(d->where));
	net_addr_host((struct sockaddr *)&d->addr.ss, res->remote_host,
		      sizeof(res->remote_host), &res->remote_port);
	res->req = o->req;
	res->start_time = time(NULL);
	if (cb->connecting)
		cb->connecting(cb->ctx, res->remote_host, res->remote_port);
	getrusage(RUSAGE_SELF, &d->ru0);
	d->t_wall0 = net_now_us();
	return net_connect(&d->addr, d->bindp, &ctrl_so, o->connect_timeout_ms,
			   err);
}

int bench__stream_bind(const struct net_addr *addr,
		       const struct net_addr *bindp, uint16_t cport, unsigned i,
		       struct net_addr *tmp, const struct net_addr **out,
		       struct lr_err *err)
{
	unsigned port = (unsigned)cport + i;

	*out = bindp;
	if (!cport)
		return 0;
	if (port > 65535)
		return lr_err_set(err, -ERANGE,
				  "--cport %u: stream %u would need port %u",
				  (unsigned)cport, i + 1, port);
	if (bindp) {
		*tmp = *bindp;
	} else {
		memset(tmp, 0, sizeof(*tmp));
		tmp->ss.ss_family = addr->ss.ss_family;
		tmp->len = addr->ss.ss_family == AF_INET6
				   ? sizeof(struct sockaddr_in6)
				   : sizeof(struct sockaddr_in);
	}
	if (tmp->ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&tmp->ss)->sin6_port =
			htons((uint16_t)port);
	else
		((struct sockaddr_in *)&tmp->ss)->sin_port =
			htons((uint16_t)port);
	*out = tmp;
	return 0;
}

int bench__client_ready(struct bench_run *run, struct bench_result *res,
			struct bench_interval *iv, struct lr_err *err)
{
	res->nstreams = run->nstreams;
	res->streams = calloc(run->nstreams, sizeof(*res->streams));
	iv->s = calloc(run->nstreams, sizeof(*iv->s));
	if (!res->streams || !iv->s)
		return lr_err_setc(err, -ENOMEM, "result tables");
	return bench_run_ready(run, err);
}

void bench__client_go(struct bench_run *run, const struct bench_opts *o,
		      const struct bench_callbacks *cb,
		      struct bench_result *res)
{
	bench_run_go(run);
	bench_fill_link(o, run, res);
	bench_run_describe(run, res->streams);
	if (cb->started)
		cb->started(cb->ctx, res);
}

int bench__client_session(int fd, const struct bench__client_steps *st, void *c,
			  struct bench_run *run, const bool *run_ok,
			  struct lr_err *err)
{
	int r;

	if (fd < 0)
		return fd;
	r = st->ask(c, err);
	if (!r)
		r = st->open(c, err);
	if (!r)
		r = st->run(c, err);
	if (*run_ok)
		bench_run_fini(run);
	if (st->close)
		st->close(c);
	close(fd);
	return r;
}

void bench__result_drop(struct bench_result *res)
{
	free(res->streams);
	res->streams = NULL;
	res->nstreams = 0;
	free(res->server_output);
	res->server_output = NULL;
}

void bench__client_clock_init(struct bench_client_clock *clk,
			      const struct bench_run *run,
			      const struct bench_opts *o,
			      struct bench_interval *iv, uint64_t max_ms)
{
	clk->iv = iv;
	clk->iv_start = 0;
	clk->tick = o->interval_ms ? (int64_t)o->interval_ms : 1000;
	/* never before the senders' own deadline (send_end_us) */
	clk->end_ms = bench_ms_ceil(run->omit_end_us +
				    (int64_t)o->req.duration_ms * 1000);
	clk->hard_end = bench_ms_ceil(
		run->t0_us +
		((int64_t)o->req.omit_ms + (int64_t)max_ms) * 1000);
	clk->next_iv = bench_ms_ceil(run->t0_us) + clk->tick;
}

int bench__client_loop(struct bench_run *run, const struct bench_opts *o,
		       const struct bench_callbacks *cb,
		       struct bench_client_clock *clk, int ctrl,
		       struct bench_result *res,
		       const struct bench__client_ops *ops, void *ctx,
		       struct lr_err *err)
{
	int64_t wake, now, until_us, now_us;
	int r;

	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = ctrl, .events = POLLIN },
			{ .fd = run->evfd, .events = POLLIN },
		};

		wake = bench_client_wake(run, clk,
					 o->req.duration_ms ? clk->end_ms : 0,
					 clk->hard_end);
		if (ops->max_wait_ms && wake > net_now_ms() + ops->max_wait_ms)
			wake = net_now_ms() + ops->max_wait_ms;
		/* the end of a timed test is waited for to the microsecond,
		 * as iperf3's client does: the server times the test by it */
		until_us = wake * 1000;
		if (o->req.duration_ms && run->send_end_us &&
		    run->send_end_us < until_us)
			until_us = run->send_end_us;
		now_us = net_now_us();
		if (until_us > now_us) {
			struct timespec ts = {
				.tv_sec = (until_us - now_us) / 1000000,
				.tv_nsec = (until_us - now_us) % 1000000 * 1000,
			};

			if (ppoll(pf, 2, &ts, NULL) < 0 && errno != EINTR)
				return lr_err_setc(err, -errno, "poll");
		}
		now = net_now_ms();
		if (pf[0].revents)
			return ops->ctrl_readable(ctx, err);
		r = bench_client_turn(run, o, cb, clk, pf[1].revents,
				      clk->end_ms, clk->hard_end, &now,
				      &res->truncated, err);
		if (r)
			return r < 0 ? r : 0;
		r = ops->after_turn ? ops->after_turn(ctx, now, err) : 0;
		if (r)
			return r < 0 ? r : 0;
	}
}

/* The tail ends, stream by stream, where each stream's period does (a
 * sender's at the deadline, a receiver's with its last byte), not after
 * the drain; the interval with the last of them. *any says whether it
 * holds bytes. */
static void tail_end(const struct bench_run *run, struct bench_interval *iv,
		     bool *any)
{
	int64_t base = run->omit_done ? run->omit_end_us : run->t0_us;
	double last = iv->start;
	unsigned i;

	*any = false;
	for (i = 0; i < iv->n; i++) {
		int64_t l = bench__stream_end_us(run, &run->streams[i]);
		double e = (double)(l - base) / 1e6;

		if (e < iv->start)
			e = iv->start;
		if (e > iv->end)
			e = iv->end;
		iv->s[i].end = e;
		if (e > last)
			last = e;
		*any = *any || iv->s[i].bytes;
	}
	iv->end = last;
}

void bench__client_tail(struct bench_run *run, const struct bench_opts *o,
			const struct bench_callbacks *cb,
			struct bench_client_clock *clk)
{
	struct bench_interval *iv = clk->iv;
	bool any;

	if (!cb->interval)
		return;
	bench_run_sample(run, iv, clk->iv_start);
	tail_end(run, iv, &any);
	/* every byte is in an interval: the tail is reported when it holds
	 * some, and with -i 0 it is the one interval of the test */
	if (any || !o->interval_ms)
		cb->interval(cb->ctx, iv);
}
