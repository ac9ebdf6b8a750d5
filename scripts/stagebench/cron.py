# SPDX-License-Identifier: MIT
"""stagebench-cron: the nightly validation run, for crontab.

Takes a lock so runs never overlap, runs the launcher (stagebench-cluster, or stagebench-sim
with --sim) into a dated results directory RESULTS/cron-YYYYmmdd-HHMMSS/, collects it against
a baseline, records the night in the history (RESULTS/history.sqlite) and judges it there
(what is flagged joins the report and fails the night; RESULTS/history-health.json for NHC),
keeps the last K runs, logs to RESULTS/stagebench-cron.log, and exits with the collector's
status. It prints nothing when all is well and the report when not, so cron mails only the
problems.

    15 2 * * * BINDIR/stagebench-cron --results /shared/stagebench \\
        --baseline /shared/stagebench/baseline.json --tolerance 15 \\
        -- -g compute --dir /stage/bench all
"""
import argparse
import fcntl
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from . import catalogue
from . import collection
from . import common
from . import files
from . import histhook
from . import model
from . import procs
from . import prometheus
from . import report
from . import reporttext
from . import summaries

LOG = "stagebench-cron.log"
LOCK = ".stagebench-cron.lock"
RECORD = ".stagebench-cron.runs"  # the runs this wrapper started: only those are pruned
MARK = "STAGEBENCH_CRON_RESULTS"  # in the environment of every process of a run
RUN_RE = re.compile(r"^cron-\d{8}-\d{6}(-\d+)?$")
EPILOG = """\
crontab line (every night at 02:15):
  15 2 * * * {cron} --results /shared/stagebench --baseline /shared/stagebench/baseline.json --tolerance 15 -- -g compute --dir /stage/bench all

The tolerance is in percent, written without a % sign: cron turns a bare % into a newline
and cuts the command there. The arguments after -- go to stagebench-cluster (or
stagebench-sim with --sim); --results and --run-id are set by this script. Without an
existing --baseline file, the first run that is all good becomes the baseline.

exit status: the collector's: 0 all good; 1 a node failed, is missing or invalid, or a node or
part regressed, or the launcher died; 2 bad usage (a --results others can write into
included); 3 another run still holds the lock or a previous run's processes are alive, or a
report or baseline could not be written (the cause named); 130/143 interrupted. A --prometheus
file that cannot be written is said and logged; the status stays the run's.
"""


RESUME_TIMEOUT_S = 3600  # a lost night's --resume: its stop and status rounds


def build_parser():
    """The parser of the wrapper's own options, before -- (its completion is generated from
    it too)."""
    ap = argparse.ArgumentParser(
        prog="stagebench-cron", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Nightly stagebench validation: locked, dated, collected against a "
                    "baseline, pruned, logged.",
        usage="%(prog)s --results DIR [options] -- LAUNCHER-ARGS...",
        epilog=EPILOG.format(cron=os.path.join(files.bindir(), "stagebench-cron")))
    ap.add_argument("--results", required=True, metavar="DIR",
                    help="where the dated runs, the log and the lock live")
    ap.add_argument("--keep", type=int, default=14, metavar="K",
                    help="dated runs kept, the newest (default: 14)")
    ap.add_argument("--baseline", metavar="FILE",
                    help="compare against this baseline (created from the first good run "
                         "when it does not exist)")
    common.add_tolerance_option(ap)
    ap.add_argument("--sim", action="store_true",
                    help="run stagebench-sim instead of stagebench-cluster (a trial on one "
                         "machine)")
    ap.add_argument("--prometheus", metavar="FILE",
                    help="write node_exporter textfile metrics of each run to FILE")
    ap.add_argument("--log", metavar="FILE", help="log file (default: RESULTS/%s)" % LOG)
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="print the report even when all is well")
    ap.add_argument("--version", action=catalogue.VersionAction)
    return ap


def parse_args(argv):
    if "--" in argv:
        i = argv.index("--")
        own, rest = argv[:i], argv[i + 1:]
    else:
        own, rest = argv, []
    args = build_parser().parse_args(own)
    args.launcher_args = rest
    return args


def open_log(path):
    """The wrapper's log: 'YYYY-mm-dd HH:MM:SS [pid] message' lines appended to path (a file
    of ours, never followed through a link); returns the function that logs one line."""
    logger = logging.getLogger("stagebench-cron")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.StreamHandler(files.open_ours(path))
    handler.setFormatter(logging.Formatter("%(asctime)s [%(process)d] %(message)s",
                                           "%Y-%m-%d %H:%M:%S"))
    logger.addHandler(handler)
    return lambda msg: logger.info("%s", common.safe_text(msg))


