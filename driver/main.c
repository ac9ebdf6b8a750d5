/* SPDX-License-Identifier: MIT */
/*
 * stagebench: the subcommands. Each validates everything it was given before it creates
 * anything, then hands over to the run loop or does its small job, and ends through
 * outcome_exit_code().
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/arm.h"
#include "driver/armctl.h"
#include "driver/check.h"
#include "driver/health.h"
#include "driver/clockcmd.h"
#include "driver/inventory.h"
#include "driver/options.h"
#include "driver/outcome.h"
#include "driver/output.h"
#include "driver/note.h"
#include "driver/plan.h"
#include "driver/prepare.h"
#include "driver/run.h"
#include "driver/schedule.h"
#include "driver/stop.h"
#include "driver/summary.h"
#include "driver/views.h"
#include "platform/fsinfo.h"
#include "util/cpulist.h"
#include "util/log.h"
#include "util/size.h"
#include "workers/replica.h"

#define MAIN_MAX_AHEAD_S 86400.0
/* The longest real path of --dir: BENCH_PATH_MAX leaves 128 bytes for the names in it. */
#define MAIN_DIR_MAX (BENCH_PATH_MAX - 129)

/* Everything a command on this node needs, resolved from the options. */
struct main_env {
	struct options o;
	struct plan plan;
	struct topo *topo;
	int dirfd;
	struct node_result res;
	struct arm arm;		       /* --detach */
	double schedule[SCHEDULE_MAX]; /* --schedule */
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
	char token[FS_TOKEN_LEN + 1];
	fs_token(token, sizeof(token));
	snprintf(res->run_tag, sizeof(res->run_tag), "p%ld-%s", (long)getpid(), token);
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
	char real[PATH_MAX], shown[NOTE_PATH_SHOWN + 8];

