# SPDX-License-Identifier: MIT
"""A node's, a server's or a part's nightly series from the history (stagebench-history show):
as a table (text, JSON, CSV) and as a matplotlib plot (PNG or SVG, the Agg backend, names as
plain text), the lasting changes marked. A node's series is its node time per part (the median
of its repetitions), a server's its nodes' median per night (with their spread), a part's the
median and the slowest node time over all nodes per night."""
import csv
import io
import os
import statistics
import time

from . import common
from . import histdb
from . import regress
from .files import write_atomic

EXTENSIONS = (".svg", ".png")


def check_plot_path(path):
    if os.path.splitext(path)[1].lower() not in EXTENSIONS:
        raise common.UsageError("--plot '%s': give a file ending in .svg or .png" % path)


def plain(s):
    """s as matplotlib shows it literally: no control characters, no mathtext."""
    return common.safe_text(s).replace("$", r"\$")


def select(h, name, part=None, kind=None):
    """(kind, name, [part keys]) of what to show: a node, a server or a part of the history."""
    found = []
    for k, table in (("node", "nodes"), ("server", "servers"), ("part", "parts")):
        if kind in (None, k) and h.db.execute("SELECT 1 FROM %s WHERE name = ?" % table,
                                              (name,)).fetchone():
            found.append(k)
    if not found:
        raise common.UsageError("'%s' is no node, server or part of the history" % name)
    if len(found) > 1:
        raise common.UsageError("'%s' is a %s: say which with --kind"
                                % (name, " and a ".join(found)))
    parts = h.names("parts")
    if found[0] == "part":
        keys = [k for k, n in parts.items() if n == name]
    elif part:
        keys = [k for k, n in parts.items() if n == part]
        if not keys:
            raise common.UsageError("'%s' is no part of the history" % part)
    else:
        keys = sorted(parts, key=lambda k: common.natural_key(parts[k]))
    return found[0], name, keys


def _runs(h, pk, nights):
    return regress.part_runs(h, pk, float("inf"), nights)


def _points(h, kind, name, pk, runs_):
    """[(run, run_id, started, value, low, high, nodes)] of the series."""
    out = []
    if kind == "node":
        node = h.db.execute("SELECT node FROM nodes WHERE name = ?", (name,)).fetchone()[0]
        for run, rid, started in runs_:
            ts = [t for st, t in h.db.execute(
                "SELECT status, node_time_s FROM results WHERE run = ? AND part = ? AND "
                "node = ?", (run, pk, node)) if st in histdb.OK_CODES and t is not None]
            if ts:
                out.append((run, rid, started, statistics.median(ts), min(ts), max(ts), 1))
    elif kind == "server":
        server = h.db.execute("SELECT server FROM servers WHERE name = ?",
                              (name,)).fetchone()[0]
        lv = histdb.levels(h, [r[0] for r in runs_], pk)
        for run, rid, started in runs_:
            x = (lv.get(run) or {}).get(server)
            if x:
                out.append((run, rid, started, x[1], x[1] - x[2], x[1] + x[2], x[0]))
    else:
        for run, rid, started in runs_:
            ts = list(histdb.night_times(h, run, pk).values())
            if ts:
                out.append((run, rid, started, statistics.median(ts), min(ts), max(ts),
                            len(ts)))
    return out


def series(h, sel, nights, params):
    """The series of a selection: {"kind", "name", "parts": [{"part", "points": [...],
    "changes": [...]}]}; the changes as regress finds them (the series itself, not relative
    to a server)."""
    kind, name, keys = sel
    parts = h.names("parts")
    out = {"kind": kind, "name": name, "parts": []}
    for pk in keys:
        pts = _points(h, kind, name, pk, _runs(h, pk, nights))
        if not pts:
            continue
        vals = [p[3] for p in pts]
        cps = regress.change_points(vals, params["tolerance"], params["min_segment"],
                                    params["pvalue"])
        out["parts"].append({
            "part": parts[pk],
            "points": [{"run_id": p[1], "started": p[2], "value_s": p[3], "low_s": p[4],
                        "high_s": p[5], "nodes": p[6]} for p in pts],
            "changes": [{"run_id": pts[i][1], "started": pts[i][2], "before_s": b,
                         "after_s": a, "size": a / b - 1.0, "p_value": pv}
                        for i, b, a, pv in cps]})
    return out


