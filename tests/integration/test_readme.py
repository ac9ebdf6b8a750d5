# SPDX-License-Identifier: MIT
"""README.md against the commands: its command reference is what their --help prints, its
Options table names every option of `stagebench --help` and no other, and its commands marked
for testing run as written (at tiny scale, in a temporary directory)."""
import importlib.machinery
import os
import re
import subprocess
import sys
import unittest
import types

import sbtest


def readme():
    with open(os.path.join(sbtest.SOURCE, "README.md")) as f:
        return f.read()


def readme_options_module():
    path = os.path.join(sbtest.SOURCE, "scripts", "readme-options")
    loader = importlib.machinery.SourceFileLoader("readme_options", path)
    mod = types.ModuleType(loader.name)
    mod.__file__ = path
    loader.exec_module(mod)
    return mod


def section(text, title):
    """The text of the '## title' section, up to the next '## ' heading."""
    m = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % re.escape(title), text, re.S | re.M)
    assert m, "README.md has no '## %s' section" % title
    return m.group(1)


class Reference(unittest.TestCase):
    def test_command_reference_is_what_help_prints(self):
        ro = readme_options_module()
        want = ro.reference(sbtest.BINARY)
        text = readme()
        self.assertIn(ro.BEGIN, text)
        got = ro.BEGIN + text.split(ro.BEGIN, 1)[1].split(ro.END, 1)[0] + ro.END + "\n"
        self.assertEqual(got, want, "README.md's command reference is stale: run "
                         "scripts/readme-options --write build/stagebench")

    def test_reference_has_every_option_of_every_command(self):
        """The parse of --help misses nothing: each option named in any --help is in the
        reference, for the binary's commands and the Python commands."""
        ro = readme_options_module()
        ref = ro.reference(sbtest.BINARY)
        helps = [[sbtest.BINARY]] + [[sbtest.BINARY, c] for c in
                                     ro.binary_commands(sbtest.BINARY)]
        helps += [[sys.executable, os.path.join(sbtest.SOURCE, "scripts", c)]
                  for c in ro.PYTHON_COMMANDS]
        rows = [l for l in ref.splitlines() if l.startswith("| `")]
        in_reference = {n for l in rows for n in ro.names(l.split("` | ")[0][3:])}
        for argv in helps:
            text = ro.help_text(argv)
            usage_names = set(re.findall(r"\[(--?[A-Za-z][A-Za-z0-9-]*)", text.split("\n\n")[0]))
            parsed = {n for _s, inv, _m in ro.options(text) for n in ro.names(inv)}
            with self.subTest(argv=argv[-1]):
                self.assertTrue(parsed, text)
                self.assertEqual(sorted(usage_names - parsed), [], "options of the usage "
                                 "line that the parse of --help missed")
                self.assertEqual(sorted(parsed - in_reference), [], "not in the reference")
        for row in rows:
            with self.subTest(row=row):
                self.assertNotRegex(row, r"\|\s*\|$", "an option without a meaning")
        # the options the issue found undocumented are there
        for n in ("--exec", "--no-report", "--local-stagebench", "--verbose", "--info-timeout",
                  "--top", "--output", "--manifest", "--log", "--version"):
            self.assertIn("`%s" % n, ref)
        self.assertRegex(ref, r"`--info-timeout SECONDS` \| time limit of the info round "
                         r"\(default: 120\)")
        self.assertRegex(ref, r"\| `--out FILE` \| [^|]* \| run \|")
        # info took --out and --force and ignored them: they are refused now, as documented
        for opt in (["--out", "x.json"], ["--force"]):
            p = sbtest.run(["info"] + opt)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stderr, "stagebench: error: option %s does not apply to "
                             "'info'\n" % opt[0])
        self.assertIn("null", ro.help_text([sbtest.BINARY]))

    def test_options_table_names_every_option(self):
        ro = readme_options_module()
        table = [l for l in section(readme(), "Options").splitlines() if l.startswith("| `")]
        documented = set()
        for row in table:
            documented.update(re.findall(r"`(--[a-z][a-z0-9-]*)", row.split(" | ")[0]))
        listed = {n for _s, inv, _m in ro.options(ro.help_text([sbtest.BINARY]))
                  for n in ro.names(inv)}
        self.assertEqual(sorted(listed - documented), [], "options of --help missing from "
                         "README's Options table")
        self.assertEqual(sorted(documented - listed), [], "options in README's Options "
                         "table that --help does not list")


