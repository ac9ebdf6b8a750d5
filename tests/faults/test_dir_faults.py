# SPDX-License-Identifier: MIT
"""A --dir that cannot be used (no write permission, a read-only filesystem, a file, a
dangling link) and an --out that cannot be written: exit 3 (or 2) before the start, with
one line naming the path and the reason, and nothing created."""
import os
import subprocess
import time
import unittest

import faulttest as ft
from faulttest import run

AS_NOBODY = ["runuser", "-u", "nobody", "--"]


class DirFaults(ft.FaultCase):
    def check_refused(self, args, code, texts, prefix=None, watch=None):
        """Refused within seconds (the start is 30 s away), one line, nothing created."""
        watch = watch or self.dir
        before = ft.listing(watch)
        t0 = time.monotonic()
        p = run(args + ["--start-in", "30"] if args[0] == "run" else args, prefix=prefix,
                env={"ASAN_OPTIONS": "detect_leaks=0"} if prefix else None)
        self.assertLess(time.monotonic() - t0, 20)
        self.assertEqual(p.returncode, code, p.stderr)
        errs = [l for l in ft.lines(p.stderr) if l.startswith("stagebench: error: ")]
        self.assertEqual(len(errs), 1, p.stderr)
        for t in texts:
            self.assertIn(t, errs[0])
        self.assertEqual(ft.listing(watch), before)
        return p

    def nobody_can_run(self):
        ft.require_root(self)
        p = subprocess.run(AS_NOBODY + [ft.binary(), "--version"], capture_output=True)
        if p.returncode != 0:
            self.skipTest("the binary cannot run as nobody: %s" % p.stderr.decode().strip())

    def test_permission_denied(self):
        # root bypasses permissions: the command runs as nobody, in a directory of root's
        self.nobody_can_run()
        stage = self.stage()
        os.chmod(stage, 0o755)
        for cmd in (["run", "1a"], ["run", "4a"], ["prepare", "1a"], ["clean", "1a"]):
            with self.subTest(cmd=cmd):
                self.check_refused(cmd + ["--scale", "tiny", "--dir", stage], 3,
                                   ["--dir '%s' is not writable: Permission denied"
                                    % os.path.realpath(stage)], prefix=AS_NOBODY)

    def test_read_only_filesystems(self):
        ft.require_root(self)
        stage = self.stage()
        with ft.tmpfs(self.path("ro"), "ro,size=1m") as ro:
            for cmd in (["run", "1a"], ["run", "4"], ["prepare", "2"]):
                with self.subTest(fs="tmpfs", cmd=cmd):
                    self.check_refused(cmd + ["--scale", "tiny", "--dir", ro], 3,
                                       ["is not writable: Read-only file system"])
        with ft.readonly_bind(stage):
            for cmd in (["run", "1a"], ["prepare", "1b"], ["clean", "all"]):
                with self.subTest(fs="bind", cmd=cmd):
                    self.check_refused(cmd + ["--scale", "tiny", "--dir", stage], 3,
                                       ["is not writable: Read-only file system"])

    def test_dir_is_a_file_or_a_dangling_link(self):
        afile = self.path("afile")
        with open(afile, "w") as f:
            f.write("x")
        dangling = self.path("dangling")
        os.symlink(self.path("nowhere"), dangling)
        loop = self.path("loop")
        os.symlink(loop, loop)
        for cmd in (["run", "1a"], ["prepare", "1a"], ["clean", "1a"]):
            with self.subTest(cmd=cmd):
                self.check_refused(cmd + ["--scale", "tiny", "--dir", afile], 3,
                                   ["--dir '%s': not a directory" % afile])
                self.check_refused(cmd + ["--scale", "tiny", "--dir", dangling], 3,
                                   ["--dir '%s' is a dangling symbolic link (to '%s')"
                                    % (dangling, self.path("nowhere"))])
                self.check_refused(cmd + ["--scale", "tiny", "--dir", loop], 3,
                                   ["--dir '%s': Too many levels of symbolic links" % loop])
        # a link to a real directory is fine: the summary names the real path
        stage = self.stage()
        link = self.path("link")
        os.symlink(stage, link)
        s, _ = self.run_json(["run", "4a", "--scale", "tiny", "--dir", link, "--start-in", "0"])
        self.assertEqual(s["dir"], os.path.realpath(stage))

    def test_out_that_cannot_be_written_is_refused_before_the_start(self):
        stage = self.stage()
        base = ["run", "1a", "--scale", "tiny", "--dir", stage]
        afile = self.path("afile")
        with open(afile, "w") as f:
            f.write("x")
        adir = self.path("adir")
        os.mkdir(adir)
        cases = [
            (["--out", self.path("missing", "s.json")], 3,
             ["cannot write in directory", "No such file or directory"]),
            (["--out", os.path.join(afile, "s.json")], 3, ["Not a directory"]),
            (["--out", adir], 2, ["--out '%s' is a directory" % adir]),
            (["--out", adir, "--force"], 2, ["--out '%s' is a directory" % adir]),
            (["--out", afile], 2, ["exists: not replacing it (use --force)"]),
        ]
        for extra, code, texts in cases:
            with self.subTest(extra=extra):
                self.check_refused(base + extra, code, texts)
        if ft.is_root():
            with ft.readonly_bind(adir):
                self.check_refused(base + ["--out", os.path.join(adir, "s.json")], 3,
                                   ["Read-only file system"])
            self.nobody_can_run()
            os.chmod(adir, 0o755)
            os.chmod(stage, 0o777)
            self.check_refused(base + ["--out", os.path.join(adir, "s.json")], 3,
                               ["cannot write in directory", "Permission denied"],
                               prefix=AS_NOBODY)


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
