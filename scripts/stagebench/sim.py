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
--clock-skew NODE=SECONDS runs that node's stagebench under libfaketime with its wall clock
(CLOCK_REALTIME only; CLOCK_MONOTONIC left alone) that far ahead (+) or behind (-).

A cluster's caches: with --sshfs each simulated node reaches its server's directory through
an sshfs mount of its own (RESULTS/<run-id>/sim/mnt/<node>, through a private sshd on
127.0.0.1 that the simulation starts and stops), so each node has its own client cache (the
node cache), this machine's page cache of the server directory's files is the server cache,
and the disk is below it. --server-drop drops that server cache (posix_fadvise DONTNEED on the
servers' files, cachedrop.py) before each part of test 3, through the launcher's --server-drop.
"""
import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time

from . import catalogue
from . import common
from . import files
from . import procs
from . import sshd
from .launchplan import RUN_FLAGS
from .nodes import nodeset_fold
from .procs import run_capture

FAULTS = ("missing-dir", "hang")
# libfaketime's multi-threaded library (stagebench runs a thread per core: the single-threaded
# libfaketime.so.1 is not safe there), where Debian (faketime: the multiarch directory), RHEL
# and Fedora (lib64) and a build from source put it
FAKETIME_LIB = "libfaketimeMT.so.1"
FAKETIME_DIRS = ("/usr/lib/{multiarch}/faketime", "/usr/lib64/faketime", "/usr/lib/faketime",
                 "/usr/local/lib/faketime")
# A node's own client cache that keeps a file's pages across opens while the server's copy is
# unchanged (auto_cache: by modification time, checked on every open as neither sshfs's
# directory cache nor the kernel's attributes are kept), as an NFS client does.
SSHFS_OPTIONS = ("auto_cache", "dir_cache=no", "attr_timeout=0", "entry_timeout=0")
EPILOG = """\
examples:
  stagebench-sim --nodes 4 --servers 2 --dir /tmp/stage --results /tmp/sb --scale small 1a 2 4
  stagebench-sim --nodes 8 --servers 2 --dir /mnt/nfs/stage --results sb --repeat 2 all
  stagebench-sim --nodes 4 --servers 2 --dir d --results r --scale tiny \\
      --fault node3=hang --timeout 10 1a
  stagebench-sim --nodes 3 --servers 1 --dir /tmp/stage --results r --scale small \\
      --sshfs --server-drop 1a 2 3
  stagebench-sim --nodes 3 --servers 1 --dir d --results r --scale tiny --lead 10 \\
      --clock-skew node2=+2.5 --clock-skew node3=-3 1a

exit status: the launcher's: 0 every node ok; 1 a node failed, hung or is missing; 2 bad usage;
3 no node could be used; 130/143 interrupted; 128+N the launcher was killed by signal N
(137: SIGKILL), said on stderr.
"""


def build_parser():
    """The command line's parser (its completion is generated from it too)."""
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
    ap.add_argument("--clock-skew", action="append", default=[], metavar="NODE=SECONDS",
                    help="run a node with its wall clock that far ahead or behind (libfaketime, "
                         "Debian: faketime; repeatable)")
    ap.add_argument("--node-binary", action="append", default=[], metavar="NODE=PATH",
                    help="run a node's stagebench from another binary (a patched copy, another "
                         "build), to see the verdict tell it apart (repeatable)")
    ap.add_argument("--sshfs", action="store_true",
                    help="each node reaches its server's directory through its own sshfs mount "
                         "(its own client cache) via a private sshd on 127.0.0.1")
    ap.add_argument("--server-drop", action="store_true",
                    help="drop the servers' cache (this machine's pages of their files) before "
                         "each part of test 3")
    ap.add_argument("--note", action="append", default=[], metavar="TEXT",
                    help="the launcher's --note: a note for the manifest and the report "
                         "(repeatable)")
    ap.add_argument("--max-offset", metavar="SECONDS", help="the launcher's --max-offset")
    ap.add_argument("--require-sync", action="store_true", help="the launcher's --require-sync")
    ap.add_argument("--timeout", metavar="SECONDS",
                    help="a part's time limit on a node (the launcher's --timeout)")
    ap.add_argument("--lead", metavar="SECONDS", help="the launcher's --lead")
    ap.add_argument("--clean", action="store_true",
                    help="remove the replicas at the end (stagebench clean on the preparers)")
    ap.add_argument("--no-report", action="store_true", help="do not print the report")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the launcher's commands, run nothing")
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="print the launcher's command line, and the launcher's own commands")
    g = ap.add_argument_group("options passed to 'stagebench run' on every node")
    g.add_argument("--scale", choices=("spec", "small", "tiny"), default="small",
                   help="as stagebench run's (default here: small)")
    g.add_argument("--repeat", type=int, default=1, metavar="K",
                   help="as stagebench run's (default: 1)")
    for opt in ("xfer", "seed", "count", "chunk", "file-size", "passes"):
        g.add_argument("--" + opt, metavar="VALUE", help="as stagebench run's")
    for f in RUN_FLAGS:
        g.add_argument("--" + f.replace("_", "-"), action="store_true", help="as stagebench run's")
    ap.add_argument("tests", nargs="*", metavar="TEST", help="1a 1b 2 3 4 all, or parts")
    ap.add_argument("--version", action=catalogue.VersionAction)
    return ap


