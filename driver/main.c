/* SPDX-License-Identifier: MIT */
/*
 * stagebench: the subcommands. Each validates everything it was given before it creates
 * anything, then hands over to the run loop or does its small job, and ends through
 * outcome_exit_code().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/check.h"
#include "driver/inventory.h"
#include "driver/options.h"
#include "driver/outcome.h"
#include "driver/plan.h"
#include "driver/run.h"
#include "driver/summary.h"
#include "util/cpulist.h"
#include "util/json.h"
#include "util/log.h"
#include "util/size.h"
#include "workers/registry.h"
#include "workers/replica.h"

#define MAIN_MAX_AHEAD_S 86400.0

/* Everything a command on this node needs, resolved from the options. */
struct main_env {
	struct options o;
	struct plan plan;
	struct topo *topo;
	int dirfd;
	struct node_result res;
};

static int main_usage(const char *why)
{
	log_err("%s", why);
	return outcome_exit_code(OUTCOME_USAGE);
}

static enum outcome main_node(struct main_env *e, char *why, size_t whylen)
{
	struct node_result *res = &e->res;

	if (gethostname(res->host, sizeof(res->host) - 1) != 0)
		snprintf(res->host, sizeof(res->host), "localhost");
	const char *node = e->o.node ? e->o.node : res->host;
	/* --node and STAGEBENCH_NODE were checked by the option parser; the host name is not. */
	if (!options_node_name_ok(node)) {
		snprintf(why, whylen,
			 "%s '%s' is not a valid node name: expected 1 to 64 letters, digits, '.', "
			 "'_' or '-', not starting with '.' or '-'%s",
			 e->o.node ? "--node" : "the host name", node,
			 e->o.node ? "" : " (give one with --node NAME)");
		return OUTCOME_USAGE;
	}
	snprintf(res->node, sizeof(res->node), "%s", node);
	snprintf(res->run_tag, sizeof(res->run_tag), "p%ld", (long)getpid());
	return OUTCOME_OK;
}

static enum outcome main_threads(struct main_env *e, char *why, size_t whylen)
{
	const char *reason = NULL;
	int rc = topo_open(&e->topo);

	if (rc) {
		snprintf(why, whylen, "cannot read the machine topology (hwloc): %s",
			 strerror(-rc));
		return OUTCOME_FAILED;
	}
	rc = topo_plan_build(e->topo, (unsigned)e->o.threads, e->o.set_cpus ? e->o.cpus : NULL,
			     e->o.set_cpus ? e->o.ncpus : 0, &e->res.tplan, &reason);
	if (rc) {
		snprintf(why, whylen, "%s: %s", e->o.set_cpus ? "--cpus" : "--threads",
			 reason ? reason : strerror(-rc));
		return OUTCOME_USAGE;
	}
	return OUTCOME_OK;
}

/* --dir: given, a real directory (not a symlink to nowhere), and, when writing, writable. */
static enum outcome main_dir(struct main_env *e, bool writing, char *why, size_t whylen)
{
	struct node_result *res = &e->res;
	char real[PATH_MAX];

