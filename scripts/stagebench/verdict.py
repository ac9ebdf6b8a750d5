# SPDX-License-Identifier: MIT
"""The collector's verdicts: whether each part's start held across nodes (from true instants,
each node's own minus the offset the launcher measured), the nodes' cache residency at the
release, and whether the run is valid as a spec run, each rule with its evidence.

A node's own clock cannot tell it that it is wrong, so a node's instants are judged only
through an offset measured against the launch host (or, without a launcher manifest, bounded
by the node's NTP maxerror): where neither exists, the verdict is "cannot tell", never "held".
"""
import math
import shlex
import statistics

from . import catalogue
from . import common
from .model import (NodeOffset, OutNode, Residency, Rule, ServerDrop, StartVerdict,
                    Validity)

LIMIT_S = 1.0  # the spec: "a start synchronized to less than a second"
WARM = 0.10  # a part expected cold whose residency at release is above this read its own cache
NO_RELEASE = "no node released its threads"


def fmt_signed(s):
    return ("+" if s >= 0 else "-") + common.fmt_time(abs(s))


# ---------------------------------------------------------------------------------------------
# Clock offsets


def _offset_entry(d, where):
    """One node's measured offset from the manifest: (offset_s, uncertainty_s), or a reason."""
    if not isinstance(d, dict):
        return "%s is not an object" % where
    off, unc = d.get("offset_s"), d.get("uncertainty_s")
    for k, v in (("offset_s", off), ("uncertainty_s", unc)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return "%s.%s is not a number" % (where, k)
    if unc < 0:
        return "%s.uncertainty_s is negative" % where
    return (float(off), float(unc))


def node_offsets(manifest, facts):
    """{node: NodeOffset} for every node whose clock is known against a common reference, and
    {node: why} for the others; facts: {node: its facts (collection.NodeFacts)}.

    With a launcher manifest that measured clocks (manifest/2 `clock`), a node's offset is the
    one measured before the first part; the end measurement, where there is one, shows drift,
    which widens the uncertainty. Without one, a node whose clock is NTP-synchronized is within
    its maxerror of true time (offset 0, uncertainty maxerror)."""
    known, unknown = {}, {}
    clock = manifest.get("clock") if isinstance(manifest, dict) else None
    if isinstance(clock, dict):
        start = clock.get("start") if isinstance(clock.get("start"), dict) else {}
        end = clock.get("end") if isinstance(clock.get("end"), dict) else {}
        method = clock.get("method") if isinstance(clock.get("method"), str) else "?"
        for node in facts:
            if node not in start:
                unknown[node] = "offset not measured by the launcher"
                continue
            s = _offset_entry(start[node], "clock.start.%s" % node)
            if isinstance(s, str):
                unknown[node] = "manifest: " + s
                continue
            drift, unc = 0.0, s[1]
            if node in end:
                e = _offset_entry(end[node], "clock.end.%s" % node)
                if not isinstance(e, str):
                    drift = e[0] - s[0]
                    unc = max(unc, e[1])
            known[node] = NodeOffset(offset_s=s[0], uncertainty_s=unc, drift_s=drift,
                                     basis="measured (%s)" % method)
        return known, unknown
    for node, f in facts.items():
        me = f.maxerror_us
        if f.ntp and isinstance(me, int):
            known[node] = NodeOffset(offset_s=0.0, uncertainty_s=me / 1e6, drift_s=0.0,
                                     basis="NTP maxerror")
        elif f.ntp:
            unknown[node] = "NTP-synchronized but no maxerror, and no launcher measurement"
        else:
            unknown[node] = "no launcher measurement and the clock is not NTP-synchronized"
    return known, unknown


# ---------------------------------------------------------------------------------------------
# The start verdict of one part


def _release_range(e):
    """A node's own release instants (integer ns, own clock) and whether they are exact:
    node/2 gives integer ns; node/1's epoch seconds resolve about 0.24 us."""
    if e.rel_ns is not None:
        return e.rel_ns[0], e.rel_ns[1], True
    if e.rel_min is not None:
        return int(round(e.rel_min * 1e9)), int(round(e.rel_max * 1e9)), False
    return None


def _cross(rows, pick_hi, pick_lo):
    """max over distinct nodes i != j of pick_hi(i) - pick_lo(j) (offsets cancel within one
    node, so a node against itself is its own spread, counted apart)."""
    if len(rows) < 2:
        return None
    his = sorted(((pick_hi(r), r["node"]) for r in rows), reverse=True)[:2]
    los = sorted((pick_lo(r), r["node"]) for r in rows)[:2]
    best = None
    for h, hn in his:
        for lo, ln in los:
            if hn != ln and (best is None or h - lo > best):
                best = h - lo
    return best


def _start_row(n, e, rr, off, limit, out):
    """Node n's release in the part: its own spread, its clock step and, with its offset off,
    its release range (lo, hi, io_lo, io_hi) in true ns; a release later than limit is in out."""
    lo, hi = rr[0], rr[1]
    part_step = e.clock_step_s or 0.0
    total = e.clock_step_total_s or 0.0
    step = part_step if abs(part_step) >= abs(total) else total
    # The steps known to have come before this release (an earlier part's, and this
    # part's when the node saw it in the wait) moved the node's clock after its offset was
    # measured: its offset at the release is the measured one plus them. A step during
    # the part itself came after the release and changes nothing of the start.
    before = total - (0.0 if e.step_in_wait else part_step)
    if (e.late_by_s or 0.0) >= limit:
        out.append(OutNode(node=n, by_s=e.late_by_s, why="released %s after T on its own clock"
                           % common.fmt_time(e.late_by_s)))
    row = {"node": n, "own": (hi - lo) / 1e9, "step": step}
    if off is not None:
        # true instants in s, relative to the earliest own instant of the part: offsets
        # are subtracted in integer ns, so no precision is lost to epoch-sized floats
        o = int(round((off.offset_s + before) * 1e9))
        # drift that the recorded steps explain widens nothing
        drift = min(abs(off.drift_s), abs(off.drift_s - total))
        row.update(lo=lo - o, hi=hi - o, offset=off.offset_s + before,
                   u=off.uncertainty_s + drift)
        io = e.io_ns
        if io is not None:
            row.update(io_lo=io[0] - o, io_hi=io[1] - o)
    return row


def _rows(entries, offsets, limit, out):
    """Each node's release row (_start_row), in natural order, its instants made relative to
    the earliest true one; and the nodes without an offset, and those of node/1 (no integer
    instants)."""
    rows, no_offset, old = [], [], []
    for n in sorted(entries, key=common.natural_key):
        rr = _release_range(entries[n])
        if rr is None:
            continue
        if not rr[2]:
            old.append(n)
        row = _start_row(n, entries[n], rr, offsets.get(n), limit, out)
        if "lo" not in row:
            no_offset.append(n)
        rows.append(row)
    if rows and any("lo" in r for r in rows):
        base = min(r["lo"] for r in rows if "lo" in r)
        for r in rows:
            for k in ("lo", "hi", "io_lo", "io_hi"):
                if k in r:
                    r[k] = (r[k] - base) / 1e9
    return rows, no_offset, old


def _spread(v, rows, entries, limit):
    """v's spread, its uncertainty and the first operations' spread, from the rows; the nodes
    out named in v.nodes_out. Returns (the largest own spread of a node, the rows with an
    offset)."""
    multi = len(rows) > 1
    own = max(r["own"] for r in rows)
    known = [r for r in rows if "lo" in r]
    if not multi:
        # one node: every thread read the same clock, no offset enters
        v.spread_s, v.uncertainty_s = own, 0.0
        r = rows[0]
        if "io_lo" in r or entries[r["node"]].io_ns is not None:
            io = entries[r["node"]].io_ns
            v.io_spread_s = (io[1] - io[0]) / 1e9 if io else None
    if multi and known:
        s = max(r["hi"] for r in known) - min(r["lo"] for r in known)
        s_hi = max(own, _cross(known, lambda r: r["hi"] + r["u"], lambda r: r["lo"] - r["u"])
                   if len(known) > 1 else own)
        s_lo = max(own, _cross(known, lambda r: r["hi"] - r["u"], lambda r: r["lo"] + r["u"])
                   if len(known) > 1 else own, 0.0)
        s = max(s, own)
        v.spread_s = s
        v.uncertainty_s = max(s_hi - s, s - s_lo, 0.0)
        ios = [r for r in known if "io_lo" in r]
        if len(ios) == len(rows):
            v.io_spread_s = max(r["io_hi"] for r in ios) - min(r["io_lo"] for r in ios)
        if len(known) > 1 and s_lo >= limit or own >= limit:
            _name_outliers(known, limit, v.nodes_out)
    elif own >= limit:
        v.spread_s, v.uncertainty_s = own, 0.0
    if multi:
        _name_steps(rows, limit, v.nodes_out)
    return own, known


def start_verdict(entries, offsets, unknown, limit=LIMIT_S):
    """The start verdict of one part (a StartVerdict): entries {node: Entry} of the nodes that
    ran it, offsets {node: NodeOffset}, unknown {node: why its offset is unknown}.

    held iff spread + uncertainty < limit; NOT held iff spread - uncertainty >= limit, or a
    node released later than the limit after T, or its clock stepped by the limit or more;
    otherwise cannot tell, saying why (offsets unknown, too uncertain, or summaries of older
    nodes that do not record steps)."""
    out = []
    rows, no_offset, old = _rows(entries, offsets, limit, out)
    v = StartVerdict(verdict="cannot tell", spread_s=None, uncertainty_s=None, limit_s=limit,
                     basis="release", io_spread_s=None, nodes_out=out, why=None)
    if not rows:
        v.why = NO_RELEASE
        return v
    own, known = _spread(v, rows, entries, limit)
    spread, unc = v.spread_s, v.uncertainty_s
    if out or (spread is not None and spread - unc >= limit and (own >= limit or
                                                                  len(known) > 1)):
        if not out and own >= limit:
            n = max(rows, key=lambda r: r["own"])["node"]
            out.append(OutNode(node=n, by_s=own, why="its own threads were released %s apart"
                               % common.fmt_time(own)))
        v.verdict = "NOT held"
    elif len(rows) > 1 and no_offset:
        by_reason = {}
        for n in no_offset:
            by_reason.setdefault(unknown.get(n, "offset not measured"), []).append(n)
        v.why = "clock offset unknown for " + "; ".join(
            "%s (%s)" % (", ".join(ns[:12]) + (" and %d more" % (len(ns) - 12)
                                               if len(ns) > 12 else ""), why)
            for why, ns in sorted(by_reason.items()))
        for n in no_offset:
            out.append(OutNode(node=n, by_s=None, why=unknown.get(n, "offset not measured")))
    elif spread + unc < limit and old:
        v.why = "summaries of older nodes (stagebench.node/1) record no clock steps and no " \
            "integer instants: %s" % ", ".join(old[:12])
    elif spread + unc < limit:
        v.verdict = "held"
    else:
        v.why = "spread %s with an uncertainty of %s straddles the %g s limit" % (
            common.fmt_time(spread), common.fmt_time(unc), limit)
        _name_outliers(known, limit, out)
    return v


def _name_steps(rows, limit, out):
    """A node whose wall clock stepped around the start: said beside the node where it is
    already named, and named for the step alone when it is the limit or more."""
    named = {o.node: o for o in out}
    for r in rows:
        if not r["step"]:
            continue
        said = "its wall clock stepped by %s around the start" % fmt_signed(r["step"])
        if r["node"] in named:
            named[r["node"]].why += "; " + said
        elif abs(r["step"]) >= limit:
            out.append(OutNode(node=r["node"], by_s=r["step"], why=said))


def _name_outliers(known, limit, out):
    """The nodes whose true release is half the limit or more from the others' median."""
    mids = [(r["lo"] + r["hi"]) / 2 for r in known]
    ref = statistics.median(mids)
    named = {o.node for o in out}
    for r in known:
        late, early = r["hi"] - ref, r["lo"] - ref
        by = late if abs(late) >= abs(early) else early
        if abs(by) >= limit / 2 and r["node"] not in named:
            out.append(OutNode(
                node=r["node"], by_s=by,
                why="released %s %s the others' median (offset %s, uncertainty %s)" % (
                    common.fmt_time(abs(by)), "after" if by > 0 else "before",
                    fmt_signed(r["offset"]), common.fmt_time(r["u"]))))


# ---------------------------------------------------------------------------------------------
# Residency


def residency(entries, nodes):
    """The residency at release across the nodes that ran a part (a Residency); warm nodes
    are those that started with more than WARM of the replica in their own cache where cold
    was expected. A part without a replica (test 4) has none: not applicable, rather than
    unknown."""
    vals, unknown, warm, na = [], [], [], 0
    for n in nodes:
        e = entries[n]
        r = e.residency
        if r is None and e.residency_na:
            na += 1
            continue
        if r is None:
            unknown.append(n)
            continue
        vals.append(r)
        if e.cache_expected == "cold" and r > WARM:
            warm.append(n)
    vals.sort()
    return Residency(min=vals[0] if vals else None,
                     median=statistics.median(vals) if vals else None,
                     max=vals[-1] if vals else None, unknown=unknown, warm_nodes=warm,
                     applicable=not nodes or na < len(nodes))


# ---------------------------------------------------------------------------------------------
# The server drop


def drop_tests():
    """The tests the site's server cache drop applies before (the catalogue's), as the
    report names them: "3"."""
    return ", ".join(catalogue.load().tests_where("server_drop"))


def _drop_test(before):
    """The test of the part a server drop ran before (or of the test itself)."""
    cat = catalogue.load()
    return cat.part_test.get(before, before if before in cat.tests else None)


def server_drop(manifest, parts):
    """Whether the launcher dropped the /stage servers' caches before each repetition of the
    tests it applies to that ran (a ServerDrop; ok None when not asked or none ran)."""
    sd = manifest.get("server_drop") if isinstance(manifest, dict) else None
    tests = set(catalogue.load().tests_where("server_drop"))
    label = "test %s" % drop_tests()
    reps = sorted({p.repetition for p in parts if p.test in tests})
    if not isinstance(sd, dict):
        return ServerDrop(asked=False, command=None, ok=None, runs=[],
                          evidence="not asked (--server-drop not given): whether %s was served "
                                   "by the servers' disks or their caches is not known" % label)
    runs = [r for r in (sd.get("runs") or []) if isinstance(r, dict)]
    cmd = sd.get("command")
    cmd = " ".join(shlex.quote(str(x)) for x in cmd) if isinstance(cmd, list) else None
    if not reps:
        return ServerDrop(asked=True, command=cmd, ok=None, runs=runs,
                          evidence="asked, but %s did not run" % label)
    missing, failed = [], []
    for rep in reps:
        rr = [r for r in runs if r.get("repetition") == rep and
              _drop_test(str(r.get("before", ""))) in tests]
        if not rr:
            missing.append(rep)
        elif not all(r.get("status") == "ok" for r in rr):
            failed.append("rep %d: %s (exit %s)" % (
                rep, next(r.get("status") for r in rr if r.get("status") != "ok"),
                next(r.get("exit_code") for r in rr if r.get("status") != "ok")))
    ok = not missing and not failed
    ev = "ran before %s in every repetition (%d)" % (label, len(reps)) if ok else "; ".join(
        (["did not run before %s rep %s" % (label, ", ".join(map(str, missing)))]
         if missing else []) +
        (["failed before %s %s" % (label, ", ".join(failed))] if failed else []))
    return ServerDrop(asked=True, command=cmd, ok=ok, runs=runs, evidence=ev)


# ---------------------------------------------------------------------------------------------
# Validity


def _names(nodes, limit=8):
    nodes = sorted(set(nodes), key=common.natural_key)
    return ", ".join(nodes[:limit]) + (" and %d more" % (len(nodes) - limit)
                                       if len(nodes) > limit else "")


def validity(report, c):
    """The run judged as a spec run (a Validity): each rule of the spec with its evidence.
    VALID only when no rule failed; a rule that could not be judged (ok None) is said so.
    report: the model.Report being built (its parts, nodes, server drop...); c: the
    collection (its nodes' facts, the replica generations)."""
    parts = report.parts
    spec, why_not = spec_run(report, c)
    sd = report.server_drop
    rules = [
        _parts_rule(parts, report.nodes.expected),
        _start_rule(parts),
        _ntp_rule(c.nodes),
        Rule(rule="spec scale and no override", ok=spec,
             evidence="scale spec, no override" if spec else why_not),
        _generation_rule(c.generations),
        _build_rule(c.nodes, report.launcher_build),
        _trouble_rule(parts, report.interrupted),
        _cache_rule(parts),
        Rule(rule="server drop ran before %s" % drop_tests(), ok=sd.ok,
             evidence=sd.evidence + ("" if sd.asked else " (informational)")),
    ]
    valid = all(r.ok is not False for r in rules)
    return Validity(verdict="VALID" if valid else "NOT VALID", spec_run=spec,
                    not_spec_run=None if spec else why_not, rules=rules)


def _parts_rule(parts, expected):
    short = [(p.part, p.repetition) for p in parts if p.nodes_failed or p.nodes_missing]
    return Rule(rule="every expected node ran every part", ok=bool(parts) and not short,
                evidence="%d parts on %d expected nodes, all ran" % (len(parts), expected)
                if parts and not short else "no part ran" if not parts else
                "parts with failed or missing nodes: %s" % ", ".join(
                    "%s rep %d" % x for x in short[:8]))


def _start_rule(parts):
    verdicts = [(p.part, p.repetition, p.start.verdict) for p in parts]
    bad = [x for x in verdicts if x[2] != "held"]
    return Rule(rule="start held (every part)", ok=bool(verdicts) and not bad,
                evidence="held in every part (%d)" % len(verdicts) if verdicts and not bad else
                "no part ran" if not verdicts else ", ".join(
                    "%s rep %d: %s" % x for x in bad[:8]))


def _ntp_rule(facts):
    unsynced = [n for n, f in facts.items() if not f.ntp]
    return Rule(rule="NTP synchronized on every node", ok=bool(facts) and not unsynced,
                evidence="no summary" if not facts else "not synchronized: %s"
                % _names(unsynced) if unsynced else "every node (%d)" % len(facts))


def _build_rule(facts, launcher_build):
    builds = {}
    for n, f in facts.items():
        builds.setdefault("%s build %s" % (f.node_version or "?",
                                           f.build_id or "not recorded"), []).append(n)
    unknown_build = [n for n, f in facts.items() if not f.build_id]
    if not facts:
        ev, ok = "no summary", False
    elif len(builds) == 1 and not unknown_build:
        ok, ev = True, "%s on every node" % next(iter(builds))
    else:
        ok = False
        ev = "; ".join("%s on %s" % (b, _names(ns)) for b, ns in sorted(builds.items()))
    if isinstance(launcher_build, str):
        ev += "; the launcher ran build %s" % launcher_build
    return Rule(rule="same version and build on every node", ok=ok, evidence=ev)


def _trouble_rule(parts, interrupted):
    late = sorted({n for p in parts for n in p.late}, key=common.natural_key)
    failed = sorted({f.node for p in parts for f in p.failed}, key=common.natural_key)
    interrupted = interrupted or any(f.status == "interrupted" for p in parts
                                     for f in p.failed)
    probs = (["late: " + _names(late)] if late else []) + \
        (["failed: " + _names(failed)] if failed else []) + \
        (["interrupted"] if interrupted else [])
    return Rule(rule="no part late, failed or interrupted", ok=bool(parts) and not probs,
                evidence="; ".join(probs) if probs else "none" if parts else "no part ran")


def _cache_rule(parts):
    name = "caches cold as expected"
    warm = sorted({"%s (%s rep %d)" % (n, p.part, p.repetition) for p in parts
                   for n in p.residency.warm_nodes})
    unknown = sorted({n for p in parts for n in p.residency.unknown}, key=common.natural_key)
    if warm:
        return Rule(rule=name, ok=False,
                    evidence="read from their own cache: %s" % ", ".join(warm[:8]))
    if unknown:
        return Rule(rule=name, ok=None,
                    evidence="residency unknown on %s (could not be measured or an older "
                             "node); no node measured warm" % _names(unknown))
    return Rule(rule=name, ok=bool(parts),
                evidence="every node started every part expected cold below %.0f%%"
                % (WARM * 100) if parts else "no part ran")


def spec_run(report, c):
    """Whether the run is at the spec's parameters: spec scale, no override on any node."""
    why = []
    scales = sorted({f.scale or "not recorded" for f in c.nodes.values()})
    if report.scale != "spec" or any(s != "spec" for s in scales):
        why.append("scale %s" % "/".join(scales or [str(report.scale)]))
    ov = {}
    for n, f in c.nodes.items():
        o = f.overrides
        key = "not recorded (older node)" if o is None else ", ".join(o) if o else None
        if key:
            ov.setdefault(key, []).append(n)
    for k, ns in sorted(ov.items()):
        why.append("overrides %s on %s" % (k, _names(ns)))
    if not c.nodes:
        why.append("no summary")
    return (not why), "not a spec run: " + "; ".join(why) if why else None


def _generation_rule(generations):
    """generations: {(node, test): {rep: set(generations)}} of the tests the spec recreates."""
    recreated = ", ".join(catalogue.load().tests_where("recreate"))
    name = "replica generations new for every repetition of %s" % recreated
    if not generations:
        return Rule(rule=name, ok=None, evidence="none of %s ran" % recreated)
    same, unknown, reps = [], [], 0
    for (node, test), by_rep in sorted(generations.items()):
        seen = {}
        for rep in sorted(by_rep):
            reps += 1
            gens = by_rep[rep]
            if None in gens:
                unknown.append("%s %s" % (node, test))
                continue
            for gen in gens:
                if gen in seen and seen[gen] != rep:
                    same.append("%s test %s rep %d reused rep %d's replica" % (
                        node, test, rep, seen[gen]))
                seen.setdefault(gen, rep)
    if same:
        return Rule(rule=name, ok=False, evidence="; ".join(same[:6]))
    if unknown:
        return Rule(rule=name, ok=None, evidence="generation not recorded for %s" % ", ".join(
            sorted(set(unknown))[:6]))
    return Rule(rule=name, ok=True,
                evidence="%d node-repetitions, each with a replica of its own" % reps)
