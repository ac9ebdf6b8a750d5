/* SPDX-License-Identifier: MIT */
/*
 * `stagebench check --health`: judge this node from the summaries of its latest run, within a
 * second and without running anything. Only names stagebench writes are looked at (found by
 * probing, not by listing a directory of thousands of nodes' files), every file is opened
 * without following a link and read up to a bound, and the one line printed is plain ASCII.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "driver/health.h"
#include "driver/plan.h"
#include "util/jscan.h"

#define HEALTH_MAX_BYTES (64u << 20) /* a summary larger than this is refused as damaged */
#define HEALTH_MAX_DIRS	 256	     /* the newest subdirectories looked into */
#define HEALTH_MAX_REPS	 1000
#define HEALTH_LINE	 200

struct health_dir {
	char name[256];
	time_t mtime;
};

struct health_run {
	char where[256]; /* the run directory's name, or "" for --results itself */
	time_t newest;
	size_t fresh;
};

struct health_verdict {
	enum outcome out;
	size_t ok;
	char line[HEALTH_LINE + 64];
};

/* s made one printable ASCII line of at most HEALTH_LINE bytes (a drain reason). */
static void health_plain(char *s)
{
	size_t n = 0;

	for (; s[n] && n < HEALTH_LINE; n++)
		if (s[n] < 0x20 || s[n] > 0x7e)
			s[n] = '?';
	s[n] = '\0';
}

/* name in dirfd: a fresh regular file (not a link); its mtime in *mtime. */
static bool health_fresh(int dirfd, const char *name, time_t cutoff, time_t *mtime)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
		return false;
	*mtime = st.st_mtime;
	return st.st_mtime >= cutoff;
}

/*
 * Call fn for every summary of node in dirfd: NODE.json, then NODE.PART.repK.json for each
 * part and K from 1 while they exist. Returns how many there were (fresh or not).
 */
static size_t health_each(int dirfd, const char *node, time_t cutoff,
			  void (*fn)(int dirfd, const char *name, time_t mtime, void *arg),
			  void *arg)
{
	char name[384];
	time_t mtime;
	size_t n = 0;

	snprintf(name, sizeof(name), "%s.json", node);
	if (fstatat(dirfd, name, &(struct stat){0}, AT_SYMLINK_NOFOLLOW) == 0 && ++n &&
	    health_fresh(dirfd, name, cutoff, &mtime))
		fn(dirfd, name, mtime, arg);
	for (size_t p = 0; p < plan_nparts; p++) {
		for (unsigned k = 1; k <= HEALTH_MAX_REPS; k++) {
			snprintf(name, sizeof(name), "%s.%s.rep%u.json", node, plan_parts[p].name,
				 k);
			if (fstatat(dirfd, name, &(struct stat){0}, AT_SYMLINK_NOFOLLOW))
				break;
			n++;
			if (health_fresh(dirfd, name, cutoff, &mtime))
				fn(dirfd, name, mtime, arg);
		}
	}
	return n;
}

static void health_note_newest(int dirfd, const char *name, time_t mtime, void *arg)
{
	struct health_run *r = arg;

	(void)dirfd;
	(void)name;
	if (r->fresh++ == 0 || mtime > r->newest)
		r->newest = mtime;
}

static int health_by_mtime(const void *a, const void *b)
{
	const struct health_dir *x = a, *y = b;

	return (x->mtime < y->mtime) - (x->mtime > y->mtime);
}

/* The subdirectories of dirfd modified since cutoff, newest first: how many (at most max). */
static size_t health_subdirs(int dirfd, time_t cutoff, struct health_dir *out, size_t max)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	size_t n = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(out[0].name) ||
		    (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode) ||
		    st.st_mtime < cutoff)
			continue;
		if (n == max) { /* full: replace the oldest kept when this one is newer */
			qsort(out, n, sizeof(*out), health_by_mtime);
			if (st.st_mtime <= out[n - 1].mtime)
				continue;
			n--;
		}
		snprintf(out[n].name, sizeof(out[n].name), "%s", e->d_name);
		out[n++].mtime = st.st_mtime;
	}
	closedir(d);
	qsort(out, n, sizeof(*out), health_by_mtime);
	return n;
}

/* The file's status and first error: 0, or -errno (-EINVAL: damaged, -EFBIG: too large). */
static int health_read(int dirfd, const char *name, char *status, size_t slen, char *err,
		       size_t elen)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto out;
	}
	if (st.st_size > (off_t)HEALTH_MAX_BYTES) {
		rc = -EFBIG;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r <= 0) {
			rc = r < 0 ? -errno : 0;
			break;
		}
		got += (size_t)r;
	}
	if (rc == 0 && jscan_member(buf, got, "status", status, slen))
		rc = -EINVAL;
	if (rc == 0 && jscan_member(buf, got, "errors", err, elen))
		err[0] = '\0';
