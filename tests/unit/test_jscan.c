/* SPDX-License-Identifier: MIT */
/*
 * Unit test of util/jscan: the texts the fast door declines (each one the collector must read
 * itself: not JSON, an escape, a byte outside ASCII, a thread with an error or a value of an
 * unusual type or range, a repeated key in any object, an object of over 128 keys), the ones it
 * takes, and one
 * record read back field by field: the text handed on and each block's figures; and the
 * decimals of up to 19 digits it reads without strtod, against strtod.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/jscan.h"

#define TH(fields) "{\"tests\":[{\"parts\":[{\"per_thread\":[" fields "]}]}]}"
/* A thread as the binary writes one (the fields the reader takes, and two it does not). */
#define T0                                                                                         \
	"{\"index\":0,\"cpu\":2,\"release_at\":1.5,\"release_at_ns\":1500000000,\"time_s\":0.25,"  \
	"\"bytes\":4096,\"ops\":1,\"error\":null,\"reason\":null,\"core\":1}"
#define T1                                                                                         \
	"{\"index\":1,\"cpu\":3,\"release_at\":1.5,\"release_at_ns\":1500000100,\"time_s\":0.5,"   \
	"\"bytes\":4096,\"ops\":1,\"error\":null,\"reason\":null,\"core\":1}"

struct jscan_case {
	const char *text;
	int rc;
};

static const struct jscan_case jscan_cases[] = {
    {"{}", 0},
    {" {\"a\": [1, 2.5e-3, -0, true, false, null, {\"b\": \"c\"}]}\n", 0},
    {TH(T0 "," T1), 0},
    {TH(""), 0},
    {"{\"threads\":[{\"index\":0},{\"index\":1}]}", 0},
    {"{\"tests\":[{\"parts\":[{\"latency_hist\":{\"buckets\":[[1,2],[3,4]]}}]}]}", 0},
    /* a repeated key anywhere: the text handed on has none (the collector parses it as is) */
    {"{\"a\":1,\"a\":2}", -EINVAL},
    {"{\"a\":1,\"b\":{\"c\":1,\"d\":[{\"e\":1,\"e\":1}]}}", -EINVAL},
    {"{\"tests\":[{\"parts\":[{\"part\":\"2a\",\"part\":\"2b\"}]}]}", -EINVAL},
    {"{\"tests\":[{\"test\":\"2\",\"parts\":[],\"test\":\"1a\"}]}", -EINVAL},
    {"{\"tests\":[],\"tests\":[]}", -EINVAL},
    {"{\"tests\":[{\"parts\":[{\"latency_hist\":{\"buckets\":[],\"buckets\":[]}}]}]}", -EINVAL},
    {"{\"ab\":1,\"ba\":2,\"a\":3,\"b\":4}", 0},
    /* not JSON */
    {"", -EINVAL},
    {"[]", -EINVAL},
    {"{\"a\":1", -EINVAL},
    {"{\"a\":1,}", -EINVAL},
    {"{\"a\":01}", -EINVAL},
    {"{\"a\":1.}", -EINVAL},
    {"{\"a\":.5}", -EINVAL},
    {"{\"a\":1e}", -EINVAL},
    {"{\"a\":-}", -EINVAL},
    {"{\"a\":NaN}", -EINVAL},
    {"{\"a\":Infinity}", -EINVAL},
    {"{\"a\":tru}", -EINVAL},
    {"{} {}", -EINVAL},
    {"{\"a\":\"x\ty\"}", -EINVAL},
    {"{\"a\":1}\v", -EINVAL},
    /* the collector's own reading says what these are */
    {"{\"a\":\"\\n\"}", -EINVAL},
    {"{\"a\":\"\xc3\xa9\"}", -EINVAL},
    {TH("{\"index\":0,\"cpu\":2,\"release_at\":1.5,\"release_at_ns\":1,\"time_s\":0.25,"
	"\"bytes\":1,\"ops\":1,\"error\":\"EIO\"}"),
     -EINVAL},
    {TH("{\"index\":0,\"cpu\":null,\"release_at\":1.5,\"release_at_ns\":1,\"time_s\":0.25,"
	"\"bytes\":1,\"ops\":1,\"error\":null}"),
     -EINVAL},
    {TH("{\"index\":0,\"cpu\":2,\"release_at\":1.5,\"time_s\":0.25,\"error\":null,"
	"\"time_s\":0.5}"),
     -EINVAL},
    {TH("{\"index\":0,\"cpu\":2,\"release_at\":1.5,\"error\":null}"), -EINVAL},
    {TH("{\"index\":-1,\"cpu\":2,\"release_at\":1.5,\"time_s\":0.25,\"error\":null}"), -EINVAL},
    {TH("{\"index\":0,\"cpu\":2,\"release_at\":1.5,\"time_s\":-0.25,\"error\":null}"), -EINVAL},
    {TH("{\"index\":0,\"cpu\":2,\"release_at\":1.5,\"time_s\":1e8,\"error\":null}"), -EINVAL},
    {TH("{\"index\":0,\"cpu\":2,\"release_at\":1e12,\"time_s\":1,\"error\":null}"), -EINVAL},
    {TH("{\"index\":0,\"cpu\":2,\"release_at\":1e400,\"time_s\":1,\"error\":null}"), -EINVAL},
    {TH("{\"index\":0,\"cpu\":2,\"release_at\":true,\"time_s\":1,\"error\":null}"), -EINVAL},
    {TH("{\"index\":9223372036854775808,\"cpu\":2,\"release_at\":1,\"time_s\":1,"
	"\"error\":null}"),
     -EINVAL},
    {TH("{\"index\":0,\"cpu\":2,\"release_at\":1,\"time_s\":9007199254740993,\"error\":null}"),
     -EINVAL},
    {TH("[1]"), -EINVAL},
    {"{\"tests\":[{\"parts\":[{\"per_thread\":null}]}]}", -EINVAL},
    {"{\"threads\":{}}", -EINVAL},
    {"{\"threads\":[{\"a\":1,\"a\":2}]}", -EINVAL},
    {"{\"tests\":[{\"parts\":[{\"latency_hist\":{\"buckets\":[[1,2,3]]}}]}]}", -EINVAL},
    {"{\"tests\":[{\"parts\":[{\"latency_hist\":{\"buckets\":[[1,2.0]]}}]}]}", -EINVAL},
    {"{\"tests\":[{\"parts\":[{\"latency_hist\":{\"buckets\":[[1,99999999999999999999]]}}]}]}",
     -EINVAL},
};

