/* SPDX-License-Identifier: MIT */
/*
 * Unit test of util/prng: known answers, reproducible and distinct streams, bounds of
 * prng_below, the random chunk offsets of the read tests, and a chi-square uniformity test
 * whose power is shown on a deliberately biased sampler.
 */
#include <stdbool.h>

#include "check.h"
#include "util/prng.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define KiB  1024ull
#define MiB  (1024ull * KiB)
#define GiB  (1024ull * MiB)

#define CHI_BINS  64
#define CHI_DRAWS 640000
/* chi-square, 63 degrees of freedom: P(X > 103.44) = 0.001 */
#define CHI_LIMIT 103.44

static void test_prng_known_answers(void)
{
	static const uint64_t xoshiro[] = {11520,
					   0,
					   1509978240,
					   1215971899390074240ull,
					   1216172134540287360ull,
					   607988272756665600ull};
	static const struct {
		const char *s;
		uint64_t h;
	} fnv[] = {
	    {"", 0xcbf29ce484222325ull},
	    {"a", 0xaf63dc4c8601ec8cull},
	    {"foobar", 0x85944171f73967e8ull},
	    {"node017", 0x461a66ddbaf9500full},
	};
	struct prng r = {{1, 2, 3, 4}};

	for (size_t i = 0; i < N(xoshiro); i++)
		CHECK_U64(prng_next(&r), xoshiro[i]);
	for (size_t i = 0; i < N(fnv); i++)
		CHECK_U64(prng_hash_str(fnv[i].s), fnv[i].h);
}

static void test_prng_streams(void)
{
	struct prng a, b;
	uint64_t first[64];
	int differ = 0, collide = 0;

	/* Same (seed, node, thread): the same stream. */
	prng_seed(&a, 12345, prng_hash_str("node017"), 3);
	prng_seed(&b, 12345, prng_hash_str("node017"), 3);
	for (int i = 0; i < 1000; i++)
		differ += prng_next(&a) != prng_next(&b);
	CHECK_MSG(differ == 0, "%d differences between equal seeds", differ);

	/* Any one component changed: another stream. */
	static const uint64_t other[][3] = {
	    {12346, 17, 3}, {12345, 18, 3}, {12345, 17, 4}, {0, 0, 0}, {17, 12345, 3},
	};
	for (size_t k = 0; k < N(other); k++) {
		int same = 0;

		prng_seed(&a, 12345, 17, 3);
		prng_seed(&b, other[k][0], other[k][1], other[k][2]);
		for (int i = 0; i < 100; i++)
			same += prng_next(&a) == prng_next(&b);
		CHECK_MSG(same == 0, "case %zu: %d equal draws", k, same);
	}

	/* 64 threads of one node: 64 different first draws, and no zero state. */
	for (unsigned t = 0; t < 64; t++) {
		prng_seed(&a, 1, 2, t);
		CHECK(a.s[0] | a.s[1] | a.s[2] | a.s[3]);
		first[t] = prng_next(&a);
		for (unsigned u = 0; u < t; u++)
			collide += first[u] == first[t];
	}
	CHECK_MSG(collide == 0, "%d threads share a first draw", collide);
}

static void test_prng_below_bounds(void)
{
	static const uint64_t bounds[] = {1,
					  2,
					  3,
					  7,
					  1000,
					  (1ull << 32) + 1,
					  (1ull << 63) + 1,
					  6000000000000000000ull,
					  UINT64_MAX - 1,
					  UINT64_MAX};
	struct prng r;

	prng_seed(&r, 99, 0, 0);
	for (size_t k = 0; k < N(bounds); k++) {
		int bad = 0;

		for (int i = 0; i < 20000; i++)
			bad += prng_below(&r, bounds[k]) >= bounds[k];
		CHECK_MSG(bad == 0, "n=%" PRIu64 ": %d draws out of range", bounds[k], bad);
	}
}

/*
 * The read tests' chunks: k * M with k = prng_below(F / M). Every offset must be aligned and
 * leave a whole chunk inside the file, and where there are few positions all must appear.
 */
static void test_prng_chunk_offsets(void)
{
	static const struct {
		uint64_t file, chunk;
	} parts[] = {
	    {4 * GiB, 4 * KiB},	    {4 * GiB, MiB},	   {4 * GiB, 128 * MiB},
	    {512 * GiB, MiB},	    {512 * GiB, 96 * MiB}, {10 * MiB + 4 * KiB, MiB},
	    {750 * MiB, 750 * MiB},
	};
	struct prng r;

	prng_seed(&r, 5, 6, 7);
	for (size_t k = 0; k < N(parts); k++) {
		uint64_t f = parts[k].file, m = parts[k].chunk, positions = f / m;
		bool seen[64] = {false};
		int bad = 0, missing = 0;

		for (int i = 0; i < 20000; i++) {
			uint64_t j = prng_below(&r, positions), off = j * m;

			bad += off % m != 0 || off > f - m;
			if (positions <= 64)
				seen[j] = true;
		}
		for (uint64_t j = 0; positions <= 64 && j < positions; j++)
			missing += !seen[j];
		CHECK_MSG(bad == 0, "F=%" PRIu64 " M=%" PRIu64 ": %d bad offsets", f, m, bad);
		CHECK_MSG(missing == 0, "F=%" PRIu64 " M=%" PRIu64 ": %d positions never drawn", f,
			  m, missing);
	}
}

/* Draw CHI_DRAWS values below n, count them in CHI_BINS equal bins of [0, n), chi-square. */
static double test_prng_chi_square(struct prng *r, uint64_t n,
				   uint64_t (*draw)(struct prng *, uint64_t))
{
	uint64_t bins[CHI_BINS] = {0};
	double expect = (double)CHI_DRAWS / CHI_BINS, chi = 0;

	for (int i = 0; i < CHI_DRAWS; i++) {
		uint64_t v = draw(r, n);

		bins[(unsigned __int128)v * CHI_BINS / n]++;
	}
	for (int b = 0; b < CHI_BINS; b++)
		chi += ((double)bins[b] - expect) * ((double)bins[b] - expect) / expect;
	return chi;
}

/* The classic mistake, as a negative control: modulo favours small values. */
static uint64_t test_prng_biased_below(struct prng *r, uint64_t n)
{
	return prng_next(r) % n;
}

static void test_prng_uniformity(void)
{
	/* 2^64 mod 6e18 is large, so plain modulo is visibly biased for this n. */
	static const uint64_t bounds[] = {CHI_BINS, 6000000000000000000ull, 1000003, UINT64_MAX};
	struct prng r;
	double chi;

	for (size_t k = 0; k < N(bounds); k++) {
		prng_seed(&r, 20240601, 0, k);
		chi = test_prng_chi_square(&r, bounds[k], prng_below);
		CHECK_MSG(chi < CHI_LIMIT, "n=%" PRIu64 ": chi-square %.1f >= %.2f", bounds[k], chi,
			  CHI_LIMIT);
	}
	prng_seed(&r, 20240601, 0, 1);
	chi = test_prng_chi_square(&r, bounds[1], test_prng_biased_below);
	CHECK_MSG(chi > CHI_LIMIT, "the biased control passed (%.1f): the test has no power", chi);
}

int main(void)
{
	test_prng_known_answers();
	test_prng_streams();
	test_prng_below_bounds();
	test_prng_chunk_offsets();
	test_prng_uniformity();
	return check_done();
}
