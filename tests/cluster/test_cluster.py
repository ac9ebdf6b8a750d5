# SPDX-License-Identifier: MIT
"""End to end: 4 simulated nodes on 2 /stage servers, one of them a real network filesystem
(sshfs to a private sshd on 127.0.0.1), started by the real launcher through `clush -R exec`,
then once through `pdsh -R exec`; and the launcher's remote path (clush over real ssh, the
summaries copied back with clush --rcopy) with two ssh aliases of this machine as nodes."""
import json
import os
import shutil
import signal
import sys
import subprocess
import tempfile
import time
import unittest

import clustertest as ct

TESTS = ["1a", "2", "4"]


def setUpModule():
    global BASE, SSH, STAGE, EXPORT, PARTS
    PARTS = ct.parts_of(TESTS)
    BASE = tempfile.mkdtemp(prefix="stagebench-cluster-e2e-")
    STAGE = os.path.join(BASE, "stage")
    EXPORT = os.path.join(BASE, "export")
    for d in (os.path.join(STAGE, "server0"), os.path.join(STAGE, "server1"), EXPORT):
        os.makedirs(d)
    SSH = ct.SshServer(BASE)
    why = SSH.start()
    if why is None:
        # server1 is a real network /stage server: sshfs through the private sshd
        why = SSH.mount(EXPORT, os.path.join(STAGE, "server1"))
    if why:
        SSH.close()
        shutil.rmtree(BASE, True)
        ct.skip_file("no sshd/sshfs network filesystem in this sandbox: %s" % why)


def tearDownModule():
    SSH.close()
    mounted = ct.is_mounted(os.path.join(STAGE, "server1"))
    shutil.rmtree(BASE, True)
    assert not mounted, "the sshfs mount was left behind"


