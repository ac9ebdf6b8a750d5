# SPDX-License-Identifier: MIT
"""One run per node at a time: every `run` (foreground or armed) and `prepare` holds the
node's lock (flock on LOCKDIR/<node>.lock) for its whole life, an armed run's detached process
after its foreground has gone; a second one on the same node name is refused (exit 3, reason
busy, the holder named), other node names are not; a killed holder leaves no stale lock; a
planted lock directory or file is refused."""
import fcntl
import json
import os
import pwd
import re
import signal
import subprocess
import time
import unittest

import faulttest as ft

BUSY = re.compile(r"^stagebench: error: node (\S+) is busy: run (\S+) \(pid (\d+), (\S+) since "
                  r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\) holds (\S+)$")


def state_of(state_dir):
    out = {}
    with open(os.path.join(state_dir, "state")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition(" ")
            out[k] = v
    return out


def is_locked(path):
    """Whether another process holds an flock on path (tried, and released at once)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


class Lock(ft.FaultCase):
    def setUp(self):
        super().setUp()
        self.locks = self.path("locks")
        self.env = {"STAGEBENCH_LOCK_DIR": self.locks}

    def arm(self, state, node="n1", run_id="R1", extra=(), env=None):
        p = ft.run(["run", "1a", "--scale", "tiny", "--dir", self.stage(), "--node", node,
                    "--run-id", run_id, "--start-in", "60", "--detach", state] + list(extra),
                   env=dict(self.env, **(env or {})))
        self.addCleanup(self.kill_armed, state)
        return p

    def kill_armed(self, state):
        try:
            st = state_of(state)
        except OSError:
            return
        ft.run(["stop", state, "--signal", "TERM", "--wait", "20"])
        try:
            os.kill(int(st["pid"]), signal.SIGKILL)
        except (OSError, ValueError):
            pass

    def busy_line(self, stderr):
        errs = [l for l in ft.lines(stderr) if l.startswith("stagebench: error: ")]
        self.assertEqual(len(errs), 1, stderr)
        m = BUSY.match(errs[0])
        self.assertTrue(m, errs[0])
        return m.groups()

    def test_a_second_run_on_the_node_is_refused_naming_the_holder(self):
        stage, first = self.stage(), self.path("st1")
        p = self.arm(first)
        self.assertEqual(p.returncode, 0, p.stderr)
        pid = int(state_of(first)["pid"])
        lock = os.path.join(self.locks, "n1.lock")
        # the detached process holds it after its foreground has gone
        self.assertTrue(is_locked(lock))
        with open(lock) as f:
            said = dict(l.rstrip("\n").partition(" ")[::2] for l in f if " " in l)
        self.assertEqual((said["schema"], said["pid"], said["node"], said["run_id"],
                          said["command"], said["state"]),
                         ("stagebench.lock/1", str(pid), "n1", "R1", "run", "armed"))
        self.assertAlmostEqual(float(said["since"]), time.time(), delta=60)
        before = ft.listing(stage)
        # an armed run: refused in its foreground, the reason in its state and summary
        second = self.path("st2")
        p = self.arm(second, run_id="R2")
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(p.stdout, "")
        node, run_id, holder, how, _since, path = self.busy_line(p.stderr)
        self.assertEqual((node, run_id, int(holder), how, path), ("n1", "R1", pid, "armed", lock))
        st = state_of(second)
        self.assertEqual((st["status"], st["exit_code"], st["reason"]), ("failed", "3", "busy"))
        self.assertIn("node n1 is busy: run R1 (pid %d" % pid, st["error"])
        j = self.summary(st["summary"])
        self.assertEqual((j["status"], j["exit_code"], j["error_reasons"]), ("failed", 3, ["busy"]))
        # a foreground run and a prepare: refused the same way, nothing created in --dir
        out = self.path("fg.json")
        for args in (["run", "1a", "--start-in", "0", "--out", out], ["prepare", "1a"]):
            with self.subTest(args=args):
                p = ft.run(args + ["--scale", "tiny", "--dir", stage, "--node", "n1"],
                           env=self.env)
                self.assertEqual(p.returncode, 3, p.stderr)
                self.assertEqual(self.busy_line(p.stderr)[2], str(pid))
        self.assertEqual(self.summary(out)["error_reasons"], ["busy"])
        self.assertEqual(ft.listing(stage), before)
        # another node name on the same machine is not blocked
        p = ft.run(["run", "1a", "--scale", "tiny", "--dir", stage, "--node", "n2",
                    "--start-in", "0"], env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        # the first run still holds its lock, and gives it up when it ends
        self.assertTrue(is_locked(lock))
        p = ft.run(["stop", first, "--wait", "20"])
        self.assertEqual(p.returncode, 0, p.stderr)
        ft.wait_for(lambda: not is_locked(lock), timeout=20)
        p = ft.run(["prepare", "1a", "--scale", "tiny", "--dir", stage, "--node", "n1"],
                   env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_a_killed_holder_leaves_no_stale_lock(self):
        first = self.path("st1")
        self.assertEqual(self.arm(first).returncode, 0)
        pid = int(state_of(first)["pid"])
        os.kill(pid, signal.SIGKILL)
        ft.wait_for(lambda: not os.path.exists("/proc/%d" % pid) or
                    ft.read_text("/proc/%d/stat" % pid).rpartition(")")[2].split()[:1] == ["Z"],
                    timeout=20)
        lock = os.path.join(self.locks, "n1.lock")
        ft.wait_for(lambda: not is_locked(lock), timeout=20)
        p = self.arm(self.path("st2"), run_id="R2")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(lock) as f:
            self.assertIn("run_id R2\n", f.read())

    def test_a_foreground_run_holds_it_while_it_runs(self):
        stage = self.stage()
        proc = ft.popen(["run", "1a", "--scale", "tiny", "--dir", stage, "--node", "n1",
                         "--start-in", "30", "--run-id", "FG"], env=self.env)
        self.addCleanup(ft.reap, proc)
        lock = os.path.join(self.locks, "n1.lock")
        ft.wait_for(lambda: os.path.exists(lock) and "run_id FG" in ft.read_text(lock))
        p = ft.run(["run", "1a", "--scale", "tiny", "--dir", stage, "--node", "n1",
                    "--start-in", "0"], env=self.env)
        self.assertEqual(p.returncode, 3, p.stderr)
        node, run_id, holder, how, _since, _path = self.busy_line(p.stderr)
        self.assertEqual((run_id, int(holder), how), ("FG", proc.pid, "running"))
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130)
        self.assertFalse(is_locked(lock))

    def test_planted_lock_directories_and_files_are_refused(self):
        stage = self.stage()
        real = self.path("real")
        os.mkdir(real, 0o700)
        os.symlink(real, self.path("link"))
        os.mkdir(self.path("open"))
        os.chmod(self.path("open"), 0o777)
        files = self.path("files")
        os.mkdir(files, 0o700)
        os.symlink(self.path("elsewhere"), os.path.join(files, "n1.lock"))
        os.mkfifo(os.path.join(files, "n2.lock"))
        cases = [(self.path("link"), "n1", "is a symbolic link: refusing it"),
                 (self.path("open"), "n1", "has mode 0777: others may write to it"),
                 (os.path.join(self.path("none"), "deeper"), "n1",
                  "cannot create the lock directory"),
                 (files, "n1", "it is a symbolic link: refusing it"),
                 (files, "n2", "is not a plain file")]
        if ft.is_root():
            nobody = pwd.getpwnam("nobody")
            theirs = self.path("theirs")
            os.mkdir(theirs, 0o755)
            os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
            cases.append((theirs, "n1", "is owned by uid %d, not by this user" % nobody.pw_uid))
            with open(os.path.join(files, "n4.lock"), "w") as f:
                f.write("x")
            os.chown(os.path.join(files, "n4.lock"), nobody.pw_uid, nobody.pw_gid)
            cases.append((files, "n4", "is owned by uid %d with mode" % nobody.pw_uid))
        for d, node, why in cases:
            with self.subTest(dir=d, node=node):
                p = ft.run(["run", "1a", "--scale", "tiny", "--dir", stage, "--node", node,
                            "--start-in", "0"], env={"STAGEBENCH_LOCK_DIR": d})
                self.assertEqual(p.returncode, 3, p.stderr)
                self.assert_one_error_line(p.stderr, why)
        self.assertEqual(os.listdir(stage), [])
        self.assertFalse(os.path.exists(self.path("elsewhere")))
        self.assertEqual(os.listdir(real), [])

    def test_the_directory_is_created_for_its_user(self):
        stage = self.stage()
        p = ft.run(["run", "1a", "--scale", "tiny", "--dir", stage, "--node", "n1",
                    "--start-in", "0"], env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        st = os.stat(self.locks)
        self.assertEqual(st.st_mode & 0o777, 0o755 if ft.is_root() else 0o700)
        self.assertEqual(os.stat(os.path.join(self.locks, "n1.lock")).st_mode & 0o777, 0o644)
        # a dry run touches nothing, the lock neither
        p = ft.run(["run", "1a", "--scale", "tiny", "--dir", stage, "--node", "n9", "--dry-run"],
                   env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.listdir(self.locks), ["n1.lock"])

    def test_the_default_directories(self):
        """Root: /run/stagebench; another user: $XDG_RUNTIME_DIR/stagebench when it is theirs,
        else /tmp/stagebench-<uid> (a root's XDG_RUNTIME_DIR that runuser leaves is not)."""
        ft.require_root(self)
        stage = self.stage()
        node = "lockdefault-%d" % os.getpid()
        env = dict(os.environ)
        env.pop("STAGEBENCH_LOCK_DIR", None)
        lock = "/run/stagebench/%s.lock" % node
        self.addCleanup(lambda: os.path.exists(lock) and os.unlink(lock))
        p = subprocess.run([ft.binary(), "run", "1a", "--scale", "tiny", "--dir", stage,
                            "--node", node, "--start-in", "0"], env=env, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.isfile(lock))
        self.assertEqual(os.stat("/run/stagebench").st_mode & 0o777, 0o755)
        nobody = pwd.getpwnam("nobody")
        mine = "/tmp/stagebench-%d" % nobody.pw_uid
        existed = os.path.isdir(mine)
        theirs = os.path.join(mine, node + ".lock")
        self.addCleanup(lambda: existed or not os.path.isdir(mine) or
                        subprocess.run(["rm", "-rf", mine]))
        self.addCleanup(lambda: os.path.exists(theirs) and os.unlink(theirs))
        os.chmod(stage, 0o777)
        env["XDG_RUNTIME_DIR"] = "/run/user/0" if os.path.isdir("/run/user/0") else self.dir
        p = subprocess.run(["runuser", "-u", "nobody", "--", ft.binary(), "run", "1a",
                            "--scale", "tiny", "--dir", stage, "--node", node, "--start-in",
                            "0"], env=env, capture_output=True, text=True, timeout=120)
        if p.returncode != 0 and "cannot execute" in p.stderr:
            self.skipTest("the binary cannot run as nobody: %s" % p.stderr.strip())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.isfile(theirs))
        self.assertEqual(os.stat(mine).st_uid, nobody.pw_uid)
        if not existed:
            self.assertEqual(os.stat(mine).st_mode & 0o777, 0o700)


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
