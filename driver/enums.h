/* SPDX-License-Identifier: MIT */
/*
 * The typed words of the command line and of the documents: the command, the scale, the
 * output format and the stop signal, each with its one name table (in the enum's order,
 * NULL-terminated: the option table's choices, the summaries' words and the catalogue's
 * "scales" all read it).
 */
#ifndef STAGEBENCH_ENUMS_H
#define STAGEBENCH_ENUMS_H

enum command {
	CMD_NONE = 0,
	CMD_RUN,
	CMD_PREPARE,
	CMD_CLEAN,
	CMD_LIST,
	CMD_INFO,
	CMD_CHECK,
	CMD_CLOCK,
	CMD_STATUS,
	CMD_STOP,
	CMD_COUNT
};
enum scale { SCALE_SPEC = 0, SCALE_SMALL, SCALE_TINY, SCALE_COUNT };
enum format { FORMAT_TEXT = 0, FORMAT_JSON, FORMAT_CSV, FORMAT_COUNT };
enum stop_sig { STOP_SIG_INT = 0, STOP_SIG_TERM, STOP_SIG_COUNT };

/* The name tables: [CMD_NONE] is "", the others the words a user types. */
extern const char *const enums_commands[CMD_COUNT + 1];
extern const char *const enums_scales[SCALE_COUNT + 1];
extern const char *const enums_formats[FORMAT_COUNT + 1];
extern const char *const enums_signals[STOP_SIG_COUNT + 1];

/* The name of a value: "run", "tiny", "json", "TERM"; "?" beyond its table. */
const char *enums_command_name(enum command cmd);
const char *enums_scale_name(enum scale scale);
const char *enums_format_name(enum format format);
const char *enums_signal_name(enum stop_sig sig);

#endif
