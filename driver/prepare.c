/* SPDX-License-Identifier: MIT */
/*
 * Replica preparation, shared by `prepare` and `run`.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "driver/note.h"
#include "driver/prepare.h"
#include "driver/stop.h"
#include "platform/clock.h"
#include "util/log.h"
#include "util/size.h"
#include "platform/ours.h"
#include "platform/replica.h"
#include "platform/replica_probe.h"

/* How often a prepare waiting for another's recreation of a replica looks again. */
#define PREPARE_LOCK_POLL_MS 20

/* What is there: OUTCOME_OK with *exists, or a refusal in out->error. */
static enum outcome prepare_probe(const struct prepare_req *rq, struct replica_info *info,
				  bool *exists, struct prepare_result *out)
{
	const struct plan_test *pt = rq->pt;
	int rc = replica_probe(rq->dirfd, pt->replica, info);

	*exists = rc == 0;
	if (rc == 0 && (!info->ours || info->size != pt->file)) {
		snprintf(out->error, sizeof(out->error),
			 "replica '%s/%s' is %s (%llu bytes): refusing to use or replace it",
			 rq->dir, pt->replica,
			 info->ours ? "of the wrong size" : "not a stagebench replica",
			 (unsigned long long)info->size);
		out->reason = REASON_REPLICA_INVALID;
		return OUTCOME_PRECONDITION;
	}
	if (rc && rc != -ENOENT) {
		snprintf(out->error, sizeof(out->error), "replica '%s/%s': %s", rq->dir,
			 pt->replica,
			 rc == -EINVAL || rc == -EISDIR
			     ? "not a regular file (a symbolic link, a directory, a FIFO...): "
			       "refusing to use or replace it"
			     : strerror(-rc));
		out->reason =
		    rc == -EINVAL || rc == -EISDIR ? REASON_REPLICA_INVALID : REASON_IO_ERROR;
		return OUTCOME_PRECONDITION;
	}
	return OUTCOME_OK;
}

/* Write the replica; on -EEXIST take the one another process published, if complete. */
static enum outcome prepare_create(const struct prepare_req *rq, bool exists,
				   struct prepare_result *out)
{
	const struct plan_test *pt = rq->pt;
	struct replica_info info;
	struct io_error err;
	char sz[32];
	uint64_t gen = replica_new_generation();
	uint64_t t0 = clock_mono_ns();

	log_info("test %s: %s replica '%s/%s' (%s)", pt->def->name,
		 exists ? "recreating" : "creating", rq->dir, pt->replica,
		 size_format(pt->file, sz, sizeof(sz)));
	memset(&err, 0, sizeof(err));
	int rc = replica_create(rq->dirfd, rq->dir, pt->replica, pt->file, gen, rq->origin,
				rq->threads, rq->xfer, rq->swap && exists, &stop_part, &err);
	if (rc == -EEXIST) {
		/* Another node sharing this server published it first: use theirs. */
		rc = replica_probe(rq->dirfd, pt->replica, &info);
		if (rc == 0 && info.ours && info.size == pt->file) {
			log_warn(
			    "test %s: replica %s/%s was created at the same time by another "
			    "process (generation %llu): kept theirs, discarded this one's copy",
			    pt->def->name, rq->dir, pt->replica,
			    (unsigned long long)info.generation);
			out->done = PREPARE_THEIRS;
			out->generation = info.generation;
			out->size = info.size;
			return OUTCOME_OK;
		}
		err.errnum = EEXIST;
	}
	if (rc) {
		char line[700];
		if (stop_requested()) /* its temporary file is removed; the caller says why */
			return OUTCOME_FAILED;
		note_worker_error(&err, line, sizeof(line));
		snprintf(out->error, sizeof(out->error), "preparing replica: %.570s", line);
		out->reason = reason_of_worker(&err, true);
		return OUTCOME_FAILED;
	}
	out->done = exists ? PREPARE_RECREATED : PREPARE_CREATED;
	out->generation = gen;
	out->size = pt->file;
	out->seconds = (double)(clock_mono_ns() - t0) / 1e9;
	return OUTCOME_OK;
}

/*
 * Recreating in place (a rename over the replica) while another process does the same must not
 * end with both saying "recreated": each holds an exclusive flock on the replica it found for
 * as long as it writes the new one. Returns the locked fd, -errno (nothing to lock: go on
 * unlocked), or -EINTR when a signal came while waiting. *waited: another held it first.
 */
static int prepare_lock(const struct prepare_req *rq, bool *waited)
{
	int fd = openat(rq->dirfd, rq->pt->replica, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	*waited = false;
	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int err = errno;
		if (err != EWOULDBLOCK && err != EINTR) {
			close(fd);
			return -err;
		}
		if (stop_signal_seen()) {
			close(fd);
			return -EINTR;
		}
		*waited = true;
		struct timespec ts = {0, PREPARE_LOCK_POLL_MS * 1000000L};
		nanosleep(&ts, NULL);
	}
	return fd;
}

/*
 * Under the lock of prepare_lock(): the replica is still of generation gen0 (0: none), or
 * another process recreated it meanwhile, and then this one uses theirs and says so. 1 when
 * theirs is used.
 */
