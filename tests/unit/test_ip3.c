// SPDX-License-Identifier: MIT
/* Unit tests of ip3.[ch]: iperf3's cookie, length prefix and JSON. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "ip3.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int decode_p(const char *s, struct ip3_params *p)
{
	struct lr_err err = { 0 };
	int ret = ip3_params_decode(s, strlen(s), p, &err);

	if (ret)
		assert_int_equal(err.code, ret);
	return ret;
}

static int decode_r(const char *s, struct ip3_results *r)
{
	struct lr_err err = { 0 };
	int ret = ip3_results_decode(s, strlen(s), r, &err);

	if (ret)
		assert_int_equal(err.code, ret);
	return ret;
}

/* ---- cookie ---- */

static void test_cookie_new(void **state)
{
	char a[IP3_COOKIE_LEN], b[IP3_COOKIE_LEN];

	(void)state;
	assert_int_equal(ip3_cookie_new(a), 0);
	assert_int_equal(ip3_cookie_new(b), 0);
	assert_int_equal(strlen(a), IP3_COOKIE_LEN - 1);
	assert_true(ip3_cookie_valid((const uint8_t *)a));
	assert_true(ip3_cookie_valid((const uint8_t *)b));
	assert_memory_not_equal(a, b, IP3_COOKIE_LEN);
}

static void test_cookie_valid(void **state)
{
	const char *good = "wdfifvb7sh435efbnv53mi2ingad5fb2xzm3";
	uint8_t c[IP3_COOKIE_LEN];

	(void)state;
	memcpy(c, good, IP3_COOKIE_LEN);
	assert_true(ip3_cookie_valid(c));

	c[5] = '1'; /* not in [a-z2-7] */
	assert_false(ip3_cookie_valid(c));
	c[5] = '8';
	assert_false(ip3_cookie_valid(c));
	c[5] = 'A'; /* uppercase */
	assert_false(ip3_cookie_valid(c));
	c[5] = '\0'; /* short */
	assert_false(ip3_cookie_valid(c));
	c[5] = 'a';
	assert_true(ip3_cookie_valid(c));

	c[IP3_COOKIE_LEN - 1] = 'a'; /* missing NUL */
	assert_false(ip3_cookie_valid(c));
	assert_false(ip3_cookie_valid(NULL));
}

/* ---- length prefix ---- */

static void test_json_len(void **state)
{
	static const struct {
		uint8_t hdr[4];
		uint32_t max;
		int64_t want;
	} t[] = {
		{ { 0, 0, 0, 1 }, IP3_MAX_JSON, 1 },
		{ { 0, 0, 0x20, 0 }, IP3_MAX_JSON, 8192 },
		{ { 0, 0, 0x20, 1 }, IP3_MAX_JSON, LR_ETOOBIG },
		{ { 0, 0, 0, 0 }, IP3_MAX_JSON, LR_EBADMSG },
		{ { 0xff, 0xff, 0xff, 0xff }, IP3_MAX_JSON, LR_ETOOBIG },
		{ { 0xff, 0xff, 0xff, 0xff }, IP3_MAX_RESULTS_JSON, LR_ETOOBIG },
		{ { 0, 1, 0, 0 }, IP3_MAX_RESULTS_JSON, 65536 },
		{ { 0, 1, 0, 1 }, IP3_MAX_RESULTS_JSON, LR_ETOOBIG },
		{ { 0x80, 0, 0, 0 }, IP3_MAX_RESULTS_JSON, LR_ETOOBIG },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++)
		assert_int_equal(ip3_json_len(t[i].hdr, t[i].max), t[i].want);
}

/* ---- parameters ---- */

static void test_params_iperf312(void **state)
{
	const char *s = "{\"tcp\":true,\"omit\":0,\"time\":10,\"num\":0,"
			"\"blockcount\":0,\"parallel\":1,\"len\":131072,"
			"\"pacing_timer\":1000,\"client_version\":\"3.12\"}";
	struct ip3_params p;

	(void)state;
	assert_int_equal(decode_p(s, &p), 0);
	assert_true(p.tcp);
	assert_false(p.udp);
	assert_int_equal(p.time_s, 10);
	assert_int_equal(p.parallel, 1);
	assert_int_equal(p.len, 131072);
	assert_int_equal(p.bytes, 0);
	assert_string_equal(p.client_version, "3.12");
	assert_string_equal(p.title, "");
}

