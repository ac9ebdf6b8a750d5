/* SPDX-License-Identifier: MIT */
/*
 * The plan: which parts run in which order with which parameters, and what is refused.
 * What depends on the catalogue (the parts of `run all`, the names help quotes) is read from
 * it, so that a test added to the catalogue needs no change here; the spec's own numbers are
 * looked up by name.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "driver/options.h"
#include "driver/plan.h"
#include "workers/registry.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

#define CASE_ARGS 10

struct plan_case {
	const char *args[CASE_ARGS];
	const char *parts; /* expected parts, space-separated (ALL_PARTS: `run all`'s); NULL:
			      rejected */
	const char *why;   /* rejected: a substring of the reason */
};

/* The parts of `run all`, from the catalogue (test_cases reads it for this word). */
#define ALL_PARTS "<all>"

/* Parse args (NULL-terminated, at most MAX_ARGS) as the command line and build its plan. */
#define MAX_ARGS 16
static int build(const char *const *args, struct plan *p, char *why, size_t len)
{
	char *argv[MAX_ARGS + 2];
	int argc = 0;
	struct options o;

	argv[argc++] = (char *)"stagebench";
	for (size_t i = 0; args[i]; i++) {
		if (i == MAX_ARGS) {
			snprintf(why, len, "more than %d arguments", MAX_ARGS);
			return -1;
		}
		argv[argc++] = (char *)args[i];
	}
	argv[argc] = NULL;
	if (options_parse(argc, argv, &o, why, len))
		return -1;
	return plan_build(&o, p, why, len);
}

static const struct plan_case cases[] = {
    {{"run", "all", NULL}, ALL_PARTS, NULL},
    {{"run", "2", NULL}, "2a 2b 2c", NULL},
    {{"run", "4", "1a", NULL}, "4a 4b 4c 1a", NULL},
    {{"run", "2b", NULL}, "2b", NULL},
    {{"run", "2a", "2c", NULL}, "2a 2c", NULL},
    {{"run", "3b", "3a", NULL}, "3b 3a", NULL},
    {{"run", NULL}, NULL, "name at least one test"},
    {{"run", "all", "1a", NULL}, NULL, "give it alone"},
    {{"run", "1a", "1a", NULL}, NULL, "more than once"},
    {{"run", "2", "2b", NULL}, NULL, "more than once"},
    {{"run", "2b", "2b", NULL}, NULL, "more than once"},
    {{"run", "nosuch", NULL}, NULL, "unknown test 'nosuch'"},
    {{"run", "2", "--count", "3", NULL}, NULL, "name a single part"},
    {{"run", "1a", "--count", "3", NULL}, NULL, "--count does not apply to 1a"},
    {{"run", "4a", "--passes", "3", NULL}, NULL, "--passes applies to 1a"},
    {{"run", "4a", "--file-size", "8M", NULL}, NULL, "--file-size does not apply"},
    {{"run", "1a", "1b", "--file-size", "8M", NULL}, NULL, "name a single test"},
    {{"run", "2b", "--chunk", "8G", NULL}, NULL, "larger than the replica"},
    {{"run", "1a", "--file-size", "4097", NULL}, NULL, "not a multiple of 4 KiB"},
    {{"run", "2a", "--chunk", "1000", "--verify", NULL}, NULL, "--verify needs a chunk"},
    {{"run", "2a", "--chunk", "1000", NULL}, "2a", NULL},
};

/* Append word to buf (space-separated), never past len. */
static void append(char *buf, size_t len, const char *word)
{
	size_t n = strlen(buf);

	if (n < len)
		snprintf(buf + n, len - n, "%s%s", n ? " " : "", word);
}

/* The parts of the tests of `run all`, in the catalogue's order. */
static void all_parts(char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t t = 0; t < plan_ntests; t++) {
		for (size_t k = 0; plan_tests[t].in_all && k < plan_nparts; k++) {
			if (strcmp(plan_parts[k].test, plan_tests[t].name) == 0)
				append(buf, len, plan_parts[k].name);
		}
	}
}

