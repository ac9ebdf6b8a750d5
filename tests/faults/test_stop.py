# SPDX-License-Identifier: MIT
"""`stop` of a run that does not end: a SIGSTOPped (or suspended) armed run gets SIGCONT after
its signal and ends with its summary; one that stays stopped, or hangs, is killed with
--kill after --wait, its state made final (killed, exit code 137, reason killed, the signal,
the time and the process's /proc state in its error) and the pid waited for; `status` says
the process is running, stopped, zombie or gone; `stop --format json` is one line."""
import glob
import json
import os
import signal
import subprocess
import sys
import time
import unittest

import faulttest as ft

STOP_KEYS = ["schema", "dir", "pid", "signal", "sent", "process_before", "waited_s", "ended",
             "status", "exit_code", "reason", "summary", "summary_written", "killed_state",
             "gone", "process", "error"]


def state_of(state_dir):
    out = {}
    with open(os.path.join(state_dir, "state")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition(" ")
            out[k] = v
    return out


def proc_state(pid):
    """The state letter of /proc/PID/stat, None when there is no such process."""
    text = ft.read_text("/proc/%d/stat" % pid)
    return text.rpartition(")")[2].split()[0] if text else None


class Stop(ft.FaultCase):
    def setUp(self):
        super().setUp()
        self.env = {"STAGEBENCH_LOCK_DIR": self.path("locks")}

    def arm(self, state, start_in="60", env=None, node="n1"):
        p = ft.run(["run", "1a", "--scale", "tiny", "--dir", self.stage(), "--node", node,
                    "--start-in", start_in, "--detach", state], env=dict(self.env, **(env or {})))
        self.addCleanup(self.kill_armed, state)
        self.assertEqual(p.returncode, 0, p.stderr)
        return int(state_of(state)["pid"])

    def kill_armed(self, state):
        try:
            pid = int(state_of(state)["pid"])
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError, KeyError):
            pass

    def status(self, state):
        p = ft.run(["status", state, "--format", "json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def stop(self, state, *args, expect=0):
        p = ft.run(["stop", state, "--format", "json"] + list(args))
        self.assertEqual(p.returncode, expect, p.stderr)
        self.assertEqual(p.stdout.count("\n"), 1, p.stdout)
        r = json.loads(p.stdout)
        self.assertEqual(list(r), STOP_KEYS)
        self.assertEqual(r["schema"], "stagebench.stop/1")
        return r, p

    def keep_stopped(self, pid):
        """Stop pid again and again (a job suspended and kept so), as fast as the shell's
        builtin kill goes: a SIGCONT frees it for microseconds, never long enough to end."""
        loop = subprocess.Popen(["sh", "-c", "while kill -STOP %d 2>/dev/null; do :; done" % pid])
        self.addCleanup(loop.wait)
        self.addCleanup(loop.kill)
        ft.wait_for(lambda: proc_state(pid) == "T")
        return loop

    def test_a_stopped_run_is_continued_and_ends_with_its_summary(self):
        state = self.path("st")
        pid = self.arm(state)
        self.assertEqual(self.status(state)["process"], "running")
        os.kill(pid, signal.SIGSTOP)
        ft.wait_for(lambda: proc_state(pid) == "T")
        s = self.status(state)
        self.assertEqual((s["status"], s["alive"], s["process"]), ("armed", True, "stopped"))
        p = ft.run(["status", state])
        self.assertIn("pid:      %d (stopped)" % pid, p.stdout)
        r, _ = self.stop(state, "--signal", "TERM", "--wait", "20")
        self.assertEqual((r["pid"], r["signal"], r["sent"], r["process_before"], r["ended"]),
                         (pid, "SIGTERM", ["SIGTERM", "SIGCONT"], "stopped", "summary"))
        self.assertEqual((r["status"], r["exit_code"], r["reason"], r["summary_written"],
                          r["killed_state"], r["error"]),
                         ("interrupted", 143, "interrupted", True, None, None))
        self.assertEqual(self.summary(r["summary"])["status"], "interrupted")
        ft.wait_for(lambda: self.status(state)["process"] in ("zombie", "gone"))
        # stopped again: it had ended
        r, p = self.stop(state)
        self.assertEqual((r["ended"], r["sent"], r["status"]), ("already", [], "interrupted"))
        self.assertEqual(p.stderr, "")

    def test_a_run_kept_stopped_is_killed_after_the_wait(self):
        state = self.path("st")
        pid = self.arm(state)
        loop = self.keep_stopped(pid)
        t0 = time.monotonic()
        r, p = self.stop(state, "--signal", "TERM", "--wait", "2", "--kill", expect=1)
        took = time.monotonic() - t0
        loop.kill()
        sys.stderr.write("\nkept stopped: killed, gone after %.2f s (--wait 2)\n" % took)
        self.assertLess(took, 2 + 6)
        self.assertEqual((r["sent"], r["process_before"], r["ended"], r["killed_state"],
                          r["gone"]), (["SIGTERM", "SIGCONT", "SIGKILL"], "stopped", "killed",
                                       "T", True))
        self.assertIn(r["process"], ("gone", "zombie"))
        self.assertEqual((r["status"], r["exit_code"], r["reason"], r["summary_written"]),
                         ("killed", 137, "killed", False))
        self.assertGreaterEqual(r["waited_s"], 2)
        want = ("SIGTERM (and SIGCONT) did not end it within %.1f s: killed with SIGKILL, its "
                "process then in state T (stopped)" % r["waited_s"])
        self.assertEqual(r["error"], "the run in '%s' (pid %d): %s" % (state, pid, want))
        self.assert_one_error_line(p.stderr, want)
        st = state_of(state)
        self.assertEqual((st["status"], st["exit_code"], st["reason"], st["error"]),
                         ("killed", "137", "killed", want))
        s = self.status(state)
        self.assertEqual((s["status"], s["exit_code"], s["alive"]), ("killed", 137, False))
        self.assertIn(s["process"], ("gone", "zombie"))
        self.assertFalse(os.path.exists(os.path.join(state, "summary.json")))
        self.assertEqual(glob.glob(os.path.join(state, "*.tmp.*")), [])
        # the node's lock went with it
        p = ft.run(["run", "1a", "--scale", "tiny", "--dir", self.stage(), "--node", "n1",
                    "--start-in", "0"], env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_a_run_hung_in_its_summary_is_killed_sleeping(self):
        state = self.path("st")
        env = ft.shim_env("write:*:delay=60s", path="summary.json.tmp")
        pid = self.arm(state, start_in="0.5", env=env)
        ft.wait_for(lambda: glob.glob(os.path.join(state, "summary.json.tmp.*")), timeout=30)
        r, p = self.stop(state, "--wait", "1", "--kill", expect=1)
        self.assertEqual((r["signal"], r["process_before"], r["ended"], r["killed_state"],
                          r["gone"]), ("SIGINT", "running", "killed", "S", True))
        self.assertIn("SIGINT (and SIGCONT) did not end it within", r["error"])
        self.assertIn("its process then in state S (sleeping)", r["error"])
        ft.wait_for(lambda: proc_state(pid) in (None, "Z"))
        self.assertEqual(state_of(state)["status"], "killed")
        # the text form of an ended run
        p = ft.run(["stop", state])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("already ended: killed", p.stdout)
        # and of a kill
        state2 = self.path("st2")
        pid = self.arm(state2, start_in="0.5", env=env, node="n2")
        ft.wait_for(lambda: glob.glob(os.path.join(state2, "summary.json.tmp.*")), timeout=30)
        p = ft.run(["stop", state2, "--wait", "1", "--kill"])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stdout, "stagebench: killed pid %d: killed (exit 137), no summary; "
                         "its process is gone\n" % pid)
        self.assert_one_error_line(p.stderr, "SIGINT (and SIGCONT) did not end it within")

    def test_without_kill_it_says_so_and_leaves_it(self):
        state = self.path("st")
        pid = self.arm(state)
        loop = self.keep_stopped(pid)
        r, p = self.stop(state, "--wait", "1", expect=1)
        self.assertEqual((r["ended"], r["status"], r["exit_code"], r["process"],
                          r["sent"]), ("running", "armed", None, "stopped",
                                       ["SIGINT", "SIGCONT"]))
        self.assert_one_error_line(p.stderr, "did not end with a summary within 1.0 s after "
                                   "SIGINT: status armed, its process stopped (--kill kills it)")
        self.assertEqual(state_of(state)["status"], "armed")
        loop.kill()
        loop.wait()
        # continued, it acts on the signal it was sent and ends
        os.kill(pid, signal.SIGCONT)
        ft.wait_for(lambda: state_of(state)["status"] == "interrupted", timeout=20)

    def test_refusals_and_formats(self):
        state = self.path("st")
        p = ft.run(["stop", state, "--format", "json"])
        self.assertEqual(p.returncode, 3, p.stderr)
        r = json.loads(p.stdout)
        self.assertEqual((r["ended"], r["pid"], r["status"], r["sent"]),
                         ("refused", None, None, []))
        self.assertIn("state directory", r["error"])
        self.assert_one_error_line(p.stderr, "state directory")
        pid = self.arm(state)
        other = subprocess.Popen(["sleep", "60"])
        self.addCleanup(other.wait)
        self.addCleanup(other.kill)
        path = os.path.join(state, "state")
        with open(path) as f:
            text = f.read()
        start = ft.read_text("/proc/%d/stat" % other.pid).rpartition(")")[2].split()[19]
        mine = state_of(state)["start_time"]
        with open(path, "w") as f:
            f.write(text.replace("pid %d\n" % pid, "pid %d\n" % other.pid)
                    .replace("start_time %s\n" % mine, "start_time %s\n" % start))
        r, p = self.stop(state, "--kill", expect=3)
        self.assertEqual((r["ended"], r["sent"], r["process_before"]), ("refused", [], "gone"))
        self.assertIn("not stagebench", r["error"])
        self.assertIsNone(other.poll())
        self.assertEqual(self.status(state)["process"], "gone")
        with open(path, "w") as f:
            f.write(text)
        p = ft.run(["stop", state, "--format", "csv"])
        self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
