# SPDX-License-Identifier: MIT
"""The collector's verdicts: whether each part's start held across nodes (from true instants,
each node's own minus its offset at the part's start, from the launcher's measurements:
clockmodel.py), the nodes' cache residency at the release, and whether the run is valid as a
spec run, each rule with its evidence, for the run and for each test.

A node's own clock cannot tell it that it is wrong, so a node's instants are judged only
through an offset measured against the launch host: where none was measured (no launcher
manifest), the verdict is "cannot tell", never "held", whatever the node's NTP flag says.
"""
import heapq
import shlex
import statistics

from . import catalogue
from . import clockmodel
from . import common
from .model import (ClockStep, NodeOffset, OutNode, Residency, Rule, ServerDrop, StartVerdict,
                    TestValidity, Validity)

LIMIT_S = 1.0  # the spec: "a start synchronized to less than a second"
INCONSISTENT = "inconsistent"  # summaries.INCONSISTENT: a part whose figures do not add up
EXPECTED_FROM_SUMMARIES = "the summaries found"  # report.py: no manifest and no --expect
WARM = 0.10  # a part expected cold whose residency at release is above this read its own cache
NO_RELEASE = "no node released its threads"


def fmt_signed(s):
    return ("+" if s >= 0 else "-") + common.fmt_time(abs(s))


# ---------------------------------------------------------------------------------------------
# Clock offsets


def recorded_steps(groups):
    """{node: [(launch-host instant, step s)]}: the steps of the wall clock the nodes recorded
    in their parts (clock_step_s), each placed just before its part's start instant when the
    node saw it in the wait for the start, else just after (during the part)."""
    out = {}
    for g in groups.values():
        if g.start_at is None:
            continue
        for n, e in g.entries.items():
            if e.clock_step_s:
                t = g.start_at + (-1 if e.step_in_wait else 1) * clockmodel.STEP_EPSILON_S
                out.setdefault(n, []).append((t, e.clock_step_s))
    return out


def clocks(manifest, nodes, groups):
    """The run's clocks (a clockmodel.Clocks): every node's measured offsets, its drift and
    steps. Without a launcher manifest no node has an offset, whatever its NTP flag says."""
    return clockmodel.Clocks(manifest if isinstance(manifest, dict) else {}, nodes,
                             recorded_steps(groups))


def node_offsets(cl, manifest):
    """{node: NodeOffset} of the measured nodes, for the report: the first measurement, the
    drift to the last, the rate."""
    clock = manifest.get("clock") if isinstance(manifest, dict) else None
    method = clock.get("method") if isinstance(clock, dict) and \
        isinstance(clock.get("method"), str) else "?"
    out = {}
    for n, c in cl.clocks.items():
        first, last = c.points[0], c.points[-1]
        out[n] = NodeOffset(offset_s=first.offset, uncertainty_s=first.unc,
                            drift_s=last.offset - first.offset, rate_ppm=c.rate * 1e6,
                            measurements=len(c.points), basis="measured (%s)" % method)
    return out


def clock_steps(cl, parts):
    """Every step between measurements (ClockStep), with the parts whose start it hit."""
    out = []
    for st in cl.steps():
        hit = ["%s rep %d" % (p.part, p.repetition) for p in parts
               if any(x.node == st.node and x.between == st.between() for x in p.start.steps)]
        out.append(ClockStep(node=st.node, step_s=st.amount_s, between=st.between(),
                             parts=hit))
    return out


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
    his = heapq.nlargest(2, ((pick_hi(r), r["node"]) for r in rows))
    los = heapq.nsmallest(2, ((pick_lo(r), r["node"]) for r in rows))
    best = None
    for h, hn in his:
        for lo, ln in los:
            if hn != ln and (best is None or h - lo > best):
                best = h - lo
    return best