static void test_params_defaults(void **state)
{
	struct ip3_params p;

	(void)state;
	assert_int_equal(decode_p("{}", &p), 0);
	assert_true(p.tcp);
	assert_false(p.udp);
	assert_int_equal(p.time_s, 10);
	assert_int_equal(p.parallel, 1);
	assert_int_equal(p.len, 128 * 1024);

	assert_int_equal(decode_p("{\"udp\":1,\"bandwidth\":1000000}", &p), 0);
	assert_true(p.udp);
	assert_false(p.tcp);
	assert_int_equal(p.len, 1460);
	assert_int_equal(p.bandwidth, 1000000);

	/* false flags and integer flags */
	assert_int_equal(decode_p("{\"tcp\":false,\"udp\":0,\"reverse\":1,"
				  "\"nodelay\":true,\"zerocopy\":0}",
				  &p),
			 0);
	assert_true(p.tcp);
	assert_true(p.reverse);
	assert_true(p.nodelay);
	assert_false(p.zerocopy);

	/* -n: time 0 with bytes */
	assert_int_equal(decode_p("{\"tcp\":true,\"time\":0,\"num\":1048576,"
				  "\"unknown\":[1,{\"x\":null}]}",
				  &p),
			 0);
	assert_int_equal(p.time_s, 0);
	assert_int_equal(p.bytes, 1048576);
}

static void fill_params(struct ip3_params *p)
{
	memset(p, 0, sizeof(*p));
	p->udp = true;
	p->bidir = true;
	p->time_s = 30;
	p->bytes = 123456789012ull;
	p->blocks = 77;
	p->omit_s = 2;
	p->parallel = 64;
	p->len = 1400;
	p->bandwidth = 9007199254740992ull;
	p->window = 4194304;
	p->mss = 1400;
	p->nodelay = true;
	p->zerocopy = true;
	p->get_server_output = true;
	p->udp_counters64 = true;
	snprintf(p->congestion, sizeof(p->congestion), "bbr");
	snprintf(p->title, sizeof(p->title), "a \"quoted\" \\ title");
	snprintf(p->client_version, sizeof(p->client_version), "linerate");
}

static void assert_params_equal(const struct ip3_params *a,
				const struct ip3_params *b)
{
	assert_int_equal(a->tcp, b->tcp);
	assert_int_equal(a->udp, b->udp);
	assert_int_equal(a->reverse, b->reverse);
	assert_int_equal(a->bidir, b->bidir);
	assert_int_equal(a->time_s, b->time_s);
	assert_int_equal(a->bytes, b->bytes);
	assert_int_equal(a->blocks, b->blocks);
	assert_int_equal(a->omit_s, b->omit_s);
	assert_int_equal(a->parallel, b->parallel);
	assert_int_equal(a->len, b->len);
	assert_int_equal(a->bandwidth, b->bandwidth);
	assert_int_equal(a->window, b->window);
	assert_int_equal(a->mss, b->mss);
	assert_int_equal(a->nodelay, b->nodelay);
	assert_int_equal(a->zerocopy, b->zerocopy);
	assert_int_equal(a->get_server_output, b->get_server_output);
	assert_int_equal(a->udp_counters64, b->udp_counters64);
	assert_string_equal(a->congestion, b->congestion);
	assert_string_equal(a->title, b->title);
	assert_string_equal(a->client_version, b->client_version);
}

static void test_params_roundtrip(void **state)
{
	struct ip3_params p, q;
	struct lr_err err = { 0 };
	char buf[IP3_MAX_JSON];
	int n;

	(void)state;
	fill_params(&p);
	n = ip3_params_encode(&p, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(buf));
	assert_null(strchr(buf, '\n'));
	assert_int_equal(ip3_params_decode(buf, (size_t)n, &q, &err), 0);
	assert_params_equal(&p, &q);

	/* minimal TCP: flags that are false are not sent at all */
	memset(&p, 0, sizeof(p));
	p.tcp = true;
	p.time_s = 10;
	p.parallel = 1;
	p.len = 131072;
	n = ip3_params_encode(&p, buf, sizeof(buf));
	assert_true(n > 0);
	assert_string_equal(buf, "{\"tcp\":true,\"omit\":0,\"time\":10,"
				 "\"parallel\":1,\"len\":131072}");
	assert_int_equal(ip3_params_decode(buf, (size_t)n, &q, &err), 0);
	assert_params_equal(&p, &q);

	/* every other flag alone */
	p.reverse = true;
	n = ip3_params_encode(&p, buf, sizeof(buf));
	assert_non_null(strstr(buf, "\"reverse\":true"));
	assert_null(strstr(buf, "false"));
	assert_int_equal(ip3_params_decode(buf, (size_t)n, &q, &err), 0);
	assert_params_equal(&p, &q);
}

