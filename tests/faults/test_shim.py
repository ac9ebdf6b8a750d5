# SPDX-License-Identifier: MIT
"""The fault shim itself: rules are parsed strictly, only the files named are touched, and a
CPU can be made slow (the capability issue 6's slow-core test builds on)."""
import json
import os
import unittest

import faulttest as ft
from faulttest import run


class Shim(ft.FaultCase):
    def test_bad_rule_stops_the_process(self):
        for rule in ("pread:0:EIO", "pread:x:EIO", "pread:3:EWHAT", "frob:1:EIO", "read:1",
                     "open:2:short", "clock:jump=5", "pread:5-3:EIO", "clock:step=-5@read=0",
                     "clock:step=-5@read=x", "clock:step=1@after=1@read=2", "clock:step=1@sleep=-1",
                     "clock:step=1@nap=2"):
            with self.subTest(rule=rule):
                p = run(["list"], env=ft.shim_env(rule))
                self.assertEqual(p.returncode, 99, p.stderr)
                self.assertIn("faultshim:", p.stderr)

    def test_only_counted_files_are_touched(self):
        stage = self.stage()
        log = self.path("shim.log")
        # Every read, pread and write fails, but only on files named stagebench.*: the
        # summary, /proc, /sys and hwloc's reads go through.
        env = ft.shim_env("read:*:EIO;pread:*:EIO;write:*:EIO", log=log)
        p = run(["info", "--dir", stage, "--format", "json"], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(json.loads(p.stdout)["threads"])
        self.assertFalse(os.path.exists(log) and os.path.getsize(log))
        # The replica is written with pwrite (not failed here) and read with read (failed).
        s, p = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0"],
                             expect=1, env=env)
        self.assertIn("Input/output error", s["tests"][0]["parts"][0]["error"])
        with open(log) as f:
            self.assertIn("read #1 ", f.read())

    def test_nth_call_and_trace(self):
        stage = self.stage()
        self.assertEqual(run(["prepare", "2", "--scale", "tiny", "--dir", stage]).returncode, 0)
        log = self.path("shim.log")
        env = ft.shim_env("pread:40:EIO", log=log, extra={"FAULTSHIM_TRACE": "1"})
        s, _ = self.run_json(["run", "2a", "--scale", "tiny", "--dir", stage, "--start-in", "0"],
                             expect=1, env=env)
        with open(log) as f:
            text = f.read().splitlines()
        self.assertIn("pread #40 fd", [l for l in text if l.endswith("EIO")][0])
        self.assertEqual(len([l for l in text if l.endswith("EIO")]), 1)
        self.assertTrue(any(l.startswith("pread #39 ") for l in text))

    def test_delay_on_one_cpu_slows_its_reads(self):
        stage = self.stage()
        allowed = sorted(t["cpu"] for t in ft.sbtest.info()["threads"])
        cpu = allowed[-1]
        self.assertEqual(run(["prepare", "2", "--scale", "tiny", "--dir", stage]).returncode, 0)

        def p50(delay_cpu):
            s, _ = self.run_json(["run", "2a", "--scale", "tiny", "--dir", stage,
                                  "--start-in", "0", "--count", "20", "--cpus", str(cpu)],
                                 env=ft.shim_env(delay_cpu=delay_cpu))
            return s["tests"][0]["parts"][0]["latency_s"]["p50"]

        self.assertGreaterEqual(p50("%d:2ms" % cpu), 0.002)
        if len(allowed) > 1:
            self.assertLess(p50("%d:2ms" % allowed[0]), 0.002)


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