class Sample(sbtest.TempDirCase):
    def test_sample_output_has_the_shape_printed_today(self):
        """Reading a result's sample: the header lines, column heads, sum rows, legend and
        status line are what a run prints now (the figures are the sample's own)."""
        sample = section(readme(), "Reading a result").split("```")[3].strip("\n").splitlines()
        p = sbtest.run(["run", "1a", "4", "--scale", "tiny", "--dir", self.stage(),
                        "--start-in", "0.2"])
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout.splitlines()
        self.assertRegex(sample[0], r"^stagebench \S+  node \S+  \d+ threads on CPUs ")
        for prefix in ("dir: ", "clock: ", "start: "):
            self.assertTrue(any(l.startswith(prefix) for l in out), prefix)
            self.assertTrue(any(l.startswith(prefix) for l in sample[:4]), prefix)
        head = [l for l in out if l.startswith("test part rep status")]
        self.assertEqual(len(head), 1, p.stdout)
        self.assertIn(head[0], sample)
        for legend in [l for l in out if l.startswith(("rate: ", "ops/s: ", "spread: "))]:
            self.assertIn(legend, sample)
        sums = [l for l in sample if re.match(r"^\S+\s+sum\s+1 ok ", l)]
        self.assertEqual(len(sums), 5, "a sum row per test of 'all'")
        self.assertTrue(any(re.match(r"^1a\s+sum\s+1 ok\s+\S+ \S+\s+result = sum of the "
                                     r"parts' node times", l) for l in out), p.stdout)
        self.assertEqual(sample[-1], "status: ok")
        self.assertEqual(out[-1], "status: ok")


class Development(unittest.TestCase):
    def test_tree_names_every_source_file_and_directory(self):
        block = section(readme(), "Development").split("```")[1]
        src = sbtest.SOURCE
        want = ["%s.c" % os.path.splitext(f)[0] for f in os.listdir(os.path.join(src, "driver"))
                if f.endswith(".c")]
        for top in ("tests", "scripts"):
            want += [d + "/" for d in os.listdir(os.path.join(src, top))
                     if os.path.isdir(os.path.join(src, top, d)) and d != "__pycache__"]
        missing = [w for w in sorted(set(want)) if not re.search(r"(^|[\s(])%s" % re.escape(w),
                                                                  block)]
        self.assertEqual(missing, [], "README's Development tree does not name these")


MARK = "<!-- readme-test: run at tiny scale by integration.test_readme -->"
PYTHON_COMMANDS = ("stagebench-cluster", "stagebench-collect", "stagebench-cron",
                   "stagebench-sim")


def marked_blocks(text):
    """The fenced sh blocks that follow a MARK line: [(line number, text)]."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() != MARK:
            continue
        assert lines[i + 1] == "```sh", "line %d: the mark must precede a ```sh block" % (i + 2)
        end = lines.index("```", i + 2)
        out.append((i + 3, "\n".join(lines[i + 2:end]) + "\n"))
    return out


def adapt(block, base):
    """A README block as this test runs it: the /stage and /tmp paths in base, every scale
    tiny (STAGEBENCH_SCALE covers the commands that name none)."""
    paths = {"/stage/$USER": "stage", "/tmp/stage": "simstage", "/tmp/sb": "results"}
    block = re.sub(r"/stage/\$USER|/tmp/stage\b|/tmp/sb\b",
                   lambda m: os.path.join(base, paths[m.group(0)]), block)
    return re.sub(r"--scale (spec|small)\b", "--scale tiny", block)


class Commands(sbtest.TempDirCase):
    """The README's commands, as written, against the build: `stagebench` and the cluster
    commands are found on PATH as after `cmake --install` (links to the build and scripts/)."""

    def installed_path(self):
        bindir = self.path("bin")
        os.mkdir(bindir)
        os.symlink(sbtest.BINARY, os.path.join(bindir, "stagebench"))
        for c in PYTHON_COMMANDS:
            os.symlink(os.path.join(sbtest.SOURCE, "scripts", c), os.path.join(bindir, c))
        return bindir

    def test_marked_blocks_run_as_written(self):
        blocks = marked_blocks(readme())
        self.assertGreaterEqual(len(blocks), 3, "README.md has lost its tested blocks")
        env = dict(os.environ)
        for k in ("STAGEBENCH_DIR", "STAGEBENCH_NODE", "STAGEBENCH_CATALOGUE", "PYTHONPATH"):
            env.pop(k, None)
        env["PATH"] = self.installed_path() + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        env["STAGEBENCH_SCALE"] = "tiny"
        for n, (line, block) in enumerate(blocks):
            base = self.path("b%d" % n)
            os.makedirs(os.path.join(base, "stage"))
            script = adapt(block, base)
            with self.subTest(line=line):
                # the README's own shell text, run as a reader would paste it
                p = subprocess.run(["bash", "-e", "-u", "-o", "pipefail", "-c", script],
                                   cwd=base, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   universal_newlines=True, timeout=280)
                self.assertEqual(p.returncode, 0, "README.md line %d:\n%s\nstdout:\n%s\n"
                                 "stderr:\n%s" % (line, script, p.stdout[-3000:],
                                                   p.stderr[-3000:]))
                self.assertNotIn("Traceback", p.stderr)
            subprocess.run([sbtest.BINARY, "clean", "all", "--scale", "tiny", "--dir",
                            os.path.join(base, "stage"), "--quiet"], env=env,
                           stdout=subprocess.DEVNULL)

    def test_adapt_changes_only_paths_and_scale(self):
        got = adapt("stagebench run 1a --dir /stage/$USER --scale spec\n"
                    "stagebench-sim --dir /tmp/stage --results /tmp/sb --scale small 1a\n", "/B")
        self.assertEqual(got, "stagebench run 1a --dir /B/stage --scale tiny\n"
                         "stagebench-sim --dir /B/simstage --results /B/results --scale tiny "
                         "1a\n")


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
