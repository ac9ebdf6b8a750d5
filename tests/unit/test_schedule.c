/* SPDX-License-Identifier: MIT */
/*
 * Unit test of driver/schedule: --schedule lists that fit the run's parts are applied to the
 * plan (part k starts at instant k), the others are refused with the reason.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "driver/schedule.h"
#include "driver/start.h"

struct schedule_case {
	const char *argv[8]; /* after "run", NULL-terminated */
	const char *why;     /* NULL: accepted; else a piece of the reason */
};

static const struct schedule_case schedule_cases[] = {
    {{"2", "--schedule", "1000,1001.5,1003", NULL}, NULL},
    {{"1a", "--repeat", "2", "--schedule", "1000,1002", NULL}, NULL},
    {{"1a", "--schedule", "1000", NULL}, NULL},
    {{"2", "--schedule", "1000,1001", NULL}, "names 2 instants, the run has 3 parts"},
    {{"1a", "--repeat", "2", "--schedule", "1000", NULL}, "x --repeat 2"},
    {{"2", "--schedule", "1000,1000,1003", NULL}, "must increase"},
    {{"2", "--schedule", "1000,999,1003", NULL}, "must increase"},
    {{"2", "--schedule", "1000,,1003", NULL}, "empty item 2"},
    {{"2", "--schedule", "1000,1001,", NULL}, "empty item 3"},
    {{"2", "--schedule", "1000,1e3x,1003", NULL}, "'1e3x' is not an instant"},
    {{"2", "--schedule", "1000,1001,0.5", NULL}, "'0.5' is not an instant"},
    {{"2", "--schedule", "1000,1001,87401", NULL}, "more than a day"},
    {{"1a", "--interval", "1", "--schedule", "1000", NULL}, "excludes --interval"},
    {{"1a", "--start-at", "1000", "--schedule", "1000", NULL}, "excludes --start-at"},
    {{"1a", "--start-in", "3", "--schedule", "1000", NULL}, "excludes --start-in"},
};

static void test_schedule_case(const struct schedule_case *c)
{
	static double at[SCHEDULE_MAX];
	const char *argv[12] = {"stagebench", "run", "--scale", "tiny"};
	int argc = 4;
	struct options o;
	struct plan plan;
	char why[512] = "";

	for (size_t i = 0; c->argv[i]; i++)
		argv[argc++] = c->argv[i];
	CHECK(options_parse(argc, (char **)argv, &o, why, sizeof(why)) == 0);
	CHECK_MSG(plan_build(&o, &plan, why, sizeof(why)) == 0, "%s", why);
	int rc = schedule_apply(&o, at, &plan, why, sizeof(why));
	if (c->why) {
		CHECK_MSG(rc != 0 && strstr(why, c->why), "%s %s: got '%s'", c->argv[0], c->argv[2],
			  why);
		return;
	}
	CHECK_MSG(rc == 0, "%s", why);
	CHECK(plan.run.start_fixed && plan.run.start_at == at[0]);
	CHECK_U64(plan.run.nschedule, plan.nparts * plan.run.repeat);

	/* Part k is scheduled at instant k when every part is ready in time. */
	struct start_sched s;
	start_init(&s, &plan.run, plan.run.start_at);
	for (size_t k = 0; k < plan.run.nschedule; k++) {
		struct part_result pr;
		double first;
		memset(&pr, 0, sizeof(pr));
		CHECK(start_decide(&s, 0.0, &pr, &first) == OUTCOME_OK);
		CHECK_MSG(pr.start_at == at[k], "part %zu at %.3f, expected %.3f", k, pr.start_at,
			  at[k]);
	}
}

int main(void)
{
	for (size_t i = 0; i < sizeof(schedule_cases) / sizeof(schedule_cases[0]); i++)
		test_schedule_case(&schedule_cases[i]);
	return check_done();
}
