/* SPDX-License-Identifier: MIT */
/*
 * Logging to stderr: one line per message, prefixed with the program name and the level.
 * The only place in stagebench that writes diagnostics; everything else calls these.
 */
#ifndef STAGEBENCH_LOG_H
#define STAGEBENCH_LOG_H

#include <stdarg.h>

enum log_level { LOG_ERR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/* Messages above this level are dropped; LOG_WARN unless changed (--quiet/--verbose). */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(enum log_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* A one-line live status on stderr (a terminal), rewritten in place; cleared by the second. */
void log_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_status_clear(void);

#define log_err(...)   log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
