# SPDX-License-Identifier: MIT
"""The I/O buffer's placement: --buffer-offset, the calibration's record, and --verify at
every placement."""
import json
import os
import re
import shutil
import tempfile
import unittest

import sbtest
from sbtest import run

MiB = 1024 * 1024
CANDIDATES = [0, 8, 16, 64, 2048, 4088]
MARGIN = 0.03  # BUFPLACE_MARGIN
WINS = 0.75  # BUFPLACE_WINS


def picked(cands):
    """The placement the calibration must choose from what it reports (bufplace_pick)."""
    rate0 = cands[0]["copy_Bps"]
    clear = [c for c in cands[1:]
             if c["copy_Bps"] > rate0 * (1.0 + MARGIN) and c["wins"] >= WINS]
    return max(clear, key=lambda c: c["copy_Bps"])["offset"] if clear else 0


class Placement(sbtest.TempDirCase):
    def run_parts(self, stage, tests, offset, extra=()):
        args = ["run"] + list(tests) + ["--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                                        "--threads", "2"]
        if offset is not None:
            args += ["--buffer-offset", str(offset)]
        return self.run_json(args + list(extra))

    def test_verify_passes_at_every_placement(self):
        stage = self.stage()
        for off in (0, 1, 16, 64, 4032, 4088, 4095):
            with self.subTest(offset=off):
                s, _ = self.run_parts(stage, ["1a", "1b", "2"], off, ["--verify"])
                self.assertEqual(s["status"], "ok")
                self.assertEqual(s["buffer"], {"offset": off, "chosen_by": "option",
                                               "calibration": None})
                parts = [p for t in s["tests"] for p in t["parts"]]
                self.assertEqual([p["part"] for p in parts], ["1a", "1b", "2a", "2b", "2c"])
                for p in parts:
                    self.assertEqual(p["status"], "ok", p)
                    self.assertTrue(p["verified"], p["part"])
                    self.assertGreater(p["bytes"], 0)

    def test_verify_catches_a_bad_block_at_an_offset(self):
        # Verification looks at the data where the buffer is, not at a page boundary.
        stage = self.stage()
        self.assertEqual(run(["prepare", "1a", "2", "--scale", "tiny", "--dir", stage])
                         .returncode, 0)
        for name, part, at in (("stagebench.1a.4MiB", "1a", 300 * 4096),
                               ("stagebench.2.8MiB", "2b", 5 * MiB)):
            with open(os.path.join(stage, name), "r+b") as f:
                f.seek(at)
                f.write(b"\xff" * 64)
            for off in (16, 4032):
                with self.subTest(part=part, offset=off):
                    extra = ["--verify"] + (["--count", "64"] if part == "2b" else [])
                    s, _ = self.run_json(["run", part, "--scale", "tiny", "--dir", stage,
                                          "--start-in", "0.3", "--buffer-offset", str(off)]
                                         + extra, expect=1)
                    pr = s["tests"][0]["parts"][0]
                    self.assertEqual(pr["status"], "failed")
                    self.assertIn("at %d" % at, pr["error"])

    def read_addresses(self, args, calls="read|pread64"):
        """The buffer addresses of stagebench's 1 MiB calls (read, pread64), seen by strace
        (one file per thread, raw arguments)."""
        tdir = tempfile.mkdtemp(prefix="trace-", dir=self.dir)
        # LeakSanitizer cannot run under ptrace: no leak check in a sanitizer build here
        asan = [o for o in (os.environ.get("ASAN_OPTIONS"), "detect_leaks=0") if o]
        p = run(args, env={"ASAN_OPTIONS": ":".join(asan)},
                prefix=["strace", "-ff", "-qq", "-e", "trace=read,pread64", "-e",
                        "raw=read,pread64", "-e", "signal=none", "-o", os.path.join(tdir, "t")])
        self.assertEqual(p.returncode, 0, p.stderr)
        addrs = []
        for name in os.listdir(tdir):
            with open(os.path.join(tdir, name)) as f:
                addrs += [int(m.group(1), 16) for m in re.finditer(
                    r"\b(?:%s)\(0x[0-9a-f]+, (0x[0-9a-f]+), 0x100000" % calls, f.read())]
        shutil.rmtree(tdir)
        return addrs

    @unittest.skipUnless(shutil.which("strace"), "strace is not installed")
    def test_the_buffer_is_where_the_option_says(self):
        stage = self.stage()
        page = os.sysconf("SC_PAGE_SIZE")
        for off in (0, 16, 4032):
            with self.subTest(offset=off):
                out = self.path("s%d.json" % off)
                addrs = self.read_addresses(["run", "1a", "--scale", "tiny", "--dir", stage,
                                             "--start-in", "0.3", "--threads", "2",
                                             "--buffer-offset", str(off), "--out", out])
                # 2 threads x passes x 4 reads of the 4 MiB replica, at least
                self.assertGreaterEqual(len(addrs), 8)
                self.assertEqual(sorted({a % page for a in addrs}), [off])

    @unittest.skipUnless(shutil.which("strace"), "strace is not installed")
    def test_auto_calibrates_records_and_uses_its_choice(self):
        stage = self.stage()
        out = self.path("s.json")
        args = ["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.5", "--out",
                out]
        # 1a reads with read(); the calibration copies with pread64 from its memory file
        addrs = self.read_addresses(args, calls="read")
        with open(out) as f:
            s = json.load(f)
        b = s["buffer"]
        self.assertEqual(b["chosen_by"], "calibration")
        cal = b["calibration"]
        self.assertEqual([c["offset"] for c in cal["candidates"]], CANDIDATES)
        for c in cal["candidates"]:
            self.assertGreater(c["copy_Bps"], 0)
            self.assertTrue(0 <= c["wins"] <= 1, c)
        self.assertGreater(cal["bytes"], 0)
        self.assertGreater(cal["seconds"], 0)
        self.assertLess(cal["seconds"], 5)
        self.assertEqual(b["offset"], picked(cal["candidates"]))
        # the run's reads of 1 MiB all land at the chosen placement
        self.assertEqual(sorted({a % os.sysconf("SC_PAGE_SIZE") for a in addrs}),
                         [b["offset"]])
        self.assertEqual(s["tests"][0]["parts"][0]["status"], "ok")

    def test_the_default_is_auto(self):
        s, _ = self.run_json(["run", "null", "--scale", "tiny", "--dir", self.stage(),
                              "--start-in", "0.2"])
        self.assertEqual(s["buffer"]["chosen_by"], "calibration")
        s, _ = self.run_json(["run", "null", "--scale", "tiny", "--dir", self.stage(),
                              "--start-in", "0.2", "--buffer-offset", "auto"])
        self.assertEqual(s["buffer"]["chosen_by"], "calibration")

    def test_bad_values_are_usage_errors(self):
        for bad, why in (("65536", "out of range"), ("-1", "malformed"), ("16k", "malformed"),
                         ("Auto", "malformed"), ("", "malformed")):
            with self.subTest(value=bad):
                p = run(["run", "1a", "--scale", "tiny", "--dir", self.stage(),
                         "--buffer-offset", bad])
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("--buffer-offset", p.stderr)
                self.assertIn("auto or a whole number from 0 to 65535", p.stderr)

    def test_info_and_check_show_the_placement(self):
        p = run(["info", "--buffer-offset", "64"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("I/O buffer: 64 bytes past a page boundary (--buffer-offset)", p.stdout)
        j = sbtest.info()
        self.assertEqual(j["buffer"]["chosen_by"], "calibration")
        self.assertIn(j["buffer"]["offset"], CANDIDATES)
        p = run(["info"])
        m = re.search(r"I/O buffer: (\d+) bytes past a page boundary \(calibrated; GiB/s"
                      r" copied from a memory file at 0: [0-9.]+, 8: ", p.stdout)
        self.assertTrue(m, p.stdout)
        p = run(["check", "--dir", self.stage(), "--buffer-offset", "16", "--format", "json"],
                timeout=120)
        found = [f for f in json.loads(p.stdout)["findings"] if f["area"] == "buffer"]
        self.assertEqual(len(found), 1)
        self.assertEqual(found[0]["status"], "ok")
        self.assertEqual(found[0]["message"], "16 bytes past a page boundary (--buffer-offset)")


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
