/* SPDX-License-Identifier: MIT */
/*
 * The two reasons to stop, kept apart: a signal came (for the whole command, never cleared)
 * and this part must stop (a thread failed, or a signal came; cleared between parts unless
 * a signal came). Worker threads read the part flag between operations.
 */
#ifndef STAGEBENCH_STOP_H
#define STAGEBENCH_STOP_H

#include <signal.h>
#include <stdbool.h>

/* Set by the signal handler: the first signal that asked to stop (0 none). Never cleared. */
extern volatile sig_atomic_t stop_signal;
/* Non-zero: every thread stops the current part at its next check (bench_should_stop). */
extern volatile int stop_part;

/* A second signal within this long of the first is taken as part of the same stop. */
#define STOP_SAME_S 2.0

/*
 * Install SIGINT/SIGTERM handlers: the first signal sets stop_signal and stop_part, a
 * second one removes a half-written replica and exits at once (130 or 143), except as
 * stop_keep_summary and stop_hold say.
 */
void stop_install(void);

/*
 * on installed for SIGINT and SIGTERM (and SIGHUP when hup), with no flags: a blocking call
 * the signal interrupts returns EINTR.
 */
void stop_catch(void (*on)(int), bool hup);

/*
 * For a command that writes a summary (`run`): a second signal within STOP_SAME_S of the
 * first is part of the same stop (a launcher that signals twice, srun's SIGTERM after a
 * forwarded SIGINT) and changes nothing: the run ends as the first asked, summary written.
 */
void stop_keep_summary(void);

/*
 * While held, a second signal (or a third) changes nothing: what is being written (a
 * summary, a state file) is completed, and the command then exits as the first signal asked.
 * Holds nest: each stop_hold(true) is ended by one stop_hold(false). Main thread only.
 */
void stop_hold(bool hold);

/* A thread failed: the current part stops (a relaxed atomic store, signal-safe). */
void stop_request(void);

/* Whether the current part must stop. */
bool stop_requested(void);

/*
 * Before the next part: clear the part flag, unless a signal came (then it stays set, even
 * when the signal lands while this runs).
 */
void stop_next_part(void);

/* The signal that came, 0 none. */
int stop_signal_seen(void);

#endif
