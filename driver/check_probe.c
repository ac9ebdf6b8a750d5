/* SPDX-License-Identifier: MIT */
/*
 * check's probe: cached reads, random reads and small-file creates on every core at once, as a
 * run does them, three times; a core whose median is more than 25% above the node's is named.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/check.h"
#include "driver/inventory.h"
#include "driver/plan.h"
#include "driver/summary.h"
#include "platform/fsinfo.h"
#include "util/size.h"
#include "util/stats.h"
#include "platform/ours.h"
#include "util/names.h"

/* The probe: three short parts on every core at once, as a run would do them. */
static const struct test_def check_probe_test = {
    .name = "check", .title = "node_probe", .has_replica = true};
#define CHECK_PROBE_FILE (64ull << 20)
/* The same parameters at every scale. */
#define CHECK_PROBE_AT(...)                                                                        \
	{                                                                                          \
		{__VA_ARGS__}, {__VA_ARGS__},                                                      \
		{                                                                                  \
			__VA_ARGS__                                                                \
		}                                                                                  \
	}
/* clang-format off */
static const struct part_def check_probe_parts[] = {
    /* 512 MiB of cached reads per core */
    {"cached", "check", "seqread", PLAN_TIER_NONE, "cached reads",
     CHECK_PROBE_AT(0, 0, CHECK_PROBE_FILE, 8)},
    {"random", "check", "randread", PLAN_TIER_NONE, "random 4 KiB reads",
     CHECK_PROBE_AT(10000, 4096, CHECK_PROBE_FILE, 0)},
    {NAMES_PROBE_PART, "check", "manyfiles", PLAN_TIER_NONE, "small-file creates",
     CHECK_PROBE_AT(300, 4096, 0, 0)},
};
/* clang-format on */
#define CHECK_PROBE_NPARTS (sizeof(check_probe_parts) / sizeof(check_probe_parts[0]))
/* The probe runs this many times; a core's time is its median, so one hiccup is no finding. */
#define CHECK_PROBE_REPEAT 3

/* The finding of one probe part: the slow cores, or the node's rate. */
static void check_probe_say(struct findings *r, const struct part_result *pr, const char *slow,
			    double med, size_t nthreads)
{
	const char *what = pr->pp->def->what;
	double rate = pr->node_time_s > 0 ? (double)pr->bytes / pr->node_time_s : 0;
	char a[32], b[32];

	if (slow[0])
		findings_add(r, FINDING_WARN, "probe", pr->pp->def->name,
			     "%s: %s than the node's median core (%.3f s)", what, slow, med);
	else if (pr->pp->ops->caps & BENCH_WRITES_FILES)
		findings_add(r, FINDING_OK, "probe", pr->pp->def->name,
			     "%s: %.0f files/s on %zu cores, every core within 25%% of the median",
			     what, pr->node_time_s > 0 ? (double)pr->files / pr->node_time_s : 0,
			     nthreads);
	else
		findings_add(
		    r, FINDING_OK, "probe", pr->pp->def->name,
		    "%s: %s (%s per core) on %zu cores, every core within 25%% of the median", what,
		    size_format_rate(rate, a, sizeof(a)),
		    size_format(pr->bytes / (nthreads ? nthreads : 1), b, sizeof(b)), nthreads);
}

/* The probe's plan, its replica named for this process. 0, or -EINVAL with why. */
static int check_probe_plan(const struct options *o, struct plan *plan, char *why, size_t whylen)
{
	char replica[64], token[FS_TOKEN_LEN + 1];

	fs_token(token, sizeof(token));
	names_probe(replica, sizeof(replica), (long)getpid(), token);
	if (plan_build_test(&check_probe_test, check_probe_parts, CHECK_PROBE_NPARTS, o->scale,
			    replica, plan, why, whylen) != 0)
		return -EINVAL;
	plan->run.repeat = CHECK_PROBE_REPEAT;
	return 0;
}

bool check_probe_room(const struct options *o, int dirfd, const struct node_result *res,
		      uint64_t *bytes, uint64_t *inodes)
{
	struct plan plan;
	char why[256];

	*bytes = *inodes = 0;
	if (check_probe_plan(o, &plan, why, sizeof(why)) != 0)
		return true; /* check_probe says why */
	inventory_needs(&plan, dirfd, res->tplan.nslots, bytes, inodes);
	return !res->fs_ok || (*bytes <= res->fs.bytes_free &&
			       (!res->fs.inodes_total || *inodes <= res->fs.inodes_free));
}

void check_probe(struct findings *r, const struct options *o, struct topo *topo, int dirfd,
		 struct node_result *res)
{
	const struct run_env env = {.topo = topo, .dirfd = dirfd, .progress = false};
	struct plan plan;
	char why[256];

	if (check_probe_plan(o, &plan, why, sizeof(why)) != 0) {
		findings_add(r, FINDING_FAIL, "probe", "plan", "the probe cannot be planned: %s",
			     why);
		return;
	}
	plan.run.xfer = o->xfer;
	plan.run.buffer_offset = res->bufplace.offset; /* the placement reported */
	plan.run.seed = 1;

	enum outcome out = run_execute(&plan, &env, res);
	ours_remove(dirfd, plan.tests[0].replica);
	if (out != OUTCOME_OK) {
		findings_add(r, FINDING_FAIL, "probe", "run", "the probe failed: %s",
			     res->nerrors ? res->errors[0] : outcome_name(out));
		return;
	}
	/* Per part and core, the median over the repetitions; then each core against the median. */
	size_t nthreads = res->tplan.nslots, nparts = plan.nparts;
	if (res->nparts != nparts * CHECK_PROBE_REPEAT) {
		findings_add(r, FINDING_FAIL, "probe", "run", "the probe ran %zu of its %zu parts",
			     res->nparts, nparts * CHECK_PROBE_REPEAT);
		return;
	}
	double *t = calloc(nthreads * CHECK_PROBE_REPEAT, sizeof(*t));
	double *core = calloc(nthreads, sizeof(*core)), *sorted = calloc(nthreads, sizeof(*sorted));
	if (!t || !core || !sorted)
		goto out;
	for (size_t k = 0; k < nparts; k++) {
		const struct part_result *pr = &res->parts[k];
		struct stats_summary sum;
		char slow[400] = "";

		for (size_t th = 0; th < nthreads; th++) {
			for (size_t rep = 0; rep < CHECK_PROBE_REPEAT; rep++) {
				const struct part_result *q = &res->parts[rep * nparts + k];
				t[rep] = q->threads ? q->threads[th].time_s : 0;
			}
			stats_summarize(t, CHECK_PROBE_REPEAT, &sum);
			core[th] = sorted[th] = sum.median;
		}
		stats_summarize(sorted, nthreads, &sum);
		double med = sum.median;
		for (size_t th = 0; th < nthreads; th++) {
			if (med > 0 && core[th] > med * (1.0 + SUMMARY_OUTLIER)) {
				size_t len = strlen(slow);
				snprintf(slow + len, sizeof(slow) - len, "%sCPU %u %.0f%% slower",
					 len ? ", " : "", res->tplan.slots[th].pu,
					 (core[th] / med - 1.0) * 100.0);
			}
		}
		check_probe_say(r, pr, slow, med, nthreads);
	}
out:
	free(t);
	free(core);
	free(sorted);
}
