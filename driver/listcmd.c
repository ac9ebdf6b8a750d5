/* SPDX-License-Identifier: MIT */
/*
 * `list`: the catalogue of tests and parts at a scale, for people (text), spreadsheets (CSV)
 * and tools (JSON, "stagebench.catalogue/1": what each part counts and where the spec expects
 * it served from, the scales, and the ranges of the options a launcher passes on).
 */
#include <stdio.h>
#include <string.h>

#include "driver/listcmd.h"
#include "driver/summary.h"
#include "util/json.h"
#include "util/size.h"
#include "workers/registry.h"

/* One count of a kind's expect: the names of the parameters it is the product of. */
static void listcmd_by_json(struct json *j, const char *key, unsigned by)
{
	static const struct {
		unsigned bit;
		const char *name; /* as the summary names the parameter */
	} params[] = {{BENCH_BY_COUNT, "count"},
		      {BENCH_BY_CHUNK, "chunk_bytes"},
		      {BENCH_BY_FILE, "file_bytes"},
		      {BENCH_BY_PASSES, "passes"}};

	json_key(j, key);
	json_array_begin(j);
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		if (by & params[i].bit)
			json_string(j, params[i].name);
	json_array_end(j);
}

/*
 * What one thread of the part's kind counts in a completed part: {"ops", "bytes", "files"},
 * each the list of parameters it is the product of ([]: none, 0).
 */
static void listcmd_expect_json(struct json *j, const struct bench_ops *ops)
{
	json_key(j, "expect");
	json_object_begin(j);
	listcmd_by_json(j, "ops", ops ? ops->expect.ops : 0);
	listcmd_by_json(j, "bytes", ops ? ops->expect.bytes : 0);
	listcmd_by_json(j, "files", ops ? ops->expect.files : 0);
	json_object_end(j);
}

/*
 * A part of the catalogue: its sizes at scale, what its kind counts (its rate, and per thread),
 * the tier it should hit.
 */
static void listcmd_part_json(struct json *j, const struct part_def *d, enum scale scale)
{
	json_object_begin(j);
	json_kv_string(j, "part", d->name);
	json_kv_string(j, "test", d->test);
	json_kv_string(j, "kind", d->kind);
	summary_json_params(j, &d->scale[scale]);
	json_kv_string(j, "what", d->what);
	summary_json_unit(j, bench_find(d->kind));
	listcmd_expect_json(j, bench_find(d->kind));
	json_kv_string(j, "tier", plan_tier_name(d->tier));
	json_object_end(j);
}

/*
 * The catalogue as JSON: the scales, each test with its parts and flags, each part with its
 * line, and the numeric options of a run with their ranges.
 */
static void listcmd_json(struct json *j, enum scale scale)
{
	json_object_begin(j);
	json_kv_string(j, "schema", "stagebench.catalogue/1");
	json_kv_string(j, "version", STAGEBENCH_VERSION);
	json_kv_string(j, "scale", enums_scale_name(scale));
	json_key(j, "scales");
	json_array_begin(j);
	for (int s = 0; s < SCALE_COUNT; s++)
		json_string(j, enums_scales[s]);
	json_array_end(j);
	json_key(j, "tests");
	json_array_begin(j);
	for (size_t i = 0; i < plan_ntests; i++) {
		const struct test_def *t = &plan_tests[i];
		json_object_begin(j);
		json_kv_string(j, "test", t->name);
		json_kv_string(j, "title", t->title);
		json_key(j, "parts");
		json_array_begin(j);
		for (size_t k = 0; k < plan_nparts; k++) {
			if (strcmp(plan_parts[k].test, t->name) == 0)
				json_string(j, plan_parts[k].name);
		}
		json_array_end(j);
		json_kv_bool(j, "has_replica", t->has_replica);
		json_kv_bool(j, "recreate", t->recreate);
		json_kv_bool(j, "needs_prepare", t->needs_prepare);
		json_kv_bool(j, "in_all", t->in_all);
		json_kv_bool(j, "server_drop", t->server_drop);
		json_object_end(j);
	}
	json_array_end(j);
	json_key(j, "parts");
	json_array_begin(j);
	for (size_t i = 0; i < plan_nparts; i++)
		listcmd_part_json(j, &plan_parts[i], scale);
	json_array_end(j);
	json_key(j, "options");
	options_ranges_json(j, CMD_RUN);
	json_object_end(j);
}

int listcmd_print(enum scale scale, enum format format, FILE *f)
{
	char a[32], b[32];

	if (format == FORMAT_JSON) {
		struct json j;
		json_init(&j, f, true);
		listcmd_json(&j, scale);
		return json_finish(&j);
	}
	if (format == FORMAT_CSV)
		fprintf(f, "part,test,kind,count,chunk_bytes,file_bytes,passes\n");
	else
		fprintf(f, "scale %s\n%-4s %-4s %-10s %8s %10s %10s %7s  %s\n",
			enums_scale_name(scale), "part", "test", "kind", "N", "M", "file", "passes",
			"what");
	for (size_t i = 0; i < plan_nparts; i++) {
		const struct part_def *d = &plan_parts[i];
		const struct part_params *p = &d->scale[scale];
		if (format == FORMAT_CSV) {
			/* a parameter the part does not have (0 in the table) is an empty cell */
			const uint64_t v[] = {p->count, p->chunk, p->file, p->passes};
			fprintf(f, "%s,%s,%s", d->name, d->test, d->kind);
			for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
				fputc(',', f);
				if (v[k])
					fprintf(f, "%llu", (unsigned long long)v[k]);
			}
			fputc('\n', f);
			continue;
		}
		char n[24] = "-", pa[24] = "-";
		if (p->count)
			snprintf(n, sizeof(n), "%llu", (unsigned long long)p->count);
		if (p->passes)
			snprintf(pa, sizeof(pa), "%llu", (unsigned long long)p->passes);
		fprintf(f, "%-4s %-4s %-10s %8s %10s %10s %7s  %s\n", d->name, d->test, d->kind, n,
			p->chunk ? size_format(p->chunk, a, sizeof(a)) : "-",
			p->file ? size_format(p->file, b, sizeof(b)) : "-", pa, d->what);
	}
	return 0;
}
