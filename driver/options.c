/* SPDX-License-Identifier: MIT */
/*
 * The option table and the parser it drives. One row per option: its name, the type of its
 * argument, its range, default, environment variable, the commands that take it, and its
 * help. Parsing, defaults, range checks and --help all come from these rows.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/options_table.h"
#include "util/cpulist.h"
#include "util/size.h"

#define GiB_ (1024.0 * 1024.0 * 1024.0)

/* One row per option reads better than what the formatter makes of the table. */
/* clang-format off */
const struct opt_def options_table[] = {
	{"dir", OPT_STRING, "DIR", 0, 0, NULL, NULL, "STAGEBENCH_DIR", FIELD(dir), FIELD(set_dir),
	 C_DIR, "working directory on the node's /stage server"},
	{"scale", OPT_CHOICE, "SCALE", 0, 0, "spec|small|tiny", "spec", "STAGEBENCH_SCALE",
	 FIELD(scale), NOSET, C_RUN | C_PREP | C_CLEAN | C_LIST | C_INFO | C_CHECK,
	 "file sizes and counts: the spec's, small (a whole run in about 30 s on 2 cores), tiny (tests)"},
	{"threads", OPT_UINT, "N", 1, OPTIONS_MAX_CPUS, NULL, NULL, NULL, FIELD(threads),
	 FIELD(set_threads), C_RUN | C_PREP | C_INFO | C_CHECK,
	 "use the first N allowed cores (default: one thread per allowed core)"},
	{"cpus", OPT_CPULIST, "LIST", 0, 0, NULL, NULL, NULL, FIELD(cpus_text), FIELD(set_cpus),
	 C_RUN | C_PREP | C_INFO | C_CHECK, "run one thread on each of these CPUs (\"0-3,8\"), one per core"},
	{"start-at", OPT_SECONDS, "EPOCH", 1, 1e11, NULL, NULL, NULL, FIELD(start_at),
	 FIELD(set_start_at), C_RUN, "start the timed part at this wall-clock instant (UTC seconds)"},
	{"start-in", OPT_SECONDS, "SECONDS", 0, 86400, NULL, "5", NULL, FIELD(start_in),
	 FIELD(set_start_in), C_RUN,
	 "start this many seconds after set-up (once any missing replica is created)"},
	{"interval", OPT_SECONDS, "SECONDS", 0.001, 86400, NULL, NULL, NULL, FIELD(interval),
	 FIELD(set_interval), C_RUN, "start part k at T + k*SECONDS (the same grid on every node)"},
	{"schedule", OPT_STRING, "T1,T2,...", 0, 0, NULL, NULL, NULL, FIELD(schedule), NOSET, C_RUN,
	 "start part k at the k-th instant (UTC seconds), one per part of the run"},
	{"repeat", OPT_UINT, "K", 1, 10000, NULL, "1", NULL, FIELD(repeat), NOSET, C_RUN,
	 "run each test K times, recreating the replicas of 1a, 1b and 2 in between"},
	{"repetition", OPT_UINT, "R", 1, 1000000, NULL, "1", NULL, FIELD(repetition), NOSET, C_RUN,
	 "number of the first repetition, for launchers that run one per invocation"},
	{"xfer", OPT_SIZE, "SIZE", 4096, GiB_, NULL, "1MiB", NULL, FIELD(xfer), NOSET,
	 C_RUN | C_PREP | C_CHECK, "largest single read or write"},
	{"seed", OPT_UINT, "N", 0, 18446744073709551615.0, NULL, NULL, NULL, FIELD(seed),
	 FIELD(set_seed), C_RUN, "seed of the random offsets (default: a random seed, recorded)"},
	{"node", OPT_NAME, "NAME", 0, 0, NULL, NULL, "STAGEBENCH_NODE", FIELD(node), NOSET,
	 C_RUN | C_PREP | C_INFO | C_CHECK | C_CLOCK, "name of this node in file names and the summary (default: host name)"},
	{"out", OPT_STRING, "FILE", 0, 0, NULL, NULL, NULL, FIELD(out), NOSET, C_RUN,
	 "write the JSON summary to FILE (atomically)"},
	{"format", OPT_CHOICE, "FMT", 0, 0, "text|json|csv", "text", NULL, FIELD(format), NOSET,
	 C_RUN | C_LIST | C_INFO | C_CHECK | C_STAT, "what to print on stdout"},
	{"detach", OPT_STRING, "STATE_DIR", 0, 0, NULL, NULL, NULL, FIELD(detach), NOSET, C_RUN,
	 "arm the run: set up, then detach and wait for the start; its state in STATE_DIR"},
	{"signal", OPT_CHOICE, "SIG", 0, 0, "INT|TERM", "INT", NULL, FIELD(signal), NOSET, C_STOP,
	 "the signal that stops the armed run"},
	{"wait", OPT_SECONDS, "SECONDS", 0, 3600, NULL, "30", NULL, FIELD(wait), NOSET, C_STOP,
	 "how long to wait for the stopped run's summary"},
	{"count", OPT_UINT, "N", 1, 1e12, NULL, NULL, NULL, FIELD(count), FIELD(set_count), C_RUN,
	 "override N (chunks or files) of the one part run"},
	{"chunk", OPT_SIZE, "SIZE", 1, 1099511627776.0, NULL, NULL, NULL, FIELD(chunk),
	 FIELD(set_chunk), C_RUN, "override M (chunk or file size) of the one part run"},
	{"file-size", OPT_SIZE, "SIZE", 4096, 1125899906842624.0, NULL, NULL, NULL,
	 FIELD(file_size), FIELD(set_file_size), C_RUN | C_PREP | C_CLEAN,
	 "override the replica size of the one test named"},
	{"passes", OPT_UINT, "K", 1, 1e9, NULL, NULL, NULL, FIELD(passes), FIELD(set_passes), C_RUN,
	 "override the passes over the replica (1a, 1b)"},
	{"buffer-offset", OPT_UINT, "BYTES", 0, 65535, "auto", "auto", NULL, FIELD(buffer_offset),
	 NOSET, C_RUN | C_INFO | C_CHECK,
	 "the I/O buffer's offset from a page boundary (auto: the fastest, calibrated at set-up)"},
	{"verify", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(verify), NOSET, C_RUN,
	 "check the header of every 4 KiB block read"},
	{"fsync", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(fsync), NOSET, C_RUN,
	 "fsync every file written by test 4 before closing it"},
	{"keep", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(keep), NOSET, C_RUN,
	 "keep the files written by test 4"},
	{"keep-cache", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(keep_cache), NOSET, C_RUN,
	 "leave this node's cached pages of a replica before each part (the spec wants them dropped)"},
	{"require-ntp", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(require_ntp), NOSET, C_RUN,
	 "fail (exit 3) when the clock is not NTP-synchronized"},
	{"late-ok", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(late_ok), NOSET, C_RUN,
	 "when the start instant is missed, start at once and mark the part late"},
	{"health", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(health), NOSET, C_CHECK,
	 "run nothing: judge this node from its latest summaries under --results (Slurm, NHC); exit 0 healthy, 1 not, 3 no recent data"},
	{"results", OPT_STRING, "DIR", 0, 0, NULL, NULL, "STAGEBENCH_RESULTS", FIELD(results), NOSET,
	 C_CHECK, "--health: where this node's summaries are (DIR/NODE.json, DIR/RUN/NODE.PART.repK.json)"},
	{"max-age", OPT_SECONDS, "SECONDS", 1, 31536000, NULL, "93600", NULL, FIELD(max_age), NOSET,
	 C_CHECK, "--health: summaries older than this are no recent data (93600: 26 h)"},
	{"dry-run", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(dry_run), NOSET,
	 C_RUN | C_PREP | C_CLEAN, "print the plan and touch nothing"},
	{"force", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(force), NOSET,
	 C_RUN | C_PREP, "replace an existing --out file; prepare: recreate test 3's replica"},
	{"progress", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(progress), NOSET, C_RUN,
	 "a live line on stderr while a part runs (default: when stderr is a terminal)"},
	{"no-progress", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(no_progress), NOSET, C_RUN,
	 "no live line, even on a terminal"},
	{"quiet", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(quiet), NOSET, C_ALL,
	 "print errors only on stderr"},
	{"verbose", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(verbose), NOSET, C_ALL,
	 "print what is being done on stderr"},
	{"help", OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, FIELD(help), NOSET, C_ALL,
	 "show this help"},
};
/* clang-format on */

