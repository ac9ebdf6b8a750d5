# SPDX-License-Identifier: MIT
"""Regressions in the history, judged two ways, and lasting changes.

Tonight's run (the newest, or the one named) is judged per part:
- a node is flagged when its node time is slow against its own history (its last N nights:
  above their median by more than the tolerance and by more than SIGMAS robust spreads, the
  spread being 1.4826 x the median absolute deviation) AND against tonight's peers on its
  /stage server (the same test against their median and spread; the nodes of a server of fewer
  than min_peers nodes tonight (--min-peers) are judged against all of tonight's nodes);
- a server is flagged when its nodes moved together (the median of their moves against their
  own histories reaches the tolerance) and the other servers' did not (the server moved by at
  least the tolerance more than the median of the other servers' moves);
- every server is flagged together (a "cluster" finding) when the median move of all nodes
  reaches the tolerance and no single server stands out;
- a lasting change is a change point in a (node, part) series, taken relative to the node's
  server's median each night (so that a move of the whole server is the server's, not each
  node's), or in a (server, part) series of nightly medians, over the last WINDOW nights:
  E-divisive means (Matteson and James; alpha = 1) locates the split that best separates two
  segments of at least MIN_SEGMENT nights, bisecting again on each side, and a split counts
  when Welch's t-test between the two sides gives p < PVALUE (the significance test Hunter
  and Otava use instead of E-divisive's permutations: deterministic and cheap) and the two
  sides' medians differ by at least the tolerance (the minimum effect). A slowdown whose slow
  level holds to tonight is flagged; a reverted one or a speed-up is listed, not flagged.
A change taken as the new normal (accept) starts that series afresh at its run.

The judgement is typed like the report (model.Record): a Judgement of Findings, each with
the Evidence of its kind; their JSON (stagebench.regressions/1) is what `stagebench-history
regressions --format json` prints, and what the text, the CSV, the health file, the report
page and the Prometheus textfile are made from."""
import math
import statistics
import time

from . import common
from . import histdb
from .model import Field, Record, names

SCHEMA = "stagebench.regressions/1"
# the kinds of finding, in the order they are listed: tonight's (every server, a server, a
# node), then lasting changes
KINDS = ("cluster", "server", "node", "change")

DEFAULTS = {"last": 10, "min_history": 5, "tolerance": 0.15, "sigmas": 3.0, "window": 60,
            "min_segment": 3, "pvalue": 0.01, "min_peers": 3}
MAD_SCALE = 1.4826  # a normal distribution's standard deviation from its MAD
SCREEN = 0.5  # a series whose best split moves its mean by less than this x tolerance is left


class TooShort(Exception):
    """The history is too short to judge tonight: the message says how short."""


# ---------------------------------------------------------------------------------------------
# The judgement, typed


class NodeEvidence(Record):
    DOC = "A node slow against its own history and tonight's peers (kind node)."
    FIELDS = (
        Field("tonight_s", "number", "s", "its node time tonight (the median of its "
              "repetitions)"),
        Field("own_median_s", "number", "s", "the median of its own last nights"),
        Field("own_spread_s", "number", "s", "their robust spread (1.4826 x MAD)"),
        Field("own_nights", "integer", "-", "how many of its own nights"),
        Field("peers_median_s", "number", "s", "the median of tonight's peers"),
        Field("peers_spread_s", "number", "s", "their robust spread"),
        Field("peers", "integer", "-", "how many peers"),
        Field("peers_scope", "string", "-", "server (its server's nodes), or all nodes (a "
              "server of fewer than min_peers nodes)"),
        Field("against_peers", "number", "fraction", "tonight over the peers' median, less 1"),
    )
    __slots__ = names(FIELDS)


class ServerEvidence(Record):
    DOC = "A server whose nodes moved together, the others not (kind server)."
    FIELDS = (
        Field("nodes", "integer", "-", "its nodes tonight"),
        Field("judged", "integer", "-", "those with enough history to be judged"),
        Field("moved", "integer", "-", "those that moved by the tolerance or more"),
        Field("median_move", "number", "fraction", "the median of its nodes' moves against "
              "their own histories"),
        Field("other_servers", "integer", "-", "the other servers"),
        Field("others_median_move", "number", "fraction", "their median move",
              null=True),
        Field("note", "string", "-", "no other server to compare with", null=True),
    )
    __slots__ = names(FIELDS)


