# SPDX-License-Identifier: MIT
"""A slow core is visible: one CPU's reads are delayed through the fault shim, and both the
text summary of `run` and the probe of `check` name that CPU. A thread late to read the wall
clock at its release (preempted there, as on a loaded node) leaves the summary's figures
adding up: the node time and the threads' release instants are the same readings."""
import json
import os
import sys
import unittest

import faulttest
from faulttest import run

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from stagebench import selfcheck  # noqa: E402


class SlowCore(faulttest.sbtest.TempDirCase):
    def setUp(self):
        super().setUp()
        info = faulttest.sbtest.info()
        if info["topology"]["allowed_cores"] < 2:
            self.skipTest("needs two cores")
        self.cpus = [t["cpu"] for t in info["threads"]][:2]
        self.slow = self.cpus[1]

    def env(self, delay):
        return faulttest.shim_env(delay_cpu="%d:%s" % (self.slow, delay))

    def test_run_marks_the_slow_thread(self):
        stage = self.stage()
        out = self.path("s.json")
        p = run(["run", "2a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                 "--cpus", "%d,%d" % tuple(self.cpus), "--out", out], env=self.env("300us"))
        self.assertEqual(p.returncode, 0, p.stderr)
        marks = [l for l in p.stdout.splitlines() if l.strip().startswith("^ thread")]
        slow = [l for l in marks if "on CPU %d:" % self.slow in l]
        self.assertEqual(len(slow), 1, p.stdout)
        self.assertIn("slower than the median", slow[0])
        self.assertFalse([l for l in marks if "slower" in l and "CPU %d:" % self.cpus[0] in l])
        with open(out) as f:
            part = json.load(f)["tests"][0]["parts"][0]
        by_cpu = {t["cpu"]: t for t in part["per_thread"]}
        self.assertGreater(by_cpu[self.slow]["deviation"], 0.25)
        self.assertLess(by_cpu[self.cpus[0]]["deviation"], 0)

    def test_check_flags_the_slow_core(self):
        stage = self.stage()
        p = run(["check", "--dir", stage, "--scale", "tiny", "--format", "json",
                 "--cpus", "%d,%d" % tuple(self.cpus)], env=self.env("100us"), timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        found = {(f["area"], f["check"]): f for f in json.loads(p.stdout)["findings"]}
        rnd = found[("probe", "random")]
        self.assertEqual(rnd["status"], "warn", rnd)
        self.assertIn("CPU %d" % self.slow, rnd["message"])
        self.assertNotIn("CPU %d " % self.cpus[0], rnd["message"])
        # the probe removed its file and wrote nothing else
        self.assertEqual(os.listdir(stage), [])

    def test_late_wall_read_at_the_release_still_adds_up(self):
        stage = self.stage()
        out = self.path("s.json")
        p = run(["run", "null", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                 "--cpus", "%d,%d" % tuple(self.cpus), "--out", out],
                env=faulttest.shim_env(extra={"FAULTSHIM_WALL_LATE_CPU": "%d:20ms" % self.slow}))
        self.assertIn(p.returncode, (0, 1), p.stderr)
        with open(out) as f:
            part = json.load(f)["tests"][0]["parts"][0]
        rel = {t["cpu"]: t["release_at_ns"] for t in part["per_thread"]}
        # the shim did make the slow CPU's reading late: its release is the later one
        self.assertGreater(rel[self.slow] - rel[self.cpus[0]], 15000000, part["per_thread"])
        self.assertIsNone(selfcheck.check(part, None, 2), part)


if __name__ == "__main__":
    faulttest.setup_from_argv()
    unittest.main(verbosity=2)
