/* SPDX-License-Identifier: MIT */
/*
 * Unit test of util/hist: the bucket scheme (continuous, consistent low/high, narrow enough),
 * quantiles against a sorted reference of random samples, merging, clamping, saturation.
 */
#include <stdlib.h>

#include "check.h"
#include "util/hist.h"
#include "util/prng.h"

#define MAX_SAMPLES 200000

static uint64_t samples[MAX_SAMPLES];
static struct hist h_all, h_part[3], h_merged;

static int test_hist_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Every bucket: low <= high, both map back to it, buckets tile [0, 2^64), width bounded. */
static void test_hist_buckets(void)
{
	int bad_map = 0, bad_tile = 0, bad_width = 0;

	CHECK_U64(hist_bucket_low(0), 0);
	CHECK_U64(hist_bucket_high(HIST_BUCKETS - 1), UINT64_MAX);
	CHECK_U64(hist_index(((uint64_t)1 << HIST_MAX_BITS) - 1), HIST_BUCKETS - 1);
	CHECK_U64(hist_index((uint64_t)1 << HIST_MAX_BITS), HIST_BUCKETS - 1);
	CHECK_U64(hist_index(UINT64_MAX), HIST_BUCKETS - 1);
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		uint64_t lo = hist_bucket_low(i), hi = hist_bucket_high(i);

		bad_map += lo > hi || hist_index(lo) != i || hist_index(hi) != i;
		if (i + 1 < HIST_BUCKETS)
			bad_tile += hist_bucket_low(i + 1) != hi + 1;
		if (lo < HIST_SUB_COUNT)
			bad_width += lo != hi;
		else if (i + 1 < HIST_BUCKETS)
			bad_width += (double)(hi - lo + 1) / (double)lo > 1.0 / HIST_SUB_COUNT;
	}
	CHECK_MSG(bad_map == 0, "%d buckets whose low/high map elsewhere", bad_map);
	CHECK_MSG(bad_tile == 0, "%d gaps or overlaps between buckets", bad_tile);
	CHECK_MSG(bad_width == 0, "%d buckets too wide", bad_width);
}

/* Random values land in a bucket that contains them; the index never decreases. */
static void test_hist_index_random(void)
{
	struct prng r;
	int bad = 0;

	prng_seed(&r, 7, 0, 0);
	for (int k = 0; k < 100000; k++) {
		uint64_t v = prng_next(&r) >> prng_below(&r, 64);
		unsigned i = hist_index(v);

		bad += i >= HIST_BUCKETS || v < hist_bucket_low(i) || v > hist_bucket_high(i) ||
		       (v > 0 && hist_index(v - 1) > i);
	}
	CHECK_MSG(bad == 0, "%d values outside their bucket", bad);
}

/*
 * Log-uniform by octaves in [lo, hi), 1 <= lo < hi: an octave drawn uniformly, then a value
 * uniformly within it. No libm, so the test links as the build links it.
 */
static uint64_t test_hist_sample(struct prng *r, uint64_t lo, uint64_t hi)
{
	unsigned elo = 63 - (unsigned)__builtin_clzll(lo),
		 ehi = 63 - (unsigned)__builtin_clzll(hi - 1);
	unsigned e = elo + (unsigned)prng_below(r, ehi - elo + 1);
	uint64_t a = (uint64_t)1 << e, b = a << 1;

	if (a < lo)
		a = lo;
	if (b > hi)
		b = hi;
	return a + prng_below(r, b - a);
}

struct dist_case {
	const char *name;
	uint64_t lo, hi;
	size_t n;
};

static const struct dist_case dist_cases[] = {
    {"tiny (exact range)", 1, 128, 10000},
    {"across 128", 16, 4096, 50000},
    {"latencies 1us..1s", 1000, 1000000000, MAX_SAMPLES},
    {"wide 1ns..2^44ns", 1, 1ull << 44, MAX_SAMPLES},
    {"narrow", 1000000, 1010000, 20000},
};

static const double quantiles[] = {1e-6, 0.001, 0.01, 0.1,   0.25,   0.5,
				   0.75, 0.9,	0.99, 0.999, 0.9999, 1.0};

