/* SPDX-License-Identifier: MIT */
/*
 * The benchmark kinds, driven one thread at a time through setup, run and teardown on real
 * files in a temporary directory: exact counts, verification, errors, stopping, clean-up.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "platform/clock.h"
#include "util/pattern.h"
#include "workers/registry.h"
#include "platform/ours.h"
#include "platform/replica.h"
#include "util/names.h"

#define KIB	      1024ull
#define MIB	      (1024ull * 1024ull)
#define REPLICA_BYTES MIB
#define TINY_BYTES    (64 * KIB)

static char dir[64];
static int top_fd = -1;
static char files_dir[128]; /* test 4 writes here, so it can be counted empty */
static int files_fd = -1;
static uint64_t gen_good, gen_tiny;
static char path_good[128], path_tiny[128], path_missing[128];
static long page_size;

/* A thread's context as the driver would build it, with everything it owns. */
struct rig {
	struct bench_params p;
	struct bench_ctx c;
	struct hist lat;
	volatile int stop;
	char prefix[128]; /* of the names of created files */
};

static void rig_init(struct rig *r, const struct bench_params *p)
{
	memset(r, 0, sizeof(*r));
	r->p = *p;
	if (!r->p.page_size)
		r->p.page_size = page_size;
	if (!r->p.part)
		r->p.part = "t";
	r->p.dir = files_dir;
	r->p.dirfd = files_fd;
	names_file_prefix(r->prefix, sizeof(r->prefix), r->p.part, "nodeA", "p1");
	r->p.name_prefix = r->prefix;
	r->c.p = &r->p;
	prng_seed(&r->c.rng, 42, prng_hash_str("nodeA"), 0);
	if (posix_memalign(&r->c.buf, 4096, r->p.xfer ? r->p.xfer : 4096) != 0)
		abort();
	memset(r->c.buf, 0x5a, r->p.xfer ? r->p.xfer : 4096);
	hist_init(&r->lat);
	r->c.lat = &r->lat;
	r->c.stop = &r->stop;
	atomic_init(&r->c.live_bytes, 0);
	atomic_init(&r->c.live_ops, 0);
}

static void rig_free(struct rig *r)
{
	free(r->c.buf);
	r->c.buf = NULL;
}

/* setup, run, teardown as the driver calls them: teardown only when setup succeeded. */
static int rig_drive(const struct bench_ops *ops, struct rig *r)
{
	int rc = ops->setup ? ops->setup(&r->c) : 0;

	if (rc)
		return rc;
	rc = ops->run(&r->c);
	if (ops->teardown)
		ops->teardown(&r->c);
	return rc;
}

static int count_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static double now_s(void)
{
	return (double)clock_mono_ns() / 1e9;
}

static void make_replica(const char *name, uint64_t size, uint64_t gen)
{
	struct io_error err;
	int rc = replica_create(top_fd, dir, name, size, gen, NULL, 2, MIB, true, NULL, &err);

	CHECK_MSG(rc == 0, "replica_create %s: %d (%s)", name, rc, err.op);
}

/* Overwrite the header of one block of a file: with another generation, or with garbage. */
static void damage_block(const char *name, uint64_t block, uint64_t other_gen)
{
	unsigned char b[PATTERN_BLOCK];
	int fd = openat(top_fd, name, O_RDWR);

	CHECK(fd >= 0);
	CHECK(pread(fd, b, sizeof(b), (off_t)(block * PATTERN_BLOCK)) == (ssize_t)sizeof(b));
	if (other_gen)
		pattern_stamp(b, sizeof(b), other_gen, block * PATTERN_BLOCK);
	else
		memset(b, 0xa5, 64);
	CHECK(pwrite(fd, b, sizeof(b), (off_t)(block * PATTERN_BLOCK)) == (ssize_t)sizeof(b));
	close(fd);
}

/* The byte at the start of every page, summed: what mmaptouch must fold into c->sum. */
static uint64_t page_sum(const char *path, uint64_t size)
{
	unsigned char b;
	uint64_t off, sum = 0;
	int fd = open(path, O_RDONLY);

	for (off = 0; off < size; off += (uint64_t)page_size)
		if (pread(fd, &b, 1, (off_t)off) == 1)
			sum += b;
	close(fd);
	return sum;
}

