/* SPDX-License-Identifier: MIT */
/*
 * Unit test of util/json: exact output in pretty and compact mode for nested containers,
 * escaping, numbers and shorthands; misuse and write errors; round-tripping doubles.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "util/json.h"
#include "util/prng.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_json_build_nested(struct json *j)
{
	json_object_begin(j);
	json_kv_uint(j, "a", 1);
	json_key(j, "b");
	json_array_begin(j);
	json_uint(j, 1);
	json_int(j, -2);
	json_object_begin(j);
	json_key(j, "c");
	json_null(j);
	json_object_end(j);
	json_array_end(j);
	json_key(j, "d");
	json_object_begin(j);
	json_object_end(j);
	json_key(j, "e");
	json_array_begin(j);
	json_array_end(j);
	json_kv_string(j, "f", "x");
	json_object_end(j);
}

static void test_json_build_escapes(struct json *j)
{
	json_array_begin(j);
	json_string(j, "quote \" backslash \\ slash /");
	json_string(j, "\n\r\t\b\f\x01\x1f\x7f");
	json_string(j, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e");
	/* invalid: lone byte, truncated, overlong, surrogate, past U+10FFFF */
	json_string(j, "\xff|\xe2\x82|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80");
	json_string(j, "");
	json_string(j, NULL);
	json_array_end(j);
}

static void test_json_build_numbers(struct json *j)
{
	json_array_begin(j);
	json_double(j, 0.1);
	json_double(j, 1.5);
	json_double(j, 3);
	json_double(j, -0.0);
	json_double(j, 0.1 + 0.2);
	json_double(j, 1.0 / 3);
	json_double(j, 1e300);
	json_double(j, 5e-324);
	json_double(j, 1700000000.123456);
	json_double(j, NAN);
	json_double(j, INFINITY);
	json_double(j, -INFINITY);
	json_uint(j, UINT64_MAX);
	json_int(j, INT64_MIN);
	json_int(j, 0);
	json_bool(j, true);
	json_bool(j, false);
	json_array_end(j);
}

static void test_json_build_kv(struct json *j)
{
	json_object_begin(j);
	json_kv_string(j, "s", "v");
	json_kv_string(j, "n", NULL);
	json_kv_uint(j, "u", 7);
	json_kv_int(j, "i", -7);
	json_kv_double(j, "d", 0.25);
	json_kv_double(j, "nan", NAN);
	json_kv_bool(j, "b", true);
	json_kv_string(j, "k\"ey", "");
	json_object_end(j);
}

static void test_json_build_scalar(struct json *j)
{
	json_uint(j, 42);
}

static void test_json_build_deep(struct json *j)
{
	for (int i = 0; i < JSON_MAX_DEPTH - 1; i++)
		json_array_begin(j);
	for (int i = 0; i < JSON_MAX_DEPTH - 1; i++)
		json_array_end(j);
}

static void test_json_build_too_deep(struct json *j)
{
	for (int i = 0; i < JSON_MAX_DEPTH; i++)
		json_array_begin(j);
	for (int i = 0; i < JSON_MAX_DEPTH; i++)
		json_array_end(j);
}

static void test_json_build_extra_end(struct json *j)
{
	json_object_begin(j);
	json_object_end(j);
	json_object_end(j);
}

static void test_json_build_mismatched_end(struct json *j)
{
	json_object_begin(j);
	json_array_end(j);
}

static void test_json_build_value_without_key(struct json *j)
{
	json_object_begin(j);
	json_uint(j, 1);
	json_object_end(j);
}

static void test_json_build_key_in_array(struct json *j)
{
	json_array_begin(j);
	json_key(j, "a");
	json_uint(j, 1);
	json_array_end(j);
}

static void test_json_build_key_at_top(struct json *j)
{
	json_key(j, "a");
}

static void test_json_build_key_then_end(struct json *j)
{
	json_object_begin(j);
	json_key(j, "a");
	json_object_end(j);
}

static void test_json_build_two_keys(struct json *j)
{
	json_object_begin(j);
	json_key(j, "a");
	json_key(j, "b");
	json_uint(j, 1);
	json_object_end(j);
}

static void test_json_build_null_key(struct json *j)
{
	json_object_begin(j);
	json_kv_uint(j, NULL, 1);
	json_object_end(j);
}

static void test_json_build_unclosed(struct json *j)
{
	json_array_begin(j);
	json_uint(j, 1);
}

static void test_json_build_nothing(struct json *j)
{
	(void)j;
}

static void test_json_build_two_documents(struct json *j)
{
	json_uint(j, 1);
	json_uint(j, 2);
}

struct json_case {
	const char *name;
	void (*build)(struct json *j);
	int err;
	const char *pretty; /* expected output, NULL: not compared (misuse) */
	const char *compact;
};

