# SPDX-License-Identifier: MIT
"""Every VALID earned (issue 20): the collector certifies only what it checked, on summaries the
real binary wrote. A binary patched after the build on one simulated node is named, NOT VALID;
a node run on one of its two cores (--cpus 0), in a run of 1a alone, fails one job per core,
with the verdict of each test and the spec's tests that did not run; a summary whose node time
is less than a thread's, or whose operations are not the plan's, is inconsistent, named and left
out; summaries without a manifest whose nodes say NTP is synchronized get "cannot tell", never
"held"; a second run on the first run's replicas is named, NOT VALID. The start verdict from the
launcher's measurements at every part (manifests built by hand around real parts): drift
interpolated, a step named with the part it hit, a node without offsets or too uncertain named;
NOT held names only the nodes off the cluster's reference; a start missed for a clock ahead
shows its cause and offset in the text, JSON and CSV."""
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import clustertest as ct

NODES = ["n1", "n2", "n3"]
INTERVAL = 2.0


def setUpModule():
    global BASE, GOOD, PARTS
    BASE = tempfile.mkdtemp(prefix="stagebench-validity-test-")
    try:
        GOOD = os.path.join(BASE, "good")
        os.makedirs(GOOD)
        os.makedirs(os.path.join(BASE, "stage"))
        # three nodes on one grid: 1a, 1b and the parts of 2, INTERVAL apart
        res = ct.run_nodes(NODES, ["1a", "1b", "2", "--interval", "%g" % INTERVAL], GOOD,
                           os.path.join(BASE, "stage"), start_in=3.0)
        for n, (_out, rc, err) in res.items():
            assert rc == 0, "%s: exit %d: %s" % (n, rc, err)
        PARTS = [(p["part"], p["start_at"]) for t in load("n1")["tests"] for p in t["parts"]]
    except BaseException:
        shutil.rmtree(BASE, True)
        raise


def tearDownModule():
    shutil.rmtree(BASE, True)


def load(node, where=None):
    return ct.load(os.path.join(where or GOOD, node + ".json"))


def parts_of(summary, name=None):
    return [p for t in summary["tests"] for p in t["parts"] if name in (None, p["part"])]


def manifest(nodes, clock=None, **extra):
    m = {"schema": "stagebench.manifest/2", "run_id": "r1", "nodes": nodes,
         "clock": clock if clock is not None else {"method": "exchange", "samples": 8,
                                                    "start": {}, "end": {}},
         "max_offset_s": 0.1, "require_sync": False, "server_drop": None}
    m.update(extra)
    return m


def measured(offsets, at, unc=1e-5):
    """{node: entry} of a measurement at launch-host instant at: offsets {node: offset}."""
    return {n: {"offset_s": o, "uncertainty_s": unc, "measured_at": at}
            for n, o in offsets.items()}


def every_part(offset_of, nodes=NODES, unc=1e-5, skip=()):
    """clock.measurements before (0.5 s) and after (1 s) each part of GOOD: node n's offset
    at launch-host instant t is offset_of(n, t); the nodes in skip are listed unmeasured."""
    out = []
    for part, t in PARTS:
        for when, at in (("before", t - 0.5), ("after", t + 1.0)):
            out.append({"at": at, "next_to": {"when": when, "part": part, "rep": 1},
                        "method": "exchange",
                        "nodes": {n: {"offset_s": offset_of(n, at), "uncertainty_s": unc,
                                      "measured_at": at} for n in nodes if n not in skip},
                        "unmeasured": {n: "no answer within --info-timeout 30 s"
                                       for n in skip}})
    return {"method": "exchange", "samples": 8, "start": {}, "end": {}, "measurements": out}


class Case(ct.TempDirCase):
    def write(self, name, obj):
        with open(self.path(name), "w") as f:
            json.dump(obj, f)

    def copy_good(self, nodes=NODES, **edited):
        for n in nodes:
            self.write(n + ".json", edited.get(n) or load(n))

    def collect(self, *args):
        """The collector's text, JSON and CSV reports of this case's directory, and its exit
        status (the same for the three)."""
        runs = [ct.run_script("stagebench-collect", [self.dir, "--format", f] + list(args))
                for f in ("text", "json", "csv")]
        self.assertEqual({r.returncode for r in runs}, {runs[0].returncode},
                         [r.stderr for r in runs])
        rows = list(csv.DictReader(io.StringIO(runs[2].stdout)))
        return runs[0].returncode, runs[0].stdout, json.loads(runs[1].stdout), rows


