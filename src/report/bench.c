// SPDX-License-Identifier: MIT
/* bench: its callbacks, its errors and the JSON document. */
#include <stdio.h>
#include <stdlib.h>

#include "report_int.h"
#include "banned.h"

/* --get-server-output, as iperf3 -J has it: "server_output_text", or
 * "server_output_json" (the document) from a server run with -J. */
static const char *server_output_key(const struct bench_result *res)
{
	return res->server_output_json ? "server_output_json"
				       : "server_output_text";
}

static cJSON *server_output_item(const struct bench_result *res)
{
	cJSON *doc = NULL;

	if (res->server_output_json)
		doc = cJSON_Parse(res->server_output);
	return doc ? doc : cJSON_CreateString(res->server_output);
}

static void cb_finished(void *ctx, const struct bench_result *res)
{
	struct report *rp = ctx;

	if (rp->fmt == REPORT_HUMAN) {
		report__human_end(rp, res);
		return;
	}
	if (rp->fmt == REPORT_JSON) {
		cJSON_AddItemToObject(rp->root, "end", report__end_json(res));
		/* iperf3 -J: both at the top level */
		if (rp->title[0] || res->title[0])
			cJSON_AddStringToObject(rp->root, "title",
						rp->title[0] ? rp->title
							     : res->title);
		if (res->server_output)
			cJSON_AddItemToObject(rp->root, server_output_key(res),
					      server_output_item(res));
		return;
	}
	report__emit_stream_event(rp, "end", report__end_json(res));
	if (res->server_output)
		report__emit_stream_event(rp, server_output_key(res),
					  server_output_item(res));
}

void report_bench_callbacks(struct report *rp, struct bench_callbacks *cb)
{
	cb->ctx = rp;
	cb->connecting = report__cb_connecting;
	cb->started = report__cb_started;
	cb->interval = report__cb_interval;
	cb->finished = cb_finished;
}

void report_bench_error(struct report *rp, FILE *err_out, const char *msg)
{
	if (rp->fmt == REPORT_JSON) {
		cJSON_AddStringToObject(rp->root, "error", msg);
		report_bench_flush(rp);
	} else if (rp->fmt == REPORT_JSON_STREAM) {
		report__emit_stream_event(rp, "error", cJSON_CreateString(msg));
	} else {
		fflush(rp->out);
		fprintf(err_out, "%s: ", report_prog());
		report_escaped(err_out, msg);
		fputc('\n', err_out);
	}
}

void report_bench_flush(struct report *rp)
{
	char *txt;

	if (rp->fmt != REPORT_JSON)
		return;
	if (!cJSON_GetObjectItem(rp->root, "start"))
		cJSON_AddObjectToObject(rp->root, "start");
	if (!cJSON_GetObjectItem(rp->root, "intervals"))
		cJSON_AddArrayToObject(rp->root, "intervals");
	if (!cJSON_GetObjectItem(rp->root, "end"))
		cJSON_AddObjectToObject(rp->root, "end");
	txt = cJSON_Print(rp->root);
	if (txt)
		fprintf(rp->out, "%s\n", txt);
	free(txt);
	fflush(rp->out);
}
