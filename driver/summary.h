/* SPDX-License-Identifier: MIT */
/*
 * The node summary: a text table for people, JSON ("stagebench.node/3") for the collector,
 * CSV for spreadsheets; and the same three views of `info`.
 */
#ifndef STAGEBENCH_SUMMARY_H
#define STAGEBENCH_SUMMARY_H

#include <stdio.h>

#include "driver/plan.h"
#include "driver/result.h"
#include "util/json.h"

#define SUMMARY_SCHEMA "stagebench.node/3"
/* A thread whose time is more than this fraction off the part's median is marked. */
#define SUMMARY_OUTLIER 0.25

/*
 * The node summary of the run of plan, whose results are res: text, JSON (0, or -EIO when
 * writing failed) and CSV. Written from the plan and the results only.
 */
void summary_text(const struct node_result *res, FILE *f);
int summary_json(const struct node_result *res, const struct plan *plan, FILE *f, bool pretty);
void summary_csv(const struct node_result *res, FILE *f);
/*
 * The identity of this build, the same on every node that runs the same build: the version
 * and 16 hex digits of a hash of the tree it was built from (git describe at build time, or,
 * without git, the SHA-256 of its sources) and of the compiler. "0.1.0-9f2c...". What tells
 * two binaries apart is their content: the summary's build.exe_sha256.
 */
const char *summary_build_id(void);
/* Whether a part times passes over its replica with read (1a), or touches its pages (1b). */
bool summary_timed_passes(const struct part_result *pr);
bool summary_counts_pages(const struct part_result *pr);
/* What one of a part's operations is, for the units of ops/s: "pass", "chunk", "file". */
const char *summary_op_name(const struct part_result *pr);
/* The run's status word of the summary, the same in text and JSON: ok, failed, orphaned or
 * interrupted (the exit status tells the failures apart). */
const char *summary_status_name(enum outcome out);
/* n per second over seconds (0 when seconds is not positive). */
double summary_rate(uint64_t n, double seconds);
/* A thread's time relative to the part's median thread time: +0.31 is 31% slower. */
double summary_deviation(const struct part_result *pr, const struct thread_result *r);
/* The CPUs of a thread plan as a compact ascending list ("0-3,8"). */
void summary_cpus(const struct topo_plan *tp, char *buf, size_t len);
/* Its cores (logical core indexes) the same way. */
void summary_cores(const struct topo_plan *tp, char *buf, size_t len);
/*
 * The JSON values the summary shares with `info`: the filesystem of the directory (with
 * totals: bytes_total and inodes_total too), the clock and its NTP state (with now: the wall
 * clock's reading), the thread plan (with smt: each core's number of allowed PUs).
 */
void summary_json_fs(struct json *j, const struct node_result *res, bool totals);
/* Open the top object of a document of schema about res's node: schema, version, node, host. */
void summary_json_head(struct json *j, const char *schema, const struct node_result *res);
void summary_json_clock(struct json *j, const struct node_result *res, bool now);
void summary_json_threads(struct json *j, const struct topo_plan *tp, bool smt);
/* The one line on the clock and its NTP state. */
void summary_text_clock(const struct node_result *res, FILE *f);
/* One line on the placement of the I/O buffer and how it was chosen. */
void summary_buffer_line(const struct bufplace *bp, char *buf, size_t len);
/* A part's sizes at its scale: "count", "chunk_bytes", "file_bytes", "passes". */
void summary_json_params(struct json *j, const struct part_params *p);
/* What a part of this kind counts: "counted" ("bytes read") and "rate_unit" ("B/s"). */
void summary_json_unit(struct json *j, const struct bench_ops *ops);
/* The "buffer" object of the node summary and of info. */
void summary_json_buffer(struct json *j, const struct bufplace *bp);

#endif