const size_t options_table_count = sizeof(options_table) / sizeof(options_table[0]);
#define OPT_COUNT options_table_count

static const char *const command_names[CMD_COUNT] = {
    [CMD_NONE] = "",	     [CMD_RUN] = "run",	  [CMD_PREPARE] = "prepare", [CMD_CLEAN] = "clean",
    [CMD_LIST] = "list",     [CMD_INFO] = "info", [CMD_CHECK] = "check",     [CMD_CLOCK] = "clock",
    [CMD_STATUS] = "status", [CMD_STOP] = "stop",
};

/* Node names end up in file names and summaries: letters, digits, '.', '_', '-' only. */
bool options_node_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64 || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

const char *options_command_name(enum command cmd)
{
	return command_names[cmd];
}

/* The i-th word of a '|'-separated list, into buf. */
static const char *options_choice_word(const char *choices, size_t i, char *buf, size_t len)
{
	const char *p = choices;

	while (i-- > 0) {
		p = strchr(p, '|');
		if (!p)
			return NULL;
		p++;
	}
	size_t n = strcspn(p, "|");
	if (n >= len)
		n = len - 1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

/*
 * The name of value index of a choice option, from the table, into names[index]: one buffer
 * per value of each option, so that names of different options or values never share one.
 */
static const char *options_choice_at(size_t field, uint64_t index, char (*names)[16], size_t n)
{
	if (index >= n)
		return "?";
	for (size_t i = 0; i < OPT_COUNT; i++) {
		if (options_table[i].field == field)
			return options_choice_word(options_table[i].choices, index, names[index],
						   sizeof(names[index]));
	}
	return "?";
}

const char *options_scale_name(enum scale s)
{
	static char names[SCALE_COUNT][16];

	return options_choice_at(FIELD(scale), s, names, SCALE_COUNT);
}

const char *options_format_name(enum format f)
{
	static char names[FORMAT_COUNT][16];

	return options_choice_at(FIELD(format), f, names, FORMAT_COUNT);
}

void options_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

/* The accepted form of an option's argument, for error messages. */
static void options_form(const struct opt_def *d, char *buf, size_t len)
{
	char lo[32], hi[32];

	switch (d->type) {
	case OPT_UINT:
		/* 2^64 - 1 is no double: printed with %.0f it would end in ...616. */
		if (d->choices)
			snprintf(buf, len, "%s or a whole number from %.0f to %.0f", d->choices,
				 d->min, d->max);
		else if (d->max >= 18446744073709551615.0)
			snprintf(buf, len, "a whole number from %.0f to 18446744073709551615",
				 d->min);
		else
			snprintf(buf, len, "a whole number from %.0f to %.0f", d->min, d->max);
		break;
	case OPT_SIZE:
		snprintf(buf, len, "a size from %s to %s, like 4k, 1M, 150MiB, 4G",
			 size_format((uint64_t)d->min, lo, sizeof(lo)),
			 size_format((uint64_t)d->max, hi, sizeof(hi)));
		break;
	case OPT_SECONDS:
		snprintf(buf, len, "seconds from %g to %g, fractions allowed", d->min, d->max);
		break;
	case OPT_CHOICE:
		snprintf(buf, len, "one of %s", d->choices);
		break;
	case OPT_CPULIST:
		snprintf(buf, len, "a CPU list like 0-3,8");
		break;
	case OPT_NAME:
		snprintf(buf, len,
			 "1 to 64 letters, digits, '.', '_' or '-', not starting with "
			 "'.' or '-'");
		break;
	default:
		snprintf(buf, len, "a non-empty value");
		break;
	}
}

/* Whether a parsed number (rc from its parser) is malformed or out of d's range; why says so. */
static bool options_number_bad(const struct opt_def *d, int rc, double v, const char *origin,
			       const char *arg, const char *form, char *why, size_t whylen)
{
	if (rc == 0 && (v < d->min || v > d->max))
		rc = -ERANGE;
	if (rc)
		options_why(why, whylen, "%s '%s' is %s: expected %s", origin, arg,
			    rc == -ERANGE ? "out of range" : "malformed", form);
	return rc != 0;
}

static int options_set_value(const struct opt_def *d, const char *arg, struct options *o,
			     const char *origin, char *why, size_t whylen)
{
	char *base = (char *)o;
	char form[128];
	uint64_t u;
	double s;
	int rc = 0;

	options_form(d, form, sizeof(form));
	switch (d->type) {
	case OPT_FLAG:
		*(bool *)(base + d->field) = true;
		break;
	case OPT_UINT:
	case OPT_SIZE:
		if (d->type == OPT_UINT && d->choices && strcmp(arg, d->choices) == 0) {
			*(uint64_t *)(base + d->field) = OPTIONS_AUTO;
			break;
		}
		rc = d->type == OPT_UINT ? size_parse_uint(arg, &u) : size_parse(arg, &u);
		if (options_number_bad(d, rc, (double)u, origin, arg, form, why, whylen))
			return -EINVAL;
		*(uint64_t *)(base + d->field) = u;
		break;
	case OPT_SECONDS:
		rc = size_parse_seconds(arg, &s);
		if (options_number_bad(d, rc, s, origin, arg, form, why, whylen))
			return -EINVAL;
		*(double *)(base + d->field) = s;
		break;
	case OPT_NAME:
		if (!options_node_name_ok(arg)) {
			options_why(why, whylen, "%s '%s' is not a valid node name: expected %s",
				    origin, arg, form);
			return -EINVAL;
		}
		*(const char **)(base + d->field) = arg;
		break;
	case OPT_STRING:
		if (!arg[0]) {
			options_why(why, whylen, "%s is empty: expected %s", origin, form);
			return -EINVAL;
		}
		*(const char **)(base + d->field) = arg;
		break;
	case OPT_CHOICE: {
		char word[32];
		for (u = 0; options_choice_word(d->choices, u, word, sizeof(word)); u++) {
			if (strcmp(word, arg) == 0) {
				*(uint64_t *)(base + d->field) = u;
				goto done;
			}
		}
		options_why(why, whylen, "%s '%s' is not known: expected %s", origin, arg, form);
		return -EINVAL;
	}
	case OPT_CPULIST:
		rc = cpulist_parse(arg, o->cpus, OPTIONS_MAX_CPUS, &o->ncpus);
		if (rc) {
			options_why(why, whylen, "%s '%s' is malformed: expected %s, each CPU once",
				    origin, arg, form);
			return -EINVAL;
		}
		*(const char **)(base + d->field) = arg;
		break;
	}
done:
	if (d->set != NOSET)
		*(bool *)(base + d->set) = true;
	return 0;
}

static const struct opt_def *options_find(const char *name, size_t len)
{
	for (size_t i = 0; i < OPT_COUNT; i++) {
		if (strlen(options_table[i].name) == len &&
		    strncmp(options_table[i].name, name, len) == 0)
			return &options_table[i];
	}
	return NULL;
}

static int options_defaults(struct options *o, char *why, size_t whylen)
{
	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < OPT_COUNT; i++) {
		const struct opt_def *d = &options_table[i];
		char origin[64];

		if (!d->def)
			continue;
		snprintf(origin, sizeof(origin), "default of --%s", d->name);
		if (options_set_value(d, d->def, o, origin, why, whylen))
			return -EINVAL;
		if (d->set != NOSET)
			*(bool *)((char *)o + d->set) = false;
	}
	return 0;
}

