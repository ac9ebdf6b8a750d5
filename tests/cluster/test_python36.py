# SPDX-License-Identifier: MIT
"""The cluster tools must run on RHEL 8's Python 3.6: every module of scripts/ parses as
Python 3.6 (ast feature_version) and uses none of the 3.7+ idioms that still parse there
(dataclasses, `from __future__ import annotations`, subprocess's capture_output= and text=,
f-string `=`, positional-only parameters, the walrus, methods such as str.isascii)."""
import ast
import glob
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tokenize
import unittest

SOURCE = None
BINARY = None

_FSTRING_EQ = re.compile(r"\{[^{}!:=<>]*[^{}!:=<>\s]\s*=\s*(![rsa])?(:[^{}]*)?\}")
# Methods and functions of later Pythons, by the attribute name they are reached by.
_LATER_ATTRS = {"isascii": "3.7", "time_ns": "3.7", "monotonic_ns": "3.7",
                "perf_counter_ns": "3.7", "process_time_ns": "3.7", "nullcontext": "3.7",
                "fromisoformat": "3.7", "isqrt": "3.8", "cached_property": "3.8",
                "removeprefix": "3.9", "removesuffix": "3.9", "bit_count": "3.10"}


def problems(src, name):
    """What in src would not run on Python 3.6: a list of 'name:line: why'."""
    try:
        tree = ast.parse(src, name, feature_version=(3, 6))
    except SyntaxError as e:
        return ["%s:%s: not Python 3.6 syntax: %s" % (name, e.lineno, e.msg)]
    out = []
    for n in ast.walk(tree):
        line = getattr(n, "lineno", 0)
        if isinstance(n, ast.NamedExpr):
            out.append("%s:%d: walrus" % (name, line))
        elif isinstance(n, ast.arguments) and n.posonlyargs:
            out.append("%s:%d: positional-only parameters" % (name, line))
        elif isinstance(n, ast.ImportFrom) and n.module == "__future__" and \
                any(a.name == "annotations" for a in n.names):
            out.append("%s:%d: from __future__ import annotations" % (name, line))
        elif isinstance(n, ast.ImportFrom) and n.module == "dataclasses" or \
                isinstance(n, ast.Import) and any(a.name == "dataclasses" for a in n.names):
            out.append("%s:%d: dataclasses" % (name, line))
        elif isinstance(n, ast.Call) and any(k.arg in ("capture_output", "text")
                                             for k in n.keywords):
            out.append("%s:%d: capture_output= or text= (subprocess, 3.7)" % (name, line))
        elif isinstance(n, ast.Attribute) and n.attr in _LATER_ATTRS:
            out.append("%s:%d: .%s (Python %s)" % (name, line, n.attr, _LATER_ATTRS[n.attr]))
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.STRING and re.match(r"^[rRbB]*[fF]", tok.string) and \
                _FSTRING_EQ.search(tok.string):
            out.append("%s:%d: f-string '=' specifier" % (name, tok.start[0]))
    return out


def sources():
    scripts = os.path.join(SOURCE, "scripts")
    files = sorted(glob.glob(os.path.join(scripts, "stagebench", "*.py")))
    files += sorted(glob.glob(os.path.join(scripts, "stagebench-*")))
    files.append(os.path.join(SOURCE, "scripts", "cmake", "python_sitedir.py"))
    files.append(os.path.join(SOURCE, "scripts", "man-page"))  # run by the build
    return files


class Python36(unittest.TestCase):
    def test_every_module(self):
        files = sources()
        self.assertGreater(len(files), 10)
        found = []
        for f in files:
            with open(f) as fh:
                found += problems(fh.read(), os.path.relpath(f, SOURCE))
        self.assertEqual(found, [])

    def test_the_checker_finds_each_idiom(self):
        cases = {
            "if (n := 1): pass\n": "Assignment expressions",
            "def f(a, /, b): pass\n": "Positional-only",
            "from __future__ import annotations\n": "annotations",
            "import dataclasses\n": "dataclasses",
            "from dataclasses import dataclass\n": "dataclasses",
            "subprocess.run(['x'], capture_output=True)\n": "capture_output",
            "subprocess.run(['x'], text=True)\n": "capture_output",
            "x = 1\ny = f'{x=}'\n": "f-string",
            "x = 1\ny = f'{x = !r:>4}'\n": "f-string",
            "ok = b'x'.isascii()\n": ".isascii (Python 3.7)",
            "t = time.monotonic_ns()\n": ".monotonic_ns (Python 3.7)",
            "s = 'ab'.removeprefix('a')\n": ".removeprefix (Python 3.9)",
        }
        for src, what in cases.items():
            with self.subTest(src=src):
                found = problems(src, "t.py")
                self.assertEqual(len(found), 1, found)
                self.assertIn(what, found[0])
        self.assertEqual(problems("x = 1\ny = f'{x == 1}' + f'{x!r:>4}'\n", "t.py"), [])


def python36():
    """A Python 3.6 here (RHEL 8's platform Python, or one on PATH or in pyenv), or None."""
    cands = ["/usr/libexec/platform-python3.6", shutil.which("python3.6") or ""]
    cands += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.6*/bin/python3.6")))
    for c in cands:
        if c and os.access(c, os.X_OK) and subprocess.run(
                [c, "-c", "import sys; sys.exit(sys.version_info[:2] != (3, 6))"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60).returncode == 0:
            return c
    return None


class RunsOn36(unittest.TestCase):
    def test_simulated_run_on_python36(self):
        """Where a Python 3.6 exists, a simulated run of 2 nodes goes through on it (sim,
        launcher with ClusterShell's exec worker, collector), with this machine's ClusterShell
        (pure Python) put on its path."""
        py = python36()
        if py is None:
            self.skipTest("no Python 3.6 here")
        try:
            import ClusterShell
        except ImportError:
            self.skipTest("no ClusterShell to lend to Python 3.6")
        d = tempfile.mkdtemp(prefix="stagebench-py36-")
        self.addCleanup(shutil.rmtree, d, True)
        shutil.copytree(os.path.dirname(ClusterShell.__file__),
                        os.path.join(d, "lib", "ClusterShell"))
        env = dict(os.environ, PYTHONPATH=os.path.join(d, "lib"))
        p = subprocess.run([py, os.path.join(SOURCE, "scripts", "stagebench-sim"), "--nodes",
                            "2", "--servers", "1", "--dir", os.path.join(d, "stage"),
                            "--results", os.path.join(d, "r"), "--stagebench", BINARY,
                            "--scale", "tiny", "--run-id", "py36", "--lead", "5", "1a"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, env=env, timeout=240)
        self.assertNotIn("Traceback", p.stderr)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("status: ok", p.stdout)
        self.assertTrue(os.path.exists(os.path.join(d, "r", "py36", "node2.1a.rep1.json")))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: %s STAGEBENCH_BINARY SOURCE_DIR" % sys.argv[0])
    BINARY = os.path.abspath(sys.argv[1])
    SOURCE = os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    unittest.main(verbosity=2)
