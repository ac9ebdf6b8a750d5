# SPDX-License-Identifier: MIT
"""The collector's start verdict end to end: stagebench-sim runs three nodes, the launcher
measures their clock offsets, and stagebench-collect judges the true instants. One node's wall
clock 2.5 s ahead and another's 3 s behind (libfaketime, wall clock only): NOT held naming both,
exit 1. The same run without skew: held, exit 0."""
import json
import unittest

import clustertest as ct


class EndToEnd(ct.TempDirCase):
    def run_and_collect(self, run_id, extra):
        p = ct.run_script("stagebench-sim", [
            "--nodes", "3", "--servers", "1", "--dir", self.path("stage"),
            "--results", self.path("results"), "--stagebench", ct.BINARY, "--scale", "tiny",
            "--run-id", run_id, "--no-report", "--lead", "10"] + list(extra) + ["1a"],
            timeout=240)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        run = self.path("results", run_id)
        j = ct.run_script("stagebench-collect", [run, "--format", "json"])
        t = ct.run_script("stagebench-collect", [run])
        self.assertEqual(j.returncode, t.returncode)
        return j.returncode, json.loads(j.stdout), t.stdout

    def test_skewed_nodes_not_held(self):
        rc, rep, text = self.run_and_collect("skew", ["--clock-skew", "node2=+2.5",
                                                      "--clock-skew", "node3=-3"])
        self.assertEqual(rc, 1, text)
        st = rep["parts"][0]["start"]
        self.assertEqual(st["verdict"], "NOT held")
        out = {o["node"]: o for o in st["nodes_out"]}
        self.assertEqual(sorted(out), ["node2", "node3"])
        offsets = rep["clock"]["offsets"]["nodes"]
        for n, skew in (("node2", 2.5), ("node3", -3.0)):
            # released early (ahead) or late (behind) in true time by the skew, as measured
            self.assertLess(abs(out[n]["by_s"] + skew), 0.1 + offsets[n]["uncertainty_s"],
                            out[n])
            self.assertLess(abs(offsets[n]["offset_s"] - skew), offsets[n]["uncertainty_s"])
        self.assertIn("start synchronization: NOT held", text)
        self.assertRegex(text, r"\n +node2 -2\.[45]\d\d s: released")
        self.assertRegex(text, r"\n +node3 \+[23]\.\d\d\d s: released")
        self.assertIn("status: FAILED (start not synchronized)", text)

    def test_no_skew_held(self):
        rc, rep, text = self.run_and_collect("plain", [])
        self.assertEqual(rc, 0, text)
        self.assertEqual(rep["parts"][0]["start"]["verdict"], "held")
        self.assertEqual(rep["clock"]["offsets"]["source"], "launcher manifest")
        self.assertIn("start synchronization: held in every part", text)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
