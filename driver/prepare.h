/* SPDX-License-Identifier: MIT */
/*
 * Replica preparation, one path for `prepare` and for `run`: look at what is there, refuse
 * what is not ours, keep, create or recreate, and take another node's copy when it won the
 * race to publish the same replica.
 */
#ifndef STAGEBENCH_PREPARE_H
#define STAGEBENCH_PREPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "driver/outcome.h"
#include "driver/plan.h"
#include "driver/reason.h"
#include "util/pattern.h"

struct prepare_req {
	int dirfd;
	const char *dir; /* of dirfd, for messages */
	const struct plan_test *pt;
	bool replace; /* an existing replica is recreated (else kept) */
	/*
	 * How: swap, the new one is renamed over the old when complete (prepare); otherwise the
	 * old one is removed first and the new one published only if no other node published
	 * one meanwhile (a run, where nodes share the directory).
	 */
	bool swap;
	/*
	 * A run's recreation (replace without swap): the generation this node read in the
	 * previous repetition, 0 if none. A replica of another generation was already
	 * recreated by a node sharing the directory, and is used as it is.
	 */
	uint64_t seen;
	unsigned threads; /* writers */
	uint64_t xfer;	  /* their write size */
	/* The run and repetition a replica created now is for (written into it), or NULL. */
	const struct pattern_origin *origin;
};

enum prepare_done { PREPARE_KEPT, PREPARE_CREATED, PREPARE_RECREATED, PREPARE_THEIRS };

struct prepare_result {
	enum prepare_done done;
	uint64_t generation; /* of the replica now in place */
	uint64_t size;	     /* its size */
	double seconds;	     /* creation time (created, recreated) */
	char error[600];     /* why, when the outcome is not OK; "" when stopped */
	enum reason reason;  /* its reason */
};

/*
 * Make sure the replica of rq->pt is in place. OUTCOME_OK; OUTCOME_PRECONDITION when the
 * file there is not ours or of the wrong size, or is missing and may not be created;
 * OUTCOME_FAILED when creating failed or was stopped (stop_part; then error is "").
 */
enum outcome prepare_replica(const struct prepare_req *rq, struct prepare_result *out);

/*
 * The `prepare` command: each replica of the plan prepared in turn, a line for each on
 * stdout, failures on stderr; a replica it creates records run_id and the plan's repetition
 * (--repetition) as its origin. A signal stops it (the outcome says which).
 */
enum outcome prepare_command(const struct plan *plan, int dirfd, const char *dir, unsigned threads,
			     bool force, const char *run_id);

#endif
