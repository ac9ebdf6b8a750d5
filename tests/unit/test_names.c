/* SPDX-License-Identifier: MIT */
/*
 * The names stagebench creates: every form built by its builder and parsed back to its fields,
 * the older token-less forms, the look-alikes that are none of them, and names too long.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "util/names.h"

#define TOK  "0123456789ab"
#define KiB_ 1024ull
#define MiB_ (1024ull * KiB_)
#define GiB_ (1024ull * MiB_)

/* A name and what names_parse must find in it (fields not named are 0 or ""). */
struct parse_case {
	const char *name;
	enum names_kind kind;
	const char *head;
	bool exact, tmp;
	uint64_t bytes;
	const char *host;
	uint64_t pid;
	const char *token; /* NULL: has none */
	uint64_t rep, thread, seq;
};

/* clang-format off */
static const struct parse_case parse_cases[] = {
    /* replicas: the size as written, whatever the scale */
    {"stagebench.2.4GiB", NAMES_REPLICA, "2", true, false, 4 * GiB_, "", 0, NULL, 0, 0, 0},
    {"stagebench.3.1536MiB", NAMES_REPLICA, "3", true, false, 1536 * MiB_, "", 0, NULL, 0, 0, 0},
    {"stagebench.1a.4MiB", NAMES_REPLICA, "1a", true, false, 4 * MiB_, "", 0, NULL, 0, 0, 0},
    {"stagebench.3.512GiB", NAMES_REPLICA, "3", true, false, 512 * GiB_, "", 0, NULL, 0, 0, 0},
    {"stagebench.x.1000B", NAMES_REPLICA, "x", true, false, 1000, "", 0, NULL, 0, 0, 0},
    /* in a replica's place, not a size: a replica's name, not one stagebench makes */
    {"stagebench.1a.junk", NAMES_REPLICA, "1a", false, false, 0, "", 0, NULL, 0, 0, 0},
    {"stagebench.2.99999999999999999999EiB", NAMES_REPLICA, "2", false, false, 0, "", 0, NULL,
     0, 0, 0},
    /* temporaries of replicas, with and without the token */
    {"stagebench.2.8MiB.tmp.n1.123." TOK, NAMES_TEMP, "2", true, true, 8 * MiB_, "n1", 123,
     TOK, 0, 0, 0},
    {"stagebench.2.8MiB.tmp.node.example.org.42." TOK, NAMES_TEMP, "2", true, true, 8 * MiB_,
     "node.example.org", 42, TOK, 0, 0, 0},
    {"stagebench.2.8MiB.tmp.n1.123", NAMES_TEMP, "2", true, true, 8 * MiB_, "n1", 123, NULL, 0,
     0, 0},
    {"stagebench.1b.750MiB.tmp.a-b_c.7", NAMES_TEMP, "1b", true, true, 750 * MiB_, "a-b_c", 7,
     NULL, 0, 0, 0},
    /* a kind's files, with and without the token; node names with dots and dashes */
    {"stagebench.4a.n1.p7-" TOK "-r1.t0.000001", NAMES_FILE, "4a", true, false, 0, "n1", 7, TOK,
     1, 0, 1},
    {"stagebench.4c.n-1.x.p7-r2.t63.1234567", NAMES_FILE, "4c", true, false, 0, "n-1.x", 7, NULL,
     2, 63, 1234567},
    {"stagebench.5a.c01.p4194303-" TOK "-r1000000.t4095.18446744073709551615", NAMES_FILE, "5a",
     true, false, 0, "c01", 4194303, TOK, 1000000, 4095, UINT64_MAX},
    /* check's files */
    {"stagebench.create.n1.p9-" TOK "-r3.t1.000000", NAMES_PROBE_FILE, "create", true, false, 0,
     "n1", 9, TOK, 3, 1, 0},
    {"stagebench.check.probe.9." TOK, NAMES_PROBE, "check", true, false, 0, "", 9, TOK, 0, 0, 0},
    {"stagebench.check.probe.9." TOK ".tmp.n1.10." TOK, NAMES_PROBE_TEMP, "check", true, true, 0,
     "n1", 10, TOK, 0, 0, 0},
    {"stagebench.check-write.123." TOK, NAMES_WRITE_PROBE, "check-write", true, false, 0, "",
     123, TOK, 0, 0, 0},
    /* an armed run's state directory, and the temporary of --out */
    {"state", NAMES_STATE_FILE, "", true, false, 0, "", 0, NULL, 0, 0, 0},
    {"log", NAMES_STATE_LOG, "", true, false, 0, "", 0, NULL, 0, 0, 0},
    {"summary.json", NAMES_STATE_SUM, "", true, false, 0, "", 0, NULL, 0, 0, 0},
    {"state.tmp.77", NAMES_STATE_TEMP, "", true, false, 0, "", 77, NULL, 0, 0, 0},
    {"lease", NAMES_LEASE_FILE, "", true, false, 0, "", 0, NULL, 0, 0, 0},
    {"lease.tmp.78", NAMES_LEASE_TEMP, "", true, false, 0, "", 78, NULL, 0, 0, 0},
    {"lease.tmp.x", NAMES_NONE, "", false, false, 0, "", 0, NULL, 0, 0, 0},
    {"lease.tmp.", NAMES_NONE, "", false, false, 0, "", 0, NULL, 0, 0, 0},
    {"/res/n1.json.tmp.77." TOK, NAMES_OUT_TEMP, "", true, false, 0, "", 77, TOK, 0, 0, 0},
    /* look-alikes: none, but the head and ".tmp." are said */
    {"stagebench.check.probe.9." TOK "x", NAMES_NONE, "check", false, false, 0, "", 0, NULL, 0,
     0, 0},
    {"stagebench.check.probe.9." TOK ".tmp.n1.10", NAMES_NONE, "check", false, true, 0, "", 0,
     NULL, 0, 0, 0},
    {"stagebench.4a.n1.p7-" TOK "-r1.t0.00001", NAMES_NONE, "4a", false, false, 0, "", 0, NULL,
     0, 0, 0},
    {"stagebench.2.8MiB.tmp.n1.x.y", NAMES_NONE, "2", false, true, 0, "", 0, NULL, 0, 0, 0},
    {"stagebench.2.8MiB.tmp..123." TOK, NAMES_NONE, "2", false, true, 0, "", 0, NULL, 0, 0, 0},
    {"stagebench.2.8XiB.tmp.n1.123." TOK, NAMES_NONE, "2", false, true, 0, "", 0, NULL, 0, 0, 0},
    {"stagebench.4a..p7-r1.t0.000001", NAMES_NONE, "4a", false, false, 0, "", 0, NULL, 0, 0, 0},
    {"stagebench.4a.-n.p7-r1.t0.000001", NAMES_NONE, "4a", false, false, 0, "", 0, NULL, 0, 0, 0},
    {"stagebench.4A.n1.p7-r1.t0.000001", NAMES_NONE, "4A", false, false, 0, "", 0, NULL, 0, 0, 0},
    {"stagebench.4a.n1.p7-r1.t0.000001x", NAMES_NONE, "4a", false, false, 0, "", 0, NULL, 0, 0,
     0},
    {"stagebench.2.4GiB.extra", NAMES_NONE, "2", false, false, 0, "", 0, NULL, 0, 0, 0},
    {"stagebench.check-write.123.0123456789AB", NAMES_NONE, "check-write", false, false, 0, "",
     0, NULL, 0, 0, 0},
    {"stagebench.check-write.12345678901." TOK, NAMES_NONE, "check-write", false, false, 0, "",
     0, NULL, 0, 0, 0},
    {"stagebench.2", NAMES_NONE, "2", false, false, 0, "", 0, NULL, 0, 0, 0},
    {"stagebench.2.", NAMES_NONE, "2", false, false, 0, "", 0, NULL, 0, 0, 0},
    {"stagebench.", NAMES_NONE, "", false, false, 0, "", 0, NULL, 0, 0, 0},
    {"stagebench.averyveryverylongpart.n1.p7-r1.t0.000001", NAMES_NONE, "", false, false, 0, "",
     0, NULL, 0, 0, 0},
    {"notes.txt", NAMES_NONE, "", false, false, 0, "", 0, NULL, 0, 0, 0},
    {"state.tmp.x", NAMES_NONE, "", false, false, 0, "", 0, NULL, 0, 0, 0},
    {"", NAMES_NONE, "", false, false, 0, "", 0, NULL, 0, 0, 0},
};
/* clang-format on */

