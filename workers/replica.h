/* SPDX-License-Identifier: MIT */
/*
 * Replicas: the files that the read tests read. Written with the block pattern of
 * util/pattern.h under a temporary name, flushed, and renamed into place, so no reader
 * ever sees half a replica. Each recreation gets a new generation.
 */
#ifndef STAGEBENCH_REPLICA_H
#define STAGEBENCH_REPLICA_H

#include <stdbool.h>
#include <stdint.h>

#include "workers/bench.h"

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

/* A new generation number, unique in practice (wall time in ns mixed with the pid). */
uint64_t replica_new_generation(void);

/*
 * Write a replica of size bytes (a multiple of PATTERN_BLOCK) and generation gen as name,
 * with nthreads threads each writing a disjoint region in pwrites of a multiple of xfer
 * (rounded up to whole 4 KiB blocks) to "<name>.tmp.<host>.<pid>.<token>" (token: fs_token(),
 * new for each call, so no file left by an earlier run is ever in the way), then fdatasync
 * and rename into place, the writer's own cached pages of it dropped (fs_drop_fd: it starts
 * as cold as any other node). An existing name is replaced only if replace is true (the caller
 * checked it is a stagebench replica); otherwise the final step fails with -EEXIST (another
 * node won the race; its file stays). *stop aborts. On any failure the temporary file is
 * removed and *err describes what failed.
 */
int replica_create(int dirfd, const char *dir, const char *name, uint64_t size, uint64_t gen,
		   unsigned nthreads, uint64_t xfer, bool replace, const volatile int *stop,
		   struct bench_error *err);

/*
 * For a signal handler that is about to _exit: remove the temporary file of a replica_create
 * in progress, if any. Async-signal-safe (one unlinkat). A replica already published is
 * never touched.
 */
void replica_abort_cleanup(void);

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

/*
 * Remove a replica after checking it is ours (name given, header valid). 0, -ENOENT, or
 * -EPERM when the file is not a stagebench replica (left alone).
 */
int replica_remove(int dirfd, const char *name);

/*
 * Whether name is a file stagebench wrote, for `clean`: 1 when it is a regular file (not a
 * symlink) whose block 0 carries a valid stagebench header of any generation (replicas and
 * the files of test 4 both do), 0 when it is anything else (another file, a directory, a
 * symlink), -errno when it cannot be read (-ENOENT when missing).
 */
int replica_is_ours(int dirfd, const char *name);

/*
 * Leftovers: what an interrupted prepare or run can leave, told by the full name grammar.
 *   temporary replica: stagebench.<test>.<size>.tmp.<host>.<pid>.<token>
 *     (<test> a digit and an optional lowercase letter, <size> digits and B/KiB/.../EiB,
 *     <host> 1-64 of [A-Za-z0-9._-], <token> FS_TOKEN_LEN lowercase hex; the ".<token>" may
 *     be missing: the names of earlier versions)
 *   test 4's files: stagebench.<part>.<node>.p<pid>-<token>-r<rep>.t<thread>.<seq>
 *     (<node> as --node, <seq> at least 6 digits; "-<token>" may be missing, as above)
 * REPLICA_LEFTOVER_NONE (0) for any other name.
 */
enum replica_leftover {
	REPLICA_LEFTOVER_NONE = 0,
	REPLICA_LEFTOVER_TEMP = 1,  /* a temporary replica of an interrupted replica_create */
	REPLICA_LEFTOVER_TEST4 = 2, /* a file of test 4 */
};
enum replica_leftover replica_leftover_name(const char *name);

/*
 * Whether name in dirfd is a leftover of stagebench, by its name and its content, since a
 * kill can come before any header is written: a regular file (never a symlink) with a
 * leftover's name that is empty (created, never written), carries a stagebench header in
 * block 0, or, for a temporary replica only, has a block 0 of zeros (space reserved by
 * fallocate, killed before the first piece landed). Returns its REPLICA_LEFTOVER_* kind,
 * 0 when it is not one (another's file under a similar name), -errno when it cannot be read.
 */
int replica_leftover_kind(int dirfd, const char *name);

/*
 * What `clean` may remove: 1 when replica_is_ours() says so or name is a leftover
 * (replica_leftover_kind() > 0), 0 when neither, -errno when it cannot be read.
 */
int replica_removable(int dirfd, const char *name);

#endif
