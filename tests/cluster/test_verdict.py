# SPDX-License-Identifier: MIT
"""The collector's verdicts on summaries written by the real binary: the start from true
instants (offsets measured through `stagebench clock`, nodes skewed with libfaketime), clock
steps, late nodes and older node/1 summaries; residency and the slowest-nodes blame; rates with
their units and 1a's first pass; the server drop; the spec validity. Where a case needs what
this machine cannot make (a node that read its own cache, a spec-scale run), a real summary is
edited and the edit is said."""
import copy
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import clustertest as ct

NODES = ["n1", "n2", "n3"]
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"


def setUpModule():
    global BASE, GOOD
    BASE = tempfile.mkdtemp(prefix="stagebench-verdict-test-")
    try:
        GOOD = os.path.join(BASE, "good")
        os.makedirs(GOOD)
        # three nodes on one grid (--interval), two repetitions: 1a, 1b (recreated each
        # repetition) and 3a (not recreated)
        res = run_nodes(NODES, ["1a", "1b", "3a", "--repeat", "2", "--interval", "2"], GOOD,
                        os.path.join(BASE, "stage"), start_in=3.0)
        for n, (rc, err) in res.items():
            assert rc == 0, "%s: exit %d: %s" % (n, rc, err)
    except BaseException:
        shutil.rmtree(BASE, True)
        raise


def tearDownModule():
    shutil.rmtree(BASE, True)


_runtime = []


