// SPDX-License-Identifier: MIT
/*
 * iperf3's control protocol messages: cookie, length prefix, parameter and
 * results JSON. Decoders treat every byte as hostile: the text is bounded
 * before cJSON sees it, every known key is checked for its JSON type and
 * range, a known key given twice is refused, and the out-parameter is
 * written only on success.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "crypto.h"
#include "ip3.h"
#include "banned.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char cookie_chars[] = "abcdefghijklmnopqrstuvwxyz234567";

/* Largest integer a double holds exactly: the bound of 64-bit fields. */
#define IP3_MAX_EXACT 9007199254740992.0 /* 2^53 */

#define IP3_MAX_TIME   86400u	   /* 24 h */
#define IP3_MAX_LEN    (16u << 20) /* 16 MiB */
#define IP3_MAX_UDPLEN 65507u	   /* largest UDP payload over IPv4 */
#define IP3_DEF_TIME   10u
#define IP3_DEF_LEN    (128u << 10)
#define IP3_DEF_UDPLEN 1460u
#define IP3_MAX_MSS    65535u
#define IP3_MAX_WINDOW ((uint32_t)INT_MAX) /* setsockopt takes an int */
/* Seconds and percent in results: generous, but finite and sane. */
#define IP3_MAX_SECONDS 1e7
#define IP3_MAX_PERCENT 1e6

int ip3_cookie_new(char out[IP3_COOKIE_LEN])
{
	uint8_t rnd[IP3_COOKIE_LEN - 1];
	size_t i;
	int ret;

	ret = crypto_random(rnd, sizeof(rnd));
	if (ret)
		return ret;
	/* 256 is a multiple of 32: the mask keeps the choice uniform. */
	for (i = 0; i < sizeof(rnd); i++)
		out[i] = cookie_chars[rnd[i] & 31];
	out[IP3_COOKIE_LEN - 1] = '\0';
	return 0;
}

static bool cookie_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= '2' && c <= '7');
}

bool ip3_cookie_valid(const uint8_t *buf)
{
	size_t i;

	if (!buf)
		return false;
	for (i = 0; i < IP3_COOKIE_LEN - 1; i++)
		if (!cookie_char(buf[i]))
			return false;
	return buf[IP3_COOKIE_LEN - 1] == '\0';
}

int64_t ip3_json_len(const uint8_t hdr[4], uint32_t max)
{
	uint32_t n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
		     (uint32_t)hdr[2] << 8 | (uint32_t)hdr[3];

	if (n == 0)
		return LR_EBADMSG;
	if (n > max)
		return LR_ETOOBIG;
	return n;
}

/* ---- checked readers of one JSON value ---- */

/* An integer in [lo, hi]: a finite number without a fraction. */
static int get_int(const cJSON *it, double lo, double hi, double *out)
{
	double d;

	if (!cJSON_IsNumber(it))
		return -1;
	d = it->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < lo || d > hi)
		return -1;
	*out = d;
	return 0;
}

static int get_u32(const cJSON *it, uint32_t lo, uint32_t hi, uint32_t *out)
{
	double d;

	if (get_int(it, lo, hi, &d))
		return -1;
	*out = (uint32_t)d;
	return 0;
}

static int get_u64(const cJSON *it, uint64_t *out)
{
	double d;

	if (get_int(it, 0, IP3_MAX_EXACT, &d))
		return -1;
	*out = (uint64_t)d;
	return 0;
}

/*
 * iperf 3.12 and older print -1 (an int stored in an unsigned 64-bit
 * field) as 18446744073709551615 in retransmits and
 * sender_has_retransmits: read 2^64 - 1 (2^64 as a double) as -1.
 */
static int get_int_m1(const cJSON *it, double lo, double hi, double *out)
{
	if (cJSON_IsNumber(it) && it->valuedouble == 18446744073709551616.0) {
		*out = -1;
		return lo <= -1 ? 0 : -1;
	}
	return get_int(it, lo, hi, out);
}

