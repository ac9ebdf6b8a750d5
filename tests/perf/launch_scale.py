#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a launch round costs the launch host as the node count grows: real ssh to simulated
nodes (sshnodes.py: node0001..nodeN, one private sshd on 127.0.0.1, strict host keys).

Not a test: it prints figures and exits 0 once it has measured (2 when it cannot run). CI does
not run it.

    /usr/bin/python3 tests/perf/launch_scale.py [--stagebench BINARY] [--nodes 25,50,100,200]
        [--fanout 64] [--fanouts 8,16,32,64,128] [--fanout-nodes 200] [--rounds 3]

For each node count it runs RUNS rounds of `clush -S -f FANOUT -o "-F CONFIG" -w NODES CMD`
(CMD: `BINARY --version`, or `true` without a binary) and measures each round with measure():
wall time, and, sampled from /proc every 20 ms while the round runs, the launcher's process
tree (clush and its ssh clients): peak resident memory (the sum of the processes' RSS, which
counts shared library pages once per process: an upper bound), peak open descriptors and peak
process count. Then the same at a fixed node count for several fan-outs. It fits each figure
as a + b*x by least squares (x = nodes; for memory and descriptors also x = min(nodes,
fan-out), the connections held at once; then x = fan-out) and prints what the fits predict for
1,000 and 10,000 nodes.

