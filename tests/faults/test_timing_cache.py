# SPDX-License-Identifier: MIT
"""Late is late, steps are carried, caches start cold (stagebench.node/2):

- a node stopped (SIGSTOP) in its wait and continued after the start instant is late: every
  thread's late_by_s, the part's, and a warning naming the threads;
- a step of the wall clock during an --interval grid shows on every later part
  (clock_step_total_s and a warning), since their start instants moved with it;
- a residency that cannot be measured (mmap fails with ENODEV, as on a FUSE direct_io file)
  is null with its reason, never 0, and "unknown" in the text table.
"""
import json
import os
import signal
import time
import unittest

import faulttest as ft
from faulttest import run


class Late(ft.FaultCase):
    def test_stopped_in_the_wait_is_late(self):
        stage = self.stage()
        self.assertEqual(run(["prepare", "2", "--scale", "tiny", "--dir", stage]).returncode, 0)
        n = len(ft.sbtest.info()["threads"])
        out = self.path("s.json")
        at = time.time() + 2.5
        proc = ft.popen(["run", "2a", "--scale", "tiny", "--dir", stage, "--start-at",
                         "%.6f" % at, "--out", out])
        self.addCleanup(ft.reap, proc)
        ft.wait_for(lambda: ft.sbtest.opened_by_all(proc, "stagebench.2.8MiB", n))
        time.sleep(0.2)  # the start instant is decided just after set-up
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(max(0.0, at + 1.5 - time.time()))
        os.kill(proc.pid, signal.SIGCONT)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err)
        s = self.summary(out)
        part = s["tests"][0]["parts"][0]
        # the start was not missed when it was decided: the status says ok, late says the rest
        self.assertEqual(part["status"], "ok")
        self.assertTrue(part["late"])
        self.assertGreater(part["late_by_s"], 1.0)
        self.assertLess(part["late_by_s"], 2.5)
        self.assertEqual(part["start_at_ns"], part["scheduled_at_ns"])
        self.assertGreater(part["release_at_ns"]["min"] - part["start_at_ns"], 10**9)
        for t in part["per_thread"]:
            self.assertGreater(t["late_by_s"], 1.0)
            self.assertAlmostEqual(t["late_by_s"],
                                   (t["release_at_ns"] - part["scheduled_at_ns"]) / 1e9,
                                   delta=0.01)
        self.assertEqual(part["late_by_s"], max(t["late_by_s"] for t in part["per_thread"]))
        names = ", ".join(str(t["index"]) for t in part["per_thread"])
        warning = "2a: late: thread%s %s released up to %.6f s after the start instant " \
                  "(bound 0.002 s)" % ("s" if n > 1 else "", names, part["late_by_s"])
        self.assertEqual(part["warnings"], [warning])
        self.assertIn(warning, s["warnings"])
        self.assertIn("stagebench: warning: " + warning, err)


class StepDuringGrid(ft.FaultCase):
    def test_step_shows_on_every_later_part(self):
        stage = self.stage()
        self.assertEqual(run(["prepare", "2", "--scale", "tiny", "--dir", stage]).returncode, 0)
        # parts at T, T+2, T+4 with T 1 s after the set-up; the wall clock steps half a second
        # ahead at the 10th sleep of the waits (of 50 ms at most): in the wait of 2a, whatever
        # the set-up took, and 2b and 2c are the later parts that must see it
        s, _ = self.run_json(["run", "2", "--scale", "tiny", "--dir", stage, "--start-in", "1",
                              "--interval", "2"], env=ft.shim_env("clock:step=+0.5@sleep=10"))
        parts = s["tests"][0]["parts"]
        self.assertEqual([p["part"] for p in parts], ["2a", "2b", "2c"])
        stepped = [k for k, p in enumerate(parts) if p["clock_step_total_s"] != 0]
        self.assertTrue(stepped, parts)
        k = stepped[0]
        self.assertLess(k, 2, "the step came after the last part: no later part to see it")
        self.assertEqual(stepped, list(range(k, 3)))
        self.assertAlmostEqual(parts[k]["clock_step_s"], 0.5, delta=0.05)
        self.assertTrue(any("the wall clock stepped by +0.5" in w for w in parts[k]["warnings"]))
        for p in parts[k + 1:]:
            self.assertEqual(p["clock_step_s"], 0)
            self.assertAlmostEqual(p["clock_step_total_s"], 0.5, delta=0.05)
            # (a thread preempted in its wait on this shared machine may add a late warning)
            w = [w for w in p["warnings"] if "wall clock stepped" in w]
            self.assertEqual(len(w), 1, p["warnings"])
            self.assertTrue(w[0].startswith("%s: the wall clock stepped by +0.5" % p["part"]))
            self.assertIn("since the run's first start", w[0])
            self.assertIn(w[0], s["warnings"])
        for p in parts[:k]:
            self.assertEqual((p["clock_step_s"], p["clock_step_total_s"]), (0, 0))


class ResidencyUnknown(ft.FaultCase):
    def test_unmappable_replica_residency_is_null_not_zero(self):
        stage = self.stage()
        self.assertEqual(run(["prepare", "2", "--scale", "tiny", "--dir", stage]).returncode, 0)
        env = ft.shim_env("mmap:*:ENODEV", path="stagebench.2.")
        s, p = self.run_json(["run", "2", "--scale", "tiny", "--dir", stage, "--start-in", "0.2"],
                             env=env)
        for part in s["tests"][0]["parts"]:
            self.assertEqual(part["status"], "ok")
            self.assertIsNone(part["cache_residency"])
            self.assertEqual(part["cache_residency_error"], "mmap: No such device")
            self.assertEqual(part["cache_expected"], "cold")
            self.assertTrue(part["cache_dropped"])  # the drop itself worked
        p = run(["run", "2a", "--scale", "tiny", "--dir", stage, "--start-in", "0.2"], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        row = [l for l in p.stdout.splitlines() if l.startswith("2    2a ")][0]
        self.assertTrue(row.endswith(" unknown"), row)
        self.assertNotIn("%", row)
        p = run(["run", "2a", "--scale", "tiny", "--dir", stage, "--start-in", "0.2",
                 "--format", "csv"], env=env)
        head, row = p.stdout.splitlines()
        self.assertEqual(dict(zip(head.split(","), row.split(",")))["cache_residency"], "")
        # info and check list the replica with its residency unknown, not -100% or 0%
        p = run(["info", "--dir", stage], env=env)
        line = [l for l in p.stdout.splitlines() if "stagebench.2.8MiB" in l][0]
        self.assertTrue(line.endswith(", page cache unknown"), line)
        p = run(["check", "--dir", stage, "--scale", "tiny"], env=env, timeout=300)
        line = [l for l in p.stdout.splitlines() if "replicas stagebench.2.8MiB" in l][0]
        self.assertTrue(line.endswith(", this node's page cache unknown"), line)
        p = run(["info", "--dir", stage, "--format", "json"], env=env)
        f = [f for f in json.loads(p.stdout)["files"] if f["name"] == "stagebench.2.8MiB"][0]
        self.assertIsNone(f["cache_residency"])


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
