/* SPDX-License-Identifier: MIT */
/*
 * `stagebench check --health`: judge this node from the summaries of its latest run, within a
 * deadline and without running anything. Everything that touches the results directory runs
 * in a child (platform/bounded.h): a hung filesystem gives one line, not a hung health check.
 * Only names stagebench writes are looked at (found by probing, not by listing a directory of
 * thousands of nodes' files), every file is opened without following a link and read through
 * the collector's door, and the one line printed is plain ASCII.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "driver/health.h"
#include "driver/plan.h"
#include "driver/stop.h"
#include "driver/health_view.h"
#include "driver/options.h"
#include "platform/bounded.h"
#include "platform/clock.h"
#include "util/log.h"
#include "util/names.h"

#define HEALTH_MAX_REPS 1000
#define HEALTH_NAME	384
/* How long a child past its deadline gets to end (it is then left behind). */
#define HEALTH_GRACE_S 1.0

static const enum outcome health_state_outcomes[HEALTH_NSTATES] = {
    OUTCOME_OK,		  OUTCOME_FAILED,	OUTCOME_FAILED,
    OUTCOME_PRECONDITION, OUTCOME_PRECONDITION, OUTCOME_USAGE};

/* What the child tells the parent: what it starts doing, then its verdict. */
enum health_msg_kind { HEALTH_MSG_STAGE, HEALTH_MSG_VERDICT };

struct health_msg {
	enum health_msg_kind kind;
	char stage[HEALTH_NAME + 64];
	struct health_verdict v;
};

struct health_ctx {
	const struct options *o;
	const char *node;
	double now;
	int fd; /* the pipe to the parent */
};

/* A run directory of this node: its name under --results and the instant it recorded. */
struct health_run {
	char where[256];
	double at;
};

static void health_stage(struct health_ctx *c, const char *fmt, const char *a, const char *b)
{
	static struct health_msg m;

	memset(&m, 0, sizeof(m));
	m.kind = HEALTH_MSG_STAGE;
	snprintf(m.stage, sizeof(m.stage), fmt, a, b);
	bounded_send(c->fd, &m, sizeof(m));
}

/* s made one printable ASCII line of at most HEALTH_LINE bytes (a drain reason). */
static void health_plain(char *s)
{
	size_t n = 0;

	for (; s[n] && n < HEALTH_LINE; n++)
		if (s[n] < 0x20 || s[n] > 0x7e)
			s[n] = '?';
	s[n] = '\0';
}

/* The verdict's state and outcome, and its line from fmt. */
static void health_say(struct health_verdict *v, enum health_state state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void health_say(struct health_verdict *v, enum health_state state, const char *fmt, ...)
{
	va_list ap;

	v->state = state;
	v->out = health_state_outcomes[state];
	va_start(ap, fmt);
	vsnprintf(v->line, sizeof(v->line), fmt, ap);
	va_end(ap);
}

/* More said after the line, while it fits. */
static void health_add(struct health_verdict *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void health_add(struct health_verdict *v, const char *fmt, ...)
{
	size_t n = strlen(v->line);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v->line + n, sizeof(v->line) - n, fmt, ap);
	va_end(ap);
}

/* name in dirfd: a regular file (not a link). */
static bool health_is_file(int dirfd, const char *name, struct stat *st)
{
	return fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st->st_mode);
}

/* Where the walk over node's summary names in a directory is. */
struct health_names {
	bool flat_done; /* NODE.json looked for */
	size_t p;	/* the part, in the catalogue's order */
	unsigned k;	/* its last repetition found */
};

/*
 * The next of node's summaries in dirfd, in order: NODE.json, then NODE.PART.repK.json for
 * each part and K from 1 while they exist; its name into name, or false at the end. A link or
 * another kind of file is no summary (and ends its part's repetitions).
 */
static bool health_next(int dirfd, const char *node, struct health_names *it, char *name,
			size_t len)
{
	struct stat st;

	if (!it->flat_done) {
		it->flat_done = true;
		if (names_result_node(name, len, node) == 0 && health_is_file(dirfd, name, &st))
			return true;
	}
	while (it->p < plan_nparts) {
		if (++it->k <= HEALTH_MAX_REPS &&
		    names_result_part(name, len, node, plan_parts[it->p].name, it->k) == 0 &&
		    health_is_file(dirfd, name, &st))
			return true;
		it->p++;
		it->k = 0;
	}
	return false;
}

