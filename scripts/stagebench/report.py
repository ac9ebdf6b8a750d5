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
import signal
import statistics
import threading
import time

from . import catalogue
from . import common
from . import verdict
from .nodes import nodeset_fold
from .summaries import (Bad, Hist, OK_STATUSES, START_SYNC_LIMIT_S, TOP_THREADS,
                        _read_chunk, check_baseline, check_manifest, load_json, read_summary)


# ---------------------------------------------------------------------------------------------
# Collecting a directory


def _scan(paths):
    """The summary files and manifests of the given directories (and files)."""
    found, manifests, problems = [], [], []
    for p in paths:
        if os.path.isdir(p):
            try:
                # Shorter names first: of two copies of one summary, the launcher's name
                # (node1.1a.rep1.json) is kept and a longer copy's (node1.1a.rep1 (2).json)
                # is the duplicate.
                names = sorted(os.listdir(p), key=lambda n: (len(n), common.natural_key(n)))
            except OSError as e:
                raise common.UsageError("cannot list '%s': %s" % (p, e.strerror or e))
            for n in names:
                full = os.path.join(p, n)
                if n == common.MANIFEST:
                    manifests.append(full)
                elif n.endswith(".json") and n not in common.RESERVED_FILES and \
                        ".tmp." not in n and os.path.isfile(full):
                    found.append(full)
        elif os.path.isfile(p):
            found.append(p)
        else:
            raise common.UsageError("'%s' is neither a results directory nor a summary file" % p)
    return found, manifests, problems


def _workers(n):
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    if n < 64 or cpus < 2:
        return 1
    return min(cpus, 8)


def _worker_signals():
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the parent's to handle


def _iter_summaries(paths):
    items = [(f, common.rep_offset_from_name(os.path.basename(f))) for f in paths]
    catalogue.load()  # once, before the workers are forked
    # forked workers only from a process with one thread: a fork copies every lock another
    # thread holds, held for ever in the child (the launcher's rounds run in threads)
    nw = _workers(len(items)) if threading.active_count() == 1 else 1
    if nw == 1:
        for path, off in items:
            yield read_summary(path, off)
        return
    size = max(8, min(256, len(items) // (nw * 8) or 1))
    chunks = [items[i:i + size] for i in range(0, len(items), size)]
    ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else multiprocessing
    # The workers must end on the pool's SIGTERM, not run the handler of the process that
    # forks them (the launcher's turns SIGTERM into "stop the nodes": a worker kept waiting
    # and the launcher waited for it for ever): forked with SIGTERM at its default.
    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, signal.SIG_DFL) if main else None
    try:
        pool = ctx.Pool(nw, initializer=_worker_signals)
    finally:
        if main:
            signal.signal(signal.SIGTERM, old)
    with pool:
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
        self.warnings = []  # {"node", "test", "repetition", "part", "warning"}, as the nodes said
        # (node, test) -> {rep: {generation}} of the tests whose replicas the spec recreates
        self.generations = {}

    def group(self, test, rep, part):
        k = (test, rep, part)
        g = self.groups.get(k)
        if g is None:
            g = self.groups[k] = Group(test, rep, part)
        return g


def collect(paths, manifest_path=None):
    """Read every summary under paths. Returns a Collection."""
    found, manifests, _ = _scan(paths)
    c = Collection()
    if manifest_path:
        manifests = [manifest_path]
    for m in manifests:
        _load_manifest(c, m)
    c.files = len(found)
    for r in _iter_summaries(found):
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
                         "scale": r.get("scale"), "schema": r.get("schema"),
                         "node_version": r.get("node_version"), "build_id": r.get("build_id"),
                         "overrides": r.get("overrides")}
    else:
        _merge_facts(facts, r)
    part_warnings = {w for _t, _rep, _part, p in r["entries"] for w in p.get("warnings") or []}
    for w in r.get("warnings") or []:
        if w not in part_warnings:  # a node's list repeats its parts' warnings
            c.warnings.append({"node": node, "test": None, "repetition": None, "part": None,
                               "warning": w})
    for test, rep, part, p in r["entries"]:
        for w in p.get("warnings") or []:
            c.warnings.append({"node": node, "test": test, "repetition": rep, "part": part,
                               "warning": w})
        if verdict.recreated(test):
            c.generations.setdefault((node, test), {}).setdefault(rep, set()).add(
                p.get("generation"))
    for test, rep, error, part in r["test_errors"]:
        c.test_errors.setdefault((test, rep, part), {})[node] = error
        if test is not None:
            for p in [part] if part else catalogue.load().tests.get(test, {}).get("parts", []):
                c.group(test, rep, p)
    for test, rep, part, p in r["entries"]:
        _add_part(c.group(test, rep, part), node, r, p)


