/* SPDX-License-Identifier: MIT */
/*
 * The lease of an armed run: a deadline on CLOCK_BOOTTIME (which counts a suspend too) in a
 * small file of its state directory, set when the run is armed and pushed one lease length
 * on by each renewal of its launcher. A lapsed lease stays lapsed: a late renewal is refused.
 * The run and its renewers take turns through an flock on the state directory.
 */
#ifndef STAGEBENCH_LEASE_H
#define STAGEBENCH_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#define LEASE_SCHEMA "stagebench.lease/1"
#define LEASE_MIN_S  5.0
#define LEASE_MAX_S  86400.0

struct lease {
	double lease_s;
	int64_t deadline_ns; /* CLOCK_BOOTTIME */
	int64_t renewed_ns;  /* CLOCK_BOOTTIME of the last renewal (the arming is the first) */
	double renewed_at;   /* the same instant on the wall clock, UTC seconds */
	uint64_t renewals;   /* the arming included */
};

/* CLOCK_BOOTTIME in ns. */
int64_t lease_now_ns(void);

/* Seconds left at now_ns (0 once lapsed). */
double lease_remaining_s(const struct lease *l, int64_t now_ns);

/* Whether it has lapsed at now_ns. */
bool lease_lapsed(const struct lease *l, int64_t now_ns);

/*
 * Take the state directory's lease lock (flock on dirfd), trying for up to wait_s. 0, or
 * -EWOULDBLOCK when another process held it all that time, or -errno.
 */
int lease_lock(int dirfd, double wait_s);
void lease_unlock(int dirfd);

/* Read dirfd's lease file (not through a link). 0, -ENOENT when there is none, -EINVAL. */
int lease_read(int dirfd, struct lease *l);

/*
 * Start a lease of lease_s seconds from now (the arming: the first renewal) and write it:
 * a temporary created O_CREAT|O_EXCL|O_NOFOLLOW, renamed over the lease file. 0 or -errno.
 */
int lease_start(int dirfd, double lease_s, struct lease *l);

/*
 * Renew under the lock (the caller holds lease_lock): one lease length from now. 0 with *l
 * the new lease; -ENOENT (no lease), -ETIME when it had lapsed (*l the lapsed one: never
 * revived), or -errno.
 */
int lease_renew(int dirfd, struct lease *l);

#endif
