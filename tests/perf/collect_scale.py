#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The collector at cluster scale: 10,000 node summaries of 128 threads each.

Not a test: it prints figures and the targets of issue 4 (under 10 s and under 1 GiB), and
exits 0 once it has measured (2 when it cannot run). CI does not run it.

    python3 tests/perf/collect_scale.py [--nodes 10000] [--threads 128] [--base /tmp]
                                        [--runs 3] [--keep] [--python /usr/bin/python3]
                                        [--catalogue build/catalogue.json]

The collector runs on --python (default /usr/bin/python3: it needs ClusterShell) with the test
catalogue the build generated (--catalogue).

It writes the summaries (stagebench.node/2, the binary's layout: one part per file as the
launcher gathers them, part 2a at the spec's 18000 reads a thread, a latency histogram of a few
hundred buckets, 128 per-thread entries) plus a launcher manifest into a temporary directory,
then times `stagebench-collect DIR --format json --no-history` as a separate process, RUNS
times, sampling the resident memory of the collector and its worker processes together every
20 ms.
"""
import argparse
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from stagebench import procs as P  # noqa: E402

COLLECT = os.path.join(REPO, "scripts", "stagebench-collect")
CATALOGUE = None
T0 = 1800000000.0


def summary_text(i, threads, rng):
    node = "node%05d" % i
    base = 0.5 + rng.random() * 0.05 + (0.4 if i % 997 == 0 else 0.0)  # a few slow nodes
    times = [base * (0.9 + 0.1 * rng.random()) for _ in range(threads)]
    rel = [T0 + 0.002 * rng.random() for _ in range(threads)]
    ops_per = 18000
    count = ops_per * threads
    nb = 300
    first = 1100  # buckets around 50-200 us
    counts = [count // nb] * nb
    counts[-1] += count - sum(counts)
    buckets = ",".join("[%d,%d]" % (first + k, c) for k, c in enumerate(counts))
    thr = ",\n".join(
        '        {\n          "index": %d,\n          "cpu": %d,\n          "core": %d,\n'
        '          "release_at": %.7f,\n          "time_s": %.9f,\n          "bytes": %d,\n'
        '          "ops": %d,\n          "deviation": 0.01,\n          "error": null\n'
        '        }' % (t, t, t, rel[t], times[t], ops_per * 4096, ops_per)
        for t in range(threads))
    tlist = ",\n".join('    {\n      "index": %d,\n      "cpu": %d,\n      "core": %d,\n'
                       '      "package": 0\n    }' % (t, t, t) for t in range(threads))
    node_time = max(r - T0 + t for r, t in zip(rel, times))
    st = sorted(times)
    return node, """{
  "schema": "stagebench.node/2",
  "version": "0.1.0",
  "node": "%(node)s",
  "host": "%(node)s",
  "dir": "/stage/bench",
  "fs": {"type": "nfs4", "source": "stage%(srv)d:/export", "mountpoint": "/stage",
         "options": "rw", "bytes_free": 1000000000000, "inodes_free": 1000000},
  "clock": {"ntp_synchronized": true, "maxerror_us": 20000, "esterror_us": 100, "state": 0,
            "clocksource": "tsc"},
  "run": {"command": "run", "tests": ["2a"], "scale": "spec", "seed": 1, "repeat": 1,
          "xfer_bytes": 1048576, "interval_s": null, "started_at": %(t0)f, "start_at": %(t0)f,
          "run_tag": "p1", "verify": false, "fsync": false},
  "threads": [
%(tlist)s
  ],
  "tests": [
    {
      "test": "2", "title": "read_from_ioserver_cache", "repetition": 1,
      "result_s": %(nt).9f, "status": "ok", "generation": 1, "prepared": false,
      "prepare_s": 0, "error": null,
      "parts": [
        {
          "part": "2a", "kind": "randread", "file": "/stage/bench/stagebench.2.4GiB",
          "count": 18000, "chunk_bytes": 4096, "file_bytes": 4294967296, "passes": 0,
          "xfer_bytes": 1048576, "generation": 1, "start_at": %(t0)f,
          "scheduled_at": %(t0)f, "late": false, "late_by_s": 0, "node_time_s": %(nt).9f,
          "release_spread_s": 0.002,
          "thread_time_s": {"min": %(tmin).9f, "median": %(tmed).9f, "max": %(tmax).9f},
          "bytes": %(bytes)d, "ops": %(ops)d, "pages": 0, "files": 0, "retries": 0,
          "bandwidth_Bps": %(bw).1f, "ops_per_s": 1, "pages_per_s": 0, "files_per_s": 0,
          "latency_s": {"p50": 0.0001, "p90": 0.00015, "p99": 0.0002, "max": 0.0003},
          "latency_hist": {"unit": "ns", "sub_bits": 7, "max_bits": 44, "count": %(ops)d,
                           "min_ns": 50000, "max_ns": 300000, "sum_ns": %(sum)d,
                           "buckets": [%(buckets)s]},
          "cache_residency": 1, "verified": false, "fsync": false, "status": "ok",
          "error": null,
          "per_thread": [
%(thr)s
          ]
        }
      ]
    }
  ],
  "status": "ok",
  "exit_code": 0,
  "errors": []
}
""" % {"node": node, "srv": i % 16, "t0": T0, "tlist": tlist, "nt": node_time,
       "tmin": st[0], "tmed": st[len(st) // 2], "tmax": st[-1], "bytes": count * 4096,
       "ops": count, "bw": count * 4096 / node_time, "sum": count * 100000,
       "buckets": buckets, "thr": thr}


def write_some(args):
    d, lo, hi, threads = args
    rng = random.Random(lo)
    total = 0
    for i in range(lo, hi):
        node, text = summary_text(i, threads, rng)
        with open(os.path.join(d, "%s.2a.rep1.json" % node), "w") as f:
            f.write(text)
        total += len(text)
    return total


def generate(d, nodes, threads):
    step = 250
    jobs = [(d, lo, min(lo + step, nodes + 1), threads) for lo in range(1, nodes + 1, step)]
    with multiprocessing.Pool() as pool:
        total = sum(pool.map(write_some, jobs))
    names = ["node%05d" % i for i in range(1, nodes + 1)]
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump({"schema": "stagebench.manifest/1", "run_id": "scale", "nodes": names,
                   "servers": {n: "stage%d" % (i % 16) for i, n in enumerate(names, 1)},
                   "rounds": [{"kind": "run", "test": "2", "part": "2a", "rep": 1,
                               "start_at": T0, "failed": {}}]}, f)
    return total


def tree_rss(root):
    """Resident memory of root and all its descendants, in bytes: (sum, largest)."""
    total, largest = 0, 0
    for pid in [root] + P.descendants(root):
        try:
            with open("/proc/%d/statm" % pid) as f:
                r = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
        total += r
        largest = max(largest, r)
    return total, largest


def measure(d, python):
    import resource
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    # the collector alone: recording into a history is history_scale.py's measure
    proc = subprocess.Popen([python, COLLECT, d, "--format", "json", "--no-history"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, STAGEBENCH_CATALOGUE=CATALOGUE))
    peak_sum = peak_one = 0
    out_chunks = []
    import threading

    def reader():
        out_chunks.append(proc.stdout.read())

    th = threading.Thread(target=reader)
    th.start()
    while proc.poll() is None:
        s, one = tree_rss(proc.pid)
        peak_sum, peak_one = max(peak_sum, s), max(peak_one, one)
        time.sleep(0.02)
    th.join()
    took = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    err = proc.stderr.read().decode()
    return took, cpu, peak_sum, peak_one, proc.returncode, b"".join(out_chunks), err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--base", default=tempfile.gettempdir())
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the interpreter that runs the collector, one with ClusterShell "
                         "(default: /usr/bin/python3)")
    ap.add_argument("--catalogue", default=os.path.join(REPO, "build", "catalogue.json"),
                    help="the test catalogue the build generated (default: "
                         "build/catalogue.json)")
    ap.add_argument("--keep", action="store_true", help="keep the generated directory")
    args = ap.parse_args()
    global CATALOGUE
    CATALOGUE = os.path.abspath(args.catalogue)
    if not os.path.exists(CATALOGUE):
        print("no test catalogue %s: build first, or give --catalogue" % CATALOGUE)
        return 2
    d = tempfile.mkdtemp(prefix="stagebench-collect-scale-", dir=args.base)
    try:
        t0 = time.monotonic()
        total = generate(d, args.nodes, args.threads)
        print("generated %d summaries of %d threads: %.0f MiB of JSON in %.1f s (%s)"
              % (args.nodes, args.threads, total / 2**20, time.monotonic() - t0, d))
        try:
            cpus = len(os.sched_getaffinity(0))
        except AttributeError:
            cpus = os.cpu_count()
        print("collector: %s %s, %d CPUs" % (args.python, COLLECT, cpus))
        results = []
        for k in range(args.runs):
            load = os.getloadavg()[0]
            took, cpu, peak_sum, peak_one, rc, out, err = measure(d, args.python)
            if rc not in (0, 1):
                print("collector failed (exit %d): %s" % (rc, err.strip()))
                return 2
            rep = json.loads(out)
            part = rep["parts"][0]
            results.append((took, peak_sum, peak_one, cpu))
            print("run %d: %.2f s wall, %.2f s CPU (collector and workers), load average "
                  "%.1f before; peak RSS %.0f MiB (collector and its workers together; largest "
                  "process %.0f MiB); exit %d, %d nodes ok, cluster time %.3f s, %d threads, "
                  "p99 %.1f us"
                  % (k + 1, took, cpu, load, peak_sum / 2**20, peak_one / 2**20, rc,
                     part["nodes_ok"], part["cluster_time_s"], part["threads"],
                     part["latency_s"]["p99"] * 1e6))
        if not results:
            return 0
        best = min(r[0] for r in results)
        cpu = min(r[3] for r in results)
        worst_mem = max(r[1] for r in results)
        print("best %.2f s wall (target < 10 s: %s), %.2f s CPU over %d CPUs; peak RSS %.0f "
              "MiB (target < 1024 MiB: %s)"
              % (best, "met" if best < 10 else "NOT met", cpu, cpus, worst_mem / 2**20,
                 "met" if worst_mem < 2**30 else "NOT met"))
        if best >= 10 and os.getloadavg()[0] > cpus:
            print("note: the load average (%.1f) exceeds the CPUs: other work shares them; "
                  "run again on a quiet machine" % os.getloadavg()[0])
    finally:
        if args.keep:
            print("kept %s" % d)
        else:
            shutil.rmtree(d, True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
