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
#include <unistd.h>

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
 * Write all of buf to fd 2 in one write() when the kernel takes it whole (it does for a pipe
 * below PIPE_BUF, a terminal and a file): one line must reach `srun --label` or a collecting
 * pipe as one piece, never a byte at a time. A short write or EINTR goes on with the rest;
 * an error drops the line (there is nowhere left to report it).
 */
static void log_write_all(const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDERR_FILENO, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		buf += w;
		n -= (size_t)w;
	}
}

/*
 * Append text to out (of room bytes, at *len) with its control characters escaped ("\\n",
 * "\\t", "\\x01"): messages quote what users typed (a --node name, a test name), and a
 * newline or an escape sequence in there must not break the one-line rule or the terminal.
 * Bytes from 0x80 up (UTF-8) pass. When the room runs out the text is cut before the escape
 * or the UTF-8 character that does not fit, never inside one, and "..." marks the cut.
 */
static void log_escape_into(char *out, size_t room, size_t *len, const char *text, size_t n)
{
	size_t at = *len;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)text[i];
		char esc[5];
		size_t k;

		if (c == '\n')
			k = (size_t)snprintf(esc, sizeof(esc), "\\n");
		else if (c == '\t')
			k = (size_t)snprintf(esc, sizeof(esc), "\\t");
		else if (c < 0x20 || c == 0x7f)
			k = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", c);
		else {
			esc[0] = (char)c;
			k = 1;
		}
		if (at + k + 3 > room)
			break;
		memcpy(out + at, esc, k);
		at += k;
	}
	if (i < n) {
		/* Cut inside a UTF-8 character: take back the part of it already copied. */
		if (((unsigned char)text[i] & 0xc0) == 0x80) {
			while (at > *len && ((unsigned char)out[at - 1] & 0xc0) == 0x80)
				at--;
			if (at > *len && ((unsigned char)out[at - 1] & 0xc0) == 0xc0)
				at--;
		}
		memcpy(out + at, "...", 3);
		at += 3;
	}
	*len = at;
}

/*
 * One message, one line, one write(): the prefix, the escaped text and the newline are put
 * together in a bounded buffer and written at once, so lines of different threads or of
 * different nodes under `srun --label` never interleave or split. A trailing newline in fmt
 * is not doubled; any other control character is escaped. A message whose line would pass
 * LOG_LINE_MAX is cut (marked "...") and still ends in its newline. errno is preserved, so a
 * caller may log and then still look at it.
 */
void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char text[LOG_LINE_MAX];
	char line[LOG_LINE_MAX];
	int saved = errno;
	size_t len, n;
	int got;

	if ((int)level > atomic_load_explicit(&log_level, memory_order_relaxed))
		return;
	got = vsnprintf(text, sizeof(text), fmt, ap);
	n = got < 0 ? 0 : (size_t)got < sizeof(text) ? (size_t)got : sizeof(text) - 1;
	if (n > 0 && text[n - 1] == '\n')
		n--;
	len = strlen(log_prefix(level));
	memcpy(line, log_prefix(level), len);
	log_escape_into(line, sizeof(line) - 1, &len, text, n);
	line[len++] = '\n';
	flockfile(stderr);
	fflush(stderr);
	log_write_all(line, len);
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
 * and ends without a newline; log_status_clear() takes it away before other output. Like a
 * message, it is formatted first (cut at LOG_LINE_MAX) and written in one write().
 */
void log_status(const char *fmt, ...)
{
	static const char erase[] = "\r\033[K";
	char line[LOG_LINE_MAX];
	size_t len = sizeof(erase) - 1;
	int saved = errno;
	va_list ap;
	int got;

	memcpy(line, erase, len);
	va_start(ap, fmt);
	got = vsnprintf(line + len, sizeof(line) - len, fmt, ap);
	va_end(ap);
	if (got > 0)
		len += (size_t)got < sizeof(line) - len ? (size_t)got : sizeof(line) - len - 1;
	flockfile(stderr);
	fflush(stderr);
	log_write_all(line, len);
	funlockfile(stderr);
	errno = saved;
}

void log_status_clear(void)
{
	static const char erase[] = "\r\033[K";
	int saved = errno;

	flockfile(stderr);
	fflush(stderr);
	log_write_all(erase, sizeof(erase) - 1);
	funlockfile(stderr);
	errno = saved;
}
