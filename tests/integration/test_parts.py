# SPDX-License-Identifier: MIT
"""Every part of the spec at tiny scale: exact counts, multi-part timing, replicas, verification."""
import json
import os
import re
import shutil
import subprocess
import time
import unittest

import sbtest
from sbtest import run

KiB, MiB = 1024, 1024 * 1024


def catalogue():
    p = run(["list", "--scale", "tiny", "--format", "json"])
    return json.loads(p.stdout)


def tiny():
    return {x["part"]: x for x in catalogue()["parts"]}


class Parts(sbtest.TempDirCase):
    def run_all(self, extra=()):
        stage = self.stage()
        s, p = self.run_json(["run", "all", "--scale", "tiny", "--dir", stage, "--start-in", "0.5",
                              "--verify"] + list(extra))
        return stage, s

    def test_every_part_exact_counts(self):
        stage, s = self.run_all()
        cat = catalogue()
        params = {x["part"]: x for x in cat["parts"]}
        n = len(s["threads"])
        # the tests of `run all`, as the catalogue says; the spec's first, in order
        in_all = [t["test"] for t in cat["tests"] if t["in_all"]]
        self.assertEqual([t["test"] for t in s["tests"]], in_all)
        self.assertEqual(in_all[:5], ["1a", "1b", "2", "3", "4"])
        replica = {t["test"]: t["has_replica"] for t in cat["tests"]}
        page = os.sysconf("SC_PAGE_SIZE")
        for t in s["tests"]:
            self.assertEqual(t["status"], "ok", t)
            self.assertAlmostEqual(t["result_s"], sum(p["node_time_s"] for p in t["parts"]),
                                   places=9)
            for part in t["parts"]:
                q = params[part["part"]]
                with self.subTest(part=part["part"]):
                    self.assertEqual(part["status"], "ok")
                    self.assertEqual(len(part["per_thread"]), n)
                    self.assertGreater(part["node_time_s"], 0)
                    self.assertGreaterEqual(part["node_time_s"], part["thread_time_s"]["max"])
                    if part["kind"] == "seqread":
                        per = q["passes"] * q["file_bytes"]
                        ops = q["passes"]
                    elif part["kind"] == "mmaptouch":
                        per = q["passes"] * q["file_bytes"]
                        ops = q["passes"]
                        self.assertEqual(part["pages"], n * q["passes"] * q["file_bytes"] // page)
                        self.assertGreater(part["pages_per_s"], 0)
                    elif part["kind"] == "randread":
                        per = q["count"] * q["chunk_bytes"]
                        ops = q["count"]
                    elif part["kind"] == "manyfiles":
                        per = q["count"] * q["chunk_bytes"]
                        ops = q["count"]
                        self.assertEqual(part["files"], n * q["count"])
                        self.assertGreater(part["files_per_s"], 0)
                    else:
                        # a kind this test does not know: what every kind keeps
                        per, ops = part["per_thread"][0]["bytes"], part["per_thread"][0]["ops"]
                        self.assertGreater(ops, 0)
                    self.assertEqual(part["bytes"], n * per)
                    self.assertEqual(part["ops"], n * ops)
                    self.assertEqual(part["latency_hist"]["count"], n * ops)
                    for th in part["per_thread"]:
                        self.assertEqual(th["bytes"], per)
                        self.assertEqual(th["ops"], ops)
                    if replica[t["test"]]:
                        self.assertTrue(part["verified"])
                        self.assertIsNotNone(part["cache_residency"])
                        self.assertTrue(0.0 <= part["cache_residency"] <= 1.0)
        # test 4 (and every test without a replica) leaves nothing behind; the replicas stay
        spec = ["stagebench.1a.4MiB", "stagebench.1b.8MiB", "stagebench.2.8MiB",
                "stagebench.3.8MiB"]
        left = sorted(os.listdir(stage))
        self.assertEqual([f for f in left if f in spec], spec)
        self.assertEqual(len(left), sum(1 for t in in_all if replica[t]), left)

    def test_parts_start_together_on_fresh_instants(self):
        _, s = self.run_all()
        parts = [p for t in s["tests"] for p in t["parts"]]
        for a, b in zip(parts, parts[1:]):
            # part k+1 starts after every thread of part k is done
            end = max(th["release_at"] + th["time_s"] for th in a["per_thread"])
            self.assertGreater(b["start_at"], end)
            for th in b["per_thread"]:
                self.assertGreaterEqual(th["release_at"], b["start_at"])

    def test_single_part_and_overrides(self):
        stage = self.stage()
        s, _ = self.run_json(["run", "2b", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                              "--count", "3", "--chunk", "2M", "--xfer", "256k"])
        self.assertEqual(len(s["tests"]), 1)
        parts = s["tests"][0]["parts"]
        self.assertEqual([p["part"] for p in parts], ["2b"])
        p = parts[0]
        n = len(s["threads"])
        self.assertEqual((p["count"], p["chunk_bytes"], p["xfer_bytes"]), (3, 2 * MiB, 256 * KiB))
        self.assertEqual(p["bytes"], n * 3 * 2 * MiB)
        self.assertEqual(p["ops"], n * 3)
        s, _ = self.run_json(["run", "2a", "2c", "--scale", "tiny", "--dir", stage,
                              "--start-in", "0.3"])
        self.assertEqual([p["part"] for p in s["tests"][0]["parts"]], ["2a", "2c"])
        s, _ = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                              "--passes", "2", "--file-size", "1M"])
        p = s["tests"][0]["parts"][0]
        self.assertEqual((p["passes"], p["file_bytes"]), (2, MiB))
        self.assertTrue(os.path.exists(os.path.join(stage, "stagebench.1a.1MiB")))

    def assert_late_release(self, p):
        """A part whose start was not missed but a thread was released past the 2 ms bound."""
        self.assertGreater(p["late_by_s"], 0.002)
        self.assertEqual(p["late_by_s"], max(t["late_by_s"] for t in p["per_thread"]))
        self.assertTrue(any(w.startswith("%s: late: thread" % p["part"]) for w in p["warnings"]))

    def test_interval_grid_and_late(self):
        stage = self.stage()
        s, _ = self.run_json(["run", "2", "--scale", "tiny", "--dir", stage, "--start-in", "0.5",
                              "--interval", "0.4"])
        parts = s["tests"][0]["parts"]
        t0 = parts[0]["start_at"]
        for k, p in enumerate(parts):
            self.assertAlmostEqual(p["start_at"], t0 + 0.4 * k, places=5)
            self.assertEqual(p["status"], "ok")
            if p["late"]:
                # a thread preempted in its wait (this machine is shared) is late, and named
                self.assert_late_release(p)
        # a grid too tight for the parts: the later ones are marked late, not failed
        s, _ = self.run_json(["run", "4", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                              "--interval", "0.001", "--fsync"])
        parts = s["tests"][0]["parts"]
        if parts[0]["late"]:
            self.assert_late_release(parts[0])
        self.assertTrue(any(p["late"] for p in parts[1:]))
        for p in parts[1:]:
            if p["late"]:
                self.assertEqual(p["status"], "late")
                self.assertGreater(p["late_by_s"], 0)
            self.assertTrue(p["fsync"])
        self.assertEqual(s["tests"][0]["status"], "late")

    def test_repeat_recreates_1a_1b_2_keeps_3(self):
        stage = self.stage()
        s, _ = self.run_json(["run", "1a", "1b", "2c", "3b", "--scale", "tiny", "--dir", stage,
                              "--start-in", "0.3", "--repeat", "2", "--verify"])
        gens = {}
        for t in s["tests"]:
            gens.setdefault(t["test"], []).append(t["generation"])
            self.assertEqual(t["status"], "ok")
        for name in ("1a", "1b", "2"):
            self.assertNotEqual(gens[name][0], gens[name][1], name)
        self.assertEqual(gens["3"][0], gens["3"][1])

    def test_same_seed_same_offsets(self):
        if not shutil.which("strace"):
            self.skipTest("strace is not installed")
        stage = self.stage()
        run(["prepare", "2", "--scale", "tiny", "--dir", stage])

        def offsets(seed):
            log = self.path("strace-%s.log" % seed)
            p = run(["run", "2a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                     "--seed", seed, "--node", "n1", "--threads", "1"],
                    prefix=["strace", "-f", "-qq", "-s", "0", "-e", "trace=pread64", "-o", log],
                    # LeakSanitizer cannot work under ptrace
                    env={"ASAN_OPTIONS": "detect_leaks=0"})
            self.assertEqual(p.returncode, 0, p.stderr)
            by_thread = {}
            with open(log) as f:
                for m in re.finditer(r"^(\d+) +pread64\(\d+, \"\"\.*, 4096, (\d+)\)", f.read(),
                                     re.M):
                    by_thread.setdefault(m.group(1), []).append(int(m.group(2)))
            # the worker thread's reads; the replica probes of the main thread are apart
            return max(by_thread.values(), key=len)

        a, b, c = offsets("42"), offsets("42"), offsets("43")
        q = tiny()["2a"]
        self.assertEqual(len(a), q["count"])
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        for off in a + c:
            self.assertEqual(off % q["chunk_bytes"], 0)
            self.assertLessEqual(off + q["chunk_bytes"], q["file_bytes"])

    def test_spec_scale_needs_prepared_3(self):
        stage = self.stage()
        s, p = self.run_json(["run", "3", "4a", "--scale", "spec", "--dir", stage,
                              "--start-in", "0.5"], expect=3)
        self.assertIn("prepare 3", p.stderr)
        by = {t["test"]: t for t in s["tests"]}
        self.assertEqual(by["3"]["status"], "skipped")
        self.assertEqual(by["3"]["parts"], [])
        self.assertEqual(by["4"]["status"], "ok")
        self.assertEqual(by["4"]["parts"][0]["files"], 1200 * len(s["threads"]))
        self.assertEqual(os.listdir(stage), [])

    def test_keep_keeps_test4_files(self):
        stage = self.stage()
        s, _ = self.run_json(["run", "4a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                              "--keep", "--node", "nodeA"])
        n = len(s["threads"])
        names = os.listdir(stage)
        self.assertEqual(len(names), 50 * n)
        for name in names:
            self.assertRegex(name, r"^stagebench\.4a\.nodeA\.p\d+-[0-9a-f]{12}-r1\.t\d+\.\d{6}$")
            self.assertEqual(os.path.getsize(os.path.join(stage, name)), 4096)
        # repetitions never clash, even when their files are kept
        s, _ = self.run_json(["run", "4a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                              "--keep", "--node", "nodeA", "--repeat", "2"])
        self.assertEqual([t["status"] for t in s["tests"]], ["ok", "ok"])
        self.assertEqual(len(os.listdir(stage)), 3 * 50 * n)
        foreign = os.path.join(stage, "stagebench.4a.someone-else")
        with open(foreign, "w") as f:
            f.write("mine")
        p = run(["clean", "4", "--dir", stage])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.listdir(stage), ["stagebench.4a.someone-else"])


class Verification(sbtest.TempDirCase):
    def test_stale_block_is_caught(self):
        stage = self.stage()
        replica = os.path.join(stage, "stagebench.1a.4MiB")
        self.assertEqual(run(["prepare", "1a", "--scale", "tiny", "--dir", stage]).returncode, 0)
        old = self.path("old")
        shutil.copyfile(replica, old)
        self.assertEqual(run(["prepare", "1a", "--scale", "tiny", "--dir", stage]).returncode, 0)
        s, _ = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                              "--verify"])
        self.assertTrue(s["tests"][0]["parts"][0]["verified"])
        gen_new = s["tests"][0]["generation"]
        # one block of the new replica replaced by the same block of the old generation
        k = 300
        with open(old, "rb") as f:
            f.seek(k * 4096)
            block = f.read(4096)
        with open(replica, "r+b") as f:
            f.seek(k * 4096)
            f.write(block)
        s, p = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                              "--verify"], expect=1)
        part = s["tests"][0]["parts"][0]
        self.assertEqual(part["status"], "failed")
        self.assertFalse(part["verified"])
        self.assertIn("at %d" % (k * 4096), part["error"])
        self.assertIn("expected generation %d" % gen_new, part["error"])
        self.assertIn("verify", part["error"])
        self.assertIn("at %d" % (k * 4096), p.stderr)
        # without --verify nobody looks
        s, _ = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3"])
        self.assertEqual(s["status"], "ok")

    def test_garbage_block_fails_random_reads(self):
        stage = self.stage()
        self.assertEqual(run(["prepare", "2", "--scale", "tiny", "--dir", stage]).returncode, 0)
        replica = os.path.join(stage, "stagebench.2.8MiB")
        with open(replica, "r+b") as f:
            f.seek(5 * MiB)
            f.write(b"\xff" * 64)
        s, p = self.run_json(["run", "2b", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                              "--verify", "--count", "64"], expect=1)
        self.assertIn("at %d" % (5 * MiB), s["tests"][0]["parts"][0]["error"])

    def test_truncated_under_mmap_is_an_error_not_a_crash(self):
        stage = self.stage()
        self.assertEqual(run(["prepare", "1b", "--scale", "tiny", "--dir", stage]).returncode, 0)
        replica = os.path.join(stage, "stagebench.1b.8MiB")
        out = self.path("s.json")
        proc = subprocess.Popen([sbtest.BINARY, "run", "1b", "--scale", "tiny", "--dir", stage,
                                 "--start-in", "0.2", "--passes", "1000000", "--out", out],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # truncated once the part has it mapped (set-up may take long on a loaded machine)
        maps = "/proc/%d/maps" % proc.pid
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            with open(maps) as f:
                if replica in f.read():
                    break
            time.sleep(0.05)
        time.sleep(0.2)
        os.truncate(replica, 1 * MiB)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 1, err)
        with open(out) as f:
            s = json.load(f)
        part = s["tests"][0]["parts"][0]
        self.assertEqual(part["status"], "failed")
        self.assertIn("touch", part["error"])
        self.assertIn(replica, part["error"])
        m = re.search(r"at (\d+)", part["error"])
        self.assertGreaterEqual(int(m.group(1)), 1 * MiB)
        # the other threads stopped promptly instead of finishing a million passes
        self.assertLess(part["node_time_s"], 30)


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
