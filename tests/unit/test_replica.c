/* SPDX-License-Identifier: MIT */
/*
 * Replicas on real files: content and headers of what replica_create writes, what
 * replica_probe and replica_is_ours say about ours and about foreign files, refusals,
 * the no-replace race between two processes, and no temporary file left behind.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "platform/fsinfo.h"
#include "util/pattern.h"
#include "platform/ours.h"
#include "platform/replica.h"
#include "platform/replica_identity.h"
#include "platform/replica_probe.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)

/* The filesystems the tests run on: a disk one, and tmpfs, which may refuse O_DIRECT. */
static const char *const bases[] = {"/tmp", "/dev/shm"};

static char dir[64];
static int top_fd = -1;

/* Entries of the test directory whose name contains s ("" counts all). */
static int count_entries(const char *s)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strstr(e->d_name, s))
			n++;
	closedir(d);
	return n;
}

/*
 * Compare the whole file with the pattern it must hold (its origin in block 0 when origin is
 * not NULL), and check every block header.
 */
static void check_content_origin(const char *name, uint64_t size, uint64_t gen,
				 const struct pattern_origin *origin)
{
	unsigned char *got = malloc(MIB), *want = malloc(MIB);
	uint64_t off, bad = 0, found = 0;
	int fd = openat(top_fd, name, O_RDONLY);
	size_t n;
	int rc;

	CHECK(fd >= 0 && got && want);
	for (off = 0; fd >= 0 && off < size; off += n) {
		n = (size_t)(size - off < MIB ? size - off : MIB);
		CHECK_MSG(pread(fd, got, n, (off_t)off) == (ssize_t)n, "%s at %" PRIu64, name, off);
		rc = pattern_check_range(got, n, gen, off, &bad, &found);
		CHECK_MSG(rc == 0, "%s: header at %" PRIu64 ": %d (gen %" PRIu64 ")", name, bad, rc,
			  found);
		pattern_fill(want, n, gen, off);
		if (off == 0 && origin)
			pattern_origin_put(want, gen, origin);
		CHECK_MSG(memcmp(got, want, n) == 0, "%s: content at %" PRIu64, name, off);
	}
	if (fd >= 0)
		CHECK_MSG(pread(fd, got, 1, (off_t)size) == 0, "%s is longer than %" PRIu64, name,
			  size);
	close(fd);
	free(got);
	free(want);
}

static void check_content(const char *name, uint64_t size, uint64_t gen)
{
	check_content_origin(name, size, gen, NULL);
}

struct create_case {
	const char *name;
	uint64_t size;
	unsigned nthreads;
	uint64_t xfer;
};

static void test_create(void)
{
	const struct create_case cases[] = {
	    {"r1m", MIB, 2, MIB},
	    {"r8m", 8 * MIB, 2, MIB},
	    {"r8m3", 8 * MIB + 12 * KIB, 3, MIB},
	    {"rodd", 5 * MIB + 4 * KIB, 2, 12 * KIB},
	    {"rbig", 3 * MIB, 2, 16 * MIB},
	    {"rblock", 4 * KIB, 4, 4 * KIB},
	    {"rmany", 2 * MIB, 64, 4 * KIB},
	    {"rxfer", 6 * MIB, 2, 6000}, /* an --xfer of no whole blocks: rounded up */
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct create_case *k = &cases[i];
		uint64_t gen = replica_new_generation();
		struct replica_info info;
		struct io_error err;
		int rc;

		rc = replica_create(top_fd, dir, k->name, k->size, gen, NULL, k->nthreads, k->xfer,
				    false, NULL, &err);
		CHECK_MSG(rc == 0, "%s: %d %s '%s'", k->name, rc, err.op, err.path);
		CHECK_U64(err.errnum, 0);
		check_content(k->name, k->size, gen);
		rc = replica_probe(top_fd, k->name, &info);
		CHECK(rc == 0);
		CHECK_U64(info.size, k->size);
		CHECK_U64(info.generation, gen);
		CHECK_MSG(info.ours, "%s", k->name);
		CHECK(info.mtime > (double)time(NULL) - 600 && info.mtime < (double)time(NULL) + 5);
		CHECK(ours_file(top_fd, k->name) == 1);
		CHECK(count_entries(".tmp.") == 0);
		CHECK(ours_remove(top_fd, k->name) == 0);
		CHECK(faccessat(top_fd, k->name, F_OK, 0) != 0 && errno == ENOENT);
	}
	CHECK(count_entries("") == 0);
}

