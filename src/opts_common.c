// SPDX-License-Identifier: MIT
/* The options the network subcommands share, in one table. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/units.h"
#include "opts.h"
#include "opts_common.h"
#include "core/cipher.h"
#include "banned.h"

struct common_opt {
	struct option lo;
	unsigned bit; /* enum opts_common_bit */
};

static const struct common_opt common_opts[] = {
	{ { "port", required_argument, NULL, 'p' }, OPTS_PORT },
	{ { "parallel", required_argument, NULL, 'P' }, OPTS_PARALLEL },
	{ { "ipv4", no_argument, NULL, '4' }, OPTS_FAMILY },
	{ { "ipv6", no_argument, NULL, '6' }, OPTS_FAMILY },
	{ { "bind", required_argument, NULL, 'B' }, OPTS_BIND },
	{ { "token-file", required_argument, NULL, OPTS_ID_TOKEN_FILE },
	  OPTS_TOKEN },
	{ { "cipher", required_argument, NULL, OPTS_ID_CIPHER }, OPTS_CIPHER },
};

#define N_COMMON (sizeof(common_opts) / sizeof(common_opts[0]))

/* getopt_long's tables for one command: the common entries it takes,
 * then its own. */
struct opts_parser {
	const struct opts_common_spec *spec;
	struct option longs[OPTS_MAX_LONG + 1];
	char shorts[3 * OPTS_MAX_LONG + 2];
};

/* The entry of getopt value c, when the command takes it. */
static const struct common_opt *find(const struct opts_common_spec *spec, int c)
{
	size_t i;

	for (i = 0; i < N_COMMON; i++)
		if (common_opts[i].lo.val == c &&
		    (common_opts[i].bit & spec->take))
			return &common_opts[i];
	return NULL;
}

/* Append one option's letter (and ':' when it takes a value). */
static void add_short(char *s, size_t *n, size_t cap, int val, int has_arg)
{
	if (val <= 0 || val > 127 || *n + 3 > cap)
		return;
	s[(*n)++] = (char)val;
	if (has_arg == required_argument)
		s[(*n)++] = ':';
	s[*n] = '\0';
}

/* The tables; -E2BIG when a command has more options than they hold (a
 * mistake in the command's tables, never the user's). */
static int parser_init(struct opts_parser *p,
		       const struct opts_common_spec *spec,
		       const char *own_shorts, const struct option *own_longs)
{
	size_t i, nl = 0, ns = 1;

	memset(p, 0, sizeof(*p));
	p->spec = spec;
	p->shorts[0] = ':'; /* report a missing value as ':' */
	for (i = 0; i < N_COMMON && nl < OPTS_MAX_LONG; i++) {
		if (!(common_opts[i].bit & spec->take))
			continue;
		p->longs[nl++] = common_opts[i].lo;
		add_short(p->shorts, &ns, sizeof(p->shorts),
			  common_opts[i].lo.val, common_opts[i].lo.has_arg);
	}
	for (i = 0; own_longs[i].name; i++) {
		if (nl == OPTS_MAX_LONG)
			return -E2BIG;
		p->longs[nl++] = own_longs[i];
	}
	if (strlen(own_shorts) >= sizeof(p->shorts) - ns)
		return -E2BIG;
	memcpy(p->shorts + ns, own_shorts, strlen(own_shorts) + 1);
	return 0;
}

static void common_init(struct opts_common *o)
{
	memset(o, 0, sizeof(*o));
	o->family = AF_UNSPEC;
}

/* Option c with value arg: 0 when it is a common one the command takes
 * (stored in o), 1 when it is the command's own, -EINVAL when its value
 * is wrong. */
static int common_take(const struct opts_parser *p, int c, const char *arg,
		       struct opts_common *o, struct lr_err *err)
{
	const struct common_opt *e = find(p->spec, c);
	uint64_t v;

	if (!e)
		return 1;
	switch (e->lo.val) {
	case 'p':
		if (opts_uint("-p", arg, p->spec->min_port, 65535, &v, err))
			return -EINVAL;
		o->port = (uint16_t)v;
		o->have_port = true;
		return 0;
	case 'P':
		if (opts_uint("-P", arg, 1, p->spec->max_streams, &v, err)) {
			/* scp's -P is its port: say where that goes */
			if (p->spec->ssh_hint &&
			    !units_parse_uint(arg, 1, 65535, &v)) {
				size_t n = strlen(err->msg);

				snprintf(err->msg + n, sizeof(err->msg) - n,
					 " (-P is the number of streams; "
					 "for ssh's port write -e 'ssh -p "
					 "%s')",
					 arg);
			}
			return -EINVAL;
		}
		o->streams = (unsigned)v;
		return 0;
	case '4': o->family = AF_INET; return 0;
	case '6': o->family = AF_INET6; return 0;
	case 'B': o->bind_addr = arg; return 0;
	case OPTS_ID_TOKEN_FILE: o->token_file = arg; return 0;
	case OPTS_ID_CIPHER: o->cipher = arg; return 0;
	}
	return 1;
}

