/* SPDX-License-Identifier: MIT */
/*
 * The first-error record of file work.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "platform/io_error.h"

int io_error_set(struct io_error *e, const char *op, const char *path, bool has_offset,
		 uint64_t offset, int errnum)
{
	if (errnum < 0)
		errnum = -errnum;
	if (!errnum)
		errnum = EIO;
	if (e->errnum)
		return -errnum;
	memset(e, 0, sizeof(*e));
	e->errnum = errnum;
	snprintf(e->op, sizeof(e->op), "%s", op ? op : "?");
	snprintf(e->path, sizeof(e->path), "%s", path ? path : "");
	e->has_offset = has_offset;
	e->offset = offset;
	return -errnum;
}
