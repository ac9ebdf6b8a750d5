/* SPDX-License-Identifier: MIT */
/*
 * The benchmark kinds, listed once.
 */
#ifndef STAGEBENCH_REGISTRY_H
#define STAGEBENCH_REGISTRY_H

#include "workers/bench.h"

/* X(name): the kind exported as bench_<name> from workers/<name>.c. */
#define BENCH_KINDS(X) X(null) X(seqread) X(mmaptouch) X(randread) X(manyfiles)

#define BENCH_DECLARE(n) extern const struct bench_ops bench_##n;
BENCH_KINDS(BENCH_DECLARE)
#undef BENCH_DECLARE

/* The kind with that name, or NULL. */
const struct bench_ops *bench_find(const char *name);
/* All kinds, NULL-terminated. */
extern const struct bench_ops *const bench_all[];

#endif
