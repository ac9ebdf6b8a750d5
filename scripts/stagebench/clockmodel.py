# SPDX-License-Identifier: MIT
"""Each node's clock offset over the run, from every measurement the launcher took, and the
offset at any instant of it (a part's start): what the start verdict judges true instants with.

A measurement (the manifest's clock.measurements; from an older launcher, the one before the
first part, clock.start, and the one after the last, clock.end) gives each node's offset against
the launch host with its uncertainty, at a launch-host instant, next to a part (before it, after
it, or a status round while it ran). Per node the measurements make a series; between two
neighbours the offset moves by drift, which is interpolated, or by a step:

  - the drift rate is the node's own: the low median of the rates between its neighbouring
    measurements (one interval: its rate, when it is within MAX_DRIFT; beyond that a single
    interval cannot tell a drift from a step);
  - a step is a jump between neighbours beyond their uncertainties and what the drift and
    MAX_DRIFT explain, after the steps the node itself recorded (a part's clock_step_s, with
    whether it came in the wait for the start or during the part) are taken out; it is named
    with the measurements around it and the parts it hit (the parts whose start lies between
    them). At a part a step hit, the offset is only known to be on one side of it or the other:
    the midpoint, uncertain by half the step.

Outside the measurements the offset is the nearest one's, its uncertainty widened by MAX_DRIFT
for every second away. A node with no measurement has no offset: "cannot tell".
"""
import math

from . import clocksync
from . import common

# No clock drifts faster than this (s/s) unless it is measured to: the most a kernel's NTP
# discipline slews (500 ppm), and far beyond a quartz clock's tens of ppm.
MAX_DRIFT = clocksync.MAX_DRIFT
# A node-recorded step came just before the release (in the wait) or just after it (during
# the part): placed this far from the part's start instant.
STEP_EPSILON_S = 1e-3
NO_MANIFEST = ("no clock offset measured (no launcher manifest): a node's own NTP flag and "
               "maxerror are its word, not a measurement")
HOW_TO = ("to judge the start, launch with stagebench-cluster, or measure each node with "
          "`stagebench clock` and give the offsets to stagebench-collect --manifest FILE "
          "(stagebench-manifest(5))")
WHENS = ("before", "after", "status")
# No offset or uncertainty is larger than this (s): the collector's bound of a time
MAX_OFFSET_S = 1e7


class Point:
    """One node's measurement: at (launch-host epoch s, or None when not recorded), offset and
    uncertainty (s), label (what it was next to), side (for a point without an instant: -1
    before every part, +1 after every part)."""

    __slots__ = ("at", "offset", "unc", "label", "side")

    def __init__(self, at, offset, unc, label, side=0):
        self.at, self.offset, self.unc, self.label, self.side = at, offset, unc, label, side


class Estimate:
    """A node's offset at an instant: offset and uncertainty (s), how it was taken (one line,
    the same for every node taken the same way), the step it lies in, if any (a Step), and how
    far from its measurement it was carried (s, None when it lies between two)."""

    __slots__ = ("offset", "unc", "how", "step", "away")

    def __init__(self, offset, unc, how, step=None, away=None):
        self.offset, self.unc, self.how, self.step, self.away = offset, unc, how, step, away


class Step:
    """A jump of a node's offset between two neighbouring measurements that drift and the
    node's own recorded steps do not explain: amount_s, the measurements' labels and
    instants."""

    __slots__ = ("node", "amount_s", "left", "right", "left_at", "right_at")

    def __init__(self, node, amount_s, left, right):
        self.node, self.amount_s = node, amount_s
        self.left, self.right = left.label, right.label
        self.left_at, self.right_at = left.at, right.at

    def between(self):
        return "between the measurements %s and %s" % (self.left, self.right)


# ---------------------------------------------------------------------------------------------
# The measurements of a manifest


def _label(next_to):
    """What a measurement was next to, in words: "before 1a rep 1", "status round 3 of 2b rep
    2"."""
    if not isinstance(next_to, dict):
        return "at an unnamed point"
    when, part, rep = next_to.get("when"), next_to.get("part"), next_to.get("rep")
    what = "%s rep %s" % (part, rep) if part is not None else "the run"
    if when == "status":
        return "status round %s of %s" % (next_to.get("round"), what)
    return "%s %s" % (when, what)


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_measurements(m):
    """The manifest's clock.measurements at the door: a list of objects, each with at (epoch
    s), next_to ({when: before, after or status, part, rep, round}), nodes ({node: {offset_s,
    uncertainty_s, measured_at?}}), unmeasured ({node: why}). Returns None, or why not (one
    line)."""
    clock = m.get("clock") if isinstance(m, dict) else None
    ms = clock.get("measurements") if isinstance(clock, dict) else None
    if ms is None:
        return None
    if not isinstance(ms, list):
        return "field clock.measurements is not a list"
    for i, x in enumerate(ms):
        w = "clock.measurements[%d]" % i
        if not isinstance(x, dict):
            return "field %s is not an object" % w
        if not _number(x.get("at")) or not 0 < x["at"] < 1e11:
            return "field %s.at is not an instant" % w
        nt = x.get("next_to")
        if not isinstance(nt, dict) or nt.get("when") not in WHENS:
            return "field %s.next_to.when is not one of %s" % (w, ", ".join(WHENS))
        for key in ("nodes", "unmeasured"):
            d = x.get(key, {})
            if not isinstance(d, dict) or not all(common.node_name_ok(n) for n in d):
                return "field %s.%s is not an object keyed by node names" % (w, key)
        for n, e in x.get("nodes", {}).items():
            why = _entry_bad(e)
            if why:
                return "field %s.nodes.%s: %s" % (w, n, why)
    return None


