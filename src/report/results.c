// SPDX-License-Identifier: MIT
/* Saved runs: the line --save appends, and linerate results (the table,
 * the JSON list, --compare). One JSON object a line; a line that is not a
 * saved run is named and skipped, never the end of the others. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report_int.h"
#include "banned.h"

/* What says a line is one of ours (and its layout's version): the
 * writer puts it first and the id second, as REPORT_SAVED_PREFIX says. */
#define SAVED_FORMAT "linerate run 1"

/* The length of the UTF-8 sequence at s, 0 when it is not one. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] < 0x80		   ? 1
		   : (s[0] & 0xe0) == 0xc0 ? 2
		   : (s[0] & 0xf0) == 0xe0 ? 3
		   : (s[0] & 0xf8) == 0xf0 ? 4
					   : 0;
	size_t i;

	if (n == 2 && s[0] < 0xc2)
		return 0; /* overlong */
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

bool report_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	for (; *p; p += n)
		if (!(n = utf8_len(p)))
			return false;
	return true;
}

/* A JSON string of s with each byte that is not UTF-8 made '?'. */
static cJSON *text_json(const char *s)
{
	char *c = strdup(s ? s : "");
	unsigned char *p = (unsigned char *)c;
	cJSON *o;
	size_t n;

	if (!c)
		return NULL;
	for (; *p; p += n)
		if (!(n = utf8_len(p))) {
			*p = '?';
			n = 1;
		}
	o = cJSON_CreateString(c);
	free(c);
	return o;
}

/* One end's facts. */
static cJSON *facts_json(const struct proto_probe_result *p, double cores,
			 const char *host, const char *kernel)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	if (host)
		cJSON_AddItemToObject(o, "host", text_json(host));
	if (kernel)
		cJSON_AddStringToObject(o, "kernel", kernel);
	if (!p)
		return o;
	cJSON_AddStringToObject(o, "cpu_model", p->model);
	report__add_num(o, "cores_usable", cores);
	cJSON_AddStringToObject(o, "governor", p->governor);
	cJSON_AddBoolToObject(o, "aes", p->aes);
	cJSON_AddStringToObject(o, "storage", p->storage);
	cJSON_AddStringToObject(o, "congestion_control", p->cc);
	return o;
}

static cJSON *link_json(const struct link_info *l)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "interface", l->ifname);
	cJSON_AddStringToObject(o, "kind",
				l->wireless	? "wifi"
				: l->loopback	? "loopback"
				: l->virtual_if ? "virtual"
						: "ethernet");
	report__add_num(o, "speed_bps", (double)l->speed_bps);
	report__add_num(o, "mtu", l->mtu);
	return o;
}

/* The most time samples a saved run keeps (a day's bench at one interval
 * a second would be a line of hundreds of MB): evenly spaced. */
#define SAVED_MAX_SAMPLES 600

/* Whether an event is of kind k. */
static bool event_is(const cJSON *ev, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(ev, "event");

	return cJSON_IsString(v) && !strcmp(v->valuestring, k);
}

/* Of arr's items (those of event kind only, when kind is set), at most
 * max evenly spaced, the last one kept; with drop, events of that kind
 * go. */
static void thin(cJSON *arr, int max, const char *kind, const char *drop)
{
	cJSON *it, *next;
	int n = 0, i = 0, kept = 0;

	if (!arr)
		return;
	for (it = arr->child; it; it = it->next)
		n += !kind || event_is(it, kind);
	for (it = arr->child; it; it = next) {
		next = it->next;
		if (drop && event_is(it, drop)) {
			cJSON_Delete(cJSON_DetachItemViaPointer(arr, it));
			continue;
		}
		if (kind && !event_is(it, kind))
			continue;
		/* item i starts a new 1/max-th of them, or is the last */
		if (n <= max || (long)i * max / n >= kept || i == n - 1)
			kept++;
		else
			cJSON_Delete(cJSON_DetachItemViaPointer(arr, it));
		i++;
	}
}

/* The run's JSON: one document, or JSON lines (a transfer's events) made
 * an object {"events": [...]}. NULL when it is neither. */
