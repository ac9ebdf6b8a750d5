/* SPDX-License-Identifier: MIT */
/*
 * The thread plan on top of hwloc: which PUs this process may use, one thread per allowed
 * core on the first allowed PU of that core, and binding a thread to its PU with a read-back
 * check. Everything hwloc-specific in stagebench lives here.
 */
#include "platform/topo.h"

#include <errno.h>
#include <hwloc.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct topo {
	hwloc_topology_t h;
	hwloc_obj_type_t core_type; /* HWLOC_OBJ_CORE, or HWLOC_OBJ_PU when cores are unknown */
	hwloc_bitmap_t restricted;  /* set by topo_restrict(), else NULL */
};

/* The reason of the last failed topo_plan_build() in this thread. */
static _Thread_local char topo_why_buf[256];

static void topo_why(const char **why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void topo_why(const char **why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(topo_why_buf, sizeof(topo_why_buf), fmt, ap);
	va_end(ap);
	if (why)
		*why = topo_why_buf;
}

/* hwloc reports failures as -1 with errno, but not every path sets errno. */
static int topo_neg_errno(int fallback)
{
	int err = errno;

	return err > 0 ? -err : -fallback;
}

/*
 * Some platforms (a few ARM boards and VMs) expose PUs without Core objects. Planning then
 * treats each PU as its own core rather than failing, which is what the OS scheduler sees.
 */
static hwloc_obj_type_t topo_pick_core_type(hwloc_topology_t h)
{
	int npus = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PU);

	if (hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE) <= 0)
		return HWLOC_OBJ_PU;
	for (int i = 0; i < npus; i++) {
		hwloc_obj_t pu = hwloc_get_obj_by_type(h, HWLOC_OBJ_PU, (unsigned)i);

		if (!hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_CORE, pu))
			return HWLOC_OBJ_PU;
	}
	return HWLOC_OBJ_CORE;
}

static hwloc_obj_t topo_core_of(const struct topo *t, hwloc_obj_t pu)
{
	if (t->core_type == HWLOC_OBJ_PU)
		return pu;
	return hwloc_get_ancestor_obj_by_type(t->h, HWLOC_OBJ_CORE, pu);
}

static int topo_load(const char *synthetic, struct topo **out)
{
	struct topo *t;
	int err = 0;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	if (hwloc_topology_init(&t->h) < 0) {
		err = topo_neg_errno(ENOMEM);
		t->h = NULL;
		goto out;
	}
	if (synthetic) {
		if (hwloc_topology_set_synthetic(t->h, synthetic) < 0) {
			err = topo_neg_errno(EINVAL);
			goto out;
		}
	} else {
		/*
		 * Keep the PUs a cgroup/cpuset forbids in the topology, so that machine_pus counts
		 * the whole machine and the plan can say the run is restricted; the allowed
		 * cpuset is intersected in topo_allowed().
		 */
		if (hwloc_topology_set_flags(t->h, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) < 0) {
			err = topo_neg_errno(EINVAL);
			goto out;
		}
	}
	if (hwloc_topology_load(t->h) < 0) {
		err = topo_neg_errno(EINVAL);
		goto out;
	}
	t->core_type = topo_pick_core_type(t->h);
	*out = t;
	t = NULL;
out:
	topo_close(t);
	return err;
}

int topo_open(struct topo **out)
{
	return topo_load(NULL, out);
}

int topo_open_synthetic(const char *desc, struct topo **out)
{
	if (!desc) {
		*out = NULL;
		return -EINVAL;
	}
	return topo_load(desc, out);
}

void topo_close(struct topo *t)
{
	if (!t)
		return;
	hwloc_bitmap_free(t->restricted);
	if (t->h)
		hwloc_topology_destroy(t->h);
	free(t);
}

/*
 * Fill set with the allowed PUs. The process binding describes this machine only, so a
 * topology that is not this system's (synthetic, or HWLOC_SYNTHETIC/XML from the
 * environment) allows all its PUs.
 */
static int topo_allowed_set(struct topo *t, hwloc_bitmap_t set)
{
	hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(t->h);

	if (t->restricted) {
		if (hwloc_bitmap_copy(set, t->restricted) < 0)
			return -ENOMEM;
		return 0;
	}
	if (!hwloc_topology_is_thissystem(t->h)) {
		if (hwloc_bitmap_copy(set, all) < 0)
			return -ENOMEM;
		return 0;
	}
	if (hwloc_get_cpubind(t->h, set, HWLOC_CPUBIND_PROCESS) < 0)
		return topo_neg_errno(ENOSYS);
	if (hwloc_bitmap_and(set, set, hwloc_topology_get_allowed_cpuset(t->h)) < 0 ||
	    hwloc_bitmap_and(set, set, all) < 0)
		return -ENOMEM;
	return 0;
}

