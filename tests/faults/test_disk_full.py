# SPDX-License-Identifier: MIT
"""A full disk or quota (ENOSPC, EDQUOT) while preparing a replica and in test 4: the error
names the file and offset, the other threads stop, what stagebench created is removed, the
summary says failed, exit 1. A real small tmpfs where the kernel can produce the fault, the
shim where it cannot (a quota, or a disk that fills between the preflight and the write)."""
import os
import re
import time
import unittest

import faulttest as ft
from faulttest import KiB, MiB, run


class DiskFull(ft.FaultCase):
    def check_failed(self, s, p, text):
        self.assertEqual(s["status"], "failed")
        self.assertEqual(s["exit_code"], 1)
        self.assertTrue(any(text in e for e in s["errors"]), s["errors"])
        # the machine reason beside the words
        want = "io_error" if text == "Input/output error" else "no_space"
        reasons = [r for e, r in zip(s["errors"], s["error_reasons"]) if text in e]
        self.assertEqual(reasons, [want] * len(reasons))
        self.assertEqual(s["tests"][0]["reason"], want)
        ft.FaultCase.assert_one_error_line(self, p.stderr, text)

    def test_test4_fills_a_real_tmpfs(self):
        ft.require_root(self)
        with ft.tmpfs(self.path("small"), "size=6m") as d:
            with open(os.path.join(d, "mine.txt"), "w") as f:
                f.write("was here before")
            n = len(ft.sbtest.info()["threads"])
            # The preflight counts 6 KiB a file, tmpfs takes two 4 KiB pages: the estimate
            # passes, and the disk fills up about three quarters of the way through.
            count = (6 * MiB - 64 * KiB) // (6 * KiB * n)
            t0 = time.monotonic()
            s, p = self.run_json(["run", "4a", "--scale", "tiny", "--dir", d, "--start-in", "0",
                                  "--count", str(count), "--chunk", "6k"], expect=1)
            self.assertLess(time.monotonic() - t0, 30)
            part = s["tests"][0]["parts"][0]
            self.assertEqual(part["status"], "failed")
            self.assertEqual(s["tests"][0]["status"], "failed")
            self.assertRegex(part["error"],
                             r"^thread \d+: write '%s/stagebench\.4a\.[^']+\.\d{6}' at \d+: "
                             r"No space left on device$" % re.escape(d))
            self.check_failed(s, p, "No space left on device")
            # the others stopped early: fewer files than asked, and all of them removed
            self.assertLess(part["files"], count * n)
            self.assertEqual(os.listdir(d), ["mine.txt"])

    def test_test4_quota_through_the_shim(self):
        stage = self.stage()
        s, p = self.run_json(["run", "4b", "--scale", "tiny", "--dir", stage, "--start-in", "0",
                              "--xfer", "256k"], expect=1, env=ft.shim_env("write:6:EDQUOT"))
        part = s["tests"][0]["parts"][0]
        self.assertRegex(part["error"], r"write '%s/stagebench\.4b\.[^']+' at (0|262144|524288|"
                         r"786432): Disk quota exceeded" % re.escape(os.path.realpath(stage)))
        self.check_failed(s, p, "Disk quota exceeded")
        self.assertEqual(os.listdir(stage), [])

    def test_test4_fsync_and_close_errors(self):
        stage = self.stage()
        for rule, op, text in (("fsync:3:EIO", "fsync", "Input/output error"),
                               ("close:2:ENOSPC", "close", "No space left on device")):
            with self.subTest(rule=rule):
                s, p = self.run_json(["run", "4a", "--scale", "tiny", "--dir", stage,
                                      "--start-in", "0", "--fsync"], expect=1,
                                     env=ft.shim_env(rule))
                self.assertRegex(s["tests"][0]["parts"][0]["error"],
                                 r"%s '[^']+/stagebench\.4a\.[^']+': %s" % (op, text))
                self.check_failed(s, p, text)
                self.assertEqual(os.listdir(stage), [])

    def test_prepare_runs_out_of_space(self):
        stage = self.stage()
        with open(os.path.join(stage, "mine.txt"), "w") as f:
            f.write("was here before")
        # `prepare`: the second piece of the replica cannot be written
        p = run(["prepare", "1a", "--scale", "tiny", "--dir", stage, "--file-size", "16M"],
                env=ft.shim_env("pwrite:2:ENOSPC"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(ft.lines(p.stderr)[-1],
                         r"^stagebench: error: test 1a: preparing replica: write "
                         r"'[^']+/stagebench\.1a\.16MiB\.tmp\.[^']+' at \d+: "
                         r"No space left on device$")
        self.assertEqual(os.listdir(stage), ["mine.txt"])
        # `run` creating its replica: the test fails, the summary says so, nothing is left
        s, p = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0",
                              "--file-size", "16M"], expect=1,
                             env=ft.shim_env("pwrite:3:ENOSPC"))
        t = s["tests"][0]
        self.assertEqual(t["status"], "failed")
        self.assertEqual(t["parts"], [])
        self.assertFalse(t["prepared"])
        self.assertRegex(t["error"], r"preparing replica: write '[^']+\.tmp\.[^']+' at \d+: "
                         r"No space left on device")
        self.check_failed(s, p, "No space left on device")
        self.assertEqual(os.listdir(stage), ["mine.txt"])

    def test_disk_fills_after_the_preflight(self):
        ft.require_root(self)
        with ft.tmpfs(self.path("small"), "size=6m") as d:
            # a replica that cannot fit is refused by the preflight: exit 3, nothing written
            p = run(["prepare", "1b", "--scale", "tiny", "--dir", d])
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertIn("not enough space", p.stderr)
            self.assertEqual(os.listdir(d), [])
            # one that fits at the preflight, but another writer fills the disk before it is
            # written (the shim holds the creation of the temporary file for that moment):
            # the kernel's ENOSPC at the reservation, and the temporary file is removed
            log = self.path("shim.log")
            proc = ft.popen(["prepare", "1a", "--scale", "tiny", "--dir", d, "--file-size", "4M"],
                            env=ft.shim_env("openat:1:delay=3s", path=".tmp.", log=log))
            try:
                ft.wait_for(lambda: "delay" in ft.read_text(log))
                with open(os.path.join(d, "filler"), "wb") as f:
                    f.write(b"x" * (3 * MiB))
                _, err = proc.communicate(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            self.assertEqual(proc.returncode, 1, err)
            self.assertRegex(ft.lines(err)[-1],
                             r"^stagebench: error: test 1a: preparing replica: fallocate "
                             r"'%s/stagebench\.1a\.4MiB\.tmp\.[^']+': No space left on device$"
                             % re.escape(d))
            self.assertEqual(os.listdir(d), ["filler"])

if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
