// SPDX-License-Identifier: MIT
/* linerate plot: throughput over time of runs (bench intervals, per
 * stream and summed; a transfer's progress) and saved runs compared by
 * label, command and direction, as SVG, or an HTML page holding the
 * charts and a table. Plain SVG 1.1, no script: any renderer draws it. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report_int.h"
#include "banned.h"

#define CHART_W	   900
#define CHART_H	   420
#define M_LEFT	   80  /* the y axis' labels */
#define M_RIGHT	   230 /* the legend */
#define M_TOP	   50
#define M_BOTTOM   60
#define MAX_SERIES 16
#define MAX_POINTS 100000

/* Colours told apart also by most colour-blind eyes (Okabe and Ito's
 * palette, then darker ones). */
static const char *const palette[] = {
	"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
	"#000000", "#a0522d", "#7f3c8d", "#11a579", "#3969ac", "#f2b701",
	"#e73f74", "#80ba5a", "#e68310", "#008695",
};

struct series {
	char name[160];
	double *t, *v; /* seconds, bytes/s */
	size_t n, cap;
	bool thin;  /* a stream of a sum */
	size_t run; /* the run it is of (p->runs) */
};

/* One run as plotted and compared. */
struct prun {
	char name[160];	 /* legend */
	char label[128]; /* the comparison's group: its label */
	char command[16], direction[16];
	double bps; /* its rate (the summary's, else the last sum's) */
	bool saved;
};

struct plot {
	struct series s[MAX_SERIES];
	size_t ns;
	struct prun *runs;
	size_t nruns;
	size_t cur; /* the run being read */
	char *err;
	size_t errcap;
};

