/* SPDX-License-Identifier: MIT */
/*
 * The table of benchmark kinds, generated from the one list in registry.h, and lookup by
 * name. Referencing every bench_<kind> here is also what pulls each kind's object file out
 * of the static library.
 */
#include <stddef.h>
#include <string.h>

#include "workers/registry.h"

#define REGISTRY_ENTRY(n) &bench_##n,
const struct bench_ops *const bench_all[] = {BENCH_KINDS(REGISTRY_ENTRY) NULL};
#undef REGISTRY_ENTRY

const struct bench_ops *bench_find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; bench_all[i]; i++) {
		if (strcmp(bench_all[i]->name, name) == 0)
			return bench_all[i];
	}
	return NULL;
}
