# SPDX-License-Identifier: MIT
"""`stagebench check --health` on summaries the real binary wrote (a flat --out file, the
launcher's RESULTS/RUN/NODE.PART.repK.json layout): healthy, unhealthy with the part and its
error on one line, no recent data, the newest run winning, planted links and damaged files,
within a second; and the NHC check file against it, NHC's die and log stood in for."""
import json
import os
import subprocess
import time
import unittest

import sbtest

DAY = 86400


class Health(sbtest.TempDirCase):
    def setUp(self):
        super().setUp()
        self.stage = self.path("stage")
        os.makedirs(self.stage)

    def node_run(self, out, node="n1", test="1a", stage=None):
        """A real tiny run of node writing its summary to out; its exit status."""
        p = sbtest.run(["run", test, "--scale", "tiny", "--dir", stage or self.stage,
                        "--node", node, "--start-in", "0", "--out", out, "--no-progress"])
        return p.returncode

    def health(self, results, *extra, node="n1"):
        t = time.monotonic()
        p = sbtest.run(["check", "--health", "--results", results, "--node", node] +
                       list(extra))
        return p, time.monotonic() - t

    def age(self, path, seconds):
        t = time.time() - seconds
        os.utime(path, (t, t))

    def test_flat_file_healthy_then_old(self):
        res = self.path("res")
        os.makedirs(res)
        self.assertEqual(self.node_run(os.path.join(res, "n1.json")), 0)
        p, took = self.health(res)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"^stagebench: ok: 1 summary ok, 0\.\d h ago\n$")
        self.assertLess(took, 1.0)
        self.age(os.path.join(res, "n1.json"), 2 * DAY)
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertEqual(p.stdout, "stagebench: no recent data: no result of n1 in the last "
                                   "26.0 h under %s\n" % res)
        p, _ = self.health(res, "--max-age", str(3 * DAY))
        self.assertEqual(p.returncode, 0, p.stdout)
        p, _ = self.health(res, node="n2")  # another node's file is not this node's
        self.assertEqual(p.returncode, 3, p.stdout)

    def test_launcher_layout_newest_run_wins(self):
        res = self.path("res")
        old, new = os.path.join(res, "cron-1"), os.path.join(res, "cron-2")
        os.makedirs(old)
        os.makedirs(new)
        # the older run failed: its directory is missing
        rc = self.node_run(os.path.join(old, "n1.1a.rep1.json"), stage=self.path("gone"))
        self.assertEqual(rc, 3)
        self.assertEqual(self.node_run(os.path.join(old, "n1.2a.rep1.json"), test="2a"), 0)
        for f in os.listdir(old):
            self.age(os.path.join(old, f), 3600)
        self.age(old, 3600)
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(p.stdout, "stagebench: 1a failed in cron-1: --dir '%s': No such file "
                                   "or directory\n" % self.path("gone"))
        # a newer run of this node, all good: healthy again
        self.assertEqual(self.node_run(os.path.join(new, "n1.1a.rep1.json")), 0)
        self.assertEqual(self.node_run(os.path.join(new, "n1.1a.rep2.json")), 0)
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"^stagebench: ok: 2 summaries ok in cron-2, ")
        # a newer run without this node does not hide its latest one
        other = os.path.join(res, "cron-3")
        os.makedirs(other)
        self.assertEqual(self.node_run(os.path.join(other, "n2.1a.rep1.json"), node="n2"), 0)
        p, _ = self.health(res)
        self.assertRegex(p.stdout, r"^stagebench: ok: 2 summaries ok in cron-2, ")

    def test_planted_link_damaged_file_and_no_results(self):
        res = self.path("res")
        os.makedirs(res)
        self.assertEqual(self.node_run(self.path("elsewhere.json")), 0)
        os.symlink(self.path("elsewhere.json"), os.path.join(res, "n1.json"))
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 3, p.stdout)  # a link is not a summary: not followed
        os.unlink(os.path.join(res, "n1.json"))
        with open(os.path.join(res, "n1.json"), "w") as f:
            f.write('{"schema": "stagebench.node/2", "tests": [{"status": "ok"')
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 3, p.stdout)
        self.assertEqual(p.stdout, "stagebench: cannot judge: summary n1.json is damaged\n")
        # a failed status with a hostile error text: one plain line
        with open(os.path.join(res, "n1.json"), "w") as f:
            f.write('{"status": "failed", "errors": ["bad\\u001b[31m\\nsecond line"]}')
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertEqual(p.stdout, "stagebench: run failed: bad?[31m?second line\n")
        p = sbtest.run(["check", "--health", "--node", "n1"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("needs --results DIR", p.stderr)
        p = sbtest.run(["check", "--health", "--node", "n1"], env={"STAGEBENCH_RESULTS": res})
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        p, _ = self.health(self.path("nothing-here"))
        self.assertEqual(p.returncode, 3)
        self.assertIn("no recent data: results %s: No such file" % self.path("nothing-here"),
                      p.stdout)

    def test_within_a_second_among_many(self):
        """A results directory of 40 runs of 500 other nodes' summaries each."""
        res = self.path("res")
        for r in range(40):
            d = os.path.join(res, "run-%02d" % r)
            os.makedirs(d)
            for n in range(500):
                open(os.path.join(d, "x%d.1a.rep1.json" % n), "w").close()
        self.assertEqual(self.node_run(os.path.join(res, "run-00", "n1.1a.rep1.json")), 0)
        self.age(os.path.join(res, "run-00"), 7200)
        p, took = self.health(res)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertLess(took, 1.0)


NHC_TEST = r"""
die() { echo "die $1: $2"; }
log() { echo "log: $*"; }
source "$1"; shift
check_stagebench "$@"
echo "returned $?"
"""


class Nhc(sbtest.TempDirCase):
    """scripts/examples/stagebench.nhc.in with NHC's die and log stood in for."""

    def nhc(self, *args):
        src = os.path.join(sbtest.SOURCE, "scripts", "examples", "stagebench.nhc.in")
        env = dict(os.environ, STAGEBENCH_BIN=sbtest.BINARY, STAGEBENCH_HISTORY_BIN=os.path.join(
            sbtest.SOURCE, "scripts", "stagebench-history"))
        env.pop("STAGEBENCH_RESULTS", None)
        p = subprocess.run(["bash", "-c", NHC_TEST, "nhc", src] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=60, env=env)
        return p.stdout

    def test_nhc_check_drains_with_the_line(self):
        res = self.path("res")
        os.makedirs(res)
        self.assertEqual(self.nhc("-r", res, "-N", "n1"),
                         "log: check_stagebench: stagebench: no recent data: no result of n1 "
                         "in the last 26.0 h under %s\nreturned 0\n" % res)
        self.assertEqual(self.nhc("-r", res, "-N", "n1", "-n"),
                         "die 1: stagebench: no recent data: no result of n1 in the last "
                         "26.0 h under %s\nreturned 1\n" % res)
        p = sbtest.run(["run", "1a", "--scale", "tiny", "--dir", self.path("gone"), "--node",
                        "n1", "--start-in", "0", "--out", os.path.join(res, "n1.json")])
        self.assertEqual(p.returncode, 3)
        self.assertEqual(self.nhc("-r", res, "-N", "n1"),
                         "die 1: stagebench: run failed: --dir '%s': No such file or "
                         "directory\nreturned 1\n" % self.path("gone"))
        os.makedirs(self.path("stage"))
        p = sbtest.run(["run", "1a", "--scale", "tiny", "--dir", self.path("stage"), "--node",
                        "n1", "--start-in", "0", "--out", os.path.join(res, "n1.json"),
                        "--force"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.nhc("-r", res, "-N", "n1"), "returned 0\n")
        out = self.nhc("-r", res, "-N", "n1", "-a", "0.5")  # a wrong call drains, saying why
        self.assertRegex(out, r"^die 1: stagebench: error: --max-age '0\.5' is out of range: "
                              r"[^\n]*\nreturned 1\n$")

    def test_nhc_lasting_regression_from_the_history(self):
        """-L: a node healthy by its summaries is drained on a lasting regression of the last
        nightly judgement (RESULTS/history-health.json, as stagebench-cron writes it)."""
        res = self.path("res")
        os.makedirs(res)
        os.makedirs(self.path("stage"))
        self.assertEqual(sbtest.run(["run", "1a", "--scale", "tiny", "--dir", self.path("stage"),
                                     "--node", "n1", "--start-in", "0", "--out",
                                     os.path.join(res, "n1.json")]).returncode, 0)
        self.assertEqual(self.nhc("-r", res, "-N", "n1", "-L"),
                         "log: check_stagebench: stagebench: no history judgement at %s\n"
                         "returned 0\n" % os.path.join(res, "history-health.json"))
        with open(os.path.join(res, "history-health.json"), "w") as f:
            json.dump({"schema": "stagebench.history-health/1", "run_id": "cron-1",
                       "written_at": time.time(), "nodes": {"n1": [
                           {"part": "1a", "size": 0.31, "first_night": "cron-0"}]}}, f)
        self.assertEqual(self.nhc("-r", res, "-N", "n1", "-L"),
                         "die 1: stagebench: n1: lasting regression: 1a +31% since cron-0\n"
                         "returned 1\n")
        self.assertEqual(self.nhc("-r", res, "-N", "n1"), "returned 0\n")  # without -L

    def test_nhc_missing_results_is_a_configuration_error(self):
        """A results directory not given, not there (mistyped) or not a directory drains the
        node saying so: it is not "no recent data", which passes."""
        with open(self.path("file"), "w") as f:
            f.write("x\n")
        for results in (self.path("mistyped"), self.path("file")):
            self.assertEqual(self.nhc("-r", results, "-N", "n1", "-a", "3600"),
                             "die 1: check_stagebench: configuration error: results directory "
                             "%s: not a directory or not there\nreturned 1\n" % results)
        self.assertEqual(self.nhc("-N", "n1"),
                         "die 1: check_stagebench: configuration error: no results directory "
                         "(-r DIR or STAGEBENCH_RESULTS)\nreturned 1\n")


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