def preload(lib):
    """LD_PRELOAD of lib after the sanitizer runtime the binary links (ASan, TSan), which must
    come first."""
    if not _runtime:
        out = subprocess.run(["ldd", ct.BINARY], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
        m = re.search(r"^\s*(lib[at]san\.so[.\d]*) => (\S+)", out, re.M)
        _runtime.append(m.group(2) if m else None)
    return ":".join(x for x in (_runtime[0], lib) if x)


def faketime_env(skew):
    """Only CLOCK_REALTIME skewed by skew seconds (monotonic durations stay true; the
    variable's name changed between libfaketime versions, so both)."""
    return {"LD_PRELOAD": preload(FAKETIME), "FAKETIME": "%+gs" % skew if skew else "+0",
            "DONT_FAKE_MONOTONIC": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def shim_env(rule):
    """The fault shim (tests/shim/faultshim.c, built beside the binary) with one rule."""
    shim = os.environ.get("STAGEBENCH_FAULTSHIM") or os.path.join(
        os.path.dirname(ct.BINARY), "tests", "shim", "faultshim.so")
    assert os.path.exists(shim), "the fault shim is built with the tests: %s" % shim
    return {"LD_PRELOAD": preload(shim), "FAULTSHIM": rule}


def run_nodes(nodes, args, outdir, stage, start_in, skews=None, envs=None):
    """`stagebench run ARGS` as several named nodes at one start instant of this machine's
    clock, each under its own wall-clock skew (or environment); {node: (exit status,
    stderr)}."""
    os.makedirs(stage, exist_ok=True)
    at = time.time() + start_in
    procs = {}
    for n in nodes:
        env = ct.env()
        if skews and skews.get(n):
            env.update(faketime_env(skews[n]))
        env.update((envs or {}).get(n, {}))
        cmd = [ct.BINARY, "run"] + list(args) + [
            "--scale", "tiny", "--dir", stage, "--node", n, "--start-at", "%.6f" % at,
            "--out", os.path.join(outdir, "%s.json" % n), "--no-progress"]
        procs[n] = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    env=env)
    out = {}
    for n, p in procs.items():
        _, err = p.communicate(timeout=180)
        out[n] = (p.returncode, err.decode())
    return out


def measure(node, skew=None, exchanges=5):
    """A node's wall-clock offset against this host through `stagebench clock`, as the
    launcher measures it: timestamp exchanges, the least round trip kept, the bound half of
    it (manifest/2's clock.start entry)."""
    env = ct.env()
    if skew:
        env.update(faketime_env(skew))
    p = subprocess.Popen([ct.BINARY, "clock", "--node", node], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env, universal_newlines=True)
    try:
        hello = json.loads(p.stdout.readline())
        best = None
        for i in range(exchanges):
            token = "t%d" % i
            t0 = time.time()
            p.stdin.write(token + "\n")
            p.stdin.flush()
            got, ns = p.stdout.readline().split()
            t1 = time.time()
            assert got == token, (got, token)
            rtt = t1 - t0
            if best is None or rtt < best[1]:
                best = (int(ns) / 1e9 - (t0 + t1) / 2, rtt)
        p.stdin.close()
        assert p.wait(timeout=30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
    return {"offset_s": best[0], "uncertainty_s": best[1] / 2, "rtt_s": best[1],
            "ntp_synchronized": hello["ntp_synchronized"], "maxerror_us": hello["maxerror_us"],
            "measured_at": time.time()}


def manifest(nodes, start, end=None, **extra):
    m = {"schema": "stagebench.manifest/2", "run_id": "r1", "nodes": nodes,
         "clock": {"method": "exchange", "samples": 5, "start": start, "end": end or {},
                   "unmeasured": [n for n in nodes if n not in start]},
         "max_offset_s": 0.1, "require_sync": False, "server_drop": None}
    m.update(extra)
    return m


def zero_offsets(nodes, unc=0.001):
    return {n: {"offset_s": 0.0, "uncertainty_s": unc} for n in nodes}


def parts_of(summary, name=None):
    return [p for t in summary["tests"] for p in t["parts"] if name in (None, p["part"])]


class Case(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="verdict-", dir=BASE)
        self.addCleanup(shutil.rmtree, self.dir, True)

    def summary(self, node):
        return ct.load(os.path.join(GOOD, node + ".json"))

    def write(self, name, obj):
        with open(os.path.join(self.dir, name), "w") as f:
            json.dump(obj, f)

    def write_get(self, name, obj):
        self.write(name, obj)
        return os.path.join(self.dir, name)

    def copy_good(self, **edited):
        for n in NODES:
            self.write(n + ".json", edited.get(n) or self.summary(n))
        return self.dir

    def collect(self, **kw):
        return ct.report_of([self.dir], **kw)

    def cli(self, *args):
        p = ct.run_script("stagebench-collect", [self.dir] + list(args))
        return p

    def run_1a_and_collect(self, offsets, start_in, **how):
        """`stagebench run 1a` as the three nodes (skews= or envs= as run_nodes takes them),
        each exiting 0; then, with the manifest of the offsets measured, the collector's JSON
        report, which must come with exit status 1."""
        stage = os.path.join(self.dir, "stage")
        res = run_nodes(NODES, ["1a"], self.dir, stage, start_in=start_in, **how)
        for n, (rc, err) in res.items():
            self.assertEqual(rc, 0, "%s: %s" % (n, err))
        shutil.rmtree(stage)
        self.write("manifest.json", manifest(NODES, offsets))
        p = self.cli("--format", "json")
        self.assertEqual(p.returncode, 1, p.stderr)
        return json.loads(p.stdout)


class StartVerdict(Case):
    def test_measured_offsets_held(self):
        """Offsets measured through `stagebench clock` on this machine: held, exit 0; the
        text's verdict line and the JSON agree."""
        self.copy_good()
        self.write("manifest.json", manifest(NODES, {n: measure(n) for n in NODES}))
        p = self.cli("--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = json.loads(p.stdout)
        self.assertEqual(rep["clock"]["start_verdict"], "held")
        self.assertTrue(rep["clock"]["start_synchronized"])
        for part in rep["parts"]:
            st = part["start"]
            self.assertEqual(st["verdict"], "held", st)
            self.assertEqual(st["nodes_out"], [])
            self.assertLess(st["spread_s"] + st["uncertainty_s"], 1.0)
            self.assertIsNotNone(st["io_spread_s"])
            self.assertTrue(part["start_synchronized"])
        text = self.cli().stdout
        self.assertIn("start synchronization: held in every part", text)
        self.assertNotIn("NOT held", text)

    def test_faketime_skewed_nodes_not_held(self):
        """One node's wall clock 2.5 s ahead, another's 3 s behind (libfaketime): both named
        with the offset the measurement found, within its uncertainty; exit 1."""
        self.assertTrue(os.path.exists(FAKETIME), "libfaketime (Debian faketime) is needed")
        skews = {"n1": 0, "n2": 2.5, "n3": -3.0}
        offsets = {n: measure(n, skews[n]) for n in NODES}
        for n in NODES:
            self.assertLess(abs(offsets[n]["offset_s"] - skews[n]), 0.2, offsets[n])
        rep = self.run_1a_and_collect(offsets, 6.0, skews=skews)
        st = rep["parts"][0]["start"]
        self.assertEqual(st["verdict"], "NOT held")
        out = {o["node"]: o for o in st["nodes_out"]}
        self.assertEqual(sorted(out), ["n2", "n3"])
        # the node 2.5 s ahead released 2.5 s early in true time, the one behind 3 s late
        for n in ("n2", "n3"):
            self.assertLess(abs(out[n]["by_s"] + skews[n]), 0.2 + offsets[n]["uncertainty_s"],
                            out[n])
        self.assertGreater(st["spread_s"] - st["uncertainty_s"], 5.0)
        text = self.cli().stdout
        self.assertIn("start synchronization: NOT held", text)
        self.assertIn("status: FAILED (start not synchronized)", text)
        from stagebench import plot
        self.assertIn("start NOT held (spread 5.", plot._title(ct.report_of([self.dir]).model))
        for n in ("n2", "n3"):
            self.assertRegex(text, r"\n +%s [+-]\d\.\d+ s: released" % n)

    def test_offsets_unknown_cannot_tell(self):
        """No measurement for n3 (listed as unmeasured): cannot tell, naming n3; exit 0."""
        self.copy_good()
        self.write("manifest.json", manifest(NODES, zero_offsets(["n1", "n2"])))
        rep = self.collect()
        for p in rep["parts"]:
            self.assertEqual(p["start"]["verdict"], "cannot tell")
            self.assertIn("n3", p["start"]["why"])
            self.assertEqual([o["node"] for o in p["start"]["nodes_out"]], ["n3"])
            self.assertIsNone(p["start_synchronized"])
        self.assertEqual(rep["clock"]["start_verdict"], "cannot tell")
        self.assertEqual(rep["exit_code"], 0)
        self.assertIn("start synchronization: cannot tell", ct.report_text(rep))

    def test_too_uncertain_cannot_tell(self):
        self.copy_good()
        self.write("manifest.json", manifest(NODES, zero_offsets(NODES, unc=0.6)))
        rep = self.collect()
        for p in rep["parts"]:
            self.assertEqual(p["start"]["verdict"], "cannot tell")
            self.assertIn("straddles", p["start"]["why"])
            self.assertGreaterEqual(p["start"]["uncertainty_s"], 1.0)

    def test_end_offsets_show_drift(self):
        """A node whose offset moved by 1.2 s between the first and the last measurement: its
        true instants are known only within that: not held any more."""
        self.copy_good()
        end = zero_offsets(NODES)
        end["n2"]["offset_s"] = 1.2
        self.write("manifest.json", manifest(NODES, zero_offsets(NODES), end))
        rep = self.collect()
        self.assertEqual(rep["clock"]["offsets"]["nodes"]["n2"]["drift_s"], 1.2)
        self.assertEqual({p["start"]["verdict"] for p in rep["parts"]}, {"cannot tell"})

    def test_stepped_node_is_named(self):
        """n2's wall clock stepped +1 s while waiting for 1a rep 1 (edited: the real step
        needs the fault shim): NOT held naming n2, and its warning is in the report."""
        s = self.summary("n2")
        part = parts_of(s, "1a")[0]
        part["clock_step_s"] = part["clock_step_total_s"] = 1.0
        w = "1a: the wall clock stepped by +1.000 s while waiting for the start"
        part["warnings"].append(w)
        s["warnings"].append(w)
        self.copy_good(n2=s)
        self.write("manifest.json", manifest(NODES, zero_offsets(NODES)))
        rep = self.collect()
        st = rep["parts"][0]["start"]
        self.assertEqual((rep["parts"][0]["part"], st["verdict"]), ("1a", "NOT held"))
        self.assertEqual([o["node"] for o in st["nodes_out"]], ["n2"])
        self.assertIn("stepped by +1.000 s", st["nodes_out"][0]["why"])
        self.assertEqual(rep["exit_code"], 1)
        self.assertEqual([x for x in rep["warnings"] if x["warning"] == w],
                         [{"nodes": ["n2"], "test": "1a", "repetition": 1, "part": "1a",
                           "warning": w}])
        if not any(self.summary(n)["clock"]["ntp_synchronized"] for n in NODES):
            # the same warning of every node is one entry naming them all
            unsynced = [x for x in rep["warnings"] if x["warning"].startswith("clock not NTP")]
            self.assertEqual([x["nodes"] for x in unsynced], [NODES])
            self.assertIn("\n  n[1-3]: clock not NTP-synchronized", ct.report_text(rep))
        text = ct.report_text(rep)
        self.assertIn("\nwarnings from the nodes:\n", text)
        self.assertIn("\n  1a rep 1 n2: %s\n" % w, text)

    def test_real_step_in_the_wait_is_named(self):
        """n2's wall clock really steps +1.5 s while it waits for T (the fault shim steps what
        CLOCK_REALTIME reads, 5 s after it started): it released 1.5 s early in true time,
        which its offset measured before and the step it recorded tell; NOT held naming n2,
        its own warning in the report; exit 1."""
        offsets = {n: measure(n) for n in NODES}
        # the step lands in the wait whenever the set-up takes less than 5 s (a loaded machine)
        rep = self.run_1a_and_collect(offsets, 10.0,
                                      envs={"n2": shim_env("clock:step=+1.5@after=5")})
        st = rep["parts"][0]["start"]
        self.assertEqual(st["verdict"], "NOT held")
        self.assertEqual([o["node"] for o in st["nodes_out"]], ["n2"])
        # released before the others by the step (the median is one of the others)
        self.assertAlmostEqual(st["nodes_out"][0]["by_s"], -1.5, delta=0.05)
        self.assertIn("before the cluster's reference", st["nodes_out"][0]["why"])
        self.assertIn("its wall clock stepped by +1.5", st["nodes_out"][0]["why"])
        self.assertGreater(st["spread_s"] - st["uncertainty_s"], 1.4)
        self.assertTrue([w for w in rep["warnings"] if w["nodes"] == ["n2"] and
                         w["part"] == "1a" and "stepped by +1.5" in w["warning"]],
                        rep["warnings"])

    def test_late_node_is_named(self):
        s = self.summary("n3")
        part = parts_of(s, "1b")[0]
        part["late"], part["late_by_s"] = True, 1.25
        self.copy_good(n3=s)
        self.write("manifest.json", manifest(NODES, zero_offsets(NODES)))
        rep = self.collect()
        p = [x for x in rep["parts"] if x["part"] == "1b"][0]
        self.assertEqual(p["start"]["verdict"], "NOT held")
        self.assertEqual([(o["node"], o["by_s"]) for o in p["start"]["nodes_out"]],
                         [("n3", 1.25)])
        self.assertIn("n3", p["late"])  # others may be late by milliseconds on a busy machine

    def test_ntp_flags_without_manifest_cannot_tell(self):
        """Without a launcher manifest, nodes that say their clocks are NTP-synchronized (with
        a small maxerror; edited: this machine has no NTP) prove nothing: cannot tell, with the
        reason and how to get a verdict, exit 0; never held."""
        edited = {}
        for n in NODES:
            s = self.summary(n)
            s["clock"]["ntp_synchronized"], s["clock"]["maxerror_us"] = True, 20000
            edited[n] = s
        self.copy_good(**edited)
        p = self.cli("--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = json.loads(p.stdout)
        self.assertEqual(rep["clock"]["start_verdict"], "cannot tell")
        self.assertIsNone(rep["clock"]["offsets"]["source"])
        self.assertEqual(rep["clock"]["offsets"]["nodes"], {})
        for p in rep["parts"]:
            self.assertEqual(p["start"]["verdict"], "cannot tell")
            self.assertIsNone(p["start_synchronized"])
            self.assertIn("no launcher manifest", p["start"]["why"])
        text = self.cli().stdout
        self.assertNotIn("held in every part", text)
        self.assertIn("start synchronization: cannot tell", text)
        self.assertEqual(len(re.findall(r"\n  to judge the start, launch with stagebench-cluster, "
                                        r"or measure each node with `stagebench clock`", text)),
                         1, text)

    def test_no_summary_claims_nothing(self):
        self.write("manifest.json", manifest(NODES, zero_offsets(NODES)))
        rep = self.collect()
        text = ct.report_text(rep)
        self.assertNotIn("every node NTP-synchronized", text)
        self.assertIn("nothing is known of the nodes' clocks", text)
        self.assertIsNone(rep["clock"]["start_verdict"])
        self.assertEqual(rep["exit_code"], 1)

    def test_node1_summaries_are_never_held(self):
        """Summaries of older nodes (stagebench.node/1, without integer instants, steps or
        residency) are read; their start is 'cannot tell', or NOT held when their own
        release instants are a second apart."""
        old = {}
        for n in NODES:
            s = to_node1(self.summary(n))
            old[n] = s
        self.copy_good(**old)
        self.write("manifest.json", manifest(NODES, zero_offsets(NODES)))
        rep = self.collect()
        self.assertEqual(rep["invalid"], [])
        self.assertEqual(len(rep["parts"]), 6)
        for p in rep["parts"]:
            self.assertEqual(p["nodes_ok"], 3)
            self.assertEqual(p["start"]["verdict"], "cannot tell")
            self.assertIn("stagebench.node/1", p["start"]["why"])
            self.assertEqual(p["residency"]["unknown"], NODES)
        self.assertEqual(rep["exit_code"], 0)
        rules = {r["rule"]: r for r in rep["validity"]["rules"]}
        self.assertIsNone(rules["caches cold as expected"]["ok"])
        # no digest of the binary, no cores, no replica origin: not judged, so never VALID
        for rule in ("the same binary on every node", "one job per core on every node",
                     "a replica created for every repetition of 1a, 1b, 2"):
            self.assertIsNone(rules[rule]["ok"], rules[rule])
            self.assertIn("an older stagebench", rules[rule]["evidence"])
        self.assertEqual(rep["validity"]["verdict"], "NOT VALID")
        s = old["n2"]
        for th in parts_of(s, "1a")[0]["per_thread"]:
            th["release_at"] += 1.5
        self.write("n2.json", s)
        p = self.collect()["parts"][0]
        self.assertEqual((p["part"], p["start"]["verdict"]), ("1a", "NOT held"))
        self.assertEqual([o["node"] for o in p["start"]["nodes_out"]], ["n2"])


class Residency(Case):
    def test_warm_node_left_out_of_the_blame(self):
        """n1 started 1a rep 1 with 95% of the replica in its own cache where cold was
        expected, and n3's residency of 1b rep 1 could not be measured (edited: the writer's
        drop makes a warm start rare here): n1 is named and left out of the slowest nodes,
        n3 is unknown, never 0%."""
        s1, s3 = self.summary("n1"), self.summary("n3")
        p1 = parts_of(s1, "1a")[0]
        p1["cache_residency"] = 0.95
        p3 = parts_of(s3, "1b")[0]
        p3["cache_residency"], p3["cache_residency_error"] = None, "mmap: No such device"
        self.copy_good(n1=s1, n3=s3)
        rep = self.collect()
        a = rep["parts"][0]
        self.assertEqual((a["part"], a["repetition"]), ("1a", 1))
        self.assertEqual(a["residency"]["warm_nodes"], ["n1"])
        self.assertEqual(a["residency"]["max"], 0.95)
        self.assertNotIn("n1", [x["node"] for x in a["slowest"]])
        others = sorted(parts_of(self.summary(n), "1a")[0]["node_time_s"] for n in ("n2", "n3"))
        med = (others[0] + others[1]) / 2
        self.assertEqual(a["slowest"][0]["node_time_s"], others[1])
        self.assertAlmostEqual(a["slowest"][0]["deviation"], others[1] / med - 1)
        # the cluster time is still every node's slowest
        self.assertEqual(a["cluster_time_s"], max(others + [p1["node_time_s"]]))
        b = rep["parts"][1]
        self.assertEqual(b["part"], "1b")
        self.assertEqual(b["residency"]["unknown"], ["n3"])
        self.assertEqual(b["residency"]["max"], 0)
        text = ct.report_text(rep)
        self.assertIn("  1a   rep 1: min 0%, median 0%, max 95%; read from its own cache: n1 "
                      "(left out of the slowest nodes)", text)
        self.assertIn("  1b   rep 1: min 0%, median 0%, max 0%; unknown on n3", text)
        rules = {r["rule"]: r for r in rep["validity"]["rules"]}
        self.assertFalse(rules["caches cold as expected"]["ok"])
        self.assertIn("n1 (1a rep 1)", rules["caches cold as expected"]["evidence"])

    def test_no_replica_is_not_unknown(self):
        """Test 4 writes new files and has no replica: its residency is not applicable, and
        neither listed as unknown nor held against the caches rule."""
        res = run_nodes(["n1"], ["4a"], self.dir, os.path.join(self.dir, "stage"),
                        start_in=2.0)
        self.assertEqual(res["n1"][0], 0, res)
        shutil.rmtree(os.path.join(self.dir, "stage"))
        rep = self.collect()
        r = rep["parts"][0]["residency"]
        self.assertEqual((r["applicable"], r["unknown"], r["min"]), (False, [], None))
        rules = {x["rule"]: x for x in rep["validity"]["rules"]}
        self.assertTrue(rules["caches cold as expected"]["ok"])
        self.assertNotIn("cache residency at release", ct.report_text(rep))


class Rates(Case):
    def test_units_and_first_pass(self):
        self.copy_good()
        rep = self.collect()
        sums = {n: self.summary(n) for n in NODES}
        for p in rep["parts"]:
            mine = [parts_of(sums[n], p["part"])[p["repetition"] - 1] for n in NODES]
            cluster = max(x["node_time_s"] for x in mine)
            self.assertEqual(p["cluster_time_s"], cluster)
            if p["part"] == "1b":
                self.assertIsNone(p["bandwidth_Bps"])
                self.assertEqual((p["rate"]["unit"], p["rate"]["counted"]),
                                 ("pages/s", "pages touched"))
                pages = sum(x["pages"] for x in mine)
                self.assertAlmostEqual(p["rate"]["value"], pages / cluster)
                self.assertEqual(p["rate"]["mapped_bytes"], sum(x["mapped_bytes"] for x in mine))
            else:
                self.assertEqual((p["rate"]["unit"], p["rate"]["counted"]), ("B/s", "bytes read"))
                self.assertAlmostEqual(p["bandwidth_Bps"], p["bytes"] / cluster)
            if p["part"] == "1a":
                fp = p["first_pass"]
                self.assertEqual(fp["first_pass_max_s"], max(x["first_pass_s"]["max"]
                                                             for x in mine))
                rest = sorted(x["rest_pass_median_s"]["median"] for x in mine)
                self.assertAlmostEqual(fp["rest_pass_median_s"], rest[1])
            else:
                self.assertIsNone(p["first_pass"])
        text = ct.report_text(rep)
        self.assertRegex(text, r"\n1b +1b +1 .* [0-9.]+ [kM]? ?pages/s ")
        self.assertRegex(text, r"\n  1a   rep 1: first pass \(from the server\) [0-9.]+ m?s at "
                               r"most, median [0-9.]+ [mu]?s; other passes")
        lines = ct.report_csv(rep).splitlines()
        head = lines[0].split(",")
        rows = [dict(zip(head, ln.split(","))) for ln in lines[1:]]
        b = [r for r in rows if r["part"] == "1b"][0]
        self.assertEqual((b["bandwidth_Bps"], b["rate_unit"], b["rate_counted"]),
                         ("", "pages/s", "pages touched"))
        self.assertEqual(b["rate"], b["pages_per_s"])
        a = [r for r in rows if r["part"] == "1a"][0]
        self.assertEqual(a["rate"], a["bandwidth_Bps"])
        self.assertNotEqual(a["first_pass_max_s"], "")
        self.assertEqual(a["start_verdict"], "cannot tell")
        self.assertEqual(len({len(ln.split(",")) for ln in lines}), 1)


_ALL = []


def all_dir():
    """Three nodes' summaries of every test of the spec (`run all` on one grid), run once, on
    first use."""
    if not _ALL:
        d = os.path.join(BASE, "all")
        os.makedirs(d)
        res = run_nodes(NODES, ["all", "--interval", "1.5"], d, os.path.join(BASE, "stage-all"),
                        start_in=3.0)
        for n, (rc, err) in res.items():
            assert rc == 0, "%s: exit %d: %s" % (n, rc, err)
        _ALL.append(d)
    return _ALL[0]


class Validity(Case):
    def spec_like(self, **change):
        """The real summaries of `run all` as a spec run would write them (edited: spec scale
        takes far longer than a test, this machine has no NTP, its load makes threads late,
        and its nodes share one page cache: a node that measured its residency after another
        had begun to read their one replica saw that one's pages, as two nodes of their own
        would not)."""
        out = {}
        for n in NODES:
            s = ct.load(os.path.join(all_dir(), n + ".json"))
            s["clock"]["ntp_synchronized"], s["clock"]["maxerror_us"] = True, 20000
            s["run"]["scale"] = "spec"
            for p in parts_of(s):
                p["late"], p["late_by_s"] = False, 0
                if p["status"] == "late":
                    p["status"] = "ok"
                if p.get("cache_expected") == "cold" and p.get("cache_residency"):
                    p["cache_residency"] = 0.0
            if n in change:
                change[n](s)
            out[n] = s
        self.copy_good(**out)
        self.write("manifest.json", manifest(NODES, zero_offsets(NODES), run={"scale": "spec"}))
        return self.collect()

    def test_tiny_run_is_not_a_spec_run(self):
        self.copy_good()
        self.write("manifest.json", manifest(NODES, zero_offsets(NODES)))
        p = self.cli()
        self.assertIn("validity as a spec run: NOT VALID (not a spec run: scale tiny)", p.stdout)
        # not a spec run alone does not change the exit status
        self.assertEqual(p.returncode, 0, p.stdout)
        rep = json.loads(self.cli("--format", "json").stdout)
        va = rep["validity"]
        self.assertEqual((va["verdict"], va["spec_run"]), ("NOT VALID", False))
        rules = {r["rule"]: r for r in va["rules"]}
        self.assertEqual(rules["spec scale and no override"],
                         {"rule": "spec scale and no override", "ok": False,
                          "evidence": "not a spec run: scale tiny"})
        self.assertTrue(rules["a replica created for every repetition of 1a, 1b, 2"]["ok"])
        self.assertEqual((rep["status"], rep["exit_code"]), ("ok", 0))

    def test_valid_and_each_rule_failing(self):
        """Every rule held on a spec-like run of every test: VALID, each test VALID; then each
        rule failing alone (the nodes edited as a node breaking it would write them)."""
        rep = self.spec_like()
        va = rep["validity"]
        self.assertEqual(va["verdict"], "VALID", va)
        self.assertTrue(va["spec_run"])
        self.assertEqual([(r["rule"], r["ok"]) for r in va["rules"] if r["ok"] is not True],
                         [("server drop ran before 3", None)])
        self.assertEqual(va["not_run"], [])
        self.assertEqual([(t["test"], t["verdict"]) for t in va["tests"]],
                         [(t, "VALID") for t in ct.catalogue_all()])
        self.assertEqual(rep["exit_code"], 0)
        text = ct.report_text(rep)
        self.assertIn("validity as a spec run: VALID\n", text)
        self.assertIn("\n  test 1a   VALID\n", text)

        def override(s):
            s["run"]["overrides"] = ["count"]

        def other_binary(s):
            s["build"]["exe_sha256"] = "0" * 64

        def reuse(s):
            parts_of(s, "1a")[0]["replica_origin"] = {"run_id": "yesterday", "repetition": 1}

        def unsynced(s):
            s["clock"]["ntp_synchronized"] = False

        def one_core(s):
            s["cores"]["used"] = s["cores"]["allowed"] - 1

        cases = [("spec scale and no override", override, "overrides count on n2"),
                 ("the same binary on every node", other_binary,
                  "n2 ran binary 000000000000, not "),
                 ("a replica created for every repetition of 1a, 1b, 2", reuse,
                  "n2 1a rep 1 read a replica created for run yesterday rep 1"),
                 ("NTP synchronized on every node", unsynced, "not synchronized: n2"),
                 ("one job per core on every node", one_core, "n2 ran ")]
        for rule, fn, evidence in cases:
            rep = self.spec_like(n2=fn)
            va = rep["validity"]
            self.assertEqual(va["verdict"], "NOT VALID", rule)
            bad = [r for r in va["rules"] if r["ok"] is False]
            self.assertEqual([r["rule"] for r in bad], [rule])
            self.assertIn(evidence, bad[0]["evidence"])
            self.assertIn("  [NO] %s: " % rule, ct.report_text(rep))
            tests = {t["test"]: t for t in va["tests"]}
            self.assertIn(rule, tests["1a"]["failed"])
            if rule == "a replica created for every repetition of 1a, 1b, 2":
                # only the test whose replica was reused
                self.assertEqual([t for t, x in tests.items() if x["verdict"] != "VALID"],
                                 ["1a"])

    def test_server_drop(self):
        """The server drop "ran" only from what the manifest records of each run: its
        command, exit status 0 and duration; its output lines are said. A run without an exit
        status or a duration is not shown to have run."""
        drop = {"command": ["ssh", "stage1", "sync; echo 3 > /proc/sys/vm/drop_caches"],
                "where": "launcher", "runs": [
                    {"before": "3a", "repetition": 1, "status": "ok", "exit_code": 0,
                     "at": 1.0, "duration_s": 0.25, "output": "dropped",
                     "output_lines": ["dropped"]}]}
        self.copy_good()
        self.write("manifest.json", manifest(NODES, zero_offsets(NODES), server_drop=drop))
        rep = self.collect()
        sd = rep["server_drop"]
        self.assertEqual((sd["asked"], sd["ok"]), (True, False))
        self.assertEqual(sd["evidence"], "did not run before test 3 rep 2")
        drop["runs"].append({"before": "3a", "repetition": 2, "status": "failed",
                             "exit_code": 255, "at": 2.0, "duration_s": 0.1,
                             "output": "ssh: no route"})
        self.write("manifest.json", manifest(NODES, zero_offsets(NODES), server_drop=drop))
        sd = self.collect()["server_drop"]
        self.assertEqual(sd["evidence"], "not shown to have run before test 3 rep 2: exit 255")
        # "ok" alone is no evidence: no exit status, or no duration
        for missing in ("exit_code", "duration_s"):
            drop["runs"][1] = {"before": "3a", "repetition": 2, "status": "ok",
                               "exit_code": 0, "at": 2.0, "duration_s": 0.2}
            del drop["runs"][1][missing]
            self.write("manifest.json", manifest(NODES, zero_offsets(NODES), server_drop=drop))
            sd = self.collect()["server_drop"]
            self.assertFalse(sd["ok"], missing)
            self.assertIn("not shown to have run before test 3 rep 2: no ", sd["evidence"])
        drop["runs"][1] = {"before": "3a", "repetition": 2, "status": "ok", "exit_code": 0,
                           "at": 2.0, "duration_s": 0.5, "output": "done\nall dropped"}
        self.write("manifest.json", manifest(NODES, zero_offsets(NODES), server_drop=drop))
        rep = self.collect()
        self.assertEqual(rep["server_drop"]["ok"], True)
        rule = [r for r in rep["validity"]["rules"] if r["rule"].startswith("server drop")][0]
        self.assertEqual((rule["rule"], rule["ok"]), ("server drop ran before 3", True))
        self.assertIn("server cache drop before test 3: ran before test 3 in every repetition "
                      "(2): exit 0 after 250.00 ms, 500.00 ms; its output: done | all dropped "
                      "(ssh stage1 'sync; echo 3 > /proc/sys/vm/drop_caches')",
                      ct.report_text(rep))
        self.write("manifest.json", manifest(NODES, zero_offsets(NODES)))
        rule = [r for r in self.collect()["validity"]["rules"]
                if r["rule"].startswith("server drop")][0]
        self.assertIsNone(rule["ok"])
        self.assertIn("(informational)", rule["evidence"])


class SummaryFields(Case):
    """The node/2 fields the report reads, checked at the summary reader like the others: a
    wrong one is refused with its reason, never a traceback or a silent default."""

    def test_damaged_node2_fields(self):
        from stagebench import summaries as S

        def first(s):
            return parts_of(s, "1a")[0]

        cases = [
            (lambda s: first(s)["release_at_ns"].update(min=first(s)["release_at_ns"]["max"] + 1),
             "field tests[0].parts[0].release_at_ns.min is above its max"),
            (lambda s: first(s).update(release_at_ns={"min": 1}),
             "missing field tests[0].parts[0].release_at_ns.max"),
            (lambda s: first(s).update(first_io_at_ns={"min": 1.5, "max": 2}),
             "field tests[0].parts[0].first_io_at_ns.min is not a whole number"),
            (lambda s: first(s).update(cache_residency=1.5),
             "field tests[0].parts[0].cache_residency is above 1"),
            (lambda s: first(s).update(cache_residency="0"),
             "field tests[0].parts[0].cache_residency is not a number"),
            (lambda s: first(s).update(clock_step_s="1"),
             "field tests[0].parts[0].clock_step_s is not a number"),
            (lambda s: first(s).update(replica_changed="no"),
             "field tests[0].parts[0].replica_changed is not true or false"),
            (lambda s: first(s).update(warnings="late"),
             "field tests[0].parts[0].warnings is not a list"),
            (lambda s: first(s).update(first_pass_s={"min": 1, "max": 2}),
             "missing field tests[0].parts[0].first_pass_s.median"),
            (lambda s: s.update(build={"version": "0.1.0"}), "missing field build.id"),
            (lambda s: s["run"].update(overrides=[1]),
             "field run.overrides holds something that is not a parameter name"),
            (lambda s: s["clock"].update(maxerror_us=-1), "field clock.maxerror_us is negative"),
            (lambda s: s["build"].update(exe_sha256="xyz"),
             "field build.exe_sha256 is not a SHA-256 in hex"),
            (lambda s: first(s).update(replica_origin={"run_id": 5, "repetition": 1}),
             "field tests[0].parts[0].replica_origin.run_id is not a string"),
            (lambda s: first(s).update(replica_origin={"run_id": "a/b", "repetition": 1}),
             "field tests[0].parts[0].replica_origin.run_id is not a valid run id"),
            (lambda s: s["cores"].pop("used"), "missing field cores.used"),
            (lambda s: first(s)["per_thread"][0].update(ops="many"),
             "field tests[0].parts[0].per_thread[0].ops is not a whole number"),
        ]
        for i, (edit, why) in enumerate(cases):
            s = self.summary("n1")
            edit(s)
            self.write("bad%d.json" % i, s)
            r = S.read_summary(os.path.join(self.dir, "bad%d.json" % i))
            self.assertEqual(r["error"], why)
        # node/3's fields absent (node/2, the previous schema): read, unknown
        r = S.read_summary(self.write_get("node2.json", to_node2(self.summary("n1"))))
        self.assertIsNone(r["error"])
        self.assertEqual((r["exe_sha256"], r["cores"], r["run_id"]), (None, None, None))
        self.assertIsNone(r["entries"][0][3]["replica_origin"])
        # null where node/2 allows it: unknown, not refused
        s = self.summary("n1")
        first(s).update(first_io_at_ns=None, cache_residency=None, rest_pass_median_s=None)
        self.write("ok.json", s)
        r = S.read_summary(os.path.join(self.dir, "ok.json"))
        self.assertIsNone(r["error"])
        p = r["entries"][0][3]
        self.assertEqual((p["first_io_at_ns"], p["cache_residency"], p["rest_pass_median_s"]),
                         (None, None, None))


def to_node2(s):
    """A node/3 summary as the previous stagebench wrote it: node/2, without the binary's
    digest and what it was built from, the run id, the cores, each part's plan threads and the
    replica's origin."""
    s = copy.deepcopy(s)
    s["schema"] = "stagebench.node/2"
    for k in ("describe", "dirty", "source_sha256", "exe_sha256"):
        s["build"].pop(k, None)
    s["run"].pop("run_id", None)
    s.pop("cores", None)
    for p in parts_of(s):
        p.pop("threads", None)
        p.pop("replica_origin", None)
    return s


def to_node1(s):
    """A node/3 summary as an older node wrote it: node/1 without the fields node/2 and
    node/3 added."""
    s = to_node2(s)
    s["schema"] = "stagebench.node/1"
    for k in ("build", "warnings"):
        s.pop(k, None)
    s["run"].pop("overrides", None)
    for p in parts_of(s):
        for k in ("start_at_ns", "release_at_ns", "first_io_at_ns", "io_start_spread_s",
                  "late_by_s", "clock_step_total_s", "warnings", "cache_residency",
                  "cache_residency_error", "cache_dropped", "cache_expected",
                  "replica_changed", "mapped_bytes", "mapped_Bps", "first_pass_s",
                  "rest_pass_median_s", "generation", "kind", "counted", "rate_unit"):
            p.pop(k, None)
        for th in p["per_thread"]:
            for k in ("release_at_ns", "first_io_at_ns", "late_by_s", "first_pass_s",
                      "rest_pass_median_s"):
                th.pop(k, None)
    return s


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
