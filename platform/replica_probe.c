/* SPDX-License-Identifier: MIT */
/*
 * A replica's size, generation and owner, from its first and last blocks.
 */
#include <string.h>

#include "platform/blockread.h"
#include "platform/replica_probe.h"
#include "util/pattern.h"

int replica_probe(int dirfd, const char *name, struct replica_info *out)
{
	struct blockread r;
	uint64_t gen = 0, last_gen = 0, last;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = blockread_open(&r, dirfd, name);
	if (rc)
		goto out;
	out->size = (uint64_t)r.st.st_size;
	out->mtime = (double)r.st.st_mtim.tv_sec + r.st.st_mtim.tv_nsec / 1e9;
	if (!out->size)
		goto out;
	rc = blockread_block(&r, dirfd, name, 0, NULL);
	if (rc || !blockread_valid(r.block, 0, &gen))
		goto out;
	out->generation = gen;
	last = (out->size - 1) / PATTERN_BLOCK * PATTERN_BLOCK;
	if (last) {
		rc = blockread_block(&r, dirfd, name, last, NULL);
		if (rc || !blockread_valid(r.block, last, &last_gen) || last_gen != gen)
			goto out;
	}
	out->ours = true;
out:
	blockread_close(&r);
	return rc;
}