def _add_part(g, node, r, p):
    """One part of a node's summary into its group: the figures merged (histogram, thread
    times, slowest threads) when it ran, and the node's entry."""
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
        "rel_ns": p.get("release_at_ns"), "io_ns": p.get("first_io_at_ns"),
        "late_by_s": p.get("late_by_s"), "clock_step_s": p.get("clock_step_s"),
        "clock_step_total_s": p.get("clock_step_total_s"),
        # the node says whether it saw this part's step while waiting for the start
        "step_in_wait": any("while waiting for the start" in w
                            for w in p.get("warnings") or []),
        "residency": p.get("cache_residency"),
        # node/2 writes no residency and no reason where there is no replica (test 4)
        "residency_na": r.get("schema") != "stagebench.node/1" and
        p.get("cache_residency") is None and p.get("cache_residency_error") is None and
        p.get("cache_expected") is None,
        "residency_error": p.get("cache_residency_error"),
        "cache_expected": p.get("cache_expected"), "kind": p.get("kind"),
        "pages": p.get("pages"), "mapped_bytes": p.get("mapped_bytes"),
        "first_pass_s": p.get("first_pass_s"),
        "rest_pass_median_s": p.get("rest_pass_median_s"),
    }


def _merge_facts(facts, r):
    """A second summary of one node (another invocation): what must hold on all of them."""
    facts["ntp"] = facts["ntp"] and r["ntp"]
    for k in ("build_id", "node_version", "scale"):
        if facts.get(k) != r.get(k):
            facts[k] = "%s, %s" % (facts.get(k), r.get(k)) if facts.get(k) and r.get(k) \
                else None
    ov = r.get("overrides")
    if ov is None or facts.get("overrides") is None:
        facts["overrides"] = None
    else:
        facts["overrides"] = sorted(set(facts["overrides"]) | set(ov))


