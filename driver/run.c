/* SPDX-License-Identifier: MIT */
/*
 * The run loop. The main thread owns the plan: it prepares replicas, publishes each part to
 * the pool of pinned worker threads, decides its start instant and aggregates; the threads
 * do set-up, wait for the start instant, run the part and tear down. They meet at the
 * pool's gate, a barrier that can be broken, so that no thread ever waits for one that has
 * failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/note.h"
#include "driver/pool.h"
#include "driver/prepare.h"
#include "driver/progress.h"
#include "driver/run.h"
#include "driver/start.h"
#include "driver/stop.h"
#include "util/names.h"
#include "util/prng.h"
#include "platform/replica.h"
#include "platform/replica_identity.h"

struct run_state {
	const struct plan *plan;
	const struct run_env *env;
	struct node_result *res;
	struct pool pool;
	struct start_sched sched;
	struct progress progress;
	bool abort_rest; /* the start was missed: nothing more runs */
	bool armed_said; /* env->armed was called */
	bool halted;	 /* a hook halted the run (halt says how): nothing more starts */
	struct run_halt halt;
	struct result_clocks clocks;
	struct replica_identity id; /* of the replica the part reads, at its release */
	int id_rc;		    /* 0: id is known */
};

/* The wall clock and the monotonic clock at one instant (the monotonic one read around it). */
static void run_clock_pair(double *wall, uint64_t *mono)
{
	uint64_t a = clock_mono_ns();

	*wall = clock_wall();
	*mono = a + (clock_mono_ns() - a) / 2;
}

/* The run halts as st->halt says (once): the current part's threads stop, the error is said. */
static void run_halt_now(struct run_state *st)
{
	if (st->halted)
		return;
	st->halted = true;
	stop_request();
	note_error(st->res, st->halt.reason, "%s", st->halt.error);
}

/* A safe point: whether the run has halted, the watch hook asked (start_at as it says). */
static bool run_halted(struct run_state *st, double start_at)
{
	if (!st->halted && st->env->watch &&
	    !st->env->watch(st->env->hook_arg, start_at, &st->halt))
		run_halt_now(st);
	return st->halted;
}

/* Where a part reads or writes: its replica's path, or the directory for a kind that writes. */
static void run_part_file(const struct run_state *st, const struct plan_test *pt,
			  struct part_result *pr)
{
	if (pt->def->has_replica)
		snprintf(pr->file, sizeof(pr->file), "%s/%s", st->res->dir, pt->replica);
	else
		snprintf(pr->file, sizeof(pr->file), "%s", st->res->dir);
}

/*
 * Parts from..pt->nparts-1 of test tr, which the halt keeps from starting: each says so in a
 * part of its own (its planned start instant when the schedule knows it), with no results.
 */
static void run_not_started(struct run_state *st, const struct plan_test *pt, size_t from,
			    struct test_result *tr)
{
	struct node_result *res = st->res;

	if (from >= pt->nparts)
		return;
	for (size_t k = from; k < pt->nparts; k++) {
		struct part_result *pr = &res->parts[res->nparts++];

		memset(pr, 0, sizeof(*pr));
		pr->pp = &st->plan->parts[pt->first + k];
		pr->pt = pt;
		pr->repetition = tr->repetition;
		pr->xfer = st->plan->run.xfer;
		run_part_file(st, pt, pr);
		pr->scheduled_at = pr->start_at = start_planned(&st->sched);
		start_skip(&st->sched);
		pr->residency = -1.0;
		pr->io_start_spread_s = -1.0;
		pr->status = st->halt.rest;
		snprintf(pr->error, sizeof(pr->error), "%s", st->halt.not_started);
		pr->reason = st->halt.reason;
		tr->nparts++;
	}
	if (tr->status < st->halt.rest)
		tr->status = st->halt.rest;
	if (!tr->error[0]) {
		snprintf(tr->error, sizeof(tr->error), "%s", st->halt.not_started);
		tr->reason = st->halt.reason;
	}
}

