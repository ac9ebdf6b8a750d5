# SPDX-License-Identifier: MIT
"""A node summary's part checked against itself before the collector trusts it: the threads it
ran are the plan's, its operations, bytes and files are what the plan's parameters give (the
catalogue's "expect": what one thread of the part's kind counts, as a product of the part's
count, chunk, file size and passes, never guessed from a name), and its node time is at least
every thread's release offset plus its time. A part whose figures do not add up is
"inconsistent": the collector names it and leaves it out of every sum and of the blame.

Runs in the collector's worker processes, on parts whose status is ok or late (a failed or
interrupted part stopped early: its counts are short by design). Given the threads' times and
indexes the reader already took, it first checks without a Python call per thread; only a
part that may not add up goes through the check thread by thread, which says why."""
import itertools
import operator

# The node time against the threads' own instants: a thread's release offset from the first
# release is a difference of epoch instants the node took microseconds apart (node/1's doubles
# resolve 0.24 us); 10 us is far below any real part and far above that rounding.
TIME_TOLERANCE_S = 1e-5
# The node time against the start instant T: the node takes the smaller of its wall and its
# monotonic lead after T, so a step of the wall clock under the 0.1 s a node records, and the
# reads of the two clocks around the start decision, may take up to this off the wall lead.
LEAD_TOLERANCE_S = 0.15


class Unusable(Exception):
    """A count the check needs is not a whole number: the summary is invalid (the reader says
    so, naming the field, its message)."""


def _whole(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _product(part, names):
    """The product of the part's parameters named (0 for none), or None when one is not
    recorded (an older summary): then that count is not checked."""
    if not names:
        return 0
    v = 1
    for n in names:
        x = part.get(n)
        if not _whole(x):
            return None
        v *= x
    return v


def check(part, expect, plan_threads, columns=None):
    """Why the part's figures do not add up (one line), or None when they do. part: the
    summary's part object (its fields already checked by the reader); expect: the catalogue's
    expect of the part (None: counts not checked); plan_threads: the threads the plan runs it
    on; columns: (times, indexes) of its threads, each thread's time_s and index as the
    reader checked them (finite, in range), or None. Raises Unusable for a count that is not
    a whole number."""
    threads = part.get("per_thread") or []
    if plan_threads is not None and len(threads) != plan_threads:
        return "%d thread%s in per_thread, where the plan runs %d" % (
            len(threads), "" if len(threads) == 1 else "s", plan_threads)
    if columns is not None and _adds_up(part, threads, expect, columns):
        return None
    return (_counts(part, threads, expect) if expect else None) or _times(part, threads)


# A thread's fields the check reads, taken in one C call a thread.
_CHECKED = operator.itemgetter("release_at_ns", "ops", "bytes")
_INT = frozenset((int,))


def adds_up_sums(part, expect, plan_threads, n, sums):
    """check() of a part whose threads the collector's fast door summed (scan.py's
    Threads.sums): True when it surely adds up (check() would say None), False when check()
    must look at its threads. n: the threads."""
    if plan_threads is not None and n != plan_threads or sums is None or not n:
        return False
    first, need, need_index, ops, nbytes = sums
    for key, same in (("ops", ops), ("bytes", nbytes), ("files", None)):
        names = expect[key] if expect else None
        per = _product(part, names) if expect else None
        total = part.get(key)
        if per is None or (total is None and key == "files"):
            continue
        if not _whole(total) or total != per * n:
            return False
        if key != "files" and same != per:  # every thread has per
            return False
    return first > 0 and _judge(part, first, need, need_index) is None


def _adds_up(part, threads, expect, columns):
    """True when the part surely adds up: what _counts and _times check, on whole columns,
    with no call per thread. False when it may not (or a field is missing): the check
    thread by thread then says why, or raises."""
    if not threads:
        return False
    try:
        rel_ns, ops, nbytes = zip(*map(_CHECKED, threads))
    except (TypeError, KeyError):
        return False
    n = len(threads)
    for key, col in (("ops", ops), ("bytes", nbytes), ("files", None)):
        names = expect[key] if expect else None
        per = _product(part, names) if expect else None
        total = part.get(key)
        if per is None or (total is None and key == "files"):
            continue
        if not _whole(total) or total != per * n:
            return False
        if col is not None and (set(map(type, col)) != _INT or col.count(per) != n):
            return False
    if set(map(type, rel_ns)) != _INT or min(rel_ns) <= 0:
        return False
    times, indexes = columns
    first = min(rel_ns)
    # (release - first) / 1e9 + time of every thread, evaluated as _times does
    ends = list(map(operator.add, map(operator.truediv, map(operator.sub, rel_ns,
                                                            itertools.repeat(first)),
                                      itertools.repeat(1e9)), times))
    need = max(ends)
    return _judge(part, first, need, indexes[ends.index(need)]) is None


def _counts(part, threads, expect):
    n = len(threads)
    for key in ("ops", "bytes", "files"):
        names = expect[key]
        per = _product(part, names)
        total = part.get(key)
        if per is None or (total is None and key == "files"):
            continue
        if not _whole(total):
            raise Unusable(key)
        if total != per * n:
            return "%s %d, where the plan gives %d (%s per thread, %d thread%s)" % (
                key, total, per * n, " x ".join(names) or "none", n, "" if n == 1 else "s")
        if key == "files":
            continue  # a thread's files are not in the summary
        for th in threads:
            v = th.get(key)
            if not _whole(v):
                raise Unusable("per_thread[%d].%s" % (threads.index(th), key))
            if v != per:
                return "thread %s: %s %d, where the plan gives %d" % (th.get("index"), key, v,
                                                                      per)
    return None


def _release_ns(th):
    ns = th.get("release_at_ns")
    if _whole(ns) and ns > 0:
        return ns
    return int(round(th["release_at"] * 1e9)) if th.get("release_at") else None


def _times(part, threads):
    rels = [(_release_ns(th), th["time_s"], th.get("index")) for th in threads]
    rels = [x for x in rels if x[0]]
    if not rels:
        return None
    first = min(r for r, _t, _i in rels)
    need, index = max((((r - first) / 1e9 + t, i) for r, t, i in rels), key=lambda x: x[0])
    return _judge(part, first, need, index)


def _judge(part, first, need, index):
    """The node time against the threads' (first: the first release, ns; need: the largest
    release offset plus time, thread index's) and against the start instant."""
    node_time = part["node_time_s"]
    if node_time < need - TIME_TOLERANCE_S:
        return "node time %.6f s is less than thread %s's release offset + its time (%.6f s)" % (
            node_time, index, need)
    steps = (part.get("clock_step_s") or 0, part.get("clock_step_total_s") or 0)
    start = part.get("start_at_ns")
    if any(steps) or not _whole(start):
        return None
    lead = max(0.0, (first - start) / 1e9)
    if node_time < lead + need - LEAD_TOLERANCE_S:
        return "node time %.6f s is less than its first release %.6f s after the start instant " \
               "+ thread %s's offset and time (%.6f s)" % (node_time, lead, index, lead + need)
    return None
