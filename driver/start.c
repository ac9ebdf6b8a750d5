/* SPDX-License-Identifier: MIT */
/*
 * The start instant of each part.
 */
#include <stdio.h>

#include "driver/start.h"
#include "util/log.h"

void start_init(struct start_sched *s, const struct plan_run *r, double first_start)
{
	s->r = r;
	s->first_start = first_start;
	s->part_index = 0;
}

double start_first(struct start_sched *s, double now)
{
	if (s->part_index == 0 && !s->r->start_fixed)
		s->first_start = now + s->r->start_in;
	return s->first_start;
}

enum outcome start_decide(struct start_sched *s, double now, struct part_result *pr, double *first)
{
	const struct plan_run *r = s->r;
	size_t k = s->part_index++;
	double sched;

	if (k == 0)
		sched = s->first_start;
	else if (r->schedule && k < r->nschedule)
		sched = r->schedule[k];
	else if (r->has_interval)
		sched = s->first_start + (double)k * r->interval;
	else
		sched = now + START_NEXT_LEAD_S;
	/* A relative start cannot be missed: it counts from the moment set-up is over. */
	if (k == 0 && !r->start_fixed && now + START_NEXT_LEAD_S > sched) {
		sched = now + START_NEXT_LEAD_S;
		s->first_start = sched;
	}
	*first = s->first_start;
	pr->scheduled_at = sched;
	pr->start_at = sched;
	if (now < sched)
		return OUTCOME_OK;

	/* Not ready in time. */
	pr->late_by_s = now - sched;
	if (k == 0 && !r->late_ok) {
		snprintf(pr->error, sizeof(pr->error),
			 "start time missed by %.3f s (threads were ready at %.3f, start was %.3f; "
			 "use a later --start-at or --late-ok)",
			 pr->late_by_s, now, sched);
		pr->reason = REASON_START_MISSED;
		return OUTCOME_PRECONDITION;
	}
	pr->start_at = now + START_NEXT_LEAD_S;
	pr->status = PART_LATE;
	log_warn("%s: started %.3f s late", pr->pp->def->name, pr->late_by_s + START_NEXT_LEAD_S);
	return OUTCOME_OK;
}

double start_planned(const struct start_sched *s)
{
	const struct plan_run *r = s->r;
	size_t k = s->part_index;

	if (k == 0)
		return s->first_start;
	if (r->schedule && k < r->nschedule)
		return r->schedule[k];
	return r->has_interval ? s->first_start + (double)k * r->interval : 0.0;
}

void start_skip(struct start_sched *s)
{
	s->part_index++;
}
