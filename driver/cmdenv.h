/* SPDX-License-Identifier: MIT */
/*
 * What a subcommand on this node resolves from its options, and the set-up steps the
 * subcommands share. Each step returns OUTCOME_OK or an outcome with one line in why.
 */
#ifndef STAGEBENCH_CMDENV_H
#define STAGEBENCH_CMDENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "driver/arm.h"
#include "driver/inventory.h"
#include "driver/options.h"
#include "driver/outcome.h"
#include "driver/plan.h"
#include "driver/result.h"
#include "driver/schedule.h"
#include "platform/runlock.h"
#include "platform/topo.h"

/* Everything a command on this node needs, resolved from the options. */
struct cmdenv {
	struct options o;
	struct plan plan;
	struct topo *topo;
	int dirfd;
	struct node_result res;
	struct arm arm;		       /* --detach */
	struct runlock lock;	       /* run, prepare: this node's lock */
	double schedule[SCHEDULE_MAX]; /* --schedule */
};

/*
 * This node's name (--node or the host name, checked), run tag and run id (the plan's
 * --run-id, else the run tag) into e->res.
 */
enum outcome cmdenv_node(struct cmdenv *e, char *why, size_t whylen);

/*
 * This node's lock (platform/runlock.h) taken for the command's whole life, its holder said as
 * command (run, prepare) in state (running, armed, preparing). OUTCOME_OK; else
 * OUTCOME_PRECONDITION with *reason: REASON_BUSY (another run holds it: why names it),
 * REASON_NO_SPACE (ENOSPC, EDQUOT), REASON_SETUP_FAILED (a lock directory or file refused).
 */
enum outcome cmdenv_lock(struct cmdenv *e, const char *command, const char *state,
			 enum reason *reason, char *why, size_t whylen);

/* What the lock file says of its holder: this process, a run, from now in state (an armed
 * run's detached process says so once it has forked). */
void cmdenv_lock_note(struct cmdenv *e, const char *state);

/* The running executable's digest into e->res (untimed: it reads the whole binary). */
void cmdenv_exe(struct cmdenv *e);

/*
 * The machine's topology opened and the thread plan of --threads/--cpus built, and how its
 * cores were chosen (e->res.cores_chosen_by).
 */
enum outcome cmdenv_threads(struct cmdenv *e, char *why, size_t whylen);

/* --dir: given, a real directory (not a symlink to nowhere), and, when writing, writable. */
enum outcome cmdenv_dir(struct cmdenv *e, bool writing, char *why, size_t whylen);

/* The clock's NTP state into e->res. */
void cmdenv_clock(struct cmdenv *e);

/* Space and inodes the command will need in --dir, counted before anything is written. */
void cmdenv_needs(struct cmdenv *e, uint64_t *bytes, uint64_t *inodes);

/* The dry run of run and prepare: the plan and what it would need, on stdout. */
void cmdenv_dry_run(struct cmdenv *e);

/* Leftovers said as warnings; enough space and inodes in --dir for the plan, or why not. */
enum outcome cmdenv_preflight(struct cmdenv *e, char *why, size_t whylen);

/* What was acquired released; the outcome mapped to the exit code. */
int cmdenv_finish(struct cmdenv *e, enum outcome out);

/* Print one line, map the outcome, release what was acquired. */
int cmdenv_fail(struct cmdenv *e, enum outcome out, const char *why);

/*
 * STAGEBENCH_HUNG_DIR_SECONDS: for tests, the deadline of `check` and `info` on a --dir, and of
 * `check --health` on a --results, that does not answer, in whole seconds from 1 to 3600,
 * instead of their compiled-in ones (CHECK_DEADLINE_S 25, INVENTORY_DEADLINE_S 20,
 * HEALTH_DEADLINE_S 10), so that a test of a hung directory need not wait them out. Unset,
 * empty or not such a number: the compiled-in one.
 */
#define CMDENV_HUNG_DIR_ENV "STAGEBENCH_HUNG_DIR_SECONDS"
#define CMDENV_HUNG_DIR_MAX 3600

/* The deadline on a hung --dir: STAGEBENCH_HUNG_DIR_SECONDS, or default_s. */
int cmdenv_hung_dir_deadline(int default_s);

/* The inventory_dir_hooks of info and check: --dir opened in the child, and its release. */
enum outcome cmdenv_check_dir(void *ctx, int *dirfd, char *why, size_t whylen);
void cmdenv_child_release(void *ctx);

#endif