static void test_parse(void)
{
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *c = &parse_cases[i];
		struct names_fields f;
		enum names_kind k = names_parse(c->name, &f);

		CHECK_MSG(k == c->kind && f.kind == k, "'%s': %s, expected %s", c->name,
			  names_kind_name(k), names_kind_name(c->kind));
		CHECK_MSG(strcmp(f.head, c->head) == 0, "'%s': head '%s'", c->name, f.head);
		CHECK_MSG(f.exact == c->exact && f.tmp == c->tmp, "'%s': exact %d tmp %d", c->name,
			  f.exact, f.tmp);
		CHECK_MSG(f.bytes == c->bytes, "'%s': bytes %llu", c->name,
			  (unsigned long long)f.bytes);
		CHECK_MSG(strcmp(f.host, c->host) == 0, "'%s': host '%s'", c->name, f.host);
		CHECK_MSG(f.pid == c->pid, "'%s': pid %llu", c->name, (unsigned long long)f.pid);
		CHECK_MSG(f.has_token == (c->token != NULL) &&
			      strcmp(f.token, c->token ? c->token : "") == 0,
			  "'%s': token '%s'", c->name, f.token);
		CHECK_MSG(f.rep == c->rep && f.thread == c->thread && f.seq == c->seq,
			  "'%s': rep %llu thread %llu seq %llu", c->name, (unsigned long long)f.rep,
			  (unsigned long long)f.thread, (unsigned long long)f.seq);
	}
}

