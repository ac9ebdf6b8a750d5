/* SPDX-License-Identifier: MIT */
/*
 * The option table: one row per option, with its name, the type of its argument, its range,
 * default, environment variable, the commands that take it, and its help. The parser
 * (options.c), --help (options_help.c) and the completion (options_completion.c) read it.
 */
#include "driver/options_table.h"

#define GiB_ (1024.0 * 1024.0 * 1024.0)

/* The word --buffer-offset takes for OPTIONS_AUTO. */
static const char *const options_auto[] = {"auto", NULL};

/* The formats each command writes on stdout (--format): any other is refused. */
#define FORMAT_BIT(f) (1u << FORMAT_##f)
static const unsigned options_formats[CMD_COUNT] = {
    [CMD_RUN] = FORMAT_BIT(TEXT) | FORMAT_BIT(JSON) | FORMAT_BIT(CSV),
    [CMD_LIST] = FORMAT_BIT(TEXT) | FORMAT_BIT(JSON) | FORMAT_BIT(CSV),
    [CMD_INFO] = FORMAT_BIT(TEXT) | FORMAT_BIT(JSON),
    [CMD_CHECK] = FORMAT_BIT(TEXT) | FORMAT_BIT(JSON) | FORMAT_BIT(CSV),
    [CMD_STATUS] = FORMAT_BIT(TEXT) | FORMAT_BIT(JSON) | FORMAT_BIT(CSV),
    [CMD_STOP] = FORMAT_BIT(TEXT) | FORMAT_BIT(JSON),
};

/* One row per option reads better than what the formatter makes of the table. */
/* clang-format off */
/* A flag takes no argument, has no range, default or environment variable, and sets a bool. */
#define FLAG(name, f, cmds, help) \
	{name, OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(f), NOSET, cmds, help, OPT_SCOPE_RUN, 0, NULL}

