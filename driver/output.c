/* SPDX-License-Identifier: MIT */
/*
 * Standard output through a stream that keeps the first write error with its errno: stdio
 * alone reports only that an error happened, after the buffer was lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "driver/outcome.h"
#include "driver/output.h"
#include "util/log.h"

/* The first errno of a failed write to descriptor 1, 0 while none failed. */
static int output_error;
/* The C library's stdout, put back once ours is closed. */
static FILE *output_libc_stdout;

/* The stream's write hook: all of buf to fd 1, or the error kept and the rest dropped. */
static ssize_t output_write(void *cookie, const char *buf, size_t size)
{
	size_t done = 0;

	(void)cookie;
	while (!output_error && done < size) {
		ssize_t w = write(STDOUT_FILENO, buf + done, size - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			output_error = w < 0 ? errno : EIO;
		else
			done += (size_t)w;
	}
	/* All of it is "taken": stdio must not retry a write that failed for good. */
	return (ssize_t)size;
}

void output_stdout_open(void)
{
	static const cookie_io_functions_t io = {.write = output_write};

	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
			int got = open("/dev/null", O_RDONLY);
			if (got >= 0 && got != fd)
				close(got);
		}
	}
	FILE *f = fopencookie(NULL, "w", io);
	if (!f)
		return;
	setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
	output_libc_stdout = stdout;
	stdout = f;
}

int output_stdout_close(int code)
{
	if (fflush(stdout) != 0 && !output_error)
		output_error = errno ? errno : EIO;
	if (output_libc_stdout) {
		fclose(stdout);
		stdout = output_libc_stdout;
		output_libc_stdout = NULL;
	}
	if (!output_error)
		return code;
	log_err("cannot write to standard output: %s", strerror(output_error));
	return code ? code : outcome_exit_code(OUTCOME_FAILED);
}

int output_fds_check(unsigned need, char *why, size_t whylen)
{
	int fds[OUTPUT_FDS_NEEDED + 1];
	unsigned n = 0;
	int err = 0;
	struct rlimit rl;

	if (need > OUTPUT_FDS_NEEDED)
		need = OUTPUT_FDS_NEEDED;
	for (; n < need; n++) {
		fds[n] = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0);
		if (fds[n] < 0) {
			err = errno;
			break;
		}
	}
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
	if (!err)
		return 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		rl.rlim_cur = 0;
	snprintf(why, whylen,
		 "cannot open the files it needs: %s (the limit of open files, ulimit -n, is %llu; "
		 "stagebench needs %u more than it has open)",
		 strerror(err), (unsigned long long)rl.rlim_cur, need);
	return -err;
}
