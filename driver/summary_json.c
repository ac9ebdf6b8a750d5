/* SPDX-License-Identifier: MIT */
/*
 * The node summary as JSON ("stagebench.node/3"), and the blocks it shares with the JSON of
 * `info` and `check`. The field names are the contract of DESIGN.md and README.md.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "buildinfo.h" /* generated at build time: scripts/cmake/buildinfo.cmake */
#include "driver/note.h"
#include "driver/summary.h"
#include "util/json.h"

const char *summary_build_id(void)
{
	static char id[64];
	const char *what[] = {
	    STAGEBENCH_DESCRIBE[0] ? STAGEBENCH_DESCRIBE : STAGEBENCH_SOURCE_SHA256, __VERSION__};
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	if (id[0])
		return id;
	for (size_t k = 0; k < sizeof(what) / sizeof(what[0]); k++)
		for (const char *c = what[k]; *c; c++)
			h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	snprintf(id, sizeof(id), "%s-%016llx", STAGEBENCH_VERSION, (unsigned long long)h);
	return id;
}

/* The parameters of the plan that a command-line option overrode, as a JSON list. */
static void summary_json_overrides(struct json *j, const struct plan *plan)
{
	json_array_begin(j);
	for (int k = 0; k < PLAN_NOVERRIDES; k++) {
		if (plan->overridden[k])
			json_string(j, plan_override_name((enum plan_override)k));
	}
	json_array_end(j);
}

/* A string, or null when it is empty. */
static void summary_json_text(struct json *j, const char *key, const char *text)
{
	json_kv_string(j, key, text && text[0] ? text : NULL);
}

/*
 * The build: version and id, what it was built from (git describe of the tree, whether a
 * tracked file was modified, the SHA-256 of its sources, all taken at build time), and the
 * SHA-256 of the executable that runs (null where the command did not read it).
 */
static void summary_json_build(struct json *j, const struct node_result *res)
{
	json_key(j, "build");
	json_object_begin(j);
	json_kv_string(j, "version", STAGEBENCH_VERSION);
	json_kv_string(j, "id", summary_build_id());
	summary_json_text(j, "describe", STAGEBENCH_DESCRIBE);
	json_key(j, "dirty");
	if (STAGEBENCH_DIRTY < 0)
		json_null(j);
	else
		json_bool(j, STAGEBENCH_DIRTY > 0);
	json_kv_string(j, "source_sha256", STAGEBENCH_SOURCE_SHA256);
	summary_json_text(j, "exe_sha256", res->exe_sha256);
	json_object_end(j);
}

/* An integer instant, or null when it is 0 (none). */
static void summary_json_instant(struct json *j, const char *key, int64_t ns)
{
	json_key(j, key);
	if (ns)
		json_int(j, ns);
	else
		json_null(j);
}

/* key: {"min", "median", "max"}, or null when n is 0. */
static void summary_json_mmm(struct json *j, const char *key, const struct stats_summary *s,
			     size_t n)
{
	json_key(j, key);
	if (!n) {
		json_null(j);
		return;
	}
	json_object_begin(j);
	json_kv_double(j, "min", s->min);
	json_kv_double(j, "median", s->median);
	json_kv_double(j, "max", s->max);
	json_object_end(j);
}

/* A time that may be unknown (< 0): the number or null. */
static void summary_json_maybe(struct json *j, const char *key, double v)
{
	json_key(j, key);
	if (v >= 0)
		json_double(j, v);
	else
		json_null(j);
}

/* key: [lines...] */
static void summary_json_lines(struct json *j, const char *key, char *const *lines, size_t n)
{
	json_key(j, key);
	json_array_begin(j);
	for (size_t i = 0; i < n; i++)
		json_string(j, lines[i]);
	json_array_end(j);
}

/* key: {"min": min, "max": max} in integer epoch ns, or null when min is 0 (none seen). */
static void summary_json_ns_range(struct json *j, const char *key, int64_t min, int64_t max)
{
	json_key(j, key);
	if (min) {
		json_object_begin(j);
		json_kv_int(j, "min", min);
		json_kv_int(j, "max", max);
		json_object_end(j);
	} else {
		json_null(j);
	}
}

