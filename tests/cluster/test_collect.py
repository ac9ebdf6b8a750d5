# SPDX-License-Identifier: MIT
"""The collector on summaries written by the real binary, and on damaged copies of them:
every damaged file is named and skipped, never a traceback, and the exit status says so."""
import copy
import csv
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import unittest

import clustertest as ct

NODES = ["n1", "n2", "n3"]


def setUpModule():
    global L, S, BASE, GOOD, FAILED
    from stagebench import common as L
    from stagebench import summaries as S
    BASE = tempfile.mkdtemp(prefix="stagebench-collect-test-")
    try:
        make_summaries()
    except BaseException:
        shutil.rmtree(BASE, True)  # tearDownModule does not run after a failed set-up
        raise


def make_summaries():
    global GOOD, FAILED
    stage = os.path.join(BASE, "stage")
    os.makedirs(stage)
    GOOD = os.path.join(BASE, "good")
    os.makedirs(GOOD)
    cpus = ct.cores()
    # three nodes start together; the lead covers a machine busy with other builds
    res = ct.run_nodes(NODES, ["1a", "2"], GOOD, stage, start_in=3.0, cpus=cpus)
    for n, (path, rc, err) in res.items():
        assert rc == 0, "%s: exit %d: %s" % (n, rc, err)
    # A node whose directory is missing: the binary writes a summary that ran no test.
    FAILED = os.path.join(BASE, "failed")
    os.makedirs(FAILED)
    # a start far enough ahead that even a sanitizer build reaches the --dir check first
    res = ct.run_nodes(["n9"], ["1a"], FAILED, os.path.join(BASE, "nope"), start_in=10)
    assert res["n9"][1] == 3, res


def tearDownModule():
    shutil.rmtree(BASE, True)


def read(path):
    with open(path) as f:
        return f.read()


def collect(*paths, **kw):
    return ct.report_of(paths, **kw)


class Case(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="collect-", dir=BASE)
        self.addCleanup(shutil.rmtree, self.dir, True)

    def copy_good(self):
        for n in NODES:
            shutil.copy(os.path.join(GOOD, n + ".json"), self.dir)
        return self.dir

    def summary(self, node):
        return ct.load(os.path.join(GOOD, node + ".json"))

    def write(self, name, obj_or_text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text))
        return path

    def cli(self, args, python=None):
        return ct.run_script("stagebench-collect", args, python=python)