/* A finite number in [lo, hi], fractions allowed. */
static int get_real(const cJSON *it, double lo, double hi, double *out)
{
	double d;

	if (!cJSON_IsNumber(it))
		return -1;
	d = it->valuedouble;
	if (!isfinite(d) || d < lo || d > hi)
		return -1;
	*out = d;
	return 0;
}

/* iperf3 flags: JSON true/false, or the integer 0 or 1. */
static int get_flag(const cJSON *it, bool *out)
{
	double d;

	if (cJSON_IsBool(it)) {
		*out = cJSON_IsTrue(it);
		return 0;
	}
	if (get_int(it, 0, 1, &d))
		return -1;
	*out = d != 0;
	return 0;
}

/* A string of printable ASCII that fits cap bytes with its NUL. */
static int get_str(const cJSON *it, char *out, size_t cap)
{
	const char *s;
	size_t n;

	if (!cJSON_IsString(it) || !it->valuestring)
		return -1;
	s = it->valuestring;
	n = strlen(s);
	if (n >= cap)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return -1;
	memcpy(out, s, n + 1);
	return 0;
}

/* Congestion control names go to setsockopt: [A-Za-z0-9_-] only. */
static bool cc_name_ok(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return false;
	return true;
}

/* ---- parameters ---- */

enum pkey {
	PK_TCP,
	PK_UDP,
	PK_OMIT,
	PK_TIME,
	PK_NUM,
	PK_BLOCKCOUNT,
	PK_PARALLEL,
	PK_MSS,
	PK_NODELAY,
	PK_REVERSE,
	PK_BIDIR,
	PK_WINDOW,
	PK_LEN,
	PK_BANDWIDTH,
	PK_CONGESTION,
	PK_GET_SERVER_OUTPUT,
	PK_ZEROCOPY,
	PK_TITLE,
	PK_CLIENT_VERSION,
	PK_UDP_COUNTERS64,
};

/* iperf3's spellings (send_parameters / get_parameters). */
static const char *const pkey_names[] = {
	[PK_TCP] = "tcp",
	[PK_UDP] = "udp",
	[PK_OMIT] = "omit",
	[PK_TIME] = "time",
	[PK_NUM] = "num",
	[PK_BLOCKCOUNT] = "blockcount",
	[PK_PARALLEL] = "parallel",
	[PK_MSS] = "MSS",
	[PK_NODELAY] = "nodelay",
	[PK_REVERSE] = "reverse",
	[PK_BIDIR] = "bidirectional",
	[PK_WINDOW] = "window",
	[PK_LEN] = "len",
	[PK_BANDWIDTH] = "bandwidth",
	[PK_CONGESTION] = "congestion",
	[PK_GET_SERVER_OUTPUT] = "get_server_output",
	[PK_ZEROCOPY] = "zerocopy",
	[PK_TITLE] = "title",
	[PK_CLIENT_VERSION] = "client_version",
	[PK_UDP_COUNTERS64] = "udp_counters_64bit",
};

static int pkey_find(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(pkey_names); i++)
		if (!strcmp(name, pkey_names[i]))
			return (int)i;
	return -1;
}

