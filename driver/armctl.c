/* SPDX-License-Identifier: MIT */
/*
 * `status` and `stop` of an armed run: read STATE_DIR/state (after the same checks on the
 * directory as when it was armed), tell whether its pid is still that run's process, and
 * signal it only when it is.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/arm.h"
#include "driver/armctl.h"
#include "driver/clockcmd.h"
#include "driver/reason.h"
#include "driver/views.h"
#include "platform/clock.h"
#include "util/json.h"
#include "util/log.h"

#define ARMCTL_POLL_S 0.05
/* How long --renew waits for the state directory's lease lock (the run holds it briefly). */
#define ARMCTL_LEASE_LOCK_S 2.0
/* How long stop --kill waits for a killed process to be gone (not in D state). */
#define ARMCTL_KILL_WAIT_S 5.0

/* One "key value" line into st; unknown keys are ignored (a later version may add some). */
static void armctl_field(struct arm_state *st, const char *key, const char *v)
{
	if (strcmp(key, "pid") == 0)
		st->pid = strtol(v, NULL, 10);
	else if (strcmp(key, "start_time") == 0)
		st->start_time = strtoull(v, NULL, 10);
	else if (strcmp(key, "status") == 0)
		snprintf(st->status, sizeof(st->status), "%s", v);
	else if (strcmp(key, "node") == 0)
		snprintf(st->node, sizeof(st->node), "%s", v);
	else if (strcmp(key, "run_tag") == 0)
		snprintf(st->run_tag, sizeof(st->run_tag), "%s", v);
	else if (strcmp(key, "start_at") == 0)
		st->start_at = strtod(v, NULL);
	else if (strcmp(key, "interval") == 0)
		st->interval = strtod(v, NULL);
	else if (strcmp(key, "parts") == 0)
		st->parts = strtoul(v, NULL, 10);
	else if (strcmp(key, "exit_code") == 0)
		st->exit_code = (int)strtol(v, NULL, 10);
	else if (strcmp(key, "updated_at") == 0)
		st->updated_at = strtod(v, NULL);
	else if (strcmp(key, "summary") == 0)
		snprintf(st->summary, sizeof(st->summary), "%s", v);
	else if (strcmp(key, "log") == 0)
		snprintf(st->log, sizeof(st->log), "%s", v);
	else if (strcmp(key, "error") == 0)
		snprintf(st->error, sizeof(st->error), "%s", v);
	else if (strcmp(key, "reason") == 0)
		snprintf(st->reason, sizeof(st->reason), "%s", v);
	else if (strcmp(key, "lease_s") == 0)
		st->lease_s = strtod(v, NULL);
	else if (strcmp(key, "lease_remaining_s") == 0)
		st->lease_remaining_s = strtod(v, NULL);
	else if (strcmp(key, "lease_renewed_at") == 0)
		st->lease_renewed_at = strtod(v, NULL);
	else if (strcmp(key, "lease_renewals") == 0)
		st->lease_renewals = strtoull(v, NULL, 10);
}

static int armctl_parse(int dirfd, struct arm_state *st)
{
	char line[PATH_MAX + 64];
	bool schema = false;
	int fd = openat(dirfd, ARM_STATE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	FILE *f;

	if (fd < 0 || !(f = fdopen(fd, "r"))) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		return -err;
	}
	memset(st, 0, sizeof(*st));
	st->exit_code = -1;
	st->lease_remaining_s = -1.0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		if (strcmp(line, "schema") == 0)
			schema = strcmp(sp + 1, "stagebench.state/1") == 0;
		else
			armctl_field(st, line, sp + 1);
	}
	fclose(f);
	return schema && st->pid > 0 && st->status[0] ? 0 : -EINVAL;
}

/*
 * The state as the file holds it now (kept as it was when it cannot be read): read again for
 * a run whose process is found gone after its state was read, which may have written its
 * final state and ended between the two.
 */
static void armctl_reread(int dirfd, struct arm_state *st)
{
	struct arm_state now;

	if (armctl_parse(dirfd, &now) == 0)
		*st = now;
}