/*
 * The text of name in dirfd through the collector's file door (a regular file, not a link, at
 * most HEALTH_DOOR_MAX_BYTES): 0 with *buf (to free) and *len; -errno with why.
 */
static int health_read(int dirfd, const char *name, char **buf, size_t *len, char *why,
		       size_t whylen)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	size_t got = 0;
	int rc = 0;

	*buf = NULL;
	if (fd < 0) {
		rc = -errno;
		snprintf(why, whylen, "cannot read: %s", strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "not a regular file");
		rc = -EINVAL;
		goto out;
	}
	if (st.st_size > (off_t)HEALTH_DOOR_MAX_BYTES) {
		snprintf(why, whylen, "%lld bytes, over the %u MiB a file may be",
			 (long long)st.st_size, HEALTH_DOOR_MAX_BYTES >> 20);
		rc = -EFBIG;
		goto out;
	}
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) {
		snprintf(why, whylen, "cannot read: %s", strerror(ENOMEM));
		rc = -ENOMEM;
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, *buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			snprintf(why, whylen, "cannot read: %s", strerror(-rc));
			break;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	*len = got;
out:
	if (rc) {
		free(*buf);
		*buf = NULL;
	}
	close(fd);
	return rc;
}

/* A summary through the door: 0 with s, or -errno with the collector's reason in why. */
static int health_summary(struct health_ctx *c, int dirfd, const char *where, const char *name,
			  struct health_summary *s, char *why, size_t whylen)
{
	char *buf;
	size_t len;
	int rc;

	health_stage(c, "reading %s%s", where, name);
	rc = health_read(dirfd, name, &buf, &len, why, whylen);
	if (rc == 0) {
		rc = health_door_summary(buf, len, s, why, whylen);
		free(buf);
	}
	return rc;
}

/*
 * The instant a run directory of node recorded: that of its first summary of node (a run's
 * summaries were all written by one run), or, when that one cannot be read or records none,
 * the file's modification time. false when dirfd holds no summary of node.
 */
static bool health_run_at(struct health_ctx *c, int dirfd, const char *where, double *at)
{
	struct health_names it = {false, 0, 0};
	char name[HEALTH_NAME], why[256];
	struct health_summary s;
	struct stat st;

	if (!health_next(dirfd, c->node, &it, name, sizeof(name)))
		return false;
	if (health_summary(c, dirfd, where, name, &s, why, sizeof(why)) == 0 && s.at > 0) {
		*at = s.at;
		return true;
	}
	*at = health_is_file(dirfd, name, &st) ? (double)st.st_mtime : 0;
	return true;
}

/* One candidate run: the latest one not dated in the future is kept, the future ones counted. */
static void health_consider(struct health_ctx *c, struct health_verdict *v, struct health_run *best,
			    const char *where, double at)
{
	if (at > c->now + HEALTH_FUTURE_S) {
		if (!v->nfuture++ || at > v->future_at) {
			snprintf(v->future, sizeof(v->future), "%s", *where ? where : ".");
			v->future_at = at;
		}
		return;
	}
	if (!v->has_run || at > best->at) {
		snprintf(best->where, sizeof(best->where), "%s", where);
		best->at = at;
		v->has_run = true;
	}
}

/*
 * The latest run of node under rfd: --results itself, then every subdirectory (whatever its
 * name or modification time: what decides is the instant the run recorded).
 */
