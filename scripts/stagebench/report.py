# SPDX-License-Identifier: MIT
"""The collector's core: the cluster report (a model.Report) built once from a collection
(collection.py) and the manifest, with its verdicts (verdict.py); baselines saved, read and
compared. Every output reads the report: model.to_json and model.to_csv, reporttext.to_text,
plot.py, prometheus.py."""
import heapq
import statistics
import time

from . import catalogue
from . import clockmodel
from . import common
from . import verdict
from .model import (MEASURED_OFFSETS, BaselineRef, ClockSummary, FileIssue, Failure,
                    FirstPass, FoldedWarning, Latency, NodeCounts, NodeError, NodeResult,
                    Offsets, PartResult, Rate, Regression, Report, ServerEntry, ServerPart,
                    SlowNode, SlowThread, Stats, TestResult)
from .nodes import nodeset_fold
from .summaries import Bad, OK_STATUSES, START_SYNC_LIMIT_S, check_baseline, load_json


def _median(xs):
    return statistics.median(xs) if xs else None


# ---------------------------------------------------------------------------------------------
# The order of tests and parts: the catalogue's


def _test_order(test):
    try:
        return list(catalogue.load().tests).index(test)
    except ValueError:
        return 99


def _part_order(part):
    cat = catalogue.load()
    t = cat.part_test.get(part)
    if t:
        return cat.tests[t]["parts"].index(part)
    return 99


def group_sort_key(k):
    test, rep, part = k
    return (rep, _test_order(test), str(test), _part_order(part), str(part))


def _part_order_key(part):
    return (_test_order(catalogue.load().part_test.get(part, part)), _part_order(part), part)


# ---------------------------------------------------------------------------------------------
# The report


class _Run:
    """What every part's report needs of the run: the collection, the nodes (all, expected),
    each node's server, how many slowest to list, the clock offsets."""

    def __init__(self, c, expect, top):
        self.c = c
        self.m = c.manifest or {}
        self.expected, self.expected_from = _expected(c, self.m, expect)
        self.expected_set = set(self.expected)
        self.seen = set(c.nodes)
        self.allnodes = common.natural_sorted(self.expected_set | self.seen)
        self.servers = _servers(c, self.m, self.allnodes)
        self.top = top
        self.clocks = verdict.clocks(c.manifest, list(c.nodes), c.groups)


