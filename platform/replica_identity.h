/* SPDX-License-Identifier: MIT */
/*
 * The identity of the replica a part reads, recorded at its release and re-checked at its
 * end: a replica replaced or modified during a part is seen.
 */
#ifndef STAGEBENCH_REPLICA_IDENTITY_H
#define STAGEBENCH_REPLICA_IDENTITY_H

#include <stdbool.h>
#include <stdint.h>

#include "util/pattern.h"

/*
 * What identifies the replica a part read: the file (device and inode), its size, the
 * generation in its header and its times. Recorded when a part opens the replica and
 * re-checked at the part's end: a replica replaced during a part is read from the node's
 * stale cache of the deleted file, and --verify passes with the old generation.
 */
struct replica_identity {
	uint64_t dev, ino;
	uint64_t size;
	uint64_t generation; /* from block 0, read past the local cache (O_DIRECT) where possible */
	bool has_generation; /* block 0 carries a valid stagebench header */
	int64_t mtime_ns, ctime_ns; /* epoch ns */
	/* The run and repetition it was created for (block 0, after the header), if recorded. */
	struct pattern_origin origin;
	bool has_origin;
};

/* What replica_identity_check found different (bits of its *changed). */
#define REPLICA_CHANGED_GONE	   0x01u /* the name no longer exists */
#define REPLICA_CHANGED_FILE	   0x02u /* another file (device or inode) under the name */
#define REPLICA_CHANGED_SIZE	   0x04u
#define REPLICA_CHANGED_GENERATION 0x08u /* another generation, or the header no longer valid */
#define REPLICA_CHANGED_TIMES	   0x10u /* modified in place (mtime or ctime) */

/*
 * Record the identity of name in dirfd (AT_FDCWD and a path work too), refusing what is not
 * a regular file, as replica_probe. 0 or -errno (-ENOENT, -EINVAL for a symlink, ...).
 */
int replica_identity_get(int dirfd, const char *name, struct replica_identity *out);

/*
 * Re-check name against before: 0 when it is the same replica, 1 when it changed (*changed
 * says how: REPLICA_CHANGED_* bits; a missing name is REPLICA_CHANGED_GONE), -errno when it
 * could not be checked (*changed 0). Untimed: the driver calls it at the part's end and makes
 * the part failed or warned when it returns 1.
 */
int replica_identity_check(int dirfd, const char *name, const struct replica_identity *before,
			   unsigned *changed);

#endif
