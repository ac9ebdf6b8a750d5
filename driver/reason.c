/* SPDX-License-Identifier: MIT */
/*
 * The reasons of errors and their one name table.
 */
#include <errno.h>
#include <string.h>

#include "driver/reason.h"

static const char *const reason_names[REASON_COUNT] = {
    [REASON_NONE] = NULL,
    [REASON_START_MISSED] = "start_missed",
    [REASON_NOT_READY] = "not_ready",
    [REASON_IO_ERROR] = "io_error",
    [REASON_VERIFY_FAILED] = "verify_failed",
    [REASON_REPLICA_MISSING] = "replica_missing",
    [REASON_REPLICA_INVALID] = "replica_invalid",
    [REASON_REPLICA_CHANGED] = "replica_changed",
    [REASON_NO_SPACE] = "no_space",
    [REASON_NTP_REQUIRED] = "ntp_required",
    [REASON_INTERRUPTED] = "interrupted",
    [REASON_USAGE] = "usage",
    [REASON_SETUP_FAILED] = "setup_failed",
    [REASON_BUSY] = "busy",
    [REASON_LEASE_EXPIRED] = "lease_expired",
    [REASON_KILLED] = "killed",
    [REASON_OTHER] = "other",
};

const char *reason_name(enum reason r)
{
	return (unsigned)r < REASON_COUNT ? reason_names[r] : NULL;
}

const char *reason_token(enum reason r)
{
	return reason_name(r) ? reason_name(r) : reason_names[REASON_OTHER];
}

enum reason reason_parse(const char *name)
{
	for (unsigned r = REASON_NONE + 1; name && r < REASON_COUNT; r++) {
		if (strcmp(reason_names[r], name) == 0)
			return (enum reason)r;
	}
	return REASON_NONE;
}

enum reason reason_of_worker(const struct io_error *e, bool ran)
{
	if (strcmp(e->op, "verify") == 0)
		return REASON_VERIFY_FAILED;
	if (e->errnum == ENOSPC || e->errnum == EDQUOT)
		return REASON_NO_SPACE;
	return ran ? REASON_IO_ERROR : REASON_NOT_READY;
}