static cJSON *run_json(const char *text)
{
	const char *end = NULL, *p = text, *nl;
	cJSON *doc = cJSON_ParseWithOpts(text, &end, 1);
	cJSON *o, *events;

	if (doc) {
		thin(cJSON_GetObjectItemCaseSensitive(doc, "intervals"),
		     SAVED_MAX_SAMPLES, NULL, NULL);
		return doc;
	}
	o = cJSON_CreateObject();
	events = o ? cJSON_AddArrayToObject(o, "events") : NULL;
	if (!events) {
		cJSON_Delete(o);
		return NULL;
	}
	for (; *p; p = nl ? nl + 1 : p + strlen(p)) {
		char *line;
		cJSON *ev;

		nl = strchr(p, '\n');
		line = strndup(p, nl ? (size_t)(nl - p) : strlen(p));
		ev = line && line[0] ? cJSON_Parse(line) : NULL;
		free(line);
		if (ev)
			cJSON_AddItemToArray(events, ev);
	}
	/* no per-file events (the end counts them), progress thinned */
	thin(events, SAVED_MAX_SAMPLES, "progress", "file");
	return o;
}

static cJSON *summary_json(const struct report_saved_run *r)
{
	cJSON *s = cJSON_CreateObject();

	if (!s)
		return NULL;
	cJSON_AddStringToObject(s, "direction", r->direction);
	report__add_num(s, "bytes_per_second",
			report__json_num(r->bytes_per_second));
	report__add_num(s, "bytes", (double)r->bytes);
	report__add_num(s, "seconds", report__json_num(r->seconds));
	if (r->cpu_s_per_gb[0] >= 0)
		report__add_num(s, "cpu_seconds_per_gb_here",
				report__json_num(r->cpu_s_per_gb[0]));
	if (r->cpu_s_per_gb[1] >= 0)
		report__add_num(s, "cpu_seconds_per_gb_there",
				report__json_num(r->cpu_s_per_gb[1]));
	cJSON_AddStringToObject(s, "cipher", r->cipher ? r->cipher : "");
	return s;
}

char *report_saved_line(const struct report_saved_run *r)
{
	cJSON *o = cJSON_CreateObject(), *args, *facts, *far;
	char when[32], *txt, *line = NULL;
	struct tm tm;
	time_t t = (time_t)r->time;
	int i;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "format", SAVED_FORMAT);
	report__add_num(o, "id", r->id);
	cJSON_AddStringToObject(o, "label", r->label);
	if (gmtime_r(&t, &tm) &&
	    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		cJSON_AddStringToObject(o, "time", when);
	report__add_num(o, "unix_time", (double)r->time);
	cJSON_AddStringToObject(o, "command", r->command);
	args = cJSON_AddArrayToObject(o, "arguments");
	for (i = 0; args && i < r->argc; i++)
		cJSON_AddItemToArray(args, text_json(r->argv[i]));
	cJSON_AddItemToObject(o, "summary", summary_json(r));
	facts = cJSON_AddObjectToObject(o, "facts");
	if (facts) {
		cJSON_AddItemToObject(facts, "here",
				      facts_json(r->local, r->local_cores,
						 r->nodename, r->kernel));
		far = facts_json(r->remote, r->remote_cores, r->host, NULL);
		cJSON_AddItemToObject(facts, "there", far);
		if (r->link)
			cJSON_AddItemToObject(facts, "link",
					      link_json(r->link));
	}
	cJSON_AddItemToObject(o, "run", run_json(r->run ? r->run : ""));
	txt = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (txt && (line = malloc(strlen(txt) + 2)))
		snprintf(line, strlen(txt) + 2, "%s\n", txt);
	cJSON_free(txt);
	return line;
}

/* A run of a results file, as the list and the comparison use it. */
struct saved {
	unsigned id;
	const char *label, *command, *direction, *host, *cipher;
	double bps, here, there; /* there, here: CPU s/GB, < 0 unknown */
	int64_t time;
};

