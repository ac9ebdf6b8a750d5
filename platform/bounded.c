/* SPDX-License-Identifier: MIT */
/*
 * A child process with a deadline: fork, a pipe, poll in slices so that a stop signal is
 * seen at once, SIGKILL at the end, and no blocking wait for a child that cannot die.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "platform/bounded.h"

/* The longest single wait, so that a stop flag set by a signal is seen quickly. */
#define BOUNDED_SLICE_MS 100

static double bounded_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * In the child: SIGTERM when the parent dies (it stops as the command would, removing what it
 * made), the standard descriptors on /dev/null, then the work, then _exit.
 */
static void bounded_child(int fd, pid_t parent, int (*fn)(void *arg, int fd), void *arg)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		raise(SIGTERM);

	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	_exit(fn(arg, fd) == 0 ? 0 : 1);
}

int bounded_start(struct bounded *b, double timeout_s, int (*fn)(void *arg, int fd), void *arg)
{
	int p[2];

	b->pid = 0;
	b->fd = -1;
	b->eof = false;
	if (pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	pid_t parent = getpid(), pid = fork();
	if (pid < 0) {
		int err = errno;
		close(p[0]);
		close(p[1]);
		return -err;
	}
	if (pid == 0) {
		close(p[0]);
		bounded_child(p[1], parent, fn, arg);
	}
	close(p[1]);
	b->pid = pid;
	b->fd = p[0];
	b->deadline = bounded_now() + timeout_s;
	return 0;
}

int bounded_send(int fd, const void *buf, size_t len)
{
	const char *c = buf;

	while (len) {
		ssize_t w = write(fd, c, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		c += w;
		len -= (size_t)w;
	}
	return 0;
}

int bounded_read(struct bounded *b, void *buf, size_t len, volatile sig_atomic_t *stop)
{
	return bounded_read_tick(b, buf, len, stop, 0);
}

int bounded_read_tick(struct bounded *b, void *buf, size_t len, volatile sig_atomic_t *stop,
		      double tick_s)
{
	char *c = buf;
	size_t got = 0;
	double tick = tick_s > 0 ? bounded_now() + tick_s : 0;

	while (got < len) {
		if (stop && *stop)
			return -EINTR;
		double now = bounded_now(), left = b->deadline - now;
		if (left <= 0)
			return -ETIMEDOUT;
		if (tick && !got && now >= tick)
			return -EAGAIN;
		if (tick && !got && tick - now < left)
			left = tick - now;
		int ms =
		    left * 1000.0 < BOUNDED_SLICE_MS ? (int)(left * 1000.0) + 1 : BOUNDED_SLICE_MS;
		struct pollfd pfd = {.fd = b->fd, .events = POLLIN};
		int n = poll(&pfd, 1, ms);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		ssize_t r = read(b->fd, c + got, len - got);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return -errno;
		if (r == 0) {
			b->eof = true;
			return 0;
		}
		got += (size_t)r;
	}
	return 1;
}

void bounded_signal(struct bounded *b, int sig, double grace_s)
{
	if (b->pid)
		kill(b->pid, sig);
	b->deadline = bounded_now() + grace_s;
}

int bounded_end(struct bounded *b)
{
	/* A child that closed its pipe is ending: it gets a second; any other is killed now. */
	int waits = b->eof ? 100 : BOUNDED_SLICE_MS / 10, status = 0;

	if (b->fd >= 0) {
		close(b->fd);
		b->fd = -1;
	}
	if (!b->pid)
		return 0;
	for (int i = 0; i <= waits; i++) {
		pid_t w = waitpid(b->pid, &status, WNOHANG);
		if (w == b->pid) {
			b->pid = 0;
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
		if (w < 0 && errno != EINTR)
			return -errno;
		if (i == 0 && !b->eof)
			kill(b->pid, SIGKILL);
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	kill(b->pid, SIGKILL);
	return -ETIMEDOUT;
}
