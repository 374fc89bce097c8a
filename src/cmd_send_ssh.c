// SPDX-License-Identifier: MIT
/* linerate send and get with the far end started over ssh: the words of
 * the far command, the far root of a pull, and the fallback when no
 * server listens. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "cmd_send.h"
#include "report.h"
#include "banned.h"

const char *send_clean_remote(const char *p)
{
	while (*p == '/' || (p[0] == '.' && p[1] == '/'))
		p += *p == '/' ? 1 : 2;
	return strcmp(p, ".") ? p : "";
}

/* Whether the far end starts over ssh: USER@ or -e asks for it. */
int send_want_ssh(struct send_cli *o, struct lr_err *err)
{
	int r = sshcli_wanted(&o->ssh, &o->ra, o->net.token_file, err);

	o->via_ssh = r > 0;
	return r < 0 ? r : 0;
}

/* p without "//", "./" parts and a trailing '/' (a leading '/' stays)
 * into out. 0 or -ENAMETOOLONG. */
static int normal_path(const char *p, char *out, size_t cap)
{
	size_t o = 0;

	if (*p == '/' && cap > 1)
		out[o++] = *p++;
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n && !(n == 1 && p[0] == '.')) {
			if (o + n + 2 > cap)
				return -ENAMETOOLONG;
			if (o && out[o - 1] != '/')
				out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
		p += strspn(p, "/");
	}
	if (!o && cap > 1)
		out[o++] = '.';
	out[o] = '\0';
	return 0;
}

/* Over ssh a path reaches the far shell: no backslash (fish and csh read
 * it in quotes), no control character. */
static int shell_safe(const char *p, struct lr_err *err)
{
	for (; *p; p++)
		if (*p == '\\' || (unsigned char)*p < ' ' || *p == 0x7f)
			return lr_err_set(err, -EINVAL,
					  "over ssh a path may not hold a "
					  "backslash or a control character "
					  "(the far shell reads it)");
	return 0;
}

/* send over ssh: the far end is `linerate recv --ssh DIR`, DIR as the
 * user wrote it (the far shell expands a leading ~); the push goes to
 * its root. */
static int ssh_push_words(struct send_cli *o, const char **words, char *qdir,
			  size_t cap, struct lr_err *err)
{
	char dir[XFER_MAX_PATH + 1];
	const char *path = o->ra.path;
	const char *slash;
	unsigned n = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	if (o->c.src.stdin_name && (slash = strrchr(path, '/')) != NULL)
		dir[slash == path ? 1 : slash - path] = '\0'; /* "/NAME" */
	else if (o->c.src.stdin_name)
		dir[0] = '\0';
	words[n++] = "recv";
	words[n++] = "--ssh";
	if (o->c.cipher_wish == CRYPTO_NONE)
		words[n++] = "--allow-plaintext";
	/* the far end is the user's own login: -D is the consent */
	if (o->c.x.flags & XFER_F_DEVICES)
		words[n++] = "--allow-devices";
	words[n++] = "--";
	if (shell_safe(dir, err))
		return -EINVAL;
	if (dir[0]) {
		if (ssh_shell_quote(dir, true, qdir, cap))
			return lr_err_set(err, -ENAMETOOLONG, "%s: too long",
					  dir);
		words[n++] = qdir;
	}
	words[n] = NULL;
	return 0;
}

/* Whether path lies below dir (a '/' after it), dir "" being anything
 * relative. */
static bool below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (!n)
		return path[0] != '/' && path[0] != '~';
	if (!strcmp(dir, "/"))
		return path[0] == '/' && path[1];
	return !strncmp(path, dir, n) && path[n] == '/' && path[n + 1];
}

/* get over ssh: the far root is the deepest directory holding every
 * PATH as typed (the far shell expands its leading ~); each is asked for
 * below it. */
