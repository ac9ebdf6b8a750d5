# SPDX-License-Identifier: MIT
"""`cmake --install` of the build under test into a temporary prefix: the package lands in
the interpreter's purelib for that prefix with the build's catalogue, the commands in bin/ with
the interpreter's shebang, and they run from there (no source tree, no binary on PATH). The
layout (GNUInstallDirs: man pages, docs and examples, bash completion, LICENSE), the generated
completion against --help, and `make uninstall` leaving no file behind."""
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

COMMANDS = ("stagebench-cluster", "stagebench-collect", "stagebench-cron", "stagebench-history",
            "stagebench-sim")
EXAMPLES = ("servers", "crontab", "stagebench-validate.service", "stagebench-validate.timer",
            "stagebench.sbatch", "stagebench.nhc", "stagebench.rules.yml")


def _build_tree():
    build = os.path.dirname(ct.BINARY)
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")) or not shutil.which("cmake"):
        return None
    return build


def _install(case, build):
    """`cmake --install` of build into the case's directory, the build's install manifest put
    back afterwards; returns the prefix."""
    harness.keep_install_records(case, build)
    prefix = case.path("prefix")
    p = subprocess.run(["cmake", "--install", build, "--prefix", prefix],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=120)
    case.assertEqual(p.returncode, 0, p.stdout)
    return prefix


def _files_under(top):
    return sorted(os.path.relpath(os.path.join(d, f), top)
                  for d, _s, fs in os.walk(top) for f in fs)


def _complete(script, words):
    """What the completion script offers for the command line words (the last one being
    completed), through bash as the shell does it."""
    line = " ".join("'%s'" % w for w in words)
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                        'source "$1"; COMP_WORDS=(%s); COMP_CWORD=%d; _stagebench; '
                        'printf "%%s\\n" "${COMPREPLY[@]}"' % (line, len(words) - 1),
                        "bash", script],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=60)
    if p.returncode != 0:
        raise AssertionError(p.stderr)
    return [w for w in p.stdout.split("\n") if w]

import clustertest as ct
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harness  # noqa: E402


