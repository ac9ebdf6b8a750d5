/* SPDX-License-Identifier: MIT */
/*
 * Unit test of util/log: the level filter, the prefixes, one line per message, and errno
 * left as it was. stderr is pointed at a temporary file for the duration.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "util/log.h"

struct log_case {
	enum log_level level; /* the level set */
	enum log_level msg;   /* the level of the message */
	bool newline;	      /* the format ends in a newline (not to be doubled) */
	const char *want;     /* "" when dropped */
};

static const struct log_case log_cases[] = {
    {LOG_WARN, LOG_ERR, false, "stagebench: error: read 'x' at 7\n"},
    {LOG_WARN, LOG_WARN, false, "stagebench: warning: read 'x' at 7\n"},
    {LOG_WARN, LOG_INFO, false, ""},
    {LOG_INFO, LOG_INFO, false, "stagebench: read 'x' at 7\n"},
    {LOG_INFO, LOG_DEBUG, false, ""},
    {LOG_DEBUG, LOG_DEBUG, false, "stagebench: debug: read 'x' at 7\n"},
    {LOG_ERR, LOG_WARN, false, ""},
    {LOG_ERR, LOG_ERR, true, "stagebench: error: read 'x' at 7\n"},
};

/* Everything written to fd 2 while the message is logged. */
static char *test_log_capture(const struct log_case *c)
{
	static char text[256];
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;

	if (!tmp || saved < 0)
		return NULL;
	fflush(stderr);
	dup2(fileno(tmp), 2);
	log_set_level(c->level);
	if (c->newline)
		log_msg(c->msg, "read '%s' at %d\n", "x", 7);
	else
		log_msg(c->msg, "read '%s' at %d", "x", 7);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(text, 1, sizeof(text) - 1, tmp);
	text[n] = '\0';
	fclose(tmp);
	return text;
}

int main(void)
{
	CHECK(log_get_level() == LOG_WARN);
	for (size_t i = 0; i < sizeof(log_cases) / sizeof(log_cases[0]); i++) {
		const char *got = test_log_capture(&log_cases[i]);

		CHECK_MSG(got && strcmp(got, log_cases[i].want) == 0, "case %zu: '%s'", i,
			  got ? got : "(no capture)");
	}

	/* Control characters in a message are escaped: one message is one line. */
	{
		static char text[256];
		FILE *tmp = tmpfile();
		int saved = dup(2);
		size_t n = 0;

		if (tmp && saved >= 0) {
			fflush(stderr);
			dup2(fileno(tmp), 2);
			log_set_level(LOG_WARN);
			log_err("--node '%s' is not valid", "a\nb\tc\x01"
							    "d\x7f\xc3\xa9");
			fflush(stderr);
			dup2(saved, 2);
			close(saved);
			rewind(tmp);
			n = fread(text, 1, sizeof(text) - 1, tmp);
			fclose(tmp);
		}
		text[n] = '\0';
		CHECK_MSG(strcmp(text,
				 "stagebench: error: --node 'a\\nb\\tc\\x01d\\x7f\xc3\xa9' is "
				 "not valid\n") == 0,
			  "escaped: '%s'", text);
	}

	/* errno survives a message; out-of-range levels are clamped. */
	log_set_level(LOG_ERR);
	errno = ENOSPC;
	log_info("dropped");
	CHECK(errno == ENOSPC);
	log_set_level((enum log_level)99);
	CHECK(log_get_level() == LOG_DEBUG);
	log_set_level((enum log_level) - 5);
	CHECK(log_get_level() == LOG_ERR);
	return check_done();
}
