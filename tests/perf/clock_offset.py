#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How well the launcher measures a node's clock offset: the uncertainty of `stagebench clock`
exchanges through `clush -R exec` (ClusterShell's exec worker, as stagebench-sim runs nodes) and
through ssh to a private sshd on 127.0.0.1 (the clush engine's ssh worker, as on a cluster:
sshnodes.py's node names, strict host keys),
beside the one-shot bound of an info round (the method of pdsh), and what the exchange that
every status round of an armed part carries costs that round (armed nodes over ssh, status
rounds with and without --clock, alternately).

Not a test: it prints figures and exits 0 once it has measured (2 when it cannot run). Every
"node" is this machine, so the true offset is 0: each measured offset should lie within its
stated uncertainty, and the line says how many did.

    /usr/bin/python3 tests/perf/clock_offset.py --stagebench build/stagebench
                                                [--rounds 10] [--nodes 4] [--samples 8]

It uses the package's own code (engines.ClushEngine, clocksync.Exchange), from scripts/ of this
source tree, on the interpreter that runs it (it needs ClusterShell).
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sshnodes  # noqa: E402
from stagebench import clocksync, engines  # noqa: E402


def one_round(engine, nodes, command, samples, logdir, tag):
    ex = clocksync.Exchange(samples)
    rnd = engine.start(nodes, command, 60, os.path.join(logdir, tag), talk=ex)
    if not rnd.wait(90):
        rnd.kill()
    rnd.results()
    return ex.results(nodes, clocksync.read_cost_s(), time.time())


def info_round(engine, nodes, binary, logdir, tag):
    t0 = time.time()
    rnd = engine.start(nodes, [binary, "info", "--format", "json", "--node", engines.NODE], 60,
                       os.path.join(logdir, tag))
    rnd.wait(90)
    res = rnd.results()
    t1 = time.time()
    from stagebench.rounds import parse_infos
    return clocksync.from_round(parse_infos(res), t0, t1, clocksync.read_cost_s())


def status_rounds(engine, nodes, binary, base, rounds, samples):
    """The per-part exchange's cost: every node armed for a start far ahead (`null`), then
    status rounds as the launcher runs them, without and with the clock exchange after the
    state line, alternately; returns ({"plain": [round s], "clock": [round s]}, offsets
    measured in the clock rounds)."""
    per = '"$1/st.${STAGEBENCH_NODE}"'
    stage = os.path.join(base, "stage")
    os.makedirs(stage, exist_ok=True)
    arm = ["sh", "-c", 'exec "$0" run null --scale tiny --threads 1 --dir "$2" --start-in 600 '
           '--lease 900 --run-id clockcost --detach ' + per, binary, base, stage]
    rnd = engine.start(nodes, arm, 60, os.path.join(base, "arm"))
    rnd.wait(90)
    bad = [n for n, o in rnd.results().items() if o.rc != 0]
    if bad:
        raise RuntimeError("could not arm %s: %s" % (bad, rnd.results()[bad[0]].err[-1:]))
    times = {"plain": [], "clock": []}
    got = []
    try:
        for r in range(rounds):
            for kind in ("plain", "clock"):
                cmd = ["sh", "-c", 'exec "$0" status ' + per + ' --format json --renew' +
                       (" --clock" if kind == "clock" else ""), binary, base]
                ex = clocksync.Exchange(samples, before=("stagebench.state/1",)) \
                    if kind == "clock" else None
                t0 = time.monotonic()
                rnd = engine.start(nodes, cmd, 60, os.path.join(base, "%s%d" % (kind, r)),
                                   talk=ex)
                rnd.wait(90)
                rnd.results()
                times[kind].append(time.monotonic() - t0)
                if ex is not None:
                    m, _why = ex.results(nodes, clocksync.read_cost_s(), time.time())
                    got += m.values()
    finally:
        stop = ["sh", "-c", 'exec "$0" stop ' + per + ' --signal TERM --wait 10', binary, base]
        rnd = engine.start(nodes, stop, 60, os.path.join(base, "stop"))
        rnd.wait(90)
        rnd.results()
    return times, got


def line(name, entries, rounds):
    unc = [e["uncertainty_s"] for e in entries]
    rtt = [e["rtt_s"] for e in entries]
    within = sum(1 for e in entries if abs(e["offset_s"]) <= e["uncertainty_s"])
    s = clocksync.seconds
    print("%-34s %3d offsets in %2d rounds: uncertainty min %s median %s max %s; round trip "
          "min %s median %s; |offset| max %s; %d of %d within their uncertainty"
          % (name, len(entries), rounds, s(min(unc)), s(statistics.median(unc)), s(max(unc)),
             s(min(rtt)), s(statistics.median(rtt)),
             s(max(abs(e["offset_s"]) for e in entries)), within, len(entries)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stagebench", required=True)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--samples", type=int, default=clocksync.SAMPLES)
    args = ap.parse_args()
    binary = os.path.abspath(args.stagebench)
    base = tempfile.mkdtemp(prefix="stagebench-clock-offset-")
    try:
        print("clock offset measurement, %d exchanges a node (least round trip kept), this "
              "machine as every node (true offset 0); launcher clock read %s"
              % (args.samples, clocksync.seconds(clocksync.read_cost_s())))
        nodes = ["node%d" % i for i in range(1, args.nodes + 1)]
        ex_engine = engines.make("clush", True, [], None)
        got = []
        for r in range(args.rounds):
            m, why = one_round(ex_engine, nodes, [binary, "clock", "--node", engines.NODE],
                               args.samples, base, "exec%d" % r)
            if why:
                print("exec round %d: not measured: %s" % (r, why))
            got += m.values()
        line("clush -R exec, %d nodes:" % args.nodes, got, args.rounds)
        got = []
        for r in range(args.rounds):
            got += info_round(ex_engine, nodes, binary, base, "info%d" % r).values()
        line("one-shot info round (exec):", got, args.rounds)
        with sshnodes.SshNodes(args.nodes, base=base) as ssh:
            if ssh.error:
                print("ssh: cannot measure: %s" % ssh.error)
                return 2
            ssh_engine = engines.make("clush", False, ssh.clush_args(), None)
            got = []
            for r in range(args.rounds):
                m, why = one_round(ssh_engine, ssh.names, [binary, "clock", "--node", "n"],
                                   args.samples, base, "ssh%d" % r)
                if why:
                    print("ssh round %d: not measured: %s" % (r, why))
                got += m.values()
            if got:
                line("clush over ssh, %d nodes (loopback):" % args.nodes, got, args.rounds)
        with sshnodes.SshNodes(args.nodes, base=base, node_env=True) as ssh:
            if ssh.error:
                print("ssh: cannot measure: %s" % ssh.error)
                return 2
            ssh_engine = engines.make("clush", False, ssh.clush_args(), None)
            times, got = status_rounds(ssh_engine, ssh.names, binary, base, args.rounds,
                                       args.samples)
            if got:
                line("status rounds over ssh, %d armed nodes:" % args.nodes, got, args.rounds)
            plain, clock = statistics.median(times["plain"]), statistics.median(times["clock"])
            print("status round over ssh, %d armed nodes in one wave, median of %d: %.3f s "
                  "without the exchange, %.3f s with it: %+.1f ms a status round"
                  % (args.nodes, args.rounds, plain, clock, 1e3 * (clock - plain)))
        return 0
    finally:
        shutil.rmtree(base, True)


if __name__ == "__main__":
    sys.exit(main())
