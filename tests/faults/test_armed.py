# SPDX-License-Identifier: MIT
"""Armed runs (`run --detach STATE_DIR`, `status`, `stop`): the foreground returns once the
threads wait for the start, with the connection's pipes closed; the state file follows the
run; set-up failures are said in the foreground; planted state directories are refused; stop
signals only the run's own process; a signal to the foreground while it arms is forwarded."""
import json
import os
import signal
import subprocess
import time
import unittest

import faulttest as ft


def state_of(state_dir):
    """STATE_DIR/state as a dict of strings."""
    out = {}
    with open(os.path.join(state_dir, "state")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition(" ")
            out[k] = v
    return out


def proc_start_time(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rpartition(")")[2].split()[19]


class Armed(ft.FaultCase):
    def arm(self, args, state, env=None, within=30.0):
        """Arm a run; returns (CompletedProcess-like tuple, seconds the foreground took)."""
        t0 = time.monotonic()
        proc = ft.popen(["run"] + args + ["--detach", state], env=env)
        self.addCleanup(self.kill_armed, state)
        # communicate() returns only when every holder of the pipes closed them: the
        # detached process must not keep the launching connection's stdout or stderr
        out, err = proc.communicate(timeout=120)
        took = time.monotonic() - t0
        self.assertLess(took, within, err)
        return proc.returncode, out, err

    def kill_armed(self, state):
        """Cleanup: an armed process still running is stopped, then killed."""
        try:
            st = state_of(state)
        except OSError:
            return
        ft.run(["stop", state, "--signal", "TERM", "--wait", "20"])
        pid = int(st["pid"])
        try:
            if proc_start_time(pid) == st["start_time"]:
                os.kill(pid, signal.SIGKILL)
        except OSError:
            pass

    def assert_clean_log(self, state):
        """The armed process's stderr (its log) holds no sanitizer report."""
        log = ft.read_text(os.path.join(state, "log"))
        for bad in ("Sanitizer", "runtime error:"):
            self.assertNotIn(bad, log)

    def status(self, state):
        p = ft.run(["status", state, "--format", "json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_armed_run_detaches_waits_and_is_stopped(self):
        stage, state = self.stage(), self.path("st")
        rc, out, err = self.arm(["1a", "--scale", "tiny", "--dir", stage, "--start-in", "60"],
                                state)
        self.assertEqual(rc, 0, err)
        self.assertEqual(ft.lines(out), ["stagebench: armed: pid %s, state %s/state" %
                                         (state_of(state)["pid"], state)])
        self.assertEqual(os.stat(state).st_mode & 0o777, 0o700)
        s = self.status(state)
        self.assertEqual((s["status"], s["alive"], s["parts"]), ("armed", True, 1))
        self.assertEqual((s["error"], s["reason"]), (None, None))
        self.assertGreater(s["start_at"], time.time() + 30)
        self.assertEqual(s["summary"], os.path.join(state, "summary.json"))
        # the armed process is in its own session, not the launcher's
        pid = s["pid"]
        self.assertNotEqual(os.getsid(pid), os.getsid(0))
        self.assertEqual(os.readlink("/proc/%d/fd/1" % pid), os.path.join(state, "log"))
        p = ft.run(["stop", state])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("stopped pid %d: interrupted (exit 130), summary %s" %
                      (pid, s["summary"]), p.stdout)
        s = self.status(state)
        self.assertEqual((s["status"], s["exit_code"]), ("interrupted", 130))
        self.assertEqual((s["error"], s["reason"]), ("interrupted by SIGINT", "interrupted"))
        self.assertEqual(state_of(state)["reason"], "interrupted")
        j = self.summary(s["summary"])
        self.assertEqual(j["status"], "interrupted")
        self.assertEqual(j["error_reasons"], ["interrupted"])
        self.assertEqual(j["tests"][0]["parts"][0]["status"], "interrupted")
        self.assertEqual(sorted(os.listdir(state)), ["log", "state", "summary.json"])
        self.assert_clean_log(state)
        # a second stop finds it ended
        p = ft.run(["stop", state])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("already ended: interrupted", p.stdout)

    def test_armed_schedule_runs_every_part_on_its_grid(self):
        stage, state = self.stage(), self.path("st")
        rc, _, err = self.arm(["1a", "--scale", "tiny", "--dir", stage, "--start-in", "3",
                               "--interval", "1.5", "--repeat", "3"], state)
        self.assertEqual(rc, 0, err)
        first = self.status(state)
        self.assertIn(first["status"], ("armed", "running"))
        self.assertEqual(first["parts"], 3)
        s = ft.wait_for(lambda: (lambda x: x if x["status"] == "done" else None)(
            self.status(state)), timeout=60, step=0.1)
        self.assertEqual(s["exit_code"], 0)
        j = self.summary(s["summary"])
        self.assertEqual(j["status"], "ok")
        parts = [p for t in j["tests"] for p in t["parts"]]
        self.assertEqual(len(parts), 3)
        for k, p in enumerate(parts):
            self.assertEqual(p["status"], "ok")
            self.assertAlmostEqual(p["start_at"], first["start_at"] + 1.5 * k, places=5)
        self.assert_clean_log(state)

    def test_armed_schedule_of_part_instants(self):
        stage, state = self.stage(), self.path("st")
        t = round(time.time()) + 3
        at = [t, t + 1.25, t + 3]
        rc, _, err = self.arm(["2", "--scale", "tiny", "--dir", stage, "--schedule",
                               ",".join("%.3f" % x for x in at)], state)
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.status(state)["start_at"], at[0])
        s = ft.wait_for(lambda: (lambda x: x if x["status"] == "done" else None)(
            self.status(state)), timeout=60, step=0.1)
        j = self.summary(s["summary"])
        self.assertEqual(j["status"], "ok")
        parts = [p for x in j["tests"] for p in x["parts"]]
        self.assertEqual([(p["part"], p["start_at"], p["status"]) for p in parts],
                         [("2a", at[0], "ok"), ("2b", at[1], "ok"), ("2c", at[2], "ok")])
        self.assert_clean_log(state)

    def test_a_bad_schedule_is_refused(self):
        stage = self.stage()
        t = round(time.time()) + 30
        for sched, extra, why in (
                ("%d,%d" % (t, t + 1), [], "names 2 instants, the run has 3 parts"),
                ("%d,%d,%d" % (t, t + 1, t + 1), [], "must increase"),
                ("%d,,%d" % (t, t + 1), [], "empty item 2"),
                ("%d,soon,%d" % (t, t + 1), [], "'soon' is not an instant"),
                ("%d,%d,%d" % (t, t + 1, t + 90000), [], "more than a day"),
                ("%d,%d,%d" % (t, t + 1, t + 2), ["--interval", "1"], "excludes --interval")):
            with self.subTest(why=why):
                p = ft.run(["run", "2", "--scale", "tiny", "--dir", stage, "--schedule", sched,
                            "--detach", self.path("st")] + extra)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assert_one_error_line(p.stderr, why)
        self.assertEqual(os.listdir(stage), [])
        self.assertFalse(os.path.exists(self.path("st")))

    def test_setup_failure_is_said_in_the_foreground(self):
        stage, state = self.stage(), self.path("st")
        # before the detach: bad --cpus, one line, usual exit status
        rc, out, err = self.arm(["1a", "--scale", "tiny", "--dir", stage, "--cpus", "4000"],
                                self.path("st0"))
        self.assertEqual(rc, 2, err)
        self.assert_one_error_line(err, "--cpus")
        self.assertEqual(out, "")
        # after it: the replica takes longer than the start allows (every write 1 s)
        rc, out, err = self.arm(["1a", "--scale", "tiny", "--dir", stage, "--start-at",
                                 "%.3f" % (time.time() + 1.0)], state,
                                env=ft.shim_env("pwrite:*:delay=1s"))
        self.assertEqual(rc, 3, err)
        errs = [l for l in ft.lines(err) if l.startswith("stagebench: error: ")]
        self.assertEqual(len(errs), 1, err)
        self.assertIn("start time missed", errs[0])
        self.assertEqual(out, "")
        s = self.status(state)
        self.assertEqual((s["status"], s["exit_code"]), ("failed", 3))
        j = self.summary(s["summary"])
        self.assertIn("start time missed", " ".join(j["errors"]))
        # the reason, beside the words, in the state file and in the summary
        self.assertEqual(s["reason"], "start_missed")
        self.assertIn("start time missed", s["error"])
        self.assertEqual(j["error_reasons"], ["start_missed"])
        part = j["tests"][0]["parts"][0]
        self.assertEqual((part["reason"], j["tests"][0]["reason"]),
                         ("start_missed", "start_missed"))

    def test_a_signal_while_arming_is_forwarded(self):
        for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
            with self.subTest(sig=sig):
                stage, state = self.path("stage%d" % code), self.path("st%d" % code)
                os.mkdir(stage)
                # the replica's write takes 4 s: the launcher's Ctrl-C comes during set-up
                proc = ft.popen(["run", "1a", "--scale", "tiny", "--dir", stage,
                                 "--start-in", "5", "--detach", state],
                                env=ft.shim_env("pwrite:*:delay=4s"))
                self.addCleanup(ft.reap, proc)
                self.addCleanup(self.kill_armed, state)
                ft.wait_for(lambda: state_of(state)["status"] == "starting"
                            if os.path.exists(os.path.join(state, "state")) else False)
                time.sleep(0.5)
                proc.send_signal(sig)
                out, err = proc.communicate(timeout=60)
                self.assertEqual(proc.returncode, code, err)
                self.assert_one_error_line(err, "interrupted by SIG")
                self.assertEqual(out, "")
                s = self.status(state)
                self.assertEqual((s["status"], s["exit_code"]), ("interrupted", code))
                self.assertEqual(self.summary(s["summary"])["status"], "interrupted")
                self.assertEqual(os.listdir(stage), [])

    def test_planted_state_dirs_are_refused(self):
        stage = self.stage()
        mine = self.path("mine")
        os.mkdir(mine, 0o700)
        os.symlink(mine, self.path("link"))
        os.mkdir(self.path("open"), 0o755)
        cases = [(self.path("link"), "symbolic link"), (self.path("open"), "mode 0755")]
        if ft.is_root():
            # another user's directory and link in a directory anyone may write to
            pub = self.path("pub")
            os.mkdir(pub)
            os.chmod(pub, 0o1777)
            for cmd in (["mkdir", "-m", "700", pub + "/theirs"],
                        ["ln", "-s", mine, pub + "/theirlink"]):
                subprocess.run(["runuser", "-u", "nobody", "--"] + cmd, check=True)
            cases += [(pub + "/theirs", "owned by uid"), (pub + "/theirlink", "symbolic link")]
        for d, why in cases:
            with self.subTest(dir=d):
                for args in (["run", "1a", "--scale", "tiny", "--dir", stage, "--detach", d],
                             ["status", d], ["stop", d]):
                    p = ft.run(args)
                    self.assertEqual(p.returncode, 3, p.stderr)
                    self.assert_one_error_line(p.stderr, why)
                self.assertFalse(os.path.exists(os.path.join(d, "state")))
        self.assertEqual(os.listdir(mine), [])
        self.assertEqual(os.listdir(stage), [])

    def test_stop_refuses_a_pid_that_is_not_the_run(self):
        stage, state = self.stage(), self.path("st")
        rc, _, err = self.arm(["1a", "--scale", "tiny", "--dir", stage, "--start-in", "60"],
                              state)
        self.assertEqual(rc, 0, err)
        real = state_of(state)
        other = subprocess.Popen(["sleep", "60"])
        self.addCleanup(other.wait)
        self.addCleanup(other.kill)
        path = os.path.join(state, "state")
        with open(path) as f:
            text = f.read()
        for start, why in ((real["start_time"], "is another process"),
                           (proc_start_time(other.pid), "not stagebench")):
            with self.subTest(why=why):
                with open(path, "w") as f:
                    f.write(text.replace("pid %s\n" % real["pid"], "pid %d\n" % other.pid)
                            .replace("start_time %s\n" % real["start_time"],
                                     "start_time %s\n" % start))
                p = ft.run(["stop", state])
                self.assertEqual(p.returncode, 3, p.stderr)
                self.assert_one_error_line(p.stderr, "not signalling", why)
                self.assertIsNone(other.poll())
                s = self.status(state)
                self.assertEqual((s["status"], s["alive"]), ("lost", False))
        with open(path, "w") as f:
            f.write(text)
        self.assertEqual(self.status(state)["status"], "armed")
        p = ft.run(["stop", state, "--signal", "TERM"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.status(state)["exit_code"], 143)


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
