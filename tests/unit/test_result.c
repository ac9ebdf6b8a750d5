/* SPDX-License-Identifier: MIT */
/*
 * Unit test of driver/result: a part's result folded from synthetic thread results (sums,
 * merged histogram, node time from T, release spread, thread times, the first error, the
 * status) and a step of the wall clock seen between the two clock pairs.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "driver/result.h"

#define NTHREADS 3
#define T0	 1700000000.0 /* the part's start instant, epoch seconds */
#define MONO0	 5000000000ull

static const struct part_def def = {
    "2a", "2", "randread", PLAN_TIER_SERVER_CACHE, "N random aligned reads of M", {{0}}};
static const struct plan_part pp = {&def, NULL, {10, 4096, 1 << 20, 0}};
static struct hist hists[NTHREADS];

static bool near(double a, double b)
{
	return fabs(a - b) < 1e-6;
}

/*
 * Thread i released at T + 1 ms + i x 100 us, ran 1 + i/2 s, read (i + 1) MiB in i + 1
 * operations of 1 ms each. The clocks were read 1 ms before T and 10 ms after the last end;
 * there is no reference pair of the run's first start (has_ref false).
 */
static void test_result_fill(struct result_thread *t, struct result_clocks *c, double step_s)
{
	memset(t, 0, NTHREADS * sizeof(*t));
	memset(c, 0, sizeof(*c));
	for (unsigned i = 0; i < NTHREADS; i++) {
		struct thread_result *r = &t[i].res;
		double rel = 0.001 + i * 0.0001;

		hist_init(&hists[i]);
		for (unsigned k = 0; k <= i; k++)
			hist_record(&hists[i], 1000000);
		t[i].hist = &hists[i];
		t[i].release_mono = MONO0 + (uint64_t)((rel + 0.001) * 1e9);
		r->index = i;
		r->ran = true;
		r->release_at = T0 + rel;
		r->time_s = 1.0 + i * 0.5;
		r->bytes = (i + 1) * 1048576ull;
		r->ops = i + 1;
	}
	c->wall0 = T0 - 0.001;
	c->mono0 = MONO0;
	c->wall1 = T0 + 2.0122 + step_s;
	c->mono1 = MONO0 + (uint64_t)(2.0132 * 1e9);
}

/* A case: its threads and clocks, the part folded from them, and the node's result. */
struct result_case {
	struct result_thread t[NTHREADS];
	struct result_clocks c;
	struct node_result res;
	struct part_result pr;
};

/* The threads and clocks of test_result_fill (the wall clock stepped by step_s), no result. */
static void test_result_begin(struct result_case *k, double step_s)
{
	memset(&k->res, 0, sizeof(k->res));
	test_result_fill(k->t, &k->c, step_s);
}

/* Fold the threads into a fresh part, given the start instant scheduled_at (0: none). */
static void test_result_fold(struct result_case *k, double scheduled_at, bool stopped, int sig)
{
	memset(&k->pr, 0, sizeof(k->pr));
	k->pr.pp = &pp;
	k->pr.start_at = T0;
	k->pr.scheduled_at = scheduled_at;
	result_aggregate(&k->pr, k->t, NTHREADS, &k->c, stopped, sig, &k->res);
}

static void test_result_free_part(struct part_result *pr)
{
	for (size_t k = 0; k < pr->nwarnings; k++)
		free(pr->warnings[k]);
	free(pr->threads);
	free(pr->hist);
}

static void test_result_sums(void)
{
	struct result_case k;
	const struct part_result *pr = &k.pr;

	test_result_begin(&k, 0);
	test_result_fold(&k, 0, false, 0);
	CHECK(pr->status == PART_OK);
	CHECK_U64(pr->bytes, 6 * 1048576ull);
	CHECK_U64(pr->ops, 6);
	CHECK_U64(pr->nthreads, NTHREADS);
	CHECK(pr->hist && pr->hist->count == 6);
	CHECK(pr->threads && pr->threads[2].time_s == 2.0);
	/* From T to the end of the last thread: 1 ms + 200 us + 2 s. */
	CHECK_MSG(near(pr->node_time_s, 2.0012), "node time %.9f", pr->node_time_s);
	CHECK_MSG(near(pr->release_spread_s, 0.0002), "spread %.9f", pr->release_spread_s);
	CHECK(near(pr->thread_time.min, 1.0) && near(pr->thread_time.median, 1.5) &&
	      near(pr->thread_time.max, 2.0));
	CHECK(pr->clock_step_s == 0 && k.res.nwarnings == 0 && k.res.nerrors == 0);
	test_result_free_part(&k.pr);

	/* Stopped by a signal: interrupted; a thread that did not run: failed. */
	test_result_fold(&k, 0, true, SIGINT);
	CHECK(pr->status == PART_INTERRUPTED);
	test_result_free_part(&k.pr);
	k.t[1].res.ran = false;
	test_result_fold(&k, 0, true, 0);
	CHECK(pr->status == PART_FAILED);
	CHECK(near(pr->thread_time.median, 1.5) && near(pr->thread_time.max, 2.0));
	test_result_free_part(&k.pr);
	result_free(&k.res);
}

