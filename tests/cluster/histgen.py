# SPDX-License-Identifier: MIT
"""Synthetic nightly histories for the history tests and the history benchmark: runs of N nodes
on S servers, night after night, each node's time its own level times noise, with the planted
changes of a scenario (a node slowed from a night on, a whole server slowed, one bad night, a
slow drift). Each night is a histdb.Run, recorded as the collector would record it; report()
makes the report (model.Report) a collector would have built of one, for the report page."""
import hashlib
import random

from stagebench import histdb, model

T0 = 1.8e9
DAY = 86400.0
BUILD = hashlib.sha256(b"synthetic").hexdigest()  # the digest of the binary every node ran


def nodes_and_servers(nodes, servers):
    names = ["cn%05d" % i for i in range(1, nodes + 1)]
    srv = ["stage%d:/export" % (i * servers // nodes) for i in range(nodes)]
    return names, srv


def night(n, names, srv, parts, level, noise=0.03, seed=1, rid="night"):
    """The run of night n: level(part, node index, night) is the node's noiseless time."""
    rnd = random.Random("%s-%d" % (seed, n))
    run = histdb.Run(run_id="%s-%03d" % (rid, n), started=T0 + n * DAY, scale="tiny",
                     note=None, build=BUILD, build_id="synthetic", status="ok", exit_code=0,
                     validity="NOT VALID", start_verdict="held", nodes_expected=len(names),
                     nodes_failed=0, nodes_missing=0, verdicts=None, source="synthetic")
    res = run.results
    for part in parts:
        for i, node in enumerate(names):
            t = level(part, i, n) * (1.0 + rnd.gauss(0.0, noise))
            res.append((node, srv[i], part[0], part, 1, "ok", t, 8388608 / t, "B/s", 0.0,
                        0.001, 0.0))
    return run


def scenario(kind, node=5, server=1, start=20):
    """The level function of a scenario: 'healthy', 'node' (node slowed 30% from night start),
    'server' (every node of server index `server` of 4 slowed 30% from start), 'bad-night'
    (every node 2x on night start only), 'node-bad-night' (node 2x on night start only),
    'drift' (node slower by 1% a night from start)."""
    def level(part, i, n):
        base = 0.1 * (1.0 + 0.02 * (i % 7))
        if kind == "node" and i == node and n >= start:
            return base * 1.3
        if kind == "server" and (i * 4) // NODES_PER[0] == server and n >= start:
            return base * 1.3
        if kind == "bad-night" and n == start:
            return base * 2.0
        if kind == "node-bad-night" and i == node and n == start:
            return base * 2.0
        if kind == "drift" and i == node and n >= start:
            return base * (1.0 + 0.01 * (n - start))
        return base
    return level


NODES_PER = [40]


def history(h, kind, nights=60, nodes=40, servers=4, parts=("1a",), seed=1, **kw):
    """Record a scenario's nights 0..nights-1 into the open history h."""
    NODES_PER[0] = nodes
    names, srv = nodes_and_servers(nodes, servers)
    level = scenario(kind, **kw)
    for n in range(nights):
        histdb.record(h, night(n, names, srv, parts, level, seed=seed))
    return names, srv


def report(run, validity, start, notes=()):
    """The model.Report of a synthetic night run (histdb.Run): its parts with every node's
    NodeResult, validity (a model.Validity) and each part's start (a model.StartVerdict)."""
    parts = {}
    for node, server, test, part, rep, status, t, _rate, unit, res, off, _c in run.results:
        p = parts.get((part, rep))
        if p is None:
            p = parts[(part, rep)] = model.PartResult.make(
                test=test, part=part, repetition=rep, start_at=run.facts["started"],
                rate=model.Rate.make(unit=unit), start=start)
            p.node_results = []
        p.node_results.append(model.NodeResult.make(
            node=node, server=server, status=status, ok=status == "ok", node_time_s=t,
            residency=res, start_offset_s=off))
    nodes = sorted(set(r[0] for r in run.results))
    return model.Report.make(
        run_id=run.facts["run_id"], scale=run.facts["scale"], notes=list(notes),
        parts=list(parts.values()), status=run.facts["status"],
        exit_code=run.facts["exit_code"], validity=validity,
        nodes=model.NodeCounts.make(expected=len(nodes), failed=[], missing=[]),
        clock=model.ClockSummary.make(start_verdict=start.verdict,
                                      offsets=model.Offsets.make(nodes={})))
