# SPDX-License-Identifier: MIT
"""Shared helpers of the integration tests: run the real binary in a temporary directory."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

BINARY = None
SOURCE = None


def setup_from_argv():
    """argv: test.py BINARY SOURCE_DIR [unittest args]. Without STAGEBENCH_LOCK_DIR (ctest
    gives each test file one), the runs of this process take their node locks in a temporary
    directory of their own, not in the machine's (where another test's nodes of the same
    names hold them)."""
    global BINARY, SOURCE
    if len(sys.argv) < 3:
        sys.exit("usage: %s STAGEBENCH_BINARY SOURCE_DIR" % sys.argv[0])
    BINARY = os.path.abspath(sys.argv[1])
    SOURCE = os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    if not os.environ.get("STAGEBENCH_LOCK_DIR"):
        locks = tempfile.mkdtemp(prefix="stagebench-locks-")
        atexit.register(shutil.rmtree, locks, True)
        os.environ["STAGEBENCH_LOCK_DIR"] = os.path.join(locks, "locks")


def run(args, timeout=120, env=None, prefix=None):
    """Run stagebench with a list of arguments; returns CompletedProcess (text)."""
    full_env = dict(os.environ)
    full_env.pop("STAGEBENCH_DIR", None)
    if env:
        full_env.update(env)
    cmd = (prefix or []) + [BINARY] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)


def listing(path):
    """Every entry below path, relative, for 'nothing was created' checks."""
    out = []
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            out.append(os.path.relpath(os.path.join(root, n), path))
    return sorted(out)


def info():
    p = run(["info", "--format", "json"])
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def opened_by_all(proc, name, n):
    """Whether n descriptors of proc (one per worker thread) have open a file whose path ends
    in name: the threads' set-up is over and the wait for the start began. True too when proc
    has ended (or its /proc entry is gone), so that a wait on it ends and the test's own checks
    say why."""
    fds = "/proc/%d/fd" % proc.pid
    try:
        links = [os.readlink(os.path.join(fds, f)) for f in os.listdir(fds)]
    except OSError:
        return proc.poll() is not None
    return sum(l.endswith(name) for l in links) >= n


class TempDirCase(unittest.TestCase):
    """A fresh temporary directory per test under /tmp, removed afterwards."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="stagebench-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def stage(self):
        d = self.path("stage")
        os.makedirs(d, exist_ok=True)
        return d

    def run_json(self, args, expect=0, **kw):
        out = self.path("summary-%d.json" % time.monotonic_ns())
        p = run(list(args) + ["--out", out], **kw)
        self.assertEqual(p.returncode, expect, "exit %d, stderr: %s" % (p.returncode, p.stderr))
        with open(out) as f:
            return json.load(f), p
