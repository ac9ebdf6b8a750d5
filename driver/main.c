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
#include "driver/cmdenv.h"
#include "driver/health.h"
#include "driver/clockcmd.h"
#include "driver/inventory.h"
#include "driver/listcmd.h"
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
#include "driver/summary_file.h"
#include "driver/views.h"
#include "platform/fsinfo.h"
#include "util/cpulist.h"
#include "util/log.h"
#include "util/size.h"

#define MAIN_MAX_AHEAD_S 86400.0

static int main_usage(const char *why)
{
	log_err("%s", why);
	return outcome_exit_code(OUTCOME_USAGE);
}

/* Why the summary could not be written, for an armed run's state ("" when it was). */
static char main_out_error[PATH_MAX + 128];
static enum reason main_out_reason;

/* The summary to --out, if given: 0 or -errno, said on stderr. */
static int main_write_out(struct cmdenv *e)
{
	int rc = e->o.out ? summary_file_write(&e->res, &e->plan, e->o.out, e->o.force) : 0;

	if (rc) {
		snprintf(main_out_error, sizeof(main_out_error),
			 "cannot write the summary to '%s': %s", e->o.out, strerror(-rc));
		main_out_reason =
		    rc == -ENOSPC || rc == -EDQUOT ? REASON_NO_SPACE : REASON_IO_ERROR;
		log_err("%s", main_out_error);
	}
	return rc;
}

/* The reason of a set-up step that failed with rc: no_space for a full disk or quota. */
static enum reason main_reason_of(int rc, enum reason otherwise)
{
	return rc == -ENOSPC || rc == -EDQUOT ? REASON_NO_SPACE : otherwise;
}

/*
 * A failure of an armed run before --out is known to be writable: said, and in its state
 * (which the state directory may still take), with its reason.
 */
static int main_arm_fail(struct cmdenv *e, enum outcome out, enum reason reason, const char *why)
{
	log_err("%s", why);
	arm_identify(&e->arm, e->o.out, e->res.node, e->res.run_tag);
	arm_end(&e->arm, out, why, reason);
	return cmdenv_finish(e, out);
}

/*
 * A failure of `run` once --out is known to be writable: the summary is still written, with
 * the error and no results, so that a collector sees why this node has none; an armed run
 * (--detach) also leaves its state file, failed with the error and its reason, for `status`.
 */
static int main_run_fail(struct cmdenv *e, enum outcome out, enum reason reason, const char *why)
{
	if (out == OUTCOME_USAGE)
		return cmdenv_fail(e, out, why);
	note_error(&e->res, reason, "%s", why);
	e->res.outcome = out;
	main_write_out(e);
	if (e->o.detach && !e->o.dry_run) {
		arm_identify(&e->arm, e->o.out, e->res.node, e->res.run_tag);
		e->arm.st.start_at = e->res.start_at;
		arm_end(&e->arm, out, why, reason);
	}
	return cmdenv_finish(e, out);
}

/* The first start instant: not more than a day away, not missed unless late is allowed. */
static enum outcome main_start(struct cmdenv *e, double now, char *why, size_t whylen)
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
static enum outcome main_report(struct cmdenv *e, enum outcome out)
{
	const struct options *o = &e->o;

	e->res.outcome = out;
	if (o->format == FORMAT_JSON)
		summary_json(&e->res, &e->plan, stdout, true);
	else if (o->format == FORMAT_CSV)
		summary_csv(&e->res, stdout);
	else
		summary_text(&e->res, stdout);
	fflush(stdout);
	return main_write_out(e) ? outcome_worse(out, OUTCOME_FAILED) : out;
}

/* The clock read: false when it is not NTP-synchronized and --require-ntp refuses that. */
static bool main_run_clock(struct cmdenv *e)
{
	cmdenv_clock(e);
	if (e->res.ntp_ok && e->res.ntp.synchronized)
		return true;
	if (e->o.require_ntp)
		return false;
	/* In the summary's warnings too, not only on stderr: the collector reads them. */
	note_warning(&e->res,
		     "clock not NTP-synchronized (maxerror %ld us): start instants across "
		     "nodes may disagree",
		     e->res.ntp.maxerror_us);
	return true;
}

