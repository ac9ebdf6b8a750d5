/* SPDX-License-Identifier: MIT */
/*
 * The breakable barrier: a mutex, a condition variable on the monotonic clock, and a
 * generation count so that a round that opened is told from a spurious wake-up.
 */
#include <errno.h>
#include <time.h>

#include "driver/gate.h"

void gate_init(struct gate *g, unsigned parties)
{
	pthread_condattr_t ca;

	/* Timed waits (gate_wait_tick) on the monotonic clock: a wall clock step spins none. */
	pthread_mutex_init(&g->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cv, &ca);
	pthread_condattr_destroy(&ca);
	g->parties = parties;
	g->waiting = 0;
	g->generation = 0;
	g->broken = false;
}

void gate_destroy(struct gate *g)
{
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
}

/*
 * Wait until all parties arrived. With a tick (not NULL), the caller is woken every tick_s
 * seconds while it waits, to call tick(arg) with the gate unlocked (the progress line).
 */
int gate_wait_tick(struct gate *g, double tick_s, void (*tick)(void *), void *arg)
{
	int rc = 0;

	pthread_mutex_lock(&g->mu);
	if (g->broken) {
		rc = -ECANCELED;
		goto out;
	}
	unsigned long gen = g->generation;
	if (++g->waiting == g->parties) {
		g->waiting = 0;
		g->generation++;
		pthread_cond_broadcast(&g->cv);
		goto out;
	}
	while (g->generation == gen && !g->broken) {
		struct timespec ts;

		if (!tick) {
			pthread_cond_wait(&g->cv, &g->mu);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)tick_s;
		ts.tv_nsec += (long)((tick_s - (double)(time_t)tick_s) * 1e9);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&g->cv, &g->mu, &ts) == ETIMEDOUT &&
		    g->generation == gen && !g->broken) {
			pthread_mutex_unlock(&g->mu);
			tick(arg);
			pthread_mutex_lock(&g->mu);
		}
	}
	if (g->generation == gen)
		rc = -ECANCELED;
out:
	pthread_mutex_unlock(&g->mu);
	return rc;
}

int gate_wait(struct gate *g)
{
	return gate_wait_tick(g, 0, NULL, NULL);
}

void gate_break(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->broken = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}