/* Each builder's name, and its parse: the grammar read back is what was built. */
static void test_build(void)
{
	char buf[256], prefix[128], tag[64], rep[64];
	struct names_fields f;
	size_t used = 0;

	static const struct {
		const char *test;
		uint64_t bytes;
		const char *name;
	} replicas[] = {
	    {"2", 4 * GiB_, "stagebench.2.4GiB"},   {"3", 1536 * MiB_, "stagebench.3.1536MiB"},
	    {"1a", 4 * KiB_, "stagebench.1a.4KiB"}, {"x", 1000, "stagebench.x.1000B"},
	    {"3", 1ull << 50, "stagebench.3.1PiB"}, {"t", 3ull << 60, "stagebench.t.3EiB"},
	    {"t", 4097, "stagebench.t.4097B"},	    {"t", 0, "stagebench.t.0B"},
	};
	for (size_t i = 0; i < sizeof(replicas) / sizeof(replicas[0]); i++) {
		CHECK(names_replica(buf, sizeof(buf), replicas[i].test, replicas[i].bytes) == 0);
		CHECK_STR(buf, replicas[i].name);
		CHECK(names_parse(buf, &f) == NAMES_REPLICA && f.exact);
		CHECK_U64(f.bytes, replicas[i].bytes);
	}

	static const struct {
		const char *host, *name;
	} temps[] = {
	    {"n1", "stagebench.2.8MiB.tmp.n1.42." TOK},
	    {"a/b", "stagebench.2.8MiB.tmp.a_b.42." TOK},
	    {"", "stagebench.2.8MiB.tmp.localhost.42." TOK},
	    {"-x.y", "stagebench.2.8MiB.tmp._x.y.42." TOK},
	};
	for (size_t i = 0; i < sizeof(temps) / sizeof(temps[0]); i++) {
		CHECK(names_temp(buf, sizeof(buf), "stagebench.2.8MiB", temps[i].host, 42, TOK) ==
		      0);
		CHECK_STR(buf, temps[i].name);
		CHECK(names_parse(buf, &f) == NAMES_TEMP && f.pid == 42 && f.has_token);
	}

	CHECK(names_run_tag(tag, sizeof(tag), 7, TOK) == 0);
	CHECK_STR(tag, "p7-" TOK);
	CHECK(names_run_tag_rep(rep, sizeof(rep), tag, 3) == 0);
	CHECK_STR(rep, "p7-" TOK "-r3");
	CHECK(names_file_prefix(prefix, sizeof(prefix), "4a", "n1.x", rep) == 0);
	CHECK_STR(prefix, "stagebench.4a.n1.x.p7-" TOK "-r3");
	CHECK(names_file_thread(buf, sizeof(buf), prefix, 12, &used) == 0);
	CHECK_STR(buf, "stagebench.4a.n1.x.p7-" TOK "-r3.t12.");
	CHECK_U64(used, strlen(buf));
	static const struct {
		uint64_t seq;
		const char *digits;
	} seqs[] = {{0, "000000"},
		    {1, "000001"},
		    {999999, "999999"},
		    {1234567, "1234567"},
		    {UINT64_MAX, "18446744073709551615"}};
	for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
		names_file_seq(buf + used, seqs[i].seq);
		CHECK_STR(buf + used, seqs[i].digits);
		CHECK(names_parse(buf, &f) == NAMES_FILE);
		CHECK(f.seq == seqs[i].seq && f.thread == 12 && f.rep == 3 && f.pid == 7);
		CHECK_STR(f.host, "n1.x");
		CHECK_STR(f.head, "4a");
	}
	CHECK(names_file_prefix(prefix, sizeof(prefix), NAMES_PROBE_PART, "n1", rep) == 0);
	CHECK(names_file_thread(buf, sizeof(buf), prefix, 0, &used) == 0);
	names_file_seq(buf + used, 5);
	CHECK(names_parse(buf, &f) == NAMES_PROBE_FILE);

	CHECK(names_probe(buf, sizeof(buf), 9, TOK) == 0);
	CHECK_STR(buf, "stagebench.check.probe.9." TOK);
	CHECK(names_parse(buf, &f) == NAMES_PROBE);
	CHECK(names_temp(prefix, sizeof(prefix), buf, "n1", 10, TOK) == 0);
	CHECK(names_parse(prefix, &f) == NAMES_PROBE_TEMP && f.pid == 10);
	CHECK(names_write_probe(buf, sizeof(buf), 123, TOK) == 0);
	CHECK_STR(buf, "stagebench.check-write.123." TOK);
	CHECK(names_parse(buf, &f) == NAMES_WRITE_PROBE && f.pid == 123);
	CHECK(names_out_temp(buf, sizeof(buf), "/res/n1.json", 77, TOK) == 0);
	CHECK_STR(buf, "/res/n1.json.tmp.77." TOK);
	CHECK(names_parse(buf, &f) == NAMES_OUT_TEMP && f.pid == 77);
	CHECK(names_state_temp(buf, sizeof(buf), 77) == 0);
	CHECK_STR(buf, "state.tmp.77");
	CHECK(names_parse(buf, &f) == NAMES_STATE_TEMP && f.pid == 77);
	CHECK(names_lease_temp(buf, sizeof(buf), 78) == 0);
	CHECK_STR(buf, "lease.tmp.78");
	CHECK(names_parse(buf, &f) == NAMES_LEASE_TEMP && f.pid == 78);
}

