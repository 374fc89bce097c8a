// SPDX-License-Identifier: MIT
/*
 * --specials and --devices (rsync's -D): which FIFOs, sockets and device
 * nodes a receiver makes (docs/PROTOCOL.md section 7.3). Only one running
 * as root makes any, and device nodes only with its consent, as setuid
 * bits need it: a device node a sender may name gives the local users of
 * the receiving machine what its mode says. They are made at the end
 * (dest.c).
 */
#include "xfer_int.h"
#include "banned.h"

static bool is_device(const struct proto_xfer_entry *e)
{
	return e->kind == PROTO_XK_CHARDEV || e->kind == PROTO_XK_BLOCKDEV;
}

bool xfer__node_unasked(const struct xsess *x, const struct proto_xfer_entry *e)
{
	if (e->kind < PROTO_XK_FIFO)
		return false;
	return !(x->o->flags &
		 (is_device(e) ? XFER_F_DEVICES : XFER_F_SPECIALS));
}

const char *xfer__node_refused(const struct xsess *x,
			       const struct proto_xfer_entry *e)
{
	if (!xfer__owner_root(x))
		return "FIFOs, sockets and device nodes are made only by a "
		       "receiver running as root";
	if (is_device(e) && !x->o->allow_devices)
		return "device nodes need the receiver's consent (serve "
		       "--allow-devices, recv --allow-devices)";
	return NULL;
}
