/* SPDX-License-Identifier: MIT */
/*
 * The views of list, info and the dry run. The JSON blocks they share with the summary
 * (clock, filesystem, threads) are the summary's writers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/inventory.h"
#include "driver/summary.h"
#include "driver/views.h"
#include "platform/clock.h"
#include "util/json.h"
#include "util/size.h"
#include "platform/replica_probe.h"

/* The stagebench files in the directory: how big, which generation, how old, how cached. */
static void views_info_files_text(const struct node_result *res, const struct inventory *inv,
				  FILE *f)
{
	char a[32];
	double now = clock_wall();

	fprintf(
	    f, "stagebench files in %s: %llu\n", res->dir,
	    (unsigned long long)(inv->nreplicas + inv->replicas_not_listed + inv->leftovers.count));
	for (size_t i = 0; i < inv->nreplicas; i++) {
		const struct inventory_entry *e = &inv->replicas[i];
		fprintf(f, "  %-9s %-28s %10s  created %6.0f s ago", "replica", e->name,
			size_format(e->size, a, sizeof(a)), now - e->mtime);
		if (e->ours && e->residency >= 0)
			fprintf(f, "  generation %llu, %.0f%% in page cache",
				(unsigned long long)e->generation, e->residency * 100.0);
		else if (e->ours) /* unknown is never a number */
			fprintf(f, "  generation %llu, page cache unknown",
				(unsigned long long)e->generation);
		else
			fprintf(f, "  not a valid stagebench file");
		fputc('\n', f);
	}
	if (inv->replicas_not_listed)
		fprintf(f, "  and %llu more files named like replicas, not listed\n",
			(unsigned long long)inv->replicas_not_listed);
	for (int k = INV_TEMP; k < INV_NKINDS; k++) {
		const struct inventory_sum *sum = &inv->left[k];
		if (!sum->count)
			continue;
		fprintf(f, "  %-9s %llu leftover%s, %s, oldest created %.0f s ago; e.g.",
			inventory_kind_name((enum inventory_kind)k), (unsigned long long)sum->count,
			sum->count == 1 ? "" : "s", size_format(sum->bytes, a, sizeof(a)),
			now - sum->oldest);
		for (size_t i = 0; i < sum->nexamples; i++)
			fprintf(f, "%s %s%s", i ? "," : "", sum->examples[i].name,
				sum->examples[i].ours ? "" : " (not stagebench's)");
		fputc('\n', f);
	}
}

static void views_info_entry_json(struct json *j, const struct inventory_entry *e, double now)
{
	json_object_begin(j);
	json_kv_string(j, "name", e->name);
	json_kv_string(j, "kind", inventory_kind_name(e->kind));
	json_kv_bool(j, "ours", e->ours);
	json_kv_uint(j, "bytes", e->size);
	if (e->kind == INV_REPLICA)
		json_kv_uint(j, "generation", e->generation);
	json_kv_double(j, "age_s", now - e->mtime);
	if (e->kind == INV_REPLICA) {
		json_key(j, "cache_residency");
		if (e->residency >= 0)
			json_double(j, e->residency);
		else
			json_null(j);
	}
	json_object_end(j);
}

/*
 * A sum of leftovers: count, bytes, age of the oldest (null when none), and examples; the
 * object is left open for the caller to add to and close.
 */
static void views_info_sum_json(struct json *j, const struct inventory_sum *sum, double now,
				bool examples)
{
	json_object_begin(j);
	json_kv_uint(j, "count", sum->count);
	json_kv_uint(j, "bytes", sum->bytes);
	json_key(j, "oldest_age_s");
	if (sum->count)
		json_double(j, now - sum->oldest);
	else
		json_null(j);
	if (examples) {
		json_key(j, "examples");
		json_array_begin(j);
		for (size_t i = 0; i < sum->nexamples; i++)
			views_info_entry_json(j, &sum->examples[i], now);
		json_array_end(j);
	}
}

/*
 * "files": the replicas (at most INVENTORY_MAX_LISTED, "files_not_listed" more); "leftovers":
 * everything else, summed by kind with a few examples: the document stays small whatever
 * the directory holds.
 */
