/* SPDX-License-Identifier: MIT */
/*
 * The stop flags and the SIGINT/SIGTERM handler that sets them.
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver/stop.h"
#include "platform/replica.h"

volatile sig_atomic_t stop_signal;
volatile int stop_part;

/* While non-zero, a second signal waits: the summary or state file being written ends. */
static volatile sig_atomic_t stop_holding;
/* Whether this command keeps a second signal of the same stop for after its summary. */
static volatile sig_atomic_t stop_keeps_summary;
/* Monotonic instant of the first signal, in ms. */
static volatile long long stop_first_ms;

static long long stop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
		/*
		 * A second signal of the same stop (a launcher's or srun's) or one that lands
		 * while a summary is written: the run ends as the first one asked, summary first.
		 */
		if (stop_holding || (stop_keeps_summary && stop_now_ms() - stop_first_ms <
							       (long long)(STOP_SAME_S * 1000)))
			return;
		/* Later: the user wants out now; only a half-written replica goes. */
		replica_abort_cleanup();
		_exit(sig == SIGINT ? 130 : 143);
	}
	stop_first_ms = stop_now_ms();
	stop_signal = sig;
	/* Threads read stop_part while this runs: the same lock-free (signal-safe) atomic store. */
	stop_request();
}

void stop_keep_summary(void)
{
	stop_keeps_summary = 1;
}

void stop_hold(bool hold)
{
	/* Holds nest (a state file written while the summary's hold lasts); main thread only. */
	stop_holding += hold ? 1 : -1;
}

void stop_catch(void (*on)(int), bool hup)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (hup)
		sigaction(SIGHUP, &sa, NULL);
}

void stop_install(void)
{
	stop_catch(stop_on_signal, false);
}