int topo_allowed(struct topo *t, unsigned *pus, size_t max)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	size_t n = 0;
	int err;

	if (!set)
		return -ENOMEM;
	err = topo_allowed_set(t, set);
	if (err < 0)
		goto out;
	for (int i = hwloc_bitmap_first(set); i >= 0 && n < max; i = hwloc_bitmap_next(set, i))
		pus[n++] = (unsigned)i;
	err = (int)n;
out:
	hwloc_bitmap_free(set);
	return err;
}

int topo_restrict(struct topo *t, const unsigned *pus, size_t n)
{
	hwloc_bitmap_t set = NULL;
	int err = 0;

	if (n == 0) {
		hwloc_bitmap_free(t->restricted);
		t->restricted = NULL;
		return 0;
	}
	set = hwloc_bitmap_alloc();
	if (!set)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!hwloc_get_pu_obj_by_os_index(t->h, pus[i])) {
			err = -ENOENT;
			goto out;
		}
		if (hwloc_bitmap_set(set, pus[i]) < 0) {
			err = -ENOMEM;
			goto out;
		}
	}
	hwloc_bitmap_free(t->restricted);
	t->restricted = set;
	set = NULL;
out:
	hwloc_bitmap_free(set);
	return err;
}

/* Describe core (its allowed PUs in tmp) as a slot on its first allowed PU. */
static void topo_slot_fill(const struct topo *t, hwloc_obj_t core, hwloc_const_bitmap_t tmp,
			   unsigned pu, struct topo_slot *slot)
{
	hwloc_obj_t pack = hwloc_get_ancestor_obj_by_type(t->h, HWLOC_OBJ_PACKAGE, core);

	slot->pu = pu;
	slot->core = core->logical_index;
	slot->package = pack ? pack->logical_index : 0;
	slot->smt = (unsigned)hwloc_bitmap_weight(tmp);
}

/* One slot per allowed core in logical order, the first allowed PU of each. */
static int topo_plan_cores(struct topo *t, hwloc_const_bitmap_t allowed, hwloc_bitmap_t tmp,
			   unsigned want, struct topo_plan *plan, const char **why)
{
	int ncores = hwloc_get_nbobjs_by_type(t->h, t->core_type);
	size_t n;

	if (plan->allowed_cores == 0) {
		topo_why(why, "no core has an allowed PU");
		return -ENOENT;
	}
	if (want > plan->allowed_cores) {
		topo_why(why,
			 "asked for %u threads but only %zu cores are allowed (the spec forbids "
			 "oversubscription)",
			 want, plan->allowed_cores);
		return -EINVAL;
	}
	n = want ? want : plan->allowed_cores;
	plan->slots = calloc(n, sizeof(*plan->slots));
	if (!plan->slots)
		return -ENOMEM;
	for (int i = 0; i < ncores && plan->nslots < n; i++) {
		hwloc_obj_t core = hwloc_get_obj_by_type(t->h, t->core_type, (unsigned)i);

		if (hwloc_bitmap_and(tmp, core->cpuset, allowed) < 0)
			return -ENOMEM;
		if (hwloc_bitmap_iszero(tmp))
			continue;
		topo_slot_fill(t, core, tmp, (unsigned)hwloc_bitmap_first(tmp),
			       &plan->slots[plan->nslots++]);
	}
	return 0;
}

/* One slot per listed CPU, in the order given, each alone on its core. */
static int topo_plan_list(struct topo *t, hwloc_const_bitmap_t allowed, hwloc_bitmap_t tmp,
			  const unsigned *cpus, size_t ncpus, struct topo_plan *plan,
			  const char **why)
{
	char set_text[160];

	if (ncpus == 0) {
		topo_why(why, "the CPU list is empty");
		return -EINVAL;
	}
	plan->slots = calloc(ncpus, sizeof(*plan->slots));
	if (!plan->slots)
		return -ENOMEM;
	for (size_t i = 0; i < ncpus; i++) {
		hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t->h, cpus[i]);
		hwloc_obj_t core;

		if (!pu) {
			hwloc_bitmap_list_snprintf(set_text, sizeof(set_text),
						   hwloc_topology_get_topology_cpuset(t->h));
			topo_why(why, "CPU %u does not exist (this machine has CPUs %s)", cpus[i],
				 set_text);
			return -ENOENT;
		}
		if (!hwloc_bitmap_isset(allowed, cpus[i])) {
			hwloc_bitmap_list_snprintf(set_text, sizeof(set_text), allowed);
			topo_why(why, "CPU %u is not in the allowed set %s", cpus[i], set_text);
			return -ENOENT;
		}
		core = topo_core_of(t, pu);
		for (size_t j = 0; j < i; j++) {
			if (cpus[j] == cpus[i]) {
				topo_why(why, "CPU %u is listed twice", cpus[i]);
				return -EEXIST;
			}
			if (plan->slots[j].core == core->logical_index) {
				topo_why(why, "CPUs %u and %u are SMT siblings on core %u", cpus[j],
					 cpus[i], core->logical_index);
				return -EEXIST;
			}
		}
		if (hwloc_bitmap_and(tmp, core->cpuset, allowed) < 0)
			return -ENOMEM;
		topo_slot_fill(t, core, tmp, cpus[i], &plan->slots[plan->nslots++]);
	}
	return 0;
}

