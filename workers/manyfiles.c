/* SPDX-License-Identifier: MIT */
/*
 * Test 4: every thread creates `count` new files of `chunk` bytes with unique names in the
 * working directory, written in xfer pieces (fsync'd with --fsync), and removes them after
 * the timed window unless asked to keep them. One operation is one file, create to close.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/clock.h"
#include "platform/fsinfo.h"
#include "util/names.h"
#include "util/pattern.h"
#include "workers/bench.h"

struct manyfiles_priv {
	/* Files 0..created-1 exist because we created them; teardown removes exactly those. */
	uint64_t created;
	size_t prefix_len;
	char name[NAME_MAX + 1]; /* p->name_prefix ".t<thread>." + seq (util/names.h) */
	/* All files, with or without fsync: chosen in setup. */
	int (*loop)(struct bench_ctx *c, struct manyfiles_priv *s);
};

/* Complete s->name with seq, in place: the timed loop must neither allocate nor format. */
static void manyfiles_name(struct manyfiles_priv *s, uint64_t seq)
{
	names_file_seq(s->name + s->prefix_len, seq);
}

/* Errors name the file by its full path; formatting is fine here, the loop is over. */
static int manyfiles_fail(struct bench_ctx *c, const struct manyfiles_priv *s, const char *op,
			  bool has_offset, uint64_t off, int errnum)
{
	char path[BENCH_PATH_MAX];
	const char *dir = c->p->dir ? c->p->dir : ".";

	if (snprintf(path, sizeof(path), "%s/%s", dir, s->name) < 0)
		path[0] = '\0';
	if (has_offset)
		return bench_fail_at(c, op, path, off, errnum);
	return bench_fail(c, op, path, errnum);
}

/* Write chunk bytes of c->buf, xfer at a time, retrying EINTR and short writes. */
static int manyfiles_write(struct bench_ctx *c, const struct manyfiles_priv *s, int fd)
{
	const struct bench_params *p = c->p;
	uint64_t done = 0;
	size_t want, got;
	int rc;

	while (done < p->chunk) {
		want = p->chunk - done < p->xfer ? (size_t)(p->chunk - done) : p->xfer;
		rc = bench_io_full(c, BENCH_IO_WRITE, fd, c->buf, want, 0, &got);
		if (rc)
			return manyfiles_fail(c, s, "write", true, done + got, -rc);
		done += want;
	}
	return 0;
}

/*
 * One file, create to close, timed as one operation. A file whose create succeeded is
 * counted in s->created at once, so that teardown removes it even when a write fails.
 */
static inline __attribute__((always_inline)) int
manyfiles_file(struct bench_ctx *c, struct manyfiles_priv *s, uint64_t seq, const bool do_fsync)
{
	const struct bench_params *p = c->p;
	uint64_t t0;
	int fd, rc;

	manyfiles_name(s, seq);
	t0 = clock_mono_ns();
	fd = fs_create(p->dirfd, s->name, O_WRONLY);
	if (fd < 0)
		return manyfiles_fail(c, s, "create", false, 0, -fd);
	s->created++;
	rc = manyfiles_write(c, s, fd);
	if (rc)
		goto out;
	if (do_fsync && fsync(fd) != 0) {
		rc = manyfiles_fail(c, s, "fsync", false, 0, errno);
		goto out;
	}
	/* Write-back errors of NFS and others surface at close: they fail the file. */
	rc = close(fd);
	fd = -1;
	if (rc != 0) {
		rc = manyfiles_fail(c, s, "close", false, 0, errno);
		goto out;
	}
	hist_record(c->lat, clock_mono_ns() - t0);
	c->files++;
	c->ops++;
	c->bytes += p->chunk;
	atomic_store_explicit(&c->live_bytes, c->bytes, memory_order_relaxed);
	atomic_store_explicit(&c->live_ops, c->ops, memory_order_relaxed);
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

static inline __attribute__((always_inline)) int
manyfiles_loop(struct bench_ctx *c, struct manyfiles_priv *s, const bool do_fsync)
{
	uint64_t i;
	int rc;

	for (i = 0; i < c->p->count; i++) {
		if (bench_stopping(c))
			return 0;
		rc = manyfiles_file(c, s, i, do_fsync);
		if (rc)
			return rc;
	}
	return 0;
}

static int manyfiles_loop_plain(struct bench_ctx *c, struct manyfiles_priv *s)
{
	return manyfiles_loop(c, s, false);
}

static int manyfiles_loop_fsync(struct bench_ctx *c, struct manyfiles_priv *s)
{
	return manyfiles_loop(c, s, true);
}

/*
 * The content is generated here, before the release: xfer bytes of the pattern of
 * generation p->generation from offset 0, written again for every piece of a file. So
 * block 0 of every file carries a valid header, which is how `clean` recognises them; a
 * tail shorter than a block (odd xfer) is zeros.
 */
static int manyfiles_setup(struct bench_ctx *c)
{
	const struct bench_params *p = c->p;
	struct manyfiles_priv *s;
	size_t whole = p->xfer & ~(uint64_t)(PATTERN_BLOCK - 1);
	int rc = 0;

	if (!p->xfer || p->dirfd < 0 || !p->name_prefix)
		return bench_fail(c, "setup", p->dir, EINVAL);
	s = calloc(1, sizeof(*s));
	if (!s)
		return bench_fail(c, "setup", p->dir, ENOMEM);
	rc = names_file_thread(s->name, sizeof(s->name), p->name_prefix, c->thread, &s->prefix_len);
	if (rc) {
		rc = bench_fail(c, "setup", p->dir, rc);
		goto out;
	}
	s->loop = p->fsync ? manyfiles_loop_fsync : manyfiles_loop_plain;
	pattern_fill(c->buf, whole, p->generation, 0);
	memset((unsigned char *)c->buf + whole, 0, p->xfer - whole);
	c->priv = s;
	s = NULL;
out:
	free(s);
	return rc;
}

static int manyfiles_run(struct bench_ctx *c)
{
	struct manyfiles_priv *s = c->priv;

	c->first_io_ns = clock_mono_ns();
	return s->loop(c, s);
}

/*
 * Only names this thread created are removed: never a name that fs_create refused,
 * since that file belongs to someone else.
 */
static void manyfiles_teardown(struct bench_ctx *c)
{
	struct manyfiles_priv *s = c->priv;
	uint64_t i;

	if (!s)
		return;
	if (!c->p->keep) {
		for (i = 0; i < s->created; i++) {
			manyfiles_name(s, i);
			unlinkat(c->p->dirfd, s->name, 0);
		}
	}
	free(s);
	c->priv = NULL;
}

const struct bench_ops bench_manyfiles = {
    .name = "manyfiles",
    .caps = BENCH_WRITES_FILES,
    .unit = BENCH_UNIT_BYTES_WRITTEN,
    .expect = {.ops = BENCH_BY_COUNT,
	       .bytes = BENCH_BY_COUNT | BENCH_BY_CHUNK,
	       .files = BENCH_BY_COUNT},
    .what = "create count new files of chunk bytes, written in xfer pieces (4)",
    .setup = manyfiles_setup,
    .run = manyfiles_run,
    .teardown = manyfiles_teardown,
};