def _start_row(n, e, rr, est, limit, out):
    """Node n's release in the part: its own spread, its clock step and, with its offset at the
    part's start (est, a clockmodel.Estimate, which holds the steps the node recorded before its
    release), its release range (lo, hi, io_lo, io_hi) in true ns; a release later than limit
    is in out."""
    lo, hi = rr[0], rr[1]
    part_step = e.clock_step_s or 0.0
    total = e.clock_step_total_s or 0.0
    step = part_step if abs(part_step) >= abs(total) else total
    if (e.late_by_s or 0.0) >= limit:
        out.append(OutNode(node=n, by_s=e.late_by_s, why="released %s after T on its own clock"
                           % common.fmt_time(e.late_by_s)))
    row = {"node": n, "own": (hi - lo) / 1e9, "step": step}
    if est is not None:
        # true instants in ns, relative to the earliest own instant of the part: offsets are
        # subtracted in integer ns, so no precision is lost to epoch-sized floats
        o = int(round(est.offset * 1e9))
        row.update(lo=lo - o, hi=hi - o, offset=est.offset, u=est.unc, est=est)
        io = e.io_ns
        if io is not None:
            row.update(io_lo=io[0] - o, io_hi=io[1] - o)
    return row


def _rows(entries, estimates, limit, out, start_at):
    """Each node's release row (_start_row), in natural order, its instants made relative to
    the earliest true one; the nodes without an offset, and those of node/1 (no integer
    instants); and the reference instant (the launch host's T on that scale, or None)."""
    rows, no_offset, old = [], [], []
    for n in common.natural_sorted(entries):
        rr = _release_range(entries[n])
        if rr is None:
            continue
        if not rr[2]:
            old.append(n)
        row = _start_row(n, entries[n], rr, estimates.get(n), limit, out)
        if "lo" not in row:
            no_offset.append(n)
        rows.append(row)
    t_ref = None
    if rows and any("lo" in r for r in rows):
        base = min(r["lo"] for r in rows if "lo" in r)
        for r in rows:
            for k in ("lo", "hi", "io_lo", "io_hi"):
                if k in r:
                    r[k] = (r[k] - base) / 1e9
        if start_at is not None:
            t_ref = (int(round(start_at * 1e9)) - base) / 1e9
    return rows, no_offset, old, t_ref


def _spread(v, rows, entries, limit, t_ref):
    """v's spread, its uncertainty and the first operations' spread, from the rows; the nodes
    out named in v.nodes_out. Returns (the largest own spread of a node, the rows with an
    offset)."""
    multi = len(rows) > 1
    own = max(r["own"] for r in rows)
    known = [r for r in rows if "lo" in r]
    if not multi:
        # one node: every thread read the same clock, no offset enters
        v.spread_s, v.uncertainty_s = own, 0.0
        io = entries[rows[0]["node"]].io_ns
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
            _name_outliers(known, limit, v.nodes_out, t_ref)
    elif own >= limit:
        v.spread_s, v.uncertainty_s = own, 0.0
    if multi:
        _name_steps(rows, limit, v.nodes_out)
    return own, known


def _how(v, known):
    """How the offsets were taken (each way once), and the steps that hit the part."""
    seen, steps = [], []
    for r in known:
        est = r["est"]
        if est.how not in seen:
            seen.append(est.how)
        if est.step is not None:
            steps.append(ClockStep(node=r["node"], step_s=est.step.amount_s,
                                   between=est.step.between(), parts=[]))
    v.offsets_from = seen[:5] + (["and %d more ways" % (len(seen) - 5)] if len(seen) > 5
                                 else [])
    v.steps = steps


def start_verdict(entries, estimates, unknown, start_at=None, limit=LIMIT_S):
    """The start verdict of one part (a StartVerdict): entries {node: Entry} of the nodes that
    ran it, estimates {node: clockmodel.Estimate} their offsets at the part's start, unknown
    {node: why its offset is unknown}, start_at the part's start instant T (launch host).

    held iff spread + uncertainty < limit; NOT held iff spread - uncertainty >= limit, or a
    node released later than the limit after T, or its clock stepped by the limit or more;
    otherwise cannot tell, saying why (offsets unknown, too uncertain, or summaries of older
    nodes that do not record steps)."""
    out = []
    rows, no_offset, old, t_ref = _rows(entries, estimates, limit, out, start_at)
    v = StartVerdict(verdict="cannot tell", spread_s=None, uncertainty_s=None, limit_s=limit,
                     basis="release", io_spread_s=None, nodes_out=out, why=None,
                     offsets_from=[], steps=[])
    if not rows:
        v.why = NO_RELEASE
        return v
    own, known = _spread(v, rows, entries, limit, t_ref)
    if len(rows) > 1:
        _how(v, known)
    spread, unc = v.spread_s, v.uncertainty_s
    if out or (spread is not None and spread - unc >= limit and (own >= limit or
                                                                  len(known) > 1)):
        if not out and own >= limit:
            n = max(rows, key=lambda r: r["own"])["node"]
            out.append(OutNode(node=n, by_s=own, why="its own threads were released %s apart"
                               % common.fmt_time(own)))
        v.verdict = "NOT held"
    elif len(rows) > 1 and no_offset:
        _unknown_why(v, no_offset, unknown, out)
    elif spread + unc < limit and old:
        v.why = "summaries of older nodes (stagebench.node/1) record no clock steps and no " \
            "integer instants: %s" % ", ".join(old[:12])
    elif spread + unc < limit:
        v.verdict = "held"
    else:
        v.why = "spread %s with an uncertainty of %s straddles the %g s limit" % (
            common.fmt_time(spread), common.fmt_time(unc), limit)
        _name_uncertain(v, known, limit)
        _name_outliers(known, limit, out, t_ref)
    return v


