/* SPDX-License-Identifier: MIT */
/*
 * One run per node at a time: a node-local lock, flock(LOCK_EX|LOCK_NB) on LOCKDIR/<node>.lock,
 * held for a command's whole life (and, through fork, by an armed run's detached process); the
 * file says who holds it. Different node names do not block each other.
 */
#ifndef STAGEBENCH_RUNLOCK_H
#define STAGEBENCH_RUNLOCK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * The lock directory's variable; without it: RUNLOCK_ROOT_DIR for root, else
 * $XDG_RUNTIME_DIR/stagebench (when $XDG_RUNTIME_DIR is this user's directory), else
 * /tmp/stagebench-<uid>.
 */
#define RUNLOCK_ENV	 "STAGEBENCH_LOCK_DIR"
#define RUNLOCK_ROOT_DIR "/run/stagebench"
#define RUNLOCK_SCHEMA	 "stagebench.lock/1"

/* What the lock file says of its holder: one "key value" line each. */
struct runlock_info {
	long pid;
	char node[72];
	char run_id[72];
	char command[16]; /* "run", "prepare" */
	char state[16];	  /* "running", "armed", "preparing" */
	double since;	  /* wall clock, UTC seconds: when it took the lock (or was armed) */
};

struct runlock {
	int fd; /* -1: not held */
	char path[PATH_MAX];
};

/* A lock not held (fd -1). */
void runlock_init(struct runlock *l);

/*
 * This user's lock directory into buf (see RUNLOCK_ENV). 0, or -ENAMETOOLONG.
 */
int runlock_dir(char *buf, size_t len);

/*
 * Take node's lock: the directory created when missing (mode 0755 for root, 0700 for others,
 * its last component only) and checked on its descriptor (a directory, not a link, owned by
 * this user, not writable by others); the file created exclusively (O_CREAT|O_EXCL|O_NOFOLLOW,
 * 0644) or, when there, opened without following a link and checked (a regular file of this
 * user's, not writable by others, one link); then flock(LOCK_EX|LOCK_NB) and me written into
 * it. 0 with l->fd held; -EBUSY when another process holds it, why the line that names it
 * ("node n1 is busy: run R (pid P, armed since T) holds /run/stagebench/n1.lock"); -errno
 * otherwise (-ENOSPC, -EDQUOT: no room for the directory, the file or what it says), why
 * saying which step. The descriptor is close-on-exec; a fork shares the lock.
 */
int runlock_take(struct runlock *l, const char *node, const struct runlock_info *me, char *why,
		 size_t whylen);

/* Rewrite what the file says (the detached process of an armed run: its pid). 0 or -errno. */
int runlock_note(struct runlock *l, const struct runlock_info *me);

/*
 * Close this process's descriptor. The lock is released when no process holds one (never
 * flock(LOCK_UN), which would release it for a detached process that shares it).
 */
void runlock_close(struct runlock *l);

/* Parse what a lock file says (text, len bytes) into info. true when it names a pid. */
bool runlock_parse(const char *text, size_t len, struct runlock_info *info);

#endif
