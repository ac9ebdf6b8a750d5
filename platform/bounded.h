/* SPDX-License-Identifier: MIT */
/*
 * Work that may never return (a call on a filesystem whose server hangs) done in a child
 * process, its results read back through a pipe against a deadline: the caller answers in
 * time whatever the child does, and a child stuck in the kernel is simply left behind.
 */
#ifndef STAGEBENCH_BOUNDED_H
#define STAGEBENCH_BOUNDED_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct bounded {
	pid_t pid;	 /* the child, 0 once reaped */
	int fd;		 /* read end of the pipe, -1 when closed */
	double deadline; /* CLOCK_MONOTONIC seconds */
	bool eof;	 /* the child closed the pipe */
};

/*
 * Fork a child that runs fn(arg, fd) with fd the write end of a pipe (bounded_send() writes
 * to it) and its stdin, stdout and stderr on /dev/null (so a child left behind holds no pipe
 * of whoever waits for this command), then _exits with 0 when fn returned 0, 1 otherwise.
 * A child whose parent dies is sent SIGTERM.
 * The deadline is timeout_s from now. 0 or -errno (nothing started).
 */
int bounded_start(struct bounded *b, double timeout_s, int (*fn)(void *arg, int fd), void *arg);

/*
 * All of len bytes of buf to fd, retrying EINTR and short writes (the child's answer, the
 * summary, the clock's answers). 0 or -errno; a write of 0 bytes is -EIO.
 */
int bounded_send(int fd, const void *buf, size_t len);

/*
 * Read one record of exactly len bytes from the child. 1 when read, 0 when the child closed
 * the pipe (finished; a partial record counts as none), -ETIMEDOUT at the deadline, -EINTR
 * as soon as *stop is non-zero (checked at least every 100 ms), -errno on another error.
 */
int bounded_read(struct bounded *b, void *buf, size_t len, volatile sig_atomic_t *stop);

/*
 * bounded_read, with a tick: -EAGAIN once tick_s seconds have passed with no byte of a record
 * come (a record begun is read whole), so that the caller can do something at that pace
 * beside the child (check samples the CPUs' load beside its probe). tick_s <= 0: no tick.
 */
int bounded_read_tick(struct bounded *b, void *buf, size_t len, volatile sig_atomic_t *stop,
		      double tick_s);

/*
 * Pass a signal on to the child (a stop signal, so that it cleans up) and give it grace_s
 * more seconds from now to finish: bounded_read() until it returns 0, then bounded_end().
 */
void bounded_signal(struct bounded *b, int sig, double grace_s);

/*
 * The end: close the pipe; a child that closed its end is waited for (1 s at most), any other
 * is sent SIGKILL and waited for at most 100 ms (one stuck in an uninterruptible wait cannot die
 * before the call returns: it is left to be reaped by init). Returns the child's exit status, or
 * -ETIMEDOUT when it did not end, -errno.
 */
int bounded_end(struct bounded *b);

#endif