/* Every registered kind is found by its name, once, and says what it does. */
static void test_registry(void)
{
	for (size_t i = 0; bench_all[i]; i++) {
		const struct bench_ops *ops = bench_all[i];

		CHECK_MSG(bench_find(ops->name) == ops, "%s", ops->name);
		CHECK(ops->what && *ops->what);
		CHECK(ops->run != NULL);
		/* every kind counts its operations: a kind that declares none is a mistake */
		CHECK_MSG(ops->expect.ops != 0, "%s declares no expected operations", ops->name);
		for (size_t k = 0; k < i; k++)
			CHECK_MSG(strcmp(bench_all[k]->name, ops->name) != 0, "%s twice",
				  ops->name);
	}
	CHECK(bench_find("seqread") == &bench_seqread);
	CHECK(bench_find("nope") == NULL);
	CHECK(bench_find(NULL) == NULL);
}

/*
 * What each kind's rate counts agrees with what it does: files written are bytes written, a
 * mapped replica is pages touched, a read replica bytes read, no I/O operations.
 */
static void test_units(void)
{
	for (size_t i = 0; bench_all[i]; i++) {
		const struct bench_ops *ops = bench_all[i];
		unsigned caps = ops->caps;
		enum bench_unit want = caps & BENCH_WRITES_FILES    ? BENCH_UNIT_BYTES_WRITTEN
				       : caps & BENCH_MAPS_REPLICA  ? BENCH_UNIT_PAGES
				       : caps & BENCH_READS_REPLICA ? BENCH_UNIT_BYTES_READ
								    : BENCH_UNIT_OPS;
		CHECK_MSG(ops->unit == want, "kind %s: unit %d, its caps say %d", ops->name,
			  (int)ops->unit, (int)want);
	}
	static const struct {
		enum bench_unit unit;
		const char *counted, *rate;
	} names[] = {
	    {BENCH_UNIT_OPS, "operations", "ops/s"},
	    {BENCH_UNIT_BYTES_READ, "bytes read", "B/s"},
	    {BENCH_UNIT_BYTES_WRITTEN, "bytes written", "B/s"},
	    {BENCH_UNIT_PAGES, "pages touched", "pages/s"},
	};
	CHECK_U64(sizeof(names) / sizeof(names[0]), BENCH_UNIT_COUNT);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		CHECK_STR(bench_unit_counted(names[i].unit), names[i].counted);
		CHECK_STR(bench_unit_rate(names[i].unit), names[i].rate);
	}
	CHECK_STR(bench_unit_counted(BENCH_UNIT_COUNT), "?");
	CHECK_STR(bench_unit_rate(BENCH_UNIT_COUNT), "?");
	/* each word once, in the catalogue's order (catalogue.py's COUNTED and RATE_UNITS) */
	const char *words[BENCH_UNIT_COUNT + 1];
	static const char *const counted[] = {"bytes read", "bytes written", "pages touched",
					      "operations"};
	static const char *const rates[] = {"B/s", "pages/s", "ops/s"};
	CHECK_U64(bench_unit_words(false, words, BENCH_UNIT_COUNT + 1), 4);
	for (size_t i = 0; i < 4; i++)
		CHECK_STR(words[i], counted[i]);
	CHECK(words[4] == NULL);
	CHECK_U64(bench_unit_words(true, words, BENCH_UNIT_COUNT + 1), 3);
	for (size_t i = 0; i < 3; i++)
		CHECK_STR(words[i], rates[i]);
	CHECK(words[3] == NULL);
	CHECK_U64(bench_unit_words(false, words, 2), 1);
	CHECK(words[1] == NULL);
}

