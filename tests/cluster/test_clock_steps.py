# SPDX-License-Identifier: MIT
"""Offsets measured next to every part, end to end: three simulated nodes (the launcher's exec
mode), one of them, node2, under libfaketime with its wall clock read from a file that changes
while the run goes, four repetitions of a part; the launcher measures every node's offset
before and after each part. A step that stays, a step that reverts (the ends of the run alone
say nothing of it) and a clock running fast: each part's start verdict comes from the offsets
measured next to it, the parts the skew hit NOT held with node2 (and only node2) named, the
others held; node2's measured offsets are the true ones within their printed uncertainty.

The steps are placed between measurements, deterministically: node2's wrapper counts its
`stagebench clock` commands (the launcher's measurements, in order) and, on the n-th, moves
node2's clock to the offset the test scheduled for it before the command reads it."""
import json
import os
import unittest

import clustertest as ct

REPS = 4
# the launcher's measurements in exec mode, in order: the start, then before and after each
# repetition, then the end: measurement i (from 1) is node2's i-th clock command
BEFORE = dict((rep, 2 * rep) for rep in range(1, REPS + 1))  # rep -> its "before" measurement


def faketime():
    from stagebench import sim
    return sim.faketime_library()


class Steps(ct.TempDirCase):
    def setUp(self):
        ct.TempDirCase.setUp(self)
        self.lib = faketime()
        if self.lib is None:
            self.skipTest("no libfaketimeMT.so.1 (Debian: faketime)")
        self.clockfile = self.path("node2.faketime")
        self.write(self.clockfile, "+0.000\n")
        for n in ("node1", "node2", "node3"):
            lines = ["#!/bin/sh"]
            if n == "node2":
                lines += [
                    'if [ "$1" = clock ]; then',
                    '  c=$(cat %s 2>/dev/null || echo 0); c=$((c + 1)); echo $c > %s'
                    % (self.path("count"), self.path("count")),
                    '  if [ -f %s.$c ]; then cp %s.$c %s.new && mv %s.new %s; fi'
                    % ((self.path("at"),) * 2 + (self.clockfile,) * 3),
                    'fi',
                    "LD_PRELOAD=%s FAKETIME_TIMESTAMP_FILE=%s FAKETIME_CACHE_DURATION=1 "
                    "FAKETIME_DONT_FAKE_MONOTONIC=1" % (self.lib, self.clockfile),
                    "export LD_PRELOAD FAKETIME_TIMESTAMP_FILE FAKETIME_CACHE_DURATION "
                    "FAKETIME_DONT_FAKE_MONOTONIC"]
            lines.append('exec %s "$@"' % ct.BINARY)
            self.write(self.path("wrap-" + n), "\n".join(lines) + "\n")
            os.chmod(self.path("wrap-" + n), 0o755)
        os.makedirs(self.path("stage"))

    @staticmethod
    def write(path, text):
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.rename(path + ".tmp", path)

    def schedule(self, steps):
        """steps: {measurement number: offset from then on}."""
        for i, s in steps.items():
            self.write(self.path("at.%d" % i), "%+.3f\n" % s)

    def run_and_collect(self, run_id):
        results = self.path("results")
        rundir = os.path.join(results, run_id)
        p = ct.run_script("stagebench-cluster", [
            "-w", "node[1-3]", "--exec", "--stagebench", self.path("wrap-%h"),
            "--local-stagebench", ct.BINARY, "--dir", self.path("stage"),
            "--results", results, "--run-id", run_id, "--scale", "tiny", "--threads", "1",
            "--repeat", str(REPS), "--max-offset", "10", "null"], timeout=280)
        self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
        j = ct.run_script("stagebench-collect", [rundir, "--format", "json", "--no-history"])
        t = ct.run_script("stagebench-collect", [rundir, "--no-history"])
        rep = json.loads(j.stdout)
        parts = dict((p["repetition"], p) for p in rep["parts"])
        man = ct.load(os.path.join(rundir, "manifest.json"))
        return j.returncode, parts, man, t.stdout

    def check(self, parts, man, truth, hit):
        """Node2's offset at each measurement (truth: measurement number -> offset) within its
        uncertainty; the repetitions in hit NOT held with node2 alone named, the others
        held."""
        ms = man["clock"]["measurements"]
        self.assertEqual(len(ms), 2 * REPS + 2, [m["next_to"] for m in ms])
        for i, m in enumerate(ms, 1):
            e = m["nodes"]["node2"]
            self.assertLess(abs(e["offset_s"] - truth(i)), e["uncertainty_s"] + 0.01,
                            (i, m["next_to"], e, truth(i)))
        for r in range(1, REPS + 1):
            st = parts[r]["start"]
            if r in hit:
                self.assertEqual(st["verdict"], "NOT held", (r, st))
                self.assertEqual([o["node"] for o in st["nodes_out"]], ["node2"], (r, st))
            else:
                self.assertEqual(st["verdict"], "held", (r, st))

    def test_close_measurements_are_no_drift_and_no_step(self):
        """The four measurements of a real 3 s part (16 ms apart on each side, each within
        20-40 us): no step, and a drift of a few ppm. Two measurements 16 ms apart cannot tell
        a rate within MAX_DRIFT; taken, their noise made a drift of 884 ppm and of the part's
        21 us a step of -2.69 ms."""
        from stagebench import clockmodel

        def entry(at, off, unc):
            return {"offset_s": off, "uncertainty_s": unc, "measured_at": at}
        pts = [("before", 1796304310.804387, -2.1848e-05, 4.1093e-05),
               ("before", 1796304310.820148, 6.359e-06, 3.6857e-05),
               ("after", 1796304313.845061, -1.327e-05, 1.8992e-05),
               ("after", 1796304313.861411, 1.177e-06, 2.6252e-05)]
        man = {"clock": {"method": "exchange", "measurements": [
            {"at": at, "next_to": {"when": when, "part": "5a", "rep": 1}, "method": "exchange",
             "nodes": {"node2": entry(at, off, unc)}, "unmeasured": {}}
            for when, at, off, unc in pts]}}
        self.assertIsNone(clockmodel.check_measurements(man))
        clocks = clockmodel.Clocks(man, ["node2"], {})
        self.assertEqual(clocks.steps(), [])
        self.assertLess(abs(clocks.clocks["node2"].rate), 20e-6, clocks.clocks["node2"].rate)

    def test_a_step_that_stays(self):
        """node2 steps 1.5 s ahead before repetition 2 and stays so."""
        self.schedule({BEFORE[2]: 1.5})
        rc, parts, man, text = self.run_and_collect("stays")
        self.assertEqual(rc, 1, text)
        self.check(parts, man, lambda i: 1.5 if i >= BEFORE[2] else 0.0, hit={2, 3, 4})
        self.assertIn("node2", text)

    def test_a_step_that_reverts(self):
        """node2 steps 1.5 s ahead before repetition 2 and back before repetition 3: only the
        second is NOT held (the run's two ends alone, both 0, would say held)."""
        self.schedule({BEFORE[2]: 1.5, BEFORE[3]: 0.0})
        rc, parts, man, text = self.run_and_collect("reverts")
        self.assertEqual(rc, 1, text)
        self.check(parts, man, lambda i: 1.5 if BEFORE[2] <= i < BEFORE[3] else 0.0,
                   hit={2})

    def test_a_clock_running_fast(self):
        """node2's clock gains 0.3 s between one measurement and the next (a clock running
        fast): repetitions 1 and 2 held (0 to 0.3 s, 0.6 to 0.9 s ahead), 3 and 4 not (1.2 to
        1.5 s, 1.8 to 2.1 s), each judged from the offsets next to it."""
        def gain(i):
            return 0.3 * max(0, i - 2)
        self.schedule(dict((i, gain(i)) for i in range(3, 2 * REPS + 3)))
        rc, parts, man, text = self.run_and_collect("fast")
        self.assertEqual(rc, 1, text)
        self.check(parts, man, gain, hit={3, 4})


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
