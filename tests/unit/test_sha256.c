/* SPDX-License-Identifier: MIT */
/*
 * Unit test of util/sha256: the examples of FIPS 180-4 (NIST's published SHA-256 examples:
 * "abc", the 448-bit two-block message, a million 'a'), the empty message, the lengths around
 * the padding's block boundary (55, 56, 63, 64, 119 bytes, digests from Python's hashlib), and
 * the same digest whatever the pieces the input is fed in.
 */
#include <stdlib.h>

#include "check.h"
#include "util/sha256.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void digest_of(const void *data, size_t len, size_t piece, char hex[SHA256_HEX])
{
	const unsigned char *p = data;
	unsigned char d[SHA256_BYTES];
	struct sha256 s;

	sha256_init(&s);
	for (size_t off = 0; off < len; off += piece)
		sha256_update(&s, p + off, len - off < piece ? len - off : piece);
	sha256_final(&s, d);
	sha256_hex(d, hex);
}

static void test_fips_examples(void)
{
	static const struct {
		const char *msg;
		const char *digest;
	} cases[] = {
	    {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	    {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	};
	char hex[SHA256_HEX];

	for (size_t i = 0; i < N(cases); i++) {
		size_t len = strlen(cases[i].msg);
		digest_of(cases[i].msg, len, len ? len : 1, hex);
		CHECK_STR(hex, cases[i].digest);
	}
}

static void test_million_a(void)
{
	size_t len = 1000000;
	char *a = malloc(len);
	char hex[SHA256_HEX];

	REQUIRE(a != NULL);
	memset(a, 'a', len);
	/* fed in pieces of every shape: a byte, odd sizes, whole blocks, all at once */
	static const size_t pieces[] = {1, 3, 63, 64, 65, 1000, 4096, 1000000};
	for (size_t i = 0; i < N(pieces); i++) {
		digest_of(a, len, pieces[i], hex);
		CHECK_MSG(
		    strcmp(hex,
			   "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
		    "pieces of %zu: %s", pieces[i], hex);
	}
	free(a);
}

static void test_padding_boundaries(void)
{
	static const struct {
		size_t len;
		const char *digest;
	} cases[] = {
	    {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
	    {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
	    {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
	    {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
	    {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
	};
	unsigned char msg[128];
	char hex[SHA256_HEX];

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)((i * 7 + 3) & 255);
	for (size_t i = 0; i < N(cases); i++) {
		for (size_t piece = 1; piece <= cases[i].len; piece += 9) {
			digest_of(msg, cases[i].len, piece, hex);
			CHECK_MSG(strcmp(hex, cases[i].digest) == 0,
				  "%zu bytes in pieces of %zu: %s", cases[i].len, piece, hex);
		}
	}
}

int main(void)
{
	test_fips_examples();
	test_million_a();
	test_padding_boundaries();
	return check_done();
}
