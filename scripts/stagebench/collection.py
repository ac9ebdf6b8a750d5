# SPDX-License-Identifier: MIT
"""Collecting a results directory: every node summary (read and checked by summaries.py) and
the launcher's manifest, reduced per part and repetition (a Group) to what the report needs.

Summaries are parsed in worker processes in chunks and reduced to a few numbers per node and
part as they arrive, in file-name order, so memory stays small whatever the cluster size: the
latency histograms are merged bucket by bucket at once (exactly, as util/hist.c does), and only
the thread times (8 bytes each, for the cluster-wide median), the few slowest threads of each
node and one Entry per node are kept.
"""
import array
import heapq
import json
import multiprocessing
import os
import signal
import threading

from . import catalogue
from . import common
from .summaries import (Bad, Hist, OK_STATUSES, TOP_THREADS, check_manifest, load_json,
                        read_chunk, read_summary)


# ---------------------------------------------------------------------------------------------
# What is kept of a node


class NodeFacts:
    """A node's own facts, from its summaries: what must hold on all of them (a second
    summary's differing build, version or scale makes them "a, b"; NTP false if any says so)."""

    __slots__ = ("host", "dir", "fs", "ntp", "ntp_known", "maxerror_us", "scale", "schema",
                 "node_version", "build_id", "overrides", "exe_sha256", "source_sha256",
                 "describe", "dirty", "run_ids", "cores")

    def __init__(self, r):
        self.host, self.dir, self.fs = r["host"], r["dir"], r["fs"]
        self.ntp, self.ntp_known, self.maxerror_us = r["ntp"], r["ntp_known"], r["maxerror_us"]
        self.scale, self.schema = r.get("scale"), r.get("schema")
        self.node_version, self.build_id = r.get("node_version"), r.get("build_id")
        self.overrides = r.get("overrides")
        # node/3: the binary's digest and what it was built from, the run ids of its
        # invocations, and each invocation's cores (online, allowed, used, chosen by)
        self.exe_sha256, self.source_sha256 = r.get("exe_sha256"), r.get("source_sha256")
        self.describe, self.dirty = r.get("describe"), r.get("dirty")
        self.run_ids = {r["run_id"]} if r.get("run_id") else set()
        self.cores = set()
        self._add_cores(r)

    def _add_cores(self, r):
        c = r.get("cores")
        if c:
            self.cores.add((c["online"], c["allowed"], c["used"], c["chosen_by"]))

    def merge(self, r):
        """A second summary of the node (another invocation)."""
        self.ntp = self.ntp and r["ntp"]
        if r.get("run_id"):
            self.run_ids.add(r["run_id"])
        self._add_cores(r)
        both = (self.dirty, r.get("dirty"))
        self.dirty = True if True in both else None if None in both else False
        for k in ("build_id", "node_version", "scale", "exe_sha256", "source_sha256",
                  "describe"):
            mine, theirs = getattr(self, k), r.get(k)
            if mine != theirs:
                setattr(self, k, "%s, %s" % (mine, theirs) if mine and theirs else None)
        ov = r.get("overrides")
        if ov is None or self.overrides is None:
            self.overrides = None
        else:
            self.overrides = sorted(set(self.overrides) | set(ov))


class Entry:
    """One node's part: its status and the figures the report and the verdicts read."""

    __slots__ = ("ok", "status", "error", "file", "node_time_s", "bytes", "ops", "threads",
                 "start_at", "rel_min", "rel_max", "thread_median", "thread_max", "late",
                 "rel_ns", "io_ns", "late_by_s", "clock_step_s", "clock_step_total_s",
                 "step_in_wait", "residency", "residency_na", "residency_error",
                 "cache_expected", "rate_unit", "counted", "pages", "mapped_bytes",
                 "first_pass_s", "rest_pass_median_s", "origin")

    def __init__(self, r, p):
        """From a summary r (read_summary's) and its part p."""
        self.ok = p["status"] in OK_STATUSES
        self.status, self.error, self.file = p["status"], p["error"], r["file"]
        self.node_time_s, self.bytes, self.ops = p["node_time_s"], p["bytes"], p["ops"]
        self.threads, self.start_at = p["threads"], p["start_at"]
        self.rel_min, self.rel_max = p["rel_min"], p["rel_max"]
        self.thread_median, self.thread_max = p.get("thread_median"), p.get("thread_max")
        self.late = p["late"]
        self.rel_ns, self.io_ns = p.get("release_at_ns"), p.get("first_io_at_ns")
        self.late_by_s = p.get("late_by_s")
        self.clock_step_s = p.get("clock_step_s")
        self.clock_step_total_s = p.get("clock_step_total_s")
        # the node says whether it saw this part's step while waiting for the start
        self.step_in_wait = any("while waiting for the start" in w
                                for w in p.get("warnings") or [])
        self.residency = p.get("cache_residency")
        # node/2 writes no residency and no reason where there is no replica (test 4)
        self.residency_na = r.get("schema") != "stagebench.node/1" and \
            p.get("cache_residency") is None and p.get("cache_residency_error") is None and \
            p.get("cache_expected") is None
        self.residency_error = p.get("cache_residency_error")
        self.cache_expected = p.get("cache_expected")
        self.rate_unit, self.counted = p.get("rate_unit"), p.get("counted")
        self.pages, self.mapped_bytes = p.get("pages"), p.get("mapped_bytes")
        self.first_pass_s = p.get("first_pass_s")
        self.rest_pass_median_s = p.get("rest_pass_median_s")
        # node/3: (run id, repetition) the replica read was created for; None: not recorded
        self.origin = p.get("replica_origin")