static void test_cases(void)
{
	for (size_t i = 0; i < sizeof(jscan_cases) / sizeof(jscan_cases[0]); i++) {
		const struct jscan_case *c = &jscan_cases[i];
		struct jscan_buf out = {0};
		int rc = jscan_summary(c->text, strlen(c->text), 5, &out);
		CHECK_MSG(rc == c->rc, "case %zu (%s): %d, expected %d", i, c->text, rc, c->rc);
		CHECK_MSG(rc == 0 ? out.len > 0 && out.p[0] == 'D' : out.len == 0, "case %zu", i);
		jscan_buf_free(&out);
	}
}

/* An object of n distinct keys ("k0" ... ) nested in a generic member: taken up to 128 keys. */
static void test_many_keys(void)
{
	for (int n = 127; n <= 129; n++) {
		struct jscan_buf text = {0}, out = {0};
		char key[32];
		int rc;

		CHECK(jscan_buf_put(&text, "{\"x\":{", 6) == 0);
		for (int k = 0; k < n; k++) {
			int len = snprintf(key, sizeof(key), "%s\"k%d\":%d", k ? "," : "", k, k);
			CHECK(jscan_buf_put(&text, key, (size_t)len) == 0);
		}
		CHECK(jscan_buf_put(&text, "}}", 2) == 0);
		rc = jscan_summary((const char *)text.p, text.len, 5, &out);
		CHECK_MSG(rc == (n <= 128 ? 0 : -EINVAL), "%d keys: %d", n, rc);
		jscan_buf_free(&text);
		jscan_buf_free(&out);
	}
}

struct reader {
	const unsigned char *p;
	size_t at, len;
};

static int64_t rd(struct reader *r, size_t n)
{
	int64_t v = 0;
	if (r->at + n <= r->len)
		memcpy(&v, r->p + r->at, n);
	r->at += n;
	return v;
}

static double rdf(struct reader *r)
{
	double v = 0;
	if (r->at + 8 <= r->len)
		memcpy(&v, r->p + r->at, 8);
	r->at += 8;
	return v;
}

