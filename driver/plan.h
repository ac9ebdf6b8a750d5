/* SPDX-License-Identifier: MIT */
/*
 * The tests of the spec, their parts and parameters at each scale, and the plan of a
 * command: which parts run, in which order, with which N, M, file size and passes.
 */
#ifndef STAGEBENCH_PLAN_H
#define STAGEBENCH_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "driver/enums.h"
#include "workers/bench.h"

struct options; /* driver/options.h: what plan_build reads */

struct part_params {
	uint64_t count;	 /* N: chunks or files; 0 where it does not apply */
	uint64_t chunk;	 /* M: chunk or file size; 0 where it does not apply */
	uint64_t file;	 /* F: replica size; 0 for test 4 */
	uint64_t passes; /* passes over the replica (1a, 1b); 0 where it does not apply */
};

/* The tier of the storage that the spec says should serve a part (the catalogue's "tier"). */
enum plan_tier {
	PLAN_TIER_NONE = 0,	/* none said (test 4, null): null */
	PLAN_TIER_NODE_CACHE,	/* "node_cache": the compute node's page cache (1a, 1b) */
	PLAN_TIER_SERVER_CACHE, /* "server_cache": the I/O server's cache (2) */
	PLAN_TIER_SERVER_DISK,	/* "server_disk": the I/O server's disk (3) */
	PLAN_TIER_COUNT
};

struct part_def {
	const char *name;    /* "2a" */
	const char *test;    /* "2" */
	const char *kind;    /* the worker kind: "randread" */
	enum plan_tier tier; /* where the spec expects it to be served from */
	const char *what;    /* one line for `list` */
	struct part_params scale[SCALE_COUNT];
};

struct test_def {
	const char *name;   /* "2" */
	const char *title;  /* the spec's name: "read_from_ioserver_cache" */
	bool has_replica;   /* reads a replica (1a, 1b, 2, 3) */
	bool recreate;	    /* its replica is deleted and recreated between repetitions */
	bool needs_prepare; /* at spec scale the replica must exist already (test 3) */
	bool in_all;	    /* part of `run all` (the spec's tests; not the null test) */
	bool server_drop;   /* a site's drop of the server's cache applies before its parts (3) */
};

#define PLAN_MAX_PARTS	  16
#define PLAN_DEFAULT_XFER (1024 * 1024)
#define PLAN_MAX_TESTS	  8
#define PLAN_MAX_NAMED	  32	     /* test and part names a command may give */
#define PLAN_AUTO	  UINT64_MAX /* buffer_offset: the fastest, calibrated at set-up */

/* The catalogue's parameters that a command-line option changed (the summary's "overrides"). */
enum plan_override {
	PLAN_OVERRIDE_COUNT = 0, /* "count": --count */
	PLAN_OVERRIDE_CHUNK,	 /* "chunk": --chunk */
	PLAN_OVERRIDE_FILE_SIZE, /* "file_size": --file-size */
	PLAN_OVERRIDE_PASSES,	 /* "passes": --passes */
	PLAN_NOVERRIDES
};

struct plan_part {
	const struct part_def *def;
	const struct bench_ops *ops; /* its kind, resolved when the plan is built */
	struct part_params p;
};

struct plan_test {
	const struct test_def *def;
	uint64_t file;	      /* replica size (0 for test 4) */
	char replica[64];     /* replica file name in --dir, "" for test 4 */
	size_t first, nparts; /* its parts: plan.parts[first .. first+nparts-1] */
	bool partial;	      /* named by its parts ("2b"), not as a whole */
	bool may_create;      /* this command may create the replica when it is missing */
};

