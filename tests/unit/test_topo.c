/* SPDX-License-Identifier: MIT */
/*
 * Unit test of platform/topo: thread plans computed on synthetic machines (exact PU lists,
 * restricted bindings, CPU lists and their errors), then real pinning on this machine.
 */
#include "platform/topo.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>

#include "check.h"

#define MAXN 24

/* hwloc numbers the PUs of a synthetic machine 0..N-1 in logical order unless told otherwise. */
#define M16 "pack:2 core:4 pu:2"
#define M2  "pack:1 core:2 pu:1"
#define M24 "pack:2 numa:1 core:3 pu:4"
/* Linux-style SMT numbering: core c has PUs c and c+4. */
#define M8I "pack:1 core:4 pu:2(indexes=0,4,1,5,2,6,3,7)"

/* Expected facts of a plan on a machine all of whose cores and PUs are allowed. */
#define ALL_ALLOWED(cores, pus) .allowed_cores = cores, .allowed_pus = pus, .machine_pus = pus
/* The expected plan of one thread on each core of M16, on the first PU of each. */
#define M16_EVERY_CORE                                                                             \
	.nslots = 8, .pu = {0, 2, 4, 6, 8, 10, 12, 14}, .core = {0, 1, 2, 3, 4, 5, 6, 7},          \
	.package = {0, 0, 0, 0, 1, 1, 1, 1}, .smt = {2, 2, 2, 2, 2, 2, 2, 2}
/* Asking for n threads when only cores are allowed: refused, with this reason. */
#define TOO_MANY(n, cores)                                                                         \
	.want = n, .err = -EINVAL,                                                                 \
	.why = "asked for " #n " threads but only " #cores " cores are allowed (the spec forbids " \
	       "oversubscription)"

struct plan_case {
	const char *name;
	const char *desc;
	unsigned restrict_to[MAXN]; /* pretend binding, when nrestrict > 0 */
	size_t nrestrict;
	unsigned want;
	bool list; /* pass cpus[0..ncpus-1] */
	unsigned cpus[MAXN];
	size_t ncpus;
	int err;
	const char *why; /* exact reason when err != 0 */
	/* expected plan when err == 0 */
	size_t nslots;
	unsigned pu[MAXN], core[MAXN], package[MAXN], smt[MAXN];
	size_t allowed_cores, allowed_pus, machine_pus;
	bool restricted;
};

