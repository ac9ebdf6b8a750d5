# SPDX-License-Identifier: MIT
"""A run's report as node_exporter textfile metrics (the Prometheus text exposition format).

One gauge family per figure, each with its HELP and TYPE lines, label values escaped, no sample
timestamps (node_exporter's textfile collector drops a file that has them). Per node and part:
the node time, its rate, its status, the cache residency at the release and the release offset
from the scheduled start; per part: the cluster time, the node counts and the verdicts; per run:
its end time, exit status and validity. A figure the report does not have (an older report, a
part without a replica) is left out rather than written as 0. The file is written through
files.write_atomic: a temporary file in the same directory, then a rename."""
import math

from . import common
from . import files

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
    ("node_ok", "1 when the node's part is ok (or late with --late-ok), 0 when it failed or is "
                "missing."),
    ("node_status", "A node's status of a part (always 1; the status is the label)."),
    ("node_cache_residency_ratio", "The fraction of the replica in the node's page cache at "
                                   "the release."),
    ("node_start_offset_seconds", "The node's first release after the scheduled start, on its "
                                  "own clock."),
    ("node_clock_offset_seconds", "The node's clock offset against the launch host, as the "
                                  "launcher measured it."),
]
OK_STATUSES = ("ok", "late")


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
    return [("test", p.get("test")), ("part", p.get("part")),
            ("repetition", p.get("repetition"))]


def _run(m, report, collection, exit_status):
    run_id = report.get("run_id") or ""
    m.add("run_info", [("run_id", run_id), ("status", report.get("status") or ""),
                       ("scale", report.get("scale") or ""),
                       ("version", report.get("version") or "")], 1)
    man = getattr(collection, "manifest", None) or {}
    end = _num(man.get("finished_at")) if isinstance(man, dict) else None
    if end is None and collection is not None:
        ends = [_num(e.get("start_at")) + _num(e.get("node_time_s"))
                for g in collection.groups.values() for e in g.entries.values()
                if _num(e.get("start_at")) is not None and _num(e.get("node_time_s")) is not None]
        end = max(ends) if ends else None
    m.add("run_end_time_seconds", [], end)
    status = exit_status if exit_status is not None else report.get("exit_code")
    m.add("run_exit_status", [], status)
    nodes = report.get("nodes") or {}
    for state in ("expected", "seen", "failed", "missing", "unexpected"):
        v = nodes.get(state)
        m.add("run_nodes", [("state", state)], len(v) if isinstance(v, list) else v)
    val = report.get("validity")
    if isinstance(val, dict) and val.get("verdict") in ("VALID", "NOT VALID"):
        m.add("run_valid", [], 1 if val["verdict"] == "VALID" else 0)
        for r in val.get("rules") or []:
            if isinstance(r, dict) and isinstance(r.get("ok"), bool):
                m.add("run_validity_rule_ok", [("rule", r.get("rule"))], 1 if r["ok"] else 0)
    if isinstance(report.get("regressions"), list):
        m.add("run_regressions", [], len(report["regressions"]))


def _part(m, p):
    pl = _part_labels(p)
    m.add("part_cluster_time_seconds", pl, p.get("cluster_time_s"))
    nt = p.get("node_time_s")
    if isinstance(nt, dict):
        m.add("part_node_time_median_seconds", pl, nt.get("median"))
    for state in ("ok", "failed", "missing"):
        m.add("part_nodes", pl + [("state", state)], p.get("nodes_" + state))
    start = p.get("start") if isinstance(p.get("start"), dict) else {}
    spread = start.get("spread_s") if start else p.get("start_spread_s")
    m.add("part_start_spread_seconds", pl, spread)
    if isinstance(start.get("verdict"), str):
        m.add("part_start_verdict", pl + [("verdict", start["verdict"])], 1)
    if isinstance(p.get("start_synchronized"), bool):
        m.add("part_start_synchronized", pl, 1 if p["start_synchronized"] else 0)
    res = p.get("residency")
    if isinstance(res, dict) and isinstance(res.get("warm_nodes"), list):
        m.add("part_warm_nodes", pl, len(res["warm_nodes"]))


def _nodes(m, p, group, servers):
    """Per node of a part: from the collection's entries when given, else from the report's
    own lists (node times of the ok nodes, the failed and the missing)."""
    pl = _part_labels(p)
    entries = group.entries if group is not None else {}
    times = p.get("_node_times") if isinstance(p.get("_node_times"), dict) else {}
    status = {}
    for n in entries:
        status[n] = entries[n].get("status")
    for n in times:
        status.setdefault(n, "ok")
    for f in p.get("failed") or []:
        if isinstance(f, dict) and isinstance(f.get("node"), str):
            status.setdefault(f["node"], f.get("status") or "failed")
    for n in p.get("missing") or []:
        status.setdefault(n, "missing")
    for n in sorted(status):
        nl = [("node", n), ("server", servers.get(n, "?"))] + pl
        st = status[n] if isinstance(status[n], str) else "unknown"
        m.add("node_status", nl + [("status", st)], 1)
        m.add("node_ok", nl, 1 if st in OK_STATUSES else 0)
        e = entries.get(n) or {}
        t = _num(e.get("node_time_s")) if e else _num(times.get(n))
        if st not in OK_STATUSES or t is None:
            continue
        m.add("node_time_seconds", nl, t)
        if t > 0:
            if e.get("kind") == "mmaptouch" or p.get("part") == "1b":
                if _num(e.get("pages")) is not None:
                    m.add("node_pages_per_second", nl, e["pages"] / t)
            elif _num(e.get("bytes")) is not None:
                m.add("node_bytes_per_second", nl, e["bytes"] / t)
        m.add("node_cache_residency_ratio", nl, e.get("residency"))
        if _num(e.get("rel_min")) is not None and _num(e.get("start_at")) is not None:
            m.add("node_start_offset_seconds", nl, e["rel_min"] - e["start_at"])


def render(report, collection=None, exit_status=None):
    """The metrics text of a report (report.build_report's dict); collection (report.collect's)
    adds the per-node figures the report does not keep; exit_status overrides the report's."""
    m = Metrics()
    _run(m, report, collection, exit_status)
    servers = _servers(collection)
    groups = getattr(collection, "groups", {}) or {}
    for p in report.get("parts") or []:
        _part(m, p)
        _nodes(m, p, groups.get((p.get("test"), p.get("repetition"), p.get("part"))), servers)
    clock = report.get("clock") or {}
    offs = clock.get("offsets") if isinstance(clock.get("offsets"), dict) else {}
    for n, o in sorted((offs.get("nodes") or {}).items()):
        if isinstance(o, dict):
            m.add("node_clock_offset_seconds", [("node", n), ("server", servers.get(n, "?"))],
                  o.get("offset_s"))
    return m.text()


def _servers(collection):
    """node -> its /stage server: the launcher's manifest, else the node's own mount."""
    if collection is None:
        return {}
    man = collection.manifest if isinstance(collection.manifest, dict) else {}
    ms = man.get("servers") if isinstance(man.get("servers"), dict) else {}
    out = {}
    for n, facts in collection.nodes.items():
        out[n] = ms[n] if isinstance(ms.get(n), str) else common.server_of(n, facts.get("fs"))
    for n, s in ms.items():
        if isinstance(s, str):
            out.setdefault(n, s)
    return out


def write(path, report, collection=None, exit_status=None):
    """Write the metrics to path atomically; None, or why it could not be written."""
    try:
        files.write_atomic(path, render(report, collection, exit_status))
    except OSError as e:
        return "cannot write %s: %s" % (path, common.errno_text(e))
    return None
