/* SPDX-License-Identifier: MIT */
/*
 * The live progress line on stderr, written by the main thread once a second while the
 * workers run a part: it reads the counters each worker publishes with relaxed atomic
 * stores, so it costs the workers nothing but those stores.
 */
#ifndef STAGEBENCH_PROGRESS_H
#define STAGEBENCH_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "driver/pool.h"
#include "driver/result.h"

struct progress {
	const struct pool *pool;
	const struct part_result *part; /* the part running */
	bool shown;			/* a line is on the terminal */
	double at;			/* wall time of the last line */
	uint64_t bytes;			/* bytes done at the last line */
};

/* One line for p->part (a gate tick: arg is the struct progress). */
void progress_tick(void *arg);

/* Take the line away before anything else is printed; the next part starts afresh. */
void progress_clear(struct progress *p);

#endif
