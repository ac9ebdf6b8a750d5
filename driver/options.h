/* SPDX-License-Identifier: MIT */
/*
 * The command line: subcommands, and the options as one declarative table that drives
 * parsing, defaults, environment variables, range checks and --help.
 */
#ifndef STAGEBENCH_OPTIONS_H
#define STAGEBENCH_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "driver/enums.h"

#define OPTIONS_MAX_TESTS 32
#define OPTIONS_MAX_CPUS  4096
/* The value of an OPT_UINT option given as its word (choices): --buffer-offset auto. */
#define OPTIONS_AUTO UINT64_MAX

struct options {
	enum command cmd;
	const char *tests[OPTIONS_MAX_TESTS]; /* positional arguments */
	size_t ntests;

	const char *dir;
	enum scale scale;
	uint64_t threads;
	const char *cpus_text;
	unsigned cpus[OPTIONS_MAX_CPUS];
	size_t ncpus;
	double start_at;
	double start_in;
	double interval;
	uint64_t repeat;
	uint64_t repetition; /* number of the first repetition */
	const char *run_id;  /* run, prepare: --run-id */
	uint64_t xfer;
	uint64_t seed;
	const char *node;
	const char *out;
	enum format format;
	uint64_t count;
	uint64_t chunk;
	uint64_t file_size;
	uint64_t passes;
	uint64_t buffer_offset; /* bytes past a page boundary, or OPTIONS_AUTO */
	const char *detach;	/* run: the state directory of an armed run */
	double lease;		/* run --detach: the lease's length, seconds (set_lease) */
	enum stop_sig signal;	/* stop */
	double wait;		/* stop: how long to wait for the summary */
	bool kill;		/* stop: SIGKILL a run still there after --wait */
	/* run: "T1,T2,...", the start instant of every part */
	const char *schedule;
	bool verify, fsync, require_ntp, late_ok, dry_run, force, keep, quiet, verbose;
	bool keep_cache; /* run: no drop of this node's cache of a replica before a part */
	bool progress, no_progress;
	bool compact; /* info --format json: one line (stagebench.info-brief/1) */
	bool clock;   /* status --format json: then the clock protocol (clockcmd.h) */
	bool renew;   /* status: renew the armed run's lease */
	bool help, version;
	bool health;	     /* check --health: judge the summaries under results */
	const char *results; /* check --health */
	double max_age;	     /* check --health: seconds */

	/* Which options were given (on the command line or through the environment). */
	bool set_start_at, set_start_in, set_interval, set_seed, set_count, set_chunk;
	bool set_file_size, set_passes, set_threads, set_cpus, set_dir, set_lease;
};

/*
 * Parse argv into o (defaults first, then environment, then arguments). On error returns
 * -EINVAL with a one-line message in why (naming the option and the accepted form).
 */
int options_parse(int argc, char **argv, struct options *o, char *why, size_t whylen);

/* Print the usage of a command (CMD_NONE: the general usage) generated from the table. */
void options_help(enum command cmd, FILE *f);

/*
 * The numeric options of cmd (count, integer, size or seconds) as a JSON array of {"option",
 * "type", "min", "max", "scope"}: the catalogue's "options".
 */
struct json;
void options_ranges_json(struct json *j, enum command cmd);

/* Print the bash completion script of stagebench, generated from the table and catalogue. */
void options_completion(FILE *f);

/* Whether s can name a node: 1 to 64 of [A-Za-z0-9._-], not starting with '.' or '-'. */
bool options_node_name_ok(const char *s);

/* Format a one-line reason into why (the parser's and the plan's error messages). */
void options_why(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
