# SPDX-License-Identifier: MIT
"""--out replaces nothing but a regular file, --force included: a FIFO, a device node, a
symbolic link or a directory is refused with the reason and left as it was. The temporary
names of --out and of check's write probe carry a random part: files that another user
(nobody) planted at the old predictable names never make a run lose its summary."""
import json
import os
import stat
import subprocess
import unittest

import faulttest as ft
from faulttest import run

AS_NOBODY = ["runuser", "-u", "nobody", "--"]
RUN = ["run", "null", "--scale", "tiny", "--count", "1000", "--start-in", "0"]


def state(path):
    st = os.lstat(path)
    link = os.readlink(path) if stat.S_ISLNK(st.st_mode) else None
    return (st.st_mode, st.st_ino, st.st_rdev, st.st_size, st.st_mtime_ns, link)


class OutTargets(ft.FaultCase):
    def as_nobody(self, *cmd, text=None):
        ft.require_root(self)
        p = subprocess.run(AS_NOBODY + list(cmd), input=text, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_not_a_regular_file_is_never_replaced(self):
        stage = self.stage()
        victim = self.path("victim.txt")
        with open(victim, "w") as f:
            f.write("precious\n")
        os.mkfifo(self.path("fifo"))
        os.symlink(victim, self.path("link"))
        os.symlink(self.path("nowhere"), self.path("dangling"))
        os.mkdir(self.path("adir"))
        cases = [("fifo", "is a FIFO: not replacing it"),
                 ("link", "is a symbolic link: not replacing it"),
                 ("dangling", "is a symbolic link: not replacing it"),
                 ("adir", "is a directory")]
        targets = [(self.path(n), t) for n, t in cases]
        if ft.is_root():
            # as root, replacing /dev/null would break the machine
            targets.append(("/dev/null", "is a character device: not replacing it"))
        for target, text in targets:
            for force in ([], ["--force"]):
                with self.subTest(target=target, force=force):
                    before = state(target)
                    p = run(RUN + ["--dir", stage, "--out", target] + force, timeout=30)
                    self.assertEqual(p.returncode, 2, p.stderr)
                    errs = [l for l in ft.lines(p.stderr) if l.startswith("stagebench: error:")]
                    self.assertEqual(len(errs), 1, p.stderr)
                    self.assertIn("--out '%s' %s" % (target, text), errs[0])
                    self.assertEqual(state(target), before)
        with open(victim) as f:
            self.assertEqual(f.read(), "precious\n")
        self.assertEqual(sorted(os.listdir(self.dir)),
                         ["adir", "dangling", "fifo", "link", "stage", "victim.txt"])
        # a regular file is still replaced with --force
        out = self.path("regular.json")
        with open(out, "w") as f:
            f.write("old\n")
        p = run(RUN + ["--dir", stage, "--out", out, "--force"])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            self.assertEqual(json.load(f)["status"], "ok")

    def test_planted_temporary_names_do_not_lose_the_summary(self):
        ft.require_root(self)
        stage = self.stage()
        os.chmod(self.dir, 0o1777)
        os.chmod(stage, 0o1777)
        victim = self.path("victim.txt")
        self.as_nobody("tee", victim, text="nobody's\n")
        out = self.path("node.json")
        proc, go = ft.popen_known_pid(RUN + ["--dir", stage, "--out", out])
        try:
            pid = proc.pid
            # the old names: OUT.tmp.PID and DIR/stagebench.check-write.PID, as a link and a file
            self.as_nobody("ln", "-s", victim, "%s.tmp.%d" % (out, pid))
            go()
            o, e = proc.communicate(timeout=60)
        finally:
            ft.reap(proc)
        self.assertEqual(proc.returncode, 0, e)
        with open(out) as f:
            self.assertEqual(json.load(f)["status"], "ok")
        with open(victim) as f:
            self.assertEqual(f.read(), "nobody's\n")
        self.assertTrue(os.path.islink("%s.tmp.%d" % (out, pid)))

        proc, go = ft.popen_known_pid(["check", "--scale", "tiny", "--dir", stage,
                                       "--format", "json"])
        try:
            planted = os.path.join(stage, "stagebench.check-write.%d" % proc.pid)
            self.as_nobody("tee", planted, text="mine\n")
            go()
            o, e = proc.communicate(timeout=120)
        finally:
            ft.reap(proc)
        findings = {(f["area"], f["check"]): f for f in json.loads(o)["findings"]}
        self.assertEqual(findings[("fs", "writable")]["status"], "ok", o)
        with open(planted) as f:
            self.assertEqual(f.read(), "mine\n")
        self.assertEqual(sorted(os.listdir(stage)), [os.path.basename(planted)])

    def test_a_directory_of_another_user_is_refused(self):
        ft.require_root(self)
        stage = self.stage()
        theirs = self.path("theirs")
        os.mkdir(theirs)
        os.chown(theirs, 65534, 65534)
        out = os.path.join(theirs, "node.json")
        p = run(RUN + ["--dir", stage, "--out", out])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("--out '%s': directory '%s' belongs to another user (uid 65534): not "
                      "writing the summary there" % (out, theirs), p.stderr)
        self.assertEqual(os.listdir(theirs), [])
        # root's own directories, sticky /tmp among them, are fine
        os.chmod(self.dir, 0o1777)
        p = run(RUN + ["--dir", stage, "--out", self.path("mine.json")])
        self.assertEqual(p.returncode, 0, p.stderr)


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
