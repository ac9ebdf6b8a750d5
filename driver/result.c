/* SPDX-License-Identifier: MIT */
/*
 * A part's result folded from its threads' results, and the results' lifetime.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	    [PART_ORPHANED] = "orphaned",
	};
	return names[s];
}

void result_part_warning(struct part_result *pr, struct node_result *res, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	note_warning(res, "%s", line);
	if (pr->nwarnings < sizeof(pr->warnings) / sizeof(pr->warnings[0]))
		pr->warnings[pr->nwarnings++] = strdup(line);
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
			enum reason why = reason_of_worker(&r->err, r->ran);

			note_worker_error(&r->err, line, sizeof(line));
			if (pr->status != PART_FAILED) {
				snprintf(pr->error, sizeof(pr->error), "thread %u: %s", r->index,
					 line);
				pr->reason = why;
				pr->status = PART_FAILED;
			}
			note_error(res, why, "%s thread %u: %s", pr->pp->def->name, r->index, line);
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
	result_part_warning(pr, res,
			    "%s: the wall clock stepped by %+.3f s %s: durations are monotonic and "
			    "unaffected%s",
			    pr->pp->def->name, pr->clock_step_s,
			    in_wait ? "while waiting for the start" : "during the part",
			    in_wait ? ", but this node may not have started with the others" : "");
}

/*
 * The integer instants of the part: releases and first operations (min, max), the spread of
 * the first operations, and lateness against the instant the part was given: a thread
 * released more than RESULT_LATE_BOUND_S after it is late (stopped or preempted in the wait),
 * and the part with it (late, late_by_s), with a warning naming the threads.
 */
static void result_instants(struct part_result *pr, const struct result_clocks *c,
			    struct node_result *res)
{
	char names[256] = "";
	size_t nlate = 0, used = 0;
	/* The instant projected on the monotonic clock when it was decided: no step moves it. */
	double mono_at = (double)c->mono0 + (pr->scheduled_at - c->wall0) * 1e9;

	pr->start_at_ns = (int64_t)(pr->start_at * 1e9 + 0.5);
	pr->scheduled_at_ns = (int64_t)(pr->scheduled_at * 1e9 + 0.5);
	pr->io_start_spread_s = -1.0;
	for (size_t i = 0; pr->threads && i < pr->nthreads; i++) {
		struct thread_result *r = &pr->threads[i];

		if (!r->ran)
			continue;
		/*
		 * Late on both clocks: a step forward in the wait wakes the threads at once with a
		 * wall reading far past T, a step back lets them sleep through it; neither is late.
		 */
		double lag = (double)(r->release_at_ns - pr->scheduled_at_ns);
		double lag_mono = (double)r->release_mono_ns - mono_at;
		if (lag_mono < lag)
			lag = lag_mono;
		if (!pr->release_min_ns || r->release_at_ns < pr->release_min_ns)
			pr->release_min_ns = r->release_at_ns;
		if (r->release_at_ns > pr->release_max_ns)
			pr->release_max_ns = r->release_at_ns;
		if (r->first_io_at_ns &&
		    (!pr->first_io_min_ns || r->first_io_at_ns < pr->first_io_min_ns))
			pr->first_io_min_ns = r->first_io_at_ns;
		if (r->first_io_at_ns > pr->first_io_max_ns)
			pr->first_io_max_ns = r->first_io_at_ns;
		if (lag <= RESULT_LATE_BOUND_S * 1e9)
			continue;
		r->late_by_s = lag / 1e9;
		if (used < sizeof(names))
			used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%u",
						 nlate ? ", " : "", r->index);
		nlate++;
	}
	if (pr->first_io_min_ns)
		pr->io_start_spread_s = (double)(pr->first_io_max_ns - pr->first_io_min_ns) / 1e9;
	if (nlate || pr->status == PART_LATE) {
		pr->late = true;
		for (size_t i = 0; pr->threads && i < pr->nthreads; i++)
			if (pr->threads[i].late_by_s > pr->late_by_s)
				pr->late_by_s = pr->threads[i].late_by_s;
	}
	if (!nlate)
		return;
	/* The status stays: "late" is a missed start; a late release is said by late and this. */
	result_part_warning(pr, res,
			    "%s: late: thread%s %s released up to %.6f s after the start instant "
			    "(bound %.3f s)",
			    pr->pp->def->name, nlate == 1 ? "" : "s", names, pr->late_by_s,
			    RESULT_LATE_BOUND_S);
}

/* 1a: each thread's first pass and the median of its other passes, summarized over threads. */
static void result_passes(struct part_result *pr)
{
	double *v = calloc(pr->nthreads + 1, sizeof(*v));
	double *w = calloc(pr->nthreads + 1, sizeof(*w));

	for (size_t i = 0; v && w && pr->threads && i < pr->nthreads; i++) {
		if (pr->threads[i].first_pass_s >= 0)
			v[pr->nfirst_pass++] = pr->threads[i].first_pass_s;
		if (pr->threads[i].rest_pass_median_s >= 0)
			w[pr->nrest_pass++] = pr->threads[i].rest_pass_median_s;
	}
	if (pr->nfirst_pass)
		stats_summarize(v, pr->nfirst_pass, &pr->first_pass);
	if (pr->nrest_pass)
		stats_summarize(w, pr->nrest_pass, &pr->rest_pass);
	free(v);
	free(w);
}

/*
 * The step of the wall clock since the run's first start was decided: a step during one
 * part of an --interval grid moves the start instants of every later part on this node, so
 * each later part says so too.
 */
static void result_clock_total(struct part_result *pr, const struct result_clocks *c,
			       struct node_result *res)
{
	if (!c->has_ref)
		return;
	double total = (c->wall1 - c->wall_ref) - (double)(int64_t)(c->mono1 - c->mono_ref) / 1e9;
	if (fabs(total) < RESULT_STEP_MIN_S)
		return;
	pr->clock_step_total_s = total;
	if (pr->clock_step_s == 0)
		result_part_warning(pr, res,
				    "%s: the wall clock stepped by %+.3f s since the run's first "
				    "start: this part's start instant may differ from the other "
				    "nodes' by as much",
				    pr->pp->def->name, total);
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
		note_error(res, REASON_SETUP_FAILED, "%s: out of memory", pr->pp->def->name);
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
	result_clock_total(pr, c, res);
	result_instants(pr, c, res);
	result_passes(pr);
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
		for (size_t k = 0; k < res->parts[i].nwarnings; k++)
			free(res->parts[i].warnings[k]);
	}
	free(res->parts);
	free(res->tests);
	for (size_t i = 0; i < res->nerrors; i++)
		free(res->errors[i]);
	for (size_t i = 0; i < res->nwarnings; i++)
		free(res->warnings[i]);
	topo_plan_free(&res->tplan);
}
