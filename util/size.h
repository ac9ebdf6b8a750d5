/* SPDX-License-Identifier: MIT */
/*
 * Byte sizes and durations as users type them ("4k", "1M", "150MiB", "4G", "2.5s") and
 * as stagebench prints them. Units are binary: k/K/KB/KiB = 1024, M = 1024^2, ... up to E.
 */
#ifndef STAGEBENCH_SIZE_H
#define STAGEBENCH_SIZE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parse a size: a decimal integer or fraction ("1.5M"), optional unit k, m, g, t, p, e in
 * either case, optionally followed by "b", "ib" or "iB" ("KB", "KiB"). No sign, no spaces,
 * no empty string. A fraction must give a whole number of bytes ("1.5k" = 1536, "1.3" fails).
 * Returns 0, -EINVAL when malformed, -ERANGE when it does not fit in 64 bits.
 */
int size_parse(const char *s, uint64_t *out);

/*
 * Parse an unsigned decimal integer (no unit, no sign, no spaces). 0, -EINVAL or -ERANGE.
 */
int size_parse_uint(const char *s, uint64_t *out);

/*
 * Parse a non-negative decimal number of seconds, fractions allowed ("5", "0.25",
 * "1700000000.5"). An "s" suffix is accepted. 0, -EINVAL (malformed, negative, nan, inf).
 */
int size_parse_seconds(const char *s, double *out);

/*
 * Print a size the short way: exact binary unit when the value is a whole multiple
 * ("4 KiB", "150 MiB", "512 GiB", "1000 B"), otherwise two decimals of the largest unit
 * not above it ("1.50 MiB"). Returns buf.
 */
char *size_format(uint64_t bytes, char *buf, size_t len);

/*
 * Print a rate in bytes per second: always two decimals of the largest binary unit not above
 * it, so the number is in [1, 1024) except below 1 B/s ("0.50 B/s", "512.00 MiB/s",
 * "1.23 GiB/s"); a value that would round to 1024.00 moves to the next unit ("1.00 GiB/s").
 * A negative or non-finite rate prints "n/a". Returns buf.
 */
char *size_format_rate(double bytes_per_s, char *buf, size_t len);

#endif
