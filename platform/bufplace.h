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
 * A candidate replaces page-aligned only when its median copy is faster by more than
 * BUFPLACE_MARGIN and it was the faster of the two in at least BUFPLACE_WINS of the paired
 * copies: on a busy node the medians wander by a few percent, and the placement would change
 * from run to run with them. The effect it is after is 7-12% and holds in every pair.
 */
#define BUFPLACE_MARGIN 0.03
#define BUFPLACE_WINS	0.75

struct bufplace {
	size_t offset;			 /* bytes past a page boundary */
	bool calibrated;		 /* chosen by bufplace_calibrate() */
	bool fixed;			 /* given by the user (set by the caller) */
	double rate_Bps[BUFPLACE_NCAND]; /* median copy rate of each candidate, when calibrated */
	double wins[BUFPLACE_NCAND];	 /* fraction of pairs in which it beat page-aligned */
	uint64_t bytes;			 /* size of the memory file, read once a round */
	double calib_s;			 /* the whole calibration, wall time */
};

/*
 * The index of the placement to use, given for each of n candidate placements its median
 * copy time ns[i] (ns[0] is page-aligned; <= 0: not measured) and the fraction wins[i] of
 * paired copies in which it was faster than page-aligned: the fastest of the candidates that
 * beat page-aligned by BUFPLACE_MARGIN in at least BUFPLACE_WINS of the pairs; page-aligned
 * when none does (or the fastest measured when page-aligned was not). Pure; n >= 1.
 */
size_t bufplace_pick(const double *ns, const double *wins, size_t n);

/*
 * Calibrate for reads of xfer bytes: copy a memory-backed file (memfd_create, never a file of
 * the run) into each candidate placement of one buffer, the candidates taking turns chunk by
 * chunk, then pick with bufplace_pick(). Takes about a tenth of a second (more on a busy
 * node). Fills out; 0, or -errno (-ENOMEM, or memfd_create's or pread's error).
 */
int bufplace_calibrate(size_t xfer, struct bufplace *out);

/*
 * Allocate len bytes starting offset bytes past a page boundary: *buf is the buffer, *base what
 * to free(). The caller touches it. 0 or -ENOMEM.
 */
int bufplace_alloc(size_t len, size_t offset, void **base, void **buf);

#endif
