# SPDX-License-Identifier: MIT
"""The node-time plot of a report: one panel per part with its own scale, the nodes grouped
and coloured by /stage server, the median and the slow threshold drawn, the slowest nodes
named without overlap (the rest counted per server), the run id, date and verdicts in the
title. Drawn with matplotlib only; names reach it as plain text objects (mathtext escaped),
never through a script."""
import io
import os
import time

from .common import UsageError, natural_key, safe_text
from .files import write_atomic

EXTENSIONS = (".svg", ".png")
MAX_LABELS = 8       # slow nodes named per panel; the others are counted per server
MAX_LEGEND = 12      # servers in the legend; the others are summed up in one entry
LABEL_GAP = 0.085    # the least vertical distance between two labels (axes fraction)
SERVER_GAP = 0.02    # the gap between two servers' groups, as a fraction of the node count


def check_path(path):
    """Refuse a plot file matplotlib is not asked to draw here."""
    if os.path.splitext(path)[1].lower() not in EXTENSIONS:
        raise UsageError("--plot '%s': give a file ending in .svg or .png" % path)


def _text(s):
    """s as matplotlib shows it literally: no control characters, no mathtext."""
    return safe_text(s).replace("$", r"\$")


def _seconds(t):
    if t is None:
        return "-"
    if t >= 1.0:
        return "%.3g s" % t
    if t >= 1e-3:
        return "%.3g ms" % (t * 1e3)
    return "%.3g us" % (t * 1e6)


def _order(report, servers):
    """The servers in natural order and the x position of every node: grouped by server, in
    natural order within a server, a small gap between two servers."""
    nodes = set()
    for p in report.parts:
        nodes.update(p.node_times())
    names = sorted(set(servers.get(n, "?") for n in nodes), key=natural_key)
    gap = max(1.0, SERVER_GAP * len(nodes))
    x, pos, groups = 0.0, {}, []
    for s in names:
        members = sorted((n for n in nodes if servers.get(n, "?") == s), key=natural_key)
        groups.append((s, x, x + len(members) - 1, len(members)))
        for n in members:
            pos[n] = x
            x += 1
        x += gap
    return names, pos, groups


def layout(report, slow=0.25):
    """What the plot shows, per panel: the points, the median and threshold, the named slow
    nodes (at most MAX_LABELS, slowest first) and the others counted per server."""
    servers = report.node_servers or {}
    names, pos, groups = _order(report, servers)
    many = any(q.repetition > 1 for q in report.parts)
    panels = []
    for p in report.parts:
        med = p.node_time_s.median
        limit = med * (1.0 + slow) if med else None
        points = [(pos[n], t, n, servers.get(n, "?")) for n, t in p.node_times().items()]
        slow_nodes = sorted((pt for pt in points if limit is not None and pt[1] > limit),
                            key=lambda pt: (-pt[1], natural_key(pt[2])))
        rest = {}
        for pt in slow_nodes[MAX_LABELS:]:
            rest[pt[3]] = rest.get(pt[3], 0) + 1
        panels.append({
            "title": "%s r%d" % (p.part, p.repetition) if many else p.part,
            "part": p, "median": med, "limit": limit, "points": points,
            "labels": slow_nodes[:MAX_LABELS], "slow": len(slow_nodes),
            "unlabelled": sorted(rest.items(), key=lambda kv: (-kv[1], natural_key(kv[0]))),
        })
    return {"servers": names, "groups": groups, "panels": panels}


def _title(report):
    starts = [p.start_at for p in report.parts if p.start_at]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(min(starts))) if starts else "?"
    nodes = report.nodes
    verdicts = ["status: %s" % (report.status or "?"),
                "%d nodes seen of %d expected" % (nodes.seen, nodes.expected),
                "%d failed" % len(nodes.failed), "%d missing" % len(nodes.missing)]
    if report.baseline:
        verdicts.append("%d regressions" % len(report.regressions))
    clock = report.clock
    if clock.unsynchronized_nodes:
        verdicts.append("clock not NTP-synchronized on %d nodes"
                        % len(clock.unsynchronized_nodes))
    if clock.start_verdict == "NOT held" or clock.start_synchronized is False:
        verdicts.append("start NOT held (spread %s)" % _seconds(clock.start_spread_max_s))
    elif clock.start_verdict == "cannot tell":
        verdicts.append("start: cannot tell")
    if report.validity:
        verdicts.append("spec run: %s" % report.validity.verdict)
    return "stagebench run %s - %s - scale %s\n%s" % (
        report.run_id or "?", when, report.scale or "?", ", ".join(verdicts))


def _spread_labels(ys, gap):
    """Label heights (axes fraction) near ys (sorted high to low), each at least gap below the
    one above, all within [gap/2, 1 - gap/2] (len(ys) * gap must not pass 1)."""
    out = []
    for y in ys:
        y = min(y, 1.0 - gap / 2)
        if out and out[-1] - y < gap:
            y = out[-1] - gap
        out.append(y)
    # pushed below the panel: lift the lowest ones, each keeping its gap to the next
    floor = gap / 2
    for i in range(len(out) - 1, -1, -1):
        out[i] = max(out[i], floor)
        floor = out[i] + gap
    return out


def _unit(top):
    """The unit of a panel's axis whose values reach top seconds: (name, factor)."""
    if top >= 1.0:
        return "s", 1.0
    if top >= 1e-3:
        return "ms", 1e3
    return "us", 1e6


