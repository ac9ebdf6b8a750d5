# SPDX-License-Identifier: MIT
"""No space named as such: when an armed run's state directory, its log, state file or lease,
the node's lock or the summary cannot be created or written for want of space or inodes
(ENOSPC), the foreground's error line says "No space left on device" and, where a state or a
summary can still be written, its reason is no_space, never a generic or misleading one. Real
small tmpfs mounts (as root), filled with files or data; the shim for the lease alone."""
import errno
import json
import os
import signal
import unittest

import faulttest as ft

FULL = "No space left on device"


def state_of(state_dir):
    out = {}
    with open(os.path.join(state_dir, "state")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition(" ")
            out[k] = v
    return out


def fill_inodes(d):
    """Empty files in d until the filesystem has no inode left."""
    for k in range(100000):
        try:
            os.close(os.open(os.path.join(d, "fill.%d" % k), os.O_CREAT | os.O_EXCL, 0o600))
        except OSError as e:
            if e.errno == errno.ENOSPC:
                return
            raise
    raise AssertionError("%s never filled" % d)


def fill_blocks(d):
    """One file in d that takes every block left."""
    with open(os.path.join(d, "fill.data"), "wb", buffering=0) as f:
        chunk = b"\0" * 4096
        try:
            while True:
                f.write(chunk)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise


class FullState(ft.FaultCase):
    def setUp(self):
        super().setUp()
        ft.require_root(self)
        self.env = {"STAGEBENCH_LOCK_DIR": self.path("locks")}

    def arm(self, state, extra=(), env=None):
        p = ft.run(["run", "1a", "--scale", "tiny", "--dir", self.stage(), "--start-in", "30",
                    "--node", "n1", "--detach", state] + list(extra),
                   env=dict(self.env, **(env or {})))
        self.addCleanup(self.kill_armed, state)
        return p

    def kill_armed(self, state):
        try:
            os.kill(int(state_of(state)["pid"]), signal.SIGKILL)
        except (OSError, ValueError, KeyError):
            pass

    def refused(self, p, *texts):
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assert_one_error_line(p.stderr, FULL, *texts)

    def test_the_state_directory_cannot_be_created(self):
        with ft.tmpfs(self.path("full"), "size=1m,nr_inodes=16") as d:
            fill_inodes(d)
            p = self.arm(os.path.join(d, "st"))
            self.refused(p, "cannot create the state directory '%s/st'" % d)
        self.assertEqual(os.listdir(self.stage()), [])

    def test_the_log_or_the_default_summary_cannot_be_created(self):
        with ft.tmpfs(self.path("full"), "size=1m,nr_inodes=16") as d:
            state = os.path.join(d, "st")
            os.mkdir(state, 0o700)
            fill_inodes(d)
            # the summary's default place, checked before anything runs
            p = self.arm(state)
            self.refused(p, "--out '%s/summary.json': cannot create a file" % state)
            # the summary elsewhere: the log, once detached
            out = self.path("s.json")
            p = self.arm(state, ["--out", out])
            self.refused(p, "--detach: cannot open '%s/log'" % state)
            self.assertEqual(os.listdir(state), [])

    def test_the_state_file_cannot_be_written(self):
        with ft.tmpfs(self.path("full"), "size=64k") as d:
            state = os.path.join(d, "st")
            os.mkdir(state, 0o700)
            fill_blocks(d)
            out = self.path("s.json")
            p = self.arm(state, ["--out", out])
            self.refused(p, "cannot write the state file in '%s'" % state)
            self.assertFalse(os.path.exists(os.path.join(state, "state")))
            self.assertEqual([n for n in os.listdir(state) if ".tmp." in n], [])
        # the summary, which had room, says it with its reason
        s = self.summary(out)
        self.assertEqual((s["status"], s["exit_code"], s["error_reasons"]),
                         ("failed", 3, ["no_space"]))
        self.assertIn("cannot write the state file in '%s': %s" % (state, FULL), s["errors"][0])

    def test_the_lock_cannot_be_created_or_written(self):
        state, out = self.path("st"), self.path("s.json")
        with ft.tmpfs(self.path("full"), "size=1m,nr_inodes=16") as d:
            fill_inodes(d)
            env = {"STAGEBENCH_LOCK_DIR": os.path.join(d, "locks")}
            p = self.arm(state, ["--out", out], env=env)
            self.refused(p, "cannot create the lock directory '%s/locks'" % d)
        st = state_of(state)
        self.assertEqual((st["status"], st["exit_code"], st["reason"]), ("failed", "3",
                                                                        "no_space"))
        self.assertIn(FULL, st["error"])
        self.assertEqual(self.summary(out)["error_reasons"], ["no_space"])
        with ft.tmpfs(self.path("full2"), "size=64k") as d:
            os.mkdir(os.path.join(d, "locks"), 0o755)
            fill_blocks(d)
            p = ft.run(["run", "1a", "--scale", "tiny", "--dir", self.stage(), "--start-in",
                        "0", "--node", "n1"], env={"STAGEBENCH_LOCK_DIR":
                                                   os.path.join(d, "locks")})
            self.refused(p, "cannot write the lock file '%s/locks/n1.lock'" % d)

    def test_a_summary_that_cannot_be_written_is_the_state_s_error(self):
        state = self.path("st")
        with ft.tmpfs(self.path("full"), "size=64k") as d:
            out = os.path.join(d, "n1.json")
            fill_blocks(d)
            p = ft.run(["run", "1a", "--scale", "tiny", "--dir", self.stage(), "--start-in",
                        "0.5", "--node", "n1", "--detach", state, "--out", out], env=self.env)
            self.addCleanup(self.kill_armed, state)
            self.assertEqual(p.returncode, 0, p.stderr)
            s = ft.wait_for(lambda: (lambda x: x if x["status"] in ("done", "failed") else None)(
                json.loads(ft.run(["status", state, "--format", "json"]).stdout)), timeout=60)
            self.assertFalse(os.path.exists(out))
            self.assertEqual([n for n in os.listdir(d) if ".tmp." in n], [])
        self.assertEqual((s["status"], s["exit_code"], s["reason"], s["error"]),
                         ("failed", 1, "no_space",
                          "cannot write the summary to '%s': %s" % (out, FULL)))

    def test_the_lease_cannot_be_written(self):
        state, out = self.path("st"), self.path("s.json")
        p = self.arm(state, ["--out", out, "--lease", "60"],
                     env=ft.shim_env("write:*:ENOSPC", path="lease.tmp"))
        self.refused(p, "cannot write the lease file in '%s'" % state)
        st = state_of(state)
        self.assertEqual((st["status"], st["exit_code"], st["reason"]), ("failed", "3",
                                                                        "no_space"))
        s = self.summary(out)
        self.assertEqual((s["status"], s["error_reasons"]), ("failed", ["no_space"]))
        self.assertEqual([(p["status"], p["reason"], p["error"]) for t in s["tests"]
                          for p in t["parts"]],
                         [("skipped", "no_space", "not started: cannot write the lease file in "
                           "'%s': %s" % (state, FULL))])
        self.assertFalse(os.path.exists(os.path.join(state, "lease")))


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