static void views_info_files_json(struct json *j, const struct inventory *inv)
{
	double now = clock_wall();

	if (!inv) {
		json_key(j, "files");
		json_null(j);
		json_key(j, "files_not_listed");
		json_null(j);
		json_key(j, "leftovers");
		json_null(j);
		return;
	}
	json_key(j, "files");
	json_array_begin(j);
	for (size_t i = 0; i < inv->nreplicas; i++)
		views_info_entry_json(j, &inv->replicas[i], now);
	json_array_end(j);
	json_kv_uint(j, "files_not_listed", inv->replicas_not_listed);
	json_key(j, "leftovers");
	views_info_sum_json(j, &inv->leftovers, now, false);
	json_key(j, "kinds");
	json_object_begin(j);
	for (int k = INV_TEMP; k < INV_NKINDS; k++) {
		json_key(j, inventory_kind_name((enum inventory_kind)k));
		views_info_sum_json(j, &inv->left[k], now, true);
		json_object_end(j);
	}
	json_object_end(j);
	json_object_end(j);
}

/* "topology": the machine's PUs, and those this process may use. */
static void views_info_topology(struct json *j, const struct node_result *res,
				const char *allowed_cpus)
{
	const struct topo_plan *tp = &res->tplan;

	json_key(j, "topology");
	json_object_begin(j);
	json_kv_uint(j, "machine_pus", tp->machine_pus);
	json_kv_uint(j, "allowed_pus", tp->allowed_pus);
	json_kv_uint(j, "allowed_cores", tp->allowed_cores);
	json_kv_string(j, "allowed_cpus", allowed_cpus);
	json_kv_bool(j, "restricted", tp->restricted);
	json_object_end(j);
}

/* "clock" (with "now"), "dir", "dir_error" and "fs" of the directory's filesystem. */
static void views_info_dir(struct json *j, const struct node_result *res,
			   const struct inventory_report *rep)
{
	json_key(j, "clock");
	summary_json_clock(j, res, true);
	json_kv_string(j, "dir", rep ? res->dir : NULL);
	json_kv_string(j, "dir_error", rep && !rep->answered ? rep->why : NULL);
	json_key(j, "fs");
	if (rep && res->fs_ok)
		summary_json_fs(j, res, true);
	else
		json_null(j);
}

static int views_info_json(const struct node_result *res, const struct inventory_report *rep,
			   const char *allowed_cpus, FILE *f)
{
	const struct topo_plan *tp = &res->tplan;
	struct json j;

	json_init(&j, f, true);
	summary_json_head(&j, "stagebench.info/1", res);
	views_info_topology(&j, res, allowed_cpus);
	json_key(&j, "threads");
	summary_json_threads(&j, tp, true);
	views_info_dir(&j, res, rep);
	summary_json_buffer(&j, &res->bufplace);
	views_info_files_json(&j, rep && rep->listed ? &rep->inv : NULL);
	json_object_end(&j);
	return json_finish(&j);
}

/*
 * The brief info (--compact): one line whatever the node's cores or files, what a launcher's
 * info round keeps of each node. The thread plan is CPU lists, the files a count.
 */
static int views_info_brief(const struct node_result *res, const struct inventory_report *rep,
			    const char *allowed_cpus, FILE *f)
{
	static char cpus[VIEWS_CPULIST_MAX], cores[VIEWS_CPULIST_MAX];
	const struct topo_plan *tp = &res->tplan;
	struct json j;

	json_init(&j, f, false);
	summary_json_head(&j, VIEWS_INFO_BRIEF_SCHEMA, res);
	views_info_topology(&j, res, allowed_cpus);
	summary_cpus(tp, cpus, sizeof(cpus));
	summary_cores(tp, cores, sizeof(cores));
	json_key(&j, "threads");
	json_object_begin(&j);
	json_kv_uint(&j, "count", tp->nslots);
	json_kv_string(&j, "cpus", cpus);
	json_kv_string(&j, "cores", cores);
	json_object_end(&j);
	views_info_dir(&j, res, rep);
	json_key(&j, "leftovers");
	if (rep && rep->listed)
		json_uint(&j, rep->inv.leftovers.count);
	else
		json_null(&j);
	json_object_end(&j);
	return json_finish(&j);
}

