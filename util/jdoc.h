/* SPDX-License-Identifier: MIT */
/*
 * A strict JSON reader: a whole text parsed into a tree, or refused with a one-line reason in
 * the words of the collector's door (scripts/stagebench/summaries.py, load_json), so that the
 * node health check and the collector agree on which files are valid.
 */
#ifndef STAGEBENCH_JDOC_H
#define STAGEBENCH_JDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Nesting deeper than this is refused ("nested too deeply"): Python's parser gives up a few
 * levels short of its recursion limit of 1000 (992 in the collector); no stagebench document
 * nests deeper than 8.
 */
#define JDOC_MAX_DEPTH 990
/* The strict door's bounds (load_json(strict=True): the manifest, baselines, judgements). */
#define JDOC_STRICT_DEPTH      64
#define JDOC_STRICT_INT_DIGITS 20

enum jdoc_type { JDOC_NULL, JDOC_BOOL, JDOC_INT, JDOC_FLOAT, JDOC_STRING, JDOC_ARRAY, JDOC_OBJECT };

struct jdoc_value {
	enum jdoc_type type;
	bool boolean;	    /* JDOC_BOOL */
	bool negative;	    /* JDOC_INT: below 0 (never for -0) */
	bool huge;	    /* JDOC_INT: its magnitude does not fit in 64 bits */
	uint64_t magnitude; /* JDOC_INT: |value|, when not huge */
	double number;	    /* JDOC_INT, JDOC_FLOAT: the value (an overflowing float: +-inf) */
	/* JDOC_STRING: UTF-8, NUL-terminated (may hold a NUL of \u0000); a huge JDOC_INT: its
	 * digits as written */
	const char *text;
	size_t len;	 /* of text; JDOC_ARRAY, JDOC_OBJECT: members */
	const char *key; /* a member of an object: its name, NUL-terminated */
	size_t keylen;
	struct jdoc_value *first, *next; /* the first member; the next member of the parent */
};

struct jdoc_chunk;

struct jdoc {
	struct jdoc_value *root;
	struct jdoc_chunk *chunks; /* where the values and strings live */
};

/*
 * Parse text[0..len) into doc. The text must be UTF-8 ("not UTF-8 text (byte N)"), not only
 * white space ("empty file"), one JSON value and nothing after it; no object may repeat a key
 * ("duplicate key \"k\""); NaN, Infinity and -Infinity are refused ("NaN is not a number JSON
 * allows"); nesting is bounded. strict adds load_json's strict bounds: integers of at most
 * JDOC_STRICT_INT_DIGITS digits, floats within range, JDOC_STRICT_DEPTH levels. 0, or
 * -EINVAL with the reason in why (doc empty), -ENOMEM. jdoc_free releases doc either way.
 */
int jdoc_parse(const char *text, size_t len, bool strict, struct jdoc *doc, char *why,
	       size_t whylen);
void jdoc_free(struct jdoc *doc);

/* The member key of obj; NULL when obj is no object or has no such member. */
const struct jdoc_value *jdoc_get(const struct jdoc_value *obj, const char *key);

/* Whether v is a string equal to s. */
bool jdoc_is(const struct jdoc_value *v, const char *s);

/*
 * s as Python's json.dumps writes it (ensure_ascii: quoted, escaped, non-ASCII as \uXXXX),
 * cut to at most max characters as Python's [:max] cuts it, into buf (always terminated).
 */
void jdoc_dumps(const char *s, size_t len, size_t max, char *buf, size_t buflen);

#endif
