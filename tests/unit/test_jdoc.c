/* SPDX-License-Identifier: MIT */
/*
 * Unit test of util/jdoc: documents parsed into their values; refused ones with the reason the
 * collector's door gives (each expected text is what scripts/stagebench/summaries.py load_json
 * said of the same bytes): duplicate keys, NaN, malformed text at its line and column, bad
 * UTF-8, nesting, and the strict door's integers, floats and depth.
 */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "util/jdoc.h"

struct jdoc_case {
	const char *text;
	bool strict;
	const char *why; /* NULL: parsed */
};

#define K80 "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
#define BAD "not valid JSON (truncated or damaged): "

static const struct jdoc_case jdoc_cases[] = {
    {"{\"a\":1}", false, NULL},
    {"", false, "empty file"},
    {" \n\v ", false, "empty file"},
    {"{\"status\":\"ok\",\"status\":\"failed\"}", false, "duplicate key \"status\""},
    {"{\"a\":{\"b\":1,\"b\":2},\"c\":3,\"c\":4}", false, "duplicate key \"b\""},
    {"{\"x\\u00e9\\n\":1,\"x\\u00e9\\n\":2}", false, "duplicate key \"x\\u00e9\\n\""},
    {"{\"\\ud83d\\ude00\":1,\"\\ud83d\\ude00\":2}", false, "duplicate key \"\\ud83d\\ude00\""},
    {"{\"" K80 "\":1,\"" K80 "\":2}", false,
     "duplicate key \"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"},
    {"{\"a\":NaN}", false, "NaN is not a number JSON allows"},
    {"[Infinity]", false, "Infinity is not a number JSON allows"},
    {"[-Infinity]", false, "-Infinity is not a number JSON allows"},
    {"{\"a\":1", false, BAD "Expecting ',' delimiter: line 1 column 7 (char 6)"},
    {"{\"a\":1,}", false,
     BAD "Expecting property name enclosed in double quotes: line 1 column 8 (char 7)"},
    {"{\"a\" 1}", false, BAD "Expecting ':' delimiter: line 1 column 6 (char 5)"},
    {"{", false, BAD "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"},
    {"[1,", false, BAD "Expecting value: line 1 column 4 (char 3)"},
    {"[1 2]", false, BAD "Expecting ',' delimiter: line 1 column 4 (char 3)"},
    {"{\"a\":\"x\x01\"}", false, BAD "Invalid control character at: line 1 column 8 (char 7)"},
    {"{\"a\":\"\\x\"}", false, BAD "Invalid \\escape: line 1 column 7 (char 6)"},
    {"{\"a\":\"\\u12\"}", false, BAD "Invalid \\uXXXX escape: line 1 column 8 (char 7)"},
    {"\"abc", false, BAD "Unterminated string starting at: line 1 column 1 (char 0)"},
    {"{} x", false, BAD "Extra data: line 1 column 4 (char 3)"},
    {"01", false, BAD "Extra data: line 1 column 2 (char 1)"},
    {"-", false, BAD "Expecting value: line 1 column 1 (char 0)"},
    {"nul", false, BAD "Expecting value: line 1 column 1 (char 0)"},
    {"{\"a\":\n [1,\n  2,\n  x]}", false, BAD "Expecting value: line 4 column 3 (char 18)"},
    {"{\"\xc3\xa9\":\"\xc3\xa9\", \"b\" 1}", false,
     BAD "Expecting ':' delimiter: line 1 column 15 (char 14)"},
    {"{\"a\":\"\xc3\x28\"}", false, "not UTF-8 text (byte 6)"},
    {"[\"\xed\xa0\x80\"]", false, "not UTF-8 text (byte 2)"},
    {"[1e400]", false, NULL},
    {"[1e400]", true, "the number 1e400 is out of range"},
    {"{\"a\":123456789012345678901}", true, "an integer of 21 digits is out of range"},
    {"{\"a\":123456789012345678901}", false, NULL},
};

static void jdoc_test_cases(void)
{
	for (size_t i = 0; i < sizeof(jdoc_cases) / sizeof(jdoc_cases[0]); i++) {
		const struct jdoc_case *c = &jdoc_cases[i];
		struct jdoc doc;
		char why[256];
		int rc = jdoc_parse(c->text, strlen(c->text), c->strict, &doc, why, sizeof(why));
		CHECK_MSG(rc == (c->why ? -EINVAL : 0), "case %zu: rc %d (%s)", i, rc, why);
		if (c->why)
			CHECK_MSG(strcmp(why, c->why) == 0, "case %zu: '%s' != '%s'", i, why,
				  c->why);
		else
			CHECK_MSG(doc.root != NULL, "case %zu: no root", i);
		jdoc_free(&doc);
	}
}