static void test_fail(void)
{
	struct bench_ctx c;

	memset(&c, 0, sizeof(c));
	CHECK(bench_fail_at(&c, "read", "/x/a", 4096, EIO) == -EIO);
	CHECK(bench_fail(&c, "open", "/x/b", ENOENT) == -ENOENT);
	CHECK_U64(c.err.errnum, EIO);
	CHECK_STR(c.err.op, "read");
	CHECK_STR(c.err.path, "/x/a");
	CHECK(c.err.has_offset);
	CHECK_U64(c.err.offset, 4096);

	memset(&c, 0, sizeof(c));
	CHECK(bench_fail(&c, "write", "/x/c", -ENOSPC) == -ENOSPC);
	CHECK_U64(c.err.errnum, ENOSPC);
	CHECK(!c.err.has_offset);
	memset(&c, 0, sizeof(c));
	CHECK(bench_fail(&c, "write", NULL, 0) == -EIO);
	CHECK_STR(c.err.path, "");

	memset(&c, 0, sizeof(c));
	CHECK(bench_fail_verify(&c, "/x/d", 8192, ESTALE, 7, 9) == -ESTALE);
	CHECK_STR(c.err.op, "verify");
	CHECK(c.err.has_generation);
	CHECK_U64(c.err.expected_gen, 7);
	CHECK_U64(c.err.found_gen, 9);
	CHECK(bench_fail_verify(&c, "/x/e", 0, EBADMSG, 1, 2) == -EBADMSG);
	CHECK_U64(c.err.offset, 8192);
	memset(&c, 0, sizeof(c));
	bench_fail_verify(&c, "/x/f", 0, -EBADMSG, 1, 2);
	CHECK_U64(c.err.errnum, EBADMSG);
	CHECK(!c.err.has_generation);
}

/* Exact counts of a clean run, per kind and parameters. */
struct count_case {
	const char *kind;
	const char *path;
	uint64_t count, chunk, passes, xfer;
	bool verify, fsync;
	uint64_t bytes, ops, pages, files;
};

/* The product of the parameters of p that bits name (struct bench_expect's meaning). */
static uint64_t expect_product(unsigned bits, const struct bench_params *p)
{
	uint64_t v = 1;

	if (!bits)
		return 0;
	if (bits & BENCH_BY_COUNT)
		v *= p->count;
	if (bits & BENCH_BY_CHUNK)
		v *= p->chunk;
	if (bits & BENCH_BY_FILE)
		v *= p->file_bytes;
	if (bits & BENCH_BY_PASSES)
		v *= p->passes;
	return v;
}

/*
 * Every kind's counts, and that they are what its expect declares (the collector's check of a
 * summary), where the parameters are those a plan gives (N and passes at least 1).
 */