/* Open an existing STATE_DIR (the checks of arm_open) and read its state. */
static int armctl_read(const char *dir, int *dirfd, struct arm_state *st, char *why, size_t whylen)
{
	int rc = arm_open_dir(dir, false, dirfd, why, whylen);

	if (rc)
		return rc;
	rc = armctl_parse(*dirfd, st);
	if (rc) {
		snprintf(why, whylen, "'%s/" ARM_STATE "': %s", dir,
			 rc == -EINVAL ? "not a stagebench state file" : strerror(-rc));
		close(*dirfd);
		*dirfd = -1;
	}
	return rc;
}

/* The executable's name without a " (deleted)" that an upgrade in place leaves. */
static bool armctl_exe_is_stagebench(long pid, char *exe, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
	n = readlink(path, exe, len - 1);
	if (n < 0) {
		snprintf(exe, len, "unreadable: %s", strerror(errno));
		return false;
	}
	exe[n] = '\0';
	char *del = strstr(exe, " (deleted)");
	size_t end = del && del[10] == '\0' ? (size_t)(del - exe) : (size_t)n;
	const char *base = exe;
	for (size_t i = 0; i < end; i++)
		if (exe[i] == '/')
			base = exe + i + 1;
	return (size_t)(exe + end - base) == strlen("stagebench") &&
	       strncmp(base, "stagebench", strlen("stagebench")) == 0;
}

/*
 * Whether pid is still the armed process of st: same start time, owned by this user, and
 * running a stagebench binary. When not, why says which check failed.
 */
static bool armctl_is_ours(const struct arm_state *st, char *why, size_t whylen)
{
	unsigned long long ticks;
	char path[64], exe[PATH_MAX];
	struct stat pst;
	int rc = arm_proc_start_time(st->pid, &ticks);

	if (rc) {
		snprintf(why, whylen, "process %ld is gone", st->pid);
		return false;
	}
	if (ticks != st->start_time) {
		snprintf(why, whylen,
			 "process %ld started at tick %llu, not at %llu: it is another process",
			 st->pid, ticks, st->start_time);
		return false;
	}
	snprintf(path, sizeof(path), "/proc/%ld", st->pid);
	if (stat(path, &pst) != 0 || pst.st_uid != geteuid()) {
		snprintf(why, whylen, "process %ld is not this user's", st->pid);
		return false;
	}
	if (!armctl_exe_is_stagebench(st->pid, exe, sizeof(exe))) {
		snprintf(why, whylen, "process %ld runs '%s', not stagebench", st->pid, exe);
		return false;
	}
	return true;
}

/* The status to show: the recorded one, or "lost" when the process ended without a word. */
static const char *armctl_shown(const struct arm_state *st, bool alive)
{
	return arm_status_final(st->status) || alive ? st->status : "lost";
}

/* A /proc state letter in words. */
static const char *armctl_state_word(char s)
{
	switch (s) {
	case 'R':
		return "running";
	case 'S':
		return "sleeping";
	case 'D':
		return "uninterruptible sleep";
	case 'T':
		return "stopped";
	case 't':
		return "stopped by a tracer";
	case 'Z':
		return "zombie";
	case 'X':
		return "dead";
	case 'I':
		return "idle";
	default:
		return "unknown";
	}
}

/*
 * The run's process as /proc says: "gone" (no such pid, or another process has it now),
 * "zombie" (ended, not yet reaped), "stopped" (SIGSTOP, a suspended job: T or t), else
 * "running" (R, S, D, I); its state letter into *code (0 when gone).
 */
static const char *armctl_process(const struct arm_state *st, char *code)
{
	unsigned long long ticks;
	char s = 0, why[256];

	*code = 0;
	if (arm_proc_stat(st->pid, &s, &ticks) != 0 || ticks != st->start_time)
		return "gone";
	*code = s;
	if (s == 'Z' || s == 'X')
		return "zombie";
	if (!armctl_is_ours(st, why, sizeof(why))) {
		*code = 0;
		return "gone";
	}
	return s == 'T' || s == 't' ? "stopped" : "running";
}

