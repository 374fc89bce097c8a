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
	case LR_EFRAME:
		return "a record of the wrong type or length for this stream";
	case LR_ETAMPER:
		return "the connection was tampered with (bytes changed in "
		       "transit)";
	case LR_EBADPATH: return "unacceptable path";
	case LR_EDIGEST: return "digest mismatch";
	case LR_EBINARY:
		return "binary data is not written to a terminal (redirect "
		       "it to a file or a pipe, or give --force-tty)";
	case LR_ENOTLINERATE:
		return "peer does not speak the linerate protocol";
	default: break;
	}
#ifdef __GLIBC__
	s = strerrordesc_np(code);
#else
	{
		/* musl's strerror_r is the XSI one, its strings constant */
		static __thread char buf[128];

		s = strerror_r(code, buf, sizeof(buf)) ? NULL : buf;
	}
#endif
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

static bool is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/* U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069 (the marks,
 * embeddings, overrides and isolates) and U+2028-U+2029 (line and
 * paragraph separators), n bytes of UTF-8 at s. */
static bool is_bidi(const unsigned char *s, size_t n)
{
	if (n == 2)
		return s[0] == 0xd8 && s[1] == 0x9c;
	if (n != 3 || s[0] != 0xe2)
		return false;
	if (s[1] == 0x80)
		return s[2] == 0x8e || s[2] == 0x8f ||
		       (s[2] >= 0xa8 && s[2] <= 0xae);
	return s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9;
}

/*
 * Length of the valid UTF-8 sequence at s (avail bytes), or 0 if the
 * bytes there are not one (overlong forms, surrogates and code points
 * above U+10FFFF are invalid). s[0] >= 0x80.
 */
static size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (avail < n)
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0; /* overlong */
	else if (s[0] == 0xed)
		hi = 0x9f; /* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90; /* overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f; /* above U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/* Append \xNN for each of the n bytes at s if all fit; false if not. */
static bool put_hex(char *out, size_t cap, size_t *o, const unsigned char *s,
		    size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (cap - 1 - *o < 4 * n)
		return false;
	for (i = 0; i < n; i++) {
		out[(*o)++] = '\\';
		out[(*o)++] = 'x';
		out[(*o)++] = hex[s[i] >> 4];
		out[(*o)++] = hex[s[i] & 0xf];
	}
	return true;
}

char *lr_escape(const char *name, size_t len, char *out, size_t cap,
		bool backslash)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t i = 0, o = 0;

	if (cap == 0)
		return out;
	while (i < len) {
		size_t n;

		if (s[i] == '\\' && backslash) {
			if (cap - 1 - o < 2)
				break;
			out[o++] = '\\';
			out[o++] = '\\';
			i++;
			continue;
		}
		if (is_ctl(s[i])) {
			if (!put_hex(out, cap, &o, s + i, 1))
				break;
			i++;
			continue;
		}
		if (s[i] < 0x80) {
			if (cap - 1 - o < 1)
				break;
			out[o++] = (char)s[i++];
			continue;
		}
		n = utf8_seq_len(s + i, len - i);
		if (n == 0) {
			if (!put_hex(out, cap, &o, s + i, 1))
				break;
			i++;
			continue;
		}
		/* U+0080..U+009F are the C1 controls (0x9b is a CSI); the
		 * bidirectional controls reorder what follows on the screen */
		if ((n == 2 && s[i] == 0xc2 && s[i + 1] <= 0x9f) ||
		    is_bidi(s + i, n)) {
			if (!put_hex(out, cap, &o, s + i, n))
				break;
			i += n;
			continue;
		}
		if (cap - 1 - o < n)
			break;
		memcpy(out + o, s + i, n);
		o += n;
		i += n;
	}
	out[o] = '\0';
	return out;
}
