# SPDX-License-Identifier: MIT
"""The bash completion of the six commands, as built (BUILD/completion/NAME), run through
bash as the shell runs it, against what each command accepts: the cluster commands' argparse
parsers (every option string offered, and only those; a choice's words; directories where a
directory is asked, files where a file is; the catalogue's test names, each one the command
accepts; stagebench-cron's launcher options after its --; stagebench-history's subcommands,
then the named one's options), and the binary's directories
(status and stop take a state directory, run --detach one).
Run as `python3 test_completion.py BINARY SOURCE_DIR`; skipped (77) outside a build tree."""
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

BINARY = SOURCE = BUILD = None
SKIP = 77
COMMANDS = ("stagebench-cluster", "stagebench-collect", "stagebench-cron", "stagebench-history",
            "stagebench-sim")


class Completion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stagebench-completion-")
        # what a directory or a file completes to: one of each
        os.mkdir(os.path.join(cls.tmp, "somedir"))
        with open(os.path.join(cls.tmp, "somefile"), "w") as f:
            f.write("x\n")
        from stagebench import catalogue
        cls.catalogue = catalogue.load()
        completion = importlib.import_module("completion")
        cls.parsers = dict((c, completion.parser_of(importlib.import_module(
            "stagebench." + c[len("stagebench-"):]))) for c in COMMANDS)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def complete(self, words):
        """What the installed completion of words[0] offers for words (the last one being
        completed), run by bash in a directory holding somedir/ and somefile."""
        script = os.path.join(BUILD, "completion", words[0])
        line = " ".join("'%s'" % w for w in words)
        p = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                            'source "$1"; COMP_WORDS=(%s); COMP_CWORD=%d; %s; '
                            'printf "%%s\\n" "${COMPREPLY[@]}"'
                            % (line, len(words) - 1, "_" + words[0].replace("-", "_")),
                            "bash", script], cwd=self.tmp, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual((p.returncode, p.stderr), (0, ""), words)
        return sorted(w for w in p.stdout.split("\n") if w)

    def expected_values(self, action):
        """What the word after an option of action should complete to, here."""
        if action.choices:
            return sorted(action.choices)
        kind = (action.metavar or "").split("_")[-1]
        if kind == "DIR":
            return ["somedir"]
        if kind in ("FILE", "PATH"):
            return ["somedir", "somefile"]
        return []

    def check_parser(self, words, parser, extra=()):
        """The completion at words (a command line before the word completed) against
        parser: its options, their values, its operands."""
        options = sorted(list(parser._option_string_actions) + list(extra))
        self.assertEqual(self.complete(words + ["-"]), options, words)
        for option, action in parser._option_string_actions.items():
            if action.nargs == 0:
                continue
            self.assertEqual(self.complete(words + [option, ""]), self.expected_values(action),
                             words + [option])
        operands = [a for a in parser._actions if not a.option_strings]
        offered = set(self.complete(words + [""])) - set(options)
        if not operands:
            self.assertEqual(offered, set(), words)
        elif operands[0].metavar == "TEST":
            # every name offered is a test the command takes, and every test and part is
            self.assertEqual(offered, set(self.catalogue.tests) | set(self.catalogue.parts)
                             | {"all"})
            for name in offered:
                self.catalogue.parse_tests([name])
        elif operands[0].choices:  # the names of the subcommands
            self.assertEqual(offered, set(operands[0].choices), words)
        elif operands[0].metavar == "RESULTS":  # a directory or summary files
            self.assertEqual(self.complete(words + ["some"]), ["somedir", "somefile"])
        elif operands[0].metavar.split("_")[-1] == "DIR":
            self.assertEqual(self.complete(words + ["some"]), ["somedir"], words)
        else:  # a name (a node's, a run's): nothing to offer but the options
            self.assertEqual(offered, set(), words)

    def test_cluster_commands_offer_what_their_parsers_take(self):
        for command in ("stagebench-cluster", "stagebench-collect", "stagebench-sim"):
            self.check_parser([command], self.parsers[command])

    def test_history_its_subcommands_then_theirs(self):
        """stagebench-history: its own options and its subcommands' names; after a
        subcommand (an option's value before it skipped), that subcommand's."""
        parser = self.parsers["stagebench-history"]
        self.check_parser(["stagebench-history"], parser)
        subs = [a for a in parser._actions if a.choices and not a.option_strings][0].choices
        self.assertIn("regressions", subs)
        for name, sub in subs.items():
            self.check_parser(["stagebench-history", name], sub)
            self.check_parser(["stagebench-history", "--results", "r", name], sub)
        # a value that is a subcommand's name is the option's, not the subcommand
        self.assertEqual(self.complete(["stagebench-history", "--history", "runs", "--f"]),
                         [])
        self.assertEqual(self.complete(["stagebench-history", "--history", "runs", "show",
                                        "--pl"]), ["--plot"])

    def test_cron_then_its_launcher_after_the_separator(self):
        cron = ["stagebench-cron", "--results", "r"]
        self.check_parser(["stagebench-cron"], self.parsers["stagebench-cron"], extra=("--",))
        self.check_parser(cron + ["--"], self.parsers["stagebench-cluster"])
        self.check_parser(cron + ["--sim", "--"], self.parsers["stagebench-sim"])

    def test_binary_directories(self):
        """stagebench's own (its options against --help: cluster.test_install): a state
        directory after status and stop, and after run --detach."""
        for words in (["stagebench", "status", "s"], ["stagebench", "stop", "s"],
                      ["stagebench", "run", "--detach", "s"]):
            self.assertEqual(self.complete(words), ["somedir"], words)
        self.assertEqual(self.complete(["stagebench", "status", "--f"]), ["--format"])
        self.assertIn("1a", self.complete(["stagebench", "run", ""]))
        self.assertEqual(self.complete(["stagebench", "run", "s"]), [])


if __name__ == "__main__":
    BINARY, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    BUILD = os.path.dirname(BINARY)
    if not os.path.exists(os.path.join(BUILD, "completion", "stagebench-cron")):
        print("SKIPPED: the binary is not in a CMake build tree (no completion/)")
        sys.exit(SKIP)
    try:
        importlib.import_module("ClusterShell")
    except ImportError:
        print("SKIPPED: %s has no ClusterShell (Debian: python3-clustershell)" % sys.executable)
        sys.exit(SKIP)
    sys.path.insert(0, os.path.join(SOURCE, "scripts"))
    sys.path.insert(0, os.path.join(SOURCE, "scripts", "cmake"))
    os.environ.setdefault("STAGEBENCH_CATALOGUE", os.path.join(BUILD, "catalogue.json"))
    unittest.main(verbosity=2)
