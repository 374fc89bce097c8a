// SPDX-License-Identifier: MIT
/*
 * --files-from: a set of paths (open addressing over an array of
 * entries), each marked listed, implied (the parent of a listed one) or
 * both. See filelist.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filelist.h"
#include "filter.h"
#include "banned.h"

#define K_LISTED  1u
#define K_IMPLIED 2u

struct entry {
	char *path;
	uint32_t len;
	uint8_t kind;
};

struct lr_list {
	struct entry *e;
	uint32_t n, cap;
	uint32_t *slot; /* entry index + 1, 0 free */
	uint32_t nslot; /* a power of two, > 2 * n */
	uint32_t *order;
	uint32_t norder;
	bool recurse, root;
};

static uint64_t hash(const char *p, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
	return h;
}

/* The slot of path: its entry's, or the free one where it would go. */
static uint32_t *find(const struct lr_list *l, const char *p, size_t len)
{
	uint32_t mask = l->nslot - 1, i = (uint32_t)hash(p, len) & mask;

	for (;; i = (i + 1) & mask) {
		uint32_t s = l->slot[i];

		if (!s || (l->e[s - 1].len == len &&
			   !memcmp(l->e[s - 1].path, p, len)))
			return &l->slot[i];
	}
}

static int rehash(struct lr_list *l)
{
	uint32_t n = l->nslot ? l->nslot * 2 : 1024, i;
	uint32_t *old = l->slot, oldn = l->nslot;

	l->slot = calloc(n, sizeof(*l->slot));
	if (!l->slot) {
		l->slot = old;
		return -ENOMEM;
	}
	l->nslot = n;
	for (i = 0; i < oldn; i++)
		if (old[i]) {
			const struct entry *e = &l->e[old[i] - 1];

			*find(l, e->path, e->len) = old[i];
		}
	free(old);
	return 0;
}

static int grow(struct lr_list *l)
{
	uint32_t cap = l->cap ? l->cap * 2 : 256;
	struct entry *e;
	uint32_t *o;

	e = realloc(l->e, (size_t)cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	l->e = e;
	o = realloc(l->order, (size_t)cap * sizeof(*o));
	if (!o)
		return -ENOMEM;
	l->order = o;
	l->cap = cap;
	return 0;
}

/* Mark path kind, adding it when new: its index, or -errno. */
static int64_t mark(struct lr_list *l, const char *p, size_t len, uint8_t kind)
{
	uint32_t *s;
	char *copy;

	if ((uint64_t)(l->n + 1) * 2 >= l->nslot && rehash(l))
		return -ENOMEM;
	s = find(l, p, len);
	if (*s) {
		l->e[*s - 1].kind |= kind;
		return *s - 1;
	}
	if (l->n >= FILELIST_MAX_PATHS)
		return -E2BIG;
	if (l->n == l->cap && grow(l))
		return -ENOMEM;
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, p, len);
	copy[len] = '\0';
	l->e[l->n] = (struct entry){ copy, (uint32_t)len, kind };
	*s = ++l->n;
	return l->n - 1;
}

/* path as rsync reads a --files-from entry, into out: leading slashes,
 * "." components and empty ones dropped. Its length, or -EINVAL. */
static int64_t normalize(const char *p, size_t len, char *out, const char **why)
{
	size_t i = 0, o = 0;

	while (i < len) {
		size_t j = i, n;

		while (j < len && p[j] != '/')
			j++;
		n = j - i;
		if (n == 2 && p[i] == '.' && p[i + 1] == '.') {
			*why = "a \"..\" component (paths stay below the "
			       "source directory)";
			return -EINVAL;
		}
		if (n && !(n == 1 && p[i] == '.')) {
			if (o + (o != 0) + n > FILELIST_MAX_PATH) {
				*why = "longer than 4,096 bytes";
				return -EINVAL;
			}
			if (o)
				out[o++] = '/';
			memcpy(out + o, p + i, n);
			o += n;
		}
		i = j + 1;
	}
	return (int64_t)o;
}

int list_add(struct lr_list **lp, const char *path, size_t len,
	     const char **why)
{
	char norm[FILELIST_MAX_PATH + 1];
	struct lr_list *l = *lp;
	int64_t n, idx;
	size_t k;

	if (!l) {
		l = *lp = calloc(1, sizeof(*l));
		if (!l)
			return -ENOMEM;
	}
	n = normalize(path, len, norm, why);
	if (n < 0)
		return (int)n;
	if (n == 0) {
		l->root = true;
		return 0;
	}
	idx = mark(l, norm, (size_t)n, K_LISTED);
	if (idx < 0) {
		*why = idx == -E2BIG ? "too many entries" : "out of memory";
		return (int)idx;
	}
	if (l->e[idx].kind & K_LISTED && !(l->e[idx].kind & 0x80)) {
		l->e[idx].kind |= 0x80; /* in order once */
		l->order[l->norder++] = (uint32_t)idx;
	}
	/* its parents, down to the first component */
	for (k = (size_t)n; k-- > 0;)
		if (norm[k] == '/') {
			idx = mark(l, norm, k, K_IMPLIED);
			if (idx < 0) {
				*why = "out of memory";
				return (int)idx;
			}
		}
	return 0;
}