def _unknown_why(v, no_offset, unknown, out):
    """Cannot tell: the nodes without an offset, grouped by why."""
    by_reason = {}
    for n in no_offset:
        by_reason.setdefault(unknown.get(n, "offset not measured"), []).append(n)
    v.why = "clock offset unknown for " + "; ".join(
        "%s (%s)" % (", ".join(ns[:12]) + (" and %d more" % (len(ns) - 12)
                                           if len(ns) > 12 else ""), why)
        for why, ns in sorted(by_reason.items()))
    for n in no_offset:
        out.append(OutNode(node=n, by_s=None, why=unknown.get(n, "offset not measured")))


def _name_uncertain(v, known, limit):
    """Cannot tell: the nodes whose offset alone is uncertain by half the limit or more, named
    with how it was taken."""
    bad = [r for r in known if r["u"] >= limit / 2]
    for r in bad:
        v.nodes_out.append(OutNode(node=r["node"], by_s=None,
                                   why="its offset is uncertain by %s (%s)"
                                   % (common.fmt_time(r["u"]), _est_text(r["est"]))))
    if bad:
        v.why += "; too uncertain: %s" % ", ".join(r["node"] for r in bad[:12])


def _est_text(est):
    """How an offset was taken, with the step's amount and the distance carried."""
    text = est.how
    if est.step is not None:
        text = "a step of %s %s: either side of it" % (fmt_signed(est.step.amount_s),
                                                       est.step.between())
    if est.away:
        text += ", %s %s" % (common.fmt_time(abs(est.away)),
                             "after it" if est.away > 0 else "before it")
    return text


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


def _name_outliers(known, limit, out, t_ref):
    """The nodes whose true release is half the limit or more from the cluster's reference:
    the median of the launch host's start instant T (one clock among the cluster's, which
    breaks a tie between two nodes) and the nodes' true releases. Every node within half the
    limit of it is within the limit of every other: the healthy ones are not named."""
    mids = [(r["lo"] + r["hi"]) / 2 for r in known]
    ref = statistics.median(mids + ([t_ref] if t_ref is not None else []))
    named = {o.node for o in out}
    for r in known:
        late, early = r["hi"] - ref, r["lo"] - ref
        by = late if abs(late) >= abs(early) else early
        if abs(by) >= limit / 2 and r["node"] not in named:
            out.append(OutNode(
                node=r["node"], by_s=by,
                why="released %s %s the cluster's reference (offset %s, uncertainty %s: %s)" % (
                    common.fmt_time(abs(by)), "after" if by > 0 else "before",
                    fmt_signed(r["offset"]), common.fmt_time(r["u"]), _est_text(r["est"]))))


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


def _drop_ran(r, command):
    """Why one run of the server drop is not shown to have run (its record lacks the command,
    an exit status of 0, a duration), or None when it is."""
    if not (r.get("command") or command):
        return "no command recorded"
    rc = r.get("exit_code")
    if isinstance(rc, bool) or not isinstance(rc, int):
        return "no exit status recorded (%s)" % (r.get("output") or r.get("status") or "?")
    if rc != 0:
        return "exit %d" % rc
    d = r.get("duration_s")
    if isinstance(d, bool) or not isinstance(d, (int, float)) or d < 0:
        return "no duration recorded"
    return None


def _drop_output(r):
    """A run's output lines, as recorded (output_lines, else the output's lines)."""
    lines = r.get("output_lines")
    if isinstance(lines, list):
        return [common.safe_text(x) for x in lines if isinstance(x, str)]
    out = r.get("output")
    return [common.safe_text(x) for x in out.splitlines()] if isinstance(out, str) else []


