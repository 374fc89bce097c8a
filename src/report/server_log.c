// SPDX-License-Identifier: MIT
/* serve's log lines. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/units.h"
#include "report_int.h"
#include "banned.h"

static const char *mode_name(uint8_t mode)
{
	switch (mode) {
	case BENCH_MODE_REVERSE: return "reverse";
	case BENCH_MODE_BIDIR: return "bidir";
	default: return "forward";
	}
}

/* ": ok" or ": failed: REASON", and the line's end. */
static void outcome(FILE *log, const struct server_event *ev)
{
	if (ev->ok) {
		fprintf(log, ": ok\n");
		return;
	}
	fprintf(log, ": failed: ");
	report_escaped(log, ev->reason ? ev->reason : "?");
	fputc('\n', log);
}

static void probe_line(FILE *log, const char *ts, const struct server_event *ev)
{
	fprintf(log, "%s probe %u from %s (linerate doctor)", ts, ev->test_no,
		ev->peer);
	outcome(log, ev);
}

static void xfer_line(FILE *log, const char *ts, const struct server_event *ev)
{
	const struct xfer_result *x = &ev->xres;
	char tb[32], rb[32];

	fprintf(log, "%s transfer %u from %s: %s", ts, ev->test_no, ev->peer,
		ev->xfer_op == XFER_PULL ? "pull" : "push");
	if (x->seconds > 0)
		fprintf(log, ", %llu file%s, %s in %.2f s (%s), %s",
			(unsigned long long)x->files_ok,
			x->files_ok == 1 ? "" : "s",
			units_fmt_iec(tb, sizeof(tb), (double)x->bytes),
			x->seconds,
			units_fmt_iec_rate(rb, sizeof(rb),
					   x->bytes / x->seconds),
			x->authenticated ? crypto_cipher_name(x->cipher)
					 : "no token");
	/* the client's cap, reached: said as such, not as the network's */
	if (x->rate_limit && x->seconds > 0.2 &&
	    !strcmp(xfer_bottleneck(x, NULL), "your --limit"))
		fprintf(log, ", held to the client's --limit (%s)",
			units_fmt_iec_rate(rb, sizeof(rb),
					   (double)x->rate_limit));
	if (x->files_deleted)
		fprintf(log, ", %llu deleted",
			(unsigned long long)x->files_deleted);
	if (x->deletes_failed) {
		fprintf(log, ", %llu NOT deleted (",
			(unsigned long long)x->deletes_failed);
		report_escaped(log, x->deletes_why);
		fputc(')', log);
	}
	if (ev->ok && x->peer_end_lost) {
		fprintf(log, ": ok (the client finished; its last message was "
			     "lost or tampered with)\n");
		return;
	}
	outcome(log, ev);
}

static void partials_line(FILE *log, const char *ts,
			  const struct server_event *ev)
{
	fprintf(log, "%s partial files: ", ts);
	if (!ev->reason) {
		report_sweep_line(log, &ev->sweep, &ev->partial);
		return;
	}
	fprintf(log, "sweep failed: ");
	report_escaped(log, ev->reason);
	fputc('\n', log);
}

/* A bench test (linerate's or iperf3's): mode, streams, what protected
 * it, how long, what moved. */
static void test_line(FILE *log, const char *ts, const struct server_event *ev)
{
	uint64_t b = ev->bytes_sent + ev->bytes_received;
	char tb[32], rb[32];

	fprintf(log, "%s test %u from %s", ts, ev->test_no, ev->peer);
	if (ev->req.streams)
		fprintf(log, ": %s, %u stream%s", mode_name(ev->req.mode),
			ev->req.streams, ev->req.streams == 1 ? "" : "s");
	if (ev->req.udp)
		fprintf(log, ", UDP");
	if (ev->iperf3)
		fprintf(log, ", iperf3 protocol");
	if (!ev->ok) {
		outcome(log, ev);
		return;
	}
	fprintf(log, ", %s",
		!ev->secure   ? "no token"
		: ev->req.udp ? "token, datagrams in clear"
			      : crypto_cipher_name(ev->cipher));
	fprintf(log, ", %.2f s", ev->seconds);
	if (ev->bytes_sent || ev->req.mode != BENCH_MODE_FORWARD)
		fprintf(log, ", sent %s",
			units_fmt_bytes(tb, sizeof(tb),
					(double)ev->bytes_sent));
	if (ev->bytes_received || ev->req.mode != BENCH_MODE_REVERSE)
		fprintf(log, ", received %s",
			units_fmt_bytes(rb, sizeof(rb),
					(double)ev->bytes_received));
	fprintf(log, " (%s)",
		report__fmt_rate(tb, sizeof(tb), report__rate(b, ev->seconds)));
	if (ev->overlap)
		fprintf(log, ", overlapped %u other test%s", ev->overlap,
			ev->overlap == 1 ? "" : "s");
	outcome(log, ev);
}

void report_server_event(FILE *out, FILE *log, const struct server_event *ev)
{
	char ts[32];
	struct tm tm;
	time_t now = time(NULL);

	if (ev->kind == SERVER_EV_LISTENING) {
		/* the iperf3 port's line is told apart: scripts read the
		 * first form back for the linerate port */
		fprintf(out, "Server listening on %s port %u%s\n", ev->peer,
			ev->port, ev->iperf3 ? " (iperf3 clients)" : "");
		fflush(out);
		return;
	}
	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	flockfile(log);
	if (ev->kind == SERVER_EV_PROBE_DONE) {
		probe_line(log, ts, ev);
	} else if (ev->kind == SERVER_EV_XFER_DONE) {
		xfer_line(log, ts, ev);
	} else if (ev->kind == SERVER_EV_PARTIALS) {
		partials_line(log, ts, ev);
	} else if (ev->kind == SERVER_EV_CONN_REJECTED) {
		fprintf(log, "%s %s: rejected: ", ts, ev->peer);
		report_escaped(log, ev->reason ? ev->reason : "?");
		fputc('\n', log);
	} else {
		test_line(log, ts, ev);
	}
	funlockfile(log);
	fflush(log);
}
