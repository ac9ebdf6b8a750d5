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

/* The outcome is OUTCOME_OK when no finding is `fail`, OUTCOME_FAILED otherwise. */
enum outcome check_node(const struct options *o, struct topo *topo, int dirfd,
			struct node_result *res);

#endif
