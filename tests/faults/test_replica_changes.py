# SPDX-License-Identifier: MIT
"""A replica that vanishes, shrinks or is replaced while 1a and 2 read it (1b's truncation
under the mapping is in tests/integration/test_parts.py): a named error, never a crash,
and the other threads stop."""
import os
import re
import time
import unittest

import faulttest as ft
from faulttest import MiB, run


class ReplicaChanges(ft.FaultCase):
    def start_long(self, args):
        """Start a long part on a prepared replica; returns (proc, summary path)."""
        out = self.path("s.json")
        proc = ft.popen(args + ["--scale", "tiny", "--dir", self.stage(), "--start-in", "0",
                                "--out", out])
        self.addCleanup(ft.reap, proc)
        return proc, out

    def wait_running(self, proc, out):
        """Until the part runs: the worker threads exist and the start has passed."""
        n = len(ft.sbtest.info()["threads"])
        ft.wait_for(lambda: proc.poll() is not None or
                    len(os.listdir("/proc/%d/task" % proc.pid)) >= n + 1)
        time.sleep(0.5)
        self.assertIsNone(proc.poll(), "the part ended before the fault")

    def finish(self, proc, out, code=1):
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, code, err)
        self.assertNotIn("Sanitizer", err)
        s = self.summary(out)
        part = s["tests"][0]["parts"][0]
        if code == 1:
            self.assertEqual(part["status"], "failed")
            self.assertEqual(s["status"], "failed")
        # stopped promptly, not after the passes or chunks asked for
        self.assertLess(part["node_time_s"], 30)
        return s, part, err

    def prepare(self, test):
        p = run(["prepare", test, "--scale", "tiny", "--dir", self.stage()])
        self.assertEqual(p.returncode, 0, p.stderr)

    def start_2_in_wait(self, out, start_in):
        """Start test 2 with --verify on the prepared replica; returns the process once every
        thread has the replica open: set-up is over, the wait for the start began."""
        n = len(ft.sbtest.info()["threads"])
        proc = ft.popen(["run", "2", "--scale", "tiny", "--dir", self.stage(), "--start-in",
                         start_in, "--verify", "--out", out])
        self.addCleanup(ft.reap, proc)
        ft.wait_for(lambda: ft.sbtest.opened_by_all(proc, "stagebench.2.8MiB", n))
        return proc

    def test_1a_replica_deleted(self):
        self.prepare("1a")
        replica = os.path.join(os.path.realpath(self.stage()), "stagebench.1a.4MiB")
        proc, out = self.start_long(["run", "1a", "--passes", "100000"])
        self.wait_running(proc, out)
        os.unlink(replica)
        s, part, err = self.finish(proc, out)
        self.assertRegex(part["error"],
                         r"^thread \d+: open '%s': No such file or directory$" % re.escape(replica))
        self.assertIn("No such file or directory", err)

    def truncated_while_read(self, test, name, args, size):
        """Prepare test, run args on it and cut its replica (name) to size while the part
        reads: the offset of the read error that failed the part."""
        self.prepare(test)
        replica = os.path.join(os.path.realpath(self.stage()), name)
        proc, out = self.start_long(args)
        self.wait_running(proc, out)
        os.truncate(replica, size)
        s, part, err = self.finish(proc, out)
        m = re.match(r"^thread \d+: read '%s' at (\d+): Input/output error$" % re.escape(replica),
                     part["error"])
        self.assertTrue(m, part["error"])
        return int(m.group(1))

    def test_1a_replica_truncated(self):
        at = self.truncated_while_read("1a", "stagebench.1a.4MiB",
                                       ["run", "1a", "--passes", "100000"], 1 * MiB + 512)
        # where the file ended for the reader: at its new end, or where a pass stood
        self.assertLess(at, 4 * MiB)

    def test_1a_replica_replaced_by_another_node(self):
        # another node recreates the replica (rename over it, new generation) while this one
        # reads with --verify: the blocks of the other generation are caught and named
        self.prepare("1a")
        replica = os.path.join(os.path.realpath(self.stage()), "stagebench.1a.4MiB")
        proc, out = self.start_long(["run", "1a", "--passes", "100000", "--verify"])
        self.wait_running(proc, out)
        p = run(["prepare", "1a", "--scale", "tiny", "--dir", self.stage(), "--node", "other"])
        self.assertEqual(p.returncode, 0, p.stderr)
        gen = int(re.search(r"generation (\d+)", p.stdout).group(1))
        s, part, err = self.finish(proc, out)
        self.assertRegex(part["error"],
                         r"^thread \d+: verify '%s' at 0: block of another replica generation "
                         r"or offset \(expected generation %d, found %d\)$"
                         % (re.escape(replica), s["tests"][0]["generation"], gen))

    def test_2_replica_truncated(self):
        at = self.truncated_while_read("2", "stagebench.2.8MiB",
                                       ["run", "2a", "--count", "100000000"], 1 * MiB)
        self.assertGreaterEqual(at, 1 * MiB)

    def test_2_replica_deleted_or_replaced(self):
        # Each part of 2 opens the replica once, in set-up: when it is deleted, or another
        # replica is renamed over it, in the wait, the threads still read (and verify) the
        # file they opened, as POSIX says (NFS would answer ESTALE: see test_io_errors), or
        # this node's stale cache of it: the replica's identity, taken before the release
        # and checked again at the part's end, makes the part failed, saying so
        for how in ("deleted", "replaced"):
            with self.subTest(how=how):
                self.prepare("2")
                replica = os.path.join(self.stage(), "stagebench.2.8MiB")
                other = self.path("other")
                os.makedirs(other, exist_ok=True)
                self.assertEqual(run(["prepare", "2", "--scale", "tiny", "--dir", other])
                                 .returncode, 0)
                out = self.path("s-%s.json" % how)
                proc = self.start_2_in_wait(out, "1.5")
                time.sleep(0.3)  # the identity is taken right after set-up, in the wait
                if how == "deleted":
                    os.unlink(replica)
                else:
                    os.rename(os.path.join(other, "stagebench.2.8MiB"), replica)
                _, err = proc.communicate(timeout=60)
                self.assertEqual(proc.returncode, 1, err)
                s = self.summary(out)
                parts = s["tests"][0]["parts"]  # the test ends at its failed part
                self.assertEqual([p["part"] for p in parts], ["2a"])
                a = parts[0]
                self.assertEqual((a["status"], a["verified"], a["replica_changed"]),
                                 ("failed", False, True))
                self.assertRegex(a["error"],
                                 r"^the replica '%s' changed during the part \((%s)\): what "
                                 r"was read is not what the part was given$"
                                 % (re.escape(os.path.realpath(replica)),
                                    "removed" if how == "deleted"
                                    else "replaced by another file, .*another generation.*"))
                self.assertIn("2a: " + a["error"], s["errors"])

    def test_2a_replica_replaced_mid_part_fails_though_verify_passed(self):
        # another node recreates the replica (rename over it, new generation) in the middle of
        # a long 2a: the threads go on reading the file they opened, whose blocks verify, so
        # only the identity checked again at the part's end can tell; the part fails saying so
        self.prepare("2")
        stage = os.path.realpath(self.stage())
        replica = os.path.join(stage, "stagebench.2.8MiB")
        other = self.path("other")
        os.makedirs(other)
        self.assertEqual(run(["prepare", "2", "--scale", "tiny", "--dir", other]).returncode, 0)
        out = self.path("s.json")
        # 1500 chunks a thread, each read 1 ms slower: about 1.5 s of part
        proc = ft.popen(["run", "2a", "--scale", "tiny", "--dir", stage, "--start-in", "0",
                         "--count", "1500", "--verify", "--out", out],
                        env=ft.shim_env("pread:*:delay=1ms", path="stagebench.2."))
        self.addCleanup(ft.reap, proc)
        self.wait_running(proc, out)
        os.rename(os.path.join(other, "stagebench.2.8MiB"), replica)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 1, err)
        s = self.summary(out)
        part = s["tests"][0]["parts"][0]
        self.assertEqual((part["status"], part["replica_changed"], part["verified"]),
                         ("failed", True, False))
        # every thread read and verified all of its chunks: no thread error
        self.assertEqual(part["ops"], 1500 * len(part["per_thread"]))
        self.assertTrue(all(t["error"] is None for t in part["per_thread"]))
        self.assertEqual(part["reason"], "replica_changed")
        self.assertRegex(part["error"], r"^the replica '%s' changed during the part \(replaced "
                         r"by another file, .*another generation.*\): what was read is not "
                         r"what the part was given$" % re.escape(replica))
        self.assertEqual(s["status"], "failed")

    def plant_symlink(self, replica):
        """Put a symlink at the replica's name, to the same replica moved aside: reading
        through it would give the right blocks, so only the refusal to follow shows."""
        aside = self.path("aside-" + os.path.basename(replica))
        os.link(replica, aside)
        link = replica + ".link"
        os.symlink(aside, link)
        os.rename(link, replica)
        self.addCleanup(lambda: os.path.exists(aside) and os.unlink(aside))

    def test_timed_opens_never_follow_a_symlink(self):
        # 1a and 1b open the replica in every pass: a symlink put at its name while they run
        # fails the part at the next open, named, instead of being read through
        for test, size in (("1a", "4MiB"), ("1b", "8MiB")):
            with self.subTest(test=test):
                self.prepare(test)
                replica = os.path.join(os.path.realpath(self.stage()),
                                       "stagebench.%s.%s" % (test, size))
                proc, out = self.start_long(["run", test, "--passes", "100000", "--verify"])
                self.wait_running(proc, out)
                self.plant_symlink(replica)
                s, part, err = self.finish(proc, out)
                self.assertRegex(part["error"], r"^thread \d+: open '%s': Too many levels of "
                                 r"symbolic links$" % re.escape(replica))
                self.assertTrue(os.path.islink(replica))
                os.unlink(replica)
                os.unlink(out)

    def test_2_open_never_follows_a_symlink(self):
        # 2b opens the replica in its set-up: a symlink put there after 2a opened it fails 2b
        self.prepare("2")
        replica = os.path.join(os.path.realpath(self.stage()), "stagebench.2.8MiB")
        out = self.path("s.json")
        proc = self.start_2_in_wait(out, "1")
        self.plant_symlink(replica)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 1, err)
        a, b = self.summary(out)["tests"][0]["parts"]
        self.assertEqual((a["part"], a["status"]), ("2a", "ok"))
        self.assertEqual((b["part"], b["status"]), ("2b", "failed"))
        self.assertRegex(b["error"], r"^thread \d+: open '%s': Too many levels of symbolic "
                         r"links$" % re.escape(replica))

if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
