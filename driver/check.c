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
#include "driver/stop.h"
#include "driver/views.h"
#include "platform/bounded.h"
#include "platform/clock.h"
#include "platform/cpuload.h"
#include "platform/fsinfo.h"
#include "util/cpulist.h"
#include "platform/ours.h"
#include "util/log.h"
#include "util/names.h"
#include "util/size.h"
#include "util/stats.h"

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

static void check_clock(struct findings *r, const struct node_result *res)
{
	char avail[256];

	if (!res->ntp_ok)
		findings_add(r, FINDING_WARN, "clock", "ntp",
			     "ntp_adjtime failed: NTP state unknown");
	else if (res->ntp.synchronized)
		findings_add(r, FINDING_OK, "clock", "ntp",
			     "synchronized (estimated error %ld us, maximum error %ld us)",
			     res->ntp.esterror_us, res->ntp.maxerror_us);
	else
		findings_add(
		    r, FINDING_WARN, "clock", "ntp",
		    "NOT synchronized (maximum error %ld us): start instants across nodes may "
		    "disagree; the spec requires NTP on every node",
		    res->ntp.maxerror_us);
	check_read_line("/sys/devices/system/clocksource/clocksource0/available_clocksource", avail,
			sizeof(avail));
	if (strcmp(res->ntp.clocksource, "tsc") == 0)
		findings_add(r, FINDING_OK, "clock", "clocksource", "tsc");
	else
		findings_add(
		    r, FINDING_WARN, "clock", "clocksource",
		    "%s, not tsc (available: %s): clock reads may be slow or coarse, often "
		    "because the kernel found the TSC unstable",
		    res->ntp.clocksource[0] ? res->ntp.clocksource : "unknown",
		    avail[0] ? avail : "unknown");
}

static void check_cpus(struct findings *r, struct topo *topo, const struct node_result *res)
{
	const struct topo_plan *tp = &res->tplan;
	unsigned allowed[OPTIONS_MAX_CPUS];
	char list[256], gov[64], first[64] = "", odd[256] = "";
	int n = topo_allowed(topo, allowed, OPTIONS_MAX_CPUS);
	bool readable = false;
	unsigned smt = 1;

	cpulist_format(allowed, n > 0 ? (size_t)n : 0, list, sizeof(list));
	findings_add(r, FINDING_OK, "cpu", "binding",
		     "%zu cores allowed (CPUs %s, %zu of the machine's %zu PUs)%s",
		     tp->allowed_cores, list, tp->allowed_pus, tp->machine_pus,
		     tp->restricted ? "; restricted by the launcher (taskset, Slurm or a cgroup)"
				    : "");
	for (size_t i = 0; i < tp->nslots; i++)
		smt = tp->slots[i].smt > smt ? tp->slots[i].smt : smt;
	if (smt > 1)
		findings_add(
		    r, FINDING_OK, "cpu", "smt",
		    "cores have up to %u allowed PUs (SMT siblings); one thread per core, on "
		    "its first allowed PU",
		    smt);
	else
		findings_add(r, FINDING_OK, "cpu", "smt",
			     "one allowed PU per core (no SMT siblings)");

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
		findings_add(
		    r, FINDING_OK, "cpu", "governor",
		    "not exposed (no cpufreq in sysfs: a virtual machine or a fixed clock)");
	else if (!odd[0])
		findings_add(r, FINDING_OK, "cpu", "governor", "performance on every allowed CPU");
	else
		findings_add(r, FINDING_WARN, "cpu", "governor",
			     "not performance: %s; the clock of a core may drop during a run", odd);
}

/* Where the I/O buffer sits, and whether the calibration could choose it. */
static void check_buffer(struct findings *r, const struct options *o, struct node_result *res)
{
	char line[256];

	run_buffer_place(o->buffer_offset, o->xfer, res);
	summary_buffer_line(&res->bufplace, line, sizeof(line));
	findings_add(r, res->bufplace.calibrated || res->bufplace.fixed ? FINDING_OK : FINDING_WARN,
		     "buffer", "placement", "%s", line);
}