@common.without_cycle_gc
def build(c, expect=None, top=5, baseline=None, tolerance=0.15, require_ntp=False,
          source=None):
    """The report of collection c: expect, the nodes expected (default: the manifest's, else
    those seen); top, the slowest nodes and threads listed per part; baseline (a Baseline) and
    its tolerance; require_ntp: an unsynchronized clock fails the run; source, what was
    collected."""
    run = _Run(c, expect, top)
    m = run.m
    parts, tests, failed_nodes, missing_nodes = _parts_out(run)
    # Whole-node failures without any part (summary of a node that ran nothing).
    for (test, _rep, _part), errs in c.test_errors.items():
        if test is None:
            failed_nodes.update(errs)
    unsynced = common.natural_sorted([n for n, f in c.nodes.items() if not f.ntp])
    regressions = compare_baseline(parts, baseline, tolerance) if baseline is not None else []
    verdicts = [p.start.verdict for p in parts if p.start.why != verdict.NO_RELEASE]
    start_verdict = None if not verdicts else "NOT held" if "NOT held" in verdicts \
        else "cannot tell" if "cannot tell" in verdicts else "held"
    mrun = m.get("run") if isinstance(m.get("run"), dict) else {}
    report = Report(
        schema=common.REPORT_SCHEMA, version=catalogue.load().version, source=source,
        run_id=m.get("run_id"), launcher=m.get("launcher"),
        scale=mrun.get("scale") or next((f.scale for f in c.nodes.values() if f.scale), None),
        notes=[x for x in (m.get("notes") or []) if isinstance(x, str)],
        launcher_warnings=[common.safe_text(x) for x in (m.get("warnings") or [])
                           if isinstance(x, str)][:50],
        interrupted=m.get("interrupted"), files=c.files,
        nodes=NodeCounts(
            expected=len(run.expected_set), expected_from=run.expected_from,
            expected_set=nodeset_fold(run.expected) if run.expected else "",
            seen=len(run.seen), failed=common.natural_sorted(failed_nodes),
            missing=common.natural_sorted(missing_nodes - failed_nodes),
            unexpected=common.natural_sorted(run.seen - run.expected_set)),
        servers=_server_list(m, run.allnodes, run.servers),
        clock=_clock_out(run, parts, unsynced, start_verdict),
        warnings=_fold_warnings(c.warnings),
        launcher_build=m.get("launcher_build") if isinstance(m.get("launcher_build"), str)
        else None,
        expected_binary=m.get("expected_binary") if isinstance(m.get("expected_binary"), dict)
        else None,
        server_drop=verdict.server_drop(m, parts), parts=parts,
        tests=sorted(tests.values(), key=lambda t: (t.repetition, _test_order(t.test))),
        node_errors=[NodeError(node=n, error=e) for n, e in
                     sorted(c.test_errors.get((None, None, None), {}).items())],
        invalid=[FileIssue(**f) for f in c.invalid], ignored=[FileIssue(**f) for f in c.ignored],
        baseline=None if baseline is None else BaselineRef(
            file=baseline.path, tolerance=tolerance, created_at=baseline.created_at,
            run_id=baseline.run_id),
        regressions=regressions, validity=None, status=None, exit_code=None)
    report.end_time = _end_time(c)
    report.node_servers = run.servers
    report.node_builds = {n: f.build_id for n, f in c.nodes.items()}
    report.node_binaries = {n: f.exe_sha256 for n, f in c.nodes.items()}
    report.validity = verdict.validity(report, c)
    problems = bool(failed_nodes or missing_nodes or c.invalid or regressions or
                    any(p.start_synchronized is False for p in parts) or
                    (require_ntp and unsynced) or (not c.groups and not c.test_errors))
    report.status = "failed" if problems else "ok"
    report.exit_code = common.EXIT_FAILED if problems else common.EXIT_OK
    return report


def _end_time(c):
    """When the run ended: the launcher's finish, else the last node's end, else None."""
    man = c.manifest if isinstance(c.manifest, dict) else {}
    end = man.get("finished_at")
    if isinstance(end, (int, float)) and not isinstance(end, bool) and end == end and \
            abs(end) != float("inf"):
        return float(end)
    ends = [e.start_at + e.node_time_s for g in c.groups.values() for e in g.entries.values()
            if e.start_at is not None and e.node_time_s is not None]
    return max(ends) if ends else None


def _expected(c, m, expect):
    """The nodes expected, and from where: --expect, the launcher's manifest, the summaries."""
    if expect is not None:
        return list(expect), "--expect"
    if isinstance(m.get("nodes"), list) and m.get("nodes"):
        return [n for n in m["nodes"] if isinstance(n, str)], "the launcher's manifest"
    return list(c.nodes), verdict.EXPECTED_FROM_SUMMARIES


def _servers(c, m, allnodes):
    """Each node's server: from the manifest, else from its summary's filesystem, else "?"."""
    servers = {}
    mservers = m.get("servers") if isinstance(m.get("servers"), dict) else {}
    for n in allnodes:
        if isinstance(mservers.get(n), str):
            servers[n] = mservers[n]
        elif n in c.nodes:
            servers[n] = common.server_of(n, c.nodes[n].fs)
        else:
            servers[n] = "?"
    return servers


def _server_list(m, allnodes, servers):
    """The report's "servers": each server's nodes, folded, and its preparer."""
    preparers = m.get("preparers") if isinstance(m.get("preparers"), dict) else {}
    by_server = {}
    for n in allnodes:
        by_server.setdefault(servers[n], []).append(n)
    return [ServerEntry(server=s, nodes=nodeset_fold(by_server[s]), count=len(by_server[s]),
                        preparer=preparers.get(s))
            for s in common.natural_sorted(by_server)]


