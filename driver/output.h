/* SPDX-License-Identifier: MIT */
/*
 * Standard output, checked: a write that fails (a full disk, /dev/full, a closed stdout) is
 * remembered with its cause, and the command ends non-zero saying it, never 0 with a summary
 * missing.
 */
#ifndef STAGEBENCH_OUTPUT_H
#define STAGEBENCH_OUTPUT_H

#include <stddef.h>

/*
 * At the start of main: descriptors 0, 1 and 2 that are closed are held by /dev/null opened
 * read-only (so no file the command opens lands on them, and a write to a closed stdout
 * fails with EBADF), and stdout becomes a stream that keeps the first write error.
 */
void output_stdout_open(void);

/*
 * At the end of main, with the command's exit status: flush stdout; when any write to it
 * failed, say so on stderr ("cannot write to standard output: No space left on device") and
 * return 1 if code was 0. Returns the exit status.
 */
int output_stdout_close(int code);

/* Descriptors a command may hold at once besides one per thread (files, pipes, hwloc, sysfs). */
#define OUTPUT_FDS_NEEDED 32

/*
 * Whether need more descriptors can be opened now (the limit of open files, `ulimit -n`, leaves
 * room for them): 0, or -EMFILE with why saying the limit, so that a command fails at once
 * with "Too many open files" rather than later with a wrong finding (no CPUs, no clock source).
 */
int output_fds_check(unsigned need, char *why, size_t whylen);

#endif