def _entry_bad(e):
    if type(e) is dict:
        # the launcher's own entries, without a call a field: floats in range (a NaN or an
        # infinity compares false), measured_at absent or a finite float
        o, u, at = e.get("offset_s"), e.get("uncertainty_s"), e.get("measured_at")
        if type(o) is float and type(u) is float and -MAX_OFFSET_S <= o <= MAX_OFFSET_S and \
                0 <= u <= MAX_OFFSET_S and (at is None or (type(at) is float and
                                                          math.isfinite(at))):
            return None
    if not isinstance(e, dict):
        return "not an object"
    for k in ("offset_s", "uncertainty_s"):
        if not _number(e.get(k)):
            return "%s is not a number" % k
    if e["uncertainty_s"] < 0:
        return "uncertainty_s is negative"
    for k in ("offset_s", "uncertainty_s"):
        if abs(e[k]) > MAX_OFFSET_S:  # the verdict takes offsets in integer ns
            return "%s is beyond %g s" % (k, MAX_OFFSET_S)
    if e.get("measured_at") is not None and not _number(e["measured_at"]):
        return "measured_at is not a number"
    return None


def _run_rounds(m):
    return [r for r in m.get("rounds") or [] if isinstance(r, dict) and r.get("kind") == "run"]


def measurements(m):
    """The manifest's measurements as [(label, side, {node: Point}, {node: why})] in their
    order: clock.measurements when it has any, else clock.start (before the first part) and
    clock.end (after the last). [] without a manifest that measured."""
    clock = m.get("clock") if isinstance(m, dict) else None
    if not isinstance(clock, dict):
        return []
    out = []
    listed = clock.get("measurements")
    if isinstance(listed, list) and listed:
        for x in listed:
            label = _label(x.get("next_to"))
            pts = {n: Point(e.get("measured_at") if _number(e.get("measured_at")) else x["at"],
                            float(e["offset_s"]), float(e["uncertainty_s"]), label)
                   for n, e in x.get("nodes", {}).items() if not _entry_bad(e)}
            out.append((label, 0, pts, dict(x.get("unmeasured") or {})))
        return out
    rounds = _run_rounds(m)
    first = "before the first part" + (" (%s rep %s)" % (rounds[0].get("part"),
                                                         rounds[0].get("rep")) if rounds else "")
    last = "after the last part" + (" (%s rep %s)" % (rounds[-1].get("part"),
                                                      rounds[-1].get("rep")) if rounds else "")
    why = clock.get("why_unmeasured") if isinstance(clock.get("why_unmeasured"), dict) else {}
    for key, label, side in (("start", first, -1), ("end", last, 1)):
        d = clock.get(key) if isinstance(clock.get(key), dict) else {}
        pts = {}
        for n, e in d.items():
            if _entry_bad(e):
                continue
            at = e.get("measured_at")
            pts[n] = Point(at if _number(at) else None, float(e["offset_s"]),
                           float(e["uncertainty_s"]), label, side)
        gone = why.get(key) if isinstance(why.get(key), dict) else {}
        out.append((label, side, pts, {n: w for n, w in gone.items() if isinstance(w, str)}))
    return out


# ---------------------------------------------------------------------------------------------
# One node's clock


