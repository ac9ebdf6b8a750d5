/* SPDX-License-Identifier: MIT */
/*
 * Unit test of util/pattern: filled blocks check as ok, another generation or offset is
 * -ESTALE, garbage is -EBADMSG, check_range names the first bad block, stamp touches only
 * headers, and the body is deterministic, distinct per block and random-looking.
 */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "util/pattern.h"
#include "util/prng.h"

#define BLOCKS 64
#define LEN    (BLOCKS * PATTERN_BLOCK)
#define HDR    sizeof(struct pattern_header)
#define GEN    0x0123456789abcdefull
#define OFF    (5ull << 30) /* the buffer sits 5 GiB into its file */

static unsigned char *buf, *copy;

static void test_pattern_random(unsigned char *p, size_t len, uint64_t seed)
{
	struct prng r;

	prng_seed(&r, seed, 0, 0);
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = prng_next(&r);

		memcpy(p + i, &v, 8);
	}
}

static int test_pattern_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void test_pattern_fill_ok(void)
{
	uint64_t g = 0, o = 0, bad = 7;
	int err = 0;

	pattern_fill(buf, LEN, GEN, OFF);
	CHECK(memcmp(buf, "STKGBCH1", 8) == 0);
	for (unsigned i = 0; i < BLOCKS && !err; i++) {
		err = pattern_check(buf + i * PATTERN_BLOCK, GEN, OFF + i * PATTERN_BLOCK, &g, &o);
		CHECK_MSG(err == 0 && g == GEN && o == OFF + i * PATTERN_BLOCK, "block %u: %d", i,
			  err);
	}
	CHECK(pattern_check(buf, GEN, OFF, NULL, NULL) == 0);
	CHECK(pattern_check_range(buf, LEN, GEN, OFF, &bad, &g) == 0);
	CHECK_U64(bad, 7);

	/* The same region filled in two pieces, as two writer threads would: same bytes. */
	pattern_fill(copy, LEN / 2, GEN, OFF);
	pattern_fill(copy + LEN / 2, LEN / 2, GEN, OFF + LEN / 2);
	CHECK(memcmp(buf, copy, LEN) == 0);

	/* A partial last block is the prefix of the whole block. */
	memset(copy, 0xa5, LEN);
	pattern_fill(copy, 3 * PATTERN_BLOCK + 100, GEN, OFF);
	CHECK(memcmp(buf, copy, 3 * PATTERN_BLOCK + 100) == 0);
	CHECK(copy[3 * PATTERN_BLOCK + 100] == 0xa5);
}

struct bad_case {
	const char *what;
	uint64_t fill_gen, fill_off; /* what the block really is */
	int corrupt;		     /* byte to flip in the block, or -1 */
	int err;
	uint64_t found_gen, found_off;
};

static const struct bad_case bad_cases[] = {
    {"same", GEN, OFF, -1, 0, GEN, OFF},
    {"next generation", GEN + 1, OFF, -1, -ESTALE, GEN + 1, OFF},
    {"generation 0", 0, OFF, -1, -ESTALE, 0, OFF},
    {"other offset", GEN, OFF + PATTERN_BLOCK, -1, -ESTALE, GEN, OFF + PATTERN_BLOCK},
    {"flipped magic", GEN, OFF, 3, -EBADMSG, GEN, OFF},
    {"flipped generation", GEN, OFF, 9, -EBADMSG, GEN ^ 0x1000, OFF},
    {"flipped offset", GEN, OFF, 20, -EBADMSG, GEN, OFF ^ 0x10ull << 32},
    {"flipped check", GEN, OFF, 31, -EBADMSG, GEN, OFF},
    {"flipped body", GEN, OFF, 100, 0, GEN, OFF},
};