def _load_manifest(c, path):
    try:
        m = load_json(path)
    except (OSError, Bad) as e:
        c.invalid.append({"file": os.path.basename(path),
                          "reason": "launcher manifest unreadable: %s" % (
                              e if isinstance(e, Bad) else common.errno_text(e))})
        return
    if not isinstance(m, dict) or m.get("schema") not in common.MANIFEST_SCHEMAS:
        c.invalid.append({"file": os.path.basename(path),
                          "reason": "not a launcher manifest (schema %s)" % (
                              common.safe_text(json.dumps(m.get("schema")))[:60]
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
                                    % (type(e).__name__, common.safe_text(e)[:200])})
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

REPORT_SCHEMA = "stagebench.report/2"


def _median(xs):
    return statistics.median(xs) if xs else None


def _median_sorted_array(a):
    if not a:
        return None
    s = sorted(a)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def _expected(c, m, expect):
    """The nodes expected, and from where: --expect, the launcher's manifest, the summaries."""
    if expect is not None:
        return list(expect), "--expect"
    if isinstance(m.get("nodes"), list) and m.get("nodes"):
        return [n for n in m["nodes"] if isinstance(n, str)], "the launcher's manifest"
    return list(c.nodes), "the summaries found"


def _servers(c, m, allnodes):
    """Each node's server: from the manifest, else from its summary's filesystem, else "?"."""
    servers = {}
    mservers = m.get("servers") if isinstance(m.get("servers"), dict) else {}
    for n in allnodes:
        if isinstance(mservers.get(n), str):
            servers[n] = mservers[n]
        elif n in c.nodes:
            servers[n] = common.server_of(n, c.nodes[n]["fs"])
        else:
            servers[n] = "?"
    return servers


def _server_list(m, allnodes, servers):
    """The report's "servers": each server's nodes, folded, and its preparer."""
    preparers = m.get("preparers") if isinstance(m.get("preparers"), dict) else {}
    server_list = []
    by_server = {}
    for n in allnodes:
        by_server.setdefault(servers[n], []).append(n)
    for s in sorted(by_server, key=common.natural_key):
        server_list.append({"server": s, "nodes": nodeset_fold(by_server[s]),
                            "count": len(by_server[s]), "preparer": preparers.get(s)})
    return server_list


def _test_add(tests, g, pr):
    """A part's report counted in its test and repetition: time summed, complete or not."""
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


def _clock_out(c, m, parts_out, unsynced, start_verdict, offsets, no_offset):
    """The report's "clock": NTP state of the nodes, the start verdict, the offsets."""
    return {
        "unsynchronized_nodes": unsynced,
        "unknown_nodes": sorted([n for n, f in c.nodes.items() if not f["ntp_known"]],
                                key=common.natural_key),
        "start_spread_max_s": max((p["start"]["spread_s"] for p in parts_out
                                   if p["start"]["spread_s"] is not None), default=None),
        "start_synchronized": {"held": True, "NOT held": False}.get(start_verdict),
        "start_verdict": start_verdict,
        "limit_s": START_SYNC_LIMIT_S,
        "offsets": _offsets_out(m, offsets, no_offset),
    }


def build_report(c, expect=None, top=5, baseline=None, tolerance=0.15, require_ntp=False,
                 source=None):
    m = c.manifest or {}
    expected, expected_from = _expected(c, m, expect)
    expected_set = set(expected)
    seen = set(c.nodes)
    unexpected = sorted(seen - expected_set, key=common.natural_key)
    allnodes = sorted(expected_set | seen, key=common.natural_key)
    servers = _servers(c, m, allnodes)

    offsets, no_offset = verdict.node_offsets(m, c.nodes)
    parts_out, tests, failed_nodes, missing_nodes, bad_sync = _parts_out(
        c, allnodes, expected_set, servers, top, offsets, no_offset)
    # Whole-node failures without any part (summary of a node that ran nothing).
    for (test, rep, part), errs in c.test_errors.items():
        if test is None:
            failed_nodes.update(errs)
    tests_out = sorted(tests.values(), key=lambda t: (t["repetition"], _test_order(t["test"])))

    unsynced = sorted([n for n, f in c.nodes.items() if not f["ntp"]], key=common.natural_key)
    server_list = _server_list(m, allnodes, servers)

    regressions = []
    if baseline is not None:
        regressions = compare_baseline(c, parts_out, baseline, tolerance)
    verdicts = [p["start"]["verdict"] for p in parts_out if p["start"]["why"] != verdict.NO_RELEASE]
    problems = bool(failed_nodes or missing_nodes or c.invalid or regressions or bad_sync or
                    (require_ntp and unsynced))
    if not c.groups and not c.test_errors:
        problems = True
    start_verdict = None if not verdicts else "NOT held" if "NOT held" in verdicts \
        else "cannot tell" if "cannot tell" in verdicts else "held"
    mrun = m.get("run") if isinstance(m.get("run"), dict) else {}
    report = {
        "schema": REPORT_SCHEMA,
        "version": catalogue.load().version,
        "source": source,
        "run_id": m.get("run_id"),
        "launcher": m.get("launcher"),
        "scale": mrun.get("scale") or next((f["scale"] for f in c.nodes.values()
                                            if f.get("scale")), None),
        "notes": [x for x in (m.get("notes") or []) if isinstance(x, str)],
        "launcher_warnings": [common.safe_text(x) for x in (m.get("warnings") or [])
                              if isinstance(x, str)][:50],
        "interrupted": m.get("interrupted"),
        "files": c.files,
        "nodes": {
            "expected": len(expected_set), "expected_from": expected_from,
            "expected_set": nodeset_fold(expected) if expected else "",
            "seen": len(seen), "failed": sorted(failed_nodes, key=common.natural_key),
            "missing": sorted(missing_nodes - failed_nodes, key=common.natural_key),
            "unexpected": unexpected,
        },
        "servers": server_list,
        "clock": _clock_out(c, m, parts_out, unsynced, start_verdict, offsets, no_offset),
        "warnings": _fold_warnings(c.warnings),
        "launcher_build": m.get("launcher_build") if isinstance(m.get("launcher_build"), str)
        else None,
        "server_drop": verdict.server_drop(m, parts_out),
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
    report["validity"] = verdict.validity(report, c, c.generations)
    report["status"] = "failed" if problems else "ok"
    report["exit_code"] = common.EXIT_FAILED if problems else common.EXIT_OK
    return report


def _parts_out(c, allnodes, expected_set, servers, top, offsets, no_offset):
    """Every part's report with its start verdict, in the report's order; each counted in its
    test; the nodes that failed or are missing in any part, and the parts whose start was NOT
    held."""
    parts_out = []
    tests = {}
    failed_nodes, missing_nodes, bad_sync = set(), set(), []
    for k in sorted(c.groups, key=group_sort_key):
        g = c.groups[k]
        pr = _part_report(g, c, allnodes, expected_set, servers, top)
        pr["start"] = verdict.start_verdict(g.entries, offsets, no_offset)
        pr["start_synchronized"] = {"held": True, "NOT held": False}.get(
            pr["start"]["verdict"])
        parts_out.append(pr)
        failed_nodes.update(f["node"] for f in pr["failed"])
        missing_nodes.update(pr["missing"])
        if pr["start_synchronized"] is False:
            bad_sync.append(pr)
        _test_add(tests, g, pr)
    return parts_out, tests, failed_nodes, missing_nodes, bad_sync


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
            e = by[k] = {"test": x["test"], "repetition": x["repetition"], "part": x["part"],
                         "warning": x["warning"], "nodes": []}
        e["nodes"].append(x["node"])
    out = [by[k] for k in sorted(by)]
    for e in out:
        e["nodes"].sort(key=common.natural_key)
    return out


def _offsets_out(m, offsets, no_offset):
    """The clock offsets the verdicts used, per node, and where they came from."""
    clock = m.get("clock") if isinstance(m.get("clock"), dict) else None
    return {"source": "launcher manifest" if clock is not None else "NTP maxerror of each node"
            if offsets else None,
            "method": clock.get("method") if clock else None,
            "samples": clock.get("samples") if clock else None,
            "nodes": {n: offsets[n] for n in sorted(offsets, key=common.natural_key)},
            "unknown": {n: no_offset[n] for n in sorted(no_offset, key=common.natural_key)}}


def _part_report(g, c, allnodes, expected_set, servers, top):
    """One part and repetition across the nodes: who ran it, failed or is missing, the node
    and cluster times, bytes and rate, latency, the start spread, the slowest nodes and
    threads, the results per server."""
    ok, failed, missing = _part_nodes(g, c, allnodes, expected_set)
    times = sorted(g.entries[n]["node_time_s"] for n in ok)
    cluster = times[-1] if times else None
    res = verdict.residency(g.entries, ok)
    # A node that read from its own cache is left out of the blame: its time does not make
    # the median that the others are judged against, and it is not listed as slow.
    warm = set(res["warm_nodes"])
    judged = [n for n in ok if n not in warm]
    med = _median(sorted(g.entries[n]["node_time_s"] for n in judged))
    nbytes = sum(g.entries[n]["bytes"] for n in ok)
    threads = sum(g.entries[n]["threads"] for n in ok)
    rels = [(g.entries[n]["rel_min"], g.entries[n]["rel_max"]) for n in ok
            if g.entries[n]["rel_min"] is not None]
    spread = (max(b for _a, b in rels) - min(a for a, _b in rels)) if rels else None
    first_rel = min((a for a, _b in rels), default=None)
    tmed = _median_sorted_array(g.times)
    late = sorted([n for n in ok if g.entries[n]["late"]], key=common.natural_key)
    rate = _rate(g, ok, nbytes, cluster)
    return {
        "test": g.test, "repetition": g.rep, "part": g.part,
        "start_at": g.start_at,
        "nodes_expected": len(expected_set),
        "nodes_ok": len(ok), "nodes_failed": len(failed), "nodes_missing": len(missing),
        "threads": threads,
        "node_time_s": {"min": times[0] if times else None, "median": med, "max": cluster},
        "cluster_time_s": cluster,
        "bytes": nbytes,
        "bandwidth_Bps": None if rate["unit"] == "pages/s" else rate["value"],
        "rate": rate,
        "residency": res,
        "first_pass": _first_pass(g, ok),
        "latency_s": g.hist.to_json(),
        "latency_not_merged": g.hist.skipped,
        "thread_time_median_s": tmed,
        "start_spread_s": spread,
        "start_synchronized": None if spread is None else spread < START_SYNC_LIMIT_S,
        "late": late,
        "slowest": _slowest_nodes(g, judged, med, first_rel, servers, top),
        "slowest_threads": _slowest_threads(g, tmed, top),
        "servers": _part_servers(g, ok, servers),
        "failed": failed,
        "missing": missing,
        "_node_times": {n: g.entries[n]["node_time_s"] for n in ok},
    }


def _part_nodes(g, c, allnodes, expected_set):
    """Every node of the run in the part: ok (its names), failed ({"node", "status", "error"}
    from its summary, a test error of its summary, the launcher, or its summary that ran
    nothing) or missing (expected, nothing known)."""
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
    return ok, failed, missing


def _slowest_nodes(g, judged, med, first_rel, servers, top):
    """The top slowest of the judged nodes, with their deviation from the median node time
    and their release after the first node's."""
    slowest = []
    for n in sorted(judged, key=lambda n: (-g.entries[n]["node_time_s"], common.natural_key(n)))[:top]:
        e = g.entries[n]
        slowest.append({"node": n, "node_time_s": e["node_time_s"], "server": servers.get(n),
                        "deviation": (e["node_time_s"] / med - 1.0) if med else None,
                        "release_offset_s": (e["rel_min"] - first_rel)
                        if e["rel_min"] is not None and first_rel is not None else None})
    return slowest


def _slowest_threads(g, tmed, top):
    """The top slowest threads of all nodes, with their deviation from the median thread."""
    return [{"node": n, "thread": index, "cpu": cpu, "time_s": t,
             "deviation": (t / tmed - 1.0) if tmed else None}
            for t, n, index, cpu in sorted(g.top, reverse=True)[:top]]


def _part_servers(g, ok, servers):
    """The part per /stage server: its nodes that ran it, their times, bytes and rate."""
    per_server = {}
    for n in ok:
        per_server.setdefault(servers.get(n, "?"), []).append(n)
    srv = []
    for s in sorted(per_server, key=common.natural_key):
        ns = per_server[s]
        st = sorted(g.entries[n]["node_time_s"] for n in ns)
        sb = sum(g.entries[n]["bytes"] for n in ns)
        srate = _rate(g, ns, sb, st[-1])
        srv.append({"server": s, "nodes_ok": len(ns), "time_s": st[-1],
                    "median_s": _median(st), "bytes": sb,
                    "bandwidth_Bps": None if srate["unit"] == "pages/s" else srate["value"],
                    "rate": srate})
    return srv


def _rate(g, ok, nbytes, cluster):
    """The part's aggregate rate over the cluster time, with its unit and what was counted:
    1b (mmaptouch) touches one byte a page, so its rate is pages touched per second and the
    bytes it mapped are named so, never a bandwidth."""
    kind = next((g.entries[n]["kind"] for n in ok if g.entries[n]["kind"]), None) or \
        catalogue.load().parts.get(g.part, {}).get("kind")
    per_s = (lambda x: x / cluster if cluster and x is not None else None)
    if kind == "mmaptouch":
        pages = [g.entries[n]["pages"] for n in ok]
        mapped = [g.entries[n]["mapped_bytes"] for n in ok]
        npages = sum(pages) if pages and None not in pages else None
        nmapped = sum(mapped) if mapped and None not in mapped else nbytes
        return {"value": per_s(npages), "unit": "pages/s", "counted": "pages touched",
                "pages": npages, "mapped_bytes": nmapped, "mapped_Bps": per_s(nmapped)}
    counted = "bytes written" if kind and "write" in kind else "bytes read"
    return {"value": per_s(nbytes), "unit": "B/s", "counted": counted}


def _first_pass(g, ok):
    """1a: each node's first pass (from the server) apart from its other passes (from its own
    cache): the cluster's slowest first pass and the median of the nodes' other passes."""
    fp = [g.entries[n]["first_pass_s"] for n in ok if g.entries[n]["first_pass_s"]]
    rest = [g.entries[n]["rest_pass_median_s"] for n in ok if g.entries[n]["rest_pass_median_s"]]
    if not fp:
        return None
    return {"first_pass_max_s": max(x["max"] for x in fp),
            "first_pass_median_s": _median([x["median"] for x in fp]),
            "rest_pass_median_s": _median([x["median"] for x in rest]) if rest else None,
            "nodes": len(fp)}


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
                         d["nodes"].items(), key=lambda kv: common.natural_key(kv[0]))}}
    return {"schema": common.BASELINE_SCHEMA, "version": catalogue.load().version,
            "created_at": time.time(),
            "run_id": report.get("run_id"), "source": source, "parts": out}