def _test_add(tests, pr):
    """A part's report counted in its test and repetition: time summed, complete or not."""
    t = tests.get((pr.test, pr.repetition))
    if t is None:
        t = tests[(pr.test, pr.repetition)] = TestResult(
            test=pr.test, repetition=pr.repetition, parts=[], result_s=0.0, complete=True)
    t.parts.append(pr.part)
    if pr.cluster_time_s is None:
        t.result_s = None
    elif t.result_s is not None:
        t.result_s += pr.cluster_time_s
    if pr.nodes_failed or pr.nodes_missing:
        t.complete = False


def _clock_out(run, parts, unsynced, start_verdict):
    """The report's "clock": NTP state of the nodes, the start verdict, the offsets."""
    return ClockSummary(
        unsynchronized_nodes=unsynced,
        unknown_nodes=sorted([n for n, f in run.c.nodes.items() if not f.ntp_known],
                             key=common.natural_key),
        start_spread_max_s=max((p.start.spread_s for p in parts
                                if p.start.spread_s is not None), default=None),
        start_synchronized={"held": True, "NOT held": False}.get(start_verdict),
        start_verdict=start_verdict, limit_s=START_SYNC_LIMIT_S,
        offsets=_offsets_out(run, parts))


def _offsets_out(run, parts):
    """The clock offsets the verdicts used, per node, and where they came from; the steps
    between measurements with the parts they hit; how to get a verdict where offsets are
    missing."""
    m, cl = run.m, run.clocks
    clock = m.get("clock") if isinstance(m.get("clock"), dict) else None
    offsets = verdict.node_offsets(cl, m)
    return Offsets(source=MEASURED_OFFSETS if cl.measured else None,
                   method=clock.get("method") if clock else None,
                   samples=clock.get("samples") if clock else None,
                   measurements=cl.count,
                   nodes={n: offsets[n] for n in common.natural_sorted(offsets)},
                   unknown={n: cl.unknown[n] for n in sorted(cl.unknown,
                                                             key=common.natural_key)},
                   steps=verdict.clock_steps(cl, parts),
                   how_to=clockmodel.HOW_TO if cl.unknown and len(run.seen) > 1 else None)


def _parts_out(run):
    """Every part's report with its start verdict, in the report's order; each counted in its
    test; the nodes that failed or are missing in any part."""
    parts, tests = [], {}
    failed_nodes, missing_nodes = set(), set()
    for k in sorted(run.c.groups, key=group_sort_key):
        pr = _part_report(run, run.c.groups[k])
        parts.append(pr)
        failed_nodes.update(f.node for f in pr.failed)
        missing_nodes.update(pr.missing)
        _test_add(tests, pr)
    return parts, tests, failed_nodes, missing_nodes


def _fold_warnings(ws):
    """The nodes' warnings, one entry per (part, repetition, text) with the nodes that wrote
    it: ten thousand nodes whose clock is not synchronized make one line, not ten thousand."""
    by = {}
    for x in ws:
        k = (x["repetition"] or 0, _test_order(x["test"]) if x["test"] else -1,
             str(x["test"]), _part_order(x["part"]) if x["part"] else -1, str(x["part"]),
             x["warning"])
        e = by.get(k)
        if e is None:
            e = by[k] = FoldedWarning(test=x["test"], repetition=x["repetition"],
                                      part=x["part"], warning=x["warning"], nodes=[])
        e.nodes.append(x["node"])
    out = [by[k] for k in sorted(by)]
    for e in out:
        e.nodes.sort(key=common.natural_key)
    return out


# ---------------------------------------------------------------------------------------------
# One part