class Report(Case):
    def test_parts_tests_and_sums(self):
        d = self.copy_good()
        rep = collect(d)
        self.assertEqual(rep["status"], "ok")
        self.assertEqual(rep["exit_code"], 0)
        self.assertEqual(rep["nodes"]["expected"], 3)
        self.assertEqual([p["part"] for p in rep["parts"]], ["1a", "2a", "2b", "2c"])
        summaries = {n: self.summary(n) for n in NODES}
        for p in rep["parts"]:
            self.assertEqual((p["nodes_ok"], p["nodes_failed"], p["nodes_missing"]), (3, 0, 0))
            parts = [part for s in summaries.values() for t in s["tests"]
                     for part in t["parts"] if part["part"] == p["part"]]
            self.assertEqual(len(parts), 3)
            self.assertEqual(p["bytes"], sum(x["bytes"] for x in parts))
            self.assertEqual(p["threads"], sum(len(x["per_thread"]) for x in parts))
            times = sorted(x["node_time_s"] for x in parts)
            # the three nodes share this machine's page cache: one that found the replica in
            # it is "warm", left out of the median and of the slowest (report.py)
            warm = set(p["residency"]["warm_nodes"])
            judged = sorted(x["node_time_s"] for n, s in summaries.items() if n not in warm
                            for t in s["tests"] for x in t["parts"] if x["part"] == p["part"])
            self.assertEqual(p["cluster_time_s"], times[-1])
            self.assertEqual(p["node_time_s"], {"min": times[0],
                                                "median": statistics.median(judged),
                                                "max": times[2]})
            self.assertAlmostEqual(p["bandwidth_Bps"], p["bytes"] / times[-1])
            self.assertEqual(p["slowest"][0]["node_time_s"], judged[-1])
            self.assertAlmostEqual(p["slowest"][0]["deviation"],
                                   judged[-1] / statistics.median(judged) - 1)
            rels = [th["release_at"] for x in parts for th in x["per_thread"]]
            self.assertAlmostEqual(p["start_spread_s"], max(rels) - min(rels), places=9)
            # no launcher manifest and clocks that NTP does not bound: the nodes' offsets are
            # unknown, so nothing is certified (see test_verdict.py for the held case)
            unsynced = [n for n in NODES if not summaries[n]["clock"]["ntp_synchronized"]]
            if unsynced:
                self.assertIsNone(p["start_synchronized"])
                self.assertEqual(p["start"]["verdict"], "cannot tell")
                self.assertEqual([o["node"] for o in p["start"]["nodes_out"]], unsynced)
            elif max(summaries[n]["clock"]["maxerror_us"] for n in NODES) < 250000:
                # NTP bounds every offset well within the limit
                self.assertTrue(p["start_synchronized"])
            else:
                self.assertIn(p["start"]["verdict"], ("held", "cannot tell"))
            self.assertEqual(p["latency_s"]["count"], sum(x["ops"] for x in parts))
            self.assertEqual(len(p["slowest_threads"]), min(5, p["threads"]))
        tests = {t["test"]: t for t in rep["tests"]}
        self.assertEqual(tests["1a"]["result_s"], rep["parts"][0]["cluster_time_s"])
        self.assertAlmostEqual(tests["2"]["result_s"],
                               sum(p["cluster_time_s"] for p in rep["parts"][1:]), places=12)
        self.assertEqual(rep["invalid"], [])

    def test_latency_of_one_node_is_the_binarys(self):
        """The merged histogram of one node gives exactly the binary's own percentiles."""
        for n in NODES:
            rep = collect(os.path.join(GOOD, n + ".json"))
            s = self.summary(n)
            mine = {p["part"]: p["latency_s"] for p in rep["parts"]}
            for t in s["tests"]:
                for part in t["parts"]:
                    lat = mine[part["part"]]
                    for q in ("p50", "p90", "p99", "max"):
                        self.assertEqual(lat[q], part["latency_s"][q], (n, part["part"], q))

    def test_histograms_merge_exactly(self):
        rep = collect(GOOD)
        for p in rep["parts"]:
            merged, count, mn, mx = {}, 0, None, 0
            for n in NODES:
                for t in self.summary(n)["tests"]:
                    for part in t["parts"]:
                        if part["part"] != p["part"]:
                            continue
                        h = part["latency_hist"]
                        for i, c in h["buckets"]:
                            merged[i] = merged.get(i, 0) + c
                        count += h["count"]
                        mn = h["min_ns"] if mn is None else min(mn, h["min_ns"])
                        mx = max(mx, h["max_ns"])
            for q, key in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
                want = S.hist_quantile(merged, count, mn, mx, q, 7, 44) / 1e9
                self.assertEqual(p["latency_s"][key], want)
            self.assertEqual(p["latency_s"]["max"], mx / 1e9)

    def test_bucket_scheme_matches_util_hist(self):
        """hist_index of util/hist.c, written again: every value lies in its bucket."""
        sub, last = 7, S.hist_last(7, 44)

        def index(v):
            if v < 128:
                return v
            if v >> 44:
                return last
            shift = v.bit_length() - 1 - sub
            return shift * 128 + (v >> shift)

        values = list(range(0, 3000)) + [2 ** k + d for k in range(8, 45) for d in (-1, 0, 1, 7)]
        for v in values:
            i = index(v)
            self.assertLessEqual(S.hist_bucket_low(i, sub, last), v, v)
            self.assertGreaterEqual(S.hist_bucket_high(i, sub, last), v, v)
        for i in range(last):
            self.assertEqual(index(S.hist_bucket_low(i, sub, last)), i)
        # exact small values: 1..100 ns, one each
        buckets = {v: 1 for v in range(1, 101)}
        self.assertEqual(S.hist_quantile(buckets, 100, 1, 100, 0.5, 7, 44), 50)
        self.assertEqual(S.hist_quantile(buckets, 100, 1, 100, 0.99, 7, 44), 99)
        self.assertEqual(S.hist_quantile(buckets, 100, 1, 100, 1.0, 7, 44), 100)
        self.assertEqual(S.hist_quantile(buckets, 100, 1, 100, 0.0, 7, 44), 1)
        self.assertEqual(S.hist_quantile({}, 0, 0, 0, 0.5, 7, 44), 0)
        # the last bucket's midpoint is clamped to max_ns
        self.assertEqual(S.hist_quantile({last: 2}, 2, 5 << 44, 6 << 44, 0.5, 7, 44), 6 << 44)

    def test_repetition_from_file_name(self):
        # a summary that does not number its repetitions: the launcher's file name does
        with open(os.path.join(GOOD, "n1.json")) as f:
            s = json.load(f)
        del s["run"]["first_repetition"]
        for rep in (1, 3):
            with open(os.path.join(self.dir, "n1.x.rep%d.json" % rep), "w") as f:
                json.dump(s, f)
        rep = collect(self.dir)
        self.assertEqual(sorted({p["repetition"] for p in rep["parts"]}), [1, 3])
        self.assertEqual(rep["invalid"], [])

    def test_repetition_from_the_summary(self):
        # stagebench run --repetition 3 numbers its tests itself; the file name is not added
        d = os.path.join(self.dir, "own")
        os.makedirs(d)
        stage = os.path.join(self.dir, "stage")
        os.makedirs(stage)
        out = os.path.join(d, "n1.1a.rep3.json")
        p = subprocess.run([ct.BINARY, "run", "1a", "--scale", "tiny", "--dir", stage,
                            "--start-in", "0", "--node", "n1", "--repetition", "3", "--out", out,
                            "--no-progress"], capture_output=True, text=True, env=ct.env())
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            s = json.load(f)
        self.assertEqual(s["run"]["first_repetition"], 3)
        self.assertEqual([t["repetition"] for t in s["tests"]], [3])
        rep = collect(d)
        self.assertEqual(sorted({p["repetition"] for p in rep["parts"]}), [3])

    def test_failed_node_summary(self):
        d = self.copy_good()
        shutil.copy(os.path.join(FAILED, "n9.json"), d)
        rep = collect(d)
        self.assertEqual(rep["exit_code"], 1)
        self.assertEqual(rep["nodes"]["failed"], ["n9"])
        p1a = [p for p in rep["parts"] if p["part"] == "1a"][0]
        self.assertEqual(p1a["nodes_failed"], 1)
        self.assertIn("nope", p1a["failed"][0]["error"])
        self.assertEqual(p1a["nodes_ok"], 3)
        p2a = [p for p in rep["parts"] if p["part"] == "2a"][0]
        self.assertEqual(p2a["nodes_missing"], 1)  # n9 was to run 1a only
        text = ct.report_text(rep)
        self.assertIn("n9", text)
        self.assertIn("status: FAILED", text)

    def test_expect_names_the_missing(self):
        d = self.copy_good()
        rep = collect(d, expect=N.nodeset_expand("n[1-5]"))
        self.assertEqual(rep["nodes"]["missing"], ["n4", "n5"])
        self.assertEqual(rep["exit_code"], 1)
        for p in rep["parts"]:
            self.assertEqual(p["nodes_expected"], 5)
            self.assertEqual(p["missing"], ["n4", "n5"])

    def test_manifest_failures(self):
        d = self.copy_good()
        self.write("manifest.json", {
            "schema": L.MANIFEST_SCHEMA, "run_id": "r1", "nodes": NODES + ["n4", "n5"],
            "servers": {"n1": "s0", "n2": "s1", "n3": "s0", "n4": "s1", "n5": "s0"},
            "preparers": {"s0": "n1", "s1": "n2"},
            "rounds": [{"kind": "run", "test": "1a", "part": "1a", "rep": 1, "start_at": 1.0,
                        "failed": {"n4": {"status": "timeout", "error": "no end within 5 s"},
                                   "n5": {"status": "unreachable", "error": "ssh: no route"}}}]})
        rep = collect(d)
        p = rep["parts"][0]
        self.assertEqual((p["nodes_expected"], p["nodes_ok"], p["nodes_failed"]), (5, 3, 2))
        self.assertEqual({f["node"]: f["status"] for f in p["failed"]},
                         {"n4": "timeout", "n5": "unreachable"})
        self.assertEqual(rep["run_id"], "r1")
        self.assertEqual([(s["server"], s["count"], s["preparer"]) for s in rep["servers"]],
                         [("s0", 3, "n1"), ("s1", 2, "n2")])
        self.assertEqual({s["server"] for s in p["servers"]}, {"s0", "s1"})
        text = ct.report_text(rep)
        self.assertIn("n4: timeout: no end within 5 s", text)
        self.assertIn("n5: unreachable: ssh: no route", text)

    def test_start_not_synchronized(self):
        s = self.summary("n2")
        for t in s["tests"]:
            for part in t["parts"]:
                if part["part"] == "2b":
                    # released 1.5 s late on its own clock: its node time, from T, says so too
                    # (else its figures do not add up: inconsistent)
                    part["node_time_s"] += 1.5
                    for k in ("min", "max"):
                        part["release_at_ns"][k] += 1500000000
                    for th in part["per_thread"]:
                        th["release_at"] += 1.5
                        th["release_at_ns"] += 1500000000
        self.copy_good()
        self.write("n2.json", s)
        # the offsets the launcher measured: every clock agrees within 1 ms
        self.write("manifest.json", {
            "schema": "stagebench.manifest/2", "run_id": "r1", "nodes": NODES,
            "clock": {"method": "exchange", "samples": 8, "end": {}, "start": {
                n: {"offset_s": 0.0, "uncertainty_s": 0.001} for n in NODES}}})
        rep = collect(self.dir)
        bad = [p["part"] for p in rep["parts"] if p["start_synchronized"] is False]
        self.assertEqual(bad, ["2b"])
        self.assertFalse(rep["clock"]["start_synchronized"])
        self.assertEqual(rep["exit_code"], 1)
        self.assertIn("start synchronization: NOT held", ct.report_text(rep))

    def test_unsynchronized_clocks_are_named(self):
        rep = collect(GOOD)
        unsynced = [n for n in NODES if not self.summary(n)["clock"]["ntp_synchronized"]]
        self.assertEqual(rep["clock"]["unsynchronized_nodes"], unsynced)
        if unsynced:
            self.assertIn("NOT NTP-synchronized", ct.report_text(rep))
            self.assertEqual(collect(GOOD, require_ntp=True)["exit_code"], 1)

    def test_invocations_that_differ_in_what_chose_the_cores(self):
        """Two invocations on one node, the second's summary without cores.chosen_by (an
        optional field): the node's cores are judged, not compared as tuples (None against a
        name raised TypeError in the report)."""
        s = self.summary(NODES[0])
        first, second = copy.deepcopy(s), copy.deepcopy(s)
        first["tests"], second["tests"] = s["tests"][:1], s["tests"][1:]
        del second["cores"]["chosen_by"]
        self.write("%s.first.json" % NODES[0], first)
        self.write("%s.second.json" % NODES[0], second)
        rep = collect(self.dir)
        self.assertEqual(rep["invalid"], [])
        rule = [r for r in rep["validity"]["rules"] if r["rule"] == "one job per core on every "
                "node"]
        self.assertEqual(len(rule), 1, rep["validity"])


