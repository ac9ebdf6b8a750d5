# SPDX-License-Identifier: MIT
"""The report page of a run: one self-contained HTML file (inline CSS and SVG, a few lines of
inline script to sort the node table, nothing from the network: a Content-Security-Policy
forbids it), readable from a file:// URL and as a mail attachment.

In order: the verdict and the validity checklist; per part the node times grouped by /stage
server (every node a dot, the median and the slow threshold drawn, the nodes out of tolerance
ringed and listed, at most TOP of them named), the start spread with its uncertainty; the
regressions of the history with their trends; a sortable table of the nodes. Every text that
came from a node or a file is escaped (html.escape), so a --note of '<script>' shows as text."""
import html
import statistics
import time

from . import common
from . import histdb
from . import regress
from .model import Rule, StartVerdict, Validity

TOP = 10          # slow nodes listed per part
MAX_TRENDS = 12   # findings drawn with their trend
W, H = 880, 210   # a part's plot
PAD_L, PAD_B, PAD_T = 56, 34, 12
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#aec7e8")
CSS = """
body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;
margin:0 auto;max-width:980px;padding:12px 18px;color:#222}
h1{font-size:20px;margin:8px 0}h2{font-size:17px;margin:22px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:14px 0 4px}.verdict{font-size:18px;font-weight:bold;padding:8px 12px;
border-radius:4px;display:inline-block}.ok{background:#e3f4e3;color:#1a5e1a}
.bad{background:#fbe3e3;color:#8a1010}.warn{background:#fff3d6;color:#6b4c00}
ul.check{list-style:none;padding-left:0}ul.check li{margin:2px 0}
.mark{display:inline-block;width:1.3em;font-weight:bold}.yes{color:#1a7a1a}.no{color:#b01010}
table{border-collapse:collapse;font-size:12px}th,td{padding:2px 8px;border-bottom:1px solid #eee;
text-align:right}th{cursor:pointer;background:#f4f4f4;position:sticky;top:0}
td.l,th.l{text-align:left}.small{font-size:12px;color:#555}svg{display:block}
.note{white-space:pre-wrap;background:#f7f7f7;padding:4px 8px;border-left:3px solid #aaa}
"""
# Sorting the node table: a click on a header sorts by its column (numbers by data-v).
SCRIPT = """
document.querySelectorAll('table.sortable th').forEach(function(th, col) {
  th.addEventListener('click', function() {
    var table = th.closest('table'), body = table.tBodies[0];
    var up = th.getAttribute('data-dir') !== 'up';
    table.querySelectorAll('th').forEach(function(h) { h.removeAttribute('data-dir'); });
    th.setAttribute('data-dir', up ? 'up' : 'down');
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function(a, b) {
      var x = a.cells[col], y = b.cells[col];
      var u = x.getAttribute('data-v'), v = y.getAttribute('data-v');
      var r = (u !== null && v !== null) ? parseFloat(u) - parseFloat(v)
              : x.textContent.localeCompare(y.textContent, undefined, {numeric: true});
      return up ? r : -r;
    });
    rows.forEach(function(r) { body.appendChild(r); });
  });
});
"""
CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
       "img-src data:")


def esc(s):
    return html.escape(common.safe_text(s) if s is not None else "", quote=True)


def _t(s):
    return common.fmt_time(s) if s is not None else "-"


def _day(t):
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t)) if t else "?"


# ---------------------------------------------------------------------------------------------
# The page's model, from the collector's report (model.Report) or from the history


class Page:
    """What the page shows of a run: facts (the history's facts of the run, ingest.facts_of),
    validity (a model.Validity, or None), starts ({(part, repetition): model.StartVerdict}),
    notes, rows ([(node, server, part, repetition, status, node time or None)])."""

    def __init__(self, facts, validity, starts, notes, rows):
        self.facts, self.validity, self.starts = facts, validity, starts
        self.notes, self.rows = notes, rows