static void test_counts(void)
{
	const uint64_t pg = (uint64_t)page_size, R = REPLICA_BYTES;
	const struct count_case cases[] = {
	    {"null", NULL, 5, 0, 0, 4096, false, false, 0, 5, 0, 0},
	    {"null", NULL, 0, 0, 0, 4096, false, false, 0, 1, 0, 0},
	    {"seqread", path_good, 0, 0, 3, 64 * KIB, true, false, 3 * R, 3, 0, 0},
	    {"seqread", path_good, 0, 0, 2, 96 * KIB, true, false, 2 * R, 2, 0, 0},
	    {"seqread", path_good, 0, 0, 1, 4 * MIB, true, false, R, 1, 0, 0},
	    {"seqread", path_good, 0, 0, 2, 1000, false, false, 2 * R, 2, 0, 0},
	    {"seqread", path_good, 0, 0, 0, MIB, false, false, 0, 0, 0, 0},
	    {"mmaptouch", path_good, 0, 0, 2, MIB, true, false, 2 * R, 2, 2 * R / pg, 0},
	    {"mmaptouch", path_good, 0, 0, 3, MIB, false, false, 3 * R, 3, 3 * R / pg, 0},
	    {"randread", path_good, 100, 4 * KIB, 0, MIB, true, false, 400 * KIB, 100, 0, 0},
	    {"randread", path_good, 10, 64 * KIB, 0, 16 * KIB, true, false, 640 * KIB, 10, 0, 0},
	    {"randread", path_good, 3, MIB, 0, 256 * KIB, true, false, 3 * MIB, 3, 0, 0},
	    {"randread", path_good, 50, 8 * KIB, 0, 3000, false, false, 400 * KIB, 50, 0, 0},
	    {"randread", path_good, 0, 8 * KIB, 0, MIB, false, false, 0, 0, 0, 0},
	    {"manyfiles", NULL, 5, 12 * KIB, 0, 4 * KIB, false, false, 60 * KIB, 5, 0, 5},
	    {"manyfiles", NULL, 3, MIB, 0, 256 * KIB, false, true, 3 * MIB, 3, 0, 3},
	    {"manyfiles", NULL, 2, 5000, 0, 3000, false, false, 10000, 2, 0, 2},
	    {"manyfiles", NULL, 2, 0, 0, 4096, false, false, 0, 2, 0, 2},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct count_case *k = &cases[i];
		struct bench_params p = {
		    .path = k->path,
		    .count = k->count,
		    .chunk = k->chunk,
		    .passes = k->passes,
		    .xfer = k->xfer,
		    .file_bytes = REPLICA_BYTES,
		    .generation = gen_good,
		    .verify = k->verify,
		    .fsync = k->fsync,
		};
		struct rig r;
		int rc;

		rig_init(&r, &p);
		rc = rig_drive(bench_find(k->kind), &r);
		CHECK_MSG(rc == 0, "case %zu %s: rc %d op '%s'", i, k->kind, rc, r.c.err.op);
		CHECK_MSG(r.c.bytes == k->bytes, "case %zu %s: bytes %" PRIu64, i, k->kind,
			  r.c.bytes);
		CHECK_MSG(r.c.ops == k->ops, "case %zu %s: ops %" PRIu64, i, k->kind, r.c.ops);
		CHECK_MSG(r.c.pages == k->pages, "case %zu %s: pages %" PRIu64, i, k->kind,
			  r.c.pages);
		CHECK_MSG(r.c.files == k->files, "case %zu %s: files %" PRIu64, i, k->kind,
			  r.c.files);
		const struct bench_expect *x = &bench_find(k->kind)->expect;
		if ((k->count || !((x->ops | x->bytes) & BENCH_BY_COUNT)) &&
		    (k->passes || !((x->ops | x->bytes) & BENCH_BY_PASSES))) {
			CHECK_MSG(r.c.ops == expect_product(x->ops, &p), "case %zu %s: expect ops",
				  i, k->kind);
			CHECK_MSG(r.c.bytes == expect_product(x->bytes, &p),
				  "case %zu %s: expect bytes", i, k->kind);
			CHECK_MSG(r.c.files == expect_product(x->files, &p),
				  "case %zu %s: expect files", i, k->kind);
		}
		CHECK_U64(r.lat.count, k->ops);
		CHECK_U64(atomic_load(&r.c.live_ops), k->ops);
		CHECK_U64(atomic_load(&r.c.live_bytes), k->bytes);
		CHECK(!r.c.stopped);
		CHECK_U64(r.c.retries, 0);
		CHECK_U64(r.c.err.errnum, 0);
		CHECK(r.c.priv == NULL);
		if (strcmp(k->kind, "mmaptouch") == 0)
			CHECK_U64(r.c.sum, k->passes * page_sum(path_good, REPLICA_BYTES));
		CHECK_MSG(count_entries(files_dir) == 0, "case %zu: %d files left", i,
			  count_entries(files_dir));
		rig_free(&r);
	}
}

/*
 * Random chunks: with verify on, every block read must carry the header of its own offset,
 * which proves each read went to an aligned offset inside the file; the generator must have
 * been drawn exactly once per chunk, in [0, F/M).
 */
static void test_randread_offsets(void)
{
	static const uint64_t chunks[] = {4 * KIB, 8 * KIB, 16 * KIB, TINY_BYTES};
	size_t i;
	uint64_t j;

	for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		struct bench_params p = {
		    .path = path_tiny,
		    .count = 2000,
		    .chunk = chunks[i],
		    .xfer = 8 * KIB,
		    .file_bytes = TINY_BYTES,
		    .generation = gen_tiny,
		    .verify = true,
		};
		struct prng expect;
		struct rig r;
		int rc;

		rig_init(&r, &p);
		expect = r.c.rng;
		rc = rig_drive(&bench_randread, &r);
		CHECK_MSG(rc == 0, "chunk %" PRIu64 ": rc %d at %" PRIu64, chunks[i], rc,
			  r.c.err.offset);
		CHECK_U64(r.c.ops, 2000);
		CHECK_U64(r.c.bytes, 2000 * chunks[i]);
		for (j = 0; j < 2000; j++)
			prng_below(&expect, TINY_BYTES / chunks[i]);
		CHECK(memcmp(&expect, &r.c.rng, sizeof(expect)) == 0);
		rig_free(&r);
	}
}

/* One damaged block: every reading kind must name it, with the generation it found. */
struct verify_case {
	const char *kind;
	uint64_t block;
	bool garbage;
	uint64_t chunk, xfer, count;
};

