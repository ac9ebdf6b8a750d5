/* SPDX-License-Identifier: MIT */
/*
 * The name tables of the typed words.
 */
#include <stddef.h>

#include "driver/enums.h"

const char *const enums_commands[CMD_COUNT + 1] = {
    [CMD_NONE] = "",	     [CMD_RUN] = "run",	  [CMD_PREPARE] = "prepare", [CMD_CLEAN] = "clean",
    [CMD_LIST] = "list",     [CMD_INFO] = "info", [CMD_CHECK] = "check",     [CMD_CLOCK] = "clock",
    [CMD_STATUS] = "status", [CMD_STOP] = "stop", [CMD_COUNT] = NULL,
};
const char *const enums_scales[SCALE_COUNT + 1] = {
    [SCALE_SPEC] = "spec", [SCALE_SMALL] = "small", [SCALE_TINY] = "tiny", [SCALE_COUNT] = NULL};
const char *const enums_formats[FORMAT_COUNT + 1] = {
    [FORMAT_TEXT] = "text", [FORMAT_JSON] = "json", [FORMAT_CSV] = "csv", [FORMAT_COUNT] = NULL};
const char *const enums_signals[STOP_SIG_COUNT + 1] = {
    [STOP_SIG_INT] = "INT", [STOP_SIG_TERM] = "TERM", [STOP_SIG_COUNT] = NULL};

const char *enums_command_name(enum command cmd)
{
	return (unsigned)cmd < CMD_COUNT ? enums_commands[cmd] : "?";
}

const char *enums_scale_name(enum scale scale)
{
	return (unsigned)scale < SCALE_COUNT ? enums_scales[scale] : "?";
}

const char *enums_format_name(enum format format)
{
	return (unsigned)format < FORMAT_COUNT ? enums_formats[format] : "?";
}

const char *enums_signal_name(enum stop_sig sig)
{
	return (unsigned)sig < STOP_SIG_COUNT ? enums_signals[sig] : "?";
}
