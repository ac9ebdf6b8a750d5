/* SPDX-License-Identifier: MIT */
/*
 * The run loop. The main thread owns the plan: it prepares replicas, publishes each part,
 * decides its start instant and aggregates; one pinned worker thread per core does set-up,
 * waits for the start instant, runs the part and tears down. They meet at gates: a barrier
 * that can be broken, so that no thread ever waits for one that has failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/run.h"
#include "util/log.h"
#include "util/prng.h"
#include "util/size.h"
#include "workers/registry.h"
#include "workers/replica.h"

volatile sig_atomic_t run_signal;
volatile int run_stop;

/* Worker threads and the main thread share run_stop: relaxed atomics, no data race. */
static void run_stop_set(void)
{
	__atomic_store_n(&run_stop, 1, __ATOMIC_RELAXED);
}

static bool run_stopping(void)
{
	return __atomic_load_n(&run_stop, __ATOMIC_RELAXED) != 0;
}

/* Threads spin (rather than sleep) for the last RUN_SPIN_S before the start instant. */
#define RUN_SPIN_S 0.002
/* Without --interval, a part after the first starts this long after all threads are ready. */
#define RUN_NEXT_LEAD_S 0.010
/*
 * A difference this large between wall and monotonic elapsed time is a step of the wall
 * clock (ntpd steps at 0.128 s, chrony at 1 s; a slew moves both clocks alike).
 */
#define RUN_STEP_MIN_S 0.1

static void run_on_signal(int sig)
{
	if (run_signal) {
		/* A second signal: the user wants out now; only a half-written replica goes. */
		replica_abort_cleanup();
		_exit(sig == SIGINT ? 130 : 143);
	}
	run_signal = sig;
	/* Threads read run_stop while this runs: the same lock-free (signal-safe) atomic store. */
	run_stop_set();
}

void run_install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = run_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

const char *run_status_name(enum part_status s)
{
	static const char *const names[] = {
	    [PART_OK] = "ok",
	    [PART_LATE] = "late",
	    [PART_FAILED] = "failed",
	    [PART_SKIPPED] = "skipped",
	    [PART_INTERRUPTED] = "interrupted",
	};
	return names[s];
}

/* Log a line and keep a copy in list (up to max lines) for the summary. */
static void run_note(enum log_level level, char **list, size_t *n, size_t max, const char *fmt,
		     va_list ap) __attribute__((format(printf, 5, 0)));
static void run_note(enum log_level level, char **list, size_t *n, size_t max, const char *fmt,
		     va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	log_msg(level, "%s", line);
	if (*n < max)
		list[(*n)++] = strdup(line);
}

void run_error(struct node_result *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	run_note(LOG_ERR, res->errors, &res->nerrors, sizeof(res->errors) / sizeof(res->errors[0]),
		 fmt, ap);
	va_end(ap);
}

void run_warning(struct node_result *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	run_note(LOG_WARN, res->warnings, &res->nwarnings,
		 sizeof(res->warnings) / sizeof(res->warnings[0]), fmt, ap);
	va_end(ap);
}

void run_format_error(const struct bench_error *e, char *buf, size_t len)
{
	char where[48] = "";
	char gen[96] = "";

	if (e->has_offset)
		snprintf(where, sizeof(where), " at %llu", (unsigned long long)e->offset);
	if (e->has_generation)
		snprintf(gen, sizeof(gen), " (expected generation %llu, found %llu)",
			 (unsigned long long)e->expected_gen, (unsigned long long)e->found_gen);
	/* Verification errors in the words of the check, not of errno (ESTALE is no NFS handle). */
	const char *what = strerror(e->errnum);
	if (strcmp(e->op, "verify") == 0 && e->errnum == ESTALE)
		what = "block of another replica generation or offset";
	else if (strcmp(e->op, "verify") == 0 && e->errnum == EBADMSG)
		what = "not a stagebench block";
	else if (strcmp(e->op, "touch") == 0 && e->errnum == EFAULT)
		what = "page beyond the end of the file (SIGBUS: truncated under the mapping)";
	snprintf(buf, len, "%s '%s'%s: %s%s", e->op[0] ? e->op : "operation", e->path, where, what,
		 gen);
}

