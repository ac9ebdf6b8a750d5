/* SPDX-License-Identifier: MIT */
/*
 * Unit test of util/size: parsing sizes, integers and seconds (good and bad input, overflow),
 * and printing sizes and rates.
 */
#include <errno.h>
#include <stdint.h>

#include "check.h"
#include "util/size.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)
#define TiB (1024ull * GiB)
#define EiB (1024ull * 1024 * TiB)

struct size_case {
	const char *s;
	int err;
	uint64_t v;
};

static const struct size_case size_cases[] = {
    {"0", 0, 0},
    {"1000", 0, 1000},
    {"007", 0, 7},
    {"4k", 0, 4 * KiB},
    {"4K", 0, 4 * KiB},
    {"4KB", 0, 4 * KiB},
    {"4kb", 0, 4 * KiB},
    {"4KiB", 0, 4 * KiB},
    {"4kib", 0, 4 * KiB},
    {"1M", 0, MiB},
    {"150MiB", 0, 150 * MiB},
    {"4G", 0, 4 * GiB},
    {"512GiB", 0, 512 * GiB},
    {"2t", 0, 2 * TiB},
    {"3P", 0, 3 * 1024 * TiB},
    {"15E", 0, 15 * EiB},
    {"1.5M", 0, 3 * MiB / 2},
    {"1.5k", 0, 1536},
    {"0.5", -EINVAL, 0},
    {"1.0", 0, 1},
    {"1.000000000000000000000000000000", 0, 1},
    {"0.25K", 0, 256},
    {"0.0009765625M", 0, KiB},
    {"1.5E", 0, 3 * (EiB / 2)},
    {"15.75E", 0, 15 * EiB + 3 * (EiB / 4)},
    {"18446744073709551615", 0, UINT64_MAX},
    {"16383.999999999999999999P", -EINVAL, 0},
    {"", -EINVAL, 0},
    {"-4k", -EINVAL, 0},
    {"+4k", -EINVAL, 0},
    {"1.5.3M", -EINVAL, 0},
    {"4q", -EINVAL, 0},
    {"k", -EINVAL, 0},
    {" 4k", -EINVAL, 0},
    {"4k ", -EINVAL, 0},
    {"4 k", -EINVAL, 0},
    {"4KIB", -EINVAL, 0},
    {"4KBB", -EINVAL, 0},
    {"4kk", -EINVAL, 0},
    {"4B", -EINVAL, 0},
    {".5k", -EINVAL, 0},
    {"1.k", -EINVAL, 0},
    {"1.3", -EINVAL, 0},
    {"1.1k", -EINVAL, 0},
    {"0x10", -EINVAL, 0},
    {"1e3", -EINVAL, 0},
    {"99999999999999999999", -ERANGE, 0},
    {"18446744073709551616", -ERANGE, 0},
    {"16E", -ERANGE, 0},
    {"15.99999999999999999999999E", -EINVAL, 0},
    {"16384P", -ERANGE, 0},
    {"17179869184T", -ERANGE, 0},
    {"99999999999999999999q", -EINVAL, 0},
};

static const struct size_case uint_cases[] = {
    {"0", 0, 0},
    {"42", 0, 42},
    {"18446744073709551615", 0, UINT64_MAX},
    {"18446744073709551616", -ERANGE, 0},
    {"", -EINVAL, 0},
    {"-1", -EINVAL, 0},
    {"4k", -EINVAL, 0},
    {" 1", -EINVAL, 0},
    {"1 ", -EINVAL, 0},
    {"1.0", -EINVAL, 0},
};

struct seconds_case {
	const char *s;
	int err;
	double v;
};

static const struct seconds_case seconds_cases[] = {
    {"5", 0, 5},
    {"0", 0, 0},
    {"0.25", 0, 0.25},
    {"1700000000.5", 0, 1700000000.5},
    {"2s", 0, 2},
    {"2.5s", 0, 2.5},
    {"", -EINVAL, 0},
    {"s", -EINVAL, 0},
    {"-1", -EINVAL, 0},
    {"-0.5", -EINVAL, 0},
    {"nan", -EINVAL, 0},
    {"inf", -EINVAL, 0},
    {"infinity", -EINVAL, 0},
    {"1e400", -EINVAL, 0},
    {"1e3", -EINVAL, 0},
    {"0x10", -EINVAL, 0},
    {" 5", -EINVAL, 0},
    {"5 ", -EINVAL, 0},
    {"5ss", -EINVAL, 0},
    {"5m", -EINVAL, 0},
    {".5", -EINVAL, 0},
    {"5.", -EINVAL, 0},
    {"1.2.3", -EINVAL, 0},
    {"abc", -EINVAL, 0},
};

struct format_case {
	uint64_t v;
	const char *s;
};