static const struct plan_case plan_cases[] = {
    {
	.name = "2x4x2 all cores",
	.desc = M16,
	M16_EVERY_CORE,
	ALL_ALLOWED(8, 16),
    },
    {
	.name = "2x4x2 want 3",
	.desc = M16,
	.want = 3,
	.nslots = 3,
	.pu = {0, 2, 4},
	.core = {0, 1, 2},
	.smt = {2, 2, 2},
	ALL_ALLOWED(8, 16),
    },
    {
	.name = "2x4x2 want 8 (exactly all)",
	.desc = M16,
	.want = 8,
	M16_EVERY_CORE,
	ALL_ALLOWED(8, 16),
    },
    {
	.name = "2x4x2 want 9",
	.desc = M16,
	TOO_MANY(9, 8),
    },
    {
	.name = "2x4x2 restricted to 1,2,3,9",
	.desc = M16,
	.restrict_to = {9, 3, 1, 2},
	.nrestrict = 4,
	.nslots = 3,
	.pu = {1, 2, 9},
	.core = {0, 1, 4},
	.package = {0, 0, 1},
	.smt = {1, 2, 1},
	.allowed_cores = 3,
	.allowed_pus = 4,
	.machine_pus = 16,
	.restricted = true,
    },
    {
	.name = "2x4x2 restricted, want 4",
	.desc = M16,
	.restrict_to = {1, 2, 3, 9},
	.nrestrict = 4,
	TOO_MANY(4, 3),
    },
    {
	.name = "2x4x2 restricted to everything",
	.desc = M16,
	.restrict_to = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
	.nrestrict = 16,
	.want = 2,
	.nslots = 2,
	.pu = {0, 2},
	.core = {0, 1},
	.smt = {2, 2},
	ALL_ALLOWED(8, 16),
    },
    {
	.name = "2x4x2 CPU list in given order",
	.desc = M16,
	.list = true,
	.cpus = {6, 1, 12},
	.ncpus = 3,
	.nslots = 3,
	.pu = {6, 1, 12},
	.core = {3, 0, 6},
	.package = {0, 0, 1},
	.smt = {2, 2, 2},
	ALL_ALLOWED(8, 16),
    },
    {
	.name = "2x4x2 CPU list, want equal",
	.desc = M16,
	.list = true,
	.cpus = {15, 0},
	.ncpus = 2,
	.want = 2,
	.nslots = 2,
	.pu = {15, 0},
	.core = {7, 0},
	.package = {1, 0},
	.smt = {2, 2},
	ALL_ALLOWED(8, 16),
    },
    {
	.name = "2x4x2 CPU list, want differs",
	.desc = M16,
	.list = true,
	.cpus = {0, 2},
	.ncpus = 2,
	.want = 3,
	.err = -EINVAL,
	.why = "asked for 3 threads but listed 2 CPUs",
    },
    {
	.name = "2x4x2 CPU outside the allowed set",
	.desc = M16,
	.restrict_to = {0, 1, 2, 3},
	.nrestrict = 4,
	.list = true,
	.cpus = {0, 7},
	.ncpus = 2,
	.err = -ENOENT,
	.why = "CPU 7 is not in the allowed set 0-3",
    },
    {
	.name = "2x4x2 CPU that does not exist",
	.desc = M16,
	.list = true,
	.cpus = {16},
	.ncpus = 1,
	.err = -ENOENT,
	.why = "CPU 16 does not exist (this machine has CPUs 0-15)",
    },
    {
	.name = "2x4x2 SMT siblings",
	.desc = M16,
	.list = true,
	.cpus = {4, 0, 1},
	.ncpus = 3,
	.err = -EEXIST,
	.why = "CPUs 0 and 1 are SMT siblings on core 0",
    },
    {
	.name = "2x4x2 CPU listed twice",
	.desc = M16,
	.list = true,
	.cpus = {3, 3},
	.ncpus = 2,
	.err = -EEXIST,
	.why = "CPU 3 is listed twice",
    },
    {
	.name = "2x4x2 empty CPU list",
	.desc = M16,
	.list = true,
	.ncpus = 0,
	.err = -EINVAL,
	.why = "the CPU list is empty",
    },
    {
	.name = "1x2x1 all cores",
	.desc = M2,
	.nslots = 2,
	.pu = {0, 1},
	.core = {0, 1},
	.smt = {1, 1},
	ALL_ALLOWED(2, 2),
    },
    {
	.name = "1x2x1 want 3",
	.desc = M2,
	TOO_MANY(3, 2),
    },
    {
	.name = "2x(numa)x3x4 all cores",
	.desc = M24,
	.nslots = 6,
	.pu = {0, 4, 8, 12, 16, 20},
	.core = {0, 1, 2, 3, 4, 5},
	.package = {0, 0, 0, 1, 1, 1},
	.smt = {4, 4, 4, 4, 4, 4},
	ALL_ALLOWED(6, 24),
    },
    {
	.name = "2x(numa)x3x4 restricted to the last PU of each core",
	.desc = M24,
	.restrict_to = {3, 7, 11, 15, 19, 23},
	.nrestrict = 6,
	.want = 5,
	.nslots = 5,
	.pu = {3, 7, 11, 15, 19},
	.core = {0, 1, 2, 3, 4},
	.package = {0, 0, 0, 1, 1},
	.smt = {1, 1, 1, 1, 1},
	.allowed_cores = 6,
	.allowed_pus = 6,
	.machine_pus = 24,
	.restricted = true,
    },
    {
	.name = "interleaved numbering, all cores",
	.desc = M8I,
	.nslots = 4,
	.pu = {0, 1, 2, 3},
	.core = {0, 1, 2, 3},
	.smt = {2, 2, 2, 2},
	ALL_ALLOWED(4, 8),
    },
    {
	.name = "interleaved numbering, restricted to the second threads",
	.desc = M8I,
	.restrict_to = {4, 5, 6, 7},
	.nrestrict = 4,
	.nslots = 4,
	.pu = {4, 5, 6, 7},
	.core = {0, 1, 2, 3},
	.smt = {1, 1, 1, 1},
	.allowed_cores = 4,
	.allowed_pus = 4,
	.machine_pus = 8,
	.restricted = true,
    },
    {
	.name = "interleaved numbering, SMT siblings",
	.desc = M8I,
	.list = true,
	.cpus = {0, 4},
	.ncpus = 2,
	.err = -EEXIST,
	.why = "CPUs 0 and 4 are SMT siblings on core 0",
    },
    {
	.name = "interleaved numbering, CPU list",
	.desc = M8I,
	.list = true,
	.cpus = {7, 0, 5},
	.ncpus = 3,
	.nslots = 3,
	.pu = {7, 0, 5},
	.core = {3, 0, 1},
	.smt = {2, 2, 2},
	ALL_ALLOWED(4, 8),
    },
};

