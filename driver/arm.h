/* SPDX-License-Identifier: MIT */
/*
 * Armed runs (`run --detach STATE_DIR`): the run is set up in the foreground, then detaches
 * from the launching connection and waits for its start on its own, keeping its pid, start
 * time, status and summary path in STATE_DIR/state; `status` and `stop` read that file.
 */
#ifndef STAGEBENCH_ARM_H
#define STAGEBENCH_ARM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "driver/outcome.h"
#include "driver/reason.h"
#include "driver/run.h"
#include "platform/lease.h"

#include "util/names.h"

/* The files of STATE_DIR, named by util/names.h. */
#define ARM_STATE NAMES_STATE
#define ARM_LOG	  NAMES_LOG
#define ARM_OUT	  NAMES_SUMMARY
#define ARM_LEASE NAMES_LEASE
/* How long the run waits for its state directory's lease lock at a safe point. */
#define ARM_LEASE_LOCK_S 0.2

/* What STATE_DIR/state says: one "key value" line per field. */
struct arm_state {
	long pid;
	unsigned long long start_time; /* clock ticks after boot, /proc/PID/stat field 22 */
	/* starting armed running, then done failed orphaned interrupted, or killed (by stop) */
	char status[16];
	char node[72];
	char run_tag[32];
	double start_at; /* the first part's start instant, 0 before it is known */
	double interval; /* 0: none */
	unsigned long parts;
	int exit_code; /* -1 while the run has not ended */
	double updated_at;
	char summary[PATH_MAX];
	char log[PATH_MAX];
	/* The run's first error once it ended with one (one line), and its reason; "" none. */
	char error[1024];
	char reason[32];
	/*
	 * --lease: its length (0: none), and when the state was written the seconds it had left
	 * (< 0: not started yet), its last renewal (wall clock) and how many there were.
	 */
	double lease_s;
	double lease_remaining_s;
	double lease_renewed_at;
	unsigned long long lease_renewals;
};

/* The armed run's side: the state directory, the pipe to the foreground, the state. */
struct arm {
	int dirfd;
	int tell_fd; /* to the foreground until the run is armed or failed, else -1 */
	char dir[PATH_MAX];
	char out[PATH_MAX]; /* the default summary path, STATE_DIR/summary.json */
	struct arm_state st;
	/* The lease (started once armed) as last read, and whether it was seen lapsed. */
	bool lease_on;
	struct lease lease;
	bool lapsed;
	/* The detached process's first state, written or -errno; the last write error, said. */
	int state_rc;
	char why[PATH_MAX + 128];
};

/*
 * Check STATE_DIR for a new armed run, creating it (mode 0700) when missing: a directory,
 * not a symbolic link, owned by the running user, with no access for others, and holding no
 * earlier run's state. *out (the summary path, --out) becomes STATE_DIR/summary.json when
 * NULL. 0, -EINVAL for a path the state file cannot hold (usage), or -errno; why says it.
 */
int arm_open(struct arm *a, const char *dir, const char **out, char *why, size_t whylen);

/*
 * The state's process and run: this process (its pid and start time), node, run tag, the
 * summary's path and the log's. arm_detach calls it in the detached process; a run that ends
 * before it detaches calls it before arm_end, so that its failed state names it.
 */
void arm_identify(struct arm *a, const char *summary, const char *node, const char *run_tag);

/*
 * Detach: fork a process in a new session, its stdio to STATE_DIR/log and /dev/null, that
 * returns from here and carries on with the run. The foreground process waits until that
 * process says it is armed (prints one line: pid and state file, returns exit status 0) or
 * that its set-up failed (prints its first error, returns its exit status); it never returns
 * -1. The detached process gets -1, with a->state_rc -errno when it could not write its first
 * state (a->why says it: the caller fails the run, which tells the foreground). Call with no
 * other thread running. The other arguments go to the state file.
 */
int arm_detach(struct arm *a, const char *summary, const char *node, const char *run_tag,
	       double interval, unsigned long parts, double lease_s);

/*
 * In the detached process (a is its struct arm), once every thread waits for the first start
 * start_at: the lease starts (with --lease: arming is its first renewal), the state says
 * armed, and the foreground is told and let go. Then it waits for start_at, checking the
 * lease at least once a second, and the state says running (unless the part is stopped
 * first). The run loop's armed hook: false, halt filled, when the lease cannot be written
 * (the foreground is then told why) or lapsed before the start.
 */
bool arm_ready(void *a, double start_at, struct run_halt *halt);

/*
 * The run loop's watch hook (run.h): the lease checked at a safe point. Lapsed before the
 * part's start (start_at 0, or still ahead): false, the run orphaned, halt filled. Lapsed
 * while the part runs: it goes on for at most one lease length after the lapse, then false.
 * Always true without a lease.
 */
bool arm_watch(void *a, double start_at, struct run_halt *halt);

/*
 * The run has ended with its summary written: the final state (with its first error and that
 * error's reason, if any), the foreground told if waiting.
 */
void arm_end(struct arm *a, enum outcome out, const char *first_error, enum reason reason);

/* Field 22 of /proc/PID/stat: the start time, in clock ticks after boot. 0 or -errno. */
int arm_proc_start_time(long pid, unsigned long long *ticks);

/* The same, and field 3, its state (R, S, D, T, t, Z, X, I), into *state when not NULL. */
int arm_proc_stat(long pid, char *state, unsigned long long *ticks);

/*
 * Write st as dirfd's state file: a temporary "state.tmp.<pid>" created O_CREAT|O_EXCL|
 * O_NOFOLLOW, renamed over it. 0 or -errno. (The armed run writes its own; `stop --kill`
 * writes the state of the run it killed.)
 */
int arm_state_write(int dirfd, const struct arm_state *st);

/*
 * Open STATE_DIR (creating it, mode 0700, when create) without following a link at its last
 * component, and check it: owned by this user, no access for others. 0 or -errno, why said.
 */
int arm_open_dir(const char *dir, bool create, int *dirfd, char *why, size_t whylen);

/* Whether a status is final (done, failed, orphaned, interrupted, killed). */
bool arm_status_final(const char *status);

#endif
