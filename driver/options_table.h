/* SPDX-License-Identifier: MIT */
/*
 * The option table (its rows in options_table.c), shared by the parser (options.c), the help
 * writer (options_help.c) and the completion writer (options_completion.c). Not for other
 * files: they see struct options only.
 */
#ifndef STAGEBENCH_OPTIONS_TABLE_H
#define STAGEBENCH_OPTIONS_TABLE_H

#include <stddef.h>

#include "driver/options.h"

enum opt_type {
	OPT_FLAG,    /* no argument: sets a bool */
	OPT_UINT,    /* unsigned decimal in [min, max], or the word in choices (OPTIONS_AUTO) */
	OPT_COUNT,   /* an OPT_UINT that counts things (threads, repetitions, chunks, passes) */
	OPT_SIZE,    /* size with unit in [min, max] */
	OPT_SECONDS, /* seconds, fractions allowed, in [min, max] */
	OPT_STRING,  /* any non-empty text */
	OPT_CHOICE,  /* one of the words of choices; stored as its index in an enum field */
	OPT_CPULIST, /* a CPU list: "0-3,8" */
	OPT_NAME,    /* a node name: see options_node_name_ok */
};

/* Commands an option applies to. */
#define C_RUN	(1u << CMD_RUN)
#define C_PREP	(1u << CMD_PREPARE)
#define C_CLEAN (1u << CMD_CLEAN)
#define C_LIST	(1u << CMD_LIST)
#define C_INFO	(1u << CMD_INFO)
#define C_CHECK (1u << CMD_CHECK)
#define C_CLOCK (1u << CMD_CLOCK)
#define C_STAT	(1u << CMD_STATUS)
#define C_STOP	(1u << CMD_STOP)
#define C_ALL	(C_RUN | C_PREP | C_CLEAN | C_LIST | C_INFO | C_CHECK | C_CLOCK | C_STAT | C_STOP)
#define C_DIR	(C_RUN | C_PREP | C_CLEAN | C_INFO | C_CHECK)

/*
 * What a run may name with an option that changes the plan's parameters: any number of parts
 * (0, every other option), one part (--count), one test (--file-size). The catalogue's
 * "scope" of the option, and the plan's check.
 */
enum opt_scope { OPT_SCOPE_RUN = 0, OPT_SCOPE_PART, OPT_SCOPE_TEST };

#define FIELD(f) offsetof(struct options, f)
#define NOSET	 ((size_t)-1)

struct opt_def {
	const char *name;
	enum opt_type type;
	const char *metavar;
	double min, max; /* range of OPT_UINT, OPT_SIZE, OPT_SECONDS */
	/*
	 * NULL-terminated words: OPT_CHOICE, the name table of its enum (enums.h); OPT_UINT, a
	 * word accepted for OPTIONS_AUTO.
	 */
	const char *const *choices;
	const char *def; /* default, parsed like an argument; NULL: none */
	const char *env; /* environment variable read before the arguments; NULL: none */
	size_t field;	 /* where the value goes in struct options */
	size_t set;	 /* a bool that records that the option was given, or NOSET */
	unsigned cmds;
	const char *help;
	enum opt_scope scope; /* OPT_SCOPE_RUN unless said */
	char shortname;	      /* its one-letter form ('o': -o), or 0 */
	/*
	 * OPT_CHOICE: per command, the words (bits by index in choices) it accepts; NULL, or 0
	 * for a command: every word. Any other is refused (--format: what the command writes).
	 */
	const unsigned *cmd_choices;
};

/* The words of choices joined by sep into buf: "spec|small|tiny". Returns buf. */
const char *options_choices_join(const char *const *choices, const char *sep, char *buf,
				 size_t len);

/* The words of d that cmd accepts (bits by index; every word for CMD_NONE), and them joined. */
unsigned options_choices_of(const struct opt_def *d, enum command cmd);
const char *options_choices_join_for(const struct opt_def *d, enum command cmd, const char *sep,
				     char *buf, size_t len);

extern const struct opt_def options_table[];
extern const size_t options_table_count;

/* The operand a command takes after its options, as its usage names it: "TEST...",
 * "STATE_DIR" or "" (none). The completion offers directories for a ..._DIR. */
const char *options_command_operand(enum command cmd);

#endif