/* Make sure the replica of test pt is there (creating or recreating it). 0 or an outcome. */
static enum outcome run_replica(struct run_state *st, const struct plan_test *pt, unsigned rep,
				struct test_result *tr)
{
	struct node_result *res = st->res;
	struct prepare_result r;
	struct pattern_origin origin = {.repetition = tr->repetition};
	struct prepare_req rq = {
	    .dirfd = st->env->dirfd,
	    .dir = res->dir,
	    .pt = pt,
	    .replace = rep > 1 && pt->def->recreate,
	    .swap = false,
	    /* The same test one repetition before: res->tests is filled repetition by repetition.
	     */
	    .seen = rep > 1 ? (tr - st->plan->ntests)->generation : 0,
	    .threads = (unsigned)res->tplan.nslots,
	    .xfer = st->plan->run.xfer,
	    .origin = &origin,
	};
	snprintf(origin.run_id, sizeof(origin.run_id), "%s", res->run_id);
	enum outcome out = prepare_replica(&rq, &r);

	if (out != OUTCOME_OK) {
		if (r.error[0]) {
			snprintf(tr->error, sizeof(tr->error), "%s", r.error);
			tr->reason = r.reason;
			note_error(res, tr->reason, "test %s: %s", pt->def->name, tr->error);
		}
		return out;
	}
	tr->generation = r.generation;
	tr->prepared = r.done == PREPARE_CREATED || r.done == PREPARE_RECREATED;
	tr->prepare_s = r.seconds;
	return OUTCOME_OK;
}

/* The part's own result fields and what the threads get, before it is published. */
static void run_publish(struct run_state *st, const struct plan_test *pt,
			const struct plan_part *pp, const struct test_result *tr,
			struct part_result *pr)
{
	const struct plan_run *r = &st->plan->run;
	struct node_result *res = st->res;
	struct pool_part *s = &st->pool.part;

	pr->pp = pp;
	pr->pt = pt;
	pr->repetition = tr->repetition;
	pr->generation = tr->generation;
	pr->xfer = r->xfer;
	pr->verified = r->verify && pt->def->has_replica;
	pr->fsync = r->fsync && !pt->def->has_replica;
	pr->residency = -1.0;
	run_part_file(st, pt, pr);

	memset(s, 0, sizeof(*s));
	s->ops = pp->ops;
	s->params.part = pp->def->name;
	s->params.path = pr->file;
	s->params.dir = res->dir;
	s->params.dirfd = st->env->dirfd;
	/* The repetition is part of created names: with --keep, repetitions must not clash. */
	char tag[sizeof(res->run_tag) + 16];
	names_run_tag_rep(tag, sizeof(tag), res->run_tag, tr->repetition);
	names_file_prefix(s->name_prefix, sizeof(s->name_prefix), pp->def->name, res->node, tag);
	s->params.name_prefix = s->name_prefix;
	s->params.count = pp->p.count;
	s->params.chunk = pp->p.chunk;
	s->params.file_bytes = pp->p.file;
	s->params.passes = pp->p.passes;
	s->params.xfer = r->xfer;
	s->params.generation = pt->def->has_replica ? tr->generation : replica_new_generation();
	s->params.page_size = sysconf(_SC_PAGESIZE);
	s->params.verify = r->verify;
	s->params.fsync = r->fsync;
	s->params.keep = r->keep;
	s->stream = prng_hash_str(pp->def->name) * 0x9e3779b97f4a7c15ull + tr->repetition;
}

/*
 * Before the release of a part that reads a replica, untimed: its identity (re-checked at
 * the part's end), then this node's cached pages of it dropped, so that the reads go to the
 * server as the spec expects (not with --keep-cache, for comparisons on a local filesystem),
 * and what is still cached: the residency at the release, which may be unknown (a FUSE
 * direct_io file cannot be mapped) and is then said so, never 0.
 */
