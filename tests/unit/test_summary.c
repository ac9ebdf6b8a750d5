/* SPDX-License-Identifier: MIT */
/*
 * Unit test of the summary writers on a synthetic result (one test of two parts, two
 * threads, one error): the JSON's fields in their order and values, the CSV's rows, the
 * text's lines, and the atomic write of --out (no replacing without force).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "driver/options.h"
#include "driver/plan.h"
#include "driver/summary.h"
#include "driver/summary_file.h"

#define NTHREADS 2

static struct options opts;
static struct plan plan;
static struct node_result res;
static struct thread_result threads[2][NTHREADS];
static struct hist hists[2];

static void test_summary_build(void)
{
	char *argv[] = {"stagebench", "run", "2a", "2b", "--scale", "tiny", "--seed", "42", NULL};
	char why[256];

	CHECK(options_parse(8, argv, &opts, why, sizeof(why)) == 0);
	CHECK_MSG(plan_build(&opts, &plan, why, sizeof(why)) == 0, "%s", why);
	snprintf(res.node, sizeof(res.node), "n01");
	snprintf(res.host, sizeof(res.host), "host01");
	snprintf(res.dir, sizeof(res.dir), "/stage/x");
	snprintf(res.run_tag, sizeof(res.run_tag), "p1");
	snprintf(res.run_id, sizeof(res.run_id), "run7");
	snprintf(res.exe_sha256, sizeof(res.exe_sha256), "%064d", 7);
	res.cores_chosen_by = "threads";
	snprintf(res.ntp.clocksource, sizeof(res.ntp.clocksource), "tsc");
	res.seed = plan.run.seed;
	res.start_at = 1700000000.5;
	res.tplan.nslots = 0;
	res.tplan.machine_cores = 4;
	res.tplan.allowed_cores = 2;
	res.tests = calloc(1, sizeof(*res.tests));
	res.parts = calloc(2, sizeof(*res.parts));
	res.ntests = 1;
	res.nparts = 2;
	res.tests[0] = (struct test_result){.pt = &plan.tests[0], .repetition = 1, .nparts = 2};
	for (size_t k = 0; k < 2; k++) {
		struct part_result *pr = &res.parts[k];
		pr->pp = &plan.parts[k];
		pr->pt = &plan.tests[0];
		pr->repetition = 1;
		pr->node_time_s = 0.5 * (double)(k + 1);
		pr->bytes = 1048576 * (k + 1);
		pr->ops = 256;
		pr->residency = -1;
		pr->start_at = res.start_at;
		hist_init(&hists[k]);
		hist_record(&hists[k], 1000);
		pr->hist = &hists[k];
		pr->threads = threads[k];
		pr->nthreads = NTHREADS;
		for (unsigned i = 0; i < NTHREADS; i++)
			threads[k][i] = (struct thread_result){.index = i, .cpu = i, .ran = true};
		res.tests[0].result_s += pr->node_time_s;
	}
	/* The second part failed in thread 1. */
	res.parts[1].status = PART_FAILED;
	threads[1][1].rc = -EIO;
	threads[1][1].err.errnum = EIO;
	snprintf(threads[1][1].err.op, sizeof(threads[1][1].err.op), "read");
	snprintf(threads[1][1].err.path, sizeof(threads[1][1].err.path), "/stage/x/r");
	res.tests[0].status = PART_FAILED;
	res.outcome = OUTCOME_FAILED;
	res.parts[1].reason = REASON_IO_ERROR;
	snprintf(res.parts[1].error, sizeof(res.parts[1].error),
		 "thread 1: read '/stage/x/r': Input/output error");
	res.error_reasons[res.nerrors] = REASON_IO_ERROR;
	res.errors[res.nerrors++] = strdup("2b thread 1: read '/stage/x/r': Input/output error");
}

/* Each of keys, in this order, after the previous one. */
static void test_summary_in_order(const char *doc, const char *const *keys)
{
	const char *at = doc;

	for (size_t i = 0; keys[i]; i++) {
		const char *k = strstr(at, keys[i]);
		CHECK_MSG(k != NULL, "'%s' missing or out of order", keys[i]);
		if (k)
			at = k + strlen(keys[i]);
	}
}

static char *test_summary_capture(int which)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (which == 0)
		CHECK(summary_json(&res, &plan, f, true) == 0);
	else if (which == 1)
		summary_csv(&res, f);
	else
		summary_text(&res, f);
	fclose(f);
	return buf;
}

/* Whether the summary that test_summary_capture(which) writes holds the text want. */
static bool test_summary_says(int which, const char *want)
{
	char *doc = test_summary_capture(which);
	bool found = doc && strstr(doc, want) != NULL;

	free(doc);
	return found;
}