/* Releases and first operations of the threads, as integer epoch ns (min, max). */
static void summary_json_instants(struct json *j, const struct part_result *pr)
{
	summary_json_ns_range(j, "release_at_ns", pr->release_min_ns, pr->release_max_ns);
	summary_json_ns_range(j, "first_io_at_ns", pr->first_io_min_ns, pr->first_io_max_ns);
}

/*
 * The node's cache of the replica at the release: what was expected ("cold" for a part that
 * reads a replica), whether this node dropped it, and the fraction still cached, or null and
 * why when it could not be measured.
 */
static void summary_json_cache(struct json *j, const struct part_result *pr)
{
	json_key(j, "cache_residency");
	if (pr->residency >= 0)
		json_double(j, pr->residency);
	else
		json_null(j);
	json_key(j, "cache_residency_error");
	if (pr->residency < 0 && pr->residency_why) {
		char why[128];

		snprintf(why, sizeof(why), "%s%s", pr->residency_why == ENODEV ? "mmap: " : "",
			 strerror(pr->residency_why));
		json_string(j, why);
	} else {
		json_null(j);
	}
	json_kv_bool(j, "cache_dropped", pr->cache_dropped);
	json_kv_string(j, "cache_expected", pr->cache_cold_expected ? "cold" : NULL);
	json_kv_bool(j, "replica_changed", pr->replica_changed);
	/* The run and repetition the replica read was created for (null: not recorded in it). */
	json_key(j, "replica_origin");
	if (pr->has_origin) {
		json_object_begin(j);
		json_kv_string(j, "run_id", pr->origin.run_id);
		json_kv_uint(j, "repetition", pr->origin.repetition);
		json_object_end(j);
	} else {
		json_null(j);
	}
}

/* The merged latency histogram: its scheme and its non-empty buckets, one per line. */
static void summary_json_hist(struct json *j, const struct hist *h)
{
	json_key(j, "latency_hist");
	json_object_begin(j);
	json_kv_string(j, "unit", "ns");
	json_kv_uint(j, "sub_bits", HIST_SUB_BITS);
	json_kv_uint(j, "max_bits", HIST_MAX_BITS);
	json_kv_uint(j, "count", h->count);
	json_kv_uint(j, "min_ns", h->count ? h->min_ns : 0);
	json_kv_uint(j, "max_ns", h->max_ns);
	json_kv_uint(j, "sum_ns", h->sum_ns);
	json_key(j, "buckets"); /* [index, count] of the non-empty buckets */
	json_array_begin(j);
	bool pretty = j->pretty;
	j->pretty = false;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		if (!h->buckets[i])
			continue;
		json_array_begin(j);
		json_uint(j, i);
		json_uint(j, h->buckets[i]);
		json_array_end(j);
	}
	json_array_end(j);
	j->pretty = pretty;
	json_object_end(j);
}

/* "error": the text or null, "reason": its token (null with no error; "other" if unsaid). */
static void summary_json_error(struct json *j, const char *error, enum reason reason)
{
	json_kv_string(j, "error", error[0] ? error : NULL);
	json_kv_string(j, "reason", error[0] ? reason_token(reason) : NULL);
}

/* Each thread of a part: where it ran, when it was released, its time and its error. */
static void summary_json_per_thread(struct json *j, const struct part_result *pr)
{
	char err[600];

	json_key(j, "per_thread");
	json_array_begin(j);
	for (size_t i = 0; pr->threads && i < pr->nthreads; i++) {
		const struct thread_result *r = &pr->threads[i];

		json_object_begin(j);
		json_kv_uint(j, "index", r->index);
		json_kv_uint(j, "cpu", r->cpu);
		json_kv_uint(j, "core", r->core);
		json_kv_double(j, "release_at", r->ran ? r->release_at : 0);
		json_kv_int(j, "release_at_ns", r->ran ? r->release_at_ns : 0);
		summary_json_instant(j, "first_io_at_ns", r->ran ? r->first_io_at_ns : 0);
		json_kv_double(j, "late_by_s", r->late_by_s);
		if (summary_timed_passes(pr)) {
			summary_json_maybe(j, "first_pass_s", r->first_pass_s);
			summary_json_maybe(j, "rest_pass_median_s", r->rest_pass_median_s);
		}
		json_kv_double(j, "time_s", r->time_s);
		json_kv_uint(j, "bytes", r->bytes);
		json_kv_uint(j, "ops", r->ops);
		json_kv_double(j, "deviation", summary_deviation(pr, r));
		if (r->rc) {
			note_worker_error(&r->err, err, sizeof(err));
			json_kv_string(j, "error", err);
			json_kv_string(j, "reason", reason_name(reason_of_worker(&r->err, r->ran)));
		} else {
			json_kv_string(j, "error", NULL);
			json_kv_string(j, "reason", NULL);
		}
		json_object_end(j);
	}
	json_array_end(j);
}

