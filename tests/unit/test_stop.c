/* SPDX-License-Identifier: MIT */
/*
 * Unit test of driver/stop: the part flag and the signal flag are separate; a signal is
 * never cleared and keeps every later part stopped; a second signal exits at once.
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

int main(void)
{
	test_stop_part();
	test_stop_second_signal();
	test_stop_signal();
	return check_done();
}
