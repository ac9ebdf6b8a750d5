# SPDX-License-Identifier: MIT
"""The collector's core: collect the node summaries of a results directory (read and checked
by summaries.py), and build the cluster report (text, CSV, JSON) and baselines.

Summaries are parsed in worker processes in chunks and reduced to a few numbers per node and
part as they arrive, in file-name order, so memory stays small whatever the cluster size: the
latency histograms are merged bucket by bucket at once (exactly, as util/hist.c does), and only
the thread times (8 bytes each, for the cluster-wide median) and the few slowest threads of
each node are kept.
"""
import array
import csv
import heapq
import io
import json
import multiprocessing
import os
import statistics
import time

from . import catalogue
from . import common as L
from .nodes import nodeset_fold
from .summaries import (Bad, Hist, OK_STATUSES, START_SYNC_LIMIT_S, TOP_THREADS,
                        _read_chunk, check_baseline, check_manifest, load_json, read_summary)


# ---------------------------------------------------------------------------------------------
# Collecting a directory


def _scan(paths):
    """The summary files and manifests of the given directories (and files)."""
    files, manifests, problems = [], [], []
    for p in paths:
        if os.path.isdir(p):
            try:
                # Shorter names first: of two copies of one summary, the launcher's name
                # (node1.1a.rep1.json) is kept and a longer copy's (node1.1a.rep1 (2).json)
                # is the duplicate.
                names = sorted(os.listdir(p), key=lambda n: (len(n), L.natural_key(n)))
            except OSError as e:
                raise L.UsageError("cannot list '%s': %s" % (p, e.strerror or e))
            for n in names:
                full = os.path.join(p, n)
                if n == L.MANIFEST:
                    manifests.append(full)
                elif n.endswith(".json") and n not in L.RESERVED_FILES and \
                        ".tmp." not in n and os.path.isfile(full):
                    files.append(full)
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise L.UsageError("'%s' is neither a results directory nor a summary file" % p)
    return files, manifests, problems


def _workers(n):
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    if n < 64 or cpus < 2:
        return 1
    return min(cpus, 8)


