/* SPDX-License-Identifier: MIT */
/*
 * The lease file of an armed run's state directory: "key value" lines written whole under a
 * temporary name and renamed into place, read back without following a link, and the flock
 * on the directory under which a renewal reads, decides and writes in one turn.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "platform/lease.h"
#include "util/names.h"

#define LEASE_TEXT_MAX 512
#define LEASE_POLL_NS  10000000L

int64_t lease_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double lease_remaining_s(const struct lease *l, int64_t now_ns)
{
	return now_ns < l->deadline_ns ? (double)(l->deadline_ns - now_ns) / 1e9 : 0.0;
}

bool lease_lapsed(const struct lease *l, int64_t now_ns)
{
	return now_ns >= l->deadline_ns;
}

int lease_lock(int dirfd, double wait_s)
{
	int64_t until = lease_now_ns() + (int64_t)(wait_s * 1e9);
	struct timespec pause = {0, LEASE_POLL_NS};

	for (;;) {
		if (flock(dirfd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (lease_now_ns() >= until)
			return -EWOULDBLOCK;
		nanosleep(&pause, NULL);
	}
}

void lease_unlock(int dirfd)
{
	flock(dirfd, LOCK_UN);
}

int lease_read(int dirfd, struct lease *l)
{
	char text[LEASE_TEXT_MAX + 1], *line, *save = NULL;
	int fd = openat(dirfd, NAMES_LEASE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	bool schema = false, deadline = false;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, text, LEASE_TEXT_MAX);
	close(fd);
	if (n < 0)
		return -errno;
	text[n] = '\0';
	memset(l, 0, sizeof(*l));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(line, ' ');
		if (!v)
			continue;
		*v++ = '\0';
		if (strcmp(line, "schema") == 0)
			schema = strcmp(v, LEASE_SCHEMA) == 0;
		else if (strcmp(line, "lease_s") == 0)
			l->lease_s = strtod(v, NULL);
		else if (strcmp(line, "deadline_ns") == 0)
			deadline = (l->deadline_ns = strtoll(v, NULL, 10)) > 0;
		else if (strcmp(line, "renewed_ns") == 0)
			l->renewed_ns = strtoll(v, NULL, 10);
		else if (strcmp(line, "renewed_at") == 0)
			l->renewed_at = strtod(v, NULL);
		else if (strcmp(line, "renewals") == 0)
			l->renewals = strtoull(v, NULL, 10);
	}
	return schema && deadline && l->lease_s >= LEASE_MIN_S && l->lease_s <= LEASE_MAX_S
		   ? 0
		   : -EINVAL;
}

/* The lease file rewritten whole: a new file beside it, renamed over it. 0 or -errno. */
static int lease_write(int dirfd, const struct lease *l)
{
	char tmp[64], text[LEASE_TEXT_MAX];
	int fd, rc = 0;
	int n = snprintf(text, sizeof(text),
			 "schema " LEASE_SCHEMA "\nclock boottime\nlease_s %.6f\ndeadline_ns %lld\n"
			 "renewed_ns %lld\nrenewed_at %.6f\nrenewals %llu\n",
			 l->lease_s, (long long)l->deadline_ns, (long long)l->renewed_ns,
			 l->renewed_at, (unsigned long long)l->renewals);

	names_lease_temp(tmp, sizeof(tmp), (long)getpid());
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		/* A killed writer of the same pid left it, in a directory only this user writes. */
		unlinkat(dirfd, tmp, 0);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, text, (size_t)n);
	if (w < 0)
		rc = -errno;
	else if (w != n)
		rc = -ENOSPC;
	if (close(fd) != 0 && !rc)
		rc = -errno;
	if (!rc && renameat(dirfd, tmp, dirfd, NAMES_LEASE) != 0)
		rc = -errno;
	if (rc)
		unlinkat(dirfd, tmp, 0);
	return rc;
}

/* One lease length from now, one renewal more. */
static void lease_push(struct lease *l)
{
	struct timespec wall;

	l->renewed_ns = lease_now_ns();
	l->deadline_ns = l->renewed_ns + (int64_t)(l->lease_s * 1e9);
	clock_gettime(CLOCK_REALTIME, &wall);
	l->renewed_at = (double)wall.tv_sec + (double)wall.tv_nsec / 1e9;
	l->renewals++;
}

int lease_start(int dirfd, double lease_s, struct lease *l)
{
	memset(l, 0, sizeof(*l));
	l->lease_s = lease_s;
	lease_push(l);
	return lease_write(dirfd, l);
}

int lease_renew(int dirfd, struct lease *l)
{
	int rc = lease_read(dirfd, l);

	if (rc)
		return rc;
	if (lease_lapsed(l, lease_now_ns()))
		return -ETIME;
	lease_push(l);
	return lease_write(dirfd, l);
}
