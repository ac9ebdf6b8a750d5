#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the live progress line costs: 2a and 4a with --progress and with --no-progress.

Side by side in one run, alternating, long enough (a few seconds a run) for the progress line
to be redrawn several times; 2a on a replica in /tmp, 4a in fresh directories on /dev/shm. Prints the median rates and the median per-pair ratio. Not a
test: CI does not run it. Usage: progress_cost.py [--stagebench PATH] [--rounds N].
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def run_part(sb, part, d, count, progress, out):
    cmd = ["nice", "-n", "-20", sb, "run", part, "--scale", "small", "--dir", d, "--threads", "2",
           "--start-in", "0.3", "--count", str(count), "--out", out, "--quiet",
           "--progress" if progress else "--no-progress"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("progress_cost: %s failed: %s" % (" ".join(cmd), p.stderr))
    with open(out) as f:
        part_json = json.load(f)["tests"][0]["parts"][0]
    os.unlink(out)
    return part_json, p.stderr.count("threads done")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stagebench", default=os.path.join(REPO, "build-perf", "stagebench"),
                    help="the binary (default: build-perf/stagebench, a Release build: "
                    "cmake -S . -B build-perf -DCMAKE_BUILD_TYPE=Release && "
                    "cmake --build build-perf -j)")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    sb = os.path.abspath(a.stagebench)
    if not os.access(sb, os.X_OK):
        sys.stderr.write("progress_cost.py: error: no stagebench binary at %s: build it with "
                         "'cmake -S . -B build-perf -DCMAKE_BUILD_TYPE=Release && cmake --build "
                         "build-perf -j', or give --stagebench PATH\n" % sb)
        return 2
    base = tempfile.mkdtemp(prefix="stagebench-progress-")
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else base
    try:
        subprocess.run(["chattr", "+T", base], capture_output=True)
        rdir = os.path.join(base, "replicas")
        os.makedirs(rdir)
        subprocess.run([sb, "prepare", "2", "--scale", "small", "--dir", rdir, "--quiet"],
                       check=True)
        cases = [("2a", rdir, 2000000, "ops_per_s", "kIOPS", 1e3),
                 ("4a", None, 80000, "files_per_s", "kfiles/s", 1e3)]
        print("stagebench %s: --progress against --no-progress, %d rounds each, alternating"
              % (sb, a.rounds))
        for part, d, count, key, unit, div in cases:
            rates = {True: [], False: []}
            ratios, redraws = [], []
            for r in range(a.rounds):
                pair = {}
                for progress in ((True, False) if r % 2 == 0 else (False, True)):
                    wd = d
                    if wd is None:
                        # tmpfs: what the line costs does not depend on the filesystem, and
                        # ext4 here creates files at rates that swing 10x after deletes.
                        wd = tempfile.mkdtemp(prefix="stagebench-progress-", dir=shm)
                    else:
                        with open(os.path.join(d, "stagebench.2.1GiB"), "rb") as f:
                            while f.read(1 << 24):
                                pass
                    pj, lines = run_part(sb, part, wd, count, progress,
                                         os.path.join(base, "s.json"))
                    if d is None:
                        shutil.rmtree(wd, ignore_errors=True)
                    pair[progress] = pj[key]
                    rates[progress].append(pj[key])
                    if progress:
                        redraws.append(lines)
                ratios.append(pair[True] / pair[False])
            print("  %s (--count %d, 2 threads): with progress %.0f %s, without %.0f %s, "
                  "ratio %.3f [%.3f-%.3f] (progress line drawn %d times a run, median)"
                  % (part, count, median(rates[True]) / div, unit, median(rates[False]) / div,
                     unit, median(ratios), min(ratios), max(ratios), median(redraws)))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
