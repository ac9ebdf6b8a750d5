/* SPDX-License-Identifier: MIT */
/*
 * The run loop: pinned threads, the ready barrier, the release at the start instant, the
 * timed part, and the results of every part, test and thread of this node.
 */
#ifndef STAGEBENCH_RUN_H
#define STAGEBENCH_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "driver/outcome.h"
#include "driver/plan.h"
#include "platform/bufplace.h"
#include "platform/clock.h"
#include "platform/fsinfo.h"
#include "platform/topo.h"
#include "util/hist.h"
#include "util/stats.h"
#include "workers/bench.h"

enum part_status { PART_OK = 0, PART_LATE, PART_FAILED, PART_SKIPPED, PART_INTERRUPTED };

struct thread_result {
	unsigned index;
	unsigned cpu;	   /* the PU it was bound to */
	unsigned core;	   /* logical core index */
	int cpu_seen;	   /* sched_getcpu() after binding, -1 unknown */
	bool ran;	   /* released and ran the timed part */
	double release_at; /* wall clock, epoch seconds */
	double time_s;	   /* release to end of its last operation, monotonic */
	uint64_t bytes, ops, pages, files, retries;
	int rc; /* 0, or -errno of its first error */
	struct bench_error err;
};

struct part_result {
	const struct plan_part *pp;
	const struct plan_test *pt;
	unsigned repetition;		/* 1-based */
	char file[BENCH_PATH_MAX + 80]; /* dir (< BENCH_PATH_MAX) + "/" + replica name (< 64) */
	uint64_t generation;
	uint64_t xfer;
	double scheduled_at; /* the start instant this part was given */
	double start_at;     /* the start instant used (later than scheduled when late) */
	double late_by_s;
	double clock_step_s; /* the wall clock stepped by this much in the part (0: none seen) */
	double node_time_s;
	double release_spread_s;
	struct stats_summary thread_time;
	uint64_t bytes, ops, pages, files, retries;
	double residency; /* fraction of the replica in this node's page cache at the release, <0
			     n/a */
	bool verified, fsync;
	enum part_status status;
	char error[600];   /* first error, one line */
	struct hist *hist; /* merged over threads */
	struct thread_result *threads;
	size_t nthreads;
};

struct test_result {
	const struct plan_test *pt;
	unsigned repetition;
	double result_s; /* sum of its parts' node times */
	enum part_status status;
	bool prepared; /* the replica was created by this run (untimed) */
	double prepare_s;
	uint64_t generation;
	size_t first_part, nparts; /* its parts in node_result.parts */
	char error[600];
};

struct node_result {
	char node[65];
	char host[256];
	char dir[BENCH_PATH_MAX];
	char run_tag[32];
	uint64_t seed;
	double started_at; /* wall clock when the command began */
	double start_at;   /* T of the first part */
	struct fs_info fs;
	bool fs_ok;
	struct clock_ntp ntp;
	bool ntp_ok;
	struct topo_plan tplan;
	struct bufplace bufplace; /* where every thread's I/O buffer sits */
	struct test_result *tests;
	size_t ntests;
	struct part_result *parts;
	size_t nparts;
	enum outcome outcome;
	char *errors[64];
	size_t nerrors;
	char *warnings[16]; /* what did not fail the run but may matter: a clock step */
	size_t nwarnings;
};

/* Set by the signal handlers: the signal that asked to stop (0 none). */
extern volatile sig_atomic_t run_signal;
/* Non-zero: every thread stops at its next check. */
extern volatile int run_stop;

/* Install SIGINT/SIGTERM handlers: first signal stops the run, a second one exits at once. */
void run_install_signals(void);

/*
 * Execute the plan (the `run` command) on this node: replicas, threads, parts, results.
 * The caller has done the preflight and filled res->node, dir, fs, ntp, seed, run_tag.
 * Returns the outcome; every failure is also in res->errors as one line.
 */
enum outcome run_execute(const struct options *o, const struct plan *plan, struct topo *topo,
			 int dirfd, struct node_result *res);

/*
 * Place the I/O buffer: at --buffer-offset, or where bufplace_calibrate() finds the copy from
 * the page cache fastest (page-aligned, with a warning, when it cannot calibrate).
 */
void run_buffer_place(const struct options *o, struct node_result *res);

/* Record an error line in res (and log it). */
void run_error(struct node_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record a warning line in res (and log it). */
void run_warning(struct node_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void run_result_free(struct node_result *res);

const char *run_status_name(enum part_status s);

/* "read '/stage/x' at 4194304: Input/output error" for a worker error. */
void run_format_error(const struct bench_error *e, char *buf, size_t len);

#endif