def _part_report(run, g):
    """One part and repetition across the nodes: who ran it, failed or is missing, the node
    and cluster times, bytes and rate, latency, the start spread and verdict, the slowest nodes
    and threads, the results per server, each node's result."""
    ok, failed, missing = _part_nodes(g, run)
    times = sorted(g.entries[n].node_time_s for n in ok)
    cluster = times[-1] if times else None
    res = verdict.residency(g.entries, ok)
    # A node that read from its own cache is left out of the blame: its time does not make
    # the median that the others are judged against, and it is not listed as slow.
    warm = set(res.warm_nodes)
    judged = [n for n in ok if n not in warm]
    med = _median(sorted(g.entries[n].node_time_s for n in judged))
    nbytes = sum(g.entries[n].bytes for n in ok)
    rels = [(g.entries[n].rel_min, g.entries[n].rel_max) for n in ok
            if g.entries[n].rel_min is not None]
    spread = (max(b for _a, b in rels) - min(a for a, _b in rels)) if rels else None
    first_rel = min((a for a, _b in rels), default=None)
    tmed = g.thread_median()
    rate = _rate(g, ok, nbytes, cluster)
    latency = g.hist.to_json()
    start = verdict.start_verdict(
        g.entries, {n: run.clocks.at(n, g.start_at) for n in ok if n in run.clocks.clocks},
        run.clocks.unknown, g.start_at)
    pr = PartResult(
        test=g.test, repetition=g.rep, part=g.part, start_at=g.start_at,
        nodes_expected=len(run.expected_set), nodes_ok=len(ok), nodes_failed=len(failed),
        nodes_missing=len(missing), threads=sum(g.entries[n].threads for n in ok),
        node_time_s=Stats(min=times[0] if times else None, median=med, max=cluster),
        cluster_time_s=cluster, bytes=nbytes,
        bandwidth_Bps=rate.value if rate.unit == "B/s" else None, rate=rate, residency=res,
        first_pass=_first_pass(g, ok), latency_s=Latency(**latency) if latency else None,
        latency_not_merged=g.hist.skipped, thread_time_median_s=tmed, start_spread_s=spread,
        start_synchronized={"held": True, "NOT held": False}.get(start.verdict),
        late=common.natural_sorted([n for n in ok if g.entries[n].late]),
        slowest=_slowest_nodes(g, judged, med, first_rel, run.servers, run.top),
        slowest_threads=_slowest_threads(g, tmed, run.top),
        servers=_part_servers(g, ok, run.servers), failed=failed, missing=missing, start=start)
    pr.node_results = _node_results(g, run, ok, failed, missing)
    return pr


def _part_nodes(g, run):
    """Every node of the run in the part: ok (its names), failed (Failure: from its summary, a
    test error of its summary, the launcher, or its summary that ran nothing) or missing
    (expected, nothing known)."""
    c = run.c
    ok, failed, missing = [], [], []
    terrs = dict(c.test_errors.get((g.test, g.rep, None), {}))
    terrs.update(c.test_errors.get((g.test, g.rep, g.part), {}))
    whole = c.test_errors.get((None, None, None), {})
    for n in run.allnodes:
        e = g.entries.get(n)
        lr = g.launcher.get(n) or {}
        cause = {"cause": lr.get("cause"), "offset_s": lr.get("offset_s")} \
            if isinstance(lr.get("cause"), str) else {"cause": None, "offset_s": None}
        if e is not None:
            if e.ok:
                ok.append(n)
            else:
                failed.append(Failure(node=n, status=e.status, error=e.error, file=e.file,
                                      **cause))
            continue
        if n in terrs:
            failed.append(Failure(node=n, status="failed", error=terrs[n], file=None, **cause))
        elif lr:
            failed.append(Failure(node=n, status=lr.get("status") or "failed",
                                  error=lr.get("error") or "no summary", file=None, **cause))
        elif n in whole:
            failed.append(Failure(node=n, status="failed", error=whole[n], file=None, **cause))
        elif n in run.expected_set:
            missing.append(n)
    return ok, failed, missing


def _node_results(g, run, ok, failed, missing):
    """Each node of the part that ran it, failed it or is missing, in the run's node order."""
    status = {f.node: f.status for f in failed}
    status.update((n, g.entries[n].status) for n in ok)
    status.update((n, "missing") for n in missing)
    out = []
    for n in run.allnodes:
        if n not in status:
            continue
        e = g.entries.get(n)
        out.append(NodeResult(
            node=n, server=run.servers.get(n, "?"), status=status[n],
            ok=status[n] in OK_STATUSES,
            node_time_s=e.node_time_s if e else None, bytes=e.bytes if e else None,
            pages=e.pages if e else None, ops=e.ops if e else None,
            residency=e.residency if e else None,
            start_offset_s=e.rel_min - e.start_at
            if e and e.rel_min is not None and e.start_at is not None else None))
    return out