class Install(ct.TempDirCase):
    def test_installed_commands_run(self):
        build = _build_tree()
        if not build:
            self.skipTest("the binary is not in a CMake build tree")
        prefix = _install(self, build)
        found = [d for d, _s, fs in os.walk(prefix) if "catalogue.json" in fs]
        self.assertEqual(len(found), 1, found)
        package = found[0]
        self.assertEqual(os.path.basename(package), "stagebench")
        self.assertTrue(os.path.exists(os.path.join(package, "engines.py")))
        self.assertTrue(os.path.exists(os.path.join(package, "remote.sh")))
        with open(os.path.join(package, "catalogue.json")) as f:
            version = json.load(f)["version"]
        env = ct.env()
        env.pop("STAGEBENCH_CATALOGUE", None)
        env["PYTHONPATH"] = os.path.dirname(package)
        env["PATH"] = "/usr/bin:/bin"
        for name in COMMANDS:
            cmd = os.path.join(prefix, "bin", name)
            with open(cmd) as f:
                self.assertEqual(f.readline().strip(), "#!" + sys.executable)
            p = subprocess.run([cmd, "--version"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, env=env,
                               timeout=60)
            self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "%s %s\n" % (name, version),
                                                                  ""))
        # the simulation finds its launcher and binary beside it, the catalogue installed
        p = subprocess.run([os.path.join(prefix, "bin", "stagebench-sim"), "--nodes", "2",
                            "--servers", "1", "--dir", self.path("stage"), "--results",
                            self.path("r"), "--scale", "tiny", "--dry-run", "1a"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("dry run: 2 nodes node[1-2]", p.stdout)
        # the collector runs its reader from libexec/stagebench (a wrapper notes that it ran)
        scan = os.path.join(prefix, "libexec", "stagebench", "stagebench-scan")
        os.rename(scan, scan + ".real")
        with open(scan, "w") as f:
            f.write('#!/bin/sh\n: >"$SCAN_RAN" && exec "$0.real" "$@"\n')
        os.chmod(scan, 0o755)
        summary = self.path("node.json")
        os.mkdir(self.path("stage2"))
        p = subprocess.run([ct.BINARY, "run", "2a", "--scale", "tiny", "--start-in", "0",
                            "--dir", self.path("stage2"), "--out", summary],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout)
        env["SCAN_RAN"] = self.path("scan-ran")
        p = subprocess.run([os.path.join(prefix, "bin", "stagebench-collect"), summary,
                            "--no-history", "--format", "json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, env=env, timeout=120)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        self.assertEqual(json.loads(p.stdout)["schema"].split("/")[0], "stagebench.report")
        self.assertTrue(os.path.exists(env["SCAN_RAN"]), "the collector ran no reader")

    def test_layout_and_uninstall(self):
        build = _build_tree()
        if not build:
            self.skipTest("the binary is not in a CMake build tree")
        man = os.path.join(build, "man", "stagebench.1")
        if not os.path.exists(man):
            self.skipTest("configured with -DSTAGEBENCH_MAN=OFF: no man pages")
        prefix = _install(self, build)
        files = _files_under(prefix)
        # the collector's reader: a program of the collector's, not a command
        expected = ["bin/stagebench", "libexec/stagebench/stagebench-scan"]
        expected += ["bin/" + c for c in COMMANDS]
        # every page the build made: one per command, the formats (5) and the rules (7)
        pages = [f for f in os.listdir(os.path.join(build, "man")) if re.search(r"\.[157]$", f)]
        expected += ["share/man/man%s/%s" % (f[-1], f) for f in pages]
        expected += ["share/man/man1/%s.1" % c for c in ("stagebench",) + COMMANDS]
        expected += ["share/doc/stagebench/" + f for f in ("LICENSE", "README.md") + EXAMPLES]
        expected.append("share/doc/stagebench/scripts/examples/history-page.png")  # README's
        expected += ["share/bash-completion/completions/" + c for c in ("stagebench",) + COMMANDS]
        for f in expected:
            self.assertIn(f, files)
        for f in expected[:2] + ["bin/" + c for c in COMMANDS]:
            self.assertTrue(os.access(os.path.join(prefix, f), os.X_OK), f)
        package = [f for f in files if f.endswith("/stagebench/catalogue.json")]
        self.assertEqual(len(package), 1, files)
        # nothing else: no module in bin/, no bytecode anywhere; the script the launcher
        # sends to the nodes beside the modules
        rest = set(files) - set(expected)
        self.assertIn(os.path.dirname(package[0]) + "/remote.sh", rest)
        self.assertTrue(all(f.startswith(os.path.dirname(package[0]) + "/") and
                            f.endswith((".py", ".json", "/remote.sh")) for f in rest),
                        sorted(rest))
        # the man pages: one per command, named after it, with its options
        for c in ("stagebench",) + COMMANDS:
            with open(os.path.join(prefix, "share/man/man1/%s.1" % c)) as f:
                text = f.read()
            self.assertRegex(text, r'\.TH %s 1 ' % re.escape(c.upper()))
            for section in ("SYNOPSIS", "OPTIONS", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
                self.assertIn("\n.SH %s\n" % section, text)
            self.assertIn("\\fB--version\\fP", text)
            if c == "stagebench":
                # a COMMANDS section, every command with its own page
                self.assertIn("\n.SH COMMANDS\n", text)
                for cmd in ("run", "prepare", "clean", "list", "info", "check", "clock",
                            "status", "stop"):
                    self.assertIn("\\fBstagebench-%s\\fP(1)" % cmd, text)
                    self.assertIn("share/man/man1/stagebench-%s.1" % cmd, files)
        # the examples name the installed commands, and the crontab line has no bare % (cron
        # would cut the command there)
        docdir = os.path.join(prefix, "share/doc/stagebench")
        with open(os.path.join(docdir, "crontab")) as f:
            lines = [ln for ln in f.read().splitlines() if ln and not ln.startswith("#")]
        self.assertEqual(len(lines), 1, lines)
        self.assertNotRegex(lines[0], r"(?<!\\)%")
        self.assertRegex(lines[0], r"^15 2 \* \* \* /\S+/bin/stagebench-cron --results ")
        with open(os.path.join(docdir, "stagebench-validate.service")) as f:
            self.assertRegex(f.read(), r"\nExecStart=/\S+/bin/stagebench-cron ")
        # the Slurm batch script: bash syntax, every #SBATCH line before the first command
        sbatch = os.path.join(docdir, "stagebench.sbatch")
        p = subprocess.run(["bash", "-n", sbatch], stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(sbatch) as f:
            lines = f.read().splitlines()
        first_command = min(i for i, ln in enumerate(lines) if ln and not ln.startswith("#"))
        self.assertTrue(all(i < first_command for i, ln in enumerate(lines)
                            if ln.startswith("#SBATCH")))
        self.assertRegex(lines[first_command], r"^/\S+/bin/stagebench-cluster --launcher srun ")
        with open(os.path.join(docdir, "LICENSE")) as f:
            self.assertTrue(f.read().startswith("MIT License"))
        # `make uninstall` (the uninstall target) after a command ran and left bytecode
        pkgdir = os.path.join(prefix, os.path.dirname(package[0]))
        env = ct.env()
        env["PYTHONPATH"] = os.path.dirname(pkgdir)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        p = subprocess.run([os.path.join(prefix, "bin", "stagebench-collect"), "--version"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           universal_newlines=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = subprocess.run(["cmake", "--build", build, "--target", "uninstall"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertEqual(_files_under(prefix), [])
        self.assertFalse(os.path.exists(pkgdir))
        self.assertFalse(os.path.exists(docdir))

    def test_completion_offers_what_help_lists(self):
        script = os.path.join(os.path.dirname(ct.BINARY), "completion", "stagebench")
        if not os.path.exists(script):
            self.skipTest("the binary is not in a CMake build tree (no completion/stagebench)")
        tests = json.loads(subprocess.run([ct.BINARY, "list", "--format", "json"],
                                          stdout=subprocess.PIPE, check=True,
                                          timeout=60).stdout.decode())
        names = set([t["test"] for t in tests["tests"]] +
                    [p for t in tests["tests"] for p in t["parts"]])
        self.assertEqual(set(_complete(script, ["stagebench", ""])),
                         {"run", "prepare", "clean", "list", "info", "check", "clock", "status",
                          "stop", "--help", "--version"})
        for cmd in ("run", "prepare", "clean", "list", "info", "check", "clock", "status", "stop"):
            out = subprocess.run([ct.BINARY, cmd, "--help"], stdout=subprocess.PIPE,
                                 check=True, timeout=60).stdout.decode()
            options = set(re.findall(r"^  (?:-[a-zA-Z], )?(--[a-z-]+)", out, re.M))
            offered = set(_complete(script, ["stagebench", cmd, "--"]))
            self.assertEqual(offered, options, cmd)
            words = set(_complete(script, ["stagebench", cmd, ""]))
            if cmd in ("run", "prepare", "clean"):
                self.assertTrue(names <= words, (cmd, names - words))
            else:
                self.assertFalse(names & words, cmd)
        self.assertEqual(_complete(script, ["stagebench", "run", "--scale", "t"]), ["tiny"])
        self.assertEqual(_complete(script, ["stagebench", "list", "--format", ""]),
                         ["text", "json", "csv"])
        self.assertEqual(_complete(script, ["stagebench", "run", "--threads", ""]), [])
        self.assertEqual(_complete(script, ["stagebench", "run", "--sc"]), ["--scale", "--schedule"])


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
