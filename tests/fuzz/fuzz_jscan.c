/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target of util/jscan: jscan_member reads only the bytes it is given (the input is
 * not terminated), keeps its contract (0, -ENOENT or -EINVAL; a terminated value that fits),
 * and a smaller buffer gives a prefix of the value a larger one gives. The first input byte
 * picks the buffer's size and the member asked for; the rest is the text.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *what) __attribute__((noreturn));
static void fuzz_fail(const char *what)
{
	fprintf(stderr, "fuzz_jscan: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = {"status", "errors", "a", ""};
	char small[64], big[4096];
	char *text;

	if (size < 1)
		return 0;
	size_t room = 1 + data[0] % sizeof(small);
	const char *key = keys[(data[0] >> 6) & 3];
	text = malloc(size - 1 ? size - 1 : 1);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	int a = jscan_member(text, size - 1, key, small, room);
	int b = jscan_member(text, size - 1, key, big, sizeof(big));
	if ((a != 0 && a != -ENOENT && a != -EINVAL) || a != b)
		fuzz_fail("jscan_member broke its contract or depends on the room given");
	if (strnlen(small, room) >= room || strnlen(big, sizeof(big)) >= sizeof(big))
		fuzz_fail("jscan_member left a value unterminated");
	if (a == 0 && strncmp(small, big, strlen(small)) != 0)
		fuzz_fail("jscan_member gave another value in a smaller buffer");
	free(text);
	return 0;
}