/* How a list's text is read */
enum { TXT_LINES, TXT_NUL, TXT_WIRE };

/* One entry of a list's text, line lineno: skipped when blank or (but
 * as it travels) a comment. */
static int add_entry(struct lr_list **l, const char *p, size_t n, int how,
		     size_t lineno, struct lr_err *err)
{
	const char *why = NULL;
	int r;

	if (how == TXT_LINES && n && p[n - 1] == '\r')
		n--;
	if (!n || (how != TXT_WIRE && (p[0] == '#' || p[0] == ';')))
		return 0;
	r = list_add(l, p, n, &why);
	if (r)
		return lr_err_set(err, r, "entry %zu: %s", lineno,
				  why ? why : "refused");
	return 0;
}

static int add_text(struct lr_list **l, const char *buf, size_t len, int how,
		    struct lr_err *err)
{
	char sep = how == TXT_LINES ? '\n' : '\0';
	size_t i = 0, lineno = 0;
	int r;

	if (!*l) {
		*l = calloc(1, sizeof(**l));
		if (!*l)
			return lr_err_set(err, -ENOMEM, "out of memory");
	}
	while (i < len) {
		const char *end = memchr(buf + i, sep, len - i);
		size_t n = end ? (size_t)(end - (buf + i)) : len - i;

		r = add_entry(l, buf + i, n, how, ++lineno, err);
		if (r)
			return r;
		i += n + 1;
	}
	return 0;
}

int list_add_buf(struct lr_list **l, const char *buf, size_t len, bool from0,
		 struct lr_err *err)
{
	return add_text(l, buf, len, from0 ? TXT_NUL : TXT_LINES, err);
}

int list_add_wire(struct lr_list **l, const char *buf, size_t len,
		  struct lr_err *err)
{
	return add_text(l, buf, len, TXT_WIRE, err);
}

uint32_t list_bytes(const struct lr_list *l)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; l && i < l->norder; i++)
		n += l->e[l->order[i]].len + 1u;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

bool list_has_root(const struct lr_list *l)
{
	return l && l->root;
}

struct text_ctx {
	struct lr_list **l;
	bool from0;
};

static int parse_text(void *ctx, const char *buf, size_t len,
		      struct lr_err *err)
{
	struct text_ctx *c = ctx;

	return list_add_buf(c->l, buf, len, c->from0, err);
}

int list_read_file(struct lr_list **l, const char *path, bool from0,
		   struct lr_err *err)
{
	struct text_ctx c = { l, from0 };

	return filter_read_with(path, parse_text, &c, err);
}

void list_set_recurse(struct lr_list *l, bool on)
{
	if (l)
		l->recurse = on;
}

bool list_recurses(const struct lr_list *l)
{
	return l && l->recurse;
}

static uint8_t kind_of(const struct lr_list *l, const char *p, size_t len)
{
	uint32_t s;

	if (!l->nslot)
		return 0;
	s = *find(l, p, len);
	return s ? l->e[s - 1].kind : 0;
}

bool list_admits(const struct lr_list *l, const char *path, size_t len,
		 bool is_dir)
{
	uint8_t k;
	size_t i;

	if (!l)
		return true;
	k = kind_of(l, path, len);
	if (k & K_LISTED)
		return true;
	if ((k & K_IMPLIED) && is_dir)
		return true;
	if (!l->recurse)
		return false;
	if (l->root)
		return true;
	/* below a listed directory */
	for (i = len; i-- > 0;)
		if (path[i] == '/' && (kind_of(l, path, i) & K_LISTED))
			return true;
	return false;
}

uint32_t list_count(const struct lr_list *l)
{
	return l ? l->norder + (l->root ? 1 : 0) : 0;
}

const char *list_path(const struct lr_list *l, uint32_t i, size_t *len)
{
	const struct entry *e;

	if (l->root && i == l->norder) {
		*len = 0;
		return "";
	}
	e = &l->e[l->order[i]];
	*len = e->len;
	return e->path;
}

void list_free(struct lr_list *l)
{
	uint32_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		free(l->e[i].path);
	free(l->e);
	free(l->slot);
	free(l->order);
	free(l);
}
