# SPDX-License-Identifier: MIT
"""The history's hooks in the commands that collect a run: stagebench-collect (--history,
--no-history, --html), the launcher (stagebench-cluster records its run) and the cron wrapper
(records the night, judges it, writes the nodes' lasting regressions for NHC and returns the
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
    """The launcher's: its run (report, a model.Report) recorded in RESULTS/history.sqlite; a
    failure is a warning."""
    _path, _outcome, err = ingest.record_collected(rundir, report)
    if err:
        common.say("warning: history: %s" % err)


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
    try:
        night.judgement, _trends = _judged(path, None, tolerance, trends=False)
    except (histdb.Refused, histdb.sqlite3.Error, OSError) as e:
        night.error = "history: %s" % e
        log(night.error)
        return night
    doc = night.judgement
    if doc.too_short:
        log("history: %s" % doc.too_short)
        return night
    night.flagged = doc.flagged > 0
    night.text = history.to_text(doc)
    log("history: %d flagged" % doc.flagged)
    try:
        files.write_json_atomic(os.path.join(results, history.HEALTH), history.health_doc(doc))
    except OSError as e:
        night.error = "cannot write %s: %s" % (history.HEALTH, common.errno_text(e))
        log(night.error)
    return night
