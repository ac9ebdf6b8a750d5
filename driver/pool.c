/* SPDX-License-Identifier: MIT */
/*
 * The worker threads: pinned first, so that each buffer is allocated and touched on its
 * core's memory; then, part after part, set-up, the wait for the start instant, the timed
 * part and the tear-down, in step with the main thread through the pool's gate.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/note.h"
#include "driver/pool.h"
#include "driver/stop.h"
#include "platform/clock.h"
#include "util/prng.h"

struct pool_thread {
	pthread_t tid;
	struct pool *p;
	struct result_thread *out;
	atomic_bool finished; /* its timed part is over (for the progress line) */
	struct topo_slot slot;
	void *buf; /* inside mem, at buf_offset past a page boundary */
	void *mem;
	struct bench_ctx ctx;
	int init_rc;
	char init_op[16];
	uint64_t end_mono;
};

/* Bind, allocate and touch the buffer, allocate the histogram. 0 or -errno (init_op set). */
static int pool_thread_init(struct pool_thread *t)
{
	struct pool *p = t->p;
	int rc = topo_bind_self(p->topo, t->slot.pu);

	if (rc) {
		snprintf(t->init_op, sizeof(t->init_op), "bind");
		return rc;
	}
	rc = bufplace_alloc(p->buf_bytes, p->buf_offset, &t->mem, &t->buf);
	if (!rc && !(t->out->hist = malloc(sizeof(*t->out->hist))))
		rc = -ENOMEM;
	if (rc) {
		snprintf(t->init_op, sizeof(t->init_op), "allocate");
		return rc;
	}
	memset(t->buf, 0, p->buf_bytes);
	hist_init(t->out->hist);
	return 0;
}

/* The timed part, from the start instant on, unless the part is to be skipped. */
static void pool_thread_run(struct pool_thread *t, int setup_rc)
{
	struct pool *p = t->p;
	struct thread_result *r = &t->out->res;

	if (setup_rc || p->part.skip_run || stop_requested())
		return;
	atomic_store_explicit(&t->finished, false, memory_order_relaxed);
	double at = clock_wait_until(p->part.start_at, POOL_SPIN_S, &stop_part);
	/*
	 * The release is these readings, taken once: its epoch seconds, its nanoseconds and the
	 * start of the thread's time. A thread preempted after its wait would otherwise carry
	 * two release instants, and its node time would not be what its figures add up to.
	 * Not before the wait's look, which saw T: a double of epoch seconds rounds to 0.24 us,
	 * so the later reading may round below T, while the look (rounded too) was not.
	 */
	r->release_at_ns = clock_wall_ns();
	t->out->release_mono = clock_mono_ns();
	r->release_mono_ns = t->out->release_mono;
	if (at < 0)
		return;
	r->release_at = (double)r->release_at_ns / 1e9;
	if (r->release_at < at)
		r->release_at = at;
	r->ran = true;
	r->rc = p->part.ops->run(&t->ctx);
	t->end_mono = clock_mono_ns();
	atomic_store_explicit(&t->finished, true, memory_order_relaxed);
	if (r->rc)
		stop_request();
}

/*
 * The start of the first operation on the wall clock (the release's wall instant plus the
 * monotonic time between them), and 1a's first pass apart from the median of the others.
 */
static void pool_thread_instants(struct pool_thread *t)
{
	struct bench_ctx *c = &t->ctx;
	struct thread_result *r = &t->out->res;

	r->first_io_at_ns = 0;
	if (r->ran && c->first_io_ns)
		r->first_io_at_ns =
		    r->release_at_ns + (int64_t)(c->first_io_ns - t->out->release_mono);
	r->first_pass_s = c->first_pass_ns ? (double)c->first_pass_ns / 1e9 : -1.0;
	r->rest_pass_median_s =
	    c->npass_ns ? (double)bench_median_ns(c->pass_ns, (size_t)c->npass_ns) / 1e9 : -1.0;
}

/* One part, from its publication to its results. 0, or -ECANCELED when the gate broke. */
static int pool_thread_part(struct pool_thread *t)
{
	struct pool *p = t->p;
	struct bench_ctx *c = &t->ctx;
	struct thread_result *r = &t->out->res;

	memset(c, 0, sizeof(*c));
	memset(&r->err, 0, sizeof(r->err));
	c->p = &p->part.params;
	c->thread = r->index;
	c->buf = t->buf;
	c->lat = t->out->hist;
	c->stop = &stop_part;
	hist_init(t->out->hist);
	prng_seed(&c->rng, p->seed ^ p->part.stream, p->node_hash, r->index);
	r->ran = false;
	r->release_at_ns = r->first_io_at_ns = 0;
	r->late_by_s = 0;
	r->rc = p->part.ops->setup ? p->part.ops->setup(c) : 0;
	int setup_rc = r->rc;
	if (setup_rc)
		stop_request();

	if (gate_wait(&p->gate) < 0 || gate_wait(&p->gate) < 0) /* ready; go */
		return -ECANCELED;
	pool_thread_run(t, setup_rc);
	if (gate_wait(&p->gate) < 0) /* every thread is done with the timed part */
		return -ECANCELED;
	if (!setup_rc && p->part.ops->teardown)
		p->part.ops->teardown(c);
	r->time_s = r->ran ? (double)(t->end_mono - t->out->release_mono) / 1e9 : 0.0;
	r->bytes = c->bytes;
	r->ops = c->ops;
	r->pages = c->pages;
	r->files = c->files;
	r->retries = c->retries;
	pool_thread_instants(t);
	if (r->rc)
		r->err = c->err;
	return gate_wait(&p->gate); /* results are in */
}