def _day(t):
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t))


def to_text(s):
    what = {"node": "node time", "server": "median node time of its nodes (low-high: +-MAD)",
            "part": "median node time over the nodes (low-high: fastest-slowest)"}[s["kind"]]
    out = ["%s %s: %s" % (s["kind"], s["name"], what)]
    for p in s["parts"]:
        marks = dict((c["run_id"], c) for c in p["changes"])
        out.append("")
        out.append("part %s (%d nights, %d lasting change%s)" % (
            p["part"], len(p["points"]), len(p["changes"]), "" if len(p["changes"]) == 1
            else "s"))
        out.append("  %-28s %-16s %12s %12s %12s %6s" % ("run", "started (UTC)", "value",
                                                        "low", "high", "nodes"))
        for x in p["points"]:
            c = marks.get(x["run_id"])
            out.append("  %-28s %-16s %12s %12s %12s %6d%s" % (
                x["run_id"], _day(x["started"]), common.fmt_time(x["value_s"]),
                common.fmt_time(x["low_s"]), common.fmt_time(x["high_s"]), x["nodes"],
                "  <- change %+.0f%% (p=%.2g)" % (c["size"] * 100, c["p_value"]) if c else ""))
    return common.safe_text("\n".join(out) + "\n")


def to_csv(s):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["kind", "name", "part", "run_id", "started", "value_s", "low_s", "high_s",
                "nodes", "change"])
    for p in s["parts"]:
        marks = dict((c["run_id"], c) for c in p["changes"])
        for x in p["points"]:
            c = marks.get(x["run_id"])
            w.writerow([s["kind"], s["name"], p["part"], x["run_id"], "%.3f" % x["started"],
                        "%.9g" % x["value_s"], "%.9g" % x["low_s"], "%.9g" % x["high_s"],
                        x["nodes"], "%.4f" % c["size"] if c else ""])
    return common.safe_text(buf.getvalue())


def plot(s, path):
    """Draw the series to path (.svg or .png): one panel per part, the band, the change
    points as dashed lines, through a file written in place."""
    check_plot_path(path)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n = max(1, len(s["parts"]))
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "stagebench",
                                "font.size": 8}):
        fig, axes = plt.subplots(n, 1, figsize=(10, 1.0 + 2.4 * n), squeeze=False)
        for ax, p in zip(axes[:, 0], s["parts"]):
            xs = list(range(len(p["points"])))
            top = max(x["high_s"] for x in p["points"]) or 1.0
            unit, k = ("s", 1.0) if top >= 1 else ("ms", 1e3) if top >= 1e-3 else ("us", 1e6)
            ax.fill_between(xs, [x["low_s"] * k for x in p["points"]],
                            [x["high_s"] * k for x in p["points"]], color="0.88", lw=0)
            ax.plot(xs, [x["value_s"] * k for x in p["points"]], marker="o", ms=3, lw=1,
                    color="tab:blue")
            ids = [x["run_id"] for x in p["points"]]
            for c in p["changes"]:
                i = ids.index(c["run_id"])
                ax.axvline(i - 0.5, color="red" if c["size"] > 0 else "green", ls="--", lw=1)
                ax.annotate(plain("%+.0f%% from %s" % (c["size"] * 100, c["run_id"])),
                            xy=(i - 0.5, 0.95), xycoords=("data", "axes fraction"),
                            fontsize=7, ha="left", va="top", color="red" if c["size"] > 0
                            else "green")
            step = max(1, len(xs) // 10)
            ax.set_xticks(xs[::step])
            ax.set_xticklabels([time.strftime("%m-%d", time.gmtime(x["started"]))
                                for x in p["points"]][::step], fontsize=7)
            ax.set_ylim(bottom=0)
            ax.set_ylabel("node time (%s)" % unit, fontsize=8)
            ax.set_title(plain("%s %s, part %s: %d nights, %d lasting change%s" % (
                s["kind"], s["name"], p["part"], len(xs), len(p["changes"]),
                "" if len(p["changes"]) == 1 else "s")), fontsize=9, loc="left")
            ax.grid(axis="y", color="0.92", lw=0.6)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format=os.path.splitext(path)[1].lower()[1:], dpi=100)
        plt.close(fig)
    write_atomic(path, buf.getvalue())
