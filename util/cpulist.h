/* SPDX-License-Identifier: MIT */
/*
 * CPU lists as Linux writes them: "0-3,8,10-11" (also "0-7:2", every second CPU).
 */
#ifndef STAGEBENCH_CPULIST_H
#define STAGEBENCH_CPULIST_H

#include <stddef.h>

#define CPULIST_MAX_CPU 65535

/*
 * Parse into cpus[] in the order written, up to max entries; *n gets the count. Rejects
 * empty items, descending ranges, numbers above CPULIST_MAX_CPU, duplicates and stray
 * characters. Returns 0, -EINVAL (malformed or duplicate) or -E2BIG (more than max).
 * On -E2BIG the whole string was valid, cpus[] holds the first max entries and *n the
 * number needed; on -EINVAL *n is 0.
 */
int cpulist_parse(const char *s, unsigned *cpus, size_t max, size_t *n);

/* Print cpus[0..n-1] (ascending) compactly, "0-3,8". Returns buf. */
char *cpulist_format(const unsigned *cpus, size_t n, char *buf, size_t len);

#endif
