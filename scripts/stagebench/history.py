# SPDX-License-Identifier: MIT
"""stagebench-history: the nightly runs remembered, regressions found per node and server.

Every run the collector (stagebench-collect, stagebench-cluster, stagebench-cron) collects is
recorded in RESULTS/history.sqlite; `ingest` records result directories made before. The
`regressions` command judges the newest run (or --run) per part: a node slow against its own
last nights AND against tonight's peers on its /stage server; a server whose nodes moved
together while the other servers' did not; lasting changes found by change-point detection
(E-divisive means, Welch's t-test, the tolerance as the minimum effect). `accept` takes a
change as the new normal; `show` prints a node's, a server's or a part's nightly series and
plots it; `health` answers a node's health check from the last judgement; --html writes the
run's report page with its regressions and trends.

Exit status: 0 nothing flagged; 1 a node, a server or a lasting change flagged (health: this
node has a lasting regression); 2 bad usage, or a history that is not one (refused, left as
it is); 3 the history is too short to judge (said so), or an output could not be written.
"""
import argparse
import csv
import io
import json
import os
import sys
import time

from . import catalogue
from . import common
from . import files
from . import histdb
from . import ingest
from . import regress

HEALTH = "history-health.json"
HEALTH_SCHEMA = "stagebench.history-health/1"
EPILOG = """\
examples:
  stagebench-history --results /shared/stagebench ingest /shared/stagebench/cron-*
  stagebench-history --results /shared/stagebench regressions
  stagebench-history --results /shared/stagebench regressions --format json --last 20
  stagebench-history --results /shared/stagebench --html tonight.html
  stagebench-history --results /shared/stagebench show node017 --part 1a --plot node017.svg
  stagebench-history --results /shared/stagebench accept node017 1a --from cron-20260301-021500
  stagebench-history --results /shared/stagebench health --node node017

exit status: 0 nothing flagged; 1 something flagged (a node, a server, a lasting change; for
health: a lasting regression of this node); 2 bad usage or a refused history file; 3 the
history is too short to judge, or an output could not be written.
"""


def build_parser():
    """The parser; its --help also lists each command's options (the man page's OPTIONS are
    made from --help)."""
    ap = argparse.ArgumentParser(
        prog="stagebench-history", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The history of stagebench runs: ingest, regressions, trends, a report "
                    "page.")
    ap.add_argument("--history", metavar="FILE",
                    help="the history database (default: RESULTS/history.sqlite)")
    ap.add_argument("--results", metavar="DIR", default=os.environ.get("STAGEBENCH_RESULTS"),
                    help="the results directory holding history.sqlite and "
                         "history-health.json (default: $STAGEBENCH_RESULTS)")
    ap.add_argument("--html", metavar="FILE",
                    help="write the judged run's report page (one self-contained HTML file)")
    ap.add_argument("--version", action=catalogue.VersionAction)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    commands = _commands(sub)
    ap.epilog = "".join(_options_help(name, p) for name, p in commands) + EPILOG
    return ap


