# SPDX-License-Identifier: MIT
"""A step of the wall clock (the shim moves CLOCK_REALTIME as NTP would) while waiting for
the start or during a part: no measured time changes, since durations are monotonic, and
the summary records the step (`clock_step_s`) with a warning."""
import unittest

import faulttest as ft


def step_warnings(s):
    """The summary's warnings about a step (not the unsynchronized clock of this machine, nor a
    thread released late because it was preempted on a shared machine)."""
    return [w for w in s["warnings"] if "wall clock stepped" in w]


class ClockStep(ft.FaultCase):
    def test_forward_step_while_waiting_for_the_start(self):
        stage = self.stage()
        # T is 3 s after set-up; at the wait's 10th sleep (of 50 ms at most, a fraction of a
        # second in whatever the set-up took) the wall clock jumps an hour ahead: the threads
        # see T passed and start, but the node time is not an hour
        s, p = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage,
                              "--start-in", "3"],
                             env=ft.shim_env("clock:step=+3600@sleep=10"))
        part = s["tests"][0]["parts"][0]
        self.assertEqual(part["status"], "ok")
        self.assertAlmostEqual(part["clock_step_s"], 3600, delta=1)
        self.assertLess(part["node_time_s"], 5)
        self.assertLessEqual(part["thread_time_s"]["max"], part["node_time_s"])
        self.assertAlmostEqual(s["tests"][0]["result_s"], part["node_time_s"], places=9)
        self.assertEqual(len(step_warnings(s)), 1, s["warnings"])
        self.assertRegex(step_warnings(s)[0], r"^1a: the wall clock stepped by \+3600\.\d{3} s "
                         r"while waiting for the start: durations are monotonic")
        self.assertIn("warning: 1a: the wall clock stepped by +3600", p.stdout)
        self.assertIn("stagebench: warning: 1a: the wall clock stepped by +3600", p.stderr)

    def test_backward_step_during_the_part(self):
        stage = self.stage()
        n = len(ft.sbtest.info()["threads"])
        # each read of the replica takes 1 ms more: the part lasts about 3 s, and the wall
        # clock steps an hour back at the part's (600 x n)th read, whatever the set-up took (a
        # step an instant after the process started lands in the wait on a loaded machine,
        # and the wait then follows the wall clock for an hour, as it must)
        s, p = self.run_json(["run", "1a", "--scale", "tiny", "--dir", stage,
                              "--start-in", "0.3", "--passes", "600"],
                             env=ft.shim_env("clock:step=-3600@read=%d;read:*:delay=1ms"
                                             % (600 * n)))
        part = s["tests"][0]["parts"][0]
        self.assertEqual(part["status"], "ok")
        self.assertAlmostEqual(part["clock_step_s"], -3600, delta=1)
        self.assertEqual(part["ops"], 600 * n)
        # 600 passes of 5 delayed reads: at least 3 s each, and no hour more or less
        for t in part["per_thread"]:
            self.assertGreater(t["time_s"], 3.0)
            self.assertLess(t["time_s"], 30)
        self.assertGreater(part["node_time_s"], 3.0)
        self.assertLess(part["node_time_s"], 30)
        self.assertRegex(step_warnings(s)[0], r"^1a: the wall clock stepped by -3600\.\d{3} s "
                         r"during the part: durations are monotonic and unaffected$")

    def test_no_step_no_warning(self):
        stage = self.stage()
        s, _ = self.run_json(["run", "2", "--scale", "tiny", "--dir", stage, "--start-in", "0.2"])
        self.assertEqual(step_warnings(s), [])
        for part in s["tests"][0]["parts"]:
            self.assertEqual(part["clock_step_s"], 0)


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
