/* SPDX-License-Identifier: MIT */
/*
 * The error and warning lines of a run, and a worker's first error in words.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/note.h"
#include "util/log.h"

/*
 * Log a line and keep a copy in list (up to max lines) for the summary; returns its index in
 * list, or max when the list is full.
 */
static size_t note_add(enum log_level level, char **list, size_t *n, size_t max, const char *fmt,
		       va_list ap) __attribute__((format(printf, 5, 0)));
static size_t note_add(enum log_level level, char **list, size_t *n, size_t max, const char *fmt,
		       va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	log_msg(level, "%s", line);
	if (*n >= max)
		return max;
	list[*n] = strdup(line);
	return (*n)++;
}

void note_error(struct node_result *res, enum reason reason, const char *fmt, ...)
{
	size_t max = sizeof(res->errors) / sizeof(res->errors[0]);
	va_list ap;

	va_start(ap, fmt);
	size_t i = note_add(LOG_ERR, res->errors, &res->nerrors, max, fmt, ap);
	va_end(ap);
	if (i < max)
		res->error_reasons[i] = reason;
}

void note_warning(struct node_result *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	note_add(LOG_WARN, res->warnings, &res->nwarnings,
		 sizeof(res->warnings) / sizeof(res->warnings[0]), fmt, ap);
	va_end(ap);
}

void note_worker_error(const struct io_error *e, char *buf, size_t len)
{
	char where[48] = "";
	char gen[96] = "";

	if (e->has_offset)
		snprintf(where, sizeof(where), " at %llu", (unsigned long long)e->offset);
	if (e->has_generation)
		snprintf(gen, sizeof(gen), " (expected generation %llu, found %llu)",
			 (unsigned long long)e->expected_gen, (unsigned long long)e->found_gen);
	/* Verification errors in the words of the check, not of errno (ESTALE is no NFS handle). */
	const char *what = strerror(e->errnum);
	if (strcmp(e->op, "verify") == 0 && e->errnum == ESTALE)
		what = "block of another replica generation or offset";
	else if (strcmp(e->op, "verify") == 0 && e->errnum == EBADMSG)
		what = "not a stagebench block";
	else if (strcmp(e->op, "touch") == 0 && e->errnum == EFAULT)
		what = "page beyond the end of the file (SIGBUS: truncated under the mapping)";
	snprintf(buf, len, "%s '%s'%s: %s%s", e->op[0] ? e->op : "operation", e->path, where, what,
		 gen);
}

const char *note_path_short(const char *path, char *buf, size_t len)
{
	size_t n = strlen(path), half = NOTE_PATH_SHOWN / 2 - 2;

	if (n <= NOTE_PATH_SHOWN)
		snprintf(buf, len, "%s", path);
	else
		snprintf(buf, len, "%.*s...%s", (int)half, path, path + n - half);
	return buf;
}
