/* SPDX-License-Identifier: MIT */
/*
 * The node health check. Each finding is one line: ok, warn or fail, an area, a name and
 * what was found. Only what would break or falsify a run is a failure; what a person should
 * look at (an unsynchronized clock, a slow core) is a warning.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/check.h"
#include "driver/inventory.h"
#include "driver/plan.h"
#include "driver/run.h"
#include "driver/summary.h"
#include "driver/views.h"
#include "platform/clock.h"
#include "platform/fsinfo.h"
#include "util/cpulist.h"
#include "util/log.h"
#include "util/size.h"
#include "util/stats.h"
#include "workers/replica.h"

const char *check_level_name(enum check_level level)
{
	static const char *const names[] = {"ok", "warn", "fail"};

	return names[level];
}

static void check_add(struct check_report *r, enum check_level level, const char *area,
		      const char *name, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void check_add(struct check_report *r, enum check_level level, const char *area,
		      const char *name, const char *fmt, ...)
{
	va_list ap;

	if (r->n >= CHECK_MAX)
		return;
	struct check_finding *f = &r->f[r->n++];
	f->level = level;
	f->area = area;
	snprintf(f->name, sizeof(f->name), "%s", name);
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
}

static void check_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static void check_clock(struct check_report *r, const struct node_result *res)
{
	char avail[256];

	if (!res->ntp_ok)
		check_add(r, CHECK_WARN, "clock", "ntp", "ntp_adjtime failed: NTP state unknown");
	else if (res->ntp.synchronized)
		check_add(r, CHECK_OK, "clock", "ntp",
			  "synchronized (estimated error %ld us, maximum error %ld us)",
			  res->ntp.esterror_us, res->ntp.maxerror_us);
	else
		check_add(
		    r, CHECK_WARN, "clock", "ntp",
		    "NOT synchronized (maximum error %ld us): start instants across nodes may "
		    "disagree; the spec requires NTP on every node",
		    res->ntp.maxerror_us);
	check_read_line("/sys/devices/system/clocksource/clocksource0/available_clocksource", avail,
			sizeof(avail));
	if (strcmp(res->ntp.clocksource, "tsc") == 0)
		check_add(r, CHECK_OK, "clock", "clocksource", "tsc");
	else
		check_add(r, CHECK_WARN, "clocksource", "clocksource",
			  "%s, not tsc (available: %s): clock reads may be slow or coarse, often "
			  "because the kernel found the TSC unstable",
			  res->ntp.clocksource[0] ? res->ntp.clocksource : "unknown",
			  avail[0] ? avail : "unknown");
}

static void check_cpus(struct check_report *r, struct topo *topo, const struct node_result *res)
{
	const struct topo_plan *tp = &res->tplan;
	unsigned allowed[OPTIONS_MAX_CPUS];
	char list[256], gov[64], first[64] = "", odd[256] = "";
	int n = topo_allowed(topo, allowed, OPTIONS_MAX_CPUS);
	bool readable = false;
	unsigned smt = 1;

	cpulist_format(allowed, n > 0 ? (size_t)n : 0, list, sizeof(list));
	check_add(r, CHECK_OK, "cpu", "binding",
		  "%zu cores allowed (CPUs %s, %zu of the machine's %zu PUs)%s", tp->allowed_cores,
		  list, tp->allowed_pus, tp->machine_pus,
		  tp->restricted ? "; restricted by the launcher (taskset, Slurm or a cgroup)"
				 : "");
	for (size_t i = 0; i < tp->nslots; i++)
		smt = tp->slots[i].smt > smt ? tp->slots[i].smt : smt;
	if (smt > 1)
		check_add(r, CHECK_OK, "cpu", "smt",
			  "cores have up to %u allowed PUs (SMT siblings); one thread per core, on "
			  "its first allowed PU",
			  smt);
	else
		check_add(r, CHECK_OK, "cpu", "smt", "one allowed PU per core (no SMT siblings)");

	for (int i = 0; i < n; i++) {
		char path[128];
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%u/cpufreq/scaling_governor", allowed[i]);
		check_read_line(path, gov, sizeof(gov));
		if (!gov[0])
			continue;
		if (!readable)
			snprintf(first, sizeof(first), "%s", gov);
		readable = true;
		if (strcmp(gov, first) != 0 || strcmp(gov, "performance") != 0) {
			size_t len = strlen(odd);
			snprintf(odd + len, sizeof(odd) - len, "%sCPU %u %s", len ? ", " : "",
				 allowed[i], gov);
		}
	}
	if (!readable)
		check_add(r, CHECK_OK, "cpu", "governor",
			  "not exposed (no cpufreq in sysfs: a virtual machine or a fixed clock)");
	else if (!odd[0])
		check_add(r, CHECK_OK, "cpu", "governor", "performance on every allowed CPU");
	else
		check_add(r, CHECK_WARN, "cpu", "governor",
			  "not performance: %s; the clock of a core may drop during a run", odd);
}

static void check_fs(struct check_report *r, const struct options *o, int dirfd,
		     const struct node_result *res)
{
	char a[32], b[32], name[64];
	struct plan plan;
	char why[256];
	uint64_t bytes = 0, inodes = 0;

	if (!res->fs_ok) {
		check_add(r, CHECK_FAIL, "fs", "type", "cannot tell the filesystem of %s",
			  res->dir);
		return;
	}
	check_add(r, CHECK_OK, "fs", "type", "%s on %s, mounted on %s (%s)", res->fs.type,
		  res->fs.source, res->fs.mountpoint, res->fs.options);
	/* The replicas that a full run at this scale would create, test 3's included. */
	if (plan_build_full((enum scale)o->scale, &plan, why, sizeof(why)) == 0)
		inventory_needs(&plan, dirfd, res->tplan.nslots, &bytes, &inodes);
	enum check_level level = res->fs.bytes_free < bytes ? CHECK_FAIL : CHECK_OK;
	check_add(r, level, "fs", "space", "%s free; a full run at %s scale still needs %s",
		  size_format(res->fs.bytes_free, a, sizeof(a)),
		  options_scale_name((enum scale)o->scale), size_format(bytes, b, sizeof(b)));
	if (!res->fs.inodes_total)
		check_add(r, CHECK_OK, "fs", "inodes", "not counted by this filesystem");
	else
		check_add(r, res->fs.inodes_free < inodes ? CHECK_FAIL : CHECK_OK, "fs", "inodes",
			  "%llu free; a full run needs %llu",
			  (unsigned long long)res->fs.inodes_free, (unsigned long long)inodes);

	/* Writable, for real: create, write, flush and remove one file. */
	snprintf(name, sizeof(name), "stagebench.check-write.%ld", (long)getpid());
	int fd = fs_create(dirfd, name, O_WRONLY);
	if (fd < 0) {
		check_add(r, CHECK_FAIL, "fs", "writable", "cannot create a file in %s: %s",
			  res->dir, strerror(-fd));
		return;
	}
	char block[4096];
	memset(block, 0x5a, sizeof(block));
	int err = 0;
	if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block))
		err = errno ? errno : EIO;
	else if (fsync(fd) != 0)
		err = errno;
	close(fd);
	unlinkat(dirfd, name, 0);
	if (err)
		check_add(r, CHECK_FAIL, "fs", "writable", "writing a file in %s failed: %s",
			  res->dir, strerror(err));
	else
		check_add(r, CHECK_OK, "fs", "writable",
			  "a file was created, written, flushed and removed");
}

