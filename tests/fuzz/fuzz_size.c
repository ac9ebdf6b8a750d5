/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target of util/size: size_parse against an exact reference in decimal digit
 * arithmetic, size_parse_uint and size_parse_seconds against their grammar, and size_format
 * (exact forms re-parse to the same value, rounded forms are within half a hundredth) and
 * size_format_rate, also into buffers cut short. The input is one string; its first bytes
 * are also taken as a 64-bit value and a double to print.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/size.h"

#define FUZZ_REF_MAX 1024 /* longest input checked against the reference (it is quadratic) */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *what, const char *s) __attribute__((noreturn));
static void fuzz_fail(const char *what, const char *s)
{
	fprintf(stderr, "fuzz_size: %s: '%s'\n", what, s);
	abort();
}

static bool fuzz_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The power of 1024 of a unit letter, or -1; written apart from util/size.c on purpose. */
static int fuzz_unit_shift(char c)
{
	switch (c) {
	case 'k':
	case 'K':
		return 10;
	case 'm':
	case 'M':
		return 20;
	case 'g':
	case 'G':
		return 30;
	case 't':
	case 'T':
		return 40;
	case 'p':
	case 'P':
		return 50;
	case 'e':
	case 'E':
		return 60;
	default:
		return -1;
	}
}

/*
 * Compare the decimal digits [s, s+n) (leading zeros allowed) with UINT64_MAX. Returns
 * whether they fit and, if so, the value.
 */
static bool fuzz_decimal_u64(const char *s, size_t n, uint64_t *out)
{
	static const char max[] = "18446744073709551615";
	uint64_t v = 0;

	while (n > 0 && *s == '0') {
		s++;
		n--;
	}
	if (n > sizeof(max) - 1 || (n == sizeof(max) - 1 && memcmp(s, max, n) > 0))
		return false;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	*out = v;
	return true;
}

enum fuzz_ref { REF_MALFORMED, REF_NOT_WHOLE, REF_TOO_BIG, REF_NOT_WHOLE_TOO_BIG, REF_OK };

/*
 * The reference size parser: check the grammar of size.h, then multiply the digits of I.F
 * (as the integer IF) by 2^shift in plain decimal arithmetic. The value is whole when the
 * last |F| digits of the product are zero, and is what remains before them.
 */
static enum fuzz_ref fuzz_ref_size(const char *s, uint64_t *out)
{
	const char *p = s, *int_end, *frac = NULL, *frac_end = NULL;
	int shift = 0;

	if (!fuzz_digit(*p))
		return REF_MALFORMED;
	while (fuzz_digit(*p))
		p++;
	int_end = p;
	if (*p == '.') {
		frac = ++p;
		while (fuzz_digit(*p))
			p++;
		frac_end = p;
		if (frac == frac_end)
			return REF_MALFORMED;
	}
	if (*p) {
		shift = fuzz_unit_shift(*p++);
		if (shift < 0)
			return REF_MALFORMED;
		if (strcmp(p, "ib") == 0 || strcmp(p, "iB") == 0 || strcmp(p, "b") == 0 ||
		    strcmp(p, "B") == 0)
			p += strlen(p);
		if (*p)
			return REF_MALFORMED;
	}

	size_t ni = (size_t)(int_end - s), nf = frac ? (size_t)(frac_end - frac) : 0;
	size_t cap = ni + nf + 20, len = ni + nf;
	char *d = calloc(cap, 1); /* little-endian decimal digits, values 0-9 */
	char *big;
	bool whole = true, fits;

	if (!d)
		abort();
	for (size_t i = 0; i < ni; i++)
		d[len - 1 - i] = (char)(s[i] - '0');
	for (size_t i = 0; i < nf; i++)
		d[nf - 1 - i] = (char)(frac[i] - '0');
	for (int k = 0; k < shift; k++) {
		int carry = 0;
		for (size_t i = 0; i < len; i++) {
			int v = d[i] * 2 + carry;
			d[i] = (char)(v % 10);
			carry = v / 10;
		}
		if (carry)
			d[len++] = (char)carry;
	}
	for (size_t i = 0; i < nf; i++)
		whole = whole && d[i] == 0;
	/* The whole part, big-endian text. */
	big = malloc(len - nf + 1);
	if (!big)
		abort();
	for (size_t i = 0; i < len - nf; i++)
		big[i] = (char)('0' + d[len - 1 - i]);
	big[len - nf] = '\0';
	fits = fuzz_decimal_u64(big, len - nf, out);
	/* A fraction that is not whole can still overflow after its whole part. */
	if (!whole && fits && *out == UINT64_MAX)
		fits = false;
	free(big);
	free(d);
	if (!whole)
		return fits ? REF_NOT_WHOLE : REF_NOT_WHOLE_TOO_BIG;
	return fits ? REF_OK : REF_TOO_BIG;
}

