/* SPDX-License-Identifier: MIT */
/*
 * The parser that the option table (options_table.c) drives: defaults, environment variables,
 * arguments and their range checks all come from its rows; then the options are checked
 * together.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/options_table.h"
#include "util/cpulist.h"
#include "util/size.h"

/*
 * An OPT_CHOICE's field is its typed enum (enums.h): the parser stores the word's index
 * through the enum's underlying type, which is unsigned int for these (no negative values).
 */
_Static_assert(sizeof(enum scale) == sizeof(unsigned) && sizeof(enum format) == sizeof(unsigned) &&
		   sizeof(enum stop_sig) == sizeof(unsigned),
	       "a choice is stored as an unsigned int");

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

const char *options_choices_join(const char *const *choices, const char *sep, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; choices && choices[i] && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? sep : "", choices[i]);
	return buf;
}

unsigned options_choices_of(const struct opt_def *d, enum command cmd)
{
	if (d->cmd_choices && cmd != CMD_NONE && (unsigned)cmd < CMD_COUNT && d->cmd_choices[cmd])
		return d->cmd_choices[cmd];
	return ~0u;
}

const char *options_choices_join_for(const struct opt_def *d, enum command cmd, const char *sep,
				     char *buf, size_t len)
{
	unsigned mask = options_choices_of(d, cmd);
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0, k = 0; d->choices && d->choices[i] && n < len; i++)
		if (mask & (1u << i))
			n += (size_t)snprintf(buf + n, len - n, "%s%s", k++ ? sep : "",
					      d->choices[i]);
	return buf;
}

void options_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

/* The accepted form of an option's argument, for error messages. */
static void options_form(const struct opt_def *d, enum command cmd, char *buf, size_t len)
{
	char lo[32], hi[32], words[64];

	options_choices_join_for(d, cmd, "|", words, sizeof(words));
	switch (d->type) {
	case OPT_UINT:
	case OPT_COUNT:
		/* 2^64 - 1 is no double: printed with %.0f it would end in ...616. */
		if (d->choices)
			snprintf(buf, len, "%s or a whole number from %.0f to %.0f", words, d->min,
				 d->max);
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
		snprintf(buf, len, "one of %s", words);
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

	options_form(d, o->cmd, form, sizeof(form));
	switch (d->type) {
	case OPT_FLAG:
		*(bool *)(base + d->field) = true;
		break;
	case OPT_UINT:
	case OPT_COUNT:
	case OPT_SIZE:
		if (d->type == OPT_UINT && d->choices && strcmp(arg, d->choices[0]) == 0) {
			*(uint64_t *)(base + d->field) = OPTIONS_AUTO;
			break;
		}
		rc = d->type == OPT_SIZE ? size_parse(arg, &u) : size_parse_uint(arg, &u);
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
	case OPT_CHOICE:
		for (unsigned k = 0; d->choices[k]; k++) {
			if (strcmp(d->choices[k], arg) != 0)
				continue;
			if (!(options_choices_of(d, o->cmd) & (1u << k))) {
				options_choices_join_for(d, o->cmd, "|", form, sizeof(form));
				options_why(why, whylen,
					    "%s '%s' does not apply to '%s': expected one of %s",
					    origin, arg, enums_command_name(o->cmd), form);
				return -EINVAL;
			}
			*(unsigned *)(base + d->field) = k;
			goto done;
		}
		options_why(why, whylen, "%s '%s' is not known: expected %s", origin, arg, form);
		return -EINVAL;
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
	for (size_t i = 0; i < options_table_count; i++) {
		if (strlen(options_table[i].name) == len &&
		    strncmp(options_table[i].name, name, len) == 0)
			return &options_table[i];
	}
	return NULL;
}

static int options_defaults(struct options *o, char *why, size_t whylen)
{
	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < options_table_count; i++) {
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
	for (size_t i = 0; i < options_table_count; i++) {
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
		if (strcmp(argv[*i], enums_commands[c]) == 0)
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
			    (int)nlen, name, enums_command_name(o->cmd), o->cmd ? " " : "");
		return -EINVAL;
	}
	if (o->cmd != CMD_NONE && !(d->cmds & (1u << o->cmd))) {
		options_why(why, whylen, "option --%s does not apply to '%s'", d->name,
			    enums_command_name(o->cmd));
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
		options_form(d, o->cmd, form, sizeof(form));
		options_why(why, whylen, "--%s needs a value: expected %s", d->name, form);
		return -EINVAL;
	}
	return options_set_value(d, arg, o, origin, why, whylen) ? -EINVAL : 0;
}

/* The short option argv[*i]: "-o VALUE" or "-oVALUE" (then *i moves on), as its long form. */
static int options_parse_short(int argc, char **argv, int *i, struct options *o, char *why,
			       size_t whylen)
{
	const char *a = argv[*i];
	const struct opt_def *d = NULL;
	char origin[64];

	for (size_t k = 0; k < options_table_count && !d; k++)
		if (options_table[k].shortname && options_table[k].shortname == a[1])
			d = &options_table[k];
	if (!d || (d->type == OPT_FLAG && a[2])) {
		options_why(why, whylen, "unknown option '%s' (see stagebench %s%s--help)", a,
			    enums_command_name(o->cmd), o->cmd ? " " : "");
		return -EINVAL;
	}
	if (o->cmd != CMD_NONE && !(d->cmds & (1u << o->cmd))) {
		options_why(why, whylen, "option -%c (--%s) does not apply to '%s'", a[1], d->name,
			    enums_command_name(o->cmd));
		return -EINVAL;
	}
	snprintf(origin, sizeof(origin), "-%c", a[1]);
	const char *arg = NULL;
	if (d->type != OPT_FLAG && a[2])
		arg = a + 2;
	else if (d->type != OPT_FLAG && *i + 1 < argc)
		arg = argv[++(*i)];
	else if (d->type != OPT_FLAG) {
		options_why(why, whylen, "-%c needs a value: expected %s", a[1], d->metavar);
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
			    enums_command_name(o->cmd), o->tests[0]);
		return -EINVAL;
	}
	if ((o->cmd == CMD_STATUS || o->cmd == CMD_STOP) && o->ntests != 1) {
		options_why(why, whylen, "'%s' takes one STATE_DIR (the --detach of the run)",
			    enums_command_name(o->cmd));
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
	if (o->dry_run && o->format != FORMAT_TEXT) {
		options_why(why, whylen,
			    "--dry-run prints its plan as text: --format %s does not apply to it",
			    enums_format_name(o->format));
		return -EINVAL;
	}
	if (o->set_lease && !o->detach) {
		options_why(
		    why, whylen,
		    "--lease is the lease of an armed run: give --detach STATE_DIR with it");
		return -EINVAL;
	}
	if (o->compact && o->format != FORMAT_JSON) {
		options_why(why, whylen, "--compact is a form of --format json: give both");
		return -EINVAL;
	}
	if (o->clock && o->format != FORMAT_JSON) {
		options_why(why, whylen,
			    "--clock follows the state's JSON line: give --format json with it");
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
			if (options_parse_short(argc, argv, &i, o, why, whylen))
				return -EINVAL;
		} else if (options_parse_long(argc, argv, &i, o, why, whylen)) {
			return -EINVAL;
		}
	}
	return options_check(o, why, whylen);
}