static void test_pattern_bad(void)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		uint64_t g = 0, o = 0;
		int err;

		pattern_fill(buf, PATTERN_BLOCK, c->fill_gen, c->fill_off);
		if (c->corrupt >= 0)
			buf[c->corrupt] ^= 0x10;
		err = pattern_check(buf, GEN, OFF, &g, &o);
		CHECK_MSG(err == c->err, "%s: %d, want %d", c->what, err, c->err);
		CHECK_MSG(g == c->found_gen && o == c->found_off,
			  "%s: found %#" PRIx64 " %#" PRIx64, c->what, g, o);
	}

	/* Not stagebench blocks at all: zeros, ones, random data, the magic alone. */
	memset(buf, 0, PATTERN_BLOCK);
	CHECK(pattern_check(buf, GEN, OFF, NULL, NULL) == -EBADMSG);
	CHECK(pattern_check(buf, 0, 0, NULL, NULL) == -EBADMSG);
	memset(buf, 0xff, PATTERN_BLOCK);
	CHECK(pattern_check(buf, GEN, OFF, NULL, NULL) == -EBADMSG);
	memcpy(buf, "STKGBCH1", 8);
	CHECK(pattern_check(buf, GEN, OFF, NULL, NULL) == -EBADMSG);
	test_pattern_random(buf, LEN, 1);
	CHECK(pattern_check_range(buf, LEN, GEN, OFF, NULL, NULL) == -EBADMSG);
	{
		int bad = 0;

		for (unsigned i = 0; i < BLOCKS; i++)
			bad += pattern_check(buf + i * PATTERN_BLOCK, GEN, OFF, NULL, NULL) !=
			       -EBADMSG;
		CHECK_MSG(bad == 0, "%d random blocks passed as headers", bad);
	}
}

struct range_case {
	const char *what;
	int stale_block, garbage_block; /* -1: none */
	int err;
	int first_bad;
};

static const struct range_case range_cases[] = {
    {"clean", -1, -1, 0, -1},
    {"stale 3", 3, -1, -ESTALE, 3},
    {"garbage 5", -1, 5, -EBADMSG, 5},
    {"stale 9 after garbage 5", 9, 5, -EBADMSG, 5},
    {"garbage 9 after stale 5", 5, 9, -ESTALE, 5},
    {"first block", 0, 1, -ESTALE, 0},
    {"last block", -1, BLOCKS - 1, -EBADMSG, BLOCKS - 1},
};

static void test_pattern_range(void)
{
	for (size_t i = 0; i < sizeof(range_cases) / sizeof(range_cases[0]); i++) {
		const struct range_case *c = &range_cases[i];
		uint64_t bad = 0, g = 0;
		int err;

		pattern_fill(buf, LEN, GEN, OFF);
		if (c->stale_block >= 0)
			pattern_fill(buf + c->stale_block * PATTERN_BLOCK, PATTERN_BLOCK, GEN - 1,
				     OFF + c->stale_block * PATTERN_BLOCK);
		if (c->garbage_block >= 0)
			test_pattern_random(buf + c->garbage_block * PATTERN_BLOCK, PATTERN_BLOCK,
					    2);
		err = pattern_check_range(buf, LEN, GEN, OFF, &bad, &g);
		CHECK_MSG(err == c->err, "%s: %d, want %d", c->what, err, c->err);
		if (c->first_bad >= 0)
			CHECK_MSG(bad == OFF + (uint64_t)c->first_bad * PATTERN_BLOCK,
				  "%s: bad at %" PRIu64, c->what, bad);
		if (c->err == -ESTALE)
			CHECK_U64(g, GEN - 1);
	}
}

static void test_pattern_stamp(void)
{
	int body_changed = 0, header_same = 0;

	/* Over a filled buffer of another generation: only the 32 header bytes change. */
	pattern_fill(buf, LEN, GEN, OFF);
	memcpy(copy, buf, LEN);
	pattern_stamp(buf, LEN, GEN + 7, OFF);
	for (unsigned i = 0; i < BLOCKS; i++) {
		unsigned char *b = buf + i * PATTERN_BLOCK, *c = copy + i * PATTERN_BLOCK;

		body_changed += memcmp(b + HDR, c + HDR, PATTERN_BLOCK - HDR) != 0;
		header_same += memcmp(b, c, HDR) == 0;
	}
	CHECK(body_changed == 0 && header_same == 0);
	CHECK(pattern_check_range(buf, LEN, GEN + 7, OFF, NULL, NULL) == 0);

	/* Over random data: the same, and the result checks as ok. */
	test_pattern_random(buf, LEN, 3);
	memcpy(copy, buf, LEN);
	pattern_stamp(buf, LEN, GEN, 0);
	body_changed = 0;
	for (unsigned i = 0; i < BLOCKS; i++)
		body_changed += memcmp(buf + i * PATTERN_BLOCK + HDR,
				       copy + i * PATTERN_BLOCK + HDR, PATTERN_BLOCK - HDR) != 0;
	CHECK(body_changed == 0);
	CHECK(pattern_check_range(buf, LEN, GEN, 0, NULL, NULL) == 0);

	/* Stamping a filled buffer with its own generation gives the filled buffer. */
	pattern_fill(copy, LEN, GEN, 0);
	CHECK(memcmp(buf, copy, HDR) == 0);

	/* A partial tail gets the leading bytes of its header and nothing beyond. */
	memset(buf, 0, PATTERN_BLOCK + 16);
	buf[PATTERN_BLOCK + 16] = 0x5a;
	pattern_stamp(buf, PATTERN_BLOCK + 16, GEN, 0);
	CHECK(memcmp(buf + PATTERN_BLOCK, copy + PATTERN_BLOCK, 16) == 0);
	CHECK(buf[PATTERN_BLOCK + 16] == 0x5a);
}