static void run_cold(struct run_state *st, struct part_result *pr)
{
	struct fs_residency r;

	st->id_rc = -ENOENT;
	if (!pr->pt->def->has_replica)
		return;
	pr->cache_cold_expected = true;
	st->id_rc = replica_identity_get(AT_FDCWD, pr->file, &st->id);
	if (st->id_rc == 0 && st->id.has_origin) {
		pr->has_origin = true;
		pr->origin = st->id.origin;
	}
	if (!st->plan->run.keep_cache) {
		int rc = fs_drop_path(pr->file, &r);
		/* Only measuring what stayed may have failed (an unmappable file): it was dropped.
		 */
		pr->cache_dropped = rc == 0 || (!r.known && r.why == -rc);
	}
	fs_residency_path(pr->file, &r);
	pr->residency = r.known ? r.fraction : -1.0;
	pr->residency_why = r.known ? 0 : r.why;
	if (r.known && r.fraction > RESULT_WARM_FRACTION)
		result_part_warning(
		    pr, st->res,
		    "%s: %.0f%% of the replica is in this node's page cache at the "
		    "release, though the part should start cold: its reads may come "
		    "from this node's cache",
		    pr->pp->def->name, r.fraction * 100.0);
}

/*
 * At the part's end: a replica replaced or changed while it was read makes the part failed
 * (its threads may have read the node's stale cache of the old file, and --verify passed).
 */
static void run_recheck(struct run_state *st, struct part_result *pr)
{
	static const struct {
		unsigned bit;
		const char *what;
	} how[] = {{REPLICA_CHANGED_GONE, "removed"},
		   {REPLICA_CHANGED_FILE, "replaced by another file"},
		   {REPLICA_CHANGED_SIZE, "another size"},
		   {REPLICA_CHANGED_GENERATION, "another generation"},
		   {REPLICA_CHANGED_TIMES, "modified"}};
	char line[sizeof(pr->error)], what[160] = "";
	unsigned changed = 0;
	size_t used = 0;

	if (!pr->pt->def->has_replica || st->id_rc ||
	    replica_identity_check(AT_FDCWD, pr->file, &st->id, &changed) != 1)
		return;
	pr->replica_changed = true;
	if (pr->status != PART_INTERRUPTED)
		pr->status = PART_FAILED;
	for (size_t i = 0; i < sizeof(how) / sizeof(how[0]); i++)
		if ((changed & how[i].bit) && used < sizeof(what))
			used += (size_t)snprintf(what + used, sizeof(what) - used, "%s%s",
						 used ? ", " : "", how[i].what);
	snprintf(line, sizeof(line),
		 "the replica '%s' changed during the part (%s): what was read is not what the "
		 "part was given",
		 pr->file, what);
	/* A thread's own error (a page beyond a truncation) stays the part's first error. */
	if (!pr->error[0]) {
		snprintf(pr->error, sizeof(pr->error), "%s", line);
		pr->reason = REASON_REPLICA_CHANGED;
	}
	note_error(st->res, REASON_REPLICA_CHANGED, "%s: %s", pr->pp->def->name, line);
}

/* With every thread ready: the start instant, or a skip. */
static enum outcome run_decide(struct run_state *st, struct part_result *pr)
{
	struct pool_part *s = &st->pool.part;
	enum outcome out = OUTCOME_OK;

	run_cold(st, pr);
	if (stop_requested()) {
		s->skip_run = true;
		start_skip(&st->sched);
	} else {
		out = start_decide(&st->sched, clock_wall(), pr, &st->res->start_at);
		if (out != OUTCOME_OK) {
			note_error(st->res, pr->reason, "%s: %s", pr->pp->def->name, pr->error);
			s->skip_run = true;
		}
		s->start_at = pr->start_at;
	}
	run_clock_pair(&st->clocks.wall0, &st->clocks.mono0);
	if (!st->clocks.has_ref && !s->skip_run) {
		st->clocks.has_ref = true;
		st->clocks.wall_ref = st->clocks.wall0;
		st->clocks.mono_ref = st->clocks.mono0;
	}
	return out;
}

