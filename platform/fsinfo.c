/* SPDX-License-Identifier: MIT */
/*
 * Filesystem facts for the summary and the preflight: the mount holding a directory (from
 * /proc/self/mountinfo), its free space, how much of a file sits in the page cache, and the
 * single safe way stagebench creates files.
 */
#include "platform/fsinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define FS_MOUNTINFO "/proc/self/mountinfo"

/* The largest mapping fs_residency() makes at once, so a 512 GiB replica fits any VM. */
#define FS_WINDOW (1ull << 30)

/* One line of mountinfo, split in place; the strings point into the line. */
struct fs_mount {
	unsigned major, minor;
	char *mountpoint;
	char *mount_opts;
	char *fstype;
	char *source;
	char *super_opts;
};

/* A mount that matched, copied out of the line buffer that getline() reuses. */
struct fs_candidate {
	bool found;
	size_t len; /* length of the decoded mount point */
	struct fs_info info;
};

/* Undo the kernel's octal escapes (space \040, tab \011, newline \012, backslash \134). */
static void fs_unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* Next space-separated field of *p, or NULL at the end of the line. */
static char *fs_field(char **p)
{
	char *start = *p, *end;

	if (!start || !*start)
		return NULL;
	end = strchr(start, ' ');
	if (end) {
		*end = '\0';
		*p = end + 1;
	} else {
		*p = NULL;
	}
	return start;
}

/*
 * "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue":
 * id, parent, major:minor, root, mount point, mount options, optional fields up to "-",
 * then type, source and super options. 0, or -EINVAL for a line of another shape.
 */
static int fs_mount_parse(char *line, struct fs_mount *m)
{
	char *p = line, *f;

	line[strcspn(line, "\n")] = '\0';
	if (!fs_field(&p) || !fs_field(&p))
		return -EINVAL;
	f = fs_field(&p);
	if (!f || sscanf(f, "%u:%u", &m->major, &m->minor) != 2)
		return -EINVAL;
	if (!fs_field(&p))
		return -EINVAL;
	m->mountpoint = fs_field(&p);
	m->mount_opts = fs_field(&p);
	if (!m->mount_opts)
		return -EINVAL;
	do {
		f = fs_field(&p);
	} while (f && strcmp(f, "-") != 0);
	m->fstype = fs_field(&p);
	m->source = fs_field(&p);
	m->super_opts = fs_field(&p);
	if (!m->super_opts)
		return -EINVAL;
	fs_unescape(m->mountpoint);
	fs_unescape(m->fstype);
	fs_unescape(m->source);
	return 0;
}

