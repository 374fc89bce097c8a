// SPDX-License-Identifier: MIT
/* The grammar of [USER@]HOST[:PATH] operands (remote.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "remote.h"
#include "banned.h"

bool remote_is_remote(const char *arg)
{
	const char *p;

	if (arg[0] == '[')
		return true; /* a bracketed host (remote_parse says if not) */
	for (p = arg; *p; p++) {
		if (*p == '/')
			return false;
		if (*p == ':')
			return true;
	}
	return false;
}

/* Letters, digits, '.', '_', '-' (and for a host ':' and '%' of an IPv6
 * address and its zone), not starting with '-': nothing a shell or ssh
 * reads as more than a name (ssh puts a host into a ProxyCommand). */
static bool word_ok(const char *s, size_t n, bool host)
{
	size_t i;

	if (!n || s[0] == '-')
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')
			continue;
		if (host && (c == ':' || c == '%'))
			continue;
		return false;
	}
	return true;
}

static int copy_word(const char *arg, const char *what, const char *s, size_t n,
		     char *out, size_t cap, struct lr_err *err)
{
	if (!n)
		return lr_err_set(err, -EINVAL, "'%s': no %s", arg, what);
	if (n >= cap)
		return lr_err_set(err, -EINVAL, "'%s': the %s is too long", arg,
				  what);
	if (!word_ok(s, n, !strcmp(what, "host")))
		return lr_err_set(err, -EINVAL,
				  "'%s': the %s is letters, digits, '.', '_' "
				  "and '-', not starting with '-'",
				  arg, what);
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

/* [HOST] and what follows it: nothing or ':' and the path. */
static int bracketed(const char *arg, const char *p, struct remote_addr *ra,
		     struct lr_err *err)
{
	const char *end = strchr(p, ']');
	int r;

	if (!end)
		return lr_err_set(err, -EINVAL,
				  "'%s': no ']' after the IPv6 address", arg);
	r = copy_word(arg, "host", p + 1, (size_t)(end - p - 1), ra->host,
		      sizeof(ra->host), err);
	if (r)
		return r;
	ra->bracketed = true;
	if (end[1] == ':') {
		ra->has_path = true;
		ra->path = end + 2;
	} else if (end[1]) {
		return lr_err_set(err, -EINVAL,
				  "'%s': after ']' comes ':' and the path",
				  arg);
	}
	return 0;
}

static int plain(const char *arg, const char *p, unsigned flags,
		 struct remote_addr *ra, struct lr_err *err)
{
	const char *colon = strchr(p, ':');
	size_t n = colon ? (size_t)(colon - p) : strlen(p);

	/* a bare IPv6 address where no path can follow */
	if ((flags & REMOTE_HOST_ONLY) && colon && strchr(colon + 1, ':')) {
		colon = NULL;
		n = strlen(p);
	}
	if (colon) {
		ra->has_path = true;
		ra->path = colon + 1;
	}
	if (memchr(p, '/', n))
		return lr_err_set(err, -EINVAL, "'%s': no host before ':'",
				  arg);
	return copy_word(arg, "host", p, n, ra->host, sizeof(ra->host), err);
}

static bool digits_then_colon(const char *s)
{
	const char *p = s;

	while (*p >= '0' && *p <= '9')
		p++;
	return p > s && (*p == ':' || !*p);
}

static int check_path(const char *arg, unsigned flags,
		      const struct remote_addr *ra, struct lr_err *err)
{
	if ((flags & REMOTE_PATH) && !ra->has_path)
		return lr_err_set(err, -EINVAL,
				  "'%s': write HOST:PATH (HOST: alone is "
				  "the root, as send's destination)",
				  arg);
	if (!(flags & REMOTE_HOST_ONLY) || !ra->has_path)
		return 0;
	return lr_err_set(err, -EINVAL,
			  "'%s': takes HOST or HOST:PORT, not a path", arg);
}

/* A command without a path reads a port after the host: 1-65535. */
static bool take_port(struct remote_addr *ra)
{
	unsigned long v = 0;
	const char *p = ra->path;

	if (!*p || *p == '0')
		return false;
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || v > 6553)
			return false;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v > 65535)
		return false;
	ra->port = (uint16_t)v;
	ra->has_path = false;
	ra->port_like = false;
	ra->path = "";
	return true;
}

int remote_parse(const char *arg, unsigned flags, struct remote_addr *ra,
		 struct lr_err *err)
{
	const char *stop = arg + strcspn(arg, ":[");
	const char *at = NULL, *p, *q;
	int r;

	memset(ra, 0, sizeof(*ra));
	ra->path = "";
	if ((flags & REMOTE_PATH) && !remote_is_remote(arg))
		return lr_err_set(err, -EINVAL,
				  "'%s': write HOST:PATH, a path below the "
				  "server's root (./%s for a local name)",
				  arg, arg);
	for (q = arg; q < stop; q++)
		if (*q == '@')
			at = q;
	p = arg;
	if (at) {
		r = copy_word(arg, "user", arg, (size_t)(at - arg), ra->user,
			      sizeof(ra->user), err);
		if (r)
			return r;
		p = at + 1;
	}
	r = *p == '[' ? bracketed(arg, p, ra, err)
		      : plain(arg, p, flags, ra, err);
	if (r)
		return r;
	ra->port_like = ra->has_path && digits_then_colon(ra->path);
	if ((flags & REMOTE_HOST_ONLY) && ra->has_path)
		take_port(ra);
	return check_path(arg, flags, ra, err);
}

int remote_ssh_dest(const struct remote_addr *ra, char *out, unsigned cap)
{
	int n = ra->user[0] ? snprintf(out, cap, "%s@%s", ra->user, ra->host)
			    : snprintf(out, cap, "%s", ra->host);

	return n < 0 || (unsigned)n >= cap ? -ENAMETOOLONG : 0;
}

int remote_root_path(const char **path, struct lr_err *err)
{
	const char *p = *path, *c;

	if (p[0] == '~' && p[1] && p[1] != '/')
		return lr_err_set(err, -EINVAL,
				  "'%s': ~USER has no meaning on a linerate "
				  "server (~ is its root; ./%s names a "
				  "directory so called)",
				  *path, *path);
	if (p[0] == '~')
		p += 1 + strspn(p + 1, "/");
	for (c = p; *c; c += strspn(c, "/")) {
		size_t n = strcspn(c, "/");

		if (n == 2 && c[0] == '.' && c[1] == '.')
			return lr_err_set(err, -EINVAL,
					  "'%s': a path on the server may not "
					  "leave its root ('..'); name it from "
					  "the root down",
					  *path);
		c += n;
	}
	*path = p;
	return 0;
}