def model_from_report(report, rundir):
    """The page of report (a model.Report, collected from rundir): every node of every part
    from its NodeResult list."""
    from .ingest import facts_of
    rows = [(r.node, r.server, p.part, p.repetition, r.status, r.node_time_s if r.ok else None)
            for p in report.parts for r in p.node_results or ()]
    return Page(facts_of(report, rundir), report.validity,
                dict(((p.part, p.repetition), p.start) for p in report.parts),
                list(report.notes), rows)


def _record(cls, doc):
    """A record of the report model from the JSON the history kept of it (None: None)."""
    if not isinstance(doc, dict):
        return None
    return cls.make(**dict((f.name, doc.get(f.name)) for f in cls.FIELDS))


def model_from_history(h, run_key):
    """The page of a run from what the history kept of it: its facts, its verdicts, its
    results."""
    f = histdb.run_facts(h, run_key)
    v = f["verdicts"] or {}
    validity = _record(Validity, v.get("validity"))
    if validity is not None:
        validity.rules = [_record(Rule, r) for r in validity.rules or [] if isinstance(r, dict)]
    starts = {}
    for p in v.get("parts") or []:
        start = p.get("start")
        starts[(p.get("part"), p.get("repetition"))] = StartVerdict.make(verdict=start) \
            if isinstance(start, str) else _record(StartVerdict, start)
    nodes, servers, parts = h.names("nodes"), h.names("servers"), h.names("parts")
    rows = [(nodes[n], servers[s], parts[p], rep, histdb.STATUSES[st], t)
            for p, n, s, rep, st, t, _r, _res, _o, _c in histdb.night_rows(h, run_key)]
    return Page(f, validity, starts, [f["note"]] if f["note"] else [], rows)


# ---------------------------------------------------------------------------------------------
# Drawing

def _scale(lo, hi, a, b):
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) * (b - a) / span


def part_svg(points, median, limit):
    """points: [(node, server, time)] in server order; every node a dot, the median and the
    slow threshold as lines, the slow ones ringed; each dot's name in its tooltip only."""
    n = len(points)
    top = max([p[2] for p in points] + [limit or 0.0]) * 1.1 or 1.0
    x = _scale(0, max(1, n - 1), PAD_L + 6, W - 10)
    y = _scale(0, top, H - PAD_B, PAD_T)
    unit, k = ("s", 1.0) if top >= 1 else ("ms", 1e3) if top >= 1e-3 else ("us", 1e6)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'role="img">' % (W, H, W, H)]
    for i in range(5):
        v = top * i / 4.0
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>'
                   '<text x="%d" y="%.1f" font-size="10" text-anchor="end" fill="#555">%.3g'
                   '</text>' % (PAD_L, W - 6, y(v), y(v), PAD_L - 4, y(v) + 3, v * k))
    out.append('<text x="12" y="%d" font-size="10" fill="#555" transform="rotate(-90 12 %d)" '
               'text-anchor="middle">node time (%s)</text>' % (H // 2, H // 2, unit))
    servers = []
    for i, (_node, server, _time) in enumerate(points):
        if not servers or servers[-1][0] != server:
            servers.append([server, i, i])
        servers[-1][2] = i
    # a server's name under its group where there is room, else its number (the legend
    # under the plot names them)
    numbered = (W - PAD_L) / max(1, len(servers)) < 110
    for j, (server, a, b) in enumerate(servers):
        if j:
            out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ccc" '
                       'stroke-dasharray="2,2"/>' % (x(a - 0.5), x(a - 0.5), PAD_T, H - PAD_B))
        if len(servers) <= 24:
            out.append('<text x="%.1f" y="%d" font-size="10" text-anchor="middle" '
                       'fill="#555">%s</text>' % (
                           (x(a) + x(b)) / 2, H - PAD_B + 14, j + 1 if numbered else
                           "%s (%d)" % (esc(_short(server)), b - a + 1)))
    if len(servers) > 24:
        out.append('<text x="%d" y="%d" font-size="10" fill="#555">%d servers, grouped left '
                   'to right</text>' % (PAD_L, H - PAD_B + 14, len(servers)))
    colour = dict((s[0], COLOURS[j % len(COLOURS)]) for j, s in enumerate(servers))
    r = 2.5 if n <= 200 else 1.6
    for i, (node, server, t) in enumerate(points):
        slow = limit is not None and t > limit
        out.append('<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"%s><title>%s (%s): %s'
                   '</title></circle>' % (x(i), y(t), r * (1.6 if slow else 1), colour[server],
                                          ' stroke="#c00" stroke-width="1.5"' if slow else "",
                                          esc(node), esc(server), esc(_t(t))))
    if median:
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#333"/>'
                   % (PAD_L, W - 6, y(median), y(median)))
    if limit:
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#c00" '
                   'stroke-dasharray="5,3"/><text x="%d" y="%.1f" font-size="10" fill="#c00" '
                   'text-anchor="end">slow threshold %s</text>'
                   % (PAD_L, W - 6, y(limit), y(limit), W - 8, y(limit) - 3, esc(_t(limit))))
    out.append("</svg>")
    if numbered and len(servers) <= 24:
        out.append('<p class="small">servers: %s</p>' % ", ".join(
            "%d %s (%d)" % (j + 1, esc(server), b - a + 1)
            for j, (server, a, b) in enumerate(servers)))
    return "".join(out)