static bool check_created_by_run(const struct test_def *t)
{
	return t->has_replica && !t->needs_prepare;
}

static bool check_needs_prepare(const struct test_def *t)
{
	return t->needs_prepare;
}

static void check_replicas(struct check_report *r, int dirfd, const struct node_result *res)
{
	struct inventory_entry *v;
	size_t n, temps = 0, files = 0, replicas = 0;
	char a[32];
	double now = clock_wall();

	if (inventory_scan(dirfd, res->dir, &v, &n) != 0) {
		check_add(r, CHECK_WARN, "replicas", "scan", "cannot list %s", res->dir);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct inventory_entry *e = &v[i];
		if (e->kind == INV_TEMP) {
			temps++;
			continue;
		}
		if (e->kind == INV_FILE) {
			files++;
			continue;
		}
		replicas++;
		if (!e->ours) {
			check_add(r, CHECK_WARN, "replicas", e->name,
				  "%s, not a valid stagebench replica (damaged or foreign): a run "
				  "refuses it; remove it by hand",
				  size_format(e->size, a, sizeof(a)));
			continue;
		}
		char cached[64] = "this node's page cache unknown"; /* never 0% when unknown */
		if (e->residency >= 0)
			snprintf(cached, sizeof(cached), "%.0f%% in this node's page cache",
				 e->residency * 100.0);
		check_add(r, CHECK_OK, "replicas", e->name,
			  "%s, generation %llu, created %.0f s ago, %s",
			  size_format(e->size, a, sizeof(a)), (unsigned long long)e->generation,
			  now - e->mtime, cached);
	}
	if (!replicas) {
		char by_run[64], by_prepare[64];
		plan_join_tests(check_created_by_run, by_run, sizeof(by_run));
		plan_join_tests(check_needs_prepare, by_prepare, sizeof(by_prepare));
		check_add(r, CHECK_OK, "replicas", "none",
			  "no replicas yet: run creates those of %s; 'prepare %s' that of %s",
			  by_run, by_prepare, by_prepare);
	}
	if (temps || files)
		check_add(
		    r, CHECK_WARN, "replicas", "leftovers",
		    "%zu half-written replica%s and %zu other stagebench file%s (test 4's, kept "
		    "or left by an interrupted run; 'stagebench clean all' removes them)",
		    temps, temps == 1 ? "" : "s", files, files == 1 ? "" : "s");
	free(v);
}