static void test_generation(void)
{
	uint64_t g[1000];
	size_t i, j;
	int dup = 0;

	for (i = 0; i < 1000; i++) {
		g[i] = replica_new_generation();
		CHECK(g[i] != 0);
	}
	for (i = 0; i < 1000; i++)
		for (j = i + 1; j < 1000; j++)
			dup += g[i] == g[j];
	CHECK(dup == 0);
}

/* A file with the given content: "zeros", "text", a "half" replica, "wrongoff", ... */
static void write_file(const char *name, const char *kind, uint64_t size, uint64_t gen)
{
	unsigned char *b = calloc(1, size ? size : 1);
	int fd = openat(top_fd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);

	CHECK(fd >= 0 && b);
	if (strcmp(kind, "text") == 0)
		memset(b, 'x', size);
	if (strcmp(kind, "half") == 0) {
		/* A valid first block, but the last block is not of this replica. */
		pattern_fill(b, size, gen, 0);
		memset(b + size - PATTERN_BLOCK, 0, 64);
	}
	if (strcmp(kind, "wrongoff") == 0)
		pattern_fill(b, size, gen, PATTERN_BLOCK);
	if (strcmp(kind, "lastgen") == 0) {
		pattern_fill(b, size, gen, 0);
		pattern_stamp(b + size - PATTERN_BLOCK, PATTERN_BLOCK, gen + 1,
			      size - PATTERN_BLOCK);
	}
	CHECK(size == 0 || write(fd, b, size) == (ssize_t)size);
	close(fd);
	free(b);
}

struct foreign_case {
	const char *name;
	const char *kind;
	uint64_t size;
	int is_ours;  /* replica_is_ours */
	uint64_t gen; /* replica_probe's generation (0: none) */
};

/*
 * Files stagebench did not write, or not wholly: never ours as replicas; replica_remove
 * leaves them unless block 0 is a stagebench block.
 */
static void test_foreign(void)
{
	const struct foreign_case cases[] = {
	    {"empty", "zeros", 0, 0, 0},
	    {"short", "text", 10, 0, 0},
	    {"text", "text", 8 * KIB, 0, 0},
	    {"zeros", "zeros", 64 * KIB, 0, 0},
	    {"wrongoff", "wrongoff", 64 * KIB, 0, 0},
	    {"half", "half", 64 * KIB, 1, 99},
	    {"lastgen", "lastgen", 64 * KIB, 1, 99},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct foreign_case *k = &cases[i];
		struct replica_info info;
		struct stat st;
		int rc;

		write_file(k->name, k->kind, k->size, 99);
		rc = replica_probe(top_fd, k->name, &info);
		CHECK_MSG(rc == 0, "%s: %d", k->name, rc);
		CHECK_MSG(!info.ours, "%s", k->name);
		CHECK_U64(info.size, k->size);
		CHECK_U64(info.generation, k->gen);
		CHECK_MSG(ours_file(top_fd, k->name) == k->is_ours, "%s", k->name);
		rc = ours_remove(top_fd, k->name);
		if (k->is_ours) {
			CHECK_MSG(rc == 0, "%s: %d", k->name, rc);
		} else {
			CHECK_MSG(rc == -EPERM, "%s: %d", k->name, rc);
			CHECK(fstatat(top_fd, k->name, &st, 0) == 0);
			CHECK_U64(st.st_size, k->size);
			CHECK(unlinkat(top_fd, k->name, 0) == 0);
		}
	}
	CHECK(count_entries("") == 0);
}

