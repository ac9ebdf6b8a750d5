/* SPDX-License-Identifier: MIT */
/*
 * The health check's door: a node summary checked in the collector's order with the
 * collector's words (scripts/stagebench/summaries.py: _summary, _part, _part_v2, _threads,
 * _hist and the small checkers _field, _num, _int, _str, _list), so that the two agree on
 * which summaries are valid; and the history's judgement read through the strict door.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/health_door.h"
#include "driver/plan.h"
#include "driver/summary.h"
#include "util/jdoc.h"
#include "workers/bench.h"

/* The collector's bounds (summaries.py). */
#define DOOR_MAX_SECONDS	  1e7  /* no duration of a part reaches 115 days */
#define DOOR_MAX_EPOCH		  1e11 /* no instant is past the binary's bound for --start-at */
#define DOOR_MAX_FIRST_REPETITION 1000000000u
#define DOOR_MAX_BUCKETS	  (1u << 16)
#define DOOR_UINT64_MAX		  18446744073709551615.0
#define DOOR_INT64_MAX		  9223372036854775807ull

/* Python's {} where a summary's "run" or "clock" is not an object. */
static const struct jdoc_value door_empty = {.type = JDOC_OBJECT};

struct door {
	char *why;
	size_t whylen;
	int err;
};

/* The reason, once: the first refusal is the one said, as the collector raises at the first. */
static int door_bad(struct door *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int door_bad(struct door *d, const char *fmt, ...)
{
	va_list ap;

	if (d->err)
		return d->err;
	d->err = -EINVAL;
	va_start(ap, fmt);
	vsnprintf(d->why, d->whylen, fmt, ap);
	va_end(ap);
	return d->err;
}

/* A string value cut as Python's s[:n] cuts it (n characters of UTF-8) into buf. */
static const char *door_cut(const struct jdoc_value *v, size_t n, char *buf, size_t buflen)
{
	size_t chars = 0, k = 0;

	for (; k < v->len && k + 1 < buflen; k++) {
		if (((unsigned char)v->text[k] & 0xc0) != 0x80 && chars++ == n)
			break;
		buf[k] = v->text[k] ? v->text[k] : '?';
	}
	buf[k] = '\0';
	return buf;
}

static bool door_is_object(const struct jdoc_value *v)
{
	return v && v->type == JDOC_OBJECT;
}

/* obj, or {} when it is not an object (Python's `x if isinstance(x, dict) else {}`). */
static const struct jdoc_value *door_object_or_empty(const struct jdoc_value *v)
{
	return door_is_object(v) ? v : &door_empty;
}

/* _field: *out is obj[key], or NULL when missing (absent, or null and not required). */
static int door_field(struct door *d, const struct jdoc_value *obj, const char *key,
		      const char *where, bool required, const struct jdoc_value **out)
{
	size_t n = strlen(where);

	*out = NULL;
	if (!door_is_object(obj)) {
		while (n && where[n - 1] == '.')
			n--;
		return door_bad(d, "%.*s is not an object", (int)n, where);
	}
	const struct jdoc_value *v = jdoc_get(obj, key);
	if (!v)
		return required ? door_bad(d, "missing field %s%s", where, key) : 0;
	if (v->type != JDOC_NULL || required)
		*out = v;
	return 0;
}

/* _num: a number (not a boolean, finite), not below 0 when lo0, at most hi. */
static int door_num(struct door *d, const struct jdoc_value *obj, const char *key,
		    const char *where, bool required, bool lo0, double hi,
		    const struct jdoc_value **out)
{
	const struct jdoc_value *v;
	char shown[64];

	*out = NULL;
	if (door_field(d, obj, key, where, required, &v) || !v)
		return d->err;
	if (v->type != JDOC_INT && !(v->type == JDOC_FLOAT && isfinite(v->number)))
		return door_bad(d, "field %s%s is not a number", where, key);
	bool below = v->type == JDOC_INT ? v->negative : v->number < 0;
	if (lo0 && below)
		return door_bad(d, "field %s%s is negative", where, key);
	bool over = v->type == JDOC_INT
			? isfinite(hi) && !v->negative && (v->huge || (double)v->magnitude > hi)
			: v->number > hi;
	if (over) {
		if (v->type == JDOC_INT && v->huge)
			snprintf(shown, sizeof(shown), "an integer over 2**64");
		else
			snprintf(shown, sizeof(shown), "%g",
				 v->type == JDOC_INT ? (double)v->magnitude : v->number);
		return door_bad(d, "field %s%s (%s) is out of range: at most %g", where, key, shown,
				hi);
	}
	*out = v;
	return 0;
}

/* _int: a whole number from 0 to 2**64 - 1. */
static int door_int(struct door *d, const struct jdoc_value *obj, const char *key,
		    const char *where, bool required, const struct jdoc_value **out)
{
	if (door_num(d, obj, key, where, required, true, DOOR_UINT64_MAX, out))
		return d->err;
	if (*out && (*out)->type != JDOC_INT)
		return door_bad(d, "field %s%s is not a whole number", where, key);
	return 0;
}

/* _typed: a value of the type, said as what when it is not. */
static int door_typed(struct door *d, const struct jdoc_value *obj, const char *key,
		      const char *where, bool required, enum jdoc_type type, const char *what,
		      const struct jdoc_value **out)
{
	if (door_field(d, obj, key, where, required, out) || !*out)
		return d->err;
	if ((*out)->type != type)
		return door_bad(d, "field %s%s is not %s", where, key, what);
	return 0;
}

static int door_str(struct door *d, const struct jdoc_value *obj, const char *key,
		    const char *where, bool required, const struct jdoc_value **out)
{
	return door_typed(d, obj, key, where, required, JDOC_STRING, "a string", out);
}

/* _list: a list; null is refused even where the field is optional. */
static int door_list(struct door *d, const struct jdoc_value *obj, const char *key,
		     const char *where, bool required, const struct jdoc_value **out)
{
	const struct jdoc_value *v = door_is_object(obj) ? jdoc_get(obj, key) : NULL;

	*out = NULL;
	if (v && v->type == JDOC_NULL && !required)
		return door_bad(d, "field %s%s is not a list", where, key);
	return door_typed(d, obj, key, where, required, JDOC_ARRAY, "a list", out);
}

/*
 * Python's re.match of ^[A-Za-z0-9_][A-Za-z0-9<rest>]{0,max-1}$ (a node's name, rest "._-"; a
 * part's, rest "_"), whose $ also matches before a final "\n".
 */
static bool door_name_ok(const struct jdoc_value *v, const char *rest, size_t max)
{
	size_t n = v->len;

	if (n && v->text[n - 1] == '\n')
		n--;
	if (n == 0 || n > max || memchr(v->text, '\0', n) || v->text[0] == '.' || v->text[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = v->text[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr(rest, c)))
			return false;
	}
	return true;
}

static const struct test_def *door_test(const struct jdoc_value *v)
{
	for (size_t i = 0; i < plan_ntests; i++)
		if (jdoc_is(v, plan_tests[i].name))
			return &plan_tests[i];
	return NULL;
}

static const struct part_def *door_part_def(const struct jdoc_value *v)
{
	for (size_t i = 0; i < plan_nparts; i++)
		if (jdoc_is(v, plan_parts[i].name))
			return &plan_parts[i];
	return NULL;
}

/* _minmax: {"min": int, "max": int}, min not above max. */
static int door_minmax(struct door *d, const struct jdoc_value *obj, const char *key,
		       const char *where)
{
	const struct jdoc_value *v, *lo, *hi;
	char w[160];

	if (door_field(d, obj, key, where, false, &v) || !v)
		return d->err;
	snprintf(w, sizeof(w), "%s%s.", where, key);
	if (door_int(d, v, "min", w, true, &lo) || door_int(d, v, "max", w, true, &hi))
		return d->err;
	/* both are whole numbers from 0 to 2**64 - 1 by now */
	if (lo->magnitude > hi->magnitude)
		return door_bad(d, "field %smin is above its max", w);
	return 0;
}

/* _stats: {"min", "median", "max"} of seconds. */
static int door_stats(struct door *d, const struct jdoc_value *obj, const char *key,
		      const char *where)
{
	static const char *const keys[] = {"min", "median", "max"};
	const struct jdoc_value *v, *x;
	char w[160];

	if (door_field(d, obj, key, where, false, &v) || !v)
		return d->err;
	snprintf(w, sizeof(w), "%s%s.", where, key);
	for (size_t i = 0; i < 3; i++)
		if (door_num(d, v, keys[i], w, true, true, INFINITY, &x))
			return d->err;
	return 0;
}

/* A string field whose value must be one of words (catalogue.py's COUNTED, RATE_UNITS). */
static int door_one_of(struct door *d, const struct jdoc_value *part, const char *key,
		       const char *where, const char *const *words)
{
	const struct jdoc_value *v;
	char cut[200], all[128] = "";
	size_t n = 0;

	if (door_str(d, part, key, where, false, &v) || !v)
		return d->err;
	for (size_t i = 0; words[i]; i++) {
		if (jdoc_is(v, words[i]))
			return 0;
		n += (size_t)snprintf(all + n, sizeof(all) - n, "%s%s", i ? ", " : "", words[i]);
	}
	return door_bad(d, "field %s%s '%s' is not one of %s", where, key,
			door_cut(v, 40, cut, sizeof(cut)), all);
}

/* _part_v2: the fields stagebench.node/2 added to a part, each optional. */
static int door_part_v2(struct door *d, const struct jdoc_value *part, const char *where)
{
	static const char *const nums[] = {"late_by_s", "clock_step_s", "clock_step_total_s"};
	static const char *const strs[] = {"cache_residency_error", "cache_expected"};
	const struct jdoc_value *v;
	/* What a part may count and its rate's unit: workers/bench.c's table, as the catalogue. */
	const char *counted[BENCH_UNIT_COUNT + 1], *rates[BENCH_UNIT_COUNT + 1];

	bench_unit_words(false, counted, BENCH_UNIT_COUNT + 1);
	bench_unit_words(true, rates, BENCH_UNIT_COUNT + 1);
	if (door_str(d, part, "kind", where, false, &v) ||
	    door_one_of(d, part, "counted", where, counted) ||
	    door_one_of(d, part, "rate_unit", where, rates) ||
	    door_int(d, part, "start_at_ns", where, false, &v) ||
	    door_minmax(d, part, "release_at_ns", where) ||
	    door_minmax(d, part, "first_io_at_ns", where) ||
	    door_num(d, part, "io_start_spread_s", where, false, true, INFINITY, &v))
		return d->err;
	for (size_t i = 0; i < 3; i++)
		if (door_num(d, part, nums[i], where, false, false, INFINITY, &v))
			return d->err;
	if (door_list(d, part, "warnings", where, false, &v) ||
	    door_num(d, part, "cache_residency", where, false, true, INFINITY, &v))
		return d->err;
	if (v && (v->type == JDOC_INT ? v->magnitude > 1 || v->huge : v->number > 1))
		return door_bad(d, "field %scache_residency is above 1", where);
	if (door_str(d, part, strs[0], where, false, &v) ||
	    door_typed(d, part, "cache_dropped", where, false, JDOC_BOOL, "true or false", &v) ||
	    door_str(d, part, strs[1], where, false, &v) ||
	    door_typed(d, part, "replica_changed", where, false, JDOC_BOOL, "true or false", &v) ||
	    door_int(d, part, "generation", where, false, &v) ||
	    door_int(d, part, "pages", where, false, &v) ||
	    door_int(d, part, "mapped_bytes", where, false, &v) ||
	    door_stats(d, part, "first_pass_s", where) ||
	    door_stats(d, part, "rest_pass_median_s", where))
		return d->err;
	return 0;
}

/* _threads: every field of every thread. */
static int door_threads(struct door *d, const struct jdoc_value *threads, const char *where)
{
	const struct jdoc_value *v;
	char w[160];
	size_t i = 0;

	for (const struct jdoc_value *th = threads->first; th; th = th->next, i++) {
		snprintf(w, sizeof(w), "%sper_thread[%zu].", where, i);
		if (door_num(d, th, "time_s", w, true, true, DOOR_MAX_SECONDS, &v) ||
		    door_num(d, th, "release_at", w, true, true, DOOR_MAX_EPOCH, &v) ||
		    door_int(d, th, "index", w, true, &v) || door_int(d, th, "cpu", w, false, &v) ||
		    door_str(d, th, "error", w, false, &v))
			return d->err;
	}
	return 0;
}

/* One [index, count] of a histogram: two whole numbers (not booleans). */
static bool door_bucket_shape(const struct jdoc_value *b)
{
	return b->type == JDOC_ARRAY && b->len == 2 && b->first->type == JDOC_INT &&
	       b->first->next->type == JDOC_INT;
}

/* _hist: the latency histogram's scheme, counts and buckets, when there is one. */
static int door_hist(struct door *d, const struct jdoc_value *part, const char *where)
{
	const struct jdoc_value *h = jdoc_get(part, "latency_hist"), *sub, *max, *count, *v;
	const struct jdoc_value *buckets;
	char w[160];

	if (!h || h->type == JDOC_NULL)
		return 0;
	snprintf(w, sizeof(w), "%slatency_hist.", where);
	if (door_int(d, h, "sub_bits", w, true, &sub) || door_int(d, h, "max_bits", w, true, &max))
		return d->err;
	if (sub->huge || max->huge || sub->magnitude < 1 || sub->magnitude >= max->magnitude ||
	    max->magnitude > 64 || sub->magnitude > 16 ||
	    ((max->magnitude - sub->magnitude + 1) << sub->magnitude) > DOOR_MAX_BUCKETS)
		return door_bad(d, "field %ssub_bits/max_bits is out of range", w);
	uint64_t last = ((max->magnitude - sub->magnitude + 1) << sub->magnitude) - 1;
	if (door_int(d, h, "count", w, true, &count) || door_int(d, h, "min_ns", w, true, &v) ||
	    door_int(d, h, "max_ns", w, true, &v) || door_int(d, h, "sum_ns", w, true, &v) ||
	    door_list(d, h, "buckets", w, true, &buckets))
		return d->err;
	uint64_t total = 0;
	bool wrapped = false;
	for (const struct jdoc_value *b = buckets->first; b; b = b->next) {
		if (!door_bucket_shape(b))
			return door_bad(
			    d, "field %sbuckets has an entry that is not [index, count]", w);
		const struct jdoc_value *idx = b->first, *cnt = b->first->next;
		if (idx->negative || idx->huge || idx->magnitude > last || cnt->negative ||
		    cnt->huge || cnt->magnitude > DOOR_INT64_MAX)
			return door_bad(d, "field %sbuckets has an index or count out of range", w);
		wrapped |= total + cnt->magnitude < total;
		total += cnt->magnitude;
	}
	if (wrapped || total != count->magnitude) {
		char sum[32];
		snprintf(sum, sizeof(sum), wrapped ? "over 2**64" : "%llu",
			 (unsigned long long)total);
		return door_bad(d, "field %scount (%llu) is not the sum of its buckets (%s)", w,
				(unsigned long long)count->magnitude, sum);
	}
	return 0;
}

/* _part: one part of a test; its name into *name. */
static int door_part(struct door *d, const struct jdoc_value *part, const char *where,
		     const struct part_def **def, double *start_at)
{
	const struct jdoc_value *status, *name, *v, *start, *threads;
	char cut[200], w[160];

	if (door_str(d, part, "status", where, true, &status) ||
	    door_str(d, part, "part", where, true, &name) ||
	    door_str(d, part, "error", where, false, &v) ||
	    door_num(d, part, "node_time_s", where, true, true, DOOR_MAX_SECONDS, &v) ||
	    door_int(d, part, "bytes", where, true, &v) ||
	    door_int(d, part, "ops", where, true, &v) ||
	    door_num(d, part, "start_at", where, true, true, DOOR_MAX_EPOCH, &start) ||
	    door_num(d, part, "release_spread_s", where, false, false, DOOR_MAX_SECONDS, &v))
		return d->err;
	*start_at = start->number;
	if (!door_name_ok(name, "_", 16))
		return door_bad(d, "field %spart '%s' is not a part name", where,
				door_cut(name, 40, cut, sizeof(cut)));
	if (!(*def = door_part_def(name)))
		return door_bad(d, "field %spart '%s' is not a part of any test", where,
				door_cut(name, 40, cut, sizeof(cut)));
	const struct jdoc_value *tt = jdoc_get(part, "thread_time_s");
	if (door_is_object(tt)) {
		snprintf(w, sizeof(w), "%sthread_time_s.", where);
		if (door_num(d, tt, "min", w, false, false, DOOR_MAX_SECONDS, &v) ||
		    door_num(d, tt, "median", w, false, false, DOOR_MAX_SECONDS, &v) ||
		    door_num(d, tt, "max", w, false, false, DOOR_MAX_SECONDS, &v))
			return d->err;
	}
	if (door_list(d, part, "per_thread", where, true, &threads) ||
	    door_threads(d, threads, where) || door_hist(d, part, where))
		return d->err;
	return door_part_v2(d, part, where);
}

/* A (test, repetition, part) of a summary, for the collector's "duplicate parts" check. */
struct door_key {
	const void *test, *part; /* the catalogue's entries; part NULL: a test without parts */
	uint64_t rep;
};

static int door_key_cmp(const void *a, const void *b)
{
	const struct door_key *x = a, *y = b;

	if (x->rep != y->rep)
		return x->rep < y->rep ? -1 : 1;
	if (x->test != y->test)
		return (uintptr_t)x->test < (uintptr_t)y->test ? -1 : 1;
	if (x->part != y->part)
		return (uintptr_t)x->part < (uintptr_t)y->part ? -1 : 1;
	return 0;
}

/* Two keys alike: the collector refuses the file ("duplicate parts within the file"). */
static int door_unique(struct door *d, struct door_key *keys, size_t n)
{
	qsort(keys, n, sizeof(*keys), door_key_cmp);
	for (size_t i = 1; i < n; i++)
		if (door_key_cmp(&keys[i - 1], &keys[i]) == 0)
			return door_bad(d, "duplicate parts within the file");
	return 0;
}

/* The number of parts in tests, bounded, to size the keys. */
static size_t door_count_keys(const struct jdoc_value *tests)
{
	size_t n = 0;

	for (const struct jdoc_value *t = tests->first; t; t = t->next) {
		const struct jdoc_value *parts = jdoc_get(t, "parts");
		n += parts && parts->type == JDOC_ARRAY && parts->len ? parts->len : 1;
	}
	return n;
}

/* _summary_tests: every test and its parts; the latest part start into s->at. */
static int door_tests(struct door *d, const struct jdoc_value *tests, struct health_summary *s,
		      size_t *nentries)
{
	struct door_key *keys = malloc((door_count_keys(tests) + 1) * sizeof(*keys));
	const struct jdoc_value *name, *rep, *v, *parts;
	char w[64], pw[96], cut[200];
	size_t ti = 0, nkeys = 0;

	if (!keys)
		return door_bad(d, "out of memory");
	for (const struct jdoc_value *t = tests->first; t && !d->err; t = t->next, ti++) {
		snprintf(w, sizeof(w), "tests[%zu].", ti);
		const struct test_def *def = NULL;
		if (door_str(d, t, "test", w, true, &name))
			break;
		if (!(def = door_test(name))) {
			door_bad(d, "field %stest '%s' is not a test", w,
				 door_cut(name, 40, cut, sizeof(cut)));
			break;
		}
		if (door_int(d, t, "repetition", w, true, &rep))
			break;
		if (!rep->huge && rep->magnitude < 1) {
			door_bad(d, "field %srepetition is below 1", w);
			break;
		}
		if (door_num(d, t, "result_s", w, true, true, DOOR_MAX_SECONDS, &v) ||
		    door_list(d, t, "parts", w, true, &parts) ||
		    door_str(d, t, "error", w, false, &v))
			break;
		uint64_t r = rep->huge ? UINT64_MAX : rep->magnitude;
		if (!parts->len)
			keys[nkeys++] = (struct door_key){def, NULL, r};
		size_t pi = 0;
		for (const struct jdoc_value *p = parts->first; p; p = p->next, pi++) {
			const struct part_def *pd = NULL;
			double start = 0;
			snprintf(pw, sizeof(pw), "%sparts[%zu].", w, pi);
			if (door_part(d, p, pw, &pd, &start))
				break;
			if (strcmp(pd->test, def->name) != 0) {
				door_bad(d, "field %spart '%s' is not a part of test %s", pw,
					 pd->name, def->name);
				break;
			}
			keys[nkeys++] = (struct door_key){def, pd, r};
			s->at = start > s->at ? start : s->at;
			(*nentries)++;
		}
	}
	if (!d->err)
		door_unique(d, keys, nkeys);
	free(keys);
	return d->err;
}

/* Python's repr of a float: the fewest digits that read back, "1e+16", "100.0", "0.001". */
static void door_repr(double x, char *buf, size_t len)
{
	char e[40];
	int p = 1, exp;

	for (; p < 17; p++) {
		snprintf(e, sizeof(e), "%.*e", p - 1, x);
		if (strtod(e, NULL) == x)
			break;
	}
	snprintf(e, sizeof(e), "%.*e", p - 1, x);
	exp = atoi(strchr(e, 'e') + 1);
	if (exp < -4 || exp >= 16)
		snprintf(buf, len, "%s", e);
	else
		snprintf(buf, len, "%.*f", p - 1 - exp > 0 ? p - 1 - exp : 1, x);
}

/* A value for the reason "schema is X": Python's json.dumps of it (cut at 60 characters);
 * a container with members is shown as "[...]" or "{...}". */
static void door_dumps(const struct jdoc_value *v, char *buf, size_t len)
{
	if (v->type == JDOC_STRING)
		jdoc_dumps(v->text, v->len, 60, buf, len);
	else if (v->type == JDOC_BOOL)
		snprintf(buf, len, "%s", v->boolean ? "true" : "false");
	else if (v->type == JDOC_INT && v->huge)
		snprintf(buf, len, "%.60s", v->text);
	else if (v->type == JDOC_INT)
		snprintf(buf, len, "%s%llu", v->negative ? "-" : "",
			 (unsigned long long)v->magnitude);
	else if (v->type == JDOC_INT || v->type == JDOC_FLOAT)
		door_repr(v->number, buf, len);
	else
		snprintf(buf, len, "%s",
			 v->type == JDOC_ARRAY ? (v->len ? "[...]" : "[]")
			 : v->len	       ? "{...}"
					       : "{}");
}

/* _summary_facts and _summary_v2: the node's own facts, in the collector's order. */
static int door_facts(struct door *d, const struct jdoc_value *root, const struct jdoc_value *run,
		      struct health_summary *s)
{
	const struct jdoc_value *node, *status, *errors, *v, *build, *list;
	const struct jdoc_value *clock = door_object_or_empty(jdoc_get(root, "clock"));
	char cut[256];

	if (door_str(d, root, "node", "", true, &node))
		return d->err;
	if (!door_name_ok(node, "._-", 64))
		return door_bad(d, "field node '%s' is not a valid node name",
				door_cut(node, 70, cut, sizeof(cut)));
	if (door_str(d, root, "status", "", true, &status) ||
	    door_list(d, root, "errors", "", false, &errors) ||
	    door_str(d, root, "version", "", false, &v) ||
	    door_field(d, root, "build", "", false, &build) ||
	    (build && door_str(d, build, "id", "build.", true, &v)) ||
	    door_list(d, root, "warnings", "", false, &v) ||
	    door_int(d, clock, "maxerror_us", "clock.", false, &v) ||
	    door_int(d, clock, "esterror_us", "clock.", false, &v))
		return d->err;
	if (jdoc_get(run, "overrides")) {
		if (door_list(d, run, "overrides", "run.", true, &list))
			return d->err;
		for (const struct jdoc_value *x = list->first; x; x = x->next)
			if (x->type != JDOC_STRING)
				return door_bad(d, "field run.overrides holds something that is "
						   "not a parameter name");
	}
	if (door_num(d, run, "interval_s", "run.", false, true, INFINITY, &v))
		return d->err;
	snprintf(s->node, sizeof(s->node), "%s", node->text);
	door_cut(status, sizeof(s->status) - 1, s->status, sizeof(s->status));
	for (const struct jdoc_value *e = errors ? errors->first : NULL; e; e = e->next) {
		if (e->type == JDOC_STRING) {
			door_cut(e, sizeof(s->error) - 1, s->error, sizeof(s->error));
			break;
		}
	}
	return 0;
}

/* The first error of a part that is not ok, when the summary records none of its own. */
static void door_part_error(const struct jdoc_value *tests, struct health_summary *s)
{
	for (const struct jdoc_value *t = tests->first; t && !s->error[0]; t = t->next) {
		const struct jdoc_value *parts = jdoc_get(t, "parts");
		for (const struct jdoc_value *p = parts ? parts->first : NULL; p; p = p->next) {
			const struct jdoc_value *e = jdoc_get(p, "error");
			if (e && e->type == JDOC_STRING && e->len) {
				door_cut(e, sizeof(s->error) - 1, s->error, sizeof(s->error));
				break;
			}
		}
	}
}

/* _summary: the whole summary, in the collector's order. */
static int door_summary(struct door *d, const struct jdoc_value *root, struct health_summary *s)
{
	const struct jdoc_value *tests;
	size_t nentries = 0;

	if (root->type != JDOC_OBJECT)
		return door_bad(d, "not a JSON object");
	const struct jdoc_value *run = door_object_or_empty(jdoc_get(root, "run"));
	const struct jdoc_value *first = jdoc_get(run, "first_repetition");
	if (first && first->type == JDOC_INT &&
	    (first->negative || first->huge || first->magnitude > DOOR_MAX_FIRST_REPETITION))
		return door_bad(d, "field run.first_repetition is out of range");
	const struct jdoc_value *schema = jdoc_get(root, "schema");
	if (!jdoc_is(schema, SUMMARY_SCHEMA) && !jdoc_is(schema, "stagebench.node/2") &&
	    !jdoc_is(schema, "stagebench.node/1")) {
		char shown[128] = "missing";
		if (schema && schema->type == JDOC_STRING && schema->len > 11 &&
		    memcmp(schema->text, "stagebench.", 11) == 0 &&
		    !(schema->len >= 16 && memcmp(schema->text, "stagebench.node/", 16) == 0)) {
			door_cut(schema, 60, s->other_schema, sizeof(s->other_schema));
			return 0;
		}
		if (schema && schema->type != JDOC_NULL)
			door_dumps(schema, shown, sizeof(shown));
		return door_bad(d,
				"schema is %s, expected " SUMMARY_SCHEMA
				" or stagebench.node/2 or stagebench.node/1",
				shown);
	}
	if (door_facts(d, root, run, s) || door_list(d, root, "tests", "", true, &tests) ||
	    door_tests(d, tests, s, &nentries))
		return d->err;
	if (!tests->len && strcmp(s->status, "ok") == 0)
		return door_bad(d, "no test results in an 'ok' summary");
	const struct jdoc_value *started = jdoc_get(run, "started_at");
	if (started && (started->type == JDOC_FLOAT || started->type == JDOC_INT) &&
	    isfinite(started->number) && started->number > 0)
		s->at = started->number;
	door_part_error(tests, s);
	return 0;
}

int health_door_summary(const char *text, size_t len, struct health_summary *s, char *why,
			size_t whylen)
{
	struct door d = {why, whylen, 0};
	struct jdoc doc;
	int rc = jdoc_parse(text, len, false, &doc, why, whylen);

	memset(s, 0, sizeof(*s));
	s->at = -1;
	if (rc)
		return rc;
	rc = door_summary(&d, doc.root, s);
	jdoc_free(&doc);
	return rc;
}

/* One node's list of regressions in a judgement: where names it in the reason. */
static int door_regressions(struct door *d, const struct jdoc_value *list, const char *where,
			    struct health_history *h)
{
	const struct jdoc_value *part, *size, *night;
	char w[160];
	size_t i = 0;

	if (list->type != JDOC_ARRAY)
		return door_bad(d, "field %s is not a list", where);
	for (const struct jdoc_value *x = list->first; x; x = x->next, i++) {
		snprintf(w, sizeof(w), "%s[%zu].", where, i);
		if (door_str(d, x, "part", w, true, &part) ||
		    door_num(d, x, "size", w, true, false, INFINITY, &size) ||
		    door_str(d, x, "first_night", w, true, &night))
			return d->err;
		if (!door_part_def(part))
			return door_bad(d, "field %spart is not a part of any test", w);
		if (!h)
			continue;
		if (h->nflags < HEALTH_DOOR_MAX_FLAGS) {
			struct health_regression *r = &h->flags[h->nflags];
			door_cut(part, sizeof(r->part) - 1, r->part, sizeof(r->part));
			r->size = size->number;
			door_cut(night, sizeof(r->first_night) - 1, r->first_night,
				 sizeof(r->first_night));
		}
		h->nflags++;
	}
	return 0;
}

int health_door_history(const char *text, size_t len, const char *node, struct health_history *h,
			char *why, size_t whylen)
{
	struct door d = {why, whylen, 0};
	const struct jdoc_value *run, *at;
	struct jdoc doc;
	int rc = jdoc_parse(text, len, true, &doc, why, whylen);

	memset(h, 0, sizeof(*h));
	if (rc)
		return rc;
	const struct jdoc_value *root = doc.root, *nodes = jdoc_get(root, "nodes");
	if (!door_is_object(root) ||
	    !jdoc_is(jdoc_get(root, "schema"), HEALTH_DOOR_HISTORY_SCHEMA) ||
	    !door_is_object(nodes))
		door_bad(&d, "not a stagebench history judgement");
	else if (!door_str(&d, root, "run_id", "", true, &run) &&
		 !door_num(&d, root, "written_at", "", true, true, DOOR_MAX_EPOCH, &at)) {
		door_cut(run, sizeof(h->run_id) - 1, h->run_id, sizeof(h->run_id));
		h->written_at = at->number;
		for (const struct jdoc_value *n = nodes->first; n && !d.err; n = n->next) {
			char where[96];
			struct jdoc_value key = {
			    .type = JDOC_STRING, .text = n->key, .len = n->keylen};
			if (!door_name_ok(&key, "._-", 64)) {
				door_bad(&d, "field nodes names something that is not a node name");
				break;
			}
			snprintf(where, sizeof(where), "nodes.%s", n->key);
			door_regressions(&d, n, where, jdoc_is(&key, node) ? h : NULL);
		}
	}
	jdoc_free(&doc);
	if (d.err)
		memset(h, 0, sizeof(*h));
	return d.err;
}
