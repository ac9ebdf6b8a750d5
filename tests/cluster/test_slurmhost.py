# SPDX-License-Identifier: MIT
"""The private Slurm cluster of slurmhost.py, for real: munged, slurmctld and two slurmd with 2
and 1 CPUs on this host. srun, salloc and sbatch --wait run on both nodes; what the tasks of a
step see when srun is interrupted is measured (signal handlers and a heartbeat) and printed; the
cluster is stopped without a trace, also when the test itself gets SIGTERM or SIGINT.

Run as `python3 FILE BINARY SOURCE_DIR` (the binary is not used: this tests the harness). Exits
77 with the reason when the daemons cannot start here.

What srun (Slurm 22.05.8, Debian 12) does with signals, as this test measures and asserts it
(stdin not a terminal, KillWait=10):
- one SIGINT: srun prints "interrupt (one more within 1 sec to abort)" and the tasks' states;
  nothing at all reaches the tasks, which run on to their end (srun exits with their status).
- a second SIGINT within 1 s (the launcher's two, 0.2 s apart): srun prints "sending Ctrl-C to
  StepId=J.S", every task is sent one SIGINT, then "forcing job termination": the task is
  killed within milliseconds (its 5 ms heartbeat stops 2-15 ms after the SIGINT), not KillWait
  later, sometimes before its Python SIGINT handler has even run (seen in 1 of ~5 runs), and
  no SIGCONT or SIGTERM reaches its handlers first (strace of a task once showed
  SIGINT, then SIGKILL 6 ms later, nothing between: the man page's "SIGCONT, SIGTERM, and
  SIGKILL" is not what happens); srun exits 137. A task has
  milliseconds to act on the SIGINT: the launcher's double SIGINT is a SIGKILL in practice.
- SIGTERM to srun: "forcing job termination", the tasks are killed within ~10 ms with no
  signal seen before; srun exits 137.
- `--quit-on-interrupt` and one SIGINT: like the second SIGINT above (SIGINT, SIGKILL within
  milliseconds).
- `scancel --signal=INT J.S` (or SIGUSR1 to srun, forwarded as is): every task gets exactly
  that one signal within ~20 ms and the step goes on; nothing is killed, srun exits with the
  tasks' status.
So a launcher that wants its nodes to stop cleanly must not rely on srun's Ctrl-C: it signals
the step with `scancel --signal=INT` (or sends srun SIGUSR1/2 and lets the node treat it as a
stop), then waits.
"""
import glob
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import unittest

import clustertest as ct
import slurmhost

CLUSTER = None
SKIP = None
# System places Debian's munge and Slurm use by default; none may change.
SYSTEM_PATHS = ["/run", "/var/run", "/var/spool", "/var/lib/munge", "/var/log/munge",
                "/var/log/slurm", "/var/lib/slurm", "/etc/slurm", "/etc/munge", "/dev/shm"]

TASK = textwrap.dedent("""\
    import os, signal, sys, time
    out = open(sys.argv[1] + "." + os.environ["SLURM_PROCID"], "a")
    def note(text):
        out.write(text + "\\n")
        out.flush()
    def handler(signum, _frame):
        note("sig %s %.6f" % (signal.Signals(signum).name, time.time()))
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
              signal.SIGUSR2, signal.SIGCONT):
        signal.signal(s, handler)
    note("ready %.6f %s %d" % (time.time(), os.environ.get("SLURMD_NODENAME"), os.getpid()))
    beat = os.open(sys.argv[1] + ".alive." + os.environ["SLURM_PROCID"],
                   os.O_WRONLY | os.O_CREAT, 0o600)
    end = time.time() + float(sys.argv[2])
    while time.time() < end:
        os.pwrite(beat, b"%.6f" % time.time(), 0)  # the last one is about when it died
        time.sleep(0.005)
    note("exit %.6f" % time.time())
    """)


def snapshot():
    """Names, types and sizes under the system paths (what a daemon could have left)."""
    out = set()
    for top in SYSTEM_PATHS:
        for root, dirs, files in os.walk(top):
            for n in dirs + files:
                p = os.path.join(root, n)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                out.add((p, st.st_mode, st.st_size if not os.path.isdir(p) else 0))
    return out


