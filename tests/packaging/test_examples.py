# SPDX-License-Identifier: MIT
"""The shipped examples as the tools that read them read them: the Prometheus alerting rules
(scripts/examples/stagebench.rules.yml) parsed by `promtool check rules` and evaluated by
`promtool test rules` on series named as stagebench's metrics are (each alert fires where it
should, and only there), and the systemd service and timer, as the build configured them,
by `systemd-analyze verify`: the service runs as its configured user in the state directory
systemd makes for it; stagebench-report(5) quotes the rules' expressions as the file has them.
Run as `python3 test_examples.py BINARY SOURCE_DIR`."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

BINARY = SOURCE = BUILD = None

# One node slow in a part (n2: 20 s against a median of 12 s, over 1.25 x 12 = 15 s), a run
# that exited 1 and ended at time 0, scraped from one node_exporter every hour.
SERIES = [
    ('stagebench_node_time_seconds{instance="launch1",node="n1",server="s1",test="1a",'
     'part="1a",repetition="1"}', "10x30"),
    ('stagebench_node_time_seconds{instance="launch1",node="n2",server="s1",test="1a",'
     'part="1a",repetition="1"}', "20x30"),
    ('stagebench_part_node_time_median_seconds{instance="launch1",test="1a",part="1a",'
     'repetition="1"}', "12x30"),
    ('stagebench_run_exit_status{instance="launch1"}', "1x30"),
    ('stagebench_run_end_time_seconds{instance="launch1"}', "0x30"),
]
SLOW = {"severity": "warning", "instance": "launch1", "node": "n2", "server": "s1",
        "test": "1a", "part": "1a", "repetition": "1"}
ALERTS = [
    ("2h", "StagebenchNodeSlow", [
        (SLOW, {"summary": "n2 slow in part 1a",
                "description": "n2 (server s1) took 20 s in part 1a of test 1a, more than "
                               "1.25 times the part's median node time."})]),
    ("2h", "StagebenchRunFailed", [
        ({"severity": "warning", "instance": "launch1"},
         {"summary": "stagebench run failed (exit status 1)",
          "description": "The last stagebench run exported by launch1 exited 1: see its "
                         "report.txt or stagebench-cron.log."})]),
    ("2h", "StagebenchNoRecentRun", []),
    ("27h", "StagebenchNoRecentRun", [
        ({"severity": "warning", "instance": "launch1"},
         {"summary": "no stagebench run for more than 26 h",
          "description": "The last stagebench run exported by launch1 ended 1d 3h 0m 0s "
                         "ago."})]),
]


RULES_MARK = "<!-- rules-test: "


def rule_expressions(text):
    """{alert: expression} of a rules file, each expression on one line as Prometheus reads
    it (a folded block scalar, >-, joined by single spaces), in the file's order."""
    out, name, lines = [], None, iter(text.splitlines())
    for line in lines:
        m = re.match(r"^\s*- alert: (\S+)\s*$", line)
        if m:
            name = m.group(1)
            continue
        m = re.match(r"^(\s*)expr: (.*)$", line)
        if not m:
            continue
        if m.group(2).strip() != ">-":
            out.append((name, m.group(2).strip()))
            continue
        folded = []
        for more in lines:
            if len(more) - len(more.lstrip()) <= len(m.group(1)):
                break
            folded.append(more.strip())
        out.append((name, " ".join(folded)))
    return out


def page_expressions(text):
    """[(alert, expression)] of the block after the rules-test mark: '# NAME' then its
    expression."""
    block = text.split(RULES_MARK, 1)[1].split("```\n", 1)[1].split("```", 1)[0]
    out, name = [], None
    for line in block.splitlines():
        if line.startswith("# "):
            name = line[2:].strip()
        elif line.strip():
            out.append((name, line.strip()))
    return out


def _run(cmd, cwd=None):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=120)
    return p.returncode, p.stdout