static void test_cases(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct plan p;
		char why[512] = "", got[512] = "", want[512];
		int rc = build(cases[i].args, &p, why, sizeof(why));

		if (!cases[i].parts) {
			CHECK_MSG(rc != 0, "case %zu should be refused", i);
			CHECK_MSG(strstr(why, cases[i].why) != NULL, "case %zu: '%s' lacks '%s'", i,
				  why, cases[i].why);
			continue;
		}
		CHECK_MSG(rc == 0, "case %zu: %s", i, why);
		if (rc)
			continue;
		snprintf(want, sizeof(want), "%s", cases[i].parts);
		if (strcmp(cases[i].parts, ALL_PARTS) == 0)
			all_parts(want, sizeof(want));
		for (size_t k = 0; k < p.nparts; k++)
			append(got, sizeof(got), p.parts[k].def->name);
		CHECK_MSG(strcmp(got, want) == 0, "case %zu: '%s' != '%s'", i, got, want);
	}
}

/* The test of the plan called name, or NULL. */
static const struct plan_test *plan_test_named(const struct plan *p, const char *name)
{
	for (size_t i = 0; i < p->ntests; i++) {
		if (strcmp(p->tests[i].def->name, name) == 0)
			return &p->tests[i];
	}
	return NULL;
}

/* How many of the catalogue's tests (parts: their parts) are in `run all`. */
static size_t count_in_all(bool parts)
{
	size_t n = 0;

	for (size_t t = 0; t < plan_ntests; t++) {
		if (!plan_tests[t].in_all)
			continue;
		if (!parts) {
			n++;
			continue;
		}
		for (size_t k = 0; k < plan_nparts; k++)
			n += strcmp(plan_parts[k].test, plan_tests[t].name) == 0;
	}
	return n;
}

/*
 * The spec's numbers, part by part, looked up by name in the plan of `run all` (a part that is
 * not the spec's is not judged here; every one of the spec's must be there).
 */
static void test_parameters(void)
{
	struct plan p;
	char why[512];

	REQUIRE(build((const char *const[]){"run", "all", NULL}, &p, why, sizeof(why)) == 0);
	CHECK_U64(p.ntests, count_in_all(false));
	CHECK_U64(p.nparts, count_in_all(true));
	static const struct {
		const char *part;
		uint64_t count, chunk, file, passes;
	} spec[] = {
	    {"1a", 0, 0, 150 * MiB, 64},
	    {"1b", 0, 0, 750 * MiB, 16},
	    {"2a", 18000, 4 * KiB, 4 * GiB, 0},
	    {"2b", 150, MiB, 4 * GiB, 0},
	    {"2c", 1, 128 * MiB, 4 * GiB, 0},
	    {"3a", 80, MiB, 512 * GiB, 0},
	    {"3b", 1, 96 * MiB, 512 * GiB, 0},
	    {"4a", 1200, 4 * KiB, 0, 0},
	    {"4b", 60, MiB, 0, 0},
	    {"4c", 1, 64 * MiB, 0, 0},
	};
	for (size_t s = 0; s < sizeof(spec) / sizeof(spec[0]); s++) {
		const struct plan_part *pp = NULL;
		for (size_t i = 0; i < p.nparts && !pp; i++)
			pp = strcmp(p.parts[i].def->name, spec[s].part) == 0 ? &p.parts[i] : NULL;
		CHECK_MSG(pp != NULL, "part %s is not in run all", spec[s].part);
		if (!pp)
			continue;
		CHECK_U64(pp->p.count, spec[s].count);
		CHECK_U64(pp->p.chunk, spec[s].chunk);
		CHECK_U64(pp->p.file, spec[s].file);
		CHECK_U64(pp->p.passes, spec[s].passes);
	}
	static const struct {
		const char *test, *replica;
		bool recreate, needs_prepare;
	} tests[] = {
	    {"1a", "stagebench.1a.150MiB", true, false},
	    {"1b", "stagebench.1b.750MiB", true, false},
	    {"2", "stagebench.2.4GiB", true, false},
	    {"3", "stagebench.3.512GiB", false, true},
	    {"4", "", false, false},
	};
	for (size_t t = 0; t < sizeof(tests) / sizeof(tests[0]); t++) {
		const struct plan_test *pt = plan_test_named(&p, tests[t].test);
		CHECK_MSG(pt != NULL, "test %s is not in run all", tests[t].test);
		if (!pt)
			continue;
		CHECK_STR(pt->replica, tests[t].replica);
		CHECK(pt->def->recreate == tests[t].recreate);
		CHECK(pt->def->needs_prepare == tests[t].needs_prepare);
	}

	/* every tiny file is at most 8 MiB; overrides reach the one part */
	CHECK(build((const char *const[]){"run", "all", "--scale", "tiny", NULL}, &p, why,
		    sizeof(why)) == 0);
	for (size_t i = 0; i < p.nparts; i++)
		CHECK(p.parts[i].p.file <= 8 * MiB && p.parts[i].p.chunk <= 8 * MiB);
	REQUIRE(build((const char *const[]){"run", "2b", "--count", "7", "--chunk", "2M", NULL}, &p,
		      why, sizeof(why)) == 0);
	REQUIRE(p.nparts == 1);
	CHECK_U64(p.parts[0].p.count, 7);
	CHECK_U64(p.parts[0].p.chunk, 2 * MiB);
	REQUIRE(build((const char *const[]){"run", "2", "--file-size", "256M", NULL}, &p, why,
		      sizeof(why)) == 0);
	for (size_t i = 0; i < p.nparts; i++)
		CHECK_U64(p.parts[i].p.file, 256 * MiB);
	REQUIRE(p.ntests == 1);
	CHECK_STR(p.tests[0].replica, "stagebench.2.256MiB");
}

