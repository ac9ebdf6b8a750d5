/* SPDX-License-Identifier: MIT */
/*
 * The tests and parts of the spec as tables, and the plan built from a command line.
 * Units are binary (KB = KiB). Small scale keeps the spec's N and M and the replicas of 1a
 * and 1b, with fewer passes and 2 and 3 on 1 GiB and 1.5 GiB replicas: `run all` takes
 * well under a minute on two cores and 3.4 GiB of disk. Tiny keeps every file at 8 MiB or
 * less, for tests.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "driver/options.h"
#include "driver/plan.h"
#include "platform/clock.h"
#include "util/names.h"
#include "util/pattern.h"
#include "util/size.h"
#include "workers/registry.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

const struct test_def plan_tests[] = {
    {.name = "1a",
     .title = "read_from_cnode_cache",
     .has_replica = true,
     .recreate = true,
     .in_all = true},
    {.name = "1b", .title = "mmap_file_in", .has_replica = true, .recreate = true, .in_all = true},
    {.name = "2",
     .title = "read_from_ioserver_cache",
     .has_replica = true,
     .recreate = true,
     .in_all = true},
    {.name = "3",
     .title = "read_from_disk",
     .has_replica = true,
     .needs_prepare = true,
     .in_all = true,
     .server_drop = true},
    {.name = "4", .title = "write_many_files", .in_all = true},
    /* Not of the spec: the driver alone, to measure its overhead and test it. */
    {.name = "null", .title = "driver_overhead"},
};
const size_t plan_ntests = sizeof(plan_tests) / sizeof(plan_tests[0]);

/* {count, chunk, file, passes} at spec, small and tiny scale. */
/* clang-format off */
#define RANDREAD_WHAT "N random aligned reads of M"
#define MANYFILES_WHAT "write N new files of M"
const struct part_def plan_parts[] = {
    {"1a", "1a", "seqread", PLAN_TIER_NODE_CACHE, "read the whole replica PASSES times",
     {{0, 0, 150 * MiB, 64},   {0, 0, 150 * MiB, 32},    {0, 0, 4 * MiB, 4}}},
    {"1b", "1b", "mmaptouch", PLAN_TIER_NODE_CACHE,
     "mmap the replica and touch every page, PASSES times",
     {{0, 0, 750 * MiB, 16},   {0, 0, 750 * MiB, 8},     {0, 0, 8 * MiB, 2}}},
    {"2a", "2", "randread", PLAN_TIER_SERVER_CACHE, RANDREAD_WHAT,
     {{18000, 4 * KiB, 4 * GiB, 0}, {18000, 4 * KiB, 1 * GiB, 0}, {200, 4 * KiB, 8 * MiB, 0}}},
    {"2b", "2", "randread", PLAN_TIER_SERVER_CACHE, RANDREAD_WHAT,
     {{150, 1 * MiB, 4 * GiB, 0},   {150, 1 * MiB, 1 * GiB, 0},   {8, 1 * MiB, 8 * MiB, 0}}},
    {"2c", "2", "randread", PLAN_TIER_SERVER_CACHE, RANDREAD_WHAT,
     {{1, 128 * MiB, 4 * GiB, 0},   {1, 128 * MiB, 1 * GiB, 0},   {1, 4 * MiB, 8 * MiB, 0}}},
    {"3a", "3", "randread", PLAN_TIER_SERVER_DISK, RANDREAD_WHAT,
     {{80, 1 * MiB, 512 * GiB, 0},  {80, 1 * MiB, 1536 * MiB, 0}, {8, 1 * MiB, 8 * MiB, 0}}},
    {"3b", "3", "randread", PLAN_TIER_SERVER_DISK, RANDREAD_WHAT,
     {{1, 96 * MiB, 512 * GiB, 0},  {1, 96 * MiB, 1536 * MiB, 0}, {1, 4 * MiB, 8 * MiB, 0}}},
    {"4a", "4", "manyfiles", PLAN_TIER_NONE, MANYFILES_WHAT,
     {{1200, 4 * KiB, 0, 0},        {1200, 4 * KiB, 0, 0},        {50, 4 * KiB, 0, 0}}},
    {"4b", "4", "manyfiles", PLAN_TIER_NONE, MANYFILES_WHAT,
     {{60, 1 * MiB, 0, 0},          {60, 1 * MiB, 0, 0},          {4, 1 * MiB, 0, 0}}},
    {"4c", "4", "manyfiles", PLAN_TIER_NONE, MANYFILES_WHAT,
     {{1, 64 * MiB, 0, 0},          {1, 64 * MiB, 0, 0},          {1, 4 * MiB, 0, 0}}},
    {"null", "null", "null", PLAN_TIER_NONE, "N operations that do no I/O (driver overhead)",
     {{100000, 0, 0, 0},            {100000, 0, 0, 0},            {1000, 0, 0, 0}}},
};
/* clang-format on */
const size_t plan_nparts = sizeof(plan_parts) / sizeof(plan_parts[0]);

