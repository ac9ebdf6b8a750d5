# SPDX-License-Identifier: MIT
"""Limits said as they are: under `ulimit -n 4` every command but list fails at once with
"Too many open files" (never an empty CPU list, never a check that blames the clock source
and the directory); a --dir whose real path is over 383 bytes is refused with that limit,
and however long the path, the error line ends with its whole reason."""
import json
import os
import resource
import subprocess
import unittest

import faulttest as ft
from faulttest import run


def limit_files(n):
    def pre():
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    return pre


def nested(base, total):
    """A directory below base whose path is about total bytes long (components of 200)."""
    path = base
    while len(path) < total:
        path = os.path.join(path, "d" * min(200, max(1, total - len(path) - 1)))
    os.makedirs(path)
    return path


class Limits(ft.FaultCase):
    def errors(self, p):
        return [l for l in ft.lines(p.stderr) if l.startswith("stagebench: error: ")]

    def test_too_few_open_files(self):
        stage = self.stage()
        for args in (["info"], ["info", "--dir", stage, "--format", "json"],
                     ["check", "--dir", stage, "--scale", "tiny"],
                     ["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0"]):
            with self.subTest(args=args):
                p = subprocess.run([ft.binary()] + args, capture_output=True, text=True,
                                   timeout=60, preexec_fn=limit_files(4))
                self.assertEqual(p.returncode, 3, p.stderr)
                self.assertEqual(p.stdout, "")
                errs = self.errors(p)
                self.assertEqual(len(errs), 1, p.stderr)
                self.assertIn("Too many open files (the limit of open files, ulimit -n, is 4;",
                              errs[0])
        self.assertEqual(os.listdir(stage), [])
        # enough for the command: it works as usual
        p = subprocess.run([ft.binary(), "info", "--format", "json"], capture_output=True,
                           text=True, timeout=60, preexec_fn=limit_files(64))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(json.loads(p.stdout)["topology"]["allowed_cpus"], p.stdout)
        self.assertTrue(json.loads(p.stdout)["threads"], p.stdout)

    def test_long_dir(self):
        ok = nested(self.dir, 383 - 40)
        ok = os.path.join(ok, "e" * (383 - len(os.path.realpath(ok)) - 1))
        os.makedirs(ok)
        self.assertEqual(len(os.path.realpath(ok)), 383)
        p = run(["run", "1a", "--scale", "tiny", "--dir", ok, "--start-in", "0"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(run(["clean", "all", "--dir", ok]).returncode, 0)

        over = os.path.join(os.path.dirname(ok), "e" * (len(os.path.basename(ok)) + 1))
        os.makedirs(over)
        longest = nested(self.dir, 1200)
        for d in (over, longest):
            for cmd in (["run", "1a"], ["prepare", "1a"], ["info"], ["check"], ["clean", "all"]):
                with self.subTest(length=len(d), cmd=cmd):
                    p = run(cmd + ["--scale", "tiny", "--dir", d])
                    self.assertEqual(p.returncode, 2, p.stderr)
                    errs = self.errors(p)
                    self.assertEqual(len(errs), 1, p.stderr)
                    self.assertRegex(errs[0], r"' is too long: its real path has %d bytes, at "
                                     r"most 383 are allowed \(the names of the files in it "
                                     r"must fit in 512\)$" % len(os.path.realpath(d)))
                    self.assertLess(len(errs[0]), 400)
        missing = os.path.join(longest, "x" * 200, "y" * 200)
        p = run(["run", "1a", "--scale", "tiny", "--dir", missing])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertRegex(self.errors(p)[0], r"\.\.\.y+': No such file or directory$")


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