static void test_verify_failures(void)
{
	const struct verify_case cases[] = {
	    {"seqread", 0, false, 0, MIB, 0},
	    {"seqread", 37, false, 0, 64 * KIB, 0},
	    {"seqread", 255, true, 0, 96 * KIB, 0},
	    {"mmaptouch", 0, true, 0, MIB, 0},
	    {"mmaptouch", 37, false, 0, MIB, 0},
	    {"mmaptouch", 255, false, 0, MIB, 0},
	    {"randread", 37, false, MIB, 256 * KIB, 1},
	    {"randread", 100, true, 64 * KIB, 16 * KIB, 500},
	    {"randread", 255, false, 4 * KIB, 4 * KIB, 5000},
	};
	const uint64_t other = gen_good ^ 0x5555;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct verify_case *k = &cases[i];
		char path[192];
		struct bench_params p = {
		    .path = path,
		    .count = k->count,
		    .chunk = k->chunk,
		    .passes = 2,
		    .xfer = k->xfer,
		    .file_bytes = REPLICA_BYTES,
		    .generation = gen_good,
		    .verify = true,
		};
		struct rig r;
		int rc;

		snprintf(path, sizeof(path), "%s/bad", dir);
		make_replica("bad", REPLICA_BYTES, gen_good);
		damage_block("bad", k->block, k->garbage ? 0 : other);
		rig_init(&r, &p);
		rc = rig_drive(bench_find(k->kind), &r);
		CHECK_MSG(rc == (k->garbage ? -EBADMSG : -ESTALE), "case %zu %s: rc %d", i, k->kind,
			  rc);
		CHECK_STR(r.c.err.op, "verify");
		CHECK_STR(r.c.err.path, path);
		CHECK(r.c.err.has_offset);
		CHECK_MSG(r.c.err.offset == k->block * PATTERN_BLOCK, "case %zu: offset %" PRIu64,
			  i, r.c.err.offset);
		CHECK(r.c.err.has_generation == !k->garbage);
		if (!k->garbage) {
			CHECK_U64(r.c.err.expected_gen, gen_good);
			CHECK_U64(r.c.err.found_gen, other);
		}
		CHECK(!r.c.stopped);
		rig_free(&r);
		CHECK(unlinkat(top_fd, "bad", 0) == 0);
	}
}

/* Files of another size than the part says, and files that are missing. */
struct size_case {
	const char *kind;
	const char *path;
	uint64_t file_bytes, chunk, count;
	int rc;
	const char *op;
	uint64_t min_off, max_off;
};

static void test_io_errors(void)
{
	const uint64_t R = REPLICA_BYTES;
	const struct size_case cases[] = {
	    {"seqread", path_good, R + 8 * KIB, 0, 0, -EIO, "read", R, R},
	    {"seqread", path_good, R - 8 * KIB, 0, 0, -EIO, "read", R, R},
	    {"seqread", path_good, 2 * R, 0, 0, -EIO, "read", R, R},
	    {"randread", path_good, 2 * R, 64 * KIB, 500, -EIO, "read", R, 2 * R},
	    {"seqread", path_missing, R, 0, 0, -ENOENT, "open", 0, 0},
	    {"mmaptouch", path_missing, R, 0, 0, -ENOENT, "open", 0, 0},
	    {"randread", path_missing, R, 4096, 1, -ENOENT, "open", 0, 0},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct size_case *k = &cases[i];
		struct bench_params p = {
		    .path = k->path,
		    .count = k->count,
		    .chunk = k->chunk,
		    .passes = 2,
		    .xfer = 64 * KIB,
		    .file_bytes = k->file_bytes,
		    .generation = gen_good,
		};
		struct rig r;
		int rc;

		rig_init(&r, &p);
		rc = rig_drive(bench_find(k->kind), &r);
		CHECK_MSG(rc == k->rc, "case %zu %s: rc %d", i, k->kind, rc);
		CHECK_STR(r.c.err.op, k->op);
		CHECK_STR(r.c.err.path, k->path);
		if (k->max_off) {
			CHECK(r.c.err.has_offset);
			CHECK_MSG(r.c.err.offset >= k->min_off && r.c.err.offset < k->max_off + 1,
				  "case %zu: offset %" PRIu64, i, r.c.err.offset);
		}
		CHECK_U64(r.c.ops, 0);
		rig_free(&r);
	}
}

