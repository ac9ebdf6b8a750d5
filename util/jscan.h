/* SPDX-License-Identifier: MIT */
/*
 * The collector's fast door to a node summary: one pass over the text that validates it as
 * JSON and takes out the three long arrays (the thread plan, each part's per_thread, each
 * latency histogram's buckets), handing the collector their reduction and the rest of the text
 * to parse. Anything unusual is declined, and the collector reads that file its own way.
 */
#ifndef STAGEBENCH_JSCAN_H
#define STAGEBENCH_JSCAN_H

#include <stddef.h>
#include <stdint.h>

/* The record's first bytes, and what stagebench-scan prints first (the format's version). */
#define JSCAN_MAGIC "SBSCAN3\n"

/* A growing byte buffer; zeroed it is empty, jscan_buf_free releases it. */
struct jscan_buf {
	unsigned char *p;
	size_t len, cap;
};

/* Append n bytes of src: 0 or -ENOMEM. */
int jscan_buf_put(struct jscan_buf *b, const void *src, size_t n);
void jscan_buf_free(struct jscan_buf *b);

/*
 * Scan the summary text[0..len) (not terminated) and append its record to out: the text with
 * each taken array replaced by its block's number, then the blocks (the layout is
 * scripts/stagebench/scan.py's, which reads it). top: how many of the slowest threads a
 * per_thread block keeps. 0; -EINVAL when the text is declined (out as it was): anything the
 * collector's checks would look at more closely than this door does (a backslash, a byte
 * outside ASCII, a thread with an error, a value of unusual type or size, invalid JSON, a
 * repeated key in any object, an object of more than 128 keys); -ENOMEM. The text handed on
 * holds no repeated key: the collector parses it without looking for one (SBSCAN2);
 * a buckets block ends with the figures the collector checks of them (SBSCAN3).
 */
int jscan_summary(const char *text, size_t len, unsigned top, struct jscan_buf *out);

/*
 * mant / 10^k as the double nearest to it (ties to even), as strtod reads the decimal, for
 * 0 <= k <= JSCAN_DECIMAL_MAX_K; 0 and the value when it can (a compiler with 128-bit integers),
 * else -ENOTSUP.
 */
#define JSCAN_DECIMAL_MAX_K 21
int jscan_decimal(uint64_t mant, int k, double *out);

#endif
