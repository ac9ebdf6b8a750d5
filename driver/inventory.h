/* SPDX-License-Identifier: MIT */
/*
 * What stagebench has in a working directory (replicas, temporary files, test 4's files) and
 * what a plan still needs there (bytes and inodes), for preflight, `info` and `check`.
 */
#ifndef STAGEBENCH_INVENTORY_H
#define STAGEBENCH_INVENTORY_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "driver/outcome.h"
#include "driver/plan.h"
#include "driver/result.h"
#include "platform/fsinfo.h"

enum inventory_kind {
	/* By their names (util/names.h): */
	INV_REPLICA, /* a replica's name of a replica test of the catalogue */
	INV_TEMP,    /* a replica's temporary, an interrupted prepare's (or any ".tmp." name) */
	INV_FILE,    /* a kind's file: kept with --keep, or left by an interrupted run */
	INV_CHECK,   /* what a killed check left: its probe, probe files, write probe */
	INV_OTHER,   /* any other stagebench.* regular file */
	INV_NKINDS,
};

struct inventory_entry {
	char name[256];
	enum inventory_kind kind;
	bool ours; /* name and header are stagebench's (for leftovers: `clean` removes it) */
	uint64_t size;
	uint64_t generation;
	double mtime;	  /* epoch seconds */
	double residency; /* fraction in this node's page cache, <0 unknown */
};

/* Replicas listed one by one; beyond that (a directory full of look-alikes) only counted. */
#define INVENTORY_MAX_LISTED 32
/* Names given as examples of each kind of leftover. */
#define INVENTORY_EXAMPLES 3

/* One kind of leftover, summed: however many there are, this stays the same size. */
struct inventory_sum {
	uint64_t count, bytes;
	double oldest; /* mtime of the oldest, epoch seconds; 0 when count is 0 */
	struct inventory_entry examples[INVENTORY_EXAMPLES]; /* the first names in byte order */
	size_t nexamples;
};

/*
 * What stagebench has in a directory, in bounded space (plain data, no pointers): the
 * replicas one by one (the first INVENTORY_MAX_LISTED in name order), and the leftovers
 * (kinds INV_TEMP, INV_FILE, INV_CHECK, INV_OTHER) as a count, bytes, the oldest and a few
 * examples.
 */
struct inventory {
	struct inventory_entry replicas[INVENTORY_MAX_LISTED];
	size_t nreplicas;
	uint64_t replicas_not_listed;
	struct inventory_sum left[INV_NKINDS]; /* [INV_REPLICA] unused */
	struct inventory_sum leftovers;	       /* every kind together (no examples) */
};

/* "replica", "temporary", "file", "check", "other". */
const char *inventory_kind_name(enum inventory_kind kind);

/*
 * Take the inventory of directory dirfd: each replica with its size and age (with details, its
 * header and page-cache residency too); each leftover's name and size only (one fstatat each;
 * with details, the examples' content is read to tell whether `clean` removes them). Files are
 * opened with openat, never through a link. 0 or -errno.
 */
int inventory_take(int dirfd, bool details, struct inventory *inv);

/*
 * One line on the leftovers in dir, "" when there are none: "12 leftover files in
 * '/stage/x' (kept by --keep or left by interrupted runs; 48 KiB, oldest 3600 s ago;
 * 2 temporary, 10 file): 'stagebench clean all' removes stagebench's".
 */
void inventory_leftovers_line(const struct inventory *inv, const char *dir, double now, char *buf,
			      size_t len);

/*
 * How info and check reach --dir from the child process that may hang on it: open opens it
 * (fills res->dir, res->fs_ok, res->fs and *dirfd, or says why not, with the outcome);
 * release, called in the child before it exits, frees what it inherited of the command.
 */
struct inventory_dir_hooks {
	enum outcome (*open)(void *ctx, int *dirfd, char *why, size_t whylen);
	void (*release)(void *ctx);
	void *ctx;
};

/*
 * What `info` shows of --dir answers within this, whatever its filesystem does (tests shorten
 * it through STAGEBENCH_HUNG_DIR_SECONDS, cmdenv.h).
 */
#define INVENTORY_DEADLINE_S 20

/* What `info` shows of --dir, gathered where a call that never returns cannot hold it. */
struct inventory_report {
	enum outcome out;		/* OUTCOME_OK, or why the directory cannot be used */
	char why[BENCH_PATH_MAX + 512]; /* that reason, or "not responding after N s (...)" */
	bool answered;			/* false: the directory did not answer in time */
	char dir[BENCH_PATH_MAX];	/* its real path, once opened */
	bool fs_ok;
	struct fs_info fs;
	bool listed; /* inv is filled in */
	struct inventory inv;
};

/*
 * Open --dir with dir->open and take its inventory, in a child process, within timeout_s: what was
 * learnt before the deadline goes into rep (answered false and why "not responding after
 * N s" when it passed). Returns rep->out, or an interruption when *stop became non-zero.
 */
enum outcome inventory_report_take(const struct inventory_dir_hooks *dir, struct node_result *res,
				   int timeout_s, volatile sig_atomic_t *stop,
				   struct inventory_report *rep);

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
 * A plan of every test (`clean all`) also removes what a killed check left.
 */
enum outcome inventory_clean(const struct plan *p, int dirfd, const char *dir, bool dry_run);

#endif