/* Names that are not regular files: refused, never followed, never removed. */
static void test_not_files(void)
{
	struct replica_info info;
	struct io_error err;
	struct stat st;

	CHECK(replica_create(top_fd, dir, "target", 64 * KIB, 5, NULL, 1, 64 * KIB, false, NULL,
			     &err) == 0);
	CHECK(symlinkat("target", top_fd, "link") == 0);
	CHECK(mkdirat(top_fd, "sub", 0755) == 0);
	CHECK(mkfifoat(top_fd, "fifo", 0644) == 0);

	CHECK(replica_probe(top_fd, "link", &info) == -EINVAL);
	CHECK(ours_file(top_fd, "link") == 0);
	CHECK(ours_remove(top_fd, "link") == -EPERM);
	CHECK(fstatat(top_fd, "link", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode));
	CHECK(ours_file(top_fd, "target") == 1);

	CHECK(replica_probe(top_fd, "sub", &info) == -EISDIR);
	CHECK(ours_file(top_fd, "sub") == 0);
	CHECK(ours_remove(top_fd, "sub") == -EPERM);

	CHECK(replica_probe(top_fd, "fifo", &info) == -EINVAL);
	CHECK(ours_file(top_fd, "fifo") == 0);
	CHECK(ours_remove(top_fd, "fifo") == -EPERM);

	CHECK(replica_probe(top_fd, "missing", &info) == -ENOENT);
	CHECK(ours_file(top_fd, "missing") == -ENOENT);
	CHECK(ours_remove(top_fd, "missing") == -ENOENT);

	CHECK(unlinkat(top_fd, "link", 0) == 0);
	CHECK(unlinkat(top_fd, "sub", AT_REMOVEDIR) == 0);
	CHECK(unlinkat(top_fd, "fifo", 0) == 0);
	CHECK(ours_remove(top_fd, "target") == 0);
	CHECK(count_entries("") == 0);
}

/* Without replace an existing name always wins, whatever it is; with replace ours goes. */
static void test_no_replace(void)
{
	struct replica_info info;
	struct io_error err;
	char expect[128];
	struct stat st;
	int rc;

	snprintf(expect, sizeof(expect), "%s/r", dir);
	CHECK(replica_create(top_fd, dir, "r", 2 * MIB, 111, NULL, 2, MIB, false, NULL, &err) == 0);
	rc = replica_create(top_fd, dir, "r", 2 * MIB, 222, NULL, 2, MIB, false, NULL, &err);
	CHECK(rc == -EEXIST);
	CHECK_STR(err.op, "rename");
	CHECK_STR(err.path, expect);
	CHECK_U64(err.errnum, EEXIST);
	CHECK(count_entries(".tmp.") == 0);
	CHECK(replica_probe(top_fd, "r", &info) == 0 && info.ours);
	CHECK_U64(info.generation, 111);
	check_content("r", 2 * MIB, 111);

	rc = replica_create(top_fd, dir, "r", MIB, 333, NULL, 2, MIB, true, NULL, &err);
	CHECK(rc == 0);
	CHECK(replica_probe(top_fd, "r", &info) == 0 && info.ours);
	CHECK_U64(info.generation, 333);
	CHECK_U64(info.size, MIB);
	CHECK(ours_remove(top_fd, "r") == 0);

	write_file("foreign", "text", 100, 0);
	rc = replica_create(top_fd, dir, "foreign", MIB, 444, NULL, 2, MIB, false, NULL, &err);
	CHECK(rc == -EEXIST);
	CHECK(fstatat(top_fd, "foreign", &st, 0) == 0 && st.st_size == 100);
	CHECK(count_entries(".tmp.") == 0);
	CHECK(unlinkat(top_fd, "foreign", 0) == 0);
	CHECK(count_entries("") == 0);
}

/*
 * Two processes (two nodes, as far as the names go) prepare the same replica at once:
 * one wins, the other gets -EEXIST, and the file is wholly the winner's.
 */
static void test_race(void)
{
	struct replica_info info;
	struct io_error err;
	int status, rc, child_rc;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		rc = replica_create(top_fd, dir, "race", 16 * MIB, 1001, NULL, 2, MIB, false, NULL,
				    &err);
		_exit(rc == 0 ? 0 : rc == -EEXIST ? 1 : 2);
	}
	CHECK(pid > 0);
	rc = replica_create(top_fd, dir, "race", 16 * MIB, 1002, NULL, 2, MIB, false, NULL, &err);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
	child_rc = WEXITSTATUS(status);
	CHECK_MSG((rc == 0 && child_rc == 1) || (rc == -EEXIST && child_rc == 0),
		  "parent %d child %d", rc, child_rc);
	CHECK(replica_probe(top_fd, "race", &info) == 0 && info.ours);
	CHECK_U64(info.generation, rc == 0 ? 1002 : 1001);
	check_content("race", 16 * MIB, info.generation);
	CHECK(count_entries(".tmp.") == 0);
	CHECK(ours_remove(top_fd, "race") == 0);
}

