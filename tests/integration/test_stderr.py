# SPDX-License-Identifier: MIT
"""stderr is written a line at a time: one write() per message and per progress update, as
strace sees it, so `srun --label` and the launcher's pipes never get a message in pieces."""
import os
import re
import shutil
import unittest

import sbtest
from sbtest import run

STRACE = shutil.which("strace")
# a write, or the first half of one that another thread's call interrupted in the trace
WRITE = re.compile(r'^\d+\s+write\(2, "(.*)", (\d+)(?:\)\s+= (\d+)| <unfinished \.\.\.>)$')


class Stderr(sbtest.TempDirCase):
    def writes(self, args):
        """(the writes to fd 2 as strace printed them, stderr as captured, exit status)."""
        trace = self.path("trace")
        # LeakSanitizer cannot work under ptrace: in a sanitizer build, leaks are not looked
        # for in the traced run (the other tests look for them)
        asan = [o for o in (os.environ.get("ASAN_OPTIONS"), "detect_leaks=0") if o]
        p = run(args, env={"ASAN_OPTIONS": ":".join(asan)}, prefix=[STRACE, "-f", "-qq", "-e", "trace=write", "-e", "signal=none",
                              "-s", "65536", "-o", trace])
        with open(trace) as f:
            found = [m for m in (WRITE.match(l.rstrip("\n")) for l in f) if m]
        return found, p.stderr, p.returncode

    def setUp(self):
        super().setUp()
        self.assertIsNotNone(STRACE, "strace is needed")

    def test_one_write_per_message(self):
        # an error after a warning (the clock here is not NTP-synchronized), each in one piece
        missing = self.path("missing", "dir")
        found, err, rc = self.writes(["run", "1a", "--scale", "tiny", "--dir", missing,
                                      "--node", "n\x01x"])
        self.assertNotEqual(rc, 0)
        lines = err.splitlines()
        self.assertGreaterEqual(len(lines), 1, err)
        self.assertEqual(len(found), len(lines), (found, err))
        for m, line in zip(found, lines):
            self.assertTrue(m.group(1).endswith("\\n"), m.group(0))
            self.assertEqual(int(m.group(2)), len(line.encode()) + 1)
            self.assertIn(m.group(3), (m.group(2), None))

    def test_one_write_per_progress_update(self):
        stage = self.path("stage")
        os.mkdir(stage)
        self.assertEqual(run(["prepare", "1a", "--scale", "tiny", "--dir", stage]).returncode, 0)
        found, err, rc = self.writes(["run", "1a", "--scale", "tiny", "--dir", stage,
                                      "--start-in", "1.5", "--progress"])
        self.assertEqual(rc, 0, err)
        status = [m for m in found if m.group(1).startswith("\\r\\33[K")]
        logged = [m for m in found if m.group(1).startswith("stagebench: ")]
        self.assertGreaterEqual(len(status), 2, found)  # at least an update and its clearing
        # a message may follow the clearing of the progress line on the same terminal line
        self.assertEqual(len(logged), sum(l.split("\x1b[K")[-1].startswith("stagebench: ")
                                          for l in err.splitlines()), (found, err))
        self.assertEqual(len(found), len(status) + len(logged), found)
        for m in logged:
            self.assertTrue(m.group(1).endswith("\\n"), m.group(0))

if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