static void test_params_enobufs(void **state)
{
	struct ip3_params p;
	char buf[IP3_MAX_JSON];
	int n, i;

	(void)state;
	fill_params(&p);
	n = ip3_params_encode(&p, buf, sizeof(buf));
	assert_true(n > 0);
	for (i = 0; i <= n; i++)
		assert_int_equal(ip3_params_encode(&p, buf, (size_t)i),
				 -ENOBUFS);
	assert_int_equal(ip3_params_encode(&p, NULL, 0), -ENOBUFS);
}

static void test_params_hostile(void **state)
{
	static const struct {
		const char *json;
		int want;
	} t[] = {
		{ "", LR_EBADMSG },
		{ "not json", LR_EBADMSG },
		{ "{\"tcp\":true", LR_EBADMSG },
		{ "[1,2,3]", LR_EBADMSG },
		{ "\"tcp\"", LR_EBADMSG },
		{ "null", LR_EBADMSG },
		{ "{\"parallel\":\"4\"}", LR_EBADMSG },
		{ "{\"parallel\":4.5}", LR_EBADMSG },
		{ "{\"parallel\":-1}", LR_EBADMSG },
		{ "{\"parallel\":0}", LR_EBADMSG },
		{ "{\"parallel\":129}", LR_EBADMSG },
		{ "{\"parallel\":1000}", LR_EBADMSG },
		{ "{\"parallel\":true}", LR_EBADMSG },
		{ "{\"parallel\":null}", LR_EBADMSG },
		{ "{\"parallel\":[4]}", LR_EBADMSG },
		{ "{\"parallel\":1,\"parallel\":2}", LR_EBADMSG },
		{ "{\"time\":1e300}", LR_EBADMSG },
		{ "{\"time\":1e999}", LR_EBADMSG },
		{ "{\"time\":-1e999}", LR_EBADMSG },
		{ "{\"time\":86401}", LR_EBADMSG },
		{ "{\"omit\":86401}", LR_EBADMSG },
		{ "{\"num\":-1}", LR_EBADMSG },
		{ "{\"num\":1e20}", LR_EBADMSG },
		{ "{\"blockcount\":0.5}", LR_EBADMSG },
		{ "{\"bandwidth\":1e999}", LR_EBADMSG },
		{ "{\"len\":0}", LR_EBADMSG },
		{ "{\"len\":17000000}", LR_EBADMSG },
		{ "{\"len\":16777217}", LR_EBADMSG },
		{ "{\"udp\":true,\"len\":65508}", LR_EBADMSG },
		{ "{\"window\":4294967296}", LR_EBADMSG },
		{ "{\"MSS\":70000}", LR_EBADMSG },
		{ "{\"tcp\":true,\"udp\":true}", LR_EBADMSG },
		{ "{\"tcp\":1,\"udp\":1}", LR_EBADMSG },
		{ "{\"tcp\":2}", LR_EBADMSG },
		{ "{\"tcp\":\"true\"}", LR_EBADMSG },
		{ "{\"reverse\":0.5}", LR_EBADMSG },
		{ "{\"reverse\":true,\"bidirectional\":true}", LR_EBADMSG },
		{ "{\"bidirectional\":true,\"parallel\":65}", LR_EBADMSG },
		{ "{\"title\":5}", LR_EBADMSG },
		{ "{\"title\":\"a\\u0007b\"}", LR_EBADMSG },
		{ "{\"title\":\"line\\nbreak\"}", LR_EBADMSG },
		{ "{\"title\":\"\\u00e9t\\u00e9\"}", LR_EBADMSG },
		{ "{\"title\":\"\x1b[31m\"}", LR_EBADMSG },
		{ "{\"congestion\":\"cubic; rm\"}", LR_EBADMSG },
		{ "{\"congestion\":\"0123456789abcdef\"}", LR_EBADMSG },
		{ "{\"client_version\":null}", LR_EBADMSG },
		{ "{\"get_server_output\":\"yes\"}", LR_EBADMSG },
		{ "{\"udp_counters_64bit\":2}", LR_EBADMSG },
	};
	struct ip3_params p;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		memset(&p, 0x5a, sizeof(p));
		if (decode_p(t[i].json, &p) != t[i].want)
			fail_msg("case %zu: %s", i, t[i].json);
		/* out-parameter untouched on failure */
		assert_int_equal(p.parallel, 0x5a5a5a5a);
	}
}