/*
 * A replica truncated under the mapping: the pages past the new end raise SIGBUS, which
 * must come back as an error of the run, twice in a row (the handler is reusable).
 */
static void test_mmap_truncated(void)
{
	char path[192];
	int round;

	snprintf(path, sizeof(path), "%s/trunc", dir);
	make_replica("trunc", REPLICA_BYTES, gen_good);
	CHECK(truncate(path, REPLICA_BYTES / 2) == 0);
	for (round = 0; round < 4; round++) {
		struct bench_params p = {
		    .path = path,
		    .passes = 3,
		    .xfer = MIB,
		    .file_bytes = REPLICA_BYTES,
		    .generation = gen_good,
		    .verify = round & 1,
		};
		struct rig r;
		int rc;

		rig_init(&r, &p);
		rc = rig_drive(&bench_mmaptouch, &r);
		CHECK_MSG(rc == -EFAULT, "round %d: rc %d", round, rc);
		CHECK_STR(r.c.err.op, "touch");
		CHECK_STR(r.c.err.path, path);
		CHECK(r.c.err.has_offset);
		CHECK_MSG(r.c.err.offset >= REPLICA_BYTES / 2 && r.c.err.offset < REPLICA_BYTES,
			  "offset %" PRIu64, r.c.err.offset);
		CHECK_U64(r.c.ops, 0);
		rig_free(&r);
	}
	CHECK(unlinkat(top_fd, "trunc", 0) == 0);
}

/*
 * Outside a guarded loop a SIGBUS keeps its default action: a child that faults on its
 * own mapping, and one that raises SIGBUS, must both die of it.
 */
static void test_sigbus_elsewhere(void)
{
	int how, status;

	for (how = 0; how < 2; how++) {
		pid_t pid = fork();

		if (pid == 0) {
			const volatile unsigned char *m;
			char path[192];
			int fd;

			if (how == 1)
				raise(SIGBUS);
			snprintf(path, sizeof(path), "%s/child", dir);
			fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || ftruncate(fd, 4096) != 0)
				_exit(2);
			m = mmap(NULL, 8 * 4096, PROT_READ, MAP_SHARED, fd, 0);
			unlink(path);
			if (m == MAP_FAILED)
				_exit(3);
			(void)m[4 * 4096];
			_exit(0);
		}
		CHECK(pid > 0);
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS, "how %d: status %#x",
			  how, status);
	}
}

static void test_manyfiles_keep(void)
{
	struct bench_params p = {
	    .part = "4a",
	    .count = 4,
	    .chunk = 8 * KIB,
	    .xfer = 4 * KIB,
	    .generation = 77,
	    .keep = true,
	};
	struct rig r;
	struct stat st;
	char name[128];
	int i, rc;

	rig_init(&r, &p);
	r.c.thread = 3;
	rc = rig_drive(&bench_manyfiles, &r);
	CHECK(rc == 0);
	CHECK_U64(r.c.files, 4);
	CHECK(count_entries(files_dir) == 4);
	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "stagebench.4a.nodeA.p1.t3.%06d", i);
		CHECK_MSG(fstatat(files_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0, "%s", name);
		CHECK_U64(st.st_size, 8 * KIB);
		CHECK(ours_file(files_fd, name) == 1);
		CHECK(unlinkat(files_fd, name, 0) == 0);
	}
	CHECK(count_entries(files_dir) == 0);
	rig_free(&r);
}

/*
 * A name that exists already is someone else's file: the run fails on it, and teardown
 * removes the files this thread created and never that one.
 */
static void test_manyfiles_collision(void)
{
	static const char foreign[] = "stagebench.4b.nodeA.p1.t0.000002";
	struct bench_params p = {
	    .part = "4b",
	    .count = 5,
	    .chunk = 4 * KIB,
	    .xfer = 4 * KIB,
	    .generation = 78,
	};
	char expect[256];
	struct stat st;
	struct rig r;
	int fd, rc;

	fd = openat(files_fd, foreign, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0 && write(fd, "not yours", 9) == 9);
	close(fd);
	rig_init(&r, &p);
	rc = rig_drive(&bench_manyfiles, &r);
	CHECK(rc == -EEXIST);
	CHECK_STR(r.c.err.op, "create");
	snprintf(expect, sizeof(expect), "%s/%s", files_dir, foreign);
	CHECK_STR(r.c.err.path, expect);
	CHECK_U64(r.c.files, 2);
	CHECK(count_entries(files_dir) == 1);
	CHECK(fstatat(files_fd, foreign, &st, 0) == 0 && st.st_size == 9);
	CHECK(unlinkat(files_fd, foreign, 0) == 0);
	rig_free(&r);
}

