# SPDX-License-Identifier: MIT
"""The launcher through `--launcher srun` within real Slurm allocations (slurmhost.py: munged,
slurmctld and two slurmd on this host, n1 with 2 CPUs and n2 with 1): salloc and sbatch, a
normal run, a Ctrl-C and a SIGTERM to the launcher while the nodes wait for their start (one
signal to each task through scancel: every node writes its summary, no temporary file is
left), and the two nodes with different CPU counts in one allocation (sbatch on n1 used to ask
n2 for n1's 2 CPUs a task and fail whole)."""
import glob
import os
import signal
import stat
import subprocess
import sys
import time
import unittest

import clustertest as ct
import slurmhost


def setUpModule():
    global CLUSTER
    CLUSTER = slurmhost.up_or_skip(ct.skip_file, cpus=(2, 1))


def tearDownModule():
    CLUSTER.close_clean()


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    st = f.read()
            except OSError:
                continue
            if int(st[st.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(d))
    return out


class SlurmLaunch(ct.TempDirCase):
    def env(self):
        e = CLUSTER.env()
        e.pop("STAGEBENCH_NODE", None)
        e["STAGEBENCH_CATALOGUE"] = os.environ.get("STAGEBENCH_CATALOGUE", "")
        return e

    def launcher(self, run_id, extra=(), tests=("1a",)):
        os.makedirs(self.path("stage"), exist_ok=True)
        return [sys.executable, ct.script("stagebench-cluster"), "--launcher", "srun",
                "--stagebench", ct.BINARY, "--dir", self.path("stage"),
                "--results", self.path("results"), "--run-id", run_id, "--scale", "tiny",
                "--max-offset", "5"] + list(extra) + list(tests)

    def check_ok(self, run_id, text):
        rundir = self.path("results", run_id)
        for n in ("n1", "n2"):
            s = ct.load(os.path.join(rundir, "%s.1a.rep1.json" % n))
            self.assertEqual(s["status"], "ok", text)
        rep = ct.load(os.path.join(rundir, "report.json"))
        self.assertEqual(rep["parts"][0]["nodes_ok"], 2, text)
        self.assertNotIn("outside a Slurm allocation", text)
        return rundir

    def test_salloc_two_cpu_counts(self):
        """salloc --exclusive on n1 (2 CPUs) and n2 (1): SLURM_JOB_CPUS_PER_NODE is 2,1, every
        round runs on both nodes, no warning of fewer threads than cores."""
        p = subprocess.run(["salloc", "-N2", "--exclusive"] + self.launcher("salloc"),
                           env=self.env(), cwd=CLUSTER.dir, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=300)
        text = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, text)
        self.check_ok("salloc", text)
        self.assertNotIn("fewer threads than it has cores", text)

    def test_sbatch_two_cpu_counts(self):
        """sbatch --exclusive, the batch script on n1 (2 CPUs): the run reaches n2 (1 CPU)."""
        script = self.path("job.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\nexec %s\n" % " ".join(
                "'%s'" % a for a in self.launcher("sbatch")))
        os.chmod(script, stat.S_IRWXU)
        out = self.path("job.out")
        p = subprocess.run(["sbatch", "--wait", "-N2", "--exclusive", "-o", out, script],
                           env=self.env(), cwd=CLUSTER.dir, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=300)
        with open(out) as f:
            text = f.read()
        self.assertEqual(p.returncode, 0, p.stderr + text)
        self.check_ok("sbatch", text)

    def test_not_exclusive_warns(self):
        """salloc -N2 without --exclusive holds 1 of n1's 2 CPUs: said, in the report too."""
        p = subprocess.run(["salloc", "-N2"] + self.launcher("shared"),
                           env=self.env(), cwd=CLUSTER.dir, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=300)
        text = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, text)
        want = ("warning: n1: the Slurm allocation holds 1 of its 2 CPUs (not exclusive: "
                "sbatch/salloc --exclusive): it runs fewer threads than it has cores")
        self.assertIn(want, p.stderr)
        self.assertIn(want, p.stdout)  # the report

    def test_outside_allocation_warns(self):
        p = subprocess.run(self.launcher("alone", ["-w", "n[1-2]"]), env=self.env(),
                           cwd=CLUSTER.dir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("warning: srun outside a Slurm allocation: every round is a job of its "
                      "own", p.stderr)

    def interrupt(self, sig, run_id):
        """sig to the launcher (salloc's child) while both nodes wait for the start of 4a."""
        proc = subprocess.Popen(["salloc", "-N2", "--exclusive"] + self.launcher(
            run_id, ["--lead", "15"], ["4a"]), env=self.env(), cwd=CLUSTER.dir,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True)
        rundir = self.path("results", run_id)
        deadline = time.monotonic() + 120
        started = False
        while time.monotonic() < deadline and not started:
            time.sleep(0.2)
            try:
                man = ct.load(os.path.join(rundir, "manifest.json"))
            except (OSError, ValueError):
                continue
            started = any(r["kind"] == "run" for r in man["rounds"])
        self.assertTrue(started, "no run round within 120 s")
        time.sleep(4.0)  # the step is running, the nodes set up and waiting
        kids = children(proc.pid)
        self.assertEqual(len(kids), 1, kids)
        os.kill(kids[0], sig)
        out, err = proc.communicate(timeout=180)
        want = 130 if sig == signal.SIGINT else 143
        self.assertEqual(proc.returncode, want, out + err)
        for n in ("n1", "n2"):
            s = ct.load(os.path.join(rundir, "%s.4a.rep1.json" % n))
            self.assertEqual(s["status"], "interrupted", (n, out + err))
        left = [f for f in os.listdir(rundir) if ".tmp" in f]
        self.assertEqual(left, [])
        self.assertEqual(ct.load(os.path.join(rundir, "manifest.json"))["interrupted"],
                         signal.Signals(sig).name)
        self.assertEqual(glob.glob(os.path.join(self.path("stage"), "**", "*.tmp*"),
                                   recursive=True), [])

    def test_scancel_mid_part(self):
        """scancel of the allocation while test 4's first part waits for its start: the
        launcher sees the job's end, stops its rounds with the cause named (not a guess such
        as an older stagebench), keeps what arrived, finishes the manifest and reports."""
        # the nodes' scratch directories stay when the job is gone (no round can reach them):
        # this test's own
        proc = subprocess.Popen(["salloc", "-N2", "--exclusive"] + self.launcher(
            "cancel", ["--lead", "15", "--scratch", self.path("scratch")], ["4"]),
            env=self.env(), cwd=CLUSTER.dir,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        rundir = self.path("results", "cancel")
        deadline = time.monotonic() + 120
        started = False
        while time.monotonic() < deadline and not started:
            time.sleep(0.2)
            try:
                man = ct.load(os.path.join(rundir, "manifest.json"))
            except (OSError, ValueError):
                continue
            started = any(r["kind"] == "run" for r in man["rounds"])
        self.assertTrue(started, "no run round within 120 s")
        time.sleep(3.0)
        jobs = CLUSTER.run(["squeue", "-h", "-o", "%i"])[1].split()
        self.assertEqual(len(jobs), 1, jobs)
        CLUSTER.run(["scancel", jobs[0]])
        out, err = proc.communicate(timeout=180)
        text = out + err
        self.assertNotIn("Traceback", text)
        self.assertNotIn("an older stagebench", text)
        self.assertIn("the Slurm job %s ended" % jobs[0], err)
        man = ct.load(os.path.join(rundir, "manifest.json"))
        self.assertIsNotNone(man["finished_at"], text)
        self.assertIn("the Slurm job %s ended" % jobs[0], man["interrupted"])
        runs = [r["part"] for r in man["rounds"] if r["kind"] == "run"]
        self.assertEqual(runs, ["4a"], "rounds went on against the ended job")
        with open(os.path.join(rundir, "report.txt")) as f:
            self.assertIn("the Slurm job %s ended" % jobs[0], f.read())

    def test_ctrl_c(self):
        self.interrupt(signal.SIGINT, "int")

    def test_sigterm(self):
        self.interrupt(signal.SIGTERM, "term")


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
