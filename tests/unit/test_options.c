/* SPDX-License-Identifier: MIT */
/*
 * The option table: defaults, every argument type, ranges, environment variables, and the
 * errors that name the option and the accepted form.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "driver/options.h"
#include "util/json.h"

#define MAXARGS 16

struct opt_case {
	const char *argv[MAXARGS]; /* after the program name; NULL-terminated */
	int ok;			   /* 1: parses, 0: rejected */
	const char *why;	   /* rejected: a substring of the message */
};

static int parse(const char *const *args, struct options *o, char *why, size_t len)
{
	char *argv[MAXARGS + 1];
	int argc = 0;

	argv[argc++] = (char *)"stagebench";
	for (size_t i = 0; args[i]; i++)
		argv[argc++] = (char *)args[i];
	argv[argc] = NULL;
	return options_parse(argc, argv, o, why, len);
}

static const struct opt_case cases[] = {
    {{"run", "1a", NULL}, 1, NULL},
    {{"run", "1a", "--xfer", "4k", NULL}, 1, NULL},
    {{"run", "1a", "--xfer=256KiB", NULL}, 1, NULL},
    {{"run", "1a", "--xfer", "1.5.3M", NULL}, 0, "--xfer '1.5.3M' is malformed: expected a size"},
    {{"run", "1a", "--xfer", "-4k", NULL}, 0, "--xfer '-4k' is malformed"},
    {{"run", "1a", "--xfer", "4q", NULL}, 0, "--xfer '4q' is malformed"},
    {{"run", "1a", "--xfer", "", NULL}, 0, "--xfer '' is malformed"},
    {{"run", "1a", "--xfer", "99999999999999999999", NULL}, 0, "out of range"},
    {{"run", "1a", "--xfer", "2k", NULL},
     0,
     "--xfer '2k' is out of range: expected a size from 4 KiB"},
    {{"run", "1a", "--xfer", NULL}, 0, "--xfer needs a value"},
    {{"run", "1a", "--threads", "0", NULL},
     0,
     "--threads '0' is out of range: expected a whole number from 1"},
    {{"run", "1a", "--threads", "2x", NULL}, 0, "--threads '2x' is malformed"},
    {{"run", "1a", "--repeat", "0", NULL}, 0, "--repeat '0' is out of range"},
    {{"run", "1a", "--start-in", "-1", NULL}, 0, "--start-in '-1' is malformed"},
    {{"run", "1a", "--start-in", "nan", NULL}, 0, "--start-in 'nan' is malformed"},
    {{"run", "1a", "--start-in", "1", "--start-at", "1800000000", NULL}, 0, "exclude each other"},
    {{"run", "1a", "--scale", "big", NULL},
     0,
     "--scale 'big' is not known: expected one of spec|small|tiny"},
    {{"run", "1a", "--format", "xml", NULL}, 0, "expected one of text|json|csv"},
    {{"run", "1a", "--cpus", "0-3,2", NULL}, 0, "--cpus '0-3,2' is malformed"},
    {{"run", "1a", "--cpus", "0-3", "--threads", "2", NULL}, 0, "disagrees with --cpus"},
    {{"run", "1a", "--cpus", "0-1", "--threads", "2", NULL}, 1, NULL},
    {{"run", "1a", "--verify=yes", NULL}, 0, "--verify takes no value"},
    {{"run", "1a", "--bogus", NULL}, 0, "unknown option '--bogus' (see stagebench run --help)"},
    {{"run", "1a", "-x", NULL}, 0, "unknown option '-x'"},
    {{"list", "--verify", NULL}, 0, "option --verify does not apply to 'list'"},
    {{"list", "1a", NULL}, 0, "'list' takes no test names"},
    {{"walk", NULL},
     0,
     "unknown command 'walk': expected run, prepare, clean, list, info, check, clock, status or "
     "stop"},
    {{NULL}, 0, "no command given"},
    {{"--help", NULL}, 1, NULL},
    {{"--version", NULL}, 1, NULL},
    {{"run", "--quiet", "--verbose", "1a", NULL}, 0, "exclude each other"},
    {{"run", "--", "--1a", NULL}, 1, NULL},
    /* -o is --out; the formats a command writes, and only those */
    {{"run", "1a", "-o", "x.json", NULL}, 1, NULL},
    {{"run", "1a", "-ox.json", NULL}, 1, NULL},
    {{"run", "1a", "-o", NULL}, 0, "-o needs a value: expected FILE"},
    {{"run", "1a", "-o", "", NULL}, 0, "-o is empty"},
    {{"info", "-o", "x.json", NULL}, 0, "option -o (--out) does not apply to 'info'"},
    {{"info", "--format", "csv", NULL},
     0,
     "--format 'csv' does not apply to 'info': expected one of text|json"},
    {{"info", "--format", "xml", NULL}, 0, "'xml' is not known: expected one of text|json"},
    {{"info", "--format", "json", NULL}, 1, NULL},
    {{"status", "--format", "csv", "d", NULL}, 1, NULL},
    {{"check", "--health", "--format", "csv", NULL}, 1, NULL},
    {{"run", "1a", "--dry-run", "--format", "json", NULL},
     0,
     "--dry-run prints its plan as text: --format json does not apply to it"},
};