/* Refusals before anything is written, and a stop: nothing is left behind. */
static void test_refusals(void)
{
	const struct {
		uint64_t size, xfer;
		int stop;
		int rc;
	} cases[] = {
	    {0, MIB, 0, -EINVAL},
	    {1000, MIB, 0, -EINVAL},
	    {MIB, 0, 0, -EINVAL},
	    {8 * MIB, MIB, 1, -EINTR},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		volatile int stop = cases[i].stop;
		struct io_error err;
		int rc;

		rc = replica_create(top_fd, dir, "refused", cases[i].size, 5, NULL, 2,
				    cases[i].xfer, false, &stop, &err);
		CHECK_MSG(rc == cases[i].rc, "case %zu: %d", i, rc);
		CHECK_U64(err.errnum, -cases[i].rc);
		CHECK(count_entries("") == 0);
	}
}

/*
 * More than the filesystem can hold fails at the reservation, before any write, and
 * leaves nothing. The stop flag is set so that a filesystem that cannot reserve space
 * stops at the first piece instead of writing a petabyte.
 */
static void test_too_big(void)
{
	volatile int stop = 1;
	struct io_error err;
	int rc;

	rc = replica_create(top_fd, dir, "huge", 1ull << 50, 5, NULL, 2, MIB, false, &stop, &err);
	CHECK_MSG(rc == -EFBIG || rc == -ENOSPC || rc == -EINTR, "%d", rc);
	if (rc != -EINTR)
		CHECK_STR(err.op, "fallocate");
	CHECK(count_entries("") == 0);
}

/*
 * sysfs refuses O_DIRECT at open with EINVAL, as tmpfs did before Linux 6.6: the block is
 * read through the cache instead, and a sysfs file is of course not ours.
 */