def read_record(path):
    """The runs this wrapper started, oldest first: [(run id, ended: bool)], from its record
    (lines 'start RUN' and 'end RUN STATUS'), a file of ours."""
    runs, ended = [], set()
    try:
        with files.open_ours(path) as f:
            f.seek(0)
            for line in f.read(1 << 20).splitlines():
                w = line.split()
                if len(w) >= 2 and RUN_RE.match(w[1]):
                    if w[0] == "start" and w[1] not in runs:
                        runs.append(w[1])
                    elif w[0] == "end":
                        ended.add(w[1])
    except FileNotFoundError:
        pass
    return [(r, r in ended) for r in runs]


def record(path, line):
    with files.open_ours(path) as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def prune(results, keep, current, log, record_path):
    """Remove the oldest runs beyond keep, among those this wrapper recorded (never a directory
    it did not make, whatever its name): directories of ours, not links."""
    runs = []
    for d, _ended in read_record(record_path):
        path = os.path.join(results, d)
        try:
            files.check_dir(path)
        except FileNotFoundError:
            continue
        except OSError as e:
            log("prune: left %s alone: %s" % (path, e))
            continue
        runs.append(d)
    old = [d for d in runs if d != current][:max(0, len(runs) - keep)]
    for d in old:
        path = os.path.join(results, d)
        shutil.rmtree(path, ignore_errors=True)
        log("prune: removed %s (keeping the newest %d)" % (path, keep))


def live_processes(tag):
    """Pids of live processes whose environment carries the run marker tag (the launcher of a
    run and everything it started on this machine)."""
    want = ("%s=%s" % (MARK, tag)).encode()
    return sorted(pid for pid, env in procs.live_others("environ", 1 << 20)
                  if want in env.split(b"\0"))


def setup(args):
    """The checked arguments: (tolerance, script, results, baseline, log path)."""
    if not (1 <= args.keep <= 100000):
        raise common.UsageError("--keep %d is out of range: 1 to 100000" % args.keep)
    tolerance = common.parse_tolerance(args.tolerance)
    if not args.launcher_args:
        raise common.UsageError("give the launcher's arguments after --: nodes, --dir, tests")
    for a in args.launcher_args:
        if a in ("--results", "--run-id") or a.startswith(("--results=", "--run-id=")):
            raise common.UsageError("%s is set by stagebench-cron: leave it out" % a)
    name = "stagebench-sim" if args.sim else "stagebench-cluster"
    script = files.find_sibling(name)
    if not script:
        raise common.UsageError("%s is neither beside this command nor on PATH" % name)
    results = os.path.abspath(args.results)
    try:
        files.ensure_dir(results)
        # the lock, the log, the record of runs and the runs live here: only we may write
        files.check_closed_dir(results)
        logpath = os.path.abspath(args.log or os.path.join(results, LOG))
        files.check_closed_dir(os.path.dirname(logpath))
    except files.UnsafePath as e:
        raise common.UsageError("%s: the lock, log and runs of stagebench-cron must be where only "
                                "this user can write" % e)
    baseline = None
    if args.baseline and os.path.exists(args.baseline):
        baseline = report.load_baseline(args.baseline)
    return tolerance, script, results, baseline, logpath


