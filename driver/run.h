/* SPDX-License-Identifier: MIT */
/*
 * The run loop: pinned threads, the ready barrier, the release at the start instant, the
 * timed part, and the results of every part, test and thread of this node.
 */
#ifndef STAGEBENCH_RUN_H
#define STAGEBENCH_RUN_H

#include <stdbool.h>

#include "driver/outcome.h"
#include "driver/plan.h"
#include "driver/result.h"
#include "platform/topo.h"

/*
 * Why a run ends early from outside its parts (an armed run's hooks fill it in): its outcome,
 * the reason and the node's error line; the status and error of the part it stops (stopped:
 * it had started; not_started: it had not), and the status of every later part, which does
 * not start and says not_started.
 */
struct run_halt {
	enum outcome out;
	enum reason reason;
	enum part_status status, rest;
	char error[512];
	char stopped[300];
	char not_started[300];
};

/* What a run needs besides its plan: where it runs and how it reports. */
struct run_env {
	struct topo *topo;
	int dirfd;     /* of res->dir */
	bool progress; /* a live line on stderr while a part runs */
	/*
	 * NULL, or called once by the main thread when every thread of the first part is
	 * released to wait for its start instant start_at (an armed run tells its launcher, then
	 * waits for the start). false: the run halts as halt says (the part does not start).
	 */
	bool (*armed)(void *arg, double start_at, struct run_halt *halt);
	/*
	 * NULL, or called by the main thread at the run's safe points, never inside a worker's
	 * loop: before each test's replica and each part (start_at 0), and about once a second
	 * while a part waits for its start or runs (start_at its start instant). false: the run
	 * halts as halt says: the part stops at once (or does not start), no later part starts.
	 */
	bool (*watch)(void *arg, double start_at, struct run_halt *halt);
	void *hook_arg;
};

/*
 * Execute the plan (the `run` command) on this node: replicas, threads, parts, results.
 * The caller has done the preflight and filled res->node, dir, fs, ntp, run_tag and
 * start_at (the first start, from plan->run). Returns the outcome; every failure is also in
 * res->errors as one line.
 */
enum outcome run_execute(const struct plan *plan, const struct run_env *env,
			 struct node_result *res);

/*
 * Place the I/O buffer in res->bufplace: at offset bytes past a page boundary, or, for
 * PLAN_AUTO, where bufplace_calibrate() finds the copy from the page cache fastest
 * (page-aligned, with a warning, when it cannot calibrate). xfer is the buffer's size.
 */
void run_buffer_place(uint64_t offset, uint64_t xfer, struct node_result *res);

#endif
