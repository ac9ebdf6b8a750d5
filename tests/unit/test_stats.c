/* SPDX-License-Identifier: MIT */
/*
 * Unit test of util/stats: min, median (mean of the middle two for even n), max and mean
 * of random arrays against an independently sorted reference.
 */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "util/prng.h"
#include "util/stats.h"

#define MAX_N 257

/* Insertion sort: slow, obviously right, and not the code under test. */
static void test_stats_reference_sort(double *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		double x = v[i];
		size_t j = i;

		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

struct fixed_case {
	size_t n;
	double v[6];
	struct stats_summary want;
};

static const struct fixed_case fixed_cases[] = {
    {0, {0}, {0, 0, 0, 0}},
    {1, {3.5}, {3.5, 3.5, 3.5, 3.5}},
    {2, {4, 2}, {2, 3, 4, 3}},
    {3, {9, 1, 5}, {1, 5, 9, 5}},
    {4, {1, 10, 2, 3}, {1, 2.5, 10, 4}},
    {5, {2, 2, 2, 2, 2}, {2, 2, 2, 2}},
    {6, {-1, 4, -3, 0, 2, 4}, {-3, 1, 4, 1}},
};

static void test_stats_fixed(void)
{
	for (size_t i = 0; i < sizeof(fixed_cases) / sizeof(fixed_cases[0]); i++) {
		const struct fixed_case *c = &fixed_cases[i];
		double v[6];
		struct stats_summary s;

		memcpy(v, c->v, sizeof(v));
		stats_summarize(v, c->n, &s);
		CHECK_MSG(s.min == c->want.min && s.median == c->want.median &&
			      s.max == c->want.max && s.mean == c->want.mean,
			  "case %zu: %g %g %g %g", i, s.min, s.median, s.max, s.mean);
	}
}

static void test_stats_random(void)
{
	struct prng r;
	double v[MAX_N], ref[MAX_N];

	prng_seed(&r, 42, 0, 0);
	for (int round = 0; round < 400; round++) {
		size_t n = 1 + (size_t)prng_below(&r, MAX_N);
		struct stats_summary s;
		double sum = 0, median;
		int sorted = 1;

		for (size_t i = 0; i < n; i++) {
			/* Few distinct values in some rounds, so ties are exercised too. */
			if (round % 4 == 0)
				v[i] = (double)prng_below(&r, 8);
			else
				v[i] = ((double)(prng_next(&r) >> 11) / 9007199254740992.0 - 0.25) *
				       1e3;
			ref[i] = v[i];
			sum += v[i];
		}
		test_stats_reference_sort(ref, n);
		median = n % 2 ? ref[n / 2] : (ref[n / 2 - 1] + ref[n / 2]) / 2;
		stats_summarize(v, n, &s);
		for (size_t i = 0; i < n; i++)
			sorted &= v[i] == ref[i];
		CHECK_MSG(sorted, "round %d: not sorted in place", round);
		CHECK_MSG(s.min == ref[0], "round %d: min %g, want %g", round, s.min, ref[0]);
		CHECK_MSG(s.max == ref[n - 1], "round %d: max %g, want %g", round, s.max,
			  ref[n - 1]);
		CHECK_MSG(s.median == median, "round %d: median %.17g, want %.17g", round, s.median,
			  median);
		CHECK_MSG(fabs(s.mean - sum / (double)n) <= 1e-9 * fabs(sum / (double)n) + 1e-12,
			  "round %d: mean %.17g, want %.17g", round, s.mean, sum / (double)n);
	}
}

static void test_stats_sort_nan(void)
{
	double v[] = {3, NAN, 1, 2, NAN, 0};

	stats_sort(v, 6);
	CHECK(v[0] == 0 && v[1] == 1 && v[2] == 2 && v[3] == 3);
	CHECK(isnan(v[4]) && isnan(v[5]));
}

int main(void)
{
	test_stats_fixed();
	test_stats_random();
	test_stats_sort_nan();
	return check_done();
}