/*
 * Every test and part of the catalogue builds, alone and at every scale: each part's kind is
 * registered (resolved at plan time), its parameters fit, and the kind's flags agree with
 * what the test says about its replica.
 */
static void test_catalogue(void)
{
	const char *const *scales = enums_scales;
	char why[512];
	struct plan p;

	for (size_t sc = 0; scales[sc]; sc++) {
		for (size_t i = 0; i < plan_ntests + plan_nparts; i++) {
			const char *name =
			    i < plan_ntests ? plan_tests[i].name : plan_parts[i - plan_ntests].name;
			int rc =
			    build((const char *const[]){"run", name, "--scale", scales[sc], NULL},
				  &p, why, sizeof(why));
			CHECK_MSG(rc == 0, "%s at %s: %s", name, scales[sc], why);
			for (size_t k = 0; rc == 0 && k < p.nparts; k++) {
				const struct plan_part *pp = &p.parts[k];
				CHECK_MSG(pp->ops != NULL, "%s: kind %s", pp->def->name,
					  pp->def->kind);
				if (!pp->ops)
					continue;
				bool reads = pp->ops->caps & BENCH_READS_REPLICA;
				CHECK_MSG(pp->ops && strcmp(pp->ops->name, pp->def->kind) == 0,
					  "%s: kind %s", pp->def->name, pp->def->kind);
				CHECK_MSG(reads == p.tests[0].def->has_replica,
					  "%s: kind %s reads a replica: %d, test has one: %d",
					  pp->def->name, pp->def->kind, reads,
					  p.tests[0].def->has_replica);
			}
		}
	}
	/* Every registered kind is used by the catalogue, and its flags agree with each other. */
	for (size_t i = 0; bench_all[i]; i++) {
		const struct bench_ops *ops = bench_all[i];
		bool used = false;
		for (size_t k = 0; k < plan_nparts; k++)
			used = used || strcmp(plan_parts[k].kind, ops->name) == 0;
		CHECK_MSG(used, "kind %s is in no part of the catalogue", ops->name);
		if (ops->caps & (BENCH_MAPS_REPLICA | BENCH_VERIFY_XFER))
			CHECK_MSG(ops->caps & BENCH_READS_REPLICA, "kind %s", ops->name);
	}
	/* Each part belongs to a test of the catalogue. */
	for (size_t i = 0; i < plan_nparts; i++) {
		bool found = false;
		for (size_t t = 0; t < plan_ntests; t++)
			found = found || strcmp(plan_tests[t].name, plan_parts[i].test) == 0;
		CHECK_MSG(found, "part %s: no test %s", plan_parts[i].name, plan_parts[i].test);
	}
}