const char *plan_override_name(enum plan_override o)
{
	static const char *const names[PLAN_NOVERRIDES] = {
	    [PLAN_OVERRIDE_COUNT] = "count",
	    [PLAN_OVERRIDE_CHUNK] = "chunk",
	    [PLAN_OVERRIDE_FILE_SIZE] = "file_size",
	    [PLAN_OVERRIDE_PASSES] = "passes",
	};

	return (unsigned)o < PLAN_NOVERRIDES ? names[o] : "?";
}

bool plan_run_id_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > PATTERN_RUN_ID_MAX || s[0] == '.' || s[0] == '-' || strstr(s, ".."))
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

const char *plan_tier_name(enum plan_tier tier)
{
	static const char *const names[PLAN_TIER_COUNT] = {
	    [PLAN_TIER_NONE] = NULL,
	    [PLAN_TIER_NODE_CACHE] = "node_cache",
	    [PLAN_TIER_SERVER_CACHE] = "server_cache",
	    [PLAN_TIER_SERVER_DISK] = "server_disk",
	};

	return (unsigned)tier < PLAN_TIER_COUNT ? names[tier] : NULL;
}

_Static_assert(OPTIONS_MAX_TESTS <= PLAN_MAX_NAMED, "every name given fits in the plan");
_Static_assert(OPTIONS_AUTO == PLAN_AUTO, "--buffer-offset auto is the plan's auto");

static const struct test_def *plan_find_test(const char *name)
{
	for (size_t i = 0; i < plan_ntests; i++) {
		if (strcmp(plan_tests[i].name, name) == 0)
			return &plan_tests[i];
	}
	return NULL;
}

static const struct part_def *plan_find_part(const char *name)
{
	for (size_t i = 0; i < plan_nparts; i++) {
		if (strcmp(plan_parts[i].name, name) == 0)
			return &plan_parts[i];
	}
	return NULL;
}

/*
 * Add test t with its parts among defs[0..ndefs-1]: all of them (only == NULL) or just the
 * part only. Each part's kind is resolved here: a kind that is not registered is an error
 * now, never a thread without work later.
 */
static int plan_add(struct plan *plan, const struct test_def *t, const struct part_def *only,
		    const struct part_def *defs, size_t ndefs, enum scale scale, char *why,
		    size_t whylen)
{
	struct plan_test *pt = NULL;

	for (size_t i = 0; i < plan->ntests; i++) {
		const struct plan_test *seen = &plan->tests[i];

		if (seen->def != t)
			continue;
		/* "run 2a 2c": parts of one test named one after the other run as that test. */
		if (only && i == plan->ntests - 1 && seen->partial) {
			for (size_t k = seen->first; k < seen->first + seen->nparts; k++) {
				if (plan->parts[k].def == only)
					goto dup;
			}
			pt = &plan->tests[i];
			break;
		}
	dup:
		options_why(
		    why, whylen,
		    "%s is named more than once (or with its test): expected each test or part "
		    "once, like 2 or 2a 2c",
		    only ? only->name : t->name);
		return -EINVAL;
	}
	if (!pt) {
		if (plan->ntests == PLAN_MAX_TESTS) {
			options_why(why, whylen, "more than %d tests named", PLAN_MAX_TESTS);
			return -EINVAL;
		}
		pt = &plan->tests[plan->ntests++];
		pt->def = t;
		pt->first = plan->nparts;
		pt->nparts = 0;
		pt->partial = only != NULL;
		pt->may_create = true;
	}
	for (size_t i = 0; i < ndefs; i++) {
		const struct part_def *d = &defs[i];
		if (strcmp(d->test, t->name) != 0 || (only && d != only))
			continue;
		if (plan->nparts == PLAN_MAX_PARTS) {
			options_why(why, whylen, "more than %d parts named", PLAN_MAX_PARTS);
			return -EINVAL;
		}
		struct plan_part *pp = &plan->parts[plan->nparts++];
		pp->def = d;
		pp->ops = bench_find(d->kind);
		if (!pp->ops) {
			options_why(why, whylen, "part %s: unknown kind '%s'", d->name, d->kind);
			return -EINVAL;
		}
		pp->p = d->scale[scale];
		pt->nparts++;
	}
	if (!pt->nparts) {
		options_why(why, whylen, "test %s has no parts", t->name);
		return -EINVAL;
	}
	pt->file = plan->parts[pt->first].p.file;
	return 0;
}

