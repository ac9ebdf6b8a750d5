/* SPDX-License-Identifier: MIT */
/*
 * xoshiro256** (Blackman and Vigna), seeded through splitmix64, and Lemire's unbiased
 * bounded draw. Reproducible across machines: the streams depend only on the seed values.
 */
#include "util/prng.h"

#define PRNG_GOLDEN 0x9e3779b97f4a7c15ull

/* The splitmix64 finalizer: a bijection of 64-bit values with good avalanche. */
static uint64_t prng_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t prng_splitmix(uint64_t *x)
{
	*x += PRNG_GOLDEN;
	return prng_mix(*x);
}

static uint64_t prng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t prng_hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

/*
 * The three components are folded one after the other through the mixer, so for a fixed
 * (seed, node) two threads always get two different splitmix starting points, and so
 * different states. The four state words are mix(x + k * golden) for k = 1..4; mix is a
 * bijection with mix(0) = 0, so at most one of them can be zero: never the all-zero state.
 */
void prng_seed(struct prng *r, uint64_t seed, uint64_t node, uint64_t thread)
{
	uint64_t x = seed;
	int i;

	x = prng_splitmix(&x) ^ node;
	x = prng_splitmix(&x) ^ thread;
	for (i = 0; i < 4; i++)
		r->s[i] = prng_splitmix(&x);
}

uint64_t prng_next(struct prng *r)
{
	uint64_t *s = r->s;
	uint64_t result = prng_rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = prng_rotl(s[3], 45);
	return result;
}

/*
 * Lemire, "Fast Random Integer Generation in an Interval" (2019): the high half of x * n
 * is uniform in [0, n) once the draws whose low half falls below 2^64 mod n are rejected.
 * The modulo is only computed in the rare case that the low half is below n. n == 0 gives 0.
 */
uint64_t prng_below(struct prng *r, uint64_t n)
{
	unsigned __int128 m;
	uint64_t low, threshold;

	if (n == 0)
		return 0;
	m = (unsigned __int128)prng_next(r) * n;
	low = (uint64_t)m;
	if (low < n) {
		threshold = -n % n;
		while (low < threshold) {
			m = (unsigned __int128)prng_next(r) * n;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}