int views_info(const struct node_result *res, const struct inventory_report *rep,
	       const char *allowed_cpus, enum format format, bool brief, FILE *f)
{
	if (format == FORMAT_JSON && brief)
		return views_info_brief(res, rep, allowed_cpus, f);
	const struct topo_plan *tp = &res->tplan;
	bool has_dir = rep != NULL;
	char a[32], b[32], line[256];

	if (format == FORMAT_JSON)
		return views_info_json(res, rep, allowed_cpus, f);
	fprintf(f, "stagebench %s on node %s (host %s)\n", STAGEBENCH_VERSION, res->node,
		res->host);
	fprintf(f, "topology: %zu PUs in the machine; allowed: CPUs %s (%zu PUs on %zu cores)%s\n",
		tp->machine_pus, allowed_cpus, tp->allowed_pus, tp->allowed_cores,
		tp->restricted ? ", restricted by the inherited binding" : "");
	fprintf(f, "thread plan: %zu thread%s\n", tp->nslots, tp->nslots == 1 ? "" : "s");
	for (size_t i = 0; i < tp->nslots; i++)
		fprintf(f, "  thread %zu -> package %u, core %u -> CPU %u%s\n", i,
			tp->slots[i].package, tp->slots[i].core, tp->slots[i].pu,
			tp->slots[i].smt > 1 ? " (core has SMT siblings)" : "");
	summary_text_clock(res, f);
	summary_buffer_line(&res->bufplace, line, sizeof(line));
	fprintf(f, "I/O buffer: %s\n", line);
	if (has_dir && res->fs_ok)
		fprintf(f,
			"dir: %s\n  filesystem %s, source %s, mounted on %s\n  options %s\n"
			"  %s free of %s, %llu inodes free\n",
			res->dir, res->fs.type, res->fs.source, res->fs.mountpoint, res->fs.options,
			size_format(res->fs.bytes_free, a, sizeof(a)),
			size_format(res->fs.bytes_total, b, sizeof(b)),
			(unsigned long long)res->fs.inodes_free);
	else if (!has_dir)
		fprintf(f, "dir: none given (--dir or STAGEBENCH_DIR)\n");
	if (has_dir && !rep->answered)
		fprintf(f, "dir: %s: %s\n", res->dir, rep->why);
	if (has_dir && rep->listed)
		views_info_files_text(res, &rep->inv, f);
	return 0;
}

/* A part of a dry run: what it does, and how much per thread and per node. */
static void views_dry_part(const struct plan_part *pp, uint64_t threads, FILE *f)
{
	char a[32], b[32], c[32];
	uint64_t per = pp->p.passes ? pp->p.passes * pp->p.file : pp->p.count * pp->p.chunk;

	fprintf(f, "  part %s: %s", pp->def->name, pp->def->what);
	if (pp->p.count)
		fprintf(f, ", N=%llu M=%s", (unsigned long long)pp->p.count,
			size_format(pp->p.chunk, a, sizeof(a)));
	if (pp->p.passes)
		fprintf(f, ", PASSES=%llu", (unsigned long long)pp->p.passes);
	fprintf(f, "; %s %s per thread, %s per node\n",
		pp->ops->caps & BENCH_WRITES_FILES ? "writes" : "reads",
		size_format(per, b, sizeof(b)), size_format(per * threads, c, sizeof(c)));
}