def _short(s, n=18):
    s = str(s)
    return s if len(s) <= n else s[:n - 1] + "\u2026"


def trend_svg(points, changes, first=None, w=420, h=120):
    """A small line chart of a series [(label, value)], the change points (indices) and the
    first night (an index) marked."""
    vals = [v for _l, v in points]
    if not vals:
        return ""
    top = max(vals) * 1.1 or 1.0
    x = _scale(0, max(1, len(vals) - 1), 40, w - 8)
    y = _scale(0, top, h - 18, 8)
    unit, k = ("s", 1.0) if top >= 1 else ("ms", 1e3) if top >= 1e-3 else ("us", 1e6)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'role="img">' % (w, h, w, h)]
    for v in (0.0, top / 2, top):
        out.append('<text x="36" y="%.1f" font-size="9" text-anchor="end" fill="#555">%.3g'
                   '</text><line x1="40" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>'
                   % (y(v) + 3, v * k, w - 8, y(v), y(v)))
    for i in changes:
        out.append('<line x1="%.1f" x2="%.1f" y1="6" y2="%d" stroke="#c00" '
                   'stroke-dasharray="4,3"/>' % (x(i - 0.5), x(i - 0.5), h - 18))
    if first is not None:
        right = x(first) > w * 0.6
        out.append('<text x="%.1f" y="%d" font-size="9" fill="#c00" text-anchor="%s">%s</text>'
                   % (x(first) - 3 if right else x(first), h - 4, "end" if right else "start",
                      esc(points[first][0])))
    out.append('<polyline fill="none" stroke="#1f77b4" stroke-width="1.3" points="%s"/>'
               % " ".join("%.1f,%.1f" % (x(i), y(v)) for i, v in enumerate(vals)))
    out.append('<text x="2" y="%d" font-size="9" fill="#555">%s</text></svg>' % (h - 4, unit))
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Sections

def _head(m):
    f = m.facts
    v = m.validity
    verdict = v.verdict if v is not None else f.get("validity")
    status = f.get("status")
    cls = "ok" if status == "ok" else "bad"
    out = ["<h1>stagebench run %s</h1>" % esc(f.get("run_id")),
           '<p class="small">%s &middot; scale %s &middot; %s nodes expected, %s failed, %s '
           'missing &middot; start %s</p>' % (
               esc(_day(f.get("started"))), esc(f.get("scale") or "?"),
               esc(f.get("nodes_expected")), esc(f.get("nodes_failed")),
               esc(f.get("nodes_missing")), esc(f.get("start_verdict") or "?")),
           '<p><span class="verdict %s">status: %s</span> &nbsp; <span class="verdict %s">'
           'as a spec run: %s</span></p>' % (cls, esc(status or "?"),
                                             "ok" if verdict == "VALID" else "warn",
                                             esc(verdict or "not judged"))]
    for note in m.notes:
        out.append('<p class="note">note: %s</p>' % esc(note))
    rules = (v.rules if v is not None else None) or []
    if rules:
        out.append("<h2>Validity checklist</h2><ul class=\"check\">")
        for r in rules:
            out.append('<li><span class="mark %s">%s</span><b>%s</b>: %s</li>' % (
                "yes" if r.ok else "no", "&#10003;" if r.ok else "&#10007;", esc(r.rule),
                esc(r.evidence)))
        out.append("</ul>")
    return out


