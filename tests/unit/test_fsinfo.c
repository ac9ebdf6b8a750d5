/* SPDX-License-Identifier: MIT */
/*
 * Unit test of platform/fsinfo on real files in a temporary directory under /tmp: mount
 * lookup (checked against statfs), page-cache residency before and after dropping, and
 * fs_create's refusal to follow or reuse names. Cleans up everything it made.
 */
#include "platform/fsinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "check.h"

#define RESID_BYTES  (8u << 20)
#define SPARSE_BYTES (3ull << 29) /* 1.5 GiB: two mincore windows */

static char tmpdir[64];

/* statfs magic numbers and the mountinfo type each implies (a prefix: ext2/3/4 share one). */
static const struct {
	unsigned long magic;
	const char *type;
} fs_magics[] = {
    {0xEF53, "ext"},	   {0x01021994, "tmpfs"}, {0x9fa0, "proc"},
    {0x62656572, "sysfs"}, {0x58465342, "xfs"},	  {0x9123683E, "btrfs"},
};

/* The mount found must hold the real path on a component boundary and match statfs. */
static void check_dir(const char *dir, const char *want_type, const char *want_mp)
{
	struct fs_info fi;
	struct statfs sf;
	char *real = realpath(dir, NULL);
	size_t len;
	int err;

	memset(&fi, 0xa5, sizeof(fi));
	err = fs_info_get(dir, &fi);
	CHECK_MSG(err == 0, "%s: fs_info_get: %d", dir, err);
	CHECK_MSG(real != NULL, "%s: realpath", dir);
	if (err || !real)
		goto out;
	CHECK_MSG(fi.type[0] && fi.source[0] && fi.options[0] && fi.mountpoint[0],
		  "%s: empty field: type '%s' source '%s'", dir, fi.type, fi.source);
	CHECK_MSG(strchr(fi.options, ',') != NULL, "%s: options '%s'", dir, fi.options);
	len = strlen(fi.mountpoint);
	CHECK_MSG(strcmp(fi.mountpoint, "/") == 0 || (strncmp(real, fi.mountpoint, len) == 0 &&
						      (real[len] == '\0' || real[len] == '/')),
		  "%s: mount point '%s' does not hold '%s'", dir, fi.mountpoint, real);
	if (want_type)
		CHECK_STR(fi.type, want_type);
	if (want_mp)
		CHECK_STR(fi.mountpoint, want_mp);
	CHECK_MSG(statfs(dir, &sf) == 0, "%s: statfs", dir);
	for (size_t i = 0; i < sizeof(fs_magics) / sizeof(fs_magics[0]); i++) {
		if ((unsigned long)sf.f_type == fs_magics[i].magic)
			CHECK_MSG(
			    strncmp(fi.type, fs_magics[i].type, strlen(fs_magics[i].type)) == 0,
			    "%s: type '%s' but statfs says %s", dir, fi.type, fs_magics[i].type);
	}
	/* Some pseudo filesystems report zero blocks; those that count must add up. */
	if (sf.f_blocks) {
		CHECK_MSG(fi.bytes_total > 0 && fi.bytes_free <= fi.bytes_total,
			  "%s: %llu free of %llu", dir, (unsigned long long)fi.bytes_free,
			  (unsigned long long)fi.bytes_total);
		CHECK(fi.block_size > 0);
	}
	printf("%s: %s on %s (%s), %llu MiB free\n", dir, fi.type, fi.mountpoint, fi.source,
	       (unsigned long long)(fi.bytes_free >> 20));
out:
	free(real);
}

static void test_info(void)
{
	struct fs_info fi;
	char sub[128];

	check_dir(tmpdir, NULL, NULL);
	check_dir("/tmp", NULL, NULL);
	check_dir("/", NULL, "/");
	check_dir("/proc/self", "proc", "/proc");
	/* /dev/shm may be mounted twice here; the visible one has the directory's st_dev. */
	check_dir("/dev/shm", "tmpfs", "/dev/shm");
	check_dir("/dev/shm/.", "tmpfs", "/dev/shm");

	/* A path through a symlink resolves to the real directory. */
	snprintf(sub, sizeof(sub), "%s/link", tmpdir);
	CHECK(symlink("/dev/shm", sub) == 0);
	check_dir(sub, "tmpfs", "/dev/shm");
	CHECK(unlink(sub) == 0);

	{
		struct fs_info on_tmp, on_sub;

		snprintf(sub, sizeof(sub), "%s/d", tmpdir);
		CHECK(mkdir(sub, 0755) == 0);
		CHECK(fs_info_get(tmpdir, &on_tmp) == 0);
		CHECK(fs_info_get(sub, &on_sub) == 0);
		CHECK_STR(on_sub.mountpoint, on_tmp.mountpoint);
		CHECK_STR(on_sub.type, on_tmp.type);
		CHECK_U64(on_sub.bytes_total, on_tmp.bytes_total);
		CHECK(rmdir(sub) == 0);
	}

	CHECK_U64(fs_info_get("/nonexistent/stagebench", &fi), -ENOENT);
}

