# SPDX-License-Identifier: MIT
"""Reading one node summary (stagebench.node/3, or node/2 and node/1 of older nodes): checked
field by field (a damaged one is refused with the reason, never a traceback) and reduced to
what the report keeps: per part the node time, bytes, the latency histogram (merged bucket by
bucket exactly as util/hist.c counts), the thread times and the few slowest threads, and
node/2's instants, clock steps, warnings, residency and passes; node/3's binary digest, cores
and replica origins. Each part's figures are checked against themselves (selfcheck.py): one
that does not add up is "inconsistent". Runs in the collector's worker processes."""
import array
import heapq
import json
import math
import operator
import os
import re
import stat

from . import catalogue
from . import clockmodel
from . import common
from . import selfcheck

UINT64_MAX = (1 << 64) - 1
INT64_MAX = (1 << 63) - 1  # a bucket count (kept in an array of int64)
TOP_THREADS = 5
START_SYNC_LIMIT_S = 1.0
OK_STATUSES = ("ok", "late")
# node/1 (older nodes) lacks the integer instants, clock steps, residency and build id; node/2
# the binary's digest, the cores, the replicas' origins: what a summary cannot tell, the report
# says it cannot tell.
NODE_SCHEMAS = (common.NODE_SCHEMA, "stagebench.node/2", "stagebench.node/1")
# The status of a part whose figures do not add up (selfcheck.py): not ok, named, left out.
INCONSISTENT = "inconsistent"


class Bad(Exception):
    """A summary that cannot be used: the message says why."""


class _Slow(Exception):
    """The fast path met something unusual: the checking path says what."""


# The door every JSON file the collector reads goes through (summaries, the manifest,
# baselines): a file over MAX_FILE_BYTES is refused before it is read; the text must be UTF-8;
# duplicate keys, NaN and Infinity, integers over 20 digits and floats that overflow are
# refused while parsing; nesting deeper than MAX_DEPTH is refused; each a one-line reason.
MAX_FILE_BYTES = 64 << 20
MAX_DEPTH = 64
MAX_INT_DIGITS = 20
# Absurd values: no duration of a part reaches MAX_SECONDS (115 days), no instant MAX_EPOCH
# (the binary's own bound for --start-at).
MAX_SECONDS = 1e7
MAX_EPOCH = 1e11


def _pairs(pairs):
    d = dict(pairs)
    if len(d) != len(pairs):
        seen = set()
        for k, _v in pairs:
            if k in seen:
                raise Bad("duplicate key %s" % json.dumps(k)[:60])
            seen.add(k)
    return d


def _key_counter():
    """(an object_hook that keeps each object as it is and counts its keys, a one-item list
    holding the count): a dict keeps one of two equal keys. A function, not an object with
    __call__: the parser calls it for every object."""
    count = [0]

    def hook(d):
        count[0] += len(d)
        return d
    return hook, count


def _string_colons(obj, need):
    """The colons in the strings of the parsed value obj (each one token of its text), level
    by level from the top, counted until need are found."""
    found = 0
    level = [[obj]]
    while level:
        deeper = []
        for o in level:
            for v in (o.values() if type(o) is dict else o):
                t = type(v)
                if t is str:
                    found += v.count(":")
                    if found >= need:
                        return found
                elif t is dict or t is list:
                    deeper.append(v)
        level = deeper
    return found


_FAILED = object()


def _loads(text, kw):
    """json.loads refusing duplicate keys, with no Python call per key. In JSON text without
    a backslash each string's text is its value, and every colon is either a key's or inside
    a string: colons = keys + colons in strings. Parsed as plain dicts, the objects hold the
    keys less the duplicates; so when the colons less the keys parsed are no more than the
    colons found in the parsed strings (at most those inside the text's strings), no key was
    a duplicate. Otherwise (a backslash, colons not found, a duplicate, any error) the text is
    parsed again with each object's pairs checked (_pairs), which names the first problem in
    the order the parser meets it."""
    if "\\" not in text:
        hook, count = _key_counter()
        try:
            obj = json.loads(text, object_hook=hook, **kw)
        except Exception:  # noqa: BLE001 (the checking parse below says what it is)
            obj = _FAILED
        if obj is not _FAILED:
            slack = text.count(":") - count[0]
            if slack <= 0 or _string_colons(obj, slack) >= slack:
                return obj
    return json.loads(text, object_pairs_hook=_pairs, **kw)


# An integer of more than MAX_INT_DIGITS digits, found in the text before it is parsed.
_LONG_INT = re.compile(r"[:\[,]\s*-?(\d{%d,})" % (MAX_INT_DIGITS + 1))
# Each ASCII digit as "0", each byte outside ASCII as "x", every other byte as " ".
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x78 if b >= 0x80 else 0x20
                        for b in range(256))


def _long_int(data, text):
    """_LONG_INT.search(text) (data: the text's bytes). An ASCII text without a run of more
    than MAX_INT_DIGITS digits anywhere holds no such integer: that is looked for in C, a
    fifth of the regex's time on a manifest of 100,000 nodes, and the regex runs only where
    a run is found (or a byte outside ASCII could be a digit to it)."""
    marks = data.translate(_DIGITS_AS_ZERO)
    if b"x" not in marks and b"0" * (MAX_INT_DIGITS + 1) not in marks:
        return None
    return _LONG_INT.search(text)


def _constant(name):
    raise Bad("%s is not a number JSON allows" % name)


def _parse_float(text):
    v = float(text)
    if not math.isfinite(v):
        raise Bad("the number %s is out of range" % text[:40])
    return v