/* One part of three threads (one did not run) and a histogram, read back. */
static void test_record(void)
{
	static const char text[] =
	    "{\"threads\": [{\"index\": 0}, {\"index\": 1}, {\"index\": 2}],\n"
	    " \"tests\": [{\"parts\": [{\"part\": \"2a\", \"latency_hist\": {\"count\": 3, "
	    "\"buckets\": [[7, 1], [9, 2]]}, \"per_thread\": [" T0 "," T1
	    ",{\"index\":2,\"cpu\":4,\"release_at\":0,\"release_at_ns\":0,\"time_s\":0,"
	    "\"bytes\":4096,\"ops\":1,\"error\":null}]}]}]}";
	static const char want[] = "{\"threads\": 0,\n"
				   " \"tests\": [{\"parts\": [{\"part\": \"2a\", \"latency_hist\": "
				   "{\"count\": 3, \"buckets\": 1}, \"per_thread\": 2}]}]}";
	struct jscan_buf out = {0};
	REQUIRE(jscan_summary(text, strlen(text), 1, &out) == 0);
	struct reader r = {out.p, 0, out.len};
	CHECK(rd(&r, 1) == 'D');
	size_t tlen = (size_t)rd(&r, 4);
	REQUIRE(tlen == strlen(want) && r.at + tlen <= r.len);
	CHECK(memcmp(out.p + r.at, want, tlen) == 0);
	r.at += tlen;
	CHECK_U64(rd(&r, 4), 3); /* blocks */
	CHECK(rd(&r, 1) == 'P');
	CHECK_U64(rd(&r, 4), 3);
	CHECK(rd(&r, 1) == 'H');
	CHECK_U64(rd(&r, 4), 2);
	CHECK_U64(rd(&r, 8), 7);
	CHECK_U64(rd(&r, 8), 9);
	CHECK_U64(rd(&r, 8), 1);
	CHECK_U64(rd(&r, 8), 2);
	CHECK_U64(rd(&r, 8), 7); /* the least index, the greatest, the least count, their sum */
	CHECK_U64(rd(&r, 8), 9);
	CHECK_U64(rd(&r, 8), 1);
	CHECK(rd(&r, 1) == 1);
	CHECK_U64(rd(&r, 8), 3);
	CHECK(rd(&r, 1) == 'T');
	CHECK_U64(rd(&r, 4), 3); /* threads */
	CHECK_U64(rd(&r, 4), 2); /* ran: thread 2's release is 0 */
	CHECK(rdf(&r) == 0.25);
	CHECK(rdf(&r) == 0.5);
	CHECK(rd(&r, 1) == 1);
	CHECK(rdf(&r) == 1.5); /* the first least release: thread 0's */
	CHECK(rd(&r, 1) == 0);
	CHECK(rdf(&r) == 1.5);
	CHECK(rd(&r, 1) == 0);
	CHECK_U64(rd(&r, 4), 1); /* top 1: the slowest */
	CHECK(rdf(&r) == 0.5);
	CHECK(rd(&r, 1) == 0);
	CHECK_U64(rd(&r, 8), 1);
	CHECK_U64(rd(&r, 8), 3);
	CHECK(rd(&r, 1) == 1);	 /* the sums */
	CHECK_U64(rd(&r, 8), 0); /* the first release_at_ns: thread 2's 0 */
	CHECK(rdf(&r) == 0);	 /* (no offsets taken from a first release at 0) */
	rd(&r, 8);
	CHECK(rd(&r, 1) == 1); /* every thread's ops are 1 */
	CHECK_U64(rd(&r, 8), 1);
	CHECK(rd(&r, 1) == 1);
	CHECK_U64(rd(&r, 8), 4096);
	CHECK_U64(r.at, out.len);
	jscan_buf_free(&out);
}

