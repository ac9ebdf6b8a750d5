/* SPDX-License-Identifier: MIT */
/*
 * A bounded scanner over JSON text: it walks the top-level object member by member, skipping
 * the values it is not asked for (strings with their escapes, nested arrays and objects up to
 * JSCAN_MAX_DEPTH), and copies out the one it is asked for. Linear in the text, no allocation.
 */
#include <errno.h>
#include <string.h>

#include "util/jscan.h"

struct jscan {
	const char *p;
	size_t len, i;
};

static void jscan_ws(struct jscan *s)
{
	while (s->i < s->len && strchr(" \t\r\n", s->p[s->i]) && s->p[s->i])
		s->i++;
}

static int jscan_hex4(const struct jscan *s, size_t at, unsigned *out)
{
	unsigned v = 0;

	if (at + 4 > s->len)
		return -EINVAL;
	for (size_t k = 0; k < 4; k++) {
		char c = s->p[at + k];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (d < 0)
			return -EINVAL;
		v = v * 16 + (unsigned)d;
	}
	*out = v;
	return 0;
}

/* The string at s->i (its opening quote), unescaped into buf when buf is not NULL. */
static int jscan_string(struct jscan *s, char *buf, size_t buflen)
{
	size_t n = 0;

	if (s->i >= s->len || s->p[s->i] != '"')
		return -EINVAL;
	for (s->i++; s->i < s->len; s->i++) {
		unsigned char c = (unsigned char)s->p[s->i];
		char out = (char)c;
		if (c == '"') {
			s->i++;
			if (buf)
				buf[n] = '\0';
			return 0;
		}
		if (c < 0x20)
			return -EINVAL;
		if (c == '\\') {
			if (++s->i >= s->len)
				return -EINVAL;
			const char *esc = strchr("\"\\/bfnrtu", s->p[s->i]);
			if (!esc || !s->p[s->i])
				return -EINVAL;
			out = "\"\\/\b\f\n\r\t?"[esc - "\"\\/bfnrtu"];
			if (*esc == 'u') {
				unsigned v;
				if (jscan_hex4(s, s->i + 1, &v))
					return -EINVAL;
				out = v < 0x80 ? (char)v : '?';
				s->i += 4;
			}
		}
		if (buf && n + 1 < buflen)
			buf[n++] = out;
	}
	return -EINVAL;
}

/* A number or a literal: its text, checked only for its characters. */
static int jscan_scalar(struct jscan *s, char *buf, size_t buflen)
{
	size_t start = s->i, n;

	while (s->i < s->len && s->p[s->i] && strchr("0123456789+-.eEtrufalsn", s->p[s->i]))
		s->i++;
	if (s->i == start)
		return -EINVAL;
	if (buf) {
		n = s->i - start < buflen - 1 ? s->i - start : buflen - 1;
		memcpy(buf, s->p + start, n);
		buf[n] = '\0';
	}
	return 0;
}

static int jscan_skip(struct jscan *s, int depth);

/* The members of an object or the elements of an array at s->i, skipped. */
static int jscan_skip_nested(struct jscan *s, int depth)
{
	char close = s->p[s->i] == '{' ? '}' : ']';
	int first = 1;

	if (depth >= JSCAN_MAX_DEPTH)
		return -EINVAL;
	for (s->i++;; first = 0) {
		jscan_ws(s);
		if (s->i >= s->len)
			return -EINVAL;
		if (first && s->p[s->i] == close) {
			s->i++;
			return 0;
		}
		if (close == '}') {
			if (jscan_string(s, NULL, 0))
				return -EINVAL;
			jscan_ws(s);
			if (s->i >= s->len || s->p[s->i++] != ':')
				return -EINVAL;
		}
		if (jscan_skip(s, depth + 1))
			return -EINVAL;
		jscan_ws(s);
		if (s->i >= s->len)
			return -EINVAL;
		char c = s->p[s->i++];
		if (c == close)
			return 0;
		if (c != ',')
			return -EINVAL;
	}
}

static int jscan_skip(struct jscan *s, int depth)
{
	jscan_ws(s);
	if (s->i >= s->len)
		return -EINVAL;
	if (s->p[s->i] == '"')
		return jscan_string(s, NULL, 0);
	if (s->p[s->i] == '{' || s->p[s->i] == '[')
		return jscan_skip_nested(s, depth);
	return jscan_scalar(s, NULL, 0);
}

/* The value at s->i, copied as jscan_member says. */
static int jscan_copy(struct jscan *s, char *buf, size_t buflen)
{
	jscan_ws(s);
	if (s->i >= s->len)
		return -EINVAL;
	switch (s->p[s->i]) {
	case '"':
		return jscan_string(s, buf, buflen);
	case '{':
		return -ENOENT;
	case '[':
		s->i++;
		jscan_ws(s);
		if (s->i < s->len && s->p[s->i] == ']') {
			buf[0] = '\0';
			return 0;
		}
		return s->i < s->len && s->p[s->i] == '"' ? jscan_string(s, buf, buflen) : -ENOENT;
	default:
		return jscan_scalar(s, buf, buflen);
	}
}

int jscan_member(const char *text, size_t len, const char *key, char *buf, size_t buflen)
{
	struct jscan s = {text, len, 0};
	char name[256];

	if (buflen == 0)
		return -EINVAL;
	buf[0] = '\0';
	jscan_ws(&s);
	if (s.i >= s.len || s.p[s.i++] != '{')
		return -EINVAL;
	jscan_ws(&s);
	if (s.i < s.len && s.p[s.i] == '}')
		return -ENOENT;
	for (;;) {
		jscan_ws(&s);
		if (jscan_string(&s, name, sizeof(name)))
			return -EINVAL;
		jscan_ws(&s);
		if (s.i >= s.len || s.p[s.i++] != ':')
			return -EINVAL;
		if (strcmp(name, key) == 0) {
			int rc = jscan_copy(&s, buf, buflen);
			if (rc)
				buf[0] = '\0'; /* a value cut by bad text is no value */
			return rc;
		}
		if (jscan_skip(&s, 1))
			return -EINVAL;
		jscan_ws(&s);
		if (s.i >= s.len)
			return -EINVAL;
		char c = s.p[s.i++];
		if (c == '}')
			return -ENOENT;
		if (c != ',')
			return -EINVAL;
	}
}
