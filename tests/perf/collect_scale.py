#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The collector at cluster scale: one part of 10,000, 30,000 and 100,000 node summaries of 128
threads each, in one invocation.

Not a test: it prints figures and the target of issue 19 (100,000 nodes in under 30 s and under
2 GiB), and exits 0 once it has measured (2 when it cannot run). CI does not run it. Run it
alone: `flock /tmp/stagebench-bench.lock python3 tests/perf/collect_scale.py`.

    python3 tests/perf/collect_scale.py [--nodes 10000,30000,100000] [--threads 128]
                                        [--runs 1] [--base /tmp] [--keep]
                                        [--collector scripts/stagebench-collect]
                                        [--python /usr/bin/python3]
                                        [--catalogue build/catalogue.json]

For each size it writes the summaries into a temporary directory under --base, after checking
that the filesystem has room for them (about 80 KiB a summary), times the collector on them and
removes them before the next size. The summaries are the binary's own layout, as
driver/summary_json.c writes them (stagebench.node/3, indented by two spaces, the histogram's
buckets on one line): one part a file as the launcher gathers them, part 2a at the spec's 18000
reads a thread, a latency histogram of 300 buckets, 128 threads in the thread plan and 128
per-thread entries; plus a launcher manifest (stagebench.manifest/2) with every node's clock
offset before and after the run. `stagebench-collect DIR --format json --no-history` runs as a
separate process, RUNS times, the resident memory of the collector and its worker processes
together sampled every 100 ms. Right before each run every file is read once and the share of
them in the page cache printed (fincore): this machine drops cache that sat idle for a minute, and
the summaries of 100,000 nodes take longer than that to write; at a site the collector reads what
the nodes have just written.