out:
	free(buf);
	close(fd);
	return rc;
}

/* The part a launcher's file name says (NODE.PART.repK.json), else "run". */
static void health_part(const char *name, const char *node, char *part, size_t len)
{
	const char *p = name + strlen(node) + 1, *dot = strchr(p, '.');

	if (dot && strncmp(dot, ".rep", 4) == 0)
		snprintf(part, len, "%.*s", (int)(dot - p), p);
	else
		snprintf(part, len, "run");
}

struct health_judge {
	struct health_verdict *v;
	const char *node, *where;
};

static void health_judge_one(int dirfd, const char *name, time_t mtime, void *arg)
{
	struct health_judge *j = arg;
	struct health_verdict *v = j->v;
	char status[32], err[HEALTH_LINE], part[64];
	int rc = health_read(dirfd, name, status, sizeof(status), err, sizeof(err));

	(void)mtime;
	if (v->out == OUTCOME_FAILED)
		return; /* the first failure found is the reason given */
	if (rc) {
		v->out = OUTCOME_PRECONDITION;
		snprintf(v->line, sizeof(v->line), "stagebench: cannot judge: summary %s%s%s %s",
			 j->where, *j->where ? "/" : "", name,
			 rc == -EINVAL	? "is damaged"
			 : rc == -EFBIG ? "is too large"
					: strerror(-rc));
		return;
	}
	if (strcmp(status, "ok") == 0) {
		v->ok++;
		return;
	}
	health_part(name, j->node, part, sizeof(part));
	v->out = OUTCOME_FAILED;
	snprintf(v->line, sizeof(v->line), "stagebench: %s %s%s%s: %s", part, status,
		 *j->where ? " in " : "", j->where, *err ? err : "no error recorded");
}

/* The newest run of node among --results itself and its recent subdirectories. */
static bool health_newest(int rfd, const char *node, time_t cutoff, struct health_run *best)
{
	static struct health_dir dirs[HEALTH_MAX_DIRS];
	struct health_run r = {{0}, 0, 0};
	size_t n = health_subdirs(rfd, cutoff, dirs, HEALTH_MAX_DIRS);

	health_each(rfd, node, cutoff, health_note_newest, &r);
	*best = r;
	for (size_t i = 0; i < n; i++) {
		if (best->fresh && dirs[i].mtime < best->newest)
			break; /* files only make a directory newer: none further can win */
		int fd = openat(rfd, dirs[i].name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct health_run s = {{0}, 0, 0};
		health_each(fd, node, cutoff, health_note_newest, &s);
		close(fd);
		if (s.fresh && (!best->fresh || s.newest > best->newest)) {
			snprintf(s.where, sizeof(s.where), "%s", dirs[i].name);
			*best = s;
		}
	}
	return best->fresh > 0;
}

enum outcome health_check(const struct options *o, const char *node)
{
	struct health_verdict v = {OUTCOME_OK, 0, ""};
	struct health_run run;
	time_t now = time(NULL), cutoff = now - (time_t)o->max_age;

	if (!o->results || !*o->results) {
		fprintf(stderr, "stagebench: error: check --health needs --results DIR (or "
				"STAGEBENCH_RESULTS): where this node's summaries are\n");
		return OUTCOME_USAGE;
	}
	int rfd = open(o->results, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0) {
		v.out = OUTCOME_PRECONDITION;
		snprintf(v.line, sizeof(v.line), "stagebench: no recent data: results %s: %s",
			 o->results, strerror(errno));
	} else if (!health_newest(rfd, node, cutoff, &run)) {
		v.out = OUTCOME_PRECONDITION;
		snprintf(v.line, sizeof(v.line),
			 "stagebench: no recent data: no result of %s in the last %.1f h under %s",
			 node, o->max_age / 3600.0, o->results);
	} else {
		int fd = *run.where ? openat(rfd, run.where,
					     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
				    : dup(rfd);
		struct health_judge j = {&v, node, run.where};
		if (fd >= 0) {
			health_each(fd, node, cutoff, health_judge_one, &j);
			close(fd);
		}
		if (v.out == OUTCOME_OK && v.ok == 0) {
			v.out = OUTCOME_PRECONDITION;
			snprintf(v.line, sizeof(v.line), "stagebench: no recent data: %s vanished",
				 run.where);
		} else if (v.out == OUTCOME_OK)
			snprintf(v.line, sizeof(v.line),
				 "stagebench: ok: %zu summar%s ok%s%s, %.1f h ago", v.ok,
				 v.ok == 1 ? "y" : "ies", *run.where ? " in " : "", run.where,
				 (double)(now - run.newest) / 3600.0);
	}
	if (rfd >= 0)
		close(rfd);
	health_plain(v.line);
	printf("%s\n", v.line);
	return v.out;
}
