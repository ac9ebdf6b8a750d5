/* SPDX-License-Identifier: MIT */
/*
 * The node summary as a file (--out), written atomically.
 */
#ifndef STAGEBENCH_SUMMARY_FILE_H
#define STAGEBENCH_SUMMARY_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "driver/plan.h"
#include "driver/result.h"

/*
 * Write the JSON summary to path atomically: a temporary file with a random name in the same
 * directory, fsync, rename. An existing file is replaced only with force, and only when it is
 * a regular file (-EEXIST otherwise). 0 or -errno.
 */
int summary_file_write(const struct node_result *res, const struct plan *plan, const char *path,
		       bool force);
/*
 * Check before the run that path can be written later (directory writable, no clash): a
 * directory, a symbolic link, a FIFO or a device at path is refused even with force, and so
 * is a directory that belongs to a user other than this one or root.
 */
int summary_file_check_out(const char *path, bool force, char *why, size_t whylen);

#endif
