# SPDX-License-Identifier: MIT
"""The cluster report (a model.Report) as text: its sections in order, each writing its own
lines; what came from a node or a file escaped on the way out."""
from . import catalogue
from . import common
from . import verdict
from .nodes import nodeset_fold

_START_SHORT = {"held": "held", "NOT held": "NOT held", "cannot tell": "?"}
INCONSISTENT = verdict.INCONSISTENT
COUNT_UNITS = ("pages/s", "ops/s")  # rates of things counted, not of bytes


def to_text(report):
    """The report as text: its sections in order, each writing its own lines (and the blank
    line before it, where it has one)."""
    out = []
    w = out.append
    for section in (_text_head, _text_offsets, _text_parts, _text_rates, _text_residency,
                    _text_tests, _text_slowest, _text_servers, _text_start, _text_late,
                    _text_failed, _text_missing, _text_invalid, _text_baseline,
                    _text_warnings, _text_validity, _text_status):
        section(w, report)
    return common.safe_text("\n".join(out) + "\n")


def _ns_list(nodes, limit=12):
    if not nodes:
        return "-"
    folded = nodeset_fold(nodes)
    if len(folded) > 160 and len(nodes) > limit:
        return "%s ... (%d nodes)" % (", ".join(nodes[:limit]), len(nodes))
    return folded


def _text_head(w, report):
    """The run, its nodes and servers, the notes and the launcher's warnings, the clocks."""
    nodes = report.nodes
    title = "stagebench cluster report"
    if report.run_id:
        title += ": run %s" % report.run_id
    w(title)
    if report.source:
        w("results: %s (%d summary files)" % (report.source, report.files))
    lau = report.launcher
    extra = []
    if isinstance(lau, dict) and lau.get("engine"):
        extra.append("launched with %s%s" % (lau["engine"], " (exec)" if lau.get("exec") else ""))
    if report.scale:
        extra.append("scale %s" % report.scale)
    w("nodes: %d expected (%s, from %s), %d with summaries%s" % (
        nodes.expected, nodes.expected_set or "-", nodes.expected_from, nodes.seen,
        ("; " + "; ".join(extra)) if extra else ""))
    w("servers: %d" % len(report.servers))
    for s in report.servers:
        w("  %-24s %3d node%s %s%s" % (s.server, s.count, "" if s.count == 1 else "s",
                                      s.nodes, "  (preparer %s)" % s.preparer
                                      if s.preparer else ""))
    for n in report.notes:
        w("note: %s" % n)
    for x in report.launcher_warnings:
        w("warning: %s" % x)
    if report.interrupted:
        w("note: the launcher was interrupted (%s): later parts did not run"
          % report.interrupted)
    unsynced = report.clock.unsynchronized_nodes
    if not nodes.seen:
        w("clock: no usable summary: nothing is known of the nodes' clocks")
    elif unsynced:
        w("clock: %d node%s NOT NTP-synchronized: %s" % (
            len(unsynced), "" if len(unsynced) == 1 else "s", _ns_list(unsynced)))
    else:
        w("clock: every node NTP-synchronized")


def _text_offsets(w, report):
    off = report.clock.offsets
    if off.nodes:
        big = max(off.nodes.items(), key=lambda kv: abs(kv[1].offset_s))
        unc = max(o.uncertainty_s for o in off.nodes.values())
        w("clock offsets (%s%s, %d measurement%s): %d node%s, largest %s %s, uncertainty at "
          "most %s" % (
              off.source, ", %s" % off.method if off.method else "", off.measurements,
              "" if off.measurements == 1 else "s", len(off.nodes),
              "" if len(off.nodes) == 1 else "s", big[0], verdict.fmt_signed(big[1].offset_s),
              fmt(unc)))
        drift = [(n, o.drift_s) for n, o in off.nodes.items() if o.drift_s]
        if drift:
            n, d = max(drift, key=lambda x: abs(x[1]))
            w("  drift from the first measurement to the last: largest %s %s (%+.0f ppm)" % (
                n, verdict.fmt_signed(d), off.nodes[n].rate_ppm))
    for st in off.steps[:10]:
        w("  %s: its clock stepped by %s %s%s" % (
            st.node, verdict.fmt_signed(st.step_s), st.between,
            ", hitting %s" % ", ".join(st.parts) if st.parts else ", hitting no part's start"))
    if off.unknown and report.nodes.seen:
        ns = list(off.unknown)
        w("clock offsets unknown: %s (%s)" % (_ns_list(ns), off.unknown[ns[0]]))


