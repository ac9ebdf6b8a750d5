# SPDX-License-Identifier: MIT
"""Armed nodes that know their launcher, over real ssh (a private sshd on 127.0.0.1, node
names as ssh aliases of this machine, each with its own STAGEBENCH_NODE): a launcher killed
with SIGKILL mid-schedule leaves nodes that end orphaned by their lapsed lease, and --resume
finishes its report with nothing left; two launchers on one node: the second is refused busy;
a SIGSTOPped armed node past its limit is killed and said so, and writes nothing after the
report; a full scratch filesystem is named as no space; a --scratch of another user is refused;
four node names of one machine copy their own summaries back, with the scratch given or not,
and with ssh's options given on the command line rather than in a config."""
import json
import os
import shutil
import signal
import subprocess
import time
import unittest

import clustertest as ct


def setUpModule():
    global BASE, SSH
    BASE, SSH = ct.start_module_sshd("stagebench-armed-nodes-")


def tearDownModule():
    ct.stop_module_sshd(BASE, SSH)


class Armed(ct.TempDirCase):
    def setUp(self):
        ct.TempDirCase.setUp(self)
        os.makedirs(self.path("stage"))

    def command(self, nodes, run_id, extra=(), tests=("null",), cfg=None, results="results",
                scratch="scratch"):
        cfg = cfg or SSH.ssh_config(nodes)
        opts = ["--launcher-option=-o", "--launcher-option=-F %s" % cfg] if cfg != "none" \
            else []
        return ct.command("stagebench-cluster") + [
            "-w", ",".join(nodes)] + opts + [
            "--stagebench", ct.BINARY, "--dir", self.path("stage"),
            "--results", self.path(results), "--run-id", run_id] + (
            ["--scratch", self.path(scratch)] if scratch else []) + [
            "--scale", "tiny", "--max-offset", "10"] + list(extra) + list(tests)

    def launch(self, *a, **kw):
        timeout = kw.pop("timeout", 240)
        p = subprocess.run(self.command(*a, **kw), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, env=ct.env(),
                           stdin=subprocess.DEVNULL, timeout=timeout)
        self.assertNotIn("Traceback", p.stderr)
        return p

    def start(self, *a, **kw):
        p = subprocess.Popen(self.command(*a, **kw), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True, env=ct.env(),
                             stdin=subprocess.DEVNULL)
        self.addCleanup(self.end, p)
        return p

    @staticmethod
    def end(p):
        if p.poll() is None:
            p.kill()
        p.communicate()

    def wait_armed(self, run_id, results="results", timeout=60):
        """The run record of the part armed by run_id's launcher, once its arm round ended."""
        path = self.path(results, run_id, "manifest.json")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                man = ct.load(path)
            except (OSError, ValueError):
                man = {}
            runs = [r for r in man.get("rounds") or [] if r.get("kind") == "run"]
            if runs and "arm_s" in runs[0]:
                return man, runs[0]
            time.sleep(0.1)
        self.fail("%s was never armed" % run_id)

    def test_launcher_killed_nodes_orphaned_then_resumed(self):
        """kill -9 of the launcher once test 4's three parts are armed on an --interval grid:
        part 4a runs, then the nodes' lease (10 s) lapses with nobody renewing it and each node
        stops before 4b, removes its files and ends orphaned; --resume then gathers the
        orphaned summaries, finishes the manifest and writes the report: 4b and 4c orphaned
        on both nodes, nothing left running, nothing left in the scratch directories."""
        nodes = ["nodeA", "nodeB"]
        lau = self.start(nodes, "lost", ["--interval", "12", "--lease", "10"], tests=["4"])
        man, run = self.wait_armed("lost")
        self.assertGreaterEqual(run["lease_s"], 10.0)
        self.assertLess(run["lease_s"], 15.0)
        killed_at = time.time()
        lau.kill()
        lau.communicate(timeout=30)
        scratch = self.path("scratch", os.path.basename(man["launcher"]["scratch"]))
        states = [os.path.join(scratch, "%s.%s" % (run["state"], n), "state") for n in nodes]
        deadline = time.monotonic() + 60
        final = {}
        while len(final) < len(nodes) and time.monotonic() < deadline:
            for path in states:
                with open(path) as f:
                    text = f.read()
                if "\nstatus orphaned\n" in text:
                    final.setdefault(path, time.time())
            time.sleep(0.2)
        self.assertEqual(len(final), 2, "the nodes did not end orphaned")
        took = max(final.values()) - killed_at
        self.assertLess(took, 30, "orphaned %.1f s after the launcher died" % took)
        print("launcher killed; both nodes orphaned %.1f s later (lease 10 s)" % took)
        self.assertEqual(ct.processes_mentioning(scratch), [])
        p = subprocess.run(ct.command("stagebench-cluster") + [
            "--results", self.path("results"), "--resume", "lost"], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True, env=ct.env(),
            stdin=subprocess.DEVNULL, timeout=240)
        self.assertNotIn("Traceback", p.stderr)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        rundir = self.path("results", "lost")
        man = ct.load(os.path.join(rundir, "manifest.json"))
        self.assertIsNotNone(man["finished_at"])
        self.assertIn("resumed", man)
        self.assertIn("its launcher was lost", man["interrupted"])
        rep = ct.load(os.path.join(rundir, "report.json"))
        by = {p["part"]: p for p in rep["parts"]}
        self.assertEqual(by["4a"]["nodes_ok"], 2)
        for part in ("4b", "4c"):
            self.assertEqual(sorted(f["node"] for f in by[part]["failed"]), nodes)
            self.assertEqual({f["status"] for f in by[part]["failed"]}, {"orphaned"})
        text = open(os.path.join(rundir, "report.txt")).read()
        self.assertIn("its launcher was lost", text)
        self.assertFalse(os.path.exists(scratch), os.listdir(self.path("scratch")))
        self.assertEqual(os.listdir(self.path("stage")), [])
        # a second resume: nothing to do, said in one line
        p = subprocess.run(ct.command("stagebench-cluster") + [
            "--results", self.path("results"), "--resume", "lost"], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True, env=ct.env(), timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("the run finished", p.stderr)

    def test_cron_resumes_a_lost_night(self):
        """stagebench-cron over ssh whose launcher is killed with SIGKILL while its nodes are
        armed: that night is reported with the launcher's death; the next night first resumes
        it (its nodes asked for their state, stopped or found orphaned, its manifest
        finished), says so, and runs beside no node of the last night."""
        nodes = ["nodeA", "nodeB"]
        cfg = SSH.ssh_config(nodes)
        results = self.path("cron")

        def cron(tests, extra=()):
            return ct.command("stagebench-cron") + [
                "--results", results, "--", "-w", ",".join(nodes), "--launcher-option=-o",
                "--launcher-option=-F %s" % cfg, "--stagebench", ct.BINARY, "--dir",
                self.path("stage"), "--scratch", self.path("scratch"), "--scale", "tiny",
                "--max-offset", "10"] + list(extra) + list(tests)

        first = subprocess.Popen(cron(["4"], ["--interval", "12", "--lease", "10"]),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 universal_newlines=True, env=ct.env(),
                                 stdin=subprocess.DEVNULL)
        self.addCleanup(self.end, first)
        deadline = time.monotonic() + 60
        run_id = None
        while run_id is None and time.monotonic() < deadline:
            for d in sorted(os.listdir(results)) if os.path.isdir(results) else []:
                try:
                    man = ct.load(os.path.join(results, d, "manifest.json"))
                except (OSError, ValueError):
                    continue
                if any("arm_s" in r for r in man["rounds"] if r["kind"] == "run"):
                    run_id = d
            time.sleep(0.1)
        self.assertIsNotNone(run_id, "the first night was never armed")
        launchers = [pid for pid, cmd in ct.processes_mentioning(ct.script("stagebench-cluster"))
                     if cmd.split()[1:2] == [ct.script("stagebench-cluster")] and
                     "--run-id %s" % run_id in cmd]
        self.assertEqual(len(launchers), 1, launchers)
        os.kill(launchers[0], signal.SIGKILL)
        out, err = first.communicate(timeout=120)
        self.assertIn("the launcher was killed by SIGKILL", out + err)
        second = subprocess.run(cron(["null"]), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True,
                                env=ct.env(), stdin=subprocess.DEVNULL, timeout=240)
        text = second.stdout + second.stderr
        self.assertIn("the previous run %s did not finish (its launcher was lost): resumed"
                      % run_id, text)
        man = ct.load(os.path.join(results, run_id, "manifest.json"))
        self.assertIsNotNone(man["finished_at"])
        self.assertIn("its launcher was lost", man["interrupted"])
        nights = [d for d in os.listdir(results) if d.startswith("cron-") and d != run_id]
        self.assertEqual(len(nights), 1, nights)
        night = ct.load(os.path.join(results, nights[0], "manifest.json"))
        run = [r for r in night["rounds"] if r["kind"] == "run"][0]
        self.assertEqual(run["failed"], {}, text)  # no node was busy with the lost night
        self.assertEqual(os.listdir(self.path("scratch")), [])

    def test_two_launchers_on_one_node(self):
        """A second launcher arming a node that the first has armed: the node refuses it (its
        lock), the second reports that node busy, naming the first run, never ok; the first
        run is not disturbed."""
        first = self.start(["nodeA"], "first", ["--interval", "6"], tests=["4"])
        self.wait_armed("first")
        p = self.launch(["nodeA"], "second", tests=["4a"], results="results2",
                        scratch="scratch2")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        man = ct.load(self.path("results2", "second", "manifest.json"))
        run = [r for r in man["rounds"] if r["kind"] == "run"][0]
        self.assertIn("nodeA", run["failed"], p.stdout + p.stderr)
        f = run["failed"]["nodeA"]
        self.assertEqual((f["status"], f.get("reason")), ("busy", "busy"), f)
        self.assertIn("first", f["error"])
        text = open(self.path("results2", "second", "report.txt")).read()
        self.assertIn("busy", text)
        out, err = first.communicate(timeout=120)
        self.assertEqual(first.returncode, 0, out + err)

    def test_sigstopped_node_past_its_limit(self):
        """An armed node SIGSTOPped before its start, --timeout 3: past the limit the launcher
        stops it (the signal, then SIGCONT; --kill if it still does not end), the report says
        what was done and that the process is gone; nothing arrives after the report."""
        nodes = ["nodeA", "nodeB"]
        lau = self.start(nodes, "stopped", ["--timeout", "3", "--lead", "4", "--gather",
                                            "shared"], tests=["null"])
        man, run = self.wait_armed("stopped")
        scratch = self.path("scratch", os.path.basename(man["launcher"]["scratch"]))
        with open(os.path.join(scratch, "%s.nodeB" % run["state"], "state")) as f:
            pid = int([ln.split()[1] for ln in f if ln.startswith("pid ")][0])
        os.kill(pid, signal.SIGSTOP)
        out, err = lau.communicate(timeout=180)
        self.assertEqual(lau.returncode, 1, out + err)
        self.assertFalse(os.path.exists("/proc/%d" % pid) and
                         open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
                         != "Z", "the stopped node process is still there")
        rundir = self.path("results", "stopped")
        man = ct.load(os.path.join(rundir, "manifest.json"))
        run = [r for r in man["rounds"] if r["kind"] == "run"][0]
        self.assertIn("nodeB", run["failed"])
        self.assertIn(run["failed"]["nodeB"]["status"], ("killed", "interrupted"))
        listing = sorted(os.listdir(rundir))
        time.sleep(3)
        self.assertEqual(sorted(os.listdir(rundir)), listing, "a file arrived after the report")

    def test_full_scratch_is_no_space(self):
        """--scratch on a full tmpfs: the node's failure says no space, never a wrong cause."""
        mnt = self.path("full")
        os.makedirs(mnt)
        rc = subprocess.call(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", mnt],
                             stderr=subprocess.DEVNULL)
        if rc != 0:
            self.skipTest("cannot mount a tmpfs here (not root)")
        self.addCleanup(subprocess.call, ["umount", "-l", mnt])
        try:
            with open(os.path.join(mnt, "filler"), "wb") as f:
                while True:
                    f.write(b"\0" * 4096)
                    f.flush()
        except OSError:
            pass  # full
        p = self.launch(["nodeA"], "full", ["--scratch", os.path.join(mnt)], scratch=None)
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("no space left on device", (p.stdout + p.stderr).lower())
        man = ct.load(self.path("results", "full", "manifest.json"))
        errors = json.dumps(man["rounds"]).lower()
        self.assertIn("no space", errors)
        self.assertNotIn("sigkill", errors)

    def test_scratch_of_another_user_refused(self):
        """A --scratch that another user owns (nobody), or a link another user planted, is
        refused on the node before anything is written in it or through it."""
        other = self.path("theirs")
        os.makedirs(other)
        shutil.chown(other, "nobody")
        p = self.launch(["nodeA"], "theirs", ["--scratch", other], scratch=None)
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("is not a directory of this user or root closed to others", p.stderr)
        self.assertEqual(os.listdir(other), [])
        # nobody plants a link in the sticky /tmp, pointing at a directory of root's, and
        # gives it as the scratch: refused, nothing made through it
        mine = self.path("mine")
        os.makedirs(mine)
        link = "/tmp/stagebench-planted-%d" % os.getpid()
        self.addCleanup(lambda: os.path.lexists(link) and os.unlink(link))
        subprocess.check_call(["runuser", "-u", "nobody", "--", "ln", "-s", mine, link])
        p = self.launch(["nodeA"], "planted", ["--scratch", link], scratch=None)
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("is not a directory of this user or root closed to others", p.stderr)
        self.assertEqual(os.listdir(mine), [])

    def test_four_aliases_copy_their_own_summaries(self):
        """Four node names that reach one machine, the summaries copied back (the default):
        each node's own file, its node field checked, with the scratch given, and with the
        default /tmp; and with ssh's options on the command line (-p PORT -i KEY ...) rather
        than in a config file."""
        nodes = ["alias1", "alias2", "alias3", "alias4"]
        for run_id, kw in (("given", {}), ("default", {"scratch": None})):
            p = self.launch(nodes, run_id, **kw)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            rundir = self.path("results", run_id)
            texts = set()
            for n in nodes:
                s = ct.load(os.path.join(rundir, "%s.null.rep1.json" % n))
                self.assertEqual(s["node"], n)
                texts.add(json.dumps(s, sort_keys=True))
            self.assertEqual(len(texts), 4)
        self.assertEqual(os.listdir(self.path("scratch")), [])
        self.assertEqual([d for d in os.listdir("/tmp") if d.startswith("stagebench-default-")],
                         [])
        opts = " ".join(SSH.ssh_options())
        p = subprocess.run(ct.command("stagebench-cluster") + [
            "-w", "127.0.0.1", "--launcher-option=-o", "--launcher-option=" + opts,
            "--stagebench", ct.BINARY, "--dir", self.path("stage"), "--results",
            self.path("results"), "--run-id", "opts", "--scratch", self.path("scratch"),
            "--scale", "tiny", "--max-offset", "10", "null"], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True, env=ct.env(), timeout=240)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("no summary arrived", p.stderr)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
