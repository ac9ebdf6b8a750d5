# SPDX-License-Identifier: MIT
"""The fields of stagebench.node/2, and every node starting cold, seen with fincore
(util-linux): the writer of a replica keeps none of it cached, and each part of 2 and 3 (and
1a, 1b) starts with this node's cache of its replica dropped."""
import csv
import ctypes
import io
import json
import mmap
import os
import shutil
import subprocess
import time
import unittest

import sbtest
from sbtest import run

FINCORE = shutil.which("fincore")
MiB = 1024 * 1024


def cached_fraction(path):
    """The share of path's pages in this machine's page cache, by fincore."""
    p = subprocess.run([FINCORE, "--bytes", "--noheadings", "--raw", "--output", "RES,SIZE",
                        path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, check=True)
    res, size = (int(x) for x in p.stdout.split())
    return res / size


def wait_for(cond, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.005)
    raise AssertionError("timed out")


class Fields(sbtest.TempDirCase):
    def test_instants_build_overrides(self):
        stage = self.stage()
        s, _ = self.run_json(["run", "1a", "1b", "2", "--scale", "tiny", "--dir", stage,
                              "--start-in", "0.3"])
        self.assertEqual(s["schema"], "stagebench.node/3")
        self.assertEqual(s["build"]["version"], s["version"])
        self.assertRegex(s["build"]["id"], r"^%s-[0-9a-f]{16}$" % s["version"])
        self.assertEqual(s["run"]["overrides"], [])
        self.assertEqual((s["errors"], s["error_reasons"]), ([], []))
        # what each part counts, from its kind (the catalogue says the same)
        cat = {p["part"]: p for p in json.loads(run(["list", "--format", "json"]).stdout)["parts"]}
        units = {"1a": ("bytes read", "B/s"), "1b": ("pages touched", "pages/s"),
                 "2a": ("bytes read", "B/s"), "2b": ("bytes read", "B/s"),
                 "2c": ("bytes read", "B/s")}
        for t in s["tests"]:
            self.assertEqual((t["error"], t["reason"]), (None, None))
            for p in t["parts"]:
                self.assertEqual((p["counted"], p["rate_unit"]), units[p["part"]])
                self.assertEqual((p["counted"], p["rate_unit"]),
                                 (cat[p["part"]]["counted"], cat[p["part"]]["rate_unit"]))
                self.assertEqual((p["error"], p["reason"]), (None, None))
                for th in p["per_thread"]:
                    self.assertEqual((th["error"], th["reason"]), (None, None))
                self.assertIsInstance(p["start_at_ns"], int)
                self.assertAlmostEqual(p["start_at_ns"] / 1e9, p["start_at"], delta=1e-6)
                r, f = p["release_at_ns"], p["first_io_at_ns"]
                # released at T or after (T is a double: within a microsecond of the integer)
                self.assertGreaterEqual(r["min"], p["start_at_ns"] - 1000)
                self.assertLessEqual(r["min"], r["max"])
                self.assertGreaterEqual(f["min"], r["min"])
                self.assertLessEqual(f["min"], f["max"])
                self.assertAlmostEqual(p["io_start_spread_s"], (f["max"] - f["min"]) / 1e9,
                                       places=9)
                self.assertIsInstance(p["late"], bool)
                self.assertEqual(p["late"], p["late_by_s"] > 0)
                self.assertEqual(p["clock_step_total_s"], 0)
                self.assertIsInstance(p["warnings"], list)
                self.assertEqual((p["cache_expected"], p["cache_dropped"]), ("cold", True))
                self.assertIsNone(p["cache_residency_error"])
                self.assertFalse(p["replica_changed"])
                for th in p["per_thread"]:
                    self.assertIsInstance(th["release_at_ns"], int)
                    self.assertGreaterEqual(th["first_io_at_ns"], th["release_at_ns"])
                    # the same release read twice in a row (a shared machine: 1 ms apart at most)
                    self.assertAlmostEqual(th["release_at_ns"] / 1e9, th["release_at"],
                                           delta=1e-3)
        a, b = s["tests"][0]["parts"][0], s["tests"][1]["parts"][0]
        # 1a: the first pass apart from the median of the others
        self.assertEqual(a["part"], "1a")
        for key in ("first_pass_s", "rest_pass_median_s"):
            mmm = a[key]
            self.assertLessEqual(mmm["min"], mmm["median"])
            self.assertLessEqual(mmm["median"], mmm["max"])
            self.assertGreater(mmm["min"], 0)
            self.assertEqual(mmm["max"], max(th[key] for th in a["per_thread"]))
        self.assertIsNotNone(a["bandwidth_Bps"])
        self.assertNotIn("mapped_Bps", a)
        # 1b: mapped bytes named so, its rate in pages
        self.assertEqual(b["part"], "1b")
        self.assertIsNone(b["bandwidth_Bps"])
        self.assertEqual(b["mapped_bytes"], b["bytes"])
        self.assertAlmostEqual(b["mapped_Bps"], b["bytes"] / b["node_time_s"], delta=1)
        self.assertAlmostEqual(b["pages_per_s"], b["pages"] / b["node_time_s"], delta=1)
        self.assertNotIn("first_pass_s", b)

    def test_one_pass_has_no_other_passes_and_overrides_are_named(self):
        stage = self.stage()
        s, _ = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in",
                              "0.2", "--passes", "1", "--file-size", "1M"])
        self.assertEqual(s["run"]["overrides"], ["file_size", "passes"])
        a = s["tests"][0]["parts"][0]
        self.assertIsNone(a["rest_pass_median_s"])
        self.assertGreater(a["first_pass_s"]["min"], 0)
        for th in a["per_thread"]:
            self.assertIsNone(th["rest_pass_median_s"])
        s, _ = self.run_json(["run", "2a", "--scale", "tiny", "--dir", stage, "--start-in",
                              "0.2", "--count", "7"])
        self.assertEqual(s["run"]["overrides"], ["count"])

    def test_text_and_csv_name_units(self):
        stage = self.stage()
        p = run(["run", "1a", "1b", "--scale", "tiny", "--dir", stage, "--start-in", "0.2"])
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = {l.split()[1]: l for l in p.stdout.splitlines() if l[:4] in ("1a  ", "1b  ")}
        self.assertRegex(rows["1a"], r" [0-9.]+ [KMG]iB/s ")
        self.assertRegex(rows["1b"], r" [0-9.]+ [kM]page/s ")
        self.assertNotRegex(rows["1b"], r"iB/s")
        self.assertRegex(p.stdout, r"\n     \^ first pass: .* min, .* median, .* max over "
                         r"threads; other passes \(each thread's median\): ")
        self.assertIn("\nops/s: passes (1a, 1b), chunks (2, 3) or files (4)", p.stdout)
        p = run(["run", "1a", "1b", "--scale", "tiny", "--dir", stage, "--start-in", "0.2",
                 "--format", "csv"])
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        a, b = rows
        self.assertEqual((a["op"], b["op"]), ("pass", "pass"))
        self.assertEqual(b["bandwidth_Bps"], "")
        self.assertGreater(float(b["mapped_Bps"]), 0)
        self.assertGreater(float(b["pages_per_s"]), 0)
        self.assertGreater(float(a["bandwidth_Bps"]), 0)
        self.assertEqual(a["mapped_Bps"], "")
        self.assertGreater(float(a["first_pass_median_s"]), 0)
        self.assertEqual(b["first_pass_median_s"], "")
        self.assertEqual(a["cache_dropped"], "true")