/* The greatest release offset + time, and the ties of the slowest threads, as Python's. */
static void test_sums_and_ties(void)
{
	static const char text[] = TH(
	    "{\"index\":5,\"cpu\":0,\"release_at\":2,\"release_at_ns\":2000000000,\"time_s\":1,"
	    "\"bytes\":8,\"ops\":2,\"error\":null},"
	    "{\"index\":6,\"cpu\":1,\"release_at\":2.5,\"release_at_ns\":2500000000,\"time_s\":0.5,"
	    "\"bytes\":8,\"ops\":3,\"error\":null},"
	    "{\"index\":6,\"cpu\":1,\"release_at\":2.5,\"release_at_ns\":2500000000,\"time_s\":1.0,"
	    "\"bytes\":8,\"ops\":2,\"error\":null}");
	struct jscan_buf out = {0};
	REQUIRE(jscan_summary(text, strlen(text), 5, &out) == 0);
	struct reader r = {out.p, 0, out.len};
	rd(&r, 1);
	r.at += (size_t)rd(&r, 4);
	CHECK_U64(rd(&r, 4), 1);
	CHECK(rd(&r, 1) == 'T');
	CHECK_U64(rd(&r, 4), 3);
	CHECK_U64(rd(&r, 4), 3);
	r.at += 3 * 8;
	CHECK(rd(&r, 1) == 1);
	CHECK(rdf(&r) == 2.0); /* an integer */
	CHECK(rd(&r, 1) == 1);
	CHECK(rdf(&r) == 2.5);
	CHECK(rd(&r, 1) == 0);
	CHECK_U64(rd(&r, 4), 3);
	/* (1.0, 6, 1) > (1, 5, 0) > (0.5, 6, 1) */
	CHECK(rdf(&r) == 1.0);
	CHECK(rd(&r, 1) == 0);
	CHECK_U64(rd(&r, 8), 6);
	rd(&r, 8);
	CHECK(rdf(&r) == 1.0);
	CHECK(rd(&r, 1) == 1); /* the integer 1 kept as one */
	CHECK_U64(rd(&r, 8), 5);
	rd(&r, 8);
	r.at += 25;
	CHECK(rd(&r, 1) == 1);
	CHECK_U64(rd(&r, 8), 2000000000);
	CHECK(rdf(&r) == 1.5); /* (2.5 - 2) + 1.0, the last thread: the first to have it */
	CHECK_U64(rd(&r, 8), 6);
	CHECK(rd(&r, 1) == 0); /* ops differ */
	CHECK_U64(rd(&r, 8), 0);
	CHECK(rd(&r, 1) == 1);
	CHECK_U64(rd(&r, 8), 8);
	CHECK_U64(r.at, out.len);
	jscan_buf_free(&out);
}

/*
 * A thread as the binary writes it (its keys in driver/summary_json.c's order, two optional)
 * is read without looking its keys up: the same record as its keys in another order, and what
 * only looks like it (a key repeated, one more, a space before a colon, one missing) is read
 * as any thread is, or declined.
 */
#define WRITTEN_HEAD "{\"index\": 3, \"cpu\": 5, \"core\": 2, \"release_at\": 1800000000.0014074, "
#define WRITTEN_NS                                                                                 \
	"\"release_at_ns\": 1800000000001407552, \"first_io_at_ns\": 1800000000001409714, "
#define WRITTEN_TAIL                                                                               \
	"\"time_s\": 0.50392686, \"bytes\": 73728000, \"ops\": 18000, "                            \
	"\"deviation\": 0.031250000191852534, \"error\": null, \"reason\": null"
#define WRITTEN WRITTEN_HEAD WRITTEN_NS "\"late_by_s\": 0, " WRITTEN_TAIL "}"

/* Where the blocks of a record begin (their count, after its text). */
static size_t blocks_at(const struct jscan_buf *out)
{
	return 5 + (size_t)rd(&(struct reader){out->p, 1, out->len}, 4);
}

static int scan_text(const char *text, struct jscan_buf *out)
{
	out->len = 0;
	return jscan_summary(text, strlen(text), 5, out);
}