static int main_run(struct cmdenv *e)
{
	const struct options *o = &e->o;
	const struct plan_run *r = &e->plan.run;
	struct run_env env;
	char why[1024], missed[256];
	enum outcome out;
	double now = clock_wall();

	e->res.started_at = now;
	if (plan_build(o, &e->plan, why, sizeof(why)) ||
	    (o->schedule && schedule_apply(o, e->schedule, &e->plan, why, sizeof(why))))
		return cmdenv_fail(e, OUTCOME_USAGE, why);
	if ((out = cmdenv_node(e, why, sizeof(why))) != OUTCOME_OK)
		return cmdenv_fail(e, out, why);
	cmdenv_exe(e);
	/* A start refused outright is bad usage; a missed one is recorded once --out is known. */
	enum outcome start = main_start(e, now, missed, sizeof(missed));
	if (start == OUTCOME_USAGE)
		return cmdenv_fail(e, start, missed);
	/* --detach STATE_DIR: checked (or created) now; the summary goes there unless --out. */
	int rc = o->detach && !o->dry_run
		     ? arm_open(&e->arm, o->detach, &e->o.out, why, sizeof(why))
		     : 0;
	if (rc)
		return cmdenv_fail(e, rc == -EINVAL ? OUTCOME_USAGE : OUTCOME_PRECONDITION, why);
	if (o->out && (rc = summary_file_check_out(o->out, o->force, why, sizeof(why))) != 0) {
		enum outcome refused = faccessat(AT_FDCWD, o->out, F_OK, AT_SYMLINK_NOFOLLOW) == 0
					   ? OUTCOME_USAGE
					   : OUTCOME_PRECONDITION;
		if (o->detach && !o->dry_run)
			return main_arm_fail(e, refused,
					     refused == OUTCOME_USAGE
						 ? REASON_USAGE
						 : main_reason_of(rc, REASON_SETUP_FAILED),
					     why);
		return cmdenv_fail(e, refused, why);
	}
	if (start != OUTCOME_OK)
		return main_run_fail(e, start, REASON_START_MISSED, missed);
	if ((out = cmdenv_threads(e, why, sizeof(why))) != OUTCOME_OK)
		return main_run_fail(e, out, REASON_SETUP_FAILED, why);
	if ((out = cmdenv_dir(e, !o->dry_run, why, sizeof(why))) != OUTCOME_OK)
		return main_run_fail(e, out, REASON_SETUP_FAILED, why);
	if (!main_run_clock(e))
		return main_run_fail(
		    e, OUTCOME_PRECONDITION, REASON_NTP_REQUIRED,
		    "the clock is not NTP-synchronized and --require-ntp was given");
	e->res.seed = r->seed;
	if (o->dry_run) {
		cmdenv_dry_run(e);
		return cmdenv_finish(e, OUTCOME_OK);
	}
	/*
	 * One run per node, from before anything is created in --dir: refused (busy) with the
	 * holder named, in the state when armed.
	 */
	enum reason reason = REASON_NONE;
	if ((out = cmdenv_lock(e, "run", o->detach ? "arming" : "running", &reason, why,
			       sizeof(why))) != OUTCOME_OK)
		return main_run_fail(e, out, reason, why);
	if ((out = cmdenv_preflight(e, why, sizeof(why))) != OUTCOME_OK)
		return main_run_fail(e, out, REASON_NO_SPACE, why);

	memset(&env, 0, sizeof(env));
	if (o->detach) {
		int code = arm_detach(&e->arm, o->out, e->res.node, e->res.run_tag,
				      r->has_interval ? r->interval : 0.0,
				      (unsigned long)((size_t)r->repeat * e->plan.nparts),
				      o->set_lease ? o->lease : 0.0);
		if (code >= 0) {
			cmdenv_finish(e, OUTCOME_OK); /* the detached process holds the lock */
			return code;
		}
		if (e->arm.state_rc)
			return main_run_fail(e, OUTCOME_PRECONDITION,
					     main_reason_of(e->arm.state_rc, REASON_SETUP_FAILED),
					     e->arm.why);
		cmdenv_lock_note(e, "armed");
		env.armed = arm_ready;
		env.watch = arm_watch;
		env.hook_arg = &e->arm;
	}
	env.topo = e->topo;
	env.dirfd = e->dirfd;
	env.progress = o->progress || (!o->no_progress && !o->quiet && isatty(STDERR_FILENO));
	stop_install();
	stop_keep_summary();
	out = run_execute(&e->plan, &env, &e->res);
	/* Said before the summaries, so that the JSON's errors say it too. */
	if (out >= OUTCOME_INTERRUPTED_INT)
		note_error(&e->res, REASON_INTERRUPTED, "interrupted by %s",
			   stop_signal_seen() == SIGTERM ? "SIGTERM" : "SIGINT");
	/* From here on a second signal waits for the summary (no temporary file is left). */
	stop_hold(true);
	out = main_report(e, out);
	/* The state says the run's first error; a summary that could not be written first. */
	if (o->detach && main_out_error[0])
		arm_end(&e->arm, out, main_out_error, main_out_reason);
	else if (o->detach)
		arm_end(&e->arm, out, e->res.nerrors ? e->res.errors[0] : NULL,
			e->res.nerrors ? e->res.error_reasons[0] : REASON_NONE);
	return cmdenv_finish(e, out);
}

