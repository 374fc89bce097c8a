// SPDX-License-Identifier: MIT
/*
 * Filter rules (filter.h): parsed once into a matching mode, then tried
 * in order against each path. The matcher is a backtracking glob whose
 * `*` gives up as soon as the rest cannot match further on (a `*` that
 * reaches a `/` stops its own tries; a `**` that reaches the end stops
 * every try): a pattern's cost stays near pattern × path, whatever stars
 * a peer puts in it.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filelist.h"
#include "filter.h"
#include "fsio.h"
#include "banned.h"

/* Where a pattern is tried. */
enum where {
	W_WHOLE, /* anchored, or starting with "**": the whole path */
	W_LAST,	 /* no '/' nor "**": the last component */
	W_TAIL,	 /* a '/' but no "**": the last slashes + 1 components */
	W_EVERY, /* "**" inside: the path from any component on */
};

struct filter_rule {
	bool include, dir_only, literal, triple, slash_prefix;
	enum where where;
	unsigned slashes; /* W_TAIL */
	uint16_t text_len;
	char *text; /* as given: the rule as it travels */
	uint16_t len;
	char pat[]; /* what is matched */
};

enum { M_NO, M_YES, M_ABORT_ALL, M_ABORT_STARSTAR };

/* A POSIX class name at p ("alpha:]..."): its test, and its length up to
 * and including ":]"; 0 if none. */
static size_t posix_class(const char *p, const char *end, int c, bool *hit)
{
	static const struct {
		const char *name;
		int (*is)(int);
	} k[] = {
		{ "alnum", isalnum }, { "alpha", isalpha },
		{ "blank", isblank }, { "cntrl", iscntrl },
		{ "digit", isdigit }, { "graph", isgraph },
		{ "lower", islower }, { "print", isprint },
		{ "punct", ispunct }, { "space", isspace },
		{ "upper", isupper }, { "xdigit", isxdigit },
	};
	size_t i, n;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		n = strlen(k[i].name);
		if ((size_t)(end - p) >= n + 2 && !memcmp(p, k[i].name, n) &&
		    p[n] == ':' && p[n + 1] == ']') {
			*hit = c < 0x80 && k[i].is(c);
			return n + 2;
		}
	}
	return 0;
}

/* A set "[...]" at *pp (just past '['): whether c is in it; *pp moves
 * past the ']'. -1 for a set without its ']'. */
static int match_set(const char **pp, const char *end, unsigned char c)
{
	const char *p = *pp;
	bool neg = false, in = false, first = true;

	if (p < end && (*p == '!' || *p == '^')) {
		neg = true;
		p++;
	}
	while (p < end && (first || *p != ']')) {
		unsigned char lo = (unsigned char)*p, hi;
		bool hit;
		size_t n;

		first = false;
		if (lo == '[' && p + 1 < end && p[1] == ':' &&
		    (n = posix_class(p + 2, end, c, &hit))) {
			in |= hit;
			p += 2 + n;
			continue;
		}
		if (lo == '\\' && p + 1 < end)
			lo = (unsigned char)*++p;
		p++;
		hi = lo;
		if (p + 1 < end && *p == '-' && p[1] != ']') {
			p++;
			if (*p == '\\' && p + 1 < end)
				p++;
			hi = (unsigned char)*p++;
		}
		if (c >= lo && c <= hi)
			in = true;
	}
	if (p >= end)
		return -1;
	*pp = p + 1;
	return (in != neg) && c != '/';
}

/* The glob p..pe against t..te. */
static int wild(const char *p, const char *pe, const char *t, const char *te)
{
	for (; p < pe; p++, t++) {
		const char *q;
		int r;

		switch (*p) {
		case '?':
			if (t >= te || *t == '/')
				return t >= te ? M_ABORT_ALL : M_NO;
			break;
		case '*':
			if (p + 1 < pe && p[1] == '*') {
				while (p + 1 < pe && p[1] == '*')
					p++;
				for (;; t++) {
					r = wild(p + 1, pe, t, te);
					if (r != M_NO && r != M_ABORT_STARSTAR)
						return r;
					if (t >= te)
						return M_ABORT_ALL;
				}
			}
			for (;; t++) {
				r = wild(p + 1, pe, t, te);
				if (r != M_NO)
					return r;
				if (t >= te)
					return M_ABORT_ALL;
				if (*t == '/')
					return M_ABORT_STARSTAR;
			}
		case '[':
			if (t >= te)
				return M_ABORT_ALL;
			q = p + 1;
			r = match_set(&q, pe, (unsigned char)*t);
			if (r < 0) /* no ']': matches nothing, as in rsync */
				return M_ABORT_ALL;
			if (!r)
				return M_NO;
			p = q - 1;
			break;
		case '\\':
			if (p + 1 < pe)
				p++;
			/* fall through */
		default:
			if (t >= te)
				return M_ABORT_ALL;
			if (*t != *p)
				return M_NO;
		}
	}
	return t == te ? M_YES : M_NO;
}