static void test_thread_as_written(void)
{
	static const char *same[] = {
	    TH(WRITTEN),
	    TH("{\"reason\": null, \"error\": null, \"deviation\": 0.031250000191852534, "
	       "\"ops\": 18000, \"bytes\": 73728000, \"time_s\": 0.50392686, \"late_by_s\": 0, "
	       "\"first_io_at_ns\": 1800000000001409714, \"release_at_ns\": 1800000000001407552, "
	       "\"release_at\": 1800000000.0014074, \"core\": 2, \"cpu\": 5, \"index\": 3}"),
	    TH(WRITTEN_HEAD WRITTEN_NS "\"late_by_s\": 0, \"first_pass_s\": 0.5, "
				       "\"rest_pass_median_s\": null, " WRITTEN_TAIL "}"),
	    TH("{\n  \"index\" : 3, \"cpu\": 5, \"core\": 2, \"release_at\": "
	       "1800000000.0014074, " WRITTEN_NS "\"late_by_s\": 0, " WRITTEN_TAIL "\n}"),
	    TH(WRITTEN_HEAD WRITTEN_NS "\"late_by_s\": 0, " WRITTEN_TAIL ", \"more\": [1]}"),
	    TH(WRITTEN_HEAD WRITTEN_NS WRITTEN_TAIL "}"), /* no late_by_s */
	};
	static const char *declined[] = {
	    TH(WRITTEN_HEAD WRITTEN_NS "\"late_by_s\": 0, " WRITTEN_TAIL ", \"reason\": null}"),
	    TH(WRITTEN_HEAD WRITTEN_NS "\"late_by_s\": 0, \"index\": 4, " WRITTEN_TAIL "}"),
	    TH(WRITTEN_HEAD WRITTEN_NS
	       "\"late_by_s\": 0, \"first_pass_s\": 1, \"first_pass_s\": 1, "
	       "" WRITTEN_TAIL "}"),
	    TH(WRITTEN_HEAD WRITTEN_NS "\"late_by_s\": 0, " WRITTEN_TAIL),
	};
	struct jscan_buf want = {0}, out = {0};

	REQUIRE(scan_text(same[0], &want) == 0);
	for (size_t i = 1; i < sizeof(same) / sizeof(same[0]); i++) {
		int rc = scan_text(same[i], &out);
		CHECK_MSG(rc == 0, "as written, case %zu: %d", i, rc);
		/* the same blocks after the text (the text differs where the keys do) */
		size_t a = blocks_at(&want), b = blocks_at(&out);
		CHECK_MSG(rc == 0 && want.len - a == out.len - b &&
			      memcmp(want.p + a, out.p + b, want.len - a) == 0,
			  "as written, case %zu: other blocks", i);
	}
	for (size_t i = 0; i < sizeof(declined) / sizeof(declined[0]); i++)
		CHECK_MSG(scan_text(declined[i], &out) == -EINVAL, "as written, declined %zu", i);
	jscan_buf_free(&want);
	jscan_buf_free(&out);
}

/*
 * A summary written as the binary writes it (indented by two spaces, buckets on one line),
 * with one change (shape): the objects of the plan and of per_thread, and the buckets, are read
 * in one comparison a member, with the white space learned from the object before; anything
 * else as any object is. Either way the blocks are those of the same text with a space before
 * every comma (which no quick path takes), and a repeated key is declined.
 */
enum quick_shape {
	SHAPE_WRITTEN,	     /* as written */
	SHAPE_DEEPER,	     /* thread 1 and plan entry 1 indented two more */
	SHAPE_NO_SPACE,	     /* thread 0 without a space after its colons */
	SHAPE_TIMED,	     /* thread 2 with the two timed-pass keys, plan entry 2 with smt */
	SHAPE_MORE,	     /* thread 1 with one more key */
	SHAPE_TAB,	     /* a tab before thread 2's last key */
	SHAPE_SPACED_PAIR,   /* a space in the middle of the buckets */
	SHAPE_REPEATED,	     /* thread 1 with a key repeated: declined */
	SHAPE_REPEATED_PLAN, /* plan entry 1 with a key repeated: declined */
	SHAPE_COUNT
};

static void put(struct jscan_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct jscan_buf *b, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	REQUIRE(n >= 0 && (size_t)n < sizeof(line) && jscan_buf_put(b, line, (size_t)n) == 0);
}

/*
 * The members "key": value (kv, n strings) of an object at indent ind, its braces at ind - 2;
 * the member kv[tab] after a tab too (tab >= n: none).
 */
static void put_object(struct jscan_buf *b, int ind, const char *colon, const char *const *kv,
		       size_t n, size_t tab)
{
	put(b, "{\n");
	for (size_t k = 0; k < n; k += 2)
		put(b, "%s%s%*s\"%s\"%s%s", k ? ",\n" : "", k == tab ? "\t" : "", ind, "", kv[k],
		    colon, kv[k + 1]);
	put(b, "\n%*s}", ind - 2, "");
}

