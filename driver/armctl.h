/* SPDX-License-Identifier: MIT */
/*
 * The `status` and `stop` commands of a run armed with --detach STATE_DIR.
 */
#ifndef STAGEBENCH_ARMCTL_H
#define STAGEBENCH_ARMCTL_H

#include "driver/options.h"
#include "driver/outcome.h"

/*
 * Print the state of the run armed in o->tests[0] (text, --format json: one line, or csv);
 * with --clock (JSON only), then answer `stagebench clock`'s protocol on stdin and stdout
 * (clockcmd.h), whose outcome is the command's.
 */
enum outcome armctl_status(const struct options *o);

/*
 * Signal the run armed in o->tests[0] (--signal), only once its pid is verified to be that
 * run's stagebench, then wait up to --wait seconds for its final state and summary.
 */
enum outcome armctl_stop(const struct options *o);

#endif
