/* SPDX-License-Identifier: MIT */
/*
 * Logging to stderr. The level is the one global of util/; it is atomic because the driver
 * may log from its threads while --verbose was set before they started.
 */
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static _Atomic int log_level = LOG_WARN;

static const char *log_prefix(enum log_level level)
{
	switch (level) {
	case LOG_ERR:
		return "stagebench: error: ";
	case LOG_WARN:
		return "stagebench: warning: ";
	case LOG_INFO:
		return "stagebench: ";
	default:
		return "stagebench: debug: ";
	}
}

void log_set_level(enum log_level level)
{
	if ((int)level < LOG_ERR)
		level = LOG_ERR;
	if ((int)level > LOG_DEBUG)
		level = LOG_DEBUG;
	atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

enum log_level log_get_level(void)
{
	return (enum log_level)atomic_load_explicit(&log_level, memory_order_relaxed);
}

/*
 * One message, one line: the stream is locked around the prefix, the text and the newline
 * so that lines of different threads never interleave. A trailing newline in fmt is not
 * doubled. errno is preserved, so a caller may log and then still look at it.
 */
void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	int saved = errno;
	size_t n;

	if ((int)level > atomic_load_explicit(&log_level, memory_order_relaxed))
		return;
	flockfile(stderr);
	fputs(log_prefix(level), stderr);
	vfprintf(stderr, fmt, ap);
	n = strlen(fmt);
	if (n == 0 || fmt[n - 1] != '\n')
		putc_unlocked('\n', stderr);
	funlockfile(stderr);
	errno = saved;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

/*
 * The live status line: it overwrites itself in place ("\r", erase to the end of the line)
 * and ends without a newline; log_status_clear() takes it away before other output.
 */
void log_status(const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	flockfile(stderr);
	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
	funlockfile(stderr);
	errno = saved;
}

void log_status_clear(void)
{
	int saved = errno;

	fputs("\r\033[K", stderr);
	fflush(stderr);
	errno = saved;
}