static void written_summary(struct jscan_buf *b, enum quick_shape shape)
{
	b->len = 0;
	put(b, "{\n  \"schema\": \"stagebench.node/3\",\n  \"threads\": [\n");
	for (int i = 0; i < 3; i++) {
		char num[3][24];
		const char *kv[10] = {"index", num[0],	  "cpu", num[1], "core",
				      num[0],  "package", "0",	 "smt",	 "1"};
		size_t n = shape == SHAPE_TIMED && i == 2 ? 10 : 8;
		snprintf(num[0], sizeof(num[0]), "%d", i);
		snprintf(num[1], sizeof(num[1]), "%d", i + 2);
		if (shape == SHAPE_REPEATED_PLAN && i == 1)
			kv[4] = "cpu";
		put(b, "    ");
		put_object(b, shape == SHAPE_DEEPER && i == 1 ? 8 : 6, ": ", kv, n, n);
		put(b, i < 2 ? ",\n" : "\n");
	}
	put(b, "  ],\n  \"tests\": [\n    {\n      \"test\": \"2\",\n      \"parts\": [\n");
	put(b, "        {\n          \"part\": \"2a\",\n          \"latency_hist\": {\n");
	put(b, "            \"count\": 12,\n            \"buckets\": [[1100,7],[1101,%s5]]\n",
	    shape == SHAPE_SPACED_PAIR ? " " : "");
	put(b, "          },\n          \"per_thread\": [\n");
	for (int i = 0; i < 3; i++) {
		char num[6][40];
		const char *kv[34] = {"index",
				      num[0],
				      "cpu",
				      num[1],
				      "core",
				      num[0],
				      "release_at",
				      num[2],
				      "release_at_ns",
				      num[3],
				      "first_io_at_ns",
				      "1800000000001409714",
				      "late_by_s",
				      "0"};
		size_t n = 14;
		snprintf(num[0], sizeof(num[0]), "%d", i);
		snprintf(num[1], sizeof(num[1]), "%d", i + 2);
		snprintf(num[2], sizeof(num[2]), "1800000000.00%d1407", i);
		snprintf(num[3], sizeof(num[3]), "18000000000%d1407552", i);
		snprintf(num[4], sizeof(num[4]), "0.5039268%d", 9 - 3 * i);
		snprintf(num[5], sizeof(num[5]), "%d", 18000 + (shape == SHAPE_MORE && i == 1));
		if (shape == SHAPE_TIMED && i == 2) {
			kv[n++] = "first_pass_s", kv[n++] = "0.25";
			kv[n++] = "rest_pass_median_s", kv[n++] = "null";
		}
		const char *tail[] = {"time_s", num[4], "bytes",     "73728000",
				      "ops",	num[5], "deviation", "-0.052083332288802464",
				      "error",	"null", "reason",    "null"};
		for (size_t k = 0; k < sizeof(tail) / sizeof(tail[0]); k++)
			kv[n++] = tail[k];
		if (shape == SHAPE_MORE && i == 1)
			kv[n++] = "more", kv[n++] = "[1]";
		if (shape == SHAPE_REPEATED && i == 1)
			kv[n++] = "ops", kv[n++] = "1";
		put(b, "            ");
		put_object(b, shape == SHAPE_DEEPER && i == 1 ? 16 : 14,
			   shape == SHAPE_NO_SPACE && i == 0 ? ":" : ": ", kv, n,
			   shape == SHAPE_TAB && i == 2 ? n - 2 : n);
		put(b, i < 2 ? ",\n" : "\n");
	}
	put(b, "          ]\n        }\n      ]\n    }\n  ],\n  \"status\": \"ok\"\n}\n");
}

/* text with a space before each comma outside its strings (it has no escape). */
static void spaced(struct jscan_buf *to, const struct jscan_buf *text)
{
	bool in_string = false;
	to->len = 0;
	for (size_t i = 0; i < text->len; i++) {
		if (text->p[i] == '"')
			in_string = !in_string;
		if (text->p[i] == ',' && !in_string)
			REQUIRE(jscan_buf_put(to, " ", 1) == 0);
		REQUIRE(jscan_buf_put(to, text->p + i, 1) == 0);
	}
}

