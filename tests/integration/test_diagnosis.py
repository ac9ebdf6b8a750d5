# SPDX-License-Identifier: MIT
"""Diagnosing one node: `check`, the live progress line, slow-core marks, `info` residency."""
import csv
import io
import json
import os
import pty
import select
import subprocess
import time
import unittest

import sbtest
from sbtest import run

FINDINGS = [("clock", "ntp"), ("clock", "clocksource"), ("cpu", "binding"), ("cpu", "smt"),
            ("cpu", "governor"), ("fs", "type"), ("fs", "space"), ("fs", "inodes"),
            ("fs", "writable"), ("probe", "cached"), ("probe", "random"), ("probe", "create")]


def is_root():
    return os.geteuid() == 0


class Check(sbtest.TempDirCase):
    def test_healthy_directory(self):
        stage = self.stage()
        t0 = time.monotonic()
        p = run(["check", "--dir", stage, "--scale", "small"], timeout=60)
        took = time.monotonic() - t0
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertLess(took, 30)
        lines = p.stdout.splitlines()
        for area, name in FINDINGS:
            self.assertTrue(any(l.split()[1:3] == [area, name] for l in lines[1:]),
                            "%s %s missing:\n%s" % (area, name, p.stdout))
        for l in lines[1:-1]:
            self.assertIn(l.split()[0], ("ok", "warn", "fail"), l)
        self.assertNotIn("fail", [l.split()[0] for l in lines[1:-1]])
        ntp = [l for l in lines if l.split()[1:3] == ["clock", "ntp"]][0]
        if not sbtest.info()["clock"]["ntp_synchronized"]:
            self.assertTrue(ntp.startswith("warn"), ntp)
            self.assertIn("NOT synchronized", ntp)
        # the probe left nothing behind
        self.assertEqual(os.listdir(stage), [])

        p = run(["check", "--dir", stage, "--scale", "small", "--format", "json"], timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        j = json.loads(p.stdout)
        self.assertEqual(j["schema"], "stagebench.check/1")
        self.assertEqual(j["status"], "ok")
        got = {(f["area"], f["check"]): f for f in j["findings"]}
        for key in FINDINGS:
            self.assertIn(key, got)
            self.assertIn(got[key]["status"], ("ok", "warn"))
            self.assertTrue(got[key]["message"])

    def test_replicas_are_reported(self):
        stage = self.stage()
        self.assertEqual(run(["prepare", "1a", "--scale", "tiny", "--dir", stage]).returncode, 0)
        with open(os.path.join(stage, "stagebench.2.8MiB"), "wb") as f:
            f.write(b"\0" * 8192)
        p = run(["check", "--dir", stage, "--scale", "tiny", "--format", "json"], timeout=60)
        j = json.loads(p.stdout)
        got = {(f["area"], f["check"]): f for f in j["findings"]}
        good = got[("replicas", "stagebench.1a.4MiB")]
        self.assertEqual(good["status"], "ok")
        self.assertIn("generation", good["message"])
        self.assertIn("page cache", good["message"])
        bad = got[("replicas", "stagebench.2.8MiB")]
        self.assertEqual(bad["status"], "warn")
        self.assertIn("not a valid stagebench replica", bad["message"])

    def mount_tmpfs(self, options):
        if not is_root():
            self.skipTest("mounting a tmpfs needs root")
        d = self.path("mnt")
        os.makedirs(d)
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", d], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", d])
        return d

    def test_full_filesystem_fails(self):
        d = self.mount_tmpfs("size=2m")
        with open(os.path.join(d, "filler"), "wb") as f:
            try:
                while True:
                    f.write(b"x" * 65536)
            except OSError:
                pass
        p = run(["check", "--dir", d, "--scale", "tiny"], timeout=60)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        status = {tuple(l.split()[1:3]): l.split()[0] for l in p.stdout.splitlines()[1:-1]}
        self.assertEqual(status[("fs", "space")], "fail")
        self.assertEqual(status[("fs", "writable")], "fail")
        self.assertIn("node FAILED the check", p.stdout)

    def test_read_only_directory_fails(self):
        d = self.mount_tmpfs("size=64m,ro")
        p = run(["check", "--dir", d, "--scale", "tiny", "--format", "json"], timeout=60)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        j = json.loads(p.stdout)
        got = {(f["area"], f["check"]): f for f in j["findings"]}
        self.assertEqual(got[("fs", "writable")]["status"], "fail")
        self.assertIn("Read-only file system", got[("fs", "writable")]["message"])
        self.assertEqual(j["status"], "fail")
        self.assertEqual(j["exit_code"], 1)


    def test_missing_directory_is_a_finding_in_every_format(self):
        missing = self.path("no", "such", "dir")
        why = "--dir '%s': No such file or directory" % missing
        p = run(["check", "--dir", missing, "--scale", "tiny", "--format", "json"], timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        j = json.loads(p.stdout)
        self.assertEqual((j["status"], j["exit_code"]), ("fail", 1))
        got = {(f["area"], f["check"]): f for f in j["findings"]}
        self.assertEqual(got[("fs", "dir")], {"area": "fs", "check": "dir", "status": "fail",
                                              "message": why})
        self.assertIn(("clock", "ntp"), got)
        self.assertIn(("cpu", "binding"), got)
        self.assertEqual(p.stderr, "stagebench: error: %s\n" % why)

        p = run(["check", "--dir", missing, "--scale", "tiny", "--format", "csv"], timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        self.assertEqual(list(rows[0].keys()), ["node", "dir", "area", "check", "status",
                                                "message"])
        byname = {(r["area"], r["check"]): r for r in rows}
        self.assertEqual(byname[("fs", "dir")]["message"], why)
        self.assertEqual(byname[("fs", "dir")]["dir"], missing)
        self.assertEqual(byname[("node", "status")]["status"], "fail")
        self.assertEqual(byname[("node", "status")]["message"], "exit 1")

        p = run(["check", "--dir", missing, "--scale", "tiny"], timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("fail  fs       dir          %s\n" % why, p.stdout)
        self.assertTrue(p.stdout.endswith("node FAILED the check\n"), p.stdout)

    def test_csv_of_a_healthy_directory(self):
        stage = self.stage()
        p = run(["check", "--dir", stage, "--scale", "tiny", "--format", "csv"], timeout=60)
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        found = [(r["area"], r["check"]) for r in rows]
        for f in FINDINGS:
            self.assertIn(f, found)
        last = rows[-1]
        self.assertEqual((last["area"], last["check"]), ("node", "status"))
        self.assertEqual(last["message"], "exit %d" % p.returncode)
        self.assertEqual(last["status"], "ok" if p.returncode == 0 else "fail")


class Progress(sbtest.TempDirCase):
    def run_on_pty(self, args):
        """Run with stderr on a pseudo-terminal; returns (exit code, what the terminal got)."""
        master, slave = pty.openpty()
        proc = subprocess.Popen([sbtest.BINARY] + args, stdout=subprocess.PIPE, stderr=slave,
                                stdin=subprocess.DEVNULL)
        os.close(slave)
        out = b""
        while True:
            r, _, _ = select.select([master], [], [], 60)
            if not r:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        proc.wait(timeout=60)
        proc.stdout.read()
        proc.stdout.close()
        os.close(master)
        return proc.returncode, out.decode(errors="replace")

    def count_for(self, stage, seconds):
        """A --count of null ops a thread that runs about that long with this build (a
        sanitizer's runs null many times slower than a release build), from a short run's
        rate: the line is drawn once a second."""
        p = run(["run", "null", "--count", "2000000", "--dir", stage, "--start-in", "0",
                 "--format", "json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        part = json.loads(p.stdout)["tests"][0]["parts"][0]
        rate = part["ops"] / part["threads"] / max(part["node_time_s"], 1e-6)
        return str(max(2000000, int(rate * seconds)))

    def test_progress_on_a_terminal(self):
        stage = self.stage()
        count = self.count_for(stage, 3.0)
        code, term = self.run_on_pty(["run", "null", "--count", count, "--dir", stage,
                                      "--start-in", "0"])
        self.assertEqual(code, 0, term)
        lines = [l for l in term.replace("\x1b[K", "").split("\r") if l.startswith("null rep 1:")]
        self.assertGreaterEqual(len(lines), 1, term)
        for field in ("ops", "/s", "threads done"):
            self.assertIn(field, lines[-1])
        self.assertRegex(lines[-1], r"null rep 1: \d+ s, .*B, \d+ ops, .*B/s, \d+/\d+ threads done")
        # the line is cleared before the table is printed
        self.assertTrue(term.rstrip().endswith("\x1b[K") or "\r\x1b[K" in term)

    def test_no_progress_off_a_terminal(self):
        stage = self.stage()
        count = self.count_for(stage, 2.5)
        p = run(["run", "null", "--count", count, "--dir", stage, "--start-in", "0"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("threads done", p.stderr)
        code, term = self.run_on_pty(["run", "null", "--count", count, "--dir", stage,
                                      "--start-in", "0", "--no-progress"])
        self.assertNotIn("threads done", term)


class Info(sbtest.TempDirCase):
    def test_info_shows_replica_residency_and_age(self):
        stage = self.stage()
        self.assertEqual(run(["prepare", "1a", "2", "--scale", "tiny", "--dir", stage]).returncode, 0)
        with open(os.path.join(stage, "stagebench.1a.4MiB"), "rb") as f:
            f.read()
        p = run(["info", "--dir", stage, "--format", "json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        files = {f["name"]: f for f in json.loads(p.stdout)["files"]}
        self.assertEqual(set(files), {"stagebench.1a.4MiB", "stagebench.2.8MiB"})
        f = files["stagebench.1a.4MiB"]
        self.assertEqual(f["kind"], "replica")
        self.assertTrue(f["ours"])
        self.assertGreater(f["cache_residency"], 0.9)
        self.assertTrue(0 <= f["age_s"] < 120)
        p = run(["info", "--dir", stage])
        self.assertIn("stagebench.1a.4MiB", p.stdout)
        self.assertIn("in page cache", p.stdout)
        self.assertIn("s ago", p.stdout)


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
