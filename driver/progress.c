/* SPDX-License-Identifier: MIT */
/*
 * The progress line: elapsed time, bytes, operations, the current rate, threads done.
 */
#include "driver/progress.h"
#include "platform/clock.h"
#include "util/log.h"
#include "util/size.h"

void progress_tick(void *arg)
{
	struct progress *p = arg;
	const struct part_result *pr = p->part;
	uint64_t bytes, ops;
	size_t done;
	char a[32], b[32];
	double now = clock_wall(), elapsed = now - pr->start_at;

	if (elapsed < 0) {
		log_status("%s rep %u: starting in %.0f s", pr->pp->def->name, pr->repetition,
			   -elapsed);
		p->shown = true;
		return;
	}
	pool_live(p->pool, &bytes, &ops, &done);
	/* The current rate: over the last tick, not since the start. */
	double since = p->at > pr->start_at ? now - p->at : elapsed;
	uint64_t before = p->at > pr->start_at ? p->bytes : 0;
	double rate = since > 0 ? (double)(bytes - before) / since : 0;
	p->at = now;
	p->bytes = bytes;
	log_status("%s rep %u: %.0f s, %s, %llu ops, %s, %zu/%zu threads done", pr->pp->def->name,
		   pr->repetition, elapsed, size_format(bytes, a, sizeof(a)),
		   (unsigned long long)ops, size_format_rate(rate, b, sizeof(b)), done,
		   p->pool->nthreads);
	p->shown = true;
}

void progress_clear(struct progress *p)
{
	if (p->shown)
		log_status_clear();
	p->shown = false;
	p->at = 0;
	p->bytes = 0;
}
