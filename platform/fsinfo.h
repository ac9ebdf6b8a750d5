/* SPDX-License-Identifier: MIT */
/*
 * Facts about files and filesystems: type and mount source of a directory (from
 * /proc/self/mountinfo), free space and inodes, page-cache residency (mincore), and the
 * one way stagebench creates a file.
 */
#ifndef STAGEBENCH_FSINFO_H
#define STAGEBENCH_FSINFO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/names.h"

struct fs_info {
	char type[32];	   /* "ext4", "fuse.sshfs", "nfs4", "lustre", ... */
	char source[256];  /* mount source: "/dev/vda", "server:/stage", ... */
	char options[256]; /* super options and mount options */
	char mountpoint[256];
	uint64_t bytes_total;
	uint64_t bytes_free;  /* available to this user */
	uint64_t inodes_free; /* 0 when the filesystem does not count inodes */
	uint64_t inodes_total;
	unsigned long block_size;
};

/*
 * Describe the filesystem holding dir. The mount is the longest mountinfo mount point
 * that is a prefix of dir's real path with the same device number. 0 or -errno.
 */
int fs_info_get(const char *dir, struct fs_info *out);

/* The fraction of a residency that could not be measured: never a valid 0..1 value. */
#define FS_RESIDENCY_UNKNOWN (-1.0)

/* How much of a file sits in this node's page cache. */
struct fs_residency {
	bool known;	   /* measured; false: why holds the errno of the failure */
	int why;	   /* ENODEV: a FUSE direct_io file cannot be mapped; EINVAL: not a file */
	uint64_t pages;	   /* pages of the file (0 when unknown) */
	uint64_t resident; /* of which resident */
	double fraction;   /* resident / pages, 1.0 for an empty file; FS_RESIDENCY_UNKNOWN */
};

/*
 * The residency of the file open as fd for reading (or named by path, opened without following a
 * link), by mmap+mincore in windows of bounded size. 0, or -errno with out->known false, out->why
 * the errno and out->fraction FS_RESIDENCY_UNKNOWN: a residency that cannot be measured is
 * unknown, never 0.
 */
int fs_residency_fd(int fd, struct fs_residency *out);
int fs_residency_path(const char *path, struct fs_residency *out);

/*
 * The same as a fraction (0..1), for callers that need only that: FS_RESIDENCY_UNKNOWN
 * (below 0) when it could not be measured. 0 or -errno (an empty file gives 1.0).
 */
int fs_residency(const char *path, double *fraction);

/*
 * Make this node's cache of a file cold: fdatasync (so that the pages a writer made are
 * clean), posix_fadvise(POSIX_FADV_DONTNEED) over the whole file, then measure what is still
 * resident into *after (which the kernel may keep: pages mapped or locked by someone, or a
 * filesystem that ignores the advice). Untimed work: for a writer after creating a replica,
 * and for the driver before the release of each part that must start cold (2, 3). 0 or the
 * first -errno of the sync, the advice or the measurement (*after says whether it is known).
 * fs_drop_path opens path read-only, without following a link and without blocking.
 */
int fs_drop_fd(int fd, struct fs_residency *after); /* fd open for reading */
int fs_drop_path(const char *path, struct fs_residency *after);

/*
 * Create a new file name in directory dirfd with O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC,
 * mode 0644 (the umask applies), flags added to O_WRONLY or O_RDWR as given. An existing
 * name or a symlink is never opened. Returns the fd or -errno (-EEXIST, -ELOOP, ...).
 */
int fs_create(int dirfd, const char *name, int flags);

/*
 * Whether the filesystem of fd lets several writers of one file write at the same time
 * (range-locking parallel filesystems: Lustre, GPFS, CephFS, BeeGFS). Local filesystems and
 * NFS take the inode lock for every buffered write, so concurrent writers only queue (and
 * spin) on it.
 */
bool fs_writes_in_parallel(int fd);

/* The length of fs_token()'s token, without the terminator: 12 lowercase hex digits. */
#define FS_TOKEN_LEN NAMES_TOKEN_LEN

/*
 * A random token of FS_TOKEN_LEN lowercase hex digits (48 bits from getrandom), written to
 * out (at least FS_TOKEN_LEN + 1 bytes), for the names of the files a run creates: the pid
 * alone repeats (containers where stagebench is pid 1, cloned nodes), so a name left by a
 * killed run would be in the way of every later one. 0, or -errno of getrandom when it could
 * not give bytes (ENOSYS, EAGAIN before the pool is ready): the token is then made from the
 * clocks, the pid and a counter, still different from any earlier run's, and still usable.
 */
int fs_token(char *out, size_t size);

/* Remove an advisory page-cache hint: drop this file's cached pages (posix_fadvise DONTNEED). */
int fs_drop_cache(int fd);

#endif
