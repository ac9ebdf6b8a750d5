/* SPDX-License-Identifier: MIT */
/*
 * bufplace: the choice of the I/O buffer's placement over given copy timings, the
 * allocation at an offset, and one real calibration.
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "platform/bufplace.h"

struct pick_case {
	const char *what;
	double ns[BUFPLACE_NCAND];   /* median copy times */
	double wins[BUFPLACE_NCAND]; /* fractions of pairs won against page-aligned */
	size_t want;		     /* index */
};

#define ALL                                                                                        \
	{                                                                                          \
		0, 1, 1, 1, 1, 1                                                                   \
	}
#define HALF                                                                                       \
	{                                                                                          \
		0, .5, .5, .5, .5, .5                                                              \
	}

static const struct pick_case pick_cases[] = {
    {"all equal: page-aligned", {100, 100, 100, 100, 100, 100}, HALF, 0},
    {"page-aligned fastest", {90, 100, 100, 95, 99, 100}, {0, 0, 0, 0.1, 0, 0}, 0},
    {"line-aligned slower (this CPU): +16 wins", {110, 101, 100, 110, 111, 102}, ALL, 2},
    {"the last candidate fastest", {110, 101, 100, 110, 111, 95}, ALL, 5},
    {"8% faster but in only 60% of the pairs: noise",
     {108, 101, 100, 108, 108, 102},
     {0, .6, .6, .5, .5, .6},
     0},
    {"75% of the pairs is enough", {108, 120, 100, 108, 108, 120}, {0, 0, .75, 0, 0, 0}, 2},
    {"within the margin: page-aligned kept", {102.9, 101, 100, 103, 103, 101}, ALL, 0},
    {"just past the margin: the faster one", {103.5, 101, 100, 104, 104, 104}, ALL, 2},
    {"the fastest clear winner, not the fastest",
     {110, 120, 100, 120, 120, 99},
     {0, 0, 1, 0, 0, .7},
     2},
    {"equal fastest: the first of them", {110, 100, 100, 110, 110, 110}, ALL, 1},
    {"unmeasured candidates skipped", {100, 0, -1, 0, 90, 0}, ALL, 4},
    {"page-aligned unmeasured: the fastest measured", {0, 120, 110, 130, 0, 0}, HALF, 2},
};

static void test_pick(void)
{
	for (size_t i = 0; i < sizeof(pick_cases) / sizeof(pick_cases[0]); i++) {
		const struct pick_case *c = &pick_cases[i];
		size_t got = bufplace_pick(c->ns, c->wins, BUFPLACE_NCAND);

		CHECK_MSG(got == c->want, "%s: picked %zu, want %zu", c->what, got, c->want);
	}
	/* One candidate only: it. */
	double one = 5, win = 0;
	CHECK_U64(bufplace_pick(&one, &win, 1), 0);
}

static void test_candidates(void)
{
	long page = sysconf(_SC_PAGESIZE);

	CHECK_U64(bufplace_candidates[0], 0);
	for (size_t i = 0; i < BUFPLACE_NCAND; i++) {
		CHECK(bufplace_candidates[i] < (size_t)page);
		CHECK(i == 0 || bufplace_candidates[i] > bufplace_candidates[i - 1]);
	}
}

static void test_alloc(void)
{
	static const size_t offsets[] = {0, 8, 16, 64, 4032, 4095, 5000};
	long page = sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		void *base = NULL, *buf = NULL;

		CHECK(bufplace_alloc(1 << 20, offsets[i], &base, &buf) == 0);
		CHECK(base && (uintptr_t)base % (uintptr_t)page == 0);
		CHECK_U64((uintptr_t)buf - (uintptr_t)base, offsets[i]);
		memset(buf, 0xa5, 1 << 20); /* the whole length is usable (ASan checks) */
		free(base);
	}
}

static void test_calibrate(void)
{
	static const size_t xfers[] = {1 << 20, 4096, 3 << 20, 12345};

	for (size_t k = 0; k < sizeof(xfers) / sizeof(xfers[0]); k++) {
		struct bufplace bp;
		bool known = false;

		CHECK(bufplace_calibrate(xfers[k], &bp) == 0);
		CHECK(bp.calibrated);
		CHECK(bp.bytes > 0);
		CHECK(bp.calib_s > 0 && bp.calib_s < 30);
		for (size_t i = 0; i < BUFPLACE_NCAND; i++) {
			CHECK(bp.rate_Bps[i] > 0);
			CHECK(bp.wins[i] >= 0 && bp.wins[i] <= 1);
			known = known || bp.offset == bufplace_candidates[i];
		}
		CHECK_MSG(known, "offset %zu is no candidate", bp.offset);
	}
}

int main(void)
{
	test_pick();
	test_candidates();
	test_alloc();
	test_calibrate();
	return check_done();
}