def _commands(sub):
    """The commands' parsers: [(name, parser)]."""
    out = []

    def command(name, help_text):
        out.append((name, sub.add_parser(name, help=help_text, description=help_text)))
        return out[-1][1]

    p = command("regressions", "judge the newest run (the default command)")
    p.add_argument("--run", metavar="RUN", help="judge this run (default: the newest)")
    _outputs(p, "the findings")
    p.add_argument("--health-file", metavar="FILE",
                   help="also write the nodes' lasting regressions for `health` (NHC) to FILE")
    p.add_argument("--prometheus", metavar="FILE",
                   help="also write the flags as node_exporter textfile metrics to FILE")
    _params(p)
    p = command("ingest", "record result directories (RESULTS/<run-id>/)")
    p.add_argument("dirs", nargs="+", metavar="DIR")
    p = command("show", "a node's, a server's or a part's nightly series")
    p.add_argument("name", metavar="NODE|SERVER|PART")
    p.add_argument("--part", metavar="PART", help="the part of a node's or a server's series "
                   "(default: every part)")
    p.add_argument("--kind", choices=("node", "server", "part"),
                   help="what NAME is, where the history knows it as more than one")
    p.add_argument("--nights", type=int, default=60, metavar="N",
                   help="the last N nights (default: 60)")
    p.add_argument("--plot", metavar="FILE", help="plot the series to FILE (.png or .svg)")
    _outputs(p, "the series")
    _params(p)
    p = command("accept", "take a change as the new normal from a run on")
    p.add_argument("name", metavar="NODE|SERVER")
    p.add_argument("part", metavar="PART")
    p.add_argument("--from", dest="from_run", required=True, metavar="RUN",
                   help="the run (its id) from which the series counts again")
    p.add_argument("--kind", choices=("node", "server"),
                   help="whether NAME is a node or a server (when the history knows both)")
    p = command("runs", "the recorded runs")
    p.add_argument("--format", choices=("text", "json", "csv"), default="text",
                   help="text (default), json or csv")
    p = command("health", "a node's health from the last judgement (for NHC)")
    p.add_argument("--node", default=os.uname()[1].split(".")[0], metavar="NAME",
                   help="this node's stagebench name (default: the host name)")
    p.add_argument("--file", metavar="FILE", help="the judgement (default: RESULTS/%s)" % HEALTH)
    p.add_argument("--max-age", type=float, default=26 * 3600, metavar="SECONDS",
                   help="an older judgement is no data (default: 26 h)")
    return out


def _options_help(name, parser):
    """The option lines of a command's --help, under the heading 'NAME options:'."""
    lines = parser.format_help().splitlines()
    heads = [i for i, line in enumerate(lines) if line in ("options:", "optional arguments:")]
    body = [line for line in lines[heads[0] + 1:] if not line.startswith("  -h, --help")] \
        if heads else []
    return "%s options:\n%s\n\n" % (name, "\n".join(body).rstrip("\n")) if body else ""


def parse_args(argv):
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.command is None:
        args = ap.parse_args(argv + ["regressions"])
    return args


def _outputs(p, what):
    p.add_argument("--format", choices=("text", "json", "csv"), default="text",
                   help="%s as text (default), json or csv" % what)
    p.add_argument("--output", "-o", metavar="FILE", help="write %s to FILE instead of stdout"
                   % what)


def _params(p):
    d = regress.DEFAULTS
    p.add_argument("--tolerance", default="15", metavar="PCT",
                   help="the least slowdown flagged, in percent (default: 15)")
    p.add_argument("--last", type=int, default=d["last"], metavar="N",
                   help="a node's own history: its last N nights (default: %d)" % d["last"])
    p.add_argument("--min-history", type=int, default=d["min_history"], metavar="M",
                   help="nights a node needs to be judged (default: %d)" % d["min_history"])
    p.add_argument("--sigmas", type=float, default=d["sigmas"], metavar="K",
                   help="robust spreads (1.4826 x MAD) a slow value must also pass "
                        "(default: %g)" % d["sigmas"])
    p.add_argument("--window", type=int, default=d["window"], metavar="W",
                   help="nights searched for lasting changes (default: %d)" % d["window"])
    p.add_argument("--min-segment", type=int, default=d["min_segment"], metavar="S",
                   help="nights on each side of a lasting change (default: %d)"
                   % d["min_segment"])
    p.add_argument("--pvalue", type=float, default=d["pvalue"], metavar="P",
                   help="significance of a lasting change (default: %g)" % d["pvalue"])
    p.add_argument("--min-peers", type=int, default=d["min_peers"], metavar="K",
                   help="nodes a server needs tonight for its nodes to be judged against its "
                        "own; fewer: against all nodes (default: %d)" % d["min_peers"])


