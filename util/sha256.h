/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 (FIPS 180-4), for the identity of the executable that ran: the summary carries the
 * digest of /proc/self/exe, which the collector compares across nodes and with the binary the
 * launcher expected. Pure: the caller feeds the bytes.
 */
#ifndef STAGEBENCH_SHA256_H
#define STAGEBENCH_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32
#define SHA256_HEX   (2 * SHA256_BYTES + 1) /* the digest in lower-case hex, with its NUL */

struct sha256 {
	uint32_t h[8];
	uint64_t bytes;	       /* fed so far */
	unsigned char buf[64]; /* the block being filled */
	size_t used;	       /* bytes of buf in use */
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
/* The digest of everything fed; s must be initialised again before it is fed more. */
void sha256_final(struct sha256 *s, unsigned char out[SHA256_BYTES]);
/* A digest as 64 lower-case hex digits and a NUL. */
void sha256_hex(const unsigned char digest[SHA256_BYTES], char out[SHA256_HEX]);

#endif
