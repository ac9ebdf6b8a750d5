/* SPDX-License-Identifier: MIT */
/*
 * The node summary written to --out: checked before the run (a file that can be written
 * later, never through a link or over what is not a regular file), then written whole to a
 * temporary beside it and renamed into place.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/summary.h"
#include "driver/summary_file.h"
#include "platform/bounded.h"
#include "platform/fsinfo.h"
#include "util/names.h"

/* What a directory entry that is not a regular file is, for a message. */
static const char *summary_file_type(mode_t mode)
{
	if (S_ISLNK(mode))
		return "symbolic link";
	if (S_ISFIFO(mode))
		return "FIFO";
	if (S_ISCHR(mode))
		return "character device";
	if (S_ISBLK(mode))
		return "block device";
	if (S_ISSOCK(mode))
		return "socket";
	return "directory";
}

/*
 * A new temporary file beside path, "PATH.tmp.PID.TOKEN" with a random token, created
 * exclusively and never through a link: a name planted in advance is never in the way.
 * The fd, or -errno; its name in tmp.
 */
static int summary_file_temp(const char *path, char *tmp, size_t len)
{
	char token[FS_TOKEN_LEN + 1];
	int fd = -EEXIST;

	for (int tries = 0; tries < 8 && fd == -EEXIST; tries++) {
		fs_token(token, sizeof(token));
		if (names_out_temp(tmp, len, path, (long)getpid(), token))
			return -ENAMETOOLONG;
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0)
			fd = -errno;
	}
	return fd;
}

int summary_file_check_out(const char *path, bool force, char *why, size_t whylen)
{
	char copy[4096], tmp[4200];
	struct stat st;
	int fd, e = 0;

	if (lstat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			snprintf(why, whylen, "--out '%s' is a directory: expected a file name",
				 path);
			return -EISDIR;
		}
		if (!S_ISREG(st.st_mode)) {
			snprintf(why, whylen,
				 "--out '%s' is a %s: not replacing it (only a regular file is "
				 "ever replaced, with --force)",
				 path, summary_file_type(st.st_mode));
			return -EEXIST;
		}
		if (!force) {
			snprintf(why, whylen, "--out '%s' exists: not replacing it (use --force)",
				 path);
			return -EEXIST;
		}
	}
	snprintf(copy, sizeof(copy), "%s", path);
	const char *dir = dirname(copy);
	if (stat(dir, &st) != 0)
		e = errno;
	else if (!S_ISDIR(st.st_mode))
		e = ENOTDIR;
	else if (access(dir, W_OK | X_OK) != 0)
		e = errno;
	if (e) {
		snprintf(why, whylen, "--out '%s': cannot write in directory '%s': %s", path, dir,
			 strerror(e));
		return -e;
	}
	/*
	 * access() says yes to root on a read-only export or with root squashed: create the
	 * temporary file summary_file_write will use, and remove it, to know for sure now.
	 */
	fd = summary_file_temp(path, tmp, sizeof(tmp));
	if (fd < 0) {
		e = -fd;
		snprintf(why, whylen, "--out '%s': cannot create a file in directory '%s': %s",
			 path, dir, strerror(e));
		return -e;
	}
	/*
	 * Its owner could swap the summary between its writing and its rename: the directory
	 * must be this user's or root's, or belong to whom the server makes this user (a root
	 * squashed to nobody owns what it creates as nobody).
	 */
	struct stat mine;
	if (fstat(fd, &mine) != 0)
		mine.st_uid = geteuid();
	close(fd);
	unlink(tmp);
	if (st.st_uid != geteuid() && st.st_uid != 0 && st.st_uid != mine.st_uid) {
		snprintf(
		    why, whylen,
		    "--out '%s': directory '%s' belongs to another user (uid %ld): not writing "
		    "the summary there",
		    path, dir, (long)st.st_uid);
		return -EPERM;
	}
	return 0;
}

int summary_file_write(const struct node_result *res, const struct plan *plan, const char *path,
		       bool force)
{
	char tmp[4200];
	char *doc = NULL;
	size_t len = 0;
	struct stat st;
	int fd = -1, rc = 0;
	/* The document in memory first: a write error is then the file's, with its errno. */
	FILE *m = open_memstream(&doc, &len);

	if (!m)
		return -errno;
	rc = summary_json(res, plan, m, true);
	if (fclose(m) != 0 && !rc)
		rc = -errno;
	if (rc)
		goto out;
	fd = summary_file_temp(path, tmp, sizeof(tmp));
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	rc = bounded_send(fd, doc, len);
	if (!rc && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && !rc)
		rc = -errno;
	/* Only a regular file is replaced: what was checked before the run may have changed. */
	if (!rc && force && lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		rc = -EEXIST;
	if (!rc && force)
		rc = rename(tmp, path) ? -errno : 0;
	else if (!rc && renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) != 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
out:
	free(doc);
	return rc;
}