class ClusterEvidence(Record):
    DOC = "Every server's nodes moved together (kind cluster)."
    FIELDS = (
        Field("servers", "integer", "-", "the servers judged"),
        Field("judged", "integer", "-", "the nodes judged"),
        Field("moved", "integer", "-", "those that moved by the tolerance or more"),
        Field("servers_moved", "integer", "-", "the servers whose median move reached it"),
        Field("median_move", "number", "fraction", "the median move of all nodes"),
    )
    __slots__ = names(FIELDS)


class ChangeEvidence(Record):
    DOC = "A change point of a series (kind change)."
    FIELDS = (
        Field("series", "string", "-", "what the series is"),
        Field("before_median", "number", "s or ratio", "the median before the change"),
        Field("after_median", "number", "s or ratio", "the median after it"),
        Field("nights_before", "integer", "-", "the nights of the segment before"),
        Field("nights_after", "integer", "-", "the nights of the segment after"),
        Field("p_value", "number", "-", "Welch's t-test between the two segments"),
        Field("direction", "string", "-", "slower or faster"),
        Field("holds_tonight", "boolean", "-", "the slow level still holds tonight"),
        Field("method", "string", "-", "the detection method"),
        Field("nights", "integer", "-", "the nights of the series judged"),
    )
    __slots__ = names(FIELDS)


class Finding(Record):
    DOC = "One finding of the judgement."
    FIELDS = (
        Field("kind", "string", "-", "node, server, cluster (every server together) or change "
              "(a lasting change)"),
        Field("scope", "string", "-", "a change's series: node or server (only in a change)",
              null=True, when=lambda f: f.kind == "change"),
        Field("name", "string", "-", "the node or server (cluster: every server)"),
        Field("server", "string", "-", "the node's server (cluster: null)", null=True),
        Field("part", "string", "-", "the part"),
        Field("size", "number", "fraction", "the slowdown: 0.3 is 30% slower (negative: "
              "faster)"),
        Field("flagged", "boolean", "-", "flagged (counts in the exit status), or only noted"),
        Field("first_night", "string", "-", "the run where it began"),
        Field("first_started", "number", "epoch s", "when that night started"),
        Field("evidence", "object", "-", "NodeEvidence, ServerEvidence, ClusterEvidence or "
              "ChangeEvidence, by kind"),
    )
    __slots__ = names(FIELDS)


class Judgement(Record):
    DOC = "The judgement of a run (stagebench-history regressions --format json)."
    FIELDS = (
        Field("schema", "string", "-", SCHEMA),
        Field("version", "string", "-", "the stagebench version that judged"),
        Field("run_id", "string", "-", "the run judged", null=True),
        Field("started", "number", "epoch s", "when it started", null=True),
        Field("parameters", "object", "-", "the parameters judged with (last, min_history, "
              "tolerance, sigmas, window, min_segment, pvalue, min_peers)"),
        Field("too_short", "string", "-", "why the history is too short to judge (then no "
              "finding)", null=True),
        Field("judged_series", "integer", "-", "the (node, part) series with enough history"),
        Field("nights_before", "integer", "-", "the runs before this one", null=True),
        Field("flagged", "integer", "-", "the findings flagged"),
        Field("findings", [Finding], "-", "flagged first, then by kind, part and size"),
    )
    __slots__ = names(FIELDS)

    def flagged_findings(self):
        return [f for f in self.findings if f.flagged]


# ---------------------------------------------------------------------------------------------
# Statistics

def robust(xs):
    """(median, scaled MAD) of xs."""
    m = statistics.median(xs)
    return m, MAD_SCALE * statistics.median([abs(x - m) for x in xs])


def slow_against(v, xs, tol, sigmas):
    """(slow, ratio, median, spread) of value v against the sample xs."""
    m, s = robust(xs)
    ratio = v / m - 1.0 if m > 0 else 0.0
    return ratio >= tol and v - m > sigmas * s, ratio, m, s


def _betacf(a, b, x):
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-12:
            break
    return h