static void check_fs(struct findings *r, const struct options *o, int dirfd,
		     const struct node_result *res)
{
	char a[32], b[32], name[64];
	struct plan plan;
	char why[256];
	uint64_t bytes = 0, inodes = 0;

	if (!res->fs_ok) {
		findings_add(r, FINDING_FAIL, "fs", "type", "cannot tell the filesystem of %s",
			     res->dir);
		return;
	}
	findings_add(r, FINDING_OK, "fs", "type", "%s on %s, mounted on %s (%s)", res->fs.type,
		     res->fs.source, res->fs.mountpoint, res->fs.options);
	/* The replicas that a full run at this scale would create, test 3's included. */
	if (plan_build_full(o->scale, &plan, why, sizeof(why)) == 0)
		inventory_needs(&plan, dirfd, res->tplan.nslots, &bytes, &inodes);
	enum finding_level level = res->fs.bytes_free < bytes ? FINDING_FAIL : FINDING_OK;
	findings_add(r, level, "fs", "space", "%s free; a full run at %s scale still needs %s",
		     size_format(res->fs.bytes_free, a, sizeof(a)), enums_scale_name(o->scale),
		     size_format(bytes, b, sizeof(b)));
	if (!res->fs.inodes_total)
		findings_add(r, FINDING_OK, "fs", "inodes", "not counted by this filesystem");
	else
		findings_add(r, res->fs.inodes_free < inodes ? FINDING_FAIL : FINDING_OK, "fs",
			     "inodes", "%llu free; a full run needs %llu",
			     (unsigned long long)res->fs.inodes_free, (unsigned long long)inodes);

	/* Writable, for real: create, write, flush and remove one file. */
	char token[FS_TOKEN_LEN + 1];
	fs_token(token, sizeof(token));
	names_write_probe(name, sizeof(name), (long)getpid(), token);
	int fd = fs_create(dirfd, name, O_WRONLY);
	if (fd < 0) {
		findings_add(r, FINDING_FAIL, "fs", "writable", "cannot create a file in %s: %s",
			     res->dir, strerror(-fd));
		return;
	}
	char block[4096];
	memset(block, OURS_WRITE_BYTE, sizeof(block));
	int err = 0;
	if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block))
		err = errno ? errno : EIO;
	else if (fsync(fd) != 0)
		err = errno;
	close(fd);
	unlinkat(dirfd, name, 0);
	if (err)
		findings_add(r, FINDING_FAIL, "fs", "writable", "writing a file in %s failed: %s",
			     res->dir, strerror(err));
	else
		findings_add(r, FINDING_OK, "fs", "writable",
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

static void check_replicas(struct findings *r, int dirfd, const struct node_result *res)
{
	struct inventory *inv = malloc(sizeof(*inv));
	char a[32], line[512];
	double now = clock_wall();

	if (!inv || inventory_take(dirfd, true, inv) != 0) {
		findings_add(r, FINDING_WARN, "replicas", "scan", "cannot list %s", res->dir);
		free(inv);
		return;
	}
	for (size_t i = 0; i < inv->nreplicas; i++) {
		const struct inventory_entry *e = &inv->replicas[i];
		if (!e->ours) {
			findings_add(
			    r, FINDING_WARN, "replicas", e->name,
			    "%s, not a valid stagebench replica (damaged or foreign): a run "
			    "refuses it; remove it by hand",
			    size_format(e->size, a, sizeof(a)));
			continue;
		}
		char cached[64] = "this node's page cache unknown"; /* never 0% when unknown */
		if (e->residency >= 0)
			snprintf(cached, sizeof(cached), "%.0f%% in this node's page cache",
				 e->residency * 100.0);
		findings_add(r, FINDING_OK, "replicas", e->name,
			     "%s, generation %llu, created %.0f s ago, %s",
			     size_format(e->size, a, sizeof(a)), (unsigned long long)e->generation,
			     now - e->mtime, cached);
	}
	if (inv->replicas_not_listed)
		findings_add(r, FINDING_WARN, "replicas", "more",
			     "%llu more files named like replicas, not checked one by one",
			     (unsigned long long)inv->replicas_not_listed);
	if (!inv->nreplicas) {
		char by_run[64], by_prepare[64];
		plan_join_tests(check_created_by_run, by_run, sizeof(by_run));
		plan_join_tests(check_needs_prepare, by_prepare, sizeof(by_prepare));
		findings_add(r, FINDING_OK, "replicas", "none",
			     "no replicas yet: run creates those of %s; 'prepare %s' that of %s",
			     by_run, by_prepare, by_prepare);
	}
	inventory_leftovers_line(inv, res->dir, now, line, sizeof(line));
	if (line[0])
		findings_add(r, FINDING_WARN, "replicas", "leftovers", "%s", line);
	free(inv);
}

/* How long a stopped check waits for its child to remove its probe files. */
#define CHECK_GRACE_S 2.0

/* The stage of the child once only the probe is left. */
#define CHECK_STAGE_PROBE "running the probe in it"

/* How often the CPUs' load is sampled beside the probe. */
#define CHECK_SAMPLE_S 0.2

/* What the child that works on the directory tells check_node, one record at a time. */
enum check_msg_kind {
	CHECK_MSG_DIR,	   /* the directory opened (text: its real path) or not (out, text: why) */
	CHECK_MSG_STAGE,   /* text: what the child starts doing now */
	CHECK_MSG_FINDING, /* f: one finding */
};

struct check_msg {
	enum check_msg_kind kind;
	enum outcome out;
	char text[BENCH_PATH_MAX + 512];
	struct finding f;
};

struct check_child_ctx {
	const struct options *o;
	struct topo *topo;
	struct node_result *res;
	const struct inventory_dir_hooks *dir;
	int deadline_s;			/* of the directory's part */
	struct findings *parent_report; /* the parent's: freed in the child at its end */
	int fd;				/* the pipe to the parent */
	size_t sent;			/* findings of r already sent */
	struct findings r;
};

/* Send what was found since the last call, then say what comes next (NULL: nothing). */
static int check_child_say(struct check_child_ctx *c, const char *next)
{
	static struct check_msg m;
	int rc = 0;

	for (; !rc && c->sent < c->r.n; c->sent++) {
		memset(&m, 0, sizeof(m));
		m.kind = CHECK_MSG_FINDING;
		m.f = c->r.f[c->sent];
		rc = bounded_send(c->fd, &m, sizeof(m));
	}
	if (rc || !next)
		return rc;
	memset(&m, 0, sizeof(m));
	m.kind = CHECK_MSG_STAGE;
	snprintf(m.text, sizeof(m.text), "%s", next);
	return bounded_send(c->fd, &m, sizeof(m));
}

/* The child's work: everything that touches the directory, which may never answer. */
static int check_child_work(struct check_child_ctx *c, int fd)
{
	static struct check_msg m;
	int dirfd = -1;

	c->fd = fd;
	if (check_child_say(c, "opening it"))
		return 1;
	memset(&m, 0, sizeof(m));
	m.kind = CHECK_MSG_DIR;
	m.out = c->dir->open(c->dir->ctx, &dirfd, m.text, sizeof(m.text));
	if (m.out == OUTCOME_OK)
		snprintf(m.text, sizeof(m.text), "%s", c->res->dir);
	if (bounded_send(fd, &m, sizeof(m)) || m.out != OUTCOME_OK)
		return 1;
	check_child_say(c, "reading its space and creating a file in it");
	check_fs(&c->r, c->o, dirfd, c->res);
	check_child_say(c, "listing it");
	check_replicas(&c->r, dirfd, c->res);
	/* The probe runs where it can write and has room (a spec-scale run may have none). */
	const struct finding *unusable = NULL;
	for (size_t i = 0; i < c->r.n && !unusable; i++) {
		const struct finding *f = &c->r.f[i];
		if (f->level == FINDING_FAIL && strcmp(f->area, "fs") == 0 &&
		    strcmp(f->name, "space") != 0 && strcmp(f->name, "inodes") != 0)
			unusable = f;
	}
	uint64_t bytes, inodes;
	char a[32], b[32];
	if (unusable)
		findings_add(&c->r, FINDING_FAIL, "probe", "run", "skipped: see fs %s",
			     unusable->name);
	else if (!check_probe_room(c->o, dirfd, c->res, &bytes, &inodes))
		findings_add(&c->r, FINDING_FAIL, "probe", "run",
			     "skipped: no room for it (see fs space): it needs %s and %llu "
			     "inodes, %s and %llu inodes are free",
			     size_format(bytes, a, sizeof(a)), (unsigned long long)inodes,
			     size_format(c->res->fs.bytes_free, b, sizeof(b)),
			     (unsigned long long)c->res->fs.inodes_free);
	else if (check_child_say(c, CHECK_STAGE_PROBE) == 0)
		check_probe(&c->r, c->o, c->topo, dirfd, c->res);
	return check_child_say(c, NULL);
}

/* An interval of samples of the CPUs beside the probe's nthreads threads begins. */
static void check_load_begin(struct cpuload *load, size_t nthreads)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	/* runnable of ours: the probe's threads, and this process while it reads */
	cpuload_begin(load, cpus > 0 ? (unsigned)cpus : 1, (unsigned)nthreads + 1,
		      (unsigned)nthreads);
}

