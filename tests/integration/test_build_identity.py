# SPDX-License-Identifier: MIT
"""The binary's identity from its content (issue 20): a copy of this source tree, committed to a
fresh git repository, built, then rebuilt after one source file is modified: the summary's
build records the tree's git describe, whether it was modified (dirty), the SHA-256 of the
sources that went into it (the same for the same sources wherever they are built, the build
under test's among them) and the SHA-256 of the executable that ran. A copy of a binary with one
byte appended after the build runs the same and keeps its build id, but not its digest."""
import hashlib
import os
import shutil
import subprocess
import unittest

import sbtest

GIT = shutil.which("git")
CMAKE = shutil.which("cmake")


def tree_files(src):
    """The files of the source tree: git's (tracked and not ignored) in a checkout, else every
    file but build directories."""
    if GIT and os.path.exists(os.path.join(src, ".git")):
        out = subprocess.run([GIT, "-C", src, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], stdout=subprocess.PIPE, check=True).stdout
        return sorted({f for f in out.decode().split("\0") if f})
    found = []
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if not d.startswith("build") and d != ".git"]
        found += [os.path.relpath(os.path.join(root, f), src) for f in files]
    return sorted(found)


class BuildIdentity(sbtest.TempDirCase):
    def git(self, *args):
        subprocess.run([GIT, "-C", self.path("src"), "-c", "user.name=test", "-c",
                        "user.email=test@example.invalid"] + list(args), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def build(self):
        """Configure (once) and build the copy's binary; its path."""
        b = self.path("src", "build")
        if not os.path.exists(b):
            subprocess.run([CMAKE, "-S", self.path("src"), "-B", b, "-DCMAKE_BUILD_TYPE=Debug",
                            "-DBUILD_TESTING=OFF", "-DSTAGEBENCH_MAN=OFF"], check=True,
                           stdout=subprocess.DEVNULL, timeout=240)
        p = subprocess.run([CMAKE, "--build", b, "--target", "stagebench", "-j2"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:])
        return os.path.join(b, "stagebench")

    def build_of(self, binary):
        """The "build" object of a summary the binary writes (a run of the null test)."""
        saved = sbtest.BINARY
        sbtest.BINARY = binary
        try:
            s, _p = self.run_json(["run", "null", "--scale", "tiny", "--dir", self.stage(),
                                   "--start-in", "0", "--no-progress"])
        finally:
            sbtest.BINARY = saved
        return s["build"]

    def test_rebuild_from_a_modified_source(self):
        self.assertTrue(GIT and CMAKE, "git and cmake are needed (they build the project)")
        src = self.path("src")
        for f in tree_files(sbtest.SOURCE):
            if os.path.isfile(os.path.join(sbtest.SOURCE, f)):
                os.makedirs(os.path.dirname(os.path.join(src, f)), exist_ok=True)
                shutil.copy2(os.path.join(sbtest.SOURCE, f), os.path.join(src, f))
        self.git("init", "-q")
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "the tree under test")
        clean = self.build_of(self.build())
        self.assertIs(clean["dirty"], False)
        self.assertRegex(clean["describe"], r"^[0-9a-f]{12}$")
        # the same sources give the same hash wherever they are built
        self.assertEqual(clean["source_sha256"], self.build_of(sbtest.BINARY)["source_sha256"])
        with open(self.path("src", "build", "stagebench"), "rb") as f:
            self.assertEqual(clean["exe_sha256"], hashlib.sha256(f.read()).hexdigest())

        with open(self.path("src", "driver", "main.c"), "a") as f:
            f.write("/* modified after the commit */\n")
        modified = self.build_of(self.build())
        self.assertIs(modified["dirty"], True)
        self.assertEqual(modified["describe"], clean["describe"] + "-dirty")
        self.assertNotEqual(modified["source_sha256"], clean["source_sha256"])
        self.assertNotEqual(modified["exe_sha256"], clean["exe_sha256"])
        self.assertNotEqual(modified["id"], clean["id"])

        # one byte appended to a copy after the build: same build id, another binary
        patched = self.path("patched")
        shutil.copy2(self.path("src", "build", "stagebench"), patched)
        with open(patched, "ab") as f:
            f.write(b"\0")
        other = self.build_of(patched)
        self.assertEqual((other["id"], other["source_sha256"], other["dirty"]),
                         (modified["id"], modified["source_sha256"], True))
        with open(patched, "rb") as f:
            self.assertEqual(other["exe_sha256"], hashlib.sha256(f.read()).hexdigest())
        self.assertNotEqual(other["exe_sha256"], modified["exe_sha256"])


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