/* What status shows beside the state file: whether its process lives, its lease, a renewal. */
struct armctl_view {
	bool alive;
	char why[512]; /* not alive: why not */
	char process[16];
	char state; /* its /proc state letter, 0 gone */
	/* The lease (has_lease: the run has one) as its file says now, else as the state said. */
	bool has_lease;
	double lease_s;
	double remaining_s; /* < 0: not started yet */
	double renewed_at;  /* 0: none yet */
	unsigned long long renewals;
	int renewed; /* --renew: 1 renewed, 0 not (renew_error says why); -1 not asked */
	bool lapsed; /* --renew found the lease lapsed */
	char renew_error[256];
};

/* The lease as its file says now (the run rewrites it when armed, each renewal after). */
static void armctl_lease(int dirfd, const struct arm_state *st, struct armctl_view *v)
{
	struct lease l;

	v->has_lease = st->lease_s > 0;
	v->lease_s = st->lease_s;
	v->remaining_s = st->lease_remaining_s;
	v->renewed_at = st->lease_renewed_at;
	v->renewals = st->lease_renewals;
	if (!v->has_lease || lease_read(dirfd, &l) != 0)
		return;
	v->lease_s = l.lease_s;
	v->remaining_s = lease_remaining_s(&l, lease_now_ns());
	v->renewed_at = l.renewed_at;
	v->renewals = l.renewals;
}

/*
 * --renew: one lease length from now, under the state directory's lock, unless the run has
 * none, has ended, is gone or its lease has lapsed (never revived: v->lapsed).
 */
static void armctl_renew(int dirfd, const struct arm_state *st, struct armctl_view *v)
{
	struct lease l;
	int rc;

	v->renewed = 0;
	if (!v->has_lease) {
		snprintf(v->renew_error, sizeof(v->renew_error),
			 "the run has no lease (armed without --lease)");
		return;
	}
	if (arm_status_final(st->status)) {
		snprintf(v->renew_error, sizeof(v->renew_error), "the run has ended (%s)",
			 st->status);
		return;
	}
	if (!v->alive) {
		snprintf(v->renew_error, sizeof(v->renew_error), "%s", v->why);
		return;
	}
	rc = lease_lock(dirfd, ARMCTL_LEASE_LOCK_S);
	if (rc) {
		snprintf(v->renew_error, sizeof(v->renew_error),
			 "the lease is being checked by the run: not renewed, try again");
		return;
	}
	rc = lease_renew(dirfd, &l);
	lease_unlock(dirfd);
	if (rc == 0) {
		v->renewed = 1;
		v->lease_s = l.lease_s;
		v->remaining_s = lease_remaining_s(&l, lease_now_ns());
		v->renewed_at = l.renewed_at;
		v->renewals = l.renewals;
	} else if (rc == -ETIME) {
		v->lapsed = true;
		v->remaining_s = 0;
		snprintf(
		    v->renew_error, sizeof(v->renew_error),
		    "the lease lapsed %.1f s ago: not renewed (a lapsed lease is never revived; "
		    "the run stops at its next safe point, orphaned)",
		    (double)(lease_now_ns() - l.deadline_ns) / 1e9);
	} else if (rc == -ENOENT) {
		snprintf(v->renew_error, sizeof(v->renew_error),
			 "the run is not armed yet: its lease starts once it is");
	} else {
		snprintf(v->renew_error, sizeof(v->renew_error), "cannot renew the lease: %s",
			 strerror(-rc));
	}
}

/* A number, or null when it does not apply. */
static void armctl_json_maybe(struct json *j, const char *key, bool applies, double v)
{
	json_key(j, key);
	if (applies)
		json_double(j, v);
	else
		json_null(j);
}

/* A CSV cell of a number: empty where it does not apply. */
static void armctl_csv_maybe(FILE *f, const char *fmt, bool applies, double v, char after)
{
	if (applies)
		fprintf(f, fmt, v);
	fputc(after, f);
}

