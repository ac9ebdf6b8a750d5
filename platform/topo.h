/* SPDX-License-Identifier: MIT */
/*
 * The thread plan: which cores this process may use (the binding it inherited from taskset,
 * Slurm or a cgroup), one thread per core, each bound to one PU of its core. Built on hwloc;
 * a synthetic machine (topo_open_synthetic) lets tests check the computed CPU sets.
 */
#ifndef STAGEBENCH_TOPO_H
#define STAGEBENCH_TOPO_H

#include <stdbool.h>
#include <stddef.h>

struct topo; /* opaque: a loaded hwloc topology */

struct topo_slot {
	unsigned pu;	  /* OS index of the PU the thread binds to (what Linux calls the CPU) */
	unsigned core;	  /* logical index of its core */
	unsigned package; /* logical index of its package */
	unsigned smt;	  /* how many PUs its core has in the allowed set */
};

struct topo_plan {
	size_t nslots;
	struct topo_slot *slots; /* one per thread, in thread order */
	size_t allowed_cores;	 /* cores with at least one allowed PU */
	size_t machine_cores;	 /* all cores of the machine (online) */
	size_t allowed_pus;
	size_t machine_pus; /* all PUs of the machine */
	bool restricted;    /* the inherited binding excludes some PUs of the machine */
};

/*
 * Load this machine's topology. 0, or -errno (-ENOMEM, or what hwloc reported).
 */
int topo_open(struct topo **out);
/* Load a synthetic topology ("pack:2 core:4 pu:2"); binding is not possible on it. */
int topo_open_synthetic(const char *desc, struct topo **out);
void topo_close(struct topo *t);

/*
 * The PUs this process may run on, as OS indexes in ascending order: the inherited process
 * binding on a real machine, every PU on a synthetic one, or the list set by
 * topo_restrict() (for tests). Returns the count (up to max), or -errno.
 */
int topo_allowed(struct topo *t, unsigned *pus, size_t max);
/*
 * Pretend the inherited binding is this set of PUs (tests of restricted bindings); n == 0
 * lifts the pretence. -ENOENT when a PU is not one of the machine's.
 */
int topo_restrict(struct topo *t, const unsigned *pus, size_t n);

/*
 * Build the plan. With cpus == NULL: one slot per allowed core, the first allowed PU of
 * each, in core order; want (0 = all) keeps only the first want cores. With cpus: one slot
 * per listed CPU, in the order given; want, if not 0, must equal ncpus.
 * Errors, with *why set to a one-line reason:
 *   -EINVAL  want larger than the allowed cores (oversubscription), or want != ncpus;
 *   -ENOENT  a listed CPU does not exist or is outside the allowed set;
 *   -EEXIST  two listed CPUs are on the same core (that would oversubscribe the core).
 * The plan owns its slots; free with topo_plan_free().
 */
int topo_plan_build(struct topo *t, unsigned want, const unsigned *cpus, size_t ncpus,
		    struct topo_plan *plan, const char **why);
void topo_plan_free(struct topo_plan *plan);

/*
 * Bind the calling thread to PU pu, then read the binding back and check it holds exactly
 * that PU. 0, -EXDEV when the read-back differs, or -errno from hwloc.
 */
int topo_bind_self(struct topo *t, unsigned pu);

/* The CPU the calling thread runs on now (sched_getcpu), or -1. */
int topo_current_cpu(void);

#endif
