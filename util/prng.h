/* SPDX-License-Identifier: MIT */
/*
 * A small, fast, seedable generator (xoshiro256**) for random chunk offsets, seeded from
 * (seed, node, thread) so that every thread of every node draws its own reproducible stream.
 */
#ifndef STAGEBENCH_PRNG_H
#define STAGEBENCH_PRNG_H

#include <stdint.h>

struct prng {
	uint64_t s[4];
};

/* FNV-1a of a string, to turn a node name into a seed component. */
uint64_t prng_hash_str(const char *s);
/* Seed from three components through splitmix64; never yields the all-zero state. */
void prng_seed(struct prng *r, uint64_t seed, uint64_t node, uint64_t thread);
uint64_t prng_next(struct prng *r);
/* Uniform in [0, n) without modulo bias (Lemire's method); n > 0. */
uint64_t prng_below(struct prng *r, uint64_t n);

#endif
