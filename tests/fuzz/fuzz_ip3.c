// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for ip3.[ch], iperf3's control messages as a peer sends
 * them: the cookie, the 4-byte JSON length and the parameter and results
 * JSON.
 *
 * The whole input goes to both JSON decoders, its first 4 bytes to
 * ip3_json_len and its first IP3_COOKIE_LEN bytes to ip3_cookie_valid;
 * the whole input also to ip3_server_output_decode, whose text must
 * survive ip3_results_encode_text and decode again.
 * Invariants checked, beyond "no sanitizer report":
 *  - return values are one of the documented ones;
 *  - decoded params are inside their bounds, strings NUL-terminated
 *    printable ASCII within their arrays;
 *  - accepted params and results re-encode, decode to an equal struct, and
 *    encode that to the same bytes.
 * The input is copied into a buffer of its exact size so that reading past
 * it is an ASan report.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "ip3.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool str_ok(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == cap)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

static bool params_equal(const struct ip3_params *a, const struct ip3_params *b)
{
	return a->tcp == b->tcp && a->udp == b->udp &&
	       a->reverse == b->reverse && a->bidir == b->bidir &&
	       a->time_s == b->time_s && a->bytes == b->bytes &&
	       a->blocks == b->blocks && a->omit_s == b->omit_s &&
	       a->parallel == b->parallel && a->len == b->len &&
	       a->bandwidth == b->bandwidth && a->window == b->window &&
	       a->mss == b->mss && a->nodelay == b->nodelay &&
	       a->zerocopy == b->zerocopy &&
	       a->get_server_output == b->get_server_output &&
	       a->udp_counters64 == b->udp_counters64 &&
	       !strcmp(a->congestion, b->congestion) &&
	       !strcmp(a->title, b->title) &&
	       !strcmp(a->client_version, b->client_version);
}

static bool results_equal(const struct ip3_results *a,
			  const struct ip3_results *b)
{
	if (a->cpu_total != b->cpu_total || a->cpu_user != b->cpu_user ||
	    a->cpu_system != b->cpu_system ||
	    a->sender_has_retransmits != b->sender_has_retransmits ||
	    a->nstreams != b->nstreams)
		return false;
	for (unsigned i = 0; i < a->nstreams; i++) {
		const struct ip3_stream_result *x = &a->streams[i];
		const struct ip3_stream_result *y = &b->streams[i];

		if (x->id != y->id || x->bytes != y->bytes ||
		    x->retransmits != y->retransmits ||
		    x->jitter != y->jitter || x->errors != y->errors ||
		    x->packets != y->packets ||
		    x->start_time != y->start_time ||
		    x->end_time != y->end_time)
			return false;
	}
	return true;
}

static void check_params(const char *buf, size_t size)
{
	static char enc1[IP3_MAX_JSON], enc2[IP3_MAX_JSON];
	struct ip3_params p, q;
	struct lr_err err = { 0 };
	int ret, n1, n2;

	ret = ip3_params_decode(buf, size, &p, &err);
	CHECK(ret == 0 || ret == LR_EBADMSG || ret == LR_ETOOBIG);
	if (ret) {
		CHECK(err.code == ret);
		CHECK(memchr(err.msg, '\0', sizeof(err.msg)));
		return;
	}
	CHECK(size <= IP3_MAX_JSON);
	CHECK(p.tcp != p.udp);
	CHECK(!(p.reverse && p.bidir));
	CHECK(p.parallel >= 1 && p.parallel <= IP3_MAX_STREAMS);
	CHECK(!p.bidir || 2 * p.parallel <= IP3_MAX_STREAMS);
	CHECK(p.len >= 1 && p.len <= (16u << 20));
	CHECK(!p.udp || p.len <= 65507);
	CHECK(p.time_s <= 86400 && p.omit_s <= 86400);
	CHECK(str_ok(p.congestion, sizeof(p.congestion)));
	CHECK(str_ok(p.title, sizeof(p.title)));
	CHECK(str_ok(p.client_version, sizeof(p.client_version)));

	n1 = ip3_params_encode(&p, enc1, sizeof(enc1));
	CHECK(n1 > 0 && (size_t)n1 == strlen(enc1));
	ret = ip3_params_decode(enc1, (size_t)n1, &q, &err);
	CHECK(ret == 0);
	CHECK(params_equal(&p, &q));
	n2 = ip3_params_encode(&q, enc2, sizeof(enc2));
	CHECK(n2 == n1 && !memcmp(enc1, enc2, (size_t)n1));
	CHECK(ip3_params_encode(&p, enc2, (size_t)n1) == -ENOBUFS);
}

