# SPDX-License-Identifier: MIT
"""The cluster report (stagebench.report/3) as typed records: built once by the collector
(report.py), read by every output (the JSON and CSV here, the text, the plot, the Prometheus
textfile). Each record class declares its fields once, in their JSON order, each with its
type, unit and meaning; the JSON keys, the CSV columns (a field's columns, numbered) and the
schema document (reportdoc.py) all come from those declarations.

Records are plain classes with __slots__ (Python 3.6 has no dataclasses). A record's fields
are its JSON; its other attributes (EXTRA) are for the outputs that need more than the JSON
(the plot's and Prometheus's per-node figures) and are never written to the JSON."""
import csv
import io
import json
import keyword

from .common import REPORT_SCHEMA, without_cycle_gc


class Column:
    """One CSV column of a field: its number (1 is the first column), its name, where its
    value comes from (for the schema document), and get(value, record) -> the cell's value."""

    __slots__ = ("number", "name", "source", "get")

    def __init__(self, number, name, source, get=None):
        self.number = number
        self.name = name
        self.source = source
        self.get = get or (lambda value, record: value)


class Field:
    """One field of a record: name (its JSON key), its type (a string such as "number", a
    Record class, [Record] for a list, {"KEY": Record} for an object keyed by KEY), nullable,
    unit, meaning, its CSV columns, and when(record): whether the JSON has it (always when
    None)."""

    __slots__ = ("name", "type", "nullable", "unit", "meaning", "columns", "when")

    def __init__(self, name, type_, unit, meaning, null=False, columns=(), when=None):
        self.name = name
        self.type = type_
        self.nullable = null
        self.unit = unit
        self.meaning = meaning
        self.columns = tuple(columns)
        self.when = when

    def nested(self):
        """The Record class this field holds (itself, in a list or keyed), or None."""
        t = self.type
        if isinstance(t, list):
            t = t[0]
        elif isinstance(t, dict):
            t = next(iter(t.values()))
        return t if isinstance(t, type) and issubclass(t, Record) else None

    def type_text(self):
        """The type as the schema document writes it: number, [Rate], {node: NodeOffset}."""
        t = self.type
        if isinstance(t, list):
            text = "[%s]" % _type_name(t[0])
        elif isinstance(t, dict):
            key, value = next(iter(t.items()))
            text = "{%s: %s}" % (key, _type_name(value))
        else:
            text = _type_name(t)
        return text + " or null" if self.nullable else text


def _type_name(t):
    return t.__name__ if isinstance(t, type) else t


def names(fields):
    return tuple(f.name for f in fields)


class Record:
    """A typed record: FIELDS (its JSON, in order), EXTRA (other attributes), DOC (what it
    is, for the schema document). Every field is given to the constructor; an extra attribute
    defaults to None."""

    __slots__ = ()
    FIELDS = ()
    EXTRA = ()
    DOC = ""

    _FIELD_NAMES = ()  # names(FIELDS), set for each class

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls._FIELD_NAMES = names(cls.FIELDS)
        if "__init__" not in cls.__dict__:
            init = _constructor(cls._FIELD_NAMES, tuple(cls.EXTRA))
            if init is not None:
                init.__qualname__ = "%s.__init__" % cls.__qualname__  # named in its errors
                cls.__init__ = init

    def __init__(self, **values):
        pop = values.pop
        try:
            for name in self._FIELD_NAMES:
                setattr(self, name, pop(name))
        except KeyError:
            raise TypeError("%s: field %s not given" % (type(self).__name__, name))
        for name in self.EXTRA:
            setattr(self, name, pop(name, None))
        if values:
            raise TypeError("%s: no field %s" % (type(self).__name__, ", ".join(values)))

    @classmethod
    def make(cls, **values):
        """A record with every field not given None (a report built by hand: tests)."""
        for f in cls.FIELDS:
            values.setdefault(f.name, None)
        return cls(**values)

    def to_json(self):
        return {f.name: to_json_value(getattr(self, f.name)) for f in self.FIELDS
                if f.when is None or f.when(self)}


