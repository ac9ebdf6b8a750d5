# SPDX-License-Identifier: MIT
"""stagebench-cluster: run the stagebench tests on every node of a cluster at once.

  1. info round: `stagebench info --format json` on every node, timed (the launch time);
     the /stage server of each node is the mount source of its --dir (or --servers FILE).
     Then each node's clock offset against this host (clocksync.py: `stagebench clock` over
     the open connection, broadcast on srun's stdin; pdsh: from the info round), again after the last part;
     --max-offset warns, --require-sync refuses to start.
  2. for each repetition and test: a prepare round on one node per server (the preparer
     creates, or recreates, that server's replicas of 1a, 1b, 2; 3's is kept), then for each
     part a run round: `stagebench run PART --start-at T` on all nodes at once, T = now + a
     lead that covers the measured launch time (at least 3 s), with a timeout; before each
     part of test 3, --server-drop's command on this host.
  3. every node's JSON summary lands in RESULTS/<run-id>/<node>.<part>.rep<R>.json (written
     there directly, or printed back by each node over ssh), with manifest.json, the launcher's
     record of the nodes, servers, rounds and of every node that failed, hung or was
     unreachable; then the collector's report (report.txt, report.json).

Commands reach the nodes through an engine (engines.py): clush (default; ClusterShell.Task in
this process), pdsh or srun; with --exec they run on this machine once per node name (the exec
worker, or pdsh -R exec; %h = the node name), which is how stagebench-sim simulates a cluster.
This module holds the command line; the launcher itself is launcher.py.
"""
import argparse
import sys

from . import catalogue
from . import common
from . import procs
from .launcher import Launcher
from .launchplan import MIN_LEAD_S, RUN_FLAGS

EPILOG = """\
examples:
  stagebench-cluster -w 'node[001-128]' --dir /stage/bench --results /shared/sb 1a 2 4
  stagebench-cluster -g compute --dir /stage/bench --results ~/sb --repeat 3 all
  stagebench-cluster --hostfile nodes.txt --servers servers.txt --dir /stage/bench \\
      --results /shared/sb --gather shared --timeout 900 2
  salloc -N 64 --exclusive stagebench-cluster --launcher srun --dir /stage/bench \\
      --results $HOME/sb 1a 1b
  stagebench-cluster -w 'node[1-4]' --dir /stage/bench --results sb --dry-run all
  stagebench-cluster -w 'node[001-128]' --dir /stage/bench --results sb --require-sync \\
      --server-drop "clush -w 'stage[1-6]' 'sync; echo 1 > /proc/sys/vm/drop_caches'" 3

--servers FILE: lines 'NODESET SERVER' ('node[001-064] stage1'); '#' starts a comment.
Without it, nodes whose --dir is on the same network filesystem source share a server.

results: RESULTS/<run-id>/<node>.<part>.rep<R>.json, manifest.json, info.json, logs/,
report.txt, report.json.

exit status: 0 every node ok; 1 a node failed, hung, was unreachable or is missing;
2 bad usage; 3 no node could be used, or --require-sync found a clock out of tolerance;
130/143 interrupted (what arrived is kept).
"""


def resumer(args):
    """The launcher of --resume ID: the run's options from its manifest, none of this command
    line's but --results and --verbose."""
    from .resume import Resumer, load_unfinished
    if args.tests or args.run_id is not None:
        raise common.UsageError("--resume takes the run's tests and options from its manifest: "
                                "give only --results (and --verbose)")
    man, rundir = load_unfinished(args.results, args.resume)
    return Resumer(man, rundir, parse_args, args.verbose)


def build_parser():
    """The command line's parser (its completion is generated from it too)."""
    ap = argparse.ArgumentParser(
        prog="stagebench-cluster", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run stagebench on every node of a cluster at once and collect the "
                    "results.", epilog=EPILOG)
    _node_options(ap.add_argument_group("nodes"))
    _launch_options(ap.add_argument_group("launching"))
    _clock_options(ap.add_argument_group("clocks and caches"))
    _result_options(ap.add_argument_group("results"))
    _run_options(ap.add_argument_group("options passed to 'stagebench run' on the nodes"))
    ap.add_argument("tests", nargs="*", metavar="TEST",
                    help="1a 1b 2 3 4 all, or parts (2a)")
    ap.add_argument("--version", action=catalogue.VersionAction)
    return ap


