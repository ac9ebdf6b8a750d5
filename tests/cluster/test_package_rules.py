# SPDX-License-Identifier: MIT
"""How the stagebench package reads, checked on its sources: no function over 80 lines, no
one-letter module alias, no dict key starting with '_' (a private key crossing modules), no
test, part or kind name of the catalogue written as a literal (the catalogue decides), the
remote script clean for shellcheck, and the report/3 reference generated from the model with
every field and CSV column."""
import ast
import glob
import json
import os
import shutil
import subprocess
import sys
import unittest

import clustertest as ct

MAX_FUNCTION_LINES = 80


def modules():
    return sorted(glob.glob(os.path.join(ct.SCRIPTS, "stagebench", "*.py")))


def trees():
    for path in modules():
        with open(path) as f:
            yield os.path.basename(path), ast.parse(f.read(), path)


def catalogue_names():
    """Every test, part and kind name of the build's catalogue."""
    with open(os.environ["STAGEBENCH_CATALOGUE"]) as f:
        cat = json.load(f)
    names = {t["test"] for t in cat["tests"]}
    names |= {p["part"] for p in cat["parts"]} | {p["kind"] for p in cat["parts"]}
    return names


class Rules(unittest.TestCase):
    def test_functions_short(self):
        long = []
        for name, tree in trees():
            for n in ast.walk(tree):
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = n.end_lineno - n.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        long.append("%s:%d %s: %d lines" % (name, n.lineno, n.name, lines))
        self.assertEqual(long, [])

    def test_no_one_letter_module_alias(self):
        found = []
        for name, tree in trees():
            for n in ast.walk(tree):
                if isinstance(n, (ast.Import, ast.ImportFrom)):
                    found += ["%s:%d %s as %s" % (name, n.lineno, a.name, a.asname)
                              for a in n.names if a.asname and len(a.asname) == 1]
        self.assertEqual(found, [])

    def test_no_private_dict_keys(self):
        found = []
        for name, tree in trees():
            for n in ast.walk(tree):
                keys = []
                if isinstance(n, ast.Dict):
                    keys = n.keys
                elif isinstance(n, ast.Subscript):
                    keys = [n.slice]
                found += ["%s:%d %r" % (name, n.lineno, k.value) for k in keys
                          if isinstance(k, ast.Constant) and isinstance(k.value, str) and
                          k.value.startswith("_")]
        self.assertEqual(found, [])

    def test_no_test_part_or_kind_literal(self):
        """The package decides nothing from a name: no string literal is a test, part or
        kind of the catalogue (docstrings and messages may mention them)."""
        names = catalogue_names()
        self.assertTrue({"1a", "3", "4a"} <= names, names)
        found = []
        for name, tree in trees():
            for n in ast.walk(tree):
                if isinstance(n, ast.Constant) and n.value in names:
                    found.append("%s:%d %r" % (name, n.lineno, n.value))
        self.assertEqual(found, [])

    def test_remote_script_shellcheck(self):
        if not shutil.which("shellcheck"):
            self.fail("shellcheck is missing (Debian: shellcheck; scripts/install-deps)")
        p = subprocess.run(["shellcheck", os.path.join(ct.SCRIPTS, "stagebench", "remote.sh")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout)


class ReportDoc(unittest.TestCase):
    def test_reference_names_every_field_and_column(self):
        """`python3 -m stagebench.reportdoc` (what the man-page build runs) prints each record
        of the report with each of its fields and its type, and the CSV columns numbered 1..N
        in the order --format csv writes them."""
        from stagebench import model, reportdoc
        p = subprocess.run([sys.executable, "-m", "stagebench.reportdoc"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60,
                           env=dict(ct.env(), PYTHONPATH=ct.SCRIPTS))
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        text = p.stdout
        self.assertIn("(schema stagebench.report/3)", text)
        for cls in reportdoc.records():
            self.assertIn("\n#### %s\n" % cls.__name__, text)
            for f in cls.FIELDS:
                self.assertIn("\n`%s` (%s" % (f.name, f.type_text()), text)
        numbers = [c.number for c, _f in model.CSV_COLUMNS]
        self.assertEqual(numbers, list(range(1, len(numbers) + 1)))
        for c, _f in model.CSV_COLUMNS:
            self.assertIn("| %d | `%s` |" % (c.number, c.name), text)
        # every object of a report's JSON is a record the reference describes
        described = set(cls.__name__ for cls in reportdoc.records())
        self.assertTrue({"Report", "PartResult", "Rate", "StartVerdict", "Validity"} <=
                        described)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
