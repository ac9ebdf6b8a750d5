/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target of util/jscan: jscan_summary reads only the bytes it is given, keeps its
 * contract (0 with one whole record appended, or -EINVAL / -ENOMEM with nothing appended),
 * takes only what is valid JSON (util/jdoc, the collector's door in C, accepts the text and the
 * text it hands on, but for a repeated key outside the taken arrays, which the collector's
 * parse refuses), and every block of its record reads to its end; and its quick paths (objects
 * as the binary writes them, buckets without white space) agree with the member-by-member
 * reading: the same text with a space before each comma outside its strings, which none of
 * them takes, is taken or declined alike, with the same blocks.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jdoc.h"
#include "util/jscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *what) __attribute__((noreturn));
static void fuzz_fail(const char *what)
{
	fprintf(stderr, "fuzz_jscan: %s\n", what);
	abort();
}

struct fuzz_rd {
	const unsigned char *p;
	size_t at, len;
};

static uint64_t fuzz_take(struct fuzz_rd *r, size_t n)
{
	uint64_t v = 0;
	if (r->len - r->at < n)
		fuzz_fail("a record shorter than its layout");
	memcpy(&v, r->p + r->at, n < sizeof(v) ? n : sizeof(v));
	r->at += n;
	return v;
}

/* The valid JSON text (a repeated key aside) of text[0..len). */
static void fuzz_valid(const char *text, size_t len, const char *what)
{
	struct jdoc doc;
	char why[256];
	int rc = jdoc_parse(text, len, false, &doc, why, sizeof(why));
	if (rc == -EINVAL && strncmp(why, "duplicate key", 13) != 0) {
		fprintf(stderr, "fuzz_jscan: %s: %s\n", what, why);
		fuzz_fail("jscan took what is not JSON");
	}
	jdoc_free(&doc);
}

/*
 * A buckets block: its figures (the least and greatest index, the least count, the sum of the
 * counts when none is negative and it fits in 64 bits) are those of its buckets.
 */
static void fuzz_buckets(struct fuzz_rd *r)
{
	uint64_t n = fuzz_take(r, 4);
	int64_t lo_i = 0, hi_i = 0, lo_c = 0;
	unsigned __int128 sum = 0;
	bool negative = false;
	for (uint64_t k = 0; k < n; k++) {
		int64_t i = (int64_t)fuzz_take(r, 8);
		lo_i = k == 0 || i < lo_i ? i : lo_i;
		hi_i = k == 0 || i > hi_i ? i : hi_i;
	}
	for (uint64_t k = 0; k < n; k++) {
		int64_t c = (int64_t)fuzz_take(r, 8);
		lo_c = k == 0 || c < lo_c ? c : lo_c;
		negative = negative || c < 0;
		sum += c < 0 ? 0 : (uint64_t)c;
	}
	bool fits = !negative && sum <= UINT64_MAX;
	if ((int64_t)fuzz_take(r, 8) != lo_i || (int64_t)fuzz_take(r, 8) != hi_i ||
	    (int64_t)fuzz_take(r, 8) != lo_c || fuzz_take(r, 1) != fits ||
	    fuzz_take(r, 8) != (fits ? (uint64_t)sum : 0))
		fuzz_fail("a buckets block's figures are not those of its buckets");
}

static void fuzz_record(const struct jscan_buf *out)
{
	struct fuzz_rd r = {out->p, 0, out->len};
	if (fuzz_take(&r, 1) != 'D')
		fuzz_fail("a record not marked D");
	size_t tlen = (size_t)fuzz_take(&r, 4);
	if (r.len - r.at < tlen)
		fuzz_fail("a text longer than the record");
	fuzz_valid((const char *)r.p + r.at, tlen, "the text handed on");
	r.at += tlen;
	uint64_t nblocks = fuzz_take(&r, 4);
	for (uint64_t k = 0; k < nblocks; k++) {
		int kind = (int)fuzz_take(&r, 1);
		if (kind == 'P') {
			fuzz_take(&r, 4);
		} else if (kind == 'H') {
			fuzz_buckets(&r);
		} else if (kind == 'T') {
			uint64_t n = fuzz_take(&r, 4), ran = fuzz_take(&r, 4);
			if (ran > n)
				fuzz_fail("more threads ran than there are");
			fuzz_take(&r, 8 * ran);
			if (fuzz_take(&r, 1))
				fuzz_take(&r, 18);
			uint64_t top = fuzz_take(&r, 4);
			if (top > ran || top > 5)
				fuzz_fail("more slowest threads than ran or were asked for");
			fuzz_take(&r, 25 * top);
			if (fuzz_take(&r, 1))
				fuzz_take(&r, 42);
		} else {
			fuzz_fail("a block of no known kind");
		}
	}
	if (r.at != r.len)
		fuzz_fail("bytes after the record's blocks");
}

/* Where the blocks of a record begin (their count, after its text). */
static size_t fuzz_blocks_at(const struct jscan_buf *out)
{
	uint32_t tlen;
	memcpy(&tlen, out->p + 1, sizeof(tlen));
	return 5 + (size_t)tlen;
}

/* The text with a space before each comma outside its strings: read as text was (rc, out). */
static void fuzz_spaced(const char *text, size_t size, int rc, const struct jscan_buf *out)
{
	struct jscan_buf other = {0};
	char *sp = malloc(2 * size + 1);
	bool in_string = false;
	size_t n = 0;

	if (!sp)
		return;
	for (size_t i = 0; i < size; i++) {
		char c = text[i];
		if (in_string && c == '\\' && i + 1 < size) {
			sp[n++] = c;
			sp[n++] = text[++i];
			continue;
		}
		if (c == '"')
			in_string = !in_string;
		if (c == ',' && !in_string)
			sp[n++] = ' ';
		sp[n++] = c;
	}
	int rc2 = jscan_summary(sp, n, 5, &other);
	if (rc != -ENOMEM && rc2 != -ENOMEM) {
		if ((rc == 0) != (rc2 == 0))
			fuzz_fail("a quick path took or declined what the member-by-member reading "
				  "does not");
		if (rc == 0) {
			size_t a = fuzz_blocks_at(out), b = fuzz_blocks_at(&other);
			if (out->len - a != other.len - b ||
			    memcmp(out->p + a, other.p + b, out->len - a) != 0)
				fuzz_fail("a quick path's blocks differ from the member-by-member "
					  "reading's");
		}
	}
	jscan_buf_free(&other);
	free(sp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jscan_buf out = {0};
	char *text = malloc(size ? size : 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	int rc = jscan_summary(text, size, 5, &out);
	if (rc != 0 && rc != -EINVAL && rc != -ENOMEM)
		fuzz_fail("jscan_summary broke its contract");
	if (rc != 0 && out.len != 0)
		fuzz_fail("a declined text left bytes in the record");
	if (rc == 0) {
		fuzz_valid(text, size, "the summary");
		fuzz_record(&out);
	}
	fuzz_spaced(text, size, rc, &out);
	jscan_buf_free(&out);
	free(text);
	return 0;
}
