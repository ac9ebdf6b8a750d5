/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target of util/cpulist: cpulist_parse keeps its contract (-EINVAL, -E2BIG and
 * the counts that go with them, no duplicates, nothing above CPULIST_MAX_CPU), and what it
 * parsed prints with cpulist_format and parses back to the same CPUs, also from a buffer
 * cut short (then a prefix of the list). The first input byte picks the room given to the
 * parser; the rest is the list.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cpulist.h"

#define FUZZ_ALL (CPULIST_MAX_CPU + 1)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *what, const char *s) __attribute__((noreturn));
static void fuzz_fail(const char *what, const char *s)
{
	fprintf(stderr, "fuzz_cpulist: %s: '%s'\n", what, s);
	abort();
}

static int fuzz_cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

/*
 * Print the sorted cpus[0..n-1] into len bytes and parse them back: the first CPUs of the
 * list, all of them when the buffer was big enough (full).
 */
static void fuzz_roundtrip(const unsigned *cpus, size_t n, size_t len, bool full, const char *in)
{
	static unsigned again[FUZZ_ALL];
	char *buf = malloc(len);
	size_t m = 0;

	if (!buf)
		abort();
	cpulist_format(cpus, n, buf, len);
	if (strlen(buf) >= len)
		fuzz_fail("cpulist_format overran its buffer", in);
	if (buf[0] == '\0') {
		if (full && n)
			fuzz_fail("cpulist_format printed nothing", in);
		free(buf);
		return;
	}
	if (cpulist_parse(buf, again, FUZZ_ALL, &m) != 0)
		fuzz_fail("cpulist_format printed a list that does not parse", buf);
	if (m > n || (full && m != n) || memcmp(again, cpus, m * sizeof(cpus[0])) != 0)
		fuzz_fail("cpulist_format printed other CPUs", buf);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned cpus[FUZZ_ALL], all[FUZZ_ALL];
	static uint64_t seen[FUZZ_ALL / 64];
	size_t max, n = 12345, n_all = 0;
	char *s;
	int err;

	if (size < 1)
		return 0;
	/* 0..254 entries, or 255: room for every CPU. */
	max = data[0] == 255 ? FUZZ_ALL : data[0];
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';

	err = cpulist_parse(s, cpus, max, &n);
	if (err == -EINVAL) {
		if (n != 0)
			fuzz_fail("cpulist_parse set a count on -EINVAL", s);
		if (cpulist_parse(s, all, FUZZ_ALL, &n_all) != -EINVAL)
			fuzz_fail("cpulist_parse's -EINVAL depends on the room given", s);
		goto out;
	}
	if (err == -E2BIG) {
		if (n <= max)
			fuzz_fail("cpulist_parse said -E2BIG with a count that fits", s);
	} else if (err != 0 || n > max) {
		fuzz_fail("cpulist_parse broke its contract", s);
	}
	/* With room for every CPU the list parses, and starts with what fitted before. */
	if (cpulist_parse(s, all, FUZZ_ALL, &n_all) != 0 || n_all != n ||
	    memcmp(all, cpus, (n < max ? n : max) * sizeof(cpus[0])) != 0)
		fuzz_fail("cpulist_parse differs with more room", s);
	memset(seen, 0, sizeof(seen));
	for (size_t i = 0; i < n_all; i++) {
		unsigned c = all[i];
		if (c > CPULIST_MAX_CPU || (seen[c / 64] & (1ull << (c % 64))))
			fuzz_fail("cpulist_parse returned a CPU out of range or twice", s);
		seen[c / 64] |= 1ull << (c % 64);
	}
	qsort(all, n_all, sizeof(all[0]), fuzz_cmp);
	/* Room for everything ("65535," per CPU at most), then a few cut lengths. */
	fuzz_roundtrip(all, n_all, n_all * 6 + 1, true, s);
	for (size_t len = 1; len < 24; len++)
		fuzz_roundtrip(all, n_all, len, false, s);
out:
	free(s);
	return 0;
}