static void test_plan_case(const struct plan_case *c)
{
	struct topo_plan plan;
	const char *why = NULL;
	struct topo *t;
	int err;

	err = topo_open_synthetic(c->desc, &t);
	CHECK_MSG(err == 0, "%s: open '%s': %d", c->name, c->desc, err);
	if (err)
		return;
	if (c->nrestrict) {
		err = topo_restrict(t, c->restrict_to, c->nrestrict);
		CHECK_MSG(err == 0, "%s: restrict: %d", c->name, err);
	}
	err = topo_plan_build(t, c->want, c->list ? c->cpus : NULL, c->ncpus, &plan, &why);
	CHECK_MSG(err == c->err, "%s: got %d, want %d (%s)", c->name, err, c->err,
		  why ? why : "no reason");
	if (c->err) {
		CHECK_MSG(why && strcmp(why, c->why) == 0, "%s: why '%s' != '%s'", c->name,
			  why ? why : "(null)", c->why);
		CHECK_MSG(plan.slots == NULL && plan.nslots == 0, "%s: failed plan has slots",
			  c->name);
		goto out;
	}
	if (err)
		goto out;
	CHECK_MSG(plan.nslots == c->nslots, "%s: %zu slots, want %zu", c->name, plan.nslots,
		  c->nslots);
	for (size_t i = 0; i < plan.nslots && i < c->nslots; i++) {
		const struct topo_slot *s = &plan.slots[i];

		CHECK_MSG(s->pu == c->pu[i], "%s: slot %zu pu %u, want %u", c->name, i, s->pu,
			  c->pu[i]);
		CHECK_MSG(s->core == c->core[i], "%s: slot %zu core %u, want %u", c->name, i,
			  s->core, c->core[i]);
		CHECK_MSG(s->package == c->package[i], "%s: slot %zu package %u, want %u", c->name,
			  i, s->package, c->package[i]);
		CHECK_MSG(s->smt == c->smt[i], "%s: slot %zu smt %u, want %u", c->name, i, s->smt,
			  c->smt[i]);
	}
	CHECK_MSG(plan.allowed_cores == c->allowed_cores, "%s: allowed_cores %zu, want %zu",
		  c->name, plan.allowed_cores, c->allowed_cores);
	CHECK_MSG(plan.allowed_pus == c->allowed_pus, "%s: allowed_pus %zu, want %zu", c->name,
		  plan.allowed_pus, c->allowed_pus);
	CHECK_MSG(plan.machine_pus == c->machine_pus, "%s: machine_pus %zu, want %zu", c->name,
		  plan.machine_pus, c->machine_pus);
	CHECK_MSG(plan.restricted == c->restricted, "%s: restricted %d, want %d", c->name,
		  plan.restricted, c->restricted);
out:
	topo_plan_free(&plan);
	CHECK(plan.slots == NULL && plan.nslots == 0);
	topo_close(t);
}

/* topo_allowed and topo_restrict on a synthetic machine. */
static void test_allowed(void)
{
	static const unsigned scrambled[] = {9, 3, 1, 2, 3};
	static const unsigned sorted[] = {1, 2, 3, 9};
	static const unsigned missing[] = {2, 16};
	unsigned pus[32];
	struct topo *t;
	int n;

	if (topo_open_synthetic(M16, &t) != 0) {
		CHECK_MSG(0, "open " M16);
		return;
	}
	n = topo_allowed(t, pus, 32);
	CHECK_MSG(n == 16, "all PUs allowed: %d", n);
	for (int i = 0; i < n; i++)
		CHECK_U64(pus[i], i);
	CHECK_U64(topo_allowed(t, pus, 5), 5);
	CHECK_U64(pus[4], 4);

	CHECK_U64(topo_restrict(t, scrambled, 5), 0);
	n = topo_allowed(t, pus, 32);
	CHECK_MSG(n == 4, "restricted count %d", n);
	for (int i = 0; i < n && i < 4; i++)
		CHECK_U64(pus[i], sorted[i]);

	/* A PU the machine lacks is refused and leaves the restriction as it was. */
	CHECK_U64(topo_restrict(t, missing, 2), -ENOENT);
	CHECK_U64(topo_allowed(t, pus, 32), 4);

	/* n == 0 lifts the restriction. */
	CHECK_U64(topo_restrict(t, NULL, 0), 0);
	CHECK_U64(topo_allowed(t, pus, 32), 16);

	/* A synthetic machine cannot be bound to. */
	CHECK_U64(topo_bind_self(t, 0), -ENOSYS);
	topo_close(t);

	t = (struct topo *)&t; /* poison: a failed open must set *out to NULL */
	CHECK_MSG(topo_open_synthetic("pack:2 bogus:3", &t) < 0, "bad description accepted");
	CHECK(t == NULL);
	topo_close(NULL);
}

