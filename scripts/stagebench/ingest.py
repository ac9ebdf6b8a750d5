# SPDX-License-Identifier: MIT
"""A collected run as the history records it (histdb.Run), from the collector's stable outputs:
the node summaries read through the input door (summaries.read_summary), the launcher's
manifest.json and the report JSON (stagebench.report/2, RESULTS/<run-id>/report.json as the
launcher and the cron wrapper write it, or the collector's --format json).

Two ways in: run_from_dir (stagebench-history ingest: every summary read and checked again)
and run_from_collection (the collector's hook: the figures it has just read, not read twice;
where its in-memory layout is not the one this adapter knows, the directory is read instead).
record_collected is the one call the collector, the launcher and the cron wrapper make."""
import json
import multiprocessing
import os
import subprocess
import sys
import threading

from . import catalogue
from . import common as L
from . import files as F
from . import histdb
from .summaries import Bad, OK_STATUSES, check_manifest, load_json, read_summary

HISTORY = "history.sqlite"
REPORT_SCHEMAS = ("stagebench.report/2", "stagebench.report/1")


class NotARun(Exception):
    """A directory that cannot be recorded: the reason in one line."""


# ---------------------------------------------------------------------------------------------
# The run's facts (from the report JSON and the manifest)

def _manifest(rundir):
    path = os.path.join(rundir, L.MANIFEST)
    if not os.path.exists(path):
        return None
    try:
        m = load_json(path)
        if not isinstance(m, dict) or m.get("schema") not in L.MANIFEST_SCHEMAS:
            return None
        return check_manifest(m)
    except (OSError, Bad):
        return None