def _slowest_nodes(g, judged, med, first_rel, servers, top):
    """The top slowest of the judged nodes, with their deviation from the median node time
    and their release after the first node's."""
    slowest = []
    entries = g.entries
    if len(judged) > top:  # those as slow as the top-th slowest, or slower: ties by name
        kth = heapq.nlargest(top, [entries[n].node_time_s for n in judged])[-1]
        judged = [n for n in judged if entries[n].node_time_s >= kth]
    for n in sorted(judged, key=lambda n: (-entries[n].node_time_s,
                                           common.natural_key(n)))[:top]:
        e = entries[n]
        slowest.append(SlowNode(
            node=n, node_time_s=e.node_time_s, server=servers.get(n),
            deviation=(e.node_time_s / med - 1.0) if med else None,
            release_offset_s=(e.rel_min - first_rel)
            if e.rel_min is not None and first_rel is not None else None))
    return slowest


def _slowest_threads(g, tmed, top):
    """The top slowest threads of all nodes, with their deviation from the median thread."""
    return [SlowThread(node=n, thread=index, cpu=cpu, time_s=t,
                       deviation=(t / tmed - 1.0) if tmed else None)
            for t, n, index, cpu in sorted(g.top, reverse=True)[:top]]


def _part_servers(g, ok, servers):
    """The part per /stage server: its nodes that ran it, their times, bytes and rate."""
    per_server = {}
    for n in ok:
        per_server.setdefault(servers.get(n, "?"), []).append(n)
    srv = []
    for s in common.natural_sorted(per_server):
        ns = per_server[s]
        st = sorted(g.entries[n].node_time_s for n in ns)
        sb = sum(g.entries[n].bytes for n in ns)
        srate = _rate(g, ns, sb, st[-1])
        srv.append(ServerPart(server=s, nodes_ok=len(ns), time_s=st[-1], median_s=_median(st),
                              bytes=sb,
                              bandwidth_Bps=srate.value if srate.unit == "B/s" else None,
                              rate=srate))
    return srv


def _unit(g, ok):
    """(rate unit, what it counts) of a part: as its nodes' summaries say (node/2), else as
    the catalogue says."""
    for n in ok:
        e = g.entries[n]
        if e.rate_unit and e.counted:
            return e.rate_unit, e.counted
    p = catalogue.load().parts[g.part]
    return p["rate_unit"], p["counted"]


def _rate(g, ok, nbytes, cluster):
    """The part's aggregate rate over the cluster time, with its unit and what was counted:
    bytes per second; pages per second where one byte a page is touched (its bytes mapped
    named so, never a bandwidth); operations per second where nothing is moved."""
    unit, counted = _unit(g, ok)
    per_s = (lambda x: x / cluster if cluster and x is not None else None)
    if unit == "pages/s":
        pages = [g.entries[n].pages for n in ok]
        mapped = [g.entries[n].mapped_bytes for n in ok]
        npages = sum(pages) if pages and None not in pages else None
        nmapped = sum(mapped) if mapped and None not in mapped else nbytes
        return Rate(value=per_s(npages), unit=unit, counted=counted, pages=npages,
                    mapped_bytes=nmapped, mapped_Bps=per_s(nmapped))
    value = per_s(sum(g.entries[n].ops for n in ok)) if unit == "ops/s" else per_s(nbytes)
    return Rate(value=value, unit=unit, counted=counted, pages=None, mapped_bytes=None,
                mapped_Bps=None)


def _first_pass(g, ok):
    """A part read in passes: each node's first pass (from the server) apart from its other
    passes (from its own cache): the cluster's slowest first pass and the median of the
    nodes' other passes."""
    fp = [g.entries[n].first_pass_s for n in ok if g.entries[n].first_pass_s]
    rest = [g.entries[n].rest_pass_median_s for n in ok if g.entries[n].rest_pass_median_s]
    if not fp:
        return None
    return FirstPass(first_pass_max_s=max(x["max"] for x in fp),
                     first_pass_median_s=_median([x["median"] for x in fp]),
                     rest_pass_median_s=_median([x["median"] for x in rest]) if rest else None,
                     nodes=len(fp))


