/* SPDX-License-Identifier: MIT */
/*
 * How a command ended, and the one place where that becomes an exit status.
 */
#ifndef STAGEBENCH_OUTCOME_H
#define STAGEBENCH_OUTCOME_H

enum outcome {
	OUTCOME_OK = 0,		  /* exit 0 */
	OUTCOME_FAILED,		  /* exit 1: a test failed (I/O error, verification) */
	OUTCOME_USAGE,		  /* exit 2: bad usage or input */
	OUTCOME_PRECONDITION,	  /* exit 3: replica, space, start missed, NTP required */
	OUTCOME_ORPHANED,	  /* exit 4: an armed run's lease lapsed: nobody would collect it */
	OUTCOME_INTERRUPTED_INT,  /* exit 130: SIGINT */
	OUTCOME_INTERRUPTED_TERM, /* exit 143: SIGTERM */
};

int outcome_exit_code(enum outcome o);
/*
 * The more serious of two outcomes: interrupted > orphaned > usage > precondition > failed >
 * ok.
 */
enum outcome outcome_worse(enum outcome a, enum outcome b);
const char *outcome_name(enum outcome o);

#endif