static void path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

/* The mount point fs_info_get() finds for tmpdir/name, realpath'd names compared. */
static void check_mount(const char *name, const char *want_mp, const char *want_source,
			const char *want_opts_prefix)
{
	char path[128], mp[PATH_MAX];
	struct fs_info fi;
	int err;

	path_in(path, sizeof(path), name);
	if (want_mp[0] == '/') {
		snprintf(mp, sizeof(mp), "%s", want_mp);
	} else {
		path_in(path, sizeof(path), want_mp);
		CHECK(realpath(path, mp) != NULL);
		path_in(path, sizeof(path), name);
	}
	err = fs_info_get(path, &fi);
	CHECK_MSG(err == 0, "%s: %d", name, err);
	if (err)
		return;
	CHECK_MSG(strcmp(fi.mountpoint, mp) == 0, "'%s': mount point '%s', want '%s'", name,
		  fi.mountpoint, mp);
	if (want_source)
		CHECK_MSG(strcmp(fi.source, want_source) == 0, "'%s': source '%s', want '%s'", name,
			  fi.source, want_source);
	if (want_opts_prefix)
		CHECK_MSG(strncmp(fi.options, want_opts_prefix, strlen(want_opts_prefix)) == 0,
			  "'%s': options '%s'", name, fi.options);
}

/*
 * With privilege, build the awkward cases: names with a space (mountinfo writes "\040"), a
 * sibling whose name extends a bind mount of the same filesystem (only the component
 * boundary tells them apart), a bind mount stacked on itself and remounted read-only (the
 * later line wins), and a mount hidden under a later mount of its parent (only the device
 * number finds the right one). Skipped when mount(2) is not permitted.
 */
static void test_mounts(void)
{
	static const char *const dirs[] = {"src", "b nd", "b ndx", "o", "o/x", "t mp"};
	char p[6][128], root_mp[PATH_MAX];
	struct fs_info fi;
	int mounted = 0;

	for (size_t i = 0; i < 6; i++) {
		path_in(p[i], sizeof(p[i]), dirs[i]);
		CHECK(mkdir(p[i], 0755) == 0);
	}
	if (mount("sb src", p[5], "tmpfs", 0, "size=1m") != 0) {
		printf("mount cases: skipped (mount: %s)\n", strerror(errno));
		goto out;
	}
	mounted |= 1;
	check_mount("t mp", "t mp", "sb src", "rw,");
	CHECK(fs_info_get(p[5], &fi) == 0 && fi.bytes_total == 1u << 20);
	CHECK_STR(fi.type, "tmpfs");

	CHECK(fs_info_get(tmpdir, &fi) == 0);
	snprintf(root_mp, sizeof(root_mp), "%s", fi.mountpoint);
	if (mount(p[0], p[1], NULL, MS_BIND, NULL) == 0)
		mounted |= 2;
	check_mount("b nd", "b nd", NULL, NULL);
	check_mount("b ndx", root_mp, NULL, NULL);
	if (mount(p[0], p[1], NULL, MS_BIND, NULL) == 0)
		mounted |= 4;
	CHECK(mount(NULL, p[1], NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) == 0);
	check_mount("b nd", "b nd", NULL, "ro,");

	if (mount("lower", p[4], "tmpfs", 0, "size=1m") == 0)
		mounted |= 8;
	if (mount("upper", p[3], "tmpfs", 0, "size=1m") == 0)
		mounted |= 16;
	CHECK(mkdir(p[4], 0755) == 0);
	check_mount("o/x", "o", "upper", NULL);
	CHECK(mounted == 31);
out:
	if (mounted & 16)
		CHECK(umount(p[3]) == 0);
	if (mounted & 8)
		CHECK(umount(p[4]) == 0);
	if (mounted & 4)
		CHECK(umount(p[1]) == 0);
	if (mounted & 2)
		CHECK(umount(p[1]) == 0);
	if (mounted & 1)
		CHECK(umount(p[5]) == 0);
	for (size_t i = 6; i-- > 0;)
		CHECK_MSG(rmdir(p[i]) == 0, "rmdir '%s': %s", p[i], strerror(errno));
}

