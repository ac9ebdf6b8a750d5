/* SPDX-License-Identifier: MIT */
/*
 * The log-linear latency histogram. A value v >= 2^SUB with top bit e goes to bucket
 * (e - SUB) * 2^SUB + (v >> (e - SUB)): the top SUB+1 bits of v. Below 2^SUB the index is v
 * itself, and the formula gives the same for [2^SUB, 2^(SUB+1)), so values below 256 ns are
 * exact and the index is continuous.
 */
#include "util/hist.h"

#include <string.h>

#define HIST_LAST (HIST_BUCKETS - 1)

/*
 * An empty histogram is all zeros (min_ns too), so a zeroed struct is a valid empty one
 * and nothing reports UINT64_MAX for the minimum of no values.
 */
void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
}

unsigned hist_index(uint64_t ns)
{
	unsigned shift;

	if (ns < HIST_SUB_COUNT)
		return (unsigned)ns;
	if (ns >> HIST_MAX_BITS)
		return HIST_LAST;
	shift = (unsigned)(63 - __builtin_clzll(ns)) - HIST_SUB_BITS;
	return shift * HIST_SUB_COUNT + (unsigned)(ns >> shift);
}

/* Indexes past the end are taken as the last bucket. */
uint64_t hist_bucket_low(unsigned i)
{
	unsigned shift;

	if (i > HIST_LAST)
		i = HIST_LAST;
	if (i < HIST_SUB_COUNT)
		return i;
	shift = i / HIST_SUB_COUNT - 1;
	return (uint64_t)(HIST_SUB_COUNT + i % HIST_SUB_COUNT) << shift;
}

/* The last bucket also holds every clamped value, so its high end is UINT64_MAX. */
uint64_t hist_bucket_high(unsigned i)
{
	if (i >= HIST_LAST)
		return UINT64_MAX;
	return hist_bucket_low(i + 1) - 1;
}

void hist_record(struct hist *h, uint64_t ns)
{
	if (h->count == 0 || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	if (__builtin_add_overflow(h->sum_ns, ns, &h->sum_ns))
		h->sum_ns = UINT64_MAX;
	h->count++;
	h->buckets[hist_index(ns)]++;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned i;

	if (src->count == 0)
		return;
	if (dst->count == 0 || src->min_ns < dst->min_ns)
		dst->min_ns = src->min_ns;
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
	if (__builtin_add_overflow(dst->sum_ns, src->sum_ns, &dst->sum_ns))
		dst->sum_ns = UINT64_MAX;
	dst->count += src->count;
	for (i = 0; i < HIST_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
}

/*
 * The rank is ceil(q * count) computed without ceil() rounding surprises, then clamped to
 * [1, count] so that q <= 0 (or NaN) means the smallest value and q > 1 the largest. The
 * last bucket reaches up to UINT64_MAX, so its midpoint is always clamped to max_ns: the
 * best there is for values clamped into it, and within the bucket's width otherwise.
 */
uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t rank, seen = 0, low, high, mid;
	unsigned i;
	double x;

	if (h->count == 0)
		return 0;
	if (!(q > 0)) {
		rank = 1;
	} else if (q >= 1) {
		rank = h->count;
	} else {
		x = q * (double)h->count;
		rank = (uint64_t)x;
		if ((double)rank < x)
			rank++;
		if (rank < 1)
			rank = 1;
		if (rank > h->count)
			rank = h->count;
	}
	for (i = 0; i < HIST_LAST; i++) {
		seen += h->buckets[i];
		if (seen >= rank)
			break;
	}
	low = hist_bucket_low(i);
	high = hist_bucket_high(i);
	mid = low + (high - low) / 2;
	if (mid < h->min_ns)
		mid = h->min_ns;
	if (mid > h->max_ns)
		mid = h->max_ns;
	return mid;
}