static void test_quick_paths(void)
{
	struct jscan_buf text = {0}, other = {0}, a = {0}, b = {0}, first = {0};

	for (int shape = 0; shape < SHAPE_COUNT; shape++) {
		written_summary(&text, (enum quick_shape)shape);
		spaced(&other, &text);
		a.len = b.len = 0;
		int ra = jscan_summary((const char *)text.p, text.len, 5, &a);
		int rb = jscan_summary((const char *)other.p, other.len, 5, &b);
		bool declined = shape == SHAPE_REPEATED || shape == SHAPE_REPEATED_PLAN;
		CHECK_MSG(ra == (declined ? -EINVAL : 0) && rb == ra, "shape %d: %d and %d", shape,
			  ra, rb);
		if (ra != 0 || rb != 0)
			continue;
		size_t at = blocks_at(&a), bt = blocks_at(&b);
		CHECK_MSG(a.len - at == b.len - bt && memcmp(a.p + at, b.p + bt, a.len - at) == 0,
			  "shape %d: the blocks differ from those read member by member", shape);
		if (shape == SHAPE_WRITTEN)
			REQUIRE(jscan_buf_put(&first, a.p + at, a.len - at) == 0);
		else if (shape == SHAPE_DEEPER || shape == SHAPE_NO_SPACE || shape == SHAPE_TAB ||
			 shape == SHAPE_SPACED_PAIR)
			CHECK_MSG(a.len - at == first.len &&
				      memcmp(a.p + at, first.p, first.len) == 0,
				  "shape %d: white space changed the blocks", shape);
	}
	/* three blocks: the plan's length, the buckets and three threads */
	struct reader r = {first.p, 0, first.len};
	CHECK(rd(&r, 4) == 3);
	CHECK(rd(&r, 1) == 'P' && rd(&r, 4) == 3);
	CHECK(rd(&r, 1) == 'H' && rd(&r, 4) == 2);
	CHECK(rd(&r, 8) == 1100 && rd(&r, 8) == 1101 && rd(&r, 8) == 7 && rd(&r, 8) == 5);
	CHECK(rd(&r, 8) == 1100 && rd(&r, 8) == 1101 && rd(&r, 8) == 5 && rd(&r, 1) == 1 &&
	      rd(&r, 8) == 12);
	CHECK(rd(&r, 1) == 'T' && rd(&r, 4) == 3 && rd(&r, 4) == 3);
	CHECK(rdf(&r) == 0.50392683 && rdf(&r) == 0.50392686 && rdf(&r) == 0.50392689);
	jscan_buf_free(&text);
	jscan_buf_free(&other);
	jscan_buf_free(&a);
	jscan_buf_free(&b);
	jscan_buf_free(&first);
}

/*
 * The times of a per_thread block come sorted, equal ones in their order: -0.0 and 0.0 as they
 * came (the collector's median of a part takes the one its file order puts first).
 */
#define TT(i, t)                                                                                   \
	"{\"index\":" #i ",\"cpu\":" #i ",\"release_at\":1.5,\"release_at_ns\":1500000000,"        \
	"\"time_s\":" t ",\"bytes\":1,\"ops\":1,\"error\":null}"
static void test_sorted_times(void)
{
	static const char text[] = TH(TT(0, "0.5") "," TT(1, "0.0") "," TT(2, "-0.0") "," TT(
	    3, "0.25") "," TT(4, "0.0") "," TT(5, "-0.0") "," TT(6, "7") "," TT(7, "0.125"));
	static const double want[] = {0.0, -0.0, 0.0, -0.0, 0.125, 0.25, 0.5, 7};
	struct jscan_buf out = {0};

	REQUIRE(jscan_summary(text, strlen(text), 5, &out) == 0);
	struct reader r = {out.p, blocks_at(&out), out.len};
	CHECK(rd(&r, 4) == 1);
	CHECK(rd(&r, 1) == 'T' && rd(&r, 4) == 8 && rd(&r, 4) == 8);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		double t = rdf(&r);
		CHECK_MSG(t == want[i] && signbit(t) == signbit(want[i]), "time %zu: %g", i, t);
	}
	jscan_buf_free(&out);
}

/*
 * A buckets block's figures (the least and greatest index, the least count, the sum): in any
 * order of the buckets; no sum when a count is negative or the sum is over 2^64 - 1; zeros
 * without buckets.
 */
