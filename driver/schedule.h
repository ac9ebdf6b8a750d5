/* SPDX-License-Identifier: MIT */
/*
 * --schedule T1,T2,...: the start instant of every part of an armed run, given up front by
 * a launcher (instead of the --interval grid), so that a whole run is armed in one round.
 */
#ifndef STAGEBENCH_SCHEDULE_H
#define STAGEBENCH_SCHEDULE_H

#include <stddef.h>

#include "driver/options.h"
#include "driver/plan.h"

/* The most instants a schedule may list. */
#define SCHEDULE_MAX 4096

/*
 * Parse o->schedule into at[] (at most SCHEDULE_MAX) and set plan->run to start part k at
 * at[k]: the list must name one instant (UTC seconds, fractions allowed) per part of the run
 * (its parts times --repeat), strictly increasing, within a day of the first, and excludes
 * --start-at, --start-in and --interval. 0, or -EINVAL with a one-line reason in why.
 */
int schedule_apply(const struct options *o, double *at, struct plan *plan, char *why,
		   size_t whylen);

#endif