/* Whether mount point mp contains path, on a component boundary ("/a" holds "/a/b", not "/ab"). */
static bool fs_path_under(const char *path, const char *mp, size_t len)
{
	if (strcmp(mp, "/") == 0)
		return path[0] == '/';
	return strncmp(path, mp, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

/*
 * Keep m if it is at least as long as the best so far: on equal length the later line wins,
 * because a later mount on the same point hides the earlier one.
 */
static void fs_candidate_offer(struct fs_candidate *c, const struct fs_mount *m, size_t len)
{
	struct fs_info *fi = &c->info;

	if (c->found && len < c->len)
		return;
	c->found = true;
	c->len = len;
	snprintf(fi->type, sizeof(fi->type), "%s", m->fstype);
	snprintf(fi->source, sizeof(fi->source), "%s", m->source);
	snprintf(fi->options, sizeof(fi->options), "%s,%s", m->mount_opts, m->super_opts);
	snprintf(fi->mountpoint, sizeof(fi->mountpoint), "%s", m->mountpoint);
}

/*
 * The device number decides between stacked or nested mounts; the longest prefix alone is
 * the fallback for filesystems whose st_dev differs from the mount's (btrfs subvolumes,
 * some overlay and FUSE setups).
 */
static int fs_mount_find(const char *real, dev_t dev, struct fs_info *out)
{
	struct fs_candidate by_dev = {0}, by_path = {0};
	struct fs_mount m;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int err = 0;

	f = fopen(FS_MOUNTINFO, "re");
	if (!f)
		return -errno;
	errno = 0;
	while (getline(&line, &cap, f) >= 0) {
		size_t len;

		if (fs_mount_parse(line, &m) < 0)
			continue;
		len = strlen(m.mountpoint);
		if (!fs_path_under(real, m.mountpoint, len))
			continue;
		fs_candidate_offer(&by_path, &m, len);
		if (m.major == major(dev) && m.minor == minor(dev))
			fs_candidate_offer(&by_dev, &m, len);
	}
	if (ferror(f)) {
		err = errno ? -errno : -EIO;
		goto out;
	}
	if (by_dev.found)
		*out = by_dev.info;
	else if (by_path.found)
		*out = by_path.info;
	else
		err = -ENOENT;
out:
	fclose(f);
	free(line);
	return err;
}

int fs_info_get(const char *dir, struct fs_info *out)
{
	struct statvfs sv;
	struct stat st;
	char *real;
	int err = 0;

	memset(out, 0, sizeof(*out));
	real = realpath(dir, NULL);
	if (!real)
		return -errno;
	if (stat(real, &st) < 0 || statvfs(real, &sv) < 0) {
		err = -errno;
		goto out;
	}
	err = fs_mount_find(real, st.st_dev, out);
	if (err < 0)
		goto out;
	out->bytes_total = (uint64_t)sv.f_blocks * sv.f_frsize;
	out->bytes_free = (uint64_t)sv.f_bavail * sv.f_frsize;
	out->inodes_total = sv.f_files;
	out->inodes_free = sv.f_favail;
	out->block_size = sv.f_bsize;
out:
	free(real);
	return err;
}

/*
 * mincore() on a shared file mapping reports the page cache without faulting pages in.
 * Since Linux 5.2 it does so only for a caller that owns the file or may write it (or has
 * CAP_SYS_ADMIN); for anyone else it reports just the pages this process has mapped, so a
 * replica owned by another user reads as almost cold.
 */
/* Count the resident pages of fd's st_size bytes, a window of FS_WINDOW at a time. */
static int fs_count_resident(int fd, uint64_t size, uint64_t *pages, uint64_t *resident)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *vec = malloc(FS_WINDOW / (uint64_t)page);
	void *map = MAP_FAILED;
	size_t len = 0;
	int err = 0;

	if (!vec)
		return -ENOMEM;
	for (uint64_t off = 0; off < size; off += FS_WINDOW) {
		size_t n;

		len = (size_t)(size - off < FS_WINDOW ? size - off : FS_WINDOW);
		map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
		if (map == MAP_FAILED) {
			err = -errno;
			goto out;
		}
		if (mincore(map, len, vec) < 0) {
			err = -errno;
			goto out;
		}
		n = (len + (size_t)page - 1) / (size_t)page;
		for (size_t i = 0; i < n; i++)
			*resident += vec[i] & 1;
		*pages += n;
		munmap(map, len);
		map = MAP_FAILED;
	}
out:
	if (map != MAP_FAILED)
		munmap(map, len);
	free(vec);
	return err;
}

int fs_residency_fd(int fd, struct fs_residency *out)
{
	struct stat st;
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->fraction = FS_RESIDENCY_UNKNOWN;
	if (fstat(fd, &st) < 0)
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -EINVAL;
	else if (st.st_size > 0)
		err = fs_count_resident(fd, (uint64_t)st.st_size, &out->pages, &out->resident);
	if (err) {
		out->pages = out->resident = 0;
		out->why = -err;
		return err;
	}
	out->known = true;
	out->fraction = out->pages ? (double)out->resident / (double)out->pages : 1.0;
	return 0;
}

/*
 * on_fd run on path opened read-only, not through a link; when it cannot be opened, out says
 * unknown and why. O_NONBLOCK: a FIFO planted at the name must not hold the caller.
 */
static int fs_residency_open(const char *path, struct fs_residency *out,
			     int (*on_fd)(int fd, struct fs_residency *out))
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	int rc;

	if (fd < 0) {
		rc = -errno;
		memset(out, 0, sizeof(*out));
		out->fraction = FS_RESIDENCY_UNKNOWN;
		out->why = -rc;
		return rc;
	}
	rc = on_fd(fd, out);
	close(fd);
	return rc;
}