#define HB(b) "{\"tests\":[{\"parts\":[{\"latency_hist\":{\"buckets\":" b "}}]}]}"
static void test_bucket_figures(void)
{
	static const struct {
		const char *text;
		int64_t lo_i, hi_i, lo_c;
		int fits;
		uint64_t sum;
	} cases[] = {
	    {HB("[[9,2],[3,5],[7,0]]"), 3, 9, 0, 1, 7},
	    {HB("[[4,1],[5,-1]]"), 4, 5, -1, 0, 0},
	    {HB("[[1,9223372036854775807],[2,9223372036854775807],[3,2]]"), 1, 3, 2, 0, 0},
	    {HB("[[1,9223372036854775807],[2,9223372036854775807],[3,1]]"), 1, 3, 1, 1, UINT64_MAX},
	    {HB("[]"), 0, 0, 0, 1, 0},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct jscan_buf out = {0};
		REQUIRE(jscan_summary(cases[k].text, strlen(cases[k].text), 5, &out) == 0);
		struct reader r = {out.p, blocks_at(&out), out.len};
		CHECK(rd(&r, 4) == 1 && rd(&r, 1) == 'H');
		int64_t n = rd(&r, 4);
		r.at += (size_t)(16 * n);
		int64_t lo_i = rd(&r, 8), hi_i = rd(&r, 8), lo_c = rd(&r, 8), fits = rd(&r, 1);
		uint64_t sum = (uint64_t)rd(&r, 8);
		CHECK_MSG(lo_i == cases[k].lo_i && hi_i == cases[k].hi_i && lo_c == cases[k].lo_c &&
			      fits == cases[k].fits && sum == cases[k].sum && r.at == r.len,
			  "case %zu: %lld %lld %lld %lld %llu", k, (long long)lo_i, (long long)hi_i,
			  (long long)lo_c, (long long)fits, (unsigned long long)sum);
		jscan_buf_free(&out);
	}
}

/* mant / 10^k by jscan_decimal and by strtod of the decimal: the same double, bit for bit. */
static int decimal_same(uint64_t mant, int k)
{
	char text[64];
	double mine, theirs;
	snprintf(text, sizeof(text), "%" PRIu64 "e-%d", mant, k);
	theirs = strtod(text, NULL);
	if (jscan_decimal(mant, k, &mine) != 0)
		return 0;
	CHECK_MSG(memcmp(&mine, &theirs, sizeof(mine)) == 0, "%s: %.17g, strtod %.17g", text, mine,
		  theirs);
	return memcmp(&mine, &theirs, sizeof(mine)) == 0;
}

static uint64_t next64(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17; /* xorshift64 */
	return *x;
}

static void test_decimal(void)
{
	static const uint64_t pow5[] = {1, 5, 25, 125, 625};
	uint64_t x = 88172645463325252u;
	int bad = 0;
	double d;

	if (jscan_decimal(1, 0, &d) == -ENOTSUP) {
		fprintf(stderr, "test_jscan: no 128-bit integers: jscan_decimal declines\n");
		CHECK(jscan_decimal(18000000000014074u, 7, &d) == -ENOTSUP);
		return;
	}
	CHECK(jscan_decimal(1, JSCAN_DECIMAL_MAX_K + 1, &d) == -ENOTSUP);
	/* the summaries' own: seconds since the epoch to 1e-7, a time to 1e-18 */
	bad += !decimal_same(18000000000014074u, 7);
	bad += !decimal_same(31250000191852534u, 18);
	bad += !decimal_same(0, 5);
	bad += !decimal_same(UINT64_MAX, 0);
	bad += !decimal_same(UINT64_MAX, JSCAN_DECIMAL_MAX_K);
	/* ties: (2M + 1) / 2^j, 54 bits over a power of two, written as (2M + 1) 5^j / 10^j */
	for (int i = 0; i < 20000; i++) {
		int j = i % 5;
		uint64_t odd = ((next64(&x) >> 11) | (UINT64_C(1) << 53)) | 1;
		if (odd > UINT64_MAX / pow5[j])
			odd >>= 3, odd |= 1;
		bad += !decimal_same(odd * pow5[j], j);
	}
	/* any 1 to 19 digits over any power of ten it takes */
	for (int i = 0; i < 200000; i++) {
		uint64_t mant = next64(&x), top = 1;
		int digits = 1 + (int)(next64(&x) % 19);
		for (int k = 1; k < digits; k++)
			top *= 10;
		mant %= top * 10;
		bad += !decimal_same(mant, (int)(next64(&x) % (JSCAN_DECIMAL_MAX_K + 1)));
	}
	CHECK_MSG(bad == 0, "%d decimals read unlike strtod", bad);
}

int main(void)
{
	test_decimal();
	test_cases();
	test_record();
	test_sums_and_ties();
	test_many_keys();
	test_thread_as_written();
	test_quick_paths();
	test_sorted_times();
	test_bucket_figures();
	return check_done();
}