def _text_parts(w, report):
    """The table: one row per part and repetition."""
    w("")
    hdr = "%-4s %-4s %3s %5s %4s %4s %4s %7s  %10s %10s %10s  %10s %10s %16s %9s %9s %-8s" % (
        "test", "part", "rep", "nodes", "ok", "fail", "miss", "threads", "node min",
        "median", "max", "cluster", "bytes", "rate", "lat p50", "lat p99", "start")
    w(hdr)
    for p in report.parts:
        lat = p.latency_s
        nt = p.node_time_s
        w("%-4s %-4s %3d %5d %4d %4d %4d %7d  %10s %10s %10s  %10s %10s %16s %9s %9s %-8s" % (
            p.test, p.part, p.repetition, p.nodes_expected, p.nodes_ok, p.nodes_failed,
            p.nodes_missing, p.threads, fmt(nt.min), fmt(nt.median), fmt(nt.max),
            fmt(p.cluster_time_s), common.fmt_bytes(p.bytes), fmt_rate(p.rate),
            fmt(lat.p50 if lat else None), fmt(lat.p99 if lat else None),
            _START_SHORT.get(p.start.verdict, "?")))


def _text_rates(w, report):
    """What the rates counted; the pages touched of a page rate, and the first passes."""
    touched = catalogue.load().parts_where("rate_unit", "pages/s")
    ops = [p.part for p in report.parts if p.rate.unit == "ops/s"]
    w("rate: what was counted per second of the part's cluster time: bytes read or written%s%s"
      % ("; %s: pages touched" % ", ".join(touched) if touched else "",
         "; %s: operations" % ", ".join(sorted(set(ops))) if ops else ""))
    for p in report.parts:
        r = p.rate
        if r.unit != "pages/s":
            continue
        w("  %-4s rep %d: %s pages touched (one byte a page) of %s mapped: %s, %s mapped" % (
            p.part, p.repetition, r.pages if r.pages is not None else "?",
            common.fmt_bytes(r.mapped_bytes), fmt_rate(r), common.fmt_rate(r.mapped_Bps)))
    for p in report.parts:
        fp = p.first_pass
        if fp:
            w("  %-4s rep %d: first pass (from the server) %s at most, median %s; other passes "
              "(from the node's cache) median %s" % (
                  p.part, p.repetition, fmt(fp.first_pass_max_s),
                  fmt(fp.first_pass_median_s), fmt(fp.rest_pass_median_s)))


def _text_residency(w, report):
    rows = [p for p in report.parts if p.nodes_ok and p.residency.applicable]
    if not rows:
        return
    w("")
    replica_less = [t for t, d in catalogue.load().tests.items()
                    if not d["replica"] and d["in_all"]]
    w("cache residency at release (the node's own cache of the replica; cold expected%s):"
      % (" but for test %s" % ", ".join(replica_less) if replica_less else ""))
    for p in rows:
        r = p.residency
        if r.min is None:
            line = "unknown on every node"
        else:
            line = "min %s, median %s, max %s" % (fmt_frac(r.min), fmt_frac(r.median),
                                                  fmt_frac(r.max))
            if r.unknown:
                line += "; unknown on %s" % _ns_list(r.unknown)
        if r.warm_nodes:
            line += "; read from its own cache: %s (left out of the slowest nodes)" % _ns_list(
                r.warm_nodes)
        w("  %-4s rep %d: %s" % (p.part, p.repetition, line))


