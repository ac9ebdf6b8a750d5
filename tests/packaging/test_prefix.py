# SPDX-License-Identifier: MIT
"""`cmake --install BUILD --prefix DIR` into a prefix that does not exist yet, as a site
installs /opt/stagebench/<version> for environment modules or Spack: the tree is then moved,
and every installed command runs from a clean environment (`env -i PATH=DIR/bin:/usr/bin:/bin`,
no PYTHONPATH, a working directory outside the sources): its --help and --version, and a tiny
run of each (stagebench run, stagebench-sim through the installed launcher,
stagebench-collect of its results, stagebench-cron --sim). Without its Python package a
command says so in one line. The installed README names the man pages, its links to their
sources made plain names. The uninstall target removes what the install put in place and
the directories it created, and nothing that was there before.
Run as `python3 test_prefix.py BINARY SOURCE_DIR`; skipped (77) outside a CMake build tree."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harness  # noqa: E402

BINARY = SOURCE = BUILD = None
SKIP = 77
PYTHON_COMMANDS = ("stagebench-cluster", "stagebench-collect", "stagebench-cron",
                   "stagebench-history", "stagebench-sim")
COMMANDS = ("stagebench",) + PYTHON_COMMANDS


def _files_under(top):
    return sorted(os.path.relpath(os.path.join(d, f), top)
                  for d, _s, fs in os.walk(top) for f in fs)


class Prefix(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="stagebench-prefix-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        harness.keep_install_records(self, BUILD)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def cmake(self, *args):
        p = subprocess.run(["cmake"] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, timeout=240)
        self.assertEqual(p.returncode, 0, p.stdout)
        return p.stdout

    def install(self, prefix):
        self.cmake("--install", BUILD, "--prefix", prefix)

    def clean_run(self, prefix, args, timeout=120):
        """args run from a clean environment with only prefix/bin and the system's on PATH."""
        home = self.path("home")
        os.makedirs(home, exist_ok=True)
        env = {"PATH": "%s:/usr/bin:/bin" % os.path.join(prefix, "bin"), "HOME": home,
               "LANG": "C.UTF-8"}
        p = subprocess.run(["/usr/bin/env", "-i"] + ["%s=%s" % kv for kv in sorted(env.items())]
                           + list(args), cwd=home, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=timeout)
        self.assertNotIn("Traceback", p.stderr, args)
        return p

    def assert_ran(self, p, what):
        self.assertEqual(p.returncode, 0, "%s: %s%s" % (what, p.stdout[-2000:], p.stderr))

    def test_moved_tree_runs_from_a_clean_environment(self):
        self.install(self.path("first", "opt", "stagebench"))
        prefix = self.path("moved", "stagebench-0")
        os.makedirs(os.path.dirname(prefix))
        os.rename(self.path("first", "opt", "stagebench"), prefix)
        with open(os.path.join(BUILD, "catalogue.json")) as f:
            version = json.load(f)["version"]
        for name in COMMANDS:
            p = self.clean_run(prefix, ["which", name])
            self.assertEqual(p.stdout.strip(), os.path.join(prefix, "bin", name))
            p = self.clean_run(prefix, [name, "--version"])
            self.assert_ran(p, name)
            self.assertEqual(p.stdout, "%s %s\n" % (name, version))
            p = self.clean_run(prefix, [name, "--help"])
            self.assert_ran(p, name)
            self.assertIn("usage: %s " % name, p.stdout)
        # the crontab line of stagebench-cron --help names the command where it now is
        p = self.clean_run(prefix, ["stagebench-cron", "--help"])
        self.assertIn("15 2 * * * %s --results " % os.path.join(prefix, "bin", "stagebench-cron"),
                      p.stdout)
        # a tiny run of each
        os.mkdir(self.path("stage"))
        p = self.clean_run(prefix, ["stagebench", "run", "2a", "--scale", "tiny", "--start-in",
                                    "0", "--dir", self.path("stage"), "--out",
                                    self.path("run.json")])
        self.assert_ran(p, "stagebench run")
        with open(self.path("run.json")) as f:
            self.assertEqual(json.load(f)["exit_code"], 0)
        sim = ["--nodes", "2", "--servers", "1", "--dir", self.path("sim"), "--scale", "tiny"]
        p = self.clean_run(prefix, ["stagebench-sim"] + sim + ["--results", self.path("r"),
                                                               "--run-id", "t", "2a"])
        self.assert_ran(p, "stagebench-sim")
        p = self.clean_run(prefix, ["stagebench-collect", "--format", "json",
                                    self.path("r", "t")])
        self.assert_ran(p, "stagebench-collect")
        report = json.loads(p.stdout)
        self.assertEqual((report["status"], report["nodes"]["expected"]), ("ok", 2), report)
        p = self.clean_run(prefix, ["stagebench-cron", "--results", self.path("cron"), "--sim",
                                    "--"] + sim + ["2a"])
        self.assert_ran(p, "stagebench-cron --sim")
        self.assertTrue(any(d.startswith("cron-") for d in os.listdir(self.path("cron"))))

    def test_installed_readme_names_the_man_pages(self):
        """The installed README's links to the man pages' Markdown sources (not installed)
        are the pages' names, each an installed page; every link left finds its file beside
        it, or is a heading of its own."""
        prefix = self.path("prefix")
        self.install(prefix)
        docs = [d for d, _s, fs in os.walk(prefix) if "README.md" in fs]
        self.assertEqual(len(docs), 1, docs)
        with open(os.path.join(docs[0], "README.md")) as f:
            text = f.read()
        with open(os.path.join(SOURCE, "README.md")) as f:
            source = f.read()
        linked = re.findall(r"\[([^]\n]+)\]\(scripts/man/([^)\n]+)\.md\)", source)
        self.assertGreater(len(linked), 10, "README links no man page")
        self.assertNotIn("](scripts/man/", text)
        pages = set(_files_under(os.path.join(prefix, "share", "man")))
        for name, page in linked:
            self.assertEqual(name, "%s(%s)" % tuple(page.rsplit(".", 1)))
            self.assertIn("| %s |" % name, text.replace(", ", " | "))
            self.assertIn("man%s/%s" % (page.rsplit(".", 1)[1], page), pages)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith("#"):
                anchor = target[1:]
                self.assertTrue(any(re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
                                    == anchor for h in re.findall(r"(?m)^#+ (.*)$", text)),
                                target)
            elif "://" not in target:
                self.assertTrue(os.path.exists(os.path.join(docs[0], target)), target)
        # the rest as it is
        self.assertEqual(re.sub(r"\[([^]\n]+)\]\(scripts/man/[^)\n]+\.md\)", r"\1", source),
                         text)

    def test_missing_package_is_one_line(self):
        prefix = self.path("prefix")
        self.install(prefix)
        package = [d for d, _s, fs in os.walk(prefix) if "catalogue.json" in fs]
        self.assertEqual(len(package), 1)
        shutil.rmtree(package[0])
        for name in PYTHON_COMMANDS:
            p = self.clean_run(prefix, [name, "--version"])
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stdout, "")
            lines = p.stderr.splitlines()
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertRegex(lines[0], r"^%s: error: its Python package is missing: %s is not "
                                       % (name, package[0]))

    def test_uninstall_removes_the_directories_it_created(self):
        # a prefix that exists, with a bin/ of other programs: kept, with them
        prefix = self.path("prefix")
        os.makedirs(os.path.join(prefix, "bin"))
        os.makedirs(os.path.join(prefix, "share", "man"))
        with open(os.path.join(prefix, "bin", "other"), "w") as f:
            f.write("another program\n")
        self.install(prefix)
        self.assertIn("bin/stagebench", _files_under(prefix))
        # a command run leaves bytecode beside the package: removed too
        p = self.clean_run(prefix, ["stagebench-collect", "--version"])
        self.assert_ran(p, "stagebench-collect")
        self.cmake("--build", BUILD, "--target", "uninstall")
        self.assertEqual(_files_under(prefix), ["bin/other"])
        left = sorted(os.path.relpath(os.path.join(d, s), prefix)
                      for d, ss, _f in os.walk(prefix) for s in ss)
        self.assertEqual(left, ["bin", "share", "share/man"])
        # a prefix the install made whole: nothing of it is left
        fresh = self.path("a", "b", "fresh")
        self.install(fresh)
        self.cmake("--build", BUILD, "--target", "uninstall")
        self.assertFalse(os.path.exists(self.path("a")))


if __name__ == "__main__":
    BINARY, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    BUILD = os.path.dirname(BINARY)
    if not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")) or not shutil.which("cmake"):
        print("SKIPPED: the binary is not in a CMake build tree")
        sys.exit(SKIP)
    unittest.main(verbosity=2)
