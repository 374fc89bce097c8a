// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the readers of saved runs and of the JSON that
 * linerate plot draws (src/report/results.c, src/report/plot.c): a
 * results file is the user's, but it may be copied from elsewhere, cut
 * by a full disk or edited by hand, and plot reads any --json file.
 *
 * The input's first byte chooses the reader, the rest is the text:
 *  0  the text as a results file: the table and the JSON list, the
 *     comparison of labels "a" and "b", the runs selected by id 1, by
 *     label "a" and by the latest label;
 *  1  the text as one saved run's line for plot, SVG and HTML;
 *  2  the text as a --json file for plot, SVG and HTML.
 *
 * Invariants checked, beyond "no sanitizer report": every reader returns
 * 0 or a negative errno; a selected line lies inside the text and is a
 * JSON object of the id said; plot's error, when it fails, is a terminated,
 * printable sentence; the JSON list, when one is written, parses.
 */
#include <cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sel {
	const char *text;
	size_t len;
	unsigned n;
};

static void on_line(void *ctx, const char *line, size_t len, unsigned id,
		    const char *label)
{
	struct sel *s = ctx;

	cJSON *doc;

	CHECK(line >= s->text && len <= s->len &&
	      (size_t)(line - s->text) <= s->len - len);
	CHECK(label != NULL);
	/* a saved run's line: a JSON object of that id */
	doc = cJSON_ParseWithLength(line, len);
	CHECK(doc != NULL);
	CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(doc, "id")) &&
	      cJSON_GetObjectItemCaseSensitive(doc, "id")->valuedouble ==
		      (double)id);
	cJSON_Delete(doc);
	s->n++;
}

static void results_file(const char *text, size_t len, FILE *null)
{
	struct sel s = { text, len, 0 };
	char *json = NULL;
	size_t jlen = 0;
	FILE *mem = open_memstream(&json, &jlen);
	int r;

	r = report_saved_list(null, null, "fuzz", text, false);
	CHECK(r == 0 || r < 0);
	if (mem) {
		r = report_saved_list(mem, null, "fuzz", text, true);
		CHECK(r == 0 || r < 0);
		fclose(mem);
		if (!r && json) {
			cJSON *doc = cJSON_Parse(json);

			CHECK(doc != NULL);
			cJSON_Delete(doc);
		}
		free(json);
	}
	r = report_saved_compare(null, null, "fuzz", text, "a", "b", false);
	CHECK(r == 0 || r < 0);
	r = report_saved_compare(null, null, "fuzz", text, "a", "b", true);
	CHECK(r == 0 || r < 0);
	CHECK(report_saved_select(text, "1", on_line, &s) == s.n);
	s.n = 0;
	CHECK(report_saved_select(text, "a", on_line, &s) == s.n);
	s.n = 0;
	CHECK(report_saved_select(text, NULL, on_line, &s) == s.n);
}

#ifdef LINERATE_PLOT
static void plot_one(const char *text, bool saved, FILE *null)
{
	struct report_plot_run run = { .name = "fuzz",
				       .label = saved ? "a" : "",
				       .text = text,
				       .saved = saved };
	char err[256];
	int html, r;
	size_t i;

	for (html = 0; html < 2; html++) {
		err[0] = '\0';
		r = report_plot(null, html, "fuzz", &run, 1, err, sizeof(err));
		CHECK(r == 0 || r < 0);
		if (!r)
			continue;
		CHECK(memchr(err, '\0', sizeof(err)) != NULL && err[0]);
		for (i = 0; err[i]; i++)
			CHECK((unsigned char)err[i] >= 0x20 || err[i] == '\t');
	}
}
#else
static void plot_one(const char *text, bool saved, FILE *null)
{
	(void)text;
	(void)saved;
	(void)null; /* a build without plot: nothing to read */
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	char *text;

	if (size < 1)
		return 0;
	if (!null)
		null = fopen("/dev/null", "w");
	if (!null)
		return 0;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 3) {
	case 0: results_file(text, strlen(text), null); break;
	case 1: plot_one(text, true, null); break;
	default: plot_one(text, false, null); break;
	}
	free(text);
	return 0;
}