def _constructor(fields, extra):
    """A record class's own __init__: its fields (required) and extra attributes (None when not
    given) as keyword-only arguments, each assigned in one statement, or None where a name cannot
    be a parameter (Record.__init__ then takes them). Record.__init__'s loop over the names cost
    more than the rest of a small record's making (a 100,000-node report makes 200,000 of them:
    0.57 s of its 6.4 s). The source is made of the class's own declared names, never of data."""
    every = fields + extra
    if len(set(every)) != len(every) or \
            not all(n.isidentifier() and not keyword.iskeyword(n) and n != "self" for n in every):
        return None
    params = list(fields) + ["%s=None" % n for n in extra]
    src = "def init(self%s):\n" % (", *, " + ", ".join(params) if params else "")
    src += "".join("    self.%s = %s\n" % (n, n) for n in every) or "    pass\n"
    scope = {}
    exec(src, scope)  # noqa: S102 (names checked as identifiers above)
    init = scope["init"]
    init.__name__ = "__init__"
    return init


def to_json_value(v):
    """A value of a field as JSON: records as their objects, lists and objects element by
    element."""
    if type(v) in _PLAIN:  # most values: as they are
        return v
    if isinstance(v, Record):
        return v.to_json()
    if isinstance(v, list):
        return [to_json_value(x) for x in v]
    if isinstance(v, dict):
        return {k: to_json_value(x) for k, x in v.items()}
    return v


# The plain JSON types (exact: bool apart from int): a value of one is written as it is, and an
# object or array of them at once by json's C encoder (dumps_indented).
_PLAIN = frozenset((str, int, float, bool, type(None)))


# ---------------------------------------------------------------------------------------------
# A part across the nodes


class Stats(Record):
    DOC = "The minimum, median and maximum of the nodes' times of a part."
    FIELDS = (
        Field("min", "number", "s", "the fastest node's time", null=True),
        Field("median", "number", "s", "the median node time, the nodes that read from their "
              "own cache left out", null=True),
        Field("max", "number", "s", "the slowest node's time: the part's cluster time",
              null=True),
    )
    __slots__ = names(FIELDS)


class Rate(Record):
    DOC = ("What a part counted per second of its time (the cluster's: its cluster time; a "
           "server's: its slowest node's), with its unit, from the catalogue: bytes read or "
           "written (B/s), pages touched (pages/s: one byte a page, so never a bandwidth), "
           "operations (ops/s).")
    FIELDS = (
        Field("value", "number", "unit", "what was counted, per second", null=True),
        Field("unit", "string", "-", "B/s, pages/s or ops/s"),
        Field("counted", "string", "-", "bytes read, bytes written, pages touched or "
              "operations"),
        Field("pages", "integer", "pages", "the pages touched (only in a pages/s rate)",
              null=True, when=lambda r: r.unit == "pages/s"),
        Field("mapped_bytes", "integer", "B", "the bytes mapped (only in a pages/s rate)",
              null=True, when=lambda r: r.unit == "pages/s"),
        Field("mapped_Bps", "number", "B/s", "the bytes mapped per second (only in a pages/s "
              "rate)", null=True, when=lambda r: r.unit == "pages/s"),
    )
    __slots__ = names(FIELDS)


class Residency(Record):
    DOC = ("The fraction of the replica in each node's own page cache at the release, across "
           "the nodes that ran the part.")
    FIELDS = (
        Field("min", "number", "fraction", "the least", null=True),
        Field("median", "number", "fraction", "the median", null=True),
        Field("max", "number", "fraction", "the most", null=True),
        Field("unknown", ["string"], "-", "the nodes whose residency is not known"),
        Field("warm_nodes", ["string"], "-", "the nodes that started with more than 10% of "
              "a replica expected cold in their cache (left out of the slowest nodes)"),
        Field("applicable", "boolean", "-", "false for a part without a replica (test 4)"),
    )
    __slots__ = names(FIELDS)


class FirstPass(Record):
    DOC = ("A part that reads its replica in passes (1a): the first pass (from the server) "
           "apart from the others (from the node's own cache).")
    FIELDS = (
        Field("first_pass_max_s", "number", "s", "the slowest node's first pass"),
        Field("first_pass_median_s", "number", "s", "the median of the nodes' first "
              "passes"),
        Field("rest_pass_median_s", "number", "s", "the median of the nodes' medians of the "
              "other passes", null=True),
        Field("nodes", "integer", "-", "the nodes that reported their passes"),
    )
    __slots__ = names(FIELDS)


class Latency(Record):
    DOC = ("Per-operation latency of a part, from the nodes' histograms merged bucket by "
           "bucket (util/hist.c's scheme): a percentile is its bucket's midpoint.")
    FIELDS = (
        Field("p50", "number", "s", "the median operation"),
        Field("p90", "number", "s", "the 90th percentile"),
        Field("p99", "number", "s", "the 99th percentile"),
        Field("max", "number", "s", "the slowest operation"),
        Field("mean", "number", "s", "the mean operation"),
        Field("count", "integer", "operations", "the operations counted"),
    )
    __slots__ = names(FIELDS)


