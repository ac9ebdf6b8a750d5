# SPDX-License-Identifier: MIT
"""Every node starts cold: the node that writes a replica does not keep it in its page cache,
as fincore (util-linux) sees it, on ext4 under /tmp."""
import os
import shutil
import subprocess
import unittest

import sbtest
from sbtest import run

FINCORE = shutil.which("fincore")


def resident(path):
    """(bytes resident in this host's page cache, file size), by fincore."""
    p = subprocess.run([FINCORE, "--bytes", "--noheadings", "--raw", "--output", "RES,SIZE",
                        path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, check=True)
    res, size = p.stdout.split()
    return int(res), int(size)


class Cache(sbtest.TempDirCase):
    def setUp(self):
        super().setUp()
        self.assertIsNotNone(FINCORE, "fincore (util-linux) is needed")

    def test_fincore_sees_pages_read(self):
        # the control: a replica read through the page cache is resident, so a low figure
        # below is a drop, not a blind measurement
        stage = self.stage()
        self.assertEqual(run(["prepare", "2", "--scale", "tiny", "--dir", stage]).returncode, 0)
        path = os.path.join(stage, "stagebench.2.8MiB")
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass
        res, size = resident(path)
        self.assertGreater(res, 0.9 * size)

    def test_writer_holds_under_a_tenth_after_prepare(self):
        stage = self.stage()
        p = run(["prepare", "1a", "1b", "2", "--scale", "small", "--dir", stage])
        self.assertEqual(p.returncode, 0, p.stderr)
        names = sorted(n for n in os.listdir(stage) if n.startswith("stagebench."))
        self.assertEqual([n.split(".")[1] for n in names], ["1a", "1b", "2"])
        for n in names:
            res, size = resident(os.path.join(stage, n))
            self.assertGreater(size, 0)
            self.assertLess(res, size / 10, "%s: %d of %d bytes resident" % (n, res, size))


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