def report_of_dir(rundir):
    """The run's report JSON: its report.json (the launcher's, the cron wrapper's), else the
    collector's --format json, run here. NotARun when neither gives one."""
    path = os.path.join(rundir, L.REPORT_JSON)
    if os.path.exists(path):
        try:
            r = load_json(path)
        except (OSError, Bad) as e:
            raise NotARun("%s: %s" % (path, e if isinstance(e, Bad) else L.errno_text(e)))
        if isinstance(r, dict) and r.get("schema") in REPORT_SCHEMAS:
            return L.safe_json(r)
        raise NotARun("%s is not a stagebench report" % path)
    collect = F.find_sibling("stagebench-collect")
    if not collect:
        raise NotARun("%s has no report.json and stagebench-collect is not found" % rundir)
    p = subprocess.Popen([sys.executable, collect, rundir, "--format", "json", "--no-history"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, universal_newlines=True)
    out, err = p.communicate()
    try:
        r = json.loads(out)
    except ValueError:
        raise NotARun("%s: the collector gave no report (%s)" % (
            rundir, (err.strip().splitlines() or ["exit %d" % p.returncode])[-1]))
    return L.safe_json(r)


def _run_id(report, manifest, rundir):
    for rid in (report.get("run_id"), (manifest or {}).get("run_id"),
                os.path.basename(os.path.normpath(rundir))):
        if L.run_id_ok(rid):
            return rid
    raise NotARun("%s: no valid run id (the manifest's, the report's or the directory's name)"
                  % rundir)


def _facts(report, manifest, rundir, builds, starts):
    validity = report.get("validity") if isinstance(report.get("validity"), dict) else {}
    clock = report.get("clock") if isinstance(report.get("clock"), dict) else {}
    nodes = report.get("nodes") if isinstance(report.get("nodes"), dict) else {}
    started = min(starts) if starts else (manifest or {}).get("created_at")
    if not isinstance(started, (int, float)):
        raise NotARun("%s: no part with a start time" % rundir)

    def count(v):
        return len(v) if isinstance(v, list) else v if isinstance(v, int) else None

    parts = [{"part": p.get("part"), "repetition": p.get("repetition"),
              "start": (p.get("start") or {}).get("verdict") if isinstance(p.get("start"), dict)
              else None, "cluster_time_s": p.get("cluster_time_s")}
             for p in report.get("parts") or [] if isinstance(p, dict)]
    return histdb.Run(
        run_id=_run_id(report, manifest, rundir), started=float(started),
        scale=report.get("scale") if isinstance(report.get("scale"), str) else None,
        note="\n".join(x for x in report.get("notes") or [] if isinstance(x, str)) or None,
        build=", ".join(sorted(builds)) or None,
        status=report.get("status") if isinstance(report.get("status"), str) else None,
        exit_code=report.get("exit_code") if isinstance(report.get("exit_code"), int) else None,
        validity=validity.get("verdict") if isinstance(validity.get("verdict"), str) else None,
        start_verdict=clock.get("start_verdict") if isinstance(clock.get("start_verdict"), str)
        else None,
        nodes_expected=count(nodes.get("expected")), nodes_failed=count(nodes.get("failed")),
        nodes_missing=count(nodes.get("missing")),
        verdicts={"validity": validity or None, "parts": parts,
                  "failed": nodes.get("failed"), "missing": nodes.get("missing")},
        source=os.path.abspath(rundir))


def _offsets(report):
    """{node: offset_s} the launcher measured (none from NTP flags)."""
    clock = report.get("clock") if isinstance(report.get("clock"), dict) else {}
    offs = clock.get("offsets") if isinstance(clock.get("offsets"), dict) else {}
    if offs.get("source") != "launcher manifest" or not isinstance(offs.get("nodes"), dict):
        return {}
    return dict((n, o["offset_s"]) for n, o in offs["nodes"].items()
                if isinstance(o, dict) and isinstance(o.get("offset_s"), (int, float)))


def _server(node, manifest, fs):
    ms = (manifest or {}).get("servers")
    if isinstance(ms, dict) and isinstance(ms.get(node), str):
        return ms[node]
    return L.server_of(node, fs)


def _rate_unit(part, pages):
    """The part's rate unit: the catalogue's (where it says), else pages/s where the node
    counted pages touched, else B/s."""
    try:
        entry = catalogue.load().parts.get(part, {})
    except L.UsageError:  # no catalogue here: what the summary counted decides
        entry = {}
    if isinstance(entry.get("rate_unit"), str):
        return entry["rate_unit"]
    return "pages/s" if pages is not None else "B/s"


def _row(node, server, test, rep, part, status, t, nbytes, pages, residency, rel_min,
         start_at, offset):
    unit = _rate_unit(part, pages)
    count = pages if unit == "pages/s" else nbytes
    ok = status in OK_STATUSES
    rate = count / t if ok and t and count is not None else None
    start_off = rel_min - start_at if ok and rel_min is not None and start_at else None
    return (node, server, test, part, rep, status, t if ok else None, rate, unit, residency,
            start_off, offset)


# ---------------------------------------------------------------------------------------------
# From a results directory, through the input door

def _summary_files(rundir):
    try:
        names = sorted(os.listdir(rundir), key=lambda n: (len(n), L.natural_key(n)))
    except OSError as e:
        raise NotARun("cannot list %s: %s" % (rundir, L.errno_text(e)))
    return [os.path.join(rundir, n) for n in names
            if n.endswith(".json") and n not in L.RESERVED_FILES and ".tmp." not in n and
            os.path.isfile(os.path.join(rundir, n))]


def _read(items):
    return [read_summary(p, off) for p, off in items]


def _summaries(files):
    items = [(f, L.rep_offset_from_name(os.path.basename(f))) for f in files]
    catalogue.load()
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = 1
    if len(items) < 64 or cpus < 2 or threading.active_count() > 1 or not hasattr(os, "fork"):
        for it in items:
            yield read_summary(*it)
        return
    n = min(cpus, 8)
    size = max(8, min(256, len(items) // (n * 8) or 1))
    chunks = [items[i:i + size] for i in range(0, len(items), size)]
    with multiprocessing.get_context("fork").Pool(n) as pool:
        for res in pool.imap(_read, chunks):
            for r in res:
                yield r


def run_from_dir(rundir, report=None):
    """The run of a results directory; NotARun when it has no usable summary."""
    if not os.path.isdir(rundir):
        raise NotARun("%s is not a directory" % rundir)
    manifest = _manifest(rundir)
    report = report if report is not None else report_of_dir(rundir)
    offsets = _offsets(report)
    rows, builds, starts, seen = [], set(), [], set()
    for r in _summaries(_summary_files(rundir)):
        if r.get("error") or r.get("ignore"):
            continue
        node = r["node"]
        if r.get("build_id"):
            builds.add(r["build_id"])
        server = _server(node, manifest, r.get("fs"))
        for test, rep, part, p in r["entries"]:
            if (node, part, rep) in seen:
                continue  # a duplicate: the collector reports it, the first counts
            seen.add((node, part, rep))
            if p.get("start_at"):
                starts.append(p["start_at"])
            rows.append(_row(node, server, test, rep, part, p["status"], p["node_time_s"],
                             p["bytes"], p.get("pages"), p.get("cache_residency"),
                             p.get("rel_min"), p.get("start_at"), offsets.get(node)))
    if not rows:
        raise NotARun("%s holds no node summary with a result" % rundir)
    run = _facts(report, manifest, rundir, builds, starts)
    run.results = rows
    return run


# ---------------------------------------------------------------------------------------------
# From the collector's own figures (its in-memory collection)

def run_from_collection(collection, report, rundir):
    """The run from the figures the collector has just read: report.collect's Collection
    (groups of (test, repetition, part) with an entry per node; the nodes' facts; the
    manifest). Raises AttributeError, KeyError or TypeError where its layout differs."""
    manifest = collection.manifest
    offsets = _offsets(report)
    facts = collection.nodes
    rows, builds, starts = [], set(), []
    for (test, rep, part), g in collection.groups.items():
        for node, e in g.entries.items():
            f = facts.get(node) or {}
            if f.get("build_id"):
                builds.add(f["build_id"])
            if e.get("start_at"):
                starts.append(e["start_at"])
            rows.append(_row(node, _server(node, manifest, f.get("fs")), test, rep, part,
                             e["status"], e["node_time_s"], e["bytes"], e.get("pages"),
                             e.get("residency"), e.get("rel_min"), e.get("start_at"),
                             offsets.get(node)))
    if not rows:
        raise NotARun("%s holds no node summary with a result" % rundir)
    run = _facts(report, manifest, rundir, builds, starts)
    run.results = rows
    return run


# ---------------------------------------------------------------------------------------------
# The hook of the collector, the launcher and the cron wrapper

def default_history(rundir):
    """RESULTS/history.sqlite for a launcher's run RESULTS/<run-id>/ (it has a manifest);
    None for a directory of summaries gathered by hand."""
    if not os.path.exists(os.path.join(rundir, L.MANIFEST)):
        return None
    return os.path.join(os.path.dirname(os.path.abspath(rundir)), HISTORY)


def collected_run(rundir, report_json, collection=None):
    """The run the collector has just reported (report_json: its JSON text or dict)."""
    report = json.loads(report_json) if isinstance(report_json, str) else report_json
    if collection is not None:
        try:
            return run_from_collection(collection, report, rundir)
        except (AttributeError, KeyError, TypeError):
            pass  # another layout of the collection: read the directory instead
    return run_from_dir(rundir, report)


def record_collected(rundir, report_json, collection=None, path=None):
    """Record the run the collector has just reported into the history at path (default:
    default_history(rundir); nothing when that is None). Returns (path or None, outcome or
    None, error or None): never raises for a bad history, a bad directory or a full disk."""
    path = path or default_history(rundir)
    if path is None or not os.path.isdir(rundir):
        return None, None, None
    try:
        run = collected_run(rundir, report_json, collection)
        with histdb.open_history(path) as h:
            return path, histdb.record(h, run), None
    except (histdb.Refused, NotARun, L.UsageError, ValueError) as e:
        return path, None, str(e)
    except (OSError, histdb.sqlite3.Error) as e:
        return path, None, "%s: %s" % (path, L.errno_text(e) if isinstance(e, OSError) else e)
