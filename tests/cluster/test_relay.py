# SPDX-License-Identifier: MIT
"""The clock relay of --topology (relay.py) on made-up trees, lines and clocks: which gateway
measures which nodes (ClusterShell's own topology parser), a dead gateway's nodes handed to its
live peers, the composition of two hops, the launcher's side of the protocol with what a
gateway may not say refused, and the program as a gateway runs it (python -c). End to end over
ssh through real gateways: test_tree."""
import os
import subprocess
import sys
import tempfile
import unittest

import clustertest as ct


def relay():
    from stagebench import relay as r
    return r


def tree(routes):
    from ClusterShell.Topology import TopologyParser
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.write("[routes]\n" + routes)
    try:
        return TopologyParser(f.name).tree("root")
    finally:
        os.unlink(f.name)


class Plan(unittest.TestCase):
    def test_two_gateways_share_their_nodes(self):
        nodes = ["n%d" % i for i in range(1, 8)] + ["n9"]
        direct, specs = relay().plan(tree("root: gw[1-2]\ngw[1-2]: n[1-7]\n"), nodes)
        self.assertEqual(direct, ["n9"])  # outside the tree: measured from the root
        self.assertEqual(specs["gw1"]["leaves"], ["n1", "n2", "n3", "n4"])
        self.assertEqual(specs["gw2"]["leaves"], ["n5", "n6", "n7"])
        self.assertEqual((specs["gw1"]["peers"], specs["gw2"]["peers"]), (["gw2"], ["gw1"]))
        self.assertEqual(specs["gw1"]["gateways"], {})

    def test_only_the_run_nodes_and_their_gateways(self):
        direct, specs = relay().plan(tree("root: gw1,gw2\ngw1: a[1-3]\ngw2: b[1-3]\n"),
                                     ["a2", "a3"])
        self.assertEqual((direct, sorted(specs)), ([], ["gw1"]))
        self.assertEqual(specs["gw1"]["leaves"], ["a2", "a3"])

    def test_three_levels(self):
        direct, specs = relay().plan(tree("root: top\ntop: mid[1-2]\nmid[1-2]: n[1-4]\n"),
                                     ["n1", "n2", "n3", "n4"])
        self.assertEqual((direct, list(specs)), ([], ["top"]))
        top = specs["top"]
        self.assertEqual(top["leaves"], [])  # mid1, mid2 are not run nodes
        self.assertEqual(sorted(top["gateways"]), ["mid1", "mid2"])
        self.assertEqual(top["gateways"]["mid1"]["leaves"], ["n1", "n2"])
        self.assertEqual(top["gateways"]["mid2"]["peers"], ["mid1"])
        self.assertEqual(relay().targets(top), ["n1", "n2", "n3", "n4"])

    def test_dead_gateways_handed_to_live_peers(self):
        r = relay()
        _d, specs = r.plan(tree("root: g[1-3],lone\ng[1-3]: n[1-6]\nlone: m[1-2]\n"),
                           ["n%d" % i for i in range(1, 7)] + ["m1", "m2"])
        common = {"command": "c", "relay": "r", "info": {}, "timeout": 5, "samples": 2}
        specs = dict((g, r.complete(s, common)) for g, s in specs.items())
        again = r.reassign(specs, ["g1", "lone"])
        self.assertEqual(sorted(again), ["g2", "g3"])  # lone had no peer: m1, m2 are lost
        self.assertEqual(again["g2"]["leaves"], ["n1"])
        self.assertEqual(again["g3"]["leaves"], ["n2"])
        self.assertEqual(again["g2"]["command"], "c")
        self.assertEqual(again["g2"]["peers"], [])  # handed on once, not again
        self.assertEqual(r.reassign(specs, ["g1", "g2", "g3"]), {})


class Compose(unittest.TestCase):
    def test_two_hops_add(self):
        """The gateway 2 s ahead of the launcher (+-100 us), the node 2 s behind the gateway
        (+-200 us), measured 10 s of launcher time after the gateway: the node is on time,
        within 300 us and 500 ppm of those 10 s."""
        t = 1796000000.0
        gw = {"offset_s": 2.0, "uncertainty_s": 1e-4, "measured_at": t}
        rec = {"offset_s": -2.0, "uncertainty_s": 2e-4, "rtt_s": 3e-4, "measured_at": t + 12.0,
               "ntp_synchronized": True, "maxerror_us": 5, "esterror_us": 1, "samples": 8,
               "via": ["below"]}
        e = relay().compose("gw1", gw, rec)
        self.assertAlmostEqual(e["offset_s"], 0.0, delta=1e-9)
        self.assertAlmostEqual(e["uncertainty_s"], 3e-4 + 500e-6 * 10.0, delta=1e-9)
        self.assertAlmostEqual(e["measured_at"], t + 10.0, delta=1e-6)
        self.assertEqual(e["via"], ["gw1", "below"])
        self.assertEqual((e["ntp_synchronized"], e["maxerror_us"], e["samples"]), (True, 5, 8))