const struct opt_def options_table[] = {
	{"dir", OPT_STRING, "DIR", 0, 0, NULL, NULL, "STAGEBENCH_DIR", FIELD(dir), FIELD(set_dir),
	 C_DIR, "working directory on the node's /stage server", OPT_SCOPE_RUN, 0, NULL},
	{"scale", OPT_CHOICE, "SCALE", 0, 0, enums_scales, "spec", "STAGEBENCH_SCALE",
	 FIELD(scale), NOSET, C_RUN | C_PREP | C_CLEAN | C_LIST | C_INFO | C_CHECK,
	 "file sizes and counts: the spec's, small (a whole run in about 30 s on 2 cores), tiny (tests)",
	 OPT_SCOPE_RUN, 0, NULL},
	{"threads", OPT_COUNT, "N", 1, OPTIONS_MAX_CPUS, NULL, NULL, NULL, FIELD(threads),
	 FIELD(set_threads), C_RUN | C_PREP | C_INFO | C_CHECK,
	 "use the first N allowed cores (default: one thread per allowed core)", OPT_SCOPE_RUN, 0, NULL},
	{"cpus", OPT_CPULIST, "LIST", 0, 0, NULL, NULL, NULL, FIELD(cpus_text), FIELD(set_cpus),
	 C_RUN | C_PREP | C_INFO | C_CHECK, "run one thread on each of these CPUs (\"0-3,8\"), one per core",
	 OPT_SCOPE_RUN, 0, NULL},
	{"start-at", OPT_SECONDS, "EPOCH", 1, 1e11, NULL, NULL, NULL, FIELD(start_at),
	 FIELD(set_start_at), C_RUN, "start the timed part at this wall-clock instant (UTC seconds)",
	 OPT_SCOPE_RUN, 0, NULL},
	{"start-in", OPT_SECONDS, "SECONDS", 0, 86400, NULL, "5", NULL, FIELD(start_in),
	 FIELD(set_start_in), C_RUN,
	 "start this many seconds after set-up (once any missing replica is created)",
	 OPT_SCOPE_RUN, 0, NULL},
	{"interval", OPT_SECONDS, "SECONDS", 0.001, 86400, NULL, NULL, NULL, FIELD(interval),
	 FIELD(set_interval), C_RUN, "start part k at T + k*SECONDS (the same grid on every node)",
	 OPT_SCOPE_RUN, 0, NULL},
	{"schedule", OPT_STRING, "T1,T2,...", 0, 0, NULL, NULL, NULL, FIELD(schedule), NOSET, C_RUN,
	 "start part k at the k-th instant (UTC seconds), one per part of the run", OPT_SCOPE_RUN, 0, NULL},
	{"repeat", OPT_COUNT, "K", 1, 10000, NULL, "1", NULL, FIELD(repeat), NOSET, C_RUN,
	 "run each test K times, recreating the replicas of 1a, 1b and 2 in between",
	 OPT_SCOPE_RUN, 0, NULL},
	{"repetition", OPT_UINT, "R", 1, 1000000, NULL, "1", NULL, FIELD(repetition), NOSET,
	 C_RUN | C_PREP,
	 "number of the first repetition, for launchers that run one per invocation (prepare: the one its replicas are for)",
	 OPT_SCOPE_RUN, 0, NULL},
	{"run-id", OPT_STRING, "ID", 0, 0, NULL, NULL, NULL, FIELD(run_id), NOSET, C_RUN | C_PREP,
	 "the run this command is part of (a launcher's run id), in the summary and in the replicas it creates (default: its own run tag)",
	 OPT_SCOPE_RUN, 0, NULL},
	{"xfer", OPT_SIZE, "SIZE", 4096, GiB_, NULL, "1MiB", NULL, FIELD(xfer), NOSET,
	 C_RUN | C_PREP | C_CHECK, "largest single read or write", OPT_SCOPE_RUN, 0, NULL},
	{"seed", OPT_UINT, "N", 0, 18446744073709551615.0, NULL, NULL, NULL, FIELD(seed),
	 FIELD(set_seed), C_RUN, "seed of the random offsets (default: a random seed, recorded)",
	 OPT_SCOPE_RUN, 0, NULL},
	{"node", OPT_NAME, "NAME", 0, 0, NULL, NULL, "STAGEBENCH_NODE", FIELD(node), NOSET,
	 C_RUN | C_PREP | C_INFO | C_CHECK | C_CLOCK, "name of this node in file names and the summary (default: host name)",
	 OPT_SCOPE_RUN, 0, NULL},
	{"out", OPT_STRING, "FILE", 0, 0, NULL, NULL, NULL, FIELD(out), NOSET, C_RUN,
	 "write the JSON summary to FILE (atomically)", OPT_SCOPE_RUN, 'o', NULL},
	{"format", OPT_CHOICE, "FMT", 0, 0, enums_formats, "text", NULL, FIELD(format), NOSET,
	 C_RUN | C_LIST | C_INFO | C_CHECK | C_STAT | C_STOP, "what to print on stdout", OPT_SCOPE_RUN, 0,
	 options_formats},
	{"detach", OPT_STRING, "STATE_DIR", 0, 0, NULL, NULL, NULL, FIELD(detach), NOSET, C_RUN,
	 "arm the run: set up, then detach and wait for the start; its state in STATE_DIR",
	 OPT_SCOPE_RUN, 0, NULL},
	{"lease", OPT_SECONDS, "SECONDS", 5, 86400, NULL, NULL, NULL, FIELD(lease), FIELD(set_lease),
	 C_RUN, "--detach: the run goes on only while its launcher renews this lease (status --renew); else it stops, orphaned (exit 4)",
	 OPT_SCOPE_RUN, 0, NULL},
	{"signal", OPT_CHOICE, "SIG", 0, 0, enums_signals, "INT", NULL, FIELD(signal), NOSET, C_STOP,
	 "the signal that stops the armed run", OPT_SCOPE_RUN, 0, NULL},
	{"wait", OPT_SECONDS, "SECONDS", 0, 3600, NULL, "30", NULL, FIELD(wait), NOSET, C_STOP,
	 "how long to wait for the stopped run's summary", OPT_SCOPE_RUN, 0, NULL},
	{"count", OPT_COUNT, "N", 1, 1e12, NULL, NULL, NULL, FIELD(count), FIELD(set_count), C_RUN,
	 "override N (chunks or files) of the one part run", OPT_SCOPE_PART, 0, NULL},
	{"chunk", OPT_SIZE, "SIZE", 1, 1099511627776.0, NULL, NULL, NULL, FIELD(chunk),
	 FIELD(set_chunk), C_RUN, "override M (chunk or file size) of the one part run",
	 OPT_SCOPE_PART, 0, NULL},
	{"file-size", OPT_SIZE, "SIZE", 4096, 1125899906842624.0, NULL, NULL, NULL,
	 FIELD(file_size), FIELD(set_file_size), C_RUN | C_PREP | C_CLEAN,
	 "override the replica size of the one test named", OPT_SCOPE_TEST, 0, NULL},
	{"passes", OPT_COUNT, "K", 1, 1e9, NULL, NULL, NULL, FIELD(passes), FIELD(set_passes), C_RUN,
	 "override the passes over the replica (1a, 1b)", OPT_SCOPE_PART, 0, NULL},
	{"buffer-offset", OPT_UINT, "BYTES", 0, 65535, options_auto, "auto", NULL, FIELD(buffer_offset),
	 NOSET, C_RUN | C_INFO | C_CHECK,
	 "the I/O buffer's offset from a page boundary (auto: the fastest, calibrated at set-up)",
	 OPT_SCOPE_RUN, 0, NULL},
	FLAG("verify", verify, C_RUN, "check the header of every 4 KiB block read"),
	FLAG("fsync", fsync, C_RUN, "fsync every file written by test 4 before closing it"),
	FLAG("keep", keep, C_RUN, "keep the files written by test 4"),
	FLAG("keep-cache", keep_cache, C_RUN,
	     "leave this node's cached pages of a replica before each part (the spec wants them dropped)"),
	FLAG("require-ntp", require_ntp, C_RUN,
	     "fail (exit 3) when the clock is not NTP-synchronized"),
	FLAG("late-ok", late_ok, C_RUN,
	     "when the start instant is missed, start at once and mark the part late"),
	FLAG("health", health, C_CHECK,
	     "run nothing: judge this node from its latest summaries under --results (Slurm, NHC); exit 0 healthy, 1 not (or no answer), 2 no usable --results, 3 no recent data"),
	{"results", OPT_STRING, "DIR", 0, 0, NULL, NULL, "STAGEBENCH_RESULTS", FIELD(results), NOSET,
	 C_CHECK, "--health: where this node's summaries are (DIR/NODE.json, DIR/RUN/NODE.PART.repK.json)",
	 OPT_SCOPE_RUN, 0, NULL},
	{"max-age", OPT_SECONDS, "SECONDS", 1, 31536000, NULL, "93600", NULL, FIELD(max_age), NOSET,
	 C_CHECK, "--health: summaries older than this are no recent data (93600: 26 h)",
	 OPT_SCOPE_RUN, 0, NULL},
	FLAG("compact", compact, C_INFO,
	     "with --format json: one line of what a launcher reads (stagebench.info-brief/1: the threads as CPU lists, the files as a count)"),
	FLAG("clock", clock, C_STAT,
	     "with --format json: after the state line, answer timestamps on stdin as `stagebench clock` does (the launcher's offset at every status round)"),
	FLAG("kill", kill, C_STOP,
	     "a run still there after --wait (stopped, hung) is killed with SIGKILL and its state made final: killed (exit code 137)"),
	FLAG("renew", renew, C_STAT,
	     "renew the armed run's --lease for another lease length from now (a lapsed one stays lapsed: exit 3)"),
	FLAG("dry-run", dry_run, C_RUN | C_PREP | C_CLEAN, "print the plan and touch nothing"),
	FLAG("force", force, C_RUN | C_PREP,
	     "replace an existing --out file; prepare: recreate test 3's replica"),
	FLAG("progress", progress, C_RUN,
	     "a live line on stderr while a part runs (default: when stderr is a terminal)"),
	FLAG("no-progress", no_progress, C_RUN, "no live line, even on a terminal"),
	FLAG("quiet", quiet, C_ALL, "print errors only on stderr"),
	FLAG("verbose", verbose, C_ALL, "print what is being done on stderr"),
	FLAG("help", help, C_ALL, "show this help"),
};
/* clang-format on */

const size_t options_table_count = sizeof(options_table) / sizeof(options_table[0]);
