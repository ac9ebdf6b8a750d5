# SPDX-License-Identifier: MIT
"""The command line of the real binary: test 1a end to end, the summary, bad input."""
import csv
import io
import json
import os
import re
import time
import unittest

import sbtest
from sbtest import run, listing

TINY_1A = 4 * 1024 * 1024
TINY_1A_PASSES = 4


class Run1a(sbtest.TempDirCase):
    def test_1a_summary(self):
        stage = self.stage()
        s, p = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "1"])
        nthreads = len(s["threads"])
        self.assertGreaterEqual(nthreads, 1)
        self.assertEqual(s["schema"], "stagebench.node/3")
        self.assertEqual(s["status"], "ok")
        self.assertEqual(s["exit_code"], 0)
        for key in ("version", "node", "host", "dir", "fs", "clock", "threads", "tests", "errors"):
            self.assertIn(key, s)
        self.assertIn("ntp_synchronized", s["clock"])
        self.assertTrue(s["clock"]["clocksource"])
        self.assertTrue(s["fs"]["type"])
        self.assertEqual(len(s["tests"]), 1)
        t = s["tests"][0]
        self.assertEqual(t["test"], "1a")
        self.assertEqual(t["status"], "ok")
        self.assertTrue(t["prepared"])
        self.assertEqual(len(t["parts"]), 1)
        part = t["parts"][0]
        self.assertEqual(part["part"], "1a")
        self.assertEqual(part["file_bytes"], TINY_1A)
        self.assertEqual(part["passes"], TINY_1A_PASSES)
        self.assertEqual(part["xfer_bytes"], 1024 * 1024)
        self.assertEqual(part["bytes"], TINY_1A_PASSES * TINY_1A * nthreads)
        self.assertEqual(part["ops"], TINY_1A_PASSES * nthreads)
        self.assertEqual(part["file"], os.path.join(os.path.realpath(stage), "stagebench.1a.4MiB"))
        self.assertGreater(part["node_time_s"], 0)
        self.assertAlmostEqual(t["result_s"], part["node_time_s"], places=9)
        tt = part["thread_time_s"]
        self.assertGreater(tt["min"], 0)
        self.assertLessEqual(tt["min"], tt["median"])
        self.assertLessEqual(tt["median"], tt["max"])
        self.assertGreaterEqual(part["node_time_s"], tt["max"])
        self.assertGreaterEqual(part["release_spread_s"], 0)
        self.assertLess(part["release_spread_s"], 0.1)
        self.assertGreater(part["bandwidth_Bps"], 0)
        lat = part["latency_s"]
        self.assertTrue(0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"] * 1.01)
        self.assertEqual(part["latency_hist"]["count"], part["ops"])
        self.assertEqual(sum(c for _, c in part["latency_hist"]["buckets"]), part["ops"])
        self.assertIsNotNone(part["cache_residency"])
        self.assertEqual(len(part["per_thread"]), nthreads)
        cpus = [th["cpu"] for th in s["threads"]]
        for i, th in enumerate(part["per_thread"]):
            self.assertEqual(th["index"], i)
            self.assertEqual(th["cpu"], cpus[i])
            self.assertEqual(th["bytes"], TINY_1A_PASSES * TINY_1A)
            self.assertEqual(th["ops"], TINY_1A_PASSES)
            self.assertIsNone(th["error"])
            self.assertGreaterEqual(th["release_at"], part["start_at"])
            self.assertLess(th["release_at"] - part["start_at"], 0.1)
            self.assertGreater(th["time_s"], 0)
        # the text table went to stdout
        self.assertIn("1a", p.stdout)
        self.assertIn("status: ok", p.stdout)

    def test_threads_one_and_cpu_list(self):
        stage = self.stage()
        s, _ = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.5",
                              "--threads", "1"])
        self.assertEqual(len(s["threads"]), 1)
        self.assertEqual(len(s["tests"][0]["parts"][0]["per_thread"]), 1)
        allowed = sbtest.info()["topology"]["allowed_cpus"]
        last = int(allowed.split(",")[-1].split("-")[-1])
        s, _ = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.5",
                              "--cpus", str(last)])
        self.assertEqual([t["cpu"] for t in s["threads"]], [last])

    def test_taskset_is_respected(self):
        stage = self.stage()
        s, _ = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.5"],
                             prefix=["taskset", "-c", "0"])
        self.assertEqual([t["cpu"] for t in s["threads"]], [0])
        p = run(["info", "--format", "json"], prefix=["taskset", "-c", "0"])
        i = json.loads(p.stdout)
        self.assertEqual(i["topology"]["allowed_cpus"], "0")
        if i["topology"]["machine_pus"] > 1:
            self.assertTrue(i["topology"]["restricted"])

    def test_repeat_recreates_replica(self):
        stage = self.stage()
        s, _ = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.5",
                              "--repeat", "2", "--verify"])
        self.assertEqual([t["repetition"] for t in s["tests"]], [1, 2])
        g1, g2 = (t["generation"] for t in s["tests"])
        self.assertNotEqual(g1, g2)
        self.assertTrue(s["tests"][1]["prepared"])
        for t in s["tests"]:
            self.assertTrue(t["parts"][0]["verified"])
            self.assertEqual(t["parts"][0]["generation"], t["generation"])
        self.assertEqual(sorted(os.listdir(stage)), ["stagebench.1a.4MiB"])

    def test_formats_on_stdout(self):
        stage = self.stage()
        p = run(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                 "--format", "json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        s = json.loads(p.stdout)
        self.assertEqual(s["tests"][0]["status"], "ok")
        p = run(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                 "--format", "csv"])
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.strip().splitlines()
        self.assertTrue(lines[0].startswith("node,test,repetition,part,status,node_time_s"))
        self.assertEqual(len(lines), 2)
        self.assertEqual(lines[1].split(",")[3], "1a")

    def test_out_is_never_overwritten_without_force(self):
        stage = self.stage()
        out = self.path("s.json")
        with open(out, "w") as f:
            f.write("precious")
        args = ["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3", "--out", out]
        p = run(args)
        self.assertEqual(p.returncode, 2)
        self.assertIn("exists", p.stderr)
        with open(out) as f:
            self.assertEqual(f.read(), "precious")
        self.assertEqual(os.listdir(stage), [])
        p = run(args + ["--force"])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            self.assertEqual(json.load(f)["status"], "ok")
        self.assertEqual(sorted(os.listdir(self.dir)), ["s.json", "stage"])

    def test_start_at_is_honoured(self):
        stage = self.stage()
        at = round(time.time() + 1.5, 3)
        s, _ = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage,
                              "--start-at", "%.3f" % at])
        part = s["tests"][0]["parts"][0]
        self.assertAlmostEqual(part["start_at"], at, places=3)
        for th in part["per_thread"]:
            self.assertGreaterEqual(th["release_at"], at)
            self.assertLess(th["release_at"], at + 0.05)

    def test_late_ok_marks_late(self):
        stage = self.stage()
        s, p = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage,
                              "--start-at", "%.3f" % (time.time() - 5), "--late-ok"])
        part = s["tests"][0]["parts"][0]
        self.assertTrue(part["late"])
        self.assertEqual(part["status"], "late")
        self.assertGreater(part["late_by_s"], 4)

    def test_unsynchronized_clock_is_reported(self):
        stage = self.stage()
        synced = sbtest.info()["clock"]["ntp_synchronized"]
        p = run(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3"])
        self.assertEqual(p.returncode, 0, p.stderr)
        if synced:
            self.skipTest("this machine's clock is NTP-synchronized")
        self.assertIn("not NTP-synchronized", p.stderr)
        self.assertIn("NOT NTP-synchronized", p.stdout)
        out = self.path("s.json")
        p = run(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                 "--require-ntp", "--out", out])
        self.assertEqual(p.returncode, 3)
        self.assertIn("--require-ntp", p.stderr)
        with open(out) as f:
            self.assertEqual(json.load(f)["error_reasons"], ["ntp_required"])