class EndToEnd(ct.TempDirCase):
    def setUp(self):
        super().setUp()

    def sim(self, run_id, launcher, extra=()):
        t0 = time.monotonic()
        p = ct.run_script("stagebench-sim", [
            "--nodes", "4", "--servers", "2", "--dir", STAGE, "--results", self.path("results"),
            "--stagebench", ct.BINARY, "--scale", "tiny", "--run-id", run_id,
            "--launcher", launcher] + list(extra) + TESTS, timeout=240)
        return p, time.monotonic() - t0

    def check_run(self, run_id, p):
        rundir = self.path("results", run_id)
        self.assertEqual(p.returncode, 0, "stdout:\n%s\nstderr:\n%s" % (p.stdout, p.stderr))
        rep = ct.load(os.path.join(rundir, "report.json"))
        man = ct.load(os.path.join(rundir, "manifest.json"))
        nodes = ["node1", "node2", "node3", "node4"]
        # 4 nodes, 2 servers (node i on server<i mod 2>), one preparer per server
        self.assertEqual(rep["nodes"]["expected"], 4)
        self.assertEqual(rep["nodes"]["failed"], [])
        self.assertEqual(rep["nodes"]["missing"], [])
        self.assertEqual([(s["server"], s["nodes"], s["count"]) for s in rep["servers"]],
                         [("server0", "node[2,4]", 2), ("server1", "node[1,3]", 2)])
        self.assertEqual(man["servers"], {"node1": "server1", "node2": "server0",
                                          "node3": "server1", "node4": "server0"})
        pre = man["preparers"]
        self.assertEqual(set(pre), {"server0", "server1"})
        for s, n in pre.items():
            self.assertEqual(man["servers"][n], s)
        prep_rounds = [r for r in man["rounds"] if r["kind"] == "prepare"]
        self.assertEqual([r["test"] for r in prep_rounds], ["1a", "2"])  # 4 has no replica
        for r in prep_rounds:
            self.assertEqual(sorted(r["preparers"].values()), sorted(pre.values()))
            self.assertEqual(r["failed"], {})
        # every part ran on the 4 nodes, at one start instant computed by the launcher
        runs = [r for r in man["rounds"] if r["kind"] == "run"]
        self.assertEqual([r["part"] for r in runs], PARTS)
        self.assertEqual([p["part"] for p in rep["parts"]], PARTS)
        summaries = {}
        for part in PARTS:
            for n in nodes:
                s = ct.load(os.path.join(rundir, "%s.%s.rep1.json" % (n, part)))
                self.assertEqual(s["node"], n)
                self.assertEqual(s["status"], "ok")
                self.assertEqual(s["run"]["tests"], [part])
                summaries[(n, part)] = s
        for r, p in zip(runs, rep["parts"]):
            self.assertEqual(p["start_at"], r["start_at"])
            for n in nodes:
                self.assertAlmostEqual(summaries[(n, r["part"])]["run"]["start_at"],
                                       r["start_at"], places=5)
        # the sums
        for p in rep["parts"]:
            self.assertEqual((p["nodes_expected"], p["nodes_ok"], p["nodes_failed"],
                              p["nodes_missing"]), (4, 4, 0, 0))
            parts = [summaries[(n, p["part"])]["tests"][0]["parts"][0] for n in nodes]
            self.assertEqual(p["bytes"], sum(x["bytes"] for x in parts))
            self.assertEqual(p["threads"], sum(len(x["per_thread"]) for x in parts))
            self.assertEqual(p["cluster_time_s"], max(x["node_time_s"] for x in parts))
            self.assertLess(p["start_spread_s"], 1.0)
            self.assertTrue(p["start_synchronized"])
            self.assertEqual(len(p["servers"]), 2)
            self.assertEqual(sum(s["bytes"] for s in p["servers"]), p["bytes"])
        res = {t["test"]: t["result_s"] for t in rep["tests"]}
        cl = {p["part"]: p["cluster_time_s"] for p in rep["parts"]}
        for t in TESTS:  # a test's result is the sum of its parts' cluster times
            self.assertAlmostEqual(res[t], sum(cl[p] for p in ct.parts_of([t])), places=12)
        self.assertTrue(rep["clock"]["start_synchronized"])
        # every node's clock measured before the first part and after the last: all are this
        # machine, so 0 within the uncertainty (pdsh: the info round's one-shot bound)
        check_offsets(self, man, nodes,
                      "round" if man["launcher"]["engine"] == "pdsh" else "exchange")
        # the runs used the replica their server's preparer made: same generation per server
        for part in ("1a", "2a", "2b", "2c"):
            gens = {}
            for n in nodes:
                t = summaries[(n, part)]["tests"][0]
                self.assertFalse(t["prepared"], (n, part))
                gens.setdefault(man["servers"][n], set()).add(t["generation"])
            self.assertEqual([len(g) for g in gens.values()], [1, 1])
            self.assertNotEqual(gens["server0"], gens["server1"])
        # server1 really is the network filesystem
        for n in ("node1", "node3"):
            self.assertEqual(summaries[(n, "1a")]["fs"]["type"], "fuse.sshfs")
        for n in ("node2", "node4"):
            self.assertNotEqual(summaries[(n, "1a")]["fs"]["type"], "fuse.sshfs")
        # each server holds the replicas of 1a and 2, and nothing of test 4 is left
        for d in (EXPORT, os.path.join(STAGE, "server0")):
            names = sorted(os.listdir(d))
            self.assertEqual([n.split(".")[1] for n in names], ["1a", "2"], names)
            for n in names:
                self.assertTrue(n.startswith("stagebench."), names)
        # the report says the nodes share cores
        self.assertTrue(any("share" in n or "each" in n for n in rep["notes"]))
        self.assertIn("status: ok", p_stdout(self, rundir))
        # the collector on its own agrees
        c = ct.run_script("stagebench-collect", [rundir, "--format", "json"])
        self.assertEqual(c.returncode, 0, c.stderr)
        again = json.loads(c.stdout)
        self.assertEqual([p["cluster_time_s"] for p in again["parts"]],
                         [p["cluster_time_s"] for p in rep["parts"]])
        return rep

    def test_clush_exec(self):
        p, took = self.sim("e2e-clush", "clush")
        rep = self.check_run("e2e-clush", p)
        self.assertEqual(rep["launcher"]["engine"], "clush")
        self.assertIn("2 servers", p.stderr + p.stdout.replace("servers: 2", "2 servers"))

    def test_pdsh_exec(self):
        p, took = self.sim("e2e-pdsh", "pdsh")
        rep = self.check_run("e2e-pdsh", p)
        self.assertEqual(rep["launcher"]["engine"], "pdsh")

    def ssh_run(self, nodes, run_id, extra=()):
        cfg = SSH.ssh_config(nodes)
        # every node mounts the same sshfs source: one server, found from the mount
        p = ct.run_script("stagebench-cluster", [
            "-w", ",".join(nodes), "--launcher-option=-o", "--launcher-option=-F %s" % cfg,
            "--stagebench", ct.BINARY, "--dir", os.path.join(STAGE, "server1"),
            "--results", self.path("results"), "--run-id", run_id,
            "--scratch", self.path("scratch"), "--scale", "tiny"] + list(extra) + ["1a"],
            timeout=180)
        rundir = self.path("results", run_id)
        self.assertEqual(p.returncode, 0, "stdout:\n%s\nstderr:\n%s" % (p.stdout, p.stderr))
        man = ct.load(os.path.join(rundir, "manifest.json"))
        self.assertEqual(man["nodes"], nodes)
        self.assertEqual(len(set(man["servers"].values())), 1)
        self.assertIn("127.0.0.1", list(man["servers"].values())[0])
        self.assertEqual(len(man["preparers"]), 1)
        check_offsets(self, man, nodes, "exchange")  # `stagebench clock` over ssh
        # armed: the part's round is an arm round (seconds, finished before the start),
        # then status rounds; no connection held for the part
        self.assertTrue(man["launcher"]["armed"])
        run = [r for r in man["rounds"] if r["kind"] == "run"][0]
        self.assertLess(run["arm_s"], run["lead_s"])
        logs = os.listdir(os.path.join(rundir, "logs"))
        self.assertTrue(any("-arm-1a-rep1." in f for f in logs), logs)
        self.assertTrue(any("-status-1a-rep1-" in f for f in logs), logs)
        for n in nodes:
            s = ct.load(os.path.join(rundir, "%s.1a.rep1.json" % n))
            self.assertEqual(s["node"], n)
            self.assertEqual(s["status"], "ok")
        rep = ct.load(os.path.join(rundir, "report.json"))
        self.assertEqual(rep["parts"][0]["nodes_ok"], len(nodes))
        # the node-local scratch directory (stagebench-RUN-TOKEN) is gone
        self.assertEqual(os.listdir(self.path("scratch")), [])
        return man, rundir

    def test_clush_over_ssh_rcopy(self):
        """The remote path: the command through ssh (the remote shell reads one quoted
        line), the summary written node-locally and copied back with clush --rcopy. One ssh
        alias of this machine is the node (two would share its node-local scratch dir)."""
        man, rundir = self.ssh_run(["nodeA"], "ssh-rcopy")
        self.assertEqual(man["launcher"]["gather"], "rcopy")
        self.assertEqual(os.listdir(os.path.join(rundir, "incoming")), [])

    def test_clush_over_ssh_shared(self):
        """Two ssh aliases of this machine as two nodes, each named by the STAGEBENCH_NODE
        its ssh session sets, writing into the (shared) results directory."""
        man, rundir = self.ssh_run(["nodeA", "nodeB"], "ssh-shared", ["--gather", "shared"])
        self.assertEqual(man["launcher"]["gather"], "shared")

    def test_bounded_fanout_over_ssh(self):
        """--fanout 1 on two nodes: each is armed in its own wave, both before the start, and
        both run the part (a connection held for the part would start the second late)."""
        man, rundir = self.ssh_run(["nodeA", "nodeB"], "ssh-fan1",
                                   ["--gather", "shared", "--fanout", "1"])
        self.assertEqual((man["launcher"]["fanout"], man["launch"]["waves"]), (1, 2))
        run = [r for r in man["rounds"] if r["kind"] == "run"][0]
        self.assertEqual(run.get("failed"), {})

    def test_pdsh_armed_over_ssh(self):
        """pdsh over ssh arms the nodes too (its ssh options from PDSH_SSH_ARGS_APPEND), with
        a fan-out below the node count: both run the part."""
        nodes = ["nodeA", "nodeB"]
        cfg = SSH.ssh_config(nodes)
        env = ct.env()
        env["PDSH_SSH_ARGS_APPEND"] = "-F %s" % cfg
        p = subprocess.run(ct.command("stagebench-cluster") + [
            "-w", ",".join(nodes), "--launcher", "pdsh", "--fanout", "1",
            "--stagebench", ct.BINARY, "--dir", os.path.join(STAGE, "server1"),
            "--results", self.path("results"), "--run-id", "pdsh", "--gather", "shared",
            "--scratch", self.path("scratch"), "--scale", "tiny", "null"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
            env=env, stdin=subprocess.DEVNULL, timeout=180)
        self.assertEqual(p.returncode, 0, "stdout:\n%s\nstderr:\n%s" % (p.stdout, p.stderr))
        rundir = self.path("results", "pdsh")
        man = ct.load(os.path.join(rundir, "manifest.json"))
        self.assertEqual((man["launcher"]["engine"], man["launcher"]["armed"],
                          man["launcher"]["fanout"]), ("pdsh", True, 1))
        for n in nodes:
            self.assertEqual(ct.load(os.path.join(rundir, "%s.null.rep1.json" % n))["status"],
                             "ok")
        self.assertEqual(os.listdir(self.path("scratch")), [])

    def test_slow_set_up_armed_again(self):
        """Nodes whose set-up takes longer than the lead (a stagebench that sleeps past the
        start before arming): the arm round ends after the start, every node missed it, so
        the part is armed once more with the lead raised by the arm round's duration, and
        both nodes run it."""
        slow = self.path("slow-stagebench")
        # The first arming sleeps until 0.5 s past the start it was given, whatever lead the
        # launcher chose from its info round (a loaded machine makes that round, and so the
        # lead, longer); arming again (--force) does not sleep. The arm round's limit must
        # leave room for that half second past the lead.
        with open(slow, "w") as f:
            f.write('#!%s\nimport os, sys, time\n'
                    'a = sys.argv[1:]\n'
                    'if "--detach" in a and "--force" not in a:\n'
                    '    time.sleep(max(0.0, float(a[a.index("--start-at") + 1]) + 0.5 - time.time()))\n'
                    'os.execv(%r, [%r] + a)\n' % (sys.executable, ct.BINARY, ct.BINARY))
        os.chmod(slow, 0o755)
        nodes = ["nodeA", "nodeB"]
        cfg = SSH.ssh_config(nodes)
        p = ct.run_script("stagebench-cluster", [
            "-w", ",".join(nodes), "--launcher-option=-o", "--launcher-option=-F %s" % cfg,
            "--stagebench", slow, "--local-stagebench", ct.BINARY,
            "--dir", os.path.join(STAGE, "server1"), "--results", self.path("results"),
            "--run-id", "slow", "--gather", "shared", "--scratch", self.path("scratch"),
            "--scale", "tiny", "null"], timeout=180)
        self.assertEqual(p.returncode, 0, "stdout:\n%s\nstderr:\n%s" % (p.stdout, p.stderr))
        self.assertIn("the arm round ended after the start (2 nodes missed it): arming every "
                      "node again", p.stderr)
        rundir = self.path("results", "slow")
        run = [r for r in ct.load(os.path.join(rundir, "manifest.json"))["rounds"]
               if r["kind"] == "run"][0]
        self.assertTrue(run["armed_again"])
        self.assertEqual(run["failed"], {})
        for n in nodes:
            self.assertEqual(ct.load(os.path.join(rundir, "%s.null.rep1.json" % n))["status"],
                             "ok")
        self.assertEqual(os.listdir(self.path("scratch")), [])

    def test_whole_test_armed_over_ssh(self):
        """--interval 2: test 4's three parts armed in one round on each node (the part k at
        T + 2k s), one summary a node with the three parts, each part's record at its
        instant, and the report counts every part on both nodes."""
        nodes = ["nodeA", "nodeB"]
        cfg = SSH.ssh_config(nodes)
        p = ct.run_script("stagebench-cluster", [
            "-w", ",".join(nodes), "--launcher-option=-o", "--launcher-option=-F %s" % cfg,
            "--stagebench", ct.BINARY, "--dir", os.path.join(STAGE, "server1"),
            "--results", self.path("results"), "--run-id", "grid", "--gather", "shared",
            "--scratch", self.path("scratch"), "--scale", "tiny", "--interval", "2", "4"],
            timeout=180)
        self.assertEqual(p.returncode, 0, "stdout:\n%s\nstderr:\n%s" % (p.stdout, p.stderr))
        rundir = self.path("results", "grid")
        man = ct.load(os.path.join(rundir, "manifest.json"))
        runs = [r for r in man["rounds"] if r["kind"] == "run"]
        self.assertEqual([r["part"] for r in runs], ct.parts_of(["4"]))
        self.assertEqual([round(r["start_at"] - runs[0]["start_at"], 3) for r in runs],
                         [0.0, 2.0, 4.0])
        logs = os.listdir(os.path.join(rundir, "logs"))
        self.assertEqual(len([f for f in logs if "-arm-" in f and f.endswith(".nodes")]), 1,
                         logs)
        for n in nodes:
            s = ct.load(os.path.join(rundir, "%s.4.rep1.json" % n))
            self.assertEqual(s["status"], "ok")
            self.assertEqual([q["part"] for q in s["tests"][0]["parts"]], ct.parts_of(["4"]))
        rep = ct.load(os.path.join(rundir, "report.json"))
        self.assertEqual([q["nodes_ok"] for q in rep["parts"]], [2, 2, 2])
        self.assertEqual(os.listdir(self.path("scratch")), [])

    def test_not_found_reads_well(self):
        """No node answers the info round because the binary is not on them: the launcher
        prints each node's own error line, and the report claims nothing about their clocks."""
        nodes = ["nodeA", "nodeB"]
        cfg = SSH.ssh_config(nodes)
        p = ct.run_script("stagebench-cluster", [
            "-w", ",".join(nodes), "--launcher-option=-o", "--launcher-option=-F %s" % cfg,
            "--stagebench", "/nonexistent/stagebench", "--results", self.path("results"),
            "--run-id", "nf", "--scratch", self.path("scratch"), "--scale", "tiny", "null"],
            timeout=120)
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("no node answered the info round", p.stderr)
        line = [ln for ln in p.stderr.splitlines() if "node[A-B]" in ln or "nodeA,nodeB" in ln]
        self.assertTrue(line, p.stderr)
        self.assertIn("exec: /nonexistent/stagebench: not found", line[0])
        self.assertIn("nothing is known of the nodes' clocks", p.stdout)
        self.assertNotIn("NTP-synchronized", p.stdout.replace("NTP synchronized", ""))

    def test_ctrl_c_over_ssh(self):
        """Ctrl-C while the remote node waits for its start: the launcher signals it through
        a second ssh connection, the node writes its summary (interrupted), which is still
        copied back."""
        cfg = SSH.ssh_config(["nodeA"])
        proc = subprocess.Popen(ct.command("stagebench-cluster") + ["-w", "nodeA",
                                 "--launcher-option=-o", "--launcher-option=-F %s" % cfg,
                                 "--stagebench", ct.BINARY, "--dir", os.path.join(STAGE, "server1"),
                                 "--results", self.path("results"), "--run-id", "ssh-int",
                                 "--scratch", self.path("scratch"), "--scale", "tiny",
                                 "--lead", "10", "4a"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=ct.env(), stdin=subprocess.DEVNULL)
        rundir = self.path("results", "ssh-int")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.2)
            try:
                man = ct.load(os.path.join(rundir, "manifest.json"))
            except (OSError, ValueError):
                continue
            if any(r["kind"] == "run" for r in man["rounds"]):
                break
        time.sleep(3.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=90)
        self.assertEqual(proc.returncode, 130, out + err)
        s = ct.load(os.path.join(rundir, "nodeA.4a.rep1.json"))
        self.assertEqual(s["status"], "interrupted")
        self.assertEqual(ct.load(os.path.join(rundir, "manifest.json"))["interrupted"],
                         "SIGINT")
        self.assertEqual(os.listdir(self.path("scratch")), [])


def check_offsets(case, man, nodes, method):
    c = man["clock"]
    case.assertEqual((c["method"], c["unmeasured"], c["unmeasured_end"]), (method, [], []))
    for when in ("start", "end"):
        case.assertEqual(sorted(c[when]), sorted(nodes))
        for n, e in c[when].items():
            case.assertLessEqual(abs(e["offset_s"]), e["uncertainty_s"], (when, n, e))
    # every measurement of the run (next to each part: armed, the arm round and the status
    # rounds) measured every node, and found this one machine's clock within its uncertainty
    whens = [m["next_to"]["when"] for m in c["measurements"]]
    if man["launcher"]["armed"] and method == "exchange":
        case.assertIn("status", whens)
    for m in c["measurements"]:
        case.assertEqual((sorted(m["nodes"]), m["unmeasured"]), (sorted(nodes), {}),
                         m["next_to"])
        for n, e in m["nodes"].items():
            case.assertLessEqual(abs(e["offset_s"]), e["uncertainty_s"] + 1e-3, (m, n))


def p_stdout(case, rundir):
    with open(os.path.join(rundir, "report.txt")) as f:
        return f.read()


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
