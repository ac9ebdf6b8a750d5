# SPDX-License-Identifier: MIT
"""A collected run as the history records it (histdb.Run), from the typed report model
(model.Report, as report.build() makes it): the run's facts and verdicts from the report, one
result per node, part and repetition from each part's NodeResult list.

Two ways in: run_from_report (the hook of the collector, the launcher and the cron wrapper:
the report they have just built, nothing read twice) and run_from_dir (stagebench-history
ingest: the report built from the directory, as the launcher builds it, with the verdicts the
collector saved in its report.json where there is one, so that a run recorded by its
collector and ingested again is the same run). record_collected is the one call the
collector, the launcher and the cron wrapper make."""
import os
import re

from . import common
from . import histdb
from .model import MEASURED_OFFSETS
from .summaries import Bad, load_json

HISTORY = "history.sqlite"
# what the history keeps of a part's start verdict (model.StartVerdict), for the report page
START_FIELDS = ("verdict", "spread_s", "uncertainty_s", "limit_s", "io_spread_s", "why")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class NotARun(Exception):
    """A directory that cannot be recorded: the reason in one line."""


# ---------------------------------------------------------------------------------------------
# The run's facts and verdicts

def run_id_of(report_run_id, rundir):
    """The run's id: the report's (the launcher's manifest's), else the directory's name;
    NotARun when neither is a valid run id."""
    for rid in (report_run_id, os.path.basename(os.path.normpath(rundir or ""))):
        if common.run_id_ok(rid):
            return rid
    raise NotARun("%s: no valid run id (the manifest's or the directory's name)" % rundir)


def _verdicts(status, exit_code, validity, start_verdict, nodes, parts):
    """The verdict facts of a run: validity, the validity object (JSON); nodes, (expected,
    failed, missing); parts, [(part, repetition, start verdict object, cluster time)]."""
    expected, failed, missing = nodes
    return {"status": status, "exit_code": exit_code,
            "validity": validity.get("verdict") if validity else None,
            "start_verdict": start_verdict, "nodes_expected": expected,
            "nodes_failed": len(failed), "nodes_missing": len(missing),
            "verdicts": {"validity": validity,
                         "parts": [{"part": part, "repetition": rep, "start": start,
                                    "cluster_time_s": t} for part, rep, start, t in parts],
                         "failed": list(failed), "missing": list(missing)}}


def verdicts_of(report):
    """The verdict facts of report (a model.Report)."""
    return _verdicts(
        report.status, report.exit_code,
        report.validity.to_json() if report.validity is not None else None,
        report.clock.start_verdict,
        (report.nodes.expected, report.nodes.failed, report.nodes.missing),
        [(p.part, p.repetition, dict((k, getattr(p.start, k)) for k in START_FIELDS),
          p.cluster_time_s) for p in report.parts])


def _saved_verdicts(doc):
    """The verdict facts of the report a collector saved (report.json, stagebench.report/2)."""
    def obj(v):
        return v if isinstance(v, dict) else {}

    nodes = obj(doc.get("nodes"))
    parts = [obj(p) for p in doc.get("parts") or []]
    return _verdicts(
        doc.get("status"), doc.get("exit_code"), doc.get("validity") or None,
        obj(doc.get("clock")).get("start_verdict"),
        (nodes.get("expected"), nodes.get("failed") or [], nodes.get("missing") or []),
        [(p.get("part"), p.get("repetition"),
          dict((k, obj(p.get("start")).get(k)) for k in START_FIELDS),
          p.get("cluster_time_s")) for p in parts])


def build_digest(binaries):
    """The build's digest of a run from {node: the SHA-256 of the executable it ran, or None}
    (model.Report.node_binaries): that digest when every node ran the same executable,
    histdb.MIXED when they did not (another digest, or one node's summaries of two, or a node
    that recorded none beside nodes that did), None when no node recorded one (older nodes)."""
    seen = set((binaries or {}).values())
    if not seen or seen == {None}:
        return None
    digest = seen.pop()
    return digest if not seen and _HEX64.match(digest) else histdb.MIXED


def facts_of(report, rundir):
    """The facts of the run report (a model.Report) collected from rundir: its id, start,
    scale, note, build (the executable's digest, build_digest) and build id, verdicts and
    source."""
    starts = [p.start_at for p in report.parts if p.start_at is not None]
    started = min(starts) if starts else report.end_time
    if started is None:
        raise NotARun("%s: no part with a start time" % rundir)
    builds = set(b for b in (report.node_builds or {}).values() if b)
    facts = {"run_id": run_id_of(report.run_id, rundir), "started": float(started),
             "scale": report.scale, "note": "\n".join(report.notes) or None,
             "build": build_digest(report.node_binaries),
             "build_id": ", ".join(sorted(builds)) or None,
             "source": os.path.abspath(rundir) if rundir else None}
    facts.update(verdicts_of(report))
    return facts