static int options_environment(struct options *o, char *why, size_t whylen)
{
	for (size_t i = 0; i < OPT_COUNT; i++) {
		const struct opt_def *d = &options_table[i];
		char origin[96];
		const char *v;

		if (!d->env || !(v = getenv(d->env)))
			continue;
		snprintf(origin, sizeof(origin), "environment variable %s (for --%s)", d->env,
			 d->name);
		if (options_set_value(d, v, o, origin, why, whylen))
			return -EINVAL;
	}
	return 0;
}

/* The subcommand, when argv[*i] is one (--help and --version may stand alone). */
static int options_parse_command(int argc, char **argv, int *i, struct options *o, char *why,
				 size_t whylen)
{
	if (*i >= argc || argv[*i][0] == '-')
		return 0;
	for (int c = CMD_RUN; c < CMD_COUNT; c++) {
		if (strcmp(argv[*i], command_names[c]) == 0)
			o->cmd = (enum command)c;
	}
	if (o->cmd == CMD_NONE) {
		options_why(why, whylen,
			    "unknown command '%s': expected run, prepare, clean, list, info, "
			    "check, clock, status or stop",
			    argv[*i]);
		return -EINVAL;
	}
	(*i)++;
	return 0;
}

/* The long option argv[*i] ("--name", "--name=value" or "--name value", then *i moves on). */
static int options_parse_long(int argc, char **argv, int *i, struct options *o, char *why,
			      size_t whylen)
{
	const char *name = argv[*i] + 2;
	const char *eq = strchr(name, '=');
	size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
	const struct opt_def *d = options_find(name, nlen);
	const char *arg = NULL;
	char origin[64], form[128];

	if (!d) {
		options_why(why, whylen, "unknown option '--%.*s' (see stagebench %s%s--help)",
			    (int)nlen, name, options_command_name(o->cmd), o->cmd ? " " : "");
		return -EINVAL;
	}
	if (o->cmd != CMD_NONE && !(d->cmds & (1u << o->cmd))) {
		options_why(why, whylen, "option --%s does not apply to '%s'", d->name,
			    options_command_name(o->cmd));
		return -EINVAL;
	}
	snprintf(origin, sizeof(origin), "--%s", d->name);
	if (d->type == OPT_FLAG && eq) {
		options_why(why, whylen, "--%s takes no value", d->name);
		return -EINVAL;
	}
	if (d->type != OPT_FLAG && eq) {
		arg = eq + 1;
	} else if (d->type != OPT_FLAG && *i + 1 < argc) {
		arg = argv[++(*i)];
	} else if (d->type != OPT_FLAG) {
		options_form(d, form, sizeof(form));
		options_why(why, whylen, "--%s needs a value: expected %s", d->name, form);
		return -EINVAL;
	}
	return options_set_value(d, arg, o, origin, why, whylen) ? -EINVAL : 0;
}

