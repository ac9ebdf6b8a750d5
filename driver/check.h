/* SPDX-License-Identifier: MIT */
/*
 * `stagebench check`: a health check of this node in half a minute at most: clock,
 * CPU binding, the filesystem of --dir, the replicas present, and a short per-core probe.
 */
#ifndef STAGEBENCH_CHECK_H
#define STAGEBENCH_CHECK_H

#include "driver/options.h"
#include "driver/findings.h"
#include "driver/outcome.h"
#include "driver/run.h"
#include "platform/topo.h"

/*
 * Whether dirfd has room for the probe (res->fs, read before): the bytes and inodes it needs
 * into *bytes and *inodes.
 */
bool check_probe_room(const struct options *o, int dirfd, const struct node_result *res,
		      uint64_t *bytes, uint64_t *inodes);

/* The probe (check_probe.c): three short parts on every core in dirfd, their findings. */
void check_probe(struct findings *r, const struct options *o, struct topo *topo, int dirfd,
		 struct node_result *res);

/*
 * The directory's part of the check answers within this, whatever its filesystem does (then
 * its child gets 2 s to stop and remove its files: 27 s at most). Tests shorten it through
 * STAGEBENCH_HUNG_DIR_SECONDS (cmdenv.h), passed to check_node as its deadline_s.
 */
#define CHECK_DEADLINE_S 25

/*
 * The check, printed on stdout. Everything that touches --dir (dir->open, which opens it and
 * fills res->dir and res->fs, the filesystem findings, the listing and the probe) runs in a
 * child process: a directory whose server hangs gives "fail fs: not responding after
 * deadline_s s" instead of a check that never ends, and a signal ends the check at once.
 * The outcome is OUTCOME_OK when no finding is `fail`, OUTCOME_FAILED otherwise; dir->open's
 * outcome when the directory cannot be used (its reason logged), or an interruption.
 */
struct inventory_dir_hooks;
enum outcome check_node(const struct options *o, struct topo *topo, struct node_result *res,
			const struct inventory_dir_hooks *dir, int deadline_s);

#endif