/* The values of a document: types, numbers, strings with their escapes, members in order. */
static void jdoc_test_values(void)
{
	const char *text =
	    "{\"i\":-12,\"z\":-0,\"u\":18446744073709551615,\"h\":18446744073709551616,"
	    "\"f\":1.5e3,\"s\":\"a\\\"\\u00e9\\ud83d\\ude00\\u0000b\",\"t\":true,"
	    "\"n\":null,\"a\":[1,[],{}]}";
	struct jdoc doc;
	char why[256];

	REQUIRE(jdoc_parse(text, strlen(text), false, &doc, why, sizeof(why)) == 0);
	const struct jdoc_value *v = jdoc_get(doc.root, "i");
	CHECK(v && v->type == JDOC_INT && v->negative && v->magnitude == 12 && v->number == -12);
	v = jdoc_get(doc.root, "z");
	CHECK(v && v->type == JDOC_INT && !v->negative && v->magnitude == 0);
	v = jdoc_get(doc.root, "u");
	CHECK(v && v->type == JDOC_INT && !v->huge && v->magnitude == UINT64_MAX);
	v = jdoc_get(doc.root, "h");
	CHECK(v && v->type == JDOC_INT && v->huge);
	v = jdoc_get(doc.root, "f");
	CHECK(v && v->type == JDOC_FLOAT && v->number == 1500.0);
	v = jdoc_get(doc.root, "s");
	CHECK(v && v->type == JDOC_STRING && v->len == 10 &&
	      memcmp(v->text, "a\"\xc3\xa9\xf0\x9f\x98\x80\0b", 10) == 0);
	CHECK(jdoc_get(doc.root, "t")->boolean && jdoc_get(doc.root, "n")->type == JDOC_NULL);
	v = jdoc_get(doc.root, "a");
	CHECK(v && v->type == JDOC_ARRAY && v->len == 3 && v->first->next->type == JDOC_ARRAY &&
	      v->first->next->next->type == JDOC_OBJECT && !v->first->next->next->next);
	CHECK(jdoc_get(doc.root, "missing") == NULL && jdoc_get(v, "a") == NULL);
	CHECK(jdoc_is(jdoc_get(doc.root, "s"), "a\"\xc3\xa9\xf0\x9f\x98\x80") == false);
	CHECK(doc.root->len == 9);
	jdoc_free(&doc);
	CHECK(doc.chunks == NULL);
}

/* Nesting at and past the bounds; an object of many keys with one repeated, found by sorting. */
static void jdoc_test_limits(void)
{
	size_t n = 2 * (JDOC_MAX_DEPTH + 1) + 1;
	char *deep = malloc(n);
	struct jdoc doc;
	char why[256];

	REQUIRE(deep);
	for (int strictness = 0; strictness < 2; strictness++) {
		int at = strictness ? JDOC_STRICT_DEPTH : JDOC_MAX_DEPTH;
		for (int extra = 0; extra < 2; extra++) {
			int d = at + extra;
			for (int k = 0; k < d; k++) {
				deep[k] = '[';
				deep[2 * d - 1 - k] = ']';
			}
			int rc =
			    jdoc_parse(deep, (size_t)(2 * d), strictness, &doc, why, sizeof(why));
			CHECK_MSG(rc == (extra ? -EINVAL : 0), "depth %d strict %d: %d %s", d,
				  strictness, rc, why);
			if (extra)
				CHECK(strcmp(why, strictness
						      ? "not valid JSON: nested deeper than 64"
						      : "not valid JSON: nested too deeply") == 0);
			jdoc_free(&doc);
		}
	}
	free(deep);

	char *many = malloc(100 * 16 + 32);
	REQUIRE(many);
	size_t len = (size_t)sprintf(many, "{");
	for (int k = 0; k < 100; k++)
		len +=
		    (size_t)sprintf(many + len, "%s\"k%d\":%d", k ? "," : "", k == 70 ? 3 : k, k);
	len += (size_t)sprintf(many + len, ",\"k5\":0}");
	CHECK(jdoc_parse(many, len, false, &doc, why, sizeof(why)) == -EINVAL);
	CHECK_MSG(strcmp(why, "duplicate key \"k3\"") == 0, "%s", why);
	free(many);
}

/* Python's json.dumps of a name, cut as [:60] cuts it. */
static void jdoc_test_dumps(void)
{
	char buf[128];

	jdoc_dumps("a\"b\\\x01\x7f\xc3\xa9", 8, 60, buf, sizeof(buf));
	CHECK_MSG(strcmp(buf, "\"a\\\"b\\\\\\u0001\\u007f\\u00e9\"") == 0, "%s", buf);
	jdoc_dumps("abcdef", 6, 4, buf, sizeof(buf));
	CHECK(strcmp(buf, "\"abc") == 0);
	jdoc_dumps("", 0, 60, buf, sizeof(buf));
	CHECK(strcmp(buf, "\"\"") == 0);
}

int main(void)
{
	jdoc_test_cases();
	jdoc_test_values();
	jdoc_test_limits();
	jdoc_test_dumps();
	return check_done();
}
