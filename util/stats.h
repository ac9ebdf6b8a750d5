/* SPDX-License-Identifier: MIT */
/*
 * Order statistics of a small array of doubles (thread times, node times).
 */
#ifndef STAGEBENCH_STATS_H
#define STAGEBENCH_STATS_H

#include <stddef.h>

struct stats_summary {
	double min;
	double median; /* the mean of the two middle values when n is even */
	double max;
	double mean;
};

/*
 * Summarize v[0..n-1]; v is sorted in place. n == 0 gives all zeros.
 */
void stats_summarize(double *v, size_t n, struct stats_summary *out);

/* Sort v[0..n-1] ascending in place. */
void stats_sort(double *v, size_t n);

#endif