static void *pool_thread_main(void *arg)
{
	struct pool_thread *t = arg;
	struct pool *p = t->p;

	t->init_rc = pool_thread_init(t);
	t->out->res.cpu_seen = topo_current_cpu();
	if (gate_wait(&p->gate) == 0) { /* initialized */
		/* A part is published, or quit. */
		while (gate_wait(&p->gate) == 0 && !p->quit && pool_thread_part(t) == 0)
			;
	}
	free(t->mem);
	free(t->out->hist);
	t->out->hist = NULL;
	return NULL;
}

/* Break the gate, join the started threads, free the pool's arrays. */
static void pool_join(struct pool *p)
{
	gate_break(&p->gate);
	for (size_t i = 0; i < p->started; i++)
		pthread_join(p->threads[i].tid, NULL);
	p->started = 0;
	gate_destroy(&p->gate);
	free(p->threads);
	free(p->out);
	p->threads = NULL;
	p->out = NULL;
}

/* Create the threads with SIGINT/SIGTERM blocked: the main thread's handler sets the flags. */
static int pool_create(struct pool *p, const struct topo_plan *tp)
{
	sigset_t block, old;
	int rc = 0;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	for (size_t i = 0; i < p->nthreads; i++) {
		struct pool_thread *t = &p->threads[i];
		t->p = p;
		t->out = &p->out[i];
		t->slot = tp->slots[i];
		t->out->res.index = (unsigned)i;
		t->out->res.cpu = t->slot.pu;
		t->out->res.core = t->slot.core;
		rc = -pthread_create(&t->tid, NULL, pool_thread_main, t);
		if (rc)
			break;
		p->started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int pool_start(struct pool *p, struct topo *topo, size_t buf_bytes, size_t buf_offset,
	       uint64_t seed, uint64_t node_hash, struct node_result *res)
{
	size_t n = res->tplan.nslots;
	int rc;

	memset(p, 0, sizeof(*p));
	p->topo = topo;
	p->nthreads = n;
	p->buf_bytes = buf_bytes;
	p->buf_offset = buf_offset;
	p->seed = seed;
	p->node_hash = node_hash;
	p->threads = calloc(n, sizeof(*p->threads));
	p->out = calloc(n, sizeof(*p->out));
	gate_init(&p->gate, (unsigned)n + 1);
	if (!p->threads || !p->out) {
		note_error(res, REASON_SETUP_FAILED, "out of memory");
		pool_join(p);
		return -ENOMEM;
	}
	rc = pool_create(p, &res->tplan);
	if (rc) {
		note_error(res, REASON_SETUP_FAILED, "cannot start thread %zu of %zu: %s",
			   p->started, n, strerror(-rc));
		pool_join(p);
		return rc;
	}
	gate_wait(&p->gate); /* initialized */
	for (size_t i = 0; i < n; i++) {
		struct pool_thread *t = &p->threads[i];
		if (t->init_rc) {
			note_error(res, REASON_SETUP_FAILED, "thread %zu: %s to CPU %u: %s", i,
				   t->init_op, t->slot.pu, strerror(-t->init_rc));
			rc = t->init_rc;
		}
	}
	if (rc)
		pool_stop(p);
	return rc;
}

void pool_stop(struct pool *p)
{
	if (!p->threads)
		return;
	/* Publish "nothing to do"; the break in pool_join is for threads that never got that far.
	 */
	p->quit = true;
	gate_wait(&p->gate);
	pool_join(p);
}

void pool_live(const struct pool *p, uint64_t *bytes, uint64_t *ops, size_t *done)
{
	*bytes = *ops = 0;
	*done = 0;
	for (size_t i = 0; i < p->nthreads; i++) {
		struct pool_thread *t = &p->threads[i];
		*bytes += atomic_load_explicit(&t->ctx.live_bytes, memory_order_relaxed);
		*ops += atomic_load_explicit(&t->ctx.live_ops, memory_order_relaxed);
		*done += atomic_load_explicit(&t->finished, memory_order_relaxed);
	}
}