# ---------------------------------------------------------------------------------------------
# Baselines


class Baseline:
    """A baseline read from a file (stagebench.baseline/1): its path, its parts ({part:
    {"cluster_time_s", "nodes": {node: time}}}), when and from which run it was saved."""

    __slots__ = ("path", "parts", "created_at", "run_id")

    def __init__(self, path, doc):
        self.path = path
        self.parts = doc["parts"]
        self.created_at = doc.get("created_at")
        self.run_id = doc.get("run_id")


def make_baseline(report, source=None):
    """The baseline of a report: per part the median of its repetitions' cluster times and of
    each node's times."""
    parts = {}
    for p in report.parts:
        d = parts.setdefault(p.part, {"cluster": [], "nodes": {}})
        # a time of 0 cannot be a baseline (nothing is slower by a fraction of it)
        if p.cluster_time_s is not None and p.cluster_time_s > 0:
            d["cluster"].append(p.cluster_time_s)
        for n, t in p.node_times().items():
            if t > 0:
                d["nodes"].setdefault(n, []).append(t)
    out = {}
    for part, d in parts.items():
        out[part] = {"cluster_time_s": _median(d["cluster"]),
                     "nodes": {n: _median(ts) for n, ts in sorted(
                         d["nodes"].items(), key=lambda kv: common.natural_key(kv[0]))}}
    return {"schema": common.BASELINE_SCHEMA, "version": catalogue.load().version,
            "created_at": time.time(),
            "run_id": report.run_id, "source": source, "parts": out}


def load_baseline(path):
    """The Baseline in the file at path; UsageError saying why it cannot be used."""
    try:
        b = load_json(path)
    except OSError as e:
        raise common.UsageError("baseline '%s': %s" % (path, e.strerror or e))
    except Bad as e:
        raise common.UsageError("baseline '%s' is not valid: %s" % (path, e))
    if not isinstance(b, dict) or b.get("schema") != common.BASELINE_SCHEMA or \
            not isinstance(b.get("parts"), dict):
        raise common.UsageError("baseline '%s' is not a stagebench baseline (schema %s)"
                                % (path, common.BASELINE_SCHEMA))
    try:
        check_baseline(b)
    except Bad as e:
        raise common.UsageError("baseline '%s' is not valid: %s" % (path, e))
    return Baseline(path, b)


def compare_baseline(parts, baseline, tolerance):
    """Every node and part (and the cluster time of a part) slower than the baseline by more
    than the tolerance. Repetitions are summarized by their median, as in the baseline."""
    now = {}
    for p in parts:
        d = now.setdefault(p.part, {"cluster": [], "nodes": {}})
        if p.cluster_time_s is not None:
            d["cluster"].append(p.cluster_time_s)
        for n, t in p.node_times().items():
            d["nodes"].setdefault(n, []).append(t)
    out = []
    for part in sorted(now, key=_part_order_key):
        base = baseline.parts.get(part)
        if not isinstance(base, dict):
            continue
        cur = now[part]
        bc = base.get("cluster_time_s")
        cc = _median(cur["cluster"])
        if isinstance(bc, (int, float)) and bc > 0 and cc is not None and \
                cc > bc * (1.0 + tolerance):
            out.append(Regression(part=part, node=None, baseline_s=bc, now_s=cc,
                                  slower_by=cc / bc - 1.0))
        bn = base.get("nodes") if isinstance(base.get("nodes"), dict) else {}
        for n in common.natural_sorted(cur["nodes"]):
            b = bn.get(n)
            v = _median(cur["nodes"][n])
            if isinstance(b, (int, float)) and b > 0 and v > b * (1.0 + tolerance):
                out.append(Regression(part=part, node=n, baseline_s=b, now_s=v,
                                      slower_by=v / b - 1.0))
    return out