def parse_args(argv):
    return build_parser().parse_args(argv)


def _node_options(g):
    """Which nodes, and their /stage servers."""
    g.add_argument("-w", dest="nodes", action="append", metavar="NODESET",
                   help="nodes as a node set: 'node[001-128],login2' (repeatable)")
    g.add_argument("-g", dest="group", action="append", metavar="GROUP",
                   help="a ClusterShell node group (from ClusterShell's group configuration)")
    g.add_argument("--hostfile", metavar="FILE", help="a file of nodes, one a line")
    g.add_argument("-x", dest="exclude", action="append", metavar="NODESET",
                   help="leave these nodes out")
    g.add_argument("--servers", metavar="FILE",
                   help="the /stage server of each node: lines 'NODESET SERVER'")


def _launch_options(g):
    """How commands reach the nodes, and their time limits."""
    g.add_argument("--launcher", choices=("clush", "pdsh", "srun"), default="clush",
                   help="how commands reach the nodes (default: clush)")
    g.add_argument("--exec", dest="exec_mode", action="store_true",
                   help="run every node's command on this machine (clush/pdsh -R exec), "
                        "%%h in --stagebench and --dir being the node name: a simulation")
    g.add_argument("--stagebench", default="stagebench", metavar="PATH",
                   help="the binary on the nodes (default: stagebench on their PATH)")
    g.add_argument("--dir", metavar="DIR",
                   help="the working directory on each node's /stage server (default: the "
                        "nodes' $STAGEBENCH_DIR)")
    g.add_argument("--fanout", type=int, metavar="N",
                   help="connections at once (default: 64; clush and pdsh over ssh arm "
                        "the nodes, so any fan-out works; srun and --exec hold every node "
                        "for a part: a value below the node count is refused)")
    g.add_argument("--topology", metavar="FILE",
                   help="clush: ClusterShell's tree mode, every round relayed by the "
                        "gateways of this topology.conf (clush --topology); needs --gather "
                        "shared; the clock offsets come from the info round")
    g.add_argument("--launcher-option", action="append", default=[], metavar="ARG",
                   help="an extra argument for clush, pdsh or srun (repeatable)")
    g.add_argument("--connect-timeout", metavar="SECONDS",
                   help="the time a node's connection may take in every round before it "
                        "counts as unreachable (ssh ConnectTimeout, pdsh -t; default: 10, or "
                        "clush.conf's connect_timeout)")
    g.add_argument("--lease", default="120", metavar="SECONDS",
                   help="an armed node goes on only while this launcher renews its lease (each "
                        "status round); a node whose lease lapses (the launcher is gone) stops "
                        "itself and ends orphaned. At least this, raised to cover the lead and "
                        "two status rounds (default: 120)")
    g.add_argument("--timeout", default="3600", metavar="SECONDS",
                   help="a part's time limit on a node after its start (default: 3600)")
    g.add_argument("--prepare-timeout", default="14400", metavar="SECONDS",
                   help="time limit of a prepare round (default: 14400)")
    g.add_argument("--info-timeout", default="120", metavar="SECONDS",
                   help="a node's time limit in the info and clock rounds (default: 120)")
    g.add_argument("--poll-timeout", default="60", metavar="SECONDS",
                   help="a node's time limit in the short rounds of an armed part: status, "
                        "stop, the copy back (default: 60)")
    g.add_argument("--interval", metavar="SECONDS",
                   help="arm each test's parts in one round (clush and pdsh over ssh), part "
                        "k starting at T + k x SECONDS (default: each part armed on its own, "
                        "once the one before ended)")
    g.add_argument("--lead", default=str(MIN_LEAD_S), metavar="SECONDS",
                   help="least time from launch to start (default and minimum: 3; raised to "
                        "cover twice the launch time measured)")