/* A name that does not fit is refused, never cut silently. */
static void test_too_long(void)
{
	char small[16], buf[64];
	size_t used;

	CHECK(names_replica(small, sizeof(small), "2", 4 * GiB_) == -ENAMETOOLONG);
	CHECK(names_temp(small, sizeof(small), "stagebench.2.8MiB", "n1", 1, TOK) == -ENAMETOOLONG);
	CHECK(names_run_tag(small, 8, 7, TOK) == -ENAMETOOLONG);
	CHECK(names_file_prefix(small, sizeof(small), "4a", "n1", "p7-r1") == -ENAMETOOLONG);
	/* room for the longest sequence number is needed after the thread's prefix */
	CHECK(names_file_thread(buf, 48, "stagebench.4a.n1.p7-r1", 0, &used) == 0);
	CHECK(names_file_thread(buf, 48, "stagebench.4a.node01.p7-r1", 0, &used) == -ENAMETOOLONG);
	CHECK(names_probe(small, sizeof(small), 9, TOK) == -ENAMETOOLONG);
	CHECK(names_write_probe(small, sizeof(small), 9, TOK) == -ENAMETOOLONG);
	CHECK(names_out_temp(small, sizeof(small), "/a/b", 9, TOK) == -ENAMETOOLONG);
	CHECK(names_state_temp(small, 8, 1234) == -ENAMETOOLONG);
	CHECK(names_lease_temp(small, 8, 1234) == -ENAMETOOLONG);
}

