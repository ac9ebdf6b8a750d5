# SPDX-License-Identifier: MIT
"""The launcher's clock offsets: the exchange maths and protocol on hand-made samples and lines;
then end to end, the real `stagebench clock` over `clush -R exec` on simulated nodes whose wall
clocks libfaketime moves 2.5 s ahead and 3 s behind (CLOCK_MONOTONIC left alone): the manifest
holds both offsets within their stated uncertainty, the launcher names both beyond --max-offset,
--require-sync refuses to start (exit 3) naming both; without skew every offset is 0 within its
uncertainty; a node whose clock is far ahead misses its start and is reported as a clock problem,
the lead left as it was."""
import json
import os
import re
import subprocess
import unittest

import clustertest as ct


def cs():
    from stagebench import clocksync
    return clocksync


class ExchangeMaths(unittest.TestCase):
    """The maths and the launcher's side of the protocol (CONTRACT-10) on made-up answers; the
    real node answers in the end-to-end tests below."""

    def test_least_round_trip_is_kept(self):
        # (send, node, recv) in ns: the node's clock is 1 s ahead; the 2nd sample is tightest
        t = 1796000000 * 10**9
        samples = [(t, t + 10**9 + 900, t + 2000), (t + 5000, t + 10**9 + 5400, t + 5600),
                   (t + 9000, t + 10**9 + 9100, t + 19000)]
        off, rtt = cs().best_sample(samples)
        self.assertEqual(rtt, 600e-9)
        self.assertAlmostEqual(off, 1.0 + 100e-9, delta=1e-12)  # node 5400 vs midpoint 5300
        self.assertIsNone(cs().best_sample([]))
        self.assertIsNone(cs().best_sample([(t + 10, t, t)]))  # received before sent: refused
        e = cs().entry(off, rtt, 50e-9, {"ntp_synchronized": False, "maxerror_us": 16000000},
                       1796000000.5, 3)
        self.assertEqual(e["uncertainty_s"], 350e-9)  # rtt/2 + the clock read cost
        self.assertEqual((e["ntp_synchronized"], e["maxerror_us"]), (False, 16000000))

    def test_protocol(self):
        ex = cs().Exchange(3)
        head = ('{"schema":"stagebench.clock/1","node":"n1","ntp_synchronized":true,'
                '"maxerror_us":12,"esterror_us":3,"clocksource":"tsc","version":"0.1.0"}')
        tok = ex.on_line("n1", head, 0)
        sent = []
        while tok is not ex.EOF:
            word = tok.decode().strip()
            self.assertRegex(word, r"^[A-Za-z0-9]{1,32}$")
            self.assertTrue(tok.endswith(b"\n"))
            sent.append(word)
            t_send = ex._sent["n1"][1]
            tok = ex.on_line("n1", "%s %d" % (word, t_send + 500), t_send + 1000)
        self.assertEqual(len(sent), 3)
        self.assertEqual(len(set(sent)), 3)
        got, why = ex.results(["n1", "n2"], 0.0, 1.0)
        self.assertEqual(set(got), {"n1"})
        self.assertAlmostEqual(got["n1"]["offset_s"], 0.0, delta=1e-9)
        self.assertEqual(got["n1"]["maxerror_us"], 12)
        self.assertIn("no `stagebench clock` header", why["n2"])
        # a banner before the header is passed over; a JSON object of another kind, a wrong
        # token, endless lines without a header: not measured, and the node's stdin closed
        ex = cs().Exchange(1)
        self.assertIsNone(ex.on_line("c", "Welcome to node c", 0))
        self.assertIsNotNone(ex.on_line("c", head, 0))
        self.assertIs(ex.on_line("a", '{"schema":"stagebench.info/1"}', 0), ex.EOF)
        ex.on_line("b", head, 0)
        self.assertIs(ex.on_line("b", "zz 123", 5), ex.EOF)
        for _ in range(cs().JUNK_LINES):
            self.assertIsNone(ex.on_line("d", "stagebench: error: unknown command", 0))
        self.assertIs(ex.on_line("d", "stagebench: error: unknown command", 0), ex.EOF)
        got, why = ex.results(["a", "b", "c", "d"], 0.0, 1.0)
        self.assertEqual(got, {})
        self.assertIn("no stagebench.clock/1 header among its first lines", why["a"])
        self.assertIn("does not match the token", why["b"])
        self.assertIn("0 of 1 timestamp exchanges answered", why["c"])
        self.assertIn("no stagebench.clock/1 header", why["d"])

    def test_round_method_and_tolerance(self):
        infos = {"n1": {"clock": {"now": 1000.75, "ntp_synchronized": True,
                                  "maxerror_us": 5}},
                 "n2": {"clock": {}}}
        got = cs().from_round(infos, 1000.0, 1001.0, 0.0)
        self.assertEqual(set(got), {"n1"})
        self.assertAlmostEqual(got["n1"]["offset_s"], 0.25)
        self.assertAlmostEqual(got["n1"]["uncertainty_s"], 0.5 + 1e-6)  # half the round
        m = {"a": {"offset_s": 0.05, "uncertainty_s": 0.06},
             "b": {"offset_s": -0.02, "uncertainty_s": 0.01},
             "c": {"offset_s": -2.0, "uncertainty_s": 0.001}}
        self.assertEqual(cs().out_of_tolerance(m, 0.1), ["c", "a"])
        self.assertEqual(cs().describe(m["c"]), "2.000 s behind this host (+- 1.00 ms)")


