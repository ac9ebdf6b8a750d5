# SPDX-License-Identifier: MIT
"""Safety on a directory shared with other nodes and users: files are created with
O_EXCL|O_NOFOLLOW, so an existing path is never truncated or written through a symlink;
`clean` removes only stagebench's own files, one by one; two `prepare` of one replica at
once cannot mix their files: the rename is atomic and the loser says so."""
import fcntl
import os
import re
import socket
import subprocess
import time
import unittest

import faulttest as ft
from faulttest import MiB, run


class SharedDir(ft.FaultCase):
    def victim(self):
        v = self.path("victim")
        with open(v, "w") as f:
            f.write("precious")
        return v

    def run_with_pid(self, args, plant):
        """Run stagebench, after plant(pid) put things in the way of the names it will use."""
        proc, go = ft.popen_known_pid(args)
        self.addCleanup(ft.reap, proc)
        plant(proc.pid)
        go()
        out, err = proc.communicate(timeout=60)
        return proc.returncode, out, err

    def test_test4_names_planted_at_the_pid_are_not_in_the_way(self):
        # The names carry a random token besides the pid: a symlink or a file left at the
        # name a run with this pid would once have used is neither followed nor in the way.
        stage = self.stage()
        victim = self.victim()
        for kind in ("symlink", "file"):
            with self.subTest(kind=kind):
                planted = []

                def plant(pid):
                    name = os.path.join(stage, "stagebench.4a.n1.p%d-r1.t0.000003" % pid)
                    if kind == "symlink":
                        os.symlink(victim, name)
                    else:
                        with open(name, "w") as f:
                            f.write("someone else's")
                    planted.append(name)

                out = self.path("s-%s.json" % kind)
                rc, _, err = self.run_with_pid(
                    ["run", "4a", "--scale", "tiny", "--dir", stage, "--start-in", "0",
                     "--node", "n1", "--threads", "1", "--out", out], plant)
                self.assertEqual(rc, 0, err)
                s = self.summary(out)
                part = s["tests"][0]["parts"][0]
                self.assertEqual(part["status"], "ok")
                self.assertRegex(s["run"]["run_tag"], r"^p\d+-[0-9a-f]{12}$")
                # the files it made are removed, the one in its way is untouched
                self.assertEqual(os.listdir(stage), [os.path.basename(planted[0])])
                with open(victim) as f:
                    self.assertEqual(f.read(), "precious")
                if kind == "symlink":
                    self.assertEqual(os.readlink(planted[0]), victim)
                else:
                    with open(planted[0]) as f:
                        self.assertEqual(f.read(), "someone else's")
                os.unlink(planted[0])

    def test_replica_temp_name_planted_at_the_pid_is_not_in_the_way(self):
        stage = self.stage()
        victim = self.victim()
        host = socket.gethostname().replace("/", "_")
        for kind in ("symlink", "file"):
            with self.subTest(kind=kind):
                planted = []

                def plant(pid):
                    name = os.path.join(stage, "stagebench.1a.4MiB.tmp.%s.%d" % (host, pid))
                    if kind == "symlink":
                        os.symlink(victim, name)
                    else:
                        with open(name, "w"):
                            pass
                    planted.append(name)

                rc, _, err = self.run_with_pid(
                    ["prepare", "1a", "--scale", "tiny", "--dir", stage], plant)
                self.assertEqual(rc, 0, err)
                self.assertEqual(sorted(os.listdir(stage)),
                                 sorted(["stagebench.1a.4MiB", os.path.basename(planted[0])]))
                self.assertEqual(os.path.getsize(os.path.join(stage, "stagebench.1a.4MiB")),
                                 4 << 20)
                with open(victim) as f:
                    self.assertEqual(f.read(), "precious")
                if kind == "symlink":
                    self.assertEqual(os.readlink(planted[0]), victim)
                else:
                    self.assertEqual(os.path.getsize(planted[0]), 0)
                os.unlink(planted[0])
                os.unlink(os.path.join(stage, "stagebench.1a.4MiB"))

    def test_replica_name_taken_by_a_symlink_or_directory(self):
        stage = self.stage()
        elsewhere = self.path("elsewhere")
        os.mkdir(elsewhere)
        self.assertEqual(run(["prepare", "1a", "--scale", "tiny", "--dir", elsewhere])
                         .returncode, 0)
        real = os.path.join(elsewhere, "stagebench.1a.4MiB")
        before = os.stat(real)
        name = os.path.join(stage, "stagebench.1a.4MiB")
        for kind in ("symlink", "directory"):
            with self.subTest(kind=kind):
                if kind == "symlink":
                    os.symlink(real, name)
                else:
                    os.mkdir(name)
                for args in (["prepare", "1a"], ["run", "1a", "--start-in", "0"]):
                    p = run(args + ["--scale", "tiny", "--dir", stage])
                    self.assertEqual(p.returncode, 3, p.stderr)
                    self.assertIn("not a regular file", p.stderr)
                    self.assertEqual(os.listdir(stage), ["stagebench.1a.4MiB"])
                after = os.stat(real)
                self.assertEqual((after.st_ino, after.st_mtime_ns),
                                 (before.st_ino, before.st_mtime_ns))
                if kind == "symlink":
                    os.unlink(name)
                else:
                    os.rmdir(name)

    def test_clean_removes_only_its_own_files_one_by_one(self):
        stage = self.stage()
        outside = self.path("outside")
        os.mkdir(outside)
        for d in (stage, outside):
            self.assertEqual(run(["prepare", "1a", "--scale", "tiny", "--dir", d]).returncode, 0)
        p = run(["run", "4a", "--scale", "tiny", "--dir", stage, "--start-in", "0", "--keep",
                 "--threads", "1"])
        self.assertEqual(p.returncode, 0, p.stderr)
        kept = sorted(n for n in os.listdir(stage) if n.startswith("stagebench.4a."))
        self.assertEqual(len(kept), 50)
        # things in the way, with stagebench's names
        os.symlink(os.path.join(outside, "stagebench.1a.4MiB"),
                   os.path.join(stage, "stagebench.1a.8MiB"))
        os.symlink(os.path.join(stage, kept[0]), os.path.join(stage, "stagebench.4a.link"))
        os.mkdir(os.path.join(stage, "stagebench.4a.dir"))
        with open(os.path.join(stage, "stagebench.4a.dir", "inside"), "w") as f:
            f.write("x")
        with open(os.path.join(stage, "stagebench.4b.notours"), "w") as f:
            f.write("no header")
        os.mkfifo(os.path.join(stage, "stagebench.1a.fifo"))
        with open(os.path.join(stage, "unrelated.txt"), "w") as f:
            f.write("x")
        p = subprocess.run([ft.binary(), "clean", "all", "--dir", stage], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(stage)),
                         ["stagebench.1a.8MiB", "stagebench.1a.fifo", "stagebench.4a.dir",
                          "stagebench.4a.link", "stagebench.4b.notours", "unrelated.txt"])
        self.assertEqual(os.listdir(os.path.join(stage, "stagebench.4a.dir")), ["inside"])
        self.assertEqual(os.listdir(outside), ["stagebench.1a.4MiB"])
        removed = re.findall(r"^removed: (.*)$", p.stdout, re.M)
        self.assertEqual(len(removed), 51)  # one line a file: the replica and test 4's
        left = re.findall(r"^left alone: (\S+)", p.stdout, re.M)
        self.assertEqual(len(left), 5, p.stdout)

    def two_at_once(self, args, stage):
        """Run two of args at once, as two nodes of one server (one node's runs would hold its
        lock in turn); each holds its replica 0.5 s before publishing it."""
        env = ft.shim_env("fsync:1:delay=500ms", path=".tmp.")
        procs = [ft.popen(args + ["--node", "n%d" % i], env=env) for i in range(2)]
        for proc in procs:
            self.addCleanup(ft.reap, proc)
        return [proc.communicate(timeout=60) + (proc.returncode,) for proc in procs]

    def check_one_generation(self, replica, size):
        blocks = ft.block_generations(replica)
        self.assertEqual(len(blocks), size // 4096)
        gens = {gen for _, gen, _, _ in blocks}
        self.assertEqual(len(gens), 1, "a mixed file: %d generations" % len(gens))
        for magic, _, boff, off in blocks:
            self.assertEqual((magic, boff), (0x31484342474B5453, off))
        return gens.pop()

    def test_clean_removes_leftovers_without_a_header(self):
        # what a kill -9 leaves: a temporary replica before its first byte (0 bytes), or
        # fallocated before its first piece (a block 0 of zeros), and 0-byte files of test 4;
        # clean knows them by their full names and removes them, and leaves alone files of
        # the same shapes under names that are near but not stagebench's, and a non-empty
        # file without a header under a leftover's name
        stage = self.stage()
        tok = "0123456789ab"
        ours = ["stagebench.1a.4MiB.tmp.n1.7.%s" % tok,
                "stagebench.3.8MiB.tmp.n1.8.%s" % tok,
                "stagebench.4a.n1.p7-%s-r1.t0.000003" % tok]
        foreign = ["stagebench.1a.4MiB.tmp.n1.7.%sx" % tok,
                   "stagebench.3.8MiB.tmp.n1.x8.%s" % tok,
                   "stagebench.4a.n1.p7-%s-r1.t0.03" % tok,
                   "stagebench.2.8MiB.tmp.n1.9.%s" % tok]
        for name in ours[:1] + ours[2:] + foreign[:1] + foreign[2:3]:
            open(os.path.join(stage, name), "wb").close()
        for name in (ours[1], foreign[1]):
            with open(os.path.join(stage, name), "wb") as f:
                os.posix_fallocate(f.fileno(), 0, 8 * MiB)
        with open(os.path.join(stage, foreign[3]), "wb") as f:
            f.write(b"someone else's data" * 1000)
        p = run(["clean", "all", "--dir", stage])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(stage)), sorted(foreign))
        for name in ours:
            self.assertIn("removed: %s" % os.path.join(os.path.realpath(stage), name), p.stdout)
        self.assertIn("3 files removed", p.stdout)

    def test_two_prepares_of_one_replica_at_once(self):
        stage = self.stage()
        replica = os.path.join(stage, "stagebench.1a.16MiB")
        args = ["prepare", "1a", "--scale", "tiny", "--dir", stage, "--file-size", "16M"]
        # missing: both write a copy, one publishes it, the other finds it there and says so
        results = self.two_at_once(args, stage)
        for out, err, rc in results:
            self.assertEqual(rc, 0, err)
        winners = [out for out, _, _ in results if "created" in out]
        losers = [err for _, err, _ in results if "created at the same time by another" in err]
        self.assertEqual((len(winners), len(losers)), (1, 1), results)
        gen = self.check_one_generation(replica, 16 * MiB)
        self.assertIn("generation %d" % gen, winners[0])
        self.assertIn("(generation %d): kept theirs" % gen, losers[0])
        self.assertEqual(os.listdir(stage), ["stagebench.1a.16MiB"])
        # present: one recreates it; the other waits for it, finds the winner's generation
        # there and says so (never two "recreated" with one of them not on disk)
        results = self.two_at_once(args, stage)
        for out, err, rc in results:
            self.assertEqual(rc, 0, err)
        winners = [out for out, _, _ in results if "recreated" in out]
        losers = [err for _, err, _ in results
                  if "recreated at the same time by another process" in err]
        self.assertEqual((len(winners), len(losers)), (1, 1), results)
        gen2 = self.check_one_generation(replica, 16 * MiB)
        self.assertNotEqual(gen, gen2)
        self.assertIn("generation %d" % gen2, winners[0])
        self.assertIn("(generation %d): kept theirs" % gen2, losers[0])
        self.assertEqual(os.listdir(stage), ["stagebench.1a.16MiB"])

    def test_two_runs_creating_one_replica_at_once(self):
        stage = self.stage()
        outs = [self.path("s%d.json" % i) for i in range(2)]
        env = ft.shim_env("fsync:1:delay=500ms", path=".tmp.")
        procs = [ft.popen(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0",
                           "--verify", "--node", "n%d" % i, "--out", o], env=env)
                 for i, o in enumerate(outs)]
        results = []
        for proc in procs:
            self.addCleanup(ft.reap, proc)
            results.append(proc.communicate(timeout=60) + (proc.returncode,))
        for _, err, rc in results:
            self.assertEqual(rc, 0, err)
        self.assertEqual(sum("created at the same time by another process" in err
                             for _, err, _ in results), 1, results)
        tests = [self.summary(o)["tests"][0] for o in outs]
        self.assertEqual(sorted(t["prepared"] for t in tests), [False, True])
        self.assertEqual(tests[0]["generation"], tests[1]["generation"])
        self.assertEqual(os.listdir(stage), ["stagebench.1a.4MiB"])

    def test_two_runs_recreating_one_replica_between_repetitions(self):
        # Two nodes of one --repeat run on one directory: the replica is recreated once for
        # the second repetition, under the flock of the one both read, and the node that
        # comes second uses the new one instead of removing it under the other's reads.
        stage = self.stage()
        p = run(["prepare", "1a", "--scale", "tiny", "--dir", stage])
        self.assertEqual(p.returncode, 0, p.stderr)
        replica = os.path.join(stage, "stagebench.1a.4MiB")
        gen1 = self.check_one_generation(replica, 4 * MiB)
        outs = [self.path("r%d.json" % i) for i in range(2)]
        held = open(replica, "rb")
        self.addCleanup(held.close)
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        start = time.time() + 2
        procs = [ft.popen(["run", "1a", "--scale", "tiny", "--dir", stage, "--repeat", "2",
                           "--interval", "8", "--start-at", "%.6f" % start, "--verify",
                           "--node", "n%d" % i, "--out", o]) for i, o in enumerate(outs)]
        for proc in procs:
            self.addCleanup(ft.reap, proc)
        # both are past their first repetition (milliseconds from the start instant) and wait
        # for the lock: nothing recreated yet
        time.sleep(start + 2 - time.time())
        self.assertEqual(self.check_one_generation(replica, 4 * MiB), gen1)
        released = time.time()
        held.close()
        results = [proc.communicate(timeout=60) + (proc.returncode,) for proc in procs]
        for _, err, rc in results:
            self.assertEqual(rc, 0, err)
        self.assertEqual(sum("already recreated by another process" in err
                             for _, err, _ in results), 1, results)
        gen2 = self.check_one_generation(replica, 4 * MiB)
        self.assertNotEqual(gen2, gen1)
        for o in outs:
            s = self.summary(o)
            self.assertEqual([t["generation"] for t in s["tests"]], [gen1, gen2])
            # the first repetition was over while the lock was held: the recreation waited
            first = s["tests"][0]["parts"][0]
            self.assertLess(first["start_at"] + first["node_time_s"], released)
            self.assertEqual([pt["status"] for t in s["tests"] for pt in t["parts"]],
                             ["ok", "ok"])
        self.assertEqual(os.listdir(stage), ["stagebench.1a.4MiB"])


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
