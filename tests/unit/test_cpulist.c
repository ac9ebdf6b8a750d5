/* SPDX-License-Identifier: MIT */
/*
 * Unit test of util/cpulist: parsing good and bad lists (ranges, strides, duplicates,
 * limits), the -E2BIG contract, and compact printing.
 */
#include <errno.h>

#include "check.h"
#include "util/cpulist.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define MAXC 16

struct parse_case {
	const char *s;
	int err;
	size_t n;
	unsigned cpus[MAXC];
};

static const struct parse_case parse_cases[] = {
    {"0", 0, 1, {0}},
    {"0-3", 0, 4, {0, 1, 2, 3}},
    {"0-3,8,10-11", 0, 7, {0, 1, 2, 3, 8, 10, 11}},
    {"0-7:2", 0, 4, {0, 2, 4, 6}},
    {"1-8:3", 0, 3, {1, 4, 7}},
    {"5-5", 0, 1, {5}},
    {"3-3:7", 0, 1, {3}},
    {"9,1,4", 0, 3, {9, 1, 4}},
    {"0-1,4-5:1", 0, 4, {0, 1, 4, 5}},
    {"65535", 0, 1, {65535}},
    {"65534-65535", 0, 2, {65534, 65535}},
    {"007", 0, 1, {7}},
    {"", -EINVAL, 0, {0}},
    {",", -EINVAL, 0, {0}},
    {"1,", -EINVAL, 0, {0}},
    {",1", -EINVAL, 0, {0}},
    {"1,,2", -EINVAL, 0, {0}},
    {"1-", -EINVAL, 0, {0}},
    {"-1", -EINVAL, 0, {0}},
    {"3-1", -EINVAL, 0, {0}},
    {"1,1", -EINVAL, 0, {0}},
    {"0-3,2", -EINVAL, 0, {0}},
    {"0-7:2,4", -EINVAL, 0, {0}},
    {"0-7:2,5", 0, 5, {0, 2, 4, 6, 5}},
    {"a", -EINVAL, 0, {0}},
    {"1 ,2", -EINVAL, 0, {0}},
    {"1, 2", -EINVAL, 0, {0}},
    {" 1", -EINVAL, 0, {0}},
    {"1 ", -EINVAL, 0, {0}},
    {"65536", -EINVAL, 0, {0}},
    {"0-65536", -EINVAL, 0, {0}},
    {"99999999999999999999", -EINVAL, 0, {0}},
    {"0-7:0", -EINVAL, 0, {0}},
    {"0-7:", -EINVAL, 0, {0}},
    {"5:2", -EINVAL, 0, {0}},
    {"0-3-5", -EINVAL, 0, {0}},
    {"+1", -EINVAL, 0, {0}},
    {"0x1", -EINVAL, 0, {0}},
    {"0-15,16", -E2BIG, 17, {0}},
    {"0-20,a", -EINVAL, 0, {0}},
};

static void test_cpulist_parse(void)
{
	for (size_t i = 0; i < N(parse_cases); i++) {
		const struct parse_case *c = &parse_cases[i];
		unsigned cpus[MAXC];
		size_t n = 12345;
		int err = cpulist_parse(c->s, cpus, MAXC, &n);

		CHECK_MSG(err == c->err, "'%s': %d, want %d", c->s, err, c->err);
		CHECK_MSG(n == c->n, "'%s': n=%zu, want %zu", c->s, n, c->n);
		if (err == 0 && c->err == 0)
			CHECK_MSG(memcmp(cpus, c->cpus, c->n * sizeof(cpus[0])) == 0, "'%s': cpus",
				  c->s);
	}
}

/* The whole range of CPUs at once, into a buffer exactly big enough and one too small. */
static void test_cpulist_all(void)
{
	static unsigned cpus[CPULIST_MAX_CPU + 1];
	size_t n = 0;
	int bad = 0;

	CHECK(cpulist_parse("0-65535", cpus, CPULIST_MAX_CPU + 1, &n) == 0);
	CHECK_U64(n, CPULIST_MAX_CPU + 1);
	for (unsigned i = 0; i <= CPULIST_MAX_CPU; i++)
		bad += cpus[i] != i;
	CHECK(bad == 0);
	CHECK(cpulist_parse("0-65535", cpus, CPULIST_MAX_CPU, &n) == -E2BIG);
	CHECK(cpulist_parse("0-65535:2,1", cpus, CPULIST_MAX_CPU + 1, &n) == 0 && n == 32769);
}

struct format_case {
	size_t n;
	unsigned cpus[MAXC];
	size_t len;
	const char *s;
};

static const struct format_case format_cases[] = {
    {0, {0}, 64, ""},
    {1, {5}, 64, "5"},
    {4, {0, 1, 2, 3}, 64, "0-3"},
    {5, {0, 1, 2, 3, 8}, 64, "0-3,8"},
    {7, {0, 1, 2, 3, 8, 10, 11}, 64, "0-3,8,10-11"},
    {4, {0, 2, 4, 6}, 64, "0,2,4,6"},
    {3, {1, 3, 4}, 64, "1,3-4"},
    {2, {65534, 65535}, 64, "65534-65535"},
    /* Cut at an item boundary when the buffer is short. */
    {7, {0, 1, 2, 3, 8, 10, 11}, 8, "0-3,8"},
    {7, {0, 1, 2, 3, 8, 10, 11}, 4, "0-3"},
    {7, {0, 1, 2, 3, 8, 10, 11}, 3, ""},
};

static void test_cpulist_format(void)
{
	char buf[64];

	for (size_t i = 0; i < N(format_cases); i++) {
		const struct format_case *c = &format_cases[i];

		CHECK_STR(cpulist_format(c->cpus, c->n, buf, c->len), c->s);
	}
}

/* Printing and parsing again gives the same list. */
static void test_cpulist_roundtrip(void)
{
	static const char *const lists[] = {"0-3,8,10-11", "0", "1,3-4,6-9,12", "0-7:2"};
	unsigned cpus[MAXC], again[MAXC];
	size_t n, m;
	char buf[64];

	for (size_t i = 0; i < N(lists); i++) {
		CHECK(cpulist_parse(lists[i], cpus, MAXC, &n) == 0);
		cpulist_format(cpus, n, buf, sizeof(buf));
		CHECK(cpulist_parse(buf, again, MAXC, &m) == 0);
		CHECK(m == n && memcmp(cpus, again, n * sizeof(cpus[0])) == 0);
	}
}

int main(void)
{
	test_cpulist_parse();
	test_cpulist_all();
	test_cpulist_format();
	test_cpulist_roundtrip();
	return check_done();
}