static void check_results(const char *buf, size_t size)
{
	static struct ip3_results r, q;
	static char enc1[4 * IP3_MAX_RESULTS_JSON],
		enc2[4 * IP3_MAX_RESULTS_JSON];
	struct lr_err err = { 0 };
	int ret, n1, n2;

	ret = ip3_results_decode(buf, size, &r, &err);
	CHECK(ret == 0 || ret == LR_EBADMSG || ret == LR_ETOOBIG);
	if (ret) {
		CHECK(err.code == ret);
		return;
	}
	CHECK(r.nstreams <= IP3_MAX_STREAMS);
	CHECK(r.sender_has_retransmits >= -1 && r.sender_has_retransmits <= 1);
	CHECK(isfinite(r.cpu_total) && isfinite(r.cpu_user) &&
	      isfinite(r.cpu_system));
	for (unsigned i = 0; i < r.nstreams; i++) {
		CHECK(r.streams[i].id >= 1);
		CHECK(r.streams[i].retransmits >= -1);
		CHECK(isfinite(r.streams[i].jitter));
		CHECK(isfinite(r.streams[i].start_time));
		CHECK(isfinite(r.streams[i].end_time));
	}

	/* Re-encoded numbers may be longer than the peer's text. */
	n1 = ip3_results_encode(&r, enc1, sizeof(enc1));
	CHECK(n1 > 0 && (size_t)n1 == strlen(enc1));
	if ((size_t)n1 > IP3_MAX_RESULTS_JSON)
		return;
	ret = ip3_results_decode(enc1, (size_t)n1, &q, &err);
	CHECK(ret == 0);
	CHECK(results_equal(&r, &q));
	n2 = ip3_results_encode(&q, enc2, sizeof(enc2));
	CHECK(n2 == n1 && !memcmp(enc1, enc2, (size_t)n1));
}

static void check_server_output(const char *buf, size_t size)
{
	static struct ip3_results r;
	static char enc[IP3_MAX_RESULTS_TEXT_JSON];
	struct lr_err err = { 0 };
	char *text = (char *)1, *again = NULL;
	int ret, n;

	/* a -J server's document: an object printed back as JSON */
	ret = ip3_server_output_json_decode(buf, size, &text, &err);
	CHECK(ret == 0 || ret == LR_EBADMSG || ret == LR_ETOOBIG ||
	      ret == -ENOMEM);
	if (!ret && text) {
		CHECK(strlen(text) <= IP3_MAX_SERVER_OUTPUT && text[0] == '{');
		free(text);
	}
	text = (char *)1;
	ret = ip3_server_output_decode(buf, size, &text, &err);
	CHECK(ret == 0 || ret == LR_EBADMSG || ret == LR_ETOOBIG ||
	      ret == -ENOMEM);
	if (ret) {
		CHECK(text == (char *)1);
		CHECK(err.code == ret);
		return;
	}
	if (!text)
		return;
	CHECK(strlen(text) <= IP3_MAX_SERVER_OUTPUT);
	/* the text goes back out in a results message and reads back the
	 * same, up to its first NUL */
	memset(&r, 0, sizeof(r));
	n = ip3_results_encode_text(&r, text, enc, sizeof(enc));
	CHECK(n > 0 && (size_t)n == strlen(enc));
	if (text[0]) {
		ret = ip3_server_output_decode(enc, (size_t)n, &again, &err);
		CHECK(ret == 0 && again && !strcmp(again, text));
	}
	free(again);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf;

	if (size > IP3_MAX_RESULTS_JSON + 16)
		return 0;

	if (size >= 4) {
		int64_t n = ip3_json_len(data, IP3_MAX_JSON);

		CHECK(n == LR_EBADMSG || n == LR_ETOOBIG ||
		      (n >= 1 && n <= IP3_MAX_JSON));
		n = ip3_json_len(data, IP3_MAX_RESULTS_JSON);
		CHECK(n == LR_EBADMSG || n == LR_ETOOBIG ||
		      (n >= 1 && n <= IP3_MAX_RESULTS_JSON));
	}
	if (size >= IP3_COOKIE_LEN) {
		uint8_t *c = malloc(IP3_COOKIE_LEN);

		CHECK(c);
		memcpy(c, data, IP3_COOKIE_LEN);
		if (ip3_cookie_valid(c))
			CHECK(c[IP3_COOKIE_LEN - 1] == '\0' &&
			      strlen((const char *)c) == IP3_COOKIE_LEN - 1);
		free(c);
	}

	buf = malloc(size ? size : 1);
	CHECK(buf);
	if (size)
		memcpy(buf, data, size);
	check_params(buf, size);
	check_results(buf, size);
	check_server_output(buf, size);
	free(buf);
	return 0;
}
