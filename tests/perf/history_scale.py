#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The history at cluster scale: one real 10,000-node run ingested, and a year of nightly
10,000-node runs judged.

Not a test: it prints figures and the goals of issue 23 (one 10,000-node run ingested in under
10 s; the regressions of a year of nightly runs judged in under 30 s), and exits 0 once it has
measured (2 when it cannot run). CI does not run it. Run it alone:
`flock /tmp/stagebench-bench.lock python3 tests/perf/history_scale.py`.

    python3 tests/perf/history_scale.py [--nodes 10000] [--threads 128] [--nights 365]
                                        [--parts 1a,1b,2a,2b,2c,3a,3b,4a,4b,4c]
                                        [--base /tmp] [--keep] [--python /usr/bin/python3]
                                        [--catalogue build/catalogue.json]

1. The run: the node summaries of one 10,000-node run as the binary writes them, and its
   launcher manifest (tests/perf/collect_scale.py's generator: part 2a, 128 threads a node),
   ingested by `stagebench-history --history FILE ingest DIR` (a separate process on --python:
   every summary read through the collector's door, the report built, the run recorded in one
   transaction) into a new history.
2. The year: --nights synthetic nights of the same nodes and servers before it
   (tests/cluster/histgen.py: every node its own level times 3% noise, part 2a at the run's
   level; from night nights-40 one node 30% slower and one server's nodes 30% slower)
   recorded through histdb.record, one transaction a night as the collector records one,
   each night timed; then the same run ingested again as the night after the year (what a
   nightly collector pays: the history's page check of the whole file, the collection, the
   record) and the file's size.
3. The query: `stagebench-history --history FILE regressions --format json` (a separate
   process: the history opened and checked, the defaults: the last 10 nights, a window of
   60 nights for lasting changes) of the year's last synthetic night (every part) and of the
   real night (its part 2a), twice each (the second with the file in the page cache).
"""
import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "tests", "cluster"))
sys.path.insert(0, HERE)
from stagebench import histdb  # noqa: E402
import collect_scale  # noqa: E402  (its generator only: generate(dir, nodes, threads))
import histgen  # noqa: E402

HISTORY = os.path.join(REPO, "scripts", "stagebench-history")
DAY = 86400.0
GOAL_INGEST_S, GOAL_QUERY_S = 10.0, 30.0


def level_of(servers, change_at, level_2a):
    """The noiseless node time of (part, node index, night), servers being each node's: part
    2a at the real run's level, the other parts a node's own level; node 17 and the second
    server's nodes 30% slower from change_at."""
    slow_server = sorted(set(servers))[1]

    def level(part, i, n):
        base = level_2a if part == "2a" else 0.1 * (1.0 + 0.02 * (i % 7))
        if n >= change_at and (i == 17 or servers[i] == slow_server):
            return base * 1.3
        return base
    return level


def command(python, catalogue, args):
    """Run stagebench-history args: (wall s, CPU s, CompletedProcess)."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    p = subprocess.run([python, HISTORY] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True,
                       env=dict(os.environ, STAGEBENCH_CATALOGUE=catalogue))
    took = time.monotonic() - t
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return took, cpu, p


def ingest(python, catalogue, path, rundir, what):
    took, cpu, p = command(python, catalogue, ["--history", path, "ingest", rundir])
    if p.returncode != 0:
        raise SystemExit("ingest failed (exit %d): %s" % (p.returncode, p.stderr.strip()))
    print("ingest of the %s: %.2f s wall, %.2f s CPU (goal < %.0f s: %s): %s" % (
        what, took, cpu, GOAL_INGEST_S, "met" if took < GOAL_INGEST_S else "NOT met",
        p.stdout.strip()), flush=True)
    return took


def the_run(path):
    """(run id, started, [node names], [their servers], the median node time) of the one run
    of the history at path."""
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        run_id, started = db.execute("SELECT run_id, started FROM runs").fetchone()
        rows = db.execute("SELECT DISTINCT nodes.name, servers.name FROM results "
                          "JOIN nodes ON nodes.node = results.node "
                          "JOIN servers ON servers.server = results.server").fetchall()
        t = db.execute("SELECT node_time_s FROM results WHERE node_time_s IS NOT NULL "
                       "ORDER BY node_time_s").fetchall()
    finally:
        db.close()
    rows.sort()
    return run_id, started, [r[0] for r in rows], [r[1] for r in rows], t[len(t) // 2][0]


def year(path, nights, names, servers, parts, before, level):
    """Record the synthetic nights, the last one a day before `before`: (times, last run id)."""
    times = []
    t0 = time.time()
    with histdb.open_history(path) as h:
        for n in range(nights):
            run = histgen.night(n, names, servers, parts, level)
            run.facts["started"] = before - (nights - n) * DAY
            t = time.time()
            histdb.record(h, run)
            times.append(time.time() - t)
            if n % 30 == 0 or n == nights - 1:
                print("night %d: %d results recorded in %.2f s (%.0f s so far)" % (
                    n, len(run.results), times[-1], time.time() - t0), flush=True)
    return times, run.facts["run_id"]


def query(python, catalogue, path, run_id, what):
    for attempt in ("first", "again"):
        took, cpu, p = command(python, catalogue, ["--history", path, "regressions",
                                                   "--run", run_id, "--format", "json"])
        if p.returncode not in (0, 1):
            raise SystemExit("regressions failed (exit %d): %s" % (p.returncode,
                                                                   p.stderr.strip()))
        doc = json.loads(p.stdout)
        flagged = [f for f in doc["findings"] if f["flagged"]]
        print("regressions of %s (%s): %.2f s wall, %.2f s CPU, %d series judged, %d flagged: "
              "%s (goal < %.0f s: %s)" % (
                  what, attempt, took, cpu, doc["judged_series"], len(flagged),
                  ", ".join(sorted(set("%s %s" % (f["kind"], f["name"]) for f in flagged))[:6])
                  or "none", GOAL_QUERY_S, "met" if took < GOAL_QUERY_S else "NOT met"),
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=128)
    ap.add_argument("--nights", type=int, default=365)
    ap.add_argument("--parts", default="1a,1b,2a,2b,2c,3a,3b,4a,4b,4c")
    ap.add_argument("--base", default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the interpreter of stagebench-history, one with ClusterShell")
    ap.add_argument("--catalogue", default=os.path.join(REPO, "build", "catalogue.json"),
                    help="the test catalogue the build generated (default: "
                         "build/catalogue.json)")
    args = ap.parse_args()
    parts = tuple(args.parts.split(","))
    catalogue = os.path.abspath(args.catalogue)
    if not os.path.exists(catalogue):
        print("no test catalogue %s: build first, or give --catalogue" % catalogue)
        return 2
    os.environ["STAGEBENCH_CATALOGUE"] = catalogue
    base = tempfile.mkdtemp(prefix="stagebench-history-scale-", dir=args.base)
    os.chmod(base, 0o700)
    rundir = os.path.join(base, "run")
    os.mkdir(rundir, 0o700)
    try:
        t = time.monotonic()
        total = collect_scale.generate(rundir, args.nodes, args.threads)
        print("generated %d summaries of %d threads: %.0f MiB of JSON in %.1f s" % (
            args.nodes, args.threads, total / 2**20, time.monotonic() - t), flush=True)
        first = os.path.join(base, "first.sqlite")
        ingest(args.python, catalogue, first, rundir, "run into a new history")
        run_id, started, names, servers, level_2a = the_run(first)
        path = os.path.join(base, "history.sqlite")
        times, last = year(path, args.nights, names, servers, parts, started,
                           level_of(servers, args.nights - 40, level_2a))
        print("recorded %d nights of %d nodes x %d parts (%d results a night) through "
              "histdb.record: median %.2f s, max %.2f s a night" % (
                  args.nights, len(names), len(parts), len(names) * len(parts),
                  statistics.median(times), max(times)), flush=True)
        ingest(args.python, catalogue, path, rundir, "run after the year")
        size = os.path.getsize(path)
        print("history file: %.1f MiB (%.0f bytes a result)" % (
            size / 1048576.0, size / float((args.nights * len(parts) + 1) * len(names))),
            flush=True)
        query(args.python, catalogue, path, last, "the year's last night, %d parts"
              % len(parts))
        query(args.python, catalogue, path, run_id, "the ingested night, part 2a")
    finally:
        if not args.keep:
            shutil.rmtree(base, True)
        else:
            print("kept %s" % base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
