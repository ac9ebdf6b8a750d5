/* SPDX-License-Identifier: MIT */
/*
 * A barrier of n parties that can be broken: the run loop's threads meet at gates, and a
 * thread that fails breaks the gate rather than leave the others waiting for it.
 */
#ifndef STAGEBENCH_GATE_H
#define STAGEBENCH_GATE_H

#include <pthread.h>
#include <stdbool.h>

struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned parties, waiting;
	unsigned long generation;
	bool broken;
};

void gate_init(struct gate *g, unsigned parties);
void gate_destroy(struct gate *g);

/*
 * Wait until all parties arrived; the gate then opens for all of them and is ready for the
 * next round. 0, or -ECANCELED when the gate is or gets broken.
 */
int gate_wait(struct gate *g);

/*
 * gate_wait, and while it waits the caller is woken every tick_s seconds (monotonic) to
 * call tick(arg) with the gate unlocked (the progress line).
 */
int gate_wait_tick(struct gate *g, double tick_s, void (*tick)(void *), void *arg);

/* Break the gate: every waiter and every later wait returns -ECANCELED. */
void gate_break(struct gate *g);

#endif