/*
 * About once a second while the main thread waits for a part's threads: the progress line,
 * and the watch hook (a halt stops the threads at their next check).
 */
static void run_tick(void *arg)
{
	struct run_state *st = arg;

	if (st->env->progress)
		progress_tick(&st->progress);
	run_halted(st, st->pool.part.start_at);
}

/* Run one part on every thread. */
static enum outcome run_part(struct run_state *st, const struct plan_test *pt,
			     const struct plan_part *pp, const struct test_result *tr,
			     struct part_result *pr)
{
	struct gate *g = &st->pool.gate;

	run_publish(st, pt, pp, tr, pr);
	/*
	 * --start-in counts from the moment the first part could start, after any replica
	 * it needed was created; --start-at is absolute and was fixed by the caller.
	 */
	if (st->sched.part_index == 0)
		st->res->start_at = start_first(&st->sched, clock_wall());
	gate_wait(g); /* publish */
	gate_wait(g); /* ready */
	enum outcome out = run_decide(st, pr);
	gate_wait(g); /* go */
	if (st->env->armed && !st->armed_said && out == OUTCOME_OK && !st->pool.part.skip_run) {
		st->armed_said = true;
		if (!st->env->armed(st->env->hook_arg, pr->start_at, &st->halt))
			run_halt_now(st);
	}
	if (st->env->progress || st->env->watch) {
		st->progress.part = pr;
		gate_wait_tick(g, 1.0, run_tick, st); /* done */
		if (st->env->progress)
			progress_clear(&st->progress);
	} else {
		gate_wait(g); /* done */
	}
	run_clock_pair(&st->clocks.wall1, &st->clocks.mono1);
	gate_wait(g); /* results */
	if (out != OUTCOME_OK) {
		pr->status = PART_FAILED;
		st->abort_rest = true;
		return out;
	}
	result_aggregate(pr, st->pool.out, st->pool.nthreads, &st->clocks, stop_requested(),
			 stop_signal_seen(), st->res);
	run_recheck(st, pr);
	/* A halt stopped it (a thread's own error, a replica that changed, stay what they are). */
	bool ran = false, own = pr->replica_changed;
	for (size_t i = 0; pr->threads && i < pr->nthreads; i++) {
		ran = ran || pr->threads[i].ran;
		own = own || pr->threads[i].rc != 0;
	}
	if (st->halted && !stop_signal_seen() && !own) {
		pr->status = ran ? st->halt.status : st->halt.rest;
		snprintf(pr->error, sizeof(pr->error), "%s",
			 ran ? st->halt.stopped : st->halt.not_started);
		pr->reason = st->halt.reason;
	}
	return pr->status == PART_FAILED ? OUTCOME_FAILED : OUTCOME_OK;
}

/* One repetition of one test: its replica, then its parts. */
static enum outcome run_test(struct run_state *st, const struct plan_test *pt, size_t rep,
			     struct test_result *tr)
{
	struct node_result *res = st->res;
	enum outcome tout = OUTCOME_OK;

