# SPDX-License-Identifier: MIT
"""`cmake --install` of the build under test into a temporary prefix: the package lands in
the interpreter's purelib for that prefix with the build's catalogue, the commands in bin/ with
the interpreter's shebang, and they run from there (no source tree, no binary on PATH)."""
import json
import os
import shutil
import subprocess
import sys
import unittest

import clustertest as ct


class Install(ct.TempDirCase):
    def test_installed_commands_run(self):
        build = os.path.dirname(ct.BINARY)
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")) or not shutil.which("cmake"):
            self.skipTest("the binary is not in a CMake build tree")
        prefix = self.path("prefix")
        p = subprocess.run(["cmake", "--install", build, "--prefix", prefix],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout)
        found = [d for d, _s, fs in os.walk(prefix) if "catalogue.json" in fs]
        self.assertEqual(len(found), 1, found)
        package = found[0]
        self.assertEqual(os.path.basename(package), "stagebench")
        self.assertTrue(os.path.exists(os.path.join(package, "engines.py")))
        with open(os.path.join(package, "catalogue.json")) as f:
            version = json.load(f)["version"]
        env = ct.env()
        env.pop("STAGEBENCH_CATALOGUE", None)
        env["PYTHONPATH"] = os.path.dirname(package)
        env["PATH"] = "/usr/bin:/bin"
        for name in ("stagebench-cluster", "stagebench-collect", "stagebench-sim",
                     "stagebench-cron"):
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


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
