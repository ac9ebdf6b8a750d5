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
#include "driver/summary.h"
#include "platform/clock.h"
#include "platform/fsinfo.h"
#include "util/cpulist.h"
#include "util/json.h"
#include "util/log.h"
#include "util/size.h"
#include "util/stats.h"
#include "workers/replica.h"

enum check_level { CHECK_OK = 0, CHECK_WARN, CHECK_FAIL };

struct check_finding {
	enum check_level level;
	const char *area;
	char name[32];
	char message[600];
};

#define CHECK_MAX 128

struct check_report {
	struct check_finding f[CHECK_MAX];
	size_t n;
};

static const char *const check_level_names[] = {"ok", "warn", "fail"};

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
	struct options all = *o;
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
	all.cmd = CMD_RUN;
	all.ntests = 1;
	all.tests[0] = "all";
	all.set_count = all.set_chunk = all.set_passes = all.set_file_size = false;
	if (plan_build(&all, &plan, why, sizeof(why)) == 0) {
		/* The replicas that a full run at this scale would create, test 3's included. */
		all.cmd = CMD_PREPARE;
		inventory_needs(&plan, &all, dirfd, res->tplan.nslots, &bytes, &inodes);
	}
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
		check_add(
		    r, CHECK_OK, "replicas", e->name,
		    "%s, generation %llu, created %.0f s ago, %.0f%% in this node's page cache",
		    size_format(e->size, a, sizeof(a)), (unsigned long long)e->generation,
		    now - e->mtime, e->residency >= 0 ? e->residency * 100.0 : 0.0);
	}
	if (!replicas)
		check_add(
		    r, CHECK_OK, "replicas", "none",
		    "no replicas yet: run creates those of 1a, 1b and 2; 'prepare 3' that of 3");
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
static const struct part_def check_probe_parts[] = {
    {"cached", "check", "seqread", "cached reads", {{0}}},
    {"random", "check", "randread", "random 4 KiB reads", {{0}}},
    {"create", "check", "manyfiles", "small-file creates", {{0}}},
};
#define CHECK_PROBE_FILE (64ull << 20)
/* The probe runs this many times; a core's time is its median, so one hiccup is no finding. */
#define CHECK_PROBE_REPEAT 3

static void check_probe(struct check_report *r, const struct options *o, struct topo *topo,
			int dirfd, struct node_result *res)
{
	static const struct part_params params[] = {
	    {0, 0, CHECK_PROBE_FILE, 8}, /* 512 MiB of cached reads per core */
	    {10000, 4096, CHECK_PROBE_FILE, 0},
	    {300, 4096, 0, 0},
	};
	struct options po = *o;
	struct plan plan;
	char a[32], b[32];

	memset(&plan, 0, sizeof(plan));
	plan.ntests = 1;
	plan.tests[0].def = &check_probe_test;
	plan.tests[0].file = CHECK_PROBE_FILE;
	plan.tests[0].nparts = 3;
	snprintf(plan.tests[0].replica, sizeof(plan.tests[0].replica), "stagebench.check.probe.%ld",
		 (long)getpid());
	for (size_t i = 0; i < 3; i++) {
		plan.parts[i].def = &check_probe_parts[i];
		plan.parts[i].p = params[i];
	}
	plan.nparts = 3;
	po.cmd = CMD_RUN;
	po.buffer_offset = res->bufplace.offset; /* the placement reported */
	po.set_start_at = false;
	po.start_in = 0;
	po.repeat = CHECK_PROBE_REPEAT;
	po.verify = po.fsync = po.keep = po.progress = false;
	po.set_interval = false;
	res->seed = 1;

	enum outcome out = run_execute(&po, &plan, topo, dirfd, res);
	replica_remove(dirfd, plan.tests[0].replica);
	if (out != OUTCOME_OK) {
		check_add(r, CHECK_FAIL, "probe", "run", "the probe failed: %s",
			  res->nerrors ? res->errors[0] : outcome_name(out));
		return;
	}
	/* Per part and core, the median over the repetitions; then each core against the median
	 * core. */
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
		const char *what = pr->pp->def->what;
		double rate = pr->node_time_s > 0 ? (double)pr->bytes / pr->node_time_s : 0;
		if (slow[0])
			check_add(r, CHECK_WARN, "probe", pr->pp->def->name,
				  "%s: %s than the node's median core (%.3f s)", what, slow, med);
		else if (strcmp(pr->pp->def->kind, "manyfiles") == 0)
			check_add(
			    r, CHECK_OK, "probe", pr->pp->def->name,
			    "%s: %.0f files/s on %zu cores, every core within 25%% of the median",
			    what, pr->node_time_s > 0 ? (double)pr->files / pr->node_time_s : 0,
			    nthreads);
		else
			check_add(
			    r, CHECK_OK, "probe", pr->pp->def->name,
			    "%s: %s (%s per core) on %zu cores, every core within 25%% of the "
			    "median",
			    what, size_format_rate(rate, a, sizeof(a)),
			    size_format(pr->bytes / (nthreads ? nthreads : 1), b, sizeof(b)),
			    nthreads);
	}
out:
	free(t);
	free(core);
	free(sorted);
}

static void check_print(const struct check_report *r, const struct options *o,
			const struct node_result *res, enum outcome out)
{
	if (o->format == FORMAT_JSON) {
		struct json j;
		json_init(&j, stdout, true);
		json_object_begin(&j);
		json_kv_string(&j, "schema", "stagebench.check/1");
		json_kv_string(&j, "version", STAGEBENCH_VERSION);
		json_kv_string(&j, "node", res->node);
		json_kv_string(&j, "host", res->host);
		json_kv_string(&j, "dir", res->dir);
		json_kv_double(&j, "at", clock_wall());
		json_key(&j, "findings");
		json_array_begin(&j);
		for (size_t i = 0; i < r->n; i++) {
			json_object_begin(&j);
			json_kv_string(&j, "area", r->f[i].area);
			json_kv_string(&j, "check", r->f[i].name);
			json_kv_string(&j, "status", check_level_names[r->f[i].level]);
			json_kv_string(&j, "message", r->f[i].message);
			json_object_end(&j);
		}
		json_array_end(&j);
		json_kv_string(&j, "status", out == OUTCOME_OK ? "ok" : "fail");
		json_kv_int(&j, "exit_code", outcome_exit_code(out));
		json_object_end(&j);
		json_finish(&j);
		return;
	}
	printf("stagebench check of node %s, dir %s\n", res->node, res->dir);
	for (size_t i = 0; i < r->n; i++)
		printf("%-4s  %-8s %-12s %s\n", check_level_names[r->f[i].level], r->f[i].area,
		       r->f[i].name, r->f[i].message);
	printf("%s\n", out == OUTCOME_OK ? "node ok" : "node FAILED the check");
}

enum outcome check_node(const struct options *o, struct topo *topo, int dirfd,
			struct node_result *res)
{
	struct check_report *r = calloc(1, sizeof(*r));
	enum outcome out = OUTCOME_OK;
	char line[256];

	if (!r)
		return OUTCOME_FAILED;
	check_clock(r, res);
	check_cpus(r, topo, res);
	run_buffer_place(o, res);
	summary_buffer_line(&res->bufplace, line, sizeof(line));
	check_add(r, res->bufplace.calibrated || res->bufplace.fixed ? CHECK_OK : CHECK_WARN,
		  "buffer", "placement", "%s", line);
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
	check_print(r, o, res, out);
	free(r);
	return out;
}