/* The probe: three short parts on every core at once, as a run would do them. */
static const struct test_def check_probe_test = {"check", "node_probe", true, false, false, false};
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
    {"cached", "check", "seqread", "cached reads", CHECK_PROBE_AT(0, 0, CHECK_PROBE_FILE, 8)},
    {"random", "check", "randread", "random 4 KiB reads",
     CHECK_PROBE_AT(10000, 4096, CHECK_PROBE_FILE, 0)},
    {"create", "check", "manyfiles", "small-file creates", CHECK_PROBE_AT(300, 4096, 0, 0)},
};
/* clang-format on */
#define CHECK_PROBE_NPARTS (sizeof(check_probe_parts) / sizeof(check_probe_parts[0]))
/* The probe runs this many times; a core's time is its median, so one hiccup is no finding. */
#define CHECK_PROBE_REPEAT 3

/* The finding of one probe part: the slow cores, or the node's rate. */
static void check_probe_say(struct check_report *r, const struct part_result *pr, const char *slow,
			    double med, size_t nthreads)
{
	const char *what = pr->pp->def->what;
	double rate = pr->node_time_s > 0 ? (double)pr->bytes / pr->node_time_s : 0;
	char a[32], b[32];

	if (slow[0])
		check_add(r, CHECK_WARN, "probe", pr->pp->def->name,
			  "%s: %s than the node's median core (%.3f s)", what, slow, med);
	else if (pr->pp->ops->caps & BENCH_WRITES_FILES)
		check_add(r, CHECK_OK, "probe", pr->pp->def->name,
			  "%s: %.0f files/s on %zu cores, every core within 25%% of the median",
			  what, pr->node_time_s > 0 ? (double)pr->files / pr->node_time_s : 0,
			  nthreads);
	else
		check_add(r, CHECK_OK, "probe", pr->pp->def->name,
			  "%s: %s (%s per core) on %zu cores, every core within 25%% of the median",
			  what, size_format_rate(rate, a, sizeof(a)),
			  size_format(pr->bytes / (nthreads ? nthreads : 1), b, sizeof(b)),
			  nthreads);
}

static void check_probe(struct check_report *r, const struct options *o, struct topo *topo,
			int dirfd, struct node_result *res)
{
	const struct run_env env = {.topo = topo, .dirfd = dirfd, .progress = false};
	struct plan plan;
	char replica[64], why[256];

	snprintf(replica, sizeof(replica), "stagebench.check.probe.%ld", (long)getpid());
	if (plan_build_test(&check_probe_test, check_probe_parts, CHECK_PROBE_NPARTS,
			    (enum scale)o->scale, replica, &plan, why, sizeof(why)) != 0) {
		check_add(r, CHECK_FAIL, "probe", "plan", "the probe cannot be planned: %s", why);
		return;
	}
	plan.run.repeat = CHECK_PROBE_REPEAT;
	plan.run.xfer = o->xfer;
	plan.run.buffer_offset = res->bufplace.offset; /* the placement reported */
	plan.run.seed = 1;

	enum outcome out = run_execute(&plan, &env, res);
	replica_remove(dirfd, plan.tests[0].replica);
	if (out != OUTCOME_OK) {
		check_add(r, CHECK_FAIL, "probe", "run", "the probe failed: %s",
			  res->nerrors ? res->errors[0] : outcome_name(out));
		return;
	}
	/* Per part and core, the median over the repetitions; then each core against the median. */
	size_t nthreads = res->tplan.nslots, nparts = plan.nparts;
	if (res->nparts != nparts * CHECK_PROBE_REPEAT) {
		check_add(r, CHECK_FAIL, "probe", "run", "the probe ran %zu of its %zu parts",
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

/* Where the I/O buffer sits, and whether the calibration could choose it. */
static void check_buffer(struct check_report *r, const struct options *o, struct node_result *res)
{
	char line[256];

	run_buffer_place(o->buffer_offset, o->xfer, res);
	summary_buffer_line(&res->bufplace, line, sizeof(line));
	check_add(r, res->bufplace.calibrated || res->bufplace.fixed ? CHECK_OK : CHECK_WARN,
		  "buffer", "placement", "%s", line);
}

enum outcome check_node(const struct options *o, struct topo *topo, int dirfd,
			struct node_result *res)
{
	struct check_report *r = calloc(1, sizeof(*r));
	enum outcome out = OUTCOME_OK;

	if (!r)
		return OUTCOME_FAILED;
	check_clock(r, res);
	check_cpus(r, topo, res);
	check_buffer(r, o, res);
	check_fs(r, o, dirfd, res);
	check_replicas(r, dirfd, res);
	bool can_write = true;
	for (size_t i = 0; i < r->n; i++) {
		if (r->f[i].level == CHECK_FAIL && strcmp(r->f[i].area, "fs") == 0)
			can_write = false;
	}
	if (can_write)
		check_probe(r, o, topo, dirfd, res);
	else
		check_add(r, CHECK_FAIL, "probe", "run",
			  "skipped: the directory cannot be written");
	for (size_t i = 0; i < r->n; i++) {
		if (r->f[i].level == CHECK_FAIL)
			out = OUTCOME_FAILED;
	}
	views_check(r, (enum format)o->format, res, out, stdout);
	free(r);
	return out;
}
