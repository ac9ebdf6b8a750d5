/* SPDX-License-Identifier: MIT */
/*
 * The findings of `check`.
 */
#include <stdarg.h>
#include <stdio.h>

#include "driver/findings.h"

const char *findings_level_name(enum finding_level level)
{
	static const char *const names[] = {"ok", "warn", "fail"};

	return names[level];
}

void findings_add(struct findings *r, enum finding_level level, const char *area, const char *name,
		  const char *fmt, ...)
{
	va_list ap;

	if (r->n >= FINDINGS_MAX)
		return;
	struct finding *f = &r->f[r->n++];
	f->level = level;
	f->area = area;
	snprintf(f->name, sizeof(f->name), "%s", name);
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
}