# ---------------------------------------------------------------------------------------------
# A result per node, part and repetition

def results_of(report):
    """(node, server, test, part, repetition, status, node time, rate, rate unit, residency,
    start offset, clock offset) of every node of every part that ran it or failed it (a node
    missing, that said nothing, is no result)."""
    offs = report.clock.offsets
    measured = offs.nodes if offs.source == MEASURED_OFFSETS else {}
    rows = []
    for p in report.parts:
        unit = p.rate.unit
        for r in p.node_results or ():
            if r.status == "missing":
                continue
            t = r.node_time_s if r.ok else None
            count = r.counted(unit)
            rows.append((r.node, r.server, p.test, p.part, p.repetition, r.status, t,
                         count / t if t and count is not None else None, unit, r.residency,
                         r.start_offset_s if r.ok else None,
                         measured[r.node].offset_s if r.node in measured else None))
    return rows


def run_from_report(report, rundir):
    """The run of report (a model.Report) collected from rundir; NotARun when it has no
    result."""
    rows = results_of(report)
    if not rows:
        raise NotARun("%s holds no node summary with a result" % rundir)
    run = histdb.Run(**facts_of(report, rundir))
    run.results = rows
    return run


# ---------------------------------------------------------------------------------------------
# From a results directory

def _saved_report(rundir):
    """The report the collector saved in rundir (its report.json), or None (none there, or
    one of an older schema, whose verdicts the report built again replaces)."""
    path = os.path.join(rundir, common.REPORT_JSON)
    if not os.path.exists(path):
        return None
    try:
        doc = load_json(path)
    except (OSError, Bad) as e:
        raise NotARun("%s: %s" % (path, e if isinstance(e, Bad) else common.errno_text(e)))
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if not isinstance(schema, str) or not schema.startswith("stagebench.report/"):
        raise NotARun("%s is not a stagebench report" % path)
    return doc if schema == common.REPORT_SCHEMA else None


def run_from_dir(rundir):
    """The run of a results directory: its report built (collection.collect, report.build,
    as the launcher does), its verdicts the saved report.json's where there is one. NotARun
    when it has no usable summary."""
    if not os.path.isdir(rundir):
        raise NotARun("%s is not a directory" % rundir)
    common.need("ClusterShell")
    from . import collection
    from . import report as reports
    saved = _saved_report(rundir)
    result = reports.build(collection.collect([rundir]), source=rundir)
    run = run_from_report(result, rundir)
    if saved is not None:
        if saved.get("run_id") != result.run_id:
            raise NotARun("%s: its report.json is of run %s, its manifest of %s" % (
                rundir, saved.get("run_id"), result.run_id))
        run.facts.update(_saved_verdicts(saved))
    return run


# ---------------------------------------------------------------------------------------------
# The hook of the collector, the launcher and the cron wrapper

def default_history(rundir):
    """RESULTS/history.sqlite for a launcher's run RESULTS/<run-id>/ (it has a manifest);
    None for a directory of summaries gathered by hand."""
    if not os.path.exists(os.path.join(rundir, common.MANIFEST)):
        return None
    return os.path.join(os.path.dirname(os.path.abspath(rundir)), HISTORY)


def record_collected(rundir, report, path=None):
    """Record the run report (a model.Report) the collector has just built from rundir into
    the history at path (default: default_history(rundir); nothing when that is None).
    Returns (path or None, outcome or None, error or None): never raises for a bad history, a
    bad directory or a full disk."""
    path = path or default_history(rundir)
    if path is None or not os.path.isdir(rundir):
        return None, None, None
    try:
        run = run_from_report(report, rundir)
        with histdb.open_history(path) as h:
            return path, histdb.record(h, run), None
    except (histdb.Refused, NotARun, common.UsageError, ValueError) as e:
        return path, None, str(e)
    except (OSError, histdb.sqlite3.Error) as e:
        refused = None if isinstance(e, OSError) else histdb.damage(path, e)
        return path, None, str(refused) if refused else "%s: %s" % (
            path, common.errno_text(e) if isinstance(e, OSError) else e)