/* How the plan runs: everything run_execute needs besides the plan's parts. */
struct plan_run {
	uint64_t repeat;	/* repetitions of the whole plan */
	uint64_t repetition;	/* number of the first one */
	uint64_t xfer;		/* largest single read or write */
	uint64_t buffer_offset; /* of the I/O buffer past a page boundary, or PLAN_AUTO */
	uint64_t seed;		/* of every thread's random stream (given or drawn once) */
	const char *run_id;	/* --run-id: the run this command is part of, or NULL */
	bool verify, fsync, keep;
	bool force;	  /* run: --out may be replaced; prepare: every replica is recreated */
	bool keep_cache;  /* the node's cache of a replica is not dropped before a part */
	bool start_fixed; /* start_at is an absolute instant (--start-at) */
	double start_at;  /* the first part's start, when start_fixed */
	double start_in;  /* otherwise: this long after the first part could start */
	bool late_ok;	  /* a missed first start starts at once instead of failing */
	bool has_interval;
	double interval; /* part k starts at the first start + k x interval (has_interval) */
	/* Or part k starts at schedule[k] (--schedule, start_at is schedule[0]); NULL none. */
	const double *schedule;
	size_t nschedule;
};

/*
 * The whole of a command's run: what was asked (command, scale, the names given, what was
 * overridden), the tests and parts it came to, and how they run. The summary, `info`, `check`
 * and the dry run write from a plan and the results, never from the options.
 */
struct plan {
	enum command cmd; /* run, prepare or clean (CMD_NONE: a plan of no command) */
	enum scale scale;
	const char *named[PLAN_MAX_NAMED]; /* the tests and parts as given, "all" included */
	size_t nnamed;
	bool overridden[PLAN_NOVERRIDES]; /* by enum plan_override */
	struct plan_test tests[PLAN_MAX_TESTS];
	size_t ntests;
	struct plan_part parts[PLAN_MAX_PARTS];
	size_t nparts;
	struct plan_run run;
};

extern const struct test_def plan_tests[];
extern const size_t plan_ntests;
extern const struct part_def plan_parts[];
extern const size_t plan_nparts;

/*
 * Build the plan for the positional test names of o (1a 1b 2 2a ... 4c all) with o's scale
 * and overrides. Tests run in the order named; "all" is 1a 1b 2 3 4. A name given twice, or
 * a part together with its test, is an error; so are overrides when more than one part
 * (--count, --chunk, --passes) or more than one test (--file-size) is named, and parameters
 * that do not fit (a chunk larger than the replica, a replica size not a multiple of 4 KiB).
 * 0, or -EINVAL with a one-line reason in why.
 */
int plan_build(const struct options *o, struct plan *plan, char *why, size_t whylen);

/*
 * The plan of `run all` at a scale with the default settings and every replica creatable:
 * what a full run and the prepares before it need (the node check's space estimate).
 */
int plan_build_full(enum scale scale, struct plan *plan, char *why, size_t whylen);

/*
 * The plan of one test that is not in the catalogue (the node check's probe): its nparts
 * parts at scale, its replica named replica, default settings (one repetition, a start as
 * soon as the threads are ready, xfer 1 MiB) for the caller to change in plan->run.
 */
int plan_build_test(const struct test_def *t, const struct part_def *parts, size_t nparts,
		    enum scale scale, const char *replica, struct plan *plan, char *why,
		    size_t whylen);

/*
 * The names a command accepts, from the catalogue, space-separated, each test followed by
 * its parts (a one-part test of the part's name once). in_all: the tests of `run all`, then
 * "all" ("1a 1b 2 2a 2b 2c 3 3a 3b 4 4a 4b 4c all"); otherwise the others ("null").
 */
void plan_names(bool in_all, char *buf, size_t len);

/*
 * The names of the catalogue's tests (parts) that pick says yes to, for messages: "1a",
 * "1a and 1b", "1a, 1b and 2"; "" when none.
 */
void plan_join_tests(bool (*pick)(const struct test_def *t), char *buf, size_t len);
void plan_join_parts(bool (*pick)(const struct part_def *d), char *buf, size_t len);

/*
 * Whether s can be a run id (--run-id, a launcher's): 1 to PATTERN_RUN_ID_MAX letters, digits,
 * '.', '_' or '-', not starting with '.' or '-', without "..".
 */
bool plan_run_id_ok(const char *s);

/* "count", "chunk", "file_size", "passes": the summary's words of an override. */
const char *plan_override_name(enum plan_override o);

/* "node_cache", "server_cache", "server_disk"; NULL for PLAN_TIER_NONE (JSON null). */
const char *plan_tier_name(enum plan_tier tier);

#endif