def _by_part(rows):
    """{(part, rep): [(node, server, time)]} of the rows that ran, and the failed ones."""
    ran, failed = {}, {}
    for node, server, part, rep, status, t in rows:
        if status in histdb.STATUSES[:2] and t is not None:
            ran.setdefault((part, rep), []).append((node, server, t))
        else:
            failed.setdefault((part, rep), []).append((node, status))
    return ran, failed


def _parts(m, tolerance):
    ran, failed = _by_part(m.rows)
    starts = m.starts
    out = ["<h2>Node times per part</h2>",
           '<p class="small">Every node is a dot, grouped by /stage server; the black line is '
           'the median, the dashed red line the slow threshold (median +%.0f%%); the nodes '
           'above it are ringed and listed.</p>' % (tolerance * 100)]
    keys = sorted(set(ran) | set(failed), key=lambda k: (k[1], common.natural_key(k[0])))
    for part, rep in keys:
        pts = sorted(ran.get((part, rep), []), key=lambda p: (common.natural_key(p[1]),
                                                              common.natural_key(p[0])))
        times = [p[2] for p in pts]
        med = statistics.median(times) if times else None
        limit = med * (1 + tolerance) if med else None
        slow = sorted((p for p in pts if limit and p[2] > limit), key=lambda p: -p[2])
        title = part if all(k[1] == 1 for k in keys) else "%s, repetition %d" % (part, rep)
        out.append("<h3>%s: %d nodes, median %s, slowest %s; %d out of tolerance%s</h3>" % (
            esc(title), len(pts), esc(_t(med)), esc(_t(max(times) if times else None)),
            len(slow), ", %d failed" % len(failed[(part, rep)]) if failed.get((part, rep))
            else ""))
        start = starts.get((part, rep))
        if start is not None:
            out.append('<p class="small">start: %s, spread %s &plusmn; %s (limit %s)%s</p>' % (
                esc(start.verdict), esc(_t(start.spread_s)), esc(_t(start.uncertainty_s)),
                esc(_t(start.limit_s)), ("; " + esc(start.why)) if start.why else ""))
        if pts:
            out.append(part_svg(pts, med, limit))
        if slow:
            out.append('<p class="small">slowest: %s%s</p>' % (", ".join(
                "%s (%s, %s, %+.0f%%)" % (esc(n), esc(s), esc(_t(t)), (t / med - 1) * 100)
                for n, s, t in slow[:TOP]), " and %d more" % (len(slow) - TOP)
                if len(slow) > TOP else ""))
        bad = failed.get((part, rep)) or []
        if bad:
            out.append('<p class="small">failed: %s%s</p>' % (", ".join(
                "%s (%s)" % (esc(n), esc(st)) for n, st in bad[:TOP]),
                " and %d more" % (len(bad) - TOP) if len(bad) > TOP else ""))
    return out


def _regressions(doc, trends):
    """The history's judgement (regress.Judgement, or None) with its trends."""
    out = ["<h2>Regressions</h2>"]
    if doc is None:
        out.append('<p class="small">No history judged this run (record it with '
                   'stagebench-history, or collect it with a history).</p>')
        return out
    if doc.too_short:
        out.append("<p>%s</p>" % esc(doc.too_short))
        return out
    out.append('<p><span class="verdict %s">%d flagged</span> <span class="small">%d series '
               'judged, %d nights before</span></p>' % (
                   "bad" if doc.flagged else "ok", doc.flagged, doc.judged_series or 0,
                   doc.nights_before or 0))
    for i, f in enumerate(doc.findings):
        out.append("<h3>%s%s</h3>" % ("" if f.flagged else "(noted) ",
                                      esc(regress.finding_line(f))))
        t = trends.get(i) if trends else None
        if t:
            out.append(trend_svg(*t))
    if not doc.findings:
        out.append("<p>Nothing slower than its own history and its peers, no lasting "
                   "change.</p>")
    return out


