# SPDX-License-Identifier: MIT
"""The node-time plot of a report: every node's time per part, the slow nodes marked and
named. Drawn with matplotlib only; names reach it as text objects, never through a script."""
import io
import os

from .common import UsageError, natural_key, safe_text
from .files import write_atomic

EXTENSIONS = (".svg", ".png")


def check_path(path):
    """Refuse a plot file matplotlib is not asked to draw here."""
    if os.path.splitext(path)[1].lower() not in EXTENSIONS:
        raise UsageError("--plot '%s': give a file ending in .svg or .png" % path)


def _plot_data(report, slow):
    labels, points = [], []
    many = any(q["repetition"] > 1 for q in report["parts"])
    for i, p in enumerate(report["parts"]):
        labels.append("%s r%d" % (p["part"], p["repetition"]) if many else p["part"])
        med = p["node_time_s"]["median"]
        for n, t in sorted(p["_node_times"].items(), key=lambda kv: natural_key(kv[0])):
            is_slow = bool(med) and t > med * (1.0 + slow)
            points.append((i, t, n, is_slow))
    return labels, points


def _jitter(n):
    return ((n * 37) % 101) / 101.0 * 0.5 - 0.25 if n else 0.0


def plot(report, path, slow=0.25):
    """Draw report's node times to path (.svg or .png), through a file written in place."""
    check_path(path)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels, points = _plot_data(report, slow)
    title = "stagebench node times per part%s" % (
        (" - run %s" % report["run_id"]) if report.get("run_id") else "")
    fig, ax = plt.subplots(figsize=(max(6, len(labels) * 1.0), 4.5))
    for k, (i, t, n, is_slow) in enumerate(points):
        ax.plot(i + _jitter(k), t, "o", color="red" if is_slow else "tab:blue", ms=4)
        if is_slow:
            ax.annotate(safe_text(n), (i + _jitter(k), t), fontsize=7, xytext=(3, 3),
                        textcoords="offset points", usetex=False)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels([safe_text(x) for x in labels])
    ax.set_ylabel("node time (s)")
    ax.set_title(safe_text(title))
    ax.set_ylim(bottom=0)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format=os.path.splitext(path)[1].lower()[1:])
    plt.close(fig)
    write_atomic(path, buf.getvalue())
    return "matplotlib"
