# SPDX-License-Identifier: MIT
"""The launcher through srun on a private Slurm cluster of this host (slurmhost.py: two slurmd,
n1 and n2): the info round's JSON arrives whole (srun labels whole lines; with --unbuffered it
labelled 4 KiB pieces of a longer output and split its lines), every part runs, and the clock
offsets come from timestamp exchanges broadcast on srun's stdin, within their uncertainty of the
truth (both nodes are this machine: offset 0)."""
import json
import os
import subprocess
import sys
import unittest

import clustertest as ct
import slurmhost


def setUpModule():
    global CLUSTER
    CLUSTER = slurmhost.up_or_skip(ct.skip_file, cpus=(2, 1))


def tearDownModule():
    CLUSTER.close_clean()


class SrunClock(ct.TempDirCase):
    def test_run_and_exchange_offsets(self):
        os.makedirs(self.path("stage"))
        env = CLUSTER.env()
        env.pop("STAGEBENCH_NODE", None)
        cmd = [sys.executable, ct.script("stagebench-cluster"), "--launcher", "srun",
               "-w", "n[1-2]", "--stagebench", ct.BINARY, "--dir", self.path("stage"),
               "--results", self.path("results"), "--run-id", "srun", "--scale", "tiny",
               "--threads", "1", "--no-report", "--max-offset", "5", "1a"]
        p = subprocess.run(cmd, env=env, cwd=CLUSTER.dir, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=240)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        rundir = self.path("results", "srun")
        with open(os.path.join(rundir, "info.json")) as f:
            self.assertEqual(sorted(json.load(f)), ["n1", "n2"])
        for n in ("n1", "n2"):
            s = ct.load(os.path.join(rundir, "%s.1a.rep1.json" % n))
            self.assertEqual(s["status"], "ok")
        c = ct.load(os.path.join(rundir, "manifest.json"))["clock"]
        self.assertEqual((c["method"], c["samples"], c["unmeasured"]), ("exchange", 8, []))
        for when in ("start", "end"):
            self.assertEqual(sorted(c[when]), ["n1", "n2"])
            for n, e in c[when].items():
                self.assertLessEqual(abs(e["offset_s"]), e["uncertainty_s"], (when, n, e))
                self.assertEqual(e["samples"], 8)
        self.assertIn("clock offsets before the first part (exchange, 8 samples a node)",
                      p.stderr)
        self.assertNotIn("beyond --max-offset", p.stderr)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
