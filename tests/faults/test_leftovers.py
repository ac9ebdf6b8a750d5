# SPDX-License-Identifier: MIT
"""Leftovers bounded and named: with 100,000 files left by killed runs, `info` and `check`
summarise them (count, bytes, oldest, per kind, a few examples) in output whose size does not
grow with their number, within seconds; `run` and `prepare` warn about them (stderr and the
summary's warnings); `clean all` removes every kind and leaves another user's file alone."""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

import faulttest as ft
from faulttest import run

TOKEN = "0123456789ab"
N_FILES, N_TEMP = 99990, 10


def make_leftovers(stage):
    """N_FILES empty test-4 files and N_TEMP empty temporary replicas, as kill -9 leaves them."""
    for i in range(N_FILES):
        fd = os.open(os.path.join(stage, "stagebench.4a.n1.p7-%s-r1.t%d.%06d"
                                  % (TOKEN, i % 64, i)), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        os.close(fd)
    for i in range(N_TEMP):
        with open(os.path.join(stage, "stagebench.2.8MiB.tmp.n1.%d.%s" % (i, TOKEN)), "wb") as f:
            f.write(b"\0" * 4096)


class Leftovers(ft.FaultCase):
    def test_a_hundred_thousand_leftovers(self):
        stage = self.stage()
        self.assertEqual(run(["prepare", "1a", "--scale", "tiny", "--dir", stage]).returncode, 0)
        make_leftovers(stage)

        t0 = time.monotonic()
        p = run(["info", "--dir", stage, "--format", "json"], timeout=60)
        took = time.monotonic() - t0
        self.assertEqual(p.returncode, 0, p.stderr)
        sys.stderr.write("info --format json with %d leftovers: %.2f s, %d bytes\n"
                         % (N_FILES + N_TEMP, took, len(p.stdout)))
        self.assertLess(len(p.stdout), 8192)
        self.assertLess(took, 20)
        info = json.loads(p.stdout)
        self.assertEqual([f["name"] for f in info["files"]], ["stagebench.1a.4MiB"])
        left = info["leftovers"]
        self.assertEqual(left["count"], N_FILES + N_TEMP)
        self.assertEqual(left["bytes"], N_TEMP * 4096)
        self.assertGreaterEqual(left["oldest_age_s"], 0)
        kinds = left["kinds"]
        self.assertEqual((kinds["file"]["count"], kinds["temporary"]["count"],
                          kinds["other"]["count"]), (N_FILES, N_TEMP, 0))
        self.assertEqual([e["name"] for e in kinds["file"]["examples"]],
                         ["stagebench.4a.n1.p7-%s-r1.t0.%06d" % (TOKEN, i) for i in (0, 64, 128)])
        self.assertTrue(all(e["ours"] for e in kinds["temporary"]["examples"]))

        p = run(["info", "--dir", stage], timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertLess(len(p.stdout.splitlines()), 20, p.stdout)
        self.assertIn("file      %d leftovers, 0 B, oldest created" % N_FILES, p.stdout)
        self.assertIn("temporary %d leftovers, 40 KiB" % N_TEMP, p.stdout)

        t0 = time.monotonic()
        p = run(["check", "--dir", stage, "--scale", "tiny", "--format", "json"], timeout=60)
        took = time.monotonic() - t0
        sys.stderr.write("check --format json with %d leftovers: %.2f s, %d bytes\n"
                         % (N_FILES + N_TEMP, took, len(p.stdout)))
        self.assertLess(len(p.stdout), 16384)
        found = [f for f in json.loads(p.stdout)["findings"] if f["check"] == "leftovers"]
        self.assertEqual(len(found), 1, p.stdout)
        self.assertEqual(found[0]["status"], "warn")
        self.assertIn("%d leftover files in '%s'" % (N_FILES + N_TEMP, os.path.realpath(stage)),
                      found[0]["message"])
        self.assertIn("%d temporary, %d file" % (N_TEMP, N_FILES), found[0]["message"])

        want = "%d leftover files in '%s'" % (N_FILES + N_TEMP, os.path.realpath(stage))
        out = self.path("s.json")
        p = run(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0", "--out", out],
                timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("stagebench: warning: " + want, p.stderr)
        with open(out) as f:
            self.assertTrue(any(want in w for w in json.load(f)["warnings"]))
        p = run(["prepare", "1a", "--scale", "tiny", "--dir", stage], timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("stagebench: warning: " + want, p.stderr)

        p = run(["clean", "all", "--dir", stage], timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.listdir(stage), [])
        p = run(["run", "1a", "--scale", "tiny", "--dir", stage, "--start-in", "0"])
        self.assertNotIn("leftover", p.stderr)

    def test_clean_leaves_another_users_file(self):
        ft.require_root(self)
        stage = self.stage()
        os.chmod(stage, 0o1777)
        mine = os.path.join(stage, "stagebench.4a.n1.p7-%s-r1.t0.000001" % TOKEN)
        theirs = os.path.join(stage, "stagebench.4a.n1.p7-%s-r1.t0.000002" % TOKEN)
        open(mine, "wb").close()
        p = subprocess.run(["runuser", "-u", "nobody", "--", "tee", theirs], input="not yours\n",
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run(["info", "--dir", stage, "--format", "json"])
        ex = {e["name"]: e["ours"] for e in
              json.loads(p.stdout)["leftovers"]["kinds"]["file"]["examples"]}
        self.assertEqual(ex, {os.path.basename(mine): True, os.path.basename(theirs): False})
        p = run(["clean", "all", "--dir", stage])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.listdir(stage), [os.path.basename(theirs)])
        with open(theirs) as f:
            self.assertEqual(f.read(), "not yours\n")

    @staticmethod
    def live_threads(pgid):
        """The threads of process group pgid not yet exited. A leader that has exited reads
        an empty cmdline and a zombie state while its other threads still run: each thread
        is counted, not each process."""
        live = []
        for pid in os.listdir("/proc"):
            try:
                with open("/proc/%s/stat" % pid) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[2]) != pgid:
                        continue
                for tid in os.listdir("/proc/%s/task" % pid):
                    with open("/proc/%s/task/%s/stat" % (pid, tid)) as f:
                        if f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                            live.append("%s/%s" % (pid, tid))
            except (OSError, ValueError, IndexError):
                pass
        return live

    def test_clean_all_removes_what_a_killed_check_left(self):
        stage = self.stage()
        os.chmod(stage, 0o1777)
        # a real check killed with its child (the whole group, as kill -9 of a job does)
        proc = subprocess.Popen([ft.binary(), "check", "--dir", stage, "--scale", "tiny"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        self.addCleanup(ft.reap, proc)
        ft.wait_for(lambda: any(n.startswith("stagebench.create.") for n in os.listdir(stage)))
        self.assertGreater(len(self.live_threads(proc.pid)), 1)  # the check and its child
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        # the child (the work on --dir) dies with the group, but a thread of it inside a call
        # (a create) ends that call first: the leftovers are counted once every thread is gone
        ft.wait_for(lambda: not self.live_threads(proc.pid), timeout=90)
        # and the shapes a kill can leave at other moments
        def put(name, data):
            with open(os.path.join(stage, name), "wb") as f:
                f.write(data)
        put("stagebench.check-write.123.%s" % TOKEN, b"")
        put("stagebench.check-write.124.%s" % TOKEN, b"\x5a" * 4096)
        put("stagebench.check.probe.9.%s" % TOKEN, b"\0" * 8192)
        put("stagebench.check.probe.9.%s.tmp.n1.9.%s" % (TOKEN, TOKEN), b"")
        left = sorted(os.listdir(stage))
        theirs = ["stagebench.check-write.125.%s" % TOKEN, "stagebench.check.probe.9.%sx" % TOKEN]
        for name in theirs:
            p = subprocess.run(["runuser", "-u", "nobody", "--", "tee", os.path.join(stage, name)],
                               input="not yours\n", capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
        info = json.loads(run(["info", "--dir", stage, "--format", "json"]).stdout)
        now = sorted(os.listdir(stage))
        self.assertEqual(info["leftovers"]["kinds"]["check"]["count"], len(left) + 1,
                         "listed before: %s; now: %s (new: %s); threads of its group: %s; info: %s"
                         % (left, now, sorted(set(now) - set(left) - set(theirs)),
                            self.live_threads(proc.pid), info["leftovers"]))
        self.assertEqual(info["leftovers"]["kinds"]["other"]["count"], 1)
        # clean of some tests leaves them; clean all removes them, not another's
        self.assertEqual(run(["clean", "1a", "4", "--dir", stage]).returncode, 0)
        self.assertEqual(sorted(os.listdir(stage)), sorted(left + theirs))
        p = run(["clean", "all", "--dir", stage])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("%d files removed, 1 left alone" % len(left), p.stdout)
        self.assertEqual(sorted(os.listdir(stage)), sorted(theirs))


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