static int main_prepare(struct cmdenv *e)
{
	struct options *o = &e->o;
	char why[1024];
	enum outcome out = OUTCOME_OK;

	if (plan_build(o, &e->plan, why, sizeof(why)))
		return cmdenv_fail(e, OUTCOME_USAGE, why);
	if ((out = cmdenv_node(e, why, sizeof(why))) != OUTCOME_OK)
		return cmdenv_fail(e, out, why);
	if ((out = cmdenv_threads(e, why, sizeof(why))) != OUTCOME_OK)
		return cmdenv_fail(e, out, why);
	if ((out = cmdenv_dir(e, !o->dry_run, why, sizeof(why))) != OUTCOME_OK)
		return cmdenv_fail(e, out, why);
	if (o->dry_run) {
		cmdenv_dry_run(e);
		return cmdenv_finish(e, OUTCOME_OK);
	}
	enum reason reason;
	if ((out = cmdenv_lock(e, "prepare", "preparing", &reason, why, sizeof(why))) != OUTCOME_OK)
		return cmdenv_fail(e, out, why);
	if ((out = cmdenv_preflight(e, why, sizeof(why))) != OUTCOME_OK)
		return cmdenv_fail(e, out, why);
	stop_install();
	out = prepare_command(&e->plan, e->dirfd, e->res.dir, (unsigned)e->res.tplan.nslots,
			      o->force, e->res.run_id);
	return cmdenv_finish(e, out);
}

static int main_clean(struct cmdenv *e)
{
	const struct options *o = &e->o;
	char why[1024];
	enum outcome out;

	if (plan_build(o, &e->plan, why, sizeof(why)))
		return cmdenv_fail(e, OUTCOME_USAGE, why);
	/* "clean 2" removes test 2's files of every scale; all parts of a test, whatever named. */
	if ((out = cmdenv_dir(e, !o->dry_run, why, sizeof(why))) != OUTCOME_OK)
		return cmdenv_fail(e, out, why);
	return cmdenv_finish(e, inventory_clean(&e->plan, e->dirfd, e->res.dir, o->dry_run));
}