def _text_tests(w, report):
    w("")
    w("test results (a part's cluster time is its slowest node's; a test's is the sum):")
    for t in report.tests:
        w("  test %-4s rep %d: %s = sum of %s%s" % (
            t.test, t.repetition, fmt(t.result_s) if t.result_s is not None
            else "no result", " + ".join(t.parts),
            "" if t.complete else "  (incomplete: nodes failed or missing)"))


def _text_slowest(w, report):
    """The slowest nodes and threads of each part."""
    if not any(p.slowest for p in report.parts):
        return
    w("")
    w("slowest nodes (deviation from the part's median node time):")
    for p in report.parts:
        if p.slowest:
            w("  %-4s rep %d: %s" % (p.part, p.repetition, ", ".join(
                "%s %s (%s)" % (s.node, fmt(s.node_time_s), common.fmt_pct(s.deviation))
                for s in p.slowest)))
    w("slowest threads (deviation from the median thread time of all nodes):")
    for p in report.parts:
        if p.slowest_threads:
            w("  %-4s rep %d: %s" % (p.part, p.repetition, ", ".join(
                "%s thread %d%s %s (%s)" % (
                    s.node, s.thread, " CPU %d" % s.cpu if s.cpu is not None else "",
                    fmt(s.time_s), common.fmt_pct(s.deviation))
                for s in p.slowest_threads)))


def _text_servers(w, report):
    """Each part per /stage server, when there are several."""
    if not (len(report.servers) > 1 or any(len(p.servers) > 1 for p in report.parts)):
        return
    w("")
    w("per /stage server:")
    w("  %-4s %3s %-24s %5s %10s %10s %10s %16s" % ("part", "rep", "server", "nodes",
                                                      "median", "slowest", "bytes",
                                                      "rate"))
    for p in report.parts:
        for s in p.servers:
            w("  %-4s %3d %-24s %5d %10s %10s %10s %16s" % (
                p.part, p.repetition, s.server[:24], s.nodes_ok,
                fmt(s.median_s), fmt(s.time_s), common.fmt_bytes(s.bytes),
                fmt_rate(s.rate)))


def _text_start(w, report):
    """The verdict line, then every part that did not hold with the nodes named: the lines
    below say the same as the verdict."""
    w("")
    clk = report.clock
    lim = clk.limit_s
    v = clk.start_verdict
    parts = [p for p in report.parts if p.start.why != verdict.NO_RELEASE]
    if v is None:
        w("start synchronization: no part ran, nothing to judge")
        return
    basis = "true release instants: each node's own minus its clock offset"
    if v == "held":
        w("start synchronization: held in every part (%s; limit %g s): spread at most %s" % (
            basis, lim, fmt_pm(max(p.start.spread_s for p in parts),
                               max(p.start.uncertainty_s for p in parts))))
        return
    bad = [p for p in parts if p.start.verdict == "NOT held"]
    unsure = [p for p in parts if p.start.verdict == "cannot tell"]
    held = len(parts) - len(bad) - len(unsure)
    w("start synchronization: %s (%s; limit %g s): NOT held in %d part%s, cannot tell in %d, "
      "held in %d" % (v, basis, lim, len(bad), "" if len(bad) == 1 else "s", len(unsure), held))
    for p in bad + unsure:
        st = p.start
        w("  %-4s rep %d: %s%s%s" % (
            p.part, p.repetition, st.verdict,
            ": spread %s" % fmt_pm(st.spread_s, st.uncertainty_s)
            if st.spread_s is not None else "", ": %s" % st.why if st.why else ""))
        # nodes without an offset are named in the part's why; the others with their amount
        out = [o for o in st.nodes_out if o.by_s is not None]
        for o in out[:20]:
            w("      %s %s: %s" % (o.node, verdict.fmt_signed(o.by_s), o.why))
        if len(out) > 20:
            w("      ... %d more nodes" % (len(out) - 20))
        for x in st.steps[:10]:
            w("      %s: its clock stepped by %s %s: this part's offset is either side of it"
              % (x.node, verdict.fmt_signed(x.step_s), x.between))
    if report.clock.offsets.how_to:
        w("  %s" % report.clock.offsets.how_to)


