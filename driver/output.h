/* SPDX-License-Identifier: MIT */
/*
 * Standard output, checked: a write that fails (a full disk, /dev/full, a closed stdout) is
 * remembered with its cause, and the command ends non-zero saying it, never 0 with a summary
 * missing.
 */
#ifndef STAGEBENCH_OUTPUT_H
#define STAGEBENCH_OUTPUT_H

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

#endif
