# SPDX-License-Identifier: MIT
"""SIGINT and SIGTERM while waiting for the start, during a part and during prepare: the
threads stop, test 4's files and half-written replicas are removed, the summary says
`interrupted`, exit 130 / 143; a second Ctrl-C exits at once, except when it is part of the
same stop (within 2 s of the first: a launcher's second signal, srun's SIGTERM) or lands while
the summary is written: then the summary is completed first and no temporary file is left."""
import os
import signal
import time
import unittest

import faulttest as ft


class Signals(ft.FaultCase):
    def start(self, args, env=None):
        out = self.path("s.json")
        proc = ft.popen(args + ["--out", out] if args[0] == "run" else args, env=env)
        self.addCleanup(ft.reap, proc)
        return proc, out

    def threads_up(self, proc):
        """Until the worker threads exist (one per core, besides the main thread)."""
        n = len(ft.sbtest.info()["threads"])

        def up():
            if proc.poll() is not None:
                return True
            try:
                return len(os.listdir("/proc/%d/task" % proc.pid)) >= n + 1
            except OSError:
                return True
        ft.wait_for(up)
        self.assertIsNone(proc.poll(), "stagebench ended early")

    def interrupt(self, proc, sig, within):
        t0 = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        self.assertLess(time.monotonic() - t0, within, err)
        self.assertEqual(proc.returncode, 130 if sig == signal.SIGINT else 143, err)
        name = "SIGINT" if sig == signal.SIGINT else "SIGTERM"
        errs = [l for l in ft.lines(err) if l.startswith("stagebench: error: ")]
        self.assertEqual(errs, ["stagebench: error: interrupted by %s" % name], err)
        return err

    def check_summary(self, out, code, name):
        s = self.summary(out)
        self.assertEqual(s["status"], "interrupted")
        self.assertEqual(s["exit_code"], code)
        self.assertIn("interrupted by %s" % name, s["errors"])
        self.assertEqual(s["tests"][0]["status"], "interrupted")
        return s

    def interrupt_part(self, args, sig, after, within):
        """`stagebench run ARGS` on the stage, sig sent `after` seconds once its threads are
        up: the interrupted part of its summary."""
        proc, out = self.start(["run"] + args + ["--scale", "tiny", "--dir", self.stage()])
        self.threads_up(proc)
        time.sleep(after)
        self.interrupt(proc, sig, within=within)
        s = self.check_summary(out, 130 if sig == signal.SIGINT else 143, sig.name)
        part = s["tests"][0]["parts"][0]
        self.assertEqual(part["status"], "interrupted")
        return part

    def test_sigint_while_waiting_for_the_start(self):
        stage = self.stage()
        part = self.interrupt_part(["4a", "--start-in", "60"], signal.SIGINT, 0.3, within=3)
        self.assertEqual(part["files"], 0)
        self.assertTrue(all(t["release_at"] == 0 for t in part["per_thread"]))
        self.assertEqual(os.listdir(stage), [])

    def test_sigterm_during_a_part(self):
        stage = self.stage()
        part = self.interrupt_part(["1a", "--start-in", "0.2", "--passes", "100000"],
                                   signal.SIGTERM, 1.0, within=5)
        self.assertGreater(part["ops"], 0)
        self.assertTrue(all(t["release_at"] > 0 for t in part["per_thread"]))
        # the replica was complete before the part: it stays
        self.assertEqual(os.listdir(stage), ["stagebench.1a.4MiB"])

    def test_sigterm_during_test4_removes_its_files(self):
        stage = self.stage()
        with open(os.path.join(stage, "mine.txt"), "w") as f:
            f.write("was here before")
        proc, out = self.start(["run", "4a", "--scale", "tiny", "--dir", stage,
                                "--start-in", "0", "--count", "100000"],
                               env=ft.shim_env("write:*:delay=1ms"))
        ft.wait_for(lambda: proc.poll() is not None or len(os.listdir(stage)) > 20)
        self.interrupt(proc, signal.SIGTERM, within=10)
        s = self.check_summary(out, 143, "SIGTERM")
        self.assertGreater(s["tests"][0]["parts"][0]["files"], 0)
        self.assertEqual(os.listdir(stage), ["mine.txt"])

    def test_sigint_during_prepare_removes_the_temporary(self):
        for cmd in ("prepare", "run"):
            with self.subTest(cmd=cmd):
                stage = self.path(cmd)
                os.mkdir(stage)
                proc, out = self.start([cmd, "1a", "--scale", "tiny", "--dir", stage,
                                        "--file-size", "256M"],
                                       env=ft.shim_env("pwrite:*:delay=100ms"))
                ft.wait_for(lambda: proc.poll() is not None or
                            any(".tmp." in n for n in os.listdir(stage)))
                time.sleep(0.2)
                self.interrupt(proc, signal.SIGINT, within=5)
                self.assertEqual(os.listdir(stage), [])
                if cmd == "run":
                    s = self.check_summary(out, 130, "SIGINT")
                    self.assertFalse(s["tests"][0]["prepared"])
                    self.assertEqual(s["tests"][0]["parts"], [])

    def test_second_sigint_exits_at_once(self):
        if "tsan" in ft.sanitizer_runtime():
            # ThreadSanitizer holds an asynchronous signal until the outermost interceptor
            # returns; the shim's delay runs inside TSan's pwrite, so both SIGINTs arrive
            # (as one) only after it.
            self.skipTest("ThreadSanitizer defers signals during the shim's delay")
        stage = self.stage()
        log = self.path("shim.log")
        # every piece of the replica takes 5 s to write: after the first SIGINT the writers
        # would finish their piece before stopping; the second one does not wait for them
        proc, _ = self.start(["prepare", "1a", "--scale", "tiny", "--dir", stage,
                              "--file-size", "256M"],
                             env=ft.shim_env("pwrite:*:delay=5s", log=log))
        ft.wait_for(lambda: proc.poll() is not None or "delay" in ft.read_text(log))
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        self.assertIsNone(proc.poll(), "the first SIGINT was not expected to end it so soon")
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
        self.assertLess(time.monotonic() - t0, 1.5)
        self.assertEqual(proc.returncode, 130)
        # even then the half-written replica goes
        self.assertEqual(os.listdir(stage), [])

    def stop_twice(self, second, gap, env=None):
        """A run in its part gets SIGINT, then `second` gap seconds later."""
        stage = self.stage()
        proc, out = self.start(["run", "1a", "--scale", "tiny", "--dir", stage,
                                "--start-in", "0.2", "--passes", "100000"], env=env)
        self.threads_up(proc)
        time.sleep(1.0)
        self.assertIsNone(proc.poll(), "stagebench ended before the signals")
        proc.send_signal(signal.SIGINT)
        time.sleep(gap)
        proc.send_signal(second)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130, err)
        s = self.check_summary(out, 130, "SIGINT")
        self.assertEqual(s["tests"][0]["parts"][0]["status"], "interrupted")
        self.assertEqual([n for n in os.listdir(self.dir) if ".tmp." in n], [])
        return err

    def test_two_sigints_of_one_stop_keep_the_summary(self):
        # every read takes 0.5 s: the second signal comes while the threads still finish
        # the read they were in, before the summary is written
        self.stop_twice(signal.SIGINT, 0.2, env=ft.shim_env("read:*:delay=500ms"))

    def test_sigint_then_sigterm_keeps_the_summary(self):
        self.stop_twice(signal.SIGTERM, 0.2, env=ft.shim_env("read:*:delay=500ms"))

    def test_second_signal_while_the_summary_is_written_waits_for_it(self):
        if "tsan" in ft.sanitizer_runtime():
            self.skipTest("ThreadSanitizer defers signals during the shim's delay")
        log = self.path("shim.log")
        # the summary's fsync takes 4 s: a second signal 2.5 s after the first (later than
        # the same-stop window) lands while the summary is being written
        t0 = time.monotonic()
        self.stop_twice(signal.SIGTERM, 2.5,
                        env=ft.shim_env("fsync:*:delay=4s", path=".json.tmp.", log=log))
        self.assertIn("delay", ft.read_text(log))
        self.assertGreater(time.monotonic() - t0, 4.0)


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
