/* SPDX-License-Identifier: MIT */
/*
 * A strict JSON reader in the manner of Python's json module with the collector's hooks: the
 * text checked as UTF-8 first, then parsed by recursive descent into values kept in an arena;
 * each object's keys compared when it closes (sorted when it has many), as Python's
 * object_pairs_hook does; errors said as Python's JSONDecodeError says them.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jdoc.h"
#include "util/json.h"

#define JDOC_CHUNK (64u << 10)
/* An object with more members than this has its keys sorted to find a duplicate. */
#define JDOC_LINEAR_KEYS 16
/* What a document may take in memory (a summary of 64 MiB takes about 200 MiB). */
#define JDOC_MAX_ARENA (1ull << 30)

struct jdoc_chunk {
	struct jdoc_chunk *next;
	size_t used, size;
	max_align_t data[];
};

struct jdoc_parser {
	const char *p;
	size_t len, i;
	bool strict;
	int maxdepth; /* of containers, the outermost at 1 */
	size_t arena; /* bytes taken by the chunks */
	struct jdoc *doc;
	char *why;
	size_t whylen;
	int err; /* -EINVAL or -ENOMEM once something failed */
};

static void *jdoc_alloc(struct jdoc_parser *ps, size_t n)
{
	struct jdoc_chunk *c = ps->doc->chunks;

	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	if (!c || c->size - c->used < n) {
		size_t size = n > JDOC_CHUNK ? n : JDOC_CHUNK;
		c = ps->arena + size <= JDOC_MAX_ARENA ? malloc(sizeof(*c) + size) : NULL;
		if (!c) {
			ps->err = -ENOMEM;
			snprintf(ps->why, ps->whylen, "too large to read (%s)",
				 ps->arena + size <= JDOC_MAX_ARENA ? "out of memory"
								    : "over 1 GiB in memory");
			return NULL;
		}
		ps->arena += size;
		c->next = ps->doc->chunks;
		c->used = 0;
		c->size = size;
		ps->doc->chunks = c;
	}
	void *at = (char *)c->data + c->used;
	c->used += n;
	return at;
}

void jdoc_free(struct jdoc *doc)
{
	while (doc->chunks) {
		struct jdoc_chunk *next = doc->chunks->next;
		free(doc->chunks);
		doc->chunks = next;
	}
	doc->root = NULL;
}

/* The reason, once (the first error is the one said). */
static int jdoc_fail(struct jdoc_parser *ps, const char *fmt, ...)
{
	va_list ap;

	if (ps->err)
		return ps->err;
	ps->err = -EINVAL;
	va_start(ap, fmt);
	vsnprintf(ps->why, ps->whylen, fmt, ap);
	va_end(ap);
	return ps->err;
}

/* Python's character index of byte offset at (the text is valid UTF-8 by then). */
static size_t jdoc_chars(const struct jdoc_parser *ps, size_t at)
{
	size_t n = 0;

	for (size_t k = 0; k < at && k < ps->len; k++)
		n += ((unsigned char)ps->p[k] & 0xc0) != 0x80;
	return n;
}

/* A JSONDecodeError of Python: "not valid JSON (truncated or damaged): MSG: line L column C
 * (char N)", at byte offset at. */
static int jdoc_syntax(struct jdoc_parser *ps, const char *msg, size_t at)
{
	size_t line = 1, linestart = 0;

	for (size_t k = 0; k < at && k < ps->len; k++) {
		if (ps->p[k] == '\n') {
			line++;
			linestart = k + 1;
		}
	}
	size_t pos = jdoc_chars(ps, at), col = pos - jdoc_chars(ps, linestart) + 1;
	return jdoc_fail(
	    ps, "not valid JSON (truncated or damaged): %s: line %zu column %zu (char %zu)", msg,
	    line, col, pos);
}

/* Python's strict UTF-8 decoder: the offset of the first bad sequence, or len. */
static size_t jdoc_utf8_bad(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t n = s[i] < 0x80 ? 1 : json_utf8_len(s + i, len - i);
		if (!n)
			return i;
		i += n;
	}
	return len;
}

static void jdoc_ws(struct jdoc_parser *ps)
{
	while (ps->i < ps->len && (ps->p[ps->i] == ' ' || ps->p[ps->i] == '\t' ||
				   ps->p[ps->i] == '\n' || ps->p[ps->i] == '\r'))
		ps->i++;
}