class SlowNode(Record):
    DOC = "One of a part's slowest nodes (the nodes that read from their own cache left out)."
    FIELDS = (
        Field("node", "string", "-", "its name"),
        Field("node_time_s", "number", "s", "its node time"),
        Field("server", "string", "-", "its /stage server", null=True),
        Field("deviation", "number", "fraction", "its time over the part's median, less 1",
              null=True),
        Field("release_offset_s", "number", "s", "its first release after the first node's "
              "(own clocks)", null=True),
    )
    __slots__ = names(FIELDS)


class SlowThread(Record):
    DOC = "One of a part's slowest threads, all nodes together."
    FIELDS = (
        Field("node", "string", "-", "its node"),
        Field("thread", "integer", "-", "its index on the node"),
        Field("cpu", "integer", "-", "the CPU it was bound to", null=True),
        Field("time_s", "number", "s", "its thread time"),
        Field("deviation", "number", "fraction", "its time over the median thread time of "
              "all nodes, less 1", null=True),
    )
    __slots__ = names(FIELDS)


class ServerPart(Record):
    DOC = "A part on one /stage server: its nodes that ran it."
    FIELDS = (
        Field("server", "string", "-", "the server"),
        Field("nodes_ok", "integer", "-", "its nodes that ran the part"),
        Field("time_s", "number", "s", "their slowest node's time"),
        Field("median_s", "number", "s", "their median node time"),
        Field("bytes", "integer", "B", "the bytes they moved"),
        Field("bandwidth_Bps", "number", "B/s", "bytes per second of time_s (null unless the "
              "rate is B/s)", null=True),
        Field("rate", Rate, "-", "what they counted per second of time_s"),
    )
    __slots__ = names(FIELDS)


class Failure(Record):
    DOC = ("A node that did not run a part: from its summary (with the file), its summary's "
           "test error, the launcher's record, or its summary that ran nothing; a part whose "
           "figures do not add up is inconsistent.")
    FIELDS = (
        Field("node", "string", "-", "its name"),
        Field("status", "string", "-", "failed, inconsistent, interrupted, timeout, "
              "unreachable, skipped..."),
        Field("error", "string", "-", "why, as the node or the launcher said it", null=True),
        Field("cause", "string", "-", "the cause the launcher found: clock ahead (its clock "
              "was ahead of the launch host's beyond --max-offset: it missed the start)",
              null=True),
        Field("offset_s", "number", "s", "with a cause: the node's measured clock offset",
              null=True),
        Field("file", "string", "-", "its summary file (only for a failure its summary "
              "records)", when=lambda r: r.file is not None),
    )
    __slots__ = names(FIELDS)


class OutNode(Record):
    DOC = "A node named by a part's start verdict."
    FIELDS = (
        Field("node", "string", "-", "its name"),
        Field("by_s", "number", "s", "by how much (null: its offset is unknown)", null=True),
        Field("why", "string", "-", "what is wrong"),
    )
    __slots__ = names(FIELDS)


class ClockStep(Record):
    DOC = ("A jump of a node's clock offset between two neighbouring measurements that its "
           "drift and the steps it recorded do not explain.")
    FIELDS = (
        Field("node", "string", "-", "the node"),
        Field("step_s", "number", "s", "by how much (positive: its clock jumped ahead)"),
        Field("between", "string", "-", "the measurements around it"),
        Field("parts", ["string"], "-", "the parts whose start it hit (part rep R), whose "
              "offset for the node is only known on either side of it"),
    )
    __slots__ = names(FIELDS)


class StartVerdict(Record):
    DOC = ("Whether a part started synchronized to less than the limit across the nodes, from "
           "true release instants (each node's own minus its measured clock offset).")
    FIELDS = (
        Field("verdict", "string", "-", "held, NOT held or cannot tell"),
        Field("spread_s", "number", "s", "the true release spread", null=True),
        Field("uncertainty_s", "number", "s", "its uncertainty (the offsets')", null=True),
        Field("limit_s", "number", "s", "the limit (the spec's second)"),
        Field("basis", "string", "-", "what was judged: release"),
        Field("io_spread_s", "number", "s", "the true spread of the first operations",
              null=True),
        Field("nodes_out", [OutNode], "-", "the nodes out of tolerance against the "
              "reference (the median of the launch host's T and the nodes' true releases), "
              "or whose offset is unknown or too uncertain"),
        Field("why", "string", "-", "why it is not held or cannot tell", null=True),
        Field("offsets_from", ["string"], "-", "how the nodes' offsets at the part's start "
              "were taken from the measurements, each way once"),
        Field("steps", [ClockStep], "-", "the steps of a node's clock that hit this part"),
    )
    __slots__ = names(FIELDS)