def _clock_options(g):
    """The nodes' clocks against this host; the servers' caches before test 3."""
    g.add_argument("--max-offset", default="0.1", metavar="SECONDS",
                   help="warn before the first part about nodes whose clock offset against "
                        "this host, plus its uncertainty, exceeds it (default: 0.1)")
    g.add_argument("--require-sync", action="store_true",
                   help="refuse to start (exit 3) when a node's clock is beyond --max-offset "
                        "or could not be measured")
    g.add_argument("--server-drop", metavar="CMD",
                   help="a command run on this host (its words, no shell) before each part of "
                        "test 3 to drop the /stage servers' caches; its outcome goes into the "
                        "manifest")


def _result_options(g):
    """Where the summaries go, what is printed and kept."""
    g.add_argument("--results", required=True, metavar="DIR",
                   help="results directory: the run goes to DIR/<run-id>/")
    g.add_argument("--run-id", metavar="ID", help="name of the run (default: UTC date-time)")
    g.add_argument("--resume", metavar="ID",
                   help="finish the run ID in --results whose launcher was lost: stop what "
                        "its nodes still run, gather what they wrote, record the parts never "
                        "run, write its report (its options come from its manifest)")
    g.add_argument("--gather", choices=("shared", "rcopy"),
                   help="shared: nodes write into --results (on a filesystem they share at the "
                        "same path); rcopy: they write to --scratch and each node prints its "
                        "own summary back to the launcher over ssh, as its other rounds go. "
                        "Default: rcopy over ssh, shared with --exec and srun")
    g.add_argument("--scratch", default="/tmp", metavar="DIR",
                   help="node-local directory for the run's state, pid files and summaries "
                        "(owned by the user or root, closed to others or sticky; default: "
                        "/tmp)")
    g.add_argument("--no-report", action="store_true", help="do not print the report")
    g.add_argument("--clean", action="store_true",
                   help="after the run, remove the replicas (stagebench clean on the "
                        "preparers)")
    g.add_argument("--note", action="append", default=[], metavar="TEXT",
                   help="a note for the manifest and the report (repeatable)")
    g.add_argument("--dry-run", action="store_true",
                   help="print every command it would run, with node sets and start instants")
    g.add_argument("--verbose", "-v", action="store_true", help="print each command run")
    g.add_argument("--local-stagebench", metavar="PATH",
                   help="a stagebench on this machine that checks the run options before "
                        "anything is launched (default: the one beside this script, else "
                        "on PATH; none: no check)")


def _run_options(g):
    """Passed on to `stagebench run` on every node, as given."""
    same = "as stagebench run's"
    g.add_argument("--scale", choices=("spec", "small", "tiny"), default="spec",
                   help=same + " (default: spec)")
    g.add_argument("--repeat", type=int, default=1, metavar="K",
                   help="run every test K times; replicas of 1a, 1b, 2 recreated in between")
    for opt, meta in (("threads", "N"), ("cpus", "LIST"), ("xfer", "SIZE"), ("seed", "N"),
                      ("count", "N"), ("chunk", "SIZE"), ("file-size", "SIZE"),
                      ("passes", "K")):
        g.add_argument("--" + opt, metavar=meta, help=same)
    for f in RUN_FLAGS:
        g.add_argument("--" + f.replace("_", "-"), action="store_true", help=same)


def main():
    args = parse_args(sys.argv[1:])
    try:
        lau = Launcher(args) if args.resume is None else resumer(args)
    except common.UsageError as e:
        common.say("error: %s" % e)
        return common.EXIT_USAGE
    try:
        return lau.main()
    except common.UsageError as e:
        common.say("error: %s" % e)
        return common.EXIT_USAGE
    finally:
        if lau.manifest is not None:
            try:
                procs.stop_descendants(grace=2.0)
            except Exception:
                pass