class SummaryReader(Case):
    """summaries.read_summary on one file: what it keeps, and the reason it gives for a file
    it refuses (never an exception)."""

    def test_good_summary(self):
        r = S.read_summary(os.path.join(GOOD, "n2.json"))
        self.assertIsNone(r["error"])
        self.assertEqual(r["node"], "n2")
        self.assertEqual(r["status"], "ok")
        self.assertEqual([(t, rep, part) for t, rep, part, _p in r["entries"]],
                         [("1a", 1, "1a"), ("2", 1, "2a"), ("2", 1, "2b"), ("2", 1, "2c")])
        summary = self.summary("n2")
        for (_t, _rep, part, p), want in zip(r["entries"], summary["tests"][0]["parts"] +
                                             summary["tests"][1]["parts"]):
            self.assertEqual(p["part"], part)
            self.assertEqual(p["bytes"], want["bytes"])
        self.assertEqual(r["test_errors"], [])

    def test_refused_with_the_reason(self):
        good = self.summary("n1")
        cases = [("", "empty file"), ("{", "not valid JSON"), ("[" * 100000, "nested"),
                 (dict(good, schema="x/1"), "schema"), (dict(good, node="a b"), "node")]
        for i, (content, why) in enumerate(cases):
            with self.subTest(why=why):
                path = self.write("bad%d.json" % i, content)
                r = S.read_summary(path)
                self.assertIn(why, r.get("error") or r.get("ignore") or "", r)
        r = S.read_summary(os.path.join(self.dir, "none.json"))
        self.assertIn("cannot read", r["error"])