def params_of(args):
    p = {"tolerance": common.parse_tolerance(args.tolerance), "last": args.last,
         "min_history": args.min_history, "sigmas": args.sigmas, "window": args.window,
         "min_segment": args.min_segment, "pvalue": args.pvalue, "min_peers": args.min_peers}
    for k, lo, hi in (("last", 2, 1000), ("min_history", 2, 1000), ("window", 6, 10000),
                      ("min_segment", 2, 1000), ("min_peers", 2, 100000)):
        if not lo <= p[k] <= hi:
            raise common.UsageError("--%s %d is out of range: %d to %d"
                                    % (k.replace("_", "-"), p[k], lo, hi))
    if p["min_history"] > p["last"]:
        raise common.UsageError("--min-history %d is more than --last %d"
                                % (p["min_history"], p["last"]))
    if not 0 < p["pvalue"] < 1 or not 0 <= p["sigmas"] <= 100:
        raise common.UsageError("--pvalue is between 0 and 1, --sigmas between 0 and 100")
    return p


def history_path(args):
    if args.history:
        return args.history
    if args.results:
        return os.path.join(args.results, ingest.HISTORY)
    raise common.UsageError("name the history: --history FILE, or --results DIR (or set "
                       "STAGEBENCH_RESULTS)")


# ---------------------------------------------------------------------------------------------
# Outputs

def to_text(doc):
    """The judgement (regress.Judgement) as text: a line, then a line per finding."""
    if doc.too_short:
        return doc.too_short + "\n"
    flagged = doc.flagged_findings()
    out = ["regressions of run %s (%s): %d flagged, %d series judged, %d nights before"
           % (doc.run_id, regress.day(doc.started), len(flagged), doc.judged_series,
              doc.nights_before)]
    out += ["FLAGGED " + regress.finding_line(f) for f in flagged]
    out += ["noted   " + regress.finding_line(f) for f in doc.findings if not f.flagged]
    if not doc.findings:
        out.append("nothing slower than its own history and its peers, no lasting change")
    return common.safe_text("\n".join(out) + "\n")


def to_json(doc):
    return json.dumps(doc.to_json(), indent=1) + "\n"


CSV_FIELDS = ["run_id", "kind", "scope", "name", "server", "part", "size", "flagged",
              "first_night", "first_started", "evidence"]


def to_csv(doc):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for f in doc.findings:
        w.writerow([doc.run_id, f.kind, f.scope or f.kind, f.name, f.server, f.part,
                    "%.6g" % f.size, "true" if f.flagged else "false", f.first_night,
                    "%.3f" % f.first_started,
                    json.dumps(f.evidence.to_json(), sort_keys=True)])
    return common.safe_text(buf.getvalue())


def lasting_by_node(doc):
    """{node: [its flagged lasting changes (regress.Finding)]}: the changes of a node's own
    series that hold tonight."""
    nodes = {}
    for f in doc.findings:
        if f.flagged and f.kind == "change" and f.scope == "node":
            nodes.setdefault(f.name, []).append(f)
    return nodes


def health_doc(doc):
    """RESULTS/history-health.json (stagebench.history-health/1, documented in
    stagebench-history(5); `stagebench-history health`, NHC's -L, reads it): the nodes'
    lasting regressions of the judgement doc."""
    return {"schema": HEALTH_SCHEMA, "run_id": doc.run_id, "written_at": time.time(),
            "nodes": {node: [{"part": f.part, "size": f.size, "first_night": f.first_night}
                             for f in found]
                      for node, found in lasting_by_node(doc).items()}}


def _write(path, text):
    files.write_atomic(path, text)


# ---------------------------------------------------------------------------------------------
# Commands

def cmd_ingest(h, args):
    rc = common.EXIT_OK
    for d in args.dirs:
        try:
            run = ingest.run_from_dir(d)
        except ingest.NotARun as e:
            common.say("skipped %s" % e)
            rc = common.EXIT_FAILED
            continue
        outcome = histdb.record(h, run)
        print(common.safe_text("%s: %s (%d results)" % (run.facts["run_id"], outcome,
                                                        len(run.results))))
    return rc


def judge_doc(h, params, run_id=None):
    """The judgement (regress.Judgement) of run_id (default: the newest run)."""
    version = catalogue.load().version
    try:
        tonight, findings, j = regress.judge(h, params, run_id)
        return regress.judgement(version, params, tonight, findings, j)
    except regress.TooShort as e:
        runs = histdb.runs(h)
        return regress.judgement(version, params, runs[-1] if runs else None,
                                 too_short=str(e))
    except KeyError:
        raise common.UsageError("no run '%s' in the history" % run_id)


