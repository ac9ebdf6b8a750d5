/* SPDX-License-Identifier: MIT */
/*
 * A streaming JSON writer: nesting and commas are tracked, strings are escaped, doubles
 * are printed with enough digits to round-trip, non-finite doubles become null. Misuse (a
 * value without a key in an object, a key in an array, an end that does not match its begin,
 * nesting deeper than JSON_MAX_DEPTH - 1, a second top-level value) sets -EINVAL; after the
 * first error every call does nothing, and json_finish reports it.
 */
#ifndef STAGEBENCH_JSON_H
#define STAGEBENCH_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json {
	FILE *f;
	int depth;
	bool pretty;
	bool first[JSON_MAX_DEPTH]; /* no element written yet at this depth */
	bool after_key;
	int error; /* first error: -EINVAL for misuse (depth), -EIO for a write error */
	bool array[JSON_MAX_DEPTH]; /* the container open at this depth is an array */
};

/*
 * The length of the valid UTF-8 sequence at p (RFC 3629, as Python's strict decoder: no
 * overlongs, no surrogates, nothing past U+10FFFF) within avail bytes, or 0. A NUL-terminated
 * string may give SIZE_MAX: a NUL is no continuation byte, so nothing past it is read.
 */
size_t json_utf8_len(const unsigned char *p, size_t avail);

void json_init(struct json *j, FILE *f, bool pretty);
void json_object_begin(struct json *j);
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
void json_array_end(struct json *j);
/* The key of the next value inside an object. */
void json_key(struct json *j, const char *key);
/*
 * NULL writes null. Escapes the quote, the backslash and control characters (\n \r \t \b \f,
 * the others and DEL as \u00XX); bytes that are not valid UTF-8 become \ufffd, so the output
 * is always valid JSON.
 */
void json_string(struct json *j, const char *s);
void json_uint(struct json *j, uint64_t v);
void json_int(struct json *j, int64_t v);
void json_double(struct json *j, double v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);
/*
 * Ends the document (a newline), flushes f and returns 0 or the first error; an unfinished
 * or empty document is -EINVAL.
 */
int json_finish(struct json *j);

/* Shorthands for "key": value. */
void json_kv_string(struct json *j, const char *key, const char *s);
void json_kv_uint(struct json *j, const char *key, uint64_t v);
void json_kv_int(struct json *j, const char *key, int64_t v);
void json_kv_double(struct json *j, const char *key, double v);
void json_kv_bool(struct json *j, const char *key, bool v);

#endif
