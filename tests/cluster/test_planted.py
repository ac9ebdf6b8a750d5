# SPDX-License-Identifier: MIT
"""Nothing another user plants is followed or trusted (issue 13): the other user is played by
`nobody` (runuser), the tools run as the user running the tests (root on the CI machines).

The node-local scratch directory: its name is unpredictable; the remote scripts that the
launcher runs on each node (the real text, run with the real sh) refuse a directory another
user made, a link, or one open to others, and write, remove and signal nothing there; the stop
signal goes only to the process that the run's pid file names, when it still is that process.
The results run directory, sim/bin, logs and incoming: created fresh, never through what
another user made. The collector's outputs (issue 21): never written into a directory another
user owns, however fast they swap links in; in a sticky directory open to all, written safely
while they try, and never over their file."""
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import unittest

import clustertest as ct


def nobody(*cmd):
    """Run cmd as the other user; CompletedProcess."""
    return subprocess.run(["runuser", "-u", "nobody", "--"] + list(cmd),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60)


def can_play_nobody():
    if os.geteuid() != 0:
        return "needs root to play another user with runuser"
    if not shutil.which("runuser"):
        return "runuser is not installed"
    return None


class Planted(ct.TempDirCase):
    def setUp(self):
        super().setUp()
        why = can_play_nobody()
        if why:
            ct.skip_file(why)
        from stagebench import remote
        self.remote = remote
        # a shared directory like /tmp: anyone may create, nobody may remove another's
        self.shared = self.path("shared")
        os.mkdir(self.shared)
        os.chmod(self.shared, 0o1777)
        os.chmod(self.dir, 0o755)
        # the other user's files, which nothing must touch
        self.victim_dir = self.path("shared", "victim")
        self.assertEqual(nobody("mkdir", self.victim_dir).returncode, 0)
        self.victim = os.path.join(self.victim_dir, "victim.txt")
        self.important = os.path.join(self.victim_dir, "important.json")
        nobody("sh", "-c", 'echo precious >"$1"; echo "{}" >"$2"; ln -s "$1" "$3/pid"; '
               'ln -s "$1" "$3/nodeA.pid"', "sh", self.victim, self.important,
               self.victim_dir)
        self.env = dict(ct.env(), STAGEBENCH_NODE="nodeA")

    def victim_untouched(self):
        with open(self.victim) as f:
            self.assertEqual(f.read(), "precious\n")
        self.assertTrue(os.path.exists(self.important))
        self.assertEqual(os.stat(self.victim).st_uid, os.stat(self.victim_dir).st_uid)

    def sh(self, action, *args, **kw):
        """The launcher's remote.sh action, as a node's shell runs it."""
        return subprocess.run(self.remote.command(action, *args), env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=60, **kw)

    def run_script_at(self, scratch, marker):
        """The launcher's run wrapper with a command that leaves a marker when it runs."""
        return self.sh("run", "", "1a.rep1.json", scratch, "sh", "-c",
                       'touch "$0"; :', marker, "--start-at", "1")

    def test_scratch_name_is_unpredictable(self):
        names = []
        for _ in range(2):
            p = ct.run_script("stagebench-cluster", [
                "-w", "nodeA", "--stagebench", ct.BINARY, "--results", self.path("results"),
                "--run-id", "same", "--scratch", self.shared, "--dry-run", "1a"])
            self.assertEqual(p.returncode, 0, p.stderr)
            m = re.search(re.escape(self.shared) + r"/(stagebench-same-[0-9a-f]{16})/", p.stdout)
            self.assertIsNotNone(m, p.stdout)
            names.append(m.group(1))
        self.assertNotEqual(names[0], names[1])

    def test_scratch_made_by_another_user_is_refused(self):
        scratch = os.path.join(self.shared, "stagebench-run-planted")
        self.assertEqual(nobody("mkdir", "-m", "0777", scratch).returncode, 0)
        nobody("ln", "-s", self.victim, os.path.join(scratch, "nodeA.pid"))
        marker = self.path("ran")
        p = self.run_script_at(scratch, marker)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("is not a private directory of this user", p.stderr)
        self.assertFalse(os.path.exists(marker), "the command ran in a planted scratch")
        self.victim_untouched()
        self.assertEqual(os.listdir(scratch), ["nodeA.pid"])
        # the end-of-run removal and the stop leave it alone too
        self.sh("scratch-rm", scratch)
        self.sh("stop", scratch, "TERM")
        self.assertEqual(os.listdir(scratch), ["nodeA.pid"])
        self.victim_untouched()

    def test_scratch_link_is_refused(self):
        scratch = os.path.join(self.shared, "stagebench-run-link")
        self.assertEqual(nobody("ln", "-s", self.victim_dir, scratch).returncode, 0)
        marker = self.path("ran")
        p = self.run_script_at(scratch, marker)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertFalse(os.path.exists(marker))
        self.sh("scratch-rm", scratch)
        self.victim_untouched()
        self.assertTrue(os.path.islink(scratch))

    def test_scratch_open_to_others_is_refused(self):
        scratch = os.path.join(self.shared, "stagebench-run-open")
        os.mkdir(scratch)
        os.chmod(scratch, 0o755)
        p = self.run_script_at(scratch, self.path("ran"))
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(os.listdir(scratch), [])

    def test_scratch_fresh_private_pid_and_stop(self):
        """A fresh scratch: 0700, the pid file names the process and its start time; the stop
        signals it; a pid file naming another process (pid reused, or not a stagebench run) is
        not followed; the removal leaves nothing."""
        scratch = os.path.join(self.shared, "stagebench-run-fresh")
        proc = subprocess.Popen(self.remote.command("run", "", "1a.rep1.json", scratch,
                                                    sys.executable, "-c",
                                                    "import time; time.sleep(60)",
                                                    "--start-at", "1"),
                                env=self.env)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        pidfile = os.path.join(scratch, "nodeA.pid")
        deadline = time.monotonic() + 30
        while not os.path.exists(pidfile) and time.monotonic() < deadline:
            time.sleep(0.05)
        st = os.lstat(scratch)
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)
        with open(pidfile) as f:
            pid, start = f.read().split()
        self.assertEqual(int(pid), proc.pid)
        with open("/proc/%d/stat" % proc.pid) as f:
            self.assertEqual(f.read().rsplit(")", 1)[1].split()[19], start)
        # another process of ours, not a run: the pid file rewritten to name it
        other = subprocess.Popen(["sleep", "60"])
        self.addCleanup(other.wait)
        self.addCleanup(other.kill)
        with open("/proc/%d/stat" % other.pid) as f:
            other_start = f.read().rsplit(")", 1)[1].split()[19]
        for text in ("%d %s\n" % (other.pid, other_start),  # not a stagebench run
                     "%d 1\n" % proc.pid,                  # same pid, another start time
                     "%d\n" % proc.pid, "1 x\n", "$(id)\n"):
            with open(pidfile, "w") as f:
                f.write(text)
            self.assertEqual(self.sh("stop", scratch, "TERM").returncode, 0)
            time.sleep(0.2)
            self.assertIsNone(proc.poll(), "signalled through " + text)
            self.assertIsNone(other.poll(), "signalled through " + text)
        with open(pidfile, "w") as f:
            f.write("%s %s\n" % (pid, start))
        self.sh("stop", scratch, "TERM")
        self.assertEqual(proc.wait(10), -15)
        self.assertIsNone(other.poll())
        self.sh("scratch-rm", scratch)
        self.assertFalse(os.path.lexists(scratch))

    # -- the results run directory, sim/bin, logs, incoming

    def plant_run_dir(self, run_id):
        """The other user makes RESULTS/<run id> beforehand (run ids are predictable), with
        logs/ and sim/bin/ holding links to the victim file and a wrapper of their own."""
        d = os.path.join(self.shared, run_id)
        marker = self.path("shared", "owned-" + run_id)
        script = ('mkdir -p "$1/logs" "$1/sim/bin" "$1/incoming" && chmod -R 0777 "$1" && '
                  'ln -s "$2" "$1/logs/001-info.nodes" && ln -s "$2" "$1/manifest.json.tmp" && '
                  'for n in node1 node2; do printf "#!/bin/sh\\nid >%s\\n" "$3" >"$1/sim/bin/$n"; '
                  'chmod 0777 "$1/sim/bin/$n"; done')
        p = nobody("sh", "-c", script, "sh", d, self.victim, marker)
        self.assertEqual(p.returncode, 0, p.stderr)
        return d, marker

    def assert_untouched(self, d, marker):
        self.victim_untouched()
        self.assertFalse(os.path.exists(marker), "a planted wrapper ran")
        for root, dirs, files in os.walk(d):
            for n in dirs + files:
                self.assertNotEqual(os.lstat(os.path.join(root, n)).st_uid, 0,
                                    "%s written in a planted directory" % n)

    def test_sim_refuses_planted_run_dir(self):
        d, marker = self.plant_run_dir("sim-planted")
        p = ct.run_script("stagebench-sim", [
            "--nodes", "2", "--servers", "1", "--dir", self.path("stage"), "--results", self.shared,
            "--stagebench", ct.BINARY, "--scale", "tiny", "--run-id", "sim-planted", "1a"])
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("belongs to uid", p.stderr)
        self.assert_untouched(d, marker)

    def test_sim_refuses_run_dir_open_to_others(self):
        """A run directory of ours that others can write into is not adopted: its sim/bin
        would be executed."""
        d = os.path.join(self.shared, "sim-old")
        os.mkdir(d)
        os.chmod(d, 0o777)
        p = ct.run_script("stagebench-sim", [
            "--nodes", "2", "--servers", "1", "--dir", self.path("stage"), "--results", self.shared,
            "--stagebench", ct.BINARY, "--scale", "tiny", "--run-id", "sim-old", "1a"])
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertEqual(os.listdir(d), [])

    def cluster(self, run_id):
        return ct.run_script("stagebench-cluster", [
            "-w", "nodeA", "--exec", "--stagebench", ct.BINARY, "--dir", self.path("stage"),
            "--results", self.shared, "--run-id", run_id, "--scale", "tiny", "1a"])

    def test_cluster_refuses_planted_run_dir(self):
        d, marker = self.plant_run_dir("cl-planted")
        p = self.cluster("cl-planted")
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("belongs to uid", p.stderr)
        self.assert_untouched(d, marker)

    def test_cluster_refuses_run_dir_open_to_others(self):
        """A run directory of ours that others can write into is not adopted: anything in
        it may be theirs."""
        d = os.path.join(self.shared, "cl-open")
        os.mkdir(d)
        os.chmod(d, 0o777)
        p = self.cluster("cl-open")
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("is writable by other users", p.stderr)
        self.assertEqual(os.listdir(d), [])

    # -- the collector's outputs, with the other user racing links in

    RACER = r"""
import os, sys
d, secret, stop = sys.argv[1:4]
swapped = 0
while not os.path.exists(stop):
    try:
        names = os.listdir(d)
    except OSError:
        names = []
    for n in names:
        if n.endswith(".tmp"):
            p = os.path.join(d, n)
            try:
                os.rename(p, p + ".taken")
                os.symlink(secret, p)
                swapped += 1
            except OSError:
                pass
print(swapped)
"""

    def summaries(self):
        """A run of two nodes' summaries (1a), written by the real binary."""
        run = self.path("run")
        os.mkdir(run)
        os.chmod(run, 0o755)
        os.mkdir(self.path("stage"))
        for n, (_p, rc, err) in ct.run_nodes(["n1", "n2"], ["1a"], run, self.path("stage"),
                                             start_in=2.0).items():
            self.assertEqual(rc, 0, err)
        return run

    def secret(self):
        """A root-only file that a link may point at: its mode and text must stay."""
        path = self.path("secret")
        with open(path, "w") as f:
            f.write("root only\n")
        os.chmod(path, 0o600)
        return path

    def secret_untouched(self, path):
        st = os.lstat(path)
        self.assertEqual((stat.S_IMODE(st.st_mode), st.st_uid), (0o600, 0),
                         "the mode of a file a link names was changed")
        with open(path) as f:
            self.assertEqual(f.read(), "root only\n")

    def racer(self, d, secret):
        """The other user swapping a link to secret in for every temporary file that appears
        in d, as fast as they can, until stopped; stop() returns how many they swapped."""
        stop = self.path("stop-racer")
        proc = subprocess.Popen(["runuser", "-u", "nobody", "--", sys.executable, "-c",
                                 self.RACER, d, secret, stop], stdout=subprocess.PIPE,
                                universal_newlines=True)

        def halt():
            with open(stop, "w"):
                pass
            out, _ = proc.communicate(timeout=30)
            os.unlink(stop)
            return int(out or 0)
        self.addCleanup(lambda: proc.poll() is not None or halt())
        time.sleep(0.3)  # running
        return halt

    def collect(self, run, *args):
        p = ct.run_script("stagebench-collect", [run] + list(args))
        self.assertNotIn("Traceback", p.stderr)
        return p

    def no_root_file_in(self, d):
        for root, dirs, names in os.walk(d):
            for n in dirs + names:
                self.assertNotEqual(os.lstat(os.path.join(root, n)).st_uid, 0,
                                    "%s written into another user's directory" % n)

    def test_prometheus_dir_of_another_user_racing_links(self):
        """The textfile directory belongs to the other user, who swaps a link to a root-only
        file in for each temporary file: the collector refuses the directory (exit 3, the
        owner said), every time; the file the link names keeps its mode and text."""
        run, secret = self.summaries(), self.secret()
        textfile = self.path("shared", "textfile")
        self.assertEqual(nobody("mkdir", "-m", "0755", textfile).returncode, 0)
        halt = self.racer(textfile, secret)
        for _ in range(5):
            p = self.collect(run, "--prometheus", os.path.join(textfile, "stagebench.prom"))
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertIn("error: --prometheus: cannot write %s/stagebench.prom: %s belongs "
                          "to uid %d" % (textfile, textfile, os.stat(textfile).st_uid),
                          p.stderr)
            self.secret_untouched(secret)
        halt()
        self.no_root_file_in(textfile)
        self.secret_untouched(secret)

    def test_prometheus_sticky_dir_written_safely_while_racing(self):
        """A directory open to all but sticky (as /tmp): the other user cannot move the
        collector's temporary file, so it is written, a regular file of ours with its mode,
        however they race; a file of theirs at the output's name is not replaced."""
        run, secret = self.summaries(), self.secret()
        textfile = self.path("shared", "open")
        os.mkdir(textfile)
        os.chmod(textfile, 0o1777)
        prom = os.path.join(textfile, "stagebench.prom")
        halt = self.racer(textfile, secret)
        for _ in range(5):
            p = self.collect(run, "--prometheus", prom)
            self.assertIn(p.returncode, (0, 1), p.stderr)
            st = os.lstat(prom)
            self.assertTrue(stat.S_ISREG(st.st_mode))
            self.assertEqual((stat.S_IMODE(st.st_mode), st.st_uid), (0o644, 0))
            with open(prom) as f:
                self.assertIn("stagebench_run_info{", f.read())
            self.secret_untouched(secret)
        self.assertEqual(halt(), 0, "a temporary file was moved in a sticky directory")
        self.assertEqual(sorted(os.listdir(textfile)), ["stagebench.prom"])
        # their file at the name: refused, left as it is
        os.unlink(prom)
        nobody("sh", "-c", 'echo theirs >"$1"', "sh", prom)
        p = self.collect(run, "--prometheus", prom)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("belongs to uid %d, in a directory others can write into: not replaced"
                      % os.stat(prom).st_uid, p.stderr)
        with open(prom) as f:
            self.assertEqual(f.read(), "theirs\n")
        self.assertEqual(sorted(os.listdir(textfile)), ["stagebench.prom"])

    def test_results_dir_of_another_user(self):
        """A run directory the other user owns, with links planted at the outputs' names and
        swapped in for temporary files: every output the collector is asked to write there
        (--output, --html, --plot, --prometheus, --save-baseline) is refused with its reason,
        nothing is written there, no link followed."""
        run, secret = self.summaries(), self.secret()
        theirs = self.path("shared", "theirs")
        self.assertEqual(nobody("cp", "-r", run, theirs).returncode, 0)
        names = ("report.txt", "report.html", "plot.svg", "stagebench.prom", "baseline.json")
        for n in names[:2]:
            nobody("ln", "-s", secret, os.path.join(theirs, n))
        halt = self.racer(theirs, secret)
        for opt, name in zip(("--output", "--html", "--plot", "--prometheus",
                              "--save-baseline"), names):
            p = self.collect(theirs, opt, os.path.join(theirs, name))
            self.assertEqual(p.returncode, 3, opt + ": " + p.stderr)
            self.assertRegex(p.stderr, r"(is a symbolic link|belongs to uid %d)"
                             % os.stat(theirs).st_uid, opt)
            self.secret_untouched(secret)
        halt()
        self.no_root_file_in(theirs)
        self.secret_untouched(secret)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
