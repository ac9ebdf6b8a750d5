# SPDX-License-Identifier: MIT
"""The launcher's limits over real ssh (a private sshd on 127.0.0.1, node names as ssh aliases
of this machine): a node whose status answers overrun their per-node limit ends the run with a
report and a finished manifest (exit 1, the node named), never a crash; a round past its bound
is stopped through ClusterShell and its unfinished nodes are not reached, never unreachable;
2,000 names that cannot be resolved beside one reachable node: the node runs, the unreachable
are folded with their reason, in bounded time; a fan-out that the descriptor limit cannot hold
is lowered; dead nodes (a closed port, a listener that never answers) do not raise the lead of
the living; the launcher run from the build tree reports with the catalogue of the binary it
launched with."""
import os
import socket
import subprocess
import time
import unittest

import clustertest as ct


def setUpModule():
    global BASE, SSH
    BASE, SSH = ct.start_module_sshd("stagebench-launch-limits-")


def tearDownModule():
    ct.stop_module_sshd(BASE, SSH)


def dead_hosts(path, names_ports):
    """More Host blocks in the ssh config at path: each name to 127.0.0.1 at its port."""
    with open(path, "a") as f:
        for name, port in names_ports:
            f.write("Host %s\n  HostName 127.0.0.1\n  Port %d\n  BatchMode yes\n"
                    "  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"
                    "  LogLevel ERROR\n\n" % (name, port))