static int perr(struct plot *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int perr(struct plot *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, p->errcap, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static struct series *series_new(struct plot *p, bool thin, const char *fmt,
				 ...) __attribute__((format(printf, 3, 4)));

static struct series *series_new(struct plot *p, bool thin, const char *fmt,
				 ...)
{
	struct series *s;
	va_list ap;

	if (p->ns == MAX_SERIES)
		return NULL; /* more would be a legend nobody reads */
	s = &p->s[p->ns++];
	memset(s, 0, sizeof(*s));
	s->thin = thin;
	s->run = p->cur;
	va_start(ap, fmt);
	vsnprintf(s->name, sizeof(s->name), fmt, ap);
	va_end(ap);
	return s;
}

static int series_add(struct series *s, double t, double v)
{
	if (!s || !isfinite(t) || !isfinite(v) || s->n >= MAX_POINTS)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		double *nt = realloc(s->t, cap * sizeof(*nt)), *nv;

		if (!nt)
			return -ENOMEM;
		s->t = nt;
		nv = realloc(s->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = cap;
	}
	s->t[s->n] = t;
	s->v[s->n++] = v;
	return 0;
}

static double jnum(const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A rate held from a to b: a step of the line. */
static int series_step(struct series *s, double a, double b, double v)
{
	int r = series_add(s, a, v);

	return r ? r : series_add(s, b, v);
}

/* An interval's object (sum or stream): its rate over its span. */
static int interval_point(struct series *s, const cJSON *o)
{
	double a = jnum(o, "start", NAN), b = jnum(o, "end", NAN);
	double bits = jnum(o, "bits_per_second", NAN);

	if (!s || !o)
		return 0;
	return series_step(s, a, b, bits / 8);
}

/* bench's (and iperf3's) -J document: the sums, and each stream when
 * there are several and this is the only run. */
static int bench_series(struct plot *p, const cJSON *doc, const char *name,
			bool streams)
{
	const cJSON *ivs = cJSON_GetObjectItemCaseSensitive(doc, "intervals");
	const cJSON *iv, *first = cJSON_GetArrayItem(ivs, 0);
	const cJSON *st =
		first ? cJSON_GetObjectItemCaseSensitive(first, "streams")
		      : NULL;
	int nst = cJSON_GetArraySize(st), i, r = 0;
	bool split = streams && nst > 1;
	struct series *sum = series_new(p, false, split ? "%s, sum" : "%s",
					name),
		      *rev = NULL;
	struct series *per[8] = { 0 };

	if (first &&
	    cJSON_GetObjectItemCaseSensitive(first, "sum_bidir_reverse"))
		rev = series_new(p, false, "%s, reverse", name);
	for (i = 0; split && i < nst && i < 8; i++)
		per[i] = series_new(p, true, "%s, stream %d", name, i + 1);
	cJSON_ArrayForEach(iv, ivs)
	{
		const cJSON *ss =
			cJSON_GetObjectItemCaseSensitive(iv, "streams");

		r = interval_point(sum,
				   cJSON_GetObjectItemCaseSensitive(iv, "sum"));
		if (!r && rev)
			r = interval_point(rev,
					   cJSON_GetObjectItemCaseSensitive(
						   iv, "sum_bidir_reverse"));
		for (i = 0; !r && i < 8 && per[i]; i++)
			r = interval_point(per[i], cJSON_GetArrayItem(ss, i));
		if (r)
			return r;
	}
	return 0;
}

/* A transfer's events: the rate between progress events, of the bytes
 * this run moved. */
static int events_series(struct plot *p, const cJSON *events, const char *name)
{
	struct series *s = series_new(p, false, "%s", name);
	double t0 = 0, b0 = 0, dt = 0;
	const cJSON *ev;
	int r = 0;

	cJSON_ArrayForEach(ev, events)
	{
		const char *kind = jstr(ev, "event");
		double t = jnum(ev, "seconds", NAN);
		double b = jnum(ev, "bytes_done", NAN) -
			   jnum(ev, "bytes_already_held", 0);

		if (!kind || (strcmp(kind, "progress") && strcmp(kind, "end")))
			continue;
		if (!strcmp(kind, "end")) {
			b = jnum(ev, "bytes", NAN);
			/* a tail much shorter than the intervals says little */
			if (t - t0 < dt / 2)
				break;
		}
		if (isfinite(t) && isfinite(b) && t > t0 + 1e-3) {
			r = series_step(s, t0, t, (b - b0) / (t - t0));
			dt = t - t0;
			t0 = t;
			b0 = b;
		}
		if (r)
			return r;
	}
	return 0;
}

/* The last interval sum's rate of a bench document (a run without a
 * summary: a file). */
static double bench_rate(const cJSON *doc)
{
	const cJSON *end = cJSON_GetObjectItemCaseSensitive(doc, "end");
	const cJSON *sum =
		cJSON_GetObjectItemCaseSensitive(end, "sum_received");

	if (!sum)
		sum = cJSON_GetObjectItemCaseSensitive(end, "sum");
	return jnum(sum, "bits_per_second", 0) / 8;
}

/* A run's document (bench's, doctor's) or events into the series; its
 * command into pr when it had none. */
static int run_series(struct plot *p, const cJSON *run, struct prun *pr,
		      bool streams)
{
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(run, "events");

	if (cJSON_IsArray(run))
		events = run; /* JSON lines read by the caller */
	if (cJSON_GetObjectItemCaseSensitive(run, "intervals")) {
		if (!pr->command[0])
			snprintf(pr->command, sizeof(pr->command), "bench");
		if (pr->bps <= 0)
			pr->bps = bench_rate(run);
		return bench_series(p, run, pr->name, streams);
	}
	if (cJSON_IsArray(events)) {
		if (!pr->command[0])
			snprintf(pr->command, sizeof(pr->command), "send");
		return events_series(p, events, pr->name);
	}
	if (cJSON_GetObjectItemCaseSensitive(run, "stages")) {
		const cJSON *x =
			cJSON_GetObjectItemCaseSensitive(run, "transfer");

		if (!pr->command[0])
			snprintf(pr->command, sizeof(pr->command), "doctor");
		if (pr->bps <= 0)
			pr->bps = jnum(x, "bytes_per_second", 0);
		return 0; /* stages, no time: in the comparison only */
	}
	return -EINVAL;
}

/* One input: a saved run's line, a document or JSON lines; NULL with
 * *bad the line that is not JSON (0: empty). */
static cJSON *parse_input(const char *text, unsigned *bad)
{
	const char *end = NULL, *q = text, *nl;
	cJSON *doc = cJSON_ParseWithOpts(text, &end, 1), *arr;
	unsigned line_no = 0;

	*bad = 0;
	if (doc)
		return doc;
	arr = cJSON_CreateArray();
	for (; arr && *q; q = nl ? nl + 1 : q + strlen(q)) {
		char *line;
		cJSON *ev;

		nl = strchr(q, '\n');
		line_no++;
		line = strndup(q, nl ? (size_t)(nl - q) : strlen(q));
		if (!line)
			break;
		ev = line[strspn(line, " \t\r")] ? cJSON_Parse(line) : NULL;
		if (line[strspn(line, " \t\r")] && !ev) {
			free(line);
			cJSON_Delete(arr);
			*bad = line_no;
			return NULL;
		}
		free(line);
		if (ev)
			cJSON_AddItemToArray(arr, ev);
	}
	if (arr && !cJSON_GetArraySize(arr)) {
		cJSON_Delete(arr);
		return NULL;
	}
	return arr;
}

/* What results_read (src/results.h) makes of a run of NUL bytes in a
 * file: modified UTF-8's NUL, never UTF-8. */
#define PLOT_NUL "\xc0\x80"

/* The number of the first line of text holding PLOT_NUL, 0 when none. */
static unsigned nul_line(const char *text)
{
	const char *q = strstr(text, PLOT_NUL);
	unsigned n = 1;

	if (!q)
		return 0;
	for (; text < q; text++)
		n += *text == '\n';
	return n;
}

static int add_input(struct plot *p, const struct report_plot_run *in,
		     struct prun *pr, bool streams)
{
	unsigned nul = nul_line(in->text), bad = 0;
	cJSON *doc = nul ? NULL : parse_input(in->text, &bad), *run = doc;
	const cJSON *sum;
	int r;

	memset(pr, 0, sizeof(*pr));
	snprintf(pr->name, sizeof(pr->name), "%s", in->name);
	snprintf(pr->label, sizeof(pr->label), "%s", in->label);
	if (nul)
		return perr(p, "%s:%u: holds a NUL byte", in->name, nul);
	if (!doc && bad)
		return perr(p, "%s:%u: not JSON (cut short?)", in->name, bad);
	if (!doc)
		return perr(p, "%s: empty", in->name);
	if (in->saved) {
		run = cJSON_GetObjectItemCaseSensitive(doc, "run");
		sum = cJSON_GetObjectItemCaseSensitive(doc, "summary");
		snprintf(pr->command, sizeof(pr->command), "%s",
			 jstr(doc, "command") ? jstr(doc, "command") : "");
		snprintf(pr->direction, sizeof(pr->direction), "%s",
			 jstr(sum, "direction") ? jstr(sum, "direction") : "");
		pr->bps = jnum(sum, "bytes_per_second", 0);
		pr->saved = true;
	}
	r = run ? run_series(p, run, pr, streams) : -EINVAL;
	cJSON_Delete(doc);
	if (r == -EINVAL)
		return perr(p,
			    "%s: not a run linerate wrote with --json or "
			    "--save (no intervals, events or stages)",
			    in->name);
	if (!pr->direction[0])
		snprintf(pr->direction, sizeof(pr->direction), "%s",
			 strcmp(pr->command, "get") ? "send" : "receive");
	return r ? perr(p, "out of memory") : 0;
}

/* XML text: & < > " ' escaped, control bytes left out. */
static void xml_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, out);
		}
	}
}