static void health_latest(struct health_ctx *c, int rfd, struct health_verdict *v,
			  struct health_run *best)
{
	int fd = dup(rfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	double at;

	if (health_run_at(c, rfd, "", &at))
		health_consider(c, v, best, "", at);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	health_stage(c, "listing %s%s", c->o->results, "");
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(best->where) ||
		    (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
			continue;
		int sub = openat(rfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		char where[300];
		snprintf(where, sizeof(where), "%s/", e->d_name);
		if (health_run_at(c, sub, where, &at))
			health_consider(c, v, best, e->d_name, at);
		close(sub);
	}
	closedir(d);
}

/* The part a launcher's file name of node says (NODE.PART.repK.json), else "run". */
static void health_part(const char *name, const char *node, char *part, size_t len)
{
	struct names_result r;

	if (names_result_parse(name, &r) == NAMES_RESULT_PART && strcmp(r.node, node) == 0)
		snprintf(part, len, "%s", r.part);
	else
		snprintf(part, len, "run");
}

/* Every summary of node in the latest run: the first failure, else the first invalid one. */
static void health_judge(struct health_ctx *c, int rfd, const struct health_run *run,
			 struct health_verdict *v)
{
	struct health_names it = {false, 0, 0};
	char name[HEALTH_NAME], why[256], where[300];
	struct health_summary s;
	bool invalid = false;
	int fd = *run->where
		     ? openat(rfd, run->where, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
		     : dup(rfd);

	snprintf(where, sizeof(where), "%s%s", run->where, *run->where ? "/" : "");
	while (fd >= 0 && health_next(fd, c->node, &it, name, sizeof(name))) {
		v->judged++;
		int rc = health_summary(c, fd, where, name, &s, why, sizeof(why));
		if (rc == 0 && s.other_schema[0])
			snprintf(why, sizeof(why), "is a %s file, not a node summary",
				 s.other_schema);
		else if (rc == 0 && strcmp(s.node, c->node) != 0)
			snprintf(why, sizeof(why), "is node %s's, not %s's", s.node, c->node);
		if (rc != 0 || s.other_schema[0] || strcmp(s.node, c->node) != 0) {
			if (!invalid)
				health_say(v, HEALTH_CANNOT_JUDGE,
					   "stagebench: cannot judge: summary %s%s %s%s", where,
					   name, rc != 0 ? "is invalid: " : "", why);
			invalid = true;
			continue;
		}
		if (s.at > v->run_at)
			v->run_at = s.at;
		if (strcmp(s.status, "ok") == 0) {
			v->ok++;
			continue;
		}
		health_part(name, c->node, v->part, sizeof(v->part));
		snprintf(v->error, sizeof(v->error), "%s",
			 s.error[0] ? s.error : "no error recorded");
		health_say(v, HEALTH_UNHEALTHY, "stagebench: %s %s%s%s: %s", v->part, s.status,
			   *run->where ? " in " : "", run->where, v->error);
		break;
	}
	if (fd >= 0)
		close(fd);
	if (v->judged && !invalid && v->state == HEALTH_OK)
		health_say(v, HEALTH_OK, "stagebench: ok: %zu summar%s ok%s%s, %.1f h ago", v->ok,
			   v->ok == 1 ? "y" : "ies", *run->where ? " in " : "", run->where,
			   (c->now - v->run_at) / 3600.0);
	else if (!v->judged)
		health_say(v, HEALTH_NO_RECENT_DATA, "stagebench: no recent data: %s vanished",
			   *run->where ? run->where : c->o->results);
}

/* The history's judgement beside the runs: read, and what it says of node. */
static void health_history(struct health_ctx *c, int rfd, struct health_verdict *v)
{
	char *buf;
	size_t len;
	int rc;

	health_stage(c, "reading %s%s", HEALTH_DOOR_HISTORY, "");
	rc = health_read(rfd, HEALTH_DOOR_HISTORY, &buf, &len, v->history_why,
			 sizeof(v->history_why));
	if (rc == -ENOENT) {
		v->history = HEALTH_HISTORY_NONE;
		v->history_why[0] = '\0';
		return;
	}
	if (rc == 0) {
		rc = health_door_history(buf, len, c->node, &v->hist, v->history_why,
					 sizeof(v->history_why));
		free(buf);
	}
	if (rc)
		v->history = HEALTH_HISTORY_DAMAGED;
	else if (v->hist.written_at > c->now + HEALTH_FUTURE_S)
		v->history = HEALTH_HISTORY_FUTURE;
	else if (c->now - v->hist.written_at > c->o->max_age)
		v->history = HEALTH_HISTORY_STALE;
	else
		v->history = v->hist.nflags ? HEALTH_HISTORY_FLAGGED : HEALTH_HISTORY_OK;
}

/* A lasting regression of node fails it (unless a summary failed it already). */
static void health_history_say(struct health_ctx *c, struct health_verdict *v)
{
	const struct health_history *h = &v->hist;

	if (v->history == HEALTH_HISTORY_FLAGGED && v->state != HEALTH_UNHEALTHY) {
		health_say(v, HEALTH_UNHEALTHY, "stagebench: %s: lasting regression:", c->node);
		for (size_t i = 0; i < h->nflags && i < HEALTH_DOOR_MAX_FLAGS; i++)
			health_add(v, "%s %s %+.0f%% since %s", i ? ";" : "", h->flags[i].part,
				   h->flags[i].size * 100.0, h->flags[i].first_night);
		if (h->nflags > HEALTH_DOOR_MAX_FLAGS)
			health_add(v, "; %zu more", h->nflags - HEALTH_DOOR_MAX_FLAGS);
		health_add(v, " (judged in %s)", h->run_id);
	}
	if (v->nfuture)
		health_add(v, "; ignored %zu run%s dated in the future (%s, %.0f h ahead)",
			   v->nfuture, v->nfuture == 1 ? "" : "s", v->future,
			   (v->future_at - c->now) / 3600.0);
	if (v->history == HEALTH_HISTORY_DAMAGED)
		health_add(v, "; " HEALTH_DOOR_HISTORY " ignored: %s", v->history_why);
	else if (v->history == HEALTH_HISTORY_FUTURE)
		health_add(v, "; " HEALTH_DOOR_HISTORY " ignored: written %.0f h in the future",
			   (h->written_at - c->now) / 3600.0);
}

/* The child's work: everything that touches the results directory, which may never answer. */
static int health_child(void *arg, int fd)
{
	static struct health_msg m;
	struct health_ctx *c = arg;
	struct health_verdict *v = &m.v;
	struct health_run best = {"", 0};
	const char *results = c->o->results;

	c->fd = fd;
	memset(&m, 0, sizeof(m));
	health_stage(c, "opening %s%s", results, "");
	int rfd = open(results, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0) {
		health_say(v, HEALTH_CONFIG_ERROR,
			   "stagebench: configuration error: results directory %s: %s", results,
			   errno == ENOTDIR ? "not a directory" : strerror(errno));
		goto out;
	}
	health_latest(c, rfd, v, &best);
	if (!v->has_run || best.at < c->now - c->o->max_age)
		health_say(
		    v, HEALTH_NO_RECENT_DATA,
		    "stagebench: no recent data: no result of %s in the last %.1f h under %s",
		    c->node, c->o->max_age / 3600.0, results);
	else {
		snprintf(v->run, sizeof(v->run), "%s", best.where);
		v->run_at = best.at;
		health_judge(c, rfd, &best, v);
	}
	health_history(c, rfd, v);
	health_history_say(c, v);
	close(rfd);
out:
	health_plain(v->line);
	m.kind = HEALTH_MSG_VERDICT;
	return bounded_send(fd, &m, sizeof(m));
}

enum outcome health_check(const struct options *o, const char *node, int deadline_s)
{
	static struct health_msg m;
	static struct health_verdict v;
	struct health_ctx c = {o, node, clock_wall(), -1};
	char stage[sizeof(m.stage)] = "starting";
	struct bounded b;
	bool answered = false;
	int rc;

	if (!o->results || !*o->results) {
		log_err("check --health needs --results DIR (or STAGEBENCH_RESULTS): where this "
			"node's summaries are");
		return OUTCOME_USAGE;
	}
	if ((rc = bounded_start(&b, deadline_s, health_child, &c)) != 0) {
		log_err("cannot start the health check: %s", strerror(-rc));
		return OUTCOME_FAILED;
	}
	while ((rc = bounded_read(&b, &m, sizeof(m), &stop_signal)) == 1) {
		if (m.kind == HEALTH_MSG_STAGE)
			snprintf(stage, sizeof(stage), "%s", m.stage);
		else {
			v = m.v;
			answered = true;
		}
	}
	if (rc == -EINTR || rc == -ETIMEDOUT)
		bounded_signal(&b, SIGKILL, HEALTH_GRACE_S);
	bounded_end(&b);
	if (rc == -EINTR) {
		log_err("interrupted by %s", stop_signal == SIGTERM ? "SIGTERM" : "SIGINT");
		return stop_signal == SIGTERM ? OUTCOME_INTERRUPTED_TERM : OUTCOME_INTERRUPTED_INT;
	}
	if (!answered) {
		memset(&v, 0, sizeof(v));
		if (rc == -ETIMEDOUT)
			health_say(
			    &v, HEALTH_NOT_ANSWERING,
			    "stagebench: results filesystem not answering: no answer from %s "
			    "within %d s (while %s)",
			    o->results, deadline_s, stage);
		else
			health_say(
			    &v, HEALTH_CANNOT_JUDGE,
			    "stagebench: cannot judge: the check of %s ended early (while %s)",
			    o->results, stage);
		health_plain(v.line);
	}
	health_view(&v, o->format, node, o->results, c.now, stdout);
	return v.out;
}
