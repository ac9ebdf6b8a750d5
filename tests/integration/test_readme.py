# SPDX-License-Identifier: MIT
"""README.md and the man pages (scripts/man/) against the commands: each section-1 page's
OPTIONS are what the command's --help prints, every command has its page, the pages name no
option that no command takes and render without a warning, and the commands marked for
testing in README and in the pages' EXAMPLES run as written (at tiny scale, in temporary
directories, several blocks at once)."""
import concurrent.futures
import glob
import importlib.machinery
import os
import re
import shutil
import subprocess
import sys
import time
import types
import unittest

import sbtest

MARK = "<!-- readme-test: run at tiny scale by integration.test_readme -->"
PYTHON_COMMANDS = ("stagebench-cluster", "stagebench-collect", "stagebench-cron",
                   "stagebench-history", "stagebench-sim")
# Options of other programs that the pages name (ssh, Slurm, fio, systemd, cmake, ...).
OTHER_OPTIONS = {
    "--exclusive", "--signal", "--nodes", "--ntasks", "--ntasks-per-node", "--cpu-bind",
    "--kill-on-bad-exit", "--label", "--job-name", "--cpus-per-task", "--wait", "--rcopy",
    "--iomem_align", "--collector", "--failed", "--now", "--target", "--install", "--build",
    "--prefix", "--format", "--runs", "--catalogue", "--stagebench", "--launcher", "--parts",
    "--reps", "--rounds", "--fanouts", "--warnings", "--topology", "--dry-run", "--help",
    "--version", "--output-on-failure", "--system", "--create-home", "--always", "--dirty",
}
# Blocks run at once: most of a block's time is waiting (start instants, leads).
WORKERS = 3


def readme():
    with open(os.path.join(sbtest.SOURCE, "README.md")) as f:
        return f.read()


def man_dir():
    return os.path.join(sbtest.SOURCE, "scripts", "man")


def page_sources():
    """{page name (stagebench-run.1): its Markdown source}."""
    out = {}
    for f in sorted(os.listdir(man_dir())):
        if re.match(r"^stagebench[a-z-]*\.[157]\.md$", f):
            with open(os.path.join(man_dir(), f)) as fh:
                out[f[:-3]] = fh.read()
    return out


def generator():
    """scripts/man-page as a module."""
    path = os.path.join(sbtest.SOURCE, "scripts", "man-page")
    loader = importlib.machinery.SourceFileLoader("man_page", path)
    mod = types.ModuleType(loader.name)
    mod.__file__ = path
    loader.exec_module(mod)
    return mod


def section(text, title, level="#"):
    """The text of the 'LEVEL title' section, up to the next heading of that level."""
    m = re.search(r"^%s %s\n(.*?)(?=^%s |\Z)" % (level, re.escape(title), level), text,
                  re.S | re.M)
    assert m, "no '%s %s' section" % (level, title)
    return m.group(1)


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
    """A block as this test runs it: the /stage and /tmp paths in base, every scale tiny
    (STAGEBENCH_SCALE covers the commands that name none)."""
    paths = {"/stage/$USER": "stage", "/tmp/stage": "simstage", "/tmp/sb": "results"}
    block = re.sub(r"/stage/\$USER|/tmp/stage\b|/tmp/sb\b",
                   lambda m: os.path.join(base, paths[m.group(0)]), block)
    return re.sub(r"--scale (spec|small)\b", "--scale tiny", block)


def help_names(gen, argv):
    """The option names of a --help: those of its option lines and of its usage line."""
    text = gen.help_text(argv)
    usage = set(re.findall(r"\[(--?[A-Za-z][A-Za-z0-9-]*)", text.split("\n\n")[0]))
    return {n for _s, inv, _m in gen.options(text) for n in gen.names(inv)}, usage, text