static void test_table(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct options o;
		char why[512] = "";
		int rc = parse(cases[i].argv, &o, why, sizeof(why));

		CHECK_MSG((rc == 0) == (cases[i].ok == 1), "case %zu (%s %s): rc %d, why '%s'", i,
			  cases[i].argv[0] ? cases[i].argv[0] : "",
			  cases[i].argv[1] ? cases[i].argv[1] : "", rc, why);
		if (!cases[i].ok && cases[i].why)
			CHECK_MSG(strstr(why, cases[i].why) != NULL, "case %zu: '%s' lacks '%s'", i,
				  why, cases[i].why);
	}
}

/* -o sets what --out sets. */
static void test_short_out(void)
{
	static const char *const args[] = {"run", "1a", "-o", "node.json", NULL};
	struct options o;
	char why[256];

	REQUIRE(parse(args, &o, why, sizeof(why)) == 0);
	CHECK(o.out && strcmp(o.out, "node.json") == 0);
}

static void test_defaults_and_values(void)
{
	static const char *const args[] = {
	    "run",  "2b",     "--xfer", "256k",	   "--threads", "2",	    "--start-in",
	    "0.25", "--seed", "42",	"--scale", "tiny",	"--verify", NULL};
	struct options o;
	char why[512];

	CHECK(parse((const char *const[]){"run", "1a", NULL}, &o, why, sizeof(why)) == 0);
	CHECK(o.cmd == CMD_RUN);
	CHECK_U64(o.xfer, 1024 * 1024);
	CHECK_U64(o.repeat, 1);
	CHECK(o.start_in == 5.0);
	CHECK(!o.set_start_in && !o.set_start_at && !o.set_seed);
	CHECK_U64(o.scale, SCALE_SPEC);
	CHECK_U64(o.format, FORMAT_TEXT);
	CHECK(o.ntests == 1 && strcmp(o.tests[0], "1a") == 0);

	CHECK(parse(args, &o, why, sizeof(why)) == 0);
	CHECK_U64(o.xfer, 256 * 1024);
	CHECK_U64(o.threads, 2);
	CHECK(o.set_threads);
	CHECK(o.start_in == 0.25 && o.set_start_in);
	CHECK_U64(o.seed, 42);
	CHECK(o.set_seed);
	CHECK_U64(o.scale, SCALE_TINY);
	CHECK(o.verify);
	CHECK_STR(enums_scale_name(o.scale), "tiny");
	CHECK_STR(enums_format_name(FORMAT_CSV), "csv");

	CHECK(parse((const char *const[]){"run", "1a", "--cpus", "3,1-2", NULL}, &o, why,
		    sizeof(why)) == 0);
	CHECK(o.ncpus == 3 && o.cpus[0] == 3 && o.cpus[1] == 1 && o.cpus[2] == 2);
}

static void test_environment(void)
{
	struct options o;
	char why[512];

	setenv("STAGEBENCH_DIR", "/stage/x", 1);
	setenv("STAGEBENCH_SCALE", "small", 1);
	CHECK(parse((const char *const[]){"run", "1a", NULL}, &o, why, sizeof(why)) == 0);
	CHECK(o.dir && strcmp(o.dir, "/stage/x") == 0);
	CHECK_U64(o.scale, SCALE_SMALL);
	/* the command line wins over the environment */
	CHECK(parse((const char *const[]){"run", "1a", "--scale", "tiny", "--dir", "/d", NULL}, &o,
		    why, sizeof(why)) == 0);
	CHECK_U64(o.scale, SCALE_TINY);
	CHECK_STR(o.dir, "/d");
	setenv("STAGEBENCH_SCALE", "enormous", 1);
	CHECK(parse((const char *const[]){"run", "1a", NULL}, &o, why, sizeof(why)) != 0);
	CHECK_MSG(strstr(why, "environment variable STAGEBENCH_SCALE") != NULL, "%s", why);
	setenv("STAGEBENCH_DIR", "", 1);
	unsetenv("STAGEBENCH_SCALE");
	CHECK(parse((const char *const[]){"run", "1a", NULL}, &o, why, sizeof(why)) != 0);
	CHECK_MSG(strstr(why, "STAGEBENCH_DIR") != NULL && strstr(why, "empty"), "%s", why);
	unsetenv("STAGEBENCH_DIR");
}