static const char *str_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_of(const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* One line read: 0 with *s filled (pointing into doc), or why not. */
static const char *saved_of(const cJSON *doc, struct saved *s)
{
	const cJSON *sum, *facts, *there;
	const char *fmt;
	double id;

	if (!cJSON_IsObject(doc))
		return "not a JSON object";
	fmt = str_of(doc, "format");
	if (!fmt)
		return "not a saved run (no \"format\": written by another "
		       "tool?)";
	if (strcmp(fmt, SAVED_FORMAT))
		return "a saved run of another version of linerate";
	sum = cJSON_GetObjectItemCaseSensitive(doc, "summary");
	id = num_of(doc, "id", -1);
	s->label = str_of(doc, "label");
	s->command = str_of(doc, "command");
	s->direction = sum ? str_of(sum, "direction") : NULL;
	s->bps = sum ? num_of(sum, "bytes_per_second", -1) : -1;
	if (id < 1 || id > 1e9 || !s->label || !s->command || !s->direction ||
	    s->bps < 0)
		return "a saved run with a field missing or wrong";
	s->id = (unsigned)id;
	s->here = num_of(sum, "cpu_seconds_per_gb_here", -1);
	s->there = num_of(sum, "cpu_seconds_per_gb_there", -1);
	s->cipher = str_of(sum, "cipher");
	s->time = (int64_t)num_of(doc, "unix_time", 0);
	facts = cJSON_GetObjectItemCaseSensitive(doc, "facts");
	there = facts ? cJSON_GetObjectItemCaseSensitive(facts, "there") : NULL;
	s->host = there ? str_of(there, "host") : NULL;
	return NULL;
}

/* The runs of text: docs[i] parsed (freed by runs_free), runs[i] read
 * from them; bad lines named on warn (NULL: silently skipped). */
struct runs {
	cJSON **docs;
	struct saved *s;
	size_t n, cap;
};

static void runs_free(struct runs *rs)
{
	size_t i;

	for (i = 0; i < rs->n; i++)
		cJSON_Delete(rs->docs[i]);
	free(rs->docs);
	free(rs->s);
}

static int runs_add(struct runs *rs, cJSON *doc, const struct saved *s)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 16;
		cJSON **d = realloc(rs->docs, cap * sizeof(*d));
		struct saved *ns;

		if (!d)
			return -ENOMEM;
		rs->docs = d;
		ns = realloc(rs->s, cap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		rs->s = ns;
		rs->cap = cap;
	}
	rs->docs[rs->n] = doc;
	rs->s[rs->n++] = *s;
	return 0;
}

/* What results_read (src/results.h) makes of a run of NUL bytes:
 * modified UTF-8's NUL, never in UTF-8 text (as JSON is). */
#define SAVED_NUL "\xc0\x80"

/* The length of the line at p: to its newline or the end. */
static size_t line_len(const char *p)
{
	const char *nl = strchr(p, '\n');

	return nl ? (size_t)(nl - p) : strlen(p);
}

/* Whether the len bytes at p are blanks only. */
static bool line_blank(const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!strchr(" \t\r", p[i]))
			return false;
	return true;
}

/* The line of len bytes at p: NULL with *doc (the caller's to free) and
 * *s read from it, or why it is not a saved run (*doc NULL). */
static const char *line_run(const char *p, size_t len, cJSON **doc,
			    struct saved *s)
{
	const char *why;
	size_t i;

	*doc = NULL;
	for (i = 0; i + 1 < len; i++)
		if (!memcmp(p + i, SAVED_NUL, 2))
			return "holds a NUL byte (a crash's zero-filled "
			       "block?)";
	*doc = cJSON_ParseWithLength(p, len);
	if (!*doc)
		return "not JSON (cut short?)";
	why = saved_of(*doc, s);
	if (why) {
		cJSON_Delete(*doc);
		*doc = NULL;
	}
	return why;
}

static int runs_load(struct runs *rs, FILE *warn, const char *path,
		     const char *text)
{
	const char *p = text;
	unsigned line = 0;
	size_t len;

	memset(rs, 0, sizeof(*rs));
	for (; *p; p += len + (p[len] == '\n')) {
		struct saved s;
		const char *why;
		cJSON *doc;

		len = line_len(p);
		line++;
		if (line_blank(p, len))
			continue;
		why = line_run(p, len, &doc, &s);
		if (why) {
			if (warn)
				fprintf(warn, "%s: %s:%u: %s; skipped\n",
					report_prog(), path, line, why);
			continue;
		}
		if (runs_add(rs, doc, &s)) {
			cJSON_Delete(doc);
			return -ENOMEM;
		}
	}
	return 0;
}

static void fmt_cpu(char *buf, size_t cap, const struct saved *s)
{
	char a[16] = "-", b[16] = "-";

	if (s->here >= 0)
		snprintf(a, sizeof(a), "%.2f", s->here);
	if (s->there >= 0)
		snprintf(b, sizeof(b), "%.2f", s->there);
	snprintf(buf, cap, "%s / %s", a, b);
}

/* Characters (UTF-8 sequences) of s. */
static int chars_of(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	int n = 0;
	size_t k;

	for (; *p; p += k, n++)
		k = utf8_len(p) ? utf8_len(p) : 1;
	return n;
}

/* Text from the file (a label, a host, a name) in a column of width
 * characters: control bytes escaped, cut on a character with "~" at the
 * end when longer, padded. */
