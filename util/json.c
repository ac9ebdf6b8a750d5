/* SPDX-License-Identifier: MIT */
/*
 * The streaming JSON writer behind the node summaries: pretty (2-space indent) or compact
 * (no spaces at all), with misuse caught rather than written out as broken JSON.
 */
#include "util/json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void json_init(struct json *j, FILE *f, bool pretty)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->pretty = pretty;
	j->first[0] = true;
}

static void json_fail(struct json *j, int err)
{
	if (!j->error)
		j->error = err;
}

static void json_put(struct json *j, const char *s, size_t n)
{
	if (j->error || n == 0)
		return;
	if (fwrite(s, 1, n, j->f) != n)
		json_fail(j, -EIO);
}

static void json_puts(struct json *j, const char *s)
{
	json_put(j, s, strlen(s));
}

/* A new line at the current depth's indent (pretty mode). */
static void json_newline(struct json *j)
{
	static const char spaces[] = "                                ";
	size_t indent = 2 * (size_t)j->depth;

	json_put(j, "\n", 1);
	while (indent > 0) {
		size_t n = indent < sizeof(spaces) - 1 ? indent : sizeof(spaces) - 1;

		json_put(j, spaces, n);
		indent -= n;
	}
}

/* Before a key in an object or a value in an array: the comma, then the line and indent. */
static void json_separate(struct json *j)
{
	if (!j->first[j->depth])
		json_put(j, ",", 1);
	j->first[j->depth] = false;
	if (j->pretty)
		json_newline(j);
}

/*
 * Every value goes through here. At the top level only one value is allowed; in an object
 * the key must come first (it already wrote the separator); in an array the separator is
 * written now. Returns false when the value must not be written.
 */
static bool json_value_begin(struct json *j)
{
	if (j->error)
		return false;
	if (j->depth == 0) {
		if (!j->first[0]) {
			json_fail(j, -EINVAL);
			return false;
		}
		j->first[0] = false;
		return true;
	}
	if (!j->array[j->depth]) {
		if (!j->after_key) {
			json_fail(j, -EINVAL);
			return false;
		}
		j->after_key = false;
		return true;
	}
	json_separate(j);
	return true;
}

static void json_open(struct json *j, bool array)
{
	if (j->depth + 1 >= JSON_MAX_DEPTH) {
		json_fail(j, -EINVAL);
		return;
	}
	if (!json_value_begin(j))
		return;
	j->depth++;
	j->first[j->depth] = true;
	j->array[j->depth] = array;
	json_put(j, array ? "[" : "{", 1);
}

static void json_close(struct json *j, bool array)
{
	bool empty;

	if (j->error)
		return;
	if (j->depth == 0 || j->array[j->depth] != array || j->after_key) {
		json_fail(j, -EINVAL);
		return;
	}
	empty = j->first[j->depth];
	j->depth--;
	/* A non-empty container closes on its own line, at its parent's indent. */
	if (!empty && j->pretty)
		json_newline(j);
	json_put(j, array ? "]" : "}", 1);
}

void json_object_begin(struct json *j)
{
	json_open(j, false);
}

void json_object_end(struct json *j)
{
	json_close(j, false);
}

void json_array_begin(struct json *j)
{
	json_open(j, true);
}

void json_array_end(struct json *j)
{
	json_close(j, true);
}

size_t json_utf8_len(const unsigned char *p, size_t avail)
{
	unsigned char c = p[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (avail < n)
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	/* A NUL terminator is not a continuation byte, so this never reads past the string. */
	for (i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* Runs of bytes that need no escaping are written in one piece. */
static void json_write_string(struct json *j, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	const unsigned char *run = s;
	char esc[8];
	size_t n;

	json_put(j, "\"", 1);
	while (*s) {
		unsigned char c = *s;
		const char *rep = NULL;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			s++;
			continue;
		}
		if (c >= 0x80) {
			n = json_utf8_len(s, SIZE_MAX);
			if (n) {
				s += n;
				continue;
			}
		}
		json_put(j, (const char *)run, (size_t)(s - run));
		switch (c) {
		case '"':
			rep = "\\\"";
			break;
		case '\\':
			rep = "\\\\";
			break;
		case '\n':
			rep = "\\n";
			break;
		case '\r':
			rep = "\\r";
			break;
		case '\t':
			rep = "\\t";
			break;
		case '\b':
			rep = "\\b";
			break;
		case '\f':
			rep = "\\f";
			break;
		default:
			if (c >= 0x80) {
				rep = "\\ufffd";
			} else {
				snprintf(esc, sizeof(esc), "\\u%04x", c);
				rep = esc;
			}
		}
		json_puts(j, rep);
		s++;
		run = s;
	}
	json_put(j, (const char *)run, (size_t)(s - run));
	json_put(j, "\"", 1);
}

void json_key(struct json *j, const char *key)
{
	if (j->error)
		return;
	if (!key || j->depth == 0 || j->array[j->depth] || j->after_key) {
		json_fail(j, -EINVAL);
		return;
	}
	json_separate(j);
	json_write_string(j, key);
	json_puts(j, j->pretty ? ": " : ":");
	j->after_key = true;
}

void json_string(struct json *j, const char *s)
{
	if (!json_value_begin(j))
		return;
	if (s)
		json_write_string(j, s);
	else
		json_puts(j, "null");
}

void json_uint(struct json *j, uint64_t v)
{
	char buf[24];

	if (!json_value_begin(j))
		return;
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	json_puts(j, buf);
}

void json_int(struct json *j, int64_t v)
{
	char buf[24];

	if (!json_value_begin(j))
		return;
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	json_puts(j, buf);
}

/*
 * The shortest of %.15g, %.16g and %.17g that reads back as the same double: 0.1 stays
 * "0.1" rather than "0.10000000000000001", and 17 digits always round-trip.
 */
void json_double(struct json *j, double v)
{
	char buf[32];
	int prec;

	if (!json_value_begin(j))
		return;
	if (!isfinite(v)) {
		json_puts(j, "null");
		return;
	}
	for (prec = 15; prec < 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (prec == 17)
		snprintf(buf, sizeof(buf), "%.17g", v);
	json_puts(j, buf);
}

void json_bool(struct json *j, bool v)
{
	if (json_value_begin(j))
		json_puts(j, v ? "true" : "false");
}

void json_null(struct json *j)
{
	if (json_value_begin(j))
		json_puts(j, "null");
}

int json_finish(struct json *j)
{
	if (!j->error && (j->depth != 0 || j->after_key || j->first[0]))
		json_fail(j, -EINVAL);
	json_put(j, "\n", 1);
	if (fflush(j->f) != 0 || ferror(j->f))
		json_fail(j, -EIO);
	return j->error;
}

void json_kv_string(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_string(j, s);
}

void json_kv_uint(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	json_uint(j, v);
}

void json_kv_int(struct json *j, const char *key, int64_t v)
{
	json_key(j, key);
	json_int(j, v);
}

void json_kv_double(struct json *j, const char *key, double v)
{
	json_key(j, key);
	json_double(j, v);
}

void json_kv_bool(struct json *j, const char *key, bool v)
{
	json_key(j, key);
	json_bool(j, v);
}