def load_baseline(path):
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
        for n in sorted(cur["nodes"], key=common.natural_key):
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
              "start_synchronized", "slowest_node", "slowest_node_time_s",
              # what the rate counted, with its unit (1b: pages touched per second, its
              # bandwidth_Bps empty), 1a's first pass apart, the start verdict from true
              # instants, and the residency at release across nodes
              "rate", "rate_unit", "rate_counted", "pages_per_s", "mapped_Bps",
              "first_pass_max_s", "rest_pass_median_s", "start_verdict", "start_true_spread_s",
              "start_uncertainty_s", "io_start_spread_s", "residency_min", "residency_median",
              "residency_max", "residency_unknown_nodes", "warm_nodes"]


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
        rate, fp, st, res = p["rate"], p["first_pass"] or {}, p["start"], p["residency"]
        pages = rate["unit"] == "pages/s"
        row += [rate["value"], rate["unit"], rate["counted"], rate["value"] if pages else None,
                rate.get("mapped_Bps"), fp.get("first_pass_max_s"), fp.get("rest_pass_median_s"),
                st["verdict"], st["spread_s"], st["uncertainty_s"], st["io_spread_s"],
                res["min"], res["median"], res["max"], " ".join(res["unknown"]),
                " ".join(res["warm_nodes"])]
        out.writerow([_csv_val(v) for v in row])
    for t in report["tests"]:
        row = [t["test"], t["repetition"], "sum"] + [""] * 8 + [t["result_s"]]
        row += [""] * (len(CSV_FIELDS) - len(row))
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