static void column(FILE *out, const char *s, int width)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "-");
	char buf[256];
	size_t o = 0, k;
	int n = 0, all = chars_of(s ? s : "-");

	for (; *p && n < (all > width ? width - 1 : width); p += k, n++) {
		k = utf8_len(p) ? utf8_len(p) : 1;
		if (o + k >= sizeof(buf) - 2)
			break;
		memcpy(buf + o, p, k);
		o += k;
	}
	if (all > width)
		buf[o++] = '~', n++;
	buf[o] = '\0';
	report_escaped(out, buf);
	fprintf(out, "%*s", width - n + 2, "");
}

static void list_human(FILE *out, const struct runs *rs)
{
	int lw = 5, hw = 4;
	size_t i;

	for (i = 0; i < rs->n; i++) {
		int l = chars_of(rs->s[i].label);
		int h = chars_of(rs->s[i].host ? rs->s[i].host : "-");

		lw = l > lw ? (l > 32 ? 32 : l) : lw;
		hw = h > hw ? (h > 24 ? 24 : h) : hw;
	}
	fprintf(out, "%4s  %-16s  %-*s  %-7s  %-9s  %-*s  %8s  %-13s  %s\n",
		"ID", "When", lw, "Label", "Command", "Direction", hw, "Host",
		"MB/s", "CPU s/GB", "Cipher");
	for (i = 0; i < rs->n; i++) {
		const struct saved *s = &rs->s[i];
		char when[24] = "-", cpu[40];
		time_t t = (time_t)s->time;
		struct tm tm;

		if (s->time && localtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
		fmt_cpu(cpu, sizeof(cpu), s);
		fprintf(out, "%4u  %-16s  ", s->id, when);
		column(out, s->label, lw);
		column(out, s->command, 7);
		column(out, s->direction, 9);
		column(out, s->host, hw);
		fprintf(out, "%8.1f  %-13s  ", s->bps / 1e6, cpu);
		report_escaped(out,
			       s->cipher && s->cipher[0] ? s->cipher : "-");
		fputc('\n', out);
	}
	fprintf(out, "MB/s: 10^6 bytes/s. CPU s/GB: CPU seconds per 10^9 "
		     "bytes here / there\n(bench: both processes; send, get: "
		     "this one).\n");
}

int report_saved_list(FILE *out, FILE *warn, const char *path, const char *text,
		      bool json)
{
	struct runs rs;
	size_t i;
	int r = runs_load(&rs, warn, path, text);

	if (!r && json) {
		cJSON *arr = cJSON_CreateArray();

		for (i = 0; arr && i < rs.n; i++)
			cJSON_AddItemReferenceToArray(arr, rs.docs[i]);
		report__json_line(out, arr);
		r = rs.n ? 0 : -ENOENT; /* [] printed, exit 1 as the table's */
	} else if (!r && rs.n) {
		list_human(out, &rs);
	} else if (!r) {
		fprintf(warn,
			"%s: no saved run in %s (save one with --save "
			"LABEL)\n",
			report_prog(), path);
		r = -ENOENT;
	}
	runs_free(&rs);
	return r;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median rate of label's runs of one command and direction; how
 * many there were into *n. */
static double median_of(const struct runs *rs, const char *label,
			const char *cmd, const char *dir, unsigned *n)
{
	double *v = malloc((rs->n + 1) * sizeof(*v)), m = 0;
	size_t i, k = 0;

	if (!v)
		return 0;
	for (i = 0; i < rs->n; i++)
		if (!strcmp(rs->s[i].label, label) &&
		    !strcmp(rs->s[i].command, cmd) &&
		    !strcmp(rs->s[i].direction, dir))
			v[k++] = rs->s[i].bps;
	if (k) {
		qsort(v, k, sizeof(*v), cmp_double);
		m = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
	}
	free(v);
	*n = (unsigned)k;
	return m;
}

static bool has_label(const struct runs *rs, const char *label)
{
	size_t i;

	for (i = 0; i < rs->n; i++)
		if (!strcmp(rs->s[i].label, label))
			return true;
	return false;
}

/* Whether an earlier run than i has the same command and direction. */
static bool group_seen(const struct runs *rs, size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (!strcmp(rs->s[j].command, rs->s[i].command) &&
		    !strcmp(rs->s[j].direction, rs->s[i].direction))
			return true;
	return false;
}

static cJSON *side_json(double median, unsigned n)
{
	cJSON *o = cJSON_CreateObject();

	if (o) {
		report__add_num(o, "runs", n);
		if (n)
			report__add_num(o, "median_bytes_per_second",
					report__json_num(median));
	}
	return o;
}

static void compare_row(FILE *out, cJSON *groups, const struct saved *s,
			double ma, unsigned na, double mb, unsigned nb)
{
	char a[32] = "-", b[32] = "-", q[16] = "-";

	if (groups) {
		cJSON *g = cJSON_CreateObject();

		if (!g)
			return;
		cJSON_AddStringToObject(g, "command", s->command);
		cJSON_AddStringToObject(g, "direction", s->direction);
		cJSON_AddItemToObject(g, "a", side_json(ma, na));
		cJSON_AddItemToObject(g, "b", side_json(mb, nb));
		if (na && nb && ma > 0)
			report__add_num(g, "ratio", report__json_num(mb / ma));
		cJSON_AddItemToArray(groups, g);
		return;
	}
	if (na)
		snprintf(a, sizeof(a), "%.1f (%u)", ma / 1e6, na);
	if (nb)
		snprintf(b, sizeof(b), "%.1f (%u)", mb / 1e6, nb);
	if (na && nb && ma > 0)
		snprintf(q, sizeof(q), "%.2fx", mb / ma);
	column(out, s->command, 7);
	column(out, s->direction, 9);
	fprintf(out, "%16s  %16s  %8s\n", a, b, q);
}

int report_saved_compare(FILE *out, FILE *warn, const char *path,
			 const char *text, const char *la, const char *lb,
			 bool json)
{
	struct runs rs;
	cJSON *doc = NULL, *groups = NULL;
	size_t i;
	int r = runs_load(&rs, warn, path, text);

	for (i = 0; !r && i < 2; i++)
		if (!has_label(&rs, i ? lb : la)) {
			fprintf(warn,
				"%s: no run saved with the label '%s' "
				"in %s\n",
				report_prog(), i ? lb : la, path);
			r = -ENOENT;
		}
	if (r) {
		runs_free(&rs);
		return r;
	}
	if (json) {
		doc = cJSON_CreateObject();
		cJSON_AddStringToObject(doc, "a", la);
		cJSON_AddStringToObject(doc, "b", lb);
		groups = cJSON_AddArrayToObject(doc, "groups");
	} else {
		fprintf(out, "B against A: A = ");
		report_escaped(out, la);
		fprintf(out, ", B = ");
		report_escaped(out, lb);
		fprintf(out,
			"; median MB/s (runs)\n%-7s  %-9s  %16s  %16s  "
			"%8s\n",
			"Command", "Direction", "A", "B", "B/A");
	}
	for (i = 0; i < rs.n; i++) {
		const struct saved *s = &rs.s[i];
		unsigned na, nb;
		double ma, mb;

		if (group_seen(&rs, i))
			continue;
		ma = median_of(&rs, la, s->command, s->direction, &na);
		mb = median_of(&rs, lb, s->command, s->direction, &nb);
		if (na || nb)
			compare_row(out, groups, s, ma, na, mb, nb);
	}
	if (doc)
		report__json_line(out, doc);
	runs_free(&rs);
	return 0;
}

/* The label of the run with the largest id, or NULL. */
static const char *latest_label(const struct runs *rs)
{
	const struct saved *best = NULL;
	size_t i;

	for (i = 0; i < rs->n; i++)
		if (!best || rs->s[i].id > best->id)
			best = &rs->s[i];
	return best ? best->label : NULL;
}

/* Whether s is all digits (an id). */
static bool is_id(const char *s)
{
	return s && *s && strspn(s, "0123456789") == strlen(s);
}

size_t report_saved_select(const char *text, const char *sel,
			   void (*fn)(void *ctx, const char *line, size_t len,
				      unsigned id, const char *label),
			   void *ctx)
{
	struct runs rs;
	const char *want, *p = text;
	size_t n = 0, k = 0, len = 0;

	if (runs_load(&rs, NULL, "", text)) {
		runs_free(&rs);
		return 0;
	}
	want = sel ? sel : latest_label(&rs);
	/* the lines again, in order: the k-th good one is rs.s[k] */
	for (; want && *p && k < rs.n; p += len + (p[len] == '\n')) {
		cJSON *doc;
		struct saved s;

		len = line_len(p);
		if (line_run(p, len, &doc, &s))
			continue;
		cJSON_Delete(doc);
		s = rs.s[k++];
		if (is_id(want) ? s.id == strtoul(want, NULL, 10)
				: !strcmp(s.label, want)) {
			fn(ctx, p, len, s.id, s.label);
			n++;
		}
	}
	runs_free(&rs);
	return n;
}
