/* SPDX-License-Identifier: MIT */
/*
 * The findings of `check`: one line each, ok, warn or fail, with an area, a name and what was
 * found. Filled by the check and its probe, written by the views.
 */
#ifndef STAGEBENCH_FINDINGS_H
#define STAGEBENCH_FINDINGS_H

#include <stddef.h>

enum finding_level { FINDING_OK = 0, FINDING_WARN, FINDING_FAIL };

struct finding {
	enum finding_level level;
	const char *area;
	char name[32];
	char message[600];
};

#define FINDINGS_MAX 128

struct findings {
	struct finding f[FINDINGS_MAX];
	size_t n;
};

/* Add a finding to r (dropped when r is full). */
void findings_add(struct findings *r, enum finding_level level, const char *area, const char *name,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* "ok", "warn", "fail". */
const char *findings_level_name(enum finding_level level);

#endif