/* A part; threads: how many the plan runs it on. */
static void summary_json_part(struct json *j, const struct part_result *pr, size_t threads)
{
	double t = pr->node_time_s;

	json_object_begin(j);
	json_kv_string(j, "part", pr->pp->def->name);
	json_kv_string(j, "kind", pr->pp->def->kind);
	summary_json_unit(j, pr->pp->ops);
	json_kv_string(j, "file", pr->file);
	summary_json_params(j, &pr->pp->p);
	json_kv_uint(j, "threads", threads);
	json_kv_uint(j, "xfer_bytes", pr->xfer);
	json_kv_uint(j, "generation", pr->generation);
	json_kv_double(j, "start_at", pr->start_at);
	json_kv_double(j, "scheduled_at", pr->scheduled_at);
	json_kv_int(j, "start_at_ns", pr->start_at_ns);
	json_kv_int(j, "scheduled_at_ns", pr->scheduled_at_ns);
	summary_json_instants(j, pr);
	json_kv_bool(j, "late", pr->late || pr->status == PART_LATE || pr->late_by_s > 0);
	json_kv_double(j, "late_by_s", pr->late_by_s);
	json_kv_double(j, "clock_step_s", pr->clock_step_s);
	json_kv_double(j, "clock_step_total_s", pr->clock_step_total_s);
	json_kv_double(j, "node_time_s", t);
	json_kv_double(j, "release_spread_s", pr->release_spread_s);
	summary_json_maybe(j, "io_start_spread_s", pr->io_start_spread_s);
	json_key(j, "thread_time_s");
	json_object_begin(j);
	json_kv_double(j, "min", pr->thread_time.min);
	json_kv_double(j, "median", pr->thread_time.median);
	json_kv_double(j, "max", pr->thread_time.max);
	json_object_end(j);
	json_kv_uint(j, "bytes", pr->bytes);
	json_kv_uint(j, "ops", pr->ops);
	json_kv_uint(j, "pages", pr->pages);
	json_kv_uint(j, "files", pr->files);
	json_kv_uint(j, "retries", pr->retries);
	/* 1b touches one byte a page: its bytes are mapped, not moved, and named so. */
	json_key(j, "bandwidth_Bps");
	if (summary_counts_pages(pr)) {
		json_null(j);
		json_kv_uint(j, "mapped_bytes", pr->bytes);
		json_kv_double(j, "mapped_Bps", summary_rate(pr->bytes, t));
	} else {
		json_double(j, summary_rate(pr->bytes, t));
	}
	json_kv_double(j, "ops_per_s", summary_rate(pr->ops, t));
	json_kv_double(j, "pages_per_s", summary_rate(pr->pages, t));
	json_kv_double(j, "files_per_s", summary_rate(pr->files, t));
	if (summary_timed_passes(pr)) {
		summary_json_mmm(j, "first_pass_s", &pr->first_pass, pr->nfirst_pass);
		summary_json_mmm(j, "rest_pass_median_s", &pr->rest_pass, pr->nrest_pass);
	}
	json_key(j, "latency_s");
	json_object_begin(j);
	static const struct {
		const char *name;
		double q;
	} qs[] = {{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}};
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
		json_kv_double(j, qs[i].name,
			       pr->hist ? (double)hist_quantile(pr->hist, qs[i].q) / 1e9 : 0);
	json_kv_double(j, "max", pr->hist ? (double)pr->hist->max_ns / 1e9 : 0);
	json_object_end(j);
	if (pr->hist)
		summary_json_hist(j, pr->hist);
	summary_json_cache(j, pr);
	json_kv_bool(j, "verified", pr->verified && pr->status <= PART_LATE);
	json_kv_bool(j, "fsync", pr->fsync);
	json_kv_string(j, "status", result_status_name(pr->status));
	summary_json_error(j, pr->error, pr->reason);
	summary_json_lines(j, "warnings", pr->warnings, pr->nwarnings);
	summary_json_per_thread(j, pr);
	json_object_end(j);
}