class NodeResult(Record):
    """Not in the JSON: one node of a part, for the plot and the Prometheus textfile."""
    DOC = "One node of a part (not in report.json: the plot and the Prometheus textfile)."
    FIELDS = (
        Field("node", "string", "-", "its name"),
        Field("server", "string", "-", "its /stage server ('?' when unknown)"),
        Field("status", "string", "-", "its status: ok, late, failed..., or missing"),
        Field("ok", "boolean", "-", "whether it ran the part (ok or late)"),
        Field("node_time_s", "number", "s", "its node time", null=True),
        Field("bytes", "integer", "B", "the bytes it moved", null=True),
        Field("pages", "integer", "pages", "the pages it touched", null=True),
        Field("ops", "integer", "operations", "its operations", null=True),
        Field("residency", "number", "fraction", "its residency at the release", null=True),
        Field("start_offset_s", "number", "s", "its first release after the scheduled start, "
              "on its own clock", null=True),
    )
    __slots__ = names(FIELDS)

    def counted(self, unit):
        """What it counted in unit (B/s: bytes, pages/s: pages, ops/s: operations)."""
        return {"B/s": self.bytes, "pages/s": self.pages, "ops/s": self.ops}.get(unit)


def _get(*path):
    """A column's value: the attributes path of the field's value (None along the way: None);
    an int in path indexes a list."""
    def get(value, record):
        for step in path:
            if value is None:
                return None
            if isinstance(step, int):
                value = value[step] if len(value) > step else None
            else:
                value = getattr(value, step)
        return value
    return get


def _pages_only(attr):
    return lambda rate, record: getattr(rate, attr) if rate.unit == "pages/s" else None


def _clock_ahead(failed, record):
    return " ".join("%s:%+.6f" % (f.node, f.offset_s) for f in failed
                    if f.cause == "clock ahead" and f.offset_s is not None)


def _spaced(attr):
    return lambda value, record: " ".join(getattr(value, attr))


