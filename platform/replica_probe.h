/* SPDX-License-Identifier: MIT */
/*
 * What a replica in --dir is, read past this node's page cache: its size, its generation and
 * whether it is stagebench's.
 */
#ifndef STAGEBENCH_REPLICA_PROBE_H
#define STAGEBENCH_REPLICA_PROBE_H

#include <stdbool.h>
#include <stdint.h>

struct replica_info {
	uint64_t size;	     /* st_size */
	uint64_t generation; /* from the header of block 0 */
	bool ours;	     /* block 0 (and the last block) carry a valid stagebench header */
	double mtime;	     /* last modification, epoch seconds */
};

/*
 * Look at an existing replica without trusting the local page cache: block 0 and the last
 * block are read with O_DIRECT where the filesystem allows it. 0; -ENOENT when missing;
 * -EISDIR/-EINVAL when not a regular file or a symlink; other -errno on read errors.
 */
int replica_probe(int dirfd, const char *name, struct replica_info *out);

#endif