static int ssh_pull_root(struct send_cli *o, struct lr_err *err)
{
	char *slash;
	unsigned i;

	for (i = 0; i < o->c.npaths; i++) {
		if (normal_path(o->raw[i], o->names[i], sizeof(o->names[i])))
			return lr_err_set(err, -ENAMETOOLONG, "%s: too long",
					  o->raw[i]);
		if (o->names[i][0] == '~' && !strchr(o->names[i], '/'))
			return lr_err_set(err, -EINVAL,
					  "'%s': name a file or directory "
					  "below it",
					  o->names[i]);
	}
	snprintf(o->root, sizeof(o->root), "%s", o->names[0]);
	slash = strrchr(o->root, '/');
	if (!slash)
		o->root[0] = '\0';
	else
		slash[slash == o->root ? 1 : 0] = '\0';
	for (;;) {
		for (i = 0; i < o->c.npaths && below(o->names[i], o->root); i++)
			;
		if (i == o->c.npaths)
			break;
		slash = strrchr(o->root, '/');
		if (!o->root[0] || !strcmp(o->root, "/"))
			return lr_err_set(err, -EINVAL,
					  "over ssh one get takes paths below "
					  "one directory: '%s' and '%s' are "
					  "not; run two",
					  o->raw[0], o->raw[i]);
		if (!slash)
			o->root[0] = '\0';
		else
			slash[slash == o->root ? 1 : 0] = '\0';
	}
	for (i = 0; i < o->c.npaths; i++) {
		size_t k = strlen(o->root);

		o->c.paths[i] = send_clean_remote(
			o->names[i] +
			(k ? k + (strcmp(o->root, "/") ? 1 : 0) : 0));
		if (!o->c.paths[i][0])
			return lr_err_set(err, -EINVAL,
					  "'%s': name a file or directory "
					  "below it",
					  o->raw[i]);
	}
	return 0;
}

/* get over ssh: the far end is `linerate serve --ssh --read-only --root
 * ROOT` (ROOT "." for paths relative to the home). */
static int ssh_pull_words(struct send_cli *o, const char **words, char *qroot,
			  size_t cap, struct lr_err *err)
{
	unsigned n = 0;

	if (ssh_pull_root(o, err) || shell_safe(o->root, err))
		return -EINVAL;
	if (ssh_shell_quote(o->root[0] ? o->root : ".", true, qroot, cap))
		return lr_err_set(err, -ENAMETOOLONG, "%s: too long", o->root);
	words[n++] = "serve";
	words[n++] = "--ssh";
	words[n++] = "--read-only";
	if (o->c.cipher_wish == CRYPTO_NONE)
		words[n++] = "--allow-plaintext";
	words[n++] = "--root";
	words[n++] = qroot;
	words[n] = NULL;
	return 0;
}

/* Start the far end and point the transfer at it. */
int send_ssh_begin(struct send_cli *o, struct sshcli *sc, struct lr_err *err)
{
	const char *words[10];
	char qdir[2 * XFER_MAX_PATH + 8];
	int r;

	if (o->pull) {
		if (ssh_pull_words(o, words, qdir, sizeof(qdir), err))
			return -EINVAL;
	} else if (ssh_push_words(o, words, qdir, sizeof(qdir), err)) {
		return -EINVAL;
	}
	r = sshcli_start(sc, &o->ssh, &o->ra, words, o->psk, err);
	if (r)
		return r;
	sc->ends_itself = !o->pull; /* recv --ssh serves one push */
	o->have_token = true;
	o->c.psk = o->psk;
	o->c.host = sc->addr;
	o->c.port = sc->port;
	if (!o->pull)
		o->c.paths[0] = "";
	if (!o->own_connect_timeout)
		o->c.connect_timeout_ms = SSHCLI_CONNECT_MS;
	/* through ssh every stream shares one ssh channel: one is enough */
	if (sc->relay && !o->net.streams)
		o->c.streams = 1;
	if (sc->relay) { /* a loopback port: -4/-6 and -B were for the far end */
		o->c.family = AF_UNSPEC;
		o->c.bind_addr = NULL;
	}
	o->c.link_host = sshcli_link_host(sc, &o->ra);
	return 0;
}

/* The fallback: nothing listens on HOST's port, so the far end starts
 * over ssh, said in one line (--no-ssh: no fallback). Not for a path
 * written absolute or with ~: below a server's root it would have been
 * another place than over ssh, so the user says which (USER@ or -e). */
bool send_fall_back(struct send_cli *o)
{
	unsigned i, n = o->pull ? o->c.npaths : 1;

	/* a port given names a server: nothing to start */
	if (o->via_ssh || o->ssh.no_ssh || o->net.have_port)
		return false;
	for (i = 0; i < n; i++) {
		const char *p = o->pull ? o->raw[i] : o->ra.path;

		if (p[0] == '/' || p[0] == '~') {
			report_msg(
				stderr,
				"no linerate server on %s:%u; over "
				"ssh '%s' would be that path of the far "
				"machine, not one below a server's root: "
				"write USER@%s: or -e to start one over ssh\n",
				o->c.host, (unsigned)o->c.port, p, o->c.host);
			return false;
		}
	}
	report_msg(stderr,
		   "no linerate server on %s:%u; starting one over "
		   "ssh\n",
		   o->c.host, (unsigned)o->c.port);
	o->via_ssh = true;
	return true;
}
