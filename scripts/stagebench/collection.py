# SPDX-License-Identifier: MIT
"""Collecting a results directory: every node summary (read and checked by summaries.py) and
the launcher's manifest, reduced per part and repetition (a Group) to what the report needs.

Summaries are read and checked in worker processes, a chunk of files each, and reduced there:
each file to one record (the node's facts, warnings and one Entry per part: a few numbers),
each chunk's parts to what they add to their Group (the latency histograms merged bucket by
bucket, exactly as util/hist.c does; the thread times, 8 bytes each, for the cluster-wide
median; the few slowest threads). This process applies the records in file-name order (which
copy of a node's part is a duplicate is decided here, as for one file at a time) and merges
the chunks' sums, so memory stays small and the work is the workers' whatever the cluster size.
"""
import array
import bisect
import collections
import heapq
import json
import math
import multiprocessing
import operator
import os
import signal
import statistics
import sys
import threading

from . import catalogue
from . import common
from . import scan
from .summaries import (Bad, Hist, MAX_BUCKETS, OK_STATUSES, TOP_THREADS, UINT64_MAX,
                        check_manifest, load_json, read_summary)


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


_ENTRY_FIELDS = ("ok", "status", "error", "file", "node_time_s", "bytes", "ops", "threads",
                 "start_at", "rel_min", "rel_max", "thread_median", "thread_max", "late",
                 "rel_ns", "io_ns", "late_by_s", "clock_step_s", "clock_step_total_s",
                 "step_in_wait", "residency", "residency_na", "residency_error",
                 "cache_expected", "rate_unit", "counted", "pages", "mapped_bytes",
                 "first_pass_s", "rest_pass_median_s", "origin")


class Entry(collections.namedtuple("Entry", _ENTRY_FIELDS)):
    """One node's part: its status and the figures the report and the verdicts read (a
    tuple: made in a worker, it crosses to the collector as one)."""

    __slots__ = ()


def entry_of(r, p):
    """The Entry of a summary r (read_summary's) and its part p."""
    return Entry(
        ok=p["status"] in OK_STATUSES, status=p["status"], error=p["error"], file=r["file"],
        node_time_s=p["node_time_s"], bytes=p["bytes"], ops=p["ops"], threads=p["threads"],
        start_at=p["start_at"], rel_min=p["rel_min"], rel_max=p["rel_max"],
        thread_median=p.get("thread_median"), thread_max=p.get("thread_max"), late=p["late"],
        rel_ns=p.get("release_at_ns"), io_ns=p.get("first_io_at_ns"),
        late_by_s=p.get("late_by_s"), clock_step_s=p.get("clock_step_s"),
        clock_step_total_s=p.get("clock_step_total_s"),
        # the node says whether it saw this part's step while waiting for the start
        step_in_wait=any("while waiting for the start" in w for w in p.get("warnings") or []),
        residency=p.get("cache_residency"),
        # node/2 writes no residency and no reason where there is no replica (test 4)
        residency_na=r.get("schema") != "stagebench.node/1" and
        p.get("cache_residency") is None and p.get("cache_residency_error") is None and
        p.get("cache_expected") is None,
        residency_error=p.get("cache_residency_error"), cache_expected=p.get("cache_expected"),
        rate_unit=p.get("rate_unit"), counted=p.get("counted"), pages=p.get("pages"),
        mapped_bytes=p.get("mapped_bytes"), first_pass_s=p.get("first_pass_s"),
        rest_pass_median_s=p.get("rest_pass_median_s"),
        # node/3: (run id, repetition) the replica read was created for; None: not recorded
        origin=p.get("replica_origin"))