static const struct format_case format_cases[] = {
    {0, "0 B"},
    {1, "1 B"},
    {1000, "1000 B"},
    {1023, "1023 B"},
    {KiB, "1 KiB"},
    {4 * KiB, "4 KiB"},
    {1536, "1.50 KiB"},
    {150 * MiB, "150 MiB"},
    {3 * MiB / 2, "1.50 MiB"},
    {512 * GiB, "512 GiB"},
    {4 * GiB, "4 GiB"},
    {MiB + 1, "1.00 MiB"},
    {MiB - 1, "1.00 MiB"},
    {1023 * KiB, "1023 KiB"},
    {1025 * KiB, "1.00 MiB"},
    {GiB + GiB / 100 * 23 + 1, "1.23 GiB"},
    {2 * TiB, "2 TiB"},
    {EiB, "1 EiB"},
    {15 * EiB, "15 EiB"},
    {UINT64_MAX, "16.00 EiB"},
};

struct rate_case {
	double v;
	const char *s;
};

static const struct rate_case rate_cases[] = {
    {0, "0.00 B/s"},
    {0.5, "0.50 B/s"},
    {512, "512.00 B/s"},
    {1024, "1.00 KiB/s"},
    {512.0 * MiB, "512.00 MiB/s"},
    {1.23 * GiB, "1.23 GiB/s"},
    {1023.999 * MiB, "1.00 GiB/s"},
    {3.0 * TiB, "3.00 TiB/s"},
    {2048.0 * EiB, "2048.00 EiB/s"},
    {-1, "n/a"},
    {1.0 / 0.0, "n/a"},
    {0.0 / 0.0, "n/a"},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_size_parse(void)
{
	for (size_t i = 0; i < N(size_cases); i++) {
		const struct size_case *c = &size_cases[i];
		uint64_t v = 0xdead;
		int err = size_parse(c->s, &v);

		CHECK_MSG(err == c->err, "size_parse('%s') = %d, want %d", c->s, err, c->err);
		if (!c->err && !err)
			CHECK_MSG(v == c->v, "size_parse('%s') = %" PRIu64 ", want %" PRIu64, c->s,
				  v, c->v);
		if (c->err)
			CHECK_MSG(v == 0xdead, "size_parse('%s') wrote on failure", c->s);
	}
}

static void test_size_parse_uint(void)
{
	for (size_t i = 0; i < N(uint_cases); i++) {
		const struct size_case *c = &uint_cases[i];
		uint64_t v = 0;
		int err = size_parse_uint(c->s, &v);

		CHECK_MSG(err == c->err, "size_parse_uint('%s') = %d, want %d", c->s, err, c->err);
		if (!c->err && !err)
			CHECK_U64(v, c->v);
	}
}

static void test_size_parse_seconds(void)
{
	for (size_t i = 0; i < N(seconds_cases); i++) {
		const struct seconds_case *c = &seconds_cases[i];
		double v = -1;
		int err = size_parse_seconds(c->s, &v);

		CHECK_MSG(err == c->err, "size_parse_seconds('%s') = %d, want %d", c->s, err,
			  c->err);
		if (!c->err && !err)
			CHECK_MSG(v == c->v, "size_parse_seconds('%s') = %.17g", c->s, v);
	}
}

static void test_size_format(void)
{
	char buf[32];

	for (size_t i = 0; i < N(format_cases); i++)
		CHECK_STR(size_format(format_cases[i].v, buf, sizeof(buf)), format_cases[i].s);
	for (size_t i = 0; i < N(rate_cases); i++)
		CHECK_STR(size_format_rate(rate_cases[i].v, buf, sizeof(buf)), rate_cases[i].s);

	/* A short buffer is cut, not overrun. */
	CHECK_STR(size_format(150 * MiB, buf, 4), "150");
}

/* Whatever size_format prints as a whole unit, size_parse reads back (without the space). */
static void test_size_roundtrip(void)
{
	static const uint64_t values[] = {0, 1, 1000, KiB, 4 * KiB, 150 * MiB, 512 * GiB, 15 * EiB};
	char buf[32], compact[32];

	for (size_t i = 0; i < N(values); i++) {
		uint64_t v = 1;
		size_t k = 0;

		size_format(values[i], buf, sizeof(buf));
		for (const char *p = buf; *p; p++)
			if (*p != ' ')
				compact[k++] = *p;
		compact[k] = '\0';
		/* "1000B" has no unit letter: size_parse takes plain bytes without a suffix. */
		if (k && compact[k - 1] == 'B' && (k < 3 || compact[k - 2] != 'i'))
			compact[k - 1] = '\0';
		CHECK_MSG(size_parse(compact, &v) == 0 && v == values[i], "round trip of '%s'",
			  compact);
	}
}

int main(void)
{
	test_size_parse();
	test_size_parse_uint();
	test_size_parse_seconds();
	test_size_format();
	test_size_roundtrip();
	return check_done();
}