@unittest.skipIf(FINCORE is None, "fincore (util-linux) is needed")
class Cold(sbtest.TempDirCase):
    def test_prepare_leaves_the_writer_cold(self):
        stage = self.stage()
        for test, name in (("2", "stagebench.2.8MiB"), ("1a", "stagebench.1a.4MiB")):
            p = run(["prepare", test, "--scale", "tiny", "--dir", stage])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertLess(cached_fraction(os.path.join(stage, name)), 0.10)

    def test_run_that_creates_its_replica_starts_cold(self):
        stage = self.stage()
        n = len(sbtest.info()["threads"])
        out = self.path("s.json")
        proc = subprocess.Popen([sbtest.BINARY, "run", "2a", "--scale", "tiny", "--dir", stage,
                                 "--start-in", "1.5", "--out", out],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(proc.kill)
        # the replica was created by this run and its threads have it open: in the wait
        wait_for(lambda: sbtest.opened_by_all(proc, "stagebench.2.8MiB", n))
        self.assertLess(cached_fraction(os.path.join(stage, "stagebench.2.8MiB")), 0.10)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err)
        s = self.summary_file(out)
        self.assertTrue(s["tests"][0]["prepared"])
        part = s["tests"][0]["parts"][0]
        self.assertLess(part["cache_residency"], 0.10)
        self.assertEqual(part["warnings"], [w for w in part["warnings"] if ": late: " in w])

    def test_2b_2c_start_cold_after_2a(self):
        stage = self.stage()
        replica = os.path.join(stage, "stagebench.2.8MiB")
        self.assertEqual(run(["prepare", "2", "--scale", "tiny", "--dir", stage]).returncode, 0)
        # 2a's reads leave the replica cached on this node (what 2b and 2c would read from)
        with open(replica, "rb") as f:
            while f.read(MiB):
                pass
        self.assertGreater(cached_fraction(replica), 0.5)
        at = time.time() + 1.0
        out = self.path("s.json")
        proc = subprocess.Popen([sbtest.BINARY, "run", "2", "--scale", "tiny", "--dir", stage,
                                 "--start-at", "%.6f" % at, "--interval", "1.5", "--out", out],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(proc.kill)
        # between 2a (at T, a few ms) and 2b (at T + 1.5): dropped once 2b was set up
        time.sleep(max(0.0, at + 1.0 - time.time()))
        between = cached_fraction(replica)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err)
        self.assertLess(between, 0.10)
        parts = self.summary_file(out)["tests"][0]["parts"]
        self.assertEqual([p["part"] for p in parts], ["2a", "2b", "2c"])
        for p in parts:
            self.assertTrue(p["cache_dropped"])
            self.assertEqual(p["cache_expected"], "cold")
            self.assertLess(p["cache_residency"], 0.10, p["part"])

    def test_pages_locked_by_another_process_warn(self):
        # the drop cannot evict pages that another process keeps locked in memory: the part
        # that should start cold says that it did not
        stage = self.stage()
        replica = os.path.join(stage, "stagebench.2.8MiB")
        self.assertEqual(run(["prepare", "2", "--scale", "tiny", "--dir", stage]).returncode, 0)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long]
        fd = os.open(replica, os.O_RDONLY)
        self.addCleanup(os.close, fd)
        size = os.fstat(fd).st_size
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        self.assertNotIn(addr, (None, ctypes.c_void_p(-1).value))
        self.addCleanup(libc.munmap, ctypes.c_void_p(addr), ctypes.c_size_t(size))
        if libc.mlock(ctypes.c_void_p(addr), ctypes.c_size_t(size)) != 0:
            self.skipTest("mlock of 8 MiB refused: %s" % os.strerror(ctypes.get_errno()))
        s, _ = self.run_json(["run", "2a", "--scale", "tiny", "--dir", stage, "--start-in",
                              "0.2"])
        part = s["tests"][0]["parts"][0]
        self.assertTrue(part["cache_dropped"])
        self.assertEqual(part["cache_residency"], 1)
        warning = ("2a: 100% of the replica is in this node's page cache at the release, "
                   "though the part should start cold: its reads may come from this node's "
                   "cache")
        self.assertIn(warning, part["warnings"])
        self.assertIn(warning, s["warnings"])

    def summary_file(self, path):
        with open(path) as f:
            return json.load(f)


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