class Skew(ct.TempDirCase):
    def sim(self, run_id, extra, tests=("1a",), nodes=3, timeout=240):
        return ct.run_script("stagebench-sim", [
            "--nodes", str(nodes), "--servers", "1", "--dir", self.path("stage"),
            "--results", self.path("results"), "--stagebench", ct.BINARY, "--scale", "tiny",
            "--run-id", run_id, "--no-report"] + list(extra) + list(tests), timeout=timeout)

    def manifest(self, run_id):
        return ct.load(self.path("results", run_id, "manifest.json"))

    def assert_within(self, entry, true_offset, what, bound=0.5):
        """The measured offset within its stated uncertainty of the true one, and the
        uncertainty under bound: 0.5 s for the exchange, a bound that tells 1 s apart."""
        self.assertLessEqual(abs(entry["offset_s"] - true_offset), entry["uncertainty_s"],
                             "%s: offset %r, uncertainty %r, true %r" % (
                                 what, entry["offset_s"], entry["uncertainty_s"], true_offset))
        self.assertGreater(entry["uncertainty_s"], 0)
        self.assertLess(entry["uncertainty_s"], bound, what)

    def assert_warned(self, text, clock, skew):
        """The nodes named in the warnings, each with its direction and a value (printed to the
        ms) within its measured uncertainty of the true skew."""
        warned = {}
        for n, v, d in re.findall(r"warning: (node\d): clock ([\d.]+) s (ahead of|behind) this "
                                  r"host \(\+- [^)]*\): beyond --max-offset 0.1 s", text):
            warned.setdefault((n, d), []).append(float(v))
        want = {(n, "ahead of" if off > 0 else "behind") for n, off in skew.items() if off}
        self.assertEqual(set(warned), want, text)
        for (n, _d), values in warned.items():
            u = max(clock[w][n]["uncertainty_s"] for w in ("start", "end") if n in clock[w])
            for v in values:
                self.assertLessEqual(abs(v - abs(skew[n])), u + 0.0005, (n, v, text))

    def test_skewed_nodes_measured_and_named(self):
        skew = {"node1": 0.0, "node2": 2.5, "node3": -3.0}
        p = self.sim("skew", ["--lead", "10", "--clock-skew", "node2=+2.5",
                              "--clock-skew", "node3=-3"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        m = self.manifest("skew")
        self.assertEqual(m["schema"], "stagebench.manifest/2")
        c = m["clock"]
        this_ntp = json.loads(subprocess.check_output(
            [ct.BINARY, "info", "--format", "json"]))["clock"]["ntp_synchronized"]
        self.assertEqual((c["method"], c["samples"]), ("exchange", 8))
        self.assertEqual((c["unmeasured"], c["unmeasured_end"]), ([], []))
        for when in ("start", "end"):
            self.assertEqual(set(c[when]), set(skew))
            for n, off in skew.items():
                e = c[when][n]
                self.assert_within(e, off, "%s %s" % (when, n))
                self.assertIs(e["ntp_synchronized"], this_ntp)
                self.assertIsInstance(e["maxerror_us"], int)
        self.assertLess(c["start"]["node1"]["measured_at"], m["rounds"][-1]["start_at"])
        self.assertGreater(c["end"]["node1"]["measured_at"], m["rounds"][-1]["start_at"])
        self.assertEqual((m["max_offset_s"], m["require_sync"]), (0.1, False))
        self.assertTrue(m["launcher_build"].startswith(m["launcher_version"]))
        self.assert_warned(p.stderr, c, skew)
        # the skewed nodes ran: each released at T on its own clock, so really 2.5 s early
        # and 3 s late, which only the measured offsets reveal
        for n in skew:
            s = ct.load(self.path("results", "skew", "%s.1a.rep1.json" % n))
            self.assertEqual(s["status"], "ok")

    def test_require_sync_refuses_to_start(self):
        p = self.sim("refused", ["--require-sync", "--clock-skew", "node2=+2.5",
                                 "--clock-skew", "node3=-3"])
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        line = [ln for ln in p.stderr.splitlines() if "--require-sync" in ln]
        self.assertEqual(len(line), 1, p.stderr)
        named = dict((n, float(v)) for n, v in re.findall(r"(node\d) ([\d.]+) s ahead",
                                                          line[0]))
        named.update((n, -float(v)) for n, v in re.findall(r"(node\d) ([\d.]+) s behind",
                                                           line[0]))
        self.assertEqual(set(named), {"node2", "node3"}, line[0])
        clock = self.manifest("refused")["clock"]["start"]
        for n, true in (("node2", 2.5), ("node3", -3.0)):
            self.assertLessEqual(abs(named[n] - true), clock[n]["uncertainty_s"] + 0.0005,
                                 line[0])
        self.assertNotIn("node1", line[0])
        m = self.manifest("refused")
        self.assertTrue(m["require_sync"])
        self.assertEqual([r["kind"] for r in m["rounds"]], ["info"])
        self.assertEqual([f for f in os.listdir(self.path("results", "refused"))
                          if f.startswith("node")], [])

    def test_many_nodes_out_of_tolerance_are_folded(self):
        """Ten nodes named one a line, the farthest first; the rest folded into a node set, in
        the warnings and in --require-sync's refusal."""
        skews = ["--clock-skew=node%d=+%g" % (i, 0.2 + 0.1 * i) for i in range(1, 13)]
        p = self.sim("many", ["--require-sync"] + skews, nodes=12)
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        named = re.findall(r"warning: (node\d+): clock [\d.]+ s ahead of this host", p.stderr)
        self.assertEqual(named, ["node%d" % i for i in range(12, 2, -1)])
        self.assertIn("warning: 2 more nodes beyond --max-offset 0.1 s: node[1-2] (see "
                      "manifest.json)", p.stderr)
        err = [ln for ln in p.stderr.splitlines() if "--require-sync" in ln][0]
        self.assertTrue(err.endswith("; and 2 more: node[1-2]"), err)
        self.assertEqual(len(self.manifest("many")["clock"]["start"]), 12)

    def test_no_skew_is_zero_within_uncertainty(self):
        p = self.sim("same", ["--require-sync"], nodes=2)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        c = self.manifest("same")["clock"]
        for when in ("start", "end"):
            for n in ("node1", "node2"):
                self.assert_within(c[when][n], 0.0, "%s %s" % (when, n))
        self.assertNotIn("beyond --max-offset", p.stderr)

    def test_round_method_through_pdsh(self):
        """pdsh cannot converse with one node at a time: the offsets come from the info round,
        bounded by its duration, still within their uncertainty of the true skew."""
        p = self.sim("pdsh", ["--launcher", "pdsh", "--lead", "10", "--clock-skew",
                              "node2=+2.5"], nodes=2)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        c = self.manifest("pdsh")["clock"]
        self.assertEqual((c["method"], c["samples"]), ("round", 1))
        # the one-shot bound is the round's duration, which grows with the machine's load:
        # held under half the skew, it still tells the skewed node from the other
        for when in ("start", "end"):
            self.assert_within(c[when]["node1"], 0.0, "%s node1" % when, bound=1.25)
            self.assert_within(c[when]["node2"], 2.5, "%s node2" % when, bound=1.25)
        # the warning's figure is the measured offset (2.5 s give or take the bound)
        self.assertRegex(p.stderr, r"warning: node2: clock [0-9.]+ s ahead of this host")

    def test_ahead_clock_missed_start_is_a_clock_problem(self):
        # 20 s ahead: its clock reads past T whatever the lead the launch time asks for
        p = self.sim("ahead", ["--clock-skew", "node2=+20"], tests=("4a", "4b"), nodes=2)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("node2 missed the start: a clock problem, not a short lead: its clock is "
                      "20.000 s ahead of this host", p.stderr)
        self.assertNotIn("lead raised", p.stderr)
        runs = [r for r in self.manifest("ahead")["rounds"] if r["kind"] == "run"]
        self.assertEqual([r["part"] for r in runs], ["4a", "4b"])
        self.assertEqual(runs[0]["lead_s"], runs[1]["lead_s"])  # not doubled
        for r in runs:
            f = r["failed"]["node2"]
            self.assertIn("start time missed", f["error"])
            self.assertEqual(f["cause"], "clock ahead")
            self.assertAlmostEqual(f["offset_s"], 20.0, delta=f["uncertainty_s"])
            self.assertNotIn("node1", r["failed"])


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
