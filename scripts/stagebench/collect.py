# SPDX-License-Identifier: MIT
"""stagebench-collect: merge the node summaries of a cluster run into one report.

Reads every stagebench.node/3 (or node/2, node/1) summary of RESULTS/<run-id>/ (and the launcher's
manifest.json there, which names the nodes expected, their /stage servers, the clock offsets
it measured, and what the launcher saw of nodes that failed, hung or were unreachable), and
prints per part and per test: nodes expected/ok/failed/missing, threads, node time
min/median/max, the cluster time, bytes and the rate with its unit (1b in pages/s), latency
percentiles of the merged histograms, 1a's first pass, the residency at release, the slowest
nodes and threads, the results per /stage server, whether the timed portion started
synchronized to less than a second across nodes (held, NOT held or cannot tell, from true
instants), the nodes' warnings, and the run's validity as a spec run, rule by rule.

Exit status: 0 all good; 1 any node failed, missing, invalid or regressed (or the start was
NOT held); 2 bad usage; 3 an output could not be written.
"""
import argparse
import errno
import os
import sys

from . import catalogue
from . import collection
from . import common
from . import files
from . import histhook
from . import model
from . import plot
from . import prometheus
from . import report
from . import reporttext
from .nodes import nodeset_expand

EPILOG = """\
examples:
  stagebench-collect results/20260101-020000
  stagebench-collect results/20260101-020000 --format json > report.json
  stagebench-collect results/RUN --save-baseline baseline.json
  stagebench-collect results/RUN --baseline baseline.json --tolerance 15
  stagebench-collect results/RUN --expect 'node[001-128]' --plot times.svg

exit status: 0 all good; 1 a node failed, is missing, a summary is invalid or duplicated,
a node or part regressed against the baseline, or a part's start was NOT held (its true
spread across nodes, each node's instants minus its measured clock offset, reached 1 s); 2 bad
usage; 3 an output (stdout, --output, --save-baseline, --plot, --prometheus) could not be
written (the cause named) or is not a regular file. "cannot tell" and "NOT VALID" as a spec run
alone do not change it.
"""


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="stagebench-collect", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Merge the node summaries of a stagebench cluster run into one report.",
        epilog=EPILOG)
    ap.add_argument("results", nargs="+", metavar="RESULTS",
                    help="a run's results directory (RESULTS/<run-id>), or summary files")
    ap.add_argument("--format", choices=("text", "csv", "json"), default="text",
                    help="report format on stdout (default: text)")
    ap.add_argument("--expect", metavar="NODESET",
                    help="the nodes expected, as a node set (default: the launcher's "
                         "manifest, else every node that reported)")
    ap.add_argument("--manifest", metavar="FILE",
                    help="the launcher manifest to use (default: RESULTS/manifest.json)")
    ap.add_argument("--save-baseline", metavar="FILE",
                    help="save this run's node and cluster times per part as a baseline")
    ap.add_argument("--baseline", metavar="FILE",
                    help="list every node and part slower than this baseline by more than "
                         "--tolerance")
    common.add_tolerance_option(ap)
    ap.add_argument("--top", type=int, default=5, metavar="N",
                    help="slowest nodes and threads listed per part (default: 5)")
    ap.add_argument("--require-ntp", action="store_true",
                    help="a node whose clock is not NTP-synchronized fails the report")
    ap.add_argument("--plot", metavar="FILE",
                    help="draw node times per part, slow nodes marked, to FILE (.svg or .png)")
    ap.add_argument("--slow", default="25%", metavar="PCT",
                    help="a node is marked slow on the plot above the median by this (25%%)")
    ap.add_argument("--prometheus", metavar="FILE",
                    help="also write the report as node_exporter textfile metrics to FILE "
                         "(e.g. /var/lib/prometheus/node-exporter/stagebench.prom)")
    ap.add_argument("--output", "-o", metavar="FILE",
                    help="write the report to FILE instead of stdout")
    histhook.add_collect_options(ap)  # --history, --no-history, --html (the history's)
    ap.add_argument("--version", action=catalogue.VersionAction)
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        tolerance = common.parse_tolerance(args.tolerance)
        slow = common.parse_tolerance(args.slow)
        if not (1 <= args.top <= 1000):
            raise common.UsageError("--top %d is out of range: 1 to 1000" % args.top)
        expect = nodeset_expand(args.expect) if args.expect else None
        baseline = report.load_baseline(args.baseline) if args.baseline else None
        if args.plot:
            plot.check_path(args.plot)
            common.need("matplotlib")
        for p in args.results:
            if not os.path.exists(p):
                raise common.UsageError("'%s' does not exist" % p)
        src = args.results[0] if len(args.results) == 1 else ", ".join(args.results)
        c = collection.collect(args.results, manifest_path=args.manifest)
        result = report.build(c, expect=expect, top=args.top, baseline=baseline,
                              tolerance=tolerance, require_ntp=args.require_ntp, source=src)
    except common.UsageError as e:
        common.fail(str(e), common.EXIT_USAGE)
    if args.format == "json":
        text = model.to_json(result)
    elif args.format == "csv":
        text = model.to_csv(result)
    else:
        text = reporttext.to_text(result)
    if args.output:
        if not _output("--output " + args.output, files.write_atomic, args.output, text):
            return common.EXIT_PRECONDITION
    elif not _output("stdout", _write_stdout, common.safe_text(text)):
        return common.EXIT_PRECONDITION
    for f in result.invalid:
        common.say("warning: skipped %s: %s" % (f.file, f.reason))
    if result.files == 0 and len(args.results) == 1 and os.path.isdir(args.results[0]):
        runs = sorted(d for d in os.listdir(args.results[0])
                      if os.path.exists(os.path.join(args.results[0], d, common.MANIFEST)))
        if runs:
            common.say("no summary in %s itself; its runs are: %s" % (args.results[0],
                                                                      " ".join(runs[-10:])))
    err = prometheus.write(args.prometheus, result) if args.prometheus else None
    if err:
        common.say("error: --prometheus: %s" % err)
        return common.EXIT_PRECONDITION
    if args.save_baseline:
        if not _output("--save-baseline " + args.save_baseline, files.write_json_atomic,
                       args.save_baseline, report.make_baseline(result, source=src)):
            return common.EXIT_PRECONDITION
        common.say("baseline saved to %s" % args.save_baseline)
    if args.plot:
        try:
            files.check_replaceable(args.plot)
            used = plot.plot(result, args.plot, slow=slow)
            common.say("plot written to %s (%s)" % (args.plot, used))
        except OSError as e:
            common.say("error: --plot %s: %s" % (args.plot, _cause(e)))
            return common.EXIT_PRECONDITION
        except RuntimeError as e:
            common.say("error: --plot %s: %s" % (args.plot, e))
            return common.EXIT_FAILED
    if histhook.after_collect(args, result):  # the history and --html
        return common.EXIT_PRECONDITION
    return result.exit_code


def _cause(e):
    """The real cause of a failed write, in words ('No space left on device')."""
    if isinstance(e, files.UnsafePath):
        return str(e)
    return common.errno_text(e)


def _write_stdout(text):
    if sys.stdout is None:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))
    sys.stdout.write(text)
    sys.stdout.flush()


def _output(what, fn, *args):
    """Write one output; False (said on stderr) when it failed. A reader that went away
    (a closed pipe) is not an error."""
    try:
        fn(*args)
        return True
    except BrokenPipeError:
        _quiet_stdout()
        return True
    except OSError as e:
        common.say("error: cannot write %s: %s" % (what, _cause(e)))
        if what == "stdout":
            _quiet_stdout()
        return False


def _quiet_stdout():
    """What is left in stdout's buffer is dropped: the interpreter's own flush at exit must
    not fail again (or print a traceback)."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.close(fd)
    except OSError:
        pass
