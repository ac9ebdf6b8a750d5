# SPDX-License-Identifier: MIT
"""`stagebench check --health` on summaries the real binary wrote (a flat --out file, the
launcher's RESULTS/RUN/NODE.PART.repK.json layout): healthy, unhealthy with the part and its
error on one line, no recent data, the latest run by the time it recorded (300 newer run
directories without this node, a run dated next year), planted links, invalid files judged as
the collector judges them (two "status" keys, and a few hundred damaged copies of a real
summary against summaries.read_summary), a missing results directory as a configuration error,
the history's judgement of lasting regressions, JSON and CSV, within a second; and the NHC
check file against it, NHC's die and log stood in for."""
import copy
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

import sbtest

DAY = 86400


def redate(path, seconds):
    """The summary at path rewritten as if its run had started `seconds` later (earlier when
    negative): the instants it records, not the file's time, say when a run was."""
    with open(path) as f:
        s = json.load(f)
    s["run"]["started_at"] += seconds
    s["run"]["start_at"] += seconds
    for t in s["tests"]:
        for part in t["parts"]:
            part["start_at"] += seconds
            part["scheduled_at"] += seconds
    with open(path, "w") as f:
        json.dump(s, f)


class Health(sbtest.TempDirCase):
    def setUp(self):
        super().setUp()
        self.stage = self.path("stage")
        os.makedirs(self.stage)

    def node_run(self, out, node="n1", test="1a", stage=None):
        """A real tiny run of node writing its summary to out (replaced); its exit status."""
        p = sbtest.run(["run", test, "--scale", "tiny", "--dir", stage or self.stage,
                        "--node", node, "--start-in", "0", "--out", out, "--no-progress",
                        "--force"])
        return p.returncode

    def health(self, results, *extra, node="n1"):
        t = time.monotonic()
        p = sbtest.run(["check", "--health", "--results", results, "--node", node] +
                       list(extra))
        return p, time.monotonic() - t

    def age(self, path, seconds):
        t = time.time() - seconds
        os.utime(path, (t, t))

    def test_flat_file_healthy_then_old(self):
        res = self.path("res")
        os.makedirs(res)
        self.assertEqual(self.node_run(os.path.join(res, "n1.json")), 0)
        p, took = self.health(res)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"^stagebench: ok: 1 summary ok, 0\.\d h ago\n$")
        self.assertLess(took, 1.0)
        # a file touched now is no newer run: the run's own start says how old it is
        redate(os.path.join(res, "n1.json"), -2 * DAY)
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertEqual(p.stdout, "stagebench: no recent data: no result of n1 in the last "
                                   "26.0 h under %s\n" % res)
        p, _ = self.health(res, "--max-age", str(3 * DAY))
        self.assertEqual(p.returncode, 0, p.stdout)
        p, _ = self.health(res, node="n2")  # another node's file is not this node's
        self.assertEqual(p.returncode, 3, p.stdout)

    def test_launcher_layout_newest_run_wins(self):
        res = self.path("res")
        old, new = os.path.join(res, "cron-1"), os.path.join(res, "cron-2")
        os.makedirs(old)
        os.makedirs(new)
        # the older run failed: its directory is missing
        rc = self.node_run(os.path.join(old, "n1.1a.rep1.json"), stage=self.path("gone"))
        self.assertEqual(rc, 3)
        self.assertEqual(self.node_run(os.path.join(old, "n1.2a.rep1.json"), test="2a"), 0)
        for f in os.listdir(old):
            self.age(os.path.join(old, f), 3600)
        self.age(old, 3600)
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(p.stdout, "stagebench: 1a failed in cron-1: --dir '%s': No such file "
                                   "or directory\n" % self.path("gone"))
        # a newer run of this node, all good: healthy again
        self.assertEqual(self.node_run(os.path.join(new, "n1.1a.rep1.json")), 0)
        self.assertEqual(self.node_run(os.path.join(new, "n1.1a.rep2.json")), 0)
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"^stagebench: ok: 2 summaries ok in cron-2, ")
        # a newer run without this node does not hide its latest one
        other = os.path.join(res, "cron-3")
        os.makedirs(other)
        self.assertEqual(self.node_run(os.path.join(other, "n2.1a.rep1.json"), node="n2"), 0)
        p, _ = self.health(res)
        self.assertRegex(p.stdout, r"^stagebench: ok: 2 summaries ok in cron-2, ")

    def test_planted_link_damaged_file_and_no_results(self):
        res = self.path("res")
        os.makedirs(res)
        self.assertEqual(self.node_run(self.path("elsewhere.json")), 0)
        os.symlink(self.path("elsewhere.json"), os.path.join(res, "n1.json"))
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 3, p.stdout)  # a link is not a summary: not followed
        os.unlink(os.path.join(res, "n1.json"))
        with open(os.path.join(res, "n1.json"), "w") as f:
            f.write('{"schema": "stagebench.node/2", "tests": [{"status": "ok"')
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 3, p.stdout)
        self.assertEqual(p.stdout, "stagebench: cannot judge: summary n1.json is invalid: not "
                                   "valid JSON (truncated or damaged): Expecting ',' delimiter: "
                                   "line 1 column 58 (char 57)\n")
        # a failed status with a hostile error text: one plain line
        with open(self.path("elsewhere.json")) as f:
            failed = json.load(f)
        failed.update(status="failed", errors=["bad\u001b[31m\nsecond line"])
        with open(os.path.join(res, "n1.json"), "w") as f:
            json.dump(failed, f)
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertEqual(p.stdout, "stagebench: run failed: bad?[31m?second line\n")
        p = sbtest.run(["check", "--health", "--node", "n1"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("needs --results DIR", p.stderr)
        p = sbtest.run(["check", "--health", "--node", "n1"], env={"STAGEBENCH_RESULTS": res})
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)

    def test_missing_results_is_a_configuration_error(self):
        """Not there (mistyped), or a file: exit 2 with the reason, never "no recent data"
        (exit 3, which NHC logs and passes), in every format."""
        with open(self.path("file"), "w") as f:
            f.write("x\n")
        for results, why in ((self.path("nothing-here"), "No such file or directory"),
                             (self.path("file"), "not a directory")):
            p, _ = self.health(results)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertEqual(p.stdout, "stagebench: configuration error: results directory "
                                       "%s: %s\n" % (results, why))
            p, _ = self.health(results, "--format", "json")
            doc = json.loads(p.stdout)
            self.assertEqual((p.returncode, doc["status"], doc["exit_code"], doc["run"]),
                             (2, "config_error", 2, None))
            p, _ = self.health(results, "--format", "csv")
            row = list(csv.DictReader(io.StringIO(p.stdout)))
            self.assertEqual([(r["status"], r["exit_code"], r["run"]) for r in row],
                             [("config_error", "2", "")])

    def test_latest_run_by_its_recorded_time(self):
        """300 run directories newer (by name and time) than this node's latest run, without
        this node's files, do not hide it; a directory touched last but holding an older run
        does not win; a run dated next year is ignored, and said."""
        res = self.path("res")
        real, older = os.path.join(res, "a-real"), os.path.join(res, "zz-older")
        os.makedirs(real)
        os.makedirs(older)
        self.assertEqual(self.node_run(os.path.join(real, "n1.1a.rep1.json")), 0)
        rc = self.node_run(os.path.join(older, "n1.1a.rep1.json"), stage=self.path("gone"))
        self.assertEqual(rc, 3)
        redate(os.path.join(older, "n1.1a.rep1.json"), -3600)
        self.age(real, 7200)
        for r in range(300):
            d = os.path.join(res, "run-%03d" % r)
            os.makedirs(d)
            for n in range(3):
                open(os.path.join(d, "x%d.1a.rep1.json" % n), "w").close()
        p, took = self.health(res)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"^stagebench: ok: 1 summary ok in a-real, 0\.\d h ago\n$")
        self.assertLess(took, 1.0)
        # next year's failed run of this node (a clock once wrong) is not its latest run
        future = os.path.join(res, "zzz-next-year")
        os.makedirs(future)
        rc = self.node_run(os.path.join(future, "n1.1a.rep1.json"), stage=self.path("gone"))
        self.assertEqual(rc, 3)
        redate(os.path.join(future, "n1.1a.rep1.json"), 365 * DAY)
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"^stagebench: ok: 1 summary ok in a-real, 0\.\d h ago; "
                                   r"ignored 1 run dated in the future \(zzz-next-year, 87\d\d h "
                                   r"ahead\)\n$")
        doc = json.loads(self.health(res, "--format", "json")[0].stdout)
        self.assertEqual((doc["run"]["dir"], doc["future_runs"]["count"],
                          doc["future_runs"]["latest"]), ("a-real", 1, "zzz-next-year"))
        # with only the future run left, there is no recent data, and it says why
        shutil.rmtree(real)
        shutil.rmtree(older)
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 3, p.stdout)
        self.assertRegex(p.stdout, r"^stagebench: no recent data: no result of n1 in the last "
                                   r"26\.0 h under \S+; ignored 1 run dated in the future ")

    def test_two_status_keys_invalid_for_health_and_collector(self):
        """A summary with a second "status" is invalid for both, with the same reason."""
        run1 = self.path("res", "run-1")
        os.makedirs(run1)
        path = os.path.join(run1, "n1.1a.rep1.json")
        self.assertEqual(self.node_run(path), 0)
        with open(path) as f:
            text = f.read().rstrip()
        with open(path, "w") as f:
            f.write(text[:-1] + ',\n "status": "failed"\n}\n')
        p, _ = self.health(self.path("res"))
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertEqual(p.stdout, 'stagebench: cannot judge: summary run-1/n1.1a.rep1.json is '
                                   'invalid: duplicate key "status"\n')
        env = dict(os.environ, STAGEBENCH_CATALOGUE=os.path.join(
            os.path.dirname(sbtest.BINARY), "catalogue.json"))
        c = subprocess.run([sys.executable, os.path.join(sbtest.SOURCE, "scripts",
                                                         "stagebench-collect"), run1,
                            "--format", "json"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, env=env, timeout=120)
        report = json.loads(c.stdout)
        self.assertEqual(report["invalid"], [{"file": "n1.1a.rep1.json",
                                              "reason": 'duplicate key "status"'}])

    def test_door_agrees_with_the_collector(self):
        """Copies of a real summary with a field removed or of another type: the health check
        and summaries.read_summary call the same ones invalid, with the same reason."""
        sys.path.insert(0, os.path.join(sbtest.SOURCE, "scripts"))
        from stagebench import catalogue, summaries  # noqa: E402
        catalogue._loaded[""] = catalogue.load(sbtest.BINARY)
        res = self.path("res")
        os.makedirs(res)
        path = os.path.join(res, "n1.json")
        self.assertEqual(self.node_run(path, test="1b"), 0)
        with open(path) as f:
            base = json.load(f)
        part = ("tests", 0, "parts", 0)
        cases = [((k,), None) for k in ("node", "status", "tests", "schema", "errors")]
        cases += [(part + (k,), v) for k in ("part", "node_time_s", "bytes", "start_at",
                                              "per_thread", "latency_hist", "counted",
                                              "cache_residency", "release_at_ns",
                                              "first_pass_s")
                  for v in (None, "x", True, -1, 1.5, 2 ** 64, [], {})]
        cases += [(part + ("per_thread", 0, k), v) for k in ("time_s", "index", "cpu")
                  for v in (None, -2, 1e300)]
        cases += [(part + ("latency_hist", "count"), 0), (("tests", 0, "test"), "2a"),
                  (part + ("part",), "2a"), (("run", "first_repetition"), -1)]
        verdicts = set()
        for keys, value in cases:
            doc = copy.deepcopy(base)
            at = doc
            for k in keys[:-1]:
                at = at[k]
            if value is None and keys[-1] in ("node", "status", "tests", "schema", "errors"):
                del at[keys[-1]]
            else:
                at[keys[-1]] = value
            with open(path, "w") as f:
                json.dump(doc, f)
            want = summaries.read_summary(path).get("error")
            got = self.health(res)[0].stdout
            m = "stagebench: cannot judge: summary n1.json is invalid: "
            said = got[len(m):].rstrip("\n") if got.startswith(m) else None
            self.assertEqual(said, want, (keys, value, got))
            verdicts.add(want is None)
        self.assertEqual(verdicts, {True, False})  # some valid, some not

    def test_history_flags_a_lasting_regression(self):
        """RESULTS/history-health.json (stagebench-cron's, stagebench.history-health/1) fails a
        node it flags, in one line naming the part and the change; another node, a stale
        judgement or a damaged one (said) leaves a healthy node healthy."""
        res = self.path("res")
        os.makedirs(res)
        self.assertEqual(self.node_run(os.path.join(res, "n1.json")), 0)
        self.assertEqual(self.node_run(os.path.join(res, "n2.json"), node="n2"), 0)
        judged = os.path.join(res, "history-health.json")

        def judge(written_at, nodes, text=None):
            with open(judged, "w") as f:
                f.write(text if text is not None else json.dumps(
                    {"schema": "stagebench.history-health/1", "run_id": "cron-9",
                     "written_at": written_at, "nodes": nodes}))

        judge(time.time(), {"n1": [{"part": "1a", "size": 0.31, "first_night": "cron-2"},
                                   {"part": "2a", "size": 0.124, "first_night": "cron-5"}]})
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(p.stdout, "stagebench: n1: lasting regression: 1a +31% since cron-2; "
                                   "2a +12% since cron-5 (judged in cron-9)\n")
        doc = json.loads(self.health(res, "--format", "json")[0].stdout)
        self.assertEqual((doc["status"], doc["history"]["status"],
                          [r["part"] for r in doc["history"]["regressions"]]),
                         ("unhealthy", "flagged", ["1a", "2a"]))
        p, _ = self.health(res, node="n2")
        self.assertEqual(p.returncode, 0, p.stdout)
        # older than --max-age: ignored
        judge(time.time() - 2 * DAY, {"n1": [{"part": "1a", "size": 0.31,
                                               "first_night": "cron-2"}]})
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertRegex(p.stdout, r"^stagebench: ok: 1 summary ok, 0\.\d h ago\n$")
        # damaged: said in the line, the node stays healthy
        for text, why in (('{"schema": "stagebench.history-health/1", "nodes": {', "not valid "
                           "JSON (truncated or damaged): Expecting property name"),
                          ('{"schema": "x", "nodes": {}}', "not a stagebench history "
                           "judgement")):
            judge(0, {}, text)
            p, _ = self.health(res)
            self.assertEqual(p.returncode, 0, p.stdout)
            self.assertRegex(p.stdout, r"^stagebench: ok: 1 summary ok, 0\.\d h ago; "
                                       r"history-health\.json ignored: %s" % re.escape(why))
        # a node that failed its run says that first
        self.assertEqual(self.node_run(os.path.join(self.path("res"), "n1.json"),
                                       stage=self.path("gone")), 3)
        judge(time.time(), {"n1": [{"part": "1a", "size": 0.31, "first_night": "cron-2"}]})
        p, _ = self.health(res)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertTrue(p.stdout.startswith("stagebench: run failed: --dir "), p.stdout)

    def test_within_a_second_among_many(self):
        """A results directory of 40 runs of 500 other nodes' summaries each."""
        res = self.path("res")
        for r in range(40):
            d = os.path.join(res, "run-%02d" % r)
            os.makedirs(d)
            for n in range(500):
                open(os.path.join(d, "x%d.1a.rep1.json" % n), "w").close()
        self.assertEqual(self.node_run(os.path.join(res, "run-00", "n1.1a.rep1.json")), 0)
        self.age(os.path.join(res, "run-00"), 7200)
        p, took = self.health(res)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertLess(took, 1.0)


NHC_TEST = r"""
die() { echo "die $1: $2"; }
log() { echo "log: $*"; }
source "$1"; shift
check_stagebench "$@"
echo "returned $?"
"""


class Nhc(sbtest.TempDirCase):
    """scripts/examples/stagebench.nhc.in with NHC's die and log stood in for."""

    def nhc(self, *args):
        src = os.path.join(sbtest.SOURCE, "scripts", "examples", "stagebench.nhc.in")
        env = dict(os.environ, STAGEBENCH_BIN=sbtest.BINARY, STAGEBENCH_HISTORY_BIN=os.path.join(
            sbtest.SOURCE, "scripts", "stagebench-history"))
        env.pop("STAGEBENCH_RESULTS", None)
        p = subprocess.run(["bash", "-c", NHC_TEST, "nhc", src] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=60, env=env)
        return p.stdout

    def test_nhc_check_drains_with_the_line(self):
        res = self.path("res")
        os.makedirs(res)
        self.assertEqual(self.nhc("-r", res, "-N", "n1"),
                         "log: check_stagebench: stagebench: no recent data: no result of n1 "
                         "in the last 26.0 h under %s\nreturned 0\n" % res)
        self.assertEqual(self.nhc("-r", res, "-N", "n1", "-n"),
                         "die 1: stagebench: no recent data: no result of n1 in the last "
                         "26.0 h under %s\nreturned 1\n" % res)
        p = sbtest.run(["run", "1a", "--scale", "tiny", "--dir", self.path("gone"), "--node",
                        "n1", "--start-in", "0", "--out", os.path.join(res, "n1.json")])
        self.assertEqual(p.returncode, 3)
        self.assertEqual(self.nhc("-r", res, "-N", "n1"),
                         "die 1: stagebench: run failed: --dir '%s': No such file or "
                         "directory\nreturned 1\n" % self.path("gone"))
        os.makedirs(self.path("stage"))
        p = sbtest.run(["run", "1a", "--scale", "tiny", "--dir", self.path("stage"), "--node",
                        "n1", "--start-in", "0", "--out", os.path.join(res, "n1.json"),
                        "--force"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.nhc("-r", res, "-N", "n1"), "returned 0\n")
        out = self.nhc("-r", res, "-N", "n1", "-a", "0.5")  # a wrong call drains, saying why
        self.assertRegex(out, r"^die 1: stagebench: error: --max-age '0\.5' is out of range: "
                              r"[^\n]*\nreturned 1\n$")

    def test_nhc_drains_on_a_lasting_regression(self):
        """The history's judgement needs no option: the binary reads it."""
        res = self.path("res")
        os.makedirs(res)
        os.makedirs(self.path("stage"))
        p = sbtest.run(["run", "1a", "--scale", "tiny", "--dir", self.path("stage"), "--node",
                        "n1", "--start-in", "0", "--out", os.path.join(res, "n1.json")])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.nhc("-r", res, "-N", "n1"), "returned 0\n")
        with open(os.path.join(res, "history-health.json"), "w") as f:
            json.dump({"schema": "stagebench.history-health/1", "run_id": "cron-1",
                       "written_at": time.time(), "nodes": {"n1": [
                           {"part": "1a", "size": 0.31, "first_night": "cron-0"}]}}, f)
        self.assertEqual(self.nhc("-r", res, "-N", "n1"),
                         "die 1: stagebench: n1: lasting regression: 1a +31% since cron-0 "
                         "(judged in cron-1)\nreturned 1\n")

    def test_nhc_missing_results_is_a_configuration_error(self):
        """A results directory not given, not there (mistyped) or not a directory drains the
        node saying so: it is not "no recent data", which passes."""
        with open(self.path("file"), "w") as f:
            f.write("x\n")
        for results, why in ((self.path("mistyped"), "No such file or directory"),
                             (self.path("file"), "not a directory")):
            self.assertEqual(self.nhc("-r", results, "-N", "n1", "-a", "3600"),
                             "die 1: stagebench: configuration error: results directory "
                             "%s: %s\nreturned 1\n" % (results, why))
        self.assertEqual(self.nhc("-N", "n1"),
                         "die 1: check_stagebench: configuration error: no results directory "
                         "(-r DIR or STAGEBENCH_RESULTS)\nreturned 1\n")


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
