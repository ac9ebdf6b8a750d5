/* SPDX-License-Identifier: MIT */
/*
 * The results of a run on this node (every part, test and thread), and the aggregation of
 * one part's threads into the part's result: sums, the merged histogram, the node time, the
 * spread of the releases, the status and a step of the wall clock.
 */
#ifndef STAGEBENCH_RESULT_H
#define STAGEBENCH_RESULT_H

#include <stdbool.h>
#include <stdint.h>

#include "driver/outcome.h"
#include "driver/plan.h"
#include "driver/reason.h"
#include "platform/bufplace.h"
#include "platform/clock.h"
#include "platform/fsinfo.h"
#include "platform/topo.h"
#include "util/hist.h"
#include "util/pattern.h"
#include "util/sha256.h"
#include "util/stats.h"
#include "workers/bench.h"

/* In order of weight: a test's status is the heaviest of its parts'. */
enum part_status {
	PART_OK = 0,
	PART_LATE,
	PART_FAILED,
	PART_SKIPPED,
	PART_INTERRUPTED,
	PART_ORPHANED /* an armed run's lease lapsed: stopped, or never started */
};

struct thread_result {
	unsigned index;
	unsigned cpu;	   /* the PU it was bound to */
	unsigned core;	   /* logical core index */
	int cpu_seen;	   /* sched_getcpu() after binding, -1 unknown */
	bool ran;	   /* released and ran the timed part */
	double release_at; /* wall clock, epoch seconds */
	double time_s;	   /* release to end of its last operation, monotonic */
	/*
	 * The same release as integer epoch ns (no 0.24 us floor of a double), the start of its
	 * first operation on the same wall clock (release + the monotonic time between them; 0:
	 * it did none), and how far after the part's T it was released when beyond LATE_BOUND
	 * (0 otherwise).
	 */
	int64_t release_at_ns, first_io_at_ns;
	uint64_t release_mono_ns; /* the same release on the monotonic clock */
	double late_by_s;
	/* 1a: its first pass, and the median of its other passes (both < 0: none). */
	double first_pass_s, rest_pass_median_s;
	uint64_t bytes, ops, pages, files, retries;
	int rc; /* 0, or -errno of its first error */
	struct io_error err;
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
	/*
	 * late: the start was missed (with --late-ok), or a thread was released more than
	 * RESULT_LATE_BOUND_S after scheduled_at; late_by_s is then the last release after it.
	 */
	bool late;
	int64_t start_at_ns, scheduled_at_ns;
	int64_t release_min_ns, release_max_ns;	  /* over the threads that ran (0: none ran) */
	int64_t first_io_min_ns, first_io_max_ns; /* over the threads that did one (0: none) */
	double io_start_spread_s;		  /* first_io max - min (< 0: no first I/O) */
	double clock_step_s; /* the wall clock stepped by this much in the part (0: none seen) */
	double clock_step_total_s; /* ... since the run's first start was decided (0: none seen) */
	double node_time_s;
	double release_spread_s;
	struct stats_summary thread_time;
	uint64_t bytes, ops, pages, files, retries;
	double residency;  /* fraction of the replica in this node's page cache at the release, <0
			      n/a or unknown */
	int residency_why; /* errno when a replica's residency could not be measured */
	bool cache_cold_expected; /* the part reads a replica, which should start cold */
	bool cache_dropped;	  /* this node dropped its cached pages of it before the release */
	bool replica_changed;	  /* its identity at the part's end differs from the one opened */
	/* The run and repetition the replica read was created for, when it records them. */
	struct pattern_origin origin;
	bool has_origin;
	/* 1a: over threads, each one's first pass and the median of its other passes. */
	struct stats_summary first_pass, rest_pass;
	size_t nfirst_pass, nrest_pass; /* threads that had them (0: null in the summary) */
	char *warnings[8];		/* this part's warnings, also among the node's */
	size_t nwarnings;
	bool verified, fsync;
	enum part_status status;
	char error[600];    /* first error, one line */
	enum reason reason; /* its reason (REASON_NONE when there is none) */
	struct hist *hist;  /* merged over threads */
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
	enum reason reason; /* of error */
};

struct node_result {
	char node[65];
	char host[256];
	char dir[BENCH_PATH_MAX];
	char run_tag[32];
	/* The run this command belongs to: --run-id (a launcher's), else run_tag. */
	char run_id[PATTERN_RUN_ID_MAX + 1];
	/* The running executable's SHA-256 in hex ("" when it could not be read: exe_errno). */
	char exe_sha256[SHA256_HEX];
	int exe_errno;
	/* How the threads' cores were chosen: "cpus", "threads", "slurm", "binding", "default". */
	const char *cores_chosen_by;
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
	enum reason error_reasons[64]; /* of each of errors */
	size_t nerrors;
	char *warnings[16]; /* what did not fail the run but may matter: a clock step */
	size_t nwarnings;
};

/* One thread's share of a part, as its thread left it for the aggregation. */
struct result_thread {
	struct thread_result res;
	struct hist *hist;     /* its latencies (owned by the thread) */
	uint64_t release_mono; /* monotonic ns at its release */
};

/*
 * The wall and the monotonic clock read together when the part's start was decided (0) and
 * after every thread was done (1).
 */
struct result_clocks {
	double wall0, wall1;
	uint64_t mono0, mono1;
	/* The pair read when the run's first start was decided: steps since then are summed. */
	bool has_ref;
	double wall_ref;
	uint64_t mono_ref;
};

/* A difference this large between wall and monotonic elapsed time is a step of the wall clock. */
#define RESULT_STEP_MIN_S 0.1
/* A thread released more than this after the part's start instant is late. */
#define RESULT_LATE_BOUND_S 0.002
/* A part that should start cold with more than this fraction cached at the release warns. */
#define RESULT_WARM_FRACTION 0.10

/*
 * Fold the n threads of a part into pr (whose start_at and status the run loop set): sums,
 * the merged histogram, per-thread copies, node time, release spread, thread time summary,
 * the first error, a clock step (a warning in res), and the final status (interrupted when
 * signal is set and the part was stopped, failed when a thread failed or did not run).
 * Every thread error is also an error line of res.
 */
void result_aggregate(struct part_result *pr, const struct result_thread *t, size_t n,
		      const struct result_clocks *c, bool stopped, int signal,
		      struct node_result *res);

/*
 * A warning of part pr: kept in pr->warnings and, like every warning, in res (and logged).
 */
void result_part_warning(struct part_result *pr, struct node_result *res, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Free what the results allocated (parts' threads and histograms, the lines, the plan). */
void result_free(struct node_result *res);

const char *result_status_name(enum part_status s);

#endif
