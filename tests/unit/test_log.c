/* SPDX-License-Identifier: MIT */
/*
 * Unit test of util/log: the level filter, the prefixes, one line per message, and errno
 * left as it was. stderr is pointed at a temporary file for the duration.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
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

/*
 * The writes that reach fd 2 while fn runs, each as one record: fd 2 is a SOCK_SEQPACKET
 * socket, which keeps the boundary of every write(), so records counts the write() calls and
 * buf holds the last one.
 */
static int test_log_writes(void (*fn)(void), char *buf, size_t size, size_t *last)
{
	int sv[2];
	int saved = dup(2);
	int records = 0;
	ssize_t n;

	if (saved < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0)
		return -1;
	fflush(stderr);
	dup2(sv[0], 2);
	fn();
	dup2(saved, 2);
	close(saved);
	close(sv[0]);
	*last = 0;
	while ((n = recv(sv[1], buf, size, MSG_DONTWAIT)) > 0) {
		records++;
		*last = (size_t)n;
	}
	close(sv[1]);
	return records;
}

static void test_log_plain(void)
{
	log_set_level(LOG_WARN);
	log_err("read '%s' at %d: %s", "/stage/x/r1a", 4194304, "Input/output error");
}

/* A message far over the line limit, of two-byte UTF-8 characters and control characters. */
static void test_log_long(void)
{
	static char text[30000];

	for (size_t i = 0; i + 3 < sizeof(text); i += 3) {
		text[i] = '\xc3';
		text[i + 1] = '\xa9';
		text[i + 2] = (char)(i % 2 ? '\x01' : 'a');
	}
	text[sizeof(text) - 1] = '\0';
	log_warn("%s", text);
}

static void test_log_progress(void)
{
	log_status("%s rep %u: %.0f s, %zu/%zu threads done", "2a", 1u, 3.0, (size_t)2, (size_t)4);
	log_status_clear();
}

/* Each line is one write(), cut lines included, and a cut never splits a character. */
static void test_log_one_write(void)
{
	static char buf[65536];
	size_t last = 0;
	int writes;

	writes = test_log_writes(test_log_plain, buf, sizeof(buf), &last);
	CHECK_MSG(writes == 1, "a line took %d writes", writes);
	CHECK(last > 0 && buf[last - 1] == '\n');
	{
		static const char want[] = "stagebench: error: read '/stage/x/r1a' at 4194304: ";

		CHECK(last > sizeof(want) && memcmp(buf, want, sizeof(want) - 1) == 0);
	}

	writes = test_log_writes(test_log_long, buf, sizeof(buf), &last);
	CHECK_MSG(writes == 1, "a long line took %d writes", writes);
	CHECK_MSG(last > 4000 && last <= 8192, "long line of %zu bytes", last);
	CHECK(last >= 4 && memcmp(buf + last - 4, "...\n", 4) == 0);
	CHECK(memchr(buf, '\n', last) == buf + last - 1);
	/* Before "...": a whole character or a whole escape, never part of one. */
	CHECK(last >= 5 && ((unsigned char)buf[last - 5] == 0xa9 || buf[last - 5] == 'a' ||
			    buf[last - 5] == '1'));

	writes = test_log_writes(test_log_progress, buf, sizeof(buf), &last);
	CHECK_MSG(writes == 2, "status and clear took %d writes", writes);
	CHECK(last == 4 && memcmp(buf, "\r\033[K", 4) == 0);
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
	test_log_one_write();
	return check_done();
}