def _panel(ax, panel, colours, groups, slow):
    part = panel["part"]
    ys = [pt[1] for pt in panel["points"]]
    top = max(ys + [panel["limit"] or 0.0]) * 1.12 if ys else 1.0
    unit, k = _unit(top)
    ax.set_ylim(0, top * k)
    for s in colours:
        pts = [pt for pt in panel["points"] if pt[3] == s]
        if pts:
            ax.scatter([pt[0] for pt in pts], [pt[1] * k for pt in pts], s=9,
                       color=colours[s], linewidths=0, zorder=2)
    if panel["labels"] or panel["slow"]:
        slow_pts = [pt for pt in panel["points"] if panel["limit"] and pt[1] > panel["limit"]]
        ax.scatter([pt[0] for pt in slow_pts], [pt[1] * k for pt in slow_pts], s=30,
                   facecolors="none", edgecolors="red", linewidths=0.9, zorder=3)
    if panel["median"]:
        ax.axhline(panel["median"] * k, color="0.25", lw=1, zorder=1)
        ax.axhline(panel["limit"] * k, color="red", lw=1, ls="--", zorder=1)
    for s, x0, x1, _count in groups[1:]:
        ax.axvline(x0 - 0.5 - max(1.0, SERVER_GAP * len(panel["points"])) / 2, color="0.85",
                   lw=0.8, zorder=0)
    ys_axes = [pt[1] / top for pt in panel["labels"]]
    for pt, y in zip(panel["labels"], _spread_labels(ys_axes, LABEL_GAP)):
        dev = pt[1] / panel["median"] - 1.0
        ax.annotate(_text("%s  %s  +%.0f%%" % (pt[2], _seconds(pt[1]), dev * 100)),
                    xy=(pt[0], pt[1] * k), xycoords="data", xytext=(1.01, y),
                    textcoords="axes fraction", fontsize=7, va="center", ha="left",
                    arrowprops={"arrowstyle": "-", "color": "0.6", "lw": 0.6})
    if panel["unlabelled"]:
        more = ", ".join("%s: %d" % (s, n) for s, n in panel["unlabelled"][:4])
        if len(panel["unlabelled"]) > 4:
            more += ", ..."
        ax.text(1.01, 0.0, _text("+%d more slow (%s)" % (
            sum(n for _s, n in panel["unlabelled"]), more)), transform=ax.transAxes,
            fontsize=7, va="bottom", ha="left", color="red", wrap=True)
    head = "%s: median %s, slow above %s (+%.0f%%): %d of %d nodes" % (
        panel["title"], _seconds(panel["median"]), _seconds(panel["limit"]), slow * 100,
        panel["slow"], len(panel["points"]))
    if part.nodes_failed or part.nodes_missing:
        head += "; %d failed, %d missing" % (part.nodes_failed, part.nodes_missing)
    ax.set_title(_text(head), fontsize=9, loc="left")
    ax.set_ylabel("node time (%s)" % unit, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(axis="y", color="0.92", lw=0.6, zorder=0)


def plot(report, path, slow=0.25):
    """Draw report's node times to path (.svg or .png), through a file written in place."""
    check_path(path)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    lay = layout(report, slow)
    # tab20's dark colours first, then its light ones: neighbouring servers differ in hue
    cmap = plt.get_cmap("tab20")
    hues = [cmap(i) for i in list(range(0, 20, 2)) + list(range(1, 20, 2))]
    colours = dict((s, hues[i % len(hues)]) for i, s in enumerate(lay["servers"]))
    n = max(1, len(lay["panels"]))
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "stagebench",
                                "font.size": 8}):
        fig, axes = plt.subplots(n, 1, figsize=(11, 1.2 + 2.3 * n), squeeze=False)
        for ax, panel in zip(axes[:, 0], lay["panels"]):
            _panel(ax, panel, colours, lay["groups"], slow)
        ticks = [((x0 + x1) / 2.0, "%s (%d)" % (s, c)) for s, x0, x1, c in lay["groups"]]
        shown = ticks if len(ticks) <= 40 else []
        for ax in axes[:, 0]:
            ax.set_xticks([t[0] for t in shown])
            ax.set_xticklabels([_text(t[1]) for t in shown], fontsize=7,
                               rotation=30 if len(shown) > 6 else 0, ha="right"
                               if len(shown) > 6 else "center")
            ax.set_xlim(-1, max([g[2] for g in lay["groups"]] + [0]) + 1)
        axes[-1, 0].set_xlabel("nodes, grouped by /stage server (nodes per server)", fontsize=8)
        handles = [plt.Line2D([], [], ls="", marker="o", color=colours[s], ms=5)
                   for s in lay["servers"][:MAX_LEGEND]]
        names = [_text(s) for s in lay["servers"][:MAX_LEGEND]]
        if len(lay["servers"]) > MAX_LEGEND:
            handles.append(plt.Line2D([], [], ls="", marker=""))
            names.append("+%d more servers" % (len(lay["servers"]) - MAX_LEGEND))
        handles += [plt.Line2D([], [], color="0.25", lw=1),
                    plt.Line2D([], [], color="red", lw=1, ls="--"),
                    plt.Line2D([], [], ls="", marker="o", mfc="none", mec="red", ms=6)]
        names += ["median", "slow threshold (+%.0f%%)" % (slow * 100), "slow node"]
        fig.legend(handles, names, loc="upper right", fontsize=7, ncol=min(5, len(names)),
                   frameon=False, bbox_to_anchor=(0.99, 1.0 - 0.55 / fig.get_figheight()))
        fig.suptitle(_text(_title(report)), fontsize=10, x=0.01, ha="left", y=0.995)
        fig.tight_layout(rect=(0, 0, 0.84, 1.0 - 0.85 / fig.get_figheight()))
        buf = io.BytesIO()
        fig.savefig(buf, format=os.path.splitext(path)[1].lower()[1:], dpi=100)
        plt.close(fig)
    write_atomic(path, buf.getvalue())
    return "matplotlib"
