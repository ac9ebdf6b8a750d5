/* SPDX-License-Identifier: MIT */
/*
 * The numeric options of a command as the catalogue's "options": name, kind of number,
 * range and scope, from the option table, so that a launcher that passes them on checks them
 * as the binary does.
 */
#include <stdio.h>

#include "driver/options_table.h"
#include "util/json.h"

/* The kind of number of a numeric option; NULL for the others. */
static const char *options_ranges_type(enum opt_type type)
{
	switch (type) {
	case OPT_COUNT:
		return "count";
	case OPT_UINT:
		return "integer";
	case OPT_SIZE:
		return "size";
	case OPT_SECONDS:
		return "seconds";
	default:
		return NULL;
	}
}

/* A bound: seconds as they are, whole numbers as integers (2^64 and above as 2^64 - 1). */
static void options_ranges_bound(struct json *j, const char *key, enum opt_type type, double v)
{
	json_key(j, key);
	if (type == OPT_SECONDS)
		json_double(j, v);
	else if (v >= 18446744073709551615.0)
		json_uint(j, UINT64_MAX);
	else
		json_uint(j, (uint64_t)v);
}

void options_ranges_json(struct json *j, enum command cmd)
{
	static const char *const scopes[] = {
	    [OPT_SCOPE_RUN] = "run", [OPT_SCOPE_PART] = "part", [OPT_SCOPE_TEST] = "test"};

	json_array_begin(j);
	for (size_t i = 0; i < options_table_count; i++) {
		const struct opt_def *d = &options_table[i];
		const char *type = options_ranges_type(d->type);
		char name[64];

		if (!type || !(d->cmds & (1u << cmd)))
			continue;
		json_object_begin(j);
		snprintf(name, sizeof(name), "--%s", d->name);
		json_kv_string(j, "option", name);
		json_kv_string(j, "type", type);
		options_ranges_bound(j, "min", d->type, d->min);
		options_ranges_bound(j, "max", d->type, d->max);
		json_kv_string(j, "scope", scopes[d->scope]);
		json_object_end(j);
	}
	json_array_end(j);
}