static void fuzz_check_size_parse(const char *s, size_t len)
{
	uint64_t v = 0x5eed, ref = 0;
	int err = size_parse(s, &v);

	if (err != 0 && err != -EINVAL && err != -ERANGE)
		fuzz_fail("size_parse returned an unknown error", s);
	if (err && v != 0x5eed)
		fuzz_fail("size_parse wrote its output on failure", s);
	if (len > FUZZ_REF_MAX)
		return;
	switch (fuzz_ref_size(s, &ref)) {
	case REF_MALFORMED:
	case REF_NOT_WHOLE:
		if (err != -EINVAL)
			fuzz_fail("size_parse accepted a malformed or fractional size", s);
		break;
	case REF_TOO_BIG:
		if (err != -ERANGE)
			fuzz_fail("size_parse did not say -ERANGE for a size above 2^64-1", s);
		break;
	case REF_NOT_WHOLE_TOO_BIG:
		if (err != -EINVAL && err != -ERANGE)
			fuzz_fail("size_parse accepted a fractional size above 2^64-1", s);
		break;
	case REF_OK:
		if (err || v != ref)
			fuzz_fail("size_parse disagrees with the reference", s);
		break;
	}
}

static void fuzz_check_size_parse_uint(const char *s)
{
	uint64_t v = 0x5eed, ref = 0, sv;
	int err = size_parse_uint(s, &v);
	size_t n = strspn(s, "0123456789");

	if (n == 0 || s[n]) {
		if (err != -EINVAL)
			fuzz_fail("size_parse_uint accepted a malformed number", s);
		return;
	}
	if (!fuzz_decimal_u64(s, n, &ref)) {
		if (err != -ERANGE)
			fuzz_fail("size_parse_uint did not say -ERANGE above 2^64-1", s);
		return;
	}
	if (err || v != ref)
		fuzz_fail("size_parse_uint disagrees with the reference", s);
	/* A plain number is also a size in bytes. */
	if (size_parse(s, &sv) != 0 || sv != v)
		fuzz_fail("size_parse and size_parse_uint disagree on a plain number", s);
}

static void fuzz_check_seconds(const char *s)
{
	const char *p = s;
	double v = -1;
	int err = size_parse_seconds(s, &v);
	bool ok = fuzz_digit(*p);

	while (fuzz_digit(*p))
		p++;
	if (ok && *p == '.') {
		p++;
		ok = fuzz_digit(*p);
		while (fuzz_digit(*p))
			p++;
	}
	if (*p == 's')
		p++;
	ok = ok && !*p;
	if (!ok) {
		if (err != -EINVAL)
			fuzz_fail("size_parse_seconds accepted a malformed number", s);
		return;
	}
	if (err == 0 && (!isfinite(v) || v < 0))
		fuzz_fail("size_parse_seconds gave a negative or non-finite number", s);
	if (err != 0 && err != -EINVAL)
		fuzz_fail("size_parse_seconds returned an unknown error", s);
	/* Whole seconds of up to 15 digits are exact in a double. */
	size_t n = strspn(s, "0123456789");
	uint64_t u;
	if (n <= 15 && (s[n] == '\0' || strcmp(s + n, "s") == 0) && fuzz_decimal_u64(s, n, &u) &&
	    (err || v != (double)u))
		fuzz_fail("size_parse_seconds is not exact on whole seconds", s);
}

static const char *const fuzz_units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

/*
 * size_format(v): "N UNIT" is exact and parses back to v; "N.NN UNIT" is v to the nearest
 * hundredth of the unit, in [1.00, 1024) of it (EiB: any). Cut buffers get a prefix.
 */