/* Check and store one known key; -1 names a bad value. */
static int param_set(struct ip3_params *p, enum pkey k, const cJSON *it,
		     bool *len_given)
{
	switch (k) {
	case PK_TCP: return get_flag(it, &p->tcp);
	case PK_UDP: return get_flag(it, &p->udp);
	case PK_OMIT: return get_u32(it, 0, IP3_MAX_TIME, &p->omit_s);
	case PK_TIME: return get_u32(it, 0, IP3_MAX_TIME, &p->time_s);
	case PK_NUM: return get_u64(it, &p->bytes);
	case PK_BLOCKCOUNT: return get_u64(it, &p->blocks);
	case PK_PARALLEL: return get_u32(it, 1, IP3_MAX_STREAMS, &p->parallel);
	case PK_MSS: return get_u32(it, 0, IP3_MAX_MSS, &p->mss);
	case PK_NODELAY: return get_flag(it, &p->nodelay);
	case PK_REVERSE: return get_flag(it, &p->reverse);
	case PK_BIDIR: return get_flag(it, &p->bidir);
	case PK_WINDOW: return get_u32(it, 0, IP3_MAX_WINDOW, &p->window);
	case PK_LEN:
		*len_given = true;
		return get_u32(it, 1, IP3_MAX_LEN, &p->len);
	case PK_BANDWIDTH: return get_u64(it, &p->bandwidth);
	case PK_CONGESTION:
		if (get_str(it, p->congestion, sizeof(p->congestion)))
			return -1;
		return cc_name_ok(p->congestion) ? 0 : -1;
	case PK_GET_SERVER_OUTPUT: return get_flag(it, &p->get_server_output);
	case PK_ZEROCOPY: return get_flag(it, &p->zerocopy);
	case PK_TITLE: return get_str(it, p->title, sizeof(p->title));
	case PK_UDP_COUNTERS64: return get_flag(it, &p->udp_counters64);
	case PK_CLIENT_VERSION:
		return get_str(it, p->client_version,
			       sizeof(p->client_version));
	}
	return -1;
}

/* Parse text of at most max bytes into an object; NULL and *ret on error. */
static cJSON *parse_object(const char *json, size_t len, size_t max, int *ret,
			   struct lr_err *err, const char *what)
{
	cJSON *root;

	if (len > max) {
		*ret = lr_err_set(err, LR_ETOOBIG,
				  "iperf3 %s: %zu bytes of JSON, limit %zu",
				  what, len, max);
		return NULL;
	}
	if (!json || len == 0) {
		*ret = lr_err_set(err, LR_EBADMSG, "iperf3 %s: empty JSON",
				  what);
		return NULL;
	}
	root = cJSON_ParseWithLength(json, len);
	if (!root) {
		*ret = lr_err_set(err, LR_EBADMSG, "iperf3 %s: not valid JSON",
				  what);
		return NULL;
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		*ret = lr_err_set(err, LR_EBADMSG,
				  "iperf3 %s: JSON is not an object", what);
		return NULL;
	}
	return root;
}

int ip3_params_decode(const char *json, size_t len, struct ip3_params *p,
		      struct lr_err *err)
{
	struct ip3_params v;
	uint32_t seen = 0;
	bool len_given = false;
	const cJSON *it;
	cJSON *root;
	int ret = 0;

	root = parse_object(json, len, IP3_MAX_JSON, &ret, err, "parameters");
	if (!root)
		return ret;

	memset(&v, 0, sizeof(v));
	v.time_s = IP3_DEF_TIME;
	v.parallel = 1;

	cJSON_ArrayForEach(it, root)
	{
		int k;

		if (!it->string)
			continue;
		k = pkey_find(it->string);
		if (k < 0)
			continue; /* unknown keys are iperf3's future */
		if (seen & (1u << k)) {
			ret = lr_err_set(err, LR_EBADMSG,
					 "iperf3 parameters: \"%s\" twice",
					 pkey_names[k]);
			goto out_delete;
		}
		seen |= 1u << k;
		if (param_set(&v, (enum pkey)k, it, &len_given)) {
			ret = lr_err_set(err, LR_EBADMSG,
					 "iperf3 parameters: bad value of "
					 "\"%s\"",
					 pkey_names[k]);
			goto out_delete;
		}
	}