/* What the options say together: a command, and no two that exclude each other. */
static int options_check(const struct options *o, char *why, size_t whylen)
{
	if (o->help || o->version)
		return 0;
	if (o->cmd == CMD_NONE) {
		options_why(why, whylen,
			    "no command given: expected run, prepare, clean, list, info, check, "
			    "clock, status or stop");
		return -EINVAL;
	}
	if ((o->cmd == CMD_LIST || o->cmd == CMD_INFO || o->cmd == CMD_CHECK ||
	     o->cmd == CMD_CLOCK) &&
	    o->ntests) {
		options_why(why, whylen, "'%s' takes no test names (got '%s')",
			    options_command_name(o->cmd), o->tests[0]);
		return -EINVAL;
	}
	if ((o->cmd == CMD_STATUS || o->cmd == CMD_STOP) && o->ntests != 1) {
		options_why(why, whylen, "'%s' takes one STATE_DIR (the --detach of the run)",
			    options_command_name(o->cmd));
		return -EINVAL;
	}
	if (o->set_start_at && o->set_start_in) {
		options_why(why, whylen, "--start-at and --start-in exclude each other: give one");
		return -EINVAL;
	}
	if (o->set_threads && o->set_cpus && o->threads != o->ncpus) {
		options_why(why, whylen,
			    "--threads %llu disagrees with --cpus '%s', which names %zu CPUs",
			    (unsigned long long)o->threads, o->cpus_text, o->ncpus);
		return -EINVAL;
	}
	if (o->progress && o->no_progress) {
		options_why(why, whylen, "--progress and --no-progress exclude each other");
		return -EINVAL;
	}
	if (o->quiet && o->verbose) {
		options_why(why, whylen, "--quiet and --verbose exclude each other");
		return -EINVAL;
	}
	return 0;
}

int options_parse(int argc, char **argv, struct options *o, char *why, size_t whylen)
{
	bool only_positional = false;
	int i = 1;

	if (options_defaults(o, why, whylen) ||
	    options_parse_command(argc, argv, &i, o, why, whylen) ||
	    options_environment(o, why, whylen))
		return -EINVAL;
	for (; i < argc; i++) {
		const char *a = argv[i];

		if (only_positional || a[0] != '-' || a[1] == '\0') {
			if (o->ntests >= OPTIONS_MAX_TESTS) {
				options_why(why, whylen, "too many tests named (at most %d)",
					    OPTIONS_MAX_TESTS);
				return -EINVAL;
			}
			o->tests[o->ntests++] = a;
		} else if (strcmp(a, "--") == 0) {
			only_positional = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			o->help = true;
		} else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
			o->version = true;
		} else if (a[1] != '-') {
			options_why(why, whylen, "unknown option '%s' (see stagebench --help)", a);
			return -EINVAL;
		} else if (options_parse_long(argc, argv, &i, o, why, whylen)) {
			return -EINVAL;
		}
	}
	return options_check(o, why, whylen);
}