def server_drop(manifest, parts):
    """Whether the launcher ran the site's server cache drop before each repetition of the
    tests it applies to that ran (a ServerDrop; ok None when not asked or none ran). "Ran" only
    from what the manifest records of each run: its command, exit status 0 and duration (its
    output lines said in the evidence); whether the servers' caches really went cold is not
    known to the launcher."""
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
    missing, failed, ran = [], [], []
    for rep in reps:
        rr = [r for r in runs if r.get("repetition") == rep and
              _drop_test(str(r.get("before", ""))) in tests]
        bad = [(r, _drop_ran(r, cmd)) for r in rr]
        bad = [(r, why) for r, why in bad if why]
        if not rr:
            missing.append(rep)
        elif bad:
            failed.append("rep %d: %s" % (rep, bad[0][1]))
        else:
            ran += rr
    ok = not missing and not failed
    if ok:
        last = _drop_output(ran[-1])
        ev = "ran before %s in every repetition (%d): exit 0 after %s%s" % (
            label, len(reps), ", ".join(common.fmt_time(r["duration_s"]) for r in ran[:6]),
            "; its output: %s" % " | ".join(last[-3:]) if last else "; no output")
    else:
        ev = "; ".join((["did not run before %s rep %s" % (label, ", ".join(map(str, missing)))]
                        if missing else []) +
                       (["not shown to have run before %s %s" % (label, ", ".join(failed))]
                        if failed else []))
    return ServerDrop(asked=True, command=cmd, ok=ok, runs=runs, evidence=ev)


# ---------------------------------------------------------------------------------------------
# Validity


def _names(nodes, limit=8):
    nodes = common.natural_sorted(set(nodes))
    return ", ".join(nodes[:limit]) + (" and %d more" % (len(nodes) - limit)
                                       if len(nodes) > limit else "")


DROP_RULE = "server drop ran before %s"  # informational: the only rule VALID does not need


def _informational(rule):
    return rule.rule == DROP_RULE % drop_tests()


def _verdict(rules):
    """VALID only when every rule but the informational one held: a rule not judged (ok None)
    is no proof."""
    return "VALID" if all(r.ok is True for r in rules if not _informational(r)) else "NOT VALID"


def validity(report, c):
    """The run judged as a spec run (a Validity): each rule of the spec with its evidence, the
    run's verdict and each test's (by the rules on its own parts and the node-wide ones), and
    the spec's tests that did not run. report: the model.Report being built (its parts, nodes,
    server drop...); c: the collection (its nodes' facts, groups, the manifest)."""
    spec, why_not = spec_run(report, c)
    node_rules = [
        _expected_rule(report.nodes),
        _ntp_rule(c.nodes),
        Rule(rule="spec scale and no override", ok=spec,
             evidence="scale spec, no override" if spec else why_not),
        _build_rule(c.nodes, report.launcher_build, report.expected_binary),
        _cores_rule(c.nodes),
    ]
    ran = [t for t in catalogue.load().tests if any(p.test == t for p in report.parts)]
    not_run = [t for t in catalogue.load().all_tests if t not in ran]
    run_part_rules = _part_rules(report, c, report.parts, ran)
    rules = node_rules[:1] + [_parts_rule(report.parts, report.nodes.expected)] + \
        node_rules[1:] + run_part_rules + [
            Rule(rule="every test of the spec ran", ok=not not_run,
                 evidence="all of %s" % ", ".join(ran) if not not_run else
                 "did not run: %s" % ", ".join(not_run))]
    tests = []
    for t in ran:
        parts = [p for p in report.parts if p.test == t]
        # a run of one test: its rules on its parts are the run's (judged once: at 100,000
        # nodes the replica rule alone reads every node's entry)
        mine = node_rules + [_parts_rule(parts, report.nodes.expected)] + (
            run_part_rules if ran == [t] else _part_rules(report, c, parts, [t]))
        mine = [r for r in mine if not _informational(r) or
                t in catalogue.load().tests_where("server_drop")]
        tests.append(TestValidity(test=t, verdict=_verdict(mine),
                                  failed=[r.rule for r in mine if r.ok is not True and
                                          not _informational(r)]))
    return Validity(verdict=_verdict(rules), spec_run=spec,
                    not_spec_run=None if spec else why_not, rules=rules, tests=tests,
                    not_run=not_run)


