# SPDX-License-Identifier: MIT
"""stagebench-cron where others can reach (issue 13): its lock, log and runs only where no one
else can write; the lock never followed through a link; pruning removes only the runs it
recorded; the lock covers the whole run (a wrapper killed with SIGKILL leaves its launcher
holding it, and what the launcher started is found by its marker); a launcher that died is
reported as such (under --sim also the simulation's launcher), and so is a wrapper that died,
on the next run; a --prometheus file is not written where another user could steer it."""
import os
import signal
import subprocess
import time
import unittest

import clustertest as ct


class CronGuard(ct.TempDirCase):
    def setUp(self):
        super().setUp()
        self.res = self.path("res")
        os.mkdir(self.res)

    def args(self, extra=(), launcher=("1a",)):
        return ["--results", self.res] + list(extra) + ["--sim", "--", "--nodes", "2",
                                                         "--servers", "1", "--dir",
                                                         self.path("stage"), "--stagebench",
                                                         ct.BINARY, "--scale", "tiny"] + \
            list(launcher)

    def cron(self, extra=(), launcher=("1a",)):
        return ct.run_script("stagebench-cron", self.args(extra, launcher), timeout=240)

    def marked(self):
        from stagebench import cron
        return cron.live_processes(self.res)

    def kill_marked(self):
        for _ in range(50):
            pids = self.marked()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.2)

    def test_results_open_to_others_refused(self):
        """A results directory others can write into (their link at the lock's name, their
        fake runs): refused before anything is opened there."""
        os.chmod(self.res, 0o1777)
        victim = self.path("victim")
        with open(victim, "w") as f:
            f.write("root only\n")
        os.chmod(victim, 0o600)
        os.symlink(victim, os.path.join(self.res, ".stagebench-cron.lock"))
        p = self.cron()
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("is writable by other users", p.stderr)
        self.assertIn("only this user can write", p.stderr)
        with open(victim) as f:
            self.assertEqual(f.read(), "root only\n")
        self.assertEqual(sorted(os.listdir(self.res)), [".stagebench-cron.lock"])

    def test_lock_link_not_followed(self):
        victim = self.path("victim")
        with open(victim, "w") as f:
            f.write("root only\n")
        os.symlink(victim, os.path.join(self.res, ".stagebench-cron.lock"))
        p = self.cron()
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn(".stagebench-cron.lock is a symbolic link: not followed", p.stderr)
        self.assertEqual(p.stdout, "")
        with open(victim) as f:
            self.assertEqual(f.read(), "root only\n")
        self.assertEqual([d for d in os.listdir(self.res) if d.startswith("cron-")], [])

    def test_prune_removes_only_recorded_runs(self):
        fakes = ["cron-20990101-000000", "cron-20990102-000000"]
        for d in fakes:
            os.mkdir(os.path.join(self.res, d))
            with open(os.path.join(self.res, d, "manifest.json"), "w") as f:
                f.write("{}\n")
        p = self.cron(["--keep", "1"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        first = [d for d in os.listdir(self.res) if d.startswith("cron-") and d not in fakes]
        self.assertEqual(len(first), 1)
        time.sleep(1.1)
        p = self.cron(["--keep", "1"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        now = sorted(d for d in os.listdir(self.res) if d.startswith("cron-"))
        second = [d for d in now if d not in fakes]
        # the fakes stay (not this wrapper's), the older real run went
        self.assertEqual(len(second), 1)
        self.assertNotEqual(second, first)
        for d in fakes:
            self.assertIn(d, now)

    def test_baseline_not_written_through_a_link(self):
        """The first good run becomes the baseline: not through a link at its name (exit 3,
        the cause said, the run itself kept)."""
        victim = self.path("victim")
        link = self.path("baseline.json")
        os.symlink(victim, link)
        p = self.cron(["--baseline", link])
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("is a symbolic link: only a regular file is replaced", p.stderr)
        self.assertFalse(os.path.exists(victim))
        self.assertTrue(os.path.islink(link))

    def test_prometheus_not_into_another_users_directory(self):
        """--prometheus into a directory another user owns (who could swap a link in for its
        temporary file): refused, said and logged, the status the run's; nothing written
        there."""
        if os.geteuid() != 0:
            self.skipTest("needs root to give a directory to another user")
        theirs = self.path("textfile")
        os.mkdir(theirs)
        os.chown(theirs, 65534, 65534)
        p = self.cron(["--prometheus", os.path.join(theirs, "stagebench.prom")])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        said = ("error: --prometheus: cannot write %s/stagebench.prom: %s belongs to uid 65534"
                % (theirs, theirs))
        self.assertIn(said, p.stderr)
        with open(os.path.join(self.res, "stagebench-cron.log")) as f:
            self.assertIn(said[len("error: "):], f.read())
        self.assertEqual(os.listdir(theirs), [])

    def wait_for(self, what, cond, limit=90):
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if cond():
                return
            time.sleep(0.2)
        self.fail("no %s within %d s" % (what, limit))

    def test_wrapper_killed_lock_holds_and_is_reported(self):
        """kill -9 of the wrapper: its launcher keeps the lock, the next run does not start;
        kill -9 of the launcher too: its nodes are still alive, found by the marker, the next
        run does not start; once they are gone, the next run says the previous one did not
        finish, and runs."""
        self.addCleanup(self.kill_marked)
        proc = subprocess.Popen(ct.command("stagebench-cron") +
                                self.args(launcher=("--lead", "30", "1a")),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ct.env(),
                                stdin=subprocess.DEVNULL)
        # the node processes are waiting for their start
        self.wait_for("node process", lambda: any(
            "--start-at" in c for pid, c in ct.processes_mentioning(self.res)
            if pid in self.marked()))
        proc.kill()
        proc.communicate(timeout=30)
        p = self.cron()
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("still holds", p.stderr)
        # the launchers (sim, cluster) die too: only the node processes are left
        for pid, c in ct.processes_mentioning(self.res):
            if "--start-at" not in c and pid in self.marked():
                os.kill(pid, signal.SIGKILL)
        self.wait_for("launchers gone", lambda: all(
            "--start-at" in c for pid, c in ct.processes_mentioning(self.res)
            if pid in self.marked()))
        self.assertNotEqual(self.marked(), [])
        p = self.cron()
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("processes are still alive", p.stderr)
        self.kill_marked()
        p = self.cron()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("did not finish: its wrapper died", p.stdout)
        with open(os.path.join(self.res, "stagebench-cron.log")) as f:
            self.assertIn("did not finish: its wrapper died", f.read())

    def kill_mid_run(self, which):
        """A cron --sim run whose process named which (stagebench-sim, the wrapper's child,
        or stagebench-cluster, the simulation's) is killed with SIGKILL while its nodes wait
        for their start; the wrapper's (exit status, stdout, stderr)."""
        self.addCleanup(self.kill_marked)
        proc = subprocess.Popen(ct.command("stagebench-cron") +
                                self.args(launcher=("--lead", "30", "1a")),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ct.env(),
                                universal_newlines=True, stdin=subprocess.DEVNULL)
        self.wait_for("node process", lambda: any(
            "--start-at" in c for pid, c in ct.processes_mentioning(self.res)
            if pid in self.marked()))
        victim = [pid for pid, c in ct.processes_mentioning(self.res)
                  if which in (c.split(" ") + [""])[1] and pid in self.marked()]
        self.assertEqual(len(victim), 1)
        os.kill(victim[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
        self.assertNotIn("Traceback", err)
        return proc.returncode, out, err

    def test_launcher_killed_is_reported(self):
        rc, out, err = self.kill_mid_run("stagebench-sim")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("the launcher was killed by SIGKILL: the run is unfinished\n", out)

    def test_simulated_launcher_killed_is_reported(self):
        """Under --sim the launcher is stagebench-sim's child: killed, it is named as such in
        the report and the log, not only as nodes missing."""
        rc, out, err = self.kill_mid_run("stagebench-cluster")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("the launcher was killed by SIGKILL: the run is unfinished\n", out)
        self.assertIn("2 missing", out)
        with open(os.path.join(self.res, "stagebench-cron.log")) as f:
            log = f.read()
        self.assertIn("launcher exited 137", log)
        self.assertIn("the launcher was killed by SIGKILL: the run is unfinished", log)
        run = [d for d in os.listdir(self.res) if d.startswith("cron-")]
        with open(os.path.join(self.res, run[0], "launcher.log")) as f:
            self.assertIn("stagebench-sim: error: the launcher was killed by SIGKILL: the run "
                          "is unfinished", f.read())


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
