/* SPDX-License-Identifier: MIT */
/*
 * The node-local run lock: its directory and file, created exclusively and checked on their
 * descriptors, an flock that the kernel releases when its last holder ends (a killed run
 * leaves no stale lock), and the few lines that say who holds it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "platform/runlock.h"

#define RUNLOCK_TEXT_MAX 1024

void runlock_init(struct runlock *l)
{
	l->fd = -1;
	l->path[0] = '\0';
}

/*
 * $XDG_RUNTIME_DIR when it is this user's: a directory of another user's is what runuser or
 * su leave behind, not a place to create in.
 */
static bool runlock_xdg_ok(const char *xdg)
{
	struct stat st;

	return xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == geteuid();
}

int runlock_dir(char *buf, size_t len)
{
	const char *env = getenv(RUNLOCK_ENV), *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "%s", RUNLOCK_ROOT_DIR);
	else if (runlock_xdg_ok(xdg))
		n = snprintf(buf, len, "%s/stagebench", xdg);
	else
		n = snprintf(buf, len, "/tmp/stagebench-%ld", (long)geteuid());
	return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

/* The directory, created when missing and checked on its descriptor. *fd, or -errno. */
static int runlock_open_dir(const char *dir, int *fd, char *why, size_t whylen)
{
	struct stat st;
	int err;

	if (mkdir(dir, geteuid() == 0 ? 0755 : 0700) != 0 && errno != EEXIST) {
		err = errno;
		snprintf(why, whylen, "cannot create the lock directory '%s': %s", dir,
			 strerror(err));
		return -err;
	}
	*fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0) {
		err = errno;
		bool link = lstat(dir, &st) == 0 && S_ISLNK(st.st_mode);
		snprintf(why, whylen, "lock directory '%s': %s", dir,
			 link		  ? "is a symbolic link: refusing it"
			 : err == ENOTDIR ? "not a directory"
					  : strerror(err));
		return -(link ? ELOOP : err);
	}
	if (fstat(*fd, &st) != 0) {
		err = errno;
		snprintf(why, whylen, "lock directory '%s': %s", dir, strerror(err));
	} else if (st.st_uid != geteuid()) {
		err = EPERM;
		snprintf(why, whylen,
			 "lock directory '%s' is owned by uid %ld, not by this user (uid %ld): "
			 "refusing it",
			 dir, (long)st.st_uid, (long)geteuid());
	} else if (st.st_mode & 022) {
		err = EPERM;
		snprintf(why, whylen,
			 "lock directory '%s' has mode %04o: others may write to it, refusing it",
			 dir, (unsigned)(st.st_mode & 07777));
	} else {
		return 0;
	}
	close(*fd);
	*fd = -1;
	return -err;
}

/* The file: created exclusively, or the one there checked. fd, or -errno. */
static int runlock_open_file(int dirfd, const char *name, const char *path, char *why,
			     size_t whylen)
{
	int flags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
	int fd = openat(dirfd, name, flags | O_CREAT | O_EXCL, 0644), err;
	struct stat st;

	if (fd < 0 && errno == EEXIST)
		fd = openat(dirfd, name, flags);
	if (fd < 0) {
		err = errno;
		snprintf(why, whylen, "cannot open the lock file '%s': %s", path,
			 err == ELOOP ? "it is a symbolic link: refusing it" : strerror(err));
		return -err;
	}
	if (fstat(fd, &st) != 0) {
		err = errno;
		snprintf(why, whylen, "lock file '%s': %s", path, strerror(err));
	} else if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
		err = EPERM;
		snprintf(why, whylen, "lock file '%s' is not a plain file: refusing it", path);
	} else if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		err = EPERM;
		snprintf(
		    why, whylen,
		    "lock file '%s' is owned by uid %ld with mode %04o, not this user's alone: "
		    "refusing it",
		    path, (long)st.st_uid, (unsigned)(st.st_mode & 07777));
	} else {
		return fd;
	}
	close(fd);
	return -err;
}

/* An instant as "2026-12-03T02:15:00Z". */
static void runlock_utc(double at, char *buf, size_t len)
{
	time_t t = (time_t)at;
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "%.0f", at);
}

