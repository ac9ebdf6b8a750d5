#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""stagebench side by side with fio and bare C loops, in one run, on the same hot files.

Not a test: it prints figures, ratios and the targets of issues 2 and 3, and always exits 0
once it has measured (2 when it cannot run at all). CI does not run it.

    python3 tests/perf/run_perf.py [--stagebench BUILD/stagebench] [--base /tmp] [--reps 5]

What it does, all in fresh temporary directories under --base (removed at the end):
  * builds the bare loops of tests/perf/bare/ with gcc -O2;
  * prepares the small-scale replicas of 1a, 1b and 2 once;
  * for every part, REPS rounds of stagebench, fio and the bare loop in a rotating order,
    reading the replica right before each measurement (idle page cache is evicted here
    within about a minute) and recording the cache residency each tool saw; every
    file-creation measurement gets a fresh directory and nothing is deleted until the end;
  * the release spread of stagebench over its 1a runs;
  * peak RSS (/usr/bin/time -v) of stagebench for every part, and at two file or chunk sizes;
  * `stagebench prepare 2 --scale spec` (4 GiB) against dd conv=fsync on the same filesystem.
"""
import argparse
import glob
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BARE = ["seqread", "mmaptouch", "randread", "createfiles"]
THREADS = 2
CPUS = "0,1"
START_IN = "0.5"
XFER = 1 << 20
MIB = 1 << 20
GIB = 1 << 30

# The parts as run here: small-scale files and chunk sizes, 2 threads. Where the
# small-scale window would be a few milliseconds, N or passes is raised (for all three
# tools alike) so that fio's millisecond runtime does not dominate the ratio; 2c, 4b and 4c
# keep the small-scale N, since one big chunk or file is what they measure.
PARTS = [
    # part, replica test, overrides, metric, what
    ("1a", "1a", {"passes": 64}, "bw", "32 MiB replica x 64 passes, xfer 1 MiB"),
    ("1b", "1b", {"passes": 32}, "pages", "64 MiB replica x 32 passes, mmap+touch"),
    ("2a", "2", {"count": 100000}, "iops", "100000 x 4 KiB random of 1 GiB"),
    ("2b", "2", {"count": 1000}, "bw", "1000 x 1 MiB random of 1 GiB"),
    ("2c", "2", {}, "bw", "1 x 32 MiB random of 1 GiB (small scale)"),
    ("4a", None, {"count": 2000}, "files", "2000 files x 4 KiB per thread"),
    ("4b", None, {}, "files", "20 files x 1 MiB per thread (small scale)"),
    ("4c", None, {}, "files", "1 file x 16 MiB per thread (small scale)"),
]
SMALL = {  # small-scale parameters (stagebench list --scale small)
    "1a": dict(file=32 * MIB, passes=16),
    "1b": dict(file=64 * MIB, passes=4),
    "2a": dict(file=GIB, count=4000, chunk=4096),
    "2b": dict(file=GIB, count=50, chunk=MIB),
    "2c": dict(file=GIB, count=1, chunk=32 * MIB),
    "4a": dict(count=300, chunk=4096),
    "4b": dict(count=20, chunk=MIB),
    "4c": dict(count=1, chunk=16 * MIB),
}
# fio as fast as it goes here: threads (as stagebench) and page-aligned buffers (fio's default
# buffers are only malloc-aligned, which made its 1a copies about 2x slower on this machine).
FIO_COMMON = ["--numjobs=%d" % THREADS, "--thread", "--iomem_align=4096", "--group_reporting",
              "--output-format=json", "--cpus_allowed=" + CPUS, "--cpus_allowed_policy=split"]
UNITS = {"bw": ("GiB/s", GIB), "iops": ("kIOPS", 1e3), "pages": ("Mpages/s", 1e6),
         "files": ("files/s", 1.0)}


# A measurement during which other processes (or kernel threads) used more than this
# fraction of the CPUs is repeated, up to --retries times (this machine is shared).
OTHERS_LIMIT = 0.10
IDLE_WAIT_S = 5.0


class Fail(Exception):
    pass


class Quiet:
    """How much CPU others used around a measured command (from /proc/stat and rusage)."""

    def __init__(self):
        self.hz = os.sysconf("SC_CLK_TCK")
        self.ncpu = os.cpu_count()
        self.waited = 0.0
        self.gave_up = 0

    def busy(self):
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        own = resource.getrusage(resource.RUSAGE_SELF)
        # jiffies not idle (idle + iowait), minus what this script and its children used
        busy = (sum(v) - v[3] - v[4]) / self.hz
        return busy - (ru.ru_utime + ru.ru_stime + own.ru_utime + own.ru_stime), time.monotonic()

    def others(self, a, b):
        wall = b[1] - a[1]
        return max(0.0, (b[0] - a[0]) / (wall * self.ncpu)) if wall > 0 else 0.0

    def wait_idle(self):
        t0 = time.monotonic()
        while True:
            a = self.busy()
            time.sleep(0.2)
            if self.others(a, self.busy()) <= OTHERS_LIMIT / 2:
                break
            if time.monotonic() - t0 > IDLE_WAIT_S:
                self.gave_up += 1
                break
        self.waited += time.monotonic() - t0

    def measured(self, argv):
        self.wait_idle()
        a = self.busy()
        p = run(argv)
        return p, self.others(a, self.busy())


def log(msg):
    print(msg, flush=True)


def note(msg):
    print("  .. " + msg, file=sys.stderr, flush=True)


def run(cmd, check=True, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise Fail("%s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                        (p.stderr or p.stdout).strip()[-600:]))
    return p


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def params(part, over):
    p = dict(SMALL[part])
    p.update(over)
    return p


class Perf:
    def __init__(self, args):
        self.a = args
        self.sb = args.stagebench
        self.base = None
        self.seq = 0
        self.results = {}   # part -> tool -> [rate]
        self.extra = {}     # part -> tool -> [secondary figures]
        self.resid = {}     # part -> tool -> [residency]
        self.spreads = []   # release spreads of the 1a runs, seconds
        self.overhead = []  # stagebench node_time - max thread time, seconds
        self.targets = []   # (what, value, limit, met)
        self.others = {}    # part -> [fraction of the CPUs others used during a measurement]
        self.retried = {}   # part -> [that fraction, for measurements that were repeated]
        self.quiet = Quiet()
        self.replica = {}

    # ---------- set-up ----------
    def fresh(self, tag):
        self.seq += 1
        d = os.path.join(self.base, "%s.%03d" % (tag, self.seq))
        os.mkdir(d)
        return d

    def build_bare(self):
        self.bin = os.path.join(self.base, "bin")
        os.mkdir(self.bin)
        for b in BARE:
            run(["gcc", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-pthread", "-o",
                 os.path.join(self.bin, b), os.path.join(HERE, "bare", b + ".c")])

    def prepare_replicas(self):
        self.rdir = self.fresh("replicas")
        run([self.sb, "prepare", "1a", "1b", "2", "--scale", "small", "--dir", self.rdir,
             "--threads", str(THREADS), "--quiet"])
        for t in ("1a", "1b", "2"):
            found = glob.glob(os.path.join(self.rdir, "stagebench.%s.*" % t))
            if len(found) != 1:
                raise Fail("cannot find the replica of %s in %s" % (t, self.rdir))
            self.replica[t] = found[0]

    # ---------- helpers ----------
    @staticmethod
    def warm(path):
        """Read the whole file, so that it is in the page cache right now."""
        buf = bytearray(4 * MIB)
        with open(path, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass

    @staticmethod
    def fincore(path):
        p = run(["fincore", "-b", "-n", "-o", "RES,SIZE", path], check=False)
        try:
            res, size = p.stdout.split()[:2]
            return int(res) / int(size)
        except (ValueError, ZeroDivisionError):
            return float("nan")

    def sb_argv(self, part, d, over, out, keep=False):
        cmd = [self.sb, "run", part, "--scale", "small", "--dir", d, "--threads", str(THREADS),
               "--start-in", START_IN, "--out", out, "--quiet"]
        names = {"passes": "--passes", "count": "--count", "chunk": "--chunk",
                 "file": "--file-size"}
        for k, v in over.items():
            cmd += [names[k], str(v)]
        if keep:
            cmd.append("--keep")
        return cmd

    def sb_part(self, part, out):
        with open(out) as f:
            j = json.load(f)
        pr = j["tests"][0]["parts"][0]
        if pr["status"] != "ok":
            raise Fail("stagebench %s: status %s" % (part, pr["status"]))
        self.overhead.append((pr["node_time_s"] - pr["thread_time_s"]["max"], part))
        return pr

    def sb_run(self, part, d, over, prefix=None):
        """An unmeasured stagebench run (release spread, RSS): its part and the process."""
        out = os.path.join(self.base, "sb.%d.json" % self.seq)
        self.seq += 1
        p = run((prefix or []) + self.sb_argv(part, d, over, out))
        return self.sb_part(part, out), p

    def bare_run(self, args):
        p = run([os.path.join(self.bin, args[0])] + [str(a) for a in args[1:]])
        return json.loads(p.stdout)

    def add(self, part, tool, rate, resid=None, extra=None):
        self.results.setdefault(part, {}).setdefault(tool, []).append(rate)
        if resid is not None:
            self.resid.setdefault(part, {}).setdefault(tool, []).append(resid)
        if extra is not None:
            self.extra.setdefault(part, {}).setdefault(tool, []).append(extra)

    # ---------- one measurement per tool ----------
    def command(self, part, over, tool):
        """
        Set up one measurement (warm the replica, or a fresh directory for writers) and
        return (argv, parse) where parse(stdout) -> (rate, residency, secondary).
        """
        p = params(part, over)
        rep = self.replica.get(part[0] if part[0] == "2" else part)
        if rep:
            self.warm(rep)
        if tool == "stagebench":
            d = self.rdir if rep else self.write_dir("sb" + part)
            out = os.path.join(self.base, "sb.%d.json" % self.seq)
            self.seq += 1
            argv = self.sb_argv(part, d, over, out, keep=not rep)

            def parse(_):
                pr = self.sb_part(part, out)
                if part == "1a":
                    self.spreads.append(pr["release_spread_s"])
                rate = {"1a": pr["bandwidth_Bps"], "1b": pr["pages_per_s"],
                        "2a": pr["ops_per_s"], "2b": pr["bandwidth_Bps"],
                        "2c": pr["bandwidth_Bps"]}.get(part, pr["files_per_s"])
                return (rate, pr.get("cache_residency") if rep else None,
                        pr["bandwidth_Bps"] if not rep else None)
            return argv, parse

        if tool in ("bare", "bare-create-only"):
            if part == "1a":
                args = ["seqread", rep, p["passes"], XFER, THREADS]
            elif part == "1b":
                args = ["mmaptouch", rep, p["passes"], THREADS]
            elif part.startswith("2"):
                args = ["randread", rep, p["count"], p["chunk"], XFER, THREADS]
            else:
                size = 0 if tool == "bare-create-only" else p["chunk"]
                args = ["createfiles", self.write_dir(tool + part), p["count"], size, XFER,
                        THREADS]
            argv = [os.path.join(self.bin, args[0])] + [str(a) for a in args[1:]]

            def parse(stdout):
                r = json.loads(stdout)
                t = r["node_time_s"]
                rate = {"1a": r["bytes"] / t, "1b": r["pages"] / t, "2a": r["ops"] / t,
                        "2b": r["bytes"] / t, "2c": r["bytes"] / t}.get(part, r["files"] / t)
                return rate, r["residency"] if rep else None, r["bytes"] / t if not rep else None
            return argv, parse

        # fio: residency from fincore, taken right before it starts.
        res = self.fincore(rep) if rep else None
        common = [("ioengine", "psync"), ("invalidate", "0")]
        if part == "1a":
            opts = common + [("filename", rep), ("rw", "read"), ("bs", XFER),
                             ("size", p["file"]), ("loops", p["passes"])]
        elif part == "1b":
            opts = [("ioengine", "mmap"), ("invalidate", "0"), ("filename", rep), ("rw", "read"),
                    ("bs", XFER), ("size", p["file"]), ("loops", p["passes"])]
        elif part.startswith("2"):
            opts = common + [("filename", rep), ("rw", "randread"), ("bs", p["chunk"]),
                             ("size", p["file"]), ("number_ios", p["count"]),
                             ("norandommap", 1), ("randrepeat", 0)]
        elif part == "4a":
            opts = [("ioengine", "filecreate"), ("directory", self.write_dir("fio" + part)),
                    ("nrfiles", p["count"]), ("filesize", p["chunk"]), ("bs", p["chunk"]),
                    ("rw", "write")]
        else:
            opts = common + [("directory", self.write_dir("fio" + part)), ("rw", "write"),
                             ("bs", min(XFER, p["chunk"])), ("nrfiles", p["count"]),
                             ("filesize", p["chunk"]), ("create_on_open", 1), ("openfiles", 1),
                             ("file_service_type", "sequential"), ("fallocate", "none")]
        argv = ["fio", "--name=" + part] + FIO_COMMON + ["--%s=%s" % kv for kv in opts]

        def parse(stdout):
            j = json.loads(stdout[stdout.index("{"):])["jobs"][0]
            if not rep:
                w = j["write"]
                secs = w["runtime"] / 1e3
                return THREADS * p["count"] / secs, None, w["io_bytes"] / secs
            r = j["read"]
            if part == "1b":
                return r["io_bytes"] / 4096 / (r["runtime"] / 1e3), res, None
            if part == "2a":
                return r["iops"], res, None
            if part == "2c":
                # One I/O per job: fio's runtime is whole milliseconds, so the bandwidth is
                # taken from the nanosecond latency of the slower job's one read (which leaves
                # out fio's own overhead: in fio's favour). Its own figure is kept beside.
                self.add(part, "fio(ms)", r["bw_bytes"])
                return r["io_bytes"] / (r["lat_ns"]["max"] / 1e9), res, None
            return r["bw_bytes"], res, None
        return argv, parse

    def measure(self, part, over, tool):
        """One measurement, repeated (set-up included) when others used the CPUs meanwhile."""
        for attempt in range(1 + self.a.retries):
            argv, parse = self.command(part, over, tool)
            p, others = self.quiet.measured(argv)
            if others <= OTHERS_LIMIT or attempt == self.a.retries:
                break
            self.retried.setdefault(part, []).append(others)
        rate, resid, extra = parse(p.stdout)
        self.add(part, tool, rate, resid, extra)
        self.others.setdefault(part, []).append(others)

    # ---------- phases ----------
    def write_dir(self, tag):
        """
        A fresh directory for one file-creation measurement, after removing the files of
        the previous one. New page-cache pages are slow here the first time the guest
        touches them (the host backs them lazily, and takes back memory left free), so a
        writer that happens to get never-touched pages runs up to 10x slower: 4c took 4 ms
        or 60 ms depending on it. Freeing the previous measurement's pages just before
        gives every writer recycled pages, whichever tool runs.
        """
        for d in self.written:
            shutil.rmtree(d, ignore_errors=True)
        d = self.fresh(tag)
        self.written = [d]
        return d

    def compare(self):
        tools = ["stagebench", "fio", "bare"]
        self.written = []
        for part, _, over, _, _ in PARTS:
            t0 = time.monotonic()
            if part.startswith("4"):
                # An untimed primer, so that the first measurement has recycled pages too.
                p = params(part, over)
                self.bare_run(["createfiles", self.write_dir("primer"), p["count"], p["chunk"],
                               XFER, THREADS])
            for r in range(self.a.reps):
                k = r % 3
                for tool in tools[k:] + tools[:k]:
                    self.measure(part, over, tool)
                if part == "4a":
                    # What fio's filecreate engine does: create and close, no data.
                    self.measure(part, over, "bare-create-only")
            note("%s: %d rounds in %.1f s" % (part, self.a.reps, time.monotonic() - t0))

    def release_spread(self):
        # Besides the 1a runs of the comparison, a few runs at the exact small scale.
        for _ in range(4):
            self.warm(self.replica["1a"])
            pr, _ = self.sb_run("1a", self.rdir, {})
            self.spreads.append(pr["release_spread_s"])

    def rss(self):
        """Peak RSS of stagebench per part; replicas are prepared before (not in the run)."""
        cases = [("1a", {}), ("1a", {"file": "128M"}), ("1b", {}), ("1b", {"file": "256M"}),
                 ("2a", {}), ("2b", {}), ("2b", {"chunk": "8M"}), ("2c", {}),
                 ("2c", {"chunk": "256M"}), ("4a", {}), ("4b", {}), ("4c", {}),
                 ("4c", {"chunk": "128M"})]
        limit = 32 * MIB + THREADS * (XFER + MIB)
        self.rss_rows = []
        for part, over in cases:
            test = part if part in ("1a", "1b") else "2" if part[0] == "2" else None
            if "file" in over:
                run([self.sb, "prepare", test, "--scale", "small", "--file-size", over["file"],
                     "--dir", self.rdir, "--threads", str(THREADS), "--quiet"])
            wd = self.rdir if test else self.fresh("rss" + part)
            pr, p = self.sb_run(part, wd, over, prefix=["/usr/bin/time", "-v"])
            m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
            kib = int(m.group(1)) if m else -1
            what = "%s %s" % (part, " ".join("--%s %s" % ("file-size" if k == "file" else k, v)
                                          for k, v in over.items()) or "(small scale)")
            self.rss_rows.append((part, what, kib, pr))
        return limit

    def prepare_vs_dd(self):
        rows = []
        for r in range(self.a.prepare_reps):
            order = ["stagebench", "dd"] if r % 2 == 0 else ["dd", "stagebench"]
            for tool in order:
                d = self.fresh("prep")
                if tool == "dd":
                    f = os.path.join(d, "ddfile")
                    cmd = ["dd", "if=/dev/zero", "of=" + f, "bs=4M", "count=1024",
                           "conv=fsync", "status=none"]
                else:
                    f = None
                    cmd = [self.sb, "prepare", "2", "--scale", "spec", "--dir", d,
                           "--threads", str(THREADS), "--quiet"]
                t0 = time.monotonic()
                run(cmd)
                secs = time.monotonic() - t0
                rows.append((tool, 4 * GIB / secs))
                for g in glob.glob(os.path.join(d, "*")):
                    os.unlink(g)
        return rows

    # ---------- report ----------
    def fmt(self, vals, unit_div):
        if not vals:
            return "-"
        return "%.2f [%.2f-%.2f]" % (median(vals) / unit_div, min(vals) / unit_div,
                                     max(vals) / unit_div)

    def target(self, what, value, limit, greater=True):
        met = value >= limit if greater else value <= limit
        self.targets.append((what, value, limit, greater, met))

    def report_compare(self):
        log("")
        log("== throughput: median [min-max] of %d rounds, 2 threads on CPUs %s ==" %
            (self.a.reps, CPUS))
        log("%-4s %-40s %-9s %-24s %-24s %-24s %7s %7s" %
            ("part", "parameters", "unit", "stagebench", "fio", "bare loop", "sb/fio",
             "sb/bare"))
        for part, _, _, metric, what in PARTS:
            unit, div = UNITS[metric]
            res = self.results.get(part, {})
            sb, fio, bare = (median(res.get(t, [])) for t in ("stagebench", "fio", "bare"))
            log("%-4s %-40s %-9s %-24s %-24s %-24s %6.2fx %6.2fx" %
                (part, what, unit, self.fmt(res.get("stagebench"), div),
                 self.fmt(res.get("fio"), div), self.fmt(res.get("bare"), div), sb / fio,
                 sb / bare))
            self.ratio = getattr(self, "ratio", {})
            self.ratio[part] = (sb / fio, sb / bare)
        log("")
        log("secondary figures:")
        if "fio(ms)" in self.results.get("2c", {}):
            log("  2c fio bandwidth from its own millisecond runtime: %s GiB/s (the table uses"
                " its ns latency)" % self.fmt(self.results["2c"]["fio(ms)"], GIB))
        if "bare-create-only" in self.results.get("4a", {}):
            c0 = self.results["4a"]["bare-create-only"]
            log("  4a bare loop that only creates and closes (what fio's filecreate does): %s"
                " files/s; stagebench / it = %.2fx, fio / it = %.2fx" %
                (self.fmt(c0, 1.0), median(self.results["4a"]["stagebench"]) / median(c0),
                 median(self.results["4a"]["fio"]) / median(c0)))
        for part in ("4a", "4b", "4c"):
            ex = self.extra.get(part, {})
            log("  %s MiB/s: stagebench %s, fio %s, bare %s" %
                (part, self.fmt(ex.get("stagebench"), MIB), self.fmt(ex.get("fio"), MIB),
                 self.fmt(ex.get("bare"), MIB)))
        log("  1b fio uses its mmap engine, which memcpy()s every byte of the mapping (not one"
            " byte a page): for information only")
        log("  4a fio's filecreate engine only creates (open O_CREAT + close), it writes no data;"
            " stagebench and the bare loop create, write 4 KiB and close")
        log("  4b/4c fio: psync writes, create_on_open=1; files/s from its millisecond runtime")
        log("")
        log("page-cache residency seen at the start (min over rounds; stagebench: JSON"
            " cache_residency; bare: mincore; fio: fincore just before it):")
        for part in ("1a", "1b", "2a", "2b", "2c"):
            rs = self.resid.get(part, {})
            log("  %s: stagebench %s  fio %s  bare %s" % tuple(
                [part] + ["%.3f" % min(rs[t]) if rs.get(t) else "-"
                          for t in ("stagebench", "fio", "bare")]))
        log("")
        log("other processes' share of the CPUs while a measurement ran (median, max; a"
            " measurement over %d%% was repeated, at most %d times; waited %.0f s for a quiet"
            " machine, %d times in vain):" % (OTHERS_LIMIT * 100, self.a.retries,
                                              self.quiet.waited, self.quiet.gave_up))
        log("  " + "  ".join("%s %.0f%% %.0f%% (%d rep.)" % (
            part, median(self.others[part]) * 100, max(self.others[part]) * 100,
            len(self.retried.get(part, []))) for part, *_ in PARTS if part in self.others))
        log("")
        log("stagebench node_time_s = max over threads (release + thread time) - T: only the"
            " timed I/O; set-up, buffers, preparation and teardown are outside it.")
        lat = [o for o, _ in self.overhead]
        worst = max(self.overhead)
        log("  node_time - slowest thread's time (= that thread's release - T), over %d runs:"
            " median %.1f us, max %.1f us (in a %s run)" % (len(lat), median(lat) * 1e6,
                                                          worst[0] * 1e6, worst[1]))

        r = self.ratio
        self.target("1a bandwidth vs fio", r["1a"][0], 1.0)
        self.target("1a bandwidth vs bare loop", r["1a"][1], 0.95)
        self.target("2a IOPS vs fio", r["2a"][0], 1.2)
        self.target("2b bandwidth vs fio", r["2b"][0], 1.0)
        self.target("2c bandwidth vs fio", r["2c"][0], 2.0)
        self.target("1b pages/s vs bare mmap loop", r["1b"][1], 0.95)
        self.target("4a files/s vs fio filecreate", r["4a"][0], 1.2)
        for part, _, _, _, _ in PARTS:
            if part != "1a" and part != "1b":
                self.target("%s vs bare loop" % part, r[part][1], 0.95)

    def report_spread(self):
        us = [s * 1e6 for s in self.spreads]
        log("")
        log("== release spread of 1a, 2 threads, %d runs ==" % len(us))
        log("  median %.2f us, max %.2f us; all: %s" % (median(us), max(us),
                                                     " ".join("%.2f" % u for u in us)))
        log("  (release instants are epoch seconds in a double: resolution about 0.24 us)")
        self.target("1a median release spread (us)", median(us), 10.0, greater=False)

    def report_rss(self, limit):
        log("")
        log("== peak RSS of stagebench (/usr/bin/time -v), 2 threads, xfer 1 MiB ==")
        log("  limit: 32 MiB + threads x (xfer + 1 MiB) = %d KiB, for every part but 1b" %
            (limit // 1024))
        for part, what, kib, pr in self.rss_rows:
            ok = kib * 1024 < limit
            log("  %-32s %8d KiB  %s" % (what, kib, "(mapped file pages: not bounded)"
                                         if part == "1b" else "under" if ok else "OVER"))
            if part != "1b":
                self.target("peak RSS %s (KiB)" % what, kib, limit // 1024, greater=False)

    def report_prepare(self, rows):
        sb = [r for t, r in rows if t == "stagebench"]
        dd = [r for t, r in rows if t == "dd"]
        log("")
        log("== preparing a 4 GiB replica (stagebench prepare 2 --scale spec) vs dd bs=4M"
            " count=1024 conv=fsync, same filesystem, %d rounds ==" % len(sb))
        log("  stagebench %s MiB/s   dd %s MiB/s   ratio of medians %.2fx" %
            (self.fmt(sb, MIB), self.fmt(dd, MIB), median(sb) / median(dd)))
        self.target("prepare 4 GiB vs dd", median(sb) / median(dd), 0.9)

    def report_targets(self):
        log("")
        log("== targets ==")
        for what, value, limit, greater, met in self.targets:
            log("  %-44s %10.2f  %s %-8g %s" % (what, value, ">=" if greater else "<=", limit,
                                              "met" if met else "MISSED"))
        missed = sum(1 for t in self.targets if not t[4])
        log("  %d of %d targets met" % (len(self.targets) - missed, len(self.targets)))


def header(args):
    sbv = run([args.stagebench, "--version"], check=False).stdout.strip()
    fiov = run(["fio", "--version"], check=False).stdout.strip()
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    fs = run(["stat", "-f", "-c", "%T", args.base], check=False).stdout.strip()
    log("stagebench perf comparison  %s  host %s  kernel %s" %
        (time.strftime("%Y-%m-%d %H:%M:%S"), platform.node(), platform.release()))
    log("%s (%s), %s, gcc -O2 bare loops; %d CPUs online, load average %s; files on %s (%s)" %
        (sbv, args.stagebench, fiov, os.cpu_count(), load, args.base, fs))
    log("every stagebench run: run PART --scale small --threads 2 --start-in %s [overrides]" %
        START_IN)


def find_stagebench():
    for c in ("build-perf", "build", "build-release"):
        p = os.path.join(REPO, c, "stagebench")
        if os.access(p, os.X_OK):
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stagebench", default=find_stagebench(),
                    help="the binary (default: build-perf/stagebench, build/stagebench)")
    ap.add_argument("--base", default="/tmp", help="where the temporary directories go")
    ap.add_argument("--reps", type=int, default=7, help="rounds per part (default 7)")
    ap.add_argument("--prepare-reps", type=int, default=3, help="rounds of prepare vs dd")
    ap.add_argument("--retries", type=int, default=2,
                    help="repeat a measurement disturbed by other processes at most this often")
    ap.add_argument("--skip-prepare", action="store_true", help="skip prepare vs dd")
    args = ap.parse_args()
    if not args.stagebench or not os.access(args.stagebench, os.X_OK):
        sys.exit("run_perf: no stagebench binary; build it (cmake -DCMAKE_BUILD_TYPE=Release)"
                 " and pass --stagebench")
    args.stagebench = os.path.abspath(args.stagebench)
    for tool in ("fio", "gcc", "fincore", "chattr"):
        if not shutil.which(tool):
            sys.exit("run_perf: %s is missing" % tool)
    if not os.access("/usr/bin/time", os.X_OK):
        sys.exit("run_perf: /usr/bin/time is missing (apt-get install time)")
    if not {0, 1} <= os.sched_getaffinity(0):
        sys.exit("run_perf: CPUs 0 and 1 must be allowed")

    t_start = time.monotonic()
    perf = Perf(args)
    perf.base = tempfile.mkdtemp(prefix="stagebench-perf-", dir=args.base)
    try:
        header(args)
        # ext4 keeps a new directory in its parent's block group, where inodes deleted in the
        # last minutes make every create scan (recently_deleted()): "fresh" directories were
        # no faster. With the Orlov top-directory flag on the parent, each fresh directory
        # gets a block group of its own. It changes nothing but placement, for every tool.
        top = run(["chattr", "+T", perf.base], check=False).returncode == 0
        log("fresh directory per file-creation measurement, under %s (chattr +T: %s)" %
            (perf.base, "yes" if top else "not supported"))
        perf.build_bare()
        perf.prepare_replicas()
        perf.compare()
        perf.release_spread()
        limit = perf.rss()
        rows = [] if args.skip_prepare else perf.prepare_vs_dd()
        perf.report_compare()
        perf.report_spread()
        perf.report_rss(limit)
        if rows:
            perf.report_prepare(rows)
        perf.report_targets()
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
        log("")
        log("whole run %.0f s; load average at the end %s" % (time.monotonic() - t_start, load))
    except Fail as e:
        print("run_perf: %s" % e, file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(perf.base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
