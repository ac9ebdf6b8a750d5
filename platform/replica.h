/* SPDX-License-Identifier: MIT */
/*
 * Replicas, the files that the read tests read: written with the block pattern of
 * util/pattern.h under a temporary name, flushed, and renamed into place, so no reader ever
 * sees half a replica. Each recreation gets a new generation.
 */
#ifndef STAGEBENCH_REPLICA_H
#define STAGEBENCH_REPLICA_H

#include <stdbool.h>
#include <stdint.h>

#include "platform/io_error.h"
#include "util/pattern.h"

/* A new generation number, unique in practice (wall time in ns mixed with the pid). */
uint64_t replica_new_generation(void);

/*
 * Write a replica of size bytes (a multiple of PATTERN_BLOCK) and generation gen as name, its
 * origin (the run and repetition it is created for, or NULL: none) in its first block, with
 * nthreads threads each writing a disjoint region in pwrites of a multiple of xfer
 * (rounded up to whole 4 KiB blocks) to its temporary name (util/names.h: names_temp, with a
 * token new for each call, so no file left by an earlier run is ever in the way), then
 * fdatasync and rename into place, the writer's own cached pages of it dropped (fs_drop_fd:
 * it starts as cold as any other node). An existing name is replaced only if replace is true
 * (the caller checked it is a stagebench replica); otherwise the final step fails with
 * -EEXIST (another node won the race; its file stays). *stop (read as a relaxed atomic)
 * aborts. On any failure the temporary file is removed and *err describes what failed.
 */
int replica_create(int dirfd, const char *dir, const char *name, uint64_t size, uint64_t gen,
		   const struct pattern_origin *origin, unsigned nthreads, uint64_t xfer,
		   bool replace, const volatile int *stop, struct io_error *err);

/*
 * For a signal handler that is about to _exit: remove the temporary file of a replica_create
 * in progress, if any. Async-signal-safe (one unlinkat). A replica already published is
 * never touched.
 */
void replica_abort_cleanup(void);

#endif
