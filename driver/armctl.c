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
#include "driver/views.h"
#include "platform/clock.h"
#include "util/json.h"
#include "util/log.h"

#define ARMCTL_POLL_S 0.05

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

/* --format csv: a header and one row of the JSON's fields; empty where one does not apply. */
static void armctl_print_csv(const struct arm_state *st, bool alive, FILE *f)
{
	fprintf(f, "status,recorded_status,pid,alive,start_time,node,run_tag,start_at,interval,"
		   "parts,exit_code,updated_at,summary,log,error,reason\n");
	views_csv_field(f, armctl_shown(st, alive), ',');
	views_csv_field(f, st->status, ',');
	fprintf(f, "%ld,%s,%llu,", st->pid, alive ? "true" : "false",
		(unsigned long long)st->start_time);
	views_csv_field(f, st->node, ',');
	views_csv_field(f, st->run_tag, ',');
	if (st->start_at > 0)
		fprintf(f, "%.6f", st->start_at);
	fputc(',', f);
	if (st->interval > 0)
		fprintf(f, "%.6f", st->interval);
	fprintf(f, ",%lu,", st->parts);
	if (st->exit_code >= 0)
		fprintf(f, "%d", st->exit_code);
	fprintf(f, ",%.6f,", st->updated_at);
	views_csv_field(f, st->summary, ',');
	views_csv_field(f, st->log, ',');
	views_csv_field(f, st->error, ',');
	views_csv_field(f, st->reason, '\n');
}

static void armctl_print(const struct arm_state *st, bool alive, const char *why,
			 enum format format, FILE *f)
{
	if (format == FORMAT_CSV) {
		armctl_print_csv(st, alive, f);
		return;
	}
	if (format == FORMAT_JSON) {
		struct json j;
		json_init(&j, f, false); /* one line, whatever the launcher's round reads */
		json_object_begin(&j);
		json_kv_string(&j, "schema", "stagebench.state/1");
		json_kv_string(&j, "status", armctl_shown(st, alive));
		json_kv_string(&j, "recorded_status", st->status);
		json_kv_int(&j, "pid", st->pid);
		json_kv_bool(&j, "alive", alive);
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
		json_object_end(&j);
		json_finish(&j);
		return;
	}
	fprintf(f, "status:   %s\n", armctl_shown(st, alive));
	fprintf(f, "pid:      %ld (%s)\n", st->pid,
		alive			       ? "running"
		: arm_status_final(st->status) ? "ended"
					       : why);
	fprintf(f, "node:     %s, run %s, %lu parts\n", st->node, st->run_tag, st->parts);
	if (st->start_at > 0)
		fprintf(f, "start at: %.3f (%+.3f s from now)\n", st->start_at,
			st->start_at - clock_wall());
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
	close(dirfd);
	bool alive = armctl_is_ours(&st, why, sizeof(why));
	armctl_print(&st, alive, why, o->format, stdout);
	if (fflush(stdout) != 0)
		return OUTCOME_FAILED;
	return o->clock ? armctl_clock(&st) : OUTCOME_OK;
}

/* After the signal: until the state is final or the process is gone, at most wait_s. */
static bool armctl_wait(int dirfd, struct arm_state *st, double wait_s)
{
	double until = clock_wall() + wait_s;
	char why[256];

	for (;;) {
		struct arm_state now;
		if (armctl_parse(dirfd, &now) == 0)
			*st = now;
		if (arm_status_final(st->status))
			return true;
		if (!armctl_is_ours(st, why, sizeof(why)) || clock_wall() >= until)
			return false;
		clock_wait_until(clock_wall() + ARMCTL_POLL_S, 0.0, NULL);
	}
}

enum outcome armctl_stop(const struct options *o)
{
	const char *dir = o->tests[0];
	int sig = o->signal == STOP_SIG_TERM ? SIGTERM : SIGINT;
	struct arm_state st;
	char why[1024] = "";
	int dirfd = -1;
	enum outcome out = OUTCOME_OK;

	if (armctl_read(dir, &dirfd, &st, why, sizeof(why))) {
		log_err("%s", why);
		return OUTCOME_PRECONDITION;
	}
	if (arm_status_final(st.status)) {
		printf("stagebench: the run in '%s' already ended: %s, summary %s\n", dir,
		       st.status, st.summary);
		goto out;
	}
	if (!armctl_is_ours(&st, why, sizeof(why))) {
		log_err("not signalling the run in '%s' (status %s): %s", dir, st.status, why);
		out = OUTCOME_PRECONDITION;
		goto out;
	}
	if (kill((pid_t)st.pid, sig) != 0) {
		log_err("cannot signal process %ld: %s", st.pid, strerror(errno));
		out = OUTCOME_FAILED;
		goto out;
	}
	if (!armctl_wait(dirfd, &st, o->wait)) {
		log_err("the run in '%s' (pid %ld) did not end with a summary within %.1f s after "
			"SIG%s: status %s",
			dir, st.pid, o->wait, sig == SIGINT ? "INT" : "TERM", st.status);
		out = OUTCOME_FAILED;
		goto out;
	}
	printf("stagebench: stopped pid %ld: %s (exit %d), summary %s\n", st.pid, st.status,
	       st.exit_code, st.summary);
out:
	close(dirfd);
	return out;
}
