# SPDX-License-Identifier: MIT
"""The collector's outputs checked (issue 13): a write error on stdout, --output,
--save-baseline or --plot exits 3 with the real cause (a real full tmpfs, /dev/full, a closed
stdout), leaving nothing behind and the old file whole; no output option replaces anything but
a regular file (a FIFO, a device node, a symbolic link, a directory)."""
import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

import clustertest as ct


def setUpModule():
    global BASE, RUN
    BASE = tempfile.mkdtemp(prefix="stagebench-outputs-test-")
    try:
        RUN = os.path.join(BASE, "run")
        os.mkdir(RUN)
        os.mkdir(os.path.join(BASE, "stage"))
        res = ct.run_nodes(["n1", "n2"], ["1a"], RUN, os.path.join(BASE, "stage"),
                           start_in=3.0)
        for n, (path, rc, err) in res.items():
            assert rc == 0, err
    except BaseException:
        shutil.rmtree(BASE, True)
        raise


def tearDownModule():
    shutil.rmtree(BASE, True)


@contextlib.contextmanager
def full_tmpfs(path):
    """A real tmpfs of 64 KiB on path, filled up (root only)."""
    os.makedirs(path)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise unittest.SkipTest("cannot mount a tmpfs: %s" % p.stderr.strip())
    try:
        with open(os.path.join(path, "old.txt"), "w") as f:
            f.write("the old report\n")
        fd = os.open(os.path.join(path, "fill"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while os.write(fd, b"x" * 4096) > 0:
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        yield path
    finally:
        if subprocess.run(["umount", path]).returncode != 0:
            subprocess.run(["umount", "-l", path])


class Outputs(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="case-", dir=BASE)
        self.addCleanup(shutil.rmtree, self.dir, True)

    def collect(self, args, **kw):
        cmd = ct.command("stagebench-collect") + [RUN] + list(args)
        kw.setdefault("stdout", subprocess.PIPE)
        p = subprocess.run(cmd, stderr=subprocess.PIPE, universal_newlines=True, env=ct.env(),
                           timeout=120, **kw)
        self.assertNotIn("Traceback", p.stderr)
        self.assertNotIn("Exception ignored", p.stderr)
        return p

    def test_stdout_full(self):
        with open("/dev/full", "w") as full:
            p = self.collect([], stdout=full)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("cannot write stdout: No space left on device", p.stderr)

    def test_stdout_closed(self):
        p = self.collect(["--format", "json"], stdout=None, preexec_fn=lambda: os.close(1))
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("cannot write stdout: Bad file descriptor", p.stderr)

    def test_outputs_on_a_full_filesystem(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to mount a tmpfs")
        with full_tmpfs(os.path.join(self.dir, "full")) as d:
            before = sorted(os.listdir(d))
            for opt in ("--output", "--save-baseline"):
                p = self.collect([opt, os.path.join(d, "old.txt")])
                self.assertEqual(p.returncode, 3, p.stderr)
                self.assertIn("cannot write %s %s/old.txt: No space left on device"
                              % (opt, d), p.stderr)
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                self.assertEqual(sorted(os.listdir(d)), before)  # no temporary file left
                with open(os.path.join(d, "old.txt")) as f:
                    self.assertEqual(f.read(), "the old report\n")

    def test_only_regular_files_replaced(self):
        fifo = os.path.join(self.dir, "fifo")
        os.mkfifo(fifo)
        target = os.path.join(self.dir, "target.txt")
        with open(target, "w") as f:
            f.write("someone's\n")
        link = os.path.join(self.dir, "link")
        os.symlink(target, link)
        things = [(fifo, "is a FIFO"), (link, "is a symbolic link"),
                  (self.dir, "is a directory")]
        if os.geteuid() == 0:
            null = os.path.join(self.dir, "null")
            os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            things.append((null, "is a character device"))
        for path, kind in things:
            mode = os.lstat(path).st_mode
            for opt in ("--output", "--save-baseline"):
                p = self.collect([opt, path])
                self.assertEqual(p.returncode, 3, p.stderr)
                self.assertIn("%s: only a regular file is replaced" % kind, p.stderr)
                self.assertEqual(os.lstat(path).st_mode, mode)
        with open(target) as f:
            self.assertEqual(f.read(), "someone's\n")
        # and a regular file is replaced, as before
        p = self.collect(["--output", target, "--format", "json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(target) as f:
            self.assertEqual(json.load(f)["nodes"]["expected"], 2)

    def test_plot_not_through_a_link(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("%s has no matplotlib" % sys.executable)
        target = os.path.join(self.dir, "target.svg")
        with open(target, "w") as f:
            f.write("someone's\n")
        link = os.path.join(self.dir, "plot.svg")
        os.symlink(target, link)
        p = self.collect(["--plot", link])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("is a symbolic link: only a regular file is replaced", p.stderr)
        self.assertTrue(os.path.islink(link))
        with open(target) as f:
            self.assertEqual(f.read(), "someone's\n")


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
