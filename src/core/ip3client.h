/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_IP3CLIENT_H
#define LINERATE_IP3CLIENT_H

#include <stdbool.h>

#include "bench.h"
#include "err.h"

/*
 * `linerate bench --iperf3 HOST`: one test against a stock iperf3 server
 * (issue 6), in iperf3's client sequence: cookie, parameters, data
 * streams, TEST_START / TEST_RUNNING, the test on linerate's engine
 * (bench.h), TEST_END, the results exchange, IPERF_DONE.
 */

struct ip3_client_opts {
	const char *title;	/* -T: sent to the server, kept in res; NULL */
	bool get_server_output; /* ask for the server's report text */
	bool counters64;	/* UDP: 64-bit sequence numbers */
};

/*
 * Run one test against the iperf3 server at o->host / o->port with the
 * options of o (o->psk must be NULL: iperf3 has no token). Blocks for
 * the test's duration and reports through cb as bench_client_run does.
 * On success *res is filled (res->iperf3 set; free with
 * bench_result_free); on failure err says why (a busy server is
 * LR_EBUSY, an error the server reported LR_EPEER) and *res holds
 * nothing to free.
 */
int ip3_client_run(const struct bench_opts *o, const struct ip3_client_opts *x,
		   const struct bench_callbacks *cb, struct bench_result *res,
		   struct lr_err *err);

#endif