def setUpModule():
    global CLUSTER, SKIP, BEFORE
    BEFORE = snapshot()
    CLUSTER = slurmhost.SlurmHost(cpus=(2, 1))
    CLUSTER.__enter__()
    if CLUSTER.error:
        SKIP = CLUSTER.error
    else:
        print("\nslurmhost: munged, slurmctld and 2 slurmd idle after %.2f s"
              % CLUSTER.startup_s, file=sys.stderr)


def tearDownModule():
    CLUSTER.close()
    left = CLUSTER.left_behind()
    changed = sorted(e[0] for e in snapshot() ^ BEFORE
                     if "slurm" in e[0].lower() or "munge" in e[0].lower())
    assert left == [] and changed == [], "left behind: %s; changed: %s" % (left, changed)


class Slurm(unittest.TestCase):
    def setUp(self):
        if SKIP:
            self.skipTest(SKIP)

    def run_ok(self, cmd, timeout=60):
        rc, out, err = CLUSTER.run(cmd, timeout=timeout, cwd=CLUSTER.dir)
        self.assertEqual(rc, 0, "%s: exit %s\nstdout:\n%s\nstderr:\n%s" % (cmd, rc, out, err))
        return out, err

    def test_nodes(self):
        out, _ = self.run_ok(["sinfo", "-N", "-h", "-o", "%N %c %t"])
        self.assertEqual(out.split("\n")[:2], ["n1 2 idle", "n2 1 idle"])
        out, _ = self.run_ok(["scontrol", "show", "config"])
        self.assertIn(CLUSTER.dir, out)  # the private config, not /etc/slurm

    def test_srun_two_nodes(self):
        out, _ = self.run_ok(["srun", "-N2", "--label", "hostname"])
        self.assertEqual(sorted(out.splitlines()),
                         ["0: %s" % CLUSTER.host, "1: %s" % CLUSTER.host])
        out, _ = self.run_ok(["srun", "-N2", "--label", "printenv", "SLURMD_NODENAME"])
        self.assertEqual(sorted(out.splitlines()), ["0: n1", "1: n2"])

    def test_salloc(self):
        out, err = self.run_ok(["salloc", "-N2", "srun", "--label", "printenv",
                                "SLURMD_NODENAME"])
        self.assertEqual(sorted(out.splitlines()), ["0: n1", "1: n2"])
        self.assertRegex(err, r"Granted job allocation \d+")

    def test_sbatch_wait(self):
        script = CLUSTER.path("job.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n"
                    "echo \"cpus per node: $SLURM_JOB_CPUS_PER_NODE on node: "
                    "$SLURM_CPUS_ON_NODE\"\n"
                    "srun --label printenv SLURMD_NODENAME\n"
                    # the batch host's CPU count for every node: what broke the launcher
                    "srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --cpu-bind=none "
                    "--cpus-per-task=$SLURM_CPUS_ON_NODE true\n"
                    "echo \"uniform cpus-per-task: exit $?\"\n")
        out_path = CLUSTER.path("job.out")
        self.run_ok(["sbatch", "--wait", "--exclusive", "-N2", "-o", out_path, script], timeout=120)
        with open(out_path) as f:
            text = f.read()
        self.assertIn("cpus per node: 2,1 on node: 2\n", text)
        self.assertIn("0: n1\n", text)
        self.assertIn("1: n2\n", text)
        self.assertRegex(text, "srun: error: .*(Requested node configuration is not available|"
                               "More processors requested than permitted)")
        self.assertIn("uniform cpus-per-task: exit 1\n", text)
        print("\nsbatch --wait -N2 job.sh printed:\n  %s" % text.strip().replace("\n", "\n  "),
              file=sys.stderr)

    # --- signals -----------------------------------------------------------------------------
    def signal_step(self, name, send, srun_args=(), duration=4.0):
        """Start a 2-task step of TASK, wait until both tasks are ready, then send(popen,
        jobid) at t=0; return (srun status, srun stderr, {task: [(event, seconds)]})."""
        task = CLUSTER.path("task.py")
        if not os.path.exists(task):
            with open(task, "w") as f:
                f.write(TASK)
        base = CLUSTER.path("sig-" + name.replace(" ", "_"))
        p = subprocess.Popen(["srun", "-N2", "--label"] + list(srun_args) +
                             ["/usr/bin/python3", task, base, str(duration)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=CLUSTER.env(), cwd=CLUSTER.dir)
        try:
            deadline = time.monotonic() + 60
            while len([f for f in glob.glob(base + ".[01]") if os.path.getsize(f)]) < 2:
                self.assertIsNone(p.poll(), "srun ended before its tasks were ready")
                self.assertLess(time.monotonic(), deadline, "the tasks did not start")
                time.sleep(0.05)
            time.sleep(0.3)
            jobid = self.step_of(p)
            t0 = time.time()
            send(p, jobid)
            _out, err = p.communicate(timeout=60)
            err = err.decode("utf-8", "replace")
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        events = {}
        for t in (0, 1):
            ev = events.setdefault(t, [])
            with open("%s.%d" % (base, t)) as f:
                for line in f:
                    w = line.split()
                    if w[0] == "sig":
                        ev.append(("SIG" + w[1][3:], float(w[2]) - t0))
                    elif w[0] == "exit":
                        ev.append(("exit 0", float(w[1]) - t0))
            ev.sort(key=lambda e: e[1])
            if not ev or ev[-1][0] != "exit 0":  # killed: the end, whatever the heartbeat
                with open("%s.alive.%d" % (base, t)) as f:
                    ev.append(("killed (last alive)", float(f.read()) - t0))
        srun = [l for l in err.splitlines() if l.strip()]
        report = "%s: srun exit %s; srun said: %s" % (name, p.returncode, " | ".join(srun))
        for t in sorted(events):
            report += "\n  task %d: %s" % (t, ", ".join("%s at %+.3f s" % e for e in events[t]))
        print("\n" + report, file=sys.stderr)
        return p.returncode, err, events

    def step_of(self, p):
        rc, out, _err = CLUSTER.run(["squeue", "-h", "-s", "-o", "%i"], timeout=10)
        steps = [s for s in out.split() if re.match(r"^\d+\.\d+$", s)]
        self.assertEqual(len(steps), 1, out)
        return steps[0]

    def test_sigint_once_reaches_no_task(self):
        rc, err, events = self.signal_step("one SIGINT", lambda p, _j: p.send_signal(
            signal.SIGINT))
        self.assertIn("interrupt (one more within 1 sec to abort)", err)
        self.assertEqual(rc, 0, err)
        for t in (0, 1):
            self.assertEqual([e[0] for e in events[t]], ["exit 0"], events)

    def test_sigint_twice_sends_sigint_then_sigkill(self):
        def send(p, _jobid):
            p.send_signal(signal.SIGINT)
            time.sleep(0.2)
            p.send_signal(signal.SIGINT)

        rc, err, events = self.signal_step("two SIGINTs 0.2 s apart", send)
        self.assertIn("sending Ctrl-C to StepId=", err)
        self.assertIn("forcing job termination", err)
        self.assertNotEqual(rc, 0)
        for t in (0, 1):
            # each task is sent one SIGINT and killed milliseconds later, sometimes before its
            # handler ran: no SIGCONT, no SIGTERM
            names = [e[0] for e in events[t]]
            self.assertIn(names, (["SIGINT", "killed (last alive)"], ["killed (last alive)"]),
                          events)
            self.assertLess(events[t][-1][1], 0.2 + 5.0, "killed %.3f s after the first "
                            "SIGINT" % events[t][-1][1])

    def test_sigterm_kills_at_once(self):
        rc, err, events = self.signal_step("SIGTERM", lambda p, _j: p.send_signal(
            signal.SIGTERM))
        self.assertIn("forcing job termination", err)
        self.assertNotEqual(rc, 0)
        for t in (0, 1):
            self.assertEqual([e[0] for e in events[t]], ["killed (last alive)"], events)

    def test_quit_on_interrupt(self):
        rc, err, events = self.signal_step("--quit-on-interrupt, one SIGINT",
                                           lambda p, _j: p.send_signal(signal.SIGINT),
                                           srun_args=["--quit-on-interrupt"])
        self.assertIn("sending Ctrl-C to StepId=", err)
        self.assertNotEqual(rc, 0)
        for t in (0, 1):
            self.assertIn([e[0] for e in events[t]],
                          (["SIGINT", "killed (last alive)"], ["killed (last alive)"]), events)

    def test_scancel_signal_int(self):
        def send(_p, jobid):
            self.run_ok(["scancel", "--signal=INT", jobid])

        rc, err, events = self.signal_step("scancel --signal=INT STEP", send)
        self.assertEqual(rc, 0, err)
        for t in (0, 1):
            self.assertEqual([e[0] for e in events[t]], ["SIGINT", "exit 0"], events)

    def test_sigusr1_forwarded(self):
        rc, err, events = self.signal_step("SIGUSR1", lambda p, _j: p.send_signal(
            signal.SIGUSR1))
        self.assertEqual(rc, 0, err)
        for t in (0, 1):
            self.assertEqual([e[0] for e in events[t]], ["SIGUSR1", "exit 0"], events)


CHILD = textwrap.dedent("""\
    import signal, subprocess, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started ignoring it
    sys.path.insert(0, sys.argv[1])
    import slurmhost
    with slurmhost.SlurmHost() as c:
        if c.error:
            print("ERROR " + c.error, flush=True)
            sys.exit(77)
        print("UP " + c.dir, flush=True)
        step = subprocess.Popen(["srun", "-N2", "sleep", "300"], env=c.env(),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while "." not in c.run(["squeue", "-h", "-s", "-o", "%i"])[1]:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        print("STEP", flush=True)
        time.sleep(300)
    """)


class Interrupted(unittest.TestCase):
    """A test holding a cluster with a running step gets SIGTERM or SIGINT: everything goes."""

    def setUp(self):
        if SKIP:
            self.skipTest(SKIP)

    def interrupt(self, sig):
        here = os.path.dirname(os.path.abspath(__file__))
        p = subprocess.Popen([sys.executable, "-c", CHILD, here], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            seen = []
            while not seen or not seen[-1].startswith(("UP ", "ERROR ")) and seen[-1]:
                seen.append(p.stdout.readline().decode())
            self.assertTrue(seen[-1].startswith("UP "), "the child printed: %s" % seen)
            d = seen[-1].split(None, 1)[1].strip()
            self.assertEqual(p.stdout.readline().decode(), "STEP\n")
            self.assertTrue(slurmhost.marked_processes(d))
            t0 = time.monotonic()
            p.send_signal(sig)
            _out, err = p.communicate(timeout=90)
            took = time.monotonic() - t0
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        err = err.decode()
        self.assertEqual(slurmhost.marked_processes(d), [])
        self.assertFalse(os.path.lexists(d))
        print("\n%s to a test holding the cluster and a step: all gone in %.2f s, exit %d"
              % (signal.Signals(sig).name, took, p.returncode), file=sys.stderr)
        return p.returncode, err

    def test_sigterm(self):
        rc, _err = self.interrupt(signal.SIGTERM)
        self.assertEqual(rc, -signal.SIGTERM)  # it dies of the signal, after the cleanup

    def test_sigint(self):
        rc, err = self.interrupt(signal.SIGINT)
        self.assertIn(rc, (1, -signal.SIGINT))  # Python 3.8+ dies of the SIGINT, 3.6 exits 1
        self.assertIn("KeyboardInterrupt", err)


if __name__ == "__main__":
    ct.setup_from_argv()
    result = unittest.main(exit=False).result
    if SKIP:
        print("skipped: the private Slurm cluster cannot start here: %s" % SKIP)
        sys.exit(77)
    sys.exit(0 if result.wasSuccessful() else 1)