static bool test_recreated(const struct test_def *t)
{
	return t->recreate;
}

static bool test_mapped(const struct part_def *d)
{
	const struct bench_ops *ops = bench_find(d->kind);

	return ops && (ops->caps & BENCH_MAPS_REPLICA);
}

/* The names a command takes, as plan_names says them: each test, then its parts. */
static void expected_names(bool in_all, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t t = 0; t < plan_ntests; t++) {
		if (plan_tests[t].in_all != in_all)
			continue;
		append(buf, len, plan_tests[t].name);
		for (size_t k = 0; k < plan_nparts; k++) {
			if (strcmp(plan_parts[k].test, plan_tests[t].name) == 0 &&
			    strcmp(plan_parts[k].name, plan_tests[t].name) != 0)
				append(buf, len, plan_parts[k].name);
		}
	}
	if (in_all)
		append(buf, len, "all");
}

/* "a", "a and b", "a, b and c" of the tests of the catalogue that pick says yes to. */
static void expected_join(bool (*pick)(const struct test_def *t), char *buf, size_t len)
{
	size_t n = 0, k = 0;

	for (size_t t = 0; t < plan_ntests; t++)
		n += pick(&plan_tests[t]);
	buf[0] = '\0';
	for (size_t t = 0; t < plan_ntests; t++) {
		if (!pick(&plan_tests[t]))
			continue;
		size_t used = strlen(buf);
		snprintf(buf + used, len - used, "%s%s",
			 k == 0	      ? ""
			 : k + 1 == n ? " and "
				      : ", ",
			 plan_tests[t].name);
		k++;
	}
}

/* The names help and errors quote come from the catalogue; the rule on test 3's replica. */
static void test_names_and_rules(void)
{
	char names[256], want[256], why[512];
	struct plan p;

	plan_names(true, names, sizeof(names));
	expected_names(true, want, sizeof(want));
	CHECK_STR(names, want);
	/* the spec's, in order, are among them */
	CHECK(strncmp(names, "1a 1b 2 2a 2b 2c 3 3a 3b 4 4a 4b 4c", 34) == 0);
	plan_names(false, names, sizeof(names));
	expected_names(false, want, sizeof(want));
	CHECK_STR(names, want);
	CHECK(strstr(names, "null") != NULL);
	plan_join_tests(test_recreated, names, sizeof(names));
	expected_join(test_recreated, want, sizeof(want));
	CHECK_STR(names, want);
	CHECK(strncmp(names, "1a, 1b", 6) == 0);
	plan_join_parts(test_mapped, names, sizeof(names));
	CHECK(strncmp(names, "1b", 2) == 0);

	/* A run at spec scale never creates test 3's replica; prepare does; other scales may. */
	REQUIRE(build((const char *const[]){"run", "2", "3", NULL}, &p, why, sizeof(why)) == 0);
	REQUIRE(p.ntests == 2);
	CHECK(p.tests[0].may_create && !p.tests[1].may_create);
	REQUIRE(build((const char *const[]){"prepare", "3", NULL}, &p, why, sizeof(why)) == 0);
	CHECK(p.tests[0].may_create);
	REQUIRE(build((const char *const[]){"run", "3", "--scale", "small", NULL}, &p, why,
		      sizeof(why)) == 0);
	CHECK(p.tests[0].may_create);
	REQUIRE(plan_build_full(SCALE_SPEC, &p, why, sizeof(why)) == 0);
	CHECK_U64(p.nparts, count_in_all(true));
	for (size_t i = 0; i < p.ntests; i++)
		CHECK(p.tests[i].may_create);

	/* The run settings are the options', decided once. */
	REQUIRE(build((const char *const[]){"run", "2a", "--repeat", "3", "--xfer", "64k", "--seed",
					    "7", "--interval", "2.5", "--verify", NULL},
		      &p, why, sizeof(why)) == 0);
	CHECK_U64(p.run.repeat, 3);
	CHECK_U64(p.run.xfer, 64 * KiB);
	CHECK_U64(p.run.seed, 7);
	CHECK(p.run.has_interval && p.run.interval == 2.5 && p.run.verify && !p.run.start_fixed);

	/* --xfer with --verify must be whole blocks, but not where pages are mapped. */
	CHECK(build((const char *const[]){"run", "1a", "--xfer", "5000", "--verify", NULL}, &p, why,
		    sizeof(why)) != 0);
	CHECK(strstr(why, "--xfer 5000 bytes with --verify") != NULL);
	CHECK(build((const char *const[]){"run", "1b", "--xfer", "5000", "--verify", NULL}, &p, why,
		    sizeof(why)) == 0);
}

