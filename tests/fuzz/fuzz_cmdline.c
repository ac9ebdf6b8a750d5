/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target of the whole command line: the input is split on NUL or newline into
 * arguments after "stagebench"; an argument "env:STAGEBENCH_X=value" sets that environment
 * variable for this input instead. options_parse, then plan_build for run, prepare and
 * clean, must never crash, leak or hit undefined behaviour; a plan that is built must be
 * consistent (parts inside their tests, chunks inside replicas, replica names that say
 * their size). No I/O: --help goes to a memory stream.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/options.h"
#include "driver/plan.h"
#include "util/names.h"
#include "util/pattern.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The variables options_parse reads, each with a buffer for putenv (no allocation per run). */
static const char *const fuzz_env_names[] = {"STAGEBENCH_DIR", "STAGEBENCH_SCALE",
					     "STAGEBENCH_NODE"};
#define FUZZ_NENV (sizeof(fuzz_env_names) / sizeof(fuzz_env_names[0]))
static char fuzz_env_buf[FUZZ_NENV][256];

static void fuzz_fail(const char *what, const char *why) __attribute__((noreturn));
static void fuzz_fail(const char *what, const char *why)
{
	fprintf(stderr, "fuzz_cmdline: %s (%s)\n", what, why);
	abort();
}

static void fuzz_env_clear(void)
{
	for (size_t i = 0; i < FUZZ_NENV; i++)
		unsetenv(fuzz_env_names[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_env_clear();
	return 0;
}

/* "env:NAME=value" for one of the known names: put it in the environment. */
static bool fuzz_env_item(const char *a)
{
	if (strncmp(a, "env:", 4) != 0)
		return false;
	a += 4;
	for (size_t i = 0; i < FUZZ_NENV; i++) {
		size_t n = strlen(fuzz_env_names[i]);
		if (strncmp(a, fuzz_env_names[i], n) == 0 && a[n] == '=') {
			snprintf(fuzz_env_buf[i], sizeof(fuzz_env_buf[i]), "%s", a);
			putenv(fuzz_env_buf[i]);
			return true;
		}
	}
	return false;
}

/* What a plan promises its users (main.c, run.c and views.c index with these without checking). */
static void fuzz_check_plan(const struct options *o, const struct plan *p)
{
	size_t next = 0;
	char name[64];

	if (p->ntests == 0 || p->ntests > PLAN_MAX_TESTS || p->nparts == 0 ||
	    p->nparts > PLAN_MAX_PARTS)
		fuzz_fail("plan sizes out of bounds", "");
	for (size_t i = 0; i < p->ntests; i++) {
		const struct plan_test *t = &p->tests[i];

		if (!t->def || t->first != next || t->nparts == 0 ||
		    t->first + t->nparts > p->nparts)
			fuzz_fail("a test's parts are not the next ones of the plan", "");
		next += t->nparts;
		for (size_t k = t->first; k < t->first + t->nparts; k++) {
			if (strcmp(p->parts[k].def->test, t->def->name) != 0)
				fuzz_fail("a part is filed under another test",
					  p->parts[k].def->name);
			if (!p->parts[k].ops)
				fuzz_fail("a part's kind is not resolved", p->parts[k].def->name);
		}
		if (!t->def->has_replica) {
			if (t->replica[0])
				fuzz_fail("a test without replica has a replica name",
					  t->def->name);
			continue;
		}
		if (t->file == 0 || t->file % PATTERN_BLOCK)
			fuzz_fail("a replica size is not a multiple of the block", t->replica);
		names_replica(name, sizeof(name), t->def->name, t->file);
		if (strcmp(name, t->replica) != 0)
			fuzz_fail("the replica name is not names_replica's", t->replica);
		/* "stagebench.2.4GiB": the name says the size, so two sizes never share it. */
		struct names_fields f;
		if (names_parse(name, &f) != NAMES_REPLICA || !f.exact || f.bytes != t->file ||
		    strcmp(f.head, t->def->name) != 0)
			fuzz_fail("the replica name does not give the replica size", t->replica);
	}
	if (next != p->nparts)
		fuzz_fail("parts belong to no test", "");
	for (size_t i = 0; i < p->nparts; i++) {
		const struct part_params *pp = &p->parts[i].p;

		if (pp->file && pp->chunk > pp->file)
			fuzz_fail("a chunk is larger than its replica", p->parts[i].def->name);
		if ((o->set_count && pp->count != o->count) ||
		    (o->set_chunk && pp->chunk != o->chunk) ||
		    (o->set_passes && pp->passes != o->passes) ||
		    (o->set_file_size && pp->file != o->file_size))
			fuzz_fail("an override was not applied", p->parts[i].def->name);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct options o;
	static struct plan plan;
	char **argv = NULL, *buf = malloc(size + 1);
	char why[512];
	int argc = 1;
	size_t nitems = 1;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\n' || buf[i] == '\0') {
			buf[i] = '\0';
			nitems++;
		}
	}
	argv = calloc(nitems + 2, sizeof(*argv));
	if (!argv)
		goto out;
	argv[0] = "stagebench";
	/* Every item, empty ones included, but for the one after a final separator. */
	for (size_t i = 0, start = 0; i <= size; i++) {
		if (i < size && buf[i] != '\0')
			continue;
		if (i == size && start == size)
			break;
		if (!fuzz_env_item(buf + start))
			argv[argc++] = buf + start;
		start = i + 1;
	}
	argv[argc] = NULL;

	why[0] = '\0';
	if (options_parse(argc, argv, &o, why, sizeof(why)) != 0) {
		if (!why[0] || strchr(why, '\n'))
			fuzz_fail("options_parse failed without one line of reason", why);
		goto out;
	}
	if (o.help) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		if (f) {
			options_help(o.cmd, f);
			fclose(f);
		}
		free(text);
	}
	if (strcmp(enums_scale_name(o.scale), "?") == 0 ||
	    strcmp(enums_format_name(o.format), "?") == 0)
		fuzz_fail("a choice has no name", "");
	if (o.help || o.version)
		goto out;
	if (o.cmd != CMD_RUN && o.cmd != CMD_PREPARE && o.cmd != CMD_CLEAN)
		goto out;
	why[0] = '\0';
	if (plan_build(&o, &plan, why, sizeof(why)) != 0) {
		if (!why[0] || strchr(why, '\n'))
			fuzz_fail("plan_build failed without one line of reason", why);
		goto out;
	}
	fuzz_check_plan(&o, &plan);
out:
	fuzz_env_clear();
	free(argv);
	free(buf);
	return 0;
}