/* A tick step of about n ticks over range: 1, 2 or 5 times 10^k. */
static double nice_step(double range, int n)
{
	double raw = range / n, mag, f;

	if (!(raw > 0))
		return 1;
	mag = pow(10, floor(log10(raw)));
	f = raw / mag;
	return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

static void fmt_tick(char *buf, size_t cap, double v, double step)
{
	int dec = step >= 1 ? 0 : (int)ceil(-log10(step));

	snprintf(buf, cap, "%.*f", dec > 6 ? 6 : dec, v);
}

/* The frame of a chart at y0: title, axes with ticks and grid, their
 * names. x and y run 0..xmax, 0..ymax (xmax 0: categories, no x
 * ticks). */
static void frame(FILE *out, int y0, const char *title, double xmax,
		  double ymax, double ystep, const char *xname)
{
	int pw = CHART_W - M_LEFT - M_RIGHT, ph = CHART_H - M_TOP - M_BOTTOM;
	double st = ystep, v;
	char t[32];

	fprintf(out,
		"<text x=\"%d\" y=\"%d\" font-size=\"18\" "
		"font-weight=\"bold\">",
		M_LEFT, y0 + 30);
	xml_text(out, title);
	fputs("</text>\n", out);
	for (v = 0; v <= ymax * (1 + 1e-9); v += st) {
		int y = y0 + M_TOP + ph - (int)lround(v / ymax * ph);

		fmt_tick(t, sizeof(t), v / 1e6, st / 1e6);
		fprintf(out,
			"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
			"stroke=\"#dddddd\" shape-rendering=\"crispEdges\"/>"
			"\n<text x=\"%d\" y=\"%d\" "
			"font-size=\"12\" text-anchor=\"end\">%s</text>\n",
			M_LEFT, y, M_LEFT + pw, y, M_LEFT - 8, y + 4, t);
	}
	st = nice_step(xmax, 8);
	for (v = 0; xmax > 0 && v <= xmax * (1 + 1e-9); v += st) {
		int x = M_LEFT + (int)lround(v / xmax * pw);

		fmt_tick(t, sizeof(t), v, st);
		fprintf(out,
			"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
			"stroke=\"#888888\" shape-rendering=\"crispEdges\"/>"
			"\n<text x=\"%d\" y=\"%d\" "
			"font-size=\"12\" text-anchor=\"middle\">%s</text>\n",
			x, y0 + M_TOP + ph, x, y0 + M_TOP + ph + 5, x,
			y0 + M_TOP + ph + 20, t);
	}
	fprintf(out,
		"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
		"fill=\"none\" stroke=\"#444444\" "
		"shape-rendering=\"crispEdges\"/>\n"
		"<text x=\"%d\" y=\"%d\" font-size=\"13\" "
		"text-anchor=\"middle\">%s</text>\n"
		"<text x=\"18\" y=\"%d\" font-size=\"13\" text-anchor=\"middle\" "
		"transform=\"rotate(-90 18 %d)\">MB/s (10^6 bytes/s)</text>\n",
		M_LEFT, y0 + M_TOP, pw, ph, M_LEFT + pw / 2, y0 + CHART_H - 15,
		xname, y0 + M_TOP + ph / 2, y0 + M_TOP + ph / 2);
}

static void legend_entry(FILE *out, int y0, int i, const char *colour,
			 const char *dash, const char *name, bool thin)
{
	int x = CHART_W - M_RIGHT + 15, y = y0 + M_TOP + 10 + i * 20;

	fprintf(out,
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\"%s "
		"stroke-width=\"%s\"/>\n<text x=\"%d\" y=\"%d\" "
		"font-size=\"12\">",
		x, y, x + 22, y, colour, dash, thin ? "2" : "4", x + 28, y + 4);
	xml_text(out, name);
	fputs("</text>\n", out);
}

/* The labels in the order first seen, into out (at most cap). */
static size_t labels_of(const struct plot *p, const char **out, size_t cap)
{
	size_t n = 0, i, j;

	for (i = 0; i < p->nruns; i++) {
		for (j = 0; j < n; j++)
			if (!strcmp(out[j], p->runs[i].label))
				break;
		if (j == n && n < cap)
			out[n++] = p->runs[i].label;
	}
	return n;
}

/* Whether the comparison chart has something to say: runs of two labels
 * or more. */
static bool comparing(const struct plot *p)
{
	const char *labels[2];

	return labels_of(p, labels, 2) > 1;
}

/* Series i's colour, its label's (as in the bars), and its dash: the
 * k-th line of a label gets the k-th pattern (the first solid). */
static void series_style(const struct plot *p, size_t i, const char **colour,
			 const char **dash)
{
	static const char *const dashes[] = {
		"",
		" stroke-dasharray=\"10 5\"",
		" stroke-dasharray=\"3 4\"",
		" stroke-dasharray=\"14 4 3 4\"",
		" stroke-dasharray=\"6 8\"",
	};
	const char *labels[MAX_SERIES];
	const char *label = p->runs[p->s[i].run].label;
	size_t nl = labels_of(p, labels, MAX_SERIES), l, j, k = 0;

	for (l = 0; l < nl && strcmp(labels[l], label); l++)
		;
	for (j = 0; j < i; j++)
		k += !strcmp(p->runs[p->s[j].run].label, label);
	*colour = palette[l % MAX_SERIES];
	*dash = dashes[k % (sizeof(dashes) / sizeof(dashes[0]))];
}

/* Throughput over time: a line a series. */
static void time_chart(FILE *out, const struct plot *p, int y0)
{
	int pw = CHART_W - M_LEFT - M_RIGHT, ph = CHART_H - M_TOP - M_BOTTOM;
	double xmax = 0, ymax = 0, ystep;
	size_t i, j;

	for (i = 0; i < p->ns; i++)
		for (j = 0; j < p->s[i].n; j++) {
			xmax = p->s[i].t[j] > xmax ? p->s[i].t[j] : xmax;
			ymax = p->s[i].v[j] > ymax ? p->s[i].v[j] : ymax;
		}
	xmax = xmax > 0 ? xmax : 1;
	xmax = ceil(xmax / nice_step(xmax, 8) - 1e-9) * nice_step(xmax, 8);
	ymax = ymax > 0 ? ymax * 1.05 : 1e6;
	ystep = nice_step(ymax, 5);
	ymax = ceil(ymax / ystep) * ystep;
	frame(out, y0, "Throughput over time", xmax, ymax, ystep, "seconds");
	for (i = 0; i < p->ns; i++) {
		const struct series *s = &p->s[i];
		const char *dash = "", *c = palette[i % MAX_SERIES];

		/* runs of two labels or more: a label's colour (the bars'),
		 * its lines told apart by their dashes */
		if (comparing(p))
			series_style(p, i, &c, &dash);
		fprintf(out,
			"<polyline fill=\"none\" stroke=\"%s\"%s "
			"stroke-width=\"%s\" stroke-linejoin=\"round\" "
			"points=\"",
			c, dash, s->thin ? "2" : "3.5");
		for (j = 0; j < s->n; j++)
			fprintf(out, "%s%.1f,%.1f", j ? " " : "",
				M_LEFT + s->t[j] / xmax * pw,
				y0 + M_TOP + ph - s->v[j] / ymax * ph);
		fputs("\"/>\n", out);
		legend_entry(out, y0, (int)i, c, dash, s->name, s->thin);
	}
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median rate of label's runs of a command in a direction (0:
 * none). */
static double median_rate(const struct plot *p, const char *label,
			  const char *cmd, const char *dir)
{
	double v[256], m = 0;
	size_t i, k = 0;

	for (i = 0; i < p->nruns && k < 256; i++)
		if (!strcmp(p->runs[i].label, label) &&
		    !strcmp(p->runs[i].command, cmd) &&
		    !strcmp(p->runs[i].direction, dir) && p->runs[i].bps > 0)
			v[k++] = p->runs[i].bps;
	if (k) {
		qsort(v, k, sizeof(v[0]), cmp_dbl);
		m = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
	}
	return m;
}

/* A group of bars: the runs of one command in one direction, as linerate
 * results --compare groups them (a bench never in a transfer's bar). */
struct group {
	const char *command, *direction;
};

/* The groups in the order first seen, into out (at most cap). */
static size_t groups_of(const struct plot *p, struct group *out, size_t cap)
{
	size_t n = 0, i, j;

	for (i = 0; i < p->nruns; i++) {
		const struct prun *r = &p->runs[i];

		for (j = 0; j < n; j++)
			if (!strcmp(out[j].command, r->command) &&
			    !strcmp(out[j].direction, r->direction))
				break;
		if (j == n && n < cap) {
			out[n].command = r->command;
			out[n++].direction = r->direction;
		}
	}
	return n;
}

/* A group's name under its bars, centred on x in a width of w: the
 * command, then the direction unless the command says it (send sends,
 * get receives); on two lines when one would not fit. */
static void group_name(FILE *out, int x, int y, int w, const struct group *g)
{
	bool said = (!strcmp(g->command, "send") &&
		     !strcmp(g->direction, "send")) ||
		    (!strcmp(g->command, "get") &&
		     !strcmp(g->direction, "receive"));
	/* about 8 pixels a character at 13 */
	size_t n = strlen(g->command) + 1 + strlen(g->direction);

	fprintf(out,
		"<text x=\"%d\" y=\"%d\" font-size=\"13\" "
		"text-anchor=\"middle\">",
		x, y);
	xml_text(out, g->command);
	if (!said && n * 8 + 10 <= (size_t)w) {
		fputc(' ', out);
		xml_text(out, g->direction);
	} else if (!said) {
		fprintf(out, "<tspan x=\"%d\" dy=\"13\">", x);
		xml_text(out, g->direction);
		fputs("</tspan>", out);
	}
	fputs("</text>\n", out);
}

/* One group's bars from x: a bar per label with a run there (m[l] > 0),
 * its height the median, the rate written above it (no decimals on a
 * bar too narrow for them). */
static void group_bars(FILE *out, int x, int bottom, int bw, const double *m,
		       size_t nl, double ymax)
{
	int ph = CHART_H - M_TOP - M_BOTTOM;
	size_t l;

	for (l = 0; l < nl; l++) {
		int h = (int)lround(m[l] / ymax * ph);
		int bx = x + (int)l * bw;

		if (m[l] <= 0)
			continue;
		fprintf(out,
			"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
			"fill=\"%s\" shape-rendering=\"crispEdges\"/>\n"
			"<text x=\"%d\" y=\"%d\" font-size=\"11\" "
			"text-anchor=\"middle\">%.*f</text>\n",
			bx + 2, bottom - h, bw - 4, h, palette[l % MAX_SERIES],
			bx + bw / 2, bottom - h - 4, bw < 56 ? 0 : 1,
			m[l] / 1e6);
	}
}

#define MAX_GROUPS 12

/* Saved runs compared: per command and direction a group of bars, a bar
 * per label (the median of its runs there). */
static void bar_chart(FILE *out, const struct plot *p, int y0)
{
	const char *labels[MAX_SERIES];
	struct group gs[MAX_GROUPS];
	size_t nl = labels_of(p, labels, MAX_SERIES), d, l, ng = 0;
	size_t ngs = groups_of(p, gs, MAX_GROUPS);
	int pw = CHART_W - M_LEFT - M_RIGHT, ph = CHART_H - M_TOP - M_BOTTOM;
	double ymax = 0, ystep, m[MAX_GROUPS][MAX_SERIES];
	bool any[MAX_GROUPS] = { false };
	int gw, bw, g = 0;

	for (d = 0; d < ngs; d++) {
		for (l = 0; l < nl; l++) {
			m[d][l] = median_rate(p, labels[l], gs[d].command,
					      gs[d].direction);
			ymax = m[d][l] > ymax ? m[d][l] : ymax;
			any[d] |= m[d][l] > 0;
		}
		ng += any[d];
	}
	ymax = ymax > 0 ? ymax * 1.1 : 1e6;
	ystep = nice_step(ymax, 5);
	ymax = ceil(ymax / ystep) * ystep;
	frame(out, y0, "Saved runs by label (median MB/s)", 0, ymax, ystep,
	      "command (direction from this end)");
	gw = ng ? pw / (int)ng : pw;
	bw = (gw - 30) / (int)(nl ? nl : 1);
	bw = bw > 80 ? 80 : bw;
	for (d = 0; d < ngs; d++) {
		if (!any[d])
			continue;
		group_bars(out, M_LEFT + g * gw + (gw - bw * (int)nl) / 2,
			   y0 + M_TOP + ph, bw, m[d], nl, ymax);
		group_name(out, M_LEFT + g * gw + gw / 2, y0 + M_TOP + ph + 16,
			   gw, &gs[d]);
		g++;
	}
	for (l = 0; l < nl; l++)
		legend_entry(out, y0, (int)l, palette[l % MAX_SERIES], "",
			     labels[l][0] ? labels[l] : "(a file)", false);
}

static void svg_charts(FILE *out, const struct plot *p)
{
	bool times = false, bars = comparing(p);
	size_t i;
	int h;

	for (i = 0; i < p->ns; i++)
		times |= p->s[i].n > 0;
	h = CHART_H * ((times ? 1 : 0) + (bars ? 1 : 0));
	fprintf(out,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
		"width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"font-family=\"DejaVu Sans, Arial, sans-serif\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
		CHART_W, h, CHART_W, h);
	if (times)
		time_chart(out, p, 0);
	if (bars)
		bar_chart(out, p, times ? CHART_H : 0);
	fputs("</svg>\n", out);
}

static void html_page(FILE *out, const struct plot *p, const char *title)
{
	size_t i;

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
	      "charset=\"utf-8\">\n<title>",
	      out);
	xml_text(out, title);
	fputs("</title>\n<style>body{font-family:sans-serif;margin:2em}"
	      "table{border-collapse:collapse}td,th{border:1px solid #ccc;"
	      "padding:4px 8px;text-align:left}td.n{text-align:right}"
	      "</style>\n</head>\n<body>\n<h1>",
	      out);
	xml_text(out, title);
	fputs("</h1>\n", out);
	svg_charts(out, p);
	fputs("<table>\n<tr><th>Run</th><th>Label</th><th>Command</th>"
	      "<th>Direction</th><th>MB/s</th></tr>\n",
	      out);
	for (i = 0; i < p->nruns; i++) {
		const struct prun *r = &p->runs[i];

		fputs("<tr><td>", out);
		xml_text(out, r->name);
		fputs("</td><td>", out);
		xml_text(out, r->label);
		fprintf(out,
			"</td><td>%s</td><td>%s</td><td class=\"n\">%.1f"
			"</td></tr>\n",
			r->command, r->direction, r->bps / 1e6);
	}
	fputs("</table>\n</body>\n</html>\n", out);
}

int report_plot(FILE *out, bool html, const char *title,
		const struct report_plot_run *runs, size_t n, char *err,
		size_t errcap)
{
	struct plot p = { .err = err, .errcap = errcap };
	size_t i;
	int r = 0;

	p.runs = calloc(n ? n : 1, sizeof(*p.runs));
	if (!p.runs)
		return perr(&p, "out of memory");
	for (i = 0; !r && i < n; i++) {
		p.cur = i;
		r = add_input(&p, &runs[i], &p.runs[i], n == 1);
	}
	p.nruns = i;
	if (!r && !p.ns && !comparing(&p))
		r = perr(&p, "nothing to draw: no intervals or progress over "
			     "time, and runs of one label only");
	if (!r && html)
		html_page(out, &p, title);
	else if (!r)
		svg_charts(out, &p);
	for (i = 0; i < p.ns; i++) {
		free(p.s[i].t);
		free(p.s[i].v);
	}
	free(p.runs);
	return r;
}
