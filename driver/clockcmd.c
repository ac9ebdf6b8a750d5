/* SPDX-License-Identifier: MIT */
/*
 * `stagebench clock`: a header line, then one timestamp per token read. Input and output
 * are raw file descriptors, never stdio buffers, so that each answer leaves at once, in one
 * write, with the clock read just before it.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/clockcmd.h"
#include "driver/summary.h"
#include "platform/bounded.h"
#include "platform/clock.h"
#include "util/json.h"
#include "util/log.h"

/* The idle limit: CLOCKCMD_IDLE_S, or a positive number of seconds from the environment. */
static double clockcmd_idle_s(void)
{
	const char *v = getenv(CLOCKCMD_IDLE_ENV);
	char *end;
	double s;

	if (!v || !*v)
		return CLOCKCMD_IDLE_S;
	s = strtod(v, &end);
	return *end == '\0' && s > 0 && s <= 86400 ? s : CLOCKCMD_IDLE_S;
}

/* The header: the node, its NTP state and the version and build answering. 0 or -errno. */
static int clockcmd_header(const struct node_result *res, int out_fd)
{
	char *text = NULL;
	size_t len = 0;
	struct json j;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return -errno;
	json_init(&j, f, false);
	json_object_begin(&j);
	json_kv_string(&j, "schema", CLOCKCMD_SCHEMA);
	json_kv_string(&j, "node", res->node);
	json_kv_bool(&j, "ntp_synchronized", res->ntp_ok && res->ntp.synchronized);
	json_kv_int(&j, "maxerror_us", res->ntp.maxerror_us);
	json_kv_int(&j, "esterror_us", res->ntp.esterror_us);
	json_kv_string(&j, "clocksource", res->ntp.clocksource);
	json_kv_string(&j, "version", STAGEBENCH_VERSION);
	json_kv_string(&j, "build", summary_build_id());
	json_object_end(&j);
	rc = json_finish(&j); /* ends the line */
	if (fclose(f) != 0 && !rc)
		rc = -EIO;
	if (!rc)
		rc = bounded_send(out_fd, text, len);
	free(text);
	return rc;
}

/* One token answered: "TOKEN REALTIME_NS\n", the clock read last. 0 or -errno. */
static int clockcmd_answer(const char *token, size_t n, int out_fd)
{
	char line[CLOCKCMD_TOKEN_MAX + 32];

	memcpy(line, token, n);
	line[n] = ' ';
	int len =
	    snprintf(line + n + 1, sizeof(line) - n - 1, "%lld\n", (long long)clock_wall_ns());
	return bounded_send(out_fd, line, n + 1 + (size_t)len);
}

/* Whether c may be part of a token. */
static bool clockcmd_token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/*
 * Take the bytes of one read: answer every complete line, keep a partial one in tok.
 * OUTCOME_OK to go on, or the outcome that ends the command.
 */
static enum outcome clockcmd_take(const char *buf, size_t n, char *tok, size_t *ntok,
				  unsigned long *lineno, int out_fd)
{
	for (size_t i = 0; i < n; i++) {
		char c = buf[i];

		if (c == '\n') {
			++*lineno;
			if (*ntok == 0) {
				log_err("clock: line %lu is empty: expected a token of 1 to %d "
					"letters or digits",
					*lineno, CLOCKCMD_TOKEN_MAX);
				return OUTCOME_USAGE;
			}
			if (clockcmd_answer(tok, *ntok, out_fd) != 0) {
				log_err("clock: cannot write the answer: %s", strerror(errno));
				return OUTCOME_FAILED;
			}
			*ntok = 0;
		} else if (!clockcmd_token_char(c)) {
			log_err("clock: line %lu: byte 0x%02x is not a letter or a digit",
				*lineno + 1, (unsigned char)c);
			return OUTCOME_USAGE;
		} else if (*ntok == CLOCKCMD_TOKEN_MAX) {
			log_err("clock: line %lu: token longer than %d characters", *lineno + 1,
				CLOCKCMD_TOKEN_MAX);
			return OUTCOME_USAGE;
		} else {
			tok[(*ntok)++] = c;
		}
	}
	return OUTCOME_OK;
}

enum outcome clockcmd_serve(const struct node_result *res, int in_fd, int out_fd)
{
	char buf[4096], tok[CLOCKCMD_TOKEN_MAX];
	size_t ntok = 0;
	unsigned long lineno = 0;
	double idle = clockcmd_idle_s();
	enum outcome out = OUTCOME_OK;

	/* A launcher that hangs up gets no SIGPIPE death: the write fails and says so. */
	signal(SIGPIPE, SIG_IGN);
	if (clockcmd_header(res, out_fd) != 0) {
		log_err("clock: cannot write the header: %s", strerror(errno));
		return OUTCOME_FAILED;
	}
	for (;;) {
		struct pollfd p = {.fd = in_fd, .events = POLLIN};
		int r = poll(&p, 1, (int)(idle * 1000.0));

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			log_err("clock: no input for %.3g s: ending", idle);
			return OUTCOME_PRECONDITION;
		}
		ssize_t n = r < 0 ? -1 : read(in_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			log_err("clock: cannot read the input: %s", strerror(errno));
			return OUTCOME_FAILED;
		}
		if (n == 0)
			break;
		out = clockcmd_take(buf, (size_t)n, tok, &ntok, &lineno, out_fd);
		if (out != OUTCOME_OK)
			return out;
	}
	/* The last line without its newline is still a line. */
	if (ntok && clockcmd_answer(tok, ntok, out_fd) != 0) {
		log_err("clock: cannot write the answer: %s", strerror(errno));
		return OUTCOME_FAILED;
	}
	return OUTCOME_OK;
}