static void test_summary_json(void)
{
	static const char *const keys[] = {
	    "\"schema\": \"stagebench.node/3\"",
	    "\"node\": \"n01\"",
	    "\"host\": \"host01\"",
	    "\"build\": {",
	    "\"source_sha256\": \"",
	    "\"exe_sha256\": \"0000000000000000000000000000000000000000000000000000000000000007\"",
	    "\"dir\": \"/stage/x\"",
	    "\"fs\": {",
	    "\"clock\": {",
	    "\"clocksource\": \"tsc\"",
	    "\"run\": {",
	    "\"command\": \"run\"",
	    "\"tests\": [",
	    "\"2a\"",
	    "\"2b\"",
	    "\"scale\": \"tiny\"",
	    "\"seed\": 42",
	    "\"run_tag\": \"p1\",\n    \"run_id\": \"run7\"",
	    "\"threads\": [",
	    "\"cores\": {\n    \"online\": 4,\n    \"allowed\": 2,\n    \"used\": 0,\n    "
	    "\"chosen_by\": \"threads\"\n  }",
	    "\"tests\": [",
	    "\"test\": \"2\"",
	    "\"title\": \"read_from_ioserver_cache\"",
	    "\"result_s\": 1.5",
	    "\"status\": \"failed\"",
	    "\"parts\": [",
	    "\"part\": \"2a\"",
	    "\"kind\": \"randread\"",
	    "\"counted\": \"bytes read\"",
	    "\"rate_unit\": \"B/s\"",
	    "\"count\": 200",
	    "\"threads\": 0",
	    "\"bytes\": 1048576",
	    "\"bandwidth_Bps\": 2097152",
	    "\"latency_hist\": {",
	    "\"cache_residency\": null",
	    "\"replica_origin\": null",
	    "\"status\": \"ok\"",
	    "\"error\": null,\n          \"reason\": null",
	    "\"per_thread\": [",
	    "\"error\": null,\n              \"reason\": null",
	    "\"part\": \"2b\"",
	    "\"status\": \"failed\"",
	    "\"error\": \"thread 1: read '/stage/x/r': Input/output "
	    "error\",\n          \"reason\": \"io_error\"",
	    "\"error\": \"read '/stage/x/r': Input/output error\",\n "
	    "             \"reason\": \"io_error\"",
	    "\"status\": \"failed\"",
	    "\"exit_code\": 1",
	    "\"errors\": [",
	    "\"2b thread 1: read",
	    "\"error_reasons\": [\n    \"io_error\"\n  ]",
	    "\"warnings\": []",
	    NULL};
	char *doc = test_summary_capture(0);

	test_summary_in_order(doc, keys);
	free(doc);
}

static void test_summary_csv_text(void)
{
	char *csv = test_summary_capture(1);
	size_t lines = 0;

	for (const char *p = csv; *p; p++)
		lines += *p == '\n';
	CHECK_U64(lines, 3);
	CHECK(strncmp(csv, "node,test,repetition,part,status,", 33) == 0);
	CHECK(strstr(csv, "\nn01,2,1,2a,ok,0.500000000,") != NULL);
	CHECK(strstr(csv, "\nn01,2,1,2b,failed,1.000000000,") != NULL);
	free(csv);

	char *text = test_summary_capture(2);
	static const char *const lines_in_order[] = {"stagebench ",
						     "node n01",
						     "start: 2023-11-14 22:13:20.500 UTC  seed 42",
						     "2    2a ",
						     "2    2b ",
						     "2    sum    1 failed",
						     "error: 2b thread 1: read",
						     "status: ",
						     NULL};
	test_summary_in_order(text, lines_in_order);
	CHECK(strstr(text, "\nstatus: failed (exit 1)\n") != NULL);
	free(text);

	/* A precondition's text says the JSON's word, "failed", with the exit status and why. */
	res.outcome = OUTCOME_PRECONDITION;
	CHECK(test_summary_says(2, "\nstatus: failed (exit 3: precondition)\n"));
	CHECK(test_summary_says(0, "\"status\": \"failed\",\n  \"exit_code\": 3"));
	res.outcome = OUTCOME_INTERRUPTED_TERM;
	CHECK(test_summary_says(2, "\nstatus: interrupted (exit 143)\n"));
	res.outcome = OUTCOME_FAILED;
}

/* --out: written whole, never over an existing file without force. */
static void test_summary_file(void)
{
	char dir[] = "/tmp/stagebench-test-summary-XXXXXX", path[128], why[256];
	struct stat st;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/n01.json", dir);
	CHECK(summary_file_check_out(path, false, why, sizeof(why)) == 0);
	CHECK(summary_file_write(&res, &plan, path, false) == 0);
	CHECK(stat(path, &st) == 0 && st.st_size > 1000);
	CHECK(summary_file_check_out(path, false, why, sizeof(why)) == -EEXIST);
	CHECK(strstr(why, "exists: not replacing it") != NULL);
	CHECK(summary_file_write(&res, &plan, path, false) == -EEXIST);
	CHECK(summary_file_write(&res, &plan, path, true) == 0);
	CHECK(unlink(path) == 0);
	CHECK(rmdir(dir) == 0); /* no temporary file was left behind */
}

int main(void)
{
	test_summary_build();
	test_summary_json();
	test_summary_csv_text();
	test_summary_file();
	free(res.tests);
	free(res.parts);
	free(res.errors[0]);
	return check_done();
}
