# SPDX-License-Identifier: MIT
"""--keep-cache: the node's cache of a replica is left as it is before a part (for comparisons
on a local filesystem), and the summary says so; without it the part starts cold."""
import glob
import os
import unittest

import sbtest
from sbtest import TempDirCase


def warm(path):
    """Read the whole file, so that its pages are in this machine's page cache now."""
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


class KeepCache(TempDirCase):
    def part_after_warming(self, extra):
        stage = self.stage()
        p = sbtest.run(["prepare", "2", "--scale", "tiny", "--dir", stage])
        self.assertEqual(p.returncode, 0, p.stderr)
        replica = glob.glob(os.path.join(stage, "stagebench.2.*"))[0]
        warm(replica)
        s, _ = self.run_json(["run", "2b", "--scale", "tiny", "--dir", stage, "--start-in",
                              "0.2", "--no-progress"] + extra)
        return s["tests"][0]["parts"][0]

    def test_kept_cache_is_warm_and_said_so(self):
        pr = self.part_after_warming(["--keep-cache"])
        self.assertIs(pr["cache_dropped"], False)
        self.assertEqual(pr["cache_expected"], "cold")
        self.assertGreater(pr["cache_residency"], 0.9)
        self.assertTrue([w for w in pr["warnings"] if "should start cold" in w], pr["warnings"])

    def test_without_it_the_part_starts_cold(self):
        pr = self.part_after_warming([])
        self.assertIs(pr["cache_dropped"], True)
        self.assertLess(pr["cache_residency"], 0.1)
        self.assertFalse([w for w in pr["warnings"] if "should start cold" in w], pr["warnings"])


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
