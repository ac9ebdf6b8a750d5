# SPDX-License-Identifier: MIT
"""node_exporter textfile metrics: `stagebench-collect --prometheus FILE` on summaries the real
binary wrote, and `stagebench-cron --prometheus FILE` after a simulated run, each file checked
by promtool (Debian's prometheus package) and read back sample by sample."""
import os
import re
import shutil
import subprocess
import unittest

import clustertest as ct

SAMPLE = re.compile(r'^(stagebench_[a-z_]+)(\{(.*)\})? (\S+)$')


def promtool_check(path):
    """promtool's verdict on the file: (exit status, its output). promtool check metrics
    reads the exposition text on stdin and also lints names (units, suffixes)."""
    with open(path, "rb") as f:
        p = subprocess.run(["promtool", "check", "metrics"], stdin=f, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def samples(path):
    """[(name, {label: value}, value)] of the file; asserts every line is a comment or a
    sample without a timestamp, and every family has HELP and TYPE before its samples."""
    out, declared = [], set()
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith("# HELP ") or line.startswith("# TYPE "):
                declared.add((line[2:6], line.split()[2]))
                continue
            m = SAMPLE.match(line)
            assert m, "not a sample without a timestamp: %r" % line
            assert ("HELP", m.group(1)) in declared and ("TYPE", m.group(1)) in declared, line
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
            out.append((m.group(1), labels, float(m.group(4))))
    return out


def find(rows, name, **labels):
    return [v for n, lab, v in rows
            if n == name and all(lab.get(k) == x for k, x in labels.items())]


class Collect(ct.TempDirCase):
    def test_collect_writes_metrics_promtool_accepts(self):
        if not shutil.which("promtool"):
            self.fail("promtool is missing (Debian: prometheus; scripts/install-deps)")
        res = self.path("res")
        stage = self.path("stage")
        os.makedirs(res)
        os.makedirs(stage)
        ran = ct.run_nodes(["n1", "n2"], ["1a", "4c"], res, stage, start_in=3.0,
                           cpus=ct.cores())
        for n, (_path, rc, err) in ran.items():
            self.assertEqual(rc, 0, "%s: %s" % (n, err))
        # a node whose directory is missing: a summary of a failed run
        bad = ct.run_nodes(["n3"], ["1a"], res, self.path("nope"), start_in=10)
        self.assertEqual(bad["n3"][1], 3)
        prom = self.path("textfile", "stagebench.prom")
        os.makedirs(os.path.dirname(prom))
        p = ct.run_script("stagebench-collect", [res, "--prometheus", prom])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # n3 failed
        self.assertEqual(os.listdir(os.path.dirname(prom)), ["stagebench.prom"])  # no temp left
        rc, out = promtool_check(prom)
        self.assertEqual(rc, 0, out)
        rows = samples(prom)
        self.assertEqual(find(rows, "stagebench_run_exit_status"), [1.0])
        self.assertEqual(len(find(rows, "stagebench_run_end_time_seconds")), 1)
        for n in ("n1", "n2"):
            for part in ("1a", "4c"):
                t = find(rows, "stagebench_node_time_seconds", node=n, part=part)
                self.assertEqual(len(t), 1, (n, part))
                self.assertGreater(t[0], 0)
                self.assertEqual(find(rows, "stagebench_node_ok", node=n, part=part), [1.0])
                self.assertEqual(find(rows, "stagebench_node_status", node=n, part=part,
                                      status="ok"), [1.0])
                bw = find(rows, "stagebench_node_bytes_per_second", node=n, part=part)
                self.assertEqual(len(bw), 1)
                self.assertGreater(bw[0], 0)
                off = find(rows, "stagebench_node_start_offset_seconds", node=n, part=part)
                self.assertEqual(len(off), 1)
                self.assertGreaterEqual(off[0], 0)
                self.assertLess(off[0], 1.0)
        self.assertEqual(find(rows, "stagebench_node_ok", node="n3", part="1a"), [0.0])
        self.assertEqual(find(rows, "stagebench_part_nodes", part="1a", state="failed"), [1.0])
        self.assertEqual(find(rows, "stagebench_part_nodes", part="1a", state="ok"), [2.0])
        cl = find(rows, "stagebench_part_cluster_time_seconds", part="1a")
        self.assertEqual(cl, [max(find(rows, "stagebench_node_time_seconds", part="1a"))])

    def test_escaping_and_missing_figures(self):
        from stagebench import model, prometheus
        results = [model.NodeResult.make(node=n, server="?", status="ok", ok=True,
                                         node_time_s=t)
                   for n, t in (('we"ird\\node\n', 2.5), ("nan", float("nan")))]
        part = model.PartResult.make(
            test="1a", repetition=1, part="1a", cluster_time_s=2.5, nodes_ok=1, nodes_failed=0,
            nodes_missing=0, start_spread_s=None, start_synchronized=None,
            node_time_s=model.Stats.make(), rate=model.Rate.make(unit="B/s"),
            residency=model.Residency.make(warm_nodes=[]),
            start=model.StartVerdict.make(verdict="cannot tell"), node_results=results)
        report = model.Report.make(
            run_id='r"1\\x\ny', status="ok", exit_code=0, parts=[part], regressions=[],
            nodes=model.NodeCounts.make(expected=1, failed=[], missing=[]),
            validity=model.Validity.make(verdict="NOT VALID", rules=[]),
            clock=model.ClockSummary.make(offsets=model.Offsets.make(nodes={})))
        prom = self.path("m.prom")
        self.assertIsNone(prometheus.write(prom, report))
        rc, out = promtool_check(prom)
        self.assertEqual(rc, 0, out)
        with open(prom) as f:
            text = f.read()
        self.assertIn('run_id="r\\"1\\\\x\\ny"', text)
        self.assertIn('node="we\\"ird\\\\node\\n"', text)
        self.assertNotIn("NaN", text)
        self.assertNotIn("start_spread", text)  # unknown: left out, not written as 0
        self.assertEqual(find(samples(prom), "stagebench_node_time_seconds"), [2.5])
        self.assertIn("cannot write", prometheus.write(self.path("no", "dir.prom"), report))


class Cron(ct.TempDirCase):
    def test_cron_writes_metrics_after_each_run(self):
        res = self.path("res")
        prom = self.path("stagebench.prom")
        p = ct.run_script("stagebench-cron", [
            "--results", res, "--prometheus", prom, "--sim", "--", "--nodes", "2",
            "--servers", "1", "--dir", self.path("stage"), "--stagebench", ct.BINARY,
            "--scale", "tiny", "1a"], timeout=180)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        rc, out = promtool_check(prom)
        self.assertEqual(rc, 0, out)
        rows = samples(prom)
        self.assertEqual(find(rows, "stagebench_run_exit_status"), [0.0])
        run = [lab for n, lab, _v in rows if n == "stagebench_run_info"]
        self.assertEqual(len(run), 1)
        self.assertTrue(run[0]["run_id"].startswith("cron-"), run)
        self.assertEqual(sorted(lab["node"] for n, lab, _v in rows
                                if n == "stagebench_node_time_seconds"), ["node1", "node2"])
        with open(os.path.join(res, "stagebench-cron.log")) as f:
            self.assertIn("metrics written to %s" % prom, f.read())

    def test_cron_metrics_that_cannot_be_written_are_logged(self):
        res = self.path("res")
        prom = self.path("missing-dir", "stagebench.prom")
        p = ct.run_script("stagebench-cron", [
            "--results", res, "--prometheus", prom, "--sim", "--", "--nodes", "1",
            "--servers", "1", "--dir", self.path("stage"), "--stagebench", ct.BINARY,
            "--scale", "tiny", "1a"], timeout=180)  # run_script: no traceback
        self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
        self.assertFalse(os.path.exists(os.path.dirname(prom)))
        with open(os.path.join(res, "stagebench-cron.log")) as f:
            log = f.read()
        self.assertIn("cannot write %s: No such file or directory" % prom, log)
        self.assertRegex(log, r"end cron-\S+: exit %d" % p.returncode)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
