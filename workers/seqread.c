/* SPDX-License-Identifier: MIT */
/*
 * Test 1a: every thread reads the whole replica `passes` times, each pass an open, reads
 * to EOF in xfer pieces and a close, all inside the timed window. One operation is one pass.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "platform/clock.h"
#include "util/pattern.h"
#include "workers/bench.h"

/* Progress is published, and the stop flag looked at, every this many bytes of a pass. */
#define SEQREAD_PUBLISH_BYTES (4u << 20)

struct seqread_priv {
	/* One pass, with or without verification: chosen in setup, not tested per read. */
	int (*pass)(struct bench_ctx *c);
};

/*
 * Read up to want bytes from the file position into buf, retrying EINTR and short reads
 * (each counted in c->retries). Returns the bytes read, fewer than want only at EOF, or
 * -errno.
 */
static ssize_t seqread_fill(struct bench_ctx *c, int fd, unsigned char *buf, size_t want)
{
	size_t got;
	int rc = bench_io_full(c, BENCH_IO_READ, fd, buf, want, 0, &got);

	return rc ? rc : (ssize_t)got;
}

static int seqread_verify(struct bench_ctx *c, uint64_t off, size_t len)
{
	const struct bench_params *p = c->p;
	uint64_t bad = off, found = 0;
	int rc;

	rc = pattern_check_range(c->buf, len & ~(size_t)(PATTERN_BLOCK - 1), p->generation, off,
				 &bad, &found);
	if (rc)
		return bench_fail_verify(c, p->path, bad, -rc, p->generation, found);
	return 0;
}

/*
 * One pass. Inlined into two variants so that the verify test disappears from the loop.
 * The pieces are bounded by the expected size, then one more read must see EOF: a file
 * of any other size fails the pass with EIO at the offset where the data really ended.
 */
static inline __attribute__((always_inline)) int seqread_pass(struct bench_ctx *c,
							      const bool verify)
{
	const struct bench_params *p = c->p;
	uint64_t off = 0, published = 0, t0;
	size_t want;
	ssize_t n;
	int fd, rc = 0;

	t0 = clock_mono_ns();
	fd = open(p->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return bench_fail(c, "open", p->path, errno);
	while (off < p->file_bytes) {
		want = p->file_bytes - off < p->xfer ? (size_t)(p->file_bytes - off) : p->xfer;
		n = seqread_fill(c, fd, c->buf, want);
		if (n < 0) {
			rc = bench_fail_at(c, "read", p->path, off, (int)-n);
			goto out;
		}
		c->bytes += (uint64_t)n;
		if ((size_t)n < want) {
			rc = bench_fail_at(c, "read", p->path, off + (uint64_t)n, EIO);
			goto out;
		}
		if (verify) {
			rc = seqread_verify(c, off, want);
			if (rc)
				goto out;
		}
		off += want;
		if (off - published >= SEQREAD_PUBLISH_BYTES) {
			published = off;
			atomic_store_explicit(&c->live_bytes, c->bytes, memory_order_relaxed);
			if (bench_stopping(c))
				goto out;
		}
	}
	do {
		n = seqread_fill(c, fd, c->buf, p->xfer);
		if (n < 0) {
			rc = bench_fail_at(c, "read", p->path, off, (int)-n);
			goto out;
		}
		off += (uint64_t)n;
	} while ((size_t)n == p->xfer);
	if (off != p->file_bytes)
		rc = bench_fail_at(c, "read", p->path, off, EIO);
out:
	close(fd);
	if (rc == 0 && !c->stopped) {
		uint64_t ns = clock_mono_ns() - t0;

		hist_record(c->lat, ns);
		if (!c->ops)
			c->first_pass_ns = ns;
		else if (c->npass_ns < BENCH_PASS_TIMES)
			c->pass_ns[c->npass_ns++] = ns;
		else
			c->passes_not_kept++;
		c->ops++;
		atomic_store_explicit(&c->live_bytes, c->bytes, memory_order_relaxed);
		atomic_store_explicit(&c->live_ops, c->ops, memory_order_relaxed);
	}
	return rc;
}

static int seqread_pass_plain(struct bench_ctx *c)
{
	return seqread_pass(c, false);
}

static int seqread_pass_verify(struct bench_ctx *c)
{
	return seqread_pass(c, true);
}

/*
 * Nothing is opened here: the spec times the open and close of every pass. Verification
 * needs every piece to start on a block boundary, hence xfer a multiple of the block.
 */
static int seqread_setup(struct bench_ctx *c)
{
	const struct bench_params *p = c->p;
	struct seqread_priv *s;

	if (!p->xfer || (p->verify && p->xfer % PATTERN_BLOCK))
		return bench_fail(c, "setup", p->path, EINVAL);
	s = calloc(1, sizeof(*s));
	if (!s)
		return bench_fail(c, "setup", p->path, ENOMEM);
	s->pass = p->verify ? seqread_pass_verify : seqread_pass_plain;
	c->priv = s;
	return 0;
}

static int seqread_run(struct bench_ctx *c)
{
	struct seqread_priv *s = c->priv;
	uint64_t i;
	int rc;

	c->first_io_ns = clock_mono_ns();
	for (i = 0; i < c->p->passes; i++) {
		if (bench_stopping(c))
			return 0;
		rc = s->pass(c);
		if (rc || c->stopped)
			return rc;
	}
	return 0;
}

const struct bench_ops bench_seqread = {
    .name = "seqread",
    .caps = BENCH_READS_REPLICA | BENCH_VERIFY_XFER,
    .unit = BENCH_UNIT_BYTES_READ,
    .expect = {.ops = BENCH_BY_PASSES, .bytes = BENCH_BY_PASSES | BENCH_BY_FILE},
    .what = "open, read the replica to EOF in xfer pieces, close; `passes` times (1a)",
    .setup = seqread_setup,
    .run = seqread_run,
    .teardown = bench_teardown_free,
};
