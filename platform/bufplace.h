/* SPDX-License-Identifier: MIT */
/*
 * Where the I/O buffer sits: its offset from a page boundary. How fast the kernel copies from
 * the page cache into a user buffer depends on the buffer's address, and which address is
 * fastest is a property of the CPU: a short untimed calibration copies from a memory-backed
 * file into each candidate placement and picks the fastest.
 */
#ifndef STAGEBENCH_BUFPLACE_H
#define STAGEBENCH_BUFPLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The candidate offsets, page-aligned first; every one is < 4096, so fits any page size. */
#define BUFPLACE_NCAND 6
extern const size_t bufplace_candidates[BUFPLACE_NCAND];

/*
 * A candidate wins only when it is faster than page-aligned by more than this fraction;
 * closer than that, the difference is noise and the buffer stays page-aligned.
 */
#define BUFPLACE_MARGIN 0.01

struct bufplace {
	size_t offset;			 /* bytes past a page boundary */
	bool calibrated;		 /* false: given by the user, no calibration */
	double rate_Bps[BUFPLACE_NCAND]; /* best copy rate of each candidate, when calibrated */
	uint64_t bytes;			 /* copied per candidate and round */
	double calib_s;			 /* the whole calibration, wall time */
};

/*
 * The index of the placement to use, given the best copy time seen at each of n candidate
 * placements (ns[0] is page-aligned; a time <= 0 means not measured): the fastest, unless
 * page-aligned is within BUFPLACE_MARGIN of it. Pure; n >= 1.
 */
size_t bufplace_pick(const double *ns, size_t n);

/*
 * Calibrate for reads of xfer bytes: copy a memory-backed file (memfd_create, never a file of
 * the run) into each candidate placement of one buffer, alternating candidates over several
 * rounds and keeping each one's fastest round, then pick with bufplace_pick(). Takes about a
 * quarter of a second. Fills out; 0, or -errno (-ENOMEM, or memfd_create's or pread's error).
 */
int bufplace_calibrate(size_t xfer, struct bufplace *out);

/*
 * Allocate len bytes starting offset bytes past a page boundary: *buf is the buffer, *base what
 * to free(). The caller touches it. 0 or -ENOMEM.
 */
int bufplace_alloc(size_t len, size_t offset, void **base, void **buf);

#endif