def _text_late(w, report):
    """Below the start verdict: the nodes that started late, and those without NTP."""
    for p in report.parts:
        if p.late:
            w("  %s rep %d started late on %s" % (p.part, p.repetition, _ns_list(p.late)))
    if report.clock.unsynchronized_nodes:
        w("  nodes whose clock is not NTP-synchronized: %s"
          % _ns_list(report.clock.unsynchronized_nodes))


def _text_failed(w, report):
    """Every node that failed: whole nodes first, then per part. The nodes of a part that
    failed alike (status, error and cause) are one line, their set folded, and parts whose
    sets are the same share it: a thousand dead nodes are a line, not a line a node a part."""
    fails = [(p, f) for p in report.parts for f in p.failed]
    if not (fails or report.node_errors):
        return
    w("")
    w("failed:")
    for n in report.node_errors:
        w("  %s: %s" % (n.node, n.error))
    alike = {}  # (status, error, cause) -> {(part, repetition): [(node, f)]}, in order
    for p, f in fails:
        key = (f.status, f.error, f.cause)
        alike.setdefault(key, {}).setdefault((p.part, p.repetition), []).append((f.node, f))
    for (status, error, cause), by_part in alike.items():
        same = {}  # the nodes -> the parts that failed on just those
        for where, nodes in by_part.items():
            same.setdefault(tuple(n for n, _f in nodes), []).append(where)
        for nodes, wheres in same.items():
            what = "%s%s" % ("" if status in ("failed", INCONSISTENT) else status + ": ",
                             error or "failed")
            if len(nodes) == 1 and len(wheres) == 1:
                f = by_part[wheres[0]][0][1]
                w("  %-4s rep %d %s: %s%s" % (wheres[0][0], wheres[0][1], nodes[0], what,
                                             _cause(f)))
            else:
                w("  %s: %d node%s %s: %s%s" % (
                    _where(wheres), len(nodes), "" if len(nodes) == 1 else "s",
                    _ns_list(list(nodes)), what, " (cause: %s)" % cause if cause else ""))


def _where(wheres):
    """Parts and their repetitions, as the report names them: 1a rep 1, 1b rep 1-2."""
    reps = {}
    for part, rep in wheres:
        reps.setdefault(part, []).append(rep)
    out = []
    for part, rs in reps.items():
        rs = sorted(rs)
        contiguous = rs == list(range(rs[0], rs[-1] + 1))
        out.append("%s rep %s" % (part, "%d-%d" % (rs[0], rs[-1]) if contiguous and len(rs) > 1
                                  else ",".join(str(r) for r in rs)))
    return ", ".join(out)


def _cause(f):
    """The cause the launcher found of a failure, with the node's measured offset."""
    if not f.cause:
        return ""
    if f.offset_s is None:
        return " (cause: %s)" % f.cause
    return " (cause: %s: its clock %s %s the launch host)" % (
        f.cause, fmt(abs(f.offset_s)), "ahead of" if f.offset_s >= 0 else "behind")


def _text_missing(w, report):
    """The nodes expected that said nothing, per part; the nodes that reported unexpected."""
    miss = [(p, n) for p in report.parts for n in p.missing]
    if miss:
        w("")
        w("missing (expected, no summary and no error recorded):")
        by = {}
        for p, n in miss:
            by.setdefault((p.part, p.repetition), []).append(n)
        for (part, rep), ns in by.items():
            w("  %-4s rep %d: %s" % (part, rep, _ns_list(ns)))
    if report.nodes.unexpected:
        w("")
        w("not expected but reported: %s" % _ns_list(report.nodes.unexpected))


def _text_invalid(w, report):
    if report.invalid:
        w("")
        w("invalid files (skipped):")
        for f in report.invalid:
            w("  %s: %s" % (f.file, f.reason))


