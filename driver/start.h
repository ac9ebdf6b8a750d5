/* SPDX-License-Identifier: MIT */
/*
 * Start scheduling: the start instant of each part, from the plan's start policy (an
 * absolute --start-at or a relative --start-in, --interval, --late-ok) and the moment the
 * threads were ready.
 */
#ifndef STAGEBENCH_START_H
#define STAGEBENCH_START_H

#include <stddef.h>

#include "driver/plan.h"
#include "driver/result.h"

/* Without an interval, a part after the first starts this long after all threads are ready. */
#define START_NEXT_LEAD_S 0.010

struct start_sched {
	const struct plan_run *r;
	double first_start; /* T of the first part */
	size_t part_index;  /* parts scheduled so far */
};

/* A schedule whose first start is first_start (the caller's, for an absolute start). */
void start_init(struct start_sched *s, const struct plan_run *r, double first_start);

/*
 * Before the first part is published: a relative start counts from now (after any replica
 * it needed was created). Returns the first start, which the caller records.
 */
double start_first(struct start_sched *s, double now);

/*
 * Decide the start instant of the next part at now, when every thread is ready: sets
 * pr->scheduled_at and start_at, and late_by_s and PART_LATE when the start was missed
 * but may be late. OUTCOME_PRECONDITION with pr->error when the first start was missed and
 * late starts are not allowed. A relative first start is never missed: it moves to now.
 * *first is the first start, changed when it moved.
 */
enum outcome start_decide(struct start_sched *s, double now, struct part_result *pr, double *first);

/*
 * The planned start instant of the next part, before any is decided: the first start, the
 * schedule's or the interval grid's instant; 0 when it would be decided once its threads are
 * ready (no grid).
 */
double start_planned(const struct start_sched *s);

/* The next part does not start (the run is stopping): it still counts for the interval. */
void start_skip(struct start_sched *s);

#endif