void summary_json_unit(struct json *j, const struct bench_ops *ops)
{
	enum bench_unit unit = ops ? ops->unit : BENCH_UNIT_OPS;

	json_kv_string(j, "counted", bench_unit_counted(unit));
	json_kv_string(j, "rate_unit", bench_unit_rate(unit));
}

void summary_json_params(struct json *j, const struct part_params *p)
{
	json_kv_uint(j, "count", p->count);
	json_kv_uint(j, "chunk_bytes", p->chunk);
	json_kv_uint(j, "file_bytes", p->file);
	json_kv_uint(j, "passes", p->passes);
}

void summary_json_head(struct json *j, const char *schema, const struct node_result *res)
{
	json_object_begin(j);
	json_kv_string(j, "schema", schema);
	json_kv_string(j, "version", STAGEBENCH_VERSION);
	json_kv_string(j, "node", res->node);
	json_kv_string(j, "host", res->host);
	summary_json_build(j, res);
}

void summary_json_fs(struct json *j, const struct node_result *res, bool totals)
{
	const struct fs_info *fs = &res->fs;

	json_object_begin(j);
	json_kv_string(j, "type", res->fs_ok ? fs->type : NULL);
	json_kv_string(j, "source", res->fs_ok ? fs->source : NULL);
	json_kv_string(j, "mountpoint", res->fs_ok ? fs->mountpoint : NULL);
	json_kv_string(j, "options", res->fs_ok ? fs->options : NULL);
	if (totals)
		json_kv_uint(j, "bytes_total", fs->bytes_total);
	json_kv_uint(j, "bytes_free", fs->bytes_free);
	if (totals)
		json_kv_uint(j, "inodes_total", fs->inodes_total);
	json_kv_uint(j, "inodes_free", fs->inodes_free);
	json_object_end(j);
}

void summary_json_clock(struct json *j, const struct node_result *res, bool now)
{
	json_object_begin(j);
	json_kv_bool(j, "ntp_synchronized", res->ntp_ok && res->ntp.synchronized);
	json_kv_int(j, "maxerror_us", res->ntp.maxerror_us);
	json_kv_int(j, "esterror_us", res->ntp.esterror_us);
	json_kv_int(j, "state", res->ntp.state);
	json_kv_string(j, "clocksource", res->ntp.clocksource);
	if (now)
		json_kv_double(j, "now", clock_wall());
	json_object_end(j);
}

void summary_json_buffer(struct json *j, const struct bufplace *bp)
{
	json_key(j, "buffer");
	json_object_begin(j);
	json_kv_uint(j, "offset", bp->offset);
	json_kv_string(j, "chosen_by",
		       bp->calibrated ? "calibration"
		       : bp->fixed    ? "option"
				      : "fallback");
	json_key(j, "calibration");
	if (bp->calibrated) {
		json_object_begin(j);
		json_kv_uint(j, "bytes", bp->bytes);
		json_kv_double(j, "seconds", bp->calib_s);
		json_key(j, "candidates");
		json_array_begin(j);
		for (size_t i = 0; i < BUFPLACE_NCAND; i++) {
			json_object_begin(j);
			json_kv_uint(j, "offset", bufplace_candidates[i]);
			json_kv_double(j, "copy_Bps", bp->rate_Bps[i]);
			json_kv_double(j, "wins", bp->wins[i]);
			json_object_end(j);
		}
		json_array_end(j);
		json_object_end(j);
	} else {
		json_null(j);
	}
	json_object_end(j);
}

void summary_json_threads(struct json *j, const struct topo_plan *tp, bool smt)
{
	json_array_begin(j);
	for (size_t i = 0; i < tp->nslots; i++) {
		json_object_begin(j);
		json_kv_uint(j, "index", i);
		json_kv_uint(j, "cpu", tp->slots[i].pu);
		json_kv_uint(j, "core", tp->slots[i].core);
		json_kv_uint(j, "package", tp->slots[i].package);
		if (smt)
			json_kv_uint(j, "smt", tp->slots[i].smt);
		json_object_end(j);
	}
	json_array_end(j);
}

