/* SPDX-License-Identifier: MIT */
/*
 * The verdict of `check --health` (health.h) and its views: the one line for NHC, JSON
 * ("stagebench.health/1") and CSV. The writer knows the verdict, never the options.
 */
#ifndef STAGEBENCH_HEALTH_VIEW_H
#define STAGEBENCH_HEALTH_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "driver/enums.h"
#include "driver/health_door.h"
#include "driver/outcome.h"

#define HEALTH_LINE 300

/* The verdicts, each with its exit status (outcome) and its word in JSON and CSV. */
enum health_state {
	HEALTH_OK = 0,	       /* every summary of the latest run says ok: exit 0 */
	HEALTH_UNHEALTHY,      /* a summary says failed, or a lasting regression: exit 1 */
	HEALTH_NOT_ANSWERING,  /* the results filesystem did not answer in time: exit 1 */
	HEALTH_NO_RECENT_DATA, /* no run of this node within --max-age: exit 3 */
	HEALTH_CANNOT_JUDGE,   /* a summary of the latest run is invalid: exit 3 */
	HEALTH_CONFIG_ERROR,   /* the results directory cannot be used: exit 2 */
	HEALTH_NSTATES
};

/* What the history's judgement (RESULTS/history-health.json) came to. */
enum health_history_state {
	HEALTH_HISTORY_NONE = 0, /* no such file */
	HEALTH_HISTORY_OK,	 /* read: no lasting regression of this node */
	HEALTH_HISTORY_FLAGGED,	 /* read: this node has a lasting regression */
	HEALTH_HISTORY_STALE,	 /* written longer ago than --max-age: ignored */
	HEALTH_HISTORY_FUTURE,	 /* written in the future (by this node's clock): ignored */
	HEALTH_HISTORY_DAMAGED,	 /* unreadable or invalid: said, ignored */
	HEALTH_HISTORY_NSTATES
};

struct health_verdict {
	enum health_state state;
	enum outcome out;
	char line[HEALTH_LINE + 1]; /* the one line for NHC, plain ASCII */
	bool has_run;
	char run[256];	 /* the latest run's directory under --results ("" for --results itself) */
	double run_at;	 /* the instant it recorded (UTC seconds) */
	size_t ok;	 /* its summaries that say ok */
	size_t judged;	 /* its summaries read */
	char part[24];	 /* HEALTH_UNHEALTHY by a summary: the part ("run": the whole run) */
	char error[200]; /* and its first error */
	size_t nfuture;	 /* runs ignored as dated in the future */
	char future[256];
	double future_at;
	enum health_history_state history;
	char history_why[200]; /* HEALTH_HISTORY_DAMAGED: why */
	struct health_history hist;
};

/* "ok", "unhealthy", "not_answering", "no_recent_data", "cannot_judge", "config_error". */
const char *health_state_name(enum health_state state);
/* "none", "ok", "flagged", "stale", "future", "damaged". */
const char *health_history_name(enum health_history_state state);

/*
 * The verdict on node: text, its one line; JSON, "stagebench.health/1"; CSV, a header and
 * one row. 0, or -EIO.
 */
int health_view(const struct health_verdict *v, enum format format, const char *node,
		const char *results, double now, FILE *f);

#endif
