/* SPDX-License-Identifier: MIT */
/*
 * Outcomes to exit statuses, as DESIGN.md lists them.
 */
#include "driver/outcome.h"

static const struct {
	int code;
	int rank;
	const char *name;
} outcome_table[] = {
    [OUTCOME_OK] = {0, 0, "ok"},
    [OUTCOME_FAILED] = {1, 1, "failed"},
    [OUTCOME_USAGE] = {2, 3, "usage"},
    [OUTCOME_PRECONDITION] = {3, 2, "precondition"},
    [OUTCOME_ORPHANED] = {4, 4, "orphaned"},
    [OUTCOME_INTERRUPTED_INT] = {130, 6, "interrupted"},
    [OUTCOME_INTERRUPTED_TERM] = {143, 5, "interrupted"},
};

int outcome_exit_code(enum outcome o)
{
	return outcome_table[o].code;
}

enum outcome outcome_worse(enum outcome a, enum outcome b)
{
	return outcome_table[b].rank > outcome_table[a].rank ? b : a;
}

const char *outcome_name(enum outcome o)
{
	return outcome_table[o].name;
}
