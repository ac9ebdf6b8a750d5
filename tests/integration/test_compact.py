# SPDX-License-Identifier: MIT
"""What a node prints to the launcher in a round is a few lines whatever its cores: `info
--format json --compact` (stagebench.info-brief/1) is one line on a 128-core synthetic machine
(hwloc's HWLOC_SYNTHETIC), with the thread plan as CPU lists, and agrees with the full info;
`status --format json` of an armed run is one line."""
import json
import os
import signal
import time
import unittest

import sbtest

M128 = {"HWLOC_SYNTHETIC": "pack:2 core:64 pu:1"}
# two PUs a core: one thread a core, on every other CPU (the longest list a plan makes here)
M128_SMT = {"HWLOC_SYNTHETIC": "pack:2 core:32 pu:2"}
BRIEF_KEYS = ["schema", "version", "node", "host", "build", "topology", "threads", "clock",
              "dir", "dir_error", "fs", "leftovers"]


class CompactInfo(sbtest.TempDirCase):
    def info(self, args, env):
        p = sbtest.run(["info", "--format", "json", "--node", "n1"] + args, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_one_line_on_128_cores_that_agrees_with_the_full_info(self):
        stage = self.stage()
        for name in ("stagebench.4a.n1.p7-0123456789ab-r1.t%d.000001" % k for k in range(5)):
            with open(os.path.join(stage, name), "wb") as f:
                f.write(b"x")
        brief_text = self.info(["--compact", "--dir", stage], M128)
        full_text = self.info(["--dir", stage], M128)
        # the figures of the report: one line of about 0.9 KB against a thousand lines
        print("\n128 cores: --compact %d line(s), %d bytes; full %d lines, %d bytes"
              % (brief_text.count("\n"), len(brief_text.encode()), full_text.count("\n"),
                 len(full_text.encode())))
        self.assertEqual(brief_text.count("\n"), 1)
        self.assertTrue(brief_text.endswith("}\n"))
        self.assertLess(len(brief_text.encode()), 2048)
        self.assertGreater(full_text.count("\n"), 900)
        brief, full = json.loads(brief_text), json.loads(full_text)
        self.assertEqual(list(brief), BRIEF_KEYS)
        self.assertEqual(brief["schema"], "stagebench.info-brief/1")
        self.assertEqual(full["schema"], "stagebench.info/1")
        for k in ("version", "node", "host", "build", "topology", "dir", "dir_error", "fs"):
            if k == "fs":
                for drop in ("bytes_free", "inodes_free"):  # moving figures
                    brief[k].pop(drop)
                    full[k].pop(drop)
            self.assertEqual(brief[k], full[k], k)
        self.assertEqual(brief["topology"]["allowed_cpus"], "0-127")
        self.assertEqual(brief["threads"], {"count": 128, "cpus": "0-127", "cores": "0-127"})
        self.assertEqual(len(full["threads"]), 128)
        self.assertEqual(sorted(brief["clock"]), sorted(full["clock"]))
        self.assertAlmostEqual(brief["clock"]["now"], time.time(), delta=30)
        self.assertEqual(brief["leftovers"], full["leftovers"]["count"])
        self.assertEqual(brief["leftovers"], 5)

    def test_the_thread_plan_as_cpu_lists(self):
        cases = [(M128_SMT, [], 64, ",".join(str(c) for c in range(0, 128, 2)), "0-63"),
                 (M128, ["--cpus", "0-3,64-67"], 8, "0-3,64-67", "0-3,64-67"),
                 (M128, ["--threads", "5"], 5, "0-4", "0-4")]
        for env, args, count, cpus, cores in cases:
            with self.subTest(env=env, args=args):
                text = self.info(["--compact"] + args, env)
                self.assertEqual(text.count("\n"), 1)
                self.assertLess(len(text.encode()), 2048)
                brief = json.loads(text)
                self.assertEqual(brief["threads"], {"count": count, "cpus": cpus,
                                                    "cores": cores})
                full = json.loads(self.info(args, env))
                self.assertEqual(sorted(t["cpu"] for t in full["threads"]),
                                 [int(c) for c in expand(cpus)])
                # without --dir: no directory, no filesystem, no count of files
                self.assertEqual((brief["dir"], brief["fs"], brief["leftovers"]),
                                 (None, None, None))

    def test_compact_is_a_form_of_json(self):
        for args in (["info", "--compact"], ["info", "--compact", "--format", "text"]):
            with self.subTest(args=args):
                p = sbtest.run(args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(p.stdout, "")
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                self.assertIn("--compact is a form of --format json", p.stderr)
        p = sbtest.run(["status", self.dir, "--compact"])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("does not apply to 'status'", p.stderr)


def expand(cpulist):
    out = []
    for item in cpulist.split(","):
        lo, _, hi = item.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


class CompactStatus(sbtest.TempDirCase):
    def test_status_json_is_one_line(self):
        stage, state = self.stage(), self.path("st")
        p = sbtest.run(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "60",
                        "--detach", state])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.addCleanup(self.stop, state)
        p = sbtest.run(["status", state, "--format", "json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.count("\n"), 1, p.stdout)
        self.assertTrue(p.stdout.startswith('{"schema":"stagebench.state/1",'), p.stdout)
        st = json.loads(p.stdout)
        self.assertEqual(st["status"], "armed")

    def stop(self, state):
        p = sbtest.run(["stop", state, "--wait", "20"])
        if p.returncode != 0:
            with open(os.path.join(state, "state")) as f:
                pid = int([l.split()[1] for l in f if l.startswith("pid ")][0])
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