class Limits(ct.TempDirCase):
    def launch(self, nodes, run_id, extra=(), tests=("null",), cfg=None, env=None, timeout=240,
               prefix=()):
        cfg = cfg or SSH.ssh_config(nodes)
        os.makedirs(self.path("stage"), exist_ok=True)
        cmd = list(prefix) + ct.command("stagebench-cluster") + [
            "-w", ",".join(nodes) if isinstance(nodes, list) else nodes,
            "--launcher-option=-o", "--launcher-option=-F %s" % cfg,
            "--stagebench", ct.BINARY, "--dir", self.path("stage"),
            "--results", self.path("results"), "--run-id", run_id,
            "--scratch", self.path("scratch"), "--scale", "tiny",
            "--max-offset", "10"] + list(extra) + list(tests)
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, env=env or ct.env(),
                           stdin=subprocess.DEVNULL, timeout=timeout)
        p.took = time.monotonic() - t0
        self.assertNotIn("Traceback", p.stderr)
        return p

    def rundir(self, run_id):
        return self.path("results", run_id)

    def test_status_overrun_ends_with_a_report(self):
        """nodeC's status answers take 20 s, past --poll-timeout 3: nodeC is stopped by its own
        limit in every status round (the round goes on for the others) and given up after
        three; the run ends with report.txt, report.json and a finished manifest, never exit 2,
        nodeC named. Its summary arrived (the part is short), so its figures count: exit 0,
        and the report says what went wrong on the way."""
        wrapper = self.path("slow-status")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nif [ "$1" = status ] && [ "$STAGEBENCH_NODE" = nodeC ]; then '
                    'sleep 20; fi\nexec %s "$@"\n' % ct.BINARY)
        os.chmod(wrapper, 0o755)
        nodes = ["nodeA", "nodeB", "nodeC"]
        p = self.launch(nodes, "overrun", ["--stagebench", wrapper, "--local-stagebench",
                                           ct.BINARY, "--poll-timeout", "3",
                                           "--connect-timeout", "3", "--gather", "shared"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        rundir = self.rundir("overrun")
        for f in ("report.txt", "report.json"):
            self.assertTrue(os.path.exists(os.path.join(rundir, f)), f)
        man = ct.load(os.path.join(rundir, "manifest.json"))
        self.assertIsNotNone(man["finished_at"])
        self.assertNotIn("engine_errors", man)
        said = "nodeC (null rep 1): unanswered: its state could not be read: 3 status rounds " \
            "without its state (the last: no answer within --poll-timeout 3 s); its summary " \
            "arrived and counts"
        self.assertIn(said, man["warnings"])
        self.assertIn(said, open(os.path.join(rundir, "report.txt")).read())
        rep = ct.load(os.path.join(rundir, "report.json"))
        self.assertEqual(rep["parts"][0]["nodes_ok"], 3)
        self.assertLess(p.took, 90, "the slow node set the pace of the others' polls")
        # its last status command sleeps on, on "the node", until it writes to the connection
        # the launcher closed
        deadline = time.monotonic() + 30
        while ct.processes_mentioning(wrapper) and time.monotonic() < deadline:
            time.sleep(0.5)

    def test_round_past_its_bound_is_stopped_through_clustershell(self):
        """A round whose bound is shorter than its nodes' commands (the bound made small
        here; a real one is waves x per-node limit): stopped through ClusterShell, its nodes
        not reached (never unreachable, never dead), no exception, no process left."""
        from stagebench import engines, rounds

        class Plan(object):
            rundir = self.dir
            engine = engines.make("clush", True, [], None)
            nodes = ["n1", "n2"]
            poll_timeout = 60

        class Manifest(object):
            def engine_error(self, *a):
                raise AssertionError("no engine error expected: %r" % (a,))

            def round_time(self, *a):
                pass

        os.makedirs(self.path("logs"))
        Plan.engine.round_bound = lambda count, limit: 2.0
        r = rounds.Rounds(Plan(), Manifest())
        t0 = time.monotonic()
        # a sleep of this test's own (another test's "sleep 60" may run beside it)
        sleep = "sleep 60.%06d" % os.getpid()
        res, _dt = r.run("bound", ["n1", "n2"], ["sh", "-c", sleep, "sh", engines.NODE], 100)
        self.assertLess(time.monotonic() - t0, 20)
        for n in ("n1", "n2"):
            self.assertTrue(res[n].aborted)
            self.assertEqual(r.classify(res[n], "x")[0], "not_reached")
        failed = r.record_failures({"what": "the bound round"}, res, "x")
        self.assertEqual({f["status"] for f in failed.values()}, {"not_reached"})
        self.assertEqual(r.dead, {})
        self.assertEqual(ct.processes_mentioning(sleep), [])

    def test_two_thousand_unresolvable_names_and_one_node(self):
        """2,000 names nothing resolves beside one reachable node: the node runs the part, the
        terminal and the report fold the others with their reason, in bounded time. Each name
        is one label of 64 characters, more than a DNS label may hold (63), so that the
        resolver refuses it at once, as a site's DNS answers an unknown name at once: this
        machine's DNS server drops bursts of queries, and ordinary names would wait out its
        timeouts (5 s a query), which is its cost, not the launcher's."""
        ghost = "g" * 60
        cfg = SSH.ssh_config(["nodeA"])
        p = self.launch("%s[0001-2000],nodeA" % ghost, "ghosts", ["--gather", "shared"],
                        cfg=cfg, timeout=280)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertLess(p.took, 240)
        print("2,000 unresolvable names and one node: %.1f s" % p.took)
        self.assertIn("info round: 1 of 2001 nodes answered", p.stderr)
        self.assertIn("%s[0001-2000]: cannot reach the node: name not known" % ghost, p.stderr)
        rundir = self.rundir("ghosts")
        rep = ct.load(os.path.join(rundir, "report.json"))
        self.assertEqual(rep["parts"][0]["nodes_ok"], 1)
        text = open(os.path.join(rundir, "report.txt")).read()
        self.assertIn("2000 nodes unreachable in the info round, left out of the run: "
                      "%s[0001-2000]" % ghost, text)
        self.assertLess(len(text.splitlines()), 120, "the unreachable nodes are not folded")
        man = ct.load(os.path.join(rundir, "manifest.json"))
        failed = man["rounds"][0]["failed"][ghost + "0001"]
        self.assertEqual(failed["status"], "unreachable")
        self.assertIn("resolve", failed["detail"])

    def test_fanout_lowered_to_the_descriptor_limit(self):
        """ulimit -n 256 and --fanout 100: the fan-out is lowered, said in one line, and the
        run goes through."""
        nodes = ["nodeA", "nodeB", "nodeC"]
        p = self.launch(nodes, "fds", ["--fanout", "100", "--gather", "shared"],
                        prefix=["prlimit", "--nofile=256:256", "--"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("a fan-out of 100 needs about 464 open descriptors and this process "
                      "may have 256 (ulimit -n, hard limit 256): fan-out lowered to 48",
                      p.stderr)
        man = ct.load(os.path.join(self.rundir("fds"), "manifest.json"))
        self.assertEqual(man["launcher"]["fanout"], 48)

    def test_dead_nodes_do_not_raise_the_lead(self):
        """Two living nodes, two on a closed port, two on a listener that never answers, with
        --connect-timeout 4: the dead are unreachable (connection refused, connect timeout),
        folded, left out of later rounds, and the lead comes from the living (the minimum),
        not from their connect timeout."""
        closed = ct.free_port()
        silent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        self.addCleanup(silent.close)
        cfg = SSH.ssh_config(["nodeA", "nodeB"])
        dead_hosts(cfg, [("closed1", closed), ("closed2", closed),
                         ("silent1", silent.getsockname()[1]),
                         ("silent2", silent.getsockname()[1])])
        nodes = ["nodeA", "nodeB", "closed1", "closed2", "silent1", "silent2"]
        p = self.launch(nodes, "dead", ["--connect-timeout", "4", "--gather", "shared"],
                        cfg=cfg)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("closed[1-2]: cannot reach the node: connection refused", p.stderr)
        self.assertIn("silent[1-2]: cannot reach the node: connect timeout", p.stderr)
        man = ct.load(os.path.join(self.rundir("dead"), "manifest.json"))
        self.assertGreaterEqual(man["launch"]["info_s"], 4.0)  # the round waited for them
        self.assertLess(man["launch"]["info_live_s"], 3.0)
        run = [r for r in man["rounds"] if r["kind"] == "run"][0]
        self.assertLess(run["lead_s"], 7.0, "the lead counts the dead nodes' connect timeout")
        self.assertEqual(sorted(n for n, f in run["failed"].items()
                                if f["status"] == "skipped"),
                         ["closed1", "closed2", "silent1", "silent2"])
        rep = ct.load(os.path.join(self.rundir("dead"), "report.json"))
        self.assertEqual(rep["parts"][0]["nodes_ok"], 2)

    def test_128_core_nodes_answer_the_info_round_in_a_line(self):
        """Two nodes of 128 cores each (hwloc's synthetic topology, HWLOC_SYNTHETIC; the
        launcher's exec mode): each answers the info round in one line of under 2 KiB, its
        128 threads as CPU lists, whatever its cores. (The part itself cannot bind threads
        to synthetic CPUs: it fails, which is not what this test is about.)"""
        env = ct.env()
        env["HWLOC_SYNTHETIC"] = "pack:2 core:64 pu:1"
        os.makedirs(self.path("stage"))
        p = subprocess.run(ct.command("stagebench-cluster") + [
            "-w", "big[1-2]", "--exec", "--stagebench", ct.BINARY, "--local-stagebench",
            "none", "--dir", self.path("stage"), "--results", self.path("results"),
            "--run-id", "big", "--scale", "tiny", "--max-offset", "10", "null"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
            stdin=subprocess.DEVNULL, timeout=240)
        self.assertNotIn("Traceback", p.stderr)
        self.assertIn("info round: 2 of 2 nodes answered", p.stderr)
        with open(self.path("results", "big", "logs", "001-info.out")) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), 2, lines)
        for line in lines:
            self.assertLess(len(line), 2048, line)
        info = ct.load(self.path("results", "big", "info.json"))
        for n in ("big1", "big2"):
            self.assertEqual(info[n]["threads"]["count"], 128)
            self.assertEqual(info[n]["threads"]["cpus"], "0-127")

    def test_build_tree_launcher_reports(self):
        """From the build tree, with no STAGEBENCH_CATALOGUE and no stagebench on PATH: the
        launcher reads the catalogue of the binary it launches with (--local-stagebench), and
        so does its report at the end."""
        env = ct.env()
        env.pop("STAGEBENCH_CATALOGUE", None)
        env["PATH"] = "/usr/bin:/bin"
        p = self.launch(["nodeA"], "tree", ["--local-stagebench", ct.BINARY, "--gather",
                                             "shared"], env=env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.rundir("tree"), "report.json")))
        self.assertIn("status: ok", p.stdout)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