class BadInput(sbtest.TempDirCase):
    """Each bad command exits 2 or 3 with one line on stderr, and creates nothing."""

    def cases(self, stage):
        past = "%.3f" % (time.time() - 60)
        far = "%.3f" % (time.time() + 2 * 86400)
        missing = os.path.join(self.dir, "missing")
        afile = os.path.join(self.dir, "afile")
        with open(afile, "w") as f:
            f.write("x")
        base = ["--scale", "tiny", "--dir", stage]
        return [
            (["run", "9z"] + base, 2, "unknown test '9z'"),
            (["run"] + base, 2, "name at least one test"),
            (["frobnicate"], 2, "unknown command 'frobnicate'"),
            ([], 2, "no command given"),
            (["run", "1a", "--bogus"] + base, 2, "unknown option '--bogus'"),
            (["run", "1a", "--xfer", "1.5.3M"] + base, 2, "--xfer '1.5.3M' is malformed"),
            (["run", "1a", "--xfer", "-4k"] + base, 2, "--xfer '-4k' is malformed"),
            (["run", "1a", "--xfer", "4q"] + base, 2, "--xfer '4q' is malformed"),
            (["run", "1a", "--xfer", ""] + base, 2, "--xfer '' is malformed"),
            (["run", "1a", "--xfer", "99999999999999999999"] + base, 2, "out of range"),
            (["run", "1a", "--xfer", "2G"] + base, 2, "--xfer '2G' is out of range"),
            (["run", "1a", "--threads", "0"] + base, 2, "--threads '0' is out of range"),
            (["run", "1a", "--threads", "4096"] + base, 2, "oversubscription"),
            (["run", "1a", "--threads"] + base[:0], 2, "--threads needs a value"),
            (["run", "1a", "--scale", "huge", "--dir", stage], 2, "--scale 'huge' is not known"),
            (["run", "1a", "--start-in", "1", "--start-at", far] + base, 2, "exclude each other"),
            (["run", "1a", "--start-at", far] + base, 2, "more than 24 hours"),
            (["run", "1a", "--start-at", past] + base, 3, "start time missed by"),
            (["run", "1a", "--node", "a/b"] + base, 2, "--node 'a/b' is not a valid node name"),
            (["run", "1a", "--node", "n1;rm -rf /"] + base, 2, "is not a valid node name"),
            (["run", "1a", "--cpus", "0-1", "--threads", "1"] + base, 2, "disagrees"),
            (["run", "1a", "--cpus", "1,1"] + base, 2, "--cpus '1,1' is malformed"),
            (["run", "1a", "--cpus", "4000"] + base, 2, "CPU 4000 does not exist"),
            (["run", "1a", "1a"] + base, 2, "more than once"),
            (["run", "2", "--count", "5"] + base, 2, "name a single part"),
            (["run", "1a", "--scale", "tiny"], 2, "--dir"),
            (["run", "1a", "--scale", "tiny", "--dir", missing], 3, "No such file or directory"),
            (["run", "1a", "--scale", "tiny", "--dir", afile], 3, "not a directory"),
            (["list", "1a"], 2, "takes no test names"),
        ]

    def more_cases(self, stage):
        """(args, exit code, texts): the one line names the option and the accepted form.

        Every command writes its summary to --out in the test directory, so that "nothing
        created" covers the summary too.
        """
        out = ["--out", self.path("s.json")]
        base = ["--scale", "tiny", "--dir", stage]
        now = time.time()
        uint, size, secs = ("expected a whole number from", "expected a size from",
                            "expected seconds from")
        node = "expected 1 to 64 letters, digits, '.', '_' or '-'"
        cpus = "expected a CPU list like 0-3,8"
        c = []

        # A value missing at the end of the line, or empty.
        for opt, form in (("--xfer", size), ("--count", uint), ("--chunk", size),
                          ("--file-size", size), ("--passes", uint), ("--repeat", uint),
                          ("--seed", uint), ("--threads", uint), ("--start-at", secs),
                          ("--start-in", secs), ("--interval", secs), ("--cpus", cpus),
                          ("--node", node), ("--out", "a non-empty value"),
                          ("--dir", "a non-empty value"), ("--scale", "one of spec|small|tiny"),
                          ("--format", "one of text|json|csv")):
            c.append((["run", "1a"] + base + [opt], 2, [opt + " needs a value: ", form]))
        c.append((["run", "1a"] + out + base + ["--dir="], 2, ["--dir is empty", "non-empty"]))
        c.append((["run", "1a"] + base + ["--out="], 2, ["--out is empty", "non-empty"]))
        c.append((["run", "1a"] + out + base + ["--node="], 2, ["--node '' is not a valid", node]))

        # Malformed and too large numbers and sizes, for every option that takes one.
        for opt, test, form in (("--xfer", "1a", size), ("--chunk", "2a", size),
                                ("--file-size", "1a", size), ("--count", "2a", uint),
                                ("--passes", "1a", uint), ("--repeat", "1a", uint),
                                ("--seed", "1a", uint), ("--threads", "1a", uint)):
            for bad in ("1.5.3M", "-4k", "4q", "", " 4", "0x10"):
                c.append((["run", test] + out + base + [opt, bad], 2,
                          ["%s '%s' is malformed" % (opt, bad), form]))
            c.append((["run", test] + out + base + [opt, "99999999999999999999"], 2,
                      ["%s '99999999999999999999' is out of range" % opt, form]))
        for opt in ("--start-at", "--start-in", "--interval"):
            for bad in ("-1", "1.5.3", "4q", "", "nan", "inf", "1e9", "0x10"):
                c.append((["run", "1a"] + out + base + [opt, bad], 2,
                          ["%s '%s' is malformed" % (opt, bad), secs]))

        # Zero and out-of-range counts and sizes.
        for opt, test, bad, form in (("--count", "2a", "0", uint),
                                     ("--count", "2a", "1000000000001", uint),
                                     ("--passes", "1a", "0", uint),
                                     ("--passes", "1a", "1000000001", uint),
                                     ("--repeat", "1a", "0", uint),
                                     ("--repeat", "1a", "10001", uint),
                                     ("--chunk", "2a", "0", size),
                                     ("--file-size", "1a", "0", size),
                                     ("--file-size", "1a", "4095", size),
                                     ("--xfer", "1a", "4095", size),
                                     ("--xfer", "1a", "1025M", size),
                                     ("--start-in", "1a", "86401", secs),
                                     ("--interval", "2", "0", secs),
                                     ("--start-at", "1a", "0", secs),
                                     ("--start-at", "1a", "100000000001", secs)):
            c.append((["run", test] + out + base + [opt, bad], 2,
                      ["%s '%s' is out of range" % (opt, bad), form]))

        # Options that conflict, or do not fit the tests named.
        c += [
            (["run", "1a", "--quiet", "--verbose"] + out + base, 2,
             ["--quiet and --verbose exclude each other"]),
            (["run", "1a", "--start-in", "1", "--start-at", "%.0f" % (now + 60)] + out + base, 2,
             ["--start-at and --start-in exclude each other"]),
            (["run", "1a", "--threads", "2", "--cpus", "0"] + out + base, 2,
             ["--threads 2 disagrees with --cpus '0'"]),
            (["run", "1a", "--count", "5"] + out + base, 2, ["--count does not apply to 1a"]),
            (["run", "2a", "--passes", "5"] + out + base, 2, ["--passes applies to 1a and 1b"]),
            (["run", "4a", "--file-size", "4M"] + out + base, 2,
             ["--file-size does not apply to 4a"]),
            (["run", "1a", "1b", "--file-size", "4M"] + out + base, 2,
             ["--file-size", "name a single test"]),
            (["run", "2a", "--chunk", "16M"] + out + base, 2,
             ["--chunk 16 MiB of 2a is larger than the replica (8 MiB)", "at most"]),
            (["run", "1a", "--file-size", "4097"] + out + base, 2,
             ["--file-size 4097 bytes", "expected a size in whole 4 KiB blocks"]),
            (["run", "2a", "--xfer", "6k", "--verify"] + out + base, 2,
             ["--xfer 6144 bytes with --verify", "expected a multiple of 4 KiB"]),
            (["run", "all", "1a"] + out + base, 2, ["'all' names every test: give it alone"]),
            (["run", "1a", "--verify=yes"] + out + base, 2, ["--verify takes no value"]),
            (["prepare", "1a", "--verify"] + base, 2,
             ["option --verify does not apply to 'prepare'"]),
            (["list", "--dir", stage], 2, ["option --dir does not apply to 'list'"]),
            (["run", "1a", "-x"] + out + base, 2, ["unknown option '-x'"]),
            (["run", "1a", "---dir", stage] + out + base, 2, ["unknown option '---dir'"]),
        ]

        # The same test or part twice, or a part with its test.
        for tests in (["2", "2a"], ["2a", "2"], ["2a", "2a"], ["2a", "2b", "2a"], ["4", "4c"],
                      ["all", "all"]):
            c.append((["run"] + tests + out + base, 2,
                      ["all" if tests[0] == "all" else "is named more than once"]))

        # CPU lists that do not parse, or name CPUs this process may not use.
        for bad in ("", "a", "0-", "3-1", "-1", "0,,1", "1,1", "0-1-2"):
            c.append((["run", "1a", "--cpus", bad] + out + base, 2,
                      ["--cpus '%s' is malformed" % bad, cpus]))
        c.append((["run", "1a", "--cpus", "4000"] + out + base, 2, ["--cpus", "CPU 4000"]))

        # Start instants that cannot be meant.
        c += [
            (["run", "1a", "--start-at", "1"] + out + base, 2,
             ["--start-at 1.000 is", "in the past, more than 24 hours",
              "expected an instant in UTC seconds"]),
            (["run", "1a", "--start-at", "%.0f" % (now - 3 * 86400)] + out + base, 2,
             ["in the past, more than 24 hours"]),
            (["run", "1a", "--start-at", "99999999999"] + out + base, 2,
             ["--start-at 99999999999.000 is", "ahead, more than 24 hours"]),
        ]

        # Node names that cannot go into a file name (control characters are escaped).
        for bad, shown in (("a/b", "a/b"), ("a\tb", "a\\tb"), ("a\nb", "a\\nb"),
                           ("a\x01b", "a\\x01b"), ("a\x1b[31mb", "a\\x1b[31mb"), ("..", ".."),
                           (".x", ".x"), ("-x", "-x"), ("x" * 65, "x" * 65), ("a b", "a b"),
                           ("n\u00e9", "n\u00e9"), ("n1;rm -rf /", "n1;rm -rf /")):
            c.append((["run", "1a"] + out + base + ["--node", bad], 2,
                      ["--node '%s' is not a valid node name" % shown, node]))
        return c

    def env_cases(self, stage):
        """Bad values of the environment variables: (env, exit code, texts)."""
        node = "expected 1 to 64 letters, digits, '.', '_' or '-'"
        scale = "expected one of spec|small|tiny"
        return [
            ({"STAGEBENCH_DIR": ""}, 2,
             ["environment variable STAGEBENCH_DIR (for --dir) is empty", "non-empty"]),
            ({"STAGEBENCH_DIR": self.path("missing")}, 3, ["No such file or directory"]),
            ({"STAGEBENCH_DIR": stage, "STAGEBENCH_SCALE": ""}, 2,
             ["environment variable STAGEBENCH_SCALE (for --scale) '' is not known", scale]),
            ({"STAGEBENCH_DIR": stage, "STAGEBENCH_SCALE": "TINY"}, 2,
             ["STAGEBENCH_SCALE (for --scale) 'TINY' is not known", scale]),
            ({"STAGEBENCH_DIR": stage, "STAGEBENCH_SCALE": "huge"}, 2,
             ["STAGEBENCH_SCALE (for --scale) 'huge' is not known", scale]),
            ({"STAGEBENCH_DIR": stage, "STAGEBENCH_NODE": "a/b"}, 2,
             ["environment variable STAGEBENCH_NODE (for --node) 'a/b' is not a valid node name",
              node]),
            ({"STAGEBENCH_DIR": stage, "STAGEBENCH_NODE": "a\nb"}, 2,
             ["STAGEBENCH_NODE (for --node) 'a\\nb' is not a valid node name", node]),
            ({"STAGEBENCH_DIR": stage, "STAGEBENCH_NODE": ""}, 2,
             ["STAGEBENCH_NODE (for --node) '' is not a valid node name", node]),
        ]

    def check_bad(self, args, code, texts, env=None):
        before = listing(self.dir)
        p = run(args, env=env)
        self.assertEqual(p.returncode, code, "%s: %s" % (args, p.stderr))
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertTrue(lines[0].startswith("stagebench: error: "), lines[0])
        for text in texts:
            self.assertIn(text, lines[0])
        self.assertEqual(listing(self.dir), before)

    def test_bad_input(self):
        stage = self.stage()
        for args, code, text in self.cases(stage):
            with self.subTest(args=args):
                self.check_bad(args, code, [text])

    def test_bad_input_names_option_and_form(self):
        stage = self.stage()
        for args, code, texts in self.more_cases(stage):
            with self.subTest(args=args):
                self.check_bad(args, code, texts)

    def test_bad_environment(self):
        stage = self.stage()
        for env, code, texts in self.env_cases(stage):
            with self.subTest(env=env):
                # a precondition (exit 3) still writes the summary: no --out then
                out = ["--out", self.path("s.json")] if code == 2 else []
                self.check_bad(["run", "1a", "--scale", "tiny"] + out, code, texts, env=env)

    def test_cpu_outside_inherited_binding(self):
        stage = self.stage()
        if sbtest.info()["topology"]["allowed_pus"] < 2:
            self.skipTest("needs two CPUs")
        p = run(["run", "1a", "--scale", "tiny", "--dir", stage, "--cpus", "1"],
                prefix=["taskset", "-c", "0"])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("not in the allowed set", p.stderr)
        self.assertEqual(os.listdir(stage), [])

    def test_env_dir_with_bad_value(self):
        p = run(["run", "1a", "--scale", "tiny"], env={"STAGEBENCH_SCALE": "huge",
                                                       "STAGEBENCH_DIR": self.dir})
        self.assertEqual(p.returncode, 2)
        self.assertIn("STAGEBENCH_SCALE", p.stderr)

    def test_dry_run_creates_nothing(self):
        stage = self.stage()
        p = run(["run", "all", "--scale", "tiny", "--dir", stage, "--dry-run"])
        self.assertEqual(p.returncode, 0, p.stderr)
        for part in ("1a", "1b", "2a", "2b", "2c", "3a", "3b", "4a", "4b", "4c"):
            self.assertIn("part %s" % part, p.stdout)
        self.assertIn("nothing was done", p.stdout)
        self.assertEqual(os.listdir(stage), [])