/* Near misses of the temporaries and files, each part of the grammar in turn. */
static void test_near_misses(void)
{
	static const struct {
		const char *name;
		enum names_kind kind;
	} cases[] = {
	    {"stagebench.1a.150MiB.tmp.node1.123.0123456789ab", NAMES_TEMP},
	    {"stagebench.3.512GiB.tmp.n1.example.org.1.ffffffffffff", NAMES_TEMP},
	    {"stagebench.2.4096B.tmp.h_1-x.4194304.000000000000", NAMES_TEMP},
	    {"stagebench.1a.150MiB.tmp.node1.123", NAMES_TEMP}, /* no token: older */
	    {"stagebench.4a.n1.p123-0123456789ab-r1.t0.000341", NAMES_FILE},
	    {"stagebench.4c.a.b-c.p1-abcdefabcdef-r12.t127.1234567", NAMES_FILE},
	    {"stagebench.4a.n1.p123-r1.t0.000341", NAMES_FILE}, /* no token */
	    {"stagebench.1a.150MiB", NAMES_REPLICA},
	    {"stagebench.1a.150MiB.tmp.node1.123.0123456789aB", NAMES_NONE},
	    {"stagebench.1a.150MiB.tmp.node1.123.0123456789a", NAMES_NONE},
	    {"stagebench.1a.150MiB.tmp.node1.x123.0123456789ab", NAMES_NONE},
	    {"stagebench.1a.150MiB.tmp..123.0123456789ab", NAMES_NONE},
	    {"stagebench.1a.150MiB.tmp.no de.123.0123456789ab", NAMES_NONE},
	    {"stagebench.1a.150XiB.tmp.node1.123.0123456789ab", NAMES_NONE},
	    {"stagebench.1a.MiB.tmp.node1.123.0123456789ab", NAMES_NONE},
	    {"stagebench.1a.150MiB.tmp.node1.123.0123456789ab.bak", NAMES_NONE},
	    {"stagebench.1a.150MiB.tmp.node1", NAMES_NONE},
	    {"xstagebench.1a.150MiB.tmp.node1.123.0123456789ab", NAMES_NONE},
	    {"stagebench.4a.n1.p123-0123456789ab-r1.t0.00341", NAMES_NONE},
	    {"stagebench.4a.n1.p123-0123456789ab-r1.t0.000341x", NAMES_NONE},
	    {"stagebench.4a.n1.p123-0123456789ab-r.t0.000341", NAMES_NONE},
	    {"stagebench.4a.n1.p-0123456789ab-r1.t0.000341", NAMES_NONE},
	    {"stagebench.4a..p123-0123456789ab-r1.t0.000341", NAMES_NONE},
	    {"stagebench.4a.-n1.p123-0123456789ab-r1.t0.000341", NAMES_NONE},
	    {"stagebench.4a.n1.q123-0123456789ab-r1.t0.000341", NAMES_NONE},
	    {"stagebench.4a.n1.p123-0123456789xy-r1.t0.000341", NAMES_NONE},
	    {"stagebench.4a.n1.p123-r1.t0", NAMES_NONE},
	    {"stagebench.4a.n1.p12345678901-r1.t0.000001", NAMES_NONE}, /* an 11-digit pid */
	};
	struct names_fields f;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK_MSG(names_parse(cases[i].name, &f) == cases[i].kind, "'%s': %s",
			  cases[i].name, names_kind_name(f.kind));
}

