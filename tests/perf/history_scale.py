#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The history at cluster scale: a year of nightly 10,000-node runs.

Not a test: it prints figures and the goals of issue 23 (one 10,000-node run recorded in under
10 s; the regressions of a year of nightly runs judged in under 30 s), and exits 0 once it has
measured (2 when it cannot run). CI does not run it.

    python3 tests/perf/history_scale.py [--nodes 10000] [--servers 40] [--nights 365]
                                        [--parts 1a,1b,2a,2b,2c,3a,3b,4a,4b,4c]
                                        [--base /tmp] [--keep]

It records synthetic nights (tests/cluster/histgen.py: every node its own level times 3% noise;
from night nights-40 one node 30% slower and one server's nodes 30% slower) into a new
history through histdb.record, one transaction a night as the collector does, timing each
night's recording, then times the judgement of the last night (stagebench.regress, the
defaults: the last 10 nights, a window of 60 nights for lasting changes) and reports the
file's size. (`stagebench-history ingest DIR` adds reading the summaries through the input
door, which tests/perf/collect_scale.py measures for the collector.)
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "tests", "cluster"))
from stagebench import histdb, regress  # noqa: E402
import histgen  # noqa: E402


def level_of(nodes, servers, change_at):
    slow_server = 1

    def level(part, i, n):
        base = 0.1 * (1.0 + 0.02 * (i % 7))
        if n >= change_at and (i == 17 or (i * servers) // nodes == slow_server):
            return base * 1.3
        return base
    return level


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--servers", type=int, default=40)
    ap.add_argument("--nights", type=int, default=365)
    ap.add_argument("--parts", default="1a,1b,2a,2b,2c,3a,3b,4a,4b,4c")
    ap.add_argument("--base", default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    parts = tuple(args.parts.split(","))
    if "STAGEBENCH_CATALOGUE" not in os.environ:
        built = os.path.join(REPO, "build", "catalogue.json")
        if os.path.exists(built):
            os.environ["STAGEBENCH_CATALOGUE"] = built
    base = tempfile.mkdtemp(prefix="stagebench-history-scale-", dir=args.base)
    os.chmod(base, 0o700)
    path = os.path.join(base, "history.sqlite")
    names, srv = histgen.nodes_and_servers(args.nodes, args.servers)
    level = level_of(args.nodes, args.servers, args.nights - 40)
    times = []
    try:
        t0 = time.time()
        with histdb.open_history(path) as h:
            for n in range(args.nights):
                run = histgen.night(n, names, srv, parts, level)
                t = time.time()
                histdb.record(h, run)
                times.append(time.time() - t)
                if n % 30 == 0 or n == args.nights - 1:
                    print("night %d: %d results recorded in %.2f s (%.0f s so far)" % (
                        n, len(run.results), times[-1], time.time() - t0), flush=True)
        size = os.path.getsize(path)
        print("recorded %d nights of %d nodes x %d parts (%d results a night): median %.2f s, "
              "max %.2f s a night (goal < 10 s: %s)" % (
                  args.nights, args.nodes, len(parts), args.nodes * len(parts),
                  statistics.median(times), max(times),
                  "met" if max(times) < 10 else "NOT met"))
        print("history file: %.1f MiB (%.0f bytes a result)" % (
            size / 1048576.0, size / float(args.nights * args.nodes * len(parts))))
        for attempt in (1, 2):
            t = time.time()
            with histdb.open_history(path, create=False) as h:
                _tonight, findings, j = regress.judge(h)
            took = time.time() - t
            flagged = [f for f in findings if f.flagged]
            print("regressions of the last night (%s): %.2f s, %d series judged, %d flagged: "
                  "%s (goal < 30 s: %s)" % (
                      "cold" if attempt == 1 else "warm", took, j.judged, len(flagged),
                      ", ".join(sorted(set("%s %s" % (f.kind, f.name)
                                           for f in flagged))) or "none",
                      "met" if took < 30 else "NOT met"))
    finally:
        if not args.keep:
            shutil.rmtree(base, True)
        else:
            print("kept %s" % base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