static void test_params_limits(void **state)
{
	struct ip3_params p;
	struct lr_err err = { 0 };
	char big[IP3_MAX_JSON + 2];
	char s[256];
	size_t n;

	(void)state;
	/* inclusive bounds accepted */
	assert_int_equal(decode_p("{\"parallel\":128,\"time\":86400,"
				  "\"len\":16777216,\"congestion\":"
				  "\"0123456789abcde\"}",
				  &p),
			 0);
	assert_int_equal(p.parallel, 128);
	assert_int_equal(p.len, 16777216);
	assert_int_equal(decode_p("{\"udp\":true,\"len\":65507,"
				  "\"bidirectional\":1,\"parallel\":64}",
				  &p),
			 0);

	/* title of 127 characters fits; 128 does not */
	n = (size_t)snprintf(s, sizeof(s), "{\"title\":\"%0127d\"}", 0);
	assert_int_equal(ip3_params_decode(s, n, &p, &err), 0);
	assert_int_equal(strlen(p.title), 127);
	n = (size_t)snprintf(s, sizeof(s), "{\"title\":\"%0128d\"}", 0);
	assert_int_equal(ip3_params_decode(s, n, &p, &err), LR_EBADMSG);
	n = (size_t)snprintf(s, sizeof(s), "{\"client_version\":\"%064d\"}", 0);
	assert_int_equal(ip3_params_decode(s, n, &p, &err), LR_EBADMSG);

	/* the 8 KiB cap, before parsing: padding after valid JSON */
	memset(big, ' ', sizeof(big));
	big[0] = '{';
	big[IP3_MAX_JSON - 1] = '}';
	assert_int_equal(ip3_params_decode(big, IP3_MAX_JSON, &p, &err), 0);
	big[IP3_MAX_JSON - 1] = ' ';
	big[IP3_MAX_JSON] = '}';
	assert_int_equal(ip3_params_decode(big, IP3_MAX_JSON + 1, &p, &err),
			 LR_ETOOBIG);
	assert_int_equal(err.code, LR_ETOOBIG);
	assert_int_equal(ip3_params_decode(big, 0, &p, &err), LR_EBADMSG);
	assert_int_equal(ip3_params_decode(big, SIZE_MAX, &p, &err),
			 LR_ETOOBIG);

	/* the length is honoured: no read past it */
	assert_int_equal(ip3_params_decode("{}garbage", 2, &p, &err), 0);
	assert_int_equal(ip3_params_decode("{\"parallel\":4}", 13, &p, &err),
			 LR_EBADMSG);

	/* NULL err is allowed */
	assert_int_equal(ip3_params_decode("[]", 2, &p, NULL), LR_EBADMSG);
}

static void test_params_nesting(void **state)
{
	struct ip3_params p;
	struct lr_err err = { 0 };
	char *b = malloc(IP3_MAX_JSON);
	size_t i, half = IP3_MAX_JSON / 2 - 8;

	(void)state;
	assert_non_null(b);
	/* {"x":[[[[...]]]]} nested about 4000 deep */
	memcpy(b, "{\"x\":", 5);
	for (i = 0; i < half; i++)
		b[5 + i] = '[';
	for (i = 0; i < half; i++)
		b[5 + half + i] = ']';
	b[5 + 2 * half] = '}';
	assert_int_equal(ip3_params_decode(b, 6 + 2 * half, &p, &err),
			 LR_EBADMSG);

	/* a huge flat array of an unknown key: bounded by the cap */
	memcpy(b, "{\"x\":[", 6);
	for (i = 6; i < IP3_MAX_JSON - 3; i += 2) {
		b[i] = '1';
		b[i + 1] = ',';
	}
	memcpy(b + i - 1, "1]}", 3);
	assert_int_equal(ip3_params_decode(b, i + 2, &p, &err), 0);
	free(b);
}

/* ---- results ---- */

static void fill_results(struct ip3_results *r, unsigned n)
{
	unsigned i;

	memset(r, 0, sizeof(*r));
	r->cpu_total = 12.345678901234567;
	r->cpu_user = 1.5;
	r->cpu_system = 10.845678901234567;
	r->sender_has_retransmits = 1;
	r->nstreams = n;
	for (i = 0; i < n; i++) {
		struct ip3_stream_result *s = &r->streams[i];

		s->id = i == 0 ? 1 : i + 2;
		s->bytes = 1234567890123ull + i;
		s->retransmits = i == 1 ? -1 : (int64_t)i * 7;
		s->jitter = 0.000123 * i;
		s->errors = i;
		s->packets = 1000 + i;
		s->start_time = 0;
		s->end_time = 10.000123 + i;
	}
}

