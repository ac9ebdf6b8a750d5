# SPDX-License-Identifier: MIT
"""The documented crontab lines (README, `stagebench-cron --help`, the installed example) run
as cron runs them: the command field cut at the first unescaped %, the rest (each further % a
newline) given as stdin, \\% turned into %, the command run by /bin/sh -c. A stand-in for the
wrapper records the argv it receives, and the wrapper's own parser must accept it whole: the
tolerance, and the launcher's arguments after --."""
import os
import re
import stat
import subprocess
import sys
import unittest

import clustertest as ct

CRON_LINE = re.compile(r"^\s*15 2 \* \* \* (\S*stagebench-cron .*)$")
RECORDER = """#!%s
import json, sys
with open(%r, "w") as f:
    json.dump({"argv": sys.argv[1:], "stdin": sys.stdin.read()}, f)
"""


def cron_split(command):
    """The command field as cron (cronie, Vixie cron: crontab(5)) treats it: (the shell
    command, its stdin). An unescaped % ends the command; the text after it is the stdin, each
    further unescaped % a newline; a backslash before % leaves a plain %."""
    cmd, rest, out, i = None, [], [], 0
    while i < len(command):
        ch = command[i]
        if ch == "\\" and i + 1 < len(command) and command[i + 1] == "%":
            out.append("%")
            i += 2
            continue
        if ch == "%":
            if cmd is None:
                cmd, out = "".join(out), []
            else:
                out.append("\n")
        else:
            out.append(ch)
        i += 1
    if cmd is None:
        return "".join(out), ""
    rest = "".join(out)
    return cmd, rest + "\n" if rest else ""


def documented_lines():
    """{where: the command field of the crontab line} from README, --help and the example."""
    found = {}
    with open(os.path.join(ct.SOURCE, "README.md")) as f:
        found["README.md"] = [m.group(1) for m in map(CRON_LINE.match, f.read().splitlines())
                              if m]
    p = ct.run_script("stagebench-cron", ["--help"])
    found["stagebench-cron --help"] = [m.group(1) for m in
                                       map(CRON_LINE.match, p.stdout.splitlines()) if m]
    with open(os.path.join(ct.SCRIPTS, "examples", "crontab.in")) as f:
        found["examples/crontab.in"] = [
            m.group(1).replace("@CMAKE_INSTALL_FULL_BINDIR@", "/usr/bin")
            for m in map(CRON_LINE.match, f.read().splitlines()) if m]
    return found


class Crontab(ct.TempDirCase):
    def run_as_cron(self, command):
        """Run the command field through cron's % handling and /bin/sh, the wrapper replaced
        by a recorder; what the recorder received."""
        rec = self.path("received.json")
        stand_in = self.path("stagebench-cron")
        with open(stand_in, "w") as f:
            f.write(RECORDER % (sys.executable, rec))
        os.chmod(stand_in, stat.S_IRWXU)
        if os.path.exists(rec):
            os.unlink(rec)
        cmd, stdin = cron_split(command)
        cmd = re.sub(r"^\S*stagebench-cron ", stand_in + " ", cmd)
        p = subprocess.run(["/bin/sh", "-c", cmd], input=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout)
        return ct.load(rec)

    def check_parsed(self, argv, where):
        from stagebench import common as L
        from stagebench import cron
        args = cron.parse_args(argv)
        self.assertEqual(args.results, "/shared/stagebench", where)
        self.assertEqual(args.baseline, "/shared/stagebench/baseline.json", where)
        self.assertEqual(L.parse_tolerance(args.tolerance), 0.15, where)
        self.assertEqual(args.launcher_args, ["-g", "compute", "--dir", "/stage/bench", "all"],
                         where)

    def test_documented_lines_reach_the_wrapper_whole(self):
        found = documented_lines()
        self.assertEqual(len(found["stagebench-cron --help"]), 1, found)
        self.assertEqual(len(found["examples/crontab.in"]), 1, found)
        self.assertGreaterEqual(len(found["README.md"]), 1, found)
        for where, lines in found.items():
            for line in lines:
                got = self.run_as_cron(line)
                self.assertEqual(got["stdin"], "", where)  # nothing cut off into stdin
                self.check_parsed(got["argv"], "%s: %s" % (where, line))

    def test_the_emulation_cuts_a_bare_percent(self):
        """The old line, --tolerance 15%: cron cut it at the %, the wrapper saw no -- and the
        launcher's arguments went to stdin; an escaped \\% reaches the wrapper as %."""
        old = ("/usr/local/bin/stagebench-cron --results /shared/stagebench --baseline "
               "/shared/stagebench/baseline.json --tolerance 15% -- -g compute --dir "
               "/stage/bench all")
        got = self.run_as_cron(old)
        self.assertEqual(got["argv"][-2:], ["--tolerance", "15"])
        self.assertNotIn("--", got["argv"])
        self.assertEqual(got["stdin"], " -- -g compute --dir /stage/bench all\n")
        got = self.run_as_cron(old.replace("15%", "15\\%"))
        self.assertEqual(got["stdin"], "")
        self.assertIn("15%", got["argv"])
        self.check_parsed(got["argv"], "escaped")
        self.assertEqual(cron_split("a%b%c"), ("a", "b\nc\n"))

    def test_tolerance_forms(self):
        from stagebench import common as L
        for text, want in (("15", 0.15), ("15%", 0.15), ("2.5", 0.025), ("0", 0.0)):
            self.assertAlmostEqual(L.parse_tolerance(text), want)
        for bad in ("abc", "-1", "0.15x", "15%%"):
            with self.assertRaises(L.UsageError):
                L.parse_tolerance(bad)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