def _table(m):
    ran, failed = _by_part(m.rows)
    parts = sorted(set(k for k in ran) | set(k for k in failed),
                   key=lambda k: (k[1], common.natural_key(k[0])))
    many = any(k[1] != 1 for k in parts)
    nodes = {}
    for (part, rep), pts in ran.items():
        for node, server, t in pts:
            nodes.setdefault(node, {"server": server, "bad": []})[(part, rep)] = t
    for (part, rep), pts in failed.items():
        for node, status in pts:
            nodes.setdefault(node, {"server": "?", "bad": []})["bad"].append(
                "%s: %s" % (part, status))
    out = ['<h2>Nodes</h2><p class="small">%d nodes; click a column to sort.</p>' % len(nodes),
           '<table class="sortable" id="nodes"><thead><tr><th class="l">node</th>'
           '<th class="l">server</th>%s<th class="l">failed</th></tr></thead><tbody>' % "".join(
               "<th>%s</th>" % esc("%s r%d" % k if many else k[0]) for k in parts)]
    for node in sorted(nodes, key=common.natural_key):
        d = nodes[node]
        cells = "".join('<td data-v="%.9g">%s</td>' % (d[k], esc(_t(d[k]))) if k in d else
                        '<td data-v="-1">-</td>' for k in parts)
        out.append('<tr><td class="l">%s</td><td class="l">%s</td>%s<td class="l">%s</td></tr>'
                   % (esc(node), esc(d["server"]), cells, esc(", ".join(d["bad"]))))
    out.append("</tbody></table>")
    return out


def render(m, doc=None, trends=None, tolerance=0.15):
    """The page of model m, with the history's judgement doc and its trends {finding index:
    (points, change indices, first index)}."""
    body = _head(m) + _regressions(doc, trends) + _parts(m, tolerance) + _table(m)
    return "".join([
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="%s">' % CSP,
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>stagebench %s</title><style>%s</style></head><body>\n" % (
            esc(m.facts.get("run_id")), CSS),
        "\n".join(body),
        '\n<p class="small">made by stagebench-history at %s</p>' % esc(_day(time.time())),
        "<script>%s</script></body></html>\n" % SCRIPT])


# ---------------------------------------------------------------------------------------------
# The two ways in

def trends_of(h, doc, nights=None):
    """{finding index: (points, change indices, first index)} for the first MAX_TRENDS
    findings of doc (a regress.Judgement), from the history."""
    from . import trend
    out = {}
    if not doc or not doc.findings:
        return out
    params = doc.parameters
    nights = nights or params.get("window") or 60
    parts = dict((n, k) for k, n in h.names("parts").items())
    for i, f in enumerate(doc.findings[:MAX_TRENDS]):
        kind = f.scope if f.kind == "change" else "part" if f.kind == "cluster" else f.kind
        name = f.part if kind == "part" else f.name
        pk = parts.get(f.part)
        if pk is None:
            continue
        s = trend.series(h, (kind, name, [pk]), nights, params)
        if not s["parts"]:
            continue
        p = s["parts"][0]
        ids = [x["run_id"] for x in p["points"]]
        pts = [(x["run_id"], x["value_s"]) for x in p["points"]]
        cps = [ids.index(c["run_id"]) for c in p["changes"]]
        first = ids.index(f.first_night) if f.first_night in ids else None
        out[i] = (pts, cps, first)
    return out


def history_page(h, doc):
    """The page of the run doc judged (a regress.Judgement; its run, or the newest), from
    the history alone."""
    run = histdb.find_run(h, doc.run_id) if doc.run_id else None
    if run is None:
        from .ingest import NotARun
        raise NotARun("the history holds no run")
    return render(model_from_history(h, run[0]), doc, trends_of(h, doc),
                  doc.parameters["tolerance"])