static bool plan_has_passes(const struct part_def *d)
{
	return d->scale[SCALE_SPEC].passes != 0;
}

static int plan_overrides(const struct options *o, struct plan *plan, char *why, size_t whylen)
{
	bool part_override = o->set_count || o->set_chunk || o->set_passes;

	if (part_override && plan->nparts != 1) {
		options_why(why, whylen,
			    "--count, --chunk and --passes change one part: name a single part "
			    "(like 2b), not %zu parts",
			    plan->nparts);
		return -EINVAL;
	}
	if (o->set_file_size && plan->ntests != 1) {
		options_why(why, whylen,
			    "--file-size changes one test's replica: name a single test");
		return -EINVAL;
	}
	for (size_t i = 0; i < plan->nparts; i++) {
		struct plan_part *pp = &plan->parts[i];
		const char *name = pp->def->name;

		if (o->set_count) {
			if (!pp->p.count) {
				options_why(why, whylen, "--count does not apply to %s", name);
				return -EINVAL;
			}
			pp->p.count = o->count;
		}
		if (o->set_chunk) {
			if (!pp->p.chunk) {
				options_why(why, whylen, "--chunk does not apply to %s", name);
				return -EINVAL;
			}
			pp->p.chunk = o->chunk;
		}
		if (o->set_passes) {
			if (!pp->p.passes) {
				char with[64];
				plan_join_parts(plan_has_passes, with, sizeof(with));
				options_why(why, whylen, "--passes applies to %s, not %s", with,
					    name);
				return -EINVAL;
			}
			pp->p.passes = o->passes;
		}
		if (o->set_file_size) {
			if (!pp->p.file) {
				options_why(why, whylen,
					    "--file-size does not apply to %s (no replica)", name);
				return -EINVAL;
			}
			pp->p.file = o->file_size;
		}
	}
	return 0;
}

/* Replica names, and the parameters that do not fit; chunk_given names --chunk in a reason. */
static int plan_check(struct plan *plan, bool chunk_given, char *why, size_t whylen)
{
	const struct plan_run *r = &plan->run;
	char a[32], b[32];

	for (size_t i = 0; i < plan->ntests; i++) {
		struct plan_test *pt = &plan->tests[i];

		pt->file = plan->parts[pt->first].p.file;
		if (!pt->def->has_replica) {
			pt->replica[0] = '\0';
			continue;
		}
		if (pt->file % PATTERN_BLOCK) {
			options_why(why, whylen,
				    "--file-size %llu bytes of test %s is not a multiple of 4 KiB: "
				    "expected a size in whole 4 KiB blocks, like 4M or 1G",
				    (unsigned long long)pt->file, pt->def->name);
			return -EINVAL;
		}
		if (!pt->replica[0] &&
		    names_replica(pt->replica, sizeof(pt->replica), pt->def->name, pt->file)) {
			options_why(why, whylen, "test %s: its replica's name is too long",
				    pt->def->name);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < plan->nparts; i++) {
		const struct plan_part *pp = &plan->parts[i];

		if (pp->p.file && pp->p.chunk && pp->p.chunk > pp->p.file) {
			options_why(
			    why, whylen,
			    "%s %s of %s is larger than the replica (%s): expected a chunk of "
			    "at most the replica's size",
			    chunk_given ? "--chunk" : "chunk",
			    size_format(pp->p.chunk, a, sizeof(a)), pp->def->name,
			    size_format(pp->p.file, b, sizeof(b)));
			return -EINVAL;
		}
		if (r->verify && pp->p.file && pp->p.chunk && pp->p.chunk % PATTERN_BLOCK) {
			options_why(why, whylen,
				    "%s: --verify needs a chunk that is a multiple of 4 KiB",
				    pp->def->name);
			return -EINVAL;
		}
		/* Verification checks whole blocks as they arrive: every read must end on one. */
		if (r->verify && (pp->ops->caps & BENCH_VERIFY_XFER) && r->xfer % PATTERN_BLOCK) {
			options_why(
			    why, whylen,
			    "--xfer %llu bytes with --verify: expected a multiple of 4 KiB, "
			    "like 64k or 1M",
			    (unsigned long long)r->xfer);
			return -EINVAL;
		}
	}
	return 0;
}

/* A seed for a run that was given none: from the kernel, else from the clock and the pid. */
static uint64_t plan_random_seed(void)
{
	uint64_t s = 0;

	if (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s))
		s = (uint64_t)clock_mono_ns() ^ ((uint64_t)getpid() << 32);
	return s;
}