def take_lock(results, log):
    """The lock file (ours, never through a link), locked; None when another run holds it or
    a previous run's processes are still alive (said, logged)."""
    lockf = files.open_ours(os.path.join(results, LOCK))
    try:
        fcntl.flock(lockf, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lockf.seek(0)
        holder = common.safe_text(lockf.read(200).strip() or "?")
        log("skipped: the previous run (%s) still holds the lock" % holder)
        common.say("error: the previous run (%s) still holds %s: not starting another"
                   % (holder, os.path.join(results, LOCK)))
        return None
    alive = live_processes(results)
    if alive:
        log("skipped: a previous run's processes are still alive (pids %s)"
            % " ".join(map(str, alive[:20])))
        common.say("error: a previous run's processes are still alive, its lock released (pids "
                   "%s): not starting another" % " ".join(map(str, alive[:20])))
        return None
    return lockf


def resume_lost(results, run_id, log):
    """The previous run, when its launcher was lost before it finished (its manifest has no
    end, and its processes here are gone: take_lock checked): `stagebench-cluster --resume`
    asks its nodes for their state, stops what still runs there, gathers what they wrote and
    finishes its manifest, so that no node of the last night runs beside this one. A line for
    the report, or None when there was nothing to resume."""
    path = os.path.join(results, run_id, common.MANIFEST)
    try:
        man = summaries.load_json(path)  # through the collector's door
    except (OSError, summaries.Bad):
        return None  # no manifest (the launcher never started it), or not one to resume
    if not isinstance(man, dict) or man.get("finished_at") is not None:
        return None
    script = files.find_sibling("stagebench-cluster")
    if not script:
        return "the previous run %s did not finish and cannot be resumed here: no " \
            "stagebench-cluster beside this command or on PATH" % run_id
    cmd = [sys.executable, script, "--results", results, "--resume", run_id]
    log("resume %s: %s" % (run_id, " ".join(cmd)))
    try:
        rc, _out, err = procs.run_capture(cmd, RESUME_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        rc, err = None, str(e)
    last = [ln for ln in err.splitlines() if ln.strip()][-1:]
    log("resume %s: exit %s%s" % (run_id, rc, ": " + last[0] if last else ""))
    if rc in (common.EXIT_OK, common.EXIT_FAILED):
        return "the previous run %s did not finish (its launcher was lost): resumed, its " \
            "nodes stopped and what they wrote gathered (%s)" % (
                run_id, "its report: ok" if rc == 0 else "its report: failed")
    return "the previous run %s did not finish (its launcher was lost) and could not be " \
        "resumed: %s" % (run_id, last[0] if last else "exit %s" % rc)


def _new_run_dir(results):
    """A run id from the UTC time, unused in results, and its directory, created."""
    run_id = "cron-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    n = 1
    while os.path.lexists(os.path.join(results, run_id)):
        n += 1
        run_id = "cron-%s-%d" % (time.strftime("%Y%m%d-%H%M%S", time.gmtime()), n)
    rundir = os.path.join(results, run_id)
    files.make_dir(rundir, 0o755)
    return run_id, rundir


def _launch(args, script, results, run_id, rundir, lockf, log):
    """The launcher run into rundir (its output in launcher.log); its exit status."""
    cmd = [sys.executable, script] + args.launcher_args + \
        ["--results", results, "--run-id", run_id, "--no-report"]
    log("start %s: %s" % (run_id, " ".join(cmd)))
    env = dict(os.environ)
    env[MARK] = results
    with files.open_new(os.path.join(rundir, "launcher.log"), 0o644) as out:
        # The launcher holds the lock too (pass_fds): if this wrapper dies, the next run
        # still finds it locked while the launcher lives, and the marker in the environment
        # finds what the launcher started once it is gone.
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, env=env,
                                pass_fds=(lockf.fileno(),))
        procs.forward_signals(proc)
        rc = proc.wait()
    log("launcher exited %d" % rc)
    return rc


def _say_report(text, rundir, logpath, log):
    """The report on stdout; False (said in the log and on stderr) when stdout fails."""
    try:
        sys.stdout.write(common.safe_text(text))
        sys.stdout.write("(results: %s; log: %s)\n" % (rundir, logpath))
        sys.stdout.flush()
    except OSError as e:
        log("cannot write the report on stdout: %s" % common.errno_text(e))
        common.say("error: cannot write stdout: %s" % common.errno_text(e))
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        except OSError:
            pass
        return False
    return True


def main():
    args = parse_args(sys.argv[1:])
    try:
        tolerance, script, results, baseline, logpath = setup(args)
    except common.UsageError as e:
        common.fail(str(e), common.EXIT_USAGE)
    except OSError as e:
        common.fail("cannot create %s: %s" % (args.results, common.errno_text(e)),
                    common.EXIT_USAGE)

    try:
        log = open_log(logpath)
        lockf = take_lock(results, log)
        rec = os.path.join(results, RECORD)
        previous = read_record(rec)
    except OSError as e:
        common.fail("%s" % (e if isinstance(e, files.UnsafePath) else "%s: %s" % (
            e.filename, common.errno_text(e))), common.EXIT_PRECONDITION)
    if lockf is None:
        return common.EXIT_PRECONDITION
    lockf.seek(0)
    lockf.truncate()
    lockf.write("pid %d since %s\n" % (os.getpid(), time.strftime("%Y-%m-%d %H:%M:%S")))
    lockf.flush()
    notes = []
    if previous and not previous[-1][1]:
        notes.append("the previous run %s did not finish: its wrapper died (killed, or the "
                     "machine stopped) before it collected the run" % previous[-1][0])
        log(notes[-1])
    if previous:
        note = resume_lost(results, previous[-1][0], log)
        if note:
            notes.append(note)

    run_id, rundir = _new_run_dir(results)
    record(rec, "start %s" % run_id)
    rc = _launch(args, script, results, run_id, rundir, lockf, log)
    signum = killed_by(rc)
    if signum:
        try:
            signame = signal.Signals(signum).name
        except ValueError:
            signame = "signal %d" % signum
        notes.append("the launcher was killed by %s: the run is unfinished" % signame)
        log(notes[-1])
    if rc == common.EXIT_USAGE:
        with open(os.path.join(rundir, "launcher.log")) as f:
            text = f.read()
        log("bad launcher arguments: %s" % text.strip().splitlines()[-1:])
        sys.stdout.write(common.safe_text(text))
        shutil.rmtree(rundir, ignore_errors=True)
        record(rec, "end %s %d" % (run_id, common.EXIT_USAGE))
        return common.EXIT_USAGE
    return _collect_run(args, Night(run_id, rundir, rc, notes, log, logpath, rec, results),
                        baseline, tolerance)


def killed_by(rc):
    """The signal that killed the launcher, from its exit status, or None: a negative status
    (the launcher itself killed), or 128 + N as stagebench-sim passes on its launcher's death
    (as a shell does; 130 and 143 are the launcher's own interrupted exits)."""
    if rc < 0:
        return -rc
    if 128 < rc < 128 + 65 and rc not in (common.EXIT_SIGINT, common.EXIT_SIGTERM):
        return rc - 128
    return None


class Night:
    """One night's run as the wrapper knows it: its id and directory, the launcher's exit
    status, the notes said before the report, the log, the record of runs."""

    def __init__(self, run_id, rundir, rc, notes, log, logpath, rec, results):
        self.run_id, self.rundir, self.rc, self.notes = run_id, rundir, rc, notes
        self.log, self.logpath, self.rec, self.results = log, logpath, rec, results


def _collect_run(args, night, baseline, tolerance):
    """The run collected: its report written (report.txt, report.json), the baseline made
    when there is none and the run is good, the run recorded and old runs pruned, the report
    said when it is not ok, the metrics written; returns the exit status."""
    log, rundir, run_id = night.log, night.rundir, night.run_id
    result = report.build(collection.collect([rundir]), baseline=baseline,
                          tolerance=tolerance, source=rundir)
    text = "".join("%s\n" % x for x in night.notes) + reporttext.to_text(result)
    status = result.exit_code
    failed_writes = not (
        _write(log, files.write_atomic, os.path.join(rundir, common.REPORT_TXT), text) and
        _write(log, files.write_atomic, os.path.join(rundir, common.REPORT_JSON),
               model.to_json(result)))
    if killed_by(night.rc) and status == common.EXIT_OK:
        status = common.EXIT_FAILED
    log("collected %s: %s, %d node(s) failed, %d missing, %d invalid file(s), %d regression(s)"
        % (run_id, result.status, len(result.nodes.failed), len(result.nodes.missing),
           len(result.invalid), len(result.regressions)))
    hist = histhook.after_cron(night.results, rundir, result, log, tolerance)
    if hist.flagged:  # the history's regressions: said with the report, and exit 1
        text += hist.text
        status = status or common.EXIT_FAILED
    if args.baseline and baseline is None:
        if status == common.EXIT_OK:
            if _write(log, files.write_json_atomic, args.baseline,
                      report.make_baseline(result, source=rundir)):
                log("baseline %s created from %s" % (args.baseline, run_id))
            else:
                failed_writes = True
        else:
            log("no baseline yet, and %s is not good enough to become one" % run_id)
    record(night.rec, "end %s %d" % (run_id, status))
    prune(night.results, args.keep, run_id, log, night.rec)
    if night.rc in (common.EXIT_SIGINT, common.EXIT_SIGTERM):
        status = night.rc
    if failed_writes and status == common.EXIT_OK:
        status = common.EXIT_PRECONDITION
    if status != common.EXIT_OK or args.verbose or night.notes:
        if not _say_report(text, rundir, night.logpath, log):
            status = status or common.EXIT_PRECONDITION
    if args.prometheus:
        err = prometheus.write(args.prometheus, result, status, hist.judgement)
        if err:  # said too, so cron mails it; the night's status stays the run's
            log("--prometheus: %s" % err)
            common.say("error: --prometheus: %s" % err)
        else:
            log("metrics written to %s" % args.prometheus)
    log("end %s: exit %d" % (run_id, status))
    return status


def _write(log, fn, path, data):
    """One output of the run; False, logged and said with its cause, when it failed."""
    try:
        fn(path, data)
        return True
    except OSError as e:
        why = str(e) if isinstance(e, files.UnsafePath) else common.errno_text(e)
        log("cannot write %s: %s" % (path, why))
        common.say("error: cannot write %s: %s" % (path, why))
        return False
