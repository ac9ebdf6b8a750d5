/* SPDX-License-Identifier: MIT */
/*
 * The door of `check --health`: a node summary checked field by field as the collector checks
 * it (scripts/stagebench/summaries.py, read_summary), so that a file one calls invalid the
 * other does too, with the same reason; and the history's judgement of lasting regressions
 * (RESULTS/history-health.json, "stagebench.history-health/1", written by stagebench-cron).
 */
#ifndef STAGEBENCH_HEALTH_DOOR_H
#define STAGEBENCH_HEALTH_DOOR_H

#include <stdbool.h>
#include <stddef.h>

/* The largest file the door reads, as the collector's (summaries.py MAX_FILE_BYTES). */
#define HEALTH_DOOR_MAX_BYTES (64u << 20)
#define HEALTH_DOOR_TEXT      200

/* What the health check keeps of a valid summary. */
struct health_summary {
	char node[80];
	char status[32];
	char error[HEALTH_DOOR_TEXT]; /* its first error ("" when none is recorded) */
	/*
	 * The instant the run recorded for itself: run.started_at, else its latest part's
	 * start_at; below 0 when it records none.
	 */
	double at;
	/* A stagebench file that is no node summary (the collector ignores it): its schema. */
	char other_schema[64];
};

/*
 * text[0..len) of a node summary, checked as the collector checks one: the JSON through its
 * door (util/jdoc.h, lenient), then the schema, the node's facts, every test, part, thread and
 * latency histogram (names of the catalogue, numbers of the right type and range, required
 * fields present). 0 with s filled (s->other_schema set for another stagebench document);
 * -EINVAL with the collector's reason in why; -ENOMEM.
 */
int health_door_summary(const char *text, size_t len, struct health_summary *s, char *why,
			size_t whylen);

#define HEALTH_DOOR_HISTORY	   "history-health.json"
#define HEALTH_DOOR_HISTORY_SCHEMA "stagebench.history-health/1"
#define HEALTH_DOOR_MAX_FLAGS	   4 /* a node's regressions named in its line */

/* One lasting regression of a node: a part, its size (0.31: 31% slower) and its first night. */
struct health_regression {
	char part[24];
	double size;
	char first_night[128];
};

/* What the history's judgement says of one node. */
struct health_history {
	char run_id[128];  /* the night judged */
	double written_at; /* when (UTC seconds) */
	size_t nflags;	   /* this node's lasting regressions (flags holds the first ones) */
	struct health_regression flags[HEALTH_DOOR_MAX_FLAGS];
};

/*
 * text[0..len) of a history judgement (the strict door: the judgement is used whole): its
 * schema, "written_at" a time, "run_id" a string, "nodes" an object of node names each with a
 * list of {"part", "size", "first_night"}; what it says of node into h. 0, or -EINVAL with
 * the reason in why, -ENOMEM.
 */
int health_door_history(const char *text, size_t len, const char *node, struct health_history *h,
			char *why, size_t whylen);

#endif
