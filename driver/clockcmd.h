/* SPDX-License-Identifier: MIT */
/*
 * `stagebench clock`: this node's wall clock answered over an open connection, so that the
 * launcher can measure the node's offset against its own clock (a few exchanges, the one of
 * least round trip kept) through ClusterShell, srun or ssh.
 */
#ifndef STAGEBENCH_CLOCKCMD_H
#define STAGEBENCH_CLOCKCMD_H

#include "driver/outcome.h"
#include "driver/result.h"

#define CLOCKCMD_SCHEMA "stagebench.clock/1"
/* A token is 1 to this many characters of [A-Za-z0-9]. */
#define CLOCKCMD_TOKEN_MAX 32
/* Without a line for this long, the command ends (exit 3). */
#define CLOCKCMD_IDLE_S 60.0
/* A shorter idle limit for tests, in seconds (not in --help). */
#define CLOCKCMD_IDLE_ENV "STAGEBENCH_CLOCK_IDLE_S"

/*
 * Print one JSON line about this node's clock (res: node and NTP state), flushed; then for
 * each line read on in_fd, a token, write "TOKEN REALTIME_NS\n" to out_fd in one write, the
 * clock read as late as possible before it. OUTCOME_OK at end of input, OUTCOME_USAGE on a
 * malformed line, OUTCOME_PRECONDITION after the idle limit, OUTCOME_FAILED when a read or
 * write fails; the reason on stderr.
 */
enum outcome clockcmd_serve(const struct node_result *res, int in_fd, int out_fd);

#endif
