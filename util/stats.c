/* SPDX-License-Identifier: MIT */
/*
 * Order statistics of small arrays of doubles: the min, median, max and mean that the
 * summaries report for thread times and node times.
 */
#include "util/stats.h"

#include <stdlib.h>

/* Ascending, NaNs last, so that qsort always sees a consistent order. */
static int stats_cmp(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	if (a < b)
		return -1;
	if (a > b)
		return 1;
	if (a == b)
		return 0;
	return (a != a) - (b != b);
}

void stats_sort(double *v, size_t n)
{
	if (v && n > 1)
		qsort(v, n, sizeof(*v), stats_cmp);
}

/*
 * The middle two are halved before adding, so two values near DBL_MAX do not overflow;
 * halving a double is exact (subnormals aside), so otherwise this is exactly (a + b) / 2.
 */
void stats_summarize(double *v, size_t n, struct stats_summary *out)
{
	double sum = 0;
	size_t i;

	out->min = out->median = out->max = out->mean = 0;
	if (!v || n == 0)
		return;
	stats_sort(v, n);
	for (i = 0; i < n; i++)
		sum += v[i];
	out->min = v[0];
	out->max = v[n - 1];
	out->mean = sum / (double)n;
	if (n % 2)
		out->median = v[n / 2];
	else
		out->median = v[n / 2 - 1] / 2 + v[n / 2] / 2;
}