/* A barrier of n parties that can be broken: then every wait returns -ECANCELED. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned parties, waiting;
	unsigned long generation;
	bool broken;
};

static void gate_init(struct gate *g, unsigned parties)
{
	pthread_condattr_t ca;

	/* Timed waits (gate_wait_tick) on the monotonic clock: a wall clock step spins none. */
	pthread_mutex_init(&g->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cv, &ca);
	pthread_condattr_destroy(&ca);
	g->parties = parties;
	g->waiting = 0;
	g->generation = 0;
	g->broken = false;
}

static void gate_destroy(struct gate *g)
{
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
}

/*
 * Wait until all parties arrived. With a tick (not NULL), the caller is woken every tick_s
 * seconds while it waits, to call tick(arg) with the gate unlocked (the progress line).
 */
static int gate_wait_tick(struct gate *g, double tick_s, void (*tick)(void *), void *arg)
{
	int rc = 0;

	pthread_mutex_lock(&g->mu);
	if (g->broken) {
		rc = -ECANCELED;
		goto out;
	}
	unsigned long gen = g->generation;
	if (++g->waiting == g->parties) {
		g->waiting = 0;
		g->generation++;
		pthread_cond_broadcast(&g->cv);
		goto out;
	}
	while (g->generation == gen && !g->broken) {
		struct timespec ts;

		if (!tick) {
			pthread_cond_wait(&g->cv, &g->mu);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)tick_s;
		ts.tv_nsec += (long)((tick_s - (double)(time_t)tick_s) * 1e9);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&g->cv, &g->mu, &ts) == ETIMEDOUT &&
		    g->generation == gen && !g->broken) {
			pthread_mutex_unlock(&g->mu);
			tick(arg);
			pthread_mutex_lock(&g->mu);
		}
	}
	if (g->generation == gen)
		rc = -ECANCELED;
out:
	pthread_mutex_unlock(&g->mu);
	return rc;
}

static int gate_wait(struct gate *g)
{
	return gate_wait_tick(g, 0, NULL, NULL);
}