class Group:
    """One (test, repetition, part) across the nodes."""

    def __init__(self, test, rep, part):
        self.test, self.rep, self.part = test, rep, part
        self.entries = {}  # node -> Entry
        self.hist = Hist()
        # the thread times of the nodes that ran it: one array a chunk, sorted (where it holds
        # a -0.0, each node's sorted in file order, equal ones as they came: see thread_median)
        self.runs = []
        self.unsorted = False
        self.top = []  # (time, node, index, cpu)
        self.start_at = None
        self.launcher = {}  # node -> {"status", "error"} from the manifest

    def key(self):
        return (self.test, self.rep, self.part)

    def add(self, node, e):
        """A node's entry (its figures are a chunk's sums: merge)."""
        if self.start_at is None:
            self.start_at = e.start_at
        self.entries[node] = e

    def merge(self, sums):
        """What a chunk's nodes that ran the part add (Sums.export's): their histograms, thread
        times and slowest threads."""
        order, hists, times, times_sorted, top = sums
        self.hist.merge_sums(order, hists)
        if times:
            run = array.array("d")
            run.frombytes(times)
            self.runs.append(run)
            self.unsorted = self.unsorted or not times_sorted
        for item in top:
            _keep_top(self.top, item)

    def thread_median(self):
        """The median of every thread time (None without one), as the median of them all
        sorted in file order would be: the k-th smallest found in the sorted runs. A -0.0,
        which equals 0.0, would make which of the two stands at k depend on the order, so
        then they are sorted as one, in file order (each node's times come sorted, equal ones
        in their order: sorting them again keeps that order)."""
        n = sum(map(len, self.runs))
        if not n:
            return None
        if self.unsorted:
            return statistics.median([x for run in self.runs for x in run])
        if n % 2:
            return _kth(self.runs, n // 2)
        return (_kth(self.runs, n // 2 - 1) + _kth(self.runs, n // 2)) / 2.0


def _kth(runs, k):
    """The k-th smallest (0 first) of the values of the sorted arrays runs: each step counts,
    by bisection, the values below and up to a pivot (the median of the runs' middle values,
    weighted by what is left of each run), which leaves at least a quarter of what is left on
    the side k is not."""
    lo = [0] * len(runs)
    hi = [len(r) for r in runs]
    while True:
        left = [(runs[i][(lo[i] + hi[i]) // 2], hi[i] - lo[i]) for i in range(len(runs))
                if hi[i] > lo[i]]
        left.sort()
        half, acc = sum(w for _v, w in left) / 2.0, 0
        for pivot, w in left:
            acc += w
            if acc >= half:
                break
        below = [bisect.bisect_left(r, pivot, lo[i], hi[i]) for i, r in enumerate(runs)]
        upto = [bisect.bisect_right(r, pivot, lo[i], hi[i]) for i, r in enumerate(runs)]
        nbelow = sum(b - l for b, l in zip(below, lo))
        nupto = sum(u - l for u, l in zip(upto, lo))
        if k < nbelow:
            hi = below
        elif k < nupto:
            return pivot
        else:
            k -= nupto
            lo = upto


def _keep_top(heap, item):
    """item (thread time, node, index, cpu) into the heap of the TOP_THREADS slowest; False
    when it is left out."""
    if len(heap) < TOP_THREADS:
        heapq.heappush(heap, item)
    elif item > heap[0]:
        heapq.heapreplace(heap, item)
    else:
        return False
    return True


# A histogram's counts in a chunk are summed as one integer a scheme: 128 bits a bucket (a sum
# of 256 counts below 2**63 needs 71), the first bucket the least significant, so that adding a
# node's histogram is one addition in C instead of one a bucket.
_WIDE = 128
_NATIVE_BIG = sys.byteorder == "big"


def _wide(idx, cnt):
    """(the first bucket, the counts as one integer of _WIDE bits a bucket from it) of a
    histogram's buckets (idx, cnt: indexes and counts, at least one; arrays of int64 as the
    readers make them, or any sequences)."""
    n = len(idx)
    lo = idx[0]
    arrays = type(idx) is array.array and type(cnt) is array.array
    if arrays:
        # indexes that follow one another (a busy node's) are a slice of 0, 1, 2, ...
        follow = 0 <= lo and idx.tobytes() == _indexes()[8 * lo:8 * (lo + n)]
    else:
        follow = idx[-1] - lo == n - 1 and all(map(operator.lt, idx, idx[1:]))
    if follow:  # the counts in place, in C (counts are never below 0)
        counts = array.array("Q")
        if arrays:
            counts.frombytes(cnt.tobytes())
        else:
            counts.extend(cnt)
        row = array.array("Q", bytes(16 * n))
        row[0::2] = counts
        if _NATIVE_BIG:
            row.byteswap()
        return lo, int.from_bytes(row.tobytes(), "little")
    lo = min(idx)
    dense = [0] * (max(idx) - lo + 1)
    for i, c in zip(idx, cnt):
        dense[i - lo] += c
    return lo, int.from_bytes(b"".join(c.to_bytes(16, "little") for c in dense), "little")


_INDEXES = []


def _indexes():
    """The bytes of the int64 array 0, 1, ..., MAX_BUCKETS - 1 (made once)."""
    if not _INDEXES:
        _INDEXES.append(array.array("q", range(MAX_BUCKETS)).tobytes())
    return _INDEXES[0]


def _unwide(base, v):
    """[(bucket, count)] of the counts not 0 of a _wide integer from bucket base."""
    words = array.array("Q")
    words.frombytes(v.to_bytes(16 * ((v.bit_length() + _WIDE - 1) // _WIDE), "little"))
    if _NATIVE_BIG:
        words.byteswap()
    counts, highs = words[0::2], words[1::2]
    if any(highs):
        counts = [c + (h << 64) for c, h in zip(counts, highs)]
    return [(base + k, c) for k, c in enumerate(counts) if c]


class Sums:
    """What the nodes of a chunk that ran one part add to its Group, summed in the worker:
    each histogram merged (count > 0) with its node and scheme, in file order (the first
    scheme of the part is kept, a node of another is named), the sums per scheme, the
    thread times and the slowest threads."""

    __slots__ = ("order", "hists", "times", "top", "negative_zero")

    def __init__(self):
        self.order = []  # (node, scheme) of each histogram merged
        self.hists = {}  # scheme -> [count, min_ns, max_ns, sum_ns, first bucket, _wide sum]
        self.times = array.array("d")
        self.top = []
        self.negative_zero = False

    def add(self, node, p):
        h = p["hist"]
        if h and h[1]:
            scheme, count, mn, mx, sm, idx, cnt = h
            self.order.append((node, scheme))
            lo, v = _wide(idx, cnt)
            a = self.hists.get(scheme)
            if a is None:
                self.hists[scheme] = [count, mn, mx, min(sm, UINT64_MAX), lo, v]
            else:
                a[0] += count
                a[1], a[2] = min(a[1], mn), max(a[2], mx)
                a[3] = min(a[3] + sm, UINT64_MAX)
                if lo >= a[4]:
                    a[5] += v << (_WIDE * (lo - a[4]))
                else:
                    a[4], a[5] = lo, (a[5] << (_WIDE * (a[4] - lo))) + v
        t = array.array("d")
        t.frombytes(p["times"])  # sorted (the door's, the reader's): t[0] is the least
        if t and t[0] == 0 and any(math.copysign(1.0, x) < 0 for x in t if x == 0):
            self.negative_zero = True
        self.times.extend(t)
        for tt, index, cpu in p["top"]:  # greatest first: once one is left out, so are the rest
            if not _keep_top(self.top, (tt, node, index, cpu)):
                break

    def export(self):
        """(order, {scheme: (count, min_ns, max_ns, sum_ns, [(bucket, count)])}, the thread
        times as bytes, whether they are sorted (not when one is -0.0), slowest threads):
        what crosses to the collector."""
        hists = {s: (a[0], a[1], a[2], a[3], _unwide(a[4], a[5]))
                 for s, a in self.hists.items()}
        times = self.times if self.negative_zero else array.array("d", sorted(self.times))
        return self.order, hists, times.tobytes(), not self.negative_zero, self.top


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
                with os.scandir(p) as listing:
                    entries = {e.name: e for e in listing}
            except OSError as e:
                raise common.UsageError("cannot list '%s': %s" % (p, e.strerror or e))
            # Shorter names first: of two copies of one summary, the launcher's name
            # (node1.1a.rep1.json) is kept and a longer copy's (node1.1a.rep1 (2).json) is
            # the duplicate.
            for n in common.natural_sorted(entries, shorter_first=True):
                full = os.path.join(p, n)
                if n == common.MANIFEST:
                    manifests.append(full)
                elif n.endswith(".json") and n not in common.RESERVED_FILES and \
                        ".tmp." not in n and _is_file(entries[n]):
                    found.append(full)
        elif os.path.isfile(p):
            found.append(p)
        else:
            raise common.UsageError("'%s' is neither a results directory nor a summary file"
                                    % p)
    return found, manifests


def _is_file(entry):
    """os.path.isfile of a listed name, from the listing's file type where it has one (a
    symbolic link is followed, as isfile does)."""
    try:
        return entry.is_file()
    except OSError:
        return False


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


# What NodeFacts reads of a summary (read_summary's keys).
_FACTS = ("host", "dir", "fs", "ntp", "ntp_known", "maxerror_us", "scale", "schema",
          "node_version", "build_id", "overrides", "exe_sha256", "source_sha256", "describe",
          "dirty", "run_id", "cores")


def _record(r):
    """One summary (read_summary's dict) as the collector applies it: ("ignore", file,
    reason), ("error", file, reason), or ("ok", file, node, keys, facts, warnings,
    generations, test_errors, entries); keys: (node, test, repetition, part or "*") of what
    it holds, entries: (test, repetition, part, Entry)."""
    if r.get("ignore"):
        return ("ignore", r["file"], r["ignore"])
    if r.get("error"):
        return ("error", r["file"], r["error"])
    node = r["node"]
    keys = [(node, t, rep, p["part"]) for t, rep, _part, p in r["entries"]]
    keys += [(node, t, rep, part or "*") for t, rep, _e, part in r["test_errors"]]
    cat = catalogue.load()
    generations = [(test, rep, p.get("generation")) for test, rep, _part, p in r["entries"]
                   if cat.tests.get(test, {}).get("recreate")]
    entries = [(test, rep, part, entry_of(r, p)) for test, rep, part, p in r["entries"]]
    return ("ok", r["file"], node, keys, {k: r.get(k) for k in _FACTS}, _warnings(node, r),
            generations, r["test_errors"], entries)


def _warnings(node, r):
    """The node's warnings, its parts' with their part."""
    out = []
    part_warnings = {w for _t, _rep, _part, p in r["entries"] for w in p.get("warnings") or []}
    for w in r.get("warnings") or []:
        if w not in part_warnings:  # a node's list repeats its parts' warnings
            out.append({"node": node, "test": None, "repetition": None, "part": None,
                        "warning": w})
    for test, rep, part, p in r["entries"]:
        for w in p.get("warnings") or []:
            out.append({"node": node, "test": test, "repetition": rep, "part": part,
                        "warning": w})
    return out


def reduce_chunk(items, seen=None):
    """A chunk of summaries (path, repetition offset) read, checked and reduced: (records,
    {(test, repetition, part): Sums.export()}). The sums hold the summaries the collector will
    keep: a file is left out as _add leaves it out, by the keys of the files before it in the
    chunk and, given seen (the collector's seen_keys), of those before the chunk. Runs in a
    worker process, or in the collector."""
    local = set()
    records, sums = [], {}
    doors = scan.scan([path for path, _off in items], TOP_THREADS) or [None] * len(items)
    for (path, off), door in zip(items, doors):
        r = read_summary(path, off, door=door)
        rec = _record(r)
        records.append(rec)
        if rec[0] != "ok":
            continue
        keys = rec[3]
        if len(set(keys)) != len(keys) or any(k in local or (seen is not None and k in seen)
                                              for k in keys):
            continue
        local.update(keys)
        for test, rep, part, p in r["entries"]:
            if p["status"] in OK_STATUSES:
                g = sums.get((test, rep, part))
                if g is None:
                    g = sums[(test, rep, part)] = Sums()
                g.add(rec[2], p)
    return records, {k: g.export() for k, g in sums.items()}


def _chunks(paths):
    """The summaries of paths in chunks, and how many worker processes read them (1: this
    process)."""
    items = [(f, common.rep_offset_from_name(os.path.basename(f))) for f in paths]
    # forked workers only from a process with one thread: a fork copies every lock another
    # thread holds, held for ever in the child (the launcher's rounds run in threads)
    nw = _workers(len(items)) if threading.active_count() == 1 else 1
    size = max(8, min(256, len(items) // (nw * 8) or 1))
    return [items[i:i + size] for i in range(0, len(items), size)], nw


def _pool(nw):
    ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else multiprocessing
    # The workers must end on the pool's SIGTERM, not run the handler of the process that
    # forks them (the launcher's turns SIGTERM into "stop the nodes": a worker kept waiting
    # and the launcher waited for it for ever): forked with SIGTERM at its default.
    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, signal.SIG_DFL) if main else None
    try:
        return ctx.Pool(nw, initializer=_worker_signals)
    finally:
        if main:
            signal.signal(signal.SIGTERM, old)


@common.without_cycle_gc
def collect(paths, manifest_path=None, workers=None):
    """Read every summary under paths (and the manifest). Returns a Collection. workers: the
    worker processes (default: as many as the CPUs, up to 8, for 64 summaries or more; 1:
    this process alone)."""
    found, manifests = _scan(paths)
    c = Collection()
    if manifest_path:
        manifests = [manifest_path]
    c.files = len(found)
    catalogue.load()  # once, before the workers are forked
    chunks, nw = _chunks(found)
    if workers is not None and (workers <= 1 or threading.active_count() == 1):
        nw = workers
    if nw <= 1:
        for m in manifests:
            _apply_manifest(c, m, read_manifest(m))
        for items in chunks:
            _apply(c, reduce_chunk(items, c.seen_keys))
        return c
    with _pool(nw) as pool:
        # the manifest (tens of MB at 100,000 nodes) is read by a worker while the others
        # read summaries; it is applied first, as when read here
        read = [pool.apply_async(read_manifest, (m,)) for m in manifests]
        results = pool.imap(reduce_chunk, chunks)
        for m, r in zip(manifests, read):
            _apply_manifest(c, m, r.get())
        for items, res in zip(chunks, results):
            if any(k in c.seen_keys for rec in res[0] if rec[0] == "ok" for k in rec[3]):
                # a file of the chunk repeats a part of an earlier chunk: its worker could not
                # know which to leave out; read here, against what is kept so far
                res = reduce_chunk(items, c.seen_keys)
            _apply(c, res)
    return c


def _apply(c, res):
    """A reduced chunk into the collection: each record in order, then the chunk's sums."""
    records, sums = res
    for rec in records:
        if rec[0] == "ignore":
            c.ignored.append({"file": rec[1], "reason": rec[2]})
        elif rec[0] == "error":
            c.invalid.append({"file": rec[1], "reason": rec[2]})
        else:
            _add(c, rec)
    for key, part_sums in sums.items():
        c.group(*key).merge(part_sums)


def _add(c, rec):
    """One summary's record into the collection, unless one of its parts is already there."""
    _kind, name, node, keys, facts, warnings, generations, test_errors, entries = rec
    for k in keys:
        if k in c.seen_keys:
            c.invalid.append({"file": name, "reason": "duplicate: node %s, test %s rep %s "
                              "part %s is already in %s" % (node, k[1], k[2], k[3],
                                                            c.seen_keys[k])})
            return
    if len(set(keys)) != len(keys):
        c.invalid.append({"file": name, "reason": "duplicate parts within the file"})
        return
    for k in keys:
        c.seen_keys[k] = name
    if node in c.nodes:
        c.nodes[node].merge(facts)
    else:
        c.nodes[node] = NodeFacts(facts)
    c.warnings.extend(warnings)
    for test, rep, generation in generations:
        c.generations.setdefault((node, test), {}).setdefault(rep, set()).add(generation)
    cat = catalogue.load()
    for test, rep, error, part in test_errors:
        c.test_errors.setdefault((test, rep, part), {})[node] = error
        if test is not None:
            for p in [part] if part else cat.tests.get(test, {}).get("parts", []):
                c.group(test, rep, p)
    for test, rep, part, e in entries:
        c.group(test, rep, part).add(node, e)


def read_manifest(path):
    """The launcher's manifest at path, through the door and checked: the manifest, or a
    string saying why it cannot be used. Runs in a worker process, or in the collector."""
    plain = []
    try:
        m = load_json(path, plain=plain)
    except (OSError, Bad) as e:
        return "launcher manifest unreadable: %s" % (
            e if isinstance(e, Bad) else common.errno_text(e))
    if not isinstance(m, dict) or m.get("schema") not in common.MANIFEST_SCHEMAS:
        return "not a launcher manifest (schema %s)" % (
            common.safe_text(json.dumps(m.get("schema")))[:60] if isinstance(m, dict)
            else None)
    try:
        return check_manifest(m, plain=plain[0])
    except Bad as e:
        return "launcher manifest invalid: %s" % e
    except Exception as e:  # a structure no check foresaw: named and skipped, no traceback
        return "launcher manifest invalid: unexpected structure (%s: %s)" % (
            type(e).__name__, common.safe_text(e)[:200])


def _apply_manifest(c, path, m):
    """A manifest read_manifest read into the collection; an unusable one is named in
    c.invalid."""
    if isinstance(m, str):
        c.invalid.append({"file": os.path.basename(path), "reason": m})
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
