# SPDX-License-Identifier: MIT
"""The history's hooks in the commands that collect a run: stagebench-collect (--history,
--no-history, --html), the launcher (stagebench-cluster records its run, judges it and writes
the nodes' lasting regressions for NHC) and the cron wrapper (the same, and returns the
judgement for the report and the Prometheus textfile). Each is one call in its command."""
import os

from . import common
from . import files
from . import histdb
from . import history
from . import ingest
from . import regress


def add_collect_options(ap):
    ap.add_argument("--history", metavar="FILE",
                    help="record the run in this history (default: RESULTS/history.sqlite "
                         "beside a launcher's run directory)")
    ap.add_argument("--no-history", action="store_true", help="record the run in no history")
    ap.add_argument("--html", metavar="FILE",
                    help="write the run's report page (one self-contained HTML file)")


def _judged(path, run_id, tolerance=None, trends=True):
    """The history's judgement of run_id (a regress.Judgement; None: the newest run), with
    its trends for the page: (judgement, trends or None)."""
    from . import htmlpage
    params = dict(regress.DEFAULTS)
    if tolerance is not None:
        params["tolerance"] = tolerance
    with histdb.open_history(path, create=False) as h:
        doc = history.judge_doc(h, params, run_id)
        return doc, htmlpage.trends_of(h, doc) if trends else None


def after_collect(args, report):
    """stagebench-collect's: record the run report (a model.Report of one results directory)
    and write --html. Returns 0, or EXIT_PRECONDITION when an output asked for could not be
    written (said)."""
    rundir = args.results[0] if len(args.results) == 1 and os.path.isdir(args.results[0]) \
        else None
    if args.history and not rundir:
        common.say("error: --history records one run: give one results directory")
        return common.EXIT_PRECONDITION
    path, outcome, err = (None, None, None)
    if rundir and not args.no_history:
        path, outcome, err = ingest.record_collected(rundir, report, args.history)
        if err:
            common.say("%s: history: %s" % ("error" if args.history else "warning", err))
            if args.history:
                return common.EXIT_PRECONDITION
    if not args.html:
        return common.EXIT_OK
    return _write_page(args.html, report, rundir or args.results[0],
                       path if outcome else None)


def _write_page(where, report, rundir, path):
    """--html: the page of report (a model.Report collected from rundir), with the judgement
    of the history at path (None: no history judged it)."""
    from . import htmlpage
    try:
        files.check_replaceable(where)
        page = htmlpage.model_from_report(report, rundir)
        doc = trends = None
        if path:
            doc, trends = _judged(path, page.facts["run_id"])
        files.write_atomic(where, htmlpage.render(page, doc, trends))
    except ingest.NotARun as e:
        common.say("error: --html %s: %s" % (where, e))
        return common.EXIT_PRECONDITION
    except (histdb.Refused, histdb.sqlite3.Error) as e:
        common.say("error: --html %s: history: %s" % (where, e))
        return common.EXIT_PRECONDITION
    except OSError as e:
        common.say("error: cannot write --html %s: %s" % (
            where, e if isinstance(e, files.UnsafePath) else common.errno_text(e)))
        return common.EXIT_PRECONDITION
    return common.EXIT_OK


def after_launch(rundir, report):
    """The launcher's: its run (report, a model.Report) recorded in RESULTS/history.sqlite,
    judged there, and RESULTS/history-health.json written (the nodes' lasting regressions, for
    NHC), as the cron wrapper does; a failure is a warning."""
    path, outcome, err = ingest.record_collected(rundir, report)
    if err:
        common.say("warning: history: %s" % err)
    if path is None or outcome is None:
        return
    _doc, err = judge_and_write_health(path, None)
    if err:
        common.say("warning: %s" % err)


def judge_and_write_health(path, tolerance):
    """Judge the newest run of the history at path and write history-health.json beside it
    (write_health); a history too short to judge leaves the last file. Returns (the judgement
    (regress.Judgement) or None, an error (one line) or None); never raises."""
    try:
        doc, parts = _judged_night(path, tolerance)
    except (histdb.Refused, histdb.sqlite3.Error, OSError, common.UsageError) as e:
        return None, "history: %s" % e
    if doc.too_short:
        return doc, None
    where = os.path.join(os.path.dirname(os.path.abspath(path)), history.HEALTH)
    try:
        write_health(where, doc, parts)
    except OSError as e:
        return doc, "cannot write %s: %s" % (
            history.HEALTH, e if isinstance(e, files.UnsafePath) else common.errno_text(e))
    return doc, None


def _judged_night(path, tolerance):
    """The judgement of the newest run of the history at path, and the parts that run held."""
    params = dict(regress.DEFAULTS)
    if tolerance is not None:
        params["tolerance"] = tolerance
    with histdb.open_history(path, create=False) as h:
        doc = history.judge_doc(h, params, None)
        return doc, histdb.run_parts(h, doc.run_id) if doc.run_id else set()


def write_health(where, doc, parts):
    """history-health.json at where (atomically): the lasting regressions of the judgement doc
    of a run that held parts, and those the file held before of the parts that run did not
    hold (a run of some tests does not clear what the last run of the others found)."""
    new = history.health_doc(doc)
    for node, found in _previous_health(where).items():
        kept = [x for x in found if x["part"] not in parts]
        if kept:
            new["nodes"].setdefault(node, []).extend(kept)
    files.write_json_atomic(where, new)


def _previous_health(where):
    """{node: [{part, size, first_night}]} of the health file at where; {} when there is none
    or it is not one (it is replaced whole)."""
    from .summaries import Bad, load_json
    try:
        doc = load_json(where)
    except (OSError, Bad):
        return {}
    if not isinstance(doc, dict) or doc.get("schema") != history.HEALTH_SCHEMA or \
            not isinstance(doc.get("nodes"), dict):
        return {}
    out = {}
    for node, found in doc["nodes"].items():
        if not common.node_name_ok(node) or not isinstance(found, list):
            continue
        for x in found:
            if isinstance(x, dict) and isinstance(x.get("part"), str) and \
                    common.part_name_ok(x["part"]) and \
                    isinstance(x.get("size"), (int, float)) and \
                    not isinstance(x.get("size"), bool) and \
                    isinstance(x.get("first_night"), str) and \
                    common.run_id_ok(x["first_night"]):
                out.setdefault(node, []).append(dict(
                    (k, x[k]) for k in ("part", "size", "first_night")))
    return out


class CronJudgement:
    """What the cron wrapper's night adds: judgement (regress.Judgement, or None), text (for
    its report), flagged (something flagged), error (the history could not be used)."""

    def __init__(self):
        self.judgement, self.text, self.flagged, self.error = None, "", False, None


def after_cron(results, rundir, report, log, tolerance):
    """The cron wrapper's: record the night (report, a model.Report) in
    RESULTS/history.sqlite, judge it, write RESULTS/history-health.json (the nodes' lasting
    regressions, for NHC). Never raises."""
    night = CronJudgement()
    path = os.path.join(results, ingest.HISTORY)
    _p, outcome, err = ingest.record_collected(rundir, report, path)
    if err:
        night.error = "history: %s" % err
        log(night.error)
        return night
    log("history: %s %s" % (os.path.basename(rundir), outcome))
    doc, err = judge_and_write_health(path, tolerance)
    night.judgement = doc
    if doc is not None and doc.too_short:
        log("history: %s" % doc.too_short)
    elif doc is not None:
        night.flagged = doc.flagged > 0
        night.text = history.to_text(doc)
        log("history: %d flagged" % doc.flagged)
    if err:
        night.error = err
        log(night.error)
    return night