class Damaged(Case):
    """Each damaged copy is named and skipped; the good nodes' results stay complete."""

    def damaged(self):
        s = self.summary("n1")
        good_text = read(os.path.join(GOOD, "n1.json"))
        cases = {}

        def variant(name, fn):
            x = copy.deepcopy(s)
            fn(x)
            cases[name] = x

        cases["truncated"] = good_text[:len(good_text) // 2]
        cases["empty"] = ""
        cases["garbage"] = "\x00\x01binary\xff"
        cases["array"] = "[1, 2, 3]"
        cases["deep"] = "[" * 100000 + "]" * 100000
        variant("wrong-schema", lambda x: x.update(schema="stagebench.node/9"))
        variant("no-schema", lambda x: x.pop("schema"))
        variant("other-schema", lambda x: x.update(schema="fio-3"))
        variant("no-node", lambda x: x.pop("node"))
        variant("bad-node", lambda x: x.update(node="n1;rm -rf /"))
        variant("no-tests", lambda x: x.pop("tests"))
        variant("tests-not-list", lambda x: x.update(tests={"a": 1}))
        variant("no-node-time", lambda x: x["tests"][0]["parts"][0].pop("node_time_s"))
        variant("string-time", lambda x: x["tests"][0]["parts"][0].update(node_time_s="1"))
        variant("no-per-thread", lambda x: x["tests"][0]["parts"][0].pop("per_thread"))
        variant("thread-no-time", lambda x: x["tests"][0]["parts"][0]["per_thread"][0]
                .pop("time_s"))
        variant("part-not-object", lambda x: x["tests"][0]["parts"].__setitem__(0, 7))
        variant("hist-count", lambda x: x["tests"][0]["parts"][0]["latency_hist"]
                .update(count=1))
        variant("hist-index", lambda x: x["tests"][0]["parts"][0]["latency_hist"]["buckets"]
                .append([999999, 1]))
        variant("hist-pair", lambda x: x["tests"][0]["parts"][0]["latency_hist"]["buckets"]
                .append([1]))
        variant("negative-bytes", lambda x: x["tests"][0]["parts"][0].update(bytes=-5))
        variant("rep-zero", lambda x: x["tests"][0].update(repetition=0))
        return cases

    def test_damaged_copies(self):
        self.copy_good()
        # n1's real summary stays; every damaged copy is another file
        cases = self.damaged()
        for name, obj in cases.items():
            self.write("bad-%s.json" % name, obj if isinstance(obj, str) else json.dumps(obj))
        shutil.copy(os.path.join(GOOD, "n2.json"), os.path.join(self.dir, "n2-copy.json"))
        self.write("bad-nan.json", read(os.path.join(GOOD, "n3.json")).replace(
            '"node": "n3"', '"node": "n7"').replace('"node_time_s": ', '"node_time_s": NaN, '
                                                    '"x": ', 1))
        rep = collect(self.dir)
        names = {f["file"]: f["reason"] for f in rep["invalid"]}
        expected = {"bad-%s.json" % n for n in cases} | {"n2-copy.json", "bad-nan.json"}
        self.assertEqual(set(names), expected, names)
        self.assertIn("duplicate", names["n2-copy.json"])
        self.assertIn("n2.json", names["n2-copy.json"])
        self.assertIn("not valid JSON", names["bad-truncated.json"])
        self.assertIn("schema", names["bad-wrong-schema.json"])
        self.assertIn("missing field tests[0].parts[0].node_time_s",
                      names["bad-no-node-time.json"])
        self.assertIn("per_thread[0].time_s", names["bad-thread-no-time.json"])
        self.assertIn("not a valid node name", names["bad-bad-node.json"])
        self.assertIn("nested too deeply", names["bad-deep.json"])
        self.assertEqual(rep["exit_code"], 1)
        self.assertEqual(rep["nodes"]["failed"], [])
        self.assertEqual(rep["nodes"]["missing"], [])
        for p in rep["parts"]:
            self.assertEqual((p["nodes_ok"], p["nodes_failed"], p["nodes_missing"]), (3, 0, 0))
        # and the same through the command line: named on stderr, no traceback, exit 1
        for py in ct.pythons():
            p = self.cli([self.dir], python=py)
            self.assertEqual(p.returncode, 1, p.stderr)
            for f in expected:
                self.assertIn(f, p.stdout)
                self.assertIn("skipped %s" % f, p.stderr)
            self.assertIn("status: FAILED", p.stdout)

    def test_duplicate_node_in_other_name(self):
        self.copy_good()
        shutil.copy(os.path.join(GOOD, "n3.json"), os.path.join(self.dir, "zz.json"))
        rep = collect(self.dir)
        self.assertEqual([f["file"] for f in rep["invalid"]], ["zz.json"])
        self.assertEqual(rep["parts"][0]["nodes_ok"], 3)

    def test_other_stagebench_files_are_ignored(self):
        self.copy_good()
        self.write("baseline-copy.json", {"schema": L.BASELINE_SCHEMA, "parts": {}})
        rep = collect(self.dir)
        self.assertEqual(rep["invalid"], [])
        self.assertEqual(rep["exit_code"], 0)
        self.assertEqual([f["file"] for f in rep["ignored"]], ["baseline-copy.json"])


class CommandLine(Case):
    def test_formats(self):
        d = self.copy_good()
        p = self.cli([d, "--format", "json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        j = json.loads(p.stdout)
        self.assertEqual(j["schema"], "stagebench.report/3")
        for part in j["parts"]:
            for k in ("nodes_expected", "nodes_ok", "nodes_failed", "nodes_missing",
                      "cluster_time_s", "bytes", "bandwidth_Bps", "start_spread_s",
                      "slowest", "latency_s", "threads", "node_time_s", "servers"):
                self.assertIn(k, part)
            self.assertNotIn("_node_times", part)
        self.assertEqual({t["test"] for t in j["tests"]}, {"1a", "2"})
        self.assertTrue(all(t["result_s"] > 0 for t in j["tests"]))
        p = self.cli([d, "--format", "csv"])
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.strip().splitlines()
        head = lines[0].split(",")
        self.assertEqual(head[:3], ["test", "repetition", "part"])
        rows = [dict(zip(head, ln.split(","))) for ln in lines[1:]]
        self.assertEqual([r["part"] for r in rows], ["1a", "2a", "2b", "2c", "sum", "sum"])
        self.assertEqual(rows[0]["nodes_ok"], "3")
        p = self.cli([d])
        self.assertEqual(p.returncode, 0, p.stderr)
        for word in ("cluster", "slowest nodes", "slowest threads", "start synchronization",
                     "test 2", "status: ok"):
            self.assertIn(word, p.stdout)

    def test_both_pythons(self):
        d = self.copy_good()
        outs = []
        for py in ct.pythons():
            p = self.cli([d, "--format", "csv"], python=py)
            self.assertEqual(p.returncode, 0, "%s: %s" % (py, p.stderr))
            outs.append(p.stdout)
        self.assertEqual(len(set(outs)), 1)

    def test_baseline_and_regressions(self):
        d = self.copy_good()
        base = os.path.join(self.dir, "..", os.path.basename(self.dir) + "-base.json")
        self.addCleanup(lambda: os.path.exists(base) and os.unlink(base))
        p = self.cli([d, "--save-baseline", base])
        self.assertEqual(p.returncode, 0, p.stderr)
        b = ct.load(base)
        self.assertEqual(b["schema"], "stagebench.baseline/1")
        self.assertEqual(set(b["parts"]), {"1a", "2a", "2b", "2c"})
        self.assertEqual(set(b["parts"]["1a"]["nodes"]), set(NODES))
        p = self.cli([d, "--baseline", base, "--tolerance", "15%"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("no node or part slower", p.stdout)
        # a faster past: every node and part is now a regression
        for part in b["parts"].values():
            part["cluster_time_s"] /= 10
            for n in part["nodes"]:
                part["nodes"][n] /= 10
        with open(base, "w") as f:
            json.dump(b, f)
        p = self.cli([d, "--baseline", base, "--tolerance", "15", "--format", "json"])
        self.assertEqual(p.returncode, 1, p.stderr)
        regs = json.loads(p.stdout)["regressions"]
        self.assertEqual(len(regs), 4 * (len(NODES) + 1))
        self.assertEqual({(r["part"], r["node"]) for r in regs},
                         {(pt, n) for pt in ("1a", "2a", "2b", "2c") for n in NODES + [None]})
        self.assertTrue(all(r["slower_by"] > 0.15 for r in regs))
        p = self.cli([d, "--baseline", base, "--tolerance", "2000%"])
        self.assertEqual(p.returncode, 0, p.stdout)

    def test_plot_svg(self):
        d = self.copy_good()
        out = os.path.join(self.dir, "times.svg")
        p = self.cli([d, "--plot", out])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            text = f.read()
        self.assertIn("<svg", text)
        self.assertIn("plot written", p.stderr)
        png = os.path.join(self.dir, "times.png")
        p = self.cli([d, "--plot", png])
        if p.returncode == 2:
            self.assertIn("install", p.stderr)  # no matplotlib here
            self.assertFalse(os.path.exists(png))
        else:
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(png, "rb") as f:
                self.assertEqual(f.read(4), b"\x89PNG")

    def test_usage_errors(self):
        d = self.copy_good()
        cases = [
            ([d, "--tolerance", "lots"], "tolerance 'lots' is malformed"),
            ([os.path.join(self.dir, "nothere")], "does not exist"),
            ([d, "--expect", "n1;rm -rf /"], "not a valid node name"),
            ([d, "--expect", "n[1-"], "unbalanced"),
            ([d, "--baseline", os.path.join(self.dir, "nobase.json")], "baseline"),
            ([d, "--baseline", os.path.join(d, "n1.json")], "not a stagebench baseline"),
            ([d, "--plot", os.path.join(self.dir, "x.pdf")], ".svg or .png"),
            ([d, "--format", "xml"], "invalid choice"),
        ]
        for args, text in cases:
            with self.subTest(args=args):
                p = self.cli(args)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn(text, p.stderr)

    def test_help(self):
        for name in ("stagebench-collect", "stagebench-cluster", "stagebench-sim",
                     "stagebench-cron"):
            p = ct.run_script(name, ["--help"])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("usage:", p.stdout)
            self.assertIn("exit status", p.stdout)

    def test_empty_directory(self):
        p = self.cli([self.dir])
        self.assertEqual(p.returncode, 1)
        self.assertIn("no summary found", p.stdout)


class RateUnits(ct.TempDirCase):
    def test_every_part_counted_as_the_catalogue_says(self):
        """One node runs every test of the catalogue; each part's rate in the report (JSON,
        CSV, per server, Prometheus) has the unit and the count the catalogue gives it (test
        4 writes: bytes written), a bandwidth only for bytes, pages and mapped bytes only
        for pages."""
        cat = ct.catalogue_json()
        parts = dict((p["part"], p) for p in cat["parts"])
        os.makedirs(self.path("stage"))
        res = ct.run_nodes(["n1"], [t["test"] for t in cat["tests"]], self.dir,
                           self.path("stage"), start_in=3.0)
        self.assertEqual(res["n1"][1], 0, res["n1"][2])
        prom = self.path("m.prom")
        rep = ct.report_of([res["n1"][0]])
        self.assertEqual(sorted(p["part"] for p in rep["parts"]), sorted(parts))
        rows = dict((r["part"], r) for r in csv.DictReader(io.StringIO(ct.report_csv(rep))))
        from stagebench import prometheus
        self.assertIsNone(prometheus.write(prom, rep.model))
        with open(prom) as f:
            metrics = f.read()
        family = {"B/s": "bytes", "pages/s": "pages", "ops/s": "ops"}
        for p in rep["parts"]:
            want = parts[p["part"]]
            rate = p["rate"]
            self.assertEqual((rate["unit"], rate["counted"]),
                             (want["rate_unit"], want["counted"]), p["part"])
            self.assertEqual([(s["rate"]["unit"], s["rate"]["counted"]) for s in p["servers"]],
                             [(want["rate_unit"], want["counted"])])
            self.assertEqual((rows[p["part"]]["rate_unit"], rows[p["part"]]["rate_counted"]),
                             (want["rate_unit"], want["counted"]))
            self.assertEqual(p["bandwidth_Bps"] is not None, want["rate_unit"] == "B/s")
            self.assertEqual("pages" in rate, want["rate_unit"] == "pages/s")
            self.assertIn('stagebench_node_%s_per_second{node="n1",server=' %
                          family[want["rate_unit"]], metrics)
            self.assertIn('part="%s"' % p["part"], metrics)
        self.assertEqual({p["rate"]["counted"] for p in rep["parts"] if p["test"] == "4"},
                         {"bytes written"})


class Records(unittest.TestCase):
    """The report's record classes: each made by a constructor of its own from its declared
    names, or by Record.__init__ where a name cannot be a parameter; both alike."""

    def test_constructors(self):
        from stagebench import model as M

        class Plain(M.Record):
            FIELDS = (M.Field("a", "number", None, "a"), M.Field("b", "string", None, "b"))
            EXTRA = ("x",)
            __slots__ = M.names(FIELDS) + EXTRA

        class Keyword(M.Record):
            FIELDS = (M.Field("a", "number", None, "a"), M.Field("from", "string", None, "k"))
            __slots__ = M.names(FIELDS)

        self.assertIsNot(Plain.__init__, M.Record.__init__)
        self.assertIs(Keyword.__init__, M.Record.__init__)
        for cls, key in ((Plain, "b"), (Keyword, "from")):
            r = cls(**{"a": 1, key: "v"})
            self.assertEqual((r.a, getattr(r, key)), (1, "v"))
            self.assertEqual(r.to_json(), {"a": 1, key: "v"})
            with self.assertRaises(TypeError) as e:
                cls(a=1)
            self.assertIn(cls.__name__, str(e.exception))
            with self.assertRaises(TypeError):
                cls(**{"a": 1, key: "v", "other": 2})
        self.assertIsNone(Plain(a=1, b=2).x)
        self.assertEqual(Plain(a=1, b=2, x=3).x, 3)
        self.assertEqual(Plain.make(a=1).to_json(), {"a": 1, "b": None})


class NodeSets(unittest.TestCase):
    def setUp(self):
        global N, catalogue
        from stagebench import catalogue, nodes as N  # noqa: F811

    def test_expand_and_fold(self):
        cases = [
            ("node[001-003]", ["node001", "node002", "node003"], "node[001-003]"),
            ("n[1-3,5],m2", ["m2", "n1", "n2", "n3", "n5"], "m2,n[1-3,5]"),
            ("r[1-2]-n[1-2]", ["r1-n1", "r1-n2", "r2-n1", "r2-n2"], "r[1-2]-n[1-2]"),
            ("n[8-10]", ["n8", "n9", "n10"], "n[8-10]"),
            ("n[1-5/2]", ["n1", "n3", "n5"], "n[1,3,5]"),
            ("login", ["login"], "login"),
        ]
        for text, names, folded in cases:
            self.assertEqual(N.nodeset_expand(text), names)
            self.assertEqual(N.nodeset_fold(names), folded)
            self.assertEqual(N.nodeset_expand(N.nodeset_fold(names)), names)

    def test_natural_sorted_is_the_keys_order(self):
        # plain order stands in for natural_key only where the names share a skeleton
        rnd = random.Random(3)
        parts = ("n", "node", "0", "7", "09", "10", "123", ".json", ".2a.rep", "\u0663", "-")
        for _ in range(3000):
            names = list({"".join(rnd.choice(parts) for _ in range(rnd.randint(1, 5)))
                          for _ in range(rnd.randint(0, 12))})
            if rnd.random() < 0.5:  # one skeleton: node<6 digits>.2a.rep<1 digit>.json
                names = ["node%06d.2a.rep%d.json" % (rnd.randint(0, 999999), rnd.randint(1, 9))
                         for _ in range(rnd.randint(0, 30))]
                names = list(set(names))
            rnd.shuffle(names)
            self.assertEqual(L.natural_sorted(names), sorted(names, key=L.natural_key), names)
            self.assertEqual(L.natural_sorted(names, shorter_first=True),
                             sorted(names, key=lambda n: (len(n), L.natural_key(n))), names)

    def test_generation_reuse(self):
        # a generation read in two repetitions of a test on a node is named, in node and
        # repetition order; one repetition, or a test not asked about, names nothing
        from stagebench import verdict
        gens = {("n2", "1a"): {1: {7}, 2: {8}, 3: {7, None}},
                ("n1", "1a"): {2: {5}, 1: {5}},
                ("n3", "1a"): {1: {9}},
                ("n1", "2"): {1: {4}, 2: {4}},
                ("n4", "1b"): {1: {None}, 2: {None}}}
        self.assertEqual(verdict._generation_reuse(gens, {"1a", "1b"}),
                         ["n1 test 1a rep 2 reused rep 1's replica",
                          "n2 test 1a rep 3 reused rep 1's replica"])
        self.assertEqual(verdict._generation_reuse(gens, {"2"}),
                         ["n1 test 2 rep 2 reused rep 1's replica"])

    def test_long_int_is_the_regex(self):
        # the door's search for an integer over 20 digits finds what the regex finds, on
        # texts of digits, separators, strings and a digit outside ASCII
        from stagebench import summaries as S
        rnd = random.Random(3)
        marks = '0123456789:[, -"a\u0663'
        for _ in range(20000):
            text = "".join(rnd.choice(marks) if rnd.random() < 0.3 else rnd.choice("0123456789")
                           for _ in range(rnd.randint(0, 60)))
            want = S._LONG_INT.search(text)
            got = S._long_int(text.encode("utf-8"), text)
            self.assertEqual(got and got.group(0), want and want.group(0), text)

    def test_wide_histogram_sums(self):
        # a chunk's histograms summed as one integer a scheme (collection._wide) give the sums
        # bucket by bucket: buckets in a row or not, repeated, as arrays or tuples, counts
        # near 2**63 whose sums pass 2**64, first buckets moving down and up
        import array
        from stagebench import collection as C
        rnd = random.Random(5)
        for case in range(300):
            sums, want = C.Sums(), {}
            for k in range(rnd.randint(1, 40)):
                lo = rnd.choice((0, 1, 7, 100, 1100, 4000, 65000))
                n = rnd.randint(1, 300 if lo < 65000 else 536)
                if rnd.random() < 0.6:
                    idx = list(range(lo, lo + n))
                else:
                    idx = sorted(rnd.randint(lo, lo + 2 * n) for _ in range(n))
                    if rnd.random() < 0.5:
                        rnd.shuffle(idx)
                big = rnd.random() < 0.2
                cnt = [rnd.choice((2 ** 63 - 1, 2 ** 62)) if big else rnd.randint(0, 50)
                       for _ in idx]
                if sum(cnt) == 0:
                    cnt[0] = 1
                if rnd.random() < 0.7:
                    idx, cnt = array.array("q", idx), array.array("q", cnt)
                else:
                    idx, cnt = tuple(idx), tuple(cnt)
                sums.add("n%d" % k, {"hist": ((7, 44), sum(cnt), 1, 2, 3, idx, cnt),
                                     "times": b"", "top": []})
                for i, c in zip(idx, cnt):
                    want[i] = want.get(i, 0) + c
            got = sums.export()[1][(7, 44)][4]
            self.assertEqual(got, sorted((i, c) for i, c in want.items() if c), case)

    def test_thread_median_in_file_order(self):
        # the median of every thread time of a part, from chunks of nodes whose times come
        # sorted (the door's and the reader's, equal ones in their order) through Sums and
        # Group: the median of them all in file order, -0.0 or 0.0 alike
        import array
        import math
        from stagebench import collection as C
        rnd = random.Random(7)
        for case in range(400):
            g, everything, sums = C.Group("2", 1, "2a"), [], C.Sums()
            for k in range(rnd.randint(1, 20)):
                # zeros often enough that the median is one (a case in four)
                times = [rnd.choice((0.0, -0.0)) if rnd.random() < 0.45 else
                         rnd.choice((0.25, 0.5, 1.0)) for _ in range(rnd.randint(1, 6))]
                everything += times
                sums.add("n%d" % k, {"hist": None, "top": [],
                                     "times": array.array("d", sorted(times)).tobytes()})
                if rnd.random() < 0.3:  # the end of a chunk
                    g.merge(sums.export())
                    sums = C.Sums()
            g.merge(sums.export())
            want, got = statistics.median(everything), g.thread_median()
            self.assertEqual((got, math.copysign(1.0, got)), (want, math.copysign(1.0, want)),
                             "case %d: %s" % (case, everything))

    def test_dumps_indented_is_jsons(self):
        # the report's JSON writer is json.dumps(indent=...) byte for byte, on random values
        # with every scalar json treats apart (NaN, inf, -0.0, big ints, non-str keys,
        # escapes, tuples, empty containers, subclasses of int, float and str)
        from stagebench.model import dumps_indented

        class Int(int):
            pass

        class Float(float):
            pass

        class Str(str):
            pass
        rnd = random.Random(5)
        scalars = (None, True, False, 0, -3, 10 ** 20, 1.5, float("nan"), float("-inf"),
                   -0.0, 1e-300, "", "a\"b\\\n\u00e9\U0001f600\x00", Int(7), Float(2.5),
                   Str("s\u00e9"))
        keys = ("k", "\u00e9", "a\nb", 3, 2.5, True, None, False)

        def value(depth):
            r = rnd.random()
            if depth > 4 or r < 0.4:
                return rnd.choice(scalars)
            if r < 0.7:
                return [value(depth + 1) for _ in range(rnd.randint(0, 4))]
            if r < 0.8:
                return tuple(value(depth + 1) for _ in range(rnd.randint(0, 3)))
            return {rnd.choice(keys) if rnd.random() < 0.3 else "k%d" % i: value(depth + 1)
                    for i in range(rnd.randint(0, 4))}
        for _ in range(5000):
            v = value(0)
            for indent in (1, 2):
                self.assertEqual(dumps_indented(v, indent), json.dumps(v, indent=indent))

    def test_fold_is_clustershells(self):
        # nodeset_fold hands ClusterShell runs of numbers, not the names: the same set, so
        # the same text as ClusterShell folding the names, on random mixes of prefixes,
        # widths (8, 08, 008), numbered prefixes (r1n) and names without a number
        from ClusterShell.NodeSet import NodeSet, RESOLVER_NOGROUP
        rnd = random.Random(7)
        prefixes = ("n", "node", "a.b", "rack-", "x_y", "r1n", "gpu-a", "c.")
        for _ in range(2000):
            names = []
            for _ in range(rnd.randint(0, 40)):
                v = rnd.randint(0, 120)
                d = str(v) if rnd.random() < 0.5 else "%0*d" % (rnd.randint(0, 4), v)
                names.append(rnd.choice(prefixes) + d + (
                    "" if rnd.random() < 0.9 else rnd.choice(("a", "-b", ".x1"))))
            want = str(NodeSet.fromlist(names, resolver=RESOLVER_NOGROUP))
            self.assertEqual(N.nodeset_fold(names), want, names)
        # one prefix and one width (folded without ClusterShell): 0 or 1 to many numbers
        for _ in range(500):
            prefix, width = rnd.choice(prefixes[:5]), rnd.randint(1, 4)
            names = ["%s%0*d" % (prefix, width, v) for v in
                     rnd.sample(range(10 ** (width - 1) if width > 1 and rnd.random() < 0.3
                                      else 0, 10 ** width), rnd.randint(1, min(30, width * 9)))]
            want = str(NodeSet.fromlist(names, resolver=RESOLVER_NOGROUP))
            self.assertEqual(N.nodeset_fold(names), want, names)
        many = ["node%06d" % i for i in range(1, 20001) if i % 97]
        self.assertEqual(N.nodeset_fold(many),
                         str(NodeSet.fromlist(many, resolver=RESOLVER_NOGROUP)))

    def test_bad_names_are_refused(self):
        for bad in ("n1;rm -rf /", "n1 n2", "-n1", ".n1", "n$(id)", "a/b", "n[3-1]", "n[1-",
                    "n]", "", "x" * 65, "n`id`"):
            with self.subTest(bad=bad):
                with self.assertRaises(L.UsageError):
                    N.nodeset_expand(bad)

    def test_tests_and_parts(self):
        """Every test and part of the build's catalogue (its JSON, read here directly) by
        its name, 'all' as the catalogue's in_all tests, two parts of one test together."""
        cat = ct.catalogue_json()
        tests = [(t["test"], t["parts"]) for t in cat["tests"]]
        parse = catalogue.load().parse_tests
        self.assertEqual(parse([t for t, _p in tests]), tests)
        for t, parts in tests:
            for p in parts:
                self.assertEqual(parse([p]), [(t, [p])])
            if len(parts) > 1:
                self.assertEqual(parse(parts[::2]), [(t, parts[::2])])
                with self.assertRaises(L.UsageError):
                    parse([t, parts[0]])
        self.assertEqual([t for t, _ in parse(["all"])],
                         [t["test"] for t in cat["tests"] if t["in_all"]])
        for bad in (["9z"], []):
            with self.assertRaises(L.UsageError):
                parse(bad)

    def test_tolerance(self):
        self.assertEqual(L.parse_tolerance("15%"), 0.15)
        self.assertEqual(L.parse_tolerance("15"), 0.15)
        for bad in ("x", "-1%", "1e9"):
            with self.assertRaises(L.UsageError):
                L.parse_tolerance(bad)

    def test_server_of(self):
        self.assertEqual(L.server_of("n1", {"type": "nfs4", "source": "stage3:/export"}),
                         "stage3:/export")
        self.assertEqual(L.server_of("n1", {"type": "fuse.sshfs",
                                            "source": "root@127.0.0.1:/x"}),
                         "root@127.0.0.1:/x")
        self.assertEqual(L.server_of("n1", {"type": "ext4", "source": "/dev/sda1"}),
                         "n1:/dev/sda1")


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
