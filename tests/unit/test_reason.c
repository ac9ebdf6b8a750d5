/* SPDX-License-Identifier: MIT */
/*
 * The reasons of errors: one token per reason, each parsed back, none for "no error", and the
 * reason of a worker's first error from its operation, its errno and whether the thread ran.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "driver/reason.h"

/* The tokens tools read (the contract of issue 18), in the order of the enum. */
static const struct {
	enum reason r;
	const char *name;
} tokens[] = {
    {REASON_START_MISSED, "start_missed"},
    {REASON_NOT_READY, "not_ready"},
    {REASON_IO_ERROR, "io_error"},
    {REASON_VERIFY_FAILED, "verify_failed"},
    {REASON_REPLICA_MISSING, "replica_missing"},
    {REASON_REPLICA_INVALID, "replica_invalid"},
    {REASON_REPLICA_CHANGED, "replica_changed"},
    {REASON_NO_SPACE, "no_space"},
    {REASON_NTP_REQUIRED, "ntp_required"},
    {REASON_INTERRUPTED, "interrupted"},
    {REASON_USAGE, "usage"},
    {REASON_SETUP_FAILED, "setup_failed"},
    {REASON_BUSY, "busy"},
    {REASON_LEASE_EXPIRED, "lease_expired"},
    {REASON_KILLED, "killed"},
    {REASON_OTHER, "other"},
};

static void test_reason_names(void)
{
	size_t n = sizeof(tokens) / sizeof(tokens[0]);

	CHECK_U64(n, REASON_COUNT - 1);
	for (size_t i = 0; i < n; i++) {
		const char *name = reason_name(tokens[i].r);
		CHECK_MSG(name && strcmp(name, tokens[i].name) == 0, "%s", tokens[i].name);
		CHECK_U64(reason_parse(tokens[i].name), tokens[i].r);
		CHECK_STR(reason_token(tokens[i].r), tokens[i].name);
	}
	/* Every value of the enum has a name, and no two share one. */
	for (unsigned a = REASON_NONE + 1; a < REASON_COUNT; a++) {
		CHECK_MSG(reason_name((enum reason)a) != NULL, "reason %u", a);
		for (unsigned b = a + 1; b < REASON_COUNT; b++)
			CHECK(!reason_name((enum reason)a) || !reason_name((enum reason)b) ||
			      strcmp(reason_name((enum reason)a), reason_name((enum reason)b)) !=
				  0);
	}
	CHECK(reason_name(REASON_NONE) == NULL);
	CHECK(reason_name(REASON_COUNT) == NULL);
	CHECK_STR(reason_token(REASON_NONE), "other");
	CHECK_U64(reason_parse("nope"), REASON_NONE);
	CHECK_U64(reason_parse(NULL), REASON_NONE);
}

static void test_reason_of_worker(void)
{
	static const struct {
		const char *op;
		int errnum;
		bool ran;
		enum reason want;
	} cases[] = {
	    {"read", EIO, true, REASON_IO_ERROR},
	    {"verify", ESTALE, true, REASON_VERIFY_FAILED},
	    {"verify", EBADMSG, true, REASON_VERIFY_FAILED},
	    {"write", ENOSPC, true, REASON_NO_SPACE},
	    {"create", EDQUOT, true, REASON_NO_SPACE},
	    {"open", ENOENT, false, REASON_NOT_READY},
	    {"setup", ENOMEM, false, REASON_NOT_READY},
	    {"touch", EFAULT, true, REASON_IO_ERROR},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct io_error e;

		memset(&e, 0, sizeof(e));
		io_error_set(&e, cases[i].op, "/stage/x", false, 0, cases[i].errnum);
		CHECK_MSG(reason_of_worker(&e, cases[i].ran) == cases[i].want, "case %zu (%s)", i,
			  cases[i].op);
	}
}

int main(void)
{
	test_reason_names();
	test_reason_of_worker();
	return check_done();
}