/*
 * Record samples into one histogram and, split at random, into three that are merged; the
 * merged one must equal the single one, and every quantile must be within 1% of the sorted
 * reference (exact below 128 ns).
 */
static void test_hist_quantiles(const struct dist_case *c, struct prng *r)
{
	uint64_t sum = 0;

	hist_init(&h_all);
	hist_init(&h_merged);
	for (int k = 0; k < 3; k++)
		hist_init(&h_part[k]);
	for (size_t i = 0; i < c->n; i++) {
		samples[i] = test_hist_sample(r, c->lo, c->hi);
		sum += samples[i];
		hist_record(&h_all, samples[i]);
		hist_record(&h_part[prng_below(r, 3)], samples[i]);
	}
	for (int k = 0; k < 3; k++)
		hist_merge(&h_merged, &h_part[k]);
	CHECK_MSG(memcmp(&h_all, &h_merged, sizeof(h_all)) == 0, "%s: merge differs", c->name);

	qsort(samples, c->n, sizeof(samples[0]), test_hist_cmp);
	CHECK_U64(h_all.count, c->n);
	CHECK_U64(h_all.min_ns, samples[0]);
	CHECK_U64(h_all.max_ns, samples[c->n - 1]);
	CHECK_U64(h_all.sum_ns, sum);
	for (size_t k = 0; k < sizeof(quantiles) / sizeof(quantiles[0]); k++) {
		double q = quantiles[k];
		double x = q * (double)c->n;
		size_t rank = (size_t)x + ((double)(size_t)x < x); /* ceil(q * n) */
		uint64_t want = samples[(rank ? rank : 1) - 1];
		uint64_t got = hist_quantile(&h_all, q);
		double rel = (double)(got > want ? got - want : want - got) / (double)want;

		if (want < 128)
			CHECK_MSG(got == want, "%s: q=%g got %" PRIu64 " want %" PRIu64, c->name, q,
				  got, want);
		else
			CHECK_MSG(rel < 0.01, "%s: q=%g got %" PRIu64 " want %" PRIu64 " (%.3f%%)",
				  c->name, q, got, want, 100 * rel);
	}
}

static void test_hist_edges(void)
{
	struct hist h;
	uint64_t big = (uint64_t)1 << 50;

	hist_init(&h);
	CHECK_U64(hist_quantile(&h, 0.5), 0);
	CHECK_U64(h.min_ns, 0);

	/* Merging an empty histogram changes nothing; merging into an empty one copies. */
	hist_record(&h, 1000);
	hist_init(&h_merged);
	hist_merge(&h_merged, &h);
	CHECK(memcmp(&h_merged, &h, sizeof(h)) == 0);
	hist_init(&h_part[0]);
	hist_merge(&h, &h_part[0]);
	CHECK(memcmp(&h_merged, &h, sizeof(h)) == 0);
	CHECK_U64(hist_quantile(&h, 0.5), 1000);
	CHECK_U64(hist_quantile(&h, 0), 1000);
	CHECK_U64(hist_quantile(&h, 2), 1000);

	/* Values past 2^HIST_MAX_BITS are clamped into the last bucket but keep max and sum. */
	hist_record(&h, big);
	CHECK_U64(h.buckets[HIST_BUCKETS - 1], 1);
	CHECK_U64(h.max_ns, big);
	CHECK_U64(hist_quantile(&h, 1.0), big);
	CHECK_U64(h.sum_ns, big + 1000);

	/* The sum saturates. */
	hist_record(&h, UINT64_MAX - 10);
	CHECK_U64(h.sum_ns, UINT64_MAX);
	hist_merge(&h, &h);
	CHECK_U64(h.sum_ns, UINT64_MAX);
	CHECK_U64(h.count, 6);
}

int main(void)
{
	struct prng r;

	prng_seed(&r, 2024, 1, 2);
	test_hist_buckets();
	test_hist_index_random();
	for (size_t i = 0; i < sizeof(dist_cases) / sizeof(dist_cases[0]); i++)
		test_hist_quantiles(&dist_cases[i], &r);
	test_hist_edges();
	return check_done();
}