def _text_head(w, report):
    """The run, its nodes and servers, the notes and the launcher's warnings, the clocks."""
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
    for x in report.get("launcher_warnings") or []:
        w("warning: %s" % x)
    if report.get("interrupted"):
        w("note: the launcher was interrupted (%s): later parts did not run"
          % report["interrupted"])
    clk = report["clock"]
    if not report["nodes"]["seen"]:
        w("clock: no usable summary: nothing is known of the nodes' clocks")
    elif clk["unsynchronized_nodes"]:
        w("clock: %d node%s NOT NTP-synchronized: %s" % (
            len(clk["unsynchronized_nodes"]), "" if len(clk["unsynchronized_nodes"]) == 1
            else "s", _ns_list(clk["unsynchronized_nodes"])))
    else:
        w("clock: every node NTP-synchronized")


def _text_parts(w, report):
    """The table: one row per part and repetition."""
    w("")
    hdr = "%-4s %-4s %3s %5s %4s %4s %4s %7s  %10s %10s %10s  %10s %10s %16s %9s %9s %-8s" % (
        "test", "part", "rep", "nodes", "ok", "fail", "miss", "threads", "node min",
        "median", "max", "cluster", "bytes", "rate", "lat p50", "lat p99", "start")
    w(hdr)
    for p in report["parts"]:
        lat = p["latency_s"] or {}
        nt = p["node_time_s"]
        w("%-4s %-4s %3d %5d %4d %4d %4d %7d  %10s %10s %10s  %10s %10s %16s %9s %9s %-8s" % (
            p["test"], p["part"], p["repetition"], p["nodes_expected"], p["nodes_ok"],
            p["nodes_failed"], p["nodes_missing"], p["threads"], fmt(nt["min"]),
            fmt(nt["median"]), fmt(nt["max"]), fmt(p["cluster_time_s"]),
            common.fmt_bytes(p["bytes"]), fmt_rate(p["rate"]), fmt(lat.get("p50")),
            fmt(lat.get("p99")), _START_SHORT.get(p["start"]["verdict"], "?")))


