/* SPDX-License-Identifier: MIT */
/*
 * The error and warning lines of a run (logged, and kept for the summary), and a worker's
 * first error as one line.
 */
#ifndef STAGEBENCH_NOTE_H
#define STAGEBENCH_NOTE_H

#include <stddef.h>

#include "driver/result.h"
#include "workers/bench.h"

/* Record an error line in res with its reason (and log it). */
void note_error(struct node_result *res, enum reason reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Record a warning line in res (and log it). */
void note_warning(struct node_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "read '/stage/x' at 4194304: Input/output error" for a worker error. */
void note_worker_error(const struct io_error *e, char *buf, size_t len);

/*
 * path as a message shows it: whole up to NOTE_PATH_SHOWN bytes, else its start and its end
 * around "..." so that the reason after it is never cut off. Returns buf.
 */
#define NOTE_PATH_SHOWN 160
const char *note_path_short(const char *path, char *buf, size_t len);

#endif
