/* SPDX-License-Identifier: MIT */
/*
 * What every kind shares: the first-error bookkeeping of a thread (platform/io_error.h: the
 * first thing that went wrong, since later errors are usually its consequences), the name
 * tables of what a kind counts, and the median of pass times.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/bench.h"

/* The one name table of enum bench_unit: what is counted, and the unit of its rate. */
static const struct {
	const char *counted, *rate;
} bench_units[BENCH_UNIT_COUNT] = {
    [BENCH_UNIT_OPS] = {"operations", "ops/s"},
    [BENCH_UNIT_BYTES_READ] = {"bytes read", "B/s"},
    [BENCH_UNIT_BYTES_WRITTEN] = {"bytes written", "B/s"},
    [BENCH_UNIT_PAGES] = {"pages touched", "pages/s"},
};

const char *bench_unit_counted(enum bench_unit unit)
{
	return (unsigned)unit < BENCH_UNIT_COUNT ? bench_units[unit].counted : "?";
}

const char *bench_unit_rate(enum bench_unit unit)
{
	return (unsigned)unit < BENCH_UNIT_COUNT ? bench_units[unit].rate : "?";
}

size_t bench_unit_words(bool rate, const char **words, size_t room)
{
	static const enum bench_unit order[BENCH_UNIT_COUNT] = {
	    BENCH_UNIT_BYTES_READ, BENCH_UNIT_BYTES_WRITTEN, BENCH_UNIT_PAGES, BENCH_UNIT_OPS};
	size_t n = 0;

	for (size_t i = 0; i < BENCH_UNIT_COUNT && n + 1 < room; i++) {
		const char *w = rate ? bench_units[order[i]].rate : bench_units[order[i]].counted;
		bool seen = false;

		for (size_t k = 0; k < n; k++)
			seen = seen || strcmp(words[k], w) == 0;
		if (!seen)
			words[n++] = w;
	}
	if (room)
		words[n] = NULL;
	return n;
}

void bench_teardown_free(struct bench_ctx *c)
{
	free(c->priv);
	c->priv = NULL;
}

int bench_fail(struct bench_ctx *c, const char *op, const char *path, int errnum)
{
	return io_error_set(&c->err, op, path, false, 0, errnum);
}

int bench_fail_at(struct bench_ctx *c, const char *op, const char *path, uint64_t offset,
		  int errnum)
{
	return io_error_set(&c->err, op, path, true, offset, errnum);
}

int bench_fail_verify(struct bench_ctx *c, const char *path, uint64_t offset, int errnum,
		      uint64_t expected_gen, uint64_t found_gen)
{
	bool first = c->err.errnum == 0;
	int rc = io_error_set(&c->err, "verify", path, true, offset, errnum);

	/* A block that is not ours at all (EBADMSG) has no generation worth reporting. */
	if (first && c->err.errnum == ESTALE) {
		c->err.has_generation = true;
		c->err.expected_gen = expected_gen;
		c->err.found_gen = found_gen;
	}
	return rc;
}

static int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t bench_median_ns(uint64_t *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), bench_cmp_u64);
	if (n % 2)
		return v[n / 2];
	return v[n / 2 - 1] / 2 + v[n / 2] / 2 + (v[n / 2 - 1] % 2 + v[n / 2] % 2) / 2;
}
