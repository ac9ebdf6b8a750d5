# SPDX-License-Identifier: MIT
"""I/O errors, EINTR and short transfers through the fault shim. A short transfer or an
EINTR is retried and counted (`retries`); a real error ends the part with a named error
(exit 1, summary failed); a failure anywhere, set-up included, releases every thread."""
import json
import os
import re
import time
import unittest

import faulttest as ft
from faulttest import run


class IOErrors(ft.FaultCase):
    def prepared(self, test):
        stage = self.stage()
        p = run(["prepare", test, "--scale", "tiny", "--dir", stage])
        self.assertEqual(p.returncode, 0, p.stderr)
        return stage

    def check_failed(self, s, p, error_re, reason="io_error"):
        part = s["tests"][0]["parts"][0]
        self.assertEqual(part["status"], "failed")
        self.assertEqual(s["tests"][0]["status"], "failed")
        self.assertEqual(s["status"], "failed")
        self.assertRegex(part["error"], r"^thread \d+: " + error_re)
        errs = [l for l in ft.lines(p.stderr) if l.startswith("stagebench: error: ")]
        self.assertTrue(errs)
        for l in errs:
            self.assertRegex(l, r"^stagebench: error: %s thread \d+: " % part["part"])
        failed = [t for t in part["per_thread"] if t["error"]]
        self.assertEqual(len(failed), 1, part["per_thread"])
        # the machine reason beside the words: the part's, the thread's and the node's
        self.assertEqual((part["reason"], s["tests"][0]["reason"], failed[0]["reason"]),
                         (reason,) * 3)
        self.assertEqual(s["error_reasons"], [reason] * len(s["errors"]))
        return part

    def test_read_errors_end_the_part(self):
        stage = self.prepared("2")
        real = os.path.realpath(stage)
        cases = [
            # 1a: read(2) fails at some offset of the replica
            (["1a"], "read:7:EIO",
             r"read '%s/stagebench\.1a\.4MiB' at \d+: Input/output error$"),
            # 2b: pread(2) on NFS: a stale file handle, or a lost server
            (["2b"], "pread:12:ESTALE",
             r"read '%s/stagebench\.2\.8MiB' at \d+: Stale file handle$"),
            (["2a"], "pread:30:EREMOTEIO",
             r"read '%s/stagebench\.2\.8MiB' at \d+: Remote I/O error$"),
            # 1a opens the replica on every pass
            (["1a", "--passes", "50"], "open:5:ENOENT",
             r"open '%s/stagebench\.1a\.4MiB': No such file or directory$"),
            # 4c: the third 1 MiB write of its one file
            (["4c"], "write:3:EIO",
             r"write '%s/stagebench\.4c\.[^']+' at \d+: Input/output error$"),
        ]
        for args, rule, error_re in cases:
            with self.subTest(rule=rule):
                s, p = self.run_json(["run"] + args + ["--scale", "tiny", "--dir", stage,
                                                       "--start-in", "0"],
                                     expect=1, env=ft.shim_env(rule))
                self.check_failed(s, p, error_re % re.escape(real))
        self.assertEqual(sorted(os.listdir(stage)), ["stagebench.1a.4MiB", "stagebench.2.8MiB"])

    def test_one_failure_stops_every_thread(self):
        stage = self.prepared("1a")
        n = len(ft.sbtest.info()["threads"])
        t0 = time.monotonic()
        # 100000 passes would read 400 GB per thread: the others must stop at once
        s, p = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0",
                              "--passes", "100000"], expect=1,
                             env=ft.shim_env("read:400:EIO"))
        self.assertLess(time.monotonic() - t0, 30)
        part = self.check_failed(s, p, r"read '[^']+' at \d+: Input/output error$")
        self.assertLess(part["ops"], 100000 * n // 10)
        self.assertLess(part["node_time_s"], 20)

    def test_short_transfers_and_eintr_are_retried_and_counted(self):
        stage = self.prepared("2")
        n = len(ft.sbtest.info()["threads"])
        params = {x["part"]: x for x in
                  json.loads(run(["list", "--scale", "tiny", "--format", "json"]).stdout)["parts"]}
        cases = [
            ("1a", "read:2:short;read:7:EINTR",
             params["1a"]["passes"] * params["1a"]["file_bytes"]),
            # the first preads of the run are the replica's probes: the faults come later
            ("2a", "pread:50:short;pread:60:EINTR",
             params["2a"]["count"] * params["2a"]["chunk_bytes"]),
            ("4a", "write:5:short;write:9:EINTR",
             params["4a"]["count"] * params["4a"]["chunk_bytes"]),
        ]
        log = self.path("shim.log")
        for part_name, rules, per_thread in cases:
            with self.subTest(part=part_name):
                if os.path.exists(log):
                    os.unlink(log)
                s, p = self.run_json(["run", part_name, "--scale", "tiny", "--dir", stage,
                                      "--start-in", "0"], env=ft.shim_env(rules, log=log))
                self.assertEqual(ft.read_text(log).count("\n"), 2)  # both were injected
                part = s["tests"][0]["parts"][0]
                self.assertEqual(part["status"], "ok")
                self.assertEqual(part["retries"], 2)
                self.assertEqual(part["bytes"], n * per_thread)
                self.assertIsNone(part["error"])
                self.assertEqual(s["errors"], [])

    def test_setup_failure_releases_everyone(self):
        stage = self.prepared("2")
        # the first open() of the replica is one thread's set-up of 2a (the driver's own
        # probes use openat): it fails before the ready barrier, and nobody waits for the
        # start 20 s away, nor for that thread
        t0 = time.monotonic()
        s, p = self.run_json(["run", "2", "--scale", "tiny", "--dir", stage,
                              "--start-in", "20"], expect=1,
                             env=ft.shim_env("open:1:EACCES", path="stagebench.2"))
        self.assertLess(time.monotonic() - t0, 10)
        # a thread that failed before the ready barrier: the node was not ready
        part = self.check_failed(s, p, r"open '[^']+/stagebench\.2\.8MiB': Permission denied$",
                                 reason="not_ready")
        self.assertEqual(part["part"], "2a")
        self.assertEqual(part["ops"], 0)
        for t in part["per_thread"]:
            self.assertEqual(t["release_at"], 0)  # nobody was released

    def test_replica_flush_error_removes_the_temporary(self):
        stage = self.stage()
        p = run(["prepare", "1a", "--scale", "tiny", "--dir", stage],
                env=ft.shim_env("fsync:1:EIO"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(ft.lines(p.stderr)[-1],
                         r"preparing replica: fsync '[^']+/stagebench\.1a\.4MiB\.tmp\.[^']+': "
                         r"Input/output error$")
        self.assertEqual(os.listdir(stage), [])


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