def betai(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) +
                     a * math.log(x) + b * math.log(1.0 - x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def welch_p(xs, ys):
    """The two-sided p-value of Welch's t-test between samples xs and ys."""
    nx, ny = len(xs), len(ys)
    mx, my = sum(xs) / nx, sum(ys) / ny
    vx = sum((x - mx) ** 2 for x in xs) / (nx - 1)
    vy = sum((y - my) ** 2 for y in ys) / (ny - 1)
    se2 = vx / nx + vy / ny
    if se2 <= 0.0:
        return 0.0 if mx != my else 1.0
    t = (mx - my) / math.sqrt(se2)
    df = se2 ** 2 / ((vx / nx) ** 2 / (nx - 1) + (vy / ny) ** 2 / (ny - 1))
    return betai(df / 2.0, 0.5, df / (df + t * t))


def best_split(x, s, e, m):
    """E-divisive (alpha = 1): the split tau in [s+m, e-m] of x[s:e] maximising
    Q = nL nR / n * (2/(nL nR) sum|between| - 2/(nL(nL-1)) sum|left| - 2/(nR(nR-1)) sum|right|),
    as (tau, Q); None when the segment is too short."""
    n = e - s
    if n < 2 * m:
        return None
    seg = x[s:e]
    rows = [sum(abs(a - b) for b in seg) for a in seg]
    total = sum(rows) / 2.0
    left = 0.0  # sum of |xi - xj| within seg[:k]
    right = total  # within seg[k:]
    best = None
    for k in range(1, n - m + 1):
        a = seg[k - 1]
        to_left = sum(abs(a - b) for b in seg[:k - 1])
        to_right = rows[k - 1] - to_left
        left += to_left
        right -= to_right
        if k < m:
            continue
        nl, nr = k, n - k
        between = total - left - right
        q = 2.0 * between / (nl * nr)
        if nl > 1:
            q -= 2.0 * left / (nl * (nl - 1))
        if nr > 1:
            q -= 2.0 * right / (nr * (nr - 1))
        q *= nl * nr / float(n)
        if best is None or q > best[1]:
            best = (s + k, q)
    return best


def change_points(x, tol, m, pvalue):
    """The change points of series x: [(index, before median, after median, p)] in index
    order, each separating two segments of at least m values whose medians differ by at least
    tol (relative) with Welch's p < pvalue."""
    found = []
    todo = [(0, len(x))]
    while todo:
        s, e = todo.pop()
        b = best_split(x, s, e, m)
        if b is None:
            continue
        tau = b[0]
        left, right = x[s:tau], x[tau:e]
        ml, mr = statistics.median(left), statistics.median(right)
        if ml <= 0 or abs(mr / ml - 1.0) < tol:
            continue
        p = welch_p(left, right)
        if p >= pvalue:
            continue
        found.append(tau)
        todo += [(s, tau), (tau, e)]
    found.sort()
    out = []
    bounds = [0] + found + [len(x)]
    for i, tau in enumerate(found):
        before, after = x[bounds[i]:tau], x[tau:bounds[i + 2]]
        out.append((tau, statistics.median(before), statistics.median(after),
                    welch_p(before, after)))
    return out


def screen(x, tol, m):
    """Whether some split of x into two runs of at least m values moves the mean by at least
    SCREEN x tol of the series' median: what may hold a change point worth the full test."""
    n = len(x)
    if n < 2 * m:
        return False
    med = statistics.median(x)
    if med <= 0:
        return False
    total = sum(x)
    limit = SCREEN * tol * med
    acc = sum(x[:m - 1])
    for k in range(m, n - m + 1):
        acc += x[k - 1]
        if abs(acc / k - (total - acc) / (n - k)) >= limit:
            return True
    return False


# ---------------------------------------------------------------------------------------------
# Reading the nights

def _night(h, run, part):
    """{node: (server, value)} of a run and part: a node's median over its repetitions that
    ran (the first repetition read at once, later ones only where there are any)."""
    q = ("SELECT node, server, node_time_s FROM results WHERE run = ? AND part = ? AND "
         "status IN (%s) AND node_time_s IS NOT NULL AND rep %s" %
         (",".join(str(c) for c in histdb.OK_CODES), "%s"))
    first = h.db.execute(q % "= 1", (run, part)).fetchall()
    out = dict((n, (s, t)) for n, s, t in first)
    more = {}
    for n, s, t in h.db.execute(q % "> 1", (run, part)):
        more.setdefault(n, [out[n][1]] if n in out else []).append(t)
        out[n] = (s, t)
    for n, ts in more.items():
        out[n] = (out[n][0], statistics.median(ts))
    return out


def part_runs(h, part, upto_started, window):
    """The last window runs holding part, up to the given start: [(run, run_id, started)]."""
    rows = h.db.execute(
        "SELECT runs.run, runs.run_id, runs.started FROM runs WHERE runs.started <= ? AND "
        "EXISTS (SELECT 1 FROM levels WHERE levels.run = runs.run AND levels.part = ?) "
        "ORDER BY runs.started DESC, runs.run_id DESC LIMIT ?", (upto_started, part, window))
    return list(reversed(rows.fetchall()))


# ---------------------------------------------------------------------------------------------
# The judgement

class Judge:
    def __init__(self, h, params=None, run_id=None):
        self.h = h
        self.p = dict(DEFAULTS)
        self.p.update(params or {})
        allruns = histdb.runs(h)
        if not allruns:
            raise TooShort("the history holds no run yet")
        if run_id is None:
            self.tonight = allruns[-1]
        else:
            match = [r for r in allruns if r[1] == run_id]
            if not match:
                raise KeyError(run_id)
            self.tonight = match[0]
        self.nodes = h.names("nodes")
        self.servers = h.names("servers")
        self.parts = h.names("parts")
        self.accepted = histdb.accepted(h)
        self.findings = []
        self.judged = 0  # series with enough history
        self.nights_before = sum(1 for r in allruns if r[2] < self.tonight[2])

    def since(self, scope, name, part):
        """The start from which a series counts (an accepted change's run), else None."""
        a = self.accepted.get((scope, name, part))
        return a[1] if a else None

    def run(self):
        run = self.tonight[0]
        part_keys = [p for (p,) in self.h.db.execute(
            "SELECT DISTINCT part FROM levels WHERE run = ? ORDER BY part", (run,))]
        for pk in part_keys:
            self.judge_part(pk)
        if not self.judged:
            raise TooShort("history too short: %d night%s before %s, %d needed to judge a node "
                           "(--min-history)" % (self.nights_before,
                                                "" if self.nights_before == 1 else "s",
                                                self.tonight[1], self.p["min_history"]))
        self.findings.sort(key=lambda f: (not f.flagged, KINDS.index(f.kind), f.part,
                                          -abs(f.size), f.name))
        return self.findings

    def judge_part(self, pk):
        part = self.parts[pk]
        p = self.p
        runs_ = part_runs(self.h, pk, self.tonight[2], max(p["window"], p["last"] + 1))
        nights = [_night(self.h, r[0], pk) for r in runs_]
        lv = histdb.levels(self.h, [r[0] for r in runs_], pk)
        tonight = nights[-1]
        moves = self.two_ways(part, runs_, nights, tonight)
        self.server_moves(part, runs_, nights, tonight, moves)
        self.lasting(part, runs_, nights, lv)

    # -- tonight against the node's own nights and its peers ----------------------------------

    def own_history(self, part, runs_, nights, node, server):
        """The node's values of its last N nights before tonight (from an accepted change on)."""
        sinces = [x for x in (self.since("node", self.nodes[node], part),
                              self.since("server", self.servers[server], part))
                  if x is not None]
        since = max(sinces) if sinces else None
        out = []
        for r, night in zip(reversed(runs_[:-1]), reversed(nights[:-1])):
            if len(out) >= self.p["last"] or (since is not None and r[2] < since):
                break
            if node in night:
                out.append(night[node][1])
        return out

    def two_ways(self, part, runs_, nights, tonight):
        p = self.p
        by_server = {}
        for node, (server, v) in tonight.items():
            by_server.setdefault(server, []).append(v)
        everyone = [v for _s, v in tonight.values()]
        moves = {}
        for node, (server, v) in tonight.items():
            own = self.own_history(part, runs_, nights, node, server)
            if len(own) < p["min_history"]:
                continue
            self.judged += 1
            slow_own, r_own, m_own, s_own = slow_against(v, own, p["tolerance"], p["sigmas"])
            moves.setdefault(server, []).append(r_own)
            if not slow_own:
                continue
            peers = by_server[server]
            scope = "server"
            if len(peers) < p["min_peers"]:
                peers, scope = everyone, "all nodes"
            slow_peer, r_peer, m_peer, s_peer = slow_against(v, peers, p["tolerance"],
                                                             p["sigmas"])
            if not slow_peer:
                continue
            first = self.first_night(runs_, nights, node, m_own * (1 + p["tolerance"]))
            self.findings.append(Finding(
                kind="node", scope=None, name=self.nodes[node], server=self.servers[server],
                part=part, size=r_own, flagged=True, first_night=first[1],
                first_started=first[2], evidence=NodeEvidence(
                    tonight_s=v, own_median_s=m_own, own_spread_s=s_own, own_nights=len(own),
                    peers_median_s=m_peer, peers_spread_s=s_peer, peers=len(peers),
                    peers_scope=scope, against_peers=r_peer)))
        return moves

    def first_night(self, runs_, nights, node, limit):
        """The first run of the streak of nights, ending tonight, above limit."""
        first = runs_[-1]
        for r, night in zip(reversed(runs_), reversed(nights)):
            v = night.get(node)
            if v is None:
                continue
            if v[1] <= limit:
                break
            first = r
        return first

    def server_moves(self, part, runs_, nights, tonight, moves):
        p = self.p
        tol = p["tolerance"]
        med = dict((s, statistics.median(m)) for s, m in moves.items() if len(m) >= 2)
        everyone = [r for m in moves.values() for r in m]
        flagged = 0
        for s, mv in sorted(med.items()):
            if mv < tol:
                continue
            others = [x for o, x in med.items() if o != s]
            other = statistics.median(others) if others else None
            if other is not None and mv - other < tol:
                continue
            nodes = [n for n, (srv, _v) in tonight.items() if srv == s]
            moved = sum(1 for r in moves[s] if r >= tol)
            first = self.server_first(runs_, nights, s, tol)
            flagged += 1
            self.findings.append(Finding(
                kind="server", scope=None, name=self.servers[s], server=self.servers[s],
                part=part, size=mv, flagged=True, first_night=first[1],
                first_started=first[2], evidence=ServerEvidence(
                    nodes=len(nodes), judged=len(moves[s]), moved=moved, median_move=mv,
                    other_servers=len(others), others_median_move=other,
                    note=None if others else "no other server to compare with")))
        if not flagged and len(med) >= 2 and statistics.median(everyone) >= tol:
            mv = statistics.median(everyone)
            first = self.server_first(runs_, nights, None, tol)
            self.findings.append(Finding(
                kind="cluster", scope=None, name="every server", server=None, part=part,
                size=mv, flagged=True, first_night=first[1], first_started=first[2],
                evidence=ClusterEvidence(
                    servers=len(med), judged=len(everyone),
                    moved=sum(1 for r in everyone if r >= tol),
                    servers_moved=sum(1 for x in med.values() if x >= tol), median_move=mv)))

    def server_first(self, runs_, nights, s, tol):
        """The first night of the streak, ending tonight, where the server's median (every
        node's, for s None) was above its median before the streak by the tolerance."""
        meds = []
        for r, night in zip(runs_, nights):
            xs = [v for srv, v in night.values() if s is None or srv == s]
            meds.append((r, statistics.median(xs) if xs else None))
        base = [m for _r, m in meds[:-1] if m is not None][-self.p["last"]:]
        if not base:
            return runs_[-1]
        ref = statistics.median(base)
        first = runs_[-1]
        for r, m in reversed(meds):
            if m is None:
                continue
            if m <= ref * (1 + tol):
                break
            first = r
        return first

    # -- lasting changes ----------------------------------------------------------------------

    def lasting(self, part, runs_, nights, lv):
        p = self.p
        w = runs_[-p["window"]:]
        nw = nights[-p["window"]:]
        # the servers' nightly medians
        series = {}
        for i, r in enumerate(w):
            for s, (_n, m, _d) in (lv.get(r[0]) or {}).items():
                if m and m > 0:
                    series.setdefault(s, []).append((i, m))
        for s, xs in sorted(series.items()):
            since = self.since("server", self.servers[s], part)
            xs = [x for x in xs if since is None or w[x[0]][2] >= since]
            self.changes("server", self.servers[s], self.servers[s], part, w, xs,
                         "the server's nightly median node time")
        # each node relative to its server's median of the night
        meds = [dict((s, x[1]) for s, x in (lv.get(r[0]) or {}).items() if x[1] > 0)
                for r in w]
        tol, m = p["tolerance"], p["min_segment"]
        k = (m + 1) // 2
        for node, (server, _v) in nw[-1].items():
            xs = []
            for i, night in enumerate(nw):
                x = night.get(node)
                if x is not None and x[0] in meds[i]:
                    xs.append((i, x[1] / meds[i][x[0]]))
            name = self.nodes[node]
            since = self.since("node", name, part)
            if since is not None:
                xs = [x for x in xs if w[x[0]][2] >= since]
            if len(xs) < 2 * m:
                continue
            vals = sorted(x[1] for x in xs)
            # necessary for a change of at least tol between two medians of m or more values
            if vals[-k] < (1.0 + tol) * vals[k - 1] or not screen([x[1] for x in xs], tol, m):
                continue
            self.changes("node", name, self.servers[server], part, w, xs,
                         "the node's time relative to its server's median")

    def changes(self, scope, name, server, part, w, xs, what):
        p = self.p
        vals = [x[1] for x in xs]
        cps = change_points(vals, p["tolerance"], p["min_segment"], p["pvalue"])
        for j, (tau, before, after, pv) in enumerate(cps):
            size = after / before - 1.0
            last_level = cps[-1][2]
            ongoing = size > 0 and (last_level / before - 1.0) >= p["tolerance"]
            first = w[xs[tau][0]]
            self.findings.append(Finding(
                kind="change", scope=scope, name=name, server=server, part=part, size=size,
                flagged=bool(ongoing), first_night=first[1], first_started=first[2],
                evidence=ChangeEvidence(
                    series=what, before_median=before, after_median=after,
                    nights_before=tau - (cps[j - 1][0] if j else 0),
                    nights_after=(cps[j + 1][0] if j + 1 < len(cps) else len(vals)) - tau,
                    p_value=pv, direction="slower" if size > 0 else "faster",
                    holds_tonight=bool(ongoing),
                    method="E-divisive means (alpha 1), Welch's t-test", nights=len(vals))))


def judge(h, params=None, run_id=None):
    """(tonight (run, run_id, started), findings [Finding], judge); TooShort when nothing can
    be judged, KeyError for an unknown run id."""
    j = Judge(h, params, run_id)
    return j.tonight, j.run(), j


def judgement(version, params, tonight=None, findings=(), judge=None, too_short=None):
    """The Judgement of tonight (run, run_id, started) by judge, or too short to judge."""
    findings = list(findings)
    return Judgement(
        schema=SCHEMA, version=version, run_id=tonight[1] if tonight else None,
        started=tonight[2] if tonight else None, parameters=params, too_short=too_short,
        judged_series=judge.judged if judge else 0,
        nights_before=judge.nights_before if judge else None,
        flagged=sum(1 for f in findings if f.flagged), findings=findings)


# ---------------------------------------------------------------------------------------------
# A finding in words


def pct(x):
    return "%+.0f%%" % (x * 100) if x is not None else "-"


def day(t):
    return time.strftime("%Y-%m-%d", time.gmtime(t)) if t else "?"


def finding_line(f):
    """A finding (regress.Finding) in one line."""
    e = f.evidence
    since = "%s (%s)" % (f.first_night, day(f.first_started))
    if f.kind == "node":
        return ("node %s (server %s) part %s: %s against its own last %d nights (median "
                "%s), %s against %d peers (%s); slow since %s" % (
                    f.name, f.server, f.part, pct(f.size), e.own_nights,
                    common.fmt_time(e.own_median_s), pct(e.against_peers), e.peers,
                    e.peers_scope, since))
    if f.kind == "server":
        return ("server %s part %s: its nodes moved %s together (%d of %d judged nodes by the "
                "tolerance or more), the other servers %s; since %s" % (
                    f.name, f.part, pct(f.size), e.moved, e.judged,
                    pct(e.others_median_move) if e.others_median_move is not None
                    else "(none to compare)", since))
    if f.kind == "cluster":
        return ("every server part %s: the nodes moved %s together (%d of %d judged nodes, "
                "%d of %d servers, by the tolerance or more); since %s" % (
                    f.part, pct(f.size), e.moved, e.judged, e.servers_moved, e.servers,
                    since))
    return ("lasting change: %s %s part %s: %s from %s, %d nights before, %d after, "
            "p=%.2g%s" % (f.scope, f.name, f.part, pct(f.size), since, e.nights_before,
                          e.nights_after, e.p_value,
                          "" if e.holds_tonight or e.direction == "faster"
                          else " (reverted since)"))