class Protocol(unittest.TestCase):
    """The launcher's side (Conversation) against a made-up gateway g1 measuring n1 and n2."""

    def gateway(self, conv, offset_ns, records):
        """Play g1: ready, read its spec, its header, answer every token offset_ns ahead, then
        print records."""
        ready = conv.on_line("g1", '{"schema":"stagebench.relay/1","ready":true}', 0)
        spec = ready.decode()
        self.assertTrue(spec.endswith("\n"))
        tok = conv.on_line("g1", '{"schema":"stagebench.clock/1","node":"g1","relay":true}', 0)
        while tok is not conv.EOF:
            t_send = conv.ex._sent["g1"][1]
            tok = conv.on_line("g1", "%s %d" % (tok.decode().strip(), t_send + offset_ns + 500),
                               t_send + 1000)
        for rec in records:
            self.assertIsNone(conv.on_line("g1", rec, 0))
        return spec

    def test_a_gateway_and_its_nodes(self):
        import json
        r = relay()
        spec = {"leaves": ["n1", "n2"], "gateways": {}, "peers": []}
        conv = r.Conversation({"g1": spec}, 3)
        line = '{"schema":"stagebench.relay/1","node":"%s","offset_s":%s,"uncertainty_s":1e-4,' \
            '"rtt_s":2e-4,"measured_at":1796000000.0%s}'
        sent = self.gateway(conv, 10**9, [
            line % ("n1", "-0.25", ""),
            line % ("n2", "0.5", ',"via":["nowhere"]'),  # a gateway not beneath g1: refused
            line % ("n7", "9", ""),  # not g1's: ignored
            '{"schema":"stagebench.relay/1","node":"n1","why":"a second record: ignored"}'])
        self.assertEqual(json.loads(sent), spec)
        got, why = conv.results(["g1"], 0.0, 1796000001.0)
        self.assertEqual(sorted(got), ["n1"])
        self.assertAlmostEqual(got["n1"]["offset_s"], 0.75, delta=1e-6)  # -0.25 + 1 s
        self.assertEqual(got["n1"]["via"], ["g1"])
        self.assertEqual(why, {"n2": "its gateway g1 sent a record that is not an offset"})
        self.assertNotIn("g1", got)  # a gateway is not a node of the run
        self.assertEqual(conv.dead, [])

    def test_not_a_number_and_a_silent_gateway(self):
        r = relay()
        conv = r.Conversation({"g1": {"leaves": ["n1", "n2"], "gateways": {}}}, 2)
        self.gateway(conv, 0, [
            '{"schema":"stagebench.relay/1","node":"n1","offset_s":"0","uncertainty_s":0,'
            '"rtt_s":0,"measured_at":1796000000}',
            '{"schema":"stagebench.relay/1","node":"n2","why":"exit 255: Connection refused"}'])
        got, why = conv.results(["g1"], 0.0, 1796000001.0)
        self.assertEqual(got, {})
        self.assertEqual(why["n1"], "its gateway g1 sent a record that is not an offset")
        self.assertEqual(why["n2"], "through g1: exit 255: Connection refused")
        silent = r.Conversation({"g2": {"leaves": ["m1"], "gateways": {}}}, 2)
        silent.said["g2"] = "exit 255: ssh: connect to host gw2: Connection refused"
        got, why = silent.results(["g2"], 0.0, 1.0)
        self.assertEqual(why, {"m1": "its gateway g2: exit 255: ssh: connect to host gw2: "
                                     "Connection refused"})
        self.assertEqual(silent.dead, ["g2"])


class Program(unittest.TestCase):
    """The program a gateway runs, on this machine's Python: the protocol's lines; nothing to
    measure beneath it."""

    def run_program(self, stdin):
        return subprocess.run([sys.executable, "-c", relay().program()], input=stdin,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)

    def test_protocol(self):
        p = self.run_program(b'{"leaves":[],"gateways":{}}\nab1\nZ9\n')
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.decode().splitlines()
        self.assertEqual(lines[0], '{"schema":"stagebench.relay/1","ready":true}')
        self.assertIn('"schema":"stagebench.clock/1"', lines[1])
        self.assertRegex(lines[2], r"^ab1 \d{19}$")
        self.assertRegex(lines[3], r"^Z9 \d{19}$")
        self.assertEqual(len(lines), 4)

    def test_refusals(self):
        for stdin, code, said in [
                (b"not json\n", 2, "no spec on stdin"),
                (b'{"leaves":[],"gateways":{}}\nbad token!\n', 2, "a malformed token"),
                (b'{"leaves":[],"gateways":{}}\n' + b"x" * 40 + b"\n", 2, "a malformed token")]:
            with self.subTest(stdin=stdin[:40]):
                p = self.run_program(stdin)
                self.assertEqual(p.returncode, code, p.stderr)
                self.assertIn(said, p.stderr.decode())
                self.assertNotIn(b"Traceback", p.stderr)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main()
