/* SPDX-License-Identifier: MIT */
/*
 * The views of the commands other than a run's summary and `list`: `info`, `check`, the dry
 * run of `run` and `prepare`. Text for people, JSON (and CSV for check) for tools.
 */
#ifndef STAGEBENCH_VIEWS_H
#define STAGEBENCH_VIEWS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "driver/findings.h"
#include "driver/inventory.h"
#include "driver/enums.h"
#include "driver/plan.h"
#include "driver/result.h"

/* The schema of `info --format json --compact`: one line, no per-core or per-file rows. */
#define VIEWS_INFO_BRIEF_SCHEMA "stagebench.info-brief/1"
/* Room for a CPU list of the largest machine (OPTIONS_MAX_CPUS, every other CPU). */
#define VIEWS_CPULIST_MAX 32768

/*
 * The node: topology (allowed_cpus as a list), thread plan, clock, and with a --dir (rep not
 * NULL) the filesystem of res->dir (res->fs) and its inventory, or why they are missing
 * (JSON: "dir_error"). brief with JSON: the one-line VIEWS_INFO_BRIEF_SCHEMA. 0, or -EIO.
 */
int views_info(const struct node_result *res, const struct inventory_report *rep,
	       const char *allowed_cpus, enum format format, bool brief, FILE *f);

/*
 * What the plan's command (run or prepare) would do: threads, start, each replica's fate
 * (prepare --force recreates every replica), each part's volume, and the bytes and inodes
 * needed.
 */
void views_dry_run(const struct plan *p, const struct node_result *res, int dirfd, uint64_t bytes,
		   uint64_t inodes, FILE *f);

/*
 * One CSV field, then after (',' or '\n'): quoted (RFC 4180: quotes doubled), a control
 * character as '?' so that no field spans lines or moves a terminal; nothing for NULL or ""
 * (an empty cell: what does not apply).
 */
void views_csv_field(FILE *f, const char *s, char after);

/* The findings of `check` and its verdict ("stagebench.check/1" in JSON). 0, or -EIO. */
int views_check(const struct findings *r, enum format format, const struct node_result *res,
		enum outcome out, FILE *f);

#endif