static void gate_break(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->broken = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* What the main thread publishes to the workers for one part. */
struct run_shared {
	struct topo *topo;
	struct gate gate;
	size_t nthreads;
	size_t buf_bytes;
	size_t buf_offset; /* from a page boundary */
	uint64_t seed;
	uint64_t node_hash;
	const struct bench_ops *ops; /* NULL: quit */
	struct bench_params params;
	uint64_t stream;  /* mixes part and repetition into the seed */
	double start_at;  /* T of the part */
	char run_tag[48]; /* run tag and repetition, in the names of created files */
	bool skip_run;	  /* threads set up and tear down but do not run */
};

struct run_thread {
	pthread_t tid;
	struct run_shared *s;
	atomic_bool finished; /* its timed part is over (for the progress line) */
	struct thread_result res;
	struct topo_slot slot;
	void *buf; /* inside mem, at buf_offset past a page boundary */
	void *mem;
	struct hist *hist;
	struct bench_ctx ctx;
	int init_rc;
	char init_op[16];
	uint64_t release_mono, end_mono;
};

static void *run_thread_main(void *arg)
{
	struct run_thread *t = arg;
	struct run_shared *s = t->s;

	/* Pin first, so the buffer is allocated and touched on this core's memory. */
	t->init_rc = topo_bind_self(s->topo, t->slot.pu);
	if (t->init_rc) {
		snprintf(t->init_op, sizeof(t->init_op), "bind");
	} else if ((t->init_rc = bufplace_alloc(s->buf_bytes, s->buf_offset, &t->mem, &t->buf)) !=
		       0 ||
		   !(t->hist = malloc(sizeof(*t->hist)))) {
		if (!t->init_rc)
			t->init_rc = -ENOMEM;
		snprintf(t->init_op, sizeof(t->init_op), "allocate");
	} else {
		memset(t->buf, 0, s->buf_bytes);
		hist_init(t->hist);
	}
	t->res.cpu_seen = topo_current_cpu();
	if (gate_wait(&s->gate) < 0) /* initialized */
		return NULL;

	for (;;) {
		if (gate_wait(&s->gate) < 0 || !s->ops) /* a part is published, or quit */
			break;
		struct bench_ctx *c = &t->ctx;
		memset(c, 0, sizeof(*c));
		memset(&t->res.err, 0, sizeof(t->res.err));
		c->p = &s->params;
		c->thread = t->res.index;
		c->buf = t->buf;
		c->lat = t->hist;
		c->stop = &run_stop;
		hist_init(t->hist);
		prng_seed(&c->rng, s->seed ^ s->stream, s->node_hash, t->res.index);
		t->res.ran = false;
		t->res.rc = s->ops->setup ? s->ops->setup(c) : 0;
		int setup_rc = t->res.rc;
		if (setup_rc)
			run_stop_set();

		if (gate_wait(&s->gate) < 0) /* ready */
			break;
		if (gate_wait(&s->gate) < 0) /* go: start_at is decided */
			break;
		if (!setup_rc && !s->skip_run && !run_stopping()) {
			atomic_store_explicit(&t->finished, false, memory_order_relaxed);
			double at = clock_wait_until(s->start_at, RUN_SPIN_S, &run_stop);
			t->release_mono = clock_mono_ns();
			if (at >= 0) {
				t->res.release_at = at;
				t->res.ran = true;
				t->res.rc = s->ops->run(c);
				t->end_mono = clock_mono_ns();
				atomic_store_explicit(&t->finished, true, memory_order_relaxed);
				if (t->res.rc)
					run_stop_set();
			}
		}
		if (gate_wait(&s->gate) < 0) /* every thread is done with the timed part */
			break;
		if (!setup_rc && s->ops->teardown)
			s->ops->teardown(c);
		t->res.time_s = t->res.ran ? (double)(t->end_mono - t->release_mono) / 1e9 : 0.0;
		t->res.bytes = c->bytes;
		t->res.ops = c->ops;
		t->res.pages = c->pages;
		t->res.files = c->files;
		t->res.retries = c->retries;
		if (t->res.rc)
			t->res.err = c->err;
		if (gate_wait(&s->gate) < 0) /* results are in */
			break;
	}
	free(t->mem);
	free(t->hist);
	return NULL;
}

struct run_state {
	const struct options *o;
	const struct plan *plan;
	struct node_result *res;
	int dirfd;
	struct run_shared s;
	struct run_thread *threads;
	size_t started;
	size_t part_index; /* parts run so far, for --interval */
	bool abort_rest;   /* the start was missed: nothing more runs */
	bool progress;	   /* a live line on stderr while a part runs */
	bool progress_shown;
	const struct part_result *progress_part;
	double progress_at;	 /* wall time of the last line */
	uint64_t progress_bytes; /* bytes done at the last line */
	double first_start;
	/* Wall and monotonic clocks read together when the part's start is decided and after it. */
	double wall0, wall1;
	uint64_t mono0, mono1;
};

/* The wall clock and the monotonic clock at one instant (the monotonic one read around it). */
static void run_clock_pair(double *wall, uint64_t *mono)
{
	uint64_t a = clock_mono_ns();

	*wall = clock_wall();
	*mono = a + (clock_mono_ns() - a) / 2;
}

/*
 * The live progress line, written by the main thread once a second while the workers run a
 * part: it reads the counters each worker publishes with relaxed atomic stores, so it costs
 * the workers nothing but those stores.
 */
static void run_progress_tick(void *arg)
{
	struct run_state *st = arg;
	const struct part_result *pr = st->progress_part;
	uint64_t bytes = 0, ops = 0;
	size_t done = 0;
	char a[32], b[32];
	double now = clock_wall(), elapsed = now - pr->start_at;

	if (elapsed < 0) {
		log_status("%s rep %u: starting in %.0f s", pr->pp->def->name, pr->repetition,
			   -elapsed);
		st->progress_shown = true;
		return;
	}
	for (size_t i = 0; i < st->s.nthreads; i++) {
		struct run_thread *t = &st->threads[i];
		bytes += atomic_load_explicit(&t->ctx.live_bytes, memory_order_relaxed);
		ops += atomic_load_explicit(&t->ctx.live_ops, memory_order_relaxed);
		done += atomic_load_explicit(&t->finished, memory_order_relaxed);
	}
	/* The current rate: over the last tick, not since the start. */
	double since = st->progress_at > pr->start_at ? now - st->progress_at : elapsed;
	uint64_t before = st->progress_at > pr->start_at ? st->progress_bytes : 0;
	double rate = since > 0 ? (double)(bytes - before) / since : 0;
	st->progress_at = now;
	st->progress_bytes = bytes;
	log_status("%s rep %u: %.0f s, %s, %llu ops, %s, %zu/%zu threads done", pr->pp->def->name,
		   pr->repetition, elapsed, size_format(bytes, a, sizeof(a)),
		   (unsigned long long)ops, size_format_rate(rate, b, sizeof(b)), done,
		   st->s.nthreads);
	st->progress_shown = true;
}

/* Take the progress line away before anything else is printed. */
static void run_progress_clear(struct run_state *st)
{
	if (st->progress_shown)
		log_status_clear();
	st->progress_shown = false;
	st->progress_at = 0;
	st->progress_bytes = 0;
}

/* Stop and join the workers. */
static void run_threads_stop(struct run_state *st)
{
	/* Publish "nothing to do"; then break the gate, for threads that never got that far. */
	st->s.ops = NULL;
	gate_wait(&st->s.gate);
	gate_break(&st->s.gate);
	for (size_t i = 0; i < st->started; i++)
		pthread_join(st->threads[i].tid, NULL);
	st->started = 0;
}

static int run_threads_start(struct run_state *st, struct topo *topo)
{
	struct node_result *res = st->res;
	size_t n = res->tplan.nslots;
	sigset_t block, old;
	int rc = 0;

	st->threads = calloc(n, sizeof(*st->threads));
	if (!st->threads)
		return -ENOMEM;
	st->s.topo = topo;
	st->s.nthreads = n;
	gate_init(&st->s.gate, (unsigned)n + 1);

	/* Workers never take SIGINT/SIGTERM: the main thread's handler sets the stop flag. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	for (size_t i = 0; i < n; i++) {
		struct run_thread *t = &st->threads[i];
		t->s = &st->s;
		t->slot = res->tplan.slots[i];
		t->res.index = (unsigned)i;
		t->res.cpu = t->slot.pu;
		t->res.core = t->slot.core;
		rc = -pthread_create(&t->tid, NULL, run_thread_main, t);
		if (rc)
			break;
		st->started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		run_error(res, "cannot start thread %zu of %zu: %s", st->started, n, strerror(-rc));
		gate_break(&st->s.gate);
		for (size_t i = 0; i < st->started; i++)
			pthread_join(st->threads[i].tid, NULL);
		st->started = 0;
		return rc;
	}
	gate_wait(&st->s.gate); /* initialized */
	for (size_t i = 0; i < n; i++) {
		struct run_thread *t = &st->threads[i];
		if (t->init_rc) {
			run_error(res, "thread %zu: %s to CPU %u: %s", i, t->init_op, t->slot.pu,
				  strerror(-t->init_rc));
			rc = t->init_rc;
		}
	}
	if (rc)
		run_threads_stop(st);
	return rc;
}

/* Make sure the replica of test pt is there (creating or recreating it). 0 or an outcome. */
static enum outcome run_replica(struct run_state *st, const struct plan_test *pt, unsigned rep,
				struct test_result *tr)
{
	const struct options *o = st->o;
	struct node_result *res = st->res;
	struct replica_info info;
	struct bench_error err;
	char sz[32];
	int rc;

	rc = replica_probe(st->dirfd, pt->replica, &info);
	if (rc == 0 && (!info.ours || info.size != pt->file)) {
		snprintf(tr->error, sizeof(tr->error),
			 "replica '%s/%s' is %s (%llu bytes): refusing to use or replace it",
			 res->dir, pt->replica,
			 info.ours ? "of the wrong size" : "not a stagebench replica",
			 (unsigned long long)info.size);
		run_error(res, "test %s: %s", pt->def->name, tr->error);
		return OUTCOME_PRECONDITION;
	}
	if (rc && rc != -ENOENT) {
		snprintf(tr->error, sizeof(tr->error), "replica '%s/%s': %s", res->dir, pt->replica,
			 rc == -EINVAL || rc == -EISDIR
			     ? "not a regular file (a symbolic link, a directory, a FIFO...): "
			       "refusing to use or replace it"
			     : strerror(-rc));
		run_error(res, "test %s: %s", pt->def->name, tr->error);
		return OUTCOME_PRECONDITION;
	}
	bool exists = rc == 0;
	if (exists && !(rep > 1 && pt->def->recreate)) {
		tr->generation = info.generation;
		return OUTCOME_OK;
	}
	if (!exists && pt->def->needs_prepare && o->scale == SCALE_SPEC) {
		snprintf(tr->error, sizeof(tr->error),
			 "replica '%s/%s' (%s) is missing: run 'stagebench prepare %s' first",
			 res->dir, pt->replica, size_format(pt->file, sz, sizeof(sz)),
			 pt->def->name);
		run_error(res, "test %s: %s", pt->def->name, tr->error);
		return OUTCOME_PRECONDITION;
	}
	if (exists) {
		rc = replica_remove(st->dirfd, pt->replica);
		if (rc && rc != -ENOENT) {
			snprintf(tr->error, sizeof(tr->error), "cannot remove replica '%s/%s': %s",
				 res->dir, pt->replica, strerror(-rc));
			run_error(res, "test %s: %s", pt->def->name, tr->error);
			return OUTCOME_FAILED;
		}
	}
	uint64_t gen = replica_new_generation();
	uint64_t t0 = clock_mono_ns();
	log_info("test %s: %s replica '%s/%s' (%s)", pt->def->name,
		 exists ? "recreating" : "creating", res->dir, pt->replica,
		 size_format(pt->file, sz, sizeof(sz)));
	memset(&err, 0, sizeof(err));
	rc = replica_create(st->dirfd, res->dir, pt->replica, pt->file, gen,
			    (unsigned)res->tplan.nslots, o->xfer, false, &run_stop, &err);
	if (rc == -EEXIST) {
		/* Another node sharing this server created it first: use theirs. */
		rc = replica_probe(st->dirfd, pt->replica, &info);
		if (rc == 0 && info.ours && info.size == pt->file) {
			log_warn("test %s: replica '%s' was created at the same time by another "
				 "process: using theirs, this one's copy was discarded",
				 pt->def->name, pt->replica);
			tr->generation = info.generation;
			return OUTCOME_OK;
		}
		err.errnum = EEXIST;
	}
	if (rc) {
		char line[700];
		if (run_stopping())
			return OUTCOME_FAILED;
		run_format_error(&err, line, sizeof(line));
		snprintf(tr->error, sizeof(tr->error), "preparing replica: %.570s", line);
		run_error(res, "test %s: %s", pt->def->name, tr->error);
		return OUTCOME_FAILED;
	}
	tr->prepared = true;
	tr->prepare_s = (double)(clock_mono_ns() - t0) / 1e9;
	tr->generation = gen;
	return OUTCOME_OK;
}

/* Decide the start instant of the next part, after every thread is ready. */
static enum outcome run_start_instant(struct run_state *st, struct part_result *pr)
{
	const struct options *o = st->o;
	double now = clock_wall();
	double sched;

	if (st->part_index == 0)
		sched = st->first_start;
	else if (o->set_interval)
		sched = st->first_start + (double)st->part_index * o->interval;
	else
		sched = now + RUN_NEXT_LEAD_S;
	/* A relative start cannot be missed: it counts from the moment set-up is over. */
	if (st->part_index == 0 && !o->set_start_at && now + RUN_NEXT_LEAD_S > sched) {
		sched = now + RUN_NEXT_LEAD_S;
		st->first_start = sched;
		st->res->start_at = sched;
	}
	pr->scheduled_at = sched;
	pr->start_at = sched;
	if (now < sched)
		return OUTCOME_OK;

	/* Not ready in time. */
	pr->late_by_s = now - sched;
	if (st->part_index == 0 && !o->late_ok) {
		snprintf(pr->error, sizeof(pr->error),
			 "start time missed by %.3f s (threads were ready at %.3f, start was %.3f; "
			 "use a later --start-at or --late-ok)",
			 pr->late_by_s, now, sched);
		run_error(st->res, "%s: %s", pr->pp->def->name, pr->error);
		return OUTCOME_PRECONDITION;
	}
	pr->start_at = now + RUN_NEXT_LEAD_S;
	pr->status = PART_LATE;
	log_warn("%s: started %.3f s late", pr->pp->def->name, pr->late_by_s + RUN_NEXT_LEAD_S);
	return OUTCOME_OK;
}

/*
 * Compare wall and monotonic elapsed time from the start decision to the end of the part
 * (and to the first release): a difference is a step of the wall clock, which changes no
 * duration (they are monotonic) but is recorded and said, since the start instants of this
 * node and the others were decided on the wall clock.
 */
static void run_clock_step(struct run_state *st, struct part_result *pr, double first_at,
			   uint64_t first_mono)
{
	double total = (st->wall1 - st->wall0) - (double)(int64_t)(st->mono1 - st->mono0) / 1e9;
	double before =
	    first_mono ? (first_at - st->wall0) - (double)(int64_t)(first_mono - st->mono0) / 1e9
		       : total;
	bool in_wait = fabs(before) >= RUN_STEP_MIN_S;

	if (!in_wait && fabs(total) < RUN_STEP_MIN_S)
		return;
	pr->clock_step_s = fabs(total) >= RUN_STEP_MIN_S ? total : before;
	run_warning(st->res,
		    "%s: the wall clock stepped by %+.3f s %s: durations are monotonic and "
		    "unaffected%s",
		    pr->pp->def->name, pr->clock_step_s,
		    in_wait ? "while waiting for the start" : "during the part",
		    in_wait ? ", but this node may not have started with the others" : "");
}

static void run_aggregate(struct run_state *st, struct part_result *pr)
{
	size_t n = st->s.nthreads;
	double times[n > 0 ? n : 1];
	double tmax = -INFINITY, rmin = INFINITY, rmax = -INFINITY, first_at = 0;
	uint64_t first_mono = 0;
	size_t ran = 0;

	pr->threads = calloc(n, sizeof(*pr->threads));
	pr->hist = malloc(sizeof(*pr->hist));
	pr->nthreads = n;
	if (pr->hist)
		hist_init(pr->hist);
	for (size_t i = 0; i < n; i++) {
		struct run_thread *t = &st->threads[i];
		struct thread_result *r = &t->res;

		if (pr->threads)
			pr->threads[i] = *r;
		pr->bytes += r->bytes;
		pr->ops += r->ops;
		pr->pages += r->pages;
		pr->files += r->files;
		pr->retries += r->retries;
		if (pr->hist)
			hist_merge(pr->hist, t->hist);
		if (r->rc && pr->status != PART_FAILED) {
			char line[560];
			run_format_error(&r->err, line, sizeof(line));
			snprintf(pr->error, sizeof(pr->error), "thread %u: %s", r->index, line);
			pr->status = PART_FAILED;
		}
		if (r->rc) {
			char line[560];
			run_format_error(&r->err, line, sizeof(line));
			run_error(st->res, "%s thread %u: %s", pr->pp->def->name, r->index, line);
		}
		if (!r->ran)
			continue;
		times[ran++] = r->time_s;
		if (r->release_at < rmin) {
			rmin = r->release_at;
			first_at = r->release_at;
			first_mono = t->release_mono;
		}
		if (r->release_at > rmax)
			rmax = r->release_at;
	}
	if (ran) {
		/*
		 * The first release's offset from T, on the wall clock and on the monotonic one (T
		 * projected when it was decided). They agree unless the wall clock stepped in the
		 * wait: forward, the threads woke at once and the wall offset is the step;
		 * backward, they slept through it and the monotonic offset is. The smaller one is
		 * the step-free offset. Thread offsets from the first release are differences of
		 * epoch seconds taken within microseconds of each other (doubles resolve 0.24 us).
		 */
		double lead_wall = first_at - pr->start_at;
		double lead_mono =
		    (double)(int64_t)(first_mono - st->mono0) / 1e9 - (pr->start_at - st->wall0);
		double lead = lead_wall < lead_mono ? lead_wall : lead_mono;

		if (lead < 0)
			lead = 0;
		for (size_t i = 0; i < n; i++) {
			const struct thread_result *r = &st->threads[i].res;
			double end = lead + (r->release_at - first_at) + r->time_s;

			if (r->ran && end > tmax)
				tmax = end;
		}
		pr->node_time_s = tmax;
		pr->release_spread_s = rmax - rmin;
		stats_summarize(times, ran, &pr->thread_time);
	}
	run_clock_step(st, pr, ran ? first_at : 0, ran ? first_mono : 0);
	if (pr->status == PART_OK || pr->status == PART_LATE) {
		if (run_stopping() && run_signal)
			pr->status = PART_INTERRUPTED;
		else if (ran != n)
			pr->status = PART_FAILED;
	}
}

/* Run one part on every thread. */
static enum outcome run_part(struct run_state *st, const struct plan_test *pt,
			     const struct plan_part *pp, const struct test_result *tr,
			     struct part_result *pr)
{
	const struct options *o = st->o;
	struct node_result *res = st->res;
	struct run_shared *s = &st->s;
	enum outcome out = OUTCOME_OK;

	pr->pp = pp;
	pr->pt = pt;
	pr->repetition = tr->repetition;
	pr->generation = tr->generation;
	pr->xfer = o->xfer;
	pr->verified = o->verify && pt->def->has_replica;
	pr->fsync = o->fsync && !pt->def->has_replica;
	pr->residency = -1.0;
	if (pt->def->has_replica)
		snprintf(pr->file, sizeof(pr->file), "%s/%s", res->dir, pt->replica);
	else
		snprintf(pr->file, sizeof(pr->file), "%s", res->dir);

	s->ops = bench_find(pp->def->kind);
	memset(&s->params, 0, sizeof(s->params));
	s->params.part = pp->def->name;
	s->params.path = pr->file;
	s->params.dir = res->dir;
	s->params.dirfd = st->dirfd;
	s->params.node = res->node;
	/* The repetition is part of created names: with --keep, repetitions must not clash. */
	snprintf(s->run_tag, sizeof(s->run_tag), "%s-r%u", res->run_tag, tr->repetition);
	s->params.run_tag = s->run_tag;
	s->params.count = pp->p.count;
	s->params.chunk = pp->p.chunk;
	s->params.file_bytes = pp->p.file;
	s->params.passes = pp->p.passes;
	s->params.xfer = o->xfer;
	s->params.generation = pt->def->has_replica ? tr->generation : replica_new_generation();
	s->params.page_size = sysconf(_SC_PAGESIZE);
	s->params.verify = o->verify;
	s->params.fsync = o->fsync;
	s->params.keep = o->keep;
	s->stream = prng_hash_str(pp->def->name) * 0x9e3779b97f4a7c15ull + tr->repetition;
	s->skip_run = false;

	/*
	 * --start-in counts from the moment the first part could start, after any replica
	 * it needed was created; --start-at is absolute and was fixed by the caller.
	 */
	if (st->part_index == 0 && !o->set_start_at) {
		st->first_start = clock_wall() + o->start_in;
		res->start_at = st->first_start;
	}
	gate_wait(&s->gate); /* publish */
	gate_wait(&s->gate); /* ready */
	if (pt->def->has_replica)
		fs_residency(pr->file, &pr->residency);
	if (run_stopping()) {
		s->skip_run = true;
	} else {
		out = run_start_instant(st, pr);
		if (out != OUTCOME_OK)
			s->skip_run = true;
		s->start_at = pr->start_at;
	}
	st->part_index++;
	run_clock_pair(&st->wall0, &st->mono0);
	gate_wait(&s->gate); /* go */
	if (st->progress) {
		st->progress_part = pr;
		gate_wait_tick(&s->gate, 1.0, run_progress_tick, st); /* done */
		run_progress_clear(st);
	} else {
		gate_wait(&s->gate); /* done */
	}
	run_clock_pair(&st->wall1, &st->mono1);
	gate_wait(&s->gate); /* results */
	if (out != OUTCOME_OK) {
		pr->status = PART_FAILED;
		st->abort_rest = true;
		return out;
	}
	run_aggregate(st, pr);
	if (pr->status == PART_FAILED)
		return OUTCOME_FAILED;
	return OUTCOME_OK;
}

static enum outcome run_signal_outcome(void)
{
	return run_signal == SIGTERM ? OUTCOME_INTERRUPTED_TERM : OUTCOME_INTERRUPTED_INT;
}

void run_buffer_place(const struct options *o, struct node_result *res)
{
	int rc;

	if (o->buffer_offset != OPTIONS_AUTO) {
		memset(&res->bufplace, 0, sizeof(res->bufplace));
		res->bufplace.offset = (size_t)o->buffer_offset;
		res->bufplace.fixed = true;
	} else if ((rc = bufplace_calibrate((size_t)o->xfer, &res->bufplace)) != 0) {
		run_warning(res, "cannot calibrate the I/O buffer's placement (%s): page-aligned",
			    strerror(-rc));
		res->bufplace.offset = 0;
	}
}

enum outcome run_execute(const struct options *o, const struct plan *plan, struct topo *topo,
			 int dirfd, struct node_result *res)
{
	struct run_state st;
	enum outcome out = OUTCOME_OK;
	size_t reps = (size_t)o->repeat;

	memset(&st, 0, sizeof(st));
	st.o = o;
	st.plan = plan;
	st.res = res;
	st.dirfd = dirfd;
	st.first_start = res->start_at;
	st.progress = o->progress;
	st.s.seed = res->seed;
	st.s.node_hash = prng_hash_str(res->node);
	st.s.buf_bytes = (size_t)o->xfer;
	run_buffer_place(o, res);
	st.s.buf_offset = res->bufplace.offset;

	res->tests = calloc(reps * plan->ntests, sizeof(*res->tests));
	res->parts = calloc(reps * plan->nparts, sizeof(*res->parts));
	if (!res->tests || !res->parts) {
		run_error(res, "out of memory");
		return OUTCOME_FAILED;
	}
	if (run_threads_start(&st, topo))
		return OUTCOME_FAILED;

	for (size_t rep = 1; rep <= reps; rep++) {
		for (size_t ti = 0; ti < plan->ntests; ti++) {
			const struct plan_test *pt = &plan->tests[ti];
			struct test_result *tr = &res->tests[res->ntests++];
			enum outcome tout = OUTCOME_OK;

			tr->pt = pt;
			/* --repetition numbers the first one: a launcher runs one per invocation.
			 */
			tr->repetition = (unsigned)(o->repetition + rep - 1);
			tr->first_part = res->nparts;
			if (run_signal || st.abort_rest) {
				tr->status = run_signal ? PART_INTERRUPTED : PART_SKIPPED;
				continue;
			}
			if (pt->def->has_replica)
				tout = run_replica(&st, pt, (unsigned)rep, tr);
			for (size_t k = 0; tout == OUTCOME_OK && k < pt->nparts; k++) {
				struct part_result *pr = &res->parts[res->nparts++];
				enum outcome pout;

				tr->nparts++;
				pout = run_part(&st, pt, &plan->parts[pt->first + k], tr, pr);
				tr->result_s += pr->node_time_s;
				if (pr->status > tr->status)
					tr->status = pr->status;
				if (pout != OUTCOME_OK) {
					tout = pout;
					snprintf(tr->error, sizeof(tr->error), "%s: %.560s",
						 pr->pp->def->name, pr->error);
				}
				if (run_signal || st.abort_rest)
					break;
				/* A failed part stopped its own threads; the next part runs. */
				__atomic_store_n(&run_stop, 0, __ATOMIC_RELAXED);
			}
			if (tout != OUTCOME_OK && tr->status < PART_FAILED)
				tr->status = tout == OUTCOME_PRECONDITION && !tr->nparts
						 ? PART_SKIPPED
						 : PART_FAILED;
			if (run_signal)
				tr->status = PART_INTERRUPTED;
			out = outcome_worse(out, tout);
		}
	}
	run_threads_stop(&st);
	gate_destroy(&st.s.gate);
	free(st.threads);
	if (run_signal)
		out = outcome_worse(out, run_signal_outcome());
	return out;
}

void run_result_free(struct node_result *res)
{
	for (size_t i = 0; i < res->nparts; i++) {
		free(res->parts[i].threads);
		free(res->parts[i].hist);
	}
	free(res->parts);
	free(res->tests);
	for (size_t i = 0; i < res->nerrors; i++)
		free(res->errors[i]);
	for (size_t i = 0; i < res->nwarnings; i++)
		free(res->warnings[i]);
	topo_plan_free(&res->tplan);
}