static int prepare_theirs(const struct prepare_req *rq, uint64_t gen0, struct prepare_result *out)
{
	struct replica_info info;

	if (!gen0 || replica_probe(rq->dirfd, rq->pt->replica, &info) != 0 || !info.ours ||
	    info.generation == gen0 || info.size != rq->pt->file)
		return 0;
	log_warn("test %s: replica %s/%s was %s by another process (generation %llu): %s",
		 rq->pt->def->name, rq->dir, rq->pt->replica,
		 rq->swap ? "recreated at the same time" : "already recreated",
		 (unsigned long long)info.generation,
		 rq->swap ? "kept theirs, discarded this one's copy" : "using it");
	out->done = PREPARE_THEIRS;
	out->generation = info.generation;
	out->size = info.size;
	return 1;
}

/*
 * Recreate an existing replica under the lock of prepare_lock(), unless it is no longer of
 * generation gen0: `prepare` passes the one it found, and swaps the new one in once complete;
 * a run passes the one this node read in the previous repetition, and removes the old one
 * first. Nodes sharing the directory reach a run's recreation at different times: the one
 * that comes second waits for the lock, finds the new one and uses it, and never removes a
 * replica the others are already reading.
 */
static enum outcome prepare_recreate(const struct prepare_req *rq, uint64_t gen0,
				     struct prepare_result *out)
{
	const struct plan_test *pt = rq->pt;
	bool waited;
	int fd = prepare_lock(rq, &waited);
	enum outcome o = OUTCOME_OK;

	if (fd == -EINTR)
		return OUTCOME_FAILED;
	if ((fd >= 0 || !rq->swap) && prepare_theirs(rq, gen0, out))
		goto out;
	int rc = rq->swap ? 0 : ours_remove(rq->dirfd, pt->replica);
	if (rc && rc != -ENOENT) {
		snprintf(out->error, sizeof(out->error), "cannot remove replica '%s/%s': %s",
			 rq->dir, pt->replica, strerror(-rc));
		out->reason = REASON_IO_ERROR;
		o = OUTCOME_FAILED;
	} else {
		o = prepare_create(rq, true, out);
	}
out:
	if (fd >= 0)
		close(fd);
	return o;
}

enum outcome prepare_replica(const struct prepare_req *rq, struct prepare_result *out)
{
	const struct plan_test *pt = rq->pt;
	struct replica_info info;
	bool exists;
	char sz[32];

	memset(out, 0, sizeof(*out));
	enum outcome o = prepare_probe(rq, &info, &exists, out);
	if (o != OUTCOME_OK)
		return o;
	if (exists && !rq->replace) {
		out->done = PREPARE_KEPT;
		out->generation = info.generation;
		out->size = info.size;
		return OUTCOME_OK;
	}
	if (!exists && !pt->may_create) {
		snprintf(out->error, sizeof(out->error),
			 "replica '%s/%s' (%s) is missing: run 'stagebench prepare %s' first",
			 rq->dir, pt->replica, size_format(pt->file, sz, sizeof(sz)),
			 pt->def->name);
		out->reason = REASON_REPLICA_MISSING;
		return OUTCOME_PRECONDITION;
	}
	if (exists)
		return prepare_recreate(rq, rq->swap ? info.generation : rq->seen, out);
	return prepare_create(rq, false, out);
}

/* The line that says what was done for test pt. */
static void prepare_say(const struct plan_test *pt, const char *dir, const struct prepare_result *r)
{
	char a[32], b[32];
	double s = r->seconds;

	if (r->done == PREPARE_KEPT)
		printf("test %s: replica %s/%s (%s, generation %llu) is kept, as the spec "
		       "allows (--force recreates it)\n",
		       pt->def->name, dir, pt->replica, size_format(r->size, a, sizeof(a)),
		       (unsigned long long)r->generation);
	else if (r->done != PREPARE_THEIRS)
		printf("test %s: %s %s/%s (%s, generation %llu) in %.3f s, %s\n", pt->def->name,
		       r->done == PREPARE_RECREATED ? "recreated" : "created", dir, pt->replica,
		       size_format(pt->file, a, sizeof(a)), (unsigned long long)r->generation, s,
		       size_format_rate(s > 0 ? (double)pt->file / s : 0, b, sizeof(b)));
}

enum outcome prepare_command(const struct plan *plan, int dirfd, const char *dir, unsigned threads,
			     bool force, const char *run_id)
{
	enum outcome out = OUTCOME_OK;
	struct prepare_result r;
	struct pattern_origin origin = {.repetition = plan->run.repetition};
	struct prepare_req rq = {.dirfd = dirfd,
				 .dir = dir,
				 .swap = true,
				 .threads = threads,
				 .xfer = plan->run.xfer,
				 .origin = &origin};

	snprintf(origin.run_id, sizeof(origin.run_id), "%s", run_id);
	for (size_t i = 0; i < plan->ntests && !stop_signal_seen(); i++) {
		const struct plan_test *pt = &plan->tests[i];

		if (!pt->def->has_replica) {
			printf("test %s: no replica to prepare\n", pt->def->name);
			continue;
		}
		rq.pt = pt;
		rq.replace = pt->def->recreate || force;
		enum outcome o = prepare_replica(&rq, &r);
		if (o != OUTCOME_OK && !r.error[0]) /* stopped by a signal: said once below */
			break;
		if (o != OUTCOME_OK)
			log_err("test %s: %s", pt->def->name, r.error);
		else
			prepare_say(pt, dir, &r);
		out = outcome_worse(out, o);
	}
	if (stop_signal_seen()) {
		log_err("interrupted by %s", stop_signal_seen() == SIGTERM ? "SIGTERM" : "SIGINT");
		out = stop_signal_seen() == SIGTERM ? OUTCOME_INTERRUPTED_TERM
						    : OUTCOME_INTERRUPTED_INT;
	}
	return out;
}