class Examples(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="stagebench-examples-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.rules = os.path.join(SOURCE, "scripts", "examples", "stagebench.rules.yml")

    def test_alerting_rules_parse_and_fire_where_they_should(self):
        if not shutil.which("promtool"):
            self.fail("promtool is missing (Debian: prometheus; scripts/install-deps)")
        rc, out = _run(["promtool", "check", "rules", self.rules])
        self.assertEqual(rc, 0, out)
        self.assertIn("SUCCESS: 3 rules found", out)
        # every metric the rules read is one stagebench writes
        sys.path.insert(0, os.path.join(SOURCE, "scripts"))
        from stagebench import prometheus
        written = set(prometheus.PREFIX + name for name, _help in prometheus.FAMILIES)
        with open(self.rules) as f:
            read = set(re.findall(r"\bstagebench_[a-z_]+\b", f.read()))
        self.assertTrue(read and read <= written, read - written)
        # evaluated: JSON is YAML
        shutil.copy(self.rules, self.tmp)
        tests = {"rule_files": [os.path.basename(self.rules)], "evaluation_interval": "1m",
                 "tests": [{"interval": "1h",
                            "input_series": [{"series": s, "values": v} for s, v in SERIES],
                            "alert_rule_test": [
                                {"eval_time": at, "alertname": name,
                                 "exp_alerts": [{"exp_labels": labels,
                                                 "exp_annotations": annotations}
                                                for labels, annotations in alerts]}
                                for at, name, alerts in ALERTS]}]}
        with open(os.path.join(self.tmp, "tests.yml"), "w") as f:
            json.dump(tests, f, indent=1)
        rc, out = _run(["promtool", "test", "rules", "tests.yml"], cwd=self.tmp)
        self.assertEqual(rc, 0, out)
        self.assertIn("SUCCESS", out)

    def test_report_page_quotes_the_rules(self):
        """stagebench-report(5) quotes each alert's expression as the rules file has it (the
        file is what promtool checks), every alert, in its order."""
        with open(self.rules) as f:
            rules = rule_expressions(f.read())
        self.assertEqual(len(rules), 3, rules)
        with open(os.path.join(SOURCE, "scripts", "man", "stagebench-report.5.md")) as f:
            quoted = page_expressions(f.read())
        self.assertEqual(quoted, rules)
        if shutil.which("promtool"):  # and the folding read as promtool reads it
            tmp = os.path.join(self.tmp, "quoted.yml")
            with open(tmp, "w") as f:
                json.dump({"groups": [{"name": "quoted", "rules": [
                    {"alert": name, "expr": expr} for name, expr in quoted]}]}, f)
            rc, out = _run(["promtool", "check", "rules", tmp])
            self.assertEqual(rc, 0, out)
            self.assertIn("SUCCESS: 3 rules found", out)

    def test_systemd_service_runs_as_its_user_in_its_state_directory(self):
        service = os.path.join(BUILD, "scripts", "examples", "stagebench-validate.service")
        if not os.path.exists(service):
            self.skipTest("the binary is not in a CMake build tree")
        if not shutil.which("systemd-analyze"):
            self.fail("no systemd-analyze here (Debian: systemd; scripts/install-deps)")
        with open(service) as f:
            text = f.read()
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            user = re.search(r"^STAGEBENCH_SERVICE_USER:STRING=(.*)$", f.read(), re.M).group(1)
        self.assertRegex(text, r"\nUser=%s\n" % re.escape(user))
        self.assertIn("\nStateDirectory=stagebench\n", text)
        self.assertRegex(text, r"\nExecStart=/\S+/stagebench-cron .*--results %S/stagebench ")
        # verified with the build's stagebench-cron in place of the installed one
        cron = os.path.join(BUILD, "scripts", "bin", "stagebench-cron")
        text, n = re.subn(r"(?m)^ExecStart=/\S+/stagebench-cron ", "ExecStart=%s " % cron, text)
        self.assertEqual(n, 1)
        with open(os.path.join(self.tmp, "stagebench-validate.service"), "w") as f:
            f.write(text)
        shutil.copy(os.path.join(SOURCE, "scripts", "examples", "stagebench-validate.timer"),
                    self.tmp)
        rc, out = _run(["systemd-analyze", "verify", "--man=no",
                        os.path.join(self.tmp, "stagebench-validate.service"),
                        os.path.join(self.tmp, "stagebench-validate.timer")])
        self.assertEqual((rc, out), (0, ""))


if __name__ == "__main__":
    BINARY, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    BUILD = os.path.dirname(BINARY)
    unittest.main(verbosity=2)