int opts_parse(const struct opts_common_spec *spec, const char *own_shorts,
	       const struct option *own_longs, opts_own_fn own, void *ctx,
	       int argc, char **argv, struct opts_common *net,
	       struct lr_err *err)
{
	struct opts_parser p;
	int c, r;

	common_init(net);
	if (parser_init(&p, spec, own_shorts, own_longs))
		return lr_err_set(err, -EINVAL,
				  "more options than OPTS_MAX_LONG (%d)",
				  OPTS_MAX_LONG);
	optind = 1;
	while ((c = getopt_long(argc, argv, p.shorts, p.longs, NULL)) != -1) {
		r = common_take(&p, c, optarg, net, err);
		if (r > 0)
			r = own(c, argv, ctx, err);
		if (r)
			return r > 0 ? 1 : -EINVAL;
	}
	return 0;
}

void opts_common_addr(const struct opts_common *n, uint16_t dflt,
		      uint16_t *port, int *family, const char **bind_addr)
{
	*port = n->have_port ? n->port : dflt;
	*family = n->family;
	if (bind_addr)
		*bind_addr = n->bind_addr;
}

int opts_cipher_wish(const struct opts_common *o, bool allow_none,
		     uint8_t *wish, struct lr_err *err)
{
	enum crypto_cipher c;

	*wish = CRYPTO_CIPHER_AUTO;
	if (!o->cipher || !strcmp(o->cipher, "auto"))
		return 0;
	if (crypto_cipher_parse(o->cipher, &c) ||
	    (!allow_none && c == CRYPTO_NONE))
		return lr_err_set(err, -EINVAL, "--cipher '%s': use auto, %s",
				  o->cipher,
				  allow_none ? "aes-256-gcm, chacha20-poly1305 "
					       "or none"
					     : "aes-256-gcm or "
					       "chacha20-poly1305");
	*wish = (uint8_t)c;
	return 0;
}

void opts_env_token_hint(const struct opts_common *net, struct lr_err *err)
{
	const char *env = getenv("LINERATE_TOKEN");
	size_t n = strlen(err->msg);

	if (net->token_file || !env || !*env ||
	    !strstr(err->msg, "has no token"))
		return;
	snprintf(err->msg + n, sizeof(err->msg) - n,
		 "; the token came from LINERATE_TOKEN in your environment: "
		 "`env -u LINERATE_TOKEN linerate ...` (or unset it) connects "
		 "without one");
}

/* Whether letter is in getopt's syntax s as an option (not a ':'), and
 * what it takes there. */
static bool short_has(const char *s, int letter, int *has_arg)
{
	size_t i;

	for (i = 0; s[i]; i++) {
		if (s[i] == ':')
			continue;
		if (s[i] != letter)
			continue;
		*has_arg = s[i + 1] != ':'   ? no_argument
			   : s[i + 2] == ':' ? optional_argument
					     : required_argument;
		return true;
	}
	return false;
}

/* Add one entry when there is room; the count either way. */
static size_t entry_add(struct opts_entry *out, size_t n, size_t cap,
			int letter, const char *name, int has_arg)
{
	if (n < cap) {
		out[n].letter = letter;
		out[n].name = name;
		out[n].has_arg = has_arg;
	}
	return n + 1;
}

/* The letters of s that no long option of p carries. */
static size_t short_only(const struct opts_parser *p, struct opts_entry *out,
			 size_t n, size_t cap)
{
	const char *s = p->shorts;
	size_t i, j;
	int has_arg;

	for (i = 0; s[i]; i++) {
		if (s[i] == ':')
			continue;
		for (j = 0; p->longs[j].name; j++)
			if (p->longs[j].val == s[i])
				break;
		if (!p->longs[j].name && short_has(s, s[i], &has_arg))
			n = entry_add(out, n, cap, s[i], NULL, has_arg);
	}
	return n;
}

size_t opts_entries(const struct cmd_opts *t, struct opts_entry *out,
		    size_t cap)
{
	static const struct opts_common_spec none = { 0 };
	struct opts_parser p;
	size_t i, n = 0;
	int letter, has_arg;

	if (parser_init(&p, t->common ? t->common : &none, t->shorts, t->longs))
		return 0;
	for (i = 0; p.longs[i].name; i++) {
		letter = p.longs[i].val;
		if (letter <= 0 || letter > 127 ||
		    !short_has(p.shorts + 1, letter, &has_arg))
			letter = 0;
		n = entry_add(out, n, cap, letter, p.longs[i].name,
			      p.longs[i].has_arg);
	}
	return short_only(&p, out, n, cap);
}
