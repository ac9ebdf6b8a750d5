/* SPDX-License-Identifier: MIT */
/*
 * `stagebench check --health`: this node's health from the summaries its latest run left
 * under --results, for Slurm's HealthCheckProgram and LBNL NHC. Runs no benchmark.
 */
#ifndef STAGEBENCH_HEALTH_H
#define STAGEBENCH_HEALTH_H

#include "driver/options.h"
#include "driver/outcome.h"

/*
 * Find the newest run under o->results (the directory itself, or one of its subdirectories
 * modified within o->max_age seconds) that holds summaries of node (NODE.json, or the
 * launcher's NODE.PART.repK.json), judge every one of them younger than o->max_age, and print
 * one line on stdout. OUTCOME_OK: every summary says ok; OUTCOME_FAILED: one does not (the
 * line names the part and its first error); OUTCOME_PRECONDITION: no recent data (nothing
 * within max_age, a directory that cannot be read, or a damaged summary); OUTCOME_USAGE:
 * no --results.
 */
enum outcome health_check(const struct options *o, const char *node);

#endif
