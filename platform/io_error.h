/* SPDX-License-Identifier: MIT */
/*
 * The first error of a piece of file work (a thread's part, a replica's creation), as the
 * driver will report it: the operation, the file, the offset, the errno, and for a
 * verification the generations expected and found. The first error wins: later ones are
 * usually its consequences.
 */
#ifndef STAGEBENCH_IO_ERROR_H
#define STAGEBENCH_IO_ERROR_H

#include <stdbool.h>
#include <stdint.h>

#define IO_ERROR_PATH_MAX 512

struct io_error {
	int errnum;  /* errno value; EBADMSG/ESTALE for verification, EIO for short I/O */
	char op[16]; /* "open", "read", "mmap", "touch", "verify", "write", ... */
	char path[IO_ERROR_PATH_MAX]; /* the file concerned */
	bool has_offset;
	uint64_t offset;     /* byte offset in that file */
	bool has_generation; /* verification failures: what was expected and found */
	uint64_t expected_gen;
	uint64_t found_gen;
};

/*
 * Fill e unless it already holds an error (e->errnum != 0). errnum may be given as errno or
 * -errno; 0 becomes EIO (an error must never look like success). Returns -errnum.
 */
int io_error_set(struct io_error *e, const char *op, const char *path, bool has_offset,
		 uint64_t offset, int errnum);

#endif