struct bind_job {
	struct topo *t;
	unsigned pu;
	int err;
	int cpu;
	int cpu_before_yield;
};

static void *bind_thread(void *arg)
{
	struct bind_job *job = arg;

	job->err = topo_bind_self(job->t, job->pu);
	job->cpu_before_yield = topo_current_cpu();
	sched_yield();
	job->cpu = topo_current_cpu();
	return NULL;
}

/* The real machine: the plan covers the inherited binding, and each slot really pins. */
static void test_real(void)
{
	struct bind_job jobs[256];
	pthread_t tids[256];
	struct topo_plan plan;
	unsigned pus[1024];
	const char *why = NULL;
	cpu_set_t mask;
	struct topo *t;
	size_t nmask = 0;
	int err, n;

	err = topo_open(&t);
	CHECK_MSG(err == 0, "topo_open: %d", err);
	if (err)
		return;

	n = topo_allowed(t, pus, 1024);
	CHECK_MSG(n > 0, "topo_allowed: %d", n);
	CHECK(sched_getaffinity(0, sizeof(mask), &mask) == 0);
	for (int i = 0; i < n; i++)
		CHECK_MSG(CPU_ISSET(pus[i], &mask), "allowed PU %u not in the affinity mask",
			  pus[i]);
	for (int i = 0; i < CPU_SETSIZE; i++)
		nmask += CPU_ISSET(i, &mask) ? 1 : 0;
	CHECK_U64(n, nmask);

	/* A narrower inherited binding (taskset) is what the plan follows. */
	if (n > 1) {
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(pus[n - 1], &one);
		CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);
		CHECK_U64(topo_allowed(t, pus + n, 1024 - (size_t)n), 1);
		CHECK_U64(pus[n], pus[n - 1]);
		err = topo_plan_build(t, 0, NULL, 0, &plan, &why);
		CHECK_MSG(err == 0, "plan on one PU: %d %s", err, why ? why : "");
		CHECK(err || (plan.nslots == 1 && plan.slots[0].pu == pus[n - 1] &&
			      plan.restricted && plan.allowed_pus == 1));
		topo_plan_free(&plan);
		CHECK(sched_setaffinity(0, sizeof(mask), &mask) == 0);
	}

	err = topo_plan_build(t, 0, NULL, 0, &plan, &why);
	CHECK_MSG(err == 0, "plan: %d %s", err, why ? why : "");
	if (err)
		goto out;
	CHECK(plan.nslots > 0 && plan.nslots <= 256);
	CHECK_U64(plan.nslots, plan.allowed_cores);
	CHECK_U64(plan.allowed_pus, n);
	CHECK(plan.machine_pus >= plan.allowed_pus);
	CHECK(plan.restricted == (plan.allowed_pus < plan.machine_pus));
	printf("real machine: %zu slots, %zu allowed PUs of %zu, first PU %u\n", plan.nslots,
	       plan.allowed_pus, plan.machine_pus, plan.nslots ? plan.slots[0].pu : 0);

	for (size_t i = 0; i < plan.nslots && i < 256; i++) {
		jobs[i] = (struct bind_job){.t = t, .pu = plan.slots[i].pu, .err = 1, .cpu = -1};
		CHECK(pthread_create(&tids[i], NULL, bind_thread, &jobs[i]) == 0);
	}
	for (size_t i = 0; i < plan.nslots && i < 256; i++) {
		CHECK(pthread_join(tids[i], NULL) == 0);
		CHECK_MSG(jobs[i].err == 0, "bind to %u: %d", jobs[i].pu, jobs[i].err);
		CHECK_MSG(jobs[i].cpu == (int)jobs[i].pu, "bound to %u but runs on %d", jobs[i].pu,
			  jobs[i].cpu);
		CHECK_MSG(jobs[i].cpu_before_yield == (int)jobs[i].pu,
			  "bound to %u but ran on %d right after binding", jobs[i].pu,
			  jobs[i].cpu_before_yield);
	}
	CHECK_U64(topo_bind_self(t, 100000), -ENOENT);
	topo_plan_free(&plan);
out:
	topo_close(t);
}

int main(void)
{
	for (size_t i = 0; i < sizeof(plan_cases) / sizeof(plan_cases[0]); i++)
		test_plan_case(&plan_cases[i]);
	test_allowed();
	test_real();
	return check_done();
}
