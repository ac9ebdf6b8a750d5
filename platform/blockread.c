/* SPDX-License-Identifier: MIT */
/*
 * Single blocks read past the local page cache, and their headers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/blockread.h"
#include "util/pattern.h"

/*
 * O_NOFOLLOW and O_NONBLOCK: between the caller's fstatat and this open the name could
 * have become a symlink or a FIFO; neither may be followed or block us.
 */
static int blockread_reopen(struct blockread *r, int dirfd, const char *name)
{
	int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
	int fd;

	fd = openat(dirfd, name, flags | (r->direct ? O_DIRECT : 0));
	if (fd < 0 && errno == EINVAL && r->direct) {
		r->direct = false;
		fd = openat(dirfd, name, flags);
	}
	if (fd < 0)
		return errno == ELOOP ? -EINVAL : -errno;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = fd;
	if (fstat(fd, &r->st) != 0)
		return -errno;
	if (!S_ISREG(r->st.st_mode))
		return S_ISDIR(r->st.st_mode) ? -EISDIR : -EINVAL;
	return 0;
}

int blockread_open(struct blockread *r, int dirfd, const char *name)
{
	struct stat st;
	int rc;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->direct = true;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	rc = -posix_memalign(&r->block, PATTERN_BLOCK, PATTERN_BLOCK);
	if (rc) {
		r->block = NULL;
		return rc;
	}
	return blockread_reopen(r, dirfd, name);
}

void blockread_close(struct blockread *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->block);
	r->fd = -1;
	r->block = NULL;
}

int blockread_block(struct blockread *r, int dirfd, const char *name, uint64_t off, size_t *got)
{
	unsigned char *b = r->block;
	size_t n = 0;
	ssize_t k;
	int rc;

	memset(b, 0, PATTERN_BLOCK);
	while (n < PATTERN_BLOCK) {
		k = pread(r->fd, b + n, PATTERN_BLOCK - n, (off_t)(off + n));
		if (k > 0) {
			n += (size_t)k;
			continue;
		}
		if (k == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EINVAL || !r->direct)
			return -errno;
		r->direct = false;
		rc = blockread_reopen(r, dirfd, name);
		if (rc)
			return rc;
	}
	if (got)
		*got = n;
	return 0;
}

bool blockread_valid(const void *block, uint64_t off, uint64_t *gen)
{
	uint64_t g = 0, o = 0;
	int rc = pattern_check(block, 0, off, &g, &o);

	if (rc != 0 && rc != -ESTALE)
		return false;
	if (pattern_check(block, g, off, NULL, NULL) != 0)
		return false;
	*gen = g;
	return true;
}

bool blockread_all(const void *block, size_t n, unsigned char c)
{
	const unsigned char *b = block;

	for (size_t i = 0; i < n; i++) {
		if (b[i] != c)
			return false;
	}
	return true;
}