void views_dry_run(const struct plan *p, const struct node_result *res, int dirfd, uint64_t bytes,
		   uint64_t inodes, FILE *f)
{
	enum command cmd = p->cmd;
	bool force = p->run.force;
	char cpus[256], a[32];
	uint64_t threads = res->tplan.nslots;

	summary_cpus(&res->tplan, cpus, sizeof(cpus));
	fprintf(f, "dry run: %s on node %s, %llu thread%s on CPUs %s, dir %s\n",
		enums_command_name(cmd), res->node, (unsigned long long)threads,
		threads == 1 ? "" : "s", cpus, res->dir);
	for (size_t i = 0; i < threads; i++)
		fprintf(f, "  thread %zu -> core %u -> CPU %u\n", i, res->tplan.slots[i].core,
			res->tplan.slots[i].pu);
	if (cmd == CMD_RUN) {
		fprintf(f, "first start at %.3f (in %.1f s), then ", res->start_at,
			res->start_at - clock_wall());
		if (p->run.has_interval)
			fprintf(f, "part k at start + k x %.3f s\n", p->run.interval);
		else
			fprintf(f, "each part right after the previous one\n");
	}
	for (size_t r = 1; r <= (cmd == CMD_RUN ? p->run.repeat : 1); r++) {
		for (size_t i = 0; i < p->ntests; i++) {
			const struct plan_test *pt = &p->tests[i];
			struct replica_info info;

			if (pt->def->has_replica) {
				bool there = replica_probe(dirfd, pt->replica, &info) == 0;
				const char *act =
				    !there			 ? "create"
				    : r > 1 && pt->def->recreate ? "recreate"
				    : cmd == CMD_PREPARE && (pt->def->recreate || force)
					? "recreate"
					: "use";
				fprintf(f, "test %s rep %zu: %s replica %s/%s (%s)\n",
					pt->def->name, r, act, res->dir, pt->replica,
					size_format(pt->file, a, sizeof(a)));
			}
			if (cmd != CMD_RUN)
				continue;
			for (size_t k = 0; k < pt->nparts; k++)
				views_dry_part(&p->parts[pt->first + k], threads, f);
		}
	}
	fprintf(f, "space needed in %s: %s and %llu inodes; nothing was done\n", res->dir,
		size_format(bytes, a, sizeof(a)), (unsigned long long)inodes);
}

void views_csv_field(FILE *f, const char *s, char after)
{
	if (s && *s) {
		fputc('"', f);
		for (; *s; s++) {
			unsigned char c = (unsigned char)*s;
			if (c == '"')
				fputs("\"\"", f);
			else
				fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
		}
		fputc('"', f);
	}
	fputc(after, f);
}

/* check --format csv: one line per finding, then the node's verdict as a finding of its own. */
static void views_check_csv(const struct findings *r, const struct node_result *res,
			    enum outcome out, FILE *f)
{
	fprintf(f, "node,dir,area,check,status,message\n");
	for (size_t i = 0; i < r->n; i++) {
		views_csv_field(f, res->node, ',');
		views_csv_field(f, res->dir, ',');
		fprintf(f, "%s,%s,%s,", r->f[i].area, r->f[i].name,
			findings_level_name(r->f[i].level));
		views_csv_field(f, r->f[i].message, '\n');
	}
	views_csv_field(f, res->node, ',');
	views_csv_field(f, res->dir, ',');
	fprintf(f, "node,status,%s,\"exit %d\"\n", out == OUTCOME_OK ? "ok" : "fail",
		outcome_exit_code(out));
}

int views_check(const struct findings *r, enum format format, const struct node_result *res,
		enum outcome out, FILE *f)
{
	if (format == FORMAT_CSV) {
		views_check_csv(r, res, out, f);
		return 0;
	}
	if (format != FORMAT_JSON) {
		fprintf(f, "stagebench check of node %s, dir %s\n", res->node, res->dir);
		for (size_t i = 0; i < r->n; i++)
			fprintf(f, "%-4s  %-8s %-12s %s\n", findings_level_name(r->f[i].level),
				r->f[i].area, r->f[i].name, r->f[i].message);
		fprintf(f, "%s\n", out == OUTCOME_OK ? "node ok" : "node FAILED the check");
		return 0;
	}
	struct json j;
	json_init(&j, f, true);
	summary_json_head(&j, "stagebench.check/1", res);
	json_kv_string(&j, "dir", res->dir);
	json_kv_double(&j, "at", clock_wall());
	json_key(&j, "findings");
	json_array_begin(&j);
	for (size_t i = 0; i < r->n; i++) {
		json_object_begin(&j);
		json_kv_string(&j, "area", r->f[i].area);
		json_kv_string(&j, "check", r->f[i].name);
		json_kv_string(&j, "status", findings_level_name(r->f[i].level));
		json_kv_string(&j, "message", r->f[i].message);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_kv_string(&j, "status", out == OUTCOME_OK ? "ok" : "fail");
	json_kv_int(&j, "exit_code", outcome_exit_code(out));
	json_object_end(&j);
	return json_finish(&j);
}