/*
 * The body must defeat compression and deduplication: no repeated 64-bit word across 64
 * blocks, another generation gives other words, and the bits are balanced.
 */
static void test_pattern_body(void)
{
	size_t words = BLOCKS * (PATTERN_BLOCK - HDR) / 8, k = 0, ones = 0, dup = 0;
	uint64_t *w = malloc(2 * words * sizeof(*w));

	CHECK(w != NULL);
	if (!w)
		return;
	pattern_fill(buf, LEN, GEN, OFF);
	pattern_fill(copy, LEN, GEN + 1, OFF);
	for (unsigned i = 0; i < BLOCKS; i++)
		for (size_t j = HDR; j < PATTERN_BLOCK; j += 8) {
			memcpy(&w[k], buf + i * PATTERN_BLOCK + j, 8);
			ones += (size_t)__builtin_popcountll(w[k++]);
			memcpy(&w[k++], copy + i * PATTERN_BLOCK + j, 8);
		}
	qsort(w, k, sizeof(*w), test_pattern_cmp);
	for (size_t i = 1; i < k; i++)
		dup += w[i] == w[i - 1];
	CHECK_MSG(dup == 0, "%zu repeated body words", dup);
	CHECK_MSG(ones > words * 64 * 49 / 100 && ones < words * 64 * 51 / 100,
		  "%zu one bits of %zu", ones, words * 64);
	free(w);
}

/*
 * The origin record in block 0: read back as written; absent from a plain block (an older
 * replica); refused for another generation, or when a byte of it changed; a run id too long
 * is cut; --verify's header check still passes on the block.
 */
static void test_pattern_origin(void)
{
	struct pattern_origin o = {.run_id = "20260101-120000", .repetition = 3}, got;
	char longid[PATTERN_RUN_ID_MAX + 20];

	pattern_fill(buf, PATTERN_BLOCK, GEN, 0);
	CHECK(pattern_origin_get(buf, GEN, &got) == -ENOENT);
	CHECK(got.run_id[0] == '\0' && got.repetition == 0);
	pattern_origin_put(buf, GEN, &o);
	CHECK(pattern_origin_get(buf, GEN, &got) == 0);
	CHECK_STR(got.run_id, "20260101-120000");
	CHECK_U64(got.repetition, 3);
	CHECK(pattern_check(buf, GEN, 0, NULL, NULL) == 0);
	CHECK(pattern_origin_get(buf, GEN + 1, &got) == -ENOENT);
	for (size_t at = 32; at < 32 + 40; at += 7) {
		unsigned char *b = (unsigned char *)buf;
		b[at] ^= 1;
		CHECK_MSG(pattern_origin_get(buf, GEN, &got) == -ENOENT, "byte %zu changed", at);
		b[at] ^= 1;
	}
	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	memcpy(o.run_id, longid, sizeof(o.run_id) - 1);
	o.run_id[sizeof(o.run_id) - 1] = '\0';
	pattern_origin_put(buf, GEN, &o);
	CHECK(pattern_origin_get(buf, GEN, &got) == 0);
	CHECK_U64(strlen(got.run_id), PATTERN_RUN_ID_MAX);
}

int main(void)
{
	buf = aligned_alloc(4096, LEN + PATTERN_BLOCK);
	copy = aligned_alloc(4096, LEN + PATTERN_BLOCK);
	if (!buf || !copy) {
		CHECK(buf && copy);
		return check_done();
	}
	test_pattern_fill_ok();
	test_pattern_bad();
	test_pattern_range();
	test_pattern_stamp();
	test_pattern_body();
	test_pattern_origin();
	free(buf);
	free(copy);
	return check_done();
}
