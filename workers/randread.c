/* SPDX-License-Identifier: MIT */
/*
 * Tests 2 and 3: `count` chunks of `chunk` bytes at random aligned offsets k*chunk of the
 * replica, k drawn with replacement from the thread's generator; a chunk is moved in
 * preads of at most xfer bytes. One operation is one chunk.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "platform/clock.h"
#include "util/pattern.h"
#include "workers/bench.h"

struct randread_priv {
	int fd;		  /* the replica, opened in setup: the spec times the reads only */
	uint64_t nchunks; /* k is drawn in [0, nchunks) */
	/* All chunks, with or without verification: chosen in setup. */
	int (*loop)(struct bench_ctx *c, const struct randread_priv *s);
};

/*
 * Read one chunk at off, xfer bytes at a time, retrying EINTR and short reads. EOF
 * before the end of the chunk means the file is shorter than the part assumes: EIO.
 */
static inline __attribute__((always_inline)) int randread_chunk(struct bench_ctx *c, int fd,
								uint64_t off, const bool verify)
{
	const struct bench_params *p = c->p;
	unsigned char *buf = c->buf;
	uint64_t done = 0, bad, found;
	size_t want, got;
	int rc;

	while (done < p->chunk) {
		want = p->chunk - done < p->xfer ? (size_t)(p->chunk - done) : p->xfer;
		rc = bench_io_full(c, BENCH_IO_PREAD, fd, buf, want, off + done, &got);
		if (rc || got < want)
			return bench_fail_at(c, "read", p->path, off + done + got, rc ? -rc : EIO);
		if (verify) {
			rc =
			    pattern_check_range(buf, want, p->generation, off + done, &bad, &found);
			if (rc)
				return bench_fail_verify(c, p->path, bad, rc, p->generation, found);
		}
		done += want;
	}
	return 0;
}

static inline __attribute__((always_inline)) int
randread_loop(struct bench_ctx *c, const struct randread_priv *s, const bool verify)
{
	const struct bench_params *p = c->p;
	uint64_t i, off, t0, t1;
	int rc;

	/*
	 * One clock read per chunk: a chunk's latency runs from the end of the previous one
	 * (or the start of the loop) to its own end, so it also holds the few nanoseconds of
	 * drawing its offset and recording the previous sample. A second read per chunk cost
	 * about 40 ns here, 3% of a cached 4 KiB read (2a).
	 */
	t0 = clock_mono_ns();
	for (i = 0; i < p->count; i++) {
		if (bench_stopping(c))
			return 0;
		off = prng_below(&c->rng, s->nchunks) * p->chunk;
		rc = randread_chunk(c, s->fd, off, verify);
		if (rc)
			return rc;
		t1 = clock_mono_ns();
		hist_record(c->lat, t1 - t0);
		t0 = t1;
		c->bytes += p->chunk;
		c->ops++;
		atomic_store_explicit(&c->live_bytes, c->bytes, memory_order_relaxed);
		atomic_store_explicit(&c->live_ops, c->ops, memory_order_relaxed);
	}
	return 0;
}

static int randread_loop_plain(struct bench_ctx *c, const struct randread_priv *s)
{
	return randread_loop(c, s, false);
}

static int randread_loop_verify(struct bench_ctx *c, const struct randread_priv *s)
{
	return randread_loop(c, s, true);
}

/*
 * Verification checks whole blocks at their file offsets, so chunks and pieces must both
 * be multiples of the block; reads of the spec's sizes always are.
 */
static int randread_setup(struct bench_ctx *c)
{
	const struct bench_params *p = c->p;
	struct randread_priv *s = NULL;
	int rc = 0;

	if (!p->xfer || !p->chunk || p->file_bytes < p->chunk ||
	    (p->verify && (p->xfer % PATTERN_BLOCK || p->chunk % PATTERN_BLOCK))) {
		rc = bench_fail(c, "setup", p->path, EINVAL);
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		rc = bench_fail(c, "setup", p->path, ENOMEM);
		goto out;
	}
	s->fd = open(p->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (s->fd < 0) {
		rc = bench_fail(c, "open", p->path, errno);
		goto out;
	}
	s->nchunks = p->file_bytes / p->chunk;
	s->loop = p->verify ? randread_loop_verify : randread_loop_plain;
	c->priv = s;
	s = NULL;
out:
	free(s);
	return rc;
}

static int randread_run(struct bench_ctx *c)
{
	const struct randread_priv *s = c->priv;

	c->first_io_ns = clock_mono_ns();
	return s->loop(c, s);
}

static void randread_teardown(struct bench_ctx *c)
{
	struct randread_priv *s = c->priv;

	if (!s)
		return;
	close(s->fd);
	bench_teardown_free(c);
}

const struct bench_ops bench_randread = {
    .name = "randread",
    .caps = BENCH_READS_REPLICA | BENCH_VERIFY_XFER,
    .unit = BENCH_UNIT_BYTES_READ,
    .expect = {.ops = BENCH_BY_COUNT, .bytes = BENCH_BY_COUNT | BENCH_BY_CHUNK},
    .what = "count preads of chunk bytes at random aligned offsets of the replica (2, 3)",
    .setup = randread_setup,
    .run = randread_run,
    .teardown = randread_teardown,
};
