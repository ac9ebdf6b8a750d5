# SPDX-License-Identifier: MIT
"""The launcher when nodes go wrong: a node whose directory is missing and a node that
really hangs are reported by name while the others' results are complete; Ctrl-C stops every
node and keeps what arrived; bad input is refused before anything runs; the cron wrapper."""
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
import unittest

import clustertest as ct


class Failures(ct.TempDirCase):
    def sim(self, run_id, args, tests, timeout=180):
        cmd = ["--nodes", "4", "--servers", "2", "--dir", self.path("stage"),
               "--results", self.path("results"), "--stagebench", ct.BINARY,
               "--scale", "tiny", "--run-id", run_id] + list(args) + list(tests)
        return ct.run_script("stagebench-sim", cmd, timeout=timeout)

    def test_missing_dir_and_hang(self):
        t0 = time.monotonic()
        p = self.sim("fail", ["--fault", "node1=missing-dir", "--fault", "node4=hang",
                              "--timeout", "4"], ["1a", "4a"])
        took = time.monotonic() - t0
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertLess(took, 90, "the launcher took too long to give up on the hung node")
        rundir = self.path("results", "fail")
        # the collector on its own: exit 1, the two nodes named, the others complete
        c = ct.run_script("stagebench-collect", [rundir, "--format", "json"])
        self.assertEqual(c.returncode, 1, c.stderr)
        rep = json.loads(c.stdout)
        self.assertEqual(rep["nodes"]["failed"], ["node1", "node4"])
        self.assertEqual(rep["nodes"]["missing"], [])
        by = {p["part"]: p for p in rep["parts"]}
        self.assertEqual(set(by), {"1a", "4a"})
        for part in ("1a", "4a"):
            p = by[part]
            self.assertEqual((p["nodes_expected"], p["nodes_ok"], p["nodes_failed"]), (4, 2, 2))
            f = {x["node"]: x for x in p["failed"]}
            self.assertIn("missing-node1", f["node1"]["error"])
            self.assertIn("No such file or directory", f["node1"]["error"])
        hang = {x["node"]: x for x in by["1a"]["failed"]}["node4"]
        self.assertEqual(hang["status"], "timeout")
        self.assertIn("--timeout 4 s", hang["error"])
        later = {x["node"]: x for x in by["4a"]["failed"]}["node4"]
        self.assertEqual(later["status"], "skipped")
        self.assertIn("timeout in 1a", later["error"])
        # server1's preparer is node3: node1 (its first node) failed the info round
        man = ct.load(os.path.join(rundir, "manifest.json"))
        self.assertEqual(man["preparers"], {"server0": "node2", "server1": "node3"})
        # the good nodes' results are complete
        good_bytes = 0
        for n in ("node2", "node3"):
            for part in ("1a", "4a"):
                s = ct.load(os.path.join(rundir, "%s.%s.rep1.json" % (n, part)))
                self.assertEqual(s["status"], "ok")
                pr = s["tests"][0]["parts"][0]
                self.assertEqual(pr["status"], "ok")
                self.assertEqual(len(pr["per_thread"]), 1)
                self.assertGreater(pr["bytes"], 0)
                self.assertEqual(pr["bytes"], sum(t["bytes"] for t in pr["per_thread"]))
                if part == "1a":
                    good_bytes += pr["bytes"]
        self.assertEqual(by["1a"]["bytes"], good_bytes)
        self.assertFalse(os.path.exists(os.path.join(rundir, "node4.1a.rep1.json")))
        text = ct.run_script("stagebench-collect", [rundir]).stdout
        self.assertIn("node1: ", text)
        self.assertIn("node4: timeout", text)
        self.assertIn("status: FAILED (2 nodes failed)", text)
        # nothing of the hung node is left running (TempDirCase checks too)
        self.assertEqual(ct.processes_mentioning(self.path("results")), [])

    def test_ctrl_c_stops_nodes_and_keeps_what_arrived(self):
        cmd = ct.command("stagebench-sim") + ["--nodes", "2", "--servers", "1",
               "--dir", self.path("stage"), "--results", self.path("results"),
               "--stagebench", ct.BINARY, "--scale", "tiny", "--run-id", "int",
               "--lead", "8", "4"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=ct.env(), stdin=subprocess.DEVNULL)
        man_path = self.path("results", "int", "manifest.json")
        deadline = time.monotonic() + 60
        started = False
        while time.monotonic() < deadline and not started:
            time.sleep(0.2)
            try:
                man = ct.load(man_path)
            except (OSError, ValueError):
                continue
            started = any(r["kind"] == "run" for r in man["rounds"])
        self.assertTrue(started, "no run round started")
        time.sleep(2.0)  # the nodes are set up and wait for the start instant
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130, out + err)
        self.assertNotIn("Traceback", err)
        rundir = self.path("results", "int")
        man = ct.load(man_path)
        self.assertEqual(man["interrupted"], "SIGINT")
        self.assertEqual([r["part"] for r in man["rounds"] if r["kind"] == "run"], ["4a"])
        for n in ("node1", "node2"):
            s = ct.load(os.path.join(rundir, "%s.4a.rep1.json" % n))
            self.assertEqual(s["status"], "interrupted")
            self.assertEqual(s["exit_code"], 130)
        self.assertTrue(os.path.exists(os.path.join(rundir, "report.txt")))
        self.assertIn("interrupted", out)
        self.assertEqual(sorted(os.listdir(self.path("stage", "server0"))), [])
        self.assertEqual(ct.processes_mentioning(self.path("results")), [])