class Pages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.gen = generator()
        cls.pages = page_sources()
        cls.commands = cls.gen.binary_commands(sbtest.BINARY)
        # every command's --help asked once, at once (the generator keeps them)
        argvs = [[sbtest.BINARY, c] for c in cls.commands] + [
            cls.gen.command_argv(sbtest.BINARY, c) for c in PYTHON_COMMANDS]
        with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
            list(pool.map(cls.gen.help_text, argvs))

    def argv(self, page):
        return self.gen.command_argv(sbtest.BINARY, page.rsplit(".", 1)[0])

    def test_every_command_has_its_page_with_every_section(self):
        want = ["stagebench.1"] + ["stagebench-%s.1" % c for c in self.commands]
        want += ["%s.1" % c for c in PYTHON_COMMANDS]
        self.assertEqual(sorted(set(want) - set(self.pages)), [], "commands without a page")
        for page, text in self.pages.items():
            with self.subTest(page=page):
                name, sect = page.rsplit(".", 1)
                self.assertTrue(text.startswith('%% %s %s "" "stagebench @VERSION@" '
                                                '"stagebench manual"\n' % (name.upper(), sect)))
                heads = re.findall(r"^# (.+)$", text, re.M)
                self.assertEqual(heads[0], "NAME")
                self.assertRegex(section(text, "NAME"), r"^\n%s - \S" % re.escape(name))
                if sect == "1":
                    want = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS",
                            "EXAMPLES", "FILES", "SEE ALSO"]
                    self.assertEqual([h for h in heads if h in want], want, heads)
                    self.assertEqual(section(text, "OPTIONS").count("@OPTIONS@"), 1)
                    self.assertGreaterEqual(len(marked_blocks(section(text, "EXAMPLES"))), 1,
                                            "no tested example")
                else:
                    self.assertNotIn("@OPTIONS@", text)
                self.assertEqual(heads[-1], "SEE ALSO")
                for other in re.findall(r"\*\*(stagebench[a-z-]*)\*\*\((\d)\)", text):
                    self.assertIn("%s.%s" % other, self.pages, "SEE ALSO names no page")
        # stagebench(1)'s COMMANDS name every command of --help, each with its page
        commands = section(self.pages["stagebench.1"], "COMMANDS")
        for c in self.commands:
            self.assertIn("**stagebench %s**" % c, commands)
            self.assertIn("**stagebench-%s**(1)" % c, commands)
        # README's list of the pages is every page
        listed = set(re.findall(r"\[(stagebench[a-z-]*)\((\d)\)\]\(scripts/man/\1\.\2\.md\)",
                                section(readme(), "The reference: man pages", "##")))
        self.assertEqual(sorted("%s.%s" % p for p in listed), sorted(self.pages))

    def test_options_are_what_help_prints(self):
        """The OPTIONS filled in for each section-1 page hold every option of the command's
        --help (its usage line too), each with its meaning, and the build's copy is that."""
        built = os.path.join(os.path.dirname(sbtest.BINARY), "man")
        for page in [p for p in self.pages if p.endswith(".1")]:
            name = page[:-2]
            with self.subTest(page=page):
                parsed, usage, text = help_names(self.gen, self.argv(page))
                self.assertTrue(parsed, text)
                self.assertEqual(sorted(usage - parsed), [], "options of the usage line "
                                 "that the parse of --help missed")
                md = self.gen.options_markdown(sbtest.BINARY, name)
                terms = [l for l in md.splitlines() if l.startswith("**-")]
                got = {n for t in terms for n in re.findall(r"\*\*(--?[A-Za-z][\w-]*)", t)}
                self.assertEqual(sorted(parsed ^ got), [], "OPTIONS differ from --help")
                self.assertNotRegex(md, r"\n:   (\(|\n)", "an option without a meaning")
                if os.path.exists(os.path.join(built, page + ".md")):
                    with open(os.path.join(built, page + ".md")) as f:
                        self.assertIn(md.rstrip("\n"), f.read(), "build/man is stale")
        top = self.gen.options_markdown(sbtest.BINARY, "stagebench")
        self.assertIn("**--out** *FILE*\n:   write the JSON summary to FILE (atomically) "
                      "(taken by: run)", top)
        self.assertIn("**--results** *DIR*", self.gen.options_markdown(sbtest.BINARY,
                                                                     "stagebench-cron"))
        # info took --out and --force and ignored them: they are refused, as documented
        for opt in (["--out", "x.json"], ["--force"]):
            p = sbtest.run(["info"] + opt)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stderr, "stagebench: error: option %s does not apply to "
                             "'info'\n" % opt[0])

    def test_written_text_names_only_real_options(self):
        """An option the written part of a page (or README) names is one that a command
        takes, or one of another program's: a renamed option cannot linger in the prose."""
        known = set(OTHER_OPTIONS)
        # the benchmarks' options too (tests/perf: the scripts with a command line)
        perf = [[sys.executable, f] for f in sorted(glob.glob(os.path.join(
            sbtest.SOURCE, "tests", "perf", "*.py"))) if "argparse" in open(f).read()]
        self.assertGreater(len(perf), 3)
        for argv in ([[sbtest.BINARY]] + [[sbtest.BINARY, c] for c in self.commands] +
                     [self.argv(c + ".1") for c in PYTHON_COMMANDS] + perf):
            known |= help_names(self.gen, argv)[0]
        texts = dict(self.pages, README=readme())
        for page, text in texts.items():
            with self.subTest(page=page):
                named = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9_-]*[a-z0-9])", text))
                self.assertEqual(sorted(named - known), [], "options no command takes")

    def render(self, page):
        """(roff, man's exit status, its stdout, its stderr) of a page made as the build
        makes it, read by man -l at 80 columns."""
        md = self.gen.markdown(sbtest.BINARY, os.path.join(man_dir(), page + ".md"),
                               fields_module="stagebench.reportdoc")
        roff = self.gen.roff(self.md2man, md)
        r = subprocess.run(["man", "--warnings", "-l", "-"], input=roff,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                           env=dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8"),
                           universal_newlines=True)
        return roff, r.returncode, r.stdout, r.stderr

    def test_pages_render_without_warnings(self):
        self.md2man = shutil.which("go-md2man")
        if not self.md2man:
            self.skipTest("go-md2man is not installed (scripts/install-deps installs it)")
        with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
            rendered = dict(zip(self.pages, pool.map(self.render, self.pages)))
        for page, (roff, rc, out, err) in sorted(rendered.items()):
            with self.subTest(page=page):
                self.assertEqual((rc, err), (0, ""))
                self.assertRegex(roff, r'\n\.TH %s %s ""' % (re.escape(page.rsplit(".", 1)[0]
                                                                         .upper()), page[-1]))
                self.assertEqual(re.findall(r"@[A-Z_]+@", roff), [], "a fill-in left")
                self.assertIn("SEE ALSO", out)