def parse_args(argv):
    return build_parser().parse_args(argv)


def local_cores(binary):
    """One CPU per allowed core, from `stagebench info` (the binary's own thread plan)."""
    try:
        rc, out, err = run_capture([binary, "info", "--format", "json"], 60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise common.UsageError("cannot run '%s': %s" % (binary, e))
    if rc != 0:
        raise common.UsageError("'%s info' failed: %s" % (binary, common.safe_text(err.strip())))
    try:
        info = json.loads(out)
        cpus = [int(t["cpu"]) for t in info["threads"]]
    except (ValueError, KeyError, TypeError):
        raise common.UsageError("'%s info --format json' printed no thread plan" % binary)
    if not cpus:
        raise common.UsageError("'%s info' found no usable core" % binary)
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


def faketime_library():
    """The path of libfaketimeMT.so.1, or None: in this system's multiarch library directory
    (the interpreter's MULTIARCH, x86_64-linux-gnu on Debian amd64), else lib64, lib."""
    multiarch = sysconfig.get_config_var("MULTIARCH")
    for d in FAKETIME_DIRS:
        if "{multiarch}" in d:
            if not multiarch:
                continue
            d = d.format(multiarch=multiarch)
        path = os.path.join(d, FAKETIME_LIB)
        if os.path.isfile(path):
            return path
    return None


def faketime_for(skews):
    """The library to preload when a node's clock is skewed (None when none is); refused when
    this system has no libfaketimeMT."""
    path = faketime_library() if skews else None
    if skews and not path:
        raise common.UsageError("--clock-skew needs libfaketime's multi-threaded library, %s "
                                "(Debian: faketime)" % FAKETIME_LIB)
    return path


def parse_skews(items, nodes):
    """{node: seconds} from --clock-skew NODE=SECONDS."""
    skews = {}
    for item in items:
        node, sep, value = item.partition("=")
        try:
            sec = float(value)
        except ValueError:
            sec = None
        if not sep or sec is None or sec != sec or abs(sec) > 86400:
            raise common.UsageError("--clock-skew '%s': expected NODE=SECONDS (+2.5, -3)" % item)
        if node not in nodes:
            raise common.UsageError("--clock-skew '%s': no simulated node %s" % (item, node))
        skews[node] = sec
    return skews


def parse_binaries(items, nodes):
    """{node: the absolute path of its binary} from --node-binary NODE=PATH."""
    out = {}
    for item in items:
        node, sep, path = item.partition("=")
        if not sep or not path:
            raise common.UsageError("--node-binary '%s': expected NODE=PATH" % item)
        if node not in nodes:
            raise common.UsageError("--node-binary '%s': no simulated node %s" % (item, node))
        path = os.path.abspath(path)
        if not os.access(path, os.X_OK) or not os.path.isfile(path):
            raise common.UsageError("--node-binary '%s' is not an executable" % item)
        out[node] = path
    return out


def wrapper(binary, node, server, stage_dir, cpus, fault, run_id, skew=None):
    """skew: (libfaketime's path, seconds) for a node whose wall clock is skewed."""
    q = shlex.quote
    cpu_list = ",".join(str(x) for x in cpus)
    lines = ["#!/bin/sh",
             "# stagebench-sim run %s: simulated node %s, /stage server %s (%s), CPUs %s%s"
             % (run_id, node, server, stage_dir, cpu_list,
                "; fault: %s" % fault if fault else "")]
    if skew is not None:  # libfaketime: the wall clock moved, the monotonic clock left alone
        lines += ["LD_PRELOAD=%s FAKETIME=%s FAKETIME_DONT_FAKE_MONOTONIC=1"
                  % (q(skew[0]), q("%+.9g" % skew[1])),
                  "export LD_PRELOAD FAKETIME FAKETIME_DONT_FAKE_MONOTONIC"]
    if fault == "hang":
        lines.append('case "$1" in run) kill -STOP $$ ;; esac  # fault: hang until killed')
    lines += ['case "$1" in',
              "run|prepare|info|check) exec %s \"$@\" --dir %s --cpus %s ;;"
              % (q(binary), q(stage_dir), cpu_list),
              "clock) exec %s \"$@\" ;;" % q(binary),
              "*) exec %s \"$@\" --dir %s ;;" % (q(binary), q(stage_dir)),
              "esac", ""]
    return "\n".join(lines)


def main():
    args = parse_args(sys.argv[1:])
    try:
        if not (1 <= args.nodes <= 4096):
            raise common.UsageError("--nodes %d is out of range: 1 to 4096" % args.nodes)
        if not (1 <= args.servers <= args.nodes):
            raise common.UsageError("--servers %d is out of range: 1 to --nodes (%d)"
                                    % (args.servers, args.nodes))
        nodes = ["node%d" % i for i in range(1, args.nodes + 1)]
        faults = {}
        for f in args.fault:
            node, sep, kind = f.partition("=")
            if not sep or kind not in FAULTS:
                raise common.UsageError("--fault '%s': expected NODE=KIND, KIND one of %s"
                                        % (f, ", ".join(FAULTS)))
            if node not in nodes:
                raise common.UsageError("--fault '%s': no simulated node %s (node1..node%d)"
                                        % (f, node, args.nodes))
            faults[node] = kind
        skews = parse_skews(args.clock_skew, nodes)
        args.node_binary = parse_binaries(args.node_binary, nodes)
        faketime = faketime_for(skews)
        if args.sshfs and not args.dry_run:
            for tool in ("sshfs", "/usr/sbin/sshd", "ssh-keygen"):
                if not shutil.which(tool):
                    raise common.UsageError("--sshfs needs %s (Debian: sshfs, openssh-server)"
                                            % tool)
            if not os.path.exists("/dev/fuse"):
                raise common.UsageError("--sshfs needs FUSE: /dev/fuse does not exist")
        binary = args.stagebench or files.find_sibling("stagebench")
        if not binary:
            raise common.UsageError("no stagebench binary: give --stagebench PATH")
        binary = os.path.abspath(binary)
        if not os.access(binary, os.X_OK):
            raise common.UsageError("--stagebench '%s' is not an executable" % binary)
        catalogue.load(binary).parse_tests(args.tests)
        launcher = files.find_sibling("stagebench-cluster")
        if not launcher:
            raise common.UsageError("stagebench-cluster is neither beside this command nor on PATH")
        run_id = args.run_id or "sim-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        if not common.run_id_ok(run_id):
            raise common.UsageError("--run-id '%s' is not valid: letters, digits, '.', '_', '-'"
                                    % run_id)
        results = os.path.abspath(args.results)
        rundir = os.path.join(results, run_id)
        if os.path.exists(os.path.join(rundir, common.MANIFEST)):
            raise common.UsageError("results directory %s already holds a run: choose another "
                                    "--run-id" % rundir)
        top = os.path.abspath(args.dir)
        cpus = local_cores(binary)
        share, note = share_cores(nodes, cpus)
    except common.UsageError as e:
        common.fail(str(e), common.EXIT_USAGE)

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
    held = []  # the private sshd of --sshfs, once started: stopped whatever happens
    try:
        if not args.dry_run:
            setup_nodes(args, top, simdir, bindir, by_server, faults, skews, faketime, binary,
                        share, run_id, held)
        return launch(args, nodes, by_server, faults, top, rundir, results, run_id, binary,
                      launcher, bindir, servers_file, note, skews)
    finally:
        for server in held:
            left = server.close()
            if left:
                common.say("warning: could not unmount %s" % ", ".join(left))
        if dry_dir is not None:
            shutil.rmtree(dry_dir, ignore_errors=True)


def setup_nodes(args, top, simdir, bindir, by_server, faults, skews, faketime, binary, share,
                run_id, held):
    """The servers' directories, each node's mount (--sshfs) and wrapper; the private sshd of
    --sshfs goes into held (the caller stops it)."""
    results, rundir = os.path.dirname(os.path.dirname(simdir)), os.path.dirname(simdir)
    try:
        files.ensure_dir(results)
        # fresh (the run directory: or made by stagebench-cron, see make_run_dir): the
        # wrappers in sim/bin are executed, as whoever runs this
        files.make_run_dir(rundir, 0o755)
        files.make_dir(simdir, 0o755)
        files.make_dir(bindir, 0o700)
        for s in by_server:
            os.makedirs(os.path.join(top, s), exist_ok=True)
        if args.sshfs:
            files.make_dir(os.path.join(simdir, "ssh"), 0o700)
            files.make_dir(os.path.join(simdir, "mnt"), 0o755)
    except OSError as e:
        common.fail("cannot create %s" % (("%s: %s" % (e.filename, common.errno_text(e)))
                                          if e.filename else e), common.EXIT_PRECONDITION)
    server = None
    if args.sshfs:
        server = sshd.SshServer(os.path.join(simdir, "ssh"))
        held.append(server)
        why = server.start()
        if why:
            common.fail("--sshfs: %s" % why, common.EXIT_PRECONDITION)
    for s, ns in by_server.items():
        for n in ns:
            stage = os.path.join(top, s)
            if faults.get(n) == "missing-dir":
                stage = os.path.join(top, "missing-" + n)
            elif server is not None:
                mnt = os.path.join(simdir, "mnt", n)
                why = None
                try:
                    files.make_dir(mnt, 0o755)
                except OSError as e:
                    why = common.errno_text(e)
                why = why or server.mount(stage, mnt, SSHFS_OPTIONS)
                if why:
                    common.fail("--sshfs: %s: %s" % (n, why), common.EXIT_PRECONDITION)
                stage = mnt
            files.write_atomic(os.path.join(bindir, n), wrapper(
                args.node_binary.get(n, binary), n, s, stage, share[n], faults.get(n), run_id,
                (faketime, skews[n]) if n in skews else None), 0o755)


def launch(args, nodes, by_server, faults, top, rundir, results, run_id, binary, launcher,
           bindir, servers_file, note, skews):
    """Run the launcher on the simulated nodes; its exit status."""
    files.write_atomic(servers_file, "".join("%s %s\n" % (nodeset_fold(ns), s)
                                             for s, ns in sorted(by_server.items())))

    cmd = [sys.executable, launcher, "--launcher", args.launcher, "--exec",
           "-w", nodeset_fold(nodes), "--servers", servers_file,
           "--stagebench", bindir.replace("%", "%%") + "/%h",
           "--results", results, "--run-id", run_id, "--scale", args.scale,
           "--local-stagebench", binary,
           "--repeat", str(args.repeat), "--note", note]
    for x in args.note:
        cmd += ["--note", x]
    for n, kind in sorted(faults.items()):
        cmd += ["--note", "fault injected by stagebench-sim: %s %s" % (n, kind)]
    for n, sec in sorted(skews.items()):
        cmd += ["--note", "clock skewed by stagebench-sim (libfaketime): %s %+g s" % (n, sec)]
    for n, path in sorted(args.node_binary.items()):
        cmd += ["--note", "another binary given by stagebench-sim: %s runs %s" % (n, path)]
    if args.sshfs:
        cmd += ["--note", "each node on its own sshfs mount of its server (its own client "
                          "cache), through a private sshd on 127.0.0.1"]
    if args.server_drop:
        drop = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             "cachedrop.py")]
        cmd += ["--server-drop", " ".join(shlex.quote(w) for w in drop + [
            os.path.join(top, s) for s in sorted(by_server)])]
    for opt in ("max_offset", "timeout", "lead", "xfer", "seed", "count", "chunk", "file_size",
                "passes"):
        v = getattr(args, opt)
        if v is not None:
            cmd += ["--" + opt.replace("_", "-"), v]
    for opt in RUN_FLAGS + ("clean", "no_report", "dry_run", "verbose", "require_sync"):
        if getattr(args, opt):
            cmd.append("--" + opt.replace("_", "-"))
    cmd += list(args.tests)
    common.say("%s; servers: %s" % (note, "; ".join("%s: %s" % (s, nodeset_fold(ns))
                                                    for s, ns in sorted(by_server.items()))))
    if args.verbose:
        common.say("launcher: " + " ".join(shlex.quote(c) for c in cmd))

    # The launcher runs in its own session: a Ctrl-C reaches it once, forwarded from here.
    proc = subprocess.Popen(cmd, start_new_session=True)
    procs.forward_signals(proc)
    while True:
        try:
            rc = proc.wait()
            break
        except KeyboardInterrupt:
            continue
    if rc < 0:  # killed: said, and passed on as a shell does (128 + the signal)
        common.say("error: the launcher was killed by %s: the run is unfinished"
                   % signal_name(-rc))
        return 128 - rc
    return rc


def signal_name(signum):
    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal %d" % signum
