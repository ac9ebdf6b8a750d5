/* SPDX-License-Identifier: MIT */
/*
 * Reading single blocks of a file in --dir past this node's page cache: the first and the
 * last block of a replica, to tell stagebench's files by their block headers (util/pattern.h)
 * and to see what the server holds, not what this node cached.
 */
#ifndef STAGEBENCH_BLOCKREAD_H
#define STAGEBENCH_BLOCKREAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* An open file and a block's buffer, aligned for O_DIRECT. */
struct blockread {
	int fd;
	bool direct; /* opened with O_DIRECT */
	struct stat st;
	void *block; /* PATTERN_BLOCK bytes */
};

/*
 * Open name in dirfd for reading blocks, refusing anything but a regular file (a symlink or
 * a FIFO is -EINVAL, a directory -EISDIR) and never following a link or blocking on a FIFO;
 * O_DIRECT where the filesystem allows it. 0 or -errno; close with blockread_close() either
 * way.
 */
int blockread_open(struct blockread *r, int dirfd, const char *name);

/*
 * Read the block at off into r->block, zero-padded when the file ends inside it (*got: the
 * bytes read, when not NULL). A filesystem that refuses O_DIRECT reads (tmpfs, some FUSE)
 * is read through the cache instead. 0 or -errno.
 */
int blockread_block(struct blockread *r, int dirfd, const char *name, uint64_t off, size_t *got);

void blockread_close(struct blockread *r);

/* Whether block holds a valid header for offset off, of any generation (*gen gets it). */
bool blockread_valid(const void *block, uint64_t off, uint64_t *gen);

/* Whether the n bytes at block are all c. */
bool blockread_all(const void *block, size_t n, unsigned char c);

#endif
