/* SPDX-License-Identifier: MIT */
/*
 * The worker threads of a run: one pinned thread per slot of the thread plan, each with its
 * own page-aligned buffer and histogram. The main thread publishes a part in pool->part and
 * then meets the threads at five gates per part: published, ready (set-up done), go (the
 * start instant decided), done (timed part over), results (torn down, results in out[]).
 */
#ifndef STAGEBENCH_POOL_H
#define STAGEBENCH_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "driver/gate.h"
#include "driver/result.h"
#include "platform/topo.h"
#include "workers/bench.h"

/* Threads spin (rather than sleep) for the last POOL_SPIN_S before the start instant. */
#define POOL_SPIN_S 0.002

/* One part as the main thread publishes it, read-only for the threads once published. */
struct pool_part {
	const struct bench_ops *ops;
	struct bench_params params;
	uint64_t stream;		  /* mixes part and repetition into the seed */
	double start_at;		  /* T of the part */
	char name_prefix[BENCH_PATH_MAX]; /* of the files its kind creates (util/names.h) */
	bool skip_run;			  /* threads set up and tear down but do not run */
};

struct pool_thread;

struct pool {
	struct topo *topo;
	struct gate gate; /* nthreads + 1 parties: the threads and the main thread */
	size_t nthreads, started;
	size_t buf_bytes;
	size_t buf_offset; /* of each thread's buffer past a page boundary */
	uint64_t seed, node_hash;
	bool quit; /* no more parts: the threads return */
	struct pool_part part;
	struct pool_thread *threads;
	struct result_thread *out; /* each thread's result of the last part */
};

/*
 * Start one thread per slot of res->tplan and wait until each is bound and has its buffer
 * of buf_bytes at buf_offset past a page boundary. 0, or -errno with the reason in
 * res->errors (no thread left running).
 */
int pool_start(struct pool *p, struct topo *topo, size_t buf_bytes, size_t buf_offset,
	       uint64_t seed, uint64_t node_hash, struct node_result *res);

/* Tell the threads to quit, join them and free the pool. */
void pool_stop(struct pool *p);

/* Progress published by the threads while a part runs (relaxed loads). */
void pool_live(const struct pool *p, uint64_t *bytes, uint64_t *ops, size_t *done);

#endif
