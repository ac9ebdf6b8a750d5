# SPDX-License-Identifier: MIT
"""stagebench-sim: a cluster of R nodes on S /stage servers, simulated on this machine.

The counterpart of the spec's sim_res_run.pl. Every simulated node is a real stagebench
process with its own name (node1..nodeR) and its own share of the cores, started by the real
launcher (stagebench-cluster) through `clush -R exec` (or `pdsh -R exec`) with one dynamically
set start instant per part. Node i works in DIR/server<i mod S>: put DIR on a network
filesystem to exercise a real /stage server. With more nodes than cores the nodes share cores
(stagebench refuses two threads on a core within one process, not across processes), and the
report says so.

Each node's stagebench is a small wrapper script, RESULTS/<run-id>/sim/bin/<node>, that adds
the node's --dir and --cpus; --fault NODE=KIND makes one node misbehave for real, to see how
the launcher and the collector report it:
  missing-dir  the node's directory does not exist (its commands fail at once, exit 3)
  hang         the node's `stagebench run` stops itself (SIGSTOP) before it starts: a real
               hang that only the launcher's --timeout ends
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from . import catalogue
from . import common as L
from . import files as F
from . import procs as P
from .nodes import nodeset_fold
from .procs import run_capture

FAULTS = ("missing-dir", "hang")
EPILOG = """\
examples:
  stagebench-sim --nodes 4 --servers 2 --dir /tmp/stage --results /tmp/sb --scale small 1a 2 4
  stagebench-sim --nodes 8 --servers 2 --dir /mnt/nfs/stage --results sb --repeat 2 all
  stagebench-sim --nodes 4 --servers 2 --dir d --results r --scale tiny \\
      --fault node3=hang --timeout 10 1a

