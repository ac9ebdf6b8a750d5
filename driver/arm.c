/* SPDX-License-Identifier: MIT */
/*
 * Armed runs: the state directory, the detach from the launching connection, and the state
 * file that the detached process rewrites (atomically) at each change of its status.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "driver/arm.h"
#include "driver/stop.h"
#include "platform/clock.h"
#include "util/log.h"

/* The detached process says one line to the foreground: "armed" or "failed CODE ERROR". */
#define ARM_MSG_MAX 1200

bool arm_status_final(const char *status)
{
	return strcmp(status, "done") == 0 || strcmp(status, "failed") == 0 ||
	       strcmp(status, "orphaned") == 0 || strcmp(status, "interrupted") == 0 ||
	       strcmp(status, "killed") == 0;
}

/* A path made absolute against the working directory, for readers that run elsewhere. */
static void arm_absolute(const char *path, char *buf, size_t len)
{
	char cwd[PATH_MAX];

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		snprintf(buf, len, "%s", path);
	else
		snprintf(buf, len, "%s/%s", cwd, path);
}

/*
 * The checks on an open STATE_DIR: owned by us, no access for others. Called on the
 * descriptor, so what was checked is what is used.
 */
static int arm_check_dir(int fd, const char *dir, char *why, size_t whylen)
{
	struct stat st;

	if (fstat(fd, &st) != 0) {
		int err = errno;
		snprintf(why, whylen, "state directory '%s': %s", dir, strerror(err));
		return -err;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, whylen,
			 "state directory '%s' is owned by uid %ld, not by this user (uid %ld): "
			 "refusing it",
			 dir, (long)st.st_uid, (long)geteuid());
		return -EPERM;
	}
	if (st.st_mode & 077) {
		snprintf(why, whylen,
			 "state directory '%s' has mode %04o: it must be 0700 (no access for "
			 "others)",
			 dir, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* STATE_DIR, opened and checked: see arm.h. */
int arm_open_dir(const char *dir, bool create, int *dirfd, char *why, size_t whylen)
{
	int fd, err;

	if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
		err = errno;
		snprintf(why, whylen, "cannot create the state directory '%s': %s", dir,
			 strerror(err));
		return -err;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		struct stat st;
		bool link = lstat(dir, &st) == 0 && S_ISLNK(st.st_mode);
		snprintf(why, whylen, "state directory '%s': %s", dir,
			 link		  ? "is a symbolic link: refusing it"
			 : err == ENOTDIR ? "not a directory"
					  : strerror(err));
		return -(link ? ELOOP : err);
	}
	err = -arm_check_dir(fd, dir, why, whylen);
	if (err) {
		close(fd);
		return -err;
	}
	*dirfd = fd;
	return 0;
}

int arm_open(struct arm *a, const char *dir, const char **out, char *why, size_t whylen)
{
	int rc;

	memset(a, 0, sizeof(*a));
	a->dirfd = -1;
	a->tell_fd = -1;
	a->st.exit_code = -1;
	if (strlen(dir) >= sizeof(a->dir) - 32 || strchr(dir, '\n')) {
		snprintf(why, whylen,
			 "--detach: the state directory's path is too long or has a "
			 "line break");
		return -EINVAL;
	}
	rc = arm_open_dir(dir, true, &a->dirfd, why, whylen);
	if (rc)
		return rc;
	arm_absolute(dir, a->dir, sizeof(a->dir));
	if (faccessat(a->dirfd, ARM_STATE, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
	    faccessat(a->dirfd, ARM_LOG, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		snprintf(why, whylen,
			 "state directory '%s' already holds an armed run's state or log: give a "
			 "fresh one",
			 dir);
		close(a->dirfd);
		a->dirfd = -1;
		return -EEXIST;
	}
	if (!*out) {
		snprintf(a->out, sizeof(a->out), "%s/" ARM_OUT, a->dir);
		*out = a->out;
	}
	if (strchr(*out, '\n')) {
		snprintf(why, whylen, "--out: a path with a line break cannot be armed");
		return -EINVAL;
	}
	return 0;
}

int arm_proc_stat(long pid, char *state, unsigned long long *ticks)
{
	char path[64], buf[1024];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name (field 2) may hold spaces and parentheses: count from the last ')'. */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EINVAL;
	if (state)
		*state = p[2];
	p++;
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	return sscanf(p, " %llu", ticks) == 1 ? 0 : -EINVAL;
}

int arm_proc_start_time(long pid, unsigned long long *ticks)
{
	return arm_proc_stat(pid, NULL, ticks);
}

int arm_state_write(int dirfd, const struct arm_state *s)
{
	char tmp[64];
	FILE *f;
	int fd, rc = 0;

	names_state_temp(tmp, sizeof(tmp), (long)getpid());
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	fprintf(f,
		"schema stagebench.state/1\npid %ld\nstart_time %llu\nstatus %s\nnode %s\n"
		"run_tag %s\nstart_at %.6f\ninterval %.6f\nparts %lu\nexit_code %d\n"
		"updated_at %.6f\nsummary %s\nlog %s\n",
		s->pid, s->start_time, s->status, s->node, s->run_tag, s->start_at, s->interval,
		s->parts, s->exit_code, s->updated_at, s->summary, s->log);
	if (s->error[0])
		fprintf(f, "error %s\nreason %s\n", s->error, s->reason);
	if (s->lease_s > 0)
		fprintf(f, "lease_s %.6f\n", s->lease_s);
	if (s->lease_s > 0 && s->lease_remaining_s >= 0)
		fprintf(f, "lease_remaining_s %.6f\nlease_renewed_at %.6f\nlease_renewals %llu\n",
			s->lease_remaining_s, s->lease_renewed_at, s->lease_renewals);
	if (fclose(f) != 0)
		rc = -errno;
	if (!rc && renameat(dirfd, tmp, dirfd, ARM_STATE) != 0)
		rc = -errno;
	if (rc)
		unlinkat(dirfd, tmp, 0);
	return rc;
}

/*
 * Rewrite STATE_DIR/state: a new file beside it, renamed over it. A second signal waits. 0,
 * or -errno (said, and in a->why).
 */
static int arm_write_state(struct arm *a)
{
	int rc;

	a->st.updated_at = clock_wall();
	a->st.lease_remaining_s = -1.0;
	if (a->lease_on) {
		a->st.lease_remaining_s = lease_remaining_s(&a->lease, lease_now_ns());
		a->st.lease_renewed_at = a->lease.renewed_at;
		a->st.lease_renewals = (unsigned long long)a->lease.renewals;
	}
	stop_hold(true);
	rc = arm_state_write(a->dirfd, &a->st);
	if (rc) {
		snprintf(a->why, sizeof(a->why), "cannot write the state file in '%s': %s", a->dir,
			 strerror(-rc));
		log_err("%s", a->why);
	}
	stop_hold(false);
	return rc;
}

/* A halt of the run for a file of the state directory it cannot write (a full disk). */
static void arm_halt_write(struct arm *a, int rc, struct run_halt *h)
{
	bool full = rc == -ENOSPC || rc == -EDQUOT;

	memset(h, 0, sizeof(*h));
	h->out = full ? OUTCOME_PRECONDITION : OUTCOME_FAILED;
	h->reason = full ? REASON_NO_SPACE : REASON_SETUP_FAILED;
	h->status = PART_FAILED;
	h->rest = PART_SKIPPED;
	snprintf(h->error, sizeof(h->error), "%s", a->why);
	snprintf(h->stopped, sizeof(h->stopped), "%s", a->why);
	snprintf(h->not_started, sizeof(h->not_started), "not started: %s", a->why);
}

/* Tell the foreground one line, then let it go. */
static void arm_tell(struct arm *a, const char *msg)
{
	if (a->tell_fd < 0)
		return;
	ssize_t n = write(a->tell_fd, msg, strlen(msg));
	(void)n;
	close(a->tell_fd);
	a->tell_fd = -1;
}

/* A signal to the foreground while it waits: forwarded to the process being armed. */
static volatile sig_atomic_t arm_fg_signal;

static void arm_fg_on_signal(int sig)
{
	arm_fg_signal = sig;
}

/*
 * Read what the detached process says until it closes the pipe: "pid N" first, then its
 * last line. A SIGINT or SIGTERM that the foreground gets meanwhile (the launcher's Ctrl-C,
 * scancel) is forwarded to it, SIGHUP (the connection went) as SIGTERM: the run stops as
 * if signalled itself, and says so.
 */
static size_t arm_fg_read(int fd, char *msg, size_t max)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	size_t len = 0;
	long pid = 0;
	int pending = 0;

	msg[0] = '\0';
	while (len < max) {
		if (arm_fg_signal) {
			pending = arm_fg_signal == SIGHUP ? SIGTERM : arm_fg_signal;
			arm_fg_signal = 0;
		}
		if (pending && pid > 0) {
			kill((pid_t)pid, pending);
			pending = 0;
		}
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		ssize_t n = read(fd, msg + len, max - len);
		if (n == 0 || (n < 0 && errno != EINTR))
			break;
		if (n > 0)
			len += (size_t)n;
		msg[len] = '\0';
		if (!pid && strchr(msg, '\n') && sscanf(msg, "pid %ld", &pid) != 1)
			pid = -1;
	}
	return len;
}

/* The foreground: the detached process's last line, said here; returns the exit status. */
static int arm_foreground(struct arm *a, int fd, pid_t child)
{
	char buf[ARM_MSG_MAX + 1];
	int code, used = 0;

	waitpid(child, NULL, 0);
	stop_catch(arm_fg_on_signal, true);
	buf[arm_fg_read(fd, buf, ARM_MSG_MAX)] = '\0';
	close(fd);
	char *msg = strncmp(buf, "pid ", 4) == 0 ? buf + strcspn(buf, "\n") : buf;
	msg += *msg == '\n';
	msg[strcspn(msg, "\n")] = '\0';
	if (strncmp(msg, "armed ", 6) == 0) {
		printf("stagebench: armed: pid %s, state %s/" ARM_STATE "\n", msg + 6, a->dir);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if (sscanf(msg, "failed %d %n", &code, &used) == 1 && used > 0) {
		log_err("%s", msg + used);
		return code;
	}
	log_err("the armed run ended during its set-up without saying why: see '%s/" ARM_LOG "'",
		a->dir);
	return 1;
}

/* In the detached process: stdio to the log and /dev/null, out of the launcher's session. */
static int arm_daemon_stdio(struct arm *a)
{
	int log =
	    openat(a->dirfd, ARM_LOG, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND, 0600);
	int null = open("/dev/null", O_RDONLY);

	if (log < 0 || null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(log, STDOUT_FILENO) < 0 ||
	    dup2(log, STDERR_FILENO) < 0)
		return -errno;
	close(log);
	close(null);
	return 0;
}

void arm_identify(struct arm *a, const char *summary, const char *node, const char *run_tag)
{
	a->st.pid = (long)getpid();
	arm_proc_start_time(a->st.pid, &a->st.start_time);
	snprintf(a->st.node, sizeof(a->st.node), "%s", node);
	snprintf(a->st.run_tag, sizeof(a->st.run_tag), "%s", run_tag);
	arm_absolute(summary, a->st.summary, sizeof(a->st.summary));
	snprintf(a->st.log, sizeof(a->st.log), "%s/" ARM_LOG, a->dir);
}

int arm_detach(struct arm *a, const char *summary, const char *node, const char *run_tag,
	       double interval, unsigned long parts, double lease_s)
{
	int p[2];
	pid_t child;

	fflush(NULL);
	if (pipe2(p, O_CLOEXEC) != 0 || (child = fork()) < 0) {
		log_err("--detach: cannot start the armed process: %s", strerror(errno));
		return 1;
	}
	if (child > 0) {
		close(p[1]);
		return arm_foreground(a, p[0], child);
	}
	/* The first child: a new session, then a grandchild that is no session leader. */
	close(p[0]);
	if (setsid() < 0 || (child = fork()) < 0)
		_exit(1);
	if (child > 0)
		_exit(0);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	stop_install(); /* a signal forwarded from now on stops the run, summary written */
	a->tell_fd = p[1];
	int rc = arm_daemon_stdio(a);
	if (rc) {
		char msg[256];
		snprintf(msg, sizeof(msg), "failed 3 --detach: cannot open '%s/" ARM_LOG "': %s\n",
			 a->dir, strerror(-rc));
		arm_tell(a, msg);
		_exit(3);
	}
	arm_identify(a, summary, node, run_tag);
	char msg[32];
	snprintf(msg, sizeof(msg), "pid %ld\n", a->st.pid);
	ssize_t n = write(a->tell_fd, msg, strlen(msg));
	(void)n;
	snprintf(a->st.status, sizeof(a->st.status), "starting");
	a->st.interval = interval;
	a->st.parts = parts;
	a->st.lease_s = lease_s;
	a->state_rc = arm_write_state(a);
	return -1;
}

/* An instant as "2026-12-03T02:15:00Z". */
static void arm_utc(double at, char *buf, size_t len)
{
	time_t t = (time_t)at;
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "%.3f", at);
}

/*
 * The lease lapsed: the run is orphaned. started: the part it hits had started (then it is
 * stopped, after seconds past the lapse). The texts say what happened and why it matters.
 */
static void arm_orphan(struct arm *a, struct run_halt *h, int64_t now)
{
	double silent = (double)(now - a->lease.renewed_ns) / 1e9;
	double after = (double)(now - a->lease.deadline_ns) / 1e9;
	char last[32];

	arm_utc(a->lease.renewed_at, last, sizeof(last));
	memset(h, 0, sizeof(*h));
	h->out = OUTCOME_ORPHANED;
	h->reason = REASON_LEASE_EXPIRED;
	h->status = h->rest = PART_ORPHANED;
	snprintf(h->error, sizeof(h->error),
		 "orphaned: no renewal from the launcher for %.0f s: nobody would collect this "
		 "run (lease %.0f s, last renewed at %s)",
		 silent, a->lease.lease_s, last);
	snprintf(h->stopped, sizeof(h->stopped),
		 "orphaned: stopped %.1f s after the lease lapsed (a part goes on for at most one "
		 "lease length, %.0f s, after it lapses)",
		 after, a->lease.lease_s);
	snprintf(
	    h->not_started, sizeof(h->not_started),
	    "orphaned: not started: the lease lapsed (no renewal from the launcher for %.0f s)",
	    silent);
}

bool arm_watch(void *arg, double start_at, struct run_halt *h)
{
	struct arm *a = arg;
	struct lease now_lease;
	int64_t now;

	if (!a->lease_on)
		return true;
	if (!a->lapsed) {
		/* Read and judged under the lock, in turn with renewals: one answer for both. */
		if (lease_lock(a->dirfd, ARM_LEASE_LOCK_S) != 0)
			return true; /* a renewal is being written: the next safe point sees it */
		if (lease_read(a->dirfd, &now_lease) == 0)
			a->lease = now_lease;
		now = lease_now_ns();
		a->lapsed = lease_lapsed(&a->lease, now);
		lease_unlock(a->dirfd);
		if (!a->lapsed)
			return true;
		log_warn("the lease lapsed: no renewal from the launcher for %.0f s",
			 (double)(now - a->lease.renewed_ns) / 1e9);
		arm_write_state(a);
	}
	now = lease_now_ns();
	bool started = start_at > 0 && clock_wall() >= start_at;
	if (started && (double)(now - a->lease.deadline_ns) / 1e9 < a->lease.lease_s)
		return true;
	arm_orphan(a, h, now);
	return false;
}

bool arm_ready(void *arg, double start_at, struct run_halt *h)
{
	struct arm *a = arg;
	char msg[64];
	int rc;

	a->st.start_at = start_at;
	if (a->st.lease_s > 0) {
		rc = lease_start(a->dirfd, a->st.lease_s, &a->lease);
		if (rc) {
			snprintf(a->why, sizeof(a->why), "cannot write the lease file in '%s': %s",
				 a->dir, strerror(-rc));
			arm_halt_write(a, rc, h);
			return false;
		}
		a->lease_on = true;
	}
	/* No state a launcher can read, no arming: the foreground says why (a full disk). */
	snprintf(a->st.status, sizeof(a->st.status), "armed");
	if ((rc = arm_write_state(a)) != 0) {
		arm_halt_write(a, rc, h);
		return false;
	}
	snprintf(msg, sizeof(msg), "armed %ld\n", a->st.pid);
	arm_tell(a, msg);
	/* The wait for the start: at least once a second, a safe point. */
	while (!stop_requested()) {
		double now = clock_wall();
		if (now >= start_at)
			break;
		if (!arm_watch(a, start_at, h))
			return false;
		clock_wait_until(now + 1.0 < start_at ? now + 1.0 : start_at, 0.0, &stop_part);
	}
	if (stop_requested())
		return true;
	snprintf(a->st.status, sizeof(a->st.status), "running");
	arm_write_state(a);
	return true;
}

void arm_end(struct arm *a, enum outcome out, const char *first_error, enum reason reason)
{
	char msg[ARM_MSG_MAX];

	a->st.exit_code = outcome_exit_code(out);
	if (first_error) {
		/* One line in the state file, whatever the error quotes (a path). */
		snprintf(a->st.error, sizeof(a->st.error), "%s", first_error);
		for (char *c = a->st.error; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		snprintf(a->st.reason, sizeof(a->st.reason), "%s", reason_token(reason));
	}
	snprintf(a->st.status, sizeof(a->st.status), "%s",
		 out >= OUTCOME_INTERRUPTED_INT ? "interrupted"
		 : out == OUTCOME_ORPHANED	? "orphaned"
		 : out == OUTCOME_OK		? "done"
						: "failed");
	arm_write_state(a);
	if (a->tell_fd >= 0) {
		/* Never armed: the set-up failed, and the foreground says why. */
		snprintf(msg, sizeof(msg), "failed %d %.1000s (state %s/" ARM_STATE ")\n",
			 a->st.exit_code,
			 first_error ? first_error : "the run ended before it was armed", a->dir);
		arm_tell(a, msg);
	}
}
