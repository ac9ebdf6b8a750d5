/* SPDX-License-Identifier: MIT */
/*
 * What a command takes from its environment beyond the option table: the deadline of check
 * and info on a hung directory (STAGEBENCH_HUNG_DIR_SECONDS), whole seconds in range or the
 * compiled-in one.
 */
#include <stdlib.h>

#include "check.h"
#include "driver/check.h"
#include "driver/cmdenv.h"
#include "driver/inventory.h"

static void test_hung_dir_deadline(void)
{
	static const struct {
		const char *value; /* NULL: unset */
		int want;	   /* -1: the default */
	} cases[] = {
	    {NULL, -1},	    {"", -1},	  {"2", 2},   {"1", 1},
	    {"3600", 3600}, {"3601", -1}, {"0", -1},  {"abc", -1},
	    {"1.5", -1},    {"-3", -1},	  {"2s", -1}, {"99999999999999999999", -1},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].value)
			setenv(CMDENV_HUNG_DIR_ENV, cases[i].value, 1);
		else
			unsetenv(CMDENV_HUNG_DIR_ENV);
		for (int def = 0; def < 2; def++) {
			int d = def ? CHECK_DEADLINE_S : INVENTORY_DEADLINE_S;
			int got = cmdenv_hung_dir_deadline(d);
			CHECK_MSG(got == (cases[i].want < 0 ? d : cases[i].want), "'%s': %d",
				  cases[i].value ? cases[i].value : "(unset)", got);
		}
	}
	unsetenv(CMDENV_HUNG_DIR_ENV);
	/* the compiled-in deadlines stay what they were */
	CHECK_U64(CHECK_DEADLINE_S, 25);
	CHECK_U64(INVENTORY_DEADLINE_S, 20);
}

int main(void)
{
	test_hung_dir_deadline();
	return check_done();
}