def _text_baseline(w, report):
    """The regressions against --baseline, or that there are none."""
    b = report.baseline
    if not b:
        return
    w("")
    if report.regressions:
        w("regressions against baseline %s (tolerance %.0f%%):" % (b.file, b.tolerance * 100))
        for r in report.regressions:
            w("  %-4s %-12s %s -> %s (%s)" % (r.part, r.node or "(cluster)",
                                               fmt(r.baseline_s), fmt(r.now_s),
                                               common.fmt_pct(r.slower_by)))
    else:
        w("baseline %s: no node or part slower by more than %.0f%%" % (
            b.file, b.tolerance * 100))


def _text_warnings(w, report):
    ws = report.warnings
    if not ws:
        return
    w("")
    w("warnings from the nodes:")
    for x in ws[:50]:
        where = "%s rep %s " % (x.part, x.repetition) if x.part else ""
        w("  %s%s: %s" % (where, _ns_list(x.nodes), x.warning))
    if len(ws) > 50:
        w("  ... %d more" % (len(ws) - 50))


def _text_validity(w, report):
    va = report.validity
    sd = report.server_drop
    w("")
    w("server cache drop before test %s: %s%s" % (
        verdict.drop_tests(), sd.evidence, " (%s)" % sd.command if sd.command else ""))
    w("")
    w("validity as a spec run: %s%s" % (va.verdict, " (%s)" % va.not_spec_run
                                        if va.not_spec_run else ""))
    for r in va.rules:
        w("  [%s] %s: %s" % ({True: "ok", False: "NO", None: "--"}[r.ok], r.rule, r.evidence))
    for t in va.tests:
        w("  test %-4s %s%s" % (t.test, t.verdict, " (%s)" % "; ".join(t.failed)
                                if t.failed else ""))
    if va.not_run:
        w("  the spec's tests that did not run: %s" % ", ".join(va.not_run))
    if va.not_spec_run:
        w("  (a measurement, not a spec run: this alone does not change the exit status)")


def _text_status(w, report):
    """The last line: ok, or FAILED with every reason."""
    w("")
    if report.status == "ok":
        w("status: ok")
        return
    n = report.nodes
    clk = report.clock
    why = []
    if n.failed:
        why.append("%d node%s failed" % (len(n.failed), "" if len(n.failed) == 1 else "s"))
    if n.missing:
        why.append("%d missing" % len(n.missing))
    if report.invalid:
        why.append("%d invalid file%s" % (len(report.invalid),
                                          "" if len(report.invalid) == 1 else "s"))
    if report.regressions:
        why.append("%d regression%s" % (len(report.regressions),
                                        "" if len(report.regressions) == 1 else "s"))
    if clk.start_verdict == "NOT held":
        why.append("start not synchronized")
    if not report.parts and not report.node_errors:
        why.append("no summary found")
    if not why and clk.unsynchronized_nodes:
        why.append("clocks not NTP-synchronized")
    w("status: FAILED (%s)" % ", ".join(why or ["see above"]))


def fmt(s):
    return common.fmt_time(s)


def fmt_pm(s, u):
    return "%s +/- %s" % (fmt_spread(s), fmt(u) if u else "0")


def fmt_frac(x):
    return "-" if x is None else "%.0f%%" % (x * 100.0)


def fmt_rate(rate):
    """A rate with its unit: bytes per second, or pages or operations per second."""
    v = rate.value if rate else None
    if v is None:
        return "-"
    if rate.unit in COUNT_UNITS:
        word = rate.unit.split("/")[0]
        for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if v >= div:
                return "%.2f %s %s/s" % (v / div, unit, word)
        return "%.0f %s/s" % (v, word)
    return common.fmt_rate(v)


def fmt_spread(s):
    """Epoch seconds resolve about 0.24 us: a smaller spread is shown as such."""
    if s is None:
        return "-"
    return "< 1 us" if s < 1e-6 else common.fmt_time(s)