/* --format csv: a header and one row of the JSON's fields; empty where one does not apply. */
static void armctl_print_csv(const struct arm_state *st, const struct armctl_view *v, FILE *f)
{
	fprintf(f, "status,recorded_status,pid,alive,process,start_time,node,run_tag,start_at,"
		   "interval,"
		   "parts,exit_code,updated_at,summary,log,error,reason,lease_s,lease_remaining_s,"
		   "lease_renewed_at,lease_renewals,renewed,renew_error\n");
	views_csv_field(f, armctl_shown(st, v->alive), ',');
	views_csv_field(f, st->status, ',');
	fprintf(f, "%ld,%s,%s,%llu,", st->pid, v->alive ? "true" : "false", v->process,
		(unsigned long long)st->start_time);
	views_csv_field(f, st->node, ',');
	views_csv_field(f, st->run_tag, ',');
	armctl_csv_maybe(f, "%.6f", st->start_at > 0, st->start_at, ',');
	armctl_csv_maybe(f, "%.6f", st->interval > 0, st->interval, ',');
	fprintf(f, "%lu,", st->parts);
	armctl_csv_maybe(f, "%.0f", st->exit_code >= 0, st->exit_code, ',');
	fprintf(f, "%.6f,", st->updated_at);
	views_csv_field(f, st->summary, ',');
	views_csv_field(f, st->log, ',');
	views_csv_field(f, st->error, ',');
	views_csv_field(f, st->reason, ',');
	armctl_csv_maybe(f, "%.6f", v->has_lease, v->lease_s, ',');
	armctl_csv_maybe(f, "%.6f", v->has_lease && v->remaining_s >= 0, v->remaining_s, ',');
	armctl_csv_maybe(f, "%.6f", v->has_lease && v->renewed_at > 0, v->renewed_at, ',');
	armctl_csv_maybe(f, "%.0f", v->has_lease, (double)v->renewals, ',');
	fprintf(f, "%s,", v->renewed < 0 ? "" : v->renewed ? "true" : "false");
	views_csv_field(f, v->renew_error, '\n');
}

static void armctl_print_json(const struct arm_state *st, const struct armctl_view *v, FILE *f)
{
	struct json j;

	json_init(&j, f, false); /* one line, whatever the launcher's round reads */
	json_object_begin(&j);
	json_kv_string(&j, "schema", "stagebench.state/1");
	json_kv_string(&j, "status", armctl_shown(st, v->alive));
	json_kv_string(&j, "recorded_status", st->status);
	json_kv_int(&j, "pid", st->pid);
	json_kv_bool(&j, "alive", v->alive);
	json_kv_string(&j, "process", v->process);
	json_kv_uint(&j, "start_time", st->start_time);
	json_kv_string(&j, "node", st->node);
	json_kv_string(&j, "run_tag", st->run_tag);
	json_kv_double(&j, "start_at", st->start_at);
	json_kv_double(&j, "interval", st->interval);
	json_kv_uint(&j, "parts", st->parts);
	json_key(&j, "exit_code");
	if (st->exit_code >= 0)
		json_int(&j, st->exit_code);
	else
		json_null(&j);
	json_kv_double(&j, "updated_at", st->updated_at);
	json_kv_string(&j, "summary", st->summary);
	json_kv_string(&j, "log", st->log);
	json_kv_string(&j, "error", st->error[0] ? st->error : NULL);
	json_kv_string(&j, "reason", st->reason[0] ? st->reason : NULL);
	armctl_json_maybe(&j, "lease_s", v->has_lease, v->lease_s);
	armctl_json_maybe(&j, "lease_remaining_s", v->has_lease && v->remaining_s >= 0,
			  v->remaining_s);
	armctl_json_maybe(&j, "lease_renewed_at", v->has_lease && v->renewed_at > 0, v->renewed_at);
	json_key(&j, "lease_renewals");
	if (v->has_lease)
		json_uint(&j, v->renewals);
	else
		json_null(&j);
	json_key(&j, "renewed");
	if (v->renewed >= 0)
		json_bool(&j, v->renewed);
	else
		json_null(&j);
	json_kv_string(&j, "renew_error", v->renew_error[0] ? v->renew_error : NULL);
	json_object_end(&j);
	json_finish(&j);
}