class Commands(sbtest.TempDirCase):
    def test_help_and_version(self):
        p = run(["--help"])
        self.assertEqual(p.returncode, 0)
        for opt in ("--dir", "--scale", "--threads", "--cpus", "--start-at", "--start-in",
                    "--repeat", "--xfer", "--seed", "--node", "--out", "--format", "--verify",
                    "--fsync", "--require-ntp", "--late-ok", "--dry-run"):
            self.assertIn(opt, p.stdout)
        p = run(["run", "--help"])
        self.assertEqual(p.returncode, 0)
        self.assertIn("--start-at", p.stdout)
        p = run(["--version"])
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout, r"^stagebench \d+\.\d+\.\d+")

    def test_list(self):
        p = run(["list", "--scale", "spec", "--format", "json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        parts = {x["part"]: x for x in json.loads(p.stdout)["parts"]}
        MiB, GiB = 1 << 20, 1 << 30
        self.assertEqual(parts["1a"]["file_bytes"], 150 * MiB)
        self.assertEqual(parts["1a"]["passes"], 64)
        self.assertEqual(parts["1b"]["file_bytes"], 750 * MiB)
        self.assertEqual(parts["1b"]["passes"], 16)
        self.assertEqual((parts["2a"]["count"], parts["2a"]["chunk_bytes"]), (18000, 4096))
        self.assertEqual((parts["2b"]["count"], parts["2b"]["chunk_bytes"]), (150, MiB))
        self.assertEqual((parts["2c"]["count"], parts["2c"]["chunk_bytes"]), (1, 128 * MiB))
        self.assertEqual(parts["2a"]["file_bytes"], 4 * GiB)
        self.assertEqual(parts["3a"]["file_bytes"], 512 * GiB)
        self.assertEqual((parts["3a"]["count"], parts["3a"]["chunk_bytes"]), (80, MiB))
        self.assertEqual((parts["3b"]["count"], parts["3b"]["chunk_bytes"]), (1, 96 * MiB))
        self.assertEqual((parts["4a"]["count"], parts["4a"]["chunk_bytes"]), (1200, 4096))
        self.assertEqual((parts["4b"]["count"], parts["4b"]["chunk_bytes"]), (60, MiB))
        self.assertEqual((parts["4c"]["count"], parts["4c"]["chunk_bytes"]), (1, 64 * MiB))
        doc = json.loads(p.stdout)
        self.assertEqual(doc["scales"], ["spec", "small", "tiny"])
        # what each part counts and the tier the spec expects to serve it
        want = {"1a": ("bytes read", "B/s", "node_cache"),
                "1b": ("pages touched", "pages/s", "node_cache"),
                "2a": ("bytes read", "B/s", "server_cache"),
                "3b": ("bytes read", "B/s", "server_disk"),
                "4a": ("bytes written", "B/s", None),
                "null": ("operations", "ops/s", None)}
        for part, w in want.items():
            self.assertEqual((parts[part]["counted"], parts[part]["rate_unit"],
                              parts[part]["tier"]), w)
        self.assertEqual([t["test"] for t in doc["tests"] if t["server_drop"]], ["3"])
        opts = {o["option"]: o for o in doc["options"]}
        self.assertEqual(opts["--count"], {"option": "--count", "type": "count", "min": 1,
                                           "max": 10 ** 12, "scope": "part"})
        self.assertEqual((opts["--chunk"]["type"], opts["--chunk"]["scope"]), ("size", "part"))
        self.assertEqual((opts["--passes"]["scope"], opts["--file-size"]["scope"]),
                         ("part", "test"))
        self.assertEqual((opts["--xfer"]["min"], opts["--xfer"]["max"]), (4096, 1 << 30))
        self.assertEqual(opts["--interval"]["type"], "seconds")
        self.assertEqual(opts["--seed"]["max"], (1 << 64) - 1)
        for name in ("--repeat", "--threads", "--start-in"):
            self.assertEqual(opts[name]["scope"], "run")
        # the options' ranges are the parser's: one past each bound is refused
        stage = self.stage()
        for name in ("--count", "--repeat", "--threads"):
            p = run(["run", "2a", "--dry-run", "--dir", stage, name,
                     str(opts[name]["max"] + 1)])
            self.assertEqual(p.returncode, 2, (name, p.stderr))
            self.assertIn("out of range", p.stderr)
        p = run(["list", "--scale", "tiny", "--format", "json"])
        for x in json.loads(p.stdout)["parts"]:
            self.assertLessEqual(x["file_bytes"], 8 * MiB)
        p = run(["list"])
        self.assertEqual(p.returncode, 0)
        self.assertIn("2c", p.stdout)

    def test_info(self):
        stage = self.stage()
        p = run(["info", "--dir", stage, "--format", "json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        i = json.loads(p.stdout)
        self.assertEqual(i["topology"]["allowed_cores"], len(i["threads"]))
        self.assertEqual(i["dir"], os.path.realpath(stage))
        self.assertTrue(i["fs"]["type"])
        self.assertTrue(i["fs"]["source"])
        self.assertGreater(i["fs"]["bytes_free"], 0)
        self.assertIn("clocksource", i["clock"])
        p = run(["info", "--dir", stage])
        self.assertEqual(p.returncode, 0)
        for word in ("topology", "thread 0", "clock", "filesystem"):
            self.assertIn(word, p.stdout)
        self.assertEqual(os.listdir(stage), [])

    def test_prepare_and_clean(self):
        stage = self.stage()
        foreign = os.path.join(stage, "stagebench.1a.junk")
        with open(foreign, "w") as f:
            f.write("not ours")
        other = os.path.join(stage, "notes.txt")
        with open(other, "w") as f:
            f.write("keep me")
        p = run(["prepare", "1a", "--scale", "tiny", "--dir", stage])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(os.path.join(stage, "stagebench.1a.4MiB")))
        self.assertEqual(os.path.getsize(os.path.join(stage, "stagebench.1a.4MiB")), 4 << 20)
        p = run(["clean", "1a", "--dir", stage])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("removed", p.stdout)
        self.assertIn("left alone", p.stdout)
        self.assertEqual(sorted(os.listdir(stage)), ["notes.txt", "stagebench.1a.junk"])

    def test_wrong_replica_is_refused(self):
        stage = self.stage()
        with open(os.path.join(stage, "stagebench.1a.4MiB"), "wb") as f:
            f.write(b"\0" * (4 << 20))
        out = self.path("s.json")
        p = run(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.3",
                 "--out", out])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("not a stagebench replica", p.stderr)
        with open(out) as f:
            s = json.load(f)
        self.assertEqual((s["tests"][0]["reason"], s["error_reasons"]),
                         ("replica_invalid", ["replica_invalid"]))
        with open(os.path.join(stage, "stagebench.1a.4MiB"), "rb") as f:
            self.assertEqual(f.read(16), b"\0" * 16)


class Formats(sbtest.TempDirCase):
    """Every --format a command accepts produces that format; any other is refused (exit 2)
    with nothing on stdout. The formats are the ones its --help lists."""

    def formats_of(self, cmd):
        p = run([cmd, "--help"])
        m = re.search(r"\n  --format FMT .*\(([a-z|]+)\)", p.stdout)
        return m.group(1).split("|") if m else []

    def assert_format(self, fmt, out, what):
        if fmt == "json":
            json.loads(out)
        elif fmt == "csv":
            rows = list(csv.reader(io.StringIO(out)))
            self.assertGreaterEqual(len(rows), 2, what)
            self.assertTrue(all(len(r) == len(rows[0]) for r in rows), (what, out))
        else:
            self.assertRaises(ValueError, json.loads, out)
            self.assertFalse(out.startswith(("node,", "part,", "status,")), (what, out))

    def test_every_command_every_format(self):
        stage = self.stage()
        res = self.path("res")
        os.makedirs(res)
        state = self.path("state")
        p = run(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0.2",
                 "--detach", state, "-o", os.path.join(res, "n1.json"), "--node", "n1"])
        self.assertEqual(p.returncode, 0, p.stderr)
        for _ in range(300):
            if os.path.exists(os.path.join(res, "n1.json")) and \
                    "done" in run(["status", state]).stdout:
                break
            time.sleep(0.1)
        commands = {
            "run": ["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0"],
            "list": ["list", "--scale", "tiny"],
            "info": ["info", "--dir", stage],
            "check": ["check", "--dir", stage, "--scale", "tiny"],
            "check --health": ["check", "--health", "--results", res, "--node", "n1"],
            "status": ["status", state],
        }
        seen = set()
        for name, argv in commands.items():
            fmts = self.formats_of(name.split()[0])
            self.assertIn("text", fmts, name)
            for fmt in fmts:
                p = run(argv + ["--format", fmt])
                self.assertIn(p.returncode, (0, 1), (name, fmt, p.stderr))
                self.assert_format(fmt, p.stdout, (name, fmt))
                seen.add((name, fmt))
            for fmt in {"text", "json", "csv", "xml"} - set(fmts):
                p = run(argv + ["--format", fmt])
                self.assertEqual(p.returncode, 2, (name, fmt, p.stdout))
                self.assertEqual(p.stdout, "")
                self.assertIn("--format '%s'" % fmt, p.stderr)
        self.assertNotIn(("info", "csv"), seen)
        self.assertTrue({("status", "csv"), ("check --health", "json"),
                         ("check --health", "csv")} <= seen)
        p = run(["run", "1a", "--dry-run", "--dir", stage, "--format", "csv"])
        self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)

    def test_csv_cells_empty_where_a_field_does_not_apply(self):
        stage = self.stage()
        p = run(["run", "1a", "1b", "4a", "--scale", "tiny", "--dir", stage, "--start-in", "0",
                 "--format", "csv"])
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = {r["part"]: r for r in csv.DictReader(io.StringIO(p.stdout))}
        a, b, w = rows["1a"], rows["1b"], rows["4a"]
        for r in (a, w):  # not 1b: no pages, no mapped bytes
            self.assertEqual((r["pages_per_s"], r["mapped_Bps"]), ("", ""), r)
            self.assertGreater(float(r["bandwidth_Bps"]), 0)
        self.assertEqual(b["bandwidth_Bps"], "")
        self.assertGreater(float(b["pages_per_s"]), 0)
        self.assertGreater(float(b["mapped_Bps"]), 0)
        self.assertEqual((w["first_pass_median_s"], w["rest_pass_median_s"]), ("", ""))
        self.assertNotEqual(a["first_pass_median_s"], "")
        self.assertEqual(w["cache_residency"], "")  # test 4 reads no replica
        for r in (a, b, w):
            self.assertNotIn("0.0", (r["pages_per_s"], r["mapped_Bps"], r["bandwidth_Bps"]))
        # list: a parameter a part has not is empty, as the text's "-"
        p = run(["list", "--scale", "tiny", "--format", "csv"])
        parts = {r["part"]: r for r in csv.DictReader(io.StringIO(p.stdout))}
        self.assertEqual((parts["1a"]["count"], parts["1a"]["chunk_bytes"]), ("", ""))
        self.assertEqual(parts["2a"]["passes"], "")
        self.assertEqual(parts["4a"]["file_bytes"], "")
        self.assertNotEqual(parts["1a"]["passes"], "")

    def test_o_is_out(self):
        stage = self.stage()
        out = self.path("node.json")
        p = run(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0", "-o", out])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            self.assertEqual(json.load(f)["status"], "ok")
        p = run(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0", "-o" + out])
        self.assertEqual(p.returncode, 2, p.stderr)  # exists: as --out, refused without --force
        self.assertIn("-o, --out FILE", run(["run", "--help"]).stdout)


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
