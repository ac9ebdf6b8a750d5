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

/* The longest message: a path of PATH_MAX and some words around it. */
#define LOG_LINE_MAX 8192

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
 * Write text with its control characters escaped ("\\n", "\\t", "\\x01"): messages quote
 * what users typed (a --node name, a test name), and a newline or an escape sequence in
 * there must not break the one-line rule or the terminal. Bytes from 0x80 up (UTF-8) pass.
 */
static void log_put_escaped(const char *text, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c == '\n')
			fputs("\\n", stderr);
		else if (c == '\t')
			fputs("\\t", stderr);
		else if (c < 0x20 || c == 0x7f)
			fprintf(stderr, "\\x%02x", c);
		else
			putc_unlocked(c, stderr);
	}
}

/*
 * One message, one line: the stream is locked around the prefix, the text and the newline
 * so that lines of different threads never interleave. A trailing newline in fmt is not
 * doubled; any other control character is escaped. Longer messages than LOG_LINE_MAX are
 * cut. errno is preserved, so a caller may log and then still look at it.
 */
void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char line[LOG_LINE_MAX];
	int saved = errno;
	int len;
	size_t n;

	if ((int)level > atomic_load_explicit(&log_level, memory_order_relaxed))
		return;
	len = vsnprintf(line, sizeof(line), fmt, ap);
	n = len < 0 ? 0 : (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1;
	if (n > 0 && line[n - 1] == '\n')
		n--;
	flockfile(stderr);
	fputs(log_prefix(level), stderr);
	log_put_escaped(line, n);
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