static void armctl_print(const struct arm_state *st, const struct armctl_view *v,
			 enum format format, FILE *f)
{
	if (format == FORMAT_CSV) {
		armctl_print_csv(st, v, f);
		return;
	}
	if (format == FORMAT_JSON) {
		armctl_print_json(st, v, f);
		return;
	}
	fprintf(f, "status:   %s\n", armctl_shown(st, v->alive));
	fprintf(f, "pid:      %ld (%s)\n", st->pid,
		v->alive && v->state		    ? armctl_state_word(v->state)
		: strcmp(v->process, "zombie") == 0 ? "ended, not yet reaped"
		: arm_status_final(st->status)	    ? "ended"
						    : v->why);
	fprintf(f, "node:     %s, run %s, %lu parts\n", st->node, st->run_tag, st->parts);
	if (st->start_at > 0)
		fprintf(f, "start at: %.3f (%+.3f s from now)\n", st->start_at,
			st->start_at - clock_wall());
	if (v->has_lease && v->remaining_s >= 0)
		fprintf(f, "lease:    %.0f s, %.1f s left (%llu renewal%s, the arming included)\n",
			v->lease_s, v->remaining_s, v->renewals, v->renewals == 1 ? "" : "s");
	else if (v->has_lease)
		fprintf(f, "lease:    %.0f s, from once the run is armed\n", v->lease_s);
	if (v->renewed >= 0)
		fprintf(f, "renewed:  %s%s\n", v->renewed ? "yes" : "no: ", v->renew_error);
	if (st->exit_code >= 0)
		fprintf(f, "exit:     %d\n", st->exit_code);
	fprintf(f, "summary:  %s\nlog:      %s\n", st->summary, st->log);
}

/*
 * --clock: after the state line, `stagebench clock` on the same connection (its header, then
 * one timestamp per token until end of input or its idle limit), for the node of the state.
 */
static enum outcome armctl_clock(const struct arm_state *st)
{
	static struct node_result res;

	memset(&res, 0, sizeof(res));
	snprintf(res.node, sizeof(res.node), "%s", st->node);
	res.ntp_ok = clock_ntp_read(&res.ntp) == 0;
	return clockcmd_serve(&res, STDIN_FILENO, STDOUT_FILENO);
}

enum outcome armctl_status(const struct options *o)
{
	struct arm_state st;
	char why[1024] = "";
	int dirfd = -1;

	if (armctl_read(o->tests[0], &dirfd, &st, why, sizeof(why))) {
		log_err("%s", why);
		return OUTCOME_PRECONDITION;
	}
	static struct armctl_view v;
	memset(&v, 0, sizeof(v));
	v.renewed = -1;
	v.alive = armctl_is_ours(&st, v.why, sizeof(v.why));
	if (!v.alive && !arm_status_final(st.status))
		armctl_reread(dirfd, &st);
	snprintf(v.process, sizeof(v.process), "%s", armctl_process(&st, &v.state));
	armctl_lease(dirfd, &st, &v);
	if (o->renew)
		armctl_renew(dirfd, &st, &v);
	close(dirfd);
	armctl_print(&st, &v, o->format, stdout);
	if (fflush(stdout) != 0)
		return OUTCOME_FAILED;
	enum outcome out = v.lapsed ? OUTCOME_PRECONDITION : OUTCOME_OK;
	return o->clock ? outcome_worse(out, armctl_clock(&st)) : out;
}

/* After the signal: until the state is final or the process is gone, at most wait_s. */
static bool armctl_wait(int dirfd, struct arm_state *st, double wait_s)
{
	double until = clock_wall() + wait_s;
	char why[256];

	for (;;) {
		armctl_reread(dirfd, st);
		if (arm_status_final(st->status))
			return true;
		if (!armctl_is_ours(st, why, sizeof(why))) {
			armctl_reread(dirfd, st);
			return arm_status_final(st->status);
		}
		if (clock_wall() >= until)
			return false;
		clock_wait_until(clock_wall() + ARMCTL_POLL_S, 0.0, NULL);
	}
}

/* What stop did and how the run ended: its one JSON line, its text. */
struct armctl_stopped {
	const char *dir;
	const struct arm_state *st; /* NULL: no state could be read */
	const char *signal;	    /* "SIGINT", "SIGTERM" */
	const char *sent[3];
	size_t nsent;
	char before[16];   /* the process before the signal */
	double waited_s;   /* from the signal to the end of the wait */
	const char *ended; /* already, summary, killed, lost, running, refused */
	char killed_state; /* its /proc state when SIGKILL was sent, 0 none */
	char process[16];  /* at the end */
	char error[1024];  /* "" when it ended as asked */
};

