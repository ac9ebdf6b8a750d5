# SPDX-License-Identifier: MIT
"""One run of every test at tiny scale, and of the other commands, under valgrind memcheck.

usage: memcheck.py STAGEBENCH_BINARY SOURCE_DIR [VALGRIND]

Every invocation must exit with its expected status, and valgrind must report no error and no
leak of any kind (definite, indirect, possible or still reachable): a memcheck error exits 99.
Threads are pinned with hwloc as usual; valgrind runs them one at a time, which is slow but
exact. Registered with ctest when STAGEBENCH_VALGRIND=ON.
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import sbtest  # noqa: E402

VALGRIND = ["valgrind"]
VG_ERROR = 99


def setup_from_argv():
    if len(sys.argv) >= 4:
        VALGRIND[0] = sys.argv[3]
        del sys.argv[3]
    sbtest.setup_from_argv()


class Memcheck(sbtest.TempDirCase):
    def vg(self, args, expect=0):
        """Run stagebench under memcheck; the log goes to a file, shown on failure."""
        log = self.path("memcheck-%d.log" % len(os.listdir(self.dir)))
        prefix = VALGRIND + ["--tool=memcheck", "--error-exitcode=%d" % VG_ERROR,
                             "--leak-check=full", "--show-leak-kinds=all",
                             "--errors-for-leak-kinds=all", "--track-origins=yes",
                             "--log-file=" + log]
        p = sbtest.run(args, timeout=600, prefix=prefix)
        with open(log) as f:
            report = f.read()
        self.assertEqual(p.returncode, expect,
                         "stagebench %s: exit %d (memcheck errors exit %d)\nstderr: %s\n%s"
                         % (" ".join(args), p.returncode, VG_ERROR, p.stderr, report))
        self.assertIn("ERROR SUMMARY: 0 errors", report, report)
        return p

    def test_every_test_at_tiny_scale(self):
        stage = self.stage()
        for test in ("1a", "1b", "2", "3", "4", "null"):
            with self.subTest(test=test):
                out = self.path("summary-%s.json" % test)
                self.vg(["run", test, "--scale", "tiny", "--dir", stage, "--start-in", "0",
                         "--verify", "--out", out])
                with open(out) as f:
                    s = json.load(f)
                self.assertEqual(s["status"], "ok")

    def test_other_commands(self):
        stage = self.stage()
        base = ["--scale", "tiny", "--dir", stage]
        self.vg(["prepare", "all"] + base)
        self.vg(["run", "2b", "--count", "3", "--chunk", "64k", "--format", "csv", "--repeat", "2",
                 "--start-in", "0"] + base)
        self.vg(["run", "all", "--dry-run"] + base)
        self.vg(["list", "--scale", "tiny", "--format", "json"])
        self.vg(["info", "--format", "json", "--dir", stage])
        self.vg(["clean", "all"] + base)
        self.vg(["run", "1a", "--xfer", "1.5.3M"] + base, expect=2)
        self.vg(["run", "1a", "--scale", "tiny", "--dir", self.path("missing")], expect=3)
        self.vg(["--help"])


if __name__ == "__main__":
    setup_from_argv()
    unittest.main(verbosity=2)
