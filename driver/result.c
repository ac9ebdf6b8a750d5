/* SPDX-License-Identifier: MIT */
/*
 * A part's result folded from its threads' results, and the results' lifetime.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "driver/note.h"
#include "driver/result.h"

const char *result_status_name(enum part_status s)
{
	static const char *const names[] = {
	    [PART_OK] = "ok",
	    [PART_LATE] = "late",
	    [PART_FAILED] = "failed",
	    [PART_SKIPPED] = "skipped",
	    [PART_INTERRUPTED] = "interrupted",
	};
	return names[s];
}

/* The first release among the threads that ran: its wall time and monotonic time. */
struct result_first {
	size_t ran;
	double at, last_at;
	uint64_t mono;
};

/* Sums, histogram, copies and errors of the threads; the threads' times into times[]. */
static void result_sum(struct part_result *pr, const struct result_thread *t, size_t n,
		       double *times, struct result_first *first, struct node_result *res)
{
	double rmin = INFINITY, rmax = -INFINITY;
	char line[560];

	for (size_t i = 0; i < n; i++) {
		const struct thread_result *r = &t[i].res;

		if (pr->threads)
			pr->threads[i] = *r;
		pr->bytes += r->bytes;
		pr->ops += r->ops;
		pr->pages += r->pages;
		pr->files += r->files;
		pr->retries += r->retries;
		if (pr->hist && t[i].hist)
			hist_merge(pr->hist, t[i].hist);
		if (r->rc) {
			note_worker_error(&r->err, line, sizeof(line));
			if (pr->status != PART_FAILED) {
				snprintf(pr->error, sizeof(pr->error), "thread %u: %s", r->index,
					 line);
				pr->status = PART_FAILED;
			}
			note_error(res, "%s thread %u: %s", pr->pp->def->name, r->index, line);
		}
		if (!r->ran)
			continue;
		times[first->ran++] = r->time_s;
		if (r->release_at < rmin) {
			rmin = r->release_at;
			first->at = r->release_at;
			first->mono = t[i].release_mono;
		}
		if (r->release_at > rmax)
			rmax = r->release_at;
	}
	first->last_at = rmax;
}

/*
 * The node time: from T to the end of the last thread. The first release's offset from T,
 * on the wall clock and on the monotonic one (T projected when it was decided). They agree
 * unless the wall clock stepped in the wait: forward, the threads woke at once and the wall
 * offset is the step; backward, they slept through it and the monotonic offset is. The
 * smaller one is the step-free offset. Thread offsets from the first release are differences
 * of epoch seconds taken within microseconds of each other (doubles resolve 0.24 us).
 */
static double result_node_time(const struct part_result *pr, const struct result_thread *t,
			       size_t n, const struct result_clocks *c,
			       const struct result_first *first)
{
	double lead_wall = first->at - pr->start_at;
	double lead_mono =
	    (double)(int64_t)(first->mono - c->mono0) / 1e9 - (pr->start_at - c->wall0);
	double lead = lead_wall < lead_mono ? lead_wall : lead_mono;
	double tmax = -INFINITY;

	if (lead < 0)
		lead = 0;
	for (size_t i = 0; i < n; i++) {
		const struct thread_result *r = &t[i].res;
		double end = lead + (r->release_at - first->at) + r->time_s;

		if (r->ran && end > tmax)
			tmax = end;
	}
	return tmax;
}

/*
 * Compare wall and monotonic elapsed time from the start decision to the end of the part
 * (and to the first release): a difference is a step of the wall clock, which changes no
 * duration (they are monotonic) but is recorded and said, since the start instants of this
 * node and the others were decided on the wall clock.
 */
static void result_clock_step(struct part_result *pr, const struct result_clocks *c,
			      double first_at, uint64_t first_mono, struct node_result *res)
{
	double total = (c->wall1 - c->wall0) - (double)(int64_t)(c->mono1 - c->mono0) / 1e9;
	double before = first_mono
			    ? (first_at - c->wall0) - (double)(int64_t)(first_mono - c->mono0) / 1e9
			    : total;
	bool in_wait = fabs(before) >= RESULT_STEP_MIN_S;

	if (!in_wait && fabs(total) < RESULT_STEP_MIN_S)
		return;
	pr->clock_step_s = fabs(total) >= RESULT_STEP_MIN_S ? total : before;
	note_warning(res,
		     "%s: the wall clock stepped by %+.3f s %s: durations are monotonic and "
		     "unaffected%s",
		     pr->pp->def->name, pr->clock_step_s,
		     in_wait ? "while waiting for the start" : "during the part",
		     in_wait ? ", but this node may not have started with the others" : "");
}

void result_aggregate(struct part_result *pr, const struct result_thread *t, size_t n,
		      const struct result_clocks *c, bool stopped, int signal,
		      struct node_result *res)
{
	double *times = calloc(n > 0 ? n : 1, sizeof(*times));
	struct result_first first = {0, 0, 0, 0};

	pr->threads = calloc(n, sizeof(*pr->threads));
	pr->hist = malloc(sizeof(*pr->hist));
	pr->nthreads = n;
	if (pr->hist)
		hist_init(pr->hist);
	if (!times) {
		note_error(res, "%s: out of memory", pr->pp->def->name);
		pr->status = PART_FAILED;
		return;
	}
	result_sum(pr, t, n, times, &first, res);
	if (first.ran) {
		pr->node_time_s = result_node_time(pr, t, n, c, &first);
		pr->release_spread_s = first.last_at - first.at;
		stats_summarize(times, first.ran, &pr->thread_time);
	}
	free(times);
	result_clock_step(pr, c, first.ran ? first.at : 0, first.ran ? first.mono : 0, res);
	if (pr->status == PART_OK || pr->status == PART_LATE) {
		if (stopped && signal)
			pr->status = PART_INTERRUPTED;
		else if (first.ran != n)
			pr->status = PART_FAILED;
	}
}

void result_free(struct node_result *res)
{
	for (size_t i = 0; i < res->nparts; i++) {
		free(res->parts[i].threads);
		free(res->parts[i].hist);
	}
	free(res->parts);
	free(res->tests);
	for (size_t i = 0; i < res->nerrors; i++)
		free(res->errors[i]);
	for (size_t i = 0; i < res->nwarnings; i++)
		free(res->warnings[i]);
	topo_plan_free(&res->tplan);
}
