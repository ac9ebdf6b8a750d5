/* SPDX-License-Identifier: MIT */
/*
 * The content of stagebench's files. Every 4 KiB block starts with a 32-byte header
 * (magic, generation, block offset, header checksum); the rest of the block is a cheap
 * stream keyed by (generation, offset). A reader can check a block's header in a few
 * instructions, which is how --verify catches a stale cached copy of an earlier replica.
 */
#ifndef STAGEBENCH_PATTERN_H
#define STAGEBENCH_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define PATTERN_BLOCK 4096u
#define PATTERN_MAGIC 0x31484342474b5453ull /* "STKGBCH1" little-endian */

struct pattern_header {
	uint64_t magic;
	uint64_t generation;
	uint64_t offset; /* byte offset of this block in its file */
	uint64_t check;	 /* magic ^ generation ^ offset, scrambled */
};

/*
 * Fill buf (len a multiple of PATTERN_BLOCK) with the blocks of a file of generation gen
 * that start at byte offset off (a multiple of PATTERN_BLOCK).
 */
void pattern_fill(void *buf, size_t len, uint64_t gen, uint64_t off);

/* Write only the headers of buf's blocks, leaving the rest of each block as it is. */
void pattern_stamp(void *buf, size_t len, uint64_t gen, uint64_t off);

/*
 * Check the header of one block. Returns 0 when it is a stagebench block of generation gen
 * at offset off; -EBADMSG when it is not a stagebench block at all (bad magic or checksum);
 * -ESTALE when it is a stagebench block of another generation or offset. *found_gen and
 * *found_off (may be NULL) get what the header holds.
 */
int pattern_check(const void *block, uint64_t gen, uint64_t off, uint64_t *found_gen,
		  uint64_t *found_off);

/*
 * Check every block header of buf (len a multiple of PATTERN_BLOCK, starting at file offset
 * off). On failure *bad_off gets the file offset of the first bad block.
 */
int pattern_check_range(const void *buf, size_t len, uint64_t gen, uint64_t off, uint64_t *bad_off,
			uint64_t *found_gen);

#endif