def _depth_ok(obj, limit=MAX_DEPTH):
    """obj nests no deeper than limit (iteratively: a deep structure cannot exhaust the
    stack here)."""
    stack = [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if d > limit:
            return False
        if isinstance(o, dict):
            stack.extend((v, d + 1) for v in o.values() if isinstance(v, (dict, list)))
        elif isinstance(o, list):
            stack.extend((v, d + 1) for v in o if isinstance(v, (dict, list)))
    return True


def load_json(path, limit=MAX_FILE_BYTES, strict=True, plain=None):
    """The JSON value of the file at path, through the door; Bad (one line) otherwise. A file
    that cannot be read raises OSError. strict (the manifest, baselines: used as a whole) also
    refuses integers over MAX_INT_DIGITS digits, floats that overflow and nesting deeper than
    MAX_DEPTH anywhere; a summary, of which only checked fields are used, leaves those to the
    field checks (it is read 10,000 times in a large run: a scan of every number would cost
    more than the parsing). plain: a list, given, gets whether the text is plain (_plain)."""
    # O_NONBLOCK: a FIFO at the name must not hold the reader (it is refused below)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Bad("not a regular file")
        if st.st_size > limit:
            raise Bad("%d bytes, over the %d MiB a file may be" % (st.st_size, limit >> 20))
        # the size it has, and a byte more to see it grow (a buffer of the limit, 64 MiB,
        # would be allocated for every file)
        data = f.read(st.st_size + 1)
        if len(data) > st.st_size:
            data += f.read(limit + 1 - len(data))
    if len(data) > limit:
        raise Bad("over the %d MiB a file may be" % (limit >> 20))
    if not data.strip():
        raise Bad("empty file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Bad("not UTF-8 text (byte %d)" % e.start)
    m = _long_int(data, text) if strict else None
    ascii_only = len(text) == len(data)  # UTF-8 writes any other character in 2 bytes or more
    del data
    if m:
        raise Bad("an integer of %d digits is out of range" % len(m.group(1)))
    kw = {"parse_constant": _constant}
    if strict:
        kw["parse_float"] = _parse_float
    try:
        obj = _loads(text, kw)
    except RecursionError:
        raise Bad("not valid JSON: nested too deeply")
    except ValueError as e:
        raise Bad("not valid JSON (truncated or damaged): %s" % e)
    if strict and not _depth_ok(obj):
        raise Bad("not valid JSON: nested deeper than %d" % MAX_DEPTH)
    if plain is not None:
        plain.append(_plain(text, ascii_only))
    return obj


def _plain(text, ascii_only):
    """Whether no string of the parsed JSON text holds a character common.safe_text escapes
    (a control character): the text is ASCII (ascii_only) without DEL and without a backslash.
    A string's characters are the text's own (the parser refuses a raw one below 0x20 in a
    string) or escapes, which all begin with a backslash. Each test is one pass in C."""
    return ascii_only and "\\" not in text and "\x7f" not in text


_NUM = frozenset((int, float))
_INT = frozenset((int,))
_OPT_INT = frozenset((int, type(None)))
_OPT_STR = frozenset((str, type(None)))
MAX_BUCKETS = 1 << 16


# ---------------------------------------------------------------------------------------------
# The histogram scheme of util/hist.c


def hist_last(sub_bits, max_bits):
    return (max_bits - sub_bits + 1) * (1 << sub_bits) - 1


def hist_bucket_low(i, sub_bits, last):
    sub = 1 << sub_bits
    if i > last:
        i = last
    if i < sub:
        return i
    shift = i // sub - 1
    return (sub + i % sub) << shift


def hist_bucket_high(i, sub_bits, last):
    if i >= last:
        return UINT64_MAX
    return hist_bucket_low(i + 1, sub_bits, last) - 1


def hist_quantile(buckets, count, min_ns, max_ns, q, sub_bits, max_bits):
    """hist_quantile() of util/hist.c on a sparse {index: count}: the midpoint of the bucket
    holding the ceil(q*count)-th smallest value, clamped to [min_ns, max_ns]."""
    if count <= 0:
        return 0
    last = hist_last(sub_bits, max_bits)
    if not (q > 0):
        rank = 1
    elif q >= 1:
        rank = count
    else:
        x = q * float(count)
        rank = int(x)
        if float(rank) < x:
            rank += 1
        rank = min(max(rank, 1), count)
    idx, seen = last, 0
    for i in sorted(buckets):
        if i >= last:
            break
        seen += buckets[i]
        if seen >= rank:
            idx = i
            break
    low = hist_bucket_low(idx, sub_bits, last)
    high = hist_bucket_high(idx, sub_bits, last)
    mid = low + (high - low) // 2
    return min(max(mid, min_ns), max_ns)


class Hist:
    """A merged latency histogram: dense bucket counts, as in util/hist.c."""

    __slots__ = ("scheme", "dense", "count", "min_ns", "max_ns", "sum_ns", "skipped")

    def __init__(self):
        self.scheme = None
        self.dense = None
        self.count = 0
        self.min_ns = 0
        self.max_ns = 0
        self.sum_ns = 0
        self.skipped = []  # nodes whose histogram had another scheme

    def merge_sums(self, order, hists):
        """The histograms of a chunk's nodes (collection.Sums.export's), as if merged one by
        one in order: the first scheme met kept, a node of another named in skipped, the
        counts of the others added bucket by bucket (min, max, the sum up to 2**64-1)."""
        for node, scheme in order:
            if self.scheme is None:
                self.scheme = scheme
                self.dense = [0] * (hist_last(*scheme) + 1)
            elif scheme != self.scheme:
                self.skipped.append(node)
        a = hists.get(self.scheme) if order else None
        if not a:
            return
        count, mn, mx, sm, sparse = a
        if self.count == 0 or mn < self.min_ns:
            self.min_ns = mn
        if mx > self.max_ns:
            self.max_ns = mx
        self.sum_ns = min(self.sum_ns + sm, UINT64_MAX)
        self.count += count
        b = self.dense
        for i, c in sparse:
            b[i] += c

    @property
    def buckets(self):
        return {i: c for i, c in enumerate(self.dense or ()) if c}

    def quantile(self, q):
        if not self.count:
            return None
        sub_bits, max_bits = self.scheme
        return hist_quantile(self.buckets, self.count, self.min_ns, self.max_ns, q, sub_bits,
                             max_bits) / 1e9

    def to_json(self):
        if not self.count:
            return None
        return {"p50": self.quantile(0.5), "p90": self.quantile(0.9),
                "p99": self.quantile(0.99), "max": self.max_ns / 1e9,
                "mean": self.sum_ns / self.count / 1e9, "count": self.count}


# ---------------------------------------------------------------------------------------------
# Reading one summary (in a worker process)


_MISSING = object()


def _field(obj, key, where, required):
    """obj[key]; _MISSING when absent (or null) and not required; Bad when required and absent."""
    if not isinstance(obj, dict):
        raise Bad("%s is not an object" % where.rstrip("."))
    if key not in obj:
        if required:
            raise Bad("missing field %s%s" % (where, key))
        return _MISSING
    v = obj[key]
    if v is None and not required:
        return _MISSING
    return v


def _num(obj, key, where, required=True, lo=None, hi=None):
    v = _field(obj, key, where, required)
    if v is _MISSING:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or \
            (isinstance(v, float) and not math.isfinite(v)):
        raise Bad("field %s%s is not a number" % (where, key))
    if lo is not None and v < lo:
        raise Bad("field %s%s is negative" % (where, key))
    if hi is not None and v > hi:
        shown = "an integer over 2**64" if isinstance(v, int) and v > UINT64_MAX else "%g" % v
        raise Bad("field %s%s (%s) is out of range: at most %g" % (where, key, shown, hi))
    return v


def _int(obj, key, where, required=True):
    v = _num(obj, key, where, required, lo=0, hi=UINT64_MAX)
    if v is not None and not isinstance(v, int):
        raise Bad("field %s%s is not a whole number" % (where, key))
    return v


def _typed(obj, key, where, required, kind, what):
    """The field of type kind, None when missing and not required; Bad saying what it is not."""
    v = _field(obj, key, where, required)
    if v is _MISSING:
        return None
    if not isinstance(v, kind):
        raise Bad("field %s%s is not %s" % (where, key, what))
    return v


def _str(obj, key, where, required=True):
    return _typed(obj, key, where, required, str, "a string")


def _list(obj, key, where, required=True):
    if isinstance(obj, dict) and key in obj and obj[key] is None and not required:
        raise Bad("field %s%s is not a list" % (where, key))
    v = _field(obj, key, where, required)
    if v is _MISSING:
        return []
    if not isinstance(v, list):
        raise Bad("field %s%s is not a list" % (where, key))
    return v


def _hist_fast(h, door=None):
    """The histogram without a call per bucket; _Slow if anything is unusual. door: the
    summary came through the fast door (scan.py), which holds the buckets (integers)."""
    try:
        sub_bits, max_bits = h["sub_bits"], h["max_bits"]
        nums = (sub_bits, max_bits, h["count"], h["min_ns"], h["max_ns"], h["sum_ns"])
        b = h["buckets"]
        if set(map(type, nums)) != _INT or min(nums) < 0 or max(nums) > UINT64_MAX or \
                (door is None and type(b) is not list):
            raise _Slow
        if not (1 <= sub_bits < max_bits <= 64) or \
                (max_bits - sub_bits + 1) << sub_bits > MAX_BUCKETS:
            raise _Slow
        last = hist_last(sub_bits, max_bits)
        if door is not None:
            # the door's figures of its buckets: no Python number made of each
            idx, cnt, (lo_i, hi_i, lo_c, total) = door.buckets(b)
            if idx and (lo_i < 0 or hi_i > last or lo_c < 0):
                raise _Slow
        elif b:
            if set(map(type, b)) != {list} or set(map(len, b)) != {2}:
                raise _Slow
            idx, cnt = zip(*b)
            if set(map(type, idx)) != _INT or set(map(type, cnt)) != _INT or \
                    min(idx) < 0 or max(idx) > last or min(cnt) < 0 or max(cnt) > INT64_MAX:
                raise _Slow
            total = sum(cnt)
        else:
            idx = cnt = ()
            total = 0
        if total != nums[2]:
            raise _Slow
    except (TypeError, KeyError, AttributeError, OverflowError):
        raise _Slow
    return ((sub_bits, max_bits), nums[2], nums[3], nums[4], nums[5], idx, cnt)


def _hist(part, where, door=None):
    h = part.get("latency_hist")
    if h is None:
        return None
    if door is not None:
        return _hist_fast(h, door)
    try:
        return _hist_fast(h)
    except _Slow:
        pass
    w = where + "latency_hist."
    sub_bits = _int(h, "sub_bits", w)
    max_bits = _int(h, "max_bits", w)
    if not (1 <= sub_bits < max_bits <= 64) or \
            (max_bits - sub_bits + 1) << sub_bits > MAX_BUCKETS:
        raise Bad("field %ssub_bits/max_bits is out of range" % w)
    last = hist_last(sub_bits, max_bits)
    count = _int(h, "count", w)
    mn = _int(h, "min_ns", w)
    mx = _int(h, "max_ns", w)
    sm = _int(h, "sum_ns", w)
    idx = array.array("q")
    cnt = array.array("q")
    total = 0
    for b in _list(h, "buckets", w):
        if not (isinstance(b, list) and len(b) == 2 and all(
                isinstance(x, int) and not isinstance(x, bool) for x in b)):
            raise Bad("field %sbuckets has an entry that is not [index, count]" % w)
        if not (0 <= b[0] <= last) or not (0 <= b[1] <= INT64_MAX):
            raise Bad("field %sbuckets has an index or count out of range" % w)
        idx.append(b[0])
        cnt.append(b[1])
        total += b[1]
    if total != count:
        raise Bad("field %scount (%d) is not the sum of its buckets (%d)" % (w, count, total))
    return ((sub_bits, max_bits), count, mn, mx, sm, idx, cnt)


# A part's scalar fields as _part and _part_v2 check them one call each, for _part_scalars to
# check in one pass: (key, kind, lo, hi). Kinds: a required string, an optional one; a required
# number, an optional one (finite, within lo and hi where given); an optional whole number
# (0 to UINT64_MAX); an optional true or false.
_STR, _OSTR, _NUMBER, _ONUMBER, _OINT, _OBOOL = range(6)
_PART_SCALARS = (
    ("part", _STR, None, None), ("status", _STR, None, None), ("error", _OSTR, None, None),
    ("node_time_s", _NUMBER, 0, MAX_SECONDS), ("bytes", _NUMBER, 0, UINT64_MAX),
    ("ops", _NUMBER, 0, UINT64_MAX), ("start_at", _NUMBER, 0, MAX_EPOCH),
    ("release_spread_s", _ONUMBER, None, MAX_SECONDS),
    ("kind", _OSTR, None, None), ("counted", _OSTR, None, None),
    ("rate_unit", _OSTR, None, None), ("start_at_ns", _OINT, 0, UINT64_MAX),
    ("io_start_spread_s", _ONUMBER, 0, None), ("late_by_s", _ONUMBER, None, None),
    ("clock_step_s", _ONUMBER, None, None), ("clock_step_total_s", _ONUMBER, None, None),
    ("cache_residency", _ONUMBER, 0, 1), ("cache_residency_error", _OSTR, None, None),
    ("cache_dropped", _OBOOL, None, None), ("cache_expected", _OSTR, None, None),
    ("replica_changed", _OBOOL, None, None), ("generation", _OINT, 0, UINT64_MAX),
    ("pages", _OINT, 0, UINT64_MAX), ("mapped_bytes", _OINT, 0, UINT64_MAX))
_WHOLE = ("bytes", "ops")  # required numbers that must be whole (_int)
_STAT_KEYS = ("min", "median", "max")
_INF = float("inf")


def _part_scalars(part):
    """{key: value} of the part's scalar fields (_PART_SCALARS) and of its small objects
    (thread_time_s, release_at_ns, first_io_at_ns, warnings, first_pass_s,
    rest_pass_median_s, replica_origin), as the checks of _part and _part_v2 take them, in one
    pass without a call a field; _Slow when any would not pass (the checks then name it)."""
    if type(part) is not dict:
        raise _Slow
    get = part.get
    out = {}
    for key, kind, lo, hi in _PART_SCALARS:
        v = get(key)
        t = type(v)
        if kind <= _OSTR:
            if t is not str and (kind == _STR or v is not None):
                raise _Slow
        elif kind <= _ONUMBER:
            if v is None:
                if kind == _NUMBER:
                    raise _Slow
            elif t is float:
                if not -_INF < v < _INF or (lo is not None and v < lo) or \
                        (hi is not None and v > hi) or key in _WHOLE:
                    raise _Slow
            elif t is not int or (lo is not None and v < lo) or (hi is not None and v > hi):
                raise _Slow
        elif kind == _OINT:
            if v is not None and (t is not int or v < 0 or v > UINT64_MAX):
                raise _Slow
        elif v is not None and t is not bool:
            raise _Slow
        out[key] = v
    if out["counted"] is not None and out["counted"] not in catalogue.COUNTED or \
            out["rate_unit"] is not None and out["rate_unit"] not in catalogue.RATE_UNITS:
        raise _Slow
    tt = get("thread_time_s")
    if type(tt) is dict:
        for k in _STAT_KEYS:
            v = tt.get(k)
            if v is not None and (type(v) not in _NUM or not -_INF < v <= MAX_SECONDS):
                raise _Slow
            out["thread_" + k] = v
    elif isinstance(tt, dict):
        raise _Slow
    for key in ("release_at_ns", "first_io_at_ns"):
        v = get(key)
        if v is not None:
            lo, hi = (v.get("min"), v.get("max")) if type(v) is dict else (None, None)
            if type(lo) is not int or type(hi) is not int or not 0 <= lo <= hi <= UINT64_MAX:
                raise _Slow
            v = (lo, hi)
        out[key] = v
    w = get("warnings", _MISSING)
    if w is _MISSING:
        out["warnings"] = []
    elif type(w) is list:
        out["warnings"] = [x for x in w if isinstance(x, str)][:20]
    else:
        raise _Slow
    for key in ("first_pass_s", "rest_pass_median_s"):
        v = get(key)
        if v is not None:
            if type(v) is not dict:
                raise _Slow
            v = {k: v.get(k) for k in _STAT_KEYS}
            for x in v.values():
                if type(x) not in _NUM or not 0 <= x < _INF:
                    raise _Slow
        out[key] = v
    v = get("replica_origin")
    if v is not None:
        rid, rep = (v.get("run_id"), v.get("repetition")) if type(v) is dict else (None, None)
        if type(rid) is not str or not common.run_id_ok(rid) or type(rep) is not int or \
                not 0 <= rep <= UINT64_MAX:
            raise _Slow
        v = (rid, rep)
    out["replica_origin"] = v
    return out


def _part(part, where, top, door=None):
    try:
        f = _part_scalars(part)
    except _Slow:
        f = None
    if f is not None:
        p = {k: f[k] for k in _PART_V1_KEYS}
        p["verified"], p["late"] = bool(part.get("verified")), bool(part.get("late"))
        _part_name(p, where)
        if "thread_min" in f:
            p["thread_min"], p["thread_median"], p["thread_max"] = \
                f["thread_min"], f["thread_median"], f["thread_max"]
        return _part_rest(p, part, where, top, door, f)
    status = _str(part, "status", where)
    p = {
        "part": _str(part, "part", where),
        "status": status,
        "error": _str(part, "error", where, required=False),
        "node_time_s": _num(part, "node_time_s", where, lo=0, hi=MAX_SECONDS),
        "bytes": _int(part, "bytes", where),
        "ops": _int(part, "ops", where),
        "start_at": _num(part, "start_at", where, lo=0, hi=MAX_EPOCH),
        "release_spread_s": _num(part, "release_spread_s", where, required=False,
                                 hi=MAX_SECONDS),
        "verified": bool(part.get("verified")),
        "late": bool(part.get("late")),
    }
    _part_name(p, where)
    tt = part.get("thread_time_s")
    if isinstance(tt, dict):
        p["thread_min"] = _num(tt, "min", where + "thread_time_s.", required=False, hi=MAX_SECONDS)
        p["thread_median"] = _num(tt, "median", where + "thread_time_s.", required=False, hi=MAX_SECONDS)
        p["thread_max"] = _num(tt, "max", where + "thread_time_s.", required=False, hi=MAX_SECONDS)
    return _part_rest(p, part, where, top, door)


# The fields _part takes first, in its order (_part_v2 takes the rest, after the threads).
_PART_V1_KEYS = ("part", "status", "error", "node_time_s", "bytes", "ops", "start_at",
                 "release_spread_s")
_PART_V2_KEYS = ("kind", "counted", "rate_unit", "start_at_ns", "release_at_ns",
                 "first_io_at_ns", "io_start_spread_s", "late_by_s", "clock_step_s",
                 "clock_step_total_s", "warnings", "cache_residency", "cache_residency_error",
                 "cache_dropped", "cache_expected", "replica_changed", "generation", "pages",
                 "mapped_bytes", "first_pass_s", "rest_pass_median_s", "replica_origin")


def _part_name(p, where):
    if not common.part_name_ok(p["part"]):
        raise Bad("field %spart '%s' is not a part name" % (where, p["part"][:40]))
    if p["part"] not in catalogue.load().part_test:
        raise Bad("field %spart '%s' is not a part of any test" % (where, p["part"]))


def _part_rest(p, part, where, top, door, scalars=None):
    """_part's work after its first fields (p): its threads, its histogram, then node/2's
    fields (from scalars, _part_scalars' checked values, when given)."""
    if door is not None:
        # reduced by the door as _threads_fast does; a thread with an error is not (no
        # first_err), nor is a part without per_thread
        b = door.threads(part["per_thread"])
        p["rel_min"], p["rel_max"], p["top"], p["columns"] = b.rel_min, b.rel_max, b.top, b
        p["threads"] = b.n
        p["times"] = b.times
    else:
        threads = _list(part, "per_thread", where)
        try:
            times, p["rel_min"], p["rel_max"], p["top"], first_err, p["columns"] = \
                _threads_fast(threads, top)
        except _Slow:
            times, p["rel_min"], p["rel_max"], p["top"], first_err = _threads(threads, top,
                                                                              where)
            p["columns"] = None
        p["threads"] = len(threads)
        # sorted, equal ones (-0.0 and 0.0) in their order, as the door hands them: a chunk's
        # times are then sorted runs, merged rather than sorted again
        p["times"] = array.array("d", sorted(times)).tobytes()
        if not p["error"] and first_err:
            p["error"] = first_err
    p["hist"] = _hist(part, where, door)
    if scalars is None:
        _part_v2(p, part, where)
    else:
        for k in _PART_V2_KEYS:
            p[k] = scalars[k]
    return p


def _minmax(obj, key, where):
    """{"min": int, "max": int} of integer instants, as (min, max); None when absent or null."""
    v = _field(obj, key, where, False)
    if v is _MISSING:
        return None
    w = where + key + "."
    lo, hi = _int(v, "min", w), _int(v, "max", w)
    if lo > hi:
        raise Bad("field %smin is above its max" % w)
    return (lo, hi)


def _stats(obj, key, where):
    """{"min", "median", "max"} of seconds, as a dict; None when absent or null."""
    v = _field(obj, key, where, False)
    if v is _MISSING:
        return None
    w = where + key + "."
    return {k: _num(v, k, w, lo=0) for k in _STAT_KEYS}


def _strings(obj, key, where):
    return [x for x in _list(obj, key, where, required=False) if isinstance(x, str)][:20]


def _bool(obj, key, where):
    return _typed(obj, key, where, False, bool, "true or false")


def _part_v2(p, part, where):
    """The fields of stagebench.node/2 (absent in node/1: None, and the report says unknown)."""
    p["kind"] = _str(part, "kind", where, required=False)
    for key, allowed in (("counted", catalogue.COUNTED), ("rate_unit", catalogue.RATE_UNITS)):
        p[key] = _str(part, key, where, required=False)
        if p[key] is not None and p[key] not in allowed:
            raise Bad("field %s%s '%s' is not one of %s" % (where, key, p[key][:40],
                                                           ", ".join(allowed)))
    p["start_at_ns"] = _int(part, "start_at_ns", where, required=False)
    p["release_at_ns"] = _minmax(part, "release_at_ns", where)
    p["first_io_at_ns"] = _minmax(part, "first_io_at_ns", where)
    p["io_start_spread_s"] = _num(part, "io_start_spread_s", where, required=False, lo=0)
    p["late_by_s"] = _num(part, "late_by_s", where, required=False)
    p["clock_step_s"] = _num(part, "clock_step_s", where, required=False)
    p["clock_step_total_s"] = _num(part, "clock_step_total_s", where, required=False)
    p["warnings"] = _strings(part, "warnings", where)
    res = _num(part, "cache_residency", where, required=False, lo=0)
    if res is not None and res > 1:
        raise Bad("field %scache_residency is above 1" % where)
    p["cache_residency"] = res
    p["cache_residency_error"] = _str(part, "cache_residency_error", where, required=False)
    p["cache_dropped"] = _bool(part, "cache_dropped", where)
    p["cache_expected"] = _str(part, "cache_expected", where, required=False)
    p["replica_changed"] = _bool(part, "replica_changed", where)
    p["generation"] = _int(part, "generation", where, required=False)
    p["pages"] = _int(part, "pages", where, required=False)
    p["mapped_bytes"] = _int(part, "mapped_bytes", where, required=False)
    p["first_pass_s"] = _stats(part, "first_pass_s", where)
    p["rest_pass_median_s"] = _stats(part, "rest_pass_median_s", where)
    origin = _field(part, "replica_origin", where, False)
    if origin is _MISSING:
        p["replica_origin"] = None
    else:
        w = where + "replica_origin."
        rid = _str(origin, "run_id", w)
        if not common.run_id_ok(rid):
            raise Bad("field %srun_id is not a valid run id" % w)
        p["replica_origin"] = (rid, _int(origin, "repetition", w))


# The fields of a thread the reader takes, in one C call a thread (the fast path: each
# present, as the binary writes them all).
_THREAD_FIELDS = operator.itemgetter("time_s", "release_at", "index", "cpu", "error")


def _thread_columns(threads):
    """(times, release instants, indexes, cpus, errors): one list a field; _Slow if a thread
    is not an object or lacks one."""
    try:
        cols = list(zip(*map(_THREAD_FIELDS, threads)))
    except (TypeError, KeyError, AttributeError):  # a JSON value not an object: TypeError
        raise _Slow
    return cols or [(), (), (), (), ()]


def _threads_fast(threads, top):
    """The per-thread figures without a function call per field; _Slow if anything is
    unusual (the checking path _threads then names it)."""
    times, rels, index, cpus, errs = _thread_columns(threads)
    if threads:
        if not (set(map(type, times)) <= _NUM and set(map(type, rels)) <= _NUM and
                set(map(type, index)) == _INT and set(map(type, cpus)) <= _OPT_INT and
                set(map(type, errs)) <= _OPT_STR):
            raise _Slow
        known = cpus if None not in cpus else [c for c in cpus if c is not None]
        # bounds first (a huge integer compares, but cannot become a float for isfinite)
        if min(times) < 0 or min(rels) < 0 or min(index) < 0 or \
                max(times) > MAX_SECONDS or max(rels) > MAX_EPOCH or max(index) > UINT64_MAX or \
                min(known, default=0) < 0 or max(known, default=0) > UINT64_MAX or \
                not (all(map(math.isfinite, times)) and all(map(math.isfinite, rels))):
            raise _Slow
    if not threads or min(rels) > 0:  # every thread ran
        t_ran, r_ran, i_ran, c_ran = times, rels, index, cpus
    else:
        ran = [i for i, r in enumerate(rels) if r > 0]
        t_ran = [times[i] for i in ran]
        r_ran = [rels[i] for i in ran]
        i_ran = [index[i] for i in ran]
        c_ran = [cpus[i] for i in ran]
    first_err = next(("thread %d: %s" % (index[i], e) for i, e in enumerate(errs) if e),
                     None) if any(errs) else None
    return (array.array("d", t_ran), min(r_ran) if r_ran else None,
            max(r_ran) if r_ran else None, heapq.nlargest(top, zip(t_ran, i_ran, c_ran)),
            first_err, (times, index))


def _threads(threads, top, where):
    """The per-thread figures, every field checked (Bad names the first wrong one)."""
    times = array.array("d")
    rel_min = rel_max = None
    heap = []
    first_err = None
    for i, th in enumerate(threads):
        w = "%sper_thread[%d]." % (where, i)
        t = _num(th, "time_s", w, lo=0, hi=MAX_SECONDS)
        rel = _num(th, "release_at", w, lo=0, hi=MAX_EPOCH)
        index = _int(th, "index", w)
        cpu = _int(th, "cpu", w, required=False)
        err = _str(th, "error", w, required=False)
        if err and first_err is None:
            first_err = "thread %d: %s" % (index, err)
        if rel > 0:
            times.append(t)
            rel_min = rel if rel_min is None or rel < rel_min else rel_min
            rel_max = rel if rel_max is None or rel > rel_max else rel_max
            item = (t, index, cpu)
            if len(heap) < top:
                heapq.heappush(heap, item)
            elif item > heap[0]:
                heapq.heapreplace(heap, item)
    return times, rel_min, rel_max, sorted(heap, reverse=True), first_err


# How load_json parses a summary (strict=False).
_SUMMARY_KW = {"parse_constant": _constant}
# The door's text (scan.py), parsed by one decoder made once: json.loads with an argument
# makes a decoder a call, a fifth of the parse of a summary's text.
_DOOR_DECODER = json.JSONDecoder(**_SUMMARY_KW)


def read_summary(path, rep_offset=0, top=TOP_THREADS, door=None):
    """One summary reduced to what the report needs, or {'error': why}. Never raises. door:
    what the fast door made of the file (scan.py's Door), or None: a summary the door reduces
    all of without a doubt gives what the file read here gives; anything else (a field to
    refuse, a thread to look at one by one) and the file is read here."""
    name = os.path.basename(path)
    if door is not None:
        try:
            # the door compared every object's keys: its text is parsed as it is
            return _summary(_DOOR_DECODER.decode(door.text), name, rep_offset, top, door)
        except Exception:  # noqa: BLE001 (the file read here says what it is)
            pass
    try:
        s = load_json(path, strict=False)
    except OSError as e:
        return {"file": name, "error": "cannot read: %s" % (e.strerror or e)}
    except Bad as e:
        return {"file": name, "error": str(e)}
    try:
        return _summary(s, name, rep_offset, top)
    except Bad as e:
        return {"file": name, "error": str(e)}
    except Exception as e:  # a structure no check foresaw: named and skipped, no traceback
        return {"file": name, "error": "unexpected structure (%s: %s)" % (type(e).__name__, e)}


def _summary(s, name, rep_offset, top, door=None):
    """read_summary's work on the parsed JSON s, in steps: the repetition numbering, the
    schema, the node's facts, its tests' parts (or the error of a node that ran none), then
    what goes on to terminals escaped. Raises Bad."""
    if not isinstance(s, dict):
        raise Bad("not a JSON object")
    run = s.get("run") if isinstance(s.get("run"), dict) else {}
    if isinstance(run.get("first_repetition"), int):
        if not 0 <= run["first_repetition"] <= 1000000000:
            raise Bad("field run.first_repetition is out of range")
        # the summary numbers its repetitions itself (stagebench run --repetition R)
        rep_offset = 0
    schema = s.get("schema")
    if schema not in NODE_SCHEMAS:
        if isinstance(schema, str) and schema.startswith("stagebench.") and \
                not schema.startswith("stagebench.node/"):
            return {"file": name, "ignore": "a %s file, not a node summary" % schema}
        raise Bad("schema is %s, expected %s" % (
            json.dumps(schema)[:60] if schema is not None else "missing",
            " or ".join(NODE_SCHEMAS)))
    try:
        out = _facts_fast(s, name, schema, run)
    except _Slow:
        out = _summary_facts(s, name, schema, run)
    if door is not None and "threads" in s:
        out["plan_threads"] = door.plan(s["threads"])
    _summary_tests(out, s, rep_offset, top, door)
    if not out["entries"] and not out["test_errors"]:
        _summary_no_test(out, run, rep_offset)
    _summary_escape(out)
    return out


def _summary_facts(s, name, schema, run):
    """The node's own facts (name, host, filesystem, clock, status, errors, scale, and
    node/2's fields): the report's entry for the summary, its parts still to come."""
    node = _str(s, "node", "")
    if not common.node_name_ok(node):
        raise Bad("field node '%s' is not a valid node name" % node[:70])
    status = _str(s, "status", "")
    fs = s.get("fs") if isinstance(s.get("fs"), dict) else {}
    clock = s.get("clock") if isinstance(s.get("clock"), dict) else {}
    errors = [e for e in _list(s, "errors", "", required=False) if isinstance(e, str)]
    out = {
        "file": name, "error": None, "node": node,
        "host": s.get("host") if isinstance(s.get("host"), str) else None,
        "dir": s.get("dir") if isinstance(s.get("dir"), str) else None,
        "fs": {"type": _opt_str(fs.get("type")), "source": _opt_str(fs.get("source"))},
        "ntp": clock.get("ntp_synchronized") is True,
        "ntp_known": isinstance(clock.get("ntp_synchronized"), bool),
        "maxerror_us": _opt_num(clock.get("maxerror_us")),
        "status": status, "exit_code": _opt_num(s.get("exit_code")), "errors": errors[:3],
        "entries": [], "test_errors": [],
    }
    out["scale"] = run.get("scale") if isinstance(run.get("scale"), str) else None
    _summary_v2(out, s, schema, clock, run)
    return out


_CORE_COUNTS = ("online", "allowed", "used")  # a summary's "cores": whole numbers, required


def _facts_fast(s, name, schema, run):
    """_summary_facts' out (the same keys in the same order), in one pass without a call a
    field; _Slow when any of its checks would not pass, or anything is unusual (_summary_facts
    then reads it, and names what is wrong)."""
    get = s.get
    node, status = get("node"), get("status")
    if type(node) is not str or type(status) is not str or not common.node_name_ok(node):
        raise _Slow
    fs, clock, errors = get("fs", {}), get("clock", {}), get("errors", [])
    if type(fs) is not dict or type(clock) is not dict or type(errors) is not list:
        raise _Slow
    build, cores = get("build"), get("cores")
    host, dir_, version, warnings = get("host"), get("dir"), get("version"), get("warnings", [])
    scale, ov = run.get("scale"), run.get("overrides", _MISSING)
    maxerr, esterr, ntp = clock.get("maxerror_us"), clock.get("esterror_us"), \
        clock.get("ntp_synchronized")
    interval, rid = run.get("interval_s"), run.get("run_id")
    if not (version is None or type(version) is str) or type(warnings) is not list or \
            not (maxerr is None or type(maxerr) is int and 0 <= maxerr <= UINT64_MAX) or \
            not (esterr is None or type(esterr) is int and 0 <= esterr <= UINT64_MAX) or \
            not (ov is _MISSING or type(ov) is list and all(type(x) is str for x in ov)) or \
            not (interval is None or type(interval) in _NUM and 0 <= interval < _INF) or \
            not (rid is None or type(rid) is str and common.run_id_ok(rid)):
        raise _Slow
    if build is None:
        build_id = exe = src = describe = dirty = None
    elif type(build) is dict:
        bget = build.get
        build_id, exe, src = bget("id"), bget("exe_sha256"), bget("source_sha256")
        describe, dirty = bget("describe"), bget("dirty")
        if type(build_id) is not str or \
                not (exe is None or type(exe) is str and _HEX64.match(exe)) or \
                not (src is None or type(src) is str and _HEX64.match(src)) or \
                not (describe is None or type(describe) is str) or \
                not (dirty is None or type(dirty) is bool):
            raise _Slow
    else:
        raise _Slow
    if cores is not None:
        if type(cores) is not dict:
            raise _Slow
        c = {k: cores.get(k) for k in _CORE_COUNTS}
        for v in c.values():
            if type(v) is not int or not 0 <= v <= UINT64_MAX:
                raise _Slow
        c["chosen_by"] = cores.get("chosen_by")
        if not (c["chosen_by"] is None or type(c["chosen_by"]) is str):
            raise _Slow
        cores = c
    fs_type, fs_source = fs.get("type"), fs.get("source")
    threads = get("threads")
    return {
        "file": name, "error": None, "node": node,
        "host": host if isinstance(host, str) else None,
        "dir": dir_ if isinstance(dir_, str) else None,
        "fs": {"type": fs_type if isinstance(fs_type, str) else None,
               "source": fs_source if isinstance(fs_source, str) else None},
        "ntp": ntp is True, "ntp_known": isinstance(ntp, bool), "maxerror_us": maxerr,
        "status": status, "exit_code": _opt_num(get("exit_code")),
        "errors": [e for e in errors if isinstance(e, str)][:3],
        "entries": [], "test_errors": [],
        "scale": scale if isinstance(scale, str) else None,
        "schema": schema, "node_version": version, "build_id": build_id,
        "exe_sha256": exe, "source_sha256": src, "describe": describe, "dirty": dirty,
        "run_id": rid, "cores": cores,
        "plan_threads": len(threads) if isinstance(threads, list) else None,
        "warnings": [x for x in warnings if isinstance(x, str)][:20],
        "esterror_us": esterr, "overrides": None if ov is _MISSING else ov[:20],
        "interval_s": interval,
    }


def _summary_tests(out, s, rep_offset, top, door=None):
    """Every part of every test of the summary into out["entries"] as (test, repetition,
    part, figures); a test without parts into out["test_errors"]."""
    errors = out["errors"]
    for ti, t in enumerate(_list(s, "tests", "")):
        w = "tests[%d]." % ti
        test = _str(t, "test", w)
        cat = catalogue.load()
        if test not in cat.tests:
            raise Bad("field %stest '%s' is not a test" % (w, test[:40]))
        rep = _int(t, "repetition", w)
        if rep < 1:
            raise Bad("field %srepetition is below 1" % w)
        rep += rep_offset
        _num(t, "result_s", w, lo=0, hi=MAX_SECONDS)
        parts = _list(t, "parts", w)
        terr = _str(t, "error", w, required=False)
        if not parts:
            out["test_errors"].append((test, rep, terr or "test %s did not run" % test, None))
        for pi, part in enumerate(parts):
            p = _part(part, "%sparts[%d]." % (w, pi), top, door)
            if p["part"] not in cat.tests[test]["parts"]:
                raise Bad("field %sparts[%d].part '%s' is not a part of test %s"
                          % (w, pi, p["part"], test))
            _part_selfcheck(p, part, "%sparts[%d]." % (w, pi), out["plan_threads"], door)
            if p["status"] not in OK_STATUSES and not p["error"]:
                p["error"] = terr or (errors[0] if errors else "part %s" % p["status"])
            out["entries"].append((test, rep, p["part"], p))


def _part_selfcheck(p, part, where, top_threads, door=None):
    """The part's figures against themselves and the plan (selfcheck.py): one that does not
    add up gets the status "inconsistent" and the reason as its error. The plan's threads:
    the part's own "threads" (node/3), else the summary's thread plan."""
    p["plan_threads"] = _int(part, "threads", where, required=False)
    columns = p.pop("columns")  # the threads' times and indexes, checked (None: not taken)
    if p["status"] not in OK_STATUSES:
        return
    if door is not None:
        # the door's columns: the part surely adds up, or it is read thread by thread
        plan = p["plan_threads"] if p["plan_threads"] is not None else top_threads
        if (top_threads is not None and plan != top_threads) or not selfcheck.adds_up_sums(
                part, catalogue.load().parts[p["part"]].get("expect"), plan, columns.n,
                columns.sums):
            raise _Slow
        return
    plan = p["plan_threads"] if p["plan_threads"] is not None else top_threads
    if p["plan_threads"] is not None and top_threads is not None and \
            p["plan_threads"] != top_threads:
        why = "the part's plan has %d threads, the node's thread plan %d" % (
            p["plan_threads"], top_threads)
    else:
        try:
            why = selfcheck.check(part, catalogue.load().parts[p["part"]].get("expect"), plan,
                                  columns)
        except selfcheck.Unusable as e:
            raise Bad("field %s%s is not a whole number" % (where, e))
    if why:
        p["status"], p["error"] = INCONSISTENT, "inconsistent: " + why


def _summary_no_test(out, run, rep_offset):
    """A node that failed before any test ran (say, its --dir is missing): its error belongs
    to every part, and repetition, the invocation named; Bad for an 'ok' summary."""
    status, errors = out["status"], out["errors"]
    if status == "ok":
        raise Bad("no test results in an 'ok' summary")
    why = errors[0] if errors else "no test ran (status %s)" % status
    named = [t for t in run.get("tests") if isinstance(t, str)] \
        if isinstance(run.get("tests"), list) else []
    repeat = run.get("repeat") if isinstance(run.get("repeat"), int) else 1
    keys = []
    cat = catalogue.load()
    for t in named:
        if t == "all":
            keys += [(x, None) for x in cat.all_tests]
        elif t in cat.part_test:
            keys.append((cat.part_test[t], t))
        elif t in cat.tests:
            keys.append((t, None))
    first = 1 + rep_offset
    if isinstance(run.get("first_repetition"), int):
        first = max(1, run["first_repetition"])
    for rep in range(first, first + max(1, min(repeat, 10000))):
        for test, part in keys:
            out["test_errors"].append((test, rep, why, part))
    if not keys:
        out["test_errors"].append((None, None, why, None))


def _summary_escape(out):
    """What the node wrote, as it goes on to terminals and reports: escaped, never raw."""
    for k in ("host", "dir"):
        out[k] = _esc(out[k])
    out["fs"] = {k: _esc(v) for k, v in out["fs"].items()}
    out["errors"] = [common.safe_text(e) for e in out["errors"]]
    for _t, _r, _name, p in out["entries"]:
        p["error"] = _esc(p["error"])
    out["test_errors"] = [(t, r, _esc(why), part) for t, r, why, part in out["test_errors"]]


def _summary_v2(out, s, schema, clock, run):
    """The top-level fields of stagebench.node/2 (None where node/1 has no such field)."""
    out["schema"] = schema
    out["node_version"] = _str(s, "version", "", required=False)
    build = _field(s, "build", "", False)
    out["build_id"] = None if build is _MISSING else _str(build, "id", "build.")
    _summary_v3(out, s, {} if build is _MISSING else build, run)
    out["warnings"] = _strings(s, "warnings", "")
    out["maxerror_us"] = _int(clock, "maxerror_us", "clock.", required=False)
    out["esterror_us"] = _int(clock, "esterror_us", "clock.", required=False)
    if "overrides" in run:
        ov = _list(run, "overrides", "run.")
        if not all(isinstance(x, str) for x in ov):
            raise Bad("field run.overrides holds something that is not a parameter name")
        out["overrides"] = ov[:20]
    else:
        out["overrides"] = None  # not recorded (node/1)
    out["interval_s"] = _num(run, "interval_s", "run.", required=False, lo=0)


_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _summary_v3(out, s, build, run):
    """The top-level fields of stagebench.node/3 (None where an older node has none): the
    binary's digest and what it was built from, the run id, the cores and the thread plan."""
    for key in ("exe_sha256", "source_sha256"):
        v = _str(build, key, "build.", required=False)
        if v is not None and not _HEX64.match(v):
            raise Bad("field build.%s is not a SHA-256 in hex" % key)
        out[key] = v
    out["describe"] = _str(build, "describe", "build.", required=False)
    out["dirty"] = _bool(build, "dirty", "build.")
    rid = _str(run, "run_id", "run.", required=False)
    if rid is not None and not common.run_id_ok(rid):
        raise Bad("field run.run_id is not a valid run id")
    out["run_id"] = rid
    cores = _field(s, "cores", "", False)
    if cores is _MISSING:
        out["cores"] = None
    else:
        c = {k: _int(cores, k, "cores.") for k in _CORE_COUNTS}
        c["chosen_by"] = _str(cores, "chosen_by", "cores.", required=False)
        out["cores"] = c
    threads = s.get("threads")
    out["plan_threads"] = len(threads) if isinstance(threads, list) else None


def _esc(v):
    return common.safe_text(v) if isinstance(v, str) else v


def _opt_str(v):
    return v if isinstance(v, str) else None


def _opt_num(v):
    """A finite number of sane size, else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or abs(v) > UINT64_MAX:
        return None
    return v if math.isfinite(v) else None


def error_reasons(path):
    """The machine reasons of the errors a summary records (its error_reasons, and each test's
    and part's reason), through the door; an empty set when it cannot be read. The launcher
    reads why a node failed from them, never from the words."""
    try:
        s = load_json(path, strict=False)
    except (OSError, Bad):
        return set()
    if not isinstance(s, dict):
        return set()
    found = [r for r in s.get("error_reasons") or [] if isinstance(r, str)]
    for t in s.get("tests") if isinstance(s.get("tests"), list) else []:
        if isinstance(t, dict):
            found.append(t.get("reason"))
            parts = t.get("parts") if isinstance(t.get("parts"), list) else []
            found += [p.get("reason") for p in parts if isinstance(p, dict)]
    return {r for r in found if isinstance(r, str)}


# ---------------------------------------------------------------------------------------------
# The launcher's manifest and baselines, through the same door


def _names(obj, key, where, check):
    v = obj.get(key)
    if v is None:
        return
    if not isinstance(v, list):
        raise Bad("field %s%s is not a list" % (where, key))
    for i, x in enumerate(v):
        if not check(x):
            raise Bad("field %s%s[%d] '%s' is not valid" % (where, key, i, common.safe_text(x)[:70]
                                                           if isinstance(x, str) else x))


def check_manifest(m, plain=False):
    """A launcher manifest (stagebench.manifest/1) checked like the summaries: node names by
    the binary's rule, tests and parts of the catalogue, numbers finite and in range, strings
    escaped. Returns it; Bad with the reason otherwise. The schema is checked by the caller.
    plain: m was parsed from a text load_json found plain, and has nothing to escape (the walk
    over every string of a 100,000-node manifest is a second of the collector's time)."""
    cat = catalogue.load()
    _names(m, "nodes", "", common.node_name_ok)
    if m.get("run_id") is not None and not common.run_id_ok(m.get("run_id")):
        raise Bad("field run_id is not a valid run id")
    run = m.get("run")
    if run is not None:
        if not isinstance(run, dict):
            raise Bad("field run is not an object")
        _names(run, "tests", "run.", lambda x: isinstance(x, str) and x in cat.tests)
        _names(run, "parts", "run.", lambda x: isinstance(x, str) and x in cat.part_test)
    # servers: node -> server; preparers: server -> node
    for key, rule_k, rule_v in (("servers", common.node_name_ok, common.server_name_ok),
                                ("preparers", common.server_name_ok, common.node_name_ok)):
        d = m.get(key)
        if d is None:
            continue
        if not isinstance(d, dict):
            raise Bad("field %s is not an object" % key)
        for k, v in d.items():
            if not rule_k(k) or not rule_v(v):
                raise Bad("field %s has an entry that is not valid: '%s'"
                          % (key, common.safe_text(k)[:70]))
    for key in ("notes", "warnings"):
        if m.get(key) is not None and not (isinstance(m[key], list) and
                                           all(isinstance(x, str) for x in m[key])):
            raise Bad("field %s is not a list of strings" % key)
    why = clockmodel.check_measurements(m)
    if why:
        raise Bad(why)
    _check_expected_binary(m)
    rounds = m.get("rounds")
    if rounds is not None and not isinstance(rounds, list):
        raise Bad("field rounds is not a list")
    for i, rnd in enumerate(rounds or []):
        w = "rounds[%d]." % i
        if not isinstance(rnd, dict):
            raise Bad("field rounds[%d] is not an object" % i)
        if rnd.get("kind") != "run":
            continue
        test, part = rnd.get("test"), rnd.get("part")
        if not isinstance(test, str) or not isinstance(part, str) or \
                test not in cat.tests or part not in cat.tests[test]["parts"]:
            raise Bad("field %stest/part '%s'/'%s' is not a part of the catalogue"
                      % (w, common.safe_text(test)[:20], common.safe_text(part)[:20]))
        rep = _int(rnd, "rep", w)
        if rep < 1:
            raise Bad("field %srep is below 1" % w)
        _num(rnd, "start_at", w, required=False, lo=0, hi=MAX_EPOCH)
        if rnd.get("failed") is not None:
            _by_node(rnd["failed"], w + "failed", _failed_entry)
    return m if plain else common.safe_json(m)


def _check_expected_binary(m):
    """The binary the launcher expected the nodes to run: {path, sha256} (or null)."""
    eb = m.get("expected_binary")
    if eb is None:
        return
    if not isinstance(eb, dict):
        raise Bad("field expected_binary is not an object")
    sha = eb.get("sha256")
    if sha is not None and not (isinstance(sha, str) and _HEX64.match(sha)):
        raise Bad("field expected_binary.sha256 is not a SHA-256 in hex")
    _str(eb, "path", "expected_binary.", required=False)


def _by_node(d, where, check):
    """An object keyed by node name (a manifest round's failed nodes, a baseline part's node
    times), named where: each key checked by the binary's rule, then its value by
    check(value, 'where.NODE'), in the object's order; Bad naming the first wrong one."""
    if not isinstance(d, dict):
        raise Bad("field %s is not an object" % where)
    for node, v in d.items():
        if not common.node_name_ok(node):
            raise Bad("field %s names '%s', not a valid node name"
                      % (where, common.safe_text(node)[:70]))
        check(v, "%s.%s" % (where, node))


def _failed_entry(res, where):
    """What the launcher saw of a node that failed: {"status", "error"}, strings if given."""
    if not isinstance(res, dict):
        raise Bad("field %s is not an object" % where)
    _str(res, "status", where + ".", required=False)
    _str(res, "error", where + ".", required=False)
    _str(res, "cause", where + ".", required=False)
    _num(res, "offset_s", where + ".", required=False, lo=-MAX_SECONDS, hi=MAX_SECONDS)


def check_baseline(b):
    """A baseline (stagebench.baseline/1): parts of the catalogue, node names by the rule,
    every time a finite number above 0 (a cluster time may be null). Returns it; Bad naming
    the first wrong value otherwise."""
    cat = catalogue.load()
    parts = b.get("parts")
    if not isinstance(parts, dict):
        raise Bad("field parts is not an object")
    for part, d in parts.items():
        if part not in cat.part_test:
            raise Bad("parts names '%s', not a part of any test" % common.safe_text(part)[:40])
        if not isinstance(d, dict):
            raise Bad("field parts.%s is not an object" % part)
        if d.get("cluster_time_s") is not None:
            _time_above_0(d["cluster_time_s"], "parts.%s.cluster_time_s" % part)
        _by_node(d.get("nodes", {}), "parts.%s.nodes" % part, _time_above_0)
    return b


def _time_above_0(t, where):
    """A baseline's time: a finite number above 0 (and within MAX_SECONDS)."""
    if not (isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and
            0 < t <= MAX_SECONDS):
        raise Bad("field %s (%s) is not a time above 0"
                  % (where, common.safe_text(json.dumps(t))[:40]))