	if (!e->o.dir) {
		snprintf(why, whylen, "no working directory: give --dir DIR or set STAGEBENCH_DIR");
		return OUTCOME_USAGE;
	}
	note_path_short(e->o.dir, shown, sizeof(shown));
	e->dirfd = open(e->o.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (e->dirfd < 0) {
		int err = errno;
		struct stat st;
		char target[PATH_MAX], t[NOTE_PATH_SHOWN + 8];
		ssize_t n;

		if (err == ENOENT && lstat(e->o.dir, &st) == 0 && S_ISLNK(st.st_mode) &&
		    (n = readlink(e->o.dir, target, sizeof(target) - 1)) >= 0) {
			target[n] = '\0';
			snprintf(why, whylen, "--dir '%s' is a dangling symbolic link (to '%s')",
				 shown, note_path_short(target, t, sizeof(t)));
		} else {
			snprintf(why, whylen, "--dir '%s': %s", shown,
				 err == ENOTDIR ? "not a directory" : strerror(err));
		}
		return OUTCOME_PRECONDITION;
	}
	if (!realpath(e->o.dir, real))
		snprintf(real, sizeof(real), "%s", e->o.dir);
	if (strlen(real) > MAIN_DIR_MAX) {
		snprintf(why, whylen,
			 "--dir '%s' is too long: its real path has %zu bytes, at most %d are "
			 "allowed (the names of the files in it must fit in %d)",
			 note_path_short(real, shown, sizeof(shown)), strlen(real), MAIN_DIR_MAX,
			 BENCH_PATH_MAX);
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
	inventory_needs(&e->plan, e->dirfd, e->res.tplan.nslots, bytes, inodes);
}

/* Leftovers of earlier runs in --dir are said (stderr, and the summary's warnings). */
static void main_leftovers(struct main_env *e)
{
	struct inventory *inv = malloc(sizeof(*inv));
	char line[1024];

	if (inv && inventory_take(e->dirfd, false, inv) == 0) {
		inventory_leftovers_line(inv, e->res.dir, clock_wall(), line, sizeof(line));
		if (line[0])
			note_warning(&e->res, "%s", line);
	}
	free(inv);
}

static enum outcome main_preflight(struct main_env *e, char *why, size_t whylen)
{
	uint64_t bytes, inodes;
	char a[32], b[32];

	main_leftovers(e);
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
	uint64_t bytes, inodes;

	main_needs(e, &bytes, &inodes);
	views_dry_run(&e->plan, &e->res, e->o.cmd, e->o.force, e->dirfd, bytes, inodes, stdout);
}

static int main_finish(struct main_env *e, enum outcome out)
{
	if (e->topo)
		topo_close(e->topo);
	if (e->dirfd > 0)
		close(e->dirfd);
	result_free(&e->res);
	return outcome_exit_code(out);
}

/* Print one line, map the outcome, release what was acquired. */
static int main_fail(struct main_env *e, enum outcome out, const char *why)
{
	log_err("%s", why);
	return main_finish(e, out);
}

/* The summary to --out, if given: 0 or -errno, said on stderr. */
static int main_write_out(struct main_env *e)
{
	int rc = e->o.out ? summary_write_file(&e->res, &e->o, e->o.out, e->o.force) : 0;

	if (rc)
		log_err("cannot write the summary to '%s': %s", e->o.out, strerror(-rc));
	return rc;
}

/*
 * A failure of `run` once --out is known to be writable: the summary is still written, with
 * the error and no results, so that a collector sees why this node has none.
 */
static int main_run_fail(struct main_env *e, enum outcome out, const char *why)
{
	if (out == OUTCOME_USAGE)
		return main_fail(e, out, why);
	note_error(&e->res, "%s", why);
	e->res.outcome = out;
	main_write_out(e);
	return main_finish(e, out);
}

/* The first start instant: not more than a day away, not missed unless late is allowed. */
static enum outcome main_start(struct main_env *e, double now, char *why, size_t whylen)
{
	const struct plan_run *r = &e->plan.run;

	e->res.start_at = r->start_fixed ? r->start_at : now + r->start_in;
	if (e->res.start_at > now + MAIN_MAX_AHEAD_S) {
		snprintf(why, whylen,
			 "--start-at %.3f is %.0f s ahead, more than 24 hours: refusing it as a "
			 "likely mistake",
			 e->res.start_at, e->res.start_at - now);
		return OUTCOME_USAGE;
	}
	if (e->res.start_at < now - MAIN_MAX_AHEAD_S) {
		snprintf(why, whylen,
			 "--start-at %.3f is %.0f s in the past, more than 24 hours: refusing it "
			 "as a likely mistake (expected an instant in UTC seconds since 1970, like "
			 "%.0f)",
			 e->res.start_at, now - e->res.start_at, now + 60);
		return OUTCOME_USAGE;
	}
	if (e->res.start_at < now && !r->late_ok) {
		snprintf(why, whylen,
			 "start time missed by %.3f s (--start-at is in the past; use --late-ok to "
			 "start at once)",
			 now - e->res.start_at);
		return OUTCOME_PRECONDITION;
	}
	return OUTCOME_OK;
}

/* The summary of a run on stdout in the chosen format, and to --out. */
static enum outcome main_report(struct main_env *e, enum outcome out)
{
	const struct options *o = &e->o;

	e->res.outcome = out;
	if (o->format == FORMAT_JSON)
		summary_json(&e->res, o, stdout, true);
	else if (o->format == FORMAT_CSV)
		summary_csv(&e->res, stdout);
	else
		summary_text(&e->res, o, stdout);
	fflush(stdout);
	return main_write_out(e) ? outcome_worse(out, OUTCOME_FAILED) : out;
}

static int main_run(struct main_env *e)
{
	const struct options *o = &e->o;
	const struct plan_run *r = &e->plan.run;
	struct run_env env;
	char why[1024];
	enum outcome out;
	double now = clock_wall();

	e->res.started_at = now;
	if (plan_build(o, &e->plan, why, sizeof(why)) ||
	    (o->schedule && schedule_apply(o, e->schedule, &e->plan, why, sizeof(why))))
		return main_fail(e, OUTCOME_USAGE, why);
	if ((out = main_node(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	if ((out = main_start(e, now, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	/* --detach STATE_DIR: checked (or created) now; the summary goes there unless --out. */
	int rc = o->detach && !o->dry_run
		     ? arm_open(&e->arm, o->detach, &e->o.out, why, sizeof(why))
		     : 0;
	if (rc)
		return main_fail(e, rc == -EINVAL ? OUTCOME_USAGE : OUTCOME_PRECONDITION, why);
	if (o->out && summary_check_out(o->out, o->force, why, sizeof(why)))
		return main_fail(e,
				 faccessat(AT_FDCWD, o->out, F_OK, AT_SYMLINK_NOFOLLOW) == 0
				     ? OUTCOME_USAGE
				     : OUTCOME_PRECONDITION,
				 why);
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
		/* In the summary's warnings too, not only on stderr: the collector reads them. */
		note_warning(&e->res,
			     "clock not NTP-synchronized (maxerror %ld us): start instants across "
			     "nodes may disagree",
			     e->res.ntp.maxerror_us);
	}
	e->res.seed = r->seed;
	if (o->dry_run) {
		main_dry_run(e);
		return main_finish(e, OUTCOME_OK);
	}
	if ((out = main_preflight(e, why, sizeof(why))) != OUTCOME_OK)
		return main_run_fail(e, out, why);

	memset(&env, 0, sizeof(env));
	if (o->detach) {
		int code = arm_detach(&e->arm, o->out, e->res.node, e->res.run_tag,
				      r->has_interval ? r->interval : 0.0,
				      (unsigned long)((size_t)r->repeat * e->plan.nparts));
		if (code >= 0) {
			main_finish(e, OUTCOME_OK);
			return code;
		}
		env.armed = arm_ready;
		env.armed_arg = &e->arm;
	}
	env.topo = e->topo;
	env.dirfd = e->dirfd;
	env.progress = o->progress || (!o->no_progress && !o->quiet && isatty(STDERR_FILENO));
	stop_install();
	stop_keep_summary();
	out = run_execute(&e->plan, &env, &e->res);
	/* Said before the summaries, so that the JSON's errors say it too. */
	if (out >= OUTCOME_INTERRUPTED_INT)
		note_error(&e->res, "interrupted by %s",
			   stop_signal_seen() == SIGTERM ? "SIGTERM" : "SIGINT");
	/* From here on a second signal waits for the summary (no temporary file is left). */
	stop_hold(true);
	out = main_report(e, out);
	if (o->detach)
		arm_end(&e->arm, out, e->res.nerrors ? e->res.errors[0] : NULL);
	return main_finish(e, out);
}

static int main_prepare(struct main_env *e)
{
	struct options *o = &e->o;
	char why[1024];
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
	stop_install();
	out = prepare_command(&e->plan, e->dirfd, e->res.dir, (unsigned)e->res.tplan.nslots,
			      o->force);
	return main_finish(e, out);
}

static int main_clean(struct main_env *e)
{
	const struct options *o = &e->o;
	char why[1024];
	enum outcome out;

	if (plan_build(o, &e->plan, why, sizeof(why)))
		return main_fail(e, OUTCOME_USAGE, why);
	/* "clean 2" removes test 2's files of every scale; all parts of a test, whatever named. */
	if ((out = main_dir(e, !o->dry_run, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	return main_finish(e, inventory_clean(&e->plan, e->dirfd, e->res.dir, o->dry_run));
}

static int main_list(struct main_env *e)
{
	int rc = views_list((enum scale)e->o.scale, (enum format)e->o.format, stdout);

	return main_finish(e, rc ? OUTCOME_FAILED : OUTCOME_OK);
}

/* How info and check open --dir: called in the child process that may hang on it. */
static enum outcome main_check_dir(void *ctx, int *dirfd, char *why, size_t whylen)
{
	struct main_env *e = ctx;
	enum outcome out = main_dir(e, false, why, whylen);

	*dirfd = e->dirfd;
	return out;
}

/* In that child process, before it exits: what it inherited of the command, freed. */
static void main_child_release(void *ctx)
{
	struct main_env *e = ctx;

	if (e->topo)
		topo_close(e->topo);
	e->topo = NULL;
	if (e->dirfd >= 0)
		close(e->dirfd);
	e->dirfd = -1;
	result_free(&e->res);
	/* The child's stdout is /dev/null: what the parent had buffered goes nowhere. */
	output_stdout_close(0);
}

static int main_info_print(struct main_env *e, const struct inventory_report *rep)
{
	unsigned allowed[OPTIONS_MAX_CPUS];
	char cpus[256];

	main_clock(e);
	run_buffer_place(e->o.buffer_offset, e->o.xfer, &e->res);
	int nallowed = topo_allowed(e->topo, allowed, OPTIONS_MAX_CPUS);
	cpulist_format(allowed, nallowed > 0 ? (size_t)nallowed : 0, cpus, sizeof(cpus));
	int rc = views_info(&e->res, rep, cpus, (enum format)e->o.format, stdout);
	return main_finish(e, rc ? OUTCOME_FAILED : OUTCOME_OK);
}

static int main_info(struct main_env *e)
{
	const struct options *o = &e->o;
	char why[1024];
	enum outcome out;

	if ((out = main_node(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	if ((out = main_threads(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	if (o->dir) {
		/* --dir may hang: opened and listed in a child, within a deadline. */
		static struct inventory_report rep;
		snprintf(e->res.dir, sizeof(e->res.dir), "%s", o->dir);
		stop_install();
		const struct inventory_dir_hooks hooks = {main_check_dir, main_child_release, e};
		out = inventory_report_take(&hooks, &e->res, INVENTORY_DEADLINE_S, &stop_signal,
					    &rep);
		if (out != OUTCOME_OK)
			return main_fail(e, out,
					 out < OUTCOME_INTERRUPTED_INT ? rep.why
					 : stop_signal == SIGTERM      ? "interrupted by SIGTERM"
								       : "interrupted by SIGINT");
		if (rep.answered) {
			snprintf(e->res.dir, sizeof(e->res.dir), "%s", rep.dir);
			e->res.fs_ok = rep.fs_ok;
			e->res.fs = rep.fs;
		}
		return main_info_print(e, &rep);
	}
	return main_info_print(e, NULL);
}

static int main_check(struct main_env *e)
{
	char why[1024];
	enum outcome out;

	if ((out = main_node(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	if (e->o.health)
		return main_finish(e, health_check(&e->o, e->res.node));
	if ((out = main_threads(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	if (!e->o.dir)
		return main_fail(e, OUTCOME_USAGE,
				 "no working directory: give --dir DIR or set STAGEBENCH_DIR");
	main_clock(e);
	stop_install();
	const struct inventory_dir_hooks hooks = {main_check_dir, main_child_release, e};
	out = check_node(&e->o, e->topo, &e->res, &hooks);
	return main_finish(e, out);
}

/* `clock`: this node's clock answered on stdout for each token on stdin. */
static int main_clock_serve(struct main_env *e)
{
	char why[1024];
	enum outcome out;

	if ((out = main_node(e, why, sizeof(why))) != OUTCOME_OK)
		return main_fail(e, out, why);
	main_clock(e);
	return main_finish(e, clockcmd_serve(&e->res, STDIN_FILENO, STDOUT_FILENO));
}

static int main_command(int argc, char **argv)
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
	if (e.o.cmd != CMD_LIST && output_fds_check(OUTPUT_FDS_NEEDED, why, sizeof(why)) != 0) {
		log_err("%s", why);
		return outcome_exit_code(OUTCOME_PRECONDITION);
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
	case CMD_CLOCK:
		return main_clock_serve(&e);
	case CMD_STATUS:
		return outcome_exit_code(armctl_status(&e.o));
	case CMD_STOP:
		return outcome_exit_code(armctl_stop(&e.o));
	default:
		return main_usage("no command given");
	}
}

int main(int argc, char **argv)
{
	output_stdout_open();
	return output_stdout_close(main_command(argc, argv));
}
