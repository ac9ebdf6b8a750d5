/* SPDX-License-Identifier: MIT */
/*
 * `stagebench check`: a health check of this node in half a minute at most: clock,
 * CPU binding, the filesystem of --dir, the replicas present, and a short per-core probe.
 */
#ifndef STAGEBENCH_CHECK_H
#define STAGEBENCH_CHECK_H

#include "driver/options.h"
#include "driver/outcome.h"
#include "driver/run.h"
#include "platform/topo.h"

enum check_level { CHECK_OK = 0, CHECK_WARN, CHECK_FAIL };

/* One line of the check: ok, warn or fail, an area, a name and what was found. */
struct check_finding {
	enum check_level level;
	const char *area;
	char name[32];
	char message[600];
};

#define CHECK_MAX 128

struct check_report {
	struct check_finding f[CHECK_MAX];
	size_t n;
};

/* Add a finding to r (dropped when r is full). */
void check_add(struct check_report *r, enum check_level level, const char *area, const char *name,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The probe (check_probe.c): three short parts on every core in dirfd, their findings. */
void check_probe(struct check_report *r, const struct options *o, struct topo *topo, int dirfd,
		 struct node_result *res);

/*
 * What a check that was killed can leave in --dir, by full name: its probe replica
 * (stagebench.check.probe.PID.TOKEN, or its temporary file, that name followed by
 * .tmp.HOST.PID.TOKEN), its write probe (stagebench.check-write.PID.TOKEN) and
 * the files of its create probe (stagebench.create.NODE.pPID-TOKEN-rR.tT.SEQ).
 */
enum check_leftover { CHECK_LEFT_NONE, CHECK_LEFT_PROBE, CHECK_LEFT_WRITE, CHECK_LEFT_FILE };
enum check_leftover check_leftover_name(const char *name);

/*
 * Whether name in dirfd is such a leftover, by its name and its content: a regular file (not
 * a symlink) that is empty, carries a stagebench header in block 0, or holds what the check
 * writes there (the write probe's 4 KiB of 0x5a; the probe replica's reserved, zero block 0).
 * 1 yes, 0 no (another's file under a similar name), -errno when it cannot be read.
 */
int check_leftover_removable(int dirfd, const char *name);

/* "ok", "warn", "fail". */
const char *check_level_name(enum check_level level);

/*
 * The directory's part of the check answers within this, whatever its filesystem does (then
 * its child gets 2 s to stop and remove its files: 27 s at most).
 */
#define CHECK_DEADLINE_S 25

/*
 * The check, printed on stdout. Everything that touches --dir (dir->open, which opens it and
 * fills res->dir and res->fs, the filesystem findings, the listing and the probe) runs in a
 * child process: a directory whose server hangs gives "fail fs: not responding after
 * CHECK_DEADLINE_S s" instead of a check that never ends, and a signal ends the check at once.
 * The outcome is OUTCOME_OK when no finding is `fail`, OUTCOME_FAILED otherwise; dir->open's
 * outcome when the directory cannot be used (its reason logged), or an interruption.
 */
struct inventory_dir_hooks;
enum outcome check_node(const struct options *o, struct topo *topo, struct node_result *res,
			const struct inventory_dir_hooks *dir);

#endif
