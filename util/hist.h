/* SPDX-License-Identifier: MIT */
/*
 * A log-linear latency histogram in nanoseconds: fixed memory, no allocation when recording,
 * mergeable by adding bucket counts. Values below 2^HIST_SUB_BITS ns are exact; above, each
 * power of two is split into 2^HIST_SUB_BITS linear buckets, so the relative error of a
 * reported value is below 2^-HIST_SUB_BITS (0.8%). The bucket scheme is part of the JSON
 * summary ("hist_scheme"), so a collector can merge histograms of many nodes exactly.
 */
#ifndef STAGEBENCH_HIST_H
#define STAGEBENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS  7
#define HIST_SUB_COUNT (1u << HIST_SUB_BITS)
#define HIST_MAX_BITS  44 /* values up to 2^44 ns (about 4.9 hours); larger ones are clamped */
#define HIST_BUCKETS   ((HIST_MAX_BITS - HIST_SUB_BITS + 1) * HIST_SUB_COUNT)

struct hist {
	uint64_t count;
	uint64_t min_ns;
	uint64_t max_ns;
	uint64_t sum_ns; /* saturates */
	uint64_t buckets[HIST_BUCKETS];
};

void hist_init(struct hist *h);
/* The bucket index of a value; values >= 2^HIST_MAX_BITS go to the last bucket. */
unsigned hist_index(uint64_t ns);
/* The smallest and largest value that map to bucket i (UINT64_MAX for the last one). */
uint64_t hist_bucket_low(unsigned i);
uint64_t hist_bucket_high(unsigned i);
void hist_record(struct hist *h, uint64_t ns);
/* dst += src. */
void hist_merge(struct hist *dst, const struct hist *src);
/*
 * The value at quantile q (0 < q <= 1): the midpoint of the bucket holding the
 * ceil(q*count)-th smallest value, clamped to [min_ns, max_ns]. 0 for an empty histogram.
 */
uint64_t hist_quantile(const struct hist *h, double q);

#endif
