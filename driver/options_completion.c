/* SPDX-License-Identifier: MIT */
/*
 * The bash completion script of stagebench, generated from the option table and the
 * catalogue, so that it offers exactly what the parser takes: per command its options, the
 * words of a choice that command takes, directories after --dir, files after --out (-o),
 * test names as arguments.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "driver/options_table.h"
#include "driver/plan.h"

/* bash: directories, files (with a / after a directory's name). */
#define OPTIONS_COMPLETION_DIRS                                                                    \
	"compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$cur\"))"
#define OPTIONS_COMPLETION_FILES                                                                   \
	"compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\"))"

/* Whether a metavar or operand names a directory: DIR, STATE_DIR. */
static bool options_completion_is_dir(const char *name)
{
	size_t n = strlen(name);

	return n >= 3 && strcmp(name + n - 3, "DIR") == 0;
}

/* The case arms for the word after an option that takes an argument. */
static void options_completion_values(FILE *f)
{
	char words[128];

	fprintf(f, "\tcase $prev in\n");
	for (size_t i = 0; i < options_table_count; i++) {
		const struct opt_def *d = &options_table[i];
		char label[64];

		if (d->type == OPT_FLAG)
			continue;
		snprintf(label, sizeof(label), "--%s%s%c", d->name, d->shortname ? "|-" : "",
			 d->shortname);
		if (d->type == OPT_CHOICE && !d->cmd_choices) {
			options_choices_join(d->choices, " ", words, sizeof(words));
			fprintf(f, "\t%s) COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return ;;\n",
				label, words);
		} else if (d->type == OPT_CHOICE) {
			/* the words the command takes (--format: those it writes) */
			fprintf(f, "\t%s) case $cmd in\n", label);
			for (int c = CMD_RUN; c < CMD_COUNT; c++)
				if (d->cmd_choices[c])
					fprintf(f, "\t\t%s) words='%s' ;;\n",
						enums_command_name((enum command)c),
						options_choices_join_for(d, (enum command)c, " ",
									 words, sizeof(words)));
			fprintf(f, "\t\t*) words='%s' ;;\n\t\tesac\n",
				options_choices_join_for(d, CMD_NONE, " ", words, sizeof(words)));
			fprintf(
			    f, "\t\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\")); return ;;\n");
		} else if (options_completion_is_dir(d->metavar)) {
			fprintf(f, "\t%s) %s; return ;;\n", label, OPTIONS_COMPLETION_DIRS);
		} else if (strcmp(d->metavar, "FILE") == 0) {
			fprintf(f, "\t%s) %s; return ;;\n", label, OPTIONS_COMPLETION_FILES);
		} else {
			fprintf(f, "\t%s) return ;;\n", label);
		}
	}
	fprintf(f, "\tesac\n");
}

/* The words offered for a command: its options, and the test names where it takes tests;
 * directories instead of the options where it takes a directory and the word is no option. */
static void options_completion_command(FILE *f, enum command cmd)
{
	char in[128], out[64];

	fprintf(f, "\t%s) words='", cmd == CMD_NONE ? "''" : enums_command_name(cmd));
	if (cmd == CMD_NONE) {
		for (int c = CMD_RUN; c < CMD_COUNT; c++)
			fprintf(f, "%s ", enums_command_name((enum command)c));
		fprintf(f, "--help --version");
	} else {
		for (size_t i = 0; i < options_table_count; i++) {
			const struct opt_def *d = &options_table[i];
			if (!(d->cmds & (1u << cmd)))
				continue;
			fprintf(f, "--%s ", d->name);
			if (d->shortname)
				fprintf(f, "-%c ", d->shortname);
		}
		fprintf(f, "--version");
	}
	if (strcmp(options_command_operand(cmd), "TEST...") == 0) {
		plan_names(true, in, sizeof(in));
		plan_names(false, out, sizeof(out));
		fprintf(f, " %s%s%s", in, out[0] ? " " : "", out);
	}
	fprintf(f, "'");
	if (cmd != CMD_NONE && options_completion_is_dir(options_command_operand(cmd)))
		fprintf(f, "\n\t\t[[ $cur == -* ]] || { %s; return; }", OPTIONS_COMPLETION_DIRS);
	fprintf(f, " ;;\n");
}

void options_completion(FILE *f)
{
	fprintf(f,
		"# bash completion of stagebench %s, generated from its option table\n"
		"_stagebench()\n{\n"
		"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
		"\tlocal cmd='' words i\n"
		"\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
		"\t\tcase ${COMP_WORDS[i]} in\n\t\t",
		STAGEBENCH_VERSION);
	for (int c = CMD_RUN; c < CMD_COUNT; c++)
		fprintf(f, "%s%s", c == CMD_RUN ? "" : "|", enums_command_name((enum command)c));
	fprintf(f, ") cmd=${COMP_WORDS[i]}; break ;;\n\t\tesac\n\tdone\n");
	options_completion_values(f);
	fprintf(f, "\tcase $cmd in\n");
	for (int c = CMD_NONE; c < CMD_COUNT; c++)
		options_completion_command(f, (enum command)c);
	fprintf(f, "\tesac\n"
		   "\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
		   "}\n"
		   "complete -F _stagebench stagebench\n");
}
