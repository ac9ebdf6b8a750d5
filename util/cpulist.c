/* SPDX-License-Identifier: MIT */
/*
 * CPU lists: "0-3,8,10-11" and strided ranges "0-7:2", parsed strictly (this is what
 * --cpus takes, and a typo must not silently pin threads elsewhere) and printed compactly.
 */
#include "util/cpulist.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A decimal number up to CPULIST_MAX_CPU at *p; advances *p. -EINVAL when none or too big. */
static int cpulist_number(const char **p, unsigned *out)
{
	const char *s = *p;
	unsigned long v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > CPULIST_MAX_CPU)
			return -EINVAL;
	}
	*p = s;
	*out = (unsigned)v;
	return 0;
}

/*
 * Items are "A", "A-B" or "A-B:S" (every S-th CPU from A to B). A bitmap of every CPU seen
 * catches duplicates across items in one pass; it is 8 KiB on the stack. The whole string
 * is checked even when cpus[] is full, so -EINVAL wins over -E2BIG and, on -E2BIG, *n gets
 * the number of entries that would be needed.
 */
int cpulist_parse(const char *s, unsigned *cpus, size_t max, size_t *n)
{
	uint64_t seen[(CPULIST_MAX_CPU + 1) / 64];
	const char *p = s;
	size_t count = 0;
	unsigned a, b, stride, c;
	int err;

	*n = 0;
	if (!s)
		return -EINVAL;
	memset(seen, 0, sizeof(seen));
	for (;;) {
		err = cpulist_number(&p, &a);
		if (err)
			return err;
		b = a;
		stride = 1;
		if (*p == '-') {
			p++;
			err = cpulist_number(&p, &b);
			if (err)
				return err;
			if (b < a)
				return -EINVAL;
			if (*p == ':') {
				p++;
				err = cpulist_number(&p, &stride);
				if (err)
					return err;
				if (stride == 0)
					return -EINVAL;
			}
		}
		for (c = a; c <= b; c += stride) {
			if (seen[c / 64] & (1ull << (c % 64)))
				return -EINVAL;
			seen[c / 64] |= 1ull << (c % 64);
			if (count < max)
				cpus[count] = c;
			count++;
		}
		if (*p == '\0')
			break;
		if (*p != ',')
			return -EINVAL;
		p++;
	}
	*n = count;
	return count > max ? -E2BIG : 0;
}

/*
 * Runs of consecutive numbers print as "A-B", others one by one. A buffer too small gets
 * the items that fit whole, so a cut list never shows a wrong number.
 */
char *cpulist_format(const unsigned *cpus, size_t n, char *buf, size_t len)
{
	size_t i = 0, j, used = 0;
	int w;

	if (!buf || len == 0)
		return buf;
	buf[0] = '\0';
	while (i < n) {
		for (j = i; j + 1 < n && cpus[j + 1] == cpus[j] + 1; j++)
			;
		if (j > i)
			w = snprintf(buf + used, len - used, "%s%u-%u", i ? "," : "", cpus[i],
				     cpus[j]);
		else
			w = snprintf(buf + used, len - used, "%s%u", i ? "," : "", cpus[i]);
		if (w < 0 || (size_t)w >= len - used) {
			buf[used] = '\0';
			break;
		}
		used += (size_t)w;
		i = j + 1;
	}
	return buf;
}