int fs_residency_path(const char *path, struct fs_residency *out)
{
	return fs_residency_open(path, out, fs_residency_fd);
}

int fs_residency(const char *path, double *fraction)
{
	struct fs_residency r;
	int rc = fs_residency_path(path, &r);

	*fraction = r.fraction;
	return rc;
}

/*
 * fdatasync first: DONTNEED drops only clean pages, and a writer's pages are dirty until
 * written back. A read-only filesystem or a file that cannot be synced (EINVAL, EROFS) has
 * nothing dirty of ours; any other sync error is the caller's to know.
 */
int fs_drop_fd(int fd, struct fs_residency *after)
{
	int rc = 0, e;

	if (fdatasync(fd) != 0 && errno != EINVAL && errno != EROFS)
		rc = -errno;
	e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (!rc && e)
		rc = -e;
	e = fs_residency_fd(fd, after);
	return rc ? rc : e;
}

int fs_drop_path(const char *path, struct fs_residency *after)
{
	return fs_residency_open(path, after, fs_drop_fd);
}

/*
 * O_EXCL with O_CREAT never follows a symlink in the last component (it fails with EEXIST);
 * O_NOFOLLOW states that intent. A name with '/' is refused because it would let a caller
 * escape dirfd through a path the preflight never checked.
 */
int fs_create(int dirfd, const char *name, int flags)
{
	int fd;

	if (!name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0)
		return -EINVAL;
	/* A new file is created to be written; read-only access would make it useless. */
	if ((flags & O_ACCMODE) == O_RDONLY)
		flags |= O_WRONLY;
	fd = openat(dirfd, name, O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | flags, 0644);
	if (fd < 0)
		return -errno;
	return fd;
}

static uint64_t fs_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Without getrandom: both clocks in ns, the pid and a per-process counter, mixed. */
static uint64_t fs_token_fallback(void)
{
	static _Atomic uint64_t calls;
	struct timespec rt, mono;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	return fs_mix(fs_mix((uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec) ^
		      ((uint64_t)mono.tv_nsec << 17) ^ (uint64_t)mono.tv_sec ^
		      ((uint64_t)getpid() << 40) ^ ++calls);
}

int fs_token(char *out, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char bytes[FS_TOKEN_LEN / 2];
	ssize_t got;
	int rc = 0;

	if (size < FS_TOKEN_LEN + 1) {
		if (size)
			out[0] = '\0';
		return -EINVAL;
	}
	do
		got = getrandom(bytes, sizeof(bytes), GRND_NONBLOCK);
	while (got < 0 && errno == EINTR);
	if (got != (ssize_t)sizeof(bytes)) {
		uint64_t x = fs_token_fallback();

		rc = got < 0 ? -errno : -EIO;
		for (size_t i = 0; i < sizeof(bytes); i++)
			bytes[i] = (unsigned char)(x >> (8 * i));
	}
	for (size_t i = 0; i < sizeof(bytes); i++) {
		out[2 * i] = hex[bytes[i] >> 4];
		out[2 * i + 1] = hex[bytes[i] & 15];
	}
	out[FS_TOKEN_LEN] = '\0';
	return rc;
}

/*
 * POSIX_FADV_DONTNEED drops clean cached pages only: dirty ones stay until written back, so
 * a caller that just wrote the file must have flushed it first (fs_drop_fd does).
 */
int fs_drop_cache(int fd)
{
	int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);

	return rc ? -rc : 0;
}

bool fs_writes_in_parallel(int fd)
{
	static const unsigned long parallel[] = {
	    0x0BD00BD0UL, /* Lustre */
	    0x47504653UL, /* GPFS */
	    0x00C36400UL, /* CephFS */
	    0x19830326UL, /* BeeGFS */
	};
	struct statfs sf;

	if (fstatfs(fd, &sf) != 0)
		return false;
	for (size_t i = 0; i < sizeof(parallel) / sizeof(parallel[0]); i++) {
		if ((unsigned long)sf.f_type == parallel[i])
			return true;
	}
	return false;
}
