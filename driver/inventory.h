/* SPDX-License-Identifier: MIT */
/*
 * What stagebench has in a working directory (replicas, temporary files, test 4's files) and
 * what a plan still needs there (bytes and inodes), for preflight, `info` and `check`.
 */
#ifndef STAGEBENCH_INVENTORY_H
#define STAGEBENCH_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "driver/outcome.h"
#include "driver/plan.h"

enum inventory_kind {
	INV_REPLICA, /* stagebench.<test>.<size> */
	INV_TEMP,    /* stagebench.<test>.<size>.tmp.<host>.<pid>: an interrupted prepare */
	INV_FILE,    /* stagebench.<part>.<node>...: a kept or left-over file of test 4 */
};

struct inventory_entry {
	char name[256];
	enum inventory_kind kind;
	bool ours; /* name and header are stagebench's */
	uint64_t size;
	uint64_t generation;
	double mtime;	  /* epoch seconds */
	double residency; /* fraction in this node's page cache, <0 unknown */
};

/*
 * The stagebench files of directory dir (fd dirfd), replicas first, each with its header,
 * size, age and page-cache residency (residency for replicas only). *out is malloc'ed.
 * 0 or -errno.
 */
int inventory_scan(int dirfd, const char *dir, struct inventory_entry **out, size_t *n);

/*
 * Bytes and inodes the plan still needs in dirfd with threads threads: missing replicas
 * that it may create (not test 3's at spec scale in a run) and the largest part that
 * writes files (all of them with --keep, times --repeat).
 */
void inventory_needs(const struct plan *p, int dirfd, size_t threads, uint64_t *bytes,
		     uint64_t *inodes);

/*
 * The `clean` command: remove the files of the plan's tests (of every scale: "stagebench.
 * <test>." for replica tests, "stagebench.<part>." for the others) whose header is
 * stagebench's, or with dry_run say which would go; other files are named and left alone.
 */
enum outcome inventory_clean(const struct plan *p, int dirfd, const char *dir, bool dry_run);

#endif
