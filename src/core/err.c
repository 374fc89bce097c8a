// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "banned.h"

const char *lr_strerror(int code)
{
	const char *s;

	if (code == INT_MIN)
		return "unknown error";
	if (code < 0)
		code = -code;
	switch (-code) {
	case LR_EBUSY: return "server busy";
	case LR_EVERSION: return "incompatible protocol version";
	case LR_EPEER: return "error reported by peer";
	case LR_EBADMSG: return "malformed message";
	case LR_ETOOBIG: return "message too long";
	case LR_ENEEDMORE: return "incomplete message";
	case LR_ETIMEOUT: return "timed out";
	case LR_ECLOSED: return "connection closed by peer";
	case LR_EAUTH: return "authentication failed";
	case LR_ERECORD:
		return "record failed authentication (tampered, dropped, "
		       "reordered or replayed data)";
	case LR_ETRUNC: return "stream cut short (no end record)";
	case LR_EBADPATH: return "unacceptable path";
	case LR_EDIGEST: return "digest mismatch";
	case LR_ENOTLINERATE:
		return "peer does not speak the linerate protocol";
	default: break;
	}
	s = strerrordesc_np(code);
	return s ? s : "unknown error";
}

__attribute__((format(printf, 4, 0))) static int
err_vset(struct lr_err *err, int code, int with_desc, const char *fmt,
	 va_list ap)
{
	int n;

	if (!err)
		return code;
	err->code = code;
	n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (n < 0) {
		err->msg[0] = '\0';
		n = 0;
	}
	if (with_desc && (size_t)n < sizeof(err->msg))
		snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s",
			 lr_strerror(code));
	return code;
}

int lr_err_set(struct lr_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(err, code, 0, fmt, ap);
	va_end(ap);
	return code;
}

int lr_err_setc(struct lr_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(err, code, 1, fmt, ap);
	va_end(ap);
	return code;
}