	if (v.tcp && v.udp) {
		ret = lr_err_set(err, LR_EBADMSG,
				 "iperf3 parameters: both tcp and udp");
		goto out_delete;
	}
	if (!v.udp)
		v.tcp = true;
	if (!len_given)
		v.len = v.udp ? IP3_DEF_UDPLEN : IP3_DEF_LEN;
	if (v.udp && v.len > IP3_MAX_UDPLEN) {
		ret = lr_err_set(err, LR_EBADMSG,
				 "iperf3 parameters: UDP len %u above %u",
				 v.len, IP3_MAX_UDPLEN);
		goto out_delete;
	}
	if (v.reverse && v.bidir) {
		ret = lr_err_set(err, LR_EBADMSG,
				 "iperf3 parameters: both reverse and "
				 "bidirectional");
		goto out_delete;
	}
	/* Both directions' streams must fit one results message. */
	if (v.bidir && 2 * v.parallel > IP3_MAX_STREAMS) {
		ret = lr_err_set(err, LR_EBADMSG,
				 "iperf3 parameters: bidirectional with "
				 "parallel %u above %u",
				 v.parallel, IP3_MAX_STREAMS / 2);
		goto out_delete;
	}
	*p = v;
out_delete:
	cJSON_Delete(root);
	return ret;
}

/* Render root into out; the length, -ENOBUFS or -ENOMEM. */
static int render(cJSON *root, bool ok, char *out, size_t cap)
{
	int icap = cap > INT_MAX ? INT_MAX : (int)cap;

	if (!ok)
		return -ENOMEM;
	if (!out || icap < 1)
		return -ENOBUFS;
	if (!cJSON_PrintPreallocated(root, out, icap, false))
		return -ENOBUFS;
	return (int)strlen(out);
}

/*
 * Numbers are rendered here, not by cJSON: its printer accepts a text
 * that reads back only approximately (15 digits), which loses the low
 * bits of byte counts near 2^53 and of times.
 */
static bool add_int(cJSON *o, const char *k, int64_t v)
{
	char t[32];

	snprintf(t, sizeof(t), "%" PRId64, v);
	return cJSON_AddRawToObject(o, k, t) != NULL;
}

static bool add_u64(cJSON *o, const char *k, uint64_t v)
{
	char t[32];

	snprintf(t, sizeof(t), "%" PRIu64, v);
	return cJSON_AddRawToObject(o, k, t) != NULL;
}

/* The shortest of %.15g..%.17g that reads back exactly; never NaN. */
static bool add_real(cJSON *o, const char *k, double d)
{
	char t[40];
	int prec;

	if (!isfinite(d))
		d = 0;
	for (prec = 15; prec <= 17; prec++) {
		snprintf(t, sizeof(t), "%.*g", prec, d);
		if (strtod(t, NULL) == d)
			break;
	}
	return cJSON_AddRawToObject(o, k, t) != NULL;
}

static bool add_true(cJSON *o, const char *k)
{
	return cJSON_AddTrueToObject(o, k) != NULL;
}

int ip3_params_encode(const struct ip3_params *p, char *out, size_t cap)
{
	cJSON *root = cJSON_CreateObject();
	bool ok = root != NULL;
	int ret;

	if (!ok)
		return -ENOMEM;
	/* A stock server sets a flag when its key is present at all, even
	 * as false: flags are sent only when true. */
	ok = ok && add_true(root, p->udp ? "udp" : "tcp");
	ok = ok && add_u64(root, "omit", p->omit_s);
	ok = ok && add_u64(root, "time", p->time_s);
	if (p->bytes)
		ok = ok && add_u64(root, "num", p->bytes);
	if (p->blocks)
		ok = ok && add_u64(root, "blockcount", p->blocks);
	if (p->mss)
		ok = ok && add_u64(root, "MSS", p->mss);
	if (p->nodelay)
		ok = ok && add_true(root, "nodelay");
	ok = ok && add_u64(root, "parallel", p->parallel);
	if (p->reverse)
		ok = ok && add_true(root, "reverse");
	if (p->bidir)
		ok = ok && add_true(root, "bidirectional");
	if (p->window)
		ok = ok && add_u64(root, "window", p->window);
	if (p->len)
		ok = ok && add_u64(root, "len", p->len);
	if (p->bandwidth)
		ok = ok && add_u64(root, "bandwidth", p->bandwidth);
	if (p->title[0])
		ok = ok && cJSON_AddStringToObject(root, "title", p->title);
	if (p->congestion[0])
		ok = ok &&
		     cJSON_AddStringToObject(root, "congestion", p->congestion);
	if (p->get_server_output)
		ok = ok && add_true(root, "get_server_output");
	if (p->zerocopy)
		ok = ok && add_true(root, "zerocopy");
	if (p->udp_counters64)
		ok = ok && add_true(root, "udp_counters_64bit");
	if (p->client_version[0])
		ok = ok && cJSON_AddStringToObject(root, "client_version",
						   p->client_version);
	ret = render(root, ok, out, cap);
	cJSON_Delete(root);
	return ret;
}