static int jdoc_hex4(const struct jdoc_parser *ps, size_t at, unsigned *out)
{
	unsigned v = 0;

	if (at + 4 > ps->len)
		return -EINVAL;
	for (size_t k = 0; k < 4; k++) {
		char c = ps->p[at + k];
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

/* A code point as UTF-8 (a lone surrogate too, as Python keeps it); the bytes written. */
static size_t jdoc_put_utf8(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The escape after the backslash at ps->i - 1 into out; the bytes written, or -EINVAL. */
static int jdoc_escape(struct jdoc_parser *ps, char *out)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	size_t at = ps->i - 1;
	char c = ps->i < ps->len ? ps->p[ps->i] : '\0';
	const char *e = c ? strchr(from, c) : NULL;
	unsigned cp, lo;

	if (e) {
		ps->i++;
		*out = to[e - from];
		return 1;
	}
	if (c != 'u')
		return jdoc_syntax(ps, "Invalid \\escape", at);
	if (jdoc_hex4(ps, ps->i + 1, &cp))
		return jdoc_syntax(ps, "Invalid \\uXXXX escape", ps->i);
	ps->i += 5;
	/* a high surrogate and a low one make one code point */
	if (cp >= 0xd800 && cp <= 0xdbff && ps->i + 6 <= ps->len && ps->p[ps->i] == '\\' &&
	    ps->p[ps->i + 1] == 'u' && jdoc_hex4(ps, ps->i + 2, &lo) == 0 && lo >= 0xdc00 &&
	    lo <= 0xdfff) {
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		ps->i += 6;
	}
	return (int)jdoc_put_utf8(out, cp);
}

/* The string whose quote is at ps->i: its text into *text (the arena), its length. */
static int jdoc_string(struct jdoc_parser *ps, const char **text, size_t *len)
{
	size_t start = ps->i++, n = 0, end = ps->i;

	/* the raw length bounds the unescaped one */
	while (end < ps->len && ps->p[end] != '"')
		end += ps->p[end] == '\\' ? 2 : 1;
	char *buf = jdoc_alloc(ps, (end < ps->len ? end : ps->len) - start + 1);
	if (!buf)
		return ps->err;
	for (;;) {
		if (ps->i >= ps->len)
			return jdoc_syntax(ps, "Unterminated string starting at", start);
		unsigned char c = (unsigned char)ps->p[ps->i];
		if (c == '"')
			break;
		if (c < 0x20)
			return jdoc_syntax(ps, "Invalid control character at", ps->i);
		if (c != '\\') {
			buf[n++] = (char)c;
			ps->i++;
			continue;
		}
		ps->i++;
		if (ps->i >= ps->len)
			return jdoc_syntax(ps, "Unterminated string starting at", start);
		int w = jdoc_escape(ps, buf + n);
		if (w < 0)
			return w;
		n += (size_t)w;
	}
	ps->i++;
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}

static bool jdoc_digit(const struct jdoc_parser *ps, size_t at)
{
	return at < ps->len && ps->p[at] >= '0' && ps->p[at] <= '9';
}

/* A number (Python's -?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?) at ps->i into v. */
static int jdoc_number(struct jdoc_parser *ps, struct jdoc_value *v)
{
	size_t start = ps->i, k = ps->i, digits;
	bool is_float = false;

	if (k < ps->len && ps->p[k] == '-')
		k++;
	if (!jdoc_digit(ps, k))
		return jdoc_syntax(ps, "Expecting value", start);
	size_t int_start = k;
	if (ps->p[k] == '0')
		k++;
	else
		while (jdoc_digit(ps, k))
			k++;
	digits = k - int_start;
	if (k + 1 < ps->len && ps->p[k] == '.' && jdoc_digit(ps, k + 1)) {
		is_float = true;
		for (k++; jdoc_digit(ps, k); k++)
			;
	}
	if (k < ps->len && (ps->p[k] == 'e' || ps->p[k] == 'E')) {
		size_t e = k + 1;
		if (e < ps->len && (ps->p[e] == '+' || ps->p[e] == '-'))
			e++;
		if (jdoc_digit(ps, e)) {
			is_float = true;
			for (k = e; jdoc_digit(ps, k); k++)
				;
		}
	}
	char tok[64];
	size_t toklen = k - start;
	char *num = toklen < sizeof(tok) ? tok : jdoc_alloc(ps, toklen + 1);
	if (!num)
		return ps->err;
	memcpy(num, ps->p + start, toklen);
	num[toklen] = '\0';
	ps->i = k;
	v->number = strtod(num, NULL);
	if (is_float) {
		v->type = JDOC_FLOAT;
		if (ps->strict && !isfinite(v->number))
			return jdoc_fail(ps, "the number %.40s is out of range", num);
		return 0;
	}
	v->type = JDOC_INT;
	v->negative = ps->p[start] == '-' && !(digits == 1 && ps->p[int_start] == '0');
	for (size_t d = int_start; d < k && !v->huge; d++) {
		uint64_t x = (uint64_t)(ps->p[d] - '0');
		if (v->magnitude > (UINT64_MAX - x) / 10)
			v->huge = true;
		else
			v->magnitude = v->magnitude * 10 + x;
	}
	if (v->huge) { /* its digits kept: no double can say them */
		char *kept = jdoc_alloc(ps, toklen + 1);
		if (!kept)
			return ps->err;
		memcpy(kept, num, toklen + 1);
		v->text = kept;
		v->len = toklen;
	}
	return 0;
}

/* A word at ps->i: true, false, null, or NaN, Infinity, -Infinity (refused). */
static int jdoc_word(struct jdoc_parser *ps, struct jdoc_value *v, bool *found)
{
	static const struct {
		const char *word;
		enum jdoc_type type;
		bool value;
	} words[] = {{"null", JDOC_NULL, false},     {"true", JDOC_BOOL, true},
		     {"false", JDOC_BOOL, false},    {"NaN", JDOC_NULL, false},
		     {"Infinity", JDOC_NULL, false}, {"-Infinity", JDOC_NULL, false}};

	*found = false;
	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
		size_t n = strlen(words[k].word);
		if (ps->len - ps->i < n || memcmp(ps->p + ps->i, words[k].word, n) != 0)
			continue;
		*found = true;
		if (k >= 3)
			return jdoc_fail(ps, "%s is not a number JSON allows", words[k].word);
		ps->i += n;
		v->type = words[k].type;
		v->boolean = words[k].value;
		return 0;
	}
	return 0;
}

static int jdoc_value(struct jdoc_parser *ps, struct jdoc_value *v, int depth);

struct jdoc_keyref {
	const struct jdoc_value *m;
	size_t at; /* its place in the object */
};

static int jdoc_key_cmp(const void *a, const void *b)
{
	const struct jdoc_keyref *x = a, *y = b;
	size_t n = x->m->keylen < y->m->keylen ? x->m->keylen : y->m->keylen;
	int c = memcmp(x->m->key, y->m->key, n);

	if (c)
		return c;
	if (x->m->keylen != y->m->keylen)
		return x->m->keylen > y->m->keylen ? 1 : -1;
	return (x->at > y->at) - (x->at < y->at);
}

static bool jdoc_same_key(const struct jdoc_value *x, const struct jdoc_value *y)
{
	return x->keylen == y->keylen && memcmp(x->key, y->key, x->keylen) == 0;
}

/*
 * The member of obj whose key an earlier member already had, the first such in the object's
 * order (the one Python's hook names); NULL when none. Many members are sorted (by key, then
 * place): the answer is the earliest second place of a run of equal keys.
 */
static const struct jdoc_value *jdoc_duplicate(struct jdoc_parser *ps, const struct jdoc_value *obj)
{
	const struct jdoc_value *dup = NULL;
	size_t n = 0, best = SIZE_MAX;

	if (obj->len <= JDOC_LINEAR_KEYS) {
		for (const struct jdoc_value *m = obj->first; m; m = m->next)
			for (const struct jdoc_value *o = obj->first; o != m; o = o->next)
				if (jdoc_same_key(m, o))
					return m;
		return NULL;
	}
	struct jdoc_keyref *keys = malloc(obj->len * sizeof(*keys));
	if (!keys) {
		jdoc_fail(ps, "out of memory");
		ps->err = -ENOMEM;
		return NULL;
	}
	for (const struct jdoc_value *m = obj->first; m; m = m->next, n++)
		keys[n] = (struct jdoc_keyref){m, n};
	qsort(keys, n, sizeof(*keys), jdoc_key_cmp);
	for (size_t k = 1; k < n; k++) {
		if (jdoc_same_key(keys[k - 1].m, keys[k].m) &&
		    (k < 2 || !jdoc_same_key(keys[k - 2].m, keys[k].m)) && keys[k].at < best) {
			best = keys[k].at;
			dup = keys[k].m;
		}
	}
	free(keys);
	return dup;
}

/* A new value, zeroed, in the arena; NULL (ps->err set) when there is no room. */
static struct jdoc_value *jdoc_new(struct jdoc_parser *ps)
{
	struct jdoc_value *m = jdoc_alloc(ps, sizeof(*m));

	if (m)
		memset(m, 0, sizeof(*m));
	return m;
}

/*
 * The value of member m of container v parsed and appended, then the delimiter after it: 1
 * at close (the container ends), 0 at ',' (another member comes), or the error.
 */
static int jdoc_append(struct jdoc_parser *ps, struct jdoc_value *v, struct jdoc_value ***tail,
		       struct jdoc_value *m, int depth, char close)
{
	if (jdoc_value(ps, m, depth))
		return ps->err;
	**tail = m;
	*tail = &m->next;
	v->len++;
	jdoc_ws(ps);
	char c = ps->i < ps->len ? ps->p[ps->i] : '\0';
	ps->i++;
	if (c == close)
		return 1;
	if (c != ',')
		return jdoc_syntax(ps, "Expecting ',' delimiter", ps->i - 1);
	jdoc_ws(ps);
	return 0;
}

/* The members of the object whose '{' is at ps->i, into v. */
static int jdoc_object(struct jdoc_parser *ps, struct jdoc_value *v, int depth)
{
	struct jdoc_value **tail = &v->first;
	int rc = 0;

	v->type = JDOC_OBJECT;
	ps->i++;
	jdoc_ws(ps);
	if (ps->i < ps->len && ps->p[ps->i] == '}') {
		ps->i++;
		return 0;
	}
	while (rc == 0) {
		if (ps->i >= ps->len || ps->p[ps->i] != '"')
			return jdoc_syntax(ps, "Expecting property name enclosed in double quotes",
					   ps->i);
		struct jdoc_value *m = jdoc_new(ps);
		if (!m || jdoc_string(ps, &m->key, &m->keylen))
			return ps->err;
		jdoc_ws(ps);
		if (ps->i >= ps->len || ps->p[ps->i] != ':')
			return jdoc_syntax(ps, "Expecting ':' delimiter", ps->i);
		ps->i++;
		jdoc_ws(ps);
		rc = jdoc_append(ps, v, &tail, m, depth, '}');
	}
	if (rc < 0)
		return rc;
	const struct jdoc_value *dup = jdoc_duplicate(ps, v);
	if (ps->err)
		return ps->err;
	if (dup) {
		char shown[128];
		jdoc_dumps(dup->key, dup->keylen, 60, shown, sizeof(shown));
		return jdoc_fail(ps, "duplicate key %s", shown);
	}
	return 0;
}

/* The elements of the array whose '[' is at ps->i, into v. */
static int jdoc_array(struct jdoc_parser *ps, struct jdoc_value *v, int depth)
{
	struct jdoc_value **tail = &v->first;
	int rc = 0;

	v->type = JDOC_ARRAY;
	ps->i++;
	jdoc_ws(ps);
	if (ps->i < ps->len && ps->p[ps->i] == ']') {
		ps->i++;
		return 0;
	}
	while (rc == 0) {
		struct jdoc_value *m = jdoc_new(ps);
		if (!m)
			return ps->err;
		rc = jdoc_append(ps, v, &tail, m, depth, ']');
	}
	return rc < 0 ? rc : 0;
}

/* The value at ps->i (white space skipped before) into v; depth: of its container. */
static int jdoc_value(struct jdoc_parser *ps, struct jdoc_value *v, int depth)
{
	bool found;

	if (ps->i >= ps->len)
		return jdoc_syntax(ps, "Expecting value", ps->i);
	char c = ps->p[ps->i];
	if (c == '{' || c == '[') {
		if (depth + 1 > JDOC_MAX_DEPTH)
			return jdoc_fail(ps, "not valid JSON: nested too deeply");
		if (depth + 1 > ps->maxdepth)
			ps->maxdepth = depth + 1;
		return c == '{' ? jdoc_object(ps, v, depth + 1) : jdoc_array(ps, v, depth + 1);
	}
	if (c == '"') {
		v->type = JDOC_STRING;
		return jdoc_string(ps, &v->text, &v->len);
	}
	if (jdoc_word(ps, v, &found) || found)
		return ps->err;
	return jdoc_number(ps, v);
}

/*
 * load_json's strict scan before parsing: an integer of more than JDOC_STRICT_INT_DIGITS
 * digits after ':', '[' or ',' and white space (its regular expression, whatever the text
 * around it).
 */
static int jdoc_long_int(struct jdoc_parser *ps)
{
	for (size_t k = 0; k < ps->len; k++) {
		char c = ps->p[k];
		if (c != ':' && c != '[' && c != ',')
			continue;
		size_t d = k + 1;
		while (d < ps->len && strchr(" \t\n\r\v\f\x1c\x1d\x1e\x1f", ps->p[d]) && ps->p[d])
			d++;
		if (d < ps->len && ps->p[d] == '-')
			d++;
		size_t n = 0;
		while (jdoc_digit(ps, d + n))
			n++;
		if (n > JDOC_STRICT_INT_DIGITS)
			return jdoc_fail(ps, "an integer of %zu digits is out of range", n);
	}
	return 0;
}

int jdoc_parse(const char *text, size_t len, bool strict, struct jdoc *doc, char *why,
	       size_t whylen)
{
	struct jdoc_parser ps = {text, len, 0, strict, 0, 0, doc, why, whylen, 0};
	size_t bad = jdoc_utf8_bad((const unsigned char *)text, len);
	bool blank = true;

	doc->root = NULL;
	doc->chunks = NULL;
	if (whylen)
		why[0] = '\0';
	for (size_t k = 0; k < len && blank; k++)
		blank = strchr(" \t\n\r\v\f", text[k]) && text[k];
	if (blank)
		return jdoc_fail(&ps, "empty file");
	if (bad < len)
		return jdoc_fail(&ps, "not UTF-8 text (byte %zu)", bad);
	if (strict && jdoc_long_int(&ps))
		return ps.err;
	struct jdoc_value *root = jdoc_new(&ps);
	if (!root)
		return ps.err;
	jdoc_ws(&ps);
	if (jdoc_value(&ps, root, 0) == 0) {
		jdoc_ws(&ps);
		if (ps.i < ps.len)
			jdoc_syntax(&ps, "Extra data", ps.i);
	}
	if (!ps.err && strict && ps.maxdepth > JDOC_STRICT_DEPTH)
		jdoc_fail(&ps, "not valid JSON: nested deeper than %d", JDOC_STRICT_DEPTH);
	if (ps.err) {
		jdoc_free(doc);
		return ps.err;
	}
	doc->root = root;
	return 0;
}

const struct jdoc_value *jdoc_get(const struct jdoc_value *obj, const char *key)
{
	size_t n = strlen(key);

	if (!obj || obj->type != JDOC_OBJECT)
		return NULL;
	for (const struct jdoc_value *m = obj->first; m; m = m->next)
		if (m->keylen == n && memcmp(m->key, key, n) == 0)
			return m;
	return NULL;
}

bool jdoc_is(const struct jdoc_value *v, const char *s)
{
	return v && v->type == JDOC_STRING && v->len == strlen(s) &&
	       memcmp(v->text, s, v->len) == 0;
}

/* The next code point of UTF-8 s[*i..len) (valid by construction), *i moved past it. */
static unsigned jdoc_next_cp(const char *s, size_t len, size_t *i)
{
	unsigned char c = (unsigned char)s[(*i)++];
	unsigned cp;
	int more = c < 0x80 ? 0 : c < 0xe0 ? 1 : c < 0xf0 ? 2 : 3;

	cp = more == 0 ? c : more == 1 ? c & 0x1fu : more == 2 ? c & 0x0fu : c & 0x07u;
	for (; more > 0 && *i < len; more--)
		cp = (cp << 6) | ((unsigned char)s[(*i)++] & 0x3fu);
	return cp;
}

void jdoc_dumps(const char *s, size_t len, size_t max, char *buf, size_t buflen)
{
	char tmp[16];
	size_t n = 0, i = 0;
	bool open = true;

	if (!buflen)
		return;
	buf[0] = '\0';
	/* characters are appended while they fit in max (Python cuts the dumped text) */
	while (n < max && n + 1 < buflen) {
		const char *piece = tmp;
		if (open) {
			snprintf(tmp, sizeof(tmp), "\"");
			open = false;
		} else if (i >= len) {
			snprintf(tmp, sizeof(tmp), "\"");
			i = len + 1;
		} else {
			unsigned cp = jdoc_next_cp(s, len, &i);
			const char *esc =
			    cp && cp < 0x80 ? strchr("\"\\\n\r\t\b\f", (int)cp) : NULL;
			if (esc)
				snprintf(tmp, sizeof(tmp), "\\%c",
					 "\"\\nrtbf"[esc - "\"\\\n\r\t\b\f"]);
			else if (cp < 0x20)
				snprintf(tmp, sizeof(tmp), "\\u%04x", cp);
			else if (cp < 0x7f)
				snprintf(tmp, sizeof(tmp), "%c", (char)cp);
			else if (cp < 0x10000)
				snprintf(tmp, sizeof(tmp), "\\u%04x", cp);
			else
				snprintf(tmp, sizeof(tmp), "\\u%04x\\u%04x",
					 0xd800 + ((cp - 0x10000) >> 10),
					 0xdc00 + ((cp - 0x10000) & 0x3ff));
		}
		for (; *piece && n < max && n + 1 < buflen; piece++)
			buf[n++] = *piece;
		buf[n] = '\0';
		if (i > len)
			break;
	}
}