bool runlock_parse(const char *text, size_t len, struct runlock_info *info)
{
	char line[256];
	size_t at = 0;
	bool schema = false;

	memset(info, 0, sizeof(*info));
	while (at < len) {
		size_t n = 0;
		while (at < len && text[at] != '\n' && n + 1 < sizeof(line))
			line[n++] = text[at++];
		while (at < len && text[at++] != '\n')
			;
		line[n] = '\0';
		/* The last line: what follows is an older, longer text not yet cut off. */
		if (strcmp(line, "end") == 0)
			break;
		char *v = strchr(line, ' ');
		if (!v)
			continue;
		*v++ = '\0';
		if (strcmp(line, "schema") == 0)
			schema = strcmp(v, RUNLOCK_SCHEMA) == 0;
		else if (strcmp(line, "pid") == 0)
			info->pid = strtol(v, NULL, 10);
		else if (strcmp(line, "node") == 0)
			snprintf(info->node, sizeof(info->node), "%s", v);
		else if (strcmp(line, "run_id") == 0)
			snprintf(info->run_id, sizeof(info->run_id), "%s", v);
		else if (strcmp(line, "command") == 0)
			snprintf(info->command, sizeof(info->command), "%s", v);
		else if (strcmp(line, "state") == 0)
			snprintf(info->state, sizeof(info->state), "%s", v);
		else if (strcmp(line, "since") == 0)
			info->since = strtod(v, NULL);
	}
	return schema && info->pid > 0;
}

/* A field made one line of printable ASCII (what the file says reaches a terminal). */
static void runlock_plain(char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			*s = '?';
}

/* The busy line: who holds the lock, from what its file says. */
static void runlock_busy(int fd, const char *node, const char *path, char *why, size_t whylen)
{
	char text[RUNLOCK_TEXT_MAX], since[32];
	struct runlock_info h;
	ssize_t n = pread(fd, text, sizeof(text), 0);

	if (n > 0 && runlock_parse(text, (size_t)n, &h)) {
		runlock_plain(h.run_id);
		runlock_plain(h.state);
		runlock_utc(h.since, since, sizeof(since));
		snprintf(why, whylen, "node %s is busy: run %s (pid %ld, %s since %s) holds %s",
			 node, h.run_id[0] ? h.run_id : "?", h.pid,
			 h.state[0] ? h.state : "running", since, path);
	} else {
		snprintf(why, whylen,
			 "node %s is busy: another stagebench holds %s (it has not said which yet)",
			 node, path);
	}
}

int runlock_note(struct runlock *l, const struct runlock_info *me)
{
	char text[RUNLOCK_TEXT_MAX];
	int n = snprintf(text, sizeof(text),
			 "schema " RUNLOCK_SCHEMA "\npid %ld\nnode %s\nrun_id %s\ncommand %s\n"
			 "state %s\nsince %.6f\nend\n",
			 me->pid, me->node, me->run_id, me->command, me->state, me->since);

	if (l->fd < 0)
		return -EBADF;
	if (n < 0 || (size_t)n >= sizeof(text))
		return -ENAMETOOLONG;
	/*
	 * Written over the old text, then cut to its length: a reader never sees it empty, and
	 * stops at "end" before what is left of a longer old text.
	 */
	ssize_t w = pwrite(l->fd, text, (size_t)n, 0);
	if (w < 0)
		return -errno;
	if (w != n)
		return -ENOSPC;
	return ftruncate(l->fd, n) == 0 ? 0 : -errno;
}

int runlock_take(struct runlock *l, const char *node, const struct runlock_info *me, char *why,
		 size_t whylen)
{
	char dir[PATH_MAX], name[96];
	int dirfd = -1, fd = -1, rc;

	runlock_init(l);
	if (runlock_dir(dir, sizeof(dir)) != 0 ||
	    snprintf(name, sizeof(name), "%s.lock", node) >= (int)sizeof(name) ||
	    snprintf(l->path, sizeof(l->path), "%s/%s", dir, name) >= (int)sizeof(l->path)) {
		snprintf(why, whylen, "the lock directory's path (%s) is too long", RUNLOCK_ENV);
		return -ENAMETOOLONG;
	}
	rc = runlock_open_dir(dir, &dirfd, why, whylen);
	if (rc)
		goto out;
	fd = runlock_open_file(dirfd, name, l->path, why, whylen);
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		rc = -errno;
		if (rc == -EWOULDBLOCK) {
			rc = -EBUSY;
			runlock_busy(fd, node, l->path, why, whylen);
		} else {
			snprintf(why, whylen, "cannot lock '%s': %s", l->path, strerror(-rc));
		}
		goto out;
	}
	l->fd = fd;
	fd = -1;
	rc = runlock_note(l, me);
	if (rc) {
		snprintf(why, whylen, "cannot write the lock file '%s': %s", l->path,
			 strerror(-rc));
		runlock_close(l);
	}
out:
	if (fd >= 0)
		close(fd);
	if (dirfd >= 0)
		close(dirfd);
	return rc;
}

void runlock_close(struct runlock *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}
