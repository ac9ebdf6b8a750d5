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

#include "driver/health_view.h"
#include "driver/outcome.h"

struct options;

/*
 * The health check answers within this whatever the results filesystem does (its child is
 * then left behind); tests shorten it through STAGEBENCH_HUNG_DIR_SECONDS (cmdenv.h).
 */
#define HEALTH_DEADLINE_S 10
/* A run that recorded an instant more than this ahead of the node's clock is in the future. */
#define HEALTH_FUTURE_S 600

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