class PartResult(Record):
    DOC = "One part and repetition across the nodes (its CSV row)."
    FIELDS = (
        Field("test", "string", "-", "the test", columns=[Column(1, "test", "test")]),
        Field("repetition", "integer", "-", "the repetition (1, 2...)",
              columns=[Column(2, "repetition", "repetition")]),
        Field("part", "string", "-", "the part", columns=[Column(3, "part", "part")]),
        Field("start_at", "number", "epoch s", "its scheduled start (T)", null=True),
        Field("nodes_expected", "integer", "-", "the nodes expected in the run",
              columns=[Column(4, "nodes_expected", "nodes_expected")]),
        Field("nodes_ok", "integer", "-", "the nodes that ran it",
              columns=[Column(5, "nodes_ok", "nodes_ok")]),
        Field("nodes_failed", "integer", "-", "the nodes that failed it",
              columns=[Column(6, "nodes_failed", "nodes_failed")]),
        Field("nodes_missing", "integer", "-", "the nodes expected that said nothing",
              columns=[Column(7, "nodes_missing", "nodes_missing")]),
        Field("threads", "integer", "-", "the threads of the nodes that ran it",
              columns=[Column(8, "threads", "threads")]),
        Field("node_time_s", Stats, "s", "the nodes' times: from T until a node's last CPU "
              "was done", columns=[
                  Column(9, "node_time_min_s", "node_time_s.min", _get("min")),
                  Column(10, "node_time_median_s", "node_time_s.median", _get("median")),
                  Column(11, "node_time_max_s", "node_time_s.max", _get("max"))]),
        Field("cluster_time_s", "number", "s", "the slowest node's time", null=True,
              columns=[Column(12, "cluster_time_s", "cluster_time_s")]),
        Field("bytes", "integer", "B", "the bytes the nodes moved",
              columns=[Column(13, "bytes", "bytes")]),
        Field("bandwidth_Bps", "number", "B/s", "bytes per second of the cluster time (null "
              "unless the rate is B/s)", null=True,
              columns=[Column(14, "bandwidth_Bps", "bandwidth_Bps")]),
        Field("rate", Rate, "-", "what the part counted per second of its cluster time",
              columns=[
                  Column(23, "rate", "rate.value", _get("value")),
                  Column(24, "rate_unit", "rate.unit", _get("unit")),
                  Column(25, "rate_counted", "rate.counted", _get("counted")),
                  Column(26, "pages_per_s", "rate.value (pages/s only)", _pages_only("value")),
                  Column(27, "mapped_Bps", "rate.mapped_Bps (pages/s only)",
                         _pages_only("mapped_Bps"))]),
        Field("residency", Residency, "-", "the nodes' cache residency at the release",
              columns=[
                  Column(34, "residency_min", "residency.min", _get("min")),
                  Column(35, "residency_median", "residency.median", _get("median")),
                  Column(36, "residency_max", "residency.max", _get("max")),
                  Column(37, "residency_unknown_nodes", "residency.unknown, space-separated",
                         _spaced("unknown")),
                  Column(38, "warm_nodes", "residency.warm_nodes, space-separated",
                         _spaced("warm_nodes"))]),
        Field("first_pass", FirstPass, "-", "the first pass apart (parts read in passes)",
              null=True, columns=[
                  Column(28, "first_pass_max_s", "first_pass.first_pass_max_s",
                         _get("first_pass_max_s")),
                  Column(29, "rest_pass_median_s", "first_pass.rest_pass_median_s",
                         _get("rest_pass_median_s"))]),
        Field("latency_s", Latency, "-", "per-operation latency", null=True, columns=[
            Column(15, "latency_p50_s", "latency_s.p50", _get("p50")),
            Column(16, "latency_p90_s", "latency_s.p90", _get("p90")),
            Column(17, "latency_p99_s", "latency_s.p99", _get("p99")),
            Column(18, "latency_max_s", "latency_s.max", _get("max"))]),
        Field("latency_not_merged", ["string"], "-", "nodes whose histogram had another "
              "scheme (left out of latency_s)"),
        Field("thread_time_median_s", "number", "s", "the median thread time of all nodes",
              null=True),
        Field("start_spread_s", "number", "s", "the nodes' own release spread (no offsets)",
              null=True, columns=[Column(19, "start_spread_s", "start_spread_s")]),
        Field("start_synchronized", "boolean", "-", "true held, false NOT held, null cannot "
              "tell (from start.verdict)", null=True,
              columns=[Column(20, "start_synchronized", "start_synchronized")]),
        Field("late", ["string"], "-", "the nodes that started late (--late-ok)"),
        Field("slowest", [SlowNode], "-", "the slowest nodes, slowest first", columns=[
            Column(21, "slowest_node", "slowest[0].node", _get(0, "node")),
            Column(22, "slowest_node_time_s", "slowest[0].node_time_s",
                   _get(0, "node_time_s"))]),
        Field("slowest_threads", [SlowThread], "-", "the slowest threads, slowest first"),
        Field("servers", [ServerPart], "-", "the part per /stage server"),
        Field("failed", [Failure], "-", "the nodes that failed it, and why", columns=[
            Column(39, "clock_ahead", "failed[].node:offset_s of those with cause clock "
                   "ahead, space-separated", _clock_ahead)]),
        Field("missing", ["string"], "-", "the nodes expected that said nothing"),
        Field("start", StartVerdict, "-", "the start verdict", columns=[
            Column(30, "start_verdict", "start.verdict", _get("verdict")),
            Column(31, "start_true_spread_s", "start.spread_s", _get("spread_s")),
            Column(32, "start_uncertainty_s", "start.uncertainty_s", _get("uncertainty_s")),
            Column(33, "io_start_spread_s", "start.io_spread_s", _get("io_spread_s"))]),
    )
    EXTRA = ("node_results",)  # [NodeResult]: every node of the run in the part, in its order
    __slots__ = names(FIELDS) + EXTRA

    def node_times(self):
        """{node: node time} of the nodes that ran the part, in the run's node order."""
        return {r.node: r.node_time_s for r in self.node_results or () if r.ok}


class TestResult(Record):
    DOC = "One test and repetition: the sum of its parts' cluster times (its CSV row: sum)."
    FIELDS = (
        Field("test", "string", "-", "the test", columns=[Column(1, "test", "test")]),
        Field("repetition", "integer", "-", "the repetition",
              columns=[Column(2, "repetition", "repetition")]),
        Field("parts", ["string"], "-", "its parts that ran",
              columns=[Column(3, "part", "the word sum", lambda v, r: "sum")]),
        Field("result_s", "number", "s", "the sum of its parts' cluster times (null when one "
              "has none)", null=True,
              columns=[Column(12, "cluster_time_s", "result_s")]),
        Field("complete", "boolean", "-", "false when nodes failed or are missing in a part"),
    )
    __slots__ = names(FIELDS)


