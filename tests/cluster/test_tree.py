# SPDX-License-Identifier: MIT
"""--topology for real: ClusterShell's tree mode over a private sshd on 127.0.0.1, the gateways
and the nodes ssh aliases of this machine, each gateway a real ClusterShell gateway (python3 -m
ClusterShell.Gateway on the launcher's interpreter). A run through two gateways, each node's
clock measured by its gateway and each gateway's by the launcher (relay.py: an exchange on
every hop, composed), the start judged held from those offsets; a wrong clock on a gateway and
on a node (libfaketime) each found where it is; a tree of three levels; a dead gateway whose
peer takes its nodes, and one without a peer, whose nodes alone are lost, with its reason."""
import os
import socket
import subprocess
import unittest

import clustertest as ct

NODES = ["node1", "node2", "node3", "node4"]
GATEWAYS = ["gw1", "gw2"]


def setUpModule():
    global BASE, SSH
    BASE, SSH = ct.start_module_sshd("stagebench-tree-")


def tearDownModule():
    ct.stop_module_sshd(BASE, SSH)


class Tree(ct.TempDirCase):
    def setUp(self):
        ct.TempDirCase.setUp(self)
        self.host = socket.gethostname().split(".")[0]
        self.cfg = SSH.ssh_config(NODES + GATEWAYS)
        with open(self.cfg, "a") as f:  # a name whose port nobody listens on
            f.write("\nHost gwdead gwlone\n  HostName 127.0.0.1\n  Port %d\n  BatchMode yes\n"
                    "  LogLevel ERROR\n" % ct.free_port())
        os.makedirs(self.path("stage"))
        # every gateway's Python (ClusterShell's gateway, and the clock relay), noting what
        # it ran: the rounds did go through the gateways
        self.gwlog = self.path("gateways.log")
        self.gwlogdir = self.path("gateways-logdir.log")
        self.gwpython = self.wrapper("gwpython", "/usr/bin/python3",
                                     'echo "$STAGEBENCH_NODE $1" >> %s; echo '
                                     '"$1 ${CLUSTERSHELL_GW_LOG_DIR-unset}" >> %s'
                                     % (self.gwlog, self.gwlogdir))

    def wrapper(self, name, target, line="", faked=None):
        """An executable that runs target, after line, under libfaketime at faked[0] seconds
        for the node named faked[1] (STAGEBENCH_NODE, set by the ssh config)."""
        lines = ["#!/bin/sh", line]
        if faked is not None:
            from stagebench import sim
            lib = sim.faketime_library()
            if lib is None:
                self.skipTest("no libfaketimeMT.so.1 (Debian: faketime)")
            lines += ['if [ "$STAGEBENCH_NODE" = %s ]; then' % faked[1],
                      "  LD_PRELOAD=%s FAKETIME=%+.1f FAKETIME_DONT_FAKE_MONOTONIC=1" % (
                          lib, faked[0]),
                      "  export LD_PRELOAD FAKETIME FAKETIME_DONT_FAKE_MONOTONIC", "fi"]
        lines.append('exec %s "$@"' % target)
        path = self.path(name)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.chmod(path, 0o755)
        return path

    def topology(self, routes):
        path = self.path("topology.conf")
        with open(path, "w") as f:
            f.write("[routes]\n" + routes.replace("HOST", self.host))
        return path

    def launch(self, routes, run_id, nodes="node[1-4]", stagebench=None, tests=("null",),
               env=None):
        e = ct.env()
        e["CLUSTERSHELL_GW_PYTHON_EXECUTABLE"] = self.gwpython
        e.update(env or {})
        p = subprocess.run(ct.command("stagebench-cluster") + [
            "-w", nodes, "--topology", self.topology(routes),
            "--launcher-option=-o", "--launcher-option=-F %s" % self.cfg,
            "--stagebench", stagebench or ct.BINARY, "--local-stagebench", ct.BINARY,
            "--dir", self.path("stage"), "--results", self.path("results"),
            "--run-id", run_id, "--scratch", self.path("scratch"), "--gather", "shared",
            "--scale", "tiny", "--connect-timeout", "5", "--max-offset", "10"] + list(tests),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=e,
            stdin=subprocess.DEVNULL, timeout=280)
        self.assertNotIn("Traceback", p.stderr)
        rundir = self.path("results", run_id)
        self.man = ct.load(os.path.join(rundir, "manifest.json"))
        self.rep = ct.load(os.path.join(rundir, "report.json"))
        return p

    def measured(self):
        """{node: [each measurement's entry]} of the run's clock measurements."""
        out = {}
        for m in self.man["clock"]["measurements"]:
            self.assertEqual(m["method"], "relay")
            for n, e in m["nodes"].items():
                out.setdefault(n, []).append(e)
        return out

    def start(self):
        return [p["start"] for p in self.rep["parts"]]

    def test_two_gateways_measure_their_nodes(self):
        """Every round but the gateways' own goes through the gateways; each node is measured
        next to every part through the gateway that measured it, within a millisecond or so
        here; the start is held, judged from those offsets; the launcher made connections to
        the two gateways only for the clock."""
        # ClusterShell's gateway logs to /tmp/HOST.gw.log by default: a name another user of
        # a shared gateway can make a link at, written through by root; the launcher points
        # the log where it cannot be opened (a site may name a directory)
        default_log = "/tmp/%s.gw.log" % self.host

        def log_state():
            try:
                st = os.lstat(default_log)
                return (st.st_ino, st.st_size, st.st_mtime_ns)
            except FileNotFoundError:
                return None
        before = log_state()
        p = self.launch("HOST: gw[1-2]\ngw[1-2]: node[1-4]\n", "two", tests=("null", "1a"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(log_state(), before, default_log)
        with open(self.gwlogdir) as f:
            self.assertEqual({line for line in f.read().splitlines() if line.startswith("-m ")},
                             {"-m /dev/null"})
        self.assertIn("clock offsets before the first part (relay, 8 samples a node): 4 nodes "
                      "measured", p.stderr)
        self.assertEqual(self.man["clock"]["method"], "relay")
        got = self.measured()
        self.assertEqual(sorted(got), NODES)
        for n, entries in got.items():
            self.assertGreaterEqual(len(entries), 4, n)  # the start, each part twice, the end
            for e in entries:
                self.assertIn(e["via"], (["gw1"], ["gw2"]), n)
                self.assertLess(abs(e["offset_s"]), 0.05, (n, e))
                self.assertLess(e["uncertainty_s"], 0.05, (n, e))
                self.assertGreater(e["uncertainty_s"], 0)
        vias = set(e["via"][0] for es in got.values() for e in es)
        self.assertEqual(vias, {"gw1", "gw2"})
        relay_rounds = [r for r in self.man["launch"]["rounds"] if r["round"].endswith("-relay")]
        self.assertTrue(relay_rounds)
        for r in relay_rounds:
            self.assertEqual(r["nodes"], 2, r)
        self.assertEqual([s["verdict"] for s in self.start()], ["held", "held"], self.start())
        with open(self.gwlog) as f:
            ran = f.read().splitlines()
        # ClusterShell's gateway (-m ClusterShell.Gateway) on both, every tree round; the
        # relay (-c) on both, every clock measurement
        self.assertEqual(set(ran), {"gw1 -m", "gw2 -m", "gw1 -c", "gw2 -c"}, ran)
        self.assertEqual(sorted(os.listdir(self.path("results", "two"))).count(
            "node1.null.rep1.json"), 1)

    def test_wrong_clocks_on_a_gateway_and_a_node(self):
        """gw1's clock 2 s ahead (its Python under libfaketime), node3's stagebench 1.5 s
        behind: the hops compose to the truth, node3 at -1.5 s and gw1's nodes at 0, and the
        start is NOT held for node3 alone."""
        self.gwpython = self.wrapper("gwpython-fast", "/usr/bin/python3",
                                     faked=(2.0, "gw1"))
        slow = self.wrapper("stagebench-slow", ct.BINARY, faked=(-1.5, "node3"))
        p = self.launch("HOST: gw1,gw2\ngw1: node[1-2]\ngw2: node[3-4]\n", "skew",
                        stagebench=slow)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        got = self.measured()
        for n, entries in got.items():
            want = -1.5 if n == "node3" else 0.0
            for e in entries:
                self.assertLess(abs(e["offset_s"] - want), 0.05, (n, e))
                self.assertLess(e["uncertainty_s"], 0.05, (n, e))
        self.assertEqual(got["node1"][0]["via"], ["gw1"])
        start = self.start()[0]
        self.assertEqual(start["verdict"], "NOT held", start)
        self.assertEqual([o["node"] for o in start["nodes_out"]], ["node3"], start)

    def test_three_levels(self):
        """A gateway behind a gateway: the nodes measured by gw2, gw2 by gw1, gw1 by the
        launcher, composed hop by hop."""
        p = self.launch("HOST: gw1\ngw1: gw2\ngw2: node[1-4]\n", "deep")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for n, entries in self.measured().items():
            for e in entries:
                self.assertEqual(e["via"], ["gw1", "gw2"], n)
                self.assertLess(e["uncertainty_s"], 0.05, (n, e))
        self.assertEqual(self.start()[0]["verdict"], "held")

    def test_dead_gateways(self):
        """gwdead beside a live peer: its nodes run and are measured through gw1. gwlone, with
        no peer: its nodes alone are unreachable, said with its reason, folded; the others run
        and are measured."""
        p = self.launch("HOST: gwdead,gw1,gwlone\ngwdead,gw1: node[1-2]\ngwlone: node[3-4]\n",
                        "dead")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        said = "node[3-4]: cannot reach the node: no gateway reached it: gwlone: connection " \
            "refused"
        self.assertIn(said, p.stderr)
        self.assertIn(said, "\n".join(self.man["warnings"]))
        got = self.measured()
        self.assertEqual(sorted(got), ["node1", "node2"])
        for e in got["node1"] + got["node2"]:
            self.assertEqual(e["via"], ["gw1"])
        part = self.rep["parts"][0]
        self.assertEqual(part["nodes_ok"], 2, part)
        self.assertEqual(self.start()[0]["verdict"], "held")


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main()