int topo_plan_build(struct topo *t, unsigned want, const unsigned *cpus, size_t ncpus,
		    struct topo_plan *plan, const char **why)
{
	hwloc_bitmap_t allowed = hwloc_bitmap_alloc();
	hwloc_bitmap_t tmp = hwloc_bitmap_alloc();
	int ncores = hwloc_get_nbobjs_by_type(t->h, t->core_type);
	int err = 0;

	*plan = (struct topo_plan){0};
	if (!allowed || !tmp) {
		err = -ENOMEM;
		goto out;
	}
	err = topo_allowed_set(t, allowed);
	if (err < 0) {
		topo_why(why, "cannot read the process binding");
		goto out;
	}
	plan->allowed_pus = (size_t)hwloc_bitmap_weight(allowed);
	plan->machine_pus = (size_t)hwloc_get_nbobjs_by_type(t->h, HWLOC_OBJ_PU);
	plan->restricted = plan->allowed_pus < plan->machine_pus;
	plan->machine_cores = ncores > 0 ? (size_t)ncores : 0;
	for (int i = 0; i < ncores; i++) {
		hwloc_obj_t core = hwloc_get_obj_by_type(t->h, t->core_type, (unsigned)i);

		if (hwloc_bitmap_intersects(core->cpuset, allowed))
			plan->allowed_cores++;
	}

	if (cpus && want != 0 && want != ncpus) {
		topo_why(why, "asked for %u threads but listed %zu CPUs", want, ncpus);
		err = -EINVAL;
	} else if (cpus) {
		err = topo_plan_list(t, allowed, tmp, cpus, ncpus, plan, why);
	} else {
		err = topo_plan_cores(t, allowed, tmp, want, plan, why);
	}
	if (err == -ENOMEM)
		topo_why(why, "out of memory");
out:
	if (err < 0)
		topo_plan_free(plan);
	hwloc_bitmap_free(tmp);
	hwloc_bitmap_free(allowed);
	return err;
}

void topo_plan_free(struct topo_plan *plan)
{
	free(plan->slots);
	plan->slots = NULL;
	plan->nslots = 0;
}

/*
 * Plain HWLOC_CPUBIND_THREAD: STRICT is refused by some hypervisors and adds nothing for a
 * single PU. The read-back catches a binding that the kernel silently changed (a cpuset
 * cgroup narrowing it, or a PU going offline).
 */
int topo_bind_self(struct topo *t, unsigned pu)
{
	hwloc_bitmap_t want = NULL, got = NULL;
	int err = 0;

	if (!hwloc_topology_is_thissystem(t->h))
		return -ENOSYS;
	if (!hwloc_get_pu_obj_by_os_index(t->h, pu))
		return -ENOENT;
	want = hwloc_bitmap_alloc();
	got = hwloc_bitmap_alloc();
	if (!want || !got) {
		err = -ENOMEM;
		goto out;
	}
	if (hwloc_bitmap_only(want, pu) < 0) {
		err = -ENOMEM;
		goto out;
	}
	if (hwloc_set_cpubind(t->h, want, HWLOC_CPUBIND_THREAD) < 0) {
		err = topo_neg_errno(EINVAL);
		goto out;
	}
	if (hwloc_get_cpubind(t->h, got, HWLOC_CPUBIND_THREAD) < 0) {
		err = topo_neg_errno(EINVAL);
		goto out;
	}
	if (!hwloc_bitmap_isequal(want, got))
		err = -EXDEV;
out:
	hwloc_bitmap_free(got);
	hwloc_bitmap_free(want);
	return err;
}

int topo_current_cpu(void)
{
	return sched_getcpu();
}
