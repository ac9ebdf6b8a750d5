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

/*
 * Fraction (0..1) of the file's pages resident in this node's page cache, by mmap+mincore
 * in windows of bounded size. 0 or -errno (an empty file gives 1.0).
 */
int fs_residency(const char *path, double *fraction);

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
#define FS_TOKEN_LEN 12

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