	if (!e->o.dir) {
		snprintf(why, whylen, "no working directory: give --dir DIR or set STAGEBENCH_DIR");
		return OUTCOME_USAGE;
	}
	e->dirfd = open(e->o.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (e->dirfd < 0) {
		int err = errno;
		struct stat st;
		char target[PATH_MAX];
		ssize_t n;

		if (err == ENOENT && lstat(e->o.dir, &st) == 0 && S_ISLNK(st.st_mode) &&
		    (n = readlink(e->o.dir, target, sizeof(target) - 1)) >= 0) {
			target[n] = '\0';
			snprintf(why, whylen, "--dir '%s' is a dangling symbolic link (to '%s')",
				 e->o.dir, target);
		} else {
			snprintf(why, whylen, "--dir '%s': %s", e->o.dir,
				 err == ENOTDIR ? "not a directory" : strerror(err));
		}
		return OUTCOME_PRECONDITION;
	}
	if (!realpath(e->o.dir, real))
		snprintf(real, sizeof(real), "%s", e->o.dir);
	if (strlen(real) >= sizeof(res->dir) - 128) {
		snprintf(why, whylen, "--dir '%s': path too long", e->o.dir);
		return OUTCOME_USAGE;
	}
	snprintf(res->dir, sizeof(res->dir), "%s", real);
	res->fs_ok = fs_info_get(res->dir, &res->fs) == 0;
	if (writing && faccessat(e->dirfd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
		int err = errno;
		snprintf(why, whylen, "--dir '%s' is not writable: %s", res->dir, strerror(err));
		return OUTCOME_PRECONDITION;
	}
	return OUTCOME_OK;
}

static void main_clock(struct main_env *e)
{
	e->res.ntp_ok = clock_ntp_read(&e->res.ntp) == 0;
}

/* Space and inodes the command will need in --dir, counted before anything is written. */
static void main_needs(struct main_env *e, uint64_t *bytes, uint64_t *inodes)
{
	inventory_needs(&e->plan, &e->o, e->dirfd, e->res.tplan.nslots, bytes, inodes);
}

static enum outcome main_preflight(struct main_env *e, char *why, size_t whylen)
{
	uint64_t bytes, inodes;
	char a[32], b[32];

	if (!e->res.fs_ok)
		return OUTCOME_OK;
	main_needs(e, &bytes, &inodes);
	if (bytes > e->res.fs.bytes_free) {
		snprintf(why, whylen, "not enough space in '%s': the run needs %s, %s are free",
			 e->res.dir, size_format(bytes, a, sizeof(a)),
			 size_format(e->res.fs.bytes_free, b, sizeof(b)));
		return OUTCOME_PRECONDITION;
	}
	if (e->res.fs.inodes_total && inodes > e->res.fs.inodes_free) {
		snprintf(why, whylen,
			 "not enough inodes in '%s': the run needs %llu, %llu are free", e->res.dir,
			 (unsigned long long)inodes, (unsigned long long)e->res.fs.inodes_free);
		return OUTCOME_PRECONDITION;
	}
	return OUTCOME_OK;
}

static void main_dry_run(struct main_env *e)
{
	const struct plan *p = &e->plan;
	char cpus[256], a[32], b[32], c[32];
	uint64_t threads = e->res.tplan.nslots, bytes, inodes;

	summary_cpus(&e->res.tplan, cpus, sizeof(cpus));
	main_needs(e, &bytes, &inodes);
	printf("dry run: %s on node %s, %llu thread%s on CPUs %s, dir %s\n",
	       options_command_name(e->o.cmd), e->res.node, (unsigned long long)threads,
	       threads == 1 ? "" : "s", cpus, e->res.dir);
	for (size_t i = 0; i < threads; i++)
		printf("  thread %zu -> core %u -> CPU %u\n", i, e->res.tplan.slots[i].core,
		       e->res.tplan.slots[i].pu);
	if (e->o.cmd == CMD_RUN) {
		printf("first start at %.3f (in %.1f s), then ", e->res.start_at,
		       e->res.start_at - clock_wall());
		if (e->o.set_interval)
			printf("part k at start + k x %.3f s\n", e->o.interval);
		else
			printf("each part right after the previous one\n");
	}
	for (size_t r = 1; r <= (e->o.cmd == CMD_RUN ? e->o.repeat : 1); r++) {
		for (size_t i = 0; i < p->ntests; i++) {
			const struct plan_test *pt = &p->tests[i];
			struct replica_info info;

			if (pt->def->has_replica) {
				bool there = replica_probe(e->dirfd, pt->replica, &info) == 0;
				const char *act =
				    !there			 ? "create"
				    : r > 1 && pt->def->recreate ? "recreate"
				    : e->o.cmd == CMD_PREPARE && (pt->def->recreate || e->o.force)
					? "recreate"
					: "use";
				printf("test %s rep %zu: %s replica %s/%s (%s)\n", pt->def->name, r,
				       act, e->res.dir, pt->replica,
				       size_format(pt->file, a, sizeof(a)));
			}
			if (e->o.cmd != CMD_RUN)
				continue;
			for (size_t k = 0; k < pt->nparts; k++) {
				const struct plan_part *pp = &p->parts[pt->first + k];
				uint64_t per = pp->p.passes ? pp->p.passes * pp->p.file
							    : pp->p.count * pp->p.chunk;
				printf("  part %s: %s", pp->def->name, pp->def->what);
				if (pp->p.count)
					printf(", N=%llu M=%s", (unsigned long long)pp->p.count,
					       size_format(pp->p.chunk, a, sizeof(a)));
				if (pp->p.passes)
					printf(", PASSES=%llu", (unsigned long long)pp->p.passes);
				printf("; %s %s per thread, %s per node\n",
				       strcmp(pp->def->kind, "manyfiles") ? "reads" : "writes",
				       size_format(per, b, sizeof(b)),
				       size_format(per * threads, c, sizeof(c)));
			}
		}
	}
	printf("space needed in %s: %s and %llu inodes; nothing was done\n", e->res.dir,
	       size_format(bytes, a, sizeof(a)), (unsigned long long)inodes);
}

static uint64_t main_random_seed(void)
{
	uint64_t s = 0;

	if (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s))
		s = (uint64_t)clock_mono_ns() ^ ((uint64_t)getpid() << 32);
	return s;
}

static int main_finish(struct main_env *e, enum outcome out)
{
	if (e->topo)
		topo_close(e->topo);
	if (e->dirfd > 0)
		close(e->dirfd);
	run_result_free(&e->res);
	return outcome_exit_code(out);
}

/* Print one line, map the outcome, release what was acquired. */
static int main_fail(struct main_env *e, enum outcome out, const char *why)
{
	log_err("%s", why);
	return main_finish(e, out);
}

/*
 * A failure of `run` once --out is known to be writable: the summary is still written, with
 * the error and no results, so that a collector sees why this node has none.
 */
static int main_run_fail(struct main_env *e, enum outcome out, const char *why)
{
	if (out == OUTCOME_USAGE)
		return main_fail(e, out, why);
	run_error(&e->res, "%s", why);
	e->res.outcome = out;
	if (e->o.out) {
		int rc = summary_write_file(&e->res, &e->o, e->o.out, e->o.force);
		if (rc)
			log_err("cannot write the summary to '%s': %s", e->o.out, strerror(-rc));
	}
	return main_finish(e, out);
}

static int main_run(struct main_env *e)
{
	struct options *o = &e->o;
	char why[1024];
	enum outcome out;
	double now = clock_wall();

	e->res.started_at = now;
	if (plan_build(o, &e->plan, why, sizeof(why)))
		return main_fail(e, OUTCOME_USAGE, why);
	if ((out = main_node(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	e->res.start_at = o->set_start_at ? o->start_at : now + o->start_in;
	if (e->res.start_at > now + MAIN_MAX_AHEAD_S) {
		snprintf(why, sizeof(why),
			 "--start-at %.3f is %.0f s ahead, more than 24 hours: refusing it as a "
			 "likely mistake",
			 e->res.start_at, e->res.start_at - now);
		return main_fail(e, OUTCOME_USAGE, why);
	}
	if (e->res.start_at < now - MAIN_MAX_AHEAD_S) {
		snprintf(
		    why, sizeof(why),
		    "--start-at %.3f is %.0f s in the past, more than 24 hours: refusing it as "
		    "a likely mistake (expected an instant in UTC seconds since 1970, like "
		    "%.0f)",
		    e->res.start_at, now - e->res.start_at, now + 60);
		return main_fail(e, OUTCOME_USAGE, why);
	}
	if (e->res.start_at < now && !o->late_ok) {
		snprintf(why, sizeof(why),
			 "start time missed by %.3f s (--start-at is in the past; use --late-ok to "
			 "start at once)",
			 now - e->res.start_at);
		return main_fail(e, OUTCOME_PRECONDITION, why);
	}
	if (o->out && summary_check_out(o->out, o->force, why, sizeof(why)))
		return main_fail(
		    e, access(o->out, F_OK) == 0 ? OUTCOME_USAGE : OUTCOME_PRECONDITION, why);
	if ((out = main_threads(e, why, sizeof(why))) != OUTCOME_OK)
		return main_run_fail(e, out, why);
	if ((out = main_dir(e, !o->dry_run, why, sizeof(why))) != OUTCOME_OK)
		return main_run_fail(e, out, why);
	main_clock(e);
	if (!e->res.ntp_ok || !e->res.ntp.synchronized) {
		if (o->require_ntp)
			return main_run_fail(
			    e, OUTCOME_PRECONDITION,
			    "the clock is not NTP-synchronized and --require-ntp was given");
		log_warn("the clock is not NTP-synchronized (maxerror %ld us): start instants "
			 "across nodes may disagree",
			 e->res.ntp.maxerror_us);
	}
	e->res.seed = o->set_seed ? o->seed : main_random_seed();
	if (o->dry_run) {
		main_dry_run(e);
		return main_finish(e, OUTCOME_OK);
	}
	if ((out = main_preflight(e, why, sizeof(why))) != OUTCOME_OK)
		return main_run_fail(e, out, why);

	if (!o->progress && !o->no_progress && !o->quiet)
		o->progress = isatty(STDERR_FILENO);
	run_install_signals();
	out = run_execute(o, &e->plan, e->topo, e->dirfd, &e->res);
	/* Said before the summaries, so that the JSON's errors say it too. */
	if (out >= OUTCOME_INTERRUPTED_INT)
		run_error(&e->res, "interrupted by %s",
			  run_signal == SIGTERM ? "SIGTERM" : "SIGINT");
	e->res.outcome = out;
	if (o->format == FORMAT_JSON)
		summary_json(&e->res, o, stdout, true);
	else if (o->format == FORMAT_CSV)
		summary_csv(&e->res, stdout);
	else
		summary_text(&e->res, o, stdout);
	fflush(stdout);
	if (o->out) {
		int rc = summary_write_file(&e->res, o, o->out, o->force);
		if (rc) {
			log_err("cannot write the summary to '%s': %s", o->out, strerror(-rc));
			out = outcome_worse(out, OUTCOME_FAILED);
		}
	}
	return main_finish(e, out);
}

static int main_prepare(struct main_env *e)
{
	struct options *o = &e->o;
	char why[1024], a[32], b[32];
	enum outcome out = OUTCOME_OK;

	if (plan_build(o, &e->plan, why, sizeof(why)))
		return main_fail(e, OUTCOME_USAGE, why);
	if ((out = main_node(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	if ((out = main_threads(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	if ((out = main_dir(e, !o->dry_run, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	if (o->dry_run) {
		main_dry_run(e);
		return main_finish(e, OUTCOME_OK);
	}
	if ((out = main_preflight(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	run_install_signals();
	for (size_t i = 0; i < e->plan.ntests && !run_stop; i++) {
		const struct plan_test *pt = &e->plan.tests[i];
		struct replica_info info;
		struct bench_error err;
		int rc;

		if (!pt->def->has_replica) {
			printf("test %s: no replica to prepare\n", pt->def->name);
			continue;
		}
		rc = replica_probe(e->dirfd, pt->replica, &info);
		if (rc == 0 && (!info.ours || info.size != pt->file)) {
			snprintf(why, sizeof(why), "replica '%s/%s' is %s: refusing to replace it",
				 e->res.dir, pt->replica,
				 info.ours ? "of the wrong size" : "not a stagebench replica");
			log_err("%s", why);
			out = outcome_worse(out, OUTCOME_PRECONDITION);
			continue;
		}
		if (rc && rc != -ENOENT) {
			log_err("replica '%s/%s': %s", e->res.dir, pt->replica,
				rc == -EINVAL || rc == -EISDIR
				    ? "not a regular file (a symbolic link, a directory, a "
				      "FIFO...): refusing to use or replace it"
				    : strerror(-rc));
			out = outcome_worse(out, OUTCOME_PRECONDITION);
			continue;
		}
		if (rc == 0 && !pt->def->recreate && !o->force) {
			printf("test %s: replica %s/%s (%s, generation %llu) is kept, as the spec "
			       "allows (--force recreates it)\n",
			       pt->def->name, e->res.dir, pt->replica,
			       size_format(info.size, a, sizeof(a)),
			       (unsigned long long)info.generation);
			continue;
		}
		uint64_t gen = replica_new_generation();
		uint64_t t0 = clock_mono_ns();
		memset(&err, 0, sizeof(err));
		rc = replica_create(e->dirfd, e->res.dir, pt->replica, pt->file, gen,
				    (unsigned)e->res.tplan.nslots, o->xfer, rc == 0, &run_stop,
				    &err);
		double s = (double)(clock_mono_ns() - t0) / 1e9;
		if (rc && run_signal) /* its temporary file is removed; said once below */
			break;
		if (rc == -EEXIST && strcmp(err.op, "rename") == 0 &&
		    replica_probe(e->dirfd, pt->replica, &info) == 0 && info.ours &&
		    info.size == pt->file) {
			/* Another process published the same replica first, complete: ours goes. */
			log_warn(
			    "test %s: replica %s/%s was created at the same time by another "
			    "process (generation %llu): kept theirs, discarded this one's copy",
			    pt->def->name, e->res.dir, pt->replica,
			    (unsigned long long)info.generation);
			continue;
		}
		if (rc) {
			char line[700];
			run_format_error(&err, line, sizeof(line));
			log_err("test %s: preparing replica: %s", pt->def->name, line);
			out = outcome_worse(out, OUTCOME_FAILED);
			continue;
		}
		printf("test %s: %s %s/%s (%s, generation %llu) in %.3f s, %s\n", pt->def->name,
		       info.size ? "recreated" : "created", e->res.dir, pt->replica,
		       size_format(pt->file, a, sizeof(a)), (unsigned long long)gen, s,
		       size_format_rate(s > 0 ? (double)pt->file / s : 0, b, sizeof(b)));
	}
	if (run_signal) {
		log_err("interrupted by %s", run_signal == SIGTERM ? "SIGTERM" : "SIGINT");
		out = run_signal == SIGTERM ? OUTCOME_INTERRUPTED_TERM : OUTCOME_INTERRUPTED_INT;
	}
	return main_finish(e, out);
}

/* Does a directory entry belong to the tests being cleaned? "stagebench.<test>." prefix. */
static bool main_clean_match(const struct plan *p, const char *name)
{
	static const char prefix[] = "stagebench.";

	if (strncmp(name, prefix, sizeof(prefix) - 1) != 0)
		return false;
	name += sizeof(prefix) - 1;
	for (size_t i = 0; i < p->ntests; i++) {
		const struct plan_test *pt = &p->tests[i];
		if (pt->def->has_replica) {
			size_t n = strlen(pt->def->name);
			if (strncmp(name, pt->def->name, n) == 0 && name[n] == '.')
				return true;
			continue;
		}
		for (size_t k = 0; k < pt->nparts; k++) {
			const char *part = p->parts[pt->first + k].def->name;
			size_t n = strlen(part);
			if (strncmp(name, part, n) == 0 && name[n] == '.')
				return true;
		}
	}
	return false;
}

static int main_clean(struct main_env *e)
{
	struct options *o = &e->o;
	char why[1024];
	enum outcome out;
	size_t removed = 0, kept = 0;

	if (plan_build(o, &e->plan, why, sizeof(why)))
		return main_fail(e, OUTCOME_USAGE, why);
	/* "clean 2" removes test 2's files of every scale; all parts of a test, whatever named. */
	if ((out = main_dir(e, !o->dry_run, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	int fd = dup(e->dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		snprintf(why, sizeof(why), "cannot list '%s': %s", e->res.dir, strerror(errno));
		return main_fail(e, OUTCOME_PRECONDITION, why);
	}
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!main_clean_match(&e->plan, de->d_name))
			continue;
		int ours = replica_is_ours(e->dirfd, de->d_name);
		if (ours != 1) {
			printf("left alone: %s/%s (%s)\n", e->res.dir, de->d_name,
			       ours < 0 ? strerror(-ours) : "not a stagebench file");
			kept++;
			continue;
		}
		if (o->dry_run) {
			printf("would remove: %s/%s\n", e->res.dir, de->d_name);
			continue;
		}
		if (unlinkat(e->dirfd, de->d_name, 0) != 0) {
			log_err("cannot remove '%s/%s': %s", e->res.dir, de->d_name,
				strerror(errno));
			out = OUTCOME_FAILED;
			continue;
		}
		printf("removed: %s/%s\n", e->res.dir, de->d_name);
		removed++;
	}
	closedir(d);
	printf("%zu file%s removed, %zu left alone\n", removed, removed == 1 ? "" : "s", kept);
	return main_finish(e, out);
}

static int main_list(struct main_env *e)
{
	struct options *o = &e->o;
	char a[32], b[32];

	if (o->format == FORMAT_JSON) {
		struct json j;
		json_init(&j, stdout, true);
		json_object_begin(&j);
		json_kv_string(&j, "schema", "stagebench.catalogue/1");
		json_kv_string(&j, "version", STAGEBENCH_VERSION);
		json_kv_string(&j, "scale", options_scale_name((enum scale)o->scale));
		json_key(&j, "tests");
		json_array_begin(&j);
		for (size_t i = 0; i < plan_ntests; i++) {
			const struct test_def *t = &plan_tests[i];
			json_object_begin(&j);
			json_kv_string(&j, "test", t->name);
			json_kv_string(&j, "title", t->title);
			json_key(&j, "parts");
			json_array_begin(&j);
			for (size_t k = 0; k < plan_nparts; k++) {
				if (strcmp(plan_parts[k].test, t->name) == 0)
					json_string(&j, plan_parts[k].name);
			}
			json_array_end(&j);
			json_kv_bool(&j, "has_replica", t->has_replica);
			json_kv_bool(&j, "recreate", t->recreate);
			json_kv_bool(&j, "needs_prepare", t->needs_prepare);
			json_kv_bool(&j, "in_all", t->in_all);
			json_object_end(&j);
		}
		json_array_end(&j);
		json_key(&j, "parts");
		json_array_begin(&j);
		for (size_t i = 0; i < plan_nparts; i++) {
			const struct part_def *d = &plan_parts[i];
			const struct part_params *p = &d->scale[o->scale];
			json_object_begin(&j);
			json_kv_string(&j, "part", d->name);
			json_kv_string(&j, "test", d->test);
			json_kv_string(&j, "kind", d->kind);
			json_kv_uint(&j, "count", p->count);
			json_kv_uint(&j, "chunk_bytes", p->chunk);
			json_kv_uint(&j, "file_bytes", p->file);
			json_kv_uint(&j, "passes", p->passes);
			json_kv_string(&j, "what", d->what);
			json_object_end(&j);
		}
		json_array_end(&j);
		json_object_end(&j);
		return main_finish(e, json_finish(&j) ? OUTCOME_FAILED : OUTCOME_OK);
	}
	if (o->format == FORMAT_CSV)
		printf("part,test,kind,count,chunk_bytes,file_bytes,passes\n");
	else
		printf("scale %s\n%-4s %-4s %-10s %8s %10s %10s %7s  %s\n",
		       options_scale_name((enum scale)o->scale), "part", "test", "kind", "N", "M",
		       "file", "passes", "what");
	for (size_t i = 0; i < plan_nparts; i++) {
		const struct part_def *d = &plan_parts[i];
		const struct part_params *p = &d->scale[o->scale];
		if (o->format == FORMAT_CSV) {
			printf("%s,%s,%s,%llu,%llu,%llu,%llu\n", d->name, d->test, d->kind,
			       (unsigned long long)p->count, (unsigned long long)p->chunk,
			       (unsigned long long)p->file, (unsigned long long)p->passes);
			continue;
		}
		char n[24] = "-", pa[24] = "-";
		if (p->count)
			snprintf(n, sizeof(n), "%llu", (unsigned long long)p->count);
		if (p->passes)
			snprintf(pa, sizeof(pa), "%llu", (unsigned long long)p->passes);
		printf("%-4s %-4s %-10s %8s %10s %10s %7s  %s\n", d->name, d->test, d->kind, n,
		       p->chunk ? size_format(p->chunk, a, sizeof(a)) : "-",
		       p->file ? size_format(p->file, b, sizeof(b)) : "-", pa, d->what);
	}
	return main_finish(e, OUTCOME_OK);
}

static const char *const main_inventory_kinds[] = {
    [INV_REPLICA] = "replica", [INV_TEMP] = "temporary", [INV_FILE] = "file"};

/* The stagebench files in --dir: how big, which generation, how old, how much is cached. */
static void main_info_replicas_text(struct main_env *e)
{
	struct inventory_entry *v;
	size_t n;
	char a[32];
	double now = clock_wall();

	if (inventory_scan(e->dirfd, e->res.dir, &v, &n) != 0)
		return;
	printf("stagebench files in %s: %zu\n", e->res.dir, n);
	for (size_t i = 0; i < n; i++) {
		const struct inventory_entry *f = &v[i];
		printf("  %-9s %-28s %10s  created %6.0f s ago", main_inventory_kinds[f->kind],
		       f->name, size_format(f->size, a, sizeof(a)), now - f->mtime);
		if (f->kind == INV_REPLICA && f->ours)
			printf("  generation %llu, %.0f%% in page cache",
			       (unsigned long long)f->generation, f->residency * 100.0);
		else if (!f->ours)
			printf("  not a valid stagebench file");
		putchar('\n');
	}
	free(v);
}

static void main_info_replicas_json(struct main_env *e, struct json *j)
{
	struct inventory_entry *v = NULL;
	size_t n = 0;
	double now = clock_wall();

	json_key(j, "files");
	if (!e->o.dir || inventory_scan(e->dirfd, e->res.dir, &v, &n) != 0) {
		json_null(j);
		return;
	}
	json_array_begin(j);
	for (size_t i = 0; i < n; i++) {
		const struct inventory_entry *f = &v[i];
		json_object_begin(j);
		json_kv_string(j, "name", f->name);
		json_kv_string(j, "kind", main_inventory_kinds[f->kind]);
		json_kv_bool(j, "ours", f->ours);
		json_kv_uint(j, "bytes", f->size);
		json_kv_uint(j, "generation", f->generation);
		json_kv_double(j, "age_s", now - f->mtime);
		json_key(j, "cache_residency");
		if (f->residency >= 0)
			json_double(j, f->residency);
		else
			json_null(j);
		json_object_end(j);
	}
	json_array_end(j);
	free(v);
}

static int main_info(struct main_env *e)
{
	struct options *o = &e->o;
	struct node_result *res = &e->res;
	char why[1024], cpus[256], a[32], b[32], line[256];
	unsigned allowed[OPTIONS_MAX_CPUS];
	enum outcome out;

	if ((out = main_node(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	if ((out = main_threads(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	if (o->dir && (out = main_dir(e, false, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	main_clock(e);
	run_buffer_place(o, res);
	int nallowed = topo_allowed(e->topo, allowed, OPTIONS_MAX_CPUS);
	cpulist_format(allowed, nallowed > 0 ? (size_t)nallowed : 0, cpus, sizeof(cpus));
	const struct topo_plan *tp = &res->tplan;

	if (o->format == FORMAT_JSON) {
		struct json j;
		json_init(&j, stdout, true);
		json_object_begin(&j);
		json_kv_string(&j, "schema", "stagebench.info/1");
		json_kv_string(&j, "version", STAGEBENCH_VERSION);
		json_kv_string(&j, "node", res->node);
		json_kv_string(&j, "host", res->host);
		json_key(&j, "topology");
		json_object_begin(&j);
		json_kv_uint(&j, "machine_pus", tp->machine_pus);
		json_kv_uint(&j, "allowed_pus", tp->allowed_pus);
		json_kv_uint(&j, "allowed_cores", tp->allowed_cores);
		json_kv_string(&j, "allowed_cpus", cpus);
		json_kv_bool(&j, "restricted", tp->restricted);
		json_object_end(&j);
		json_key(&j, "threads");
		json_array_begin(&j);
		for (size_t i = 0; i < tp->nslots; i++) {
			json_object_begin(&j);
			json_kv_uint(&j, "index", i);
			json_kv_uint(&j, "cpu", tp->slots[i].pu);
			json_kv_uint(&j, "core", tp->slots[i].core);
			json_kv_uint(&j, "package", tp->slots[i].package);
			json_kv_uint(&j, "smt", tp->slots[i].smt);
			json_object_end(&j);
		}
		json_array_end(&j);
		json_key(&j, "clock");
		json_object_begin(&j);
		json_kv_bool(&j, "ntp_synchronized", res->ntp_ok && res->ntp.synchronized);
		json_kv_int(&j, "maxerror_us", res->ntp.maxerror_us);
		json_kv_int(&j, "esterror_us", res->ntp.esterror_us);
		json_kv_int(&j, "state", res->ntp.state);
		json_kv_string(&j, "clocksource", res->ntp.clocksource);
		json_kv_double(&j, "now", clock_wall());
		json_object_end(&j);
		json_kv_string(&j, "dir", o->dir ? res->dir : NULL);
		json_key(&j, "fs");
		if (o->dir && res->fs_ok) {
			json_object_begin(&j);
			json_kv_string(&j, "type", res->fs.type);
			json_kv_string(&j, "source", res->fs.source);
			json_kv_string(&j, "mountpoint", res->fs.mountpoint);
			json_kv_string(&j, "options", res->fs.options);
			json_kv_uint(&j, "bytes_total", res->fs.bytes_total);
			json_kv_uint(&j, "bytes_free", res->fs.bytes_free);
			json_kv_uint(&j, "inodes_total", res->fs.inodes_total);
			json_kv_uint(&j, "inodes_free", res->fs.inodes_free);
			json_object_end(&j);
		} else {
			json_null(&j);
		}
		summary_json_buffer(&j, &res->bufplace);
		main_info_replicas_json(e, &j);
		json_object_end(&j);
		return main_finish(e, json_finish(&j) ? OUTCOME_FAILED : OUTCOME_OK);
	}
	printf("stagebench %s on node %s (host %s)\n", STAGEBENCH_VERSION, res->node, res->host);
	printf("topology: %zu PUs in the machine; allowed: CPUs %s (%zu PUs on %zu cores)%s\n",
	       tp->machine_pus, cpus, tp->allowed_pus, tp->allowed_cores,
	       tp->restricted ? ", restricted by the inherited binding" : "");
	printf("thread plan: %zu thread%s\n", tp->nslots, tp->nslots == 1 ? "" : "s");
	for (size_t i = 0; i < tp->nslots; i++)
		printf("  thread %zu -> package %u, core %u -> CPU %u%s\n", i, tp->slots[i].package,
		       tp->slots[i].core, tp->slots[i].pu,
		       tp->slots[i].smt > 1 ? " (core has SMT siblings)" : "");
	summary_text_clock(res, stdout);
	summary_buffer_line(&res->bufplace, line, sizeof(line));
	printf("I/O buffer: %s\n", line);
	if (o->dir && res->fs_ok)
		printf("dir: %s\n  filesystem %s, source %s, mounted on %s\n  options %s\n"
		       "  %s free of %s, %llu inodes free\n",
		       res->dir, res->fs.type, res->fs.source, res->fs.mountpoint, res->fs.options,
		       size_format(res->fs.bytes_free, a, sizeof(a)),
		       size_format(res->fs.bytes_total, b, sizeof(b)),
		       (unsigned long long)res->fs.inodes_free);
	else if (!o->dir)
		printf("dir: none given (--dir or STAGEBENCH_DIR)\n");
	if (o->dir)
		main_info_replicas_text(e);
	return main_finish(e, OUTCOME_OK);
}

static int main_check(struct main_env *e)
{
	char why[1024];
	enum outcome out;

	if ((out = main_node(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	if ((out = main_threads(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	if ((out = main_dir(e, false, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	main_clock(e);
	run_install_signals();
	out = check_node(&e->o, e->topo, e->dirfd, &e->res);
	return main_finish(e, out);
}

int main(int argc, char **argv)
{
	static struct main_env e;
	char why[1024];

	e.dirfd = -1;
	if (options_parse(argc, argv, &e.o, why, sizeof(why)))
		return main_usage(why);
	if (e.o.version) {
		printf("stagebench %s\n", STAGEBENCH_VERSION);
		return 0;
	}
	if (e.o.help) {
		options_help(e.o.cmd, stdout);
		return 0;
	}
	if (e.o.quiet)
		log_set_level(LOG_ERR);
	else if (e.o.verbose)
		log_set_level(LOG_INFO);

	switch (e.o.cmd) {
	case CMD_RUN:
		return main_run(&e);
	case CMD_PREPARE:
		return main_prepare(&e);
	case CMD_CLEAN:
		return main_clean(&e);
	case CMD_LIST:
		return main_list(&e);
	case CMD_INFO:
		return main_info(&e);
	case CMD_CHECK:
		return main_check(&e);
	default:
		return main_usage("no command given");
	}
}