def _text_tests(w, report):
    w("")
    w("test results (a part's cluster time is its slowest node's; a test's is the sum):")
    for t in report["tests"]:
        w("  test %-4s rep %d: %s = sum of %s%s" % (
            t["test"], t["repetition"], fmt(t["result_s"]) if t["result_s"] is not None
            else "no result", " + ".join(t["parts"]),
            "" if t["complete"] else "  (incomplete: nodes failed or missing)"))


def _text_slowest(w, report):
    """The slowest nodes and threads of each part."""
    if not any(p["slowest"] for p in report["parts"]):
        return
    w("")
    w("slowest nodes (deviation from the part's median node time):")
    for p in report["parts"]:
        if p["slowest"]:
            w("  %-4s rep %d: %s" % (p["part"], p["repetition"], ", ".join(
                "%s %s (%s)" % (s["node"], fmt(s["node_time_s"]), common.fmt_pct(s["deviation"]))
                for s in p["slowest"])))
    w("slowest threads (deviation from the median thread time of all nodes):")
    for p in report["parts"]:
        if p["slowest_threads"]:
            w("  %-4s rep %d: %s" % (p["part"], p["repetition"], ", ".join(
                "%s thread %d%s %s (%s)" % (
                    s["node"], s["thread"],
                    " CPU %d" % s["cpu"] if s["cpu"] is not None else "",
                    fmt(s["time_s"]), common.fmt_pct(s["deviation"]))
                for s in p["slowest_threads"])))


def _text_servers(w, report):
    """Each part per /stage server, when there are several."""
    if not (len(report["servers"]) > 1 or any(len(p["servers"]) > 1 for p in report["parts"])):
        return
    w("")
    w("per /stage server:")
    w("  %-4s %3s %-24s %5s %10s %10s %10s %16s" % ("part", "rep", "server", "nodes",
                                                      "median", "slowest", "bytes",
                                                      "rate"))
    for p in report["parts"]:
        for s in p["servers"]:
            w("  %-4s %3d %-24s %5d %10s %10s %10s %16s" % (
                p["part"], p["repetition"], s["server"][:24], s["nodes_ok"],
                fmt(s["median_s"]), fmt(s["time_s"]), common.fmt_bytes(s["bytes"]),
                fmt_rate(s["rate"])))


def _text_late(w, report):
    """Below the start verdict: the nodes that started late, and those without NTP."""
    for p in report["parts"]:
        if p["late"]:
            w("  %s rep %d started late on %s" % (p["part"], p["repetition"],
                                                  _ns_list(p["late"])))
    if report["clock"]["unsynchronized_nodes"]:
        w("  nodes whose clock is not NTP-synchronized: %s"
          % _ns_list(report["clock"]["unsynchronized_nodes"]))