measure(cmd) is the reusable part: the launcher of the next rounds (armed nodes) is measured
by passing its own command line.
"""
import argparse
import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sshnodes  # noqa: E402  (it puts this tree's scripts/ on sys.path)
from stagebench import procs as P  # noqa: E402

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def tree_usage(root, pss=False):
    """(resident KiB summed, open descriptors summed, processes, the root's own resident KiB,
    proportional set size KiB summed or None, the root's own descriptors) of root and its
    descendants. PSS (smaps_rollup)
    counts a shared page once over the processes sharing it: what the tree really costs."""
    rss, fds, procs, own, pss_kib = 0, 0, 0, 0, 0 if pss else None
    own_fds = 0
    for pid in [root] + P.descendants(root):
        try:
            with open("/proc/%d/statm" % pid) as f:
                r = int(f.read().split()[1]) * PAGE_KIB
            rss += r
            own = r if pid == root else own
            n = len(os.listdir("/proc/%d/fd" % pid))
            fds += n
            own_fds = n if pid == root else own_fds
            procs += 1
            if pss:
                with open("/proc/%d/smaps_rollup" % pid) as f:
                    for line in f:
                        if line.startswith("Pss:"):
                            pss_kib += int(line.split()[1])
                            break
        except (OSError, IndexError, ValueError):
            continue
    return rss, fds, procs, own, pss_kib, own_fds


def measure(cmd, env=None, interval=0.02, timeout=5400):
    """Run cmd (a list: the launcher) to its end, sampling its process tree; a dict with
    rc, wall_s, peak_rss_kib, peak_fds, peak_procs, peak_own_kib (the root alone), peak_pss_kib
    (the tree's proportional set size, sampled every tenth time), cpu_s (user and system time
    of the tree, its reaped descendants included), samples, stdout, stderr (text)."""
    peak = {"rss": 0, "fds": 0, "procs": 0, "own": 0, "pss": 0, "own_fds": 0, "samples": 0}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    done = threading.Event()

    def sample():
        while not done.is_set():
            rss, fds, procs, own, pss, own_fds = tree_usage(p.pid,
                                                            pss=peak["samples"] % 10 == 0)
            peak["own_fds"] = max(peak["own_fds"], own_fds)
            peak["rss"] = max(peak["rss"], rss)
            peak["fds"] = max(peak["fds"], fds)
            peak["procs"] = max(peak["procs"], procs)
            peak["own"] = max(peak["own"], own)
            peak["pss"] = max(peak["pss"], pss or 0)
            peak["samples"] += 1
            done.wait(interval)

    th = threading.Thread(target=sample)
    th.start()
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    wall = time.monotonic() - t0
    done.set()
    th.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"rc": p.returncode, "wall_s": wall, "peak_rss_kib": peak["rss"],
            "peak_fds": peak["fds"], "peak_procs": peak["procs"], "samples": peak["samples"],
            "peak_own_kib": peak["own"], "peak_pss_kib": peak["pss"], "cpu_s": cpu,
            "peak_own_fds": peak["own_fds"],
            "stdout": out.decode("utf-8", "replace"), "stderr": err.decode("utf-8", "replace")}


def fit(xs, ys):
    """Least squares y = a + b*x; (a, b)."""
    n = float(len(xs))
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - b * mx, b


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2.0


def clush_round(nodes, count, fanout, command):
    names = "%s[%s-%s]" % (nodes.prefix, nodes.names[0][len(nodes.prefix):],
                           nodes.names[count - 1][len(nodes.prefix):])
    cmd = ["clush", "-S", "-f", str(fanout)] + nodes.clush_args() + ["-w", names, command]
    m = measure(cmd)
    err = [l for l in m["stderr"].splitlines() if l.strip()]
    # -S: clush exits with the largest exit status, 255 when an ssh failed; stderr may also
    # hold what the remote login shells print (noise, counted)
    if m["rc"] != 0:
        raise RuntimeError("clush exit %s at %d nodes, fan-out %d: %s"
                           % (m["rc"], count, fanout, " | ".join(err[:5])))
    m["noise"] = len(err)
    return m


def series(nodes, points, command, rounds, label):
    """points: [(nodes, fanout)]; prints one line per point; [(x-nodes, fanout, figures)]."""
    rows = []
    for count, fanout in points:
        ms = [clush_round(nodes, count, fanout, command) for _ in range(rounds)]
        fig = {"wall_s": median([m["wall_s"] for m in ms]),
               "wall_min": min(m["wall_s"] for m in ms),
               "wall_max": max(m["wall_s"] for m in ms),
               "rss_mib": max(m["peak_rss_kib"] for m in ms) / 1024.0,
               "fds": max(m["peak_fds"] for m in ms),
               "procs": max(m["peak_procs"] for m in ms),
               "noise": sum(m["noise"] for m in ms)}
        print("%s %5d nodes, fan-out %4d: round %6.2f s (median of %d, %.2f-%.2f), "
              "launcher peak %6.1f MiB RSS, %5d fds, %4d processes%s"
              % (label, count, fanout, fig["wall_s"], rounds, fig["wall_min"], fig["wall_max"],
                 fig["rss_mib"], fig["fds"], fig["procs"],
                 (" (%d stderr lines from remote shells)" % fig["noise"]) if fig["noise"]
                 else ""))
        sys.stdout.flush()
        rows.append((count, fanout, fig))
    return rows


def node_names(nodes, first, last):
    """nodes' names first..last (1-based) as one node set."""
    return "%s[%s-%s]" % (nodes.prefix, nodes.names[first - 1][len(nodes.prefix):],
                          nodes.names[last - 1][len(nodes.prefix):])


def tree_setup(nodes, count, gateways, work, run_id):
    """Tree mode for a run of count nodes through the first gateways of nodes: a
    topology.conf rooted at this host with one group a gateway (a contiguous share of the
    nodes each, as racks are), and a Python for the gateways that runs /usr/bin/python3 under
    GNU time, each process's CPU appended to a log. Returns (the launcher's extra arguments,
    its extra environment, the log)."""
    import socket
    topo = os.path.join(work, "topology-%s.conf" % run_id)
    gws = nodes.gateways[:gateways]
    per = -(-count // len(gws))
    lines = ["[routes]", "%s: %s" % (socket.gethostname().split(".")[0], ",".join(gws))]
    for i, g in enumerate(gws):
        if i * per < count:
            lines.append("%s: %s" % (g, node_names(nodes, i * per + 1,
                                                   min(count, (i + 1) * per))))
    with open(topo, "w") as f:
        f.write("\n".join(lines) + "\n")
    log = os.path.join(work, "gateways-%s.log" % run_id)
    py = os.path.join(work, "gwpython")
    with open(py, "w") as f:
        f.write('#!/bin/sh\nexec /usr/bin/time -a -o %s -f "%%U %%S $STAGEBENCH_NODE $1" '
                '/usr/bin/python3 "$@"\n' % shlex.quote(log))
    os.chmod(py, 0o755)
    return ["--topology", topo], {"CLUSTERSHELL_GW_PYTHON_EXECUTABLE": py}, log


def gateway_cpu(log):
    """(CPU seconds, processes) of the gateways' Python processes in a tree_setup log: each
    ClusterShell gateway and clock relay, with the ssh clients it started and reaped."""
    cpu, procs = 0.0, 0
    try:
        with open(log) as f:
            for line in f:
                w = line.split()
                try:
                    cpu += float(w[0]) + float(w[1])
                    procs += 1
                except (IndexError, ValueError):
                    continue  # time's own "Command exited with non-zero status" line
    except OSError:
        pass
    return cpu, procs


def launcher_run(nodes, count, fanout, binary, work, run_id, gateways=0):
    """The launcher itself, armed (clush over ssh; with gateways, through that many of
    ClusterShell's gateways: tree_setup), the `null` test on count nodes at fanout:
    measure()'s figures of its whole process tree (it and its ssh clients) for the whole run,
    plus from its manifest and report: the arm round's time, the info round's, the lead and
    the start spread of the part (the nodes' own clocks); with gateways, theirs."""
    names = node_names(nodes, 1, count)
    scripts = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts")
    results = os.path.join(work, "results")
    cmd = ["/usr/bin/python3", os.path.join(scripts, "stagebench-cluster"), "-w", names,
           "--launcher-option=-o", "--launcher-option=" + nodes.ssh_options(),
           "--stagebench", binary, "--local-stagebench", binary,
           "--dir", os.path.join(work, "stage"), "--results", results, "--run-id", run_id,
           "--scratch", os.path.join(work, "scratch"), "--gather", "shared", "--scale", "tiny",
           "--threads", "1", "--fanout", str(fanout), "--max-offset", "10", "null"]
    env = dict(os.environ)
    env["STAGEBENCH_CATALOGUE"] = os.path.join(os.path.dirname(binary), "catalogue.json")
    env.pop("STAGEBENCH_NODE", None)
    log = None
    if gateways:
        extra, more_env, log = tree_setup(nodes, count, gateways, work, run_id)
        cmd[-1:-1] = extra
        env.update(more_env)
    m = measure(cmd, env=env)
    rundir = os.path.join(results, run_id)
    try:
        with open(os.path.join(rundir, "manifest.json")) as f:
            man = json.load(f)
        with open(os.path.join(rundir, "report.json")) as f:
            rep = json.load(f)
    except (OSError, ValueError) as e:
        raise RuntimeError("launcher exit %s at %d nodes, no manifest or report (%s): %s"
                           % (m["rc"], count, e, m["stderr"][-800:]))
    runs = [r for r in man["rounds"] if r["kind"] == "run"]
    if not runs:
        raise RuntimeError("launcher exit %s at %d nodes, no part ran: %s" % (
            m["rc"], count, m["stderr"][-800:]))
    run = runs[0]
    part = rep["parts"][0] if rep.get("parts") else {}
    if m["rc"] != 0 or part.get("nodes_ok") != count:
        raise RuntimeError("launcher exit %s at %d nodes, %s ran: %s" % (
            m["rc"], count, part.get("nodes_ok"), m["stderr"][-800:]))
    rounds = man["launch"].get("rounds") or []
    kinds = {}
    for r in rounds:  # "003-arm-null-rep1" -> arm, "004-clock-null-rep1-relay" -> relay
        kinds.setdefault("relay" if r["round"].endswith("-relay") else
                         r["round"].split("-")[1], []).append(r["s"])
    conns = sum(r["nodes"] for r in rounds)
    if gateways:
        # the launch host connects to the gateways only: the relay rounds' nodes are
        # gateways, every other round's go through them
        m["gw_cpu_s"], m["gw_procs"] = gateway_cpu(log)
        m["node_connections"] = sum(r["nodes"] for r in rounds if not
                                    r["round"].endswith("-relay")) + \
            count * len(kinds.get("relay", []))
        conns = sum(r["nodes"] if r["round"].endswith("-relay") else
                    min(gateways, r["nodes"]) for r in rounds)
    m.update({"arm_s": run["arm_s"], "info_s": man["launch"]["info_s"], "lead_s": run["lead_s"],
              "spread_s": part.get("start_spread_s"), "rss_mib": m["peak_rss_kib"] / 1024.0,
              "own_mib": m["peak_own_kib"] / 1024.0, "pss_mib": m["peak_pss_kib"] / 1024.0,
              "fds": m["peak_fds"], "own_fds": m["peak_own_fds"], "procs": m["peak_procs"],
              "rounds": len(rounds),
              "connections": conns, "cpu_ms_conn": 1e3 * m["cpu_s"] / max(conns, 1),
              "status_s": median(kinds.get("status", [0.0])), "kinds": kinds,
              "cpu_ms_round": 1e3 * m["cpu_s"] / max(len(rounds), 1)})
    return m


def launcher_series(nodes, counts, fanout, binary, work):
    rows = []
    for count in counts:
        m = launcher_run(nodes, count, fanout, binary, work, "scale%d" % count)
        print("launcher %5d nodes, fan-out %3d: info round %6.2f s, arm round %6.2f s (lead "
              "%5.1f s), status round %6.2f s (median), %d rounds, whole run %6.1f s; launch "
              "host peak %6.1f MiB RSS summed (the launcher alone %6.1f MiB, the tree's PSS "
              "%6.1f MiB), %5d fds (the launcher's own %4d), %4d processes; CPU %6.1f s, %5.1f ms a connection (%d); "
              "start spread %s"
              % (count, fanout, m["info_s"], m["arm_s"], m["lead_s"], m["status_s"],
                 m["rounds"], m["wall_s"], m["rss_mib"], m["own_mib"], m["pss_mib"], m["fds"],
                 m["own_fds"], m["procs"], m["cpu_s"], m["cpu_ms_conn"], m["connections"],
                 "%.3f ms" % (m["spread_s"] * 1e3) if m["spread_s"] is not None else "-"))
        sys.stdout.flush()
        rows.append((count, fanout, dict((k, m[k]) for k in (
            "info_s", "arm_s", "status_s", "rss_mib", "own_mib", "pss_mib", "fds", "own_fds",
            "wall_s",
            "cpu_ms_conn", "rounds"))))
    return rows


def tree_series(nodes, counts, fanout, binary, work, gateways):
    """The launcher through gateways at each count: one line each, beside the direct runs of
    launcher_series in the same invocation."""
    rows = []
    for count in counts:
        # each gateway at its share of the fan-out: every gateway is this machine too, which
        # then holds as many connections at once as the direct runs (on a site each gateway
        # is a machine of its own)
        each = max(1, fanout // gateways)
        m = launcher_run(nodes, count, each, binary, work, "tree%d" % count, gateways)
        print("tree     %5d nodes, %d gateways, fan-out %3d each: info round %6.2f s, arm round "
              "%6.2f s (lead %5.1f s), status round %6.2f s, clock relay round %6.2f s "
              "(medians), %d rounds, whole run %6.1f s; launch host peak %6.1f MiB RSS summed "
              "(the launcher alone %6.1f MiB, the tree's PSS %6.1f MiB), %5d fds, CPU %6.1f s "
              "(%5.0f ms a round, %d connections, all to gateways); the gateways' CPU %6.1f s "
              "(%d processes, %5.1f ms a node's connection, %d); start spread %s"
              % (count, gateways, each, m["info_s"], m["arm_s"], m["lead_s"],
                 m["status_s"], median(m["kinds"].get("relay", [0.0])), m["rounds"],
                 m["wall_s"], m["rss_mib"], m["own_mib"], m["pss_mib"], m["fds"], m["cpu_s"],
                 m["cpu_ms_round"], m["connections"], m["gw_cpu_s"], m["gw_procs"],
                 1e3 * m["gw_cpu_s"] / max(m["node_connections"], 1), m["node_connections"],
                 "%.3f ms" % (m["spread_s"] * 1e3) if m["spread_s"] is not None else "-"))
        sys.stdout.flush()
        rows.append((count, fanout, dict(
            (k, m[k]) for k in ("info_s", "arm_s", "status_s", "own_mib", "pss_mib",
                                "cpu_ms_round", "rounds", "wall_s")),))
        rows[-1][2]["gw_ms_conn"] = 1e3 * m["gw_cpu_s"] / max(m["node_connections"], 1)
    return rows


def tree_model(rows, direct_rows, gateways, nodes=10000, site_gateways=16):
    """What the tree runs say of nodes through site_gateways gateways, against the direct
    runs' launch-host CPU: a round's CPU on the launch host (the fit over nodes of a round's
    CPU: it should not grow), and on each gateway (its share of the nodes at the CPU a node's
    connection cost a gateway here)."""
    a, b = fit([r[0] for r in rows], [r[2]["cpu_ms_round"] for r in rows])
    gw_ms = sum(r[2]["gw_ms_conn"] for r in rows) / len(rows)
    direct_ms = sum(r[2]["cpu_ms_conn"] for r in direct_rows) / len(direct_rows) \
        if direct_rows else None
    share = -(-nodes // site_gateways)
    print("tree model of %d nodes through %d gateways (%d nodes each): a round costs the "
          "launch host %.1f CPU-s (fit over nodes: %.1f + %.4f x nodes ms), each gateway "
          "%.0f CPU-s (%.1f ms a node's connection, measured through %d gateways)%s"
          % (nodes, site_gateways, share, (a + b * nodes) / 1e3, a, b,
             share * gw_ms / 1e3, gw_ms, gateways,
             "; directly, the launch host %.0f CPU-s a round (%.1f ms a connection)"
             % (nodes * direct_ms / 1e3, direct_ms) if direct_ms else ""))


def model(rows, fanout, nodes=10000):
    """What the fits say of a run at nodes (one part): the launcher's own memory from the fit
    over nodes, the tree's PSS from the one over connections in flight, a short round's time
    from the one over waves, and the launch host's CPU: a round's connections times the CPU a
    connection costs (their mean), over the round's time, in busy cores."""
    def fitted(key, xfun, x):
        a, b = fit([xfun(r[0], r[1]) for r in rows], [r[2][key] for r in rows])
        return a + b * x
    waves = -(-nodes // fanout)
    own = fitted("own_mib", lambda n, f: n, nodes)
    pss = fitted("pss_mib", lambda n, f: min(n, f), min(nodes, fanout))
    info = fitted("info_s", lambda n, f: -(-n // f), waves)
    status = fitted("status_s", lambda n, f: -(-n // f), waves)
    cpu_ms = sum(r[2]["cpu_ms_conn"] for r in rows) / len(rows)
    cpu_round = nodes * cpu_ms / 1e3
    print("model of %d nodes at fan-out %d (%d waves): the launcher %.0f MiB, the tree's PSS "
          "%.0f MiB in flight; an info round %.1f s, a status round %.1f s; a round's launch-host "
          "CPU %.0f s (%.1f ms a connection), %.1f busy cores over an info round"
          % (nodes, fanout, waves, own, pss, info, status, cpu_round, cpu_ms,
             cpu_round / max(info, 1e-9)))


def print_fits(rows, xfun, xname, predict, keys=("wall_s", "rss_mib", "fds")):
    """Fit each figure against xfun(nodes, fanout); predict: [(nodes, fanout)]."""
    xs = [xfun(r[0], r[1]) for r in rows]
    for key in keys:
        a, b = fit(xs, [r[2][key] for r in rows])
        pred = ", ".join("%.1f at %d nodes" % (a + b * xfun(n, f), n) for n, f in predict)
        print("  %-7s = %8.3f + %8.5f * %s%s" % (key, a, b, xname,
                                                ("   (predicts " + pred + ")") if pred else ""))


def main_srun(a):
    """The launcher through srun in a private two-node Slurm cluster on this host (the cluster
    tests' slurmhost.py): each round's time and the launch host's CPU, a few runs. srun's
    rounds are one srun process on the launch host whatever the node count (Slurm's own
    daemons fan the step out), so what a round costs here is what it costs the launch host at
    any size; how Slurm itself scales is Slurm's."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cluster"))
    import slurmhost
    binary = os.path.abspath(a.stagebench)
    work = tempfile.mkdtemp(prefix="stagebench-launch-srun-")
    try:
        with slurmhost.SlurmHost(cpus=(1, 1), base=work) as cl:
            if cl.error:
                print("cannot measure here: %s" % cl.error)
                return 2
            os.makedirs(os.path.join(work, "stage"))
            env = cl.env()
            env["STAGEBENCH_CATALOGUE"] = os.path.join(os.path.dirname(binary),
                                                       "catalogue.json")
            kinds = {}
            cpu, runs = [], max(1, a.rounds)
            for r in range(runs):
                rid = "srun%d" % r
                cmd = ["salloc", "-N2", "--exclusive", "/usr/bin/python3",
                       os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts",
                                    "stagebench-cluster"), "--launcher", "srun",
                       "--stagebench", binary, "--local-stagebench", binary, "--dir",
                       os.path.join(work, "stage"), "--results", os.path.join(work, "r"),
                       "--run-id", rid, "--scale", "tiny", "--max-offset", "10", "null"]
                m = measure(cmd, env=env)
                if m["rc"] != 0:
                    print("a run failed: %s" % m["stderr"][-800:])
                    return 2
                with open(os.path.join(work, "r", rid, "manifest.json")) as f:
                    man = json.load(f)
                for rnd in man["launch"].get("rounds") or []:
                    kinds.setdefault(rnd["round"].split("-")[1], []).append(rnd["s"])
                cpu.append(m["cpu_s"] / max(1, len(man["launch"].get("rounds") or [])))
            print("launcher through srun (salloc -N2, a private Slurm on this host, %d runs of "
                  "null): %s; the launch host's CPU %.0f ms a round (median)"
                  % (runs, ", ".join("%s round %.2f s" % (k, median(v))
                                     for k, v in sorted(kinds.items())),
                     1e3 * median(cpu)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stagebench", help="binary to run on each node (--version); else true")
    ap.add_argument("--nodes", default="25,50,100,200")
    ap.add_argument("--fanout", type=int, default=64)
    ap.add_argument("--fanouts", default="8,16,32,64,128")
    ap.add_argument("--fanout-nodes", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--launcher", action="store_true",
                    help="measure the launcher itself, armed, with the null test (needs "
                         "--stagebench, a built binary with its catalogue.json beside it)")
    ap.add_argument("--topology", type=int, default=0, metavar="GATEWAYS",
                    help="with --launcher: the same counts again through that many of "
                         "ClusterShell's gateways (tree mode, --topology), each run beside "
                         "the direct one, with the gateways' CPU")
    ap.add_argument("--tree-only", action="store_true",
                    help="with --topology: the runs through gateways alone")
    ap.add_argument("--replay", metavar="FILE",
                    help="with --launcher: fit again the direct runs whose lines an earlier "
                         "run of this script printed to FILE (no run); with --topology "
                         "--tree-only, the direct runs the model compares against")
    ap.add_argument("--srun", action="store_true",
                    help="the launcher through srun in a private two-node Slurm on this host "
                         "(needs --stagebench): each round's time and CPU")
    a = ap.parse_args()
    if a.srun:
        return main_srun(a)
    if a.launcher:
        return main_launcher(a)
    counts = [int(x) for x in a.nodes.split(",")]
    fanouts = [int(x) for x in a.fanouts.split(",") if x]
    command = "%s --version" % shlex.quote(os.path.abspath(a.stagebench)) \
        if a.stagebench else "true"
    with sshnodes.SshNodes(max(counts + [a.fanout_nodes])) as nodes:
        if nodes.error:
            print("cannot measure here: %s" % nodes.error)
            return 2
        print("launch rounds of `clush -S -f F -o \"-F CONFIG\" -w NODES %s` to one sshd on "
              "127.0.0.1:%d (%s), %d CPUs"
              % (command, nodes.port, ", ".join("%s %s" % kv for kv in sorted(
                  nodes.sshd_settings("MaxStartups", "MaxSessions").items())),
                 os.cpu_count()))
        one = [measure(["ssh", "-F", nodes.config, nodes.names[0], command])["wall_s"]
               for _ in range(5)]
        print("one ssh round trip (ssh -F CONFIG %s %s): median %.3f s of 5"
              % (nodes.names[0], command, median(one)))
        try:
            rows = series(nodes, [(c, a.fanout) for c in counts], command, a.rounds, "count")
            big = [(1000, a.fanout), (10000, a.fanout)]
            print("fit over node count (fan-out %d):" % a.fanout)
            print_fits(rows, lambda n, f: n, "nodes", big)
            # the launcher holds min(nodes, fan-out) connections at once: memory and
            # descriptors follow that, not the node count
            print("fit over connections in flight, min(nodes, fan-out %d):" % a.fanout)
            print_fits(rows, lambda n, f: min(n, f), "in_flight", big, ("rss_mib", "fds"))
            if fanouts:
                rows = series(nodes, [(a.fanout_nodes, f) for f in fanouts], command, a.rounds,
                              "fanout")
                print("fit over fan-out (%d nodes):" % a.fanout_nodes)
                print_fits(rows, lambda n, f: f, "fanout", ())
        except RuntimeError as e:
            print("a round failed: %s (sshd: %s)" % (e, nodes.sshd_log_tail(3)))
            return 2
    return 0


_ROW = re.compile(
    r"^launcher +(\d+) nodes, fan-out +(\d+): info round +([\d.]+) s, arm round +([\d.]+) s "
    r"\(lead +[\d.]+ s\), status round +([\d.]+) s \(median\), (\d+) rounds, whole run +"
    r"([\d.]+) s; launch host peak +([\d.]+) MiB RSS summed \(the launcher alone +([\d.]+) "
    r"MiB, the tree's PSS +([\d.]+) MiB\), +(\d+) fds \(the launcher's own +(\d+)\), +\d+ "
    r"processes; CPU +[\d.]+ s, +([\d.]+) ms a connection")


def replayed(path):
    """The rows of the direct runs that an earlier run of this script printed (its
    `launcher N nodes...` lines), to fit them again (--replay)."""
    keys = ("info_s", "arm_s", "status_s", "rounds", "wall_s", "rss_mib", "own_mib", "pss_mib",
            "fds", "own_fds", "cpu_ms_conn")
    rows = []
    with open(path) as f:
        for line in f:
            m = _ROW.match(line)
            if m:
                v = [float(x) for x in m.groups()]
                rows.append((int(v[0]), int(v[1]), dict(zip(keys, v[2:]))))
    return rows


def direct_fits(rows, fanout, big):
    """The fits of the direct runs and their model of 10,000 nodes."""
    print("fit over node count (fan-out %d):" % fanout)
    print_fits(rows, lambda n, f: n, "nodes", big, ("arm_s", "rss_mib", "fds"))
    print("fit over waves, ceil(nodes / fan-out %d):" % fanout)
    print_fits(rows, lambda n, f: -(-n // f), "waves", big, ("arm_s",))
    print("fit over connections in flight, min(nodes, fan-out %d):" % fanout)
    print_fits(rows, lambda n, f: min(n, f), "in_flight", big, ("pss_mib", "fds", "own_fds"))
    print("fit over node count, the launcher alone:")
    print_fits(rows, lambda n, f: n, "nodes", big, ("own_mib",))
    print("fit over waves, the info and status rounds:")
    print_fits(rows, lambda n, f: -(-n // f), "waves", big, ("info_s", "status_s"))
    model(rows, fanout)


def main_launcher(a):
    if a.replay and not a.topology:
        rows = replayed(a.replay)
        if not rows:
            print("--replay %s: no `launcher N nodes` line in it" % a.replay)
            return 2
        for count, fanout, _r in rows:
            print("replayed: launcher %d nodes, fan-out %d" % (count, fanout))
        direct_fits(rows, rows[0][1], [(1000, rows[0][1]), (10000, rows[0][1])])
        return 0
    if not a.stagebench:
        print("--launcher needs --stagebench BINARY")
        return 2
    binary = os.path.abspath(a.stagebench)
    counts = [int(x) for x in a.nodes.split(",")]
    work = tempfile.mkdtemp(prefix="stagebench-launch-scale-")
    try:
        os.makedirs(os.path.join(work, "stage"))
        with sshnodes.SshNodes(max(counts), node_env=True, gateways=a.topology) as nodes:
            if nodes.error:
                print("cannot measure here: %s" % nodes.error)
                return 2
            one = [measure(["ssh", "-F", nodes.config, nodes.names[0], "true"])["wall_s"]
                   for _ in range(5)]
            print("stagebench-cluster over ssh to one sshd on 127.0.0.1 (node names aliased "
                  "in a private ssh config), null test, --scale tiny --threads 1, %d CPUs; one "
                  "ssh round trip (ssh -F CONFIG %s true): median %.3f s of 5"
                  % (os.cpu_count(), nodes.names[0], median(one)))
            rows, tree_rows = [], []
            try:
                for count in counts:  # direct, then through gateways, at each count
                    if not (a.topology and a.tree_only):
                        rows += launcher_series(nodes, [count], a.fanout, binary, work)
                    if a.topology:
                        tree_rows += tree_series(nodes, [count], a.fanout, binary, work,
                                                 a.topology)
            except RuntimeError as e:
                print("a run failed: %s (sshd: %s)" % (e, nodes.sshd_log_tail(3)))
                return 2
            big = [(1000, a.fanout), (10000, a.fanout)]
            if rows:
                direct_fits(rows, a.fanout, big)
            if tree_rows:
                print("through %d gateways, fit over node count:" % a.topology)
                print_fits(tree_rows, lambda n, f: n, "nodes", big,
                           ("cpu_ms_round", "info_s", "status_s", "own_mib"))
                tree_model(tree_rows, rows or (replayed(a.replay) if a.replay else []),
                           a.topology)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