/* ---- results ---- */

static const cJSON *member(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* The results object without text; NULL and *ret on failure. */
static cJSON *results_tree(const struct ip3_results *r, int *ret)
{
	cJSON *root;
	cJSON *arr;
	bool ok;
	unsigned i;

	if (r->nstreams > IP3_MAX_STREAMS) {
		*ret = -EINVAL;
		return NULL;
	}
	root = cJSON_CreateObject();
	ok = root != NULL;
	ok = ok && add_real(root, "cpu_util_total", r->cpu_total);
	ok = ok && add_real(root, "cpu_util_user", r->cpu_user);
	ok = ok && add_real(root, "cpu_util_system", r->cpu_system);
	ok = ok &&
	     add_int(root, "sender_has_retransmits", r->sender_has_retransmits);
	if (ok && r->congestion_used[0])
		ok = cJSON_AddStringToObject(root, "congestion_used",
					     r->congestion_used) != NULL;
	arr = ok ? cJSON_AddArrayToObject(root, "streams") : NULL;
	ok = ok && arr;
	for (i = 0; ok && i < r->nstreams; i++) {
		const struct ip3_stream_result *s = &r->streams[i];
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			ok = false;
			break;
		}
		ok = ok && add_u64(o, "id", s->id);
		ok = ok && add_u64(o, "bytes", s->bytes);
		ok = ok && add_int(o, "retransmits", s->retransmits);
		ok = ok && add_real(o, "jitter", s->jitter);
		ok = ok && add_u64(o, "errors", s->errors);
		ok = ok && add_u64(o, "packets", s->packets);
		ok = ok && add_real(o, "start_time", s->start_time);
		ok = ok && add_real(o, "end_time", s->end_time);
	}
	if (!ok) {
		cJSON_Delete(root);
		*ret = -ENOMEM;
		return NULL;
	}
	return root;
}

int ip3_results_encode(const struct ip3_results *r, char *out, size_t cap)
{
	cJSON *root;
	int ret = 0;

	root = results_tree(r, &ret);
	if (!root)
		return ret;
	ret = render(root, true, out, cap);
	cJSON_Delete(root);
	return ret;
}

static const char truncated_mark[] = "[... truncated]\n";

/* A copy of the first n bytes of text cut back to a line end, with the
 * truncation mark; NULL on allocation failure. */
static char *text_cut(const char *text, size_t n)
{
	size_t m = n;
	char *t;

	while (m > 0 && text[m - 1] != '\n')
		m--;
	if (m == 0)
		m = n; /* one long line: cut inside it */
	t = malloc(m + sizeof(truncated_mark));
	if (!t)
		return NULL;
	memcpy(t, text, m);
	memcpy(t + m, truncated_mark, sizeof(truncated_mark));
	return t;
}