/* The run settings of o; the defaults of a run when o is NULL. */
static void plan_settings(const struct options *o, struct plan_run *r)
{
	memset(r, 0, sizeof(*r));
	r->repeat = 1;
	r->repetition = 1;
	r->xfer = PLAN_DEFAULT_XFER;
	r->buffer_offset = PLAN_AUTO;
	if (!o)
		return;
	r->buffer_offset = o->buffer_offset;
	r->force = o->force;
	r->repeat = o->repeat;
	r->repetition = o->repetition;
	r->xfer = o->xfer;
	r->seed = o->set_seed ? o->seed : plan_random_seed();
	r->run_id = o->run_id;
	r->verify = o->verify;
	r->fsync = o->fsync;
	r->keep = o->keep;
	r->keep_cache = o->keep_cache;
	r->start_fixed = o->set_start_at;
	r->start_at = o->start_at;
	r->start_in = o->start_in;
	r->late_ok = o->late_ok;
	r->has_interval = o->set_interval;
	r->interval = o->interval;
}

/* Add the tests of `run all`. */
static int plan_add_all(struct plan *plan, enum scale scale, char *why, size_t whylen)
{
	for (size_t k = 0; k < plan_ntests; k++) {
		if (!plan_tests[k].in_all)
			continue;
		int rc = plan_add(plan, &plan_tests[k], NULL, plan_parts, plan_nparts, scale, why,
				  whylen);
		if (rc)
			return rc;
	}
	return 0;
}

/* Add the test or part called name (not "all"). */
static int plan_add_name(struct plan *plan, const char *name, enum scale scale, char *why,
			 size_t whylen)
{
	const struct test_def *t = plan_find_test(name);
	const struct part_def *d = NULL;
	char in[128], out[64];

	if (!t) {
		d = plan_find_part(name);
		if (d)
			t = plan_find_test(d->test);
	}
	if (!t) {
		plan_names(true, in, sizeof(in));
		plan_names(false, out, sizeof(out));
		options_why(why, whylen, "unknown test '%s': expected %s %s", name, in, out);
		return -EINVAL;
	}
	return plan_add(plan, t, d, plan_parts, plan_nparts, scale, why, whylen);
}

/* What was asked: the command, the scale, the names given, what was overridden. */
static void plan_asked(const struct options *o, struct plan *plan)
{
	plan->cmd = o->cmd;
	plan->scale = o->scale;
	for (size_t i = 0; i < o->ntests && i < PLAN_MAX_NAMED; i++)
		plan->named[plan->nnamed++] = o->tests[i];
	plan->overridden[PLAN_OVERRIDE_COUNT] = o->set_count;
	plan->overridden[PLAN_OVERRIDE_CHUNK] = o->set_chunk;
	plan->overridden[PLAN_OVERRIDE_FILE_SIZE] = o->set_file_size;
	plan->overridden[PLAN_OVERRIDE_PASSES] = o->set_passes;
}

