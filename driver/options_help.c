/* SPDX-License-Identifier: MIT */
/*
 * --help, generated from the option table and, for the test names, from the catalogue.
 */
#include <stdio.h>
#include <string.h>

#include "driver/options_table.h"
#include "driver/plan.h"

static const char *const options_help_lines[CMD_COUNT] = {
    [CMD_RUN] = "TEST...      timed run (TEST: %s; %s)",
    [CMD_PREPARE] = "TEST...  create the replicas a test reads (untimed)",
    [CMD_CLEAN] = "TEST...    remove what stagebench created for those tests",
    [CMD_LIST] = "            the tests and their parameters at the chosen scale",
    [CMD_INFO] = "            topology, thread plan, clock and NTP state, filesystem of --dir",
    [CMD_CHECK] = "           health check of this node and --dir (about 30 s at most)",
    [CMD_CLOCK] = "           answer timestamps on stdin, for the launcher's clock offsets",
    [CMD_STATUS] = "STATE_DIR the state of a run armed with --detach STATE_DIR",
    [CMD_STOP] = "STATE_DIR   stop a run armed with --detach STATE_DIR, wait for its summary",
};

/* A command's line of help, the test names taken from the catalogue. */
static const char *options_help_line(enum command cmd, char *buf, size_t len)
{
	char in[128], out[64];

	if (cmd != CMD_RUN)
		return options_help_lines[cmd];
	plan_names(true, in, sizeof(in));
	plan_names(false, out, sizeof(out));
	snprintf(buf, len, options_help_lines[cmd], in, out);
	return buf;
}

const char *options_command_operand(enum command cmd)
{
	switch (cmd) {
	case CMD_RUN:
	case CMD_PREPARE:
	case CMD_CLEAN:
		return "TEST...";
	case CMD_STATUS:
	case CMD_STOP:
		return "STATE_DIR";
	default:
		return "";
	}
}

void options_help(enum command cmd, FILE *f)
{
	char line[256];
	const char *help = options_help_line(cmd, line, sizeof(line));

	if (cmd == CMD_NONE) {
		fprintf(f, "usage: stagebench COMMAND [OPTIONS] [TEST...]\n\n"
			   "I/O benchmarks of a node against its /stage server directory.\n\n"
			   "commands:\n");
		for (int c = CMD_RUN; c < CMD_COUNT; c++)
			fprintf(f, "  stagebench %s %s\n", enums_command_name((enum command)c),
				options_help_line(c, line, sizeof(line)));
		fprintf(f, "\noptions:\n");
	} else {
		const char *operand = options_command_operand(cmd);

		help += strcspn(help, " ");
		fprintf(f, "usage: stagebench %s [OPTIONS]%s%s\n\n  %s\n\noptions:\n",
			enums_command_name(cmd), operand[0] ? " " : "", operand,
			help + strspn(help, " "));
	}
	for (size_t i = 0; i < options_table_count; i++) {
		const struct opt_def *d = &options_table[i];
		char left[48], words[64];

		if (cmd != CMD_NONE && !(d->cmds & (1u << cmd)))
			continue;
		char shortname[8] = "";
		if (d->shortname)
			snprintf(shortname, sizeof(shortname), "-%c, ", d->shortname);
		snprintf(left, sizeof(left), "%s--%s%s%s", shortname, d->name,
			 d->metavar ? " " : "", d->metavar ? d->metavar : "");
		fprintf(f, "  %-22s %s", left, d->help);
		if (d->type == OPT_CHOICE)
			fprintf(f, " (%s)",
				options_choices_join_for(d, cmd, "|", words, sizeof(words)));
		if (d->def)
			fprintf(f, " [default: %s]", d->def);
		if (d->env)
			fprintf(f, " [env: %s]", d->env);
		fputc('\n', f);
	}
	fprintf(f, "  %-22s %s\n", "--version", "print the version");
	if (cmd == CMD_NONE)
		fprintf(f, "\nexit status: 0 ok, 1 a test failed, 2 bad usage or input, 3 a "
			   "precondition failed,\n4 an armed run orphaned (its --lease lapsed), "
			   "130/143 interrupted by SIGINT/SIGTERM.\n");
}
