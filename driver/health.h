/* SPDX-License-Identifier: MIT */
/*
 * `stagebench check --health`: this node's health from the summaries its latest run left
 * under --results (and the history's judgement beside them), for Slurm's HealthCheckProgram
 * and LBNL NHC. Runs no benchmark, and answers within its deadline whatever the results
 * filesystem does.
 */
#ifndef STAGEBENCH_HEALTH_H
#define STAGEBENCH_HEALTH_H

#include <stdbool.h>
#include <stddef.h>

#include "driver/health_door.h"
#include "driver/options.h"
#include "driver/outcome.h"

/*
 * The health check answers within this whatever the results filesystem does (its child is
 * then left behind); tests shorten it through STAGEBENCH_HUNG_DIR_SECONDS (cmdenv.h).
 */
#define HEALTH_DEADLINE_S 10
/* A run that recorded an instant more than this ahead of the node's clock is in the future. */
#define HEALTH_FUTURE_S 600
#define HEALTH_LINE	300

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
 * Judge node from what its latest run left under o->results, within deadline_s, and print
 * the verdict on stdout in o->format (text: the one line). The latest run is the one whose
 * summaries (NODE.json in --results, or NODE.json and NODE.PART.repK.json in one of its
 * subdirectories) record the latest start by the node's clock, runs dated in the future
 * ignored; it must be within o->max_age. Its every summary is read through the collector's
 * door (health_door.h). The history's judgement, when there and fresh, fails a node it flags.
 * Returns the verdict's outcome; OUTCOME_USAGE without --results; an interruption.
 */
enum outcome health_check(const struct options *o, const char *node, int deadline_s);

#endif