/* The first thread error is the part's error; every one is an error line of the node. */
static void test_result_errors(void)
{
	struct result_case k;

	test_result_begin(&k, 0);
	for (unsigned i = 1; i < NTHREADS; i++) {
		struct thread_result *r = &k.t[i].res;

		r->rc = -EIO;
		r->err.errnum = EIO;
		snprintf(r->err.op, sizeof(r->err.op), "read");
		snprintf(r->err.path, sizeof(r->err.path), "/stage/r");
		r->err.has_offset = true;
		r->err.offset = 4096 * i;
	}
	test_result_fold(&k, 0, true, 0);
	CHECK(k.pr.status == PART_FAILED);
	CHECK_STR(k.pr.error, "thread 1: read '/stage/r' at 4096: Input/output error");
	CHECK_U64(k.res.nerrors, 2);
	if (k.res.nerrors == 2)
		CHECK_STR(k.res.errors[1],
			  "2a thread 2: read '/stage/r' at 8192: Input/output error");
	test_result_free_part(&k.pr);
	result_free(&k.res);
}

/* A wall clock step of +0.5 s during the part: recorded and warned, durations unchanged. */
static void test_result_clock_step(void)
{
	struct result_case k;

	test_result_begin(&k, 0.5);
	test_result_fold(&k, 0, false, 0);
	CHECK_MSG(near(k.pr.clock_step_s, 0.5), "step %.6f", k.pr.clock_step_s);
	CHECK(near(k.pr.node_time_s, 2.0012));
	CHECK_U64(k.res.nwarnings, 1);
	if (k.res.nwarnings)
		CHECK(strstr(k.res.warnings[0], "2a: the wall clock stepped by +0.500 s during the "
						"part") != NULL);
	/* The part keeps its own copy of its warnings. */
	CHECK(k.pr.nwarnings == 1 && strcmp(k.pr.warnings[0], k.res.warnings[0]) == 0);
	test_result_free_part(&k.pr);
	result_free(&k.res);
}

/* Thread i's integer instants, as the pool fills them, moved by wall_s and mono_s. */
static void test_result_instants(struct result_thread *t, unsigned i, double wall_s, double mono_s)
{
	double rel = 0.001 + i * 0.0001;

	t[i].res.release_at_ns = (int64_t)((T0 + rel + wall_s) * 1e9);
	t[i].res.release_mono_ns = MONO0 + (uint64_t)((rel + 0.001 + mono_s) * 1e9);
	t[i].res.first_io_at_ns = t[i].res.release_at_ns + 1000 * (i + 1);
}

/*
 * Late is late: a thread released more than 2 ms after the scheduled instant on both clocks
 * (stopped, preempted) makes the part late, named; a release that only the wall clock puts
 * late (a step forward in the wait) does not.
 */
static void test_result_late(void)
{
	struct result_case k;
	const struct part_result *pr = &k.pr;
	const struct result_thread *t = k.t;

	test_result_begin(&k, 0);
	for (unsigned i = 0; i < NTHREADS; i++)
		test_result_instants(k.t, i, i == 2 ? 1.5 : 0, i == 2 ? 1.5 : 0);
	test_result_fold(&k, T0, false, 0);
	CHECK(pr->status == PART_OK && pr->late);
	CHECK_MSG(fabs(pr->late_by_s - 1.5012) < 1e-5, "late by %.9f", pr->late_by_s);
	CHECK(pr->threads[0].late_by_s == 0 && pr->threads[2].late_by_s == pr->late_by_s);
	CHECK(pr->release_min_ns == t[0].res.release_at_ns &&
	      pr->release_max_ns == t[2].res.release_at_ns);
	CHECK(pr->first_io_min_ns == t[0].res.first_io_at_ns);
	CHECK(pr->io_start_spread_s > 1.5 && pr->io_start_spread_s < 1.502);
	CHECK(pr->start_at_ns == 1700000000000000000ll);
	CHECK_U64(pr->nwarnings, 1);
	CHECK_STR(pr->warnings[0], "2a: late: thread 2 released up to 1.501200 s after the start "
				   "instant (bound 0.002 s)");
	CHECK_U64(k.res.nwarnings, 1);
	test_result_free_part(&k.pr);

	/* A forward step of 1 h in the wait: late on the wall clock only, so not late. */
	for (unsigned i = 0; i < NTHREADS; i++)
		test_result_instants(k.t, i, 3600, 0);
	test_result_fold(&k, T0, false, 0);
	CHECK(!pr->late && pr->late_by_s == 0 && pr->nwarnings == 0);
	test_result_free_part(&k.pr);
	result_free(&k.res);
}

int main(void)
{
	CHECK_STR(result_status_name(PART_LATE), "late");
	test_result_sums();
	test_result_errors();
	test_result_clock_step();
	test_result_late();
	return check_done();
}