# ---------------------------------------------------------------------------------------------
# The run


class NodeCounts(Record):
    DOC = "The nodes of the run."
    FIELDS = (
        Field("expected", "integer", "-", "the nodes expected"),
        Field("expected_from", "string", "-", "where from: --expect, the launcher's manifest, "
              "or the summaries found"),
        Field("expected_set", "string", "-", "the nodes expected, as a node set"),
        Field("seen", "integer", "-", "the nodes with summaries"),
        Field("failed", ["string"], "-", "the nodes that failed a part"),
        Field("missing", ["string"], "-", "the nodes expected that said nothing in a part"),
        Field("unexpected", ["string"], "-", "the nodes that reported, not expected"),
    )
    __slots__ = names(FIELDS)


class ServerEntry(Record):
    DOC = "A /stage server of the run."
    FIELDS = (
        Field("server", "string", "-", "its name (the mount source, or --servers')"),
        Field("nodes", "string", "-", "its nodes, as a node set"),
        Field("count", "integer", "-", "how many"),
        Field("preparer", "string", "-", "the node that prepared its replicas", null=True),
    )
    __slots__ = names(FIELDS)


class NodeOffset(Record):
    DOC = ("A node's clock offset against the launch host over the run, from the launcher's "
           "measurements (each part's start verdict takes the offset next to it).")
    FIELDS = (
        Field("offset_s", "number", "s", "its clock minus the launch host's, at the first "
              "measurement"),
        Field("uncertainty_s", "number", "s", "the first measurement's uncertainty"),
        Field("drift_s", "number", "s", "from the first measurement to the last"),
        Field("rate_ppm", "number", "ppm", "its drift rate between measurements (the low "
              "median of its intervals')"),
        Field("measurements", "integer", "-", "how many measured it"),
        Field("basis", "string", "-", "measured (the launcher's method)"),
    )
    __slots__ = names(FIELDS)


MEASURED_OFFSETS = "launcher manifest"  # Offsets.source: measured by the launcher


class Offsets(Record):
    DOC = "The clock offsets the start verdicts used."
    FIELDS = (
        Field("source", "string", "-", "launcher manifest (null: none, no offset is known)",
              null=True),
        Field("method", "string", "-", "exchange or round (the launcher's)", null=True),
        Field("samples", "integer", "-", "exchanges a node", null=True),
        Field("measurements", "integer", "-", "the launcher's measurements (each of every "
              "node)"),
        Field("nodes", {"node": NodeOffset}, "-", "each node's offset"),
        Field("unknown", {"node": "string"}, "-", "the nodes without one, and why"),
        Field("steps", [ClockStep], "-", "every step of a node's clock between measurements"),
        Field("how_to", "string", "-", "how to get a start verdict, where offsets are missing",
              null=True),
    )
    __slots__ = names(FIELDS)


class ClockSummary(Record):
    DOC = "The nodes' clocks and the start verdict of the run."
    FIELDS = (
        Field("unsynchronized_nodes", ["string"], "-", "the nodes not NTP-synchronized"),
        Field("unknown_nodes", ["string"], "-", "the nodes whose NTP state is unknown"),
        Field("start_spread_max_s", "number", "s", "the largest true start spread of a part",
              null=True),
        Field("start_synchronized", "boolean", "-", "true held in every part, false NOT "
              "held in one, null otherwise", null=True),
        Field("start_verdict", "string", "-", "held, NOT held or cannot tell over the parts",
              null=True),
        Field("limit_s", "number", "s", "the limit (the spec's second)"),
        Field("offsets", Offsets, "-", "the offsets used"),
    )
    __slots__ = names(FIELDS)


class FoldedWarning(Record):
    DOC = "A warning of the nodes, once with every node that wrote it."
    FIELDS = (
        Field("test", "string", "-", "its test (null: of the node's run)", null=True),
        Field("repetition", "integer", "-", "its repetition", null=True),
        Field("part", "string", "-", "its part", null=True),
        Field("warning", "string", "-", "the text"),
        Field("nodes", ["string"], "-", "the nodes"),
    )
    __slots__ = names(FIELDS)


class ServerDrop(Record):
    DOC = "Whether --server-drop's command ran before each part it applies to (test 3)."
    FIELDS = (
        Field("asked", "boolean", "-", "whether --server-drop was given"),
        Field("command", "string", "-", "its command, quoted", null=True),
        Field("ok", "boolean", "-", "it ran and exited 0 every time (null: not asked or the "
              "test did not run)", null=True),
        Field("runs", ["object"], "-", "its runs, as the manifest records them"),
        Field("evidence", "string", "-", "what the verdict rests on"),
    )
    __slots__ = names(FIELDS)


