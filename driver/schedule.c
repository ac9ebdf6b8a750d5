/* SPDX-License-Identifier: MIT */
/*
 * --schedule: parse the list of part instants, check it against the plan, and hand it to
 * the start scheduler through plan->run.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "driver/schedule.h"
#include "util/size.h"

#define SCHEDULE_SPAN_S 86400.0

/* The comma-separated instants of text into at[]; their number in *n. */
static int schedule_parse(const char *text, double *at, size_t *n, char *why, size_t whylen)
{
	const char *p = text;
	char item[64];

	*n = 0;
	for (;;) {
		size_t len = strcspn(p, ",");
		if (len == 0 || len >= sizeof(item)) {
			snprintf(why, whylen, "--schedule '%.200s': %s item %zu", text,
				 len ? "too long an" : "empty", *n + 1);
			return -EINVAL;
		}
		if (*n >= SCHEDULE_MAX) {
			snprintf(why, whylen, "--schedule: more than %d instants", SCHEDULE_MAX);
			return -EINVAL;
		}
		memcpy(item, p, len);
		item[len] = '\0';
		double v;
		if (size_parse_seconds(item, &v) != 0 || v < 1.0 || v > 1e11) {
			snprintf(why, whylen,
				 "--schedule: '%s' is not an instant: expected UTC seconds since "
				 "1970, fractions allowed, like 1764657000.5",
				 item);
			return -EINVAL;
		}
		at[(*n)++] = v;
		p += len;
		if (*p == '\0')
			return 0;
		p++;
	}
}

/* Increasing, and within a day of the first. */
static int schedule_check_order(const double *at, size_t n, char *why, size_t whylen)
{
	for (size_t k = 1; k < n; k++) {
		if (at[k] <= at[k - 1]) {
			snprintf(why, whylen,
				 "--schedule: instant %zu (%.3f) is not after instant %zu (%.3f): "
				 "the instants must increase",
				 k + 1, at[k], k, at[k - 1]);
			return -EINVAL;
		}
		if (at[k] - at[0] > SCHEDULE_SPAN_S) {
			snprintf(why, whylen,
				 "--schedule: instant %zu is %.0f s after the first, more than a "
				 "day: refusing it as a likely mistake",
				 k + 1, at[k] - at[0]);
			return -EINVAL;
		}
	}
	return 0;
}

int schedule_apply(const struct options *o, double *at, struct plan *plan, char *why, size_t whylen)
{
	size_t n, parts = plan->nparts * (size_t)plan->run.repeat;
	struct plan_run *r = &plan->run;

	if (o->set_start_at || o->set_start_in || o->set_interval) {
		snprintf(why, whylen, "--schedule excludes --%s: the schedule gives every start",
			 o->set_start_at   ? "start-at"
			 : o->set_start_in ? "start-in"
					   : "interval");
		return -EINVAL;
	}
	if (schedule_parse(o->schedule, at, &n, why, whylen) ||
	    schedule_check_order(at, n, why, whylen))
		return -EINVAL;
	if (n != parts) {
		snprintf(why, whylen,
			 "--schedule names %zu instants, the run has %zu parts (%zu per repetition "
			 "x --repeat %llu): give one instant per part",
			 n, parts, plan->nparts, (unsigned long long)r->repeat);
		return -EINVAL;
	}
	r->start_fixed = true;
	r->start_at = at[0];
	r->schedule = at;
	r->nschedule = n;
	return 0;
}