static void assert_results_equal(const struct ip3_results *a,
				 const struct ip3_results *b)
{
	unsigned i;

	assert_true(a->cpu_total == b->cpu_total);
	assert_true(a->cpu_user == b->cpu_user);
	assert_true(a->cpu_system == b->cpu_system);
	assert_int_equal(a->sender_has_retransmits, b->sender_has_retransmits);
	assert_int_equal(a->nstreams, b->nstreams);
	for (i = 0; i < a->nstreams; i++) {
		const struct ip3_stream_result *x = &a->streams[i];
		const struct ip3_stream_result *y = &b->streams[i];

		assert_int_equal(x->id, y->id);
		assert_int_equal(x->bytes, y->bytes);
		assert_int_equal(x->retransmits, y->retransmits);
		assert_true(x->jitter == y->jitter);
		assert_int_equal(x->errors, y->errors);
		assert_int_equal(x->packets, y->packets);
		assert_true(x->start_time == y->start_time);
		assert_true(x->end_time == y->end_time);
	}
}

static void test_results_roundtrip(void **state)
{
	static struct ip3_results r, q;
	static char buf[IP3_MAX_RESULTS_JSON];
	struct lr_err err = { 0 };
	unsigned counts[] = { 0, 1, 2, IP3_MAX_STREAMS };
	size_t k;
	int n;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(counts); k++) {
		fill_results(&r, counts[k]);
		n = ip3_results_encode(&r, buf, sizeof(buf));
		assert_true(n > 0);
		assert_true((unsigned)n <= IP3_MAX_RESULTS_JSON);
		assert_int_equal(ip3_results_decode(buf, (size_t)n, &q, &err),
				 0);
		assert_results_equal(&r, &q);
	}
	assert_int_equal(ip3_results_encode(&r, buf, 10), -ENOBUFS);
	r.nstreams = IP3_MAX_STREAMS + 1;
	assert_int_equal(ip3_results_encode(&r, buf, sizeof(buf)), -EINVAL);
}

static void test_results_iperf3(void **state)
{
	/* as iperf 3.12 sends them: integers and doubles mixed */
	const char *s =
		"{\"cpu_util_total\":2.0741,\"cpu_util_user\":0.1285,"
		"\"cpu_util_system\":1.9456,\"sender_has_retransmits\":-1,"
		"\"congestion_used\":\"cubic\",\"streams\":[{\"id\":1,"
		"\"bytes\":11759124480,\"retransmits\":-1,\"jitter\":0,"
		"\"errors\":0,\"packets\":0,\"start_time\":0,"
		"\"end_time\":10.000452}]}";
	/* before 3.2: no start_time / end_time; UDP's negative errors */
	const char *old = "{\"cpu_util_total\":1,\"cpu_util_user\":0,"
			  "\"cpu_util_system\":1,\"sender_has_retransmits\":0,"
			  "\"streams\":[{\"id\":1,\"bytes\":1470,"
			  "\"retransmits\":-1,\"jitter\":1.5e-05,"
			  "\"errors\":-2,\"packets\":1}]}";
	const char *m1 = "{\"cpu_util_total\":76.1,\"cpu_util_user\":7.2,"
			 "\"cpu_util_system\":68.8,\"sender_has_retransmits\":"
			 "18446744073709551615,\"congestion_used\":\"bbr\","
			 "\"streams\":[{\"id\":1,\"bytes\":1537736704,"
			 "\"retransmits\":18446744073709551615,\"jitter\":0,"
			 "\"errors\":0,\"packets\":0,\"start_time\":0,"
			 "\"end_time\":1.000222}]}";
	struct ip3_results r;

	(void)state;
	assert_int_equal(decode_r(s, &r), 0);
	assert_int_equal(r.nstreams, 1);
	assert_int_equal(r.sender_has_retransmits, -1);
	assert_int_equal(r.streams[0].bytes, 11759124480ull);
	assert_int_equal(r.streams[0].retransmits, -1);
	assert_true(r.streams[0].end_time == 10.000452);
	assert_true(r.cpu_total == 2.0741);

	assert_int_equal(decode_r(old, &r), 0);
	assert_int_equal(r.streams[0].errors, 0);

	/* 3.12 prints -1 as 2^64 - 1 */
	assert_int_equal(decode_r(m1, &r), 0);
	assert_int_equal(r.sender_has_retransmits, -1);
	assert_int_equal(r.streams[0].retransmits, -1);
	assert_int_equal(decode_r(old, &r), 0);
	assert_int_equal(r.streams[0].errors, 0);
	assert_true(r.streams[0].end_time == 0);
	assert_true(r.streams[0].jitter == 1.5e-05);
}