static void armctl_stop_json(const struct armctl_stopped *r, FILE *f)
{
	const struct arm_state *st = r->st;
	char state[2] = {r->killed_state, '\0'};
	struct json j;

	json_init(&j, f, false);
	json_object_begin(&j);
	json_kv_string(&j, "schema", "stagebench.stop/1");
	json_kv_string(&j, "dir", r->dir);
	json_key(&j, "pid");
	if (st)
		json_int(&j, st->pid);
	else
		json_null(&j);
	json_kv_string(&j, "signal", r->signal);
	json_key(&j, "sent");
	json_array_begin(&j);
	for (size_t i = 0; i < r->nsent; i++)
		json_string(&j, r->sent[i]);
	json_array_end(&j);
	json_kv_string(&j, "process_before", r->before[0] ? r->before : NULL);
	json_kv_double(&j, "waited_s", r->waited_s);
	json_kv_string(&j, "ended", r->ended);
	json_kv_string(&j, "status", st ? st->status : NULL);
	json_key(&j, "exit_code");
	if (st && st->exit_code >= 0)
		json_int(&j, st->exit_code);
	else
		json_null(&j);
	json_kv_string(&j, "reason", st && st->reason[0] ? st->reason : NULL);
	json_kv_string(&j, "summary", st ? st->summary : NULL);
	json_kv_bool(&j, "summary_written",
		     st && faccessat(AT_FDCWD, st->summary, F_OK, AT_SYMLINK_NOFOLLOW) == 0);
	json_kv_string(&j, "killed_state", r->killed_state ? state : NULL);
	json_kv_bool(&j, "gone",
		     strcmp(r->process, "gone") == 0 || strcmp(r->process, "zombie") == 0);
	json_kv_string(&j, "process", r->process[0] ? r->process : NULL);
	json_kv_string(&j, "error", r->error[0] ? r->error : NULL);
	json_object_end(&j);
	json_finish(&j);
}

/* The end of stop: its line or lines, and its outcome. */
static enum outcome armctl_stop_said(const struct armctl_stopped *r, enum format format,
				     enum outcome out)
{
	const struct arm_state *st = r->st;

	if (r->error[0])
		log_err("%s", r->error);
	if (format == FORMAT_JSON)
		armctl_stop_json(r, stdout);
	else if (strcmp(r->ended, "already") == 0)
		printf("stagebench: the run in '%s' already ended: %s, summary %s\n", r->dir,
		       st->status, st->summary);
	else if (strcmp(r->ended, "summary") == 0)
		printf("stagebench: stopped pid %ld: %s (exit %d), summary %s\n", st->pid,
		       st->status, st->exit_code, st->summary);
	else if (strcmp(r->ended, "killed") == 0)
		printf("stagebench: killed pid %ld: %s (exit %d), no summary; its process %s\n",
		       st->pid, st->status, st->exit_code,
		       strcmp(r->process, "gone") == 0 || strcmp(r->process, "zombie") == 0
			   ? "is gone"
			   : "is still there");
	return fflush(stdout) == 0 ? out : outcome_worse(out, OUTCOME_FAILED);
}

/* The run still there after --wait: SIGKILL, the wait for its end, the state made final. */
static void armctl_kill(int dirfd, struct arm_state *st, struct armctl_stopped *r)
{
	double until;
	char code = 0;

	armctl_process(st, &code);
	r->killed_state = code;
	if (kill((pid_t)st->pid, SIGKILL) != 0) {
		snprintf(r->error, sizeof(r->error), "cannot kill process %ld: %s", st->pid,
			 strerror(errno));
		r->ended = "running";
		return;
	}
	r->sent[r->nsent++] = "SIGKILL";
	until = clock_wall() + ARMCTL_KILL_WAIT_S;
	for (;;) {
		const char *p = armctl_process(st, &code);
		snprintf(r->process, sizeof(r->process), "%s", p);
		if (strcmp(p, "gone") == 0 || strcmp(p, "zombie") == 0 || clock_wall() >= until)
			break;
		clock_wait_until(clock_wall() + ARMCTL_POLL_S, 0.0, NULL);
	}
	bool gone = strcmp(r->process, "gone") == 0 || strcmp(r->process, "zombie") == 0;
	char still[160] = "";
	if (!gone)
		snprintf(
		    still, sizeof(still),
		    "; it is still there after %.0f s, in state %c (%s): it ends when the kernel "
		    "lets it",
		    ARMCTL_KILL_WAIT_S, code, armctl_state_word(code));
	/* It runs no more code of its own: the state it left is rewritten, final. */
	snprintf(st->error, sizeof(st->error),
		 "%s (and SIGCONT) did not end it within %.1f s: killed with SIGKILL, its process "
		 "then in state %c (%s)%s",
		 r->signal, r->waited_s, r->killed_state, armctl_state_word(r->killed_state),
		 still);
	snprintf(st->status, sizeof(st->status), "killed");
	snprintf(st->reason, sizeof(st->reason), "%s", reason_token(REASON_KILLED));
	st->exit_code = 128 + SIGKILL;
	st->updated_at = clock_wall();
	int rc = arm_state_write(dirfd, st);
	r->ended = "killed";
	snprintf(r->error, sizeof(r->error), "the run in '%s' (pid %ld): %s%s%s", r->dir, st->pid,
		 st->error, rc ? "; the state file could not be rewritten: " : "",
		 rc ? strerror(-rc) : "");
}

