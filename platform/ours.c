/* SPDX-License-Identifier: MIT */
/*
 * stagebench's files told from others' by name and content.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "platform/blockread.h"
#include "platform/ours.h"
#include "util/names.h"
#include "util/pattern.h"

int ours_file(int dirfd, const char *name)
{
	struct blockread r;
	uint64_t gen;
	int rc;

	rc = blockread_open(&r, dirfd, name);
	if (rc == -EINVAL || rc == -EISDIR) {
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	rc = blockread_block(&r, dirfd, name, 0, NULL);
	if (rc)
		goto out;
	rc = blockread_valid(r.block, 0, &gen) ? 1 : 0;
out:
	blockread_close(&r);
	return rc;
}

int ours_remove(int dirfd, const char *name)
{
	int rc = ours_file(dirfd, name);

	if (rc < 0)
		return rc;
	if (rc == 0)
		return -EPERM;
	return unlinkat(dirfd, name, 0) ? -errno : 0;
}

/* Whether a name of this kind is a leftover by name: something a killed run or check leaves. */
static bool ours_leftover_kind(enum names_kind kind)
{
	switch (kind) {
	case NAMES_TEMP:
	case NAMES_FILE:
	case NAMES_PROBE:
	case NAMES_PROBE_TEMP:
	case NAMES_PROBE_FILE:
	case NAMES_WRITE_PROBE:
		return true;
	default:
		return false;
	}
}

/* A leftover's content: see ours_removable. 1 or 0. */
static int ours_leftover_content(enum names_kind kind, const struct blockread *r, size_t got)
{
	uint64_t gen;

	if (r->st.st_size == 0 || blockread_valid(r->block, 0, &gen))
		return 1;
	if ((kind == NAMES_TEMP || kind == NAMES_PROBE || kind == NAMES_PROBE_TEMP) &&
	    got == PATTERN_BLOCK && blockread_all(r->block, PATTERN_BLOCK, 0))
		return 1;
	return kind == NAMES_WRITE_PROBE && r->st.st_size <= PATTERN_BLOCK &&
	       blockread_all(r->block, got, OURS_WRITE_BYTE);
}

int ours_removable(int dirfd, const char *name)
{
	struct names_fields f;
	enum names_kind kind = names_parse(name, &f);
	struct blockread r;
	size_t got = 0;
	int rc = ours_file(dirfd, name);

	if (rc != 0 || !ours_leftover_kind(kind))
		return rc;
	rc = blockread_open(&r, dirfd, name);
	if (rc == -EINVAL || rc == -EISDIR) {
		rc = 0;
		goto out;
	}
	if (!rc && r.st.st_size)
		rc = blockread_block(&r, dirfd, name, 0, &got);
	if (!rc)
		rc = ours_leftover_content(kind, &r, got);
out:
	blockread_close(&r);
	return rc;
}
