/* SPDX-License-Identifier: MIT */
/*
 * Unit test of platform/clock: the clocks agree with the system, clock_wait_until releases
 * at (never before) the instant, honours *stop and past instants, and the NTP state reads.
 */
#include "platform/clock.h"

#include <math.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/*
 * Bounds loose enough for a loaded 2-core VM, tight enough to catch a wait that ignores
 * the spin (sleep slack is tens of microseconds) or wakes a whole slice late.
 */
#define LATE_MAX_S 0.05

struct wait_case {
	const char *name;
	double delay_s; /* at = now + delay_s */
	double spin_s;
};

static const struct wait_case wait_cases[] = {
    {"20 ms, spin 2 ms", 0.02, 0.002},
    {"120 ms (three slices), spin 2 ms", 0.12, 0.002},
    {"30 ms, no spin", 0.03, 0.0},
    {"30 ms, negative spin", 0.03, -1.0},
    {"10 ms, spin longer than the wait", 0.01, 0.5},
    {"1 ms, spin 2 ms", 0.001, 0.002},
};

static double mono_s(void)
{
	return (double)clock_mono_ns() * 1e-9;
}

static void test_clocks(void)
{
	struct timespec ts;
	uint64_t a, b;
	double w, d;

	clock_gettime(CLOCK_REALTIME, &ts);
	w = clock_wall();
	d = w - ((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
	CHECK_MSG(d >= 0 && d < 0.1, "wall %.6f vs %lld.%09ld", w, (long long)ts.tv_sec,
		  ts.tv_nsec);
	a = clock_mono_ns();
	usleep(2000);
	b = clock_mono_ns();
	CHECK_MSG(b - a >= 2000000 && b - a < 1000000000, "2 ms sleep took %llu ns",
		  (unsigned long long)(b - a));
}

static void test_wait_cases(void)
{
	for (size_t i = 0; i < sizeof(wait_cases) / sizeof(wait_cases[0]); i++) {
		const struct wait_case *c = &wait_cases[i];
		double at = clock_wall() + c->delay_s;
		double r = clock_wait_until(at, c->spin_s, NULL);
		double after = clock_wall();

		CHECK_MSG(r >= at, "%s: released %.9f s early", c->name, at - r);
		CHECK_MSG(r < at + LATE_MAX_S, "%s: released %.6f s late", c->name, r - at);
		CHECK_MSG(r <= after, "%s: release %.9f is after the return %.9f", c->name, r,
			  after);
	}
}

static void test_past(void)
{
	static const double ago[] = {1e-6, 1.0, 1e9};
	const volatile int stop = 0;

	for (size_t i = 0; i < sizeof(ago) / sizeof(ago[0]); i++) {
		double before = clock_wall();
		double t0 = mono_s();
		double r = clock_wait_until(before - ago[i], 0.002, &stop);

		CHECK_MSG(r >= before, "past by %g: returned %.6f before the call %.6f", ago[i], r,
			  before);
		CHECK_MSG(mono_s() - t0 < 0.01, "past by %g: took %.6f s", ago[i], mono_s() - t0);
	}
	/* NaN can never be reached: it must not hang. */
	CHECK(clock_wait_until(NAN, 0.002, NULL) > 0);
}

struct stopper {
	volatile int flag;
	double delay_s;
};

static void *stopper_thread(void *arg)
{
	struct stopper *s = arg;

	usleep((useconds_t)(s->delay_s * 1e6));
	/* Another thread raises the flag atomically, as clock_wait_until reads it. */
	__atomic_store_n(&s->flag, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* A stop raised mid-sleep or mid-spin ends the wait within about one slice. */
static void test_stop(void)
{
	static const struct {
		const char *name;
		double wait_s, spin_s, stop_after_s;
	} cases[] = {
	    {"stop while sleeping", 10.0, 0.002, 0.1},
	    {"stop while spinning", 10.0, 20.0, 0.1},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct stopper s = {.flag = 0, .delay_s = cases[i].stop_after_s};
		pthread_t tid;
		double t0 = mono_s(), r, took;

		CHECK(pthread_create(&tid, NULL, stopper_thread, &s) == 0);
		r = clock_wait_until(clock_wall() + cases[i].wait_s, cases[i].spin_s, &s.flag);
		took = mono_s() - t0;
		CHECK(pthread_join(tid, NULL) == 0);
		CHECK_MSG(r == -1.0, "%s: returned %.6f, not -1", cases[i].name, r);
		CHECK_MSG(took >= cases[i].stop_after_s && took < cases[i].stop_after_s + 0.5,
			  "%s: took %.3f s", cases[i].name, took);
	}

	{
		const volatile int already = 1;
		double t0 = mono_s();

		CHECK(clock_wait_until(clock_wall() + 5.0, 0.002, &already) == -1.0);
		CHECK(mono_s() - t0 < 0.01);
	}
}

struct waiter {
	double at;
	double released;
};

static void *waiter_thread(void *arg)
{
	struct waiter *w = arg;

	w->released = clock_wait_until(w->at, 0.002, NULL);
	return NULL;
}

/* Several threads waiting for one instant are all released at or after it, close together. */
static void test_threads(void)
{
	struct waiter w[4];
	pthread_t tids[4];
	double at = clock_wall() + 0.05, lo = INFINITY, hi = -INFINITY;

	for (int i = 0; i < 4; i++) {
		w[i] = (struct waiter){.at = at};
		CHECK(pthread_create(&tids[i], NULL, waiter_thread, &w[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		CHECK(pthread_join(tids[i], NULL) == 0);
		CHECK_MSG(w[i].released >= at, "thread %d early by %.9f", i, at - w[i].released);
		lo = w[i].released < lo ? w[i].released : lo;
		hi = w[i].released > hi ? w[i].released : hi;
	}
	CHECK_MSG(hi - at < LATE_MAX_S, "last release %.6f s late", hi - at);
	printf("4 threads on %ld CPUs: release spread %.1f us\n", sysconf(_SC_NPROCESSORS_ONLN),
	       (hi - lo) * 1e6);
}

static void test_ntp(void)
{
	struct clock_ntp n;
	int err = clock_ntp_read(&n);

	CHECK_MSG(err == 0, "clock_ntp_read: %d", err);
	if (err)
		return;
	CHECK_MSG(n.clocksource[0] != '\0', "no clocksource");
	CHECK(strcspn(n.clocksource, " \n") == strlen(n.clocksource));
	CHECK(n.state >= 0);
	CHECK(n.maxerror_us >= 0 && n.esterror_us >= 0);
	printf("ntp: synchronized=%d state=%d maxerror=%ld us esterror=%ld us clocksource=%s\n",
	       n.synchronized, n.state, n.maxerror_us, n.esterror_us, n.clocksource);
}

int main(void)
{
	test_clocks();
	test_wait_cases();
	test_past();
	test_stop();
	test_threads();
	test_ntp();
	return check_done();
}
