# SPDX-License-Identifier: MIT
"""Shared helpers of the fault tests: the fault shim, tmpfs mounts, signals, known pids.

Each test file is run as `python3 FILE BINARY SOURCE_DIR`; the shim's path comes from
$STAGEBENCH_FAULTSHIM (set by ctest) or is looked for beside the binary's build tree.
"""
import contextlib
import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import sbtest  # noqa: E402
from sbtest import listing, run  # noqa: E402,F401

KiB, MiB = 1024, 1024 * 1024


def setup_from_argv():
    sbtest.setup_from_argv()


def binary():
    return sbtest.BINARY


def shim_path():
    p = os.environ.get("STAGEBENCH_FAULTSHIM")
    if p:
        return p
    return os.path.join(os.path.dirname(sbtest.BINARY), "tests", "shim", "faultshim.so")


_runtime = None


def sanitizer_runtime():
    """The sanitizer runtime the binary links (ASan/TSan), which must come first in LD_PRELOAD."""
    global _runtime
    if _runtime is None:
        _runtime = ""
        try:
            out = subprocess.run(["ldd", sbtest.BINARY], capture_output=True, text=True).stdout
        except OSError:
            out = ""
        m = re.search(r"^\s*(lib[at]san\.so[.\d]*) => (\S+)", out, re.M)
        if m:
            _runtime = m.group(2)
    return _runtime


def shim_env(rules=None, path="stagebench.", delay_cpu=None, log=None, extra=None):
    """The environment that preloads the shim with these rules (see tests/shim/faultshim.c)."""
    if not os.path.exists(shim_path()):
        raise unittest.SkipTest("fault shim not built: %s" % shim_path())
    preload = [shim_path()]
    rt = sanitizer_runtime()
    if rt:
        preload.insert(0, rt)
    env = {"LD_PRELOAD": ":".join(preload)}
    if rules:
        env["FAULTSHIM"] = rules if isinstance(rules, str) else ";".join(rules)
    if path:
        env["FAULTSHIM_PATH"] = path
    if delay_cpu:
        env["FAULTSHIM_DELAY_CPU"] = delay_cpu
    if log:
        env["FAULTSHIM_LOG"] = log
    if extra:
        env.update(extra)
    return env


def is_root():
    return os.geteuid() == 0


def require_root(case):
    if not is_root():
        case.skipTest("needs root (mount, or a user other than the owner)")


@contextlib.contextmanager
def tmpfs(path, options="size=6m"):
    """Mount a tmpfs on path (root only) for the duration; always unmounted afterwards."""
    os.makedirs(path, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise unittest.SkipTest("cannot mount a tmpfs: %s" % p.stderr.strip())
    try:
        yield path
    finally:
        if subprocess.run(["umount", path], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", path], capture_output=True)


@contextlib.contextmanager
def readonly_bind(path):
    """Make path a read-only bind mount of itself for the duration (root only)."""
    p = subprocess.run(["mount", "--bind", path, path], capture_output=True, text=True)
    if p.returncode != 0:
        raise unittest.SkipTest("cannot bind-mount: %s" % p.stderr.strip())
    try:
        p = subprocess.run(["mount", "-o", "remount,ro,bind", path], capture_output=True,
                           text=True)
        if p.returncode != 0:
            raise unittest.SkipTest("cannot remount read-only: %s" % p.stderr.strip())
        yield path
    finally:
        if subprocess.run(["umount", path], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", path], capture_output=True)


def popen(args, env=None, prefix=None):
    full_env = dict(os.environ)
    full_env.pop("STAGEBENCH_DIR", None)
    if env:
        full_env.update(env)
    return subprocess.Popen((prefix or []) + [sbtest.BINARY] + list(args), env=full_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def reap(proc):
    """Kill proc if it still runs, and close its pipes (a cleanup)."""
    if proc.poll() is None:
        proc.kill()
    try:
        proc.communicate(timeout=30)
    except (ValueError, OSError, subprocess.TimeoutExpired):
        pass


def popen_known_pid(args, env=None):
    """Start stagebench held at a shell `read`, so its pid is known before it runs.

    Returns (proc, go): the shell execs the binary (same pid) once go() is called.
    """
    full_env = dict(os.environ)
    full_env.pop("STAGEBENCH_DIR", None)
    if env:
        full_env.update(env)
    proc = subprocess.Popen(["sh", "-c", 'read _ && exec "$0" "$@"', sbtest.BINARY] + list(args),
                            env=full_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)

    def go():
        proc.stdin.write("go\n")
        proc.stdin.flush()  # communicate() closes it

    return proc, go


def wait_for(cond, timeout=30.0, step=0.01):
    """Poll cond() until it is true; returns its value, or fails the test after timeout."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError("timed out waiting for %r" % cond)
        time.sleep(step)


def read_text(path):
    """The text of path, "" when it does not exist (yet)."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def lines(text):
    return [l for l in text.splitlines() if l.strip()]


def block_generations(path):
    """The (generation, offset) of every 4 KiB block header of a stagebench file."""
    out = []
    with open(path, "rb") as f:
        off = 0
        while True:
            b = f.read(4096)
            if not b:
                break
            magic, gen, boff = (int.from_bytes(b[i:i + 8], "little") for i in (0, 8, 16))
            out.append((magic, gen, boff, off))
            off += len(b)
    return out


class FaultCase(sbtest.TempDirCase):
    """A temporary directory per test (removed afterwards, mounts undone first)."""

    def setUp(self):
        super().setUp()
        # TempDirCase removes the directory; make sure nothing is mounted below it then.
        self.addCleanup(self._unmount_below)
        os.chmod(self.dir, 0o755)

    def _unmount_below(self):
        with open("/proc/self/mounts") as f:
            points = [l.split()[1] for l in f]
        for p in reversed(points):
            if p.startswith(self.dir + "/") or p == self.dir:
                subprocess.run(["umount", "-l", p], capture_output=True)

    def summary(self, path):
        with open(path) as f:
            return json.load(f)

    def assert_one_error_line(self, stderr, *texts):
        errs = [l for l in lines(stderr) if l.startswith("stagebench: error: ")]
        self.assertTrue(errs, stderr)
        for t in texts:
            self.assertTrue(any(t in l for l in errs), "%r not in %s" % (t, stderr))
