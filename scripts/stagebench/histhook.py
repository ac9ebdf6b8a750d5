# SPDX-License-Identifier: MIT
"""The history's hooks in the commands that collect a run: stagebench-collect (--history,
--no-history, --html), the launcher (stagebench-cluster records its run) and the cron wrapper
(records the night, judges it, writes the nodes' lasting regressions for NHC and returns the
judgement for the report and the Prometheus textfile). Each is one call in its command."""
import json
import os

from . import common as L
from . import files as F
from . import histdb
from . import history as HI
from . import ingest as I
from . import regress as G


def add_collect_options(ap):
    ap.add_argument("--history", metavar="FILE",
                    help="record the run in this history (default: RESULTS/history.sqlite "
                         "beside a launcher's run directory)")
    ap.add_argument("--no-history", action="store_true", help="record the run in no history")
    ap.add_argument("--html", metavar="FILE",
                    help="write the run's report page (one self-contained HTML file)")


def _judged(path, run_id, tolerance=None):
    """The history's judgement of run_id, with its trends: (doc, trends); (None, None) when
    there is no history."""
    from . import htmlpage
    params = dict(G.DEFAULTS)
    if tolerance is not None:
        params["tolerance"] = tolerance
    with histdb.open_history(path, create=False) as h:
        doc = HI.judge_doc(h, params, run_id)
        return doc, htmlpage.trends_of(h, doc)


def after_collect(args, report_json, collection):
    """stagebench-collect's: record the run (one results directory) and write --html. Returns
    0, or EXIT_PRECONDITION when an output asked for could not be written (said)."""
    from . import htmlpage
    rundir = args.results[0] if len(args.results) == 1 and os.path.isdir(args.results[0]) \
        else None
    if args.history and not rundir:
        L.say("error: --history records one run: give one results directory")
        return L.EXIT_PRECONDITION
    path, outcome, err = (None, None, None)
    if rundir and not args.no_history:
        path, outcome, err = I.record_collected(rundir, report_json, collection, args.history)
        if err:
            L.say("%s: history: %s" % ("error" if args.history else "warning", err))
            if args.history:
                return L.EXIT_PRECONDITION
    if not args.html:
        return L.EXIT_OK
    try:
        F.check_replaceable(args.html)
        run = I.collected_run(rundir or args.results[0], report_json, collection)
        doc = trends = None
        if outcome:
            doc, trends = _judged(path, run.facts["run_id"])
        report = L.safe_json(json.loads(report_json))
        F.write_atomic(args.html, htmlpage.render(htmlpage.model_from_report(report, run),
                                                  doc, trends))
    except I.NotARun as e:
        L.say("error: --html %s: %s" % (args.html, e))
        return L.EXIT_PRECONDITION
    except (histdb.Refused, histdb.sqlite3.Error) as e:
        L.say("error: --html %s: history: %s" % (args.html, e))
        return L.EXIT_PRECONDITION
    except OSError as e:
        L.say("error: cannot write --html %s: %s" % (
            args.html, e if isinstance(e, F.UnsafePath) else L.errno_text(e)))
        return L.EXIT_PRECONDITION
    return L.EXIT_OK


def after_launch(rundir, report_json, collection):
    """The launcher's: its run recorded in RESULTS/history.sqlite; a failure is a warning."""
    _path, _outcome, err = I.record_collected(rundir, report_json, collection)
    if err:
        L.say("warning: history: %s" % err)


class Night:
    """What the cron wrapper's night adds: doc (the judgement, or None), text (for its
    report), flagged (something flagged), error (the history could not be used)."""

    def __init__(self):
        self.doc, self.text, self.flagged, self.error = None, "", False, None


def after_cron(results, rundir, report_json, collection, log, tolerance):
    """The cron wrapper's: record the night in RESULTS/history.sqlite, judge it, write
    RESULTS/history-health.json (the nodes' lasting regressions, for NHC). Never raises."""
    night = Night()
    path = os.path.join(results, I.HISTORY)
    _p, outcome, err = I.record_collected(rundir, report_json, collection, path)
    if err:
        night.error = "history: %s" % err
        log(night.error)
        return night
    log("history: %s %s" % (os.path.basename(rundir), outcome))
    try:
        night.doc, _trends = _judged(path, None, tolerance)
    except (histdb.Refused, histdb.sqlite3.Error, OSError) as e:
        night.error = "history: %s" % e
        log(night.error)
        return night
    if night.doc["too_short"]:
        log("history: %s" % night.doc["too_short"])
        return night
    night.flagged = night.doc["flagged"] > 0
    night.text = HI.to_text(night.doc)
    log("history: %d flagged" % night.doc["flagged"])
    try:
        F.write_json_atomic(os.path.join(results, HI.HEALTH), HI.health_doc(night.doc))
    except OSError as e:
        night.error = "cannot write %s: %s" % (HI.HEALTH, L.errno_text(e))
        log(night.error)
    return night