def rules_of(rep):
    return {r["rule"]: r for r in rep["validity"]["rules"]}


class Binary(Case):
    def test_patched_binary_on_one_node_is_named(self):
        """node2 runs a copy of the binary with one byte appended after the build (it runs the
        same; its build id and version are the same): its summary's digest differs from the
        one the launcher expected (the build's, hashed by the launcher), named, NOT VALID."""
        patched = self.path("stagebench-patched")
        shutil.copy2(ct.BINARY, patched)
        with open(patched, "ab") as f:
            f.write(b"\0")
        p = ct.run_script("stagebench-sim", [
            "--nodes", "2", "--servers", "1", "--dir", self.path("stage"),
            "--results", self.path("results"), "--stagebench", ct.BINARY, "--scale", "tiny",
            "--run-id", "patched", "--no-report", "--node-binary", "node2=" + patched, "1a"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        run = self.path("results", "patched")
        with open(ct.BINARY, "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        with open(patched, "rb") as f:
            odd = hashlib.sha256(f.read()).hexdigest()
        m = ct.load(os.path.join(run, "manifest.json"))
        self.assertEqual(m["expected_binary"], {"path": ct.BINARY, "sha256": want})
        s1, s2 = (ct.load(os.path.join(run, n + ".1a.rep1.json")) for n in ("node1", "node2"))
        self.assertEqual((s1["build"]["exe_sha256"], s2["build"]["exe_sha256"]), (want, odd))
        self.assertEqual(s1["build"]["id"], s2["build"]["id"])
        j = ct.run_script("stagebench-collect", [run, "--format", "json"])
        rep = json.loads(j.stdout)
        rule = rules_of(rep)["the same binary on every node"]
        self.assertFalse(rule["ok"])
        self.assertIn("node2 ran binary %s, not %s (the launcher's)" % (odd[:12], want[:12]),
                      rule["evidence"])
        self.assertNotIn("node1 ran", rule["evidence"])
        self.assertEqual(rep["validity"]["verdict"], "NOT VALID")
        self.assertEqual(rep["validity"]["tests"], [
            {"test": "1a", "verdict": "NOT VALID",
             "failed": [r for r in rep["validity"]["tests"][0]["failed"]]}])
        self.assertIn("the same binary on every node", rep["validity"]["tests"][0]["failed"])
        text = ct.run_script("stagebench-collect", [run]).stdout
        self.assertIn("  [NO] the same binary on every node: node2 ran binary %s" % odd[:12],
                      text)


class Cores(Case):
    def test_one_core_of_two_and_1a_alone(self):
        """n1 runs 1a alone on one of this machine's two cores (--cpus 0): one job per core is
        not held (the node, its thread and its allowed cores named), test 1a is NOT VALID, and
        the spec's other tests are listed as not run."""
        if len(ct.cores()) < 2:
            self.fail("this test needs two cores (one job per core on one of two)")
        os.makedirs(self.path("stage"))
        res = ct.run_nodes(["n1"], ["1a"], self.dir, self.path("stage"), cpus=[0])
        self.assertEqual(res["n1"][1], 0, res["n1"][2])
        s = ct.load(res["n1"][0])
        self.assertEqual(s["cores"], {"online": s["cores"]["online"], "allowed": 2, "used": 1,
                                      "chosen_by": "cpus"})
        self.write("manifest.json", manifest(["n1"]))
        rc, text, rep, _rows = self.collect()
        rule = rules_of(rep)["one job per core on every node"]
        self.assertFalse(rule["ok"])
        self.assertIn("n1 ran 1 thread on 2 allowed cores (--cpus)", rule["evidence"])
        va = rep["validity"]
        self.assertEqual(va["verdict"], "NOT VALID")
        self.assertEqual([(t["test"], t["verdict"]) for t in va["tests"]], [("1a", "NOT VALID")])
        self.assertIn("one job per core on every node", va["tests"][0]["failed"])
        self.assertEqual(va["not_run"], [t for t in ct.catalogue_all() if t != "1a"])
        self.assertFalse(rules_of(rep)["every test of the spec ran"]["ok"])
        self.assertIn("\n  test 1a   NOT VALID (", text)
        self.assertIn("\n  the spec's tests that did not run: %s\n" % ", ".join(va["not_run"]),
                      text)
        self.assertEqual(rc, 0, text)  # NOT VALID alone does not change the exit status


    def test_a_binding_of_one_core_of_two(self):
        """n1 bound to one of this machine's two cores (taskset -c 0: it may use 1 of its 2
        online cores), running a thread on the one it may use: one job per core is still not
        held, the node and both counts named."""
        if len(ct.cores()) < 2:
            self.fail("this test needs two cores (a binding to one of two)")
        os.makedirs(self.path("stage"))
        at = time.time() + 1.0
        out = self.path("n1.json")
        p = subprocess.run(["taskset", "-c", "0", ct.BINARY, "run", "1a", "--scale", "tiny",
                            "--dir", self.path("stage"), "--node", "n1", "--start-at",
                            "%.6f" % at, "--out", out, "--no-progress"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           universal_newlines=True, env=ct.env(), timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        s = ct.load(out)
        self.assertEqual((s["cores"]["allowed"], s["cores"]["used"]), (1, 1), s["cores"])
        self.assertGreaterEqual(s["cores"]["online"], 2)
        self.write("manifest.json", manifest(["n1"]))
        rc, text, rep, _rows = self.collect()
        rule = rules_of(rep)["one job per core on every node"]
        self.assertFalse(rule["ok"], rule)
        self.assertIn("n1 may use 1 of its %d cores" % s["cores"]["online"], rule["evidence"])
        self.assertEqual(rep["validity"]["verdict"], "NOT VALID")


class Inconsistent(Case):
    def test_node_time_below_a_thread_and_ops_not_the_plans(self):
        """n2's 1b says a node time below its slowest thread's time; n3's 2a an operation
        count that is not the plan's: both parts inconsistent, named with why, left out of the
        sums (nodes_ok, bytes, the cluster time, the slowest nodes); the run NOT VALID and
        failed (exit 1)."""
        s2, s3 = load("n2"), load("n3")
        b = parts_of(s2, "1b")[0]
        b["node_time_s"] = max(th["time_s"] for th in b["per_thread"]) / 2
        a = parts_of(s3, "2a")[0]
        a["ops"] += 1
        a["per_thread"][0]["ops"] += 1
        self.copy_good(n2=s2, n3=s3)
        self.write("manifest.json", manifest(NODES))
        rc, text, rep, rows = self.collect()
        self.assertEqual(rc, 1, text)
        by = {p["part"]: p for p in rep["parts"]}
        for part, node, why in (("1b", "n2", "node time %.6f s is less than thread" %
                                 b["node_time_s"]),
                                ("2a", "n3", "ops %d, where the plan gives %d" % (
                                    a["ops"], a["ops"] - 1))):
            p = by[part]
            f = [x for x in p["failed"] if x["node"] == node]
            self.assertEqual([x["status"] for x in f], ["inconsistent"], p["failed"])
            self.assertIn(why, f[0]["error"])
            self.assertEqual(p["nodes_ok"], 2)
            self.assertNotIn(node, [x["node"] for x in p["slowest"]])
            others = [parts_of(load(n), part)[0] for n in NODES if n != node]
            self.assertEqual(p["bytes"], sum(x["bytes"] for x in others))
            self.assertEqual(p["cluster_time_s"], max(x["node_time_s"] for x in others))
            self.assertIn("\n  %-4s rep 1 %s: inconsistent: %s" % (part, node, why[:30]), text)
        rule = rules_of(rep)["every part's figures add up"]
        self.assertFalse(rule["ok"])
        self.assertIn("n2 (1b rep 1): inconsistent: node time", rule["evidence"])
        self.assertIn("n3 (2a rep 1): inconsistent: ops", rule["evidence"])
        self.assertEqual(rep["validity"]["verdict"], "NOT VALID")
        self.assertEqual({r["part"]: r["nodes_failed"] for r in rows if r["part"] != "sum"},
                         {"1a": "0", "1b": "1", "2a": "1", "2b": "0", "2c": "0"})


class NoManifest(Case):
    def test_two_synchronized_nodes_without_manifest_cannot_tell(self):
        """Two summaries without a manifest, both saying NTP synchronized with a small
        maxerror (edited: this machine has no NTP): cannot tell in every part, with the reason
        and one line on how to get a verdict; exit 0; never held. Nor is the run VALID: the
        expected nodes are not known."""
        edited = {}
        for n in ("n1", "n2"):
            s = load(n)
            s["clock"].update(ntp_synchronized=True, maxerror_us=500)
            edited[n] = s
        self.copy_good(nodes=["n1", "n2"], **edited)
        rc, text, rep, rows = self.collect()
        self.assertEqual(rc, 0, text)
        self.assertEqual(rep["clock"]["start_verdict"], "cannot tell")
        for p in rep["parts"]:
            self.assertEqual(p["start"]["verdict"], "cannot tell")
            self.assertEqual(p["start"]["why"], "clock offset unknown for n1, n2 (no clock "
                             "offset measured (no launcher manifest): a node's own NTP flag and "
                             "maxerror are its word, not a measurement)")
        self.assertNotIn("held in", text.replace("held in 0", ""))
        self.assertEqual(text.count("to judge the start, launch with stagebench-cluster"), 1)
        self.assertEqual({r["start_verdict"] for r in rows if r["part"] != "sum"},
                         {"cannot tell"})
        rule = rules_of(rep)["the expected nodes known"]
        self.assertFalse(rule["ok"])
        self.assertIn("no launcher manifest and no --expect", rule["evidence"])
        # with --expect the nodes are known; the start still cannot be told
        _rc, _t, rep, _r = self.collect("--expect", "n[1-2]")
        self.assertTrue(rules_of(rep)["the expected nodes known"]["ok"])
        self.assertEqual(rep["clock"]["start_verdict"], "cannot tell")


class Replicas(Case):
    def test_second_run_on_the_first_runs_replicas(self):
        """n1 runs 1a twice on one directory: the second run keeps the first one's replica
        (prepared false): its origin, in the replica, names the first run; the second run alone
        is NOT VALID, the node and the run named."""
        stage = self.path("stage")
        os.makedirs(stage)
        first, second = self.path("first"), self.path("second")
        os.makedirs(first)
        os.makedirs(second)
        for out in (first, second):
            res = ct.run_nodes(["n1"], ["1a"], out, stage)
            self.assertEqual(res["n1"][1], 0, res["n1"][2])
        s1, s2 = load("n1", first), load("n1", second)
        self.assertTrue(s1["tests"][0]["prepared"])
        self.assertFalse(s2["tests"][0]["prepared"])
        origin = parts_of(s2)[0]["replica_origin"]
        self.assertEqual(origin, {"run_id": s1["run"]["run_id"], "repetition": 1})
        self.assertNotEqual(s2["run"]["run_id"], s1["run"]["run_id"])
        shutil.copy(os.path.join(second, "n1.json"), self.path("n1.json"))
        self.write("manifest.json", manifest(["n1"]))
        _rc, text, rep, _rows = self.collect()
        rule = rules_of(rep)["a replica created for every repetition of 1a, 1b, 2"]
        self.assertFalse(rule["ok"])
        self.assertEqual(rule["evidence"], "n1 1a rep 1 read a replica created for run %s rep 1"
                         % s1["run"]["run_id"])
        self.assertEqual(rep["validity"]["verdict"], "NOT VALID")
        self.assertIn("  [NO] a replica created for every repetition of 1a, 1b, 2: n1 1a rep 1 "
                      "read a replica created for run %s" % s1["run"]["run_id"], text)
        # the first run, on a replica it created: held
        os.unlink(self.path("n1.json"))
        shutil.copy(os.path.join(first, "n1.json"), self.path("n1.json"))
        _rc, _t, rep, _r = self.collect()
        self.assertTrue(rules_of(rep)["a replica created for every repetition of 1a, 1b, "
                                      "2"]["ok"])


class Measurements(Case):
    """The start verdict from measurements at every part (clock.measurements, built by hand
    around the real parts of GOOD, INTERVAL apart): the nodes released at T on their own
    clocks, so a node's true release is T less the offset the measurements give it."""

    def verdicts(self, clock):
        self.copy_good()
        self.write("manifest.json", manifest(NODES, clock))
        rc, text, rep, rows = self.collect()
        return rc, text, rep, {p["part"]: p["start"] for p in rep["parts"]}

    def assert_truth(self, st, part, offset_of):
        """The true spread within the printed spread and uncertainty: the nodes' releases (on
        this machine's one clock) less the offset the measurements give each at the part's
        start (offset_of(node, t))."""
        t = dict(PARTS)[part]
        lo, hi = [], []
        for n in NODES:
            r = parts_of(load(n), part)[0]["release_at_ns"]
            lo.append(r["min"] / 1e9 - offset_of(n, t))
            hi.append(r["max"] / 1e9 - offset_of(n, t))
        self.assertLessEqual(abs(st["spread_s"] - (max(hi) - min(lo))),
                             st["uncertainty_s"] + 1e-6, st)

    def test_fast_clock_interpolated(self):
        """n2's clock runs fast (2%, far beyond a quartz's drift, as libfaketime makes it): its
        offset goes from 0.9 s to 1.06 s over the parts. Each part's verdict comes from the
        offset next to it: held while it is under 1 s, NOT held after; no step named."""
        t0 = PARTS[0][1]

        def offset(n, t):
            return 0.9 + 0.02 * (t - t0) if n == "n2" else 0.0

        _rc, text, rep, st = self.verdicts(every_part(offset))
        self.assertEqual(rep["clock"]["offsets"]["steps"], [])
        self.assertAlmostEqual(rep["clock"]["offsets"]["nodes"]["n2"]["rate_ppm"], 20000, 0)
        for part, t in PARTS:
            truth = offset("n2", t)
            self.assert_truth(st[part], part, offset)
            self.assertEqual(st[part]["verdict"], "held" if truth < 0.999 else "NOT held",
                             (part, truth, st[part]))
            self.assertEqual(st[part]["steps"], [])
            self.assertIn("interpolated between the measurements before %s rep 1 and after %s "
                          "rep 1" % (part, part), st[part]["offsets_from"])
        self.assertIn("NOT held", [st[p]["verdict"] for p, _t in PARTS])
        self.assertIn("held", [st[p]["verdict"] for p, _t in PARTS])

    def test_step_that_reverts_is_named_with_its_part(self):
        """n2's clock steps +1.5 s between 1a and 1b and back between 1b and 2a: 1b NOT held
        naming n2 alone (n1 and n3 are healthy), the other parts held; both steps named, hitting
        no part's start."""
        t1b = dict(PARTS)["1b"]

        def offset(n, t):
            return 1.5 if n == "n2" and t1b - 1 < t < t1b + 1.5 else 0.0

        _rc, text, rep, st = self.verdicts(every_part(offset))
        for part, _t in PARTS:
            self.assertEqual(st[part]["verdict"], "NOT held" if part == "1b" else "held",
                             st[part])
        self.assertEqual([o["node"] for o in st["1b"]["nodes_out"]], ["n2"])
        self.assertAlmostEqual(st["1b"]["nodes_out"][0]["by_s"], -1.5, delta=0.01)
        self.assert_truth(st["1b"], "1b", offset)
        steps = rep["clock"]["offsets"]["steps"]
        self.assertEqual([(s["node"], round(s["step_s"], 3), s["between"], s["parts"])
                          for s in steps],
                         [("n2", 1.5, "between the measurements after 1a rep 1 and before 1b "
                                      "rep 1", []),
                          ("n2", -1.5, "between the measurements after 1b rep 1 and before 2a "
                                       "rep 1", [])])
        self.assertIn("  n2: its clock stepped by +1.500 s between the measurements after 1a "
                      "rep 1 and before 1b rep 1, hitting no part's start", text)

    def test_step_that_stays_hits_its_part(self):
        """n2's clock steps +1.5 s between the measurements before and after 2b and stays: the
        step is named with 2b, whose offset is only known to be on one side of it or the other
        (cannot tell, n2 named as too uncertain); 2c after it NOT held; before it held."""
        t2b = dict(PARTS)["2b"]

        def offset(n, t):
            return 1.5 if n == "n2" and t > t2b else 0.0

        _rc, text, rep, st = self.verdicts(every_part(offset))
        self.assertEqual({p: st[p]["verdict"] for p, _t in PARTS},
                         {"1a": "held", "1b": "held", "2a": "held", "2b": "cannot tell",
                          "2c": "NOT held"})
        self.assertEqual([(s["node"], s["between"]) for s in st["2b"]["steps"]],
                         [("n2", "between the measurements before 2b rep 1 and after 2b rep 1")])
        self.assertIn("too uncertain: n2", st["2b"]["why"])
        steps = rep["clock"]["offsets"]["steps"]
        self.assertEqual([(s["node"], s["parts"]) for s in steps], [("n2", ["2b rep 1"])])
        self.assertIn("hitting 2b rep 1", text)
        self.assertEqual([o["node"] for o in st["2c"]["nodes_out"]], ["n2"])

    def test_missing_or_uncertain_offsets_cannot_tell(self):
        """n3 never measured (the launcher says why): every part cannot tell, naming n3 and
        the reason; then n3 measured only to +- 0.6 s (held: the others are exact, so the true
        spread is 0.6 s at most) and to +- 1.2 s: cannot tell, n3 too uncertain."""
        _rc, _t, _rep, st = self.verdicts(every_part(lambda n, t: 0.0, skip=("n3",)))
        for part, _t in PARTS:
            self.assertEqual(st[part]["verdict"], "cannot tell")
            self.assertIn("n3 (offset not measured by the launcher: no answer within "
                          "--info-timeout 30 s)", st[part]["why"])
            self.assertEqual([o["node"] for o in st[part]["nodes_out"]], ["n3"])
        for unc, want in ((0.6, "held"), (1.2, "cannot tell")):
            clock = every_part(lambda n, t: 0.0)
            for m in clock["measurements"]:
                m["nodes"]["n3"]["uncertainty_s"] = unc
            _rc, _t, _rep, st = self.verdicts(clock)
            for part, _t in PARTS:
                self.assertEqual(st[part]["verdict"], want, st[part])
                if want != "held":
                    self.assertIn("too uncertain: n3", st[part]["why"])
                    self.assertEqual([o["node"] for o in st[part]["nodes_out"]], ["n3"])

    def test_two_nodes_not_held_names_only_the_one_off(self):
        """Two nodes, n2's clock measured 1.5 s ahead before the run: NOT held in every part,
        naming n2 alone (the reference is the median of the launch host's T and the nodes':
        n1 is on T)."""
        t0 = PARTS[0][1] - 1.0
        self.copy_good(nodes=["n1", "n2"])
        self.write("manifest.json", manifest(["n1", "n2"], {
            "method": "exchange", "samples": 8,
            "start": measured({"n1": 0.0, "n2": 1.5}, t0), "end": {}}))
        rc, text, rep, _rows = self.collect()
        self.assertEqual(rc, 1, text)
        for p in rep["parts"]:
            self.assertEqual(p["start"]["verdict"], "NOT held")
            self.assertEqual([o["node"] for o in p["start"]["nodes_out"]], ["n2"], p["start"])
            self.assertIn("before the cluster's reference", p["start"]["nodes_out"][0]["why"])
        self.assertNotRegex(text, r"\n +n1 [+-]")


class ClockAhead(Case):
    def test_missed_start_shows_cause_and_offset(self):
        """n2 missed its start (a real run whose --start-at was past: exit 3, its summary says
        so) and the launcher found its clock 10 s ahead: the failure shows the cause and the
        offset in the text, the JSON and the CSV report."""
        stage = self.path("stage")
        os.makedirs(stage)
        res = ct.run_nodes(["n1"], ["1a"], self.dir, stage)
        self.assertEqual(res["n1"][1], 0, res["n1"][2])
        at = ct.load(res["n1"][0])["run"]["start_at"]
        p = subprocess.run([ct.BINARY, "run", "1a", "--scale", "tiny", "--dir", stage,
                            "--node", "n2", "--start-at", "%.6f" % (time.time() - 5),
                            "--out", self.path("n2.json"), "--no-progress"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           universal_newlines=True, env=ct.env(), timeout=60)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("start time missed by", p.stderr)
        fail = {"status": "failed", "rc": 3, "error": "start time missed", "reason":
                "start_missed", "cause": "clock ahead", "offset_s": 10.0,
                "uncertainty_s": 2e-5}
        self.write("manifest.json", manifest(["n1", "n2"], rounds=[
            {"kind": "run", "what": "1a rep 1", "test": "1a", "part": "1a", "rep": 1,
             "start_at": at, "nodes": "n[1-2]", "count": 2, "failed": {"n2": fail}}]))
        rc, text, rep, rows = self.collect()
        self.assertEqual(rc, 1, text)
        f = rep["parts"][0]["failed"]
        self.assertEqual([(x["node"], x["cause"], x["offset_s"]) for x in f],
                         [("n2", "clock ahead", 10.0)])
        self.assertIn("start time missed by", f[0]["error"])
        self.assertRegex(text, r"\n  1a   rep 1 n2: start time missed by [0-9.]+ s .*\(cause: "
                               r"clock ahead: its clock 10\.000 s ahead of the launch host\)")
        self.assertEqual([r["clock_ahead"] for r in rows if r["part"] == "1a"],
                         ["n2:+10.000000"])


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
