/* SPDX-License-Identifier: MIT */
/*
 * Byte sizes and durations: parsing what users type, printing what people read. Sizes are
 * parsed with exact integer arithmetic, so "1.5M" is 1572864 and never a rounded double.
 */
#include "util/size.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const size_unit_names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
#define SIZE_UNITS (sizeof(size_unit_names) / sizeof(size_unit_names[0]))

static bool size_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The power of 1024 of a unit letter, or -1. */
static int size_unit_shift(char c)
{
	static const char units[] = "kmgtpe";
	int i;

	if (c >= 'A' && c <= 'Z')
		c = (char)(c - 'A' + 'a');
	for (i = 0; units[i]; i++)
		if (units[i] == c)
			return 10 * (i + 1);
	return -1;
}

/* Accumulate decimal digits [s, end) into *out. -ERANGE on overflow. */
static int size_digits(const char *s, const char *end, uint64_t *out)
{
	uint64_t v = 0;

	for (; s < end; s++) {
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
			return -ERANGE;
	}
	*out = v;
	return 0;
}

int size_parse_uint(const char *s, uint64_t *out)
{
	const char *p = s;

	if (!s || !size_is_digit(*s))
		return -EINVAL;
	while (size_is_digit(*p))
		p++;
	if (*p)
		return -EINVAL;
	return size_digits(s, p, out);
}

/*
 * The syntax is checked completely before any arithmetic, so a malformed string is always
 * -EINVAL even when its digits would overflow. The fraction is multiplied by the unit from
 * its last digit up: each step divides (digit * unit + carry) by ten, and once a step leaves
 * a remainder the result can no longer be whole, whatever the digits before it.
 */
int size_parse(const char *s, uint64_t *out)
{
	const char *int_end, *frac = NULL, *frac_end = NULL, *p;
	uint64_t whole, unit, carry = 0;
	int shift = 0, err;

	if (!s || !size_is_digit(*s))
		return -EINVAL;
	for (p = s; size_is_digit(*p); p++)
		;
	int_end = p;
	if (*p == '.') {
		frac = ++p;
		while (size_is_digit(*p))
			p++;
		frac_end = p;
		if (frac == frac_end)
			return -EINVAL;
	}
	if (*p) {
		shift = size_unit_shift(*p);
		if (shift < 0)
			return -EINVAL;
		p++;
		if (*p == 'i' && (p[1] == 'B' || p[1] == 'b'))
			p += 2;
		else if (*p == 'b' || *p == 'B')
			p++;
		if (*p)
			return -EINVAL;
	}
	unit = (uint64_t)1 << shift;

	err = size_digits(s, int_end, &whole);
	if (err)
		return err;
	if (__builtin_mul_overflow(whole, unit, &whole))
		return -ERANGE;
	if (frac) {
		/* digit * unit + carry < 10 * 2^60 < 2^64: no overflow here. */
		for (p = frac_end; p > frac; p--) {
			uint64_t v = (uint64_t)(p[-1] - '0') * unit + carry;

			if (v % 10)
				return -EINVAL;
			carry = v / 10;
		}
		if (__builtin_add_overflow(whole, carry, &whole))
			return -ERANGE;
	}
	*out = whole;
	return 0;
}

int size_parse_seconds(const char *s, double *out)
{
	const char *p = s;
	double v;

	/* Plain decimal only: strtod alone would take "inf", "nan", "0x1p3", " 5" and "1e9". */
	if (!s || !size_is_digit(*s))
		return -EINVAL;
	while (size_is_digit(*p))
		p++;
	if (*p == '.') {
		p++;
		if (!size_is_digit(*p))
			return -EINVAL;
		while (size_is_digit(*p))
			p++;
	}
	if (*p == 's')
		p++;
	if (*p)
		return -EINVAL;
	/* Too many digits overflow to inf, which is refused with the rest. */
	v = strtod(s, NULL);
	if (!isfinite(v) || v < 0)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * value / 2^(10*u) in hundredths, rounded half up. Done in 128 bits, so it is exact for
 * every 64-bit value.
 */
static uint64_t size_hundredths(uint64_t value, unsigned u)
{
	unsigned __int128 n = (unsigned __int128)value * 100;
	unsigned __int128 d = (unsigned __int128)1 << (10 * u);

	return (uint64_t)((n + d / 2) / d);
}

char *size_format(uint64_t bytes, char *buf, size_t len)
{
	unsigned u = 0;
	uint64_t h;

	if (!buf || len == 0)
		return buf;
	while (u + 1 < SIZE_UNITS && bytes >> (10 * (u + 1)))
		u++;
	if ((bytes & (((uint64_t)1 << (10 * u)) - 1)) == 0) {
		snprintf(buf, len, "%llu %s", (unsigned long long)(bytes >> (10 * u)),
			 size_unit_names[u]);
		return buf;
	}
	h = size_hundredths(bytes, u);
	/* 1023.996 KiB rounds to 1024.00: say 1.00 MiB instead. */
	if (h >= 1024 * 100 && u + 1 < SIZE_UNITS) {
		u++;
		h = size_hundredths(bytes, u);
	}
	snprintf(buf, len, "%llu.%02llu %s", (unsigned long long)(h / 100),
		 (unsigned long long)(h % 100), size_unit_names[u]);
	return buf;
}

char *size_format_rate(double bytes_per_s, char *buf, size_t len)
{
	double v = bytes_per_s;
	unsigned u = 0;

	if (!buf || len == 0)
		return buf;
	if (!isfinite(v) || v < 0) {
		snprintf(buf, len, "n/a");
		return buf;
	}
	while (u + 1 < SIZE_UNITS && v >= 1024) {
		v /= 1024;
		u++;
	}
	/* Same rule as size_format: what would print as 1024.00 moves to the next unit. */
	if (v >= 1023.995 && u + 1 < SIZE_UNITS) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.2f %s/s", v, size_unit_names[u]);
	return buf;
}