class Launcher(ct.TempDirCase):
    def cluster(self, args, timeout=120):
        return ct.run_script("stagebench-cluster", args, timeout=timeout)

    def test_dry_run_prints_every_command(self):
        servers = self.path("servers")
        with open(servers, "w") as f:
            f.write("# node set -> server\nnode[1-2] stageA\nnode[3-4] stageB\n")
        p = self.cluster(["-w", "node[1-4]", "--servers", servers, "--dir", "/stage/x y",
                          "--results", self.path("r"), "--run-id", "dry", "--dry-run",
                          "--repeat", "2", "--scale", "small", "1a", "3", "4c"])
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout
        self.assertIn("info round", out)
        self.assertIn("server stageA: node[1-2] (preparer node1)", out)
        self.assertIn("server stageB: node[3-4] (preparer node3)", out)
        self.assertEqual(out.count(": prepare 1a ("), 2)   # recreated for each repetition
        self.assertEqual(out.count(": prepare 3 ("), 1)    # kept
        self.assertNotIn("prepare 4", out)
        for part in ("1a", "3a", "3b", "4c"):
            self.assertEqual(out.count("part %s starts at" % part), 2)
        self.assertIn("--start-at", out)
        self.assertIn("'/stage/x y'", out)  # quoted for the remote shell
        self.assertIn(" sh send ", out)  # copied back: each node prints its own summary
        self.assertIn("--lease ", out)
        self.assertIn("status --format json --renew --clock", out)
        self.assertIn("clush", out)
        self.assertFalse(os.path.exists(self.path("r")))
        # into a full disk, or a pipe its reader closed: one line, never a traceback
        with open("/dev/full", "w") as full:
            p = subprocess.run(ct.command("stagebench-cluster") + [
                "-w", "node[1-4]", "--results", self.path("r"), "--dry-run",
                "--local-stagebench", "none", "1a"], stdout=full, stderr=subprocess.PIPE,
                universal_newlines=True, env=ct.env(), timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "stagebench-cluster: error: cannot write stdout: No space "
                                   "left on device\n")
        cmd = ct.command("stagebench-cluster") + ["-w", "node[1-4]", "--results",
                                                   self.path("r"), "--dry-run",
                                                   "--local-stagebench", "none", "1a"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=ct.env())
        proc.stdout.close()  # the reader went away at once
        err = proc.stderr.read().decode()
        proc.wait(timeout=60)
        proc.stderr.close()
        self.assertEqual((proc.returncode, err), (0, ""))

    def test_report_of_many_under_a_sigterm_handler(self):
        """70 summaries are read by a pool of forked workers. In a process with a SIGTERM
        handler of its own (the launcher's, which prints the report itself) the workers are
        still forked with SIGTERM at its default, so that the pool's end (SIGTERM to each
        worker) ends them: with the launcher's handler a worker kept waiting, and the launcher
        waited for it, once a run had 64 summaries. With another thread running, no fork."""
        many = self.path("many")
        os.makedirs(many)
        os.makedirs(self.path("stage"))
        res = ct.run_nodes(["m0"], ["null"], self.path(), self.path("stage"), start_in=5.0)
        path, rc, err = res["m0"]
        self.assertEqual(rc, 0, err)
        one = ct.load(path)
        for i in range(70):
            one["node"] = "m%03d" % i
            with open(os.path.join(many, "m%03d.json" % i), "w") as f:
                json.dump(one, f)
        code = "\n".join([
            "import os, signal, sys, threading, time",
            "sys.path.insert(0, %r)" % ct.SCRIPTS,
            "signal.signal(signal.SIGTERM, lambda *a: None)",
            "from stagebench import collection",
            "reduce_chunk = collection.reduce_chunk",
            "def probe(items, seen=None):",
            "    records, sums = reduce_chunk(items, seen)",
            "    d = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL",
            "    return records + [('ignore', 'probe', (os.getpid(), d))], sums",
            "collection.reduce_chunk = probe",
            "def probes(c):",
            "    return [x['reason'] for x in c.ignored if x['file'] == 'probe']",
            "c = collection.collect([%r])" % many,
            "got = probes(c)",
            "print(len(c.nodes), len(set(x[0] for x in got if x[0] != os.getpid())),",
            "      all(x[1] for x in got if x[0] != os.getpid()))",
            "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()",
            "c = collection.collect([%r])" % many,
            "print(len(c.nodes), all(x[0] == os.getpid() for x in probes(c)))",
            "print(signal.getsignal(signal.SIGTERM) != signal.SIG_DFL)"])
        p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
                           env=ct.env())
        self.assertEqual(p.returncode, 0, p.stderr)
        workers = 2 if len(os.sched_getaffinity(0)) >= 2 else 0
        self.assertEqual(p.stdout.splitlines(), [
            "70 %d True" % workers if workers else "70 0 True", "70 True", "True"], p.stderr)

    def test_topology_tree_mode(self):
        """--topology FILE: ClusterShell's tree mode, every clush round through the gateways
        the file names, rooted at this host; the clock offsets through each gateway's relay
        (the gateways connected to from here); refused with the reason for another launcher,
        copy-back, a file that does not root at this host, or no file. (Run for real:
        test_tree.)"""
        import socket
        host = socket.gethostname().split(".")[0]
        topo = self.path("topology.conf")
        with open(topo, "w") as f:
            f.write("[routes]\n%s: gw1\ngw1: node[1-4]\n" % host)
        p = self.cluster(["-w", "node[1-4]", "--results", self.path("r"), "--run-id", "tree",
                          "--dry-run", "--scale", "tiny", "--topology", topo, "--gather",
                          "shared", "--interval", "5", "4"])
        self.assertEqual(p.returncode, 0, p.stderr)
        rounds = [ln for ln in p.stdout.splitlines() if ln.strip().startswith("clush ")]
        self.assertTrue(rounds)
        relay = [ln for ln in rounds if "relay.py>" in ln]
        self.assertEqual(len(relay), 1, p.stdout)
        self.assertNotIn(" --topology ", relay[0])  # the gateways themselves, from here
        for ln in rounds:
            if ln not in relay:
                self.assertIn(" --topology %s " % topo, ln)
        self.assertIn("clock offsets through the gateways (each measures its nodes, 8 "
                      "timestamp exchanges a node, and is measured by this host; next to "
                      "every part) on gw1:", p.stdout)
        self.assertIn("    gw1 measures node[1-4]", p.stdout)
        self.assertEqual(p.stdout.count("    arm 4 ("), 1)  # one arm round for 4a 4b 4c
        other = self.path("other.conf")
        with open(other, "w") as f:
            f.write("[routes]\nnot-this-host: gw1\ngw1: node[1-4]\n")
        r = self.path("r")
        for args, text in [
                (["--topology", topo, "--launcher", "pdsh", "--gather", "shared"],
                 "works with clush over ssh, not pdsh"),
                (["--topology", topo, "--exec"], "works with clush over ssh, not --exec"),
                (["--topology", topo], "give --gather shared"),
                (["--topology", other, "--gather", "shared"],
                 "(this host, the tree's root, is '%s')" % host),
                (["--topology", self.path("none"), "--gather", "shared"], "no such file")]:
            with self.subTest(args=args):
                p = self.cluster(["-w", "node[1-4]", "--results", r, "--scale", "tiny"] +
                                 args + ["1a"])
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn(text, p.stderr)
                self.assertFalse(os.path.exists(r))

    def test_bad_input_is_refused(self):
        r = self.path("r")
        cases = [
            (["-w", "n1;rm -rf /", "--results", r, "1a"], "not a valid node name"),
            (["-w", "n[1-2]", "--results", r, "9z"], "unknown test '9z'"),
            (["-w", "n[1-2]", "--results", r], "name at least one test"),
            (["--results", r, "1a"], "no nodes"),
            (["-w", "n1", "--results", r, "--run-id", "../x", "1a"], "--run-id"),
            (["-w", "n1", "--results", r, "--dir", "/s/%h", "1a"], "only with --exec"),
            (["-w", "n1", "--results", r, "--count", "5", "2"], "name a single part"),
            (["-w", "n1", "--results", r, "--lead", "1", "1a"], "--lead"),
            (["-w", "n1", "--results", r, "--launcher", "srun", "--exec", "1a"], "srun"),
            (["-w", "n[1-3]", "--results", r, "--launcher", "srun", "--fanout", "2", "1a"],
             "--fanout 2 is below the 3 nodes: srun holds a connection to every node"),
            (["-w", "n[1-2]", "--results", r, "--exec", "--fanout", "1", "1a"],
             "--fanout 1 is below the 2 nodes: --exec holds"),
            (["-w", "n1", "--results", r, "--hostfile", self.path("none"), "1a"],
             "host file"),
            (["-w", "n[1-2]", "-x", "n[1-2]", "--results", r, "1a"], "every node is excluded"),
            (["-w", "n1", "--results", r, "--local-stagebench", ct.BINARY, "--xfer", "1Q",
              "1a"], "--xfer '1Q' is malformed"),
            # the catalogue's ranges and scopes, with no stagebench here to ask
            (["-w", "n1", "--results", r, "--local-stagebench", "none", "--repeat", "0", "1a"],
             "--repeat '0' is out of range: expected a whole number from 1 to 10000"),
            (["-w", "n1", "--results", r, "--local-stagebench", "none", "--passes", "x", "1a"],
             "--passes 'x' is malformed"),
            (["-w", "n1", "--results", r, "--local-stagebench", "none", "--file-size", "8M",
              "1a", "2"], "--file-size overrides one test's replica: name a single test"),
        ]
        for args, text in cases:
            with self.subTest(args=args):
                p = self.cluster(args)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn(text, p.stderr)
                self.assertFalse(os.path.exists(r))
        p = ct.run_script("stagebench-sim", ["--nodes", "2", "--servers", "3", "--dir",
                                             self.path("d"), "--results", r, "1a"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("--servers 3 is out of range", p.stderr)
        p = ct.run_script("stagebench-sim", ["--nodes", "2", "--servers", "1", "--dir",
                                             self.path("d"), "--results", r,
                                             "--fault", "node7=hang", "1a"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("no simulated node node7", p.stderr)

    def test_run_options_checked_from_the_source_tree(self):
        """Run from scripts/ without installing: --dry-run and a real launch check the run
        options with --exec's binary, and say so when no stagebench can check them."""
        r = self.path("r")
        bad = ["--scale", "tiny", "--xfer", "1.5.3M", "2a"]
        for extra in (["--dry-run"], []):
            with self.subTest(extra=extra):
                p = self.cluster(["-w", "n[1-2]", "--exec", "--stagebench", ct.BINARY,
                                  "--dir", self.path("d%h"), "--results", r] + extra + bad)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn("the run options are refused: --xfer '1.5.3M' is malformed",
                              p.stderr)
                self.assertNotIn("info", p.stdout)
                self.assertFalse(os.path.exists(r))
        # ct.env() has no stagebench on PATH and none beside scripts/: only the catalogue
        p = self.cluster(["-w", "n[1-2]", "--results", r, "--dry-run"] + bad)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("warning: the run options are not checked before the launch: no "
                      "stagebench beside this command or on PATH", p.stderr)
        p = self.cluster(["-w", "n[1-2]", "--results", r, "--dry-run",
                          "--local-stagebench", "none"] + bad)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stderr, "")

    def test_unreachable_node_over_ssh(self):
        """A node that ssh cannot reach is recorded as unreachable; the launcher goes on."""
        cfg = self.path("ssh_config")
        with open(cfg, "w") as f:
            f.write("Host *\n  HostName 127.0.0.1\n  Port 9\n  BatchMode yes\n"
                    "  ConnectTimeout 5\n  StrictHostKeyChecking no\n"
                    "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n")
        p = self.cluster(["-w", "ghost[1-2]", "--launcher-option=-o",
                          "--launcher-option=-F %s" % cfg, "--stagebench", ct.BINARY,
                          "--results", self.path("r"), "--run-id", "u", "--scale", "tiny",
                          "1a"])
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("no node answered the info round", p.stderr)
        man = ct.load(self.path("r", "u", "manifest.json"))
        info = man["rounds"][0]
        self.assertEqual(sorted(info["failed"]), ["ghost1", "ghost2"])
        for f in info["failed"].values():
            self.assertEqual(f["status"], "unreachable")
            self.assertIn("cannot reach", f["error"])


class Cron(ct.TempDirCase):
    def cron(self, args, launcher_args):
        return ct.run_script("stagebench-cron", list(args) + ["--sim", "--"] + [
            "--nodes", "2", "--servers", "1", "--dir", self.path("stage"),
            "--stagebench", ct.BINARY, "--scale", "tiny"] + list(launcher_args), timeout=180)

    def test_baseline_lock_and_keep(self):
        res = self.path("res")
        base = self.path("baseline.json")
        p = self.cron(["--results", res, "--baseline", base, "--keep", "1"], ["1a"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout, "")  # quiet when all is well: cron mails nothing
        self.assertTrue(os.path.exists(base))
        runs = [d for d in os.listdir(res) if d.startswith("cron-")]
        self.assertEqual(len(runs), 1)
        with open(os.path.join(res, "stagebench-cron.log")) as f:
            log = f.read()
        self.assertIn("baseline %s created" % base, log)
        # a faster past: the next run regresses, is reported, and exits 1
        b = ct.load(base)
        for part in b["parts"].values():
            part["cluster_time_s"] /= 100
            part["nodes"] = {n: t / 100 for n, t in part["nodes"].items()}
        with open(base, "w") as f:
            json.dump(b, f)
        time.sleep(1.1)  # a new dated directory
        p = self.cron(["--results", res, "--baseline", base, "--keep", "1",
                       "--tolerance", "15%"], ["1a"])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("regressions against baseline", p.stdout)
        self.assertIn("node1", p.stdout)
        runs2 = [d for d in os.listdir(res) if d.startswith("cron-")]
        self.assertEqual(len(runs2), 1)   # --keep 1: the older run was removed
        self.assertNotEqual(runs2, runs)
        # a run that is still going holds the lock: the next one does not start
        with open(os.path.join(res, ".stagebench-cron.lock"), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            p = self.cron(["--results", res], ["1a"])
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("still holds", p.stderr)
        # the launcher's usage errors come through as 2
        p = self.cron(["--results", res], ["9z"])
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        p = ct.run_script("stagebench-cron", ["--results", res, "--", "--run-id", "x"])
        self.assertEqual(p.returncode, 2)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