def _low_median(rates):
    """The median of rates; of an even count the middle one nearer 0 (of two intervals, one
    with a step, the calm one)."""
    s = sorted(rates)
    n = len(s)
    if n % 2:
        return s[n // 2]
    a, b = s[n // 2 - 1], s[n // 2]
    return a if abs(a) <= abs(b) else b


class NodeClock:
    """A node's measurements in time order and the steps it recorded itself: its drift rate,
    the intervals with a step, and its offset at any instant."""

    def __init__(self, node, points, recorded):
        self.node = node
        # untimed points keep their side: before every timed one, or after
        self.points = sorted(points, key=lambda p: (p.side if p.at is None else 0,
                                                    p.at if p.at is not None else 0))
        self.recorded = sorted(recorded)  # [(launch-host instant, step s)]
        self.rate = self._rate()
        self.steps = {}  # interval index -> Step
        for j in range(len(self.points) - 1):
            resid = self._residual(j)
            if resid is not None:
                self.steps[j] = Step(node, resid, self.points[j], self.points[j + 1])

    def _known(self, t0, t1):
        """The steps the node recorded in (t0, t1] (None: unbounded on that side)."""
        if not self.recorded:  # most nodes: the sum of nothing
            return 0
        return sum(s for t, s in self.recorded
                   if (t0 is None or t > t0) and (t1 is None or t <= t1))

    def _timed(self, j):
        a, b = self.points[j], self.points[j + 1]
        return a.at is not None and b.at is not None and b.at > a.at

    def _rate(self):
        """The drift rate: the low median of the neighbours' rates, of those whose own
        uncertainty ((a.unc + b.unc) / their interval) is within MAX_DRIFT: two measurements
        16 ms apart, as before a part, are each known to 40 us, and their rate to 5,000 ppm,
        which is noise, not drift (taken, it made a 3 s part's 20 us a 2.7 ms step)."""
        rates = []
        for j in range(len(self.points) - 1):
            if self._timed(j):
                a, b = self.points[j], self.points[j + 1]
                d = b.at - a.at
                if (a.unc + b.unc) / d > MAX_DRIFT:
                    continue
                rates.append((b.offset - a.offset - self._known(a.at, b.at)) / d)
        if not rates:
            return 0.0
        if len(rates) == 1:
            return rates[0] if abs(rates[0]) <= MAX_DRIFT else 0.0
        return _low_median(rates)

    def _residual(self, j):
        """The jump of interval j that drift and recorded steps leave unexplained, when it is
        beyond the measurements' uncertainties (and MAX_DRIFT over the interval); else None."""
        a, b = self.points[j], self.points[j + 1]
        timed = self._timed(j)
        d = b.at - a.at if timed else 0.0
        resid = b.offset - a.offset - self._known(a.at, b.at) - self.rate * d
        return resid if abs(resid) > a.unc + b.unc + MAX_DRIFT * d else None

    def _from(self, p, t):
        """The offset at t carried from point p alone: its drift and the recorded steps between
        them; the uncertainty widened by MAX_DRIFT for each second between them."""
        if p.at is None:  # before every part (its steps since come on top), or after all
            if p.side < 0:
                return p.offset + self._known(None, t), p.unc
            return p.offset - self._known(t, None), p.unc
        d = t - p.at
        known = self._known(p.at, t) if d >= 0 else -self._known(t, p.at)
        return p.offset + self.rate * d + known, p.unc + MAX_DRIFT * abs(d)

    def at(self, t):
        """The node's offset at launch-host instant t, an Estimate."""
        pts = self.points
        left = [i for i, p in enumerate(pts) if (p.at is None and p.side < 0) or
                (p.at is not None and p.at <= t)]
        j = left[-1] if left else None
        if j is None or j == len(pts) - 1:
            p = pts[0] if j is None else pts[j]
            off, unc = self._from(p, t)
            return Estimate(off, unc, "carried from the measurement %s" % p.label,
                            away=None if p.at is None else t - p.at)
        a, b = pts[j], pts[j + 1]
        off, _u = self._from(a, t)
        step = self.steps.get(j)
        if step is not None:
            return Estimate(off + step.amount_s / 2, abs(step.amount_s) / 2 + max(a.unc, b.unc),
                            "a step %s: either side of it" % step.between(), step)
        if self._timed(j):
            f = (t - a.at) / (b.at - a.at)
            unc = a.unc * (1 - f) + b.unc * f
        else:
            unc = max(a.unc, b.unc)
        return Estimate(off, unc, "interpolated between the measurements %s and %s"
                        % (a.label, b.label))


# ---------------------------------------------------------------------------------------------
# Every node


class Clocks:
    """The clocks of a run: manifest (the launcher's, or {}), nodes (the nodes with summaries),
    recorded ({node: [(launch-host instant, step s)]}, the steps the nodes recorded in their
    parts). clocks[node] is a NodeClock; unknown {node: why it has no offset}."""

    def __init__(self, manifest, nodes, recorded):
        self.measured = bool(isinstance(manifest, dict) and
                             isinstance(manifest.get("clock"), dict))
        ms = measurements(manifest) if self.measured else []
        self.count = sum(1 for m in ms if m[2])  # the measurements that measured a node
        points, why = {}, {}
        for _label_, _side, pts, gone in ms:
            for n, p in pts.items():
                points.setdefault(n, []).append(p)
            for n, w in gone.items():
                why.setdefault(n, w)
        self.clocks, self.unknown = {}, {}
        for n in nodes:
            if n in points:
                self.clocks[n] = NodeClock(n, points[n], recorded.get(n, []))
            elif not self.measured:
                self.unknown[n] = NO_MANIFEST
            else:
                self.unknown[n] = "offset not measured by the launcher" + (
                    ": %s" % why[n] if n in why else "")

    def at(self, node, t):
        """node's Estimate at t (None: no offset; t None: its first measurement's)."""
        c = self.clocks.get(node)
        if c is None:
            return None
        if t is None:
            p = c.points[0]
            return Estimate(p.offset, p.unc, "the measurement %s (the part's start instant "
                            "is not known)" % p.label)
        return c.at(t)

    def steps(self):
        """Every step of every node, in node order."""
        return [s for n in common.natural_sorted(n for n, c in self.clocks.items() if c.steps)
                for _j, s in sorted(self.clocks[n].steps.items())]