def _part_rules(report, c, parts, tests):
    """The rules judged on parts (of the run, or of one test): start, arithmetic, replicas,
    trouble, caches, the server drop."""
    sd = report.server_drop
    recreated = [t for t in tests if t in catalogue.load().tests_where("recreate")]
    return [_start_rule(parts), _arithmetic_rule(parts)] + (
        [_replica_rule(c, [g for g in c.groups.values() if g.test in recreated])]
        if recreated else []) + [
        _trouble_rule(parts, report.interrupted),
        _cache_rule(parts),
        Rule(rule=DROP_RULE % drop_tests(), ok=sd.ok,
             evidence=sd.evidence + ("" if sd.asked else " (informational)")),
    ]


def _expected_rule(nodes):
    known = nodes.expected_from != EXPECTED_FROM_SUMMARIES
    return Rule(rule="the expected nodes known", ok=known,
                evidence="%d nodes, from %s" % (nodes.expected, nodes.expected_from) if known
                else "no launcher manifest and no --expect: a node that said nothing cannot be "
                     "counted missing (%d nodes reported)" % nodes.seen)


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


def _short(digest):
    return digest[:12] if isinstance(digest, str) else "not recorded"


def _build_rule(facts, launcher_build, expected):
    """The same binary on every node, by the SHA-256 of the executable each ran (node/3), and
    the one the launcher expected; the build id and whether the tree was modified as evidence."""
    name = "the same binary on every node"
    if not facts:
        return Rule(rule=name, ok=False, evidence="no summary")
    by = {}
    for n, f in facts.items():
        by.setdefault(f.exe_sha256, []).append(n)
    want = expected.get("sha256") if isinstance(expected, dict) else None
    unknown = by.pop(None, [])
    if want is None and by:  # no launcher's word: the binary most nodes ran
        want = max(by, key=lambda d: (len(by[d]), d))
    odd = {d: ns for d, ns in by.items() if d != want}
    ev = []
    for d, ns in sorted(odd.items()):
        ev.append("%s ran binary %s, not %s%s" % (
            _names(ns), _short(d), _short(want), " (the launcher's)"
            if isinstance(expected, dict) and expected.get("sha256") else ""))
    if unknown:
        ev.append("binary not recorded (an older stagebench): %s" % _names(unknown))
    if not odd and not unknown:
        ev.append("binary %s on every node (%d)%s" % (
            _short(want), len(facts), ", as the launcher expected"
            if isinstance(expected, dict) and expected.get("sha256") == want else ""))
    builds = sorted({"%s build %s" % (f.node_version or "?", f.build_id or "not recorded")
                     for f in facts.values()})
    ev.append(", ".join(builds[:3]))
    dirty = [n for n, f in facts.items() if f.dirty]
    if dirty:
        ev.append("built from a modified tree (git describe --dirty): %s" % _names(dirty))
    if isinstance(launcher_build, str):
        ev.append("the launcher ran build %s" % launcher_build)
    ok = None if unknown and not odd else not odd
    return Rule(rule=name, ok=ok, evidence="; ".join(ev))


def _cores_rule(facts):
    """One job per core: every node ran one thread on each core it has. A binding that lets a
    node use fewer cores than it has online (taskset, a cgroup, a Slurm allocation that is
    not exclusive) fails it as running fewer threads does: the spec asks for a job on every
    core of the System."""
    name = "one job per core on every node"
    few, restricted, unknown = [], [], []
    for n in common.natural_sorted(facts):
        cores = facts[n].cores
        if not cores:
            unknown.append(n)
        for online, allowed, used, how in sorted(cores, key=_cores_order):
            if used < allowed:
                few.append("%s ran %d thread%s on %d allowed cores (%s)" % (
                    n, used, "" if used == 1 else "s", allowed, _chosen(how)))
            if allowed < online:
                restricted.append("%s may use %d of its %d cores (%s)" % (n, allowed, online,
                                                                         _chosen(how)))
    if not facts:
        return Rule(rule=name, ok=False, evidence="no summary")
    ev = few[:8] + restricted[:8] + (["cores not recorded (an older stagebench): %s"
                                      % _names(unknown)] if unknown else [])
    if not ev:
        ev = ["every node ran a thread on each of its allowed cores (%d node%s)"
              % (len(facts), "" if len(facts) == 1 else "s")]
    return Rule(rule=name, ok=False if few or restricted else None if unknown else True,
                evidence="; ".join(ev))


