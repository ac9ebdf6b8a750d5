# SPDX-License-Identifier: MIT
"""The node-time plot (stagebench.plot) at the size it is made for: a synthetic report of
1,000 nodes on 16 /stage servers with 31 slow nodes on one server and a few on others. It
renders (SVG and PNG) within time, names at most MAX_LABELS slow nodes per panel and counts
the others per server, keeps labels apart, draws one panel per part with its own unit, and
shows names from nodes and servers as plain text (no mathtext, no control characters)."""
import os
import random
import re
import time
import unittest

import clustertest as ct

NODES = ["cn%04d" % i for i in range(1, 1001)]
SERVERS = ["stage%d:/export" % i for i in range(16)]
SLOW = 34       # slow_of: 31 nodes of server 3 and three others
BUDGET_S = 60.0  # one render on a loaded 2-core machine takes a few seconds


def server_of(i):
    return SERVERS[i * len(SERVERS) // len(NODES)]


def slow_of(i):
    """Whether node i is slow (in every part but 2a): half of server 3's, and three more."""
    return (server_of(i) == SERVERS[3] and i % 2 == 0) or i in (7, 500, 999)


def synthetic_report():
    """A report (stagebench.model.Report) of 1,000 nodes as the collector builds one, with
    what the plot reads: each part's node results, median and start, the nodes' servers."""
    from stagebench import model
    rnd = random.Random(12)
    # a hostile server name: mathtext and a control character must reach the plot as text
    names = dict((s, s) for s in SERVERS)
    names[SERVERS[5]] = "st$a$ge\x1b[31m"
    node_servers = dict((n, names[server_of(i)]) for i, n in enumerate(NODES))
    parts = []
    for part, scale in (("1a", 20.0), ("2a", 0.00018), ("2c", 0.9), ("4a", 3e-6)):
        times = {}
        for i, n in enumerate(NODES):
            t = scale * rnd.uniform(0.9, 1.1)
            if slow_of(i) and part != "2a":
                t = scale * (3.0 if i in (7, 500, 999) else rnd.uniform(1.5, 2.5))
            times[n] = t
        med = sorted(times.values())[len(times) // 2]
        parts.append(model.PartResult.make(
            part=part, test=part[0], repetition=1, start_at=1.7e9,
            node_time_s=model.Stats(min=min(times.values()), median=med,
                                    max=max(times.values())),
            nodes_failed=0, nodes_missing=0,
            node_results=[model.NodeResult.make(node=n, server=node_servers[n], status="ok",
                                                ok=True, node_time_s=t)
                          for n, t in times.items()]))
    return model.Report.make(
        run_id="synthetic-$1000$", scale="tiny", status="ok",
        nodes=model.NodeCounts.make(seen=1000, expected=1000, failed=[], missing=[]),
        clock=model.ClockSummary.make(unsynchronized_nodes=[]), parts=parts, regressions=[],
        baseline=None, node_servers=node_servers)


class Plot(ct.TempDirCase):
    @classmethod
    def setUpClass(cls):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise unittest.SkipTest("no matplotlib here (Debian: python3-matplotlib)")
        from stagebench import plot
        cls.plot = plot

    def test_layout_bounds_labels_and_counts_the_rest(self):
        self.assertEqual(sum(1 for i in range(len(NODES)) if slow_of(i)), SLOW)
        lay = self.plot.layout(synthetic_report(), slow=0.25)
        self.assertEqual([p["title"] for p in lay["panels"]], ["1a", "2a", "2c", "4a"])
        self.assertEqual(len(lay["servers"]), 16)
        for p in lay["panels"]:
            self.assertEqual(len(p["points"]), 1000)
            if p["title"] == "2a":
                self.assertEqual((p["slow"], p["labels"], p["unlabelled"]), (0, [], []))
                continue
            self.assertEqual(p["slow"], SLOW)
            self.assertEqual(len(p["labels"]), self.plot.MAX_LABELS)
            # the slowest are named (the three at 3x), the rest counted per server
            self.assertEqual(set(pt[2] for pt in p["labels"][:3]),
                             {"cn0008", "cn0501", "cn1000"})
            self.assertEqual(sum(n for _s, n in p["unlabelled"]) + len(p["labels"]), SLOW)
            self.assertEqual(p["unlabelled"][0][0], SERVERS[3])
        # nodes are grouped by server: x positions increase server by server
        xs = dict((pt[2], pt[0]) for pt in lay["panels"][0]["points"])
        self.assertTrue(xs["cn0063"] < xs["cn0064"])
        self.assertTrue(xs["cn0064"] - xs["cn0063"] > 1)  # a gap between two servers

    def test_labels_never_overlap(self):
        rnd = random.Random(3)
        for _ in range(200):
            ys = sorted((rnd.random() for _ in range(rnd.randint(1, self.plot.MAX_LABELS))),
                        reverse=True)
            out = self.plot._spread_labels(ys, self.plot.LABEL_GAP)
            self.assertEqual(len(out), len(ys))
            for a, b in zip(out, out[1:]):
                self.assertGreaterEqual(a - b, self.plot.LABEL_GAP - 1e-9)
            self.assertTrue(all(0.0 <= y <= 1.0 for y in out), out)

    def test_renders_1000_nodes_within_time(self):
        report = synthetic_report()
        svg = self.path("nodes.svg")
        t0 = time.monotonic()
        self.assertEqual(self.plot.plot(report, svg), "matplotlib")
        took = time.monotonic() - t0
        self.assertLess(took, BUDGET_S)
        with open(svg) as f:
            text = f.read()
        # text stays text: node names that are labels appear, the others do not
        named = set(re.findall(r"cn\d{4}", text))
        self.assertLessEqual(len(named), 3 * self.plot.MAX_LABELS)
        self.assertTrue({"cn0008", "cn0501", "cn1000"} <= named)
        self.assertIn("more slow (stage3:/export: ", text)
        self.assertIn("synthetic-$1000$", text)     # shown literally, not as mathtext
        self.assertIn("st$a$ge\\x1b[31m", text)
        self.assertNotIn("\x1b", text)
        self.assertIn("+4 more servers", text)
        self.assertIn("node time (us)", text)        # 4a: its own unit
        self.assertIn("node time (s)", text)         # 1a
        png = self.path("nodes.png")
        self.plot.plot(report, png)
        with open(png, "rb") as f:
            self.assertEqual(f.read(4), b"\x89PNG")
        self.assertEqual(sorted(os.listdir(self.dir)), ["nodes.png", "nodes.svg"])
        print("1,000 nodes, 4 parts: SVG in %.2f s" % took)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