static int main_list(struct cmdenv *e)
{
	int rc = listcmd_print(e->o.scale, e->o.format, stdout);

	return cmdenv_finish(e, rc ? OUTCOME_FAILED : OUTCOME_OK);
}

static int main_info_print(struct cmdenv *e, const struct inventory_report *rep)
{
	static unsigned allowed[OPTIONS_MAX_CPUS];
	static char cpus[VIEWS_CPULIST_MAX];

	cmdenv_clock(e);
	run_buffer_place(e->o.buffer_offset, e->o.xfer, &e->res);
	int nallowed = topo_allowed(e->topo, allowed, OPTIONS_MAX_CPUS);
	cpulist_format(allowed, nallowed > 0 ? (size_t)nallowed : 0, cpus, sizeof(cpus));
	int rc = views_info(&e->res, rep, cpus, e->o.format, e->o.compact, stdout);
	return cmdenv_finish(e, rc ? OUTCOME_FAILED : OUTCOME_OK);
}

static int main_info(struct cmdenv *e)
{
	const struct options *o = &e->o;
	char why[1024];
	enum outcome out;

	if ((out = cmdenv_node(e, why, sizeof(why))) != OUTCOME_OK)
		return cmdenv_fail(e, out, why);
	if ((out = cmdenv_threads(e, why, sizeof(why))) != OUTCOME_OK)
		return cmdenv_fail(e, out, why);
	if (o->dir) {
		/* --dir may hang: opened and listed in a child, within a deadline. */
		static struct inventory_report rep;
		snprintf(e->res.dir, sizeof(e->res.dir), "%s", o->dir);
		stop_install();
		const struct inventory_dir_hooks hooks = {cmdenv_check_dir, cmdenv_child_release,
							  e};
		out = inventory_report_take(&hooks, &e->res,
					    cmdenv_hung_dir_deadline(INVENTORY_DEADLINE_S),
					    &stop_signal, &rep);
		if (out != OUTCOME_OK)
			return cmdenv_fail(e, out,
					   out < OUTCOME_INTERRUPTED_INT ? rep.why
					   : stop_signal == SIGTERM	 ? "interrupted by SIGTERM"
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

static int main_check(struct cmdenv *e)
{
	char why[1024];
	enum outcome out;

	if ((out = cmdenv_node(e, why, sizeof(why))) != OUTCOME_OK)
		return cmdenv_fail(e, out, why);
	if (e->o.health) {
		/* the results filesystem may hang: read in a child, within a deadline */
		stop_install();
		return cmdenv_finish(e, health_check(&e->o, e->res.node,
						     cmdenv_hung_dir_deadline(HEALTH_DEADLINE_S)));
	}
	if ((out = cmdenv_threads(e, why, sizeof(why))) != OUTCOME_OK)
		return cmdenv_fail(e, out, why);
	if (!e->o.dir)
		return cmdenv_fail(e, OUTCOME_USAGE,
				   "no working directory: give --dir DIR or set STAGEBENCH_DIR");
	cmdenv_clock(e);
	stop_install();
	const struct inventory_dir_hooks hooks = {cmdenv_check_dir, cmdenv_child_release, e};
	out =
	    check_node(&e->o, e->topo, &e->res, &hooks, cmdenv_hung_dir_deadline(CHECK_DEADLINE_S));
	return cmdenv_finish(e, out);
}

/* `clock`: this node's clock answered on stdout for each token on stdin. */
static int main_clock_serve(struct cmdenv *e)
{
	char why[1024];
	enum outcome out;

	if ((out = cmdenv_node(e, why, sizeof(why))) != OUTCOME_OK)
		return cmdenv_fail(e, out, why);
	cmdenv_clock(e);
	return cmdenv_finish(e, clockcmd_serve(&e->res, STDIN_FILENO, STDOUT_FILENO));
}

static int main_command(int argc, char **argv)
{
	static struct cmdenv e;
	char why[1024];

	e.dirfd = -1;
	runlock_init(&e.lock);
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