static void check_sample(struct cpuload *load, pid_t probe)
{
	struct cpuload_sample s;

	if (cpuload_read(probe, &s) == 0)
		cpuload_add(load, &s);
}

/*
 * The CPUs' availability beside the probe, as a finding; a probe past the deadline is said to
 * be slow because of the CPU when the CPU was busy, because of the directory when it was not.
 */
static void check_load_say(struct findings *r, const struct cpuload *load, bool probe_late,
			   const struct check_child_ctx *c)
{
	char line[400];
	bool busy = cpuload_busy(load);

	if (!load->nsamples) {
		findings_add(r, FINDING_WARN, "cpu", "available", "cannot be read from /proc");
		busy = false;
	} else {
		cpuload_line(load, "the probe's", line, sizeof(line));
		findings_add(r,
			     busy && probe_late ? FINDING_FAIL
			     : busy		? FINDING_WARN
						: FINDING_OK,
			     "cpu", "available", "%s beside the probe: %s%s",
			     busy ? "busy" : "free", line,
			     busy && !probe_late ? "; the probe's figures measure the CPU as much "
						   "as the directory"
						 : "");
	}
	if (probe_late && busy)
		findings_add(r, FINDING_FAIL, "probe", "run",
			     "not finished after %d s: the CPU is busy (see cpu available), so "
			     "the probe could not have its cores; %s was not judged: check again "
			     "when the node is idle",
			     c->deadline_s, c->res->dir);
	else if (probe_late) /* slow or stuck: either way the directory cannot hold a run */
		findings_add(r, FINDING_FAIL, "probe", "run",
			     "not finished after %d s: %s answers too slowly, or stopped "
			     "answering, while the probe read and wrote in it (the CPU was free: "
			     "see cpu available)",
			     c->deadline_s, c->res->dir);
}

