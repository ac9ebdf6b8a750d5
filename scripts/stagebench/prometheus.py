# SPDX-License-Identifier: MIT
"""A run's report as node_exporter textfile metrics (the Prometheus text exposition format).

One gauge family per figure, each with its HELP and TYPE lines, label values escaped, no sample
timestamps (node_exporter's textfile collector drops a file that has them). Per node and part:
the node time, its rate, its status, the cache residency at the release and the release offset
from the scheduled start; per part: the cluster time, the node counts and the verdicts; per run:
its end time, exit status and validity; with the history's judgement of the run (the cron
wrapper's, stagebench-history regressions --prometheus): whether it judged, the findings
flagged by kind, and the slowdown of each flagged server and node (only those carry a name, so
the cardinality stays bounded). A figure the report does not have (an older report, a
part without a replica) is left out rather than written as 0. The file is written through
files.write_atomic: a temporary file in the same directory, then a rename."""
import math

from . import common
from . import files
from . import regress

PREFIX = "stagebench_"

# name -> help; the order here is the order in the file
FAMILIES = [
    ("run_info", "The run collected: its id, status, scale and stagebench version (always 1)."),
    ("run_end_time_seconds", "When the run ended (the launcher's finish, else the last node's "
                             "end), seconds since the epoch."),
    ("run_exit_status", "The run's exit status: 0 all good, 1 a node failed or is missing, a "
                        "part regressed or the start was not synchronized, 130/143 interrupted."),
    ("run_nodes", "Nodes of the run by state (expected, seen, failed, missing, unexpected)."),
    ("run_valid", "1 when the run is a valid run of the spec, 0 when it is not."),
    ("run_validity_rule_ok", "1 when the spec's validity rule held, 0 when it did not."),
    ("run_regressions", "Nodes and parts slower than the baseline by more than the tolerance."),
    ("part_cluster_time_seconds", "A part's cluster time: the slowest node's time."),
    ("part_node_time_median_seconds", "The median node time of a part."),
    ("part_nodes", "Nodes of a part by state (ok, failed, missing)."),
    ("part_start_spread_seconds", "The spread of the part's start across the nodes."),
    ("part_start_verdict", "The part's start verdict: held, NOT held or cannot tell (always 1)."),
    ("part_start_synchronized", "1 when the part started synchronized to less than a second "
                                "across the nodes, 0 when not (absent when it cannot tell)."),
    ("part_warm_nodes", "Nodes that started a part with the replica in their own cache where "
                        "it should have been cold."),
    ("node_time_seconds", "A node's time of a part: from the scheduled start until its last "
                          "CPU was done."),
    ("node_bytes_per_second", "The bytes a node moved in a part over its node time."),
    ("node_pages_per_second", "The pages a node touched in a part (1b) over its node time."),
    ("node_ops_per_second", "The operations a node did in a part that moves no bytes over its "
                            "node time."),
    ("node_ok", "1 when the node's part is ok (or late with --late-ok), 0 when it failed or is "
                "missing."),
    ("node_status", "A node's status of a part (always 1; the status is the label)."),
    ("node_cache_residency_ratio", "The fraction of the replica in the node's page cache at "
                                   "the release."),
    ("node_start_offset_seconds", "The node's first release after the scheduled start, on its "
                                  "own clock."),
    ("node_clock_offset_seconds", "The node's clock offset against the launch host, as the "
                                  "launcher measured it."),
    # the history's judgement of the run (stagebench-history regressions): bounded, only
    # flagged nodes and servers carry their name
    ("history_judged", "1 when the history judged the run, 0 when it was too short to judge."),
    ("history_flagged", "Findings of the history flagged for the run, by kind (node, server, "
                        "cluster, change)."),
    ("history_server_regression_ratio", "A flagged server's slowdown (0.3 = 30% slower) in a "
                                        "part, tonight (kind=tonight) or lasting "
                                        "(kind=lasting)."),
    ("history_node_regression_ratio", "A flagged node's slowdown (0.3 = 30% slower) in a part, "
                                      "tonight (kind=tonight) or lasting (kind=lasting)."),
]


def escape_label(value):
    """A label value as the exposition format wants it: backslash, double quote and newline
    escaped; other control characters (which the format cannot carry) replaced by '?'."""
    s = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return "".join("?" if (ord(ch) < 32 or ord(ch) == 127) else ch for ch in s)