	tr->pt = pt;
	/* --repetition numbers the first one: a launcher runs one per invocation. */
	tr->repetition = (unsigned)(st->plan->run.repetition + rep - 1);
	tr->first_part = res->nparts;
	if (stop_signal_seen() || st->abort_rest) {
		tr->status = stop_signal_seen() ? PART_INTERRUPTED : PART_SKIPPED;
		return OUTCOME_OK;
	}
	if (run_halted(st, 0)) {
		run_not_started(st, pt, 0, tr);
		return OUTCOME_OK;
	}
	if (pt->def->has_replica)
		tout = run_replica(st, pt, (unsigned)rep, tr);
	for (size_t k = 0; tout == OUTCOME_OK && k < pt->nparts; k++) {
		if (run_halted(st, 0)) {
			run_not_started(st, pt, k, tr);
			break;
		}
		struct part_result *pr = &res->parts[res->nparts++];

		tr->nparts++;
		enum outcome pout = run_part(st, pt, &st->plan->parts[pt->first + k], tr, pr);
		tr->result_s += pr->node_time_s;
		if (pr->status > tr->status)
			tr->status = pr->status;
		if (st->halted && !tr->error[0] && pr->error[0]) {
			snprintf(tr->error, sizeof(tr->error), "%s: %.560s", pr->pp->def->name,
				 pr->error);
			tr->reason = pr->reason;
		}
		if (pout != OUTCOME_OK) {
			tout = pout;
			snprintf(tr->error, sizeof(tr->error), "%s: %.560s", pr->pp->def->name,
				 pr->error);
			tr->reason = pr->reason;
		}
		if (stop_signal_seen() || st->abort_rest)
			break;
		if (st->halted) {
			run_not_started(st, pt, k + 1, tr);
			break;
		}
		/* A failed part stopped its own threads; the next part runs. */
		stop_next_part();
	}
	if (tout != OUTCOME_OK && tr->status < PART_FAILED)
		tr->status =
		    tout == OUTCOME_PRECONDITION && !tr->nparts ? PART_SKIPPED : PART_FAILED;
	if (stop_signal_seen())
		tr->status = PART_INTERRUPTED;
	return tout;
}

void run_buffer_place(uint64_t offset, uint64_t xfer, struct node_result *res)
{
	int rc;

	if (offset != PLAN_AUTO) {
		memset(&res->bufplace, 0, sizeof(res->bufplace));
		res->bufplace.offset = (size_t)offset;
		res->bufplace.fixed = true;
	} else if ((rc = bufplace_calibrate((size_t)xfer, &res->bufplace)) != 0) {
		note_warning(res, "cannot calibrate the I/O buffer's placement (%s): page-aligned",
			     strerror(-rc));
		res->bufplace.offset = 0;
	}
}

enum outcome run_execute(const struct plan *plan, const struct run_env *env,
			 struct node_result *res)
{
	struct run_state st;
	enum outcome out = OUTCOME_OK;
	size_t reps = (size_t)plan->run.repeat;

	memset(&st, 0, sizeof(st));
	st.plan = plan;
	st.env = env;
	st.res = res;
	start_init(&st.sched, &plan->run, res->start_at);
	res->tests = calloc(reps * plan->ntests, sizeof(*res->tests));
	res->parts = calloc(reps * plan->nparts, sizeof(*res->parts));
	if (!res->tests || !res->parts) {
		note_error(res, REASON_SETUP_FAILED, "out of memory");
		return OUTCOME_FAILED;
	}
	run_buffer_place(plan->run.buffer_offset, plan->run.xfer, res);
	if (pool_start(&st.pool, env->topo, (size_t)plan->run.xfer, res->bufplace.offset,
		       plan->run.seed, prng_hash_str(res->node), res))
		return OUTCOME_FAILED;
	st.progress.pool = &st.pool;

	for (size_t rep = 1; rep <= reps; rep++) {
		for (size_t ti = 0; ti < plan->ntests; ti++) {
			struct test_result *tr = &res->tests[res->ntests++];
			out = outcome_worse(out, run_test(&st, &plan->tests[ti], rep, tr));
		}
	}
	pool_stop(&st.pool);
	if (st.halted)
		out = outcome_worse(out, st.halt.out);
	if (stop_signal_seen())
		out = outcome_worse(out, stop_signal_seen() == SIGTERM ? OUTCOME_INTERRUPTED_TERM
								       : OUTCOME_INTERRUPTED_INT);
	return out;
}