static void test_residency(void)
{
	static char buf[1 << 16];
	char path[128];
	double frac = -1, pages;
	ssize_t n;
	int fd, dfd, err;

	dfd = open(tmpdir, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0);

	/* Empty file: nothing to be missing. */
	fd = fs_create(dfd, "empty", 0);
	CHECK(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/empty", tmpdir);
	CHECK_U64(fs_residency(path, &frac), 0);
	CHECK(frac == 1.0);
	CHECK(unlink(path) == 0);

	/* 8 MiB written and flushed, dropped, then read back in full. */
	fd = fs_create(dfd, "resid", O_RDWR);
	CHECK(fd >= 0);
	memset(buf, 'x', sizeof(buf));
	for (size_t off = 0; off < RESID_BYTES; off += sizeof(buf))
		CHECK(write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
	CHECK(fsync(fd) == 0);
	snprintf(path, sizeof(path), "%s/resid", tmpdir);
	CHECK_U64(fs_residency(path, &frac), 0);
	printf("residency after write: %.3f\n", frac);
	CHECK_U64(fs_drop_cache(fd), 0);
	CHECK_U64(fs_residency(path, &frac), 0);
	CHECK_MSG(frac < 0.5, "after drop: %.3f", frac);
	printf("residency after drop: %.3f\n", frac);
	CHECK(lseek(fd, 0, SEEK_SET) == 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	CHECK(n == 0);
	CHECK_U64(fs_residency(path, &frac), 0);
	CHECK_MSG(frac > 0.99, "after read: %.3f", frac);
	close(fd);
	CHECK(unlink(path) == 0);

	/* A sparse file larger than one window: the page read in the second window counts. */
	fd = fs_create(dfd, "sparse", O_RDWR);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, (off_t)SPARSE_BYTES) == 0);
	snprintf(path, sizeof(path), "%s/sparse", tmpdir);
	CHECK_U64(fs_drop_cache(fd), 0);
	CHECK_U64(fs_residency(path, &frac), 0);
	CHECK_MSG(frac < 0.001, "untouched sparse: %.6f", frac);
	CHECK(pread(fd, buf, 4096, (off_t)(SPARSE_BYTES - 4096)) == 4096);
	CHECK_U64(fs_residency(path, &frac), 0);
	/* A whole number of pages (so every window counted in the denominator), few of them. */
	pages = frac * (double)(SPARSE_BYTES / (uint64_t)sysconf(_SC_PAGESIZE));
	CHECK_MSG(pages >= 0.999 && pages < 64.001 && pages - (double)(long)(pages + 0.5) < 1e-6 &&
		      (double)(long)(pages + 0.5) - pages < 1e-6,
		  "one page read: %.6f pages resident", pages);
	close(fd);
	CHECK(unlink(path) == 0);

	err = fs_residency(tmpdir, &frac);
	CHECK_MSG(err == -EINVAL, "directory: %d", err);
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	CHECK_U64(fs_residency(path, &frac), -ENOENT);
	CHECK_U64(fs_drop_cache(-1), -EBADF);
	close(dfd);
}

struct create_case {
	const char *name;
	int flags;
	int err;     /* 0: created; else the only accepted error */
	int alt_err; /* a second accepted error, or 0 */
};

static void test_create(void)
{
	static const struct create_case cases[] = {
	    {"new", O_RDWR, 0, 0},
	    {"new", O_RDWR, -EEXIST, 0},
	    {"wo", 0, 0, 0}, /* no access mode: opened for writing */
	    {"dangling", O_WRONLY, -EEXIST, -ELOOP},
	    {"tolink", O_WRONLY, -EEXIST, -ELOOP},
	    {"d", O_WRONLY, -EEXIST, 0}, /* a directory */
	    {"a/b", O_WRONLY, -EINVAL, 0},
	    {"", O_WRONLY, -EINVAL, 0},
	    {".", O_WRONLY, -EINVAL, 0},
	    {"..", O_WRONLY, -EINVAL, 0},
	};
	static const char *const made[] = {"new", "wo", "dangling", "tolink", "target", "d/x"};
	char path[128], target[128];
	mode_t old = umask(022);
	struct stat st;
	int dfd, fd;

	dfd = open(tmpdir, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0);
	snprintf(target, sizeof(target), "%s/target", tmpdir);
	CHECK(symlinkat(target, dfd, "dangling") == 0);
	CHECK(symlinkat("new", dfd, "tolink") == 0);
	CHECK(mkdirat(dfd, "d", 0755) == 0);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct create_case *c = &cases[i];

		fd = fs_create(dfd, c->name, c->flags);
		if (c->err == 0) {
			CHECK_MSG(fd >= 0, "create '%s': %d", c->name, fd);
			if (fd < 0)
				continue;
			CHECK_MSG(write(fd, "z", 1) == 1, "'%s' not writable", c->name);
			CHECK(fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
			      (st.st_mode & 07777) == 0644);
			CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
			close(fd);
		} else {
			CHECK_MSG(fd == c->err || (c->alt_err && fd == c->alt_err),
				  "create '%s': got %d, want %d", c->name, fd, c->err);
			if (fd >= 0)
				close(fd);
		}
	}
	/* Never followed: the dangling link's target was not created. */
	CHECK_MSG(access(target, F_OK) != 0 && errno == ENOENT, "symlink target was created");
	/* The link to "new" left "new" as it was (one byte from the first case). */
	CHECK(fstatat(dfd, "new", &st, 0) == 0 && st.st_size == 1);
	CHECK_U64(fs_create(-1, "x", O_WRONLY), -EBADF);

	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, made[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/d", tmpdir);
	CHECK(rmdir(path) == 0);
	close(dfd);
	umask(old);
}

/*
 * A residency that cannot be measured is unknown with its reason, never 0: sysfs files are
 * regular files of 4096 bytes that cannot be mapped (ENODEV, as a FUSE direct_io file);
 * a directory is not a file; a symlink is not followed.
 */
static void test_residency_unknown(void)
{
	struct fs_residency r;
	char path[128];
	double frac = 0.5;

	CHECK_U64(fs_residency_path("/sys/devices/system/cpu/online", &r), -ENODEV);
	CHECK(!r.known && r.why == ENODEV && r.fraction == FS_RESIDENCY_UNKNOWN);
	CHECK(r.pages == 0 && r.resident == 0);
	CHECK_U64(fs_residency("/sys/devices/system/cpu/online", &frac), -ENODEV);
	CHECK(frac < 0);
	CHECK_U64(fs_drop_path("/sys/devices/system/cpu/online", &r), -ENODEV);
	CHECK(!r.known && r.why == ENODEV);
	CHECK_U64(fs_residency_path(tmpdir, &r), -EINVAL);
	CHECK(!r.known && r.why == EINVAL && r.fraction < 0);
	snprintf(path, sizeof(path), "%s/link", tmpdir);
	CHECK(symlink("/sys/devices/system/cpu/online", path) == 0);
	CHECK_U64(fs_residency_path(path, &r), -ELOOP);
	CHECK(!r.known && r.why == ELOOP);
	CHECK(unlink(path) == 0);
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	CHECK_U64(fs_drop_path(path, &r), -ENOENT);
	CHECK(!r.known && r.why == ENOENT && r.fraction < 0);
}

/* Tokens: 12 lowercase hex digits, a new one each call, refused into too small a buffer. */
static void test_token(void)
{
	char a[FS_TOKEN_LEN + 1], b[FS_TOKEN_LEN + 1], small[FS_TOKEN_LEN];

	CHECK_U64(fs_token(a, sizeof(a)), 0);
	CHECK_U64(fs_token(b, sizeof(b)), 0);
	CHECK_U64(strlen(a), FS_TOKEN_LEN);
	CHECK_U64(strspn(a, "0123456789abcdef"), FS_TOKEN_LEN);
	CHECK_U64(strspn(b, "0123456789abcdef"), FS_TOKEN_LEN);
	CHECK_MSG(strcmp(a, b) != 0, "two tokens alike: %s", a);
	CHECK(fs_token(small, sizeof(small)) == -EINVAL && small[0] == '\0');
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/sb-fsinfo-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_info();
	test_mounts();
	test_residency();
	test_create();
	test_token();
	test_residency_unknown();
	CHECK_MSG(rmdir(tmpdir) == 0, "%s not empty or not removable: %s", tmpdir, strerror(errno));
	return check_done();
}
