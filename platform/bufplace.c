/* SPDX-License-Identifier: MIT */
/*
 * The placement of the I/O buffer: a calibration that times the kernel's copy from a
 * memory-backed file into candidate offsets from a page boundary, and the choice among them.
 */
#include "platform/bufplace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "platform/clock.h"

/*
 * Page-aligned, then offsets that are not a multiple of the 64-byte cache line (8, 16: where
 * malloc puts a large block; 4088) and ones that are (64, 2048): on some CPUs the kernel's
 * copy into a line-aligned destination is slower, on others faster.
 */
const size_t bufplace_candidates[BUFPLACE_NCAND] = {0, 8, 16, 64, 2048, 4088};

/*
 * The memory-backed file: larger than the caches that matter for one core, small to fill.
 * Each round reads it once in chunks, chunk j into candidate (j + round) % BUFPLACE_NCAND: the
 * candidates interleave finely, so that a burst of load elsewhere hits them all alike, and
 * every copy reads data that no other candidate has just brought into the cache.
 */
#define BUFPLACE_FILE	(32u << 20)
#define BUFPLACE_CHUNK	(1u << 20)
#define BUFPLACE_ROUNDS 6
#define BUFPLACE_MAXT	((BUFPLACE_FILE / 4096u) * BUFPLACE_ROUNDS / BUFPLACE_NCAND + 1)

size_t bufplace_pick(const double *ns, const double *wins, size_t n)
{
	size_t best = 0;

	for (size_t i = 1; i < n; i++) {
		if (ns[i] <= 0)
			continue;
		if (ns[0] <= 0) {
			if (best == 0 || ns[i] < ns[best])
				best = i;
		} else if (ns[i] * (1.0 + BUFPLACE_MARGIN) < ns[0] && wins[i] >= BUFPLACE_WINS &&
			   (best == 0 || ns[i] < ns[best])) {
			best = i;
		}
	}
	return best;
}

int bufplace_alloc(size_t len, size_t offset, void **base, void **buf)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p = NULL;

	if (page <= 0)
		page = 4096;
	if (posix_memalign(&p, (size_t)page, len + offset ? len + offset : 1) != 0)
		return -ENOMEM;
	*base = p;
	*buf = (char *)p + offset;
	return 0;
}

/* Fill the file with non-zero bytes (a hole would be copied from the zero page). */
static int bufplace_fill(int fd, char *buf, size_t chunk)
{
	memset(buf, 0x5a, chunk);
	for (size_t off = 0; off < BUFPLACE_FILE; off += chunk) {
		ssize_t n = pwrite(fd, buf, chunk, (off_t)off);
		if (n < 0)
			return -errno;
		if ((size_t)n != chunk)
			return -EIO;
	}
	return 0;
}

static int bufplace_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * The rounds: the time of every chunk copied into candidate i goes to t[i]; then ns[i] is
 * the median chunk time scaled to the whole file. Every BUFPLACE_NCAND consecutive chunks of
 * a round are one copy into each candidate: a pair of each with page-aligned's, counted in
 * wins[i] when it was the faster. 0 or -errno.
 */
static int bufplace_rounds(int fd, char *base, size_t chunk, double *t, double *ns, double *wins)
{
	size_t nchunks = BUFPLACE_FILE / chunk, count[BUFPLACE_NCAND] = {0}, blocks = 0;
	double blk[BUFPLACE_NCAND] = {0};

	for (size_t r = 0; r < BUFPLACE_ROUNDS; r++) {
		for (size_t j = 0; j < nchunks; j++) {
			size_t i = (j + r) % BUFPLACE_NCAND;
			uint64_t t0 = clock_mono_ns();
			ssize_t n =
			    pread(fd, base + bufplace_candidates[i], chunk, (off_t)(j * chunk));
			uint64_t t1 = clock_mono_ns();

			if (n < 0)
				return -errno;
			if ((size_t)n != chunk)
				return -EIO;
			if (count[i] < BUFPLACE_MAXT)
				t[i * BUFPLACE_MAXT + count[i]++] = (double)(t1 - t0);
			blk[i] = (double)(t1 - t0);
			if (j % BUFPLACE_NCAND == BUFPLACE_NCAND - 1) {
				for (size_t k = 1; k < BUFPLACE_NCAND; k++)
					wins[k] += blk[k] < blk[0];
				blocks++;
			}
		}
	}
	for (size_t k = 1; k < BUFPLACE_NCAND; k++)
		wins[k] = blocks ? wins[k] / (double)blocks : 0;
	for (size_t i = 0; i < BUFPLACE_NCAND; i++) {
		double *ti = t + i * BUFPLACE_MAXT;

		qsort(ti, count[i], sizeof(*ti), bufplace_cmp);
		ns[i] = count[i] ? ti[count[i] / 2] * (double)nchunks : 0;
		if (count[i] && ns[i] <= 0)
			ns[i] = 1;
	}
	return 0;
}

int bufplace_calibrate(size_t xfer, struct bufplace *out)
{
	size_t chunk = xfer < BUFPLACE_CHUNK ? xfer : BUFPLACE_CHUNK;
	double ns[BUFPLACE_NCAND] = {0}, wins[BUFPLACE_NCAND] = {0}, *t = NULL;
	uint64_t t0 = clock_mono_ns();
	void *base = NULL, *buf = NULL;
	int fd = -1, rc;

	memset(out, 0, sizeof(*out));
	/* A power of two from 4 KiB: the chunks tile the file. */
	while (chunk & (chunk - 1))
		chunk &= chunk - 1;
	chunk = chunk < 4096 ? 4096 : chunk;
	t = malloc(sizeof(*t) * BUFPLACE_MAXT * BUFPLACE_NCAND);
	rc = t ? bufplace_alloc(chunk, bufplace_candidates[BUFPLACE_NCAND - 1], &base, &buf)
	       : -ENOMEM;
	if (rc)
		goto out;
	fd = memfd_create("stagebench-bufplace", MFD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if ((rc = bufplace_fill(fd, base, chunk)) != 0)
		goto out;
	if ((rc = bufplace_rounds(fd, base, chunk, t, ns, wins)) != 0)
		goto out;
	out->offset = bufplace_candidates[bufplace_pick(ns, wins, BUFPLACE_NCAND)];
	out->calibrated = true;
	out->bytes = BUFPLACE_FILE;
	for (size_t i = 0; i < BUFPLACE_NCAND; i++) {
		out->rate_Bps[i] = ns[i] > 0 ? (double)BUFPLACE_FILE / (ns[i] / 1e9) : 0;
		out->wins[i] = wins[i];
	}
out:
	out->calib_s = (double)(clock_mono_ns() - t0) / 1e9;
	if (fd >= 0)
		close(fd);
	free(base);
	free(t);
	return rc;
}
