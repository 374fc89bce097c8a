// SPDX-License-Identifier: MIT
/* An iperf3 test's control connection: state bytes, SERVER_ERROR, JSON
 * messages, the client gone, IPERF_DONE. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "server_int.h"
#include "banned.h"

int ip3s__send_state(struct ip3_test *t, int8_t state)
{
	uint8_t b = (uint8_t)state;

	return net_write_full(t->ctrl, &b, 1,
			      net_now_ms() + IP3S_CTRL_TIMEOUT_MS);
}

/* SERVER_ERROR, iperf3's error code and an errno, best effort. */
void ip3s__send_error(struct ip3_test *t, int code, int errnum)
{
	uint8_t b[9];
	uint32_t c = htonl((uint32_t)code), e = htonl((uint32_t)errnum);

	b[0] = (uint8_t)IP3_SERVER_ERROR;
	memcpy(b + 1, &c, 4);
	memcpy(b + 5, &e, 4);
	net_write_full(t->ctrl, b, sizeof(b), net_now_ms() + 2000);
}

int ip3s__send_json(struct ip3_test *t, const char *json, size_t len)
{
	uint8_t hdr[4];
	uint32_t n = htonl((uint32_t)len);
	int r;

	memcpy(hdr, &n, 4);
	r = net_write_full(t->ctrl, hdr, 4,
			   net_now_ms() + IP3S_CTRL_TIMEOUT_MS);
	if (!r)
		r = net_write_full(t->ctrl, json, len,
				   net_now_ms() + IP3S_CTRL_TIMEOUT_MS);
	return r;
}

/* Read one JSON message of at most max bytes into a malloc'd *out,
 * all of it by dl (net_now_ms). */
int ip3s__read_json(struct ip3_test *t, uint32_t max, int64_t dl, char **out,
		    size_t *len, char *why, size_t cap, const char *what)
{
	uint8_t hdr[4];
	int64_t n;
	char *buf;
	int r;

	r = net_read_full(t->ctrl, hdr, 4, dl);
	if (r) {
		snprintf(why, cap, "reading the %s: %s", what, lr_strerror(r));
		return r;
	}
	n = ip3_json_len(hdr, max);
	if (n < 0) {
		snprintf(why, cap, "%s: length %u (limit %u)", what,
			 (unsigned)hdr[0] << 24 | (unsigned)hdr[1] << 16 |
				 (unsigned)hdr[2] << 8 | hdr[3],
			 max);
		return (int)n;
	}
	buf = malloc((size_t)n);
	if (!buf) {
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	r = net_read_full(t->ctrl, buf, (size_t)n, dl);
	if (r) {
		snprintf(why, cap, "reading the %s: %s", what, lr_strerror(r));
		free(buf);
		return r;
	}
	*out = buf;
	*len = (size_t)n;
	return 0;
}

/* The client vanished: its control connection is at EOF or failed. */
bool ip3s__ctrl_gone(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	uint8_t b;

	if (poll(&pf, 1, 0) <= 0)
		return false;
	if (pf.revents & (POLLERR | POLLHUP | POLLNVAL))
		return true;
	return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* After DISPLAY_RESULTS: the client's IPERF_DONE, or its close. */
int ip3s__wait_done(struct ip3_test *t, char *why, size_t cap)
{
	uint8_t b;
	int r;

	r = net_read_full(t->ctrl, &b, 1, net_now_ms() + IP3S_DONE_TIMEOUT_MS);
	if (r == LR_ECLOSED)
		return 0; /* it has what it needs */
	if (r) {
		snprintf(why, cap, "waiting for IPERF_DONE: %s",
			 lr_strerror(r));
		return r;
	}
	if ((int8_t)b != IP3_IPERF_DONE) {
		snprintf(why, cap, "expected IPERF_DONE, got state %d",
			 (int8_t)b);
		return LR_EBADMSG;
	}
	return 0;
}
