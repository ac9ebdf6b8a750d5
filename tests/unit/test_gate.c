/* SPDX-License-Identifier: MIT */
/*
 * Unit test of driver/gate: rounds in lock step, no party passes before the last arrives,
 * breaking releases every waiter and every later wait, the tick runs while a party waits.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "check.h"
#include "driver/gate.h"

#define PARTIES 4
#define ROUNDS	200

static struct gate g;
static atomic_uint arrived[ROUNDS];
static atomic_uint early; /* a party that passed round r before all had arrived at it */

static void test_gate_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static void *test_gate_rounds_party(void *arg)
{
	(void)arg;
	for (unsigned r = 0; r < ROUNDS; r++) {
		atomic_fetch_add(&arrived[r], 1);
		if (gate_wait(&g) != 0)
			return (void *)1;
		if (atomic_load(&arrived[r]) != PARTIES)
			atomic_fetch_add(&early, 1);
	}
	return NULL;
}

/* PARTIES threads through ROUNDS rounds: each round opens only when all have arrived. */
static void test_gate_rounds(void)
{
	pthread_t t[PARTIES];
	void *rc;
	int failed = 0;

	gate_init(&g, PARTIES);
	for (size_t i = 0; i < PARTIES; i++)
		pthread_create(&t[i], NULL, test_gate_rounds_party, NULL);
	for (size_t i = 0; i < PARTIES; i++) {
		pthread_join(t[i], &rc);
		failed += rc != NULL;
	}
	CHECK_U64(failed, 0);
	CHECK_U64(atomic_load(&early), 0);
	CHECK_U64(g.waiting, 0);
	CHECK_U64(g.generation, ROUNDS);
	gate_destroy(&g);
}

static void *test_gate_waiter(void *arg)
{
	int *rc = arg;

	*rc = gate_wait(&g);
	return NULL;
}

/* A break wakes the parties already waiting, and every later wait fails at once. */
static void test_gate_break(void)
{
	pthread_t t[2];
	int rc[2] = {1, 1};

	gate_init(&g, 3);
	for (size_t i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, test_gate_waiter, &rc[i]);
	test_gate_sleep_ms(50);
	gate_break(&g);
	for (size_t i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK(rc[0] == -ECANCELED && rc[1] == -ECANCELED);
	CHECK(gate_wait(&g) == -ECANCELED);
	CHECK(gate_wait_tick(&g, 0.01, NULL, NULL) == -ECANCELED);
	gate_destroy(&g);

	/* One party: every wait opens at once, round after round. */
	gate_init(&g, 1);
	CHECK(gate_wait(&g) == 0 && gate_wait(&g) == 0);
	CHECK_U64(g.generation, 2);
	gate_destroy(&g);
}

static void test_gate_count_tick(void *arg)
{
	unsigned *n = arg;

	/* The gate is unlocked during the tick: taking its lock here must not deadlock. */
	pthread_mutex_lock(&g.mu);
	(*n)++;
	pthread_mutex_unlock(&g.mu);
}

static void *test_gate_late_party(void *arg)
{
	(void)arg;
	test_gate_sleep_ms(200);
	gate_wait(&g);
	return NULL;
}

/* The tick runs every tick_s while the caller waits, and no more once the gate opened. */
static void test_gate_tick(void)
{
	pthread_t t;
	unsigned ticks = 0;
	struct timespec t0, t1;

	gate_init(&g, 2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_create(&t, NULL, test_gate_late_party, NULL);
	CHECK(gate_wait_tick(&g, 0.02, test_gate_count_tick, &ticks) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(t, NULL);
	/* About one tick per 20 ms waited; a loaded machine may wake late, never more often. */
	double waited_ms =
	    (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	CHECK_MSG(ticks >= 2 && ticks <= waited_ms / 20.0 + 1, "%u ticks in %.0f ms", ticks,
		  waited_ms);
	unsigned after = ticks;
	test_gate_sleep_ms(50);
	CHECK_U64(ticks, after);
	gate_destroy(&g);
}

int main(void)
{
	test_gate_rounds();
	test_gate_break();
	test_gate_tick();
	return check_done();
}
