/* SPDX-License-Identifier: MIT */
/*
 * Wall and monotonic clocks, the wait that releases every thread of every node at one wall
 * instant, and the kernel's NTP state as ntp_adjtime reports it.
 */
#include "platform/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

/*
 * The longest single sleep: short enough that *stop (set by a signal handler or another
 * thread) is seen within 50 ms, and that each slice re-reads the clock after a step.
 */
#define CLOCK_SLICE_S 0.05

#define CLOCK_SOURCE_PATH "/sys/devices/system/clocksource/clocksource0/current_clocksource"

static double clock_ts_to_s(const struct timespec *ts)
{
	return (double)ts->tv_sec + (double)ts->tv_nsec * 1e-9;
}

double clock_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return clock_ts_to_s(&ts);
}

int64_t clock_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

uint64_t clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Only called with s within CLOCK_SLICE_S of now: positive (so the cast truncates to the
 * floor) and far from overflowing time_t.
 */
static struct timespec clock_s_to_ts(double s)
{
	struct timespec ts;

	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/*
 * A relaxed atomic load costs what a volatile load does, and keeps the wait race-free when
 * another thread raises the flag with an atomic store (a signal handler may store plainly).
 */
static bool clock_stopped(const volatile int *stop)
{
	return stop && __atomic_load_n(stop, __ATOMIC_RELAXED);
}

/*
 * Sleeping on an absolute CLOCK_REALTIME deadline lets the kernel follow a clock step
 * during the slice; the last spin_s is spent polling the clock, because a sleeping thread
 * wakes tens of microseconds late (timer slack, scheduler), which would spread the release
 * of the threads. NaN or a past instant falls straight through the first test.
 */
double clock_wait_until(double at, double spin_s, const volatile int *stop)
{
	struct timespec ts;
	double now, wake;

	if (!(spin_s > 0))
		spin_s = 0;
	for (;;) {
		if (clock_stopped(stop))
			return -1.0;
		now = clock_wall();
		if (!(now < at))
			return now;
		if (at - now <= spin_s)
			break;
		wake = at - spin_s;
		if (wake > now + CLOCK_SLICE_S)
			wake = now + CLOCK_SLICE_S;
		ts = clock_s_to_ts(wake);
		/* EINTR (a signal that may have set *stop) and early wakes just loop. */
		clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
	}
	do {
		if (clock_stopped(stop))
			return -1.0;
		now = clock_wall();
	} while (now < at);
	return now;
}

/* Read the current clocksource name into buf, "" when sysfs does not say. */
static void clock_read_source(char *buf, size_t len)
{
	ssize_t n;
	int fd;

	buf[0] = '\0';
	fd = open(CLOCK_SOURCE_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0) {
		buf[0] = '\0';
		return;
	}
	buf[n] = '\0';
	buf[strcspn(buf, " \t\r\n")] = '\0';
}

int clock_ntp_read(struct clock_ntp *out)
{
	struct timex tx;
	int state;

	memset(out, 0, sizeof(*out));
	memset(&tx, 0, sizeof(tx));
	tx.modes = 0; /* read only: needs no privilege and changes nothing */
	state = ntp_adjtime(&tx);
	if (state < 0)
		return -errno;
	out->state = state;
	out->synchronized = !(tx.status & STA_UNSYNC) && state != TIME_ERROR;
	out->maxerror_us = tx.maxerror;
	out->esterror_us = tx.esterror;
	clock_read_source(out->clocksource, sizeof(out->clocksource));
	return 0;
}