class Group:
    """One (test, repetition, part) across the nodes."""

    def __init__(self, test, rep, part):
        self.test, self.rep, self.part = test, rep, part
        self.entries = {}  # node -> Entry
        self.hist = Hist()
        self.times = array.array("d")
        self.top = []  # (time, node, index, cpu)
        self.start_at = None
        self.launcher = {}  # node -> {"status", "error"} from the manifest

    def key(self):
        return (self.test, self.rep, self.part)

    def add(self, node, r, p):
        """One part of a node's summary: the figures merged (histogram, thread times, slowest
        threads) when it ran, and the node's entry."""
        e = Entry(r, p)
        if e.ok:
            if p["hist"]:
                self.hist.merge(node, p["hist"])
            t = array.array("d")
            t.frombytes(p["times"])
            self.times.extend(t)
            for tt, index, cpu in p["top"]:
                item = (tt, node, index, cpu)
                if len(self.top) < TOP_THREADS:
                    heapq.heappush(self.top, item)
                elif item > self.top[0]:
                    heapq.heapreplace(self.top, item)
        if self.start_at is None:
            self.start_at = p["start_at"]
        self.entries[node] = e


class Collection:
    """What was collected: the groups, each node's facts, the files left out, the nodes'
    errors and warnings, the manifest."""

    def __init__(self):
        self.groups = {}
        self.nodes = {}  # node -> NodeFacts
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


# ---------------------------------------------------------------------------------------------
# Reading a directory


def _scan(paths):
    """The summary files and manifests of the given directories (and files)."""
    found, manifests = [], []
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
            raise common.UsageError("'%s' is neither a results directory nor a summary file"
                                    % p)
    return found, manifests


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


def iter_summaries(paths, reader=read_chunk):
    """Each summary of paths read (read_summary's dict), in order: in worker processes (a
    chunk of files each, through reader) when there are many and this process can fork."""
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
        for res in pool.imap(reader, chunks):
            for r in res:
                yield r


def collect(paths, manifest_path=None):
    """Read every summary under paths (and the manifest). Returns a Collection."""
    found, manifests = _scan(paths)
    c = Collection()
    if manifest_path:
        manifests = [manifest_path]
    for m in manifests:
        _load_manifest(c, m)
    c.files = len(found)
    for r in iter_summaries(found):
        if r.get("ignore"):
            c.ignored.append({"file": r["file"], "reason": r["ignore"]})
            continue
        if r.get("error"):
            c.invalid.append({"file": r["file"], "reason": r["error"]})
            continue
        _add(c, r)
    return c


def _add(c, r):
    """One summary into the collection, unless one of its parts is already there."""
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
    if node in c.nodes:
        c.nodes[node].merge(r)
    else:
        c.nodes[node] = NodeFacts(r)
    _add_warnings(c, node, r)
    cat = catalogue.load()
    for test, rep, part, p in r["entries"]:
        if cat.tests.get(test, {}).get("recreate"):
            c.generations.setdefault((node, test), {}).setdefault(rep, set()).add(
                p.get("generation"))
    for test, rep, error, part in r["test_errors"]:
        c.test_errors.setdefault((test, rep, part), {})[node] = error
        if test is not None:
            for p in [part] if part else cat.tests.get(test, {}).get("parts", []):
                c.group(test, rep, p)
    for test, rep, part, p in r["entries"]:
        c.group(test, rep, part).add(node, r, p)


def _add_warnings(c, node, r):
    """The node's warnings, its parts' with their part."""
    part_warnings = {w for _t, _rep, _part, p in r["entries"] for w in p.get("warnings") or []}
    for w in r.get("warnings") or []:
        if w not in part_warnings:  # a node's list repeats its parts' warnings
            c.warnings.append({"node": node, "test": None, "repetition": None, "part": None,
                               "warning": w})
    for test, rep, part, p in r["entries"]:
        for w in p.get("warnings") or []:
            c.warnings.append({"node": node, "test": test, "repetition": rep, "part": part,
                               "warning": w})


def _load_manifest(c, path):
    """The launcher's manifest, through the door; an unusable one is named in c.invalid."""
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