/*
 * The node's cores and how many the run used: online (the machine's), allowed (by the binding it
 * inherited: cpuset, taskset, Slurm), used (its threads, one a core) and how they were chosen.
 */
static void summary_json_cores(struct json *j, const struct node_result *res)
{
	json_key(j, "cores");
	json_object_begin(j);
	json_kv_uint(j, "online", res->tplan.machine_cores);
	json_kv_uint(j, "allowed", res->tplan.allowed_cores);
	json_kv_uint(j, "used", res->tplan.nslots);
	json_kv_string(j, "chosen_by", res->cores_chosen_by);
	json_object_end(j);
}

int summary_json(const struct node_result *res, const struct plan *plan, FILE *f, bool pretty)
{
	struct json j;

	json_init(&j, f, pretty);
	summary_json_head(&j, SUMMARY_SCHEMA, res);
	json_kv_string(&j, "dir", res->dir);
	json_key(&j, "fs");
	summary_json_fs(&j, res, false);
	json_key(&j, "clock");
	summary_json_clock(&j, res, false);
	json_key(&j, "run");
	json_object_begin(&j);
	json_kv_string(&j, "command", enums_command_name(plan->cmd));
	json_key(&j, "tests");
	json_array_begin(&j);
	for (size_t i = 0; i < plan->nnamed; i++)
		json_string(&j, plan->named[i]);
	json_array_end(&j);
	json_kv_string(&j, "scale", enums_scale_name(plan->scale));
	json_kv_uint(&j, "seed", res->seed);
	json_kv_uint(&j, "repeat", plan->run.repeat);
	json_kv_uint(&j, "first_repetition", plan->run.repetition);
	json_kv_uint(&j, "xfer_bytes", plan->run.xfer);
	json_key(&j, "interval_s");
	if (plan->run.has_interval)
		json_double(&j, plan->run.interval);
	else
		json_null(&j);
	json_kv_double(&j, "started_at", res->started_at);
	json_kv_double(&j, "start_at", res->start_at);
	json_kv_string(&j, "run_tag", res->run_tag);
	json_kv_string(&j, "run_id", res->run_id);
	json_kv_bool(&j, "verify", plan->run.verify);
	json_kv_bool(&j, "fsync", plan->run.fsync);
	json_key(&j, "overrides");
	summary_json_overrides(&j, plan);
	json_object_end(&j);
	json_key(&j, "threads");
	summary_json_threads(&j, &res->tplan, false);
	summary_json_cores(&j, res);
	summary_json_buffer(&j, &res->bufplace);
	json_key(&j, "tests");
	json_array_begin(&j);
	for (size_t i = 0; i < res->ntests; i++) {
		const struct test_result *tr = &res->tests[i];

		json_object_begin(&j);
		json_kv_string(&j, "test", tr->pt->def->name);
		json_kv_string(&j, "title", tr->pt->def->title);
		json_kv_uint(&j, "repetition", tr->repetition);
		json_kv_double(&j, "result_s", tr->result_s);
		json_kv_string(&j, "status", result_status_name(tr->status));
		json_kv_uint(&j, "generation", tr->generation);
		json_kv_bool(&j, "prepared", tr->prepared);
		json_kv_double(&j, "prepare_s", tr->prepare_s);
		summary_json_error(&j, tr->error, tr->reason);
		json_key(&j, "parts");
		json_array_begin(&j);
		for (size_t k = 0; k < tr->nparts; k++)
			summary_json_part(&j, &res->parts[tr->first_part + k], res->tplan.nslots);
		json_array_end(&j);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_kv_string(&j, "status", summary_status_name(res->outcome));
	json_kv_int(&j, "exit_code", outcome_exit_code(res->outcome));
	summary_json_lines(&j, "errors", res->errors, res->nerrors);
	json_key(&j, "error_reasons"); /* one for each of "errors", in their order */
	json_array_begin(&j);
	for (size_t i = 0; i < res->nerrors; i++)
		json_string(&j, reason_token(res->error_reasons[i]));
	json_array_end(&j);
	summary_json_lines(&j, "warnings", res->warnings, res->nwarnings);
	json_object_end(&j);
	return json_finish(&j);
}
