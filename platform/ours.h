/* SPDX-License-Identifier: MIT */
/*
 * Whether a file in --dir is stagebench's, by its name (util/names.h) and its content, read
 * without following a link: what `clean` removes, what `info` and `check` call ours, what a
 * run may replace. Another's file under a similar name is never taken for ours.
 */
#ifndef STAGEBENCH_OURS_H
#define STAGEBENCH_OURS_H

/*
 * 1 when name is a regular file (not a symlink) whose block 0 carries a valid stagebench
 * header of any generation (replicas and the files of the kinds that write carry one), 0 when
 * it is anything else (another file, a directory, a symlink), -errno when it cannot be read
 * (-ENOENT when missing).
 */
int ours_file(int dirfd, const char *name);

/*
 * Remove a file after checking it is ours (ours_file). 0, -ENOENT, or -EPERM when it is not
 * (left alone). The check and the unlink are two steps: only another stagebench process
 * preparing the same replica could replace the name in between, with a file that is ours too.
 */
int ours_remove(int dirfd, const char *name);

/*
 * What `clean` may remove: 1 when ours_file() says so, or when name is exactly one of the
 * grammar's leftovers (a temporary, a kind's file, check's probe, files and write probe) and
 * its content is what an interrupted run or check leaves: empty (created, never written), a
 * block 0 of zeros at least a block long (a temporary or probe whose space was reserved,
 * killed before the first piece landed), or, for check's write probe, at most a block of the
 * bytes it writes (OURS_WRITE_BYTE). 0 when not, -errno when it cannot be read.
 */
int ours_removable(int dirfd, const char *name);

/* The byte that check's write probe fills its one block with. */
#define OURS_WRITE_BYTE 0x5a

#endif