exit status: the launcher's: 0 every node ok; 1 a node failed, hung or is missing; 2 bad usage;
3 no node could be used; 130/143 interrupted.
"""


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="stagebench-sim", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Simulate R nodes on S /stage servers on this machine, each a real "
                    "stagebench process started through the real launcher (clush -R exec).",
        epilog=EPILOG)
    ap.add_argument("--nodes", type=int, required=True, metavar="R",
                    help="simulated nodes (node1..nodeR)")
    ap.add_argument("--servers", type=int, required=True, metavar="S",
                    help="simulated /stage servers: node i works in DIR/server<i mod S>")
    ap.add_argument("--dir", required=True, metavar="DIR",
                    help="holds the servers' directories server0..server<S-1> (created)")
    ap.add_argument("--results", required=True, metavar="DIR",
                    help="results directory: the run goes to DIR/<run-id>/")
    ap.add_argument("--run-id", metavar="ID", help="name of the run (default: date-time)")
    ap.add_argument("--stagebench", metavar="PATH",
                    help="the binary (default: the one beside this script, else on PATH)")
    ap.add_argument("--launcher", choices=("clush", "pdsh"), default="clush",
                    help="the launcher's engine, in exec mode (default: clush)")
    ap.add_argument("--fault", action="append", default=[], metavar="NODE=KIND",
                    help="make a node misbehave: KIND is missing-dir or hang (repeatable)")
    ap.add_argument("--timeout", metavar="SECONDS",
                    help="a part's time limit on a node (the launcher's --timeout)")
    ap.add_argument("--lead", metavar="SECONDS", help="the launcher's --lead")
    ap.add_argument("--clean", action="store_true",
                    help="remove the replicas at the end (stagebench clean on the preparers)")
    ap.add_argument("--no-report", action="store_true", help="do not print the report")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the launcher's commands, run nothing")
    ap.add_argument("--verbose", "-v", action="store_true")
    g = ap.add_argument_group("options passed to 'stagebench run' on every node")
    g.add_argument("--scale", choices=("spec", "small", "tiny"), default="small")
    g.add_argument("--repeat", type=int, default=1, metavar="K")
    for opt in ("xfer", "seed", "count", "chunk", "file-size", "passes"):
        g.add_argument("--" + opt, metavar="VALUE")
    for opt in ("verify", "fsync", "keep", "require-ntp", "late-ok"):
        g.add_argument("--" + opt, action="store_true")
    ap.add_argument("tests", nargs="*", metavar="TEST", help="1a 1b 2 3 4 all, or parts")
    ap.add_argument("--version", action=catalogue.VersionAction)
    return ap.parse_args(argv)


def local_cores(binary):
    """One CPU per allowed core, from `stagebench info` (the binary's own thread plan)."""
    try:
        rc, out, err = run_capture([binary, "info", "--format", "json"], 60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise L.UsageError("cannot run '%s': %s" % (binary, e))
    if rc != 0:
        raise L.UsageError("'%s info' failed: %s" % (binary, L.safe_text(err.strip())))
    try:
        info = json.loads(out)
        cpus = [int(t["cpu"]) for t in info["threads"]]
    except (ValueError, KeyError, TypeError):
        raise L.UsageError("'%s info --format json' printed no thread plan" % binary)
    if not cpus:
        raise L.UsageError("'%s info' found no usable core" % binary)
    return cpus


def share_cores(nodes, cpus):
    """{node: [cpus]} and a note: a block of cores each, or one core shared by several."""
    r, c = len(nodes), len(cpus)
    out = {}
    if r <= c:
        per = c // r
        for i, n in enumerate(nodes):
            out[n] = cpus[i * per:(i + 1) * per]
        note = "%d simulated node%s on %d core%s: %d core%s each, none shared" % (
            r, "" if r == 1 else "s", c, "" if c == 1 else "s", per, "" if per == 1 else "s")
    else:
        for i, n in enumerate(nodes):
            out[n] = [cpus[i % c]]
        most = (r + c - 1) // c
        note = ("%d simulated nodes share %d core%s (up to %d nodes on a core, one thread "
                "each): node times include that sharing, which real nodes do not have"
                % (r, c, "" if c == 1 else "s", most))
    return out, note


def wrapper(binary, node, server, stage_dir, cpus, fault, run_id):
    q = shlex.quote
    cpu_list = ",".join(str(x) for x in cpus)
    lines = ["#!/bin/sh",
             "# stagebench-sim run %s: simulated node %s, /stage server %s (%s), CPUs %s%s"
             % (run_id, node, server, stage_dir, cpu_list,
                "; fault: %s" % fault if fault else "")]
    if fault == "hang":
        lines.append('case "$1" in run) kill -STOP $$ ;; esac  # fault: hang until killed')
    lines += ['case "$1" in',
              "run|prepare|info|check) exec %s \"$@\" --dir %s --cpus %s ;;"
              % (q(binary), q(stage_dir), cpu_list),
              "*) exec %s \"$@\" --dir %s ;;" % (q(binary), q(stage_dir)),
              "esac", ""]
    return "\n".join(lines)


def main():
    args = parse_args(sys.argv[1:])
    try:
        if not (1 <= args.nodes <= 4096):
            raise L.UsageError("--nodes %d is out of range: 1 to 4096" % args.nodes)
        if not (1 <= args.servers <= args.nodes):
            raise L.UsageError("--servers %d is out of range: 1 to --nodes (%d)"
                               % (args.servers, args.nodes))
        nodes = ["node%d" % i for i in range(1, args.nodes + 1)]
        faults = {}
        for f in args.fault:
            node, sep, kind = f.partition("=")
            if not sep or kind not in FAULTS:
                raise L.UsageError("--fault '%s': expected NODE=KIND, KIND one of %s"
                                   % (f, ", ".join(FAULTS)))
            if node not in nodes:
                raise L.UsageError("--fault '%s': no simulated node %s (node1..node%d)"
                                   % (f, node, args.nodes))
            faults[node] = kind
        binary = args.stagebench or F.find_sibling("stagebench")
        if not binary:
            raise L.UsageError("no stagebench binary: give --stagebench PATH")
        binary = os.path.abspath(binary)
        if not os.access(binary, os.X_OK):
            raise L.UsageError("--stagebench '%s' is not an executable" % binary)
        catalogue.load(binary).parse_tests(args.tests)
        launcher = F.find_sibling("stagebench-cluster")
        if not launcher:
            raise L.UsageError("stagebench-cluster is neither beside this command nor on PATH")
        run_id = args.run_id or "sim-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        if not L.run_id_ok(run_id):
            raise L.UsageError("--run-id '%s' is not valid: letters, digits, '.', '_', '-'"
                               % run_id)
        results = os.path.abspath(args.results)
        rundir = os.path.join(results, run_id)
        if os.path.exists(os.path.join(rundir, L.MANIFEST)):
            raise L.UsageError("results directory %s already holds a run: choose another "
                               "--run-id" % rundir)
        top = os.path.abspath(args.dir)
        cpus = local_cores(binary)
        share, note = share_cores(nodes, cpus)
    except L.UsageError as e:
        L.fail(str(e), L.EXIT_USAGE)

    simdir = os.path.join(rundir, "sim")
    bindir = os.path.join(simdir, "bin")
    servers_file = os.path.join(simdir, "servers")
    dry_dir = None
    if args.dry_run:  # the launcher reads the servers file even then: a private copy
        dry_dir = tempfile.mkdtemp(prefix="stagebench-sim-dry-run-")
        servers_file = os.path.join(dry_dir, "servers")
    by_server = {}
    for i, n in enumerate(nodes, 1):
        by_server.setdefault("server%d" % (i % args.servers), []).append(n)
    if not args.dry_run:
        try:
            F.ensure_dir(results)
            # fresh (the run directory: or made by stagebench-cron, see make_run_dir): the
            # wrappers in sim/bin are executed, as whoever runs this
            F.make_run_dir(rundir, 0o755)
            F.make_dir(simdir, 0o755)
            F.make_dir(bindir, 0o700)
            for s in by_server:
                os.makedirs(os.path.join(top, s), exist_ok=True)
        except OSError as e:
            L.fail("cannot create %s" % (("%s: %s" % (e.filename, L.errno_text(e)))
                                         if e.filename else e), L.EXIT_PRECONDITION)
        for s, ns in by_server.items():
            for n in ns:
                stage = os.path.join(top, s)
                if faults.get(n) == "missing-dir":
                    stage = os.path.join(top, "missing-" + n)
                F.write_atomic(os.path.join(bindir, n), wrapper(
                    binary, n, s, stage, share[n], faults.get(n), run_id), 0o755)
    F.write_atomic(servers_file, "".join("%s %s\n" % (nodeset_fold(ns), s)
                                         for s, ns in sorted(by_server.items())))

    cmd = [sys.executable, launcher, "--launcher", args.launcher, "--exec",
           "-w", nodeset_fold(nodes), "--servers", servers_file,
           "--stagebench", bindir.replace("%", "%%") + "/%h",
           "--results", results, "--run-id", run_id, "--scale", args.scale,
           "--local-stagebench", binary,
           "--repeat", str(args.repeat), "--note", note]
    for n, kind in sorted(faults.items()):
        cmd += ["--note", "fault injected by stagebench-sim: %s %s" % (n, kind)]
    for opt in ("timeout", "lead", "xfer", "seed", "count", "chunk", "file_size", "passes"):
        v = getattr(args, opt)
        if v is not None:
            cmd += ["--" + opt.replace("_", "-"), v]
    for opt in ("verify", "fsync", "keep", "require_ntp", "late_ok", "clean", "no_report",
                "dry_run", "verbose"):
        if getattr(args, opt):
            cmd.append("--" + opt.replace("_", "-"))
    cmd += list(args.tests)
    L.say("%s; servers: %s" % (note, "; ".join("%s: %s" % (s, nodeset_fold(ns))
                                               for s, ns in sorted(by_server.items()))))
    if args.verbose:
        L.say("launcher: " + " ".join(shlex.quote(c) for c in cmd))

    # The launcher runs in its own session: a Ctrl-C reaches it once, forwarded from here.
    proc = subprocess.Popen(cmd, start_new_session=True)
    P.forward_signals(proc)
    try:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:
                continue
    finally:
        if dry_dir is not None:
            shutil.rmtree(dry_dir, ignore_errors=True)
