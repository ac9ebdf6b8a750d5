/* SPDX-License-Identifier: MIT */
/*
 * Unit test of util/jscan: one member of a JSON object found past others (nested, escaped,
 * long), copied as a string, an array's first string or a scalar; malformed text refused.
 */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "util/jscan.h"

struct jscan_case {
	const char *text;
	const char *key;
	int err;
	const char *value;
};

static const struct jscan_case jscan_cases[] = {
    {"{\"status\":\"ok\"}", "status", 0, "ok"},
    {" {\n \"a\" : 1 , \"status\" : \"failed\" } ", "status", 0, "failed"},
    {"{\"tests\":[{\"status\":\"x\",\"p\":[1,2,{\"q\":\"}]\"}]}],\"status\":\"ok\"}", "status", 0,
     "ok"},
    {"{\"s\\\"tatus\":\"no\",\"status\":\"yes\"}", "status", 0, "yes"},
    {"{\"errors\":[\"read 'x': Input/output error\",\"second\"]}", "errors", 0,
     "read 'x': Input/output error"},
    {"{\"errors\":[]}", "errors", 0, ""},
    {"{\"errors\":[1]}", "errors", -ENOENT, ""},
    {"{\"e\":\"a\\n\\\"b\\\\c\\u0041\\u00e9\"}", "e", 0, "a\n\"b\\cA?"},
    {"{\"exit_code\":3}", "exit_code", 0, "3"},
    {"{\"x\":null,\"y\":true}", "y", 0, "true"},
    {"{\"fs\":{\"status\":\"inner\"}}", "status", -ENOENT, ""},
    {"{\"fs\":{\"a\":1}}", "fs", -ENOENT, ""},
    {"{}", "status", -ENOENT, ""},
    {"[\"status\"]", "status", -EINVAL, ""},
    {"", "status", -EINVAL, ""},
    {"{\"a\":\"unterminated", "status", -EINVAL, ""},
    {"{\"a\":[1,2,\"status\":\"ok\"}", "status", -EINVAL, ""},
    {"{\"a\" 1,\"status\":\"ok\"}", "status", -EINVAL, ""},
    {"{\"a\":\"ctl\x01\",\"status\":\"ok\"}", "status", -EINVAL, ""},
    {"{\"a\":\"bad \\x escape\",\"status\":\"ok\"}", "status", -EINVAL, ""},
    {"{\"a\":1,\"status\":\"ok\"", "status", 0, "ok"}, /* found before the end is checked */
    {"{\"a\":1 \"status\":\"ok\"}", "status", -EINVAL, ""},
};

static void jscan_test_cases(void)
{
	for (size_t i = 0; i < sizeof(jscan_cases) / sizeof(jscan_cases[0]); i++) {
		const struct jscan_case *c = &jscan_cases[i];
		char buf[128];
		int rc = jscan_member(c->text, strlen(c->text), c->key, buf, sizeof(buf));
		CHECK_MSG(rc == c->err, "case %zu: rc %d, expected %d", i, rc, c->err);
		if (rc == 0)
			CHECK_MSG(strcmp(buf, c->value) == 0, "case %zu: '%s' != '%s'", i, buf,
				  c->value);
	}
}

/* Nesting past the limit is refused; a long value is cut to the buffer, terminated. */
static void jscan_test_limits(void)
{
	char deep[4 * JSCAN_MAX_DEPTH + 64], buf[8];
	size_t n = 0;

	n += (size_t)sprintf(deep + n, "{\"a\":");
	for (int k = 0; k < JSCAN_MAX_DEPTH + 1; k++)
		deep[n++] = '[';
	for (int k = 0; k < JSCAN_MAX_DEPTH + 1; k++)
		deep[n++] = ']';
	n += (size_t)sprintf(deep + n, ",\"status\":\"ok\"}");
	CHECK(jscan_member(deep, n, "status", buf, sizeof(buf)) == -EINVAL);

	const char *lng = "{\"status\":\"a very long status\"}";
	CHECK(jscan_member(lng, strlen(lng), "status", buf, sizeof(buf)) == 0);
	CHECK(strcmp(buf, "a very ") == 0);
	/* the length given bounds the scan: the member past it is not seen */
	const char *two = "{\"a\":1,\"status\":\"ok\"}";
	CHECK(jscan_member(two, 8, "status", buf, sizeof(buf)) == -EINVAL);
}

int main(void)
{
	jscan_test_cases();
	jscan_test_limits();
	return check_done();
}
