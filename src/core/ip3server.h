/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_IP3SERVER_H
#define LINERATE_IP3SERVER_H

/* The iperf3 server's own bounds; its face (ip3srv_*) is in server.h. */

#include "server.h"

#define IP3SRV_MAX_PENDING	64 /* connections without a cookie, all hosts */
#define IP3SRV_PENDING_PER_HOST 8  /* ... from one host */
#define IP3SRV_COOKIE_MS	3000 /* at most, for the cookie (iperf3: at once) */
#define IP3SRV_MAX_SETUP	32 /* tests waiting for parameters, all hosts */
#define IP3SRV_SETUP_PER_HOST	4  /* ... from one host */
#define IP3SRV_PARAMS_MS	5000 /* for the parameters, header and body */

#endif