/* The child: its work, then what it inherited freed, as the command frees it. */
static int check_child(void *arg, int fd)
{
	struct check_child_ctx *c = arg;
	int rc = check_child_work(c, fd);

	c->dir->release(c->dir->ctx);
	free(c->parent_report);
	free(c);
	return rc;
}

/*
 * The directory's part of the check, from the child, within c->deadline_s: its findings
 * into r; OUTCOME_OK, the child's outcome when the directory cannot be used (said in why),
 * or an interruption.
 */
static enum outcome check_dir(struct check_child_ctx *c, struct findings *r, char *why,
			      size_t whylen)
{
	static struct check_msg m;
	struct bounded b;
	struct cpuload load;
	char stage[128] = "starting";
	enum outcome out = OUTCOME_OK;
	bool opened = false, sampling = false, sampled = false;
	int rc = bounded_start(&b, c->deadline_s, check_child, c);

	if (rc) {
		findings_add(r, FINDING_FAIL, "fs", "check", "cannot start the check: %s",
			     strerror(-rc));
		return OUTCOME_OK;
	}
	while ((rc = bounded_read_tick(&b, &m, sizeof(m), &stop_signal,
				       sampling ? CHECK_SAMPLE_S : 0)) == 1 ||
	       rc == -EAGAIN) {
		/* beside the probe: how available the CPUs are to it */
		if (rc == -EAGAIN || (sampling && m.kind == CHECK_MSG_FINDING))
			check_sample(&load, b.pid);
		if (sampling && rc == 1 && m.kind == CHECK_MSG_FINDING)
			sampling = false; /* the probe is over: its findings come */
		if (rc == -EAGAIN)
			continue;
		if (m.kind == CHECK_MSG_STAGE && strcmp(m.text, CHECK_STAGE_PROBE) == 0) {
			check_load_begin(&load, c->res->tplan.nslots);
			check_sample(&load, b.pid);
			sampling = sampled = true;
		}
		if (m.kind == CHECK_MSG_STAGE)
			snprintf(stage, sizeof(stage), "%s", m.text);
		else if (m.kind == CHECK_MSG_FINDING && r->n < FINDINGS_MAX)
			r->f[r->n++] = m.f;
		else if (m.kind == CHECK_MSG_DIR && m.out != OUTCOME_OK) {
			snprintf(why, whylen, "%s", m.text);
			out = m.out;
		} else if (m.kind == CHECK_MSG_DIR) {
			snprintf(c->res->dir, sizeof(c->res->dir), "%s", m.text);
			opened = true;
		}
	}
	if (rc == -EINTR) {
		/* The child stops too, removing what it made, unless the directory hangs. */
		bounded_signal(&b, stop_signal, CHECK_GRACE_S);
		while (bounded_read(&b, &m, sizeof(m), NULL) == 1)
			;
		bounded_end(&b);
		return stop_signal == SIGTERM ? OUTCOME_INTERRUPTED_TERM : OUTCOME_INTERRUPTED_INT;
	}
	if (rc == -ETIMEDOUT) {
		/* Past the deadline: the child is asked to stop and clean up, then killed. */
		if (sampling)
			check_sample(&load, b.pid);
		bounded_signal(&b, SIGTERM, CHECK_GRACE_S);
		while (bounded_read(&b, &m, sizeof(m), &stop_signal) == 1)
			;
	}
	int status = bounded_end(&b);
	bool probe_late = rc == -ETIMEDOUT && strcmp(stage, CHECK_STAGE_PROBE) == 0;
	/* A probe past the deadline is judged with the CPUs' availability beside it. */
	if (sampled)
		check_load_say(r, &load, probe_late, c);
	if (probe_late)
		;
	else if (rc == -ETIMEDOUT)
		findings_add(r, FINDING_FAIL, "fs", "responding",
			     "not responding after %d s (while %s): a call on %s never returned; "
			     "the rest of the check was not done",
			     c->deadline_s, stage, c->res->dir);
	else if (rc < 0 || (out == OUTCOME_OK && (status != 0 || !opened)))
		findings_add(r, FINDING_FAIL, "fs", "check",
			     "the check of %s ended early (while %s): %s", c->res->dir, stage,
			     rc < 0 ? strerror(-rc) : "the process doing it failed");
	return out;
}