def _text_failed(w, report):
    """Every node that failed: whole nodes first, then per part."""
    fails = [(p, f) for p in report["parts"] for f in p["failed"]]
    if not (fails or report["node_errors"]):
        return
    w("")
    w("failed:")
    for n in report["node_errors"]:
        w("  %s: %s" % (n["node"], n["error"]))
    for p, f in fails:
        w("  %-4s rep %d %s: %s%s" % (p["part"], p["repetition"], f["node"],
                                      "" if f["status"] == "failed" else f["status"] + ": ",
                                      f["error"] or "failed"))


def _text_missing(w, report):
    """The nodes expected that said nothing, per part; the nodes that reported unexpected."""
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


def _text_invalid(w, report):
    if report["invalid"]:
        w("")
        w("invalid files (skipped):")
        for f in report["invalid"]:
            w("  %s: %s" % (f["file"], f["reason"]))


def _text_baseline(w, report):
    """The regressions against --baseline, or that there are none."""
    b = report["baseline"]
    if not b:
        return
    w("")
    if report["regressions"]:
        w("regressions against baseline %s (tolerance %.0f%%):" % (b["file"],
                                                                  b["tolerance"] * 100))
        for r in report["regressions"]:
            w("  %-4s %-12s %s -> %s (%s)" % (r["part"], r["node"] or "(cluster)",
                                               fmt(r["baseline_s"]), fmt(r["now_s"]),
                                               common.fmt_pct(r["slower_by"])))
    else:
        w("baseline %s: no node or part slower by more than %.0f%%" % (
            b["file"], b["tolerance"] * 100))


def _text_status(w, report):
    """The last line: ok, or FAILED with every reason."""
    w("")
    if report["status"] == "ok":
        w("status: ok")
        return
    n = report["nodes"]
    clk = report["clock"]
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
    if clk["start_verdict"] == "NOT held":
        why.append("start not synchronized")
    if not report["parts"] and not report["node_errors"]:
        why.append("no summary found")
    if not why and clk["unsynchronized_nodes"]:
        why.append("clocks not NTP-synchronized")
    w("status: FAILED (%s)" % ", ".join(why or ["see above"]))


_START_SHORT = {"held": "held", "NOT held": "NOT held", "cannot tell": "?"}


def _text_offsets(w, report):
    off = report["clock"]["offsets"]
    if off["nodes"]:
        big = max(off["nodes"].items(), key=lambda kv: abs(kv[1]["offset_s"]))
        unc = max(o["uncertainty_s"] for o in off["nodes"].values())
        w("clock offsets (%s%s): %d node%s, largest %s %s, uncertainty at most %s" % (
            off["source"], ", %s" % off["method"] if off["method"] else "", len(off["nodes"]),
            "" if len(off["nodes"]) == 1 else "s", big[0], verdict.fmt_signed(big[1]["offset_s"]),
            fmt(unc)))
        drift = [(n, o["drift_s"]) for n, o in off["nodes"].items() if o["drift_s"]]
        if drift:
            n, d = max(drift, key=lambda x: abs(x[1]))
            w("  drift from the first measurement to the last: largest %s %s" % (
                n, verdict.fmt_signed(d)))
    if off["unknown"] and report["nodes"]["seen"]:
        ns = list(off["unknown"])
        w("clock offsets unknown: %s (%s)" % (_ns_list(ns), off["unknown"][ns[0]]))


def _text_rates(w, report):
    pages = [p for p in report["parts"] if p["rate"]["unit"] == "pages/s"]
    w("rate: what was counted per second of the part's cluster time: bytes read or written; "
      "1b: pages touched")
    for p in pages:
        r = p["rate"]
        w("  %-4s rep %d: %s pages touched (one byte a page) of %s mapped: %s, %s mapped" % (
            p["part"], p["repetition"], r["pages"] if r["pages"] is not None else "?",
            common.fmt_bytes(r["mapped_bytes"]), fmt_rate(r), common.fmt_rate(r["mapped_Bps"])))
    for p in report["parts"]:
        fp = p.get("first_pass")
        if fp:
            w("  %-4s rep %d: first pass (from the server) %s at most, median %s; other passes "
              "(from the node's cache) median %s" % (
                  p["part"], p["repetition"], fmt(fp["first_pass_max_s"]),
                  fmt(fp["first_pass_median_s"]), fmt(fp["rest_pass_median_s"])))


