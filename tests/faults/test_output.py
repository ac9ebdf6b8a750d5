# SPDX-License-Identifier: MIT
"""Output that cannot be written: stdout on /dev/full, closed, or redirected to a full
filesystem, and --out on a full filesystem. Each exits non-zero (1, or the command's own
worse status) with the real cause on stderr, never 0 with an empty or missing summary."""
import contextlib
import errno
import json
import os
import subprocess
import unittest

import faulttest as ft
from faulttest import run

RUN = ["run", "null", "--scale", "tiny", "--count", "1000", "--start-in", "0"]


def fill(d):
    """Fill the filesystem of d with one file until it says ENOSPC."""
    with open(os.path.join(d, "filler"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise


class Output(ft.FaultCase):
    @contextlib.contextmanager
    def full_filesystem(self):
        """A small tmpfs already full (root only: it mounts), unmounted afterwards."""
        ft.require_root(self)
        with ft.tmpfs(self.path("full"), "size=256k") as d:
            fill(d)
            yield d

    def assert_cause(self, p, code, text):
        self.assertEqual(p.returncode, code, p.stderr)
        errs = [l for l in ft.lines(p.stderr) if l.startswith("stagebench: error: ")]
        self.assertTrue(any(text in l for l in errs), p.stderr)

    def test_stdout_on_dev_full(self):
        stage = self.stage()
        for args in (RUN + ["--dir", stage], RUN + ["--dir", stage, "--format", "json"],
                     ["info", "--dir", stage], ["list", "--format", "json"]):
            with self.subTest(args=args), open("/dev/full", "w") as full:
                p = subprocess.run([ft.binary()] + args, stdout=full, stderr=subprocess.PIPE,
                                   text=True, timeout=60)
                self.assert_cause(p, 1, "cannot write to standard output: No space left on "
                                  "device")

    def test_closed_stdout_writes_nowhere_else(self):
        stage = self.stage()
        out = self.path("s.json")
        # test 4 opens files while stdout is closed: none of them may become descriptor 1
        p = subprocess.run(["sh", "-c", 'exec "$0" "$@" >&-', ft.binary(), "run", "4a",
                            "--scale", "tiny", "--count", "20", "--keep", "--dir", stage,
                            "--start-in", "0", "--out", out], stderr=subprocess.PIPE,
                           text=True, timeout=60)
        self.assert_cause(p, 1, "cannot write to standard output: Bad file descriptor")
        with open(out) as f:
            self.assertEqual(json.load(f)["status"], "ok")
        for name in os.listdir(stage):
            with open(os.path.join(stage, name), "rb") as f:
                self.assertNotIn(b"stagebench", f.read(4096)[32:], name)
        self.assertEqual(run(["clean", "4", "--dir", stage]).returncode, 0)

    def test_json_redirected_to_a_full_filesystem(self):
        stage = self.stage()
        with self.full_filesystem() as d:
            target = os.path.join(d, "node.json")
            with open(target, "w") as f:
                p = subprocess.run([ft.binary()] + RUN + ["--dir", stage, "--format", "json"],
                                   stdout=f, stderr=subprocess.PIPE, text=True, timeout=60)
            self.assert_cause(p, 1, "cannot write to standard output: No space left on device")

    def test_out_on_a_full_filesystem(self):
        stage = self.stage()
        with self.full_filesystem() as d:
            out = os.path.join(d, "node.json")
            p = run(RUN + ["--dir", stage, "--out", out])
            self.assert_cause(p, 1, "cannot write the summary to '%s': No space left on device"
                              % out)
            self.assertEqual(sorted(os.listdir(d)), ["filler"])
            # the same through the shim: the disk fills between the check and the write
            out2 = self.path("node.json")
            p = run(RUN + ["--dir", stage, "--out", out2],
                    env=ft.shim_env("write:1:ENOSPC", path=out2))
            self.assert_cause(p, 1, "No space left on device")
            self.assertFalse(os.path.exists(out2))


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
