/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target of util/jdoc: jdoc_parse reads only the bytes it is given (the input is not
 * terminated), keeps its contract (0 with a tree, or -EINVAL with a terminated reason), gives
 * the same answer twice, and what the strict door accepts the lenient one accepts too. The
 * first input byte picks the strictness; the rest is the text. Every value of a tree is
 * walked, so that a broken link shows under the sanitizers.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jdoc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *what) __attribute__((noreturn));
static void fuzz_fail(const char *what)
{
	fprintf(stderr, "fuzz_jdoc: %s\n", what);
	abort();
}

/* The values under v, counted; each string's length checked against its terminator. */
static size_t fuzz_walk(const struct jdoc_value *v, int depth)
{
	size_t n = 1, members = 0;

	if (depth > JDOC_MAX_DEPTH + 1)
		fuzz_fail("a tree deeper than the bound");
	if (v->type == JDOC_STRING && v->text[v->len] != '\0')
		fuzz_fail("a string not terminated at its length");
	for (const struct jdoc_value *m = v->first; m; m = m->next, members++) {
		if (v->type == JDOC_OBJECT && (!m->key || m->key[m->keylen] != '\0'))
			fuzz_fail("a member without its terminated key");
		n += fuzz_walk(m, depth + 1);
	}
	if ((v->type == JDOC_ARRAY || v->type == JDOC_OBJECT) && members != v->len)
		fuzz_fail("a container whose count is not its members'");
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jdoc a, b;
	char whya[256], whyb[256];

	if (size < 1)
		return 0;
	bool strict = data[0] & 1;
	char *text = malloc(size - 1 ? size - 1 : 1);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	int ra = jdoc_parse(text, size - 1, strict, &a, whya, sizeof(whya));
	int rb = jdoc_parse(text, size - 1, false, &b, whyb, sizeof(whyb));
	if (ra != 0 && ra != -EINVAL && ra != -ENOMEM)
		fuzz_fail("jdoc_parse broke its contract");
	if (ra == 0 && (!a.root || rb != 0))
		fuzz_fail("a document the strict door took is refused by the lenient one");
	if (ra != 0 && (a.root || strnlen(whya, sizeof(whya)) == sizeof(whya) || !whya[0]))
		fuzz_fail("a refusal without its reason");
	if (!strict && (ra != rb || (ra && strcmp(whya, whyb) != 0)))
		fuzz_fail("two parses of one text disagree");
	if (ra == 0)
		fuzz_walk(a.root, 0);
	jdoc_free(&a);
	jdoc_free(&b);
	free(text);
	return 0;
}
