/* SPDX-License-Identifier: MIT */
/*
 * A minimal assertion kit for the unit test programs: CHECK() records a failure and goes on,
 * REQUIRE() records one and returns from the calling (void) function, for what the checks
 * after it stand on (a plan built, an index within a table); check_done() prints "N passed,
 * N failed" and gives the exit status.
 */
#ifndef STAGEBENCH_TEST_CHECK_H
#define STAGEBENCH_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_passed;
static int check_failed;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (cond) {                                                                        \
			check_passed++;                                                            \
		} else {                                                                           \
			check_failed++;                                                            \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
		}                                                                                  \
	} while (0)

#define CHECK_MSG(cond, ...)                                                                       \
	do {                                                                                       \
		if (cond) {                                                                        \
			check_passed++;                                                            \
		} else {                                                                           \
			check_failed++;                                                            \
			fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);   \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
		}                                                                                  \
	} while (0)

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		int check_failed_before = check_failed;                                            \
		CHECK(cond);                                                                       \
		if (check_failed != check_failed_before)                                           \
			return;                                                                    \
	} while (0)

#define CHECK_U64(a, b)                                                                            \
	CHECK_MSG((uint64_t)(a) == (uint64_t)(b), "%" PRIu64 " != %" PRIu64, (uint64_t)(a),        \
		  (uint64_t)(b))
#define CHECK_STR(a, b) CHECK_MSG(strcmp((a), (b)) == 0, "'%s' != '%s'", (a), (b))

static inline int check_done(void)
{
	printf("%d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