/* The names of a results directory: each form built and parsed back, and near misses. */
static void test_results(void)
{
	static const struct {
		const char *name;
		enum names_result_kind kind;
		const char *node, *part;
		unsigned rep;
	} cases[] = {
	    {"n1.json", NAMES_RESULT_NODE, "n1", "", 0},
	    {"node.example.org.json", NAMES_RESULT_NODE, "node.example.org", "", 0},
	    {"n1.1a.rep1.json", NAMES_RESULT_PART, "n1", "1a", 1},
	    {"c-01.x.2c.rep1000.json", NAMES_RESULT_PART, "c-01.x", "2c", 1000},
	    {"n1.4a.rep4294967295.json", NAMES_RESULT_PART, "n1", "4a", 4294967295u},
	    /* a part's form is the part's, though "n1.2a.rep3" is a node name too */
	    {"n1.2a.rep3.json", NAMES_RESULT_PART, "n1", "2a", 3},
	    /* not a repetition: the whole is a node's name */
	    {"n1.2a.rep0.json", NAMES_RESULT_NODE, "n1.2a.rep0", "", 0},
	    {"n1.2a.rep01.json", NAMES_RESULT_NODE, "n1.2a.rep01", "", 0},
	    {"n1.2a.rep4294967296.json", NAMES_RESULT_NODE, "n1.2a.rep4294967296", "", 0},
	    {"n1.2A.rep1.json", NAMES_RESULT_NODE, "n1.2A.rep1", "", 0},
	    {"n1.averyveryverylongpart.rep1.json", NAMES_RESULT_NODE,
	     "n1.averyveryverylongpart.rep1", "", 0},
	    {"n1..rep1.json", NAMES_RESULT_NODE, "n1..rep1", "", 0},
	    {"2a.rep1.json", NAMES_RESULT_NODE, "2a.rep1", "", 0},
	    {".2a.rep1.json", NAMES_RESULT_NONE, "", "", 0},
	    {"-n.json", NAMES_RESULT_NONE, "", "", 0},
	    {".json", NAMES_RESULT_NONE, "", "", 0},
	    {"n 1.json", NAMES_RESULT_NONE, "", "", 0},
	    {"n1.json.tmp.7." TOK, NAMES_RESULT_NONE, "", "", 0},
	    {"n1.JSON", NAMES_RESULT_NONE, "", "", 0},
	    {"manifest", NAMES_RESULT_NONE, "", "", 0},
	    {"", NAMES_RESULT_NONE, "", "", 0},
	};
	struct names_result r;
	char buf[128], small[8];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum names_result_kind k = names_result_parse(cases[i].name, &r);
		CHECK_MSG(k == cases[i].kind && r.kind == k, "'%s': kind %d", cases[i].name, k);
		CHECK_MSG(strcmp(r.node, cases[i].node) == 0 &&
			      strcmp(r.part, cases[i].part) == 0 && r.rep == cases[i].rep,
			  "'%s': node '%s' part '%s' rep %u", cases[i].name, r.node, r.part, r.rep);
		if (k == NAMES_RESULT_NODE)
			CHECK(names_result_node(buf, sizeof(buf), r.node) == 0 &&
			      strcmp(buf, cases[i].name) == 0);
		if (k == NAMES_RESULT_PART)
			CHECK(names_result_part(buf, sizeof(buf), r.node, r.part, r.rep) == 0 &&
			      strcmp(buf, cases[i].name) == 0);
	}
	CHECK(names_result_part(buf, sizeof(buf), "n1", "1a", 0) == -EINVAL);
	CHECK(names_result_node(small, sizeof(small), "n1234") == -ENAMETOOLONG);
	CHECK(names_result_part(small, sizeof(small), "n1", "1a", 1) == -ENAMETOOLONG);
}

static void test_kind_names(void)
{
	for (unsigned k = 0; k < NAMES_COUNT; k++)
		CHECK_MSG(strcmp(names_kind_name((enum names_kind)k), "?") != 0, "kind %u", k);
	CHECK_STR(names_kind_name(NAMES_COUNT), "?");
}

int main(void)
{
	test_parse();
	test_build();
	test_too_long();
	test_near_misses();
	test_results();
	test_kind_names();
	return check_done();
}