#define RHEAD                                                              \
	"{\"cpu_util_total\":1,\"cpu_util_user\":0,\"cpu_util_system\":1," \
	"\"sender_has_retransmits\":1,"
#define STREAM(id, bytes)                                                    \
	"{\"id\":" id ",\"bytes\":" bytes ",\"retransmits\":0,\"jitter\":0," \
	"\"errors\":0,\"packets\":0}"

static void test_results_hostile(void **state)
{
	static const struct {
		const char *json;
		int want;
	} t[] = {
		{ "[]", LR_EBADMSG },
		{ "{}", LR_EBADMSG },
		{ RHEAD "\"streams\":{}}", LR_EBADMSG },
		{ RHEAD "\"streams\":\"x\"}", LR_EBADMSG },
		{ RHEAD "\"streams\":[1]}", LR_EBADMSG },
		{ RHEAD "\"streams\":[" STREAM("1", "-1") "]}", LR_EBADMSG },
		{ RHEAD "\"streams\":[" STREAM("1", "1.5") "]}", LR_EBADMSG },
		{ RHEAD "\"streams\":[" STREAM("1", "1e999") "]}", LR_EBADMSG },
		{ RHEAD "\"streams\":[" STREAM("1", "\"5\"") "]}", LR_EBADMSG },
		{ RHEAD "\"streams\":[" STREAM("0", "5") "]}", LR_EBADMSG },
		{ RHEAD "\"streams\":[" STREAM("-3", "5") "]}", LR_EBADMSG },
		{ RHEAD
		  "\"streams\":[" STREAM("1", "5") "," STREAM("1", "6") "]}",
		  LR_EBADMSG },
		{ RHEAD "\"streams\":[{\"id\":1}]}", LR_EBADMSG },
		{ RHEAD "\"streams\":[{\"id\":1,\"bytes\":1,\"retransmits\":-2,"
			"\"jitter\":0,\"errors\":0,\"packets\":0}]}",
		  LR_EBADMSG },
		{ RHEAD "\"streams\":[{\"id\":1,\"bytes\":1,\"retransmits\":0,"
			"\"jitter\":-1,\"errors\":0,\"packets\":0}]}",
		  LR_EBADMSG },
		{ RHEAD "\"streams\":[{\"id\":1,\"bytes\":1,\"retransmits\":0,"
			"\"jitter\":0,\"errors\":0,\"packets\":-1}]}",
		  LR_EBADMSG },
		{ RHEAD "\"streams\":[{\"id\":1,\"bytes\":1,\"retransmits\":0,"
			"\"jitter\":0,\"errors\":0,\"packets\":0,"
			"\"end_time\":1e999}]}",
		  LR_EBADMSG },
		{ "{\"cpu_util_total\":1e999,\"cpu_util_user\":0,"
		  "\"cpu_util_system\":1,\"sender_has_retransmits\":1,"
		  "\"streams\":[]}",
		  LR_EBADMSG },
		{ "{\"cpu_util_total\":\"1\",\"cpu_util_user\":0,"
		  "\"cpu_util_system\":1,\"sender_has_retransmits\":1,"
		  "\"streams\":[]}",
		  LR_EBADMSG },
		{ "{\"cpu_util_total\":1,\"cpu_util_user\":0,"
		  "\"cpu_util_system\":1,\"sender_has_retransmits\":2,"
		  "\"streams\":[]}",
		  LR_EBADMSG },
		{ "{\"cpu_util_total\":1,\"cpu_util_user\":0,"
		  "\"cpu_util_system\":1,\"streams\":[]}",
		  LR_EBADMSG },
	};
	struct ip3_results r;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		r.nstreams = 77;
		if (decode_r(t[i].json, &r) != t[i].want)
			fail_msg("case %zu: %s", i, t[i].json);
		assert_int_equal(r.nstreams, 77);
	}
}

static void test_results_too_many(void **state)
{
	static char buf[IP3_MAX_RESULTS_JSON + 16];
	struct lr_err err = { 0 };
	struct ip3_results r;
	size_t off;
	unsigned i;

	(void)state;
	off = (size_t)snprintf(buf, sizeof(buf), "%s\"streams\":[", RHEAD);
	for (i = 0; i <= IP3_MAX_STREAMS; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off,
					"%s{\"id\":%u,\"bytes\":1,"
					"\"retransmits\":0,\"jitter\":0,"
					"\"errors\":0,\"packets\":0}",
					i ? "," : "", i + 1);
	off += (size_t)snprintf(buf + off, sizeof(buf) - off, "]}");
	assert_true(off < IP3_MAX_RESULTS_JSON);
	assert_int_equal(ip3_results_decode(buf, off, &r, &err), LR_ETOOBIG);
	assert_int_equal(err.code, LR_ETOOBIG);

	/* the length is checked before a byte is read */
	assert_int_equal(ip3_results_decode(buf, IP3_MAX_RESULTS_TEXT_JSON + 1,
					    &r, &err),
			 LR_ETOOBIG);
	assert_int_equal(ip3_results_decode(buf, 0, &r, &err), LR_EBADMSG);
}