def _iter_summaries(files):
    items = [(f, L.rep_offset_from_name(os.path.basename(f))) for f in files]
    catalogue.load()  # once, before the workers are forked
    nw = _workers(len(items))
    if nw == 1:
        for path, off in items:
            yield read_summary(path, off)
        return
    size = max(8, min(256, len(items) // (nw * 8) or 1))
    chunks = [items[i:i + size] for i in range(0, len(items), size)]
    ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else multiprocessing
    with ctx.Pool(nw) as pool:
        for res in pool.imap(_read_chunk, chunks):
            for r in res:
                yield r


class Group:
    """One (test, repetition, part) across the nodes."""

    def __init__(self, test, rep, part):
        self.test, self.rep, self.part = test, rep, part
        self.entries = {}  # node -> slim entry
        self.hist = Hist()
        self.times = array.array("d")
        self.top = []  # (time, node, index, cpu)
        self.start_at = None
        self.launcher = {}  # node -> {"status", "error"} from the manifest

    def key(self):
        return (self.test, self.rep, self.part)


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


class Collection:
    def __init__(self):
        self.groups = {}
        self.nodes = {}  # node -> facts (host, dir, fs, ntp, server)
        self.invalid = []  # {"file", "reason"}
        self.ignored = []
        self.files = 0
        # (test, rep, part or None) -> {node: error}, for nodes whose summary has no result
        # of that part; (None, None, None) for a node whose summary names no test at all
        self.test_errors = {}
        self.manifest = None
        self.seen_keys = {}  # (node, test, rep, part) -> file

    def group(self, test, rep, part):
        k = (test, rep, part)
        g = self.groups.get(k)
        if g is None:
            g = self.groups[k] = Group(test, rep, part)
        return g


def collect(paths, manifest_path=None):
    """Read every summary under paths. Returns a Collection."""
    files, manifests, _ = _scan(paths)
    c = Collection()
    if manifest_path:
        manifests = [manifest_path]
    for m in manifests:
        _load_manifest(c, m)
    c.files = len(files)
    for r in _iter_summaries(files):
        if r.get("ignore"):
            c.ignored.append({"file": r["file"], "reason": r["ignore"]})
            continue
        if r.get("error"):
            c.invalid.append({"file": r["file"], "reason": r["error"]})
            continue
        _add(c, r)
    return c


def _add(c, r):
    node = r["node"]
    keys = [(node, t, rep, p["part"]) for t, rep, _part, p in r["entries"]]
    keys += [(node, t, rep, part or "*") for t, rep, _e, part in r["test_errors"]]
    for k in keys:
        if k in c.seen_keys:
            c.invalid.append({"file": r["file"], "reason": "duplicate: node %s, test %s rep %s "
                              "part %s is already in %s" % (node, k[1], k[2], k[3],
                                                            c.seen_keys[k])})
            return
    if len(set(keys)) != len(keys):
        c.invalid.append({"file": r["file"], "reason": "duplicate parts within the file"})
        return
    for k in keys:
        c.seen_keys[k] = r["file"]
    facts = c.nodes.get(node)
    if facts is None:
        c.nodes[node] = {"host": r["host"], "dir": r["dir"], "fs": r["fs"], "ntp": r["ntp"],
                         "ntp_known": r["ntp_known"], "maxerror_us": r["maxerror_us"],
                         "scale": r.get("scale")}
    else:
        facts["ntp"] = facts["ntp"] and r["ntp"]
    for test, rep, error, part in r["test_errors"]:
        c.test_errors.setdefault((test, rep, part), {})[node] = error
        if test is not None:
            for p in [part] if part else catalogue.load().tests.get(test, {}).get("parts", []):
                c.group(test, rep, p)
    for test, rep, part, p in r["entries"]:
        g = c.group(test, rep, part)
        ok = p["status"] in OK_STATUSES
        if ok:
            if p["hist"]:
                g.hist.merge(node, p["hist"])
            t = array.array("d")
            t.frombytes(p["times"])
            g.times.extend(t)
            for tt, index, cpu in p["top"]:
                item = (tt, node, index, cpu)
                if len(g.top) < TOP_THREADS:
                    heapq.heappush(g.top, item)
                elif item > g.top[0]:
                    heapq.heapreplace(g.top, item)
        if g.start_at is None:
            g.start_at = p["start_at"]
        g.entries[node] = {
            "ok": ok, "status": p["status"], "error": p["error"], "file": r["file"],
            "node_time_s": p["node_time_s"], "bytes": p["bytes"], "ops": p["ops"],
            "threads": p["threads"], "start_at": p["start_at"], "rel_min": p["rel_min"],
            "rel_max": p["rel_max"], "thread_median": p.get("thread_median"),
            "thread_max": p.get("thread_max"), "late": p["late"],
        }


def _load_manifest(c, path):
    try:
        m = load_json(path)
    except (OSError, Bad) as e:
        c.invalid.append({"file": os.path.basename(path),
                          "reason": "launcher manifest unreadable: %s" % (
                              e if isinstance(e, Bad) else L.errno_text(e))})
        return
    if not isinstance(m, dict) or m.get("schema") != L.MANIFEST_SCHEMA:
        c.invalid.append({"file": os.path.basename(path),
                          "reason": "not a launcher manifest (schema %s)" % (
                              L.safe_text(json.dumps(m.get("schema")))[:60]
                              if isinstance(m, dict) else None)})
        return
    try:
        m = check_manifest(m)
    except Bad as e:
        c.invalid.append({"file": os.path.basename(path),
                          "reason": "launcher manifest invalid: %s" % e})
        return
    except Exception as e:  # a structure no check foresaw: named and skipped, no traceback
        c.invalid.append({"file": os.path.basename(path),
                          "reason": "launcher manifest invalid: unexpected structure (%s: %s)"
                                    % (type(e).__name__, L.safe_text(e)[:200])})
        return
    c.manifest = m
    for rnd in m.get("rounds") or []:
        if not isinstance(rnd, dict) or rnd.get("kind") != "run":
            continue
        try:
            g = c.group(str(rnd["test"]), int(rnd["rep"]), str(rnd["part"]))
        except (KeyError, TypeError, ValueError):
            continue
        if g.start_at is None and isinstance(rnd.get("start_at"), (int, float)):
            g.start_at = rnd["start_at"]
        for node, res in (rnd.get("failed") or {}).items():
            if isinstance(res, dict):
                g.launcher[node] = res


# ---------------------------------------------------------------------------------------------
# The report


def _median(xs):
    return statistics.median(xs) if xs else None


def _median_sorted_array(a):
    if not a:
        return None
    s = sorted(a)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def build_report(c, expect=None, top=5, baseline=None, tolerance=0.15, require_ntp=False,
                 source=None):
    m = c.manifest or {}
    if expect is not None:
        expected = list(expect)
        expected_from = "--expect"
    elif isinstance(m.get("nodes"), list) and m.get("nodes"):
        expected = [n for n in m["nodes"] if isinstance(n, str)]
        expected_from = "the launcher's manifest"
    else:
        expected = list(c.nodes)
        expected_from = "the summaries found"
    expected_set = set(expected)
    seen = set(c.nodes)
    unexpected = sorted(seen - expected_set, key=L.natural_key)
    allnodes = sorted(expected_set | seen, key=L.natural_key)

    servers = {}
    mservers = m.get("servers") if isinstance(m.get("servers"), dict) else {}
    for n in allnodes:
        if isinstance(mservers.get(n), str):
            servers[n] = mservers[n]
        elif n in c.nodes:
            servers[n] = L.server_of(n, c.nodes[n]["fs"])
        else:
            servers[n] = "?"
    preparers = m.get("preparers") if isinstance(m.get("preparers"), dict) else {}

    parts_out = []
    tests = {}
    failed_nodes, missing_nodes, bad_sync = set(), set(), []
    for k in sorted(c.groups, key=group_sort_key):
        g = c.groups[k]
        pr = _part_report(g, c, allnodes, expected_set, servers, top)
        parts_out.append(pr)
        failed_nodes.update(f["node"] for f in pr["failed"])
        missing_nodes.update(pr["missing"])
        if pr["start_synchronized"] is False:
            bad_sync.append(pr)
        t = tests.setdefault((g.test, g.rep), {"test": g.test, "repetition": g.rep,
                                               "parts": [], "result_s": 0.0,
                                               "complete": True})
        t["parts"].append(pr["part"])
        if pr["cluster_time_s"] is None:
            t["result_s"] = None
        elif t["result_s"] is not None:
            t["result_s"] += pr["cluster_time_s"]
        if pr["nodes_failed"] or pr["nodes_missing"]:
            t["complete"] = False
    # Whole-node failures without any part (summary of a node that ran nothing).
    for (test, rep, part), errs in c.test_errors.items():
        if test is None:
            failed_nodes.update(errs)
    tests_out = sorted(tests.values(), key=lambda t: (t["repetition"], _test_order(t["test"])))

    unsynced = sorted([n for n, f in c.nodes.items() if not f["ntp"]], key=L.natural_key)
    server_list = []
    by_server = {}
    for n in allnodes:
        by_server.setdefault(servers[n], []).append(n)
    for s in sorted(by_server, key=L.natural_key):
        server_list.append({"server": s, "nodes": nodeset_fold(by_server[s]),
                            "count": len(by_server[s]), "preparer": preparers.get(s)})

    regressions = []
    if baseline is not None:
        regressions = compare_baseline(c, parts_out, baseline, tolerance)
    spreads = [p["start_spread_s"] for p in parts_out if p["start_spread_s"] is not None]
    problems = bool(failed_nodes or missing_nodes or c.invalid or regressions or bad_sync or
                    (require_ntp and unsynced))
    if not c.groups and not c.test_errors:
        problems = True
    mrun = m.get("run") if isinstance(m.get("run"), dict) else {}
    report = {
        "schema": L.REPORT_SCHEMA,
        "version": catalogue.load().version,
        "source": source,
        "run_id": m.get("run_id"),
        "launcher": m.get("launcher"),
        "scale": mrun.get("scale") or next((f["scale"] for f in c.nodes.values()
                                            if f.get("scale")), None),
        "notes": [x for x in (m.get("notes") or []) if isinstance(x, str)],
        "interrupted": m.get("interrupted"),
        "files": c.files,
        "nodes": {
            "expected": len(expected_set), "expected_from": expected_from,
            "expected_set": nodeset_fold(expected) if expected else "",
            "seen": len(seen), "failed": sorted(failed_nodes, key=L.natural_key),
            "missing": sorted(missing_nodes - failed_nodes, key=L.natural_key),
            "unexpected": unexpected,
        },
        "servers": server_list,
        "clock": {
            "unsynchronized_nodes": unsynced,
            "unknown_nodes": sorted([n for n, f in c.nodes.items() if not f["ntp_known"]],
                                    key=L.natural_key),
            "start_spread_max_s": max(spreads) if spreads else None,
            "start_synchronized": (not bad_sync) if spreads else None,
            "limit_s": START_SYNC_LIMIT_S,
        },
        "parts": parts_out,
        "tests": tests_out,
        "node_errors": [{"node": n, "error": e}
                        for n, e in sorted(c.test_errors.get((None, None, None), {}).items())],
        "invalid": c.invalid,
        "ignored": c.ignored,
        "baseline": None if baseline is None else {
            "file": baseline.get("_file"), "tolerance": tolerance,
            "created_at": baseline.get("created_at"), "run_id": baseline.get("run_id")},
        "regressions": regressions,
    }
    report["status"] = "failed" if problems else "ok"
    report["exit_code"] = L.EXIT_FAILED if problems else L.EXIT_OK
    return report


def _part_report(g, c, allnodes, expected_set, servers, top):
    ok, failed, missing = [], [], []
    terrs = dict(c.test_errors.get((g.test, g.rep, None), {}))
    terrs.update(c.test_errors.get((g.test, g.rep, g.part), {}))
    whole = c.test_errors.get((None, None, None), {})
    for n in allnodes:
        e = g.entries.get(n)
        if e is not None:
            if e["ok"]:
                ok.append(n)
            else:
                failed.append({"node": n, "status": e["status"], "error": e["error"],
                               "file": e["file"]})
            continue
        lr = g.launcher.get(n)
        if n in terrs:
            failed.append({"node": n, "status": "failed", "error": terrs[n]})
        elif lr:
            failed.append({"node": n, "status": lr.get("status") or "failed",
                           "error": lr.get("error") or "no summary"})
        elif n in whole:
            failed.append({"node": n, "status": "failed", "error": whole[n]})
        elif n in expected_set:
            missing.append(n)
    times = sorted(g.entries[n]["node_time_s"] for n in ok)
    med = _median(times)
    cluster = times[-1] if times else None
    nbytes = sum(g.entries[n]["bytes"] for n in ok)
    threads = sum(g.entries[n]["threads"] for n in ok)
    rels = [(g.entries[n]["rel_min"], g.entries[n]["rel_max"]) for n in ok
            if g.entries[n]["rel_min"] is not None]
    spread = (max(b for _a, b in rels) - min(a for a, _b in rels)) if rels else None
    first_rel = min((a for a, _b in rels), default=None)
    slowest = []
    for n in sorted(ok, key=lambda n: (-g.entries[n]["node_time_s"], L.natural_key(n)))[:top]:
        e = g.entries[n]
        slowest.append({"node": n, "node_time_s": e["node_time_s"], "server": servers.get(n),
                        "deviation": (e["node_time_s"] / med - 1.0) if med else None,
                        "release_offset_s": (e["rel_min"] - first_rel)
                        if e["rel_min"] is not None and first_rel is not None else None})
    tmed = _median_sorted_array(g.times)
    slow_threads = []
    for t, n, index, cpu in sorted(g.top, reverse=True)[:top]:
        slow_threads.append({"node": n, "thread": index, "cpu": cpu, "time_s": t,
                             "deviation": (t / tmed - 1.0) if tmed else None})
    per_server = {}
    for n in ok:
        per_server.setdefault(servers.get(n, "?"), []).append(n)
    srv = []
    for s in sorted(per_server, key=L.natural_key):
        ns = per_server[s]
        st = sorted(g.entries[n]["node_time_s"] for n in ns)
        sb = sum(g.entries[n]["bytes"] for n in ns)
        srv.append({"server": s, "nodes_ok": len(ns), "time_s": st[-1],
                    "median_s": _median(st), "bytes": sb,
                    "bandwidth_Bps": sb / st[-1] if st[-1] > 0 else None})
    late = sorted([n for n in ok if g.entries[n]["late"]], key=L.natural_key)
    return {
        "test": g.test, "repetition": g.rep, "part": g.part,
        "start_at": g.start_at,
        "nodes_expected": len(expected_set),
        "nodes_ok": len(ok), "nodes_failed": len(failed), "nodes_missing": len(missing),
        "threads": threads,
        "node_time_s": {"min": times[0] if times else None, "median": med, "max": cluster},
        "cluster_time_s": cluster,
        "bytes": nbytes,
        "bandwidth_Bps": nbytes / cluster if cluster else None,
        "latency_s": g.hist.to_json(),
        "latency_not_merged": g.hist.skipped,
        "thread_time_median_s": tmed,
        "start_spread_s": spread,
        "start_synchronized": None if spread is None else spread < START_SYNC_LIMIT_S,
        "late": late,
        "slowest": slowest,
        "slowest_threads": slow_threads,
        "servers": srv,
        "failed": failed,
        "missing": missing,
        "_node_times": {n: g.entries[n]["node_time_s"] for n in ok},
    }


# ---------------------------------------------------------------------------------------------
# Baselines


def make_baseline(report, source=None):
    parts = {}
    for p in report["parts"]:
        d = parts.setdefault(p["part"], {"cluster": [], "nodes": {}})
        # a time of 0 cannot be a baseline (nothing is slower by a fraction of it)
        if p["cluster_time_s"] is not None and p["cluster_time_s"] > 0:
            d["cluster"].append(p["cluster_time_s"])
        for n, t in p["_node_times"].items():
            if t > 0:
                d["nodes"].setdefault(n, []).append(t)
    out = {}
    for part, d in parts.items():
        out[part] = {"cluster_time_s": _median(d["cluster"]),
                     "nodes": {n: _median(ts) for n, ts in sorted(
                         d["nodes"].items(), key=lambda kv: L.natural_key(kv[0]))}}
    return {"schema": L.BASELINE_SCHEMA, "version": catalogue.load().version,
            "created_at": time.time(),
            "run_id": report.get("run_id"), "source": source, "parts": out}


def load_baseline(path):
    try:
        b = load_json(path)
    except OSError as e:
        raise L.UsageError("baseline '%s': %s" % (path, e.strerror or e))
    except Bad as e:
        raise L.UsageError("baseline '%s' is not valid: %s" % (path, e))
    if not isinstance(b, dict) or b.get("schema") != L.BASELINE_SCHEMA or \
            not isinstance(b.get("parts"), dict):
        raise L.UsageError("baseline '%s' is not a stagebench baseline (schema %s)"
                           % (path, L.BASELINE_SCHEMA))
    try:
        check_baseline(b)
    except Bad as e:
        raise L.UsageError("baseline '%s' is not valid: %s" % (path, e))
    b["_file"] = path
    return b


def compare_baseline(c, parts_out, baseline, tolerance):
    """Every node and part (and the cluster time of a part) slower than the baseline by more
    than the tolerance. Repetitions are summarized by their median, as in the baseline."""
    now = {}
    for p in parts_out:
        d = now.setdefault(p["part"], {"cluster": [], "nodes": {}})
        if p["cluster_time_s"] is not None:
            d["cluster"].append(p["cluster_time_s"])
        for n, t in p["_node_times"].items():
            d["nodes"].setdefault(n, []).append(t)
    out = []
    for part in sorted(now, key=_part_order_key):
        base = baseline["parts"].get(part)
        if not isinstance(base, dict):
            continue
        cur = now[part]
        bc = base.get("cluster_time_s")
        cc = _median(cur["cluster"])
        if isinstance(bc, (int, float)) and bc > 0 and cc is not None and \
                cc > bc * (1.0 + tolerance):
            out.append({"part": part, "node": None, "baseline_s": bc, "now_s": cc,
                        "slower_by": cc / bc - 1.0})
        bn = base.get("nodes") if isinstance(base.get("nodes"), dict) else {}
        for n in sorted(cur["nodes"], key=L.natural_key):
            b = bn.get(n)
            v = _median(cur["nodes"][n])
            if isinstance(b, (int, float)) and b > 0 and v > b * (1.0 + tolerance):
                out.append({"part": part, "node": n, "baseline_s": b, "now_s": v,
                            "slower_by": v / b - 1.0})
    return out


def _part_order_key(part):
    return (_test_order(catalogue.load().part_test.get(part, part)), _part_order(part), part)


# ---------------------------------------------------------------------------------------------
# Output


def public(report):
    """The report without internal fields, for JSON."""
    r = dict(report)
    r["parts"] = [{k: v for k, v in p.items() if not k.startswith("_")} for p in report["parts"]]
    return r


def to_json(report):
    return json.dumps(public(report), indent=1) + "\n"


CSV_FIELDS = ["test", "repetition", "part", "nodes_expected", "nodes_ok", "nodes_failed",
              "nodes_missing", "threads", "node_time_min_s", "node_time_median_s",
              "node_time_max_s", "cluster_time_s", "bytes", "bandwidth_Bps", "latency_p50_s",
              "latency_p90_s", "latency_p99_s", "latency_max_s", "start_spread_s",
              "start_synchronized", "slowest_node", "slowest_node_time_s"]


def _csv_val(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "%.9g" % v
    return str(v)


def to_csv(report):
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(CSV_FIELDS)
    for p in report["parts"]:
        lat = p["latency_s"] or {}
        sl = p["slowest"][0] if p["slowest"] else {}
        row = [p["test"], p["repetition"], p["part"], p["nodes_expected"], p["nodes_ok"],
               p["nodes_failed"], p["nodes_missing"], p["threads"], p["node_time_s"]["min"],
               p["node_time_s"]["median"], p["node_time_s"]["max"], p["cluster_time_s"],
               p["bytes"], p["bandwidth_Bps"], lat.get("p50"), lat.get("p90"), lat.get("p99"),
               lat.get("max"), p["start_spread_s"], p["start_synchronized"], sl.get("node"),
               sl.get("node_time_s")]
        out.writerow([_csv_val(v) for v in row])
    for t in report["tests"]:
        row = [t["test"], t["repetition"], "sum"] + [""] * 8 + [t["result_s"]] + [""] * 10
        out.writerow([_csv_val(v) for v in row])
    return buf.getvalue()


def _ns_list(nodes, limit=12):
    if not nodes:
        return "-"
    folded = nodeset_fold(nodes)
    if len(folded) > 160 and len(nodes) > limit:
        return "%s ... (%d nodes)" % (", ".join(nodes[:limit]), len(nodes))
    return folded


def to_text(report):
    out = []
    w = out.append
    nodes = report["nodes"]
    title = "stagebench cluster report"
    if report.get("run_id"):
        title += ": run %s" % report["run_id"]
    w(title)
    if report.get("source"):
        w("results: %s (%d summary files)" % (report["source"], report["files"]))
    lau = report.get("launcher")
    extra = []
    if isinstance(lau, dict) and lau.get("engine"):
        extra.append("launched with %s%s" % (lau["engine"], " (exec)" if lau.get("exec") else ""))
    if report.get("scale"):
        extra.append("scale %s" % report["scale"])
    w("nodes: %d expected (%s, from %s), %d with summaries%s" % (
        nodes["expected"], nodes["expected_set"] or "-", nodes["expected_from"], nodes["seen"],
        ("; " + "; ".join(extra)) if extra else ""))
    srv = report["servers"]
    w("servers: %d" % len(srv))
    for s in srv:
        w("  %-24s %3d node%s %s%s" % (s["server"], s["count"], "" if s["count"] == 1 else "s",
                                      s["nodes"], "  (preparer %s)" % s["preparer"]
                                      if s.get("preparer") else ""))
    for n in report.get("notes") or []:
        w("note: %s" % n)
    if report.get("interrupted"):
        w("note: the launcher was interrupted (%s): later parts did not run"
          % report["interrupted"])
    clk = report["clock"]
    if clk["unsynchronized_nodes"]:
        w("clock: %d node%s NOT NTP-synchronized: %s" % (
            len(clk["unsynchronized_nodes"]), "" if len(clk["unsynchronized_nodes"]) == 1
            else "s", _ns_list(clk["unsynchronized_nodes"])))
    else:
        w("clock: every node NTP-synchronized")
    w("")
    hdr = "%-4s %-4s %3s %5s %4s %4s %4s %7s  %10s %10s %10s  %10s %10s %13s %9s %9s %9s" % (
        "test", "part", "rep", "nodes", "ok", "fail", "miss", "threads", "node min",
        "median", "max", "cluster", "bytes", "bandwidth", "lat p50", "lat p99", "spread")
    w(hdr)
    for p in report["parts"]:
        lat = p["latency_s"] or {}
        nt = p["node_time_s"]
        w("%-4s %-4s %3d %5d %4d %4d %4d %7d  %10s %10s %10s  %10s %10s %13s %9s %9s %9s" % (
            p["test"], p["part"], p["repetition"], p["nodes_expected"], p["nodes_ok"],
            p["nodes_failed"], p["nodes_missing"], p["threads"], fmt(nt["min"]),
            fmt(nt["median"]), fmt(nt["max"]), fmt(p["cluster_time_s"]),
            L.fmt_bytes(p["bytes"]), L.fmt_rate(p["bandwidth_Bps"]), fmt(lat.get("p50")),
            fmt(lat.get("p99")), fmt_spread(p["start_spread_s"])))
    w("")
    w("test results (a part's cluster time is its slowest node's; a test's is the sum):")
    for t in report["tests"]:
        w("  test %-4s rep %d: %s = sum of %s%s" % (
            t["test"], t["repetition"], fmt(t["result_s"]) if t["result_s"] is not None
            else "no result", " + ".join(t["parts"]),
            "" if t["complete"] else "  (incomplete: nodes failed or missing)"))
    if any(p["slowest"] for p in report["parts"]):
        w("")
        w("slowest nodes (deviation from the part's median node time):")
        for p in report["parts"]:
            if p["slowest"]:
                w("  %-4s rep %d: %s" % (p["part"], p["repetition"], ", ".join(
                    "%s %s (%s)" % (s["node"], fmt(s["node_time_s"]), L.fmt_pct(s["deviation"]))
                    for s in p["slowest"])))
        w("slowest threads (deviation from the median thread time of all nodes):")
        for p in report["parts"]:
            if p["slowest_threads"]:
                w("  %-4s rep %d: %s" % (p["part"], p["repetition"], ", ".join(
                    "%s thread %d%s %s (%s)" % (
                        s["node"], s["thread"],
                        " CPU %d" % s["cpu"] if s["cpu"] is not None else "",
                        fmt(s["time_s"]), L.fmt_pct(s["deviation"]))
                    for s in p["slowest_threads"])))
    if len(srv) > 1 or any(len(p["servers"]) > 1 for p in report["parts"]):
        w("")
        w("per /stage server:")
        w("  %-4s %3s %-24s %5s %10s %10s %10s %13s" % ("part", "rep", "server", "nodes",
                                                          "median", "slowest", "bytes",
                                                          "bandwidth"))
        for p in report["parts"]:
            for s in p["servers"]:
                w("  %-4s %3d %-24s %5d %10s %10s %10s %13s" % (
                    p["part"], p["repetition"], s["server"][:24], s["nodes_ok"],
                    fmt(s["median_s"]), fmt(s["time_s"]), L.fmt_bytes(s["bytes"]),
                    L.fmt_rate(s["bandwidth_Bps"])))
    w("")
    lim = clk["limit_s"]
    if clk["start_synchronized"] is None:
        w("start synchronization: no part ran, nothing to judge")
    elif clk["start_synchronized"]:
        w("start synchronization: held: in every part, all threads of all nodes were "
          "released within %s (limit %g s)" % (fmt_spread(clk["start_spread_max_s"]), lim))
    else:
        bad = ["%s rep %d (%s)" % (p["part"], p["repetition"], fmt_spread(p["start_spread_s"]))
               for p in report["parts"] if p["start_synchronized"] is False]
        w("start synchronization: NOT held (limit %g s): %s" % (lim, ", ".join(bad)))
    for p in report["parts"]:
        if p["late"]:
            w("  %s rep %d started late on %s" % (p["part"], p["repetition"],
                                                  _ns_list(p["late"])))
    if clk["unsynchronized_nodes"]:
        w("  nodes whose clock is not NTP-synchronized: %s"
          % _ns_list(clk["unsynchronized_nodes"]))
    fails = [(p, f) for p in report["parts"] for f in p["failed"]]
    if fails or report["node_errors"]:
        w("")
        w("failed:")
        for n in report["node_errors"]:
            w("  %s: %s" % (n["node"], n["error"]))
        for p, f in fails:
            w("  %-4s rep %d %s: %s%s" % (p["part"], p["repetition"], f["node"],
                                          "" if f["status"] == "failed" else f["status"] + ": ",
                                          f["error"] or "failed"))
    miss = [(p, n) for p in report["parts"] for n in p["missing"]]
    if miss:
        w("")
        w("missing (expected, no summary and no error recorded):")
        by = {}
        for p, n in miss:
            by.setdefault((p["part"], p["repetition"]), []).append(n)
        for (part, rep), ns in by.items():
            w("  %-4s rep %d: %s" % (part, rep, _ns_list(ns)))
    if report["nodes"]["unexpected"]:
        w("")
        w("not expected but reported: %s" % _ns_list(report["nodes"]["unexpected"]))
    if report["invalid"]:
        w("")
        w("invalid files (skipped):")
        for f in report["invalid"]:
            w("  %s: %s" % (f["file"], f["reason"]))
    if report["baseline"]:
        b = report["baseline"]
        w("")
        if report["regressions"]:
            w("regressions against baseline %s (tolerance %.0f%%):" % (b["file"],
                                                                      b["tolerance"] * 100))
            for r in report["regressions"]:
                w("  %-4s %-12s %s -> %s (%s)" % (r["part"], r["node"] or "(cluster)",
                                                   fmt(r["baseline_s"]), fmt(r["now_s"]),
                                                   L.fmt_pct(r["slower_by"])))
        else:
            w("baseline %s: no node or part slower by more than %.0f%%" % (
                b["file"], b["tolerance"] * 100))
    w("")
    n = report["nodes"]
    if report["status"] == "ok":
        w("status: ok")
    else:
        why = []
        if n["failed"]:
            why.append("%d node%s failed" % (len(n["failed"]), "" if len(n["failed"]) == 1
                                             else "s"))
        if n["missing"]:
            why.append("%d missing" % len(n["missing"]))
        if report["invalid"]:
            why.append("%d invalid file%s" % (len(report["invalid"]),
                                              "" if len(report["invalid"]) == 1 else "s"))
        if report["regressions"]:
            why.append("%d regression%s" % (len(report["regressions"]),
                                            "" if len(report["regressions"]) == 1 else "s"))
        if clk["start_synchronized"] is False:
            why.append("start not synchronized")
        if not report["parts"] and not report["node_errors"]:
            why.append("no summary found")
        if not why and clk["unsynchronized_nodes"]:
            why.append("clocks not NTP-synchronized")
        w("status: FAILED (%s)" % ", ".join(why or ["see above"]))
    return L.safe_text("\n".join(out) + "\n")


def fmt(s):
    return L.fmt_time(s)


def fmt_spread(s):
    """Epoch seconds resolve about 0.24 us: a smaller spread is shown as such."""
    if s is None:
        return "-"
    return "< 1 us" if s < 1e-6 else L.fmt_time(s)