/*
 * The tier the spec expects to serve each of its parts (SPEC.txt B.1-B.5: 1a and 1b the
 * node's cache, 2 the server's cache, 3 its disk, 4 none), looked up by name: a part that is
 * not the spec's is not judged here. A test's server drop goes with parts served from the
 * server's disk.
 */
static void test_tiers(void)
{
	static const struct {
		const char *part, *tier;
	} spec[] = {
	    {"1a", "node_cache"},   {"1b", "node_cache"},   {"2a", "server_cache"},
	    {"2b", "server_cache"}, {"2c", "server_cache"}, {"3a", "server_disk"},
	    {"3b", "server_disk"},  {"4a", NULL},	    {"4b", NULL},
	    {"4c", NULL},
	};
	size_t judged = 0;

	for (size_t i = 0; i < plan_nparts; i++) {
		const struct part_def *d = &plan_parts[i];
		const char *got = plan_tier_name(d->tier);

		for (size_t k = 0; k < sizeof(spec) / sizeof(spec[0]); k++) {
			if (strcmp(spec[k].part, d->name) != 0)
				continue;
			judged++;
			CHECK_MSG(got == spec[k].tier ||
				      (got && spec[k].tier && strcmp(got, spec[k].tier) == 0),
				  "part %s: tier %s, the spec says %s", d->name, got ? got : "null",
				  spec[k].tier ? spec[k].tier : "null");
		}
	}
	CHECK_U64(judged, sizeof(spec) / sizeof(spec[0]));
	for (size_t t = 0; t < plan_ntests; t++) {
		bool disk = false;
		for (size_t i = 0; i < plan_nparts; i++)
			disk = disk || (strcmp(plan_parts[i].test, plan_tests[t].name) == 0 &&
					plan_parts[i].tier == PLAN_TIER_SERVER_DISK);
		CHECK_MSG(plan_tests[t].server_drop == disk, "test %s: server_drop %d",
			  plan_tests[t].name, plan_tests[t].server_drop);
	}
	CHECK(plan_tier_name(PLAN_TIER_NONE) == NULL);
	CHECK_STR(plan_tier_name(PLAN_TIER_NODE_CACHE), "node_cache");
	CHECK_STR(plan_tier_name(PLAN_TIER_SERVER_CACHE), "server_cache");
	CHECK_STR(plan_tier_name(PLAN_TIER_SERVER_DISK), "server_disk");
	CHECK(plan_tier_name(PLAN_TIER_COUNT) == NULL);
}

/* A test outside the catalogue whose kind is not registered is refused when planned. */
static void test_unknown_kind(void)
{
	static const struct test_def t = {.name = "x", .title = "x_test"};
	static const struct part_def parts[] = {
	    {"xa",
	     "x",
	     "nosuchkind",
	     PLAN_TIER_NONE,
	     "nothing",
	     {{1, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}}},
	};
	char why[512] = "";
	struct plan p;

	CHECK(plan_build_test(&t, parts, 1, SCALE_TINY, NULL, &p, why, sizeof(why)) == -EINVAL);
	CHECK_MSG(strstr(why, "unknown kind 'nosuchkind'") != NULL, "%s", why);
}

int main(void)
{
	test_cases();
	test_parameters();
	test_catalogue();
	test_names_and_rules();
	test_unknown_kind();
	test_tiers();
	return check_done();
}