int plan_build(const struct options *o, struct plan *plan, char *why, size_t whylen)
{
	enum scale scale = o->scale;
	char names[128];
	int rc = 0;

	memset(plan, 0, sizeof(*plan));
	plan_asked(o, plan);
	plan_settings(o, &plan->run);
	if (o->run_id && !plan_run_id_ok(o->run_id)) {
		options_why(why, whylen,
			    "--run-id '%s' is not valid: expected 1 to %d letters, digits, '.', "
			    "'_' or '-', not starting with '.' or '-', without '..'",
			    o->run_id, PATTERN_RUN_ID_MAX);
		return -EINVAL;
	}
	if (o->ntests == 0) {
		plan_names(true, names, sizeof(names));
		options_why(why, whylen, "name at least one test: %s", names);
		return -EINVAL;
	}
	for (size_t i = 0; i < o->ntests && !rc; i++) {
		if (strcmp(o->tests[i], "all") != 0) {
			rc = plan_add_name(plan, o->tests[i], scale, why, whylen);
			continue;
		}
		if (o->ntests != 1) {
			options_why(why, whylen, "'all' names every test: give it alone");
			return -EINVAL;
		}
		rc = plan_add_all(plan, scale, why, whylen);
	}
	if (rc || (rc = plan_overrides(o, plan, why, whylen)) != 0)
		return rc;
	/* A run never creates test 3's spec-sized replica: it asks for `prepare 3`. */
	for (size_t i = 0; i < plan->ntests; i++) {
		struct plan_test *pt = &plan->tests[i];
		pt->may_create =
		    !(o->cmd == CMD_RUN && pt->def->needs_prepare && scale == SCALE_SPEC);
	}
	return plan_check(plan, o->set_chunk, why, whylen);
}

int plan_build_full(enum scale scale, struct plan *plan, char *why, size_t whylen)
{
	memset(plan, 0, sizeof(*plan));
	plan->scale = scale;
	plan_settings(NULL, &plan->run);
	int rc = plan_add_all(plan, scale, why, whylen);
	return rc ? rc : plan_check(plan, false, why, whylen);
}

int plan_build_test(const struct test_def *t, const struct part_def *parts, size_t nparts,
		    enum scale scale, const char *replica, struct plan *plan, char *why,
		    size_t whylen)
{
	memset(plan, 0, sizeof(*plan));
	plan->cmd = CMD_RUN;
	plan->scale = scale;
	plan_settings(NULL, &plan->run);
	int rc = plan_add(plan, t, NULL, parts, nparts, scale, why, whylen);
	if (rc)
		return rc;
	if (replica)
		snprintf(plan->tests[0].replica, sizeof(plan->tests[0].replica), "%s", replica);
	return plan_check(plan, false, why, whylen);
}

/* Append word to buf (space-separated). */
static void plan_append(char *buf, size_t len, const char *word)
{
	size_t n = strlen(buf);

	snprintf(buf + n, len - n, "%s%s", n ? " " : "", word);
}

void plan_names(bool in_all, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < plan_ntests; i++) {
		const struct test_def *t = &plan_tests[i];

		if (t->in_all != in_all)
			continue;
		plan_append(buf, len, t->name);
		for (size_t k = 0; k < plan_nparts; k++) {
			const struct part_def *d = &plan_parts[k];
			if (strcmp(d->test, t->name) == 0 && strcmp(d->name, t->name) != 0)
				plan_append(buf, len, d->name);
		}
	}
	if (in_all)
		plan_append(buf, len, "all");
}

/* names[0..n-1] as "a, b and c". */
static void plan_join(const char *const *names, size_t n, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t used = strlen(buf);
		const char *sep = i == 0 ? "" : i + 1 == n ? " and " : ", ";
		snprintf(buf + used, len - used, "%s%s", sep, names[i]);
	}
}

void plan_join_tests(bool (*pick)(const struct test_def *t), char *buf, size_t len)
{
	const char *names[PLAN_MAX_PARTS + 8];
	size_t n = 0;

	for (size_t i = 0; i < plan_ntests && n < sizeof(names) / sizeof(names[0]); i++) {
		if (pick(&plan_tests[i]))
			names[n++] = plan_tests[i].name;
	}
	plan_join(names, n, buf, len);
}

void plan_join_parts(bool (*pick)(const struct part_def *d), char *buf, size_t len)
{
	const char *names[PLAN_MAX_PARTS + 8];
	size_t n = 0;

	for (size_t i = 0; i < plan_nparts && n < sizeof(names) / sizeof(names[0]); i++) {
		if (pick(&plan_parts[i]))
			names[n++] = plan_parts[i].name;
	}
	plan_join(names, n, buf, len);
}
