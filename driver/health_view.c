/* SPDX-License-Identifier: MIT */
/*
 * The views of a `check --health` verdict, and the names of its states.
 */
#include <stdio.h>
#include <string.h>

#include "driver/health_view.h"
#include "driver/views.h"
#include "util/json.h"

static const char *const health_state_names[HEALTH_NSTATES] = {
    "ok", "unhealthy", "not_answering", "no_recent_data", "cannot_judge", "config_error"};
static const char *const health_history_names[HEALTH_HISTORY_NSTATES] = {
    "none", "ok", "flagged", "stale", "future", "damaged"};

const char *health_state_name(enum health_state state)
{
	return (unsigned)state < HEALTH_NSTATES ? health_state_names[state] : "?";
}

const char *health_history_name(enum health_history_state state)
{
	return (unsigned)state < HEALTH_HISTORY_NSTATES ? health_history_names[state] : "?";
}

/* check --health --format json: the verdict, the run judged, the history's judgement. */
static int health_view_json(const struct health_verdict *v, const char *node, const char *results,
			    double now, FILE *f)
{
	const struct health_history *h = &v->hist;
	bool read = v->history != HEALTH_HISTORY_NONE && v->history != HEALTH_HISTORY_DAMAGED;
	struct json j;

	json_init(&j, f, true);
	json_object_begin(&j);
	json_kv_string(&j, "schema", "stagebench.health/1");
	json_kv_string(&j, "version", STAGEBENCH_VERSION);
	json_kv_string(&j, "node", node);
	json_kv_string(&j, "results", results);
	json_kv_double(&j, "at", now);
	json_kv_string(&j, "status", health_state_name(v->state));
	json_kv_int(&j, "exit_code", outcome_exit_code(v->out));
	json_kv_string(&j, "line", v->line);
	json_key(&j, "run");
	if (v->has_run && v->state != HEALTH_NO_RECENT_DATA) {
		json_object_begin(&j);
		json_kv_string(&j, "dir", v->run);
		json_kv_double(&j, "at", v->run_at);
		json_kv_uint(&j, "summaries", v->judged);
		json_kv_uint(&j, "ok", v->ok);
		json_kv_string(&j, "failed_part", v->part[0] ? v->part : NULL);
		json_kv_string(&j, "error", v->part[0] ? v->error : NULL);
		json_object_end(&j);
	} else {
		json_null(&j);
	}
	json_key(&j, "future_runs");
	json_object_begin(&j);
	json_kv_uint(&j, "count", v->nfuture);
	json_kv_string(&j, "latest", v->nfuture ? v->future : NULL);
	json_key(&j, "at");
	if (v->nfuture)
		json_double(&j, v->future_at);
	else
		json_null(&j);
	json_object_end(&j);
	json_key(&j, "history");
	json_object_begin(&j);
	json_kv_string(&j, "file", HEALTH_DOOR_HISTORY);
	json_kv_string(&j, "status", health_history_name(v->history));
	json_kv_string(&j, "run_id", read ? h->run_id : NULL);
	json_key(&j, "written_at");
	if (read)
		json_double(&j, h->written_at);
	else
		json_null(&j);
	json_key(&j, "regressions");
	json_array_begin(&j);
	for (size_t i = 0; read && i < h->nflags && i < HEALTH_DOOR_MAX_FLAGS; i++) {
		json_object_begin(&j);
		json_kv_string(&j, "part", h->flags[i].part);
		json_kv_double(&j, "size", h->flags[i].size);
		json_kv_string(&j, "first_night", h->flags[i].first_night);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_kv_uint(&j, "regressions_count", read ? h->nflags : 0);
	json_kv_string(&j, "error", v->history == HEALTH_HISTORY_DAMAGED ? v->history_why : NULL);
	json_object_end(&j);
	json_object_end(&j);
	return json_finish(&j);
}

int health_view(const struct health_verdict *v, enum format format, const char *node,
		const char *results, double now, FILE *f)
{
	char num[64];

	if (format == FORMAT_JSON)
		return health_view_json(v, node, results, now, f);
	if (format != FORMAT_CSV) {
		fprintf(f, "%s\n", v->line);
		return 0;
	}
	fprintf(f, "node,status,exit_code,run,run_at,summaries_ok,failed_part,error,future_runs,"
		   "history,message\n");
	views_csv_field(f, node, ',');
	fprintf(f, "%s,%d,", health_state_name(v->state), outcome_exit_code(v->out));
	bool run = v->has_run && v->state != HEALTH_NO_RECENT_DATA;
	views_csv_field(f, run ? v->run : "", ',');
	snprintf(num, sizeof(num), "%.3f", v->run_at);
	fprintf(f, "%s,", run ? num : "");
	snprintf(num, sizeof(num), "%zu", v->ok);
	fprintf(f, "%s,", run ? num : "");
	views_csv_field(f, v->part, ',');
	views_csv_field(f, v->part[0] ? v->error : "", ',');
	fprintf(f, "%zu,%s,", v->nfuture, health_history_name(v->history));
	views_csv_field(f, v->line, '\n');
	return 0;
}
