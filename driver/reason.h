/* SPDX-License-Identifier: MIT */
/*
 * Why something failed, as a machine token beside the words: the "reason" of every error in
 * a node summary (top-level "error_reasons", and "reason" beside each test's, part's and
 * thread's "error") and in the state file of an armed run. Tools decide from these tokens,
 * never from the English of a message.
 */
#ifndef STAGEBENCH_REASON_H
#define STAGEBENCH_REASON_H

#include "workers/bench.h"

enum reason {
	REASON_NONE = 0,	/* no error: null */
	REASON_START_MISSED,	/* "start_missed": the start instant had passed (exit 3) */
	REASON_NOT_READY,	/* "not_ready": a thread's set-up failed before the barrier */
	REASON_IO_ERROR,	/* "io_error": a read, write, open... failed */
	REASON_VERIFY_FAILED,	/* "verify_failed": a block read is not what was written */
	REASON_REPLICA_MISSING, /* "replica_missing": absent, and this command may not create it */
	REASON_REPLICA_INVALID, /* "replica_invalid": a file under its name that is no replica */
	REASON_REPLICA_CHANGED, /* "replica_changed": replaced or modified while it was read */
	REASON_NO_SPACE,	/* "no_space": not enough space or inodes (ENOSPC, EDQUOT) */
	REASON_NTP_REQUIRED,  /* "ntp_required": --require-ntp and the clock is not synchronized */
	REASON_INTERRUPTED,   /* "interrupted": SIGINT or SIGTERM */
	REASON_USAGE,	      /* "usage": bad usage or input (exit 2) */
	REASON_SETUP_FAILED,  /* "setup_failed": threads, memory, topology or --dir not usable */
	REASON_BUSY,	      /* "busy": another run holds this node's lock (exit 3) */
	REASON_LEASE_EXPIRED, /* "lease_expired": an armed run's lease lapsed (orphaned, exit 4) */
	REASON_KILLED,	      /* "killed": `stop --kill` killed an armed run (state only, 137) */
	REASON_OTHER,	      /* "other": none of the above */
	REASON_COUNT
};

/* The token of a reason ("start_missed"); NULL for REASON_NONE and beyond the table. */
const char *reason_name(enum reason r);

/* The token of an error that happened: reason_name(r), or "other" when none was said. */
const char *reason_token(enum reason r);

/* The reason whose token is name, or REASON_NONE when there is none. */
enum reason reason_parse(const char *name);

/*
 * The reason of a worker's first error: verify_failed for a verification, no_space for
 * ENOSPC or EDQUOT, not_ready when the thread failed in its set-up (before the ready barrier:
 * ran false), io_error otherwise.
 */
enum reason reason_of_worker(const struct io_error *e, bool ran);

#endif