enum outcome armctl_stop(const struct options *o)
{
	const char *dir = o->tests[0];
	int sig = o->signal == STOP_SIG_TERM ? SIGTERM : SIGINT;
	static struct armctl_stopped r;
	static struct arm_state st;
	char why[1024] = "", code;
	int dirfd = -1;
	enum outcome out = OUTCOME_OK;

	memset(&r, 0, sizeof(r));
	r.dir = dir;
	r.signal = sig == SIGTERM ? "SIGTERM" : "SIGINT";
	r.ended = "refused";
	if (armctl_read(dir, &dirfd, &st, r.error, sizeof(r.error)))
		return armctl_stop_said(&r, o->format, OUTCOME_PRECONDITION);
	r.st = &st;
	snprintf(r.before, sizeof(r.before), "%s", armctl_process(&st, &code));
	snprintf(r.process, sizeof(r.process), "%s", r.before);
	if (arm_status_final(st.status)) {
		r.ended = "already";
		goto out;
	}
	if (!armctl_is_ours(&st, why, sizeof(why))) {
		snprintf(r.error, sizeof(r.error), "not signalling the run in '%s' (status %s): %s",
			 dir, st.status, why);
		out = OUTCOME_PRECONDITION;
		goto out;
	}
	/* A stopped (SIGSTOP, a suspended job) process acts on a signal once it runs again. */
	if (kill((pid_t)st.pid, sig) != 0) {
		snprintf(r.error, sizeof(r.error), "cannot signal process %ld: %s", st.pid,
			 strerror(errno));
		r.ended = "running";
		out = OUTCOME_FAILED;
		goto out;
	}
	r.sent[r.nsent++] = r.signal;
	if (kill((pid_t)st.pid, SIGCONT) == 0)
		r.sent[r.nsent++] = "SIGCONT";
	double t0 = clock_wall();
	bool final = armctl_wait(dirfd, &st, o->wait);
	r.waited_s = clock_wall() - t0;
	snprintf(r.process, sizeof(r.process), "%s", armctl_process(&st, &code));
	if (final) {
		r.ended = "summary";
		goto out;
	}
	out = OUTCOME_FAILED;
	if (strcmp(r.process, "gone") == 0 || strcmp(r.process, "zombie") == 0) {
		r.ended = "lost";
		snprintf(
		    r.error, sizeof(r.error),
		    "the run in '%s' (pid %ld) ended without a final state within %.1f s after "
		    "%s (killed with SIGKILL, or the node rebooted): status %s",
		    dir, st.pid, r.waited_s, r.signal, st.status);
	} else if (o->kill) {
		armctl_kill(dirfd, &st, &r);
	} else {
		r.ended = "running";
		snprintf(r.error, sizeof(r.error),
			 "the run in '%s' (pid %ld) did not end with a summary within %.1f s after "
			 "%s: status %s, its process %s (--kill kills it)",
			 dir, st.pid, o->wait, r.signal, st.status, r.process);
	}
out:
	close(dirfd);
	return armctl_stop_said(&r, o->format, out);
}