int ip3_results_encode_text(const struct ip3_results *r, const char *text,
			    char *out, size_t cap)
{
	size_t n = text ? strlen(text) : 0;
	cJSON *root, *item = NULL;
	char *cut = NULL;
	int ret = 0, tries;

	if (n == 0)
		return ip3_results_encode(r, out, cap);
	root = results_tree(r, &ret);
	if (!root)
		return ret;
	if (n > IP3_MAX_SERVER_OUTPUT - sizeof(truncated_mark))
		n = IP3_MAX_SERVER_OUTPUT - sizeof(truncated_mark);
	/* Halve the text until the message fits: at most ~20 rounds. */
	for (tries = 0; tries < 40; tries++) {
		const char *t = text;

		if (n < strlen(text)) {
			free(cut);
			cut = text_cut(text, n);
			if (!cut) {
				ret = -ENOMEM;
				goto out_delete;
			}
			t = cut;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(root,
							"server_output_text");
		item = cJSON_AddStringToObject(root, "server_output_text", t);
		if (!item) {
			ret = -ENOMEM;
			goto out_delete;
		}
		ret = render(root, true, out, cap);
		if (ret != -ENOBUFS || n == 0)
			break;
		n /= 2;
	}
	if (ret == -ENOBUFS) /* not even without the text */
		ret = ip3_results_encode(r, out, cap);
out_delete:
	free(cut);
	cJSON_Delete(root);
	return ret;
}

int ip3_server_output_decode(const char *json, size_t len, char **text,
			     struct lr_err *err)
{
	const cJSON *it;
	cJSON *root;
	char *t = NULL;
	size_t n;
	int ret = 0;

	root = parse_object(json, len, IP3_MAX_RESULTS_TEXT_JSON, &ret, err,
			    "results");
	if (!root)
		return ret;
	it = member(root, "server_output_text");
	if (it) {
		if (!cJSON_IsString(it) || !it->valuestring) {
			ret = lr_err_set(err, LR_EBADMSG,
					 "iperf3 results: server_output_text "
					 "is not a string");
			goto out_delete;
		}
		n = strlen(it->valuestring);
		if (n > IP3_MAX_SERVER_OUTPUT) {
			ret = lr_err_set(err, LR_ETOOBIG,
					 "iperf3 results: server output of "
					 "%zu bytes, limit %u",
					 n, IP3_MAX_SERVER_OUTPUT);
			goto out_delete;
		}
		t = malloc(n + 1);
		if (!t) {
			ret = lr_err_set(err, -ENOMEM,
					 "iperf3 results: out of memory");
			goto out_delete;
		}
		memcpy(t, it->valuestring, n + 1);
	}
	*text = t;
out_delete:
	cJSON_Delete(root);
	return ret;
}

int ip3_server_output_json_decode(const char *json, size_t len, char **text,
				  struct lr_err *err)
{
	const cJSON *it;
	cJSON *root;
	char *t = NULL;
	int ret = 0;

	root = parse_object(json, len, IP3_MAX_RESULTS_TEXT_JSON, &ret, err,
			    "results");
	if (!root)
		return ret;
	it = member(root, "server_output_json");
	if (it) {
		if (!cJSON_IsObject(it)) {
			ret = lr_err_set(err, LR_EBADMSG,
					 "iperf3 results: server_output_json "
					 "is not an object");
			goto out_delete;
		}
		t = cJSON_PrintUnformatted(it);
		if (!t) {
			ret = lr_err_set(err, -ENOMEM,
					 "iperf3 results: out of memory");
			goto out_delete;
		}
		if (strlen(t) > IP3_MAX_SERVER_OUTPUT) {
			ret = lr_err_set(err, LR_ETOOBIG,
					 "iperf3 results: server output of "
					 "%zu bytes, limit %u",
					 strlen(t), IP3_MAX_SERVER_OUTPUT);
			cJSON_free(t);
			t = NULL;
			goto out_delete;
		}
	}
	*text = t;
out_delete:
	cJSON_Delete(root);
	return ret;
}

/* One element of streams[]; -1 when a key is missing or bad. */
static int stream_decode(const cJSON *o, struct ip3_stream_result *s)
{
	const cJSON *st, *et;
	double d;

	if (!cJSON_IsObject(o))
		return -1;
	if (get_u32(member(o, "id"), 1, INT32_MAX, &s->id) ||
	    get_u64(member(o, "bytes"), &s->bytes) ||
	    get_int_m1(member(o, "retransmits"), -1, IP3_MAX_EXACT, &d))
		return -1;
	s->retransmits = (int64_t)d;
	if (get_real(member(o, "jitter"), 0, IP3_MAX_SECONDS, &s->jitter))
		return -1;
	/* iperf3 counts a late packet as lost, then takes it back: its
	 * error count can go below zero. Such a count means no loss. */
	if (get_int_m1(member(o, "errors"), -IP3_MAX_EXACT, IP3_MAX_EXACT, &d))
		return -1;
	s->errors = d < 0 ? 0 : (uint64_t)d;
	if (get_u64(member(o, "packets"), &s->packets))
		return -1;
	/* Missing before iperf 3.2: then 0. */
	st = member(o, "start_time");
	et = member(o, "end_time");
	s->start_time = 0;
	s->end_time = 0;
	if (st && get_real(st, 0, IP3_MAX_SECONDS, &s->start_time))
		return -1;
	if (et && get_real(et, 0, IP3_MAX_SECONDS, &s->end_time))
		return -1;
	return 0;
}

int ip3_results_decode(const char *json, size_t len, struct ip3_results *r,
		       struct lr_err *err)
{
	struct ip3_results v;
	const cJSON *arr, *it;
	cJSON *root;
	unsigned n = 0, i;
	double d;
	int ret = 0;

	root = parse_object(json, len, IP3_MAX_RESULTS_TEXT_JSON, &ret, err,
			    "results");
	if (!root)
		return ret;

	memset(&v, 0, sizeof(v));
	if (get_real(member(root, "cpu_util_total"), 0, IP3_MAX_PERCENT,
		     &v.cpu_total) ||
	    get_real(member(root, "cpu_util_user"), 0, IP3_MAX_PERCENT,
		     &v.cpu_user) ||
	    get_real(member(root, "cpu_util_system"), 0, IP3_MAX_PERCENT,
		     &v.cpu_system)) {
		ret = lr_err_set(err, LR_EBADMSG,
				 "iperf3 results: bad or missing cpu_util");
		goto out_delete;
	}
	if (get_int_m1(member(root, "sender_has_retransmits"), -1, 1, &d)) {
		ret = lr_err_set(err, LR_EBADMSG,
				 "iperf3 results: bad or missing "
				 "sender_has_retransmits");
		goto out_delete;
	}
	v.sender_has_retransmits = (int)d;
	/* shown only: a name that is too long or odd is left out */
	it = member(root, "congestion_used");
	if (it && (get_str(it, v.congestion_used, sizeof(v.congestion_used)) ||
		   !cc_name_ok(v.congestion_used)))
		v.congestion_used[0] = '\0';
	arr = member(root, "streams");
	if (!cJSON_IsArray(arr)) {
		ret = lr_err_set(err, LR_EBADMSG,
				 "iperf3 results: streams is not an array");
		goto out_delete;
	}
	cJSON_ArrayForEach(it, arr)
	{
		if (n == IP3_MAX_STREAMS) {
			ret = lr_err_set(err, LR_ETOOBIG,
					 "iperf3 results: more than %u streams",
					 IP3_MAX_STREAMS);
			goto out_delete;
		}
		if (stream_decode(it, &v.streams[n])) {
			ret = lr_err_set(err, LR_EBADMSG,
					 "iperf3 results: bad stream %u", n);
			goto out_delete;
		}
		for (i = 0; i < n; i++) {
			if (v.streams[i].id == v.streams[n].id) {
				ret = lr_err_set(err, LR_EBADMSG,
						 "iperf3 results: stream id "
						 "%u twice",
						 v.streams[n].id);
				goto out_delete;
			}
		}
		n++;
	}
	v.nstreams = n;
	*r = v;
out_delete:
	cJSON_Delete(root);
	return ret;
}