def cmd_regressions(h, args):
    params = params_of(args)
    doc = judge_doc(h, params, args.run)
    text = {"json": to_json, "csv": to_csv, "text": to_text}[args.format](doc)
    ok = _out(args.output, text)
    if args.health_file and not doc.too_short:
        ok = _try("--health-file " + args.health_file, files.write_json_atomic,
                  args.health_file, health_doc(doc)) and ok
    if args.prometheus:
        from . import prometheus
        ok = _try("--prometheus " + args.prometheus, _write, args.prometheus,
                  prometheus.render_judgement(doc)) and ok
    if args.html:
        ok = write_page(h, args.html, doc) and ok
    if not ok:
        return common.EXIT_PRECONDITION
    if doc.too_short:
        if args.format != "text":
            common.say(doc.too_short)
        return common.EXIT_PRECONDITION
    return common.EXIT_FAILED if doc.flagged else common.EXIT_OK


def write_page(h, path, doc):
    from . import htmlpage
    try:
        page = htmlpage.history_page(h, doc)
    except ingest.NotARun as e:
        common.say("error: --html: %s" % e)
        return False
    return _try("--html " + path, _write, path, page)


def cmd_accept(h, args):
    runs = histdb.find_run(h, args.from_run)
    if runs is None:
        raise common.UsageError("no run '%s' in the history" % args.from_run)
    kinds = []
    if args.kind in (None, "node") and h.db.execute(
            "SELECT 1 FROM nodes WHERE name = ?", (args.name,)).fetchone():
        kinds.append("node")
    if args.kind in (None, "server") and h.db.execute(
            "SELECT 1 FROM servers WHERE name = ?", (args.name,)).fetchone():
        kinds.append("server")
    if not kinds:
        raise common.UsageError("'%s' is no node or server of the history" % args.name)
    if len(kinds) > 1:
        raise common.UsageError("'%s' is both a node and a server: say which with --kind"
                                % args.name)
    if not h.db.execute("SELECT 1 FROM parts WHERE name = ?", (args.part,)).fetchone():
        raise common.UsageError("'%s' is no part of the history" % args.part)
    histdb.accept(h, kinds[0], args.name, args.part, runs[1], runs[2])
    print(common.safe_text("%s %s part %s: its series counts from %s (%s) on" % (
        kinds[0], args.name, args.part, runs[1], regress.day(runs[2]))))
    return common.EXIT_OK


def cmd_show(h, args):
    from . import trend
    params = params_of(args)
    if not 2 <= args.nights <= 100000:
        raise common.UsageError("--nights %d is out of range: 2 to 100000" % args.nights)
    sel = trend.select(h, args.name, args.part, args.kind)
    series = trend.series(h, sel, args.nights, params)
    text = {"json": lambda s: json.dumps(s, indent=1) + "\n", "csv": trend.to_csv,
            "text": trend.to_text}[args.format](series)
    ok = _out(args.output, text)
    if args.plot:
        trend.check_plot_path(args.plot)
        common.need("matplotlib")
        ok = _try("--plot " + args.plot, trend.plot, series, args.plot) and ok
    return common.EXIT_OK if ok else common.EXIT_PRECONDITION


def cmd_runs(h, args):
    rows = []
    for run, run_id, started in histdb.runs(h):
        f = histdb.run_facts(h, run)
        rows.append({"run_id": run_id, "started": started, "scale": f["scale"],
                     "build": f["build"], "status": f["status"], "validity": f["validity"],
                     "start_verdict": f["start_verdict"], "note": f["note"],
                     "results": h.db.execute("SELECT count(*) FROM results WHERE run = ?",
                                             (run,)).fetchone()[0]})
    if args.format == "json":
        text = json.dumps(rows, indent=1) + "\n"
    else:
        buf = io.StringIO()
        if args.format == "csv":
            w = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["run_id"],
                               lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        else:
            for r in rows:
                buf.write("%-28s %s  %-6s %-7s %-9s %7d results%s\n" % (
                    r["run_id"], regress.day(r["started"]), r["scale"] or "?", r["status"] or "?",
                    r["validity"] or "?", r["results"],
                    ("  note: " + r["note"].replace("\n", " / ")) if r["note"] else ""))
        text = buf.getvalue()
    return common.EXIT_OK if _out(None, common.safe_text(text)) else common.EXIT_PRECONDITION


