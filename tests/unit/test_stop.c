/* SPDX-License-Identifier: MIT */
/*
 * Unit test of driver/stop: the part flag and the signal flag are separate; a signal is
 * never cleared and keeps every later part stopped; a second signal exits at once, unless it
 * is held (nested holds) or comes within STOP_SAME_S of the first for a command that keeps
 * its summary.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "driver/stop.h"

/* A failed thread stops its part only; the next part runs. */
static void test_stop_part(void)
{
	CHECK(!stop_requested() && stop_signal_seen() == 0);
	stop_request();
	CHECK(stop_requested());
	CHECK(stop_signal_seen() == 0);
	stop_next_part();
	CHECK(!stop_requested());
}

/* A signal stops the part and stays: clearing for the next part does not lose it. */
static void test_stop_signal(void)
{
	stop_install();
	raise(SIGTERM);
	CHECK(stop_signal_seen() == SIGTERM);
	CHECK(stop_requested());
	stop_next_part();
	CHECK(stop_requested());
	CHECK(stop_signal_seen() == SIGTERM);
}

/* The second signal exits with 128 + the signal's number, in a child process. */
static void test_stop_second_signal(void)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		stop_install();
		raise(SIGINT);
		if (stop_signal_seen() != SIGINT)
			_exit(1);
		raise(SIGINT);
		_exit(2); /* not reached: the handler exits */
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_MSG(WEXITSTATUS(status) == 130, "exit status %d", WEXITSTATUS(status));
}

/*
 * In a child: the first signal, then `second` as the case says; the exit status tells what
 * the second signal did (3: nothing, the child went on).
 */
static int test_stop_child(int kind)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		stop_install();
		if (kind == 1)
			stop_keep_summary();
		raise(SIGINT);
		if (kind == 2) {
			stop_hold(true);
			stop_hold(true); /* a state file written while the summary is held */
			stop_hold(false);
		}
		raise(SIGTERM); /* kind 1: within STOP_SAME_S; kind 2: still held once */
		if (kind == 2) {
			stop_hold(false);
			raise(SIGTERM); /* no hold left, no window: exits */
		}
		_exit(3);
	}
	if (pid <= 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void test_stop_held_and_same_stop(void)
{
	int rc = test_stop_child(1);
	CHECK_MSG(rc == 3, "a second signal of the same stop exited %d", rc);
	rc = test_stop_child(2);
	CHECK_MSG(rc == 143, "held, then released: exit %d, expected 143", rc);
}

int main(void)
{
	test_stop_part();
	test_stop_second_signal();
	test_stop_held_and_same_stop();
	test_stop_signal();
	return check_done();
}
