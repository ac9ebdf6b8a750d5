# SPDX-License-Identifier: MIT
"""`stagebench clock`, end to end: the header line, a timestamp answered for each token at
once (between the moments the token was sent and the answer read, on this machine's clock),
end of input, malformed lines and the idle limit; and the same protocol after the state line
of `stagebench status --format json --clock`, driven as the launcher's status round does."""
import json
import os
import signal
import subprocess
import time
import unittest

import sbtest


def start(args=(), env=None):
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.Popen([sbtest.BINARY, "clock"] + list(args), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env,
                            bufsize=0)


class ClockCommand(unittest.TestCase):
    def finish(self, p, timeout=10):
        """Wait for the end (stdin left as it is) and read what is left of its output."""
        p.wait(timeout=timeout)
        out, err = p.stdout.read(), p.stderr.read()
        for f in (p.stdin, p.stdout, p.stderr):
            if not f.closed:
                f.close()
        return p.returncode, out.decode(), err.decode()

    def test_header_and_answers(self):
        p = start(["--node", "n07"])
        self.addCleanup(p.kill)
        head = json.loads(p.stdout.readline())
        self.assertEqual(head["schema"], "stagebench.clock/1")
        self.assertEqual(head["node"], "n07")
        self.assertIsInstance(head["ntp_synchronized"], bool)
        self.assertIsInstance(head["maxerror_us"], int)
        self.assertIsInstance(head["esterror_us"], int)
        self.assertIsInstance(head["clocksource"], str)
        self.assertEqual(head["version"], sbtest.run(["--version"]).stdout.split()[1])
        self.assertRegex(head["build"], r"^%s-[0-9a-f]{16}$" % head["version"])
        rtts = []
        for k in range(20):
            token = "t%dX" % k + "a" * (k % 5)
            before = time.time_ns()
            p.stdin.write((token + "\n").encode())
            line = p.stdout.readline().decode()
            after = time.time_ns()
            self.assertRegex(line, r"^%s [0-9]+\n$" % token)
            at = int(line.split()[1])
            # the same machine's clock: the answer lies inside the exchange
            self.assertLessEqual(before, at)
            self.assertLessEqual(at, after)
            rtts.append(after - before)
        # answered at once, not at the end of input (this machine is shared: a loose bound)
        self.assertLess(min(rtts), 50e6, rtts)
        # two tokens in one write: two answers, in order
        p.stdin.write(b"A1\nB2\n")
        self.assertTrue(p.stdout.readline().startswith(b"A1 "))
        self.assertTrue(p.stdout.readline().startswith(b"B2 "))
        p.stdin.close()
        rc, out, err = self.finish(p)
        self.assertEqual((rc, out, err), (0, "", ""))

    def test_longest_token_and_last_line_without_newline(self):
        p = start(["--node", "n1"])
        out, err = p.communicate(("Z" * 32 + "\nlast").encode(), timeout=10)
        self.assertEqual(p.returncode, 0, err)
        lines = out.decode().splitlines()
        self.assertEqual(len(lines), 3)
        self.assertRegex(lines[1], r"^Z{32} [0-9]+$")
        self.assertRegex(lines[2], r"^last [0-9]+$")

    def test_malformed_lines_exit_2_saying_why(self):
        cases = [(b"ok1\nbad-token\n", "line 2: byte 0x2d is not a letter or a digit"),
                 (b"\n", "line 1 is empty"),
                 (b"x" * 33 + b"\n", "line 1: token longer than 32 characters"),
                 (b"a b\n", "line 1: byte 0x20"),
                 (b"tok\r\n", "line 1: byte 0x0d"),
                 (b"\x1b[2J\n", "line 1: byte 0x1b")]
        for data, why in cases:
            with self.subTest(data=data):
                p = start(["--node", "n1"])
                out, err = p.communicate(data, timeout=10)
                self.assertEqual(p.returncode, 2, err)
                self.assertIn(why, err.decode())
                self.assertEqual(len(err.decode().splitlines()), 1, err)
                # answers before the bad line were given
                self.assertEqual(len(out.decode().splitlines()), 1 + data.count(b"ok1"))

    def test_idle_limit_exits_3(self):
        p = start(["--node", "n1"], env={"STAGEBENCH_CLOCK_IDLE_S": "0.5"})
        self.addCleanup(p.kill)
        t0 = time.monotonic()
        p.stdout.readline()
        p.stdin.write(b"one\n")
        self.assertTrue(p.stdout.readline().startswith(b"one "))
        # the limit counts from the last input
        time.sleep(0.3)
        p.stdin.write(b"two\n")
        self.assertTrue(p.stdout.readline().startswith(b"two "))
        rc, out, err = self.finish(p)
        took = time.monotonic() - t0
        self.assertEqual(rc, 3, err)
        self.assertIn("no input for 0.5 s", err)
        self.assertGreater(took, 0.8)
        self.assertLess(took, 8)

    def test_usage(self):
        p = sbtest.run(["clock", "1a"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("'clock' takes no test names", p.stderr)
        p = sbtest.run(["clock", "--node", "-bad"])
        self.assertEqual(p.returncode, 2)
        p = sbtest.run(["--help"])
        self.assertIn("stagebench clock", p.stdout)
        p = sbtest.run(["clock", "--help"])
        self.assertEqual(p.returncode, 0)
        self.assertIn("usage: stagebench clock [OPTIONS]", p.stdout)

    def test_hangup_of_the_reader_fails_without_a_signal(self):
        p = start(["--node", "n1"])
        p.stdout.readline()
        p.stdout.close()
        p.stdin.write(b"x\n")
        p.stdin.close()
        p.wait(timeout=10)
        err = p.stderr.read().decode()
        p.stderr.close()
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("cannot write the answer", err)


class StatusClock(sbtest.TempDirCase):
    """`status STATE_DIR --format json --clock`: the state line, then `stagebench clock`."""

    def setUp(self):
        super().setUp()
        self.state = self.path("st")
        p = sbtest.run(["run", "1a", "--scale", "tiny", "--dir", self.stage(), "--node", "n07",
                        "--start-in", "60", "--detach", self.state])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.addCleanup(self.stop)

    def stop(self):
        if sbtest.run(["stop", self.state, "--wait", "20"]).returncode != 0:
            with open(os.path.join(self.state, "state")) as f:
                pid = int([l.split()[1] for l in f if l.startswith("pid ")][0])
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def start(self, extra=(), env=None):
        full_env = dict(os.environ)
        full_env.update(env or {})
        return subprocess.Popen([sbtest.BINARY, "status", self.state, "--format", "json",
                                 "--clock"] + list(extra), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
                                env=full_env)

    def test_state_line_then_answers_until_end_of_input(self):
        p = self.start()
        self.addCleanup(p.kill)
        st = json.loads(p.stdout.readline())
        self.assertEqual((st["schema"], st["status"], st["node"]),
                         ("stagebench.state/1", "armed", "n07"))
        head = json.loads(p.stdout.readline())
        self.assertEqual((head["schema"], head["node"]), ("stagebench.clock/1", "n07"))
        self.assertIsInstance(head["ntp_synchronized"], bool)
        self.assertEqual(head["version"], sbtest.run(["--version"]).stdout.split()[1])
        for k in range(8):
            token = "s%d" % k
            before = time.time_ns()
            p.stdin.write((token + "\n").encode())
            line = p.stdout.readline().decode()
            after = time.time_ns()
            self.assertRegex(line, r"^%s [0-9]+\n$" % token)
            self.assertLessEqual(before, int(line.split()[1]))
            self.assertLessEqual(int(line.split()[1]), after)
        p.stdin.close()
        p.wait(timeout=10)
        rest, err = p.stdout.read(), p.stderr.read()
        p.stdout.close()
        p.stderr.close()
        self.assertEqual((p.returncode, rest, err), (0, b"", b""))

    def test_idle_limit_and_a_bad_token_end_it_as_clock_does(self):
        p = self.start(env={"STAGEBENCH_CLOCK_IDLE_S": "0.5"})
        self.addCleanup(p.kill)
        self.assertEqual(json.loads(p.stdout.readline())["schema"], "stagebench.state/1")
        self.assertEqual(json.loads(p.stdout.readline())["schema"], "stagebench.clock/1")
        p.wait(timeout=10)
        err = p.stderr.read().decode()
        for f in (p.stdin, p.stdout, p.stderr):
            f.close()
        self.assertEqual(p.returncode, 3, err)
        self.assertIn("no input for 0.5 s", err)
        p = self.start()
        out, err = p.communicate(b"ok1\nbad-token\n", timeout=20)
        self.assertEqual(p.returncode, 2, err)
        self.assertEqual(len(out.decode().splitlines()), 3)  # state, header, one answer
        self.assertIn("line 2: byte 0x2d", err.decode())

    def test_clock_needs_json(self):
        for fmt in ("text", "csv"):
            p = sbtest.run(["status", self.state, "--clock", "--format", fmt])
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stdout, "")
            self.assertIn("--clock follows the state's JSON line", p.stderr)
        p = sbtest.run(["info", "--clock"])
        self.assertEqual(p.returncode, 2, p.stderr)


if __name__ == "__main__":
    sbtest.setup_from_argv()
    unittest.main(verbosity=2)