def escape_help(text):
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _num(v):
    """A finite number, or None (bools, strings, NaN and infinities are not samples)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _fmt(v):
    return repr(v) if v != int(v) or abs(v) >= 1e15 else str(int(v))


class Metrics:
    def __init__(self):
        self.samples = {name: [] for name, _help in FAMILIES}

    def add(self, name, labels, value):
        v = _num(value)
        if v is not None:
            self.samples[name].append((labels, v))

    def text(self):
        out = []
        for name, help_text in FAMILIES:
            rows = self.samples[name]
            if not rows:
                continue
            out.append("# HELP %s%s %s" % (PREFIX, name, escape_help(help_text)))
            out.append("# TYPE %s%s gauge" % (PREFIX, name))
            seen = set()
            for labels, v in rows:
                lab = ",".join('%s="%s"' % (k, escape_label(x)) for k, x in labels)
                if lab in seen:  # one sample per label set, the first wins
                    continue
                seen.add(lab)
                out.append("%s%s{%s} %s" % (PREFIX, name, lab, _fmt(v)) if lab else
                           "%s%s %s" % (PREFIX, name, _fmt(v)))
        return "\n".join(out) + "\n"


def _part_labels(p):
    return [("test", p.test), ("part", p.part), ("repetition", p.repetition)]


# the per-node rate family of each rate unit
_NODE_RATE = {"B/s": "node_bytes_per_second", "pages/s": "node_pages_per_second",
              "ops/s": "node_ops_per_second"}


def _run(m, report, exit_status):
    m.add("run_info", [("run_id", report.run_id or ""), ("status", report.status or ""),
                       ("scale", report.scale or ""), ("version", report.version or "")], 1)
    m.add("run_end_time_seconds", [], report.end_time)
    m.add("run_exit_status", [], exit_status if exit_status is not None else report.exit_code)
    nodes = report.nodes
    for state in ("expected", "seen", "failed", "missing", "unexpected"):
        v = getattr(nodes, state)
        m.add("run_nodes", [("state", state)], len(v) if isinstance(v, list) else v)
    val = report.validity
    m.add("run_valid", [], 1 if val.verdict == "VALID" else 0)
    for r in val.rules:
        if isinstance(r.ok, bool):
            m.add("run_validity_rule_ok", [("rule", r.rule)], 1 if r.ok else 0)
    m.add("run_regressions", [], len(report.regressions))


def _part(m, p):
    pl = _part_labels(p)
    m.add("part_cluster_time_seconds", pl, p.cluster_time_s)
    m.add("part_node_time_median_seconds", pl, p.node_time_s.median)
    for state in ("ok", "failed", "missing"):
        m.add("part_nodes", pl + [("state", state)], getattr(p, "nodes_" + state))
    m.add("part_start_spread_seconds", pl, p.start.spread_s)
    m.add("part_start_verdict", pl + [("verdict", p.start.verdict)], 1)
    if isinstance(p.start_synchronized, bool):
        m.add("part_start_synchronized", pl, 1 if p.start_synchronized else 0)
    m.add("part_warm_nodes", pl, len(p.residency.warm_nodes))


def _nodes(m, p):
    """Per node of a part: its status, and the figures of a node that ran it."""
    pl = _part_labels(p)
    family = _NODE_RATE[p.rate.unit]
    for r in sorted(p.node_results, key=lambda r: r.node):
        nl = [("node", r.node), ("server", r.server)] + pl
        m.add("node_status", nl + [("status", r.status)], 1)
        m.add("node_ok", nl, 1 if r.ok else 0)
        t = _num(r.node_time_s)
        if not r.ok or t is None:
            continue
        m.add("node_time_seconds", nl, t)
        if t > 0 and _num(r.counted(p.rate.unit)) is not None:
            m.add(family, nl, r.counted(p.rate.unit) / t)
        m.add("node_cache_residency_ratio", nl, r.residency)
        m.add("node_start_offset_seconds", nl, r.start_offset_s)


def _judgement(m, doc):
    """The history's judgement of the run (a regress.Judgement): bounded, only a flagged
    node or server carries its name."""
    m.add("history_judged", [], 0 if doc.too_short else 1)
    counts = dict((k, 0) for k in regress.KINDS)
    for f in doc.flagged_findings():
        if f.kind not in counts:
            continue
        counts[f.kind] += 1
        kind = "lasting" if f.kind == "change" else "tonight"
        scope = f.scope or f.kind
        if scope == "server":
            m.add("history_server_regression_ratio",
                  [("server", f.name), ("part", f.part), ("kind", kind)], f.size)
        elif scope == "node":
            m.add("history_node_regression_ratio",
                  [("node", f.name), ("server", f.server), ("part", f.part), ("kind", kind)],
                  f.size)
    if not doc.too_short:
        for k, n in counts.items():
            m.add("history_flagged", [("kind", k)], n)


def render_judgement(doc):
    """The metrics text of the history's judgement (a regress.Judgement) alone."""
    m = Metrics()
    _judgement(m, doc)
    return m.text()


def render(report, exit_status=None, judgement=None):
    """The metrics text of a report (a model.Report); exit_status overrides the report's;
    judgement (the history's of the run, a regress.Judgement) adds its flags."""
    m = Metrics()
    if judgement is not None:
        _judgement(m, judgement)
    _run(m, report, exit_status)
    for p in report.parts:
        _part(m, p)
        _nodes(m, p)
    for n, o in sorted(report.clock.offsets.nodes.items()):
        m.add("node_clock_offset_seconds", [("node", n), ("server",
                                                          report.node_servers.get(n, "?"))],
              o.offset_s)
    return m.text()


def write(path, report, exit_status=None, judgement=None):
    """Write the metrics to path atomically; None, or why it could not be written."""
    try:
        files.write_atomic(path, render(report, exit_status, judgement))
    except OSError as e:
        return "cannot write %s: %s" % (path, common.errno_text(e))
    return None