class NodeError(Record):
    DOC = "A node whose summary ran nothing at all."
    FIELDS = (
        Field("node", "string", "-", "its name"),
        Field("error", "string", "-", "its error"),
    )
    __slots__ = names(FIELDS)


class FileIssue(Record):
    DOC = "A file left out: invalid (damaged, a duplicate) or ignored (not a summary)."
    FIELDS = (
        Field("file", "string", "-", "its name"),
        Field("reason", "string", "-", "why"),
    )
    __slots__ = names(FIELDS)


class BaselineRef(Record):
    DOC = "The baseline compared with (--baseline)."
    FIELDS = (
        Field("file", "string", "-", "its file"),
        Field("tolerance", "number", "fraction", "the slowdown allowed"),
        Field("created_at", "number", "epoch s", "when it was saved", null=True),
        Field("run_id", "string", "-", "the run it was saved from", null=True),
    )
    __slots__ = names(FIELDS)


class Regression(Record):
    DOC = "A node or a part slower than the baseline by more than the tolerance."
    FIELDS = (
        Field("part", "string", "-", "the part"),
        Field("node", "string", "-", "the node (null: the part's cluster time)", null=True),
        Field("baseline_s", "number", "s", "the baseline's time"),
        Field("now_s", "number", "s", "this run's (the median of its repetitions)"),
        Field("slower_by", "number", "fraction", "now over the baseline, less 1"),
    )
    __slots__ = names(FIELDS)


class Rule(Record):
    DOC = "One rule of the spec, judged."
    FIELDS = (
        Field("rule", "string", "-", "the rule"),
        Field("ok", "boolean", "-", "held (null: not judged, or informational)", null=True),
        Field("evidence", "string", "-", "what it rests on"),
    )
    __slots__ = names(FIELDS)


class TestValidity(Record):
    DOC = "One test that ran, judged as a spec run by the rules that apply to it."
    FIELDS = (
        Field("test", "string", "-", "the test"),
        Field("verdict", "string", "-", "VALID or NOT VALID"),
        Field("failed", ["string"], "-", "the rules it failed"),
    )
    __slots__ = names(FIELDS)


class Validity(Record):
    DOC = "The run judged as a spec run."
    FIELDS = (
        Field("verdict", "string", "-", "VALID or NOT VALID (VALID only when every rule held: "
              "a rule not judged is not held)"),
        Field("spec_run", "boolean", "-", "at the spec's scale, no override"),
        Field("not_spec_run", "string", "-", "why it is not a spec run", null=True),
        Field("rules", [Rule], "-", "each rule"),
        Field("tests", [TestValidity], "-", "each test that ran"),
        Field("not_run", ["string"], "-", "the spec's tests that did not run"),
    )
    __slots__ = names(FIELDS)


class Report(Record):
    DOC = "The cluster report (stagebench-collect --format json, report.json)."
    FIELDS = (
        Field("schema", "string", "-", REPORT_SCHEMA),
        Field("version", "string", "-", "the collector's stagebench version"),
        Field("source", "string", "-", "what was collected", null=True),
        Field("run_id", "string", "-", "the launcher's run id", null=True),
        Field("launcher", "object", "-", "how it was launched, as the manifest records it "
              "(engine, exec, gather, fanout, armed)", null=True),
        Field("scale", "string", "-", "spec, small or tiny", null=True),
        Field("notes", ["string"], "-", "the launcher's --note"),
        Field("launcher_warnings", ["string"], "-", "the launcher's warnings (50 at most)"),
        Field("interrupted", "string", "-", "the signal that stopped the launcher", null=True),
        Field("files", "integer", "-", "the summary files read"),
        Field("nodes", NodeCounts, "-", "the nodes"),
        Field("servers", [ServerEntry], "-", "the /stage servers"),
        Field("clock", ClockSummary, "-", "the clocks and the start verdict"),
        Field("warnings", [FoldedWarning], "-", "the nodes' warnings, folded"),
        Field("launcher_build", "string", "-", "the build id of the launcher's stagebench",
              null=True),
        Field("expected_binary", "object", "-", "the binary the launcher expected the nodes "
              "to run: {path, sha256} (manifest)", null=True),
        Field("server_drop", ServerDrop, "-", "the server cache drop"),
        Field("parts", [PartResult], "-", "each part and repetition"),
        Field("tests", [TestResult], "-", "each test and repetition"),
        Field("node_errors", [NodeError], "-", "the nodes whose summary ran nothing"),
        Field("invalid", [FileIssue], "-", "the files left out as invalid"),
        Field("ignored", [FileIssue], "-", "the files left out as not summaries"),
        Field("baseline", BaselineRef, "-", "the baseline compared with", null=True),
        Field("regressions", [Regression], "-", "against the baseline"),
        Field("validity", Validity, "-", "the run as a spec run"),
        Field("status", "string", "-", "ok or failed"),
        Field("exit_code", "integer", "-", "0 ok, 1 failed"),
    )
    # end_time: when the run ended (the launcher's finish, else the last node's end), or None;
    # node_servers: {node: its /stage server} of every node of the run;
    # node_builds: {node: the build id its summaries record, or None} of the nodes seen;
    # node_binaries: {node: the SHA-256 of the executable it ran (node/3), or None} of the same
    EXTRA = ("end_time", "node_servers", "node_builds", "node_binaries")
    __slots__ = names(FIELDS) + EXTRA