static bool match_at(const struct filter_rule *r, const char *pat, size_t plen,
		     const char *t, size_t tlen)
{
	if (r->literal)
		return plen == tlen && !memcmp(pat, t, tlen);
	return wild(pat, pat + plen, t, t + tlen) == M_YES;
}

/* The pattern (plen bytes of r->pat) against path, where r says. */
static bool rule_matches(const struct filter_rule *r, size_t plen,
			 const char *path, size_t len)
{
	char buf[4096 + 2];
	size_t i, n;

	switch (r->where) {
	case W_WHOLE:
		if (!r->slash_prefix)
			return match_at(r, r->pat, plen, path, len);
		/* "**..." unanchored: the path with a '/' before it, so that
		 * "**" + "/x" finds x at the top too */
		if (len + 1 >= sizeof(buf))
			return false;
		buf[0] = '/';
		memcpy(buf + 1, path, len);
		return match_at(r, r->pat, plen, buf, len + 1);
	case W_LAST:
		for (i = len; i > 0 && path[i - 1] != '/'; i--)
			;
		return match_at(r, r->pat, plen, path + i, len - i);
	case W_TAIL:
		for (i = len, n = 0; i > 0; i--)
			if (path[i - 1] == '/' && ++n > r->slashes)
				break;
		if (n < r->slashes)
			return false;
		return match_at(r, r->pat, plen, path + i, len - i);
	case W_EVERY:
		for (i = 0; i <= len; i++)
			if ((i == 0 || path[i - 1] == '/') &&
			    match_at(r, r->pat, plen, path + i, len - i))
				return true;
		return false;
	}
	return false;
}

bool filter_excluded(const struct lr_filter *f, const char *path, size_t len,
		     bool is_dir)
{
	unsigned i;

	if (!f)
		return false;
	if (f->list && !list_admits(f->list, path, len, is_dir))
		return true;
	for (i = 0; i < f->n; i++) {
		const struct filter_rule *r = f->rule[i];

		if (r->dir_only && !is_dir)
			continue;
		if (rule_matches(r, r->len, path, len) ||
		    (r->triple && is_dir &&
		     rule_matches(r, r->len - 3u, path, len)))
			return !r->include;
	}
	return false;
}

/* How r's pattern (r->pat, r->len, already without its anchor and
 * trailing '/') is tried. */
static void rule_mode(struct filter_rule *r, bool anchored)
{
	bool wild2 = memmem(r->pat, r->len, "**", 2) != NULL;
	unsigned i, slashes = 0;

	for (i = 0; i < r->len; i++)
		slashes += r->pat[i] == '/';
	r->literal = !memchr(r->pat, '*', r->len) &&
		     !memchr(r->pat, '?', r->len) &&
		     !memchr(r->pat, '[', r->len);
	r->slashes = slashes;
	r->slash_prefix = !anchored && r->len >= 2 && !memcmp(r->pat, "**", 2);
	if (anchored || r->slash_prefix)
		r->where = W_WHOLE;
	else if (wild2)
		r->where = W_EVERY;
	else
		r->where = slashes ? W_TAIL : W_LAST;
}

static bool pattern_ok(const char *pat, size_t len, const char **why)
{
	size_t i;

	if (!len || len > FILTER_MAX_PATTERN) {
		*why = len ? "longer than 1024 bytes" : "empty";
		return false;
	}
	for (i = 0; i < len; i++)
		if ((unsigned char)pat[i] < 0x20 || pat[i] == 0x7f) {
			*why = "a control character in it";
			return false;
		}
	return true;
}

static struct filter_rule *rule_new(bool include, const char *pat, size_t len)
{
	size_t n = len;
	bool anchored = false, dir_only = false, triple = false;
	struct filter_rule *r;

	if (pat[0] == '/') {
		anchored = true;
		pat++;
		n--;
	}
	while (n && pat[n - 1] == '/') {
		dir_only = true;
		n--;
	}
	if (n >= 4 && !memcmp(pat + n - 4, "/***", 4)) {
		triple = true;
		/* kept as the directory's contents (two stars); tried
		 * without its last three bytes for the directory itself */
		n--;
	}
	r = calloc(1, sizeof(*r) + n + 1);
	if (!r)
		return NULL;
	r->text = malloc(len);
	if (!r->text) {
		free(r);
		return NULL;
	}
	memcpy(r->text, pat - anchored, len);
	r->text_len = (uint16_t)len;
	memcpy(r->pat, pat, n);
	r->len = (uint16_t)n;
	r->include = include;
	r->dir_only = dir_only;
	r->triple = triple;
	rule_mode(r, anchored);
	return r;
}