def cmd_health(args):
    """One line for NHC: this node's lasting regressions from the last judgement."""
    path = args.file or (os.path.join(args.results, HEALTH) if args.results else None)
    if not path:
        raise common.UsageError("name the judgement: --file FILE, or --results DIR")
    if not common.node_name_ok(args.node):
        raise common.UsageError("--node '%s' is not a valid node name" % args.node)
    from .summaries import Bad, load_json
    try:
        doc = load_json(path)
        if not isinstance(doc, dict) or doc.get("schema") != HEALTH_SCHEMA or \
                not isinstance(doc.get("nodes"), dict):
            raise Bad("not a stagebench history judgement")
        age = time.time() - float(doc.get("written_at") or 0)
    except FileNotFoundError:
        print("stagebench: no history judgement at %s" % common.safe_text(path))
        return common.EXIT_PRECONDITION
    except (OSError, Bad, TypeError, ValueError) as e:
        print(common.safe_text("stagebench: %s: %s" % (path, e)))
        return common.EXIT_PRECONDITION
    if age > args.max_age:
        print(common.safe_text("stagebench: the history judgement %s is %.0f h old" % (
            path, age / 3600)))
        return common.EXIT_PRECONDITION
    mine = doc["nodes"].get(args.node)
    if not mine or not isinstance(mine, list):
        print(common.safe_text("stagebench: %s: no lasting regression (run %s)" % (
            args.node, doc.get("run_id"))))
        return common.EXIT_OK
    words = []
    for x in mine[:4]:
        if isinstance(x, dict):
            words.append("%s %s since %s" % (x.get("part"), regress.pct(x.get("size"))
                                             if isinstance(x.get("size"), (int, float))
                                             else "?", x.get("first_night")))
    print(common.safe_text("stagebench: %s: lasting regression: %s"
                           % (args.node, "; ".join(words))))
    return common.EXIT_FAILED


def _out(path, text):
    if path:
        return _try("--output " + path, _write, path, text)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
        return True
    except BrokenPipeError:
        return True
    except OSError as e:
        common.say("error: cannot write stdout: %s" % common.errno_text(e))
        return False


def _try(what, fn, *a):
    try:
        fn(*a)
        return True
    except OSError as e:
        common.say("error: cannot write %s: %s" % (
            what, str(e) if isinstance(e, files.UnsafePath) else common.errno_text(e)))
        return False


READERS = ("regressions", "show", "runs")  # the commands that only read the history
COMMANDS = {"ingest": cmd_ingest, "regressions": cmd_regressions, "accept": cmd_accept,
            "show": cmd_show, "runs": cmd_runs}


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    path = args.history or "history"
    try:
        if args.command == "health":
            return cmd_health(args)
        path = history_path(args)
        if args.html and args.command != "regressions":
            raise common.UsageError("--html goes with the regressions command (the default)")
        with histdb.open_history(path, create=args.command == "ingest",
                                 reader=args.command in READERS) as h:
            return COMMANDS[args.command](h, args)
    except common.UsageError as e:
        common.fail(str(e), common.EXIT_USAGE)
    except histdb.Refused as e:
        common.fail(str(e), common.EXIT_USAGE)
    except OSError as e:
        common.fail("%s: %s" % (getattr(e, "filename", None) or "history",
                                common.errno_text(e)), common.EXIT_PRECONDITION)
    except histdb.sqlite3.Error as e:
        refused = histdb.damage(path, e)
        if refused:
            common.fail(str(refused), common.EXIT_USAGE)
        common.fail("%s: SQLite: %s" % (path, e), common.EXIT_PRECONDITION)