static void test_help(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	options_help(CMD_NONE, f);
	fclose(f);
	static const char *const want[] = {
	    "--dir DIR",    "--scale SCALE",	     "--threads N",	"--cpus LIST", "--start-at",
	    "[default: 5]", "[env: STAGEBENCH_DIR]", "spec|small|tiny", "exit status"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK_MSG(strstr(text, want[i]) != NULL, "help lacks '%s'", want[i]);
	free(text);

	text = NULL;
	f = open_memstream(&text, &len);
	options_help(CMD_LIST, f);
	fclose(f);
	CHECK(strstr(text, "--scale") != NULL);
	CHECK(strstr(text, "--verify") == NULL); /* run-only options are not listed for list */
	free(text);
}

/*
 * Each typed word has one name table, in its enum's order; the parser takes exactly its words
 * and stores the typed value.
 */
static void test_choice_names(void)
{
	const struct {
		const char *const *table;
		unsigned count;
		const char *const *want;
	} tables[] = {
	    {enums_scales, SCALE_COUNT, (const char *const[]){"spec", "small", "tiny"}},
	    {enums_formats, FORMAT_COUNT, (const char *const[]){"text", "json", "csv"}},
	    {enums_signals, STOP_SIG_COUNT, (const char *const[]){"INT", "TERM"}},
	};
	struct options o;
	char why[256];

	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		for (unsigned v = 0; v < tables[t].count; v++)
			CHECK_STR(tables[t].table[v], tables[t].want[v]);
		CHECK(tables[t].table[tables[t].count] == NULL);
	}
	CHECK_STR(enums_scale_name(SCALE_SMALL), "small");
	CHECK_STR(enums_format_name(FORMAT_JSON), "json");
	CHECK_STR(enums_signal_name(STOP_SIG_TERM), "TERM");
	CHECK_STR(enums_scale_name(SCALE_COUNT), "?");
	CHECK_STR(enums_command_name(CMD_STATUS), "status");
	CHECK_STR(enums_command_name(CMD_COUNT), "?");
	for (int s = 0; s < SCALE_COUNT; s++) {
		CHECK(parse((const char *const[]){"run", "1a", "--scale", enums_scales[s], NULL},
			    &o, why, sizeof(why)) == 0);
		CHECK(o.scale == (enum scale)s);
	}
	for (int c = CMD_RUN; c < CMD_COUNT; c++) {
		CHECK(parse((const char *const[]){enums_commands[c], "--help", NULL}, &o, why,
			    sizeof(why)) == 0);
		CHECK(o.cmd == (enum command)c);
	}
	CHECK(parse((const char *const[]){"stop", "d", "--signal", "TERM", NULL}, &o, why,
		    sizeof(why)) == 0 &&
	      o.signal == STOP_SIG_TERM);
}

/*
 * The catalogue's "options": every numeric option of run with its kind of number, range and
 * scope, in the table's order; the overrides of one part or one test say so.
 */
static void test_ranges(void)
{
	static const char *const want[] = {
	    "{\"option\":\"--threads\",\"type\":\"count\",\"min\":1,\"max\":4096,"
	    "\"scope\":\"run\"}",
	    "\"option\":\"--start-in\",\"type\":\"seconds\",\"min\":0,\"max\":86400,",
	    "\"option\":\"--interval\",\"type\":\"seconds\",\"min\":0.001,",
	    "\"option\":\"--repeat\",\"type\":\"count\"",
	    "\"option\":\"--xfer\",\"type\":\"size\",\"min\":4096,\"max\":1073741824,",
	    "\"option\":\"--seed\",\"type\":\"integer\",\"min\":0,"
	    "\"max\":18446744073709551615,\"scope\":\"run\"}",
	    "\"option\":\"--count\",\"type\":\"count\",\"min\":1,\"max\":1000000000000,"
	    "\"scope\":\"part\"}",
	    "\"option\":\"--chunk\",\"type\":\"size\",\"min\":1,\"max\":1099511627776,"
	    "\"scope\":\"part\"}",
	    "\"option\":\"--file-size\",\"type\":\"size\",\"min\":4096,"
	    "\"max\":1125899906842624,\"scope\":\"test\"}",
	    "\"option\":\"--passes\",\"type\":\"count\",\"min\":1,\"max\":1000000000,"
	    "\"scope\":\"part\"}",
	    NULL};
	char *doc = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&doc, &len);
	struct json j;

	json_init(&j, f, false);
	options_ranges_json(&j, CMD_RUN);
	CHECK(json_finish(&j) == 0);
	fclose(f);
	const char *at = doc;
	for (size_t i = 0; want[i]; i++) {
		const char *k = strstr(at, want[i]);
		CHECK_MSG(k != NULL, "'%s' missing or out of order in %s", want[i], doc);
		at = k ? k + strlen(want[i]) : at;
	}
	/* No option that is not a number of run: --wait is stop's, --dir a path. */
	CHECK(strstr(doc, "--wait") == NULL && strstr(doc, "--dir") == NULL);
	free(doc);
}

int main(void)
{
	unsetenv("STAGEBENCH_DIR");
	unsetenv("STAGEBENCH_SCALE");
	unsetenv("STAGEBENCH_NODE");
	test_table();
	test_short_out();
	test_defaults_and_values();
	test_environment();
	test_help();
	test_choice_names();
	test_ranges();
	return check_done();
}
