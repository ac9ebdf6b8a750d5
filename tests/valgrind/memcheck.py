# SPDX-License-Identifier: MIT
"""One run of every test at tiny scale, and of the other commands, under valgrind memcheck.

usage: memcheck.py STAGEBENCH_BINARY SOURCE_DIR [VALGRIND]

Every invocation must exit with its expected status, and valgrind must report no error and no
leak of any kind (definite, indirect, possible or still reachable): a memcheck error exits 99.
Threads are pinned with hwloc as usual; valgrind runs them one at a time, which is slow but
exact. hwloc's optional plugins (PCI, OpenCL, GL, libxml) are not loaded: the libraries they
pull in keep a few blocks reachable after dlclose, and stagebench uses none of what they add.
Registered with ctest when STAGEBENCH_VALGRIND=ON.
"""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import sbtest  # noqa: E402

VALGRIND = ["valgrind"]
VG_ERROR = 99


def setup_from_argv():
    if len(sys.argv) >= 4:
        VALGRIND[0] = sys.argv[3]
        del sys.argv[3]
    sbtest.setup_from_argv()


class Memcheck(sbtest.TempDirCase):
    def memcheck(self):
        """The valgrind command line and environment; the log goes to a new file."""
        log = self.path("memcheck-%d.log" % len(os.listdir(self.dir)))
        prefix = VALGRIND + ["--tool=memcheck", "--error-exitcode=%d" % VG_ERROR,
                             "--leak-check=full", "--show-leak-kinds=all",
                             "--errors-for-leak-kinds=all", "--track-origins=yes",
                             "--log-file=" + log]
        plugins = self.path("no-hwloc-plugins")
        os.makedirs(plugins, exist_ok=True)
        return prefix, {"HWLOC_PLUGINS_PATH": plugins}, log

    def check_report(self, args, code, expect, stderr, log):
        with open(log) as f:
            report = f.read()
        self.assertEqual(code, expect,
                         "stagebench %s: exit %d (memcheck errors exit %d)\nstderr: %s\n%s"
                         % (" ".join(args), code, VG_ERROR, stderr, report))
        self.assertIn("ERROR SUMMARY: 0 errors", report, report)

    def vg(self, args, expect=0):
        """Run stagebench under memcheck: the expected exit, no error, no leak."""
        prefix, env, log = self.memcheck()
        p = sbtest.run(args, timeout=600, prefix=prefix, env=env)
        self.check_report(args, p.returncode, expect, p.stderr, log)
        return p

    def test_every_test_at_tiny_scale(self):
        stage = self.stage()
        for test in ("1a", "1b", "2", "3", "4", "null"):
            with self.subTest(test=test):
                out = self.path("summary-%s.json" % test)
                self.vg(["run", test, "--scale", "tiny", "--dir", stage, "--start-in", "0",
                         "--verify", "--out", out])
                with open(out) as f:
                    s = json.load(f)
                self.assertEqual(s["status"], "ok")

    def test_other_commands(self):
        stage = self.stage()
        base = ["--scale", "tiny", "--dir", stage]
        self.vg(["prepare", "all"] + base)
        self.vg(["run", "2b", "--count", "3", "--chunk", "64k", "--format", "csv", "--repeat", "2",
                 "--start-in", "0"] + base)
        self.vg(["run", "all", "--dry-run"] + base)
        self.vg(["list", "--scale", "tiny", "--format", "json"])
        self.vg(["info", "--format", "json", "--dir", stage])
        self.vg(["clean", "all"] + base)
        self.vg(["run", "1a", "--xfer", "1.5.3M"] + base, expect=2)
        self.vg(["run", "1a", "--scale", "tiny", "--dir", self.path("missing")], expect=3)
        self.vg(["--help"])

    def test_interrupted_while_waiting(self):
        """SIGINT after the replica is made, during set-up or the wait: exit 130, all freed."""
        stage = self.stage()
        prefix, env, log = self.memcheck()
        full_env = dict(os.environ, **env)
        full_env.pop("STAGEBENCH_DIR", None)
        args = ["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "60"]
        p = subprocess.Popen(prefix + [sbtest.BINARY] + args, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=full_env)
        try:
            deadline = time.monotonic() + 120
            while "stagebench.1a.4MiB" not in os.listdir(stage) and p.poll() is None:
                self.assertLess(time.monotonic(), deadline, "no replica after 120 s")
                time.sleep(0.1)
            time.sleep(1)
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.check_report(args, p.returncode, 130, err, log)
        self.assertEqual(os.listdir(stage), ["stagebench.1a.4MiB"])

if __name__ == "__main__":
    setup_from_argv()
    unittest.main(verbosity=2)
