/* SPDX-License-Identifier: MIT */
/*
 * Clocks: wall time (CLOCK_REALTIME, seconds since the epoch, for start instants shared
 * across nodes), monotonic time (durations), waiting until a wall instant, and the state
 * of the kernel's NTP discipline.
 */
#ifndef STAGEBENCH_CLOCK_H
#define STAGEBENCH_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* Seconds since the epoch, CLOCK_REALTIME, with nanosecond resolution. */
double clock_wall(void);
/* Nanoseconds since the epoch, CLOCK_REALTIME, as an integer (no rounding of a double). */
int64_t clock_wall_ns(void);
/* Nanoseconds of CLOCK_MONOTONIC. */
uint64_t clock_mono_ns(void);

/*
 * Wait until the wall clock reaches at (epoch seconds): sleep until spin_s before it, then
 * spin reading the clock. Returns the wall instant at which it returned (>= at). When
 * *stop becomes non-zero the wait ends early and -1.0 is returned. If at is already past,
 * returns at once with the current wall time.
 */
double clock_wait_until(double at, double spin_s, const volatile int *stop);

struct clock_ntp {
	bool synchronized; /* the kernel's STA_UNSYNC is clear and adjtimex reports TIME_OK-ish */
	int state;	   /* ntp_adjtime's return value (TIME_OK, TIME_ERROR, ...) */
	long maxerror_us;
	long esterror_us;
	char clocksource[32]; /* /sys/.../current_clocksource, or "" */
};

/* Read the NTP state. 0, or -errno when ntp_adjtime itself fails. */
int clock_ntp_read(struct clock_ntp *out);

#endif