def _cores_order(c):
    """A node's cores (online, allowed, used, chosen by) in order: by the counts, then what
    chose them, one that does not say (None: a summary without it) first; the order of
    tuples, which cannot compare None with a name."""
    return c[:3], c[3] is not None, c[3] or ""


def _chosen(how):
    return {"cpus": "--cpus", "threads": "--threads", "slurm": "Slurm's binding",
            "binding": "an inherited binding", "default": "every core"}.get(how, how or "?")


def _arithmetic_rule(parts):
    bad = ["%s (%s rep %d): %s" % (f.node, p.part, p.repetition, f.error) for p in parts
           for f in p.failed if f.status == INCONSISTENT]
    return Rule(rule="every part's figures add up", ok=bool(parts) and not bad,
                evidence="; ".join(bad[:6]) + (" and %d more" % (len(bad) - 6)
                                               if len(bad) > 6 else "") if bad else
                "every node's node time, threads, operations, bytes and files are the plan's"
                if parts else "no part ran")


def _trouble_rule(parts, interrupted):
    late = common.natural_sorted({n for p in parts for n in p.late})
    failed = common.natural_sorted({f.node for p in parts for f in p.failed})
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
    unknown = common.natural_sorted({n for p in parts for n in p.residency.unknown})
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


def run_ids(c):
    """The ids this run goes by: the launcher's, and each invocation's (--run-id, or its
    run tag when it was given none)."""
    ids = set()
    if isinstance(c.manifest, dict) and isinstance(c.manifest.get("run_id"), str):
        ids.add(c.manifest["run_id"])
    for f in c.nodes.values():
        ids |= f.run_ids
    return ids


def _replica_rule(c, groups):
    """Every repetition of the tests the spec recreates read a replica created for it: the
    run id and repetition in the replica (node/3) are this run's and the repetition's; the
    generations differ between repetitions. A reused replica is named."""
    recreated = catalogue.load().tests_where("recreate")
    name = "a replica created for every repetition of %s" % ", ".join(recreated)
    ids = run_ids(c)
    seen, reused, unknown = set(), [], []
    for g in sorted(groups, key=lambda g: (g.test, g.rep, g.part)):
        if g.test not in recreated:
            continue
        for n, e in g.entries.items():
            if not e.ok or (n, g.test, g.rep) in seen:
                continue
            seen.add((n, g.test, g.rep))
            if e.origin is None:
                unknown.append("%s %s rep %d" % (n, g.test, g.rep))
            elif e.origin[0] not in ids or e.origin[1] != g.rep:
                reused.append("%s %s rep %d read a replica created for run %s rep %d" % (
                    n, g.test, g.rep, e.origin[0], e.origin[1]))
    reused += _generation_reuse(c.generations, {g.test for g in groups})
    if not seen:
        return Rule(rule=name, ok=False, evidence="no node ran %s" % ", ".join(
            sorted({g.test for g in groups})))
    if reused:
        return Rule(rule=name, ok=False, evidence="; ".join(reused[:6]) + (
            " and %d more" % (len(reused) - 6) if len(reused) > 6 else ""))
    if unknown:
        return Rule(rule=name, ok=None, evidence="origin not recorded in the replica (an older "
                    "stagebench): %s" % ", ".join(sorted(unknown)[:6]))
    return Rule(rule=name, ok=True,
                evidence="%d node-repetitions, each on a replica created for it by this run"
                % len(seen))


def _generation_reuse(generations, tests):
    """generations: {(node, test): {rep: set(generations)}}: a generation read in two
    repetitions of a test on a node is a reused replica."""
    same = []
    # a node that ran one repetition of a test reused nothing (of 100,000 nodes, most)
    for (node, test), by_rep in sorted((k, v) for k, v in generations.items()
                                       if len(v) > 1 and k[1] in tests):
        first = {}
        for rep in sorted(by_rep):
            for gen in by_rep[rep] - {None}:
                if gen in first and first[gen] != rep:
                    same.append("%s test %s rep %d reused rep %d's replica" % (
                        node, test, rep, first[gen]))
                first.setdefault(gen, rep)
    return same