# ---------------------------------------------------------------------------------------------
# Writing: JSON and CSV


@without_cycle_gc
def to_json(report):
    """json.dumps(report, indent=1), byte for byte: see dumps_indented."""
    return dumps_indented(report.to_json()) + "\n"


# Keys json's C encoder writes at once, with values of _PLAIN types (anything else goes through
# the recursion, which writes it alike).
_KEYS = frozenset((str,))
_flat_encoders = {}
_string = json.encoder.encode_basestring_ascii  # json.dumps of a str, without its call


def dumps_indented(value, indent=1):
    """json.dumps(value, indent=indent), faster: an indent makes json use its Python encoder
    for every value, and a report's 100,000 per-node objects took a second so. Here an object
    or array of scalars (str keys) is written by json's C encoder at once, its separators
    carrying the newline and the indent (a JSON string holds no raw newline), and only the
    containers of containers by the recursion."""
    out = []
    _dump(value, 0, " " * indent, out)
    return "".join(out)


def _dump(v, level, unit, out):
    if isinstance(v, tuple):
        v = list(v)
    if isinstance(v, dict) and v:
        flat = _KEYS.issuperset(map(type, v)) and _PLAIN.issuperset(map(type, v.values()))
        opener, closer = "{", "}"
    elif isinstance(v, list) and v:
        flat = _PLAIN.issuperset(map(type, v))
        opener, closer = "[", "]"
    else:
        out.append(json.dumps(v))  # a scalar, {} or []
        return
    inner = "\n" + unit * (level + 1)
    if flat:
        enc = _flat_encoders.get(inner)
        if enc is None:
            enc = _flat_encoders[inner] = json.JSONEncoder(separators=("," + inner, ": "))
        out.append(opener + inner + enc.encode(v)[1:-1] + "\n" + unit * level + closer)
        return
    out.append(opener)
    if opener == "{":
        for i, (k, x) in enumerate(v.items()):
            out.append(("," if i else "") + inner + (_string(k) if type(k) is str else
                                                     json.dumps(_key(k))) + ": ")
            _dump(x, level + 1, unit, out)
    else:
        for i, x in enumerate(v):
            out.append(("," if i else "") + inner)
            _dump(x, level + 1, unit, out)
    out.append("\n" + unit * level + closer)


def _key(k):
    """A key that is not a str, as json writes it."""
    if k is True or k is False or k is None:
        return json.dumps(k)
    if isinstance(k, (int, float)):
        return json.dumps(k)
    raise TypeError("keys must be str, int, float, bool or None, not %s" % type(k).__name__)


def csv_columns(record_class):
    """The CSV columns a record's fields give, in column order."""
    cols = [(c, f) for f in record_class.FIELDS for c in f.columns]
    return sorted(cols, key=lambda cf: cf[0].number)


CSV_COLUMNS = csv_columns(PartResult)
CSV_FIELDS = [c.name for c, _f in CSV_COLUMNS]


def _csv_val(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "%.9g" % v
    return str(v)


def _csv_row(record):
    row = [""] * len(CSV_FIELDS)
    for c, f in csv_columns(type(record)):
        row[c.number - 1] = _csv_val(c.get(getattr(record, f.name), record))
    return row


def to_csv(report):
    """One row per part and repetition, then one per test (its sum)."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(CSV_FIELDS)
    for p in report.parts:
        out.writerow(_csv_row(p))
    for t in report.tests:
        out.writerow(_csv_row(t))
    return buf.getvalue()
