#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The collector's outputs, kept and compared byte for byte: what one version of
stagebench-collect writes for a set of results directories, in every format and output, saved
once (--save), then what another version writes compared with it (--against). Used to change
how the collector reads and reduces summaries without changing a byte of what it reports.

Not a test: CI does not run it. It needs result directories; --make makes them from real runs:

    python3 tests/perf/collect_same.py --make DIR RUN...     # DIR/<name>: the runs, a damaged
                                                             # copy, generated 1,000-node runs
    python3 tests/perf/collect_same.py --save OUT [--collector PATH] DIR/*
    python3 tests/perf/collect_same.py --against OUT [--collector PATH] DIR/*

RUN: results directories of `stagebench-sim` (RESULTS/<run-id>); the first holds 11 summaries
or more (6 nodes and 2 parts). --make copies them, makes a damaged copy of the first
(truncated, not UTF-8, a duplicate key, NaN, a second copy of a summary, another schema, a
histogram of another scheme, figures that do not add up, a failed and an interrupted part)
and generates with tests/perf/collect_scale.py's summaries a 1,000-node run and a damaged
1,000-node run (duplicates within and across the collector's chunks, another
histogram scheme in the middle, failed and inconsistent parts, a node that ran nothing, invalid
files), so that the worker processes' reductions meet every case.

Each directory is collected with: the text, JSON and CSV on stdout; each format to -o FILE;
--save-baseline (its created_at set to 0: the time it was written), --baseline (the first
directory's), --prometheus, --expect with nodes that did not report, --top 2 --require-ntp, the
summary files named one by one, and --plot (SVG, its date and ids are the drawing's own, set to
fixed values) when matplotlib is there. stdout, stderr, the exit status and every file written
are kept. --no-history throughout: the history is its own modules' business.
"""
import argparse
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import collect_scale  # noqa: E402


# ---------------------------------------------------------------------------------------------
# Making the directories


def _summaries(d):
    return sorted(n for n in os.listdir(d) if n.endswith(".json") and n != "manifest.json"
                  and n not in ("info.json", "report.json"))


def _edit(path, fn):
    with open(path) as f:
        s = json.load(f)
    fn(s)
    with open(path, "w") as f:
        json.dump(s, f, indent=2)


def _first_part(s):
    return s["tests"][0]["parts"][0]


def damage_real(src, dst):
    """A damaged copy of a real run: each damage on another file."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("logs", "sim", "*.sqlite"))
    names = [n for n in _summaries(dst) if n not in ("report.json",)]
    rng = random.Random(1)
    rng.shuffle(names)
    p = [os.path.join(dst, n) for n in names]
    with open(p[0], "r+b") as f:  # truncated
        f.truncate(os.path.getsize(p[0]) // 2)
    with open(p[1], "ab") as f:  # not UTF-8
        f.write(b"\xff\n")
    with open(p[2]) as f:  # a duplicate key
        t = f.read().rstrip().rstrip("}")
    with open(p[2], "w") as f:
        f.write(t + ',"status":"failed"}\n')
    with open(p[3]) as f:  # NaN
        t = f.read()
    with open(p[3], "w") as f:
        f.write(re.sub(r'"node_time_s": [0-9.e-]+', '"node_time_s": NaN', t, 1))
    shutil.copy(p[4], p[4][:-5] + " (2).json")  # a second copy
    _edit(p[5], lambda s: s.update(schema="stagebench.history/1"))  # not a summary
    _edit(p[6], lambda s: _first_part(s)["latency_hist"].update(sub_bits=6))  # another scheme
    _edit(p[7], lambda s: _first_part(s).update(ops=_first_part(s)["ops"] + 1))  # no sum
    _edit(p[8], lambda s: _first_part(s).update(status="failed", error="read: I/O error"))
    _edit(p[9], lambda s: _first_part(s).update(status="interrupted",
                                                 error="interrupted by SIGTERM"))
    _edit(p[10], lambda s: _first_part(s)["per_thread"][0].update(error="pread: EIO"))
    with open(os.path.join(dst, "garbage.json"), "w") as f:
        f.write("not json at all\n")


def generated(dst, nodes, damaged):
    """A run of generated summaries (collect_scale's, 8 threads a node); damaged: with every
    case the workers' reductions must get right."""
    os.makedirs(dst)
    collect_scale.write_some((dst, 1, nodes + 1, 8))
    with open(os.path.join(dst, "manifest.json"), "w") as f:
        json.dump(collect_scale.manifest(nodes + 5), f, indent=1)
    if not damaged:
        return
    name = lambda i: os.path.join(dst, "node%06d.2a.rep1.json" % i)  # noqa: E731
    for i in (3, 300, 301, 999):  # second copies: within a chunk and across chunks
        shutil.copy(name(i), name(i)[:-5] + " (2).json")
    shutil.copy(name(7), os.path.join(dst, "node000007.2a.rep1.copy.json"))
    for i in range(400, 420):  # another histogram scheme in the middle
        _edit(name(i), lambda s: _first_part(s)["latency_hist"].update(sub_bits=6))
    _edit(name(1), lambda s: _first_part(s)["latency_hist"].update(sub_bits=6))
    for i in (10, 500, 777):
        _edit(name(i), lambda s: _first_part(s).update(status="failed", error="I/O error"))
    for i in (11, 600):
        _edit(name(i), lambda s: _first_part(s).update(bytes=_first_part(s)["bytes"] - 1))
    _edit(name(12), lambda s: _first_part(s).update(status="late", late=True))
    _edit(name(13), lambda s: _first_part(s)["latency_hist"].update(count=0, buckets=[]))
    _edit(name(14), lambda s: _first_part(s).update(latency_hist=None))
    _edit(name(15), lambda s: _first_part(s)["per_thread"][1].update(release_at=0))
    _edit(name(16), lambda s: s.update(tests=[], status="failed", errors=["no --dir"]))
    _edit(name(17), lambda s: _first_part(s)["per_thread"][2].update(cpu=None))
    with open(name(18), "r+b") as f:
        f.truncate(100)
    os.unlink(name(19))  # missing
    with open(os.path.join(dst, "zz.json"), "w") as f:
        f.write("[1, 2")


# damage_real puts each damage on another summary of the first run
DAMAGES = 11


def make(dst, runs):
    first = _summaries(runs[0]) if os.path.isdir(runs[0]) else []
    if len(first) < DAMAGES:
        raise SystemExit("collect_same.py: --make: the first run, %s, has %d summaries; its "
                         "damaged copy needs %d (a stagebench-sim of 6 nodes and 2 parts)"
                         % (runs[0], len(first), DAMAGES))
    os.makedirs(dst)
    for r in runs:
        shutil.copytree(r, os.path.join(dst, os.path.basename(r.rstrip("/"))),
                        ignore=shutil.ignore_patterns("logs", "sim", "*.sqlite"))
    damage_real(runs[0], os.path.join(dst, os.path.basename(runs[0].rstrip("/")) + "-damaged"))
    generated(os.path.join(dst, "gen1000"), 1000, False)
    generated(os.path.join(dst, "gen1000-damaged"), 1000, True)


# ---------------------------------------------------------------------------------------------
# Running the collector


def _have_matplotlib(python):
    return subprocess.run([python, "-c", "import matplotlib"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def variants(d, base_dir, plot):
    """(name, args, output files) of every way d is collected; {OUT} is a file in the scratch
    directory."""
    files = [os.path.join(d, n) for n in _summaries(d)]
    out = [("text", [d], []), ("json", [d, "--format", "json"], []),
           ("csv", [d, "--format", "csv"], [])]
    for fmt in ("text", "json", "csv"):
        out.append(("o-" + fmt, [d, "--format", fmt, "-o", "{OUT}/report"], ["report"]))
    out += [
        ("save-baseline", [d, "--save-baseline", "{OUT}/baseline.json"], ["baseline.json"]),
        ("baseline", [d, "--baseline", os.path.join(base_dir, "baseline.json"),
                      "--tolerance", "0"], []),
        ("prometheus", [d, "--prometheus", "{OUT}/sb.prom"], ["sb.prom"]),
        ("expect", [d, "--format", "json", "--expect", "node[1-5],node[000001-000003],extra1"],
         []),
        ("top-ntp", [d, "--top", "2", "--require-ntp"], []),
        ("files", files[:200] + ["--format", "json"], []),
    ]
    if plot:
        out.append(("plot", [d, "--plot", "{OUT}/plot.svg"], ["plot.svg"]))
    return out


def _normal(name, data):
    """What of an output is the time it was written, set to fixed values."""
    if name == "baseline.json":
        return re.sub(rb'"created_at": [0-9.e+]+', b'"created_at": 0', data)
    if name == "plot.svg":
        data = re.sub(rb"<dc:date>[^<]*</dc:date>", b"<dc:date></dc:date>", data)
        return data
    return data


def run_all(collector, python, catalogue, dirs, keep):
    """{key: bytes} of every output of every variant of every directory."""
    plot = _have_matplotlib(python)
    got = {}
    scratch = tempfile.mkdtemp(prefix="stagebench-collect-same-")
    base_dir = os.path.join(scratch, "base")
    os.makedirs(base_dir)
    # the plot's ids fixed (matplotlib draws random ones), its date the epoch
    mpl = os.path.join(scratch, "mpl")
    os.makedirs(mpl)
    with open(os.path.join(mpl, "matplotlibrc"), "w") as f:
        f.write("svg.hashsalt: stagebench\n")
    env = dict(os.environ, STAGEBENCH_CATALOGUE=catalogue, MPLBACKEND="Agg",
               SOURCE_DATE_EPOCH="0", MPLCONFIGDIR=mpl)
    same = lambda data: data.replace(scratch.encode(), b"SCRATCH")  # noqa: E731
    try:
        # the baseline every directory is compared with: the first directory's
        p = subprocess.run([python, collector, dirs[0], "--no-history", "--save-baseline",
                            os.path.join(base_dir, "baseline.json")], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for d in dirs:
            for name, args, outs in variants(d, base_dir, plot):
                o = os.path.join(scratch, "o")
                shutil.rmtree(o, True)
                os.makedirs(o)
                args = [a.replace("{OUT}", o) for a in args]
                p = subprocess.run([python, collector] + args + ["--no-history"], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                key = "%s/%s" % (os.path.basename(d), name)
                got[key + ".stdout"] = same(p.stdout)
                got[key + ".stderr"] = same(p.stderr)
                got[key + ".rc"] = str(p.returncode).encode()
                for f in outs:
                    path = os.path.join(o, f)
                    got[key + "." + f] = same(_normal(f, open(path, "rb").read())) \
                        if os.path.exists(path) else b"(not written)"
    finally:
        if keep:
            print("kept %s" % scratch)
        else:
            shutil.rmtree(scratch, True)
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--make", metavar="DIR", help="make the result directories in DIR")
    g.add_argument("--save", metavar="OUT", help="save the outputs in OUT")
    g.add_argument("--against", metavar="OUT", help="compare the outputs with OUT's")
    ap.add_argument("dirs", nargs="+", metavar="DIR")
    ap.add_argument("--collector", default=os.path.join(REPO, "scripts", "stagebench-collect"))
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--catalogue", default=os.path.join(REPO, "build", "catalogue.json"))
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = ap.parse_args()
    if args.make:
        make(args.make, args.dirs)
        print("made %s: %s" % (args.make, " ".join(sorted(os.listdir(args.make)))))
        return 0
    dirs = [os.path.abspath(d) for d in args.dirs]
    got = run_all(os.path.abspath(args.collector), args.python,
                  os.path.abspath(args.catalogue), dirs, args.keep)
    if args.save:
        os.makedirs(args.save)
        for k, v in got.items():
            path = os.path.join(args.save, k)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(v)
        print("saved %d outputs of %d directories in %s" % (len(got), len(dirs), args.save))
        return 0
    saved = {}
    for path in glob.glob(os.path.join(args.against, "*", "*")):
        saved[os.path.relpath(path, args.against)] = open(path, "rb").read()
    differ = sorted(k for k in set(saved) | set(got) if saved.get(k) != got.get(k))
    for k in differ:
        print("DIFFERS: %s (%s bytes saved, %s now)" % (
            k, len(saved[k]) if k in saved else "no", len(got[k]) if k in got else "no"))
    print("%d outputs of %d directories compared: %d identical, %d differ"
          % (len(set(saved) | set(got)), len(dirs), len(set(saved) | set(got)) - len(differ),
             len(differ)))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