int filter_add(struct lr_filter *f, bool include, const char *pat, size_t len,
	       struct lr_err *err)
{
	struct filter_rule *r, **grown;
	const char *why;

	if (!pattern_ok(pat, len, &why))
		return lr_err_set(err, -EINVAL, "filter pattern: %s", why);
	if (f->n >= FILTER_MAX_RULES)
		return lr_err_set(err, -E2BIG, "more than %u filter rules",
				  FILTER_MAX_RULES);
	if (f->n == f->cap) {
		unsigned cap = f->cap ? f->cap * 2 : 16;

		grown = realloc(f->rule, cap * sizeof(*grown));
		if (!grown)
			return lr_err_set(err, -ENOMEM, "out of memory");
		f->rule = grown;
		f->cap = cap;
	}
	r = rule_new(include, pat, len);
	if (!r)
		return lr_err_set(err, -ENOMEM, "out of memory");
	if (!r->len) {
		free(r->text);
		free(r);
		return lr_err_set(err, -EINVAL,
				  "filter pattern '%.*s' matches nothing",
				  (int)len, pat);
	}
	f->rule[f->n++] = r;
	return 0;
}

static void filter_clear(struct lr_filter *f)
{
	while (f->n) {
		struct filter_rule *r = f->rule[--f->n];

		free(r->text);
		free(r);
	}
}

int filter_add_arg(struct lr_filter *f, bool include, const char *arg,
		   struct lr_err *err)
{
	if (!strcmp(arg, "!")) {
		filter_clear(f);
		return 0;
	}
	if ((arg[0] == '+' || arg[0] == '-') && arg[1] == ' ') {
		include = arg[0] == '+';
		arg += 2;
	}
	return filter_add(f, include, arg, strlen(arg), err);
}

int filter_add_lines(struct lr_filter *f, bool include, const char *buf,
		     size_t len, struct lr_err *err)
{
	char line[FILTER_MAX_PATTERN + 3];
	size_t i = 0, lineno = 0;

	while (i < len) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - buf) - i : len - i;
		size_t next = i + n + (nl ? 1 : 0);
		int r;

		lineno++;
		if (n && buf[i + n - 1] == '\r')
			n--;
		if (n > FILTER_MAX_PATTERN + 2)
			return lr_err_set(err, -EINVAL,
					  "line %zu: longer than %u bytes",
					  lineno, FILTER_MAX_PATTERN);
		memcpy(line, buf + i, n);
		line[n] = 0;
		i = next;
		if (!n || line[0] == '#' || line[0] == ';')
			continue;
		if (memchr(line, 0, n))
			return lr_err_set(err, -EINVAL,
					  "line %zu: a NUL byte in it", lineno);
		r = filter_add_arg(f, include, line, err);
		if (r && err) {
			char msg[LR_ERR_MSG];

			snprintf(msg, sizeof(msg), "%s", err->msg);
			return lr_err_set(err, r, "line %zu: %s", lineno, msg);
		}
		if (r)
			return r;
	}
	return 0;
}

int filter_read_with(const char *path, filter_parse_fn parse, void *ctx,
		     struct lr_err *err)
{
	size_t len = 0;
	char *buf = NULL;
	int r = fsio_read_small(path, 64u << 20, &buf, &len);

	if (r == -EFBIG)
		return lr_err_set(err, r, "%s: larger than 64 MiB", path);
	if (r)
		return lr_err_setc(err, r, "%s", path);
	r = parse(ctx, buf, len, err);
	if (r && err) {
		char msg[LR_ERR_MSG];

		snprintf(msg, sizeof(msg), "%s", err->msg);
		lr_err_set(err, r, "%s: %s", path, msg);
	}
	free(buf);
	return r;
}

struct rules_ctx {
	struct lr_filter *f;
	bool include;
};

static int parse_rules(void *ctx, const char *buf, size_t len,
		       struct lr_err *err)
{
	struct rules_ctx *c = ctx;

	return filter_add_lines(c->f, c->include, buf, len, err);
}

int filter_read_file(struct lr_filter *f, bool include, const char *path,
		     struct lr_err *err)
{
	struct rules_ctx c = { f, include };

	return filter_read_with(path, parse_rules, &c, err);
}

const char *filter_rule_text(const struct lr_filter *f, unsigned i, size_t *len,
			     bool *include)
{
	*len = f->rule[i]->text_len;
	*include = f->rule[i]->include;
	return f->rule[i]->text;
}

void filter_free(struct lr_filter *f)
{
	filter_clear(f);
	free(f->rule);
	f->rule = NULL;
	f->cap = 0;
	list_free(f->list);
	f->list = NULL;
}