def _text_residency(w, report):
    rows = [p for p in report["parts"] if p["nodes_ok"] and p["residency"]["applicable"]]
    if not rows:
        return
    w("")
    w("cache residency at release (the node's own cache of the replica; cold expected but for "
      "test 4):")
    for p in rows:
        r = p["residency"]
        if r["min"] is None:
            line = "unknown on every node"
        else:
            line = "min %s, median %s, max %s" % (fmt_frac(r["min"]), fmt_frac(r["median"]),
                                                  fmt_frac(r["max"]))
            if r["unknown"]:
                line += "; unknown on %s" % _ns_list(r["unknown"])
        if r["warm_nodes"]:
            line += "; read from its own cache: %s (left out of the slowest nodes)" % _ns_list(
                r["warm_nodes"])
        w("  %-4s rep %d: %s" % (p["part"], p["repetition"], line))


def _text_start(w, report):
    """The verdict line, then every part that did not hold with the nodes named: the lines
    below say the same as the verdict."""
    w("")
    clk = report["clock"]
    lim = clk["limit_s"]
    v = clk["start_verdict"]
    parts = [p for p in report["parts"] if p["start"]["why"] != verdict.NO_RELEASE]
    if v is None:
        w("start synchronization: no part ran, nothing to judge")
        return
    basis = "true release instants: each node's own minus its clock offset"
    if v == "held":
        w("start synchronization: held in every part (%s; limit %g s): spread at most %s" % (
            basis, lim, fmt_pm(max(p["start"]["spread_s"] for p in parts),
                               max(p["start"]["uncertainty_s"] for p in parts))))
        return
    bad = [p for p in parts if p["start"]["verdict"] == "NOT held"]
    unsure = [p for p in parts if p["start"]["verdict"] == "cannot tell"]
    held = len(parts) - len(bad) - len(unsure)
    w("start synchronization: %s (%s; limit %g s): NOT held in %d part%s, cannot tell in %d, "
      "held in %d" % (v, basis, lim, len(bad), "" if len(bad) == 1 else "s", len(unsure), held))
    for p in bad + unsure:
        st = p["start"]
        w("  %-4s rep %d: %s%s%s" % (
            p["part"], p["repetition"], st["verdict"],
            ": spread %s" % fmt_pm(st["spread_s"], st["uncertainty_s"])
            if st["spread_s"] is not None else "", ": %s" % st["why"] if st["why"] else ""))
        # nodes without an offset are named in the part's why; the others with their amount
        out = [o for o in st["nodes_out"] if o["by_s"] is not None]
        for o in out[:20]:
            w("      %s %s: %s" % (o["node"], verdict.fmt_signed(o["by_s"]), o["why"]))
        if len(out) > 20:
            w("      ... %d more nodes" % (len(out) - 20))


def _text_warnings(w, report):
    ws = report["warnings"]
    if not ws:
        return
    w("")
    w("warnings from the nodes:")
    for x in ws[:50]:
        where = "%s rep %s " % (x["part"], x["repetition"]) if x["part"] else ""
        w("  %s%s: %s" % (where, _ns_list(x["nodes"]), x["warning"]))
    if len(ws) > 50:
        w("  ... %d more" % (len(ws) - 50))


def _text_validity(w, report):
    va = report["validity"]
    sd = report["server_drop"]
    w("")
    w("server cache drop before test 3: %s%s" % (
        sd["evidence"], " (%s)" % sd["command"] if sd["command"] else ""))
    w("")
    w("validity as a spec run: %s%s" % (va["verdict"], " (%s)" % va["not_spec_run"]
                                        if va["not_spec_run"] else ""))
    for r in va["rules"]:
        w("  [%s] %s: %s" % ({True: "ok", False: "NO", None: "--"}[r["ok"]], r["rule"],
                            r["evidence"]))
    if va["not_spec_run"]:
        w("  (a measurement, not a spec run: this alone does not change the exit status)")


def fmt(s):
    return common.fmt_time(s)


def fmt_pm(s, u):
    return "%s +/- %s" % (fmt_spread(s), fmt(u) if u else "0")


def fmt_frac(x):
    return "-" if x is None else "%.0f%%" % (x * 100.0)


def fmt_rate(rate):
    """A part's rate with its unit: bytes per second, or pages per second for 1b."""
    v = rate.get("value") if rate else None
    if v is None:
        return "-"
    if rate["unit"] == "pages/s":
        for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if v >= div:
                return "%.2f %s pages/s" % (v / div, unit)
        return "%.0f pages/s" % v
    return common.fmt_rate(v)


def fmt_spread(s):
    """Epoch seconds resolve about 0.24 us: a smaller spread is shown as such."""
    if s is None:
        return "-"
    return "< 1 us" if s < 1e-6 else common.fmt_time(s)