static void test_server_output_roundtrip(void **state)
{
	static struct ip3_results r, q;
	static char buf[IP3_MAX_RESULTS_TEXT_JSON];
	const char *text = "Accepted connection from 127.0.0.1\n"
			   "[  5]   0.00-1.00   sec  1.00 GBytes\t\"q\"\n";
	struct lr_err err = { 0 };
	char *out = (char *)1;
	int n;

	(void)state;
	fill_results(&r, 3);
	n = ip3_results_encode_text(&r, text, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(ip3_results_decode(buf, (size_t)n, &q, &err), 0);
	assert_results_equal(&r, &q);
	assert_int_equal(ip3_server_output_decode(buf, (size_t)n, &out, &err),
			 0);
	assert_non_null(out);
	assert_string_equal(out, text);
	free(out);

	/* no text: no key, and decode says NULL */
	n = ip3_results_encode_text(&r, NULL, buf, sizeof(buf));
	assert_true(n > 0);
	assert_null(strstr(buf, "server_output_text"));
	out = (char *)1;
	assert_int_equal(ip3_server_output_decode(buf, (size_t)n, &out, &err),
			 0);
	assert_null(out);
	n = ip3_results_encode_text(&r, "", buf, sizeof(buf));
	assert_true(n > 0);
	assert_null(strstr(buf, "server_output_text"));
}

static void test_server_output_truncate(void **state)
{
	static struct ip3_results r;
	static char buf[IP3_MAX_RESULTS_TEXT_JSON];
	struct lr_err err = { 0 };
	size_t big = 2 * IP3_MAX_SERVER_OUTPUT, i, plain;
	char *text = malloc(big + 1), *out = NULL;
	int n;

	(void)state;
	assert_non_null(text);
	for (i = 0; i < big; i++)
		text[i] = (i % 64 == 63) ? '\n' : 'x';
	text[big] = '\0';
	fill_results(&r, 2);
	plain = (size_t)ip3_results_encode(&r, buf, sizeof(buf));

	/* longer than IP3_MAX_SERVER_OUTPUT: cut at a line end, marked */
	n = ip3_results_encode_text(&r, text, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(ip3_server_output_decode(buf, (size_t)n, &out, &err),
			 0);
	assert_true(strlen(out) <= IP3_MAX_SERVER_OUTPUT);
	assert_non_null(strstr(out, "[... truncated]\n"));
	assert_true(strstr(out, "[... truncated]") == out ||
		    strstr(out, "[... truncated]")[-1] == '\n');
	free(out);

	/* a small buffer: the text shrinks to fit, the streams stay */
	n = ip3_results_encode_text(&r, text, buf, plain + 200);
	assert_true(n > 0 && (size_t)n < plain + 200);
	assert_int_equal(ip3_server_output_decode(buf, (size_t)n, &out, &err),
			 0);
	assert_non_null(out);
	free(out);
	/* no room for any text: the results alone */
	n = ip3_results_encode_text(&r, text, buf, plain + 16);
	assert_int_equal((size_t)n, plain);
	assert_int_equal(ip3_results_encode_text(&r, text, buf, 10), -ENOBUFS);
	free(text);
}

static void test_server_output_hostile(void **state)
{
	static const struct {
		const char *json;
		int want;
	} t[] = {
		{ "[]", LR_EBADMSG },
		{ "\"text\"", LR_EBADMSG },
		{ "{", LR_EBADMSG },
		{ "{\"server_output_text\":5}", LR_EBADMSG },
		{ "{\"server_output_text\":null}", LR_EBADMSG },
		{ "{\"server_output_text\":[\"a\"]}", LR_EBADMSG },
		{ "{\"server_output_text\":{}}", LR_EBADMSG },
		{ "{\"server_output_json\":{}}", 0 },
	};
	struct lr_err err = { 0 };
	static char big[IP3_MAX_RESULTS_TEXT_JSON];
	size_t i, off;
	char *out;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		out = (char *)1;
		if (ip3_server_output_decode(t[i].json, strlen(t[i].json), &out,
					     &err) != t[i].want)
			fail_msg("case %zu: %s", i, t[i].json);
		if (t[i].want)
			assert_ptr_equal(out, (char *)1);
		else
			assert_null(out);
	}
	/* the length is checked before a byte is read */
	assert_int_equal(ip3_server_output_decode(big,
						  IP3_MAX_RESULTS_TEXT_JSON + 1,
						  &out, &err),
			 LR_ETOOBIG);
	assert_int_equal(ip3_server_output_decode(big, 0, &out, &err),
			 LR_EBADMSG);
	/* a text above IP3_MAX_SERVER_OUTPUT in a message within bounds */
	off = (size_t)snprintf(big, sizeof(big), "{\"server_output_text\":\"");
	memset(big + off, 'a', IP3_MAX_SERVER_OUTPUT + 1);
	off += IP3_MAX_SERVER_OUTPUT + 1;
	memcpy(big + off, "\"}", 2);
	off += 2;
	out = (char *)1;
	assert_int_equal(ip3_server_output_decode(big, off, &out, &err),
			 LR_ETOOBIG);
	assert_ptr_equal(out, (char *)1);
}

/* server_output_json: a -J server's document, as JSON text */
static void test_server_output_json(void **state)
{
	struct lr_err err = { 0 };
	const char *ok = "{\"server_output_json\":{\"end\":{\"x\":1}}}";
	const char *none = "{\"streams\":[]}";
	const char *bad = "{\"server_output_json\":\"text\"}";
	char *t = (char *)1;

	(void)state;
	assert_int_equal(
		ip3_server_output_json_decode(ok, strlen(ok), &t, &err), 0);
	assert_non_null(t);
	assert_string_equal(t, "{\"end\":{\"x\":1}}");
	free(t);
	t = (char *)1;
	assert_int_equal(
		ip3_server_output_json_decode(none, strlen(none), &t, &err), 0);
	assert_null(t);
	t = (char *)1;
	assert_int_equal(ip3_server_output_json_decode(bad, strlen(bad), &t,
						       &err),
			 LR_EBADMSG);
	assert_ptr_equal(t, (char *)1); /* untouched on failure */
}

/* congestion_used: optional; shown only, so an odd one is dropped */
static void test_results_congestion_used(void **state)
{
	struct ip3_results r, q;
	struct lr_err err = { 0 };
	char buf[1024];
	int n;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.sender_has_retransmits = 1;
	snprintf(r.congestion_used, sizeof(r.congestion_used), "cubic");
	n = ip3_results_encode(&r, buf, sizeof(buf));
	assert_true(n > 0);
	assert_non_null(strstr(buf, "\"congestion_used\":\"cubic\""));
	assert_int_equal(ip3_results_decode(buf, (size_t)n, &q, &err), 0);
	assert_string_equal(q.congestion_used, "cubic");
	assert_int_equal(decode_r("{\"cpu_util_total\":1,\"cpu_util_user\":1,"
				  "\"cpu_util_system\":0,"
				  "\"sender_has_retransmits\":0,"
				  "\"congestion_used\":\"a b\\u001b[31m\","
				  "\"streams\":[]}",
				  &q),
			 0);
	assert_string_equal(q.congestion_used, "");
	assert_int_equal(decode_r("{\"cpu_util_total\":1,\"cpu_util_user\":1,"
				  "\"cpu_util_system\":0,"
				  "\"sender_has_retransmits\":0,"
				  "\"congestion_used\":7,\"streams\":[]}",
				  &q),
			 0);
	assert_string_equal(q.congestion_used, "");
	/* without it (iperf3 before 3.1): empty */
	r.congestion_used[0] = '\0';
	n = ip3_results_encode(&r, buf, sizeof(buf));
	assert_null(strstr(buf, "congestion_used"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cookie_new),
		cmocka_unit_test(test_cookie_valid),
		cmocka_unit_test(test_json_len),
		cmocka_unit_test(test_params_iperf312),
		cmocka_unit_test(test_params_defaults),
		cmocka_unit_test(test_params_roundtrip),
		cmocka_unit_test(test_params_enobufs),
		cmocka_unit_test(test_params_hostile),
		cmocka_unit_test(test_params_limits),
		cmocka_unit_test(test_params_nesting),
		cmocka_unit_test(test_results_roundtrip),
		cmocka_unit_test(test_results_iperf3),
		cmocka_unit_test(test_results_hostile),
		cmocka_unit_test(test_results_too_many),
		cmocka_unit_test(test_server_output_roundtrip),
		cmocka_unit_test(test_server_output_truncate),
		cmocka_unit_test(test_server_output_hostile),
		cmocka_unit_test(test_results_congestion_used),
		cmocka_unit_test(test_server_output_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