The collector run is --collector (default: this checkout's scripts/stagebench-collect; another
copy of scripts/ measures another version of the collector) on --python (default
/usr/bin/python3: it needs ClusterShell) with the test catalogue the build generated
(--catalogue).
"""
import argparse
import json
import multiprocessing
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from stagebench import procs as P  # noqa: E402

T0 = 1800000000.0
T0_NS = 1800000000000000000
OPS = 18000  # part 2a at the spec's scale: 18000 reads of 4 KiB a thread
CHUNK = 4096
BUCKETS = 300
FIRST_BUCKET = 1100  # buckets around 50-200 us (sub_bits 7)
SERVERS = 16
# What a summary of 128 threads takes, rounded up, to check the room before writing.
BYTES_PER_THREAD = 650
BYTES_PER_SUMMARY = 12000
TARGET_NODES, TARGET_S, TARGET_BYTES = 100000, 30.0, 2 << 30


def fmt_double(v):
    """A double as util/json.c's json_double writes it: the shortest of %.15g, %.16g and
    %.17g that reads back as the same double (repr's digits, in %g's form)."""
    s = repr(v)
    if "e" in s or "n" in s or abs(v) >= 1e15:
        for prec in (15, 16):
            t = "%.*g" % (prec, v)
            if float(t) == v:
                return t
        return "%.17g" % v
    return s[:-2] if s.endswith(".0") else s


THREAD = """            {
              "index": %d,
              "cpu": %d,
              "core": %d,
              "release_at": %s,
              "release_at_ns": %d,
              "first_io_at_ns": %d,
              "late_by_s": 0,
              "time_s": %s,
              "bytes": %d,
              "ops": %d,
              "deviation": %s,
              "error": null,
              "reason": null
            }"""

PLAN = """    {
      "index": %d,
      "cpu": %d,
      "core": %d,
      "package": 0
    }"""

SUMMARY = """{
  "schema": "stagebench.node/3",
  "version": "0.1.0",
  "node": "%(node)s",
  "host": "%(node)s",
  "build": {
    "version": "0.1.0",
    "id": "0.1.0-a12650e6a4276167",
    "describe": "2bc7446246e6",
    "dirty": false,
    "source_sha256": "3c2761407a9f95dd8bfd9b7d195be68c7a6019f642101e2d570e58724121ed40",
    "exe_sha256": "43050e40d0c83b7373c05e0b1ae6fa5e43464ad99871375d2ea7239b1a8e4483"
  },
  "dir": "/stage/bench",
  "fs": {
    "type": "nfs4",
    "source": "stage%(srv)d:/export",
    "mountpoint": "/stage",
    "options": "rw,relatime,vers=4.2,rsize=1048576,wsize=1048576",
    "bytes_free": 1000000000000,
    "inodes_free": 1000000
  },
  "clock": {
    "ntp_synchronized": true,
    "maxerror_us": 20000,
    "esterror_us": 100,
    "state": 0,
    "clocksource": "tsc"
  },
  "run": {
    "command": "run",
    "tests": [
      "2a"
    ],
    "scale": "spec",
    "seed": 6813441797230525717,
    "repeat": 1,
    "first_repetition": 1,
    "xfer_bytes": 1048576,
    "interval_s": null,
    "started_at": %(started)s,
    "start_at": %(t0)s,
    "run_tag": "p6479-52c78a7bac04",
    "run_id": "scale",
    "verify": false,
    "fsync": false,
    "overrides": []
  },
  "threads": [
%(plan)s
  ],
  "cores": {
    "online": %(threads)d,
    "allowed": %(threads)d,
    "used": %(threads)d,
    "chosen_by": "all"
  },
  "buffer": {
    "offset": 0,
    "chosen_by": "calibration",
    "calibration": {
      "bytes": 33554432,
      "seconds": 0.20738356,
      "candidates": [
        {
          "offset": 0,
          "copy_Bps": 5657428039.601824,
          "wins": 0
        },
        {
          "offset": 64,
          "copy_Bps": 5608347997.240155,
          "wins": 0.5666666666666667
        },
        {
          "offset": 2048,
          "copy_Bps": 5701788442.8204,
          "wins": 0.4333333333333333
        }
      ]
    }
  },
  "tests": [
    {
      "test": "2",
      "title": "read_from_ioserver_cache",
      "repetition": 1,
      "result_s": %(nt)s,
      "status": "ok",
      "generation": 4517302711528016090,
      "prepared": false,
      "prepare_s": 0,
      "error": null,
      "reason": null,
      "parts": [
        {
          "part": "2a",
          "kind": "randread",
          "counted": "bytes read",
          "rate_unit": "B/s",
          "file": "/stage/bench/stagebench.2.4GiB",
          "count": %(ops_per)d,
          "chunk_bytes": %(chunk)d,
          "file_bytes": 4294967296,
          "passes": 0,
          "threads": %(threads)d,
          "xfer_bytes": 1048576,
          "generation": 4517302711528016090,
          "start_at": %(t0)s,
          "scheduled_at": %(t0)s,
          "start_at_ns": %(t0_ns)d,
          "scheduled_at_ns": %(t0_ns)d,
          "release_at_ns": {
            "min": %(rel_min)d,
            "max": %(rel_max)d
          },
          "first_io_at_ns": {
            "min": %(io_min)d,
            "max": %(io_max)d
          },
          "late": false,
          "late_by_s": 0,
          "clock_step_s": 0,
          "clock_step_total_s": 0,
          "node_time_s": %(nt)s,
          "release_spread_s": %(spread)s,
          "io_start_spread_s": %(io_spread)s,
          "thread_time_s": {
            "min": %(tmin)s,
            "median": %(tmed)s,
            "max": %(tmax)s
          },
          "bytes": %(bytes)d,
          "ops": %(ops)d,
          "pages": 0,
          "files": 0,
          "retries": 0,
          "bandwidth_Bps": %(bw)s,
          "ops_per_s": %(ops_s)s,
          "pages_per_s": 0,
          "files_per_s": 0,
          "latency_s": {
            "p50": 0.000114431,
            "p90": 0.000158223,
            "p99": 0.000191439,
            "max": 0.0003
          },
          "latency_hist": {
            "unit": "ns",
            "sub_bits": 7,
            "max_bits": 44,
            "count": %(ops)d,
            "min_ns": 50000,
            "max_ns": 300000,
            "sum_ns": %(sum)d,
            "buckets": [%(buckets)s]
          },
          "cache_residency": 0,
          "cache_residency_error": null,
          "cache_dropped": true,
          "cache_expected": "cold",
          "replica_changed": false,
          "replica_origin": {
            "run_id": "scale",
            "repetition": 1
          },
          "verified": false,
          "fsync": false,
          "status": "ok",
          "error": null,
          "reason": null,
          "warnings": [],
          "per_thread": [
%(per_thread)s
          ]
        }
      ]
    }
  ],
  "status": "ok",
  "exit_code": 0,
  "errors": [],
  "error_reasons": [],
  "warnings": []
}
"""


def summary_text(i, threads, rng):
    """Node i's summary of part 2a, as the binary writes it."""
    node = "node%06d" % i
    base_ns = 500000000 + rng.randrange(50000000) + (400000000 if i % 997 == 0 else 0)
    times = [base_ns * (90 + rng.randrange(10)) // 100 for _ in range(threads)]
    rel = [T0_NS + 100000 + rng.randrange(2000000) for _ in range(threads)]
    io = [r + 2000 + rng.randrange(1000) for r in rel]
    ends = [r - T0_NS + t for r, t in zip(rel, times)]
    node_ns = max(ends)
    nt = node_ns / 1e9
    st = sorted(times)
    med = st[threads // 2] if threads % 2 else (st[threads // 2 - 1] + st[threads // 2]) / 2
    count = OPS * threads
    counts = [count // BUCKETS] * BUCKETS
    counts[-1] += count - sum(counts)
    buckets = ",".join("[%d,%d]" % (FIRST_BUCKET + k, c) for k, c in enumerate(counts))
    per_thread = ",\n".join(
        THREAD % (t, t, t, fmt_double(rel[t] / 1e9), rel[t], io[t], fmt_double(times[t] / 1e9),
                  OPS * CHUNK, OPS, fmt_double(times[t] / med - 1.0)) for t in range(threads))
    plan = ",\n".join(PLAN % (t, t, t) for t in range(threads))
    return node, SUMMARY % {
        "node": node, "srv": i % SERVERS, "started": fmt_double(T0 - 3.0), "t0": fmt_double(T0),
        "t0_ns": T0_NS, "plan": plan, "threads": threads, "nt": fmt_double(nt),
        "ops_per": OPS, "chunk": CHUNK, "rel_min": min(rel), "rel_max": max(rel),
        "io_min": min(io), "io_max": max(io), "spread": fmt_double((max(rel) - min(rel)) / 1e9),
        "io_spread": fmt_double((max(io) - min(io)) / 1e9), "tmin": fmt_double(st[0] / 1e9),
        "tmed": fmt_double(med / 1e9), "tmax": fmt_double(st[-1] / 1e9),
        "bytes": count * CHUNK, "ops": count, "bw": fmt_double(count * CHUNK / nt),
        "ops_s": fmt_double(count / nt), "sum": count * 100000, "buckets": buckets,
        "per_thread": per_thread}


def write_some(args):
    d, lo, hi, threads = args
    rng = random.Random(lo)
    total = 0
    for i in range(lo, hi):
        node, text = summary_text(i, threads, rng)
        data = text.encode()
        fd = os.open(os.path.join(d, "%s.2a.rep1.json" % node),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        total += len(data)
    return total


def manifest(nodes):
    names = ["node%06d" % i for i in range(1, nodes + 1)]
    rng = random.Random(nodes)

    def offsets(at):
        return {n: {"offset_s": (rng.random() - 0.5) * 2e-4, "uncertainty_s": 5e-5,
                    "rtt_s": 1e-4, "ntp_synchronized": True, "maxerror_us": 20000,
                    "esterror_us": 100, "measured_at": at, "samples": 8} for n in names}
    return {"schema": "stagebench.manifest/2", "version": "0.1.0", "run_id": "scale",
            "created_at": T0 - 60, "nodes": names,
            "servers": {n: "stage%d" % (i % SERVERS) for i, n in enumerate(names, 1)},
            "run": {"tests": ["2"], "parts": ["2a"], "scale": "spec", "repeat": 1},
            "rounds": [{"kind": "run", "what": "2a rep 1", "test": "2", "part": "2a",
                        "rep": 1, "start_at": T0, "lead_s": 5.0, "count": nodes,
                        "failed": {}}],
            "interrupted": None, "finished_at": T0 + 30,
            "clock": {"method": "exchange", "samples": 8, "start": offsets(T0 - 10),
                      "end": offsets(T0 + 20), "unmeasured": [], "why_unmeasured": {},
                      "unmeasured_end": []}}


def generate(d, nodes, threads):
    step = 250
    jobs = [(d, lo, min(lo + step, nodes + 1), threads) for lo in range(1, nodes + 1, step)]
    with multiprocessing.Pool() as pool:
        total = sum(pool.imap_unordered(write_some, jobs))
    fd = os.open(os.path.join(d, "manifest.json"),
                 os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        json.dump(manifest(nodes), f, indent=1)
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


def warm_one(path):
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        while os.read(fd, 1 << 20):
            pass
    finally:
        os.close(fd)


def residency(names):
    """(resident bytes, bytes in whole pages) of the files names, as fincore(1) reports them."""
    page = os.sysconf("SC_PAGE_SIZE")
    res = size = 0
    for lo in range(0, len(names), 2000):
        out = subprocess.run(["fincore", "-b", "-n", "-r", "-o", "RES,SIZE"]
                             + names[lo:lo + 2000], stdout=subprocess.PIPE,
                             universal_newlines=True, check=True).stdout
        for line in out.split("\n"):
            if line.strip():
                r, z = line.split()
                res, size = res + int(r), size + -(-int(z) // page) * page
    return res, size


def warm(d):
    """Read every file of d, right before a timed run (this machine's page cache drops what sat
    idle for a minute, and generating 100,000 summaries takes longer): (seconds, resident bytes,
    bytes) after."""
    t0 = time.monotonic()
    names = [os.path.join(d, n) for n in os.listdir(d)]
    with multiprocessing.Pool(2) as pool:
        for _ in pool.imap_unordered(warm_one, names, 500):
            pass
    took = time.monotonic() - t0
    res, size = residency(names)
    return took, res, size


def measure(d, args):
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    # the collector alone: recording into a history is history_scale.py's measure
    proc = subprocess.Popen([args.python, args.collector, d, "--format", "json",
                             "--no-history"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, STAGEBENCH_CATALOGUE=args.catalogue))
    peak_sum = peak_one = 0
    out_chunks, err_chunks = [], []
    readers = [threading.Thread(target=lambda: out_chunks.append(proc.stdout.read())),
               threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()))]
    for th in readers:
        th.start()
    while proc.poll() is None:
        s, one = tree_rss(proc.pid)
        peak_sum, peak_one = max(peak_sum, s), max(peak_one, one)
        # a look reads every /proc/PID/stat of the machine (this kernel has no
        # /proc/PID/task/TID/children): 1.6 ms of CPU, taken from the collector's two cores;
        # every 0.1 s that is 1.6% of one, against 8% every 0.02 s
        time.sleep(0.1)
    for th in readers:
        th.join()
    took = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return took, cpu, peak_sum, peak_one, proc.returncode, b"".join(out_chunks), \
        b"".join(err_chunks).decode(errors="replace")


def room_for(base, nodes, threads):
    """(needed, free) bytes of --base for nodes summaries, with a margin of 1 GiB left."""
    need = nodes * (BYTES_PER_SUMMARY + threads * BYTES_PER_THREAD) + (1 << 30)
    return need, shutil.disk_usage(base).free


def one_size(nodes, args, cpus):
    """Generate, measure RUNS times, remove: (best wall, CPU of that run, worst peak RSS), or
    None when it could not run."""
    need, free = room_for(args.base, nodes, args.threads)
    if free < need:
        print("%d nodes: not generated: %s has %.1f GiB free, %.1f GiB needed"
              % (nodes, args.base, free / 2**30, need / 2**30))
        return None
    d = tempfile.mkdtemp(prefix="stagebench-collect-scale-", dir=args.base)
    try:
        t0 = time.monotonic()
        total = generate(d, nodes, args.threads)
        print("%d nodes: generated %d summaries of %d threads: %.0f MiB of JSON in %.1f s (%s)"
              % (nodes, nodes, args.threads, total / 2**20, time.monotonic() - t0, d))
        sys.stdout.flush()
        results = []
        for k in range(args.runs):
            wt, res, size = warm(d)
            print("%d nodes, run %d: warmed in %.1f s, %.1f%% of %.0f MiB resident (fincore) "
                  "right before" % (nodes, k + 1, wt, 100.0 * res / max(size, 1), size / 2**20))
            load = os.getloadavg()[0]
            took, cpu, peak_sum, peak_one, rc, out, err = measure(d, args)
            if rc not in (0, 1):
                print("collector failed (exit %d): %s" % (rc, err.strip()[-2000:]))
                return None
            rep = json.loads(out)
            part = rep["parts"][0]
            results.append((took, cpu, peak_sum))
            print("%d nodes, run %d: %.2f s wall, %.2f s CPU (collector and workers), load "
                  "average %.1f before; peak RSS %.0f MiB (collector and its workers together; "
                  "largest process %.0f MiB); exit %d, %d nodes ok, cluster time %.3f s, %d "
                  "threads, p99 %.1f us, start %s"
                  % (nodes, k + 1, took, cpu, load, peak_sum / 2**20, peak_one / 2**20, rc,
                     part["nodes_ok"], part["cluster_time_s"], part["threads"],
                     part["latency_s"]["p99"] * 1e6, part["start"]["verdict"]))
            sys.stdout.flush()
        best = min(results)
        return best[0], best[1], max(r[2] for r in results)
    finally:
        if args.keep:
            print("kept %s" % d)
        else:
            shutil.rmtree(d, True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", default="10000,30000,100000",
                    help="the sizes, comma-separated (default: 10000,30000,100000)")
    ap.add_argument("--threads", type=int, default=128)
    ap.add_argument("--runs", type=int, default=1, help="runs per size, the best kept")
    ap.add_argument("--base", default=tempfile.gettempdir())
    ap.add_argument("--collector", default=os.path.join(REPO, "scripts", "stagebench-collect"),
                    help="the stagebench-collect to run (default: this checkout's)")
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the interpreter that runs the collector, one with ClusterShell "
                         "(default: /usr/bin/python3)")
    ap.add_argument("--catalogue", default=os.path.join(REPO, "build", "catalogue.json"),
                    help="the test catalogue the build generated (default: "
                         "build/catalogue.json)")
    ap.add_argument("--keep", action="store_true", help="keep the generated directories")
    args = ap.parse_args()
    try:
        sizes = [int(x) for x in args.nodes.split(",") if x.strip()]
    except ValueError:
        print("--nodes %s: expected sizes like 10000,30000,100000" % args.nodes)
        return 2
    if not sizes or min(sizes) < 1 or args.threads < 1 or args.runs < 1:
        print("--nodes, --threads and --runs must be at least 1")
        return 2
    args.catalogue = os.path.abspath(args.catalogue)
    args.collector = os.path.abspath(args.collector)
    if not os.path.exists(args.catalogue):
        print("no test catalogue %s: build first, or give --catalogue" % args.catalogue)
        return 2
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count()
    print("collector: %s %s, %d CPUs; %s" % (args.python, args.collector, cpus,
                                             " ".join(sys.argv)))
    table = []
    for n in sizes:
        r = one_size(n, args, cpus)
        if r is None:
            return 2
        table.append((n,) + r)
    print("\n%10s %10s %10s %14s" % ("nodes", "wall s", "CPU s", "peak RSS MiB"))
    for n, wall, cpu, mem in table:
        print("%10d %10.2f %10.2f %14.0f" % (n, wall, cpu, mem / 2**20))
    for n, wall, cpu, mem in table:
        if n == TARGET_NODES:
            print("%d nodes: %.2f s wall (target < %.0f s: %s), peak RSS %.0f MiB (target < "
                  "%d MiB: %s), %d CPUs"
                  % (n, wall, TARGET_S, "met" if wall < TARGET_S else "NOT met", mem / 2**20,
                     TARGET_BYTES >> 20, "met" if mem < TARGET_BYTES else "NOT met", cpus))
    if os.getloadavg()[0] > cpus:
        print("note: the load average (%.1f) exceeds the CPUs: other work shares them; "
              "run again on a quiet machine" % os.getloadavg()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