static const struct json_case json_cases[] = {
    {"nested", test_json_build_nested, 0,
     "{\n"
     "  \"a\": 1,\n"
     "  \"b\": [\n"
     "    1,\n"
     "    -2,\n"
     "    {\n"
     "      \"c\": null\n"
     "    }\n"
     "  ],\n"
     "  \"d\": {},\n"
     "  \"e\": [],\n"
     "  \"f\": \"x\"\n"
     "}\n",
     "{\"a\":1,\"b\":[1,-2,{\"c\":null}],\"d\":{},\"e\":[],\"f\":\"x\"}\n"},
    {"escapes", test_json_build_escapes, 0, NULL,
     "[\"quote \\\" backslash \\\\ slash /\","
     "\"\\n\\r\\t\\b\\f\\u0001\\u001f\\u007f\","
     "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e\","
     "\"\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|"
     "\\ufffd\\ufffd\\ufffd\\ufffd\","
     "\"\",null]\n"},
    {"numbers", test_json_build_numbers, 0, NULL,
     "[0.1,1.5,3,-0,0.30000000000000004,0.3333333333333333,1e+300,4.94065645841247e-324,"
     "1700000000.123456,null,null,null,18446744073709551615,-9223372036854775808,0,true,"
     "false]\n"},
    {"kv", test_json_build_kv, 0,
     "{\n"
     "  \"s\": \"v\",\n"
     "  \"n\": null,\n"
     "  \"u\": 7,\n"
     "  \"i\": -7,\n"
     "  \"d\": 0.25,\n"
     "  \"nan\": null,\n"
     "  \"b\": true,\n"
     "  \"k\\\"ey\": \"\"\n"
     "}\n",
     "{\"s\":\"v\",\"n\":null,\"u\":7,\"i\":-7,\"d\":0.25,\"nan\":null,\"b\":true,"
     "\"k\\\"ey\":\"\"}\n"},
    {"scalar", test_json_build_scalar, 0, "42\n", "42\n"},
    {"deep", test_json_build_deep, 0, NULL,
     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n"},
    {"too deep", test_json_build_too_deep, -EINVAL, NULL, NULL},
    {"extra end", test_json_build_extra_end, -EINVAL, NULL, NULL},
    {"mismatched end", test_json_build_mismatched_end, -EINVAL, NULL, NULL},
    {"value without key", test_json_build_value_without_key, -EINVAL, NULL, NULL},
    {"key in array", test_json_build_key_in_array, -EINVAL, NULL, NULL},
    {"key at top level", test_json_build_key_at_top, -EINVAL, NULL, NULL},
    {"key then end", test_json_build_key_then_end, -EINVAL, NULL, NULL},
    {"two keys", test_json_build_two_keys, -EINVAL, NULL, NULL},
    {"null key", test_json_build_null_key, -EINVAL, NULL, NULL},
    {"unclosed", test_json_build_unclosed, -EINVAL, NULL, NULL},
    {"nothing", test_json_build_nothing, -EINVAL, NULL, NULL},
    {"two documents", test_json_build_two_documents, -EINVAL, NULL, NULL},
};

/* Run a builder into memory; returns the text (to free) and the result of json_finish. */
static char *test_json_run(void (*build)(struct json *j), bool pretty, int *err)
{
	struct json j;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	json_init(&j, f, pretty);
	build(&j);
	*err = json_finish(&j);
	fclose(f);
	return text;
}

static void test_json_cases(void)
{
	for (size_t i = 0; i < N(json_cases); i++) {
		const struct json_case *c = &json_cases[i];

		for (int pretty = 0; pretty <= 1; pretty++) {
			const char *want = pretty ? c->pretty : c->compact;
			int err = 1;
			char *got = test_json_run(c->build, pretty, &err);

			CHECK_MSG(got != NULL, "%s: open_memstream", c->name);
			if (!got)
				continue;
			CHECK_MSG(err == c->err, "%s (pretty=%d): %d, want %d", c->name, pretty,
				  err, c->err);
			if (want)
				CHECK_MSG(strcmp(got, want) == 0, "%s (pretty=%d):\n%s\nwant:\n%s",
					  c->name, pretty, got, want);
			free(got);
		}
	}
}

/* A full device: the buffered write fails when json_finish flushes it. */
static void test_json_write_error(void)
{
	FILE *f = fopen("/dev/full", "w");
	struct json j;

	if (!f) {
		printf("skip: no /dev/full\n");
		return;
	}
	json_init(&j, f, true);
	test_json_build_nested(&j);
	CHECK(json_finish(&j) == -EIO);
	fclose(f);
}

/* Random finite doubles of every magnitude print as text that reads back exactly. */
static void test_json_double_roundtrip(void)
{
	enum { COUNT = 20000 };
	struct prng r;
	char *text = NULL, *p;
	size_t len = 0;
	int bad = 0, n = 0;
	FILE *f = open_memstream(&text, &len);
	struct json j;
	static double v[COUNT];

	if (!f) {
		CHECK(f != NULL);
		return;
	}
	prng_seed(&r, 77, 0, 0);
	json_init(&j, f, false);
	json_array_begin(&j);
	for (int i = 0; i < COUNT; i++) {
		uint64_t bits = prng_next(&r);

		memcpy(&v[i], &bits, sizeof(bits));
		if (!isfinite(v[i]))
			v[i] = (double)bits;
		json_double(&j, v[i]);
	}
	json_array_end(&j);
	CHECK(json_finish(&j) == 0);
	fclose(f);
	for (p = text + 1; n < COUNT && *p; n++) {
		char *end;
		double x = strtod(p, &end);

		bad += memcmp(&x, &v[n], sizeof(x)) != 0 || (*end != ',' && *end != ']');
		p = end + 1;
	}
	CHECK_MSG(n == COUNT && bad == 0, "%d of %d doubles did not round-trip", bad, n);
	free(text);
}

int main(void)
{
	test_json_cases();
	test_json_write_error();
	test_json_double_roundtrip();
	return check_done();
}