/* Parameters that would take a long time with any kind if stop were ignored. */
static const struct bench_params stop_params = {
    .count = 1ull << 40, .chunk = 4 * KIB, .passes = 1ull << 40, .xfer = 64 * KIB};

static void *stop_later(void *arg)
{
	struct timespec ts = {0, 30 * 1000 * 1000};

	nanosleep(&ts, NULL);
	__atomic_store_n(&((struct rig *)arg)->stop, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void test_stop(void)
{
	size_t i;
	int later;

	for (later = 0; later < 2; later++) {
		for (i = 0; bench_all[i]; i++) {
			struct bench_params p = stop_params;
			struct rig r;
			pthread_t t;
			double t0;
			int rc;

			p.part = bench_all[i]->name;
			p.path = path_good;
			p.file_bytes = REPLICA_BYTES;
			p.generation = gen_good;
			p.verify = true;
			rig_init(&r, &p);
			r.stop = !later;
			t0 = now_s();
			if (later)
				CHECK(pthread_create(&t, NULL, stop_later, &r) == 0);
			rc = rig_drive(bench_all[i], &r);
			if (later)
				pthread_join(t, NULL);
			CHECK_MSG(rc == 0, "%s: rc %d", p.part, rc);
			CHECK_MSG(r.c.stopped, "%s", p.part);
			CHECK_MSG(now_s() - t0 < 5.0, "%s took %.1f s", p.part, now_s() - t0);
			if (!later)
				CHECK_MSG(r.c.ops == 0 && r.c.bytes == 0, "%s", p.part);
			CHECK_U64(r.lat.count, r.c.ops);
			CHECK(count_entries(files_dir) == 0);
			rig_free(&r);
		}
	}
}

static void test_bad_params(void)
{
	const struct {
		const char *kind;
		struct bench_params p;
	} cases[] = {
	    {"seqread", {.xfer = 0, .passes = 1}},
	    {"seqread", {.xfer = 1000, .passes = 1, .verify = true}},
	    {"randread", {.xfer = 4096, .chunk = 0, .count = 1}},
	    {"randread", {.xfer = 4096, .chunk = 2 * MIB, .count = 1}},
	    {"randread", {.xfer = 4096, .chunk = 6000, .count = 1, .verify = true}},
	    {"mmaptouch", {.xfer = 4096, .passes = 1, .page_size = 3000}},
	    {"mmaptouch", {.xfer = 4096, .passes = 1, .page_size = 2048, .verify = true}},
	    {"manyfiles", {.xfer = 0, .count = 1}},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bench_params p = cases[i].p;
		struct rig r;

		p.path = path_good;
		p.file_bytes = REPLICA_BYTES;
		rig_init(&r, &p);
		CHECK_MSG(rig_drive(bench_find(cases[i].kind), &r) == -EINVAL, "case %zu", i);
		CHECK_STR(r.c.err.op, "setup");
		CHECK(r.c.priv == NULL);
		rig_free(&r);
	}
}

/*
 * Every kind records when its timed work began: after set-up, before run returns, no later
 * than its first operation's end. 1a keeps its first pass apart from the following ones,
 * and their times add up to what the latency histogram holds.
 */
static void test_first_io(void)
{
	for (size_t i = 0; bench_all[i]; i++) {
		const struct bench_ops *ops = bench_all[i];
		struct bench_params p = {.path = path_good,
					 .count = 4,
					 .chunk = 4 * KIB,
					 .passes = 5,
					 .xfer = 64 * KIB,
					 .file_bytes = REPLICA_BYTES,
					 .generation = gen_good};
		uint64_t ready, end, sum = 0;
		struct rig r;

		rig_init(&r, &p);
		CHECK(r.c.first_io_ns == 0);
		CHECK_U64(ops->setup ? ops->setup(&r.c) : 0, 0);
		ready = clock_mono_ns();
		CHECK_U64(ops->run(&r.c), 0);
		end = clock_mono_ns();
		if (ops->teardown)
			ops->teardown(&r.c);
		CHECK_MSG(r.c.first_io_ns >= ready && r.c.first_io_ns + r.lat.min_ns <= end,
			  "%s: first I/O at %" PRIu64 ", ready at %" PRIu64 ", end at %" PRIu64,
			  ops->name, r.c.first_io_ns, ready, end);
		if (ops == &bench_seqread) {
			CHECK(r.c.first_pass_ns > 0);
			CHECK_U64(r.c.npass_ns, 4);
			CHECK_U64(r.c.passes_not_kept, 0);
			sum = r.c.first_pass_ns;
			for (uint64_t k = 0; k < r.c.npass_ns; k++) {
				CHECK(r.c.pass_ns[k] > 0);
				sum += r.c.pass_ns[k];
			}
			CHECK_U64(sum, r.lat.sum_ns);
			CHECK(end - ready >= sum);
		} else {
			CHECK(r.c.first_pass_ns == 0 && r.c.npass_ns == 0);
		}
		rig_free(&r);
	}

	/* More passes than are kept: the rest are counted, and are in the histogram. */
	{
		struct bench_params p = {.path = path_tiny,
					 .passes = BENCH_PASS_TIMES + 3,
					 .xfer = 64 * KIB,
					 .file_bytes = TINY_BYTES};
		struct rig r;

		rig_init(&r, &p);
		CHECK_U64(rig_drive(bench_find("seqread"), &r), 0);
		CHECK_U64(r.c.npass_ns, BENCH_PASS_TIMES);
		CHECK_U64(r.c.passes_not_kept, 2);
		CHECK_U64(r.lat.count, BENCH_PASS_TIMES + 3);
		rig_free(&r);
	}

	/* A stop before the first pass: the instant is still recorded, no pass is. */
	{
		struct bench_params p = {
		    .path = path_good, .passes = 3, .xfer = 64 * KIB, .file_bytes = REPLICA_BYTES};
		struct rig r;

		rig_init(&r, &p);
		r.stop = 1;
		CHECK_U64(rig_drive(bench_find("seqread"), &r), 0);
		CHECK(r.c.stopped && r.c.first_io_ns > 0 && r.c.first_pass_ns == 0);
		rig_free(&r);
	}
}

static void test_median(void)
{
	uint64_t odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2}, big[] = {UINT64_MAX, UINT64_MAX - 2};
	uint64_t one[] = {7};

	CHECK_U64(bench_median_ns(odd, 3), 3);
	CHECK_U64(bench_median_ns(even, 4), 2);
	CHECK(even[0] == 1 && even[3] == 4);
	CHECK_U64(bench_median_ns(big, 2), UINT64_MAX - 1);
	CHECK_U64(bench_median_ns(one, 1), 7);
	CHECK_U64(bench_median_ns(one, 0), 0);
}

int main(void)
{
	page_size = sysconf(_SC_PAGESIZE);
	snprintf(dir, sizeof(dir), "/tmp/sb-test-workers.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	top_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(files_dir, sizeof(files_dir), "%s/files", dir);
	CHECK(mkdir(files_dir, 0755) == 0);
	files_fd = open(files_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(path_good, sizeof(path_good), "%s/good", dir);
	snprintf(path_tiny, sizeof(path_tiny), "%s/tiny", dir);
	snprintf(path_missing, sizeof(path_missing), "%s/missing", dir);
	gen_good = replica_new_generation();
	gen_tiny = replica_new_generation();
	make_replica("good", REPLICA_BYTES, gen_good);
	make_replica("tiny", TINY_BYTES, gen_tiny);

	test_registry();
	test_units();
	test_fail();
	test_counts();
	test_randread_offsets();
	test_verify_failures();
	test_io_errors();
	test_mmap_truncated();
	test_sigbus_elsewhere();
	test_manyfiles_keep();
	test_manyfiles_collision();
	test_stop();
	test_bad_params();
	test_first_io();
	test_median();

	unlinkat(top_fd, "good", 0);
	unlinkat(top_fd, "tiny", 0);
	close(files_fd);
	CHECK(rmdir(files_dir) == 0);
	close(top_fd);
	CHECK_MSG(rmdir(dir) == 0, "%s not empty", dir);
	return check_done();
}