static void test_no_direct(void)
{
	int fd = open("/sys/kernel", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return;
	CHECK(ours_file(fd, "uevent_seqnum") == 0);
	CHECK(ours_remove(fd, "uevent_seqnum") == -EPERM);
	close(fd);
}

/*
 * The writer starts cold (a disk filesystem only: tmpfs pages are the file itself). First
 * the control: a file written and synced the plain way stays in the cache, so the
 * measurement can see pages; then a replica of the same size, which its writer dropped.
 */
static void test_cold(void)
{
	static char buf[1 << 16];
	struct fs_residency r;
	char path[128];
	int fd;

	fd = openat(top_fd, "plain", O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	memset(buf, 'x', sizeof(buf));
	for (uint64_t off = 0; off < 16 * MIB; off += sizeof(buf))
		CHECK(write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
	CHECK(fdatasync(fd) == 0);
	snprintf(path, sizeof(path), "%s/plain", dir);
	CHECK_U64(fs_residency_path(path, &r), 0);
	CHECK_MSG(r.known && r.fraction > 0.5, "plain file after write: %.3f", r.fraction);
	CHECK_U64(fs_drop_fd(fd, &r), 0);
	CHECK_MSG(r.known && r.fraction < 0.1 && r.pages == 16 * MIB / 4096, "dropped: %.3f",
		  r.fraction);
	close(fd);
	CHECK(unlinkat(top_fd, "plain", 0) == 0);

	CHECK_U64(replica_create(top_fd, dir, "cold", 16 * MIB, replica_new_generation(), NULL, 2,
				 MIB, false, NULL, NULL),
		  0);
	snprintf(path, sizeof(path), "%s/cold", dir);
	CHECK_U64(fs_residency_path(path, &r), 0);
	CHECK_MSG(r.known && r.fraction < 0.1, "the writer holds %.3f of its replica", r.fraction);
	printf("writer's residency of a new 16 MiB replica: %.3f\n", r.fraction);
	CHECK(ours_remove(top_fd, "cold") == 0);
}

/*
 * The identity of a replica, re-checked: unchanged; another replica renamed over it (new
 * file, new generation); modified in place; deleted. A symlink is refused, as by the probe.
 */
static void test_identity(void)
{
	struct replica_identity id, other;
	struct timespec ts[2] = {{0, UTIME_OMIT}, {12345, 0}};
	unsigned changed = 99;
	uint64_t gen = replica_new_generation();

	CHECK_U64(replica_create(top_fd, dir, "ident", MIB, gen, NULL, 2, MIB, false, NULL, NULL),
		  0);
	CHECK_U64(replica_identity_get(top_fd, "ident", &id), 0);
	CHECK(id.has_generation && id.generation == gen && id.size == MIB && id.ino != 0);
	CHECK_U64(replica_identity_check(top_fd, "ident", &id, &changed), 0);
	CHECK_U64(changed, 0);

	CHECK_U64(replica_create(top_fd, dir, "ident2", MIB, replica_new_generation(), NULL, 1, MIB,
				 false, NULL, NULL),
		  0);
	CHECK(renameat(top_fd, "ident2", top_fd, "ident") == 0);
	CHECK_U64(replica_identity_check(top_fd, "ident", &id, &changed), 1);
	CHECK_MSG((changed & (REPLICA_CHANGED_FILE | REPLICA_CHANGED_GENERATION)) ==
			  (REPLICA_CHANGED_FILE | REPLICA_CHANGED_GENERATION) &&
		      !(changed & (REPLICA_CHANGED_SIZE | REPLICA_CHANGED_GONE)),
		  "replaced: %#x", changed);

	CHECK_U64(replica_identity_get(top_fd, "ident", &other), 0);
	CHECK(utimensat(top_fd, "ident", ts, 0) == 0);
	CHECK_U64(replica_identity_check(top_fd, "ident", &other, &changed), 1);
	CHECK_MSG(changed == REPLICA_CHANGED_TIMES, "touched: %#x", changed);

	CHECK(unlinkat(top_fd, "ident", 0) == 0);
	CHECK_U64(replica_identity_check(top_fd, "ident", &other, &changed), 1);
	CHECK_U64(changed, REPLICA_CHANGED_GONE);

	/*
	 * The origin a replica is created with is read back with its identity (block 0); a
	 * replica created without one has none: unknown, as an older stagebench's.
	 */
	struct pattern_origin origin = {.run_id = "r20", .repetition = 2};
	gen = replica_new_generation();
	CHECK_U64(
	    replica_create(top_fd, dir, "ident", MIB, gen, &origin, 2, MIB, false, NULL, NULL), 0);
	CHECK_U64(replica_identity_get(top_fd, "ident", &id), 0);
	CHECK(id.has_origin && strcmp(id.origin.run_id, "r20") == 0 && id.origin.repetition == 2);
	check_content_origin("ident", MIB, gen, &origin);
	CHECK_U64(replica_identity_get(top_fd, "ident", &other), 0);
	CHECK(unlinkat(top_fd, "ident", 0) == 0);
	CHECK_U64(replica_create(top_fd, dir, "ident", MIB, gen, NULL, 2, MIB, false, NULL, NULL),
		  0);
	CHECK_U64(replica_identity_get(top_fd, "ident", &other), 0);
	CHECK(!other.has_origin && other.origin.run_id[0] == '\0');
	CHECK(unlinkat(top_fd, "ident", 0) == 0);

	CHECK(symlinkat("elsewhere", top_fd, "ident") == 0);
	CHECK_U64(replica_identity_get(top_fd, "ident", &other), -EINVAL);
	CHECK(replica_identity_check(top_fd, "ident", &id, &changed) == -EINVAL && changed == 0);
	CHECK(unlinkat(top_fd, "ident", 0) == 0);
}

/* Make name with size bytes: zeros (fallocate) or, with fill, that byte everywhere. */
static void make_file(const char *name, uint64_t size, int fill)
{
	static unsigned char b[PATTERN_BLOCK];
	int fd = openat(top_fd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);

	CHECK(fd >= 0);
	if (size && fill < 0)
		CHECK(ftruncate(fd, (off_t)size) == 0);
	memset(b, fill, sizeof(b));
	for (uint64_t off = 0; fill >= 0 && off < size; off += sizeof(b))
		CHECK(write(fd, b, sizeof(b)) == (ssize_t)sizeof(b));
	close(fd);
}

/* Names and contents together: what an interrupted run leaves, and what another may own. */
static void test_leftovers(void)
{
	static const char tmp0[] = "stagebench.1a.4MiB.tmp.n1.7.0123456789ab";
	static const char tmpz[] = "stagebench.1a.4MiB.tmp.n1.8.0123456789ab";
	static const char tmpx[] = "stagebench.1a.4MiB.tmp.n1.9.0123456789ab";
	static const char f40[] = "stagebench.4a.n1.p7-0123456789ab-r1.t0.000001";
	static const char f4z[] = "stagebench.4a.n1.p7-0123456789ab-r1.t0.000002";
	static const char near[] = "stagebench.4a.n1.p7-0123456789ab-r1.t0.0001";
	static const char tmph[] = "stagebench.1a.4MiB.tmp.n1.10.0123456789ab";

	make_file(tmp0, 0, 0);
	make_file(tmpz, MIB, -1);
	make_file(tmpx, MIB, 'x');
	make_file(f40, 0, 0);
	make_file(f4z, MIB, -1);
	make_file(near, 0, 0);
	CHECK_U64(replica_create(top_fd, dir, "ours", MIB, replica_new_generation(), NULL, 1, MIB,
				 false, NULL, NULL),
		  0);
	CHECK(renameat(top_fd, "ours", top_fd, tmph) == 0);
	CHECK(symlinkat("elsewhere", top_fd, "stagebench.1a.4MiB.tmp.n1.11.0123456789ab") == 0);

	/* a temporary: empty, reserved (zeros) or written; never another's bytes or a link */
	CHECK_U64(ours_removable(top_fd, tmp0), 1);
	CHECK_U64(ours_removable(top_fd, tmpz), 1);
	CHECK_U64(ours_removable(top_fd, tmph), 1);
	CHECK_U64(ours_removable(top_fd, tmpx), 0);
	/* a kind's file: empty or written, never zeros (only a temporary reserves space) */
	CHECK_U64(ours_removable(top_fd, f40), 1);
	CHECK_U64(ours_removable(top_fd, f4z), 0);
	/* not a name of the grammar: only its content could make it ours */
	CHECK_U64(ours_removable(top_fd, near), 0);
	CHECK_U64(ours_removable(top_fd, "stagebench.1a.4MiB.tmp.n1.11.0123456789ab"), 0);
	CHECK_U64(ours_removable(top_fd, "stagebench.1a.4MiB.tmp.n1.12.0123456789ab"), -ENOENT);
	/* check's leftovers: its write probe's bytes, its probe's reserved block */
	static const char wr[] = "stagebench.check-write.7.0123456789ab";
	static const char wrx[] = "stagebench.check-write.8.0123456789ab";
	static const char pz[] = "stagebench.check.probe.7.0123456789ab";
	static const char px[] = "stagebench.check.probe.7.0123456789abx";
	make_file(wr, PATTERN_BLOCK, OURS_WRITE_BYTE);
	make_file(wrx, PATTERN_BLOCK, 'x');
	make_file(pz, 2 * PATTERN_BLOCK, -1);
	make_file(px, 0, 0);
	CHECK_U64(ours_removable(top_fd, wr), 1);
	CHECK_U64(ours_removable(top_fd, wrx), 0);
	CHECK_U64(ours_removable(top_fd, pz), 1);
	CHECK_U64(ours_removable(top_fd, px), 0);
	for (const char *const *n = (const char *const[]){wr, wrx, pz, px, NULL}; *n; n++)
		CHECK_MSG(unlinkat(top_fd, *n, 0) == 0, "%s: %s", *n, strerror(errno));

	for (const char *const *n =
		 (const char *const[]){tmp0, tmpz, tmpx, f40, f4z, near, tmph,
				       "stagebench.1a.4MiB.tmp.n1.11.0123456789ab", NULL};
	     *n; n++)
		CHECK_MSG(unlinkat(top_fd, *n, 0) == 0, "%s: %s", *n, strerror(errno));
}

int main(void)
{
	size_t b;

	for (b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		snprintf(dir, sizeof(dir), "%s/sb-test-replica.XXXXXX", bases[b]);
		if (!mkdtemp(dir)) {
			perror("mkdtemp");
			return 1;
		}
		top_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		CHECK(top_fd >= 0);
		test_create();
		test_generation();
		test_foreign();
		test_not_files();
		test_no_replace();
		test_race();
		test_refusals();
		test_too_big();
		test_identity();
		test_leftovers();
		if (b == 0)
			test_cold();
		close(top_fd);
		CHECK_MSG(rmdir(dir) == 0, "%s: %s", dir, strerror(errno));
	}
	test_no_direct();
	return check_done();
}
