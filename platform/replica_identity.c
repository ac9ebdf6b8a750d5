/* SPDX-License-Identifier: MIT */
/*
 * A replica's identity: device, inode, size, generation and times.
 */
#include <errno.h>
#include <string.h>

#include "platform/blockread.h"
#include "platform/replica_identity.h"

int replica_identity_get(int dirfd, const char *name, struct replica_identity *out)
{
	struct blockread r;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = blockread_open(&r, dirfd, name);
	if (rc)
		goto out;
	out->dev = (uint64_t)r.st.st_dev;
	out->ino = (uint64_t)r.st.st_ino;
	out->size = (uint64_t)r.st.st_size;
	out->mtime_ns = (int64_t)r.st.st_mtim.tv_sec * 1000000000 + r.st.st_mtim.tv_nsec;
	out->ctime_ns = (int64_t)r.st.st_ctim.tv_sec * 1000000000 + r.st.st_ctim.tv_nsec;
	if (out->size) {
		rc = blockread_block(&r, dirfd, name, 0, NULL);
		if (rc)
			goto out;
		out->has_generation = blockread_valid(r.block, 0, &out->generation);
		out->has_origin = out->has_generation &&
				  pattern_origin_get(r.block, out->generation, &out->origin) == 0;
	}
out:
	blockread_close(&r);
	return rc;
}

int replica_identity_check(int dirfd, const char *name, const struct replica_identity *before,
			   unsigned *changed)
{
	struct replica_identity now;
	int rc = replica_identity_get(dirfd, name, &now);

	*changed = 0;
	if (rc == -ENOENT) {
		*changed = REPLICA_CHANGED_GONE;
		return 1;
	}
	if (rc)
		return rc;
	if (now.dev != before->dev || now.ino != before->ino)
		*changed |= REPLICA_CHANGED_FILE;
	if (now.size != before->size)
		*changed |= REPLICA_CHANGED_SIZE;
	if (now.has_generation != before->has_generation || now.generation != before->generation)
		*changed |= REPLICA_CHANGED_GENERATION;
	if (now.mtime_ns != before->mtime_ns || now.ctime_ns != before->ctime_ns)
		*changed |= REPLICA_CHANGED_TIMES;
	return *changed ? 1 : 0;
}