class Sample(sbtest.TempDirCase):
    def test_sample_output_has_the_shape_printed_today(self):
        """The samples of a run's output (README's Reading a result, stagebench-run(1)): the
        header lines, column heads, sum rows, legend and status line are what a run prints
        now (the figures are the samples' own)."""
        readme_sample = section(readme(), "Reading a result", "##").split("```")[3]
        run_page = page_sources()["stagebench-run.1"]
        page_sample = next(b for b in run_page.split("```")[1::2]
                           if b.startswith("\nstagebench 0.1.0  node"))
        p = sbtest.run(["run", "1a", "4", "--scale", "tiny", "--dir", self.stage(),
                        "--start-in", "0.2"])
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout.splitlines()
        head = [l for l in out if l.startswith("test part rep status")]
        self.assertEqual(len(head), 1, p.stdout)
        self.assertTrue(any(re.match(r"^1a\s+sum\s+1 ok\s+\S+ \S+\s+result = sum of the "
                                     r"parts' node times", l) for l in out), p.stdout)
        self.assertEqual(out[-1], "status: ok")
        for name, text in (("README", readme_sample), ("stagebench-run.1", page_sample)):
            with self.subTest(sample=name):
                sample = text.strip("\n").splitlines()
                self.assertRegex(sample[0], r"^stagebench \S+  node \S+  \d+ threads on CPUs ")
                for prefix in ("dir: ", "clock: ", "start: "):
                    self.assertTrue(any(l.startswith(prefix) for l in out), prefix)
                    self.assertTrue(any(l.startswith(prefix) for l in sample[:4]), prefix)
                self.assertIn(head[0], sample)
                for legend in [l for l in out if l.startswith(("rate: ", "ops/s: ",
                                                               "spread: "))]:
                    self.assertIn(legend, sample)
                sums = [l for l in sample if re.match(r"^\S+\s+sum\s+1 ok ", l)]
                self.assertEqual(len(sums), 5, "a sum row per test of 'all'")
                self.assertEqual(sample[-1], "status: ok")


