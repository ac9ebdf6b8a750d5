/* SPDX-License-Identifier: MIT */
/*
 * `stagebench check`: a health check of this node in about half a minute at most: clock,
 * CPU binding, the filesystem of --dir, the replicas present, and a short per-core probe.
 */
#ifndef STAGEBENCH_CHECK_H
#define STAGEBENCH_CHECK_H

#include "driver/options.h"
#include "driver/outcome.h"
#include "driver/run.h"
#include "platform/topo.h"

enum check_level { CHECK_OK = 0, CHECK_WARN, CHECK_FAIL };

/* One line of the check: ok, warn or fail, an area, a name and what was found. */
struct check_finding {
	enum check_level level;
	const char *area;
	char name[32];
	char message[600];
};

#define CHECK_MAX 128

struct check_report {
	struct check_finding f[CHECK_MAX];
	size_t n;
};

/* "ok", "warn", "fail". */
const char *check_level_name(enum check_level level);

/* The outcome is OUTCOME_OK when no finding is `fail`, OUTCOME_FAILED otherwise. */
enum outcome check_node(const struct options *o, struct topo *topo, int dirfd,
			struct node_result *res);

#endif
