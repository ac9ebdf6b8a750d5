/* SPDX-License-Identifier: MIT */
/*
 * The kind that does no I/O: each operation is two back-to-back clock reads. It exercises
 * the driver (barrier, release, aggregation) and measures what timing itself costs.
 */
#include <stdatomic.h>

#include "platform/clock.h"
#include "workers/bench.h"

static int null_run(struct bench_ctx *c)
{
	/* At least one operation, so that a part always has a latency sample to report. */
	uint64_t n = c->p->count ? c->p->count : 1;
	uint64_t i, t0, t1;

	c->first_io_ns = clock_mono_ns();
	for (i = 0; i < n; i++) {
		if (bench_stopping(c))
			return 0;
		t0 = clock_mono_ns();
		t1 = clock_mono_ns();
		hist_record(c->lat, t1 - t0);
		c->ops++;
		atomic_store_explicit(&c->live_ops, c->ops, memory_order_relaxed);
	}
	return 0;
}

const struct bench_ops bench_null = {
    .name = "null",
    .caps = 0,
    .unit = BENCH_UNIT_OPS,
    .expect = {.ops = BENCH_BY_COUNT},
    .what = "no I/O: two clock reads per operation (driver overhead)",
    .run = null_run,
};