enum outcome check_node(const struct options *o, struct topo *topo, struct node_result *res,
			const struct inventory_dir_hooks *dir, int deadline_s)
{
	struct check_child_ctx *c = calloc(1, sizeof(*c));
	struct findings *r = calloc(1, sizeof(*r));
	enum outcome out = OUTCOME_FAILED;
	char why[BENCH_PATH_MAX + 512];

	if (!r || !c)
		goto out;
	*c = (struct check_child_ctx){.o = o,
				      .topo = topo,
				      .res = res,
				      .dir = dir,
				      .deadline_s = deadline_s,
				      .parent_report = r};
	snprintf(res->dir, sizeof(res->dir), "%s", o->dir ? o->dir : "");
	check_clock(r, res);
	check_cpus(r, topo, res);
	check_buffer(r, o, res);
	out = check_dir(c, r, why, sizeof(why));
	if (out >= OUTCOME_INTERRUPTED_INT) {
		log_err("interrupted by %s", stop_signal == SIGTERM ? "SIGTERM" : "SIGINT");
		goto out;
	}
	if (out == OUTCOME_USAGE) {
		log_err("%s", why);
		goto out;
	}
	/* A directory that cannot be used (bad usage aside) is a finding like any other: the
	 * report (text, JSON or CSV) still says what was found, and the check fails (exit 1). */
	if (out != OUTCOME_OK) {
		log_err("%s", why);
		findings_add(r, FINDING_FAIL, "fs", "dir", "%s", why);
		out = OUTCOME_OK;
	}
	for (size_t i = 0; i < r->n; i++) {
		if (r->f[i].level == FINDING_FAIL)
			out = OUTCOME_FAILED;
	}
	views_check(r, o->format, res, out, stdout);
out:
	free(r);
	free(c);
	return out;
}
