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

/*
 * A replica's origin: the run and the repetition it was created for. It is written into the
 * first block of the replica, after the block's header (the bytes --verify never reads), where
 * a reader that already reads block 0 for the generation finds it at no extra cost; a replica
 * of an older stagebench has none there (its body is the keyed stream) and reads as unknown.
 */
#define PATTERN_RUN_ID_MAX 128

struct pattern_origin {
	char run_id[PATTERN_RUN_ID_MAX + 1]; /* a launcher's run id, or a command's run tag */
	uint64_t repetition;		     /* 1-based */
};

/*
 * Write origin into the first block of a file of generation gen (block: at least
 * PATTERN_BLOCK bytes, its header already written). A run id longer than PATTERN_RUN_ID_MAX
 * is cut.
 */
void pattern_origin_put(void *block, uint64_t gen, const struct pattern_origin *origin);

/*
 * Read the origin from the first block of a file of generation gen. 0, or -ENOENT when the
 * block holds none (an older replica), or one written for another generation.
 */
int pattern_origin_get(const void *block, uint64_t gen, struct pattern_origin *origin);

#endif
