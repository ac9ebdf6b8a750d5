/* SPDX-License-Identifier: MIT */
/*
 * The stop flags and the SIGINT/SIGTERM handler that sets them.
 */
#include <string.h>
#include <unistd.h>

#include "driver/stop.h"
#include "workers/replica.h"

volatile sig_atomic_t stop_signal;
volatile int stop_part;

/* Worker threads and the main thread share stop_part: relaxed atomics, no data race. */
void stop_request(void)
{
	__atomic_store_n(&stop_part, 1, __ATOMIC_RELAXED);
}

bool stop_requested(void)
{
	return __atomic_load_n(&stop_part, __ATOMIC_RELAXED) != 0;
}

int stop_signal_seen(void)
{
	return stop_signal;
}

void stop_next_part(void)
{
	__atomic_store_n(&stop_part, 0, __ATOMIC_RELAXED);
	/* A signal before the store above, or between it and this load, sets the flag again. */
	if (stop_signal)
		stop_request();
}

static void stop_on_signal(int sig)
{
	if (stop_signal) {
		/* A second signal: the user wants out now; only a half-written replica goes. */
		replica_abort_cleanup();
		_exit(sig == SIGINT ? 130 : 143);
	}
	stop_signal = sig;
	/* Threads read stop_part while this runs: the same lock-free (signal-safe) atomic store. */
	stop_request();
}

void stop_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = stop_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}