class Contributing(unittest.TestCase):
    def test_tree_names_every_source_file_and_directory(self):
        block = section(readme(), "Contributing", "##").split("```")[1]
        src = sbtest.SOURCE
        want = ["%s.c" % os.path.splitext(f)[0] for f in os.listdir(os.path.join(src, "driver"))
                if f.endswith(".c")]
        for top in ("tests", "scripts"):
            want += [d + "/" for d in os.listdir(os.path.join(src, top))
                     if os.path.isdir(os.path.join(src, top, d)) and d != "__pycache__"]
        missing = [w for w in sorted(set(want)) if not re.search(r"(^|[\s(])%s" % re.escape(w),
                                                                  block)]
        self.assertEqual(missing, [], "README's source tree does not name these")

    def test_readme_stays_a_front_door(self):
        self.assertLessEqual(len(readme().splitlines()), 420)


class Commands(sbtest.TempDirCase):
    """The commands of README's marked blocks and of the pages' marked EXAMPLES, as written,
    against the build: `stagebench` and the cluster commands are found on PATH as after
    `cmake --install` (links to the build and scripts/)."""

    def installed_path(self):
        bindir = self.path("bin")
        os.mkdir(bindir)
        os.symlink(sbtest.BINARY, os.path.join(bindir, "stagebench"))
        for c in PYTHON_COMMANDS:
            os.symlink(os.path.join(sbtest.SOURCE, "scripts", c), os.path.join(bindir, c))
        return bindir

    def run_block(self, env, n, block):
        """One block in a directory of its own, then what it left in its stage removed:
        (script, CompletedProcess, seconds)."""
        base = self.path("b%d" % n)
        os.makedirs(os.path.join(base, "stage"))
        script = adapt(block, base)
        # each block as on a node of its own: the blocks run at once, with the same node name
        env = dict(env, STAGEBENCH_LOCK_DIR=os.path.join(base, "locks"))
        t0 = time.monotonic()
        # the block's own shell text, run as a reader would paste it
        p = subprocess.run(["bash", "-e", "-u", "-o", "pipefail", "-c", script], cwd=base,
                           env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=280)
        took = time.monotonic() - t0
        subprocess.run([sbtest.BINARY, "clean", "all", "--scale", "tiny", "--dir",
                        os.path.join(base, "stage"), "--quiet"], env=env,
                       stdout=subprocess.DEVNULL)
        return script, p, took

    def test_marked_blocks_run_as_written(self):
        blocks = [("README.md", line, b) for line, b in marked_blocks(readme())]
        self.assertGreaterEqual(len(blocks), 3, "README.md has lost its tested blocks")
        for page, text in page_sources().items():
            blocks += [("scripts/man/%s.md" % page, line, b) for line, b in marked_blocks(text)]
        self.assertGreaterEqual(len(blocks), 24, "the pages have lost their tested examples")
        env = dict(os.environ)
        for k in ("STAGEBENCH_DIR", "STAGEBENCH_NODE", "STAGEBENCH_CATALOGUE", "PYTHONPATH"):
            env.pop(k, None)
        env["PATH"] = self.installed_path() + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        env["STAGEBENCH_SCALE"] = "tiny"
        with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
            runs = [pool.submit(self.run_block, env, n, b) for n, (_f, _l, b) in
                    enumerate(blocks)]
            results = [r.result() for r in runs]
        took = sorted((r[2], "%s:%d" % (b[0], b[1])) for b, r in zip(blocks, results))
        sys.stderr.write("%d blocks; the longest: %s\n" % (len(blocks), ", ".join(
            "%s %.1f s" % (w, t) for t, w in took[-4:])))
        for (where, line, _b), (script, p, took) in zip(blocks, results):
            with self.subTest(where=where, line=line):
                self.assertEqual(p.returncode, 0, "%s line %d (%.1f s):\n%s\nstdout:\n%s\n"
                                 "stderr:\n%s" % (where, line, took, script, p.stdout[-3000:],
                                                  p.stderr[-3000:]))
                self.assertNotIn("Traceback", p.stderr)

    def test_adapt_changes_only_paths_and_scale(self):
        got = adapt("stagebench run 1a --dir /stage/$USER --scale spec\n"
                    "stagebench-sim --dir /tmp/stage --results /tmp/sb --scale small 1a\n", "/B")
        self.assertEqual(got, "stagebench run 1a --dir /B/stage --scale tiny\n"
                         "stagebench-sim --dir /B/simstage --results /B/results --scale tiny "
                         "1a\n")


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