static void fuzz_check_format(uint64_t v)
{
	char buf[64], again[64], num[32], *dot;
	unsigned u;

	size_format(v, buf, sizeof(buf));
	if (sscanf(buf, "%31s", num) != 1)
		fuzz_fail("size_format printed nothing", buf);
	const char *unit = buf + strlen(num);
	if (*unit++ != ' ')
		fuzz_fail("size_format printed no unit", buf);
	for (u = 0; u < 7 && strcmp(unit, fuzz_units[u]) != 0; u++)
		;
	if (u == 7)
		fuzz_fail("size_format printed an unknown unit", buf);
	dot = strchr(num, '.');
	if (!dot) {
		uint64_t n, back;
		if (size_parse_uint(num, &n) || (u && n == 0) || (n >= 1024 && u && u < 6) ||
		    (u == 0 && n >= 1024) || (u && n > (UINT64_MAX >> (10 * u))) ||
		    n << (10 * u) != v)
			fuzz_fail("size_format's exact form is not the value", buf);
		/* "150 MiB" -> "150M", "1000 B" -> "1000": a size that parses back. */
		snprintf(again, sizeof(again), "%s%.1s", num, u ? unit : "");
		if (size_parse(again, &back) || back != v)
			fuzz_fail("size_format's exact form does not parse back", buf);
	} else {
		unsigned __int128 unitv = (unsigned __int128)1 << (10 * u);
		uint64_t ip, fp;
		if (u == 0 || strlen(dot + 1) != 2 || size_parse_uint(dot + 1, &fp))
			fuzz_fail("size_format's rounded form is malformed", buf);
		*dot = '\0';
		if (size_parse_uint(num, &ip) || ip == 0 || (ip >= 1024 && u < 6))
			fuzz_fail("size_format's rounded form is out of [1, 1024)", buf);
		if ((v & (uint64_t)(unitv - 1)) == 0)
			fuzz_fail("size_format rounded a whole multiple of its unit", buf);
		unsigned __int128 h = (unsigned __int128)ip * 100 + fp;
		unsigned __int128 a = h * unitv, b = (unsigned __int128)v * 100;
		if ((a > b ? a - b : b - a) > unitv / 2)
			fuzz_fail("size_format rounded to more than half a hundredth", buf);
	}
	/* Cut buffers: snprintf's rule, always terminated, a prefix of the whole. */
	for (size_t len = 1; len <= strlen(buf) + 1; len++) {
		char *cut = malloc(len);
		if (!cut)
			abort();
		size_format(v, cut, len);
		if (strlen(cut) != len - 1 || strncmp(cut, buf, len - 1) != 0)
			fuzz_fail("size_format into a short buffer is not a prefix", cut);
		free(cut);
	}
}

static void fuzz_check_rate(double r)
{
	char buf[512], unit[16]; /* DBL_MAX in EiB has 291 digits */
	double n;
	unsigned u;

	size_format_rate(r, buf, sizeof(buf));
	if (!isfinite(r) || r < 0) {
		if (strcmp(buf, "n/a") != 0)
			fuzz_fail("size_format_rate of a bad rate is not n/a", buf);
		return;
	}
	if (sscanf(buf, "%lf %15s", &n, unit) != 2)
		fuzz_fail("size_format_rate printed no number and unit", buf);
	for (u = 0; u < 7; u++) {
		char want[16];
		snprintf(want, sizeof(want), "%s/s", fuzz_units[u]);
		if (strcmp(unit, want) == 0)
			break;
	}
	if (u == 7)
		fuzz_fail("size_format_rate printed an unknown unit", buf);
	if (u < 6 && n >= 1024)
		fuzz_fail("size_format_rate printed 1024 or more of a unit", buf);
	if (u > 0 && n < 1)
		fuzz_fail("size_format_rate printed less than 1 of a unit above B", buf);
	if (u > 0 && fabs(n * ldexp(1, 10 * (int)u) - r) > r * 0.006)
		fuzz_fail("size_format_rate is off by more than rounding", buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	uint64_t raw = 0, v;
	double d;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	fuzz_check_size_parse(s, size);
	fuzz_check_size_parse_uint(s);
	fuzz_check_seconds(s);

	/* Print what parsed, its neighbours, and the raw bytes as a value and a rate. */
	if (size_parse(s, &v) == 0) {
		fuzz_check_format(v);
		fuzz_check_format(v - 1);
		fuzz_check_format(v + 1);
		fuzz_check_rate((double)v);
	}
	memcpy(&raw, data, size < sizeof(raw) ? size : sizeof(raw));
	fuzz_check_format(raw);
	fuzz_check_format(raw >> (raw & 63));
	memcpy(&d, &raw, sizeof(d));
	fuzz_check_rate(d);
	fuzz_check_rate((double)raw / 1000.0);
	free(s);
	return 0;
}
